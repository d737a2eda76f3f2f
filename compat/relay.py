"""The recording relay of `python -m compat diff`: fakekafka's proxy (fakekafka/proxy/server.py) in front of
one broker, with what the diff adds on top.

    relay = RelayGroup()
    bootstrap = relay.front("127.0.0.1:9092")   # the proxy's bootstrap listener; give this to the client
    relay.tag = "scenario-a"                     # every request read from now on carries this tag
    ...
    exchanges = relay.close()                    # [Exchange], in the order the requests arrived

The proxy forwards the frames unchanged and gives every upstream broker a listener, rewriting the broker
addresses in Metadata, FindCoordinator and DescribeCluster answers, so that a client stays on the relay
after its first Metadata. On top of it:

- each request is recorded as it arrives (`ProxyServer.intercept`), tagged with the scenario running then;
  its answer is filled in when the upstream gives it, the broker's own answer, before any rewriting (none:
  Produce acks=0, or the connection closed first);
- with `caps` (API key -> (min, max) version), ApiVersions answers are narrowed to those ranges
  (`ProxyServer.answer_edits`), so that a client asks the reference broker with the versions the broker under
  test serves and the two request streams can be paired; a newer ApiVersions request is answered here as a
  broker without that version would (and marked `answered_by_relay`); with `features` (feature name -> the
  highest level the broker under test finalizes) so are the finalized features: a client that saw Kafka's
  transaction.version 2 where the broker under test finalizes less would speak transactions v2 (KIP-890:
  partitions added by Produce v12+) over narrowed versions, which Kafka refuses;
- connections the proxy closed for a reason (a malformed frame, an upstream it could not reach) are `errors`.

A group is meant for one client session (one compat lane): its listeners see only that session's
connections, so the recording is that session's traffic and nothing else. Its proxy runs on a thread of its own.
"""

from __future__ import annotations

import itertools
import threading
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from fakekafka.net.loop_thread import LoopThread
from fakekafka.proxy.server import ProxyServer
from fakekafka.wire import ApiKey
from fakekafka.wire.protocol import encode_response

if TYPE_CHECKING:
    from fakekafka.observe.records import RequestRecord
    from fakekafka.proxy.exchange import Exchange
    from fakekafka.proxy.frames import RequestHead

__all__ = ["Exchange", "RelayGroup", "cap_versions"]

UNSUPPORTED_VERSION = 35
_ERROR_EVENTS = ("connection_closed", "upstream_unreachable")


@dataclass
class Exchange:
    """One request and the response it got (None: none came, e.g. Produce acks=0, or the connection closed)."""

    conn: int
    seq: int
    tag: str
    api_key: int
    api_version: int
    correlation_id: int
    client_id: str | None
    request: bytes  # the frame without its size prefix
    response: bytes | None = None
    t_request: float = 0.0
    t_response: float = 0.0
    meta: dict[str, Any] = field(default_factory=dict)


def cap_versions(body: Any, caps: dict[int, tuple[int, int]], features: dict[str, int] | None = None) -> bool:
    """Narrows a decoded ApiVersions answer to the ranges in `caps` (APIs outside them are dropped) and, with
    `features`, its finalized features to those levels (features not named are dropped); True if anything
    changed."""
    changed = False
    if features is not None and getattr(body, "finalized_features", None):
        finalized = []
        for f in body.finalized_features:
            if f.name not in features or features[f.name] < f.min_version_level:
                changed = True
                continue
            if f.max_version_level > features[f.name]:
                f.max_version_level, changed = features[f.name], True
            finalized.append(f)
        body.finalized_features = finalized
    keep = []
    for k in body.api_keys:
        lo, hi = caps.get(k.api_key, (0, -1))
        lo, hi = max(lo, k.min_version), min(hi, k.max_version)
        if lo > hi:
            changed = True
            continue
        if (lo, hi) != (k.min_version, k.max_version):
            k.min_version, k.max_version = lo, hi
            changed = True
        keep.append(k)
    body.api_keys = keep
    return changed


