"""The classic group coordinator: group states, membership, rebalances, committed offsets. Pure state.

Mirrors Kafka's GroupCoordinator and GroupMetadata (the classic protocol). Requests that Kafka answers
later (a JoinGroup waiting for the rebalance, a follower's SyncGroup waiting for the leader) get a
`Pending` here, resolved when the group moves on; the server parks the request on it. Every deadline
(session timeouts, rebalance timeouts, the initial rebalance delay, offset retention) is a clock
reading checked in `tick()`, so a test with a `ManualClock` decides exactly when each one fires.
What Kafka writes to `__consumer_offsets` (commits, GroupMetadata at a group's creation and each completed
rebalance, tombstones) is reported to `records` (a `RecordSink`; the cluster's `OffsetsTopic` writes it), and
the state is loaded back from those records when the partition's leadership moves.
The groups' data (states, members, offsets) lives in `fakekafka.model.group_metadata`, re-exported here.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from typing import Any

from fakekafka.model.clock import Clock
from fakekafka.model.group_metadata import (
    VALID_PREVIOUS,
    Group,
    GroupConfig,
    GroupState,
    IllegalStateTransition,
    JoinRequest,
    Member,
    OffsetAndMetadata,
    Pending,
    RecordSink,
    commit_offsets,
    join_error,
)
from fakekafka.model.group_offsets import ClassicGroupOffsets
from fakekafka.model.group_timers import ClassicGroupTimers
from fakekafka.wire import ErrorCode

__all__ = [
    "Group", "GroupConfig", "GroupCoordinator", "GroupState", "IllegalStateTransition", "Member",
    "OffsetAndMetadata", "Pending", "RecordSink", "VALID_PREVIOUS", "commit_offsets",
]


class GroupCoordinator(ClassicGroupTimers, ClassicGroupOffsets):
    """The classic protocol's coordinator: JoinGroup, SyncGroup, Heartbeat and LeaveGroup moving groups through
    their states; committed offsets and group deletion come with `ClassicGroupOffsets`, deadlines with
    `ClassicGroupTimers`."""

    def __init__(self, clock: Clock, config: GroupConfig | None = None,
                 notify: Callable[[object], None] | None = None) -> None:
        self.clock = clock
        self.config = config or GroupConfig()
        self.groups: dict[str, Group] = {}
        self._notify = notify or (lambda _: None)
        self._ids = itertools.count(1)
        self.records = RecordSink()
        """Told each change Kafka writes to `__consumer_offsets` (the cluster's `OffsetsTopic`)."""
        self.due: dict[str, None] = {}
        """Groups whose initial join is due now (a zero `group.initial.rebalance.delay.ms`): Kafka completes it on
        its timer, after the requests already queued at the coordinator, so joins arriving together share the first
        generation. `run_due` completes them; the server calls it once what it has read is handled."""
        self.on_due: Callable[[], None] = self.run_due
        """Called when a group becomes due: at once by default (no server: nothing else is queued); a server
        calls `run_due` once the requests it has read are handled."""

    # --- helpers -------------------------------------------------------------------------------
    def _now(self) -> int:
        return self.clock.now_ms()

    def resolve(self, pending: Pending | None, result: dict[str, Any]) -> None:
        if pending is not None and pending.result is None:
            pending.result = result
            self._notify(pending)

    def _new_member_id(self, client_id: str, group_instance_id: str | None) -> str:
        prefix = group_instance_id or client_id
        return f"{prefix}-{next(self._ids):08d}-fakekafka"

    def group(self, group_id: str) -> Group | None:
        return self.groups.get(group_id)

    # --- JoinGroup ------------------------------------------------------------------------------
    def join(self, req: JoinRequest | None = None, **kwargs: Any) -> dict[str, Any] | Pending:
        """JoinGroup: an immediate answer, or a `Pending` resolved when the rebalance completes."""
        r = req or JoinRequest(**kwargs)
        if not r.group_id:
            return join_error(r.member_id, ErrorCode.INVALID_GROUP_ID)
        if not self.config.min_session_timeout_ms <= r.session_timeout_ms <= self.config.max_session_timeout_ms:
            return join_error(r.member_id, ErrorCode.INVALID_SESSION_TIMEOUT)
        group = self.groups.get(r.group_id)
        unknown = r.member_id == ""
        if group is None:
            if not unknown:
                return join_error(r.member_id, ErrorCode.UNKNOWN_MEMBER_ID)
            group = self.groups[r.group_id] = Group(r.group_id, empty_since=self._now())
            self.records.classic_group(group)  # Kafka records a new group at once, empty at generation 0
        if group.state == GroupState.DEAD:
            return join_error(r.member_id, ErrorCode.COORDINATOR_NOT_AVAILABLE)
        if unknown and len(group.members) >= self.config.max_size:
            return join_error("", ErrorCode.GROUP_MAX_SIZE_REACHED)
        if not group.supports(r.protocol_type, r.protocols):
            return join_error(r.member_id, ErrorCode.INCONSISTENT_GROUP_PROTOCOL)
        result = self._join_unknown(group, r) if unknown else self._join_known(group, r)
        self._maybe_complete_join(group)
        return result

    def _join_unknown(self, group: Group, r: JoinRequest) -> dict[str, Any] | Pending:
        new_id = self._new_member_id(r.client_id, r.group_instance_id)
        if r.group_instance_id is not None and r.group_instance_id in group.static_members:
            return self._replace_static_member(group, r, new_id)
        if r.require_known_member_id and r.group_instance_id is None:  # static members skip this step
            group.pending_members[new_id] = self._now() + r.session_timeout_ms
            return join_error(new_id, ErrorCode.MEMBER_ID_REQUIRED)
        return self._add_member_and_rebalance(group, r, new_id)

    def _replace_static_member(self, group: Group, r: JoinRequest, new_id: str) -> dict[str, Any] | Pending:
        """A static member restarted: it takes its old place under a new member id, without a rebalance
        while the group is Stable and keeps its protocol (KIP-345); in CompletingRebalance the group
        rebalances again, as Kafka's coordinator does (the leader may be assigning to the old member id)."""
        assert r.group_instance_id is not None
        old_id = group.static_members[r.group_instance_id]
        old = group.members.pop(old_id)
        self.resolve(old.join, join_error(old_id, ErrorCode.FENCED_INSTANCE_ID))
        self.resolve(old.sync, {"error_code": ErrorCode.FENCED_INSTANCE_ID, "assignment": b""})
        old.join = old.sync = None
        old.member_id = new_id
        group.members[new_id] = old
        group.static_members[r.group_instance_id] = new_id
        leader_before = group.leader_id
        if group.leader_id == old_id:
            group.leader_id = new_id
        old.protocols = r.protocols
        old.rebalance_timeout_ms, old.session_timeout_ms = r.rebalance_timeout_ms, r.session_timeout_ms
        old.touch(self._now())
        if group.state == GroupState.COMPLETING_REBALANCE or (
                group.state == GroupState.STABLE and group.select_protocol() != group.protocol_name):
            # as Kafka (GroupMetadataManager): after the join, the leader may be assigning to the old member
            # id, so the group rebalances again; in Stable, so does a protocol the group would now change to
            pending = old.join = Pending()
            self._maybe_prepare_rebalance(group)
            return pending
        if group.state == GroupState.STABLE:
            self.records.classic_group(group)  # the member's new id, as Kafka records it before answering
            result = group.join_result(old)
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

    def _join_known(self, group: Group, r: JoinRequest) -> dict[str, Any] | Pending:
        if r.member_id in group.pending_members:
            return self._add_member_and_rebalance(group, r, r.member_id)
        if group.is_fenced(r.member_id, r.group_instance_id):
            return join_error(r.member_id, ErrorCode.FENCED_INSTANCE_ID)
        member = group.members.get(r.member_id)
        if member is None or (r.group_instance_id is not None and r.group_instance_id not in group.static_members):
            return join_error(r.member_id, ErrorCode.UNKNOWN_MEMBER_ID)
        if group.state == GroupState.PREPARING_REBALANCE:
            return self._update_member_and_rebalance(group, member, r)
        if group.state == GroupState.COMPLETING_REBALANCE:
            if member.matches(r.protocols):
                return group.join_result(member)
            return self._update_member_and_rebalance(group, member, r)
        if group.state == GroupState.STABLE:
            if member.member_id == group.leader_id or not member.matches(r.protocols):
                return self._update_member_and_rebalance(group, member, r)
            result = group.join_result(member)
            result["members"] = []
            return result
        return join_error(r.member_id, ErrorCode.UNKNOWN_MEMBER_ID)

    def _add_member_and_rebalance(self, group: Group, r: JoinRequest, member_id: str) -> Pending:
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
        member.touch(self._now(), self.config.new_member_join_timeout_ms)
        if r.group_instance_id is not None:
            group.static_members[r.group_instance_id] = member_id
        group.pending_members.pop(member_id, None)
        self._maybe_prepare_rebalance(group)
        return pending

    def _update_member_and_rebalance(self, group: Group, member: Member, r: JoinRequest) -> Pending:
        member.protocols = r.protocols
        member.rebalance_timeout_ms, member.session_timeout_ms = r.rebalance_timeout_ms, r.session_timeout_ms
        self.resolve(member.join, join_error(member.member_id, ErrorCode.UNKNOWN_MEMBER_ID))
        pending = member.join = Pending()
        self._maybe_prepare_rebalance(group)
        return pending

    def _maybe_prepare_rebalance(self, group: Group) -> None:
        if group.can_rebalance:
            self.prepare_rebalance(group)

    def prepare_rebalance(self, group: Group) -> None:
        now = self._now()
        if group.state == GroupState.COMPLETING_REBALANCE:
            for m in group.members.values():
                m.assignment = b""
                self.resolve(m.sync, {"error_code": ErrorCode.REBALANCE_IN_PROGRESS, "assignment": b""})
                m.sync = None
        group.sync_deadline = None
        delay = self.config.initial_rebalance_delay_ms
        if group.state == GroupState.EMPTY:  # on the timer even at 0 ms, as Kafka's prepareRebalance
            group.initial_delay_deadline = now + delay
            group.initial_delay_limit = now + max(group.rebalance_timeout_ms, delay)
            group.join_deadline = None
        else:
            group.initial_delay_deadline = None
            group.join_deadline = now + group.rebalance_timeout_ms
        group.transition_to(GroupState.PREPARING_REBALANCE, now)
        self._due_if_now(group, now)

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
                self.resolve(pending, group.join_result(m))
                m.touch(self._now())
                m.is_new = False
        else:
            group.protocol_name = None
            group.leader_id = None
            group.transition_to(GroupState.EMPTY, now)
            group.empty_since = now
            self.records.classic_group(group)

    def _remove_member(self, group: Group, member: Member) -> None:
        self.resolve(member.join, join_error("", ErrorCode.UNKNOWN_MEMBER_ID))
        self.resolve(member.sync, {"error_code": ErrorCode.UNKNOWN_MEMBER_ID, "assignment": b""})
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
        if group.is_fenced(member_id, group_instance_id):
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
            member.touch(self._now())
            return group.sync_result(member)
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
                    self.resolve(p, group.sync_result(m))
                    m.touch(self._now())
        return pending.result if pending.result is not None else pending

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
        if group.is_fenced(member_id, group_instance_id):
            return ErrorCode.FENCED_INSTANCE_ID
        member = group.members.get(member_id)
        if member is None:
            return ErrorCode.UNKNOWN_MEMBER_ID
        if generation_id != group.generation_id:
            return ErrorCode.ILLEGAL_GENERATION
        if group.state == GroupState.EMPTY:
            return ErrorCode.UNKNOWN_MEMBER_ID
        member.touch(self._now())
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
            if member_id and group.is_fenced(member_id, instance_id):
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
