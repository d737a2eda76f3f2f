"""Confluent Schema Registry's REST API over HTTP, on the standard library's ThreadingHTTPServer.

Each request is parsed in its own thread and handed to the model (`model.Registry`) where the cluster's model runs
(`call`: the cluster's event loop), so registry writes and broker requests never race. Bodies are bounded
(`MAX_BODY_BYTES`, Confluent's default `schema.max.size`-like limit); every refusal is Confluent's JSON error.
Faults (`inject_error`, `inject_latency`) apply to the next requests matching a method and path pattern; chaos
(`chaos`, fakekafka/chaos/registry.py) draws a fault per request by its route.
"""

from __future__ import annotations

import json
import logging
import re
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, TypeVar
from urllib.parse import parse_qs, unquote, urlsplit

from fakekafka.chaos.registry import RegistryAction
from fakekafka.registry.errors import RegistryError
from fakekafka.registry.model import Registry, list_schemas

__all__ = ["MAX_BODY_BYTES", "RegistryFault", "SchemaRegistryServer", "route_of"]

log = logging.getLogger("fakekafka.registry")

T = TypeVar("T")
MAX_BODY_BYTES = 16 * 1024 * 1024
CONTENT_TYPE = "application/vnd.schemaregistry.v1+json"

_GROUPS = {"{id}": r"(?P<id>-?\d+)", "{subject}": r"(?P<subject>[^/]+)", "{version}": r"(?P<version>[^/]+)"}
Route = tuple[str, re.Pattern[str], str, str]
"""(method, path pattern, handler name, the route as chaos names it: "GET /schemas/ids/{id}")"""


def _compiled(template: str) -> re.Pattern[str]:
    for name, group in _GROUPS.items():
        template = template.replace(name, group)
    return re.compile(f"^{template}$")


_ROUTES: list[Route] = [(m, _compiled(t), name, f"{m} {t}") for m, t, name in [
    ("GET", "/", "root"),
    ("GET", "/subjects", "subjects"),
    ("GET", "/subjects/{subject}/versions", "versions"),
    ("POST", "/subjects/{subject}/versions", "register"),
    ("GET", "/subjects/{subject}/versions/{version}", "version"),
    ("GET", "/subjects/{subject}/versions/{version}/schema", "version_schema"),
    ("GET", "/subjects/{subject}/versions/{version}/referencedby", "referenced_by"),
    ("DELETE", "/subjects/{subject}/versions/{version}", "delete_version"),
    ("POST", "/subjects/{subject}", "lookup"),
    ("DELETE", "/subjects/{subject}", "delete_subject"),
    ("GET", "/schemas", "schemas"),
    ("GET", "/schemas/types", "types"),
    ("GET", "/schemas/ids/{id}", "schema"),
    ("GET", "/schemas/ids/{id}/schema", "schema_text"),
    ("GET", "/schemas/ids/{id}/versions", "schema_versions"),
    ("GET", "/schemas/ids/{id}/subjects", "schema_subjects"),
    ("GET", "/config", "get_config"),
    ("PUT", "/config", "set_config"),
    ("DELETE", "/config", "delete_config"),
    ("GET", "/config/{subject}", "get_config"),
    ("PUT", "/config/{subject}", "set_config"),
    ("DELETE", "/config/{subject}", "delete_config"),
    ("GET", "/mode", "get_mode"),
    ("PUT", "/mode", "set_mode"),
    ("GET", "/mode/{subject}", "get_mode"),
    ("PUT", "/mode/{subject}", "set_mode"),
    ("DELETE", "/mode/{subject}", "delete_mode"),
    ("POST", "/compatibility/subjects/{subject}/versions", "compatibility"),
    ("POST", "/compatibility/subjects/{subject}/versions/{version}", "compatibility"),
]]


