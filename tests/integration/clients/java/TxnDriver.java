// Kafka's Java client's transactional paths (kafka-clients) against a broker: fakekafka, or Apache Kafka.
//
// Usage: java TxnDriver BOOTSTRAP [SCENARIO...]   (driven by tests/integration/clients/test_java_transactions.py)
//        java TxnDriver BOOTSTRAP --ctp-crash     (the consume-transform-produce app that dies mid-transaction;
//                                                 the "ctp" scenario starts it as a child JVM)
//
// One JVM runs every scenario named (all of them when none is), each on its own topics and transactional ids,
// and prints one JSON line per scenario on stdout:
//     {"scenario": NAME, "ok": true, "ms": N, "result": {...}}   or   {"scenario": NAME, "ok": false, "error": TRACE}
// then {"done": true}. "timeout" waits for the broker to abort a transaction on its own, which Kafka does only
// on its periodic check (every 10 s by default), so it runs in a thread of its own beside the others.
// Expected failures are reported as the exception's simple class name, which the test compares across brokers.

import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.ByteArrayOutputStream;
import java.io.InputStream;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.lang.management.ManagementFactory;
import java.nio.charset.StandardCharsets;
import java.nio.file.Paths;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.TreeMap;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.FinalizedVersionRange;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.admin.TransactionDescription;
import org.apache.kafka.clients.consumer.CloseOptions;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;

public final class TxnDriver {
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final long TIMEOUT_S = 20;
    private static final List<String> ALL = List.of("commit_abort", "fencing", "ctp", "timeout");
    /** What the crashing app exits with, so the parent can tell its deliberate death from any other. */
    private static final int CRASH_EXIT = 77;

    private static String bootstrap;
    private static Admin admin;

    public static void main(String[] args) throws Exception {
        bootstrap = args[0];
        if (args.length == 2 && args[1].equals("--ctp-crash")) {
            emit(ctpApp(2));  // halts mid-transaction; returns only if the input ran out first
            System.exit(1);
        }
        List<String> scenarios = args.length > 1 ? List.of(args).subList(1, args.length) : ALL;
        Thread timeout = null;
        if (scenarios.contains("timeout")) {  // its wait overlaps the other scenarios
            timeout = new Thread(() -> scenario("timeout"), "timeout-scenario");
            timeout.start();
        }
        for (String name : scenarios) {
            if (!name.equals("timeout")) {
                scenario(name);
            }
        }
        if (timeout != null) {
            timeout.join();
        }
        if (admin != null) {
            admin.close(Duration.ofSeconds(5));
        }
        emit(map("done", true));
        System.exit(0);
    }

    private static void scenario(String name) {
        long started = System.nanoTime();
        try {
            Object result = run(name);
            emit(map("scenario", name, "ok", true, "ms", (System.nanoTime() - started) / 1_000_000, "result", result));
        } catch (Throwable e) {
            StringWriter trace = new StringWriter();
            e.printStackTrace(new PrintWriter(trace));
            try {
                emit(map("scenario", name, "ok", false, "error", trace.toString()));
            } catch (Exception ignored) {
                // stdout is gone: the test reports the scenario as silent
            }
        }
    }

    private static Object run(String name) throws Exception {
        switch (name) {
            case "commit_abort": return commitAbort();
            case "fencing": return fencing();
            case "ctp": return ctp();
            case "timeout": return timeout();
            default: throw new IllegalArgumentException("unknown scenario " + name);
        }
    }

    // ------------------------------------------------------------------------------------------ helpers

    private static synchronized void emit(Map<String, Object> line) throws Exception {
        System.out.println(JSON.writeValueAsString(line));
        System.out.flush();
    }

