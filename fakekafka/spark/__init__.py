"""Spark's Kafka connector for machines without it: a Kafka source and sink written with Spark's Python Data
Source API (`pip install 'fakekafka[spark]'`), plus a `spark` pytest fixture.

    from fakekafka.spark import use_fakekafka_kafka_source
    use_fakekafka_kafka_source(spark)          # "jvm" if Spark's connector is on the classpath, else "python"
    spark.readStream.format("kafka").option("kafka.bootstrap.servers", ...).option("subscribe", "orders")

Nothing here imports pyspark until it is used, so `import fakekafka` never needs it.
"""

from __future__ import annotations

from typing import Any

__all__ = ["FORMAT", "JVM_PROVIDER", "KafkaDataSource", "kafka_connector_available", "kafka_schema",
           "local_spark_session", "register", "use_fakekafka_kafka_source"]

_LAZY = {
    "FORMAT": "fakekafka.spark.datasource",
    "KafkaDataSource": "fakekafka.spark.datasource",
    "kafka_schema": "fakekafka.spark.datasource",
    "JVM_PROVIDER": "fakekafka.spark.route",
    "kafka_connector_available": "fakekafka.spark.route",
    "register": "fakekafka.spark.route",
    "use_fakekafka_kafka_source": "fakekafka.spark.route",
    "local_spark_session": "fakekafka.spark.session",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'fakekafka.spark' has no attribute {name!r}")
    import importlib
    return getattr(importlib.import_module(module), name)
