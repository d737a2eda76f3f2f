// End-to-end scenarios with Kafka's official Java client (kafka-clients) against a fakekafka broker.
//
// Usage: java JavaDriver BOOTSTRAP [SCENARIO...]   (driven by tests/clients/test_java_client.py)
//
// One JVM runs every scenario named (all of them when none is), each against its own topics, and prints
// one JSON line per scenario on stdout:
//     {"scenario": NAME, "ok": true, "ms": N, "result": {...}}   or   {"scenario": NAME, "ok": false, "error": TRACE}
// then {"done": true}. A scenario that needs the broker changed behind the client's back (a leader epoch
// bump) prints {"request": WHAT, ...} and waits for one line on stdin before going on.
// Binary keys, values and header values are hex strings (null stays null); expected failures are reported
// as the exception's simple class name.

import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HexFormat;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Properties;
import java.util.TreeMap;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.AlterConfigOp;
import org.apache.kafka.clients.admin.Config;
import org.apache.kafka.clients.admin.ConfigEntry;
import org.apache.kafka.clients.admin.CreateTopicsResult;
import org.apache.kafka.clients.admin.DescribeClusterResult;
import org.apache.kafka.clients.admin.DescribeConfigsOptions;
import org.apache.kafka.clients.admin.ListOffsetsResult.ListOffsetsResultInfo;
import org.apache.kafka.clients.admin.NewPartitions;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.admin.OffsetSpec;
import org.apache.kafka.clients.admin.TopicDescription;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.consumer.OffsetAndTimestamp;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.Node;
import org.apache.kafka.common.TopicCollection;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.TopicPartitionInfo;
import org.apache.kafka.common.Uuid;
import org.apache.kafka.common.config.ConfigResource;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.header.internals.RecordHeader;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.ByteArraySerializer;

public final class JavaDriver {
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final HexFormat HEX = HexFormat.of();
    private static final long TIMEOUT_S = 15;
    private static final List<String> ALL = List.of(
            "roundtrip", "compression", "large", "partitions100", "admin_create", "admin_delete",
            "admin_partitions", "admin_describe", "admin_configs", "admin_alter_configs", "admin_list_offsets",
            "consumer_offsets", "read_committed", "validation");

