// Replication scenarios with Kafka's official Java client (kafka-clients) against a fakekafka cluster of
// several brokers: a partition leader's broker killed under a producing acks=all idempotent producer and a
// consuming assign() consumer; min.insync.replicas refusing acks=all when too few replicas are left.
//
// Usage: java ReplicationDriver BOOTSTRAP SPEC...   (driven by tests/integration/clients/test_java_replication.py and
// bench/failover.py). Each SPEC is NAME:TOPIC[:ARG...]:
//     failover:TOPIC[:BEFORE[:AFTER[:noconsumer]]]
//                                       produce (partition 0) until BEFORE records are acknowledged, ask for the
//                                       leader's broker to be killed, go on until AFTER records the new leader
//                                       appended are acknowledged; a consumer reads along the whole time (unless
//                                       noconsumer)
//     min_isr:TOPIC                     acks=all before and after two of three brokers are killed, acks=1
//                                       after, acks=all again after one broker is back
// Every SPEC prints one JSON line on stdout:
//     {"scenario": NAME, "topic": TOPIC, "ok": true, "ms": N, "result": {...}}  or  {..., "ok": false, "error": TRACE}
// then {"done": true}. Where a scenario needs a broker killed or restarted it prints {"request": WHAT, ...} and
// waits for one line on stdin (JSON) before going on. Expected failures are the exception's simple class name.
//
// Timing: the answer to "kill_leader" carries kill_ns and killed_ns, System.nanoTime's clock as the test read it
// just before the kill and once the kill had happened (Linux: CLOCK_MONOTONIC, which Python's time.monotonic_ns
// reads too), and epoch_start, the new leader's log end offset when it was elected. The killed broker's
// connections are gone by killed_ns, so the first acknowledgement to arrive after it came from the new leader:
// failover_ms runs from kill_ns to that one. failover_epoch_ms runs to the first acknowledgement of an offset at or
// past epoch_start (one the new leader appended, not a retried batch it recognised as a duplicate).

import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.BooleanSupplier;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.ByteArraySerializer;

