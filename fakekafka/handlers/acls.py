"""DescribeAcls (key 29), CreateAcls (key 30) and DeleteAcls (key 31), v1-3 (Kafka 4 removed v0, KIP-896), as
Kafka 4.4's broker answers them with the StandardAuthorizer (the rules: fakekafka/model/acl.py).

Without `authorizer.class.name` every request is answered SECURITY_DISABLED, with Kafka's messages. With it, the
client needs ALTER on the cluster to create or delete ACLs and DESCRIBE to list them (CLUSTER_AUTHORIZATION_FAILED
otherwise). A request naming an UNKNOWN (or unknown-coded) resource type, pattern type, operation or permission
closes the connection, as Kafka's request parser refuses it; an ACL the controller cannot store (ANY or MATCH where
a concrete value is needed, an empty name, a CLUSTER resource not named kafka-cluster, a principal without `Type:`)
is refused alone with INVALID_REQUEST and Kafka's message, but an ACL with ANY (or MATCH) where a value is needed
fails the whole request with UNKNOWN_SERVER_ERROR and no message, as Kafka's broker cannot build it. The message of
CLUSTER_AUTHORIZATION_FAILED has Kafka's shape ("Request Request(...) needs ALTER permission.") with fakekafka's
description of the request inside the brackets. Describe and delete filters match as Kafka's AclBindingFilter
(MATCH: every pattern that applies to the name). Behaviour: ACLs are listed in the order they were created, grouped
by resource pattern (Kafka's order is its hash map's)."""

from __future__ import annotations

from typing import Any

from construct import Container

from fakekafka.handlers.authz import authorize_cluster, cluster_denied
from fakekafka.handlers.registry import DropConnection, ErrorContext, RequestContext, handles
from fakekafka.model.acl import (
    CLUSTER_NAME,
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourceType,
)
from fakekafka.wire import ApiKey, ErrorCode


def _code(kind: type[Any], value: int) -> Any:
    """The enum member for a wire code; UNKNOWN for a code Kafka does not know (its fromCode)."""
    try:
        return kind(value)
    except ValueError:
        return kind.UNKNOWN


def _unknown(*values: Any) -> bool:
    return any(v.name == "UNKNOWN" for v in values)


def _filter(f: Container) -> AclBindingFilter:
    return AclBindingFilter(_code(ResourceType, f.resource_type_filter), f.resource_name_filter,
                            _code(PatternType, f.get("pattern_type_filter", PatternType.LITERAL)),
                            f.principal_filter, f.host_filter, _code(AclOperation, f.operation),
                            _code(AclPermissionType, f.permission_type))


def _filter_unknown(f: AclBindingFilter) -> bool:
    return _unknown(f.resource_type, f.pattern_type, f.operation, f.permission_type)


def describe_acls_error_response(ctx: ErrorContext, req: Container, code: ErrorCode,
                                 message: str | None = None) -> dict[str, Any]:
    return {"throttle_time_ms": 0, "error_code": code, "error_message": message, "resources": []}


@handles(ApiKey.DESCRIBE_ACLS, 1, 3, errors=describe_acls_error_response)
def handle_describe_acls(ctx: RequestContext, req: Container) -> Any:
    acl_filter = _filter(req)
    if _filter_unknown(acl_filter):
        return DropConnection(reason="DescribeAclsRequest contains UNKNOWN elements")
    if not authorize_cluster(ctx, AclOperation.DESCRIBE):
        return describe_acls_error_response(ctx, req, ErrorCode.CLUSTER_AUTHORIZATION_FAILED,
                                            cluster_denied(ctx, AclOperation.DESCRIBE))
    authorizer = ctx.cluster.authorizer
    if authorizer is None:
        return describe_acls_error_response(ctx, req, ErrorCode.SECURITY_DISABLED,
                                            "No Authorizer is configured on the broker")
    grouped: dict[tuple[int, str, int], list[dict[str, Any]]] = {}
    for acl in authorizer.describe(acl_filter):
        grouped.setdefault((acl.resource_type, acl.resource_name, acl.pattern_type), []).append(
            {"principal": acl.principal, "host": acl.host, "operation": acl.operation,
             "permission_type": acl.permission_type})
    return {"throttle_time_ms": 0, "error_code": ErrorCode.NONE, "error_message": "", "resources": [
        {"resource_type": rt, "resource_name": name, "pattern_type": pt, "acls": acls}
        for (rt, name, pt), acls in grouped.items()]}


