"""Members in and out of KIP-848 consumer groups, and the epochs that follow. Pure state.

What both protocols' requests build on (ConsumerGroupHeartbeat in `fakekafka.model.consumer_group`, the classic
JoinGroup/SyncGroup/Heartbeat of a mixed group in `fakekafka.model.mixed_groups`): a member is stored and the
group epoch bumped when what the assignment depends on changed (its subscription, the subscribed topics); a new
target assignment follows (at once, or in a heartbeat once `group.consumer.assignment.interval.ms` has passed); a
member that leaves, is removed by LeaveGroup or misses its session or rebalance timeout is fenced, and a group
left with only classic members goes back to being a classic group. Empty groups lose their offsets after the
retention time and then go.
"""

from __future__ import annotations

import heapq
import uuid
from collections.abc import Callable

from fakekafka.model.clock import Clock
from fakekafka.model.consumer_assignment import subscription_metadata, target_assignment
from fakekafka.model.consumer_group_metadata import (
    ConsumerGroup,
    ConsumerGroupConfig,
    ConsumerMember,
    MemberState,
    TopicInfo,
)
from fakekafka.model.group import GroupCoordinator
from fakekafka.model.group_metadata import RecordSink
from fakekafka.model.metadata_hash import group_hash
from fakekafka.model.mixed_groups import downgrade
from fakekafka.wire import ErrorCode

__all__ = ["ConsumerGroupMembers"]


