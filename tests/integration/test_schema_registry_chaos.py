"""Chaos on the Schema Registry beside the broker, met by confluent-kafka's SchemaRegistryClient and Avro serdes:
the same seed draws the same registry faults, and a written schedule replays them exactly."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("fastavro")
pytest.importorskip("avro")
pytest.importorskip("authlib")
pytest.importorskip("cachetools")

from confluent_kafka import OFFSET_BEGINNING, Consumer, Producer, TopicPartition  # noqa: E402
from confluent_kafka.schema_registry import SchemaRegistryClient  # noqa: E402
from confluent_kafka.schema_registry.avro import AvroDeserializer, AvroSerializer  # noqa: E402
from confluent_kafka.schema_registry.error import SchemaRegistryError  # noqa: E402
from confluent_kafka.serialization import MessageField, SerializationContext  # noqa: E402

import fakekafka  # noqa: E402
from fakekafka.chaos import Profile  # noqa: E402

pytestmark = [pytest.mark.fakekafka_only]

REGISTRY_ONLY = Profile(
    "registry-only",
    error_rate=0,
    latency_rate=0,
    drop_rate=0,
    registry_error_rate=0.3,
    registry_latency_rate=0.15,
    unknown_schema_id_rate=0.3,
    latency_ms=(1, 20),
    max_faults=None,
)
"""Registry faults only, so what the application meets depends on the registry's requests alone."""
TOPICS = ("orders", "payments", "refunds")


def schema(topic: str, version: int) -> str:
    fields = [{"name": "id", "type": "string"}] + [
        {"name": f"f{i}", "type": "int", "default": 0} for i in range(version)
    ]
    return json.dumps({"type": "record", "name": topic.title(), "fields": fields})


def outcome(call: Any) -> tuple[Any, str]:
    """What the application saw: (the value, "ok"), or (None, the error the registry's answer became)."""
    try:
        return call(), "ok"
    except SchemaRegistryError as e:
        return None, f"SchemaRegistryError {e.http_status_code}/{e.error_code}"
    except Exception as e:  # the serdes wrap the registry's error (SerializationError)
        cause = e.__cause__ if isinstance(e.__cause__, SchemaRegistryError) else e
        return None, f"{type(e).__name__} {getattr(cause, 'error_code', None)}"


def application(cluster: fakekafka.Cluster) -> list[str]:
    """Producers register three versions of three subjects through AvroSerializer, each record goes through the
    broker, and a consumer reads every record back with AvroDeserializer on a client of its own."""
    conf = {"url": cluster.schema_registry_url, "max.retries": 2, "retries.wait.ms": 1, "retries.max.wait.ms": 5}
    seen: list[str] = []
    producer = Producer({"bootstrap.servers": cluster.bootstrap_servers})
    for version in range(3):
        for topic in TOPICS:
            serialize = AvroSerializer(SchemaRegistryClient(conf), schema(topic, version))
            value, said = outcome(
                lambda t=topic, s=serialize, v=version: s(
                    {"id": f"{t}-{v}"}, SerializationContext(t, MessageField.VALUE)
                )
            )
            seen.append(f"serialize {topic} v{version}: {said}")
            if value is not None:
                producer.produce(topic, value)
    assert producer.flush(10) == 0
    consumer = Consumer({"bootstrap.servers": cluster.bootstrap_servers, "group.id": "reader"})
    records: list[Any] = []
    try:
        consumer.assign([TopicPartition(t, 0, OFFSET_BEGINNING) for t in TOPICS])
        expected = sum(1 for line in seen if line.endswith(": ok"))
        cluster.wait_until(
            lambda: (
                (m := consumer.poll(0.2)) is not None
                and not m.error()
                and records.append(m)
                or len(records) >= expected
            ),
            timeout=30,
        )
    finally:
        consumer.close()
    records.sort(key=lambda m: (m.topic(), m.offset()))
    deserialize = AvroDeserializer(SchemaRegistryClient(conf))
    for m in records:
        value, said = outcome(lambda m=m: deserialize(m.value(), SerializationContext(m.topic(), MessageField.VALUE)))
        seen.append(f"deserialize {m.topic()}@{m.offset()}: {said} {value}")
    return seen


def test_same_seed_same_registry_faults_and_the_schedule_replays_exactly(tmp_path: Path) -> None:
    runs = []
    for _ in range(2):
        with fakekafka.Cluster(schema_registry=True, chaos=fakekafka.Chaos(seed=4, profile=REGISTRY_ONLY)) as cluster:
            runs.append((application(cluster), cluster.chaos_schedule()))
    (seen, schedule), (again, same) = runs
    assert schedule.same_as(same) and seen == again
    kinds = {s.kind for s in schedule}
    assert {"registry_error", "unknown_schema_id"} <= kinds, schedule.lines()
    assert all(s.api.startswith("registry ") for s in schedule)
    assert any("40403" in line and "deserialize" in line for line in seen), seen  # a record's schema id unknown
    assert any(line.endswith(": ok") for line in seen)  # 5xx answers are retried by the client, and get through

    path = schedule.save(tmp_path / "registry-chaos.json")
    with fakekafka.Cluster(schema_registry=True, chaos=fakekafka.Schedule.load(path)) as cluster:
        replayed = application(cluster)
        applied = cluster.chaos_schedule()
    assert replayed == seen and applied.same_as(schedule)

    with fakekafka.Cluster(schema_registry=True, chaos=fakekafka.Chaos(seed=5, profile=REGISTRY_ONLY)) as cluster:
        application(cluster)
        assert not cluster.chaos_schedule().same_as(schedule)
