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
The groups' data is in `fakekafka.model.consumer_group_metadata` (re-exported here), the assignors and
reconciliation in `fakekafka.model.consumer_assignment`, committed offsets in `fakekafka.model.group_offsets`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from fakekafka.model.consumer_assignment import ASSIGNORS, reconcile
from fakekafka.model.consumer_group_members import ConsumerGroupMembers
from fakekafka.model.consumer_group_metadata import (
    LEAVE_GROUP_MEMBER_EPOCH,
    LEAVE_GROUP_STATIC_MEMBER_EPOCH,
    Assignment,
    ConsumerGroup,
    ConsumerGroupConfig,
    ConsumerGroupState,
    ConsumerMember,
    HeartbeatError,
    HeartbeatRequest,
    MemberState,
    TopicInfo,
    check_member_epoch,
    new_member_id,
    validate_heartbeat,
)
from fakekafka.model.group_offsets import ConsumerGroupOffsets
from fakekafka.model.mixed_groups import retire_upgraded, upgraded
from fakekafka.wire import ErrorCode

__all__ = [
    "ASSIGNORS", "ConsumerGroup", "ConsumerGroupConfig", "ConsumerGroupCoordinator", "ConsumerGroupState",
    "ConsumerMember", "HeartbeatError", "HeartbeatRequest", "MemberState", "TopicInfo", "new_member_id",
]

class ConsumerGroupCoordinator(ConsumerGroupMembers, ConsumerGroupOffsets):
    """The KIP-848 half of the group coordinator: ConsumerGroupHeartbeat (joining, heartbeating, leaving) and
    describe, over the members and epochs of `ConsumerGroupMembers` and the offsets of `ConsumerGroupOffsets`."""

    # --- ConsumerGroupHeartbeat ------------------------------------------------------------------
    def heartbeat(self, req: HeartbeatRequest | None = None, *, is_classic_group: Callable[[str], str | None]
                  = lambda _: None, **kwargs: Any) -> dict[str, Any]:
        """One ConsumerGroupHeartbeat: the response's fields (error_code, error_message, member_id,
        member_epoch, heartbeat_interval_ms, assignment). `is_classic_group(group_id)` says whether the id
        is taken by a classic group: None if not, "empty" or "busy"."""
        r = req or HeartbeatRequest(**kwargs)
        known = self.groups.get(r.group_id)
        # the members this heartbeat may change: its own, and the static member it replaces
        touched = {r.member_id, known.static_members.get(r.instance_id) if known and r.instance_id else None}
        try:
            validate_heartbeat(r, self.config.assignors)
            steady = self._steady_heartbeat(r)
            if steady is not None:
                return steady
            if r.member_epoch in (LEAVE_GROUP_MEMBER_EPOCH, LEAVE_GROUP_STATIC_MEMBER_EPOCH):
                out = self._leave(r)
            else:
                out = self._heartbeat(r, is_classic_group(r.group_id))
        except HeartbeatError as e:
            return {"error_code": e.code, "error_message": e.message, "member_id": None, "member_epoch": 0,
                    "heartbeat_interval_ms": 0, "assignment": None}
        group = self.groups.get(r.group_id)
        if group is not None:
            self.records.consumer_group(group, members=(touched | {out["member_id"]}) - {None, ""}
                                        if group is known else None)
        return out

    def _steady_heartbeat(self, r: HeartbeatRequest) -> dict[str, Any] | None:
        """The answer to a heartbeat that changes nothing (its member is stable at the group's epoch, with its
        target, and the request repeats what the member is), or None: most heartbeats of a big group are these,
        and the full path (storing the member, reconciling it, diffing its records) gives the same answer."""
        group = self.groups.get(r.group_id)
        member = group.members.get(r.member_id) if group is not None and r.member_epoch > 0 else None
        if (member is None or r.instance_id is not None or r.subscribed_topic_regex is not None
                or member.member_epoch != r.member_epoch or member.state != MemberState.STABLE
                or member.classic is not None or member.subscribed_topic_regex is not None
                or not member.member_epoch == group.assignment_epoch == group.group_epoch
                or r.client_id != member.client_id or r.client_host != member.client_host
                or r.rack_id not in (None, member.rack_id)
                or r.rebalance_timeout_ms not in (-1, member.rebalance_timeout_ms)
                or r.server_assignor not in (None, member.server_assignor)
                or (r.subscribed_topic_names is not None
                    and tuple(r.subscribed_topic_names) != member.subscribed_topic_names)):
            return None
        member.session_deadline = self._now() + self.session_timeout_ms(group.group_id)
        full = r.rebalance_timeout_ms != -1 and r.subscribed_topic_names is not None and r.owned is not None
        told, member.unconfirmed = _told(r, member.unconfirmed, full, member.assigned)
        return {"error_code": ErrorCode.NONE, "error_message": None, "member_id": member.member_id,
                "member_epoch": member.member_epoch,
                "heartbeat_interval_ms": self.heartbeat_interval_ms(group.group_id),
                "assignment": _assignment(member.assigned) if told else None}

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
                member = member.copy_with(member_epoch=0, previous_member_epoch=0, state=MemberState.STABLE,
                                 assigned={}, pending_revocation={}, rebalance_deadline=None)
            check_member_epoch(member, r)
        else:
            existing_id = group.static_members.get(r.instance_id)
            existing = group.members.get(existing_id) if existing_id is not None else None
            if joining:
                if existing is None:
                    member = group.members.get(member_id) or ConsumerMember(member_id)
                    check_member_epoch(member, r)
                elif existing.member_id == member_id and existing.member_epoch != LEAVE_GROUP_STATIC_MEMBER_EPOCH:
                    member = existing
                    check_member_epoch(member, r)
                else:
                    if existing.member_epoch != LEAVE_GROUP_STATIC_MEMBER_EPOCH:
                        raise HeartbeatError(
                            ErrorCode.UNRELEASED_INSTANCE_ID,
                            f"Static member {member_id} with instance id {r.instance_id} cannot join the group "
                            f"because the instance id is owned by {existing.member_id} member.")
                    # the static member is back: a new member id takes its place, assignment and target
                    replaced = existing
                    member = existing.copy_with(member_id=member_id, member_epoch=0, previous_member_epoch=0,
                                     rebalance_deadline=None)
            else:
                if existing is None:
                    raise HeartbeatError(ErrorCode.UNKNOWN_MEMBER_ID, f"Instance id {r.instance_id} is unknown.")
                if existing.member_id != member_id:
                    raise HeartbeatError(ErrorCode.FENCED_INSTANCE_ID,
                                         f"Static member {member_id} with instance id {r.instance_id} was fenced by "
                                         f"member {existing.member_id}.")
                member = existing
                check_member_epoch(member, r)
        if group.group_id not in self.groups:
            if upgrading and self.classic is not None:
                retire_upgraded(self.classic, group.group_id)  # the upgrade is final once the member is in
            self.groups[group.group_id] = group
        if replaced is not None:
            del group.members[replaced.member_id]
            group.target[member_id] = group.target.pop(replaced.member_id, {})
        updated = member.copy_with(client_id=r.client_id, client_host=r.client_host)
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
        self.store_member(group, member_id, updated,
                           ("member joined" if is_new else "subscription changed") if subscription_changed else None)
        self.maybe_assign(group)
        before = member.assigned if replaced is None and not is_new else None
        updated = reconcile(group, updated, r.owned, now)
        group.members[member_id] = updated
        updated.session_deadline = now + self.session_timeout_ms(group.group_id)
        full = joining or (r.rebalance_timeout_ms != -1 and (r.subscribed_topic_names is not None
                                                              or r.subscribed_topic_regex is not None)
                           and r.owned is not None)
        out: dict[str, Any] = {"error_code": ErrorCode.NONE, "error_message": None, "member_id": member_id,
                               "member_epoch": updated.member_epoch,
                               "heartbeat_interval_ms": self.heartbeat_interval_ms(group.group_id),
                               "assignment": None}
        told, updated.unconfirmed = _told(r, member.unconfirmed, full or before != updated.assigned, updated.assigned)
        if told:
            out["assignment"] = _assignment(updated.assigned)
        return out


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
            group.members[member.member_id] = member  # its owned partitions indexed again
            out["member_id"] = member.member_id
            return out
        self.fence(group, member, "static member left")
        return out


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


