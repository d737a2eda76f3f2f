"""What a KIP-848 consumer group holds, and what a ConsumerGroupHeartbeat may ask. Pure data.

The state Kafka keeps per group and member (ConsumerGroup, ConsumerGroupMember), the request as the
coordinator reads it, and its validation with Kafka 4.4's messages. The coordinator that moves this state is
`fakekafka.model.consumer_group`; the assignment it computes, `fakekafka.model.consumer_assignment`.
"""

from __future__ import annotations

import base64
import re
import uuid
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from enum import Enum
from typing import Any

from fakekafka.model.group_metadata import OffsetAndMetadata
from fakekafka.wire import ErrorCode

__all__ = [
    "Assignment", "ClassicProtocol", "ConsumerGroup", "ConsumerGroupConfig", "ConsumerGroupState", "ConsumerMember",
    "HeartbeatError", "HeartbeatRequest", "LEAVE_GROUP_MEMBER_EPOCH", "LEAVE_GROUP_STATIC_MEMBER_EPOCH", "MemberState",
    "Members",
    "TopicInfo", "check_member_epoch", "compile_regex", "new_member_id", "validate_heartbeat",
]

LEAVE_GROUP_MEMBER_EPOCH = -1
LEAVE_GROUP_STATIC_MEMBER_EPOCH = -2

Assignment = dict[uuid.UUID, frozenset[int]]
"""topic id -> partitions."""


@dataclass(frozen=True)
class TopicInfo:
    topic_id: uuid.UUID
    name: str
    partitions: int


class ConsumerGroupState(Enum):
    """Kafka's names, as ConsumerGroupDescribe, DescribeGroups and ListGroups report them."""

    EMPTY = "Empty"
    ASSIGNING = "Assigning"
    """The group epoch is ahead of the target assignment's."""
    RECONCILING = "Reconciling"
    """A member has not reached the target assignment yet."""
    STABLE = "Stable"
    DEAD = "Dead"


class MemberState(Enum):
    STABLE = "STABLE"
    UNREVOKED_PARTITIONS = "UNREVOKED_PARTITIONS"
    """Waiting for the member to stop reporting partitions it must give up."""
    UNRELEASED_PARTITIONS = "UNRELEASED_PARTITIONS"
    """At the target epoch, but some of its target partitions are still owned by others."""


class HeartbeatError(Exception):
    """An error Kafka answers with a code and a message."""

    def __init__(self, code: ErrorCode, message: str | None = None) -> None:
        super().__init__(message or code.name)
        self.code = code
        self.message = message


def new_member_id() -> str:
    """A member id as Kafka makes one (Uuid.toString(): URL-safe base64 of 16 random bytes, no padding)."""
    return base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")


@dataclass
class ConsumerGroupConfig:
    session_timeout_ms: int = 45_000
    heartbeat_interval_ms: int = 5_000
    assignors: tuple[str, ...] = ("uniform", "range")
    """`group.consumer.assignors`: the first is the default."""
    max_size: int = 2**31 - 1
    assignment_interval_ms: int = 0
    """`group.consumer.assignment.interval.ms`: at most one target assignment per interval. Kafka 4.4's
    default is 1000; a test double assigns at once unless asked to wait (as with the initial rebalance delay)."""
    offsets_retention_ms: int = 7 * 24 * 3600 * 1000
    offsets_retention_check_interval_ms: int = 600_000
    offset_metadata_max_bytes: int = 4096
    migration_policy: str = "bidirectional"
    """`group.consumer.migration.policy`: whether a classic group may become a consumer group (upgrade) and back
    (downgrade); with "disabled" classic members may not join a consumer group either."""


@dataclass(frozen=True)
class ClassicProtocol:
    """What a classic member of a consumer group told JoinGroup: its session timeout and its protocols (the
    assignor names with the same subscription each), as Kafka keeps them (ClassicMemberMetadata)."""

    session_timeout_ms: int
    protocols: tuple[tuple[str, bytes], ...]

    @property
    def protocol_name(self) -> str:
        return self.protocols[0][0]

    @property
    def version(self) -> int:
        """The ConsumerProtocol version the member speaks: its assignment is written in it."""
        data = self.protocols[0][1]
        return int.from_bytes(data[:2], "big", signed=True) if len(data) >= 2 else 0


