"""What a classic group holds: its state machine, members, committed offsets. Pure data.

Kafka's GroupMetadata and MemberMetadata (the classic protocol), the five states and the transitions allowed
between them, and what both group protocols share: committed offsets (OffsetAndMetadata, with transactional ones
staged per producer until the transaction ends) and the `RecordSink` a coordinator reports each change to. The
coordinator that moves this state is `fakekafka.model.group`.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from enum import Enum
from typing import Any

from fakekafka.wire import ErrorCode
from fakekafka.wire.messages.consumer_protocol_subscription import VERSIONS as SUBSCRIPTION

__all__ = [
    "Group", "GroupConfig", "GroupState", "IllegalStateTransition", "JoinRequest", "Member", "OffsetAndMetadata",
    "Pending", "RecordSink", "StagedOffsets", "VALID_PREVIOUS", "commit_offsets", "complete_staged_offsets",
    "join_error", "stage_txn_offsets", "staged_now",
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

    def touch(self, now: int, timeout_ms: int | None = None) -> None:
        """Its session starts again: it expires `timeout_ms` (by default its session timeout) from `now`."""
        self.heartbeat_deadline = now + (self.session_timeout_ms if timeout_ms is None else timeout_ms)


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

    def is_fenced(self, member_id: str, group_instance_id: str | None) -> bool:
        """Whether the static member's instance id now belongs to another member id (FENCED_INSTANCE_ID)."""
        if group_instance_id is None:
            return False
        current = self.static_members.get(group_instance_id)
        return current is not None and current != member_id

    def join_result(self, member: Member) -> dict[str, Any]:
        """The member's JoinGroup answer at the current generation: the leader gets every member's metadata."""
        leader = member.member_id == self.leader_id
        members = []
        if leader and self.protocol_name is not None:
            members = [{"member_id": m.member_id, "group_instance_id": m.group_instance_id,
                        "metadata": m.metadata_for(self.protocol_name)} for m in self.members.values()]
        return {"error_code": ErrorCode.NONE, "generation_id": self.generation_id,
                "protocol_type": self.protocol_type, "protocol_name": self.protocol_name,
                "leader": self.leader_id or "", "skip_assignment": False, "member_id": member.member_id,
                "members": members}

    def sync_result(self, member: Member) -> dict[str, Any]:
        """The member's SyncGroup answer: its assignment."""
        return {"error_code": ErrorCode.NONE, "assignment": member.assignment,
                "protocol_type": self.protocol_type, "protocol_name": self.protocol_name}

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
class JoinRequest:
    """A JoinGroup as the coordinator reads it (any version)."""

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

    def consumer_group(self, group: Any, group_id: str = "", members: Any = None) -> None:
        """A KIP-848 consumer group changed (None with its id: deleted); `members`: the ids of the only members
        that may have changed (None: any of them)."""

    def streams_group(self, group: Any, group_id: str = "") -> None:
        """A streams group (KIP-1071) changed (None with its id: deleted)."""


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


def join_error(member_id: str, code: ErrorCode) -> dict[str, Any]:
    return {"error_code": code, "generation_id": -1, "protocol_type": None, "protocol_name": None,
            "leader": "", "member_id": member_id, "members": [], "skip_assignment": False}

