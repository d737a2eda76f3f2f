"""The transaction coordinator and the logs' transaction state, on a frozen clock (no sockets)."""

from __future__ import annotations

import pytest

from fakekafka.model.clock import ManualClock
from fakekafka.model.cluster import ClusterState
from fakekafka.model.internal_topics import OFFSETS_TOPIC
from fakekafka.model.metadata import Broker
from fakekafka.model.transactions import (
    EPOCH_EXHAUSTED,
    VALID_PREVIOUS,
    IllegalTransactionTransition,
    TransactionCoordinator,
    TransactionMetadata,
    TransactionState,
)
from fakekafka.wire import ErrorCode
from fakekafka.wire.records import build_batch

S = TransactionState


def _cluster(brokers: int = 1) -> ClusterState:
    state = ClusterState(clock=ManualClock(), brokers=[Broker(i, "127.0.0.1", 9092 + i) for i in range(1, brokers + 1)])
    state.create_topic("t", 2, brokers)
    return state


def _txn_batch(pid: int, epoch: int, seq: int, n: int = 2, value: str = "v") -> bytes:
    return build_batch([{"value": f"{value}{i}".encode(), "timestamp": 0} for i in range(n)], producer_id=pid,
                       producer_epoch=epoch, base_sequence=seq, transactional=True)


# --- the state table -----------------------------------------------------------------------------------
def test_every_state_has_kafkas_previous_states() -> None:
    assert set(VALID_PREVIOUS) == set(TransactionState)
    # Kafka 4.x (transactions version 2) also aborts from Empty/CompleteCommit/CompleteAbort: see below
    assert VALID_PREVIOUS[S.PREPARE_ABORT] == {S.ONGOING, S.PREPARE_EPOCH_FENCE, S.EMPTY, S.COMPLETE_COMMIT,
                                               S.COMPLETE_ABORT}
    assert VALID_PREVIOUS[S.COMPLETE_COMMIT] == {S.PREPARE_COMMIT}
    meta = TransactionMetadata("x", 1)
    with pytest.raises(IllegalTransactionTransition):
        meta.transition_to(S.PREPARE_COMMIT, 0)  # Empty -> PrepareCommit skips Ongoing


def test_init_bumps_the_epoch_and_keeps_the_producer_id() -> None:
    tc = TransactionCoordinator(ManualClock())
    code, pid, epoch = tc.init_producer_id("tx", 60_000)
    assert (code, epoch) == (ErrorCode.NONE, 0)
    assert tc.init_producer_id("tx", 60_000) == (ErrorCode.NONE, pid, 1)
    assert tc.transactions["tx"].state == S.EMPTY


def test_init_refuses_bad_ids_and_timeouts() -> None:
    tc = TransactionCoordinator(ManualClock())
    assert tc.init_producer_id("", 1000)[0] == ErrorCode.INVALID_REQUEST
    assert tc.init_producer_id("tx", 900_001)[0] == ErrorCode.INVALID_TRANSACTION_TIMEOUT
    assert tc.init_producer_id("tx", 0)[0] == ErrorCode.INVALID_TRANSACTION_TIMEOUT
    assert "tx" not in tc.transactions


def test_a_second_producer_fences_the_first_and_aborts_its_transaction() -> None:
    markers: list[tuple] = []
    tc = TransactionCoordinator(ManualClock(), write_marker=lambda *a: markers.append(a) or True)
    _, pid, e0 = tc.init_producer_id("tx", 60_000)
    assert tc.add_partitions("tx", pid, e0, {("t", 0)}) == ErrorCode.NONE
    # the zombie's replacement: the open transaction is aborted with a fencing epoch, the caller retries
    assert tc.init_producer_id("tx", 60_000)[0] == ErrorCode.CONCURRENT_TRANSACTIONS
    assert markers == [(("t", 0), pid, e0 + 1, False, 0)]
    assert [h[2] for h in tc.transactions["tx"].history[-3:]] == [S.PREPARE_EPOCH_FENCE, S.PREPARE_ABORT,
                                                                  S.COMPLETE_ABORT]
    assert tc.init_producer_id("tx", 60_000) == (ErrorCode.NONE, pid, e0 + 2)
    # the zombie is fenced everywhere
    assert tc.add_partitions("tx", pid, e0, {("t", 1)}) == ErrorCode.PRODUCER_FENCED
    assert tc.end_transaction("tx", pid, e0, True) == ErrorCode.PRODUCER_FENCED
    assert tc.verify_partitions("tx", pid, e0, {("t", 0)}) == {("t", 0): ErrorCode.PRODUCER_FENCED}


