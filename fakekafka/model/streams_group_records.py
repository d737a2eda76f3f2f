"""A streams group (KIP-1071) as Kafka 4.4's group coordinator keeps it in `__consumer_offsets`, and back. Pure.

Kafka's coordinator writes a streams group as records (the StreamsGroup* types of its schemas, all value v0):
StreamsGroupMemberMetadata (19) per member, StreamsGroupTopology (23), StreamsGroupMetadata (17, the group
epoch, the topology epoch it was validated at and the assignment configs), StreamsGroupTargetAssignmentMember
(21) per member, StreamsGroupTargetAssignmentMetadata (20, the assignment epoch and when it was computed) and
StreamsGroupCurrentMemberAssignment (22) per member. `records(group)` is the group as those records, in that
order (Kafka's order within one heartbeat's batch); `OffsetsTopic` writes the ones that differ from what it last
wrote, and tombstones (`TOMBSTONE_ORDER`) for what went. `load(...)` rebuilds the group from the records a
partition's log holds, as a coordinator loading the partition does: members come back with their tasks and a
fresh session, the topology is configured again against the topics.

The current assignment's active tasks carry their assignment epochs (the target epoch at which each came to the
member), as Kafka 4.4 writes them, and StreamsGroupMetadata the group's MetadataHash as Kafka computes it
(`fakekafka.model.metadata_hash`). Not written: the topology description epochs (there is no topology description
plugin).
"""

from __future__ import annotations

import struct
from typing import Any

from fakekafka.model.group_metadata import OffsetAndMetadata
from fakekafka.model.streams_assignment import MemberState, Tasks, TaskSet
from fakekafka.model.streams_group_metadata import StreamsGroup, StreamsMember
from fakekafka.model.streams_topology import InternalTopic, Subtopology, Topology
from fakekafka.wire.coordinator import streams_group_current_member_assignment as current_rec
from fakekafka.wire.coordinator import streams_group_member_metadata as member_rec
from fakekafka.wire.coordinator import streams_group_metadata as group_rec
from fakekafka.wire.coordinator import streams_group_target_assignment_member as target_member_rec
from fakekafka.wire.coordinator import streams_group_target_assignment_metadata as target_rec
from fakekafka.wire.coordinator import streams_group_topology as topology_rec
from fakekafka.wire.primitives import build_bytes

__all__ = ["RECORD_TYPES", "TOMBSTONE_ORDER", "load", "records"]

GROUP, MEMBER, TARGET, TARGET_MEMBER, CURRENT, TOPOLOGY = (
    group_rec.RECORD_TYPE, member_rec.RECORD_TYPE, target_rec.RECORD_TYPE, target_member_rec.RECORD_TYPE,
    current_rec.RECORD_TYPE, topology_rec.RECORD_TYPE)
RECORD_TYPES = frozenset({GROUP, MEMBER, TARGET, TARGET_MEMBER, CURRENT, TOPOLOGY})
TOMBSTONE_ORDER = {CURRENT: 0, TARGET_MEMBER: 1, TARGET: 2, MEMBER: 3, GROUP: 4, TOPOLOGY: 5}
"""Tombstones in Kafka's order: a member's current assignment, then its target, then its metadata; the group's
own records last."""
MEMBER_STATE_CODE = {MemberState.UNKNOWN: 0, MemberState.STABLE: 1, MemberState.UNREVOKED_TASKS: 2,
                     MemberState.UNRELEASED_TASKS: 3}
"""The state byte of the current assignment record: Kafka 4.4.0 writes 1 for a stable member (read back from its
log); the others follow its streams MemberState's order (not seen in Kafka's records here)."""
MEMBER_STATE = {v: k for k, v in MEMBER_STATE_CODE.items()}
_I16 = struct.Struct(">h").pack


def _key(mod: Any, **fields: Any) -> bytes:
    return _I16(mod.RECORD_TYPE) + build_bytes(mod.KEY, fields)


def _value(mod: Any, **fields: Any) -> bytes:
    return _I16(0) + build_bytes(mod.VALUES[0], fields)


def record_type(key: bytes) -> int:
    return struct.unpack_from(">h", key)[0]


