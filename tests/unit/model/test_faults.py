"""Fault rules (fakekafka/model/faults.py): API names, which requests a rule matches (API, broker, client id,
topic, partition), how its count runs down, and which topics and partitions a request touches, read from
bodies parsed out of real request bytes."""

from __future__ import annotations

import uuid
from typing import Any

import pytest

from fakekafka.model.faults import Fault, FaultKind, Faults, api_key_of, touched_partitions
from fakekafka.wire import ErrorCode
from fakekafka.wire.protocol import request_struct
from fakekafka.wire.records import build_batch

ORDERS_ID = uuid.UUID("5f0a4c51-3a57-4d0b-8f8b-2d9d2f0d1c01")
ZERO_ID = uuid.UUID(int=0)
NAMES = {ORDERS_ID: "orders"}


def parsed(api: str, version: int, fields: dict[str, Any]) -> Any:
    """The body a broker would parse from these fields' bytes (fields left out take the schema's defaults)."""
    struct = request_struct(api_key_of(api), version)
    return struct.parse(struct.build(fields))


def produce(*partitions: tuple[str, int]) -> Any:
    topics: dict[str, list[int]] = {}
    for topic, index in partitions:
        topics.setdefault(topic, []).append(index)
    return parsed("Produce", 9, {"acks": -1, "timeout_ms": 1000, "topic_data": [
        {"name": t, "partition_data": [{"index": i, "records": build_batch([{"value": b"v"}])} for i in idx]}
        for t, idx in topics.items()]})


def fetch_partition(index: int) -> dict[str, Any]:
    return {"partition": index, "current_leader_epoch": -1, "fetch_offset": 0, "last_fetched_epoch": -1,
            "log_start_offset": -1, "partition_max_bytes": 1 << 20}


FETCH_COMMON = {"replica_id": -1, "max_wait_ms": 500, "min_bytes": 1, "max_bytes": 1 << 20, "isolation_level": 0,
                "session_id": 0, "session_epoch": -1, "forgotten_topics_data": [], "rack_id": ""}


def fetch_by_id(version: int, index: int) -> Any:
    return parsed("Fetch", version, {**FETCH_COMMON, "topics": [
        {"topic_id": ORDERS_ID, "partitions": [fetch_partition(index)]}]})

VECTORS = [
    pytest.param(produce(("orders", 0), ("orders", 2), ("audit", 1)), {("orders", 0), ("orders", 2), ("audit", 1)},
                 id="Produce-v9"),
    pytest.param(parsed("Fetch", 12, {**FETCH_COMMON, "topics": [
        {"topic": "orders", "partitions": [fetch_partition(0), fetch_partition(1)]}]}),
        {("orders", 0), ("orders", 1)}, id="Fetch-v12-by-name"),
    pytest.param(fetch_by_id(13, 3), {("orders", 3)}, id="Fetch-v13-by-id"),
    pytest.param(parsed("Fetch", 13, {**FETCH_COMMON, "topics": [
        {"topic_id": uuid.uuid4(), "partitions": [fetch_partition(0)]}]}), set(), id="Fetch-v13-unknown-id"),
    pytest.param(parsed("ListOffsets", 7, {"replica_id": -1, "isolation_level": 0, "topics": [
        {"name": "orders", "partitions": [{"partition_index": 4, "current_leader_epoch": -1, "timestamp": -1}]}]}),
        {("orders", 4)}, id="ListOffsets-v7"),
    pytest.param(parsed("OffsetCommit", 8, {"group_id": "g", "generation_id_or_member_epoch": 1, "member_id": "m",
                                            "topics": [{"name": "orders", "partitions": [
                                                {"partition_index": 1, "committed_offset": 5}]}]}),
                 {("orders", 1)}, id="OffsetCommit-v8"),
    pytest.param(parsed("OffsetFetch", 7, {"group_id": "g", "topics": [
        {"name": "orders", "partition_indexes": [0, 1]}]}), {("orders", 0), ("orders", 1)}, id="OffsetFetch-v7"),
    pytest.param(parsed("OffsetFetch", 8, {"groups": [{"group_id": "g", "topics": [
        {"name": "orders", "partition_indexes": [2]}]}]}), {("orders", 2)}, id="OffsetFetch-v8-in-a-group"),
    pytest.param(parsed("OffsetFetch", 8, {"groups": [{"group_id": "g", "topics": None}]}), set(),
                 id="OffsetFetch-v8-all-topics"),
    pytest.param(parsed("OffsetForLeaderEpoch", 4, {"replica_id": -1, "topics": [{"topic": "orders", "partitions": [
        {"partition": 2, "current_leader_epoch": 0, "leader_epoch": 0}]}]}), {("orders", 2)},
        id="OffsetForLeaderEpoch-v4"),
    pytest.param(parsed("Metadata", 12, {"topics": [{"topic_id": ZERO_ID, "name": "orders"}]}), {("orders", None)},
                 id="Metadata-v12-by-name"),
    pytest.param(parsed("Metadata", 12, {"topics": [{"topic_id": ORDERS_ID, "name": None}]}), {("orders", None)},
                 id="Metadata-v12-by-id"),
    pytest.param(parsed("Metadata", 12, {"topics": None}), set(), id="Metadata-v12-all-topics"),
    pytest.param(parsed("CreateTopics", 5, {"timeout_ms": 1000, "topics": [
        {"name": "orders", "num_partitions": 3, "replication_factor": 3, "assignments": [],
         "configs": [{"name": "cleanup.policy", "value": "compact"}]}]}), {("orders", None)},
        id="CreateTopics-v5-configs-are-not-topics"),
    pytest.param(parsed("DeleteTopics", 3, {"topic_names": ["orders", "audit"], "timeout_ms": 1000}),
                 {("orders", None), ("audit", None)}, id="DeleteTopics-v3-names"),
    pytest.param(parsed("DeleteTopics", 6, {"topics": [{"name": "orders", "topic_id": ZERO_ID}], "timeout_ms": 1000}),
                 {("orders", None)}, id="DeleteTopics-v6"),
    pytest.param(parsed("DescribeConfigs", 4, {"resources": [
        {"resource_type": 2, "resource_name": "orders", "configuration_keys": None},
        {"resource_type": 4, "resource_name": "1", "configuration_keys": None}]}), {("orders", None)},
        id="DescribeConfigs-v4-topic-resource-only"),
    pytest.param(parsed("JoinGroup", 5, {"group_id": "g", "session_timeout_ms": 10_000, "rebalance_timeout_ms": 10_000,
                                         "member_id": "", "protocol_type": "consumer",
                                         "protocols": [{"name": "range", "metadata": b""}]}), set(),
                 id="JoinGroup-v5-protocols-are-not-topics"),
    pytest.param(parsed("FindCoordinator", 4, {"key_type": 0, "coordinator_keys": ["g"]}), set(),
                 id="FindCoordinator-v4"),
]


