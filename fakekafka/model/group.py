"""The classic group coordinator: group states, membership, rebalances, committed offsets. Pure state.

Mirrors Kafka's GroupCoordinator and GroupMetadata (the classic protocol). Requests that Kafka answers
later (a JoinGroup waiting for the rebalance, a follower's SyncGroup waiting for the leader) get a
`Pending` here, resolved when the group moves on; the server parks the request on it. Every deadline
(session timeouts, rebalance timeouts, the initial rebalance delay, offset retention) is a clock
reading checked in `tick()`, so a test with a `ManualClock` decides exactly when each one fires.
What Kafka writes to `__consumer_offsets` (commits, GroupMetadata at a group's creation and each completed
rebalance, tombstones) is reported to `records` (a `RecordSink`; the cluster's `OffsetsTopic` writes it), and
the state is loaded back from those records when the partition's leadership moves.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from enum import Enum
from typing import Any

from fakekafka.model.clock import Clock
from fakekafka.wire import ErrorCode

__all__ = [
    "Group", "GroupConfig", "GroupCoordinator", "GroupState", "IllegalStateTransition", "Member",
    "OffsetAndMetadata", "Pending", "RecordSink", "VALID_PREVIOUS", "commit_offsets",
]


class GroupState(Enum):
    """Kafka's names, as DescribeGroups and ListGroups report them."""

    EMPTY = "Empty"
    """No members; offsets may remain. JoinGroup starts a rebalance (after the initial delay); commits
    with generation -1 are accepted. -> PreparingRebalance on a join; -> Dead on deletion or expiry."""
    PREPARING_REBALANCE = "PreparingRebalance"
    """Waiting for every known member to (re)join, or for the rebalance timeout. Heartbeats answer
    REBALANCE_IN_PROGRESS; SyncGroup too. -> CompletingRebalance when the join completes with members,
    -> Empty when it completes without any."""
    COMPLETING_REBALANCE = "CompletingRebalance"
    """JoinGroup answered for the new generation; waiting for the leader's SyncGroup. Commits answer
    REBALANCE_IN_PROGRESS. -> Stable on the leader's assignment; -> PreparingRebalance on a change."""
    STABLE = "Stable"
    """Assignment handed out; heartbeats keep members alive. -> PreparingRebalance when a member joins,
    leaves, changes its metadata, the leader rejoins, or a session expires."""
    DEAD = "Dead"
    """Deleted or emptied of members and offsets; about to disappear. Requests get
    COORDINATOR_NOT_AVAILABLE."""


VALID_PREVIOUS: dict[GroupState, frozenset[GroupState]] = {
    GroupState.DEAD: frozenset(GroupState),
    GroupState.COMPLETING_REBALANCE: frozenset({GroupState.PREPARING_REBALANCE}),
    GroupState.STABLE: frozenset({GroupState.COMPLETING_REBALANCE}),
    GroupState.PREPARING_REBALANCE: frozenset({GroupState.STABLE, GroupState.COMPLETING_REBALANCE,
                                               GroupState.EMPTY}),
    GroupState.EMPTY: frozenset({GroupState.PREPARING_REBALANCE}),
}


class IllegalStateTransition(AssertionError):
    """A transition the table forbids: a bug in fakekafka, never a client error."""


class Pending:
    """A response the coordinator will give later; the server parks the request on this object."""

    __slots__ = ("result",)

    def __init__(self) -> None:
        self.result: dict[str, Any] | None = None


@dataclass
class GroupConfig:
    min_session_timeout_ms: int = 6_000
    max_session_timeout_ms: int = 1_800_000
    initial_rebalance_delay_ms: int = 3_000
    max_size: int = 2**31 - 1
    offsets_retention_ms: int = 7 * 24 * 3600 * 1000
    offset_metadata_max_bytes: int = 4096
    offsets_retention_check_interval_ms: int = 600_000
    """How often Kafka sweeps expired offsets and removes Empty groups that have none."""
    new_member_join_timeout_ms: int = 300_000


@dataclass
class OffsetAndMetadata:
    offset: int
    leader_epoch: int
    metadata: str
    commit_timestamp: int


@dataclass
class Member:
    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    rebalance_timeout_ms: int
    session_timeout_ms: int
    protocol_type: str
    protocols: list[tuple[str, bytes]]
    assignment: bytes = b""
    join: Pending | None = None  # awaiting its JoinGroup response
    sync: Pending | None = None  # awaiting its SyncGroup response
    heartbeat_deadline: int = 0
    is_new: bool = False

    def metadata_for(self, protocol: str) -> bytes:
        for name, metadata in self.protocols:
            if name == protocol:
                return metadata
        raise KeyError(protocol)

    def matches(self, protocols: list[tuple[str, bytes]]) -> bool:
        return self.protocols == protocols


