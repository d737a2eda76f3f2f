"""DescribeTopicPartitions (key 75), v0 (KIP-966): topics and their partitions, paged by a cursor.

The admin client's describeTopics uses it when the broker offers it (kafka-topics --describe among others),
falling back to Metadata otherwise; it is the answer that carries each partition's eligible leader replicas
(ELR) and last known ELR, which `kafka-topics --describe` prints (empty lists here: fakekafka keeps no ELR,
and Kafka's lists are empty too while every replica is in the ISR).

Behaviour, as Kafka's DescribeTopicPartitionsRequestHandler and its metadata cache answer:
- an empty topic list describes every topic; named topics are de-duplicated; either way topics come sorted by
  name, starting at the cursor's topic (names before it are left out) and, in that topic, at its partition;
- at most min(`response_partition_limit`, the broker's `max.request.partition.size.limit`), and at least one,
  partitions are returned; where the limit cuts a topic short, `next_cursor` names the topic and the first
  partition left out; where it is used up at a topic's end, the cursor names the next topic, partition 0;
- a named topic that does not exist answers UNKNOWN_TOPIC_OR_PARTITION (INVALID_TOPIC_EXCEPTION for an
  invalid name) with a zero topic id; describing every topic never reports one;
- a cursor whose topic is not in a non-empty topic list, or whose partition is negative, is INVALID_REQUEST
  for the whole request (every topic asked about carries it);
- a partition whose leader is down answers leader -1 and lists its replicas on dead brokers as offline; the
  partition's own error code is always NONE;
- a topic the client may not DESCRIBE (ACLs) is left out of "every topic"; named, it is answered last with
  TOPIC_AUTHORIZATION_FAILED, a zero id and no partitions, whether it exists or not; the others carry the
  client's authorized operations on them (every topic operation without an authorizer).
"""

from __future__ import annotations

from typing import Any

from construct import Container

from fakekafka.handlers.authz import authorize, authorized_operations
from fakekafka.handlers.registry import ErrorContext, RequestContext, handles
from fakekafka.model.acl import AclOperation, ResourceType
from fakekafka.model.cluster import ClusterState
from fakekafka.model.errors import ApiError
from fakekafka.model.internal_topics import INTERNAL_TOPICS
from fakekafka.model.metadata import Topic, validate_topic_name
from fakekafka.wire import ApiKey, ErrorCode
from fakekafka.wire.primitives import ZERO_UUID

PARTITION_LIMIT_CONFIG = "max.request.partition.size.limit"


def describe_topic_partitions_error_response(ctx: ErrorContext, req: Container, code: ErrorCode) -> dict[str, Any]:
    """Kafka's DescribeTopicPartitionsRequest.getErrorResponse: each topic asked about, with the error."""
    return {"throttle_time_ms": 0, "next_cursor": None,
            "topics": [{"error_code": code, "name": t.name, "topic_id": ZERO_UUID, "is_internal": False,
                        "partitions": [], "topic_authorized_operations": -2147483648} for t in req.topics]}


def _partitions(cluster: ClusterState, topic: Topic, start: int, limit: int) -> tuple[list[dict[str, Any]], int]:
    """Partitions `start`.. of the topic, at most `limit`; and the index of the first one left out (-1: none)."""
    upper = min(len(topic.partitions), start + limit)
    out = []
    for p in topic.partitions[start:upper]:
        out.append({
            "error_code": ErrorCode.NONE,
            "partition_index": p.index,
            "leader_id": p.leader_id if p.online and cluster.brokers[p.leader_id].alive else -1,
            "leader_epoch": p.leader_epoch,
            "replica_nodes": list(p.replicas),
            "isr_nodes": list(p.isr),
            "eligible_leader_replicas": [],
            "last_known_elr": [],
            "offline_replicas": [r for r in p.replicas if not cluster.brokers[r].alive],
        })
    return out, (upper if upper < len(topic.partitions) else -1)


def _missing(ctx: RequestContext, name: str) -> dict[str, Any]:
    try:
        validate_topic_name(name)
        code = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    except ApiError as e:
        code = e.code
    return {"error_code": code, "name": name, "topic_id": ZERO_UUID, "is_internal": name in INTERNAL_TOPICS,
            "partitions": [], "topic_authorized_operations": authorized_operations(ctx, ResourceType.TOPIC, name)}


@handles(ApiKey.DESCRIBE_TOPIC_PARTITIONS, 0, 0, errors=describe_topic_partitions_error_response)
def handle_describe_topic_partitions(ctx: RequestContext, req: Container) -> dict[str, Any]:
    cluster = ctx.cluster
    cursor = req.cursor
    cursor_topic = cursor.topic_name if cursor is not None else ""
    every = not req.topics
    names = cluster.topics.keys() if every else {t.name for t in req.topics}
    wanted = sorted(n for n in names if n >= cursor_topic)
    if cursor is not None and not every and cursor_topic not in wanted:
        return describe_topic_partitions_error_response(ctx, req, ErrorCode.INVALID_REQUEST)
    if cursor is not None and cursor.partition_index < 0:
        return describe_topic_partitions_error_response(ctx, req, ErrorCode.INVALID_REQUEST)
    broker_limit = int(cluster.config.value(PARTITION_LIMIT_CONFIG, ctx.broker.node_id)[0] or 2000)
    remaining = max(min(broker_limit, req.response_partition_limit), 1)
    # topics the client may not describe: left out of "every topic"; named, answered last with
    # TOPIC_AUTHORIZATION_FAILED and nothing else (their existence not disclosed)
    refused = [] if every else [
        {"error_code": ErrorCode.TOPIC_AUTHORIZATION_FAILED, "name": n, "topic_id": ZERO_UUID, "is_internal": False,
         "partitions": [], "topic_authorized_operations": -2147483648}
        for n in wanted if not authorize(ctx, AclOperation.DESCRIBE, ResourceType.TOPIC, n)]
    denied = {t["name"] for t in refused} if not every else \
        {n for n in wanted if not authorize(ctx, AclOperation.DESCRIBE, ResourceType.TOPIC, n)}
    topics: list[dict[str, Any]] = []
    next_cursor = None
    for name in (n for n in wanted if n not in denied):
        if remaining == 0:  # the limit ran out at the previous topic's end: the next one starts the next page
            next_cursor = {"topic_name": name, "partition_index": 0}
            break
        topic = cluster.topics.get(name)
        if topic is None:
            if not every:
                topics.append(_missing(ctx, name))
            continue
        start = cursor.partition_index if cursor is not None and name == cursor_topic else 0
        partitions, next_index = _partitions(cluster, topic, start, remaining)
        topics.append({"error_code": ErrorCode.NONE, "name": name, "topic_id": topic.topic_id,
                       "is_internal": topic.is_internal, "partitions": partitions,
                       "topic_authorized_operations": authorized_operations(ctx, ResourceType.TOPIC, name)})
        if next_index != -1:
            next_cursor = {"topic_name": name, "partition_index": next_index}
            break
        remaining -= len(partitions)
    return {"throttle_time_ms": 0, "topics": topics + refused, "next_cursor": next_cursor}
