"""One replica's segment files, and reading a segment back as Kafka's recovery checks it.

A replica directory `topic-N/` holds `partition.metadata` (the topic id) and one `<base offset, 20 digits>.log`
file per segment with the record batches exactly as stored (the bytes Fetch serves), so Kafka's `kafka-dump-log`
reads them. The data dir (datadir.py) owns the files of every replica; `LogFiles` reports to it through
`FilesOwner`.
"""

from __future__ import annotations

import base64
import contextlib
import logging
import os
import shutil
import struct
import time
import uuid
from bisect import bisect_left
from collections.abc import Iterator
from pathlib import Path
from typing import Protocol

import crc32c

from fakekafka.model.log import PartitionLog, StorageError

__all__ = ["SET_ASIDE_SUFFIXES", "FilesOwner", "LogFiles", "kafka_uuid", "read_segment", "segment_name", "set_aside",
           "topic_id_in"]

log = logging.getLogger("fakekafka.storage")

_LONG_MAX = 9223372036854775807
_HEADER = 17  # base offset, length, partition leader epoch, magic: what must be there to size a batch
_V2_HEADER = 61
_CRC_START = 21
_MIN_SIZE = 14  # Kafka's LegacyRecord.RECORD_OVERHEAD_V0: a smaller length is corrupt


def segment_name(base_offset: int) -> str:
    return f"{base_offset:020d}.log"


def kafka_uuid(u: uuid.UUID) -> str:
    """Kafka's Uuid.toString: URL-safe base64 without padding."""
    return base64.urlsafe_b64encode(u.bytes).decode().rstrip("=")


STRAY_SUFFIX = "-stray"
SET_ASIDE_SUFFIXES = (STRAY_SUFFIX, "-delete", "-future")
"""Kafka's suffixes of replica directories that are not a live log (LocalLog's): left as they are at a start."""


def set_aside(path: Path, why: str) -> Path:
    """Renames a replica directory the metadata does not name (or names under another topic id) as Kafka renames
    a stray log in KRaft mode (LogManager, LocalLog.logStrayDirName): `topic-N.<random id>-stray`, its name capped
    at 255 characters, with a warning saying where it went. Nothing in it is deleted: a stale metadata file
    must not cost the data it does not name."""
    topic, _, index = path.name.rpartition("-")
    suffix = f"-{index}.{uuid.uuid4().hex}{STRAY_SUFFIX}" if topic and index.isdigit() else \
        f".{uuid.uuid4().hex}{STRAY_SUFFIX}"
    head = topic if topic and index.isdigit() else path.name
    target = path.with_name(head[:max(0, 255 - len(suffix))] + suffix)
    os.replace(path, target)
    log.warning("%s: %s; marked stray and renamed to %s (as Kafka does; nothing in it deleted: remove it when "
                "it is not needed)", path, why, target)
    return target


def topic_id_in(path: Path) -> str | None:
    """The topic id a replica directory's partition.metadata names; None if it names none."""
    with contextlib.suppress(OSError):
        for line in (path / "partition.metadata").read_text(encoding="utf-8").splitlines():
            if line.startswith("topic_id:"):
                return line.split(":", 1)[1].strip()
    return None


def read_segment(data: bytes, base_offset: int, next_offset: int, *, below: int = _LONG_MAX,
                 bad_crcs: list[str] | None = None) -> tuple[list[bytes], int, str | None]:
    """The valid batches at the start of a segment file's bytes, how many bytes they take, and why reading
    stopped early (None: the whole file is valid). A batch is valid as Kafka's recovery checks it: a length
    of at least the smallest record, all its bytes there (else the tail was torn by a crash), magic 2, its CRC,
    and offsets at or above the segment's base and after the previous batch's, and below `below` (the next
    segment's base). Given `bad_crcs`, a batch whose only fault is its CRC is kept and read past, and said
    there (a flushed segment: the bytes stay as they are, a client checks the CRC as it does on Kafka)."""
    out: list[bytes] = []
    pos, end = 0, len(data)
    while pos < end:
        if end - pos < _HEADER:
            return out, pos, f"a torn batch header ({end - pos} bytes) at byte {pos}"
        offset, length = struct.unpack_from(">qi", data, pos)
        if length < _MIN_SIZE:
            return out, pos, f"a batch length of {length} at byte {pos}"
        if pos + 12 + length > end:
            return out, pos, f"a torn batch at byte {pos} ({end - pos} of {12 + length} bytes)"
        if data[pos + 16] != 2 or length + 12 < _V2_HEADER:
            return out, pos, f"a batch of magic {data[pos + 16]} at byte {pos}"
        batch = data[pos:pos + 12 + length]
        last = offset + struct.unpack_from(">i", batch, 23)[0]
        if crc32c.crc32c(memoryview(batch)[_CRC_START:]) != struct.unpack_from(">I", batch, 17)[0]:
            crc = f"a CRC mismatch in the batch at byte {pos} (offset {offset})"
            if bad_crcs is None or offset < max(base_offset, next_offset) or not offset <= last < below:
                return out, pos, crc
            bad_crcs.append(crc)
        if offset < max(base_offset, next_offset) or last < offset or last >= below:
            return out, pos, f"offsets {offset}-{last} out of order at byte {pos}"
        next_offset = last + 1
        out.append(batch)
        pos += len(batch)
    return out, pos, None


