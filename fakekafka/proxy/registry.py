"""A Schema Registry behind the proxy: a local port that forwards Confluent's REST API to another registry
(fakekafka's, Confluent's, Apicurio's ccompat API), with the registry's fault language (`inject_error`,
`inject_latency`, `unknown_schema_id`) applied before forwarding, so a test written against fakekafka's registry
faults runs unchanged against a real registry."""

from __future__ import annotations

import http.client
import json
import time
from typing import Any
from urllib.parse import urlsplit

from fakekafka.registry import RegistryFaults
from fakekafka.registry.http import RawText, SchemaRegistryServer

__all__ = ["RegistryProxy"]


class _ForwardingServer(SchemaRegistryServer):
    """SchemaRegistryServer's HTTP side and faults; every request without a fault goes to the upstream."""

    def __init__(self, upstream: str, host: str, port: int, timeout: float) -> None:
        super().__init__(lambda: None, lambda fn: fn(), host, port)  # type: ignore[arg-type,return-value]
        parts = urlsplit(upstream)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError(f"the upstream registry is an http(s) URL, not {upstream!r}")
        self.upstream = upstream.rstrip("/")
        self._parts = parts
        self._timeout = timeout

    def handle(self, method: str, raw_path: str, body: Any) -> tuple[int, Any]:
        path = urlsplit(raw_path).path.rstrip("/") or "/"
        for fault in self._take_faults(method, path):
            if fault.latency_ms:
                time.sleep(fault.latency_ms / 1000)
            if fault.status:
                return fault.status, {"error_code": fault.error_code, "message": fault.message}
        return self._forward(method, raw_path, body)

    def _forward(self, method: str, raw_path: str, body: Any) -> tuple[int, Any]:
        """One request to the upstream on a connection of its own (the HTTP threads run concurrently); an
        upstream that cannot be reached is answered 502 with Confluent's error body, in words."""
        connection_class = http.client.HTTPSConnection if self._parts.scheme == "https" else http.client.HTTPConnection
        conn = connection_class(self._parts.hostname, self._parts.port, timeout=self._timeout)
        prefix = self._parts.path.rstrip("/")
        data = None if body is None else json.dumps(body).encode()
        headers = {"Accept": "application/vnd.schemaregistry.v1+json, application/json"}
        if data is not None:
            headers["Content-Type"] = "application/vnd.schemaregistry.v1+json"
        try:
            conn.request(method, prefix + raw_path, body=data, headers=headers)
            answer = conn.getresponse()
            raw = answer.read()
        except (OSError, http.client.HTTPException) as e:
            return 502, {"error_code": 502, "message": f"the upstream registry {self.upstream} did not answer: {e}"}
        finally:
            conn.close()
        try:
            return answer.status, json.loads(raw) if raw else RawText("")
        except ValueError:
            return answer.status, RawText(raw.decode("utf-8", "replace"))


class RegistryProxy(RegistryFaults):
    """`RegistryProxy(upstream_url).start()` serves the upstream registry's REST API at `url`; the fault methods
    (`inject_error`, `inject_latency`, `unknown_schema_id`, `clear_faults`) are the registry's own."""

    def __init__(self, upstream: str, host: str = "127.0.0.1", port: int = 0, timeout: float = 30.0) -> None:
        self.server = _ForwardingServer(upstream, host, port, timeout)

    @property
    def upstream(self) -> str:
        return self.server.upstream

    @property
    def url(self) -> str:
        return self.server.url

    def start(self) -> RegistryProxy:
        try:
            self.server.start()
        except OSError as e:
            raise OSError(e.errno, e.strerror, f"{self.server.host}:{self.server.port} (the registry proxy)") from None
        return self

    def stop(self) -> None:
        self.server.stop()

    def __enter__(self) -> RegistryProxy:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
