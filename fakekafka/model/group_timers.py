"""The classic group coordinator's timers: sessions, rebalance and sync timeouts, the initial rebalance delay,
and the zero-delay initial join Kafka still runs on its timer. A mixin of `GroupCoordinator`. Pure state."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from fakekafka.model.clock import Clock
from fakekafka.model.group_metadata import Group, GroupConfig, GroupState, Member

__all__ = ["ClassicGroupTimers"]


class ClassicGroupTimers:
    """Every deadline of the classic groups is a clock reading checked in `tick()`; a `ManualClock` decides when
    each one fires."""

    clock: Clock
    config: GroupConfig
    groups: dict[str, Group]
    due: dict[str, None]
    on_due: Callable[[], None]

    if TYPE_CHECKING:  # the coordinator's own steps, which the timers take
        def _now(self) -> int: ...
        def _maybe_complete_join(self, group: Group) -> None: ...
        def _complete_join(self, group: Group) -> None: ...
        def _remove_member(self, group: Group, member: Member) -> None: ...
        def _remove_member_and_update(self, group: Group, member: Member) -> None: ...
        def _maybe_prepare_rebalance(self, group: Group) -> None: ...
        def _expire(self, group: Group, now: int) -> None: ...
        def _expiry_deadlines(self, group: Group) -> list[int]: ...

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
                    self._initial_delay_passed(group, now)
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
            self._expire(group, now)

    def _initial_delay_passed(self, group: Group, now: int) -> None:
        """The initial delay's timer: waits once more while members keep coming (within the rebalance timeout),
        else completes the join (Kafka's tryCompleteInitialRebalanceElseSchedule)."""
        if group.initial_delay_deadline is None or (group.initial_delay_deadline > now
                                                    and (group.initial_delay_limit or now) > now):
            return
        if group.new_member_added and group.initial_delay_limit and now < group.initial_delay_limit:
            group.new_member_added = False
            group.initial_delay_deadline = min(now + self.config.initial_rebalance_delay_ms, group.initial_delay_limit)
            self._due_if_now(group, now)
        else:
            self._complete_join(group)

    def _due_if_now(self, group: Group, now: int) -> None:
        """A zero-delay initial join is not completed in the request that started it: it is due (see `due`)."""
        if group.initial_delay_deadline == now:
            self.due[group.group_id] = None
            self.on_due()

    def run_due(self) -> None:
        """Fires the zero-delay initial joins that became due (see `due`); those that wait once more (a member
        joined meanwhile) are due again."""
        due, self.due = self.due, {}
        now = self._now()
        for group_id in due:
            group = self.groups.get(group_id)
            if group is not None and group.state == GroupState.PREPARING_REBALANCE:
                self._initial_delay_passed(group, now)

    def next_deadline(self) -> int | None:
        """The earliest time `tick` has something to do (for the server's timer)."""
        times: list[int] = []
        for g in self.groups.values():
            times.extend(g.pending_members.values())
            for t in (g.initial_delay_deadline, g.join_deadline, g.sync_deadline):
                if t is not None:
                    times.append(t)
            times.extend(m.heartbeat_deadline for m in g.members.values() if m.join is None and m.sync is None)
            times.extend(self._expiry_deadlines(g))
        return min(times, default=None)
