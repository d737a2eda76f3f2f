"""`__consumer_offsets` on a manual clock: the records the coordinators write (Kafka's key/value schemas), their
tombstones, compaction, transactional offsets settled by markers, and the coordinators' state loaded back from a
new leader's replica when the partition's leadership moves."""

from __future__ import annotations

import uuid
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from fakekafka.model.clock import ManualClock
from fakekafka.model.cluster import ClusterState
from fakekafka.model.config import BrokerConfig
from fakekafka.model.consumer_group import HeartbeatRequest, MemberState
from fakekafka.model.group import GroupState, OffsetAndMetadata, Pending
from fakekafka.model.internal_topics import OFFSETS_TOPIC
from fakekafka.model.metadata import Broker, Partition
from fakekafka.model.offsets_topic import (
    batch_of,
    current_assignment_value,
    decode_record,
    offset_commit_key,
    offset_commit_value,
    target_member_value,
)
from fakekafka.model.streams_group import StreamsHeartbeat
from fakekafka.model.streams_topology import InternalTopic, Subtopology, Topology
from fakekafka.wire import ErrorCode
from fakekafka.wire.coordinator import offset_commit
from fakekafka.wire.records import build_batch, decode_batch

SESSION = 10_000


def make() -> ClusterState:
    c = ClusterState(BrokerConfig(group_initial_rebalance_delay_ms=0), ManualClock(1_000),
                     [Broker(i, "127.0.0.1", 9000 + i) for i in (1, 2, 3)])
    c.create_topic("t", 2, 1)
    return c


def offsets_partition(c: ClusterState, group: str) -> Partition:
    c.coordinator_for(group)
    p = c.partition(OFFSETS_TOPIC, c.offsets_partition_for(group))
    assert p is not None
    return p


def records(p: Partition, replica: int | None = None) -> list[tuple[int, Any, int, Any]]:
    """Every data record of the partition's log (the leader's, or a replica's), decoded."""
    log = p.logs[replica] if replica is not None else p.log
    out = []
    for batch in log.batches:
        rb = decode_batch(bytes(batch))
        if not rb.header.is_control:
            out += [decode_record(r.key, r.value) for r in rb.records if r.key is not None]
    return out


def commit(c: ClusterState, group: str, offsets: dict[tuple[str, int], int]) -> None:
    codes = c.groups.commit(group, -1, "", None, {tp: (o, -1, f"m{o}") for tp, o in offsets.items()})
    assert set(codes.values()) == {ErrorCode.NONE}


def join_and_sync(c: ClusterState, group: str) -> str:
    """One classic member joined (v4+, two steps) and its assignment synced: the group is Stable."""
    kw: dict[str, Any] = dict(group_id=group, group_instance_id=None, require_known_member_id=True,
                              client_id="client", client_host="/127.0.0.1", rebalance_timeout_ms=30_000,
                              session_timeout_ms=SESSION, protocol_type="consumer",
                              protocols=[("range", b"sub")], version=9)
    first = c.groups.join(member_id="", **kw)
    assert isinstance(first, dict)
    member = first["member_id"]
    joined = c.groups.join(member_id=member, **kw)
    assert isinstance(joined, Pending) and joined.result is not None
    synced = c.groups.sync(group, joined.result["generation_id"], member, None, {member: b"assigned"})
    assert isinstance(synced, dict) and synced["error_code"] == ErrorCode.NONE
    return member


def test_offset_commit_record_bytes_are_kafkas_schema() -> None:
    """The hand-built hot-path encoding agrees with the generated declarations of Kafka's schemas."""
    key = offset_commit_key("g", "t", 3)
    assert key[:2] == b"\x00\x01" and offset_commit.KEY.parse(key[2:]) == {"group": "g", "topic": "t", "partition": 3}
    topic_id = uuid.uuid4()
    om = OffsetAndMetadata(42, 7, "meta", 1234)
    value = offset_commit_value(om, topic_id)
    assert value == b"\x00\x04" + offset_commit.VALUES[4].build(
        {"offset": 42, "leader_epoch": 7, "metadata": "meta", "commit_timestamp": 1234, "topic_id": topic_id})
    assert offset_commit_value(om)[2:] == offset_commit.VALUES[4].build(
        {"offset": 42, "leader_epoch": 7, "metadata": "meta", "commit_timestamp": 1234})


