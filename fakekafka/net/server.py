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
Kafka 4.4 does). Frame buffers grow with the bytes that arrive, never to the announced size up front. A request
parked waiting (a Fetch long-poll, a JoinGroup, an acks=all Produce) is cancelled when its connection ends.

Here: the brokers' listening sockets, each connection's task and the model's ticker. Around it, each in its own
module: framing (net/framing.py), a connection (net/connection.py), the limits (net/quotas.py), a request's way
through the handlers (net/requests.py), SASL gating (net/authentication.py), freed memory (net/memory.py).
"""

from __future__ import annotations

import asyncio
import collections
import dataclasses
import logging
import socket
import ssl
import time
from collections.abc import Callable, Coroutine
from typing import Any

from fakekafka.handlers.connection import ConnectionState, SaslState
from fakekafka.model.cluster import ClusterState
from fakekafka.model.config import OAUTHBEARER_UNSECURED_VALIDATOR
from fakekafka.model.metadata import Broker
from fakekafka.net.connection import Connection
from fakekafka.net.listeners import (
    LISTEN_BACKLOG,
    Listener,
    ListenerPool,
    close_keeping_port,
    listen_again,
    listen_socket,
)
from fakekafka.net.quotas import ConnectionQuotas, RequestMemoryPool
from fakekafka.net.requests import CloseConnection, Purgatory, RequestHandler
from fakekafka.net.security import (
    ListenerSpec,
    certificate_subject,
    parse_listeners,
    server_ssl_context,
    ssl_principal_name,
)
from fakekafka.net.ticker import Ticker
from fakekafka.observe.records import RequestRecord
from fakekafka.observe.traffic import touched
from fakekafka.wire import ErrorCode, Request

__all__ = ["Listener", "ListenerPool", "Server"]

log = logging.getLogger("fakekafka.server")
_KNOWN_CODES = frozenset(int(c) for c in ErrorCode)


class Server:
    """Listeners for every broker of a `ClusterState`, in the running event loop."""

    def __init__(self, cluster: ClusterState, host: str = "127.0.0.1", *, advertised_host: str | None = None,
                 request_log_size: int = 1000) -> None:
        self.cluster = cluster
        self.host = host
        self.advertised_host = advertised_host
        self._servers: dict[tuple[int, str], asyncio.base_events.Server] = {}
        self._sockets: dict[tuple[int, str], socket.socket] = {}
        self._reserved: dict[tuple[int, str], socket.socket] = {}
        """The ports of brokers that are down, kept for their restart (bound, not listening)."""
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
        """TLS context per listener, from its listener.name.<l>.ssl.* settings or else the broker's
        (BrokerConfig.listener_ssl): ssl.client.auth applies to SSL listeners; SASL_SSL ones ask for no client
        certificate unless their own prefixed ssl.client.auth says so (KIP-684)."""
        for spec in self.listeners:
            if not spec.tls:
                continue
            keystore, truststore, client_auth, key_password = config.listener_ssl(spec.name, spec.protocol)
            if not keystore:
                raise ValueError(f"the {spec.protocol} listener {spec.name} needs ssl.keystore.location (PEM key and "
                                 f"certificate), or listener.name.{spec.name.lower()}.ssl.keystore.location")
            self._ssl[spec.name] = server_ssl_context(keystore, truststore or None, client_auth, key_password or None)
        self._connections: set[asyncio.Task[None]] = set()
        self.quotas = ConnectionQuotas(cluster)
        self.pool = RequestMemoryPool(cluster)
        self.purgatory = Purgatory(cluster)
        self._requests = RequestHandler(cluster, self.purgatory)
        self.scratch = bytearray()
        """One read buffer for all connections, made by the first read (a cluster that is never connected to
        costs nothing): each read is parsed, and what is kept copied, before the next one."""
        self.ticker = Ticker(cluster, self.quotas)
        self._stopped = False
        self.request_log: collections.deque[RequestRecord] = collections.deque(maxlen=request_log_size)
        self.requests_served = 0
        self._request_listeners: list[Callable[[RequestRecord], None]] = []
        cluster.add_change_listener(self.purgatory.on_change)

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
        return self.quotas.count

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
            reserved = self._reserved.pop((broker.node_id, spec.name), None)
            sock = listen_socket(host, port) if reserved is None else listen_again(reserved)
        except OSError as e:  # which of the brokers' ports it was: the error's filename, as for files
            raise OSError(e.errno, e.strerror, f"{host}:{port}") from e
        if spec.port < 0:
            if broker.port == 0:
                broker.port = sock.getsockname()[1]
        else:
            broker.bound[spec.name] = sock.getsockname()[1]
        return sock

    def _factory(self, broker: Broker, spec: ListenerSpec) -> Callable[[], Connection]:
        listener = None if spec.port < 0 else spec
        return lambda: Connection(self, broker, listener)

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
            listener.protocol_factory = lambda b=broker: Connection(self, b)
            self._servers[(broker.node_id, "PLAINTEXT")] = listener.server
            broker.port = listener.port
        if self.advertised_host:
            for broker in self.cluster.brokers.values():
                broker.host = self.advertised_host
        return all((b.node_id, "PLAINTEXT") in self._servers for b in self.cluster.brokers.values() if b.alive)

    # --- what connections need of the server (ConnectionOwner) ----------------------------------------------
    def request_max_bytes(self) -> int:
        return self.cluster.config.socket_request_max_bytes

    def connection_made(self, conn: Connection) -> None:
        self._ensure_ticker()
        self.quotas.accept(conn)

    def touch(self, conn: Connection) -> None:
        self.quotas.touch(conn)

    def reserve(self, conn: Connection, size: int) -> bool:
        return self.pool.reserve(conn, size)

    def forget(self, conn: Connection) -> None:
        """A connection has closed: it leaves the quotas and the memory pool's queue, and the share sessions it
        opened end."""
        self.pool.forget(conn)
        self.quotas.forget(conn)
        self.cluster.shares.connection_closed(id(conn.state))
        self.cluster.client_telemetry.connection_closed(conn.broker.node_id, id(conn.state))

    def serve(self, conn: Connection) -> Coroutine[Any, Any, None]:
        return self._serve_connection(conn)

    def _ensure_ticker(self) -> None:
        if not self._stopped:
            self.ticker.start()

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
                                                              ssl=self._ssl.get(spec.name), backlog=LISTEN_BACKLOG)
            except BaseException:
                sock.close()
                raise

    async def close_broker(self, node_id: int, *, abort: bool = True) -> None:
        """Stops listening for the broker and drops its connections (at once when `abort`: a killed
        broker; after answering what is in flight otherwise). Its ports stay bound (`reserve_port`) for
        `open_broker`."""
        servers = {key: self._servers.pop(key) for key in list(self._servers) if key[0] == node_id}
        sockets = {key: self._sockets.pop(key) for key in list(self._sockets) if key[0] == node_id}
        for key, listening in [*sockets.items(), *servers.items()]:
            reserved = close_keeping_port(listening)
            if reserved is not None:
                self._reserved[key] = reserved
        for conn in self.quotas.of_broker(node_id):
            conn.close(abort=abort)
        for srv in servers.values():
            await srv.wait_closed()

    async def stop(self) -> None:
        self._stopped = self.quotas.stopped = True
        self._close_sockets()
        for sock in self._reserved.values():
            sock.close()
        self._reserved.clear()
        self.ticker.stop()
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
            self.cluster.storage.close()
        self.cluster.loggers.restore()  # a test's BROKER_LOGGER change ends with its cluster
        try:
            self.cluster.remove_change_listener(self.purgatory.on_change)
        except ValueError:
            pass
        self.ticker.memory.close()

    async def serve_forever(self) -> None:
        await asyncio.gather(*(s.serve_forever() for s in self._servers.values()))

    # --- connections ---------------------------------------------------------------------------
    async def _serve_connection(self, conn: Connection) -> None:
        """Answers one connection's frames in order until it closes."""
        task = asyncio.current_task()
        if task is not None:
            self._connections.add(task)
            task.add_done_callback(self._connections.discard)
        state = conn.state
        try:
            if conn.listener is not None:
                if conn.listener.sasl:
                    state.sasl = SaslState()
                elif conn.listener.tls:
                    try:
                        state.ssl_principal = self._ssl_principal(conn)
                    except ValueError as e:  # Kafka fails the TLS authentication: the client sees the close
                        log.warning("connection %s: %s; closing, as Kafka does", conn.peer, e)
                        state.refused = True
        except Exception:  # a fakekafka bug in the set-up: said once, and the client sees a close, not silence
            log.exception("connection %s on listener %s: its set-up failed; closing it", conn.peer,
                          conn.listener.name if conn.listener is not None else "?")
            state.refused = True
        try:
            while not state.refused:
                frame = await conn.next_frame()
                if frame is None:
                    return
                started = time.perf_counter()
                wall = time.time()
                conn.in_request = True
                try:
                    request, response, codes, result = await self._requests.handle(frame, conn.broker, conn.peer,
                                                                                   state)
                except CloseConnection:
                    return
                self.pool.release(conn, len(frame))
                if response is not None:
                    await conn.write(response)
                conn.in_request = False
                if state.throttle_ms > 0:  # over a client quota: the channel is muted, as Kafka's quota managers do
                    await self._mute(conn, state)
                closing, state.close_after = state.close_after, None
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
                    self._tell_listeners(record, request, result, frame, response, state)
                if closing is not None:  # Kafka holds a failed authentication's connection this long before
                    await asyncio.sleep(self.cluster.config.connection_failed_authentication_delay_ms / 1000)
                    return  # closing it (KIP-306): clients read the answer before they see the close
                if log.isEnabledFor(logging.DEBUG):
                    log.debug("broker=%d client=%s id=%s %s v%d corr=%d %.2fms%s", conn.broker.node_id, conn.peer,
                              request.client_id, request.api_name, request.api_version, request.correlation_id,
                              latency, f" errors={sorted(codes)}" if codes else "")
                # waiting for the next request, a connection holds nothing of this one: not its frame (a Produce's
                # batches), the decoded request or the answer (ApiVersions' is about 11 KB of Python objects)
                del frame, request, response, codes, result, record
        except (ConnectionError, asyncio.CancelledError):
            pass
        finally:
            conn.in_request = False
            conn.close()
            self.pool.release(conn, conn.reserved)

    async def _mute(self, conn: Connection, state: ConnectionState) -> None:
        """No request of the connection is read for its throttle time (the answer has gone out; the client
        knows the time from its throttle_time_ms)."""
        ms, state.throttle_ms = state.throttle_ms, 0
        conn.pause("throttle")
        try:
            await asyncio.sleep(ms / 1000)
        finally:
            conn.resume("throttle")

    def _ssl_principal(self, conn: Connection) -> str:
        """An SSL listener's client as Kafka's default principal builder names it: `User:` and its certificate's
        subject DN through ssl.principal.mapping.rules, or User:ANONYMOUS without a certificate."""
        ssl_object = conn.transport.get_extra_info("ssl_object") if conn.transport is not None else None
        der = ssl_object.getpeercert(binary_form=True) if ssl_object is not None else None
        if not der:
            return "User:ANONYMOUS"
        config = self.cluster.config
        rules = (conn.listener is not None and config.listener_value(conn.listener.name, "ssl.principal.mapping.rules")
                 or config.value("ssl.principal.mapping.rules")[0] or "DEFAULT")
        return "User:" + ssl_principal_name(certificate_subject(der), rules)

    def _tell_listeners(self, record: RequestRecord, request: Request, result: Any, frame: bytes,
                        response: list[Any] | None, state: ConnectionState) -> None:
        name, version = state.client_software or (None, None)
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
