"""The proxy's asyncio side: a listener per upstream broker, a connection to the upstream per client connection,
frames forwarded as received.

Each client connection gets its own connection to the upstream broker its listener stands for (the bootstrap
listener: the first upstream address that answers), so correlation ids pass unchanged and Kafka's in-order
answers stay in order. Only the request header is read on the way up; on the way down only the responses
that name brokers are decoded and re-encoded (fakekafka/proxy/rewrite.py). Faults are the fake cluster's
hook language (fakekafka/model/hooks.py: fault rules, hooks, chaos; carried out by fakekafka/proxy/hooks.py), the
request's body decoded for them while any is set:

- error: answered by the proxy without forwarding, from the handlers' own error answers
  (`after=True`: forwarded, and the upstream's answer replaced by the error);
- latency: the request is forwarded that much later (the connection's later requests wait too, as Kafka
  answers a connection's requests one at a time);
- drop before / after: the client connection (and its upstream connection) closed instead of forwarding,
  or once the upstream answered;
- throttle: the answer's throttle_time_ms set, and the client's connection muted that long once the answer went
  out (no request of it taken), as Kafka's quota managers mute a throttled channel;
- an unreachable broker (`kill_broker`): its listener closed and its connections dropped, as a dead broker.

Both connections of a pair are asyncio BufferedProtocols read into reusable buffers: a request is forwarded,
and an answer that is due written to the client, in the callback that read it, without a task switch. A
frame of 64 KiB or more that nobody needs whole (no fault on it, no recording or summary, not an answer
decoded for its addresses) is passed on while it arrives, piece by piece as read, and never assembled: a
large Produce once its header and acks are read, a large answer once its correlation id is; a Fetch v16+
answer up to its top-level tagged fields, which are held and their node endpoints rewritten in the length
already announced (fakekafka/proxy/stream.py). Other frames are assembled first (a large one received
straight into its own buffer).

Hooks for a layer on top (compat's recording relay, compat/relay.py): `intercept` sees every request as it
arrives, may answer it itself and attaches a note that request listeners get with the exchange;
`answer_edits` edits the decoded answers of chosen APIs (decoded for it only). Unset, they cost a check each.

Backpressure both ways: a client that does not read its answers stops the proxy reading that connection's
upstream (and, with 64 requests waiting, reading the client); a slow upstream stops the proxy reading the
client. A malformed frame from either side closes that pair of connections with a log line.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import io
import logging
import socket
import ssl
import struct
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from fakekafka.handlers.registry import ClusterFacts, ErrorContext, error_answer
from fakekafka.model.clock import SystemClock
from fakekafka.model.config import DEFAULT_LOG_DIR, BrokerConfig
from fakekafka.model.faults import Faults
from fakekafka.model.hooks import Hooks
from fakekafka.model.metadata import Broker
from fakekafka.net.framing import GO, STOP, FrameReader, FrameStream
from fakekafka.net.listeners import LISTEN_BACKLOG, close_keeping_port, listen_again, listen_socket
from fakekafka.net.quotas import ConnectionQuotas
from fakekafka.observe.records import RequestRecord
from fakekafka.proxy.exchange import PENDING, Exchange, Slot
from fakekafka.proxy.frames import FrameError, RequestHead, produce_acks, read_request_head
from fakekafka.proxy.hooks import HOLD_POLL_S, Plan, plan_request
from fakekafka.proxy.observe import exchange_record
from fakekafka.proxy.rewrite import ALWAYS_DECODED, MAYBE_ADDRESSES, may_name_a_broker, rewrite_addresses
from fakekafka.proxy.stream import FetchTail, rewrite_tail
from fakekafka.wire import ApiKey, DecodeError, ErrorCode
from fakekafka.wire.protocol import Request, decode_response, encode_response, parse_body, request_struct

__all__ = ["MAX_BROKERS", "PROXY_CONFIGS", "AnswerEdit", "Exchange", "Intercept", "ProxyEvent", "ProxyServer",
           "TooManyBrokers", "Upstream", "proxy_config"]

log = logging.getLogger("fakekafka.proxy")
_CORRELATION = struct.Struct(">i")
_MAX_IN_FLIGHT = 64
"""Requests read from a client and not yet answered; past it the client is not read (Kafka reads one)."""
_HIGH_WATER, _LOW_WATER = 4 << 20, 1 << 20
"""Each side's write buffer: past the high mark the other side is not read until the buffer is below the low
one (a slow client stops the proxy reading its upstream, a slow upstream stops it reading the client)."""
_CORK: int | None = getattr(socket, "TCP_CORK", None)
"""Linux's TCP_CORK (None elsewhere: nothing is corked)."""
BOOTSTRAP = -1
MAX_BROKERS = 1000
"""Upstream brokers the proxy binds a listener for (fakekafka's own bound, `max_brokers`): an upstream naming
more gets BROKER_NOT_AVAILABLE in the answers naming the others, and one ERROR line."""
"""The node id faults and records give the bootstrap listener's connections."""
DRAIN_S = 2.0
"""After a client leaves with requests forwarded and unanswered, how long their answers are still read from
the upstream for the request listeners (a recording then holds what the upstream answered, as Kafka, which
applies what it read from a connection gone since)."""

Intercept = Callable[["RequestHead", memoryview, str], tuple[Any, "bytes | None"]]
"""(request header, request frame without its size prefix, the client connection) -> (note, answer), called
as each request arrives: the note is given to request listeners with the request's exchange
(`exchange.note`); an answer (a whole frame, size prefix included) goes to the client instead of forwarding
the request, and no fault rule is taken for it."""
AnswerEdit = Callable[["RequestHead", Any], bool]
"""(request header, the upstream's decoded answer) -> whether it edited the answer in place; an edited answer
is re-encoded for the client (listeners still see the upstream's own in `exchange.upstream_response_frame`)."""


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


