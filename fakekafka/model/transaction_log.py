"""`__transaction_state` as Kafka's TransactionStateManager writes it, and the coordinator's state loaded back.

The transaction coordinator (`model/transactions.py`) keeps its state in memory and tells this sink each state
Kafka appends to the log: Empty (InitProducerId), Ongoing with its partitions (when AddPartitionsToTxn, or a
version 2 producer's data, adds one it did not hold), PrepareCommit/PrepareAbort (EndTxn, or the abort of a timed
out or fenced transaction), CompleteCommit/CompleteAbort once every marker is written, and a tombstone when the
transactional id expires. Each is one record (key TransactionLogKey v0 behind its version prefix 0, value
TransactionLogValue v1 behind its version, from `wire/txn_coordinator/`, as Kafka 4.4 writes them) in a batch of its
own at the leader of the id's partition, compacted by the log cleaner. PrepareEpochFence is not written: Kafka
keeps it in memory and logs the PrepareAbort that follows. Empty carries no partition list (null), as Kafka's
TransactionLog.valueToBytes writes it.

`load(partition)` rebuilds the ids of a partition from its new leader's replica, as Kafka's coordinator loads a
partition it becomes the leader of (a leader move, or every led partition at start from a data dir); a
transaction found in PrepareCommit/PrepareAbort gets its markers again, an Ongoing one is aborted by the timeout
it was written with. Loading is instant, so there is no COORDINATOR_LOAD_IN_PROGRESS.
"""

from __future__ import annotations

import struct
from typing import TYPE_CHECKING, Any

from fakekafka.model.internal_topics import TRANSACTION_STATE_TOPIC
from fakekafka.model.offsets_topic import batch_of, keyed_records
from fakekafka.model.transactions import TransactionMetadata, TransactionState
from fakekafka.wire.primitives import build_bytes
from fakekafka.wire.txn_coordinator import transaction_log as txn_rec

if TYPE_CHECKING:
    from fakekafka.model.metadata import Partition
    from fakekafka.model.ports import CoordinatorCluster

__all__ = ["TransactionLog", "STATE_CODE", "decode_transaction_record"]

VALUE_VERSION = 1
"""Kafka 4.4 writes TransactionLogValue v1 (flexible, with the tagged producer ids and client version)."""
STATE_CODE = {TransactionState.EMPTY: 0, TransactionState.ONGOING: 1, TransactionState.PREPARE_COMMIT: 2,
              TransactionState.PREPARE_ABORT: 3, TransactionState.COMPLETE_COMMIT: 4,
              TransactionState.COMPLETE_ABORT: 5, TransactionState.DEAD: 6,
              TransactionState.PREPARE_EPOCH_FENCE: 7}
"""Kafka's TransactionState ids, as TransactionStatus holds them."""
STATE = {v: k for k, v in STATE_CODE.items()}
_I16 = struct.Struct(">h").pack


def transaction_key(transactional_id: str) -> bytes:
    return _I16(txn_rec.RECORD_TYPE) + build_bytes(txn_rec.KEY, {"transactional_id": transactional_id})


def transaction_value(txn: TransactionMetadata) -> bytes:
    by_topic: dict[str, list[int]] = {}
    for topic, p in sorted(txn.partitions):
        by_topic.setdefault(topic, []).append(p)
    partitions = None if txn.state == TransactionState.EMPTY else [
        {"topic": t, "partition_ids": ps} for t, ps in by_topic.items()]
    return _I16(VALUE_VERSION) + build_bytes(txn_rec.VALUES[VALUE_VERSION], {
        # a producer id not rotated yet is its own previous one in Kafka's records
        "producer_id": txn.producer_id,
        "previous_producer_id": txn.previous_producer_id if txn.previous_producer_id >= 0 else txn.producer_id,
        "next_producer_id": txn.next_producer_id, "producer_epoch": txn.producer_epoch,
        "next_producer_epoch": -1, "transaction_timeout_ms": txn.timeout_ms,
        "transaction_status": STATE_CODE[txn.state], "transaction_partitions": partitions,
        "transaction_last_update_timestamp_ms": txn.last_update_ms,
        "transaction_start_timestamp_ms": txn.start_ms,
        # a version 1 client's transactions are written as Kafka writes them, with the tagged default 0
        "client_transaction_version": 2 if txn.client_version >= 2 else 0,
    })


