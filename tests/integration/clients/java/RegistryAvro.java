import java.io.ByteArrayOutputStream;
import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.List;
import java.util.Properties;

import org.apache.avro.Schema;
import org.apache.avro.generic.GenericData;
import org.apache.avro.generic.GenericDatumReader;
import org.apache.avro.generic.GenericDatumWriter;
import org.apache.avro.generic.GenericRecord;
import org.apache.avro.io.BinaryEncoder;
import org.apache.avro.io.DecoderFactory;
import org.apache.avro.io.EncoderFactory;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.springframework.cloud.stream.schema.registry.client.ConfluentSchemaRegistryClient;

/**
 * A Java service on a Confluent-compatible registry: Spring Cloud Stream's ConfluentSchemaRegistryClient (Confluent's
 * REST API) for the schemas, Confluent's wire format (magic byte 0, 4-byte schema id, Avro binary) for the records,
 * Kafka's own Java clients for the topic.
 *
 *   read BOOTSTRAP REGISTRY TOPIC N           prints each of the first N records as {"id": schema id, "record": ...}
 *   write BOOTSTRAP REGISTRY TOPIC SUBJECT SCHEMA ID QTY
 *                                             registers SCHEMA (an Order record: id string, qty int) under SUBJECT
 *                                             and writes one record with it; prints {"id": schema id}
 */
public class RegistryAvro {
    public static void main(String[] args) throws Exception {
        ConfluentSchemaRegistryClient registry = new ConfluentSchemaRegistryClient();
        registry.setEndpoint(args[2]);
        if (args[0].equals("read")) {
            read(args[1], registry, args[3], Integer.parseInt(args[4]));
        } else {
            write(args[1], registry, args[3], args[4], args[5], args[6], Integer.parseInt(args[7]));
        }
    }

    static void read(String bootstrap, ConfluentSchemaRegistryClient registry, String topic, int n) {
        Properties p = new Properties();
        p.put("bootstrap.servers", bootstrap);
        p.put("key.deserializer", ByteArrayDeserializer.class.getName());
        p.put("value.deserializer", ByteArrayDeserializer.class.getName());
        p.put("enable.auto.commit", "false");
        try (KafkaConsumer<byte[], byte[]> consumer = new KafkaConsumer<>(p)) {
            TopicPartition tp = new TopicPartition(topic, 0);
            consumer.assign(List.of(tp));
            consumer.seekToBeginning(List.of(tp));
            int seen = 0;
            long deadline = System.currentTimeMillis() + 60_000;
            while (seen < n && System.currentTimeMillis() < deadline) {
                for (ConsumerRecord<byte[], byte[]> r : consumer.poll(Duration.ofMillis(500))) {
                    ByteBuffer value = ByteBuffer.wrap(r.value());
                    if (value.get() != 0) {
                        throw new IllegalStateException("not Confluent's wire format: magic byte " + r.value()[0]);
                    }
                    int id = value.getInt();
                    Schema schema = new Schema.Parser().parse(registry.fetch(id));
                    GenericRecord record = new GenericDatumReader<GenericRecord>(schema).read(null,
                            DecoderFactory.get().binaryDecoder(r.value(), 5, r.value().length - 5, null));
                    System.out.println("{\"id\": " + id + ", \"record\": " + record + "}");
                    seen++;
                }
            }
            if (seen < n) {
                throw new IllegalStateException("read " + seen + " of " + n + " records in 60 s");
            }
        } catch (java.io.IOException e) {
            throw new IllegalStateException(e);
        }
    }

    static void write(String bootstrap, ConfluentSchemaRegistryClient registry, String topic, String subject,
                      String schemaText, String orderId, int qty) throws Exception {
        int id = registry.register(subject, "avro", schemaText).getId();
        Schema schema = new Schema.Parser().parse(schemaText);
        GenericRecord order = new GenericData.Record(schema);
        order.put("id", orderId);
        order.put("qty", qty);
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        out.write(0);
        out.write(ByteBuffer.allocate(4).putInt(id).array());
        BinaryEncoder encoder = EncoderFactory.get().binaryEncoder(out, null);
        new GenericDatumWriter<GenericRecord>(schema).write(order, encoder);
        encoder.flush();
        Properties p = new Properties();
        p.put("bootstrap.servers", bootstrap);
        p.put("key.serializer", ByteArraySerializer.class.getName());
        p.put("value.serializer", ByteArraySerializer.class.getName());
        p.put("acks", "all");
        try (KafkaProducer<byte[], byte[]> producer = new KafkaProducer<>(p)) {
            producer.send(new ProducerRecord<>(topic, 0, null, out.toByteArray())).get();
        }
        System.out.println("{\"id\": " + id + "}");
    }
}
