"""Clients through `fakekafka.Proxy` (the `kafka_proxy` fixture): the same outcomes as direct connections, every
request crossing the proxy, and the proxy's faults retried by the clients. Runs against fakekafka and, in the
--kafka-real child run, against Apache Kafka (one and three brokers): the proxy is the same either way."""

from __future__ import annotations

import time
import uuid

import pytest
from confluent_kafka import Consumer, Producer
from confluent_kafka.admin import AdminClient, NewTopic

from fakekafka.proxy import Proxy
from fakekafka.testing.handle import ClusterHandle

pytestmark = pytest.mark.kafka_real  # must pass on Apache Kafka too (`pytest --kafka-real -m kafka_real`)


def _topic(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def _create(bootstrap: str, topic: str, partitions: int, replication: int = 1) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(topic, partitions, replication)])[topic].result(30)


def _produce(bootstrap: str, topic: str, n: int, **config: object) -> None:
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5, **config})
    errors: list[object] = []
    for i in range(n):
        producer.produce(topic, f"v{i}".encode(), key=f"k{i}".encode(),
                         on_delivery=lambda err, _msg: errors.append(err) if err else None)
    assert producer.flush(60) == 0
    assert errors == []


def _consume(bootstrap: str, topic: str, n: int, group: str) -> list[str]:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "auto.offset.reset": "earliest",
                         "enable.auto.commit": False})
    consumer.subscribe([topic])
    values: list[str] = []
    deadline = time.monotonic() + 60
    try:
        while len(values) < n and time.monotonic() < deadline:
            msg = consumer.poll(0.5)
            if msg is not None and not msg.error():
                values.append(msg.value().decode())
        consumer.commit(asynchronous=False)
    finally:
        consumer.close()
    return values


def _only_through(proxy: Proxy, kafka: ClusterHandle) -> None:
    """No client reached the upstream but through the proxy: on fakekafka, every connection it served came
    from the proxy's own sockets."""
    requests = getattr(kafka, "requests", None)
    if requests is None:
        return
    peers = {r.client for r in requests()}
    assert peers and peers <= proxy.server.upstream_local_addresses


def test_produce_consume_and_a_group_through_the_proxy(kafka: ClusterHandle, kafka_proxy: Proxy) -> None:
    topic = _topic("proxied")
    _create(kafka_proxy.bootstrap_servers, topic, 3)
    _produce(kafka_proxy.bootstrap_servers, topic, 200, **{"enable.idempotence": True})
    values = _consume(kafka_proxy.bootstrap_servers, topic, 200, _topic("g"))
    assert sorted(values) == sorted(f"v{i}" for i in range(200))
    assert kafka.end_offsets(topic) and sum(kafka.end_offsets(topic).values()) == 200
    apis = {r.api for r in kafka_proxy.requests()}
    assert {"Metadata", "Produce", "Fetch", "JoinGroup", "SyncGroup", "OffsetCommit"} <= apis
    # every broker the clients were told about is one of the proxy's listeners
    assert kafka_proxy.brokers()
    _only_through(kafka_proxy, kafka)


@pytest.mark.fakekafka(brokers=3)
def test_three_brokers_each_get_a_listener(kafka: ClusterHandle, kafka_proxy: Proxy) -> None:
    topic = _topic("three")
    _create(kafka_proxy.bootstrap_servers, topic, 6, replication=3)
    _produce(kafka_proxy.bootstrap_servers, topic, 300, acks="all")
    assert sorted(_consume(kafka_proxy.bootstrap_servers, topic, 300, _topic("g3"))) == \
        sorted(f"v{i}" for i in range(300))
    brokers = kafka_proxy.brokers()
    assert len(brokers) == 3
    proxy_ports = {port for _, port in brokers.values()}
    assert all(r.broker in brokers for r in kafka_proxy.requests() if r.broker >= 0)
    assert len(proxy_ports) == 3
    _only_through(kafka_proxy, kafka)


def test_errors_answered_by_the_proxy_are_retried(kafka: ClusterHandle, kafka_proxy: Proxy) -> None:
    topic = _topic("faulted")
    _create(kafka_proxy.bootstrap_servers, topic, 1)
    kafka_proxy.inject_error("Produce", "NOT_LEADER_OR_FOLLOWER", count=2)
    _produce(kafka_proxy.bootstrap_servers, topic, 50, **{"enable.idempotence": True, "retry.backoff.ms": 10})
    assert sum(kafka.end_offsets(topic).values()) == 50
    produce_errors = [r for r in kafka_proxy.requests() if r.api == "Produce" and r.error_codes]
    assert len(produce_errors) == 2 and produce_errors[0].error_codes == ("NOT_LEADER_OR_FOLLOWER",)
    kinds = [e.kind for e in kafka_proxy.events()]
    assert kinds.count("fault") == 2


def test_an_error_after_forwarding_is_deduplicated_by_an_idempotent_producer(kafka: ClusterHandle,
                                                                              kafka_proxy: Proxy) -> None:
    topic = _topic("applied")
    _create(kafka_proxy.bootstrap_servers, topic, 1)
    kafka_proxy.inject_error("Produce", "REQUEST_TIMED_OUT", count=1, after=True)
    _produce(kafka_proxy.bootstrap_servers, topic, 20, **{"enable.idempotence": True, "linger.ms": 50})
    # the first batch was applied upstream, answered with an error, resent, and deduplicated by the broker
    assert sum(kafka.end_offsets(topic).values()) == 20
    assert len(kafka.records(topic, 0)) == 20


def test_dropped_connections_and_latency(kafka: ClusterHandle, kafka_proxy: Proxy) -> None:
    topic = _topic("dropped")
    _create(kafka_proxy.bootstrap_servers, topic, 1)
    kafka_proxy.drop_connection("Produce", when="after", count=1)
    kafka_proxy.inject_latency(200, "Fetch", count=2)
    _produce(kafka_proxy.bootstrap_servers, topic, 30, **{"enable.idempotence": True})
    assert sum(kafka.end_offsets(topic).values()) == 30  # applied once, despite the retry
    assert sorted(_consume(kafka_proxy.bootstrap_servers, topic, 30, _topic("gd"))) == \
        sorted(f"v{i}" for i in range(30))
    assert any("connection dropped after" in e.details["fault"] for e in kafka_proxy.events() if e.kind == "fault")
