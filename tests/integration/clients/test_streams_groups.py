"""A Kafka Streams application in a streams group (`group.protocol=streams`, KIP-1071): two instances, one
stopped and restarted, with a stateful topology.

The application (tests/integration/clients/java/StreamsGroupCount.java; Kafka Streams 4.3.1, the newest on Maven
Central) counts words: a repartition (selectKey) and a count in a RocksDB store with its changelog, under
exactly_once_v2 with the record cache off, so each input record gives one output update. The broker's
group coordinator assigns its tasks (StreamsGroupHeartbeat) and creates its internal topics. Two instances
run; the test produces a third of the words, stops one instance (it leaves the group), produces another third,
restarts it from its state directory and produces the rest. A read_committed reader must then see, per word, the
counts 1, 2, ..., n each exactly once: nothing lost, nothing counted twice across the moves of the tasks.

Runs on the `kafka` fixture: fakekafka here, Apache Kafka 4.4.0 under `pytest --kafka-real` (the kafka-real
tier), both with Kafka's default `group.streams.*` settings. Skips (naming .ci/install.sh) without java or the
Streams jars.
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
WORDS = 7
PER_PHASE = 60
WAIT_S = 120.0
"""Each wait's bound: JVM start-up and a streams-group rebalance at Kafka's default 5 s heartbeat interval on a
loaded 2-core machine; never reached when things work."""


def _read_until(consumer: Consumer, records: list[tuple[str, int]], total: int, apps: list[StreamsApp]) -> None:
    deadline = time.monotonic() + WAIT_S
    while len(records) < total:
        if time.monotonic() > deadline:
            stderr = "\n".join(a.stderr() for a in apps)
            pytest.fail(f"read_committed saw {len(records)} of {total} updates in {WAIT_S:.0f} s; stderr:\n{stderr}")
        for m in consumer.consume(500, 0.2):
            if m.error() is None:
                records.append((m.key().decode(), int(m.value().decode())))


@pytest.mark.timeout(600)
def test_two_instances_one_restarted_count_each_word_once(kafka: ClusterHandle, tmp_path: Path) -> None:
    classes, cp = compile_app("StreamsGroupCount")
    app_id = f"words-{uuid.uuid4().hex[:8]}"
    source, sink = f"{app_id}-in", f"{app_id}-out"
    for topic in (source, sink):
        kafka.create_topic(topic, PARTITIONS)
        kafka.wait_for_topic(topic, PARTITIONS)
    producer = Producer({"bootstrap.servers": kafka.bootstrap_servers, "enable.idempotence": True})
    sent: Counter[str] = Counter()

    def produce(phase: int) -> None:
        for i in range(PER_PHASE):
            word = f"w{(i * 3 + phase) % WORDS}"
            sent[word] += 1
            producer.produce(source, key=f"{phase}-{i}", value=word)
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
    records: list[tuple[str, int]] = []

    def start(name: str) -> StreamsApp:
        return StreamsApp(
            "StreamsGroupCount",
            classes,
            cp,
            [kafka.bootstrap_servers, app_id, str(tmp_path / f"state-{name}"), source, sink],
            tmp_path / f"{name}-{time.monotonic_ns()}.stderr",
        )

    apps: list[StreamsApp] = []
    try:
        a, b = start("a"), start("b")
        apps += [a, b]
        a.wait_running(WAIT_S)
        b.wait_running(WAIT_S)
        produce(0)
        _read_until(reader, records, PER_PHASE, apps)
        assert b.stop() == 0
        apps.remove(b)
        produce(1)
        _read_until(reader, records, 2 * PER_PHASE, apps)
        b = start("b")
        apps.append(b)
        b.wait_running(WAIT_S)
        produce(2)
        _read_until(reader, records, 3 * PER_PHASE, apps)
    finally:
        for app in apps:
            app.stop()
        producer.flush(5)
        reader.close()
    counts: dict[str, list[int]] = defaultdict(list)
    for word, n in records:
        counts[word].append(n)
    assert {w: sorted(ns) for w, ns in counts.items()} == {w: list(range(1, n + 1)) for w, n in sent.items()}
