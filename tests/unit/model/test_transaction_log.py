"""`__transaction_state` (fakekafka/model/transaction_log.py): the records Kafka's TransactionStateManager writes
per transition, and the coordinator's state loaded back on a leader move and at start from a data dir."""

from __future__ import annotations

from pathlib import Path

from fakekafka.model.clock import ManualClock
from fakekafka.model.cluster import ClusterState
from fakekafka.model.config import BrokerConfig
from fakekafka.model.internal_topics import TRANSACTION_STATE_TOPIC
from fakekafka.model.metadata import Broker, Partition
from fakekafka.model.transaction_log import STATE, decode_transaction_record
from fakekafka.model.transactions import TransactionState
from fakekafka.storage.datadir import DataDir
from fakekafka.wire import ErrorCode
from fakekafka.wire.records import build_batch, decode_batch

S = TransactionState


def _cluster(brokers: int = 1) -> ClusterState:
    state = ClusterState(clock=ManualClock(), brokers=[Broker(i, "127.0.0.1", 9092 + i) for i in range(1, brokers + 1)])
    state.create_topic("t", 2, brokers)
    return state


def _txn_partition(state: ClusterState, tid: str) -> Partition:
    state.transaction_coordinator_for(tid)
    p = state.partition(TRANSACTION_STATE_TOPIC, state.transaction_partition_for(tid))
    assert p is not None
    return p


def _records(p: Partition) -> list[tuple[str, S | None, list[tuple[str, int]]]]:
    out = []
    for b in p.log.batches:
        for r in decode_batch(bytes(b)).records:
            tid, v = decode_transaction_record(r.key, r.value)
            parts = [] if v is None else sorted(
                (t.topic, i) for t in v.transaction_partitions or () for i in t.partition_ids)
            out.append((tid, None if v is None else STATE[v.transaction_status], parts))
    return out


def _batch(pid: int, epoch: int) -> bytes:
    return build_batch([{"value": b"v", "timestamp": 0}], producer_id=pid, producer_epoch=epoch, base_sequence=0,
                       transactional=True)


def test_each_transition_is_one_record_and_expiry_a_tombstone() -> None:
    state = _cluster()
    txns = state.transactions
    _, pid, e = txns.init_producer_id("tx", 60_000)
    assert txns.add_partitions("tx", pid, e, {("t", 0)}) == ErrorCode.NONE
    assert txns.add_partitions("tx", pid, e, {("t", 0)}) == ErrorCode.NONE  # nothing new: nothing written
    assert txns.add_partitions("tx", pid, e, {("t", 1)}) == ErrorCode.NONE
    assert txns.end_transaction("tx", pid, e, True) == ErrorCode.NONE
    p = _txn_partition(state, "tx")
    assert _records(p) == [("tx", S.EMPTY, []), ("tx", S.ONGOING, [("t", 0)]),
                           ("tx", S.ONGOING, [("t", 0), ("t", 1)]), ("tx", S.PREPARE_COMMIT, [("t", 0), ("t", 1)]),
                           ("tx", S.COMPLETE_COMMIT, [])]
    first = decode_batch(bytes(p.log.batches[0])).records[0]
    value = decode_transaction_record(first.key, first.value)[1]
    assert value.transaction_partitions is None  # Empty carries no partition list, as Kafka writes it
    txns.expire("tx")
    assert _records(p)[-1] == ("tx", None, [])


def test_a_fenced_transaction_logs_its_prepare_abort_not_the_fence() -> None:
    state = _cluster()
    txns = state.transactions
    _, pid, e = txns.init_producer_id("tx", 60_000)
    txns.add_partitions("tx", pid, e, {("t", 0)})
    state.clock.advance(60_000)  # type: ignore[attr-defined]
    state.tick()
    assert [s for _, s, _ in _records(_txn_partition(state, "tx"))] == [S.EMPTY, S.ONGOING, S.PREPARE_ABORT,
                                                                         S.COMPLETE_ABORT]


def test_a_leader_move_loads_the_ids_and_finishes_a_decided_commit() -> None:
    state = _cluster(brokers=3)
    txns = state.transactions
    _, pid, e = txns.init_producer_id("tx", 60_000)
    txns.add_partitions("tx", pid, e, {("t", 0)})
    p0 = state.partition("t", 0)
    assert p0 is not None
    state.append(p0, _batch(pid, e), transactional_id="tx", acks=-1)
    txn = txns.transactions["tx"]
    # what the old coordinator had decided when it went: the commit written, no marker yet
    txn.transition_to(S.PREPARE_COMMIT, state.clock.now_ms())
    state.transaction_log(txn)
    txns.transactions.clear()  # the new coordinator starts from its replica alone
    tp = _txn_partition(state, "tx")
    old_leader = tp.leader_id
    state.kill_broker(old_leader)
    assert tp.leader_id not in (-1, old_leader)
    loaded = txns.transactions["tx"]
    assert (loaded.producer_id, loaded.producer_epoch, loaded.state) == (pid, e, S.COMPLETE_COMMIT)
    assert p0.log.last_stable_offset == p0.log.log_end_offset and not p0.log.aborted
    assert _records(tp)[-1][1] == S.COMPLETE_COMMIT


def _open(path: Path) -> ClusterState:
    state = ClusterState(BrokerConfig(), ManualClock(1_000_000), [Broker(1, "127.0.0.1", 9092)])
    state.storage = data_dir = DataDir(path, state.config.cluster_id, list(state.brokers))
    data_dir.load(state)
    return state


def test_a_restart_keeps_ids_finishes_a_commit_and_times_out_an_open_transaction(tmp_path: Path) -> None:
    state = _open(tmp_path)
    state.create_topic("t", 2)
    txns = state.transactions
    _, pid_c, e_c = txns.init_producer_id("committing", 60_000)
    _, pid_o, e_o = txns.init_producer_id("open", 60_000)
    txns.add_partitions("committing", pid_c, e_c, {("t", 0)})
    txns.add_partitions("open", pid_o, e_o, {("t", 1)})
    p0, p1 = state.topics["t"].partitions
    state.append(p0, _batch(pid_c, e_c), transactional_id="committing", acks=-1)
    state.append(p1, _batch(pid_o, e_o), transactional_id="open", acks=-1)
    committing = txns.transactions["committing"]
    committing.transition_to(S.PREPARE_COMMIT, state.clock.now_ms())
    state.transaction_log(committing)  # the stop came after the commit was logged, before its marker
    state.storage.close()  # type: ignore[union-attr]

    again = _open(tmp_path)
    p0, p1 = again.topics["t"].partitions
    done = again.transactions.transactions["committing"]
    assert (done.producer_id, done.state) == (pid_c, S.COMPLETE_COMMIT)
    assert p0.log.last_stable_offset == p0.log.log_end_offset and not p0.log.aborted  # committed, not aborted
    still = again.transactions.transactions["open"]
    assert (still.producer_id, still.producer_epoch, still.state) == (pid_o, e_o, S.ONGOING)
    assert p1.log.open_txns  # open until its timeout, as on Kafka
    again.clock.advance(60_000)  # type: ignore[attr-defined]
    again.tick()
    assert still.state == S.COMPLETE_ABORT and still.producer_epoch == e_o + 1
    assert [a.producer_id for a in p1.log.aborted] == [pid_o]
    # the id keeps its producer id: the next InitProducerId bumps the epoch instead of starting over
    assert again.transactions.init_producer_id("open", 60_000)[1] == pid_o
    assert again.producer_ids.allocate() > max(pid_c, pid_o)  # never handed out twice
    again.storage.close()  # type: ignore[union-attr]
