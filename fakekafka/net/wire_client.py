"""Blocking Kafka wire connections: one broker (`WireConnection`), or a cluster's brokers (`Brokers`).

What `RemoteCluster`, the proxy's chaos invariants, the API sweep and the compat tools talk to a cluster
with: requests built and parsed by `fakekafka.wire` at the version both sides support (ApiVersions first), one at
a time, over a plain socket.
"""

from __future__ import annotations

import socket
import struct
from typing import Any

from fakekafka import wire
from fakekafka.model.errors import ApiError
from fakekafka.wire import ApiKey, ErrorCode
from fakekafka.wire.records import decode_batch, iter_batches

__all__ = ["PREFERRED", "Brokers", "WireConnection"]

# API key: the version we prefer; the broker's ApiVersions may lower it.
PREFERRED = {ApiKey.PRODUCE: 9, ApiKey.FETCH: 12, ApiKey.LIST_OFFSETS: 7, ApiKey.METADATA: 12,
             ApiKey.OFFSET_FETCH: 8, ApiKey.FIND_COORDINATOR: 4, ApiKey.DESCRIBE_GROUPS: 5, ApiKey.LIST_GROUPS: 4,
             ApiKey.API_VERSIONS: 3, ApiKey.CREATE_TOPICS: 7, ApiKey.DELETE_TOPICS: 6, ApiKey.DESCRIBE_CONFIGS: 4,
             ApiKey.DELETE_GROUPS: 2}


class WireConnection:
    """One blocking connection to one broker, its API versions asked for first."""

    def __init__(self, host: str, port: int, client_id: str, timeout: float) -> None:
        self.sock = socket.create_connection((host, port), timeout=timeout)
        self.client_id = client_id
        self.correlation_id = 0
        self.versions: dict[int, tuple[int, int]] = {}
        r = self.request(ApiKey.API_VERSIONS, 3, {"client_software_name": "fakekafka", "client_software_version": "1"})
        if r.error_code == ErrorCode.UNSUPPORTED_VERSION:
            r = self.request(ApiKey.API_VERSIONS, 0, {})
        self.versions = {k.api_key: (k.min_version, k.max_version) for k in r.api_keys}

    def version_for(self, api_key: int) -> int:
        lo, hi = self.versions.get(api_key, (0, -1))
        want = min(PREFERRED.get(api_key, hi), hi)
        if want < lo:
            raise ApiError(ErrorCode.UNSUPPORTED_VERSION, f"broker supports API {api_key} v{lo}-{hi} only")
        return want

    def _read(self, n: int) -> bytes:
        buf = bytearray()
        while len(buf) < n:
            chunk = self.sock.recv(n - len(buf))
            if not chunk:
                raise ConnectionError("the broker closed the connection")
            buf += chunk
        return bytes(buf)

    def request(self, api_key: int, version: int | None, body: dict[str, Any]) -> Any:
        v = self.version_for(api_key) if version is None else version
        self.correlation_id += 1
        self.sock.sendall(wire.encode_request(api_key, v, self.correlation_id, body, client_id=self.client_id))
        (size,) = struct.unpack(">i", self._read(4))
        corr, response = wire.decode_response(api_key, v, self._read(size))
        if corr != self.correlation_id:
            raise ConnectionError(f"response for correlation id {corr}, expected {self.correlation_id}")
        response["_version"] = v
        return response

    def close(self) -> None:
        self.sock.close()