class ConsumerGroupMembers:
    """Members in and out of consumer groups and the epochs that follow: a member stored bumps the group epoch
    when what the assignment depends on changed, a new target assignment is computed for it, members are fenced
    (left, expired, timed out) and the timers fire. `topics()` gives the cluster's topics by name (the metadata
    image the assignment is computed from), `topic_hash(name)` a topic's hash (its id, name and partitions'
    racks; 0 if it does not exist); `group_config(group_id)` a group's dynamic configs
    (`consumer.session.timeout.ms`, `consumer.heartbeat.interval.ms`)."""

    def __init__(self, clock: Clock, config: ConsumerGroupConfig | None = None,
                 topics: Callable[[], dict[str, TopicInfo]] | None = None,
                 group_config: Callable[[str], dict[str, str]] | None = None,
                 notify: Callable[[object], None] | None = None, classic: GroupCoordinator | None = None,
                 topic_hash: Callable[[str], int] | None = None) -> None:
        self.clock = clock
        self.config = config or ConsumerGroupConfig()
        self.classic = classic
        """The classic coordinator beside this one: a classic group is upgraded from it, downgraded into it."""
        self.groups: dict[str, ConsumerGroup] = {}
        self._topics = topics or dict
        self._topic_hash = topic_hash or (lambda _: 0)
        """A topic's hash in the groups' metadata hash (`fakekafka.model.metadata_hash.topic_hash`)."""
        self._group_config = group_config or (lambda _: {})
        self._notify = notify or (lambda _: None)
        self.records = RecordSink()
        """Told each change Kafka writes to `__consumer_offsets` (the cluster's `OffsetsTopic`)."""
        self._unrecorded: set[str] = set()
        """Groups changed outside a request (new topics' epochs): their records are written at the next tick."""
        self._replicas_moved = False
        self._watched: dict[str, None] = {}
        """The groups the tick looks at (by id): those with members or records to write, added where that begins
        (`watch`). An empty group leaves it for `_expiring` until its expiry is due: thousands of empty groups cost
        the tick nothing (walking them every tick touched memory that a quiet broker had let go cold: 27 ms a tick
        for 1,000 of them)."""
        self._expiring: list[tuple[int, str]] = []
        """A heap of (when an empty group's expiry is next looked at, its id)."""
        self._swept_ms: int | None = None
        """When every group was last looked at (`SWEEP_MS`)."""

    SWEEP_MS = 30_000
    """Every group is looked at this often (model time) besides the watched ones: a path that gave a group
    members without `watch` would still have its timers fire."""

    def watch(self, group_id: str) -> None:
        """The tick looks at the group from now on (until it is empty and quiet again)."""
        self._watched[group_id] = None

    def _now(self) -> int:
        return self.clock.now_ms()

    def topics(self) -> dict[str, TopicInfo]:
        """The cluster's topics by name, as the assignment sees them."""
        return self._topics()

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


    def store_member(self, group: ConsumerGroup, member_id: str, member: ConsumerMember, bump: str | None) -> None:
        """The member stored (with its static id) and the group epoch bumped as Kafka 4.4 counts: once when its
        subscription changed (`bump` says why), once more when the group's topics (by name, existing or not) or
        their partitions changed (a new group's first member with a subscription lands at epoch 2)."""
        group.members[member_id] = member
        if member.instance_id is not None:
            group.static_members[member.instance_id] = member_id
        group.empty_since = None
        self.watch(group.group_id)
        if bump:
            self._bump(group, bump)
        elif not member.subscribed_topic_regex:
            return  # the group subscribes to the same names: new topics bumped it already (metadata_changed)
        if self.refresh_metadata(group):
            self._bump(group, "subscribed topics changed")

    def _bump(self, group: ConsumerGroup, why: str) -> None:
        group.group_epoch += 1
        group.history.append((self._now(), why, group.group_epoch, group.assignment_epoch))


    # --- subscriptions and the target assignment ----------------------------------------------------
    def subscription_metadata(self, group: ConsumerGroup) -> dict[str, tuple[uuid.UUID, int] | None]:
        return subscription_metadata(group, self._topics())

    def refresh_metadata(self, group: ConsumerGroup) -> bool:
        """The group's subscribed topics and metadata hash (Kafka's `computeMetadataHash`: of the subscribed
        topics that exist) brought up to date; whether either changed (Kafka bumps the group epoch when the hash
        does: a topic created, deleted, grown, or its replicas moved to other racks)."""
        metadata = self.subscription_metadata(group)
        digest = group_hash({n: self._topic_hash(n) for n, v in metadata.items() if v is not None})
        changed = metadata != group.subscription_metadata or digest != group.metadata_hash
        group.subscription_metadata, group.metadata_hash = metadata, digest
        return changed

    def metadata_changed(self) -> None:
        """Topics were created, deleted or grew partitions: each group whose subscribed topics changed gets a
        new group epoch (Kafka notices the new metadata image at the group's next heartbeat; here at once,
        so that describe shows it too)."""
        for group in self.groups.values():
            if not group.members:
                continue
            if self.refresh_metadata(group):
                self._bump(group, "metadata changed")
                self._unrecorded.add(group.group_id)
                self.watch(group.group_id)

    def replicas_changed(self) -> None:
        """A reassignment changed partitions' replicas, so maybe their racks and the topics' hashes: compared at
        the next tick, as Kafka compares the hash at a group's next heartbeat after the new metadata image (a
        reassignment that starts and completes in between, within one rack, changes nothing)."""
        self._replicas_moved = True

    # --- target assignment ----------------------------------------------------------------------------
    def maybe_assign(self, group: ConsumerGroup) -> None:
        """The target assignment for the group's epoch, computed now unless `group.consumer.assignment.interval.ms`
        has not passed since the last one: then the first heartbeat (or classic JoinGroup) after it computes it.
        There is no timer: Kafka 4.4's `maybeUpdateTargetAssignment` runs only within a member's request, so a group
        nobody heartbeats to stays Assigning."""
        if group.group_epoch <= group.assignment_epoch:
            return
        interval = self.assignment_interval_ms(group.group_id)
        if interval > 0 and group.last_assignment_ms is not None and self._now() < group.last_assignment_ms + interval:
            return
        self._assign(group)

    def _assign(self, group: ConsumerGroup) -> None:
        group.target = target_assignment(group, self._topics(), self.config.assignors[0])
        group.assignment_epoch = group.group_epoch
        group.last_assignment_ms = self._now()
        group.history.append((self._now(), "target assignment", group.group_epoch, group.assignment_epoch))

    def fence(self, group: ConsumerGroup, member: ConsumerMember, why: str) -> None:
        """Removes the member; the others get a new target assignment (a new group epoch). If only classic
        members would be left, the group goes back to being a classic group instead (a downgrade, as Kafka's)."""
        if self._maybe_downgrade(group, {member.member_id}):
            return
        group.members.pop(member.member_id, None)
        group.target.pop(member.member_id, None)
        if member.instance_id is not None and group.static_members.get(member.instance_id) == member.member_id:
            del group.static_members[member.instance_id]
        self.refresh_metadata(group)
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
        group.last_assignment_ms = None
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
            self.refresh_metadata(group)
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
        return downgrade(self, self.classic, group, leaving)

    def expire_member(self, group_id: str, member_id: str) -> bool:
        group = self.groups.get(group_id)
        member = group.members.get(member_id) if group else None
        if group is None or member is None:
            return False
        self.fence(group, member, "session expired")
        self.records.consumer_group(group)
        return True

    # --- time ---------------------------------------------------------------------------------------
    def tick(self) -> None:
        now = self._now()
        if self._replicas_moved:
            self._replicas_moved = False
            self.metadata_changed()
        unrecorded, watched, expiring = self._unrecorded, self._watched, self._expiring
        retention, check = self.config.offsets_retention_ms, self.config.offsets_retention_check_interval_ms
        if self._swept_ms is None or not 0 <= now - self._swept_ms < self.SWEEP_MS:
            self._swept_ms = now
            watched.update(dict.fromkeys(self.groups))
        while expiring and expiring[0][0] <= now:
            watched[heapq.heappop(expiring)[1]] = None
        for group_id in list(watched):
            group = self.groups.get(group_id)
            if group is None:
                del watched[group_id]
                continue
            if not group.members and group_id not in unrecorded and (
                    group.empty_since is None or now < group.empty_since + (retention if group.offsets else check)):
                del watched[group_id]  # empty and quiet: looked at again when its expiry is due (or it changes)
                if group.empty_since is not None:
                    # looked at each check interval, as Kafka's cleanup runs: its offsets may go meanwhile
                    heapq.heappush(expiring, (group.empty_since + check if not group.offsets else min(
                        group.empty_since + retention, now + check), group_id))
                continue
            # what changed is written: what the timers did, a new topic's epoch, and a mixed group's classic
            # members (their JoinGroup, SyncGroup and Heartbeat write nothing themselves)
            changed = group.group_id in self._unrecorded
            self._unrecorded.discard(group.group_id)
            for m in list(group.members.values()):
                if self.groups.get(group.group_id) is not group:
                    break  # downgraded to a classic group
                if m.member_id not in group.members:
                    continue
                changed = changed or m.classic is not None
                if m.session_deadline is not None and m.session_deadline <= now:
                    changed = True
                    self.fence(group, m, "session expired")
                elif m.join_deadline is not None and m.join_deadline <= now:
                    self.fence(group, m, "the classic member failed to join within the rebalance timeout")
                elif m.sync_deadline is not None and m.sync_deadline <= now:
                    self.fence(group, m, "the classic member failed to sync within the rebalance timeout")
                elif m.rebalance_deadline is not None and m.rebalance_deadline <= now \
                        and m.member_epoch == m.rebalance_epoch and m.state == MemberState.UNREVOKED_PARTITIONS:
                    self.fence(group, m, "rebalance timeout")
                    changed = True
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
            if changed:
                self.records.consumer_group(group)

    def next_deadline(self) -> int | None:
        times: list[int] = [self._expiring[0][0]] if self._expiring else []
        retention, check = self.config.offsets_retention_ms, self.config.offsets_retention_check_interval_ms
        for group_id in self._watched:
            g = self.groups.get(group_id)
            if g is None:
                continue
            for m in g.members.values():
                times += [t for t in (m.session_deadline, m.rebalance_deadline, m.join_deadline, m.sync_deadline)
                          if t is not None]
            if not g.members and g.empty_since is not None:
                times.append(g.empty_since + (retention if g.offsets else check))
        return min(times, default=None)
