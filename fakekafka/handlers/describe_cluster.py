"""DescribeCluster (key 60), v0-2: the cluster id, the controller and the brokers.

Behaviour: asking a broker for controller endpoints (endpoint type 2) gets MISMATCHED_ENDPOINT_TYPE,
as a Kafka broker answers (with its own endpoint type, 1, in the answer). A stopped broker is left out at
once (Kafka fences it when its heartbeats stop, after broker.session.timeout.ms); v2 asked to include fenced
brokers (KIP-1073) lists it with is_fenced set.
"""

from __future__ import annotations

from typing import Any

from construct import Container

from fakekafka.handlers.authz import authorize_cluster, authorized_operations
from fakekafka.handlers.registry import RequestContext, handles
from fakekafka.model.acl import CLUSTER_NAME, AclOperation, ResourceType
from fakekafka.wire import ApiKey, ErrorCode

BROKERS = 1


def _address(endpoint: tuple[str, int]) -> dict[str, Any]:
    return {"host": endpoint[0], "port": endpoint[1]}


@handles(ApiKey.DESCRIBE_CLUSTER, 0, 2)
def handle_describe_cluster(ctx: RequestContext, req: Container) -> dict[str, Any]:
    cluster = ctx.cluster
    endpoint_type = req.get("endpoint_type", BROKERS)
    if endpoint_type != BROKERS:
        return {"throttle_time_ms": 0, "error_code": ErrorCode.MISMATCHED_ENDPOINT_TYPE,
                "error_message": "The request was sent to an endpoint of type BROKER, but we wanted an endpoint "
                                 "of type CONTROLLER", "endpoint_type": BROKERS, "cluster_id": "",
                "controller_id": -1, "brokers": []}
    return {
        "throttle_time_ms": 0, "error_code": ErrorCode.NONE, "error_message": None, "endpoint_type": BROKERS,
        "cluster_id": cluster.config.cluster_id, "controller_id": cluster.controller_id,
        "brokers": [{"broker_id": b.node_id, **_address(b.endpoint(ctx.listener)), "rack": b.rack,
                     "is_fenced": not b.alive}
                    for b in cluster.brokers.values() if b.alive or req.get("include_fenced_brokers")],
        "cluster_authorized_operations": (
            authorized_operations(ctx, ResourceType.CLUSTER, CLUSTER_NAME)
            if authorize_cluster(ctx, AclOperation.DESCRIBE) else 0)
        if req.get("include_cluster_authorized_operations") else -2147483648,
    }
