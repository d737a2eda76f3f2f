"""Mixed groups (KIP-848's upgrade and downgrade paths): classic members inside a consumer group. Pure state.

Kafka 4.4 lets a group move between the two protocols without stopping it (`group.consumer.migration.policy`:
`bidirectional`, the default, `upgrade`, `downgrade` or `disabled`), as in its GroupMetadataManager:

- **upgrade**: the first consumer-protocol member (ConsumerGroupHeartbeat, epoch 0) of a classic group whose
  members all use the `consumer` protocol type turns it into a consumer group. Each classic member keeps its
  place at the classic generation as its member epoch, its subscription (from its JoinGroup metadata) and its
  partitions (from its SyncGroup assignment), which are also the target assignment; a JoinGroup or SyncGroup
  still waiting is answered REBALANCE_IN_PROGRESS.
- **classic members of a consumer group** keep speaking JoinGroup/SyncGroup/Heartbeat/LeaveGroup/OffsetCommit.
  JoinGroup is answered at once (no barrier): the member is reconciled like a consumer-protocol member, its
  owned partitions taken from its subscription, and its generation is its member epoch. SyncGroup hands out
  its current assignment in the ConsumerProtocol format. Heartbeat answers REBALANCE_IN_PROGRESS when it must
  rejoin (the group epoch moved past it, it has partitions to revoke, or partitions it waits for are free).
  Its session timeout is its own (JoinGroup's), and it is fenced if it does not rejoin or sync within its
  rebalance timeout.
- **downgrade**: when the members leaving a consumer group leave only classic members, the group becomes a
  classic group again at the group epoch as its generation, each member's target assignment as its
  assignment, and a rebalance starts. A classic static member taking the place of the last consumer-protocol
  member (its instance id, a new member id) downgrades it too, without a rebalance unless the target assignment
  is behind the group epoch.
- A classic JoinGroup to a consumer group with members is refused INCONSISTENT_GROUP_PROTOCOL when the policy
  is `disabled`; a classic JoinGroup to an empty consumer group takes over the id (and its offsets), and a
  consumer-protocol member an empty classic group, under every policy.
Each policy compared with Kafka 4.4 over raw requests (tests/integration/test_migration_policies_wire.py): no
difference.
"""

from __future__ import annotations

import uuid
from dataclasses import replace
from typing import Any, Protocol

from construct import Container

from fakekafka.model.clock import Clock
from fakekafka.model.consumer_assignment import reconcile
from fakekafka.model.consumer_group_metadata import (
    ClassicProtocol,
    ConsumerGroup,
    ConsumerGroupConfig,
    ConsumerMember,
    HeartbeatError,
    MemberState,
    TopicInfo,
    new_member_id,
)
from fakekafka.model.group import GroupCoordinator
from fakekafka.model.group_metadata import Group, GroupState, Member, RecordSink, join_error
from fakekafka.wire import ErrorCode
from fakekafka.wire.messages.consumer_protocol_assignment import VERSIONS as ASSIGNMENT
from fakekafka.wire.messages.consumer_protocol_subscription import VERSIONS as SUBSCRIPTION
from fakekafka.wire.primitives import build_bytes

__all__ = [
    "ClassicProtocol", "ConsumerGroups", "classic_heartbeat", "classic_join", "classic_sync", "classic_takes_empty",
    "downgrade", "encode_assignment", "parse_assignment", "parse_subscription", "retire_upgraded", "upgraded",
]

CONSUMER_PROTOCOL_TYPE = "consumer"
LATEST_CONSUMER_PROTOCOL = 3


