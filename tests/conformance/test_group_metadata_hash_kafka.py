"""Two brokers in two racks, on Apache Kafka 4.4.0 and on fakekafka: a consumer group's metadata hash covers its
topics' replicas' racks, a follower answers a consumer's Fetch from v11, and a target assignment deferred by
`consumer.assignment.interval.ms` is computed by the first heartbeat after it, not by a timer.

Two brokers in two racks (`broker.rack` a and b; fakekafka's `racks=["a", "b"]`), a two-partition topic on broker 1,
one KIP-848 member (raw ConsumerGroupHeartbeats) holding both partitions; then a partition moves to broker 2
(AlterPartitionReassignments) and the member heartbeats once more. Kafka's coordinator finds a new metadata hash
(the partition's rack changed) and bumps the group epoch; so must fakekafka (ConsumerGroupDescribe's group epoch,
on both brokers).
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Iterator
from typing import Any

import pytest

import fakekafka
from fakekafka.testing.apache_kafka import KafkaCluster, KafkaUnavailable, kafka_lib
from fakekafka.testing.client import RemoteCluster, consumer_group_heartbeat
from fakekafka.wire import ApiKey, ErrorCode
from fakekafka.wire.records import build_batch, decode_batch, iter_batches
from tests.rawclient import RawClient

TOPIC, GROUP = "racked", "racked-g"


def _until(what: str, attempt: Callable[[], Any], timeout: float = 30.0) -> Any:
    deadline = time.monotonic() + timeout
    while not (got := attempt()):
        assert time.monotonic() < deadline, f"{what}: not within {timeout} s"
        time.sleep(0.1)
    return got


def _steps(bootstrap: str) -> list[tuple[str, int]]:
    """(step, group epoch) as the group lives through the partition's move to the other rack."""
    raw = RawClient(bootstrap.split(",")[0], timeout=30)
    try:
        created = raw.request(
            ApiKey.CREATE_TOPICS,
            7,
            {
                "topics": [
                    {
                        "name": TOPIC,
                        "num_partitions": -1,
                        "replication_factor": -1,
                        "configs": [],
                        "assignments": [{"partition_index": p, "broker_ids": [1]} for p in (0, 1)],
                    }
                ],
                "timeout_ms": 30_000,
                "validate_only": False,
            },
        )
        assert created.topics[0].error_code == ErrorCode.NONE, created.topics[0]

        def replicas(client: RawClient = raw) -> list[list[int]] | None:
            md = client.request(ApiKey.METADATA, 12, {"topics": [{"name": TOPIC}], "allow_auto_topic_creation": False})
            t = md.topics[0]
            if t.error_code != ErrorCode.NONE or len(t.partitions) != 2:
                return None
            return [list(p.replica_nodes) for p in sorted(t.partitions, key=lambda p: p.partition_index)]

        _until("the topic's metadata", replicas)

        def coordinator() -> str | None:
            r = raw.request(ApiKey.FIND_COORDINATOR, 4, {"key_type": 0, "coordinator_keys": [GROUP]})
            c = r.coordinators[0]
            return f"{c.host}:{c.port}" if c.error_code == ErrorCode.NONE else None

        group_raw = [RawClient(_until("the group's coordinator", coordinator), timeout=30)]

        def rediscover() -> None:  # NOT_COORDINATOR: find it again, as clients do
            group_raw[0].close()
            group_raw[0] = RawClient(_until("the group's coordinator", coordinator), timeout=30)

        try:
            return _group_steps(raw, lambda: group_raw[0], rediscover, replicas)
        finally:
            group_raw[0].close()
    finally:
        raw.close()


