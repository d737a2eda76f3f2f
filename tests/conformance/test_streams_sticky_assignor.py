"""fakekafka's streams sticky task assignor against Kafka 4.4.0's own `StickyTaskAssignor`, run in a JVM on the
same input (tests/conformance/java/StickyAssignorDriver.java, with Kafka's jars from `kafka_lib()`).

The cases are where Kafka's quotas decide: several members in one process (unequal process capacity), a member
with more previous tasks than its quota, previous owners that left, standby tasks with num.standby.replicas 0-2
(stateful and stateless subtopologies), reported task offsets ranking standby candidates, and groups that members
join and leave in sequence, each assignment the previous one of the next. A seeded table: the same cases every
run, every one must come out task for task as Kafka's.
"""

from __future__ import annotations

import random
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from fakekafka.model.java_order import hashmap_order, timeline_capacity, timeline_order
from fakekafka.model.streams_assignment import MemberSpec, Tasks, assign, task_set, tasks_of
from fakekafka.testing.apache_kafka import kafka_lib
from tests import javautil

DRIVER = Path(__file__).resolve().parent / "java" / "StickyAssignorDriver.java"
Assignment = dict[str, Tasks]


@dataclass
class Case:
    standbys: int
    partitions: dict[str, int]
    stateful: set[str]
    members: dict[str, MemberSpec]
    """In the order they are put into Kafka's HashMap."""

    def lines(self) -> list[str]:
        out = [f"case {self.standbys}"]
        out += [f"sub {s} {n} {int(s in self.stateful)}" for s, n in self.partitions.items()]
        for m, spec in self.members.items():
            out.append(f"member {m} {spec.process_id}")
            out += [f"active {m} {s} {p}" for s, p in sorted(tasks_of(spec.previous.active))]
            out += [f"standby {m} {s} {p}" for s, p in sorted(tasks_of(spec.previous.standby))]
            out += [f"offset {m} {s} {p} {o}" for (s, p), o in sorted(spec.offsets.items())]
        return [*out, "end"]


