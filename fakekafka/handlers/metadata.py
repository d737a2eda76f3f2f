"""Metadata (key 3), v0-13.

Behaviour: topics that auto-creation makes are returned at once with their leaders (Kafka 4.4 answers
UNKNOWN_TOPIC_OR_PARTITION until its controller has created the topic, tens to hundreds of ms, then the
topic with its leader; older brokers answered LEADER_NOT_AVAILABLE; clients just retry). v0 asks for all
topics with an empty list, v1+ with null. v10+ reports topic ids and v12 looks topics up by id: an
entry with a non-zero id is looked up by it whatever its name says (Java sends "" as the name); v10-11 refuse
an id or a null name with INVALID_REQUEST for every topic asked about, as Kafka does. A topic
not created answers INVALID_TOPIC_EXCEPTION if its name is invalid, else UNKNOWN_TOPIC_OR_PARTITION.
Asked for topic authorized operations (v8+), every topic answered, an unknown one included, carries the
operations the client may do (without an authorizer: all of a topic's); v8-10 asked for the cluster's get them
when the client may describe the cluster, else 0. With an authorizer (fakekafka/handlers/authz.py) a topic the
client may not DESCRIBE is left out of an all-topics answer and answered TOPIC_AUTHORIZATION_FAILED when named
(its existence not disclosed), as is a topic auto-creation would make without CREATE on the cluster or the
topic; those come after the others, as in Kafka's answer.
v13 (KIP-1102) adds a top-level error code: Kafka sets it only in an error answer to the whole request (so a
client can be told to rebootstrap), as the error responder here does.

A topic's entry is encoded once per version and reused (`TopicParts`) until the cluster's metadata changes
(topics made or deleted, partitions added, leaders, ISRs, replicas, brokers: every change counts in
`metadata_changes`): a Metadata for all of 10,000 partitions then costs a lookup per topic, not a dict and an
encoding per partition. Entries with an error, answers asked for authorized operations and requests a hook,
fault or chaos sees (they may read or edit the answer) are built as dicts, as before.
"""

from __future__ import annotations

import uuid
import weakref
from collections.abc import Generator
from typing import Any

from construct import Container

from fakekafka.handlers.authz import authorize, authorize_cluster, authorized_operations
from fakekafka.handlers.registry import TURN_WORK, ErrorContext, RequestContext, handles, in_turns
from fakekafka.model.acl import CLUSTER_NAME, AclOperation, ResourceType
from fakekafka.model.cluster import ClusterState
from fakekafka.model.errors import ApiError
from fakekafka.model.metadata import Broker, Topic, validate_topic_name
from fakekafka.wire import ApiKey, ErrorCode
from fakekafka.wire.primitives import ZERO_UUID, Encoded
from fakekafka.wire.protocol import encode_part, response_part

AUTHORIZED_OPERATIONS_NOT_REQUESTED = -2147483648


def topic_metadata(cluster: ClusterState, topic: Topic) -> dict[str, Any]:
    return {
        "error_code": ErrorCode.NONE,
        "name": topic.name,
        "topic_id": topic.topic_id,
        "is_internal": topic.is_internal,
        "partitions": [{
            "error_code": ErrorCode.NONE if p.online else ErrorCode.LEADER_NOT_AVAILABLE,
            "partition_index": p.index,
            "leader_id": p.leader_id,
            "leader_epoch": p.leader_epoch,
            "replica_nodes": list(p.replicas),
            "isr_nodes": list(p.isr),
            "offline_replicas": [r for r in p.replicas if not cluster.brokers[r].alive],
        } for p in topic.partitions],
        "topic_authorized_operations": AUTHORIZED_OPERATIONS_NOT_REQUESTED,
    }