@dataclass
class _Listener:
    node_id: int
    port: int
    sock: socket.socket | None
    server: asyncio.base_events.Server | None = None
    pairs: set[_Pair] = field(default_factory=set)
    reachable: bool = True
    reserved: socket.socket | None = None
    """While `kill_broker` keeps the broker unreachable: its port, bound without listening (`reserve_port`)."""


PROXY_CONFIGS = ("max.connections", "max.connections.per.ip", "max.connections.per.ip.overrides",
                 "connections.max.idle.ms", "socket.request.max.bytes")
"""The broker configs the proxy applies to its own client connections, by Kafka's names."""


def proxy_config(properties: dict[str, str] | None) -> BrokerConfig:
    """The proxy's limits from broker settings by Kafka's names (`PROXY_CONFIGS`), each checked as the broker
    checks it; ValueError in words for another name or a value Kafka refuses."""
    properties = dict(properties or {})
    other = sorted(set(properties) - set(PROXY_CONFIGS))
    if other:
        raise ValueError(f"the proxy takes only the broker configs {', '.join(PROXY_CONFIGS)}; not "
                         f"{', '.join(other)}")
    try:
        return BrokerConfig.from_properties({k: str(v) for k, v in properties.items()})
    except ValueError as e:
        raise ValueError(str(e)) from None


class TooManyBrokers(Exception):
    """An answer names a broker past `max_brokers`: no listener is bound for it."""


