"""Replicas, ISR, high watermark, leader election and the controller, on a manual clock."""

from __future__ import annotations

import pytest

from fakekafka.model.clock import ManualClock
from fakekafka.model.cluster import ClusterState
from fakekafka.model.config import BrokerConfig
from fakekafka.model.errors import ApiError
from fakekafka.model.metadata import Broker, Partition
from fakekafka.wire import ErrorCode
from fakekafka.wire.records import build_batch, decode_batch


def make(lag_ms: int = 0, replica_lag_max: int = 30_000) -> ClusterState:
    return ClusterState(BrokerConfig(replication_lag_ms=lag_ms, replica_lag_time_max_ms=replica_lag_max),
                        ManualClock(0), [Broker(i, "127.0.0.1", 9000 + i) for i in (1, 2, 3)])


def produce(cluster: ClusterState, p: Partition, value: bytes = b"v", n: int = 1, acks: int = -1) -> int:
    r = cluster.append(p, build_batch([{"value": value}] * n), acks)
    assert r.error == ErrorCode.NONE, r
    return r.base_offset


def values(p: Partition, replica: int) -> list[bytes | None]:
    return [r.value for b in p.logs[replica].batches for r in decode_batch(b).records]


def test_followers_copy_the_leaders_batches_and_the_hw_follows_the_isr() -> None:
    c = make()
    p = c.create_topic("t", 1, 3).partitions[0]
    assert (p.replicas, p.isr, p.leader_id) == ([1, 2, 3], [1, 2, 3], 1)
    produce(c, p, b"a", 2)
    assert all(p.logs[r].log_end_offset == 2 for r in (1, 2, 3))
    assert p.log.high_watermark == 2
    assert p.logs[2].batches[0] is p.log.batches[0]  # the same stored bytes, not a copy


def test_a_lagging_follower_holds_the_hw_back_then_leaves_the_isr() -> None:
    c = make(replica_lag_max=10_000)
    p = c.create_topic("t", 1, 3).partitions[0]
    p.paused.add(3)
    produce(c, p, b"a")
    assert (p.log.log_end_offset, p.log.high_watermark) == (1, 0)  # consumers cannot see it yet
    c.clock.advance(10_000)
    c.tick()
    assert p.isr == [1, 2, 3]
    c.clock.advance(1)
    c.tick()
    assert p.isr == [1, 2] and p.log.high_watermark == 1
    assert [e.kind for e in c.events] == ["isr_shrink"]
    p.paused.discard(3)
    c.tick()
    assert p.isr == [1, 2, 3] and values(p, 3) == [b"a"]
    assert [e.kind for e in c.events] == ["isr_shrink", "isr_expand"]


def test_a_follower_left_behind_stays_out_of_the_isr_once_shrunk() -> None:
    """A follower that fetches but cannot catch up (here slower than replica.lag.time.max.ms; a follower whose
    writes fail is another) leaves the ISR and stays out: the high watermark moves past it as it leaves, as in
    Kafka's maybeShrinkIsr, so it is not taken straight back in below it (the ISR flapped every tick)."""
    c = make(lag_ms=60_000, replica_lag_max=1_000)
    p = c.create_topic("t", 1, 2).partitions[0]
    produce(c, p, b"a", acks=1)
    c.clock.advance(1_001)
    c.tick()
    c.tick()
    assert p.isr == [1] and p.log.high_watermark == 1
    assert [e.kind for e in c.events] == ["isr_shrink"]


def test_replication_lag_follows_the_clock() -> None:
    c = make(lag_ms=500)
    p = c.create_topic("t", 1, 2).partitions[0]
    produce(c, p)
    assert p.logs[2].log_end_offset == 0 and p.log.high_watermark == 0
    assert c.next_deadline() == 500
    c.clock.advance(499)
    c.tick()
    assert p.log.high_watermark == 0
    c.clock.advance(1)
    c.tick()
    assert p.logs[2].log_end_offset == 1 and p.log.high_watermark == 1


def test_min_insync_replicas() -> None:
    c = make()
    t = c.create_topic("t", 1, 3, configs={"min.insync.replicas": "2"})
    p = t.partitions[0]
    c.kill_broker(2)
    produce(c, p)  # ISR [1, 3]: enough
    c.kill_broker(3)
    assert c.append(p, build_batch([{"value": b"x"}]), -1).error == ErrorCode.NOT_ENOUGH_REPLICAS
    assert c.append(p, build_batch([{"value": b"x"}]), 1).error == ErrorCode.NONE


def test_clean_election_on_leader_death_bumps_the_epoch() -> None:
    c = make()
    p = c.create_topic("t", 1, 3).partitions[0]
    produce(c, p, b"a")
    c.kill_broker(1)
    assert (p.leader_id, p.leader_epoch, p.isr) == (2, 1, [2, 3])
    assert c.controller_id == 2 and c.controller_epoch == 2
    produce(c, p, b"b")
    assert values(p, 2) == values(p, 3) == [b"a", b"b"]
    assert p.log.end_offset_for_epoch(0) == (0, 1)
    kinds = [e.kind for e in c.events]
    assert kinds == ["broker_killed", "controller_elected", "isr_shrink", "leader_elected"]  # Kafka: ISR first
    assert c.events[2].details == {"topic": "t", "partition": 0, "replica": 1, "isr": [2, 3]}


