// The Kafka calls Spark's JVM connector (spark-sql-kafka-0-10, Spark 4.x on kafka-clients 3.9) makes,
// made the same way, against a fakekafka broker. The connector jar is not available here, so each part
// below re-creates one connector class's use of the Java client, with the configs the connector forces:
//
//   sink                KafkaWriteTask + InternalKafkaProducerPool: one cached producer (ByteArraySerializer
//                       only) shared by concurrent tasks, send(record, callback) with keys, values, headers,
//                       explicit or null partitions and timestamps, to several topics; flush(); callback errors
//   admin_reader        KafkaOffsetReaderAdmin + ConsumerStrategy: Admin built from the driver params,
//                       describeTopics(names).allTopicNames() (internal topics dropped), the pattern path
//                       (listTopics().listings() + an unanchored regex find), listOffsets with
//                       ListOffsetsOptions(isolation level) for earliest/latest/forTimestamp, the no-match
//                       (-1) -> latest resolution, partitions added while a query runs
//   deprecated_reader   KafkaOffsetReaderConsumer (spark.sql.streaming.kafka.useDeprecatedOffsetFetching):
//                       subscribe(topics | Pattern) with group id <prefix>-driver-N, poll(0) (the deprecated
//                       long overload, which waits for the assignment), assignment(), position(), pause(),
//                       seekToBeginning/seekToEnd/seek + position(), offsetsForTimes()
//   executor_*          InternalKafkaConsumer + KafkaDataConsumer.get (KafkaBatchPartitionReader's loop):
//                       assign([tp]) once, then per fetch seek + poll + records(tp) + position() +
//                       seekToBeginning/position + seekToEnd/position, skipping invisible offsets
//                       (transaction markers) under read_uncommitted and read_committed
//   data_loss           the failOnDataLoss paths after Admin.deleteRecords moved the log start:
//                       OffsetOutOfRangeException from poll (auto.offset.reset=none), recovery from the
//                       earliest available offset, and an offset past the end
//   describe_cluster    Admin.describeCluster (not called by the connector; asked for alongside)
//
// Usage: java SparkCallPattern BOOTSTRAP BASE_TIMESTAMP [SCENARIO...]   (driven by tests/integration/clients/test_java_spark_pattern.py)
// Prints one JSON line per scenario, {"scenario", "ok", "result"} or {"scenario", "ok": false, "error"},
// then {"done": true}. Bytes are hex strings (null stays null); expected failures are class names.

import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.Collections;
import java.util.HashMap;
import java.util.HexFormat;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.ListIterator;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.UUID;
import java.util.concurrent.CompletionException;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.regex.Pattern;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.DescribeClusterResult;
import org.apache.kafka.clients.admin.ListOffsetsOptions;
import org.apache.kafka.clients.admin.ListOffsetsResult.ListOffsetsResultInfo;
import org.apache.kafka.clients.admin.NewPartitions;
import org.apache.kafka.clients.admin.OffsetSpec;
import org.apache.kafka.clients.admin.RecordsToDelete;
import org.apache.kafka.clients.admin.TopicDescription;
import org.apache.kafka.clients.admin.TopicListing;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndTimestamp;
import org.apache.kafka.clients.consumer.OffsetOutOfRangeException;
import org.apache.kafka.clients.producer.Callback;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.IsolationLevel;
import org.apache.kafka.common.Node;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.TopicPartitionInfo;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.header.internals.RecordHeader;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.ByteArraySerializer;

public final class SparkCallPattern {
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final HexFormat HEX = HexFormat.of();
    private static final List<String> ALL = List.of("sink", "admin_reader", "deprecated_reader",
            "executor_read_uncommitted", "executor_read_committed", "data_loss", "describe_cluster");

    // KafkaOffsetRangeLimit's placeholders, and KafkaDataConsumer.UNKNOWN_OFFSET
    static final long LATEST = -1L;
    static final long EARLIEST = -2L;
    static final long UNKNOWN_OFFSET = -2L;
    // OffsetFetchResponse.INVALID_OFFSET: what listOffsets answers for a timestamp nothing matches
    static final long INVALID_OFFSET = -1L;

    private static String bootstrap;
    /** The test wrote spark-src's records at base + 100 * i (partition 0), base + 1000 + i (1), base + 50 + i (2). */
    private static long base;
    /** One query's unique group id, as KafkaSourceProvider.streamingUniqueGroupId makes it. */
    private static final String QUERY_GROUP =
            "spark-kafka-source-" + UUID.randomUUID() + "-" + "/tmp/checkpoint/spark-pattern".hashCode();

    public static void main(String[] args) throws Exception {
        bootstrap = args[0];
        base = Long.parseLong(args[1]);
        List<String> scenarios = args.length > 2 ? List.of(args).subList(2, args.length) : ALL;
        for (String name : scenarios) {
            long started = System.nanoTime();
            try {
                Object result = run(name);
                emit(map("scenario", name, "ok", true, "ms", (System.nanoTime() - started) / 1_000_000,
                         "result", result));
            } catch (Throwable e) {
                StringWriter trace = new StringWriter();
                e.printStackTrace(new PrintWriter(trace));
                emit(map("scenario", name, "ok", false, "error", trace.toString()));
            }
        }
        emit(map("done", true));
        System.exit(0);
    }

    private static Object run(String name) throws Exception {
        switch (name) {
            case "sink": return sink();
            case "admin_reader": return adminReader();
            case "deprecated_reader": return deprecatedReader();
            case "executor_read_uncommitted": return executorRead("read_uncommitted");
            case "executor_read_committed": return executorRead("read_committed");
            case "data_loss": return dataLoss();
            case "describe_cluster": return describeCluster();
            default: throw new IllegalArgumentException("unknown scenario " + name);
        }
    }

    // ------------------------------------------------------------------------------------------ helpers

    private static synchronized void emit(Map<String, Object> line) throws Exception {
        System.out.println(JSON.writeValueAsString(line));
        System.out.flush();
    }