@dataclass
class Group:
    group_id: str
    state: GroupState = GroupState.EMPTY
    generation_id: int = 0
    protocol_type: str | None = None
    protocol_name: str | None = None
    leader_id: str | None = None
    members: dict[str, Member] = field(default_factory=dict)
    pending_members: dict[str, int] = field(default_factory=dict)  # member id -> expiry
    static_members: dict[str, str] = field(default_factory=dict)  # group instance id -> member id
    offsets: dict[tuple[str, int], OffsetAndMetadata] = field(default_factory=dict)
    pending_txn_offsets: dict[int, dict[tuple[str, int], OffsetAndMetadata]] = field(default_factory=dict)
    """producer id -> offsets a TxnOffsetCommit staged; they become `offsets` when its transaction commits."""
    join_deadline: int | None = None
    initial_delay_deadline: int | None = None
    initial_delay_limit: int | None = None
    new_member_added: bool = False
    sync_deadline: int | None = None
    empty_since: int | None = None
    history: list[tuple[int, GroupState, GroupState, int]] = field(default_factory=list)
    """(time, from, to, generation) of every transition, for tests to assert on."""

    def transition_to(self, target: GroupState, now: int) -> None:
        if self.state not in VALID_PREVIOUS[target]:
            allowed = ", ".join(sorted(s.value for s in VALID_PREVIOUS[target]))
            raise IllegalStateTransition(f"group {self.group_id} should be in one of [{allowed}] before moving to "
                                         f"{target.value}, but it is {self.state.value}")
        self.history.append((now, self.state, target, self.generation_id))
        self.state = target

    @property
    def can_rebalance(self) -> bool:
        return self.state in VALID_PREVIOUS[GroupState.PREPARING_REBALANCE]

    @property
    def rebalance_timeout_ms(self) -> int:
        return max((m.rebalance_timeout_ms for m in self.members.values()), default=0)

    def has_all_members_joined(self) -> bool:
        return not self.pending_members and all(m.join is not None for m in self.members.values())

    def candidate_protocols(self) -> set[str]:
        sets = [{name for name, _ in m.protocols} for m in self.members.values()]
        return set.intersection(*sets) if sets else set()

    def supports(self, protocol_type: str, protocols: list[tuple[str, bytes]]) -> bool:
        names = {name for name, _ in protocols}
        if self.state == GroupState.EMPTY or not self.members:
            return bool(protocol_type) and bool(names)
        return self.protocol_type == protocol_type and bool(self.candidate_protocols() & names)

    def select_protocol(self) -> str:
        """Each member votes for its most preferred protocol that every member supports."""
        candidates = self.candidate_protocols()
        votes: dict[str, int] = {}
        for m in self.members.values():
            choice = next(name for name, _ in m.protocols if name in candidates)
            votes[choice] = votes.get(choice, 0) + 1
        return max(votes, key=lambda p: votes[p])

    def subscribed_topics(self) -> set[str] | None:
        """Topics of the members' consumer subscriptions; None if they cannot be read."""
        if self.protocol_type != "consumer" or self.protocol_name is None:
            return None
        from fakekafka.wire.messages.consumer_protocol_subscription import VERSIONS as SUBSCRIPTION
        topics: set[str] = set()
        for m in self.members.values():
            try:
                data = m.metadata_for(self.protocol_name)
                version = int.from_bytes(data[:2], "big")
                sub = SUBSCRIPTION[min(version, len(SUBSCRIPTION) - 1)].parse(data[2:])
            except Exception:  # noqa: BLE001 - a client's opaque bytes; treat as unknown
                return None
            topics.update(sub.topics)
        return topics


@dataclass(frozen=True)
class _JoinRequest:
    group_id: str
    member_id: str
    group_instance_id: str | None
    require_known_member_id: bool
    client_id: str
    client_host: str
    rebalance_timeout_ms: int
    session_timeout_ms: int
    protocol_type: str
    protocols: list[tuple[str, bytes]]
    version: int


StagedOffsets = dict[int, dict[tuple[str, int], OffsetAndMetadata]]
"""A group's transactional offsets not yet committed, by producer id."""


def stage_txn_offsets(pending: StagedOffsets, producer_id: int,
                      offsets: dict[tuple[str, int], tuple[int, int, str | None]], max_metadata_bytes: int,
                      now: int) -> dict[tuple[str, int], ErrorCode]:
    """TxnOffsetCommit's offsets staged for the producer's transaction (classic and consumer groups alike): each
    partition's answer, OFFSET_METADATA_TOO_LARGE past `offset.metadata.max.bytes`."""
    staged = pending.setdefault(producer_id, {})
    out = {}
    for tp, (offset, epoch, metadata) in offsets.items():
        if metadata is not None and len(metadata.encode()) > max_metadata_bytes:
            out[tp] = ErrorCode.OFFSET_METADATA_TOO_LARGE
            continue
        staged[tp] = OffsetAndMetadata(offset, epoch, metadata or "", now)
        out[tp] = ErrorCode.NONE
    return out


