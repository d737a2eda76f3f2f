"""Real Apache Kafka as a JVM process: the launcher lives in `fakekafka.testing.apache_kafka` (the pytest plugin's
`--kafka-real` starts it too, and the plugin ships without compat/); re-exported here for compat and bench."""

from fakekafka.testing.apache_kafka import KAFKA_VERSION, OLDER_KAFKA, KafkaCluster, KafkaUnavailable, kafka_lib

__all__ = ["KAFKA_VERSION", "OLDER_KAFKA", "KafkaCluster", "KafkaUnavailable", "kafka_lib"]
