"""The authorizer as the handlers ask it (Kafka's AuthHelper): who the client is, from where, and whether it
may do an operation on a resource.

The principal is Kafka's default principal builder's: `User:<name>` after SASL, `User:<subject DN>` (through
ssl.principal.mapping.rules) for a TLS client certificate, `User:ANONYMOUS` otherwise. The host is the client's
address as Java's InetAddress.getHostAddress() writes it. With no authorizer configured (Kafka's default) every
check passes and `authorized_operations` fields carry every operation the resource type has.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Callable, Iterable

from fakekafka.handlers.registry import RequestContext
from fakekafka.model.acl import CLUSTER_NAME, AclOperation, ResourceType, supported_operations
from fakekafka.wire import ApiKey

__all__ = ["authorize", "authorize_cluster", "authorized_operations", "client_address", "filter_authorized",
           "principal"]

ANONYMOUS = "User:ANONYMOUS"


CLUSTER_APIS = {ApiKey.ELECT_LEADERS: AclOperation.ALTER, ApiKey.ALTER_PARTITION_REASSIGNMENTS: AclOperation.ALTER,
                ApiKey.LIST_PARTITION_REASSIGNMENTS: AclOperation.DESCRIBE,
                ApiKey.DESCRIBE_QUORUM: AclOperation.DESCRIBE,
                ApiKey.WRITE_TXN_MARKERS: AclOperation.CLUSTER_ACTION}
"""APIs that act on the cluster as a whole (ElectLeaders, Alter/ListPartitionReassignments, WriteTxnMarkers,
DescribeQuorum):
the operation they need on it, checked before the handler runs (CLUSTER_AUTHORIZATION_FAILED)."""


def principal(ctx: RequestContext) -> str:
    sasl = ctx.connection.sasl
    if sasl is not None and sasl.principal is not None:
        return f"User:{sasl.principal}"
    return ctx.connection.ssl_principal or ANONYMOUS


def client_address(ctx: RequestContext) -> str:
    """The client's IP as ACL hosts name it (Java's getHostAddress: `127.0.0.1`, `0:0:0:0:0:0:0:1`)."""
    host = ctx.client_host.rsplit(":", 1)[0].strip("[]") if ctx.client_host else "127.0.0.1"
    try:
        address = ipaddress.ip_address(host.partition("%")[0])
    except ValueError:
        return host
    if address.version == 6:
        return ":".join(f"{int(group, 16):x}" for group in address.exploded.split(":"))
    return str(address)


def authorize(ctx: RequestContext, operation: AclOperation, resource_type: ResourceType, name: str) -> bool:
    authorizer = ctx.cluster.authorizer
    if authorizer is None:
        return True
    return authorizer.authorize(principal(ctx), client_address(ctx), operation, resource_type, name)


def topic_checker(ctx: RequestContext, operation: AclOperation) -> Callable[[str], bool] | None:
    """Whether this client may do `operation` on a topic, asked later (a regex resolved when topics change), by
    its principal and address rather than the request; None without an authorizer."""
    authorizer = ctx.cluster.authorizer
    if authorizer is None:
        return None
    who, host = principal(ctx), client_address(ctx)
    return lambda name: authorizer.authorize(who, host, operation, ResourceType.TOPIC, name)


def authorize_cluster(ctx: RequestContext, operation: AclOperation) -> bool:
    return authorize(ctx, operation, ResourceType.CLUSTER, CLUSTER_NAME)


def cluster_denied(ctx: RequestContext, operation: AclOperation) -> str:
    """The message of Kafka's ClusterAuthorizationException for a request refused on the cluster: the request
    described, then the operation (Kafka prints its internal request object; the shape is kept, the insides
    are fakekafka's)."""
    return (f"Request Request(connectionId={ctx.client_host}, listenerName=ListenerName({ctx.listener or 'PLAINTEXT'})"
            f", principal={principal(ctx)}) needs {operation.name} permission.")


def authorize_by_resource_type(ctx: RequestContext, operation: AclOperation, resource_type: ResourceType) -> bool:
    authorizer = ctx.cluster.authorizer
    if authorizer is None:
        return True
    return authorizer.authorize_by_resource_type(principal(ctx), client_address(ctx), operation, resource_type)


def filter_authorized(ctx: RequestContext, operation: AclOperation, resource_type: ResourceType,
                      names: Iterable[str]) -> set[str]:
    """The names among `names` the client may do `operation` on (each asked once)."""
    return {n for n in set(names) if authorize(ctx, operation, resource_type, n)}


def authorized_operations(ctx: RequestContext, resource_type: ResourceType, name: str) -> int:
    """An `authorized_operations` bit field (bit n: the operation with code n)."""
    authorizer = ctx.cluster.authorizer
    if authorizer is None:
        return sum(1 << op for op in supported_operations(resource_type))
    return authorizer.authorized_operations(principal(ctx), client_address(ctx), resource_type, name)
