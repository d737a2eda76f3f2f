"""DescribeLogDirs (key 35), v1-5: each broker's log directory and the partition replicas it holds.

kafka-log-dirs asks every broker; kafka-reassign-partitions asks too, to print where each replica lives.

Behaviour, as Kafka's KafkaApis and ReplicaManager.describeLogDirs answer: a broker answers for its own
replicas only, in its one log directory (`Broker.log_dir`, "/tmp/kafka-logs": Kafka's default `log.dir`; the
logs themselves are in memory). A null topic list asks for every replica the broker holds; otherwise the
partitions named that the broker holds (unknown topics and partitions, or ones held by other brokers, are
left out without an error), a topic with none of them left out too. A replica's size is its segments'
sizes, as Kafka's files would be: after DeleteRecords the segment holding the new start still counts the
records below it; its offset lag is max(high watermark - log end offset, 0), 0 here as in a healthy
Kafka. v0 is gone from Kafka 4 (KIP-896). A client without DESCRIBE on the cluster (ACLs) gets
CLUSTER_AUTHORIZATION_FAILED and no results (v1-2 cannot carry the code: just no results, as from Kafka).

Differences (compat/KNOWN_DIFFERENCES.md):
- total_bytes and usable_bytes (v4+) are -1, the protocol's "unknown": no volume holds the in-memory logs.
- DeleteRecords up to the log end empties fakekafka's log at once (size 0), where Kafka keeps its active
  segment, and its size, until the segment rolls.
"""

from __future__ import annotations

from typing import Any

from construct import Container

from fakekafka.handlers.authz import authorize_cluster
from fakekafka.handlers.registry import RequestContext, handles
from fakekafka.model.acl import AclOperation
from wire import ErrorCode

UNKNOWN_VOLUME_BYTES = -1


def describe_log_dirs_error_response(ctx: RequestContext, req: Container, code: ErrorCode) -> dict[str, Any]:
    """Kafka's DescribeLogDirsRequest.getErrorResponse: the top-level code from v3. v1-2 have no top-level code
    (Kafka's answer is then empty), so the error is said as an offline directory says its own: on the log dir."""
    if ctx.version >= 3:
        return {"throttle_time_ms": 0, "error_code": code, "results": []}
    return {"throttle_time_ms": 0, "error_code": code,
            "results": [{"error_code": code, "log_dir": ctx.broker.log_dir, "topics": []}]}


@handles(35, 1, 5, errors=describe_log_dirs_error_response)
def handle_describe_log_dirs(ctx: RequestContext, req: Container) -> dict[str, Any]:
    cluster, node = ctx.cluster, ctx.broker.node_id
    if not authorize_cluster(ctx, AclOperation.DESCRIBE):  # Kafka: DESCRIBE on the cluster, else nothing
        return {"throttle_time_ms": 0, "error_code": ErrorCode.CLUSTER_AUTHORIZATION_FAILED, "results": []}
    wanted: set[tuple[str, int]] | None = None
    if req.topics is not None:
        wanted = {(t.topic, i) for t in req.topics for i in t.partitions}
    topics: dict[str, list[dict[str, Any]]] = {}
    for topic in cluster.topics.values():
        for p in topic.partitions:
            log = p.logs.get(node)
            if log is None or (wanted is not None and (topic.name, p.index) not in wanted):
                continue
            topics.setdefault(topic.name, []).append({
                "partition_index": p.index, "partition_size": sum(seg.size for seg in log.segments),
                "offset_lag": max(log.high_watermark - log.log_end_offset, 0), "is_future_key": False})
    result = {"error_code": ErrorCode.NONE, "log_dir": ctx.broker.log_dir,
              "topics": [{"name": name, "partitions": parts} for name, parts in topics.items()],
              "total_bytes": UNKNOWN_VOLUME_BYTES, "usable_bytes": UNKNOWN_VOLUME_BYTES}
    return {"throttle_time_ms": 0, "error_code": ErrorCode.NONE, "results": [result]}