    static Map<String, Object> map(Object... kv) {
        Map<String, Object> m = new LinkedHashMap<>();
        for (int i = 0; i < kv.length; i += 2) {
            m.put((String) kv[i], kv[i + 1]);
        }
        return m;
    }

    static byte[] utf8(String s) {
        return s == null ? null : s.getBytes(StandardCharsets.UTF_8);
    }

    static String hex(byte[] b) {
        return b == null ? null : HEX.formatHex(b);
    }

    static String errorName(Throwable e) {
        while ((e instanceof ExecutionException || e instanceof CompletionException) && e.getCause() != null) {
            e = e.getCause();
        }
        return e.getClass().getSimpleName();
    }

    static String key(TopicPartition tp) {
        return tp.topic() + "-" + tp.partition();
    }

    static Map<String, Long> byName(Map<TopicPartition, Long> offsets) {
        Map<String, Long> out = new TreeMap<>();
        offsets.forEach((tp, o) -> out.put(key(tp), o));
        return out;
    }

    static List<String> names(Collection<TopicPartition> tps) {
        List<String> out = new ArrayList<>();
        for (TopicPartition tp : tps) {
            out.add(key(tp));
        }
        Collections.sort(out);
        return out;
    }

    // ------------------------------------------------------------------ KafkaSourceProvider's configs