def test_end_transaction_paths() -> None:
    tc = TransactionCoordinator(ManualClock())
    _, pid, e = tc.init_producer_id("tx", 60_000)
    assert tc.end_transaction("tx", pid, e, True) == ErrorCode.INVALID_TXN_STATE  # Empty
    assert tc.end_transaction("nosuch", pid, e, True) == ErrorCode.INVALID_PRODUCER_ID_MAPPING
    assert tc.end_transaction("tx", pid + 1, e, True) == ErrorCode.INVALID_PRODUCER_ID_MAPPING
    tc.add_partitions("tx", pid, e, {("t", 0)})
    assert tc.end_transaction("tx", pid, e, True) == ErrorCode.NONE
    assert tc.transactions["tx"].state == S.COMPLETE_COMMIT
    assert tc.end_transaction("tx", pid, e, True) == ErrorCode.NONE  # a retry
    assert tc.end_transaction("tx", pid, e, False) == ErrorCode.INVALID_TXN_STATE


def test_markers_wait_for_a_leader_and_block_the_next_transaction() -> None:
    available = {"up": False}
    tc = TransactionCoordinator(ManualClock(), write_marker=lambda *a: available["up"])
    _, pid, e = tc.init_producer_id("tx", 60_000)
    tc.add_partitions("tx", pid, e, {("t", 0)})
    assert tc.end_transaction("tx", pid, e, True) == ErrorCode.NONE
    assert tc.transactions["tx"].state == S.PREPARE_COMMIT
    assert tc.end_transaction("tx", pid, e, True) == ErrorCode.CONCURRENT_TRANSACTIONS
    assert tc.add_partitions("tx", pid, e, {("t", 1)}) == ErrorCode.CONCURRENT_TRANSACTIONS
    assert tc.init_producer_id("tx", 60_000)[0] == ErrorCode.CONCURRENT_TRANSACTIONS
    available["up"] = True
    tc.retry_pending_markers()
    assert tc.transactions["tx"].state == S.COMPLETE_COMMIT


def test_a_transaction_past_its_timeout_is_aborted_and_its_producer_fenced() -> None:
    clock = ManualClock()
    tc = TransactionCoordinator(clock)
    _, pid, e = tc.init_producer_id("tx", 10_000)
    tc.add_partitions("tx", pid, e, {("t", 0)})
    assert tc.next_deadline() == clock.now_ms() + 10_000
    clock.advance(9_999)
    tc.tick()
    assert tc.transactions["tx"].state == S.ONGOING
    clock.advance(1)
    tc.tick()
    assert tc.transactions["tx"].state == S.COMPLETE_ABORT
    assert tc.end_transaction("tx", pid, e, True) == ErrorCode.PRODUCER_FENCED


def test_kip360_retry_of_a_bump_and_an_exhausted_epoch() -> None:
    tc = TransactionCoordinator(ManualClock())
    _, pid, e = tc.init_producer_id("tx", 60_000)
    assert tc.init_producer_id("tx", 60_000, (pid, e)) == (ErrorCode.NONE, pid, e + 1)
    assert tc.init_producer_id("tx", 60_000, (pid, e)) == (ErrorCode.NONE, pid, e + 1)  # retried: same answer
    assert tc.init_producer_id("tx", 60_000, (pid + 7, 0))[0] == ErrorCode.PRODUCER_FENCED
    tc.transactions["tx"].producer_epoch = EPOCH_EXHAUSTED
    code, new_pid, epoch = tc.init_producer_id("tx", 60_000)
    assert code == ErrorCode.NONE and new_pid != pid and epoch == 0


def test_idle_transactional_ids_expire() -> None:
    clock = ManualClock()
    tc = TransactionCoordinator(clock)
    tc.init_producer_id("tx", 60_000)
    clock.advance(tc.config.id_expiration_ms)
    tc.tick()
    assert "tx" not in tc.transactions


