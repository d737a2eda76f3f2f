"""OffsetForLeaderEpoch (key 23), v0-4: the end offset of a leader epoch, from the leader's epoch history.

Clients call it after a leader change to detect truncation. The end offset is Kafka's
(LeaderEpochFileCache.endOffsetFor, see PartitionLog.end_offset_for_epoch): an epoch newer than the
leader's gets (-1, -1). v0 answers without the epoch; v2+ also
checks the client's current leader epoch (FENCED_LEADER_EPOCH if older, UNKNOWN_LEADER_EPOCH if newer).
Deliberate difference: v0-1 are still served (Kafka 4 removed them, KIP-896); they answer as Kafka 3.x did.
"""

from __future__ import annotations

from typing import Any

from construct import Container

from fakekafka.handlers.authz import authorize, authorize_cluster
from fakekafka.handlers.common import leader_check
from fakekafka.handlers.registry import ErrorContext, RequestContext, handles
from fakekafka.model.acl import AclOperation, ResourceType
from fakekafka.wire import ApiKey, ErrorCode


def offset_for_leader_epoch_error_response(ctx: ErrorContext, req: Container, code: ErrorCode) -> dict[str, Any]:
    """An injected error for every partition asked about (there is no top-level error code)."""
    return {"throttle_time_ms": 0, "topics": [
        {"topic": t.topic, "partitions": [{"error_code": code, "partition": p.partition, "leader_epoch": -1,
                                           "end_offset": -1} for p in t.partitions]} for t in req.topics]}


@handles(ApiKey.OFFSET_FOR_LEADER_EPOCH, 0, 4, errors=offset_for_leader_epoch_error_response)
def handle_offset_for_leader_epoch(ctx: RequestContext, req: Container) -> dict[str, Any]:
    topics = []
    replica = authorize_cluster(ctx, AclOperation.CLUSTER_ACTION)  # a follower may ask of any topic
    for t in req.topics:
        results = []
        allowed = replica or authorize(ctx, AclOperation.DESCRIBE, ResourceType.TOPIC, t.topic)
        for p in t.partitions:
            partition = ctx.cluster.partition(t.topic, p.partition)
            code = leader_check(ctx, partition, p.get("current_leader_epoch", -1)) if allowed \
                else ErrorCode.TOPIC_AUTHORIZATION_FAILED
            epoch, end = -1, -1
            if code == ErrorCode.NONE:
                assert partition is not None
                epoch, end = partition.log.end_offset_for_epoch(p.leader_epoch, partition.leader_epoch)
            results.append({"error_code": code, "partition": p.partition, "leader_epoch": epoch, "end_offset": end})
        topics.append({"topic": t.topic, "partitions": results})
    return {"throttle_time_ms": 0, "topics": topics}
