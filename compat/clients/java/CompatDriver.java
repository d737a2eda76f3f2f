// The compat suite's agent for Kafka's Java client (kafka-clients): JSON lines on stdin, answers on stdout,
// in the protocol described in compat/clients/agent.py. One JVM serves a whole run (every scenario of one
// broker); a member that a scenario kills gets a JVM of its own.
//
// Usage: java CompatDriver BOOTSTRAP TIMING_JSON
//
// Errors the client reports become {"error": {"code": KAFKA_ERROR_NAME, "type": SimpleClassName, ...}}:
// the name is Errors.forException(e), except for what the client detects itself (TIMEOUT,
// NO_OFFSET_FOR_PARTITION). Each consumer with a group.id runs on its own thread, polling all the time,
// since KafkaConsumer is single-threaded and must poll to take part in rebalances.

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.Callable;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Future;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.DescribeTopicsResult;
import org.apache.kafka.clients.admin.Config;
import org.apache.kafka.clients.admin.ConfigEntry;
import org.apache.kafka.clients.admin.ConsumerGroupDescription;
import org.apache.kafka.clients.admin.ConsumerGroupListing;
import org.apache.kafka.clients.admin.CreatePartitionsOptions;
import org.apache.kafka.clients.admin.CreateTopicsOptions;
import org.apache.kafka.clients.admin.DescribeConfigsOptions;
import org.apache.kafka.clients.admin.ListOffsetsResult;
import org.apache.kafka.clients.admin.MemberDescription;
import org.apache.kafka.clients.admin.NewPartitions;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.admin.OffsetSpec;
import org.apache.kafka.clients.admin.RecordsToDelete;
import org.apache.kafka.common.config.ConfigResource;
import org.apache.kafka.clients.admin.TopicDescription;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerGroupMetadata;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.NoOffsetForPartitionException;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.consumer.OffsetAndTimestamp;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.TimeoutException;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.header.internals.RecordHeader;
import org.apache.kafka.common.protocol.Errors;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.ByteArraySerializer;

public final class CompatDriver {
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final JsonNodeFactory NODES = JsonNodeFactory.instance;
    private static final HexFormat HEX = HexFormat.of();
    private static PrintStream out;
    private static String bootstrap;
    private static JsonNode timing;
    private static Admin admin;
    private static final Map<String, Member> MEMBERS = new HashMap<>();
    private static final Map<String, KafkaProducer<byte[], byte[]>> TXNS = new HashMap<>();

    /** A failure the client reported, as the protocol's error object. */
    static final class ClientError extends Exception {
        final String code;
        final String type;

        ClientError(String code, String type, String message) {
            super(message);
            this.code = code;
            this.type = type;
        }
    }

    static final class Unsupported extends Exception {
        Unsupported(String message) {
            super(message);
        }
    }

    public static void main(String[] args) throws Exception {
        out = new PrintStream(new java.io.FileOutputStream(java.io.FileDescriptor.out), true, "UTF-8");
        System.setOut(System.err); // nothing but answers on the protocol's stream
        bootstrap = args[0];
        timing = JSON.readTree(args[1]);
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        String line;
        while ((line = in.readLine()) != null) {
            JsonNode req = JSON.readTree(line);
            ObjectNode answer = NODES.objectNode();
            answer.set("id", req.get("id"));
            String op = req.get("op").asText();
            if (op.equals("quit")) {
                for (Member m : MEMBERS.values()) {
                    m.closeQuietly();
                }
                for (KafkaProducer<byte[], byte[]> t : TXNS.values()) {
                    t.close(Duration.ofSeconds(2));
                }
                if (admin != null) {
                    admin.close(Duration.ofSeconds(5));
                }
                answer.put("ok", true);
                out.println(JSON.writeValueAsString(answer));
                break;
            }
            try {
                answer.set("result", JSON.valueToTree(handle(op, req)));
                answer.put("ok", true);
            } catch (ClientError e) {
                answer.put("ok", false);
                answer.set("error", errorNode(e));
            } catch (Unsupported e) {
                answer.put("ok", false);
                answer.put("unsupported", e.getMessage());
            } catch (Throwable e) {
                StringWriter trace = new StringWriter();
                e.printStackTrace(new PrintWriter(trace));
                answer.put("ok", false);
                answer.put("harness", trace.toString());
            }
            out.println(JSON.writeValueAsString(answer));
        }
        System.exit(0);
    }

    private static ObjectNode errorNode(ClientError e) {
        ObjectNode err = NODES.objectNode();
        err.put("code", e.code);
        err.put("type", e.type);
        err.put("message", String.valueOf(e.getMessage()));
        return err;
    }

    private static long ms(String field) {
        return timing.get(field).asLong();
    }

