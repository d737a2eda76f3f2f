"""Retention on the cluster's clock: retention.ms and retention.bytes (and their broker synonyms) delete whole
batches from the log start at the retention checks (30 s after start, then every
log.retention.check.interval.ms), below the high watermark, only where cleanup.policy has "delete"."""

from __future__ import annotations

from fakekafka.model.clock import ManualClock
from fakekafka.model.cluster import RETENTION_INITIAL_DELAY_MS, ClusterState, Partition
from fakekafka.model.config import BrokerConfig, ConfigSource
from wire import ErrorCode
from wire.records import build_batch

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


def test_size_retention_deletes_only_what_leaves_the_limit_held() -> None:
    """Kafka deletes a segment only if what remains is still at least retention.bytes."""
    c, clock = _cluster()
    t = c.create_topic("t", 1)
    p = t.partitions[0]
    _produce(c, p, clock, size=100, count=5)
    one = len(p.log.batches[0])
    c.set_topic_configs(t, {"retention.bytes": str(2 * one + 1)})
    _advance(c, clock, RETENTION_INITIAL_DELAY_MS)
    assert p.log.log_start_offset == 2 and p.log.size_bytes == 3 * one
    c.set_topic_configs(t, {"retention.bytes": str(2 * one)})
    _advance(c, clock, CHECK)
    assert p.log.log_start_offset == 3 and p.log.size_bytes == 2 * one


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