def commit_offsets(committed: dict[tuple[str, int], OffsetAndMetadata],
                   offsets: dict[tuple[str, int], tuple[int, int, str | None]], max_metadata_bytes: int,
                   now: int) -> tuple[dict[tuple[str, int], ErrorCode], dict[tuple[str, int], OffsetAndMetadata]]:
    """OffsetCommit's offsets stored (classic and consumer groups alike): each partition's answer,
    OFFSET_METADATA_TOO_LARGE past `offset.metadata.max.bytes`, and what was stored (for the group's records)."""
    out, stored = {}, {}
    for tp, (offset, epoch, metadata) in offsets.items():
        if metadata is not None and len(metadata.encode()) > max_metadata_bytes:
            out[tp] = ErrorCode.OFFSET_METADATA_TOO_LARGE
            continue
        committed[tp] = stored[tp] = OffsetAndMetadata(offset, epoch, metadata or "", now)
        out[tp] = ErrorCode.NONE
    return out, stored


class RecordSink:
    """Where a coordinator reports the changes Kafka's coordinator writes to `__consumer_offsets` as records
    (`fakekafka.model.offsets_topic.OffsetsTopic` writes them); this base records nothing, for coordinators
    used on their own."""

    def offsets(self, group_id: str, changed: dict[tuple[str, int], OffsetAndMetadata | None],
                producer_id: int = -1, producer_epoch: int = -1) -> None:
        """Offsets committed (staged for the producer's transaction when `producer_id` >= 0), or deleted (None)."""

    def classic_group(self, group: Group, assignments: bool = True) -> None:
        """A classic group's metadata at a completed rebalance (or its creation)."""

    def group_removed(self, group_id: str, offsets: Iterable[tuple[str, int]]) -> None:
        """A classic group deleted or expired, with the offsets it still had."""

    def consumer_group(self, group: Any, group_id: str = "") -> None:
        """A KIP-848 consumer group changed (None with its id: deleted)."""


def staged_now(pending: StagedOffsets, producer_id: int, answers: dict[tuple[str, int], ErrorCode]
               ) -> dict[tuple[str, int], OffsetAndMetadata | None]:
    """The offsets a TxnOffsetCommit just staged (its partitions answered NONE), for the transactional records."""
    staged = pending.get(producer_id, {})
    return {tp: staged[tp] for tp, code in answers.items() if code == ErrorCode.NONE and tp in staged}


def complete_staged_offsets(pending: StagedOffsets, committed: dict[tuple[str, int], OffsetAndMetadata],
                            producer_id: int, commit: bool, now: int) -> None:
    """The transaction marker's effect on a group: the producer's staged offsets committed (at `now`) or dropped."""
    staged = pending.pop(producer_id, {})
    if commit:
        for tp, om in staged.items():
            committed[tp] = OffsetAndMetadata(om.offset, om.leader_epoch, om.metadata, now)


def _join_error(member_id: str, code: ErrorCode) -> dict[str, Any]:
    return {"error_code": code, "generation_id": -1, "protocol_type": None, "protocol_name": None,
            "leader": "", "member_id": member_id, "members": [], "skip_assignment": False}


