"""`__share_group_state` as Kafka 4.4's share coordinator writes it, and share-partitions loaded back from it.

A share-partition's persisted state (KIP-932) is its start offset (SPSO) and, for the in-flight records past it,
each one's delivery state (AVAILABLE 0, ACKNOWLEDGED 2, ARCHIVED 4) and delivery count, in state batches of
consecutive offsets alike. Kafka's share-partition leader writes it through the persister when it changes (an
acknowledgement, a lock expiry or a member's release, the log start passing the SPSO) and never at acquisition,
so an acquired record is persisted as what it was before (a record acquired for the first time: not at all). The
share coordinator turns each write into one record at the leader of the key's partition (Java's String.hashCode of
"group:topicId:partition", absolute, modulo the topic's partitions, as ShareCoordinatorService.partitionFor): the
first a ShareSnapshot initializing the key as Kafka's group coordinator does (InitializeShareGroupState: no start
offset yet, -1; the group's epoch as state epoch; written here just before the share-partition's first change, not
at the assignment), then ShareUpdates carrying only the changed batches (an acknowledgement's written before the
SPSO moves past it: the move goes with the next write, as Kafka 4.4 writes it) and DeliveryCompleteCount until
`share.coordinator.snapshot.update.records.per.snapshot` (default 500) of them follow the snapshot, then a new
ShareSnapshot with the whole state and the next snapshot epoch. Keys and values are generated from the
kafka-share-coordinator jar (`wire/share_coordinator/`). AlterShareGroupOffsets writes a snapshot with the next
state epoch; deleting a share-partition's state (DeleteShareGroupOffsets, DeleteGroups, a deleted topic) writes a
ShareSnapshot tombstone. Records before every live key's last snapshot are deleted (Kafka's coordinator prunes
them with DeleteRecords every `share.coordinator.state.topic.prune.interval.ms`; here at each snapshot), so the
topic does not grow without bound.

`load(partition)` rebuilds the coordinator's state of the keys of one partition from its leader's log (the latest
snapshot, the updates after it laid over it), as Kafka's coordinator loads a partition it comes to lead;
`load_all()` does it for every led partition at start from a data dir and gives each share group its
share-partitions back: the persisted SPSO, every in-flight record AVAILABLE with its persisted delivery count
(acquired ones come back available, as after a lock expiry) or ACKNOWLEDGED/ARCHIVED. `leader_moved` does the
same for one topic partition whose leader moved, as Kafka's new share-partition leader reads the persister.
"""

from __future__ import annotations

import base64
import struct
import uuid
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from fakekafka.model.internal_topics import SHARE_STATE_TOPIC, partition_for
from fakekafka.model.offsets_topic import batch_of, keyed_records
from fakekafka.model.share import RecordState, ShareGroup, SharePartition, _InFlight
from fakekafka.wire.primitives import build_bytes
from fakekafka.wire.share_coordinator import share_snapshot, share_update

if TYPE_CHECKING:
    from fakekafka.model.metadata import Partition
    from fakekafka.model.ports import CoordinatorCluster

__all__ = ["ShareStateLog", "PersistedState", "decode_share_record", "kafka_uuid"]

_I16 = struct.Struct(">h").pack
Key = tuple[str, uuid.UUID, int]
View = dict[int, tuple[int, int]]
"""offset -> (delivery state, delivery count), as persisted."""


def kafka_uuid(u: uuid.UUID) -> str:
    """Kafka's Uuid.toString: URL-safe base64 without padding."""
    return base64.urlsafe_b64encode(u.bytes).decode().rstrip("=")


@dataclass
class PersistedState:
    """The share coordinator's state of one key: what its records say, and where the snapshot cadence is."""

    start_offset: int
    view: View = field(default_factory=dict)
    snapshot_epoch: int = 0
    state_epoch: int = 0
    leader_epoch: int = 0
    updates: int = 0
    """ShareUpdates since the last ShareSnapshot."""
    create_ms: int = 0
    snapshot_offset: int = -1
    """Where its last ShareSnapshot is in the partition's log: nothing of the key before it is needed."""