def test_restarted_broker_truncates_what_it_alone_had_and_rejoins() -> None:
    c = make()
    p = c.create_topic("t", 1, 3).partitions[0]
    produce(c, p, b"a")
    p.paused.update({2, 3})
    produce(c, p, b"lost", acks=1)  # only the leader has it: not committed
    assert p.log.high_watermark == 1
    c.kill_broker(1)
    p.paused.clear()
    assert p.leader_id == 2 and p.log.log_end_offset == 1
    produce(c, p, b"b")
    c.restart_broker(1)
    assert values(p, 1) == values(p, 2) == [b"a", b"b"]  # b"lost" was truncated away
    assert p.isr == [1, 2, 3]


def test_unclean_election_only_when_enabled_and_it_loses_data() -> None:
    for enabled in (False, True):
        c = make(replica_lag_max=1000)
        p = c.create_topic("t", 1, 2, configs={"unclean.leader.election.enable": str(enabled).lower()}).partitions[0]
        p.paused.add(2)
        produce(c, p, b"only-on-1", acks=1)
        c.clock.advance(1001)
        c.tick()
        assert p.isr == [1]
        c.kill_broker(1)
        if not enabled:
            assert (p.leader_id, p.isr) == (-1, [1])
            c.restart_broker(1)
            assert p.leader_id == 1 and values(p, 1) == [b"only-on-1"]
        else:
            assert (p.leader_id, p.isr) == (2, [2])
            assert any(e.kind == "leader_elected" and e.details["unclean"] for e in c.events)
            c.restart_broker(1)
            assert values(p, 1) == [] and sorted(p.isr) == [1, 2]


def test_offline_partition_and_coordinator() -> None:
    c = make()
    p = c.create_topic("t", 1, 1).partitions[0]
    c.kill_broker(p.leader_id)
    assert not p.online
    c.restart_broker(p.replicas[0])
    assert p.online


def test_move_leader_and_preferred_election() -> None:
    c = make()
    p = c.create_topic("t", 1, 3).partitions[0]
    c.move_leader("t", 0, 3)
    assert (p.leader_id, p.leader_epoch) == (3, 1)
    with pytest.raises(ApiError):
        c.move_leader("t", 0, 9)
    assert c.elect_preferred_leaders() == 1
    assert (p.leader_id, p.leader_epoch) == (1, 2)


def test_replicas_are_placed_on_live_brokers_only() -> None:
    c = make()
    c.kill_broker(3)
    t = c.create_topic("t", 4, 2)
    assert all(3 not in p.replicas for p in t.partitions)
    with pytest.raises(ApiError) as e:
        c.create_topic("u", 1, 3)
    assert e.value.code == ErrorCode.INVALID_REPLICATION_FACTOR


def test_reassignment_adds_catches_up_then_removes() -> None:
    c = make()
    p = c.create_topic("t", assignments={0: [1, 2]}).partitions[0]
    produce(c, p, b"a")
    p.paused.add(3)  # the new replica cannot fetch yet
    c.reassign_partition("t", 0, [2, 3])
    assert (p.adding, p.removing, p.replicas) == ([3], [1], [2, 3, 1])
    assert p.leader_id == 1 and p.isr == [1, 2]
    p.paused.clear()
    c.tick()
    assert (p.replicas, p.adding, p.removing) == ([2, 3], [], [])
    assert p.leader_id == 2 and values(p, 3) == [b"a"] and 1 not in p.logs
    assert [e.kind for e in c.events if e.kind.startswith("reassignment")] == [
        "reassignment_started", "reassignment_completed"]
    with pytest.raises(ApiError) as e:
        c.reassign_partition("t", 0, None)
    assert e.value.code == ErrorCode.NO_REASSIGNMENT_IN_PROGRESS
    with pytest.raises(ApiError) as e:
        c.reassign_partition("t", 0, [1, 1])
    assert e.value.code == ErrorCode.INVALID_REPLICA_ASSIGNMENT


def test_reassignment_may_forbid_a_new_replica_count() -> None:
    c = make()
    p = c.create_topic("t", assignments={0: [1, 2]}).partitions[0]
    with pytest.raises(ApiError) as e:
        c.reassign_partition("t", 0, [1, 2, 3], allow_rf_change=False)
    assert e.value.code == ErrorCode.INVALID_REPLICATION_FACTOR and p.replicas == [1, 2]
    with pytest.raises(ApiError) as e:  # the list is checked first
        c.reassign_partition("t", 0, [1, 9], allow_rf_change=False)
    assert e.value.code == ErrorCode.INVALID_REPLICA_ASSIGNMENT
    c.reassign_partition("t", 0, [2, 3], allow_rf_change=False)
    assert [r for r in p.replicas if r not in p.removing] == [2, 3]


