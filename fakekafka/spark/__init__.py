"""Spark's own Kafka connector on a local SparkSession (its jars from `.ci/install.sh`'s Maven cache), and for
machines without those jars a stand-in Kafka source and sink written with Spark's Python Data Source API
(`pip install 'fakekafka[spark]'`); plus a `spark` pytest fixture.

    from fakekafka.spark import use_fakekafka_kafka_source
    use_fakekafka_kafka_source(spark)          # "jvm": Spark's connector (on the classpath or its jars added now)
                                               # "python": the stand-in
    spark.readStream.format("kafka").option("kafka.bootstrap.servers", ...).option("subscribe", "orders")

Nothing here imports pyspark until it is used, so `import fakekafka` never needs it.
"""

from __future__ import annotations

from typing import Any

__all__ = ["FORMAT", "JVM_PROVIDER", "KafkaDataSource", "choose_kafka_route", "kafka_connector_available",
           "kafka_connector_jars", "kafka_route", "kafka_schema", "local_spark_session", "redirect_kafka_to_standin",
           "register", "use_fakekafka_kafka_source"]

_LAZY = {
    "FORMAT": "fakekafka.spark.datasource",
    "KafkaDataSource": "fakekafka.spark.datasource",
    "kafka_schema": "fakekafka.spark.datasource",
    "JVM_PROVIDER": "fakekafka.spark.route",
    "choose_kafka_route": "fakekafka.spark.route",
    "kafka_connector_available": "fakekafka.spark.route",
    "kafka_route": "fakekafka.spark.route",
    "redirect_kafka_to_standin": "fakekafka.spark.route",
    "kafka_connector_jars": "fakekafka.spark.session",
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
