"""The server over raw sockets: framing, ordering, versions, bad input, long-poll fetches."""

from __future__ import annotations

import struct
import threading
import time
from collections.abc import Iterator

import pytest

import fakekafka
from fakekafka import wire
from fakekafka.handlers import advertised_versions
from fakekafka.wire import ApiKey, ErrorCode
from fakekafka.wire.records import build_batch
from tests.rawclient import RawClient, eventually


@pytest.fixture
def raw(plain_cluster: fakekafka.Cluster) -> Iterator[RawClient]:
    client = RawClient(plain_cluster.bootstrap_servers)
    yield client
    client.close()


def _produce_body(topic: str, value: bytes = b"v", acks: int = 1, partition: int = 0) -> dict:
    return {
        "acks": acks,
        "timeout_ms": 1000,
        "topic_data": [
            {"name": topic, "partition_data": [{"index": partition, "records": build_batch([{"value": value}])}]}
        ],
    }


@pytest.mark.parametrize("version", range(5))
def test_api_versions_advertises_the_registry(raw: RawClient, version: int) -> None:
    body = {"client_software_name": "raw", "client_software_version": "1"} if version >= 3 else {}
    r = raw.request(ApiKey.API_VERSIONS, version, body)
    assert r.error_code == ErrorCode.NONE
    assert {k.api_key: (k.min_version, k.max_version) for k in r.api_keys} == advertised_versions()
    assert advertised_versions()[0][0] == 0  # Produce from 0, or librdkafka turns compression off


def test_api_versions_too_new_answers_v0_with_unsupported_version(raw: RawClient) -> None:
    raw.send_bytes(struct.pack(">ihhi", 10, 18, 99, 7) + b"\x00\x00" + b"\x00\x00")
    corr, r = raw.receive(ApiKey.API_VERSIONS, 0)
    assert corr == 7 and r.error_code == ErrorCode.UNSUPPORTED_VERSION
    assert [(k.api_key, k.min_version, k.max_version) for k in r.api_keys] == [(18, 0, 5)]


def test_produce_v2_is_refused_per_partition(raw: RawClient) -> None:
    r = raw.request(ApiKey.PRODUCE, 2, _produce_body("t"))
    assert r.responses[0].partition_responses[0].error_code == ErrorCode.UNSUPPORTED_VERSION


def test_requests_on_one_connection_are_answered_in_order_and_acks0_is_silent(
    raw: RawClient, plain_cluster: fakekafka.Cluster
) -> None:
    plain_cluster.create_topic("t")  # Produce never creates a topic (Kafka auto-creates on Metadata only)
    raw.send(ApiKey.PRODUCE, 9, _produce_body("t", acks=0))
    c2 = raw.send(ApiKey.METADATA, 12, {"topics": None})
    c3 = raw.send(ApiKey.PRODUCE, 9, _produce_body("t", acks=1))
    assert raw.receive(ApiKey.METADATA, 12)[0] == c2
    corr, r = raw.receive(ApiKey.PRODUCE, 9)
    assert corr == c3 and r.responses[0].partition_responses[0].base_offset == 1
    assert plain_cluster.end_offsets("t") == {0: 2}


@pytest.mark.parametrize(
    "bad",
    [
        pytest.param(struct.pack(">ihhi", 6, 999, 0, 1) + b"\x00\x00", id="unknown-api-key"),
        pytest.param(struct.pack(">ihhi", 8, 11, 5, 1) + b"\x00\x00", id="unsupported-api"),
        pytest.param(struct.pack(">i", 200 * 1024 * 1024), id="frame-too-large"),
        pytest.param(struct.pack(">i", -5), id="negative-size"),
        pytest.param(
            struct.pack(">ihhi", 20, 3, 12, 1) + b"\x00\x00\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff", id="garbage-body"
        ),
        pytest.param(struct.pack(">ihhi", 14, 0, 9, 1) + b"\x00\x03raw\x00\x05\x05\x05", id="truncated-body"),
    ],
)
def test_bad_input_closes_only_that_connection(
    plain_cluster: fakekafka.Cluster, bad: bytes, caplog: pytest.LogCaptureFixture
) -> None:
    plain_cluster.produce("keep", b"stored")
    other = RawClient(plain_cluster.bootstrap_servers)
    victim = RawClient(plain_cluster.bootstrap_servers)
    victim.send_bytes(bad)
    assert victim.is_closed()
    r = other.request(ApiKey.METADATA, 12, {"topics": [{"name": "keep"}]})
    assert r.topics[0].error_code == ErrorCode.NONE
    assert [x.value for x in plain_cluster.records("keep")] == [b"stored"]
    assert any("closing" in m for m in caplog.messages)
    other.close()
    victim.close()


