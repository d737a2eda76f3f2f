"""InitProducerId (key 22), v0-5: producer ids and epochs.

Without a transactional id any broker hands out a new id (or, KIP-360, bumps the epoch of the id the producer
names). With one, only the id's transaction coordinator answers (NOT_COORDINATOR elsewhere), following Kafka's
TransactionCoordinator: the epoch is bumped, an open transaction of the previous holder is aborted under a
fencing epoch and this producer is told CONCURRENT_TRANSACTIONS to retry, a timeout above
transaction.max.timeout.ms is INVALID_TRANSACTION_TIMEOUT, and PRODUCER_FENCED is INVALID_PRODUCER_EPOCH below
v4 (KafkaApis). A producer id without an epoch, or an epoch without an id, is INVALID_REQUEST.
"""

from __future__ import annotations

from typing import Any

from construct import Container

from fakekafka.handlers.registry import RequestContext, handles
from fakekafka.handlers.transactions import fenced_for, not_transaction_coordinator
from wire import ErrorCode


@handles(22, 0, 5)
def handle_init_producer_id(ctx: RequestContext, req: Container) -> dict[str, Any]:
    cluster = ctx.cluster
    pid, epoch = req.get("producer_id", -1), req.get("producer_epoch", -1)
    if (pid == -1) != (epoch == -1):
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