class FilesOwner(Protocol):
    """What a replica's files tell the data dir that holds them (DataDir is one)."""

    failing: str | None

    def write_failed(self, what: str, e: OSError) -> StorageError: ...
    def recovered(self) -> None: ...
    def opened(self, files: LogFiles) -> None: ...
    def closed(self, files: LogFiles) -> None: ...
    def log_start_moved(self, files: LogFiles, start: int) -> None: ...
    def cleaned(self, files: LogFiles, offset: int) -> None: ...
    def recovery_point_moved(self, files: LogFiles, *, now: bool) -> None: ...


class LogFiles:
    """One replica's segment files. The active segment's file stays open (unbuffered: each batch is one
    write() straight into the page cache)."""

    __slots__ = ("path", "log_dir", "owner", "node_id", "topic", "partition", "_fd", "_active", "flush_messages",
                 "flush_ms", "recovery_point", "_last_flush", "start_written", "failed")

    def __init__(self, owner: FilesOwner, log_dir: Path, node_id: int, topic: str, partition: int) -> None:
        self.log_dir, self.owner, self.node_id, self.topic, self.partition = log_dir, owner, node_id, topic, partition
        self.path = log_dir / f"{topic}-{partition}"
        self._fd = -1
        self._active = -1
        self.flush_messages = _LONG_MAX
        self.flush_ms = _LONG_MAX
        self.recovery_point = 0
        """Kafka's recovery point: every offset below it is in a file that was fsynced (a rolled segment, or as
        flush.messages / flush.ms asked), so a restart after a crash recovers only the segments from the one
        holding it on; checkpointed in the log dir's recovery-point-offset-checkpoint."""
        self._last_flush = time.monotonic()
        self.start_written = 0
        self.failed = False

    # --- what PartitionLog hands over ----------------------------------------------------------------
    def append(self, data: bytes | bytearray, segment_base: int, next_offset: int) -> None:
        """One stored batch at the end of the segment starting at `segment_base` (a new file when the log
        rolled: the old one is fsynced first and the recovery point moves to the new one's base, checkpointed
        at once, as Kafka flushes a segment when it rolls); then an fsync if flush.messages or flush.ms asks for
        one. A write that fails (a full disk) is
        taken back off the file, so the segment ends at its last whole batch, and raised as a StorageError; if
        even that fails the replica's files are failed: every later append is refused until a restart, whose
        recovery cuts the torn tail (Kafka takes the whole log dir offline at any write error)."""
        if self.failed:
            raise StorageError(f"{self.path} refuses writes since an earlier one failed and its torn batch could "
                               "not be taken back off the file")
        written = 0
        try:
            if segment_base != self._active:
                if self._active >= 0:  # a roll; or an empty active segment a follower moved up to the leader's batch
                    self._roll(segment_base)
                self._close_fd()
                self._active = segment_base
            if self._fd < 0:
                self._open_fd()
            view = memoryview(data)
            while view:
                n = os.write(self._fd, view)
                written += n
                view = view[n:]
            if self.flush_messages != _LONG_MAX or self.flush_ms != _LONG_MAX:
                now = time.monotonic()
                if next_offset - self.recovery_point >= self.flush_messages or \
                        (now - self._last_flush) * 1000 >= self.flush_ms:
                    os.fsync(self._fd)
                    self.recovery_point, self._last_flush = next_offset, now
                    self.owner.recovery_point_moved(self, now=False)
        except OSError as e:
            self._take_back(written, e)
        if self.owner.failing is not None:
            self.owner.recovered()

    def _roll(self, new_base: int) -> None:
        """The active segment is done: fsynced (an empty one, left by a follower moved up, deleted instead),
        and the recovery point moved to the new segment's base and checkpointed (Kafka's flush at roll)."""
        old = self.path / segment_name(self._active)
        try:
            if old.stat().st_size == 0:
                old.unlink()
                return
        except FileNotFoundError:
            return
        if self._fd >= 0:
            os.fsync(self._fd)
        else:  # closed past MAX_OPEN_FILES
            fd = os.open(old, os.O_RDONLY)
            try:
                os.fsync(fd)
            finally:
                os.close(fd)
        if new_base > self.recovery_point:
            self.recovery_point = new_base
            self.owner.recovery_point_moved(self, now=True)

    def _take_back(self, written: int, e: OSError) -> None:
        """After a failed write: the file cut back to where it was before it; the error reported and raised."""
        if written and self._fd >= 0:
            try:
                os.ftruncate(self._fd, os.fstat(self._fd).st_size - written)
            except OSError as again:
                self.failed = True
                log.error("%s: a write failed (%s) and the torn batch could not be taken back off the file (%s): "
                          "this replica refuses every write until fakekafka is restarted", self.path,
                          e.strerror or e, again.strerror or again)
        raise self.owner.write_failed(str(self.path / segment_name(self._active)), e)

    @contextlib.contextmanager
    def _changing(self) -> Iterator[None]:
        """Around a change of the files other than an append: if it fails they may no longer say what memory
        does (a segment half cut, half cleaned), so the replica is failed: nothing is written to it again until a
        restart, which recovers what the files hold (as Kafka takes a log dir offline at any write error)."""
        if self.failed:
            raise StorageError(f"{self.path} refuses writes since an earlier one failed")
        try:
            yield
        except OSError as e:
            self.failed = True
            raise self.owner.write_failed(str(self.path), e) from None

    def truncate(self, log: PartitionLog, first_dropped: int) -> None:
        """Before the log drops its batches from index `first_dropped` on: the segment holding that batch
        loses their bytes at its end (later segments go in segments_changed)."""
        if first_dropped >= len(log.batches):
            return
        with self._changing():
            self._truncate(log, first_dropped)

    def _truncate(self, log: PartitionLog, first_dropped: int) -> None:
        """The segment's file keeps the bytes of its batches before `first_dropped` (counted from memory: a
        flushed segment whose recovery found bytes it could not frame holds more than memory, and those go too)."""
        base = log.base_offsets[first_dropped]
        seg_base = max((s.base_offset for s in log.segments if s.base_offset <= base), default=base)
        start = bisect_left(log.base_offsets, seg_base)
        kept = sum(len(log.batches[j]) for j in range(start, first_dropped))
        path = self.path / segment_name(seg_base)
        with contextlib.suppress(FileNotFoundError):
            os.truncate(path, kept)

    def segments_changed(self, log: PartitionLog) -> None:
        """Files of segments the log no longer has go; the active segment's file exists (empty if new: an
        empty log still says where it ends)."""
        with self._changing():
            self._segments_changed(log)

    def _segments_changed(self, log: PartitionLog) -> None:
        bases = {s.base_offset for s in log.segments}
        for name in os.listdir(self.path):
            if name.endswith(".log") and name[:-4].isdigit() and int(name[:-4]) not in bases:
                if int(name[:-4]) == self._active:
                    self._close_fd()
                    self._active = -1
                os.unlink(self.path / name)
        active = log.segments[-1].base_offset
        if active != self._active:
            self._close_fd()
            self._active = active
            os.close(os.open(self.path / segment_name(active), os.O_WRONLY | os.O_CREAT, 0o644))
        if self.recovery_point > log.log_end_offset:  # truncated below it, as Kafka's truncateTo moves it
            self.recovery_point = log.log_end_offset
            self.owner.recovery_point_moved(self, now=True)

    def start_moved(self, log: PartitionLog) -> None:
        """The log start moved (DeleteRecords, retention, a follower following): whole segments below it go
        and the start is checkpointed for the restart (Kafka's log-start-offset-checkpoint)."""
        self.segments_changed(log)
        self.owner.log_start_moved(self, log.log_start_offset)

    def rewrite(self, log: PartitionLog, count: int) -> None:
        """The log cleaner replaced the first `count` segments: each file is written anew beside the old one
        and renamed over it (Kafka's .cleaned then .swap), then files of segments merged away go, and where the
        round ended is checkpointed."""
        with self._changing():
            self._rewrite(log, count)
        self.owner.cleaned(self, log.cleaner_checkpoint)

    def _rewrite(self, log: PartitionLog, count: int) -> None:
        for i in range(count):
            seg = log.segments[i]
            tmp = self.path / (segment_name(seg.base_offset) + ".cleaned")
            try:
                with open(tmp, "wb") as f:
                    for j in log.segment_batches(i):
                        f.write(log.batches[j])
                    f.flush()
                    os.fsync(f.fileno())  # a cleaned segment is below the recovery point: flushed before the swap
            except OSError:
                with contextlib.suppress(OSError):
                    os.unlink(tmp)
                raise
            if seg.base_offset == self._active:
                self._close_fd()  # opened again at the next append, on the new file
            os.replace(tmp, self.path / segment_name(seg.base_offset))
        self._segments_changed(log)

    # --- files ---------------------------------------------------------------------------------------
    def _open_fd(self) -> None:
        """The active segment's file, opened for appending; the data dir closes the longest-open ones past
        MAX_OPEN_FILES (each is opened again at its next append)."""
        self._fd = os.open(self.path / segment_name(self._active), os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        self.owner.opened(self)

    def _close_fd(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1
            self.owner.closed(self)

    def close(self, *, flush: bool = False) -> None:
        if flush and self._fd >= 0:
            os.fsync(self._fd)
        self._close_fd()

    def remove(self) -> None:
        self._close_fd()
        shutil.rmtree(self.path, ignore_errors=True)
