"""Request handlers, one module per API family, registered by API key in `registry`.

Importing this package registers every handler; `dispatch` runs one decoded request.
"""

from __future__ import annotations

from typing import Any

from construct import Container

from fakekafka.handlers import (  # noqa: F401  (imported to register their handlers)
    acls,
    admin,
    api_versions,
    client_quotas,
    configs,
    consumer_groups,
    delete_records,
    describe_cluster,
    describe_quorum,
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
    streams_groups,
    telemetry,
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
from fakekafka.model.faults import touched_partitions
from fakekafka.model.hooks import (
    Answer,
    Delay,
    Drop,
    Edit,
    Fail,
    Hold,
    Intercepted,
    Throttle,
    actions_of,
    describe_actions,
)
from fakekafka.wire import ApiKey, ErrorCode

__all__ = ["NO_RESPONSE", "DropConnection", "Park", "RequestContext", "advertised_versions", "dispatch",
           "handler_for"]


def dispatch(ctx: RequestContext) -> Any:
    """Runs the handler for a decoded request whose version the handler accepts, through the cluster's hooks
    (the faults and hooks a test asked for, chaos: `fakekafka.model.hooks`)."""
    request = ctx.request
    reg = handler_for(request.api_key)
    assert reg is not None and reg.min_version <= ctx.version <= reg.max_version
    body = request.body
    assert body is not None
    needs = CLUSTER_APIS.get(request.api_key)
    if needs is not None and not authorize_cluster(ctx, needs) and not (  # Kafka takes either for markers
            request.api_key == ApiKey.WRITE_TXN_MARKERS and authorize_cluster(ctx, AclOperation.ALTER)):
        refused = error_response(ctx, body, ErrorCode.CLUSTER_AUTHORIZATION_FAILED)
        return refused if refused is not None else DropConnection(reason="cluster authorization failed")
    hooks = ctx.cluster.hooks
    nth = hooks.point(request.api_key)
    if hooks.held:  # a held request may be waiting for this one
        ctx.cluster.notify(hooks)
    if not hooks.active:
        return reg.handler(ctx, body)
    return intercept(ctx, reg.handler, body, nth)


def intercept(ctx: RequestContext, handler: Any, body: Any, nth: int) -> Any:
    """The request through the cluster's hooks (fakekafka/model/hooks.py): fault rules, a test's hooks, chaos.
    Each action is carried out here, so every way of breaking a request behaves the same."""
    request, cluster = ctx.request, ctx.cluster
    topics_by_id = cluster.topics_by_id
    seen = Intercepted(request.api_key, request.api_version, ctx.broker.node_id, request.client_id,
                       request.correlation_id, body,
                       touched_partitions(body, lambda i: t.name if (t := topics_by_id.get(i)) else None),
                       cluster.clock.now_ms(), nth)
    taken = cluster.hooks.take(seen)
    for who, action in taken:
        kind = "fault" if who.startswith("fault: ") else "chaos" if who.startswith("chaos: ") else "hook"
        cluster.event(kind, **{kind: who.split(": ", 1)[-1] if kind != "hook" else who},
                      action=describe_actions(actions_of(action)), api=request.api_name, broker=ctx.broker.node_id,
                      client_id=request.client_id, correlation_id=request.correlation_id)
    actions = [a for _, action in taken for a in actions_of(action)]
    return _carry_out(ctx, handler, body, seen, actions)


def _carry_out(ctx: RequestContext, handler: Any, body: Any, seen: Intercepted, actions: list[Any]) -> Any:
    cluster = ctx.cluster
    hooks = cluster.hooks
    hold = next((a for a in actions if isinstance(a, Hold)), None)
    if hold is not None:
        rest = [a for a in actions if a is not hold] + actions_of(hold.then)
        return _hold(ctx, handler, body, seen, hold, rest)
    drop_before = any(isinstance(a, Drop) and not a.after for a in actions)
    drop_after = any(isinstance(a, Drop) and a.after for a in actions)
    answer = next((a.body for a in actions if isinstance(a, Answer)), None)
    error = next((a.error for a in actions if isinstance(a, Fail) and not a.after), None)
    error_after = next((a.error for a in actions if isinstance(a, Fail) and a.after), None)
    edits = [a.fn for a in actions if isinstance(a, Edit)]
    latency = sum(a.ms for a in actions if isinstance(a, Delay))
    throttle = max((a.ms for a in actions if isinstance(a, Throttle)), default=0)

    def finish(result: Any, applied: bool) -> Any:
        if isinstance(result, Park):
            return Park(result.wait_ms, result.keys, lambda timed_out: finish(result.resume(timed_out), applied),
                        result.clock_deadline)
        if drop_after and applied:
            result = DropConnection(applied=True)
        elif error_after is not None and applied and result is not NO_RESPONSE \
                and not isinstance(result, DropConnection):
            answer = error_response(ctx, body, error_after)  # applied; the client is told it failed
            result = answer if answer is not None else DropConnection(applied=True)
        for fn in edits:
            if isinstance(result, (dict, Container)):
                edited = fn(result)
                result = result if edited is None else edited
        if throttle and isinstance(result, (dict, Container)):
            result["throttle_time_ms"] = throttle
            # as Kafka's quota managers: the client backs off for throttle_time_ms, the broker mutes the channel
            ctx.connection.throttle_ms = max(ctx.connection.throttle_ms, throttle)
        if hooks.observers:
            hooks.answered(seen, None if isinstance(result, DropConnection) or result is NO_RESPONSE else result,
                           applied)
        return result

    def run(_: bool = True) -> Any:
        if drop_before:
            return finish(DropConnection(), False)
        if answer is not None:
            return finish(answer, False)
        if error is not None:
            refused = error_response(ctx, body, error)
            return finish(refused if refused is not None else DropConnection(), False)
        return finish(handler(ctx, body), True)

    return Park(latency, [], run) if latency else run()


def _hold(ctx: RequestContext, handler: Any, body: Any, seen: Intercepted, hold: Hold, rest: list[Any]) -> Any:
    """Parks the request until the hold's condition holds, looked at again on every request and model change."""
    cluster = ctx.cluster
    hooks = cluster.hooks

    def poke(obj: object) -> None:
        if obj is not hooks:
            cluster.notify(hooks)

    def release() -> Any:
        hooks.held -= 1
        cluster.remove_change_listener(poke)
        return _carry_out(ctx, handler, body, seen, rest)

    if hold.until():
        return _carry_out(ctx, handler, body, seen, rest)
    hooks.held += 1
    cluster.add_change_listener(poke)

    def resume(timed_out: bool) -> Any:
        if hold.until() or timed_out:
            return release()
        return Park(hold.timeout_ms, [hooks, cluster.clock], resume)
    return Park(hold.timeout_ms, [hooks, cluster.clock], resume)
