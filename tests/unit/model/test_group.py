"""The group coordinator with a manual clock: every transition, every error path, no sleeps."""

from __future__ import annotations

import itertools

import pytest

from fakekafka.model.clock import ManualClock
from fakekafka.model.group import (
    VALID_PREVIOUS,
    Group,
    GroupConfig,
    GroupCoordinator,
    GroupState,
    IllegalStateTransition,
    Pending,
)
from fakekafka.wire import ErrorCode

S = GroupState
SESSION, REBALANCE = 10_000, 30_000
RANGE = [("range", b"meta-range"), ("roundrobin", b"meta-rr")]


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock(0)


@pytest.fixture
def coord(clock: ManualClock) -> GroupCoordinator:
    return GroupCoordinator(clock, GroupConfig(initial_rebalance_delay_ms=0, min_session_timeout_ms=1000))


def join(coord: GroupCoordinator, member_id: str = "", *, group: str = "g", instance: str | None = None,
         protocols: list[tuple[str, bytes]] | None = None, protocol_type: str = "consumer", version: int = 9,
         session: int = SESSION, rebalance: int = REBALANCE, client_id: str = "client"):  # noqa: ANN201
    return coord.join(group_id=group, member_id=member_id, group_instance_id=instance,
                      require_known_member_id=version >= 4, client_id=client_id, client_host="127.0.0.1",
                      rebalance_timeout_ms=rebalance, session_timeout_ms=session, protocol_type=protocol_type,
                      protocols=protocols or RANGE, version=version)


def new_member(coord: GroupCoordinator, **kw) -> tuple[str, Pending | dict]:  # noqa: ANN003
    """The two-step join of a v4+ client: MEMBER_ID_REQUIRED, then a join with that id."""
    first = join(coord, **kw)
    assert isinstance(first, dict) and first["error_code"] == ErrorCode.MEMBER_ID_REQUIRED
    member_id = first["member_id"]
    return member_id, join(coord, member_id, **kw)


def stable_group(coord: GroupCoordinator, n: int) -> tuple[list[str], int]:
    """n members joined and synced; returns (member ids, generation)."""
    ids = []
    pendings = []
    for _ in range(n):
        mid, p = new_member(coord)
        ids.append(mid)
        pendings.append(p)
        # each join after the first rebalances the group: everyone rejoins as a real client would
        for other, op in zip(ids[:-1], pendings[:-1], strict=True):
            if isinstance(op, Pending) and op.result is not None and op.result["error_code"] == ErrorCode.NONE:
                pendings[ids.index(other)] = join(coord, other)
    g = coord.group("g")
    assert g is not None and g.state == S.COMPLETING_REBALANCE, g.state
    leader = g.leader_id
    sync = coord.sync("g", g.generation_id, leader, None, {m: m.encode() for m in ids})
    assert sync["error_code"] == ErrorCode.NONE
    assert g.state == S.STABLE
    return ids, g.generation_id


# --- the state table -----------------------------------------------------------------------------

@pytest.mark.parametrize(("source", "target"), list(itertools.product(S, S)))
def test_every_transition_pair_follows_the_table(source: GroupState, target: GroupState) -> None:
    group = Group("g", state=source)
    if source in VALID_PREVIOUS[target]:
        group.transition_to(target, 0)
        assert group.state == target and group.history[-1][1:3] == (source, target)
    else:
        with pytest.raises(IllegalStateTransition, match=f"{target.value}.*{source.value}"):
            group.transition_to(target, 0)
        assert group.state == source


def test_table_matches_kafka() -> None:
    assert VALID_PREVIOUS[S.DEAD] == frozenset(S)
    assert VALID_PREVIOUS[S.PREPARING_REBALANCE] == {S.STABLE, S.COMPLETING_REBALANCE, S.EMPTY}
    assert VALID_PREVIOUS[S.COMPLETING_REBALANCE] == {S.PREPARING_REBALANCE}
    assert VALID_PREVIOUS[S.STABLE] == {S.COMPLETING_REBALANCE}
    assert VALID_PREVIOUS[S.EMPTY] == {S.PREPARING_REBALANCE}