def _group_steps(raw: RawClient, coordinator: Callable[[], RawClient], rediscover: Callable[[], None],
                 replicas: Callable[[], Any]) -> list[tuple[str, int]]:
    member_id, epoch, owned = str(uuid.uuid4()), 0, []

    def heartbeat() -> bool:
        """One heartbeat; False while the coordinator still loads its partition of __consumer_offsets or has moved
        (retried, as clients do: on a two-broker Kafka just started, FindCoordinator may name a coordinator before it
        has loaded, or one that has since lost the partition)."""
        nonlocal epoch, owned
        r = consumer_group_heartbeat(coordinator(), GROUP, TOPIC, member_id, epoch, 1, rebalance_timeout_ms=30_000,
                                     subscribed_topic_names=[TOPIC], topic_partitions=owned)
        if r.error_code in (ErrorCode.COORDINATOR_LOAD_IN_PROGRESS, ErrorCode.COORDINATOR_NOT_AVAILABLE):
            return False
        if r.error_code == ErrorCode.NOT_COORDINATOR:
            rediscover()
            return False
        assert r.error_code == ErrorCode.NONE, r
        epoch = r.member_epoch
        if r.assignment is not None:
            owned = [
                {"topic_id": tp.topic_id, "partitions": list(tp.partitions)} for tp in r.assignment.topic_partitions
            ]
        return True

    def group_epoch() -> int:
        d = coordinator().request(
            ApiKey.CONSUMER_GROUP_DESCRIBE, 0, {"group_ids": [GROUP], "include_authorized_operations": False}
        )
        return int(d.groups[0].group_epoch)

    def stable() -> bool:
        return heartbeat() and epoch == group_epoch() and sum(len(tp["partitions"]) for tp in owned) == 2

    _until("the member holding both partitions", stable)
    joined = group_epoch()  # 2, or 3 on Kafka when its coordinator learnt of the new topic after the first heartbeat
    moved = raw.request(
        ApiKey.ALTER_PARTITION_REASSIGNMENTS,
        0,
        {"timeout_ms": 30_000, "topics": [{"name": TOPIC, "partitions": [{"partition_index": 0, "replicas": [2]}]}]},
    )
    assert moved.error_code == ErrorCode.NONE and moved.responses[0].partitions[0].error_code == ErrorCode.NONE
    _until("the reassignment done", lambda: replicas() == [[2], [1]])

    def bumped() -> bool:  # Kafka's coordinator finds the new metadata image a moment after its broker has it
        return heartbeat() and group_epoch() > joined

    _until("a new group epoch", bumped)
    _until("the member settled again", stable)
    # one bump or two: Kafka's is two when a heartbeat met the move half done (the partition on both brokers, so in
    # both racks: a hash of its own), and how the heartbeats fall against its metadata images is not the test's
    return [("a partition moved to rack b: bumped", int(group_epoch() > joined))]


@pytest.fixture(scope="module")
def kafka_two_racks() -> Iterator[str]:
    """Two Apache Kafka 4.4.0 nodes in racks a and b, started once for the module; their bootstrap servers."""
    if kafka_lib() is None:
        pytest.skip('Apache Kafka is not installed: run `eval "$(bash .ci/install.sh)"`')
    kafka = KafkaCluster(brokers=2, node_configs={1: {"broker.rack": "a"}, 2: {"broker.rack": "b"}})
    try:
        kafka.start()
        yield kafka.bootstrap_servers
    except KafkaUnavailable as e:
        pytest.fail(f"Apache Kafka did not start: {e}")
    finally:
        kafka.stop()


def test_a_partition_moved_to_another_rack_bumps_the_group_epoch(kafka_two_racks: str) -> None:
    theirs = _steps(kafka_two_racks)
    with fakekafka.Cluster(brokers=2, racks=["a", "b"]) as fake:
        ours = _steps(fake.bootstrap_servers)
    assert theirs == [("a partition moved to rack b: bumped", 1)]
    assert ours == theirs


