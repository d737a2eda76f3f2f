"""spark.readStream.format("kafka"): availableNow, the offsets in the checkpoint, restarts, rate limits and data
loss."""

from __future__ import annotations

import threading
import time

import pytest

pytest.importorskip("pyspark", reason="needs pyspark: pip install 'fakekafka[spark]'")
from pyspark.errors import PySparkException, StreamingQueryException

from tests.integration.spark.conftest import checkpoint_offsets, rows, run_available_now, source

pytestmark = [pytest.mark.spark, pytest.mark.kafka_real]


def produce(kafka, topic, count, partitions, start=0):
    for i in range(start, start + count):
        kafka.produce(topic, f"r{i}".encode(), partition=i % partitions)


@pytest.mark.spark_both_routes
def test_available_now_restart_reads_nothing_twice(spark, kafka, tmp_path):
    kafka.create_topic("t", 2)
    produce(kafka, "t", 6, 2)
    options = source(kafka, subscribe="t", startingOffsets="earliest")
    first = rows(run_available_now(spark, options, tmp_path))
    assert sorted(r.value for r in first) == [f"r{i}".encode() for i in range(6)]
    # the checkpoint holds KafkaSourceOffset's JSON: topic -> partition -> next offset to read
    assert checkpoint_offsets(tmp_path) == {"t": {"0": 3, "1": 3}}

    produce(kafka, "t", 5, 2, start=6)
    second = rows(run_available_now(spark, options, tmp_path))
    assert sorted(r.value for r in second) == sorted(f"r{i}".encode() for i in range(6, 11))
    assert checkpoint_offsets(tmp_path) == {"t": {"0": 6, "1": 5}}
    kafka.assert_consumed_exactly_once("t", [(r.partition, r.offset) for r in first + second])

    assert run_available_now(spark, options, tmp_path) == []  # nothing new: no batch at all


@pytest.mark.spark_both_routes
def test_latest_is_the_default_start_and_new_partitions_start_at_earliest(spark, kafka, tmp_path):
    kafka.create_topic("t", 1)
    produce(kafka, "t", 3, 1)
    options = source(kafka, subscribe="t")
    assert rows(run_available_now(spark, options, tmp_path)) == []  # starts at the latest offsets
    assert checkpoint_offsets(tmp_path) == {"t": {"0": 3}}

    produce(kafka, "t", 2, 1, start=3)
    kafka.create_topic("u", 1)  # not subscribed: ignored
    produce(kafka, "u", 1, 1)
    assert [(r.topic, r.offset) for r in rows(run_available_now(spark, options, tmp_path))] == [("t", 3), ("t", 4)]


def test_subscribe_pattern_picks_up_a_new_topic_from_its_earliest_offset(spark, kafka, tmp_path):
    kafka.create_topic("events-a", 1)
    produce(kafka, "events-a", 2, 1)
    options = source(kafka, subscribePattern="events-.*", startingOffsets="earliest")
    assert len(rows(run_available_now(spark, options, tmp_path))) == 2
    kafka.create_topic("events-b", 2)
    produce(kafka, "events-b", 4, 2)
    got = rows(run_available_now(spark, options, tmp_path))
    assert sorted((r.topic, r.partition, r.offset) for r in got) == [
        ("events-b", 0, 0), ("events-b", 0, 1), ("events-b", 1, 0), ("events-b", 1, 1)]
    assert checkpoint_offsets(tmp_path) == {"events-a": {"0": 2}, "events-b": {"0": 2, "1": 2}}


@pytest.mark.spark_both_routes
def test_max_offsets_per_trigger_splits_available_now_into_batches(spark, kafka, tmp_path):
    kafka.create_topic("t", 3)
    for i in range(10):  # uneven partitions: 6, 3, 1
        kafka.produce("t", f"r{i}".encode(), partition=0 if i < 6 else 1 if i < 9 else 2)
    batches = run_available_now(spark, source(kafka, subscribe="t", startingOffsets="earliest",
                                              maxOffsetsPerTrigger=4), tmp_path)
    # shares follow what each partition has waiting, floored (a share below one rounded up): 6:3:1 of 4 ->
    # 2, 1, 1; then 4:2:0 -> 2, 1; then the last 3
    assert [len(rs) for _, rs in batches] == [4, 3, 3]
    kafka.assert_consumed_exactly_once("t", [(r.partition, r.offset) for r in rows(batches)])
    assert sorted(r.partition for r in batches[0][1]) == [0, 0, 1, 2]


def test_min_offsets_per_trigger_waits_for_enough_records(spark, kafka, tmp_path):
    kafka.create_topic("t", 1)
    produce(kafka, "t", 3, 1)
    seen: list[int] = []
    lock = threading.Lock()

    def collect(df, batch_id):
        with lock:
            seen.extend(r.offset for r in df.collect())

    query = (spark.readStream.format("kafka").options(**source(kafka, subscribe="t", startingOffsets="earliest",
                                                                minOffsetsPerTrigger=5, maxTriggerDelay="60s"))
             .load().writeStream.foreachBatch(collect).option("checkpointLocation", str(tmp_path))
             .trigger(processingTime="200 milliseconds").start())
    try:
        # the first trigger runs whatever waits (no batch ran within maxTriggerDelay yet), as in Spark
        kafka.wait_until(lambda: len(seen) == 3, timeout=30, message="the first batch")
        produce(kafka, "t", 3, 1, start=3)
        time.sleep(2)  # ten triggers, each finding 3 < 5 records waiting
        with lock:
            assert seen == [0, 1, 2]
        produce(kafka, "t", 2, 1, start=6)
        kafka.wait_until(lambda: len(seen) == 8, timeout=30, message="the batch of 5 records")
        assert sorted(seen) == list(range(8))
    finally:
        query.stop()


def test_fail_on_data_loss_when_the_topic_was_recreated(spark, kafka, tmp_path):
    kafka.create_topic("t", 1)
    produce(kafka, "t", 5, 1)
    strict = source(kafka, subscribe="t", startingOffsets="earliest")
    assert len(rows(run_available_now(spark, strict, tmp_path / "strict"))) == 5
    lenient = {**strict, "failOnDataLoss": "false"}
    assert len(rows(run_available_now(spark, lenient, tmp_path / "lenient"))) == 5

    kafka.delete_topic("t")  # offsets 0..4 are gone; the new topic has only 0..1
    kafka.create_topic("t", 1)
    produce(kafka, "t", 2, 1)
    changed = r"(?s)(?=.*failOnDataLoss)(?=.*Partition t-0'?s? offset was changed from 5 to 2)"
    with pytest.raises(StreamingQueryException, match=changed):
        run_available_now(spark, strict, tmp_path / "strict")

    # failOnDataLoss=false: Spark's behaviour is to log, skip to the new end and go on
    assert rows(run_available_now(spark, lenient, tmp_path / "lenient")) == []
    assert checkpoint_offsets(tmp_path / "lenient") == {"t": {"0": 2}}
    produce(kafka, "t", 1, 1, start=2)
    assert [(r.offset, r.value) for r in rows(run_available_now(spark, lenient, tmp_path / "lenient"))] == [(2, b"r2")]


def test_streaming_refuses_ending_offsets(spark, kafka, tmp_path):
    with pytest.raises(PySparkException, match="ending offset not valid in streaming queries"):
        run_available_now(spark, source(kafka, subscribe="t", endingOffsets="latest"), tmp_path)
