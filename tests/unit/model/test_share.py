"""The share-group model (fakekafka/model/share.py) on the fake clock: the group's epochs and the simple assignor,
share-partition states, locks expiring, delivery limits, the start offset, sessions."""

from __future__ import annotations

import struct
import uuid

import pytest

from fakekafka.model.clock import ManualClock
from fakekafka.model.log import PartitionLog
from fakekafka.model.share import RecordState, ShareConfig, ShareCoordinator, SharePartition
from fakekafka.wire import ErrorCode
from fakekafka.wire.records import build_batch, decode_batch, read_header

ACCEPT, RELEASE, REJECT, RENEW, GAP = 1, 2, 3, 4, 0
TOPIC = uuid.uuid4()


def _log(*batch_sizes: int) -> tuple[list[bytes], int]:
    """Stored batches of the given record counts, offsets from 0, and the log end."""
    batches, offset = [], 0
    for n in batch_sizes:
        batches.append(bytes(build_batch([{"key": None, "value": b"v%d" % i} for i in range(n)], base_offset=offset)))
        offset += n
    return batches, offset


def _reader(batches: list[bytes]):  # noqa: ANN202 - the callable SharePartition.acquire takes
    from fakekafka.wire.records import read_header

    def read(offset: int) -> list[bytes]:
        return [b for b in batches if read_header(b).last_offset >= offset]
    return read


def _partition(start: int = 0) -> SharePartition:
    return SharePartition("g", "t", 0, start, start)


def test_new_records_are_acquired_a_whole_batch_at_a_time() -> None:
    batches, end = _log(3, 3, 3)
    sp = _partition()
    data, ranges = sp.acquire("m1", _reader(batches), end, 4, now=0, lock_ms=1000, max_locks=2000)
    assert ranges == [{"first_offset": 0, "last_offset": 5, "delivery_count": 1}]  # 4 rounded up to a batch
    assert data == batches[:2]
    data, ranges = sp.acquire("m2", _reader(batches), end, 100, now=0, lock_ms=1000, max_locks=2000)
    assert ranges == [{"first_offset": 6, "last_offset": 8, "delivery_count": 1}] and data == batches[2:]
    assert sp.acquire("m3", _reader(batches), end, 100, now=0, lock_ms=1000, max_locks=2000) == ([], [])


def test_the_record_lock_limit_bounds_what_is_in_flight() -> None:
    batches, end = _log(*[1] * 10)
    sp = _partition()
    _, ranges = sp.acquire("m", _reader(batches), end, 100, now=0, lock_ms=1000, max_locks=4)
    assert ranges == [{"first_offset": 0, "last_offset": 3, "delivery_count": 1}]


def test_acknowledgements_move_the_start_offset_and_need_the_lock() -> None:
    batches, end = _log(5)
    sp = _partition()
    sp.acquire("m1", _reader(batches), end, 100, now=0, lock_ms=1000, max_locks=2000)
    assert sp.acknowledge("m2", 0, 1, [ACCEPT], 0, 1000, 5) == ErrorCode.INVALID_RECORD_STATE
    assert sp.acknowledge("m1", 0, 1, [ACCEPT, REJECT], 0, 1000, 5) == ErrorCode.NONE
    assert sp.acknowledge("m1", 0, 0, [ACCEPT], 0, 1000, 5) == ErrorCode.INVALID_RECORD_STATE  # not acquired now
    assert sp.acknowledge("m1", 3, 4, [ACCEPT], 0, 1000, 5) == ErrorCode.NONE
    sp.advance_start(0)
    assert (sp.start_offset, sp.end_offset) == (2, 5)  # offset 2 still acquired
    assert sp.acknowledge("m1", 2, 2, [RELEASE], 0, 1000, 5) == ErrorCode.NONE
    assert sp.state_of(2).state == RecordState.AVAILABLE
    assert sp.acknowledge("m1", 2, 4, [ACCEPT, ACCEPT], 0, 1000, 5) == ErrorCode.INVALID_REQUEST  # types misfit


def test_released_and_expired_records_come_back_until_the_delivery_limit() -> None:
    batches, end = _log(1)
    sp = _partition()
    counts = []
    now = 0
    for _ in range(6):
        _, ranges = sp.acquire("m", _reader(batches), end, 10, now=now, lock_ms=1000, max_locks=2000)
        if not ranges:
            break
        counts.append(ranges[0]["delivery_count"])
        now += 1001
        sp.expire(now, delivery_limit=3)  # the lock passes without an acknowledgement
    assert counts == [1, 2, 3]
    assert sp.state_of(0).state == RecordState.ARCHIVED
    sp.advance_start(0)
    assert sp.start_offset == 1


