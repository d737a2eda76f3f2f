"""`__consumer_offsets` as Kafka's group coordinator writes it: committed offsets and group metadata as records.

The coordinators (`model/group.py`, `model/consumer_group.py`) keep their state in memory and tell a `RecordSink`
what changed; `OffsetsTopic` is the sink the cluster gives them. It turns each change into Kafka 4.4's records
(key and value in the group coordinator's schemas, `wire/coordinator/`, each prefixed by its version as Kafka's
CoordinatorRecordSerde does: the key by its record type) and appends them, one batch per change, to the leader
of the group's partition, where followers replicate them and the log cleaner compacts them:

- OffsetCommit (type 1, value v4, as Kafka 4.4 writes it without an expire timestamp) for every committed offset,
  in one batch per OffsetCommit request; a TxnOffsetCommit's offsets in a transactional batch of the producer,
  which the transaction's COMMIT or ABORT marker settles; tombstones for offsets deleted (OffsetDelete, expiry,
  group deletion, topic deletion).
- GroupMetadata (type 2, value v3) for a classic group when JoinGroup creates it (empty, generation 0), when a
  rebalance completes (the leader's SyncGroup, with every member's subscription and assignment, or the join
  completing with no member), and a tombstone when the group is deleted or expires.
- For KIP-848 consumer groups, what Kafka's coordinator writes as the group changes: ConsumerGroupMetadata (3,
  the group epoch), ConsumerGroupMemberMetadata (5), ConsumerGroupTargetAssignmentMetadata (6),
  ConsumerGroupTargetAssignmentMember (7) and ConsumerGroupCurrentMemberAssignment (8), all v0, and their
  tombstones when members leave or the group goes. They are written from the difference between the group and
  what was last written for it, so a heartbeat that changes nothing writes nothing.
- For streams groups (KIP-1071), the StreamsGroup* records (`fakekafka.model.streams_group_records`), written
  likewise from the difference with what was last written.

`load(partition)` is the other way, as Kafka's coordinator loads a partition when it becomes its leader: the
groups of that partition are rebuilt from the new leader's replica of the log (what was not replicated to it is
lost, as with Kafka), open transactions' offsets staged again; requests parked on the old coordinator are
answered NOT_COORDINATOR. Loading is instant, so there is no COORDINATOR_LOAD_IN_PROGRESS. `load_all()` loads
every partition, as coordinators do at start-up (for a cluster whose logs are restored).

ConsumerGroupMetadata carries the group's MetadataHash as Kafka computes it (`fakekafka.model.metadata_hash`).
Not written (fakekafka has no such state): share-group records, ConsumerGroupRegularExpression (16) and
ConsumerGroupPartitionMetadata (4, which Kafka 4.4 no longer writes). The current assignment's AssignmentEpochs
(the member epoch each partition came at) are kept here, beside the coordinator's state, from one record to the
next. A mixed group's classic members carry their ClassicMemberMetadata; its upgrade writes the classic group's
tombstone then the consumer group's records, its downgrade the consumer group's tombstones then the
GroupMetadata, as Kafka's.
"""

from __future__ import annotations

import functools
import struct
import uuid
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

import crc32c

from fakekafka.model.consumer_group_metadata import (
    Assignment,
    ClassicProtocol,
    ConsumerGroup,
    ConsumerMember,
    MemberState,
)
from fakekafka.model.group_metadata import Group, GroupState, Member, OffsetAndMetadata, RecordSink, join_error
from fakekafka.model.internal_topics import OFFSETS_TOPIC
from fakekafka.model.streams_group_records import RECORD_TYPES as STREAMS_RECORD_TYPES
from fakekafka.model.streams_group_records import TOMBSTONE_ORDER as STREAMS_TOMBSTONE_ORDER
from fakekafka.model.streams_group_records import load as load_streams_group
from fakekafka.model.streams_group_records import record_type as streams_record_type
from fakekafka.model.streams_group_records import records as streams_group_records
from fakekafka.wire import ErrorCode
from fakekafka.wire.coordinator import RECORD_TYPES, record_module
from fakekafka.wire.coordinator import consumer_group_current_member_assignment as current_assignment_rec
from fakekafka.wire.coordinator import consumer_group_member_metadata as member_rec
from fakekafka.wire.coordinator import consumer_group_metadata as consumer_group_rec
from fakekafka.wire.coordinator import consumer_group_target_assignment_member as target_member_rec
from fakekafka.wire.coordinator import consumer_group_target_assignment_metadata as target_rec
from fakekafka.wire.coordinator import group_metadata as group_rec
from fakekafka.wire.coordinator import offset_commit as offset_rec
from fakekafka.wire.primitives import ZERO_UUID, build_bytes, uvarint_bytes
from fakekafka.wire.records import decode_batch

