"""Kafka's socket-server limits, apart from the loop that serves connections: `ConnectionQuotas`
(max.connections, max.connections.per.ip with its overrides, connections.max.idle.ms) and `RequestMemoryPool`
(queued.max.request.bytes), as Kafka's SocketServer, ConnectionQuotas and memory pool apply them.

Deliberate differences: idleness is measured on the cluster's clock (a frozen clock's advance_clock can close
idle connections), and at most `HELD_BACKLOG` connections wait past max.connections (Kafka leaves them to the
kernel's listen backlog).
"""

from __future__ import annotations

import asyncio
import collections
import logging
import socket
from collections import defaultdict
from typing import Protocol

from fakekafka.model.clock import Clock
from fakekafka.model.cluster import ClusterState
from fakekafka.model.config import BrokerConfig
from fakekafka.net.connection import Connection

__all__ = ["HELD_BACKLOG", "ConnectionQuotas", "Limited", "LimitsSource", "RequestMemoryPool"]

log = logging.getLogger("fakekafka.server")
HELD_BACKLOG = 128
"""Connections past max.connections kept waiting per broker (the listen backlog's size); more are closed."""


class LimitsSource(Protocol):
    """Where the limits and the time come from: a cluster's state (the broker), or the proxy."""

    @property
    def config(self) -> BrokerConfig: ...
    @property
    def clock(self) -> Clock: ...


class Limited(Protocol):
    """A connection as the quotas see it: the broker's `Connection`, or the proxy's client connection."""

    quota_node: int
    """What its connections are counted per (the broker's node id; the proxy counts all its own as one)."""
    ip: str
    peer: str
    closed: bool
    admitted: bool
    counted_ip: bool
    last_active: int

    def pause(self, reason: str) -> None: ...
    def start(self) -> None: ...
    def close(self, *, abort: bool = False) -> None: ...


class ConnectionQuotas:
    """Which connections a broker (or the proxy) serves: counted per broker and per client address, held past
    max.connections, closed when idle."""

    def __init__(self, cluster: LimitsSource) -> None:
        self.cluster = cluster
        self.stopped = False
        """Set when the server stops: new connections are closed, held ones never admitted."""
        self.by_broker: dict[int, set[Limited]] = defaultdict(set)
        """Each broker's admitted connections."""
        self.held: dict[int, collections.deque[Limited]] = defaultdict(collections.deque)
        """Connections past max.connections, not read until one of the broker's others closes."""
        self.per_ip: collections.Counter[tuple[int, str]] = collections.Counter()
        self._ip_overrides: tuple[str, dict[str, int]] = ("", {})
        self.idle: collections.OrderedDict[Limited, None] = collections.OrderedDict()
        """Every open connection, least recently active first (connections.max.idle.ms)."""

    @property
    def count(self) -> int:
        return sum(len(conns) for conns in self.by_broker.values())

    def of_broker(self, node_id: int) -> list[Limited]:
        """The broker's connections, admitted and held."""
        return [*self.by_broker.get(node_id, ()), *self.held.get(node_id, ())]

    def accept(self, conn: Limited) -> None:
        """max.connections.per.ip: closed at once past it, as Kafka closes it; max.connections: held unread
        until another connection of the broker closes, as Kafka's acceptor waits for a slot (past a
        listen backlog's worth of held ones, closed)."""
        config = self.cluster.config
        node = conn.quota_node
        key = (node, conn.ip)
        if not self.stopped and self._throttled(conn):
            return
        per_ip = self.ip_limit(conn.ip)
        if self.stopped or self.per_ip[key] >= per_ip:
            if not self.stopped:
                log.warning("connection %s: more than max.connections.per.ip=%d from %s; closing", conn.peer,
                            per_ip, conn.ip)
            conn.close(abort=True)
            return
        self.per_ip[key] += 1
        conn.counted_ip = True
        self.touch(conn)
        if len(self.by_broker[node]) >= config.max_connections or self.held[node]:
            if len(self.held[node]) >= HELD_BACKLOG:
                log.warning("connection %s: max.connections=%d reached and %d waiting; closing", conn.peer,
                            config.max_connections, len(self.held[node]))
                conn.close(abort=True)
                return
            conn.pause("held")
            self.held[node].append(conn)
            return
        self._admit(conn)

    def _throttled(self, conn: Limited) -> bool:
        """connection_creation_rate (ip entities): a connection over its address's rate is not read and is closed
        once its throttle time is over, as Kafka's acceptor delays closing a throttled socket (it is counted
        neither per address nor per broker). The proxy has no client quotas."""
        quotas = getattr(self.cluster, "client_quotas", None)
        if quotas is None:
            return False
        ms = quotas.record_connection(conn.ip, self.cluster.clock.now_ms())
        if ms <= 0:
            return False
        log.info("connection %s: over connection_creation_rate from %s; closing in %d ms", conn.peer, conn.ip, ms)
        conn.pause("throttled")
        asyncio.get_running_loop().call_later(ms / 1000, lambda: conn.closed or conn.close(abort=True))
        return True

    def _admit(self, conn: Limited) -> None:
        self.by_broker[conn.quota_node].add(conn)
        conn.start()

    def ip_limit(self, ip: str) -> int:
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

    def forget(self, conn: Limited) -> None:
        """A connection has closed: its slot, its address's count and its place in the queues go; a held
        connection takes the slot."""
        node = conn.quota_node
        self.idle.pop(conn, None)
        if conn.counted_ip:
            conn.counted_ip = False
            key = (node, conn.ip)
            self.per_ip[key] -= 1
            if self.per_ip[key] <= 0:
                del self.per_ip[key]
        held = self.held.get(node)
        if held and conn in held:
            held.remove(conn)
        if conn.admitted:
            conn.admitted = False
            self.by_broker[node].discard(conn)
            limit = self.cluster.config.max_connections
            while held and len(self.by_broker[node]) < limit and not self.stopped:
                self._admit(held.popleft())

    def touch(self, conn: Limited) -> None:
        conn.last_active = self.cluster.clock.now_ms()
        idle = self.idle
        if conn in idle:
            idle.move_to_end(conn)
        elif not conn.closed:
            idle[conn] = None

    def expire_idle(self) -> None:
        """Closes connections idle for connections.max.idle.ms on the cluster's clock, oldest first."""
        if not self.idle:
            return
        cutoff = self.cluster.clock.now_ms() - self.cluster.config.connections_max_idle_ms
        while self.idle:
            conn = next(iter(self.idle))
            if conn.last_active >= cutoff:
                return
            del self.idle[conn]
            log.info("connection %s: idle for more than connections.max.idle.ms=%d; closing", conn.peer,
                     self.cluster.config.connections_max_idle_ms)
            conn.close(abort=True)