class KafkaAssignor:
    """One JVM answering case after case."""

    def __init__(self, classes: Path, lib: Path) -> None:
        cp = f"{classes}:{lib}/*"
        self.proc = subprocess.Popen(
            ["java", *javautil.FAST_START, "-cp", cp, "StickyAssignorDriver"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )

    def assign(self, case: Case) -> Assignment:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.write("\n".join(case.lines()) + "\n")
        self.proc.stdin.flush()
        got: dict[str, tuple[set[tuple[str, int]], set[tuple[str, int]]]] = {m: (set(), set()) for m in case.members}
        while (line := self.proc.stdout.readline().split()) != ["end"]:
            assert line, "Kafka's assignor driver stopped"
            kind, m, s, p = line
            got[m][0 if kind == "A" else 1].add((s, int(p)))
        return {m: Tasks(task_set(a), task_set(sb)) for m, (a, sb) in got.items()}

    def close(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        self.proc.wait(timeout=30)


@pytest.fixture(scope="module")
def kafka() -> Iterator[KafkaAssignor]:
    lib = kafka_lib()
    if lib is None:
        pytest.skip("Apache Kafka 4.4.0's jars are not installed")
    classes = javautil.compile_java(DRIVER, cp=f"{lib}/*")
    k = KafkaAssignor(classes, lib)
    yield k
    k.close()


def _fake(case: Case) -> Assignment:
    return assign(case.members, case.partitions, case.standbys, case.stateful)


def _member_id(rng: random.Random) -> str:
    """Like Kafka Streams' member ids (random UUIDs), so the HashMap orders are as varied as a real group's."""
    a, b, c, d, e = (rng.getrandbits(n) for n in (32, 16, 16, 16, 48))
    return f"{a:08x}-{b:04x}-{c:04x}-{d:04x}-{e:012x}"


def _topology(rng: random.Random) -> tuple[dict[str, int], set[str]]:
    subs = {str(i): rng.randint(1, 9) for i in range(rng.randint(1, 3))}
    return subs, {s for s in subs if rng.random() < 0.7}


def _random_case(rng: random.Random) -> Case:
    """Processes of 1-3 members; previous tasks dealt out at random (some members far above their quota, some
    tasks owned by no one present), standbys and reported offsets on some."""
    partitions, stateful = _topology(rng)
    tasks = [(s, p) for s, n in partitions.items() for p in range(n)]
    members: dict[str, MemberSpec] = {}
    for proc in range(rng.randint(1, 4)):
        for _ in range(rng.choice([1, 1, 2, 3])):
            members[_member_id(rng)] = MemberSpec(f"process-{proc}", Tasks())
    ids = list(members)
    active: dict[str, set[tuple[str, int]]] = {m: set() for m in ids}
    standby: dict[str, set[tuple[str, int]]] = {m: set() for m in ids}
    heavy = rng.choice(ids)
    for t in tasks:
        r = rng.random()
        if r < 0.35:
            active[heavy].add(t)
        elif r < 0.8:
            active[rng.choice(ids)].add(t)
        if t[0] in stateful and rng.random() < 0.4:
            standby[rng.choice(ids)].add(t)
    for m in ids:
        standby[m] -= active[m]
        offsets = {t: rng.randint(0, 500) for t in tasks if rng.random() < 0.25}
        members[m] = MemberSpec(members[m].process_id, Tasks(task_set(active[m]), task_set(standby[m])), offsets)
    return Case(rng.choice([0, 1, 1, 2]), partitions, stateful, members)


@pytest.mark.parametrize("seed", range(8))
def test_same_assignment_as_kafka_random_groups(kafka: KafkaAssignor, seed: int) -> None:
    rng = random.Random(seed)
    for i in range(100):
        case = _random_case(rng)
        assert _fake(case) == kafka.assign(case), f"case {i} of seed {seed}: {case.lines()}"


@pytest.mark.parametrize("seed", range(12))
def test_same_assignments_as_kafka_members_joining_and_leaving(kafka: KafkaAssignor, seed: int) -> None:
    """Members join one by one (some into a process already there), then leave in random order; each
    assignment is fed back as the next one's previous tasks, as the coordinator does with its target."""
    rng = random.Random(1000 + seed)
    partitions, stateful = _topology(rng)
    standbys = rng.choice([1, 2]) if stateful else 0
    processes = [f"process-{i}" for i in range(rng.randint(2, 4))]
    current: dict[str, MemberSpec] = {}
    joining = [(_member_id(rng), rng.choice(processes)) for _ in range(rng.randint(3, 7))]
    steps = [("join", m, p) for m, p in joining] + [("leave", m, "") for m, _ in rng.sample(joining, len(joining) - 1)]
    for step, (what, m, p) in enumerate(steps):
        if what == "join":
            current[m] = MemberSpec(p, Tasks())
        else:
            del current[m]
        case = Case(standbys, partitions, stateful, dict(current))
        ours, theirs = _fake(case), kafka.assign(case)
        assert ours == theirs, f"step {step} ({what} {m}) of seed {seed}: {case.lines()}"
        current = {x: MemberSpec(spec.process_id, ours[x]) for x, spec in current.items()}


def test_quota_caps_a_member_with_too_many_previous_tasks(kafka: KafkaAssignor) -> None:
    """A member that had all 6 tasks keeps only its quota (ceil(6/3) = 2) of them, the ones Kafka keeps."""
    members = {
        "a": MemberSpec("p1", Tasks({"0": frozenset(range(6))})),
        "b": MemberSpec("p2", Tasks()),
        "c": MemberSpec("p3", Tasks()),
    }
    case = Case(0, {"0": 6}, {"0"}, members)
    ours = _fake(case)
    assert ours == kafka.assign(case)
    assert ours["a"].active == {"0": frozenset({0, 1})}
    assert {len(tasks_of(t.active)) for t in ours.values()} == {2}


MEMBER_ORDER_DRIVER = Path(__file__).resolve().parent / "java" / "MemberOrderDriver.java"


def test_member_order_as_kafkas_coordinator_hands_it_to_the_assignor() -> None:
    """The order the assignor gets the members in decides its ties (reversed, Kafka's own class answers otherwise
    in 20 of the 800 random groups above). Kafka's coordinator keeps them in a TimelineHashMap, lays the
    heartbeat's member over it and puts them into a HashMap: 400 random histories of joins (some repeated, as a
    member's records are) and leaves, each with a member updated or joining, give the same order as Kafka's own
    classes (MemberOrderDriver.java)."""
    lib = kafka_lib()
    if lib is None:
        pytest.skip("Apache Kafka 4.4.0's jars are not installed")
    classes = javautil.compile_java(MEMBER_ORDER_DRIVER, cp=f"{lib}/*")
    rng = random.Random(5)
    lines, want = [], []
    for _ in range(400):
        ids = [_member_id(rng) for _ in range(rng.randint(1, 25))]
        ops, present, capacity, seq = [], {}, 2, 0
        for _ in range(rng.randint(1, 60)):
            m = rng.choice(ids)
            if rng.random() < 0.75:
                ops.append(f"+{m}")
                if (len(present) + 1) * 0.75 > capacity:  # Kafka's BaseHashTable grows before any put
                    capacity *= 2
                present.setdefault(m, seq)
                seq += 1
            else:
                ops.append(f"-{m}")
                present.pop(m, None)
        updated = rng.choice([*ids, "-"])
        view = timeline_order(sorted(present, key=present.__getitem__), capacity)
        if updated != "-" and updated not in present:
            view.append(updated)
        want.append(hashmap_order(view))
        lines.append(" ".join(ops) + " | " + updated)
    proc = subprocess.run(
        ["java", *javautil.FAST_START, "-cp", f"{classes}:{lib}/*", "MemberOrderDriver"],
        input="\n".join(lines) + "\n",
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    got = [line.split(" ;")[0].split() for line in proc.stdout.splitlines()]
    assert got == want


def test_timeline_capacity_is_what_puts_at_the_high_water_grow_it_to() -> None:
    for n in range(100):
        capacity = 2
        for size in [*range(n), n]:  # adds up to n, then one more put at n (a member's next record)
            if (size + 1) * 0.75 > capacity:
                capacity *= 2
        assert timeline_capacity(n) == capacity
