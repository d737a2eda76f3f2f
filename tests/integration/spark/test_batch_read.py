"""spark.read.format("kafka"): the connector's schema, and each way of choosing the offsets to read."""

from __future__ import annotations

import datetime as dt

import pytest

pytest.importorskip("pyspark", reason="needs pyspark: pip install 'fakekafka[spark]'")
from pyspark.errors import PySparkException
from pyspark.sql.types import (
    ArrayType,
    BinaryType,
    IntegerType,
    LongType,
    StringType,
    StructField,
    StructType,
    TimestampType,
)

from fakekafka.spark import FORMAT
from tests.integration.spark.conftest import ERRORS, source, standin_differs

pytestmark = [pytest.mark.spark, pytest.mark.spark_both_routes, pytest.mark.kafka_real]  # CI: also on the stand-in

KAFKA_SCHEMA = StructType([
    StructField("key", BinaryType()), StructField("value", BinaryType()), StructField("topic", StringType()),
    StructField("partition", IntegerType()), StructField("offset", LongType()),
    StructField("timestamp", TimestampType()), StructField("timestampType", IntegerType()),
])
HEADERS = StructField("headers", ArrayType(StructType([StructField("key", StringType()),
                                                       StructField("value", BinaryType())])))


def fill(kafka, topic="t", partitions=2, per_partition=4, base_ts=1_700_000_000_000):
    """Records v<p>-<i> in each partition, record i stamped base_ts + 1000 * i. The topic keeps them whatever their
    age (retention.ms=-1): the broker's retention check (30 s after it starts, then every 5 minutes, on Kafka as on
    fakekafka) would otherwise delete records stamped in 2023 in the middle of a test on a slow run."""
    kafka.create_topic(topic, partitions, configs={"retention.ms": "-1"})
    for i in range(per_partition):
        for p in range(partitions):
            kafka.produce(topic, f"v{p}-{i}".encode(), key=f"k{i}".encode(), partition=p,
                          headers=[("n", str(i).encode())], timestamp=base_ts + 1000 * i)


def read(spark, kafka, **options):
    return spark.read.format("kafka").options(**source(kafka, **options)).load()


def offsets(df):
    return sorted((r.partition, r.offset) for r in df.collect())


def test_reads_every_record_with_the_connectors_schema(spark, kafka):
    fill(kafka)
    df = read(spark, kafka, subscribe="t", includeHeaders="true")
    assert df.schema == StructType([*KAFKA_SCHEMA.fields, HEADERS])
    got = sorted(df.collect(), key=lambda r: (r.partition, r.offset))
    stored = sorted(kafka.records("t"), key=lambda r: (r.partition, r.offset))
    assert [(r.partition, r.offset, r.key, r.value, r.topic, r.timestampType) for r in got] == \
           [(r.partition, r.offset, r.key, r.value, "t", 0) for r in stored]
    assert [r.timestamp for r in got] == [dt.datetime.fromtimestamp(r.timestamp / 1000, dt.UTC).replace(tzinfo=None)
                                          for r in stored]
    assert [[(h.key, h.value) for h in r.headers] for r in got] == [r.headers for r in stored]
    # without includeHeaders the column is not there, as in Spark
    assert read(spark, kafka, subscribe="t").schema == KAFKA_SCHEMA


def test_specific_starting_and_ending_offsets(spark, kafka):
    fill(kafka)
    df = read(spark, kafka, subscribe="t", startingOffsets='{"t":{"0":1,"1":-2}}', endingOffsets='{"t":{"0":3,"1":-1}}')
    assert offsets(df) == [(0, 1), (0, 2), (1, 0), (1, 1), (1, 2), (1, 3)]
    # earliest / latest keywords
    assert len(offsets(read(spark, kafka, subscribe="t", startingOffsets="earliest", endingOffsets="latest"))) == 8


def test_assign_and_subscribe_pattern(spark, kafka):
    fill(kafka, "orders")
    fill(kafka, "orders-eu", partitions=1, per_partition=2)
    fill(kafka, "payments", partitions=1, per_partition=3)
    assigned = read(spark, kafka, assign='{"orders":[1],"payments":[0]}').collect()
    assert sorted({(r.topic, r.partition) for r in assigned}) == [("orders", 1), ("payments", 0)]
    assert len(assigned) == 4 + 3
    matched = read(spark, kafka, subscribePattern="orders.*").collect()
    assert sorted({r.topic for r in matched}) == ["orders", "orders-eu"]  # a whole-name match, like Java's
    assert len(matched) == 8 + 2


