"""The KIP-848 consumer group coordinator on a manual clock: epochs, assignors, reconciliation, static members,
regex subscriptions, session and rebalance timeouts, offsets. No sleeps, no sockets."""

from __future__ import annotations

import uuid
from typing import Any

import pytest

from fakekafka.model.clock import ManualClock
from fakekafka.model.consumer_group import (
    ASSIGNORS,
    ConsumerGroupConfig,
    ConsumerGroupCoordinator,
    ConsumerGroupState,
    HeartbeatRequest,
    MemberState,
    TopicInfo,
)
from fakekafka.wire import ErrorCode

T1, T2 = uuid.UUID(int=1), uuid.UUID(int=2)
S = ConsumerGroupState
SESSION, REBALANCE = 45_000, 30_000


class World:
    def __init__(self, **config: Any) -> None:
        self.clock = ManualClock(0)
        self.topics = {"t1": TopicInfo(T1, "t1", 4)}
        self.group_configs: dict[str, dict[str, str]] = {}
        self.coord = ConsumerGroupCoordinator(self.clock, ConsumerGroupConfig(**config), topics=lambda: self.topics,
                                              group_config=lambda g: self.group_configs.get(g, {}))

    def hb(self, member: str, epoch: int, owned: dict[uuid.UUID, list[int]] | None = None, *, group: str = "g",
           names: list[str] | None = None, regex: str | None = None, instance: str | None = None,
           assignor: str | None = None, rebalance: int = REBALANCE, version: int = 1) -> dict[str, Any]:
        joining = epoch == 0
        return self.coord.heartbeat(HeartbeatRequest(
            group_id=group, member_id=member, member_epoch=epoch, instance_id=instance,
            rebalance_timeout_ms=rebalance if joining else -1,
            subscribed_topic_names=(names if names is not None else (None if regex else ["t1"])) if joining else names,
            subscribed_topic_regex=regex, server_assignor=assignor,
            owned=[] if joining else (None if owned is None else list(owned.items())), version=version))

    def group(self, group: str = "g") -> Any:
        g = self.coord.group(group)
        assert g is not None
        return g


def parts(response: dict[str, Any]) -> dict[uuid.UUID, list[int]] | None:
    a = response["assignment"]
    return None if a is None else {t["topic_id"]: t["partitions"] for t in a["topic_partitions"]}


@pytest.fixture
def w() -> World:
    return World()


def test_first_member_gets_everything_at_epoch_2(w: World) -> None:
    # one epoch for the member, one for the group's topics (Kafka 4.4 counts both)
    r = w.hb("a", 0)
    assert (r["error_code"], r["member_epoch"], parts(r)) == (ErrorCode.NONE, 2, {T1: [0, 1, 2, 3]})
    assert r["heartbeat_interval_ms"] == 5000
    g = w.group()
    assert (g.state, g.group_epoch, g.assignment_epoch) == (S.STABLE, 2, 2)
    assert w.hb("b", 0, names=[], group="g2")["member_epoch"] == 1  # no topics: one epoch
    assert w.hb("b", 0, names=["nosuch"], group="g3")["member_epoch"] == 2  # a topic not there yet counts


def test_revocation_before_assignment(w: World) -> None:
    w.hb("a", 0)
    rb = w.hb("b", 0)
    # b is at the new epoch but its partitions are still a's: UNRELEASED_PARTITIONS, nothing yet
    assert (rb["member_epoch"], parts(rb)) == (3, {})
    assert w.group().members["b"].state == MemberState.UNRELEASED_PARTITIONS
    assert w.group().state == S.RECONCILING
    ra = w.hb("a", 2, {T1: [0, 1, 2, 3]})
    kept = parts(ra)[T1]
    assert ra["member_epoch"] == 2 and len(kept) == 2  # told to give two up, its epoch unchanged
    assert w.group().members["a"].state == MemberState.UNREVOKED_PARTITIONS
    assert w.hb("b", 3, {})["assignment"] is None  # still held by a
    ra = w.hb("a", 2, {T1: kept})  # revoked: a moves to epoch 3
    assert (ra["member_epoch"], ra["assignment"]) == (3, None)
    rb = w.hb("b", 3, {})
    assert sorted(parts(rb)[T1] + kept) == [0, 1, 2, 3]
    g = w.group()
    assert g.state == S.STABLE and all(m.is_reconciled_to(3) for m in g.members.values())


