"""Checks shared by the partition-addressed APIs (Fetch, ListOffsets, OffsetForLeaderEpoch)."""

from __future__ import annotations

from fakekafka.handlers.registry import RequestContext
from fakekafka.model.cluster import Partition
from wire import ErrorCode

__all__ = ["leader_check"]


def leader_check(ctx: RequestContext, partition: Partition | None, current_leader_epoch: int = -1) -> ErrorCode:
    """NONE if this broker leads `partition` at the epoch the client believes is current."""
    if partition is None:
        return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    if partition.leader_id != ctx.broker.node_id:
        return ErrorCode.NOT_LEADER_OR_FOLLOWER
    if current_leader_epoch >= 0:
        if current_leader_epoch < partition.leader_epoch:
            return ErrorCode.FENCED_LEADER_EPOCH
        if current_leader_epoch > partition.leader_epoch:
            return ErrorCode.UNKNOWN_LEADER_EPOCH
    return ErrorCode.NONE
