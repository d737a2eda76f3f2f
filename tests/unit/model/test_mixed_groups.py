"""Mixed groups on a manual clock: a classic group upgraded to a consumer group, its classic members' rebalances
inside it, the downgrade back, and `group.consumer.migration.policy`. No sleeps, no sockets."""

from __future__ import annotations

import uuid
from typing import Any

import pytest

from fakekafka.model.clock import ManualClock
from fakekafka.model.consumer_group import (
    ConsumerGroupConfig,
    ConsumerGroupCoordinator,
    ConsumerGroupState,
    HeartbeatRequest,
    MemberState,
    TopicInfo,
)
from fakekafka.model.group import GroupConfig, GroupCoordinator, GroupState, Pending
from fakekafka.model.mixed_groups import classic_heartbeat, classic_join, classic_sync, encode_assignment
from fakekafka.wire import ErrorCode
from fakekafka.wire.messages.consumer_protocol_assignment import VERSIONS as ASSIGNMENT
from fakekafka.wire.messages.consumer_protocol_subscription import VERSIONS as SUBSCRIPTION

T1 = uuid.UUID(int=1)
SESSION, REBALANCE = 10_000, 30_000


def subscription(topics: list[str], owned: dict[str, list[int]] | None = None, version: int = 3) -> bytes:
    body = SUBSCRIPTION[version].build({"topics": topics, "user_data": None, "owned_partitions": [
        {"topic": t, "partitions": ps} for t, ps in (owned or {}).items()], "generation_id": -1, "rack_id": None})
    return version.to_bytes(2, "big") + body


def assignment(data: bytes) -> dict[str, list[int]]:
    body = ASSIGNMENT[3].parse(data[2:])
    return {t.topic: sorted(t.partitions) for t in body.assigned_partitions}


class World:
    """Both halves of the group coordinator, as a cluster wires them."""

    def __init__(self, policy: str = "bidirectional") -> None:
        self.clock = ManualClock(0)
        self.topics = {"t1": TopicInfo(T1, "t1", 4)}
        self.classic = GroupCoordinator(self.clock, GroupConfig(initial_rebalance_delay_ms=0,
                                                                min_session_timeout_ms=1000))
        self.coord = ConsumerGroupCoordinator(self.clock, ConsumerGroupConfig(migration_policy=policy),
                                              topics=lambda: self.topics, classic=self.classic)

    def classic_status(self, group_id: str) -> str | None:
        g = self.classic.group(group_id)
        return None if g is None else ("empty" if not g.members and not g.pending_members else "busy")

    def hb(self, member: str, epoch: int, owned: dict[uuid.UUID, list[int]] | None = None) -> dict[str, Any]:
        joining = epoch == 0
        return self.coord.heartbeat(HeartbeatRequest(
            group_id="g", member_id=member, member_epoch=epoch, rebalance_timeout_ms=REBALANCE if joining else -1,
            subscribed_topic_names=["t1"] if joining else None,
            owned=[] if joining else (None if owned is None else list(owned.items()))),
            is_classic_group=self.classic_status)

    def join(self, member_id: str, owned: dict[str, list[int]] | None = None, *,
             protocols: list[tuple[str, bytes]] | None = None) -> Any:
        """A classic JoinGroup, to whichever coordinator holds the group (as the handler dispatches)."""
        protocols = protocols or [("range", subscription(["t1"], owned))]
        cg = self.coord.group("g")
        if cg is not None and cg.members:
            return classic_join(self.coord, cg, member_id=member_id, group_instance_id=None,
                                require_known_member_id=False, client_id="c", client_host="/127.0.0.1",
                                session_timeout_ms=SESSION, rebalance_timeout_ms=REBALANCE,
                                protocol_type="consumer", protocols=protocols)
        return self.classic.join(group_id="g", member_id=member_id, group_instance_id=None,
                                 require_known_member_id=False, client_id="c", client_host="/127.0.0.1",
                                 rebalance_timeout_ms=REBALANCE, session_timeout_ms=SESSION,
                                 protocol_type="consumer", protocols=protocols, version=5)

    def classic_group(self, members: int = 2) -> list[str]:
        """A Stable classic group whose leader gave each member two partitions of t1 (range)."""
        for _ in range(members):
            self.join("")
        ids = list(self.classic.group("g").members)
        pendings = [self.join(mid) for mid in ids]  # every member (re)joins the same generation
        results = [p.result if isinstance(p, Pending) else p for p in pendings]
        assert all(r is not None and r["error_code"] == ErrorCode.NONE for r in results)
        ids = [r["member_id"] for r in results]
        leader = results[0]["leader"]
        gen = results[0]["generation_id"]
        plan = {mid: encode_assignment({"t1": [2 * i, 2 * i + 1]}, 3) for i, mid in enumerate(ids)}
        for mid in ids:
            self.classic.sync("g", gen, mid, None, plan if mid == leader else {})
        assert self.classic.group("g").state == GroupState.STABLE
        return ids

    def group(self) -> Any:
        g = self.coord.group("g")
        assert g is not None
        return g


