"""kafka.isolation.level=read_committed through Spark's Kafka connector: aborted transactions are skipped (their
offsets and the commit markers' leave gaps the connector must not take for data loss), and a stream stops at
the last stable offset of an open transaction, reading the rest once it commits, nothing twice."""

from __future__ import annotations

import uuid
from typing import Any

import pytest

pytest.importorskip("pyspark", reason="needs pyspark: pip install 'fakekafka[spark]'")
from confluent_kafka import Producer

from fakekafka.testing.handle import ClusterHandle
from tests.integration.spark.conftest import checkpoint_offsets, rows, run_available_now, source

pytestmark = [pytest.mark.spark, pytest.mark.spark_both_routes, pytest.mark.kafka_real]  # CI: also on the stand-in

TIMEOUT = 30.0


def transactional_producer(kafka: ClusterHandle) -> Producer:
    p = Producer({"bootstrap.servers": kafka.bootstrap_servers, "transactional.id": f"tx-{uuid.uuid4().hex[:8]}"})
    p.init_transactions(TIMEOUT)
    return p


def transaction(p: Producer, topic: str, values: list[str], *, commit: bool = True) -> None:
    p.begin_transaction()
    for v in values:
        p.produce(topic, v.encode(), partition=0)
    p.flush(TIMEOUT)  # an abort drops what librdkafka has not sent yet: send it, so the log holds it
    if commit:
        p.commit_transaction(TIMEOUT)
    else:
        p.abort_transaction(TIMEOUT)


def read(spark: Any, kafka: ClusterHandle, isolation: str) -> list[tuple[int, bytes]]:
    df = spark.read.format("kafka").options(**source(kafka, subscribe="t", **{"kafka.isolation.level": isolation}))
    return sorted((r.offset, bytes(r.value)) for r in df.load().collect())


def test_batch_read_committed_skips_aborted_transactions(spark, kafka):
    kafka.create_topic("t", 1)
    p = transactional_producer(kafka)
    transaction(p, "t", ["c1", "c2"])               # offsets 0, 1; marker 2
    transaction(p, "t", ["a1", "a2"], commit=False)  # offsets 3, 4; marker 5
    transaction(p, "t", ["c3"])                     # offset 6; marker 7
    assert read(spark, kafka, "read_committed") == [(0, b"c1"), (1, b"c2"), (6, b"c3")]
    # read_uncommitted (the connector's default) returns the aborted records too, never the markers
    assert read(spark, kafka, "read_uncommitted") == [(0, b"c1"), (1, b"c2"), (3, b"a1"), (4, b"a2"), (6, b"c3")]


def test_stream_waits_for_an_open_transaction_and_reads_nothing_twice(spark, kafka, tmp_path):
    kafka.create_topic("t", 1)
    options = source(kafka, subscribe="t", startingOffsets="earliest", **{"kafka.isolation.level": "read_committed"})
    p = transactional_producer(kafka)
    transaction(p, "t", ["c1"])                     # offset 0; marker 1
    transaction(p, "t", ["a1"], commit=False)       # offset 2; marker 3
    p.begin_transaction()
    p.produce("t", b"open", partition=0)            # offset 4, not yet committed
    p.flush(TIMEOUT)
    first = rows(run_available_now(spark, options, tmp_path))
    assert [(r.offset, r.value) for r in first] == [(0, b"c1")]
    # the batch ends at the last stable offset, the open transaction's first record
    assert checkpoint_offsets(tmp_path) == {"t": {"0": 4}}

    p.commit_transaction(TIMEOUT)                   # marker 5
    transaction(p, "t", ["c2"])                     # offset 6; marker 7
    second = rows(run_available_now(spark, options, tmp_path))
    assert [(r.offset, r.value) for r in second] == [(4, b"open"), (6, b"c2")]
    assert checkpoint_offsets(tmp_path) == {"t": {"0": 8}}
    assert run_available_now(spark, options, tmp_path) == []