def test_truncated_frame_then_eof_is_logged(plain_cluster: fakekafka.Cluster, caplog: pytest.LogCaptureFixture) -> None:
    victim = RawClient(plain_cluster.bootstrap_servers)
    victim.send_bytes(struct.pack(">i", 100) + b"\x00" * 10)
    victim.sock.shutdown(1)
    assert victim.is_closed()
    deadline = time.monotonic() + 5
    while not any("truncated" in m for m in caplog.messages) and time.monotonic() < deadline:
        time.sleep(0.01)
    assert any("truncated" in m for m in caplog.messages)


def test_fetch_long_poll_is_woken_by_a_produce(plain_cluster: fakekafka.Cluster, raw: RawClient) -> None:
    plain_cluster.create_topic("lp", 1)
    topic_id = plain_cluster.call(lambda: plain_cluster.state.topics["lp"].topic_id)
    fetch = {
        "max_wait_ms": 20_000,
        "min_bytes": 1,
        "max_bytes": 1 << 20,
        "session_epoch": -1,
        "topics": [
            {"topic_id": topic_id, "partitions": [{"partition": 0, "fetch_offset": 0, "partition_max_bytes": 1 << 20}]}
        ],
    }
    raw.send(ApiKey.FETCH, 16, fetch)
    started = time.monotonic()
    threading.Timer(0.2, lambda: plain_cluster.produce("lp", b"wake")).start()
    _, r = raw.receive(ApiKey.FETCH, 16)
    assert time.monotonic() - started < 10
    data = r.responses[0].partitions[0].records
    assert wire.records.decode_batch(data).records[0].value == b"wake"


def test_large_fetches_to_a_slow_reader_arrive_whole_and_in_order(plain_cluster: fakekafka.Cluster) -> None:
    """Responses bigger than the socket takes at once: what the first send leaves is buffered and sent
    after it, and a pipelined request behind them is answered after them."""
    import os
    import socket

    plain_cluster.create_topic("big", 1)
    values = [os.urandom(900_000) for _ in range(6)]
    raw = RawClient(plain_cluster.bootstrap_servers)
    try:
        for v in values:
            assert (
                raw.request(ApiKey.PRODUCE, 9, _produce_body("big", v)).responses[0].partition_responses[0].error_code
                == 0
            )
        topic_id = plain_cluster.call(lambda: plain_cluster.state.topics["big"].topic_id)
        stored = plain_cluster.call(lambda: list(plain_cluster.state.topics["big"].partitions[0].log.batches))
        raw.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 16384)
        sent = []
        for offset in (0, 2, 3):
            sent.append(
                raw.send(
                    ApiKey.FETCH,
                    16,
                    {
                        "max_wait_ms": 0,
                        "min_bytes": 0,
                        "max_bytes": 8 << 20,
                        "session_epoch": -1,
                        "topics": [
                            {
                                "topic_id": topic_id,
                                "partitions": [
                                    {"partition": 0, "fetch_offset": offset, "partition_max_bytes": 8 << 20}
                                ],
                            }
                        ],
                    },
                )
            )
        sent.append(raw.send(ApiKey.API_VERSIONS, 0, {}))
        time.sleep(0.3)  # the broker's sends fill both socket buffers and the rest waits in the transport
        for corr, offset in zip(sent, (0, 2, 3), strict=False):
            got, r = raw.receive(ApiKey.FETCH, 16)
            assert got == corr
            assert bytes(r.responses[0].partitions[0].records) == b"".join(bytes(b) for b in stored[offset:])
        assert raw.receive(ApiKey.API_VERSIONS, 0)[0] == sent[-1]
    finally:
        raw.close()


