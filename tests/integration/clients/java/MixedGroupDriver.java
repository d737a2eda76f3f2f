// Mixed groups (KIP-848's upgrade and downgrade paths) with Kafka's Java client against any broker.
//
// Usage: java MixedGroupDriver BOOTSTRAP [SCENARIO...]   (driven by tests/integration/clients/test_java_mixed_groups.py)
//
// One JVM runs every scenario named (all when none is), each with its own topic and group, and prints one JSON
// line per scenario: {"scenario": NAME, "ok": true, "ms": N, "result": {...}} or {"ok": false, "error": ...},
// then {"done": true}. Members are KafkaConsumers (group.protocol=classic or consumer) polled in turn on this
// thread; each commits what it consumed after every poll and in onPartitionsRevoked, and every record each
// member gets is tallied, so a scenario can say whether every record was consumed exactly once.

import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
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
import org.apache.kafka.clients.admin.MemberDescription;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRebalanceListener;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.ByteArraySerializer;

public final class MixedGroupDriver {
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final long TIMEOUT_MS = 60_000;
    private static final List<String> ALL = List.of("mixed", "rolling");

    private static String bootstrap;
    private static Admin admin;
    private static final List<Member> OPEN = new ArrayList<>();
    /** "topic-partition@offset" -> how many times a member got it, in the running scenario. */
    private static final Map<String, Integer> SEEN = new HashMap<>();
    private static int produced;

    /** One consumer; it commits as it goes and when it gives partitions up. */
    static final class Member implements ConsumerRebalanceListener {
        final String name;
        final String protocol;
        final KafkaConsumer<byte[], byte[]> consumer;
        int commitFailures;
        /** The next offset of each partition it consumed from: what it commits. */
        final Map<TopicPartition, Long> next = new HashMap<>();

        Member(String name, String protocol, KafkaConsumer<byte[], byte[]> consumer) {
            this.name = name;
            this.protocol = protocol;
            this.consumer = consumer;
        }

        @Override
        public void onPartitionsRevoked(Collection<TopicPartition> partitions) {
            if (partitions.isEmpty()) return;
            Map<TopicPartition, OffsetAndMetadata> positions = new HashMap<>();
            for (TopicPartition tp : partitions) {
                Long offset = next.remove(tp);
                if (offset != null) positions.put(tp, new OffsetAndMetadata(offset));
            }
            if (positions.isEmpty()) return;
            try {
                consumer.commitSync(positions);
            } catch (Exception e) {
                commitFailures++;
            }
        }

        @Override
        public void onPartitionsAssigned(Collection<TopicPartition> partitions) {
        }

        void poll() {
            var records = consumer.poll(Duration.ofMillis(50));
            for (ConsumerRecord<byte[], byte[]> r : records) {
                SEEN.merge(r.topic() + "-" + r.partition() + "@" + r.offset(), 1, Integer::sum);
                next.put(new TopicPartition(r.topic(), r.partition()), r.offset() + 1);
            }
            if (!records.isEmpty()) {
                Map<TopicPartition, OffsetAndMetadata> positions = new HashMap<>();
                next.forEach((tp, offset) -> positions.put(tp, new OffsetAndMetadata(offset)));
                try {
                    consumer.commitSync(positions);
                } catch (Exception e) {
                    commitFailures++;  // committed with the next poll's positions, or on revocation
                }
            }
        }
    }

    static Member member(String name, String group, String topic, String protocol) {
        Properties p = new Properties();
        p.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        p.put(ConsumerConfig.GROUP_ID_CONFIG, group);
        p.put(ConsumerConfig.GROUP_PROTOCOL_CONFIG, protocol);
        p.put(ConsumerConfig.CLIENT_ID_CONFIG, name);
        p.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
        p.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
        if (protocol.equals("classic")) {
            p.put(ConsumerConfig.HEARTBEAT_INTERVAL_MS_CONFIG, "500");  // told to rejoin within 0.5 s
        }
        Member m = new Member(name, protocol, new KafkaConsumer<>(p, new ByteArrayDeserializer(), new ByteArrayDeserializer()));
        m.consumer.subscribe(List.of(topic), m);
        OPEN.add(m);
        return m;
    }

    static void close(Member m) {
        m.consumer.close();
        OPEN.remove(m);
    }

    static void until(String what, List<Member> members, BooleanSupplier done) {
        long deadline = System.currentTimeMillis() + TIMEOUT_MS;
        while (!done.getAsBoolean()) {
            if (System.currentTimeMillis() > deadline) {
                Map<String, Object> seen = new LinkedHashMap<>();
                for (Member m : members) seen.put(m.name, m.consumer.assignment().toString());
                throw new AssertionError("timed out waiting for " + what + "; assignments " + seen
                        + "; consumed " + SEEN.size() + " of " + produced);
            }
            for (Member m : members) m.poll();
        }
    }

