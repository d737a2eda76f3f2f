"""Log compaction on the cluster's clock, as Kafka's LogCleaner: the latest record per key in non-active
segments, tombstones until delete.retention.ms after their first cleaning, aborted transactions dropped,
markers kept while their transaction's data is, offsets kept (consumers see gaps)."""

from __future__ import annotations

import pytest

from fakekafka.model.clock import ManualClock
from fakekafka.model.cluster import ClusterState
from fakekafka.model.config import BrokerConfig
from fakekafka.model.errors import ApiError
from fakekafka.model.metadata import Broker, Partition
from fakekafka.wire import ErrorCode
from fakekafka.wire.records import DELETE_HORIZON_FLAG, build_batch, decode_batch, read_header

SEGMENT_MS = 1000


def _cluster(brokers: int = 1) -> tuple[ClusterState, ManualClock]:
    clock = ManualClock(1_000_000)
    c = ClusterState(BrokerConfig(), clock, [Broker(i, "127.0.0.1", 9000 + i) for i in range(1, brokers + 1)])
    return c, clock


def _put(c: ClusterState, p: Partition, clock: ManualClock, key: bytes | None, value: bytes | None,
         **batch: object) -> int:
    r = c.append(p, build_batch([{"key": key, "value": value, "timestamp": clock.now_ms()}], **batch))  # type: ignore[arg-type]
    assert r.error == ErrorCode.NONE, r
    return r.base_offset


def _roll(clock: ManualClock) -> None:
    """The next batch starts a new segment: its timestamp is past segment.ms from the active one's first."""
    clock.advance(SEGMENT_MS + 1)


def _visible(p: Partition) -> list[tuple[int, bytes | None, bytes | None]]:
    out = []
    for batch in p.log.read(p.log.log_start_offset, 1 << 30, min_one=True):
        if read_header(batch).is_control:
            continue
        out += [(r.offset, r.key, r.value) for r in decode_batch(bytes(batch)).records]
    return out


def _topic(c: ClusterState, **configs: str) -> Partition:
    t = c.create_topic("t", 1, len(c.brokers), configs={"cleanup.policy": "compact", "segment.ms": str(SEGMENT_MS),
                                                      **configs})
    return t.partitions[0]


def test_latest_value_per_key_with_offsets_kept() -> None:
    c, clock = _cluster()
    p = _topic(c)
    for key, value in [(b"a", b"1"), (b"b", b"1"), (b"a", b"2")]:
        _put(c, p, clock, key, value)
    _roll(clock)
    _put(c, p, clock, b"a", b"3")  # the active segment: never cleaned
    assert c.force_compaction("t") == 1
    assert _visible(p) == [(1, b"b", b"1"), (2, b"a", b"2"), (3, b"a", b"3")]
    assert p.log.log_start_offset == 0 and p.log.log_end_offset == 4  # the start stays; offset 0 is a gap
    assert p.log.size_bytes == sum(len(b) for b in p.log.batches) == sum(s.size for s in p.log.segments)
    assert p.log.cleaner_checkpoint == 3


def test_a_fetch_reads_one_segment_of_a_compacted_log() -> None:
    """A Fetch's read stops at the end of the segment holding its offset, as Kafka's LocalLog.read: from the
    cleaned segment's gap the surviving batches, the active segment at the next read (Kafka 4.4.0 answered a
    consumer from the beginning so in the compat scenario compacted_topic_read_from_earliest)."""
    c, clock = _cluster()
    p = _topic(c)
    for key, value in [(b"a", b"1"), (b"b", b"1"), (b"a", b"2")]:
        _put(c, p, clock, key, value)
    _roll(clock)
    _put(c, p, clock, b"c", b"1")
    _roll(clock)
    _put(c, p, clock, b"d", b"1")  # the active segment
    assert c.force_compaction("t") == 1
    first = p.log.read(0, 1 << 20, min_one=True, one_segment=True)
    assert [read_header(b).base_offset for b in first] == [1, 2, 3]  # the cleaned segments, grouped into one
    assert [read_header(b).base_offset for b in p.log.read(4, 1 << 20, min_one=True, one_segment=True)] == [4]
    assert len(p.log.read(0, 1 << 20, min_one=True)) == 4  # reads that are not a Fetch's go on


def test_the_cleaner_runs_on_the_clock_by_dirty_ratio() -> None:
    c, clock = _cluster()
    p = _topic(c)
    _put(c, p, clock, b"a", b"1")
    _put(c, p, clock, b"a", b"2")
    _roll(clock)
    _put(c, p, clock, b"a", b"3")
    c.tick()  # the cleaner found nothing at start and sleeps log.cleaner.backoff.ms
    assert len(_visible(p)) == 3
    clock.advance(15_000)  # log.cleaner.backoff.ms
    c.tick()
    assert [o for o, _, _ in _visible(p)] == [1, 2]
    assert c.events[-1].kind == "compaction"
    # dirty now: one segment as large as the clean one (ratio 0.5, not above min.cleanable.dirty.ratio 0.5)
    _roll(clock)
    _put(c, p, clock, b"a", b"4")
    clock.advance(15_000)
    c.tick()
    assert [o for o, _, _ in _visible(p)] == [1, 2, 3]
    c.set_topic_configs(p.topic, {**p.topic.configs, "min.cleanable.dirty.ratio": "0.1"})
    clock.advance(15_000)
    c.tick()
    assert [o for o, _, _ in _visible(p)] == [2, 3]