@pytest.fixture
def w() -> World:
    return World()


def test_a_consumer_member_upgrades_a_classic_group_keeping_its_members(w: World) -> None:
    a, b = w.classic_group()
    gen = w.classic.group("g").generation_id
    r = w.hb("c", 0)
    assert r["error_code"] == ErrorCode.NONE
    assert w.classic.group("g") is None
    g = w.group()
    assert set(g.members) == {a, b, "c"}
    # the classic members keep their generation as member epoch and their partitions; the newcomer bumps it
    assert (g.members[a].member_epoch, g.members[a].classic.session_timeout_ms) == (gen, SESSION)
    assert g.members[a].assigned == {T1: frozenset({0, 1})}
    assert g.group_epoch == gen + 1 and r["member_epoch"] == gen + 1
    assert g.members["c"].classic is None and r["assignment"] == {"topic_partitions": []}  # still a's and b's
    summary = w.coord.describe("g")  # the pytest handle's and `fakekafka ctl describe`'s view
    assert {mid: m["protocol"] for mid, m in summary["members"].items()} == \
        {a: "classic", b: "classic", "c": "consumer"}
    # the classic members are told to rejoin; a's eager rejoin gives up everything (owned none)
    assert classic_heartbeat(w.coord, g, gen, a, None) == ErrorCode.REBALANCE_IN_PROGRESS
    ja = w.join(a)
    assert (ja["error_code"], ja["generation_id"], ja["protocol_name"], ja["leader"]) == \
        (ErrorCode.NONE, gen + 1, "range", "")
    sa = classic_sync(w.coord, g, gen + 1, a, None, "consumer", "range")
    assert sa["error_code"] == ErrorCode.NONE
    jb = w.join(b)
    sb = classic_sync(w.coord, g, jb["generation_id"], b, None, "consumer", "range")
    got_a, got_b = assignment(sa["assignment"]), assignment(sb["assignment"])
    rc = w.hb("c", r["member_epoch"], {})
    got_c = {"t1": rc["assignment"]["topic_partitions"][0]["partitions"]} if rc["assignment"] else {}
    every = sorted(p for x in (got_a, got_b, got_c) for p in x.get("t1", []))
    assert every == [0, 1, 2, 3] and all(x for x in (got_a, got_b, got_c))
    assert g.state == ConsumerGroupState.STABLE
    assert classic_heartbeat(w.coord, g, jb["generation_id"], b, None) == ErrorCode.NONE


def test_a_classic_member_that_owns_partitions_to_revoke_is_held_at_its_epoch(w: World) -> None:
    a, b = w.classic_group()
    gen = w.classic.group("g").generation_id
    w.hb("c", 0)
    g = w.group()
    # a cooperative member rejoins reporting what it owns: it keeps its epoch until it gives some up
    ja = w.join(a, {"t1": [0, 1]})
    assert g.members[a].state == MemberState.UNREVOKED_PARTITIONS  # the newcomer's target takes one of a's
    assert ja["generation_id"] == gen
    s = classic_sync(w.coord, g, gen, a, None, None, None)  # its partitions without the revoked one
    assert s["error_code"] == ErrorCode.NONE and assignment(s["assignment"]) == {"t1": [0]}
    assert classic_heartbeat(w.coord, g, gen, a, None) == ErrorCode.REBALANCE_IN_PROGRESS
    ja = w.join(a, {"t1": [0]})  # it gave up partition 1: the next epoch, and c may take it
    assert (ja["generation_id"], g.members[a].state) == (gen + 1, MemberState.STABLE)
    assert classic_heartbeat(w.coord, g, gen + 1, a, None) == ErrorCode.NONE


def test_a_classic_member_that_never_revokes_is_fenced_at_its_rebalance_timeout(w: World) -> None:
    a, _ = w.classic_group()
    gen = w.classic.group("g").generation_id
    w.hb("c", 0)
    w.join(a, {"t1": [0, 1]})
    assert w.group().members[a].state == MemberState.UNREVOKED_PARTITIONS
    w.clock.advance(REBALANCE - 1)
    classic_heartbeat(w.coord, w.group(), gen, a, None)
    w.coord.tick()
    assert a in w.group().members
    w.clock.advance(1)
    w.coord.tick()
    assert a not in w.group().members