    /** kafkaParamsForDriver: what the driver's Admin (or, deprecated, its consumer) is built from. */
    static Map<String, Object> driverParams(Map<String, Object> specified) {
        Map<String, Object> p = new HashMap<>(specified);
        p.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        p.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName());
        p.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName());
        p.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
        p.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
        p.put(ConsumerConfig.MAX_POLL_RECORDS_CONFIG, Integer.valueOf(1));
        p.putIfAbsent(ConsumerConfig.RECEIVE_BUFFER_CONFIG, Integer.valueOf(65536));
        return p;
    }

    /** kafkaParamsForExecutors: what each task's consumer is built from. */
    static Map<String, Object> executorParams(Map<String, Object> specified, String uniqueGroupId) {
        Map<String, Object> p = new HashMap<>(specified);
        p.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        p.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName());
        p.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName());
        p.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "none");
        p.putIfAbsent(ConsumerConfig.GROUP_ID_CONFIG, uniqueGroupId + "-executor");
        p.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
        p.putIfAbsent(ConsumerConfig.RECEIVE_BUFFER_CONFIG, Integer.valueOf(65536));
        return p;
    }

    /** kafkaParamsForProducer: only the serializers are forced. */
    static Map<String, Object> producerParams() {
        Map<String, Object> p = new HashMap<>();
        p.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        p.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class.getName());
        p.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class.getName());
        return p;
    }

    // ------------------------------------------------------------------------------------------- sink

    /** One row of a DataFrame written with the Kafka sink: topic, key, value, headers, partition, timestamp. */
    record Row(String topic, byte[] key, byte[] value, List<Header> headers, Integer partition, Long timestamp) {}

    /** KafkaRowWriter: sends rows through the shared producer; the first callback error is kept. */
    static final class WriteTask {
        private final KafkaProducer<byte[], byte[]> producer;
        volatile Exception failedWrite;
        final List<Map<String, Object>> acks = Collections.synchronizedList(new ArrayList<>());

        WriteTask(KafkaProducer<byte[], byte[]> producer) {
            this.producer = producer;
        }

        void execute(List<Row> rows, String task) {
            for (int i = 0; i < rows.size() && failedWrite == null; i++) {
                Row row = rows.get(i);
                ProducerRecord<byte[], byte[]> record = row.headers() == null
                        ? new ProducerRecord<>(row.topic(), row.partition(), row.timestamp(), row.key(), row.value())
                        : new ProducerRecord<>(row.topic(), row.partition(), row.timestamp(), row.key(), row.value(),
                                               row.headers());
                String id = task + "/" + i;
                Callback callback = (RecordMetadata md, Exception e) -> {
                    if (failedWrite == null && e != null) {
                        failedWrite = e;
                    }
                    if (md != null) {
                        acks.add(map("row", id, "topic", md.topic(), "partition", md.partition(),
                                     "offset", md.offset(), "timestamp", md.timestamp()));
                    }
                };
                producer.send(record, callback);
            }
        }

        /** KafkaWriteTask.close: check, flush, check again. */
        void close() throws Exception {
            if (failedWrite != null) {
                throw failedWrite;
            }
            producer.flush();
            if (failedWrite != null) {
                throw failedWrite;
            }
        }
    }

    static List<Row> sinkRows(String task) {
        List<Row> rows = new ArrayList<>();
        for (int i = 0; i < 12; i++) {
            String topic = i == 11 ? "spark-sink-b" : "spark-sink";
            byte[] key = i % 4 == 3 ? null : utf8(task + "-k" + i);
            byte[] value = i == 7 ? null : utf8(task + "-v" + i);
            List<Header> headers = null;
            if (i % 3 == 1) {
                headers = List.of(new RecordHeader("h", utf8("x" + i)), new RecordHeader("empty", new byte[0]),
                                  new RecordHeader("null", (byte[]) null));
            } else if (i % 3 == 2) {
                headers = List.of();  // a headers column holding an empty array
            }
            Integer partition = i % 2 == 0 && i != 11 ? Integer.valueOf(i % 3) : null;
            Long timestamp = i % 5 == 0 ? Long.valueOf(1_700_000_000_000L + i) : null;
            rows.add(new Row(topic, key, value, headers, partition, timestamp));
        }
        return rows;
    }

    static Object sink() throws Exception {
        long before = System.currentTimeMillis();
        // InternalKafkaProducerPool: one producer per parameter set, shared by the tasks of an executor
        try (KafkaProducer<byte[], byte[]> producer = new KafkaProducer<>(producerParams())) {
            List<WriteTask> tasks = new ArrayList<>();
            List<Thread> threads = new ArrayList<>();
            List<Exception> closeErrors = Collections.synchronizedList(new ArrayList<>());
            CountDownLatch start = new CountDownLatch(1);
            for (String name : List.of("t0", "t1")) {
                WriteTask task = new WriteTask(producer);
                tasks.add(task);
                Thread t = new Thread(() -> {
                    try {
                        start.await();
                        task.execute(sinkRows(name), name);
                        task.close();
                    } catch (Exception e) {
                        closeErrors.add(e);
                    }
                }, "task-" + name);
                threads.add(t);
                t.start();
            }
            start.countDown();
            for (Thread t : threads) {
                t.join(TimeUnit.SECONDS.toMillis(30));
            }
            if (!closeErrors.isEmpty()) {
                throw closeErrors.get(0);
            }
            List<Map<String, Object>> acks = new ArrayList<>();
            for (WriteTask task : tasks) {
                acks.addAll(task.acks);
            }
            // a task writing to a partition the topic does not have fails through its callback
            Map<String, Object> params = producerParams();
            params.put(ProducerConfig.MAX_BLOCK_MS_CONFIG, 1500);
            String badOutcome;
            try (KafkaProducer<byte[], byte[]> shortBlock = new KafkaProducer<>(params)) {
                WriteTask t = new WriteTask(shortBlock);
                try {
                    t.execute(List.of(new Row("spark-sink-b", null, utf8("x"), null, 5, null)), "bad");
                    t.close();
                    badOutcome = "ok";
                } catch (Exception e) {
                    badOutcome = errorName(e);
                }
            }
            return map("acks", acks, "before", before, "after", System.currentTimeMillis(),
                       "missing_partition", badOutcome);
        }
    }

    // ----------------------------------------------------------------------------------- admin_reader

    /** KafkaOffsetReaderAdmin with one ConsumerStrategy: each method makes the calls the original does. */
    static final class AdminReader implements AutoCloseable {
        final Admin admin;
        final ListOffsetsOptions options;
        final List<String> topics;     // SubscribeStrategy
        final String pattern;          // SubscribePatternStrategy
        final Set<TopicPartition> assigned;  // AssignStrategy

        AdminReader(Map<String, Object> driverParams, List<String> topics, String pattern, Set<TopicPartition> assigned) {
            this.admin = Admin.create(driverParams);
            Object level = driverParams.get(ConsumerConfig.ISOLATION_LEVEL_CONFIG);
            this.options = new ListOffsetsOptions(IsolationLevel.valueOf(
                    (level == null ? ConsumerConfig.DEFAULT_ISOLATION_LEVEL : (String) level).toUpperCase(Locale.ROOT)));
            this.topics = topics;
            this.pattern = pattern;
            this.assigned = assigned;
        }

        /** ConsumerStrategy.retrieveAllPartitions. */
        Set<TopicPartition> retrieveAllPartitions(Collection<String> names) throws Exception {
            Set<TopicPartition> out = new java.util.HashSet<>();
            for (Map.Entry<String, TopicDescription> e : admin.describeTopics(names).allTopicNames().get().entrySet()) {
                if (e.getValue().isInternal()) {
                    continue;
                }
                for (TopicPartitionInfo p : e.getValue().partitions()) {
                    out.add(new TopicPartition(e.getKey(), p.partition()));
                }
            }
            return out;
        }

        /** ConsumerStrategy.assignedTopicPartitions. */
        Set<TopicPartition> assignedTopicPartitions() throws Exception {
            if (assigned != null) {
                Set<String> names = new TreeSet<>();
                assigned.forEach(tp -> names.add(tp.topic()));
                Set<TopicPartition> all = retrieveAllPartitions(names);
                all.retainAll(assigned);
                return all;
            }
            if (pattern != null) {
                Pattern regex = Pattern.compile(pattern);
                List<String> matching = new ArrayList<>();
                for (TopicListing listing : admin.listTopics().listings().get()) {
                    if (regex.matcher(listing.name()).find()) {  // Scala's Regex.findFirstIn: unanchored
                        matching.add(listing.name());
                    }
                }
                return retrieveAllPartitions(matching);
            }
            return retrieveAllPartitions(topics);
        }

        Map<TopicPartition, Long> listOffsets(Map<TopicPartition, OffsetSpec> specs) throws Exception {
            Map<TopicPartition, Long> out = new HashMap<>();
            admin.listOffsets(specs, options).all().get().forEach((tp, info) -> out.put(tp, info.offset()));
            return out;
        }

        Map<TopicPartition, Long> fetchEarliestOffsets() throws Exception {
            Map<TopicPartition, OffsetSpec> specs = new HashMap<>();
            assignedTopicPartitions().forEach(tp -> specs.put(tp, OffsetSpec.earliest()));
            return listOffsets(specs);
        }

        Map<TopicPartition, Long> fetchEarliestOffsets(Collection<TopicPartition> newPartitions) throws Exception {
            Set<TopicPartition> partitions = assignedTopicPartitions();
            Map<TopicPartition, OffsetSpec> specs = new HashMap<>();
            for (TopicPartition tp : newPartitions) {
                if (partitions.contains(tp)) {
                    specs.put(tp, OffsetSpec.earliest());
                }
            }
            return listOffsets(specs);
        }

        /** fetchLatestOffsets: with known offsets it re-asks while the answer is below them (KAFKA-7703). */
        Map<TopicPartition, Long> fetchLatestOffsets(Map<TopicPartition, Long> known) throws Exception {
            Map<TopicPartition, OffsetSpec> specs = new HashMap<>();
            assignedTopicPartitions().forEach(tp -> specs.put(tp, OffsetSpec.latest()));
            Map<TopicPartition, Long> offsets;
            int attempt = 0;
            boolean incorrect;
            do {
                offsets = listOffsets(specs);
                attempt++;
                incorrect = false;
                for (Map.Entry<TopicPartition, Long> e : offsets.entrySet()) {
                    Long k = known == null ? null : known.get(e.getKey());
                    incorrect |= k != null && k > e.getValue();
                }
            } while (incorrect && attempt < 3);
            return offsets;
        }

        /** fetchSpecificTimestampBasedOffsets / fetchGlobalTimestampBasedOffsets with readTimestampOffsets and
         *  fetchSpecificOffsets0: no match becomes LATEST (ending offsets, or the LATEST strategy), then the
         *  placeholders are resolved by a second listOffsets. */
        Map<TopicPartition, Long> fetchTimestampBasedOffsets(Map<TopicPartition, Long> timestamps, boolean starting,
                                                             boolean latestOnNoMatch) throws Exception {
            assignedTopicPartitions();
            Map<TopicPartition, OffsetSpec> specs = new HashMap<>();
            timestamps.forEach((tp, ts) -> specs.put(tp, OffsetSpec.forTimestamp(ts)));
            Map<TopicPartition, Long> byTime = new HashMap<>();
            for (Map.Entry<TopicPartition, ListOffsetsResultInfo> e :
                    admin.listOffsets(specs, options).all().get().entrySet()) {
                long offset = e.getValue().offset();
                if (offset == INVALID_OFFSET) {
                    if (starting && !latestOnNoMatch) {
                        throw new IllegalArgumentException("No offset matched from request of topic-partition "
                                + e.getKey() + " and timestamp " + timestamps.get(e.getKey()) + ".");
                    }
                    offset = LATEST;
                }
                byTime.put(e.getKey(), offset);
            }
            return resolvePlaceholders(byTime);
        }

        Map<TopicPartition, Long> resolvePlaceholders(Map<TopicPartition, Long> offsets) throws Exception {
            Map<TopicPartition, OffsetSpec> specs = new HashMap<>();
            offsets.forEach((tp, off) -> {
                if (off == LATEST) {
                    specs.put(tp, OffsetSpec.latest());
                } else if (off == EARLIEST) {
                    specs.put(tp, OffsetSpec.earliest());
                }
            });
            Map<TopicPartition, Long> resolved = listOffsets(specs);
            Map<TopicPartition, Long> out = new HashMap<>();
            offsets.forEach((tp, off) -> out.put(tp, off == LATEST || off == EARLIEST ? resolved.get(tp) : off));
            return out;
        }

        @Override
        public void close() {
            admin.close(Duration.ofSeconds(5));
        }
    }

    static Map<String, Object> readerResults(AdminReader r) throws Exception {
        Map<String, Object> out = new LinkedHashMap<>();
        out.put("partitions", names(r.assignedTopicPartitions()));
        Map<TopicPartition, Long> earliest = r.fetchEarliestOffsets();
        Map<TopicPartition, Long> latest = r.fetchLatestOffsets(null);
        out.put("earliest", byName(earliest));
        out.put("latest", byName(latest));
        out.put("latest_known", byName(r.fetchLatestOffsets(latest)));
        return out;
    }

    static Object adminReader() throws Exception {
        Map<String, Object> result = new LinkedHashMap<>();
        TopicPartition p0 = new TopicPartition("spark-src", 0);
        TopicPartition p1 = new TopicPartition("spark-src", 1);
        TopicPartition p2 = new TopicPartition("spark-src", 2);
        for (String level : List.of("read_uncommitted", "read_committed")) {
            Map<String, Object> levelResult = new LinkedHashMap<>();
            Map<String, Object> specified = new HashMap<>();
            specified.put(ConsumerConfig.ISOLATION_LEVEL_CONFIG, level);
            Map<String, Object> driver = driverParams(specified);
            try (AdminReader subscribe = new AdminReader(driver, List.of("spark-src"), null, null);
                 AdminReader pattern = new AdminReader(driver, null, "spark-src", null);
                 AdminReader assign = new AdminReader(driver, null, null, Set.of(p0, p2))) {
                levelResult.put("subscribe", readerResults(subscribe));
                levelResult.put("pattern", readerResults(pattern));
                levelResult.put("assign", readerResults(assign));
                Map<String, Object> ts = new LinkedHashMap<>();
                // startingOffsetsByTimestamp / endingOffsetsByTimestamp, per partition
                ts.put("specific_ending", byName(subscribe.fetchTimestampBasedOffsets(
                        Map.of(p0, Long.MAX_VALUE / 2, p1, Long.MAX_VALUE / 2, p2, Long.MAX_VALUE / 2), false, false)));
                String noMatch;
                try {
                    subscribe.fetchTimestampBasedOffsets(Map.of(p2, base + 10_000), true, false);
                    noMatch = "ok";
                } catch (IllegalArgumentException e) {
                    noMatch = e.getMessage();
                }
                ts.put("specific_starting_no_match_error", noMatch);
                ts.put("specific_starting_no_match_latest",
                       byName(subscribe.fetchTimestampBasedOffsets(Map.of(p0, base + 250, p1, base + 250, p2, base + 250),
                                                                     true, true)));
                levelResult.put("timestamps", ts);
                result.put(level, levelResult);
            }
        }
        // startingTimestamp / endingTimestamp: one timestamp for every partition (read_uncommitted)
        try (AdminReader r = new AdminReader(driverParams(Map.of()), List.of("spark-src"), null, null)) {
            Map<String, Object> global = new LinkedHashMap<>();
            for (long delta : new long[] {-1000, 0, 150, 400, 1100, 5000}) {
                Map<TopicPartition, Long> ts = new HashMap<>();
                for (TopicPartition tp : r.assignedTopicPartitions()) {
                    ts.put(tp, base + delta);
                }
                global.put(Long.toString(delta), byName(r.fetchTimestampBasedOffsets(ts, true, true)));
            }
            result.put("global_timestamp", global);

            // the topic grows while the query runs: new partitions appear to describeTopics and start at 0
            TopicPartition g0 = new TopicPartition("spark-grow", 0);
            try (AdminReader grow = new AdminReader(driverParams(Map.of()), List.of("spark-grow"), null, null)) {
                Map<TopicPartition, Long> before = grow.fetchLatestOffsets(null);
                grow.admin.createPartitions(Map.of("spark-grow", NewPartitions.increaseTo(3))).all().get();
                Map<TopicPartition, Long> after = grow.fetchLatestOffsets(before);
                Set<TopicPartition> added = new TreeSet<>((a, b) -> key(a).compareTo(key(b)));
                added.addAll(after.keySet());
                added.removeAll(before.keySet());
                result.put("grow", map("before", byName(before), "after", byName(after),
                                       "added_earliest", byName(grow.fetchEarliestOffsets(added)),
                                       "partitions_seen", names(grow.assignedTopicPartitions())));
            }
            // a deleted topic: describeTopics fails (the subscribe path); the pattern path just loses it
            try (AdminReader gone = new AdminReader(driverParams(Map.of()), List.of("spark-src", "spark-gone"), null,
                                                    null)) {
                String outcome;
                try {
                    gone.assignedTopicPartitions();
                    outcome = "ok";
                } catch (Exception e) {
                    outcome = errorName(e);
                }
                result.put("subscribe_missing_topic", outcome);
            }
        }
        return result;
    }

    // ------------------------------------------------------------------------------ deprecated_reader

    /** KafkaOffsetReaderConsumer: a subscribed driver consumer in group <prefix>-driver-N. */
    @SuppressWarnings("deprecation")
    static Map<String, Object> consumerReader(String groupId, List<String> topics, Pattern pattern) throws Exception {
        Map<String, Object> params = driverParams(Map.of());
        params.put(ConsumerConfig.GROUP_ID_CONFIG, groupId);
        Map<String, Object> out = new LinkedHashMap<>();
        try (KafkaConsumer<byte[], byte[]> consumer = new KafkaConsumer<>(params)) {
            if (pattern != null) {
                consumer.subscribe(pattern);
            } else {
                consumer.subscribe(topics);
            }
            // partitionsAssignedToConsumer(fetchingEarliestOffset = true) + fetchEarliestOffsets
            pollZero(consumer);
            Set<TopicPartition> partitions = consumer.assignment();
            consumer.pause(partitions);
            out.put("assignment", names(partitions));
            consumer.seekToBeginning(partitions);
            Map<TopicPartition, Long> earliest = new HashMap<>();
            for (TopicPartition tp : partitions) {
                earliest.put(tp, consumer.position(tp));
            }
            out.put("earliest", byName(earliest));

            // fetchLatestOffsets(None): poll(0), positions first (the KAFKA-7703 workaround), pause, seekToEnd
            pollZero(consumer);
            partitions = consumer.assignment();
            for (TopicPartition tp : partitions) {
                consumer.position(tp);
            }
            consumer.pause(partitions);
            consumer.seekToEnd(partitions);
            Map<TopicPartition, Long> latest = new HashMap<>();
            for (TopicPartition tp : partitions) {
                latest.put(tp, consumer.position(tp));
            }
            out.put("latest", byName(latest));

            // fetchSpecificOffsets: seek / seekToBeginning / seekToEnd, then position; a moved offset is data loss
            pollZero(consumer);
            partitions = consumer.assignment();
            for (TopicPartition tp : partitions) {
                consumer.position(tp);
            }
            consumer.pause(partitions);
            Map<TopicPartition, Long> specific = new HashMap<>();
            List<TopicPartition> sorted = new ArrayList<>(partitions);
            sorted.sort((a, b) -> key(a).compareTo(key(b)));
            for (int i = 0; i < sorted.size(); i++) {
                specific.put(sorted.get(i), i == 0 ? 2L : i == 1 ? EARLIEST : LATEST);
            }
            Map<TopicPartition, Long> fetched = new HashMap<>();
            for (Map.Entry<TopicPartition, Long> e : specific.entrySet()) {
                if (e.getValue() == LATEST) {
                    consumer.seekToEnd(List.of(e.getKey()));
                } else if (e.getValue() == EARLIEST) {
                    consumer.seekToBeginning(List.of(e.getKey()));
                } else {
                    consumer.seek(e.getKey(), e.getValue());
                }
            }
            for (TopicPartition tp : specific.keySet()) {
                fetched.put(tp, consumer.position(tp));
            }
            out.put("specific", byName(fetched));

            // fetchSpecificTimestampBasedOffsets: offsetsForTimes; null (no match) becomes seekToEnd
            Map<TopicPartition, Long> times = new HashMap<>();
            Map<TopicPartition, Long> byTime = new HashMap<>();
            for (TopicPartition tp : partitions) {
                times.put(tp, 0L);
            }
            Map<TopicPartition, OffsetAndTimestamp> found = consumer.offsetsForTimes(times);
            Map<String, Object> rawFound = new TreeMap<>();
            for (Map.Entry<TopicPartition, OffsetAndTimestamp> e : found.entrySet()) {
                OffsetAndTimestamp ot = e.getValue();
                rawFound.put(key(e.getKey()), ot == null ? null : map("offset", ot.offset(), "timestamp", ot.timestamp()));
                if (ot == null) {
                    consumer.seekToEnd(List.of(e.getKey()));
                } else {
                    consumer.seek(e.getKey(), ot.offset());
                }
            }
            for (TopicPartition tp : found.keySet()) {
                byTime.put(tp, consumer.position(tp));
            }
            out.put("offsets_for_times_0", rawFound);
            out.put("by_timestamp_0", byName(byTime));
            out.put("group_id", groupId);
        }
        return out;
    }

    /**
     * The connector's consumer.poll(0): the deprecated poll(long), removed in kafka-clients 4.0, waited for the
     * group join (the assignment) however long it took, then fetched without waiting. poll(Duration.ZERO) does
     * not wait for the join, so this polls until the consumer holds an assignment (what poll(0) returned with);
     * any records it fetches are dropped, as the connector's seeks that follow override the positions.
     */
    static void pollZero(KafkaConsumer<byte[], byte[]> consumer) {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
        consumer.poll(Duration.ZERO);
        while (consumer.assignment().isEmpty() && System.nanoTime() < deadline) {
            consumer.poll(Duration.ofMillis(50));
        }
    }

    static Object deprecatedReader() throws Exception {
        String prefix = QUERY_GROUP + "-driver";
        return map("subscribe", consumerReader(prefix + "-0", List.of("spark-src"), null),
                   "pattern", consumerReader(prefix + "-1", null, Pattern.compile("spark-src.*")));
    }

    // --------------------------------------------------------------------------------- the executors

    /** KafkaDataConsumer.AvailableOffsetRange. */
    record Range(long earliest, long latest) {}

    /** Thrown where the connector throws couldNotReadOffsetRangeInKafkaError (failOnDataLoss=true). */
    static final class DataLoss extends RuntimeException {
        final long start;
        final long end;

        DataLoss(long start, long end, Throwable cause) {
            super("Cannot fetch records in [" + start + ", " + end + ")", cause);
            this.start = start;
            this.end = end;
        }
    }

    /** InternalKafkaConsumer: one consumer assigned to one partition, seeking before every poll. */
    static final class InternalConsumer implements AutoCloseable {
        final TopicPartition tp;
        final KafkaConsumer<byte[], byte[]> consumer;
        int polls;

        InternalConsumer(TopicPartition tp, Map<String, Object> params) {
            this.tp = tp;
            this.consumer = new KafkaConsumer<>(params);
            this.consumer.assign(new ArrayList<>(List.of(tp)));
        }

        Object[] fetch(long offset, long pollTimeoutMs) throws java.util.concurrent.TimeoutException {
            consumer.seek(tp, offset);
            ConsumerRecords<byte[], byte[]> p = consumer.poll(Duration.ofMillis(pollTimeoutMs));
            polls++;
            List<ConsumerRecord<byte[], byte[]>> r = p.records(tp);
            long offsetAfterPoll = consumer.position(tp);
            Range range = getAvailableOffsetRange();
            if (r.isEmpty()) {
                if (offset < range.earliest() || offset >= range.latest()) {
                    throw new OffsetOutOfRangeException(Map.of(tp, offset));
                } else if (offset == offsetAfterPoll) {
                    throw new java.util.concurrent.TimeoutException(
                            "Cannot fetch record for offset " + offset + " in " + pollTimeoutMs + " milliseconds");
                }
            }
            return new Object[] {r, offsetAfterPoll, range};
        }

        Range getAvailableOffsetRange() {
            consumer.seekToBeginning(Set.of(tp));
            long earliest = consumer.position(tp);
            consumer.seekToEnd(Set.of(tp));
            long latest = consumer.position(tp);
            return new Range(earliest, latest);
        }

        @Override
        public void close() {
            consumer.close(Duration.ofSeconds(5));
        }
    }

    /** FetchedData: the records of the last poll, where the reader stands in them, and what poll saw. */
    static final class FetchedData {
        ListIterator<ConsumerRecord<byte[], byte[]>> records = Collections.emptyListIterator();
        long nextOffsetInFetchedData = UNKNOWN_OFFSET;
        long offsetAfterPoll = UNKNOWN_OFFSET;
        Range range = new Range(UNKNOWN_OFFSET, UNKNOWN_OFFSET);

        void withNewPoll(List<ConsumerRecord<byte[], byte[]>> r, long after, Range available) {
            records = r.listIterator();
            nextOffsetInFetchedData = UNKNOWN_OFFSET;
            offsetAfterPoll = after;
            range = available;
        }

        ConsumerRecord<byte[], byte[]> next() {
            ConsumerRecord<byte[], byte[]> r = records.next();
            nextOffsetInFetchedData = r.offset() + 1;
            return r;
        }

        ConsumerRecord<byte[], byte[]> previous() {
            ConsumerRecord<byte[], byte[]> r = records.previous();
            nextOffsetInFetchedData = r.offset();
            return r;
        }

        void reset() {
            records = Collections.emptyListIterator();
            nextOffsetInFetchedData = UNKNOWN_OFFSET;
            offsetAfterPoll = UNKNOWN_OFFSET;
            range = new Range(UNKNOWN_OFFSET, UNKNOWN_OFFSET);
        }
    }

    /** KafkaDataConsumer: get(offset, untilOffset, pollTimeoutMs, failOnDataLoss), with its counters. */
    static final class DataConsumer implements AutoCloseable {
        final TopicPartition tp;
        final Map<String, Object> params;
        final FetchedData fetchedData = new FetchedData();
        InternalConsumer consumer;
        long offsetOutOfRange;
        long dataLoss;
        int consumersCreated;
        final List<String> events = new ArrayList<>();

        DataConsumer(TopicPartition tp, Map<String, Object> params) {
            this.tp = tp;
            this.params = params;
        }

        InternalConsumer consumer() {
            if (consumer == null) {
                consumer = new InternalConsumer(tp, params);
                consumersCreated++;
            }
            return consumer;
        }

        Range getAvailableOffsetRange() {
            return consumer().getAvailableOffsetRange();
        }

        ConsumerRecord<byte[], byte[]> get(long offset, long untilOffset, long pollTimeoutMs, boolean failOnDataLoss)
                throws Exception {
            if (offset >= untilOffset) {
                throw new IllegalArgumentException("offset must always be less than untilOffset");
            }
            InternalConsumer c = consumer();
            long toFetchOffset = offset;
            ConsumerRecord<byte[], byte[]> record = null;
            boolean complete = false;
            while (toFetchOffset != UNKNOWN_OFFSET && !complete) {
                try {
                    Object[] fetched = fetchRecord(c, toFetchOffset, untilOffset, pollTimeoutMs, failOnDataLoss);
                    if (fetched[0] != null) {
                        @SuppressWarnings("unchecked")
                        ConsumerRecord<byte[], byte[]> r = (ConsumerRecord<byte[], byte[]>) fetched[0];
                        record = r;
                        complete = true;
                    } else {
                        long next = (Long) fetched[1];
                        events.add("invisible [" + toFetchOffset + ", " + next + ")");
                        toFetchOffset = next;
                        if (toFetchOffset >= untilOffset) {
                            fetchedData.reset();
                            toFetchOffset = UNKNOWN_OFFSET;
                        }
                    }
                } catch (OffsetOutOfRangeException e) {
                    // the connector releases the consumer to its pool and goes on with the same instance
                    fetchedData.reset();
                    events.add("out of range " + e.offsetOutOfRangePartitions().get(tp));
                    if (failOnDataLoss) {
                        dataLoss++;
                        throw new DataLoss(toFetchOffset, untilOffset, e);
                    }
                    dataLoss++;
                    long old = toFetchOffset;
                    toFetchOffset = getEarliestAvailableOffsetBetween(c, toFetchOffset, untilOffset);
                    offsetOutOfRange += toFetchOffset == UNKNOWN_OFFSET ? untilOffset - old : toFetchOffset - old;
                }
            }
            if (complete) {
                return record;
            }
            fetchedData.reset();
            return null;
        }

        long getEarliestAvailableOffsetBetween(InternalConsumer c, long offset, long untilOffset) {
            Range range = c.getAvailableOffsetRange();
            if (offset >= range.latest() || range.earliest() >= untilOffset) {
                events.add("skip [" + offset + ", " + untilOffset + ") outside " + range);
                return UNKNOWN_OFFSET;
            } else if (offset >= range.earliest()) {
                return offset;
            }
            events.add("skip [" + offset + ", " + range.earliest() + ")");
            return range.earliest();
        }

        Object[] fetchRecord(InternalConsumer c, long offset, long untilOffset, long pollTimeoutMs,
                             boolean failOnDataLoss) throws Exception {
            if (offset != fetchedData.nextOffsetInFetchedData) {
                fetchData(c, offset, pollTimeoutMs);
            } else if (!fetchedData.records.hasNext()) {
                if (offset < fetchedData.offsetAfterPoll) {
                    long next = fetchedData.offsetAfterPoll;
                    fetchedData.reset();
                    return new Object[] {null, next};
                }
                fetchData(c, offset, pollTimeoutMs);
            }
            if (!fetchedData.records.hasNext()) {
                if (offset > fetchedData.offsetAfterPoll) {
                    throw new IllegalStateException("seek to " + offset + " and poll but the offset was reset to "
                            + fetchedData.offsetAfterPoll);
                }
                return new Object[] {null, fetchedData.offsetAfterPoll};
            }
            ConsumerRecord<byte[], byte[]> record = fetchedData.next();
            if (record.offset() > offset) {
                if (fetchedData.range.earliest() <= offset) {
                    // offset is valid but invisible (a transaction marker, an aborted record): go to record.offset
                    fetchedData.previous();
                    return new Object[] {null, record.offset()};
                }
                if (failOnDataLoss) {
                    dataLoss++;
                    throw new DataLoss(offset, record.offset(), null);
                } else if (record.offset() >= untilOffset) {
                    dataLoss++;
                    return new Object[] {null, untilOffset};
                }
                dataLoss++;
                return new Object[] {record, fetchedData.nextOffsetInFetchedData};
            } else if (record.offset() < offset) {
                throw new IllegalStateException("Tried to fetch " + offset + " but the returned record offset was "
                        + record.offset());
            }
            return new Object[] {record, fetchedData.nextOffsetInFetchedData};
        }

        @SuppressWarnings("unchecked")
        void fetchData(InternalConsumer c, long offset, long pollTimeoutMs) throws Exception {
            Object[] f = c.fetch(offset, pollTimeoutMs);
            fetchedData.withNewPoll((List<ConsumerRecord<byte[], byte[]>>) f[0], (Long) f[1], (Range) f[2]);
        }

        @Override
        public void close() {
            if (consumer != null) {
                consumer.close();
            }
        }
    }

    static Map<String, Object> recordJson(ConsumerRecord<byte[], byte[]> r) {
        List<List<String>> headers = new ArrayList<>();
        for (Header h : r.headers()) {
            headers.add(java.util.Arrays.asList(h.key(), hex(h.value())));
        }
        return map("offset", r.offset(), "key", hex(r.key()), "value", hex(r.value()), "headers", headers,
                   "timestamp", r.timestamp(), "timestamp_type", r.timestampType().toString());
    }

    /** KafkaBatchPartitionReader: resolveRange (late binding of EARLIEST/LATEST), then get() until the end. */
    static Map<String, Object> readPartition(DataConsumer dc, long from, long until, long pollTimeoutMs,
                                             boolean failOnDataLoss) throws Exception {
        long started = System.nanoTime();
        long resolvedFrom = from;
        long resolvedUntil = until;
        if (from < 0 || until < 0) {
            Range available = dc.getAvailableOffsetRange();
            resolvedFrom = from < 0 ? available.earliest() : from;
            resolvedUntil = until < 0 ? available.latest() : until;
        }
        List<Map<String, Object>> rows = new ArrayList<>();
        long nextOffset = resolvedFrom;
        while (nextOffset < resolvedUntil) {
            ConsumerRecord<byte[], byte[]> r = dc.get(nextOffset, resolvedUntil, pollTimeoutMs, failOnDataLoss);
            if (r == null) {
                break;
            }
            rows.add(recordJson(r));
            nextOffset = r.offset() + 1;
        }
        return map("from", resolvedFrom, "until", resolvedUntil, "records", rows, "next_offset", nextOffset,
                   "ms", (System.nanoTime() - started) / 1_000_000);
    }

    static Map<String, Object> counters(DataConsumer dc) {
        return map("polls", dc.consumer == null ? 0 : dc.consumer.polls, "offset_out_of_range", dc.offsetOutOfRange,
                   "data_loss", dc.dataLoss, "consumers", dc.consumersCreated, "events", new ArrayList<>(dc.events));
    }

    static Object executorRead(String isolation) throws Exception {
        Map<String, Object> specified = new HashMap<>();
        specified.put(ConsumerConfig.ISOLATION_LEVEL_CONFIG, isolation);
        String batchGroup = "spark-kafka-relation-" + UUID.randomUUID();
        Map<String, Object> params = executorParams(specified, batchGroup);
        Map<String, Object> out = new LinkedHashMap<>();
        out.put("group_id", params.get(ConsumerConfig.GROUP_ID_CONFIG));
        // a batch query over the whole partition: startingOffsets=earliest, endingOffsets=latest
        try (DataConsumer dc = new DataConsumer(new TopicPartition("spark-txn", 0), params)) {
            out.put("whole", readPartition(dc, EARLIEST, LATEST, 10_000, true));
            out.put("whole_counters", counters(dc));
            dc.events.clear();
            // a micro-batch whose range starts on the first marker and ends inside the second transaction
            out.put("from_marker", readPartition(dc, 5, 9, 10_000, true));
            out.put("from_marker_counters", counters(dc));
            dc.events.clear();
            // a range that is nothing but a marker: no record, and no data loss
            out.put("only_marker", readPartition(dc, 10, 11, 10_000, true));
            out.put("only_marker_counters", counters(dc));
            dc.events.clear();
            // a range past the end with failOnDataLoss=true: the empty poll counts as out of range, the query fails
            String pastEnd;
            try {
                dc.get(11, 12, 300, true);
                pastEnd = "returned";
            } catch (OffsetOutOfRangeException | java.util.concurrent.TimeoutException | DataLoss e) {
                pastEnd = e.getClass().getSimpleName();
            }
            out.put("past_end_fail_on_data_loss", pastEnd);
        }
        // another partition, plain records, with headers: spark-src-0 from offset 1 on
        try (DataConsumer dc = new DataConsumer(new TopicPartition("spark-src", 0), params)) {
            out.put("src", readPartition(dc, 1, LATEST, 10_000, true));
            out.put("src_counters", counters(dc));
        }
        return out;
    }

    // -------------------------------------------------------------------------------------- data_loss

    static Object dataLoss() throws Exception {
        TopicPartition tp = new TopicPartition("spark-loss", 0);
        Map<String, Object> out = new LinkedHashMap<>();
        Map<String, Object> params = executorParams(Map.of(), QUERY_GROUP);
        try (AdminReader driver = new AdminReader(driverParams(Map.of()), List.of("spark-loss"), null, null);
             DataConsumer first = new DataConsumer(tp, params)) {
            Map<TopicPartition, Long> start = driver.fetchEarliestOffsets();
            Map<TopicPartition, Long> end = driver.fetchLatestOffsets(null);
            out.put("offsets_before", map("earliest", byName(start), "latest", byName(end)));
            // micro-batch 1 reads [0, 4)
            out.put("batch1", readPartition(first, 0, 4, 10_000, true));

            // retention (here: deleteRecords) moves the log start past what batch 2 is about to read
            long low = driver.admin.deleteRecords(Map.of(tp, RecordsToDelete.beforeOffset(5))).lowWatermarks()
                    .get(tp).get().lowWatermark();
            out.put("low_watermark", low);
            Map<TopicPartition, Long> latestAfter = driver.fetchLatestOffsets(end);
            out.put("offsets_after", map("earliest", byName(driver.fetchEarliestOffsets()),
                                         "latest", byName(latestAfter)));
            Map<String, Object> byTime = new LinkedHashMap<>();
            long firstTs = (Long) ((Map<?, ?>) ((List<?>) ((Map<?, ?>) out.get("batch1")).get("records")).get(0))
                    .get("timestamp");
            ListOffsetsResultInfo info = driver.admin.listOffsets(Map.of(tp, OffsetSpec.forTimestamp(firstTs)))
                    .all().get().get(tp);
            byTime.put("offset", info.offset());
            byTime.put("timestamp", info.timestamp());
            out.put("timestamp_of_deleted_record", byTime);

        }
        // micro-batch 2 [4, 10) with failOnDataLoss=true, on another executor (the first one's prefetched
        // records would serve it from memory): poll throws (auto.offset.reset=none), the query fails
        try (DataConsumer dc = new DataConsumer(tp, params)) {
            try {
                readPartition(dc, 4, 10, 10_000, true);
                out.put("fail_on_data_loss", "read");
            } catch (DataLoss e) {
                out.put("fail_on_data_loss", map("error", "DataLoss", "start", e.start, "end", e.end,
                                                 "cause", e.getCause() == null ? null : errorName(e.getCause())));
            }
            out.put("fail_counters", counters(dc));
        }
        try (DataConsumer dc = new DataConsumer(tp, params)) {
            // the same batch with failOnDataLoss=false: recover from the earliest available offset
            out.put("skip_lost", readPartition(dc, 4, 10, 10_000, false));
            out.put("skip_counters", counters(dc));
            dc.events.clear();
            // a range wholly past the end (the topic was recreated, say): nothing is read, no exception
            out.put("past_end", readPartition(dc, 10, 12, 500, false));
            out.put("past_end_counters", counters(dc));
            String failing;
            try {
                dc.get(10, 12, 500, true);
                failing = "returned";
            } catch (DataLoss e) {
                failing = "DataLoss [" + e.start + ", " + e.end + ")";
            }
            out.put("past_end_fail", failing);
        }
        try (Admin admin = Admin.create(driverParams(Map.of()))) {
            String past;
            try {
                admin.deleteRecords(Map.of(tp, RecordsToDelete.beforeOffset(11))).all().get();
                past = "ok";
            } catch (Exception e) {
                past = errorName(e);
            }
            out.put("delete_past_end", past);
            long again = admin.deleteRecords(Map.of(tp, RecordsToDelete.beforeOffset(3))).lowWatermarks().get(tp).get()
                    .lowWatermark();
            out.put("delete_below_start_low_watermark", again);
        }
        return out;
    }

    // ------------------------------------------------------------------------------- describe_cluster

    static Map<String, Object> node(Node n) {
        return n == null ? null : map("id", n.id(), "host", n.host(), "port", n.port(), "rack", n.rack());
    }

    static Object describeCluster() throws Exception {
        try (Admin admin = Admin.create(driverParams(Map.of()))) {
            DescribeClusterResult r = admin.describeCluster();
            List<Map<String, Object>> nodes = new ArrayList<>();
            for (Node n : r.nodes().get()) {
                nodes.add(node(n));
            }
            return map("cluster_id", r.clusterId().get(), "controller", node(r.controller().get()), "nodes", nodes);
        }
    }
}
