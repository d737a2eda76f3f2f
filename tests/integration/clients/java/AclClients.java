import java.time.Duration;
import java.util.List;
import java.util.Properties;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.acl.AccessControlEntry;
import org.apache.kafka.common.acl.AclBinding;
import org.apache.kafka.common.acl.AclBindingFilter;
import org.apache.kafka.common.acl.AclOperation;
import org.apache.kafka.common.acl.AclPermissionType;
import org.apache.kafka.common.resource.PatternType;
import org.apache.kafka.common.resource.ResourcePattern;
import org.apache.kafka.common.resource.ResourceType;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;

/**
 * The Java client with ACLs, over SASL_PLAINTEXT: an admin (a super user) creates topics and ACLs, alice produces and
 * consumes where they allow it and is refused elsewhere, bob (no ACLs) is refused. Each case prints
 * "case<TAB>ok<TAB>detail" or "case<TAB>error<TAB>class: message".
 */
public class AclClients {
    public static void main(String[] args) throws Exception {
        String bootstrap = args[0];
        try (Admin admin = Admin.create(props(bootstrap, "admin", "admin-secret"))) {
            admin.createTopics(List.of(new NewTopic("java-acl", 1, (short) 1), new NewTopic("java-secret", 1, (short) 1)))
                .all().get(30, TimeUnit.SECONDS);
            admin.createAcls(List.of(
                acl(ResourceType.TOPIC, "java-acl", "User:alice", AclOperation.WRITE),
                acl(ResourceType.TOPIC, "java-acl", "User:alice", AclOperation.READ),
                acl(ResourceType.GROUP, "java-g", "User:alice", AclOperation.READ))).all().get(30, TimeUnit.SECONDS);
            waitUntil(() -> javaAcls(admin) == 3);  // Kafka's brokers apply ACLs a moment after the controller
            waitUntil(() -> admin.describeTopics(List.of("java-acl", "java-secret")).allTopicNames().get().size() == 2);
            System.out.println("admin-acls\tok\t" + javaAcls(admin));
        }
        produce("alice-produce", bootstrap, "alice", "java-acl");
        produce("alice-produce-secret", bootstrap, "alice", "java-secret");
        produce("bob-produce", bootstrap, "bob", "java-acl");
        consume("alice-consume", bootstrap, "alice", "java-g");
        consume("alice-consume-other-group", bootstrap, "alice", "other-g");
        try (Admin alice = Admin.create(props(bootstrap, "alice", "alice-secret"))) {
            report("alice-list-topics", () -> alice.listTopics().names().get().toString());
            report("alice-create-acls", () -> {
                alice.createAcls(List.of(acl(ResourceType.TOPIC, "x", "User:alice", AclOperation.ALL))).all().get();
                return "created";
            });
        }
    }

    static long javaAcls(Admin admin) throws Exception {
        return admin.describeAcls(AclBindingFilter.ANY).values().get().stream()
            .filter(b -> b.pattern().name().startsWith("java-")).count();
    }

    interface Step { String run() throws Exception; }
    interface Check { boolean ok() throws Exception; }

    static void waitUntil(Check check) throws Exception {
        long deadline = System.currentTimeMillis() + 30_000;
        while (!check.ok()) {
            if (System.currentTimeMillis() > deadline) throw new IllegalStateException("not reached in 30 s");
            Thread.sleep(50);
        }
    }

    static AclBinding acl(ResourceType type, String name, String principal, AclOperation op) {
        return new AclBinding(new ResourcePattern(type, name, PatternType.LITERAL),
            new AccessControlEntry(principal, "*", op, AclPermissionType.ALLOW));
    }

    static Properties props(String bootstrap, String user, String password) {
        Properties p = new Properties();
        p.put("bootstrap.servers", bootstrap);
        p.put("security.protocol", "SASL_PLAINTEXT");
        p.put("sasl.mechanism", "SCRAM-SHA-256");
        p.put("sasl.jaas.config", "org.apache.kafka.common.security.scram.ScramLoginModule required username=\""
            + user + "\" password=\"" + password + "\";");
        p.put("default.api.timeout.ms", "15000");
        p.put("request.timeout.ms", "10000");
        return p;
    }

    static void produce(String name, String bootstrap, String user, String topic) {
        Properties p = props(bootstrap, user, user + "-secret");
        p.put("key.serializer", StringSerializer.class.getName());
        p.put("value.serializer", StringSerializer.class.getName());
        p.put("max.block.ms", "10000");
        p.put("delivery.timeout.ms", "12000");
        report(name, () -> {
            try (KafkaProducer<String, String> producer = new KafkaProducer<>(p)) {
                return "offset " + producer.send(new ProducerRecord<>(topic, name, "v")).get(15, TimeUnit.SECONDS).offset();
            }
        });
    }

    static void consume(String name, String bootstrap, String user, String group) {
        Properties p = props(bootstrap, user, user + "-secret");
        p.put("group.id", group);
        p.put("auto.offset.reset", "earliest");
        p.put("key.deserializer", StringDeserializer.class.getName());
        p.put("value.deserializer", StringDeserializer.class.getName());
        report(name, () -> {
            try (KafkaConsumer<String, String> consumer = new KafkaConsumer<>(p)) {
                consumer.subscribe(List.of("java-acl"));
                long deadline = System.currentTimeMillis() + 15_000;
                while (System.currentTimeMillis() < deadline) {
                    ConsumerRecords<String, String> records = consumer.poll(Duration.ofMillis(200));
                    if (!records.isEmpty()) {
                        consumer.commitSync();
                        return records.count() + " record(s), committed";
                    }
                }
                return "nothing within 15 s";
            }
        });
    }

    static void report(String name, Step step) {
        try {
            System.out.println(name + "\tok\t" + step.run());
        } catch (ExecutionException e) {
            Throwable c = e.getCause();
            System.out.println(name + "\terror\t" + c.getClass().getName() + ": " + c.getMessage());
        } catch (Exception e) {
            System.out.println(name + "\terror\t" + e.getClass().getName() + ": " + e.getMessage());
        }
    }
}
