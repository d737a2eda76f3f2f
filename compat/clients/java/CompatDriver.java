// Kafka's Java client (kafka-clients): the one driver that both the compat suite and the tests run. Compiled
// once per source and client version by tests/javautil.py (compat/clients/java.py names the versions); the one
// source compiles against kafka-clients 4.4, 3.9 and 2.8 (calls newer than 2.8 go through the version bridges
// below, which answer Unsupported where the client lacks them).
//
// Two ways to run it, on the same helpers (clients, error names, records as JSON):
//
//   java CompatDriver BOOTSTRAP TIMING_JSON
//       the agent of python -m compat: JSON lines on stdin, answers on stdout, in the protocol described in
//       compat/clients/agent.py. One JVM serves a whole run (every scenario of one broker); a member that a
//       scenario kills gets a JVM of its own.
//   java CompatDriver BOOTSTRAP TIMING_JSON scenarios [SCENARIO...]
//       the end-to-end scenarios of tests/integration/clients/test_java_client.py (all of them when none is named), each
//       against its own topics: one JSON line per scenario on stdout,
//           {"scenario": NAME, "ok": true, "ms": N, "result": {...}}  or  {"scenario": NAME, "ok": false, "error": TRACE}
//       then {"done": true}. A scenario that needs the broker changed behind the client's back (a leader epoch
//       bump) prints {"request": WHAT, ...} and waits for one line on stdin before going on. Binary keys, values
//       and header values are hex strings (null stays null); expected failures are reported as the exception's
//       simple class name, which the tests assert.
//
// The agent's errors the client reports become {"error": {"code": KAFKA_ERROR_NAME, "type": SimpleClassName, ...}}:
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
import java.security.MessageDigest;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.Collections;
import java.util.HashMap;
import java.util.HexFormat;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Properties;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.Callable;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Future;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.AlterConfigOp;
import org.apache.kafka.common.errors.ThrottlingQuotaExceededException;
import org.apache.kafka.common.quota.ClientQuotaAlteration;
import org.apache.kafka.common.quota.ClientQuotaEntity;
import org.apache.kafka.common.quota.ClientQuotaFilter;
import org.apache.kafka.common.quota.ClientQuotaFilterComponent;
import org.apache.kafka.clients.admin.Config;
import org.apache.kafka.clients.admin.ConfigEntry;
import org.apache.kafka.clients.admin.ConsumerGroupDescription;
import org.apache.kafka.clients.admin.ConsumerGroupListing;
import org.apache.kafka.clients.admin.CreatePartitionsOptions;
import org.apache.kafka.clients.admin.CreateTopicsOptions;
import org.apache.kafka.clients.admin.CreateTopicsResult;
import org.apache.kafka.clients.admin.DescribeClusterResult;
import org.apache.kafka.clients.admin.DescribeConfigsOptions;
import org.apache.kafka.clients.admin.DescribeTopicsResult;
import org.apache.kafka.clients.admin.ListOffsetsResult.ListOffsetsResultInfo;
import org.apache.kafka.clients.admin.ListOffsetsResult;
import org.apache.kafka.clients.admin.MemberDescription;
import org.apache.kafka.clients.admin.NewPartitions;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.admin.OffsetSpec;
import org.apache.kafka.clients.admin.RecordsToDelete;
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
import org.apache.kafka.common.KafkaFuture;
import org.apache.kafka.common.Node;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.TopicPartitionInfo;
import org.apache.kafka.common.Uuid;
import org.apache.kafka.common.config.ConfigResource;
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
    /** stdin: the agent's requests, or the test's answers to a scenario's request. */
    private static final BufferedReader IN = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));

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
        System.setOut(System.err); // nothing but answers and results on the protocol's stream
        bootstrap = args[0];
        timing = JSON.readTree(args[1]);
        if (args.length > 2 && args[2].equals("scenarios")) {
            runScenarios(args.length > 3 ? List.of(args).subList(3, args.length) : SCENARIOS);
        } else {
            serve();
        }
        System.exit(0);
    }

    /** The agent: answers the protocol's requests on stdin until "quit" or end of input. */
    private static void serve() throws Exception {
        String line;
        while ((line = IN.readLine()) != null) {
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

    /** A record's headers as [name, hex value or null] pairs, in order (repeated names kept). */
    static List<List<String>> headers(ConsumerRecord<byte[], byte[]> r) {
        List<List<String>> headers = new ArrayList<>();
        for (Header h : r.headers()) {
            headers.add(java.util.Arrays.asList(h.key(), hex(h.value())));
        }
        return headers;
    }

    /** A record in the agent protocol's form (REC in compat/clients/agent.py). */
    static Map<String, Object> rec(ConsumerRecord<byte[], byte[]> r) {
        Map<String, Object> m = new HashMap<>();
        m.put("k", hex(r.key()));
        m.put("v", hex(r.value()));
        m.put("h", headers(r));
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
                double waitS = req.hasNonNull("wait_s") ? req.get("wait_s").asDouble()
                        : timing.get("fetch_s").asDouble();
                long deadline = System.nanoTime() + (long) (waitS * 1e9);
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
        ListOffsetsResultInfo info = await(admin().listOffsets(Map.of(tp, maxTimestampSpec())).partitionResult(tp));
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
            return describeByName(topic).get(topic).partitions().size();
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

    // ------------------------------------------------------------------------------------------ version bridges

    /** describeTopics by name, as a map: allTopicNames() from kafka-clients 3.1, all() before it. */
    static Map<String, TopicDescription> describeByName(String... names) throws Exception {
        return byTopicName(admin().describeTopics(List.of(names))).get(opMs() + 5000, TimeUnit.MILLISECONDS);
    }

    /** The admin method `name` taking a TopicCollection (kafka-clients 3.1, KIP-516), called with
     *  TopicCollection.ofTopicIds(ids): by reflection, so the source compiles against 2.8 too. */
    private static Object byTopicIds(String name, Uuid... ids) throws Exception {
        Class<?> collection;
        try {
            collection = Class.forName("org.apache.kafka.common.TopicCollection");
        } catch (ClassNotFoundException e) {
            throw new Unsupported("topics by id (TopicCollection) are in kafka-clients 3.1 and later (KIP-516)");
        }
        Object topics = collection.getMethod("ofTopicIds", Collection.class).invoke(null, List.of(ids));
        try {
            return Admin.class.getMethod(name, collection).invoke(admin(), topics);
        } catch (java.lang.reflect.InvocationTargetException e) {
            throw e.getCause() instanceof Exception ? (Exception) e.getCause() : e;
        }
    }

    /** describeTopics by topic id (DescribeTopicsResult.allTopicIds, kafka-clients 3.1). */
    @SuppressWarnings("unchecked")
    static Map<Uuid, TopicDescription> describeById(Uuid id) throws Exception {
        Object result = byTopicIds("describeTopics", id);
        return await((KafkaFuture<Map<Uuid, TopicDescription>>) DescribeTopicsResult.class.getMethod("allTopicIds")
                .invoke(result));
    }

    /** deleteTopics by topic id (kafka-clients 3.1). */
    static Object deleteById(Uuid id) throws Exception {
        return await(((org.apache.kafka.clients.admin.DeleteTopicsResult) byTopicIds("deleteTopics", id)).all());
    }

    /** OffsetSpec.maxTimestamp() (kafka-clients 3.0, KIP-734). */
    static OffsetSpec maxTimestampSpec() throws Exception {
        try {
            return (OffsetSpec) OffsetSpec.class.getMethod("maxTimestamp").invoke(null);
        } catch (NoSuchMethodException e) {
            throw new Unsupported("OffsetSpec.maxTimestamp() is in kafka-clients 3.0 and later (KIP-734)");
        }
    }

    // ------------------------------------------------------------------------------------------ scenarios
    // tests/integration/clients/test_java_client.py's: each returns what the test asserts, cross-checked against the broker.

    private static final long TIMEOUT_S = 15;
    private static final List<String> SCENARIOS = List.of(
            "roundtrip", "compression", "large", "partitions100", "admin_create", "admin_delete",
            "admin_partitions", "admin_describe", "admin_configs", "admin_alter_configs", "admin_client_quotas",
            "admin_list_offsets", "consumer_offsets", "read_committed", "validation");

    /** Runs each scenario named, printing its result line, then {"done": true}. */
    private static void runScenarios(List<String> names) throws Exception {
        for (String name : names) {
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
            case "admin_client_quotas": return adminClientQuotas();
            case "admin_list_offsets": return adminListOffsets();
            case "consumer_offsets": return consumerOffsets();
            case "read_committed": return readCommitted();
            case "validation": return validation();
            default: throw new IllegalArgumentException("unknown scenario " + name);
        }
    }

    // ------------------------------------------------------------------------------ scenario helpers

    private static synchronized void emit(Map<String, Object> line) throws Exception {
        out.println(JSON.writeValueAsString(line));
    }

    /** Asks the test to change the broker; returns its one-line answer. */
    private static String request(String what, Object... kv) throws Exception {
        Map<String, Object> line = map(kv);
        line.put("request", what);
        emit(line);
        String answer = IN.readLine();
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
        while ((e instanceof ExecutionException || e instanceof CompletionException
                || e instanceof java.lang.reflect.InvocationTargetException) && e.getCause() != null) {
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

    private static Uuid createTopic(String name, int partitions, Map<String, String> configs) throws Exception {
        NewTopic t = new NewTopic(name, partitions, (short) 1);
        if (configs != null) {
            t.configs(configs);
        }
        CreateTopicsResult r = admin().createTopics(List.of(t));
        await(r.all());
        Uuid id = await(r.topicId(name));
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
                TopicDescription d = describeByName(name).get(name);
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

    private static KafkaProducer<byte[], byte[]> scenarioProducer(Object... overrides) {
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

    private static KafkaConsumer<byte[], byte[]> scenarioConsumer(Object... overrides) {
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

    /** A record as the scenarios report it: every field the test checks, named in full. */
    private static Map<String, Object> recordJson(ConsumerRecord<byte[], byte[]> r) {
        return map("topic", r.topic(), "partition", r.partition(), "offset", r.offset(),
                   "timestamp", r.timestamp(), "timestamp_type", r.timestampType().name(),
                   "key", hex(r.key()), "value", hex(r.value()), "headers", headers(r),
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
        try (KafkaProducer<byte[], byte[]> p = scenarioProducer()) {
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
        try (KafkaConsumer<byte[], byte[]> c = scenarioConsumer()) {
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
            try (KafkaProducer<byte[], byte[]> p = scenarioProducer(ProducerConfig.COMPRESSION_TYPE_CONFIG, codec,
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
            try (KafkaConsumer<byte[], byte[]> c = scenarioConsumer()) {
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
        try (KafkaProducer<byte[], byte[]> p = scenarioProducer(ProducerConfig.MAX_REQUEST_SIZE_CONFIG, 8 * 1024 * 1024)) {
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
        try (KafkaProducer<byte[], byte[]> p = scenarioProducer()) {  // max.request.size left at its 1 MiB default
            out.put("client_side_limit", outcome(() -> p.send(new ProducerRecord<>(big, pattern(2 * 1024 * 1024)))
                    .get(TIMEOUT_S, TimeUnit.SECONDS)));
        }
        try (KafkaConsumer<byte[], byte[]> c = scenarioConsumer()) {
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
        // Kafka's first appends to 100 new partitions (their logs created as its metadata arrives) took more than
        // the usual 20 s delivery timeout on a loaded CI machine: this scenario gives them a minute
        try (KafkaProducer<byte[], byte[]> p = scenarioProducer(ProducerConfig.DELIVERY_TIMEOUT_MS_CONFIG, 60_000,
                                                                 ProducerConfig.REQUEST_TIMEOUT_MS_CONFIG, 30_000)) {
            for (int round = 0; round < 3; round++) {
                for (int part = 0; part < 100; part++) {
                    futures.add(p.send(new ProducerRecord<>(topic, part, utf8("k" + part),
                                                            utf8(part + ":" + round))));
                }
                // each round acknowledged before the next is sent: on Kafka, a new partition's first batch can be
                // refused while its log is still being made and the next round's batch, already in flight, then
                // arrives first (OUT_OF_ORDER_SEQUENCE_NUMBER, after which the idempotent producer retried until
                // its delivery timeout: one run in three)
                p.flush();
            }
            for (Future<RecordMetadata> f : futures) {
                f.get(60, TimeUnit.SECONDS);
            }
        }
        List<TopicPartition> tps = new ArrayList<>();
        for (int part = 0; part < 100; part++) {
            tps.add(new TopicPartition(topic, part));
        }
        try (KafkaConsumer<byte[], byte[]> c = scenarioConsumer()) {
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
        await(r.all());
        out.put("created", map(
                "topic_id", await(r.topicId("java-admin-a")).toString(),
                "num_partitions", await(r.numPartitions("java-admin-a")),
                "replication_factor", await(r.replicationFactor("java-admin-a")),
                "retention_ms", await(r.config("java-admin-a")).get("retention.ms").value(),
                "defaults_partitions", await(r.numPartitions("java-admin-defaults")),
                "defaults_replication_factor", await(r.replicationFactor("java-admin-defaults"))));
        out.put("exists", outcome(() -> await(admin().createTopics(
                List.of(new NewTopic("java-admin-a", 1, (short) 1))).all())));
        out.put("zero_partitions", outcome(() -> await(admin().createTopics(
                List.of(new NewTopic("java-admin-zero", 0, (short) 1))).all())));
        out.put("replication_factor_3", outcome(() -> await(admin().createTopics(
                List.of(new NewTopic("java-admin-rf3", 1, (short) 3))).all())));
        out.put("bad_name", outcome(() -> await(admin().createTopics(
                List.of(new NewTopic("bad name!", 1, (short) 1))).all())));
        out.put("too_long_name", outcome(() -> await(admin().createTopics(
                List.of(new NewTopic("x".repeat(250), 1, (short) 1))).all())));
        createTopic("java.collide", 1, null);
        out.put("collision", outcome(() -> await(admin().createTopics(
                List.of(new NewTopic("java_collide", 1, (short) 1))).all())));
        out.put("bad_config", outcome(() -> await(admin().createTopics(
                List.of(new NewTopic("java-admin-badcfg", 1, (short) 1).configs(Map.of("no.such.config", "1"))))
                .all())));
        out.put("validate_only", outcome(() -> await(admin().createTopics(
                List.of(new NewTopic("java-admin-validate", 1, (short) 1)),
                new org.apache.kafka.clients.admin.CreateTopicsOptions().validateOnly(true)).all())));
        out.put("topics", new ArrayList<>(new java.util.TreeSet<>(await(admin().listTopics().names()))));
        return out;
    }

    private static Object adminDelete() throws Exception {
        Map<String, Object> out = new LinkedHashMap<>();
        createTopic("java-admin-del", 2, null);
        Uuid id = createTopic("java-admin-delid", 1, null);
        out.put("by_name", outcome(() -> await(admin().deleteTopics(List.of("java-admin-del")).all())));
        out.put("unknown_name", outcome(() -> await(admin().deleteTopics(List.of("java-admin-nope")).all())));
        out.put("by_id", outcome(() -> deleteById(id)));
        out.put("unknown_id", outcome(() -> deleteById(Uuid.randomUuid())));
        out.put("again", outcome(() -> await(admin().deleteTopics(List.of("java-admin-del")).all())));
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
            java.util.Set<String> names = await(admin().listTopics().names());
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
        out.put("increase", outcome(() -> await(admin().createPartitions(
                Map.of(topic, NewPartitions.increaseTo(5))).all())));
        if ("ok".equals(out.get("increase"))) {
            // Kafka answers CreatePartitions before its metadata cache has the new partitions, as for CreateTopics
            awaitLeaders(topic, 5);
        }
        out.put("partitions", describeByName(topic).get(topic)
                .partitions().size());
        out.put("decrease", outcome(() -> await(admin().createPartitions(
                Map.of(topic, NewPartitions.increaseTo(3))).all())));
        out.put("same", outcome(() -> await(admin().createPartitions(
                Map.of(topic, NewPartitions.increaseTo(5))).all())));
        out.put("unknown", outcome(() -> await(admin().createPartitions(
                Map.of("java-admin-parts-nope", NewPartitions.increaseTo(5))).all())));
        // a new partition takes records at once
        try (KafkaProducer<byte[], byte[]> p = scenarioProducer()) {
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
        out.put("by_name", describeJson(describeByName(topic).get(topic)));
        out.put("by_id", describeJson(describeById(id).get(id)));
        out.put("unknown_name", outcome(() -> describeByName("java-admin-desc-nope")));
        out.put("unknown_id", outcome(() -> describeById(Uuid.randomUuid())));
        DescribeClusterResult c = admin().describeCluster();
        List<Map<String, Object>> nodes = new ArrayList<>();
        for (Node n : await(c.nodes())) {
            nodes.add(nodeJson(n));
        }
        out.put("cluster", map("cluster_id", await(c.clusterId()), "controller", nodeJson(await(c.controller())),
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
        String brokerId = String.valueOf(await(admin().describeCluster().controller()).id());
        ConfigResource t = new ConfigResource(ConfigResource.Type.TOPIC, topic);
        ConfigResource b = new ConfigResource(ConfigResource.Type.BROKER, brokerId);
        Map<ConfigResource, Config> all = await(admin().describeConfigs(List.of(t, b),
                new DescribeConfigsOptions().includeSynonyms(true)).all());
        return map("broker_id", brokerId, "topic", configJson(all.get(t)), "broker", configJson(all.get(b)),
                   "unknown_topic", outcome(() -> await(admin().describeConfigs(
                           List.of(new ConfigResource(ConfigResource.Type.TOPIC, "java-admin-configs-nope"))).all())));
    }

    /** incrementalAlterConfigs on a topic (SET, APPEND, then SUBTRACT, DELETE) and on this broker (SET, then
     *  DELETE), a refused
     *  alteration, and what describeConfigs says after each. */
    private static Object adminAlterConfigs() throws Exception {
        String topic = "java-admin-alter";
        createTopic(topic, 1, Map.of());
        String brokerId = String.valueOf(await(admin().describeCluster().controller()).id());
        ConfigResource t = new ConfigResource(ConfigResource.Type.TOPIC, topic);
        ConfigResource b = new ConfigResource(ConfigResource.Type.BROKER, brokerId);
        await(admin().incrementalAlterConfigs(Map.of(
                t, List.of(new AlterConfigOp(new ConfigEntry("retention.ms", "3600000"), AlterConfigOp.OpType.SET),
                           new AlterConfigOp(new ConfigEntry("cleanup.policy", "compact"),
                                             AlterConfigOp.OpType.APPEND)),
                b, List.of(new AlterConfigOp(new ConfigEntry("log.retention.bytes", "1000000000"),
                                             AlterConfigOp.OpType.SET)))).all());
        Config after = describedWhen(t, c -> "3600000".equals(c.get("retention.ms").value())
                && c.get("retention.bytes").source() == ConfigEntry.ConfigSource.DYNAMIC_BROKER_CONFIG);
        // SUBTRACT from a list config and DELETE of a topic config: back to the broker's value
        await(admin().incrementalAlterConfigs(Map.of(t, List.of(
                new AlterConfigOp(new ConfigEntry("cleanup.policy", "delete"), AlterConfigOp.OpType.SUBTRACT),
                new AlterConfigOp(new ConfigEntry("retention.ms", null), AlterConfigOp.OpType.DELETE)))).all());
        Config subtracted = describedWhen(t, c -> "compact".equals(c.get("cleanup.policy").value())
                && !"3600000".equals(c.get("retention.ms").value()));
        Object refused = outcome(() -> await(admin().incrementalAlterConfigs(Map.of(t, List.of(
                new AlterConfigOp(new ConfigEntry("segment.bytes", "100"), AlterConfigOp.OpType.SET)))).all()));
        Object unknownTopic = outcome(() -> await(admin().incrementalAlterConfigs(Map.of(
                new ConfigResource(ConfigResource.Type.TOPIC, "java-admin-alter-nope"), List.of(new AlterConfigOp(
                        new ConfigEntry("retention.ms", "1"), AlterConfigOp.OpType.SET)))).all()));
        Object staticConfig = outcome(() -> await(admin().incrementalAlterConfigs(Map.of(b, List.of(new AlterConfigOp(
                new ConfigEntry("num.partitions", "3"), AlterConfigOp.OpType.SET)))).all()));
        await(admin().incrementalAlterConfigs(Map.of(b, List.of(new AlterConfigOp(
                new ConfigEntry("log.retention.bytes", null), AlterConfigOp.OpType.DELETE)))).all());
        // Kafka drops the broker's dynamic value from the synonyms before the value it reports follows (seen
        // under --kafka-real): wait for both
        Config restored = describedWhen(t, c -> c.get("retention.bytes").source()
                != ConfigEntry.ConfigSource.DYNAMIC_BROKER_CONFIG && "-1".equals(c.get("retention.bytes").value()));
        return map("topic", configJson(after), "subtracted", configJson(subtracted), "refused", refused, "unknown_topic", unknownTopic,
                   "static", staticConfig, "restored", configJson(restored));
    }

    /** The Admin's alterClientQuotas/describeClientQuotas on the scenario's own client id (quotas set, one
     *  removed, Kafka's exceptions for an unknown key and a key of the wrong entity type), then its
     *  controller_mutation_rate met by an Admin of that client id whose createTopics does not retry a quota
     *  violation: ThrottlingQuotaExceededException with a throttle time. Everything set is removed at the end. */
    private static Object adminClientQuotas() throws Exception {
        String id = "java-quota-" + Long.toHexString(System.nanoTime());
        ClientQuotaEntity entity = new ClientQuotaEntity(Map.of(ClientQuotaEntity.CLIENT_ID, id));
        ClientQuotaFilter filter = ClientQuotaFilter.containsOnly(
                List.of(ClientQuotaFilterComponent.ofEntity(ClientQuotaEntity.CLIENT_ID, id)));
        await(admin().alterClientQuotas(List.of(new ClientQuotaAlteration(entity, List.of(
                new ClientQuotaAlteration.Op("producer_byte_rate", 1048576.0),
                new ClientQuotaAlteration.Op("controller_mutation_rate", 1.0))))).all());
        Map<String, Double> set = quotasWhen(filter, entity, q -> q.size() == 2);
        await(admin().alterClientQuotas(List.of(new ClientQuotaAlteration(entity, List.of(
                new ClientQuotaAlteration.Op("producer_byte_rate", null))))).all());
        Map<String, Double> removed = quotasWhen(filter, entity, q -> q.size() == 1);
        String unknownKey = outcome(() -> await(admin().alterClientQuotas(List.of(new ClientQuotaAlteration(entity,
                List.of(new ClientQuotaAlteration.Op("no_such_quota", 1.0))))).all()));
        String wrongEntity = outcome(() -> await(admin().alterClientQuotas(List.of(new ClientQuotaAlteration(
                new ClientQuotaEntity(Map.of(ClientQuotaEntity.IP, "127.0.0.9")),
                List.of(new ClientQuotaAlteration.Op("producer_byte_rate", 1.0))))).all()));
        Properties p = new Properties();
        p.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        p.put(AdminClientConfig.CLIENT_ID_CONFIG, id);
        p.put(AdminClientConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, (int) opMs());
        p.put(AdminClientConfig.REQUEST_TIMEOUT_MS_CONFIG, (int) opMs());
        Map<String, Object> throttled = new LinkedHashMap<>();
        List<String> made = new ArrayList<>();
        try (Admin mutator = Admin.create(p)) {
            // 1 partition a second, a burst of 11: 11-partition topics until one is refused (Kafka's controller
            // learns the quota a moment after the answer)
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(TIMEOUT_S);
            while (throttled.isEmpty() && System.nanoTime() < deadline) {
                String name = id + "-" + made.size();
                try {
                    await(mutator.createTopics(List.of(new NewTopic(name, 11, (short) 1)),
                            new CreateTopicsOptions().retryOnQuotaViolation(false)).all());
                    made.add(name);
                } catch (Exception e) {
                    Throwable cause = e;
                    while ((cause instanceof ExecutionException || cause instanceof CompletionException)
                            && cause.getCause() != null) {
                        cause = cause.getCause();
                    }
                    throttled.put("error", errorName(e));
                    if (cause instanceof ThrottlingQuotaExceededException) {
                        throttled.put("throttle_time_ms", ((ThrottlingQuotaExceededException) cause).throttleTimeMs());
                    }
                }
            }
        }
        await(admin().alterClientQuotas(List.of(new ClientQuotaAlteration(entity, List.of(
                new ClientQuotaAlteration.Op("controller_mutation_rate", null))))).all());
        Map<String, Double> cleared = quotasWhen(filter, entity, Map::isEmpty);
        if (!made.isEmpty()) {
            await(admin().deleteTopics(made).all());
        }
        return map("set", new TreeMap<>(set), "removed", new TreeMap<>(removed), "unknown_key", unknownKey,
                   "wrong_entity", wrongEntity, "topics_made", made.size(), "throttled", throttled,
                   "cleared", cleared);
    }

    /** The entity's quotas once `ready` holds (Kafka's broker learns them from the controller a moment after the
     *  answer), or as they are after TIMEOUT_S. */
    private static Map<String, Double> quotasWhen(ClientQuotaFilter filter, ClientQuotaEntity entity,
            java.util.function.Predicate<Map<String, Double>> ready) throws Exception {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(TIMEOUT_S);
        while (true) {
            Map<String, Double> q = await(admin().describeClientQuotas(filter).entities()).getOrDefault(entity, Map.of());
            if (ready.test(q) || System.nanoTime() > deadline) {
                return q;
            }
            Thread.sleep(50);
        }
    }

    /** The resource's configs once `ready` holds (Kafka's brokers apply an alteration a moment after they
     *  acknowledge it), or as they are after TIMEOUT_S. */
    private static Config describedWhen(ConfigResource r, java.util.function.Predicate<Config> ready)
            throws Exception {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(TIMEOUT_S);
        while (true) {
            Config c = await(admin().describeConfigs(List.of(r), new DescribeConfigsOptions().includeSynonyms(true))
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
        try (KafkaProducer<byte[], byte[]> p = scenarioProducer(ProducerConfig.LINGER_MS_CONFIG, 50)) {
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
        specs.put("max_timestamp", maxTimestampSpec());
        specs.put("ts_150", OffsetSpec.forTimestamp(base + 150));
        specs.put("ts_300", OffsetSpec.forTimestamp(base + 300));
        specs.put("ts_360", OffsetSpec.forTimestamp(base + 360));
        specs.put("ts_future", OffsetSpec.forTimestamp(base + 1_000_000));
        specs.put("ts_past", OffsetSpec.forTimestamp(base - 1_000_000));
        Map<String, Object> out = new LinkedHashMap<>();
        out.put("base", base);
        for (Map.Entry<String, OffsetSpec> e : specs.entrySet()) {
            Map<TopicPartition, ListOffsetsResultInfo> r = await(admin().listOffsets(
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
        try (KafkaConsumer<byte[], byte[]> c = scenarioConsumer()) {
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
        try (KafkaProducer<byte[], byte[]> p = scenarioProducer()) {
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
        try (KafkaConsumer<byte[], byte[]> c = scenarioConsumer(ConsumerConfig.ISOLATION_LEVEL_CONFIG, "read_committed")) {
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
        try (KafkaProducer<byte[], byte[]> p = scenarioProducer();
             KafkaConsumer<byte[], byte[]> c = scenarioConsumer(ConsumerConfig.METADATA_MAX_AGE_CONFIG, 100)) {
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
        boolean fenced;
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
                if (fenced) {
                    // FencedInstanceIdException is fatal: an application closes the consumer rather than poll it
                    // again, which would rejoin with the same group.instance.id and fence its successor in turn
                    // (both members then take the partition from each other, every heartbeat, on either broker);
                    // the calls handed to it still run, and a commit is refused as fenced
                    List<List<Object>> held = new ArrayList<>();
                    for (TopicPartition tp : consumer.assignment()) {
                        held.add(List.of(tp.topic(), tp.partition()));
                    }
                    assignment = held;
                    try {
                        Thread.sleep(50);
                    } catch (InterruptedException ie) {
                        return;
                    }
                    continue;
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
                    fenced = e instanceof org.apache.kafka.common.errors.FencedInstanceIdException;
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
