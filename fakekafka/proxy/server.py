"""The proxy's asyncio side: a listener per upstream broker, a connection to the upstream per client connection,
frames forwarded as received.

Each client connection gets its own connection to the upstream broker its listener stands for (the bootstrap
listener: the first upstream address that answers), so correlation ids pass unchanged and Kafka's in-order
answers stay in order. Only the request header is read on the way up; on the way down only the responses
that name brokers are decoded and re-encoded (fakekafka/proxy/rewrite.py). Faults are the fake cluster's
rules (fakekafka/model/faults.py), matched on the header (and the body, only when a rule names a topic):

- error: answered by the proxy without forwarding, from the handlers' own error answers
  (`after=True`: forwarded, and the upstream's answer replaced by the error);
- latency: the request is forwarded that much later (the connection's later requests wait too, as Kafka
  answers a connection's requests one at a time);
- drop before / after: the client connection (and its upstream connection) closed instead of forwarding,
  or once the upstream answered;
- throttle: the answer's throttle_time_ms set;
- an unreachable broker (`kill_broker`): its listener closed and its connections dropped, as a dead broker.

Backpressure both ways: a client that does not read its answers stops the proxy reading that connection's
upstream (and, with 64 requests waiting, reading the client); a slow upstream stops the proxy reading the
client. A malformed frame from either side closes that pair of connections with a log line.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import logging
import socket
import ssl
import struct
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from fakekafka.model.cluster import Broker, ClusterState
from fakekafka.model.faults import Fault, FaultKind, Faults
from fakekafka.proxy.frames import FrameError, RequestHead, produce_acks, read_request_head
from fakekafka.proxy.rewrite import may_name_a_broker, rewrite_addresses
from fakekafka.server import RequestRecord
from wire import DecodeError, ErrorCode
from wire.protocol import decode_response, encode_response, parse_body, request_struct

__all__ = ["ProxyEvent", "ProxyServer", "Upstream"]

log = logging.getLogger("fakekafka.proxy")
_SIZE = struct.Struct(">i")
_CORRELATION = struct.Struct(">i")
_MAX_IN_FLIGHT = 64
"""Requests read from a client and not yet answered; past it the client is not read (Kafka reads one)."""
_MAX_UNSENT_BYTES = 64 * 1024 * 1024
"""Answers read from the upstream and not yet written to a slow client; past it the upstream is not read."""
BOOTSTRAP = -1
"""The node id faults and records give the bootstrap listener's connections."""


@dataclass(frozen=True, slots=True)
class Upstream:
    host: str
    port: int

    @classmethod
    def parse(cls, text: str) -> Upstream:
        host, sep, port = text.strip().rpartition(":")
        if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
            raise ValueError(f"{text!r} is not HOST:PORT")
        return cls(host.strip("[]"), int(port))

    def __str__(self) -> str:
        return f"{self.host}:{self.port}"


@dataclass(frozen=True, slots=True)
class ProxyEvent:
    time_ms: int
    kind: str
    details: dict[str, Any]


@dataclass(slots=True)
class _Slot:
    """One request of a client connection, in the order its answer is due."""

    head: RequestHead
    frame: bytes
    wall: float
    started: float
    faults: list[Fault]
    answer: asyncio.Future[list[bytes] | None]
    """The frames to write (size prefixes included); None: close the connection instead."""
    upstream_frame: bytes | None = None


@dataclass
class _Listener:
    node_id: int
    port: int
    sock: socket.socket | None
    server: asyncio.base_events.Server | None = None
    pairs: set[_Pair] = field(default_factory=set)
    reachable: bool = True


