"""Streams groups (KIP-1071): groups of Kafka Streams clients whose task assignment the coordinator computes.
Pure state.

As Kafka 4.4's group coordinator serves them (GroupMetadataManager's streams half, StreamsGroup): a member
heartbeats with its member epoch and the active, standby and warm-up tasks it owns; it joins (epoch 0) with the
application's topology. The coordinator:

- configures the topology against the cluster's topics (`fakekafka.model.streams_topology`): until every source
  topic exists and the internal topics (repartition, changelog) exist with the right partition counts, the group
  is NotReady and its members get no tasks, with the reason in the heartbeat's status (the broker creates the
  missing internal topics: `fakekafka.handlers.streams_groups`);
- bumps the **group epoch** when a member joins, leaves or changes what the assignment depends on (process,
  rack, client tags), the topology changes, or a topic it reads or keeps changes (created, deleted, grown);
- computes the **target assignment** with the sticky task assignor (`fakekafka.model.streams_assignment`) when
  the group epoch is ahead of the assignment epoch: a new group's first one after
  `group.streams.initial.rebalance.delay.ms` (a new group is Assigning meanwhile, its members at the epoch
  before with no tasks), later ones at most every
  `group.streams.assignment.interval.ms`; meanwhile the status says ASSIGNMENT_DELAYED;
- moves each member to its target one step at a time: active tasks it must lose are revoked first, tasks another
  member still holds are withheld until released;
- fences members that miss their session (`streams.session.timeout.ms`) or do not revoke within their rebalance
  timeout. A static member (instance id) that leaves with epoch -2 keeps its tasks until its session expires.

Committed offsets go through `ConsumerGroupOffsets` (members commit at their current epoch, as in consumer
groups). Each change of a group is reported to the `RecordSink` (`records.streams_group`), which writes the
StreamsGroup* records to `__consumer_offsets`; a group loaded back from them comes in through `loaded`.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from dataclasses import replace
from typing import Any

from fakekafka.model.clock import Clock
from fakekafka.model.group_metadata import RecordSink
from fakekafka.model.group_offsets import ConsumerGroupOffsets
from fakekafka.model.java_order import timeline_capacity, timeline_order
from fakekafka.model.metadata_hash import group_hash
from fakekafka.model.streams_assignment import MemberSpec, MemberState, Tasks, TaskSet, assign, task_set, tasks_of
from fakekafka.model.streams_group_metadata import (
    LEAVE_GROUP_MEMBER_EPOCH,
    LEAVE_GROUP_STATIC_MEMBER_EPOCH,
    StreamsGroup,
    StreamsGroupConfig,
    StreamsGroupState,
    StreamsHeartbeat,
    StreamsHeartbeatError,
    StreamsMember,
    validate_heartbeat,
)
from fakekafka.model.streams_topology import Status, configure
from fakekafka.wire import ErrorCode

__all__ = ["StreamsGroup", "StreamsGroupConfig", "StreamsGroupCoordinator", "StreamsGroupState", "StreamsHeartbeat"]

DELAYED_INITIAL = "Assignment delayed due to the configured initial rebalance delay."
DELAYED_INTERVAL = "Assignment delayed due to the configured assignment interval."


class StreamsGroupCoordinator(ConsumerGroupOffsets):
    """The streams half of the group coordinator. `topics()` gives the cluster's topics by name -> partition
    count; `topic_hash(name)` a topic's hash in the group's metadata hash (`fakekafka.model.metadata_hash`);
    `group_config(group_id)` a group's dynamic configs (`streams.*`)."""

    def __init__(self, clock: Clock, config: StreamsGroupConfig | None = None,
                 topics: Callable[[], dict[str, int]] | None = None,
                 group_config: Callable[[str], dict[str, str]] | None = None,
                 topic_hash: Callable[[str], int] | None = None) -> None:
        self.clock = clock
        self.config = config or StreamsGroupConfig()  # type: ignore[assignment]
        self.groups: dict[str, StreamsGroup] = {}  # type: ignore[assignment]
        self._topics = topics or dict
        self._topic_hash = topic_hash or (lambda _: 0)
        self._group_config = group_config or (lambda _: {})
        self.records = RecordSink()

    def group(self, group_id: str) -> StreamsGroup | None:
        return self.groups.get(group_id)

    def setting(self, group_id: str, name: str) -> int:
        """A group config `streams.NAME`, else the broker's `group.streams.NAME`."""
        default = getattr(self.config, name.replace(".", "_"))
        return int(self._group_config(group_id).get(f"streams.{name}", default))

    # --- StreamsGroupHeartbeat -------------------------------------------------------------------
    def heartbeat(self, r: StreamsHeartbeat, taken: Callable[[str], str | None] = lambda _: None) -> dict[str, Any]:
        """One StreamsGroupHeartbeat: the response's fields. `taken(group_id)` names the kind of another group
        with the id (a classic or consumer group), else None."""
        try:
            validate_heartbeat(r)
            if r.member_epoch in (LEAVE_GROUP_MEMBER_EPOCH, LEAVE_GROUP_STATIC_MEMBER_EPOCH):
                out = self._leave(r)
            else:
                out = self._heartbeat(r, taken(r.group_id))
            group = self.groups.get(r.group_id)
            if group is not None:
                self.records.streams_group(group)
            return out
        except StreamsHeartbeatError as e:
            return {"error_code": e.code, "error_message": e.message, "member_id": "", "member_epoch": 0,
                    "heartbeat_interval_ms": 0}

    def _heartbeat(self, r: StreamsHeartbeat, other: str | None) -> dict[str, Any]:
        now = self.clock.now_ms()
        joining = r.member_epoch == 0
        group = self.groups.get(r.group_id)
        if group is None:
            if other is not None:
                raise StreamsHeartbeatError(ErrorCode.GROUP_ID_NOT_FOUND,
                                            f"Group {r.group_id} is not a streams group.")
            if not joining:
                raise StreamsHeartbeatError(ErrorCode.GROUP_ID_NOT_FOUND, f"Streams group {r.group_id} not found.")
            group = StreamsGroup(r.group_id, empty_since=now)
        if r.member_id not in group.members and len(group.members) >= self.config.max_size:
            raise StreamsHeartbeatError(ErrorCode.GROUP_MAX_SIZE_REACHED,
                                        f"The streams group has reached its maximum capacity of "
                                        f"{self.config.max_size} members.")
        member, replaced = self._member(group, r, joining)
        was_empty = not group.members
        self.groups.setdefault(group.group_id, group)
        if replaced is not None:
            del group.members[replaced.member_id]
            group.target[r.member_id] = group.target.pop(replaced.member_id, Tasks())
        bump = member.member_id not in group.members and replaced is None
        if joining and r.topology is not None and (group.topology is None or not (set(group.members) - {r.member_id})
                                                   or r.topology.epoch > group.topology.epoch):
            if group.topology != r.topology:
                group.topology = r.topology
                group.configured = None
                bump = True
        updated = replace(member, client_id=r.client_id, client_host=r.client_host)
        if r.topology is not None:
            updated.topology_epoch = r.topology.epoch
        if r.instance_id is not None:
            updated.instance_id = r.instance_id
            group.static_members[r.instance_id] = r.member_id
        if r.rack_id is not None:
            updated.rack_id = r.rack_id
        if r.rebalance_timeout_ms != -1:
            updated.rebalance_timeout_ms = r.rebalance_timeout_ms
        if r.process_id is not None:
            updated.process_id = r.process_id
        if r.user_endpoint is not None:
            updated.user_endpoint = r.user_endpoint
        if r.client_tags is not None:
            updated.client_tags = dict(r.client_tags)
        if r.task_offsets is not None:
            updated.task_offsets = list(r.task_offsets)
        if r.task_end_offsets is not None:
            updated.task_end_offsets = list(r.task_end_offsets)
        if r.shutdown_application:
            group.shutdown_requested = True
        bump |= (updated.process_id, updated.rack_id, updated.client_tags, updated.user_endpoint) != (
            member.process_id, member.rack_id, member.client_tags, member.user_endpoint)
        joined = updated.member_id if updated.member_id not in group.members else None
        group.members[updated.member_id] = updated
        if bump:
            group.group_epoch += 1
        if was_empty:
            group.empty_since = None
            if group.assignment_epoch == 0:
                # a new group, as Kafka 4.4: an empty target at this epoch, and the epoch bumped for the first
                # real assignment, computed once the initial delay is over (the group Assigning meanwhile)
                group.target = {m: Tasks() for m in group.members}
                group.assignment_epoch = group.group_epoch
                group.group_epoch += 1
                group.initial_due = now + self.setting(group.group_id, "initial.rebalance.delay.ms")
        self._refresh_metadata(group)
        delayed = self.maybe_assign(group, joined)
        group.members_high_water = max(group.members_high_water, len(group.members))
        before = updated.assigned
        updated = self._reconcile(group, updated, r.active, now)
        updated.active_epochs = _assignment_epochs(updated, group.assignment_epoch)
        group.members[updated.member_id] = updated
        updated.session_deadline = now + self.setting(group.group_id, "session.timeout.ms")
        status = list(group.configured.status) if group.configured is not None else []
        if delayed is not None:
            status.append((Status.ASSIGNMENT_DELAYED, delayed))
        if group.topology is not None and updated.topology_epoch < group.topology.epoch:
            status.append((Status.STALE_TOPOLOGY, f"The member's topology epoch {updated.topology_epoch} is "
                                                  f"behind the group's topology epoch {group.topology.epoch}."))
        if group.shutdown_requested:
            status.append((Status.SHUTDOWN_APPLICATION, "A KafkaStreams instance encountered a fatal error and "
                                                        "requested a shutdown for the entire application."))
        out: dict[str, Any] = {
            "error_code": ErrorCode.NONE, "error_message": None, "member_id": updated.member_id,
            "member_epoch": updated.member_epoch,
            "heartbeat_interval_ms": self.setting(group.group_id, "heartbeat.interval.ms"),
            "task_offset_interval_ms": self.setting(group.group_id, "task.offset.interval.ms"),
            "acceptable_recovery_lag": self.setting(group.group_id, "acceptable.recovery.lag"),
            "status": [{"status_code": c, "status_detail": d} for c, d in status],
            "endpoint_information_epoch": group.endpoint_information_epoch}
        if joining or before != updated.assigned:
            out.update(updated.assigned.wire())
        if r.endpoint_information_epoch < group.endpoint_information_epoch:
            out["partitions_by_user_endpoint"] = self._endpoints(group)
        return out

    def _member(self, group: StreamsGroup, r: StreamsHeartbeat, joining: bool
                ) -> tuple[StreamsMember, StreamsMember | None]:
        """The member the heartbeat is from (new when joining), and the static member it replaces."""
        if r.instance_id is not None:
            existing_id = group.static_members.get(r.instance_id)
            existing = group.members.get(existing_id) if existing_id is not None else None
            if existing is not None and existing.member_id != r.member_id:
                if not joining:
                    raise StreamsHeartbeatError(
                        ErrorCode.FENCED_INSTANCE_ID, f"Static member {r.member_id} with instance id "
                        f"{r.instance_id} was fenced by member {existing.member_id}.")
                if existing.member_epoch != LEAVE_GROUP_STATIC_MEMBER_EPOCH:
                    raise StreamsHeartbeatError(
                        ErrorCode.UNRELEASED_INSTANCE_ID, f"Static member {r.member_id} with instance id "
                        f"{r.instance_id} cannot join the group because the instance id is owned by "
                        f"{existing.member_id} member.")
                return replace(existing, member_id=r.member_id, member_epoch=0, previous_member_epoch=0,
                               rebalance_deadline=None), existing
        member = group.members.get(r.member_id)
        if member is None:
            if not joining:
                raise StreamsHeartbeatError(ErrorCode.UNKNOWN_MEMBER_ID,
                                            f"Member {r.member_id} is not a member of group {group.group_id}.")
            return StreamsMember(r.member_id), None
        if joining:  # starts over, owning nothing
            return replace(member, member_epoch=0, previous_member_epoch=0, state=MemberState.STABLE,
                           assigned=Tasks(), pending_revocation={}, rebalance_deadline=None), None
        if r.member_epoch > member.member_epoch:
            raise StreamsHeartbeatError(
                ErrorCode.FENCED_MEMBER_EPOCH, f"The streams group member has a greater member epoch "
                f"({r.member_epoch}) than the one known by the group coordinator ({member.member_epoch}). "
                "The member must abandon all its partitions and rejoin.")
        if r.member_epoch < member.member_epoch and not (
                r.member_epoch == member.previous_member_epoch
                and (r.active is None or tasks_of(r.active) <= tasks_of(member.assigned.active))):
            raise StreamsHeartbeatError(
                ErrorCode.FENCED_MEMBER_EPOCH, f"The streams group member has a smaller member epoch "
                f"({r.member_epoch}) than the one known by the group coordinator ({member.member_epoch}). "
                "The member must abandon all its partitions and rejoin.")
        return member, None

    def _refresh_metadata(self, group: StreamsGroup) -> bool:
        """Configures the topology again when a topic it reads or keeps changed (Kafka's metadata hash of those
        that exist: created, deleted, grown, replicas moved to other racks); bumps the epoch then."""
        if group.topology is None:
            return False
        topics = self._topics()
        names = {t for s in group.topology.subtopologies for t in (
            *s.source_topics, *(c.name for c in s.state_changelog_topics),
            *(r.name for r in s.repartition_source_topics))}
        now = {n: topics[n] for n in names if n in topics}
        digest = group_hash({n: self._topic_hash(n) for n in now})
        if group.configured is not None and now == group.metadata and digest == group.metadata_hash:
            return False
        if group.configured is not None:
            group.group_epoch += 1
        group.metadata, group.metadata_hash = now, digest
        group.configured = configure(group.topology, topics)
        return True

    def loaded(self, group: StreamsGroup) -> None:
        """A group loaded back from `__consumer_offsets`: its topology configured against the topics as they are
        (an epoch bump, at its next heartbeat, if they changed meanwhile is left to that heartbeat)."""
        self.groups[group.group_id] = group
        if group.topology is not None:
            self._refresh_metadata(group)

    def metadata_changed(self) -> None:
        """Topics changed: as Kafka compares the metadata hash at the next heartbeat, each group looks then."""

    def maybe_assign(self, group: StreamsGroup, joined: str | None = None) -> str | None:
        """Computes the target assignment if due; the reason it is delayed, if it is. `joined`: the member whose
        heartbeat this is, if it joined with it (Kafka hands it to the assignor after the others)."""
        now = self.clock.now_ms()
        if group.initial_due is not None:
            if now < group.initial_due:
                return DELAYED_INITIAL
            group.initial_due = None
        if group.group_epoch <= group.assignment_epoch:
            return None
        elif group.last_assignment_ms is not None and \
                now < group.last_assignment_ms + self.setting(group.group_id, "assignment.interval.ms"):
            return DELAYED_INTERVAL
        configured = group.configured
        if configured is not None and configured.ready:
            specs = {m.member_id: MemberSpec(m.process_id, group.target.get(m.member_id, m.assigned),
                                             {(s, p): o for s, p, o in m.task_offsets})
                     for m in (group.members[i] for i in _assignor_order(group, joined))}
            stateful = {s.subtopology_id for s in group.topology.subtopologies if s.state_changelog_topics} \
                if group.topology is not None else set()
            group.target = assign(specs, configured.partitions, self.setting(group.group_id, "num.standby.replicas"),
                                  stateful)
        else:
            group.target = {m: Tasks() for m in group.members}
        group.assignment_epoch = group.group_epoch
        group.last_assignment_ms = now
        if any(m.user_endpoint is not None for m in group.members.values()):
            group.endpoint_information_epoch += 1
        return None

    def _reconcile(self, group: StreamsGroup, member: StreamsMember, owned: TaskSet | None, now: int
                   ) -> StreamsMember:
        target = group.target.get(member.member_id, Tasks())
        if member.state == MemberState.UNREVOKED_TASKS:
            if owned is None or tasks_of(owned) & tasks_of(member.pending_revocation):
                return member  # still revoking
            member = replace(member, pending_revocation={}, state=MemberState.STABLE, rebalance_deadline=None)
        if member.member_epoch == group.assignment_epoch and member.state == MemberState.STABLE:
            return member
        mine = tasks_of(member.assigned.active)
        revoke = mine - tasks_of(target.active)
        if revoke:
            keep = task_set(mine & tasks_of(target.active))
            return replace(member, state=MemberState.UNREVOKED_TASKS, pending_revocation=task_set(revoke),
                           assigned=Tasks(keep, _both(member.assigned.standby, target.standby),
                                          _both(member.assigned.warmup, target.warmup)),
                           rebalance_deadline=now + member.rebalance_timeout_ms)
        held = set()
        for other in group.members.values():
            if other.member_id != member.member_id:
                held |= tasks_of(other.assigned.active) | tasks_of(other.pending_revocation)
        wanted = tasks_of(target.active)
        free = wanted - held
        return replace(member, previous_member_epoch=member.member_epoch, member_epoch=group.assignment_epoch,
                       state=MemberState.UNRELEASED_TASKS if free != wanted else MemberState.STABLE,
                       assigned=Tasks(task_set(free), target.standby, target.warmup), rebalance_deadline=None)

    def _endpoints(self, group: StreamsGroup) -> list[dict[str, Any]]:
        out = []
        for m in group.members.values():
            if m.user_endpoint is None:
                continue
            out.append({"user_endpoint": {"host": m.user_endpoint[0], "port": m.user_endpoint[1]},
                        "active_partitions": self._partitions(group, m.assigned.active),
                        "standby_partitions": self._partitions(group, _union(m.assigned.standby,
                                                                             m.assigned.warmup))})
        return out

    def _partitions(self, group: StreamsGroup, ts: TaskSet) -> list[dict[str, Any]]:
        by_topic: dict[str, set[int]] = {}
        subs = {s.subtopology_id: s for s in (group.topology.subtopologies if group.topology else ())}
        for sid, ps in ts.items():
            s = subs.get(sid)
            if s is None:
                continue
            for t in (*s.source_topics, *(r.name for r in s.repartition_source_topics)):
                by_topic.setdefault(t, set()).update(ps)
        return [{"topic": t, "partitions": sorted(ps)} for t, ps in sorted(by_topic.items())]

    # --- leaving and fencing ----------------------------------------------------------------------
    def _leave(self, r: StreamsHeartbeat) -> dict[str, Any]:
        group = self.groups.get(r.group_id)
        if group is None:
            raise StreamsHeartbeatError(ErrorCode.GROUP_ID_NOT_FOUND, f"Streams group {r.group_id} not found.")
        out = {"error_code": ErrorCode.NONE, "error_message": None, "member_id": r.member_id,
               "member_epoch": r.member_epoch, "heartbeat_interval_ms": 0}
        if r.instance_id is not None:
            member_id = group.static_members.get(r.instance_id)
            member = group.members.get(member_id) if member_id is not None else None
            if member is None:
                raise StreamsHeartbeatError(ErrorCode.UNKNOWN_MEMBER_ID, f"Instance id {r.instance_id} is unknown.")
            if member.member_id != r.member_id:
                raise StreamsHeartbeatError(
                    ErrorCode.FENCED_INSTANCE_ID, f"Static member {r.member_id} with instance id {r.instance_id} "
                    f"was fenced by member {member.member_id}.")
            if r.member_epoch == LEAVE_GROUP_STATIC_MEMBER_EPOCH:
                member.member_epoch = LEAVE_GROUP_STATIC_MEMBER_EPOCH  # keeps its tasks until its session ends
                return out
        else:
            member = group.members.get(r.member_id)
            if member is None:
                raise StreamsHeartbeatError(ErrorCode.UNKNOWN_MEMBER_ID,
                                            f"Member {r.member_id} is not a member of group {r.group_id}.")
        self.fence(group, member)
        return out

    def fence(self, group: StreamsGroup, member: StreamsMember) -> None:
        group.members.pop(member.member_id, None)
        group.target.pop(member.member_id, None)
        if member.instance_id is not None and group.static_members.get(member.instance_id) == member.member_id:
            del group.static_members[member.instance_id]
        group.group_epoch += 1
        if not group.members:
            group.empty_since = self.clock.now_ms()
            group.shutdown_requested = False
            group.target = {}
            group.assignment_epoch = group.group_epoch
            group.last_assignment_ms = None  # Kafka 4.4 writes the empty group's target at timestamp 0
        else:
            self.maybe_assign(group)

    def tick(self) -> None:
        now = self.clock.now_ms()
        for group in list(self.groups.values()):
            changed = False
            for member in list(group.members.values()):
                if (member.session_deadline is not None and now >= member.session_deadline) or (
                        member.rebalance_deadline is not None and now >= member.rebalance_deadline):
                    self.fence(group, member)
                    changed = True
            if group.members and group.initial_due is not None and now >= group.initial_due:
                self.maybe_assign(group)
                changed = True
            if changed:
                self.records.streams_group(group)

    def next_deadline(self) -> int | None:
        times = [t for g in self.groups.values() for t in (
            g.initial_due, *(m.session_deadline for m in g.members.values()),
            *(m.rebalance_deadline for m in g.members.values())) if t is not None]
        return min(times, default=None)

    def delete_group(self, group_id: str) -> ErrorCode:
        group = self.groups.get(group_id)
        if group is None:
            return ErrorCode.GROUP_ID_NOT_FOUND
        if group.members:
            return ErrorCode.NON_EMPTY_GROUP
        del self.groups[group_id]
        self.records.offsets(group_id, dict.fromkeys(group.offsets))
        self.records.streams_group(None, group_id)
        return ErrorCode.NONE

    def remove_partitions(self, topic: str) -> None:
        ConsumerGroupOffsets.remove_partitions(self, topic)  # type: ignore[arg-type]


