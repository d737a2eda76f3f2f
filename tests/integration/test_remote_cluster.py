"""RemoteCluster, the handle `--fakekafka-bootstrap` and `--kafka-real` give tests, driven over the wire against
the test's own cluster: fakekafka here, Apache Kafka under `pytest --kafka-real` (the kafka-real tier: `-m kafka_real`)
runs this module so too). What it must get right on both: topics usable once created, auto-creation as a
producer would, stored batches as sent, and emptying a cluster between tests without losing a live group."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from confluent_kafka import Consumer
from kafka import KafkaProducer

from fakekafka.model.internal_topics import OFFSETS_TOPIC, partition_for
from fakekafka.testing.client import RemoteCluster, consumer_group_heartbeat
from fakekafka.testing.handle import ClusterHandle
from fakekafka.wire import ErrorCode
from fakekafka.wire.records import Compression, read_header

pytestmark = [pytest.mark.clients, pytest.mark.kafka_real]


@pytest.fixture
def remote(kafka: ClusterHandle) -> Iterator[RemoteCluster]:
    with RemoteCluster(kafka.bootstrap_servers, default_partitions=2) as r:
        yield r


def test_created_topics_are_usable_at_once(remote: RemoteCluster) -> None:
    remote.create_topic("made")  # default_partitions
    assert remote.end_offsets("made") == {0: 0, 1: 0}
    assert remote.produce("made", b"v", partition=1) == (1, 0)
    remote.create_topic("three", 3)
    remote.wait_for_topic("three", 3)
    assert sorted(remote.topics()) == ["made", "three"]
    remote.delete_topic("made")
    assert remote.topics() == ["three"]


def test_produce_creates_a_topic_where_the_cluster_auto_creates(remote: RemoteCluster) -> None:
    assert remote.broker_config("auto.create.topics.enable") == "true"
    assert remote.produce("fresh", b"v", key=b"k") == (0, 0)
    assert [(r.offset, r.key, r.value) for r in remote.records("fresh")] == [(0, b"k", b"v")]


@pytest.mark.fakekafka(auto_create_topics=False)
def test_produce_to_a_missing_topic_fails_where_it_does_not(remote: RemoteCluster) -> None:
    assert remote.broker_config("auto.create.topics.enable") == "false"
    with pytest.raises(Exception, match="UNKNOWN_TOPIC_OR_PARTITION"):
        remote.produce("missing", b"v")
    assert remote.topics() == []


def test_batches_are_what_the_producer_sent(remote: RemoteCluster) -> None:
    remote.create_topic("z", 1)
    producer = KafkaProducer(bootstrap_servers=remote.bootstrap_servers, compression_type="gzip", linger_ms=1000)
    for i in range(3):
        producer.send("z", b"fakekafka " * 50 + bytes([i]))
    producer.flush()
    producer.close()
    remote.produce("z", b"plain")
    assert [read_header(b).compression for b in remote.batches("z")] == [Compression.GZIP, Compression.NONE]
    assert [r.offset for r in remote.records("z")] == [0, 1, 2, 3]


def _consumed(consumer: Consumer) -> bool:
    m = consumer.poll(1)
    assert m is None or m.error() is None, m.error()
    return m is not None


def test_clear_empties_the_cluster_but_a_live_group(request: pytest.FixtureRequest, remote: RemoteCluster) -> None:
    if request.config.getoption("--fakekafka-bootstrap"):
        pytest.skip("clear() deletes every topic and group: not on a cluster named by --fakekafka-bootstrap")
    remote.produce("a", b"1")
    remote.produce("b", b"2")
    consumers = {}
    for group in ("done", "live"):
        # confluent-kafka, whose consumer never asks the broker to create a topic (allow.auto.create.topics is false
        # by default): the live consumer's metadata refresh after the delete must not create "a" again, and
        # kafka-python 3.0 leaves its allow_auto_create_topics=False out of the consumer's metadata requests; no
        # auto-commit: closing would commit for a topic clear() deleted
        c = consumers[group] = Consumer({"bootstrap.servers": remote.bootstrap_servers, "group.id": group,
                                         "auto.offset.reset": "earliest", "enable.auto.commit": False})
        c.subscribe(["a"])
        remote.wait_until(lambda c=c: _consumed(c), message=f"group {group} consuming")  # long: see the README
        c.commit(asynchronous=False)
    consumers["done"].close()
    try:
        assert remote.clear() == ["live"]
        assert remote.topics() == [] and remote.groups() == ["live"]
        assert remote.committed("done") == {}
    finally:
        consumers["live"].close()
    assert remote.clear() == [] and remote.groups() == []


def _first_assignment(remote: RemoteCluster, group: str, topic: str) -> list[list[int]]:
    """What a KIP-848 member's first heartbeat into `group` is given; it then leaves."""
    def heartbeat(member_id: str, epoch: int) -> Any:
        r = consumer_group_heartbeat(remote._coordinator(group), group, topic, member_id, epoch, version=1)
        assert r.error_code == ErrorCode.NONE, r
        return r

    r = heartbeat(str(uuid.uuid4()), 0)
    heartbeat(r.member_id, -1)
    return [sorted(tp.partitions) for tp in r.assignment.topic_partitions]


