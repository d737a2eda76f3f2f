"""The classic group protocol: JoinGroup (11) v0-9, SyncGroup (14) v0-5, Heartbeat (12) v0-4,
LeaveGroup (13) v0-5, DescribeGroups (15) v0-6, ListGroups (16) v0-5, DeleteGroups (42) v0-3.

The rules live in `fakekafka.model.group`; these handlers translate versions. JoinGroup and SyncGroup park until
the coordinator resolves them. Behaviour: a static leader rejoining a Stable group gets, from JoinGroup v9, the
members with skip_assignment set (KIP-814, as Kafka 4.4; found by `python -m compat diff`); before v9 it is told
the old leader id and no members, as Kafka does. DescribeGroups v3+ asked for authorized operations answers those
the client may do (without an authorizer, all of a group's). With an authorizer: JoinGroup, SyncGroup, Heartbeat
and LeaveGroup need READ on the group, DescribeGroups DESCRIBE, DeleteGroups DELETE (GROUP_AUTHORIZATION_FAILED
otherwise, before the coordinator is asked; as Kafka lists them, DescribeGroups answers the groups refused first and
DeleteGroups last, each once), and ListGroups lists only the groups the client may describe unless it
may describe the cluster. DescribeGroups reports each member's current assignment in every state (its subscription
metadata only when Stable), as Kafka 4.x does (as an older release, `--kafka-version`, only when Stable). An error
a test injects into DescribeGroups or DeleteGroups is
answered for every group asked about. DescribeGroups v6 (KIP-1043) answers a group nobody uses (or a deleted one)
GROUP_ID_NOT_FOUND with Kafka's message, state still Dead; before v6 it is state Dead without an error.
DeleteGroups v3 adds a per-group error message, which Kafka leaves null.
Mixed groups (`fakekafka.model.mixed_groups`), as Kafka 4.4: JoinGroup, SyncGroup and Heartbeat of a classic
member of a KIP-848 consumer group are answered by the consumer group coordinator (JoinGroup at once, its
generation the member epoch, SyncGroup its assignment in the ConsumerProtocol format, Heartbeat
REBALANCE_IN_PROGRESS when it must rejoin); with `group.consumer.migration.policy=disabled` such a JoinGroup is
INCONSISTENT_GROUP_PROTOCOL. A JoinGroup to an empty consumer group takes its id (and offsets) for a classic group.
LeaveGroup of a consumer group removes the members named (static ones by instance id, the member id may be
empty), classic or not, one new group epoch for all (the sweep's cg-leave-group-api variant); if only classic
members are left, the group is downgraded to a classic group and rebalances.
"""

from __future__ import annotations

import functools
import ipaddress
from typing import Any

from construct import Container

from fakekafka.handlers.authz import authorize, authorize_cluster, authorized_operations
from fakekafka.handlers.common import not_coordinator_of
from fakekafka.handlers.registry import ErrorContext, Park, RequestContext, handles
from fakekafka.model.acl import AclOperation, ResourceType
from fakekafka.model.group import GroupState, Pending
from fakekafka.model.mixed_groups import classic_heartbeat, classic_join, classic_sync, classic_takes_empty
from fakekafka.wire import ApiKey, ErrorCode

NOT_REQUESTED = -2147483648


def epoch_group(cluster: Any, group_id: str) -> tuple[Any, Any]:
    """(coordinator, group) of the consumer group (KIP-848) or streams group (KIP-1071) with the id, whose members
    commit and fetch offsets at their member epoch; (None, None) if there is none."""
    for coordinator in (cluster.consumer_groups, cluster.streams_groups):
        group = coordinator.group(group_id)
        if group is not None:
            return coordinator, group
    return None, None


def may(ctx: RequestContext, operation: AclOperation, group_id: str) -> bool:
    """Whether the client may do `operation` on the group (always, without an authorizer)."""
    return authorize(ctx, operation, ResourceType.GROUP, group_id)


def not_coordinator(ctx: RequestContext, group_id: str) -> bool:
    """True when this broker does not lead the group's `__consumer_offsets` partition."""
    return not_coordinator_of(ctx, group_id, ctx.cluster.coordinator_for)


def wait_for(pending: Pending, finish: Any) -> Any:
    """`finish(result)` once the coordinator resolves `pending` (it may already have, within the same
    request: the member that completes a rebalance gets its answer at once); until then, a Park."""
    def resume(_: bool) -> Any:
        return finish(pending.result) if pending.result is not None else Park(None, [pending], resume)
    return resume(False)


