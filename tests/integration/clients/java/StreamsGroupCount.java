// A Kafka Streams application in a streams group (group.protocol=streams, KIP-1071): words counted per word.
// Driven by tests/integration/clients/test_streams_groups.py, which runs two instances and stops and restarts one.
//
// Usage: java StreamsGroupCount BOOTSTRAP APPLICATION_ID STATE_DIR INPUT OUTPUT
//
// Input records: key = an id, value = a word. The topology re-keys them by word (selectKey: a repartition
// topic), counts per word in a RocksDB store (its changelog topic) and writes every update to OUTPUT, under
// exactly_once_v2 with the record cache off: per word, the committed output counts 1, 2, 3, ... once each.
//
// Its configuration, events on stdout and stop on stdin: StreamsTestApp.

import java.util.Properties;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.StreamsConfig;

public final class StreamsGroupCount {
    public static void main(String[] args) throws Exception {
        String input = args[3], output = args[4];

        Properties props = StreamsTestApp.config(args);
        props.put(StreamsConfig.GROUP_PROTOCOL_CONFIG, "streams");

        StreamsBuilder builder = new StreamsBuilder();
        builder.stream(input, StreamsTestApp.consumed())
                .selectKey((id, word) -> word)
                .groupByKey(StreamsTestApp.grouped("by-word"))
                .count(StreamsTestApp.store("counts", Serdes.Long()))
                .toStream()
                .mapValues(Object::toString)
                .to(output, StreamsTestApp.produced());

        StreamsTestApp.run(builder, props);
    }
}
