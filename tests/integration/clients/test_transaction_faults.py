"""Transactions under faults a real cluster cannot be made to show on cue: injected coordinator errors, the
transaction coordinator's broker killed mid-commit, a follower holding the high watermark back. The client
(confluent-kafka) retries and the outcome stays exactly once. fakekafka only: these steer the broker.
"""

from __future__ import annotations

import time

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition

import fakekafka

pytestmark = pytest.mark.clients

TIMEOUT = 20.0


def _committed_values(bootstrap: str, topic: str, partitions: int, seconds: float = 2.0) -> list[str]:
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "check", "isolation.level": "read_committed",
                  "enable.auto.commit": False})
    c.assign([TopicPartition(topic, p, 0) for p in range(partitions)])
    got: list[str] = []
    deadline = time.monotonic() + seconds
    try:
        while time.monotonic() < deadline:
            m = c.poll(0.1)
            if m is not None and not m.error():
                got.append(m.value().decode())
    finally:
        c.close()
    return sorted(got)


def _producer(cluster: fakekafka.Cluster, tid: str) -> Producer:
    p = Producer({"bootstrap.servers": cluster.bootstrap_servers, "transactional.id": tid, "linger.ms": 0,
                  "retry.backoff.ms": 20})
    p.init_transactions(TIMEOUT)
    return p


@pytest.mark.parametrize(("api", "error"), [("EndTxn", "COORDINATOR_NOT_AVAILABLE"), ("EndTxn", "NOT_COORDINATOR"),
                                            ("EndTxn", "CONCURRENT_TRANSACTIONS"),
                                            ("AddPartitionsToTxn", "CONCURRENT_TRANSACTIONS"),
                                            ("AddPartitionsToTxn", "COORDINATOR_LOAD_IN_PROGRESS")])
def test_retriable_coordinator_errors_are_retried(api: str, error: str) -> None:
    with fakekafka.Cluster() as cluster:
        cluster.create_topic("t", 2)
        p = _producer(cluster, "retried")
        fault = cluster.inject_error(api, error, count=2)
        p.begin_transaction()
        for i in range(4):
            p.produce("t", f"v{i}".encode(), partition=i % 2)
        p.commit_transaction(TIMEOUT)
        assert fault.fired == 2
        assert _committed_values(cluster.bootstrap_servers, "t", 2) == ["v0", "v1", "v2", "v3"]
        view = cluster.transaction("retried")
        assert view is not None and view.state == "CompleteCommit"


def test_coordinator_broker_killed_before_commit() -> None:
    with fakekafka.Cluster(brokers=3) as cluster:
        cluster.create_topic("t", 3, replication_factor=3)
        p = _producer(cluster, "moving")
        p.begin_transaction()
        for i in range(6):
            p.produce("t", f"v{i}".encode(), partition=i % 3)
        p.flush(TIMEOUT)
        coordinator = cluster.call(lambda: cluster.state.transaction_coordinator_for("moving").node_id)
        cluster.kill_broker(coordinator)
        p.commit_transaction(TIMEOUT)  # finds the new coordinator (and partition leaders) and commits
        moved = cluster.call(lambda: cluster.state.transaction_coordinator_for("moving").node_id)
        assert moved != coordinator
        assert _committed_values(cluster.bootstrap_servers, "t", 3) == [f"v{i}" for i in range(6)]


def test_a_lagging_follower_holds_committed_records_back_until_the_high_watermark_passes() -> None:
    with fakekafka.Cluster(brokers=2) as cluster:
        cluster.create_topic("t", 1, replication_factor=2)
        leader = cluster.partition_state("t", 0)["leader"]
        follower = next(b for b in (1, 2) if b != leader)
        p = _producer(cluster, "held")
        cluster.pause_replication(follower, "t", 0)
        p.begin_transaction()
        p.produce("t", b"v0", partition=0)
        p.flush(0)  # acks=all waits for the follower: not flushed yet
        assert cluster.last_stable_offset("t", 0) == 0
        cluster.pause_replication(follower, "t", 0, paused=False)
        p.commit_transaction(TIMEOUT)
        assert cluster.last_stable_offset("t", 0) == 2
        assert _committed_values(cluster.bootstrap_servers, "t", 1) == ["v0"]
