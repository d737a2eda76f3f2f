"""The consumer group protocol (KIP-848): ConsumerGroupHeartbeat (68) v0-1 and ConsumerGroupDescribe (69) v0-1.

The rules live in `fakekafka.model.consumer_group`; these handlers translate the wire. Neither parks: the
coordinator answers each heartbeat at once with the member's next epoch and, when it changed (or the member sent a
full request, or has not yet reported owning it), its assignment. v1 (KIP-1082) requires the member to make up its
own member id, as Kafka 4.4 does. ConsumerGroupDescribe v1 adds each member's type (1: consumer protocol, 0: a
classic member of a mixed group). A joining member (epoch 0) of a classic group with members upgrades it to a
consumer group with classic members (`fakekafka.model.mixed_groups`) when `group.consumer.migration.policy` allows
it (else GROUP_ID_NOT_FOUND with Kafka's reason); an empty classic group hands over its id and offsets. With an
authorizer, as Kafka 4.4's KafkaApis: a heartbeat needs READ on the group (else GROUP_AUTHORIZATION_FAILED) and
DESCRIBE on every topic it names (else TOPIC_AUTHORIZATION_FAILED, before the coordinator), and a regex resolves
only to topics the member may describe; a describe needs DESCRIBE on the group (the groups refused come first, as
Kafka lists them) and on every topic its members are assigned or targeted, else the group is
TOPIC_AUTHORIZATION_FAILED without members.

Deliberate differences from Kafka 4.4 (compat/KNOWN_DIFFERENCES.md, "Consumer groups (KIP-848)"):
- a regular expression subscription is resolved within the heartbeat (Kafka resolves it asynchronously, so
  its first answer has no partitions of the matched topics), with Python's `re` instead of RE2J; an
  invalid one's error message is Python's words.
- the target assignment is computed within the heartbeat that needs it: `group.consumer.assignment.interval.ms`
  defaults to 0 here (Kafka 4.4: 1000, computed off the request path); set it to get Kafka's batching.
- the `uniform` assignor's choices are its own (balanced and sticky as Kafka's, not the same partitions).
- a member is sent its assignment again, at each heartbeat reporting nothing owned, until it reports owning it
  (librdkafka drops an answer that comes after its heartbeat timeout and would keep partitions to revoke).
"""

from __future__ import annotations

from typing import Any

from construct import Container

from fakekafka.handlers.authz import authorized_operations, filter_authorized, topic_checker
from fakekafka.handlers.groups import NOT_REQUESTED, java_client_host, may, not_coordinator
from fakekafka.handlers.registry import ErrorContext, RequestContext, handles
from fakekafka.model.acl import AclOperation, ResourceType
from fakekafka.model.consumer_group import HeartbeatRequest
from fakekafka.wire import ApiKey, ErrorCode

MEMBER_TYPE_CLASSIC = 0
MEMBER_TYPE_CONSUMER = 1


def classic_group_status(ctx: RequestContext, group_id: str) -> str | None:
    """None if no classic group has the id; "empty" if one does with no members; else "busy"."""
    group = ctx.cluster.groups.group(group_id)
    if group is None:
        return None
    return "empty" if not group.members and not group.pending_members else "busy"


def consumer_protocol_enabled(ctx: RequestContext) -> bool:
    """On an older release, whether its `group.coordinator.rebalance.protocols` lists `consumer`: 3.7-3.9 advertise
    ConsumerGroupHeartbeat/Describe but, at their default (classic), answer them UNSUPPORTED_VERSION; listed, the
    KIP-848 preview is on (their KafkaApis' isConsumerGroupProtocolEnabled)."""
    config = ctx.cluster.config
    if config.release is None or config.release.consumer_protocol:
        return True
    protocols = config.value("group.coordinator.rebalance.protocols")[0] or ""
    return "consumer" in (p.strip().lower() for p in protocols.split(","))