public final class ReplicationDriver {
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final long TIMEOUT_MS = 20_000;
    private static String bootstrap;
    private static final BufferedReader STDIN =
            new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));

    public static void main(String[] args) throws Exception {
        bootstrap = args[0];
        for (int i = 1; i < args.length; i++) {
            String[] spec = args[i].split(":");
            long started = System.nanoTime();
            try {
                Object result = run(spec);
                emit(map("scenario", spec[0], "topic", spec[1], "ok", true,
                         "ms", (System.nanoTime() - started) / 1_000_000, "result", result));
            } catch (Throwable e) {
                StringWriter trace = new StringWriter();
                e.printStackTrace(new PrintWriter(trace));
                emit(map("scenario", spec[0], "topic", spec.length > 1 ? spec[1] : null, "ok", false,
                         "error", trace.toString()));
            }
        }
        emit(map("done", true));
        System.exit(0);
    }

    private static Object run(String[] spec) throws Exception {
        switch (spec[0]) {
            case "failover":
                return failover(spec[1], spec.length > 2 ? Integer.parseInt(spec[2]) : 200,
                                spec.length > 3 ? Integer.parseInt(spec[3]) : 200,
                                !(spec.length > 4 && spec[4].equals("noconsumer")));
            case "min_isr": return minIsr(spec[1]);
            default: throw new IllegalArgumentException("unknown scenario " + spec[0]);
        }
    }

    // ------------------------------------------------------------------------------------------ helpers

    private static synchronized void emit(Map<String, Object> line) throws Exception {
        System.out.println(JSON.writeValueAsString(line));
        System.out.flush();
    }

    /** Asks the test to act on the cluster; returns its answer (one JSON line). */
    @SuppressWarnings("unchecked")
    private static Map<String, Object> request(String what, Object... kv) throws Exception {
        Map<String, Object> line = map(kv);
        line.put("request", what);
        emit(line);
        String answer = STDIN.readLine();
        if (answer == null) {
            throw new IllegalStateException("stdin closed while waiting for " + what);
        }
        return JSON.readValue(answer, Map.class);
    }

    private static Map<String, Object> map(Object... kv) {
        Map<String, Object> m = new LinkedHashMap<>();
        for (int i = 0; i < kv.length; i += 2) {
            m.put((String) kv[i], kv[i + 1]);
        }
        return m;
    }

    private static byte[] utf8(String s) {
        return s.getBytes(StandardCharsets.UTF_8);
    }

    /** The simple class name of what a failure really was (futures wrap it). */
    private static String errorName(Throwable e) {
        while ((e instanceof ExecutionException || e instanceof CompletionException) && e.getCause() != null) {
            e = e.getCause();
        }
        return e.getClass().getSimpleName();
    }

    private static void await(String what, BooleanSupplier done) throws InterruptedException {
        long deadline = System.currentTimeMillis() + TIMEOUT_MS;
        while (!done.getAsBoolean()) {
            if (System.currentTimeMillis() > deadline) {
                throw new IllegalStateException("timed out waiting for " + what);
            }
            Thread.sleep(2);
        }
    }

    private static KafkaProducer<byte[], byte[]> producer(Object... overrides) {
        Properties p = new Properties();
        p.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        p.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class.getName());
        p.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class.getName());
        p.put(ProducerConfig.ACKS_CONFIG, "all");
        p.put(ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG, true);
        p.put(ProducerConfig.LINGER_MS_CONFIG, 1);
        p.put(ProducerConfig.REQUEST_TIMEOUT_MS_CONFIG, 10_000);
        p.put(ProducerConfig.DELIVERY_TIMEOUT_MS_CONFIG, 30_000);
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
        // "none": a truncation found by position validation, or an offset out of range, raises instead of
        // silently moving the position
        p.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "none");
        p.put(ConsumerConfig.FETCH_MAX_WAIT_MS_CONFIG, 100);
        p.put(ConsumerConfig.REQUEST_TIMEOUT_MS_CONFIG, 10_000);
        p.put(ConsumerConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, 15_000);
        for (int i = 0; i < overrides.length; i += 2) {
            p.put(overrides[i], overrides[i + 1]);
        }
        return new KafkaConsumer<>(p);
    }

    /** One send's outcome: the offset, or the failure's class name and message. */
    private static Map<String, Object> sendOne(KafkaProducer<byte[], byte[]> p, String topic, String value)
            throws Exception {
        CompletableFuture<Map<String, Object>> done = new CompletableFuture<>();
        long t0 = System.nanoTime();
        p.send(new ProducerRecord<>(topic, 0, null, utf8(value)), (md, e) -> done.complete(e == null
                ? map("offset", md.offset())
                : map("error", errorName(e), "message", String.valueOf(e.getMessage()))));
        Map<String, Object> out = done.get(60, TimeUnit.SECONDS);
        out.put("ms", (System.nanoTime() - t0) / 1_000_000);
        return out;
    }

    // ---------------------------------------------------------------------------------------- scenarios

    /**
     * An acks=all idempotent producer sends records "r-SEQ" to partition 0 one after another (at most 20
     * unacknowledged, ~1 ms apart) while an assign() consumer reads from offset 0; the leader's broker is
     * killed midway. Reports every acknowledgement (seq, offset), every failure, everything consumed (offset,
     * value, leader epoch), anything the consumer's poll raised, and when the new leader's first
     * acknowledgement arrived.
     */
    private static Object failover(String topic, int before, int after, boolean withConsumer) throws Exception {
        TopicPartition tp = new TopicPartition(topic, 0);
        List<long[]> acks = new ArrayList<>();          // {seq, offset, nanoTime}
        List<Object> failures = new ArrayList<>();
        List<Object> consumed = new ArrayList<>();
        List<Object> consumerErrors = new ArrayList<>();
        AtomicLong completed = new AtomicLong();
        AtomicLong maxConsumed = new AtomicLong(-1);
        AtomicLong epochStart = new AtomicLong(Long.MAX_VALUE);
        AtomicBoolean stopProducing = new AtomicBoolean();
        AtomicBoolean stopConsuming = new AtomicBoolean();
        long[] sent = {0};
        Map<String, Object> out = new LinkedHashMap<>();
        try (KafkaProducer<byte[], byte[]> p = producer();
             KafkaConsumer<byte[], byte[]> c = consumer()) {
            c.assign(List.of(tp));
            c.seek(tp, 0);
            Thread consumerThread = new Thread(() -> {
                while (!stopConsuming.get()) {
                    try {
                        for (ConsumerRecord<byte[], byte[]> r : c.poll(Duration.ofMillis(50))) {
                            synchronized (consumed) {
                                consumed.add(List.of(r.offset(), new String(r.value(), StandardCharsets.UTF_8),
                                                     r.leaderEpoch().orElse(-1)));
                            }
                            maxConsumed.set(r.offset());
                        }
                    } catch (Exception e) {
                        if (stopConsuming.get()) {
                            return;
                        }
                        synchronized (consumerErrors) {
                            consumerErrors.add(errorName(e) + ": " + e.getMessage());
                            if (consumerErrors.size() > 20) {
                                return;
                            }
                        }
                    }
                }
            }, "consumer");
            Thread producerThread = new Thread(() -> {
                try {
                    for (long seq = 0; !stopProducing.get(); seq++) {
                        while (seq - completed.get() >= 20 && !stopProducing.get()) {
                            Thread.sleep(1);
                        }
                        final long s = seq;
                        p.send(new ProducerRecord<>(topic, 0, null, utf8("r-" + seq)), (md, e) -> {
                            long now = System.nanoTime();
                            if (e == null) {
                                synchronized (acks) {
                                    acks.add(new long[] {s, md.offset(), now});
                                }
                            } else {
                                synchronized (failures) {
                                    failures.add(List.of(s, errorName(e) + ": " + e.getMessage()));
                                }
                            }
                            completed.incrementAndGet();
                        });
                        sent[0] = seq + 1;
                        Thread.sleep(1);
                    }
                } catch (Exception e) {
                    synchronized (failures) {
                        failures.add(List.of(-1, errorName(e) + ": " + e.getMessage()));
                    }
                }
            }, "producer");
            if (withConsumer) {
                consumerThread.start();
            }
            producerThread.start();
            try {
                await(before + " acknowledgements", () -> completed.get() >= before);
                long asked = System.nanoTime();
                Map<String, Object> kill = request("kill_leader", "topic", topic, "partition", 0);
                long answered = System.nanoTime();
                long killNs = ((Number) kill.get("kill_ns")).longValue();
                long killedNs = ((Number) kill.getOrDefault("killed_ns", kill.get("kill_ns"))).longValue();
                epochStart.set(((Number) kill.get("epoch_start")).longValue());
                await(after + " acknowledgements from the new leader", () -> {
                    synchronized (acks) {
                        return acks.stream().filter(a -> a[1] >= epochStart.get()).count() >= after;
                    }
                });
                stopProducing.set(true);
                producerThread.join(TIMEOUT_MS);
                p.flush();
                await("every send to complete", () -> completed.get() >= sent[0]);
                long lastOffset;
                synchronized (acks) {
                    lastOffset = acks.stream().mapToLong(a -> a[1]).max().orElse(-1);
                }
                if (withConsumer) {
                    await("the consumer to reach offset " + lastOffset, () -> maxConsumed.get() >= lastOffset);
                }
                stopConsuming.set(true);
                consumerThread.join(TIMEOUT_MS);

                long firstAfter = Long.MAX_VALUE;
                long firstNew = Long.MAX_VALUE;
                List<Object> ackList = new ArrayList<>();
                synchronized (acks) {
                    acks.sort((a, b) -> Long.compare(a[0], b[0]));
                    for (long[] a : acks) {
                        ackList.add(List.of(a[0], a[1]));
                        if (a[2] >= killedNs) {
                            firstAfter = Math.min(firstAfter, a[2]);
                        }
                        if (a[1] >= epochStart.get()) {
                            firstNew = Math.min(firstNew, a[2]);
                        }
                    }
                }
                out.put("kill", kill);
                out.put("sent", sent[0]);
                out.put("acks", ackList);
                out.put("failures", failures);
                out.put("consumed", consumed);
                out.put("consumer_errors", consumerErrors);
                out.put("position", c.position(tp));
                out.put("failover_ms", (firstAfter - killNs) / 1e6);
                out.put("failover_epoch_ms", (firstNew - killNs) / 1e6);
                out.put("kill_ms", (killedNs - killNs) / 1e6);
                out.put("kill_request_ms", (answered - asked) / 1e6);
            } finally {   // a failed wait: stop both threads before the clients close
                stopProducing.set(true);
                stopConsuming.set(true);
                c.wakeup();
                producerThread.join(TIMEOUT_MS);
                consumerThread.join(TIMEOUT_MS);
            }
        }
        return out;
    }

    /**
     * min.insync.replicas=2 on a topic with three replicas: acks=all works with all three up; with two
     * brokers killed acks=all fails and acks=1 works; with one broker back, acks=all works again.
     * NOT_ENOUGH_REPLICAS is retriable, so the acks=all producer retries it until its retries (3 here) run out
     * and then hands the broker's error to the callback, inside its delivery.timeout.ms (15 s: with 3 s, a loaded
     * CI run expired the batch before the producer had sent it once). A producer with the default retries
     * (unlimited) hands over a TimeoutException ("Expiring 1 record(s)") instead once delivery.timeout.ms (3 s)
     * passes, whatever the broker answered: reported as "all_two_down_patient".
     */
    private static Object minIsr(String topic) throws Exception {
        Map<String, Object> out = new LinkedHashMap<>();
        try (KafkaProducer<byte[], byte[]> all = producer(ProducerConfig.DELIVERY_TIMEOUT_MS_CONFIG, 15_000,
                                                          ProducerConfig.REQUEST_TIMEOUT_MS_CONFIG, 2_000,
                                                          ProducerConfig.RETRIES_CONFIG, 3,
                                                          ProducerConfig.RETRY_BACKOFF_MS_CONFIG, 50,
                                                          ProducerConfig.LINGER_MS_CONFIG, 0);
             KafkaProducer<byte[], byte[]> patient = producer(ProducerConfig.DELIVERY_TIMEOUT_MS_CONFIG, 3_000,
                                                              ProducerConfig.REQUEST_TIMEOUT_MS_CONFIG, 2_000,
                                                              ProducerConfig.LINGER_MS_CONFIG, 0)) {
            out.put("all_before", sendOne(all, topic, "all-before"));
            patient.partitionsFor(topic);   // metadata fetched while all brokers are up
            out.put("killed", request("kill_two", "topic", topic, "partition", 0));
            out.put("all_two_down", sendOne(all, topic, "all-two-down"));
            out.put("all_two_down_patient", sendOne(patient, topic, "all-two-down-patient"));
            try (KafkaProducer<byte[], byte[]> one = producer(ProducerConfig.ACKS_CONFIG, "1",
                                                              ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG, false)) {
                out.put("one_two_down", sendOne(one, topic, "one-two-down"));
            }
            out.put("restarted", request("restart_one", "topic", topic, "partition", 0));
            // a new producer: `all` gave up on a sequence number (retries exhausted), so kafka-clients holds its
            // next batch back as out of order until that one's retries run out too, as it would against Kafka
            try (KafkaProducer<byte[], byte[]> again = producer()) {
                out.put("all_after_restart", sendOne(again, topic, "all-after-restart"));
            }
        }
        return out;
    }
}