class TopicParts:
    """One cluster's topic entries as encoded for each Metadata version asked for, valid while the cluster's
    `metadata_changes` count stays where it was when they were made."""

    def __init__(self) -> None:
        self.stamp = -1
        self.entries: dict[tuple[str, int], tuple[uuid.UUID, int, Encoded]] = {}
        """By (topic name, version): the topic's id (not the topic: a deleted topic's logs must not stay reachable
        until the next Metadata request), its partition count and its entry."""
        self.encoded = 0
        """Entries encoded so far (what the tests count)."""

    def entry(self, cluster: ClusterState, topic: Topic, version: int) -> Encoded | dict[str, Any]:
        """The topic's entry for `version`: encoded (made now or before), or a dict when it carries an error."""
        stamp = cluster.observers.metadata_changes
        if stamp != self.stamp:
            self.entries.clear()
            self.stamp = stamp
        key = (topic.name, version)
        kept = self.entries.get(key)
        if kept is not None and kept[0] == topic.topic_id and kept[1] == len(topic.partitions):
            return kept[2]
        entry = topic_metadata(cluster, topic)
        if any(p["error_code"] for p in entry["partitions"]):
            return entry  # its error codes stay visible to the request log
        encoded = encode_part(_topic_part(version), entry)
        self.entries[key] = (topic.topic_id, len(topic.partitions), encoded)
        self.encoded += 1
        return encoded


_parts: weakref.WeakKeyDictionary[ClusterState, TopicParts] = weakref.WeakKeyDictionary()
_topic_parts: dict[int, Any] = {}


def _topic_part(version: int) -> Any:
    part = _topic_parts.get(version)
    if part is None:
        part = _topic_parts[version] = response_part(ApiKey.METADATA, version, "topics")
    return part


def topic_parts(cluster: ClusterState) -> TopicParts:
    """The cluster's kept topic entries."""
    parts = _parts.get(cluster)
    if parts is None:
        parts = _parts[cluster] = TopicParts()
    return parts


def _error_topic(name: str | None, code: ErrorCode, topic_id: uuid.UUID = ZERO_UUID) -> dict[str, Any]:
    return {"error_code": code, "name": name, "topic_id": topic_id, "is_internal": False, "partitions": [],
            "topic_authorized_operations": AUTHORIZED_OPERATIONS_NOT_REQUESTED}


def metadata_error_response(ctx: ErrorContext, req: Container, code: ErrorCode) -> dict[str, Any]:
    """An injected error for every topic asked about (every topic, for all of them) and, from v13, at the top
    level, as Kafka's MetadataRequest.getErrorResponse. The brokers are listed as usual, so the client still
    knows the cluster."""
    facts = ctx.facts
    if req.topics is None or (ctx.version == 0 and not req.topics):
        wanted = facts.topics
    else:
        wanted = [(e.get("name"), e.get("topic_id", ZERO_UUID)) for e in req.topics]
    return {**_cluster_fields(facts.brokers, facts.cluster_id, facts.controller_id, ctx.listener), "error_code": code,
            "topics": [_error_topic(name, code, topic_id) for name, topic_id in wanted]}


def _cluster_part(ctx: RequestContext) -> dict[str, Any]:
    """The answer but its topics: brokers, cluster id, controller."""
    cluster = ctx.cluster
    return _cluster_fields(cluster.alive_brokers(), cluster.config.cluster_id, cluster.controller_id, ctx.listener)


def _cluster_fields(brokers: list[Broker], cluster_id: str | None, controller_id: int,
                    listener: str | None) -> dict[str, Any]:
    return {
        "throttle_time_ms": 0,
        "brokers": [{"node_id": b.node_id, **_address(b.endpoint(listener)), "rack": b.rack} for b in brokers],
        "cluster_id": cluster_id,
        "controller_id": controller_id,
        "cluster_authorized_operations": AUTHORIZED_OPERATIONS_NOT_REQUESTED,
    }


def _address(endpoint: tuple[str, int]) -> dict[str, Any]:
    return {"host": endpoint[0], "port": endpoint[1]}


CREATE_WORK = 8
"""A topic auto-created costs about this many topics looked up (`in_turns`' units)."""


@handles(ApiKey.METADATA, 0, 13, errors=metadata_error_response)
def handle_metadata(ctx: RequestContext, req: Container) -> Any:
    """Answered in turns of the event loop (`in_turns`): one naming 100,000 new topics does not stop the broker."""
    return in_turns(_metadata(ctx, req))


