import java.time.Duration;
import java.util.*;
import java.util.concurrent.TimeUnit;

import org.apache.kafka.clients.admin.*;
import org.apache.kafka.clients.consumer.*;
import org.apache.kafka.clients.producer.*;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;

/** Share groups (KIP-932) through the Java client's KafkaShareConsumer: one JVM runs every scenario against
 * one broker and prints one JSON line per scenario (tests/integration/clients/test_share_groups.py asserts them). */
public class ShareDriver {
    static String bootstrap;
    static String prefix;
    static Admin admin;

    public static void main(String[] args) throws Exception {
        bootstrap = args[0];
        prefix = args[1];
        Properties ap = new Properties();
        ap.put("bootstrap.servers", bootstrap);
        admin = Admin.create(ap);
        for (int i = 2; i < args.length; i++) {
            String scenario = args[i];
            long t0 = System.nanoTime();
            String out;
            boolean ok = true;
            try {
                switch (scenario) {
                    case "deliver": out = deliver(); break;
                    case "release": out = release(); break;
                    case "reject": out = reject(); break;
                    case "limit": out = limit(); break;
                    case "shared": out = shared(); break;
                    case "admin": out = adminScenario(); break;
                    case "read_committed": out = isolation("read_committed"); break;
                    case "read_uncommitted": out = isolation("read_uncommitted"); break;
                    case "dlq": out = dlq("dlq", false); break;
                    case "dlq_copy": out = dlq("dlq_copy", true); break;
                    default: throw new IllegalArgumentException("unknown scenario " + scenario);
                }
            } catch (Exception e) {
                ok = false;
                out = q(e.getClass().getSimpleName() + ": " + e.getMessage());
            }
            System.out.println("{\"scenario\":" + q(scenario) + ",\"ok\":" + ok + ","
                + (ok ? "\"result\":{" + out + ",\"seconds\":" + (System.nanoTime() - t0) / 1e9 + "}" : "\"error\":" + out)
                + "}");
            System.out.flush();
        }
        admin.close();
    }

    static String q(String s) {
        if (s == null) return "null";
        return "\"" + s.replace("\\", "\\\\").replace("\"", "\\\"").replace("\n", " ") + "\"";
    }

    /** A topic of `partitions` partitions with `n` records, and a share group starting at its beginning. */
    static String setUp(String name, int partitions, int n, String group) throws Exception {
        String topic = prefix + "-" + name;
        admin.createTopics(List.of(new NewTopic(topic, partitions, (short) 1))).all().get(30, TimeUnit.SECONDS);
        Map<TopicPartition, Long> start = new HashMap<>();
        for (int p = 0; p < partitions; p++) start.put(new TopicPartition(topic, p), 0L);
        for (int attempt = 0; ; attempt++) {  // Kafka: the new topic reaches its metadata cache a moment later
            try {
                admin.alterShareGroupOffsets(group, start).all().get(30, TimeUnit.SECONDS);
                break;
            } catch (java.util.concurrent.ExecutionException e) {
                if (attempt >= 20 || !(e.getCause() instanceof org.apache.kafka.common.errors.UnknownTopicOrPartitionException)) throw e;
                Thread.sleep(250);
            }
        }
        try (KafkaProducer<String, String> producer = new KafkaProducer<>(producerConfig())) {
            for (int i = 0; i < n; i++) producer.send(new ProducerRecord<>(topic, "k" + i, "v" + i));
            producer.flush();
        }
        return topic;
    }

    /** The broker, and String keys and values through `serde` ("serializer" or "deserializer") `type`: what
     * every client here starts from. */
    static Properties clientConfig(String serde, Class<?> type) {
        Properties p = new Properties();
        p.put("bootstrap.servers", bootstrap);
        p.put("key." + serde, type.getName());
        p.put("value." + serde, type.getName());
        return p;
    }

    static Properties consumerConfig() {
        return clientConfig("deserializer", StringDeserializer.class);
    }

    static Properties producerConfig() {
        return clientConfig("serializer", StringSerializer.class);
    }

    static KafkaShareConsumer<String, String> consumer(String group, String mode) {
        Properties cp = consumerConfig();
        cp.put("group.id", group);
        cp.put("share.acknowledgement.mode", mode);
        return new KafkaShareConsumer<>(cp);
    }

    static long startOffset(String group, String topic) throws Exception {
        Map<String, ListShareGroupOffsetsSpec> spec = Map.of(group, new ListShareGroupOffsetsSpec()
            .topicPartitions(List.of(new TopicPartition(topic, 0))));
        var offsets = admin.listShareGroupOffsets(spec).partitionsToOffsetInfo(group).get(30, TimeUnit.SECONDS);
        var info = offsets.get(new TopicPartition(topic, 0));
        return info == null ? -1 : info.startOffset();
    }

