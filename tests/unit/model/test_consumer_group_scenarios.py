"""The seeds' rebalance scenarios (a member joins, leaves, crashes; partitions added; a new topic matching a
regex subscription) under KIP-848's protocol on the coordinator's manual clock, with the time from the change
to a stable assignment: the group Stable, every member at the group's epoch with its target assignment, and
the members' own partitions covering every subscribed partition once.

The members are simulated as Kafka's clients behave: a heartbeat every heartbeat interval the broker gives,
one more at once after taking a new assignment (the acknowledgement that moves the member to its new epoch),
and a crashed member sends nothing again. Real clients on both brokers: tests/integration/clients/
test_confluent_consumer_protocol.py and test_java_consumer_protocol.py; the wall-clock figures on both
brokers: bench/rebalance_scenarios.py."""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field

import pytest

from fakekafka.model.clock import ManualClock
from fakekafka.model.consumer_group import (
    ASSIGNORS,
    ConsumerGroupConfig,
    ConsumerGroupCoordinator,
    ConsumerGroupState,
    HeartbeatRequest,
    TopicInfo,
)
from fakekafka.wire import ErrorCode

T1, T2 = uuid.UUID(int=1), uuid.UUID(int=2)
SESSION, INTERVAL, REBALANCE = 45_000, 5_000, 30_000


@dataclass
class SimMember:
    """A client's side of the protocol: its epoch, the partitions it holds, when it heartbeats next."""

    member_id: str
    regex: str | None = None
    epoch: int = 0
    owned: dict[uuid.UUID, list[int]] = field(default_factory=dict)
    next_heartbeat: int = 0
    crashed: bool = False


class Sim:
    def __init__(self, partitions: int = 6) -> None:
        self.clock = ManualClock(0)
        self.topics = {"t1": TopicInfo(T1, "t1", partitions)}
        self.coord = ConsumerGroupCoordinator(self.clock, ConsumerGroupConfig(), topics=lambda: self.topics,
                                              group_config=lambda g: {})
        self.members: list[SimMember] = []

    def now(self) -> int:
        return self.clock.now_ms()

    def join(self, member_id: str, regex: str | None = None) -> SimMember:
        m = SimMember(member_id, regex, next_heartbeat=self.now())
        self.members.append(m)
        self.heartbeat(m)
        return m

    def heartbeat(self, m: SimMember, epoch: int | None = None) -> None:
        joining = m.epoch == 0
        r = self.coord.heartbeat(HeartbeatRequest(
            group_id="g", member_id=m.member_id, member_epoch=m.epoch if epoch is None else epoch,
            instance_id=None, rebalance_timeout_ms=REBALANCE if joining else -1,
            subscribed_topic_names=(None if m.regex else ["t1"]) if joining else None,
            subscribed_topic_regex=m.regex if joining else None, server_assignor=None,
            owned=[] if joining else list(m.owned.items()), version=1))
        assert r["error_code"] == ErrorCode.NONE, r
        m.epoch = r["member_epoch"]
        m.next_heartbeat = self.now() + r["heartbeat_interval_ms"]
        if r["assignment"] is not None:
            target = {t["topic_id"]: sorted(t["partitions"]) for t in r["assignment"]["topic_partitions"]}
            if target != m.owned:  # revoke and take at once, then acknowledge with a heartbeat right away
                m.owned = target
                m.next_heartbeat = self.now()

    def stable(self) -> bool:
        """Stable as the bench measures it (every topic here is subscribed by every member)."""
        g = self.coord.group("g")
        assert g is not None
        live = [m for m in self.members if not m.crashed]
        owned = sorted((t, p) for m in live for t, ps in m.owned.items() for p in ps)
        subscribed = sorted((info.topic_id, p) for info in self.topics.values() for p in range(info.partitions))
        return (g.state == ConsumerGroupState.STABLE and g.assignment_epoch == g.group_epoch
                and set(g.members) == {m.member_id for m in live}
                and all(mm.is_reconciled_to(g.group_epoch) for mm in g.members.values())
                and owned == subscribed)

    def run_until_stable(self, limit_ms: int = 120_000) -> int:
        """Runs heartbeats and the coordinator's timers in time order; the ms from now to a stable group."""
        start = self.now()
        while not self.stable():
            due = [m.next_heartbeat for m in self.members if not m.crashed]
            deadline = self.coord.next_deadline()
            at = min(due + ([deadline] if deadline is not None else []))
            assert at - start <= limit_ms, "not stable within the limit"
            if at > self.now():
                self.clock.advance(at - self.now())
            self.coord.tick()
            for m in self.members:
                if not m.crashed and m.next_heartbeat <= self.now() and m.member_id in self.coord.group("g").members:
                    self.heartbeat(m)
        return self.now() - start

    def settle(self, *names: str, regex: str | None = None) -> None:
        for name in names:
            self.join(name, regex)
        self.run_until_stable()
        self.clock.advance(1_000)  # the change comes between heartbeats


