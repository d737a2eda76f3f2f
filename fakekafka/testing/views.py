"""Snapshots of a cluster's groups and transactions, the same from `Cluster` (in process) and `RemoteCluster`.

Frozen dataclasses a test can compare and print: a classic group with its members' decoded assignments, a KIP-848
consumer group with each member's epoch, current and target assignment, a KIP-1071 streams group with each
member's tasks, a transactional id with its history.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from fakekafka.model.group import Group
from fakekafka.model.streams_assignment import Tasks, TaskSet
from fakekafka.model.streams_group_metadata import StreamsGroup
from fakekafka.model.transactions import TransactionMetadata
from fakekafka.wire.messages.consumer_protocol_assignment import VERSIONS

__all__ = ["ConsumerGroupView", "ConsumerMemberView", "GroupView", "MemberView", "StreamsGroupView",
           "StreamsMemberView", "TransactionView", "decode_assignment"]


@dataclass(frozen=True)
class MemberView:
    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    assignment: dict[str, list[int]] | None
    """Decoded consumer-protocol assignment {topic: [partitions]}; None for other protocols."""
    raw_assignment: bytes


@dataclass(frozen=True)
class GroupView:
    group_id: str
    state: str
    generation_id: int
    protocol_type: str | None
    protocol: str | None
    leader: str | None
    members: list[MemberView]
    transitions: list[tuple[str, str]]
    """Every (from, to) state change of the group, oldest first."""

    @classmethod
    def of(cls, group: Group | None) -> GroupView | None:
        if group is None:
            return None
        return cls(group.group_id, group.state.value, group.generation_id, group.protocol_type,
                   group.protocol_name, group.leader_id,
                   [MemberView(m.member_id, m.group_instance_id, m.client_id, m.client_host,
                               decode_assignment(m.assignment) if group.protocol_type == "consumer" else None,
                               m.assignment) for m in group.members.values()],
                   [(f.value, t.value) for _, f, t, _ in group.history])

    def assignments(self) -> dict[str, dict[str, list[int]] | None]:
        return {m.member_id: m.assignment for m in self.members}


@dataclass(frozen=True)
class ConsumerMemberView:
    member_id: str
    instance_id: str | None
    client_id: str
    client_host: str
    member_epoch: int
    state: str
    """STABLE, UNREVOKED_PARTITIONS or UNRELEASED_PARTITIONS (the coordinator's reconciliation state; "" remote)."""
    subscribed_topic_names: list[str]
    subscribed_topic_regex: str | None
    assignment: dict[str, list[int]]
    """What the member owns now {topic: [partitions]}."""
    target_assignment: dict[str, list[int]]
    """What the coordinator's assignor wants it to own at the assignment epoch."""
    protocol: str = "consumer"
    """"classic" for a member of a mixed group that speaks JoinGroup/SyncGroup/Heartbeat."""


@dataclass(frozen=True)
class ConsumerGroupView:
    """A KIP-848 consumer group: epochs, and each member's current assignment next to its target."""

    group_id: str
    state: str
    group_epoch: int
    assignment_epoch: int
    assignor: str
    members: list[ConsumerMemberView]

    @classmethod
    def of(cls, summary: dict[str, Any] | None) -> ConsumerGroupView | None:
        if summary is None:
            return None
        return cls(summary["group_id"], summary["state"], summary["group_epoch"], summary["assignment_epoch"],
                   summary["assignor"], [
                       ConsumerMemberView(mid, m["instance_id"], m["client_id"], m["client_host"], m["member_epoch"],
                                          m["state"], m["subscribed_topic_names"], m["subscribed_topic_regex"],
                                          m["assignment"], m["target_assignment"], m.get("protocol", "consumer"))
                       for mid, m in summary["members"].items()])

    def assignments(self) -> dict[str, dict[str, list[int]]]:
        return {m.member_id: m.assignment for m in self.members}

    def lines(self) -> list[str]:
        """For reports: the group, then one line per member with its epoch, current and target assignment."""
        out = [f"  {self.group_id}: {self.state} (consumer protocol), group epoch {self.group_epoch}, "
               f"assignment epoch {self.assignment_epoch}, assignor {self.assignor}"]
        for m in self.members:
            target = "" if m.target_assignment == m.assignment else f", target {m.target_assignment}"
            kind = " classic protocol" if m.protocol == "classic" else ""
            out.append(f"    {m.member_id} ({m.client_id}, {m.client_host}{kind}) epoch {m.member_epoch} {m.state}: "
                       f"{m.assignment}{target}")
        return out


Tasks_ = dict[str, dict[str, list[int]]]
"""{"active"|"standby"|"warmup": {subtopology id: [partitions]}}."""


def _tasks(t: Tasks) -> Tasks_:
    def one(ts: TaskSet) -> dict[str, list[int]]:
        return {s: sorted(ps) for s, ps in sorted(ts.items()) if ps}
    return {"active": one(t.active), "standby": one(t.standby), "warmup": one(t.warmup)}


def _wire_tasks(a: Any) -> Tasks_:
    def one(ts: list[Any]) -> dict[str, list[int]]:
        return {t.subtopology_id: sorted(t.partitions) for t in sorted(ts, key=lambda t: t.subtopology_id)
                if t.partitions}
    return {"active": one(a.active_tasks), "standby": one(a.standby_tasks), "warmup": one(a.warmup_tasks)}


@dataclass(frozen=True)
class StreamsMemberView:
    member_id: str
    instance_id: str | None
    client_id: str
    client_host: str
    process_id: str
    member_epoch: int
    state: str
    """STABLE, UNREVOKED_TASKS or UNRELEASED_TASKS (the coordinator's reconciliation state; "" remote)."""
    tasks: Tasks_
    """What the member owns now: {"active"|"standby"|"warmup": {subtopology id: [partitions]}}."""
    target_tasks: Tasks_
    """What the task assignor wants it to own at the assignment epoch."""


@dataclass(frozen=True)
class StreamsGroupView:
    """A KIP-1071 streams group (group.protocol=streams): epochs, the topology's subtopologies, and each member's
    tasks next to its target."""

    group_id: str
    state: str
    group_epoch: int
    assignment_epoch: int
    topology_epoch: int | None
    """None before a member sent the topology."""
    subtopologies: dict[str, list[str]]
    """subtopology id -> the topics it reads (source and repartition source topics)."""
    members: list[StreamsMemberView]

    @classmethod
    def of(cls, group: StreamsGroup | None) -> StreamsGroupView | None:
        if group is None:
            return None
        t = group.topology
        return cls(group.group_id, group.state.value, group.group_epoch, group.assignment_epoch,
                   None if t is None else t.epoch,
                   {} if t is None else {s.subtopology_id: [*s.source_topics,
                                                            *(r.name for r in s.repartition_source_topics)]
                                         for s in t.subtopologies},
                   [StreamsMemberView(m.member_id, m.instance_id, m.client_id, m.client_host, m.process_id,
                                      m.member_epoch, m.state.value, _tasks(m.assigned),
                                      _tasks(group.target.get(m.member_id, Tasks())))
                    for m in group.members.values()])

    @classmethod
    def described(cls, g: Any) -> StreamsGroupView:
        """From a StreamsGroupDescribe response's group (a remote cluster)."""
        t = g.topology
        return cls(g.group_id, g.group_state, g.group_epoch, g.assignment_epoch, None if t is None else t.epoch,
                   {} if t is None else {s.subtopology_id: [*s.source_topics,
                                                            *(r.name for r in s.repartition_source_topics)]
                                         for s in t.subtopologies},
                   [StreamsMemberView(m.member_id, m.instance_id, m.client_id, m.client_host, m.process_id,
                                      m.member_epoch, "", _wire_tasks(m.assignment),
                                      _wire_tasks(m.target_assignment)) for m in g.members])

    def lines(self) -> list[str]:
        """For reports: the group, then one line per member with its epoch, tasks and target tasks."""
        topology = "no topology" if self.topology_epoch is None else f"topology epoch {self.topology_epoch}"
        out = [f"  {self.group_id}: {self.state} (streams protocol), group epoch {self.group_epoch}, "
               f"assignment epoch {self.assignment_epoch}, {topology}"]
        for m in self.members:
            target = "" if m.target_tasks == m.tasks else f", target {m.target_tasks}"
            out.append(f"    {m.member_id} ({m.client_id}, {m.client_host}, process {m.process_id}) epoch "
                       f"{m.member_epoch} {m.state}: {m.tasks}{target}")
        return out


@dataclass(frozen=True)
class TransactionView:
    transactional_id: str
    producer_id: int
    producer_epoch: int
    state: str
    partitions: list[tuple[str, int]]
    timeout_ms: int
    start_ms: int
    transitions: list[tuple[str, str]]
    """Every (from, to) state change, oldest first."""

    @classmethod
    def of(cls, txn: TransactionMetadata | None) -> TransactionView | None:
        if txn is None:
            return None
        return cls(txn.transactional_id, txn.producer_id, txn.producer_epoch, txn.state.value,
                   sorted(txn.partitions), txn.timeout_ms, txn.start_ms,
                   [(f.value, t.value) for _, f, t in txn.history])

    def line(self) -> str:
        parts = ", ".join(f"{t}-{p}" for t, p in self.partitions) or "no partitions"
        return (f"  {self.transactional_id}: {self.state}, producer {self.producer_id} epoch {self.producer_epoch}, "
                f"timeout {self.timeout_ms} ms, {parts}")


def decode_assignment(data: bytes) -> dict[str, list[int]]:
    """A consumer-protocol assignment (what the leader hands each member) as {topic: [partitions]}."""
    if len(data) < 2:
        return {}
    version = int.from_bytes(data[:2], "big", signed=True)
    body = VERSIONS[min(max(version, 0), len(VERSIONS) - 1)].parse(data[2:])
    return {t.topic: sorted(t.partitions) for t in body.assigned_partitions}