class ConsumerGroups(Protocol):
    """What a mixed group needs of the consumer group coordinator (`ConsumerGroups` is one): its
    groups, configuration and topics, and the steps every member goes through (stored, assigned)."""

    clock: Clock
    config: ConsumerGroupConfig
    groups: dict[str, ConsumerGroup]
    records: RecordSink
    classic: GroupCoordinator | None

    def topics(self) -> dict[str, TopicInfo]: ...

    def subscription_metadata(self, group: ConsumerGroup) -> dict[str, tuple[uuid.UUID, int] | None]: ...

    def refresh_metadata(self, group: ConsumerGroup) -> bool: ...

    def store_member(self, group: ConsumerGroup, member_id: str, member: ConsumerMember, bump: str | None
                     ) -> None: ...

    def maybe_assign(self, group: ConsumerGroup) -> None: ...


def policy_allows(coord: ConsumerGroups, direction: str) -> bool:
    policy = coord.config.migration_policy.lower()
    return policy == "bidirectional" or policy == direction


def parse_subscription(data: bytes) -> Container:
    """A ConsumerProtocol subscription (JoinGroup metadata); ValueError if malformed."""
    if len(data) < 2:
        raise ValueError("subscription too short")
    version = int.from_bytes(data[:2], "big", signed=True)
    try:
        return SUBSCRIPTION[min(max(version, 0), len(SUBSCRIPTION) - 1)].parse(data[2:])
    except Exception as e:  # noqa: BLE001 - a client's bytes: any failure to parse is a malformed protocol
        raise ValueError(str(e)) from None


def parse_assignment(data: bytes) -> Container | None:
    """A ConsumerProtocol assignment (SyncGroup's); None for the empty one; ValueError if malformed."""
    if not data:
        return None
    if len(data) < 2:
        raise ValueError("assignment too short")
    version = int.from_bytes(data[:2], "big", signed=True)
    try:
        return ASSIGNMENT[min(max(version, 0), len(ASSIGNMENT) - 1)].parse(data[2:])
    except Exception as e:  # noqa: BLE001
        raise ValueError(str(e)) from None


def encode_assignment(partitions: dict[str, list[int]], version: int) -> bytes:
    """An assignment in the ConsumerProtocol format at `version` (capped at the latest), topics by name."""
    v = min(max(version, 0), LATEST_CONSUMER_PROTOCOL)
    body = build_bytes(ASSIGNMENT[v], {"assigned_partitions": [{"topic": t, "partitions": sorted(ps)}
                                                      for t, ps in sorted(partitions.items()) if ps],
                              "user_data": None})
    return v.to_bytes(2, "big") + body


def _by_name(coord: ConsumerGroups, assignment: dict[uuid.UUID, frozenset[int]]) -> dict[str, list[int]]:
    names = {info.topic_id: name for name, info in coord.topics().items()}
    return {names[t]: sorted(ps) for t, ps in assignment.items() if t in names and ps}


def _by_id(coord: ConsumerGroups, topics: list[Any]) -> dict[uuid.UUID, frozenset[int]]:
    """ConsumerProtocol (topic, partitions) entries as topic id -> partitions; unknown topics dropped."""
    infos = coord.topics()
    out: dict[uuid.UUID, frozenset[int]] = {}
    for t in topics:
        info = infos.get(t.topic)
        if info is not None and t.partitions:
            out[info.topic_id] = out.get(info.topic_id, frozenset()) | frozenset(t.partitions)
    return out


