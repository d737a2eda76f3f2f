"""`fakekafka.Proxy`: a protocol-aware proxy in front of any Kafka-compatible cluster, steered with the same
fault methods as `fakekafka.Cluster`, recording in the same format.

    with fakekafka.Proxy("broker1:9092,broker2:9092") as proxy:      # or Proxy(cluster), Proxy(kafka_real)
        producer = Producer({"bootstrap.servers": proxy.bootstrap_servers})
        proxy.inject_error("Produce", "NOT_LEADER_OR_FOLLOWER", count=2)
        proxy.kill_broker(2)                                          # unreachable through the proxy
        proxy.intercept("Produce", fakekafka.Drop(after=True))        # the same hooks as Cluster.intercept

    with fakekafka.Proxy(kafka, chaos=fakekafka.Chaos(seed=7, profile="network")) as proxy:
        run_the_app(proxy.bootstrap_servers)
        proxy.assert_invariants()                                     # the upstream's logs checked

The asyncio side is `fakekafka.proxy.server.ProxyServer`; `fakekafka proxy` is the command line.
"""

from __future__ import annotations

import collections
import os
import ssl
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

from fakekafka.chaos import ChaosFailure, Schedule, Violation
from fakekafka.model.faults import Fault, FaultSteering, hook_of
from fakekafka.model.hooks import Action, Hook, Intercepted
from fakekafka.net.loop_thread import LoopThread
from fakekafka.observe.records import RequestRecord
from fakekafka.proxy.chaos import ProxyChaos, attach_proxy_chaos
from fakekafka.proxy.observe import FrameRecorder, Summary
from fakekafka.proxy.server import BOOTSTRAP, MAX_BROKERS, ProxyEvent, ProxyServer, Upstream, proxy_config

if TYPE_CHECKING:
    from fakekafka.proxy.registry import RegistryProxy

__all__ = ["BOOTSTRAP", "Proxy", "ProxyEvent", "ProxyServer", "Upstream"]

T = TypeVar("T")


def _upstream_text(upstream: Any) -> str:
    if isinstance(upstream, str):
        return upstream
    if isinstance(upstream, (list, tuple)):
        return ",".join(map(str, upstream))
    servers = getattr(upstream, "bootstrap_servers", None)
    if isinstance(servers, str) and servers:
        return servers
    raise TypeError(f"the upstream is HOST:PORT[,HOST:PORT] or a cluster with bootstrap_servers, not {upstream!r}")