@pytest.mark.parametrize("producer", [(-1, -1), (77, 3)])
def test_the_coordinators_batch_is_a_producers_batch(producer: tuple[int, int]) -> None:
    """The hand-built batch is byte for byte what the generic batch builder makes of the same records."""
    records = [(b"k%d" % i, None if i % 3 == 2 else b"v" * i * 40) for i in range(70)]
    assert batch_of(records, 123_456, *producer) == build_batch(
        [{"key": k, "value": v, "timestamp": 123_456} for k, v in records], producer_id=producer[0],
        producer_epoch=producer[1], transactional=producer[0] >= 0)


def test_a_commit_is_one_batch_of_offset_commit_records_and_delete_offsets_writes_tombstones() -> None:
    c = make()
    p = offsets_partition(c, "g")
    commit(c, "g", {("t", 0): 5, ("t", 1): 7})
    assert len(p.log.batches) == 1
    [(t0, k0, v0, val0), (_, k1, _, val1)] = records(p)
    assert (t0, k0.group, k0.topic, k0.partition, v0) == (1, "g", "t", 0, 4)
    assert (val0.offset, val0.leader_epoch, val0.metadata, val0.commit_timestamp, val0.topic_id) == \
        (5, -1, "m5", 1_000, c.topics["t"].topic_id)
    assert (k1.partition, val1.offset) == (1, 7)
    assert c.groups.delete_offsets("g", [("t", 1)]) == (ErrorCode.NONE, {("t", 1): ErrorCode.NONE})
    assert [(k.partition, v) for _, k, _, v in records(p)[2:]] == [(1, None)]
    assert p.log.high_watermark == p.log.log_end_offset  # replicated to the followers


def test_classic_rebalance_writes_group_metadata_and_deletion_writes_tombstones() -> None:
    c = make()
    p = offsets_partition(c, "g")
    member = join_and_sync(c, "g")
    commit_codes = c.groups.commit("g", 1, member, None, {("t", 0): (3, -1, None)})
    assert commit_codes == {("t", 0): ErrorCode.NONE}
    c.groups.leave("g", [(member, None)])
    written = [(t, v) for t, _, _, v in records(p)]
    assert [t for t, _ in written] == [2, 2, 1, 2]  # created, rebalance completed, commit, emptied
    created, stable, _, emptied = (v for _, v in written)
    assert (created.protocol_type, created.generation, created.protocol, created.leader, created.members) == \
        ("", 0, None, None, [])
    assert (stable.protocol_type, stable.generation, stable.protocol, stable.leader) == \
        ("consumer", 1, "range", member)
    [m] = stable.members
    assert (m.member_id, m.client_id, m.client_host, m.session_timeout, m.rebalance_timeout, m.subscription,
            m.assignment) == (member, "client", "/127.0.0.1", SESSION, 30_000, b"sub", b"assigned")
    assert (emptied.generation, emptied.protocol, emptied.members) == (2, None, [])
    assert c.groups.delete_group("g") == ErrorCode.NONE
    assert [(t, k.get("partition"), v) for t, k, _, v in records(p)[4:]] == [(1, 0, None), (2, None, None)]


def test_expired_offsets_and_groups_leave_tombstones() -> None:
    c = make()
    p = offsets_partition(c, "g")
    commit(c, "g", {("t", 0): 1})
    c.clock.advance(c.groups.config.offsets_retention_ms)
    c.tick()
    assert c.groups.group("g") is None
    assert [(t, v) for t, _, _, v in records(p)[1:]] == [(1, None), (2, None)]


def test_the_log_is_compacted_to_the_latest_record_per_key() -> None:
    c = make()
    p = offsets_partition(c, "g")
    topic = c.topics[OFFSETS_TOPIC]
    c.set_topic_configs(topic, {**topic.configs, "segment.ms": "100", "min.cleanable.dirty.ratio": "0.01"})
    for i in range(5):
        commit(c, "g", {("t", 0): i})
        c.clock.advance(200)
    commit(c, "g", {("t", 1): 9})  # rolls the segment holding the five commits: they are cleanable now
    c.force_compaction(OFFSETS_TOPIC)
    assert [(k.partition, v.offset) for _, k, _, v in records(p)] == [(0, 4), (1, 9)]


