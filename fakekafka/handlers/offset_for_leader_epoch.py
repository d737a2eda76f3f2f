"""OffsetForLeaderEpoch (key 23), v2-4: the end offset of a leader epoch, from the epoch history.

Clients call it after a leader change to detect truncation; with one replica per partition the
history holds one epoch, and a newer epoch than the leader's gets UNKNOWN_LEADER_EPOCH.
"""

from __future__ import annotations

from typing import Any

from construct import Container

from fakekafka.handlers.common import leader_check
from fakekafka.handlers.registry import RequestContext, handles
from wire import ErrorCode


@handles(23, 2, 4)
def handle_offset_for_leader_epoch(ctx: RequestContext, req: Container) -> dict[str, Any]:
    topics = []
    for t in req.topics:
        results = []
        for p in t.partitions:
            partition = ctx.cluster.partition(t.topic, p.partition)
            code = leader_check(ctx, partition, p.current_leader_epoch)
            epoch, end = -1, -1
            if code == ErrorCode.NONE:
                assert partition is not None
                if not partition.log.epochs:
                    epoch, end = (partition.leader_epoch, partition.log.log_end_offset) \
                        if p.leader_epoch >= partition.leader_epoch else (-1, -1)
                else:
                    epoch, end = partition.log.end_offset_for_epoch(p.leader_epoch)
            results.append({"error_code": code, "partition": p.partition, "leader_epoch": epoch, "end_offset": end})
        topics.append({"topic": t.topic, "partitions": results})
    return {"throttle_time_ms": 0, "topics": topics}