    /** share.isolation.level: a transactional producer commits c0..c2, aborts a0..a1, commits c3 and leaves
     * o0..o1 open; what the group delivers before and after that last transaction commits. */
    static String isolation(String level) throws Exception {
        String group = prefix + "-g-" + level;
        String topic = setUp(level, 1, 0, group);
        var resource = new org.apache.kafka.common.config.ConfigResource(
            org.apache.kafka.common.config.ConfigResource.Type.GROUP, group);
        admin.incrementalAlterConfigs(Map.of(resource, List.of(new AlterConfigOp(
            new ConfigEntry("share.isolation.level", level), AlterConfigOp.OpType.SET))))
            .all().get(30, TimeUnit.SECONDS);
        Properties pp = producerConfig();
        pp.put("transactional.id", prefix + "-tx-" + level);
        List<String> before = new ArrayList<>();
        List<String> after = new ArrayList<>();
        try (KafkaProducer<String, String> producer = new KafkaProducer<>(pp);
             KafkaShareConsumer<String, String> c = consumer(group, "implicit")) {
            producer.initTransactions();
            String[][] txns = {{"c0", "c1", "c2"}, {"a0", "a1"}, {"c3"}};
            for (int t = 0; t < txns.length; t++) {
                producer.beginTransaction();
                for (String v : txns[t]) producer.send(new ProducerRecord<>(topic, v, v));
                producer.flush();  // the aborted records reach the log, as the test wants
                if (t == 1) producer.abortTransaction(); else producer.commitTransaction();
            }
            producer.beginTransaction();
            for (String v : List.of("o0", "o1")) producer.send(new ProducerRecord<>(topic, v, v));
            producer.flush();
            c.subscribe(List.of(topic));
            int expected = level.equals("read_committed") ? 4 : 8;
            long deadline = System.currentTimeMillis() + 30000;
            while (before.size() < expected && System.currentTimeMillis() < deadline)
                for (ConsumerRecord<String, String> r : c.poll(Duration.ofMillis(300))) before.add(r.value());
            long quiet = System.currentTimeMillis() + 2000;  // nothing more while the transaction is open
            while (System.currentTimeMillis() < quiet)
                for (ConsumerRecord<String, String> r : c.poll(Duration.ofMillis(300))) before.add(r.value());
            producer.commitTransaction();
            deadline = System.currentTimeMillis() + (level.equals("read_committed") ? 30000 : 2000);
            while (after.size() < (level.equals("read_committed") ? 2 : 1) && System.currentTimeMillis() < deadline)
                for (ConsumerRecord<String, String> r : c.poll(Duration.ofMillis(300))) after.add(r.value());
        }
        return "\"before\":" + q(String.join(",", before)) + ",\"after\":" + q(String.join(",", after));
    }

    /** KIP-1191 dead-letter queue: with the group configs errors.deadletterqueue.topic.name and
     * share.delivery.count.limit=2 (and errors.deadletterqueue.copy.record.enable if `copy`), k0 is rejected and
     * k1 released until archived; what lands in the DLQ topic (one line per record: key, value, timestamp type,
     * headers in order), read with a plain consumer. */
    static String dlq(String name, boolean copy) throws Exception {
        String group = prefix + "-g-" + name;
        String dlqTopic = "dlq." + prefix + "-" + name;
        admin.createTopics(List.of(new NewTopic(dlqTopic, 1, (short) 1)
            .configs(Map.of("errors.deadletterqueue.group.enable", "true")))).all().get(30, TimeUnit.SECONDS);
        var resource = new org.apache.kafka.common.config.ConfigResource(
            org.apache.kafka.common.config.ConfigResource.Type.GROUP, group);
        admin.incrementalAlterConfigs(Map.of(resource, List.of(
            new AlterConfigOp(new ConfigEntry("errors.deadletterqueue.topic.name", dlqTopic), AlterConfigOp.OpType.SET),
            new AlterConfigOp(new ConfigEntry("share.delivery.count.limit", "2"), AlterConfigOp.OpType.SET),
            new AlterConfigOp(new ConfigEntry("errors.deadletterqueue.copy.record.enable", String.valueOf(copy)),
                AlterConfigOp.OpType.SET))))
            .all().get(30, TimeUnit.SECONDS);
        String topic = setUp(name, 1, 2, group);
        int deliveries = 0;
        try (KafkaShareConsumer<String, String> c = consumer(group, "explicit")) {
            c.subscribe(List.of(topic));
            long deadline = System.currentTimeMillis() + 30000;
            while (deliveries < 3 && System.currentTimeMillis() < deadline) {
                for (ConsumerRecord<String, String> r : c.poll(Duration.ofMillis(300))) {
                    deliveries++;
                    c.acknowledge(r, r.key().equals("k0") ? AcknowledgeType.REJECT : AcknowledgeType.RELEASE);
                }
                c.commitSync();
            }
            long until = System.currentTimeMillis() + 2000;  // nothing comes back
            while (System.currentTimeMillis() < until) deliveries += c.poll(Duration.ofMillis(300)).count();
        }
        List<String> letters = new ArrayList<>();
        try (KafkaConsumer<String, String> c = new KafkaConsumer<>(consumerConfig())) {
            TopicPartition tp = new TopicPartition(dlqTopic, 0);
            c.assign(List.of(tp));
            c.seekToBeginning(List.of(tp));
            long deadline = System.currentTimeMillis() + 30000;
            while (letters.size() < 2 && System.currentTimeMillis() < deadline) {
                for (ConsumerRecord<String, String> r : c.poll(Duration.ofMillis(300))) {
                    StringBuilder b = new StringBuilder(r.key() + "/" + r.value() + "/" + r.timestampType());
                    for (var h : r.headers()) b.append("|").append(h.key()).append("=")
                        .append(h.value() == null ? "null" : new String(h.value(), java.nio.charset.StandardCharsets.UTF_8));
                    letters.add(b.toString());
                }
            }
        }
        Collections.sort(letters);
        StringBuilder out = new StringBuilder("[");
        for (String l : letters) out.append(out.length() > 1 ? "," : "").append(q(l));
        return "\"deliveries\":" + deliveries + ",\"letters\":" + out + "]";
    }