def test_transactional_offsets_are_settled_by_the_marker_and_survive_a_leader_move() -> None:
    c = make()
    p = offsets_partition(c, "g")
    assert c.groups.txn_commit("g", 77, -1, "", None, {("t", 0): (10, -1, None)}, 3) == {("t", 0): ErrorCode.NONE}
    assert c.groups.txn_commit("g", 88, -1, "", None, {("t", 1): (20, -1, None)}, 1) == {("t", 1): ErrorCode.NONE}
    first, second = (decode_batch(bytes(b)).header for b in p.log.batches)
    assert (first.is_transactional, first.producer_id, first.producer_epoch) == (True, 77, 3)
    assert p.log.last_stable_offset == 0  # the open transactions hold read_committed consumers back
    assert c.write_marker(p, 77, 3, True, 0) == ErrorCode.NONE
    assert c.write_marker(p, 88, 1, False, 0) == ErrorCode.NONE
    assert c.groups.fetch_offsets("g", None) == {("t", 0): OffsetAndMetadata(10, -1, "", 1_000)}
    c.kill_broker(p.leader_id)  # every record reached the followers: the new leader loads the same state
    assert c.groups.fetch_offsets("g", None) == {("t", 0): OffsetAndMetadata(10, -1, "", 1_000)}


def test_a_new_leader_loads_what_its_replica_has_and_loses_what_it_lacks() -> None:
    c = make()
    p = offsets_partition(c, "g")
    member = join_and_sync(c, "g")
    c.groups.commit("g", 1, member, None, {("t", 0): (3, -1, None)})
    follower = next(r for r in p.replicas if r != p.leader_id)
    laggard = next(r for r in p.replicas if r not in (p.leader_id, follower))
    p.paused.add(follower)
    p.paused.add(laggard)
    c.groups.commit("g", 1, member, None, {("t", 0): (8, -1, None), ("t", 1): (2, -1, None)})  # not replicated
    assert c.groups.fetch_offsets("g", [("t", 0)]) == {("t", 0): OffsetAndMetadata(8, -1, "", 1_000)}
    p.isr = [p.leader_id, follower]  # the follower is still in the ISR when the leader dies
    c.kill_broker(p.leader_id)
    assert p.leader_id == follower
    assert "offsets_loaded" in [e.kind for e in c.events]
    assert c.groups.fetch_offsets("g", None) == {("t", 0): OffsetAndMetadata(3, -1, "", 1_000)}
    g = c.groups.group("g")
    assert g is not None and (g.state, g.generation_id, g.leader_id, g.protocol_name) == \
        (GroupState.STABLE, 1, member, "range")
    assert g.members[member].assignment == b"assigned"
    assert c.groups.heartbeat("g", 1, member, None) == ErrorCode.NONE  # the member carries on with the new one
    c.clock.advance(SESSION)
    c.tick()  # its session was restarted at the load; without heartbeats it expires and the group empties
    assert g.state == GroupState.EMPTY


def hb(c: ClusterState, member: str, epoch: int, owned: list[Any] | None = None) -> dict[str, Any]:
    return c.consumer_groups.heartbeat(HeartbeatRequest(
        group_id="cg", member_id=member, member_epoch=epoch, rebalance_timeout_ms=30_000 if epoch == 0 else -1,
        subscribed_topic_names=["t"] if epoch == 0 else None, owned=[] if epoch == 0 else owned,
        client_id="cid", client_host="/127.0.0.1", version=1))


