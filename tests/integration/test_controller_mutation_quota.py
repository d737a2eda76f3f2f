"""The controller mutation quota (`controller_mutation_rate`) over raw requests, with the same assertions on
fakekafka and (`pytest --kafka-real`) on Apache Kafka 4.4.0: a client's CreateTopics (v6+), CreatePartitions (v3+)
and DeleteTopics (v5+) are refused with THROTTLING_QUOTA_EXCEEDED and a throttle time once its token bucket
(rate x controller.quota.window.num x controller.quota.window.size.seconds partitions, refilled at the rate) is
below zero; older versions are admitted and throttled. Each request goes on a new connection (a throttled one is
muted for the throttle time). The quota is on the test's own client id and removed at its end."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from fakekafka.wire import ApiKey, ErrorCode
from tests.rawclient import RawClient, alter_client_quota, eventually, request_once

pytestmark = pytest.mark.kafka_real

RATE = 1.0
"""Partitions a second; the default window (11 x 1 s) gives a burst of 11."""


def _quota(kafka: Any, client_id: str, value: float | None) -> None:
    with RawClient(kafka.bootstrap_servers) as raw:
        r = alter_client_quota(raw, "client-id", client_id, "controller_mutation_rate", value)
    assert r.entries[0].error_code == ErrorCode.NONE, r


def _request(kafka: Any, client_id: str, api_key: int, version: int, body: dict[str, Any]) -> Any:
    return request_once(kafka.bootstrap_servers, api_key, version, body, client_id=client_id)


def _create(kafka: Any, client_id: str, name: str, partitions: int, version: int = 7) -> Any:
    return _request(
        kafka,
        client_id,
        ApiKey.CREATE_TOPICS,
        version,
        {
            "timeout_ms": 30_000,
            "validate_only": False,
            "topics": [
                {"name": name, "num_partitions": partitions, "replication_factor": 1, "assignments": [], "configs": []}
            ],
        },
    )


@pytest.fixture
def client_id(kafka: Any) -> Iterator[str]:
    cid = f"mutator-{uuid.uuid4().hex[:8]}"
    yield cid
    _quota(kafka, cid, None)
    for topic in kafka.topics():
        if topic.startswith(cid):
            kafka.delete_topic(topic)


def _exhaust(kafka: Any, client_id: str) -> tuple[Any, list[str]]:
    """Creates 11-partition topics until one is refused (the quota may reach Kafka's controller a moment after it
    is set): that answer's topic, and the topics made."""
    made: list[str] = []

    def attempt() -> Any:
        name = f"{client_id}-{len(made)}"
        topic = _create(kafka, client_id, name, 11).topics[0]
        if topic.error_code == ErrorCode.NONE:
            made.append(name)
            return None
        return topic

    return eventually("a CreateTopics refused by the quota", attempt, timeout=30), made


def test_mutations_refused_over_the_quota_and_older_versions_throttled(kafka: Any, client_id: str) -> None:
    _quota(kafka, client_id, RATE)
    refused, made = _exhaust(kafka, client_id)
    assert made, "the first 11 partitions (the burst) were refused"
    seen = [(refused.error_code, refused.error_message)]  # Kafka 4.4.0 answers no message
    # refused answers carry how long until the bucket is back to zero: at most the last topic's 11 partitions
    r = _create(kafka, client_id, f"{client_id}-x", 1)
    assert r.topics[0].error_code == ErrorCode.THROTTLING_QUOTA_EXCEEDED
    assert 0 < r.throttle_time_ms <= 11_000
    # partitions added and topics deleted count too, strictly from CreatePartitions v3 and DeleteTopics v5
    r = _request(
        kafka,
        client_id,
        ApiKey.CREATE_PARTITIONS,
        3,
        {"timeout_ms": 30_000, "validate_only": False, "topics": [{"name": made[0], "count": 12, "assignments": None}]},
    )
    seen.append((r.results[0].error_code, r.results[0].error_message, r.throttle_time_ms > 0))
    r = _request(kafka, client_id, ApiKey.DELETE_TOPICS, 5, {"timeout_ms": 30_000, "topic_names": [made[0]]})
    seen.append((r.responses[0].error_code, r.responses[0].error_message, r.throttle_time_ms > 0))
    refused_throttled = (ErrorCode.THROTTLING_QUOTA_EXCEEDED, None, True)
    assert seen == [refused_throttled[:2], refused_throttled, refused_throttled]
    # an older version is admitted, and throttled
    r = _create(kafka, client_id, f"{client_id}-old", 1, version=5)
    assert (r.topics[0].error_code, r.throttle_time_ms > 0) == (ErrorCode.NONE, True)
    # a topic that is refused for another reason costs nothing and is answered with that reason
    r = _create(kafka, client_id, made[0], 1)
    assert r.topics[0].error_code == ErrorCode.TOPIC_ALREADY_EXISTS