@dataclass
class RegistryFault:
    """The next `count` requests (None: all) whose method and path match get an error or a delay first."""

    method: str | None
    path: re.Pattern[str]
    count: int | None
    status: int = 0
    error_code: int = 0
    message: str = ""
    latency_ms: int = 0
    fired: int = 0

    def describe(self) -> str:
        what = f"error {self.status}/{self.error_code}" if self.status else f"latency {self.latency_ms} ms"
        times = "every" if self.count is None else f"next {self.count}"
        return f"{what} on {times} {self.method or 'any'} {self.path.pattern} (fired {self.fired})"


def route_of(method: str, path: str) -> str | None:
    """The route a request takes, as chaos names it ("GET /schemas/ids/{id}"); None where none serves it."""
    for route_method, pattern, _, route in _ROUTES:
        if route_method == method and pattern.match(path):
            return route
    return None


def _page(items: list[Any], query: dict[str, str]) -> list[Any]:
    """Confluent's offset/limit paging (limit -1 or absent: all)."""
    try:
        offset = max(int(query.get("offset", 0)), 0)
        limit = int(query.get("limit", -1))
    except ValueError:
        raise RegistryError.bad_request("offset and limit are integers") from None
    items = items[offset:]
    return items if limit < 0 else items[:limit]


class SchemaRegistryServer:
    """The HTTP server: `start()` binds (port 0: a free one) and serves on a daemon thread; `stop()` ends it."""

    def __init__(self, registry: Callable[[], Registry], call: Callable[[Callable[[], Any]], Any],
                 host: str = "127.0.0.1", port: int = 0) -> None:
        """`registry` gives the model and `call(fn)` runs `fn` where the model lives (both used on every request)."""
        self._registry = registry
        self._call = call
        self.host = host
        self.port = port
        self.faults: list[RegistryFault] = []
        self._faults_lock = threading.Lock()
        self.requests_served = 0
        self.chaos: Callable[[str], RegistryAction | None] | None = None
        """Chaos's draw per request (`ChaosSource.registry_action`), set by the cluster or proxy running chaos."""
        self._httpd: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}"

    def start(self) -> SchemaRegistryServer:
        server = self

        class Handler(_Handler):
            registry_server = server

        httpd = ThreadingHTTPServer((self.host, self.port), Handler)
        httpd.daemon_threads = True
        self._httpd = httpd
        self.port = httpd.server_address[1]
        self._thread = threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.05},
                                        name=f"fakekafka-registry-{self.port}", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        httpd, thread = self._httpd, self._thread
        self._httpd = self._thread = None
        if httpd is not None:
            httpd.shutdown()
            httpd.server_close()
        if thread is not None and thread is not threading.current_thread():
            thread.join(10)

    # --- faults ------------------------------------------------------------------------------------------------
    def add_fault(self, fault: RegistryFault) -> RegistryFault:
        with self._faults_lock:
            self.faults.append(fault)
        return fault

    def clear_faults(self) -> None:
        with self._faults_lock:
            self.faults.clear()

    def _take_faults(self, method: str, path: str) -> list[RegistryFault]:
        fired = []
        with self._faults_lock:
            for fault in list(self.faults):
                if (fault.method is None or fault.method == method) and fault.path.search(path):
                    fault.fired += 1
                    fired.append(fault)
                    if fault.count is not None:
                        fault.count -= 1
                        if fault.count <= 0:
                            self.faults.remove(fault)
        return fired

    # --- dispatch ----------------------------------------------------------------------------------------------
    def handle(self, method: str, raw_path: str, body: Any) -> tuple[int, Any]:
        """(status, JSON answer) of one request, its injected faults and chaos's first."""
        path = urlsplit(raw_path).path.rstrip("/") or "/"
        for fault in self._take_faults(method, path):
            if fault.latency_ms:
                time.sleep(fault.latency_ms / 1000)
            if fault.status:
                return fault.status, {"error_code": fault.error_code, "message": fault.message}
        drawn = self._chaos_action(method, path)
        if drawn is not None:
            if drawn.latency_ms:
                time.sleep(drawn.latency_ms / 1000)
            if drawn.status and not drawn.after:
                return drawn.status, {"error_code": drawn.error_code, "message": drawn.message}
        status, payload = self.serve(method, raw_path, body)
        if drawn is not None and drawn.status and status < 300:  # applied, then the answer was lost to the error
            return drawn.status, {"error_code": drawn.error_code, "message": drawn.message}
        return status, payload

    def _chaos_action(self, method: str, path: str) -> RegistryAction | None:
        """Chaos's draw for this request (None without chaos, or for a path no route serves), on this HTTP thread:
        the source keeps the registry's draws under a lock of its own and appends each step to the schedule the
        broker's faults go to (no hop to the cluster's loop, which cost a registry read 13 %)."""
        chaos = self.chaos
        if chaos is None:
            return None
        route = route_of(method, path)
        if route is None:
            return None
        return chaos(route)

    def serve(self, method: str, raw_path: str, body: Any) -> tuple[int, Any]:
        """(status, JSON answer) of one request; RegistryError becomes Confluent's error body."""
        parts = urlsplit(raw_path)
        path = parts.path.rstrip("/") or "/"
        query = {k: v[-1] for k, v in parse_qs(parts.query, keep_blank_values=True).items()}
        allowed = False
        for route_method, pattern, name, _ in _ROUTES:
            match = pattern.match(path)
            if match is None:
                continue
            allowed = True
            if route_method != method:
                continue
            args = {k: unquote(v) for k, v in match.groupdict().items()}
            if name in ("register", "lookup", "compatibility"):
                self._compile_here(body)
            try:
                return 200, self._call(lambda n=name, a=args: self._dispatch(n, a, query, body))
            except RegistryError as e:
                return e.status, e.body()
            except Exception:  # a bug of ours: answered as Confluent answers one, and logged
                log.exception("schema registry: %s %s failed", method, raw_path)
                return 500, {"error_code": 500, "message": "Internal Server Error"}
        if allowed:
            return 405, {"error_code": 405, "message": "HTTP 405 Method Not Allowed"}
        return 404, {"error_code": 404, "message": "HTTP 404 Not Found"}

    def _compile_here(self, body: Any) -> None:
        """A `.proto` text is compiled (protoc) on this HTTP thread, not on the cluster's loop where the request then
        runs: its imports are read there, the compiled file (and the one with source spans that its answers are
        printed from) is kept for the request."""
        try:
            source = self._call(lambda: self._registry().protobuf_source(body))
        except RegistryError:
            return
        if source is not None:
            from fakekafka.registry.schemas import _compile_text

            try:
                _compile_text(*source)  # with protoc's source spans too: what its answers are printed from
            except RegistryError:
                pass  # kept too: the request answers it

    def _dispatch(self, name: str, args: dict[str, str], query: dict[str, str], body: Any) -> Any:
        r = self._registry()
        r.sync()  # records someone else appended to _schemas since the last request
        subject = args.get("subject")
        deleted = query.get("deleted", False)
        if "id" in args:
            schema_id = int(args["id"])
        if name == "root":
            return {}
        if name == "subjects":
            return _page(r.list_subjects(deleted, query.get("deletedOnly", query.get("deleted_only", False)),
                                         query.get("subjectPrefix", "")), query)
        if name == "versions":
            return _page(r.list_versions(subject, deleted, query.get("deletedOnly", False)), query)
        if name == "register":
            return r.register(subject, body, query.get("normalize", False))
        if name == "version":
            return r.get_version(subject, args["version"], deleted, query.get("format") or None)
        if name == "version_schema":
            return _bare(r.get_version(subject, args["version"], deleted, query.get("format") or None))
        if name == "referenced_by":
            return r.referenced_by(subject, args["version"])
        if name == "delete_version":
            return r.delete_version(subject, args["version"], query.get("permanent", False))
        if name == "lookup":
            return r.lookup(subject, body, query.get("normalize", False), deleted)
        if name == "delete_subject":
            return r.delete_subject(subject, query.get("permanent", False))
        if name == "schemas":
            schemas = list_schemas(r, query.get("subjectPrefix", ""), deleted, query.get("latestOnly", False))
            return _page(schemas, query)
        if name == "types":
            return r.schema_types()
        if name == "schema":
            return r.schema_by_id(schema_id, query.get("subject") or None, query.get("format") or None)
        if name == "schema_text":
            return _bare(r.schema_by_id(schema_id, query.get("subject") or None, query.get("format") or None))
        if name == "schema_versions":
            return _page(r.schema_versions(schema_id, deleted, query.get("subject") or None), query)
        if name == "schema_subjects":
            return _page(r.schema_subjects(schema_id, deleted, query.get("subject") or None), query)
        if name == "get_config":
            return r.get_config(subject, query.get("defaultToGlobal", False))
        if name == "set_config":
            return r.set_config(subject, body)
        if name == "delete_config":
            return r.delete_config(subject)
        if name == "get_mode":
            return r.get_mode(subject, query.get("defaultToGlobal", False))
        if name == "set_mode":
            return r.set_mode(subject, body, query.get("force", False))
        if name == "delete_mode":
            return r.delete_mode(subject)
        if name == "compatibility":
            return r.test_compatibility(subject, args.get("version"), body, query.get("verbose", False))
        raise AssertionError(name)