def _told(r: HeartbeatRequest, unconfirmed: bool, changed: bool, assigned: Assignment) -> tuple[bool, bool]:
    """Whether the answer carries the assignment (a full request, a change, or a member not known to have it that
    reports nothing owned; Kafka sends it only for the first two), and whether the member is then still not known
    to have it (see _reports)."""
    told = changed or (unconfirmed and r.owned is None)
    return told, (told or unconfirmed) and not _reports(r.owned, assigned)


def _reports(owned: list[tuple[Any, list[int]]] | None, assigned: Assignment) -> bool:
    """Whether a heartbeat reports owning just the member's assignment: the member has it. Until one does, its
    heartbeats that report nothing owned are answered with the assignment again. An answer can be lost on the
    way: librdkafka drops one that comes after its heartbeat timeout (the heartbeat interval) and, holding
    partitions, sends no full request after it; an answer that keeps the member's epoch (partitions to give up,
    or released ones granted in the same epoch) is then never heard, where one that moves it to a new epoch ends
    in FENCED_MEMBER_EPOCH and a rejoin. A member that has the answer takes it again as no change."""
    if owned is None:
        return False
    return {t: frozenset(ps) for t, ps in owned if ps} == {t: ps for t, ps in assigned.items() if ps}


def _assignment(assigned: Assignment) -> dict[str, Any]:
    """A heartbeat answer's assignment: topics by id, partitions in order."""
    return {"topic_partitions": [{"topic_id": t, "partitions": sorted(ps)}
                                 for t, ps in sorted(assigned.items(), key=lambda kv: str(kv[0])) if ps]}