class Brokers:
    """Blocking connections to a cluster's brokers, found as a client finds them: any bootstrap server, a node
    by id (from Metadata), a partition's leader, a group's coordinator (FindCoordinator). The base of
    `RemoteCluster`, whose `_any`, `_leader`, `_coordinator`... the compat harness uses too."""

    def __init__(self, bootstrap_servers: str, client_id: str, timeout: float) -> None:
        self.bootstrap_servers = bootstrap_servers
        self.client_id = client_id
        self.timeout = timeout
        self._connections: dict[tuple[str, int], WireConnection] = {}
        self._brokers: dict[int, tuple[str, int]] = {}
        """node id -> (host, port), as the last Metadata named them."""

    def close(self) -> None:
        for c in self._connections.values():
            c.close()
        self._connections.clear()

    def _connect(self, host: str, port: int) -> WireConnection:
        conn = self._connections.get((host, port))
        if conn is None:
            conn = self._connections[(host, port)] = WireConnection(host, port, self.client_id, self.timeout)
        return conn

    def _any(self) -> WireConnection:
        if self._connections:
            return next(iter(self._connections.values()))
        errors = []
        for address in self.bootstrap_servers.split(","):
            host, port = address.strip().rsplit(":", 1)
            try:
                return self._connect(host, int(port))
            except OSError as e:
                errors.append(f"{address}: {e}")
        raise ConnectionError(f"no bootstrap server reachable: {'; '.join(errors)}")

    def _broker(self, node_id: int) -> WireConnection:
        if node_id not in self._brokers:
            self._metadata(None)
        return self._connect(*self._brokers[node_id])

    def _metadata(self, topics: list[str] | None, *, auto_create: bool = False) -> Any:
        body = {"topics": None if topics is None else [{"name": t} for t in topics],
                "allow_auto_topic_creation": auto_create}
        r = self._any().request(ApiKey.METADATA, None, body)
        self._brokers = {b.node_id: (b.host, b.port) for b in r.brokers}
        return r

    def _topic(self, topic: str) -> Any:
        for t in self._metadata([topic]).topics:
            if t.error_code != ErrorCode.NONE:
                raise ApiError(ErrorCode(t.error_code), f"topic {topic!r}: {ErrorCode(t.error_code).name}")
            return t
        raise ApiError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, topic)

    def _coordinator(self, group_id: str) -> WireConnection:
        conn = self._any()
        v = conn.version_for(ApiKey.FIND_COORDINATOR)
        if v >= 4:
            c = conn.request(ApiKey.FIND_COORDINATOR, v,
                             {"key_type": 0, "coordinator_keys": [group_id]}).coordinators[0]
        else:
            c = conn.request(ApiKey.FIND_COORDINATOR, v, {"key": group_id, "key_type": 0})
        if c.error_code != ErrorCode.NONE:
            raise ApiError(ErrorCode(c.error_code), f"no coordinator for group {group_id!r}")
        return self._connect(c.host, c.port)

    def _leader(self, topic: str, partition: int) -> WireConnection:
        for p in self._topic(topic).partitions:
            if p.partition_index == partition:
                return self._broker(p.leader_id)
        raise ApiError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"{topic}-{partition} does not exist")

    def _list_offset(self, topic: str, partition: int, timestamp: int) -> int:
        r = self._leader(topic, partition).request(ApiKey.LIST_OFFSETS, None, {
            "replica_id": -1, "isolation_level": 0, "topics": [
                {"name": topic, "partitions": [{"partition_index": partition, "timestamp": timestamp}]}]})
        p = r.topics[0].partitions[0]
        if p.error_code != ErrorCode.NONE:
            raise ApiError(ErrorCode(p.error_code), f"ListOffsets {topic}-{partition}: {ErrorCode(p.error_code).name}")
        return p.offset

    def batches(self, topic: str, partition: int = 0) -> list[bytes]:
        """The partition's record batches from its log start to its high watermark, as the broker stores
        them (compression and all), control batches included: what a test reads a stored codec from."""
        out: list[bytes] = []
        offset, end = self._list_offset(topic, partition, -2), self._list_offset(topic, partition, -1)
        conn = self._leader(topic, partition)
        while offset < end:
            r = conn.request(ApiKey.FETCH, 12, {
                "replica_id": -1, "max_wait_ms": 0, "min_bytes": 0, "max_bytes": 1 << 24,
                "isolation_level": 0, "session_epoch": -1, "topics": [
                    {"topic": topic, "partitions": [{"partition": partition, "fetch_offset": offset,
                                                     "partition_max_bytes": 1 << 24}]}]})
            p = next((q for t in r.responses for q in t.partitions if q.partition_index == partition), None)
            if p is None:  # a broker that leaves the partition out of its answer (tansu does)
                raise ApiError(ErrorCode.UNKNOWN_SERVER_ERROR,
                               f"Fetch {topic}-{partition} at {offset}: the answer has no such partition")
            if p.error_code != ErrorCode.NONE:
                raise ApiError(ErrorCode(p.error_code),
                               f"Fetch {topic}-{partition} at {offset}: {ErrorCode(p.error_code).name}")
            fetched = iter_batches(p.records or b"", validate=False)
            if not fetched:
                break
            for _, batch in fetched:
                last = decode_batch(batch).header.last_offset
                if last >= offset:  # a fetch may start with the batch holding `offset`, seen already
                    out.append(batch)
                offset = max(offset, last + 1)
        return out
