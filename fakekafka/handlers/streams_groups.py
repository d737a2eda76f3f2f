"""Streams groups (KIP-1071): StreamsGroupHeartbeat (88) v0-1, StreamsGroupDescribe (89) v0-1 and
StreamsGroupTopologyDescriptionUpdate (93) v0.

The rules live in `fakekafka.model.streams_group`; these handlers translate the wire and, as Kafka 4.4's
KafkaApis does after the coordinator answers, create the internal topics (repartition and changelog topics)
the heartbeat's status reports missing, with the topology's partition counts, replication factors (0: the
broker's default) and configs. With an authorizer, in KafkaApis' order: a heartbeat needs READ on the group
(else GROUP_AUTHORIZATION_FAILED) and, when it carries a topology, DESCRIBE on its source and internal topics
(else TOPIC_AUTHORIZATION_FAILED); creating the internal topics needs CREATE on the cluster or the topics (else
the status says which could not be created). A describe needs DESCRIBE on the group (the groups refused come
first, as Kafka lists them).

StreamsGroupTopologyDescriptionUpdate hands a member's topology description to the broker's topology
description plugin (`group.streams.topology.description.plugin.class`); fakekafka has no plugin, so it answers as Kafka
4.4.0 without one: READ on the group first (else GROUP_AUTHORIZATION_FAILED), then UNSUPPORTED_VERSION saying no
plugin is configured, and `topology_description_required` stays false in heartbeats.

Warm-up tasks: Kafka 4.4.0's coordinator assigns none (its sticky assignor's MemberAssignment has no warm-up
tasks and its AssignmentRefiner returns the assignment unchanged), and neither does fakekafka.
"""

from __future__ import annotations

from typing import Any

from construct import Container

from fakekafka.handlers.authz import authorized_operations, filter_authorized
from fakekafka.handlers.groups import NOT_REQUESTED, java_client_host, may, not_coordinator
from fakekafka.handlers.registry import ErrorContext, RequestContext, handles
from fakekafka.model.acl import AclOperation, ResourceType
from fakekafka.model.errors import ApiError
from fakekafka.model.streams_assignment import Tasks, TaskSet
from fakekafka.model.streams_group import StreamsHeartbeat
from fakekafka.model.streams_topology import Status, Topology
from fakekafka.wire import ApiKey, ErrorCode


def heartbeat_error_response(ctx: ErrorContext, req: Container, code: ErrorCode,
                             message: str | None = None) -> dict[str, Any]:
    return {"throttle_time_ms": 0, "error_code": code, "error_message": message, "member_id": "",
            "member_epoch": 0, "heartbeat_interval_ms": 0, "status": [], "acceptable_recovery_lag": -1}


def _tasks(wire: Any) -> TaskSet | None:
    if wire is None:
        return None
    return {t.subtopology_id: frozenset(t.partitions) for t in wire}


def _other_group_kind(ctx: RequestContext, group_id: str) -> str | None:
    if ctx.cluster.consumer_groups.group(group_id) is not None:
        return "consumer"
    classic = ctx.cluster.groups.group(group_id)
    if classic is not None and (classic.members or classic.pending_members):
        return "classic"
    if group_id in ctx.cluster.shares.groups:
        return "share"
    return None


def _topology_topics(t: Any) -> set[str]:
    return {n for s in t.subtopologies for n in (
        *s.source_topics, *s.repartition_sink_topics, *(c.name for c in s.state_changelog_topics),
        *(r.name for r in s.repartition_source_topics))}


