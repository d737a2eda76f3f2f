"""Start and stop brokers (fakekafka, tansu, Apache Kafka) as subprocesses on free loopback ports, for the
benchmarks.

Every broker is its own process group on 127.0.0.1, stopped by PID (SIGTERM, then SIGKILL after a grace
period); `stop_all()` runs at exit for anything still alive. Nothing here waits without a deadline.
`kafka` is Apache Kafka 4.x as a JVM in KRaft mode (fakekafka.testing.apache_kafka.KafkaCluster, one combined
node, jars from `.ci/install.sh`): its ready time is format + start until Metadata and FindCoordinator
answer, so it has no separate "ready line".
"""

from __future__ import annotations

import atexit
import os
import select
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field

__all__ = ["BrokerProcess", "free_port", "kafka_available", "start_broker", "stop_all", "tansu_binary",
           "tcprelay_binary"]

HOST = "127.0.0.1"
_live: list[BrokerProcess] = []


def free_port() -> int:
    """A port the kernel just handed out on loopback (closed again, so it is free for a moment)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((HOST, 0))
        return s.getsockname()[1]


def tansu_binary() -> str | None:
    """$FAKEKAFKA_BIN/tansu, else ~/.cache/fakekafka/bin/tansu, else `tansu` on PATH (None if none)."""
    for d in (os.environ.get("FAKEKAFKA_BIN"), os.path.expanduser("~/.cache/fakekafka/bin")):
        if d and os.access(os.path.join(d, "tansu"), os.X_OK):
            return os.path.join(d, "tansu")
    return shutil.which("tansu")


class GoMissing(RuntimeError):
    """No `go` on PATH to build a bench tool with."""


def go_tool(name: str) -> str:
    """bench/<name> built with `go build` into ~/.cache/fakekafka/bin (again when its source is newer); raises
    GoMissing without Go and RuntimeError (with the build's output) when the build fails."""
    src = os.path.join(os.path.dirname(os.path.abspath(__file__)), name)
    out = os.path.expanduser(f"~/.cache/fakekafka/bin/{name}")
    newest = max(os.path.getmtime(os.path.join(src, f)) for f in os.listdir(src))
    if os.access(out, os.X_OK) and os.path.getmtime(out) >= newest:
        return out
    go = shutil.which("go")
    if go is None:
        raise GoMissing(name)
    os.makedirs(os.path.dirname(out), exist_ok=True)
    done = subprocess.run([go, "build", "-o", out, "."], cwd=src, capture_output=True, text=True, timeout=300)
    if done.returncode != 0:
        raise RuntimeError(f"building bench/{name} failed:\n{done.stderr}")
    return out


def tcprelay_binary() -> str | None:
    """bench/tcprelay (go_tool); None without Go or when the build fails (its output on stderr)."""
    try:
        return go_tool("tcprelay")
    except GoMissing:
        return None
    except RuntimeError as e:
        print(e, file=sys.stderr)
        return None


@dataclass
class BrokerProcess:
    kind: str
    port: int
    proc: subprocess.Popen[bytes]
    spawned_at: float  # perf_counter just before Popen
    accept_s: float = float("nan")  # spawn -> port accepts a TCP connection
    ready_line_s: float = float("nan")  # spawn -> the broker's "ready" line on stdout
    output: bytearray = field(default_factory=bytearray)
    on_stop: Callable[[], None] | None = None  # stops what the process alone does not (Kafka's data dirs)
    relay_listener: int | None = None  # the RELAY listener's own port (start_broker's relay_port)

    @property
    def bootstrap(self) -> str:
        return f"{HOST}:{self.port}"

    @property
    def pid(self) -> int:
        return self.proc.pid

    def cpu_seconds(self) -> float:
        """CPU time the broker's live threads have used so far, in seconds (Linux /proc; NaN elsewhere).

        Sums /proc/PID/task/*/schedstat (nanoseconds) over the threads, so multi-threaded brokers count in
        full; falls back to utime+stime from /proc/PID/stat (10 ms ticks).
        """
        total = 0
        try:
            for tid in os.listdir(f"/proc/{self.proc.pid}/task"):
                try:
                    with open(f"/proc/{self.proc.pid}/task/{tid}/schedstat") as f:
                        total += int(f.read().split()[0])
                except (OSError, ValueError, IndexError):
                    pass  # the thread ended meanwhile
            if total:
                return total / 1e9
        except OSError:
            pass
        try:
            with open(f"/proc/{self.proc.pid}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
            return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
        except (OSError, ValueError, IndexError):
            return float("nan")

    def stop(self, grace: float = 5.0) -> None:
        if self.on_stop is not None:
            self.on_stop()
            self.on_stop = None
        if self.proc.poll() is None:
            try:
                os.kill(self.proc.pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
            try:
                self.proc.wait(grace)
            except subprocess.TimeoutExpired:
                try:
                    os.kill(self.proc.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
                self.proc.wait(grace)
        if self.proc.stdout is not None and not self.proc.stdout.closed:
            self.proc.stdout.close()
        if self in _live:
            _live.remove(self)


def _command(kind: str, port: int, wrap: list[str] | None, upstream: str | None = None) -> tuple[list[str], bytes]:
    if kind == "proxy":
        if upstream is None:
            raise ValueError("a proxy needs its upstream's bootstrap address")
        cmd = [sys.executable, "-m", "fakekafka", "proxy", "--upstream", upstream, "--listen", f"{HOST}:{port}",
               "--log-level", "warning"]
        ready = b"fakekafka proxy ready:"
    elif kind == "relay":
        binary = tcprelay_binary()
        if binary is None or upstream is None:
            raise RuntimeError("a relay needs Go (to build bench/tcprelay) and its upstream's address")
        cmd, ready = [binary, f"{HOST}:{port}", upstream], b"tcprelay ready:"
    elif kind == "fakekafka":
        cmd = [sys.executable, "-m", "fakekafka", "serve", "--host", HOST, "--port", str(port),
               "--log-level", "warning"]
        ready = b"fakekafka ready:"
    elif kind == "tansu":
        binary = tansu_binary()
        if binary is None:
            raise RuntimeError("tansu not found: run `eval \"$(bash .ci/install.sh)\"` (sets FAKEKAFKA_BIN)")
        url = f"tcp://{HOST}:{port}"
        cmd = [binary, "broker", "--listener-url", url, "--advertised-listener-url", url,
               "--storage-engine", "memory://tansu/"]
        ready = b"ready in"
    else:
        raise ValueError(f"unknown broker kind {kind!r}")
    return (wrap or []) + cmd, ready


def _accepts(port: int) -> bool:
    try:
        with socket.create_connection((HOST, port), timeout=0.05):
            return True
    except OSError:
        return False


def _drain(b: BrokerProcess) -> None:
    """Keeps reading the broker's output so it never blocks on a full pipe (keeps the last 64 KiB)."""
    try:
        while chunk := b.proc.stdout.read1(65536):  # type: ignore[union-attr]
            b.output += chunk
            del b.output[:-65536]
    except (OSError, ValueError):
        pass


def start_broker(kind: str, *, timeout: float = 20.0, wrap: list[str] | None = None,
                 cwd: str | None = None, upstream: str | None = None,
                 configs: dict[str, str] | None = None, args: list[str] | None = None,
                 port: int | None = None, relay_port: int | None = None,
                 stock_jvm: bool = False) -> BrokerProcess:
    """Spawns `kind` on a free port (or `port`) and returns once it has printed its ready line and accepts
    connections.

    `kind` "proxy" is `fakekafka proxy` in front of `upstream` (HOST:PORT), "relay" bench/tcprelay (a
    byte-for-byte TCP relay) in front of it. `relay_port`: a fakekafka or kafka broker gets a second
    plaintext listener, RELAY, which Metadata advertises at that port (`relay_listener` gives its own address,
    for the relay to forward to). `wrap` prefixes the command (e.g.
    a profiler). `configs`: broker configs by Kafka's names, for fakekafka and kafka (the same settings on
    both); `args` go after fakekafka's own (e.g. `--data-dir DIR`). Raises RuntimeError (after stopping it)
    if the broker exits or is not ready within `timeout` seconds. `stock_jvm`: Kafka with its own scripts'
    JVM settings (1 GiB heap, G1) rather than the test launcher's 512 MiB serial-collector heap.
    """
    if kind == "kafka":
        return _start_kafka(timeout, configs, relay_port, stock_jvm)
    port = port or free_port()
    cmd, ready = _command(kind, port, wrap, upstream)
    relay_listener = None
    if relay_port is not None:
        if kind != "fakekafka":
            raise ValueError(f"a relay listener is for fakekafka and kafka, not {kind}")
        relay_listener = free_port()
        cmd += ["--listeners", f"PLAINTEXT://{HOST}:{port},RELAY://{HOST}:{relay_listener}",
                "--advertised-listeners", f"PLAINTEXT://{HOST}:{port},RELAY://{HOST}:{relay_port}",
                "--listener-security-protocol-map", "PLAINTEXT:PLAINTEXT,RELAY:PLAINTEXT"]
    if configs:
        if kind != "fakekafka":
            raise ValueError(f"configs are for fakekafka and kafka, not {kind}")
        cmd += [arg for k, v in configs.items() for arg in ("--config", f"{k}={v}")]
    cmd += args or []
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    if kind in ("fakekafka", "proxy") and "PYTHONPYCACHEPREFIX" not in env:
        # bytecode cached outside the work tree (this machine sets PYTHONDONTWRITEBYTECODE, which would make
        # every start recompile its sources, unlike an installed package)
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        env["PYTHONPYCACHEPREFIX"] = os.path.expanduser("~/.cache/fakekafka/pycache")
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                            start_new_session=True, env=env, cwd=cwd)
    b = BrokerProcess(kind, port, proc, t0, relay_listener=relay_listener)
    _live.append(b)
    fd = proc.stdout.fileno()  # type: ignore[union-attr]
    os.set_blocking(fd, False)
    deadline = t0 + timeout
    try:
        while time.perf_counter() < deadline:
            if b.accept_s != b.accept_s and _accepts(port):  # NaN: not yet seen
                b.accept_s = time.perf_counter() - t0
            r, _, _ = select.select([fd], [], [], 0.001)
            if r:
                chunk = os.read(fd, 65536)
                if chunk:
                    b.output += chunk
                    if b.ready_line_s != b.ready_line_s and ready in b.output:
                        b.ready_line_s = time.perf_counter() - t0
            if proc.poll() is not None:
                raise RuntimeError(f"{kind} exited with {proc.returncode}: {b.output.decode(errors='replace')}")
            if b.accept_s == b.accept_s and b.ready_line_s == b.ready_line_s:
                os.set_blocking(fd, True)
                threading.Thread(target=_drain, args=(b,), daemon=True).start()
                return b
        raise RuntimeError(f"{kind} not ready after {timeout:.0f}s: {b.output.decode(errors='replace')}")
    except BaseException:
        b.stop()
        raise


def kafka_available() -> bool:
    from fakekafka.testing.apache_kafka import kafka_lib
    return kafka_lib() is not None


def _start_kafka(timeout: float, configs: dict[str, str] | None = None,
                 relay_port: int | None = None, stock_jvm: bool = False) -> BrokerProcess:
    from fakekafka.testing.apache_kafka import KafkaCluster
    relay = {"listeners": ("RELAY:PLAINTEXT",), "advertised": {"RELAY": [relay_port]}} if relay_port else {}
    cluster = KafkaCluster(1, dict(configs or {}), timeout=max(timeout, 120), stock_jvm=stock_jvm,
                           **relay)  # type: ignore[arg-type]
    t0 = time.perf_counter()
    cluster.start()
    b = BrokerProcess("kafka", int(cluster.bootstrap_servers.rsplit(":", 1)[1]), cluster.procs[0], t0,
                      on_stop=cluster.stop, relay_listener=cluster.listener_ports["RELAY"][0] if relay_port else None)
    b.accept_s = b.ready_line_s = time.perf_counter() - t0
    _live.append(b)
    return b


def stop_all() -> None:
    for b in list(_live):
        b.stop()


atexit.register(stop_all)


def _terminated(signum: int, _frame: object) -> None:
    raise SystemExit(128 + signum)  # atexit's stop_all then stops the brokers (a plain SIGTERM would orphan them)


if threading.current_thread() is threading.main_thread() and signal.getsignal(signal.SIGTERM) is signal.SIG_DFL:
    signal.signal(signal.SIGTERM, _terminated)
