"""The consumer group protocol of KIP-848: groups whose assignments the coordinator computes. Pure state.

Beside the classic coordinator (`fakekafka.model.group`), as in Kafka's group coordinator
(GroupMetadataManager, ConsumerGroup, CurrentAssignmentBuilder). A member heartbeats with its member epoch,
its subscription and the partitions it owns; the coordinator answers with its next epoch and assignment:

- the **group epoch** goes up whenever what the assignment depends on changes: a member joins or leaves or
  changes its subscription, a subscribed topic is created, deleted or grows partitions;
- the **target assignment** (computed by a server-side assignor, `uniform` or `range`) is recomputed when
  the group epoch is ahead of the **assignment epoch**;
- each member moves to the target one step at a time (**reconciliation**): partitions it must give up are
  revoked first (state UNREVOKED_PARTITIONS, its epoch unchanged) and only once it stops reporting them
  does it get the next epoch; partitions another member still owns are held back (UNRELEASED_PARTITIONS).

Sessions and rebalance timeouts are clock readings fired by `tick()`, so a `ManualClock` decides when a
member is fenced. Subscriptions by regular expression are resolved here with Python's `re` (Kafka uses
RE2J): both fully match topic names and agree on the common syntax (classes, alternation, `.*`, anchors);
RE2J refuses backreferences and lookaround, which `re` accepts, and `re` refuses possessive quantifiers
(before 3.11) and RE2J's `\\pN`-style classes without braces. Kafka resolves a new regex asynchronously (the
first heartbeat after it answers without its topics); here it is resolved within the heartbeat.
After each heartbeat, leave and timer the group is reported to `records` (the cluster's `OffsetsTopic` writes
the ConsumerGroup* records that changed), and commits and offset deletions too.
Members may also speak the classic protocol (a mixed group: `ConsumerMember.classic`); the upgrade from a classic
group, their JoinGroup/SyncGroup/Heartbeat and the downgrade back live in `fakekafka.model.mixed_groups`.
"""

from __future__ import annotations

import re
import uuid
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from enum import Enum
from typing import TYPE_CHECKING, Any

from fakekafka.model.clock import Clock
from fakekafka.model.group import (
    GroupCoordinator,
    OffsetAndMetadata,
    RecordSink,
    commit_offsets,
    complete_staged_offsets,
    stage_txn_offsets,
    staged_now,
)
from fakekafka.wire import ErrorCode

if TYPE_CHECKING:
    from fakekafka.model.mixed_groups import ClassicProtocol

