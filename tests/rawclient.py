"""A minimal blocking Kafka client over raw sockets, for tests of the server's framing and errors."""

from __future__ import annotations

import socket
import struct
import time
from collections.abc import Callable
from typing import Any

from fakekafka import wire


class RawClient:
    def __init__(self, bootstrap: str, timeout: float = 10.0, client_id: str = "raw") -> None:
        self.client_id = client_id
        host, port = bootstrap.split(",")[0].rsplit(":", 1)
        self.sock = socket.create_connection((host, int(port)), timeout=timeout)
        self.correlation_id = 0

    def send(self, api_key: int, version: int, body: dict[str, Any]) -> int:
        self.correlation_id += 1
        self.sock.sendall(wire.encode_request(api_key, version, self.correlation_id, body, client_id=self.client_id))
        return self.correlation_id

    def send_bytes(self, data: bytes) -> None:
        self.sock.sendall(data)

    def _read_exact(self, n: int) -> bytes:
        buf = b""
        while len(buf) < n:
            chunk = self.sock.recv(n - len(buf))
            if not chunk:
                raise ConnectionError("closed by the broker")
            buf += chunk
        return buf

    def receive(self, api_key: int, version: int) -> tuple[int, Any]:
        (size,) = struct.unpack(">i", self._read_exact(4))
        return wire.decode_response(api_key, version, self._read_exact(size))

    def request(self, api_key: int, version: int, body: dict[str, Any]) -> Any:
        corr = self.send(api_key, version, body)
        got, response = self.receive(api_key, version)
        assert got == corr
        return response

    def is_closed(self) -> bool:
        try:
            return self.sock.recv(1) == b""
        except (ConnectionError, TimeoutError, OSError):
            return True

    def close(self) -> None:
        self.sock.close()

    def __enter__(self) -> RawClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def request_once(
    bootstrap: str, api_key: int, version: int, body: dict[str, Any], client_id: str = "raw", timeout: float = 10.0
) -> Any:
    """One request on a connection of its own, closed once answered (a throttled connection is muted for the
    throttle time, so each request of a quota test goes on a new one)."""
    with RawClient(bootstrap, timeout=timeout, client_id=client_id) as raw:
        return raw.request(api_key, version, body)


def alter_client_quota(raw: RawClient, entity_type: str, entity_name: str, key: str, value: float | None) -> Any:
    """AlterClientQuotas v1 setting quota `key` of one entity (`entity_type` "user", "client-id" or "ip") to
    `value`, or removing it (None); the response."""
    entity = [{"entity_type": entity_type, "entity_name": entity_name}]
    ops = [{"key": key, "value": value or 0.0, "remove": value is None}]
    return raw.request(
        wire.ApiKey.ALTER_CLIENT_QUOTAS, 1, {"validate_only": False, "entries": [{"entity": entity, "ops": ops}]}
    )


def eventually(what: str, attempt: Callable[[], Any], timeout: float = 30.0) -> Any:
    """Calls `attempt` every 0.1 s until it returns something other than None, and returns that; raises
    AssertionError naming `what` after `timeout` seconds (a fresh Kafka answers some requests before it is ready)."""
    deadline = time.monotonic() + timeout
    while True:
        result = attempt()
        if result is not None:
            return result
        if time.monotonic() > deadline:
            raise AssertionError(f"never: {what}")
        time.sleep(0.1)
