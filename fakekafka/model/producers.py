"""Idempotent producers: producer ids and epochs, and per-partition sequence tracking.

Mirrors Kafka's ProducerStateManager: the last five batches of each producer on a partition are
remembered so a retried batch is answered with its original offset and never appended twice. A transaction
marker carries the producer's epoch: a marker the coordinator wrote with a bumped epoch (fencing) makes the
old epoch's batches INVALID_PRODUCER_EPOCH. Transactional ids and their epochs live in the transaction
coordinator (transactions.py); ProducerIds hands out the ids both use.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass, field

from fakekafka.wire import ErrorCode
from fakekafka.wire.records import BatchHeader, TimestampType, read_header

__all__ = ["ProducerIds", "PartitionProducers", "SequenceCheck"]

_CACHED_BATCHES = 5


@dataclass(frozen=True, slots=True)
class _BatchMeta:
    first_seq: int
    last_seq: int
    base_offset: int
    log_append_time: int


@dataclass
class _ProducerEntry:
    epoch: int
    batches: deque[_BatchMeta] = field(default_factory=lambda: deque(maxlen=_CACHED_BATCHES))
    last_timestamp: int = -1
    coordinator_epoch: int = -1
    """Of the last transaction marker (DescribeProducers reports it)."""


@dataclass(frozen=True, slots=True)
class SequenceCheck:
    error: ErrorCode = ErrorCode.NONE
    duplicate_of: int | None = None  # base offset of the batch this one repeats
    duplicate_log_append_time: int = -1
    message: str | None = None


class ProducerIds:
    """Hands out producer ids, to idempotent producers and to the transaction coordinator alike."""

    def __init__(self, first_id: int = 1000) -> None:
        self._next = first_id

    def init(self, producer_id: int = -1, producer_epoch: int = -1) -> tuple[ErrorCode, int, int]:
        """InitProducerId without a transactional id: a new id, or (KIP-360) the producer's own id with its
        epoch bumped after a sequence error."""
        if producer_id >= 0 and producer_epoch >= 0:
            if producer_epoch >= 32766:
                return ErrorCode.NONE, self.allocate(), 0
            return ErrorCode.NONE, producer_id, producer_epoch + 1
        return ErrorCode.NONE, self.allocate(), 0

    def allocate(self) -> int:
        pid = self._next
        self._next += 1
        return pid

    @property
    def next_id(self) -> int:
        """The id the next allocation hands out."""
        return self._next

    def reserve_below(self, producer_id: int) -> None:
        """Ids below `producer_id` are taken (seen in logs, or handed out before a restart): none is given again."""
        self._next = max(self._next, producer_id)


class PartitionProducers:
    """Sequence state of every idempotent producer writing to one partition."""

    def __init__(self) -> None:
        self.entries: dict[int, _ProducerEntry] = {}

    @classmethod
    def from_log(cls, batches: Iterable[bytes | bytearray]) -> PartitionProducers:
        """The state a replica holds for the batches in its own log, as Kafka's followers build it while
        they append and reload it after truncating. A new leader starts from this: a retried batch that
        only the old leader had is appended again, not answered as a duplicate of an offset that is gone."""
        state = cls()
        for batch in batches:
            h = read_header(batch)
            if h.producer_id >= 0 and h.is_control:
                state.record_marker(h.producer_id, h.producer_epoch, h.max_timestamp, -1)
            elif h.producer_id >= 0 and h.base_sequence >= 0:
                append_time = h.max_timestamp if h.timestamp_type == TimestampType.LOG_APPEND_TIME else -1
                state.record(h, h.base_offset, append_time)
        return state

    def check(self, header: BatchHeader) -> SequenceCheck:
        entry = self.entries.get(header.producer_id)
        first, last, epoch = header.base_sequence, header.last_sequence, header.producer_epoch
        if entry is None:
            # any sequence, as Kafka's ProducerAppendInfo.checkSequence: the producer's state may be gone (retention,
            # DeleteRecords) while the producer carries on
            return SequenceCheck()
        if epoch < entry.epoch:
            return SequenceCheck(ErrorCode.INVALID_PRODUCER_EPOCH,
                                 message=f"epoch {epoch} is older than the current {entry.epoch}")
        if epoch > entry.epoch:
            if first != 0:
                return SequenceCheck(ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER,
                                     message=f"new epoch {epoch} must start at sequence 0, not {first}")
            return SequenceCheck()
        for meta in entry.batches:
            if meta.first_seq == first and meta.last_seq == last:
                return SequenceCheck(duplicate_of=meta.base_offset, duplicate_log_append_time=meta.log_append_time)
        expected = (entry.batches[-1].last_seq + 1) & 0x7FFFFFFF if entry.batches else 0
        if first != expected:
            return SequenceCheck(ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER,
                                 message=f"expected sequence {expected}, got {first}")
        return SequenceCheck()

    def record(self, header: BatchHeader, base_offset: int, log_append_time: int) -> None:
        entry = self.entries.get(header.producer_id)
        if entry is None or header.producer_epoch != entry.epoch:
            entry = self.entries[header.producer_id] = _ProducerEntry(header.producer_epoch)
        entry.batches.append(_BatchMeta(header.base_sequence, header.last_sequence, base_offset, log_append_time))
        entry.last_timestamp = log_append_time if log_append_time >= 0 else header.max_timestamp

    def check_marker(self, producer_id: int, epoch: int, coordinator_epoch: int) -> ErrorCode:
        """A marker older than the producer's epoch, or from an older coordinator than the last marker's, is
        refused, as Kafka's appendEndTxnMarker."""
        entry = self.entries.get(producer_id)
        if entry is not None and epoch < entry.epoch:
            return ErrorCode.INVALID_PRODUCER_EPOCH
        if entry is not None and coordinator_epoch < entry.coordinator_epoch:
            return ErrorCode.TRANSACTION_COORDINATOR_FENCED
        return ErrorCode.NONE

    def record_marker(self, producer_id: int, epoch: int, timestamp: int, coordinator_epoch: int) -> None:
        entry = self.entries.get(producer_id)
        if entry is None or epoch > entry.epoch:
            entry = self.entries[producer_id] = _ProducerEntry(epoch)
        entry.last_timestamp = timestamp
        entry.coordinator_epoch = coordinator_epoch

    def last_sequence(self, producer_id: int) -> int:
        entry = self.entries.get(producer_id)
        return entry.batches[-1].last_seq if entry is not None and entry.batches else -1
