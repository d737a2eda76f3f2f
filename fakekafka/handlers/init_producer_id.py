"""InitProducerId (key 22), v0-5: producer ids and epochs.

Without a transactional id any broker hands out a new id (or, KIP-360, bumps the epoch of the id the producer
names). With one, only the id's transaction coordinator answers (NOT_COORDINATOR elsewhere), following Kafka's
TransactionCoordinator: the epoch is bumped, an open transaction of the previous holder is aborted under a
fencing epoch and this producer is told CONCURRENT_TRANSACTIONS to retry, a timeout above
transaction.max.timeout.ms is INVALID_TRANSACTION_TIMEOUT, and PRODUCER_FENCED is INVALID_PRODUCER_EPOCH below
v4 (KafkaApis). A producer id without an epoch, or an epoch without an id, is INVALID_REQUEST. With an authorizer, a
transactional id needs WRITE on it (TRANSACTIONAL_ID_AUTHORIZATION_FAILED) and an idempotent producer
IDEMPOTENT_WRITE on the cluster or WRITE on some topic (CLUSTER_AUTHORIZATION_FAILED), as Kafka's.
"""

from __future__ import annotations

from typing import Any

from construct import Container

from fakekafka.handlers.authz import authorize, authorize_by_resource_type, authorize_cluster
from fakekafka.handlers.registry import RequestContext, handles
from fakekafka.handlers.transactions import fenced_for, not_transaction_coordinator
from fakekafka.model.acl import AclOperation, ResourceType
from fakekafka.wire import ApiKey, ErrorCode


@handles(ApiKey.INIT_PRODUCER_ID, 0, 5)
def handle_init_producer_id(ctx: RequestContext, req: Container) -> dict[str, Any]:
    cluster = ctx.cluster
    pid, epoch = req.get("producer_id", -1), req.get("producer_epoch", -1)
    if req.transactional_id is not None and not authorize(ctx, AclOperation.WRITE, ResourceType.TRANSACTIONAL_ID,
                                                          req.transactional_id):
        code, pid, epoch = ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED, -1, -1
    elif req.transactional_id is None and not (
            authorize_cluster(ctx, AclOperation.IDEMPOTENT_WRITE)
            or authorize_by_resource_type(ctx, AclOperation.WRITE, ResourceType.TOPIC)):
        code, pid, epoch = ErrorCode.CLUSTER_AUTHORIZATION_FAILED, -1, -1
    elif (pid == -1) != (epoch == -1):
        code, pid, epoch = ErrorCode.INVALID_REQUEST, -1, -1
    elif req.transactional_id is None:
        code, pid, epoch = cluster.producer_ids.init(pid, epoch)
    elif req.transactional_id and not_transaction_coordinator(ctx, req.transactional_id):
        code, pid, epoch = ErrorCode.NOT_COORDINATOR, -1, -1
    else:
        code, pid, epoch = cluster.transactions.init_producer_id(req.transactional_id, req.transaction_timeout_ms,
                                                                 (pid, epoch) if pid >= 0 else None)
    return {"throttle_time_ms": 0, "error_code": fenced_for(ctx.version, code, 4), "producer_id": pid,
            "producer_epoch": epoch}