class ProxyServer:
    """A Kafka proxy in front of `upstreams` (bootstrap addresses of any Kafka-compatible cluster)."""

    def __init__(self, upstreams: list[Upstream] | list[str] | str, host: str = "127.0.0.1", port: int = 0, *,
                 advertised_host: str | None = None, client_ssl: ssl.SSLContext | None = None,
                 upstream_ssl: ssl.SSLContext | None = None, max_request_bytes: int | None = None,
                 decode_answers: bool = False, max_brokers: int = MAX_BROKERS,
                 config: BrokerConfig | None = None) -> None:
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
        self.config = config or BrokerConfig()
        """The broker limits the proxy applies to its own client connections, by Kafka's names: max.connections,
        max.connections.per.ip (and its overrides), connections.max.idle.ms, socket.request.max.bytes."""
        self.clock = SystemClock()
        self.max_request_bytes = self.config.socket_request_max_bytes if max_request_bytes is None \
            else max_request_bytes
        self.quotas = ConnectionQuotas(self)
        """The broker's own connection quotas (fakekafka/net/quotas.py), the proxy counted as one broker: all its
        listeners' client connections together, as Kafka counts a broker's across its listeners."""
        self._ticker: asyncio.Task[None] | None = None
        self.decode_answers = decode_answers
        if max_brokers < 1:
            raise ValueError(f"max_brokers (--max-brokers) must be at least 1, not {max_brokers}")
        self.max_brokers = max_brokers
        """Upstream brokers that get a listener; an answer naming one more is refused (see `MAX_BROKERS`)."""
        self.brokers_refused = 0
        """Decode every answer (its error codes and what it touched) for request listeners: recordings and the
        summary. Off, only the answers that name brokers are decoded."""
        self.faults = Faults()
        self.hooks = Hooks()
        """The fake cluster's hook language (fakekafka/model/hooks.py, carried out by fakekafka/proxy/hooks.py):
        the fault rules are its first source, chaos the next; `Proxy.intercept` adds hooks."""
        self.hooks.sources.append(self.faults)
        self.scratch = bytearray()
        self.stream_scratch = bytearray()
        """The read buffers every connection's frame reader shares (each read is parsed, and what is kept
        copied, before the next: asyncio calls one protocol at a time), filled on first use: an idle
        connection costs none of its own (two of 64 KiB per pair took 137 KB a connection, kept after close)."""
        self.events: list[ProxyEvent] = []
        self.nodes: dict[int, Upstream] = {}
        """Upstream brokers by node id, as the upstream's answers name them."""
        self.listeners: dict[int, _Listener] = {}
        """Listeners by node id (BOOTSTRAP: the bootstrap listener)."""
        self.cluster_id: str | None = None
        self.topic_names: dict[uuid.UUID, str] = {}
        self.requests_forwarded = 0
        self.requests_answered_locally = 0
        self.frames_streamed = 0
        """Requests and answers passed on while they arrived rather than assembled first."""
        self.upstream_connections = 0
        self.upstream_local_addresses: set[str] = set()
        """host:port of every connection the proxy opened to the upstream (a test can check that the upstream
        saw no other client)."""
        self._request_listeners: list[Callable[[RequestRecord, Exchange], None]] = []
        self._frame_listeners: set[int] = set()
        self._hosts: set[bytes] = {u.host.encode() for u in self.upstreams}
        self._facts: ClusterFacts | None = None
        self._started = time.monotonic()
        self._pairs: set[_Pair] = set()
        self._tasks: set[asyncio.Task[Any]] = set()
        self.software: dict[str, tuple[str | None, str | None]] = {}
        """Client software name and version per connection, from its ApiVersions (recordings only)."""
        self.intercept: Intercept | None = None
        """Sees each request as it arrives (see `Intercept`); set, large requests are no longer streamed."""
        self.answer_edits: dict[int, AnswerEdit] = {}
        """API key -> an edit of that API's answers (see `AnswerEdit`); those answers are decoded and never
        streamed."""

    # --- lifecycle ------------------------------------------------------------------------------------------
    @property
    def bootstrap_servers(self) -> str:
        return f"{self.advertised_host}:{self.listeners[BOOTSTRAP].port}"

    def bind(self) -> None:
        """Binds the bootstrap listener (synchronously: the port is known before the loop serves it)."""
        if BOOTSTRAP not in self.listeners:
            sock = listen_socket(self.host, self.port)
            self.listeners[BOOTSTRAP] = _Listener(BOOTSTRAP, sock.getsockname()[1], sock)

    async def start(self) -> None:
        self.bind()
        for listener in self.listeners.values():
            await self._serve(listener)
        if self._ticker is None:
            self._ticker = asyncio.get_running_loop().create_task(self._tick_loop())

    async def _tick_loop(self) -> None:
        """Closes client connections idle for connections.max.idle.ms (looked at a fifth of that apart, at most
        a second)."""
        while True:
            self.quotas.expire_idle()
            await asyncio.sleep(min(1.0, max(0.01, self.config.connections_max_idle_ms / 5000)))

    async def stop(self) -> None:
        """Closes the listeners and every connection, and waits for the upstream connections being opened (a
        task left pending when the loop stops would be finalised later, at a random point of another thread's
        work)."""
        self.quotas.stopped = True
        if self._ticker is not None:
            self._ticker.cancel()
            self._ticker = None
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

    def add_request_listener(self, listener: Callable[[RequestRecord, Exchange], None], *,
                             frames: bool = True) -> None:
        """Called with each completed request: the record (as the fake cluster's recordings have) and the raw
        exchange (frames, decoded bodies when `decode_answers`). `frames=False`: the listener reads neither
        the exchange's frames nor its bodies, so large frames may still be passed on while they arrive (its
        exchanges then hold the frames' sizes only)."""
        self._request_listeners.append(listener)
        if frames:
            self._frame_listeners.add(id(listener))

    def remove_request_listener(self, listener: Callable[[RequestRecord, Exchange], None]) -> None:
        self._request_listeners.remove(listener)
        self._frame_listeners.discard(id(listener))

    @property
    def streaming(self) -> bool:
        """Whether large frames may pass while they arrive: nobody needs them whole."""
        return not self.decode_answers and not self._frame_listeners

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
        listener.server = await asyncio.get_running_loop().create_server(
            lambda: _ClientSide(self, listener), sock=listener.sock, ssl=self.client_ssl, backlog=LISTEN_BACKLOG)

    async def _close_listener(self, listener: _Listener, *, reserve: bool = False) -> None:
        """Closes the listener and drops its connections; `reserve` keeps its port (`_Listener.reserved`)."""
        server, listener.server = listener.server, None
        listening = server if server is not None else listener.sock
        listener.sock = None
        if listener.reserved is not None:
            listener.reserved.close()
            listener.reserved = None
        if listening is not None:
            if reserve:
                listener.reserved = close_keeping_port(listening)
            else:
                listening.close()
        for pair in list(listener.pairs):
            pair.close("its listener closed")

    def _listener_for(self, node_id: int) -> _Listener:
        """The node's listener, bound now if it is new: the port is fixed before the answer naming it leaves.
        Port: the bootstrap port + 1 + node id when that is free (stable across runs), else any."""
        found = self.listeners.get(node_id)
        if found is not None:
            return found
        if len(self.listeners) - (BOOTSTRAP in self.listeners) >= self.max_brokers:
            self.brokers_refused += 1
            if self.brokers_refused == 1:
                log.error("the upstream names more than %d brokers (broker %d is one more): the proxy binds no "
                          "listener for them and answers BROKER_NOT_AVAILABLE where an answer names one (raise the "
                          "bound with --max-brokers / Proxy(max_brokers=N))", self.max_brokers, node_id)
                self.event("too_many_brokers", broker=node_id, max_brokers=self.max_brokers)
            raise TooManyBrokers(node_id)
        sock = None
        base = self.listeners[BOOTSTRAP].port if self.port else 0
        if base and base + 1 + node_id < 65536:
            with contextlib.suppress(OSError):
                sock = listen_socket(self.host, base + 1 + node_id)
        if sock is None:
            sock = listen_socket(self.host, 0)
        listener = _Listener(node_id, sock.getsockname()[1], sock)
        self.listeners[node_id] = listener
        self.event("listener_added", broker=node_id, port=listener.port)
        self._facts = None
        asyncio.get_running_loop().create_task(self._serve(listener))
        return listener

    def _rewrite(self, node_id: int, host: str, port: int) -> tuple[str, int]:
        listener = self._listener_for(node_id)  # first: a broker refused a listener is not remembered either
        upstream = Upstream(host, port)
        if self.nodes.get(node_id) != upstream:
            self.nodes[node_id] = upstream
            self._hosts.add(host.encode())
            self._facts = None
        return self.advertised_host, listener.port

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
        await self._close_listener(listener, reserve=True)
        self.event("broker_unreachable", broker=node_id, port=listener.port)

    async def restart_broker(self, node_id: int) -> None:
        """Makes a broker `kill_broker` made unreachable reachable again, on the same port."""
        listener = self.listeners.get(node_id)
        if listener is None:
            raise ValueError(f"the proxy has seen no broker {node_id}")
        if listener.reachable:
            return
        reserved, listener.reserved = listener.reserved, None
        listener.sock = listen_socket(self.host, listener.port) if reserved is None else listen_again(reserved)
        listener.reachable = True
        await self._serve(listener)
        self.event("broker_reachable", broker=node_id, port=listener.port)

    # --- connections ----------------------------------------------------------------------------------------
    async def _connect(self, pair: _Pair) -> None:
        """Opens the pair's upstream connection (the bootstrap listener: the first upstream address that
        answers), then lets the client's requests flow."""
        listener = pair.listener
        targets = self.upstreams if listener.node_id == BOOTSTRAP else [self.nodes[listener.node_id]]
        loop = asyncio.get_running_loop()
        last_error: Exception | None = None
        for target in targets:
            try:
                transport, _ = await asyncio.wait_for(loop.create_connection(
                    lambda: _UpstreamSide(pair), target.host, target.port, ssl=self.upstream_ssl,
                    server_hostname=target.host if self.upstream_ssl is not None else None), 10)
                break
            except (OSError, TimeoutError, ssl.SSLError) as e:
                last_error = e
        else:
            log.warning("client %s: no upstream reachable for broker %s (%s); closing", pair.peer,
                        pair._node_text(), last_error)
            self.event("upstream_unreachable", client=pair.peer, broker=listener.node_id, error=str(last_error))
            pair.close(None)
            return
        if pair.closed:  # the client left (or the listener closed) meanwhile
            transport.close()
            return
        self.upstream_connections += 1
        local = transport.get_extra_info("sockname")
        if isinstance(local, tuple):
            self.upstream_local_addresses.add(f"{local[0]}:{local[1]}")
        pair.connected()

    # --- answers the proxy makes itself ---------------------------------------------------------------------
    def cluster_facts(self) -> ClusterFacts:
        """The upstream as seen through the proxy (its brokers at the proxy's listeners, its cluster id): what
        the handlers' error answers say of the cluster for errors answered without forwarding."""
        if self._facts is None:
            brokers = [Broker(n, self.advertised_host, self.listeners[n].port)
                       for n in sorted(self.nodes) if n in self.listeners and self.listeners[n].reachable]
            brokers = brokers or [Broker(0, self.advertised_host, self.listeners[BOOTSTRAP].port)]
            self._facts = ClusterFacts(brokers, self.cluster_id or BrokerConfig.cluster_id,
                                       min(b.node_id for b in brokers), [], [DEFAULT_LOG_DIR])
        return self._facts

    def error_answer(self, head: RequestHead, frame: bytes | memoryview, code: ErrorCode) -> bytes | None:
        """The whole answer frame reporting `code`, as fakekafka's handler would give it; None when the API
        has no way to say it (or the wire layer does not know it): the connection is closed instead."""
        if head.body_offset is None:
            return None
        stream = io.BytesIO(frame)
        stream.seek(head.body_offset)
        try:
            body = parse_body(request_struct(head.api_key, head.api_version), stream, head.api_name)
        except DecodeError:
            return None
        request = Request(head.api_key, head.api_version, head.correlation_id, head.client_id, None, body)
        answer = error_answer(ErrorContext(request, None, given=self.cluster_facts()), body, code)
        if answer is None:
            return None
        return encode_response(head.api_key, head.api_version, head.correlation_id, answer)