@functools.lru_cache(maxsize=4096)
def java_client_host(peer: str) -> str:
    """The client's address as Kafka reports it (Java's InetAddress.toString(), no reverse lookup):
    "/127.0.0.1", "/0:0:0:0:0:0:0:1"; `peer` is "host:port". Cached: every KIP-848 heartbeat asks."""
    host = peer.rsplit(":", 1)[0].strip("[]")
    bare, percent, scope = host.partition("%")
    try:
        address = ipaddress.ip_address(bare)
    except ValueError:
        return host
    if address.version == 6:
        return "/" + ":".join(f"{int(group, 16):x}" for group in address.exploded.split(":")) + percent + scope
    return f"/{address}"


def _join_response(ctx: RequestContext, result: dict[str, Any]) -> dict[str, Any]:
    out = dict(result, throttle_time_ms=0)
    if ctx.version < 7 and out.get("protocol_name") is None:
        out["protocol_name"] = ""
    return out


@handles(ApiKey.JOIN_GROUP, 0, 9)
def handle_join_group(ctx: RequestContext, req: Container) -> Any:
    if not may(ctx, AclOperation.READ, req.group_id):
        return _join_response(ctx, {"error_code": ErrorCode.GROUP_AUTHORIZATION_FAILED, "generation_id": -1,
                                    "leader": "", "member_id": "", "members": [], "protocol_name": None})
    if not_coordinator(ctx, req.group_id):
        return _join_response(ctx, {"error_code": ErrorCode.NOT_COORDINATOR, "generation_id": -1, "leader": "",
                                    "member_id": req.member_id, "members": []})
    rebalance_timeout_ms = req.get("rebalance_timeout_ms", req.session_timeout_ms) if ctx.version >= 1 \
        else req.session_timeout_ms
    consumer_group = ctx.cluster.consumer_groups.group(req.group_id)
    if consumer_group is not None and consumer_group.members:
        # a classic member of a KIP-848 consumer group (a mixed group), answered by that coordinator at once
        config = ctx.cluster.groups.config
        return _join_response(ctx, classic_join(
            ctx.cluster.consumer_groups, consumer_group, member_id=req.member_id,
            group_instance_id=req.get("group_instance_id"), require_known_member_id=ctx.version >= 4,
            client_id=ctx.request.client_id or "", client_host=java_client_host(ctx.client_host),
            session_timeout_ms=req.session_timeout_ms, rebalance_timeout_ms=rebalance_timeout_ms,
            protocol_type=req.protocol_type, protocols=[(p.name, p.metadata) for p in req.protocols],
            min_session_timeout_ms=config.min_session_timeout_ms, max_session_timeout_ms=config.max_session_timeout_ms))
    if consumer_group is not None:  # an empty consumer group gives its id and offsets to a classic group, as Kafka's
        classic_takes_empty(ctx.cluster.consumer_groups, ctx.cluster.groups, req.group_id)
    result = ctx.cluster.groups.join(
        group_id=req.group_id, member_id=req.member_id, group_instance_id=req.get("group_instance_id"),
        require_known_member_id=ctx.version >= 4, client_id=ctx.request.client_id or "",
        client_host=java_client_host(ctx.client_host), session_timeout_ms=req.session_timeout_ms,
        rebalance_timeout_ms=rebalance_timeout_ms, protocol_type=req.protocol_type,
        protocols=[(p.name, p.metadata) for p in req.protocols], version=ctx.version)
    if isinstance(result, Pending):
        return wait_for(result, lambda r: _join_response(ctx, r))
    return _join_response(ctx, result)


@handles(ApiKey.SYNC_GROUP, 0, 5)
def handle_sync_group(ctx: RequestContext, req: Container) -> Any:
    def respond(r: dict[str, Any]) -> dict[str, Any]:
        return dict(r, throttle_time_ms=0)

    if not may(ctx, AclOperation.READ, req.group_id):
        return respond({"error_code": ErrorCode.GROUP_AUTHORIZATION_FAILED, "assignment": b""})
    if not_coordinator(ctx, req.group_id):
        return respond({"error_code": ErrorCode.NOT_COORDINATOR, "assignment": b""})
    consumer_group = ctx.cluster.consumer_groups.group(req.group_id)
    if consumer_group is not None:
        return respond(classic_sync(ctx.cluster.consumer_groups, consumer_group, req.generation_id, req.member_id,
                                    req.get("group_instance_id"), req.get("protocol_type"), req.get("protocol_name")))
    result = ctx.cluster.groups.sync(req.group_id, req.generation_id, req.member_id, req.get("group_instance_id"),
                                     {a.member_id: a.assignment for a in req.assignments},
                                     req.get("protocol_type"), req.get("protocol_name"))
    if isinstance(result, Pending):
        return wait_for(result, respond)
    return respond(result)


