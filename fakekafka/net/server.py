"""The asyncio server: moves bytes between sockets and the handlers, nothing more.

One task per connection; requests on a connection are answered one at a time, in order, as Kafka does
(it mutes a channel until the response is sent). A malformed frame, an unknown API key or a request
too large closes that connection alone with a log line; no other connection or stored data is touched.

Kafka's socket-server limits, by their names (BrokerConfig): socket.request.max.bytes (a larger size prefix
closes the connection), queued.max.request.bytes (announced frame sizes counted per broker, as Kafka's
memory pool does; when spent, connections that want to start a frame are not read until requests finish),
connections.max.idle.ms (no bytes either way for that long closes the connection), max.connections (past it
a new connection is held unread until one closes, as Kafka's acceptor waits for a slot) and
max.connections.per.ip with max.connections.per.ip.overrides (past it a new connection is closed at once, as
Kafka 4.4 does). Frame buffers grow
with the bytes that arrive, never to the announced size up front. A request parked waiting (a Fetch
long-poll, a JoinGroup, an acks=all Produce) is cancelled when its connection ends. Deliberate differences:
idleness is measured on the cluster's clock (a frozen clock's advance_clock can close idle connections), and
at most 128 connections wait past max.connections (Kafka leaves them to the kernel's listen backlog).
"""

from __future__ import annotations

import asyncio
import collections
import dataclasses
import gc
import logging
import socket
import ssl
import struct
import sys
import time
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from fakekafka.handlers import NO_RESPONSE, DropConnection, Park, RequestContext, dispatch, handler_for
from fakekafka.handlers.api_versions import API_VERSIONS_KEY, unsupported_version_response
from fakekafka.handlers.registry import error_response
from fakekafka.handlers.sasl import SASL_AUTHENTICATE, SASL_HANDSHAKE, SaslState
from fakekafka.model.clock import ManualClock
from fakekafka.model.cluster import Broker, ClusterState
from fakekafka.model.config import OAUTHBEARER_UNSECURED_VALIDATOR
from fakekafka.model.log import StorageError
from fakekafka.net.security import (
    ListenerSpec,
    certificate_subject,
    parse_listeners,
    server_ssl_context,
    ssl_principal_name,
)
from fakekafka.observe.traffic import touched
from fakekafka.wire import DecodeError, ErrorCode, Request, UnknownApiKey, decode_request_header
from fakekafka.wire.messages import API_MODULES
from fakekafka.wire.primitives import element_budget
from fakekafka.wire.protocol import encode_response_chunks, parse_body, request_struct

__all__ = ["Listener", "ListenerPool", "RequestRecord", "Server", "error_codes_in"]

log = logging.getLogger("fakekafka.server")
_KNOWN_CODES = frozenset(int(c) for c in ErrorCode)
_SIZE = struct.Struct(">i")
_IOV_MAX = 1024  # buffers per sendmsg(): Linux's UIO_MAXIOV
MAX_REQUEST_ELEMENTS = 250_000
"""Array elements one request may hold (topics, partitions, names...). A request of one-byte elements becomes
about 200 bytes of Python objects per element, and its answer more: 0.9 MB of Metadata topic names took 170 MB
and 3.5 s. Past it the connection is closed as for a malformed request (fakekafka's own; Kafka has none)."""
_HELD_BACKLOG = 128
"""Connections past max.connections kept waiting per broker (the listen backlog's size); more are closed."""
# Python 3.11's transport joins writelines() into one bytes (a copy of every stored batch a Fetch returns);
# 3.12+ sends them with sendmsg() itself.
_TRANSPORT_JOINS = sys.version_info < (3, 12)


TRIM_AFTER_FREED_BYTES = 32 * 1024 * 1024
"""Stored log bytes freed since the last look that make the server ask malloc to return memory to the OS."""


def _malloc_trim() -> Callable[[int], int] | None:
    """glibc's malloc_trim, where there is one (Linux with glibc); None elsewhere."""
    try:
        import ctypes
        import ctypes.util
        name = ctypes.util.find_library("c")
        if name is None:
            return None
        trim = ctypes.CDLL(name).malloc_trim
        trim.argtypes = [ctypes.c_size_t]
        trim.restype = ctypes.c_int
        return trim  # type: ignore[no-any-return]
    except (OSError, AttributeError):
        return None


_MALLOC_TRIM = _malloc_trim()


METADATA_APIS = frozenset({
    3,  # Metadata (topics created on demand)
    10,  # FindCoordinator (the internal topics)
    19, 20, 21, 22,  # CreateTopics, DeleteTopics, DeleteRecords, InitProducerId (the producer id block)
    30, 31, 33, 34, 37,  # CreateAcls, DeleteAcls, AlterConfigs, AlterReplicaLogDirs, CreatePartitions
    43, 44, 45, 51,  # ElectLeaders, IncrementalAlterConfigs, AlterPartitionReassignments, AlterUserScramCredentials
})
"""Requests that may change what a data dir's metadata file holds: it is written (if changed) before they are
answered."""


class _CloseConnection(Exception):
    pass


@dataclass(frozen=True, slots=True)
class RequestRecord:
    """One request as the server saw it: what a failing test's report shows."""

    time_ms: int
    broker: int
    client: str
    client_id: str | None
    api: str
    version: int
    correlation_id: int
    latency_ms: float
    error_codes: tuple[str, ...]
    wall_time: float = 0.0
    """Unix time (s) the request was received: recordings are read on a real time line."""
    client_software_name: str | None = None
    client_software_version: str | None = None
    request_bytes: int = 0
    response_bytes: int = 0
    topics: tuple[tuple[str, int], ...] = ()
    """(topic, partition) the request touched (partition -1: the topic as a whole); filled for listeners only."""
    groups: tuple[str, ...] = ()
    records: int = 0
    """Records produced (Produce) or returned (Fetch)."""
    generation_id: int | None = None
    member_id: str | None = None
    partition_records: tuple[int, ...] = ()
    """Records per entry of `topics` (same order), for Produce and Fetch; empty otherwise."""


