"""DeleteRecords over the wire: low watermarks, Kafka's errors, and what Fetch and ListOffsets see after."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest
from construct import Container

import fakekafka
from fakekafka.handlers import DropConnection, RequestContext, dispatch
from fakekafka.model.cluster import ClusterState
from fakekafka.model.faults import Fault, FaultKind
from fakekafka.wire import ErrorCode
from fakekafka.wire.protocol import Request, decode_response, encode_response_chunks, request_struct
from fakekafka.wire.records import build_batch, decode_batch
from tests.rawclient import RawClient

DELETE_RECORDS, FETCH, LIST_OFFSETS = 21, 1, 2


@pytest.fixture
def cluster() -> Iterator[fakekafka.Cluster]:
    with fakekafka.Cluster(auto_create_topics=False) as c:
        c.create_topic("t", 2)
        c.create_topic("compacted", 1, configs={"cleanup.policy": "compact"})

        def fill() -> None:
            p = c.state.partition("t", 0)
            assert p is not None
            for b in range(3):  # offsets 0..5 in batches of two
                r = c.state.append(p, build_batch([{"value": f"v{2 * b + i}".encode()} for i in range(2)]))
                assert r.error == ErrorCode.NONE
        c.call(fill)
        yield c


Wanted = list[tuple[str, list[tuple[int, int]]]]


def _delete(raw: RawClient, version: int, topics: Wanted) -> dict[tuple[str, int], tuple[int, int]]:
    """{(topic, partition): (error code, low watermark)}."""
    r = raw.request(DELETE_RECORDS, version, {"timeout_ms": 5000, "topics": [
        {"name": name, "partitions": [{"partition_index": p, "offset": o} for p, o in parts]}
        for name, parts in topics]})
    return {(t.name, p.partition_index): (p.error_code, p.low_watermark) for t in r.topics for p in t.partitions}


@pytest.mark.parametrize("version", [0, 1, 2])
def test_low_watermarks_and_errors(cluster: fakekafka.Cluster, version: int) -> None:
    raw = RawClient(cluster.bootstrap_servers)
    got = _delete(raw, version, [("t", [(0, 3), (1, 0)]), ("compacted", [(0, 0)]), ("nope", [(0, 0)])])
    assert got == {("t", 0): (ErrorCode.NONE, 3), ("t", 1): (ErrorCode.NONE, 0),
                   ("compacted", 0): (ErrorCode.POLICY_VIOLATION, -1),
                   ("nope", 0): (ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, -1)}
    assert _delete(raw, version, [("t", [(0, 1)])]) == {("t", 0): (ErrorCode.NONE, 3)}  # never back
    assert _delete(raw, version, [("t", [(0, 7)])]) == {("t", 0): (ErrorCode.OFFSET_OUT_OF_RANGE, -1)}
    assert _delete(raw, version, [("t", [(0, -1)])]) == {("t", 0): (ErrorCode.NONE, 6)}  # -1: the high watermark
    assert _delete(raw, version, [("t", [(5, 0)])]) == {("t", 5): (ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, -1)}
    r = raw.request(DELETE_RECORDS, version, {"timeout_ms": 5000, "topics": [
        {"name": "t", "partitions": [{"partition_index": 1, "offset": 0}, {"partition_index": 1, "offset": 0}]}]})
    # answered once, as Kafka's (it reads the request into a map: the last offset given wins)
    assert [(p.partition_index, p.error_code) for p in r.topics[0].partitions] == [(1, ErrorCode.NONE)]


def _fetch_body(offset: int, max_wait_ms: int = 0, min_bytes: int = 0) -> dict[str, Any]:
    return {"replica_id": -1, "max_wait_ms": max_wait_ms, "min_bytes": min_bytes, "max_bytes": 1 << 24,
            "isolation_level": 0, "session_id": 0, "session_epoch": -1, "forgotten_topics_data": [], "rack_id": "",
            "topics": [{"topic": "t", "partitions": [{"partition": 0, "current_leader_epoch": -1,
                                                      "fetch_offset": offset, "last_fetched_epoch": -1,
                                                      "log_start_offset": -1, "partition_max_bytes": 1 << 20}]}]}


def _fetch(raw: RawClient, offset: int) -> Any:
    return raw.request(FETCH, 12, _fetch_body(offset)).responses[0].partitions[0]


def test_a_parked_fetch_below_the_new_start_is_answered_at_once(cluster: fakekafka.Cluster) -> None:
    fetcher = RawClient(cluster.bootstrap_servers)
    corr = fetcher.send(FETCH, 12, _fetch_body(2, max_wait_ms=20_000, min_bytes=1 << 20))  # waits for 1 MiB
    time.sleep(0.2)
    started = time.monotonic()
    assert _delete(RawClient(cluster.bootstrap_servers), 2, [("t", [(0, 4)])]) == {("t", 0): (ErrorCode.NONE, 4)}
    got, r = fetcher.receive(FETCH, 12)
    assert got == corr and time.monotonic() - started < 5
    # as Kafka: an out-of-range answer carries no offsets (the consumer resets with ListOffsets)
    assert (r.responses[0].partitions[0].error_code, r.responses[0].partitions[0].log_start_offset) == \
        (ErrorCode.OFFSET_OUT_OF_RANGE, -1)


def test_fetch_and_list_offsets_follow_the_new_start(cluster: fakekafka.Cluster) -> None:
    raw = RawClient(cluster.bootstrap_servers)
    assert _delete(raw, 2, [("t", [(0, 3)])]) == {("t", 0): (ErrorCode.NONE, 3)}
    below = _fetch(raw, 2)
    assert (below.error_code, below.log_start_offset, below.high_watermark) == (ErrorCode.OFFSET_OUT_OF_RANGE, -1, -1)
    at = _fetch(raw, 3)
    assert (at.error_code, at.log_start_offset) == (ErrorCode.NONE, 3)
    assert len(at.records) > 0
    r = raw.request(LIST_OFFSETS, 7, {"replica_id": -1, "isolation_level": 0, "topics": [{"name": "t", "partitions": [
        {"partition_index": 0, "current_leader_epoch": -1, "timestamp": -2},
        {"partition_index": 1, "current_leader_epoch": -1, "timestamp": -2}]}]})
    assert [(p.error_code, p.offset) for p in r.topics[0].partitions] == [(ErrorCode.NONE, 3), (ErrorCode.NONE, 0)]
    # the batch holding offset 3 is still stored whole; the ones wholly below it are gone (records() shows what a
    # consumer can read: from the start on)
    stored = cluster.call(lambda: list(cluster.state.partition("t", 0).log.batches))  # type: ignore[union-attr]
    assert [rec.offset for b in stored for rec in decode_batch(bytes(b)).records] == [2, 3, 4, 5]
    assert [rec.offset for rec in cluster.records("t", 0)] == [3, 4, 5]


def test_only_the_leader_deletes() -> None:
    with fakekafka.Cluster(brokers=3, auto_create_topics=False) as c:
        c.create_topic("r", 1, replication_factor=3)
        c.produce("r", b"a", partition=0)
        c.produce("r", b"b", partition=0)
        state = c.partition_state("r", 0)
        follower = next(r for r in state["replicas"] if r != state["leader"])
        raw = RawClient(f"127.0.0.1:{c.state.brokers[follower].port}")
        assert _delete(raw, 2, [("r", [(0, 1)])]) == {("r", 0): (ErrorCode.NOT_LEADER_OR_FOLLOWER, -1)}
        raw = RawClient(f"127.0.0.1:{c.state.brokers[state['leader']].port}")
        assert _delete(raw, 2, [("r", [(0, 1)])]) == {("r", 0): (ErrorCode.NONE, 1)}
        starts = c.call(lambda: [c.state.partition("r", 0).logs[r].log_start_offset  # type: ignore[union-attr]
                                 for r in state["replicas"]])
        assert starts == [1, 1, 1]


def test_an_injected_error_is_answered_per_partition() -> None:
    cluster = ClusterState()
    cluster.create_topic("t", 2, 1)
    rule = cluster.faults.add(Fault(FaultKind.ERROR, DELETE_RECORDS, ErrorCode.NOT_CONTROLLER))
    struct = request_struct(DELETE_RECORDS, 2)
    body = struct.parse(struct.build({"timeout_ms": 1000, "topics": [{"name": "t", "partitions": [
        {"partition_index": 0, "offset": 0}, {"partition_index": 1, "offset": 0}]}]}))
    request = Request(DELETE_RECORDS, 2, 7, "c", Container(), body)
    answer = dispatch(RequestContext(cluster, cluster.brokers[1], request))
    assert not isinstance(answer, DropConnection) and rule.fired == 1
    frame = b"".join(bytes(chunk) for chunk in encode_response_chunks(DELETE_RECORDS, 2, 7, answer))
    _, decoded = decode_response(DELETE_RECORDS, 2, frame[4:])
    assert [(p.error_code, p.low_watermark) for p in decoded.topics[0].partitions] == \
        [(ErrorCode.NOT_CONTROLLER, -1)] * 2