@handles(ApiKey.STREAMS_GROUP_HEARTBEAT, 0, 1, errors=heartbeat_error_response)
def handle_streams_group_heartbeat(ctx: RequestContext, req: Container) -> dict[str, Any]:
    if not may(ctx, AclOperation.READ, req.group_id):
        return heartbeat_error_response(ctx, req, ErrorCode.GROUP_AUTHORIZATION_FAILED)
    if req.topology is not None:
        names = _topology_topics(req.topology)
        if filter_authorized(ctx, AclOperation.DESCRIBE, ResourceType.TOPIC, names) != names:
            return heartbeat_error_response(ctx, req, ErrorCode.TOPIC_AUTHORIZATION_FAILED)
    if not_coordinator(ctx, req.group_id):
        return heartbeat_error_response(ctx, req, ErrorCode.NOT_COORDINATOR)
    cluster = ctx.cluster
    endpoint = req.user_endpoint
    r = StreamsHeartbeat(
        group_id=req.group_id, member_id=req.member_id, member_epoch=req.member_epoch, instance_id=req.instance_id,
        rack_id=req.rack_id, rebalance_timeout_ms=req.rebalance_timeout_ms,
        topology=None if req.topology is None else Topology.from_request(req.topology),
        active=_tasks(req.active_tasks), standby=_tasks(req.standby_tasks), warmup=_tasks(req.warmup_tasks),
        process_id=req.process_id, user_endpoint=None if endpoint is None else (endpoint.host, endpoint.port),
        client_tags=None if req.client_tags is None else {t.key: t.value for t in req.client_tags},
        task_offsets=None if req.task_offsets is None else [(t.subtopology_id, t.partition, t.offset)
                                                             for t in req.task_offsets],
        task_end_offsets=None if req.task_end_offsets is None else [(t.subtopology_id, t.partition, t.offset)
                                                                     for t in req.task_end_offsets],
        shutdown_application=req.shutdown_application, endpoint_information_epoch=req.endpoint_information_epoch,
        client_id=ctx.request.client_id or "", client_host=java_client_host(ctx.client_host),
        uses_regex=req.topology is not None and any(s.source_topic_regex for s in req.topology.subtopologies))
    out = cluster.streams_groups.heartbeat(r, lambda g: _other_group_kind(ctx, g))
    if out["error_code"] == ErrorCode.NONE:
        if req.member_epoch == 0:
            # an empty classic group (its committed offsets alone, as a restart with a data dir loads a streams
            # group's) gives its id and offsets to the streams group, as to a consumer group
            old = cluster.groups.take_empty_group(req.group_id)
            group = cluster.streams_groups.group(req.group_id)
            if old is not None and group is not None:
                group.offsets = {**old.offsets, **group.offsets}
        _create_internal_topics(ctx, req.group_id, out)
    if ctx.version == 0:  # Kafka 4.4.0 answers v0's (int32) field with 0
        out.pop("acceptable_recovery_lag", None)
    return {"throttle_time_ms": 0, **out}


def _create_internal_topics(ctx: RequestContext, group_id: str, out: dict[str, Any]) -> None:
    """The missing internal topics the status names, created as Kafka's KafkaApis does (CREATE on the cluster
    or on each topic); those that could not be created are named in the status."""
    group = ctx.cluster.streams_groups.group(group_id)
    if group is None or group.configured is None or not group.configured.to_create:
        return
    todo = group.configured.to_create
    allowed = filter_authorized(ctx, AclOperation.CREATE, ResourceType.TOPIC, {t.name for t, _ in todo}) \
        if not _may_create_on_cluster(ctx) else {t.name for t, _ in todo}
    refused = sorted(t.name for t, _ in todo if t.name not in allowed)
    failed: list[str] = []
    for topic, partitions in todo:
        if topic.name not in allowed or topic.name in ctx.cluster.topics:
            continue
        try:
            ctx.cluster.create_topic(topic.name, partitions, topic.replication_factor or -1, None,
                                     dict(topic.configs))
        except ApiError as e:
            failed.append(f"{topic.name}: {e.message}")
    if refused:
        out["status"].append({"status_code": Status.MISSING_INTERNAL_TOPICS,
                              "status_detail": f"Unauthorized to CREATE on topics {', '.join(refused)}."})
    for f in failed:
        out["status"].append({"status_code": Status.MISSING_INTERNAL_TOPICS, "status_detail": f})


def _may_create_on_cluster(ctx: RequestContext) -> bool:
    return bool(filter_authorized(ctx, AclOperation.CREATE, ResourceType.CLUSTER, {"kafka-cluster"}))


def describe_error_response(ctx: ErrorContext, req: Container, code: ErrorCode) -> dict[str, Any]:
    return {"throttle_time_ms": 0, "groups": [
        {"error_code": code, "error_message": None, "group_id": g, "group_state": "", "group_epoch": 0,
         "assignment_epoch": 0, "topology": None, "members": [], "authorized_operations": NOT_REQUESTED,
         "assignor_name": None} for g in req.group_ids]}


def _wire_tasks(t: Tasks) -> dict[str, Any]:
    return t.wire()


