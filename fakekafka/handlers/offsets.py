"""Committed offsets: OffsetCommit (8) v2-10, OffsetFetch (9) v1-10, OffsetDelete (47) v0.

Commits come from the current generation and member only; generation -1 commits (consumers using
assign() with a group id) are accepted while the group is Empty. Every commit is written to the group's
`__consumer_offsets` partition as OffsetCommit records (one batch per request), an OffsetDelete as tombstones
(fakekafka/model/offsets_topic.py). With require_stable (v7+, what a
read_committed consumer sends) a partition with offsets staged by an open transaction is UNSTABLE_OFFSET_COMMIT
(offset -1), and the client asks again, as with Kafka. An error injected by a test is answered for every
partition of a commit (OffsetCommit has no top-level error code), and for every group of a v8+ fetch.
With an authorizer, a commit needs READ on the group (else GROUP_AUTHORIZATION_FAILED for every partition) and
READ on each topic, a fetch DESCRIBE on the group and on each topic (a fetch of every offset leaves such topics
out), an OffsetDelete DELETE on the group; a topic refused is TOPIC_AUTHORIZATION_FAILED per partition.
A KIP-848 consumer group's members commit and fetch with their member epoch (v9+): STALE_MEMBER_EPOCH when it
is not the current one, UNKNOWN_MEMBER_ID for a member it does not have, UNSUPPORTED_VERSION for a member's commit
before v9, as Kafka's ConsumerGroup.validateOffsetCommit/validateOffsetFetch; epoch -1 commits only while it is
empty. v10 of both names topics by id (KIP-848), for classic groups too; offsets stay kept by topic name, so an unknown
id is UNKNOWN_TOPIC_ID for each of its partitions, and a fetch of every offset lists only topics that exist.
"""

from __future__ import annotations

from typing import Any

from construct import Container

from fakekafka.handlers.authz import authorize
from fakekafka.handlers.groups import epoch_group, may, not_coordinator
from fakekafka.handlers.registry import ErrorContext, RequestContext, handles
from fakekafka.model.acl import AclOperation, ResourceType
from fakekafka.wire import ApiKey, ErrorCode
from fakekafka.wire.primitives import ZERO_UUID

BY_ID_FROM = 10
"""OffsetCommit and OffsetFetch name topics by id from v10."""


def _topic_name(ctx: RequestContext, t: Container) -> str | None:
    """The topic a request entry names (by id from v10; None for an unknown id)."""
    if ctx.version < BY_ID_FROM:
        return t.name
    topic = ctx.cluster.topics_by_id.get(t.topic_id)
    return None if topic is None else topic.name


def _topic_ref(ctx: RequestContext, name: str) -> dict[str, Any]:
    """A response entry's topic: its name, and from v10 its id."""
    topic = ctx.cluster.topics.get(name)
    return {"name": name, "topic_id": topic.topic_id if topic is not None else ZERO_UUID}


def offset_commit_error_response(ctx: ErrorContext, req: Container, code: ErrorCode) -> dict[str, Any]:
    return {"throttle_time_ms": 0, "topics": [
        {"name": t.get("name", ""), "topic_id": t.get("topic_id", ZERO_UUID),
         "partitions": [{"partition_index": p.partition_index, "error_code": code} for p in t.partitions]}
        for t in req.topics]}