def error_codes_in(result: Any, found: set[int]) -> set[int]:
    """Every non-zero `error_code` in a decoded answer, added to `found`."""
    if isinstance(result, dict):
        for key, value in result.items():
            if key == "error_code":
                if value:
                    found.add(int(value))
            elif isinstance(value, (dict, list)):
                error_codes_in(value, found)
    elif isinstance(result, list):
        for item in result:
            if isinstance(item, (dict, list)):
                error_codes_in(item, found)
    return found


class _Connection(asyncio.BufferedProtocol):
    """Reads size-prefixed frames into buffers that grow with the bytes that arrive (an announced size is
    never allocated up front); a large frame is received straight into its own buffer.

    Frames queue up here (a client may pipeline requests) and are answered one at a time by the
    connection's task. Reading pauses for any of: too many frames queued, the broker's
    queued.max.request.bytes spent, max.connections reached (the connection waits to be admitted).
    """

    _SCRATCH = 65536
    _MAX_QUEUED = 64

    def __init__(self, server: Server, broker: Broker, listener: ListenerSpec | None = None) -> None:
        self.server = server
        self.broker = broker
        self.listener = listener
        self.peer = "?"
        self.ip = "?"
        self.transport: asyncio.Transport | None = None
        self.task: asyncio.Task[None] | None = None
        self._head = bytearray()
        self._frame: bytearray | None = None
        self._size = 0
        self._filled = 0
        self._direct = False
        self._frames: collections.deque[bytearray] = collections.deque()
        self._wakeup: asyncio.Future[None] | None = None
        self._closed = False
        self._paused: set[str] = set()
        self._can_write = asyncio.Event()
        self._can_write.set()
        self._sock: socket.socket | None = None
        self.reserved = 0
        """Bytes of this connection's frames counted against queued.max.request.bytes (announced sizes)."""
        self._starved_size: int | None = None
        self._stash = b""
        self.last_active = 0
        self.in_request = False
        self.admitted = False
        self.counted_ip = False

    # protocol callbacks ------------------------------------------------------------------------
    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport
        if _TRANSPORT_JOINS and transport.get_extra_info("sslcontext") is None:  # TLS: bytes go through ssl
            sock = getattr(transport.get_extra_info("socket"), "_sock", None)
            self._sock = sock if isinstance(sock, socket.socket) and hasattr(sock, "sendmsg") else None
        peer = transport.get_extra_info("peername")
        self.peer = f"{peer[0]}:{peer[1]}" if isinstance(peer, tuple) else str(peer)
        self.ip = str(peer[0]) if isinstance(peer, tuple) else self.peer
        self.server._ensure_ticker()
        self.server._accept(self)

    def start(self) -> None:
        """Admitted: counted as one of the broker's connections and served."""
        self.admitted = True
        self.server._by_broker[self.broker.node_id].add(self)
        self.resume("held")
        self.task = asyncio.get_running_loop().create_task(self.server._serve_connection(self))

    def pause(self, reason: str) -> None:
        if not self._paused and self.transport is not None:
            self.transport.pause_reading()
        self._paused.add(reason)

    def resume(self, reason: str) -> None:
        if reason in self._paused:
            self._paused.discard(reason)
            if not self._paused and self.transport is not None and not self._closed:
                self.transport.resume_reading()

    def get_buffer(self, sizehint: int) -> memoryview:
        frame = self._frame
        if frame is not None and self._size - self._filled >= self._SCRATCH:
            if len(frame) - self._filled < self._SCRATCH:  # grow by what has arrived, never past the size
                _grow(frame, min(self._size, max(2 * len(frame), self._filled + self._SCRATCH)) - len(frame))
            self._direct = True
            return memoryview(frame)[self._filled:]
        self._direct = False
        scratch = self.server._scratch
        if not scratch:
            scratch.extend(bytes(self._SCRATCH))
        return memoryview(scratch)

    def buffer_updated(self, nbytes: int) -> None:
        self.server._touch(self)
        if self._direct:
            self._filled += nbytes
            if self._filled == self._size:
                self._deliver()
            return
        self._feed(memoryview(self.server._scratch)[:nbytes])

    def _feed(self, data: memoryview | bytes) -> None:
        """Takes bytes read (the server's shared scratch buffer: whatever is kept is copied)."""
        nbytes = len(data)
        pos = 0
        while pos < nbytes and not self._closed:
            if self._frame is None:
                need = 4 - len(self._head)
                self._head += data[pos:pos + need]
                pos += min(need, nbytes - pos)
                if len(self._head) < 4:
                    return
                (size,) = _SIZE.unpack(self._head)
                self._head = bytearray()
                limit = self.server.cluster.config.socket_request_max_bytes
                if size < 0 or size > limit:
                    log.warning("connection %s: frame of %d bytes is outside 0..%d (socket.request.max.bytes); "
                                "closing", self.peer, size, limit)
                    self.close()
                    return
                if not self.server._reserve(self, size):  # queued.max.request.bytes spent: wait for it
                    self._starved_size = size
                    self._stash = bytes(data[pos:])
                    self.pause("budget")
                    return
                self._begin(size)
                if size == 0:
                    self._deliver()
                continue
            take = min(self._size - self._filled, nbytes - pos)
            self._frame[self._filled:self._filled + take] = data[pos:pos + take]
            self._filled += take
            pos += take
            if self._filled == self._size:
                self._deliver()

    def _begin(self, size: int) -> None:
        self._frame = bytearray()
        self._size = size
        self._filled = 0

    def unstarve(self) -> None:
        """The budget has room again: reads the frame this connection waits to start, then what came after."""
        size, stash = self._starved_size, self._stash
        self._starved_size, self._stash = None, b""
        if size is None or self._closed:
            return
        self.resume("budget")
        self._begin(size)
        if size == 0:
            self._deliver()
        self._feed(stash)

    def _deliver(self) -> None:
        assert self._frame is not None
        self._frames.append(self._frame)
        self._frame = None
        self._filled = 0
        self._size = 0
        if len(self._frames) >= self._MAX_QUEUED:
            self.pause("queue")
        self._wake()

    def eof_received(self) -> bool:
        if self._frame is not None or self._head:
            got = self._filled if self._frame is not None else len(self._head)
            want = self._size if self._frame is not None else 4
            log.warning("connection %s: truncated frame (%d of %d bytes); closing", self.peer, got, want)
        return False

    def connection_lost(self, exc: Exception | None) -> None:
        self._closed = True
        self._frame = None
        self._stash = b""
        self.server._forget(self)
        self._can_write.set()
        self._wake()
        if self.in_request and self.task is not None and not self.task.done():
            self.task.cancel()  # a parked request ends with its connection (and lets go of its memory)

    def pause_writing(self) -> None:
        self._can_write.clear()

    def resume_writing(self) -> None:
        self._can_write.set()

    # used by the connection's task -----------------------------------------------------------------
    def _wake(self) -> None:
        if self._wakeup is not None and not self._wakeup.done():
            self._wakeup.set_result(None)

    async def next_frame(self) -> bytearray | None:
        while not self._frames:
            if self._closed:
                return None
            self._wakeup = asyncio.get_running_loop().create_future()
            await self._wakeup
        frame = self._frames.popleft()
        if len(self._frames) < self._MAX_QUEUED // 2:
            self.resume("queue")
        return frame

    async def write(self, chunks: list[Any]) -> None:
        if self._closed or self.transport is None:
            raise ConnectionError("connection closed")
        self.server._touch(self)
        if self._sock is not None and not self.transport.get_write_buffer_size():
            chunks = self._send_now(chunks)
            if not chunks:
                return
        self.transport.writelines(chunks)
        await self._can_write.wait()

    def _send_now(self, chunks: list[Any]) -> list[Any]:
        """Sends what the socket takes straight from the response's buffers (stored batches are not copied
        into one bytes first); returns what is left for the transport, which buffers it and reports errors."""
        assert self._sock is not None
        while chunks:
            head = chunks[:_IOV_MAX]
            try:
                sent = self._sock.sendmsg(head)
            except (BlockingIOError, InterruptedError):
                return chunks
            except OSError:
                return chunks  # the transport's own send meets the same error and closes the connection
            for i, c in enumerate(head):
                n = len(c)
                if sent < n:
                    return [memoryview(c)[sent:], *chunks[i + 1:]]
                sent -= n
            chunks = chunks[len(head):]
        return chunks

    def close(self, *, abort: bool = False) -> None:
        self._closed = True
        if self.transport is not None:
            if abort:
                self.transport.abort()
            else:
                self.transport.close()
        self._wake()


