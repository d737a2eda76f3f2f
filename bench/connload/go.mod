module fakekafka/bench/connload

go 1.22
