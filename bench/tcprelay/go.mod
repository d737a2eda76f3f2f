module fakekafka/bench/tcprelay

go 1.22
