"""Streaming jobs as pipelines run them: partitions added under a running subscription, a start chosen by
timestamp, a stream-stream join whose state lives in the checkpoint, and a processing-time query stopped and
restarted while records keep arriving, nothing read twice."""

from __future__ import annotations

import json
import threading
from typing import Any

import pytest

pytest.importorskip("pyspark", reason="needs pyspark: pip install 'fakekafka[spark]'")
from confluent_kafka.admin import AdminClient, NewPartitions
from pyspark.sql import functions as F

from fakekafka.testing.handle import ClusterHandle
from tests.integration.spark.conftest import checkpoint_offsets, rows, run_available_now, source

pytestmark = [pytest.mark.spark, pytest.mark.kafka_real]


def add_partitions(kafka: ClusterHandle, topic: str, total: int) -> None:
    """CreatePartitions over the wire, as an operator would while the job runs."""
    admin = AdminClient({"bootstrap.servers": kafka.bootstrap_servers})
    for f in admin.create_partitions([NewPartitions(topic, total)], request_timeout=30).values():
        f.result(timeout=30)
    kafka.wait_for_topic(topic, total, timeout=30)


def test_partitions_added_between_runs_are_read_from_their_start(spark, kafka, tmp_path):
    kafka.create_topic("t", 1)
    for i in range(2):
        kafka.produce("t", f"a{i}".encode(), partition=0)
    options = source(kafka, subscribe="t", startingOffsets="earliest")
    assert len(rows(run_available_now(spark, options, tmp_path))) == 2
    add_partitions(kafka, "t", 3)
    for p in (0, 1, 2, 2):
        kafka.produce("t", f"b{p}".encode(), partition=p)
    got = rows(run_available_now(spark, options, tmp_path))
    assert sorted((r.partition, r.offset) for r in got) == [(0, 2), (1, 0), (2, 0), (2, 1)]
    assert checkpoint_offsets(tmp_path) == {"t": {"0": 3, "1": 1, "2": 2}}


def test_streaming_start_by_timestamp(spark, kafka, tmp_path):
    kafka.create_topic("t", 2, configs={"retention.ms": "-1"})  # records of 2023: no retention check deletes them
    base = 1_700_000_000_000
    for i in range(4):
        for p in range(2):
            kafka.produce("t", f"v{p}-{i}".encode(), partition=p, timestamp=base + 1000 * i)
    by_timestamp = json.dumps({"t": {"0": base + 2000, "1": base}})
    options = source(kafka, subscribe="t", startingOffsetsByTimestamp=by_timestamp)
    got = rows(run_available_now(spark, options, tmp_path))
    assert sorted((r.partition, r.offset) for r in got) == [(0, 2), (0, 3), (1, 0), (1, 1), (1, 2), (1, 3)]
    assert checkpoint_offsets(tmp_path) == {"t": {"0": 4, "1": 4}}


def test_stream_stream_join_keeps_its_state_across_runs(spark, kafka, tmp_path):
    """Orders joined with payments by order id: a payment arriving in a later run finds its order in the
    join state the checkpoint kept, so the joined topic gets each pair exactly once."""
    for t in ("orders", "payments", "paid"):
        kafka.create_topic(t, 2)

    def stream(topic: str, name: str) -> Any:
        return (spark.readStream.format("kafka").options(**source(kafka, subscribe=topic, startingOffsets="earliest"))
                .load().select(F.col("key").cast("string").alias("id"), F.col("value").cast("string").alias(name)))

    def run() -> None:
        joined = stream("orders", "item").join(stream("payments", "amount"), "id")
        query = (joined.select(F.col("id").alias("key"), F.concat_ws(":", "item", "amount").alias("value"))
                 .writeStream.format("kafka").option("kafka.bootstrap.servers", kafka.bootstrap_servers)
                 .option("topic", "paid").option("checkpointLocation", str(tmp_path))
                 .trigger(availableNow=True).start())
        assert query.awaitTermination(120), "the join did not finish"
        assert query.exception() is None

    for order, item in (("o1", "pen"), ("o2", "ink"), ("o3", "pad")):
        kafka.produce("orders", item.encode(), key=order.encode())
    kafka.produce("payments", b"3.00", key=b"o1")
    run()
    assert [(r.key, r.value) for r in kafka.records("paid")] == [(b"o1", b"pen:3.00")]

    kafka.produce("payments", b"7.25", key=b"o3")   # its order was read in the first run
    kafka.produce("orders", b"cup", key=b"o4")
    kafka.produce("payments", b"2.50", key=b"o4")
    run()
    assert sorted((r.key, r.value) for r in kafka.records("paid")) == [
        (b"o1", b"pen:3.00"), (b"o3", b"pad:7.25"), (b"o4", b"cup:2.50")]


def test_processing_time_query_restarted_while_records_arrive(spark, kafka, tmp_path):
    """A continuously running query (processing-time trigger) is stopped and started again on its checkpoint
    while a producer keeps writing. A batch the stop cut short before its commit is run again on restart under
    its batch id, with the same offsets (what lets foreachBatch sinks be idempotent); across batch ids every
    record is read, none twice."""
    kafka.create_topic("t", 2)
    batches: dict[int, list[tuple[int, int]]] = {}
    lock = threading.Lock()

    def collect(df: Any, batch_id: int) -> None:
        got = sorted((r.partition, r.offset) for r in df.collect())
        with lock:
            if batch_id in batches:
                assert batches[batch_id] == got, f"batch {batch_id} replayed with other offsets"
            batches[batch_id] = got

    def start() -> Any:
        return (spark.readStream.format("kafka").options(**source(kafka, subscribe="t", startingOffsets="earliest"))
                .load().writeStream.foreachBatch(collect).option("checkpointLocation", str(tmp_path))
                .trigger(processingTime="200 milliseconds").start())

    def count() -> int:
        with lock:
            return sum(len(rs) for rs in batches.values())

    produced = 0

    def produce(n: int) -> None:
        nonlocal produced
        for i in range(produced, produced + n):
            kafka.produce("t", f"r{i}".encode(), partition=i % 2)
        produced += n

    query = start()
    try:
        produce(10)
        kafka.wait_until(lambda: count() == 10, timeout=60, message="the first 10 records")
        produce(6)
    finally:
        query.stop()
    produce(4)  # written while the query is down
    query = start()
    try:
        kafka.wait_until(lambda: count() == 20, timeout=60, message="all 20 records after the restart")
        query.processAllAvailable()
    finally:
        query.stop()
    with lock:
        kafka.assert_consumed_exactly_once("t", [po for rs in batches.values() for po in rs])
