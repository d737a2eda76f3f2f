"""A client quota's effect, with confluent-kafka, on fakekafka and (`pytest --kafka-real`) on Apache Kafka 4.4.0: a
producer over its `producer_byte_rate` is told to back off (throttle_time_ms in its answers, librdkafka's
throttle callback) and, once throttled, goes at about its quota.

The assertions are what holds on a loaded machine: throttled at all, and from the first throttle on a throughput
within 0.3x-2x of the quota. The broker's default window (11 samples of 1 s) lets a fresh client's first ten
seconds' worth through; the throttling that follows pays that burst back, so with 64 KB requests both brokers
measured about 0.44x the quota from the first throttle to the end (Kafka 4.4.0: 87 kB/s, fakekafka 85-88 kB/s
for a 200 kB/s quota). The comparison of the two brokers' numbers is bench/client_quotas.py.
The quota is on the test's own client id and removed at its end (the kafka-real cluster is shared)."""

from __future__ import annotations

import time
import uuid
from typing import Any

import pytest

from fakekafka.wire import ApiKey, ErrorCode
from tests.rawclient import RawClient, eventually

pytestmark = [pytest.mark.kafka_real, pytest.mark.clients]

QUOTA = 200_000
"""producer_byte_rate, bytes/s."""


def _set_quota(raw: RawClient, client_id: str, value: float | None) -> None:
    r = raw.request(ApiKey.ALTER_CLIENT_QUOTAS, 1, {"validate_only": False, "entries": [
        {"entity": [{"entity_type": "client-id", "entity_name": client_id}],
         "ops": [{"key": "producer_byte_rate", "value": value or 0.0, "remove": value is None}]}]})
    assert r.entries[0].error_code == ErrorCode.NONE, r


def _quota_seen(raw: RawClient, client_id: str) -> bool | None:
    r = raw.request(ApiKey.DESCRIBE_CLIENT_QUOTAS, 1, {"strict": True, "components": [
        {"entity_type": "client-id", "match_type": 0, "match": client_id}]})
    return True if r.entries else None


def test_a_producer_over_its_byte_rate_is_throttled_to_about_its_quota(kafka: Any) -> None:
    confluent_kafka = pytest.importorskip("confluent_kafka")
    client_id, topic = f"quota-producer-{uuid.uuid4().hex[:6]}", f"quota-{uuid.uuid4().hex[:6]}"
    kafka.create_topic(topic, 1)
    raw = RawClient(kafka.bootstrap_servers)
    _set_quota(raw, client_id, QUOTA)
    throttles: list[tuple[float, float]] = []
    delivered: list[tuple[float, int]] = []
    producer = confluent_kafka.Producer({
        "bootstrap.servers": kafka.bootstrap_servers, "client.id": client_id, "linger.ms": 5, "acks": 1,
        # small requests: a throttle (which a broker can only give once a request is over) then stops most of the
        # data, not the few 1 MB requests librdkafka would otherwise have in flight already
        "batch.size": 65536,
        "throttle_cb": lambda e: throttles.append((time.monotonic(), e.throttle_time))})
    try:
        eventually("the quota known to the broker", lambda: _quota_seen(raw, client_id))
        payload = b"x" * 1000
        for _ in range(3000):  # 3 MB: about 2 MB let through at once, then 1 MB at the quota
            while True:
                try:
                    producer.produce(topic, payload, on_delivery=lambda err, msg: delivered.append(
                        (time.monotonic(), 0 if err is not None else len(msg.value()))))
                    break
                except BufferError:
                    producer.poll(0.05)
            producer.poll(0)
        assert producer.flush(120) == 0
        end = time.monotonic()
    finally:
        producer.flush(30)
        _set_quota(raw, client_id, None)
        raw.close()
    assert sum(size for _, size in delivered) == 3000 * 1000
    assert throttles and max(ms for _, ms in throttles) > 0, "never throttled"
    first = throttles[0][0]
    steady = sum(size for t, size in delivered if t >= first) / max(end - first, 1e-3)
    assert 0.3 * QUOTA <= steady <= 2 * QUOTA, f"{steady:.0f} B/s once throttled, quota {QUOTA}"
