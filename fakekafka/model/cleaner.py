"""Log compaction, as Kafka's LogCleaner does it to a partition's log (cleanup.policy=compact).

Which logs and how far (LogCleanerManager): from the cleaner's checkpoint (the first dirty offset) up to the
first uncleanable segment: never the active segment, nothing from the last stable offset on (open
transactions), nothing from the first segment with a record newer than min.compaction.lag.ms. A log is
cleaned when its dirty bytes are more than min.cleanable.dirty.ratio of the log, or when a dirty segment's
first batch is older than max.compaction.lag.ms.

What a round keeps (Cleaner.cleanInto, MemoryRecords.filterTo): every segment from the log start to that
bound is copied, grouped into segments of at most segment.bytes; of each key only the record with the
latest offset in the dirty part stays; a record without a key goes. Tombstones stay until their batch's
delete horizon (now + delete.retention.ms, stamped into the batch the first time it is cleaned with one)
has passed. Batches of aborted transactions go; a transaction marker stays while data of its transaction
is still in the log, then gets a delete horizon like a tombstone. The last batch of each producer, and the
last batch of the round, stay even when emptied (as a bare header), so producer sequences and the log end
survive. Batches keep their offsets, so consumers see the gaps they see on Kafka.

How far a round gets (Cleaner.buildOffsetMap): the keys of the dirty part go into an offset map of bounded
size (log.cleaner.dedupe.buffer.size); when it is full the round ends at the last record it mapped, maybe in
the middle of a segment. That segment is still rewritten whole, records past the mapped part kept as they are,
and the checkpoint moves to just past it: the next round carries on from there.
"""

from __future__ import annotations

import heapq
import struct
from bisect import bisect_left, bisect_right
from collections.abc import Callable
from dataclasses import dataclass

from fakekafka.model.log import ABORT, COMMIT, LogSegment, PartitionLog, control_type
from fakekafka.wire.records import decode_batch, delete_horizon, read_header, rebuild_batch

__all__ = ["CleanerSettings", "LogToClean", "clean", "cleanable", "dedupe_buffer_problem", "max_desired_map_size",
           "offset_map_problem"]

_TRANSACTIONAL, _CONTROL = 0x10, 0x20
_BYTES_PER_ENTRY = 16 + 8
"""What one key costs in Kafka's offset map (SkimpyOffsetMap): its MD5 hash and an 8-byte offset."""
_INT_MAX = 2**31 - 1


def _per_thread(dedupe_buffer_size: int, threads: int) -> int:
    """Each cleaner thread's share of the dedupe buffer, divided as Java divides (towards zero)."""
    share = abs(dedupe_buffer_size) // threads
    return share if dedupe_buffer_size >= 0 else -share


def dedupe_buffer_problem(dedupe_buffer_size: int, threads: int) -> str | None:
    """Kafka's refusal of these two broker configs, at start and for a dynamic change (KafkaConfig's
    validateValues), in its words; None: accepted. log.cleaner.threads=0 fails its division."""
    if threads == 0:
        return "/ by zero"
    if _per_thread(dedupe_buffer_size, threads) <= 1 << 20:
        return "requirement failed: log.cleaner.dedupe.buffer.size must be at least 1MB per cleaner thread."
    return None


def offset_map_problem(dedupe_buffer_size: int, threads: int, load_factor: float) -> str | None:
    """Why a broker with log.cleaner.enable=true fails to start its cleaner (the Cleaner's own requirement of its
    map, in Kafka's words), or None."""
    if max_desired_map_size(dedupe_buffer_size, threads, load_factor) >= 1:
        return None
    return ("requirement failed: offset map is too small to fit in even a single message, so log cleaning will "
            "never make progress. You can increase log.cleaner.dedupe.buffer.size or decrease log.cleaner.threads")


