"""FindCoordinator (key 10), v0-6 (batched keys in v4+).

A group's coordinator is the leader of partition abs(hash(group id)) % offsets.topic.num.partitions of
`__consumer_offsets` (Java's String.hashCode), so groups spread over brokers as in Kafka; the topic is created on
first use. A transactional id's coordinator is found the same way in `__transaction_state`
(transaction.state.log.num.partitions partitions, created on first use). An error injected by a test is answered
for every key asked about (v4+ has no top-level error code). A coordinator found carries Kafka's error message for
no error: "NONE" in v1-3 (Errors.NONE.message()), "" per key in v4+. The empty group id and the empty transactional
id have a coordinator, as in Kafka."""

from __future__ import annotations

from typing import Any

from construct import Container

from fakekafka.handlers.authz import authorize
from fakekafka.handlers.registry import ErrorContext, RequestContext, handles
from fakekafka.model.acl import AclOperation, ResourceType
from fakekafka.model.errors import ApiError
from fakekafka.wire import ApiKey, ErrorCode

GROUP, TRANSACTION = 0, 1


def _failed(key: str, code: ErrorCode, message: str | None = None) -> dict[str, Any]:
    return {"key": key, "node_id": -1, "host": "", "port": -1, "error_code": code, "error_message": message}


def _coordinator(ctx: RequestContext, key: str, key_type: int) -> dict[str, Any]:
    if key_type not in (GROUP, TRANSACTION):
        return _failed(key, ErrorCode.INVALID_REQUEST, f"Unsupported key type {key_type}")
    if key_type == GROUP and not authorize(ctx, AclOperation.DESCRIBE, ResourceType.GROUP, key):
        return _failed(key, ErrorCode.GROUP_AUTHORIZATION_FAILED, "")
    if key_type == TRANSACTION and not authorize(ctx, AclOperation.DESCRIBE, ResourceType.TRANSACTIONAL_ID, key):
        return _failed(key, ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED, "")
    try:
        b = ctx.cluster.coordinator_for(key) if key_type == GROUP else ctx.cluster.transaction_coordinator_for(key)
    except ApiError:  # its internal topic could not be made (a full data dir): Kafka's answer then
        b = None
    if b is None:
        return _failed(key, ErrorCode.COORDINATOR_NOT_AVAILABLE, "The coordinator is not available.")
    host, port = b.endpoint(ctx.listener)
    return {"key": key, "node_id": b.node_id, "host": host, "port": port, "error_code": ErrorCode.NONE,
            "error_message": "" if ctx.version >= 4 else "NONE"}


def find_coordinator_error_response(ctx: ErrorContext, req: Container, code: ErrorCode) -> dict[str, Any]:
    if ctx.version >= 4:
        return {"throttle_time_ms": 0, "coordinators": [_failed(k, code) for k in req.coordinator_keys]}
    return {"throttle_time_ms": 0, **_failed(req.key, code)}


@handles(ApiKey.FIND_COORDINATOR, 0, 6, errors=find_coordinator_error_response)
def handle_find_coordinator(ctx: RequestContext, req: Container) -> dict[str, Any]:
    key_type = req.get("key_type", GROUP)
    if ctx.version >= 4:
        return {"throttle_time_ms": 0, "coordinators": [_coordinator(ctx, k, key_type) for k in req.coordinator_keys]}
    c = _coordinator(ctx, req.key, key_type)
    return {"throttle_time_ms": 0, **c}