if TYPE_CHECKING:
    from collections.abc import Iterator

    from fakekafka.model.metadata import Partition
    from fakekafka.model.ports import CoordinatorCluster
    from fakekafka.wire.records import Record

__all__ = ["OffsetsTopic", "offset_commit_key", "offset_commit_value", "decode_record"]

OFFSET_COMMIT, GROUP_METADATA = offset_rec.RECORD_TYPE, group_rec.RECORD_TYPE
CONSUMER_GROUP, MEMBER, TARGET, TARGET_MEMBER, CURRENT = (
    consumer_group_rec.RECORD_TYPE, member_rec.RECORD_TYPE, target_rec.RECORD_TYPE, target_member_rec.RECORD_TYPE,
    current_assignment_rec.RECORD_TYPE)
OFFSET_COMMIT_VALUE_VERSION = 4
"""Kafka 4.4's GroupCoordinatorRecordHelpers.offsetCommitValueVersion without an expire timestamp."""
GROUP_METADATA_VALUE_VERSION = 3
MEMBER_STATE_CODE = {MemberState.STABLE: 0, MemberState.UNREVOKED_PARTITIONS: 1,
                     MemberState.UNRELEASED_PARTITIONS: 2}
"""Kafka 4.4's MemberState values, as the current assignment record holds them."""
MEMBER_STATE = {v: k for k, v in MEMBER_STATE_CODE.items()}
_KEY_OFFSET = struct.Struct(">h").pack(OFFSET_COMMIT)
_VALUE_HEAD = struct.Struct(">hqi").pack
_I16, _I32, _I64 = struct.Struct(">h").pack, struct.Struct(">i").pack, struct.Struct(">q").pack
_BATCH_HEAD, _BATCH_TAIL = struct.Struct(">qiibI").pack, struct.Struct(">hiqqqhii").pack
Records = list[tuple[bytes, bytes | None]]


def _string(s: str) -> bytes:
    b = s.encode()
    return _I16(len(b)) + b


def offset_commit_key(group_id: str, topic: str, partition: int) -> bytes:
    """OffsetCommitKey v0 behind its record type, built directly: commits are the hot path."""
    return _KEY_OFFSET + _string(group_id) + _string(topic) + _I32(partition)


def offset_commit_value(om: OffsetAndMetadata, topic_id: uuid.UUID | bytes | None = None) -> bytes:
    """OffsetCommitValue v4 (flexible: compact metadata, the topic id as tagged field 0 when known)."""
    meta = om.metadata.encode()
    if isinstance(topic_id, uuid.UUID):
        topic_id = topic_id.bytes if topic_id != ZERO_UUID else None
    tags = b"\x01\x00\x10" + topic_id if topic_id else b"\x00"
    return (_VALUE_HEAD(OFFSET_COMMIT_VALUE_VERSION, om.offset, om.leader_epoch) + uvarint_bytes(len(meta) + 1)
            + meta + _I64(om.commit_timestamp) + tags)


def _zigzag(n: int) -> bytes:
    return uvarint_bytes((n << 1) ^ (n >> 63))


def batch_of(records: Records, now: int, producer_id: int = -1, producer_epoch: int = -1) -> bytes:
    """One v2 batch of the coordinator's records, built directly (commits are frequent): uncompressed, every
    record stamped `now`, no headers; transactional when it belongs to a producer."""
    body = bytearray()
    for i, (k, v) in enumerate(records):
        rec = b"\x00\x00" + _zigzag(i) + _zigzag(len(k)) + k + (b"\x01" if v is None else _zigzag(len(v)) + v) + b"\x00"
        body += _zigzag(len(rec)) + rec
    after_crc = _BATCH_TAIL(0x10 if producer_id >= 0 else 0, len(records) - 1, now, now, producer_id, producer_epoch,
                            -1, len(records)) + body
    return _BATCH_HEAD(0, 9 + len(after_crc), -1, 2, crc32c.crc32c(after_crc)) + after_crc


def keyed_records(partition: Partition) -> Iterator[Record]:
    """The records with a key in the partition's leader log, in order, control batches left out: what a
    coordinator whose records are not transactional (transactions, share state) loads."""
    for batch in partition.log.batches:
        rb = decode_batch(bytes(batch))
        if not rb.header.is_control:
            yield from (r for r in rb.records if r.key is not None)


