"""`__share_group_state` (fakekafka/model/share_state.py): the ShareSnapshot/ShareUpdate records Kafka 4.4's share
coordinator writes when a share-partition's persisted state changes, and the state loaded back on a leader move
and at start from a data dir."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from fakekafka.model.clock import ManualClock
from fakekafka.model.cluster import ClusterState
from fakekafka.model.config import BrokerConfig
from fakekafka.model.internal_topics import SHARE_STATE_TOPIC, java_string_hash, kafka_abs
from fakekafka.model.metadata import Broker
from fakekafka.model.share import AcknowledgeType, RecordState, SharePartition
from fakekafka.model.share_state import decode_share_record, kafka_uuid
from fakekafka.storage.datadir import DataDir
from fakekafka.wire.records import build_batch, decode_batch

A = AcknowledgeType


def _cluster(brokers: int = 1, **props: str) -> ClusterState:
    config = BrokerConfig.from_properties(props) if props else BrokerConfig()
    state = ClusterState(config, ManualClock(1_000_000),
                         [Broker(i, "127.0.0.1", 9092 + i) for i in range(1, brokers + 1)])
    state.create_topic("t", 1, brokers)
    return state


def _produce(state: ClusterState, n: int) -> None:
    p = state.partition("t", 0)
    assert p is not None
    for _ in range(n):
        state.append(p, build_batch([{"value": b"v", "timestamp": 0}]), acks=-1)


def _share(state: ClusterState, group: str = "g") -> SharePartition:
    state.group_configs.setdefault(group, {})["share.auto.offset.reset"] = "earliest"
    state.share_state_topic()  # as the ShareGroupHeartbeat/ShareFetch handlers create it
    p = state.partition("t", 0)
    assert p is not None
    return state.shares.share_partition(group, "t", 0, p.log.log_start_offset, p.log.high_watermark)


def _acquire(state: ClusterState, sp: SharePartition, member: str, n: int) -> list[dict[str, int]]:
    p = state.partition("t", 0)
    assert p is not None
    _, ranges = sp.acquire(member, lambda o: p.log.read(o, 1 << 20, min_one=True), p.log.high_watermark, n,
                           state.clock.now_ms(), 30_000, 2_000)
    return ranges


def _ack(state: ClusterState, sp: SharePartition, member: str, first: int, last: int, kind: A) -> None:
    """What the ShareAcknowledge handler does: acknowledge, persist, move the SPSO (written with the next write)."""
    assert sp.acknowledge(member, first, last, [kind], state.clock.now_ms(), 30_000, 5).name == "NONE"
    state.share_state.write(sp)
    sp.advance_start(0)


def _records(state: ClusterState) -> list[tuple[str, Any]]:
    """(record type name, value) of every record in `__share_group_state`, in the order written."""
    out: list[tuple[int, str, Any]] = []
    for p in state.topics[SHARE_STATE_TOPIC].partitions:
        for b in p.log.batches:
            for r in decode_batch(bytes(b)).records:
                record_type, _, v = decode_share_record(r.key, r.value)
                out.append((r.timestamp, "snapshot" if record_type == 0 else "update", v))
    return [(kind, v) for _, kind, v in sorted(out, key=lambda x: x[0])]


def _batches(v: Any) -> list[tuple[int, int, int, int]]:
    return [(b.first_offset, b.last_offset, b.delivery_state, b.delivery_count) for b in v.state_batches]


def test_acknowledgements_write_a_snapshot_then_updates_of_the_changed_batches() -> None:
    state = _cluster()
    _produce(state, 4)
    sp = _share(state)
    assert _acquire(state, sp, "m", 4)[0]["last_offset"] == 3
    assert _records(state) == []  # acquisition is not persisted
    _ack(state, sp, "m", 0, 1, A.ACCEPT)
    state.clock.advance(1)  # type: ignore[attr-defined]
    _ack(state, sp, "m", 3, 3, A.RELEASE)
    # the key initialized as Kafka's group coordinator does (no start offset yet), then the leader's updates
    (k1, snap), (k2, upd1), (k3, upd2) = _records(state)
    assert (k1, snap.snapshot_epoch, snap.state_epoch, snap.start_offset, _batches(snap)) == (
        "snapshot", 0, 0, -1, [])
    assert snap.create_timestamp == snap.write_timestamp == 1_000_000
    # written before the SPSO moves past what was acknowledged, as Kafka 4.4 writes it
    assert (k2, upd1.snapshot_epoch, upd1.start_offset, upd1.delivery_complete_count, _batches(upd1)) == (
        "update", 0, 0, 2, [(0, 1, 2, 1)])
    assert (k3, upd2.start_offset, upd2.delivery_complete_count, _batches(upd2)) == ("update", 2, 0, [(3, 3, 0, 1)])
    # nothing persisted changed: nothing written
    state.share_state.write(sp)
    assert len(_records(state)) == 3


def test_the_record_lands_in_the_partition_kafka_hashes_the_key_to() -> None:
    state = _cluster()
    _produce(state, 1)
    sp = _share(state, "my-group")
    _acquire(state, sp, "m", 1)
    _ack(state, sp, "m", 0, 0, A.ACCEPT)
    topic_id = state.topics["t"].topic_id
    expected = kafka_abs(java_string_hash(f"my-group:{kafka_uuid(topic_id)}:0")) % 50
    holding = [p.index for p in state.topics[SHARE_STATE_TOPIC].partitions if p.log.batches]
    assert holding == [expected]
    b = state.topics[SHARE_STATE_TOPIC].partitions[expected].log.batches[0]
    _, key, _ = decode_share_record(decode_batch(bytes(b)).records[0].key, None)
    assert key == ("my-group", topic_id, 0)


def test_a_snapshot_follows_every_records_per_snapshot_updates() -> None:
    state = _cluster(**{"share.coordinator.snapshot.update.records.per.snapshot": "2"})
    _produce(state, 5)
    sp = _share(state)
    _acquire(state, sp, "m", 5)
    for offset in range(5):
        state.clock.advance(1)  # type: ignore[attr-defined]
        _ack(state, sp, "m", offset, offset, A.ACCEPT)
    kinds = [(k, v.snapshot_epoch) for k, v in _records(state)]
    # what came before the new snapshot is pruned, as Kafka's coordinator deletes records no key needs
    assert kinds == [("snapshot", 1), ("update", 1), ("update", 1)]
    assert _records(state)[0][1].start_offset == 2
    held = [p for p in state.topics[SHARE_STATE_TOPIC].partitions if p.log.batches]
    assert [(p.log.log_start_offset, p.log.log_end_offset) for p in held] == [(3, 6)]


def test_a_lock_expiry_and_a_members_leaving_are_written() -> None:
    state = _cluster()
    _produce(state, 2)
    sp = _share(state)
    _acquire(state, sp, "m", 1)
    state.clock.advance(30_000)  # type: ignore[attr-defined]
    state.tick()
    assert sp.state_of(0).state == RecordState.AVAILABLE
    kind, upd = _records(state)[-1]
    assert (kind, _batches(upd)) == ("update", [(0, 0, 0, 1)])


def test_alter_offsets_writes_a_snapshot_with_the_next_state_epoch_and_delete_a_tombstone() -> None:
    state = _cluster()
    _produce(state, 3)
    sp = _share(state)
    _acquire(state, sp, "m", 1)
    _ack(state, sp, "m", 0, 0, A.ACCEPT)
    sp.start_offset = sp.end_offset = 2
    sp.records.clear()
    state.share_state.write(sp, state_epoch_bump=True)
    kind, snap = _records(state)[-1]
    assert (kind, snap.snapshot_epoch, snap.state_epoch, snap.start_offset) == ("snapshot", 1, 1, 2)
    state.share_state.delete_share_partition(sp)
    assert [(k, v and v.snapshot_epoch) for k, v in _records(state)] == [("snapshot", 1), ("snapshot", None)]
    assert state.share_state.keys == {}


def _open(path: Path) -> ClusterState:
    state = ClusterState(BrokerConfig(), ManualClock(1_000_000), [Broker(1, "127.0.0.1", 9092)])
    state.storage = data_dir = DataDir(path, state.config.cluster_id, list(state.brokers))
    data_dir.load(state)
    return state


def test_a_restart_continues_from_the_persisted_start_offset_with_delivery_counts_kept(tmp_path: Path) -> None:
    state = _open(tmp_path)
    state.create_topic("t", 1)
    _produce(state, 6)
    sp = _share(state)
    _acquire(state, sp, "m", 6)
    _ack(state, sp, "m", 0, 1, A.ACCEPT)   # SPSO 2
    _ack(state, sp, "m", 2, 2, A.RELEASE)  # available, delivered once
    _ack(state, sp, "m", 4, 4, A.REJECT)   # archived
    assert _acquire(state, sp, "m", 1) == [{"first_offset": 2, "last_offset": 2, "delivery_count": 2}]
    # at the stop: 2 acquired again (persisted as released), 3 and 5 acquired once (never persisted)
    state.storage.close()  # type: ignore[union-attr]

    again = _open(tmp_path)
    loaded = again.shares.groups["g"].partitions[("t", 0)]
    assert (loaded.start_offset, loaded.end_offset) == (2, 5)
    assert [(o, loaded.state_of(o).state, loaded.state_of(o).delivery_count) for o in range(2, 5)] == [
        (2, RecordState.AVAILABLE, 1), (3, RecordState.AVAILABLE, 0), (4, RecordState.ARCHIVED, 1)]
    # a share consumer after the restart gets what was in flight, with the delivery counts kept, then the rest
    assert _acquire(again, loaded, "m2", 10) == [
        {"first_offset": 2, "last_offset": 2, "delivery_count": 2},
        {"first_offset": 3, "last_offset": 3, "delivery_count": 1},
        {"first_offset": 5, "last_offset": 5, "delivery_count": 1}]
    # and the coordinator goes on with updates to the loaded snapshot
    _ack(again, loaded, "m2", 2, 3, A.ACCEPT)
    kind, upd = _records(again)[-1]
    assert (kind, upd.snapshot_epoch, upd.start_offset, _batches(upd)) == ("update", 0, 2, [(2, 2, 2, 2), (3, 3, 2, 1)])
    again.storage.close()  # type: ignore[union-attr]


def test_a_leader_move_of_the_state_partition_loads_the_coordinators_keys() -> None:
    state = _cluster(brokers=3, **{"share.coordinator.snapshot.update.records.per.snapshot": "1"})
    _produce(state, 3)
    sp = _share(state)
    _acquire(state, sp, "m", 3)
    _ack(state, sp, "m", 0, 0, A.ACCEPT)
    state.clock.advance(1)  # type: ignore[attr-defined]
    _ack(state, sp, "m", 1, 1, A.ACCEPT)
    before = dict(state.share_state.keys)
    state.share_state.keys.clear()  # the new coordinator starts from its replica alone
    key = next(iter(before))
    p = state.topics[SHARE_STATE_TOPIC].partitions[state.share_state.partition_for(*key)]
    old_leader = p.leader_id
    # moved, not killed: a killed broker may lead the topic's partition too, whose share-partitions would then
    # restart from the persisted state and refuse m's acknowledgement below (the next test's subject)
    state.move_leader(SHARE_STATE_TOPIC, p.index, next(r for r in p.isr if r != old_leader))
    assert p.leader_id not in (-1, old_leader)
    assert state.share_state.keys == before
    # the cadence goes on from the loaded count: one update was written, so the next write is a snapshot
    state.clock.advance(1)  # type: ignore[attr-defined]
    _ack(state, sp, "m", 2, 2, A.ACCEPT)
    assert [(k, v.snapshot_epoch) for k, v in _records(state)] == [("snapshot", 1), ("update", 1)]  # the rest pruned


def test_a_leader_move_of_the_topic_partition_starts_its_share_partitions_from_the_persisted_state() -> None:
    state = _cluster(brokers=3)
    _produce(state, 3)
    sp = _share(state)
    _acquire(state, sp, "m", 3)
    _ack(state, sp, "m", 0, 0, A.ACCEPT)
    _ack(state, sp, "m", 1, 1, A.RELEASE)
    p = state.partition("t", 0)
    assert p is not None
    old_leader = p.leader_id
    state.kill_broker(old_leader)
    assert p.leader_id not in (-1, old_leader)
    moved = state.shares.groups["g"].partitions[("t", 0)]
    assert moved is not sp
    # what the old leader's member held is available again; its acknowledgement to the old state fails
    assert [(o, moved.state_of(o).state, moved.state_of(o).delivery_count) for o in range(moved.start_offset, 3)] == [
        (1, RecordState.AVAILABLE, 1), (2, RecordState.AVAILABLE, 0)]
    # (offset 2 was never persisted, so the new leader has nothing in flight past 1: Kafka's "first offset in
    # request is past acquired records")
    assert moved.acknowledge("m", 2, 2, [A.ACCEPT], state.clock.now_ms(), 30_000, 5).name == "INVALID_REQUEST"
    assert moved.acknowledge("m", 1, 1, [A.ACCEPT], state.clock.now_ms(), 30_000, 5).name == "INVALID_RECORD_STATE"
    assert _acquire(state, moved, "m2", 5) == [{"first_offset": 1, "last_offset": 1, "delivery_count": 2},
                                                {"first_offset": 2, "last_offset": 2, "delivery_count": 1}]
