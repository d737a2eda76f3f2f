"""Listening sockets: bound on a socket of fakekafka's own (never resolved in a thread pool) and, for embedded
clusters, bound and served ahead of time (`ListenerPool`) so a cluster's start does no socket work."""

from __future__ import annotations

import asyncio
import collections
import socket
from collections.abc import Callable
from typing import Any

__all__ = ["LISTEN_BACKLOG", "Listener", "ListenerPool", "close_keeping_port", "listen_again", "listen_socket",
           "reserve_port"]

LISTEN_BACKLOG = 4096
"""Connections the kernel queues for a listener until they are accepted (capped by net.core.somaxconn). Kafka's
acceptor thread accepts at once with a backlog of 50 (socket.listen.backlog.size); here connections are accepted
between requests on one thread, so a burst of clients (500 group members starting together) would overflow a small
backlog and wait out a SYN retransmit (1 s) each."""


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
            sock = listen_socket(self.host, 0)
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


def listen_socket(host: str, port: int) -> socket.socket:
    return listen_again(_bound_socket(host, port))


def _bound_socket(host: str, port: int) -> socket.socket:
    # a socket of our own rather than create_server(host, port): that resolves the host in a thread pool. Its
    # proto is getaddrinfo's (IPPROTO_TCP): asyncio sets TCP_NODELAY only on accepted sockets whose proto says TCP,
    # and they inherit the listener's (with 0, a connection's answers waited on Nagle's algorithm, as Kafka's never do)
    family, kind, proto, _, address = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM,
                                                         flags=socket.AI_PASSIVE)[0]
    sock = socket.socket(family, kind, proto)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        if family == socket.AF_INET6:
            sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
        sock.bind(address)
    except OSError:
        sock.close()
        raise
    return sock


def reserve_port(host: str, port: int) -> socket.socket | None:
    """Keeps a closed listener's port for its broker's restart: a socket bound to it that does not listen.
    Connections to it are refused, as to a closed port, and Linux gives a port bound this way to no outgoing
    connection, so another process's connections (a busy test run's) cannot take it while the broker is down.
    None when the port was taken meanwhile (the restart then says so)."""
    try:
        return _bound_socket(host, port)
    except OSError:
        return None


def close_keeping_port(listening: socket.socket | asyncio.base_events.Server) -> socket.socket | None:
    """Closes a listener (its socket, or the loop's server on it) and keeps its port: `reserve_port` of the
    address it was bound to (None when it had none, or the port was taken meanwhile)."""
    if isinstance(listening, socket.socket):
        bound: Any = listening
    else:
        bound = listening.sockets[0] if listening.sockets else None
    address = bound.getsockname() if bound is not None else None
    listening.close()
    return None if address is None else reserve_port(address[0], address[1])


def listen_again(sock: socket.socket) -> socket.socket:
    """Listens on a bound socket (one `reserve_port` kept)."""
    try:
        sock.listen(LISTEN_BACKLOG)
        sock.setblocking(False)
    except OSError:
        sock.close()
        raise
    return sock