def max_desired_map_size(dedupe_buffer_size: int, threads: int, load_factor: float) -> int:
    """How many keys a round maps before it ends early, as Kafka sizes each cleaner thread's offset map
    (LogCleaner.CleanerThread, SkimpyOffsetMap): log.cleaner.dedupe.buffer.size split between the
    log.cleaner.threads (at most 2 GiB each), a slot per 24 bytes, filled to log.cleaner.io.buffer.load.factor
    (Cleaner.buildOffsetMapForSegment). Capped at the slots: past them Kafka's map refuses a key and the round
    fails (see compat/KNOWN_DIFFERENCES.md). 0: the map cannot hold one key (Kafka's cleaner threads fail to start)."""
    slots = max(min(_per_thread(dedupe_buffer_size, max(threads, 1)), _INT_MAX), 0) // _BYTES_PER_ENTRY
    if not slots * load_factor > 1:  # Kafka's Cleaner requires this of its map
        return 0
    return min(int(min(slots * load_factor, _INT_MAX)), slots)


@dataclass(frozen=True, slots=True)
class CleanerSettings:
    """A topic's cleaning configs as the broker holding the log sees them."""

    min_cleanable_dirty_ratio: float = 0.5
    min_compaction_lag_ms: int = 0
    max_compaction_lag_ms: int = 9223372036854775807
    delete_retention_ms: int = 86_400_000
    segment_bytes: int = 1 << 30
    max_desired_map_size: int = max_desired_map_size(128 << 20, 1, 0.9)
    """The broker's cleaner: how many keys one round maps (Kafka's defaults: 5033164)."""


@dataclass(frozen=True, slots=True)
class LogToClean:
    first_dirty: int
    upper: int
    """The base offset of the first segment this round leaves alone."""
    clean_bytes: int
    cleanable_bytes: int
    need_compaction_now: bool

    @property
    def ratio(self) -> float:
        total = self.clean_bytes + self.cleanable_bytes
        return self.cleanable_bytes / total if total else 0.0

    def due(self, settings: CleanerSettings) -> bool:
        """Whether Kafka's cleaner would pick this log (LogCleanerManager.grabFilthiestCompactedLog)."""
        if self.clean_bytes + self.cleanable_bytes <= 0:
            return False
        return (self.need_compaction_now and self.cleanable_bytes > 0) or \
            self.ratio > settings.min_cleanable_dirty_ratio


def _floor_segment(log: PartitionLog, offset: int) -> int:
    """The index of the segment holding `offset` (the first one if it is below them all)."""
    return max(bisect_right([s.base_offset for s in log.segments], offset) - 1, 0)


def cleanable(log: PartitionLog, now: int, settings: CleanerSettings) -> LogToClean:
    """The range Kafka's cleaner would clean now, and the byte counts its choice rests on
    (LogCleanerManager.cleanableOffsets, calculateCleanableBytes, maxCompactionDelay)."""
    checkpoint = log.cleaner_checkpoint
    first_dirty = checkpoint if log.log_start_offset <= checkpoint <= log.log_end_offset else log.log_start_offset
    segs = log.segments
    active = len(segs) - 1
    uncleanable = min(log.last_stable_offset, segs[active].base_offset)
    non_active = range(_floor_segment(log, first_dirty), active)
    if settings.min_compaction_lag_ms > 0:
        for i in non_active:
            if segs[i].largest_timestamp > now - settings.min_compaction_lag_ms:
                uncleanable = min(uncleanable, segs[i].base_offset)
                break
    uncleanable = max(first_dirty, uncleanable)
    u = _floor_segment(log, uncleanable)
    upper_index = u if u < active else active
    upper = segs[upper_index].base_offset
    start = _floor_segment(log, min(first_dirty, upper))
    cleanable_bytes = sum(s.size for s in segs[start:upper_index])
    clean_bytes = sum(s.size for s in segs if s.base_offset < first_dirty)
    firsts = [segs[i].rolling_timestamp for i in non_active if segs[i].rolling_timestamp > 0]
    need_now = bool(firsts) and min(firsts) < now - settings.max_compaction_lag_ms
    return LogToClean(first_dirty, upper, clean_bytes, cleanable_bytes, need_now)


