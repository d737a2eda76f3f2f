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
// Stdout, one JSON line each: {"event": "state", "state": S} on every KafkaStreams state change,
// {"event": "error", "error": TRACE} from the uncaught-exception handler, {"event": "closed", "clean": B}. A line
// "stop" or the end of stdin closes the application, leaving the group.

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Properties;
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
import org.apache.kafka.streams.kstream.JoinWindows;
import org.apache.kafka.streams.kstream.KStream;
import org.apache.kafka.streams.kstream.Materialized;
import org.apache.kafka.streams.kstream.Produced;
import org.apache.kafka.streams.kstream.StreamJoined;
import org.apache.kafka.streams.state.KeyValueStore;

public final class StreamsGroupJoin {
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
            if (c == '"' || c == '\\') b.append('\\').append(c);
            else if (c < 0x20) b.append(String.format("\\u%04x", (int) c));
            else b.append(c);
        }
        return b.append('"').toString();
    }

    public static void main(String[] args) throws Exception {
        String bootstrap = args[0], applicationId = args[1], stateDir = args[2];
        String orders = args[3], customers = args[4], output = args[5];

        Properties props = new Properties();
        props.put(StreamsConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        props.put(StreamsConfig.APPLICATION_ID_CONFIG, applicationId);
        props.put(StreamsConfig.STATE_DIR_CONFIG, stateDir);
        props.put(StreamsConfig.GROUP_PROTOCOL_CONFIG, "streams");
        props.put(StreamsConfig.PROCESSING_GUARANTEE_CONFIG, StreamsConfig.EXACTLY_ONCE_V2);
        props.put(StreamsConfig.STATESTORE_CACHE_MAX_BYTES_CONFIG, 0);
        props.put(StreamsConfig.COMMIT_INTERVAL_MS_CONFIG, 100);

        StreamsBuilder builder = new StreamsBuilder();
        KStream<String, String> counts = builder.stream(orders, Consumed.with(Serdes.String(), Serdes.String()))
                .selectKey((id, customer) -> customer)
                .groupByKey(Grouped.with("by-customer", Serdes.String(), Serdes.String()))
                .count(Materialized.<String, Long, KeyValueStore<Bytes, byte[]>>as("counts")
                        .withKeySerde(Serdes.String()).withValueSerde(Serdes.Long()))
                .toStream()
                .mapValues(Object::toString);
        KStream<String, String> names = builder.stream(customers, Consumed.with(Serdes.String(), Serdes.String()));
        counts.join(names, (count, name) -> name + ":" + count,
                        JoinWindows.ofTimeDifferenceWithNoGrace(Duration.ofHours(1)),
                        StreamJoined.with(Serdes.String(), Serdes.String(), Serdes.String()).withName("with-names"))
                .to(output, Produced.with(Serdes.String(), Serdes.String()));

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
        boolean closed = streams.close(CloseOptions.groupMembershipOperation(GroupMembershipOperation.LEAVE_GROUP)
                .withTimeout(Duration.ofSeconds(30)));
        emit("{\"event\": \"closed\", \"clean\": " + closed + "}");
        System.exit(closed ? 0 : 1);
    }
}