def create_acls_error_response(ctx: ErrorContext, req: Container, code: ErrorCode,
                               message: str | None = None) -> dict[str, Any]:
    return {"throttle_time_ms": 0, "results": [{"error_code": code, "error_message": message}
                                               for _ in req.creations]}


def _binding(c: Container) -> AclBinding:
    return AclBinding(_code(ResourceType, c.resource_type), c.resource_name,
                      _code(PatternType, c.get("resource_pattern_type", PatternType.LITERAL)), c.principal, c.host,
                      _code(AclOperation, c.operation), _code(AclPermissionType, c.permission_type))


@handles(ApiKey.CREATE_ACLS, 1, 3, errors=create_acls_error_response)
def handle_create_acls(ctx: RequestContext, req: Container) -> Any:
    bindings = [_binding(c) for c in req.creations]
    if any(_unknown(b.resource_type, b.pattern_type, b.operation, b.permission_type) for b in bindings):
        return DropConnection(reason="CreatableAcls contain unknown elements")
    if not authorize_cluster(ctx, AclOperation.ALTER):
        return create_acls_error_response(ctx, req, ErrorCode.CLUSTER_AUTHORIZATION_FAILED,
                                          cluster_denied(ctx, AclOperation.ALTER))
    authorizer = ctx.cluster.authorizer
    if authorizer is None:
        return create_acls_error_response(ctx, req, ErrorCode.SECURITY_DISABLED, "No Authorizer is configured.")
    if any(b.malformed() for b in bindings):
        return create_acls_error_response(ctx, req, ErrorCode.UNKNOWN_SERVER_ERROR)
    results = []
    for b in bindings:
        if b.resource_type == ResourceType.CLUSTER and b.resource_name != CLUSTER_NAME:
            error: str | None = f"The only valid name for the CLUSTER resource is {CLUSTER_NAME}"
        elif not b.resource_name:
            error = "Invalid empty resource name"
        else:
            error = authorizer.create([b])[0]
        results.append({"error_code": ErrorCode.INVALID_REQUEST if error else ErrorCode.NONE,
                        "error_message": error or ""})  # Kafka's success says "", not null
    return {"throttle_time_ms": 0, "results": results}


def delete_acls_error_response(ctx: ErrorContext, req: Container, code: ErrorCode,
                               message: str | None = None) -> dict[str, Any]:
    return {"throttle_time_ms": 0, "filter_results": [
        {"error_code": code, "error_message": message, "matching_acls": []} for _ in req.filters]}


@handles(ApiKey.DELETE_ACLS, 1, 3, errors=delete_acls_error_response)
def handle_delete_acls(ctx: RequestContext, req: Container) -> Any:
    filters = [_filter(f) for f in req.filters]
    if any(_filter_unknown(f) for f in filters):
        return DropConnection(reason="Filters contain UNKNOWN elements")
    if not authorize_cluster(ctx, AclOperation.ALTER):
        return delete_acls_error_response(ctx, req, ErrorCode.CLUSTER_AUTHORIZATION_FAILED,
                                          cluster_denied(ctx, AclOperation.ALTER))
    authorizer = ctx.cluster.authorizer
    if authorizer is None:
        return delete_acls_error_response(ctx, req, ErrorCode.SECURITY_DISABLED, "No Authorizer is configured.")
    results = []
    for f in filters:
        results.append({"error_code": ErrorCode.NONE, "error_message": None, "matching_acls": [
            {"error_code": ErrorCode.NONE, "error_message": None, "resource_type": acl.resource_type,
             "resource_name": acl.resource_name, "pattern_type": acl.pattern_type, "principal": acl.principal,
             "host": acl.host, "operation": acl.operation, "permission_type": acl.permission_type}
            for acl in authorizer.delete(f)]})
    return {"throttle_time_ms": 0, "filter_results": results}
