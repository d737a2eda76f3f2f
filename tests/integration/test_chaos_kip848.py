"""The one-owner invariant on a KIP-848 group (group.protocol=consumer) under the `cluster` profile: two
confluent-kafka consumers share a topic while session expiries and coordinator moves are drawn; the invariant
reads their ConsumerGroupHeartbeat answers and finds no partition held by two live members."""

from __future__ import annotations

import time

import pytest

from fakekafka import Chaos, Cluster

confluent_kafka = pytest.importorskip("confluent_kafka")

RECORDS = 40
GROUP = "kip848-chaos"


def test_a_kip848_group_under_cluster_chaos_keeps_one_owner_per_partition() -> None:
    from confluent_kafka import Consumer, Producer
    for seed in (1, 2):
        with Cluster(brokers=3, chaos=Chaos(seed=seed, profile="cluster")) as c:
            c.create_topic("events", 4, replication_factor=3)
            p = Producer({"bootstrap.servers": c.bootstrap_servers, "acks": "all", "enable.idempotence": True})
            for i in range(RECORDS):
                p.produce("events", key=str(i).encode(), value=f"event-{i}".encode())
            assert p.flush(30) == 0
            conf = {"bootstrap.servers": c.bootstrap_servers, "group.id": GROUP, "group.protocol": "consumer",
                    "auto.offset.reset": "earliest", "enable.auto.commit": False, "retry.backoff.ms": 10,
                    "reconnect.backoff.ms": 10}
            consumers = [Consumer(conf), Consumer(conf)]
            seen: set[bytes] = set()
            try:
                for consumer in consumers:
                    consumer.subscribe(["events"])
                deadline = time.monotonic() + 40
                while len(seen) < RECORDS and time.monotonic() < deadline:
                    for consumer in consumers:
                        m = consumer.poll(0.1)
                        if m is not None and not m.error():
                            seen.add(m.value())
            finally:
                for consumer in consumers:
                    consumer.close()
            assert len(seen) == RECORDS, f"seed {seed}: {len(seen)} of {RECORDS} consumed"
            assert c.chaos is not None
            held = c.call(lambda: dict(c.chaos.ledger.held))  # type: ignore[union-attr]
            assert GROUP in held, f"seed {seed}: no ConsumerGroupHeartbeat answer observed"
            assert c.check_invariants() == [], f"seed {seed}"
