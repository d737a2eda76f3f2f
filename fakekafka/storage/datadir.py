"""An optional data dir: the cluster's logs and metadata on disk, so they survive a restart of the process.

Memory stays where everything is served from; the files are written beside it. Each log dir of each broker
(`log.dirs`: names in the model, the same on every broker, Kafka's default "/tmp/kafka-logs") is
`DIR/broker-N/<the name, slashes as underscores>/`, laid out as Kafka lays out a log dir: `meta.properties`,
`log-start-offset-checkpoint` and `cleaner-offset-checkpoint` (written when they change), and a directory per
partition replica `topic-N/` with `partition.metadata` (the topic id) and one `<base offset, 20 digits>.log`
file per segment holding the record batches exactly as stored (the bytes Fetch serves), so Kafka's
`kafka-dump-log` reads them. What Kafka keeps in its metadata log (topics with their ids, partitions, replica
assignments and log dirs, leaders, leader epochs and ISRs, topic, dynamic broker and group configs, ACLs, SCRAM
credentials, the producer id block) is one JSON file, `DIR/fakekafka-metadata.json`, replaced atomically
(write, then rename).

Durability as Kafka's: every batch is written (os.write, into the page cache) before its Produce is answered,
so a killed process loses nothing acknowledged; fsync only as `flush.messages` / `flush.ms` say (Kafka's
defaults never fsync per write). A write that fails (a full disk) is refused with KAFKA_STORAGE_ERROR and taken
back off its file, so a segment always ends at a whole batch; the failure is logged once per episode.
On start every segment is read back and checked batch by batch as Kafka's
LogSegment.recover does (size, magic, CRC, offsets in order); the first bad or torn batch and everything after
it in the log is cut off. Producer state, open transactions and leader epochs are rebuilt from the batches, as
Kafka's LogLoader does; the group coordinators load committed offsets and groups from `__consumer_offsets`, and
the transaction coordinator its transactional ids from `__transaction_state`, as Kafka's do (a commit decided
but not yet marked everywhere is finished at start; an open transaction is aborted at its timeout), and the
share groups their share-partitions from `__share_group_state` (the persisted start offset and delivery counts;
records acquired at the stop come back available). Not kept: share groups' members (they rejoin).
"""

from __future__ import annotations

import base64
import contextlib
import errno
import fcntl
import json
import logging
import os
import shutil
import struct
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import crc32c

from fakekafka.model.config import DEFAULT_LOG_DIR
from fakekafka.model.log import EpochEntry, LogSegment, PartitionLog, StorageError

if TYPE_CHECKING:
    from fakekafka.model.cluster import ClusterState, Partition, Topic

__all__ = ["DataDir", "DataDirError", "LogFiles", "StorageError", "read_segment"]

log = logging.getLogger("fakekafka.storage")

FORMAT_VERSION = 1
METADATA_FILE = "fakekafka-metadata.json"
LOCK_FILE = ".lock"
LOG_START_CHECKPOINT = "log-start-offset-checkpoint"
CLEANER_CHECKPOINT = "cleaner-offset-checkpoint"
_LONG_MAX = 9223372036854775807
MAX_OPEN_FILES = 1000
"""Active segments kept open at once (Kafka keeps every log's open; thousands of replicas would pass a
default limit of 1024 descriptors)."""
_HEADER = 17  # base offset, length, partition leader epoch, magic: what must be there to size a batch
_V2_HEADER = 61
_CRC_START = 21
_MIN_SIZE = 14  # Kafka's LegacyRecord.RECORD_OVERHEAD_V0: a smaller length is corrupt
RECOVERED_AFTER = 5.0
"""Seconds without a failed write before the data dir is said to take writes again."""


class DataDirError(ValueError):
    """A data dir that cannot be used, in words for the CLI."""


def segment_name(base_offset: int) -> str:
    return f"{base_offset:020d}.log"


def kafka_uuid(u: uuid.UUID) -> str:
    """Kafka's Uuid.toString: URL-safe base64 without padding."""
    return base64.urlsafe_b64encode(u.bytes).decode().rstrip("=")


def _write_atomically(path: Path, text: str) -> None:
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


