// What the Kafka Streams test applications (StreamsTotals, StreamsGroupCount, StreamsGroupJoin) share, compiled
// with each of them by tests/integration/clients/streams_app.py: their common configuration, String serdes, and
// the run: one JSON line on stdout per event ({"event": "state", "state": S} on every KafkaStreams state change,
// {"event": "error", "error": TRACE} from the uncaught-exception handler, which then shuts the client down,
// {"event": "closed", "clean": B}); a line "stop" or the end of stdin closes the application, leaving the group.

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Properties;
import org.apache.kafka.common.serialization.Serde;
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
import org.apache.kafka.streams.kstream.Materialized;
import org.apache.kafka.streams.kstream.Produced;
import org.apache.kafka.streams.state.KeyValueStore;

final class StreamsTestApp {
    private static final Object OUT = new Object();

    private StreamsTestApp() {
    }

    /** Args BOOTSTRAP APPLICATION_ID STATE_DIR: exactly_once_v2 with the record cache off (every update reaches
     * the output, one per input record) and EOS's default commit interval, stated. */
    static Properties config(String[] args) {
        Properties props = new Properties();
        props.put(StreamsConfig.BOOTSTRAP_SERVERS_CONFIG, args[0]);
        props.put(StreamsConfig.APPLICATION_ID_CONFIG, args[1]);
        props.put(StreamsConfig.STATE_DIR_CONFIG, args[2]);
        props.put(StreamsConfig.PROCESSING_GUARANTEE_CONFIG, StreamsConfig.EXACTLY_ONCE_V2);
        props.put(StreamsConfig.STATESTORE_CACHE_MAX_BYTES_CONFIG, 0);
        props.put(StreamsConfig.COMMIT_INTERVAL_MS_CONFIG, 100);
        return props;
    }

    /** String keys and values read from a topic. */
    static Consumed<String, String> consumed() {
        return Consumed.with(Serdes.String(), Serdes.String());
    }

    /** String keys and values written to a topic. */
    static Produced<String, String> produced() {
        return Produced.with(Serdes.String(), Serdes.String());
    }

    /** String keys and values through the repartition topic `name`. */
    static Grouped<String, String> grouped(String name) {
        return Grouped.with(name, Serdes.String(), Serdes.String());
    }

    /** A RocksDB key-value store `name` (and its changelog) of String keys and `values`. */
    static <V> Materialized<String, V, KeyValueStore<Bytes, byte[]>> store(String name, Serde<V> values) {
        return Materialized.<String, V, KeyValueStore<Bytes, byte[]>>as(name)
                .withKeySerde(Serdes.String()).withValueSerde(values);
    }

    static void emit(String json) {
        synchronized (OUT) {
            System.out.println(json);
            System.out.flush();
        }
    }

    static String quote(String s) {
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

    /** Runs the topology with `props`, reporting its events, until stdin says stop; then exits (0: closed
     * cleanly). */
    static void run(StreamsBuilder builder, Properties props) throws Exception {
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
