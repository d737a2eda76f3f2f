"""segment.jitter.ms (broker synonyms log.roll.jitter.ms / log.roll.jitter.hours) on the cluster's clock: each
segment gets its own jitter when it is made (Kafka's LogConfig.randomSegmentJitter, below min(segment.jitter.ms,
segment.ms)) and rolls by time once its records span more than segment.ms less that jitter
(LogSegment.shouldRoll). The draws come from the cluster's seed, so a run repeats exactly."""

from __future__ import annotations

from fakekafka.model.clock import ManualClock
from fakekafka.model.cluster import ClusterState
from fakekafka.model.config import BrokerConfig
from fakekafka.model.log import PartitionLog
from fakekafka.model.metadata import Broker, Partition
from fakekafka.wire import ErrorCode
from fakekafka.wire.records import build_batch, read_header


def _cluster(seed: int = 0, brokers: int = 1, **overrides: str) -> tuple[ClusterState, ManualClock]:
    clock = ManualClock(1_000_000)
    nodes = [Broker(i, "127.0.0.1", 9000 + i) for i in range(1, brokers + 1)]
    return ClusterState(BrokerConfig(overrides=dict(overrides)), clock, nodes, seed=seed), clock


def _produce_each_ms(c: ClusterState, p: Partition, clock: ManualClock, ms: int) -> None:
    """One record a millisecond, stamped with the clock, for `ms` milliseconds."""
    for _ in range(ms):
        assert c.append(p, build_batch([{"key": b"k", "value": b"v", "timestamp": clock.now_ms()}])).error \
            == ErrorCode.NONE
        clock.advance(1)


def _rolled(log: PartitionLog) -> list[tuple[int, int]]:
    """(records, jitter) of every segment but the active one: with a record a millisecond, a segment whose first
    record came at t takes records up to t + segment.ms - jitter and rolls at the next."""
    segs = log.segments
    return [(segs[i + 1].base_offset - segs[i].base_offset, segs[i].roll_jitter_ms) for i in range(len(segs) - 1)]


def _jittered(seed: int, configs: dict[str, str], ms: int = 6000) -> list[tuple[int, int]]:
    c, clock = _cluster(seed)
    p = c.create_topic("t", 1, configs=configs).partitions[0]
    _produce_each_ms(c, p, clock, ms)
    return _rolled(p.log)


JITTER = {"segment.ms": "1000", "segment.jitter.ms": "1000"}


def test_segments_roll_earlier_by_their_own_jitter() -> None:
    rolled = _jittered(0, JITTER)
    assert len(rolled) >= 6  # without jitter 6000 ms make 5 whole segments of 1001 records
    for records, jitter in rolled:
        assert 0 <= jitter < 1000
        assert records == 1001 - jitter  # rolled when a record came more than 1000 - jitter ms after the first
    assert len({jitter for _, jitter in rolled}) > 1  # drawn per segment, not once per log
    assert all(records < 1001 for records, _ in rolled[:3])


def test_the_same_seed_rolls_the_same_segments_and_another_seed_others() -> None:
    assert _jittered(0, JITTER) == _jittered(0, JITTER)
    assert _jittered(7, JITTER) == _jittered(7, JITTER)
    assert _jittered(7, JITTER) != _jittered(0, JITTER)


def test_no_jitter_when_the_config_is_0() -> None:
    c, clock = _cluster()
    p = c.create_topic("t", 1, configs={"segment.ms": "1000"}).partitions[0]
    _produce_each_ms(c, p, clock, 4000)
    assert _rolled(p.log) == [(1001, 0)] * 3
    assert p.log.jitter_rng is None  # Kafka draws no random number then either


def test_the_jitter_is_below_segment_ms_when_segment_jitter_ms_is_larger() -> None:
    rolled = _jittered(0, {"segment.ms": "100", "segment.jitter.ms": str(10**12)}, ms=3000)
    assert len(rolled) > 30
    assert all(0 <= jitter < 100 and records == 101 - jitter for records, jitter in rolled)


def test_the_jitter_is_below_segment_jitter_ms_when_that_is_smaller() -> None:
    rolled = _jittered(0, {"segment.ms": "1000", "segment.jitter.ms": "10"}, ms=5000)
    assert len(rolled) >= 4
    assert all(0 <= jitter < 10 and records == 1001 - jitter for records, jitter in rolled)
    assert any(jitter > 0 for _, jitter in rolled)


def test_broker_synonyms() -> None:
    c, clock = _cluster(**{"log.roll.ms": "1000", "log.roll.jitter.ms": "1000"})
    p = c.create_topic("t", 1).partitions[0]
    _produce_each_ms(c, p, clock, 3000)
    assert any(jitter > 0 for _, jitter in _rolled(p.log))
    hours, _ = _cluster(**{"log.roll.jitter.hours": "2"})
    t = hours.create_topic("h", 1)
    assert hours.topic_config_int(t, "segment.jitter.ms") == 7_200_000  # Kafka's logRollTimeJitterMillis
    assert hours.segment_configs(t.partitions[0])["segment_jitter_ms"] == 7_200_000


