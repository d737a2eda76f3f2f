"""A recording relay: a loopback listener in front of a Kafka broker that forwards every frame unchanged
and records what went by, for `python -m compat diff`.

    relay = RelayGroup()
    bootstrap = relay.front("127.0.0.1:9092")   # "127.0.0.1:<relay port>"; give this to the client
    relay.tag = "scenario-a"                     # every request read from now on carries this tag
    ...
    exchanges = relay.close()                    # [Exchange], in the order the requests arrived

Per client connection the relay opens one upstream connection, reads each length-prefixed request frame,
records it and forwards it; responses are read from upstream, matched to their request by correlation id
(a Produce with acks=0 gets none: its exchange keeps `response=None`) and forwarded.

So that a client keeps going through the relay after its first Metadata, the broker addresses in Metadata,
FindCoordinator and DescribeCluster responses are rewritten (with the proxy's own walk,
fakekafka/proxy/rewrite.py; acks=0 is read as the proxy reads it, fakekafka/proxy/frames.py): each upstream
broker gets a listener of its own in this group (created the first time an answer names it), and the answer
names that listener instead. With `caps` (API key -> (min, max) version), ApiVersions answers are narrowed
to those ranges, so that a client asks the reference broker with the versions the broker under test serves and the two
request streams can be paired (a newer ApiVersions request is refused here, as a broker without that version
would), and with `features` (feature name -> the highest level the broker under test finalizes) so are the
finalized features: a client that saw Kafka's transaction.version 2 where the broker under test finalizes
less (`fakekafka serve --feature transaction.version=1`, or before it served version 2) speaks transactions
v2 (KIP-890: partitions added by Produce v12+) over narrowed versions, which Kafka refuses. Only these responses are
re-encoded (with `wire`); everything else passes as the bytes the broker
sent. The recorded response is always the broker's original.

A group is meant for one client session (one compat lane): its listeners see only that session's
connections, so the recording is that session's traffic and nothing else. Its event loop runs on a
thread of its own.
"""

from __future__ import annotations

import asyncio
import itertools
import struct
import threading
import time
from dataclasses import dataclass, field
from typing import Any

from fakekafka.proxy.frames import FrameError, produce_acks, read_request_head
from fakekafka.proxy.rewrite import rewrite_addresses
from wire.protocol import DecodeError, decode_request_header, decode_response, encode_response

__all__ = ["Exchange", "RelayGroup", "REWRITTEN_APIS"]

HOST = "127.0.0.1"
REWRITTEN_APIS = frozenset({3, 10, 60, 18})  # Metadata, FindCoordinator, DescribeCluster; ApiVersions (caps)
_HEAD = struct.Struct(">hhi")


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
    upstream: str = ""  # host:port of the broker it went to
    meta: dict[str, Any] = field(default_factory=dict)


def _no_response(ex: Exchange) -> bool:
    """A Produce request with acks=0: the broker sends nothing back."""
    try:
        return produce_acks(ex.request, read_request_head(ex.request)) == 0
    except FrameError:
        return False


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


async def _read_frame(reader: asyncio.StreamReader) -> bytes | None:
    try:
        head = await reader.readexactly(4)
        (n,) = struct.unpack(">i", head)
        return await reader.readexactly(n)
    except (asyncio.IncompleteReadError, ConnectionError):
        return None


