"""Data loss at read time: records deleted through the Admin API (DeleteRecords, what retention does under a
running job) below offsets a batch or micro-batch has already planned to read. As Spark's KafkaDataConsumer:
failOnDataLoss=true fails the query naming the option; false skips to the earliest offset still there and
returns exactly the records that remain, none twice."""

from __future__ import annotations

from typing import Any

import pytest

pytest.importorskip("pyspark", reason="needs pyspark: pip install 'fakekafka[spark]'")
from confluent_kafka import TopicPartition
from confluent_kafka.admin import AdminClient
from pyspark.errors import StreamingQueryException

from fakekafka.testing.handle import ClusterHandle
from tests.integration.spark.conftest import (
    ERRORS,
    checkpoint_offsets,
    rows,
    run_available_now,
    source,
    standin_differs,
)

pytestmark = [pytest.mark.spark, pytest.mark.kafka_real]

LOST = r"(?s)Some data may have been lost.*failOnDataLoss"
"""The start of the connector's message (the stand-in's too); the reason after it is worded differently."""


def produce(kafka: ClusterHandle, topic: str, per_partition: int, partitions: int, start: int = 0) -> None:
    """Records r<partition>-<i>, one batch each (so a deletion never splits a batch)."""
    for i in range(start, start + per_partition):
        for p in range(partitions):
            kafka.produce(topic, f"r{p}-{i}".encode(), partition=p)


def delete_records(kafka: ClusterHandle, topic: str, before: dict[int, int]) -> None:
    """DeleteRecords over the wire (AdminClient), as a retention job or an operator would: the in-process
    handle has no shortcut, and the point is the path a real broker takes."""
    admin = AdminClient({"bootstrap.servers": kafka.bootstrap_servers})
    futures = admin.delete_records([TopicPartition(topic, p, off) for p, off in before.items()],
                                   request_timeout=30)
    low = {tp.partition: f.result(timeout=30).low_watermark for tp, f in futures.items()}
    assert low == before
    stored = {(r.partition, r.offset) for r in kafka.records(topic)}
    assert all(off >= before.get(p, 0) for p, off in stored), "records below the new log start are still stored"


def stored(kafka: ClusterHandle, topic: str, since: dict[int, int] | None = None) -> list[tuple[int, int, bytes]]:
    """(partition, offset, value) of every record fakekafka holds (at or after `since`, per partition)."""
    return sorted((r.partition, r.offset, r.value) for r in kafka.records(topic)
                  if r.offset >= (since or {}).get(r.partition, 0))


def got(records: list[Any]) -> list[tuple[int, int, bytes]]:
    return sorted((r.partition, r.offset, bytes(r.value)) for r in records)


def batch(spark: Any, kafka: ClusterHandle, **options: Any) -> Any:
    return spark.read.format("kafka").options(**source(kafka, subscribe="t", **options)).load()


@pytest.mark.parametrize("fail_on_data_loss", ["true", "false"])
def test_batch_ranges_are_resolved_when_the_read_runs(spark, kafka, fail_on_data_loss):
    """Records deleted between df.rdd and its collect(): Spark's connector resolves the offset ranges when the
    RDD runs (df.rdd does not fix them), so the read starts at the new log start and loses nothing, whatever
    failOnDataLoss says; the same on Kafka."""
    standin_differs(spark, "it fixes the ranges at df.rdd and reports the deleted ones as data loss")
    kafka.create_topic("t", 2)
    produce(kafka, "t", 10, 2)
    planned = batch(spark, kafka, failOnDataLoss=fail_on_data_loss).rdd
    delete_records(kafka, "t", {0: 4, 1: 10})  # partition 0 keeps 4..9, partition 1 keeps nothing
    assert kafka.end_offsets("t") == {0: 10, 1: 10}
    assert got(planned.collect()) == stored(kafka, "t") == [(0, i, f"r0-{i}".encode()) for i in range(4, 10)]


@pytest.mark.parametrize("fail_on_data_loss", ["true", "false"])
def test_batch_starting_offsets_below_the_log_start(spark, kafka, fail_on_data_loss):
    """startingOffsets names offset 0 after 0..2 were deleted: Spark hands the range [0, end) to the executor,
    whose read finds the offsets gone."""
    kafka.create_topic("t", 1)
    produce(kafka, "t", 6, 1)
    delete_records(kafka, "t", {0: 3})
    df = batch(spark, kafka, startingOffsets='{"t":{"0":0}}', failOnDataLoss=fail_on_data_loss)
    if fail_on_data_loss == "true":
        with pytest.raises(ERRORS, match=LOST):
            df.collect()
    else:
        assert got(df.collect()) == stored(kafka, "t") == [(0, i, f"r0-{i}".encode()) for i in range(3, 6)]


def test_stream_skips_records_deleted_past_its_checkpoint_when_failOnDataLoss_is_false(spark, kafka, tmp_path):
    kafka.create_topic("t", 2)
    produce(kafka, "t", 3, 2)
    options = source(kafka, subscribe="t", startingOffsets="earliest", failOnDataLoss="false")
    first = rows(run_available_now(spark, options, tmp_path))
    assert got(first) == stored(kafka, "t")
    assert checkpoint_offsets(tmp_path) == {"t": {"0": 3, "1": 3}}

    produce(kafka, "t", 5, 2, start=3)  # offsets 3..7 in each partition
    # retention moves past the checkpoint: partition 0 loses 3..5 (unread), partition 1 loses everything
    delete_records(kafka, "t", {0: 6, 1: 8})
    second = rows(run_available_now(spark, options, tmp_path))
    assert got(second) == stored(kafka, "t") == [(0, 6, b"r0-6"), (0, 7, b"r0-7")]
    assert checkpoint_offsets(tmp_path) == {"t": {"0": 8, "1": 8}}
    assert {(r.partition, r.offset) for r in first}.isdisjoint((r.partition, r.offset) for r in second)

    produce(kafka, "t", 1, 2, start=8)  # the query goes on from where it is, nothing read twice
    assert got(rows(run_available_now(spark, options, tmp_path))) == stored(kafka, "t", since={0: 8, 1: 8})
    assert kafka.end_offsets("t") == {0: 9, 1: 9}
    assert checkpoint_offsets(tmp_path) == {"t": {"0": 9, "1": 9}}


def test_stream_fails_on_records_deleted_past_its_checkpoint(spark, kafka, tmp_path):
    """The failed batch is planned but not committed, so a restart with failOnDataLoss=false (the way out
    Spark's message points to) runs it again and reads what is left of it."""
    kafka.create_topic("t", 1)
    produce(kafka, "t", 3, 1)
    options = source(kafka, subscribe="t", startingOffsets="earliest")
    assert len(rows(run_available_now(spark, options, tmp_path))) == 3
    produce(kafka, "t", 5, 1, start=3)
    delete_records(kafka, "t", {0: 5})
    with pytest.raises(StreamingQueryException, match=LOST):
        run_available_now(spark, options, tmp_path)
    assert checkpoint_offsets(tmp_path) == {"t": {"0": 8}}  # planned (offset log) but not committed
    assert not (tmp_path / "commits" / "1").exists()

    lenient = {**options, "failOnDataLoss": "false"}
    assert got(rows(run_available_now(spark, lenient, tmp_path))) == stored(kafka, "t", since={0: 3}) == [
        (0, 5, b"r0-5"), (0, 6, b"r0-6"), (0, 7, b"r0-7")]
    assert (tmp_path / "commits" / "1").exists()
