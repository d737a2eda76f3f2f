"""What every client test checks, written once: sample records, what fakekafka stored, and a proxy that
loses a Produce response.

The client test files drive their own client; these helpers read the broker's side independently of
any client (`stored`, `stored_codecs`), so a client that hid an error or rewrote a record is caught.
"""

from __future__ import annotations

import random
import socket
import struct
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import fakekafka
from fakekafka.testing.client import RemoteCluster
from fakekafka.testing.handle import ClusterHandle
from fakekafka.wire.records import Compression, read_header

__all__ = [
    "BAD_TOPIC_NAMES", "CODECS", "COMPRESSIBLE", "KEEP_FOREVER", "MANY", "MiB", "SAMPLES", "TIMESTAMPS",
    "DropProduceResponses",
    "Row", "Sample", "dropping_produce_responses", "expected_rows", "kafka_python_consumer", "random_bytes", "stored",
    "stored_codecs",
]

MiB = 1024 * 1024

CODECS = ["none", "gzip", "snappy", "lz4", "zstd"]
"""The client-side names of Kafka's codecs; `Compression[name.upper()]` is the stored attribute."""

BAD_TOPIC_NAMES = ["bad name!", "."]


def kafka_python_consumer(*topics: str, **config: object) -> Any:
    """A kafka-python KafkaConsumer that does not ask the broker to create its topics (unless `config` says
    `allow_auto_create_topics=True`). kafka-python 3.0.12 builds the consumer's ClusterMetadata without that
    setting, so its Metadata requests ask to create whatever it is given: under --kafka-real one still in flight at
    close re-created a topic the cleanup had just deleted, and a later test of that cluster found it."""
    from kafka import KafkaConsumer

    config = {"allow_auto_create_topics": False, **config}
    consumer = KafkaConsumer(*topics, **config)
    consumer._client.cluster.config["allow_auto_create_topics"] = config["allow_auto_create_topics"]
    return consumer


@dataclass(frozen=True)
class Sample:
    key: bytes | None
    value: bytes | None
    headers: tuple[tuple[str, bytes | None], ...] = ()


SAMPLES: list[Sample] = [
    Sample(b"k0", b"v0", (("h1", b"a"), ("h2", b""))),
    Sample(None, b"no key"),
    Sample(b"k2", None, (("tombstone", b"yes"),)),
    Sample(b"", b""),
    Sample(b"\x00\xffbin", bytes(range(256)), (("dup", b"1"), ("dup", b"2"), ("utf8-\u00e9", b"\xc3\xa9"))),
]
"""Keys and values null, empty and binary; headers empty, repeated and non-ASCII (order matters)."""

COMPRESSIBLE: list[Sample] = SAMPLES + [Sample(b"text", b"fakekafka speaks the Kafka protocol. " * 100)]
"""SAMPLES plus a record that every codec shrinks (some clients send a batch raw when a codec does not)."""

MANY: list[Sample] = [Sample(b"k%d" % i, b"v%d" % i) for i in range(100)]
"""Enough records for many batches and several requests in flight (the idempotence scenario)."""

TIMESTAMPS = [1_700_000_000_000 + 1000 * i for i in range(5)]
"""Create times for the ListOffsets-by-time scenario: one record each, one second apart."""

KEEP_FOREVER = {"retention.ms": "-1"}
"""Configs of the topic TIMESTAMPS go to: they are years old, and Kafka's retention check (30 s after it starts,
then every 5 minutes) deletes even the active segment of a topic whose records are all past retention.ms, so a
test that checks the beginning offset would see it jump to the end."""


Row = tuple[int, bytes | None, bytes | None, list[tuple[str, bytes | None]]]
"""(offset, key, value, headers): one record as every test compares it."""


def expected_rows(samples: list[Sample], first_offset: int = 0) -> list[Row]:
    return [(first_offset + i, s.key, s.value, list(s.headers)) for i, s in enumerate(samples)]


def stored(cluster: ClusterHandle, topic: str, partition: int | None = 0) -> list[Row]:
    """(offset, key, value, headers) of every record the broker holds, decoded by fakekafka's `wire` (read
    from fakekafka's model, or fetched from a remote cluster such as `--kafka-real`'s)."""
    return [(r.offset, r.key, r.value, list(r.headers)) for r in cluster.records(topic, partition)]


def stored_batches(cluster: ClusterHandle, topic: str, partition: int = 0) -> list[bytes]:
    """The partition's stored batches as the broker keeps them (Fetch from a remote one)."""
    if isinstance(cluster, RemoteCluster):
        return cluster.batches(topic, partition)
    assert isinstance(cluster, fakekafka.Cluster)
    return cluster.call(lambda: [bytes(b) for b in cluster.state.topics[topic].partitions[partition].log.batches])


def stored_codecs(cluster: ClusterHandle, topic: str, partition: int = 0) -> list[Compression]:
    """The compression attribute of each stored batch, read from the raw batch header."""
    return [read_header(b).compression for b in stored_batches(cluster, topic, partition)]


