"""The transaction coordinator: transactional ids, their producer ids and epochs, and Kafka's transaction states.

Pure state, like the group coordinator: the clock is injected and the partitions' logs are reached through one
callable (`write_marker`) that the cluster supplies. Kafka writes each transition to `__transaction_state` first and
answers once it is replicated; here a transition takes effect at once and is handed to `log` (the cluster's
`model/transaction_log.py`, which appends Kafka's record and loads the state back on a leader move or a
restart), and a transaction's COMMIT/ABORT markers are written to its partitions as soon as EndTxn is accepted.
A marker for a partition without a leader waits
(the transaction stays in PrepareCommit/PrepareAbort, and the producer's next call gets CONCURRENT_TRANSACTIONS)
until `tick` finds the partition led again, as Kafka's marker channel retries.

Transactions version 1 (KIP-98, KIP-360's epoch bumps, KIP-890 part 1's partition verification): the epoch is
bumped by InitProducerId, and by the coordinator when it fences a producer (an InitProducerId while the old one's
transaction is open, or a transaction timing out). Version 2 (KIP-890 part 2) adds an epoch bump at every end
(`end_transaction_v2`, what EndTxn v5 asks for: the markers carry the new epoch, which the answer returns) and
partitions added by the data itself (`add_partitions(..., implicit=True)`, from Produce v12 and TxnOffsetCommit
v5); a transaction remembers which version its client speaks, as Kafka's clientTransactionVersion. Under
version 2 an ABORT at the current epoch with nothing open (Empty, CompleteCommit, CompleteAbort: the producer
aborted before its batches went out) ends an empty transaction with the bump, as Kafka 4.4 does.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from enum import Enum

from fakekafka.model.clock import Clock
from fakekafka.wire import ErrorCode

__all__ = ["TransactionCoordinator", "TransactionConfig", "TransactionMetadata", "TransactionState",
           "IllegalTransactionTransition", "EPOCH_EXHAUSTED"]

EPOCH_EXHAUSTED = 32766
"""An epoch at Short.MAX_VALUE - 1 cannot be bumped again: the producer gets a new producer id (Kafka's
TransactionMetadata.isEpochExhausted)."""

TopicPartition = tuple[str, int]


class TransactionState(Enum):
    EMPTY = "Empty"
    ONGOING = "Ongoing"
    PREPARE_COMMIT = "PrepareCommit"
    PREPARE_ABORT = "PrepareAbort"
    COMPLETE_COMMIT = "CompleteCommit"
    COMPLETE_ABORT = "CompleteAbort"
    DEAD = "Dead"
    PREPARE_EPOCH_FENCE = "PrepareEpochFence"


_S = TransactionState
VALID_PREVIOUS: dict[TransactionState, frozenset[TransactionState]] = {
    _S.EMPTY: frozenset({_S.EMPTY, _S.COMPLETE_COMMIT, _S.COMPLETE_ABORT}),
    _S.ONGOING: frozenset({_S.ONGOING, _S.EMPTY, _S.COMPLETE_COMMIT, _S.COMPLETE_ABORT}),
    _S.PREPARE_COMMIT: frozenset({_S.ONGOING}),
    _S.PREPARE_ABORT: frozenset({_S.ONGOING, _S.PREPARE_EPOCH_FENCE, _S.EMPTY, _S.COMPLETE_COMMIT,
                                 _S.COMPLETE_ABORT}),  # the last three: version 2's abort with nothing open
    _S.COMPLETE_COMMIT: frozenset({_S.PREPARE_COMMIT}),
    _S.COMPLETE_ABORT: frozenset({_S.PREPARE_ABORT}),
    _S.DEAD: frozenset({_S.EMPTY, _S.COMPLETE_COMMIT, _S.COMPLETE_ABORT}),
    _S.PREPARE_EPOCH_FENCE: frozenset({_S.ONGOING}),
}
"""Kafka's TransactionState.validPreviousStates: every transition is checked against it."""


class IllegalTransactionTransition(AssertionError):
    """A transition Kafka's coordinator would never make: a bug in this model, never a client's error."""


@dataclass
class TransactionConfig:
    max_timeout_ms: int = 900_000
    """transaction.max.timeout.ms: InitProducerId asking for more gets INVALID_TRANSACTION_TIMEOUT."""
    id_expiration_ms: int = 604_800_000
    """transactional.id.expiration.ms: an idle id (no open transaction) is forgotten after this long."""