# --- upgrade --------------------------------------------------------------------------------------
def upgraded(coord: ConsumerGroups, classic: GroupCoordinator, group_id: str) -> ConsumerGroup:
    """The consumer group a classic group with members becomes (not yet registered: the heartbeat that asked
    registers it, and `retire_upgraded` removes the classic group then), or HeartbeatError GROUP_ID_NOT_FOUND
    with Kafka 4.4's words when it may not be upgraded."""

    def refuse(why: str) -> HeartbeatError:
        return HeartbeatError(ErrorCode.GROUP_ID_NOT_FOUND,
                              f"Cannot upgrade classic group {group_id} to consumer group because {why}.")

    old = classic.group(group_id)
    assert old is not None
    if not policy_allows(coord, "upgrade"):
        raise refuse("online upgrade is disabled")
    if old.protocol_type != CONSUMER_PROTOCOL_TYPE:
        raise refuse("the group does not use the consumer embedded protocol")
    if len(old.members) > coord.config.max_size:
        raise refuse("the group size exceeds the consumer group maximum size")
    now = coord.clock.now_ms()
    gen = old.generation_id
    group = ConsumerGroup(group_id, group_epoch=gen, assignment_epoch=gen)
    for m in old.members.values():
        try:
            assignment = parse_assignment(m.assignment)
            protocol = old.protocol_name or m.protocols[0][0]
            subscription = parse_subscription(m.metadata_for(protocol))
        except (ValueError, KeyError):
            raise refuse("the embedded consumer protocol is malformed") from None
        if assignment is not None and assignment.user_data:
            raise HeartbeatError(ErrorCode.GROUP_ID_NOT_FOUND,
                                 f"Cannot upgrade classic group {group_id} to consumer group because an unsupported "
                                 "custom assignor is in use. Please refer to the documentation or switch to a "
                                 "default assignor before re-attempting the upgrade.")
        assigned = _by_id(coord, assignment.assigned_partitions if assignment is not None else [])
        member = ConsumerMember(
            m.member_id, instance_id=m.group_instance_id, rack_id=subscription.get("rack_id"),
            client_id=m.client_id, client_host=m.client_host, rebalance_timeout_ms=m.rebalance_timeout_ms,
            subscribed_topic_names=tuple(subscription.topics), state=MemberState.STABLE, member_epoch=gen,
            previous_member_epoch=gen, assigned=assigned,
            classic=ClassicProtocol(m.session_timeout_ms, tuple(m.protocols)),
            session_deadline=now + m.session_timeout_ms)
        group.members[m.member_id] = member
        group.target[m.member_id] = dict(assigned)
        if m.group_instance_id is not None:
            group.static_members[m.group_instance_id] = m.member_id
    group.offsets = old.offsets
    group.pending_txn_offsets = old.pending_txn_offsets
    coord.refresh_metadata(group)
    group.history.append((now, "upgraded from a classic group", group.group_epoch, group.assignment_epoch))
    return group


def retire_upgraded(classic: GroupCoordinator, group_id: str) -> None:
    """The classic group is gone into a consumer group: its waiting JoinGroups and SyncGroups are answered
    REBALANCE_IN_PROGRESS (they rejoin the consumer group), as Kafka's convertToConsumerGroup does."""
    old = classic.groups.pop(group_id, None)
    if old is None:
        return
    classic.records.group_removed(group_id, ())  # its offsets stay with the consumer group
    for m in old.members.values():
        classic.resolve(m.join, {"error_code": ErrorCode.REBALANCE_IN_PROGRESS, "generation_id": -1,
                                  "protocol_type": None, "protocol_name": None, "leader": "",
                                  "member_id": m.member_id, "members": [], "skip_assignment": False})
        classic.resolve(m.sync, {"error_code": ErrorCode.REBALANCE_IN_PROGRESS, "assignment": b""})
        m.join = m.sync = None
    old.history.append((classic.clock.now_ms(), old.state, GroupState.DEAD, old.generation_id))
    old.state = GroupState.DEAD


