import java.util.List;
import java.util.Map;

import org.apache.kafka.common.metrics.KafkaMetric;
import org.apache.kafka.common.metrics.MetricsReporter;
import org.apache.kafka.server.telemetry.ClientTelemetry;
import org.apache.kafka.server.telemetry.ClientTelemetryReceiver;
import org.apache.kafka.shaded.io.opentelemetry.proto.metrics.v1.MetricsData;

/**
 * A broker metrics reporter that receives client telemetry (KIP-714), for Kafka 4.4's `metric.reporters`: with it
 * the broker advertises GetTelemetrySubscriptions and PushTelemetry, as fakekafka's `client_telemetry=True` does.
 * Its receiver parses each push as OTLP MetricsData (the broker has decompressed it) and throws when that fails,
 * which the broker answers INVALID_RECORD, as fakekafka's receiver does.
 */
public class TelemetryReceiverReporter implements MetricsReporter, ClientTelemetry {
    @Override public void init(List<KafkaMetric> metrics) { }
    @Override public void metricChange(KafkaMetric metric) { }
    @Override public void metricRemoval(KafkaMetric metric) { }
    @Override public void close() { }
    @Override public void configure(Map<String, ?> configs) { }

    @Override
    public ClientTelemetryReceiver clientReceiver() {
        return (context, payload) -> {
            try {
                MetricsData.parseFrom(payload.data());
            } catch (Exception e) {
                throw new IllegalArgumentException("not OTLP metrics: " + e, e);
            }
        };
    }
}