def test_previous_epoch_with_owned_subset_is_accepted_else_fenced(w: World) -> None:
    w.hb("a", 0)
    w.hb("b", 0)
    w.hb("a", 2, {T1: [0, 1, 2, 3]})
    kept = w.group().members["a"].assigned[T1]
    w.hb("a", 2, {T1: sorted(kept)})  # now at 3, previous 2
    assert w.hb("a", 2, {T1: sorted(kept)})["error_code"] == ErrorCode.NONE  # the answer may have been lost
    r = w.hb("a", 2, {T1: [0, 1, 2, 3]})
    assert r["error_code"] == ErrorCode.FENCED_MEMBER_EPOCH and "smaller member epoch (2)" in r["error_message"]
    r = w.hb("a", 9, {})
    assert r["error_code"] == ErrorCode.FENCED_MEMBER_EPOCH and "greater member epoch (9)" in r["error_message"]


def test_validation_errors(w: World) -> None:
    assert w.hb("", 0)["error_message"] == "MemberId can't be empty."  # v1: the client makes it up
    r = w.hb("", 0, version=0)
    assert r["error_code"] == ErrorCode.NONE and len(r["member_id"]) == 22
    assert w.hb("a", 0, group=" ")["error_message"] == "GroupId can't be empty."
    assert w.hb("a", 0, rebalance=-1)["error_message"] == "RebalanceTimeoutMs must be provided in first request."
    assert w.hb("a", -3)["error_message"] == "MemberEpoch is invalid."
    r = w.hb("a", 0, assignor="bogus")
    assert (r["error_code"], r["error_message"]) == (
        ErrorCode.UNSUPPORTED_ASSIGNOR, "ServerAssignor bogus is not supported. Supported assignors: uniform, range.")
    assert w.hb("a", 0, regex="(a")["error_code"] == ErrorCode.INVALID_REGULAR_EXPRESSION
    assert w.hb("a", 0, regex=r"(x)\1")["error_code"] == ErrorCode.INVALID_REGULAR_EXPRESSION  # RE2J has none
    assert w.hb("zz", 3, {})["error_code"] == ErrorCode.UNKNOWN_MEMBER_ID
    r = w.hb("m", 3, {}, group="nope")
    assert (r["error_code"], r["error_message"]) == (ErrorCode.GROUP_ID_NOT_FOUND, "Consumer group nope not found.")


def test_leave_bumps_the_epoch_and_empties_the_group(w: World) -> None:
    w.hb("a", 0)
    r = w.hb("a", -1)
    assert (r["error_code"], r["member_epoch"]) == (ErrorCode.NONE, -1)
    g = w.group()
    assert (g.state, g.group_epoch, g.members) == (S.EMPTY, 3, {})
    assert w.hb("a", -1)["error_code"] == ErrorCode.UNKNOWN_MEMBER_ID


def test_session_timeout_fences_on_the_clock(w: World) -> None:
    w.hb("a", 0)
    w.hb("b", 0)
    w.clock.advance(SESSION - 1)
    w.hb("a", 2, {T1: [0, 1, 2, 3]})
    w.coord.tick()
    assert set(w.group().members) == {"a", "b"}
    w.clock.advance(1)  # b's session ends; a heartbeated 1 ms ago
    w.coord.tick()
    assert set(w.group().members) == {"a"} and w.group().group_epoch == 4
    assert w.coord.next_deadline() == SESSION - 1 + REBALANCE  # a must give up two partitions by then