@handles(ApiKey.OFFSET_COMMIT, 2, 10, errors=offset_commit_error_response)
def handle_offset_commit(ctx: RequestContext, req: Container) -> dict[str, Any]:
    cluster = ctx.cluster
    if not may(ctx, AclOperation.READ, req.group_id):
        return offset_commit_error_response(ctx, req, ErrorCode.GROUP_AUTHORIZATION_FAILED)
    wanted: dict[tuple[str, int], tuple[int, int, str | None]] = {}
    known: dict[tuple[str, int], ErrorCode] = {}
    unknown_ids: set[Any] = set()
    for t in req.topics:
        name = _topic_name(ctx, t)
        if name is None:
            unknown_ids.add(t.topic_id)
            continue
        readable = authorize(ctx, AclOperation.READ, ResourceType.TOPIC, name)
        for p in t.partitions:
            tp = (name, p.partition_index)
            if not readable:
                known[tp] = ErrorCode.TOPIC_AUTHORIZATION_FAILED
            elif cluster.partition(name, p.partition_index) is None:
                known[tp] = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
            else:
                wanted[tp] = (p.committed_offset, p.get("committed_leader_epoch", -1), p.committed_metadata)
    coordinator, consumer_group = epoch_group(cluster, req.group_id)
    if not_coordinator(ctx, req.group_id):
        codes = {tp: ErrorCode.NOT_COORDINATOR for tp in wanted}
    elif consumer_group is not None:
        codes = coordinator.commit(consumer_group, req.member_id, req.generation_id_or_member_epoch,
                                               ctx.version, wanted)
    elif wanted:
        codes = cluster.groups.commit(req.group_id, req.generation_id_or_member_epoch, req.member_id,
                                      req.get("group_instance_id"), wanted)
    else:
        codes = {}
    codes.update(known)
    topics = []
    for t in req.topics:
        name = _topic_name(ctx, t)
        topics.append({"name": t.get("name", ""), "topic_id": t.get("topic_id", ZERO_UUID), "partitions": [
            {"partition_index": p.partition_index,
             "error_code": ErrorCode.UNKNOWN_TOPIC_ID if name is None else codes[(name, p.partition_index)]}
            for p in t.partitions]})
    return {"throttle_time_ms": 0, "topics": topics}


def _fetch_group(ctx: RequestContext, group_id: str, topics: list[Container] | None,
                 require_stable: bool = False, member: tuple[str | None, int] = (None, -1)) -> tuple[ErrorCode, list]:
    if not may(ctx, AclOperation.DESCRIBE, group_id):
        return ErrorCode.GROUP_AUTHORIZATION_FAILED, []
    if not_coordinator(ctx, group_id):
        return ErrorCode.NOT_COORDINATOR, []
    coordinator, consumer_group = epoch_group(ctx.cluster, group_id)
    if consumer_group is not None:  # KIP-848 and streams groups: a member fetches at its current epoch (v9+)
        code = coordinator.validate_fetch(consumer_group, *member)
        if code != ErrorCode.NONE:
            return code, []
    unknown: list[dict[str, Any]] = []
    refused: list[dict[str, Any]] = []
    partitions = None
    if topics is not None:
        partitions = []
        for t in topics:
            name = _topic_name(ctx, t)
            if name is None:
                unknown.append({"name": "", "topic_id": t.topic_id, "partitions": [
                    {"partition_index": i, "committed_offset": -1, "committed_leader_epoch": -1, "metadata": "",
                     "error_code": ErrorCode.UNKNOWN_TOPIC_ID} for i in t.partition_indexes]})
            elif not authorize(ctx, AclOperation.DESCRIBE, ResourceType.TOPIC, name):
                refused.append({**_topic_ref(ctx, name), "partitions": [
                    {"partition_index": i, "committed_offset": -1, "committed_leader_epoch": -1, "metadata": "",
                     "error_code": ErrorCode.TOPIC_AUTHORIZATION_FAILED} for i in t.partition_indexes]})
            else:
                partitions += [(name, i) for i in t.partition_indexes]
    if consumer_group is not None:
        stored = consumer_group.offsets
        found = dict(sorted(stored.items())) if partitions is None else {tp: stored.get(tp) for tp in partitions}
    else:
        found = ctx.cluster.groups.fetch_offsets(group_id, partitions)
    by_topic: dict[str, list[dict[str, Any]]] = {}
    for (topic, index), om in found.items():
        pending = coordinator.has_pending_txn_offset if consumer_group is not None \
            else ctx.cluster.groups.has_pending_txn_offset
        if require_stable and pending(group_id, (topic, index)):
            by_topic.setdefault(topic, []).append({
                "partition_index": index, "committed_offset": -1, "committed_leader_epoch": -1, "metadata": "",
                "error_code": ErrorCode.UNSTABLE_OFFSET_COMMIT})
            continue
        by_topic.setdefault(topic, []).append({
            "partition_index": index, "committed_offset": om.offset if om else -1,
            "committed_leader_epoch": om.leader_epoch if om else -1, "metadata": om.metadata if om else "",
            "error_code": ErrorCode.NONE})
    if ctx.version >= BY_ID_FROM:  # offsets of a deleted topic have no id to be named by
        by_topic = {name: parts for name, parts in by_topic.items() if name in ctx.cluster.topics}
    if partitions is None:  # all of the group's: those of topics it may not describe left out
        by_topic = {name: parts for name, parts in by_topic.items()
                    if authorize(ctx, AclOperation.DESCRIBE, ResourceType.TOPIC, name)}
    listed = [{**_topic_ref(ctx, name), "partitions": parts} for name, parts in by_topic.items()]
    return ErrorCode.NONE, listed + refused + unknown


