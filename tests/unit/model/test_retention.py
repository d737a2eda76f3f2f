"""Retention on the cluster's clock: retention.ms and retention.bytes (and their broker synonyms) delete whole
segments from the log start at the retention checks (log.initial.task.delay.ms, 30 s, after start, then every
log.retention.check.interval.ms), below the high watermark, only where cleanup.policy has "delete"; segments
roll by segment.bytes and segment.ms as Kafka's LogSegment.shouldRoll decides."""

from __future__ import annotations

import pytest

from fakekafka.model.clock import ManualClock
from fakekafka.model.cluster import ClusterState
from fakekafka.model.config import BrokerConfig, ConfigSource, InvalidConfig
from fakekafka.model.log_manager import RETENTION_INITIAL_DELAY_MS
from fakekafka.model.metadata import Broker, Partition
from fakekafka.wire import ErrorCode
from fakekafka.wire.records import build_batch

CHECK = 300_000


def _cluster(**overrides: str) -> tuple[ClusterState, ManualClock]:
    clock = ManualClock(1_000_000)
    return ClusterState(BrokerConfig(overrides=dict(overrides)), clock), clock


def _produce(c: ClusterState, p: Partition, clock: ManualClock, size: int = 10, count: int = 1) -> None:
    for _ in range(count):
        r = c.append(p, build_batch([{"value": b"x" * size, "timestamp": clock.now_ms()}]))
        assert r.error == ErrorCode.NONE


def _advance(c: ClusterState, clock: ManualClock, ms: int) -> None:
    clock.advance(ms)
    c.tick()


def test_time_retention_at_the_checks() -> None:
    c, clock = _cluster()
    t = c.create_topic("t", 1, configs={"retention.ms": "10000"})
    p = t.partitions[0]
    _produce(c, p, clock)  # offset 0 at t0
    _advance(c, clock, 5_000)
    _produce(c, p, clock)  # offset 1 at t0 + 5 s
    _advance(c, clock, RETENTION_INITIAL_DELAY_MS - 5_000 - 1)
    assert p.log.log_start_offset == 0  # the first check has not come yet
    _advance(c, clock, 1)  # the first check, 30 s in: both are older than 10 s
    assert p.log.log_start_offset == 2
    assert p.log.log_end_offset == 2 and p.log.size_bytes == 0
    assert c.events[-1].kind == "retention"


def test_lowered_retention_deletes_at_the_next_check_only() -> None:
    c, clock = _cluster()
    t = c.create_topic("t", 1)
    p = t.partitions[0]
    _produce(c, p, clock, count=2)
    _advance(c, clock, RETENTION_INITIAL_DELAY_MS)
    assert p.log.log_start_offset == 0  # the default week
    c.set_topic_configs(t, {"retention.ms": "1000"})
    assert p.log.log_start_offset == 0
    _advance(c, clock, CHECK - 1)
    assert p.log.log_start_offset == 0
    _advance(c, clock, 1)
    assert p.log.log_start_offset == 2


def test_size_retention_deletes_whole_segments_that_leave_the_limit_held() -> None:
    """Kafka deletes a segment only if what remains is still at least retention.bytes; one active segment
    over the limit is kept whole (what fakekafka got wrong before it had segments)."""
    c, clock = _cluster()
    t = c.create_topic("t", 1, configs={"segment.ms": "1000"})
    p = t.partitions[0]
    _produce(c, p, clock, size=100, count=2)  # one segment: [0, 1]
    clock.advance(1001)
    _produce(c, p, clock, size=100, count=2)  # rolled: [2, 3]
    clock.advance(1001)
    _produce(c, p, clock, size=100)  # rolled: [4]
    one = len(p.log.batches[0])
    assert [s.base_offset for s in p.log.segments] == [0, 2, 4]
    assert [s.size for s in p.log.segments] == [2 * one, 2 * one, one]
    c.set_topic_configs(t, {"retention.bytes": str(3 * one)})  # deleting [0, 1] leaves exactly 3 batches
    _advance(c, clock, RETENTION_INITIAL_DELAY_MS)
    assert p.log.log_start_offset == 2 and p.log.size_bytes == 3 * one
    c.set_topic_configs(t, {"retention.bytes": str(2 * one)})  # [2, 3] would leave 1 < 2: kept
    _advance(c, clock, CHECK)
    assert p.log.log_start_offset == 2
    c.set_topic_configs(t, {"retention.bytes": str(one)})
    _advance(c, clock, CHECK)
    assert p.log.log_start_offset == 4 and [s.base_offset for s in p.log.segments] == [4]


