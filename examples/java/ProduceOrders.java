// Produces COUNT records to TOPIC with Kafka's Java client: keys "order-0".."order-(COUNT-1)", values
// "{\"id\": i}", one header "source: java". Usage: java ProduceOrders BOOTSTRAP TOPIC COUNT
// Nothing here knows about fakekafka: it is pointed at the bootstrap address, as at any Kafka.

import java.nio.charset.StandardCharsets;
import java.util.Properties;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.serialization.StringSerializer;

public class ProduceOrders {
    public static void main(String[] args) throws Exception {
        String bootstrap = args[0], topic = args[1];
        int count = Integer.parseInt(args[2]);
        Properties props = new Properties();
        props.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        props.put(ProducerConfig.ACKS_CONFIG, "all");
        try (KafkaProducer<String, String> producer =
                 new KafkaProducer<>(props, new StringSerializer(), new StringSerializer())) {
            for (int i = 0; i < count; i++) {
                ProducerRecord<String, String> record =
                    new ProducerRecord<>(topic, "order-" + i, "{\"id\": " + i + "}");
                record.headers().add("source", "java".getBytes(StandardCharsets.UTF_8));
                producer.send(record).get();  // wait for the ack, so a failure exits non-zero
            }
        }
    }
}