    /** Every partition assigned to exactly one member, and every record produced so far consumed. */
    static boolean settled(List<Member> members, int partitions) {
        Set<String> seen = new TreeSet<>();
        for (Member m : members) {
            for (TopicPartition tp : m.consumer.assignment()) if (!seen.add(tp.toString())) return false;
        }
        return seen.size() == partitions && SEEN.size() >= produced;
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
                    producer.send(new ProducerRecord<>(topic, part, null, ("v" + i).getBytes()));
                }
            }
            producer.flush();
        }
        produced += partitions * perPartition;
    }

    /** The group as Admin.describeConsumerGroups sees it: its type, state and each member's protocol. */
    static Map<String, Object> describe(String group) throws Exception {
        ConsumerGroupDescription d = admin.describeConsumerGroups(List.of(group)).all().get().get(group);
        Map<String, Object> out = new LinkedHashMap<>();
        out.put("type", d.type().toString());
        out.put("state", d.groupState().toString());
        Map<String, Object> members = new TreeMap<>();
        for (MemberDescription m : d.members()) {
            // upgraded(): true for a member on the consumer protocol, false for a classic one; absent in a
            // classic group (DescribeGroups has no member types)
            members.put(m.clientId(), m.upgraded().map(u -> u ? "consumer" : "classic").orElse("-"));
        }
        out.put("members", members);
        return out;
    }

    static Map<String, Object> tally() {
        int duplicates = 0;
        for (int n : SEEN.values()) if (n > 1) duplicates++;
        Map<String, Object> out = new LinkedHashMap<>();
        out.put("produced", produced);
        out.put("consumed", SEEN.size());
        out.put("duplicates", duplicates);
        return out;
    }

    // ------------------------------------------------------------------------------------ scenarios

    /** A classic member alone; a consumer-protocol member joins (the group is upgraded); it leaves again
     * (the group is downgraded): each step to one owner per partition and every record consumed. */
    static Map<String, Object> mixed() throws Exception {
        String group = "mg-mixed", t = "mg-mixed-t";
        topic(t, 4);
        Map<String, Object> out = new LinkedHashMap<>();
        produce(t, 4, 5);
        Member a = member("A", group, t, "classic");
        until("A alone (classic group)", List.of(a), () -> settled(List.of(a), 4));
        out.put("classic_alone", describe(group));
        Member b = member("B", group, t, "consumer");
        produce(t, 4, 5);
        until("A and B (upgraded)", List.of(a, b), () -> settled(List.of(a, b), 4)
                && !a.consumer.assignment().isEmpty() && !b.consumer.assignment().isEmpty());
        until("describe Stable", List.of(a, b), () -> {
            try {
                return describe(group).get("state").equals("Stable");
            } catch (Exception e) {
                throw new RuntimeException(e);
            }
        });
        out.put("mixed", describe(group));
        close(b);
        produce(t, 4, 5);
        until("A alone again (downgraded)", List.of(a), () -> settled(List.of(a), 4));
        until("describe Stable", List.of(a), () -> {
            try {
                return describe(group).get("state").equals("Stable");
            } catch (Exception e) {
                throw new RuntimeException(e);
            }
        });
        out.put("downgraded", describe(group));
        close(a);
        out.putAll(tally());
        return out;
    }

    /** Three classic members restarted one by one on the consumer protocol, then one by one back. */
    static Map<String, Object> rolling() throws Exception {
        String group = "mg-roll", t = "mg-roll-t";
        int partitions = 6;
        topic(t, partitions);
        Map<String, Object> out = new LinkedHashMap<>();
        List<Member> members = new ArrayList<>();
        for (String name : List.of("A", "B", "C")) members.add(member(name, group, t, "classic"));
        produce(t, partitions, 5);
        until("three classic members", members, () -> settled(members, partitions));
        List<Object> types = new ArrayList<>();
        for (String protocol : List.of("consumer", "classic")) {
            for (int i = 0; i < members.size(); i++) {
                Member old = members.get(i);
                close(old);
                members.set(i, member(old.name, group, t, protocol));
                produce(t, partitions, 5);
                until(old.name + " restarted on " + protocol, members, () -> settled(members, partitions));
                types.add(describe(group).get("type"));
            }
            out.put("all_" + protocol, describe(group).get("members"));
        }
        out.put("types", types);
        for (Member m : new ArrayList<>(members)) close(m);
        out.putAll(tally());
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
            SEEN.clear();
            produced = 0;
            try {
                Map<String, Object> result = switch (name) {
                    case "mixed" -> mixed();
                    case "rolling" -> rolling();
                    default -> throw new IllegalArgumentException("no scenario " + name);
                };
                line.put("ok", true);
                line.put("ms", System.currentTimeMillis() - start);
                line.put("result", result);
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