_ZEROS = bytes(1 << 20)


def _grow(buf: bytearray, n: int) -> None:
    """Appends `n` zero bytes without a temporary of that size."""
    while n > 0:
        k = min(n, len(_ZEROS))
        buf += memoryview(_ZEROS)[:k]
        n -= k


class _Refuse(asyncio.Protocol):
    """What a pooled listener's connection gets before a cluster adopts the listener (nobody knows its
    port yet, so this is a stray): closed at once."""

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        transport.abort()  # type: ignore[attr-defined]


class Listener:
    """A listening socket the loop already serves, waiting for a broker to adopt it. Adopting sets the
    protocol its connections get: a plain attribute, so a cluster takes it over without a syscall or a
    message to the loop."""

    def __init__(self, port: int) -> None:
        self.port = port
        self.protocol_factory: Callable[[], asyncio.BaseProtocol] | None = None
        self.server: asyncio.base_events.Server | None = None

    def _protocol(self) -> asyncio.BaseProtocol:
        factory = self.protocol_factory
        return _Refuse() if factory is None else factory()


class ListenerPool:
    """Fresh listening sockets bound and served ahead of time by the loop, so a cluster's start does no
    socket work on the caller's thread. Each is used by one broker and closed with it, never handed to a
    second cluster (the kernel may give the number out again once it is closed, as for any port-0 bind)."""

    def __init__(self, host: str = "127.0.0.1", size: int = 4) -> None:
        self.host = host
        self.size = size
        self._ready: collections.deque[Listener] = collections.deque()
        self._closed = False

    @property
    def ready(self) -> int:
        return len(self._ready)

    def take(self) -> Listener | None:
        try:
            return self._ready.popleft()
        except IndexError:
            return None

    async def fill(self) -> None:
        loop = asyncio.get_running_loop()
        while not self._closed and len(self._ready) < self.size:
            sock = _listen_socket(self.host, 0)
            listener = Listener(sock.getsockname()[1])
            try:
                listener.server = await loop.create_server(listener._protocol, sock=sock)
            except BaseException:
                sock.close()
                raise
            self._ready.append(listener)

    async def close(self) -> None:
        self._closed = True
        while self._ready:
            listener = self._ready.popleft()
            if listener.server is not None:
                listener.server.close()
                await listener.server.wait_closed()


def _listen_socket(host: str, port: int) -> socket.socket:
    # a socket of our own rather than create_server(host, port): that resolves the host in a thread pool
    family, kind, proto, _, address = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM,
                                                         flags=socket.AI_PASSIVE)[0]
    sock = socket.socket(family, kind, proto)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        if family == socket.AF_INET6:
            sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
        sock.bind(address)
        sock.listen(128)
        sock.setblocking(False)
    except OSError:
        sock.close()
        raise
    return sock