class _Stream(FrameStream):
    """A frame passed on while it arrives (see fakekafka/net/framing.py). What it sends goes through `out`, which
    holds back the last `HOLD` bytes sent so far until more come or the frame ends: so the frame's last write is
    never a small one of its own. (A small last segment after a large answer cost a consumer a 40 ms stall, TCP's
    delayed acknowledgement, on many Fetches from Kafka, whose answers end in a few bytes read apart.)"""

    HOLD = 65536
    held_back: bytearray | None = None

    def out(self, side: _Side | None, data: memoryview, last: bool) -> None:
        if side is None:
            return
        pending = self.held_back
        if last:
            self.held_back = None
            if not pending:
                side.send(data)
            elif len(data) < self.HOLD:
                side.send(memoryview(pending + data))
            else:
                side.send(memoryview(pending))
                side.send(data)
            return
        hold = self.HOLD
        if pending is None:
            pending = self.held_back = bytearray()
        if len(pending) + len(data) <= hold:
            pending += data
            return
        if len(data) >= hold:
            if pending:
                side.send(memoryview(pending))
            if len(data) > hold:
                side.send(data[:len(data) - hold])
            self.held_back = bytearray(data[len(data) - hold:])
        else:
            pending += data
            side.send(memoryview(pending)[:len(pending) - hold])
            self.held_back = pending[len(pending) - hold:]


class _Side(asyncio.BufferedProtocol):
    """One end of a pair: the frames it reads go to the pair; its write buffer filling up pauses reading the
    other end (backpressure both ways)."""

    UPFRONT = 1 << 20
    """A frame's buffer allocated when its size is read (clients: a stalled request holds at most this)."""

    def __init__(self, pair: _Pair) -> None:
        self.pair = pair
        self.transport: asyncio.Transport | None = None
        self.frames = FrameReader(self._frame, self._admit, upfront=self.UPFRONT, keep_prefix=True,
                                  open_stream=self._open, scratch=pair.proxy.scratch,
                                  stream_scratch=pair.proxy.stream_scratch)
        self._pauses: set[str] = set()
        self.tls = False
        self.sock: Any = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]
        if transport.get_extra_info("sslcontext") is None:
            self.sock = transport.get_extra_info("socket")
        transport.set_write_buffer_limits(_HIGH_WATER, _LOW_WATER)  # type: ignore[attr-defined]

    def get_buffer(self, sizehint: int) -> memoryview:
        return self.frames.get_buffer()

    def buffer_updated(self, nbytes: int) -> None:
        """Reads into the frames; what they forward to the other side is corked (TCP_CORK) until this read is
        done where `_other` says so, so a streamed request's pieces and the start of the next one leave as
        full segments (a large Produce's reads end mid-frame)."""
        other = self._other()
        sock = other.sock if other is not None and _CORK is not None else None
        if sock is None or (self.frames.stream is None and nbytes < FrameReader.STREAM_MIN):  # no large frame here
            self.frames.updated(nbytes)
            return
        with contextlib.suppress(OSError):
            sock.setsockopt(socket.IPPROTO_TCP, _CORK, 1)
        try:
            self.frames.updated(nbytes)
        finally:
            with contextlib.suppress(OSError):
                sock.setsockopt(socket.IPPROTO_TCP, _CORK, 0)

    def _other(self) -> _Side | None:
        """The side whose writes are corked while this one's read is handled."""
        raise NotImplementedError

    def eof_received(self) -> bool:
        return False  # close: a Kafka connection half closed is over

    def _frame(self, whole: bytearray) -> None:
        raise NotImplementedError

    def _admit(self, size: int) -> int:
        """GO, or STOP once the pair is closed for the announced size."""
        return STOP if self._refuse(size) else GO

    def _refuse(self, size: int) -> bool:
        raise NotImplementedError

    def _open(self, first: memoryview, size: int) -> Any:
        raise NotImplementedError

    def pause(self, why: str) -> None:
        if not self._pauses and self.transport is not None:
            self.transport.pause_reading()
        self._pauses.add(why)

    def resume(self, why: str) -> None:
        if why in self._pauses:
            self._pauses.discard(why)
            if not self._pauses and self.transport is not None and not self.transport.is_closing():
                self.transport.resume_reading()

    def send(self, data: memoryview) -> None:
        """Writes a piece of a streamed frame: a view of a buffer read into again, so TLS (whose transport keeps
        what it cannot encrypt at once as given) gets a copy; a plain socket's transport copies what the
        socket does not take."""
        if self.transport is not None:
            self.transport.write(bytes(data) if self.tls else data)

    def write(self, buffers: list[Any]) -> None:
        if self.transport is None:
            return
        # a memoryview: what the socket does not take at once is copied into the transport's buffer once,
        # not sliced off a bytearray first
        self.transport.write(memoryview(buffers[0]) if len(buffers) == 1 else b"".join(buffers))