def test_renew_extends_the_lock() -> None:
    batches, end = _log(1)
    sp = _partition()
    sp.acquire("m", _reader(batches), end, 10, now=0, lock_ms=1000, max_locks=2000)
    assert sp.acknowledge("m", 0, 0, [RENEW], 900, 1000, 5) == ErrorCode.NONE
    assert sp.expire(1500, 5) == 0
    assert sp.expire(1901, 5) == 1


def test_a_member_leaving_releases_what_it_held() -> None:
    clock = ManualClock()
    coordinator = ShareCoordinator(clock, ShareConfig(session_timeout_ms=10_000))
    partitions = {"t": (TOPIC, 1)}
    code, _, member, _ = coordinator.heartbeat("g", "m1", 0, None, ["t"], "c", "/h", partitions.get)
    assert code == ErrorCode.NONE and member is not None and member.assignment == {TOPIC: [0]}
    batches, end = _log(2)
    sp = coordinator.share_partition("g", "t", 0, 0, 0)
    sp.acquire("m1", _reader(batches), end, 10, now=clock.now_ms(), lock_ms=60_000, max_locks=2000)
    clock.advance(10_001)  # no heartbeat: the session ends, long before the records' locks would
    coordinator.tick(partitions.get)
    assert "m1" not in coordinator.groups["g"].members
    assert sp.state_of(0).state == RecordState.AVAILABLE


def test_heartbeats_epochs_and_fencing() -> None:
    clock = ManualClock()
    coordinator = ShareCoordinator(clock)
    topics = {"t": (TOPIC, 4)}
    code, _, a, send = coordinator.heartbeat("g", "a", 0, None, ["t"], "c", "/h", topics.get)
    assert code == ErrorCode.NONE and a is not None and send and a.member_epoch == 1 and a.assignment == {
        TOPIC: [0, 1, 2, 3]}
    code, _, b, send = coordinator.heartbeat("g", "b", 0, None, ["t"], "c", "/h", topics.get)
    assert b is not None and b.member_epoch == 2 and b.assignment == {TOPIC: [2, 3]}
    code, _, a, send = coordinator.heartbeat("g", "a", 1, None, None, "c", "/h", topics.get)
    assert a is not None and send and a.member_epoch == 2 and a.assignment == {TOPIC: [0, 1]}
    code, _, a, send = coordinator.heartbeat("g", "a", 2, None, None, "c", "/h", topics.get)
    assert code == ErrorCode.NONE and not send  # nothing changed: no assignment in the answer
    assert coordinator.heartbeat("g", "a", 1, None, None, "c", "/h", topics.get)[0] == ErrorCode.FENCED_MEMBER_EPOCH
    assert coordinator.heartbeat("g", "zz", 3, None, None, "c", "/h", topics.get)[0] == ErrorCode.UNKNOWN_MEMBER_ID
    assert coordinator.heartbeat("g", "", 0, None, ["t"], "c", "/h", topics.get)[0] == ErrorCode.INVALID_REQUEST
    topics["t"] = (TOPIC, 6)  # partitions added: the group epoch moves
    coordinator.tick(topics.get)
    assert coordinator.groups["g"].group_epoch == 3
    code, _, a, send = coordinator.heartbeat("g", "a", 2, None, None, "c", "/h", topics.get)
    assert a is not None and send and a.assignment == {TOPIC: [0, 1, 2]}
    code, _, a, _ = coordinator.heartbeat("g", "a", -1, None, None, "c", "/h", topics.get)
    assert a is not None and a.member_epoch == -1 and list(coordinator.groups["g"].members) == ["b"]


@pytest.mark.parametrize(("members", "partitions", "expected"), [
    (2, 1, [[0], [0]]),             # more members than partitions: shared
    (3, 2, [[0, 1], [0], [1]]),     # each partition to ceil(3/2) = 2 members
    (2, 5, [[0, 1, 2], [3, 4]]),
])
def test_the_simple_assignor(members: int, partitions: int, expected: list[list[int]]) -> None:
    coordinator = ShareCoordinator(ManualClock())
    topics = {"t": (TOPIC, partitions)}
    for i in range(members):
        coordinator.heartbeat("g", f"m{i}", 0, None, ["t"], "c", "/h", topics.get)
    got = [coordinator.groups["g"].members[f"m{i}"].assignment.get(TOPIC, []) for i in range(members)]
    assert got == expected