class RelayGroup:
    """A proxy in front of one session's broker, and what went through it."""

    def __init__(self, tag: str = "", caps: dict[int, tuple[int, int]] | None = None,
                 features: dict[str, int] | None = None) -> None:
        self.tag = tag
        self.caps = caps
        self.features = features
        self.exchanges: list[Exchange] = []
        self.errors: list[str] = []
        self._lock = threading.Lock()
        self._conn_ids: dict[str, int] = {}
        self._seq = itertools.count(1)
        self._server: ProxyServer | None = None
        self._thread: LoopThread | None = None
        self._closed = False

    # --- API (any thread but the proxy's) ----------------------------------------------------------------
    def front(self, bootstrap: str) -> str:
        """Starts the proxy in front of `bootstrap`; returns its bootstrap address, to give to the client."""
        if self._server is not None:
            raise RuntimeError("a relay group fronts one broker")
        server = ProxyServer(bootstrap)
        server.intercept = self._arrived
        if self.caps is not None:
            server.answer_edits[ApiKey.API_VERSIONS] = self._narrow
        server.add_request_listener(self._answered)
        server.bind()
        self._thread = LoopThread("compat-relay").start()
        self._thread.submit(server.start()).result(10)
        self._server = server
        return server.bootstrap_servers

    def snapshot(self) -> list[Exchange]:
        with self._lock:
            return list(self.exchanges)

    def close(self) -> list[Exchange]:
        """Stops listening, closes every connection; returns the exchanges in request order."""
        if not self._closed and self._thread is not None and self._server is not None:
            self._closed = True
            server = self._server
            self.errors += [f"{e.kind}: {e.details}" for e in list(server.events) if e.kind in _ERROR_EVENTS]
            try:
                self._thread.submit(server.stop()).result(30)
            except Exception as e:  # noqa: BLE001 - closing is best effort
                self.errors.append(f"shutdown: {type(e).__name__}: {e}")
            self._thread.stop()
        return self.snapshot()

    def __enter__(self) -> RelayGroup:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # --- the proxy's hooks, on its loop -------------------------------------------------------------------
    def _arrived(self, head: RequestHead, frame: memoryview, connection: str) -> tuple[Exchange, bytes | None]:
        """Records the request with the tag of now; answers an ApiVersions newer than the caps itself."""
        conn = self._conn_ids.setdefault(connection, len(self._conn_ids) + 1)
        ex = Exchange(conn, 0, self.tag, head.api_key, head.api_version, head.correlation_id, head.client_id,
                      bytes(frame), None, time.time())
        with self._lock:
            ex.seq = next(self._seq)
            self.exchanges.append(ex)
        return ex, self._refuse(ex)

    def _refuse(self, ex: Exchange) -> bytes | None:
        """An ApiVersions request newer than the caps is answered as a broker without that version answers it
        (UNSUPPORTED_VERSION in v0, with its own ApiVersions range: KIP-511), so the client retries with a
        version both brokers speak; the exchange is marked `answered_by_relay` and left out of comparisons."""
        if self.caps is None or ex.api_key != ApiKey.API_VERSIONS or ApiKey.API_VERSIONS not in self.caps:
            return None
        lo, hi = self.caps[ApiKey.API_VERSIONS]
        if ex.api_version <= hi:
            return None
        ex.meta["answered_by_relay"] = True
        body = {"error_code": UNSUPPORTED_VERSION,
                "api_keys": [{"api_key": ApiKey.API_VERSIONS, "min_version": lo, "max_version": hi}]}
        return encode_response(ApiKey.API_VERSIONS, 0, ex.correlation_id, body)

    def _narrow(self, _head: RequestHead, body: Any) -> bool:
        return body.error_code == 0 and cap_versions(body, self.caps or {}, self.features)

    def _answered(self, _record: RequestRecord, exchange: Exchange) -> None:
        """The broker's own answer (or, for a request answered here, the answer sent) goes on the exchange."""
        ex = exchange.note
        if isinstance(ex, Exchange):
            ex.response = exchange.upstream_response_frame or exchange.response_frame
            ex.t_response = time.time()