def decode_transaction_record(key: bytes, value: bytes | None) -> tuple[str, Any]:
    """(transactional id, value fields or None for a tombstone), as Kafka's TransactionLog reads a record.
    Raises ValueError for a key version Kafka does not know."""
    if struct.unpack_from(">h", key)[0] != txn_rec.RECORD_TYPE:
        raise ValueError("unknown __transaction_state key version")
    tid = txn_rec.KEY.parse(key[2:]).transactional_id
    if value is None:
        return tid, None
    return tid, txn_rec.VALUES[struct.unpack_from(">h", value)[0]].parse(value[2:])


class TransactionLog:
    """The transaction coordinator's records in `__transaction_state`, and its state loaded back from them."""

    def __init__(self, cluster: CoordinatorCluster) -> None:
        self.cluster = cluster

    def __call__(self, txn: TransactionMetadata | str) -> None:
        """The coordinator's sink: one record (a tombstone for an id given alone) at the id's partition leader
        (none while it has no leader; the transition stays in memory, as it would fail to append in Kafka)."""
        c = self.cluster
        tid = txn if isinstance(txn, str) else txn.transactional_id
        c.transaction_coordinator_for(tid)  # creates the topic on first use, as Kafka does
        partition = c.partition(TRANSACTION_STATE_TOPIC, c.transaction_partition_for(tid))
        if partition is None or not partition.online:
            return
        now = c.clock.now_ms()
        c.append_internal(partition, batch_of(
            [(transaction_key(tid), None if isinstance(txn, str) else transaction_value(txn))], now), now)

    def load_all(self) -> None:
        """Every led partition of `__transaction_state` loaded, as each coordinator does at start-up."""
        topic = self.cluster.topics.get(TRANSACTION_STATE_TOPIC)
        for partition in topic.partitions if topic is not None else ():
            if partition.online:
                self.load(partition)

    def load(self, partition: Partition) -> None:
        """The transactional ids of this partition rebuilt from its leader's log (the last record of each id
        wins; a tombstone forgets it), replacing what the coordinator held for them."""
        c = self.cluster
        latest: dict[str, Any] = {}
        for r in keyed_records(partition):
            try:
                tid, v = decode_transaction_record(r.key, r.value)
            except Exception:  # noqa: BLE001 - a record Kafka's loader would not know: skipped
                continue
            latest[tid] = v
        loaded: dict[str, TransactionMetadata] = {}
        for tid, v in latest.items():
            if v is None or STATE.get(v.transaction_status) in (None, TransactionState.DEAD):
                continue
            state = STATE[v.transaction_status]
            txn = TransactionMetadata(
                tid, v.producer_id, producer_epoch=v.producer_epoch, timeout_ms=v.transaction_timeout_ms,
                previous_producer_id=-1 if v.get("previous_producer_id", -1) == v.producer_id else v.get(
                    "previous_producer_id", -1), state=state,
                partitions={(t.topic, p) for t in v.transaction_partitions or () for p in t.partition_ids},
                start_ms=v.transaction_start_timestamp_ms, last_update_ms=v.transaction_last_update_timestamp_ms,
                client_version=2 if v.get("client_transaction_version", 0) >= 2 else 1,
                next_producer_id=v.get("next_producer_id", -1))
            loaded[tid] = txn
        # the loaded ids' producer ids are never handed out again (an id that only ran InitProducerId has its
        # producer id nowhere but here)
        c.producer_ids.reserve_below(max([0] + [max(t.producer_id, t.next_producer_id) + 1 for t in loaded.values()]))
        index = partition.index
        c.transactions.loaded(loaded, lambda t: c.transaction_partition_for(t) == index)
