"""An optional data dir: the cluster's logs and metadata on disk, so they survive a restart of the process.

Memory stays where everything is served from; the files are written beside it. Each log dir of each broker
(`log.dirs`: names in the model, the same on every broker, Kafka's default "/tmp/kafka-logs") is
`DIR/broker-N/<the name, slashes as underscores>/`, laid out as Kafka lays out a log dir: `meta.properties`,
`log-start-offset-checkpoint`, `cleaner-offset-checkpoint` and `recovery-point-offset-checkpoint` (written when
they change), and a directory per
partition replica `topic-N/` with `partition.metadata` (the topic id) and one `<base offset, 20 digits>.log`
file per segment holding the record batches exactly as stored (the bytes Fetch serves), so Kafka's
`kafka-dump-log` reads them. What Kafka keeps in its metadata log (topics with their ids, partitions, replica
assignments and log dirs, leaders, leader epochs and ISRs, topic, dynamic broker and group configs, ACLs, SCRAM
credentials, the producer id block) is a JSON snapshot, `DIR/fakekafka-metadata.json` (replaced atomically: write,
then rename), and a journal of the changes since, `DIR/fakekafka-metadata.log` (storage/journal.py): a topic made
appends its own record, not the whole metadata again, and the journal is folded into a new snapshot when it has
grown past the snapshot's size.

Durability as Kafka's: every batch is written (os.write, into the page cache) before its Produce is answered, so a
killed process loses nothing acknowledged; fsync only as `flush.messages` / `flush.ms` say (Kafka's defaults never
fsync per write). A write that fails (a full disk) is refused with KAFKA_STORAGE_ERROR and taken back off its file,
so a segment always ends at a whole batch; the failure is logged once per episode. A segment is fsynced when the log
rolls past it, and the log's recovery point (Kafka's `recovery-point-offset-checkpoint`) moves to the new segment; a
clean stop flushes everything and writes Kafka's `.kafka_cleanshutdown` into each log dir. On start every segment is
read back and checked batch by batch as Kafka's LogSegment.recover does (size, magic, CRC, offsets in order), but
only the segments from the one holding the recovery point on are recovered, as Kafka's LogLoader does: there the
first bad or torn batch and everything after it in the log is cut off; a corrupt segment below it is reported and
kept as it is. Producer state, open transactions and leader epochs are rebuilt from the batches, as Kafka's
LogLoader does; the group coordinators load committed offsets and groups from `__consumer_offsets`, and the
transaction coordinator its transactional ids from `__transaction_state`, as Kafka's do (a commit decided but not
yet marked everywhere is finished at start; an open transaction is aborted at its timeout), and the share groups
their share-partitions from `__share_group_state` (the persisted start offset and delivery counts; records acquired
at the stop come back available). Not kept: share groups' members (they rejoin).
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import json
import logging
import os
import shutil
import time
import uuid
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from fakekafka.model.config import DEFAULT_LOG_DIR
from fakekafka.model.log import StorageError
from fakekafka.model.metadata import Partition, Topic
from fakekafka.storage.checkpoints import OffsetCheckpoints, write_atomically
from fakekafka.storage.journal import (
    FORMAT_VERSION,
    JOURNAL_FILE,
    METADATA_FILE,
    MetadataFiles,
    MetadataJournal,
    replay,
)
from fakekafka.storage.recovery import (
    CLEAN_SHUTDOWN_FILE,
    RECOVERY_POINT_CHECKPOINT,
    Recovery,
)
from fakekafka.storage.segments import (
    _LONG_MAX,
    SET_ASIDE_SUFFIXES,
    LogFiles,
    kafka_uuid,
    read_segment,
    segment_name,
    set_aside,
    topic_id_in,
)

if TYPE_CHECKING:
    from fakekafka.model.cluster import ClusterState

__all__ = ["METADATA_FILE", "DataDir", "DataDirError", "LogFiles", "StorageError", "read_segment", "segment_name"]

log = logging.getLogger("fakekafka.storage")

LOCK_FILE = ".lock"
MAX_OPEN_FILES = 1000
"""Active segments kept open at once (Kafka keeps every log's open; thousands of replicas would pass a
default limit of 1024 descriptors)."""
RECOVERED_AFTER = 5.0
"""Seconds without a failed write before the data dir is said to take writes again."""


class DataDirError(ValueError):
    """A data dir that cannot be used, in words for the CLI."""


class DataDir(MetadataFiles, Recovery, OffsetCheckpoints):
    """The data dir of one cluster: opened (and locked) before the cluster serves, loaded into its state. It
    implements the model's `ports.ClusterStorage`; the cluster's owner gives it to the state (`state.storage`)
    and then loads it."""

    def __init__(self, root: str | os.PathLike[str], cluster_id: str, broker_ids: list[int]) -> None:
        self.root = Path(root).absolute()
        self.cluster_id = cluster_id
        self.broker_ids = sorted(broker_ids)
        try:
            self.root.mkdir(parents=True, exist_ok=True)
            made_lock = not (self.root / LOCK_FILE).exists()
            self._lock = os.open(self.root / LOCK_FILE, os.O_RDWR | os.O_CREAT, 0o644)
        except OSError as e:
            raise DataDirError(f"cannot use {self.root} as a data dir: {e.strerror or e}") from None

        def refuse() -> None:
            """A refused directory is left as it was: the lock file this made goes with it."""
            if made_lock:
                with contextlib.suppress(OSError):
                    os.unlink(self.root / LOCK_FILE)
            os.close(self._lock)
        try:
            fcntl.flock(self._lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as e:
            refuse()
            if e.errno in (errno.EWOULDBLOCK, errno.EAGAIN):
                raise DataDirError(f"{self.root} is in use by another fakekafka cluster (its {LOCK_FILE} is "
                                   "locked)") from None
            raise DataDirError(f"cannot lock {self.root / LOCK_FILE}: {e.strerror or e}") from None
        try:
            self.saved = self._read_metadata()
            if not os.access(self.root, os.W_OK):
                raise DataDirError(f"cannot write to {self.root}: permission denied")
        except BaseException:
            refuse()
            raise
        self.logs: dict[tuple[int, str, int], LogFiles] = {}
        self._checkpoints: dict[tuple[Path, str], dict[tuple[str, int], int]] = {}
        """Kafka's per-log-dir offset checkpoints (log start, cleaner): (log dir, file) -> (topic, partition) ->
        offset, read from the file the first time it is needed."""
        self.clean_dirs: set[Path] = set()
        """Log dirs that held Kafka's clean shutdown marker when loaded: their logs are not recovered."""
        self._points_due: set[Path] = set()
        """Log dirs whose recovery-point-offset-checkpoint is behind memory (written at the next tick)."""
        self._open_files: dict[LogFiles, None] = {}
        """Logs with an open file descriptor, oldest first."""
        self._state: ClusterState | None = None
        self.journal = MetadataJournal(self.root / JOURNAL_FILE)
        self.journal.generation = self.saved.get("journal", 0) if self.saved else 0
        self._section_texts: dict[str, str] = {}
        self._topic_texts: dict[str, str] = {}
        """What the snapshot and journal hold, as written: each cluster-wide section's and each topic's JSON."""
        self._snapshot_size = 0
        self._model_saved = 0
        """Changes the model saved itself, topic by topic (`save(topics=...)`): each one of its metadata changes,
        which the tick then need not look for."""
        self._last_save = 0.0
        self._tick_seen: tuple[int, int] | None = None
        self.failing: str | None = None
        self._failed_at = 0.0
        """Why the last write to the dir failed (logged once), until a write succeeds again; None: none did."""

    @property
    def state(self) -> ClusterState:
        """The cluster state this data dir was loaded into."""
        if self._state is None:
            raise RuntimeError(f"the data dir {self.root} has not been loaded into a cluster state yet")
        return self._state

    def write_failed(self, what: str, e: OSError) -> StorageError:
        """A write to `what` failed: logged in words the first time of an episode (a full disk fails every
        write until room is made: one line, not one per request), then the StorageError to raise."""
        reason = e.strerror or str(e)
        self._failed_at = time.monotonic()
        if self.failing is None:
            log.error("cannot write to the data dir %s (%s: %s): writes are refused with KAFKA_STORAGE_ERROR, "
                      "nothing refused is kept, until they succeed again", self.root, what, reason)
        self.failing = reason
        return StorageError(f"cannot write {what}: {reason}")

    def recovered(self) -> None:
        """A write succeeded after failed ones: said once, when none failed for RECOVERED_AFTER seconds (a
        nearly full disk takes a small write and refuses the next big one: one episode, not a line each)."""
        if time.monotonic() - self._failed_at >= RECOVERED_AFTER:
            log.warning("the data dir %s takes writes again (they had failed: %s)", self.root, self.failing)
            self.failing = None

    @contextlib.contextmanager
    def writing(self, what: str | os.PathLike[str]) -> Iterator[None]:
        """Any OSError inside becomes a StorageError (reported once by write_failed)."""
        try:
            yield
        except OSError as e:
            raise self.write_failed(str(what), e) from None

    def broker_dir(self, node_id: int) -> Path:
        """Where broker `node_id`'s log dirs are."""
        return self.root / f"broker-{node_id}"

    def log_dir_path(self, node_id: int, name: str) -> Path:
        """Broker `node_id`'s log dir `name` (one of `log.dirs`, Kafka's default "/tmp/kafka-logs") on disk:
        `broker-N/` then the name with its slashes as underscores ("tmp_kafka-logs")."""
        return self.broker_dir(node_id) / (name.strip("/").replace("/", "_") or "_")

    def _read_metadata(self) -> dict[str, Any] | None:
        path = self.root / METADATA_FILE
        if not path.exists():
            others = [p.name for p in self.root.iterdir()
                      if p.name not in (LOCK_FILE, METADATA_FILE + ".tmp", JOURNAL_FILE + ".tmp")]
            if others:
                raise DataDirError(f"{self.root} is not empty and holds no {METADATA_FILE}: not a fakekafka data "
                                   f"dir (it has {', '.join(sorted(others)[:5])}); give an empty or new directory")
            return None
        try:
            saved = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as e:
            raise DataDirError(f"cannot read {path}: {e}") from None
        version = saved.get("format") if isinstance(saved, dict) else None
        if version != FORMAT_VERSION:
            raise DataDirError(f"{path} is in data dir format {version!r}; this fakekafka reads format "
                               f"{FORMAT_VERSION} only")
        if saved.get("cluster_id") != self.cluster_id:
            raise DataDirError(f"the data dir {self.root} belongs to cluster {saved.get('cluster_id')!r}, not "
                               f"{self.cluster_id!r} (give --cluster-id {saved.get('cluster_id')})")
        if sorted(saved.get("brokers", [])) != self.broker_ids:
            raise DataDirError(f"the data dir {self.root} holds brokers {sorted(saved.get('brokers', []))}; this "
                               f"cluster has brokers {self.broker_ids} (give the same --brokers and --node-id)")
        try:
            saved, _ = replay(saved, self.root / JOURNAL_FILE)
        except (OSError, ValueError) as e:
            raise DataDirError(f"cannot read the data dir's metadata journal: {e}") from None
        return saved

    # --- opening ----------------------------------------------------------------------------------------
    def load(self, state: ClusterState) -> None:
        """Brings the saved metadata and logs into a freshly made cluster state (or starts the dir afresh: its
        metadata file first, so a dir with anything in it always has one). The state must have been given this
        data dir first (`state.storage = data_dir`): it writes through it from then on."""
        if state.storage is not self:
            raise ValueError("give the cluster state its data dir before loading it: state.storage = data_dir")
        self._state = state
        if self.saved is None:
            self.save(force=True)
        for node_id in self.broker_ids:
            for name in state.log_dirs():
                d = self.log_dir_path(node_id, name)
                d.mkdir(parents=True, exist_ok=True)
                if not (d / "meta.properties").exists():
                    write_atomically(d / "meta.properties",
                                      f"#\nnode.id={node_id}\ndirectory.id={kafka_uuid(uuid.uuid4())}\nversion=1\n"
                                      f"cluster.id={self.cluster_id}\n")
        for node_id in self.broker_ids:
            for name in state.log_dirs():
                d = self.log_dir_path(node_id, name)
                if (d / CLEAN_SHUTDOWN_FILE).exists():
                    self.clean_dirs.add(d)
        if self.saved is not None:
            self._load_metadata(state, self.saved)
        for node_id in self.broker_ids:  # replicas the metadata does not know (a deletion cut short, a stale
            for name in state.log_dirs():  # metadata file) are set aside as Kafka's strays, never deleted
                known = {f"{t.name}-{p.index}" for t in state.topics.values() for p in t.partitions
                         if node_id in p.logs and p.logs[node_id].log_dir == name}
                for entry in self.log_dir_path(node_id, name).iterdir():
                    if entry.is_dir() and entry.name not in known and not entry.name.endswith(SET_ASIDE_SUFFIXES):
                        with self.writing(entry):
                            set_aside(entry, f"a replica directory {METADATA_FILE} does not name")
        for topic in state.topics.values():
            for partition in topic.partitions:
                self.attach(partition)
        for d in self.clean_dirs:  # from here on a crash is an unclean stop again (Kafka deletes it once loaded)
            with self.writing(d / CLEAN_SHUTDOWN_FILE):
                os.unlink(d / CLEAN_SHUTDOWN_FILE)
        self.clean_dirs.clear()
        self._write_points()
        self.save(force=True)
        if self.saved is not None:
            self._after_load(state)

    # --- logs ---------------------------------------------------------------------------------------------
    def attach(self, partition: Partition) -> None:
        """Gives each replica log of the partition that has none its files (a new partition or replica: its
        directory starts empty, or holds what _load_log read)."""
        topic = partition.topic
        for node_id, plog in partition.logs.items():
            if plog.store is not None:
                continue
            key = (node_id, topic.name, partition.index)
            old = self.logs.pop(key, None)
            if not plog.log_dir:  # not placed by the cluster (a model test's own Partition): Kafka's default
                plog.log_dir = DEFAULT_LOG_DIR
            log_dir = self.log_dir_path(node_id, plog.log_dir)
            path = log_dir / f"{topic.name}-{partition.index}"
            fresh = old is not None or not path.is_dir() or \
                topic_id_in(path) != kafka_uuid(topic.topic_id)
            if old is not None:
                old.close()
            if fresh and old is None and topic_id_in(path) is not None:  # another topic's data: kept aside
                with self.writing(path):
                    set_aside(path, f"it holds topic id {topic_id_in(path)}, not {kafka_uuid(topic.topic_id)}")
            if fresh:
                shutil.rmtree(path, ignore_errors=True)
                try:
                    path.mkdir(parents=True)
                    (path / "partition.metadata").write_text(
                        f"version: 0\ntopic_id: {kafka_uuid(topic.topic_id)}\n", encoding="utf-8")
                except OSError as e:  # nothing half made is left behind
                    shutil.rmtree(path, ignore_errors=True)
                    raise self.write_failed(str(path / "partition.metadata"), e) from None
            files = LogFiles(self, log_dir, node_id, topic.name, partition.index)
            self.logs[key] = files
            files.start_written = plog.log_start_offset if not fresh else 0
            points = self._checkpoint(log_dir, RECOVERY_POINT_CHECKPOINT)
            files.recovery_point = 0 if fresh else plog.log_end_offset if log_dir in self.clean_dirs else \
                min(points.get(key[1:], 0), plog.log_end_offset)  # as Kafka's LogLoader sets it after loading
            if points.get(key[1:], 0) != files.recovery_point:  # an offset of 0 is what no entry says
                points[key[1:]] = files.recovery_point
                self._points_due.add(log_dir)
            if fresh and plog.batches:  # a replica made with data (none today; kept exact)
                for i in range(len(plog.segments)):
                    for j in plog.segment_batches(i):
                        files.append(plog.batches[j], plog.segments[i].base_offset, plog.last_offsets[j] + 1)
            plog.store = files
            files.segments_changed(plog)
            if plog.log_start_offset != files.start_written:
                self.log_start_moved(files, plog.log_start_offset)

    def detach(self, partition: Partition, node_id: int) -> None:
        """A replica left the partition (reassignment): its directory goes."""
        files = self.logs.pop((node_id, partition.topic.name, partition.index), None)
        if files is not None:
            files.remove()
            self._forget_start(files)

    def move(self, partition: Partition, node_id: int) -> None:
        """A replica moved to another of its broker's log dirs (AlterReplicaLogDirs): its directory is renamed
        into the new one and its log start checkpointed there instead."""
        plog = partition.logs[node_id]
        files = self.logs.get((node_id, partition.topic.name, partition.index))
        if files is None:
            return
        new_dir = self.log_dir_path(node_id, plog.log_dir)
        if new_dir == files.log_dir:
            return
        files.close()
        files._active = -1
        self._forget_start(files)
        new_path = new_dir / files.path.name
        shutil.rmtree(new_path, ignore_errors=True)
        os.replace(files.path, new_path)
        files.log_dir, files.path, files.start_written = new_dir, new_path, 0
        files.segments_changed(plog)
        self.log_start_moved(files, plog.log_start_offset)
        self.recovery_point_moved(files, now=True)
        if plog.cleaner_checkpoint >= 0:
            self.cleaned(files, plog.cleaner_checkpoint)

    def drop_topic(self, topic: Topic) -> None:
        for partition in topic.partitions:
            for node_id in list(partition.logs):
                self.detach(partition, node_id)

    def opened(self, files: LogFiles) -> None:
        self._open_files[files] = None
        if len(self._open_files) > MAX_OPEN_FILES:
            next(iter(self._open_files))._close_fd()

    def closed(self, files: LogFiles) -> None:
        self._open_files.pop(files, None)

    # --- metadata ---------------------------------------------------------------------------------------------
    def _refresh_flush(self, names: Iterable[str] | None = None) -> None:
        """Each log's flush.messages and flush.ms as its broker sees them (read again at every metadata write:
        a config change is one): every log's, or the named topics' only."""
        state = self.state
        if names is None:
            items: Iterable[tuple[tuple[int, str, int], LogFiles]] = self.logs.items()
        else:
            items = [((n, name, p.index), self.logs[(n, name, p.index)]) for name in names if name in state.topics
                     for p in state.topics[name].partitions for n in p.logs if (n, name, p.index) in self.logs]
        for (node_id, name, _), files in items:
            topic = state.topics.get(name)
            if topic is not None:
                files.flush_messages = state.topic_config_int(topic, "flush.messages", node_id) or _LONG_MAX
                files.flush_ms = state.topic_config_int(topic, "flush.ms", node_id)

    def tick(self) -> None:
        """From the cluster's ticker: the metadata once a second (leader and ISR changes made by faults,
        `ctl` or the Python API), when the cluster has changed since: an event or a metadata change (serialising
        20,000 partitions' metadata to find it unchanged took a second of every second)."""
        seen = (self.state.observers.metadata_changes - self._model_saved, len(self.state.observers.events))
        if time.monotonic() - self._last_save >= 1.0 and seen != self._tick_seen:
            with contextlib.suppress(StorageError):  # reported once; tried again at the next tick
                self.save()
                self._tick_seen = seen
        if self._points_due:
            self._write_points()

    def close(self) -> None:
        """A clean stop: metadata written, each active segment flushed to disk (as Kafka flushes at shutdown)
        and closed, each log's recovery point moved to its end and checkpointed, and Kafka's clean shutdown
        marker written into each log dir whose logs all flushed (the next start recovers none of them), the
        lock released."""
        if self._lock < 0:
            return
        if self._state is not None:
            with contextlib.suppress(StorageError):  # reported; the files are closed and the lock let go anyway
                self.save()
        unflushed: set[Path] = set()
        for (node_id, name, index), files in self.logs.items():
            if files.failed:  # a torn batch left in its file: the next start must recover it
                unflushed.add(files.log_dir)
            try:
                files.close(flush=True)
            except OSError as e:
                self.write_failed(str(files.path), e)
                files._close_fd()
                unflushed.add(files.log_dir)
                continue
            topic = self._state.topics.get(name) if self._state is not None else None
            plog = topic.partitions[index].logs.get(node_id) if topic and index < len(topic.partitions) else None
            if plog is None:
                unflushed.add(files.log_dir)
            elif plog.log_end_offset != files.recovery_point:
                files.recovery_point = plog.log_end_offset
                self._checkpoint(files.log_dir, RECOVERY_POINT_CHECKPOINT)[(name, index)] = files.recovery_point
                self._points_due.add(files.log_dir)
        self._write_points()
        if self._state is not None:
            for node_id in self.broker_ids:
                for log_dir in self._state.log_dirs():
                    d = self.log_dir_path(node_id, log_dir)
                    if d not in unflushed and d not in self._points_due and d.is_dir():
                        with contextlib.suppress(StorageError), self.writing(d / CLEAN_SHUTDOWN_FILE):
                            (d / CLEAN_SHUTDOWN_FILE).write_bytes(b"")
        self.journal.close()
        os.close(self._lock)
        self._lock = -1

    def segment_files(self) -> Iterator[Path]:
        """Every segment file under the data dir (for tests and tools)."""
        for node_id in self.broker_ids:
            yield from sorted(self.broker_dir(node_id).glob("*/*/*.log"))
