"""A partition's log: record batches kept as the bytes the producer sent.

Only the base offset and the partition leader epoch are written by the broker (neither is covered by
the CRC), so Fetch hands back stored bytes untouched. Offsets are found by bisecting the batches'
last offsets; timestamps by the batches' max timestamps, decoding records only inside one batch.

Each replica's log also keeps what Kafka's producer state and transaction index hold about transactions:
the first offset of every open transaction, the ended ones whose marker is not yet below the high
watermark (together they hold the last stable offset back), and the aborted ones that read_committed
fetches report. They are updated from the batch headers as batches are appended, so a follower that
becomes leader has them already.

The batches are cut into segments as Kafka's LocalLog cuts its files: the active (last) segment rolls
when a batch would take it past segment.bytes, or when the batch's max timestamp is more than segment.ms
less the segment's jitter past that of the segment's first batch (LogSegment.shouldRoll). The jitter is drawn
per segment below min(segment.jitter.ms, segment.ms) from the replica's own seeded generator, so a run repeats
exactly for the same seed while segments made together still roll apart, as Kafka's do. Retention deletes
whole segments, so the log start moves to segment bases as Kafka's does. The batches stay in one flat list
per field (what Fetch bisects); a segment only records where it starts and what Kafka keeps per segment
file, so the per-batch hot path gains a comparison or two.

With a data dir, each replica log has a `store` (fakekafka/storage/segments.py's LogFiles) that every change is handed
to before the method returns: appends (written before the produce is answered), truncation, a moved log start,
the cleaner's rewrite. Without one (the default) it is None and costs one test per appended batch.
"""

from __future__ import annotations

import random
import struct
from bisect import bisect_left, bisect_right
from dataclasses import dataclass, field
from typing import Any

from fakekafka.wire.primitives import varint_at
from fakekafka.wire.records import BatchHeader, decode_batch, set_base_offset, set_log_append_time

__all__ = ["AbortedTxn", "LogSegment", "PartitionLog", "EpochEntry", "StorageError", "control_type"]

_TRANSACTIONAL, _CONTROL = 0x10, 0x20
ABORT, COMMIT = 0, 1


class StorageError(Exception):
    """A write to the data dir failed (a full disk, an I/O error): what it carried was not stored, in memory
    or on disk, and is refused with KAFKA_STORAGE_ERROR as Kafka refuses a write to a failed log dir."""


def control_type(batch: bytes | bytearray) -> int:
    """The type of a control batch's marker (ABORT 0, COMMIT 1), from its one record's key. Markers are written
    uncompressed (Kafka's and ours), so the key is read in place; anything else is decoded in full. A marker
    the log cleaner emptied (a bare header) has no type: -1."""
    if not struct.unpack_from(">i", batch, 57)[0]:
        return -1
    try:
        if not batch[22] & 0x07:
            pos = varint_at(batch, 61)[1] + 1  # record length, attributes
            pos = varint_at(batch, pos)[1]  # timestamp delta
            pos = varint_at(batch, pos)[1]  # offset delta
            length, pos = varint_at(batch, pos)
            if length >= 4:
                return struct.unpack_from(">h", batch, pos + 2)[0]
    except (IndexError, ValueError):
        pass
    key = decode_batch(bytes(batch)).records[0].key or b"\x00\x00\xff\xff"
    return struct.unpack_from(">hh", key)[1]


@dataclass(frozen=True, slots=True)
class AbortedTxn:
    producer_id: int
    first_offset: int
    last_offset: int
    """The offset of the ABORT marker that ended it."""


@dataclass(frozen=True, slots=True)
class EpochEntry:
    epoch: int
    start_offset: int