def test_a_reader_that_never_reads_holds_a_bounded_part_of_its_answer_unsent(plain_cluster: fakekafka.Cluster) -> None:
    """A 20 MB Fetch answer to a client that reads nothing: the transport is given a piece at a time, so the
    connection holds at most about one piece unsent (Python 3.11's transport copied the whole answer, 60 MB per
    slow reader); its pipelined requests wait unread behind it."""
    import os
    import socket

    from fakekafka.net.connection import Connection

    plain_cluster.create_topic("huge", 1)
    producer = RawClient(plain_cluster.bootstrap_servers)
    for _ in range(22):
        r = producer.request(ApiKey.PRODUCE, 9, _produce_body("huge", os.urandom(900_000)))
        assert r.responses[0].partition_responses[0].error_code == 0
    producer.close()
    topic_id = plain_cluster.call(lambda: plain_cluster.state.topics["huge"].topic_id)
    sock = socket.socket()
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    host, port = plain_cluster.bootstrap_servers.split(",")[0].rsplit(":", 1)
    sock.connect((host, int(port)))
    fetch = {
        "max_wait_ms": 0,
        "min_bytes": 0,
        "max_bytes": 64 << 20,
        "session_epoch": -1,
        "topics": [
            {"topic_id": topic_id, "partitions": [{"partition": 0, "fetch_offset": 0, "partition_max_bytes": 64 << 20}]}
        ],
    }
    for corr in range(4):
        sock.sendall(wire.encode_request(1, 16, corr, fetch, client_id="slow"))

    def stuck() -> Connection | None:
        conns = [c for c in plain_cluster.server.quotas.of_broker(1) if c.in_request]
        return conns[0] if conns and not conns[0]._writable else None

    conn = eventually("the answer waits for the reader", lambda: plain_cluster.call(stuck))
    unsent = plain_cluster.call(lambda: conn.transport.get_write_buffer_size())
    assert 0 < unsent <= 2 << 20  # a piece (1 MiB) and what the transport had left
    sock.close()


def test_fetch_errors(plain_cluster: fakekafka.Cluster, raw: RawClient) -> None:
    import uuid

    plain_cluster.produce("fe", b"x")
    topic_id = plain_cluster.call(lambda: plain_cluster.state.topics["fe"].topic_id)

    def fetch(tid: uuid.UUID, offset: int) -> int:
        r = raw.request(
            ApiKey.FETCH,
            13,
            {
                "max_wait_ms": 0,
                "min_bytes": 0,
                "max_bytes": 1000,
                "session_epoch": -1,
                "topics": [
                    {
                        "topic_id": tid,
                        "partitions": [{"partition": 0, "fetch_offset": offset, "partition_max_bytes": 1000}],
                    }
                ],
            },
        )
        return r.responses[0].partitions[0].error_code

    assert fetch(topic_id, 0) == ErrorCode.NONE
    assert fetch(topic_id, 1) == ErrorCode.NONE  # at the high watermark: empty, no error
    assert fetch(topic_id, 2) == ErrorCode.OFFSET_OUT_OF_RANGE
    assert fetch(uuid.uuid4(), 0) == ErrorCode.UNKNOWN_TOPIC_ID
    r = raw.request(ApiKey.FETCH, 12, {"max_wait_ms": 0, "session_id": 5, "session_epoch": 1, "topics": []})
    assert r.error_code == ErrorCode.FETCH_SESSION_ID_NOT_FOUND


def test_metadata_reports_topic_ids_and_respects_auto_create(raw: RawClient, plain_cluster: fakekafka.Cluster) -> None:
    r = raw.request(ApiKey.METADATA, 12, {"topics": [{"name": "auto"}], "allow_auto_topic_creation": False})
    assert r.topics[0].error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    r = raw.request(ApiKey.METADATA, 12, {"topics": [{"name": "auto"}], "allow_auto_topic_creation": True})
    t = r.topics[0]
    topic_id = plain_cluster.call(lambda: plain_cluster.state.topics["auto"].topic_id)
    assert t.error_code == ErrorCode.NONE and t.topic_id == topic_id
    r = raw.request(ApiKey.METADATA, 12, {"topics": [{"name": None, "topic_id": t.topic_id}]})
    assert r.topics[0].name == "auto"
    r = raw.request(ApiKey.METADATA, 12, {"topics": [{"name": "bad name!"}], "allow_auto_topic_creation": True})
    assert r.topics[0].error_code == ErrorCode.INVALID_TOPIC_EXCEPTION
    assert r.cluster_id and r.controller_id == 1