# --- through the cluster: markers in logs, the LSO, aborted transactions ----------------------------------
def test_commit_and_abort_markers_move_the_last_stable_offset() -> None:
    state = _cluster()
    p0 = state.partition("t", 0)
    assert p0 is not None
    _, pid, e = state.transactions.init_producer_id("tx", 60_000)
    assert state.append(p0, _txn_batch(pid, e, 0), transactional_id="tx").error == ErrorCode.INVALID_TXN_STATE
    state.transactions.add_partitions("tx", pid, e, {("t", 0)})
    assert state.append(p0, _txn_batch(pid, e, 0), transactional_id="tx").error == ErrorCode.NONE
    log = p0.log
    assert (log.high_watermark, log.last_stable_offset) == (2, 0)
    assert state.transactions.end_transaction("tx", pid, e, False) == ErrorCode.NONE
    assert (log.log_end_offset, log.last_stable_offset) == (3, 3)
    assert [(a.producer_id, a.first_offset, a.last_offset) for a in log.aborted] == [(pid, 0, 2)]
    state.transactions.add_partitions("tx", pid, e, {("t", 0)})
    state.append(p0, _txn_batch(pid, e, 2), transactional_id="tx")
    assert log.last_stable_offset == 3
    state.transactions.end_transaction("tx", pid, e, True)
    assert log.last_stable_offset == log.log_end_offset == 6
    assert log.aborted_between(0, 6)[0].first_offset == 0 and log.aborted_between(3, 6) == []


def test_a_fenced_zombie_cannot_write_after_the_abort_marker() -> None:
    state = _cluster()
    p0 = state.partition("t", 0)
    assert p0 is not None
    _, pid, e = state.transactions.init_producer_id("tx", 60_000)
    state.transactions.add_partitions("tx", pid, e, {("t", 0)})
    state.append(p0, _txn_batch(pid, e, 0), transactional_id="tx")
    state.transactions.init_producer_id("tx", 60_000)  # a new instance fences the zombie
    r = state.append(p0, _txn_batch(pid, e, 2), transactional_id="tx")
    assert r.error == ErrorCode.INVALID_PRODUCER_EPOCH


def test_follower_logs_track_transactions_and_a_new_leader_keeps_the_lso() -> None:
    state = _cluster(brokers=2)
    p0 = state.partition("t", 0)
    assert p0 is not None
    _, pid, e = state.transactions.init_producer_id("tx", 60_000)
    state.transactions.add_partitions("tx", pid, e, {("t", 0)})
    state.append(p0, _txn_batch(pid, e, 0), transactional_id="tx")
    old = p0.leader_id
    state.kill_broker(old)
    assert p0.leader_id != old
    assert p0.log.open_txns == {pid: 0} and p0.log.last_stable_offset == 0
    state.transactions.end_transaction("tx", pid, e, True)
    assert p0.log.last_stable_offset == p0.log.log_end_offset


def test_markers_for_a_partition_without_leader_wait_for_its_election() -> None:
    state = _cluster(brokers=1)
    p0 = state.partition("t", 0)
    assert p0 is not None
    _, pid, e = state.transactions.init_producer_id("tx", 60_000)
    state.transactions.add_partitions("tx", pid, e, {("t", 0)})
    state.append(p0, _txn_batch(pid, e, 0), transactional_id="tx")
    state.kill_broker(1)
    state.transactions.end_transaction("tx", pid, e, True)
    assert state.transactions.transactions["tx"].state == S.PREPARE_COMMIT
    state.restart_broker(1)
    assert state.transactions.transactions["tx"].state == S.COMPLETE_COMMIT
    assert p0.log.last_stable_offset == p0.log.log_end_offset == 3


def test_transactional_offsets_become_visible_on_commit_only() -> None:
    state = _cluster()
    state.coordinator_for("g")
    offsets_tp = (OFFSETS_TOPIC, state.offsets_partition_for("g"))
    for commit in (False, True):
        _, pid, e = state.transactions.init_producer_id("tx", 60_000)
        state.transactions.add_partitions("tx", pid, e, {offsets_tp})
        codes = state.groups.txn_commit("g", pid, -1, "", None, {("t", 0): (5, -1, "m")})
        assert codes == {("t", 0): ErrorCode.NONE}
        assert state.groups.has_pending_txn_offset("g", ("t", 0))
        assert state.groups.fetch_offsets("g", [("t", 0)])[("t", 0)] is None
        state.transactions.end_transaction("tx", pid, e, commit)
        assert not state.groups.has_pending_txn_offset("g", ("t", 0))
        found = state.groups.fetch_offsets("g", [("t", 0)])[("t", 0)]
        assert (found.offset if found else None) == (5 if commit else None)