@dataclass(slots=True)
class LogSegment:
    """What Kafka keeps per segment file that decides rolling, retention and cleaning."""

    base_offset: int
    size: int = 0
    created: int = -1
    """The cluster's clock when its first batch came (Kafka: when the file was made); rolls by segment.ms use
    it only when that batch had no timestamp."""
    rolling_timestamp: int = -1
    """The max timestamp of its first batch (Kafka's rollingBasedTimestamp)."""
    max_timestamp: int = -1
    last_modified: int = 0
    """The cluster's clock at its last write: its age for retention.ms when no batch has a timestamp."""
    index_pending: int = 0
    """Bytes appended since its indexes' last entry (Kafka adds one past index.interval.bytes)."""
    offset_entries: int = 0
    time_entries: int = 0
    time_entry_timestamp: int = -1
    roll_jitter_ms: int = -1
    """How much sooner than segment.ms it rolls (Kafka's rollJitterMs, so that segments made together do not all
    roll together); -1 until drawn: at the append that makes it, else (a log's first segment, one left by
    truncation, the cleaner or recovery) at the first append that finds it active, with that append's configs."""

    def add(self, size: int, max_timestamp: int, now: int, index_interval_bytes: int = 4096) -> None:
        if not self.size:
            self.rolling_timestamp, self.created = max_timestamp, now
        self.size += size
        if max_timestamp > self.max_timestamp:
            self.max_timestamp = max_timestamp
        self.last_modified = now
        if self.index_pending > index_interval_bytes:  # LogSegment.append: an offset and maybe a time entry
            self.offset_entries += 1
            if self.max_timestamp > self.time_entry_timestamp:
                self.time_entries += 1
                self.time_entry_timestamp = self.max_timestamp
            self.index_pending = 0
        self.index_pending += size

    def indexes_full(self, segment_index_bytes: int) -> bool:
        """Kafka's offset index (8-byte entries) or time index (12-byte entries), both sized
        segment.index.bytes, has no room left."""
        return self.offset_entries >= segment_index_bytes // 8 or self.time_entries >= segment_index_bytes // 12

    @property
    def largest_timestamp(self) -> int:
        """Kafka's LogSegment.largestTimestamp: the newest record's timestamp, else the file's mtime."""
        return self.max_timestamp if self.max_timestamp >= 0 else self.last_modified


def _new_segments() -> list[LogSegment]:
    return [LogSegment(0)]


