// A stateful Kafka Streams application in a streams group (group.protocol=streams, KIP-1071): orders counted per
// customer and joined with the customers. Driven by tests/integration/clients/test_streams_groups_join.py, which
// runs three instances and kills and restarts one.
//
// Usage: java StreamsGroupJoin BOOTSTRAP APPLICATION_ID STATE_DIR ORDERS CUSTOMERS OUTPUT
//
// ORDERS records: key = an order id, value = a customer. CUSTOMERS records: key = a customer, value = its name.
// The topology re-keys the orders by customer (selectKey: a repartition topic), counts them per customer in a
// RocksDB store (its changelog topic), and joins each count update with the customer's record (a windowed
// stream-stream join, copartitioned with CUSTOMERS: its window stores have changelogs too), writing NAME:COUNT
// to OUTPUT, under exactly_once_v2 with the record cache off: per customer, the committed output holds
// NAME:1, NAME:2, ... once each, whichever side of the join comes first.
//
// Its configuration, events on stdout and stop on stdin: StreamsTestApp.

import java.time.Duration;
import java.util.Properties;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.kstream.JoinWindows;
import org.apache.kafka.streams.kstream.KStream;
import org.apache.kafka.streams.kstream.StreamJoined;

public final class StreamsGroupJoin {
    public static void main(String[] args) throws Exception {
        String orders = args[3], customers = args[4], output = args[5];

        Properties props = StreamsTestApp.config(args);
        props.put(StreamsConfig.GROUP_PROTOCOL_CONFIG, "streams");

        StreamsBuilder builder = new StreamsBuilder();
        KStream<String, String> counts = builder.stream(orders, StreamsTestApp.consumed())
                .selectKey((id, customer) -> customer)
                .groupByKey(StreamsTestApp.grouped("by-customer"))
                .count(StreamsTestApp.store("counts", Serdes.Long()))
                .toStream()
                .mapValues(Object::toString);
        KStream<String, String> names = builder.stream(customers, StreamsTestApp.consumed());
        counts.join(names, (count, name) -> name + ":" + count,
                        JoinWindows.ofTimeDifferenceWithNoGrace(Duration.ofHours(1)),
                        StreamJoined.with(Serdes.String(), Serdes.String(), Serdes.String()).withName("with-names"))
                .to(output, StreamsTestApp.produced());

        StreamsTestApp.run(builder, props);
    }
}
