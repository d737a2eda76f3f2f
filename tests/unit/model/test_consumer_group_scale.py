"""What a KIP-848 heartbeat costs as the group grows, counted on a manual clock (no timings): a heartbeat that
changes nothing walks no member list, computes no target assignment and writes no record; a join computes the
target once and writes its own records and the target members that changed, not the whole group's."""

from __future__ import annotations

import uuid
from typing import Any

import pytest

from fakekafka.model import consumer_assignment, consumer_group_members
from fakekafka.model.clock import ManualClock
from fakekafka.model.cluster import ClusterState
from fakekafka.model.config import BrokerConfig
from fakekafka.model.consumer_group import HeartbeatRequest
from fakekafka.model.consumer_group_metadata import ConsumerGroupState, ConsumerMember, Members
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


def counting_target_assignments(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """A list that grows by one each time the group coordinator computes a target assignment."""
    calls: list[int] = []
    real = consumer_group_members.target_assignment
    monkeypatch.setattr(consumer_group_members, "target_assignment", lambda *a: calls.append(1) or real(*a))
    return calls


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
    calls = counting_target_assignments(monkeypatch)
    end = log_end(c, "g")
    CountingMembers.walks = 0
    r = clients[n // 2].heartbeat()
    assert (r["error_code"], r["assignment"]) == (ErrorCode.NONE, None)
    assert (CountingMembers.walks, calls, log_end(c, "g")) == (0, [], end)


def test_a_join_computes_the_target_once_and_writes_only_what_changed(monkeypatch: pytest.MonkeyPatch) -> None:
    c, clients = stable_group(100, 200)
    calls = counting_target_assignments(monkeypatch)
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
def test_the_homogeneous_way_of_the_uniform_assignor_is_kafkas(seed: int) -> None:
    """A group whose members all subscribe to the same topics is assigned as Kafka 4.4's homogeneous builder
    assigns it, through joins, leaves, topics growing and shrinking and odd targets (another topic, an empty set):
    P // N partitions each, one more for the first P % N members in member-id order; a member keeps its current
    partitions up to that quota, lowest first, so none gives up partitions and takes others; a member whose
    partitions do not change keeps its target object; a partition held twice is left to the general way."""
    import random

    rng = random.Random(seed)
    topics = [uuid.UUID(int=rng.getrandbits(128)) for _ in range(rng.randint(1, 3))]
    other = uuid.UUID(int=rng.getrandbits(128))
    pool = [f"m{i:02}" for i in range(rng.randint(1, 30))]
    members: dict[str, tuple[str | None, frozenset[uuid.UUID]]] = {}
    current: dict[str, dict[uuid.UUID, frozenset[int]]] = {}
    sizes = {t: rng.randint(0, 40) for t in topics}
    homogeneous = 0
    for _ in range(60):
        r = rng.random()
        if r < 0.5 or not members:
            members.update((m, (None, frozenset(topics))) for m in rng.sample(pool, min(len(pool), rng.randint(1, 3))))
        elif r < 0.75:
            for m in rng.sample(sorted(members), min(len(members), 2)):
                del members[m]
        elif r < 0.85:
            t = rng.choice(topics)
            sizes[t] = max(0, sizes[t] + rng.randint(-5, 8))
        elif current:
            odd = rng.choice([{other: frozenset([0])}, {rng.choice(topics): frozenset()}, {}])
            current = {**current, rng.choice(sorted(current)): odd}
        if not members:
            continue
        out = consumer_assignment._uniform_assign(members, dict(sizes), current)
        order = sorted(members)
        assert list(out) == order
        total = sum(sizes.values())
        quota, extra = divmod(total, len(order))
        for k, m in enumerate(order):
            assert sum(map(len, out[m].values())) == quota + (k < extra), (m, out[m])
            assert all(out[m].values()) and set(out[m]) <= set(topics)
        for t in topics:
            assert sorted(p for a in out.values() for p in a.get(t, ())) == list(range(sizes[t]))
        for k, m in enumerate(order):
            valid = {(t, p) for t, ps in current.get(m, {}).items() if t in sizes for p in ps if p < sizes[t]}
            now = {(t, p) for t, ps in out[m].items() for p in ps}
            room = quota + (k < extra)
            assert len(valid & now) == min(len(valid), room), m  # keeps what its quota lets it keep
            assert not (valid - now and now - valid), m  # gives up, or takes, not both
            if len(valid) > room:  # its lowest (topics in id order)
                lowest = sorted(valid, key=lambda tp: (str(tp[0]), tp[1]))[:room]
                assert now == set(lowest)
            was = {(t, p) for t, ps in current.get(m, {}).items() for p in ps}
            if m in current and now == was and all(current[m].values()):
                assert out[m] is current[m]
        homogeneous += 1
        current = out
    assert homogeneous
    t = topics[0]
    held_twice = {"a": {t: frozenset([0])}, "b": {t: frozenset([0])}}
    assert consumer_assignment._uniform_homogeneous(["a", "b"], [t], {t: 2}, held_twice) is None


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


@pytest.mark.parametrize("seed", range(10))
def test_the_members_counts_and_owners_follow_every_change(seed: int) -> None:
    """What a join reads instead of walking the group (how many members share each subscription and name each
    server assignor) and who owns each partition stay what a walk over the members gives, through members added,
    stored again as copies or changed in place, removed every way a dict allows, and cleared."""
    import random
    from collections import Counter

    rng = random.Random(seed)
    t = uuid.UUID(int=rng.getrandbits(128))
    members = Members()

    def some_member(mid: str) -> ConsumerMember:
        return ConsumerMember(mid, subscribed_topic_names=rng.choice([("a",), ("a", "b"), ()]),
                              subscribed_topic_regex=rng.choice([None, "x.*"]),
                              server_assignor=rng.choice([None, "uniform", "range"]),
                              assigned={t: frozenset(rng.sample(range(8), rng.randint(0, 3)))},
                              pending_revocation=rng.choice([{}, {t: frozenset([9])}]))

    for _ in range(300):
        mid = f"m{rng.randint(0, 9)}"
        r = rng.random()
        if r < 0.35:
            members[mid] = some_member(mid)
        elif r < 0.5 and mid in members:  # a copy with a change, or the same member changed in place
            other = some_member(mid)
            if rng.random() < 0.5:
                members[mid] = members[mid].copy_with(server_assignor=other.server_assignor)
            else:
                m = members[mid]
                m.subscribed_topic_names, m.assigned = other.subscribed_topic_names, other.assigned
                members[mid] = m
        elif r < 0.6 and mid in members:
            members[mid] = members[mid]  # stored again unchanged
        elif r < 0.7:
            members.pop(mid, None)
        elif r < 0.78 and mid in members:
            del members[mid]
        elif r < 0.86:
            members.setdefault(mid, some_member(mid))
        elif r < 0.97:
            members.update({mid: some_member(mid)})
        else:
            members.clear()
        assert members.subscriptions == Counter(
            (m.subscribed_topic_names, m.subscribed_topic_regex) for m in members.values())
        assert members.assignors == Counter(m.server_assignor for m in members.values() if m.server_assignor)
        owners: dict[tuple[uuid.UUID, int], dict[str, None]] = {}
        for m in members.values():
            for a in (m.assigned, m.pending_revocation):
                for topic, ps in a.items():
                    for p in ps:
                        owners.setdefault((topic, p), {})[m.member_id] = None
        assert {tp: set(ids) for tp, ids in members.owners.items()} == {tp: set(ids) for tp, ids in owners.items()}