@pytest.fixture
def sim() -> Sim:
    return Sim()


def test_member_joins(sim: Sim) -> None:
    sim.settle("a", "b")
    sim.join("c")
    # c's first heartbeat bumps the epoch and gets nothing (a's and b's partitions are not free); a and b
    # hear of it at their next heartbeats (4 s on) and give two up at once; c takes them at its next one
    # (5 s after it joined), then acknowledges
    assert sim.run_until_stable() == INTERVAL
    assert sorted(len(ps) for m in sim.members for ps in m.owned.values()) == [2, 2, 2]


def test_member_leaves(sim: Sim) -> None:
    sim.settle("a", "b", "c")
    before = {m.member_id: set(m.owned[T1]) for m in sim.members}
    leaving = sim.members.pop()
    sim.heartbeat(leaving, epoch=-1)  # LeaveGroup's KIP-848 form: a heartbeat with epoch -1
    # a and b get c's partitions at their next heartbeats (4 s on: one interval less the second waited),
    # keeping their own: nothing to revoke, so no second round
    assert sim.run_until_stable() == INTERVAL - 1_000
    for m in sim.members:
        assert before[m.member_id] < set(m.owned[T1])


@pytest.mark.parametrize("n", [2, 3, 5])
def test_uniform_assignor_moves_only_a_leaving_members_partitions(n: int) -> None:
    members = {f"m{i}": (None, frozenset({T1, T2})) for i in range(n + 1)}
    before = ASSIGNORS["uniform"](members, {T1: 12, T2: 5}, {})
    del members[f"m{n}"]
    after = ASSIGNORS["uniform"](members, {T1: 12, T2: 5}, before)
    for m in members:
        for t in (T1, T2):
            assert before[m].get(t, frozenset()) <= after[m].get(t, frozenset())
    counts = [sum(len(ps) for ps in a.values()) for a in after.values()]
    assert sum(counts) == 17 and max(counts) - min(counts) <= 1


def test_uniform_assignor_members_joining_one_by_one_as_kafka_assigns() -> None:
    """Kafka 4.4 gave three members joining a 6-partition topic one by one 0,1 / 3,4 / 2,5
    (tests/integration/clients/test_java_consumer_protocol.py's group on Kafka): each member over its share gives up its
    highest partitions."""
    members: dict[str, tuple[str | None, frozenset[uuid.UUID]]] = {}
    out: dict[str, dict[uuid.UUID, frozenset[int]]] = {}
    for name in "abc":
        members[name] = (None, frozenset({T1}))
        out = ASSIGNORS["uniform"](members, {T1: 6}, out)
    assert {m: sorted(a[T1]) for m, a in out.items()} == {"a": [0, 1], "b": [3, 4], "c": [2, 5]}


def test_member_crash_is_noticed_when_its_session_ends(sim: Sim) -> None:
    sim.settle("a", "b")
    crashed = sim.members[1]
    crashed.crashed = True  # no more heartbeats: its last one was 1 s ago
    took = sim.run_until_stable()
    # fenced at its session's end (45 s after its last heartbeat), then a takes its partitions at a's next
    # heartbeat: a's heartbeats fall on the same 5 s grid, so that is the same moment
    assert took == SESSION - 1_000
    assert sim.members[0].owned == {T1: [0, 1, 2, 3, 4, 5]}


def test_partitions_added_to_a_subscribed_topic(sim: Sim) -> None:
    sim.settle("a", "b")
    sim.topics["t1"] = TopicInfo(T1, "t1", 12)
    sim.coord.metadata_changed()
    assert sim.run_until_stable() == INTERVAL - 1_000  # both take their new partitions at their next heartbeat
    assert sorted(len(ps) for m in sim.members for ps in m.owned.values()) == [6, 6]


def test_new_topic_matching_a_regex_subscription(sim: Sim) -> None:
    sim.settle("a", "b", regex="t.*")
    sim.topics["t2"] = TopicInfo(T2, "t2", 2)
    sim.coord.metadata_changed()
    assert sim.run_until_stable() == INTERVAL - 1_000
    assert sorted(p for m in sim.members for p in m.owned.get(T2, [])) == [0, 1]
