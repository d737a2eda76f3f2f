"""What a streams group (KIP-1071) holds, and what a StreamsGroupHeartbeat may ask. Pure data.

The state Kafka keeps per streams group and member (StreamsGroup, StreamsGroupMember), the request as the
coordinator reads it, and its validation with Kafka 4.4's messages (GroupCoordinatorService's checks). The
coordinator that moves this state is `fakekafka.model.streams_group`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum
from typing import Any

from fakekafka.model.group_metadata import OffsetAndMetadata
from fakekafka.model.streams_assignment import MemberState, Tasks, TaskSet
from fakekafka.model.streams_topology import ConfiguredTopology, Topology
from fakekafka.wire import ErrorCode

LEAVE_GROUP_MEMBER_EPOCH = -1
LEAVE_GROUP_STATIC_MEMBER_EPOCH = -2


class StreamsGroupState(Enum):
    """Kafka's names, as StreamsGroupDescribe and ListGroups report them."""

    EMPTY = "Empty"
    NOT_READY = "NotReady"
    ASSIGNING = "Assigning"
    RECONCILING = "Reconciling"
    STABLE = "Stable"
    DEAD = "Dead"


class StreamsHeartbeatError(Exception):
    def __init__(self, code: ErrorCode, message: str | None = None) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


@dataclass
class StreamsGroupConfig:
    """The broker's `group.streams.*` settings (each but the sizes also a group config, `streams.*`)."""

    session_timeout_ms: int = 45_000
    heartbeat_interval_ms: int = 5_000
    num_standby_replicas: int = 0
    initial_rebalance_delay_ms: int = 3_000
    assignment_interval_ms: int = 1_000
    task_offset_interval_ms: int = 60_000
    acceptable_recovery_lag: int = 10_000
    max_size: int = 2**31 - 1
    offsets_retention_ms: int = 7 * 24 * 3600 * 1000
    offset_metadata_max_bytes: int = 4096


@dataclass
class StreamsHeartbeat:
    """A StreamsGroupHeartbeat as the coordinator reads it (tasks as subtopology -> partitions)."""

    group_id: str
    member_id: str
    member_epoch: int
    instance_id: str | None = None
    rack_id: str | None = None
    rebalance_timeout_ms: int = -1
    topology: Topology | None = None
    active: TaskSet | None = None
    standby: TaskSet | None = None
    warmup: TaskSet | None = None
    process_id: str | None = None
    user_endpoint: tuple[str, int] | None = None
    client_tags: dict[str, str] | None = None
    task_offsets: list[tuple[str, int, int]] | None = None
    task_end_offsets: list[tuple[str, int, int]] | None = None
    shutdown_application: bool = False
    endpoint_information_epoch: int = 0
    client_id: str = ""
    client_host: str = ""
    uses_regex: bool = False
    """Whether a subtopology names its source topics by regular expression (Kafka 4.4 refuses those)."""


@dataclass
class StreamsMember:
    member_id: str
    member_epoch: int = 0
    previous_member_epoch: int = 0
    state: MemberState = MemberState.STABLE
    instance_id: str | None = None
    rack_id: str | None = None
    client_id: str = ""
    client_host: str = ""
    rebalance_timeout_ms: int = 0
    topology_epoch: int = 0
    process_id: str = ""
    user_endpoint: tuple[str, int] | None = None
    client_tags: dict[str, str] = field(default_factory=dict)
    task_offsets: list[tuple[str, int, int]] = field(default_factory=list)
    task_end_offsets: list[tuple[str, int, int]] = field(default_factory=list)
    assigned: Tasks = field(default_factory=Tasks)
    pending_revocation: TaskSet = field(default_factory=dict)
    active_epochs: dict[tuple[str, int], int] = field(default_factory=dict)
    """Each active task's (and each active task pending revocation's) assignment epoch: the target assignment
    epoch at which it came to this member, kept while the member keeps it (Kafka's AssignmentEpochs)."""
    session_deadline: int | None = None
    rebalance_deadline: int | None = None
    classic: Any = None
    """Always None: streams groups have no classic members (the offsets code asks)."""