def _follower_reads(bootstrap: str) -> list[tuple[str, int, int, int]]:
    """(fetch, error, high watermark, records) for a consumer's Fetch at a partition's leader and at its follower,
    by version: before v11 only the leader answers; from v11 (client metadata, KIP-392) the follower too."""
    raw = RawClient(bootstrap.split(",")[0], timeout=30)
    nodes: dict[int, RawClient] = {}
    try:
        created = raw.request(ApiKey.CREATE_TOPICS, 7, {"topics": [{
            "name": "followed", "num_partitions": -1, "replication_factor": -1, "configs": [],
            "assignments": [{"partition_index": 0, "broker_ids": [1, 2]}]}], "timeout_ms": 30_000,
            "validate_only": False})
        assert created.topics[0].error_code == ErrorCode.NONE, created.topics[0]

        def metadata() -> Any:
            md = raw.request(ApiKey.METADATA, 12, {"topics": [{"name": "followed"}],
                                                   "allow_auto_topic_creation": False})
            p = md.topics[0].partitions
            return md if md.topics[0].error_code == ErrorCode.NONE and p and len(p[0].isr_nodes) == 2 else None

        md = _until("both replicas in sync", metadata)
        nodes = {b.node_id: RawClient(f"{b.host}:{b.port}", timeout=30) for b in md.brokers}
        leader = md.topics[0].partitions[0].leader_id
        epoch = md.topics[0].partitions[0].leader_epoch
        follower = next(n for n in nodes if n != leader)
        produced = nodes[leader].request(ApiKey.PRODUCE, 9, {"transactional_id": None, "acks": -1,
                                                             "timeout_ms": 30_000, "topic_data": [{
            "name": "followed", "partition_data": [
                {"index": 0, "records": build_batch([{"value": b"v%d" % i} for i in range(3)])}]}]})
        assert produced.responses[0].partition_responses[0].error_code == ErrorCode.NONE

        def fetch(node: int, version: int, current_epoch: int = -1) -> Any:
            body = {"replica_id": -1, "max_wait_ms": 0, "min_bytes": 0, "max_bytes": 1 << 20, "isolation_level": 0,
                    "session_id": 0, "session_epoch": -1, "forgotten_topics_data": [], "rack_id": "",
                    "topics": [{"topic": "followed", "partitions": [{
                        "partition": 0, "current_leader_epoch": current_epoch, "fetch_offset": 0,
                        "last_fetched_epoch": -1, "log_start_offset": -1, "partition_max_bytes": 1 << 20}]}]}
            return nodes[node].request(ApiKey.FETCH, version, body).responses[0].partitions[0]

        # the follower learns the high watermark at its next fetch from the leader
        _until("the follower's high watermark", lambda: fetch(follower, 12).high_watermark == 3)
        out = []
        for name, node, version, current in (("leader v10", leader, 10, -1), ("follower v10", follower, 10, -1),
                                              ("follower v11", follower, 11, -1), ("follower v12", follower, 12, -1),
                                              ("follower v12 at its epoch", follower, 12, epoch),
                                              ("follower v12 at a newer epoch", follower, 12, epoch + 1)):
            p = fetch(node, version, current)
            records = sum(1 for _, b in iter_batches(bytes(p.records or b"")) for _ in decode_batch(b).records)
            out.append((name, int(p.error_code), int(p.high_watermark), records))
        return out
    finally:
        for c in nodes.values():
            c.close()
        raw.close()


def test_a_follower_answers_a_consumers_fetch_from_v11(kafka_two_racks: str) -> None:
    theirs = _follower_reads(kafka_two_racks)
    with fakekafka.Cluster(brokers=2, racks=["a", "b"]) as fake:
        ours = _follower_reads(fake.bootstrap_servers)
    none, not_leader, unknown_epoch = int(ErrorCode.NONE), int(ErrorCode.NOT_LEADER_OR_FOLLOWER), \
        int(ErrorCode.UNKNOWN_LEADER_EPOCH)
    assert theirs == [("leader v10", none, 3, 3), ("follower v10", not_leader, -1, 0),
                      ("follower v11", none, 3, 3), ("follower v12", none, 3, 3),
                      ("follower v12 at its epoch", none, 3, 3),
                      ("follower v12 at a newer epoch", unknown_epoch, -1, 0)]
    assert ours == theirs


PACED, PACED_GROUP = "paced", "paced-g"