def test_group_config_session_and_heartbeat_interval(w: World) -> None:
    w.group_configs["g"] = {"consumer.session.timeout.ms": "50000", "consumer.heartbeat.interval.ms": "6000"}
    assert w.hb("a", 0)["heartbeat_interval_ms"] == 6000
    w.clock.advance(SESSION)
    w.coord.tick()
    assert "a" in w.group().members
    w.clock.advance(5000)
    w.coord.tick()
    assert not w.group().members


def test_rebalance_timeout_fences_a_member_that_keeps_its_partitions(w: World) -> None:
    w.hb("a", 0, rebalance=10_000)
    w.hb("b", 0)
    w.hb("a", 2, {T1: [0, 1, 2, 3]})  # told to revoke
    w.clock.advance(9_999)
    w.hb("a", 2, {T1: [0, 1, 2, 3]})  # still holding them: the timer keeps running
    w.hb("b", 3, {})
    w.coord.tick()
    assert "a" in w.group().members
    w.clock.advance(1)
    w.coord.tick()
    assert set(w.group().members) == {"b"}
    assert parts(w.hb("b", 3, {}, names=["t1"]))[T1] == [0, 1, 2, 3]  # epoch 4: everything


def test_static_member_leave_and_return(w: World) -> None:
    w.hb("a", 0, instance="i-a")
    w.hb("b", 0, instance="i-b")
    w.hb("a", 2, {T1: [0, 1, 2, 3]})
    a_parts = sorted(w.group().members["a"].assigned[T1])
    w.hb("a", 2, {T1: a_parts})
    w.hb("b", 3, {})
    epoch = w.group().group_epoch
    r = w.coord.heartbeat(HeartbeatRequest(group_id="g", member_id="a", member_epoch=-2, instance_id="i-a"))
    assert (r["error_code"], r["member_epoch"]) == (ErrorCode.NONE, -2)
    assert w.group().members["a"].member_epoch == -2 and w.group().group_epoch == epoch  # no rebalance
    other = w.hb("a2", 0, instance="i-b")
    assert other["error_code"] == ErrorCode.UNRELEASED_INSTANCE_ID
    r = w.hb("a2", 0, instance="i-a")
    assert (r["member_epoch"], parts(r)) == (epoch, {T1: a_parts})  # same partitions, new member id
    assert "a" not in w.group().members and w.group().static_members["i-a"] == "a2"
    assert w.hb("a", 2, {}, instance="i-a")["error_code"] == ErrorCode.FENCED_INSTANCE_ID


def test_static_member_that_does_not_come_back_is_fenced_at_its_session(w: World) -> None:
    w.hb("a", 0, instance="i-a")
    w.coord.heartbeat(HeartbeatRequest(group_id="g", member_id="a", member_epoch=-2, instance_id="i-a"))
    w.clock.advance(SESSION)
    w.coord.tick()
    assert w.group().state == S.EMPTY


def test_metadata_changes_bump_the_group_epoch(w: World) -> None:
    w.hb("a", 0)
    w.topics["t1"] = TopicInfo(T1, "t1", 6)
    w.coord.metadata_changed()
    assert (w.group().group_epoch, w.group().state) == (3, S.ASSIGNING)
    r = w.hb("a", 2, {T1: [0, 1, 2, 3]})
    assert (r["member_epoch"], parts(r)) == (3, {T1: [0, 1, 2, 3, 4, 5]})
    del w.topics["t1"]
    w.coord.metadata_changed()
    r = w.hb("a", 3, {T1: [0, 1, 2, 3, 4, 5]})
    assert r["member_epoch"] == 3 and parts(r) == {}  # its partitions of a deleted topic are revoked
    r = w.hb("a", 3, {})
    assert r["member_epoch"] == 4


