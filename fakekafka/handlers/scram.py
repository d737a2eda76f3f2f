"""DescribeUserScramCredentials (key 50) and AlterUserScramCredentials (key 51), v0, as Kafka 4.4 answers them.

The credentials live in `ClusterState.scram` (fakekafka/model/scram.py's ScramCredentials); a change is used by the
next SCRAM login at once. Describe lists every user for a null or empty list, else each user asked for:
RESOURCE_NOT_FOUND for one without credentials, DUPLICATE_RESOURCE for one named twice, with Kafka's messages.
Alter validates as Kafka's controller (one alteration per user and request, known mechanism, a user name, 4096 to
16384 iterations) and turns the salted password into stored and server keys. With an authorizer, describing needs
DESCRIBE on the cluster and altering ALTER (CLUSTER_AUTHORIZATION_FAILED for every user asked about otherwise;
Alter's message in Kafka's "Request Request(...) needs ALTER permission." shape, Describe's null, as Kafka's).
Behaviour: results are listed in request order (Kafka's follow its hash maps).
"""

from __future__ import annotations

from typing import Any

from construct import Container

from fakekafka.handlers.authz import authorize_cluster, cluster_denied
from fakekafka.handlers.registry import ErrorContext, RequestContext, handles
from fakekafka.model.acl import AclOperation
from fakekafka.wire import ApiKey, ErrorCode


def describe_error_response(ctx: ErrorContext, req: Container, code: ErrorCode,
                            message: str | None = None) -> dict[str, Any]:
    """Kafka's: the code at the top and once per user asked about, each result's user left ""."""
    return {"throttle_time_ms": 0, "error_code": code, "error_message": message, "results": [
        {"user": "", "error_code": code, "error_message": message, "credential_infos": []}
        for _ in req.users or []]}


@handles(ApiKey.DESCRIBE_USER_SCRAM_CREDENTIALS, 0, 0, errors=describe_error_response)
def handle_describe_user_scram_credentials(ctx: RequestContext, req: Container) -> dict[str, Any]:
    if not authorize_cluster(ctx, AclOperation.DESCRIBE):
        return describe_error_response(ctx, req, ErrorCode.CLUSTER_AUTHORIZATION_FAILED)
    store = ctx.cluster.scram
    asked = [u.name for u in req.users] if req.users else store.users()
    results = []
    for user in dict.fromkeys(asked):
        result: dict[str, Any] = {"user": user, "error_code": ErrorCode.NONE, "error_message": "",
                                  "credential_infos": []}
        if asked.count(user) > 1:
            result.update(error_code=ErrorCode.DUPLICATE_RESOURCE, error_message="Cannot describe SCRAM credentials "
                          f"for the same user twice in a single request: {user}")
        elif not (infos := store.describe(user)):
            result.update(error_code=ErrorCode.RESOURCE_NOT_FOUND,
                          error_message=f"Attempt to describe a user credential that does not exist: {user}")
        else:
            result["credential_infos"] = [{"mechanism": code, "iterations": n} for code, n in infos]
        results.append(result)
    return {"throttle_time_ms": 0, "error_code": ErrorCode.NONE, "error_message": "", "results": results}


def alter_error_response(ctx: ErrorContext, req: Container, code: ErrorCode,
                         message: str | None = None) -> dict[str, Any]:
    """Kafka's: one result per user named (sorted), each with the code."""
    users = sorted({d.name for d in req.deletions} | {u.name for u in req.upsertions})
    return {"throttle_time_ms": 0, "results": [{"user": u, "error_code": code, "error_message": message}
                                               for u in users]}


@handles(ApiKey.ALTER_USER_SCRAM_CREDENTIALS, 0, 0, errors=alter_error_response)
def handle_alter_user_scram_credentials(ctx: RequestContext, req: Container) -> dict[str, Any]:
    if not authorize_cluster(ctx, AclOperation.ALTER):
        return alter_error_response(ctx, req, ErrorCode.CLUSTER_AUTHORIZATION_FAILED,
                                    cluster_denied(ctx, AclOperation.ALTER))
    results = ctx.cluster.scram.alter(
        [(d.name, d.mechanism) for d in req.deletions],
        [(u.name, u.mechanism, u.iterations, bytes(u.salt), bytes(u.salted_password)) for u in req.upsertions])
    return {"throttle_time_ms": 0, "results": [{"user": user, "error_code": code, "error_message": message}
                                               for user, code, message in results]}