# --- downgrade ------------------------------------------------------------------------------------
def downgrade(coord: ConsumerGroups, classic: GroupCoordinator, group: ConsumerGroup,
              leaving: set[str], rebalance: bool = True) -> bool:
    """Turns the consumer group into a classic group without the members `leaving` if only classic members
    remain and the policy allows it (Kafka 4.4's validateOnlineDowngradeWithFencedMembers and
    convertToClassicGroup); then a rebalance starts (unless `rebalance` is False: a static member's replacement
    with an up-to-date assignment). False (nothing done) otherwise."""
    remaining = [m for mid, m in group.members.items() if mid not in leaving]
    if not remaining or any(m.classic is None for m in remaining):
        return False
    if not policy_allows(coord, "downgrade") or len(remaining) > classic.config.max_size:
        return False
    now = coord.clock.now_ms()
    new = Group(group.group_id, state=GroupState.STABLE, generation_id=group.group_epoch,
                protocol_type=CONSUMER_PROTOCOL_TYPE, empty_since=None)
    for m in remaining:
        assert m.classic is not None
        member = Member(m.member_id, m.instance_id, m.client_id, m.client_host, m.rebalance_timeout_ms,
                        m.classic.session_timeout_ms, CONSUMER_PROTOCOL_TYPE, list(m.classic.protocols))
        new.members[m.member_id] = member
        if m.instance_id is not None:
            new.static_members[m.instance_id] = m.member_id
        if new.leader_id is None:
            new.leader_id = m.member_id
    new.protocol_name = new.select_protocol()
    for m in remaining:
        assert m.classic is not None
        target = group.target.get(m.member_id, {})
        new.members[m.member_id].assignment = encode_assignment(_by_name(coord, target), m.classic.version)
        new.members[m.member_id].touch(classic.clock.now_ms())
    new.offsets = group.offsets
    new.pending_txn_offsets = group.pending_txn_offsets
    del coord.groups[group.group_id]
    group.history.append((now, "downgraded to a classic group", group.group_epoch, group.assignment_epoch))
    coord.records.consumer_group(None, group.group_id)
    classic.groups[group.group_id] = new
    classic.records.classic_group(new)
    if rebalance:
        classic.prepare_rebalance(new)  # "Downgrade group from consumer to classic": every member rejoins
    return True


# --- the classic protocol's requests to a consumer group ------------------------------------------
def _supports(group: ConsumerGroup, protocol_type: str, protocols: list[tuple[str, bytes]]) -> bool:
    """Kafka's supportsClassicProtocols: the `consumer` type, and a protocol every classic member has."""
    if protocol_type != CONSUMER_PROTOCOL_TYPE:
        return False
    names = {n for n, _ in protocols}
    if not group.members:
        return bool(names)
    classic = [m.classic for m in group.members.values() if m.classic is not None]
    return any(all(name in {n for n, _ in c.protocols} for c in classic) for name in names)