class RequestMemoryPool:
    """queued.max.request.bytes: announced frame sizes counted per broker, as Kafka's memory pool does; when
    spent, connections that want to start a frame are not read until requests finish."""

    def __init__(self, cluster: ClusterState) -> None:
        self.cluster = cluster
        self.queued_bytes: dict[int, int] = defaultdict(int)
        self.starved: dict[int, collections.deque[Connection]] = defaultdict(collections.deque)
        """Connections waiting for room to start a frame, in the order they asked."""

    def reserve(self, conn: Connection, size: int) -> bool:
        """Counts a frame's announced size against the broker's queued.max.request.bytes; False (the
        connection then waits) when it is spent. Like Kafka's pool, one frame may overdraw what is left."""
        budget = self.cluster.config.queued_max_request_bytes
        if budget < 0:
            return True
        node = conn.broker.node_id
        if self.queued_bytes[node] >= budget:
            self.starved[node].append(conn)
            return False
        self.queued_bytes[node] += size
        conn.reserved += size
        return True

    def release(self, conn: Connection, size: int) -> None:
        """Gives back `size` of the connection's counted bytes; connections waiting for room start their
        frames, in order, while there is some."""
        size = min(size, conn.reserved)
        if size <= 0:
            return
        conn.reserved -= size
        node = conn.broker.node_id
        self.queued_bytes[node] -= size
        budget = self.cluster.config.queued_max_request_bytes
        starved = self.starved[node]
        while starved and (budget < 0 or self.queued_bytes[node] < budget):
            waiting = starved.popleft()
            size = waiting.frames.waiting  # type: ignore[assignment]
            if size is None:
                continue
            self.queued_bytes[node] += size
            waiting.reserved += size
            waiting.unstarve()

    def forget(self, conn: Connection) -> None:
        starved = self.starved.get(conn.broker.node_id)
        if starved and conn in starved:
            starved.remove(conn)