def test_regex_subscription_follows_new_topics(w: World) -> None:
    r = w.hb("a", 0, regex="t.*")
    assert parts(r) == {T1: [0, 1, 2, 3]}
    w.topics["t2"] = TopicInfo(T2, "t2", 1)
    w.topics["__consumer_offsets"] = TopicInfo(uuid.UUID(int=9), "__consumer_offsets", 1)
    w.topics["x"] = TopicInfo(uuid.UUID(int=3), "x", 1)
    w.coord.metadata_changed()
    r = w.hb("a", 2, {T1: [0, 1, 2, 3]})
    assert parts(r) == {T1: [0, 1, 2, 3], T2: [0]}  # internal topics and non-matching ones left out


def test_range_assignor_is_per_topic_ranges_in_member_order() -> None:
    members = {"m2": (None, frozenset({T1, T2})), "m1": (None, frozenset({T1, T2})), "s": ("i", frozenset({T1}))}
    out = ASSIGNORS["range"](members, {T1: 5, T2: 4}, {})
    assert out["s"] == {T1: frozenset({0, 1})}  # static members first, by instance id
    assert out["m1"] == {T1: frozenset({2, 3}), T2: frozenset({0, 1})}
    assert out["m2"] == {T1: frozenset({4}), T2: frozenset({2, 3})}


