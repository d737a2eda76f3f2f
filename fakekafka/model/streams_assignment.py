"""The task assignment of streams groups: Kafka's default `sticky` task assignor and the reconciliation of a
member towards its target. Pure functions.

A task is (subtopology id, partition). The sticky assignor, as Kafka 4.4's StickyTaskAssignor: active tasks stay
with the member that had them while it is not above its balanced share, the rest go to the least-loaded member
(members of the least-loaded process first); each task then gets `num.standby.replicas` standby tasks on other
processes, as Kafka 4.4 ranks their candidates: previous standby owners first, then those that report the task's
state furthest along (the offset sums of their heartbeats' task offsets), then the least-loaded. No warm-up tasks,
as in Kafka 4.4.0 (its assignor's MemberAssignment has none and its AssignmentRefiner returns the assignment
unchanged), and no rack-aware placement (its sticky assignor reads no rack tags); compat/KNOWN_DIFFERENCES.md.

Reconciliation, as Kafka's streams CurrentAssignmentBuilder: a member first gives up the active tasks it must
lose (UNREVOKED_TASKS: its epoch stays until it stops reporting them); then it moves to the target's epoch, with
the active tasks another member still holds withheld until released (UNRELEASED_TASKS).
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass, field
from enum import Enum

__all__ = ["MemberState", "Tasks", "TaskSet", "assign", "tasks_of"]

TaskSet = dict[str, frozenset[int]]
"""subtopology id -> partitions."""


def tasks_of(ts: TaskSet) -> set[tuple[str, int]]:
    return {(s, p) for s, ps in ts.items() for p in ps}


def task_set(tasks: Iterable[tuple[str, int]]) -> TaskSet:
    out: dict[str, set[int]] = {}
    for s, p in tasks:
        out.setdefault(s, set()).add(p)
    return {s: frozenset(ps) for s, ps in sorted(out.items())}


class MemberState(Enum):
    STABLE = "STABLE"
    UNREVOKED_TASKS = "UNREVOKED_TASKS"
    UNRELEASED_TASKS = "UNRELEASED_TASKS"
    UNKNOWN = "UNKNOWN"


@dataclass(frozen=True)
class Tasks:
    active: TaskSet = field(default_factory=dict)
    standby: TaskSet = field(default_factory=dict)
    warmup: TaskSet = field(default_factory=dict)

    def wire(self) -> dict[str, list[dict[str, object]]]:
        def one(ts: TaskSet) -> list[dict[str, object]]:
            return [{"subtopology_id": s, "partitions": sorted(ps)} for s, ps in sorted(ts.items()) if ps]
        return {"active_tasks": one(self.active), "standby_tasks": one(self.standby),
                "warmup_tasks": one(self.warmup)}


@dataclass(frozen=True)
class MemberSpec:
    process_id: str
    previous: Tasks
    offsets: dict[tuple[str, int], int] = field(default_factory=dict)
    """The task offsets the member last reported (task -> its changelogs' offset sum): how far its state is."""


def _order(task: tuple[str, int]) -> tuple[int, str, int]:
    s, p = task
    return (int(s) if s.isdigit() else 1 << 30, s, p)


def assign(members: dict[str, MemberSpec], task_counts: dict[str, int], num_standby: int) -> dict[str, Tasks]:
    """member id -> its target tasks."""
    if not members:
        return {}
    all_tasks = sorted(((s, p) for s, n in task_counts.items() for p in range(n)), key=_order)
    quota = math.ceil(len(all_tasks) / len(members))
    active: dict[str, set[tuple[str, int]]] = {m: set() for m in members}
    owner: dict[tuple[str, int], str] = {}
    for m, spec in sorted(members.items()):
        for t in sorted(tasks_of(spec.previous.active), key=_order):
            if t in owner or t not in set(all_tasks):
                continue
            if len(active[m]) < quota:
                active[m].add(t)
                owner[t] = m
    process_load: dict[str, int] = {}
    for m, ts in active.items():
        process_load[members[m].process_id] = process_load.get(members[m].process_id, 0) + len(ts)
    for t in all_tasks:
        if t in owner:
            continue
        m = min(members, key=lambda m: (len(active[m]), process_load[members[m].process_id], m))
        active[m].add(t)
        owner[t] = m
        process_load[members[m].process_id] += 1
    standby: dict[str, set[tuple[str, int]]] = {m: set() for m in members}
    if num_standby > 0:
        previous_standby = {m: tasks_of(spec.previous.standby) for m, spec in members.items()}
        for t in all_tasks:
            used = {members[owner[t]].process_id}
            for _ in range(num_standby):
                candidates = [m for m in members if members[m].process_id not in used]
                if not candidates:
                    break
                m = min(candidates, key=lambda m: (t not in previous_standby[m], -members[m].offsets.get(t, -1),
                                                    len(standby[m]) + len(active[m]), m))
                standby[m].add(t)
                used.add(members[m].process_id)
    return {m: Tasks(task_set(active[m]), task_set(standby[m])) for m in members}