    private static long opMs() {
        return (long) (timing.get("op_s").asDouble() * 1000);
    }

    // ------------------------------------------------------------------------------------------ errors

    /** Kafka's error name for what the client threw (unwrapping ExecutionException and the like). */
    static ClientError clientError(Throwable e) {
        Throwable t = e;
        while ((t instanceof ExecutionException || t instanceof java.util.concurrent.CompletionException
                || t instanceof org.apache.kafka.common.KafkaException && t.getCause() != null
                        && t.getClass() == org.apache.kafka.common.KafkaException.class)
                && t.getCause() != null) {
            t = t.getCause();
        }
        String type = t.getClass().getSimpleName();
        if (t instanceof TimeoutException) {
            return new ClientError("TIMEOUT", type, t.getMessage());
        }
        if (t instanceof org.apache.kafka.clients.consumer.OffsetOutOfRangeException) {
            // the consumer's own subclass (auto.offset.reset none), which Errors.forException does not map
            return new ClientError("OFFSET_OUT_OF_RANGE", type, t.getMessage());
        }
        if (t instanceof NoOffsetForPartitionException) {
            return new ClientError("NO_OFFSET_FOR_PARTITION", type, t.getMessage());
        }
        if (t instanceof IllegalStateException) { // a transactional call in the wrong state, refused locally
            return new ClientError("CLIENT_REJECTED", type, t.getMessage());
        }
        Errors err = Errors.forException(t);
        String code = err == Errors.UNKNOWN_SERVER_ERROR && !(t instanceof org.apache.kafka.common.errors.UnknownServerException)
                ? "CLIENT:" + type : err.name();
        return new ClientError(code, type, t.getMessage());
    }

    interface Action<T> {
        T run() throws Exception;
    }

    static <T> T client(Action<T> action) throws ClientError, Unsupported {
        try {
            return action.run();
        } catch (ClientError | Unsupported e) {
            throw e;
        } catch (Exception e) {
            if (e instanceof RuntimeException && !(e instanceof org.apache.kafka.common.KafkaException)) {
                throw (RuntimeException) e;
            }
            throw clientError(e);
        }
    }

    // ------------------------------------------------------------------------------------------ records

    static byte[] unhex(JsonNode n) {
        return n == null || n.isNull() ? null : HEX.parseHex(n.asText());
    }

    static String hex(byte[] b) {
        return b == null ? null : HEX.formatHex(b);
    }

    static Map<String, Object> rec(ConsumerRecord<byte[], byte[]> r) {
        List<List<String>> headers = new ArrayList<>();
        for (Header h : r.headers()) {
            headers.add(java.util.Arrays.asList(h.key(), hex(h.value())));
        }
        Map<String, Object> m = new HashMap<>();
        m.put("k", hex(r.key()));
        m.put("v", hex(r.value()));
        m.put("h", headers);
        m.put("p", r.partition());
        m.put("o", r.offset());
        m.put("ts", r.timestamp() >= 0 ? r.timestamp() : null);
        return m;
    }

    // ------------------------------------------------------------------------------------------ ops

    private static Object handle(String op, JsonNode req) throws Exception {
        switch (op) {
            case "produce": return produce(req);
            case "fetch": return fetch(req);
            case "list_offsets": return listOffsets(req);
            case "create_topic": return createTopic(req);
            case "partition_count": return partitionCount(req);
            case "committed": return committed(req);
            case "member_open": return memberOpen(req);
            case "delete_topic": return deleteTopic(req);
            case "create_partitions": return createPartitions(req);
            case "describe_configs": return describeConfigs(req);
            case "delete_records": return deleteRecords(req);
            case "describe_group": return describeGroup(req);
            case "list_groups": return listGroups();
            case "delete_group": return deleteGroup(req);
            case "delete_offsets": return deleteOffsets(req);
            case "txn_open": return txnOpen(req);
            default: break;
        }
        if (op.startsWith("txn_")) {
            return txn(op, TXNS.get(req.get("x").asText()), req);
        }
        Member m = MEMBERS.get(req.get("m").asText());
        switch (op) {
            case "member_assignment": return m.assignment();
            case "member_take": return m.take();
            case "member_errors": return m.errors();
            case "member_commit": return m.commit(req.get("offsets"));
            case "member_position": return m.position(req.get("topic").asText(), req.get("partition").asInt());
            case "member_seek": return m.seek(req.get("topic").asText(), req.get("partition").asInt(),
                                              req.get("offset").asLong());
            case "member_pause": return m.pause(req.get("tps"), true);
            case "member_resume": return m.pause(req.get("tps"), false);
            case "member_close": return m.close();
            default: throw new IllegalArgumentException("unknown op " + op);
        }
    }

