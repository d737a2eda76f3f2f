"""DescribeLogDirs (key 35), v1-5, and AlterReplicaLogDirs (key 34), v1-2: each broker's log directories,
the partition replicas each holds, and moving a replica between them.

kafka-log-dirs asks every broker; kafka-reassign-partitions asks too, to print where each replica lives, and
moves replicas between a broker's dirs with AlterReplicaLogDirs when its plan names log dirs other than "any".

Behaviour, as Kafka's KafkaApis and ReplicaManager answer: a broker has the log dirs of `log.dirs` (else
`log.dir`, Kafka's default "/tmp/kafka-logs"), names in the model (the logs themselves are in memory, and with
a data dir in files under `DIR/broker-N/<the name, slashes as underscores>/`, fakekafka/storage/datadir.py); a new
replica goes to the dir with the fewest partitions (model/log_dirs.py's place_replicas, as Kafka's
LogManager.nextLogDirs). DescribeLogDirs answers one result per dir, in `log.dirs` order, with the broker's
own replicas in it: a null topic list asks for every replica; otherwise the partitions named that the
broker holds (unknown topics and partitions, or ones held by other brokers, are left out without an error),
a topic with none of them left out too. A replica's size is its segments' sizes, as Kafka's files would be:
after DeleteRecords the segment holding the new start still counts the records below it; its offset lag is
max(high watermark - log end offset, 0), 0 here as in a healthy Kafka. v0 is gone from Kafka 4 (KIP-896).
A client without DESCRIBE on the cluster (ACLs) gets CLUSTER_AUTHORIZATION_FAILED and no results (v1-2
cannot carry the code: just no results, as from Kafka).

AlterReplicaLogDirs, per partition (Kafka 4.4's codes, compared by tests/conformance/test_api_sweep.py):
LOG_DIR_NOT_FOUND for a path not among the broker's dirs (checked first, by exact name), UNKNOWN_TOPIC_OR_PARTITION,
REPLICA_NOT_AVAILABLE for a partition the broker holds no replica of (the dir is remembered: the replica is
made there if it comes, as a reassignment with log dirs needs), NONE otherwise (the same dir: nothing to do).
Without ALTER on the cluster: CLUSTER_AUTHORIZATION_FAILED for every partition. v0 is gone from Kafka 4
(KIP-896; Kafka closes the connection), and fakekafka does not advertise it.

Differences (compat/KNOWN_DIFFERENCES.md, "The log"):
- total_bytes and usable_bytes (v4+) are -1, the protocol's "unknown": no volume holds the in-memory logs.
- DeleteRecords up to the log end empties fakekafka's log at once (size 0), where Kafka keeps its active
  segment, and its size, until the segment rolls.
- A replica moves at once: Kafka copies it into a future replica (DescribeLogDirs lists it in the new dir
  with is_future_key true beside the current one) that takes over when caught up, some milliseconds later
  for a small log; fakekafka answers is_future_key false always, the move being already done.
"""

from __future__ import annotations

from typing import Any

from construct import Container

from fakekafka.handlers.authz import authorize_cluster
from fakekafka.handlers.registry import ErrorContext, RequestContext, handles
from fakekafka.model.acl import AclOperation
from fakekafka.wire import ApiKey, ErrorCode

UNKNOWN_VOLUME_BYTES = -1


def describe_log_dirs_error_response(ctx: ErrorContext, req: Container, code: ErrorCode) -> dict[str, Any]:
    """Kafka's DescribeLogDirsRequest.getErrorResponse: the top-level code from v3. v1-2 have no top-level code
    (Kafka's answer is then empty), so the error is said as an offline directory says its own: on the log dir."""
    if ctx.version >= 3:
        return {"throttle_time_ms": 0, "error_code": code, "results": []}
    return {"throttle_time_ms": 0, "error_code": code,
            "results": [{"error_code": code, "log_dir": d, "topics": []} for d in ctx.facts.log_dirs]}


@handles(ApiKey.DESCRIBE_LOG_DIRS, 1, 5, errors=describe_log_dirs_error_response)
def handle_describe_log_dirs(ctx: RequestContext, req: Container) -> dict[str, Any]:
    cluster, node = ctx.cluster, ctx.broker.node_id
    if not authorize_cluster(ctx, AclOperation.DESCRIBE):  # Kafka: DESCRIBE on the cluster, else nothing
        return {"throttle_time_ms": 0, "error_code": ErrorCode.CLUSTER_AUTHORIZATION_FAILED, "results": []}
    wanted: set[tuple[str, int]] | None = None
    if req.topics is not None:
        wanted = {(t.topic, i) for t in req.topics for i in t.partitions}
    by_dir: dict[str, dict[str, list[dict[str, Any]]]] = {d: {} for d in cluster.log_dirs()}
    for topic in cluster.topics.values():
        for p in topic.partitions:
            log = p.logs.get(node)
            if log is None or (wanted is not None and (topic.name, p.index) not in wanted):
                continue
            home = log.log_dir or next(iter(by_dir))  # a replica not yet placed: the first dir
            by_dir.setdefault(home, {}).setdefault(topic.name, []).append({
                "partition_index": p.index, "partition_size": sum(seg.size for seg in log.segments),
                "offset_lag": max(log.high_watermark - log.log_end_offset, 0), "is_future_key": False})
    results = [{"error_code": ErrorCode.NONE, "log_dir": d,
                "topics": [{"name": name, "partitions": parts} for name, parts in topics.items()],
                "total_bytes": UNKNOWN_VOLUME_BYTES, "usable_bytes": UNKNOWN_VOLUME_BYTES}
               for d, topics in by_dir.items()]
    return {"throttle_time_ms": 0, "error_code": ErrorCode.NONE, "results": results}


def alter_replica_log_dirs_error_response(ctx: ErrorContext, req: Container, code: ErrorCode) -> dict[str, Any]:
    """The error for every partition named (the response has no top-level code), as Kafka's getErrorResponse."""
    topics: dict[str, list[int]] = {}
    for d in req.dirs:
        for t in d.topics:
            topics.setdefault(t.name, []).extend(t.partitions)
    return {"throttle_time_ms": 0, "results": [
        {"topic_name": name, "partitions": [{"partition_index": i, "error_code": code} for i in parts]}
        for name, parts in topics.items()]}


@handles(ApiKey.ALTER_REPLICA_LOG_DIRS, 1, 2, errors=alter_replica_log_dirs_error_response)
def handle_alter_replica_log_dirs(ctx: RequestContext, req: Container) -> dict[str, Any]:
    if not authorize_cluster(ctx, AclOperation.ALTER):
        return alter_replica_log_dirs_error_response(ctx, req, ErrorCode.CLUSTER_AUTHORIZATION_FAILED)
    results: dict[str, dict[int, ErrorCode]] = {}
    for d in req.dirs:
        for t in d.topics:
            for i in t.partitions:
                code = ctx.cluster.alter_replica_log_dir(ctx.broker.node_id, t.name, i, d.path)
                results.setdefault(t.name, {})[i] = code
    return {"throttle_time_ms": 0, "results": [
        {"topic_name": name, "partitions": [{"partition_index": i, "error_code": c} for i, c in parts.items()]}
        for name, parts in results.items()]}