@dataclass
class ConsumerMember:
    member_id: str
    instance_id: str | None = None
    rack_id: str | None = None
    client_id: str = ""
    client_host: str = ""
    rebalance_timeout_ms: int = -1
    subscribed_topic_names: tuple[str, ...] = ()
    subscribed_topic_regex: str | None = None
    server_assignor: str | None = None
    state: MemberState = MemberState.STABLE
    member_epoch: int = 0
    previous_member_epoch: int = 0
    assigned: Assignment = field(default_factory=dict)
    pending_revocation: Assignment = field(default_factory=dict)
    session_deadline: int | None = None
    rebalance_deadline: int | None = None
    rebalance_epoch: int = 0
    """The epoch the rebalance timeout is for: it fences the member only if it is still at that epoch."""
    classic: ClassicProtocol | None = None
    """Set for a member speaking the classic protocol (JoinGroup/SyncGroup/Heartbeat) in this consumer group
    (`fakekafka.model.mixed_groups`): its session timeout and JoinGroup protocols."""
    join_deadline: int | None = None
    """A classic member told to rejoin (REBALANCE_IN_PROGRESS) is fenced if its JoinGroup is not here by then."""
    sync_deadline: int | None = None
    """A classic member that joined is fenced if its SyncGroup is not here by then."""
    unconfirmed: bool = False
    """It was sent an assignment it has not yet reported owning: a heartbeat of it that reports nothing owned
    is answered with the assignment again (`ConsumerGroupCoordinator`; Kafka sends it once)."""

    def copy_with(self, **changes: Any) -> ConsumerMember:
        """A copy with `changes`: what dataclasses.replace makes (the fields are all init fields, with no
        __post_init__), without its walk over every field, which a heartbeat paid two or three times."""
        copy = object.__new__(ConsumerMember)
        copy.__dict__ = {**self.__dict__, **changes}
        return copy

    def is_reconciled_to(self, epoch: int) -> bool:
        return self.state == MemberState.STABLE and self.member_epoch == epoch

    def owned(self) -> Assignment:
        """Assigned and still-to-be-revoked partitions: no one else may have them yet."""
        out = dict(self.assigned)
        for t, ps in self.pending_revocation.items():
            out[t] = out.get(t, frozenset()) | ps
        return out


Subscription = tuple[tuple[str, ...], str | None]
"""A member's subscription: (topic names, regular expression)."""


class Members(dict[str, ConsumerMember]):
    """A group's members by id, with who owns each partition (assigned or still to be revoked) kept beside them, as
    Kafka's ConsumerGroup keeps its partition epochs: reconciling a member looks up the owners of its partitions
    instead of walking the group. Beside them too, how many members share each subscription and each server
    assignor: a join reads those instead of walking the group. A member changed in place is stored again
    (`members[id] = member`)."""

    def __init__(self) -> None:
        super().__init__()
        self.owners: dict[tuple[uuid.UUID, int], dict[str, None]] = {}
        """(topic id, partition) -> the ids of the members that own it (one, but for a moment in a mixed group)."""
        self._indexed: dict[str, tuple[Assignment, Assignment, list[tuple[uuid.UUID, int]]]] = {}
        """member id -> the assigned and pending-revocation maps its owners entries were made from, and those."""
        self.subscriptions: dict[Subscription, int] = {}
        """Each subscription of a member -> how many members have it (a group's members mostly share one)."""
        self.assignors: dict[str, int] = {}
        """Each server assignor a member names -> how many members name it."""
        self._counted: dict[str, tuple[Subscription, str | None]] = {}

    def _drop_owner(self, member_id: str, tps: list[tuple[uuid.UUID, int]]) -> None:
        for tp in tps:
            ids = self.owners.get(tp)
            if ids is not None:
                ids.pop(member_id, None)
                if not ids:
                    del self.owners[tp]

    def _unindex(self, member_id: str) -> None:
        self._drop_owner(member_id, self._indexed.pop(member_id, (None, None, []))[2])
        counted = self._counted.pop(member_id, None)
        if counted is not None:
            self._uncount(counted)

    def _uncount(self, counted: tuple[Subscription, str | None]) -> None:
        _less(self.subscriptions, counted[0])
        if counted[1]:
            _less(self.assignors, counted[1])

    def _index(self, member_id: str, member: ConsumerMember) -> None:
        """Its owners entries made again only when its assigned or pending maps are other objects (those maps are
        never changed in place: a heartbeat that changes nothing keeps them); its counts moved when they changed."""
        was = self._indexed.get(member_id)
        if was is None or was[0] is not member.assigned or was[1] is not member.pending_revocation:
            if was is not None:
                self._drop_owner(member_id, was[2])
            tps = [(t, p) for a in (member.assigned, member.pending_revocation) for t, ps in a.items() for p in ps]
            self._indexed[member_id] = (member.assigned, member.pending_revocation, tps)
            for tp in tps:
                self.owners.setdefault(tp, {})[member_id] = None
        counted = (member.subscribed_topic_names, member.subscribed_topic_regex), member.server_assignor
        was_counted = self._counted.get(member_id)
        if counted != was_counted:
            if was_counted is not None:
                self._uncount(was_counted)
            self._counted[member_id] = counted
            self.subscriptions[counted[0]] = self.subscriptions.get(counted[0], 0) + 1
            if counted[1]:
                self.assignors[counted[1]] = self.assignors.get(counted[1], 0) + 1

    def __setitem__(self, member_id: str, member: ConsumerMember) -> None:
        super().__setitem__(member_id, member)
        self._index(member_id, member)

    def __delitem__(self, member_id: str) -> None:
        super().__delitem__(member_id)
        self._unindex(member_id)

    def pop(self, member_id: str, *default: ConsumerMember | None) -> ConsumerMember | None:  # type: ignore[override]
        if member_id in self:
            self._unindex(member_id)
        return super().pop(member_id, *default)

    def setdefault(self, member_id: str, member: ConsumerMember) -> ConsumerMember:  # type: ignore[override]
        if member_id not in self:
            self[member_id] = member
        return self[member_id]

    def clear(self) -> None:
        super().clear()
        self.owners.clear()
        self._indexed.clear()
        self.subscriptions.clear()
        self.assignors.clear()
        self._counted.clear()

    def update(self, *args: object, **kwargs: object) -> None:  # type: ignore[override]
        for k, v in dict(*args, **kwargs).items():  # type: ignore[arg-type]
            self[k] = v