class RelayGroup:
    """The listeners of one session, one per upstream broker, and what went through them."""

    def __init__(self, tag: str = "", caps: dict[int, tuple[int, int]] | None = None,
                 features: dict[str, int] | None = None) -> None:
        self.tag = tag
        self.caps = caps
        self.features = features
        self.exchanges: list[Exchange] = []
        self._lock = threading.Lock()
        self._conn_ids = itertools.count(1)
        self._seq = itertools.count(1)
        self._listeners: dict[tuple[str, int], asyncio.Future[tuple[str, int]]] = {}
        self._servers: list[asyncio.AbstractServer] = []
        self._writers: set[asyncio.StreamWriter] = set()
        self._tasks: set[asyncio.Task[Any]] = set()
        self.errors: list[str] = []
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self.loop.run_forever, name="compat-relay", daemon=True)
        self._thread.start()
        self._closed = False

    # --- API (any thread but the loop's) ---------------------------------------------------------------
    def front(self, bootstrap: str) -> str:
        """A bootstrap string naming this group's listeners in front of each address of `bootstrap`."""
        out = []
        for addr in bootstrap.split(","):
            host, port = addr.rsplit(":", 1)
            h, p = asyncio.run_coroutine_threadsafe(self._listener(host, int(port)), self.loop).result(10)
            out.append(f"{h}:{p}")
        return ",".join(out)

    def snapshot(self) -> list[Exchange]:
        with self._lock:
            return list(self.exchanges)

    def close(self) -> list[Exchange]:
        """Stops listening, closes every connection; returns the exchanges in request order."""
        if not self._closed:
            self._closed = True
            try:
                asyncio.run_coroutine_threadsafe(self._shutdown(), self.loop).result(10)
            except Exception as e:  # noqa: BLE001 - closing is best effort
                self.errors.append(f"shutdown: {type(e).__name__}: {e}")
            self.loop.call_soon_threadsafe(self.loop.stop)
            self._thread.join(10)
            if not self._thread.is_alive():
                self.loop.close()
        return self.snapshot()

    def __enter__(self) -> RelayGroup:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # --- inside the loop ------------------------------------------------------------------------------
    async def _listener(self, host: str, port: int) -> tuple[str, int]:
        key = (host, port)
        fut = self._listeners.get(key)
        if fut is None:
            fut = self.loop.create_future()
            self._listeners[key] = fut
            try:
                server = await asyncio.start_server(
                    lambda r, w, up=key: self._serve(r, w, up), HOST, 0)
                self._servers.append(server)
                fut.set_result(server.sockets[0].getsockname()[:2])
            except Exception as e:
                fut.set_exception(e)
                del self._listeners[key]
                raise
        return await asyncio.shield(fut)

    def _mapped(self, host: str, port: int) -> tuple[str, int]:
        fut = self._listeners.get((host, port))
        if fut is not None and fut.done() and not fut.exception():
            return fut.result()
        raise LookupError((host, port))

    async def _serve(self, client_r: asyncio.StreamReader, client_w: asyncio.StreamWriter,
                     upstream: tuple[str, int]) -> None:
        conn = next(self._conn_ids)
        task = asyncio.current_task()
        if task is not None:
            self._tasks.add(task)
        self._writers.add(client_w)
        up_w: asyncio.StreamWriter | None = None
        try:
            up_r, up_w = await asyncio.open_connection(*upstream)
            self._writers.add(up_w)
            pending: dict[int, Exchange] = {}
            back = asyncio.ensure_future(self._responses(up_r, client_w, pending))
            self._tasks.add(back)
            try:
                while True:
                    frame = await _read_frame(client_r)
                    if frame is None:
                        break
                    ex = self._record_request(conn, frame, upstream)
                    refusal = self._refuse(ex)
                    if refusal is not None:  # answered here: the broker never sees it
                        client_w.write(len(refusal).to_bytes(4, "big") + refusal)
                        await client_w.drain()
                        continue
                    if ex is not None and not _no_response(ex):
                        pending[ex.correlation_id] = ex
                    up_w.write(len(frame).to_bytes(4, "big") + frame)
                    await up_w.drain()
                if pending:  # let the broker answer what is in flight (the client may have half-closed)
                    await asyncio.wait([back], timeout=2)
            finally:
                back.cancel()
                self._tasks.discard(back)
        except asyncio.CancelledError:
            pass
        except (ConnectionError, OSError) as e:
            self.errors.append(f"connection {conn} to {upstream}: {type(e).__name__}: {e}")
        finally:
            for w in (client_w, up_w):
                if w is not None:
                    self._writers.discard(w)
                    w.close()
            if task is not None:
                self._tasks.discard(task)

    def _refuse(self, ex: Exchange | None) -> bytes | None:
        """An ApiVersions request newer than the caps is answered as a broker without that version answers it
        (UNSUPPORTED_VERSION in v0, with its own ApiVersions range: KIP-511), so the client retries with a
        version both brokers speak; the exchange is marked `answered_by_relay` and left out of comparisons."""
        if ex is None or self.caps is None or ex.api_key != 18 or 18 not in self.caps:
            return None
        lo, hi = self.caps[18]
        if ex.api_version <= hi:
            return None
        ex.meta["answered_by_relay"] = True
        body = {"error_code": 35, "api_keys": [{"api_key": 18, "min_version": lo, "max_version": hi}]}
        ex.response = encode_response(18, 0, ex.correlation_id, body)[4:]
        return ex.response

    def _record_request(self, conn: int, frame: bytes, upstream: tuple[str, int]) -> Exchange | None:
        if len(frame) < _HEAD.size:
            return None
        api_key, version, corr = _HEAD.unpack_from(frame)
        client_id = None
        try:
            client_id = decode_request_header(frame)[0].client_id
        except DecodeError:
            pass
        ex = Exchange(conn, 0, self.tag, api_key, version, corr, client_id, bytes(frame), None, time.time(),
                      upstream=f"{upstream[0]}:{upstream[1]}")
        with self._lock:
            ex.seq = next(self._seq)
            self.exchanges.append(ex)
        return ex

    async def _responses(self, up_r: asyncio.StreamReader, client_w: asyncio.StreamWriter,
                         pending: dict[int, Exchange]) -> None:
        while True:
            frame = await _read_frame(up_r)
            if frame is None:
                client_w.close()
                return
            out = frame
            if len(frame) >= 4:
                corr = int.from_bytes(frame[:4], "big", signed=True)
                ex = pending.pop(corr, None)
                if ex is not None:
                    ex.response = bytes(frame)
                    ex.t_response = time.time()
                    if ex.api_key in REWRITTEN_APIS:
                        out = await self._rewrite(ex, frame)
            client_w.write(len(out).to_bytes(4, "big") + out)
            await client_w.drain()

    async def _rewrite(self, ex: Exchange, frame: bytes) -> bytes:
        try:
            corr, body = decode_response(ex.api_key, ex.api_version, frame)
        except DecodeError as e:
            self.errors.append(f"cannot decode {ex.api_key} v{ex.api_version} to rewrite it: {e}")
            return frame
        if ex.api_key == 18:
            if self.caps is None or body.error_code != 0 or not cap_versions(body, self.caps, self.features):
                return frame
            return encode_response(ex.api_key, ex.api_version, corr, body)[4:]
        addresses: set[tuple[str, int]] = set()
        rewrite_addresses(body, lambda _node, h, p: (addresses.add((h, p)), (h, p))[1])
        for h, p in addresses:
            await self._listener(h, p)
        if not rewrite_addresses(body, lambda _node, h, p: self._mapped(h, p)):
            return frame
        return encode_response(ex.api_key, ex.api_version, corr, body)[4:]

    async def _shutdown(self) -> None:
        for s in self._servers:
            s.close()
        for w in list(self._writers):
            w.close()
        for t in list(self._tasks):
            t.cancel()
        await asyncio.sleep(0)
