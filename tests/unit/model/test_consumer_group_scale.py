"""What a KIP-848 heartbeat costs as the group grows, counted on a manual clock (no timings): a heartbeat that
changes nothing walks no member list, computes no target assignment and writes no record; a join computes the
target once and writes its own records and the target members that changed, not the whole group's."""

from __future__ import annotations

import uuid
from typing import Any

import pytest

from fakekafka.model import consumer_assignment
from fakekafka.model.clock import ManualClock
from fakekafka.model.cluster import ClusterState
from fakekafka.model.config import BrokerConfig
from fakekafka.model.consumer_group import HeartbeatRequest
from fakekafka.model.consumer_group_metadata import ConsumerGroupState, Members
from fakekafka.model.internal_topics import OFFSETS_TOPIC
from fakekafka.model.metadata import Broker
from fakekafka.wire import ErrorCode


class Client:
    """A member as a client runs it: it reports what the last assignment it was given holds."""

    def __init__(self, c: ClusterState, group: str, member_id: str) -> None:
        self.c, self.group, self.member_id = c, group, member_id
        self.epoch = 0
        self.owned: dict[uuid.UUID, list[int]] = {}

    def heartbeat(self) -> dict[str, Any]:
        joining = self.epoch == 0
        r = self.c.consumer_groups.heartbeat(HeartbeatRequest(
            group_id=self.group, member_id=self.member_id, member_epoch=self.epoch,
            rebalance_timeout_ms=30_000 if joining else -1, subscribed_topic_names=["t"] if joining else None,
            owned=list(self.owned.items())))
        assert r["error_code"] == ErrorCode.NONE, r
        self.epoch = r["member_epoch"]
        if r["assignment"] is not None:
            self.owned = {t["topic_id"]: t["partitions"] for t in r["assignment"]["topic_partitions"]}
        return r


def stable_group(n: int, partitions: int) -> tuple[ClusterState, list[Client]]:
    c = ClusterState(BrokerConfig(), ManualClock(1_000), [Broker(1, "127.0.0.1", 9001)])
    c.create_topic("t", partitions, 1)
    clients = [Client(c, "g", f"m{i:04}") for i in range(n)]
    for cl in clients:
        cl.heartbeat()
    for _ in range(10):
        for cl in clients:
            cl.heartbeat()
        if c.consumer_groups.groups["g"].state == ConsumerGroupState.STABLE:
            break
    assert c.consumer_groups.groups["g"].state == ConsumerGroupState.STABLE
    for cl in clients:  # each reports owning what it was given last, as a client does (until then it is told again)
        cl.heartbeat()
    assert not any(m.unconfirmed for m in c.consumer_groups.groups["g"].members.values())
    assert sorted(p for cl in clients for ps in cl.owned.values() for p in ps) == list(range(partitions))
    return c, clients


class CountingMembers(Members):
    """A group's members that count the walks over all of them."""

    walks = 0

    def values(self) -> Any:
        CountingMembers.walks += 1
        return super().values()

    def items(self) -> Any:
        CountingMembers.walks += 1
        return super().items()

    def __iter__(self) -> Any:
        CountingMembers.walks += 1
        return super().__iter__()


def log_end(c: ClusterState, group: str) -> int:
    p = c.partition(OFFSETS_TOPIC, c.offsets_partition_for(group))
    assert p is not None
    return p.log.log_end_offset


