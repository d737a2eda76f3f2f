"""DescribeClientQuotas (key 48) and AlterClientQuotas (key 49), v0-1, as Kafka 4.4 answers them (the quotas
themselves, their validation and their effect: fakekafka/model/client_quotas.py).

Describe needs DESCRIBE_CONFIGS on the cluster, Alter ALTER_CONFIGS (CLUSTER_AUTHORIZATION_FAILED otherwise: for
Describe at the top with Kafka's "Cluster authorization failed.", for Alter on every entry). A filter Kafka refuses
(an empty or repeated entity type, a match string where its match type takes none, ip with user or client-id) is
answered with its error code and message and no entries; an unknown entity type with UNSUPPORTED_VERSION, as
Kafka. Alter decides each entity as Kafka's controller (entity types and names, key names and value types and
ranges) with its messages; `validate_only` decides without applying. An entity named twice in one entry counts
once, with its last name, as Kafka's request reads it into a map. Behaviour: entries are answered in request
order and described in the order they were first set (Kafka's follow its hash maps); an ip entity must be an IP
literal (Kafka also takes a host name it can resolve)."""

from __future__ import annotations

from typing import Any

from construct import Container

from fakekafka.handlers.authz import authorize_cluster
from fakekafka.handlers.registry import ErrorContext, RequestContext, handles
from fakekafka.model.acl import AclOperation
from fakekafka.model.client_quotas import ClientQuotaError, sort_entity
from fakekafka.wire import ApiKey, ErrorCode

_CLUSTER_DENIED = "Cluster authorization failed."


def describe_error_response(ctx: ErrorContext, req: Container, code: ErrorCode,
                            message: str | None = None) -> dict[str, Any]:
    return {"throttle_time_ms": 0, "error_code": code, "error_message": message, "entries": None}


@handles(ApiKey.DESCRIBE_CLIENT_QUOTAS, 0, 1, errors=describe_error_response)
def handle_describe_client_quotas(ctx: RequestContext, req: Container) -> dict[str, Any]:
    if not authorize_cluster(ctx, AclOperation.DESCRIBE_CONFIGS):
        return describe_error_response(ctx, req, ErrorCode.CLUSTER_AUTHORIZATION_FAILED, _CLUSTER_DENIED)
    try:
        found = ctx.cluster.client_quotas.describe(
            [(c.entity_type, c.match_type, c.match) for c in req.components], req.strict)
    except ClientQuotaError as e:
        return describe_error_response(ctx, req, e.code, e.message)
    return {"throttle_time_ms": 0, "error_code": ErrorCode.NONE, "error_message": "", "entries": [
        {"entity": [{"entity_type": t, "entity_name": n} for t, n in entity],
         "values": [{"key": k, "value": v} for k, v in values.items()]} for entity, values in found]}


def alter_error_response(ctx: ErrorContext, req: Container, code: ErrorCode,
                         message: str | None = None) -> dict[str, Any]:
    """Kafka's: every entry as the request named it, with the code (and, for a refusal by ACL, the error's
    default message)."""
    return {"throttle_time_ms": 0, "entries": [
        {"error_code": code, "error_message": message,
         "entity": [{"entity_type": e.entity_type, "entity_name": e.entity_name} for e in entry.entity]}
        for entry in req.entries]}


@handles(ApiKey.ALTER_CLIENT_QUOTAS, 0, 1, errors=alter_error_response)
def handle_alter_client_quotas(ctx: RequestContext, req: Container) -> dict[str, Any]:
    if not authorize_cluster(ctx, AclOperation.ALTER_CONFIGS):
        # Kafka's controller refuses it with its ClusterAuthorizationException, whose words the answer drops
        return alter_error_response(ctx, req, ErrorCode.CLUSTER_AUTHORIZATION_FAILED, _CLUSTER_DENIED)
    requested = []
    for entry in req.entries:
        names: dict[str, str | None] = {}
        for e in entry.entity:
            names[e.entity_type] = e.entity_name
        requested.append((list(names.items()), [(op.key, op.value, op.remove) for op in entry.ops]))
    results = ctx.cluster.client_quotas.alter(requested, req.validate_only)
    return {"throttle_time_ms": 0, "entries": [
        {"error_code": ErrorCode.INVALID_REQUEST if error else ErrorCode.NONE, "error_message": error,
         "entity": [{"entity_type": t, "entity_name": n} for t, n in sort_entity(pairs)]}
        for pairs, error in results]}