def random_bytes(n: int, seed: int = 0) -> bytes:
    """Incompressible, reproducible bytes (so a codec cannot shrink a large record under a limit)."""
    return random.Random(seed).randbytes(n)


# --- a proxy that loses Produce responses ---------------------------------------------------------

_SIZE = struct.Struct(">i")
_REQUEST_HEAD = struct.Struct(">hhi")
PRODUCE_KEY = 0


def _read_frame(sock: socket.socket) -> bytes | None:
    """One size-prefixed frame (prefix included), or None when the peer closed."""
    head = _read_exactly(sock, 4)
    if head is None:
        return None
    body = _read_exactly(sock, _SIZE.unpack(head)[0])
    return None if body is None else head + body


def _read_exactly(sock: socket.socket, n: int) -> bytes | None:
    buf = bytearray()
    while len(buf) < n:
        try:
            chunk = sock.recv(n - len(buf))
        except OSError:
            return None
        if not chunk:
            return None
        buf += chunk
    return bytes(buf)


class DropProduceResponses:
    """A TCP proxy in front of one broker: forwards whole frames both ways, except that the first `drops`
    Produce responses are swallowed and that client connection is closed instead.

    The broker has applied the Produce by the time its response exists, so the client sees exactly what a
    real network failure after a successful write looks like, and an idempotent producer must retry the
    same batch with the same sequence. Runs on threads, so it serves both a background-thread cluster and
    one inside the test's own event loop.
    """

    def __init__(self, upstream: tuple[str, int], drops: int = 1) -> None:
        self.upstream = upstream
        self.drops_left = drops
        self.dropped: list[int] = []  # correlation ids of the swallowed responses
        self.produce_requests = 0
        self._lock = threading.Lock()
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port: int = self._listener.getsockname()[1]
        self._sockets: list[socket.socket] = []
        self._threads: list[threading.Thread] = []
        self._closed = False
        self._spawn(self._accept_loop)

    def _spawn(self, fn: Callable[..., None], *args: object) -> None:
        t = threading.Thread(target=fn, args=args, daemon=True, name="drop-produce-proxy")
        self._threads.append(t)
        t.start()

    def _accept_loop(self) -> None:
        while True:
            try:
                client, _ = self._listener.accept()
            except OSError:
                return
            try:
                server = socket.create_connection(self.upstream)
            except OSError:
                client.close()
                continue
            with self._lock:
                if self._closed:
                    client.close()
                    server.close()
                    return
                self._sockets += [client, server]
            produce_ids: set[int] = set()
            self._spawn(self._requests, client, server, produce_ids)
            self._spawn(self._responses, client, server, produce_ids)

    def _requests(self, client: socket.socket, server: socket.socket, produce_ids: set[int]) -> None:
        while (frame := _read_frame(client)) is not None:
            api_key, _, correlation_id = _REQUEST_HEAD.unpack_from(frame, 4)
            if api_key == PRODUCE_KEY:
                with self._lock:
                    produce_ids.add(correlation_id)
                    self.produce_requests += 1
            try:
                server.sendall(frame)
            except OSError:
                break
        self._hang_up(client, server)

    def _responses(self, client: socket.socket, server: socket.socket, produce_ids: set[int]) -> None:
        while (frame := _read_frame(server)) is not None:
            (correlation_id,) = _SIZE.unpack_from(frame, 4)
            with self._lock:
                drop = correlation_id in produce_ids and self.drops_left > 0
                produce_ids.discard(correlation_id)
                if drop:
                    self.drops_left -= 1
                    self.dropped.append(correlation_id)
            if drop:
                break
            try:
                client.sendall(frame)
            except OSError:
                break
        self._hang_up(client, server)

    @staticmethod
    def _hang_up(*socks: socket.socket) -> None:
        for s in socks:
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    def close(self) -> None:
        with self._lock:
            self._closed = True
            socks = list(self._sockets)
        self._hang_up(*socks)
        try:
            self._listener.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        self._listener.close()
        for t in self._threads:
            t.join(5)
        for s in socks:
            s.close()


@contextmanager
def dropping_produce_responses(cluster: fakekafka.Cluster, drops: int = 1) -> Iterator[DropProduceResponses]:
    """Puts a `DropProduceResponses` proxy in front of the cluster's only broker and advertises the proxy
    in Metadata, so clients reach the broker only through it; `cluster.bootstrap_servers` names the proxy
    meanwhile."""
    host, port = cluster.bootstrap_servers.rsplit(":", 1)
    proxy = DropProduceResponses((host, int(port)), drops)
    broker = cluster.call(lambda: next(iter(cluster.state.brokers.values())))
    cluster.call(lambda: setattr(broker, "port", proxy.port))
    try:
        yield proxy
    finally:
        cluster.call(lambda: setattr(broker, "port", int(port)))
        proxy.close()
