import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.TimeUnit;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AlterConfigOp;
import org.apache.kafka.clients.admin.ConfigEntry;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.config.ConfigResource;
import org.apache.kafka.common.serialization.StringSerializer;

/**
 * KIP-714 client telemetry from the Java client: an admin subscribes producers whose client id starts with
 * "telemetry-" to the producer metrics (a CLIENT_METRICS resource, every INTERVAL ms), then a producer (metrics
 * push on, the client's default) sends records and prints its client instance id, keeps running (and pushing)
 * until a line arrives on stdin, and closes. Prints "instance<TAB>ID" and "closed".
 */
public class TelemetryClients {
    public static void main(String[] args) throws Exception {
        String bootstrap = args[0];
        String interval = args[1];
        Properties admin = new Properties();
        admin.put("bootstrap.servers", bootstrap);
        admin.put("enable.metrics.push", "false");
        try (Admin a = Admin.create(admin)) {
            ConfigResource sub = new ConfigResource(ConfigResource.Type.CLIENT_METRICS, "java-producers");
            a.incrementalAlterConfigs(Map.of(sub, List.of(
                new AlterConfigOp(new ConfigEntry("metrics", "org.apache.kafka.producer."), AlterConfigOp.OpType.SET),
                new AlterConfigOp(new ConfigEntry("interval.ms", interval), AlterConfigOp.OpType.SET),
                new AlterConfigOp(new ConfigEntry("match", "client_id=telemetry-.*"), AlterConfigOp.OpType.SET))))
                .all().get(30, TimeUnit.SECONDS);
        }
        Properties p = new Properties();
        p.put("bootstrap.servers", bootstrap);
        p.put("client.id", "telemetry-java");
        p.put("key.serializer", StringSerializer.class.getName());
        p.put("value.serializer", StringSerializer.class.getName());
        try (KafkaProducer<String, String> producer = new KafkaProducer<>(p)) {
            for (int i = 0; i < 10; i++) {
                producer.send(new ProducerRecord<>("telemetry-orders", "k" + i, "v" + i)).get(30, TimeUnit.SECONDS);
            }
            System.out.println("instance\t" + producer.clientInstanceId(Duration.ofSeconds(30)));
            System.out.flush();
            new BufferedReader(new InputStreamReader(System.in)).readLine();
        }
        System.out.println("closed");
    }
}