def _last_batches_of_producers(log: PartitionLog) -> dict[int, tuple[int, int]]:
    """producer id -> (last offset of its last data batch, or -1; epoch of its last batch): what Kafka's
    producer state tells the cleaner to keep (lastRecordsOfActiveProducers)."""
    last: dict[int, tuple[int, int]] = {}
    for batch, end in zip(log.batches, log.last_offsets, strict=True):
        producer_id, epoch = struct.unpack_from(">qh", batch, 43)
        if producer_id < 0:
            continue
        if batch[22] & _CONTROL:
            last[producer_id] = (last.get(producer_id, (-1, 0))[0], epoch)
        else:
            last[producer_id] = (end, epoch)
    return last


def _build_offset_map(log: PartitionLog, first_dirty: int, upper: int, max_size: int,
                      aborted: Callable[[int, int, bool], bool]) -> tuple[dict[bytes, int], int]:
    """key -> its latest offset in the dirty part, and the last offset the map covers (Cleaner.buildOffsetMap):
    segment by segment, skipping markers and aborted data, until a keyed record finds the map holding
    `max_size` keys already (even the key of one it holds): the map then covers up to the record before.
    A segment mapped to its end covers the offsets up to the next one's base (gaps included)."""
    offset_map: dict[bytes, int] = {}
    covered = -1
    segs = log.segments
    s = _floor_segment(log, first_dirty)
    while s < len(segs) and segs[s].base_offset < upper:
        next_base = segs[s + 1].base_offset if s + 1 < len(segs) else upper
        for i in log.segment_batches(s):
            if log.last_offsets[i] < first_dirty:
                continue
            batch = log.batches[i]
            if not (batch[22] & _CONTROL or aborted(log.base_offsets[i], struct.unpack_from(">q", batch, 43)[0],
                                                     bool(batch[22] & _TRANSACTIONAL))):
                for rec in decode_batch(bytes(batch)).records:
                    if rec.key is not None and rec.offset >= first_dirty:
                        if len(offset_map) >= max_size:
                            return offset_map, covered
                        offset_map[rec.key] = covered = rec.offset
            covered = log.last_offsets[i]
        covered = min(next_base, upper) - 1
        s += 1
    return offset_map, covered


def clean(log: PartitionLog, now: int, settings: CleanerSettings, to_clean: LogToClean) -> int:
    """One cleaning round over `log` (Cleaner.doClean): rewrites the segments from the log start to the one
    where the offset map filled (all below `to_clean.upper` if it did not) and moves the cleaner checkpoint
    to the first offset the map did not cover. Returns that offset."""
    upper = to_clean.upper
    aborted_ranges = [(a.first_offset, a.last_offset, a.producer_id) for a in log.aborted if a.first_offset < upper]
    aborted_pids = _aborted_membership(aborted_ranges)
    latest, latest_offset = _build_offset_map(log, to_clean.first_dirty, upper, settings.max_desired_map_size,
                                              aborted_pids)
    end_offset = latest_offset + 1
    cleaned_upper = next((s.base_offset for s in log.segments if s.base_offset >= end_offset), upper)
    end = bisect_left(log.base_offsets, cleaned_upper)
    producers_last = _last_batches_of_producers(log)

    heap = [(first, last, pid) for first, last, pid in aborted_ranges]
    heapq.heapify(heap)
    ongoing_aborted: dict[int, int] = {}  # producer id -> last offset of a batch of it seen, or -1
    ongoing_committed: set[int] = set()

    def consume_aborted_up_to(offset: int) -> None:
        while heap and heap[0][0] <= offset:
            _, _, pid = heapq.heappop(heap)
            ongoing_aborted.setdefault(pid, -1)

    kept: list[tuple[bytes | bytearray, int, int, int, int, int]] = []
    for i in range(end):
        batch = log.batches[i]
        header = read_header(batch)
        last_offset = header.last_offset
        consume_aborted_up_to(last_offset)
        pid = header.producer_id
        if header.is_control:
            if header.records_count == 0:
                can_discard = True
            elif control_type(batch) == ABORT:
                seen = ongoing_aborted.pop(pid, None)
                can_discard = seen is None or seen < 0
            elif control_type(batch) == COMMIT:
                can_discard = pid not in ongoing_committed
                ongoing_committed.discard(pid)
            else:
                can_discard = False
            horizon = delete_horizon(header)
            discard_records = can_discard and 0 <= horizon <= now
        else:
            can_discard = False
            if header.is_transactional:
                if pid in ongoing_aborted:
                    ongoing_aborted[pid] = last_offset
                    can_discard = True
                else:
                    ongoing_committed.add(pid)
            discard_records = can_discard
        producer_last = producers_last.get(pid) if pid >= 0 else None
        last_of_producer = producer_last is not None and (
            last_offset == producer_last[0] if producer_last[0] >= 0
            else header.is_control and header.producer_epoch == producer_last[1])
        retain_empty = last_of_producer or last_offset + 1 == upper
        if discard_records and not retain_empty:
            continue
        records = [] if discard_records else decode_batch(bytes(batch)).records
        if not header.is_control and records:
            horizon = delete_horizon(header)
            records = [r for r in records if r.offset > latest_offset or (
                r.key is not None and r.offset >= latest.get(r.key, -1)
                and (r.value is not None or horizon < 0 or now < horizon))]
        if records:
            tombstones = not header.is_control and any(r.value is None for r in records)
            set_horizon = (tombstones or (can_discard and header.is_control)) and delete_horizon(header) < 0
            if len(records) == header.records_count and not set_horizon:
                out: bytes | bytearray = batch
            else:
                out = rebuild_batch(header, records, now + settings.delete_retention_ms if set_horizon
                                    else delete_horizon(header))
        elif retain_empty:
            out = rebuild_batch(header, [])
        else:
            continue
        kept.append((out, log.base_offsets[i], log.last_offsets[i], log.max_timestamps[i] if out is batch
                     else read_header(out).max_timestamp, log.appended_at[i], log.batch_epochs[i]))
    groups = _replace(log, end, cleaned_upper, kept, settings.segment_bytes)
    log.cleaner_checkpoint = end_offset
    if log.store is not None:  # a data dir: the cleaned segments' files rewritten, the checkpoint written
        log.store.rewrite(log, groups)
    return end_offset


