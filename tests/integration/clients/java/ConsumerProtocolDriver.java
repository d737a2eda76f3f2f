// KIP-848 consumer groups (group.protocol=consumer) with Kafka's Java client against any broker.
//
// Usage: java ConsumerProtocolDriver BOOTSTRAP [SCENARIO...]   (driven by tests/integration/clients/test_java_consumer_protocol.py)
//
// One JVM runs every scenario named (all when none is), each with its own topics and groups, and prints one
// JSON line per scenario: {"scenario": NAME, "ok": true, "ms": N, "result": {...}} or {"ok": false, "error": ...},
// then {"done": true}. Members of a group are KafkaConsumers polled in turn on this thread (50 ms each); the
// rebalance listener of each records its callbacks. Assignments are {topic without prefix: [partitions]}.

import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.function.BooleanSupplier;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.ConsumerGroupDescription;
import org.apache.kafka.clients.admin.GroupListing;
import org.apache.kafka.clients.admin.ListGroupsOptions;
import org.apache.kafka.clients.admin.MemberDescription;
import org.apache.kafka.clients.admin.NewPartitions;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.consumer.CloseOptions;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRebalanceListener;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.consumer.SubscriptionPattern;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.GroupType;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.ByteArraySerializer;

public final class ConsumerProtocolDriver {
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final long TIMEOUT_MS = 30_000;
    private static final List<String> ALL = List.of(
            "join_leave", "range", "static", "commit_resume", "pattern", "unknown_assignor");

    private static String bootstrap;
    private static Admin admin;
    private static final List<Member> OPEN = new ArrayList<>();

    /** One consumer and what its rebalance listener saw. */
    static final class Member implements ConsumerRebalanceListener {
        final String name;
        final String prefix;
        final KafkaConsumer<byte[], byte[]> consumer;
        final List<Map<String, Object>> callbacks = new ArrayList<>();
        int records;

        Member(String name, String prefix, KafkaConsumer<byte[], byte[]> consumer) {
            this.name = name;
            this.prefix = prefix;
            this.consumer = consumer;
        }

        @Override
        public void onPartitionsRevoked(Collection<TopicPartition> partitions) {
            if (!partitions.isEmpty()) callbacks.add(Map.of("revoked", names(prefix, partitions)));
        }

        @Override
        public void onPartitionsAssigned(Collection<TopicPartition> partitions) {
            if (!partitions.isEmpty()) callbacks.add(Map.of("assigned", names(prefix, partitions)));
        }

        Map<String, List<Integer>> assignment() {
            return names(prefix, consumer.assignment());
        }

        void poll() {
            records += consumer.poll(Duration.ofMillis(50)).count();
        }
    }

    static Map<String, List<Integer>> names(String prefix, Collection<TopicPartition> tps) {
        Map<String, List<Integer>> out = new TreeMap<>();
        for (TopicPartition tp : tps) {
            out.computeIfAbsent(tp.topic().substring(prefix.length()), k -> new ArrayList<>()).add(tp.partition());
        }
        out.values().forEach(l -> l.sort(null));
        return out;
    }

    static Member member(String name, String prefix, String group, Map<String, String> extra) {
        Properties p = new Properties();
        p.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        p.put(ConsumerConfig.GROUP_ID_CONFIG, group);
        p.put(ConsumerConfig.GROUP_PROTOCOL_CONFIG, "consumer");
        p.put(ConsumerConfig.CLIENT_ID_CONFIG, name);
        p.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
        p.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
        p.putAll(extra);
        Member m = new Member(name, prefix, new KafkaConsumer<>(p, new ByteArrayDeserializer(), new ByteArrayDeserializer()));
        OPEN.add(m);
        return m;
    }

    static void close(Member m) {
        m.consumer.close();
        OPEN.remove(m);
    }

    static final Map<String, Long> STEPS = new LinkedHashMap<>();

