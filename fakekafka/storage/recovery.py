"""Opening a data dir: the saved metadata and every replica's segments loaded into a fresh cluster state, recovered
as Kafka's LogLoader recovers logs after an unclean shutdown, then what the restarted cluster does before it serves.
"""

from __future__ import annotations

import base64
import logging
import os
import struct
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from fakekafka.model.acl import AclBinding, AclOperation, AclPermissionType, PatternType, ResourceType
from fakekafka.model.clock import SystemClock
from fakekafka.model.coordinators import consumer_group_config
from fakekafka.model.internal_topics import OFFSETS_TOPIC
from fakekafka.model.log import EpochEntry, LogSegment, PartitionLog
from fakekafka.model.metadata import Partition, Topic
from fakekafka.model.producers import PartitionProducers
from fakekafka.model.scram import ScramCredential
from fakekafka.model.transactions import TransactionState
from fakekafka.storage.segments import _LONG_MAX, kafka_uuid, read_segment, set_aside, topic_id_in

if TYPE_CHECKING:
    from fakekafka.model.cluster import ClusterState

__all__ = ["CLEANER_CHECKPOINT", "CLEAN_SHUTDOWN_FILE", "LOG_START_CHECKPOINT", "RECOVERY_POINT_CHECKPOINT", "Recovery"]

log = logging.getLogger("fakekafka.storage")

LOG_START_CHECKPOINT = "log-start-offset-checkpoint"
CLEANER_CHECKPOINT = "cleaner-offset-checkpoint"
RECOVERY_POINT_CHECKPOINT = "recovery-point-offset-checkpoint"
CLEAN_SHUTDOWN_FILE = ".kafka_cleanshutdown"
"""Written into each log dir at a clean stop, deleted once loaded (Kafka's LogLoader.CLEAN_SHUTDOWN_FILE)."""


def _kept_words(path: Path, topic: str, index: int, node_id: int, why: str, bad_crcs: list[str], size: int,
                valid: int, problem: str | None) -> str:
    """What recovery says of a corrupt segment it does not recover (below the recovery point, or after a clean
    stop): Kafka's LogLoader leaves such segments as they are, so fakekafka keeps every byte and says where the
    damage is."""
    parts = []
    if bad_crcs:
        parts.append(f"{'; '.join(bad_crcs)}: kept as stored, so a client that fetches it gets a corrupt-record "
                     f"error, as from Kafka")
    if problem is not None:
        parts.append(f"{problem}: the {size - valid} bytes from byte {valid} on are kept in the file but cannot be "
                     f"framed into batches, so they are not served (fetches go on at the next segment)")
    return (f"recovering {topic}-{index} on broker {node_id}: segment {path} is corrupt: {'; and '.join(parts)}. "
            f"It is {why}, so, as Kafka's log recovery does, it is not recovered: nothing in it or after it is cut "
            f"or deleted, the later segments are served as they are and new records go on after the log's end.")


def _cut_words(path: Path, topic: str, index: int, node_id: int, size: int, valid: int, problem: str,
               next_offset: int, later: list[str]) -> str:
    """What recovery did to a replica's log, in words: Kafka's LogSegment.recover stops at a segment's first
    invalid batch and truncates the segment there (LogLoader then deletes the segments after it), logging "Found
    invalid messages in log segment" and "Corruption found in segment"; fakekafka does the same and says what it
    cost. A segment with no valid batch at all is emptied, as on Kafka: the words say so, and that such a file
    may not be a Kafka segment at all."""
    if valid == 0:
        cut = (f"it holds no valid record batch at all ({problem}), so all its {size} bytes are dropped and it "
               f"is left empty (if it is not a segment fakekafka or Kafka wrote, it does not belong in the data "
               f"dir)")
    else:
        cut = (f"its batches are valid up to byte {valid}: it is cut there, dropping the {size - valid} bytes "
               f"after ({problem})")
    gone = f"; the later segment(s) {', '.join(later)} are deleted" if later else ""
    return (f"recovering {topic}-{index} on broker {node_id}: segment {path}: {cut}{gone}. The log now ends at offset "
            f"{next_offset}: records from there on are lost on this replica. This is what Kafka's log recovery "
            f"does with an invalid batch (it truncates the segment at the first one).")


