"""Idempotent producers: producer ids and epochs, and per-partition sequence tracking.

Mirrors Kafka's ProducerStateManager: the last five batches of each producer on a partition are
remembered so a retried batch is answered with its original offset and never appended twice.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass, field

from wire import ErrorCode
from wire.records import BatchHeader, TimestampType, read_header

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

    @classmethod
    def from_log(cls, batches: Iterable[bytes | bytearray]) -> PartitionProducers:
        """The state a replica holds for the batches in its own log, as Kafka's followers build it while
        they append and reload it after truncating. A new leader starts from this: a retried batch that
        only the old leader had is appended again, not answered as a duplicate of an offset that is gone."""
        state = cls()
        for batch in batches:
            h = read_header(batch)
            if h.producer_id >= 0 and h.base_sequence >= 0 and not h.is_control:
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