class _ClientSide(_Side):
    def __init__(self, proxy: ProxyServer, listener: _Listener) -> None:
        super().__init__(_Pair(proxy, listener))
        self.pair.client = self

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        super().connection_made(transport)
        pair = self.pair
        self.tls = pair.proxy.client_ssl is not None
        peer = transport.get_extra_info("peername")
        pair.peer = f"{peer[0]}:{peer[1]}" if isinstance(peer, tuple) else str(peer)
        pair.ip = str(peer[0]) if isinstance(peer, tuple) else pair.peer
        if not pair.listener.reachable:
            transport.close()
            return
        self.pause("connecting")
        pair.register()
        pair.proxy.quotas.accept(pair)  # closed (per address), held (max.connections) or started

    def connection_lost(self, exc: Exception | None) -> None:
        self.transport = None
        self.pair.client_lost()

    def pause_writing(self) -> None:  # a slow client: stop reading its answers from the upstream
        if self.pair.upstream is not None:
            self.pair.upstream.pause("client")

    def resume_writing(self) -> None:
        if self.pair.upstream is not None:
            self.pair.upstream.resume("client")

    def _refuse(self, size: int) -> bool:
        limit = self.pair.proxy.max_request_bytes
        if 0 <= size <= limit:
            return False
        self.pair.close(f"a request of {size} bytes (socket.request.max.bytes is {limit})")
        return True

    def _frame(self, whole: bytearray) -> None:
        self.pair.request(whole)

    def _open(self, first: memoryview, size: int) -> Any:
        return self.pair.open_request(first, size)

    def _other(self) -> _Side | None:
        return self.pair.upstream


class _UpstreamSide(_Side):
    UPFRONT = 8 << 20  # Fetch answers of a few MB are common; the upstream is the cluster the user chose

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        super().connection_made(transport)
        self.tls = self.pair.proxy.upstream_ssl is not None
        self.pair.upstream = self

    def connection_lost(self, exc: Exception | None) -> None:
        self.pair.upstream_lost()

    def pause_writing(self) -> None:  # a slow upstream: stop reading requests from the client
        self.pair.client.pause("upstream")

    def resume_writing(self) -> None:
        self.pair.client.resume("upstream")

    def _refuse(self, size: int) -> bool:
        if size >= 4:
            return False
        self.pair.close(f"the upstream sent a malformed answer ({size} bytes)")
        return True

    def _frame(self, whole: bytearray) -> None:
        self.pair.answer(whole)

    def _open(self, first: memoryview, size: int) -> Any:
        return self.pair.open_answer(first, size)

    def _other(self) -> _Side | None:
        return None  # not corked towards the client: a consumer of large Fetches lost 30-50 % with it