def _paced_steps(bootstrap: str) -> list[tuple[Any, ...]]:
    """What two KIP-848 members (raw heartbeats) and ConsumerGroupDescribe see in a group whose
    `consumer.assignment.interval.ms` is 3 s: the second member joins within it, the group waits in Assigning, and
    only a heartbeat after the interval computes the new target (Kafka 4.4 has no timer for it)."""
    raw = RawClient(bootstrap.split(",")[0], timeout=30)
    opened: RawClient | None = None  # the coordinator's connection, closed below
    try:
        created = raw.request(ApiKey.CREATE_TOPICS, 7, {"topics": [{
            "name": PACED, "num_partitions": -1, "replication_factor": -1, "configs": [],
            "assignments": [{"partition_index": p, "broker_ids": [1]} for p in range(4)]}],
            "timeout_ms": 30_000, "validate_only": False})
        assert created.topics[0].error_code == ErrorCode.NONE, created.topics[0]
        paced = raw.request(ApiKey.INCREMENTAL_ALTER_CONFIGS, 1, {"validate_only": False, "resources": [{
            "resource_type": 32, "resource_name": PACED_GROUP, "configs": [{
                "name": "consumer.assignment.interval.ms", "config_operation": 0, "value": "3000"}]}]})
        assert paced.responses[0].error_code == ErrorCode.NONE, paced.responses[0]

        def find(group: str) -> str | None:
            r = raw.request(ApiKey.FIND_COORDINATOR, 4, {"key_type": 0, "coordinator_keys": [group]})
            c = r.coordinators[0]
            return f"{c.host}:{c.port}" if c.error_code == ErrorCode.NONE else None

        address = _until("the group's coordinator", lambda: find(PACED_GROUP))
        opened = coordinator = RawClient(address, timeout=30)

        def heartbeat(group: str, member: str, epoch: int, owned: list[dict[str, Any]] | None) -> Any:
            r = consumer_group_heartbeat(coordinator, group, PACED, member, epoch, 1, topic_partitions=owned)
            return None if r.error_code == ErrorCode.COORDINATOR_LOAD_IN_PROGRESS else r

        def held(r: Any) -> list[dict[str, Any]]:
            return [{"topic_id": tp.topic_id, "partitions": list(tp.partitions)}
                    for tp in r.assignment.topic_partitions]

        def count(r: Any) -> int | None:
            """The partitions an answer assigns (None: it carries no assignment)."""
            return None if r.assignment is None else sum(len(tp.partitions) for tp in r.assignment.topic_partitions)

        # first, the topic known to the group coordinator (on Kafka it reaches the coordinator a moment after the
        # brokers' metadata; a join before that is given an empty target)
        with RemoteCluster(bootstrap, timeout=30) as cluster:
            cluster.wait_for_topic_at_group_coordinator(PACED_GROUP, PACED, timeout=30)

        def describe(step: str) -> tuple[str, str, int, int]:
            g = coordinator.request(ApiKey.CONSUMER_GROUP_DESCRIBE, 0,
                                    {"group_ids": [PACED_GROUP], "include_authorized_operations": False}).groups[0]
            return step, g.group_state, int(g.group_epoch), int(g.assignment_epoch)

        def answer(step: str, r: Any) -> tuple[Any, ...]:
            assert r is not None and r.error_code == ErrorCode.NONE, r
            return step, int(r.member_epoch), count(r)

        a, b = str(uuid.uuid4()), str(uuid.uuid4())
        steps: list[tuple[Any, ...]] = []
        ra = heartbeat(PACED_GROUP, a, 0, [])
        joined = time.monotonic()
        steps.append(answer("a joins", ra))
        steps.append(answer("b joins", rb := heartbeat(PACED_GROUP, b, 0, [])))
        steps.append(describe("within the interval"))
        assert time.monotonic() - joined < 2.5, "the steps within the interval took too long to mean anything"
        time.sleep(max(0.0, joined + 3.3 - time.monotonic()))
        steps.append(describe("the interval passed, no heartbeat yet"))
        ra2 = heartbeat(PACED_GROUP, a, int(ra.member_epoch), None)
        steps.append(answer("a's heartbeat computes the target: a keeps", ra2))
        steps.append(answer("a gave up the rest", heartbeat(PACED_GROUP, a, int(ra2.member_epoch), held(ra2))))
        steps.append(answer("b's heartbeat", heartbeat(PACED_GROUP, b, int(rb.member_epoch), None)))
        steps.append(describe("settled"))
        return steps
    finally:
        if opened is not None:
            opened.close()
        raw.close()


def test_a_deferred_target_assignment_waits_for_a_heartbeat(kafka_two_racks: str) -> None:
    theirs = _paced_steps(kafka_two_racks)
    with fakekafka.Cluster(brokers=2, racks=["a", "b"]) as fake:
        ours = _paced_steps(fake.bootstrap_servers)
    assert theirs == [("a joins", 2, 4), ("b joins", 2, 0), ("within the interval", "Assigning", 3, 2),
                      ("the interval passed, no heartbeat yet", "Assigning", 3, 2),
                      ("a's heartbeat computes the target: a keeps", 2, 2), ("a gave up the rest", 3, None),
                      ("b's heartbeat", 3, 2), ("settled", "Stable", 3, 3)]
    assert ours == theirs