def classic_join(coord: ConsumerGroups, group: ConsumerGroup, *, member_id: str,
                 group_instance_id: str | None, require_known_member_id: bool, client_id: str, client_host: str,
                 session_timeout_ms: int, rebalance_timeout_ms: int, protocol_type: str,
                 protocols: list[tuple[str, bytes]], min_session_timeout_ms: int = 6_000,
                 max_session_timeout_ms: int = 1_800_000) -> dict[str, Any]:
    """JoinGroup from a classic member to a consumer group (Kafka 4.4's classicGroupJoinToConsumerGroup),
    answered at once."""
    if not min_session_timeout_ms <= session_timeout_ms <= max_session_timeout_ms:
        return join_error(member_id, ErrorCode.INVALID_SESSION_TIMEOUT)
    if coord.config.migration_policy.lower() == "disabled":
        return join_error(member_id, ErrorCode.INCONSISTENT_GROUP_PROTOCOL)
    unknown = member_id == ""
    mid = new_member_id() if unknown else member_id
    if mid not in group.members and len(group.members) >= coord.config.max_size:
        return join_error(mid if not unknown else "", ErrorCode.GROUP_MAX_SIZE_REACHED)
    if not _supports(group, protocol_type, protocols):
        return join_error(member_id, ErrorCode.INCONSISTENT_GROUP_PROTOCOL)
    if unknown and require_known_member_id and group_instance_id is None:
        return join_error(mid, ErrorCode.MEMBER_ID_REQUIRED)
    try:
        subscription = parse_subscription(protocols[0][1])
    except ValueError:
        return join_error(member_id, ErrorCode.INCONSISTENT_GROUP_PROTOCOL)
    now = coord.clock.now_ms()
    replaced: ConsumerMember | None = None
    if group_instance_id is None:
        member = group.members.get(mid) or ConsumerMember(mid)
    else:
        existing_id = group.static_members.get(group_instance_id)
        existing = group.members.get(existing_id) if existing_id is not None else None
        if unknown:
            if existing is None:
                member = ConsumerMember(mid)
            else:  # the static member is back under a new member id: it takes the old one's place
                replaced = existing
                member = replace(existing, member_id=mid, member_epoch=0, previous_member_epoch=0,
                                 rebalance_deadline=None)
        elif existing is None:
            return join_error(member_id, ErrorCode.UNKNOWN_MEMBER_ID)
        elif existing.member_id != mid:
            return join_error(member_id, ErrorCode.FENCED_INSTANCE_ID)
        else:
            member = existing
    if replaced is not None:
        del group.members[replaced.member_id]
        group.target[mid] = group.target.pop(replaced.member_id, {})
    is_new = mid not in group.members
    updated = replace(member, client_id=client_id, client_host=client_host,
                      subscribed_topic_names=tuple(subscription.topics),
                      classic=ClassicProtocol(session_timeout_ms, tuple(protocols)),
                      join_deadline=None)
    if group_instance_id is not None:
        updated.instance_id = group_instance_id
    if subscription.get("rack_id") is not None:
        updated.rack_id = subscription.get("rack_id")
    if rebalance_timeout_ms != -1:
        updated.rebalance_timeout_ms = rebalance_timeout_ms
    changed = (is_new and replaced is None) or updated.subscribed_topic_names != member.subscribed_topic_names \
        or (member.subscribed_topic_regex is not None)
    updated.subscribed_topic_regex = None
    coord.store_member(group, mid, updated, (
        "classic member joined" if is_new else "classic member's subscription changed") if changed else None)
    # a classic static member taking the place of the last consumer-protocol member downgrades the group (Kafka
    # 4.4's validateOnlineDowngradeWithReplacedMember); with a target assignment behind the group epoch ("stale
    # assignment") the classic group rebalances, else the member takes its predecessor's partitions at once
    downgrading = replaced is not None and replaced.classic is None and coord.classic is not None \
        and all(m.classic is not None for m in group.members.values()) and policy_allows(coord, "downgrade") \
        and len(group.members) <= coord.classic.config.max_size
    stale = group.assignment_epoch < group.group_epoch
    if not downgrading:
        coord.maybe_assign(group)
    owned = [(tid, sorted(ps)) for tid, ps in _by_id(coord, subscription.get("owned_partitions") or []).items()]
    if not (downgrading and stale):
        updated = reconcile(group, updated, owned, now)
    updated.session_deadline = now + session_timeout_ms
    updated.sync_deadline = now + max(updated.rebalance_timeout_ms, 0)
    group.members[mid] = updated
    if downgrading and coord.classic is not None:
        downgrade(coord, coord.classic, group, set(), rebalance=stale)
    else:
        coord.records.consumer_group(group)
    return {"error_code": ErrorCode.NONE, "generation_id": updated.member_epoch,
            "protocol_type": CONSUMER_PROTOCOL_TYPE, "protocol_name": protocols[0][0], "leader": "",
            "skip_assignment": False, "member_id": mid, "members": []}


def _classic_member(group: ConsumerGroup, member_id: str, group_instance_id: str | None
                    ) -> tuple[ConsumerMember | None, ErrorCode]:
    """Kafka's validateConsumerGroupMember plus throwIfMemberDoesNotUseClassicProtocol."""
    if group_instance_id is None:
        member = group.members.get(member_id)
    else:
        current = group.static_members.get(group_instance_id)
        member = group.members.get(current) if current is not None else None
        if member is not None and member.member_id != member_id:
            return None, ErrorCode.FENCED_INSTANCE_ID
    if member is None or member.classic is None:
        return None, ErrorCode.UNKNOWN_MEMBER_ID
    return member, ErrorCode.NONE