class RawText(str):
    """An answer sent as it is, not as JSON: a Protobuf schema's text from `.../schema`."""


def _bare(schema: dict[str, Any]) -> Any:
    """The `.../schema` endpoints: the schema itself, a JSON document for Avro and JSON Schema, text for Protobuf."""
    if schema.get("schemaType") == "PROTOBUF":
        return RawText(schema["schema"])
    return json.loads(schema["schema"])


class _Handler(BaseHTTPRequestHandler):
    registry_server: SchemaRegistryServer
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True  # headers and body go out in two writes: without it, a delayed ACK adds 40 ms
    server_version = "fakekafka-schema-registry"

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 (the standard library's name)
        log.debug("schema registry %s: " + format, self.address_string(), *args)

    def _answer(self, status: int, payload: Any, close: bool = False) -> None:
        data = payload.encode() if isinstance(payload, RawText) else json.dumps(payload, separators=(",", ":")).encode()
        self.send_response(status)
        self.send_header("Content-Type", CONTENT_TYPE)
        self.send_header("Content-Length", str(len(data)))
        if close:
            self.send_header("Connection", "close")
            self.close_connection = True
        self.end_headers()
        self.wfile.write(data)

    def _serve(self, method: str) -> None:
        length_header = self.headers.get("Content-Length")
        try:
            length = int(length_header) if length_header else 0
        except ValueError:
            self._answer(400, {"error_code": 400, "message": "Bad Content-Length"}, close=True)
            return
        if length < 0 or length > MAX_BODY_BYTES:
            self._answer(413, {"error_code": 413, "message": f"Request entity larger than {MAX_BODY_BYTES} bytes"},
                         close=True)
            return
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            self._answer(411, {"error_code": 411, "message": "Length Required"}, close=True)
            return
        raw = self.rfile.read(length) if length else b""
        body: Any = None
        if raw:
            try:
                body = json.loads(raw)
            except ValueError as e:
                self._answer(400, {"error_code": 400, "message": f"Unrecognized JSON body: {e}"})
                return
        status, payload = self.registry_server.handle(method, self.path, body)
        self.registry_server.requests_served += 1
        self._answer(status, payload)

    def do_GET(self) -> None:  # noqa: N802 (BaseHTTPRequestHandler's names)
        self._serve("GET")

    def do_POST(self) -> None:  # noqa: N802
        self._serve("POST")

    def do_PUT(self) -> None:  # noqa: N802
        self._serve("PUT")

    def do_DELETE(self) -> None:  # noqa: N802
        self._serve("DELETE")