def test_share_sessions_and_their_epochs() -> None:
    coordinator = ShareCoordinator(ManualClock())
    assert coordinator.session(1, "g", "m", 3)[0] == ErrorCode.SHARE_SESSION_NOT_FOUND
    code, s = coordinator.session(1, "g", "m", 0)
    assert code == ErrorCode.NONE and s is not None
    assert coordinator.session(1, "g", "m", 1)[0] == ErrorCode.NONE
    assert coordinator.session(1, "g", "m", 1)[0] == ErrorCode.INVALID_SHARE_SESSION_EPOCH
    assert coordinator.session(1, "g", "m", 2)[0] == ErrorCode.NONE
    assert coordinator.session(2, "g", "m", 1)[0] == ErrorCode.SHARE_SESSION_NOT_FOUND  # per broker
    code, s = coordinator.session(1, "g", "m", -1)
    assert s is not None
    coordinator.close_session(s)
    assert coordinator.session(1, "g", "m", 3)[0] == ErrorCode.SHARE_SESSION_NOT_FOUND


def test_control_batches_are_acquired_for_the_client_to_skip() -> None:
    """Kafka 4.4 acquires transaction markers like records (the API sweep's share-read-* variants); clients
    skip them and acknowledge them as gaps."""
    data = build_batch([{"key": None, "value": b"x"}], base_offset=0)
    marker = build_batch([{"key": b"\x00\x00\x00\x00", "value": b"\x00\x00\x00\x00\x00\x00"}], base_offset=1,
                         control=True, transactional=True, producer_id=7, producer_epoch=0)
    batches = [bytes(data), bytes(marker)]
    sp = _partition()
    _, ranges = sp.acquire("m", _reader(batches), 2, 10, now=0, lock_ms=1000, max_locks=2000)
    assert ranges == [{"first_offset": 0, "last_offset": 1, "delivery_count": 1}]
    assert sp.acknowledge("m", 0, 1, [ACCEPT, GAP], now=0, lock_ms=1000, delivery_limit=5) == ErrorCode.NONE
    sp.advance_start(0)
    assert sp.start_offset == 2 == sp.end_offset


def test_ctl_describe_shows_share_groups_and_their_partitions() -> None:
    from fakekafka.model.cluster import ClusterState
    from fakekafka.ops.describe import describe_tables
    state = ClusterState()
    state.create_topic("orders", 2)
    state.shares.heartbeat("billing", "m1", 0, None, ["orders"], "c", "/h", state.share_topic)
    sp = state.shares.share_partition("billing", "orders", 0, 0, 0)
    state.append(state.partition("orders", 0), build_batch([{"key": None, "value": b"x"}] * 3))
    log = state.partition("orders", 0).log
    sp.acquire("m1", lambda o: log.read(o, 1 << 20, min_one=True), log.high_watermark, 2, now=0, lock_ms=1000,
               max_locks=2000)
    text = describe_tables(state)
    shares = text[text.index("SHARE GROUPS"):text.index("TRANSACTIONS")]
    assert "billing  Stable" in shares and "m1" in shares and "orders:0,1" in shares
    assert "billing  orders          0      0    3         3          0     0" in shares


# --- share.isolation.level ----------------------------------------------------------------------------------
def _txn_log() -> tuple[PartitionLog, int, int]:
    """A log of: plain a (0), txn 1 data (1-2) + COMMIT (3), txn 2 data (4) + ABORT (5), plain b (6), txn 3
    data still open (7): the high watermark is 8, the last stable offset 7. Returns (log, pid 1, pid 3)."""
    log = PartitionLog()

    def append(values: list[bytes], pid: int = -1, *, control: int | None = None) -> None:
        if control is not None:
            records = [{"key": struct.pack(">hh", 0, control), "value": struct.pack(">hi", 0, 0)}]
        else:
            records = [{"key": None, "value": v} for v in values]
        batch = build_batch(records, producer_id=pid, producer_epoch=0 if pid >= 0 else -1,
                            transactional=pid >= 0, control=control is not None)
        log.append(batch, read_header(batch), 0)

    append([b"a"])
    append([b"c1", b"c2"], 1)
    append([], 1, control=1)
    append([b"x"], 2)
    append([], 2, control=0)
    append([b"b"])
    append([b"open"], 3)
    log.high_watermark = log.log_end_offset
    return log, 1, 3


def _values(data: list[bytes]) -> list[bytes]:
    return [r.value for b in data for r in decode_batch(b).records]