class GroupCoordinator:
    def __init__(self, clock: Clock, config: GroupConfig | None = None,
                 notify: Callable[[object], None] | None = None) -> None:
        self.clock = clock
        self.config = config or GroupConfig()
        self.groups: dict[str, Group] = {}
        self._notify = notify or (lambda _: None)
        self._ids = itertools.count(1)
        self.records = RecordSink()
        """Told each change Kafka writes to `__consumer_offsets` (the cluster's `OffsetsTopic`)."""

    # --- helpers -------------------------------------------------------------------------------
    def _now(self) -> int:
        return self.clock.now_ms()

    def _resolve(self, pending: Pending | None, result: dict[str, Any]) -> None:
        if pending is not None and pending.result is None:
            pending.result = result
            self._notify(pending)

    def _new_member_id(self, client_id: str, group_instance_id: str | None) -> str:
        prefix = group_instance_id or client_id
        return f"{prefix}-{next(self._ids):08d}-fakekafka"

    def _join_result(self, group: Group, member: Member) -> dict[str, Any]:
        leader = member.member_id == group.leader_id
        members = []
        if leader and group.protocol_name is not None:
            members = [{"member_id": m.member_id, "group_instance_id": m.group_instance_id,
                        "metadata": m.metadata_for(group.protocol_name)} for m in group.members.values()]
        return {"error_code": ErrorCode.NONE, "generation_id": group.generation_id,
                "protocol_type": group.protocol_type, "protocol_name": group.protocol_name,
                "leader": group.leader_id or "", "skip_assignment": False, "member_id": member.member_id,
                "members": members}

    def _touch(self, member: Member, timeout_ms: int | None = None) -> None:
        member.heartbeat_deadline = self._now() + (member.session_timeout_ms if timeout_ms is None else timeout_ms)

    def _is_fenced(self, group: Group, member_id: str, group_instance_id: str | None) -> bool:
        if group_instance_id is None:
            return False
        current = group.static_members.get(group_instance_id)
        return current is not None and current != member_id

    def group(self, group_id: str) -> Group | None:
        return self.groups.get(group_id)

    # --- JoinGroup ------------------------------------------------------------------------------
    def join(self, req: _JoinRequest | None = None, **kwargs: Any) -> dict[str, Any] | Pending:
        """JoinGroup: an immediate answer, or a `Pending` resolved when the rebalance completes."""
        r = req or _JoinRequest(**kwargs)
        if not r.group_id:
            return _join_error(r.member_id, ErrorCode.INVALID_GROUP_ID)
        if not self.config.min_session_timeout_ms <= r.session_timeout_ms <= self.config.max_session_timeout_ms:
            return _join_error(r.member_id, ErrorCode.INVALID_SESSION_TIMEOUT)
        group = self.groups.get(r.group_id)
        unknown = r.member_id == ""
        if group is None:
            if not unknown:
                return _join_error(r.member_id, ErrorCode.UNKNOWN_MEMBER_ID)
            group = self.groups[r.group_id] = Group(r.group_id, empty_since=self._now())
            self.records.classic_group(group)  # Kafka records a new group at once, empty at generation 0
        if group.state == GroupState.DEAD:
            return _join_error(r.member_id, ErrorCode.COORDINATOR_NOT_AVAILABLE)
        if unknown and len(group.members) >= self.config.max_size:
            return _join_error("", ErrorCode.GROUP_MAX_SIZE_REACHED)
        if not group.supports(r.protocol_type, r.protocols):
            return _join_error(r.member_id, ErrorCode.INCONSISTENT_GROUP_PROTOCOL)
        result = self._join_unknown(group, r) if unknown else self._join_known(group, r)
        self._maybe_complete_join(group)
        return result

    def _join_unknown(self, group: Group, r: _JoinRequest) -> dict[str, Any] | Pending:
        new_id = self._new_member_id(r.client_id, r.group_instance_id)
        if r.group_instance_id is not None and r.group_instance_id in group.static_members:
            return self._replace_static_member(group, r, new_id)
        if r.require_known_member_id and r.group_instance_id is None:  # static members skip this step
            group.pending_members[new_id] = self._now() + r.session_timeout_ms
            return _join_error(new_id, ErrorCode.MEMBER_ID_REQUIRED)
        return self._add_member_and_rebalance(group, r, new_id)

    def _replace_static_member(self, group: Group, r: _JoinRequest, new_id: str) -> dict[str, Any] | Pending:
        """A static member restarted: it takes its old place under a new member id, without a rebalance
        while the group is Stable and keeps its protocol (KIP-345); in CompletingRebalance the group
        rebalances again, as Kafka's coordinator does (the leader may be assigning to the old member id)."""
        assert r.group_instance_id is not None
        old_id = group.static_members[r.group_instance_id]
        old = group.members.pop(old_id)
        self._resolve(old.join, _join_error(old_id, ErrorCode.FENCED_INSTANCE_ID))
        self._resolve(old.sync, {"error_code": ErrorCode.FENCED_INSTANCE_ID, "assignment": b""})
        old.join = old.sync = None
        old.member_id = new_id
        group.members[new_id] = old
        group.static_members[r.group_instance_id] = new_id
        leader_before = group.leader_id
        if group.leader_id == old_id:
            group.leader_id = new_id
        old.protocols = r.protocols
        old.rebalance_timeout_ms, old.session_timeout_ms = r.rebalance_timeout_ms, r.session_timeout_ms
        self._touch(old)
        if group.state == GroupState.COMPLETING_REBALANCE or (
                group.state == GroupState.STABLE and group.select_protocol() != group.protocol_name):
            # as Kafka (GroupMetadataManager): after the join, the leader may be assigning to the old member
            # id, so the group rebalances again; in Stable, so does a protocol the group would now change to
            pending = old.join = Pending()
            self._maybe_prepare_rebalance(group)
            return pending
        if group.state == GroupState.STABLE:
            self.records.classic_group(group)  # the member's new id, as Kafka records it before answering
            result = self._join_result(group, old)
            if r.version >= 9:
                # KIP-814, as Kafka 4.4: a rejoined static leader gets the members and skip_assignment, so
                # it knows it leads without reassigning the group
                result["skip_assignment"] = group.leader_id == new_id
                return result
            # before v9, the old leader id keeps a rejoined static leader from reassigning a stable group
            result["leader"] = leader_before or ""
            result["members"] = []
            result["skip_assignment"] = False
            return result
        pending = old.join = Pending()
        return pending

    def _join_known(self, group: Group, r: _JoinRequest) -> dict[str, Any] | Pending:
        if r.member_id in group.pending_members:
            return self._add_member_and_rebalance(group, r, r.member_id)
        if self._is_fenced(group, r.member_id, r.group_instance_id):
            return _join_error(r.member_id, ErrorCode.FENCED_INSTANCE_ID)
        member = group.members.get(r.member_id)
        if member is None or (r.group_instance_id is not None and r.group_instance_id not in group.static_members):
            return _join_error(r.member_id, ErrorCode.UNKNOWN_MEMBER_ID)
        if group.state == GroupState.PREPARING_REBALANCE:
            return self._update_member_and_rebalance(group, member, r)
        if group.state == GroupState.COMPLETING_REBALANCE:
            if member.matches(r.protocols):
                return self._join_result(group, member)
            return self._update_member_and_rebalance(group, member, r)
        if group.state == GroupState.STABLE:
            if member.member_id == group.leader_id or not member.matches(r.protocols):
                return self._update_member_and_rebalance(group, member, r)
            result = self._join_result(group, member)
            result["members"] = []
            return result
        return _join_error(r.member_id, ErrorCode.UNKNOWN_MEMBER_ID)

    def _add_member_and_rebalance(self, group: Group, r: _JoinRequest, member_id: str) -> Pending:
        member = Member(member_id, r.group_instance_id, r.client_id, r.client_host, r.rebalance_timeout_ms,
                        r.session_timeout_ms, r.protocol_type, r.protocols, is_new=True)
        if group.state == GroupState.PREPARING_REBALANCE and group.generation_id == 0:
            group.new_member_added = True
        if not group.members:
            group.protocol_type = r.protocol_type
        group.members[member_id] = member
        if group.leader_id is None:
            group.leader_id = member_id
        pending = member.join = Pending()
        # new members cannot heartbeat yet; a long-lost JoinGroup is timed out instead
        self._touch(member, self.config.new_member_join_timeout_ms)
        if r.group_instance_id is not None:
            group.static_members[r.group_instance_id] = member_id
        group.pending_members.pop(member_id, None)
        self._maybe_prepare_rebalance(group)
        return pending

    def _update_member_and_rebalance(self, group: Group, member: Member, r: _JoinRequest) -> Pending:
        member.protocols = r.protocols
        member.rebalance_timeout_ms, member.session_timeout_ms = r.rebalance_timeout_ms, r.session_timeout_ms
        self._resolve(member.join, _join_error(member.member_id, ErrorCode.UNKNOWN_MEMBER_ID))
        pending = member.join = Pending()
        self._maybe_prepare_rebalance(group)
        return pending

    def _maybe_prepare_rebalance(self, group: Group) -> None:
        if group.can_rebalance:
            self._prepare_rebalance(group)

    def _prepare_rebalance(self, group: Group) -> None:
        now = self._now()
        if group.state == GroupState.COMPLETING_REBALANCE:
            for m in group.members.values():
                m.assignment = b""
                self._resolve(m.sync, {"error_code": ErrorCode.REBALANCE_IN_PROGRESS, "assignment": b""})
                m.sync = None
        group.sync_deadline = None
        delay = self.config.initial_rebalance_delay_ms
        if group.state == GroupState.EMPTY and delay > 0:
            group.initial_delay_deadline = now + delay
            group.initial_delay_limit = now + max(group.rebalance_timeout_ms, delay)
            group.join_deadline = None
        else:
            group.initial_delay_deadline = None
            group.join_deadline = now + group.rebalance_timeout_ms
        group.transition_to(GroupState.PREPARING_REBALANCE, now)

    def force_rebalance(self, group_id: str) -> None:
        """What a test may do on purpose: every member is told to rejoin."""
        group = self.groups[group_id]
        self._maybe_prepare_rebalance(group)
        self._maybe_complete_join(group)

    def _maybe_complete_join(self, group: Group) -> None:
        if group.state != GroupState.PREPARING_REBALANCE:
            return
        if group.initial_delay_deadline is not None:
            return  # the initial delay decides (see tick)
        if group.has_all_members_joined():
            self._complete_join(group)

    def _complete_join(self, group: Group) -> None:
        now = self._now()
        for m in [m for m in group.members.values() if m.join is None and m.group_instance_id is None]:
            self._remove_member(group, m)
        group.join_deadline = group.initial_delay_deadline = group.initial_delay_limit = None
        group.new_member_added = False
        if group.members and not any(m.join is not None for m in group.members.values()):
            # nobody rejoined (only static members that did not come back): wait another round
            group.join_deadline = now + group.rebalance_timeout_ms
            return
        if group.leader_id not in group.members or group.members[group.leader_id].join is None:
            joined = [mid for mid, m in group.members.items() if m.join is not None]
            group.leader_id = joined[0] if joined else None
        group.generation_id += 1
        if group.members:
            group.protocol_name = group.select_protocol()
            group.transition_to(GroupState.COMPLETING_REBALANCE, now)
            group.sync_deadline = now + group.rebalance_timeout_ms
            for m in group.members.values():
                pending, m.join = m.join, None
                self._resolve(pending, self._join_result(group, m))
                self._touch(m)
                m.is_new = False
        else:
            group.protocol_name = None
            group.leader_id = None
            group.transition_to(GroupState.EMPTY, now)
            group.empty_since = now
            self.records.classic_group(group)

    def _remove_member(self, group: Group, member: Member) -> None:
        self._resolve(member.join, _join_error("", ErrorCode.UNKNOWN_MEMBER_ID))
        self._resolve(member.sync, {"error_code": ErrorCode.UNKNOWN_MEMBER_ID, "assignment": b""})
        member.join = member.sync = None
        group.members.pop(member.member_id, None)
        if member.group_instance_id is not None and group.static_members.get(member.group_instance_id) == \
                member.member_id:
            del group.static_members[member.group_instance_id]
        if group.leader_id == member.member_id:
            group.leader_id = next(iter(group.members), None)

    def _remove_member_and_update(self, group: Group, member: Member) -> None:
        self._remove_member(group, member)
        if group.state in (GroupState.STABLE, GroupState.COMPLETING_REBALANCE):
            self._maybe_prepare_rebalance(group)
        if group.state == GroupState.PREPARING_REBALANCE:
            if group.initial_delay_deadline is not None and not group.members and not group.pending_members:
                self._complete_join(group)
            else:
                self._maybe_complete_join(group)

    # --- SyncGroup ------------------------------------------------------------------------------
    def sync(self, group_id: str, generation_id: int, member_id: str, group_instance_id: str | None,
             assignments: dict[str, bytes], protocol_type: str | None = None,
             protocol_name: str | None = None) -> dict[str, Any] | Pending:
        def error(code: ErrorCode) -> dict[str, Any]:
            return {"error_code": code, "assignment": b"", "protocol_type": None, "protocol_name": None}

        if not group_id:
            return error(ErrorCode.INVALID_GROUP_ID)
        group = self.groups.get(group_id)
        if group is None:
            return error(ErrorCode.UNKNOWN_MEMBER_ID)
        if group.state == GroupState.DEAD:
            return error(ErrorCode.COORDINATOR_NOT_AVAILABLE)
        if self._is_fenced(group, member_id, group_instance_id):
            return error(ErrorCode.FENCED_INSTANCE_ID)
        member = group.members.get(member_id)
        if member is None:
            return error(ErrorCode.UNKNOWN_MEMBER_ID)
        if generation_id != group.generation_id:
            return error(ErrorCode.ILLEGAL_GENERATION)
        if (protocol_type is not None and protocol_type != group.protocol_type) or \
                (protocol_name is not None and protocol_name != group.protocol_name):
            return error(ErrorCode.INCONSISTENT_GROUP_PROTOCOL)
        if group.state == GroupState.EMPTY:
            return error(ErrorCode.UNKNOWN_MEMBER_ID)
        if group.state == GroupState.PREPARING_REBALANCE:
            return error(ErrorCode.REBALANCE_IN_PROGRESS)
        if group.state == GroupState.STABLE:
            self._touch(member)
            return self._sync_result(group, member)
        pending = member.sync = Pending()
        if member_id == group.leader_id:
            now = self._now()
            for mid, m in group.members.items():
                m.assignment = assignments.get(mid, b"")
            self.records.classic_group(group)
            group.transition_to(GroupState.STABLE, now)
            group.sync_deadline = None
            for m in group.members.values():
                p, m.sync = m.sync, None
                if p is not None:
                    self._resolve(p, self._sync_result(group, m))
                    self._touch(m)
        return pending.result if pending.result is not None else pending

    @staticmethod
    def _sync_result(group: Group, member: Member) -> dict[str, Any]:
        return {"error_code": ErrorCode.NONE, "assignment": member.assignment,
                "protocol_type": group.protocol_type, "protocol_name": group.protocol_name}

    # --- Heartbeat, LeaveGroup --------------------------------------------------------------------
    def heartbeat(self, group_id: str, generation_id: int, member_id: str,
                  group_instance_id: str | None) -> ErrorCode:
        if not group_id:
            return ErrorCode.INVALID_GROUP_ID
        group = self.groups.get(group_id)
        if group is None:
            return ErrorCode.UNKNOWN_MEMBER_ID
        if group.state == GroupState.DEAD:
            return ErrorCode.COORDINATOR_NOT_AVAILABLE
        if self._is_fenced(group, member_id, group_instance_id):
            return ErrorCode.FENCED_INSTANCE_ID
        member = group.members.get(member_id)
        if member is None:
            return ErrorCode.UNKNOWN_MEMBER_ID
        if generation_id != group.generation_id:
            return ErrorCode.ILLEGAL_GENERATION
        if group.state == GroupState.EMPTY:
            return ErrorCode.UNKNOWN_MEMBER_ID
        self._touch(member)
        if group.state == GroupState.PREPARING_REBALANCE:
            return ErrorCode.REBALANCE_IN_PROGRESS
        return ErrorCode.NONE

    def leave(self, group_id: str, members: list[tuple[str, str | None]]) -> tuple[ErrorCode, list[ErrorCode]]:
        if not group_id:
            return ErrorCode.INVALID_GROUP_ID, []
        group = self.groups.get(group_id)
        if group is None:
            return ErrorCode.NONE, [ErrorCode.UNKNOWN_MEMBER_ID for _ in members]
        if group.state == GroupState.DEAD:
            return ErrorCode.COORDINATOR_NOT_AVAILABLE, []
        results = []
        for member_id, instance_id in members:
            if member_id and self._is_fenced(group, member_id, instance_id):
                results.append(ErrorCode.FENCED_INSTANCE_ID)
            elif member_id in group.pending_members:
                del group.pending_members[member_id]
                self._maybe_complete_join(group)
                results.append(ErrorCode.NONE)
            else:
                target = group.static_members.get(instance_id) if instance_id is not None else member_id
                member = group.members.get(target or "")
                if member is None:
                    results.append(ErrorCode.UNKNOWN_MEMBER_ID)
                else:
                    self._remove_member_and_update(group, member)
                    results.append(ErrorCode.NONE)
        return ErrorCode.NONE, results

    # --- offsets --------------------------------------------------------------------------------
    def commit(self, group_id: str, generation_id: int, member_id: str, group_instance_id: str | None,
               offsets: dict[tuple[str, int], tuple[int, int, str | None]]) -> dict[tuple[str, int], ErrorCode]:
        """offsets: (topic, partition) -> (offset, leader epoch, metadata)."""
        def all_(code: ErrorCode) -> dict[tuple[str, int], ErrorCode]:
            return {tp: code for tp in offsets}

        group = self.groups.get(group_id)
        if group is None:
            if generation_id >= 0:
                return all_(ErrorCode.ILLEGAL_GENERATION)
            group = self.groups[group_id] = Group(group_id, empty_since=self._now())
        if group.state == GroupState.DEAD:
            return all_(ErrorCode.COORDINATOR_NOT_AVAILABLE)
        if self._is_fenced(group, member_id, group_instance_id):
            return all_(ErrorCode.FENCED_INSTANCE_ID)
        if not (generation_id < 0 and group.state == GroupState.EMPTY):
            member = group.members.get(member_id)
            if member is None:
                return all_(ErrorCode.UNKNOWN_MEMBER_ID)
            if generation_id != group.generation_id:
                return all_(ErrorCode.ILLEGAL_GENERATION)
            if group.state == GroupState.COMPLETING_REBALANCE:
                return all_(ErrorCode.REBALANCE_IN_PROGRESS)
            self._touch(member)
        out, stored = commit_offsets(group.offsets, offsets, self.config.offset_metadata_max_bytes, self._now())
        self.records.offsets(group_id, stored)
        return out

    def txn_commit(self, group_id: str, producer_id: int, generation_id: int, member_id: str,
                   group_instance_id: str | None, offsets: dict[tuple[str, int], tuple[int, int, str | None]],
                   producer_epoch: int = -1) -> dict[tuple[str, int], ErrorCode]:
        """TxnOffsetCommit: offsets staged for the producer's transaction, visible once it commits. A producer
        that names no member (v0-2, or a generation of -1) commits without group checks, as Kafka's."""
        def all_(code: ErrorCode) -> dict[tuple[str, int], ErrorCode]:
            return dict.fromkeys(offsets, code)

        group = self.groups.get(group_id)
        if group is None:
            if generation_id >= 0:
                return all_(ErrorCode.ILLEGAL_GENERATION)
            group = self.groups[group_id] = Group(group_id, empty_since=self._now())
        if group.state == GroupState.DEAD:
            return all_(ErrorCode.COORDINATOR_NOT_AVAILABLE)
        if member_id or generation_id >= 0 or group_instance_id is not None:
            if self._is_fenced(group, member_id, group_instance_id):
                return all_(ErrorCode.FENCED_INSTANCE_ID)
            if member_id not in group.members:
                return all_(ErrorCode.UNKNOWN_MEMBER_ID)
            if generation_id != group.generation_id:
                return all_(ErrorCode.ILLEGAL_GENERATION)
        out = stage_txn_offsets(group.pending_txn_offsets, producer_id, offsets, self.config.offset_metadata_max_bytes,
                                self._now())
        self.records.offsets(group_id, staged_now(group.pending_txn_offsets, producer_id, out), producer_id,
                             producer_epoch)
        return out

    def complete_txn_offsets(self, producer_id: int, commit: bool, in_partition: Callable[[str], bool]) -> None:
        """A transaction marker reached a `__consumer_offsets` partition: the producer's staged offsets of the
        groups that partition holds are committed or dropped."""
        for group in list(self.groups.values()):
            if producer_id not in group.pending_txn_offsets or not in_partition(group.group_id):
                continue
            complete_staged_offsets(group.pending_txn_offsets, group.offsets, producer_id, commit, self._now())
            self._maybe_remove_dead(group)

    def has_pending_txn_offset(self, group_id: str, tp: tuple[str, int]) -> bool:
        group = self.groups.get(group_id)
        return group is not None and any(tp in staged for staged in group.pending_txn_offsets.values())

    def fetch_offsets(self, group_id: str, partitions: list[tuple[str, int]] | None
                      ) -> dict[tuple[str, int], OffsetAndMetadata | None]:
        group = self.groups.get(group_id)
        stored = group.offsets if group is not None else {}
        if partitions is None:
            return dict(sorted(stored.items()))
        return {tp: stored.get(tp) for tp in partitions}

    def delete_offsets(self, group_id: str, partitions: list[tuple[str, int]]
                       ) -> tuple[ErrorCode, dict[tuple[str, int], ErrorCode]]:
        group = self.groups.get(group_id)
        if group is None or group.state == GroupState.DEAD:
            return ErrorCode.GROUP_ID_NOT_FOUND, {}
        if group.state != GroupState.EMPTY and group.protocol_type != "consumer":
            return ErrorCode.NON_EMPTY_GROUP, {}
        subscribed = group.subscribed_topics() if group.state != GroupState.EMPTY else set()
        out = {}
        for tp in partitions:
            if subscribed is None or tp[0] in subscribed:
                out[tp] = ErrorCode.GROUP_SUBSCRIBED_TO_TOPIC
            else:
                group.offsets.pop(tp, None)
                out[tp] = ErrorCode.NONE
        self.records.offsets(group_id, {tp: None for tp, code in out.items() if code == ErrorCode.NONE})
        self._maybe_remove_dead(group)
        return ErrorCode.NONE, out

    def delete_group(self, group_id: str) -> ErrorCode:
        group = self.groups.get(group_id)
        if group is None or group.state == GroupState.DEAD:
            return ErrorCode.GROUP_ID_NOT_FOUND
        if group.state != GroupState.EMPTY:
            return ErrorCode.NON_EMPTY_GROUP
        group.transition_to(GroupState.DEAD, self._now())
        del self.groups[group_id]
        self.records.group_removed(group_id, group.offsets)
        return ErrorCode.NONE

    def take_empty_group(self, group_id: str) -> Group | None:
        """Removes and returns an Empty group (a KIP-848 consumer group takes its id and offsets over)."""
        group = self.groups.get(group_id)
        if group is None or group.members or group.pending_members or group.state != GroupState.EMPTY:
            return None
        group.transition_to(GroupState.DEAD, self._now())
        self.records.group_removed(group_id, ())  # its offsets stay: the consumer group takes them over
        return self.groups.pop(group_id)

    def remove_partitions(self, topic: str) -> None:
        """A deleted topic takes its committed offsets with it."""
        for group in list(self.groups.values()):
            gone = [tp for tp in group.offsets if tp[0] == topic]
            for tp in gone:
                del group.offsets[tp]
            if gone:
                self.records.offsets(group.group_id, dict.fromkeys(gone))
            self._maybe_remove_dead(group)

    def _maybe_remove_dead(self, group: Group) -> None:
        if group.state == GroupState.EMPTY and not group.offsets and not group.members \
                and not group.pending_members and not group.pending_txn_offsets:
            group.transition_to(GroupState.DEAD, self._now())
            self.groups.pop(group.group_id, None)
            self.records.group_removed(group.group_id, ())

    # --- time -----------------------------------------------------------------------------------
    def tick(self) -> None:
        """Fires every deadline that the clock has passed."""
        now = self._now()
        for group in list(self.groups.values()):
            for mid, expiry in list(group.pending_members.items()):
                if expiry <= now:
                    del group.pending_members[mid]
                    self._maybe_complete_join(group)
            if group.state == GroupState.PREPARING_REBALANCE:
                if group.initial_delay_deadline is not None:
                    if group.initial_delay_deadline <= now or (group.initial_delay_limit or now) <= now:
                        if group.new_member_added and group.initial_delay_limit and now < group.initial_delay_limit:
                            group.new_member_added = False
                            group.initial_delay_deadline = min(now + self.config.initial_rebalance_delay_ms,
                                                               group.initial_delay_limit)
                        else:
                            self._complete_join(group)
                elif group.join_deadline is not None and group.join_deadline <= now:
                    self._complete_join(group)
            if group.state == GroupState.COMPLETING_REBALANCE and group.sync_deadline is not None \
                    and group.sync_deadline <= now:
                # members that never sent SyncGroup are dropped and the group rebalances (KAFKA-13425)
                for m in [m for m in group.members.values() if m.sync is None]:
                    self._remove_member(group, m)
                group.sync_deadline = None
                if group.state == GroupState.COMPLETING_REBALANCE:
                    self._maybe_prepare_rebalance(group)
                    self._maybe_complete_join(group)
            for m in list(group.members.values()):
                if m.join is None and m.sync is None and m.heartbeat_deadline <= now \
                        and m.member_id in group.members:
                    self._remove_member_and_update(group, m)
            if group.state == GroupState.EMPTY and group.empty_since is not None and group.offsets \
                    and now - group.empty_since >= self.config.offsets_retention_ms:
                self.records.offsets(group.group_id, dict.fromkeys(group.offsets))
                group.offsets.clear()
            if group.state == GroupState.EMPTY and group.empty_since is not None \
                    and now - group.empty_since >= self.config.offsets_retention_check_interval_ms:
                self._maybe_remove_dead(group)

    def next_deadline(self) -> int | None:
        """The earliest time `tick` has something to do (for the server's timer)."""
        times: list[int] = []
        for g in self.groups.values():
            times.extend(g.pending_members.values())
            for t in (g.initial_delay_deadline, g.join_deadline, g.sync_deadline):
                if t is not None:
                    times.append(t)
            times.extend(m.heartbeat_deadline for m in g.members.values() if m.join is None and m.sync is None)
            if g.state == GroupState.EMPTY and g.empty_since is not None:
                times.append(g.empty_since + (self.config.offsets_retention_ms if g.offsets
                                              else self.config.offsets_retention_check_interval_ms))
        return min(times, default=None)