def test_the_transaction_coordinator_is_the_leader_of_the_ids_partition_and_moves_with_it() -> None:
    state = _cluster(brokers=3)
    first = state.transaction_coordinator_for("tx")
    assert first is not None
    topic = state.topics["__transaction_state"]
    assert len(topic.partitions) == 50 and topic.is_internal
    state.kill_broker(first.node_id)
    moved = state.transaction_coordinator_for("tx")
    assert moved is not None and moved.node_id != first.node_id


# --- transactions version 2 (KIP-890 part 2) ----------------------------------------------------------------
def test_v2_bumps_the_epoch_at_every_end_and_a_retry_gets_the_same_answer() -> None:
    markers: list[tuple] = []
    tc = TransactionCoordinator(ManualClock(), write_marker=lambda *a: markers.append(a) or True)
    _, pid, e = tc.init_producer_id("tx", 60_000)
    assert tc.add_partitions("tx", pid, e, {("t", 0)}, implicit=True) == ErrorCode.NONE
    assert tc.end_transaction_v2("tx", pid, e, True) == (ErrorCode.NONE, pid, e + 1)
    assert markers == [(("t", 0), pid, e + 1, True, 0)]  # the marker carries the new epoch
    assert tc.end_transaction_v2("tx", pid, e, True) == (ErrorCode.NONE, pid, e + 1)  # retried
    assert tc.end_transaction_v2("tx", pid, e, False)[0] == ErrorCode.INVALID_TXN_STATE
    assert tc.add_partitions("tx", pid, e, {("t", 0)}, implicit=True) == ErrorCode.PRODUCER_FENCED  # old epoch
    assert tc.add_partitions("tx", pid, e + 1, {("t", 0)}, implicit=True) == ErrorCode.NONE
    assert tc.end_transaction_v2("tx", pid, e + 1, False) == (ErrorCode.NONE, pid, e + 2)


def test_v2_aborts_with_nothing_open_at_the_current_epoch() -> None:
    """The Java producer aborting before its batches went out sends EndTxn v5 ABORT for a transaction the
    coordinator never saw; Kafka 4.4 answers it (bumping the epoch), it does not fence the producer (seen with
    tests/integration/clients/test_share_groups.py's transactional producer before it flushed ahead of its abort)."""
    markers: list[tuple] = []
    tc = TransactionCoordinator(ManualClock(), write_marker=lambda *a: markers.append(a) or True)
    _, pid, e = tc.init_producer_id("tx", 60_000)
    assert tc.add_partitions("tx", pid, e, {("t", 0)}, implicit=True) == ErrorCode.NONE
    assert tc.end_transaction_v2("tx", pid, e, True) == (ErrorCode.NONE, pid, e + 1)
    assert tc.end_transaction_v2("tx", pid, e + 1, False) == (ErrorCode.NONE, pid, e + 2)
    assert tc.transactions["tx"].state == TransactionState.COMPLETE_ABORT
    assert markers == [(("t", 0), pid, e + 1, True, 0)]  # nothing was open: no marker for the abort
    assert tc.end_transaction_v2("tx", pid, e + 1, False) == (ErrorCode.NONE, pid, e + 2)  # a retry


def test_v2_rotates_the_producer_id_when_the_epoch_is_exhausted() -> None:
    tc = TransactionCoordinator(ManualClock())
    _, pid, _ = tc.init_producer_id("tx", 60_000)
    tc.transactions["tx"].producer_epoch = EPOCH_EXHAUSTED
    tc.add_partitions("tx", pid, EPOCH_EXHAUSTED, {("t", 0)}, implicit=True)
    code, new_pid, epoch = tc.end_transaction_v2("tx", pid, EPOCH_EXHAUSTED, True)
    assert code == ErrorCode.NONE and new_pid != pid and epoch == 0
    assert tc.end_transaction_v2("tx", pid, EPOCH_EXHAUSTED, True) == (ErrorCode.NONE, new_pid, 0)  # retried


def test_expiring_an_idle_id_forgets_it_and_an_open_one_refuses() -> None:
    tc = TransactionCoordinator(ManualClock())
    _, pid, e = tc.init_producer_id("tx", 60_000)
    tc.add_partitions("tx", pid, e, {("t", 0)})
    with pytest.raises(ValueError, match="Ongoing"):
        tc.expire("tx")
    tc.end_transaction("tx", pid, e, True)
    tc.expire("tx")
    assert tc.end_transaction("tx", pid, e, True) == ErrorCode.INVALID_PRODUCER_ID_MAPPING
    assert tc.init_producer_id("tx", 60_000)[1] != pid