def _key(mod: Any, **fields: Any) -> bytes:
    return _cached_key(mod, tuple(fields.items()))


@functools.lru_cache(maxsize=1 << 16)
def _cached_key(mod: Any, fields: tuple[tuple[str, Any], ...]) -> bytes:
    """A record key encoded once: a group's heartbeats write the same few keys again and again."""
    return _I16(mod.RECORD_TYPE) + build_bytes(mod.KEY, dict(fields))


@functools.lru_cache(maxsize=4096)
def _scalar_value(mod: Any, fields: tuple[tuple[str, int], ...]) -> bytes:
    """A version-0 value of numbers only (a group's epoch, its target's epoch) encoded once: every heartbeat
    compares the group's own records with what was last written."""
    return _value(mod, 0, **dict(fields))


def _value(mod: Any, version: int, **fields: Any) -> bytes:
    return _I16(version) + build_bytes(mod.VALUES[version], fields)


def decode_record(key: bytes, value: bytes | None) -> tuple[int, Any, int, Any]:
    """(record type, key fields, value version, value fields or None for a tombstone) of one record, as
    Kafka's CoordinatorRecordSerde reads it. Raises KeyError for a record type Kafka does not know."""
    record_type = struct.unpack_from(">h", key)[0]
    if record_type not in RECORD_TYPES:
        raise KeyError(record_type)
    mod = record_module(record_type)
    k = mod.KEY.parse(key[2:])
    if value is None:
        return record_type, k, -1, None
    version = struct.unpack_from(">h", value)[0]
    return record_type, k, version, mod.VALUES[version].parse(value[2:])


_CURRENT_HEAD = struct.Struct(">hiib").pack
_TARGET_HEAD = _I16(0)


def _int32s(values: list[int]) -> bytes:
    """A compact array of int32 (the length plus one as an unsigned varint, then the values)."""
    return uvarint_bytes(len(values) + 1) + struct.pack(f">{len(values)}i", *values)


def _topic_partitions_bytes(a: dict[uuid.UUID, frozenset[int]],
                            epochs: dict[tuple[uuid.UUID, int], int] | None = None) -> bytes:
    """The records' TopicPartitions (topics by id's text, partitions sorted; with `epochs`, each partition's
    AssignmentEpochs: the epoch it came at) as the flexible array's bytes, built directly: every heartbeat that
    moves a member writes one or two of them (the unit tests check them against the generated builder)."""
    items = [(t, sorted(ps)) for t, ps in sorted(a.items(), key=lambda kv: str(kv[0])) if ps]
    out = [uvarint_bytes(len(items) + 1)]
    for t, ps in items:
        out += (t.bytes, _int32s(ps))
        if epochs is None:
            out.append(b"\x00")  # no tagged fields: AssignmentEpochs left at its default
        else:
            tagged = _int32s([epochs[(t, p)] for p in ps])
            out += (b"\x01\x00", uvarint_bytes(len(tagged)), tagged)  # one tagged field: 0, AssignmentEpochs
    return b"".join(out)


def current_assignment_value(member_epoch: int, previous_member_epoch: int, state: int,
                             assigned: dict[uuid.UUID, frozenset[int]],
                             epochs: dict[tuple[uuid.UUID, int], int],
                             pending_revocation: dict[uuid.UUID, frozenset[int]]) -> bytes:
    """ConsumerGroupCurrentMemberAssignmentValue v0 behind its version, built directly."""
    return (_CURRENT_HEAD(0, member_epoch, previous_member_epoch, state) + _topic_partitions_bytes(assigned, epochs)
            + _topic_partitions_bytes(pending_revocation) + b"\x00")


def target_member_value(assignment: dict[uuid.UUID, frozenset[int]]) -> bytes:
    """ConsumerGroupTargetAssignmentMemberValue v0 behind its version, built directly."""
    return _TARGET_HEAD + _topic_partitions_bytes(assignment) + b"\x00"


def member_metadata_value(m: ConsumerMember) -> bytes:
    """ConsumerGroupMemberMetadataValue v0 behind its version (Kafka 4.4 writes "" for no regex, and the null
    marker for a consumer member's classic metadata)."""
    classic: dict[str, Any] = {"classic_member_metadata": None if m.classic is None else {
        "session_timeout_ms": m.classic.session_timeout_ms,
        "supported_protocols": [{"name": n, "metadata": md} for n, md in m.classic.protocols]}}
    return _value(member_rec, 0, instance_id=m.instance_id, rack_id=m.rack_id, client_id=m.client_id,
                  client_host=m.client_host, subscribed_topic_names=list(m.subscribed_topic_names),
                  subscribed_topic_regex=m.subscribed_topic_regex or "",
                  rebalance_timeout_ms=m.rebalance_timeout_ms, server_assignor=m.server_assignor, **classic)