class _Pair:
    """A client connection and its upstream connection. Everything happens in the protocols' callbacks: a
    request is forwarded in the call that read it, an answer written to the client in the call that read it
    (when it is the next one due), so a frame costs no task switch."""

    def __init__(self, proxy: ProxyServer, listener: _Listener) -> None:
        self.proxy = proxy
        self.listener = listener
        self.peer = "?"
        self.client: _ClientSide = None  # type: ignore[assignment]  # set by _ClientSide
        self.upstream: _UpstreamSide | None = None
        self.connecting: asyncio.Task[None] | None = None
        self.slots: collections.deque[Slot] = collections.deque()
        """Every request read and not yet answered to the client, in order."""
        self.forwarded: collections.deque[Slot] = collections.deque()
        """The requests sent upstream whose answers are still to come, in order."""
        self.held: collections.deque[bytearray] = collections.deque()
        """Requests read while a latency fault holds the connection back; taken in order after it."""
        self.holding: asyncio.TimerHandle | None = None
        self.muted: asyncio.TimerHandle | None = None  # a throttled answer went out (KIP-219): requests wait in held
        self.reading = True
        """False once a fault dropped the connection before forwarding: nothing more is taken."""
        self.closed = False
        self.draining: asyncio.TimerHandle | None = None
        """Set once the client left: the upstream's answers are read for the listeners only, until the last."""
        self.ip = "?"
        self.admitted = False
        self.counted_ip = False
        self.last_active = 0
        """What the connection quotas keep of it (`fakekafka.net.quotas.Limited`)."""

    quota_node = 0
    """The proxy's client connections are counted together, as one broker's."""

    def pause(self, reason: str) -> None:
        self.client.pause(reason)

    def start(self) -> None:
        """Admitted by the quotas: its upstream connection is opened, then its requests flow."""
        self.admitted = True
        self.client.resume("held")
        task = self.connecting = asyncio.get_running_loop().create_task(self.proxy._connect(self))
        self.proxy._tasks.add(task)
        task.add_done_callback(self.proxy._tasks.discard)

    @property
    def node_id(self) -> int:
        return self.listener.node_id

    @property
    def connection(self) -> str:
        return f"{self.peer}/{self._node_text()}"

    def _node_text(self) -> str:
        return "bootstrap" if self.node_id == BOOTSTRAP else str(self.node_id)

    def register(self) -> None:
        self.listener.pairs.add(self)
        self.proxy._pairs.add(self)

    def connected(self) -> None:
        """The upstream connection is up: the client's requests flow."""
        self.client.resume("connecting")

    def close(self, reason: str | None = None, *, abort: bool = False) -> None:
        """Closes both connections: at once with a reason (a malformed frame, the proxy stopping) or `abort` (the
        connection quotas, which said why), else after what was already written to them is sent."""
        if self.closed:
            return
        self.closed = True
        self.proxy.quotas.forget(self)
        if reason:
            log.info("client %s (broker %s): %s; closing", self.peer, self._node_text(), reason)
            self.proxy.event("connection_closed", client=self.peer, broker=self.node_id, reason=reason)
        self.client.frames.stopped = True
        for side in (self.client, self.upstream):
            if side is not None and side.transport is not None:
                with contextlib.suppress(Exception):
                    side.transport.abort() if reason or abort else side.transport.close()
        if self.holding is not None:
            self.holding.cancel()
        if self.muted is not None:
            self.muted.cancel()
        if self.draining is not None:
            self.draining.cancel()
        if self.connecting is not None and not self.connecting.done():
            self.connecting.cancel()
        self.listener.pairs.discard(self)
        self.proxy._pairs.discard(self)
        self.proxy.software.pop(self.connection, None)

    def client_lost(self) -> None:
        """The client closed its connection. With request listeners and answers still to come from the
        upstream, they are read (up to `DRAIN_S`) for the listeners, then the upstream connection closes."""
        if self.closed:
            return
        upstream = self.upstream
        if (not self.forwarded or not self.proxy._request_listeners or upstream is None
                or upstream.transport is None):
            self.close(None)
            return
        self.reading = False
        self.client.frames.stopped = True
        upstream.resume("client")
        self.draining = asyncio.get_running_loop().call_later(DRAIN_S, self.close, None)

    def upstream_lost(self) -> None:
        if not self.closed:
            self.close(None)

    # --- client -> upstream -------------------------------------------------------------------------------
    def request(self, whole: bytearray) -> None:
        if not self.reading or self.closed:
            return
        self.proxy.quotas.touch(self)
        if self.holding is not None or self.muted is not None:
            self.held.append(whole)
            return
        self._take(whole)

    def _take(self, whole: bytearray) -> None:
        """Queues the request's answer slot and forwards it (or answers it, or holds it back)."""
        proxy = self.proxy
        frame = memoryview(whole)[4:]
        try:
            head = read_request_head(frame)
        except FrameError as e:
            self.close(f"malformed request: {e}")
            return
        note = local = None
        if proxy.intercept is not None:
            note, local = proxy.intercept(head, frame, self.connection)
        plan: Plan | None = None
        if local is None and proxy.hooks.active:
            plan = plan_request(proxy.hooks, head, frame, self.node_id, proxy.topic_names.get, proxy.event)
        slot = Slot(head, whole, time.time(), time.perf_counter(), plan)
        self.slots.append(slot)
        if len(self.slots) >= _MAX_IN_FLIGHT:
            self.client.pause("in flight")
        if note is not None:
            slot.note = note
        if local is not None:
            proxy.requests_answered_locally += 1
            slot.answer = [local]
            self._flush()
            return
        self._proceed(slot)

    def _proceed(self, slot: Slot) -> None:
        """Carries out the request's plan up to forwarding it (or answering it, or dropping the connection)."""
        plan = slot.plan
        if plan is not None and plan.acts:
            if not plan.release():  # held: this request and every later one of the connection wait
                self.client.pause("latency")
                self.holding = asyncio.get_running_loop().call_later(HOLD_POLL_S, self._release, slot, True)
                return
            if not plan.forwards:
                self._answer_locally(slot, plan)
                return
            if plan.latency_ms:  # this request and every later one of the connection wait (Kafka answers in order)
                latency, plan.latency_ms = plan.latency_ms, 0
                self.client.pause("latency")
                self.holding = asyncio.get_running_loop().call_later(latency / 1000, self._release, slot, False)
                return
        self._forward(slot)

    def _answer_locally(self, slot: Slot, plan: Plan) -> None:
        proxy = self.proxy
        answer: bytes | None = None
        if not plan.drop_before:
            proxy.requests_answered_locally += 1
            if plan.answer is not None:
                answer = _encode_answer(slot.head, plan.answer)
            else:
                answer = proxy.error_answer(slot.head, slot.frame, plan.error or ErrorCode.UNKNOWN_SERVER_ERROR)
        if answer is None:
            self.reading = False
            self.client.pause("dropped")
        slot.answer = [answer] if answer is not None else None
        _observe(proxy, slot, applied=False)
        self._flush()

    def _release(self, slot: Slot, proceed: bool) -> None:
        self.holding = None
        if self.closed:
            return
        if proceed:
            self._proceed(slot)
        else:
            self._forward(slot)
        self._take_held()
        if self.holding is None:
            self.client.resume("latency")

    def _take_held(self) -> None:
        while self.held and self.holding is None and self.muted is None and self.reading and not self.closed:
            self._take(self.held.popleft())

    def _mute(self, ms: int) -> None:
        """No request of the connection is taken for `ms`: a throttled answer went out, and Kafka's quota managers
        mute a throttled channel that long."""
        if self.muted is not None:
            self.muted.cancel()
        self.client.pause("throttle")
        self.muted = asyncio.get_running_loop().call_later(ms / 1000, self._unmute)

    def _unmute(self) -> None:
        self.muted = None
        self._take_held()  # none once closed
        if self.muted is None:
            self.client.resume("throttle")

    def _forward(self, slot: Slot) -> None:
        upstream = self.upstream
        if upstream is None or upstream.transport is None:
            return
        no_answer = produce_acks(slot.frame, slot.head) == 0
        if not no_answer:
            self.forwarded.append(slot)
        upstream.transport.write(memoryview(slot.whole))
        self.proxy.requests_forwarded += 1
        if no_answer:
            slot.answer = None if slot.plan is not None and slot.plan.drop_after else []
            if slot.answer is None:
                self.reading = False
            _observe(self.proxy, slot, applied=True)
            self._flush()

    def open_request(self, first: memoryview, size: int) -> _Stream | bool | None:
        """A large request (a Produce of big batches) is forwarded while it arrives once its header (and a
        Produce's acks) is read, when nothing needs its body: no fault rules, no request listeners, no
        intercept, nothing held back. None: the header is not complete yet."""
        proxy = self.proxy
        upstream = self.upstream
        if (proxy.hooks.active or not proxy.streaming or proxy.intercept is not None or self.holding or self.muted
                or self.held or not self.reading or self.closed or upstream is None or upstream.transport is None):
            return False
        frame = first[4:]
        try:
            head = read_request_head(frame)
        except FrameError:
            return None if len(first) < min(size, FrameReader.SCRATCH) else False
        acks = produce_acks(frame, head)
        if acks is None and head.api_key == ApiKey.PRODUCE and head.body_offset is not None and head.api_version >= 3:
            return None if len(first) < min(size, FrameReader.SCRATCH) else False
        slot = Slot(head, bytes(first[:4 + (head.body_offset or 0)]), time.time(), time.perf_counter(), None,
                     request_size=size - 4)
        self.slots.append(slot)
        if len(self.slots) >= _MAX_IN_FLIGHT:
            self.client.pause("in flight")
        if acks != 0:
            self.forwarded.append(slot)
        proxy.requests_forwarded += 1
        proxy.frames_streamed += 1
        return _RequestStream(self, slot, acks == 0)

    # --- upstream -> client -------------------------------------------------------------------------------
    def answer(self, whole: bytearray) -> None:
        if self.closed:
            return
        if not self.forwarded:
            self.close("the upstream answered a request it was not sent")
            return
        slot = self.forwarded.popleft()
        (correlation_id,) = _CORRELATION.unpack_from(whole, 4)
        if correlation_id != slot.head.correlation_id:
            self.close(f"the upstream answered correlation id {correlation_id}, expected {slot.head.correlation_id}")
            return
        slot.upstream_frame = whole
        try:
            slot.answer = self._answer(slot, whole)
        except DecodeError as e:
            self.close(f"the upstream's answer does not decode: {e}")
            return
        self._flush()

    def open_answer(self, first: memoryview, size: int) -> _Stream | bool | None:
        """A large answer is passed to the client while it arrives when it is the next one due and nothing
        needs it whole: no fault on its request, no request listener, not an answer that is decoded for
        its addresses. A Fetch v16+ answer streams up to its tagged fields, which are held
        (fakekafka/proxy/stream.py). None: its correlation id is not read yet."""
        if len(first) < min(size, FrameReader.STREAM_MIN):
            return None  # the first piece sent is a large one: see `FrameReader._decide`
        if self.closed or not self.proxy.streaming or not self.forwarded:
            return False
        slot = self.forwarded[0]
        if slot.plan is not None or not self.slots or self.slots[0] is not slot:
            return False
        if _CORRELATION.unpack_from(first, 4)[0] != slot.head.correlation_id:
            return False  # answer() closes the connection
        head = slot.head
        tail = None
        if head.known:
            if head.api_key in ALWAYS_DECODED or head.api_key in self.proxy.answer_edits:
                return False
            since = MAYBE_ADDRESSES.get(head.api_key)
            if since is not None and head.api_version >= since:
                if head.api_key != ApiKey.FETCH:
                    return False
                tail = FetchTail(head.api_version)
        self.forwarded.popleft()
        self.proxy.frames_streamed += 1
        return _AnswerStream(self, slot, tail, size - 4)

    def _answer(self, slot: Slot, whole: bytearray) -> list[Any] | None:
        """The buffers the client gets for the upstream's answer: as received, or rewritten, or replaced by
        a fault's error or throttle; None: close instead."""
        proxy = self.proxy
        head = slot.head
        plan = slot.plan
        if plan is not None and plan.acts:
            if plan.drop_after:
                _observe(proxy, slot, applied=True)
                return None
            if plan.error_after is not None:
                _observe(proxy, slot, applied=True, whole=whole)
                answer = proxy.error_answer(head, slot.frame, plan.error_after)
                return [answer] if answer is not None else None
        throttle = plan.throttle_ms if plan is not None else 0
        if not head.known:
            return [whole]
        edit = proxy.answer_edits.get(head.api_key) if proxy.answer_edits else None
        edits = plan.edits if plan is not None else []
        observed = plan is not None and plan.observed
        if (throttle or edit is not None or edits or observed
                or may_name_a_broker(head.api_key, head.api_version, whole, proxy._hosts)):
            _, body = decode_response(head.api_key, head.api_version, memoryview(whole)[4:])
            try:
                changed = rewrite_addresses(body, proxy._rewrite)
            except TooManyBrokers:  # said once by _listener_for
                answer = proxy.error_answer(head, slot.frame, ErrorCode.BROKER_NOT_AVAILABLE)
                return [answer] if answer is not None else None
            self._learn(head.api_key, body)
            if edit is not None and edit(head, body):
                changed += 1
            for fn in edits:
                edited = fn(body)
                body = body if edited is None else edited
                changed += 1
            if throttle and "throttle_time_ms" in body:
                body["throttle_time_ms"] = throttle
                changed += 1
            if observed:
                _observe(proxy, slot, applied=True, body=body)
            if changed:
                return [encode_response(head.api_key, head.api_version, head.correlation_id, body)]
        return [whole]

    def _learn(self, api_key: int, body: Any) -> None:
        if api_key == ApiKey.METADATA:  # the cluster id and the topic ids, for fault rules and recordings
            if body.get("cluster_id"):
                self.proxy.cluster_id = body["cluster_id"]
            for t in body.get("topics") or ():
                if t.get("topic_id") is not None and t.get("name"):
                    self.proxy.topic_names[t["topic_id"]] = t["name"]

    def _flush(self) -> None:
        """Writes the answers that are due, in request order, up to the first one still to come."""
        slots = self.slots
        listeners = self.proxy._request_listeners
        while slots and slots[0].answer is not PENDING and not self.closed:
            slot = slots.popleft()
            answer = slot.answer
            if answer is None:
                names = slot.plan.names if slot.plan is not None else []
                reason = ", ".join(names) if names else "no answer can say this error"
                log.info("client %s (broker %s): %s v%d: connection dropped (%s)", self.peer, self._node_text(),
                         slot.head.api_name, slot.head.api_version, reason)
                self.close(None)
                if self.client.transport is not None:
                    self.client.transport.abort()
                return
            if answer:
                self.client.write(answer)
                self.proxy.quotas.touch(self)
                if slot.plan is not None and slot.plan.throttle_ms:
                    self._mute(slot.plan.throttle_ms)
            if listeners:
                self._tell(slot, answer)
        if len(slots) < _MAX_IN_FLIGHT:
            self.client.resume("in flight")
        if self.draining is not None and not self.forwarded and not self.closed:
            self.close(None)  # the last answer the client left behind is read

    def _tell(self, slot: Slot, answer: list[Any] | None) -> None:
        views = None
        if answer:  # each buffer is one whole answer frame (never more than one): its size prefix skipped
            views = [memoryview(b)[4:] for b in answer]
        upstream = None if slot.upstream_frame is None else memoryview(slot.upstream_frame)[4:]
        exchange = Exchange(slot.head, slot.frame, views, connection=self.connection,
                             streamed_sizes=(slot.request_size, slot.answer_size), note=slot.note,
                             upstream_view=upstream)
        record = exchange_record(exchange, slot, self.node_id, self.peer, decode=self.proxy.decode_answers,
                                 topic_names=self.proxy.topic_names, software=self.proxy.software)
        for listener in list(self.proxy._request_listeners):
            try:
                listener(record, exchange)
            except Exception:
                log.exception("request listener %r failed; removing it", listener)
                self.proxy._request_listeners.remove(listener)