def test_a_kip848_member_is_given_a_new_topic_once_its_group_coordinator_knows_it(
        kafka: ClusterHandle, remote: RemoteCluster) -> None:
    """Kafka's group coordinator learns of a topic a moment after the brokers' metadata lists it, and a member that
    joins in between is given nothing: after the wait, a member's first heartbeat is given every partition, and the
    probe group the wait used is left empty. The test's own handle has the wait too (at once on fakekafka)."""
    remote.create_topic("fresh", 3)
    kafka.wait_for_topic_at_group_coordinator("g", "fresh")
    remote.wait_for_topic_at_group_coordinator("g", "fresh")
    assert _first_assignment(remote, "g", "fresh") == [[0, 1, 2]]
    probes = [g for g in remote.groups() if g.startswith("fakekafka-probe-")]
    assert probes and all(remote.consumer_group(g).members == [] for g in probes)


@pytest.mark.fakekafka(brokers=3)
def test_the_coordinator_wait_follows_the_groups_partition_when_its_leader_moves(
        remote: RemoteCluster, monkeypatch: pytest.MonkeyPatch) -> None:
    """The group's __consumer_offsets partition changes leader just after the wait first looked its coordinator
    up (a broker restarted by an earlier test, then preferred leaders elected): the probe follows that partition
    to its new coordinator, where the group's members will go too."""
    remote.create_topic("fresh", 3, replication_factor=3)
    remote._coordinator("g")  # __consumer_offsets is made at the first lookup
    shards = len(remote.wait_until(lambda: remote._present(OFFSETS_TOPIC), message=OFFSETS_TOPIC).partitions)
    shard = partition_for("g", shards)
    state = remote.partition_state(OFFSETS_TOPIC, shard)
    successor = next(r for r in state["isr"] if r != state["leader"])
    found = remote._coordinator
    lookups: list[str] = []

    def finding(group_id: str) -> Any:
        coordinator = found(group_id)
        lookups.append(group_id)
        if len(lookups) == 1:
            remote.move_leader(OFFSETS_TOPIC, shard, successor)
        return coordinator

    monkeypatch.setattr(remote, "_coordinator", finding)
    remote.wait_for_topic_at_group_coordinator("g", "fresh")
    assert lookups[0] == "g" and len(lookups) > 1
    monkeypatch.undo()
    assert _first_assignment(remote, "g", "fresh") == [[0, 1, 2]]


@pytest.mark.fakekafka(brokers=3)
def test_move_leader_is_an_operators_reassignment_and_election(remote: RemoteCluster) -> None:
    """On Kafka the leader moves only through the Admin API (a reassignment putting the replica first, then a
    preferred election): the handle does that, and every broker names the new leader when it returns."""
    remote.create_topic("moved", 1, replication_factor=3)
    state = remote.partition_state("moved", 0)
    assert sorted(state["replicas"]) == sorted(state["isr"]) and len(state["replicas"]) == 3
    successor = next(r for r in state["isr"] if r != state["leader"])
    remote.move_leader("moved", 0, successor)
    moved = remote.partition_state("moved", 0)
    assert (moved["leader"], moved["replicas"][0]) == (successor, successor)
    assert moved["leader_epoch"] > state["leader_epoch"]
    remote.move_leader("moved", 0, successor)  # already leading: nothing to elect
    assert remote.produce("moved", b"v") == (0, 0)  # written through the new leader
    assert [r.value for r in remote.records("moved")] == [b"v"]