@dataclass
class TransactionMetadata:
    transactional_id: str
    producer_id: int
    producer_epoch: int = -1
    last_producer_epoch: int = -1
    previous_producer_id: int = -1
    timeout_ms: int = 60_000
    state: TransactionState = TransactionState.EMPTY
    partitions: set[TopicPartition] = field(default_factory=set)
    start_ms: int = -1
    last_update_ms: int = 0
    markers_pending: set[TopicPartition] = field(default_factory=set)
    """Partitions still to get this transaction's marker (the coordinator retries while they have no leader)."""
    history: list[tuple[int, TransactionState, TransactionState]] = field(default_factory=list)
    """(time, from, to) of every transition, for tests and `fakekafka ctl`."""
    client_version: int = 1
    """The transactions version the client speaks (2: an epoch bump per transaction)."""
    next_producer_id: int = -1
    """Version 2: the producer id this one rotates to when the transaction ending now exhausted its epochs."""

    def transition_to(self, target: TransactionState, now: int) -> None:
        if self.state not in VALID_PREVIOUS[target]:
            raise IllegalTransactionTransition(f"transactional id {self.transactional_id}: "
                                               f"{self.state.value} -> {target.value}")
        self.history.append((now, self.state, target))
        self.state = target
        self.last_update_ms = now

    @property
    def epoch_exhausted(self) -> bool:
        return self.producer_epoch >= EPOCH_EXHAUSTED

    @property
    def committing(self) -> bool | None:
        """True/False while markers of a commit/abort are being written; None otherwise."""
        if self.state == TransactionState.PREPARE_COMMIT:
            return True
        if self.state == TransactionState.PREPARE_ABORT:
            return False
        return None


TransactionLogSink = Callable[[TransactionMetadata | str], None]
"""Told each state Kafka's TransactionStateManager would append to `__transaction_state`: the metadata after the
transition, or the transactional id alone when it expired (a tombstone)."""

WriteMarker = Callable[[TopicPartition, int, int, bool, int], bool]
"""(partition, producer id, producer epoch, commit, coordinator epoch) -> written (False: retry later)."""