def _tasks(ts: TaskSet) -> list[dict[str, Any]]:
    return [{"subtopology_id": s, "partitions": sorted(ps)} for s, ps in sorted(ts.items()) if ps]


def _tasks_with_epochs(ts: TaskSet, epochs: dict[tuple[str, int], int], default: int) -> list[dict[str, Any]]:
    """Active tasks as Kafka 4.4 writes them in the current assignment: partitions in order, each one's
    assignment epoch at the same index of the tagged AssignmentEpochs."""
    return [{"subtopology_id": s, "partitions": sorted(ps),
             "assignment_epochs": [epochs.get((s, p), default) for p in sorted(ps)]}
            for s, ps in sorted(ts.items()) if ps]


def _internal(t: InternalTopic) -> dict[str, Any]:
    return {"name": t.name, "partitions": t.partitions, "replication_factor": t.replication_factor,
            "topic_configs": [{"key": k, "value": v} for k, v in t.configs]}


def _topology(t: Topology) -> dict[str, Any]:
    return {"epoch": t.epoch, "subtopologies": [{
        "subtopology_id": s.subtopology_id, "source_topics": list(s.source_topics), "source_topic_regex": [],
        "state_changelog_topics": [_internal(c) for c in s.state_changelog_topics],
        "repartition_sink_topics": list(s.repartition_sink_topics),
        "repartition_source_topics": [_internal(r) for r in s.repartition_source_topics],
        "copartition_groups": [{"source_topics": list(src), "source_topic_regex": [],
                                "repartition_source_topics": list(rep)} for src, rep in s.copartition_groups]}
        for s in sorted(t.subtopologies, key=lambda s: s.subtopology_id)]}


def _member(m: StreamsMember) -> dict[str, Any]:
    return {"instance_id": m.instance_id, "rack_id": m.rack_id, "client_id": m.client_id,
            "client_host": m.client_host, "rebalance_timeout_ms": m.rebalance_timeout_ms,
            "topology_epoch": m.topology_epoch, "process_id": m.process_id,
            "user_endpoint": None if m.user_endpoint is None else {"host": m.user_endpoint[0],
                                                                   "port": m.user_endpoint[1]},
            "client_tags": [{"key": k, "value": v} for k, v in sorted(m.client_tags.items())]}


def records(group: StreamsGroup, num_standby_replicas: int) -> dict[bytes, bytes]:
    """The group as Kafka's records (key -> value), in the order Kafka writes them."""
    gid = group.group_id
    out: dict[bytes, bytes] = {}
    for mid, m in group.members.items():
        out[_key(member_rec, group_id=gid, member_id=mid)] = _value(member_rec, **_member(m))
    if group.topology is not None:
        out[_key(topology_rec, group_id=gid)] = _value(topology_rec, **_topology(group.topology))
    ready = group.topology is not None and group.configured is not None and group.configured.ready
    configs = [{"key": "num.standby.replicas", "value": str(num_standby_replicas)}]
    out[_key(group_rec, group_id=gid)] = _value(group_rec, epoch=group.group_epoch, metadata_hash=group.metadata_hash,
                                                validated_topology_epoch=group.topology.epoch if ready else -1,
                                                last_assignment_configs=configs)
    if group.initial_due is None:  # a new group's empty first target is not written, as Kafka 4.4's is not
        for mid, t in group.target.items():
            out[_key(target_member_rec, group_id=gid, member_id=mid)] = _value(
                target_member_rec, active_tasks=_tasks(t.active), standby_tasks=_tasks(t.standby),
                warmup_tasks=_tasks(t.warmup))
        out[_key(target_rec, group_id=gid)] = _value(target_rec, assignment_epoch=group.assignment_epoch,
                                                     assignment_timestamp=group.last_assignment_ms or 0)
    for mid, m in group.members.items():
        out[_key(current_rec, group_id=gid, member_id=mid)] = _value(
            current_rec, member_epoch=m.member_epoch, previous_member_epoch=m.previous_member_epoch,
            state=MEMBER_STATE_CODE[m.state],
            active_tasks=_tasks_with_epochs(m.assigned.active, m.active_epochs, m.member_epoch),
            standby_tasks=_tasks(m.assigned.standby), warmup_tasks=_tasks(m.assigned.warmup),
            active_tasks_pending_revocation=_tasks_with_epochs(m.pending_revocation, m.active_epochs, m.member_epoch),
            standby_tasks_pending_revocation=[],
            warmup_tasks_pending_revocation=[])
    return out


