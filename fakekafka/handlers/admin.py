"""Topic administration: CreateTopics (key 19) v2-7, DeleteTopics (key 20) v1-6,
CreatePartitions (key 37) v0-3.

Validation and its messages follow Kafka's controller. Behaviour: timeout_ms is ignored, since the
model applies changes at once. A topic named twice in one request (or, for DeleteTopics, an id given twice) is
answered once, with INVALID_REQUEST; DeleteTopics v6 wants a name or an id, not both (INVALID_REQUEST). An
error a test injects is answered for every topic of the request (none of them has a top-level error code).
A request that would make more than 10000 partitions is refused for all its topics, as Kafka's controller.
With an authorizer, CreateTopics needs CREATE on the cluster or the topic (TOPIC_AUTHORIZATION_FAILED,
"Authorization failed.") and shows a created topic's configs only with DESCRIBE_CONFIGS on it (else
topic_config_error_code TOPIC_AUTHORIZATION_FAILED and no configs), DeleteTopics DELETE (and DESCRIBE to name a
topic given by id), CreatePartitions ALTER, as Kafka's. A client's `controller_mutation_rate` counts the
partitions each valid topic would make, add or delete (validate_only too, as Kafka's controller): see
fakekafka/handlers/throttling.py's MutationQuota.
Deliberate difference: a test can cap the cluster's partitions (BrokerConfig.max_partitions, KIP-578's name;
Kafka has no such limit): past it a topic is refused with POLICY_VIOLATION (internal topics are exempt).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Generator
from typing import Any

from construct import Container

from fakekafka.handlers.authz import authorize, authorize_cluster
from fakekafka.handlers.registry import TURN_WORK, ErrorContext, RequestContext, handles, in_turns
from fakekafka.handlers.throttling import MutationQuota
from fakekafka.model.acl import AclOperation, ResourceType
from fakekafka.model.errors import ApiError
from fakekafka.model.metadata import Topic
from fakekafka.wire import ApiKey, ErrorCode
from fakekafka.wire.primitives import ZERO_UUID

MAX_PARTITIONS_PER_REQUEST = 10_000
"""Kafka's controller refuses a CreateTopics or CreatePartitions request that would make more partitions
than this, for every topic in it (POLICY_VIOLATION; KAFKA-17870, KAFKA-19673), and a CreateTopics whose
metadata records (a topic, its partitions, its configs) would be more than this in one batch."""


def _once(topics: list[Any]) -> list[Any]:
    """Each topic name's first entry: Kafka's controller answers a topic named twice once (INVALID_REQUEST)."""
    first: dict[str, Any] = {}
    for t in topics:
        first.setdefault(t.name, t)
    return list(first.values())


def _created(ctx: RequestContext, topic: Topic) -> dict[str, Any]:
    configs = []
    for name in sorted(ctx.cluster.config.catalog.topic):
        value, source, _ = ctx.cluster.topic_config(topic, name, ctx.broker.node_id)
        configs.append({"name": name, "value": value, "read_only": False, "config_source": source,
                        "is_sensitive": False})
    return {"name": topic.name, "topic_id": topic.topic_id, "error_code": ErrorCode.NONE, "error_message": None,
            "num_partitions": len(topic.partitions), "replication_factor": topic.replication_factor,
            "configs": configs}


def _failed(name: str, code: ErrorCode, message: str | None) -> dict[str, Any]:
    return {"name": name, "topic_id": ZERO_UUID, "error_code": code, "error_message": message,
            "num_partitions": -1, "replication_factor": -1, "configs": []}  # Kafka: [], not null


def create_topics_error_response(ctx: ErrorContext, req: Container, code: ErrorCode) -> dict[str, Any]:
    """An injected error for every topic of the request (there is no top-level error code)."""
    return {"throttle_time_ms": 0, "topics": [_failed(t.name, code, None) for t in _once(req.topics)]}


def delete_topics_error_response(ctx: ErrorContext, req: Container, code: ErrorCode) -> dict[str, Any]:
    wanted = [(t.name, t.topic_id) for t in req.topics] if ctx.version >= 6 else \
        [(name, ZERO_UUID) for name in req.topic_names]
    return {"throttle_time_ms": 0, "responses": [
        {"name": name, "topic_id": topic_id, "error_code": code, "error_message": None}
        for name, topic_id in dict.fromkeys(wanted)]}


def create_partitions_error_response(ctx: ErrorContext, req: Container, code: ErrorCode) -> dict[str, Any]:
    return {"throttle_time_ms": 0, "results": [{"name": t.name, "error_code": code, "error_message": None}
                                               for t in _once(req.topics)]}


@handles(ApiKey.CREATE_TOPICS, 2, 7, errors=create_topics_error_response)
def handle_create_topics(ctx: RequestContext, req: Container) -> Any:
    """Answered in turns of the event loop (`in_turns`): 10,000 partitions made at once do not stop the broker."""
    return in_turns(_create_topics(ctx, req))


def _create_topics(ctx: RequestContext, req: Container) -> Generator[int, None, dict[str, Any]]:
    counts = Counter(t.name for t in req.topics)
    default = ctx.cluster.config.num_partitions
    total = sum(t.num_partitions if t.num_partitions > 0 else len(t.assignments) or default
                for t in _once(req.topics) if counts[t.name] == 1)
    records = sum(1 + len(t.configs) for t in _once(req.topics) if counts[t.name] == 1) + total
    results = []
    quota = MutationQuota(ctx, strict_since=6)
    any_topic = authorize_cluster(ctx, AclOperation.CREATE)
    for t in _once(req.topics):
        if counts[t.name] > 1:
            results.append(_failed(t.name, ErrorCode.INVALID_REQUEST, "Duplicate topic name."))
            continue
        if not (any_topic or authorize(ctx, AclOperation.CREATE, ResourceType.TOPIC, t.name)):
            results.append(_failed(t.name, ErrorCode.TOPIC_AUTHORIZATION_FAILED, "Authorization failed."))
            continue
        if total > MAX_PARTITIONS_PER_REQUEST:
            results.append(_failed(t.name, ErrorCode.POLICY_VIOLATION,
                                   "Excessively large number of partitions per request."))
            continue
        if records > MAX_PARTITIONS_PER_REQUEST:  # its metadata batch: a record per topic, partition, config
            results.append(_failed(t.name, ErrorCode.POLICY_VIOLATION,
                                   "Unable to perform excessively large batch operation."))
            continue
        assignments = {a.partition_index: list(a.broker_ids) for a in t.assignments}
        # with a data dir each topic made writes the whole metadata file: one a turn
        yield 8 + max(t.num_partitions, len(t.assignments), 1) if ctx.cluster.storage is None else TURN_WORK
        try:
            topic = ctx.cluster.create_topic(t.name, t.num_partitions, t.replication_factor, assignments,
                                             {c.name: c.value for c in t.configs}, validate_only=req.validate_only,
                                             admit=quota.admit)
        except ApiError as e:
            results.append(_failed(t.name, e.code, e.message))
            continue
        created = _created(ctx, topic)
        if not authorize(ctx, AclOperation.DESCRIBE_CONFIGS, ResourceType.TOPIC, t.name):  # created, configs
            created.update(configs=[], topic_config_error_code=ErrorCode.TOPIC_AUTHORIZATION_FAILED)  # not shown
        results.append(created)
    return quota.answer({"throttle_time_ms": 0, "topics": results})


@handles(ApiKey.DELETE_TOPICS, 1, 6, errors=delete_topics_error_response)
def handle_delete_topics(ctx: RequestContext, req: Container) -> dict[str, Any]:
    if ctx.version >= 6:
        wanted = [(t.name, t.topic_id) for t in req.topics]
    else:
        wanted = [(name, ZERO_UUID) for name in req.topic_names]
    counts = Counter(wanted)
    results = []
    quota = MutationQuota(ctx, strict_since=5)
    for name, topic_id in dict.fromkeys(wanted):  # a topic named (or an id given) twice is answered once
        if counts[(name, topic_id)] > 1:
            results.append({"name": name, "topic_id": topic_id, "error_code": ErrorCode.INVALID_REQUEST,
                            "error_message": "Duplicate topic name." if name is not None else "Duplicate topic id."})
            continue
        if (name is None) == (topic_id == ZERO_UUID):
            results.append({"name": name, "topic_id": topic_id, "error_code": ErrorCode.INVALID_REQUEST,
                            "error_message": "Neither topic name nor id were specified." if name is None
                            else "You may not specify both topic name and topic id."})
            continue
        if name is None:
            topic = ctx.cluster.topics_by_id.get(topic_id)
            if topic is None:
                results.append({"name": None, "topic_id": topic_id, "error_code": ErrorCode.UNKNOWN_TOPIC_ID,
                                "error_message": "This server does not host this topic ID."})
                continue
            if not authorize(ctx, AclOperation.DESCRIBE, ResourceType.TOPIC, topic.name):  # its name not shown
                results.append({"name": None, "topic_id": topic_id,
                                "error_code": ErrorCode.TOPIC_AUTHORIZATION_FAILED,
                                "error_message": "Topic authorization failed."})
                continue
            name = topic.name
        if not authorize(ctx, AclOperation.DELETE, ResourceType.TOPIC, name):
            results.append({"name": name, "topic_id": topic_id, "error_code": ErrorCode.TOPIC_AUTHORIZATION_FAILED,
                            "error_message": "Topic authorization failed."})
            continue
        try:
            topic = ctx.cluster.delete_topic(name, admit=quota.admit)
        except ApiError as e:
            results.append({"name": name, "topic_id": topic_id, "error_code": e.code, "error_message": e.message})
            continue
        results.append({"name": name, "topic_id": topic.topic_id, "error_code": ErrorCode.NONE,
                        "error_message": None})
    return quota.answer({"throttle_time_ms": 0, "responses": results})


@handles(ApiKey.CREATE_PARTITIONS, 0, 3, errors=create_partitions_error_response)
def handle_create_partitions(ctx: RequestContext, req: Container) -> dict[str, Any]:
    counts = Counter(t.name for t in req.topics)
    added = sum(t.count - len(topic.partitions) for t in _once(req.topics)
                if counts[t.name] == 1 and (topic := ctx.cluster.topics.get(t.name)) is not None)
    results = []
    quota = MutationQuota(ctx, strict_since=3)
    for t in _once(req.topics):
        if counts[t.name] > 1:
            results.append({"name": t.name, "error_code": ErrorCode.INVALID_REQUEST,
                            "error_message": "Duplicate topic name."})
            continue
        if added > MAX_PARTITIONS_PER_REQUEST:
            results.append({"name": t.name, "error_code": ErrorCode.POLICY_VIOLATION,
                            "error_message": "Excessively large number of additional partitions per request."})
            continue
        if not authorize(ctx, AclOperation.ALTER, ResourceType.TOPIC, t.name):
            results.append({"name": t.name, "error_code": ErrorCode.TOPIC_AUTHORIZATION_FAILED,
                            "error_message": None})
            continue
        assignments = [list(a.broker_ids) for a in t.assignments] if t.assignments is not None else None
        try:
            ctx.cluster.create_partitions(t.name, t.count, assignments, validate_only=req.validate_only,
                                         admit=quota.admit)
        except ApiError as e:
            results.append({"name": t.name, "error_code": e.code, "error_message": e.message})
            continue
        results.append({"name": t.name, "error_code": ErrorCode.NONE, "error_message": None})
    return quota.answer({"throttle_time_ms": 0, "results": results})
