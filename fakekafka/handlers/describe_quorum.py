"""DescribeQuorum (key 55), v0-2: the KRaft controller quorum, as `kafka-metadata-quorum describe` asks for it.

fakekafka models its controller as Kafka's combined nodes (process.roles=broker,controller) have it: every broker
is a voter, the lowest live one leads (the cluster's controller, its epoch the leader epoch), and there are no
observers. The metadata log is the model's record of metadata changes (topics and partitions made and deleted,
leader and ISR changes, brokers going and coming back, config changes): one entry per change, so its end grows
as Kafka's does, though by fewer records (Kafka writes several records per change and a NoOp every
metadata.max.idle.interval.ms). Live voters have fetched all of it, now on the cluster's clock; a stopped one
reports -1 (unknown), as Kafka does for a voter it has not heard from. A node's listeners are its broker
listeners: fakekafka has no controller listener (compat/KNOWN_DIFFERENCES.md). A request for anything but exactly
`__cluster_metadata` partition 0 gets UNKNOWN_TOPIC_OR_PARTITION on every partition it names, as Kafka's raft
client answers it.
"""

from __future__ import annotations

from typing import Any

from construct import Container

from fakekafka.handlers.registry import ErrorContext, RequestContext, handles
from fakekafka.model.cluster import ClusterState
from fakekafka.wire import ApiKey, ErrorCode
from fakekafka.wire.primitives import ZERO_UUID

METADATA_TOPIC = "__cluster_metadata"
BOOTSTRAP_RECORDS = 4
"""The feature levels a formatted KRaft log starts with (metadata.version and the three features fakekafka
finalizes), before the brokers register."""
NOT_HOSTED = "This server does not host this topic-partition."


def high_watermark(cluster: ClusterState) -> int:
    """The end of the metadata log: its bootstrap records, each broker's registration, each change since."""
    return BOOTSTRAP_RECORDS + len(cluster.brokers) + cluster.observers.metadata_changes


def _voter(cluster: ClusterState, node_id: int, end: int, now: int) -> dict[str, Any]:
    alive = cluster.brokers[node_id].alive
    return {"replica_id": node_id, "replica_directory_id": ZERO_UUID, "log_end_offset": end if alive else -1,
            "last_fetch_timestamp": now if alive else -1, "last_caught_up_timestamp": now if alive else -1}


def _listeners(cluster: ClusterState, node_id: int) -> list[dict[str, Any]]:
    broker = cluster.brokers[node_id]
    endpoints = broker.endpoints or {"PLAINTEXT": (broker.host, broker.port)}
    return [{"name": name, "host": host, "port": port} for name, (host, port) in endpoints.items()]


def describe_quorum_error_response(ctx: ErrorContext, req: Container, code: ErrorCode) -> dict[str, Any]:
    return {"error_code": code, "error_message": None, "topics": [], "nodes": []}


@handles(ApiKey.DESCRIBE_QUORUM, 0, 2, errors=describe_quorum_error_response)
def handle_describe_quorum(ctx: RequestContext, req: Container) -> dict[str, Any]:
    cluster = ctx.cluster
    end, now = high_watermark(cluster), cluster.clock.now_ms()
    voters = sorted(cluster.brokers)
    # Kafka's raft client describes only a request for exactly its one partition; any other is refused whole
    described = (len(req.topics) == 1 and req.topics[0].topic_name == METADATA_TOPIC
                 and [p.partition_index for p in req.topics[0].partitions] == [0])
    topics = []
    for t in req.topics:
        partitions = []
        for p in t.partitions:
            if not described:
                partitions.append({"partition_index": p.partition_index,
                                   "error_code": ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, "error_message": NOT_HOSTED,
                                   "leader_id": 0, "leader_epoch": 0, "high_watermark": 0, "current_voters": [],
                                   "observers": []})
                continue
            partitions.append({"partition_index": 0, "error_code": ErrorCode.NONE, "error_message": "",
                               "leader_id": cluster.controller_id, "leader_epoch": cluster.controller_epoch,
                               "high_watermark": end, "current_voters": [_voter(cluster, n, end, now) for n in voters],
                               "observers": []})
        topics.append({"topic_name": t.topic_name, "partitions": partitions})
    return {"error_code": ErrorCode.NONE, "error_message": "", "topics": topics,
            "nodes": [{"node_id": n, "listeners": _listeners(cluster, n)} for n in voters] if described else []}