@dataclass
class PartitionLog:
    batches: list[bytes] = field(default_factory=list)
    base_offsets: list[int] = field(default_factory=list)
    last_offsets: list[int] = field(default_factory=list)
    max_timestamps: list[int] = field(default_factory=list)
    appended_at: list[int] = field(default_factory=list)
    batch_epochs: list[int] = field(default_factory=list)
    log_start_offset: int = 0
    log_end_offset: int = 0
    high_watermark: int = 0
    size_bytes: int = 0
    epochs: list[EpochEntry] = field(default_factory=list)
    open_txns: dict[int, int] = field(default_factory=dict)
    """producer id -> first offset of its open transaction in this log."""
    unstable_txns: list[tuple[int, int]] = field(default_factory=list)
    """(first offset, marker offset) of ended transactions whose marker is not yet below the high watermark."""
    aborted: list[AbortedTxn] = field(default_factory=list)
    segments: list[LogSegment] = field(default_factory=_new_segments)
    """Never empty: the last one is the active segment."""
    cleaner_checkpoint: int = -1
    """Where the log cleaner's last round ended (Kafka's cleaner-offset-checkpoint); -1: never cleaned."""
    log_dir: str = ""
    """The broker's log directory holding this replica (one of its `log.dirs`); "" until the cluster places it."""
    store: Any = field(default=None, repr=False, compare=False)
    """The replica's segment files under a data dir (fakekafka/storage/segments.py LogFiles), or None: memory only.
    Every change below is handed to it before it returns, so what a Produce acknowledges is in the file."""
    jitter_rng: random.Random | None = field(default=None, repr=False, compare=False)
    """This replica's source of segment jitter, made at the first draw from the seed its appends carry (the
    cluster's seed, topic, partition and broker): its draws depend on nothing another partition does."""

    def _roll_for(self, size: int, max_timestamp: int, base: int, now: int, segment_bytes: int, segment_ms: int,
                  segment_index_bytes: int, segment_jitter_ms: int, jitter_seed: int) -> LogSegment:
        """The segment a batch goes to: the active one, or a new one starting at the batch if the active one
        is not empty and would pass segment.bytes with it, has waited segment.ms less its jitter (Kafka's
        shouldRoll: by the batch's max timestamp against the first batch's, or by the clock when that had
        none), or has a full index (segment.index.bytes)."""
        seg = self.segments[-1]
        if seg.roll_jitter_ms < 0:
            seg.roll_jitter_ms = self._draw_jitter(segment_jitter_ms, jitter_seed)
        if seg.size:
            waited = max_timestamp - seg.rolling_timestamp if seg.rolling_timestamp >= 0 else now - seg.created
            if seg.size > segment_bytes - size or waited > segment_ms - seg.roll_jitter_ms \
                    or seg.indexes_full(segment_index_bytes):
                # added by _stored, once the batch is in its file
                seg = LogSegment(base, roll_jitter_ms=self._draw_jitter(segment_jitter_ms, jitter_seed))
        return seg

    def _draw_jitter(self, segment_jitter_ms: int, jitter_seed: int) -> int:
        """Kafka's LogConfig.randomSegmentJitter: 0 (and no draw) when segment.jitter.ms is 0, else a
        non-negative 31-bit random number modulo the bound the caller gives: min(segment.jitter.ms, segment.ms),
        segment.ms itself, not a compacted topic's shorter roll time (TopicConfigs.segment_configs)."""
        if segment_jitter_ms <= 0:
            return 0
        if self.jitter_rng is None:
            self.jitter_rng = random.Random(jitter_seed)
        return self.jitter_rng.getrandbits(31) % segment_jitter_ms

    def _stored(self, stored: bytes | bytearray, seg: LogSegment, seg_base: int, last: int) -> None:
        """The batch into the store before anything in memory changes: a StorageError leaves the log as it was
        (the store took its bytes back off the file), so nothing after it ever follows a torn batch."""
        if self.store is not None:
            self.store.append(stored, seg_base, last + 1)
        if seg is not self.segments[-1]:
            self.segments.append(seg)
        seg.base_offset = seg_base

    def segment_batches(self, i: int) -> range:
        """The indexes in the batch lists of segment `i`'s batches."""
        start = bisect_left(self.base_offsets, self.segments[i].base_offset)
        end = bisect_left(self.base_offsets, self.segments[i + 1].base_offset) if i + 1 < len(self.segments) \
            else len(self.batches)
        return range(start, end)

    def _track_txn(self, batch: bytes | bytearray, base: int) -> None:
        attributes = struct.unpack_from(">h", batch, 21)[0]
        if not attributes & _TRANSACTIONAL:
            return
        producer_id = struct.unpack_from(">q", batch, 43)[0]
        if not attributes & _CONTROL:
            self.open_txns.setdefault(producer_id, base)
            return
        first = self.open_txns.pop(producer_id, None)
        if first is None:  # a marker with no data of its transaction here: nothing to index, as Kafka's
            return
        self.unstable_txns.append((first, base))
        if control_type(batch) == ABORT:
            self.aborted.append(AbortedTxn(producer_id, first, base))

    def rebuild_txns(self) -> None:
        self.open_txns, self.unstable_txns, self.aborted = {}, [], []
        for batch, base in zip(self.batches, self.base_offsets, strict=True):
            self._track_txn(batch, base)
        self.aborted = [a for a in self.aborted if a.last_offset >= self.log_start_offset]

    @property
    def last_stable_offset(self) -> int:
        """Below every open transaction and every ended one whose marker is not yet replicated (Kafka's
        first unstable offset), never above the high watermark nor below the log start."""
        hw = self.high_watermark
        if self.unstable_txns:
            self.unstable_txns = [t for t in self.unstable_txns if t[1] >= hw]
        lso = min((first for first, _ in self.unstable_txns), default=hw)
        if self.open_txns:
            lso = min(lso, min(self.open_txns.values()))
        return max(min(lso, hw), self.log_start_offset)

    def aborted_between(self, start: int, end: int) -> list[AbortedTxn]:
        """Aborted transactions that end at or after `start` and begin before `end` (sorted by their ends)."""
        i = bisect_left(self.aborted, start, key=lambda a: a.last_offset)
        return [a for a in self.aborted[i:] if a.first_offset < end]

    def append(self, batch: bytes, header: BatchHeader, leader_epoch: int,
               log_append_time: int | None = None, now: int = 0, *,
               segment_bytes: int = 1 << 30, segment_ms: int = 604_800_000,
               segment_index_bytes: int = 10_485_760, index_interval_bytes: int = 4096,
               segment_jitter_ms: int = 0, jitter_seed: int = 0) -> int:
        """Stores one batch at the log end, rolling the active segment first if it is due; returns its base
        offset."""
        base = self.log_end_offset
        if log_append_time is not None:
            batch = set_log_append_time(batch, log_append_time)
        stored = set_base_offset(batch, base, leader_epoch)
        last = base + header.last_offset_delta
        max_timestamp = log_append_time if log_append_time is not None else header.max_timestamp
        seg = self._roll_for(len(stored), max_timestamp, base, now, segment_bytes, segment_ms, segment_index_bytes,
                             segment_jitter_ms, jitter_seed)
        self._stored(stored, seg, seg.base_offset, last)
        if not self.epochs or self.epochs[-1].epoch != leader_epoch:
            self.epochs.append(EpochEntry(leader_epoch, base))
        if header.is_transactional:
            self._track_txn(stored, base)
        seg.add(len(stored), max_timestamp, now, index_interval_bytes)
        self.batches.append(stored)
        self.base_offsets.append(base)
        self.last_offsets.append(last)
        self.max_timestamps.append(max_timestamp)
        self.appended_at.append(now)
        self.batch_epochs.append(leader_epoch)
        self.size_bytes += len(stored)
        self.log_end_offset = last + 1
        return base

    def append_replica(self, stored: bytes | bytearray, base: int, last: int, max_timestamp: int, epoch: int,
                       now: int = 0, *, segment_bytes: int = 1 << 30, segment_ms: int = 604_800_000,
                       segment_index_bytes: int = 10_485_760, index_interval_bytes: int = 4096,
                       segment_jitter_ms: int = 0, jitter_seed: int = 0) -> None:
        """A follower's copy of a batch the leader stored (same bytes, same offsets); it rolls its own
        segments by the same configs, as a Kafka follower does."""
        seg = self._roll_for(len(stored), max_timestamp, base, now, segment_bytes, segment_ms, segment_index_bytes,
                             segment_jitter_ms, jitter_seed)
        # an empty follower log starts where the leader's batches do
        self._stored(stored, seg, base if seg.size == 0 and seg.base_offset < base else seg.base_offset, last)
        if not self.epochs or self.epochs[-1].epoch != epoch:
            self.epochs.append(EpochEntry(epoch, base))
        self._track_txn(stored, base)
        seg.add(len(stored), max_timestamp, now, index_interval_bytes)
        self.batches.append(stored)
        self.base_offsets.append(base)
        self.last_offsets.append(last)
        self.max_timestamps.append(max_timestamp)
        self.appended_at.append(now)
        self.batch_epochs.append(epoch)
        self.size_bytes += len(stored)
        self.log_end_offset = last + 1

    def retention_start(self, now: int, retention_ms: int, retention_bytes: int) -> int:
        """Where the log would start after Kafka's size then time retention (UnifiedLog.deleteOldSegments),
        or the current start: whole segments from the oldest, each wholly below the high watermark, while
        what stays is still at least `retention_bytes`, then while the segment's newest timestamp (its last
        write where it has none) is more than `retention_ms` old. The active segment can go too (Kafka rolls
        a new empty one first); an empty active segment never does. Negative values: no limit."""
        segs = self.segments
        n = 0
        size = sum(s.size for s in segs)  # Kafka's log size: its segment files' (DeleteRecords shrinks none)
        if retention_bytes >= 0 and size >= retention_bytes:
            excess = size - retention_bytes
            while n < len(segs) and self._deletable(n) and excess - segs[n].size >= 0:
                excess -= segs[n].size
                n += 1
        if retention_ms >= 0:
            while n < len(segs) and self._deletable(n) and now - segs[n].largest_timestamp > retention_ms:
                n += 1
        if n == 0:
            return self.log_start_offset
        return max(self.log_start_offset, segs[n].base_offset if n < len(segs) else self.log_end_offset)

    def _deletable(self, i: int) -> bool:
        """Whether retention may take segment `i` (its predicate aside): wholly below the high watermark, and
        not the last one while that is empty."""
        last = i + 1 == len(self.segments)
        upper = self.log_end_offset if last else self.segments[i + 1].base_offset
        return self.high_watermark >= upper and not (last and self.segments[i].size == 0)

    def resize_segments(self, count: int | None = None) -> None:
        """Segment sizes and timestamps (of the first `count` segments, or all) computed again from the batches,
        after batches were dropped or rewritten."""
        for i, seg in enumerate(self.segments[:count]):
            rng = self.segment_batches(i)
            seg.size = sum(len(self.batches[j]) for j in rng)
            seg.max_timestamp = max((self.max_timestamps[j] for j in rng), default=-1)
            if not seg.size:
                seg.rolling_timestamp = -1

    def truncate_to(self, offset: int) -> None:
        """Drops every batch from the one holding `offset` on, as a follower does when its log diverged
        from a new leader's (leader epochs mark where); segments starting after what stays go too."""
        if offset >= self.log_end_offset:
            return
        i = bisect_left(self.last_offsets, offset)
        if self.store is not None:
            self.store.truncate(self, i)
        for b in self.batches[i:]:
            self.size_bytes -= len(b)
        del self.batches[i:], self.base_offsets[i:], self.last_offsets[i:], self.max_timestamps[i:]
        del self.appended_at[i:], self.batch_epochs[i:]
        self.log_end_offset = self.last_offsets[-1] + 1 if self.last_offsets else self.log_start_offset
        self.high_watermark = min(self.high_watermark, self.log_end_offset)
        while self.epochs and self.epochs[-1].start_offset >= self.log_end_offset:
            self.epochs.pop()
        while len(self.segments) > 1 and self.segments[-1].base_offset >= self.log_end_offset:
            self.segments.pop()
        if not self.batches:
            self.segments = [LogSegment(self.log_end_offset)]
        self.resize_segments()
        self.rebuild_txns()
        if self.store is not None:
            self.store.segments_changed(self)

    def delete_before(self, offset: int) -> None:
        """Moves the log start up to `offset` (DeleteRecords on a leader; retention; a follower taking its
        leader's start). Whole batches below it go, and the segments entirely below it; the segment holding
        the start keeps Kafka's file size (the deleted batches' bytes too); the batch holding it stays, its
        earlier records no longer served (Fetch refuses offsets below the start). Past the log end the log is
        emptied and starts there, as a follower that fell behind the leader's start does. The leader epoch
        history loses its entries before the start, the last of them moved to start there (Kafka's
        truncateFromStart)."""
        if offset <= self.log_start_offset:
            return
        self.log_start_offset = offset
        i = bisect_left(self.last_offsets, offset)
        for b in self.batches[:i]:
            self.size_bytes -= len(b)
        del self.batches[:i], self.base_offsets[:i], self.last_offsets[:i], self.max_timestamps[:i]
        del self.appended_at[:i], self.batch_epochs[:i]
        if offset > self.log_end_offset:
            self.log_end_offset = offset
        self.high_watermark = max(self.high_watermark, min(offset, self.log_end_offset))
        segs = self.segments
        k = 0
        while k + 1 < len(segs) and segs[k + 1].base_offset <= offset:
            k += 1
        if k:
            del segs[:k]
        # the first segment left keeps its size and timestamps: Kafka's file still holds the records below the
        # start (DeleteRecords deletes only whole segments), which count in its size (DescribeLogDirs,
        # retention.bytes) and its rolling until the segment goes
        if not self.batches:  # everything went: Kafka rolls a new active segment at the end first
            self.segments = [LogSegment(self.log_end_offset)]
        j = bisect_right([e.start_offset for e in self.epochs], offset)
        if j > 0:
            self.epochs[:j] = [EpochEntry(self.epochs[j - 1].epoch, offset)]
        if self.aborted and self.aborted[0].last_offset < offset:
            self.aborted = [a for a in self.aborted if a.last_offset >= offset]
        if self.store is not None:
            self.store.start_moved(self)

    def divergence_from(self, leader: PartitionLog) -> int:
        """The offset from which this (follower) log no longer matches `leader`: the first batch, counting
        from the end, that the leader does not hold with the same offsets and leader epoch. Truncating
        there is what Kafka's epoch-based truncation arrives at."""
        i = len(self.batches)
        while i > 0:
            base = self.base_offsets[i - 1]
            j = bisect_left(leader.base_offsets, base)
            if j < len(leader.batches) and leader.base_offsets[j] == base and \
                    leader.last_offsets[j] == self.last_offsets[i - 1] and \
                    leader.batch_epochs[j] == self.batch_epochs[i - 1]:
                break
            i -= 1
        return self.base_offsets[i] if i < len(self.batches) else self.log_end_offset

    def last_epoch(self) -> int:
        return self.epochs[-1].epoch if self.epochs else -1

    def read(self, offset: int, max_bytes: int, *, min_one: bool, upper: int | None = None,
             one_segment: bool = False) -> list[bytes]:
        """Whole batches from the one holding `offset`, within `max_bytes` (but at least one if `min_one`).
        `one_segment` (a Fetch's read): from one segment only, as Kafka's LocalLog.read reads the segment
        holding the first batch at or after `offset` and stops at its end, so a fetch across a segment boundary
        (a compacted log's cleaned segments and the active one, say) gets the rest at the client's next Fetch."""
        limit = self.high_watermark if upper is None else upper
        i = bisect_left(self.last_offsets, offset)
        segs = self.segments
        if one_segment and len(segs) > 1 and i < len(self.batches):
            j = bisect_right(segs, self.base_offsets[i], key=lambda seg: seg.base_offset)
            if j < len(segs):
                limit = min(limit, segs[j].base_offset)
        out: list[bytes] = []
        total = 0
        n = len(self.batches)
        while i < n and self.base_offsets[i] < limit:
            b = self.batches[i]
            if total + len(b) > max_bytes and not (min_one and not out):
                break
            out.append(b)
            total += len(b)
            i += 1
        return out

    def offset_for_timestamp(self, timestamp: int) -> tuple[int, int] | None:
        """(offset, timestamp) of the first record whose timestamp is >= `timestamp`."""
        for i in range(bisect_left(self.last_offsets, self.log_start_offset), len(self.batches)):
            if self.max_timestamps[i] < timestamp or self.base_offsets[i] >= self.high_watermark:
                continue
            for rec in decode_batch(self.batches[i]).records:
                if rec.timestamp >= timestamp and rec.offset >= self.log_start_offset:
                    return rec.offset, rec.timestamp
        return None

    def max_timestamp_offset(self) -> tuple[int, int] | None:
        """(offset, timestamp) of the record with the largest timestamp (the first one on ties)."""
        best: tuple[int, int] | None = None
        for i, ts in enumerate(self.max_timestamps):
            if self.base_offsets[i] >= self.high_watermark:
                break
            if best is None or ts > best[1]:
                for rec in decode_batch(self.batches[i]).records:
                    if rec.timestamp == ts:
                        best = (rec.offset, ts)
                        break
        return best

    def end_offset_for_epoch(self, epoch: int, leader_epoch: int = -1) -> tuple[int, int]:
        """(epoch, end offset) as Kafka's LeaderEpochFileCache.endOffsetFor answers OffsetForLeaderEpoch and
        Fetch's divergence check: the latest epoch ends at the log end; an older one where the next one starts
        (reported as the largest known epoch <= it, or as itself if it predates them all); -1 or an epoch
        newer than any known gets (-1, -1). `leader_epoch` is the leader's current epoch, which Kafka's cache
        holds from the election on, before anything is appended in it."""
        entries = [(e.epoch, e.start_offset) for e in self.epochs]
        if leader_epoch >= 0 and (not entries or entries[-1][0] < leader_epoch):
            entries.append((leader_epoch, self.log_end_offset))
        if epoch < 0 or not entries:
            return -1, -1
        if entries[-1][0] == epoch:
            return epoch, self.log_end_offset
        i = bisect_right([e for e, _ in entries], epoch)
        if i == len(entries):
            return -1, -1
        return (entries[i - 1][0] if i else epoch), entries[i][1]

    def batch_end(self, base_offset: int) -> int:
        """The offset after the batch that starts at `base_offset` (a retried batch is found again)."""
        i = bisect_left(self.base_offsets, base_offset)
        return self.last_offsets[i] + 1 if i < len(self.base_offsets) else base_offset + 1

    def batch_containing(self, offset: int) -> int:
        return bisect_left(self.last_offsets, offset)