@handles(ApiKey.HEARTBEAT, 0, 4)
def handle_heartbeat(ctx: RequestContext, req: Container) -> dict[str, Any]:
    if not may(ctx, AclOperation.READ, req.group_id):
        return {"throttle_time_ms": 0, "error_code": ErrorCode.GROUP_AUTHORIZATION_FAILED}
    if not_coordinator(ctx, req.group_id):
        return {"throttle_time_ms": 0, "error_code": ErrorCode.NOT_COORDINATOR}
    consumer_group = ctx.cluster.consumer_groups.group(req.group_id)
    if consumer_group is not None:
        code = classic_heartbeat(ctx.cluster.consumer_groups, consumer_group, req.generation_id, req.member_id,
                                 req.get("group_instance_id"))
    else:
        code = ctx.cluster.groups.heartbeat(req.group_id, req.generation_id, req.member_id,
                                            req.get("group_instance_id"))
    return {"throttle_time_ms": 0, "error_code": code}


@handles(ApiKey.LEAVE_GROUP, 0, 5)
def handle_leave_group(ctx: RequestContext, req: Container) -> dict[str, Any]:
    if ctx.version >= 3:
        leaving = [(m.member_id, m.group_instance_id) for m in req.members]
    else:
        leaving = [(req.member_id, None)]
    if not may(ctx, AclOperation.READ, req.group_id):
        return {"throttle_time_ms": 0, "error_code": ErrorCode.GROUP_AUTHORIZATION_FAILED, "members": []}
    if not_coordinator(ctx, req.group_id):
        return {"throttle_time_ms": 0, "error_code": ErrorCode.NOT_COORDINATOR, "members": []}
    consumer_group = ctx.cluster.consumer_groups.group(req.group_id)
    if consumer_group is not None:  # KIP-848 members removed through the classic API, as Kafka 4.4 does
        results = ctx.cluster.consumer_groups.leave_group(consumer_group, leaving)
        top = results[0][2] if ctx.version < 3 and results else ErrorCode.NONE
        return {"throttle_time_ms": 0, "error_code": top, "members": [
            {"member_id": mid, "group_instance_id": iid, "error_code": code} for mid, iid, code in results]}
    top, codes = ctx.cluster.groups.leave(req.group_id, leaving)
    if ctx.version < 3 and top == ErrorCode.NONE and codes:
        top = codes[0]
    return {"throttle_time_ms": 0, "error_code": top,
            "members": [{"member_id": mid, "group_instance_id": iid, "error_code": code}
                        for (mid, iid), code in zip(leaving, codes, strict=False)]}


def describe_groups_error_response(ctx: ErrorContext, req: Container, code: ErrorCode) -> dict[str, Any]:
    """An injected error for every group asked about (there is no top-level error code)."""
    return {"throttle_time_ms": 0, "groups": [
        {"error_code": code, "group_id": g, "group_state": "", "protocol_type": "", "protocol_data": "",
         "members": [], "authorized_operations": NOT_REQUESTED} for g in req.groups]}


def delete_groups_error_response(ctx: ErrorContext, req: Container, code: ErrorCode) -> dict[str, Any]:
    return {"throttle_time_ms": 0, "results": [{"group_id": g, "error_code": code} for g in req.groups_names]}