def test_each_replica_draws_its_own_jitter() -> None:
    """A follower rolls its own segments (Kafka makes each replica's files), so its jitters are its own."""
    c, clock = _cluster(brokers=3)
    p = c.create_topic("t", 1, 3, configs=JITTER).partitions[0]
    _produce_each_ms(c, p, clock, 4000)
    jitters = {node: [j for _, j in _rolled(log)] for node, log in p.logs.items()}
    assert all(len(js) >= 3 for js in jitters.values())
    assert len({tuple(js) for js in jitters.values()}) == 3


def test_a_segment_made_without_configs_draws_at_its_first_append() -> None:
    """A log's first segment, and the one left when truncation or DeleteRecords empties the log, are made where no
    config is at hand: the append that brings their first batch draws the jitter, with its configs."""
    c, clock = _cluster()
    p = c.create_topic("t", 1, configs=JITTER).partitions[0]
    assert p.log.segments[0].roll_jitter_ms == -1
    _produce_each_ms(c, p, clock, 1)
    first = p.log.segments[0].roll_jitter_ms
    assert 0 <= first < 1000 and p.log.jitter_rng is not None
    p.log.high_watermark = p.log.log_end_offset
    p.log.delete_before(p.log.log_end_offset)  # everything: a new empty segment
    assert p.log.segments[0].roll_jitter_ms == -1
    _produce_each_ms(c, p, clock, 1)
    assert 0 <= p.log.segments[0].roll_jitter_ms < 1000
    c.set_topic_configs(p.topic, {"segment.ms": "1000"})  # no jitter from now on
    p.log.delete_before(p.log.log_end_offset)
    _produce_each_ms(c, p, clock, 1)
    assert p.log.segments[0].roll_jitter_ms == 0


def test_a_segment_keeps_its_jitter_when_the_config_changes() -> None:
    """Kafka draws when the segment is made; a later segment.jitter.ms applies to later segments."""
    c, clock = _cluster()
    p = c.create_topic("t", 1, configs={"segment.ms": "1000"}).partitions[0]
    _produce_each_ms(c, p, clock, 10)
    c.set_topic_configs(p.topic, JITTER)
    _produce_each_ms(c, p, clock, 2500)
    rolled = _rolled(p.log)
    assert rolled[0] == (1001, 0)
    assert all(records == 1001 - jitter for records, jitter in rolled[1:]) and any(j > 0 for _, j in rolled[1:])


def test_a_batch_without_timestamps_rolls_by_the_clock_less_the_jitter() -> None:
    """With no timestamp in its first batch, a segment's wait is the clock since it was made (timeWaitedForRoll)."""
    c, clock = _cluster()
    p = c.create_topic("t", 1, configs=JITTER).partitions[0]
    for _ in range(3000):
        batch = build_batch([{"value": b"v", "timestamp": -1}])
        assert read_header(batch).max_timestamp == -1
        assert c.append(p, batch).error == ErrorCode.NONE
        clock.advance(1)
    rolled = _rolled(p.log)
    assert len(rolled) >= 3 and all(records == 1001 - jitter for records, jitter in rolled)


def test_a_compacted_topic_rolls_by_max_compaction_lag_ms_when_it_is_shorter() -> None:
    """Kafka's LogConfig.maxSegmentMs: the active segment of a compacted topic rolls once max.compaction.lag.ms has
    passed, so that the cleaner (which never cleans the active segment) can keep to that lag."""
    lag = {"segment.ms": "1000", "max.compaction.lag.ms": "300"}
    c, clock = _cluster()
    compacted = c.create_topic("c", 1, configs={**lag, "cleanup.policy": "compact"}).partitions[0]
    both = c.create_topic("b", 1, configs={**lag, "cleanup.policy": "compact,delete"}).partitions[0]
    deleted = c.create_topic("d", 1, configs=lag).partitions[0]
    for _ in range(2500):
        for p in (compacted, both, deleted):
            assert c.append(p, build_batch([{"key": b"k", "value": b"v", "timestamp": clock.now_ms()}])).error \
                == ErrorCode.NONE
        clock.advance(1)
    assert _rolled(compacted.log) == _rolled(both.log) == [(301, 0)] * 8
    assert _rolled(deleted.log) == [(1001, 0)] * 2  # max.compaction.lag.ms is the cleaner's alone there


def test_the_jitter_stays_bound_by_segment_ms_when_the_compaction_lag_rolls_sooner() -> None:
    c, clock = _cluster()
    p = c.create_topic("c", 1, configs={"cleanup.policy": "compact", "segment.ms": "1000",
                                        "segment.jitter.ms": "1000", "max.compaction.lag.ms": "300"}).partitions[0]
    _produce_each_ms(c, p, clock, 3000)
    rolled = _rolled(p.log)
    assert any(jitter >= 300 for _, jitter in rolled)  # drawn below segment.ms (1000), not below the lag
    # past the lag less the jitter (Kafka compares with maxSegmentMs - rollJitterMs, which may be below 0)
    assert all(records == max(1, 301 - jitter) for records, jitter in rolled)