def test_reassignment_can_be_cancelled() -> None:
    c = make()
    p = c.create_topic("t", assignments={0: [1, 2]}).partitions[0]
    produce(c, p, b"a")
    p.paused.add(3)
    c.reassign_partition("t", 0, [2, 3])
    c.reassign_partition("t", 0, None)
    assert (p.replicas, p.adding, p.removing, p.leader_id) == ([1, 2], [], [], 1)


def test_preferred_and_unclean_elections_with_kafkas_errors() -> None:
    c = make()
    p = c.create_topic("t", 1, 2).partitions[0]
    with pytest.raises(ApiError) as e:
        c.elect_preferred_leader("t", 0)
    assert e.value.code == ErrorCode.ELECTION_NOT_NEEDED
    c.move_leader("t", 0, p.replicas[1])
    c.elect_preferred_leader("t", 0)
    assert p.leader_id == p.replicas[0]
    with pytest.raises(ApiError) as e:
        c.elect_unclean("t", 0)
    assert e.value.code == ErrorCode.ELECTION_NOT_NEEDED


def test_a_new_leader_knows_the_producer_sequences_of_its_own_log_only() -> None:
    """An idempotent batch that only the old leader had (not yet committed) is appended again when the
    producer retries it on the new leader, not answered as a duplicate of an offset the new log lacks;
    a batch the new leader holds is still recognised."""
    c = make()
    p = c.create_topic("t", 1, 3).partitions[0]

    def batch(seq: int) -> bytes:
        return build_batch([{"value": b"s%d" % seq}], producer_id=7, producer_epoch=0, base_sequence=seq)

    assert c.append(p, batch(0), -1).base_offset == 0
    p.paused.add(2)  # the successor misses seq 1
    assert c.append(p, batch(1), -1).base_offset == 1
    c.kill_broker(1)
    assert (p.leader_id, p.log.log_end_offset) == (2, 1)
    assert c.append(p, batch(0), -1).base_offset == 0  # a duplicate the new leader holds
    assert c.append(p, batch(1), -1).base_offset == 1  # appended, not "duplicate of offset 1"
    assert values(p, 2) == [b"s0", b"s1"] and p.log.log_end_offset == 2


def test_forced_isr_shrink_and_expand() -> None:
    c = make()
    p = c.create_topic("t", 1, 3).partitions[0]
    c.shrink_isr("t", 0, 3)
    assert p.isr == [1, 2]
    produce(c, p, b"a")
    assert p.logs[3].log_end_offset == 0 and p.log.high_watermark == 1  # the HW no longer waits for 3
    with pytest.raises(ApiError):
        c.shrink_isr("t", 0, p.leader_id)
    c.expand_isr("t", 0, 3)
    assert p.isr == [1, 2, 3] and values(p, 3) == [b"a"]
    assert [e.kind for e in c.events] == ["isr_shrink", "isr_expand"]


def test_controlled_shutdown_moves_leadership_first() -> None:
    c = make()
    p = c.create_topic("t", 1, 3).partitions[0]
    c.stop_broker(1)
    assert (p.leader_id, p.leader_epoch, p.isr) == (2, 1, [2, 3])
    assert [e.kind for e in c.events][:2] == ["leader_elected", "broker_killed"]


def test_idle_ticks_visit_no_partition_and_a_broker_cut_off_still_leaves_the_isrs(monkeypatch) -> None:
    """The tick visits only partitions with work: with every follower caught up, none, however many there are
    (it visited every replicated partition ten times a second). Followers caught up stay in the ISR as time
    passes; one cut off leaves every ISR replica.lag.time.max.ms after it was cut off."""
    c = make(replica_lag_max=10_000)
    partitions = [p for i in range(40) for p in c.create_topic(f"t{i}", 2, 3).partitions]
    for p in partitions:
        produce(c, p)
    c.tick()
    visited: list[Partition] = []
    replicate = c.replication.replicate
    monkeypatch.setattr(c.replication, "replicate", lambda p: (visited.append(p), replicate(p))[1])
    for _ in range(30):
        c.clock.advance(1000)
        c.tick()
    assert visited == []
    assert all(sorted(p.isr) == [1, 2, 3] for p in partitions)
    c.brokers[3].isolated = True  # as isolate_broker does
    c.event("broker_isolated", broker=3)
    c.clock.advance(10_000)
    c.tick()
    assert all(sorted(p.isr) == [1, 2, 3] for p in partitions)
    c.clock.advance(1)
    c.tick()
    # cut off, 3 leaves the others' ISRs, and its own partitions' followers leave theirs
    assert all(sorted(p.isr) == ([3] if p.leader_id == 3 else [1, 2]) for p in partitions)
