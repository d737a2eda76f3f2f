"""Faults under Spark's Kafka connector: a broker of a 3-broker cluster killed under a running streaming query,
a leader moved mid-stream, injected Fetch and ListOffsets errors, and slow Fetches. The query recovers as the
connector does against Kafka (its Java client refreshes metadata and retries; the driver retries offset
lookups), and every record is read once. These steer fakekafka's cluster, so they are fakekafka-only."""

from __future__ import annotations

import threading
from typing import Any

import pytest

pytest.importorskip("pyspark", reason="needs pyspark: pip install 'fakekafka[spark]'")

from fakekafka import Cluster
from tests.spark.conftest import rows, run_available_now, source

pytestmark = [pytest.mark.spark, pytest.mark.fakekafka_only]


def produce(kafka: Cluster, topic: str, count: int, partitions: int, start: int = 0) -> None:
    for i in range(start, start + count):
        kafka.produce(topic, f"r{i}".encode(), partition=i % partitions)


class Collected:
    """foreachBatch rows by batch id (a batch replayed after a failure overwrites itself)."""

    def __init__(self) -> None:
        self.batches: dict[int, list[tuple[int, int]]] = {}
        self.lock = threading.Lock()

    def __call__(self, df: Any, batch_id: int) -> None:
        got = sorted((r.partition, r.offset) for r in df.collect())
        with self.lock:
            self.batches[batch_id] = got

    def read(self) -> list[tuple[int, int]]:
        with self.lock:
            return [po for rs in self.batches.values() for po in rs]


def start_query(spark: Any, kafka: Cluster, topic: str, sink: Collected, checkpoint: Any) -> Any:
    return (spark.readStream.format("kafka").options(**source(kafka, subscribe=topic, startingOffsets="earliest"))
            .load().writeStream.foreachBatch(sink).option("checkpointLocation", str(checkpoint))
            .trigger(processingTime="200 milliseconds").start())


@pytest.mark.fakekafka(brokers=3)
def test_stream_survives_the_leaders_broker_being_killed(spark, kafka, tmp_path):
    kafka.create_topic("t", 2, replication_factor=3)
    produce(kafka, "t", 10, 2)
    sink = Collected()
    query = start_query(spark, kafka, "t", sink, tmp_path)
    try:
        kafka.wait_until(lambda: len(sink.read()) == 10, timeout=60, message="the first 10 records")
        killed = kafka.partition_state("t", 0)["leader"]
        kafka.kill_broker(killed)
        assert kafka.partition_state("t", 0)["leader"] != killed
        produce(kafka, "t", 10, 2, start=10)
        kafka.wait_until(lambda: len(sink.read()) == 20, timeout=90, message="the 10 written after the kill")
        assert query.exception() is None
    finally:
        query.stop()
    kafka.assert_consumed_exactly_once("t", sink.read())


@pytest.mark.fakekafka(brokers=3)
def test_stream_follows_a_leader_moved_mid_stream(spark, kafka, tmp_path):
    kafka.create_topic("t", 1, replication_factor=3)
    produce(kafka, "t", 5, 1)
    sink = Collected()
    query = start_query(spark, kafka, "t", sink, tmp_path)
    try:
        kafka.wait_until(lambda: len(sink.read()) == 5, timeout=60, message="the first 5 records")
        state = kafka.partition_state("t", 0)
        successor = next(r for r in state["replicas"] if r != state["leader"])
        kafka.move_leader("t", 0, successor)
        assert kafka.partition_state("t", 0)["leader"] == successor
        produce(kafka, "t", 5, 1, start=5)
        kafka.wait_until(lambda: len(sink.read()) == 10, timeout=90, message="the 5 written after the move")
    finally:
        query.stop()
    kafka.assert_consumed_exactly_once("t", sink.read())


@pytest.mark.parametrize(("api", "error"), [("Fetch", "NOT_LEADER_OR_FOLLOWER"), ("Fetch", "UNKNOWN_SERVER_ERROR"),
                                            ("ListOffsets", "LEADER_NOT_AVAILABLE")])
def test_injected_errors_are_retried(spark, kafka, tmp_path, api, error):
    kafka.create_topic("t", 2)
    produce(kafka, "t", 8, 2)
    fault = kafka.inject_error(api, error, count=2, topic="t")
    got = rows(run_available_now(spark, source(kafka, subscribe="t", startingOffsets="earliest"), tmp_path))
    assert fault.fired == 2
    kafka.assert_consumed_exactly_once("t", [(r.partition, r.offset) for r in got])


def test_slow_fetches_still_read_everything(spark, kafka, tmp_path):
    kafka.create_topic("t", 2)
    produce(kafka, "t", 8, 2)
    fault = kafka.inject_latency(300, "Fetch", count=4)
    got = rows(run_available_now(spark, source(kafka, subscribe="t", startingOffsets="earliest"), tmp_path))
    assert fault.fired == 4
    kafka.assert_consumed_exactly_once("t", [(r.partition, r.offset) for r in got])
