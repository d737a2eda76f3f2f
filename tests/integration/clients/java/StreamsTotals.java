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
// Stdout, one JSON line each: {"event": "state", "state": S} on every KafkaStreams state change,
// {"event": "frozen", "written": N}, {"event": "error", "error": TRACE} from the uncaught-exception handler
// (which then shuts the client down), {"event": "closed", "clean": B}. A line "stop" or the end of stdin closes
// the application cleanly, leaving the group.

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Properties;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.common.utils.Bytes;
import org.apache.kafka.streams.CloseOptions;
import org.apache.kafka.streams.CloseOptions.GroupMembershipOperation;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.errors.StreamsUncaughtExceptionHandler;
import org.apache.kafka.streams.kstream.Consumed;
import org.apache.kafka.streams.kstream.Grouped;
import org.apache.kafka.streams.kstream.KStream;
import org.apache.kafka.streams.kstream.Materialized;
import org.apache.kafka.streams.kstream.Produced;
import org.apache.kafka.streams.state.KeyValueStore;

public final class StreamsTotals {
    private static final Object OUT = new Object();

    private static void emit(String json) {
        synchronized (OUT) {
            System.out.println(json);
            System.out.flush();
        }
    }

    private static String quote(String s) {
        StringBuilder b = new StringBuilder("\"");
        for (char c : s.toCharArray()) {
            switch (c) {
                case '"': b.append("\\\""); break;
                case '\\': b.append("\\\\"); break;
                case '\n': b.append("\\n"); break;
                case '\t': b.append("\\t"); break;
                default:
                    if (c < 0x20) b.append(String.format("\\u%04x", (int) c)); else b.append(c);
            }
        }
        return b.append('"').toString();
    }

    /** "COUNT,SUM" plus one order of `amount`. */
    private static String add(String total, String amount) {
        String[] parts = total.split(",");
        long count = Long.parseLong(parts[0]) + 1;
        long sum = Long.parseLong(parts[1]) + Long.parseLong(amount);
        return count + "," + sum;
    }

    public static void main(String[] args) throws Exception {
        String bootstrap = args[0], applicationId = args[1], stateDir = args[2], input = args[3], output = args[4];
        long freezeAfter = Long.parseLong(args[5]);

        Properties props = new Properties();
        props.put(StreamsConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        props.put(StreamsConfig.APPLICATION_ID_CONFIG, applicationId);
        props.put(StreamsConfig.STATE_DIR_CONFIG, stateDir);
        props.put(StreamsConfig.PROCESSING_GUARANTEE_CONFIG, StreamsConfig.EXACTLY_ONCE_V2);
        props.put(StreamsConfig.STATESTORE_CACHE_MAX_BYTES_CONFIG, 0);   // every update reaches OUTPUT
        props.put(StreamsConfig.COMMIT_INTERVAL_MS_CONFIG, 100);           // EOS's default, stated
        // Consumed repartition records are deleted (DeleteRecords) at the first commit 200 ms after the last
        // purge, not only every 30 s: the test sees that happen under transactions.
        props.put(StreamsConfig.REPARTITION_PURGE_INTERVAL_MS_CONFIG, 200);
        // The killed instance's member leaves the group only when its session expires: the broker's minimum
        // (group.min.session.timeout.ms, 6 s) keeps the restart short.
        props.put(StreamsConfig.consumerPrefix(ConsumerConfig.SESSION_TIMEOUT_MS_CONFIG), 6000);
        props.put(StreamsConfig.consumerPrefix(ConsumerConfig.HEARTBEAT_INTERVAL_MS_CONFIG), 1000);

        StreamsBuilder builder = new StreamsBuilder();
        KStream<String, String> totals = builder
                .stream(input, Consumed.with(Serdes.String(), Serdes.String()))
                .selectKey((orderId, order) -> order.split(":")[0])
                .mapValues(order -> order.split(":")[1])
                .groupByKey(Grouped.with("by-customer", Serdes.String(), Serdes.String()))
                .aggregate(() -> "0,0", (customer, amount, total) -> add(total, amount),
                           Materialized.<String, String, KeyValueStore<Bytes, byte[]>>as("totals")
                                   .withKeySerde(Serdes.String()).withValueSerde(Serdes.String()))
                .toStream();
        totals.to(output, Produced.with(Serdes.String(), Serdes.String()));
        AtomicLong written = new AtomicLong();
        // A second child of the same stream: it runs after the sink above has sent the update.
        totals.foreach((customer, total) -> {
            if (written.incrementAndGet() == freezeAfter) {
                emit("{\"event\": \"frozen\", \"written\": " + written.get() + "}");
                while (true) {
                    try {
                        Thread.sleep(60_000);
                    } catch (InterruptedException e) {
                        // the JVM is about to be killed; keep the transaction open until then
                    }
                }
            }
        });

        KafkaStreams streams = new KafkaStreams(builder.build(), props);
        streams.setStateListener((now, before) -> emit("{\"event\": \"state\", \"state\": " + quote(now.name()) + "}"));
        streams.setUncaughtExceptionHandler(e -> {
            StringWriter trace = new StringWriter();
            e.printStackTrace(new PrintWriter(trace));
            emit("{\"event\": \"error\", \"error\": " + quote(trace.toString()) + "}");
            return StreamsUncaughtExceptionHandler.StreamThreadExceptionResponse.SHUTDOWN_CLIENT;
        });
        streams.start();

        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        String line;
        while ((line = in.readLine()) != null && !line.trim().equals("stop")) {
            // nothing else is asked of the application
        }
        // Streams' consumers stay in the group on close unless told (a restart should not cost a rebalance);
        // this run is over, so leave it as an application being shut down for good would.
        boolean closed = streams.close(CloseOptions.groupMembershipOperation(GroupMembershipOperation.LEAVE_GROUP)
                .withTimeout(Duration.ofSeconds(30)));
        emit("{\"event\": \"closed\", \"clean\": " + closed + "}");
        System.exit(closed ? 0 : 1);
    }
}