def test_consumer_group_records_follow_the_group_and_load_back() -> None:
    c = make()
    p = offsets_partition(c, "cg")
    r = hb(c, "m1", 0)
    assert r["error_code"] == ErrorCode.NONE and r["member_epoch"] == 2
    kinds = [t for t, *_ in records(p)]
    assert kinds == [5, 3, 7, 6, 8]  # member, group epoch, target member, target epoch, current assignment
    by_type = {t: (k, v) for t, k, _, v in records(p)}
    assert by_type[3][1].epoch == 2 and by_type[6][1].assignment_epoch == 2
    member = by_type[5][1]
    assert (member.client_id, member.client_host, member.subscribed_topic_names, member.rebalance_timeout_ms) == \
        ("cid", "/127.0.0.1", ["t"], 30_000)
    tid = c.topics["t"].topic_id
    current = by_type[8][1]
    assert (current.member_epoch, current.state,
            [(a.topic_id, a.partitions, a.assignment_epochs) for a in current.assigned_partitions]) == \
        (2, 0, [(tid, [0, 1], [2, 2])])
    n = len(records(p))
    hb(c, "m1", 2, [(tid, [0, 1])])
    assert len(records(p)) == n  # nothing changed: nothing written
    assert c.consumer_groups.commit(c.consumer_groups.groups["cg"], "m1", 2, 9, {("t", 0): (4, -1, None)}) == \
        {("t", 0): ErrorCode.NONE}
    c.move_leader(OFFSETS_TOPIC, p.index, next(r for r in p.isr if r != p.leader_id))
    assert c.consumer_groups.groups["cg"] is not None  # same log on the new leader: nothing to load
    c.offsets_topic.load(p)  # a load from the log rebuilds the same group
    g = c.consumer_groups.groups["cg"]
    m = g.members["m1"]
    assert (g.group_epoch, g.assignment_epoch, g.target, m.member_epoch, m.state, m.assigned) == \
        (2, 2, {"m1": {tid: frozenset({0, 1})}}, 2, MemberState.STABLE, {tid: frozenset({0, 1})})
    assert g.offsets[("t", 0)].offset == 4
    assert hb(c, "m1", 2, [(tid, [0, 1])])["error_code"] == ErrorCode.NONE
    left = hb(c, "m1", -1)
    assert left["error_code"] == ErrorCode.NONE
    tail = [(t, v is None) for t, _, _, v in records(p)[n + 1:]]
    # the member's records go; a new group epoch, the empty target assignment at it
    assert tail == [(8, True), (7, True), (5, True), (3, False), (6, False)]
    c.clock.advance(c.consumer_groups.config.offsets_retention_ms)
    c.tick()
    assert "cg" not in c.consumer_groups.groups
    assert [(t, v is None) for t, _, _, v in records(p)[n + 6:]] == [(1, True), (6, True), (3, True)]


def test_a_member_leaving_a_bigger_group_takes_its_records_with_it_before_and_after_a_load() -> None:
    c = make()
    p = offsets_partition(c, "cg")
    for m in ("m1", "m2", "m3"):
        assert hb(c, m, 0)["error_code"] == ErrorCode.NONE

    def leaves(member: str) -> list[tuple[int, str]]:
        n = len(records(p))
        assert hb(c, member, -1)["error_code"] == ErrorCode.NONE
        return [(t, k.member_id) for t, k, _, v in records(p)[n:] if v is None]

    # its current assignment, target and member records go (a new target is computed for the others)
    assert leaves("m2") == [(8, "m2"), (7, "m2"), (5, "m2")]
    c.offsets_topic.load(p)  # the group as its records say: the next change is a diff to what was loaded
    assert leaves("m3") == [(8, "m3"), (7, "m3"), (5, "m3")]
    assert [v for t, k, _, v in records(p) if t == 7 and k.member_id == "m1"][-1] is not None


@pytest.mark.parametrize("deleted_topic", [True, False])
def test_deleting_a_topic_tombstones_its_offsets(deleted_topic: bool) -> None:
    c = make()
    c.create_topic("u", 1, 1)
    p = offsets_partition(c, "g")
    commit(c, "g", {("t", 0): 1, ("u", 0): 2})
    if deleted_topic:
        c.delete_topic("u")
    tail = [(k.topic, v) for _, k, _, v in records(p)[2:]]
    assert tail == ([("u", None)] if deleted_topic else [])


def test_requests_parked_on_the_old_coordinator_are_answered_not_coordinator_at_the_load() -> None:
    c = make()
    p = offsets_partition(c, "g")
    join_and_sync(c, "g")
    kw: dict[str, Any] = dict(group_id="g", group_instance_id=None, require_known_member_id=False,
                              client_id="late", client_host="/127.0.0.1", rebalance_timeout_ms=30_000,
                              session_timeout_ms=SESSION, protocol_type="consumer",
                              protocols=[("range", b"sub")], version=3)
    parked = c.groups.join(member_id="", **kw)  # waits for the first member to rejoin
    assert isinstance(parked, Pending) and parked.result is None
    follower = next(r for r in p.replicas if r != p.leader_id)
    p.paused.update(r for r in p.replicas if r != p.leader_id)
    c.groups.records.offsets("g", {("t", 1): OffsetAndMetadata(1, -1, "", 1_000)})  # a write the replicas miss
    p.isr = [p.leader_id, follower]
    c.kill_broker(p.leader_id)
    assert parked.result is not None and parked.result["error_code"] == ErrorCode.NOT_COORDINATOR
    g = c.groups.group("g")
    assert g is not None and g.state == GroupState.STABLE and len(g.members) == 1