def _less(counts: dict[Any, int], key: object) -> None:
    n = counts[key] - 1
    if n:
        counts[key] = n
    else:
        del counts[key]


@dataclass
class ConsumerGroup:
    group_id: str
    group_epoch: int = 0
    assignment_epoch: int = 0
    members: Members = field(default_factory=Members)
    static_members: dict[str, str] = field(default_factory=dict)
    """instance id -> member id."""
    target: dict[str, Assignment] = field(default_factory=dict)
    """member id -> its target assignment at `assignment_epoch`."""
    subscription_metadata: dict[str, tuple[uuid.UUID, int] | None] = field(default_factory=dict)
    """What the last group epoch was computed from: subscribed topic -> (id, partitions), None if it does not
    exist."""
    metadata_hash: int = 0
    """Kafka's hash of the subscribed topics' metadata (`fakekafka.model.metadata_hash`), as last computed: written
    in ConsumerGroupMetadata's MetadataHash."""
    resolved_regexes: dict[str, frozenset[str]] = field(default_factory=dict)
    regex_describable: dict[str, Callable[[str], bool]] = field(default_factory=dict)
    """regex -> which topics it may resolve to: those the member that last heartbeated with it may DESCRIBE (as
    Kafka 4.4 resolves a regex with the authorizer and the context of the heartbeat that refreshed it)."""
    offsets: dict[tuple[str, int], OffsetAndMetadata] = field(default_factory=dict)
    pending_txn_offsets: dict[int, dict[tuple[str, int], OffsetAndMetadata]] = field(default_factory=dict)
    empty_since: int | None = None
    last_assignment_ms: int | None = None
    """When the target assignment was last computed (None: never, or emptied: the next one is computed at once)."""
    history: list[tuple[int, str, int, int]] = field(default_factory=list)
    """(time, what, group epoch, assignment epoch) of every epoch change, for tests."""

    @property
    def state(self) -> ConsumerGroupState:
        if not self.members:
            return ConsumerGroupState.EMPTY
        if self.group_epoch > self.assignment_epoch:
            return ConsumerGroupState.ASSIGNING
        if any(not m.is_reconciled_to(self.assignment_epoch) for m in self.members.values()):
            return ConsumerGroupState.RECONCILING
        return ConsumerGroupState.STABLE

    def preferred_assignor(self, default: str) -> str:
        """The server assignor most members name (from the members' counts; a tie is settled by the walk over
        the members: the one named first)."""
        counts = self.members.assignors
        if len(counts) <= 1:
            return next(iter(counts), default)
        most = max(counts.values())
        if sum(1 for n in counts.values() if n == most) == 1:
            return next(a for a, n in counts.items() if n == most)
        return Counter(m.server_assignor for m in self.members.values() if m.server_assignor).most_common(1)[0][0]

    def partition_owner_epoch(self, topic_id: uuid.UUID, partition: int, exclude: str) -> int:
        """The epoch of the member (other than `exclude`) that still owns the partition, or -1."""
        for member_id in self.members.owners.get((topic_id, partition), ()):
            if member_id != exclude:
                return self.members[member_id].member_epoch
        return -1