class TransactionCoordinator:
    def __init__(self, clock: Clock, config: TransactionConfig | None = None,
                 allocate_producer_id: Callable[[], int] | None = None,
                 write_marker: WriteMarker | None = None,
                 coordinator_epoch: Callable[[str], int] | None = None,
                 log: TransactionLogSink | None = None) -> None:
        self.clock = clock
        self.log: TransactionLogSink = log or (lambda _: None)
        self.config = config or TransactionConfig()
        self.transactions: dict[str, TransactionMetadata] = {}
        self._next_pid = 1000
        self._allocate = allocate_producer_id or self._own_allocate
        self._write_marker: WriteMarker = write_marker or (lambda *_: True)
        self._coordinator_epoch = coordinator_epoch or (lambda _tid: 0)

    def _own_allocate(self) -> int:
        pid = self._next_pid
        self._next_pid += 1
        return pid

    def _now(self) -> int:
        return self.clock.now_ms()

    # --- InitProducerId ----------------------------------------------------------------------------
    def init_producer_id(self, transactional_id: str, timeout_ms: int,
                         expected: tuple[int, int] | None = None) -> tuple[ErrorCode, int, int]:
        """(error, producer id, epoch). `expected` is the (producer id, epoch) a KIP-360 producer sends to
        bump its epoch after an error; a mismatch is a zombie: PRODUCER_FENCED."""
        if not transactional_id:
            return ErrorCode.INVALID_REQUEST, -1, -1
        if timeout_ms <= 0 or timeout_ms > self.config.max_timeout_ms:
            return ErrorCode.INVALID_TRANSACTION_TIMEOUT, -1, -1
        now = self._now()
        txn = self.transactions.get(transactional_id)
        if txn is None or txn.state == TransactionState.DEAD:
            txn = self.transactions[transactional_id] = TransactionMetadata(transactional_id, self._allocate(),
                                                                            timeout_ms=timeout_ms,
                                                                            last_update_ms=now)
        if expected is not None and not (txn.producer_epoch == -1 or expected[0] == txn.producer_id or
                                         (expected[0] == txn.previous_producer_id and
                                          expected[1] >= EPOCH_EXHAUSTED)):
            return ErrorCode.PRODUCER_FENCED, -1, -1
        if txn.state in (TransactionState.PREPARE_COMMIT, TransactionState.PREPARE_ABORT,
                         TransactionState.PREPARE_EPOCH_FENCE):
            return ErrorCode.CONCURRENT_TRANSACTIONS, -1, -1
        if txn.state == TransactionState.ONGOING:
            # fence the open transaction's producer: abort it under a bumped epoch it never sees, and let this
            # producer retry (its retry bumps the epoch once more)
            self._fence_and_abort(txn, now)
            return ErrorCode.CONCURRENT_TRANSACTIONS, -1, -1
        if expected is not None and expected[0] == txn.producer_id and expected[1] != txn.producer_epoch and \
                txn.producer_epoch != -1:
            # a retry of a bump whose answer was lost: the same answer again
            if expected[1] == txn.last_producer_epoch:
                return ErrorCode.NONE, txn.producer_id, txn.producer_epoch
            return ErrorCode.PRODUCER_FENCED, -1, -1
        if txn.epoch_exhausted and (expected is None or expected[1] == txn.producer_epoch):
            txn.previous_producer_id, txn.producer_id = txn.producer_id, self._allocate()
            txn.last_producer_epoch, txn.producer_epoch = -1, 0
        else:
            # KIP-360: a bump the producer asked for remembers the epoch it replaced, so a retry is recognised
            txn.last_producer_epoch = txn.producer_epoch if expected is not None else -1
            txn.producer_epoch += 1
        txn.timeout_ms = timeout_ms
        txn.partitions.clear()
        txn.start_ms = -1
        txn.transition_to(TransactionState.EMPTY, now)
        self.log(txn)
        return ErrorCode.NONE, txn.producer_id, txn.producer_epoch

    def _fence_and_abort(self, txn: TransactionMetadata, now: int) -> None:
        txn.transition_to(TransactionState.PREPARE_EPOCH_FENCE, now)
        if not txn.epoch_exhausted:
            txn.producer_epoch += 1
        txn.last_producer_epoch = -1
        txn.transition_to(TransactionState.PREPARE_ABORT, now)
        self.log(txn)  # Kafka keeps PrepareEpochFence in memory only: the log gets the PrepareAbort
        self._send_markers(txn, now)

    # --- AddPartitionsToTxn / AddOffsetsToTxn -----------------------------------------------------------
    def _check_producer(self, transactional_id: str, producer_id: int, epoch: int
                        ) -> tuple[ErrorCode, TransactionMetadata | None]:
        if not transactional_id:
            return ErrorCode.INVALID_REQUEST, None
        txn = self.transactions.get(transactional_id)
        if txn is None or txn.state == TransactionState.DEAD or txn.producer_id != producer_id:
            return ErrorCode.INVALID_PRODUCER_ID_MAPPING, None
        if txn.producer_epoch != epoch:
            return ErrorCode.PRODUCER_FENCED, None
        return ErrorCode.NONE, txn

    def add_partitions(self, transactional_id: str, producer_id: int, epoch: int,
                       partitions: set[TopicPartition], *, implicit: bool = False) -> ErrorCode:
        """AddPartitionsToTxn/AddOffsetsToTxn; `implicit`: transactions version 2, where the first batch (or the
        TxnOffsetCommit) for a partition adds it."""
        code, txn = self._check_producer(transactional_id, producer_id, epoch)
        if txn is None:
            return code
        if implicit:
            txn.client_version = 2
        if txn.state in (TransactionState.PREPARE_COMMIT, TransactionState.PREPARE_ABORT,
                         TransactionState.PREPARE_EPOCH_FENCE):
            return ErrorCode.CONCURRENT_TRANSACTIONS
        now = self._now()
        if txn.state == TransactionState.ONGOING and partitions <= txn.partitions:
            return ErrorCode.NONE  # nothing new: Kafka answers without appending to the log
        if txn.state != TransactionState.ONGOING:
            txn.partitions.clear()
            txn.start_ms = now
        txn.partitions |= partitions
        txn.transition_to(TransactionState.ONGOING, now)
        self.log(txn)
        return ErrorCode.NONE

    def verify_partitions(self, transactional_id: str, producer_id: int, epoch: int,
                          partitions: set[TopicPartition]) -> dict[TopicPartition, ErrorCode]:
        """AddPartitionsToTxn v4+ with verify_only, and KIP-890 part 1's check before a transactional batch is
        appended: TRANSACTION_ABORTABLE for a partition the transaction does not hold."""
        code, txn = self._check_producer(transactional_id, producer_id, epoch)
        if txn is not None and txn.state in (TransactionState.PREPARE_COMMIT, TransactionState.PREPARE_ABORT):
            code = ErrorCode.CONCURRENT_TRANSACTIONS
        if code != ErrorCode.NONE or txn is None:
            return dict.fromkeys(partitions, code)
        return {tp: ErrorCode.NONE if tp in txn.partitions else ErrorCode.TRANSACTION_ABORTABLE for tp in partitions}

    # --- EndTxn -----------------------------------------------------------------------------------------
    def end_transaction(self, transactional_id: str, producer_id: int, epoch: int, commit: bool) -> ErrorCode:
        """EndTxn v0-4 (transactions version 1): the epoch stays."""
        return self._end(transactional_id, producer_id, epoch, commit, bump=False)[0]

    def end_transaction_v2(self, transactional_id: str, producer_id: int, epoch: int, commit: bool
                           ) -> tuple[ErrorCode, int, int]:
        """EndTxn v5 (transactions version 2): the epoch is bumped at every end; (error, producer id, epoch) for
        the producer's next transaction. A retry of an end that went through gets the same answer."""
        return self._end(transactional_id, producer_id, epoch, commit, bump=True)

    def _end(self, transactional_id: str, producer_id: int, epoch: int, commit: bool, *, bump: bool
             ) -> tuple[ErrorCode, int, int]:
        failed = -1, -1
        if not transactional_id:
            return ErrorCode.INVALID_REQUEST, *failed
        txn = self.transactions.get(transactional_id)
        if txn is None or txn.state == TransactionState.DEAD:
            return ErrorCode.INVALID_PRODUCER_ID_MAPPING, *failed
        state = txn.state
        v2 = txn.client_version >= 2
        # version 2: an end that went through left the epoch one above the one the retry names (Kafka's
        # endTxnEpochBumped), or, when it rotated the producer id, the new id at epoch 0
        retry_on_bump = v2 and txn.producer_epoch == epoch + 1
        retry_on_overflow = v2 and txn.previous_producer_id == producer_id and epoch >= EPOCH_EXHAUSTED \
            and txn.producer_epoch == 0
        if txn.producer_id != producer_id and not retry_on_overflow:
            return ErrorCode.INVALID_PRODUCER_ID_MAPPING, *failed
        if v2 and state in (TransactionState.PREPARE_COMMIT, TransactionState.PREPARE_ABORT):
            valid = retry_on_bump
        elif v2 and state in (TransactionState.COMPLETE_COMMIT, TransactionState.COMPLETE_ABORT):
            valid = retry_on_bump or retry_on_overflow
        else:
            valid = epoch == txn.producer_epoch
        # version 2: an abort at the current epoch with no transaction open (the producer aborted before any of
        # its batches went out) still ends one, bumping the epoch; Kafka 4.4 accepts it after a commit
        empty_abort = bump and not commit and epoch == txn.producer_epoch and state in (
            TransactionState.EMPTY, TransactionState.COMPLETE_COMMIT, TransactionState.COMPLETE_ABORT)
        if not valid and not empty_abort:
            return ErrorCode.PRODUCER_FENCED, *failed
        if state == TransactionState.ONGOING or empty_abort:
            now = self._now()
            if bump:
                txn.client_version = 2
                if txn.epoch_exhausted:
                    txn.next_producer_id = self._allocate()
                txn.last_producer_epoch = txn.producer_epoch
                txn.producer_epoch += 1
            txn.transition_to(TransactionState.PREPARE_COMMIT if commit else TransactionState.PREPARE_ABORT, now)
            self.log(txn)
            self._send_markers(txn, now)
            return ErrorCode.NONE, txn.producer_id, txn.producer_epoch
        if state == (TransactionState.COMPLETE_COMMIT if commit else TransactionState.COMPLETE_ABORT):
            return ErrorCode.NONE, txn.producer_id, txn.producer_epoch  # a retry of an end that completed
        if state == (TransactionState.PREPARE_COMMIT if commit else TransactionState.PREPARE_ABORT):
            return ErrorCode.CONCURRENT_TRANSACTIONS, *failed
        return ErrorCode.INVALID_TXN_STATE, *failed

    def _send_markers(self, txn: TransactionMetadata, now: int) -> None:
        txn.markers_pending = set(txn.partitions)
        self._retry_markers(txn, now)

    def _retry_markers(self, txn: TransactionMetadata, now: int) -> None:
        commit = txn.committing
        if commit is None:
            return
        coordinator_epoch = self._coordinator_epoch(txn.transactional_id)
        for tp in sorted(txn.markers_pending):
            if self._write_marker(tp, txn.producer_id, txn.producer_epoch, commit, coordinator_epoch):
                txn.markers_pending.discard(tp)
        if not txn.markers_pending:
            txn.transition_to(TransactionState.COMPLETE_COMMIT if commit else TransactionState.COMPLETE_ABORT, now)
            txn.partitions.clear()  # the start time stays, as Kafka's prepareComplete keeps it
            if txn.next_producer_id >= 0:  # version 2 exhausted the epochs: the next transaction has a new id
                txn.previous_producer_id, txn.producer_id = txn.producer_id, txn.next_producer_id
                txn.producer_epoch, txn.last_producer_epoch, txn.next_producer_id = 0, -1, -1
            self.log(txn)

    # --- the clock ----------------------------------------------------------------------------------
    def tick(self) -> None:
        """Aborts transactions open longer than their timeout (fencing their producer, as Kafka's
        abortTimedOutTransactions), retries markers, and forgets transactional ids idle past
        transactional.id.expiration.ms."""
        now = self._now()
        for tid, txn in list(self.transactions.items()):
            if txn.state == TransactionState.ONGOING and txn.start_ms + txn.timeout_ms <= now:
                self._fence_and_abort(txn, now)
            elif txn.markers_pending:
                self._retry_markers(txn, now)
            elif txn.state in (TransactionState.EMPTY, TransactionState.COMPLETE_COMMIT,
                               TransactionState.COMPLETE_ABORT) and \
                    txn.last_update_ms + self.config.id_expiration_ms <= now:
                txn.transition_to(TransactionState.DEAD, now)
                del self.transactions[tid]
                self.log(tid)

    def next_deadline(self) -> int | None:
        times = []
        for txn in self.transactions.values():
            if txn.state == TransactionState.ONGOING:
                times.append(txn.start_ms + txn.timeout_ms)
            elif txn.state in (TransactionState.EMPTY, TransactionState.COMPLETE_COMMIT,
                               TransactionState.COMPLETE_ABORT):
                times.append(txn.last_update_ms + self.config.id_expiration_ms)
        return min(times, default=None)

    def retry_pending_markers(self) -> None:
        """A partition got a leader again: markers waiting for it go now."""
        now = self._now()
        for txn in list(self.transactions.values()):
            if txn.markers_pending:
                self._retry_markers(txn, now)

    def loaded(self, transactions: dict[str, TransactionMetadata], owned: Callable[[str], bool]) -> None:
        """A `__transaction_state` partition loaded by a new coordinator: the ids it owns (`owned`) are replaced
        by those read from its log, and a transaction found deciding (PrepareCommit/PrepareAbort) has its
        markers written again, as Kafka's coordinator completes them after loading."""
        for tid in [t for t in self.transactions if owned(t)]:
            del self.transactions[tid]
        self.transactions.update(transactions)
        now = self._now()
        for txn in transactions.values():
            if txn.committing is not None:
                self._send_markers(txn, now)

    # --- steering, for tests and `fakekafka ctl` --------------------------------------------------------
    def abort(self, transactional_id: str) -> None:
        """Aborts the id's open transaction as a timeout would (its producer is fenced)."""
        txn = self.transactions.get(transactional_id)
        if txn is None:
            raise KeyError(transactional_id)
        if txn.state != TransactionState.ONGOING:
            raise ValueError(f"transactional id {transactional_id} has no open transaction (state "
                             f"{txn.state.value})")
        self._fence_and_abort(txn, self._now())

    def expire(self, transactional_id: str) -> None:
        """Forgets an idle transactional id now, as transactional.id.expiration.ms would: its next
        InitProducerId starts over with a new producer id, and its old producer gets INVALID_PRODUCER_ID_MAPPING."""
        txn = self.transactions.get(transactional_id)
        if txn is None:
            raise KeyError(transactional_id)
        if txn.state not in VALID_PREVIOUS[TransactionState.DEAD]:
            raise ValueError(f"transactional id {transactional_id} is {txn.state.value}: only an idle one "
                             "(Empty, CompleteCommit, CompleteAbort) expires")
        txn.transition_to(TransactionState.DEAD, self._now())
        del self.transactions[transactional_id]
        self.log(transactional_id)