@pytest.mark.parametrize("n", [10, 200])
def test_a_steady_heartbeat_walks_no_member_list_and_writes_nothing(n: int, monkeypatch: pytest.MonkeyPatch) -> None:
    c, clients = stable_group(n, 2 * n)
    group = c.consumer_groups.groups["g"]
    counting = CountingMembers()
    for mid, m in dict.items(group.members):
        counting[mid] = m
    group.members = counting
    calls: list[int] = []
    real = consumer_assignment.ASSIGNORS["uniform"]
    monkeypatch.setitem(consumer_assignment.ASSIGNORS, "uniform", lambda *a: calls.append(1) or real(*a))
    end = log_end(c, "g")
    CountingMembers.walks = 0
    r = clients[n // 2].heartbeat()
    assert (r["error_code"], r["assignment"]) == (ErrorCode.NONE, None)
    assert (CountingMembers.walks, calls, log_end(c, "g")) == (0, [], end)


def test_a_join_computes_the_target_once_and_writes_only_what_changed(monkeypatch: pytest.MonkeyPatch) -> None:
    c, clients = stable_group(100, 200)
    calls: list[int] = []
    real = consumer_assignment.ASSIGNORS["uniform"]
    monkeypatch.setitem(consumer_assignment.ASSIGNORS, "uniform", lambda *a: calls.append(1) or real(*a))
    end = log_end(c, "g")
    Client(c, "g", "new").heartbeat()
    assert len(calls) == 1
    # its member metadata, the group epoch, the target members that changed (the new one's and those of the
    # members that give it partitions), the target metadata and its current assignment: not the 100 others'
    assert 5 < log_end(c, "g") - end < 10


def test_the_uniform_assignor_sorts_what_a_join_moves_not_every_partition(monkeypatch: pytest.MonkeyPatch) -> None:
    """It runs at every group epoch: a join into a balanced 500-member group orders the members once and the
    partitions of the members over their share, not all 1,000 partitions (quadratic over the joins)."""
    t = uuid.uuid4()
    members = {f"m{i:04}": (None, frozenset([t])) for i in range(500)}
    balanced = consumer_assignment.ASSIGNORS["uniform"](members, {t: 1000}, {})
    assert {len(a[t]) for a in balanced.values()} == {2}
    sorted_items: list[int] = []

    def counting_sorted(items: Any, **kw: Any) -> list[Any]:
        out = sorted(items, **kw)
        sorted_items.append(len(out))
        return out

    monkeypatch.setattr(consumer_assignment, "sorted", counting_sorted, raising=False)
    joined = consumer_assignment.ASSIGNORS["uniform"]({**members, "new": (None, frozenset([t]))}, {t: 1000}, balanced)
    assert len(joined["new"][t]) == 1  # 1,000 over 501: one member gives it one partition, the others keep theirs
    assert sum(joined[m] != balanced[m] for m in members) == 1
    assert sum(sorted_items) <= len(members) + 1 + 10
    # the 499 unchanged keep their target objects: their records are known unchanged without comparing partitions
    assert sum(joined[m] is not balanced[m] for m in members) == 1


@pytest.mark.parametrize("seed", range(20))
def test_the_uniform_assignor_is_complete_balanced_and_sticky(seed: int) -> None:
    """Random groups (members with different subscriptions, topics growing and shrinking, members coming and
    going): every partition of a subscribed topic goes to one subscriber, and no subscriber of a topic holds two
    more partitions than another (stickiness: the join test above)."""
    import random

    rng = random.Random(seed)
    assign = consumer_assignment.ASSIGNORS["uniform"]
    topics = [uuid.UUID(int=rng.getrandbits(128)) for _ in range(rng.randint(1, 4))]
    current: dict[str, dict[uuid.UUID, frozenset[int]]] = {}
    for _ in range(6):
        partitions = {t: rng.randint(0, 12) for t in topics}
        ids = [f"m{i}" for i in rng.sample(range(20), rng.randint(1, 8))]
        members = {m: (None, frozenset(t for t in topics if rng.random() < 0.7)) for m in ids}
        out = assign(members, partitions, current)
        held = {m: sum(len(ps) for ps in a.values()) for m, a in out.items()}
        for t, n in partitions.items():
            subs = [m for m in members if t in members[m][1]]
            owners = sorted(p for m in subs for p in out[m].get(t, ()))
            assert owners == (list(range(n)) if subs else []), (t, owners)
            for m in subs:
                if out[m].get(t):
                    assert held[m] - min(held[s] for s in subs) < 2
        current = out


@pytest.mark.parametrize("seed", range(40))
def test_the_one_topic_way_of_the_uniform_assignor_gives_the_general_ones_answer(seed: int) -> None:
    """A group whose members all subscribe to one topic is assigned by a shorter way (no per-member sets): the
    same targets as the general way, member for member, the same target objects kept, through joins, leaves, a
    topic growing and shrinking and targets it does not take (another topic, a partition held twice)."""
    import random

    rng = random.Random(seed)
    t, other = uuid.UUID(int=rng.getrandbits(128)), uuid.UUID(int=rng.getrandbits(128))
    pool = [f"m{i:02}" for i in range(rng.randint(1, 30))]
    members: dict[str, tuple[str | None, frozenset[uuid.UUID]]] = {}
    current: dict[str, dict[uuid.UUID, frozenset[int]]] = {}
    size, shortened = rng.randint(0, 40), 0
    for _ in range(60):
        r = rng.random()
        if r < 0.5 or not members:
            members.update((m, (None, frozenset([t]))) for m in rng.sample(pool, min(len(pool), rng.randint(1, 3))))
        elif r < 0.75:
            for m in rng.sample(sorted(members), min(len(members), 2)):
                del members[m]
        elif r < 0.85:
            size = max(0, size + rng.randint(-5, 8))
        elif current:
            current = {**current, rng.choice(sorted(current)): {other if r < 0.93 else t: frozenset([0])}}
        if not members:
            continue
        general = consumer_assignment._uniform_general(members, {t: size}, current)
        out = consumer_assignment._uniform_assign(members, {t: size}, current)
        assert list(out.items()) == list(general.items())
        assert [out[m] is current.get(m) for m in out] == [general[m] is current.get(m) for m in out]
        shortened += consumer_assignment._uniform_one_topic(sorted(members), t, size, current) is not None
        current = general
    assert shortened  # the shorter way was taken


def scripted_run(monkeypatch: pytest.MonkeyPatch, steady_path: bool) -> tuple[list[str], str, int]:
    """Joins, steady heartbeats, a new member, a rack change and a leave, on the fake clock: every answer, the
    group's description and its __consumer_offsets log end."""
    from fakekafka.model.consumer_group import ConsumerGroupCoordinator

    if not steady_path:
        monkeypatch.setattr(ConsumerGroupCoordinator, "_steady_heartbeat", lambda self, r: None)
    c, clients = stable_group(20, 40)
    answers: list[Any] = []
    for _ in range(3):
        for cl in clients:
            answers.append(cl.heartbeat())
        c.clock.advance(500)
    late = Client(c, "g", "late")
    answers.append(late.heartbeat())
    for _ in range(3):
        for cl in [*clients, late]:
            answers.append(cl.heartbeat())
    answers.append(c.consumer_groups.heartbeat(HeartbeatRequest(
        group_id="g", member_id=clients[0].member_id, member_epoch=clients[0].epoch, rack_id="rack-b")))
    answers.append(c.consumer_groups.heartbeat(HeartbeatRequest(
        group_id="g", member_id=clients[1].member_id, member_epoch=-1)))
    for cl in clients[2:]:
        answers.append(cl.heartbeat())
    topic_id = str(c.topics["t"].topic_id)  # new in each run: named
    return [repr(a).replace(topic_id, "t") for a in answers], repr(c.consumer_groups.describe("g")).replace(
        topic_id, "t"), log_end(c, "g")


def test_the_steady_heartbeat_answers_as_the_full_path(monkeypatch: pytest.MonkeyPatch) -> None:
    """Heartbeats that change nothing skip storing and reconciling their member: the answers, the group and the
    records it wrote are the same as when every heartbeat takes the full path."""
    fast = scripted_run(monkeypatch, True)
    monkeypatch.undo()
    assert fast == scripted_run(monkeypatch, False)


def test_a_steady_heartbeat_stores_no_member(monkeypatch: pytest.MonkeyPatch) -> None:
    c, clients = stable_group(50, 100)
    stored: list[str] = []
    real = type(c.consumer_groups).store_member
    monkeypatch.setattr(type(c.consumer_groups), "store_member",
                        lambda self, g, mid, m, bump: stored.append(mid) or real(self, g, mid, m, bump))
    for cl in clients:
        cl.heartbeat()
    assert stored == []
    before = c.consumer_groups.groups["g"].members[clients[0].member_id].session_deadline
    c.clock.advance(1_000)
    clients[0].heartbeat()
    assert c.consumer_groups.groups["g"].members[clients[0].member_id].session_deadline == before + 1_000