def _written_targets(encoded: dict[tuple[int, str], tuple[Any, bytes, bytes]]) -> dict[str, Any]:
    """Member id -> what its target record was made from: after a new target assignment, which target records
    changed or went is a look at these, not a walk over every record of the group."""
    return {mid: hit[0] for (record_type, mid), hit in encoded.items() if record_type == TARGET_MEMBER}


def _new_targets(target: dict[str, Assignment], written: dict[str, Any]) -> dict[str, Assignment]:
    """The target members not written as they are (`written`: member id -> the target its record was made
    from): the assignor hands the members it did not move their target object back, so a join into a big group
    encodes the few it moved, not every member's record."""
    return {mid: a for mid, a in target.items() if written.get(mid) is not a}


class OffsetsTopic(RecordSink):
    """The coordinators' records in `__consumer_offsets`, and the coordinators' state loaded back from them."""

    def __init__(self, cluster: CoordinatorCluster) -> None:
        self.cluster = cluster
        self._topic_id_bytes: dict[uuid.UUID, bytes] = {}
        self._encoded: dict[str, dict[tuple[int, str], tuple[Any, bytes, bytes]]] = {}
        self._assignment_epochs: dict[str, dict[str, dict[tuple[uuid.UUID, int], int]]] = {}
        """KIP-848 group id -> member id -> (topic id, partition) -> the member epoch it was assigned at."""
        """KIP-848 group id -> (record type, member id) -> (what the record was made from, key, value)."""
        self._written: dict[str, dict[bytes, bytes]] = {}
        """KIP-848 group id -> its records as last written (key -> value): what the next change is a diff to."""
        self._target_stamp: dict[str, tuple[int, int | None, int, int]] = {}
        """KIP-848 group id -> (assignment epoch, timestamp, identity and size of the target) as last written: when
        it moves, every target member's record is looked at again."""
        self._streams_written: dict[str, dict[bytes, bytes]] = {}
        """Streams group id -> its records as last written (key -> value)."""
        self._written_target_of: dict[str, tuple[dict[tuple[int, str], Any], dict[str, Any]]] = {}
        """KIP-848 group id -> (its `_encoded`, `_written_targets` of it), kept beside it."""

    # --- writing -----------------------------------------------------------------------------------------
    def _append(self, group_id: str, records: Records, producer_id: int = -1, producer_epoch: int = -1) -> None:
        """One batch of the group's records at the leader of its partition (none while it has no leader: the
        handlers answer NOT_COORDINATOR then, and a deadline firing meanwhile is not recorded)."""
        if not records:
            return
        c = self.cluster
        c.coordinator_for(group_id)  # creates the topic on first use, as Kafka does
        partition = c.partition(OFFSETS_TOPIC, c.offsets_partition_for(group_id))
        if partition is None or not partition.online:
            return
        now = c.clock.now_ms()
        c.append_internal(partition, batch_of(records, now, producer_id, producer_epoch), now)

    def offsets(self, group_id: str, changed: dict[tuple[str, int], OffsetAndMetadata | None],
                producer_id: int = -1, producer_epoch: int = -1) -> None:
        topics, ids = self.cluster.topics, self._topic_id_bytes
        records: Records = []
        for (topic, index), om in changed.items():
            key = offset_commit_key(group_id, topic, index)
            if om is None:
                records.append((key, None))
            else:
                t = topics.get(topic)
                topic_id = None
                if t is not None:
                    topic_id = ids.get(t.topic_id)
                    if topic_id is None:
                        topic_id = ids[t.topic_id] = t.topic_id.bytes
                records.append((key, offset_commit_value(om, topic_id)))
        self._append(group_id, records, producer_id, producer_epoch)

    def classic_group(self, group: Group, assignments: bool = True) -> None:
        """GroupMetadataValue v3 for the group as it is: members with their subscription to the chosen protocol
        and their assignment (empty before the leader's SyncGroup)."""
        stamp = group.history[-1][0] if group.history else self.cluster.clock.now_ms()
        members = []
        for m in group.members.values():
            members.append({
                "member_id": m.member_id, "group_instance_id": m.group_instance_id, "client_id": m.client_id,
                "client_host": m.client_host, "rebalance_timeout": m.rebalance_timeout_ms,
                "session_timeout": m.session_timeout_ms,
                "subscription": m.metadata_for(group.protocol_name) if group.protocol_name else b"",
                "assignment": m.assignment if assignments else b""})
        value = _value(group_rec, GROUP_METADATA_VALUE_VERSION, protocol_type=group.protocol_type or "",
                       generation=group.generation_id, protocol=group.protocol_name, leader=group.leader_id,
                       current_state_timestamp=stamp, members=members)
        self._append(group.group_id, [(_key(group_rec, group=group.group_id), value)])

    def group_removed(self, group_id: str, offsets: Iterable[tuple[str, int]]) -> None:
        """A classic group deleted or expired: tombstones for its offsets and its metadata, in one batch."""
        records: Records = [(offset_commit_key(group_id, t, p), None) for t, p in offsets]
        records.append((_key(group_rec, group=group_id), None))
        self._append(group_id, records)

    def _consumer_group_changes(self, group: ConsumerGroup, members: Iterable[str] | None) -> Records:
        """The records that differ from what was last written for the group (tombstones first, members' records
        before the group's own), in Kafka's order: member metadata, group epoch, target members, target metadata,
        current assignments. Only the `members` named are looked at (all when None), and every target member when
        the target assignment was recomputed: a heartbeat costs what it changed, not the group's size. Each
        record is encoded again only when what it holds changed."""
        gid = group.group_id
        written = self._written.setdefault(gid, {})
        encoded = self._encoded.setdefault(gid, {})
        kept = self._written_target_of.get(gid)
        if kept is None or kept[0] is not encoded:
            kept = self._written_target_of[gid] = (encoded, _written_targets(encoded))
        written_target_of = kept[1]
        epochs_of = self._assignment_epochs.setdefault(gid, {})
        stamp = (group.assignment_epoch, group.last_assignment_ms, id(group.target), len(group.target))
        all_targets = members is None or self._target_stamp.get(gid) != stamp
        self._target_stamp[gid] = stamp
        if members is None:
            ids = dict.fromkeys(group.members)
            ids.update(dict.fromkeys(mid for _, mid in encoded))
        else:
            ids = dict.fromkeys(sorted(members))
        gone: list[bytes] = []
        changed: dict[int, list[tuple[bytes, bytes]]] = {MEMBER: [], TARGET_MEMBER: [], CURRENT: []}

        def record(record_type: int, member_id: str, fingerprint: Any, encode: Any) -> None:
            hit = encoded.get((record_type, member_id))
            if hit is not None and (hit[0] is fingerprint or hit[0] == fingerprint):
                return
            key, value = encode()
            encoded[(record_type, member_id)] = (fingerprint, key, value)
            if record_type == TARGET_MEMBER:
                written_target_of[member_id] = fingerprint
            if written.get(key) != value:
                changed[record_type].append((key, value))

        def drop(record_type: int, member_id: str) -> None:
            hit = encoded.pop((record_type, member_id), None)
            if record_type == TARGET_MEMBER:
                written_target_of.pop(member_id, None)
            key = hit[1] if hit is not None else _key(record_module(record_type), group_id=gid, member_id=member_id)
            if written.get(key) is not None:
                gone.append(key)

        for mid in ids:
            m = group.members.get(mid)
            if m is None:
                drop(MEMBER, mid)
                drop(CURRENT, mid)
                epochs_of.pop(mid, None)
                continue
            record(MEMBER, mid, (m.instance_id, m.rack_id, m.client_id, m.client_host, m.subscribed_topic_names,
                                 m.subscribed_topic_regex, m.rebalance_timeout_ms, m.server_assignor, m.classic),
                   lambda m=m: (_key(member_rec, group_id=gid, member_id=m.member_id), member_metadata_value(m)))
        targets = _new_targets(group.target, written_target_of) if all_targets else \
            {mid: group.target[mid] for mid in ids if mid in group.target}
        if all_targets:
            if not written_target_of.keys() <= group.target.keys():
                for mid in [mid for mid in written_target_of if mid not in group.target]:
                    drop(TARGET_MEMBER, mid)
        else:
            for mid in ids:
                if mid not in group.target:
                    drop(TARGET_MEMBER, mid)
        for mid, a in targets.items():  # the target itself as its fingerprint: kept unchanged, it is the same object
            record(TARGET_MEMBER, mid, a, lambda mid=mid, a=a: (
                _key(target_member_rec, group_id=gid, member_id=mid), target_member_value(a)))
        for mid in ids:
            m = group.members.get(mid)
            if m is None:
                continue
            had = epochs_of.get(mid, {})

            def current(m: ConsumerMember = m, had: dict[tuple[uuid.UUID, int], int] = had) -> tuple[bytes, bytes]:
                # the epoch each assigned partition came to the member at (kept while the member keeps it)
                epochs = epochs_of[m.member_id] = {(t, p): had.get((t, p), m.member_epoch)
                                                   for t, ps in m.assigned.items() for p in ps}
                return (_key(current_assignment_rec, group_id=gid, member_id=m.member_id),
                        current_assignment_value(m.member_epoch, m.previous_member_epoch, MEMBER_STATE_CODE[m.state],
                                                 m.assigned, epochs, m.pending_revocation))

            held = (frozenset(m.assigned.items()), frozenset(m.pending_revocation.items()))
            record(CURRENT, mid, (m.member_epoch, m.previous_member_epoch, m.state, held), current)
        gone.sort(key=lambda k: -struct.unpack_from(">h", k)[0])  # current assignment ... target members
        records: Records = [(k, None) for k in gone]
        records += changed[MEMBER]
        key = _key(consumer_group_rec, group_id=gid)
        value = _scalar_value(consumer_group_rec,
                              (("epoch", group.group_epoch), ("metadata_hash", group.metadata_hash)))
        if written.get(key) != value:
            records.append((key, value))
        records += changed[TARGET_MEMBER]
        key = _key(target_rec, group_id=gid)
        value = _scalar_value(target_rec, (("assignment_epoch", group.assignment_epoch),
                                           ("assignment_timestamp", group.last_assignment_ms or 0)))
        if written.get(key) != value:
            records.append((key, value))
        records += changed[CURRENT]
        for k, v in records:
            if v is None:
                written.pop(k, None)
            else:
                written[k] = v
        return records

    def consumer_group(self, group: ConsumerGroup | None, group_id: str = "",
                       members: Iterable[str] | None = None) -> None:
        """The records a KIP-848 group's change calls for: new or changed ones, tombstones for what went (every
        record when the group is None: it was deleted), in Kafka's order (tombstones of members' records before
        the group's own, before what changed). `members`: the ids of the only members that may have changed
        (None: any of them)."""
        gid = group.group_id if group is not None else group_id
        if group is None:
            before = self._written.pop(gid, {})
            gone = sorted(before, key=lambda k: -struct.unpack_from(">h", k)[0])  # current assignment ... group epoch
            for state in (self._encoded, self._assignment_epochs, self._target_stamp, self._written_target_of):
                state.pop(gid, None)
            self._append(gid, [(k, None) for k in gone])
            return
        if gid not in self._target_stamp:
            members = None  # nothing written yet, or just loaded: every record
        self._append(gid, self._consumer_group_changes(group, members))

    def streams_group(self, group: Any, group_id: str = "") -> None:
        """The records a streams group's change calls for: tombstones for what went (every record when the group
        is None: it was deleted), then what is new or changed, in Kafka's order."""
        gid = group.group_id if group is not None else group_id
        before = self._streams_written.pop(gid, {})
        now: dict[bytes, bytes] = {}
        if group is not None:
            standby = self.cluster.streams_groups.setting(gid, "num.standby.replicas")
            now = self._streams_written[gid] = streams_group_records(group, standby)
        gone = sorted((k for k in before if k not in now),
                      key=lambda k: STREAMS_TOMBSTONE_ORDER[streams_record_type(k)])
        out: Records = [(k, None) for k in gone]
        out += [(k, v) for k, v in now.items() if before.get(k) != v]
        self._append(gid, out)

    # --- loading -----------------------------------------------------------------------------------------
    def load_all(self) -> None:
        """Every led partition of `__consumer_offsets` loaded from its leader's log, as each Kafka coordinator
        loads the partitions it leads at start-up (for a cluster whose logs were restored, e.g. from a data dir)."""
        topic = self.cluster.topics.get(OFFSETS_TOPIC)
        for partition in topic.partitions if topic is not None else ():
            if partition.online:
                self.load(partition)

    def load(self, partition: Partition) -> None:
        """The groups of this `__consumer_offsets` partition rebuilt from its leader's log, replacing what the
        coordinators held for them, as a new coordinator loads the partition."""
        c = self.cluster
        index = partition.index
        offsets: dict[str, dict[tuple[str, int], OffsetAndMetadata]] = {}
        classic: dict[str, Any] = {}
        consumer: dict[str, dict[bytes, tuple[int, Any, Any, bytes]]] = {}
        streams: dict[str, dict[bytes, tuple[int, Any, Any]]] = {}
        raw_streams: dict[str, dict[bytes, bytes]] = {}
        staged: dict[int, list[tuple[str, tuple[str, int], OffsetAndMetadata]]] = {}
        for batch in partition.log.batches:
            rb = decode_batch(bytes(batch))
            h = rb.header
            if h.is_control:
                settled = staged.pop(h.producer_id, [])
                key = rb.records[0].key if rb.records else None
                if key is not None and key[2:4] == b"\x00\x01":  # a COMMIT marker (control type 1)
                    for gid, tp, om in settled:
                        offsets.setdefault(gid, {})[tp] = om
                continue
            for r in rb.records:
                if r.key is None:
                    continue
                try:
                    record_type, k, _, v = decode_record(r.key, r.value)
                except Exception:  # noqa: BLE001 - a record this coordinator does not know: skipped, as Kafka's
                    continue
                if record_type in (0, OFFSET_COMMIT):
                    tp = (k.topic, k.partition)
                    om = None if v is None else OffsetAndMetadata(v.offset, v.get("leader_epoch", -1), v.metadata,
                                                                 v.commit_timestamp)
                    if h.is_transactional:
                        if om is not None:
                            staged.setdefault(h.producer_id, []).append((k.group, tp, om))
                    elif om is None:
                        offsets.get(k.group, {}).pop(tp, None)
                    else:
                        offsets.setdefault(k.group, {})[tp] = om
                elif record_type == GROUP_METADATA:
                    classic[k.group] = v
                    consumer.pop(k.group, None)
                elif record_type in (CONSUMER_GROUP, MEMBER, TARGET, TARGET_MEMBER, CURRENT):
                    records = consumer.setdefault(k.group_id, {})
                    if v is None:
                        records.pop(r.key, None)
                    else:
                        records[r.key] = (record_type, k, v, r.value)  # type: ignore[assignment]
                elif record_type in STREAMS_RECORD_TYPES:
                    if v is None:
                        streams.get(k.group_id, {}).pop(r.key, None)
                        raw_streams.get(k.group_id, {}).pop(r.key, None)
                    else:
                        streams.setdefault(k.group_id, {})[r.key] = (record_type, k, v)
                        raw_streams.setdefault(k.group_id, {})[r.key] = r.value
        groups, consumer_groups, streams_groups = c.groups, c.consumer_groups, c.streams_groups
        mine = [g for g in set(groups.groups) | set(consumer_groups.groups) | set(streams_groups.groups)
                if c.offsets_partition_for(g) == index]
        for gid in mine:
            old = groups.groups.pop(gid, None)
            for m in old.members.values() if old is not None else ():
                # requests the old coordinator parked are answered as Kafka's unloading coordinator answers them
                groups.resolve(m.join, join_error(m.member_id, ErrorCode.NOT_COORDINATOR))
                groups.resolve(m.sync, {"error_code": ErrorCode.NOT_COORDINATOR, "assignment": b""})
            consumer_groups.groups.pop(gid, None)
            streams_groups.groups.pop(gid, None)
            self._streams_written.pop(gid, None)
            self._written.pop(gid, None)
            self._encoded.pop(gid, None)
            self._written_target_of.pop(gid, None)
            self._assignment_epochs.pop(gid, None)
            self._target_stamp.pop(gid, None)
        now = c.clock.now_ms()
        for gid, records in consumer.items():
            if not any(rt == CONSUMER_GROUP for rt, *_ in records.values()):
                continue
            consumer_groups.groups[gid] = self._load_consumer_group(gid, records, offsets.pop(gid, {}), now)
            consumer_groups.watch(gid)
            self._written[gid] = {key: raw for key, (_, _, _, raw) in records.items()}
            # the members' records as written (fingerprints unknown: encoded again at their next change), so a
            # member that goes before its next heartbeat still gets its tombstones
            self._encoded[gid] = {(rt, k.member_id): (None, key, raw) for key, (rt, k, _, raw) in records.items()
                                  if rt in (MEMBER, TARGET_MEMBER, CURRENT)}
        for gid, found in streams.items():
            session = streams_groups.setting(gid, "session.timeout.ms")
            group = load_streams_group(gid, found, offsets.get(gid, {}), now, session)
            if group is None:
                continue
            offsets.pop(gid, None)
            streams_groups.loaded(group)
            self._streams_written[gid] = dict(raw_streams[gid])
        for gid, v in classic.items():
            if v is None and gid not in offsets:
                continue
            groups.groups[gid] = self._load_classic_group(gid, v, offsets.pop(gid, {}), now)
        for gid, om in offsets.items():
            if om:
                groups.groups[gid] = Group(gid, offsets=om, empty_since=now)
        for producer_id, entries in staged.items():
            for gid, tp, om in entries:
                group = consumer_groups.groups.get(gid) or streams_groups.groups.get(gid) or groups.groups.get(gid)
                if group is None:
                    group = groups.groups[gid] = Group(gid, empty_since=now)
                group.pending_txn_offsets.setdefault(producer_id, {})[tp] = om
        c.event("offsets_loaded", partition=index, groups=len(classic) + len(consumer) + len(streams))

    def _load_classic_group(self, gid: str, v: Any, offsets: dict[tuple[str, int], OffsetAndMetadata],
                            now: int) -> Group:
        group = Group(gid, offsets=offsets, empty_since=now)
        if v is None:
            return group
        group.generation_id = v.generation
        group.protocol_type = v.protocol_type or None
        group.protocol_name = v.protocol
        group.leader_id = v.leader
        for m in v.members:
            member = Member(m.member_id, m.get("group_instance_id"), m.client_id, m.client_host,
                            m.get("rebalance_timeout", -1), m.session_timeout, group.protocol_type or "",
                            [(v.protocol or "", m.subscription)], m.assignment,
                            heartbeat_deadline=now + m.session_timeout)
            group.members[m.member_id] = member
            if member.group_instance_id is not None:
                group.static_members[member.group_instance_id] = m.member_id
        if group.members:
            group.state = GroupState.STABLE
            group.empty_since = None
        return group

    def _load_consumer_group(self, gid: str, records: dict[bytes, tuple[int, Any, Any, bytes]],
                             offsets: dict[tuple[str, int], OffsetAndMetadata], now: int) -> ConsumerGroup:
        coordinator = self.cluster.consumer_groups
        group = ConsumerGroup(gid, offsets=offsets)
        session = coordinator.session_timeout_ms(gid)

        def assignment(tps: list[Any]) -> dict[uuid.UUID, frozenset[int]]:
            return {tp.topic_id: frozenset(tp.partitions) for tp in tps}
        for record_type, k, v, _ in records.values():
            if record_type == CONSUMER_GROUP:
                group.group_epoch, group.metadata_hash = v.epoch, v.metadata_hash
            elif record_type == TARGET:
                group.assignment_epoch = v.assignment_epoch
                group.last_assignment_ms = v.assignment_timestamp or None
            elif record_type == TARGET_MEMBER:
                group.target[k.member_id] = assignment(v.topic_partitions)
            elif record_type == MEMBER:
                m = group.members.setdefault(k.member_id, ConsumerMember(k.member_id))
                m.instance_id, m.rack_id, m.client_id, m.client_host = v.instance_id, v.rack_id, v.client_id, \
                    v.client_host
                m.subscribed_topic_names = tuple(v.subscribed_topic_names)
                m.subscribed_topic_regex = v.subscribed_topic_regex or None
                m.rebalance_timeout_ms = v.rebalance_timeout_ms
                m.server_assignor = v.server_assignor
                m.session_deadline = now + session
                cm = v.get("classic_member_metadata")
                if cm is not None and cm.supported_protocols:  # a classic member of a mixed group
                    m.classic = ClassicProtocol(cm.session_timeout_ms,
                                                tuple((p.name, bytes(p.metadata)) for p in cm.supported_protocols))
                    m.session_deadline = now + cm.session_timeout_ms
                if m.instance_id is not None:
                    group.static_members[m.instance_id] = k.member_id
                group.members[k.member_id] = m  # its subscription and assignor counted again
        for record_type, k, v, _ in records.values():
            if record_type == CURRENT and k.member_id in group.members:
                m = group.members[k.member_id]
                m.member_epoch, m.previous_member_epoch = v.member_epoch, v.previous_member_epoch
                m.state = MEMBER_STATE.get(v.state, MemberState.STABLE)
                m.assigned = assignment(v.assigned_partitions)
                m.pending_revocation = assignment(v.partitions_pending_revocation)
                group.members[k.member_id] = m  # its owned partitions indexed again
                self._assignment_epochs.setdefault(gid, {})[k.member_id] = {
                    (tp.topic_id, p): e for tp in v.assigned_partitions
                    for p, e in zip(tp.partitions, tp.assignment_epochs or [m.member_epoch] * len(tp.partitions),
                                    strict=True)}
        if not group.members:
            group.empty_since = now
        # the subscribed topics as they are now; the hash stays the one loaded, as Kafka's coordinator loads it
        group.subscription_metadata = coordinator.subscription_metadata(group)
        return group

