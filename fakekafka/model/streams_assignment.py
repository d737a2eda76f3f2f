"""The task assignment of streams groups: Kafka's default `sticky` task assignor and the reconciliation of a
member towards its target. Pure functions.

A task is (subtopology id, partition). The sticky assignor makes Kafka 4.4.0's StickyTaskAssignor's choices for
the same input (checked case by case against Kafka's own class: tests/conformance/test_streams_sticky_assignor.py).
Each member has a quota, ceil(tasks / members), recomputed for the others once a member reaches it: one for active
tasks, one for all tasks (standbys counted). Active tasks, by partition then subtopology: to their previous
owner while under its quota; then to their previous standby owners (previous standbys first, then those whose
reported task offsets show the state furthest along; a later candidate wins only if both its process's and its
own load are lower); the rest, by subtopology then partition, to the least-loaded process (tasks over members)
and its least-loaded member. Standby tasks, only for stateful subtopologies (with changelogs), in reverse
partition order: to the previous active owner, then the ranked previous standby owners, while under the total
quota and on a process without the task; the rest to the least-loaded processes. Ties fall as Kafka's HashMap
iteration and PriorityQueue orders make them (`fakekafka.model.java_order`). No warm-up tasks, as in Kafka
4.4.0 (its assignor's MemberAssignment has none and its AssignmentRefiner returns the assignment unchanged),
and no rack-aware placement (its sticky assignor reads no rack tags); compat/KNOWN_DIFFERENCES.md.

Reconciliation, as Kafka's streams CurrentAssignmentBuilder: a member first gives up the active tasks it must
lose (UNREVOKED_TASKS: its epoch stays until it stops reporting them); then it moves to the target's epoch, with
the active tasks another member still holds withheld until released (UNRELEASED_TASKS).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from enum import Enum

from fakekafka.model.java_order import JavaPriorityQueue, hashmap_order

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

        return {"active_tasks": one(self.active), "standby_tasks": one(self.standby), "warmup_tasks": one(self.warmup)}


@dataclass(frozen=True)
class MemberSpec:
    process_id: str
    previous: Tasks
    offsets: dict[tuple[str, int], int] = field(default_factory=dict)
    """The task offsets the member last reported (task -> its changelogs' offset sum): how far its state is."""


Task = tuple[str, int]


class _Process:
    """A process's members and what they were given so far, as Kafka's ProcessState: its load is its task count
    over its member count; its members' least-loaded heap is rebuilt after a task goes to a chosen member."""

    def __init__(self, process_id: str) -> None:
        self.process_id = process_id
        self.members: list[str] = []
        self.counts: dict[str, int] = {}
        self.tasks: set[Task] = set()
        self.task_count = 0
        self.active: dict[str, set[Task]] = {}
        self.standby: dict[str, set[Task]] = {}
        self._by_load: JavaPriorityQueue[list[object]] | None = None

    @property
    def load(self) -> float:
        return self.task_count / len(self.members)

    def add_member(self, member_id: str) -> None:
        self.members.append(member_id)
        self.counts[member_id] = 0

    def add(self, member_id: str, task: Task, active: bool) -> int:
        """Gives the task to this member; its new task count."""
        self._by_load = None
        return self._add(member_id, task, active)

    def _add(self, member_id: str, task: Task, active: bool) -> int:
        self.task_count += 1
        self.tasks.add(task)
        (self.active if active else self.standby).setdefault(member_id, set()).add(task)
        self.counts[member_id] += 1
        return self.counts[member_id]

    def add_to_least_loaded(self, task: Task, active: bool) -> int:
        if len(self.members) == 1:
            return self._add(self.members[0], task, active)
        if self._by_load is None:
            self._by_load = JavaPriorityQueue(lambda e: e[1])  # type: ignore[arg-type, return-value]
            for m in self._order:
                self._by_load.add([m, self.counts[m]])
        entry = self._by_load.poll()
        assert entry is not None
        entry[1] = self._add(str(entry[0]), task, active)
        self._by_load.add(entry)
        return int(entry[1])  # type: ignore[call-overload]

    @property
    def _order(self) -> list[str]:
        return hashmap_order(self.members)


@dataclass
class _Quota:
    """A per-member quota, as Kafka's: ceil(tasks / members), and once a member reaches it, the rest shared
    among the others."""

    tasks: int
    members: int

    @property
    def per_member(self) -> int:
        return 0 if self.members == 0 else -(-self.tasks // self.members)

    def reached(self, count: int) -> None:
        if count == self.per_member:
            self.members -= 1
            self.tasks -= count


def assign(
    members: dict[str, MemberSpec], task_counts: dict[str, int], num_standby: int, stateful: Iterable[str] | None = None
) -> dict[str, Tasks]:
    """member id -> its target tasks, as Kafka 4.4.0's StickyTaskAssignor chooses them for the same input (its
    HashMap and PriorityQueue orders included, `fakekafka.model.java_order`). `stateful`: the subtopologies with
    state changelog topics, the only ones given standby tasks (None: all)."""
    if not members:
        return {}
    subtopologies = sorted(task_counts)
    stateful_set = set(subtopologies if stateful is None else stateful)
    order = hashmap_order(members)
    total_tasks = sum(task_counts.values()) + num_standby * sum(
        task_counts[s] for s in subtopologies if s in stateful_set
    )
    active_quota = _Quota(sum(task_counts.values()), len(members))
    total_quota = _Quota(total_tasks, len(members))
    procs: dict[str, _Process] = {}
    prev_active: dict[Task, str] = {}
    candidates: dict[Task, list[tuple[int, int, str]]] = {}
    for m in order:
        spec = members[m]
        procs.setdefault(spec.process_id, _Process(spec.process_id)).add_member(m)
        for t in tasks_of(spec.previous.active):
            prev_active[t] = m
        prev_standby = tasks_of(spec.previous.standby)
        for t in prev_standby:
            candidates.setdefault(t, []).append((0, -spec.offsets.get(t, 0), m))
        for t, offset in spec.offsets.items():
            if t not in prev_standby:
                candidates.setdefault(t, []).append((1, -offset, m))
    ranked = {t: [m for _, _, m in sorted(cs, key=lambda c: c[:2])] for t, cs in candidates.items()}
    process_order = [
        procs[p] for p in hashmap_order((members[m].process_id for m in order), len(members), compute_if_absent=True)
    ]

    def proc(m: str) -> _Process:
        return procs[members[m].process_id]

    def prev_least_loaded(prev: list[str] | None, task: Task | None) -> str | None:
        """Kafka's findPrevMemberWithLeastLoad: the first candidate, replaced only by one both of whose process
        and own load are lower."""
        best: str | None = None
        best_process = best_member = 0.0
        for m in prev or ():
            p = proc(m)
            if task is not None and task in p.tasks:
                continue
            if best is None or (p.load < best_process and p.counts[m] < best_member):
                best, best_process, best_member = m, p.load, p.counts[m]
        return best

    def give(m: str, task: Task, active: bool) -> None:
        count = proc(m).add(m, task, active)
        if active:
            active_quota.reached(count)
        total_quota.reached(count)

    tasks = sorted(((s, p) for s in subtopologies for p in range(task_counts[s])), key=lambda t: (t[1], t[0]))
    left: list[Task] = []
    for t in tasks:
        m = prev_active.get(t)
        if m is not None and proc(m).counts[m] < active_quota.per_member:
            give(m, t, True)
        else:
            left.append(t)
    rest: list[Task] = []
    for t in left:
        m = prev_least_loaded(ranked.get(t), None)
        if m is not None and proc(m).counts[m] < active_quota.per_member:
            give(m, t, True)
        else:
            rest.append(t)
    by_load: JavaPriorityQueue[_Process] = JavaPriorityQueue(lambda p: p.load)
    for p in process_order:
        by_load.add(p)
    for t in sorted(rest):
        p = by_load.poll()
        assert p is not None
        count = p.add_to_least_loaded(t, True)
        active_quota.reached(count)
        total_quota.reached(count)
        by_load.add(p)

    if num_standby > 0:
        _assign_standby(
            procs,
            process_order,
            members,
            prev_active,
            ranked,
            tasks,
            stateful_set,
            num_standby,
            total_quota,
            prev_least_loaded,
        )
    out: dict[str, Tasks] = {}
    for m in members:
        p = proc(m)
        out[m] = Tasks(task_set(p.active.get(m, ())), task_set(p.standby.get(m, ())))
    return out


def _assign_standby(
    procs: dict[str, _Process],
    process_order: list[_Process],
    members: dict[str, MemberSpec],
    prev_active: dict[Task, str],
    ranked: dict[Task, list[str]],
    tasks: list[Task],
    stateful: set[str],
    num_standby: int,
    total_quota: _Quota,
    prev_least_loaded: Callable[[list[str] | None, Task | None], str | None],
) -> None:
    """Kafka's assignStandby: each stateful task's standbys to its previous active owner, then its ranked
    previous standby owners, while under the quota and on a process without the task; the rest to the
    least-loaded processes."""

    def proc(m: str) -> _Process:
        return procs[members[m].process_id]

    to_least_loaded: list[tuple[Task, int]] = []
    for t in sorted((t for t in tasks if t[0] in stateful), key=lambda t: (t[1], t[0]), reverse=True):
        for i in range(num_standby):
            m = prev_active.get(t)
            if m is None or t in proc(m).tasks or proc(m).counts[m] >= total_quota.per_member:
                m = prev_least_loaded(ranked.get(t), t) if ranked.get(t) else None
                if m is None or proc(m).counts[m] >= total_quota.per_member:
                    to_least_loaded.append((t, num_standby - i))
                    break
            total_quota.reached(proc(m).add(m, t, False))
    by_load: JavaPriorityQueue[_Process] = JavaPriorityQueue(lambda p: p.load)
    for p in process_order:
        by_load.add(p)
    for t, remaining in sorted(to_least_loaded, reverse=True):
        for _ in range(remaining):
            if not _standby_to_least_loaded(by_load, t, total_quota):
                break


def _standby_to_least_loaded(by_load: JavaPriorityQueue[_Process], task: Task, total_quota: _Quota) -> bool:
    """Kafka's assignStandbyToMemberWithLeastLoad: the least-loaded process without the task, each process
    looked at put back after."""
    p = by_load.poll()
    if p is None:
        return False
    found = False
    if task not in p.tasks:
        found = True
        total_quota.reached(p.add_to_least_loaded(task, False))
    elif len(by_load):
        found = _standby_to_least_loaded(by_load, task, total_quota)
    by_load.add(p)
    return found