def heartbeat_error_response(ctx: ErrorContext, req: Container, code: ErrorCode) -> dict[str, Any]:
    return {"throttle_time_ms": 0, "error_code": code, "error_message": None, "member_id": None,
            "member_epoch": 0, "heartbeat_interval_ms": 0, "assignment": None}


@handles(ApiKey.CONSUMER_GROUP_HEARTBEAT, 0, 1, errors=heartbeat_error_response)
def handle_consumer_group_heartbeat(ctx: RequestContext, req: Container) -> dict[str, Any]:
    if not consumer_protocol_enabled(ctx):
        return heartbeat_error_response(ctx, req, ErrorCode.UNSUPPORTED_VERSION)
    if not may(ctx, AclOperation.READ, req.group_id):
        return heartbeat_error_response(ctx, req, ErrorCode.GROUP_AUTHORIZATION_FAILED)
    names = set(req.subscribed_topic_names or ())
    if names and filter_authorized(ctx, AclOperation.DESCRIBE, ResourceType.TOPIC, names) != names:
        return heartbeat_error_response(ctx, req, ErrorCode.TOPIC_AUTHORIZATION_FAILED)
    if not_coordinator(ctx, req.group_id):
        return heartbeat_error_response(ctx, req, ErrorCode.NOT_COORDINATOR)
    if ctx.cluster.streams_groups.group(req.group_id) is not None:
        return {**heartbeat_error_response(ctx, req, ErrorCode.GROUP_ID_NOT_FOUND),
                "error_message": f"Group {req.group_id} is not a consumer group."}
    owned = None if req.topic_partitions is None else [(t.topic_id, list(t.partitions)) for t in req.topic_partitions]
    cluster = ctx.cluster
    classic = classic_group_status(ctx, req.group_id)
    result = cluster.consumer_groups.heartbeat(HeartbeatRequest(
        group_id=req.group_id, member_id=req.member_id, member_epoch=req.member_epoch,
        instance_id=req.instance_id, rack_id=req.rack_id, rebalance_timeout_ms=req.rebalance_timeout_ms,
        subscribed_topic_names=None if req.subscribed_topic_names is None else list(req.subscribed_topic_names),
        subscribed_topic_regex=req.get("subscribed_topic_regex"), server_assignor=req.server_assignor,
        owned=owned, client_id=ctx.request.client_id or "", client_host=java_client_host(ctx.client_host),
        version=ctx.version, may_describe=topic_checker(ctx, AclOperation.DESCRIBE)),
        is_classic_group=lambda _: classic)
    if result["error_code"] == ErrorCode.NONE and classic == "empty" and req.member_epoch == 0:
        # an empty classic group gives its id (and its committed offsets) to the new consumer group, as Kafka's
        old = cluster.groups.take_empty_group(req.group_id)
        new = cluster.consumer_groups.group(req.group_id)
        if old is not None and new is not None:
            new.offsets.update(old.offsets)
    return {"throttle_time_ms": 0, **result}


def _named(ctx: RequestContext, assignment: dict[Any, frozenset[int]]) -> dict[str, Any]:
    parts = []
    for topic_id, ps in sorted(assignment.items(), key=lambda kv: str(kv[0])):
        topic = ctx.cluster.topics_by_id.get(topic_id)
        if topic is not None and ps:
            parts.append({"topic_id": topic_id, "topic_name": topic.name, "partitions": sorted(ps)})
    return {"topic_partitions": parts}


def describe_error_response(ctx: ErrorContext, req: Container, code: ErrorCode) -> dict[str, Any]:
    return {"throttle_time_ms": 0, "groups": [
        {"error_code": code, "error_message": None, "group_id": g, "group_state": "", "group_epoch": 0,
         "assignment_epoch": 0, "assignor_name": "", "members": [], "authorized_operations": NOT_REQUESTED}
        for g in req.group_ids]}