    static void until(String what, List<Member> members, BooleanSupplier done) {
        long started = System.currentTimeMillis();
        try {
            untilInner(what, members, done);
        } finally {
            STEPS.put(what, System.currentTimeMillis() - started);
        }
    }

    static void untilInner(String what, List<Member> members, BooleanSupplier done) {
        long deadline = System.currentTimeMillis() + TIMEOUT_MS;
        while (!done.getAsBoolean()) {
            if (System.currentTimeMillis() > deadline) {
                Map<String, Object> seen = new LinkedHashMap<>();
                for (Member m : members) seen.put(m.name, m.assignment());
                throw new AssertionError("timed out waiting for " + what + "; assignments " + seen);
            }
            for (Member m : members) m.poll();
        }
    }

    static int total(List<Member> members) {
        int n = 0;
        for (Member m : members) n += m.consumer.assignment().size();
        return n;
    }

    /** Every partition assigned once, each member within one of the others. */
    static boolean complete(List<Member> members, int partitions) {
        Set<TopicPartition> seen = new TreeSet<>((a, b) -> a.toString().compareTo(b.toString()));
        int min = Integer.MAX_VALUE, max = 0;
        for (Member m : members) {
            Set<TopicPartition> a = m.consumer.assignment();
            min = Math.min(min, a.size());
            max = Math.max(max, a.size());
            for (TopicPartition tp : a) if (!seen.add(tp)) return false;
        }
        return seen.size() == partitions && max - min <= 1;
    }

    static void topic(String name, int partitions) throws Exception {
        admin.createTopics(List.of(new NewTopic(name, partitions, (short) 1))).all().get();
        long deadline = System.currentTimeMillis() + TIMEOUT_MS;
        while (true) {  // a real broker learns of a new topic a moment after CreateTopics returns
            try {
                if (admin.describeTopics(List.of(name)).allTopicNames().get().get(name).partitions().size() == partitions) {
                    return;
                }
            } catch (Exception e) {
                if (System.currentTimeMillis() > deadline) throw e;
            }
            Thread.sleep(50);
        }
    }

    static void produce(String topic, int partitions, int perPartition) throws Exception {
        Properties p = new Properties();
        p.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        try (KafkaProducer<byte[], byte[]> producer = new KafkaProducer<>(p, new ByteArraySerializer(), new ByteArraySerializer())) {
            for (int part = 0; part < partitions; part++) {
                for (int i = 0; i < perPartition; i++) {
                    producer.send(new ProducerRecord<>(topic, part, null, ("v" + i).getBytes())).get();
                }
            }
        }
    }

    static Map<String, Object> describe(String group, String prefix) throws Exception {
        ConsumerGroupDescription d = admin.describeConsumerGroups(List.of(group)).all().get().get(group);
        Map<String, Object> out = new LinkedHashMap<>();
        out.put("type", d.type().toString());
        out.put("state", d.groupState().toString());
        out.put("assignor", d.partitionAssignor());
        out.put("group_epoch", d.groupEpoch().orElse(-1));
        out.put("assignment_epoch", d.targetAssignmentEpoch().orElse(-1));
        List<Map<String, Object>> members = new ArrayList<>();
        for (MemberDescription m : d.members()) {
            Map<String, Object> md = new LinkedHashMap<>();
            md.put("client_id", m.clientId());
            md.put("instance_id", m.groupInstanceId().orElse(null));
            md.put("member_epoch", m.memberEpoch().orElse(-1));
            md.put("assignment", names(prefix, m.assignment().topicPartitions()));
            md.put("target", m.targetAssignment().map(t -> names(prefix, t.topicPartitions())).orElse(null));
            md.put("upgraded", m.upgraded().orElse(null));
            members.add(md);
        }
        members.sort((a, b) -> a.get("client_id").toString().compareTo(b.get("client_id").toString()));
        out.put("members", members);
        return out;
    }

    // ------------------------------------------------------------------------------------ scenarios

