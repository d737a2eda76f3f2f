"""fakekafka.testing.client's request helpers, against a recording stand-in for a connection."""

from __future__ import annotations

from typing import Any

import pytest

from fakekafka.testing.client import consumer_group_heartbeat
from fakekafka.wire import ApiKey


class _Recorder:
    def __init__(self) -> None:
        self.sent: list[tuple[ApiKey, int | None, dict[str, Any]]] = []

    def request(self, key: ApiKey, version: int | None, body: dict[str, Any]) -> str:
        self.sent.append((key, version, body))
        return "answer"


def test_a_join_a_steady_heartbeat_and_fields_given_by_name() -> None:
    conn = _Recorder()
    assert consumer_group_heartbeat(conn, "g", "t", "", 0) == "answer"
    key, version, join = conn.sent[-1]
    assert (key, version) == (ApiKey.CONSUMER_GROUP_HEARTBEAT, None)
    assert (join["subscribed_topic_names"], join["topic_partitions"], join["rebalance_timeout_ms"]) == (
        ["t"], [], 30_000)
    consumer_group_heartbeat(conn, "g", "t", "m", 3, 1)
    _, version, steady = conn.sent[-1]
    assert version == 1
    assert (steady["subscribed_topic_names"], steady["topic_partitions"], steady["rebalance_timeout_ms"]) == (
        None, None, -1)
    owned = [{"topic_id": "x", "partitions": [0]}]
    consumer_group_heartbeat(conn, "g", None, "m", 0, subscribed_topic_regex="t-.*", topic_partitions=owned)
    _, _, regex = conn.sent[-1]
    assert (regex["subscribed_topic_names"], regex["subscribed_topic_regex"], regex["topic_partitions"]) == (
        None, "t-.*", owned)


def test_a_field_the_request_does_not_have_is_refused_by_name() -> None:
    conn = _Recorder()
    with pytest.raises(TypeError, match="ConsumerGroupHeartbeat has no field owned_partitions"):
        consumer_group_heartbeat(conn, "g", "t", "m", 0, owned_partitions=[])
    assert conn.sent == []