def test_read_committed_acquires_below_the_last_stable_offset_and_archives_aborted_records() -> None:
    log, _, _ = _txn_log()
    assert (log.high_watermark, log.last_stable_offset) == (8, 7)
    sp = _partition()
    upper = log.last_stable_offset
    data, ranges = sp.acquire("m", lambda o: log.read(o, 1 << 20, min_one=True, upper=upper), upper, 100,
                              now=0, lock_ms=1000, max_locks=2000, aborted=log.aborted_between(0, upper))
    assert ranges == [{"first_offset": 0, "last_offset": 3, "delivery_count": 1},  # the COMMIT marker too
                      {"first_offset": 5, "last_offset": 6, "delivery_count": 1}]
    # every batch is sent, the aborted one too (not acquired: clients skip it)
    assert _values(data) == [b"a", b"c1", b"c2", b"\x00\x00\x00\x00\x00\x00", b"x", b"\x00\x00\x00\x00\x00\x00", b"b"]
    assert sp.state_of(4).state == RecordState.ARCHIVED
    assert sp.end_offset == 7  # nothing at or past the LSO is in flight


def test_read_committed_takes_the_open_transaction_once_it_ends() -> None:
    log, _, open_pid = _txn_log()
    sp = _partition()
    read = lambda o: log.read(o, 1 << 20, min_one=True, upper=log.last_stable_offset)  # noqa: E731
    sp.acquire("m", read, log.last_stable_offset, 100, now=0, lock_ms=1000, max_locks=2000,
               aborted=log.aborted_between(0, log.last_stable_offset))
    assert sp.acquire("m", read, log.last_stable_offset, 100, now=0, lock_ms=1000, max_locks=2000,
                      aborted=log.aborted_between(sp.end_offset, log.last_stable_offset)) == ([], [])
    marker = build_batch([{"key": struct.pack(">hh", 0, 0), "value": struct.pack(">hi", 0, 0)}],
                         producer_id=open_pid, producer_epoch=0, transactional=True, control=True)
    log.append(marker, read_header(marker), 0)  # aborted: the open transaction's record is never delivered
    log.high_watermark = log.log_end_offset
    assert log.last_stable_offset == 9
    data, ranges = sp.acquire("m", read, 9, 100, now=0, lock_ms=1000, max_locks=2000,
                              aborted=log.aborted_between(sp.end_offset, 9))
    assert ranges == [{"first_offset": 8, "last_offset": 8, "delivery_count": 1}]  # only its ABORT marker
    assert [read_header(b).base_offset for b in data] == [7, 8]
    assert (sp.end_offset, sp.state_of(7).state) == (9, RecordState.ARCHIVED)


def test_read_uncommitted_acquires_aborted_and_open_records_up_to_the_high_watermark() -> None:
    log, _, _ = _txn_log()
    sp = _partition()
    data, ranges = sp.acquire("m", lambda o: log.read(o, 1 << 20, min_one=True, upper=log.high_watermark),
                              log.high_watermark, 100, now=0, lock_ms=1000, max_locks=2000)
    assert ranges == [{"first_offset": 0, "last_offset": 7, "delivery_count": 1}]  # markers too
    assert len(data) == 7 and _values(data)[-1] == b"open"


def test_the_group_config_chooses_the_isolation_level() -> None:
    configs: dict[str, dict[str, str]] = {"rc": {"share.isolation.level": "read_committed"}}
    coordinator = ShareCoordinator(ManualClock(), group_config=lambda g: configs.get(g, {}))
    assert (coordinator.read_committed("rc"), coordinator.read_committed("other")) == (True, False)


def test_a_leave_keeps_the_share_session_and_what_the_member_holds() -> None:
    """The leave is the group's side only: the member's session and acquired records stay for its acknowledgements
    sent on close; the session's last request releases what is still held."""
    clock = ManualClock()
    coordinator = ShareCoordinator(clock)
    partitions = {"t": (TOPIC, 1)}
    assert coordinator.heartbeat("g", "m1", 0, None, ["t"], "c", "/h", partitions.get)[0] == ErrorCode.NONE
    _, session = coordinator.session(1, "g", "m1", 0)
    batches, end = _log(2)
    sp = coordinator.share_partition("g", "t", 0, 0, 0)
    sp.acquire("m1", _reader(batches), end, 10, now=clock.now_ms(), lock_ms=60_000, max_locks=2000)
    assert coordinator.heartbeat("g", "m1", -1, None, None, "c", "/h", partitions.get)[0] == ErrorCode.NONE
    assert "m1" not in coordinator.groups["g"].members
    assert sp.state_of(0).state == RecordState.ACQUIRED
    assert coordinator.session(1, "g", "m1", 1)[0] == ErrorCode.NONE
    assert session is not None and coordinator.close_session(session) == 2
    assert sp.state_of(0).state == RecordState.AVAILABLE