def refused_first_and_topics_hidden(ctx: RequestContext, groups: list[dict[str, Any]], refused: list[str],
                                    empty: dict[str, Any]) -> list[dict[str, Any]]:
    """A describe's groups as Kafka 4.4's KafkaApis answers them: those refused DESCRIBE first, then the rest;
    with an authorizer, a group whose members hold or are targeted a topic the client may not describe is
    TOPIC_AUTHORIZATION_FAILED with no members (Consumer/ShareGroupDescribe)."""
    out = [{**empty, "group_id": g, "error_code": ErrorCode.GROUP_AUTHORIZATION_FAILED} for g in refused] + groups
    if ctx.cluster.authorizer is None:
        return out
    def names(g: dict[str, Any]) -> set[str]:
        return {tp["topic_name"] for m in g["members"] for key in ("assignment", "target_assignment") if key in m
                for tp in m[key]["topic_partitions"]}
    wanted = set().union(*(names(g) for g in out))
    describable = filter_authorized(ctx, AclOperation.DESCRIBE, ResourceType.TOPIC, wanted)
    return [g if names(g) <= describable else {
        **empty, "group_id": g["group_id"], "error_code": ErrorCode.TOPIC_AUTHORIZATION_FAILED,
        "error_message": "The group has described topic(s) that the client is not authorized to describe."}
        for g in out]


@handles(ApiKey.CONSUMER_GROUP_DESCRIBE, 0, 1, errors=describe_error_response)
def handle_consumer_group_describe(ctx: RequestContext, req: Container) -> dict[str, Any]:
    if not consumer_protocol_enabled(ctx):
        return describe_error_response(ctx, req, ErrorCode.UNSUPPORTED_VERSION)
    coordinator = ctx.cluster.consumer_groups
    out = []
    refused = []
    empty: dict[str, Any] = {"error_code": ErrorCode.NONE, "error_message": None, "group_id": "", "group_state": "",
                             "group_epoch": 0, "assignment_epoch": 0, "assignor_name": "", "members": [],
                             "authorized_operations": NOT_REQUESTED}
    for group_id in req.group_ids:
        entry: dict[str, Any] = {**empty, "group_id": group_id}
        group = coordinator.group(group_id)
        if not may(ctx, AclOperation.DESCRIBE, group_id):
            refused.append(group_id)
            continue
        if not_coordinator(ctx, group_id):
            entry["error_code"] = ErrorCode.NOT_COORDINATOR
        elif group is None:
            classic = ctx.cluster.groups.group(group_id)
            entry["error_code"] = ErrorCode.GROUP_ID_NOT_FOUND
            other = classic is not None or ctx.cluster.streams_groups.group(group_id) is not None
            entry["error_message"] = f"Group {group_id} is not a consumer group." if other \
                else f"Group {group_id} not found."
        else:
            entry.update(group_state=group.state.value, group_epoch=group.group_epoch,
                         assignment_epoch=group.assignment_epoch,
                         assignor_name=group.preferred_assignor(coordinator.config.assignors[0]))
            entry["members"] = [{
                "member_id": m.member_id, "instance_id": m.instance_id, "rack_id": m.rack_id,
                "member_epoch": m.member_epoch, "client_id": m.client_id, "client_host": m.client_host,
                "subscribed_topic_names": list(m.subscribed_topic_names),
                "subscribed_topic_regex": m.subscribed_topic_regex or "",  # Kafka 4.4: "" when none
                "assignment": _named(ctx, m.assigned),
                "target_assignment": _named(ctx, group.target.get(m.member_id, {})),
                "member_type": MEMBER_TYPE_CONSUMER if m.classic is None else MEMBER_TYPE_CLASSIC}
                for m in group.members.values()]
            if req.include_authorized_operations:
                entry["authorized_operations"] = authorized_operations(ctx, ResourceType.GROUP, group_id)
        out.append(entry)
    return {"throttle_time_ms": 0, "groups": refused_first_and_topics_hidden(ctx, out, refused, empty)}