    private static Admin admin() {
        if (admin == null) {
            Properties p = new Properties();
            p.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
            p.put(AdminClientConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, (int) opMs());
            p.put(AdminClientConfig.REQUEST_TIMEOUT_MS_CONFIG, (int) opMs());
            admin = Admin.create(p);
        }
        return admin;
    }

    private static Object produce(JsonNode req) throws Exception {
        Properties p = new Properties();
        p.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        p.put(ProducerConfig.COMPRESSION_TYPE_CONFIG, req.get("codec").asText());
        boolean oneBatch = req.get("one_batch").asBoolean();
        p.put(ProducerConfig.LINGER_MS_CONFIG, oneBatch ? 60_000 : 0);
        p.put(ProducerConfig.BATCH_SIZE_CONFIG, oneBatch ? 4 << 20 : 16384);
        boolean idempotent = req.hasNonNull("idempotent") && req.get("idempotent").asBoolean();
        if (req.hasNonNull("idempotent")) {
            p.put(ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG, idempotent);
        }
        if (!idempotent) {
            p.put(ProducerConfig.RETRIES_CONFIG, 0);
        }
        if (req.hasNonNull("acks")) {
            p.put(ProducerConfig.ACKS_CONFIG, req.get("acks").asText());
        }
        p.put(ProducerConfig.MAX_BLOCK_MS_CONFIG, ms("metadata_ms"));
        p.put(ProducerConfig.REQUEST_TIMEOUT_MS_CONFIG, (int) opMs());
        p.put(ProducerConfig.DELIVERY_TIMEOUT_MS_CONFIG, (int) opMs() + (oneBatch ? 61_000 : 0));
        if (req.hasNonNull("max_request_bytes")) {
            p.put(ProducerConfig.MAX_REQUEST_SIZE_CONFIG, req.get("max_request_bytes").asInt());
            p.put(ProducerConfig.BUFFER_MEMORY_CONFIG, Math.max(32L << 20, 4L * req.get("max_request_bytes").asInt()));
        }
        String topic = req.get("topic").asText();
        try (KafkaProducer<byte[], byte[]> producer =
                     new KafkaProducer<>(p, new ByteArraySerializer(), new ByteArraySerializer())) {
            return client(() -> {
                List<Future<RecordMetadata>> futures = new ArrayList<>();
                for (JsonNode r : req.get("recs")) {
                    List<Header> headers = new ArrayList<>();
                    for (JsonNode h : r.get("h")) {
                        headers.add(new RecordHeader(h.get(0).asText(), unhex(h.get(1))));
                    }
                    Integer partition = r.hasNonNull("p") ? r.get("p").asInt() : null;
                    Long ts = r.hasNonNull("ts") ? r.get("ts").asLong() : null;
                    futures.add(producer.send(new ProducerRecord<>(topic, partition, ts, unhex(r.get("k")),
                                                                   unhex(r.get("v")), headers)));
                }
                producer.flush();
                List<List<Object>> acks = new ArrayList<>();
                for (Future<RecordMetadata> f : futures) {
                    RecordMetadata m = f.get(opMs() + 5000, TimeUnit.MILLISECONDS);
                    acks.add(List.of(m.partition(), m.offset()));
                }
                return acks;
            });
        }
    }