def test_size_retention_keeps_an_active_segment_over_the_limit() -> None:
    c, clock = _cluster()
    t = c.create_topic("t", 1, configs={"retention.bytes": "300"})
    p = t.partitions[0]
    _produce(c, p, clock, size=100, count=5)
    _advance(c, clock, RETENTION_INITIAL_DELAY_MS)
    assert p.log.log_start_offset == 0 and len(p.log.segments) == 1  # Kafka: nothing, until a roll
    c.set_topic_configs(t, {"retention.bytes": "0"})
    _advance(c, clock, CHECK)  # the whole active segment: Kafka rolls a new one at the end and deletes it
    assert p.log.log_start_offset == 5 and p.log.size_bytes == 0
    assert [s.base_offset for s in p.log.segments] == [5]


def test_time_retention_goes_by_the_newest_timestamp_of_a_segment() -> None:
    c, clock = _cluster()
    t = c.create_topic("t", 1, configs={"retention.ms": "100000", "segment.ms": "60000"})
    p = t.partitions[0]
    _produce(c, p, clock)  # offset 0 at t0, segment 0
    clock.advance(60_000)
    _produce(c, p, clock)  # offset 1 at t0 + 60 s: not past segment.ms (60 s), same segment
    clock.advance(1)
    _produce(c, p, clock)  # offset 2 at t0 + 60.001 s: rolls
    assert [s.base_offset for s in p.log.segments] == [0, 2]
    c.apply_retention()  # 60 s: nothing is 100 s old
    clock.advance(100_000 - 1)  # offset 0 is 160 s old, but segment 0's newest (offset 1) is exactly 100 s
    c.apply_retention()
    assert p.log.log_start_offset == 0
    clock.advance(1)
    c.apply_retention()
    assert p.log.log_start_offset == 2


def test_segment_bytes_rolls_before_a_batch_that_would_pass_it() -> None:
    c, clock = _cluster()
    t = c.create_topic("t", 1, configs={"segment.bytes": str(1 << 20)})
    p = t.partitions[0]
    _produce(c, p, clock, size=300_000, count=4)
    sizes = [s.size for s in p.log.segments]
    assert [s.base_offset for s in p.log.segments] == [0, 3] and sizes[0] <= 1 << 20 < sizes[0] + sizes[1]


def test_segment_ms_goes_by_record_timestamps_not_the_clock() -> None:
    """Kafka compares the new batch's max timestamp with the segment's first batch's (LogSegment.timeWaitedForRoll)."""
    c, clock = _cluster()
    t = c.create_topic("t", 1, configs={"segment.ms": "1000"})
    p = t.partitions[0]
    now = clock.now_ms()
    for ts in (now, now + 1000, now - 5000, now + 1001):
        assert c.append(p, build_batch([{"value": b"v", "timestamp": ts}])).error == ErrorCode.NONE
    assert [s.base_offset for s in p.log.segments] == [0, 3]
    clock.advance(10_000)  # the clock alone never rolls
    assert len(p.log.segments) == 2


def test_followers_roll_and_follow_the_start() -> None:
    clock = ManualClock(1_000_000)
    c = ClusterState(BrokerConfig(), clock, [Broker(i, "127.0.0.1", 9000 + i) for i in (1, 2, 3)])
    t = c.create_topic("t", 1, 3, configs={"segment.ms": "1000", "retention.ms": "5000"})
    p = t.partitions[0]
    _produce(c, p, clock)
    clock.advance(2000)
    _produce(c, p, clock)
    for log in p.logs.values():
        assert [s.base_offset for s in log.segments] == [0, 1]
    _advance(c, clock, RETENTION_INITIAL_DELAY_MS)
    assert {log.log_start_offset for log in p.logs.values()} == {2}


def test_broker_synonyms_and_check_interval() -> None:
    c, clock = _cluster(**{"log.retention.check.interval.ms": "1000"})
    c.config.dynamic_defaults["log.retention.ms"] = "500"
    t = c.create_topic("t", 1)
    p = t.partitions[0]
    _advance(c, clock, RETENTION_INITIAL_DELAY_MS)  # the first check, on an empty log
    _produce(c, p, clock)
    _advance(c, clock, 999)
    assert p.log.log_start_offset == 0
    _advance(c, clock, 1)  # the next check, 1 s later
    assert p.log.log_start_offset == 1


def test_initial_task_delay_sets_the_first_check() -> None:
    """log.initial.task.delay.ms (internal in Kafka, "for testing only") moves the first check: 0 makes it the
    cluster's first tick, then every log.retention.check.interval.ms."""
    c, clock = _cluster(**{"log.initial.task.delay.ms": "0", "log.retention.check.interval.ms": "100"})
    t = c.create_topic("t", 1, configs={"retention.ms": "1000", "segment.ms": "1"})
    p = t.partitions[0]
    r = c.append(p, build_batch([{"value": b"old", "timestamp": clock.now_ms() - 2000}]))
    assert r.error == ErrorCode.NONE
    _produce(c, p, clock)  # a fresh record in a segment of its own
    _advance(c, clock, 0)  # the first check, at start
    assert (p.log.log_start_offset, p.log.log_end_offset) == (1, 2)
    _advance(c, clock, 900)
    _produce(c, p, clock)  # offset 2, so offset 1's segment is no longer the active one
    _advance(c, clock, 100)  # the check 1000 ms in: offset 1 is 1000 ms old, not more
    assert p.log.log_start_offset == 1
    _advance(c, clock, 99)
    assert p.log.log_start_offset == 1  # no check in between
    _advance(c, clock, 1)  # the next, 100 ms later: 1100 ms old
    assert p.log.log_start_offset == 2


