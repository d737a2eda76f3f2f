"""What the proxy reads of frames without decoding them, and the address rewriting of decoded answers."""

from __future__ import annotations

import uuid

import pytest

from fakekafka.proxy.frames import FrameError, produce_acks, read_request_head
from fakekafka.proxy.rewrite import may_name_a_broker, rewrite_addresses
from wire.protocol import decode_request, encode_request


@pytest.mark.parametrize(("api_key", "version", "body"), [
    (3, 1, {"topics": None}),  # header v1
    (3, 12, {"topics": None, "allow_auto_topic_creation": True, "include_topic_authorized_operations": False}),
    (18, 3, {"client_software_name": "x", "client_software_version": "1"}),  # flexible request, header v2
])
def test_request_head_matches_the_full_decoder(api_key: int, version: int, body: dict) -> None:
    frame = encode_request(api_key, version, 77, body, client_id="app-1")[4:]
    head = read_request_head(frame)
    full = decode_request(frame)
    assert (head.api_key, head.api_version, head.correlation_id, head.client_id) == \
        (full.api_key, full.api_version, full.correlation_id, full.client_id) == (api_key, version, 77, "app-1")
    assert head.known and head.body_offset is not None


def test_an_unknown_api_is_read_up_to_its_client_id() -> None:
    frame = (999).to_bytes(2, "big") + (4).to_bytes(2, "big") + (5).to_bytes(4, "big") + b"\x00\x03abc" + b"rest"
    head = read_request_head(frame)
    assert (head.api_key, head.correlation_id, head.client_id, head.known, head.body_offset) == \
        (999, 5, "abc", False, None)
    assert head.api_name == "ApiKey999"


@pytest.mark.parametrize("frame", [b"", b"\x00\x03\x00", b"\x00\x03\xff\xff\x00\x00\x00\x01",
                                   b"\x00\x03\x00\x01\x00\x00\x00\x01\x00\x09ab"])
def test_malformed_heads_are_refused(frame: bytes) -> None:
    with pytest.raises(FrameError):
        read_request_head(frame)


@pytest.mark.parametrize(("version", "transactional_id"), [(3, None), (8, "tx-1"), (9, None), (11, "tx-2")])
@pytest.mark.parametrize("acks", [0, 1, -1])
def test_produce_acks_are_read_past_the_transactional_id(version: int, transactional_id: str | None,
                                                         acks: int) -> None:
    body = {"transactional_id": transactional_id, "acks": acks, "timeout_ms": 100, "topic_data": []}
    frame = encode_request(0, version, 1, body)[4:]
    assert produce_acks(frame, read_request_head(frame)) == acks


def test_addresses_are_rewritten_wherever_kafka_names_a_broker() -> None:
    seen = []

    def to_proxy(node: int, host: str, port: int) -> tuple[str, int]:
        seen.append((node, host, port))
        return "127.0.0.1", 20000 + node

    metadata = {"brokers": [{"node_id": 1, "host": "kafka-1", "port": 9092, "rack": None},
                            {"node_id": 2, "host": "kafka-2", "port": 9092, "rack": None}],
                "topics": [{"name": "t", "topic_id": uuid.uuid4(), "partitions": []}]}
    assert rewrite_addresses(metadata, to_proxy) == 2
    assert [(b["host"], b["port"]) for b in metadata["brokers"]] == [("127.0.0.1", 20001), ("127.0.0.1", 20002)]
    coordinator = {"error_code": 15, "node_id": -1, "host": "", "port": -1}  # no coordinator: left alone
    assert rewrite_addresses(coordinator, to_proxy) == 0 and coordinator["port"] == -1
    cluster = {"brokers": [{"broker_id": 3, "host": "kafka-3", "port": 9093, "rack": None}]}
    assert rewrite_addresses(cluster, to_proxy) == 1 and cluster["brokers"][0]["port"] == 20003
    assert seen == [(1, "kafka-1", 9092), (2, "kafka-2", 9092), (3, "kafka-3", 9093)]


def test_only_answers_that_may_name_a_broker_are_decoded() -> None:
    hosts = [b"kafka-1"]
    assert may_name_a_broker(3, 0, b"anything", hosts)  # Metadata: always
    assert not may_name_a_broker(1, 15, b"...kafka-1...", hosts)  # Fetch before v16 has no node endpoints
    assert may_name_a_broker(1, 16, b"...kafka-1...", hosts)
    assert not may_name_a_broker(1, 16, b"records only", hosts)
    assert not may_name_a_broker(0, 9, b"...kafka-1...", hosts)
    assert may_name_a_broker(0, 10, memoryview(b"..kafka-1.."), hosts)