@handles(ApiKey.DESCRIBE_GROUPS, 0, 6, errors=describe_groups_error_response)
def handle_describe_groups(ctx: RequestContext, req: Container) -> dict[str, Any]:
    groups = []
    refused = []  # listed first, as Kafka's KafkaApis answers them
    for group_id in req.groups:
        entry: dict[str, Any] = {"error_code": ErrorCode.NONE, "group_id": group_id, "group_state": "Dead",
                                 "protocol_type": "", "protocol_data": "", "members": [],
                                 "authorized_operations": NOT_REQUESTED}
        if not may(ctx, AclOperation.DESCRIBE, group_id):
            entry.update(error_code=ErrorCode.GROUP_AUTHORIZATION_FAILED, group_state="")
            refused.append(entry)
            continue
        if not_coordinator(ctx, group_id):
            entry.update(error_code=ErrorCode.NOT_COORDINATOR, group_state="")
            groups.append(entry)
            continue
        group = ctx.cluster.groups.group(group_id)
        if group is None and (ctx.cluster.consumer_groups.group(group_id) is not None
                              or ctx.cluster.streams_groups.group(group_id) is not None
                              or ctx.cluster.shares.describe(group_id) is not None):
            # a KIP-848 consumer group (or a streams group) is not a classic group: Kafka 4.4 answers so from v6,
            # Dead before
            if ctx.version >= 6:
                entry.update(error_code=ErrorCode.GROUP_ID_NOT_FOUND, error_message=f"Group {group_id} is not a "
                                                                                   "classic group.")
        elif (group is None or group.state == GroupState.DEAD) and ctx.version >= 6:
            entry.update(error_code=ErrorCode.GROUP_ID_NOT_FOUND, error_message=f"Group {group_id} not found.")
        elif group is not None:
            stable = group.state == GroupState.STABLE
            # before 4.0 (the old group coordinator's summaryNoMetadata) outside Stable the assignment is left out too
            assigned = stable or ctx.cluster.config.release is None
            entry.update(group_state=group.state.value, protocol_type=group.protocol_type or "",
                         protocol_data=(group.protocol_name or "") if stable else "")
            entry["members"] = [{
                "member_id": m.member_id, "group_instance_id": m.group_instance_id, "client_id": m.client_id,
                "client_host": m.client_host,
                "member_metadata": m.metadata_for(group.protocol_name) if stable and group.protocol_name else b"",
                "member_assignment": m.assignment if assigned else b"",  # Kafka 4.x keeps it outside Stable too
            } for m in group.members.values()]
        if req.get("include_authorized_operations") and entry["error_code"] == ErrorCode.NONE:
            # not for a group v6 does not find, as Kafka
            entry["authorized_operations"] = authorized_operations(ctx, ResourceType.GROUP, group_id)
        groups.append(entry)
    return {"throttle_time_ms": 0, "groups": refused + groups}


@handles(ApiKey.LIST_GROUPS, 0, 5)
def handle_list_groups(ctx: RequestContext, req: Container) -> dict[str, Any]:
    states = {s.lower() for s in req.get("states_filter", [])}
    types = {t.lower() for t in req.get("types_filter", [])}
    listed = []
    everything = authorize_cluster(ctx, AclOperation.DESCRIBE)  # else only the groups it may describe
    found: list[tuple[str, str, str, str]] = [
        (g.group_id, g.protocol_type or "", g.state.value, "classic") for g in ctx.cluster.groups.groups.values()]
    found += [(g.group_id, "consumer", g.state.value, "consumer")
              for g in ctx.cluster.consumer_groups.groups.values()]
    found += [(g.group_id, "share", g.state, "share") for g in ctx.cluster.shares.groups.values()]
    found += [(g.group_id, "streams", g.state.value, "streams") for g in ctx.cluster.streams_groups.groups.values()]
    for group_id, protocol_type, state, group_type in found:
        if not_coordinator(ctx, group_id):
            continue
        if not everything and not may(ctx, AclOperation.DESCRIBE, group_id):
            continue
        if states and state.lower() not in states:
            continue
        if types and group_type not in types:
            continue
        listed.append({"group_id": group_id, "protocol_type": protocol_type, "group_state": state,
                       "group_type": group_type})
    return {"throttle_time_ms": 0, "error_code": ErrorCode.NONE, "groups": listed}


@handles(ApiKey.DELETE_GROUPS, 0, 3, errors=delete_groups_error_response)
def handle_delete_groups(ctx: RequestContext, req: Container) -> dict[str, Any]:
    results = []
    refused = []  # listed last, each group once, as Kafka's KafkaApis answers them
    for group_id in dict.fromkeys(req.groups_names):
        if not may(ctx, AclOperation.DELETE, group_id):
            refused.append({"group_id": group_id, "error_code": ErrorCode.GROUP_AUTHORIZATION_FAILED})
            continue
        if not_coordinator(ctx, group_id):
            code = ErrorCode.NOT_COORDINATOR
        elif ctx.cluster.consumer_groups.group(group_id) is not None:
            code = ctx.cluster.consumer_groups.delete_group(group_id)
        elif ctx.cluster.streams_groups.group(group_id) is not None:
            code = ctx.cluster.streams_groups.delete_group(group_id)
        elif ctx.cluster.shares.describe(group_id) is not None:
            code = ctx.cluster.shares.delete_group(group_id)
        else:
            code = ctx.cluster.groups.delete_group(group_id)
        results.append({"group_id": group_id, "error_code": code})
    return {"throttle_time_ms": 0, "results": results + refused}