def offset_fetch_error_response(ctx: ErrorContext, req: Container, code: ErrorCode) -> dict[str, Any]:
    """v8+: per group; v2-7: the top-level code; v1 has none, so each requested partition carries it."""
    if ctx.version >= 8:
        return {"throttle_time_ms": 0, "groups": [{"group_id": g.group_id, "topics": [], "error_code": code}
                                                  for g in req.groups]}
    topics = [] if ctx.version >= 2 or req.topics is None else [
        {"name": t.name, "partitions": [{"partition_index": i, "committed_offset": -1, "committed_leader_epoch": -1,
                                         "metadata": "", "error_code": code} for i in t.partition_indexes]}
        for t in req.topics]
    return {"throttle_time_ms": 0, "topics": topics, "error_code": code}


@handles(ApiKey.OFFSET_FETCH, 1, 10, errors=offset_fetch_error_response)
def handle_offset_fetch(ctx: RequestContext, req: Container) -> dict[str, Any]:
    if ctx.version >= 8:
        groups = []
        for g in req.groups:
            code, topics = _fetch_group(ctx, g.group_id, g.topics, req.require_stable,
                                        (g.get("member_id"), g.get("member_epoch", -1)))
            groups.append({"group_id": g.group_id, "topics": topics, "error_code": code})
        return {"throttle_time_ms": 0, "groups": groups}
    code, topics = _fetch_group(ctx, req.group_id, req.topics, req.get("require_stable", False))
    if ctx.version < 2 and code != ErrorCode.NONE:
        for t in topics:
            for p in t["partitions"]:
                p["error_code"] = code
    return {"throttle_time_ms": 0, "topics": topics, "error_code": code}


@handles(ApiKey.OFFSET_DELETE, 0, 0)
def handle_offset_delete(ctx: RequestContext, req: Container) -> dict[str, Any]:
    if not may(ctx, AclOperation.DELETE, req.group_id):
        return {"error_code": ErrorCode.GROUP_AUTHORIZATION_FAILED, "throttle_time_ms": 0, "topics": []}
    if not_coordinator(ctx, req.group_id):
        return {"error_code": ErrorCode.NOT_COORDINATOR, "throttle_time_ms": 0, "topics": []}
    partitions = [(t.name, p.partition_index) for t in req.topics for p in t.partitions]
    coordinator, consumer_group = epoch_group(ctx.cluster, req.group_id)
    if consumer_group is not None:
        subscribed = coordinator.subscribed_topics(consumer_group) if consumer_group.members else set()
        top, codes = ErrorCode.NONE, {}
        for tp in partitions:
            if tp[0] in subscribed:
                codes[tp] = ErrorCode.GROUP_SUBSCRIBED_TO_TOPIC
            else:
                consumer_group.offsets.pop(tp, None)
                codes[tp] = ErrorCode.NONE
        coordinator.records.offsets(
            req.group_id, {tp: None for tp, code in codes.items() if code == ErrorCode.NONE})
    else:
        top, codes = ctx.cluster.groups.delete_offsets(req.group_id, partitions)
    for tp in partitions:
        if ctx.cluster.partition(*tp) is None:
            codes[tp] = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    return {"error_code": top, "throttle_time_ms": 0, "topics": [] if top != ErrorCode.NONE else [
        {"name": t.name, "partitions": [{"partition_index": p.partition_index,
                                         "error_code": codes.get((t.name, p.partition_index), ErrorCode.NONE)}
                                        for p in t.partitions]} for t in req.topics]}