def test_tombstones_go_after_delete_retention_ms() -> None:
    c, clock = _cluster()
    p = _topic(c, **{"delete.retention.ms": "60000"})
    _put(c, p, clock, b"a", b"1")
    _put(c, p, clock, b"b", b"1")
    _put(c, p, clock, b"a", None)
    _roll(clock)
    _put(c, p, clock, b"c", b"1")
    c.force_compaction("t")
    assert _visible(p) == [(1, b"b", b"1"), (2, b"a", None), (3, b"c", b"1")]
    tomb = p.log.batches[p.log.batch_containing(2)]
    horizon = clock.now_ms() + 60_000
    assert read_header(tomb).attributes & DELETE_HORIZON_FLAG and read_header(tomb).base_timestamp == horizon
    assert decode_batch(bytes(tomb)).records[0].timestamp == clock.now_ms() - SEGMENT_MS - 1  # its own, kept
    clock.advance(60_000 - SEGMENT_MS - 2)
    _roll(clock)  # 1 ms before the horizon
    _put(c, p, clock, b"d", b"1")  # a round needs dirty bytes (Kafka's cleaner never cleans only the clean part)
    c.force_compaction("t")
    assert (2, b"a", None) in _visible(p)
    _roll(clock)
    _put(c, p, clock, b"e", b"1")
    c.force_compaction("t")
    assert _visible(p) == [(1, b"b", b"1"), (3, b"c", b"1"), (4, b"d", b"1"), (5, b"e", b"1")]
    assert p.log.base_offsets == [1, 3, 4, 5]


def test_min_compaction_lag_keeps_recent_segments() -> None:
    c, clock = _cluster()
    p = _topic(c, **{"min.compaction.lag.ms": "10000"})
    _put(c, p, clock, b"a", b"1")
    _put(c, p, clock, b"a", b"2")
    _roll(clock)
    _put(c, p, clock, b"a", b"3")
    assert c.force_compaction("t") == 0  # the dirty segment's newest record is 1 s old
    clock.advance(8_998)
    c.force_compaction("t")
    assert len(_visible(p)) == 3
    clock.advance(1)  # now 10 s after offset 1
    c.force_compaction("t")
    assert [o for o, _, _ in _visible(p)] == [1, 2]


def test_max_compaction_lag_cleans_below_the_ratio() -> None:
    c, clock = _cluster()
    p = _topic(c, **{"min.cleanable.dirty.ratio": "0.9", "max.compaction.lag.ms": "100000"})
    for value in (b"1", b"2", b"3", b"4"):
        _put(c, p, clock, b"a", value)
    _roll(clock)
    _put(c, p, clock, b"b", b"1")
    _roll(clock)
    _put(c, p, clock, b"b", b"2")
    assert c.run_cleaner() == 1  # all dirty: ratio 1
    assert [o for o, _, _ in _visible(p)] == [3, 4, 5]
    _roll(clock)
    _put(c, p, clock, b"b", b"3")  # segment [5] became dirty: a small part of the log
    assert c.run_cleaner() == 0
    clock.advance(100_000 - 2 * SEGMENT_MS)
    assert c.run_cleaner() == 0
    clock.advance(2 * SEGMENT_MS + 5)  # segment [5]'s first batch is now older than max.compaction.lag.ms
    assert c.run_cleaner() == 1
    assert [o for o, _, _ in _visible(p)] == [3, 5, 6]


def test_aborted_transactions_go_and_markers_follow_their_data() -> None:
    c, clock = _cluster()
    p = _topic(c, **{"delete.retention.ms": "1000"})
    txn = {"producer_id": 7, "producer_epoch": 0, "transactional": True}
    _put(c, p, clock, b"a", b"aborted", base_sequence=0, **txn)  # 0
    assert c.write_marker(p, 7, 0, False, 0) == ErrorCode.NONE  # ABORT at 1
    _put(c, p, clock, b"a", b"committed", base_sequence=1, **txn)  # 2
    assert c.write_marker(p, 7, 0, True, 0) == ErrorCode.NONE  # COMMIT at 3
    _put(c, p, clock, b"b", b"plain")  # 4
    _roll(clock)
    _put(c, p, clock, b"c", b"active")  # 5
    assert [a.first_offset for a in p.log.aborted] == [0]
    c.force_compaction("t")
    offsets = [p.log.base_offsets[i] for i in range(len(p.log.batches))]
    assert offsets == [1, 2, 3, 4, 5]  # the aborted batch went; its marker stays while the round saw its data
    assert _visible(p) == [(2, b"a", b"committed"), (4, b"b", b"plain"), (5, b"c", b"active")]
    _roll(clock)
    _put(c, p, clock, b"c", b"active2")  # 6
    c.force_compaction("t")  # no more data of the aborted transaction: its marker gets a delete horizon
    assert read_header(p.log.batches[0]).attributes & DELETE_HORIZON_FLAG
    assert p.log.aborted == []
    _roll(clock)  # past the marker's delete horizon (delete.retention.ms 1 s)
    _put(c, p, clock, b"d", b"1")  # 7
    c.force_compaction("t")
    assert [p.log.base_offsets[i] for i in range(len(p.log.batches))] == [2, 3, 4, 6, 7]
    assert p.log.last_stable_offset == p.log.high_watermark == 8