    /** Two members share a topic; a third joins; one leaves: every step to a complete assignment. */
    static Map<String, Object> joinLeave() throws Exception {
        String prefix = "cp-jl-", group = "cp-jl", t = prefix + "t";
        topic(t, 6);
        Map<String, Object> out = new LinkedHashMap<>();
        Member a = member("A", prefix, group, Map.of());
        a.consumer.subscribe(List.of(t), a);
        until("A alone", List.of(a), () -> a.consumer.assignment().size() == 6);
        out.put("alone", a.assignment());
        Member b = member("B", prefix, group, Map.of());
        b.consumer.subscribe(List.of(t), b);
        until("A and B", List.of(a, b), () -> complete(List.of(a, b), 6));
        Member c = member("C", prefix, group, Map.of());
        c.consumer.subscribe(List.of(t), c);
        until("A, B and C", List.of(a, b, c), () -> complete(List.of(a, b, c), 6));
        out.put("sizes3", List.of(a.consumer.assignment().size(), b.consumer.assignment().size(), c.consumer.assignment().size()));
        until("describe Stable", List.of(a, b, c), () -> {
            try {
                return describe(group, prefix).get("state").equals("Stable");
            } catch (Exception e) {
                throw new RuntimeException(e);
            }
        });
        out.put("describe3", describe(group, prefix));
        List<Map<String, Object>> listed = new ArrayList<>();
        for (GroupListing g : admin.listGroups(new ListGroupsOptions().withTypes(Set.of(GroupType.CONSUMER))).all().get()) {
            if (g.groupId().equals(group)) {
                listed.add(Map.of("type", g.type().map(Object::toString).orElse("?"),
                        "protocol", g.protocol(), "state", g.groupState().map(Object::toString).orElse("?")));
            }
        }
        out.put("listed", listed);
        out.put("classic_listing", admin.listGroups(new ListGroupsOptions().withTypes(Set.of(GroupType.CLASSIC)))
                .all().get().stream().anyMatch(g -> g.groupId().equals(group)));
        close(c);
        until("A and B after C left", List.of(a, b), () -> complete(List.of(a, b), 6));
        out.put("callbacks_a", a.callbacks.size() >= 3);
        close(b);
        until("A alone again", List.of(a), () -> a.consumer.assignment().size() == 6);
        close(a);
        out.put("empty_state", describe(group, prefix).get("state"));
        return out;
    }

    /** The server-side range assignor: each member a contiguous range of each topic. */
    static Map<String, Object> range() throws Exception {
        String prefix = "cp-range-", group = "cp-range", t1 = prefix + "t1", t2 = prefix + "t2";
        topic(t1, 4);
        topic(t2, 4);
        Member a = member("A", prefix, group, Map.of(ConsumerConfig.GROUP_REMOTE_ASSIGNOR_CONFIG, "range"));
        Member b = member("B", prefix, group, Map.of(ConsumerConfig.GROUP_REMOTE_ASSIGNOR_CONFIG, "range"));
        a.consumer.subscribe(List.of(t1, t2), a);
        b.consumer.subscribe(List.of(t1, t2), b);
        until("range", List.of(a, b), () -> complete(List.of(a, b), 8));
        Map<String, Object> out = new LinkedHashMap<>();
        // co-partitioned: a member holds the same partitions of both topics
        out.put("same_partitions_of_both", a.assignment().get("t1").equals(a.assignment().get("t2"))
                && b.assignment().get("t1").equals(b.assignment().get("t2")));
        List<List<Integer>> ranges = new ArrayList<>(List.of(a.assignment().get("t1"), b.assignment().get("t1")));
        ranges.sort((x, y) -> x.get(0) - y.get(0));
        out.put("ranges", ranges);
        out.put("assignor", describe(group, prefix).get("assignor"));
        close(a);
        close(b);
        return out;
    }

