"""The asyncio server: moves bytes between sockets and the handlers, nothing more.

One task per connection; requests on a connection are answered one at a time, in order, as Kafka does
(it mutes a channel until the response is sent). A malformed frame, an unknown API key or a request
too large closes that connection alone with a log line; no other connection or stored data is touched.
"""

from __future__ import annotations

import asyncio
import logging
import struct
import time
from collections import defaultdict
from typing import Any

from fakekafka.handlers import NO_RESPONSE, Park, RequestContext, dispatch, handler_for
from fakekafka.handlers.api_versions import API_VERSIONS_KEY, unsupported_version_response
from fakekafka.handlers.registry import error_response
from fakekafka.model.cluster import Broker, ClusterState
from wire import DecodeError, ErrorCode, Request, UnknownApiKey, decode_request_header, encode_response
from wire.messages import API_MODULES
from wire.protocol import parse_body, request_struct

__all__ = ["Server"]

log = logging.getLogger("fakekafka.server")
_SIZE = struct.Struct(">i")


class _CloseConnection(Exception):
    pass


class Server:
    """Listeners for every broker of a `ClusterState`, in the running event loop."""

    def __init__(self, cluster: ClusterState, host: str = "127.0.0.1", *, advertised_host: str | None = None) -> None:
        self.cluster = cluster
        self.host = host
        self.advertised_host = advertised_host
        self._servers: dict[int, asyncio.base_events.Server] = {}
        self._connections: set[asyncio.Task[None]] = set()
        self._waiters: dict[int, set[asyncio.Future[None]]] = defaultdict(set)
        self._ticker: asyncio.Task[None] | None = None
        cluster.add_change_listener(self._on_change)

    @property
    def bootstrap_servers(self) -> str:
        return ",".join(f"{b.host}:{b.port}" for b in self.cluster.brokers.values())

    async def start(self) -> None:
        """Binds every broker's port (0 picks a free one, which the broker then advertises)."""
        try:
            for node_id, broker in self.cluster.brokers.items():
                srv = await asyncio.start_server(lambda r, w, b=broker: self._accept(r, w, b), self.host, broker.port,
                                                 reuse_address=True)
                self._servers[node_id] = srv
                bound = srv.sockets[0].getsockname()[1]
                if broker.port == 0:
                    broker.port = bound
                if self.advertised_host:
                    broker.host = self.advertised_host
        except OSError:
            await self.stop()
            raise
        self._ticker = asyncio.create_task(self._tick_loop())

    async def _tick_loop(self) -> None:
        """Fires the model's timeouts (sessions, rebalances) as the clock passes them."""
        clock = self.cluster.clock
        while True:
            self.cluster.tick()
            deadline = self.cluster.next_deadline()
            wait = 0.1 if deadline is None else min(max((deadline - clock.now_ms()) / 1000, 0.005), 0.1)
            await asyncio.sleep(wait)

    async def stop(self) -> None:
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
        try:
            self.cluster.remove_change_listener(self._on_change)
        except ValueError:
            pass

    async def serve_forever(self) -> None:
        await asyncio.gather(*(s.serve_forever() for s in self._servers.values()))

    # --- connections ---------------------------------------------------------------------------
    async def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, broker: Broker) -> None:
        task = asyncio.current_task()
        if task is not None:
            self._connections.add(task)
            task.add_done_callback(self._connections.discard)
        await self._connection(reader, writer, broker)

    async def _connection(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, broker: Broker) -> None:
        peer = writer.get_extra_info("peername")
        peer_s = f"{peer[0]}:{peer[1]}" if isinstance(peer, tuple) else str(peer)
        max_size = self.cluster.config.socket_request_max_bytes
        client_software: dict[str, Any] = {}
        try:
            while True:
                try:
                    head = await reader.readexactly(4)
                except asyncio.IncompleteReadError as e:
                    if e.partial:
                        log.warning("connection %s: closed inside a frame's size prefix", peer_s)
                    return
                (size,) = _SIZE.unpack(head)
                if size < 0 or size > max_size:
                    log.warning("connection %s: frame of %d bytes is outside 0..%d (socket.request.max.bytes); "
                                "closing", peer_s, size, max_size)
                    return
                try:
                    frame = await reader.readexactly(size)
                except asyncio.IncompleteReadError as e:
                    log.warning("connection %s: truncated frame (%d of %d bytes); closing", peer_s, len(e.partial),
                                size)
                    return
                started = time.perf_counter()
                try:
                    request, response = await self._handle(frame, broker, peer_s, client_software)
                except _CloseConnection:
                    return
                if response is not None:
                    writer.write(response)
                    await writer.drain()
                if log.isEnabledFor(logging.DEBUG):
                    log.debug("broker=%d client=%s id=%s %s v%d corr=%d %.2fms", broker.node_id, peer_s,
                              request.client_id, request.api_name, request.api_version, request.correlation_id,
                              (time.perf_counter() - started) * 1000)
        except (ConnectionError, asyncio.CancelledError):
            pass
        finally:
            writer.close()

    async def _handle(self, frame: bytes, broker: Broker, peer: str,
                      client_software: dict[str, Any]) -> tuple[Request, bytes | None]:
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
            return request, encode_response(key, 0, request.correlation_id, unsupported_version_response())
        if version > API_MODULES[key][3]:
            log.warning("connection %s: %s v%d is newer than any Kafka defines; closing", peer, request.api_name,
                        version)
            raise _CloseConnection
        try:
            request.body = parse_body(request_struct(key, version), stream, f"{request.api_name}RequestV{version}")
        except DecodeError as e:
            log.warning("connection %s: malformed request: %s; closing", peer, e)
            raise _CloseConnection from None
        ctx = RequestContext(self.cluster, broker, request, peer, client_software)
        if not reg.min_version <= version <= reg.max_version:
            body = error_response(ctx, request.body, ErrorCode.UNSUPPORTED_VERSION)
            if body is None:
                log.warning("connection %s: %s v%d is not supported; closing", peer, request.api_name, version)
                raise _CloseConnection
            return request, encode_response(key, version, request.correlation_id, body)
        try:
            result = dispatch(ctx)
            while isinstance(result, Park):
                result = await self._park(result)
        except Exception:
            log.exception("connection %s: handler for %s v%d failed", peer, request.api_name, version)
            body = error_response(ctx, request.body, ErrorCode.UNKNOWN_SERVER_ERROR)
            if body is None:
                raise _CloseConnection from None
            result = body
        if result is NO_RESPONSE:
            return request, None
        return request, encode_response(key, version, request.correlation_id, result)

    # --- parked requests (long-poll fetches) ----------------------------------------------------
    async def _park(self, park: Park) -> Any:
        loop = asyncio.get_running_loop()
        deadline = None if park.wait_ms is None else loop.time() + park.wait_ms / 1000
        while True:
            remaining = None if deadline is None else deadline - loop.time()
            if remaining is not None and remaining <= 0:
                return park.resume(True)
            fut: asyncio.Future[None] = loop.create_future()
            keys = [id(k) for k in park.keys]
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