class ProxyServer:
    """A Kafka proxy in front of `upstreams` (bootstrap addresses of any Kafka-compatible cluster)."""

    def __init__(self, upstreams: list[Upstream] | list[str] | str, host: str = "127.0.0.1", port: int = 0, *,
                 advertised_host: str | None = None, client_ssl: ssl.SSLContext | None = None,
                 upstream_ssl: ssl.SSLContext | None = None, max_request_bytes: int = 104857600,
                 decode_answers: bool = False) -> None:
        if isinstance(upstreams, str):
            upstreams = upstreams.split(",")
        self.upstreams = [u if isinstance(u, Upstream) else Upstream.parse(u) for u in upstreams]
        if not self.upstreams:
            raise ValueError("the proxy needs at least one upstream HOST:PORT")
        self.host = host
        self.port = port
        self.advertised_host = advertised_host or host
        self.client_ssl = client_ssl
        self.upstream_ssl = upstream_ssl
        self.max_request_bytes = max_request_bytes
        self.decode_answers = decode_answers
        """Decode every answer (its error codes and what it touched) for request listeners: recordings and the
        summary. Off, only the answers that name brokers are decoded."""
        self.faults = Faults()
        self.events: list[ProxyEvent] = []
        self.nodes: dict[int, Upstream] = {}
        """Upstream brokers by node id, as the upstream's answers name them."""
        self.listeners: dict[int, _Listener] = {}
        """Listeners by node id (BOOTSTRAP: the bootstrap listener)."""
        self.cluster_id: str | None = None
        self.topic_names: dict[uuid.UUID, str] = {}
        self.requests_forwarded = 0
        self.requests_answered_locally = 0
        self.upstream_connections = 0
        self.upstream_local_addresses: set[str] = set()
        """host:port of every connection the proxy opened to the upstream (a test can check that the upstream
        saw no other client)."""
        self._request_listeners: list[Callable[[RequestRecord, _Exchange], None]] = []
        self._hosts: set[bytes] = {u.host.encode() for u in self.upstreams}
        self._stand_in: ClusterState | None = None
        self._started = time.monotonic()
        self._pairs: set[_Pair] = set()
        self._tasks: set[asyncio.Task[Any]] = set()
        self.software: dict[str, tuple[str | None, str | None]] = {}
        """Client software name and version per connection, from its ApiVersions (recordings only)."""

    # --- lifecycle ------------------------------------------------------------------------------------------
    @property
    def bootstrap_servers(self) -> str:
        return f"{self.advertised_host}:{self.listeners[BOOTSTRAP].port}"

    def bind(self) -> None:
        """Binds the bootstrap listener (synchronously: the port is known before the loop serves it)."""
        if BOOTSTRAP not in self.listeners:
            sock = _listen_socket(self.host, self.port)
            self.listeners[BOOTSTRAP] = _Listener(BOOTSTRAP, sock.getsockname()[1], sock)

    async def start(self) -> None:
        self.bind()
        for listener in self.listeners.values():
            await self._serve(listener)

    async def stop(self) -> None:
        """Closes the listeners and every connection, and waits for their tasks to end (a task left pending when
        the loop stops would be finalised later, at a random point of another thread's work)."""
        for listener in self.listeners.values():
            await self._close_listener(listener)
        for pair in list(self._pairs):
            pair.close(None)
        tasks = [t for t in self._tasks if not t.done()]
        if tasks:
            _, pending = await asyncio.wait(tasks, timeout=5)
            for task in pending:
                task.cancel()
            await asyncio.gather(*pending, return_exceptions=True)

    def add_request_listener(self, listener: Callable[[RequestRecord, _Exchange], None]) -> None:
        """Called with each completed request: the record (as the fake cluster's recordings have) and the raw
        exchange (frames, decoded bodies when `decode_answers`)."""
        self._request_listeners.append(listener)

    def remove_request_listener(self, listener: Callable[[RequestRecord, _Exchange], None]) -> None:
        self._request_listeners.remove(listener)

    def event(self, kind: str, **details: Any) -> None:
        self.events.append(ProxyEvent(int(time.time() * 1000), kind, details))
        if len(self.events) > 10_000:
            del self.events[:1000]

    @property
    def connection_count(self) -> int:
        return len(self._pairs)

    # --- listeners -----------------------------------------------------------------------------------------
    async def _serve(self, listener: _Listener) -> None:
        if listener.server is not None or listener.sock is None:
            return
        listener.server = await asyncio.start_server(
            lambda r, w: self._accept(listener, r, w), sock=listener.sock, ssl=self.client_ssl,
            limit=1 << 20)

    async def _close_listener(self, listener: _Listener) -> None:
        server, listener.server = listener.server, None
        if server is not None:
            server.close()
        elif listener.sock is not None:
            listener.sock.close()
        listener.sock = None
        for pair in list(listener.pairs):
            pair.close("its listener closed")

    def _listener_for(self, node_id: int) -> _Listener:
        """The node's listener, bound now if it is new: the port is fixed before the answer naming it leaves.
        Port: the bootstrap port + 1 + node id when that is free (stable across runs), else any."""
        found = self.listeners.get(node_id)
        if found is not None:
            return found
        sock = None
        base = self.listeners[BOOTSTRAP].port if self.port else 0
        if base and base + 1 + node_id < 65536:
            with contextlib.suppress(OSError):
                sock = _listen_socket(self.host, base + 1 + node_id)
        if sock is None:
            sock = _listen_socket(self.host, 0)
        listener = _Listener(node_id, sock.getsockname()[1], sock)
        self.listeners[node_id] = listener
        self.event("listener_added", broker=node_id, port=listener.port)
        self._stand_in = None
        asyncio.get_running_loop().create_task(self._serve(listener))
        return listener

    def _rewrite(self, node_id: int, host: str, port: int) -> tuple[str, int]:
        upstream = Upstream(host, port)
        if self.nodes.get(node_id) != upstream:
            self.nodes[node_id] = upstream
            self._hosts.add(host.encode())
            self._stand_in = None
        return self.advertised_host, self._listener_for(node_id).port

    # --- steering -------------------------------------------------------------------------------------------
    async def kill_broker(self, node_id: int) -> None:
        """The broker becomes unreachable through the proxy: its listener closes, its connections drop."""
        listener = self.listeners.get(node_id)
        if listener is None:
            known = ", ".join(str(n) for n in sorted(self.listeners) if n != BOOTSTRAP) or "none seen yet"
            raise ValueError(f"the proxy has seen no broker {node_id}; the brokers it has seen are {known}")
        if not listener.reachable:
            return
        listener.reachable = False
        await self._close_listener(listener)
        self.event("broker_unreachable", broker=node_id, port=listener.port)

    async def restart_broker(self, node_id: int) -> None:
        """Makes a broker `kill_broker` made unreachable reachable again, on the same port."""
        listener = self.listeners.get(node_id)
        if listener is None:
            raise ValueError(f"the proxy has seen no broker {node_id}")
        if listener.reachable:
            return
        listener.sock = _listen_socket(self.host, listener.port)
        listener.reachable = True
        await self._serve(listener)
        self.event("broker_reachable", broker=node_id, port=listener.port)

    # --- connections ----------------------------------------------------------------------------------------
    async def _accept(self, listener: _Listener, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
                      ) -> None:
        task = asyncio.current_task()
        if task is not None:
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)
        peer = writer.get_extra_info("peername")
        peer_text = f"{peer[0]}:{peer[1]}" if isinstance(peer, tuple) else str(peer)
        if not listener.reachable:
            writer.close()
            return
        targets = self.upstreams if listener.node_id == BOOTSTRAP else [self.nodes[listener.node_id]]
        upstream_io = None
        last_error: Exception | None = None
        for target in targets:
            try:
                upstream_io = await asyncio.wait_for(asyncio.open_connection(
                    target.host, target.port, ssl=self.upstream_ssl, limit=1 << 20,
                    server_hostname=target.host if self.upstream_ssl is not None else None), 10)
                break
            except (OSError, TimeoutError, ssl.SSLError) as e:
                last_error = e
        if upstream_io is None:
            log.warning("client %s: no upstream reachable for broker %s (%s); closing", peer_text,
                        "bootstrap" if listener.node_id == BOOTSTRAP else listener.node_id, last_error)
            writer.close()
            return
        self.upstream_connections += 1
        local = upstream_io[1].get_extra_info("sockname")
        if isinstance(local, tuple):
            self.upstream_local_addresses.add(f"{local[0]}:{local[1]}")
        pair = _Pair(self, listener, peer_text, reader, writer, *upstream_io)
        listener.pairs.add(pair)
        self._pairs.add(pair)
        try:
            await pair.run()
        except asyncio.CancelledError:
            pass  # the proxy is stopping; asyncio's stream callback treats a cancelled handler as an error
        finally:
            listener.pairs.discard(pair)
            self._pairs.discard(pair)
            self.software.pop(pair.connection, None)

    # --- answers the proxy makes itself ---------------------------------------------------------------------
    def stand_in(self) -> ClusterState:
        """A model of the upstream as seen through the proxy (its brokers at the proxy's listeners, its cluster
        id), from which the handlers' own error answers are built for errors answered without forwarding."""
        if self._stand_in is None:
            brokers = [Broker(n, self.advertised_host, self.listeners[n].port)
                       for n in sorted(self.nodes) if n in self.listeners and self.listeners[n].reachable]
            state = ClusterState(brokers=brokers or [Broker(0, self.advertised_host,
                                                            self.listeners[BOOTSTRAP].port)])
            if self.cluster_id:
                state.config.cluster_id = self.cluster_id
            self._stand_in = state
        return self._stand_in

    def error_answer(self, head: RequestHead, frame: bytes, code: ErrorCode) -> bytes | None:
        """The whole answer frame reporting `code`, as fakekafka's handler would give it; None when the API
        has no way to say it (or the wire layer does not know it): the connection is closed instead."""
        from fakekafka.handlers import RequestContext, error_response
        from wire.protocol import Request
        if head.body_offset is None:
            return None
        import io
        stream = io.BytesIO(frame)
        stream.seek(head.body_offset)
        try:
            body = parse_body(request_struct(head.api_key, head.api_version), stream, head.api_name)
        except DecodeError:
            return None
        request = Request(head.api_key, head.api_version, head.correlation_id, head.client_id, None, body)
        answer = error_response(RequestContext(self.stand_in(), self.stand_in().brokers[min(
            self.stand_in().brokers)], request), body, code)
        if answer is None:
            return None
        return encode_response(head.api_key, head.api_version, head.correlation_id, answer)