# --- joining ---------------------------------------------------------------------------------------

def test_first_member_becomes_leader_and_alone_gets_metadata(coord: GroupCoordinator) -> None:
    a, pa = new_member(coord)
    assert isinstance(pa, Pending) and pa.result is not None  # sole member: the join completes at once
    assert pa.result["leader"] == a and [m["member_id"] for m in pa.result["members"]] == [a]
    b, pb = new_member(coord)
    assert isinstance(pb, Pending) and pb.result is None  # waits for the leader to rejoin
    pa2 = join(coord, a)
    assert isinstance(pa2, Pending) and pa2.result is not None and pb.result is not None
    assert pa2.result["generation_id"] == pb.result["generation_id"] == 2
    assert sorted(m["member_id"] for m in pa2.result["members"]) == sorted([a, b])
    assert pb.result["members"] == [] and pb.result["leader"] == a
    assert [(f.value, t.value) for _, f, t, _ in coord.group("g").history] == [
        ("Empty", "PreparingRebalance"), ("PreparingRebalance", "CompletingRebalance"),
        ("CompletingRebalance", "PreparingRebalance"), ("PreparingRebalance", "CompletingRebalance")]


def test_a_zero_initial_delay_still_waits_for_the_joins_queued_before_its_timer(coord: GroupCoordinator) -> None:
    """Kafka's prepareRebalance puts an Empty group's first join completion on its timer even at 0 ms
    (tryCompleteInitialRebalanceElseSchedule), so joins already queued at the coordinator share generation 1; each
    new member makes the timer wait once more."""
    fired: list[int] = []
    coord.on_due = lambda: fired.append(len(coord.due))  # a server runs `run_due` once its read requests are handled
    a, pa = new_member(coord)
    b, pb = new_member(coord)
    assert isinstance(pa, Pending) and isinstance(pb, Pending) and pa.result is None and pb.result is None
    assert fired and coord.group("g").state == GroupState.PREPARING_REBALANCE
    coord.run_due()  # b came while the timer waited: once more
    assert pa.result is None and coord.due == {"g": None}
    coord.run_due()
    assert pa.result is not None and pb.result is not None
    assert pa.result["generation_id"] == pb.result["generation_id"] == 1
    assert sorted(m["member_id"] for m in pa.result["members"]) == sorted([a, b])
    assert coord.due == {}


def test_v3_joins_without_member_id_required(coord: GroupCoordinator) -> None:
    r = join(coord, version=3)
    assert isinstance(r, Pending) and r.result["error_code"] == ErrorCode.NONE and r.result["member_id"]


def test_protocol_chosen_by_vote(coord: GroupCoordinator) -> None:
    a, _ = new_member(coord, protocols=[("roundrobin", b""), ("range", b"")])
    b, pb = new_member(coord, protocols=[("range", b""), ("roundrobin", b"")])
    c, pc = new_member(coord, protocols=[("range", b"")])
    join(coord, a, protocols=[("roundrobin", b""), ("range", b"")])
    join(coord, b, protocols=[("range", b""), ("roundrobin", b"")])
    assert pc.result is not None and pc.result["protocol_name"] == "range"


def test_join_errors(coord: GroupCoordinator) -> None:
    assert join(coord, group="")["error_code"] == ErrorCode.INVALID_GROUP_ID
    assert join(coord, session=10)["error_code"] == ErrorCode.INVALID_SESSION_TIMEOUT
    assert join(coord, "who")["error_code"] == ErrorCode.UNKNOWN_MEMBER_ID
    new_member(coord)
    assert join(coord, protocol_type="connect")["error_code"] == ErrorCode.INCONSISTENT_GROUP_PROTOCOL
    assert join(coord, protocols=[("other", b"")])["error_code"] == ErrorCode.INCONSISTENT_GROUP_PROTOCOL
    assert join(coord, "who")["error_code"] == ErrorCode.UNKNOWN_MEMBER_ID