def test_timestamps_choose_offsets(spark, kafka):
    fill(kafka, base_ts=1_700_000_000_000)  # record i of each partition at +i seconds
    df = read(spark, kafka, subscribe="t", startingTimestamp=1_700_000_001_000, endingTimestamp=1_700_000_003_000)
    assert offsets(df) == [(0, 1), (0, 2), (1, 1), (1, 2)]
    df = read(spark, kafka, subscribe="t",
              startingOffsetsByTimestamp='{"t":{"0":1700000002000,"1":1700000000000}}')
    assert offsets(df) == [(0, 2), (0, 3), (1, 0), (1, 1), (1, 2), (1, 3)]
    late = 1_800_000_000_000
    with pytest.raises(ERRORS, match=r"No offset matched from request of topic-partition t-\d"):
        read(spark, kafka, subscribe="t", startingTimestamp=late).collect()
    assert offsets(read(spark, kafka, subscribe="t", startingTimestamp=late,
                        startingOffsetsByTimestampStrategy="latest")) == []


def test_min_partitions_splits_ranges(spark, kafka):
    fill(kafka, partitions=1, per_partition=9)
    df = read(spark, kafka, subscribe="t", minPartitions=3)
    assert df.rdd.getNumPartitions() == 3
    assert offsets(df) == [(0, i) for i in range(9)]


@pytest.mark.spark_any_route
def test_standin_max_records_per_partition(spark, kafka):
    """The stand-in's own format: maxRecordsPerPartition cuts ranges (Spark 4.2.0's batch read through the JVM
    connector kept the 9 records in one partition, so this is not compared with it)."""
    fill(kafka, partitions=1, per_partition=9)
    df = spark.read.format(FORMAT).options(**source(kafka, subscribe="t", maxRecordsPerPartition=2)).load()
    assert df.rdd.getNumPartitions() == 5
    assert offsets(df) == [(0, i) for i in range(9)]


@pytest.mark.parametrize(("options", "message"), [
    ({"subscribe": "t", "startingOffsets": "latest"}, "starting offset can't be latest for batch queries"),
    ({"subscribe": "t", "endingOffsets": "earliest"}, "ending offset can't be earliest for batch queries"),
    ({}, "One of the following options must be specified for Kafka source: subscribe, subscribepattern, assign"),
    ({"subscribe": "t", "assign": '{"t":[0]}'}, "Only one of the following options can be specified"),
    ({"subscribe": "t", "kafka.auto.offset.reset": "earliest"}, "Kafka option 'auto.offset.reset' is not supported"),
])
def test_invalid_options_fail_naming_the_option(spark, kafka, options, message):
    fill(kafka, per_partition=1)
    with pytest.raises(ERRORS, match=message):
        read(spark, kafka, **options).collect()


def test_starting_offsets_must_name_every_partition(spark, kafka):
    standin_differs(spark, "it refuses the option while planning ('you must specify all TopicPartitions')")
    fill(kafka, per_partition=1)
    with pytest.raises(ERRORS, match="Partitions specified for Kafka start offsets don't match what are assigned"):
        read(spark, kafka, subscribe="t", startingOffsets='{"t":{"0":-2}}').collect()


@pytest.mark.spark_any_route
@pytest.mark.parametrize(("options", "message"), [
    ({"subscribe": "t", "startingOffsets": '{"t":{"0":-2}}'}, "you must specify all TopicPartitions"),
    ({"subscribe": "t", "startingOffset": "earliest"},
     "Kafka source option 'startingoffset' is not an option of Spark's Kafka connector"),
    ({"subscribe": "t", "kafka.sasl.jaas.config": "x"}, "refused by librdkafka.*JAAS configuration is not supported"),
    ({"subscribe": "t", "kafka.no.such.setting": "1"}, "No such configuration property.*no.such.setting"),
])
def test_standin_refuses_options_spark_would_ignore(spark, kafka, options, message):
    """The stand-in's own format is stricter than Spark's connector, which ignores an unknown option and passes
    kafka.* settings to a Java client that only warns about them."""
    fill(kafka, per_partition=1)
    with pytest.raises(PySparkException, match=message):
        spark.read.format(FORMAT).options(**source(kafka, **options)).load().collect()


def test_starting_offsets_past_the_end_are_refused(spark, kafka):
    standin_differs(spark, "it treats the range as data loss, which failOnDataLoss=false skips")
    fill(kafka, partitions=1, per_partition=3)
    past = "The resolved start offset 10 is greater than the resolved end offset 3 for topic t partition 0"
    for fail_on_data_loss in ("true", "false"):
        with pytest.raises(ERRORS, match=past):
            read(spark, kafka, subscribe="t", startingOffsets='{"t":{"0":10}}', failOnDataLoss=fail_on_data_loss
                 ).collect()