    /** A static member leaves (epoch -2) and comes back under a new member id: same partitions, no rebalance. */
    static Map<String, Object> staticMember() throws Exception {
        String prefix = "cp-static-", group = "cp-static", t = prefix + "t";
        topic(t, 4);
        Member a = member("A", prefix, group, Map.of(ConsumerConfig.GROUP_INSTANCE_ID_CONFIG, "inst-a"));
        Member b = member("B", prefix, group, Map.of(ConsumerConfig.GROUP_INSTANCE_ID_CONFIG, "inst-b"));
        a.consumer.subscribe(List.of(t), a);
        b.consumer.subscribe(List.of(t), b);
        until("both static members", List.of(a, b), () -> complete(List.of(a, b), 4));
        Map<String, Object> out = new LinkedHashMap<>();
        Map<String, List<Integer>> before = a.assignment();
        int epochBefore = (int) describe(group, prefix).get("group_epoch");
        close(a);
        Map<String, Object> left = describe(group, prefix);
        out.put("members_while_away", ((List<?>) left.get("members")).size());
        Member a2 = member("A2", prefix, group, Map.of(ConsumerConfig.GROUP_INSTANCE_ID_CONFIG, "inst-a"));
        a2.consumer.subscribe(List.of(t), a2);
        until("A back", List.of(a2, b), () -> a2.consumer.assignment().size() == before.values().stream().mapToInt(List::size).sum());
        out.put("same_partitions", a2.assignment().equals(before));
        out.put("group_epoch_unchanged", (int) describe(group, prefix).get("group_epoch") == epochBefore);
        out.put("b_callbacks", b.callbacks.size());
        for (Member m : List.of(a2, b)) {  // for good (epoch -1, KIP-1092), not until the session ends
            m.consumer.close(CloseOptions.groupMembershipOperation(CloseOptions.GroupMembershipOperation.LEAVE_GROUP));
            OPEN.remove(m);
        }
        out.put("empty_after_leaving_for_good", ((List<?>) describe(group, prefix).get("members")).isEmpty());
        return out;
    }

    /** Offsets committed with the member epoch; a new member resumes from them. */
    static Map<String, Object> commitResume() throws Exception {
        String prefix = "cp-commit-", group = "cp-commit", t = prefix + "t";
        topic(t, 2);
        produce(t, 2, 5);
        Member a = member("A", prefix, group, Map.of());
        a.consumer.subscribe(List.of(t), a);
        until("10 records", List.of(a), () -> a.records >= 10);
        a.consumer.commitSync();
        Map<String, Object> out = new LinkedHashMap<>();
        Map<String, Long> committed = new TreeMap<>();
        admin.listConsumerGroupOffsets(group).partitionsToOffsetAndMetadata().get()
                .forEach((tp, om) -> committed.put(tp.topic().substring(prefix.length()) + "-" + tp.partition(), om.offset()));
        out.put("committed", committed);
        close(a);
        produce(t, 2, 1);
        Member b = member("B", prefix, group, Map.of());
        b.consumer.subscribe(List.of(t), b);
        until("2 more records", List.of(b), () -> b.records >= 2);
        for (int i = 0; i < 5; i++) b.poll();
        out.put("resumed_records", b.records);
        Map<TopicPartition, OffsetAndMetadata> mine = b.consumer.committed(b.consumer.assignment());
        out.put("committed_seen_by_member", mine.size());
        close(b);
        return out;
    }