def _batches(view: View) -> list[dict[str, int]]:
    out: list[dict[str, int]] = []
    for offset in sorted(view):
        state, count = view[offset]
        last = out[-1] if out else None
        if last is not None and last["last_offset"] == offset - 1 and (
                last["delivery_state"], last["delivery_count"]) == (state, count):
            last["last_offset"] = offset
        else:
            out.append({"first_offset": offset, "last_offset": offset, "delivery_state": state,
                        "delivery_count": count})
    return out


def _complete(view: View) -> int:
    """DeliveryCompleteCount: the persisted offsets whose delivery is over (acknowledged or archived)."""
    return sum(1 for state, _ in view.values() if state != RecordState.AVAILABLE)


def decode_share_record(key: bytes, value: bytes | None) -> tuple[int, Key, Any]:
    """(record type, key, value fields or None for a tombstone). Raises ValueError for a record type Kafka's
    share coordinator does not know."""
    record_type = struct.unpack_from(">h", key)[0]
    mod = {share_snapshot.RECORD_TYPE: share_snapshot, share_update.RECORD_TYPE: share_update}.get(record_type)
    if mod is None:
        raise ValueError("unknown __share_group_state key version")
    k = mod.KEY.parse(key[2:])
    parsed_key = (k.group_id, k.topic_id, k.partition)
    if value is None:
        return record_type, parsed_key, None
    return record_type, parsed_key, mod.VALUES[struct.unpack_from(">h", value)[0]].parse(value[2:])