def test_pending_member_that_never_rejoins_expires(coord: GroupCoordinator, clock: ManualClock) -> None:
    first = join(coord)
    assert first["error_code"] == ErrorCode.MEMBER_ID_REQUIRED
    clock.advance(SESSION)
    coord.tick()
    assert join(coord, first["member_id"])["error_code"] == ErrorCode.UNKNOWN_MEMBER_ID


def test_rebalance_timeout_removes_members_that_did_not_rejoin(coord: GroupCoordinator, clock: ManualClock) -> None:
    (a, b), gen = stable_group(coord, 2)
    p = join(coord, b, protocols=[("range", b"changed")])  # b changes metadata: rebalance
    assert isinstance(p, Pending) and p.result is None
    assert coord.group("g").state == S.PREPARING_REBALANCE
    for _ in range(REBALANCE // 5000 - 1):  # a keeps heartbeating (it is alive) but never rejoins
        assert coord.heartbeat("g", gen, a, None) == ErrorCode.REBALANCE_IN_PROGRESS
        clock.advance(5000)
        coord.tick()
    clock.advance(4999)
    coord.tick()
    assert p.result is None and a in coord.group("g").members
    clock.advance(1)
    coord.tick()
    g = coord.group("g")
    assert p.result["error_code"] == ErrorCode.NONE and list(g.members) == [b] and g.leader_id == b
    assert g.generation_id == gen + 1 and g.state == S.COMPLETING_REBALANCE


def test_initial_rebalance_delay_batches_joins(clock: ManualClock) -> None:
    coord = GroupCoordinator(clock, GroupConfig(initial_rebalance_delay_ms=3000, min_session_timeout_ms=1000))
    _, pa = new_member(coord)
    clock.advance(2000)
    coord.tick()
    _, pb = new_member(coord)
    assert pa.result is None and pb.result is None
    clock.advance(1000)
    coord.tick()  # the delay is extended once because a member arrived during it
    assert pa.result is None
    clock.advance(3000)
    coord.tick()
    assert pa.result["generation_id"] == pb.result["generation_id"] == 1
    assert coord.group("g").state == S.COMPLETING_REBALANCE


# --- sync, heartbeat, session expiry -------------------------------------------------------------------

def test_followers_wait_for_the_leaders_assignment(coord: GroupCoordinator) -> None:
    a, _ = new_member(coord)
    b, pb = new_member(coord)
    join(coord, a)
    g = coord.group("g")
    follower = b if g.leader_id == a else a
    fs = coord.sync("g", g.generation_id, follower, None, {})
    assert isinstance(fs, Pending) and fs.result is None
    ls = coord.sync("g", g.generation_id, g.leader_id, None, {a: b"A", b: b"B"})
    assert ls["error_code"] == ErrorCode.NONE and fs.result["assignment"] == (b"B" if follower == b else b"A")
    assert g.state == S.STABLE
    assert coord.sync("g", g.generation_id, follower, None, {})["assignment"] == fs.result["assignment"]


def test_sync_errors(coord: GroupCoordinator) -> None:
    (a, b), gen = stable_group(coord, 2)
    assert coord.sync("nope", gen, a, None, {})["error_code"] == ErrorCode.UNKNOWN_MEMBER_ID
    assert coord.sync("g", gen, "who", None, {})["error_code"] == ErrorCode.UNKNOWN_MEMBER_ID
    assert coord.sync("g", gen - 1, a, None, {})["error_code"] == ErrorCode.ILLEGAL_GENERATION
    assert coord.sync("g", gen, a, None, {}, protocol_name="sticky")["error_code"] == \
        ErrorCode.INCONSISTENT_GROUP_PROTOCOL
    coord.force_rebalance("g")
    assert coord.sync("g", gen, a, None, {})["error_code"] == ErrorCode.REBALANCE_IN_PROGRESS


def test_rebalance_during_sync_tells_waiting_members_to_rejoin(coord: GroupCoordinator) -> None:
    a, _ = new_member(coord)
    b, _ = new_member(coord)
    join(coord, a)
    g = coord.group("g")
    follower = b if g.leader_id == a else a
    fs = coord.sync("g", g.generation_id, follower, None, {})
    new_member(coord)
    assert fs.result["error_code"] == ErrorCode.REBALANCE_IN_PROGRESS


def test_session_expiry_removes_member_and_rebalances(coord: GroupCoordinator, clock: ManualClock) -> None:
    (a, b), gen = stable_group(coord, 2)
    clock.advance(SESSION - 1)
    assert coord.heartbeat("g", gen, a, None) == ErrorCode.NONE
    coord.tick()
    assert coord.group("g").state == S.STABLE
    clock.advance(1)
    coord.tick()  # b never heartbeated: gone; a is waiting to rejoin
    g = coord.group("g")
    assert b not in g.members and g.state == S.PREPARING_REBALANCE
    assert coord.heartbeat("g", gen, a, None) == ErrorCode.REBALANCE_IN_PROGRESS
    p = join(coord, a)
    assert p.result["generation_id"] == gen + 1 and g.state == S.COMPLETING_REBALANCE


def test_heartbeat_errors(coord: GroupCoordinator) -> None:
    (a, _), gen = stable_group(coord, 2)
    assert coord.heartbeat("", gen, a, None) == ErrorCode.INVALID_GROUP_ID
    assert coord.heartbeat("nope", gen, a, None) == ErrorCode.UNKNOWN_MEMBER_ID
    assert coord.heartbeat("g", gen, "who", None) == ErrorCode.UNKNOWN_MEMBER_ID
    assert coord.heartbeat("g", gen + 1, a, None) == ErrorCode.ILLEGAL_GENERATION


def test_leave_rebalances_at_once_and_last_leave_empties(coord: GroupCoordinator) -> None:
    (a, b), gen = stable_group(coord, 2)
    top, codes = coord.leave("g", [(b, None)])
    assert (top, codes) == (ErrorCode.NONE, [ErrorCode.NONE])
    g = coord.group("g")
    assert g.state == S.PREPARING_REBALANCE
    p = join(coord, a)
    assert p.result["generation_id"] == gen + 1
    coord.sync("g", gen + 1, a, None, {a: b"x"})
    assert coord.leave("g", [(a, None), ("who", None)])[1] == [ErrorCode.NONE, ErrorCode.UNKNOWN_MEMBER_ID]
    assert g.state == S.EMPTY and g.generation_id == gen + 2 and not g.members


# --- static membership ----------------------------------------------------------------------------------

def test_static_member_restart_takes_its_place_without_rebalance(coord: GroupCoordinator) -> None:
    p = join(coord, instance="i-1")  # static members get no MEMBER_ID_REQUIRED round trip
    assert isinstance(p, Pending) and p.result is not None
    old = p.result["member_id"]
    gen = p.result["generation_id"]
    coord.sync("g", gen, old, "i-1", {old: b"mine"})
    again = join(coord, instance="i-1", version=8)  # restarted: no member id, same instance id
    assert isinstance(again, dict) and again["error_code"] == ErrorCode.NONE
    new = again["member_id"]
    # before v9, the old leader id and no members keep the rejoined leader from reassigning
    assert new != old and again["generation_id"] == gen and again["leader"] == old and again["members"] == []
    g = coord.group("g")
    assert g.state == S.STABLE and list(g.members) == [new]
    assert coord.sync("g", gen, new, "i-1", {})["assignment"] == b"mine"
    assert coord.heartbeat("g", gen, old, "i-1") == ErrorCode.FENCED_INSTANCE_ID
    assert join(coord, old, instance="i-1")["error_code"] == ErrorCode.FENCED_INSTANCE_ID


def test_static_leader_rejoin_v9_gets_members_and_skip_assignment(coord: GroupCoordinator) -> None:
    """KIP-814, as Kafka 4.4 answers (found by python -m compat diff): the leader knows it leads, with the
    members' metadata, and is told to skip the assignment."""
    p = join(coord, instance="i-1")
    old, gen = p.result["member_id"], p.result["generation_id"]
    coord.sync("g", gen, old, "i-1", {old: b"mine"})
    again = join(coord, instance="i-1", version=9)
    new = again["member_id"]
    assert again["leader"] == new and again["skip_assignment"] is True and again["generation_id"] == gen
    assert [m["member_id"] for m in again["members"]] == [new]
    assert coord.group("g").state == S.STABLE
    assert coord.sync("g", gen, new, "i-1", {})["assignment"] == b"mine"


def test_static_member_restart_while_completing_rebalance_rebalances_again(coord: GroupCoordinator) -> None:
    """As Kafka's coordinator: the leader may be computing an assignment for the old member id, so a static
    member replaced between JoinGroup and SyncGroup makes the group rebalance (a new generation)."""
    p = join(coord, instance="i-1")
    gen = p.result["generation_id"]
    assert coord.group("g").state == S.COMPLETING_REBALANCE
    again = join(coord, instance="i-1")
    assert isinstance(again, Pending) and again.result is not None  # its join completes the new round
    assert again.result["generation_id"] == gen + 1 and again.result["leader"] == again.result["member_id"]
    assert coord.group("g").state == S.COMPLETING_REBALANCE


# --- offsets ---------------------------------------------------------------------------------------------

def test_commits_only_from_the_current_generation(coord: GroupCoordinator) -> None:
    (a, _), gen = stable_group(coord, 2)
    tp = ("t", 0)
    assert coord.commit("g", gen, a, None, {tp: (5, 0, "meta")}) == {tp: ErrorCode.NONE}
    assert coord.commit("g", gen - 1, a, None, {tp: (6, 0, None)}) == {tp: ErrorCode.ILLEGAL_GENERATION}
    assert coord.commit("g", gen, "who", None, {tp: (6, 0, None)}) == {tp: ErrorCode.UNKNOWN_MEMBER_ID}
    assert coord.commit("g", -1, "", None, {tp: (6, 0, None)}) == {tp: ErrorCode.UNKNOWN_MEMBER_ID}
    assert coord.commit("g", gen, a, None, {tp: (6, 0, "x" * 5000)}) == {tp: ErrorCode.OFFSET_METADATA_TOO_LARGE}
    om = coord.fetch_offsets("g", [tp, ("t", 1)])
    assert om[tp].offset == 5 and om[tp].metadata == "meta" and om[("t", 1)] is None


def test_commit_during_completing_rebalance_is_refused(coord: GroupCoordinator) -> None:
    a, _ = new_member(coord)
    gen = coord.group("g").generation_id
    assert coord.commit("g", gen, a, None, {("t", 0): (1, -1, None)}) == {("t", 0): ErrorCode.REBALANCE_IN_PROGRESS}


def test_simple_consumer_commits_create_an_empty_group(coord: GroupCoordinator) -> None:
    assert coord.commit("solo", -1, "", None, {("t", 0): (3, -1, None)}) == {("t", 0): ErrorCode.NONE}
    assert coord.group("solo").state == S.EMPTY
    assert coord.commit("other", 2, "m", None, {("t", 0): (3, -1, None)}) == {("t", 0): ErrorCode.ILLEGAL_GENERATION}


def test_offsets_of_an_empty_group_expire_then_the_group_dies(clock: ManualClock) -> None:
    coord = GroupCoordinator(clock, GroupConfig(offsets_retention_ms=60_000, offsets_retention_check_interval_ms=1000))
    coord.commit("g", -1, "", None, {("t", 0): (1, -1, None)})
    clock.advance(59_999)
    coord.tick()
    assert coord.group("g").offsets
    clock.advance(1)
    coord.tick()
    assert coord.group("g") is None


def test_delete_group_rules(coord: GroupCoordinator) -> None:
    stable_group(coord, 1)
    assert coord.delete_group("g") == ErrorCode.NON_EMPTY_GROUP
    assert coord.delete_group("nope") == ErrorCode.GROUP_ID_NOT_FOUND
    coord.commit("e", -1, "", None, {("t", 0): (1, -1, None)})
    assert coord.delete_group("e") == ErrorCode.NONE and coord.group("e") is None


def test_next_deadline_tracks_sessions(coord: GroupCoordinator, clock: ManualClock) -> None:
    assert coord.next_deadline() is None
    stable_group(coord, 1)
    assert coord.next_deadline() == clock.now_ms() + SESSION