def test_errors_of_a_classic_member_in_a_consumer_group(w: World) -> None:
    a, b = w.classic_group()
    gen = w.classic.group("g").generation_id
    w.hb("c", 0)
    g = w.group()
    assert classic_heartbeat(w.coord, g, gen + 5, a, None) == ErrorCode.ILLEGAL_GENERATION
    assert classic_heartbeat(w.coord, g, gen, "nobody", None) == ErrorCode.UNKNOWN_MEMBER_ID
    assert classic_heartbeat(w.coord, g, g.members["c"].member_epoch, "c", None) == ErrorCode.UNKNOWN_MEMBER_ID
    assert classic_sync(w.coord, g, gen, a, None, "consumer", "roundrobin")["error_code"] == \
        ErrorCode.INCONSISTENT_GROUP_PROTOCOL
    # the group epoch moved past a: its SyncGroup says rejoin
    assert classic_sync(w.coord, g, gen, a, None, None, None)["error_code"] == ErrorCode.REBALANCE_IN_PROGRESS
    other = w.join("", protocols=[("roundrobin", subscription(["t1"]))])
    assert other["error_code"] == ErrorCode.INCONSISTENT_GROUP_PROTOCOL  # not a protocol every classic member has
    # offsets: a classic member commits with its generation (any version); a wrong one is ILLEGAL_GENERATION
    assert w.coord.validate_commit(g, a, gen, version=8) == ErrorCode.NONE
    assert w.coord.validate_commit(g, a, gen + 1, version=8) == ErrorCode.ILLEGAL_GENERATION
    assert w.coord.validate_commit(g, "c", 0, version=8) == ErrorCode.UNSUPPORTED_VERSION


def test_classic_members_time_out_on_their_own_session_timeout(w: World) -> None:
    a, b = w.classic_group()
    w.hb("c", 0)
    w.clock.advance(SESSION - 1)  # the classic members' 10 s, not the group's 45 s
    w.coord.tick()
    assert {a, b} <= set(w.group().members)
    w.clock.advance(1)
    w.coord.tick()
    assert set(w.group().members) == {"c"}