    /** Partitions added to a subscribed topic reach the members (a new group epoch). */
    static Map<String, Object> partitionsAdded() throws Exception {
        String prefix = "cp-grow-", group = "cp-grow", t = prefix + "t";
        topic(t, 2);
        Member a = member("A", prefix, group, Map.of(ConsumerConfig.METADATA_MAX_AGE_CONFIG, "500"));
        Member b = member("B", prefix, group, Map.of(ConsumerConfig.METADATA_MAX_AGE_CONFIG, "500"));
        a.consumer.subscribe(List.of(t), a);
        b.consumer.subscribe(List.of(t), b);
        until("2 partitions", List.of(a, b), () -> complete(List.of(a, b), 2));
        int epoch = (int) describe(group, prefix).get("group_epoch");
        admin.createPartitions(Map.of(t, NewPartitions.increaseTo(4))).all().get();
        until("4 partitions", List.of(a, b), () -> complete(List.of(a, b), 4));
        Map<String, Object> out = new LinkedHashMap<>();
        out.put("epoch_went_up", (int) describe(group, prefix).get("group_epoch") > epoch);
        out.put("total", total(List.of(a, b)));
        close(a);
        close(b);
        return out;
    }

    /** A regular expression subscription (RE2J on the broker): matching topics, new ones included. */
    static Map<String, Object> pattern() throws Exception {
        String prefix = "cp-re-", group = "cp-re";
        topic(prefix + "a1", 1);
        topic(prefix + "b1", 1);
        Member a = member("A", prefix, group, Map.of());
        a.consumer.subscribe(new SubscriptionPattern("cp-re-a.*"), a);
        until("a1", List.of(a), () -> a.consumer.assignment().size() == 1);
        Map<String, Object> out = new LinkedHashMap<>();
        out.put("first", a.assignment());
        topic(prefix + "a2", 2);
        until("a1 and a2", List.of(a), () -> a.consumer.assignment().size() == 3);
        out.put("after_new_topic", a.assignment());
        close(a);
        return out;
    }

    /** An assignor the broker does not have: the consumer's poll fails with it. */
    static Map<String, Object> unknownAssignor() throws Exception {
        String prefix = "cp-bad-", group = "cp-bad", t = prefix + "t";
        topic(t, 1);
        Member a = member("A", prefix, group, Map.of(ConsumerConfig.GROUP_REMOTE_ASSIGNOR_CONFIG, "bogus"));
        a.consumer.subscribe(List.of(t), a);
        Map<String, Object> out = new LinkedHashMap<>();
        long deadline = System.currentTimeMillis() + TIMEOUT_MS;
        String error = null;
        while (error == null && System.currentTimeMillis() < deadline) {
            try {
                a.poll();
            } catch (Exception e) {
                error = e.getClass().getSimpleName() + ": " + e.getMessage();
            }
        }
        out.put("error", error);
        close(a);
        return out;
    }

    public static void main(String[] args) throws Exception {
        bootstrap = args[0];
        List<String> scenarios = args.length > 1 ? List.of(args).subList(1, args.length) : ALL;
        Properties ap = new Properties();
        ap.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        admin = Admin.create(ap);
        for (String name : scenarios) {
            long start = System.currentTimeMillis();
            Map<String, Object> line = new LinkedHashMap<>();
            line.put("scenario", name);
            try {
                Map<String, Object> result = switch (name) {
                    case "join_leave" -> joinLeave();
                    case "range" -> range();
                    case "static" -> staticMember();
                    case "commit_resume" -> commitResume();
                    case "partitions_added" -> partitionsAdded();
                    case "pattern" -> pattern();
                    case "unknown_assignor" -> unknownAssignor();
                    default -> throw new IllegalArgumentException("no scenario " + name);
                };
                line.put("ok", true);
                line.put("ms", System.currentTimeMillis() - start);
                line.put("result", result);
                line.put("steps_ms", new LinkedHashMap<>(STEPS));
                STEPS.clear();
            } catch (Throwable e) {
                StringWriter w = new StringWriter();
                e.printStackTrace(new PrintWriter(w));
                line.put("ok", false);
                line.put("error", w.toString());
            } finally {
                for (Member m : new ArrayList<>(OPEN)) {
                    try {
                        close(m);
                    } catch (Exception ignored) {
                        OPEN.remove(m);
                    }
                }
            }
            System.out.println(JSON.writeValueAsString(line));
            System.out.flush();
        }
        admin.close();
        System.out.println("{\"done\": true}");
    }
}