def _describe_topology(group: Any) -> dict[str, Any] | None:
    if group.topology is None:
        return None
    parts = group.configured.internal_partitions if group.configured is not None else {}

    def topic(t: Any) -> dict[str, Any]:
        return {"name": t.name, "partitions": parts.get(t.name, t.partitions),
                "replication_factor": t.replication_factor,
                "topic_configs": [{"key": k, "value": v} for k, v in t.configs]}
    return {"epoch": group.topology.epoch, "subtopologies": [{
        "subtopology_id": s.subtopology_id, "source_topics": list(s.source_topics),
        "repartition_sink_topics": list(s.repartition_sink_topics),
        "state_changelog_topics": [topic(c) for c in s.state_changelog_topics],
        "repartition_source_topics": [topic(r) for r in s.repartition_source_topics]}
        for s in group.topology.subtopologies]}


@handles(ApiKey.STREAMS_GROUP_DESCRIBE, 0, 1, errors=describe_error_response)
def handle_streams_group_describe(ctx: RequestContext, req: Container) -> dict[str, Any]:
    coordinator = ctx.cluster.streams_groups
    refused: list[str] = []
    out: list[dict[str, Any]] = []
    empty: dict[str, Any] = {"error_code": ErrorCode.NONE, "error_message": None, "group_id": "", "group_state": "",
                             "group_epoch": 0, "assignment_epoch": 0, "topology": None, "members": [],
                             "authorized_operations": NOT_REQUESTED, "assignor_name": None}
    for group_id in req.group_ids:
        if not may(ctx, AclOperation.DESCRIBE, group_id):
            refused.append(group_id)
            continue
        entry: dict[str, Any] = {**empty, "group_id": group_id}
        group = coordinator.group(group_id)
        if not_coordinator(ctx, group_id):
            entry["error_code"] = ErrorCode.NOT_COORDINATOR
        elif group is None:
            entry["error_code"] = ErrorCode.GROUP_ID_NOT_FOUND
            entry["error_message"] = f"Group {group_id} is not a streams group." \
                if _other_group_kind(ctx, group_id) is not None else f"Group {group_id} not found."
        else:
            entry.update(group_state=group.state.value, group_epoch=group.group_epoch,
                         assignment_epoch=group.assignment_epoch, topology=_describe_topology(group),
                         assignor_name="sticky")
            entry["members"] = [{
                "member_id": m.member_id, "member_epoch": m.member_epoch, "instance_id": m.instance_id,
                "rack_id": m.rack_id, "client_id": m.client_id, "client_host": m.client_host,
                "topology_epoch": m.topology_epoch, "process_id": m.process_id,
                "user_endpoint": None if m.user_endpoint is None else {"host": m.user_endpoint[0],
                                                                       "port": m.user_endpoint[1]},
                "client_tags": [{"key": k, "value": v} for k, v in sorted(m.client_tags.items())],
                "task_offsets": [{"subtopology_id": s, "partition": p, "offset": o} for s, p, o in m.task_offsets],
                "task_end_offsets": [{"subtopology_id": s, "partition": p, "offset": o}
                                     for s, p, o in m.task_end_offsets],
                "assignment": _wire_tasks(m.assigned),
                "target_assignment": _wire_tasks(group.target.get(m.member_id, Tasks())),
                "is_classic": False} for m in group.members.values()]
            if req.include_authorized_operations:
                entry["authorized_operations"] = authorized_operations(ctx, ResourceType.GROUP, group_id)
        out.append(entry)
    groups = [{**empty, "group_id": g, "error_code": ErrorCode.GROUP_AUTHORIZATION_FAILED} for g in refused] + out
    return {"throttle_time_ms": 0, "groups": groups}


NO_TOPOLOGY_DESCRIPTION_PLUGIN = "The broker has no streams group topology description plugin configured."


def topology_description_update_error_response(ctx: ErrorContext, req: Container, code: ErrorCode,
                                               message: str | None = None) -> dict[str, Any]:
    return {"throttle_time_ms": 0, "error_code": code, "error_message": message}


@handles(ApiKey.STREAMS_GROUP_TOPOLOGY_DESCRIPTION_UPDATE, 0, 0, errors=topology_description_update_error_response)
def handle_streams_group_topology_description_update(ctx: RequestContext, req: Container) -> dict[str, Any]:
    """As Kafka 4.4.0's KafkaApis and GroupCoordinatorService without a topology description plugin: the group's
    READ is checked first, then the request is refused before the group is looked at (so no NOT_COORDINATOR)."""
    if not may(ctx, AclOperation.READ, req.group_id):
        return topology_description_update_error_response(ctx, req, ErrorCode.GROUP_AUTHORIZATION_FAILED,
                                                          "Group authorization failed.")
    return topology_description_update_error_response(ctx, req, ErrorCode.UNSUPPORTED_VERSION,
                                                      NO_TOPOLOGY_DESCRIPTION_PLUGIN)