class _RequestStream(_Stream):
    """A request forwarded while it arrives (`_Pair.open_request`)."""

    def __init__(self, pair: _Pair, slot: Slot, no_answer: bool) -> None:
        self.pair = pair
        self.slot = slot
        self.no_answer = no_answer

    def feed(self, data: memoryview, last: bool) -> None:
        pair = self.pair
        if pair.closed or pair.upstream is None:
            return
        self.out(pair.upstream, data, last)
        if last and self.no_answer:  # acks=0: nothing comes back
            self.slot.answer = []
            pair._flush()


class _AnswerStream(_Stream):
    """An answer passed to the client while it arrives (`_Pair.open_answer`); a Fetch v16+ answer's tagged
    fields held and rewritten at its end."""

    def __init__(self, pair: _Pair, slot: Slot, tail: FetchTail | None, size: int) -> None:
        self.pair = pair
        self.slot = slot
        self.tail = tail
        self.size = size
        self.held = bytearray()

    def feed(self, data: memoryview, last: bool) -> None:
        pair = self.pair
        if pair.closed:
            return
        tail = self.tail
        if tail is None:
            self.out(pair.client, data, last)
        else:
            before = 0
            if not tail.found:
                try:
                    before = tail.feed(data)
                except FrameError as e:
                    pair.close(f"the upstream's answer does not decode: {e}")
                    return
            if not last:
                if before:
                    self.out(pair.client, data[:before], False)
                self.held += data[before:]
            elif not self._finish(data, before):
                return
        if last:
            self.slot.answer = []
            self.slot.answer_size = self.size
            pair._flush()

    def _finish(self, data: memoryview, before: int) -> bool:
        """Sends the answer's last piece and its tail, rewritten if it names a broker: in one write when the
        tail is unchanged and all in this piece (the usual case; a separate small last write stalls some
        clients as the first one does, see `FrameReader._decide`)."""
        pair = self.pair
        if not self.tail.found:  # type: ignore[union-attr]
            pair.close("the upstream's Fetch answer ends inside its partitions")
            return False
        all_here = not self.held
        self.held += data[before:]
        held = bytes(self.held)
        proxy = pair.proxy
        try:
            rewritten, note = rewrite_tail(held, proxy._hosts, proxy._rewrite)
        except FrameError as e:
            pair.close(f"the upstream's answer does not decode: {e}")
            return False
        except TooManyBrokers as e:  # half of the answer is sent already: the connection can only close
            pair.close(f"the upstream's answer names broker {e.args[0]}, past max_brokers={proxy.max_brokers}")
            return False
        if note:
            log.info("client %s (broker %s): %s v%d: %s", pair.peer, pair._node_text(), self.slot.head.api_name,
                     self.slot.head.api_version, note)
        if all_here and rewritten == held:
            self.out(pair.client, data, True)
        else:
            if before:
                self.out(pair.client, data[:before], False)
            self.out(pair.client, memoryview(rewritten), True)
        return True


