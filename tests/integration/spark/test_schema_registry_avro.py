"""Spark reading Avro records that confluent-kafka's AvroSerializer wrote through fakekafka's Schema Registry, as
users write the job: the writer schema fetched from the registry by subject, Confluent's 5-byte header (magic
byte, schema id) stripped with substring(value, 6), spark-avro's from_avro on the rest. spark-avro is added to the
shared session from `.ci/install.sh`'s cache (compat/kafka/spark-avro-pom.xml)."""

from __future__ import annotations

import glob
import json
import os
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("pyspark", reason="needs pyspark: pip install 'fakekafka[spark]'")
pytest.importorskip("fastavro")
pytest.importorskip("authlib")
pytest.importorskip("cachetools")

from confluent_kafka import Producer  # noqa: E402
from confluent_kafka.schema_registry import SchemaRegistryClient  # noqa: E402
from confluent_kafka.schema_registry.avro import AvroSerializer  # noqa: E402
from confluent_kafka.serialization import MessageField, SerializationContext  # noqa: E402

from tests.integration.spark.conftest import ERRORS, source  # noqa: E402

pytestmark = [pytest.mark.spark, pytest.mark.fakekafka_only, pytest.mark.fakekafka(schema_registry=True)]

ORDER = {
    "type": "record",
    "name": "Order",
    "namespace": "shop",
    "fields": [
        {"name": "id", "type": "string"},
        {"name": "qty", "type": "int"},
        {"name": "note", "type": ["null", "string"], "default": None},
    ],
}


def spark_avro_jar() -> str:
    """spark-avro for the installed pyspark, from $FAKEKAFKA_SPARK_AVRO_JARS or the install script's cache."""
    from importlib.metadata import version

    v = version("pyspark")
    cache = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "fakekafka" / f"spark-avro-{v}"
    d = Path(os.environ.get("FAKEKAFKA_SPARK_AVRO_JARS", cache))
    jars = glob.glob(str(d / f"spark-avro_2.13-{v}.jar"))
    if not jars:
        pytest.skip(
            f"no spark-avro_2.13-{v}.jar in {d}: bash .ci/install.sh resolves it (compat/kafka/spark-avro-pom.xml)"
        )
    return jars[0]


@pytest.fixture
def avro_spark(spark: Any) -> Any:
    """The shared session with spark-avro on its class path (ADD JAR is idempotent)."""
    spark.sql(f"ADD JAR '{spark_avro_jar()}'")
    return spark


def produce_orders(kafka: Any, topic: str, orders: list[dict[str, Any]]) -> None:
    serialize = AvroSerializer(SchemaRegistryClient({"url": kafka.schema_registry_url}), json.dumps(ORDER))
    ctx = SerializationContext(topic, MessageField.VALUE)
    p = Producer({"bootstrap.servers": kafka.bootstrap_servers})
    for o in orders:
        p.produce(topic, serialize(o, ctx))
    assert p.flush(10) == 0


def test_from_avro_with_the_schema_from_the_registry(avro_spark: Any, kafka: Any) -> None:
    from pyspark.sql.avro.functions import from_avro
    from pyspark.sql.functions import col, conv, expr, hex

    kafka.create_topic("orders", 1)
    orders = [{"id": f"o-{i}", "qty": i, "note": None if i % 2 else f"n{i}"} for i in range(4)]
    produce_orders(kafka, "orders", orders)
    latest = SchemaRegistryClient({"url": kafka.schema_registry_url}).get_latest_version("orders-value")
    df = (
        avro_spark.read.format("kafka")
        .options(**source(kafka, subscribe="orders"))
        .load()
        .select(
            conv(hex(expr("substring(value, 2, 4)")), 16, 10).cast("int").alias("schema_id"),
            from_avro(expr("substring(value, 6)"), latest.schema.schema_str).alias("order"),
        )
        .select("schema_id", "order.*")
        .orderBy(col("id"))
    )
    got = df.collect()
    assert {r.schema_id for r in got} == {latest.schema_id}
    assert [r.asDict() | {"schema_id": None} for r in got] == [o | {"schema_id": None} for o in orders]


def test_from_avro_fails_fast_on_a_record_that_is_not_avro(avro_spark: Any, kafka: Any) -> None:
    """A record the writer did not frame (here plain text) fails the job in spark-avro's default FAILFAST mode, and
    is a row of nulls in PERMISSIVE mode: what a user sees when a topic mixes producers."""
    from pyspark.sql.avro.functions import from_avro
    from pyspark.sql.functions import expr

    kafka.create_topic("mixed", 1)
    produce_orders(kafka, "mixed", [{"id": "o-1", "qty": 1, "note": None}])
    p = Producer({"bootstrap.servers": kafka.bootstrap_servers})
    p.produce("mixed", b"\x00\x00\x00\x00\x01\xff\xff\xff\xff\xff\xff")
    assert p.flush(10) == 0
    schema = SchemaRegistryClient({"url": kafka.schema_registry_url}).get_latest_version("mixed-value").schema
    df = avro_spark.read.format("kafka").options(**source(kafka, subscribe="mixed")).load()
    permissive = df.select(
        from_avro(expr("substring(value, 6)"), schema.schema_str, {"mode": "PERMISSIVE"}).alias("o"), "offset"
    ).orderBy("offset")
    assert [r.o.asDict() for r in permissive.collect()] == [
        {"id": "o-1", "qty": 1, "note": None},
        {"id": None, "qty": None, "note": None},
    ]
    with pytest.raises(ERRORS, match="(?i)malformed"):
        df.select(from_avro(expr("substring(value, 6)"), schema.schema_str).alias("o")).collect()