def test_open_transactions_are_not_cleaned() -> None:
    c, clock = _cluster()
    p = _topic(c)
    _put(c, p, clock, b"a", b"1")
    _put(c, p, clock, b"a", b"2", producer_id=9, producer_epoch=0, base_sequence=0, transactional=True)
    _roll(clock)
    _put(c, p, clock, b"a", b"3")
    assert p.log.last_stable_offset == 1
    c.force_compaction("t")  # only offset 0's segment could go, and it holds the open transaction
    assert [o for o, _, _ in _visible(p)] == [0, 1, 2]


def test_the_producers_last_batch_stays_empty() -> None:
    """An idempotent producer's last batch keeps its sequence for the producer state even when compacted away."""
    c, clock = _cluster()
    p = _topic(c)
    _put(c, p, clock, b"a", b"1", producer_id=3, producer_epoch=0, base_sequence=0)
    _put(c, p, clock, b"b", b"1")
    _put(c, p, clock, b"a", b"2")
    _roll(clock)
    _put(c, p, clock, b"b", b"2")
    c.force_compaction("t")
    kept = [read_header(b) for b in p.log.batches]
    assert [(h.base_offset, h.records_count, h.producer_id) for h in kept] == [(0, 0, 3), (1, 1, -1), (2, 1, -1),
                                                                              (3, 1, -1)]
    assert kept[0].base_sequence == 0


def test_compact_delete_applies_both_and_replicas_clean_alike() -> None:
    c, clock = _cluster(3)
    p = _topic(c, **{"cleanup.policy": "compact,delete", "retention.ms": "100000"})
    _put(c, p, clock, b"a", b"1")
    _put(c, p, clock, b"a", b"2")
    _roll(clock)
    _put(c, p, clock, b"b", b"1")
    _roll(clock)
    _put(c, p, clock, b"c", b"1")
    c.force_compaction("t")
    assert len({tuple(bytes(b) for b in log.batches) for log in p.logs.values()}) == 1
    assert [o for o, _, _ in _visible(p)] == [1, 2, 3]
    assert [s.base_offset for s in p.log.segments] == [0, 3]  # cleaning merged [0, 1] and [2] (segment.bytes)
    clock.advance(100_000 - SEGMENT_MS - 1)
    c.apply_retention()  # the merged segment's newest record (offset 2) is exactly 100 s old
    assert p.log.log_start_offset == 0
    clock.advance(1)
    c.apply_retention()
    assert p.log.log_start_offset == 3


def test_force_compaction_refuses_what_it_cannot_clean() -> None:
    c, _ = _cluster()
    c.create_topic("plain", 1)
    with pytest.raises(ApiError) as e:
        c.force_compaction("plain")
    assert e.value.code == ErrorCode.INVALID_CONFIG
    with pytest.raises(ApiError) as e:
        c.force_compaction("nope")
    assert e.value.code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION


def test_a_new_leader_keeps_the_producer_sequence_a_cleaned_batch_held() -> None:
    """The producer's last batch, emptied by compaction, still tells a new leader the producer's last sequence:
    a retry of it is a duplicate, and the next sequence is taken."""
    c, clock = _cluster(3)
    p = _topic(c)
    idem = {"producer_id": 5, "producer_epoch": 0}
    _put(c, p, clock, b"a", b"1", base_sequence=0, **idem)  # 0
    _put(c, p, clock, b"a", b"2")  # 1: supersedes offset 0
    _roll(clock)
    _put(c, p, clock, b"b", b"1")
    c.force_compaction("t")
    assert read_header(p.log.batches[0]).records_count == 0
    old = p.leader_id
    c.kill_broker(old)
    assert p.leader_id != old
    retry = c.append(p, build_batch([{"key": b"a", "value": b"1", "timestamp": clock.now_ms()}], base_sequence=0,
                                    **idem))  # type: ignore[arg-type]
    assert (retry.error, retry.base_offset) == (ErrorCode.NONE, 0)
    assert _put(c, p, clock, b"c", b"1", base_sequence=1, **idem) == 3


def test_an_emptied_marker_has_no_type() -> None:
    from fakekafka.model.log import control_type
    from fakekafka.wire.records import rebuild_batch
    marker = build_batch([{"key": b"\x00\x00\x00\x01", "value": b"\x00\x00\x00\x00\x00\x00", "timestamp": 1}],
                         producer_id=1, producer_epoch=0, transactional=True, control=True)
    assert control_type(marker) == 1
    assert control_type(rebuild_batch(read_header(marker), [])) == -1
