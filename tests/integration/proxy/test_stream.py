"""Large frames passed on while they arrive: the frame reader split at every byte boundary, a Fetch v16+ answer's
tail found and its node endpoints rewritten in the length the size prefix already promised, and memory held
bounded while either side stops reading a streamed frame."""

from __future__ import annotations

import asyncio
import os
import socket
import struct
import uuid
from typing import Any

import pytest

from fakekafka.net.framing import GO, FrameReader
from fakekafka.proxy.frames import FrameError
from fakekafka.proxy.server import _HIGH_WATER, ProxyServer, _Stream
from fakekafka.proxy.stream import FetchTail, overlong_uvarint, rewrite_tail
from fakekafka.wire.primitives import uvarint_at
from fakekafka.wire.protocol import decode_response, encode_request, encode_response
from fakekafka.wire.records import build_batch

TOPIC_ID = uuid.UUID(int=7)


def _partition(index: int, records: bytes | None, aborted: list[dict] | None = None) -> dict[str, Any]:
    return {"partition_index": index, "error_code": 0, "high_watermark": 9, "last_stable_offset": 9,
            "log_start_offset": 0, "aborted_transactions": aborted, "preferred_read_replica": -1,
            "records": records, "current_leader": {"leader_id": 2, "leader_epoch": 5}}


def _fetch_answer(endpoints: list[dict[str, Any]] | None, version: int = 16, value_size: int = 300,
                  correlation_id: int = 11) -> bytes:
    batch = build_batch([{"key": b"k", "value": os.urandom(value_size), "headers": [], "timestamp": 1}])
    body: dict[str, Any] = {"throttle_time_ms": 0, "error_code": 0, "session_id": 3, "responses": [
        {"topic_id": TOPIC_ID, "partitions": [
            _partition(0, batch, [{"producer_id": 4, "first_offset": 2}]), _partition(1, None), _partition(2, b"")]},
        {"topic_id": uuid.UUID(int=8), "partitions": [_partition(0, batch)]}]}
    if endpoints is not None:
        body["node_endpoints"] = endpoints
    return encode_response(1, version, correlation_id, body)


def _tail_offset(frame: bytes, version: int) -> int:
    """Where the top-level tagged fields begin, from the full decoder's view: the frame minus them."""
    _, body = decode_response(1, version, frame[4:])
    body["node_endpoints"] = []
    without = encode_response(1, version, 11, body)
    return len(without) - 1  # an empty tagged-field section is one byte


@pytest.mark.parametrize("version", [16, 17])
def test_the_tail_is_found_whatever_the_pieces(version: int) -> None:
    frame = _fetch_answer([{"node_id": 2, "host": "kafka-2", "port": 9093, "rack": "r1"}], version)
    expected = _tail_offset(frame, version)
    for cut in range(len(frame) + 1):
        tail = FetchTail(version)
        before = tail.feed(memoryview(frame)[:cut])
        if not tail.found:
            before += tail.feed(memoryview(frame)[cut:])
        assert tail.found and before == expected, cut
    tail = FetchTail(version)
    before = 0
    for i in range(len(frame)):
        before += tail.feed(memoryview(frame)[i:i + 1])
    assert before == expected


def test_an_overlong_varint_is_a_frame_error() -> None:
    frame = struct.pack(">ii", 100, 1) + b"\x80" * 6
    with pytest.raises(FrameError):
        FetchTail(16).feed(memoryview(frame))


def _rewritten(frame: bytes, host: str, hosts: set[bytes]) -> tuple[bytes, str | None, list[tuple[int, str, int]]]:
    at = _tail_offset(frame, 16)
    seen: list[tuple[int, str, int]] = []

    def to_proxy(node: int, upstream_host: str, port: int) -> tuple[str, int]:
        seen.append((node, upstream_host, port))
        return host, 30000 + node

    tail, note = rewrite_tail(frame[at:], hosts, to_proxy)
    return frame[:at] + tail, note, seen


