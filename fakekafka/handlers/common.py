"""Checks shared by the partition-addressed APIs (Fetch, ListOffsets, OffsetForLeaderEpoch, DeleteRecords)."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from typing import Any

from fakekafka.handlers.authz import authorize
from fakekafka.handlers.registry import RequestContext
from fakekafka.model.acl import AclOperation, ResourceType
from fakekafka.model.metadata import Broker, Partition
from fakekafka.wire import ErrorCode

__all__ = ["leader_check", "led_partitions", "merged"]


def not_coordinator_of(ctx: RequestContext, key: str, lookup: Callable[[str], Broker | None]) -> bool:
    """True when this broker is not the coordinator `lookup` names for `key` (a group's, a transactional id's):
    the request is answered NOT_COORDINATOR, and the client looks the coordinator up again (after it moved with a
    leader election, say). An empty key has no coordinator to be wrong about."""
    if not key:
        return False
    coordinator = lookup(key)
    return coordinator is None or coordinator.node_id != ctx.broker.node_id


def leader_check(ctx: RequestContext, partition: Partition | None, current_leader_epoch: int = -1) -> ErrorCode:
    """NONE if this broker leads `partition` at the epoch the client believes is current."""
    if partition is None:
        return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    if partition.leader_id != ctx.broker.node_id:
        return ErrorCode.NOT_LEADER_OR_FOLLOWER
    return epoch_check(partition, current_leader_epoch)


def epoch_check(partition: Partition, current_leader_epoch: int) -> ErrorCode:
    """NONE unless the client names a leader epoch (>= 0) older or newer than the partition's."""
    if current_leader_epoch >= 0:
        if current_leader_epoch < partition.leader_epoch:
            return ErrorCode.FENCED_LEADER_EPOCH
        if current_leader_epoch > partition.leader_epoch:
            return ErrorCode.UNKNOWN_LEADER_EPOCH
    return ErrorCode.NONE


def merged(topics: Iterable[Any], name: str = "name", index: str = "partition_index"
           ) -> list[tuple[Any, list[tuple[Any, bool]]]]:
    """The request's topics by `name` and their partitions by `index`, each once, in order of first appearance,
    with the last entry given and whether there was more than one: Kafka reads these requests into maps, so
    it answers a topic named twice in one entry and a partition asked for twice once."""
    out: dict[Any, dict[int, tuple[Any, bool]]] = {}
    for t in topics:
        parts = out.setdefault(t[name], {})
        for p in t.partitions:
            parts[p[index]] = (p, p[index] in parts)  # an existing key keeps its place
    return [(key, list(parts.values())) for key, parts in out.items()]


def led_partitions(ctx: RequestContext, topic: str, partitions: Iterable[tuple[Any, bool]], *,
                   duplicates_invalid: bool, operation: AclOperation | None = None
                   ) -> Iterator[tuple[Any, Partition | None, ErrorCode]]:
    """Each partition of `topic` from `merged` with its leader check; one asked for more than once gets
    INVALID_REQUEST if `duplicates_invalid` (ListOffsets; DeleteRecords takes the last offset given). With an
    `operation` the client may not do on the topic, each is TOPIC_AUTHORIZATION_FAILED instead."""
    allowed = operation is None or authorize(ctx, operation, ResourceType.TOPIC, topic)
    for p, duplicated in partitions:
        partition = ctx.cluster.partition(topic, p.partition_index)
        code = leader_check(ctx, partition, p.get("current_leader_epoch", -1)) if allowed \
            else ErrorCode.TOPIC_AUTHORIZATION_FAILED
        if duplicated and duplicates_invalid:
            code = ErrorCode.INVALID_REQUEST
        yield p, partition, code