def test_many_connections_at_once(plain_cluster: fakekafka.Cluster) -> None:
    plain_cluster.create_topic("many")
    clients = [RawClient(plain_cluster.bootstrap_servers) for _ in range(50)]
    for i, c in enumerate(clients):
        c.send(ApiKey.PRODUCE, 9, _produce_body("many", value=str(i).encode()))
    for c in clients:
        assert c.receive(ApiKey.PRODUCE, 9)[1].responses[0].partition_responses[0].error_code == ErrorCode.NONE
        c.close()
    assert plain_cluster.end_offsets("many") == {0: 50}


def test_fetch_v3_is_refused_per_partition(raw: RawClient) -> None:
    r = raw.request(
        ApiKey.FETCH,
        3,
        {
            "max_wait_ms": 0,
            "topics": [{"topic": "t", "partitions": [{"partition": 0, "fetch_offset": 0, "partition_max_bytes": 100}]}],
        },
    )
    assert r.responses[0].partitions[0].error_code == ErrorCode.UNSUPPORTED_VERSION


def test_a_metadata_naming_20000_new_topics_lets_other_clients_in_between(plain_cluster: fakekafka.Cluster) -> None:
    """Auto-creation in turns of the event loop: another client is answered while the big request is half done
    (its first topic made, its last not yet), where it used to wait for all of it."""
    import uuid

    names = [f"wedge-{i}" for i in range(20_000)]
    big = RawClient(plain_cluster.bootstrap_servers, timeout=120)
    big.send(
        ApiKey.METADATA,
        12,
        {
            "topics": [{"name": n, "topic_id": uuid.UUID(int=0)} for n in names],
            "allow_auto_topic_creation": True,
            "include_topic_authorized_operations": False,
        },
    )
    other = RawClient(plain_cluster.bootstrap_servers, timeout=120)

    def made(name: str) -> bool:
        r = other.request(
            ApiKey.METADATA,
            12,
            {
                "topics": [{"name": name, "topic_id": uuid.UUID(int=0)}],
                "allow_auto_topic_creation": False,
                "include_topic_authorized_operations": False,
            },
        )
        return r.topics[0].error_code == ErrorCode.NONE

    eventually("the big request has begun", lambda: made(names[0]) or None, timeout=120)
    assert not made(names[-1])
    _, r = big.receive(ApiKey.METADATA, 12)
    assert [t.error_code for t in r.topics] == [ErrorCode.NONE] * len(names)
    assert made(names[-1])
    big.close()
    other.close()


def test_a_lone_members_first_join_is_completed_by_the_servers_due_timer(plain_cluster: fakekafka.Cluster,
                                                                         raw: RawClient) -> None:
    """An Empty group's first join waits on a zero-delay timer (as Kafka's does); the server fires it once the
    requests it has read are handled, not at its next tick."""
    groups = plain_cluster.state.groups
    seen: list[dict[str, None]] = []
    run_due = groups.run_due
    groups.run_due = lambda: (seen.append(dict(groups.due)), run_due())[-1]  # type: ignore[method-assign]
    body = {"group_id": "lone", "session_timeout_ms": 10_000, "rebalance_timeout_ms": 10_000, "member_id": "",
            "group_instance_id": None, "protocol_type": "consumer", "protocols": [{"name": "range", "metadata": b""}]}
    first = raw.request(ApiKey.JOIN_GROUP, 5, body)
    assert first.error_code == ErrorCode.MEMBER_ID_REQUIRED
    joined = raw.request(ApiKey.JOIN_GROUP, 5, {**body, "member_id": first.member_id})
    assert joined.error_code == ErrorCode.NONE and joined.generation_id == 1 and joined.leader == first.member_id
    assert {"lone": None} in seen
