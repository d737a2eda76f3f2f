"""Request handlers, one module per API family, registered by API key in `registry`.

Importing this package registers every handler; `dispatch` runs one decoded request.
"""

from __future__ import annotations

from typing import Any

from fakekafka.handlers import (  # noqa: F401  (imported to register their handlers)
    acls,
    admin,
    api_versions,
    configs,
    consumer_groups,
    delete_records,
    describe_cluster,
    describe_topic_partitions,
    fetch,
    find_coordinator,
    groups,
    init_producer_id,
    leaders,
    list_offsets,
    log_dirs,
    metadata,
    offset_for_leader_epoch,
    offsets,
    produce,
    sasl,
    scram,
    share_groups,
    transactions,
)
from fakekafka.handlers.authz import CLUSTER_APIS, authorize_cluster
from fakekafka.handlers.registry import (
    NO_RESPONSE,
    DropConnection,
    Park,
    RequestContext,
    advertised_versions,
    error_response,
    handler_for,
)
from fakekafka.model.acl import AclOperation
from fakekafka.model.faults import FaultKind
from fakekafka.wire import ApiKey, ErrorCode

__all__ = ["NO_RESPONSE", "DropConnection", "Park", "RequestContext", "advertised_versions", "dispatch",
           "handler_for"]


def dispatch(ctx: RequestContext) -> Any:
    """Runs the handler for a decoded request whose version the handler accepts, applying any faults
    the test asked for (`fakekafka.model.faults`)."""
    request = ctx.request
    reg = handler_for(request.api_key)
    assert reg is not None and reg.min_version <= ctx.version <= reg.max_version
    body = request.body
    assert body is not None
    topics_by_id = ctx.cluster.topics_by_id
    needs = CLUSTER_APIS.get(request.api_key)
    if needs is not None and not authorize_cluster(ctx, needs) and not (  # Kafka takes either for markers
            request.api_key == ApiKey.WRITE_TXN_MARKERS and authorize_cluster(ctx, AclOperation.ALTER)):
        refused = error_response(ctx, body, ErrorCode.CLUSTER_AUTHORIZATION_FAILED)
        return refused if refused is not None else DropConnection(reason="cluster authorization failed")
    fired = ctx.cluster.faults.take(request.api_key, ctx.broker.node_id, request.client_id, body,
                                    lambda topic_id: t.name if (t := topics_by_id.get(topic_id)) else None)
    if not fired:
        return reg.handler(ctx, body)
    for fault in fired:
        ctx.cluster.event("fault", fault=fault.describe(), api=request.api_name, broker=ctx.broker.node_id,
                          client_id=request.client_id, correlation_id=request.correlation_id)
    kinds = {f.kind for f in fired}
    error_fault = next((f for f in fired if f.kind == FaultKind.ERROR), None)
    error = None if error_fault is None or error_fault.after else error_fault.error
    error_after = error_fault.error if error_fault is not None and error_fault.after else None
    latency = sum(f.ms for f in fired if f.kind == FaultKind.LATENCY)
    throttle = max((f.ms for f in fired if f.kind == FaultKind.THROTTLE), default=0)

    def finish(result: Any) -> Any:
        if isinstance(result, Park):
            return Park(result.wait_ms, result.keys, lambda timed_out: finish(result.resume(timed_out)),
                        result.clock_deadline)
        if FaultKind.DROP_AFTER in kinds:
            return DropConnection(applied=True)
        if error_after is not None and result is not NO_RESPONSE and not isinstance(result, DropConnection):
            answer = error_response(ctx, body, error_after)  # applied; the client is told it failed
            result = answer if answer is not None else DropConnection(applied=True)
        if throttle and isinstance(result, dict):
            result["throttle_time_ms"] = throttle
        return result

    def run(_: bool = True) -> Any:
        if FaultKind.DROP_BEFORE in kinds:
            return DropConnection()
        if error is not None:
            answer = error_response(ctx, body, error)
            return finish(answer) if answer is not None else DropConnection()
        return finish(reg.handler(ctx, body))

    return Park(latency, [], run) if latency else run()