class ShareStateLog:
    """The share coordinator's records in `__share_group_state`, and share-partitions loaded back from them."""

    def __init__(self, cluster: CoordinatorCluster) -> None:
        self.cluster = cluster
        self.keys: dict[Key, PersistedState] = {}

    @property
    def records_per_snapshot(self) -> int:
        value = self.cluster.config.value("share.coordinator.snapshot.update.records.per.snapshot")[0]
        return int(value) if value not in (None, "") else 500

    def partition_for(self, group_id: str, topic_id: uuid.UUID, partition: int) -> int:
        topic = self.cluster.share_state_topic()
        return partition_for(f"{group_id}:{kafka_uuid(topic_id)}:{partition}", len(topic.partitions))

    def _key(self, sp: SharePartition) -> Key | None:
        topic = self.cluster.topics.get(sp.topic)
        return None if topic is None else (sp.group_id, topic.topic_id, sp.partition)

    def _append(self, key: Key, record_type: int, value: bytes | None) -> int:
        """One record at the leader of the key's partition, and its offset; -1 while it has no leader (the write
        fails, as the persister's would, and the state stays in memory only)."""
        c = self.cluster
        partition = c.partition(SHARE_STATE_TOPIC, self.partition_for(*key))
        if partition is None or not partition.online:
            return -1
        mod = share_snapshot if record_type == share_snapshot.RECORD_TYPE else share_update
        k = _I16(record_type) + build_bytes(mod.KEY, {"group_id": key[0], "topic_id": key[1], "partition": key[2]})
        now = c.clock.now_ms()
        offset = partition.log.log_end_offset
        c.append_internal(partition, batch_of([(k, value)], now), now)
        return offset

    def _prune(self, index: int) -> None:
        """Records no key needs any more (before every live key's last snapshot) deleted, as Kafka's share
        coordinator prunes its partitions with DeleteRecords; here at each snapshot, not on
        `share.coordinator.state.topic.prune.interval.ms`."""
        partition = self.cluster.partition(SHARE_STATE_TOPIC, index)
        if partition is None or not partition.online:
            return
        needed = min((st.snapshot_offset for k, st in self.keys.items()
                      if st.snapshot_offset >= 0 and self.partition_for(*k) == index),
                     default=partition.log.high_watermark)
        if needed > partition.log.log_start_offset:
            self.cluster.delete_records(partition, needed)

    @staticmethod
    def view_of(sp: SharePartition, before: View) -> View:
        """What the share-partition's leader would persist now: every in-flight offset from the SPSO with a
        state; an acquired one as it was last persisted (acquisition is never written)."""
        view: View = {}
        for offset, r in sp.records.items():
            if offset < sp.start_offset:
                continue
            if r.state == RecordState.ACQUIRED:
                if offset in before:
                    view[offset] = before[offset]
            else:
                view[offset] = (int(r.state), r.delivery_count)
        return view

    def _leader_epoch(self, sp: SharePartition) -> int:
        p = self.cluster.partition(sp.topic, sp.partition)
        return p.leader_epoch if p is not None else 0

    def write(self, sp: SharePartition, state_epoch_bump: bool = False) -> None:
        """The share-partition's state written if it changed: a ShareSnapshot first and every
        `records_per_snapshot` updates (or with a new state epoch), a ShareUpdate of the changed batches
        between."""
        if sp.dead_letters:  # written before the state that archives them, as Kafka's leader does
            self.cluster.share_dead_letters.route(sp)
        key = self._key(sp)
        if key is None:
            return
        old = self.keys.get(key)
        now = self.cluster.clock.now_ms()
        leader_epoch = self._leader_epoch(sp)
        if old is None and not state_epoch_bump:
            # Kafka's group coordinator initializes the key first (InitializeShareGroupState: a snapshot with no
            # start offset yet, its state epoch the group's epoch); the share-partition's write is an update to it
            group = self.cluster.shares.groups.get(sp.group_id)
            init = PersistedState(-1, {}, state_epoch=group.group_epoch if group else 0, leader_epoch=leader_epoch,
                                  create_ms=now)
            snapshot = {"snapshot_epoch": 0, "state_epoch": init.state_epoch, "leader_epoch": leader_epoch,
                        "start_offset": -1, "create_timestamp": now, "write_timestamp": now, "state_batches": []}
            init.snapshot_offset = self._append(key, share_snapshot.RECORD_TYPE,
                                                _I16(0) + build_bytes(share_snapshot.VALUES[0], snapshot))
            if init.snapshot_offset < 0:
                return
            self.keys[key] = old = init
        view = self.view_of(sp, old.view if old is not None else {})
        if old is None or state_epoch_bump or old.updates >= self.records_per_snapshot:
            new = PersistedState(sp.start_offset, view,
                                 snapshot_epoch=0 if old is None else old.snapshot_epoch + 1,
                                 state_epoch=0 if old is None else old.state_epoch + (1 if state_epoch_bump else 0),
                                 leader_epoch=leader_epoch, create_ms=now if old is None or state_epoch_bump
                                 else old.create_ms)
            value = _I16(0) + build_bytes(share_snapshot.VALUES[0], {
                "snapshot_epoch": new.snapshot_epoch, "state_epoch": new.state_epoch,
                "leader_epoch": leader_epoch, "start_offset": sp.start_offset, "create_timestamp": new.create_ms,
                "write_timestamp": now, "delivery_complete_count": _complete(view),
                "state_batches": _batches(view)})
            new.snapshot_offset = self._append(key, share_snapshot.RECORD_TYPE, value)
            if new.snapshot_offset >= 0:
                self.keys[key] = new
                self._prune(self.partition_for(*key))
            return
        changed = {o: v for o, v in view.items() if old.view.get(o) != v}
        if not changed and sp.start_offset == old.start_offset:
            return
        value = _I16(0) + build_bytes(share_update.VALUES[0], {
            "snapshot_epoch": old.snapshot_epoch, "leader_epoch": leader_epoch, "start_offset": sp.start_offset,
            "delivery_complete_count": _complete(view), "state_batches": _batches(changed)})
        if self._append(key, share_update.RECORD_TYPE, value) >= 0:
            old.view, old.start_offset, old.leader_epoch = view, sp.start_offset, leader_epoch
            old.updates += 1

    def write_if_passed(self, sp: SharePartition, log_start: int) -> None:
        """After the log start passed the persisted SPSO (retention, DeleteRecords): the new SPSO written. An SPSO
        moved by acknowledgements is written with the next write, as Kafka's share-partition leader does."""
        key = self._key(sp)
        old = self.keys.get(key) if key is not None else None
        if old is not None and 0 <= old.start_offset < log_start:
            self.write(sp)

    def delete(self, group_id: str, topic_id: uuid.UUID, partition: int) -> None:
        """The key's state deleted: a ShareSnapshot tombstone."""
        key = (group_id, topic_id, partition)
        if self.keys.pop(key, None) is not None:
            self._append(key, share_snapshot.RECORD_TYPE, None)

    def delete_share_partition(self, sp: SharePartition) -> None:
        key = self._key(sp)
        if key is not None:
            self.delete(*key)

    # --- loading ----------------------------------------------------------------------------------------------
    def load(self, partition: Partition) -> dict[Key, PersistedState]:
        """The keys of this partition rebuilt from its leader's log (the last snapshot of a key and the updates
        after it; a tombstone forgets it), replacing what the coordinator held for them."""
        found: dict[Key, PersistedState | None] = {}
        for r in keyed_records(partition):
            offset = r.offset
            try:
                record_type, key, v = decode_share_record(r.key, r.value)
            except Exception:  # noqa: BLE001 - a record Kafka's loader would not know: skipped
                continue
            if v is None:
                found[key] = None
            elif record_type == share_snapshot.RECORD_TYPE:
                old = found.get(key)
                found[key] = PersistedState(
                    v.start_offset, {o: (b.delivery_state, b.delivery_count) for b in v.state_batches
                                     for o in range(b.first_offset, b.last_offset + 1)},
                    snapshot_epoch=v.snapshot_epoch, state_epoch=v.state_epoch, leader_epoch=v.leader_epoch,
                    create_ms=v.create_timestamp, snapshot_offset=offset,
                    updates=0 if old is None or old.updates >= self.records_per_snapshot else old.updates)
            else:
                st = found.get(key)
                if st is None:
                    continue
                for b in v.state_batches:
                    for o in range(b.first_offset, b.last_offset + 1):
                        st.view[o] = (b.delivery_state, b.delivery_count)
                if v.start_offset >= 0:
                    st.start_offset = v.start_offset
                st.view = {o: s for o, s in st.view.items() if o >= st.start_offset}
                st.leader_epoch = max(st.leader_epoch, v.leader_epoch)
                st.updates += 1
        index = partition.index
        for key in [k for k in self.keys if self.partition_for(*k) == index]:
            del self.keys[key]
        loaded = {k: v for k, v in found.items() if v is not None}
        self.keys.update(loaded)
        return loaded

    def load_all(self) -> None:
        """Every led partition of `__share_group_state` loaded, and the share-partitions of existing topics
        rebuilt from it, as share-partition leaders initialize from the persister after a restart."""
        c = self.cluster
        topic = c.topics.get(SHARE_STATE_TOPIC)
        for partition in topic.partitions if topic is not None else ():
            if not partition.online:
                continue
            for (group_id, topic_id, index), st in self.load(partition).items():
                t = c.topics_by_id.get(topic_id)
                if t is None or st.start_offset < 0:  # initialized, never started: starts as a new one
                    continue
                group = c.shares.groups.setdefault(group_id, ShareGroup(group_id))
                group.partitions[(t.name, index)] = self.share_partition(group_id, t.name, index, st)

    def leader_moved(self, topic: str, index: int) -> None:
        """A new leader of a topic partition: each share group's share-partition of it is initialized from its
        persisted state, as Kafka's new leader reads the persister (what the old leader's members held comes back
        available, their acknowledgements to it fail); one never written keeps its start offset with its
        acquired records released."""
        t = self.cluster.topics.get(topic)
        if t is None:
            return
        shares = self.cluster.shares
        for group in shares.groups.values():
            sp = group.partitions.get((topic, index))
            if sp is None:
                continue
            st = self.keys.get((group.group_id, t.topic_id, index))
            if st is not None and st.start_offset >= 0:
                group.partitions[(topic, index)] = self.share_partition(group.group_id, topic, index, st)
            else:
                for r in sp.records.values():
                    if r.state == RecordState.ACQUIRED:
                        r.state, r.member_id = RecordState.AVAILABLE, None

    @staticmethod
    def share_partition(group_id: str, topic: str, index: int, st: PersistedState) -> SharePartition:
        """A share-partition as its leader initializes it from the persisted state: offsets between the SPSO
        and the last persisted one without a state (acquired for the first time, never written) AVAILABLE with
        no delivery yet."""
        end = max([st.start_offset] + [o + 1 for o in st.view])
        records = {o: _InFlight(RecordState(st.view[o][0]) if o in st.view else RecordState.AVAILABLE,
                                st.view[o][1] if o in st.view else 0)
                   for o in range(st.start_offset, end)}
        return SharePartition(group_id, topic, index, st.start_offset, end, records)