@pytest.mark.parametrize(("body", "expected"), VECTORS)
def test_touched_partitions_of_real_request_bodies(body: Any, expected: set[tuple[str, int | None]]) -> None:
    assert touched_partitions(body, NAMES.get) == expected


def test_topic_ids_need_a_resolver() -> None:
    body = fetch_by_id(13, 0)
    assert touched_partitions(body) == set()
    assert touched_partitions(body, NAMES.get) == {("orders", 0)}


@pytest.mark.parametrize(("name", "key"), [
    ("Produce", 0), ("produce", 0), ("FETCH", 1), ("ListOffsets", 2), ("Metadata", 3), ("OffsetCommit", 8),
    ("OffsetFetch", 9), ("FindCoordinator", 10), ("JoinGroup", 11), ("join_group", 11), ("join-group", 11),
    ("Heartbeat", 12), ("SyncGroup", 14), ("InitProducerId", 22), (0, 0), (11, 11), (None, None)])
def test_api_key_of(name: str | int | None, key: int | None) -> None:
    assert api_key_of(name) == key


def test_an_unknown_api_name_says_what_names_look_like() -> None:
    with pytest.raises(ValueError, match=r"unknown API 'Produce2'.*Produce, Fetch, JoinGroup"):
        api_key_of("Produce2")


# --- matching ------------------------------------------------------------------------------------------
def error(**scope: Any) -> Fault:
    scope.setdefault("count", None)
    return Fault(FaultKind.ERROR, error=ErrorCode.NOT_LEADER_OR_FOLLOWER, **scope)


PRODUCE_ORDERS_0 = produce(("orders", 0))
METADATA_ORDERS = parsed("Metadata", 12, {"topics": [{"topic_id": ZERO_ID, "name": "orders"}]})


@pytest.mark.parametrize(("rule", "api", "broker", "client_id", "body", "fires"), [
    pytest.param(error(), 0, 1, "c", PRODUCE_ORDERS_0, True, id="no-scope-matches-everything"),
    pytest.param(error(api_key=0), 0, 1, "c", PRODUCE_ORDERS_0, True, id="api"),
    pytest.param(error(api_key=1), 0, 1, "c", PRODUCE_ORDERS_0, False, id="other-api"),
    pytest.param(error(broker=2), 0, 2, "c", PRODUCE_ORDERS_0, True, id="broker"),
    pytest.param(error(broker=2), 0, 1, "c", PRODUCE_ORDERS_0, False, id="other-broker"),
    pytest.param(error(client_id="app"), 0, 1, "app", PRODUCE_ORDERS_0, True, id="client-id"),
    pytest.param(error(client_id="app"), 0, 1, "other", PRODUCE_ORDERS_0, False, id="other-client-id"),
    pytest.param(error(client_id="app"), 0, 1, None, PRODUCE_ORDERS_0, False, id="no-client-id"),
    pytest.param(error(topic="orders"), 0, 1, "c", PRODUCE_ORDERS_0, True, id="topic"),
    pytest.param(error(topic="audit"), 0, 1, "c", PRODUCE_ORDERS_0, False, id="other-topic"),
    pytest.param(error(topic="orders", partition=0), 0, 1, "c", PRODUCE_ORDERS_0, True, id="partition"),
    pytest.param(error(topic="orders", partition=1), 0, 1, "c", PRODUCE_ORDERS_0, False, id="other-partition"),
    pytest.param(error(topic="orders", partition=1), 3, 1, "c", METADATA_ORDERS, True,
                 id="a-request-for-the-whole-topic-touches-every-partition"),
    pytest.param(error(topic="audit", partition=1), 0, 1, "c", produce(("orders", 1), ("audit", 0)), False,
                 id="topic-and-partition-must-match-together"),
    pytest.param(error(topic="orders"), 11, 1, "c", parsed("JoinGroup", 5, {"group_id": "orders", "protocols": [
        {"name": "orders", "metadata": b""}]}), False, id="a-group-or-protocol-named-like-the-topic"),
    pytest.param(error(api_key=0, broker=1, client_id="c", topic="orders", partition=0), 0, 1, "c",
                 PRODUCE_ORDERS_0, True, id="every-scope-at-once"),
    pytest.param(error(count=0), 0, 1, "c", PRODUCE_ORDERS_0, False, id="used-up"),
])
def test_a_rule_fires_only_within_its_scope(rule: Fault, api: int, broker: int, client_id: str | None, body: Any,
                                             fires: bool) -> None:
    faults = Faults()
    faults.add(rule)
    assert faults.take(api, broker, client_id, body, NAMES.get) == ([rule] if fires else [])
    assert rule.fired == int(fires)