def test_a_classic_member_told_to_rejoin_must_within_its_rebalance_timeout(w: World) -> None:
    a, b = w.classic_group()
    gen = w.classic.group("g").generation_id
    r = w.hb("c", 0)
    g = w.group()
    assert classic_heartbeat(w.coord, g, gen, a, None) == ErrorCode.REBALANCE_IN_PROGRESS
    for _ in range(REBALANCE // 5000):  # it keeps heartbeating, b rejoins, neither session runs out
        w.clock.advance(5000)
        w.hb("c", w.group().members["c"].member_epoch, None)
        classic_heartbeat(w.coord, g, gen, a, None)
        jb = w.join(b)
        classic_sync(w.coord, g, jb["generation_id"], b, None, None, None)
        w.coord.tick()
    assert a not in w.group().members and b in w.group().members
    del r


def test_a_classic_member_that_joins_but_never_syncs_is_fenced(w: World) -> None:
    w.classic_group()
    w.hb("c", 0)
    j = w.join("")  # a new classic member (v0-3: no member id round trip)
    assert j["error_code"] == ErrorCode.NONE and j["member_id"] in w.group().members
    w.clock.advance(REBALANCE)
    w.coord.tick()
    assert j["member_id"] not in w.group().members


def test_the_last_consumer_member_leaving_downgrades_the_group(w: World) -> None:
    a, b = w.classic_group()
    r = w.hb("c", 0)
    g = w.group()
    assert w.coord.commit(g, "c", r["member_epoch"], 9, {("t1", 0): (7, -1, None)}) == {("t1", 0): ErrorCode.NONE}
    target = {"t1": sorted(g.target[a][T1])}
    epoch = g.group_epoch
    left = w.hb("c", -1)
    assert left["error_code"] == ErrorCode.NONE
    assert w.coord.group("g") is None
    cg = w.classic.group("g")
    assert cg is not None and set(cg.members) == {a, b}
    # a classic group at the group epoch, rebalancing: heartbeats say rejoin, the members rejoin and sync
    assert (cg.state, cg.generation_id, cg.protocol_type, cg.protocol_name) == \
        (GroupState.PREPARING_REBALANCE, epoch, "consumer", "range")
    assert w.classic.heartbeat("g", epoch, a, None) == ErrorCode.REBALANCE_IN_PROGRESS
    assert assignment(cg.members[a].assignment) == target  # its target assignment, encoded
    assert cg.offsets[("t1", 0)].offset == 7  # the offsets stay with the group
    pa, pb = w.join(a), w.join(b)
    assert isinstance(pa, Pending) and isinstance(pb, Pending)
    assert pa.result is not None and pa.result["generation_id"] == epoch + 1
    assert w.classic.group("g").state == GroupState.COMPLETING_REBALANCE


def test_admin_removal_of_the_consumer_member_downgrades_too(w: World) -> None:
    a, b = w.classic_group()
    w.hb("c", 0)
    out = w.coord.leave_group(w.group(), [("c", None)])
    assert out == [("c", None, ErrorCode.NONE)]
    assert w.coord.group("g") is None and set(w.classic.group("g").members) == {a, b}


def test_policy_disabled_keeps_the_protocols_apart() -> None:
    w = World("disabled")
    w.classic_group()
    r = w.hb("c", 0)
    assert (r["error_code"], r["error_message"]) == (
        ErrorCode.GROUP_ID_NOT_FOUND,
        "Cannot upgrade classic group g to consumer group because online upgrade is disabled.")
    assert w.classic.group("g").state == GroupState.STABLE
    w2 = World("disabled")
    w2.hb("c", 0)
    j = w2.join("")
    assert j["error_code"] == ErrorCode.INCONSISTENT_GROUP_PROTOCOL


def test_policy_upgrade_only_keeps_the_consumer_group_when_the_consumer_member_leaves() -> None:
    w = World("upgrade")
    a, b = w.classic_group()
    w.hb("c", 0)
    w.hb("c", -1)
    g = w.coord.group("g")
    assert g is not None and set(g.members) == {a, b} and w.classic.group("g") is None
    w2 = World("downgrade")
    w2.classic_group()
    assert w2.hb("c", 0)["error_code"] == ErrorCode.GROUP_ID_NOT_FOUND


def test_a_classic_group_of_another_protocol_type_or_a_custom_assignor_is_not_upgraded(w: World) -> None:
    w.classic.join(group_id="g", member_id="", group_instance_id=None, require_known_member_id=False,
                   client_id="c", client_host="h", rebalance_timeout_ms=REBALANCE, session_timeout_ms=SESSION,
                   protocol_type="connect", protocols=[("default", b"x")], version=5)
    r = w.hb("c", 0)
    assert (r["error_code"], r["error_message"]) == (
        ErrorCode.GROUP_ID_NOT_FOUND,
        "Cannot upgrade classic group g to consumer group because the group does not use the consumer embedded "
        "protocol.")
    w2 = World()
    a, b = w2.classic_group()
    w2.classic.group("g").members[a].assignment = (3).to_bytes(2, "big") + ASSIGNMENT[3].build(
        {"assigned_partitions": [{"topic": "t1", "partitions": [0]}], "user_data": b"custom"})
    r2 = w2.hb("c", 0)
    assert r2["error_code"] == ErrorCode.GROUP_ID_NOT_FOUND and "custom assignor" in r2["error_message"]
    assert w2.classic.group("g").state == GroupState.STABLE


def test_waiting_joins_of_a_rebalancing_classic_group_are_told_to_rejoin(w: World) -> None:
    a, b = w.classic_group()
    pending = w.join(a)  # the leader rejoins: the group rebalances, a waits for b
    assert isinstance(pending, Pending) and pending.result is None
    w.hb("c", 0)
    assert pending.result is not None and pending.result["error_code"] == ErrorCode.REBALANCE_IN_PROGRESS
    assert a in w.group().members


def test_the_policy_is_a_broker_config_checked_as_kafka_checks_it() -> None:
    from fakekafka.model.cluster import ClusterState
    from fakekafka.model.config import BrokerConfig, InvalidConfig
    with pytest.raises(InvalidConfig, match="Invalid value sideways for configuration group.consumer.migration.policy: "
                                            r"String must be one of \(case insensitive\): DISABLED, DOWNGRADE, "
                                            "UPGRADE, BIDIRECTIONAL"):  # Kafka 4.4's words
        BrokerConfig.from_properties({"group.consumer.migration.policy": "sideways"})
    state = ClusterState(BrokerConfig.from_properties({"group.consumer.migration.policy": "UPGRADE"}),
                         clock=ManualClock(0))
    assert state.consumer_groups.config.migration_policy == "upgrade"
    assert state.consumer_groups.classic is state.groups
    assert ClusterState(clock=ManualClock(0)).consumer_groups.config.migration_policy == "bidirectional"


def test_upgrade_and_downgrade_write_kafkas_records_and_a_mixed_group_loads_back() -> None:
    """Upgrade: the classic group's tombstone, then the consumer group's records (its classic member with its
    ClassicMemberMetadata); downgrade: the consumer group's tombstones, then GroupMetadata; a new leader of the
    partition loads a mixed group with its classic member."""
    from fakekafka.model.cluster import ClusterState
    from fakekafka.model.config import BrokerConfig
    from fakekafka.model.internal_topics import OFFSETS_TOPIC
    from fakekafka.model.metadata import Broker
    from tests.unit.model.test_offsets_topic import records
    c = ClusterState(BrokerConfig(group_initial_rebalance_delay_ms=0), ManualClock(1_000),
                     [Broker(i, "127.0.0.1", 9000 + i) for i in (1, 2)])
    c.create_topic("t1", 4, 1)
    c.coordinator_for("g")
    p = c.partition(OFFSETS_TOPIC, c.offsets_partition_for("g"))
    kw: dict[str, Any] = dict(group_id="g", group_instance_id=None, require_known_member_id=False, client_id="c",
                              client_host="/127.0.0.1", rebalance_timeout_ms=REBALANCE, session_timeout_ms=SESSION,
                              protocol_type="consumer", protocols=[("range", subscription(["t1"]))], version=3)
    joined = c.groups.join(member_id="", **kw)
    a = joined.result["member_id"]
    c.groups.sync("g", 1, a, None, {a: encode_assignment({"t1": [0, 1, 2, 3]}, 3)})
    n = len(records(p))
    r = c.consumer_groups.heartbeat(HeartbeatRequest(group_id="g", member_id="m", member_epoch=0,
                                                     rebalance_timeout_ms=REBALANCE, subscribed_topic_names=["t1"],
                                                     owned=[]), is_classic_group=lambda _: "busy")
    assert r["error_code"] == ErrorCode.NONE
    written = records(p)[n:]
    assert (written[0][0], written[0][3]) == (2, None)  # GroupMetadata tombstone first
    members = {k.member_id: v for t, k, _, v in written if t == 5}
    assert members[a].classic_member_metadata.session_timeout_ms == SESSION
    assert [x.name for x in members[a].classic_member_metadata.supported_protocols] == ["range"]
    assert members["m"].classic_member_metadata is None  # not a classic member: the null marker, as Kafka 4.4
    c.offsets_topic.load(p)
    loaded = c.consumer_groups.groups["g"].members[a]
    assert loaded.classic is not None and loaded.classic.protocols == (("range", subscription(["t1"])),)
    n = len(records(p))
    c.consumer_groups.heartbeat(HeartbeatRequest(group_id="g", member_id="m", member_epoch=-1))
    tail = [(t, v is None) for t, _, _, v in records(p)[n:]]
    assert tail[-1] == (2, False) and all(gone for t, gone in tail[:-1]) and (3, True) in tail
    assert c.groups.group("g").state == GroupState.PREPARING_REBALANCE


def test_a_classic_static_member_replacing_the_last_consumer_member_downgrades_the_group(w: World) -> None:
    (a,) = w.classic_group(1)
    joined = w.coord.heartbeat(HeartbeatRequest(group_id="g", member_id="s", member_epoch=0, instance_id="i1",
                                                rebalance_timeout_ms=REBALANCE, subscribed_topic_names=["t1"],
                                                owned=[]), is_classic_group=w.classic_status)
    assert joined["error_code"] == ErrorCode.NONE
    g = w.group()
    target = {"t1": sorted(g.target["s"][T1])}
    epoch = g.group_epoch
    left = w.coord.heartbeat(HeartbeatRequest(group_id="g", member_id="s", member_epoch=-2, instance_id="i1"))
    assert left["error_code"] == ErrorCode.NONE and "s" in g.members  # a static member away keeps its place
    # it comes back on the classic protocol under a new member id: the group becomes classic again at once
    j = classic_join(w.coord, g, member_id="", group_instance_id="i1", require_known_member_id=True, client_id="c",
                     client_host="/127.0.0.1", session_timeout_ms=SESSION, rebalance_timeout_ms=REBALANCE,
                     protocol_type="consumer", protocols=[("range", subscription(["t1"]))])
    assert j["error_code"] == ErrorCode.NONE and j["generation_id"] == epoch
    assert w.coord.group("g") is None
    cg = w.classic.group("g")
    assert (cg.state, cg.generation_id, set(cg.members)) == (GroupState.STABLE, epoch, {a, j["member_id"]})
    assert assignment(cg.members[j["member_id"]].assignment) == target  # its predecessor's partitions
    synced = w.classic.sync("g", epoch, j["member_id"], "i1", {})
    assert synced["error_code"] == ErrorCode.NONE and assignment(synced["assignment"]) == target
