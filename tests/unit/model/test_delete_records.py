"""Moving the log start: PartitionLog.delete_before and ClusterState.delete_records, with followers."""

from __future__ import annotations

import pytest

from fakekafka.model.clock import ManualClock
from fakekafka.model.cluster import ClusterState
from fakekafka.model.config import BrokerConfig
from fakekafka.model.errors import ApiError
from fakekafka.model.log import EpochEntry, PartitionLog
from fakekafka.model.metadata import Broker, Partition
from fakekafka.wire import ErrorCode
from fakekafka.wire.records import build_batch, decode_batch, read_header


def _log(sizes: list[int], epoch: int = 0) -> PartitionLog:
    """A leader's log of batches of the given sizes, timestamps 100 * offset, all below the HW."""
    log = PartitionLog()
    for n in sizes:
        base = log.log_end_offset
        batch = build_batch([{"value": f"v{base + i}".encode(), "timestamp": 100 * (base + i)} for i in range(n)])
        log.append(batch, read_header(batch), epoch)
    log.high_watermark = log.log_end_offset
    return log


def _offsets(log: PartitionLog) -> list[int]:
    return [r.offset for b in log.batches for r in decode_batch(b).records]


def test_whole_batches_below_the_start_go_and_the_one_holding_it_stays() -> None:
    log = _log([2, 2, 2])
    size = log.size_bytes
    log.delete_before(3)
    assert (log.log_start_offset, log.log_end_offset, log.high_watermark) == (3, 6, 6)
    assert log.base_offsets == [2, 4] and log.last_offsets == [3, 5] and _offsets(log) == [2, 3, 4, 5]
    assert log.size_bytes == size - size // 3
    assert len(log.max_timestamps) == len(log.appended_at) == len(log.batch_epochs) == 2
    log.delete_before(4)  # on a batch boundary: the batch before it goes too
    assert log.base_offsets == [4] and log.log_start_offset == 4
    log.delete_before(2)  # never back
    assert log.log_start_offset == 4 and log.base_offsets == [4]


def test_lookups_after_deletion_start_at_the_log_start() -> None:
    log = _log([2, 2, 2])
    log.delete_before(3)
    assert log.offset_for_timestamp(0) == (3, 300)  # record 2 is still stored but below the start
    assert log.read(3, 10_000, min_one=True)[0] is log.batches[0]
    log.delete_before(6)  # everything: an empty log that starts at its end
    assert (log.batches, log.log_start_offset, log.log_end_offset) == ([], 6, 6)
    assert log.offset_for_timestamp(0) is None


def test_epoch_history_is_truncated_from_the_start() -> None:
    log = _log([2])
    for epoch in (1, 2):
        batch = build_batch([{"value": b"x"}, {"value": b"y"}])
        log.append(batch, read_header(batch), epoch)
    log.high_watermark = log.log_end_offset
    assert log.epochs == [EpochEntry(0, 0), EpochEntry(1, 2), EpochEntry(2, 4)]
    log.delete_before(3)
    assert log.epochs == [EpochEntry(1, 3), EpochEntry(2, 4)]
    log.delete_before(4)
    assert log.epochs == [EpochEntry(2, 4)]


def test_a_follower_behind_the_start_empties_and_starts_there() -> None:
    log = _log([2])
    log.delete_before(5)
    assert (log.batches, log.log_start_offset, log.log_end_offset, log.high_watermark) == ([], 5, 5, 5)


# ------------------------------------------------------------------------------------- the cluster

def _cluster() -> ClusterState:
    return ClusterState(BrokerConfig(), ManualClock(0), [Broker(i, "127.0.0.1", 9000 + i) for i in (1, 2, 3)])


def _produce(c: ClusterState, p: Partition, n: int) -> None:
    r = c.append(p, build_batch([{"value": b"v"}] * n), -1)
    assert r.error == ErrorCode.NONE, r


def test_delete_records_checks_the_offset_and_the_policy() -> None:
    c = _cluster()
    p = c.create_topic("t", 1, 1).partitions[0]
    for _ in range(3):
        _produce(c, p, 2)
    assert c.delete_records(p, 3) == 3
    assert c.delete_records(p, 1) == 3  # below the start: nothing changes
    with pytest.raises(ApiError) as e:
        c.delete_records(p, 7)
    assert e.value.code == ErrorCode.OFFSET_OUT_OF_RANGE
    assert c.delete_records(p, -1) == 6  # -1: the high watermark
    compacted = c.create_topic("c", 1, 1, configs={"cleanup.policy": "compact"}).partitions[0]
    with pytest.raises(ApiError) as e:
        c.delete_records(compacted, 0)
    assert e.value.code == ErrorCode.POLICY_VIOLATION
    both = c.create_topic("cd", 1, 1, configs={"cleanup.policy": "compact,delete"}).partitions[0]
    assert c.delete_records(both, 0) == 0


def test_the_high_watermark_bounds_deletion_not_the_log_end() -> None:
    c = _cluster()
    p = c.create_topic("t", 1, 3).partitions[0]
    p.paused.add(3)
    _produce(c, p, 2)  # acks=-1 not waited for here: the HW stays at 0 while follower 3 is paused
    assert (p.log.log_end_offset, p.log.high_watermark) == (2, 0)
    with pytest.raises(ApiError) as e:
        c.delete_records(p, 1)
    assert e.value.code == ErrorCode.OFFSET_OUT_OF_RANGE


def test_followers_take_the_leaders_start() -> None:
    c = _cluster()
    p = c.create_topic("t", 1, 3).partitions[0]
    for _ in range(3):
        _produce(c, p, 2)
    assert c.delete_records(p, 3) == 3
    assert [p.logs[r].log_start_offset for r in (1, 2, 3)] == [3, 3, 3]
    assert [p.logs[r].base_offsets for r in (1, 2, 3)] == [[2, 4]] * 3


def test_a_follower_that_fell_behind_the_start_starts_again_there() -> None:
    c = _cluster()
    p = c.create_topic("t", 1, 3).partitions[0]
    p.paused.add(3)
    p.isr.remove(3)  # out of the ISR, as the lag timeout would do: the HW follows 1 and 2
    for _ in range(3):
        _produce(c, p, 2)
    assert p.logs[3].log_end_offset == 0 and p.log.high_watermark == 6
    c.delete_records(p, 3)
    assert p.logs[3].log_start_offset == 0  # a paused follower does not fetch
    p.paused.discard(3)
    c.replicate(p)
    follower = p.logs[3]
    assert (follower.log_start_offset, follower.log_end_offset) == (3, 6)
    assert follower.base_offsets == [2, 4] and follower.batches[0] is p.log.batches[0]  # the batch holding 3 too
    assert 3 in p.isr
