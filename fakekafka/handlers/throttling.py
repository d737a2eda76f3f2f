"""Client quotas applied to requests, as Kafka's quota managers and KafkaApis apply them (the quotas, the rates
and the throttle arithmetic: fakekafka/model/client_quotas.py): a Produce counts its request bytes against
`producer_byte_rate`, a consumer's Fetch its answer's record bytes against `consumer_byte_rate` (and asks for no
more than the quota's window holds), every request its handling time against `request_percentage`. A request over
its quota is answered at once with throttle_time_ms, and its connection is muted (no further request read) for
that long (`ConnectionState.throttle_ms`, which the network edge carries out). A throttled Fetch is answered
empty, its bytes not counted, as Kafka's.

The user is the connection's principal name (`ANONYMOUS` without authentication), the client id the request
header's."""

from __future__ import annotations

from typing import Any

from fakekafka.handlers.authz import principal
from fakekafka.handlers.registry import RequestContext
from fakekafka.model.client_quotas import QuotaType
from fakekafka.model.errors import ApiError
from fakekafka.wire import ErrorCode

__all__ = ["MutationQuota", "fetch_allowance", "record_bytes", "record_request_time", "unrecord_bytes"]

_NANOS_TO_PERCENTAGE = 100.0 / 1e9
"""Handling time in ns as a percentage of one thread's second (Kafka's ClientRequestQuotaManager)."""


def _who(ctx: RequestContext) -> tuple[str, str]:
    return principal(ctx).split(":", 1)[-1], ctx.request.client_id or ""


def _throttled(ctx: RequestContext, result: Any, ms: int) -> int:
    if ms > 0:
        if isinstance(result, dict):
            result["throttle_time_ms"] = max(result.get("throttle_time_ms", 0) or 0, ms)
        ctx.connection.throttle_ms = max(ctx.connection.throttle_ms, ms)
    return ms


def record_bytes(ctx: RequestContext, quota_type: str, nbytes: int, result: Any = None) -> int:
    """Counts a Produce's request bytes or a Fetch's answer bytes: the throttle time earned (0: within quota),
    set on the answer and the connection."""
    quotas = ctx.cluster.client_quotas
    if not quotas.entries:
        return 0
    user, client_id = _who(ctx)
    return _throttled(ctx, result, quotas.record(quota_type, user, client_id, nbytes, ctx.cluster.clock.now_ms()))


def unrecord_bytes(ctx: RequestContext, quota_type: str, nbytes: int) -> None:
    user, client_id = _who(ctx)
    ctx.cluster.client_quotas.unrecord(quota_type, user, client_id, nbytes, ctx.cluster.clock.now_ms())


def fetch_allowance(ctx: RequestContext) -> int | None:
    """The most a Fetch may return without being throttled whatever came before (None: no quota)."""
    quotas = ctx.cluster.client_quotas
    if not quotas.entries:
        return None
    allowance = quotas.max_value_in_window(QuotaType.FETCH, *_who(ctx))
    return None if allowance is None else max(int(allowance), 1)


def record_request_time(ctx: RequestContext, nanos: int, result: Any) -> int:
    """Counts a request's handling time against `request_percentage`: the throttle time earned, set on the answer
    (when it carries throttle_time_ms) and the connection."""
    quotas = ctx.cluster.client_quotas
    if not quotas.entries:
        return 0
    user, client_id = _who(ctx)
    ms = quotas.record(QuotaType.REQUEST, user, client_id, nanos * _NANOS_TO_PERCENTAGE, ctx.cluster.clock.now_ms())
    return _throttled(ctx, result if isinstance(result, dict) and "throttle_time_ms" in result else None, ms)


class MutationQuota:
    """One CreateTopics, CreatePartitions or DeleteTopics request's controller mutation quota (Kafka's
    ControllerMutationQuotaManager.newQuotaFor): strict from `strict_since` (refused with THROTTLING_QUOTA_EXCEEDED
    while the client's token bucket is empty), permissive before (admitted, throttled)."""

    def __init__(self, ctx: RequestContext, strict_since: int) -> None:
        self._ctx = ctx
        self._strict = ctx.version >= strict_since
        self.throttle_ms = 0

    def admit(self, partitions: int) -> None:
        """Counts a mutation of `partitions`; raises THROTTLING_QUOTA_EXCEEDED when the strict quota refuses it."""
        ctx = self._ctx
        admitted, ms = ctx.cluster.client_quotas.record_mutation(*_who(ctx), partitions, ctx.cluster.clock.now_ms(),
                                                                 strict=self._strict)
        if ms:
            self.throttle_ms = ms
        if not admitted:
            raise ApiError(ErrorCode.THROTTLING_QUOTA_EXCEEDED)  # no message: Kafka 4.4.0 measured

    def answer(self, result: dict[str, Any]) -> dict[str, Any]:
        """The answer with the throttle time earned, the connection muted for it (as Kafka's
        sendResponseMaybeThrottleWithControllerQuota)."""
        _throttled(self._ctx, result, self.throttle_ms)
        return result