@pytest.mark.parametrize("proxy_host", ["kafka-1", "kafka", "k1", "h"])  # the same length or shorter
def test_node_endpoints_are_rewritten_in_the_length_already_announced(proxy_host: str) -> None:
    endpoints = [{"node_id": 1, "host": "kafka-1", "port": 9092, "rack": None},
                 {"node_id": 2, "host": "kafka-2", "port": 9092, "rack": "r2"}]
    frame = _fetch_answer(endpoints)
    out, note, seen = _rewritten(frame, proxy_host, {b"kafka-1"})
    assert len(out) == len(frame) and note is None
    assert seen == [(1, "kafka-1", 9092), (2, "kafka-2", 9092)]
    _, body = decode_response(1, 16, out[4:])
    assert [(e["node_id"], e["host"], e["port"], e["rack"]) for e in body["node_endpoints"]] == \
        [(1, proxy_host, 30001, None), (2, proxy_host, 30002, "r2")]
    _, original = decode_response(1, 16, frame[4:])
    assert body["responses"] == original["responses"]


def test_a_longer_proxy_host_leaves_the_endpoints_out_in_the_same_length() -> None:
    frame = _fetch_answer([{"node_id": 1, "host": "k1", "port": 9092, "rack": None}])
    out, note, _ = _rewritten(frame, "proxy.example.com", {b"k1"})
    assert len(out) == len(frame) and note is not None and "left out" in note
    _, body = decode_response(1, 16, out[4:])
    assert not body.get("node_endpoints")


def test_a_tail_naming_no_upstream_host_is_passed_as_it_is() -> None:
    frame = _fetch_answer(None)
    at = _tail_offset(frame, 16)
    assert rewrite_tail(frame[at:], {b"kafka-1"}, lambda *a: ("x", 1)) == (frame[at:], None)


@pytest.mark.parametrize("width", [1, 2, 3, 4, 5])
def test_overlong_varints_read_as_the_same_value(width: int) -> None:
    assert uvarint_at(overlong_uvarint(100, width), 0, 5) == (100, width)


class _Collect(_Stream):
    def __init__(self, out: list[bytes]) -> None:
        self.out = out
        self.parts = bytearray()

    def feed(self, data: memoryview, last: bool) -> None:
        self.parts += data  # a view valid for this call only: copied here
        if last:
            self.out.append(bytes(self.parts))


def _reader(out: list[bytes], streamed: list[int]) -> FrameReader:
    def open_stream(first: memoryview, size: int) -> Any:
        if len(first) < 12:
            return None
        stream = bytes(first[4:12]) == b"STREAMME"
        if stream:
            streamed.append(size)
        return _Collect(out) if stream else False

    frames = FrameReader(lambda whole: out.append(bytes(whole)), lambda size: GO, upfront=64, keep_prefix=True,
                         open_stream=open_stream)
    frames.STREAM_MIN, frames.DECIDE, frames.SCRATCH = 40, 4, 16  # small, so every path is met in a few bytes
    frames.scratch = bytearray(16)
    return frames


def _push(frames: FrameReader, data: bytes) -> None:
    while data:
        buffer = frames.get_buffer()
        n = min(len(buffer), len(data))
        buffer[:n] = data[:n]
        buffer.release()  # as the transport drops it: the frame's buffer may grow on the next call
        frames.updated(n)
        data = data[n:]


def test_frames_split_at_every_byte_boundary_come_out_whole_or_streamed_intact() -> None:
    def framed(body: bytes) -> bytes:
        return struct.pack(">i", len(body)) + body

    frames_in = [framed(b"small"), framed(b"STREAMME" + bytes(range(100))), framed(b"held back" + b"x" * 80),
                 framed(b"STREAMME" + b"y" * 57), framed(b"tiny")]
    data = b"".join(frames_in)
    for cut in range(len(data) + 1):
        out: list[bytes] = []
        streamed: list[int] = []
        frames = _reader(out, streamed)
        _push(frames, data[:cut])
        _push(frames, data[cut:])
        assert out == frames_in, cut
        assert streamed == [len(frames_in[1]), len(frames_in[3])]
    out, streamed = [], []
    frames = _reader(out, streamed)
    for i in range(len(data)):
        _push(frames, data[i:i + 1])
    assert out == frames_in


