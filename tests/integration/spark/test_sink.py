"""df.write / df.writeStream .format("kafka"): the sink's columns and the `topic` option, as Spark's Kafka sink."""

from __future__ import annotations

import pytest

pytest.importorskip("pyspark", reason="needs pyspark: pip install 'fakekafka[spark]'")
from kafka.partitioner.default import murmur2
from pyspark.errors import PySparkException
from pyspark.sql import functions as F

from fakekafka.spark import FORMAT
from tests.integration.spark.conftest import source

pytestmark = [pytest.mark.spark, pytest.mark.spark_both_routes, pytest.mark.kafka_real]  # CI: also on the stand-in


def test_topic_key_value_partition_and_headers_columns(spark, kafka):
    kafka.create_topic("a", 2)
    kafka.create_topic("b", 1)
    df = spark.createDataFrame(
        [("a", "k1", "v1", 1, [("h", b"x")]), ("b", None, "v2", None, None), ("a", "k3", "v3", 0, [])],
        "topic string, key string, value string, partition int, headers array<struct<key:string,value:binary>>")
    df.write.format("kafka").option("kafka.bootstrap.servers", kafka.bootstrap_servers).save()  # default mode
    assert [(r.partition, r.key, r.value, r.headers) for r in kafka.records("a")] == [
        (0, b"k3", b"v3", []), (1, b"k1", b"v1", [("h", b"x")])]
    assert [(r.key, r.value) for r in kafka.records("b")] == [(None, b"v2")]


def test_topic_option_overrides_the_column(spark, kafka):
    kafka.create_topic("chosen", 1)
    kafka.create_topic("ignored", 1)
    df = spark.createDataFrame([("ignored", b"v")], "topic string, value binary")
    (df.write.format("kafka").mode("append").option("kafka.bootstrap.servers", kafka.bootstrap_servers)
     .option("topic", "chosen").save())
    assert [r.value for r in kafka.records("chosen")] == [b"v"]
    assert kafka.records("ignored") == []


def test_keys_land_on_the_java_clients_partitions(spark, kafka):
    kafka.create_topic("keyed", 3)
    keys = [f"customer-{i}" for i in range(12)]
    df = spark.createDataFrame([(k, "v") for k in keys], "key string, value string")
    df.write.format("kafka").options(**source(kafka, topic="keyed")).save()
    placed = {r.key.decode(): r.partition for r in kafka.records("keyed")}
    # the Java producer Spark uses puts a keyed record on murmur2(key) % partitions
    assert placed == {k: (murmur2(k.encode()) & 0x7FFFFFFF) % 3 for k in keys}


@pytest.mark.parametrize(("schema", "options", "message"), [
    ("value string", {}, "topic option required when no 'topic' attribute is present"),
    ("topic string, key string", {}, "Required attribute 'value' not found"),
    ("topic string, value int", {}, r"value attribute unsupported type int. value must be a\(n\) string or binary"),
    ("key int, value string", {"topic": "t"}, r"key attribute unsupported type int. key must be a\(n\) string"),
    ("value string, partition long", {"topic": "t"}, r"partition attribute unsupported type bigint. partition must be"),
    ("value string", {"topic": "t", "kafka.value.serializer": "x"}, "Kafka option 'value.serializer' is not supported"),
])
def test_invalid_sink_schemas_and_options_fail(spark, kafka, schema, options, message):
    df = spark.createDataFrame([], schema)
    with pytest.raises(PySparkException, match=message):
        df.write.format("kafka").mode("append").options(**source(kafka, **options)).save()


@pytest.mark.spark_any_route
def test_standin_refuses_an_unknown_sink_option(spark, kafka):
    """The stand-in's own format names an option Spark's connector would ignore."""
    df = spark.createDataFrame([], "value string")
    with pytest.raises(PySparkException, match="Kafka sink option 'topics' is not an option of Spark's"):
        df.write.format(FORMAT).mode("append").options(**source(kafka, topic="t", topics="t")).save()


def test_overwrite_mode_is_refused(spark, kafka):
    df = spark.createDataFrame([("v",)], "value string")
    with pytest.raises(PySparkException, match="Save mode Overwrite not allowed for Kafka"):
        df.write.format("kafka").mode("overwrite").options(**source(kafka, topic="t")).save()


def test_streaming_query_copies_records_with_headers(spark, kafka, tmp_path):
    kafka.create_topic("in", 2)
    kafka.create_topic("out", 2)
    for i in range(6):
        kafka.produce("in", f"v{i}".encode(), key=f"k{i}".encode(), partition=i % 2, headers=[("i", str(i).encode())])
    query = (spark.readStream.format("kafka")
             .options(**source(kafka, subscribe="in", startingOffsets="earliest", includeHeaders="true")).load()
             .select("key", F.upper(F.col("value").cast("string")).alias("value"), "headers", "partition")
             .writeStream.format("kafka").option("kafka.bootstrap.servers", kafka.bootstrap_servers)
             .option("topic", "out").option("checkpointLocation", str(tmp_path)).trigger(availableNow=True).start())
    assert query.awaitTermination(90)
    out = sorted(kafka.records("out"), key=lambda r: r.key)
    assert [(r.partition, r.key, r.value, r.headers) for r in out] == [
        (i % 2, f"k{i}".encode(), f"V{i}".encode(), [("i", str(i).encode())]) for i in range(6)]


def test_complete_output_mode_writes_the_whole_result_every_batch(spark, kafka, tmp_path):
    kafka.create_topic("clicks", 1)
    kafka.create_topic("counts", 1)
    options = source(kafka, subscribe="clicks", startingOffsets="earliest")

    def run():
        counts = spark.readStream.format("kafka").options(**options).load().groupBy("key").count()
        query = (counts.select("key", F.col("count").cast("string").alias("value")).writeStream.format("kafka")
                 .option("kafka.bootstrap.servers", kafka.bootstrap_servers).option("topic", "counts")
                 .option("checkpointLocation", str(tmp_path)).outputMode("complete").trigger(availableNow=True).start())
        assert query.awaitTermination(90)

    for page in (b"home", b"home", b"cart"):
        kafka.produce("clicks", b"", key=page)
    run()
    kafka.produce("clicks", b"", key=b"cart")
    run()
    assert [(r.key, r.value) for r in sorted(kafka.records("counts"), key=lambda r: (r.offset > 1, r.key))] == [
        (b"cart", b"1"), (b"home", b"2"), (b"cart", b"2"), (b"home", b"2")]