def classic_sync(coord: ConsumerGroups, group: ConsumerGroup, generation_id: int, member_id: str,
                 group_instance_id: str | None, protocol_type: str | None, protocol_name: str | None
                 ) -> dict[str, Any]:
    """SyncGroup from a classic member of a consumer group: its current assignment, encoded in the
    ConsumerProtocol version it speaks (Kafka 4.4's classicGroupSyncToConsumerGroup)."""

    def error(code: ErrorCode) -> dict[str, Any]:
        return {"error_code": code, "assignment": b"", "protocol_type": None, "protocol_name": None}

    member, code = _classic_member(group, member_id, group_instance_id)
    if member is None:
        return error(code)
    assert member.classic is not None
    if generation_id != member.member_epoch:
        return error(ErrorCode.ILLEGAL_GENERATION)
    if (protocol_type is not None and protocol_type != CONSUMER_PROTOCOL_TYPE) or \
            (protocol_name is not None and protocol_name != member.classic.protocol_name):
        return error(ErrorCode.INCONSISTENT_GROUP_PROTOCOL)
    now = coord.clock.now_ms()
    if group.group_epoch > member.member_epoch and member.state != MemberState.UNREVOKED_PARTITIONS:
        if member.join_deadline is None:
            member.join_deadline = now + max(member.rebalance_timeout_ms, 0)
        return error(ErrorCode.REBALANCE_IN_PROGRESS)
    member.sync_deadline = None
    member.session_deadline = now + member.classic.session_timeout_ms
    return {"error_code": ErrorCode.NONE, "protocol_type": protocol_type, "protocol_name": protocol_name,
            "assignment": encode_assignment(_by_name(coord, member.assigned), member.classic.version)}


def classic_heartbeat(coord: ConsumerGroups, group: ConsumerGroup, generation_id: int, member_id: str,
                      group_instance_id: str | None) -> ErrorCode:
    """Heartbeat from a classic member of a consumer group: REBALANCE_IN_PROGRESS when it should rejoin (the
    group epoch moved past it, it must revoke partitions, or partitions it waits for are free now)."""
    member, code = _classic_member(group, member_id, group_instance_id)
    if member is None:
        return code
    assert member.classic is not None
    if generation_id != member.member_epoch:
        return ErrorCode.ILLEGAL_GENERATION
    now = coord.clock.now_ms()
    member.session_deadline = now + member.classic.session_timeout_ms
    waiting = member.state == MemberState.UNRELEASED_PARTITIONS and any(
        p not in member.assigned.get(t, frozenset()) and group.partition_owner_epoch(t, p, member.member_id) != -1
        for t, ps in group.target.get(member.member_id, {}).items() for p in ps)
    if member.member_epoch < group.group_epoch or member.state == MemberState.UNREVOKED_PARTITIONS or (
            member.state == MemberState.UNRELEASED_PARTITIONS and not waiting):
        if member.join_deadline is None:
            member.join_deadline = now + max(member.rebalance_timeout_ms, 0)
        return ErrorCode.REBALANCE_IN_PROGRESS
    return ErrorCode.NONE


def classic_takes_empty(coord: ConsumerGroups, classic: GroupCoordinator, group_id: str) -> None:
    """A classic JoinGroup for an empty consumer group: the consumer group goes, its committed offsets stay with
    the classic group that takes the id (Kafka 4.4's maybeDeleteEmptyConsumerGroup)."""
    old = coord.groups.get(group_id)
    if old is None or old.members or classic.group(group_id) is not None:
        return
    del coord.groups[group_id]
    coord.records.consumer_group(None, group_id)
    new = classic.groups[group_id] = Group(group_id, offsets=old.offsets, pending_txn_offsets=old.pending_txn_offsets,
                                           empty_since=coord.clock.now_ms())
    classic.records.classic_group(new)  # Kafka records a new classic group at once, empty at generation 0