class Proxy(FaultSteering):
    """A proxy on a background event loop (its own thread, or a `LoopThread` shared with fake clusters).

    `record=DIR` writes the fake cluster's Parquet recording (what `fakekafka analyze` reads), `record_frames`
    adds every exchange's raw frames under DIR/frames (what `fakekafka replay` resends), `summary=True` keeps
    per-API counts, latencies and errors (`summary_table()`). `client_ssl`/`upstream_ssl` are TLS contexts for
    the clients' side and the upstream's side; SASL passes through untouched. `chaos=` (a `fakekafka.Chaos`, a
    `Schedule` to replay, or a seed) draws faults on the requests crossing it, as `Cluster(chaos=...)` does, of
    the kinds a proxy can produce (errors, latency, dropped connections); `intercept` adds hooks.

    `config` takes the broker's connection limits by Kafka's names, applied to the proxy's own client connections
    (all its listeners counted together, as one broker's): `max.connections` (more wait unread, as Kafka's
    acceptor waits for a slot), `max.connections.per.ip` and `max.connections.per.ip.overrides` (more are
    closed at once), `connections.max.idle.ms` (default 600000: idle ones are closed), `socket.request.max.bytes`.
    `max_brokers` bounds the upstream brokers the proxy binds a listener for (fakekafka's own, default 1000):
    answers naming more get BROKER_NOT_AVAILABLE."""

    def __init__(self, upstream: Any, *, host: str = "127.0.0.1", port: int = 0, advertised_host: str | None = None,
                 record: str | os.PathLike[str] | None = None, record_frames: bool = False, summary: bool = False,
                 client_ssl: ssl.SSLContext | None = None, upstream_ssl: ssl.SSLContext | None = None,
                 keep_requests: int = 10_000, config: dict[str, str] | None = None,
                 max_brokers: int = MAX_BROKERS, chaos: Any = None) -> None:
        decode = record is not None or summary
        self.server = ProxyServer(_upstream_text(upstream), host, port, advertised_host=advertised_host,
                                  client_ssl=client_ssl, upstream_ssl=upstream_ssl, decode_answers=decode,
                                  config=proxy_config(config), max_brokers=max_brokers)
        self.chaos: ProxyChaos | None = attach_proxy_chaos(self.server, chaos)
        self.schema_registry: RegistryProxy | None = None
        """The forwarded Schema Registry `fakekafka ctl`'s registry commands steer (`fakekafka proxy
        --schema-registry-upstream` sets it; `RegistryProxy(url, chaos=proxy)` draws chaos with this proxy's run)."""
        self.request_log: collections.deque[RequestRecord] = collections.deque(maxlen=keep_requests)
        self.server.add_request_listener(lambda record, _exchange: self.request_log.append(record), frames=False)
        self.recorder = None
        self.frame_recorder: FrameRecorder | None = None
        self.summary: Summary | None = Summary() if summary else None
        if record is not None:
            from fakekafka.observe.recording import RequestRecorder
            recorder = RequestRecorder(record)
            self.recorder = recorder
            self.server.add_request_listener(lambda r, _e: recorder(r))
            if record_frames:
                self.frame_recorder = FrameRecorder(record)
                self.server.add_request_listener(self.frame_recorder)
        elif record_frames:
            raise ValueError("record_frames needs record=DIR")
        if self.summary is not None:
            self.server.add_request_listener(self.summary)
        self._thread: LoopThread | None = None
        self._owns_thread = False

    @property
    def bootstrap_servers(self) -> str:
        return self.server.bootstrap_servers

    # --- lifecycle ---------------------------------------------------------------------------------------
    def start(self, loop_thread: LoopThread | None = None) -> Proxy:
        if self._thread is not None:
            raise RuntimeError("proxy already started")
        self.server.bind()
        self._owns_thread = loop_thread is None
        self._thread = LoopThread("fakekafka-proxy").start() if loop_thread is None else loop_thread
        try:
            self._thread.submit(self.server.start()).result(30)
        except BaseException:
            if self._owns_thread:
                self._thread.stop()
            self._thread = None
            raise
        return self

    def stop(self) -> None:
        thread, self._thread = self._thread, None
        if thread is None:
            return
        thread.submit(self.server.stop()).result(30)
        if self._owns_thread:
            thread.stop()
        if self.frame_recorder is not None:
            self.frame_recorder.close()
        if self.recorder is not None:
            self.recorder.close()

    def __enter__(self) -> Proxy:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def call(self, fn: Callable[[], T]) -> T:
        """Runs `fn` on the proxy's loop (where its state lives)."""
        thread = self._thread
        if thread is None or thread.in_loop():
            return fn()

        async def run() -> T:
            return fn()
        return thread.submit(run()).result(30)

    def _run(self, coro_fn: Callable[[], Any]) -> Any:
        if self._thread is None:
            raise RuntimeError("the proxy is not running")
        return self._thread.submit(coro_fn()).result(30)

    # --- steering: the fault methods are FaultSteering's, shared with fakekafka.Cluster ----------------------
    def _fault(self, fault: Fault) -> Fault:
        self.call(lambda: self.server.faults.add(fault))
        return fault

    def clear_faults(self) -> None:
        self.call(self.server.faults.clear)

    # --- hooks and chaos: the fake cluster's language (fakekafka/model/hooks.py) --------------------------------
    def intercept(self, api: int | str | None, fn: Callable[[Intercepted], Action | None] | Action, *,
                  keep: bool = False, broker: int | None = None, topic: str | None = None,
                  partition: int | None = None, client_id: str | None = None) -> Hook:
        """As `Cluster.intercept`: the next matching request crossing the proxy is handed to `fn`, which returns
        what happens to it (`Fail(...)`: answered by the proxy; `Fail(..., after=True)`: forwarded, the answer
        replaced; `Drop()`/`Drop(after=True)`; `Answer({...})`; `Edit(fn)`; `Delay(ms)`; `Throttle(ms)`;
        `Hold(until)`) or None to let it through. `broker` is the upstream node id (-1: the bootstrap listener)."""
        hook = hook_of(api, fn, keep=keep, broker=broker, topic=topic, partition=partition, client_id=client_id)
        return self.call(lambda: self.server.hooks.add(hook))

    def remove_hooks(self) -> None:
        """Removes every hook added with `intercept`."""
        self.call(self.server.hooks.clear)

    def chaos_schedule(self) -> Schedule:
        """The chaos schedule applied so far (`Schedule.save` writes it; `Proxy(chaos=schedule)` replays it)."""
        run = self._chaos_run()
        return self.call(run.applied)

    def check_invariants(self) -> list[Violation]:
        """The built-in invariants and the chaos run's app-level ones, checked on the upstream's logs (read from
        the upstream directly, not through the proxy's faults); each violation with its evidence."""
        run = self._chaos_run()
        return run.violations(",".join(map(str, self.server.upstreams)))

    def assert_invariants(self) -> None:
        """Raises `fakekafka.chaos.ChaosFailure` (an AssertionError) naming every violation and the schedule."""
        violations = self.check_invariants()
        if violations:
            raise ChaosFailure(violations, self.chaos_schedule())

    def _chaos_run(self) -> ProxyChaos:
        if self.chaos is None:
            raise RuntimeError("this proxy runs without chaos: Proxy(upstream, chaos=fakekafka.Chaos(seed=N))")
        return self.chaos

    def kill_broker(self, node_id: int) -> None:
        """Makes the upstream broker unreachable through the proxy (its listener closes, connections drop);
        the upstream itself is untouched."""
        self._run(lambda: self.server.kill_broker(node_id))

    def restart_broker(self, node_id: int) -> None:
        self._run(lambda: self.server.restart_broker(node_id))

    # --- what it saw ------------------------------------------------------------------------------------------
    def requests(self) -> list[RequestRecord]:
        """The most recent requests that crossed the proxy, oldest first."""
        return self.call(lambda: list(self.request_log))

    def events(self) -> list[ProxyEvent]:
        return self.call(lambda: list(self.server.events))

    def brokers(self) -> dict[int, tuple[str, int]]:
        """Upstream node id -> (upstream address, the proxy's port for it)."""
        def read() -> dict[int, tuple[str, int]]:
            return {n: (str(u), self.server.listeners[n].port) for n, u in sorted(self.server.nodes.items())
                    if n in self.server.listeners}
        return self.call(read)

    def summary_table(self) -> str:
        if self.summary is None:
            raise RuntimeError("start the proxy with summary=True")
        return self.summary.table()

    def __repr__(self) -> str:
        upstream = ",".join(map(str, self.server.upstreams))
        return f"<fakekafka.Proxy {self.bootstrap_servers if self._thread else '(not started)'} -> {upstream}>"
