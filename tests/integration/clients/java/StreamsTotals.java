// A Kafka Streams application with processing.guarantee=exactly_once_v2, as a user would write one: per-customer
// order totals. Driven by tests/integration/clients/test_kafka_streams.py, which kills its JVM mid-stream and restarts it.
//
// Usage: java StreamsTotals BOOTSTRAP APPLICATION_ID STATE_DIR INPUT OUTPUT FREEZE_AFTER
//
// Input records are orders: key = order id, value = "CUSTOMER:AMOUNT". The topology re-keys them by customer
// (selectKey: a repartition topic), aggregates "COUNT,SUM" per customer in a RocksDB store (its changelog
// topic), and writes every update to OUTPUT. The record cache is off, so each order gives exactly one output
// record: per customer, the committed output must count 1, 2, 3, ... with each order's amount added once.
//
// FREEZE_AFTER > 0: once this JVM has written that many updates to OUTPUT, its stream thread stops for good
// inside processing (after sending the update, before any commit can follow), so the transaction it has open
// stays open until the test kills the JVM. 0: never.
//
// Stdout, besides StreamsTestApp's events: {"event": "frozen", "written": N}. Its configuration, the other
// events and stop on stdin: StreamsTestApp.

import java.util.Properties;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.kstream.KStream;

public final class StreamsTotals {
    /** "COUNT,SUM" plus one order of `amount`. */
    private static String add(String total, String amount) {
        String[] parts = total.split(",");
        long count = Long.parseLong(parts[0]) + 1;
        long sum = Long.parseLong(parts[1]) + Long.parseLong(amount);
        return count + "," + sum;
    }

    public static void main(String[] args) throws Exception {
        String input = args[3], output = args[4];
        long freezeAfter = Long.parseLong(args[5]);

        Properties props = StreamsTestApp.config(args);
        // Consumed repartition records are deleted (DeleteRecords) at the first commit 200 ms after the last
        // purge, not only every 30 s: the test sees that happen under transactions.
        props.put(StreamsConfig.REPARTITION_PURGE_INTERVAL_MS_CONFIG, 200);
        // The killed instance's member leaves the group only when its session expires: the broker's minimum
        // (group.min.session.timeout.ms, 6 s) keeps the restart short.
        props.put(StreamsConfig.consumerPrefix(ConsumerConfig.SESSION_TIMEOUT_MS_CONFIG), 6000);
        props.put(StreamsConfig.consumerPrefix(ConsumerConfig.HEARTBEAT_INTERVAL_MS_CONFIG), 1000);

        StreamsBuilder builder = new StreamsBuilder();
        KStream<String, String> totals = builder
                .stream(input, StreamsTestApp.consumed())
                .selectKey((orderId, order) -> order.split(":")[0])
                .mapValues(order -> order.split(":")[1])
                .groupByKey(StreamsTestApp.grouped("by-customer"))
                .aggregate(() -> "0,0", (customer, amount, total) -> add(total, amount),
                           StreamsTestApp.store("totals", Serdes.String()))
                .toStream();
        totals.to(output, StreamsTestApp.produced());
        AtomicLong written = new AtomicLong();
        // A second child of the same stream: it runs after the sink above has sent the update.
        totals.foreach((customer, total) -> {
            if (written.incrementAndGet() == freezeAfter) {
                StreamsTestApp.emit("{\"event\": \"frozen\", \"written\": " + written.get() + "}");
                while (true) {
                    try {
                        Thread.sleep(60_000);
                    } catch (InterruptedException e) {
                        // the JVM is about to be killed; keep the transaction open until then
                    }
                }
            }
        });

        StreamsTestApp.run(builder, props);
    }
}