def _task_set(tasks: list[Any]) -> TaskSet:
    return {t.subtopology_id: frozenset(t.partitions) for t in tasks if t.partitions}


def _epochs_of(tasks: list[Any], member_epoch: int) -> dict[tuple[str, int], int]:
    """Each task's assignment epoch from the record; without them (a record written before Kafka kept them, or
    by an older fakekafka) or with a count that does not match, the member's epoch, as Kafka falls back."""
    out: dict[tuple[str, int], int] = {}
    for t in tasks:
        epochs = t.get("assignment_epochs") or []
        fallback = len(epochs) != len(t.partitions)
        for i, p in enumerate(t.partitions):
            out[(t.subtopology_id, p)] = member_epoch if fallback else epochs[i]
    return out


def _from_internal(t: Any) -> InternalTopic:
    return InternalTopic(t.name, t.partitions, t.replication_factor,
                         tuple((c.key, c.value) for c in t.topic_configs))


def load(group_id: str, found: dict[bytes, tuple[int, Any, Any]], offsets: dict[tuple[str, int], OffsetAndMetadata],
         now: int, session_timeout_ms: int) -> StreamsGroup | None:
    """The group rebuilt from its live records (key -> (record type, key fields, value fields)); None without
    its StreamsGroupMetadata (what is left of a group whose tombstones were cut short). Its members get a new
    session from `now`; the caller configures its topology against the topics."""
    if not any(rt == GROUP for rt, _, _ in found.values()):
        return None
    group = StreamsGroup(group_id, offsets=offsets)
    for rt, k, v in found.values():
        if rt == GROUP:
            group.group_epoch, group.metadata_hash = v.epoch, v.metadata_hash
        elif rt == TOPOLOGY:
            group.topology = Topology(v.epoch, tuple(Subtopology(
                s.subtopology_id, tuple(s.source_topics), tuple(s.repartition_sink_topics),
                tuple(_from_internal(c) for c in s.state_changelog_topics),
                tuple(_from_internal(r) for r in s.repartition_source_topics),
                tuple((tuple(g.source_topics), tuple(g.repartition_source_topics)) for g in s.copartition_groups))
                for s in v.subtopologies))
        elif rt == TARGET:
            group.assignment_epoch = v.assignment_epoch
            group.last_assignment_ms = v.get("assignment_timestamp") or None
        elif rt == TARGET_MEMBER:
            group.target[k.member_id] = Tasks(_task_set(v.active_tasks), _task_set(v.standby_tasks),
                                              _task_set(v.warmup_tasks))
        elif rt == MEMBER:
            m = group.members.setdefault(k.member_id, StreamsMember(k.member_id))
            m.instance_id, m.rack_id, m.client_id, m.client_host = v.instance_id, v.rack_id, v.client_id, \
                v.client_host
            m.rebalance_timeout_ms, m.topology_epoch, m.process_id = v.rebalance_timeout_ms, v.topology_epoch, \
                v.process_id
            m.user_endpoint = None if v.user_endpoint is None else (v.user_endpoint.host, v.user_endpoint.port)
            m.client_tags = {t.key: t.value for t in v.client_tags}
            m.session_deadline = now + session_timeout_ms
            if m.instance_id is not None:
                group.static_members[m.instance_id] = k.member_id
    for rt, k, v in found.values():
        if rt == CURRENT and k.member_id in group.members:
            m = group.members[k.member_id]
            m.member_epoch, m.previous_member_epoch = v.member_epoch, v.previous_member_epoch
            m.state = MEMBER_STATE.get(v.state, MemberState.UNKNOWN)
            m.assigned = Tasks(_task_set(v.active_tasks), _task_set(v.standby_tasks), _task_set(v.warmup_tasks))
            m.pending_revocation = _task_set(v.active_tasks_pending_revocation)
            m.active_epochs = _epochs_of(v.active_tasks, m.member_epoch) | _epochs_of(
                v.active_tasks_pending_revocation, m.member_epoch)
    if not group.members:
        group.empty_since = now
    return group