class Recovery:
    """DataDir's loading half: reads what the files hold into the cluster state."""

    if TYPE_CHECKING:  # what DataDir provides
        log_dir_path: Callable[[int, str], Path]
        clean_dirs: set[Path]
        _checkpoint: Callable[[Path, str], dict[tuple[str, int], int]]
        _write_checkpoint: Callable[[Path, str], None]

    def _load_metadata(self, state: ClusterState, saved: dict[str, Any]) -> None:
        c = state.config
        c.dynamic_defaults.update(saved.get("dynamic_defaults", {}))
        for node, configs in saved.get("dynamic_brokers", {}).items():
            c.dynamic_brokers[int(node)] = dict(configs)
        state.group_configs = {g: dict(v) for g, v in saved.get("group_configs", {}).items()}
        state.producer_ids.reserve_below(saved.get("producer_id_block", 0))
        state.topic_registry.placement = saved.get("placement", 0)
        if state.authorizer is not None:
            state.authorizer.create(AclBinding(ResourceType[a[0]], a[1], PatternType[a[2]], a[3], a[4],
                                               AclOperation[a[5]], AclPermissionType[a[6]])
                                    for a in saved.get("acls", []))
        for user, mechanism, salt, stored, server, iterations in saved.get("scram", []):
            state.scram.restore(user, mechanism, ScramCredential(
                base64.b64decode(salt), base64.b64decode(stored), base64.b64decode(server), iterations))
        for entity, values in saved.get("client_quotas", []):
            state.client_quotas.restore(tuple((t, n) for t, n in entity), values)
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
        state.producer_ids.reserve_below(max_pid + 1)
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
            if new.is_dir():  # a stray of the same name there: kept aside, not overwritten
                set_aside(new, f"{old} moves here")
            os.replace(old, new)
            for name in (LOG_START_CHECKPOINT, CLEANER_CHECKPOINT, RECOVERY_POINT_CHECKPOINT):  # offsets go along
                offset = self._checkpoint(old.parent, name).get((topic, index))
                if offset is not None:
                    self._checkpoint(new.parent, name)[(topic, index)] = offset
                    self._write_checkpoint(new.parent, name)
        return dirs[0]

    def _load_log(self, state: ClusterState, node_id: int, log_dir: str, topic: str, index: int) -> PartitionLog:
        """One replica's log from its segment files, recovered as Kafka's LogLoader recovers a log after an
        unclean shutdown: the segments from the one holding the recovery point on (none after a clean stop)
        are checked batch by batch; at the first bad batch that segment is cut there and every later segment
        deleted. Every segment is read (memory serves them), and a corrupt one below the recovery point is
        reported and kept as it is."""
        d = self.log_dir_path(node_id, log_dir) / f"{topic}-{index}"
        plog = PartitionLog(log_dir=log_dir)
        topic_id = kafka_uuid(state.topics[topic].topic_id)
        if d.is_dir() and topic_id_in(d) not in (None, topic_id):  # an earlier topic of that name's: kept aside
            set_aside(d, f"it holds topic id {topic_id_in(d)}, not {topic_id}")
        files = sorted((int(n[:-4]), n) for n in os.listdir(d) if n.endswith(".log") and n[:-4].isdigit()) \
            if d.is_dir() else []
        for name in os.listdir(d) if d.is_dir() else []:  # writes cut short (a cleaning, a metadata rename)
            if name.endswith((".cleaned", ".tmp", ".swap")):
                os.unlink(d / name)
        segments: list[LogSegment] = []
        now = state.clock.now_ms()
        wall = isinstance(state.clock, SystemClock)
        next_offset = 0
        interval = state.topic_config_int(state.topics[topic], "index.interval.bytes", node_id)
        checkpoints = self.log_dir_path(node_id, log_dir)
        clean = checkpoints in self.clean_dirs
        point = self._checkpoint(checkpoints, RECOVERY_POINT_CHECKPOINT).get((topic, index), 0)
        # Kafka's LogLoader.recoverLog: the unflushed segments are those from the one holding the recovery point on;
        # after a clean stop none on Kafka, the active one here (new records go after its last whole batch)
        unflushed = len(files) - 1 if clean else max([k for k, (b, _) in enumerate(files) if b <= point], default=0)
        for k, (base, name) in enumerate(files):
            path = d / name
            data = path.read_bytes()
            if k < unflushed:
                bad: list[str] = []
                batches, valid, problem = read_segment(data, base, next_offset, below=files[k + 1][0]
                                                       if k + 1 < len(files) else _LONG_MAX, bad_crcs=bad)
                if bad or problem is not None:
                    why = "from before a clean stop" if clean else f"below the recovery point {point} (it was " \
                        "fsynced when the log rolled past it)"
                    log.error(_kept_words(path, topic, index, node_id, why, bad, len(data), valid, problem))
                problem = None
            else:
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
                later = [n for _, n in files[k + 1:]]
                log.warning(_cut_words(path, topic, index, node_id, len(data), valid, problem, next_offset, later))
                os.truncate(path, valid)
                for n in later:
                    os.unlink(d / n)
                break
        if segments:
            plog.segments = segments
            plog.log_end_offset = max(next_offset, segments[-1].base_offset)
            plog.log_start_offset = segments[0].base_offset
        start = self._checkpoint(checkpoints, LOG_START_CHECKPOINT).get((topic, index), 0)
        if start > plog.log_start_offset:
            plog.delete_before(start)
        plog.cleaner_checkpoint = self._checkpoint(checkpoints, CLEANER_CHECKPOINT).get((topic, index), -1)
        plog.high_watermark = plog.log_end_offset
        plog.rebuild_txns()
        return plog

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
        partition.producers = PartitionProducers.from_log(leader.batches)
        return max(partition.producers.entries, default=-1)

    def _after_load(self, state: ClusterState) -> None:
        """What the restarted cluster does before serving: partitions without a leader get one; the transaction
        coordinator loads its ids from `__transaction_state` (finishing the markers of a decided transaction; an
        open one runs on to its timeout, as Kafka's); the groups of `__consumer_offsets` (committed offsets,
        classic and KIP-848 groups) are loaded from its log; a transaction left open in a log that no loaded
        transactional id owns (an idempotent producer's cannot be, so this is a log without its coordinator's
        records) is aborted."""
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