def test_every_partition_loads_back_the_state_the_coordinators_held() -> None:
    """load_all (a restored cluster's start): the groups, offsets and staged offsets come back from the logs."""
    c = make()
    member = join_and_sync(c, "g")
    commit(c, "simple", {("t", 1): 6})
    c.groups.txn_commit("simple", 5, -1, "", None, {("t", 0): (2, -1, None)}, 0)
    assert hb(c, "m1", 0)["error_code"] == ErrorCode.NONE
    before = (c.groups.fetch_offsets("simple", None), c.groups.group("simple").pending_txn_offsets,
              c.consumer_groups.groups["cg"].group_epoch)
    c.groups.groups.clear()
    c.consumer_groups.groups.clear()
    c.offsets_topic.load_all()
    assert (c.groups.fetch_offsets("simple", None), c.groups.group("simple").pending_txn_offsets,
            c.consumer_groups.groups["cg"].group_epoch) == before
    g = c.groups.group("g")
    assert g is not None and list(g.members) == [member] and g.state == GroupState.STABLE
    assert c.consumer_groups.groups["cg"].members["m1"].assigned == {c.topics["t"].topic_id: frozenset({0, 1})}


def test_a_static_member_back_under_a_new_id_is_recorded() -> None:
    c = make()
    p = offsets_partition(c, "g")
    kw: dict[str, Any] = dict(group_id="g", group_instance_id="i-1", require_known_member_id=True,
                              client_id="client", client_host="/127.0.0.1", rebalance_timeout_ms=30_000,
                              session_timeout_ms=SESSION, protocol_type="consumer",
                              protocols=[("range", b"sub")], version=9)
    joined = c.groups.join(member_id="", **kw)
    assert isinstance(joined, Pending) and joined.result is not None
    first = joined.result["member_id"]
    assert c.groups.sync("g", 1, first, "i-1", {first: b"a"})["error_code"] == ErrorCode.NONE
    back = c.groups.join(member_id="", **kw)  # restarted: no rebalance, a new member id
    assert isinstance(back, dict) and back["member_id"] != first
    last = records(p)[-1][3]
    assert (last.generation, [(m.member_id, m.group_instance_id, m.assignment) for m in last.members]) == \
        (1, [(back["member_id"], "i-1", b"a")])


def test_assignment_epochs_say_when_each_partition_came() -> None:
    """The current assignment's AssignmentEpochs, as Kafka 4.4 writes them: a partition a member keeps across
    epochs keeps the epoch it came at; one handed over comes at its new owner's epoch."""
    c = make()
    p = offsets_partition(c, "cg")
    tid = c.topics["t"].topic_id
    assert hb(c, "m1", 0)["member_epoch"] == 2
    assert hb(c, "m2", 0)["member_epoch"] == 3
    g = c.consumer_groups.groups["cg"]
    for _ in range(4):  # m1 revokes one partition and moves to epoch 3; m2 then gets it
        for mid in ("m1", "m2"):
            m = g.members[mid]
            hb(c, mid, m.member_epoch, [(t, sorted(ps)) for t, ps in m.assigned.items()])  # revoked: no longer owned
    m1, m2 = g.members["m1"], g.members["m2"]
    assert (m1.member_epoch, m2.member_epoch, len(m1.assigned[tid]), len(m2.assigned[tid])) == (3, 3, 1, 1)
    latest = {k.member_id: v for t, k, _, v in records(p) if t == 8 and v is not None}
    assert [(a.partitions, a.assignment_epochs) for a in latest["m1"].assigned_partitions] == \
        [(sorted(m1.assigned[tid]), [2])]
    assert [(a.partitions, a.assignment_epochs) for a in latest["m2"].assigned_partitions] == \
        [(sorted(m2.assigned[tid]), [3])]


