"""A Confluent-compatible Schema Registry beside the broker: `Cluster(schema_registry=True)`,
`fakekafka serve --schema-registry [PORT]`, the pytest marker's `schema_registry=True`.

`model.Registry` holds the rules (subjects, versions, ids, compatibility, modes, deletes) as a fold over the
`_schemas` topic's records (`store.TopicLog`); `http.SchemaRegistryServer` speaks Confluent's REST API;
`compatibility` and `schemas` hold each format's parsing and rules.
"""

from __future__ import annotations

import importlib.util
import re
from collections.abc import Callable
from typing import Any

from fakekafka.model.cluster import ClusterState
from fakekafka.registry.errors import RegistryError
from fakekafka.registry.http import RegistryFault, SchemaRegistryServer
from fakekafka.registry.model import Registry
from fakekafka.registry.store import SCHEMAS_TOPIC, TopicLog

__all__ = ["SCHEMAS_TOPIC", "RegistryError", "RegistryFault", "RegistryFaults", "SchemaRegistry", "loop_caller"]


class RegistryFaults:
    """The registry's fault language, on whatever serves its REST API (`server`): the registry beside a cluster,
    or the proxy's forwarder in front of another registry."""

    server: SchemaRegistryServer

    def inject_error(self, path: str = "", status: int = 500, error_code: int = 50001,
                     message: str = "Error while talking to the Kafka store (injected)", count: int | None = 1, *,
                     method: str | None = None) -> RegistryFault:
        """The next `count` requests (None: all) whose path matches the regular expression `path` ("" matches every
        path; e.g. `/schemas/ids/`) and method (None: any) are answered `status` with Confluent's `error_code`."""
        return self.server.add_fault(RegistryFault(_method(method), _pattern(path), _count(count), status=status,
                                                   error_code=error_code, message=message))

    def inject_latency(self, ms: int, path: str = "", count: int | None = None, *,
                       method: str | None = None) -> RegistryFault:
        """The next `count` matching requests (None: all) are answered `ms` milliseconds late."""
        if ms < 0:
            raise ValueError(f"latency is a positive number of milliseconds, not {ms}")
        return self.server.add_fault(RegistryFault(_method(method), _pattern(path), _count(count), latency_ms=ms))

    def unknown_schema_id(self, schema_id: int | None = None, count: int | None = None) -> RegistryFault:
        """The next `count` reads (None: all) of schema id `schema_id` (None: of every id) by `/schemas/ids/...` are
        answered 404 with 40403, as if the id had never been registered: what a consumer meets when a record names
        a schema its registry does not have (another registry's, or one hard-deleted)."""
        if schema_id is not None and (isinstance(schema_id, bool) or not isinstance(schema_id, int) or schema_id < 0):
            raise ValueError(f"a schema id is a number from 0, not {schema_id!r}")
        ids = r"\d+" if schema_id is None else str(schema_id)
        return self.server.add_fault(RegistryFault("GET", _pattern(rf"^/schemas/ids/{ids}(/|$)"), _count(count),
                                                   status=404, error_code=40403, message="Schema not found"))

    def clear_faults(self) -> None:
        self.server.clear_faults()

    def faults(self) -> list[RegistryFault]:
        return list(self.server.faults)


class SchemaRegistry(RegistryFaults):
    """The registry of one cluster: its model on the cluster's `_schemas` topic and its HTTP server.

    `call(fn)` runs `fn` where the cluster's model runs; every request goes through it."""

    def __init__(self, state: ClusterState, call: Callable[[Callable[[], Any]], Any], host: str = "127.0.0.1",
                 port: int = 0) -> None:
        missing = [name for name in ("avro", "jsonschema", "google.protobuf") if importlib.util.find_spec(
            name.split(".")[0]) is None]
        if missing:
            raise ImportError(f"the schema registry parses schemas with avro, jsonschema and protobuf; missing: "
                              f"{', '.join(missing)} (pip install 'fakekafka[schema-registry]')")
        self.state = state
        self._model: Registry | None = None
        self.server = SchemaRegistryServer(self.model, call, host, port)
        self._call = call

    def model(self) -> Registry:
        """The model, read from `_schemas` (created if missing) the first time; called where the cluster runs."""
        if self._model is None:
            log = TopicLog(self.state)
            log.ensure()
            self._model = Registry(log)
        return self._model

    def start(self) -> SchemaRegistry:
        """Binds the port and loads `_schemas` (so a data dir's registry is back before the first request)."""
        self._call(self.model)
        try:
            self.server.start()
        except OSError as e:  # named, as the brokers' ports are
            raise OSError(e.errno, e.strerror, f"{self.server.host}:{self.server.port} (the schema registry)") from None
        return self

    def stop(self) -> None:
        self.server.stop()

    @property
    def url(self) -> str:
        return self.server.url

def _method(method: str | None) -> str | None:
    if method is not None and method.upper() not in ("GET", "POST", "PUT", "DELETE"):
        raise ValueError(f"method is GET, POST, PUT or DELETE, not {method!r}")
    return method.upper() if method else None


def _pattern(path: str) -> re.Pattern[str]:
    try:
        return re.compile(path)
    except re.error as e:
        raise ValueError(f"path {path!r} is not a regular expression: {e}") from None


def _count(count: int | None) -> int | None:
    if count is not None and count < 1:
        raise ValueError(f"count is at least 1 (or None for every request), not {count}")
    return count


def loop_caller(loop: Callable[[], Any]) -> Callable[[Callable[[], Any]], Any]:
    """`call(fn)` running `fn` on the event loop `loop()` returns and waiting for it (at once when already there):
    how the HTTP threads reach the cluster's model without racing its requests."""
    import asyncio

    def call(fn: Callable[[], Any]) -> Any:
        target = loop()
        if target is None:
            raise RegistryError.store_error("The cluster is not running")
        try:
            running = asyncio.get_running_loop()
        except RuntimeError:
            running = None
        if running is target:
            return fn()

        async def run() -> Any:
            return fn()
        return asyncio.run_coroutine_threadsafe(run(), target).result(30)
    return call