def test_a_topic_rule_matches_a_fetch_by_topic_id() -> None:
    faults = Faults()
    rule = faults.add(error(api_key=1, topic="orders", partition=3, count=1))
    body = fetch_by_id(16, 3)
    assert faults.take(1, 1, "c", body) == []  # without a resolver the id names nothing
    assert faults.take(1, 1, "c", body, NAMES.get) == [rule]


# --- counts ---------------------------------------------------------------------------------------------------
def test_a_count_runs_down_on_matching_requests_only_and_the_rule_goes() -> None:
    faults = Faults()
    rule = faults.add(error(api_key=0, topic="orders", count=2))
    assert faults.take(1, 1, "c", parsed("Fetch", 12, {**FETCH_COMMON, "topics": []})) == []
    assert faults.take(0, 1, "c", produce(("audit", 0))) == []
    assert rule.count == 2 and rule.fired == 0
    assert faults.take(0, 1, "c", PRODUCE_ORDERS_0) == [rule]
    assert faults.take(0, 2, "d", PRODUCE_ORDERS_0) == [rule]
    assert (rule.count, rule.fired, faults.rules) == (0, 2, [])
    assert faults.take(0, 1, "c", PRODUCE_ORDERS_0) == []


def test_no_count_fires_until_cleared() -> None:
    faults = Faults()
    rule = faults.add(Fault(FaultKind.LATENCY, api_key=0, ms=50, count=None))
    for _ in range(5):
        assert faults.take(0, 1, "c", PRODUCE_ORDERS_0) == [rule]
    assert (rule.count, rule.fired) == (None, 5)
    faults.clear()
    assert faults.rules == [] and faults.take(0, 1, "c", PRODUCE_ORDERS_0) == []


def test_every_matching_rule_fires_and_counts_down_in_the_order_added() -> None:
    faults = Faults()
    slow = faults.add(Fault(FaultKind.LATENCY, ms=100, count=None))
    broken = faults.add(error(api_key=0, count=1))
    throttled = faults.add(Fault(FaultKind.THROTTLE, api_key=0, ms=200, count=2))
    assert faults.take(0, 1, "c", PRODUCE_ORDERS_0) == [slow, broken, throttled]
    assert faults.rules == [slow, throttled]
    assert faults.take(0, 1, "c", PRODUCE_ORDERS_0) == [slow, throttled]
    assert faults.rules == [slow]
    assert (slow.fired, broken.fired, throttled.fired) == (2, 1, 2)


def test_no_rules_no_work() -> None:
    class Untouchable(dict):  # type: ignore[type-arg]
        def values(self) -> Any:
            raise AssertionError("the body was walked with no rules to match")

    assert Faults().take(0, 1, "c", Untouchable()) == []


@pytest.mark.parametrize(("rule", "text"), [
    (Fault(FaultKind.ERROR, 0, ErrorCode.NOT_LEADER_OR_FOLLOWER, count=2, topic="orders", partition=1),
     "error NOT_LEADER_OR_FOLLOWER for Produce topic=orders partition=1 (2 more)"),
    (Fault(FaultKind.LATENCY, None, ms=300, count=None, broker=2),
     "300 ms latency for any API broker=2 (until cleared)"),
    (Fault(FaultKind.DROP_AFTER, 0, client_id="app"),
     "connection dropped after the request is applied for Produce client_id=app (1 more)"),
    (Fault(FaultKind.DROP_BEFORE, 1), "connection dropped before the request is applied for Fetch (1 more)"),
    (Fault(FaultKind.THROTTLE, 1, ms=100), "100 ms throttle for Fetch (1 more)"),
])
def test_describe(rule: Fault, text: str) -> None:
    assert rule.describe() == text