@dataclass(slots=True)
class _Exchange:
    """One request and its answer as they crossed the proxy, for request listeners."""

    head: RequestHead
    request_frame: bytes
    response_frame: bytes | None
    """The answer as sent to the client (after any rewriting), size prefix excluded; None: none was sent."""
    request_body: Any = None
    response_body: Any = None
    connection: str = ""
    """Identifies the client connection (peer address and the listener's node) for replays."""


class _Pair:
    """A client connection and its upstream connection."""

    def __init__(self, proxy: ProxyServer, listener: _Listener, peer: str, client_r: asyncio.StreamReader,
                 client_w: asyncio.StreamWriter, up_r: asyncio.StreamReader, up_w: asyncio.StreamWriter) -> None:
        self.proxy = proxy
        self.listener = listener
        self.peer = peer
        self.client_r, self.client_w = client_r, client_w
        self.up_r, self.up_w = up_r, up_w
        self.slots: asyncio.Queue[_Slot] = asyncio.Queue(_MAX_IN_FLIGHT)
        self.forwarded: collections.deque[_Slot] = collections.deque()
        self.unsent = 0
        self.sent_some = asyncio.Event()
        self.closed = False
        self.tasks: list[asyncio.Task[None]] = []

    @property
    def node_id(self) -> int:
        return self.listener.node_id

    @property
    def connection(self) -> str:
        return f"{self.peer}/{self._node_text()}"

    async def run(self) -> None:
        loop = asyncio.get_running_loop()
        self.tasks = [loop.create_task(self._read_client()), loop.create_task(self._read_upstream()),
                      loop.create_task(self._write_client())]
        try:
            await asyncio.wait(self.tasks, return_when=asyncio.FIRST_COMPLETED)
        finally:
            self.close(None)
            for task in self.tasks:
                task.cancel()
            await asyncio.gather(*self.tasks, return_exceptions=True)

    def close(self, reason: str | None) -> None:
        if self.closed:
            return
        self.closed = True
        if reason:
            log.info("client %s (broker %s): %s; closing", self.peer, self._node_text(), reason)
        for w in (self.client_w, self.up_w):
            with contextlib.suppress(Exception):
                w.transport.abort() if reason else w.close()
        current = asyncio.current_task()
        for task in self.tasks:
            if task is not current:
                task.cancel()

    def _node_text(self) -> str:
        return "bootstrap" if self.node_id == BOOTSTRAP else str(self.node_id)

    # client -> upstream
    async def _read_client(self) -> None:
        proxy = self.proxy
        try:
            while True:
                prefix = await self.client_r.readexactly(4)
                (size,) = _SIZE.unpack(prefix)
                if size < 0 or size > proxy.max_request_bytes:
                    self.close(f"a request of {size} bytes (socket.request.max.bytes is {proxy.max_request_bytes})")
                    return
                frame = await self.client_r.readexactly(size)
                try:
                    head = read_request_head(frame)
                except FrameError as e:
                    self.close(f"malformed request: {e}")
                    return
                if not await self._take(prefix, frame, head):
                    return
        except (asyncio.IncompleteReadError, OSError):
            pass

    async def _take(self, prefix: bytes, frame: bytes, head: RequestHead) -> bool:
        """Queues the request's answer slot and forwards it (or answers it); False: read no more."""
        proxy = self.proxy
        fired: list[Fault] = []
        if proxy.faults.rules:
            body = None
            if head.body_offset is not None and any(r.topic is not None for r in proxy.faults.rules):
                import io
                stream = io.BytesIO(frame)
                stream.seek(head.body_offset)
                with contextlib.suppress(DecodeError):
                    body = parse_body(request_struct(head.api_key, head.api_version), stream, head.api_name)
            fired = proxy.faults.take(head.api_key, self.node_id, head.client_id, body, proxy.topic_names.get)
            for fault in fired:
                proxy.event("fault", fault=fault.describe(), api=head.api_name, broker=self.node_id,
                            client_id=head.client_id, correlation_id=head.correlation_id)
        loop = asyncio.get_running_loop()
        slot = _Slot(head, frame, time.time(), time.perf_counter(), fired, loop.create_future())
        kinds = {f.kind for f in fired}
        await self.slots.put(slot)
        if FaultKind.DROP_BEFORE in kinds:
            slot.answer.set_result(None)
            return False
        error = next((f for f in fired if f.kind == FaultKind.ERROR and not f.after), None)
        if error is not None:
            proxy.requests_answered_locally += 1
            answer = proxy.error_answer(head, frame, error.error or ErrorCode.UNKNOWN_SERVER_ERROR)
            slot.answer.set_result([answer] if answer is not None else None)
            return answer is not None
        latency = sum(f.ms for f in fired if f.kind == FaultKind.LATENCY)
        if latency:
            await asyncio.sleep(latency / 1000)
        no_answer = produce_acks(frame, head) == 0
        if not no_answer:
            self.forwarded.append(slot)
        self.up_w.write(prefix)
        self.up_w.write(frame)
        proxy.requests_forwarded += 1
        await self.up_w.drain()
        if no_answer:
            if FaultKind.DROP_AFTER in kinds:
                slot.answer.set_result(None)
                return False
            slot.answer.set_result([])
        return True

    # upstream -> client
    async def _read_upstream(self) -> None:
        try:
            while True:
                prefix = await self.up_r.readexactly(4)
                (size,) = _SIZE.unpack(prefix)
                if size < 4:
                    self.close(f"the upstream sent a malformed answer ({size} bytes)")
                    return
                frame = await self.up_r.readexactly(size)
                if not self.forwarded:
                    self.close("the upstream answered a request it was not sent")
                    return
                slot = self.forwarded.popleft()
                (correlation_id,) = _CORRELATION.unpack_from(frame)
                if correlation_id != slot.head.correlation_id:
                    self.close(f"the upstream answered correlation id {correlation_id}, "
                               f"expected {slot.head.correlation_id}")
                    return
                slot.upstream_frame = frame
                answer = self._answer(slot, prefix, frame)
                if answer is not None:
                    self.unsent += sum(len(b) for b in answer)
                slot.answer.set_result(answer)
                while self.unsent > _MAX_UNSENT_BYTES and not self.closed:
                    self.sent_some.clear()
                    await self.sent_some.wait()
        except (asyncio.IncompleteReadError, OSError):
            pass
        except DecodeError as e:
            self.close(f"the upstream's answer does not decode: {e}")
        if not self.closed:
            self.close(None)

    def _answer(self, slot: _Slot, prefix: bytes, frame: bytes) -> list[bytes] | None:
        """The frames the client gets for the upstream's `frame`: as received, or rewritten, or replaced by
        a fault's error or throttle; None: close instead."""
        proxy = self.proxy
        head = slot.head
        kinds = {f.kind for f in slot.faults}
        if FaultKind.DROP_AFTER in kinds:
            return None
        error = next((f for f in slot.faults if f.kind == FaultKind.ERROR and f.after), None)
        if error is not None:
            answer = proxy.error_answer(head, slot.frame, error.error or ErrorCode.UNKNOWN_SERVER_ERROR)
            return [answer] if answer is not None else None
        throttle = max((f.ms for f in slot.faults if f.kind == FaultKind.THROTTLE), default=0)
        if not head.known:
            return [prefix, frame]
        if throttle or may_name_a_broker(head.api_key, head.api_version, frame, proxy._hosts):
            _, body = decode_response(head.api_key, head.api_version, frame)
            changed = rewrite_addresses(body, proxy._rewrite)
            self._learn(head.api_key, body)
            if throttle and "throttle_time_ms" in body:
                body["throttle_time_ms"] = throttle
                changed += 1
            if changed:
                out = encode_response(head.api_key, head.api_version, head.correlation_id, body)
                return [out]
        return [prefix, frame]

    def _learn(self, api_key: int, body: Any) -> None:
        if api_key == 3:  # Metadata: the cluster id and the topic ids, for fault rules and recordings
            if body.get("cluster_id"):
                self.proxy.cluster_id = body["cluster_id"]
            for t in body.get("topics") or ():
                if t.get("topic_id") is not None and t.get("name"):
                    self.proxy.topic_names[t["topic_id"]] = t["name"]

    async def _write_client(self) -> None:
        try:
            while True:
                slot = await self.slots.get()
                answer = await slot.answer
                if answer is None:
                    reason = "a fault asked for it" if slot.faults else "no answer can say this error"
                    log.info("client %s (broker %s): %s v%d: connection dropped (%s)", self.peer, self._node_text(),
                             slot.head.api_name, slot.head.api_version, reason)
                    self.close(None)
                    self.client_w.transport.abort()
                    return
                if answer:
                    self.client_w.writelines(answer)
                    await self.client_w.drain()
                    self.unsent -= sum(len(b) for b in answer) if slot.upstream_frame is not None else 0
                    self.sent_some.set()
                if self.proxy._request_listeners:
                    self._tell(slot, answer)
        except OSError:
            pass

    def _tell(self, slot: _Slot, answer: list[bytes]) -> None:
        from fakekafka.proxy.observe import exchange_record
        response = b"".join(answer)[4:] if answer else None
        exchange = _Exchange(slot.head, slot.frame, response, connection=self.connection)
        record = exchange_record(self.proxy, exchange, slot, self.node_id, self.peer, self.proxy.software)
        for listener in list(self.proxy._request_listeners):
            try:
                listener(record, exchange)
            except Exception:
                log.exception("request listener %r failed; removing it", listener)
                self.proxy._request_listeners.remove(listener)


def _listen_socket(host: str, port: int) -> socket.socket:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host, port))
        sock.listen(512)
        sock.setblocking(False)
    except BaseException:
        sock.close()
        raise
    return sock