def _metadata(ctx: RequestContext, req: Container) -> Generator[int, None, dict[str, Any]]:
    cluster = ctx.cluster
    v = ctx.version
    requested = req.topics
    allow_auto = req.get("allow_auto_topic_creation", True) if v >= 4 else True
    topics: list[dict[str, Any]] = []
    if v < 12 and requested and any(e.get("name") is None or e.get("topic_id", ZERO_UUID) != ZERO_UUID
                                    for e in requested):
        # v10-11 carry a topic id field but Kafka refuses lookups by id (and null names) before v12: every
        # topic asked about gets INVALID_REQUEST, a null name answered as "" (checked against Kafka 4.4)
        return {**_cluster_part(ctx), "topics": [_error_topic(e.get("name") or "", ErrorCode.INVALID_REQUEST)
                                                 for e in requested]}
    refused_create: list[dict[str, Any]] = []
    refused_describe: list[dict[str, Any]] = []
    if req.get("include_topic_authorized_operations") or cluster.hooks.active:
        def topic_entry(t: Topic) -> Any:  # a dict: filled in below, or seen by a hook
            return topic_metadata(cluster, t)
    else:
        parts = topic_parts(cluster)

        def topic_entry(t: Topic) -> Any:
            return parts.entry(cluster, t, v)
    if requested is None or (v == 0 and not requested):  # all topics: those it may not describe left out
        for t in list(cluster.topics.values()):  # as they were when asked (others may change them between turns)
            if authorize(ctx, AclOperation.DESCRIBE, ResourceType.TOPIC, t.name):
                topics.append(topic_entry(t))
            yield 1
    else:
        for entry in requested:
            yield 1
            name = entry.get("name")
            topic_id = entry.get("topic_id", ZERO_UUID)
            if name is None or topic_id != ZERO_UUID:  # by id: the Java client leaves the name "", not null
                t = cluster.topics_by_id.get(topic_id)
                if t is not None and not authorize(ctx, AclOperation.DESCRIBE, ResourceType.TOPIC, t.name):
                    refused_describe.append(_error_topic(None, ErrorCode.TOPIC_AUTHORIZATION_FAILED, topic_id))
                    continue
                topics.append(topic_entry(t) if t else _error_topic(None, ErrorCode.UNKNOWN_TOPIC_ID, topic_id))
                continue
            if not authorize(ctx, AclOperation.DESCRIBE, ResourceType.TOPIC, name):  # existence not disclosed
                refused_describe.append(_error_topic(name, ErrorCode.TOPIC_AUTHORIZATION_FAILED))
                continue
            t = cluster.topics.get(name)
            if t is None and allow_auto and cluster.config.auto_create_topics:
                if not (authorize_cluster(ctx, AclOperation.CREATE)
                        or authorize(ctx, AclOperation.CREATE, ResourceType.TOPIC, name)):
                    refused_create.append(_error_topic(name, ErrorCode.TOPIC_AUTHORIZATION_FAILED))
                    continue
                # with a data dir each topic made writes the whole metadata file: one a turn
                yield CREATE_WORK if cluster.storage is None else TURN_WORK
                try:
                    validate_topic_name(name)
                    t = cluster.auto_create(name)
                except ApiError as e:
                    topics.append(_error_topic(name, e.code))
                    continue
            if t is None:  # not created: an invalid name says so, as Kafka's (Topic.validate) does
                try:
                    validate_topic_name(name)
                    code = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
                except ApiError as e:
                    code = e.code
                topics.append(_error_topic(name, code))
                continue
            topics.append(topic_entry(t))
    if req.get("include_topic_authorized_operations"):
        for t in topics:
            t["topic_authorized_operations"] = authorized_operations(ctx, ResourceType.TOPIC, t["name"])
    answer = {**_cluster_part(ctx), "topics": topics + refused_create + refused_describe}
    if req.get("include_cluster_authorized_operations"):
        answer["cluster_authorized_operations"] = authorized_operations(ctx, ResourceType.CLUSTER, CLUSTER_NAME) \
            if authorize_cluster(ctx, AclOperation.DESCRIBE) else 0
    return answer
