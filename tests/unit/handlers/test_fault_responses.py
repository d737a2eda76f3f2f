"""An error a test injects is answered as that API answers errors, not by closing the connection.

Dispatch (fakekafka/handlers/__init__.py) answers an injected error with the API's error response. An
API whose response has no top-level error code needs its own responder that puts the code where the
client reads it (per coordinator key, group, topic or partition); without one the connection was dropped
and the client retried a network error instead of handling the error asked for. Each vector here goes
through dispatch without a server, and the answer is encoded and decoded again.
"""

from __future__ import annotations

from typing import Any

import pytest
from construct import Container

from fakekafka.handlers import DropConnection, RequestContext, dispatch
from fakekafka.model.cluster import ClusterState
from fakekafka.model.faults import Fault, FaultKind, api_key_of
from fakekafka.wire import ErrorCode
from fakekafka.wire.protocol import Request, decode_response, encode_response_chunks, request_struct
from fakekafka.wire.records import build_batch

CODE = ErrorCode.COORDINATOR_LOAD_IN_PROGRESS


def codes(obj: Any) -> list[int]:
    """Every error code in a decoded response, in order."""
    if isinstance(obj, dict):
        return [c for k, v in obj.items() for c in ([v] if k == "error_code" else codes(v))]
    if isinstance(obj, list):
        return [c for item in obj for c in codes(item)]
    return []


FETCH = {"replica_id": -1, "max_wait_ms": 500, "min_bytes": 1, "max_bytes": 1 << 20, "isolation_level": 0,
         "session_id": 0, "session_epoch": -1, "forgotten_topics_data": [], "rack_id": "",
         "topics": [{"topic": "t", "partitions": [{"partition": 0, "current_leader_epoch": -1, "fetch_offset": 0,
                                                   "last_fetched_epoch": -1, "log_start_offset": -1,
                                                   "partition_max_bytes": 1 << 20}]}]}
COMMIT = {"group_id": "g", "generation_id_or_member_epoch": 1, "member_id": "m",
          "topics": [{"name": "t", "partitions": [{"partition_index": 0, "committed_offset": 1},
                                                  {"partition_index": 1, "committed_offset": 1}]}]}


@pytest.mark.parametrize(("api", "version", "fields", "expected"), [
    ("Produce", 9, {"acks": -1, "timeout_ms": 1000, "topic_data": [
        {"name": "t", "partition_data": [{"index": 0, "records": build_batch([{"value": b"v"}])}]}]}, 1),
    ("Fetch", 12, FETCH, 1),
    ("ListOffsets", 7, {"replica_id": -1, "topics": [{"name": "t", "partitions": [
        {"partition_index": 0, "current_leader_epoch": -1, "timestamp": -1},
        {"partition_index": 1, "current_leader_epoch": -1, "timestamp": -2}]}]}, 2),
    ("OffsetForLeaderEpoch", 4, {"replica_id": -1, "topics": [{"topic": "t", "partitions": [
        {"partition": 0, "current_leader_epoch": 0, "leader_epoch": 0}]}]}, 1),
    ("FindCoordinator", 2, {"key": "g", "key_type": 0}, 1),
    ("FindCoordinator", 4, {"key_type": 0, "coordinator_keys": ["g", "h"]}, 2),
    ("FindCoordinator", 6, {"key_type": 0, "coordinator_keys": ["g"]}, 1),
    ("JoinGroup", 5, {"group_id": "g", "session_timeout_ms": 10_000, "rebalance_timeout_ms": 10_000,
                      "member_id": "", "protocol_type": "consumer", "protocols": [{"name": "range", "metadata": b""}]},
     1),
    ("SyncGroup", 3, {"group_id": "g", "generation_id": 1, "member_id": "m", "assignments": []}, 1),
    ("Heartbeat", 3, {"group_id": "g", "generation_id": 1, "member_id": "m"}, 1),
    ("OffsetCommit", 2, COMMIT, 2),
    ("OffsetCommit", 8, COMMIT, 2),
    ("OffsetFetch", 1, {"group_id": "g", "topics": [{"name": "t", "partition_indexes": [0, 1]}]}, 2),
    ("OffsetFetch", 7, {"group_id": "g", "topics": [{"name": "t", "partition_indexes": [0, 1]}]}, 1),
    ("OffsetFetch", 8, {"groups": [{"group_id": "g", "topics": None}, {"group_id": "h", "topics": None}]}, 2),
    ("InitProducerId", 4, {"transactional_id": None, "transaction_timeout_ms": 60_000}, 1),
])
def test_an_injected_error_is_answered_where_the_client_reads_it(api: str, version: int, fields: dict[str, Any],
                                                                  expected: int) -> None:
    cluster = ClusterState()
    cluster.create_topic("t", 2, 1)
    key = api_key_of(api)
    assert key is not None
    rule = cluster.faults.add(Fault(FaultKind.ERROR, key, CODE))
    struct = request_struct(key, version)
    request = Request(key, version, 7, "client", Container(), struct.parse(struct.build(fields)))
    answer = dispatch(RequestContext(cluster, cluster.brokers[1], request))
    assert not isinstance(answer, DropConnection)
    assert rule.fired == 1
    frame = b"".join(bytes(chunk) for chunk in encode_response_chunks(key, version, 7, answer))
    correlation_id, decoded = decode_response(key, version, frame[4:])
    assert correlation_id == 7
    assert codes(decoded) == [CODE] * expected
    assert cluster.partition("t", 0).log.log_end_offset == 0  # nothing was applied
