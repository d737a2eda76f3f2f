// Consumer-group scenarios with Kafka's official Java client (kafka-clients) against a fakekafka broker.
//
// Usage: java GroupDriver BOOTSTRAP [SCENARIO...]   (driven by tests/integration/clients/test_java_groups.py)
//
// One JVM runs every scenario named (all of them when none is), each with its own groups and topics, and
// prints one JSON line per scenario on stdout:
//     {"scenario": NAME, "ok": true, "ms": N, "result": {...}}   or   {"scenario": NAME, "ok": false, "error": TRACE}
// then {"done": true}. The members of a group are KafkaConsumers polled in turn on this one thread (50 ms
// each), so a JoinGroup parked by the broker simply stays in flight until the next turn; their rebalance
// listeners record every callback. At chosen points a scenario asks the test, on stdout, to look at the
// broker ({"request": "snapshot", ...}) or to act on it ({"request": "force_rebalance" | "expire", ...}) and
// waits for one line on stdin. Assignments are reported as {topic without the scenario's prefix: [partitions]}
// per member name; expected failures as the exception's simple class name.

import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;
import java.util.regex.Pattern;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.ConsumerGroupDescription;
import org.apache.kafka.clients.admin.ConsumerGroupListing;
import org.apache.kafka.clients.admin.DeleteConsumerGroupOffsetsResult;
import org.apache.kafka.clients.admin.ListConsumerGroupsOptions;
import org.apache.kafka.clients.admin.MemberDescription;
import org.apache.kafka.clients.admin.NewPartitions;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRebalanceListener;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.CooperativeStickyAssignor;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.consumer.RangeAssignor;
import org.apache.kafka.clients.consumer.RoundRobinAssignor;
import org.apache.kafka.clients.consumer.StickyAssignor;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.ConsumerGroupState;
import org.apache.kafka.common.KafkaFuture;
import org.apache.kafka.common.Node;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.ByteArraySerializer;

public final class GroupDriver {
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final long TIMEOUT_MS = 20_000;
    private static final List<String> ALL = List.of(
            "range", "range_seed2", "roundrobin", "sticky", "cooperative", "static", "commit_resume",
            "stale_commits", "pattern", "admin");
    private static final String RANGE = RangeAssignor.class.getName();
    private static final String ROUND_ROBIN = RoundRobinAssignor.class.getName();
    private static final String STICKY = StickyAssignor.class.getName();
    private static final String COOPERATIVE = CooperativeStickyAssignor.class.getName();

