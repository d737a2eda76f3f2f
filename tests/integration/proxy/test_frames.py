"""What the proxy reads of frames without decoding them, and the address rewriting of decoded answers."""

from __future__ import annotations

import uuid

import pytest

from fakekafka.net.framing import GO, STOP, WAIT, FrameReader
from fakekafka.proxy.frames import FrameError, produce_acks, read_request_head
from fakekafka.proxy.rewrite import may_name_a_broker, rewrite_addresses
from fakekafka.wire.protocol import decode_request, encode_request


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


def _read_through(frames_in: list[bytes], chunk_sizes: list[int], upfront: int) -> tuple[list[bytes], list[int]]:
    """Feeds the concatenated frames to the proxy's frame reader as a BufferedProtocol would (get_buffer, then
    as many bytes as the socket gave, at most what the buffer holds); returns the frames delivered and the
    sizes of the buffers it offered."""
    out: list[bytes] = []
    offered: list[int] = []
    reader = FrameReader(lambda whole: out.append(bytes(whole)), lambda size: STOP if size < 0 else GO,
                         upfront=upfront, keep_prefix=True)
    stream = b"".join(len(f).to_bytes(4, "big") + f for f in frames_in)
    pos, i = 0, 0
    while pos < len(stream):
        buf = reader.get_buffer()
        offered.append(len(buf))
        n = min(len(buf), chunk_sizes[i % len(chunk_sizes)], len(stream) - pos)
        buf[:n] = stream[pos:pos + n]
        del buf  # as asyncio drops its view before the next get_buffer
        reader.updated(n)
        pos += n
        i += 1
    return out, offered


@pytest.mark.parametrize("chunks", [[1, 2, 3, 200_000], [3, 7, 4096], [65536], [1 << 20], [100_000, 5]])
def test_frames_come_out_whole_however_the_bytes_arrive(chunks: list[int]) -> None:
    frames = [b"", b"a", bytes(range(256)) * 300, b"z" * 65535, b"q" * 65536, bytes(3_000_000), b"end"]
    out, _ = _read_through(frames, chunks, upfront=1 << 20)
    assert [len(f) + 4 for f in frames] == [len(f) for f in out]
    assert [f[4:] for f in out] == frames  # delivered with their size prefixes


def test_a_large_frame_is_received_into_its_own_buffer_which_grows_only_as_bytes_come() -> None:
    big = bytes(range(256)) * 40_000  # 10 MB
    out, offered = _read_through([big], [1 << 20], upfront=1 << 20)
    assert out == [len(big).to_bytes(4, "big") + big]
    assert max(offered) > 65536  # straight into the frame's buffer, not through the scratch one
    stalled = FrameReader(lambda whole: None, lambda size: GO, upfront=1 << 20, keep_prefix=True)
    buf = stalled.get_buffer()
    buf[:6] = (100_000_000).to_bytes(4, "big") + b"xy"
    del buf
    stalled.updated(6)  # 100 MB announced, 2 bytes sent: the buffer held is the upfront size, not 100 MB
    assert stalled.frame is not None and len(stalled.frame) == 1 << 20


def test_a_frame_told_to_wait_is_read_with_what_followed_it_once_resumed() -> None:
    """The broker's queued.max.request.bytes: a frame whose size is told to WAIT is read, with the bytes that
    came after it, once `resume_frame` is called; frames without their size prefix."""
    got: list[bytes] = []
    verdicts = [GO, WAIT, GO]
    reader = FrameReader(lambda frame: got.append(bytes(frame)), lambda size: verdicts.pop(0))
    data = b"".join(len(f).to_bytes(4, "big") + f for f in (b"one", b"two", b""))
    buf = reader.get_buffer()
    buf[:len(data)] = data
    del buf
    reader.updated(len(data))
    assert got == [b"one"] and reader.waiting == 3 and reader.partial() is None
    reader.resume_frame()
    assert got == [b"one", b"two", b""] and reader.waiting is None


def test_a_refused_size_stops_the_reader() -> None:
    out, _ = _read_through([b"ok"], [64], upfront=1024)
    assert out == [b"\x00\x00\x00\x02ok"]
    got: list[bytes] = []
    reader = FrameReader(got.append, lambda size: STOP if size > 10 else GO, upfront=1024, keep_prefix=True)
    buf = reader.get_buffer()
    data = (2).to_bytes(4, "big") + b"ok" + (11).to_bytes(4, "big") + b"x" * 11 + (1).to_bytes(4, "big") + b"y"
    buf[:len(data)] = data
    del buf
    reader.updated(len(data))
    assert [bytes(f) for f in got] == [b"\x00\x00\x00\x02ok"] and reader.stopped
