"""Checks shared by the partition-addressed APIs (Fetch, ListOffsets, OffsetForLeaderEpoch, DeleteRecords)."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

from fakekafka.handlers.registry import RequestContext
from fakekafka.model.cluster import Partition
from wire import ErrorCode

__all__ = ["leader_check", "led_partitions"]


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


def led_partitions(ctx: RequestContext, topic: str, partitions: Iterable[Any]
                   ) -> Iterator[tuple[Any, Partition | None, ErrorCode]]:
    """Each requested partition of `topic` (by `partition_index`) with its leader check; one asked for twice
    in the same topic gets INVALID_REQUEST, as Kafka answers a duplicate."""
    seen: set[int] = set()
    for p in partitions:
        partition = ctx.cluster.partition(topic, p.partition_index)
        code = leader_check(ctx, partition, p.get("current_leader_epoch", -1))
        if p.partition_index in seen:
            code = ErrorCode.INVALID_REQUEST
        seen.add(p.partition_index)
        yield p, partition, code