    /** Implicit acknowledgement: every record delivered once, the start offset moves past them. */
    static String deliver() throws Exception {
        String group = prefix + "-g-deliver";
        String topic = setUp("deliver", 1, 20, group);
        Set<String> values = new TreeSet<>();
        int deliveries = 0;
        int maxCount = 0;
        try (KafkaShareConsumer<String, String> c = consumer(group, "implicit")) {
            c.subscribe(List.of(topic));
            long deadline = System.currentTimeMillis() + 30000;
            while (values.size() < 20 && System.currentTimeMillis() < deadline) {
                for (ConsumerRecord<String, String> r : c.poll(Duration.ofMillis(300))) {
                    values.add(r.value());
                    deliveries++;
                    maxCount = Math.max(maxCount, r.deliveryCount().orElse((short) 0));
                }
            }
            c.commitSync();
            var described = admin.describeShareGroups(List.of(group)).describedGroups().get(group)
                .get(30, TimeUnit.SECONDS);
            String state = described.groupState().toString();
            int members = described.members().size();
            c.close();
            return "\"values\":" + values.size() + ",\"deliveries\":" + deliveries + ",\"max_delivery_count\":"
                + maxCount + ",\"state\":" + q(state) + ",\"members\":" + members + ",\"start_offset\":"
                + startOffset(group, topic);
        }
    }

    /** RELEASE: the records come back with delivery count 2. */
    static String release() throws Exception {
        String group = prefix + "-g-release";
        String topic = setUp("release", 1, 5, group);
        List<Integer> counts = new ArrayList<>();
        try (KafkaShareConsumer<String, String> c = consumer(group, "explicit")) {
            c.subscribe(List.of(topic));
            long deadline = System.currentTimeMillis() + 30000;
            int accepted = 0;
            while (accepted < 5 && System.currentTimeMillis() < deadline) {
                for (ConsumerRecord<String, String> r : c.poll(Duration.ofMillis(300))) {
                    short n = r.deliveryCount().orElse((short) 0);
                    counts.add((int) n);
                    if (n < 2) {
                        c.acknowledge(r, AcknowledgeType.RELEASE);
                    } else {
                        c.acknowledge(r, AcknowledgeType.ACCEPT);
                        accepted++;
                    }
                }
                c.commitSync();
            }
        }
        Collections.sort(counts);
        return "\"delivery_counts\":" + counts + ",\"start_offset\":" + startOffset(group, topic);
    }

    /** REJECT: never delivered again; the start offset moves past them. */
    static String reject() throws Exception {
        String group = prefix + "-g-reject";
        String topic = setUp("reject", 1, 5, group);
        int first = 0;
        int again = 0;
        try (KafkaShareConsumer<String, String> c = consumer(group, "explicit")) {
            c.subscribe(List.of(topic));
            long deadline = System.currentTimeMillis() + 30000;
            while (first < 5 && System.currentTimeMillis() < deadline) {
                for (ConsumerRecord<String, String> r : c.poll(Duration.ofMillis(300))) {
                    first++;
                    c.acknowledge(r, AcknowledgeType.REJECT);
                }
                c.commitSync();
            }
            long until = System.currentTimeMillis() + 2000;
            while (System.currentTimeMillis() < until) again += c.poll(Duration.ofMillis(300)).count();
        }
        return "\"first\":" + first + ",\"again\":" + again + ",\"start_offset\":" + startOffset(group, topic);
    }