__all__ = [
    "ASSIGNORS", "ConsumerGroup", "ConsumerGroupConfig", "ConsumerGroupCoordinator", "ConsumerGroupState",
    "ConsumerMember", "HeartbeatError", "MemberState", "TopicInfo", "new_member_id",
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
    import base64
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

    def is_reconciled_to(self, epoch: int) -> bool:
        return self.state == MemberState.STABLE and self.member_epoch == epoch

    def owned(self) -> Assignment:
        """Assigned and still-to-be-revoked partitions: no one else may have them yet."""
        out = dict(self.assigned)
        for t, ps in self.pending_revocation.items():
            out[t] = out.get(t, frozenset()) | ps
        return out


@dataclass
class ConsumerGroup:
    group_id: str
    group_epoch: int = 0
    assignment_epoch: int = 0
    members: dict[str, ConsumerMember] = field(default_factory=dict)
    static_members: dict[str, str] = field(default_factory=dict)
    """instance id -> member id."""
    target: dict[str, Assignment] = field(default_factory=dict)
    """member id -> its target assignment at `assignment_epoch`."""
    subscription_metadata: dict[str, tuple[uuid.UUID, int] | None] = field(default_factory=dict)
    """What the last group epoch was computed from: subscribed topic -> (id, partitions), None if it does not
    exist."""
    resolved_regexes: dict[str, frozenset[str]] = field(default_factory=dict)
    regex_describable: dict[str, Callable[[str], bool]] = field(default_factory=dict)
    """regex -> which topics it may resolve to: those the member that last heartbeated with it may DESCRIBE (as
    Kafka 4.4 resolves a regex with the authorizer and the context of the heartbeat that refreshed it)."""
    offsets: dict[tuple[str, int], OffsetAndMetadata] = field(default_factory=dict)
    pending_txn_offsets: dict[int, dict[tuple[str, int], OffsetAndMetadata]] = field(default_factory=dict)
    empty_since: int | None = None
    last_assignment_ms: int | None = None
    assignment_due: int | None = None
    """When a deferred target assignment (group.consumer.assignment.interval.ms) is computed."""
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
        counts = Counter(m.server_assignor for m in self.members.values() if m.server_assignor)
        return counts.most_common(1)[0][0] if counts else default

    def partition_owner_epoch(self, topic_id: uuid.UUID, partition: int, exclude: str) -> int:
        """The epoch of the member (other than `exclude`) that still owns the partition, or -1."""
        for m in self.members.values():
            if m.member_id != exclude and partition in m.owned().get(topic_id, frozenset()):
                return m.member_epoch
        return -1


# --- assignors ------------------------------------------------------------------------------------
AssignorInput = dict[str, tuple[str | None, frozenset[uuid.UUID]]]
"""member id -> (instance id, subscribed topic ids)."""


def _range_assign(members: AssignorInput, partitions: dict[uuid.UUID, int],
                  current: dict[str, Assignment]) -> dict[str, Assignment]:
    """Kafka's server-side `range`: per topic, its subscribers in order (static members by instance id
    first, then by member id) get consecutive ranges, the first ones one partition more."""
    order = sorted(members, key=lambda m: (members[m][0] is None, members[m][0] or m))
    out: dict[str, Assignment] = {m: {} for m in members}
    for topic_id in sorted(partitions, key=str):
        subs = [m for m in order if topic_id in members[m][1]]
        if not subs:
            continue
        n = partitions[topic_id]
        quota, extra = divmod(n, len(subs))
        start = 0
        for m in subs:
            count = quota + (1 if extra > 0 else 0)
            extra -= 1
            if count:
                out[m][topic_id] = frozenset(range(start, start + count))
            start += count
    return out


def _uniform_assign(members: AssignorInput, partitions: dict[uuid.UUID, int],
                    current: dict[str, Assignment]) -> dict[str, Assignment]:
    """Kafka's server-side `uniform`: partitions spread so that two members subscribed to a topic hold as
    many partitions as each other, give or take one, each keeping as many of its current target
    partitions as it can (sticky), so a rebalance moves few partitions."""
    order = sorted(members)
    subscribers = {t: [m for m in order if t in members[m][1]] for t in sorted(partitions, key=str)}
    counts = dict.fromkeys(order, 0)
    owner: dict[tuple[uuid.UUID, int], str] = {}
    # sticky: a partition stays with its current owner while that member is subscribed to its topic, so a
    # member leaving moves only its own partitions and one joining only what it needs (the balance below)
    for m, a in current.items():
        for t, ps in a.items():
            if m in members and t in members[m][1] and t in partitions:
                for p in ps:
                    if p < partitions[t]:
                        owner[(t, p)] = m
                        counts[m] += 1
    for t, subs in subscribers.items():  # the others (new partitions, a departed member's) to the least loaded
        for p in range(partitions[t]):
            if subs and (t, p) not in owner:
                m = min(subs, key=lambda x: (counts[x], x))
                owner[(t, p)] = m
                counts[m] += 1
    moved = True
    while moved:  # balance: no subscriber of a topic holds two more partitions than another
        moved = False
        # members in order, each over its share giving up its highest partitions first (what Kafka 4.4 did in
        # the scenarios: members joining a 6-partition topic one by one end with 0,1 / 3,4 / 2,5)
        for tp, m in sorted(owner.items(), key=lambda kv: (kv[1], str(kv[0][0]), -kv[0][1])):
            low = min(subscribers[tp[0]], key=lambda x: (counts[x], x))
            if owner[tp] == m and counts[m] - counts[low] >= 2:
                owner[tp] = low
                counts[m] -= 1
                counts[low] += 1
                moved = True
    out: dict[str, Assignment] = {m: {} for m in order}
    for (t, p), m in owner.items():
        out[m][t] = out[m].get(t, frozenset()) | {p}
    return out


ASSIGNORS: dict[str, Callable[[AssignorInput, dict[uuid.UUID, int], dict[str, Assignment]],
                              dict[str, Assignment]]] = {"uniform": _uniform_assign, "range": _range_assign}


def _assignment_str(a: Assignment, names: dict[uuid.UUID, str]) -> str:
    return ";".join(f"{names.get(t, t)}:{','.join(map(str, sorted(ps)))}"
                    for t, ps in sorted(a.items(), key=lambda kv: names.get(kv[0], str(kv[0]))) if ps)


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


class ConsumerGroupCoordinator:
    """The KIP-848 half of the group coordinator. `topics()` gives the cluster's topics by name (the
    metadata image the assignment is computed from); `group_config(group_id)` a group's dynamic configs
    (`consumer.session.timeout.ms`, `consumer.heartbeat.interval.ms`)."""

    def __init__(self, clock: Clock, config: ConsumerGroupConfig | None = None,
                 topics: Callable[[], dict[str, TopicInfo]] | None = None,
                 group_config: Callable[[str], dict[str, str]] | None = None,
                 notify: Callable[[object], None] | None = None, classic: GroupCoordinator | None = None) -> None:
        self.clock = clock
        self.config = config or ConsumerGroupConfig()
        self.classic = classic
        """The classic coordinator beside this one: a classic group is upgraded from it, downgraded into it."""
        self.groups: dict[str, ConsumerGroup] = {}
        self._topics = topics or dict
        self._group_config = group_config or (lambda _: {})
        self._notify = notify or (lambda _: None)
        self.records = RecordSink()
        """Told each change Kafka writes to `__consumer_offsets` (the cluster's `OffsetsTopic`)."""

    def _now(self) -> int:
        return self.clock.now_ms()

    def group(self, group_id: str) -> ConsumerGroup | None:
        return self.groups.get(group_id)

    def session_timeout_ms(self, group_id: str) -> int:
        return int(self._group_config(group_id).get("consumer.session.timeout.ms", self.config.session_timeout_ms))

    def assignment_interval_ms(self, group_id: str) -> int:
        return int(self._group_config(group_id).get("consumer.assignment.interval.ms",
                                                    self.config.assignment_interval_ms))

    def heartbeat_interval_ms(self, group_id: str) -> int:
        return int(self._group_config(group_id).get("consumer.heartbeat.interval.ms",
                                                    self.config.heartbeat_interval_ms))

    # --- validation -------------------------------------------------------------------------------
    def _validate(self, r: HeartbeatRequest) -> None:
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
        if r.server_assignor is not None and r.server_assignor not in self.config.assignors:
            raise HeartbeatError(ErrorCode.UNSUPPORTED_ASSIGNOR,
                                 f"ServerAssignor {r.server_assignor} is not supported. Supported assignors: "
                                 f"{', '.join(self.config.assignors)}.")

    # --- ConsumerGroupHeartbeat ------------------------------------------------------------------
    def heartbeat(self, req: HeartbeatRequest | None = None, *, is_classic_group: Callable[[str], str | None]
                  = lambda _: None, **kwargs: Any) -> dict[str, Any]:
        """One ConsumerGroupHeartbeat: the response's fields (error_code, error_message, member_id,
        member_epoch, heartbeat_interval_ms, assignment). `is_classic_group(group_id)` says whether the id
        is taken by a classic group: None if not, "empty" or "busy"."""
        r = req or HeartbeatRequest(**kwargs)
        try:
            self._validate(r)
            if r.member_epoch in (LEAVE_GROUP_MEMBER_EPOCH, LEAVE_GROUP_STATIC_MEMBER_EPOCH):
                out = self._leave(r)
            else:
                out = self._heartbeat(r, is_classic_group(r.group_id))
        except HeartbeatError as e:
            return {"error_code": e.code, "error_message": e.message, "member_id": None, "member_epoch": 0,
                    "heartbeat_interval_ms": 0, "assignment": None}
        group = self.groups.get(r.group_id)
        if group is not None:
            self.records.consumer_group(group)
        return out

    def _group_or_error(self, group_id: str) -> ConsumerGroup:
        group = self.groups.get(group_id)
        if group is None:
            raise HeartbeatError(ErrorCode.GROUP_ID_NOT_FOUND, f"Consumer group {group_id} not found.")
        return group

    def _heartbeat(self, r: HeartbeatRequest, classic: str | None) -> dict[str, Any]:
        now = self._now()
        joining = r.member_epoch == 0
        group = self.groups.get(r.group_id)
        upgrading = False
        if group is None:
            if joining and classic == "busy" and self.classic is not None:
                upgrading = True
                from fakekafka.model.mixed_groups import upgraded
                group = upgraded(self, self.classic, r.group_id)  # the classic members stay, as Kafka 4.4's
                classic = None
            if group is None and classic is not None and not (joining and classic == "empty"):
                raise HeartbeatError(ErrorCode.GROUP_ID_NOT_FOUND, f"Group {r.group_id} is not a consumer group.")
            if group is None and not joining:
                raise HeartbeatError(ErrorCode.GROUP_ID_NOT_FOUND, f"Consumer group {r.group_id} not found.")
            if group is None:
                group = ConsumerGroup(r.group_id, empty_since=now)
        member_id = r.member_id or new_member_id()
        if len(group.members) >= self.config.max_size and member_id not in group.members:
            raise HeartbeatError(ErrorCode.GROUP_MAX_SIZE_REACHED,
                                 f"The consumer group has reached its maximum capacity of {self.config.max_size} "
                                 "members.")
        replaced: ConsumerMember | None = None
        if r.instance_id is None:
            member = group.members.get(member_id)
            if member is None:
                if not joining:
                    raise HeartbeatError(ErrorCode.UNKNOWN_MEMBER_ID,
                                         f"Member {member_id} is not a member of group {r.group_id}.")
                member = ConsumerMember(member_id)
            elif joining:  # starts over: it gave up its partitions (it sends none when joining)
                member = replace(member, member_epoch=0, previous_member_epoch=0, state=MemberState.STABLE,
                                 assigned={}, pending_revocation={}, rebalance_deadline=None)
            self._check_epoch(member, r)
        else:
            existing_id = group.static_members.get(r.instance_id)
            existing = group.members.get(existing_id) if existing_id is not None else None
            if joining:
                if existing is None:
                    member = group.members.get(member_id) or ConsumerMember(member_id)
                    self._check_epoch(member, r)
                elif existing.member_id == member_id and existing.member_epoch != LEAVE_GROUP_STATIC_MEMBER_EPOCH:
                    member = existing
                    self._check_epoch(member, r)
                else:
                    if existing.member_epoch != LEAVE_GROUP_STATIC_MEMBER_EPOCH:
                        raise HeartbeatError(
                            ErrorCode.UNRELEASED_INSTANCE_ID,
                            f"Static member {member_id} with instance id {r.instance_id} cannot join the group "
                            f"because the instance id is owned by {existing.member_id} member.")
                    # the static member is back: a new member id takes its place, assignment and target
                    replaced = existing
                    member = replace(existing, member_id=member_id, member_epoch=0, previous_member_epoch=0,
                                     rebalance_deadline=None)
            else:
                if existing is None:
                    raise HeartbeatError(ErrorCode.UNKNOWN_MEMBER_ID, f"Instance id {r.instance_id} is unknown.")
                if existing.member_id != member_id:
                    raise HeartbeatError(ErrorCode.FENCED_INSTANCE_ID,
                                         f"Static member {member_id} with instance id {r.instance_id} was fenced by "
                                         f"member {existing.member_id}.")
                member = existing
                self._check_epoch(member, r)
        if group.group_id not in self.groups:
            if upgrading and self.classic is not None:
                from fakekafka.model.mixed_groups import retire_upgraded
                retire_upgraded(self.classic, group.group_id)  # the upgrade is final once the member is in
            self.groups[group.group_id] = group
        if replaced is not None:
            del group.members[replaced.member_id]
            group.target[member_id] = group.target.pop(replaced.member_id, {})
        updated = replace(member, client_id=r.client_id, client_host=r.client_host)
        if r.instance_id is not None:
            updated.instance_id = r.instance_id
        if r.rack_id is not None:
            updated.rack_id = r.rack_id
        if r.rebalance_timeout_ms != -1:
            updated.rebalance_timeout_ms = r.rebalance_timeout_ms
        if r.server_assignor is not None:
            updated.server_assignor = r.server_assignor
        if r.subscribed_topic_names is not None:
            updated.subscribed_topic_names = tuple(r.subscribed_topic_names)
        if r.subscribed_topic_regex is not None:
            updated.subscribed_topic_regex = r.subscribed_topic_regex or None
        if updated.subscribed_topic_regex and r.may_describe is not None:
            group.regex_describable[updated.subscribed_topic_regex] = r.may_describe
        is_new = member_id not in group.members
        subscription_changed = (is_new and replaced is None) or (
            updated.subscribed_topic_names != member.subscribed_topic_names
            or updated.subscribed_topic_regex != member.subscribed_topic_regex)
        self._store_member(group, member_id, updated,
                           ("member joined" if is_new else "subscription changed") if subscription_changed else None)
        self._maybe_assign(group)
        before = member.assigned if replaced is None and not is_new else None
        updated = self._reconcile(group, updated, r.owned)
        group.members[member_id] = updated
        updated.session_deadline = now + self.session_timeout_ms(group.group_id)
        full = joining or (r.rebalance_timeout_ms != -1 and r.subscribed_topic_names is not None
                           and r.owned is not None)
        out: dict[str, Any] = {"error_code": ErrorCode.NONE, "error_message": None, "member_id": member_id,
                               "member_epoch": updated.member_epoch,
                               "heartbeat_interval_ms": self.heartbeat_interval_ms(group.group_id),
                               "assignment": None}
        if full or before != updated.assigned:
            out["assignment"] = {"topic_partitions": [
                {"topic_id": t, "partitions": sorted(ps)}
                for t, ps in sorted(updated.assigned.items(), key=lambda kv: str(kv[0])) if ps]}
        return out

    @staticmethod
    def _check_epoch(member: ConsumerMember, r: HeartbeatRequest) -> None:
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

    def _store_member(self, group: ConsumerGroup, member_id: str, member: ConsumerMember, bump: str | None) -> None:
        """The member stored (with its static id) and the group epoch bumped as Kafka 4.4 counts: once when its
        subscription changed (`bump` says why), once more when the group's topics (by name, existing or not) or
        their partitions changed (a new group's first member with a subscription lands at epoch 2)."""
        group.members[member_id] = member
        if member.instance_id is not None:
            group.static_members[member.instance_id] = member_id
        group.empty_since = None
        if bump:
            self._bump(group, bump)
        metadata = self._subscription_metadata(group)
        if metadata != group.subscription_metadata:
            group.subscription_metadata = metadata
            self._bump(group, "subscribed topics changed")

    def _bump(self, group: ConsumerGroup, why: str) -> None:
        group.group_epoch += 1
        group.history.append((self._now(), why, group.group_epoch, group.assignment_epoch))

    # --- subscriptions and metadata ----------------------------------------------------------------
    def _member_topics(self, group: ConsumerGroup, member: ConsumerMember,
                       topics: dict[str, TopicInfo]) -> frozenset[str]:
        names = set(member.subscribed_topic_names)
        if member.subscribed_topic_regex:
            pattern = compile_regex(member.subscribed_topic_regex)
            describable = group.regex_describable.get(member.subscribed_topic_regex, lambda _: True)
            names |= {n for n in topics if not n.startswith("__") and pattern.fullmatch(n) and describable(n)}
        return frozenset(names)

    def _subscription_metadata(self, group: ConsumerGroup) -> dict[str, tuple[uuid.UUID, int] | None]:
        topics = self._topics()
        wanted: set[str] = set()
        for m in group.members.values():
            wanted |= self._member_topics(group, m, topics)
        return {n: (topics[n].topic_id, topics[n].partitions) if n in topics else None for n in sorted(wanted)}

    def metadata_changed(self) -> None:
        """Topics were created, deleted or grew partitions: each group whose subscribed topics changed gets a
        new group epoch (Kafka notices the new metadata image at the group's next heartbeat; here at once,
        so that describe shows it too)."""
        for group in self.groups.values():
            if not group.members:
                continue
            metadata = self._subscription_metadata(group)
            if metadata != group.subscription_metadata:
                group.subscription_metadata = metadata
                self._bump(group, "metadata changed")

    # --- target assignment ----------------------------------------------------------------------------
    def _maybe_assign(self, group: ConsumerGroup) -> None:
        if group.group_epoch <= group.assignment_epoch:
            return
        now = self._now()
        interval = self.assignment_interval_ms(group.group_id)
        if interval > 0 and group.last_assignment_ms is not None and now < group.last_assignment_ms + interval:
            group.assignment_due = group.last_assignment_ms + interval
            return
        self._assign(group)

    def _assign(self, group: ConsumerGroup) -> None:
        topics = self._topics()
        by_name = {n: info for n, info in topics.items()}
        inputs: AssignorInput = {}
        for m in group.members.values():
            ids = frozenset(by_name[n].topic_id for n in self._member_topics(group, m, topics) if n in by_name)
            inputs[m.member_id] = (m.instance_id, ids)
        partitions = {info.topic_id: info.partitions for info in topics.values()
                      if any(info.topic_id in ids for _, ids in inputs.values())}
        assignor = ASSIGNORS[group.preferred_assignor(self.config.assignors[0])]
        group.target = assignor(inputs, partitions, group.target) if inputs else {}
        group.assignment_epoch = group.group_epoch
        group.last_assignment_ms = self._now()
        group.assignment_due = None
        group.history.append((self._now(), "target assignment", group.group_epoch, group.assignment_epoch))

    # --- reconciliation (CurrentAssignmentBuilder) ----------------------------------------------------
    def _reconcile(self, group: ConsumerGroup, member: ConsumerMember,
                   owned: list[tuple[uuid.UUID, list[int]]] | None) -> ConsumerMember:
        target_epoch = group.assignment_epoch
        if member.is_reconciled_to(target_epoch) or member.member_epoch == LEAVE_GROUP_STATIC_MEMBER_EPOCH:
            return member
        target = group.target.get(member.member_id, {})

        def owns_any(revoking: Assignment) -> bool:
            if owned is None:
                return True
            return any(p in revoking.get(t, frozenset()) for t, ps in owned for p in ps)

        if member.state == MemberState.STABLE:
            if member.member_epoch == target_epoch:
                return member
            nxt = self._next(group, member, member.member_epoch, target, target_epoch, owns_any)
        elif member.state == MemberState.UNREVOKED_PARTITIONS:
            if owns_any(member.pending_revocation):
                return member
            nxt = self._next(group, member, member.member_epoch + 1, target, target_epoch, owns_any)
        else:
            nxt = self._next(group, member, member.member_epoch, target, target_epoch, owns_any)
        if nxt.state == MemberState.UNREVOKED_PARTITIONS:
            if member.state != MemberState.UNREVOKED_PARTITIONS or member.member_epoch != nxt.member_epoch \
                    or nxt.rebalance_deadline is None:
                nxt.rebalance_deadline = self._now() + max(nxt.rebalance_timeout_ms, 0)
                nxt.rebalance_epoch = nxt.member_epoch
        else:
            nxt.rebalance_deadline = None
        return nxt

    @staticmethod
    def _next(group: ConsumerGroup, member: ConsumerMember, epoch: int, target: Assignment, target_epoch: int,
              owns_any: Callable[[Assignment], bool]) -> ConsumerMember:
        unreleased = False
        assigned: Assignment = {}
        revoking: Assignment = {}
        pending: Assignment = {}
        for t in set(target) | set(member.assigned):
            want = target.get(t, frozenset())
            have = member.assigned.get(t, frozenset())
            keep = have & want
            gone = have - keep
            add = {p for p in want - keep if group.partition_owner_epoch(t, p, member.member_id) == -1}
            if len(add) < len(want - keep):
                unreleased = True
            if keep:
                assigned[t] = keep
            if gone:
                revoking[t] = gone
            if add:
                pending[t] = frozenset(add)
        if revoking and owns_any(revoking):
            return _with_epoch(member, epoch, MemberState.UNREVOKED_PARTITIONS, assigned, revoking)
        if pending:
            for t, ps in pending.items():
                assigned[t] = assigned.get(t, frozenset()) | ps
        state = MemberState.UNRELEASED_PARTITIONS if unreleased else MemberState.STABLE
        return _with_epoch(member, target_epoch, state, assigned, {})

    # --- leaving and fencing ----------------------------------------------------------------------
    def _leave(self, r: HeartbeatRequest) -> dict[str, Any]:
        group = self._group_or_error(r.group_id)
        out = {"error_code": ErrorCode.NONE, "error_message": None, "member_id": r.member_id,
               "member_epoch": r.member_epoch, "heartbeat_interval_ms": 0, "assignment": None}
        if r.instance_id is None:
            member = group.members.get(r.member_id)
            if member is None:
                raise HeartbeatError(ErrorCode.UNKNOWN_MEMBER_ID,
                                     f"Member {r.member_id} is not a member of group {r.group_id}.")
            self.fence(group, member, "member left")
            return out
        existing_id = group.static_members.get(r.instance_id)
        member = group.members.get(existing_id) if existing_id is not None else None
        if member is None:
            raise HeartbeatError(ErrorCode.UNKNOWN_MEMBER_ID, f"Instance id {r.instance_id} is unknown.")
        if member.member_id != r.member_id:
            raise HeartbeatError(ErrorCode.FENCED_INSTANCE_ID,
                                 f"Static member {r.member_id} with instance id {r.instance_id} was fenced by "
                                 f"member {member.member_id}.")
        if r.member_epoch == LEAVE_GROUP_STATIC_MEMBER_EPOCH:
            # gone for now: it keeps its partitions (nobody else gets them) until its session expires
            member.member_epoch = LEAVE_GROUP_STATIC_MEMBER_EPOCH
            member.pending_revocation = {}
            member.rebalance_deadline = None
            out["member_id"] = member.member_id
            return out
        self.fence(group, member, "static member left")
        return out

    def fence(self, group: ConsumerGroup, member: ConsumerMember, why: str) -> None:
        """Removes the member; the others get a new target assignment (a new group epoch). If only classic
        members would be left, the group goes back to being a classic group instead (a downgrade, as Kafka's)."""
        if self._maybe_downgrade(group, {member.member_id}):
            return
        group.members.pop(member.member_id, None)
        group.target.pop(member.member_id, None)
        if member.instance_id is not None and group.static_members.get(member.instance_id) == member.member_id:
            del group.static_members[member.instance_id]
        group.subscription_metadata = self._subscription_metadata(group)
        self._bump(group, why)
        if not group.members:
            self._emptied(group)

    def _emptied(self, group: ConsumerGroup) -> None:
        """The last member left: the (empty) target assignment is at the new group epoch at once, not computed by
        an assignor (Kafka 4.4 writes it with assignment timestamp 0; ConsumerGroupDescribe shows the epoch)."""
        now = self._now()
        group.empty_since = now
        group.target = {}
        group.assignment_epoch = group.group_epoch
        group.last_assignment_ms = group.assignment_due = None
        group.history.append((now, "target assignment", group.group_epoch, group.assignment_epoch))

    def leave_group(self, group: ConsumerGroup, members: list[tuple[str, str | None]]
                    ) -> list[tuple[str, str | None, ErrorCode]]:
        """LeaveGroup (the classic API) on a consumer group, as Kafka 4.4 serves it (an admin removing members):
        each (member id, instance id) removed, or UNKNOWN_MEMBER_ID / FENCED_INSTANCE_ID; one new group epoch
        for all of them."""
        out: list[tuple[str, str | None, ErrorCode]] = []
        removed: list[ConsumerMember] = []
        for member_id, instance_id in members:
            if instance_id is None:
                member = group.members.get(member_id)
            else:
                current = group.static_members.get(instance_id)
                member = group.members.get(current) if current is not None else None
                if member is not None and member_id and member_id != member.member_id:
                    out.append((member_id, instance_id, ErrorCode.FENCED_INSTANCE_ID))
                    continue
            if member is None or member in removed:
                out.append((member_id, instance_id, ErrorCode.UNKNOWN_MEMBER_ID))
                continue
            removed.append(member)
            out.append((member.member_id, instance_id, ErrorCode.NONE))
        if removed and self._maybe_downgrade(group, {m.member_id for m in removed}):
            return out
        for member in removed:
            group.members.pop(member.member_id, None)
            group.target.pop(member.member_id, None)
            if member.instance_id is not None and group.static_members.get(member.instance_id) == member.member_id:
                del group.static_members[member.instance_id]
        if removed:
            group.subscription_metadata = self._subscription_metadata(group)
            self._bump(group, "members removed (LeaveGroup)")
            if not group.members:
                self._emptied(group)
            self.records.consumer_group(group)
        return out

    def _maybe_downgrade(self, group: ConsumerGroup, leaving: set[str]) -> bool:
        """Whether the group became a classic group as the members `leaving` go (Kafka 4.4's online downgrade:
        only classic members left, `group.consumer.migration.policy` allows it)."""
        if self.classic is None:
            return False
        from fakekafka.model.mixed_groups import downgrade
        return downgrade(self, self.classic, group, leaving)

    def expire_member(self, group_id: str, member_id: str) -> bool:
        group = self.groups.get(group_id)
        member = group.members.get(member_id) if group else None
        if group is None or member is None:
            return False
        self.fence(group, member, "session expired")
        self.records.consumer_group(group)
        return True

    # --- offsets ------------------------------------------------------------------------------------
    def validate_commit(self, group: ConsumerGroup, member_id: str, member_epoch: int, version: int,
                        transactional: bool = False) -> ErrorCode:
        if member_epoch < 0 and not group.members:
            return ErrorCode.NONE
        member = group.members.get(member_id)
        if member is None:
            return ErrorCode.UNKNOWN_MEMBER_ID
        if not transactional and version < 9 and member.classic is None:
            return ErrorCode.UNSUPPORTED_VERSION
        if member_epoch != member.member_epoch:  # a classic member's generation is its member epoch
            return ErrorCode.STALE_MEMBER_EPOCH if member.classic is None else ErrorCode.ILLEGAL_GENERATION
        return ErrorCode.NONE

    def commit(self, group: ConsumerGroup, member_id: str, member_epoch: int, version: int,
               offsets: dict[tuple[str, int], tuple[int, int, str | None]]) -> dict[tuple[str, int], ErrorCode]:
        """OffsetCommit to a consumer group: from its members at their current epoch (v9+), or with epoch -1
        while it has no members."""
        code = self.validate_commit(group, member_id, member_epoch, version)
        if code != ErrorCode.NONE:
            return dict.fromkeys(offsets, code)
        out, stored = commit_offsets(group.offsets, offsets, self.config.offset_metadata_max_bytes, self._now())
        self.records.offsets(group.group_id, stored)
        return out

    def txn_commit(self, group: ConsumerGroup, producer_id: int, member_id: str, member_epoch: int,
                   offsets: dict[tuple[str, int], tuple[int, int, str | None]], producer_epoch: int = -1
                   ) -> dict[tuple[str, int], ErrorCode]:
        """TxnOffsetCommit to a consumer group: staged for the producer's transaction, visible once it commits.
        A producer naming no member (epoch -1) commits without member checks, as Kafka's; else the member and
        its epoch are checked: ILLEGAL_GENERATION for another epoch (not OffsetCommit's STALE_MEMBER_EPOCH), as
        Kafka 4.4 answers."""
        if member_id or member_epoch >= 0:
            member = group.members.get(member_id)
            if member is None:
                return dict.fromkeys(offsets, ErrorCode.UNKNOWN_MEMBER_ID)
            if member_epoch != member.member_epoch:  # Kafka 4.4 answers a transactional commit so (the sweep)
                return dict.fromkeys(offsets, ErrorCode.ILLEGAL_GENERATION)
        out = stage_txn_offsets(group.pending_txn_offsets, producer_id, offsets, self.config.offset_metadata_max_bytes,
                                self._now())
        self.records.offsets(group.group_id, staged_now(group.pending_txn_offsets, producer_id, out), producer_id,
                             producer_epoch)
        return out

    def complete_txn_offsets(self, producer_id: int, commit: bool, in_partition: Callable[[str], bool]) -> None:
        """A transaction marker reached a `__consumer_offsets` partition: the producer's staged offsets of the
        consumer groups it holds are committed or dropped."""
        for group in self.groups.values():
            if producer_id in group.pending_txn_offsets and in_partition(group.group_id):
                complete_staged_offsets(group.pending_txn_offsets, group.offsets, producer_id, commit, self._now())

    def has_pending_txn_offset(self, group_id: str, tp: tuple[str, int]) -> bool:
        group = self.groups.get(group_id)
        return group is not None and any(tp in staged for staged in group.pending_txn_offsets.values())

    def subscribed_topics(self, group: ConsumerGroup) -> set[str]:
        return set(group.subscription_metadata)

    def validate_fetch(self, group: ConsumerGroup, member_id: str | None, member_epoch: int) -> ErrorCode:
        if member_id is None and member_epoch < 0:
            return ErrorCode.NONE
        member = group.members.get(member_id or "")
        if member is None:
            return ErrorCode.UNKNOWN_MEMBER_ID
        if member_epoch != member.member_epoch:
            return ErrorCode.STALE_MEMBER_EPOCH if member.classic is None else ErrorCode.ILLEGAL_GENERATION
        return ErrorCode.NONE

    def delete_group(self, group_id: str) -> ErrorCode:
        group = self.groups.get(group_id)
        if group is None:
            return ErrorCode.GROUP_ID_NOT_FOUND
        if group.members:
            return ErrorCode.NON_EMPTY_GROUP
        del self.groups[group_id]
        self.records.offsets(group_id, dict.fromkeys(group.offsets))
        self.records.consumer_group(None, group_id)
        return ErrorCode.NONE

    def remove_partitions(self, topic: str) -> None:
        for group in list(self.groups.values()):
            gone = [tp for tp in group.offsets if tp[0] == topic]
            for tp in gone:
                del group.offsets[tp]
            if gone:
                self.records.offsets(group.group_id, dict.fromkeys(gone))

    # --- time ---------------------------------------------------------------------------------------
    def tick(self) -> None:
        now = self._now()
        for group in list(self.groups.values()):
            if group.assignment_due is not None and group.assignment_due <= now:
                self._assign(group)
            for m in list(group.members.values()):
                if self.groups.get(group.group_id) is not group:
                    break  # downgraded to a classic group
                if m.member_id not in group.members:
                    continue
                if m.session_deadline is not None and m.session_deadline <= now:
                    self.fence(group, m, "session expired")
                elif m.join_deadline is not None and m.join_deadline <= now:
                    self.fence(group, m, "the classic member failed to join within the rebalance timeout")
                elif m.sync_deadline is not None and m.sync_deadline <= now:
                    self.fence(group, m, "the classic member failed to sync within the rebalance timeout")
                elif m.rebalance_deadline is not None and m.rebalance_deadline <= now \
                        and m.member_epoch == m.rebalance_epoch and m.state == MemberState.UNREVOKED_PARTITIONS:
                    self.fence(group, m, "rebalance timeout")
            if self.groups.get(group.group_id) is not group:
                continue
            if not group.members and group.empty_since is not None:
                if group.offsets and now - group.empty_since >= self.config.offsets_retention_ms:
                    self.records.offsets(group.group_id, dict.fromkeys(group.offsets))
                    group.offsets.clear()
                if not group.offsets and not group.pending_txn_offsets \
                        and now - group.empty_since >= self.config.offsets_retention_check_interval_ms:
                    del self.groups[group.group_id]
                    self.records.consumer_group(None, group.group_id)
                    continue
            self.records.consumer_group(group)

    def next_deadline(self) -> int | None:
        times: list[int] = []
        for g in self.groups.values():
            if g.assignment_due is not None:
                times.append(g.assignment_due)
            for m in g.members.values():
                times += [t for t in (m.session_deadline, m.rebalance_deadline, m.join_deadline, m.sync_deadline)
                          if t is not None]
            if not g.members and g.empty_since is not None:
                times.append(g.empty_since + (self.config.offsets_retention_ms if g.offsets
                                              else self.config.offsets_retention_check_interval_ms))
        return min(times, default=None)

    # --- for describe ---------------------------------------------------------------------------------
    def describe(self, group_id: str) -> dict[str, Any] | None:
        """A plain summary (the pytest handle, `fakekafka ctl describe`): epochs, and each member's
        current assignment next to its target, by topic name."""
        group = self.groups.get(group_id)
        if group is None:
            return None
        names = {info.topic_id: n for n, info in self._topics().items()}

        def named(a: Assignment) -> dict[str, list[int]]:
            return {names.get(t, str(t)): sorted(ps) for t, ps in sorted(a.items(), key=lambda kv: str(kv[0])) if ps}

        return {"group_id": group.group_id, "type": "consumer", "state": group.state.value,
                "group_epoch": group.group_epoch, "assignment_epoch": group.assignment_epoch,
                "assignor": group.preferred_assignor(self.config.assignors[0]),
                "members": {m.member_id: {
                    "instance_id": m.instance_id, "client_id": m.client_id, "client_host": m.client_host,
                    "member_epoch": m.member_epoch, "state": m.state.value,
                    "protocol": "classic" if m.classic is not None else "consumer",
                    "subscribed_topic_names": list(m.subscribed_topic_names),
                    "subscribed_topic_regex": m.subscribed_topic_regex,
                    "assignment": named(m.assigned), "pending_revocation": named(m.pending_revocation),
                    "target_assignment": named(group.target.get(m.member_id, {}))}
                    for m in group.members.values()},
                "offsets": {f"{t}-{p}": om.offset for (t, p), om in sorted(group.offsets.items())}}


def _with_epoch(member: ConsumerMember, epoch: int, state: MemberState, assigned: Assignment,
                revoking: Assignment) -> ConsumerMember:
    previous = member.member_epoch if epoch != member.member_epoch else member.previous_member_epoch
    return replace(member, member_epoch=epoch, previous_member_epoch=previous, state=state,
                   assigned=assigned, pending_revocation=revoking)


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