def test_initial_task_delay_refused_below_zero() -> None:
    with pytest.raises(InvalidConfig, match="Invalid value -1 for configuration log.initial.task.delay.ms: "
                                            "Value must be at least 0"):
        BrokerConfig.from_properties({"log.initial.task.delay.ms": "-1"})


def test_compacted_and_unreplicated_are_kept() -> None:
    c, clock = _cluster()
    compacted = c.create_topic("c", 1, configs={"cleanup.policy": "compact", "retention.ms": "0"})
    _produce_keyed = c.append(compacted.partitions[0], build_batch([{"key": b"k", "value": b"v",
                                                                     "timestamp": clock.now_ms()}]))
    assert _produce_keyed.error == ErrorCode.NONE
    t = c.create_topic("t", 1, configs={"retention.ms": "0"})
    p = t.partitions[0]
    _produce(c, p, clock)
    p.log.high_watermark = 0  # not yet replicated: retention never passes the high watermark
    _advance(c, clock, RETENTION_INITIAL_DELAY_MS)
    assert compacted.partitions[0].log.log_start_offset == 0
    assert p.log.log_start_offset == 0


def test_retention_hours_set_on_the_broker() -> None:
    """log.retention.hours (static) is where retention.ms's default comes from when log.retention.ms is unset;
    Kafka still reports it as DEFAULT_CONFIG."""
    c, clock = _cluster(**{"log.retention.hours": "1"})
    t = c.create_topic("t", 1)
    assert c.topic_config(t, "retention.ms")[:2] == ("3600000", ConfigSource.DEFAULT_CONFIG)
    p = t.partitions[0]
    _produce(c, p, clock)
    _advance(c, clock, RETENTION_INITIAL_DELAY_MS)
    assert p.log.log_start_offset == 0
    _advance(c, clock, 4 * CHECK)  # 20.5 minutes in
    assert p.log.log_start_offset == 0
    _advance(c, clock, 8 * CHECK)  # 60.5 minutes in
    assert p.log.log_start_offset == 1


def test_size_retention_counts_what_delete_records_left_in_a_segment() -> None:
    """After DeleteRecords the segment holding the new start keeps its file's size in Kafka, and
    retention.bytes measures the log by its segments' sizes."""
    c, clock = _cluster()
    t = c.create_topic("t", 1, configs={"segment.ms": "1000"})
    p = t.partitions[0]
    _produce(c, p, clock, size=100, count=2)  # [0, 1]
    clock.advance(1001)
    _produce(c, p, clock, size=100)  # [2]
    clock.advance(1001)
    _produce(c, p, clock, size=100)  # [3]
    one = len(p.log.batches[0])
    c.delete_records(p, 1)
    assert p.log.segments[0].size == 2 * one and p.log.size_bytes == 3 * one
    c.set_topic_configs(t, {**t.configs, "retention.bytes": str(2 * one)})
    c.apply_retention()  # 4 batches' worth by segment sizes: deleting [0, 1] leaves 2
    assert p.log.log_start_offset == 2


@pytest.mark.parametrize(("step_ms", "bases"), [(1, [0, 3, 6]), (0, [0, 4])])
def test_segment_index_bytes_rolls_when_an_index_is_full(step_ms: int, bases: list[int]) -> None:
    """An index entry per index.interval.bytes appended; segment.index.bytes 24 holds 3 offset entries and 2
    time entries, and a time entry is added only for a newer timestamp (Kafka's TimeIndex.maybeAppend)."""
    c, clock = _cluster()
    t = c.create_topic("t", 1, configs={"segment.index.bytes": "24"})
    p = t.partitions[0]
    for _ in range(7):
        _produce(c, p, clock, size=5000)
        clock.advance(step_ms)
    assert [s.base_offset for s in p.log.segments] == bases


def test_the_smallest_segment_index_bytes_gives_each_batch_its_segment() -> None:
    c, clock = _cluster()
    t = c.create_topic("t", 1, configs={"segment.index.bytes": "4"})
    p = t.partitions[0]
    _produce(c, p, clock, count=3)
    assert [s.base_offset for s in p.log.segments] == [0, 1, 2]