def _aborted_membership(ranges: list[tuple[int, int, int]]) -> Callable[[int, int, bool], bool]:
    """A test of whether a transactional batch at an offset belongs to one of the aborted transactions."""
    by_pid: dict[int, list[tuple[int, int]]] = {}
    for first, last, pid in ranges:
        by_pid.setdefault(pid, []).append((first, last))

    def test(offset: int, pid: int, transactional: bool) -> bool:
        if not transactional:
            return False
        return any(first <= offset < last for first, last in by_pid.get(pid, ()))
    return test


def _replace(log: PartitionLog, end: int, upper: int,
             kept: list[tuple[bytes | bytearray, int, int, int, int, int]], segment_bytes: int) -> int:
    """Swaps the cleaned batches in for the first `end` ones and regroups the segments below `upper` as
    Kafka's groupSegmentsBySize does (consecutive segments whose sizes before cleaning add up to at most
    segment.bytes become one, at the first one's base offset). Returns how many segments the cleaned part is."""
    old = [s for s in log.segments if s.base_offset < upper]
    groups: list[LogSegment] = []
    total = 0
    for seg in old:
        if groups and total + seg.size <= segment_bytes:
            total += seg.size
            continue
        groups.append(LogSegment(seg.base_offset, created=seg.created))
        total = seg.size
    log.batches[:end] = [k[0] for k in kept]
    log.base_offsets[:end] = [k[1] for k in kept]
    log.last_offsets[:end] = [k[2] for k in kept]
    log.max_timestamps[:end] = [k[3] for k in kept]
    log.appended_at[:end] = [k[4] for k in kept]
    log.batch_epochs[:end] = [k[5] for k in kept]
    log.segments[:len(old)] = groups
    log.size_bytes = sum(len(b) for b in log.batches)
    log.resize_segments(len(groups))
    for seg, first in zip(groups, [log.segment_batches(i) for i in range(len(groups))], strict=True):
        seg.rolling_timestamp = log.max_timestamps[first.start] if first else -1
        seg.last_modified = max((log.appended_at[j] for j in first), default=seg.created)
    log.rebuild_txns()
    return len(groups)