@pytest.mark.parametrize("n", [1, 2, 3, 7])
def test_uniform_assignor_balanced_and_sticky(n: int) -> None:
    members = {f"m{i}": (None, frozenset({T1, T2})) for i in range(n)}
    out = ASSIGNORS["uniform"](members, {T1: 10, T2: 3}, {})
    counts = [sum(len(ps) for ps in a.values()) for a in out.values()]
    assert sum(counts) == 13 and max(counts) - min(counts) <= 1
    members[f"m{n}"] = (None, frozenset({T1, T2}))
    again = ASSIGNORS["uniform"](members, {T1: 10, T2: 3}, out)
    moved = sum(len(out[m].get(t, frozenset()) - again[m].get(t, frozenset())) for m in out for t in (T1, T2))
    assert moved <= -(-13 // (n + 1))  # only what the newcomer needs moves


def test_preferred_assignor_and_range(w: World) -> None:
    w.hb("a", 0, assignor="range")
    w.hb("b", 0, assignor="range")
    assert w.group().preferred_assignor("uniform") == "range"
    assert {m: sorted(a[T1]) for m, a in w.group().target.items()} == {"a": [0, 1], "b": [2, 3]}


def test_assignment_interval_defers_the_target_to_a_heartbeat(w: World) -> None:
    # Kafka 4.4 (GroupMetadataManager.maybeUpdateTargetAssignment): a new group's first target at once, the next
    # one only in a heartbeat at least group.consumer.assignment.interval.ms after it; no timer computes it
    w = World(assignment_interval_ms=1000)
    ra = w.hb("a", 0)
    assert (ra["member_epoch"], parts(ra)) == (2, {T1: [0, 1, 2, 3]})
    w.clock.advance(100)
    rb = w.hb("b", 0)
    assert (w.group().state, rb["member_epoch"], parts(rb)) == (S.ASSIGNING, 2, {})  # at the old target, empty
    w.clock.advance(400)
    assert w.hb("a", 2, {T1: [0, 1, 2, 3]})["assignment"] is None and w.group().assignment_epoch == 2  # not yet
    w.clock.advance(2000)
    w.coord.tick()
    g = w.group()
    assert (g.state, g.group_epoch, g.assignment_epoch) == (S.ASSIGNING, 3, 2)  # the interval passing does nothing
    assert w.coord.next_deadline() == 100 + SESSION  # b's session: no deadline for the target
    ra = w.hb("a", 2)  # the first heartbeat after it computes the target; a is reconciled in it: two to give up
    assert (g.assignment_epoch, ra["member_epoch"], parts(ra)) == (3, 2, {T1: [0, 1]})
    assert g.history[-1] == (2500, "target assignment", 3, 3)
    ra = w.hb("a", 2, {T1: [0, 1]})
    rb = w.hb("b", 2)
    assert (ra["member_epoch"], rb["member_epoch"], parts(rb)) == (3, 3, {T1: [2, 3]})


def test_offsets_with_member_epochs(w: World) -> None:
    w.hb("a", 0)
    g = w.group()
    tp = {("t1", 0): (5, -1, None)}
    assert w.coord.commit(g, "a", 2, 9, tp) == {("t1", 0): ErrorCode.NONE}
    assert w.coord.commit(g, "a", 1, 9, tp) == {("t1", 0): ErrorCode.STALE_MEMBER_EPOCH}
    assert w.coord.commit(g, "a", 2, 8, tp) == {("t1", 0): ErrorCode.UNSUPPORTED_VERSION}
    assert w.coord.commit(g, "zz", 2, 9, tp) == {("t1", 0): ErrorCode.UNKNOWN_MEMBER_ID}
    assert w.coord.commit(g, "", -1, 9, tp) == {("t1", 0): ErrorCode.UNKNOWN_MEMBER_ID}  # not while it has members
    assert w.coord.validate_fetch(g, "a", 2) == ErrorCode.NONE
    assert w.coord.validate_fetch(g, "a", 3) == ErrorCode.STALE_MEMBER_EPOCH
    assert w.coord.validate_fetch(g, None, -1) == ErrorCode.NONE
    w.hb("a", -1)
    assert w.coord.commit(g, "", -1, 9, tp) == {("t1", 0): ErrorCode.NONE}
    assert w.coord.delete_group("g") == ErrorCode.NONE and w.coord.group("g") is None


def test_empty_group_without_offsets_is_removed_at_the_retention_check(w: World) -> None:
    w.hb("a", 0)
    w.hb("a", -1)
    w.clock.advance(600_000)
    w.coord.tick()
    assert w.coord.group("g") is None


def test_transactional_offsets_wait_for_the_marker(w: World) -> None:
    w.hb("a", 0)
    g = w.group()
    tp = {("t1", 0): (7, -1, None)}
    assert w.coord.txn_commit(g, 42, "a", 1, tp) == {("t1", 0): ErrorCode.ILLEGAL_GENERATION}
    assert w.coord.txn_commit(g, 42, "zz", 2, tp) == {("t1", 0): ErrorCode.UNKNOWN_MEMBER_ID}
    assert w.coord.txn_commit(g, 42, "a", 2, tp) == {("t1", 0): ErrorCode.NONE}
    assert w.coord.has_pending_txn_offset("g", ("t1", 0)) and not g.offsets
    w.coord.complete_txn_offsets(42, True, lambda group_id: group_id == "g")
    assert g.offsets[("t1", 0)].offset == 7 and not w.coord.has_pending_txn_offset("g", ("t1", 0))
    assert w.coord.txn_commit(g, 43, "", -1, {("t1", 0): (9, -1, None)}) == {("t1", 0): ErrorCode.NONE}
    w.coord.complete_txn_offsets(43, False, lambda group_id: group_id == "g")
    assert g.offsets[("t1", 0)].offset == 7  # aborted: dropped


def test_ctl_describe_tables_show_epochs_and_target_against_current() -> None:
    """`fakekafka ctl describe`'s consumer group tables, read from a cluster mid-reconciliation."""
    from fakekafka.model.cluster import ClusterState
    from fakekafka.ops.describe import describe_tables
    state = ClusterState(clock=ManualClock(0))
    state.create_topic("orders", 2)
    topic_id = state.topics["orders"].topic_id
    for member in ("a", "b"):
        state.consumer_groups.heartbeat(HeartbeatRequest(
            group_id="billing", member_id=member, member_epoch=0, rebalance_timeout_ms=30_000,
            subscribed_topic_names=["orders"], owned=[], client_id=f"client-{member}"))
    out = describe_tables(state).splitlines()
    groups = out.index("CONSUMER GROUPS")
    assert out[groups + 1].split() == ["GROUP", "STATE", "GROUP", "EPOCH", "ASSIGNMENT", "EPOCH", "ASSIGNOR",
                                       "MEMBERS", "COMMITTED", "LAG"]
    assert out[groups + 2].split() == ["billing", "Reconciling", "3", "3", "uniform", "2", "0", "0"]
    members = out.index("CONSUMER GROUP MEMBERS")
    rows = {r.split()[1]: r.split() for r in out[members + 2:members + 4]}
    # a still owns both partitions at epoch 2 (one to give up); b waits at epoch 3 for the one a releases
    assert rows["a"][2:] == ["client-a", "-", "consumer", "2", "STABLE", "orders:0,1",
                             f"orders:{_only(state, 'a', topic_id)}"]
    assert rows["b"][2:6] == ["client-b", "-", "consumer", "3"] and rows["b"][6:8] == ["UNRELEASED_PARTITIONS", "-"]


def _only(state: Any, member: str, topic_id: uuid.UUID) -> str:
    group = state.consumer_groups.group("billing")
    return ",".join(map(str, sorted(group.target[member][topic_id])))


def test_leave_group_api_removes_members_in_one_epoch(w: World) -> None:
    w.hb("a", 0, instance="i-a")
    w.hb("b", 0)
    w.hb("c", 0)
    epoch = w.group().group_epoch
    out = w.coord.leave_group(w.group(), [("", "i-a"), ("b", None), ("zz", None), ("x", "i-nope")])
    assert out == [("a", "i-a", ErrorCode.NONE), ("b", None, ErrorCode.NONE), ("zz", None, ErrorCode.UNKNOWN_MEMBER_ID),
                   ("x", "i-nope", ErrorCode.UNKNOWN_MEMBER_ID)]
    assert set(w.group().members) == {"c"} and w.group().group_epoch == epoch + 1
    w.hb("d", 0, instance="i-d")
    assert w.coord.leave_group(w.group(), [("other", "i-d")]) == [("other", "i-d", ErrorCode.FENCED_INSTANCE_ID)]


def test_an_assignment_is_told_again_until_the_member_reports_owning_it(w: World) -> None:
    """An answer that tells a member to give partitions up, or grants it some, can be lost (librdkafka drops one
    that comes after its heartbeat timeout and does not send a full request after it): until the member reports
    owning what it was told, its heartbeats that report nothing owned are answered with the assignment again,
    where Kafka sends it once (a member told to revoke keeps its partitions until its rebalance timeout, one
    granted partitions never takes them)."""
    w.hb("a", 0, {})
    assert parts(w.hb("a", 2)) == {T1: [0, 1, 2, 3]}  # its first answer lost: told again
    assert parts(w.hb("a", 2, {T1: [0, 1, 2, 3]})) is None  # it reports owning them: no more
    assert parts(w.hb("a", 2)) is None
    rb = w.hb("b", 0)
    assert (rb["member_epoch"], parts(rb)) == (3, {})  # nothing until a gives two up: nothing to confirm
    told = parts(w.hb("a", 2))  # the answer telling a to give two up, lost on the way
    assert told is not None and len(told[T1]) == 2
    assert w.group().members["a"].state == MemberState.UNREVOKED_PARTITIONS
    again = w.hb("a", 2)
    assert (again["member_epoch"], parts(again)) == (2, told)
    assert parts(w.hb("a", 2, {T1: [0, 1, 2, 3]})) is None  # it reports what it owns: it has been told
    ra = w.hb("a", 2, {T1: told[T1]})  # revoked: on to the next epoch, as before
    assert (ra["member_epoch"], ra["assignment"]) == (3, None)
    assert w.hb("a", 3)["assignment"] is None  # it reported owning its assignment: nothing more to tell
    granted = parts(w.hb("b", 3))  # the answer granting b the two a gave up, lost on the way
    assert sorted(granted[T1] + told[T1]) == [0, 1, 2, 3]
    assert w.group().members["b"].is_reconciled_to(3)
    assert parts(w.hb("b", 3)) == granted  # b is stable at the group's epoch: told again all the same
    assert parts(w.hb("b", 3, {T1: granted[T1]})) is None
    assert parts(w.hb("b", 3)) is None