@dataclass(frozen=True)
class HeartbeatRequest:
    group_id: str
    member_id: str
    member_epoch: int
    instance_id: str | None = None
    rack_id: str | None = None
    rebalance_timeout_ms: int = -1
    subscribed_topic_names: list[str] | None = None
    subscribed_topic_regex: str | None = None
    server_assignor: str | None = None
    owned: list[tuple[uuid.UUID, list[int]]] | None = None
    client_id: str = ""
    client_host: str = ""
    version: int = 1
    may_describe: Callable[[str], bool] | None = None
    """Whether the member may DESCRIBE a topic (None: every topic, no authorizer): bounds its regex."""


def validate_heartbeat(r: HeartbeatRequest, assignors: tuple[str, ...]) -> None:
    """INVALID_REQUEST (and the like) as a HeartbeatError, with Kafka 4.4's messages."""
    def invalid(message: str) -> HeartbeatError:
        return HeartbeatError(ErrorCode.INVALID_REQUEST, message)

    def empty(value: str | None) -> bool:
        return value is not None and not value.strip()

    if empty(r.group_id):
        raise invalid("GroupId can't be empty.")
    if empty(r.instance_id):
        raise invalid("InstanceId can't be empty.")
    if empty(r.rack_id):
        raise invalid("RackId can't be empty.")
    if r.version >= 1 and (r.member_id is None or not r.member_id.strip()):
        raise invalid("MemberId can't be empty.")
    if r.member_epoch > 0 or r.member_epoch == LEAVE_GROUP_MEMBER_EPOCH:
        if empty(r.member_id):
            raise invalid("MemberId can't be empty.")
    elif r.member_epoch == 0:
        if r.rebalance_timeout_ms == -1:
            raise invalid("RebalanceTimeoutMs must be provided in first request.")
        if r.owned is None or r.owned:
            raise invalid("TopicPartitions must be empty when (re-)joining.")
        if r.subscribed_topic_names is None and r.subscribed_topic_regex is None:
            raise invalid("SubscribedTopicNames or SubscribedTopicRegex must be set in first request.")
    elif r.member_epoch == LEAVE_GROUP_STATIC_MEMBER_EPOCH:
        if empty(r.member_id):
            raise invalid("MemberId can't be empty.")
        if r.instance_id is None:
            raise invalid("InstanceId can't be null.")
    else:
        raise invalid("MemberEpoch is invalid.")
    if r.subscribed_topic_regex is not None:
        compile_regex(r.subscribed_topic_regex)
    if r.server_assignor is not None and r.server_assignor not in assignors:
        raise HeartbeatError(ErrorCode.UNSUPPORTED_ASSIGNOR,
                             f"ServerAssignor {r.server_assignor} is not supported. Supported assignors: "
                             f"{', '.join(assignors)}.")


def check_member_epoch(member: ConsumerMember, r: HeartbeatRequest) -> None:
    """FENCED_MEMBER_EPOCH unless the request's epoch is the member's, 0 (a rejoin), or its previous one with
    a subset of its partitions (the response that moved it on was lost)."""
    if r.member_epoch == 0:
        return  # a (re)join: a known member starting over is accepted, as Kafka 4.4 does
    if r.member_epoch > member.member_epoch:
        raise HeartbeatError(ErrorCode.FENCED_MEMBER_EPOCH,
                             f"The consumer group member has a greater member epoch ({r.member_epoch}) than the "
                             f"one known by the group coordinator ({member.member_epoch}). The member must "
                             "abandon all its partitions and rejoin.")
    if r.member_epoch < member.member_epoch:
        subset = r.owned is not None and all(
            set(ps) <= member.assigned.get(t, frozenset()) for t, ps in r.owned)
        if r.member_epoch != member.previous_member_epoch or not subset:
            raise HeartbeatError(ErrorCode.FENCED_MEMBER_EPOCH,
                                 f"The consumer group member has a smaller member epoch ({r.member_epoch}) than "
                                 f"the one known by the group coordinator ({member.member_epoch}). The member "
                                 "must abandon all its partitions and rejoin.")


def compile_regex(pattern: str) -> re.Pattern[str]:
    """A subscription's regular expression, or INVALID_REGULAR_EXPRESSION as Kafka answers one RE2J refuses
    (Python's `re` stands in for RE2J; constructs RE2J lacks are refused here too)."""
    if re.search(r"\\[1-9]|\(\?[=!<]|\(\?P[=<]", pattern):
        raise HeartbeatError(ErrorCode.INVALID_REGULAR_EXPRESSION,
                             f"SubscribedTopicRegex `{pattern}` is not a valid regular expression: "
                             "backreferences and lookaround are not supported.")
    try:
        return re.compile(pattern)
    except re.error as e:
        raise HeartbeatError(ErrorCode.INVALID_REGULAR_EXPRESSION,
                             f"SubscribedTopicRegex `{pattern}` is not a valid regular expression: {e}.") from None