    private static String bootstrap;
    private static Admin admin;
    private static final BufferedReader STDIN =
            new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));

    public static void main(String[] args) throws Exception {
        bootstrap = args[0];
        List<String> scenarios = args.length > 1 ? List.of(args).subList(1, args.length) : ALL;
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
        if (admin != null) {
            admin.close(Duration.ofSeconds(5));
        }
        emit(map("done", true));
        System.exit(0);
    }

    private static Object run(String name) throws Exception {
        switch (name) {
            case "roundtrip": return roundtrip();
            case "compression": return compression();
            case "large": return large();
            case "partitions100": return partitions100();
            case "admin_create": return adminCreate();
            case "admin_delete": return adminDelete();
            case "admin_partitions": return adminPartitions();
            case "admin_describe": return adminDescribe();
            case "admin_configs": return adminConfigs();
            case "admin_alter_configs": return adminAlterConfigs();
            case "admin_list_offsets": return adminListOffsets();
            case "consumer_offsets": return consumerOffsets();
            case "read_committed": return readCommitted();
            case "validation": return validation();
            default: throw new IllegalArgumentException("unknown scenario " + name);
        }
    }

    // ------------------------------------------------------------------------------------------ helpers

    private static synchronized void emit(Map<String, Object> line) throws Exception {
        System.out.println(JSON.writeValueAsString(line));
        System.out.flush();
    }

    /** Asks the test to change the broker; returns its one-line answer. */
    private static String request(String what, Object... kv) throws Exception {
        Map<String, Object> line = map(kv);
        line.put("request", what);
        emit(line);
        String answer = STDIN.readLine();
        if (answer == null) {
            throw new IllegalStateException("stdin closed while waiting for " + what);
        }
        return answer;
    }

    private static Map<String, Object> map(Object... kv) {
        Map<String, Object> m = new LinkedHashMap<>();
        for (int i = 0; i < kv.length; i += 2) {
            m.put((String) kv[i], kv[i + 1]);
        }
        return m;
    }

    private static byte[] utf8(String s) {
        return s == null ? null : s.getBytes(StandardCharsets.UTF_8);
    }

    private static String hex(byte[] b) {
        return b == null ? null : HEX.formatHex(b);
    }

    private static String sha256(byte[] b) throws Exception {
        return HEX.formatHex(MessageDigest.getInstance("SHA-256").digest(b));
    }

    /** A deterministic payload (byte i is i % 251), which the test recomputes. */
    private static byte[] pattern(int size) {
        byte[] b = new byte[size];
        for (int i = 0; i < size; i++) {
            b[i] = (byte) (i % 251);
        }
        return b;
    }

    /** The simple class name of what an expected failure really was (futures wrap it). */
    private static String errorName(Throwable e) {
        while ((e instanceof ExecutionException || e instanceof CompletionException) && e.getCause() != null) {
            e = e.getCause();
        }
        return e.getClass().getSimpleName();
    }

    private interface Call {
        Object call() throws Exception;
    }

    /** "ok" or the failure's class name. */
    private static String outcome(Call c) {
        try {
            c.call();
            return "ok";
        } catch (Exception e) {
            return errorName(e);
        }
    }

    private static Admin admin() {
        if (admin == null) {
            Properties p = new Properties();
            p.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
            p.put(AdminClientConfig.REQUEST_TIMEOUT_MS_CONFIG, 10_000);
            p.put(AdminClientConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, 15_000);
            admin = Admin.create(p);
        }
        return admin;
    }

    private static <T> T get(org.apache.kafka.common.KafkaFuture<T> f) throws Exception {
        return f.get(TIMEOUT_S, TimeUnit.SECONDS);
    }

    private static Uuid createTopic(String name, int partitions, Map<String, String> configs) throws Exception {
        NewTopic t = new NewTopic(name, partitions, (short) 1);
        if (configs != null) {
            t.configs(configs);
        }
        CreateTopicsResult r = admin().createTopics(List.of(t));
        get(r.all());
        Uuid id = get(r.topicId(name));
        awaitLeaders(name, partitions);
        return id;
    }

    /** Until the broker's metadata has the new topic with a leader for every partition: Kafka answers
     *  CreateTopics before its metadata cache has them (a describe or a send at once may meet
     *  UNKNOWN_TOPIC_OR_PARTITION, or wait out its delivery timeout on a loaded machine); fakekafka has them at
     *  once. */
    private static void awaitLeaders(String name, int partitions) throws Exception {
        long deadline = System.currentTimeMillis() + 30_000;
        while (true) {
            try {
                TopicDescription d = get(admin().describeTopics(List.of(name)).allTopicNames()).get(name);
                if (d.partitions().size() == partitions
                        && d.partitions().stream().allMatch(p -> p.leader() != null && !p.leader().isEmpty())) {
                    return;
                }
            } catch (java.util.concurrent.ExecutionException e) {
                if (!(e.getCause() instanceof org.apache.kafka.common.errors.UnknownTopicOrPartitionException)) {
                    throw e;
                }
            }
            if (System.currentTimeMillis() > deadline) {
                throw new IllegalStateException("topic " + name + " has no leader for every partition after 30 s");
            }
            Thread.sleep(50);
        }
    }

    private static KafkaProducer<byte[], byte[]> producer(Object... overrides) {
        Properties p = new Properties();
        p.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        p.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class.getName());
        p.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class.getName());
        p.put(ProducerConfig.ACKS_CONFIG, "all");
        p.put(ProducerConfig.LINGER_MS_CONFIG, 5);
        p.put(ProducerConfig.REQUEST_TIMEOUT_MS_CONFIG, 10_000);
        p.put(ProducerConfig.DELIVERY_TIMEOUT_MS_CONFIG, 20_000);
        p.put(ProducerConfig.MAX_BLOCK_MS_CONFIG, 15_000);
        for (int i = 0; i < overrides.length; i += 2) {
            p.put(overrides[i], overrides[i + 1]);
        }
        return new KafkaProducer<>(p);
    }

    private static KafkaConsumer<byte[], byte[]> consumer(Object... overrides) {
        Properties p = new Properties();
        p.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        p.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName());
        p.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName());
        p.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
        p.put(ConsumerConfig.FETCH_MAX_WAIT_MS_CONFIG, 100);
        p.put(ConsumerConfig.REQUEST_TIMEOUT_MS_CONFIG, 10_000);
        p.put(ConsumerConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, 15_000);
        for (int i = 0; i < overrides.length; i += 2) {
            p.put(overrides[i], overrides[i + 1]);
        }
        return new KafkaConsumer<>(p);
    }

    /** Polls until `count` records arrived (or the deadline passes); returns what arrived. */
    private static List<ConsumerRecord<byte[], byte[]>> consume(KafkaConsumer<byte[], byte[]> c, int count) {
        List<ConsumerRecord<byte[], byte[]>> out = new ArrayList<>();
        long deadline = System.currentTimeMillis() + TIMEOUT_S * 1000;
        while (out.size() < count && System.currentTimeMillis() < deadline) {
            for (ConsumerRecord<byte[], byte[]> r : c.poll(Duration.ofMillis(100))) {
                out.add(r);
            }
        }
        return out;
    }

    /** Assigns the partitions, seeks to the beginning and reads `count` records. */
    private static List<ConsumerRecord<byte[], byte[]>> readAll(KafkaConsumer<byte[], byte[]> c,
                                                                Collection<TopicPartition> tps, int count) {
        c.assign(tps);
        c.seekToBeginning(tps);
        return consume(c, count);
    }

    private static Map<String, Object> recordJson(ConsumerRecord<byte[], byte[]> r) {
        List<List<String>> headers = new ArrayList<>();
        for (Header h : r.headers()) {
            headers.add(java.util.Arrays.asList(h.key(), hex(h.value())));
        }
        return map("topic", r.topic(), "partition", r.partition(), "offset", r.offset(),
                   "timestamp", r.timestamp(), "timestamp_type", r.timestampType().name(),
                   "key", hex(r.key()), "value", hex(r.value()), "headers", headers,
                   "leader_epoch", r.leaderEpoch().orElse(null));
    }

    private static List<Map<String, Object>> recordsJson(List<ConsumerRecord<byte[], byte[]>> rs) {
        List<Map<String, Object>> out = new ArrayList<>();
        for (ConsumerRecord<byte[], byte[]> r : rs) {
            out.add(recordJson(r));
        }
        return out;
    }

    private static Map<String, Object> metadataJson(RecordMetadata m) {
        return map("partition", m.partition(), "offset", m.offset(), "timestamp", m.timestamp());
    }

    private static Map<String, Object> nodeJson(Node n) {
        return n == null ? null : map("id", n.id(), "host", n.host(), "port", n.port(), "rack", n.rack());
    }

    // ---------------------------------------------------------------------------------------- scenarios

    /** Idempotent acks=all producer, then assign+seekToBeginning: keys, headers, null keys and values. */
    private static Object roundtrip() throws Exception {
        String topic = "java-roundtrip";
        long ts = System.currentTimeMillis() - 60_000;
        List<ProducerRecord<byte[], byte[]>> records = List.of(
                new ProducerRecord<>(topic, 0, ts, utf8("k0"), utf8("v0"),
                        List.of(new RecordHeader("h1", utf8("x")), new RecordHeader("h2", (byte[]) null))),
                new ProducerRecord<>(topic, 0, ts + 1, null, utf8("v1")),
                new ProducerRecord<>(topic, 0, ts + 2, utf8("k2"), (byte[]) null),
                new ProducerRecord<>(topic, 0, ts + 3, (byte[]) null, (byte[]) null),
                new ProducerRecord<>(topic, 0, ts + 4, utf8("k4"), new byte[0],
                        List.of(new RecordHeader("dup", utf8("a")), new RecordHeader("dup", utf8("b")),
                                new RecordHeader("empty", new byte[0]))),
                new ProducerRecord<>(topic, 0, ts + 5, new byte[] {0, (byte) 0xff}, new byte[] {(byte) 0x80, 0}));
        List<Map<String, Object>> sent = new ArrayList<>();
        try (KafkaProducer<byte[], byte[]> p = producer()) {
            List<Future<RecordMetadata>> futures = new ArrayList<>();
            for (ProducerRecord<byte[], byte[]> r : records) {
                futures.add(p.send(r));
            }
            p.flush();
            for (Future<RecordMetadata> f : futures) {
                sent.add(metadataJson(f.get(TIMEOUT_S, TimeUnit.SECONDS)));
            }
            // a second batch after the first is acknowledged: sequence numbers go on
            sent.add(metadataJson(p.send(new ProducerRecord<>(topic, 0, ts + 6, utf8("k6"), utf8("v6")))
                    .get(TIMEOUT_S, TimeUnit.SECONDS)));
        }
        TopicPartition tp = new TopicPartition(topic, 0);
        try (KafkaConsumer<byte[], byte[]> c = consumer()) {
            List<ConsumerRecord<byte[], byte[]>> got = readAll(c, List.of(tp), records.size() + 1);
            return map("base_timestamp", ts, "sent", sent, "records", recordsJson(got), "position", c.position(tp));
        }
    }

    /** One topic per codec; values must come back intact (the test checks the stored batch's codec). */
    private static Object compression() throws Exception {
        Map<String, Object> out = new LinkedHashMap<>();
        for (String codec : List.of("none", "gzip", "snappy", "lz4", "zstd")) {
            String topic = "java-codec-" + codec;
            List<String> values = new ArrayList<>();
            for (int i = 0; i < 20; i++) {
                values.add(codec + "-value-" + i + "-" + "abcdefgh".repeat(8));
            }
            try (KafkaProducer<byte[], byte[]> p = producer(ProducerConfig.COMPRESSION_TYPE_CONFIG, codec,
                                                            ProducerConfig.LINGER_MS_CONFIG, 50)) {
                List<Future<RecordMetadata>> futures = new ArrayList<>();
                for (int i = 0; i < values.size(); i++) {
                    futures.add(p.send(new ProducerRecord<>(topic, 0, utf8("k" + i), utf8(values.get(i)))));
                }
                p.flush();
                for (Future<RecordMetadata> f : futures) {
                    f.get(TIMEOUT_S, TimeUnit.SECONDS);
                }
            }
            try (KafkaConsumer<byte[], byte[]> c = consumer()) {
                List<String> got = new ArrayList<>();
                for (ConsumerRecord<byte[], byte[]> r : readAll(c, List.of(new TopicPartition(topic, 0)),
                                                                values.size())) {
                    got.add(new String(r.value(), StandardCharsets.UTF_8));
                }
                out.put(codec, map("sent", values, "received", got));
            }
        }
        return out;
    }

    /** A 1 MiB record through a topic allowing it; records over max.message.bytes are refused. */
    private static Object large() throws Exception {
        String big = "java-large";
        String normal = "java-large-default";
        createTopic(big, 1, Map.of("max.message.bytes", String.valueOf(2 * 1024 * 1024)));
        createTopic(normal, 1, null);
        byte[] mib = pattern(1024 * 1024);
        Map<String, Object> out = new LinkedHashMap<>();
        try (KafkaProducer<byte[], byte[]> p = producer(ProducerConfig.MAX_REQUEST_SIZE_CONFIG, 8 * 1024 * 1024)) {
            out.put("big_sent", metadataJson(p.send(new ProducerRecord<>(big, utf8("big"), mib))
                    .get(TIMEOUT_S, TimeUnit.SECONDS)));
            out.put("too_large_for_topic", outcome(() -> p.send(new ProducerRecord<>(big, pattern(3 * 1024 * 1024)))
                    .get(TIMEOUT_S, TimeUnit.SECONDS)));
            out.put("too_large_for_default", outcome(() -> p.send(
                    new ProducerRecord<>(normal, pattern(1536 * 1024))).get(TIMEOUT_S, TimeUnit.SECONDS)));
            // the same idempotent producer goes on after its refused batches
            out.put("after", metadataJson(p.send(new ProducerRecord<>(big, utf8("after"), utf8("small")))
                    .get(TIMEOUT_S, TimeUnit.SECONDS)));
            out.put("after_default", metadataJson(p.send(new ProducerRecord<>(normal, utf8("after"), utf8("small")))
                    .get(TIMEOUT_S, TimeUnit.SECONDS)));
        }
        try (KafkaProducer<byte[], byte[]> p = producer()) {  // max.request.size left at its 1 MiB default
            out.put("client_side_limit", outcome(() -> p.send(new ProducerRecord<>(big, pattern(2 * 1024 * 1024)))
                    .get(TIMEOUT_S, TimeUnit.SECONDS)));
        }
        try (KafkaConsumer<byte[], byte[]> c = consumer()) {
            List<Map<String, Object>> got = new ArrayList<>();
            for (ConsumerRecord<byte[], byte[]> r : readAll(c, List.of(new TopicPartition(big, 0)), 2)) {
                got.add(map("offset", r.offset(), "key", hex(r.key()), "size", r.value().length,
                            "sha256", sha256(r.value())));
            }
            out.put("consumed", got);
        }
        return out;
    }

    /** 100 partitions: three records sent to each, all read back by one consumer. */
    private static Object partitions100() throws Exception {
        String topic = "java-p100";
        createTopic(topic, 100, null);
        List<Future<RecordMetadata>> futures = new ArrayList<>();
        try (KafkaProducer<byte[], byte[]> p = producer()) {
            for (int round = 0; round < 3; round++) {
                for (int part = 0; part < 100; part++) {
                    futures.add(p.send(new ProducerRecord<>(topic, part, utf8("k" + part),
                                                            utf8(part + ":" + round))));
                }
            }
            p.flush();
            for (Future<RecordMetadata> f : futures) {
                f.get(TIMEOUT_S, TimeUnit.SECONDS);
            }
        }
        List<TopicPartition> tps = new ArrayList<>();
        for (int part = 0; part < 100; part++) {
            tps.add(new TopicPartition(topic, part));
        }
        try (KafkaConsumer<byte[], byte[]> c = consumer()) {
            Map<Integer, List<String>> byPartition = new TreeMap<>();
            for (ConsumerRecord<byte[], byte[]> r : readAll(c, tps, 300)) {
                byPartition.computeIfAbsent(r.partition(), k -> new ArrayList<>())
                        .add(r.offset() + "=" + new String(r.value(), StandardCharsets.UTF_8));
            }
            Map<String, Long> ends = new TreeMap<>();
            c.endOffsets(tps).forEach((tp, off) -> ends.put(String.valueOf(tp.partition()), off));
            return map("consumed", byPartition, "end_offsets", ends);
        }
    }

    private static Object adminCreate() throws Exception {
        Map<String, Object> out = new LinkedHashMap<>();
        CreateTopicsResult r = admin().createTopics(List.of(
                new NewTopic("java-admin-a", 3, (short) 1).configs(Map.of("retention.ms", "12345")),
                new NewTopic("java-admin-defaults", Optional.empty(), Optional.empty())));
        get(r.all());
        out.put("created", map(
                "topic_id", get(r.topicId("java-admin-a")).toString(),
                "num_partitions", get(r.numPartitions("java-admin-a")),
                "replication_factor", get(r.replicationFactor("java-admin-a")),
                "retention_ms", get(r.config("java-admin-a")).get("retention.ms").value(),
                "defaults_partitions", get(r.numPartitions("java-admin-defaults")),
                "defaults_replication_factor", get(r.replicationFactor("java-admin-defaults"))));
        out.put("exists", outcome(() -> get(admin().createTopics(
                List.of(new NewTopic("java-admin-a", 1, (short) 1))).all())));
        out.put("zero_partitions", outcome(() -> get(admin().createTopics(
                List.of(new NewTopic("java-admin-zero", 0, (short) 1))).all())));
        out.put("replication_factor_3", outcome(() -> get(admin().createTopics(
                List.of(new NewTopic("java-admin-rf3", 1, (short) 3))).all())));
        out.put("bad_name", outcome(() -> get(admin().createTopics(
                List.of(new NewTopic("bad name!", 1, (short) 1))).all())));
        out.put("too_long_name", outcome(() -> get(admin().createTopics(
                List.of(new NewTopic("x".repeat(250), 1, (short) 1))).all())));
        createTopic("java.collide", 1, null);
        out.put("collision", outcome(() -> get(admin().createTopics(
                List.of(new NewTopic("java_collide", 1, (short) 1))).all())));
        out.put("bad_config", outcome(() -> get(admin().createTopics(
                List.of(new NewTopic("java-admin-badcfg", 1, (short) 1).configs(Map.of("no.such.config", "1"))))
                .all())));
        out.put("validate_only", outcome(() -> get(admin().createTopics(
                List.of(new NewTopic("java-admin-validate", 1, (short) 1)),
                new org.apache.kafka.clients.admin.CreateTopicsOptions().validateOnly(true)).all())));
        out.put("topics", new ArrayList<>(new java.util.TreeSet<>(get(admin().listTopics().names()))));
        return out;
    }

    private static Object adminDelete() throws Exception {
        Map<String, Object> out = new LinkedHashMap<>();
        createTopic("java-admin-del", 2, null);
        Uuid id = createTopic("java-admin-delid", 1, null);
        out.put("by_name", outcome(() -> get(admin().deleteTopics(List.of("java-admin-del")).all())));
        out.put("unknown_name", outcome(() -> get(admin().deleteTopics(List.of("java-admin-nope")).all())));
        out.put("by_id", outcome(() -> get(admin().deleteTopics(TopicCollection.ofTopicIds(List.of(id))).all())));
        out.put("unknown_id", outcome(() -> get(admin().deleteTopics(
                TopicCollection.ofTopicIds(List.of(Uuid.randomUuid()))).all())));
        out.put("again", outcome(() -> get(admin().deleteTopics(List.of("java-admin-del")).all())));
        out.put("topics", new ArrayList<>(new java.util.TreeSet<>(
                topicsOnceGone("java-admin-del", "java-admin-delid"))));
        // a deleted name can be created again
        out.put("recreate", outcome(() -> createTopic("java-admin-del", 1, null)));
        return out;
    }

    /** The topic names once none of `deleted` is listed (or TIMEOUT_S passed): Kafka's brokers drop a deleted
     *  topic from their metadata a moment after the controller has answered DeleteTopics. */
    private static java.util.Set<String> topicsOnceGone(String... deleted) throws Exception {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(TIMEOUT_S);
        while (true) {
            java.util.Set<String> names = get(admin().listTopics().names());
            if (java.util.Collections.disjoint(names, List.of(deleted)) || System.nanoTime() > deadline) {
                return names;
            }
            Thread.sleep(20);
        }
    }

    private static Object adminPartitions() throws Exception {
        Map<String, Object> out = new LinkedHashMap<>();
        String topic = "java-admin-parts";
        createTopic(topic, 2, null);
        out.put("increase", outcome(() -> get(admin().createPartitions(
                Map.of(topic, NewPartitions.increaseTo(5))).all())));
        out.put("partitions", get(admin().describeTopics(List.of(topic)).allTopicNames()).get(topic)
                .partitions().size());
        out.put("decrease", outcome(() -> get(admin().createPartitions(
                Map.of(topic, NewPartitions.increaseTo(3))).all())));
        out.put("same", outcome(() -> get(admin().createPartitions(
                Map.of(topic, NewPartitions.increaseTo(5))).all())));
        out.put("unknown", outcome(() -> get(admin().createPartitions(
                Map.of("java-admin-parts-nope", NewPartitions.increaseTo(5))).all())));
        // a new partition takes records at once
        try (KafkaProducer<byte[], byte[]> p = producer()) {
            out.put("produced", metadataJson(p.send(new ProducerRecord<>(topic, 4, null, utf8("p4")))
                    .get(TIMEOUT_S, TimeUnit.SECONDS)));
        }
        return out;
    }

    private static Map<String, Object> describeJson(TopicDescription d) {
        List<Map<String, Object>> parts = new ArrayList<>();
        for (TopicPartitionInfo p : d.partitions()) {
            List<Integer> replicas = new ArrayList<>();
            p.replicas().forEach(n -> replicas.add(n.id()));
            List<Integer> isr = new ArrayList<>();
            p.isr().forEach(n -> isr.add(n.id()));
            parts.add(map("partition", p.partition(), "leader", nodeJson(p.leader()), "replicas", replicas,
                          "isr", isr));
        }
        return map("name", d.name(), "topic_id", d.topicId().toString(), "internal", d.isInternal(),
                   "partitions", parts);
    }

    private static Object adminDescribe() throws Exception {
        Map<String, Object> out = new LinkedHashMap<>();
        String topic = "java-admin-desc";
        Uuid id = createTopic(topic, 3, null);
        out.put("created_id", id.toString());
        out.put("by_name", describeJson(get(admin().describeTopics(List.of(topic)).allTopicNames()).get(topic)));
        out.put("by_id", describeJson(get(admin().describeTopics(TopicCollection.ofTopicIds(List.of(id)))
                .allTopicIds()).get(id)));
        out.put("unknown_name", outcome(() -> get(admin().describeTopics(List.of("java-admin-desc-nope"))
                .allTopicNames())));
        out.put("unknown_id", outcome(() -> get(admin().describeTopics(
                TopicCollection.ofTopicIds(List.of(Uuid.randomUuid()))).allTopicIds())));
        DescribeClusterResult c = admin().describeCluster();
        List<Map<String, Object>> nodes = new ArrayList<>();
        for (Node n : get(c.nodes())) {
            nodes.add(nodeJson(n));
        }
        out.put("cluster", map("cluster_id", get(c.clusterId()), "controller", nodeJson(get(c.controller())),
                               "nodes", nodes));
        return out;
    }

    private static Map<String, Object> configJson(Config config) {
        Map<String, Object> out = new TreeMap<>();
        for (ConfigEntry e : config.entries()) {
            List<List<String>> synonyms = new ArrayList<>();
            for (ConfigEntry.ConfigSynonym s : e.synonyms()) {
                synonyms.add(List.of(s.name(), String.valueOf(s.value()), s.source().name()));
            }
            out.put(e.name(), map("value", e.value(), "source", e.source().name(), "read_only", e.isReadOnly(),
                                  "sensitive", e.isSensitive(), "type", e.type().name(), "synonyms", synonyms));
        }
        return out;
    }

    private static Object adminConfigs() throws Exception {
        String topic = "java-admin-configs";
        createTopic(topic, 1, Map.of("cleanup.policy", "compact", "max.message.bytes", "200000"));
        String brokerId = String.valueOf(get(admin().describeCluster().controller()).id());
        ConfigResource t = new ConfigResource(ConfigResource.Type.TOPIC, topic);
        ConfigResource b = new ConfigResource(ConfigResource.Type.BROKER, brokerId);
        Map<ConfigResource, Config> all = get(admin().describeConfigs(List.of(t, b),
                new DescribeConfigsOptions().includeSynonyms(true)).all());
        return map("broker_id", brokerId, "topic", configJson(all.get(t)), "broker", configJson(all.get(b)),
                   "unknown_topic", outcome(() -> get(admin().describeConfigs(
                           List.of(new ConfigResource(ConfigResource.Type.TOPIC, "java-admin-configs-nope"))).all())));
    }

    /** incrementalAlterConfigs on a topic (SET, APPEND) and on this broker (SET, then DELETE), a refused
     *  alteration, and what describeConfigs says after each. */
    private static Object adminAlterConfigs() throws Exception {
        String topic = "java-admin-alter";
        createTopic(topic, 1, Map.of());
        String brokerId = String.valueOf(get(admin().describeCluster().controller()).id());
        ConfigResource t = new ConfigResource(ConfigResource.Type.TOPIC, topic);
        ConfigResource b = new ConfigResource(ConfigResource.Type.BROKER, brokerId);
        get(admin().incrementalAlterConfigs(Map.of(
                t, List.of(new AlterConfigOp(new ConfigEntry("retention.ms", "3600000"), AlterConfigOp.OpType.SET),
                           new AlterConfigOp(new ConfigEntry("cleanup.policy", "compact"),
                                             AlterConfigOp.OpType.APPEND)),
                b, List.of(new AlterConfigOp(new ConfigEntry("log.retention.bytes", "1000000000"),
                                             AlterConfigOp.OpType.SET)))).all());
        Config after = describedWhen(t, c -> "3600000".equals(c.get("retention.ms").value())
                && c.get("retention.bytes").source() == ConfigEntry.ConfigSource.DYNAMIC_BROKER_CONFIG);
        Object refused = outcome(() -> get(admin().incrementalAlterConfigs(Map.of(t, List.of(
                new AlterConfigOp(new ConfigEntry("segment.bytes", "100"), AlterConfigOp.OpType.SET)))).all()));
        Object unknownTopic = outcome(() -> get(admin().incrementalAlterConfigs(Map.of(
                new ConfigResource(ConfigResource.Type.TOPIC, "java-admin-alter-nope"), List.of(new AlterConfigOp(
                        new ConfigEntry("retention.ms", "1"), AlterConfigOp.OpType.SET)))).all()));
        Object staticConfig = outcome(() -> get(admin().incrementalAlterConfigs(Map.of(b, List.of(new AlterConfigOp(
                new ConfigEntry("num.partitions", "3"), AlterConfigOp.OpType.SET)))).all()));
        get(admin().incrementalAlterConfigs(Map.of(b, List.of(new AlterConfigOp(
                new ConfigEntry("log.retention.bytes", null), AlterConfigOp.OpType.DELETE)))).all());
        // Kafka drops the broker's dynamic value from the synonyms before the value it reports follows (seen
        // under --kafka-real): wait for both
        Config restored = describedWhen(t, c -> c.get("retention.bytes").source()
                != ConfigEntry.ConfigSource.DYNAMIC_BROKER_CONFIG && "-1".equals(c.get("retention.bytes").value()));
        return map("topic", configJson(after), "refused", refused, "unknown_topic", unknownTopic,
                   "static", staticConfig, "restored", configJson(restored));
    }

    /** The resource's configs once `ready` holds (Kafka's brokers apply an alteration a moment after they
     *  acknowledge it), or as they are after TIMEOUT_S. */
    private static Config describedWhen(ConfigResource r, java.util.function.Predicate<Config> ready)
            throws Exception {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(TIMEOUT_S);
        while (true) {
            Config c = get(admin().describeConfigs(List.of(r), new DescribeConfigsOptions().includeSynonyms(true))
                    .all()).get(r);
            if (ready.test(c) || System.nanoTime() > deadline) {
                return c;
            }
            Thread.sleep(50);
        }
    }

    private static Map<String, Object> infoJson(ListOffsetsResultInfo i) {
        return map("offset", i.offset(), "timestamp", i.timestamp(), "leader_epoch", i.leaderEpoch().orElse(null));
    }

    /** Produces records with the given timestamp offsets (from `base`) to partition 0, in one batch. */
    private static void produceTimestamps(String topic, long base, long... deltas) throws Exception {
        try (KafkaProducer<byte[], byte[]> p = producer(ProducerConfig.LINGER_MS_CONFIG, 50)) {
            List<Future<RecordMetadata>> futures = new ArrayList<>();
            for (long d : deltas) {
                futures.add(p.send(new ProducerRecord<>(topic, 0, base + d, null, utf8("t" + d))));
            }
            p.flush();
            for (Future<RecordMetadata> f : futures) {
                f.get(TIMEOUT_S, TimeUnit.SECONDS);
            }
        }
    }

    private static Object adminListOffsets() throws Exception {
        String topic = "java-admin-offsets";
        createTopic(topic, 2, null);
        long base = System.currentTimeMillis() - 100_000;
        produceTimestamps(topic, base, 0, 100, 300, 200, 250);   // one batch: offsets 0-4
        produceTimestamps(topic, base, 400, 350);                // another: offsets 5-6
        TopicPartition p0 = new TopicPartition(topic, 0);
        TopicPartition p1 = new TopicPartition(topic, 1);
        Map<String, OffsetSpec> specs = new LinkedHashMap<>();
        specs.put("earliest", OffsetSpec.earliest());
        specs.put("latest", OffsetSpec.latest());
        specs.put("max_timestamp", OffsetSpec.maxTimestamp());
        specs.put("ts_150", OffsetSpec.forTimestamp(base + 150));
        specs.put("ts_300", OffsetSpec.forTimestamp(base + 300));
        specs.put("ts_360", OffsetSpec.forTimestamp(base + 360));
        specs.put("ts_future", OffsetSpec.forTimestamp(base + 1_000_000));
        specs.put("ts_past", OffsetSpec.forTimestamp(base - 1_000_000));
        Map<String, Object> out = new LinkedHashMap<>();
        out.put("base", base);
        for (Map.Entry<String, OffsetSpec> e : specs.entrySet()) {
            Map<TopicPartition, ListOffsetsResultInfo> r = get(admin().listOffsets(
                    Map.of(p0, e.getValue(), p1, e.getValue())).all());
            out.put(e.getKey(), map("p0", infoJson(r.get(p0)), "p1", infoJson(r.get(p1))));
        }
        return out;
    }

    private static Object consumerOffsets() throws Exception {
        String topic = "java-consumer-offsets";
        createTopic(topic, 2, null);
        long base = System.currentTimeMillis() - 100_000;
        produceTimestamps(topic, base, 0, 100, 200, 300, 400);
        TopicPartition p0 = new TopicPartition(topic, 0);
        TopicPartition p1 = new TopicPartition(topic, 1);
        Map<String, Object> out = new LinkedHashMap<>();
        out.put("base", base);
        try (KafkaConsumer<byte[], byte[]> c = consumer()) {
            Map<String, Object> begin = new TreeMap<>();
            c.beginningOffsets(List.of(p0, p1)).forEach((tp, o) -> begin.put("p" + tp.partition(), o));
            Map<String, Object> end = new TreeMap<>();
            c.endOffsets(List.of(p0, p1)).forEach((tp, o) -> end.put("p" + tp.partition(), o));
            out.put("beginning", begin);
            out.put("end", end);
            for (long d : new long[] {-1000, 0, 150, 400, 500}) {
                Map<TopicPartition, OffsetAndTimestamp> r = c.offsetsForTimes(Map.of(p0, base + d, p1, base + d));
                Map<String, Object> row = new LinkedHashMap<>();
                for (TopicPartition tp : List.of(p0, p1)) {
                    OffsetAndTimestamp o = r.get(tp);
                    row.put("p" + tp.partition(), o == null ? null : map("offset", o.offset(),
                            "timestamp", o.timestamp(), "leader_epoch", o.leaderEpoch().orElse(null)));
                }
                out.put("ts_" + d, row);
            }
        }
        return out;
    }

    /** isolation.level=read_committed: with no transactions everything below the high watermark is stable. */
    private static Object readCommitted() throws Exception {
        String topic = "java-read-committed";
        createTopic(topic, 1, null);
        try (KafkaProducer<byte[], byte[]> p = producer()) {
            List<Future<RecordMetadata>> futures = new ArrayList<>();
            for (int i = 0; i < 20; i++) {
                futures.add(p.send(new ProducerRecord<>(topic, 0, utf8("k" + i), utf8("v" + i))));
                if (i % 7 == 6) {
                    p.flush();  // several batches
                }
            }
            p.flush();
            for (Future<RecordMetadata> f : futures) {
                f.get(TIMEOUT_S, TimeUnit.SECONDS);
            }
        }
        TopicPartition tp = new TopicPartition(topic, 0);
        try (KafkaConsumer<byte[], byte[]> c = consumer(ConsumerConfig.ISOLATION_LEVEL_CONFIG, "read_committed")) {
            List<String> values = new ArrayList<>();
            for (ConsumerRecord<byte[], byte[]> r : readAll(c, List.of(tp), 20)) {
                values.add(r.offset() + "=" + new String(r.value(), StandardCharsets.UTF_8));
            }
            return map("values", values, "end_offset", c.endOffsets(List.of(tp)).get(tp), "position", c.position(tp));
        }
    }

    /**
     * Position validation (OffsetForLeaderEpoch): consume, let metadata refresh (also across a leader epoch
     * bump made by the test), seek with a known epoch, and keep consuming; nothing may raise.
     */
    private static Object validation() throws Exception {
        String topic = "java-validation";
        createTopic(topic, 1, null);
        TopicPartition tp = new TopicPartition(topic, 0);
        Map<String, Object> out = new LinkedHashMap<>();
        try (KafkaProducer<byte[], byte[]> p = producer();
             KafkaConsumer<byte[], byte[]> c = consumer(ConsumerConfig.METADATA_MAX_AGE_CONFIG, 100)) {
            for (int i = 0; i < 5; i++) {
                p.send(new ProducerRecord<>(topic, 0, null, utf8("a" + i))).get(TIMEOUT_S, TimeUnit.SECONDS);
            }
            List<Long> first = new ArrayList<>();
            readAll(c, List.of(tp), 5).forEach(r -> first.add(r.offset()));
            out.put("first", first);
            // metadata refreshes every 100 ms: poll across several refreshes with nothing new to read
            List<Long> idle = new ArrayList<>();
            long until = System.currentTimeMillis() + 400;
            while (System.currentTimeMillis() < until) {
                c.poll(Duration.ofMillis(50)).forEach(r -> idle.add(r.offset()));
            }
            out.put("idle", idle);
            out.put("bump", request("bump_leader_epoch", "topic", topic, "partition", 0));
            until = System.currentTimeMillis() + 400;   // the consumer sees the new epoch and validates
            while (System.currentTimeMillis() < until) {
                c.poll(Duration.ofMillis(50)).forEach(r -> idle.add(r.offset()));
            }
            for (int i = 0; i < 5; i++) {
                p.send(new ProducerRecord<>(topic, 0, null, utf8("b" + i))).get(TIMEOUT_S, TimeUnit.SECONDS);
            }
            List<Map<String, Object>> second = new ArrayList<>();
            consume(c, 5).forEach(r -> second.add(map("offset", r.offset(),
                    "leader_epoch", r.leaderEpoch().orElse(null))));
            out.put("second", second);
            // a seek that carries an epoch is validated before fetching
            c.seek(tp, new OffsetAndMetadata(3, Optional.of(0), ""));
            List<Long> third = new ArrayList<>();
            consume(c, 7).forEach(r -> third.add(r.offset()));
            out.put("after_seek_epoch_0", third);
            c.seek(tp, new OffsetAndMetadata(8, Optional.of(1), ""));
            List<Long> fourth = new ArrayList<>();
            consume(c, 2).forEach(r -> fourth.add(r.offset()));
            out.put("after_seek_epoch_1", fourth);
            out.put("position", c.position(tp));
        }
        return out;
    }
}
