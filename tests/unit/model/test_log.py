"""PartitionLog: offsets, reads within byte limits, timestamps, epochs. Pure, no clock needed."""

from __future__ import annotations

from fakekafka.model.log import PartitionLog
from fakekafka.wire.records import build_batch, decode_batch, read_header


def _append(log: PartitionLog, n: int, ts: int, epoch: int = 0, value: bytes = b"v") -> int:
    """Appends as a leader with no followers, whose high watermark is its log end."""
    batch = build_batch([{"value": value, "timestamp": ts + i} for i in range(n)])
    base = log.append(batch, read_header(batch), epoch)
    log.high_watermark = log.log_end_offset
    return base


def test_offsets_advance_by_batch_size_and_the_log_leaves_the_hw_alone() -> None:
    log = PartitionLog()
    batch = build_batch([{"value": b"x"}])
    assert log.append(batch, read_header(batch), 0) == 0
    assert (log.log_end_offset, log.high_watermark) == (1, 0)  # the ISR decides the HW, not the log
    assert _append(log, 3, 100) == 1
    assert _append(log, 2, 200) == 4
    assert (log.log_start_offset, log.log_end_offset, log.high_watermark) == (0, 6, 6)
    assert [r.offset for b in log.batches for r in decode_batch(b).records] == [0, 1, 2, 3, 4, 5]


def test_stored_bytes_are_the_producers_except_offset_and_epoch() -> None:
    log = PartitionLog()
    batch = build_batch([{"value": b"x", "timestamp": 1}])
    _append(log, 1, 0)
    log.append(batch, read_header(batch), 4)
    assert log.batches[1][16:] == batch[16:]
    assert read_header(log.batches[1]).partition_leader_epoch == 4


def test_read_returns_whole_batches_within_max_bytes_but_at_least_one() -> None:
    log = PartitionLog()
    for i in range(4):
        _append(log, 2, i * 10, value=b"x" * 100)
    size = len(log.batches[0])
    assert log.read(0, size * 2, min_one=False) == log.batches[:2]
    assert log.read(3, size, min_one=False) == log.batches[1:2]  # the batch holding offset 3
    assert log.read(0, 1, min_one=True) == log.batches[:1]
    assert log.read(0, 1, min_one=False) == []
    assert log.read(8, 10_000, min_one=True) == []


def test_offset_for_timestamp_finds_first_record_at_or_after() -> None:
    log = PartitionLog()
    _append(log, 3, 100)  # 100, 101, 102 at offsets 0-2
    _append(log, 3, 200)  # 200, 201, 202 at offsets 3-5
    assert log.offset_for_timestamp(0) == (0, 100)
    assert log.offset_for_timestamp(101) == (1, 101)
    assert log.offset_for_timestamp(150) == (3, 200)
    assert log.offset_for_timestamp(203) is None
    assert log.max_timestamp_offset() == (5, 202)


def test_epoch_history_answers_end_offsets() -> None:
    log = PartitionLog()
    _append(log, 2, 0, epoch=0)
    _append(log, 2, 0, epoch=2)
    _append(log, 1, 0, epoch=2)
    assert log.end_offset_for_epoch(0) == (0, 2)
    assert log.end_offset_for_epoch(1) == (0, 2)
    assert log.end_offset_for_epoch(2) == (2, 5)
    # as Kafka's LeaderEpochFileCache.endOffsetFor: an epoch newer than any known, or -1, cannot be placed
    assert log.end_offset_for_epoch(9) == (-1, -1)
    assert log.end_offset_for_epoch(-1) == (-1, -1)
    # the leader's current epoch, known from its election on, ends at the log end before any append in it
    assert log.end_offset_for_epoch(3, leader_epoch=3) == (3, 5)
    assert log.end_offset_for_epoch(2, leader_epoch=3) == (2, 5)
    later = PartitionLog()
    _append(later, 2, 0, epoch=1)
    assert later.end_offset_for_epoch(0) == (0, 0)  # older than all known: itself, ending where they start


def test_truncate_and_divergence() -> None:
    leader, follower = PartitionLog(), PartitionLog()
    for log in (leader, follower):
        _append(log, 2, 0, epoch=0)
    _append(follower, 2, 0, epoch=0)  # the follower led epoch 0 a little longer
    _append(leader, 1, 0, epoch=1)    # the new leader wrote in epoch 1 from offset 2
    assert follower.divergence_from(leader) == 2
    follower.truncate_to(2)
    assert (follower.log_end_offset, len(follower.batches), follower.last_epoch()) == (2, 1, 0)
    assert follower.divergence_from(leader) == 2  # nothing left that differs
    i = 1
    follower.append_replica(leader.batches[i], leader.base_offsets[i], leader.last_offsets[i],
                            leader.max_timestamps[i], leader.batch_epochs[i])
    assert follower.log_end_offset == leader.log_end_offset and follower.last_epoch() == 1
    follower.truncate_to(0)
    assert (follower.log_end_offset, follower.epochs, follower.size_bytes) == (0, [], 0)
