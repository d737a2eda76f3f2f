"""A stateful Kafka Streams topology in a streams group (`group.protocol=streams`, KIP-1071) with three instances,
one killed (SIGKILL) and restarted, under exactly_once_v2.

The application (tests/integration/clients/java/StreamsGroupJoin.java; Kafka Streams 4.3.1) re-keys orders by
customer (a repartition topic), counts them per customer (a RocksDB store with its changelog) and joins each
count update with the customer's record (a windowed stream-stream join, copartitioned), writing NAME:COUNT.
Three instances run; the test produces half the orders, SIGKILLs one instance (its member stays in the group
until its session times out, as a crashed one does), restarts it from its state directory and produces the rest.
A read_committed reader must then see, per customer, NAME:1 ... NAME:n each exactly once: the same output topic
contents on every broker, nothing lost, nothing twice across the killed transaction and the tasks' moves.

Runs on the `kafka` fixture: fakekafka here, Apache Kafka 4.4.0 under `pytest --kafka-real`, both with Kafka's
default `group.streams.*` settings (so the killed member's tasks move after the 45 s session timeout). Skips
(naming .ci/install.sh) without java or the Streams jars.
"""

from __future__ import annotations

import time
import uuid
from collections import Counter, defaultdict
from pathlib import Path

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition

from fakekafka.testing.handle import ClusterHandle
from tests.integration.clients.streams_app import StreamsApp, compile_app

pytestmark = [pytest.mark.clients, pytest.mark.kafka_real]

PARTITIONS = 3
CUSTOMERS = 5
PER_PHASE = 30
WAIT_S = 150.0
"""Each wait's bound: three JVMs starting on a loaded 2-core machine, the killed member's 45 s session and the
rebalance after it at Kafka's 5 s heartbeat interval; never reached when things work."""


def _read_until(consumer: Consumer, records: list[tuple[str, str]], total: int, apps: list[StreamsApp]) -> None:
    deadline = time.monotonic() + WAIT_S
    while len(records) < total:
        if time.monotonic() > deadline:
            stderr = "\n".join(a.stderr() for a in apps)
            pytest.fail(f"read_committed saw {len(records)} of {total} updates in {WAIT_S:.0f} s; stderr:\n{stderr}")
        for app in apps:
            app.check_alive()
        for m in consumer.consume(500, 0.2):
            if m.error() is None:
                records.append((m.key().decode(), m.value().decode()))


@pytest.mark.timeout(600)
def test_three_instances_one_killed_and_restarted_join_each_count_once(kafka: ClusterHandle, tmp_path: Path) -> None:
    classes, cp = compile_app("StreamsGroupJoin")
    app_id = f"orders-{uuid.uuid4().hex[:8]}"
    orders, customers, sink = f"{app_id}-orders", f"{app_id}-customers", f"{app_id}-out"
    for topic in (orders, customers, sink):
        kafka.create_topic(topic, PARTITIONS)
        kafka.wait_for_topic(topic, PARTITIONS)
    # Java's partitioner (murmur2), as the application's repartition topic: customers copartitioned with the counts
    producer = Producer(
        {"bootstrap.servers": kafka.bootstrap_servers, "enable.idempotence": True, "partitioner": "murmur2_random"}
    )
    for c in range(CUSTOMERS):
        producer.produce(customers, key=f"c{c}", value=f"Name{c}")
    assert producer.flush(30) == 0
    sent: Counter[str] = Counter()

    def produce(phase: int) -> None:
        for i in range(PER_PHASE):
            customer = f"c{(i * 2 + phase) % CUSTOMERS}"
            sent[customer] += 1
            producer.produce(orders, key=f"{phase}-{i}", value=customer)
        assert producer.flush(30) == 0

    reader = Consumer(
        {
            "bootstrap.servers": kafka.bootstrap_servers,
            "group.id": f"reader-{app_id}",
            "isolation.level": "read_committed",
            "enable.auto.commit": False,
        }
    )
    reader.assign([TopicPartition(sink, p, 0) for p in range(PARTITIONS)])
    records: list[tuple[str, str]] = []

    def start(name: str) -> StreamsApp:
        return StreamsApp(
            "StreamsGroupJoin",
            classes,
            cp,
            [kafka.bootstrap_servers, app_id, str(tmp_path / f"state-{name}"), orders, customers, sink],
            tmp_path / f"{name}-{time.monotonic_ns()}.stderr",
        )

    apps: list[StreamsApp] = []
    try:
        apps += [start("a"), start("b"), start("c")]
        for app in apps:
            app.wait_running(WAIT_S)
        produce(0)
        _read_until(reader, records, PER_PHASE, apps)
        killed = apps.pop()
        killed.kill()
        apps.append(start("c"))
        produce(1)
        _read_until(reader, records, 2 * PER_PHASE, apps)
    finally:
        for app in apps:
            app.stop()
        producer.flush(5)
        reader.close()
    joined: dict[str, list[str]] = defaultdict(list)
    for customer, value in records:
        joined[customer].append(value)
    assert {c: sorted(vs, key=lambda v: int(v.split(":")[1])) for c, vs in joined.items()} == {
        c: [f"Name{c[1:]}:{k}" for k in range(1, n + 1)] for c, n in sent.items()
    }