def _both(a: TaskSet, b: TaskSet) -> TaskSet:
    return task_set(tasks_of(a) & tasks_of(b))


def _union(a: TaskSet, b: TaskSet) -> TaskSet:
    return task_set(tasks_of(a) | tasks_of(b))


def new_member_id() -> str:
    return uuid.uuid4().hex


def _assignor_order(group: StreamsGroup, joined: str | None) -> list[str]:
    """The member ids in the order Kafka 4.4.0's coordinator hands them to the task assignor: its group's members
    in their TimelineHashMap's order, then the member joining with this heartbeat (laid over them); the assignor's
    ties follow it."""
    base = [m for m in group.members if m != joined]
    group.members_high_water = max(group.members_high_water, len(base))
    return timeline_order(base, timeline_capacity(group.members_high_water)) + ([joined] if joined is not None else [])


def _assignment_epochs(member: StreamsMember, target_epoch: int) -> dict[tuple[str, int], int]:
    """As Kafka 4.4's CurrentAssignmentBuilder: an active task the member had keeps its assignment epoch, one
    new to it gets the target assignment's epoch; the tasks it gave up are forgotten."""
    held = tasks_of(member.assigned.active) | tasks_of(member.pending_revocation)
    return {t: member.active_epochs.get(t, target_epoch) for t in held}