def _encode_answer(head: RequestHead, body: Any) -> bytes | None:
    """A hook's `Answer(body)` as the whole answer frame; None (the connection closed) when it does not encode."""
    try:
        return encode_response(head.api_key, head.api_version, head.correlation_id, body)
    except Exception as e:  # noqa: BLE001 - a test's hand-made answer: said in the log, the client sees a drop
        log.warning("a hook's answer to %s v%d does not encode (%s): the connection is dropped instead",
                    head.api_name, head.api_version, e)
        return None


def _observe(proxy: ProxyServer, slot: Slot, *, applied: bool, whole: bytearray | None = None,
             body: Any = None) -> None:
    """The hooks' observers told of the request's answer (None: none sent) and whether the upstream applied it."""
    plan = slot.plan
    if plan is None or not plan.observed:
        return
    answer = body
    if answer is None and whole is not None and slot.head.known:
        with contextlib.suppress(DecodeError):
            answer = decode_response(slot.head.api_key, slot.head.api_version, memoryview(whole)[4:])[1]
    if answer is None and applied is False and slot.answer:
        with contextlib.suppress(DecodeError, ValueError):
            answer = decode_response(slot.head.api_key, slot.head.api_version, memoryview(slot.answer[0])[4:])[1]
    try:
        proxy.hooks.answered(plan.request, answer, applied)
    except Exception:
        log.exception("a hook observer failed on %s v%d", slot.head.api_name, slot.head.api_version)