class Server:
    """Listeners for every broker of a `ClusterState`, in the running event loop."""

    def __init__(self, cluster: ClusterState, host: str = "127.0.0.1", *, advertised_host: str | None = None,
                 request_log_size: int = 1000) -> None:
        self.cluster = cluster
        self.host = host
        self.advertised_host = advertised_host
        self._servers: dict[tuple[int, str], asyncio.base_events.Server] = {}
        self._sockets: dict[tuple[int, str], socket.socket] = {}
        config = cluster.config
        self.listeners: list[ListenerSpec] = (parse_listeners(config.listeners, config.listener_security_protocol_map)
                                              if config.listeners else [ListenerSpec("PLAINTEXT", "PLAINTEXT", "", -1)])
        """The brokers' listeners (`listeners`); port -1: the implicit one, on each broker's own port."""
        self._advertised = ({s.name: s for s in parse_listeners(config.advertised_listeners,
                                                                config.listener_security_protocol_map)}
                            if config.advertised_listeners else {})
        listed = {m.strip().upper() for m in config.sasl_enabled_mechanisms.split(",")}
        for spec in self.listeners:
            if spec.sasl and "OAUTHBEARER" in listed and config.oauthbearer_validator(spec.name) is None:
                log.warning("OAUTHBEARER is not enabled on listener %s: no validator is named for it (Kafka's "
                            "unsecured one takes unsigned tokens for any principal; to take them, set listener.name."
                            "%s.oauthbearer.sasl.server.callback.handler.class=%s)", spec.name, spec.name.lower(),
                            OAUTHBEARER_UNSECURED_VALIDATOR)
        self._ssl: dict[str, ssl.SSLContext] = {}
        """TLS context per protocol: ssl.client.auth applies to SSL listeners; SASL_SSL ones ask for no client
        certificate, as Kafka since KIP-684 applies only a listener-prefixed ssl.client.auth to them."""
        for protocol in sorted({spec.protocol for spec in self.listeners if spec.tls}):
            if not config.ssl_keystore_location:
                raise ValueError("an SSL or SASL_SSL listener needs ssl.keystore.location (PEM key and certificate)")
            self._ssl[protocol] = server_ssl_context(
                config.ssl_keystore_location, config.ssl_truststore_location or None,
                config.ssl_client_auth if protocol == "SSL" else "none", config.ssl_key_password or None)
        self._connections: set[asyncio.Task[None]] = set()
        self._by_broker: dict[int, set[_Connection]] = defaultdict(set)
        self._held: dict[int, collections.deque[_Connection]] = defaultdict(collections.deque)
        """Connections past max.connections, not read until one of the broker's others closes."""
        self._per_ip: collections.Counter[tuple[int, str]] = collections.Counter()
        self._ip_overrides: tuple[str, dict[str, int]] = ("", {})
        self._queued_bytes: dict[int, int] = defaultdict(int)
        self._starved: dict[int, collections.deque[_Connection]] = defaultdict(collections.deque)
        self._idle: collections.OrderedDict[_Connection, None] = collections.OrderedDict()
        """Every open connection, least recently active first (connections.max.idle.ms)."""
        self._scratch = bytearray()
        """One read buffer for all connections, made by the first read (a cluster that is never connected to
        costs nothing): each read is parsed, and what is kept copied, before the next one."""
        self._waiters: dict[int, set[asyncio.Future[None]]] = defaultdict(set)
        self._ticker: asyncio.Task[None] | None = None
        self._tick_failures = 0
        self._peak_stored = 0
        self._trims_due = 0
        self._trimming = False
        self._stopped = False
        self.request_log: collections.deque[RequestRecord] = collections.deque(maxlen=request_log_size)
        self.requests_served = 0
        self._request_listeners: list[Callable[[RequestRecord], None]] = []
        cluster.add_change_listener(self._on_change)

    def add_request_listener(self, listener: Callable[[RequestRecord], None]) -> None:
        """Calls `listener` with every request served from now on, with what it touched filled in."""
        self._request_listeners.append(listener)

    def remove_request_listener(self, listener: Callable[[RequestRecord], None]) -> None:
        self._request_listeners.remove(listener)

    @property
    def bootstrap_servers(self) -> str:
        return ",".join(f"{b.host}:{b.port}" for b in self.cluster.brokers.values())

    def bootstrap_servers_for(self, listener: str) -> str:
        """The advertised addresses of one listener, by its name (e.g. "SASL_SSL")."""
        name = listener.upper()
        if all(spec.name != name for spec in self.listeners):
            raise KeyError(f"no listener named {name}; listeners: {', '.join(s.name for s in self.listeners)}")
        return ",".join("{}:{}".format(*b.endpoint(name)) for b in self.cluster.brokers.values())

    @property
    def connection_count(self) -> int:
        return sum(len(conns) for conns in self._by_broker.values())

    def bind(self) -> None:
        """Binds every live broker's port now, from any thread (0 picks a free one, which the broker then
        advertises): the address is known before the event loop serves it, and a client that connects in
        between waits in the listen backlog. Raises OSError (port taken) with nothing left open."""
        try:
            for broker in self.cluster.brokers.values():
                for spec in self.listeners:
                    key = (broker.node_id, spec.name)
                    if broker.alive and key not in self._sockets and key not in self._servers:
                        self._sockets[key] = self._listen(broker, spec)
        except OSError:
            self._close_sockets()
            raise
        self._advertise()

    def _advertise(self) -> None:
        """Each broker's advertised address per listener (advertised.listeners, else where it is bound); the
        first listener's is the broker's own host:port (bootstrap_servers)."""
        if self.advertised_host:
            for broker in self.cluster.brokers.values():
                broker.host = self.advertised_host
        if self.listeners[0].port < 0:
            return
        first = min(self.cluster.brokers)
        for broker in self.cluster.brokers.values():
            for spec in self.listeners:
                bound = broker.bound.get(spec.name)
                if bound is None:
                    continue
                adv = self._advertised.get(spec.name)
                if adv is None:
                    host, port = spec.host or self.advertised_host or self.host, bound
                else:
                    host = adv.host or self.advertised_host or self.host
                    port = adv.port + broker.node_id - first if adv.port else bound
                broker.endpoints[spec.name] = (host, port)
            broker.host, broker.port = broker.endpoints[self.listeners[0].name]

    def _listen(self, broker: Broker, spec: ListenerSpec) -> socket.socket:
        if spec.port < 0:  # the implicit listener: the broker's own port
            host, port = self.host, broker.port
        else:
            host = spec.host or self.host
            port = broker.bound.get(spec.name, spec.port + broker.node_id - min(self.cluster.brokers)
                                    if spec.port else 0)
        try:
            sock = _listen_socket(host, port)
        except OSError as e:  # which of the brokers' ports it was: the error's filename, as for files
            raise OSError(e.errno, e.strerror, f"{host}:{port}") from e
        if spec.port < 0:
            if broker.port == 0:
                broker.port = sock.getsockname()[1]
        else:
            broker.bound[spec.name] = sock.getsockname()[1]
        return sock

    def _factory(self, broker: Broker, spec: ListenerSpec) -> Callable[[], _Connection]:
        listener = None if spec.port < 0 else spec
        return lambda: _Connection(self, broker, listener)

    def adopt(self, pool: ListenerPool) -> bool:
        """Takes pooled listeners for the live brokers that have no port yet; True when every live broker is
        then served (nothing left for `start` to do: the ticker starts with the first connection)."""
        if pool.host != self.host or self.listeners[0].port >= 0:
            return False
        for broker in self.cluster.brokers.values():
            if not broker.alive or broker.port != 0 or (broker.node_id, "PLAINTEXT") in self._servers:
                continue
            listener = pool.take()
            if listener is None:
                return False
            assert listener.server is not None
            listener.protocol_factory = lambda b=broker: _Connection(self, b)
            self._servers[(broker.node_id, "PLAINTEXT")] = listener.server
            broker.port = listener.port
        if self.advertised_host:
            for broker in self.cluster.brokers.values():
                broker.host = self.advertised_host
        return all((b.node_id, "PLAINTEXT") in self._servers for b in self.cluster.brokers.values() if b.alive)

    # --- connection limits (Kafka's SocketServer/ConnectionQuotas and memory pool) -----------------
    def _accept(self, conn: _Connection) -> None:
        """max.connections.per.ip: closed at once past it, as Kafka closes it; max.connections: held unread
        until another connection of the broker closes, as Kafka's acceptor waits for a slot (past a
        listen backlog's worth of held ones, closed)."""
        config = self.cluster.config
        node = conn.broker.node_id
        key = (node, conn.ip)
        per_ip = self._ip_limit(conn.ip)
        if self._stopped or self._per_ip[key] >= per_ip:
            if not self._stopped:
                log.warning("connection %s: more than max.connections.per.ip=%d from %s; closing", conn.peer,
                            per_ip, conn.ip)
            conn.close(abort=True)
            return
        self._per_ip[key] += 1
        conn.counted_ip = True
        self._touch(conn)
        if len(self._by_broker[node]) >= config.max_connections or self._held[node]:
            if len(self._held[node]) >= _HELD_BACKLOG:
                log.warning("connection %s: max.connections=%d reached and %d waiting; closing", conn.peer,
                            config.max_connections, len(self._held[node]))
                conn.close(abort=True)
                return
            conn.pause("held")
            self._held[node].append(conn)
            return
        conn.start()

    def _ip_limit(self, ip: str) -> int:
        """max.connections.per.ip, or the address's entry in max.connections.per.ip.overrides (host names
        resolved once per value of the setting, as Kafka resolves them when the config is set)."""
        config = self.cluster.config
        raw = config.max_connections_per_ip_overrides
        if not raw:
            return config.max_connections_per_ip
        if self._ip_overrides[0] != raw:
            resolved: dict[str, int] = {}
            for host, count in config.ip_overrides().items():
                try:
                    addresses = {a[4][0] for a in socket.getaddrinfo(host, None, type=socket.SOCK_STREAM)}
                except OSError:
                    log.warning("max.connections.per.ip.overrides: %s does not resolve; ignored", host)
                    continue
                for address in addresses:
                    resolved[str(address)] = count
            self._ip_overrides = (raw, resolved)
        return self._ip_overrides[1].get(ip, config.max_connections_per_ip)

    def _forget(self, conn: _Connection) -> None:
        """A connection has closed: its slot, its address's count and its place in the queues go."""
        node = conn.broker.node_id
        self._idle.pop(conn, None)
        if getattr(conn, "counted_ip", False):
            conn.counted_ip = False
            key = (node, conn.ip)
            self._per_ip[key] -= 1
            if self._per_ip[key] <= 0:
                del self._per_ip[key]
        held = self._held.get(node)
        if held and conn in held:
            held.remove(conn)
        starved = self._starved.get(node)
        if starved and conn in starved:
            starved.remove(conn)
        if conn.admitted:
            conn.admitted = False
            self._by_broker[node].discard(conn)
            limit = self.cluster.config.max_connections
            while held and len(self._by_broker[node]) < limit and not self._stopped:
                held.popleft().start()

    def _touch(self, conn: _Connection) -> None:
        conn.last_active = self.cluster.clock.now_ms()
        idle = self._idle
        if conn in idle:
            idle.move_to_end(conn)
        elif not conn._closed:
            idle[conn] = None

    def _expire_idle(self) -> None:
        """Closes connections idle for connections.max.idle.ms on the cluster's clock, oldest first."""
        if not self._idle:
            return
        cutoff = self.cluster.clock.now_ms() - self.cluster.config.connections_max_idle_ms
        while self._idle:
            conn = next(iter(self._idle))
            if conn.last_active >= cutoff:
                return
            del self._idle[conn]
            log.info("connection %s: idle for more than connections.max.idle.ms=%d; closing", conn.peer,
                     self.cluster.config.connections_max_idle_ms)
            conn.close(abort=True)

    def _reserve(self, conn: _Connection, size: int) -> bool:
        """Counts a frame's announced size against the broker's queued.max.request.bytes; False (the
        connection then waits) when it is spent. Like Kafka's pool, one frame may overdraw what is left."""
        budget = self.cluster.config.queued_max_request_bytes
        if budget < 0:
            return True
        node = conn.broker.node_id
        if self._queued_bytes[node] >= budget:
            self._starved[node].append(conn)
            return False
        self._queued_bytes[node] += size
        conn.reserved += size
        return True

    def _release(self, conn: _Connection, size: int) -> None:
        size = min(size, conn.reserved)
        if size <= 0:
            return
        conn.reserved -= size
        node = conn.broker.node_id
        self._queued_bytes[node] -= size
        budget = self.cluster.config.queued_max_request_bytes
        starved = self._starved[node]
        while starved and (budget < 0 or self._queued_bytes[node] < budget):
            waiting = starved.popleft()
            size = waiting._starved_size
            if size is None:
                continue
            self._queued_bytes[node] += size
            waiting.reserved += size
            waiting.unstarve()

    def _ensure_ticker(self) -> None:
        if self._ticker is None and not self._stopped:
            self._ticker = asyncio.get_running_loop().create_task(self._tick_loop())

    def _close_sockets(self) -> None:
        for sock in self._sockets.values():
            sock.close()
        self._sockets.clear()

    async def start(self) -> None:
        """Serves every live broker's port (binding those `bind` has not) and starts the model's ticker.
        A server starts once: after `stop` (even one that ran before this did) it stays stopped."""
        if self._stopped:
            return
        try:
            self.bind()
            for broker in self.cluster.brokers.values():
                if broker.alive and not self._stopped:
                    await self.open_broker(broker.node_id)
        except OSError:
            await self.stop()
            raise
        if self._stopped:  # stopped while a listener was being set up: close what came after
            for srv in self._servers.values():
                srv.close()
            self._servers.clear()
            return
        self._ensure_ticker()

    async def open_broker(self, node_id: int) -> None:
        """Listens for the broker (again, on the same port after a restart)."""
        broker = self.cluster.brokers[node_id]
        loop = asyncio.get_running_loop()
        for spec in self.listeners:
            key = (node_id, spec.name)
            if key in self._servers:
                continue
            sock = self._sockets.pop(key, None) or self._listen(broker, spec)
            try:
                self._servers[key] = await loop.create_server(self._factory(broker, spec), sock=sock,
                                                              ssl=self._ssl.get(spec.protocol))
            except BaseException:
                sock.close()
                raise

    async def close_broker(self, node_id: int, *, abort: bool = True) -> None:
        """Stops listening for the broker and drops its connections (at once when `abort`: a killed
        broker; after answering what is in flight otherwise)."""
        servers = [self._servers.pop(key) for key in list(self._servers) if key[0] == node_id]
        for key in [key for key in self._sockets if key[0] == node_id]:
            self._sockets.pop(key).close()
        for srv in servers:
            srv.close()
        for conn in [*self._by_broker.get(node_id, ()), *self._held.get(node_id, ())]:
            conn.close(abort=abort)
        for srv in servers:
            await srv.wait_closed()

    def _stored_bytes(self) -> int:
        return sum(log.size_bytes for t in self.cluster.topics.values() for p in t.partitions
                   for log in p.logs.values())

    def _return_freed_memory(self, *, look_again: bool) -> None:
        """Once stored log bytes fell well below their peak (topics deleted, DeleteRecords, retention, compaction),
        gives the memory back to the OS. Two things keep it otherwise: a deleted topic's partitions and logs refer
        to each other, so only the cycle collector frees them, and its oldest generation runs rarely (stored
        batches are bytes, which do not count towards its thresholds); and malloc keeps freed heap memory for
        reuse. So: a full collection here, then malloc_trim off the loop."""
        stored = self._stored_bytes()
        if self._peak_stored - stored >= TRIM_AFTER_FREED_BYTES:
            self._peak_stored = stored
            self._trims_due = 3  # now and at the next two looks: what freed it may still be referenced now
        else:
            self._peak_stored = max(self._peak_stored, stored)
        if not self._trims_due or (not look_again and self._trims_due < 3):
            return  # the first collection at once, the two after it about a second apart
        self._trims_due -= 1
        asyncio.get_running_loop().call_soon(self._collect_and_trim)

    def _collect_and_trim(self) -> None:
        """From a fresh stack (nothing of the tick's frames in reach): collect, then trim off the loop."""
        gc.collect()
        if _MALLOC_TRIM is not None and not self._trimming:
            self._trimming = True
            future = asyncio.get_running_loop().run_in_executor(None, _MALLOC_TRIM, 0)
            future.add_done_callback(lambda _f: setattr(self, "_trimming", False))

    async def _tick_loop(self) -> None:
        """Fires the model's timeouts (sessions, rebalances) as the clock passes them, and returns freed log memory
        to the OS (the stored bytes are looked at every tick, so a peak is seen however briefly it lasted)."""
        clock = self.cluster.clock
        ticks = 0
        while True:
            try:
                self.cluster.tick()
            except Exception:  # a fakekafka bug: said once (each time at debug level); the timeouts keep firing
                if self._tick_failures < 1 or log.isEnabledFor(logging.DEBUG):
                    log.exception("the cluster's tick failed; it keeps running")
                self._tick_failures += 1
            self._expire_idle()
            ticks += 1
            self._return_freed_memory(look_again=ticks % 10 == 0)
            deadline = self.cluster.next_deadline()
            wait = 0.1 if deadline is None else min(max((deadline - clock.now_ms()) / 1000, 0.005), 0.1)
            await asyncio.sleep(wait)

    async def stop(self) -> None:
        self._stopped = True
        self._close_sockets()
        if self._ticker is not None:
            self._ticker.cancel()
            self._ticker = None
        for srv in self._servers.values():
            srv.close()
        for task in list(self._connections):
            task.cancel()
        for srv in self._servers.values():
            await srv.wait_closed()
        if self._connections:
            await asyncio.gather(*self._connections, return_exceptions=True)
        self._servers.clear()
        if self.cluster.storage is not None:  # once no request can write any more
            self.cluster.storage.close(self.cluster)
        self.cluster.loggers.restore()  # a test's BROKER_LOGGER change ends with its cluster
        try:
            self.cluster.remove_change_listener(self._on_change)
        except ValueError:
            pass

    async def serve_forever(self) -> None:
        await asyncio.gather(*(s.serve_forever() for s in self._servers.values()))

    # --- connections ---------------------------------------------------------------------------
    async def _serve_connection(self, conn: _Connection) -> None:
        """Answers one connection's frames in order until it closes."""
        task = asyncio.current_task()
        if task is not None:
            self._connections.add(task)
            task.add_done_callback(self._connections.discard)
        client_software: dict[str, Any] = {}
        if conn.listener is not None:
            client_software["listener"] = conn.listener.name
            if conn.listener.sasl:
                client_software["sasl"] = SaslState()
            elif conn.listener.tls:
                try:
                    client_software["ssl_principal"] = self._ssl_principal(conn)
                except ValueError as e:  # Kafka fails the TLS authentication: the client sees the close
                    log.warning("connection %s: %s; closing, as Kafka does", conn.peer, e)
                    client_software["refused"] = True
        try:
            while not client_software.get("refused"):
                frame = await conn.next_frame()
                if frame is None:
                    return
                started = time.perf_counter()
                wall = time.time()
                conn.in_request = True
                try:
                    request, response, codes, result = await self._handle(frame, conn.broker, conn.peer,
                                                                          client_software)
                except _CloseConnection:
                    return
                self._release(conn, len(frame))
                if response is not None:
                    await conn.write(response)
                conn.in_request = False
                closing = client_software.pop("close_after", None)
                if closing is not None:
                    log.info("connection %s: %s; closing after the answer, as Kafka does", conn.peer, closing)
                latency = (time.perf_counter() - started) * 1000
                record = RequestRecord(
                    self.cluster.clock.now_ms(), conn.broker.node_id, conn.peer, request.client_id, request.api_name,
                    request.api_version, request.correlation_id, latency,
                    tuple(ErrorCode(c).name if c in _KNOWN_CODES else str(c) for c in sorted(codes)), wall)
                self.request_log.append(record)
                self.requests_served += 1
                if self._request_listeners:
                    self._tell_listeners(record, request, result, frame, response, client_software)
                if closing is not None:  # Kafka holds a failed authentication's connection this long before
                    await asyncio.sleep(self.cluster.config.connection_failed_authentication_delay_ms / 1000)
                    return  # closing it (KIP-306): clients read the answer before they see the close
                if log.isEnabledFor(logging.DEBUG):
                    log.debug("broker=%d client=%s id=%s %s v%d corr=%d %.2fms%s", conn.broker.node_id, conn.peer,
                              request.client_id, request.api_name, request.api_version, request.correlation_id,
                              latency, f" errors={sorted(codes)}" if codes else "")
        except (ConnectionError, asyncio.CancelledError):
            pass
        finally:
            conn.in_request = False
            conn.close()
            self._release(conn, conn.reserved)

    def _ssl_principal(self, conn: _Connection) -> str:
        """An SSL listener's client as Kafka's default principal builder names it: `User:` and its certificate's
        subject DN through ssl.principal.mapping.rules, or User:ANONYMOUS without a certificate."""
        ssl_object = conn.transport.get_extra_info("ssl_object") if conn.transport is not None else None
        der = ssl_object.getpeercert(binary_form=True) if ssl_object is not None else None
        if not der:
            return "User:ANONYMOUS"
        rules = self.cluster.config.value("ssl.principal.mapping.rules")[0] or "DEFAULT"
        return "User:" + ssl_principal_name(certificate_subject(der), rules)

    def _tell_listeners(self, record: RequestRecord, request: Request, result: Any, frame: bytes,
                        response: list[Any] | None, client_software: dict[str, Any]) -> None:
        name, version = client_software.get("client_software", (None, None))
        by_id = self.cluster.topics_by_id
        seen = touched(request.api_key, request.body, result,
                       lambda topic_id: t.name if (t := by_id.get(topic_id)) is not None else None)
        topics = tuple(sorted(seen.topics))
        record = dataclasses.replace(
            record, client_software_name=name, client_software_version=version, request_bytes=len(frame) + 4,
            response_bytes=sum(len(c) for c in response) if response else 0, topics=topics,
            groups=tuple(sorted(seen.groups)), records=seen.records, generation_id=seen.generation_id,
            member_id=seen.member_id,
            partition_records=tuple(seen.partition_records.get(tp, 0) for tp in topics) if seen.records else ())
        for listener in list(self._request_listeners):
            try:
                listener(record)
            except Exception:
                log.exception("request listener %r failed; removing it", listener)
                self._request_listeners.remove(listener)

    async def _handle(self, frame: bytes, broker: Broker, peer: str, client_software: dict[str, Any]
                      ) -> tuple[Request, list[Any] | None, set[int], Any]:
        try:
            request, stream = decode_request_header(frame)
        except UnknownApiKey as e:
            log.warning("connection %s: %s; closing, as Kafka does", peer, e)
            raise _CloseConnection from None
        except DecodeError as e:
            log.warning("connection %s: malformed request header: %s; closing", peer, e)
            raise _CloseConnection from None
        key, version = request.api_key, request.api_version
        reg = handler_for(key)
        if reg is None:
            log.warning("connection %s: %s (key %d) is not supported by fakekafka; closing", peer, request.api_name,
                        key)
            raise _CloseConnection
        if key == API_VERSIONS_KEY and version > reg.max_version:
            body = unsupported_version_response()
            return request, encode_response_chunks(key, 0, request.correlation_id, body), \
                error_codes_in(body, set()), body
        if version > API_MODULES[key][3]:
            log.warning("connection %s: %s v%d is newer than any Kafka defines; closing", peer, request.api_name,
                        version)
            raise _CloseConnection
        try:
            with element_budget(MAX_REQUEST_ELEMENTS):
                request.body = parse_body(request_struct(key, version), stream,
                                          f"{request.api_name}RequestV{version}")
        except DecodeError as e:
            log.warning("connection %s: malformed request: %s; closing", peer, e)
            raise _CloseConnection from None
        ctx = RequestContext(self.cluster, broker, request, peer, client_software)
        sasl: SaslState | None = client_software.get("sasl")
        if sasl is not None and not sasl.authenticated and key not in (
                (API_VERSIONS_KEY, SASL_HANDSHAKE) if sasl.mechanism is None else (SASL_AUTHENTICATE,)):
            # Kafka's SaslServerAuthenticator: before the handshake the connection is closed unanswered;
            # after it, the request is answered ILLEGAL_SASL_STATE and the connection closed
            if sasl.mechanism is None:
                log.warning("connection %s: %s during SASL handshake; closing, as Kafka does", peer,
                            request.api_name)
                raise _CloseConnection
            body = error_response(ctx, request.body, ErrorCode.ILLEGAL_SASL_STATE)
            if body is None:
                raise _CloseConnection
            client_software["close_after"] = f"{request.api_name} during SASL authentication"
            return request, encode_response_chunks(key, version, request.correlation_id, body), \
                error_codes_in(body, set()), body
        if sasl is not None and sasl.authenticated and key not in (SASL_HANDSHAKE, SASL_AUTHENTICATE) and \
                sasl.expired(int(time.time() * 1000)):  # KIP-368: the session ended without a re-authentication
            log.info("connection %s: SASL session expired; closing, as Kafka does", peer)
            raise _CloseConnection
        if not reg.min_version <= version <= reg.max_version:
            body = error_response(ctx, request.body, ErrorCode.UNSUPPORTED_VERSION)
            if body is None:
                log.warning("connection %s: %s v%d is not supported; closing", peer, request.api_name, version)
                raise _CloseConnection
            return request, encode_response_chunks(key, version, request.correlation_id, body), \
                error_codes_in(body, set()), body
        try:
            result = dispatch(ctx)
            while isinstance(result, Park):
                result = await self._park(result)
            if key in METADATA_APIS and self.cluster.storage is not None:
                self.cluster.storage.save(self.cluster)  # before the answer, as Kafka's controller commits first
            if isinstance(result, DropConnection):
                if result.reason is not None:
                    log.info("connection %s: %s v%d: %s; closing, as Kafka does", peer, request.api_name, version,
                             result.reason)
                else:
                    log.info("connection %s: dropped %s applying %s v%d (a fault asked for)", peer,
                             "after" if result.applied else "before", request.api_name, version)
                raise _CloseConnection
        except _CloseConnection:
            raise
        except Exception as e:
            storage = isinstance(e, StorageError) or getattr(e, "code", None) == ErrorCode.KAFKA_STORAGE_ERROR
            if storage:  # the data dir said why, once; a failed log dir's answer, as Kafka's
                log.debug("connection %s: %s v%d: %s", peer, request.api_name, version, e)
            else:
                log.exception("connection %s: handler for %s v%d failed", peer, request.api_name, version)
            body = error_response(ctx, request.body,
                                  ErrorCode.KAFKA_STORAGE_ERROR if storage else ErrorCode.UNKNOWN_SERVER_ERROR)
            if body is None:
                raise _CloseConnection from None
            result = body
        if result is NO_RESPONSE:
            return request, None, set(), None
        try:
            chunks = encode_response_chunks(key, version, request.correlation_id, result)
        except Exception:  # a fakekafka bug: logged with its traceback; the connection closes, as Kafka's does
            log.exception("connection %s: the answer to %s v%d does not encode; closing", peer, request.api_name,
                          version)
            raise _CloseConnection from None
        return request, chunks, error_codes_in(result, set()), result

    # --- parked requests (long-poll fetches) ----------------------------------------------------
    async def _park(self, park: Park) -> Any:
        loop = asyncio.get_running_loop()
        clock = self.cluster.clock
        frozen = isinstance(clock, ManualClock)
        deadline = None if park.wait_ms is None else loop.time() + park.wait_ms / 1000
        while True:
            remaining = None if deadline is None else deadline - loop.time()
            if park.clock_deadline is not None:
                model_left = (park.clock_deadline - clock.now_ms()) / 1000
                if model_left <= 0:
                    return park.resume(True)
                if not frozen:
                    remaining = model_left if remaining is None else min(remaining, model_left)
            if remaining is not None and remaining <= 0:
                return park.resume(True)
            fut: asyncio.Future[None] = loop.create_future()
            keys = [id(k) for k in park.keys] + ([id(clock)] if park.clock_deadline is not None else [])
            for k in keys:
                self._waiters[k].add(fut)
            try:
                await asyncio.wait_for(fut, remaining)
                timed_out = False
            except TimeoutError:
                timed_out = True
            finally:
                for k in keys:
                    waiters = self._waiters.get(k)
                    if waiters is not None:
                        waiters.discard(fut)
                        if not waiters:
                            del self._waiters[k]
            result = park.resume(timed_out)
            if not isinstance(result, Park):
                return result
            park = result  # still waiting: same deadline, possibly other keys

    def _on_change(self, obj: object) -> None:
        for fut in self._waiters.get(id(obj), ()):
            if not fut.done():
                fut.set_result(None)