    private static String bootstrap;
    private static Admin admin;
    private static final BufferedReader STDIN =
            new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
    /** Members opened by the running scenario; closed when it ends, however it ends. */
    private static final List<Member> OPEN = new ArrayList<>();

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
            } finally {
                for (Member m : new ArrayList<>(OPEN)) {
                    m.close();
                }
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
            case "range": return range();
            case "range_seed2": return rangeSeed2();
            case "roundrobin": return roundRobin();
            case "sticky": return sticky();
            case "cooperative": return cooperative();
            case "static": return staticMembership();
            case "commit_resume": return commitResume();
            case "stale_commits": return staleCommits();
            case "pattern": return pattern();
            case "admin": return adminGroups();
            default: throw new IllegalArgumentException("unknown scenario " + name);
        }
    }

    // ------------------------------------------------------------------------------------ a group member

    /** A KafkaConsumer in a group, with every rebalance callback it got. */
    private static final class Member implements ConsumerRebalanceListener {
        final String name;
        final KafkaConsumer<byte[], byte[]> consumer;
        final List<Map<String, Object>> events = new ArrayList<>();
        final List<ConsumerRecord<byte[], byte[]>> records = new ArrayList<>();
        private boolean closed;

        /** name is the client.id, which starts the member id the broker gives ("C0-00000003-fakekafka"). */
        Member(String group, String name, String assignor, Object... overrides) {
            this.name = name;
            Object[] all = new Object[overrides.length + 10];
            Object[] base = {ConsumerConfig.GROUP_ID_CONFIG, group, ConsumerConfig.CLIENT_ID_CONFIG, name,
                             ConsumerConfig.PARTITION_ASSIGNMENT_STRATEGY_CONFIG, assignor,
                             ConsumerConfig.SESSION_TIMEOUT_MS_CONFIG, 3_000,
                             ConsumerConfig.HEARTBEAT_INTERVAL_MS_CONFIG, 100};
            System.arraycopy(base, 0, all, 0, base.length);
            System.arraycopy(overrides, 0, all, base.length, overrides.length);
            this.consumer = consumer(all);
            OPEN.add(this);
        }

        Member subscribe(String... topics) {
            consumer.subscribe(List.of(topics), this);
            return this;
        }

        @Override
        public void onPartitionsRevoked(Collection<TopicPartition> partitions) {
            event("revoked", partitions);
        }

        @Override
        public void onPartitionsAssigned(Collection<TopicPartition> partitions) {
            event("assigned", partitions);
        }

        @Override
        public void onPartitionsLost(Collection<TopicPartition> partitions) {
            event("lost", partitions);
        }

        private void event(String kind, Collection<TopicPartition> partitions) {
            events.add(map("event", kind, "partitions", names(partitions), "generation", generation()));
        }

        void poll(long ms) {
            for (ConsumerRecord<byte[], byte[]> r : consumer.poll(Duration.ofMillis(ms))) {
                records.add(r);
            }
        }

        int generation() {
            return consumer.groupMetadata().generationId();
        }

        String memberId() {
            return consumer.groupMetadata().memberId();
        }

        Set<TopicPartition> owned() {
            return consumer.assignment();
        }

        void close() {
            if (!closed) {
                closed = true;
                OPEN.remove(this);
                try {
                    consumer.close(Duration.ofSeconds(5));
                } catch (RuntimeException e) {
                    // a fenced member may fail to close cleanly; nothing to report
                }
            }
        }

        @Override
        public String toString() {
            return name + "(" + memberId() + ", generation " + generation() + ", " + new TreeSet<>(names(owned()))
                   + ")";
        }
    }

    /** Polls every member in turn (50 ms each) until `done` holds; fails after TIMEOUT_MS. */
    private static void pollUntil(List<Member> members, String what, BooleanSupplier done) {
        long deadline = System.currentTimeMillis() + TIMEOUT_MS;
        while (!done.getAsBoolean()) {
            if (System.currentTimeMillis() > deadline) {
                throw new AssertionError("timed out waiting for " + what + ": " + members);
            }
            for (Member m : members) {
                m.poll(50);
            }
        }
    }

    /** Polls until the members share one generation and between them own exactly `expected`, each
     *  partition once, and (when `everyoneOwns`) every member owns something. */
    private static void settle(List<Member> members, Set<TopicPartition> expected, boolean everyoneOwns) {
        pollUntil(members, "the group to settle on " + new TreeSet<>(names(expected)), () -> {
            int generation = members.get(0).generation();
            List<TopicPartition> owned = new ArrayList<>();
            for (Member m : members) {
                if (m.generation() != generation || generation <= 0 || (everyoneOwns && m.owned().isEmpty())) {
                    return false;
                }
                owned.addAll(m.owned());
            }
            return owned.size() == expected.size() && new HashSet<>(owned).equals(expected);
        });
    }

    private static void settle(List<Member> members, Set<TopicPartition> expected) {
        settle(members, expected, false);
    }

    /** {member name: {topic without prefix: [partitions]}} */
    private static Map<String, Object> assignments(List<Member> members, String prefix) {
        Map<String, Object> out = new TreeMap<>();
        for (Member m : members) {
            out.put(m.name, byTopic(m.owned(), prefix));
        }
        return out;
    }

    private static Map<String, List<Integer>> byTopic(Collection<TopicPartition> partitions, String prefix) {
        Map<String, List<Integer>> out = new TreeMap<>();
        for (TopicPartition tp : partitions) {
            out.computeIfAbsent(tp.topic().substring(prefix.length()), t -> new ArrayList<>()).add(tp.partition());
        }
        out.values().forEach(l -> l.sort(null));
        return out;
    }

    /** A copy of the member's callbacks from index `mark` on. */
    private static List<Map<String, Object>> since(Member m, int mark) {
        return new ArrayList<>(m.events.subList(mark, m.events.size()));
    }

    private static Map<String, Object> generations(List<Member> members) {
        Map<String, Object> out = new TreeMap<>();
        for (Member m : members) {
            out.put(m.name, m.generation());
        }
        return out;
    }

    private static Map<String, Object> memberIds(List<Member> members) {
        Map<String, Object> out = new TreeMap<>();
        for (Member m : members) {
            out.put(m.name, m.memberId());
        }
        return out;
    }

    private static Map<String, Object> events(List<Member> members) {
        Map<String, Object> out = new TreeMap<>();
        for (Member m : members) {
            out.put(m.name, new ArrayList<>(m.events));
        }
        return out;
    }

    // ----------------------------------------------------------------------------- assignor examples

    /** Seed 001, RangeAssignor: C0 and C1 subscribe t0 and t1, first with 4 partitions each, then 3. */
    private static Object range() throws Exception {
        Map<String, Object> out = new LinkedHashMap<>();
        for (int n : new int[] {4, 3}) {
            String group = "range" + n;
            String prefix = group + "-";
            createTopics(prefix, "t0", n, "t1", n);
            List<Member> ms = List.of(new Member(group, "C0", RANGE).subscribe(prefix + "t0", prefix + "t1"),
                                      new Member(group, "C1", RANGE).subscribe(prefix + "t0", prefix + "t1"));
            settle(ms, partitions(prefix, "t0", n, "t1", n));
            snapshot(group, group);
            out.put(group, map("assignment", assignments(ms, prefix), "generations", generations(ms)));
            ms.forEach(Member::close);
        }
        return out;
    }

    /** Seed 002, RangeAssignor: consumers C1-0, C2-0, C3-0 on T1 and T2 (10 partitions each) and T3 (11). */
    private static Object rangeSeed2() throws Exception {
        String group = "range10";
        String prefix = "range10-";
        createTopics(prefix, "T1", 10, "T2", 10, "T3", 11);
        List<Member> ms = new ArrayList<>();
        for (String name : List.of("C1-0", "C2-0", "C3-0")) {
            ms.add(new Member(group, name, RANGE).subscribe(prefix + "T1", prefix + "T2", prefix + "T3"));
        }
        settle(ms, partitions(prefix, "T1", 10, "T2", 10, "T3", 11));
        snapshot(group, group);
        return map("assignment", assignments(ms, prefix), "generations", generations(ms));
    }

    /** Seed 001, RoundRobinAssignor: C0 subscribes t0, C1 t0 and t1, C2 t0, t1 and t2 (1, 2, 3 partitions). */
    private static Object roundRobin() throws Exception {
        String group = "rr";
        String prefix = "rr-";
        createTopics(prefix, "t0", 1, "t1", 2, "t2", 3);
        List<Member> ms = List.of(
                new Member(group, "C0", ROUND_ROBIN).subscribe(prefix + "t0"),
                new Member(group, "C1", ROUND_ROBIN).subscribe(prefix + "t0", prefix + "t1"),
                new Member(group, "C2", ROUND_ROBIN).subscribe(prefix + "t0", prefix + "t1", prefix + "t2"));
        settle(ms, partitions(prefix, "t0", 1, "t1", 2, "t2", 3));
        snapshot(group, group);
        return map("assignment", assignments(ms, prefix), "generations", generations(ms));
    }

    /** Seed 001/002, StickyAssignor: C0, C1, C2 on t0..t3 (2 partitions each); then C1 leaves. */
    private static Object sticky() throws Exception {
        return stickyExample("sticky", STICKY);
    }

    private static Map<String, Object> stickyExample(String group, String assignor) throws Exception {
        String prefix = group + "-";
        createTopics(prefix, "t0", 2, "t1", 2, "t2", 2, "t3", 2);
        String[] topics = {prefix + "t0", prefix + "t1", prefix + "t2", prefix + "t3"};
        Set<TopicPartition> all = partitions(prefix, "t0", 2, "t1", 2, "t2", 2, "t3", 2);
        Member c0 = new Member(group, "C0", assignor).subscribe(topics);
        Member c1 = new Member(group, "C1", assignor).subscribe(topics);
        Member c2 = new Member(group, "C2", assignor).subscribe(topics);
        List<Member> three = List.of(c0, c1, c2);
        settle(three, all);
        snapshot(group + "-1", group);
        Map<String, Object> out = new LinkedHashMap<>();
        out.put("first", map("assignment", assignments(three, prefix), "generations", generations(three)));
        int mark0 = c0.events.size();
        int mark2 = c2.events.size();
        c1.close();   // a dynamic member leaves the group (LeaveGroup)
        List<Member> two = List.of(c0, c2);
        settle(two, all);
        snapshot(group + "-2", group);
        out.put("after_c1_left", map("assignment", assignments(two, prefix), "generations", generations(two),
                                     "events", map("C0", since(c0, mark0),
                                                   "C2", since(c2, mark2))));
        return out;
    }

    /** The sticky example with CooperativeStickyAssignor, then a third member C3 joins: the partitions it
     *  gets are first revoked from their owners (one generation), then assigned to it (the next). */
    private static Object cooperative() throws Exception {
        String group = "coop";
        Map<String, Object> out = stickyExample(group, COOPERATIVE);
        String prefix = group + "-";
        Member c0 = OPEN.stream().filter(m -> m.name.equals("C0")).findFirst().orElseThrow();
        Member c2 = OPEN.stream().filter(m -> m.name.equals("C2")).findFirst().orElseThrow();
        int mark0 = c0.events.size();
        int mark2 = c2.events.size();
        Member c3 = new Member(group, "C3", COOPERATIVE)
                .subscribe(prefix + "t0", prefix + "t1", prefix + "t2", prefix + "t3");
        List<Member> ms = List.of(c0, c2, c3);
        settle(ms, partitions(prefix, "t0", 2, "t1", 2, "t2", 2, "t3", 2), true);
        snapshot(group + "-3", group);
        out.put("after_c3_joined", map("assignment", assignments(ms, prefix), "generations", generations(ms),
                                       "events", map("C0", since(c0, mark0),
                                                     "C2", since(c2, mark2),
                                                     "C3", since(c3, 0))));
        return out;
    }

    // ------------------------------------------------------------------------------- static membership

    private static Member staticMember(String group, String instanceId, String clientId) {
        // session.timeout.ms is what a restart must fit in; closing a static member sends no LeaveGroup
        return new Member(group, clientId, RANGE, ConsumerConfig.GROUP_INSTANCE_ID_CONFIG, instanceId,
                          ConsumerConfig.SESSION_TIMEOUT_MS_CONFIG, 10_000);
    }

    private static Object staticMembership() throws Exception {
        String group = "static";
        String topic = "static-t0";
        createTopics("static-", "t0", 4);
        Set<TopicPartition> all = partitions("static-", "t0", 4);
        Member s0 = staticMember(group, "S0", "S0-first").subscribe(topic);
        Member s1 = staticMember(group, "S1", "S1-first").subscribe(topic);
        settle(List.of(s0, s1), all);
        snapshot("static-1", group);
        Map<String, Object> out = new LinkedHashMap<>();
        out.put("before", map("assignment", byName("S0", s0, "S1", s1), "generations", generationsOf(s0, s1),
                              "member_ids", map("S0", s0.memberId(), "S1", s1.memberId())));

        s1.close();   // no LeaveGroup: the broker keeps S1's place until its session times out
        Member s1b = staticMember(group, "S1", "S1-restarted").subscribe(topic);
        pollUntil(List.of(s0, s1b), "the restarted S1 to get its partitions", () -> !s1b.owned().isEmpty());
        snapshot("static-2", group);
        out.put("restarted", map("assignment", byName("S0", s0, "S1", s1b), "generations", generationsOf(s0, s1b),
                                 "member_ids", map("S0", s0.memberId(), "S1", s1b.memberId()),
                                 "S0_events", new ArrayList<>(s0.events)));

        Member s0b = staticMember(group, "S0", "S0-duplicate").subscribe(topic);
        pollUntil(List.of(s0b, s1b), "the duplicate S0 to get S0's partitions", () -> !s0b.owned().isEmpty());
        String fenced = "no exception";
        long deadline = System.currentTimeMillis() + TIMEOUT_MS;
        while (System.currentTimeMillis() < deadline) {
            try {
                s0.poll(100);
            } catch (Exception e) {
                fenced = errorName(e);
                break;
            }
        }
        snapshot("static-3", group);
        out.put("duplicate", map("assignment", byName("S0", s0b, "S1", s1b), "generations", generationsOf(s0b, s1b),
                                 "member_ids", map("S0", s0b.memberId(), "S1", s1b.memberId()),
                                 "old_S0", fenced));
        return out;
    }

    private static Map<String, Object> byName(String n0, Member m0, String n1, Member m1) {
        return map(n0, byTopic(m0.owned(), "static-"), n1, byTopic(m1.owned(), "static-"));
    }

    private static Map<String, Object> generationsOf(Member m0, Member m1) {
        return map("S0", m0.generation(), "S1", m1.generation());
    }

    // ------------------------------------------------------------------------------------- offsets

    /** C0 and C1 read 10 records each, commit part of the way (4 and 7), close; two new members resume there. */
    private static Object commitResume() throws Exception {
        String group = "commit";
        String topic = "commit-t0";
        createTopics("commit-", "t0", 2);
        try (KafkaProducer<byte[], byte[]> producer = producer()) {
            for (int p = 0; p < 2; p++) {
                for (int i = 0; i < 10; i++) {
                    producer.send(new ProducerRecord<>(topic, p, null, ("p" + p + "-" + i).getBytes()));
                }
            }
            producer.flush();
        }
        TopicPartition tp0 = new TopicPartition(topic, 0);
        TopicPartition tp1 = new TopicPartition(topic, 1);
        Member c0 = new Member(group, "C0", RANGE).subscribe(topic);
        Member c1 = new Member(group, "C1", RANGE).subscribe(topic);
        List<Member> ms = List.of(c0, c1);
        settle(ms, Set.of(tp0, tp1));
        pollUntil(ms, "20 records", () -> c0.records.size() + c1.records.size() >= 20);
        Map<String, Object> out = new LinkedHashMap<>();
        out.put("first_read", map("C0", offsets(c0.records), "C1", offsets(c1.records)));
        c0.consumer.commitSync(Map.of(tp0, new OffsetAndMetadata(4, "four")));
        c1.consumer.commitSync(Map.of(tp1, new OffsetAndMetadata(7)));
        out.put("committed_seen_by_C0", committedOf(c0, tp0, tp1));
        snapshot("commit-1", group);
        c0.close();
        c1.close();

        Member d0 = new Member(group, "C0", RANGE).subscribe(topic);
        Member d1 = new Member(group, "C1", RANGE).subscribe(topic);
        List<Member> again = List.of(d0, d1);
        settle(again, Set.of(tp0, tp1));
        pollUntil(again, "the rest of the records", () -> d0.records.size() + d1.records.size() >= 9);
        out.put("resumed", map("C0", offsets(d0.records), "C1", offsets(d1.records),
                               "assignment", assignments(again, "commit-"),
                               "positions", map("p0", positionOf(again, tp0), "p1", positionOf(again, tp1))));
        d0.consumer.commitSync();
        d1.consumer.commitSync();
        snapshot("commit-2", group);
        return out;
    }

    private static Map<String, Object> offsets(List<ConsumerRecord<byte[], byte[]>> records) {
        Map<String, Object> out = new TreeMap<>();
        for (ConsumerRecord<byte[], byte[]> r : records) {
            @SuppressWarnings("unchecked")
            List<Long> l = (List<Long>) out.computeIfAbsent("p" + r.partition(), k -> new ArrayList<Long>());
            l.add(r.offset());
        }
        return out;
    }

    private static Map<String, Object> committedOf(Member m, TopicPartition... tps) {
        Map<String, Object> out = new TreeMap<>();
        Map<TopicPartition, OffsetAndMetadata> got = m.consumer.committed(Set.of(tps), Duration.ofSeconds(10));
        for (TopicPartition tp : tps) {
            OffsetAndMetadata om = got.get(tp);
            out.put("p" + tp.partition(), om == null ? null : map("offset", om.offset(), "metadata", om.metadata()));
        }
        return out;
    }

    private static long positionOf(List<Member> members, TopicPartition tp) {
        for (Member m : members) {
            if (m.owned().contains(tp)) {
                return m.consumer.position(tp);
            }
        }
        return -1;
    }

    /** Commits from members that are not (or no longer) in step with the group. */
    private static Object staleCommits() throws Exception {
        String group = "stale";
        String topic = "stale-t0";
        createTopics("stale-", "t0", 2);
        TopicPartition tp0 = new TopicPartition(topic, 0);
        TopicPartition tp1 = new TopicPartition(topic, 1);
        // a long max.poll.interval.ms (the rebalance timeout): the group waits for a member that does not poll
        Member a = new Member(group, "C0", RANGE, ConsumerConfig.MAX_POLL_INTERVAL_MS_CONFIG, 20_000).subscribe(topic);
        Member b = new Member(group, "C1", RANGE, ConsumerConfig.MAX_POLL_INTERVAL_MS_CONFIG, 20_000).subscribe(topic);
        List<Member> ms = List.of(a, b);
        settle(ms, Set.of(tp0, tp1));
        snapshot("stale-1", group);
        Map<String, Object> out = new LinkedHashMap<>();
        out.put("generation", a.generation());

        request("force_rebalance", "group", group);
        // C0 has not polled since: it is still a member of the current generation, so Kafka takes its commit
        out.put("commit_before_rejoining", outcome(() -> a.consumer.commitSync(Map.of(tp0, new OffsetAndMetadata(1)))));
        // C1 polls: it learns of the rebalance from its heartbeat, revokes (eager) and sends JoinGroup, which
        // waits for C0; while it waits, its own commit is refused
        int mark = b.events.size();
        pollUntil(List.of(b), "C1 to start rejoining", () -> b.events.size() > mark);
        out.put("C1_events", since(b, mark));
        out.put("commit_while_rejoining",
                outcome(() -> b.consumer.commitSync(Map.of(tp1, new OffsetAndMetadata(1)))));
        snapshot("stale-2", group);
        settle(ms, Set.of(tp0, tp1));
        out.put("generation_after_rebalance", a.generation());

        // the broker drops C1 as if its session had expired; C1 has not polled since
        String oldId = b.memberId();
        request("expire", "group", group, "member", oldId);
        pollUntil(List.of(a), "C0 to take every partition", () -> a.owned().size() == 2);
        out.put("commit_after_expiry", outcome(() -> b.consumer.commitSync(Map.of(tp1, new OffsetAndMetadata(3)))));
        snapshot("stale-3", group);
        settle(ms, Set.of(tp0, tp1));   // C1 polls again: it rejoins under a new member id
        out.put("rejoined", map("old_member_id", oldId, "member_id", b.memberId(), "generation", b.generation()));
        out.put("commit_after_rejoining", outcome(() -> b.consumer.commitSync(Map.of(tp1, new OffsetAndMetadata(3)))));
        snapshot("stale-4", group);
        return out;
    }

    // --------------------------------------------------------------------------------------- pattern

    /** subscribe(Pattern "orders-.*"): a new matching topic, then more partitions, each trigger a rebalance. */
    private static Object pattern() throws Exception {
        String group = "pattern";
        createTopics("", "orders-a", 2, "payments", 2);
        List<Member> ms = new ArrayList<>();
        for (String name : List.of("C0", "C1")) {
            Member m = new Member(group, name, RANGE, ConsumerConfig.METADATA_MAX_AGE_CONFIG, 300);
            m.consumer.subscribe(Pattern.compile("orders-.*"), m);
            ms.add(m);
        }
        Map<String, Object> out = new LinkedHashMap<>();
        settle(ms, partitions("", "orders-a", 2));
        snapshot("pattern-1", group);
        out.put("first", map("assignment", assignments(ms, ""), "generations", generations(ms)));

        createTopics("", "orders-b", 2);
        settle(ms, partitions("", "orders-a", 2, "orders-b", 2));
        snapshot("pattern-2", group);
        out.put("new_topic", map("assignment", assignments(ms, ""), "generations", generations(ms)));

        get(admin().createPartitions(Map.of("orders-a", NewPartitions.increaseTo(4))).all());
        settle(ms, partitions("", "orders-a", 4, "orders-b", 2));
        snapshot("pattern-3", group);
        out.put("more_partitions", map("assignment", assignments(ms, ""), "generations", generations(ms)));
        return out;
    }

    // ----------------------------------------------------------------------------------------- admin

    private static Object adminGroups() throws Exception {
        String topic = "adm-t0";
        String other = "adm-other";
        createTopics("adm-", "t0", 2, "other", 1);
        TopicPartition tp0 = new TopicPartition(topic, 0);
        TopicPartition tp1 = new TopicPartition(topic, 1);
        TopicPartition otherTp = new TopicPartition(other, 0);

        // adm-empty: one member commits, then leaves (the group stays, Empty, with its offsets)
        Member e = new Member("adm-empty", "E0", RANGE).subscribe(topic);
        settle(List.of(e), Set.of(tp0, tp1));
        e.consumer.commitSync(Map.of(tp0, new OffsetAndMetadata(5), tp1, new OffsetAndMetadata(6)));
        e.close();
        // adm-live: two members; C0 also commits for a topic nobody in the group subscribes to
        Member c0 = new Member("adm-live", "C0", RANGE).subscribe(topic);
        Member c1 = new Member("adm-live", "C1", RANGE).subscribe(topic);
        List<Member> live = List.of(c0, c1);
        settle(live, Set.of(tp0, tp1));
        c0.consumer.commitSync(Map.of(tp0, new OffsetAndMetadata(3), otherTp, new OffsetAndMetadata(1)));
        c1.consumer.commitSync(Map.of(tp1, new OffsetAndMetadata(4)));
        snapshot("adm-live", "adm-live");

        Map<String, Object> out = new LinkedHashMap<>();
        out.put("list", listGroups(null));
        out.put("list_stable", listGroups(ConsumerGroupState.STABLE));
        out.put("list_empty", listGroups(ConsumerGroupState.EMPTY));
        Map<String, ConsumerGroupDescription> described =
                get(admin().describeConsumerGroups(List.of("adm-live", "adm-empty")).all());
        Map<String, Object> descriptions = new TreeMap<>();
        described.forEach((id, d) -> descriptions.put(id, describe(d)));
        out.put("describe", descriptions);
        out.put("offsets_live", listOffsets("adm-live"));
        out.put("offsets_empty", listOffsets("adm-empty"));

        DeleteConsumerGroupOffsetsResult subscribed = admin().deleteConsumerGroupOffsets("adm-live", Set.of(tp0));
        out.put("delete_offsets_subscribed", map("all", outcome(() -> get(subscribed.all())),
                                                 "partition", outcome(() -> get(subscribed.partitionResult(tp0)))));
        out.put("delete_offsets_unsubscribed",
                outcome(() -> get(admin().deleteConsumerGroupOffsets("adm-live", Set.of(otherTp)).all())));
        out.put("delete_offsets_empty",
                outcome(() -> get(admin().deleteConsumerGroupOffsets("adm-empty", Set.of(tp0)).all())));
        out.put("offsets_live_after", listOffsets("adm-live"));
        out.put("offsets_empty_after", listOffsets("adm-empty"));

        out.put("delete_live", outcome(() -> get(admin().deleteConsumerGroups(List.of("adm-live")).all())));
        out.put("delete_empty", outcome(() -> get(admin().deleteConsumerGroups(List.of("adm-empty")).all())));
        out.put("delete_unknown", outcome(() -> get(admin().deleteConsumerGroups(List.of("adm-nobody")).all())));
        try {
            out.put("describe_deleted", describe(
                    get(admin().describeConsumerGroups(List.of("adm-empty")).describedGroups().get("adm-empty"))));
        } catch (ExecutionException ex) {
            out.put("describe_deleted", errorName(ex));
        }
        out.put("list_after_delete", listGroups(null));
        c0.close();
        c1.close();
        out.put("delete_live_after_close",
                outcome(() -> get(admin().deleteConsumerGroups(List.of("adm-live")).all())));
        out.put("list_at_end", listGroups(null));
        return out;
    }

    /** {group id: state} of the groups listed (every one, or those in `state`). */
    private static Map<String, Object> listGroups(ConsumerGroupState state) throws Exception {
        ListConsumerGroupsOptions options = new ListConsumerGroupsOptions();
        if (state != null) {
            options.inStates(Set.of(state));
        }
        Map<String, Object> out = new TreeMap<>();
        for (ConsumerGroupListing g : get(admin().listConsumerGroups(options).all())) {
            out.put(g.groupId(), g.state().map(Object::toString).orElse(null));
        }
        return out;
    }

    private static Map<String, Object> describe(ConsumerGroupDescription d) {
        List<Object> members = new ArrayList<>();
        for (MemberDescription m : d.members()) {
            members.add(map("member_id", m.consumerId(), "client_id", m.clientId(), "host", m.host(),
                            "group_instance_id", m.groupInstanceId().orElse(null),
                            "assignment", byTopic(m.assignment().topicPartitions(), "")));
        }
        members.sort((x, y) -> ((String) ((Map<?, ?>) x).get("member_id"))
                .compareTo((String) ((Map<?, ?>) y).get("member_id")));
        Node c = d.coordinator();
        return map("state", d.state().toString(), "assignor", d.partitionAssignor(), "simple", d.isSimpleConsumerGroup(),
                   "coordinator", map("id", c.id(), "host", c.host(), "port", c.port()), "members", members);
    }

    private static Map<String, Object> listOffsets(String group) throws Exception {
        Map<String, Object> out = new TreeMap<>();
        get(admin().listConsumerGroupOffsets(group).partitionsToOffsetAndMetadata())
                .forEach((tp, om) -> out.put(tp.toString(), om == null ? null : om.offset()));
        return out;
    }

    // ------------------------------------------------------------------------------------------ helpers

    private static synchronized void emit(Map<String, Object> line) throws Exception {
        System.out.println(JSON.writeValueAsString(line));
        System.out.flush();
    }

    /** Asks the test to look at or change the broker; returns its one-line answer. */
    private static String request(String what, Object... kv) throws Exception {
        Map<String, Object> line = map(kv);
        line.put("request", what);
        emit(line);
        String answer = STDIN.readLine();
        if (answer == null) {
            throw new IllegalStateException("stdin closed while waiting for " + what);
        }
        if (!answer.equals("ok")) {
            throw new IllegalStateException(what + " failed: " + answer);
        }
        return answer;
    }

    /** Has the test record the broker's view of the group (and its committed offsets) under `label`. */
    private static void snapshot(String label, String group) throws Exception {
        request("snapshot", "label", label, "group", group);
    }

    private static Map<String, Object> map(Object... kv) {
        Map<String, Object> m = new LinkedHashMap<>();
        for (int i = 0; i < kv.length; i += 2) {
            m.put((String) kv[i], kv[i + 1]);
        }
        return m;
    }

    private static List<String> names(Collection<TopicPartition> partitions) {
        List<String> out = new ArrayList<>();
        for (TopicPartition tp : partitions) {
            out.add(tp.toString());
        }
        out.sort(null);
        return out;
    }

    /** partitions(prefix, "t0", 2, "t1", 3): every partition of those topics. */
    private static Set<TopicPartition> partitions(String prefix, Object... topicsAndCounts) {
        Set<TopicPartition> out = new HashSet<>();
        for (int i = 0; i < topicsAndCounts.length; i += 2) {
            for (int p = 0; p < (Integer) topicsAndCounts[i + 1]; p++) {
                out.add(new TopicPartition(prefix + topicsAndCounts[i], p));
            }
        }
        return out;
    }

    private static void createTopics(String prefix, Object... topicsAndCounts) throws Exception {
        List<NewTopic> topics = new ArrayList<>();
        for (int i = 0; i < topicsAndCounts.length; i += 2) {
            topics.add(new NewTopic(prefix + topicsAndCounts[i], (Integer) topicsAndCounts[i + 1], (short) 1));
        }
        get(admin().createTopics(topics).all());
    }

    /** The simple class name of what an expected failure really was (futures wrap it). */
    private static String errorName(Throwable e) {
        while ((e instanceof ExecutionException || e instanceof CompletionException) && e.getCause() != null) {
            e = e.getCause();
        }
        return e.getClass().getSimpleName();
    }

    private interface Call {
        void call() throws Exception;
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

    private static <T> T get(KafkaFuture<T> f) throws Exception {
        return f.get(TIMEOUT_MS, TimeUnit.MILLISECONDS);
    }

    private static KafkaProducer<byte[], byte[]> producer() {
        Properties p = new Properties();
        p.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        p.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class.getName());
        p.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class.getName());
        p.put(ProducerConfig.LINGER_MS_CONFIG, 5);
        p.put(ProducerConfig.MAX_BLOCK_MS_CONFIG, 15_000);
        return new KafkaProducer<>(p);
    }

    private static KafkaConsumer<byte[], byte[]> consumer(Object... overrides) {
        Properties p = new Properties();
        p.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        p.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName());
        p.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName());
        p.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
        p.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, false);
        p.put(ConsumerConfig.FETCH_MAX_WAIT_MS_CONFIG, 100);
        p.put(ConsumerConfig.MAX_POLL_INTERVAL_MS_CONFIG, 10_000);
        p.put(ConsumerConfig.REQUEST_TIMEOUT_MS_CONFIG, 10_000);
        p.put(ConsumerConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, 15_000);
        for (int i = 0; i < overrides.length; i += 2) {
            p.put(overrides[i], overrides[i + 1]);
        }
        return new KafkaConsumer<>(p);
    }
}