def streams_hb(c: ClusterState, member: str, epoch: int, **kw: Any) -> dict[str, Any]:
    if epoch == 0:
        kw.update(topology=Topology(1, (
            Subtopology("0", source_topics=("t",), repartition_sink_topics=("app-rep",)),
            Subtopology("1", state_changelog_topics=(InternalTopic("app-store-changelog", configs=(("a", "b"),)),),
                        repartition_source_topics=(InternalTopic("app-rep"),)))),
                  active={}, standby={}, warmup={}, rebalance_timeout_ms=30_000, instance_id=f"i-{member}",
                  user_endpoint=("localhost", 8080), client_tags={"zone": "z1"})
    return c.streams_groups.heartbeat(StreamsHeartbeat("sg", member, epoch, process_id=f"p-{member}",
                                                       client_id="cid", client_host="/127.0.0.1", **kw))


def test_streams_group_records_follow_the_group_and_load_back() -> None:
    c = make()
    c.config.group_streams_initial_rebalance_delay_ms = 0
    c.streams_groups.config.initial_rebalance_delay_ms = 0
    c.create_topic("app-rep", 2, 1)
    c.create_topic("app-store-changelog", 2, 1)
    p = offsets_partition(c, "sg")
    r = streams_hb(c, "m1", 0)
    assert r["error_code"] == ErrorCode.NONE and r["member_epoch"] == 2
    assert [t for t, *_ in records(p)] == [19, 23, 17, 21, 20, 22]  # Kafka's order within the heartbeat's batch
    by_type = {t: (k, v) for t, k, _, v in records(p)}
    member = by_type[19][1]
    assert (member.instance_id, member.client_id, member.process_id, member.user_endpoint.port,
            [(t.key, t.value) for t in member.client_tags], member.topology_epoch) == \
        ("i-m1", "cid", "p-m1", 8080, [("zone", "z1")], 1)
    topology = by_type[23][1]
    assert (topology.epoch, [s.subtopology_id for s in topology.subtopologies],
            topology.subtopologies[1].state_changelog_topics[0].topic_configs[0].value) == (1, ["0", "1"], "b")
    assert (by_type[17][1].epoch, by_type[17][1].validated_topology_epoch, by_type[20][1].assignment_epoch) == \
        (2, 1, 2)
    current = by_type[22][1]
    assert (current.member_epoch, [(a.subtopology_id, a.partitions) for a in current.active_tasks]) == \
        (2, [("0", [0, 1]), ("1", [0, 1])])
    assert [a.assignment_epochs for a in current.active_tasks] == [[2, 2], [2, 2]]  # came at target epoch 2
    n = len(records(p))
    owned = {"0": frozenset({0, 1}), "1": frozenset({0, 1})}
    assert streams_hb(c, "m1", 2, active=owned, standby={}, warmup={})["error_code"] == ErrorCode.NONE
    assert len(records(p)) == n  # nothing changed: nothing written
    c.clock.advance(c.streams_groups.config.assignment_interval_ms)
    r = streams_hb(c, "m2", 0)
    assert [t for t, *_ in records(p)[n:]] == [19, 17, 21, 21, 20, 22]  # m2 joins: a new target for both
    before = c.streams_groups.groups["sg"]
    c.streams_groups.groups.clear()
    c.offsets_topic.load(p)  # a new coordinator's load rebuilds the same group
    g = c.streams_groups.groups["sg"]
    assert (g.group_epoch, g.assignment_epoch, g.topology, g.target, g.static_members, g.state) == \
        (before.group_epoch, before.assignment_epoch, before.topology, before.target, before.static_members,
         before.state)
    for mid, m in before.members.items():
        loaded = g.members[mid]
        assert (loaded.member_epoch, loaded.state, loaded.assigned, loaded.pending_revocation, loaded.process_id,
                loaded.user_endpoint, loaded.client_tags, loaded.instance_id, loaded.active_epochs) == \
            (m.member_epoch, m.state, m.assigned, m.pending_revocation, m.process_id, m.user_endpoint,
             m.client_tags, m.instance_id, m.active_epochs)
    assert set(g.members["m1"].active_epochs.values()) == {2}  # kept (or being revoked) since epoch 2
    n = len(records(p))
    assert streams_hb(c, "m2", r["member_epoch"], active={}, standby={}, warmup={})["error_code"] == ErrorCode.NONE
    assert streams_hb(c, "m1", -1)["error_code"] == ErrorCode.NONE
    assert streams_hb(c, "m2", -1)["error_code"] == ErrorCode.NONE
    assert c.streams_groups.delete_group("sg") == ErrorCode.NONE
    tail = records(p)[n:]
    assert [(t, v is None) for t, _, _, v in tail] == [
        (22, False),  # m2 reconciled
        (22, True), (21, True), (19, True), (17, False),  # m1 leaves: its records go, the group epoch moves
        (22, True), (21, True), (19, True), (17, False), (20, False),  # m2 too: the empty target at the epoch
        (20, True), (17, True), (23, True)]  # the group deleted: its own records
    c.offsets_topic.load(p)
    assert "sg" not in c.streams_groups.groups and "sg" not in c.groups.groups


