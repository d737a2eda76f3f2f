"""A log dir's offset checkpoint files in Kafka's format (log-start-offset-checkpoint, cleaner-offset-checkpoint,
recovery-point-offset-checkpoint): what the data dir remembers per replica besides its segments."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable
from contextlib import AbstractContextManager
from pathlib import Path

from fakekafka.model.log import StorageError
from fakekafka.storage.recovery import CLEANER_CHECKPOINT, LOG_START_CHECKPOINT, RECOVERY_POINT_CHECKPOINT
from fakekafka.storage.segments import LogFiles


def write_atomically(path: Path, text: str) -> None:
    """The new file beside the old, renamed over it; a write cut short (a full disk) leaves the old one and
    takes its half-written copy away (its blocks are what the next write needs)."""
    tmp = path.with_name(path.name + ".tmp")
    try:
        with open(tmp, "w", encoding="utf-8") as f:
            f.write(text)
        os.replace(tmp, path)
    except OSError:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


class OffsetCheckpoints:
    """The checkpoint files of every log dir, read on first use and written as their offsets move (a part of
    `DataDir`, which gives it `writing`, its way of reporting a failed write)."""

    _checkpoints: dict[tuple[Path, str], dict[tuple[str, int], int]]
    _points_due: set[Path]
    writing: Callable[[str | os.PathLike[str]], AbstractContextManager[None]]

    def _checkpoint(self, log_dir: Path, name: str) -> dict[tuple[str, int], int]:
        """One of a log dir's offset checkpoint files (Kafka's format: version 0, a count, then "topic partition
        offset" lines), read on first use."""
        entries = self._checkpoints.get((log_dir, name))
        if entries is None:
            entries = self._checkpoints[(log_dir, name)] = {}
            with contextlib.suppress(OSError, ValueError, IndexError):
                lines = (log_dir / name).read_text(encoding="utf-8").splitlines()
                for line in lines[2:2 + int(lines[1])]:
                    topic, part, offset = line.rsplit(" ", 2)
                    entries[(topic, int(part))] = int(offset)
        return entries

    def _write_checkpoint(self, log_dir: Path, name: str) -> None:
        entries = self._checkpoint(log_dir, name)
        with self.writing(log_dir / name):
            write_atomically(log_dir / name, "0\n" + f"{len(entries)}\n" +
                              "".join(f"{t} {p} {o}\n" for (t, p), o in entries.items()))

    def log_start_moved(self, files: LogFiles, start: int) -> None:
        """A replica's new log start, checkpointed at once (Kafka writes its checkpoint every
        log.flush.start.offset.checkpoint.interval.ms; a DeleteRecords answered must not be undone by a crash).
        Only starts above 0 are listed, as Kafka lists those above the first segment."""
        if start == files.start_written:
            return
        files.start_written = start
        entries = self._checkpoint(files.log_dir, LOG_START_CHECKPOINT)
        if start > 0:
            entries[(files.topic, files.partition)] = start
        else:
            entries.pop((files.topic, files.partition), None)
        self._write_checkpoint(files.log_dir, LOG_START_CHECKPOINT)

    def cleaned(self, files: LogFiles, offset: int) -> None:
        """Where the log cleaner's round on this replica ended (Kafka's cleaner-offset-checkpoint)."""
        self._checkpoint(files.log_dir, CLEANER_CHECKPOINT)[(files.topic, files.partition)] = offset
        self._write_checkpoint(files.log_dir, CLEANER_CHECKPOINT)

    def recovery_point_moved(self, files: LogFiles, *, now: bool) -> None:
        """A replica's recovery point moved: into Kafka's recovery-point-offset-checkpoint at once (`now`: a roll
        or a truncation) or at the next tick (an fsync of flush.messages / flush.ms). The checkpoint is only ever
        behind what was fsynced, never ahead: a write that fails leaves it behind (more is recovered after a
        crash), is reported once and tried again at the next tick."""
        self._checkpoint(files.log_dir, RECOVERY_POINT_CHECKPOINT)[(files.topic, files.partition)] = \
            files.recovery_point
        self._points_due.add(files.log_dir)
        if now:
            self._write_points()

    def _write_points(self) -> None:
        for log_dir in list(self._points_due):
            with contextlib.suppress(StorageError):
                self._write_checkpoint(log_dir, RECOVERY_POINT_CHECKPOINT)
                self._points_due.discard(log_dir)

    def _forget_start(self, files: LogFiles) -> None:
        """A replica left this log dir: its checkpointed offsets go too (from the file at its next write, if
        this one fails: reported, and the replica is gone either way)."""
        for name in (LOG_START_CHECKPOINT, CLEANER_CHECKPOINT, RECOVERY_POINT_CHECKPOINT):
            if self._checkpoint(files.log_dir, name).pop((files.topic, files.partition), None) is not None:
                with contextlib.suppress(StorageError):
                    self._write_checkpoint(files.log_dir, name)