    /** Released every time: delivered group.share.delivery.count.limit times, then archived. */
    static String limit() throws Exception {
        String group = prefix + "-g-limit";
        String topic = setUp("limit", 1, 1, group);
        int deliveries = 0;
        int last = 0;
        try (KafkaShareConsumer<String, String> c = consumer(group, "explicit")) {
            c.subscribe(List.of(topic));
            long deadline = System.currentTimeMillis() + 30000;
            long quietUntil = Long.MAX_VALUE;
            while (System.currentTimeMillis() < Math.min(deadline, quietUntil)) {
                var records = c.poll(Duration.ofMillis(300));
                for (ConsumerRecord<String, String> r : records) {
                    deliveries++;
                    last = r.deliveryCount().orElse((short) 0);
                    c.acknowledge(r, AcknowledgeType.RELEASE);
                    quietUntil = System.currentTimeMillis() + 2000;
                }
                c.commitSync();
            }
        }
        return "\"deliveries\":" + deliveries + ",\"last_delivery_count\":" + last + ",\"start_offset\":"
            + startOffset(group, topic);
    }

    /** Two members, one partition: the records are shared out, each accepted once. */
    static String shared() throws Exception {
        String group = prefix + "-g-shared";
        String topic = setUp("shared", 1, 200, group);
        Set<String> values = new HashSet<>();
        int deliveries = 0;
        int[] per = new int[2];
        try (KafkaShareConsumer<String, String> a = consumer(group, "implicit");
             KafkaShareConsumer<String, String> b = consumer(group, "implicit")) {
            a.subscribe(List.of(topic));
            b.subscribe(List.of(topic));
            List<KafkaShareConsumer<String, String>> both = List.of(a, b);
            long deadline = System.currentTimeMillis() + 40000;
            while (values.size() < 200 && System.currentTimeMillis() < deadline) {
                for (int i = 0; i < 2; i++) {
                    for (ConsumerRecord<String, String> r : both.get(i).poll(Duration.ofMillis(100))) {
                        values.add(r.value());
                        deliveries++;
                        per[i]++;
                    }
                }
            }
            // both members end up assigned the one partition (the simple assignor shares a partition when members
            // outnumber partitions); Kafka computes assignments on an interval, so wait for it
            int assigned = 0;
            ShareGroupDescription described = null;
            long until = System.currentTimeMillis() + 15000;
            while (System.currentTimeMillis() < until) {
                a.poll(Duration.ofMillis(50));
                b.poll(Duration.ofMillis(50));
                described = admin.describeShareGroups(List.of(group)).describedGroups().get(group)
                    .get(30, TimeUnit.SECONDS);
                assigned = 0;
                for (var m : described.members()) assigned += m.assignment().topicPartitions().size();
                if (assigned == 2) break;
            }
            return "\"values\":" + values.size() + ",\"deliveries\":" + deliveries + ",\"members\":"
                + described.members().size() + ",\"partitions_assigned\":" + assigned;
        }
    }

    /** The admin client's view: listed as a share group while it has a member, deleted once it has none. */
    static String adminScenario() throws Exception {
        String group = prefix + "-g-admin";
        String topic = setUp("admin", 1, 3, group);
        String listedWhileActive;
        try (KafkaShareConsumer<String, String> c = consumer(group, "implicit")) {
            c.subscribe(List.of(topic));
            int got = 0;
            long deadline = System.currentTimeMillis() + 30000;
            while (got < 3 && System.currentTimeMillis() < deadline) got += c.poll(Duration.ofMillis(300)).count();
            listedWhileActive = listing(group);
            String refused;
            try {
                admin.deleteShareGroups(List.of(group)).all().get(30, TimeUnit.SECONDS);
                refused = "deleted";
            } catch (java.util.concurrent.ExecutionException e) {
                refused = e.getCause().getClass().getSimpleName();
            }
            c.close();
            admin.deleteShareGroups(List.of(group)).all().get(30, TimeUnit.SECONDS);
            String after = listing(group);
            return "\"listed\":" + q(listedWhileActive) + ",\"delete_while_active\":" + q(refused)
                + ",\"listed_after_delete\":" + q(after);
        }
    }

    static String listing(String group) throws Exception {
        for (GroupListing g : admin.listGroups(ListGroupsOptions.forShareGroups()).all().get(30, TimeUnit.SECONDS)) {
            if (g.groupId().equals(group)) {
                return g.type().map(Object::toString).orElse("?") + "/" + g.protocol() + "/"
                    + g.groupState().map(Object::toString).orElse("?");
            }
        }
        return "absent";
    }
}
