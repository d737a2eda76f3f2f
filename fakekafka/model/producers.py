"""Idempotent producers: producer ids and epochs, and per-partition sequence tracking.

Mirrors Kafka's ProducerStateManager: the last five batches of each producer on a partition are
remembered so a retried batch is answered with its original offset and never appended twice.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field

from wire import ErrorCode
from wire.records import BatchHeader

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


@dataclass(frozen=True, slots=True)
class SequenceCheck:
    error: ErrorCode = ErrorCode.NONE
    duplicate_of: int | None = None  # base offset of the batch this one repeats
    duplicate_log_append_time: int = -1
    message: str | None = None


class ProducerIds:
    """Hands out producer ids; a transactional id keeps its id and gets a bumped epoch."""

    def __init__(self, first_id: int = 1000) -> None:
        self._next = first_id
        self.transactional: dict[str, tuple[int, int]] = {}

    def init(self, transactional_id: str | None, producer_id: int = -1,
             producer_epoch: int = -1) -> tuple[ErrorCode, int, int]:
        if transactional_id is None:
            if producer_id >= 0 and producer_epoch >= 0:
                # KIP-360: an idempotent producer may bump its own epoch after a sequence error
                if producer_epoch >= 32766:
                    return ErrorCode.NONE, self._allocate(), 0
                return ErrorCode.NONE, producer_id, producer_epoch + 1
            return ErrorCode.NONE, self._allocate(), 0
        current = self.transactional.get(transactional_id)
        if current is None:
            pid, epoch = self._allocate(), 0
        else:
            pid, epoch = current
            if producer_id >= 0 and (producer_id, producer_epoch) != current:
                return ErrorCode.PRODUCER_FENCED, -1, -1
            epoch += 1
            if epoch >= 32767:
                pid, epoch = self._allocate(), 0
        self.transactional[transactional_id] = (pid, epoch)
        return ErrorCode.NONE, pid, epoch

    def _allocate(self) -> int:
        pid = self._next
        self._next += 1
        return pid


class PartitionProducers:
    """Sequence state of every idempotent producer writing to one partition."""

    def __init__(self) -> None:
        self.entries: dict[int, _ProducerEntry] = {}

    def check(self, header: BatchHeader) -> SequenceCheck:
        entry = self.entries.get(header.producer_id)
        first, last, epoch = header.base_sequence, header.last_sequence, header.producer_epoch
        if entry is None:
            if first != 0:
                return SequenceCheck(ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER,
                                     message=f"producer {header.producer_id} is new here; sequence {first} != 0")
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
