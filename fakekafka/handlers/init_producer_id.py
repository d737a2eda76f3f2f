"""InitProducerId (key 22), v0-5: producer ids and epochs for idempotent producers.

Behaviour: a transactional id gets a stable producer id and a bumped epoch on each call (fencing the
previous holder), but the transaction APIs themselves are not implemented yet and not advertised.
"""

from __future__ import annotations

from typing import Any

from construct import Container

from fakekafka.handlers.registry import RequestContext, handles


@handles(22, 0, 5)
def handle_init_producer_id(ctx: RequestContext, req: Container) -> dict[str, Any]:
    code, pid, epoch = ctx.cluster.producer_ids.init(req.transactional_id, req.get("producer_id", -1),
                                                      req.get("producer_epoch", -1))
    return {"throttle_time_ms": 0, "error_code": code, "producer_id": pid, "producer_epoch": epoch}