    static Properties consumerProps(String group, String reset) {
        Properties p = new Properties();
        p.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        if (group != null) {
            p.put(ConsumerConfig.GROUP_ID_CONFIG, group);
        }
        p.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, false);
        p.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, reset);
        p.put(ConsumerConfig.SESSION_TIMEOUT_MS_CONFIG, (int) ms("session_timeout_ms"));
        p.put(ConsumerConfig.HEARTBEAT_INTERVAL_MS_CONFIG, (int) ms("heartbeat_ms"));
        p.put(ConsumerConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, (int) opMs());
        return p;
    }

    static KafkaConsumer<byte[], byte[]> consumer(String group, String reset) {
        return new KafkaConsumer<>(consumerProps(group, reset), new ByteArrayDeserializer(),
                                   new ByteArrayDeserializer());
    }

    /** A consumer without a group, with the request's isolation.level when it names one. */
    static KafkaConsumer<byte[], byte[]> isolatedConsumer(JsonNode req, String reset) {
        Properties p = consumerProps(null, reset);
        if (req.hasNonNull("isolation")) {
            p.put(ConsumerConfig.ISOLATION_LEVEL_CONFIG, req.get("isolation").asText());
        }
        return new KafkaConsumer<>(p, new ByteArrayDeserializer(), new ByteArrayDeserializer());
    }

    private static Object fetch(JsonNode req) throws Exception {
        TopicPartition tp = new TopicPartition(req.get("topic").asText(), req.get("partition").asInt());
        int count = req.get("count").asInt();
        String reset = req.hasNonNull("reset") ? req.get("reset").asText() : "earliest";
        try (KafkaConsumer<byte[], byte[]> c = isolatedConsumer(req, reset)) {
            return client(() -> {
                c.assign(List.of(tp));
                c.seek(tp, req.get("offset").asLong());
                List<Map<String, Object>> got = new ArrayList<>();
                long deadline = System.nanoTime() + (long) (timing.get("fetch_s").asDouble() * 1e9);
                while (got.size() < count && System.nanoTime() < deadline) {
                    for (ConsumerRecord<byte[], byte[]> r : c.poll(Duration.ofMillis(100))) {
                        got.add(rec(r));
                    }
                }
                return got.size() > count ? got.subList(0, count) : got;
            });
        }
    }

    private static Object listOffsets(JsonNode req) throws Exception {
        TopicPartition tp = new TopicPartition(req.get("topic").asText(), req.get("partition").asInt());
        JsonNode spec = req.get("spec");
        try (KafkaConsumer<byte[], byte[]> c = isolatedConsumer(req, "earliest")) {
            return client(() -> {
                if (spec.isTextual() && spec.asText().equals("earliest")) {
                    return c.beginningOffsets(List.of(tp)).get(tp);
                }
                if (spec.isTextual() && spec.asText().equals("latest")) {
                    return c.endOffsets(List.of(tp)).get(tp);
                }
                if (spec.isTextual() && spec.asText().equals("max_timestamp")) {
                    return maxTimestampOffset(tp);
                }
                OffsetAndTimestamp found = c.offsetsForTimes(Map.of(tp, spec.asLong())).get(tp);
                return found == null ? null : found.offset();
            });
        }
    }

    private static Object createTopic(JsonNode req) throws Exception {
        NewTopic t = new NewTopic(req.get("topic").asText(), req.get("partitions").asInt(),
                                  (short) req.get("replication_factor").asInt());
        Map<String, String> configs = new HashMap<>();
        req.get("configs").fields().forEachRemaining(e -> configs.put(e.getKey(), e.getValue().asText()));
        t.configs(configs);
        boolean validateOnly = req.hasNonNull("validate_only") && req.get("validate_only").asBoolean();
        return client(() -> {
            admin().createTopics(List.of(t), new CreateTopicsOptions().validateOnly(validateOnly)).all()
                    .get(opMs() + 5000, TimeUnit.MILLISECONDS);
            return null;
        });
    }

    private static <T> T await(org.apache.kafka.common.KafkaFuture<T> f) throws Exception {
        return f.get(opMs() + 5000, TimeUnit.MILLISECONDS);
    }

    /** The first of these no-argument methods the object has (the client's API moved between versions). */
    static Object invoke(Object target, String... names) throws Exception {
        for (String name : names) {
            java.lang.reflect.Method m;
            try {
                m = target.getClass().getMethod(name);
            } catch (NoSuchMethodException e) {
                continue;
            }
            m.setAccessible(true);
            Object v = m.invoke(target);
            return v instanceof java.util.Optional ? ((java.util.Optional<?>) v).orElse(null) : v;
        }
        throw new Unsupported("this kafka-clients has none of " + String.join(", ", names));
    }

    /** A group state by Kafka's wire name (GroupState.toString() in 4.x; ConsumerGroupState's before). */
    static String stateName(Object state) {
        if (state == null) {
            return null;
        }
        String s = state.toString();
        switch (s.toUpperCase(java.util.Locale.ROOT).replace("_", "")) {
            case "STABLE": return "Stable";
            case "EMPTY": return "Empty";
            case "DEAD": return "Dead";
            case "PREPARINGREBALANCE": return "PreparingRebalance";
            case "COMPLETINGREBALANCE": return "CompletingRebalance";
            case "UNKNOWN": return "Unknown";
            default: return s;
        }
    }

    private static Object maxTimestampOffset(TopicPartition tp) throws Exception {
        Object spec;
        try {
            spec = OffsetSpec.class.getMethod("maxTimestamp").invoke(null);
        } catch (NoSuchMethodException e) {
            throw new Unsupported("OffsetSpec.maxTimestamp() is in kafka-clients 3.0 and later (KIP-734)");
        }
        OffsetSpec os = (OffsetSpec) spec;
        ListOffsetsResult.ListOffsetsResultInfo info = await(admin().listOffsets(Map.of(tp, os)).partitionResult(tp));
        return info.offset() < 0 ? null : info.offset();
    }

    private static Object deleteTopic(JsonNode req) throws Exception {
        String topic = req.get("topic").asText();
        return client(() -> {
            await(admin().deleteTopics(List.of(topic)).all());
            return null;
        });
    }

    private static Object createPartitions(JsonNode req) throws Exception {
        String topic = req.get("topic").asText();
        int count = req.get("count").asInt();
        boolean validateOnly = req.get("validate_only").asBoolean();
        return client(() -> {
            await(admin().createPartitions(Map.of(topic, NewPartitions.increaseTo(count)),
                                           new CreatePartitionsOptions().validateOnly(validateOnly)).all());
            return null;
        });
    }

    private static Object describeConfigs(JsonNode req) throws Exception {
        ConfigResource.Type type = req.get("resource").asText().equals("topic") ? ConfigResource.Type.TOPIC
                : ConfigResource.Type.BROKER;
        ConfigResource res = new ConfigResource(type, req.get("name").asText());
        Set<String> keys = new java.util.HashSet<>();
        for (JsonNode k : req.get("keys")) {
            keys.add(k.asText());
        }
        return client(() -> {
            Config config = await(admin().describeConfigs(List.of(res), new DescribeConfigsOptions()
                    .includeSynonyms(true)).all()).get(res);
            Map<String, Object> outMap = new HashMap<>();
            for (ConfigEntry e : config.entries()) {
                if (!keys.contains(e.name())) {
                    continue;
                }
                List<List<Object>> synonyms = new ArrayList<>();
                for (ConfigEntry.ConfigSynonym y : e.synonyms()) {
                    synonyms.add(java.util.Arrays.asList(y.name(), y.value(), y.source().name()));
                }
                Map<String, Object> entry = new HashMap<>();
                entry.put("value", e.value());
                entry.put("source", e.source().name());
                entry.put("read_only", e.isReadOnly());
                entry.put("sensitive", e.isSensitive());
                entry.put("synonyms", synonyms);
                outMap.put(e.name(), entry);
            }
            return outMap;
        });
    }

    private static Object deleteRecords(JsonNode req) throws Exception {
        TopicPartition tp = new TopicPartition(req.get("topic").asText(), req.get("partition").asInt());
        long before = req.get("before").asLong();
        return client(() -> await(admin().deleteRecords(Map.of(tp, RecordsToDelete.beforeOffset(before)))
                .lowWatermarks().get(tp)).lowWatermark());
    }

    private static Object describeGroup(JsonNode req) throws Exception {
        String group = req.get("group").asText();
        return client(() -> {
            ConsumerGroupDescription d = await(admin().describeConsumerGroups(List.of(group)).describedGroups()
                    .get(group));
            List<Map<String, Object>> members = new ArrayList<>();
            for (MemberDescription m : d.members()) {
                List<Integer> parts = new ArrayList<>();
                for (TopicPartition tp : m.assignment().topicPartitions()) {
                    parts.add(tp.partition());
                }
                Collections.sort(parts);
                Map<String, Object> mm = new HashMap<>();
                mm.put("assignment", parts);
                mm.put("instance_id", invoke(m, "groupInstanceId"));
                members.add(mm);
            }
            members.sort((a, b) -> a.toString().compareTo(b.toString()));
            Map<String, Object> outMap = new HashMap<>();
            outMap.put("state", stateName(invoke(d, "groupState", "state")));
            outMap.put("protocol_type", d.isSimpleConsumerGroup() ? "" : "consumer");
            outMap.put("protocol", d.partitionAssignor());
            outMap.put("members", members);
            return outMap;
        });
    }

    private static Object listGroups() throws Exception {
        return client(() -> {
            Map<String, Object> outMap = new HashMap<>();
            for (ConsumerGroupListing g : await(admin().listConsumerGroups().all())) {
                Map<String, Object> gg = new HashMap<>();
                gg.put("protocol_type", g.isSimpleConsumerGroup() ? "" : "consumer");
                gg.put("state", stateName(invoke(g, "groupState", "state")));
                outMap.put(g.groupId(), gg);
            }
            return outMap;
        });
    }

    private static Object deleteGroup(JsonNode req) throws Exception {
        String group = req.get("group").asText();
        return client(() -> {
            await(admin().deleteConsumerGroups(List.of(group)).all());
            return null;
        });
    }

    private static Object deleteOffsets(JsonNode req) throws Exception {
        String group = req.get("group").asText();
        Set<TopicPartition> tps = new java.util.HashSet<>();
        for (JsonNode p : req.get("partitions")) {
            tps.add(new TopicPartition(req.get("topic").asText(), p.asInt()));
        }
        return client(() -> {
            await(admin().deleteConsumerGroupOffsets(group, tps).all());
            return null;
        });
    }

    private static Object partitionCount(JsonNode req) throws Exception {
        String topic = req.get("topic").asText();
        return client(() -> {
            TopicDescription d = byTopicName(admin().describeTopics(List.of(topic)))
                    .get(opMs() + 5000, TimeUnit.MILLISECONDS).get(topic);
            return d.partitions().size();
        });
    }

    /** DescribeTopicsResult's topics by name: allTopicNames() from kafka-clients 3.1, all() before it (removed
     *  in 4.0), so one source serves every client version compat runs. */
    @SuppressWarnings("unchecked")
    private static Future<Map<String, TopicDescription>> byTopicName(DescribeTopicsResult result)
            throws ReflectiveOperationException {
        java.lang.reflect.Method m;
        try {
            m = DescribeTopicsResult.class.getMethod("allTopicNames");
        } catch (NoSuchMethodException e) {
            m = DescribeTopicsResult.class.getMethod("all");
        }
        return (Future<Map<String, TopicDescription>>) m.invoke(result);
    }

    private static Object committed(JsonNode req) throws Exception {
        String topic = req.get("topic").asText();
        Set<TopicPartition> tps = new java.util.HashSet<>();
        for (int p = 0; p < req.get("partitions").asInt(); p++) {
            tps.add(new TopicPartition(topic, p));
        }
        try (KafkaConsumer<byte[], byte[]> c = consumer(req.get("group").asText(), "earliest")) {
            return client(() -> {
                Map<String, List<Object>> outMap = new HashMap<>();
                for (Map.Entry<TopicPartition, OffsetAndMetadata> e : c.committed(tps).entrySet()) {
                    if (e.getValue() != null && e.getValue().offset() >= 0) {
                        outMap.put(String.valueOf(e.getKey().partition()),
                                   java.util.Arrays.asList(e.getValue().offset(), e.getValue().metadata()));
                    }
                }
                return outMap;
            });
        }
    }

    private static Object memberOpen(JsonNode req) throws Exception {
        List<Integer> assign = null;
        if (req.hasNonNull("assign")) {
            assign = new ArrayList<>();
            for (JsonNode p : req.get("assign")) {
                assign.add(p.asInt());
            }
        }
        Member m = new Member(req.get("group").asText(), req.get("topic").asText(), assign,
                              req.get("offset_reset").asText(), req);
        String id = "m" + (MEMBERS.size() + 1);
        MEMBERS.put(id, m);
        m.opened.get(opMs() + 5000, TimeUnit.MILLISECONDS);
        return id;
    }

    // ------------------------------------------------------------------------------------------ transactions

    /** A producer with the request's transactional.id, initTransactions done (closed again if that fails). */
    private static Object txnOpen(JsonNode req) throws Exception {
        Properties p = new Properties();
        p.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        p.put(ProducerConfig.TRANSACTIONAL_ID_CONFIG, req.get("transactional_id").asText());
        if (req.hasNonNull("timeout_ms")) {
            p.put(ProducerConfig.TRANSACTION_TIMEOUT_CONFIG, req.get("timeout_ms").asInt());
        }
        p.put(ProducerConfig.LINGER_MS_CONFIG, 0);
        p.put(ProducerConfig.MAX_BLOCK_MS_CONFIG, opMs());
        p.put(ProducerConfig.REQUEST_TIMEOUT_MS_CONFIG, (int) opMs());
        p.put(ProducerConfig.DELIVERY_TIMEOUT_MS_CONFIG, (int) opMs());
        KafkaProducer<byte[], byte[]> producer =
                new KafkaProducer<>(p, new ByteArraySerializer(), new ByteArraySerializer());
        try {
            txnCall(() -> {
                producer.initTransactions();
                return null;
            });
        } catch (Exception e) {
            producer.close(Duration.ofSeconds(2));
            throw e;
        }
        String id = "x" + (TXNS.size() + 1);
        TXNS.put(id, producer);
        return id;
    }

    /** A transactional call: what the client refuses itself (IllegalStateException, or before 3.0 a
     * KafkaException "Invalid transition attempted": no transaction open, one begun already) is CLIENT_REJECTED; a broker error the transaction manager reports as a bare
     * KafkaException ("Unexpected error in InitProducerIdResponse; " + Kafka's message for it) by that
     * error's name; the rest as any client error. */
    static <T> T txnCall(Action<T> action) throws ClientError, Unsupported {
        try {
            return client(action);
        } catch (IllegalStateException e) {
            return reject(e);
        } catch (ClientError e) {
            if (!e.code.equals("CLIENT:KafkaException") || e.getMessage() == null) {
                throw e;
            }
            if (e.getMessage().contains("Invalid transition attempted")) { // kafka-clients < 3: not an ISE yet
                throw new ClientError("CLIENT_REJECTED", e.type, e.getMessage());
            }
            Errors named = null;
            for (Errors err : Errors.values()) {
                String text = err == Errors.NONE ? null : err.message();
                if (text != null && e.getMessage().contains(text)
                        && (named == null || text.length() > named.message().length())) {
                    named = err;
                }
            }
            throw named == null ? e : new ClientError(named.name(), e.type, e.getMessage());
        }
    }

    static <T> T reject(IllegalStateException e) throws ClientError {
        throw new ClientError("CLIENT_REJECTED", e.getClass().getSimpleName(), e.getMessage());
    }

    private static Object txn(String op, KafkaProducer<byte[], byte[]> producer, JsonNode req) throws Exception {
        switch (op) {
            case "txn_begin":
                return txnCall(() -> {
                    producer.beginTransaction();
                    return null;
                });
            case "txn_send": {
                String topic = req.get("topic").asText();
                return txnCall(() -> {
                    List<Future<RecordMetadata>> futures = new ArrayList<>();
                    for (JsonNode r : req.get("recs")) {
                        List<Header> headers = new ArrayList<>();
                        for (JsonNode h : r.get("h")) {
                            headers.add(new RecordHeader(h.get(0).asText(), unhex(h.get(1))));
                        }
                        Integer partition = r.hasNonNull("p") ? r.get("p").asInt() : null;
                        futures.add(producer.send(new ProducerRecord<>(topic, partition, null, unhex(r.get("k")),
                                                                       unhex(r.get("v")), headers)));
                    }
                    producer.flush();
                    List<List<Object>> acks = new ArrayList<>();
                    for (Future<RecordMetadata> f : futures) {
                        RecordMetadata m = f.get(opMs() + 5000, TimeUnit.MILLISECONDS);
                        acks.add(List.of(m.partition(), m.offset()));
                    }
                    return acks;
                });
            }
            case "txn_send_offsets": {
                Map<TopicPartition, OffsetAndMetadata> offsets = new HashMap<>();
                for (JsonNode o : req.get("offsets")) {
                    offsets.put(new TopicPartition(o.get(0).asText(), o.get(1).asInt()),
                                new OffsetAndMetadata(o.get(2).asLong()));
                }
                ConsumerGroupMetadata group = new ConsumerGroupMetadata(req.get("group").asText());
                return txnCall(() -> {
                    producer.sendOffsetsToTransaction(offsets, group);
                    return null;
                });
            }
            case "txn_commit":
                return txnCall(() -> {
                    producer.commitTransaction();
                    return null;
                });
            case "txn_abort":
                return txnCall(() -> {
                    producer.abortTransaction();
                    return null;
                });
            case "txn_close":
                producer.close(Duration.ofSeconds(2));
                return null;
            default:
                throw new IllegalArgumentException("unknown op " + op);
        }
    }

    // ------------------------------------------------------------------------------------------ members

    /** One consumer with a group.id on its own thread: polls in a loop, runs the calls handed to it. */
    static final class Member implements Runnable {
        final String group;
        final String topic;
        final List<Integer> assign;
        final String reset;
        final CompletableFuture<Void> opened = new CompletableFuture<>();
        final BlockingQueue<Runnable> calls = new LinkedBlockingQueue<>();
        final List<Map<String, Object>> records = new ArrayList<>();
        final List<ObjectNode> errors = new ArrayList<>();
        volatile List<List<Object>> assignment = List.of();
        volatile boolean stop;
        KafkaConsumer<byte[], byte[]> consumer;
        final Thread thread;

        final JsonNode options;

        Member(String group, String topic, List<Integer> assign, String reset, JsonNode options) {
            this.options = options;
            this.group = group;
            this.topic = topic;
            this.assign = assign;
            this.reset = reset;
            thread = new Thread(this, "member-" + group);
            thread.setDaemon(true);
            thread.start();
        }

        @Override
        public void run() {
            try {
                Properties props = consumerProps(group, reset);
                if (options.hasNonNull("instance_id")) {
                    props.put(ConsumerConfig.GROUP_INSTANCE_ID_CONFIG, options.get("instance_id").asText());
                }
                if (options.hasNonNull("group_protocol")) {
                    // KIP-848 (kafka-clients 3.7+): the broker sets the session and heartbeat interval and
                    // assigns; the client refuses session.timeout.ms and heartbeat.interval.ms beside it
                    props.put("group.protocol", options.get("group_protocol").asText());
                    props.remove(ConsumerConfig.SESSION_TIMEOUT_MS_CONFIG);
                    props.remove(ConsumerConfig.HEARTBEAT_INTERVAL_MS_CONFIG);
                } else if (options.hasNonNull("session_timeout_ms")) {
                    int session = options.get("session_timeout_ms").asInt();
                    props.put(ConsumerConfig.SESSION_TIMEOUT_MS_CONFIG, session);
                    props.put(ConsumerConfig.HEARTBEAT_INTERVAL_MS_CONFIG,
                              (int) Math.min(ms("heartbeat_ms"), Math.max(1, session / 3)));
                }
                consumer = new KafkaConsumer<>(props, new ByteArrayDeserializer(), new ByteArrayDeserializer());
                if (assign == null) {
                    consumer.subscribe(List.of(topic));
                } else {
                    List<TopicPartition> tps = new ArrayList<>();
                    for (int p : assign) {
                        tps.add(new TopicPartition(topic, p));
                    }
                    consumer.assign(tps);
                }
                opened.complete(null);
            } catch (Throwable e) {
                opened.completeExceptionally(e);
                return;
            }
            while (!stop) {
                Runnable call;
                while ((call = calls.poll()) != null) {
                    call.run();
                }
                if (stop) {
                    break;
                }
                List<Map<String, Object>> got = new ArrayList<>();
                try {
                    for (ConsumerRecord<byte[], byte[]> r : consumer.poll(Duration.ofMillis(100))) {
                        got.add(rec(r));
                    }
                } catch (org.apache.kafka.common.KafkaException e) {
                    synchronized (this) {
                        errors.add(errorNode(clientError(e)));
                    }
                    try {
                        Thread.sleep(100);
                    } catch (InterruptedException ie) {
                        return;
                    }
                }
                List<List<Object>> now = new ArrayList<>();
                for (TopicPartition tp : consumer.assignment()) {
                    now.add(List.of(tp.topic(), tp.partition()));
                }
                synchronized (this) {
                    records.addAll(got);
                    assignment = now;
                }
            }
        }

        <T> T call(Callable<T> fn) throws Exception {
            CompletableFuture<T> f = new CompletableFuture<>();
            calls.add(() -> {
                try {
                    f.complete(fn.call());
                } catch (Throwable e) {
                    f.completeExceptionally(e);
                }
            });
            try {
                return f.get(opMs() + 10_000, TimeUnit.MILLISECONDS);
            } catch (ExecutionException e) {
                if (e.getCause() instanceof Exception) {
                    Exception cause = (Exception) e.getCause();
                    if (cause instanceof ClientError || cause instanceof Unsupported) {
                        throw cause;
                    }
                    throw clientError(cause);
                }
                throw e;
            }
        }

        List<List<Object>> assignment() {
            return assignment;
        }

        synchronized List<Map<String, Object>> take() {
            List<Map<String, Object>> got = new ArrayList<>(records);
            records.clear();
            return got;
        }

        synchronized List<ObjectNode> errors() {
            List<ObjectNode> got = new ArrayList<>(errors);
            errors.clear();
            return got;
        }

        Object commit(JsonNode offsets) throws Exception {
            Map<TopicPartition, OffsetAndMetadata> m = new HashMap<>();
            for (JsonNode o : offsets) {
                String meta = o.get(3).isNull() ? "" : o.get(3).asText();
                m.put(new TopicPartition(o.get(0).asText(), o.get(1).asInt()),
                      new OffsetAndMetadata(o.get(2).asLong(), meta));
            }
            return call(() -> {
                consumer.commitSync(m);
                return null;
            });
        }

        Object position(String t, int p) throws Exception {
            return call(() -> {
                try {
                    return consumer.position(new TopicPartition(t, p), Duration.ofMillis(200));
                } catch (TimeoutException e) {
                    return null;
                }
            });
        }

        Object seek(String t, int p, long offset) throws Exception {
            return call(() -> {
                consumer.seek(new TopicPartition(t, p), offset);
                return null;
            });
        }

        Object pause(JsonNode tps, boolean paused) throws Exception {
            List<TopicPartition> parts = new ArrayList<>();
            for (JsonNode tp : tps) {
                parts.add(new TopicPartition(tp.get(0).asText(), tp.get(1).asInt()));
            }
            return call(() -> {
                if (paused) {
                    consumer.pause(parts);
                } else {
                    consumer.resume(parts);
                }
                return null;
            });
        }

        Object close() throws Exception {
            if (stop || !thread.isAlive()) {
                return null;
            }
            call(() -> {
                consumer.close(Duration.ofMillis(opMs()));
                stop = true;
                return null;
            });
            thread.join(5000);
            return null;
        }

        void closeQuietly() {
            if (!stop) {
                try {
                    close();
                } catch (Exception e) {
                    // on the way out
                }
            }
        }
    }
}
