"""Leadership and replica placement: ElectLeaders (43) v0-2, AlterPartitionReassignments (45) v0-1,
ListPartitionReassignments (46) v0.

Behaviour: any broker answers (Kafka forwards these to the controller); a reassignment completes as
soon as the added replicas are in the ISR, which with no replication lag is at once. AlterPartitionReassignments
v1 may forbid changing a partition's replica count (KIP-860): INVALID_REPLICATION_FACTOR for such a partition,
and the answer repeats the flag, as Kafka's controller does. ElectLeaders for every partition (a null list)
answers each topic, listing only the partitions that were elected or failed (ELECTION_NOT_NEEDED ones left
out, as Kafka's controller does); an unknown topic or partition is named in the controller's words.
"""

from __future__ import annotations

from typing import Any

from construct import Container

from fakekafka.handlers.registry import ErrorContext, RequestContext, handles
from fakekafka.model.errors import ApiError
from fakekafka.wire import ApiKey, ErrorCode

PREFERRED, UNCLEAN = 0, 1


def elect_leaders_error_response(ctx: ErrorContext, req: Container, code: ErrorCode) -> dict[str, Any]:
    """An injected error: top-level from v1, per partition asked about in v0 (all of them: none)."""
    results = [] if ctx.version >= 1 or req.topic_partitions is None else [
        {"topic": t.topic, "partition_result": [{"partition_id": i, "error_code": code, "error_message": None}
                                                for i in t.partitions]} for t in req.topic_partitions]
    return {"throttle_time_ms": 0, "error_code": code, "replica_election_results": results}


@handles(ApiKey.ELECT_LEADERS, 0, 2, errors=elect_leaders_error_response)
def handle_elect_leaders(ctx: RequestContext, req: Container) -> dict[str, Any]:
    cluster = ctx.cluster
    election = req.get("election_type", PREFERRED)
    if req.topic_partitions is None:
        wanted = [(t.name, [p.index for p in t.partitions]) for t in cluster.topics.values()]
    else:
        wanted = [(t.topic, list(t.partitions)) for t in req.topic_partitions]
    if election not in (PREFERRED, UNCLEAN):
        return {"throttle_time_ms": 0, "error_code": ErrorCode.INVALID_REQUEST, "replica_election_results": []}
    results = []
    for topic, partitions in wanted:
        outcome = []
        for index in partitions:
            code, message = ErrorCode.NONE, None
            try:
                if election == PREFERRED:
                    cluster.elect_preferred_leader(topic, index)
                else:
                    cluster.elect_unclean(topic, index)
            except ApiError as e:
                code, message = e.code, e.message
            if code == ErrorCode.ELECTION_NOT_NEEDED and req.topic_partitions is None:
                continue  # asked for every partition: Kafka's controller leaves out those already led as wanted
            outcome.append({"partition_id": index, "error_code": code, "error_message": message})
        results.append({"topic": topic, "partition_result": outcome})
    return {"throttle_time_ms": 0, "error_code": ErrorCode.NONE, "replica_election_results": results}


@handles(ApiKey.ALTER_PARTITION_REASSIGNMENTS, 0, 1)
def handle_alter_partition_reassignments(ctx: RequestContext, req: Container) -> dict[str, Any]:
    allow_rf_change = req.get("allow_replication_factor_change", True)
    responses = []
    for t in req.topics:
        parts = []
        for p in t.partitions:
            code, message = ErrorCode.NONE, None
            try:
                ctx.cluster.reassign_partition(t.name, p.partition_index,
                                               list(p.replicas) if p.replicas is not None else None, allow_rf_change)
            except ApiError as e:
                code, message = e.code, e.message
            parts.append({"partition_index": p.partition_index, "error_code": code, "error_message": message})
        responses.append({"name": t.name, "partitions": parts})
    return {"throttle_time_ms": 0, "allow_replication_factor_change": allow_rf_change, "error_code": ErrorCode.NONE,
            "error_message": None, "responses": responses}


@handles(ApiKey.LIST_PARTITION_REASSIGNMENTS, 0, 0)
def handle_list_partition_reassignments(ctx: RequestContext, req: Container) -> dict[str, Any]:
    cluster = ctx.cluster
    if req.topics is None:
        wanted = [(t.name, [p.index for p in t.partitions]) for t in cluster.topics.values()]
    else:
        wanted = [(t.name, list(t.partition_indexes)) for t in req.topics]
    topics = []
    for name, indexes in wanted:
        parts = []
        for index in indexes:
            p = cluster.partition(name, index)
            if p is not None and (p.adding or p.removing):
                parts.append({"partition_index": index, "replicas": list(p.replicas),
                              "adding_replicas": list(p.adding), "removing_replicas": list(p.removing)})
        if parts:
            topics.append({"name": name, "partitions": parts})
    return {"throttle_time_ms": 0, "error_code": ErrorCode.NONE, "error_message": None, "topics": topics}