    private static Map<String, Object> map(Object... kv) {
        Map<String, Object> m = new LinkedHashMap<>();
        for (int i = 0; i < kv.length; i += 2) {
            m.put((String) kv[i], kv[i + 1]);
        }
        return m;
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

    private static synchronized Admin admin() {
        if (admin == null) {
            Properties p = new Properties();
            p.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
            p.put(AdminClientConfig.REQUEST_TIMEOUT_MS_CONFIG, 10_000);
            p.put(AdminClientConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, 15_000);
            admin = Admin.create(p);
        }
        return admin;
    }

    /** The cluster's finalized transaction.version (0 when it finalizes none): from 2 on, clients use
     *  KIP-890 part 2 (an epoch bump per transaction, partitions added by Produce itself), which changes the
     *  errors a fenced or timed-out producer meets. */
    private static int transactionVersion() throws Exception {
        FinalizedVersionRange v = get(admin().describeFeatures().featureMetadata())
                .finalizedFeatures().get("transaction.version");
        return v == null ? 0 : v.maxVersionLevel();
    }

    private static <T> T get(org.apache.kafka.common.KafkaFuture<T> f) throws Exception {
        return f.get(TIMEOUT_S, TimeUnit.SECONDS);
    }

    private static void createTopic(String name, int partitions) throws Exception {
        get(admin().createTopics(List.of(new NewTopic(name, partitions, (short) 1))).all());
    }

    private static KafkaProducer<String, String> producer(Object... overrides) {
        Properties p = new Properties();
        p.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        p.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
        p.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
        p.put(ProducerConfig.ACKS_CONFIG, "all");
        p.put(ProducerConfig.LINGER_MS_CONFIG, 5);
        p.put(ProducerConfig.REQUEST_TIMEOUT_MS_CONFIG, 10_000);
        p.put(ProducerConfig.DELIVERY_TIMEOUT_MS_CONFIG, 20_000);
        p.put(ProducerConfig.MAX_BLOCK_MS_CONFIG, 20_000);
        for (int i = 0; i < overrides.length; i += 2) {
            p.put(overrides[i], overrides[i + 1]);
        }
        return new KafkaProducer<>(p);
    }

    private static KafkaProducer<String, String> txnProducer(String transactionalId, Object... overrides) {
        Object[] all = new Object[overrides.length + 2];
        all[0] = ProducerConfig.TRANSACTIONAL_ID_CONFIG;
        all[1] = transactionalId;
        System.arraycopy(overrides, 0, all, 2, overrides.length);
        return producer(all);
    }

    private static KafkaConsumer<String, String> consumer(boolean readCommitted, Object... overrides) {
        Properties p = new Properties();
        p.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        p.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
        p.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
        p.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
        p.put(ConsumerConfig.ISOLATION_LEVEL_CONFIG, readCommitted ? "read_committed" : "read_uncommitted");
        p.put(ConsumerConfig.FETCH_MAX_WAIT_MS_CONFIG, 100);
        p.put(ConsumerConfig.REQUEST_TIMEOUT_MS_CONFIG, 10_000);
        p.put(ConsumerConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, 15_000);
        for (int i = 0; i < overrides.length; i += 2) {
            p.put(overrides[i], overrides[i + 1]);
        }
        return new KafkaConsumer<>(p);
    }

    /** What a consumer of one isolation level reads of a partition from the start, and where it stops. */
    private static Map<String, Object> readView(String topic, int partition, boolean readCommitted) {
        TopicPartition tp = new TopicPartition(topic, partition);
        try (KafkaConsumer<String, String> c = consumer(readCommitted)) {
            c.assign(List.of(tp));
            c.seekToBeginning(List.of(tp));
            // endOffsets follows the consumer's isolation level: the last stable offset under read_committed
            long end = c.endOffsets(List.of(tp)).get(tp);
            List<String> values = new ArrayList<>();
            List<Long> offsets = new ArrayList<>();
            long deadline = System.currentTimeMillis() + TIMEOUT_S * 1000;
            while (c.position(tp) < end && System.currentTimeMillis() < deadline) {
                for (ConsumerRecord<String, String> r : c.poll(Duration.ofMillis(100))) {
                    values.add(r.value());
                    offsets.add(r.offset());
                }
            }
            return map("end", end, "position", c.position(tp), "values", values, "offsets", offsets);
        }
    }

    private static Map<String, Object> views(String topic, int partition) {
        return map("read_committed", readView(topic, partition, true),
                   "read_uncommitted", readView(topic, partition, false));
    }

    private static void send(KafkaProducer<String, String> p, String topic, String... values) throws Exception {
        for (String v : values) {
            p.send(new ProducerRecord<>(topic, 0, v, v)).get(TIMEOUT_S, TimeUnit.SECONDS);
        }
    }

    // ---------------------------------------------------------------------------------------- scenarios

    /** Committed, aborted and open transactions on one partition, with a plain producer's record written
     *  while one is open: what read_committed and read_uncommitted consumers see at each point. */
    private static Object commitAbort() throws Exception {
        String topic = "txn-rc";
        createTopic(topic, 1);
        Map<String, Object> r = new LinkedHashMap<>();
        try (KafkaProducer<String, String> p = txnProducer("txn-rc");
             KafkaProducer<String, String> plain = producer()) {
            p.initTransactions();
            p.beginTransaction();
            send(p, topic, "c0", "c1", "c2", "c3", "c4");
            p.commitTransaction();
            p.beginTransaction();
            send(p, topic, "a0", "a1", "a2", "a3", "a4");
            p.abortTransaction();
            p.beginTransaction();
            send(p, topic, "o0", "o1");
            send(plain, topic, "n0");  // after the open transaction's first offset: held back with it
            r.put("open", views(topic, 0));
            p.commitTransaction();
        }
        r.put("final", views(topic, 0));
        return r;
    }

    /** Two producers with one transactional.id: the second's initTransactions fences the first, whether the
     *  first has a transaction open (it is aborted) or is between transactions. */
    private static Object fencing() throws Exception {
        String topic = "txn-fence";
        createTopic(topic, 1);
        Map<String, Object> r = new LinkedHashMap<>();
        r.put("transaction_version", transactionVersion());
        KafkaProducer<String, String> first = txnProducer("txn-fence");
        KafkaProducer<String, String> second = txnProducer("txn-fence");
        KafkaProducer<String, String> third = txnProducer("txn-fence");
        try {
            first.initTransactions();
            first.beginTransaction();
            send(first, topic, "first-0");
            second.initTransactions();  // the coordinator aborts first's transaction and bumps the epoch
            r.put("open_send", outcome(() -> send(first, topic, "first-1")));
            r.put("open_commit", outcome(first::commitTransaction));
            r.put("open_abort", outcome(first::abortTransaction));

            second.beginTransaction();
            send(second, topic, "second-0");
            second.commitTransaction();
            third.initTransactions();  // second is between transactions now
            r.put("idle_begin", outcome(second::beginTransaction));
            r.put("idle_send", outcome(() -> send(second, topic, "second-1")));
            r.put("idle_commit", outcome(second::commitTransaction));

            third.beginTransaction();
            send(third, topic, "third-0");
            third.commitTransaction();
        } finally {
            first.close(Duration.ofSeconds(5));
            second.close(Duration.ofSeconds(5));
            third.close(Duration.ofSeconds(5));
        }
        r.put("final", views(topic, 0));
        return r;
    }

    private static final String CTP_IN = "txn-ctp-in";
    private static final String CTP_OUT = "txn-ctp-out";
    private static final String CTP_GROUP = "txn-ctp";
    private static final int CTP_INPUTS = 12;  // per input partition

    /** Consume-transform-produce exactly once: an app (a child JVM) commits two transactions, produces the
     *  outputs of a third and sends its offsets, then dies (Runtime.halt: no abort, no leave); the app started
     *  again with the same transactional.id and group.instance.id finishes the input. */
    private static Object ctp() throws Exception {
        createTopic(CTP_IN, 2);
        createTopic(CTP_OUT, 1);
        List<String> inputs = new ArrayList<>();
        try (KafkaProducer<String, String> p = producer()) {
            for (int part = 0; part < 2; part++) {
                for (int i = 0; i < CTP_INPUTS; i++) {
                    String v = "in-" + part + "-" + i;
                    p.send(new ProducerRecord<>(CTP_IN, part, v, v)).get(TIMEOUT_S, TimeUnit.SECONDS);
                    inputs.add(v);
                }
            }
        }
        Map<String, Object> r = new LinkedHashMap<>();
        r.put("inputs", inputs);
        r.put("crashed", crashChild());
        r.put("restarted", ctpApp(-1));
        r.put("output", views(CTP_OUT, 0));
        Map<String, Long> committed = new TreeMap<>();
        for (Map.Entry<TopicPartition, OffsetAndMetadata> e
                : get(admin().listConsumerGroupOffsets(CTP_GROUP).partitionsToOffsetAndMetadata()).entrySet()) {
            committed.put(e.getKey().toString(), e.getValue().offset());
        }
        r.put("committed", committed);
        return r;
    }

    /** Runs this class with --ctp-crash in a JVM of its own; returns what it reported before dying. */
    private static Map<String, Object> crashChild() throws Exception {
        String java = Paths.get(System.getProperty("java.home"), "bin", "java").toString();
        List<String> cmd = new ArrayList<>(List.of(java));
        cmd.addAll(ManagementFactory.getRuntimeMXBean().getInputArguments());
        cmd.addAll(List.of("-cp", System.getProperty("java.class.path"), "TxnDriver", bootstrap, "--ctp-crash"));
        Process child = new ProcessBuilder(cmd).redirectError(ProcessBuilder.Redirect.INHERIT).start();
        InputStream out = child.getInputStream();
        ByteArrayOutputStream buf = new ByteArrayOutputStream();
        out.transferTo(buf);
        if (!child.waitFor(60, TimeUnit.SECONDS)) {
            child.destroyForcibly();
            throw new IllegalStateException("the crashing app did not exit");
        }
        String text = buf.toString(StandardCharsets.UTF_8).trim();
        if (child.exitValue() != CRASH_EXIT) {
            throw new IllegalStateException("the crashing app exited " + child.exitValue() + ": " + text);
        }
        @SuppressWarnings("unchecked")
        Map<String, Object> report = JSON.readValue(text, Map.class);
        return report;
    }

    /** The app: read_committed consumer in group txn-ctp, one transaction per poll (outputs, then the polled
     *  offsets through sendOffsetsToTransaction with the consumer's group metadata). `crashAfter` >= 0: after
     *  that many commits, produce and send offsets for one more poll, flush, report, and halt. */
    private static Map<String, Object> ctpApp(int crashAfter) throws Exception {
        List<String> committedOutputs = new ArrayList<>();
        List<String> inflight = new ArrayList<>();
        int transactions = 0;
        try (KafkaProducer<String, String> p = txnProducer("txn-ctp-app")) {
            p.initTransactions();  // after a crash: fences the dead app's producer and aborts its transaction
            KafkaConsumer<String, String> c = consumer(true, ConsumerConfig.GROUP_ID_CONFIG, CTP_GROUP,
                    ConsumerConfig.GROUP_INSTANCE_ID_CONFIG, "txn-ctp-app", ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG,
                    false, ConsumerConfig.MAX_POLL_RECORDS_CONFIG, 5, ConsumerConfig.SESSION_TIMEOUT_MS_CONFIG, 10_000);
            try {
                c.subscribe(List.of(CTP_IN));
                List<TopicPartition> all = List.of(new TopicPartition(CTP_IN, 0), new TopicPartition(CTP_IN, 1));
                Map<TopicPartition, Long> end = c.endOffsets(all);
                long deadline = System.currentTimeMillis() + 2 * TIMEOUT_S * 1000;
                while (System.currentTimeMillis() < deadline) {
                    if (c.assignment().containsAll(all) && all.stream().allMatch(tp -> c.position(tp) >= end.get(tp))) {
                        break;
                    }
                    ConsumerRecords<String, String> records = c.poll(Duration.ofMillis(100));
                    if (records.isEmpty()) {
                        continue;
                    }
                    p.beginTransaction();
                    List<String> outputs = new ArrayList<>();
                    Map<TopicPartition, OffsetAndMetadata> offsets = new HashMap<>();
                    for (ConsumerRecord<String, String> rec : records) {
                        String v = "out-" + rec.value();
                        p.send(new ProducerRecord<>(CTP_OUT, 0, rec.key(), v));
                        outputs.add(v);
                        offsets.put(new TopicPartition(rec.topic(), rec.partition()),
                                    new OffsetAndMetadata(rec.offset() + 1));
                    }
                    p.sendOffsetsToTransaction(offsets, c.groupMetadata());
                    if (transactions == crashAfter) {
                        p.flush();  // the outputs are on the broker, in the open transaction
                        emit(map("committed_transactions", transactions, "committed_outputs", committedOutputs,
                                 "inflight_outputs", outputs));
                        Runtime.getRuntime().halt(CRASH_EXIT);
                    }
                    p.commitTransaction();
                    transactions++;
                    committedOutputs.addAll(outputs);
                }
            } finally {
                // a static member stays in the group on close unless told to leave
                c.close(CloseOptions.groupMembershipOperation(CloseOptions.GroupMembershipOperation.LEAVE_GROUP)
                        .withTimeout(Duration.ofSeconds(5)));
            }
        }
        return map("committed_transactions", transactions, "committed_outputs", committedOutputs);
    }

    /** transaction.timeout.ms=2000 and a transaction left open: the coordinator aborts it on its own; then
     *  what the producer's commit, abort and next transaction meet. */
    private static Object timeout() throws Exception {
        String topic = "txn-timeout";
        String id = "txn-timeout";
        createTopic(topic, 1);
        Map<String, Object> r = new LinkedHashMap<>();
        r.put("transaction_version", transactionVersion());
        try (KafkaProducer<String, String> p = txnProducer(id, ProducerConfig.TRANSACTION_TIMEOUT_CONFIG, 2000)) {
            p.initTransactions();
            p.beginTransaction();
            long begun = System.currentTimeMillis();
            send(p, topic, "t0");
            List<String> states = new ArrayList<>();
            long deadline = begun + 60_000;
            String state = "";
            while (System.currentTimeMillis() < deadline) {
                TransactionDescription d = get(admin().describeTransactions(List.of(id)).description(id));
                state = d.state().toString();
                if (states.isEmpty() || !states.get(states.size() - 1).equals(state)) {
                    states.add(state);
                }
                if (state.equals("CompleteAbort")) {
                    break;
                }
                Thread.sleep(100);
            }
            r.put("states", states);
            r.put("aborted_after_ms", System.currentTimeMillis() - begun);
            r.put("commit", outcome(p::commitTransaction));
            r.put("abort", outcome(p::abortTransaction));
            r.put("next_begin", outcome(p::beginTransaction));
        }
        r.put("final", views(topic, 0));
        return r;
    }
}
