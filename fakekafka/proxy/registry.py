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

from fakekafka.chaos import ChaosSource, Schedule, chaos_of
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

    def serve(self, method: str, raw_path: str, body: Any) -> tuple[int, Any]:
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
    (`inject_error`, `inject_latency`, `unknown_schema_id`, `clear_faults`) are the registry's own. `chaos=`: a
    `fakekafka.Proxy` running chaos (registry faults join its schedule), or what `Proxy(chaos=...)` takes (a
    `Chaos`, a `Schedule` to replay, a seed: a schedule of its own, `chaos_schedule()`)."""

    def __init__(self, upstream: str, host: str = "127.0.0.1", port: int = 0, timeout: float = 30.0,
                 chaos: Any = None) -> None:
        self.server = _ForwardingServer(upstream, host, port, timeout)
        self.chaos_source: ChaosSource | None = None
        if chaos is not None:
            run = getattr(chaos, "chaos", None)  # a Proxy: its run's source
            if run is not None and hasattr(run, "source"):
                self.chaos_source = run.source
            elif not hasattr(chaos, "bootstrap_servers"):
                given = chaos_of(chaos)
                if given is not None:
                    self.chaos_source = ChaosSource(None, given, now_ms=lambda: int(time.time() * 1000))
            if self.chaos_source is not None:
                self.server.chaos = self.chaos_source.registry_action

    def chaos_schedule(self) -> Schedule:
        """The chaos schedule applied so far (the proxy's, when it shares the proxy's run)."""
        if self.chaos_source is None:
            raise RuntimeError("this registry proxy runs without chaos: RegistryProxy(url, chaos=...)")
        return self.chaos_source.applied.subset(list(self.chaos_source.applied.steps))

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
