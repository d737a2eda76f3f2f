"""GetTelemetrySubscriptions (key 71) v0 and PushTelemetry (key 72) v0: client telemetry (KIP-714).

Advertised only by a broker with client telemetry on (`Cluster(client_telemetry=True)`, `serve
--client-telemetry`, or the `metric.reporters` it reads, its own or the cluster-wide one, naming
`fakekafka.ClientTelemetryReceiver`), as a Kafka 4.4 broker advertises them only with a metrics reporter that
receives client telemetry. Asked anyway, both are answered, as Kafka 4.4
answers them (tests/conformance/test_api_sweep.py): subscriptions from the CLIENT_METRICS resources, pushes checked
and decompressed, but nothing decodes or keeps them. The subscriptions, checks and error codes are Kafka's
ClientMetricsManager's (fakekafka/model/client_telemetry.py); no ACL is checked, as on Kafka.
"""

from __future__ import annotations

import uuid
from typing import Any

from construct import Container

from fakekafka.handlers.registry import RequestContext, handles
from fakekafka.model.client_telemetry import ClientInfo
from fakekafka.model.config import BrokerConfig
from fakekafka.wire import ApiKey, ErrorCode


def _on(config: BrokerConfig, node_id: int | None) -> bool:
    return config.client_telemetry_on(node_id)


def _client(ctx: RequestContext) -> ClientInfo:
    """The selectors a subscription's `match` reads: the request's client id, the connection's ApiVersions
    software name and version, and its peer's address and port."""
    name, version = ctx.connection.client_software or (None, None)
    host, sep, port = ctx.client_host.rpartition(":")
    return ClientInfo(
        ctx.request.client_id, name, version, (host if sep else ctx.client_host) or None, port if sep else None
    )


@handles(ApiKey.GET_TELEMETRY_SUBSCRIPTIONS, 0, 0, advertised_when=_on)
def handle_get_telemetry_subscriptions(ctx: RequestContext, req: Container) -> dict[str, Any]:
    got = ctx.cluster.client_telemetry.get_subscriptions(
        ctx.broker.node_id, req.get("client_instance_id"), _client(ctx), id(ctx.connection)
    )
    if got.error != ErrorCode.NONE:  # Kafka's error answer: the code, every other field at its default
        return {"throttle_time_ms": 0, "error_code": got.error}
    return {
        "throttle_time_ms": 0,
        "error_code": ErrorCode.NONE,
        "client_instance_id": got.client_instance_id,
        "subscription_id": got.subscription_id,
        "accepted_compression_types": list(got.accepted_compression_types),
        "push_interval_ms": got.push_interval_ms,
        "telemetry_max_bytes": got.telemetry_max_bytes,
        "delta_temporality": got.delta_temporality,
        "requested_metrics": list(got.requested_metrics),
    }


@handles(ApiKey.PUSH_TELEMETRY, 0, 0, advertised_when=_on)
def handle_push_telemetry(ctx: RequestContext, req: Container) -> dict[str, Any]:
    instance_id = req.get("client_instance_id") or uuid.UUID(int=0)
    error, _message = ctx.cluster.client_telemetry.push(
        ctx.broker.node_id,
        instance_id,
        req.get("subscription_id", 0),
        bool(req.get("terminating")),
        req.get("compression_type", 0),
        bytes(req.get("metrics") or b""),
        _client(ctx),
        id(ctx.connection),
    )
    return {"throttle_time_ms": 0, "error_code": error}