# --- through the proxy ------------------------------------------------------------------------------------------
class _Upstream:
    """A stand-in broker on loopback that answers each request with a given frame (its correlation id patched
    in), written in small pieces; `hold()` stops it reading its sockets."""

    def __init__(self, answer: bytes, pieces: int = 64) -> None:
        self.answer = answer
        self.pieces = pieces
        self.requests: list[int] = []
        self.writers: list[asyncio.StreamWriter] = []
        self.server: asyncio.base_events.Server | None = None

    async def start(self) -> int:
        self.server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        return self.server.sockets[0].getsockname()[1]

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.writers.append(writer)
        try:
            while True:
                (size,) = struct.unpack(">i", await reader.readexactly(4))
                frame = await reader.readexactly(size)
                self.requests.append(size)
                correlation = frame[4:8]
                answer = self.answer[:4] + correlation + self.answer[8:]
                step = max(1, len(answer) // self.pieces)
                for i in range(0, len(answer), step):
                    writer.write(answer[i:i + step])
                    await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            writer.close()

    def hold(self, holding: bool) -> None:
        for w in self.writers:
            w.transport.pause_reading() if holding else w.transport.resume_reading()

    async def stop(self) -> None:
        for w in self.writers:
            w.close()
        if self.server is not None:
            self.server.close()
            await self.server.wait_closed()


async def _read_frame(reader: asyncio.StreamReader) -> bytes:
    (size,) = struct.unpack(">i", await reader.readexactly(4))
    return await reader.readexactly(size)


def _fetch_request(correlation_id: int) -> bytes:
    return encode_request(1, 16, correlation_id, {
        "replica_id": -1, "max_wait_ms": 0, "min_bytes": 1, "max_bytes": 1 << 24, "isolation_level": 0,
        "session_id": 0, "session_epoch": -1, "topics": [{"topic_id": TOPIC_ID, "partitions": [{
            "partition": 0, "current_leader_epoch": -1, "fetch_offset": 0, "last_fetched_epoch": -1,
            "log_start_offset": -1, "partition_max_bytes": 1 << 24}]}], "forgotten_topics_data": [], "rack_id": ""})


async def _until(condition: Any, what: str) -> None:
    for _ in range(2000):
        if condition():
            return
        await asyncio.sleep(0.005)
    raise AssertionError(f"never: {what}")


@pytest.mark.parametrize("advertised", [None, "localhost", "::1"])
async def test_a_large_fetch_v16_answer_streams_with_its_endpoints_rewritten(advertised: str | None) -> None:
    """The upstream names itself and a broker with a longer name; through the proxy both point at the proxy's
    listeners, the records arrive intact, and the answer was passed on, not assembled."""
    upstream = _Upstream(b"")
    port = await upstream.start()
    upstream.answer = answer = _fetch_answer(
        [{"node_id": 1, "host": "127.0.0.1", "port": port, "rack": None},
         {"node_id": 2, "host": "broker-2.kafka.internal", "port": 9092, "rack": "b"}], value_size=300_000)
    proxy = ProxyServer([f"127.0.0.1:{port}"], advertised_host=advertised)
    await proxy.start()
    try:
        reader, writer = await asyncio.open_connection("127.0.0.1", proxy.listeners[-1].port)
        for correlation_id in (1, 2):
            writer.write(_fetch_request(correlation_id))
            got = await _read_frame(reader)
            assert len(got) == len(answer) - 4
            cid, body = decode_response(1, 16, got)
            _, sent = decode_response(1, 16, answer[4:])
            assert cid == correlation_id and body["responses"] == sent["responses"]
            assert [(e["node_id"], e["host"], e["port"], e["rack"]) for e in body["node_endpoints"]] == \
                [(n, proxy.advertised_host, proxy.listeners[n].port, rack) for n, rack in ((1, None), (2, "b"))]
        assert proxy.frames_streamed == 2
        writer.close()
    finally:
        await proxy.stop()
        await upstream.stop()


async def test_backpressure_both_ways_holds_memory_bounded_while_frames_stream() -> None:
    """A client that reads nothing of a 24 MB answer: the proxy stops reading the upstream, holding no more than
    its write limit plus one read. An upstream that reads nothing of a 24 MB request: the proxy stops reading
    the client. Both frames arrive whole once the reader reads again."""
    big = 24 << 20
    answer = struct.pack(">ii", big - 4, 0) + os.urandom(big - 8)  # Fetch v4: no tail, passed on as it comes
    upstream = _Upstream(answer, pieces=big // 65536)
    port = await upstream.start()
    proxy = ProxyServer([f"127.0.0.1:{port}"])
    await proxy.start()
    try:
        sock = socket.create_connection(("127.0.0.1", proxy.listeners[-1].port))
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 65536)
        reader, writer = await asyncio.open_connection(sock=sock)
        fetch = encode_request(1, 4, 9, {"replica_id": -1, "max_wait_ms": 0, "min_bytes": 0, "max_bytes": big,
                                         "isolation_level": 0, "topics": []})
        writer.write(fetch)
        await _until(lambda: proxy._pairs and next(iter(proxy._pairs)).upstream is not None, "connected")
        pair = next(iter(proxy._pairs))
        await _until(lambda: "client" in pair.upstream._pauses, "the proxy stops reading the upstream")
        await _until(lambda: upstream.writers[0].transport.get_write_buffer_size() > 0,
                     "the upstream's writes back up")
        assert pair.client.transport.get_write_buffer_size() <= _HIGH_WATER + FrameReader.STREAM_SCRATCH
        got = await _read_frame(reader)
        assert got[:4] == struct.pack(">i", 9) and got[4:] == answer[8:]

        upstream.hold(True)  # the upstream stops reading: a large request backs up at the proxy
        produce = encode_request(0, 3, 10, {"transactional_id": None, "acks": 1, "timeout_ms": 100,
                                            "topic_data": [{"name": "t", "partition_data": [
                                                {"index": 0, "records": os.urandom(big)}]}]})
        writer.write(produce)
        await _until(lambda: "upstream" in pair.client._pauses, "the proxy stops reading the client")
        await _until(lambda: writer.transport.get_write_buffer_size() > 0, "the client's writes back up")
        assert pair.upstream.transport.get_write_buffer_size() <= _HIGH_WATER + FrameReader.STREAM_SCRATCH
        upstream.hold(False)
        await _until(lambda: len(upstream.requests) == 2, "the request arrives")
        assert upstream.requests[1] == len(produce) - 4
        writer.close()
    finally:
        await proxy.stop()
        await upstream.stop()


class _Sink:
    def __init__(self) -> None:
        self.writes: list[bytes] = []

    def send(self, data: memoryview) -> None:
        self.writes.append(bytes(data))


@pytest.mark.parametrize("pieces", [[1, 3], [70_000, 3], [10, 70_000, 5], [65_536, 65_536, 1], [200_000, 200_000],
                                    [5] * 30_000, [100_000, 1, 1, 100_000, 2]])
def test_a_streamed_frame_never_ends_in_a_small_write_of_its_own(pieces: list[int]) -> None:
    """Whatever the pieces a frame arrives in, what goes out is the same bytes in order, and its last write
    carries at least HOLD bytes (or the whole frame): a small last segment stalls clients (`_Stream`)."""
    data = os.urandom(sum(pieces))
    stream, sink = _Stream(), _Sink()
    pos = 0
    for i, n in enumerate(pieces):
        stream.out(sink, memoryview(data)[pos:pos + n], i == len(pieces) - 1)  # type: ignore[arg-type]
        pos += n
    assert b"".join(sink.writes) == data
    assert len(sink.writes[-1]) >= min(_Stream.HOLD, len(data))