@dataclass
class StreamsGroup:
    group_id: str
    group_epoch: int = 0
    assignment_epoch: int = 0
    topology: Topology | None = None
    configured: ConfiguredTopology | None = None
    metadata: dict[str, int] = field(default_factory=dict)
    """What the last group epoch was computed from: topic -> partitions (absent: missing)."""
    metadata_hash: int = 0
    """Kafka's hash of those topics' metadata (`fakekafka.model.metadata_hash`), written in StreamsGroupMetadata."""
    members: dict[str, StreamsMember] = field(default_factory=dict)
    static_members: dict[str, str] = field(default_factory=dict)
    target: dict[str, Tasks] = field(default_factory=dict)
    offsets: dict[tuple[str, int], OffsetAndMetadata] = field(default_factory=dict)
    pending_txn_offsets: dict[int, dict[tuple[str, int], OffsetAndMetadata]] = field(default_factory=dict)
    empty_since: int | None = None
    initial_due: int | None = None
    """While the initial rebalance delay runs: when it ends (and the group epoch is bumped for the first
    assignment)."""
    last_assignment_ms: int | None = None
    endpoint_information_epoch: int = 0
    shutdown_requested: bool = False
    members_high_water: int = 0
    """The most members the group has held: Kafka keeps them in a TimelineHashMap whose table only grows, and its
    size decides the order they reach the task assignor in (`fakekafka.model.java_order.timeline_order`)."""

    @property
    def subscription_metadata(self) -> dict[str, int]:
        """The topics the group reads (OffsetDelete refuses to drop their offsets while it has members)."""
        if self.topology is None:
            return {}
        return {t: 0 for s in self.topology.subtopologies for t in
                (*s.source_topics, *(r.name for r in s.repartition_source_topics))}

    @property
    def state(self) -> StreamsGroupState:
        if not self.members:
            return StreamsGroupState.EMPTY
        if self.configured is None or not self.configured.ready:
            return StreamsGroupState.NOT_READY
        if self.group_epoch > self.assignment_epoch:
            return StreamsGroupState.ASSIGNING
        if any(m.member_epoch != self.assignment_epoch or m.state != MemberState.STABLE
               for m in self.members.values()):
            return StreamsGroupState.RECONCILING
        return StreamsGroupState.STABLE


def validate_heartbeat(r: StreamsHeartbeat) -> None:
    """GroupCoordinatorService's checks of a StreamsGroupHeartbeat, with Kafka 4.4's words."""
    def invalid(message: str) -> StreamsHeartbeatError:
        return StreamsHeartbeatError(ErrorCode.INVALID_REQUEST, message)
    if r.uses_regex:
        raise invalid("Regular expressions for source topics are not supported yet.")
    if r.member_id == "":
        raise invalid("MemberId can't be empty.")
    if r.group_id == "":
        raise invalid("GroupId can't be empty.")
    if r.instance_id == "":
        raise invalid("InstanceId can't be empty.")
    if r.rack_id == "":
        raise invalid("RackId can't be empty.")
    if r.member_epoch == 0:
        if r.rebalance_timeout_ms == -1:
            raise invalid("RebalanceTimeoutMs must be provided in first request.")
        for name, ts in (("ActiveTasks", r.active), ("StandbyTasks", r.standby), ("WarmupTasks", r.warmup)):
            if ts is None or any(ts.values()):
                raise invalid(f"{name} must be empty when (re-)joining.")
        if r.topology is None:
            raise invalid("Topology must be non-null when (re-)joining.")
        for s in r.topology.subtopologies:
            for c in s.state_changelog_topics:
                if c.partitions != 0:
                    raise StreamsHeartbeatError(
                        ErrorCode.STREAMS_INVALID_TOPOLOGY,
                        f"Changelog topic {c.name} must have an undefined partition count, but it is set to "
                        f"{c.partitions}.")
    elif r.member_epoch == LEAVE_GROUP_STATIC_MEMBER_EPOCH:
        if r.instance_id is None:
            raise invalid("InstanceId can't be null.")
    elif r.member_epoch < LEAVE_GROUP_STATIC_MEMBER_EPOCH:
        raise invalid(f"MemberEpoch is {r.member_epoch}, but must be greater than or equal to -2.")
    if r.active is not None or r.standby is not None or r.warmup is not None:
        if r.active is None or r.standby is None or r.warmup is None:
            raise invalid("If one task-type is non-null, all must be non-null.")
    if r.member_epoch != 0 and r.topology is not None:
        raise invalid("Topology can only be provided when (re-)joining.")