def test_a_streams_members_session_restarts_at_the_load_and_expires_without_heartbeats() -> None:
    c = make()
    p = offsets_partition(c, "sg")
    assert streams_hb(c, "m1", 0)["error_code"] == ErrorCode.NONE
    c.clock.advance(40_000)
    c.streams_groups.groups.clear()
    c.offsets_topic.load_all()
    assert list(c.streams_groups.groups["sg"].members) == ["m1"]
    c.clock.advance(c.streams_groups.config.session_timeout_ms - 1)
    c.tick()
    assert list(c.streams_groups.groups["sg"].members) == ["m1"]  # the session was restarted at the load
    c.clock.advance(1)
    c.tick()
    assert c.streams_groups.groups["sg"].members == {}
    # fenced: as a member leaving (its target, empty while the initial delay ran, was never written, as on Kafka)
    assert [(t, v is None) for t, _, _, v in records(p)][-4:] == [(22, True), (19, True), (17, False), (20, False)]


def _topic_partitions(a: dict[uuid.UUID, frozenset[int]],
                      epochs: dict[tuple[uuid.UUID, int], int] | None = None) -> list[dict[str, Any]]:
    out = []
    for t, ps in sorted(a.items(), key=lambda kv: str(kv[0])):
        if ps:
            out.append({"topic_id": t, "partitions": sorted(ps)})
            if epochs is not None:
                out[-1]["assignment_epochs"] = [epochs[(t, p)] for p in sorted(ps)]
    return out


_ASSIGNMENTS = st.dictionaries(st.uuids(), st.frozensets(st.integers(0, 70_000), max_size=40), max_size=6)


@given(assigned=_ASSIGNMENTS, pending=_ASSIGNMENTS, epoch=st.integers(-2, 2**31 - 1),
       previous=st.integers(-2, 2**31 - 1), state=st.sampled_from([0, 1, 2]), data=st.data())
def test_hand_built_assignment_records_are_the_generated_builders_bytes(
        assigned: dict[uuid.UUID, frozenset[int]], pending: dict[uuid.UUID, frozenset[int]], epoch: int,
        previous: int, state: int, data: st.DataObject) -> None:
    """The current and target assignment values built directly are byte for byte what the generated builders of
    Kafka's schemas make (and read back the same)."""
    from fakekafka.wire.coordinator import consumer_group_current_member_assignment as current
    from fakekafka.wire.coordinator import consumer_group_target_assignment_member as target
    epochs = {(t, p): data.draw(st.integers(-1, 2**31 - 1)) for t, ps in assigned.items() for p in ps}
    built = current_assignment_value(epoch, previous, state, assigned, epochs, pending)
    expected = b"\x00\x00" + current.VALUES[0].build({
        "member_epoch": epoch, "previous_member_epoch": previous, "state": state,
        "assigned_partitions": _topic_partitions(assigned, epochs),
        "partitions_pending_revocation": _topic_partitions(pending)})
    assert built == expected
    assert target_member_value(assigned) == b"\x00\x00" + target.VALUES[0].build(
        {"topic_partitions": _topic_partitions(assigned)})
    parsed = current.VALUES[0].parse(built[2:])
    assert [(t.topic_id, list(t.partitions), list(t.assignment_epochs)) for t in parsed.assigned_partitions] == [
        (t["topic_id"], t["partitions"], t["assignment_epochs"]) for t in _topic_partitions(assigned, epochs)]