def read_segment(data: bytes, base_offset: int, next_offset: int) -> tuple[list[bytes], int, str | None]:
    """The valid batches at the start of a segment file's bytes, how many bytes they take, and why reading
    stopped early (None: the whole file is valid). A batch is valid as Kafka's recovery checks it: a length
    of at least the smallest record, all its bytes there (else the tail was torn by a crash), magic 2, its CRC,
    and offsets at or above the segment's base and after the previous batch's."""
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
        if crc32c.crc32c(memoryview(batch)[_CRC_START:]) != struct.unpack_from(">I", batch, 17)[0]:
            return out, pos, f"a CRC mismatch in the batch at byte {pos} (offset {offset})"
        last = offset + struct.unpack_from(">i", batch, 23)[0]
        if offset < max(base_offset, next_offset) or last < offset:
            return out, pos, f"offsets {offset}-{last} out of order at byte {pos}"
        next_offset = last + 1
        out.append(batch)
        pos += len(batch)
    return out, pos, None


class LogFiles:
    """One replica's segment files. The active segment's file stays open (unbuffered: each batch is one
    write() straight into the page cache)."""

    __slots__ = ("path", "log_dir", "owner", "node_id", "topic", "partition", "_fd", "_active", "flush_messages",
                 "flush_ms", "_recovery_point", "_last_flush", "start_written", "failed")

    def __init__(self, owner: DataDir, log_dir: Path, node_id: int, topic: str, partition: int) -> None:
        self.log_dir, self.owner, self.node_id, self.topic, self.partition = log_dir, owner, node_id, topic, partition
        self.path = log_dir / f"{topic}-{partition}"
        self._fd = -1
        self._active = -1
        self.flush_messages = _LONG_MAX
        self.flush_ms = _LONG_MAX
        self._recovery_point = 0
        self._last_flush = time.monotonic()
        self.start_written = 0
        self.failed = False

    # --- what PartitionLog hands over ----------------------------------------------------------------
    def append(self, data: bytes | bytearray, segment_base: int, next_offset: int) -> None:
        """One stored batch at the end of the segment starting at `segment_base` (a new file when the log
        rolled); then an fsync if flush.messages or flush.ms asks for one. A write that fails (a full disk) is
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
                    old = self.path / segment_name(self._active)
                    with contextlib.suppress(FileNotFoundError):
                        if old.stat().st_size == 0:
                            old.unlink()
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
                if next_offset - self._recovery_point >= self.flush_messages or \
                        (now - self._last_flush) * 1000 >= self.flush_ms:
                    os.fsync(self._fd)
                    self._recovery_point, self._last_flush = next_offset, now
        except OSError as e:
            self._take_back(written, e)
        if self.owner.failing is not None:
            self.owner.recovered()

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
        base = log.base_offsets[first_dropped]
        seg_base = max((s.base_offset for s in log.segments if s.base_offset <= base), default=base)
        later = [s.base_offset for s in log.segments if s.base_offset > seg_base]
        end = len(log.batches)
        if later:
            from bisect import bisect_left
            end = bisect_left(log.base_offsets, later[0])
        dropped = sum(len(log.batches[j]) for j in range(first_dropped, end))
        path = self.path / segment_name(seg_base)
        with contextlib.suppress(FileNotFoundError):
            os.truncate(path, max(0, path.stat().st_size - dropped))

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
        self._recovery_point = min(self._recovery_point, log.log_end_offset)

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


class DataDir:
    """The data dir of one cluster: opened (and locked) before the cluster serves, loaded into its state."""

    def __init__(self, root: str | os.PathLike[str], cluster_id: str, broker_ids: list[int]) -> None:
        self.root = Path(root).absolute()
        self.cluster_id = cluster_id
        self.broker_ids = sorted(broker_ids)
        try:
            self.root.mkdir(parents=True, exist_ok=True)
            self._lock = os.open(self.root / LOCK_FILE, os.O_RDWR | os.O_CREAT, 0o644)
        except OSError as e:
            raise DataDirError(f"cannot use {self.root} as a data dir: {e.strerror or e}") from None
        try:
            fcntl.flock(self._lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as e:
            os.close(self._lock)
            if e.errno in (errno.EWOULDBLOCK, errno.EAGAIN):
                raise DataDirError(f"{self.root} is in use by another fakekafka cluster (its {LOCK_FILE} is "
                                   "locked)") from None
            raise DataDirError(f"cannot lock {self.root / LOCK_FILE}: {e.strerror or e}") from None
        try:
            self.saved = self._read_metadata()
            if not os.access(self.root, os.W_OK):
                raise DataDirError(f"cannot write to {self.root}: permission denied")
        except BaseException:
            os.close(self._lock)
            raise
        self.logs: dict[tuple[int, str, int], LogFiles] = {}
        self._checkpoints: dict[tuple[Path, str], dict[tuple[str, int], int]] = {}
        """Kafka's per-log-dir offset checkpoints (log start, cleaner): (log dir, file) -> (topic, partition) ->
        offset, read from the file the first time it is needed."""
        self._open_files: dict[LogFiles, None] = {}
        """Logs with an open file descriptor, oldest first."""
        self._written = ""
        self._last_save = 0.0
        self.failing: str | None = None
        self._failed_at = 0.0
        """Why the last write to the dir failed (logged once), until a write succeeds again; None: none did."""

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
            others = [p.name for p in self.root.iterdir() if p.name not in (LOCK_FILE, METADATA_FILE + ".tmp")]
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
        return saved

    # --- opening ----------------------------------------------------------------------------------------
    def load(self, state: ClusterState) -> None:
        """Brings the saved metadata and logs into a freshly made cluster state (or starts the dir afresh: its
        metadata file first, so a dir with anything in it always has one)."""
        if self.saved is None:
            self.save(state, force=True)
        for node_id in self.broker_ids:
            for name in state.log_dirs():
                d = self.log_dir_path(node_id, name)
                d.mkdir(parents=True, exist_ok=True)
                if not (d / "meta.properties").exists():
                    _write_atomically(d / "meta.properties",
                                      f"#\nnode.id={node_id}\ndirectory.id={kafka_uuid(uuid.uuid4())}\nversion=1\n"
                                      f"cluster.id={self.cluster_id}\n")
        state.storage = self
        if self.saved is not None:
            self._load_metadata(state, self.saved)
        for node_id in self.broker_ids:  # replicas the metadata does not know (a deletion cut short) go
            for name in state.log_dirs():
                known = {f"{t.name}-{p.index}" for t in state.topics.values() for p in t.partitions
                         if node_id in p.logs and p.logs[node_id].log_dir == name}
                for entry in self.log_dir_path(node_id, name).iterdir():
                    if entry.is_dir() and entry.name not in known:
                        shutil.rmtree(entry, ignore_errors=True)
        for topic in state.topics.values():
            for partition in topic.partitions:
                self.attach(partition)
        self.save(state, force=True)
        if self.saved is not None:
            self._after_load(state)

    def _load_metadata(self, state: ClusterState, saved: dict[str, Any]) -> None:
        from fakekafka.model.acl import AclBinding, AclOperation, AclPermissionType, PatternType, ResourceType
        from fakekafka.model.cluster import Partition, Topic
        from fakekafka.net.security import _ScramCredential

        c = state.config
        c.dynamic_defaults.update(saved.get("dynamic_defaults", {}))
        for node, configs in saved.get("dynamic_brokers", {}).items():
            c.dynamic_brokers[int(node)] = dict(configs)
        state.group_configs = {g: dict(v) for g, v in saved.get("group_configs", {}).items()}
        state.producer_ids._next = max(state.producer_ids._next, saved.get("producer_id_block", 0))
        state._placement = saved.get("placement", 0)
        if state.authorizer is not None:
            state.authorizer.create(AclBinding(ResourceType[a[0]], a[1], PatternType[a[2]], a[3], a[4],
                                               AclOperation[a[5]], AclPermissionType[a[6]])
                                    for a in saved.get("acls", []))
        for user, mechanism, salt, stored, server, iterations in saved.get("scram", []):
            state.scram._creds[(user, mechanism)] = _ScramCredential(
                base64.b64decode(salt), base64.b64decode(stored), base64.b64decode(server), iterations)
        max_pid = -1
        for t in saved.get("topics", []):
            topic = Topic(t["name"], uuid.UUID(t["id"]), [], dict(t["configs"]), is_internal=t["internal"])
            state.topics[topic.name] = topic
            state.topics_by_id[topic.topic_id] = topic
            for i, p in enumerate(t["partitions"]):
                logs = {r: self._load_log(state, r, self._replica_dir(state, r, t["name"], i,
                                                                      p["dirs"].get(str(r), "")), t["name"], i)
                        for r in p["replicas"]}
                partition = Partition(topic, i, list(p["replicas"]), p["leader"], p["leader_epoch"], list(p["isr"]),
                                      logs, adding=list(p["adding"]), removing=list(p["removing"]),
                                      reassigned_from=list(p["reassigned_from"]))
                topic.partitions.append(partition)
        for topic in state.topics.values():
            for partition in topic.partitions:
                max_pid = max(max_pid, self._settle(state, partition))
        state.producer_ids._next = max(state.producer_ids._next, max_pid + 1)
        from fakekafka.model.cluster import consumer_group_config
        state.consumer_groups.config = consumer_group_config(c)
        state.consumer_groups.metadata_changed()

    def _replica_dir(self, state: ClusterState, node_id: int, topic: str, index: int, saved: str) -> str:
        """The log dir a replica is loaded from: the one it was in, or, when `log.dirs` no longer names that
        one, the first of them (its directory is moved there)."""
        dirs = state.log_dirs()
        if saved in dirs:
            return saved
        old = self.log_dir_path(node_id, saved) / f"{topic}-{index}" if saved else None
        if old is not None and old.is_dir():
            new = self.log_dir_path(node_id, dirs[0]) / f"{topic}-{index}"
            log.warning("log dir %s is no longer in log.dirs: %s moves to %s", saved, old, new)
            shutil.rmtree(new, ignore_errors=True)
            os.replace(old, new)
            for name in (LOG_START_CHECKPOINT, CLEANER_CHECKPOINT):  # its checkpointed offsets go along
                offset = self._checkpoint(old.parent, name).get((topic, index))
                if offset is not None:
                    self._checkpoint(new.parent, name)[(topic, index)] = offset
                    self._write_checkpoint(new.parent, name)
        return dirs[0]

    def _load_log(self, state: ClusterState, node_id: int, log_dir: str, topic: str, index: int) -> PartitionLog:
        """One replica's log from its segment files, recovered as Kafka's LogLoader recovers a log after an
        unclean shutdown: each segment checked batch by batch; at the first bad batch that segment is cut
        there and every later segment deleted."""
        d = self.log_dir_path(node_id, log_dir) / f"{topic}-{index}"
        plog = PartitionLog(log_dir=log_dir)
        topic_id = kafka_uuid(state.topics[topic].topic_id)
        if d.is_dir() and self._topic_id_in(d) not in (None, topic_id):  # an earlier topic of that name's
            log.warning("%s holds topic id %s, not %s: deleted", d, self._topic_id_in(d), topic_id)
            shutil.rmtree(d)
        files = sorted((int(n[:-4]), n) for n in os.listdir(d) if n.endswith(".log") and n[:-4].isdigit()) \
            if d.is_dir() else []
        for name in os.listdir(d) if d.is_dir() else []:  # writes cut short (a cleaning, a metadata rename)
            if name.endswith((".cleaned", ".tmp", ".swap")):
                os.unlink(d / name)
        segments: list[LogSegment] = []
        now = state.clock.now_ms()
        from fakekafka.model.clock import SystemClock
        wall = isinstance(state.clock, SystemClock)
        next_offset = 0
        interval = state.topic_config_int(state.topics[topic], "index.interval.bytes", node_id)
        for k, (base, name) in enumerate(files):
            path = d / name
            data = path.read_bytes()
            batches, valid, problem = read_segment(data, base, next_offset)
            seg = LogSegment(base)
            mtime = int(path.stat().st_mtime * 1000) if wall else now
            for b in batches:
                last = struct.unpack_from(">q", b, 0)[0] + struct.unpack_from(">i", b, 23)[0]
                max_ts = struct.unpack_from(">q", b, 35)[0]
                seg.add(len(b), max_ts, now, interval)
                plog.batches.append(b)
                plog.base_offsets.append(struct.unpack_from(">q", b, 0)[0])
                plog.last_offsets.append(last)
                plog.max_timestamps.append(max_ts)
                plog.appended_at.append(now)
                epoch = struct.unpack_from(">i", b, 12)[0]
                plog.batch_epochs.append(epoch)
                if epoch >= 0 and (not plog.epochs or epoch > plog.epochs[-1].epoch):
                    plog.epochs.append(EpochEntry(epoch, plog.base_offsets[-1]))
                plog.size_bytes += len(b)
                next_offset = last + 1
            seg.last_modified = mtime
            segments.append(seg)
            if problem is not None:
                log.warning("recovering %s: cut %d bytes after %s", path, len(data) - valid, problem)
                os.truncate(path, valid)
                for _, later in files[k + 1:]:
                    log.warning("recovering %s: deleted (after the cut in %s)", d / later, name)
                    os.unlink(d / later)
                break
        if segments:
            plog.segments = segments
            plog.log_end_offset = max(next_offset, segments[-1].base_offset)
            plog.log_start_offset = segments[0].base_offset
        checkpoints = self.log_dir_path(node_id, log_dir)
        start = self._checkpoint(checkpoints, LOG_START_CHECKPOINT).get((topic, index), 0)
        if start > plog.log_start_offset:
            plog.delete_before(start)
        plog.cleaner_checkpoint = self._checkpoint(checkpoints, CLEANER_CHECKPOINT).get((topic, index), -1)
        plog.high_watermark = plog.log_end_offset
        plog.rebuild_txns()
        return plog

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
            _write_atomically(log_dir / name, "0\n" + f"{len(entries)}\n" +
                              "".join(f"{t} {p} {o}\n" for (t, p), o in entries.items()))

    def _settle(self, state: ClusterState, partition: Partition) -> int:
        """After loading a partition's replicas: followers share the leader's batch objects where they hold the
        same bytes (memory stays one copy per batch), the high watermark is what every ISR member holds,
        producer state comes from the leader's log. Returns the largest producer id seen."""
        if partition.leader_id not in partition.replicas or partition.leader_id not in state.brokers:
            partition.leader_id = -1
        leader = partition.log
        by_base = {b: i for i, b in enumerate(leader.base_offsets)}
        for flog in partition.logs.values():
            if flog is leader:
                continue
            for j, base in enumerate(flog.base_offsets):
                i = by_base.get(base)
                if i is not None and leader.batches[i] == flog.batches[j]:
                    flog.batches[j] = leader.batches[i]
        isr = [partition.logs[r] for r in partition.isr if r in partition.logs] or [leader]
        leader.high_watermark = min(x.log_end_offset for x in isr)
        for flog in partition.logs.values():
            if flog is not leader:
                flog.high_watermark = min(flog.log_end_offset, leader.high_watermark)
        partition.leader_epoch = max(partition.leader_epoch, leader.last_epoch())
        from fakekafka.model.producers import PartitionProducers
        partition.producers = PartitionProducers.from_log(leader.batches)
        return max(partition.producers.entries, default=-1)

    def _after_load(self, state: ClusterState) -> None:
        """What the restarted cluster does before serving: partitions without a leader get one; the transaction
        coordinator loads its ids from `__transaction_state` (finishing the markers of a decided transaction; an
        open one runs on to its timeout, as Kafka's); the groups of `__consumer_offsets` (committed offsets,
        classic and KIP-848 groups) are loaded from its log; a transaction left open in a log that no loaded
        transactional id owns (an idempotent producer's cannot be, so this is a log without its coordinator's
        records) is aborted."""
        from fakekafka.model.cluster import OFFSETS_TOPIC
        from fakekafka.model.transactions import TransactionState
        for topic in list(state.topics.values()):
            for partition in topic.partitions:
                if not partition.online:
                    state.elect_leader(partition)
        state.transaction_log.load_all()
        state.share_state.load_all()  # share groups get their share-partitions back from __share_group_state
        owned = {t.producer_id for t in state.transactions.transactions.values()
                 if t.state in (TransactionState.ONGOING, TransactionState.PREPARE_COMMIT,
                                TransactionState.PREPARE_ABORT)}
        for topic in list(state.topics.values()):
            for partition in topic.partitions:
                if not partition.online:
                    continue
                if topic.name == OFFSETS_TOPIC:  # the group coordinators load their groups, as Kafka's at start
                    state.offsets_topic.load(partition)
                for pid in list(partition.log.open_txns):
                    if pid in owned:
                        continue
                    entry = partition.producers.entries.get(pid)
                    epoch = min((entry.epoch if entry else 0) + 1, 32767)
                    state.write_marker(partition, pid, epoch, False, entry.coordinator_epoch if entry else 0)
                    state.event("transaction_aborted_at_start", topic=topic.name, partition=partition.index,
                                producer_id=pid)

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
                self._topic_id_in(path) != kafka_uuid(topic.topic_id)
            if old is not None:
                old.close()
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
            if fresh and plog.batches:  # a replica made with data (none today; kept exact)
                for i in range(len(plog.segments)):
                    for j in plog.segment_batches(i):
                        files.append(plog.batches[j], plog.segments[i].base_offset, plog.last_offsets[j] + 1)
            plog.store = files
            files.segments_changed(plog)
            if plog.log_start_offset != files.start_written:
                self.log_start_moved(files, plog.log_start_offset)

    @staticmethod
    def _topic_id_in(path: Path) -> str | None:
        with contextlib.suppress(OSError):
            for line in (path / "partition.metadata").read_text(encoding="utf-8").splitlines():
                if line.startswith("topic_id:"):
                    return line.split(":", 1)[1].strip()
        return None

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

    def _forget_start(self, files: LogFiles) -> None:
        """A replica left this log dir: its checkpointed offsets go too (from the file at its next write, if
        this one fails: reported, and the replica is gone either way)."""
        for name in (LOG_START_CHECKPOINT, CLEANER_CHECKPOINT):
            if self._checkpoint(files.log_dir, name).pop((files.topic, files.partition), None) is not None:
                with contextlib.suppress(StorageError):
                    self._write_checkpoint(files.log_dir, name)

    # --- metadata ---------------------------------------------------------------------------------------------
    def snapshot(self, state: ClusterState) -> dict[str, Any]:
        c = state.config
        acls = [[a.resource_type.name, a.resource_name, a.pattern_type.name, a.principal, a.host, a.operation.name,
                 a.permission_type.name] for a in state.authorizer.acls] if state.authorizer is not None else []
        scram = [[user, mechanism, base64.b64encode(cr.salt).decode(), base64.b64encode(cr.stored_key).decode(),
                  base64.b64encode(cr.server_key).decode(), cr.iterations]
                 for (user, mechanism), cr in state.scram._creds.items()]
        return {
            "format": FORMAT_VERSION, "cluster_id": self.cluster_id, "brokers": self.broker_ids,
            "producer_id_block": state.producer_ids._next, "placement": state._placement,
            "dynamic_defaults": c.dynamic_defaults,
            "dynamic_brokers": {str(k): v for k, v in c.dynamic_brokers.items()},
            "group_configs": state.group_configs, "acls": acls, "scram": scram,
            "topics": [{"name": t.name, "id": str(t.topic_id), "internal": t.is_internal, "configs": t.configs,
                        "partitions": [{"replicas": p.replicas, "leader": p.leader_id, "leader_epoch": p.leader_epoch,
                                        "dirs": {str(r): log.log_dir for r, log in p.logs.items()},
                                        "isr": p.isr, "adding": p.adding, "removing": p.removing,
                                        "reassigned_from": p.reassigned_from} for p in t.partitions]}
                       for t in state.topics.values()],
        }

    def save(self, state: ClusterState, *, force: bool = False) -> bool:
        """Writes the metadata if it changed since the last write (atomically: a new file renamed over the
        old). Called after every request that may change it, and from the ticker; returns whether it wrote.
        The producer id block is saved 1000 ids ahead, as Kafka's controller hands out blocks, so an
        InitProducerId writes the file once per thousand."""
        snap = self.snapshot(state)
        snap["producer_id_block"] = (state.producer_ids._next // 1000 + 1) * 1000
        text = json.dumps(snap, separators=(",", ":"), sort_keys=True)
        self._last_save = time.monotonic()
        if text == self._written and not force:
            return False
        with self.writing(self.root / METADATA_FILE):
            _write_atomically(self.root / METADATA_FILE, text)
        self._written = text
        self._refresh_flush(state)
        return True

    def _refresh_flush(self, state: ClusterState) -> None:
        """Each log's flush.messages and flush.ms as its broker sees them (read again at every metadata write:
        a config change is one)."""
        for (node_id, name, _), files in self.logs.items():
            topic = state.topics.get(name)
            if topic is not None:
                files.flush_messages = state.topic_config_int(topic, "flush.messages", node_id) or _LONG_MAX
                files.flush_ms = state.topic_config_int(topic, "flush.ms", node_id)

    def tick(self, state: ClusterState) -> None:
        """From the cluster's ticker: the metadata once a second (leader and ISR changes made by faults,
        `ctl` or the Python API)."""
        if time.monotonic() - self._last_save >= 1.0:
            with contextlib.suppress(StorageError):  # reported once; tried again at the next tick
                self.save(state)

    def close(self, state: ClusterState) -> None:
        """A clean stop: metadata written, each active segment flushed to disk (as Kafka flushes at shutdown)
        and closed, the lock released."""
        if self._lock < 0:
            return
        with contextlib.suppress(StorageError):  # reported; the files are closed and the lock let go anyway
            self.save(state)
        for files in self.logs.values():
            try:
                files.close(flush=True)
            except OSError as e:
                self.write_failed(str(files.path), e)
                files._close_fd()
        os.close(self._lock)
        self._lock = -1

    def segment_files(self) -> Iterator[Path]:
        """Every segment file under the data dir (for tests and tools)."""
        for node_id in self.broker_ids:
            yield from sorted(self.broker_dir(node_id).glob("*/*/*.log"))
