"""What the pytest plugin's per-test cluster costs, against starting a broker process per test, and a leak check.

    python bench/fixture.py [--tests N] [--peer-runs R] [--body produce|connect] [--brokers tansu,fakekafka,kafka]
                            [--json out.json]

1. Plugin fixture: a generated test module with N tests (default 1000), each taking the `kafka` fixture and
   doing one small thing (`--body`), runs under pytest in a subprocess. A small plugin there times, per test,
   the setup of the `kafka` fixture (pytest_fixture_setup, including pytest's own cost per fixture and that of
   other plugins' hooks) and its teardown (the generator teardown that stops the cluster, timed by finalizers
   put on either side of it). It also times pytest's whole setup and teardown phases. The same N tests without
   the fixture run as a control. Then `Cluster().start(); stop()` (a loop thread of its own) runs N times in
   this process.
2. A broker process per test: spawn, poll with a Kafka ApiVersions v0 request until the broker answers, then
   SIGTERM and wait for the exit. Median over R runs (default 20, after one warm-up run) for tansu, for
   `python -m fakekafka serve` and for Apache Kafka (a JVM in KRaft mode: format, start until Metadata and
   FindCoordinator answer, controlled shutdown). Between the runs, the fixture's own work
   (`Cluster().start(loop_thread)` on a shared loop with pre-bound listeners, `stop(wait=False)`) is timed in
   this process.
3. Leak check in the pytest process: RSS, Python threads, OS threads, open fds and sockets after test 10 and
   after the last test (gc.collect() before each sample), and the number of fakekafka Cluster objects still
   alive and fakekafka-loop threads still running at the end. Threads, fds or sockets that grow, live
   clusters, or RSS growth beyond the control run's plus --rss-bound-kib per test are flagged as a leak.

Goal (the issue's): fixture setup+teardown ≤ 10 ms median and ≥ 100× faster than a peer started per test.
See bench/README.md.
"""

from __future__ import annotations

import argparse
import gc
import inspect
import json
import math
import os
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)

import _peers  # noqa: E402

from fakekafka.testing.embedded import Cluster, LoopThread  # noqa: E402

GOAL_MEDIAN_MS = 10.0
GOAL_RATIO = 100.0

# --- the raw ApiVersions probe (its source is also pasted into the generated test module) ----------------------
def api_versions(host: str, port: int, timeout: float = 1.0) -> int:
    """Sends ApiVersions v0 and returns the response's error code (raises OSError if no answer)."""
    client_id = b"fixture-bench"
    body = struct.pack(">hhih", 18, 0, 7, len(client_id)) + client_id
    with socket.create_connection((host, port), timeout=timeout) as s:
        s.sendall(struct.pack(">i", len(body)) + body)
        data = b""
        size = None
        while size is None or len(data) < size:
            chunk = s.recv(65536)
            if not chunk:
                raise ConnectionError("closed before the whole response")
            data += chunk
            if size is None and len(data) >= 4:
                (size,) = struct.unpack(">i", data[:4])
                data = data[4:]
    correlation_id, error_code = struct.unpack(">ih", data[:6])
    if correlation_id != 7:
        raise ConnectionError(f"correlation id {correlation_id}, wanted 7")
    return error_code


PROBE = "import socket\nimport struct\n\n\n" + inspect.getsource(api_versions)

# --- the pytest side -------------------------------------------------------------------------------------------
TIMER_PLUGIN = '''
"""Loaded with -p: times the fakekafka fixtures per test and samples the process for leaks."""
import gc
import json
import os
import threading
import time

import pytest

OUT = os.environ["FIXTURE_BENCH_OUT"]
SAMPLE_AT = int(os.environ.get("FIXTURE_BENCH_SAMPLE_AT", "10"))
FIXTURES = {"fakekafka_cluster", "fakekafka", "kafka"}  # the peer module's own `kafka` fixture too
rows = []  # per test: fixture setup, fixture teardown, pytest setup phase, pytest teardown phase (seconds)
cur = {}
samples = {}
state = {"done": 0, "total": 0}


def proc_sample():
    rss = 0
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                rss = int(line.split()[1]) * 1024
    fds = os.listdir("/proc/self/fd")
    sockets = 0
    for fd in fds:
        try:
            sockets += os.readlink(f"/proc/self/fd/{fd}").startswith("socket:")
        except OSError:
            pass
    return {"rss": rss, "fds": len(fds), "sockets": sockets, "threads": threading.active_count(),
            "os_threads": len(os.listdir("/proc/self/task"))}


try:
    from fakekafka.testing.pytest_plugin import _LOOP
except ImportError:
    _LOOP = None


def pytest_configure(config):
    state["config"] = config


def pytest_collection_finish(session):
    state["total"] = len(session.items)


@pytest.hookimpl(wrapper=True)
def pytest_fixture_setup(fixturedef, request):
    if fixturedef.argname not in FIXTURES:
        return (yield)
    # finalizers run last-in first-out: this one after the fixture's own teardown (added inside the yield)...
    fixturedef.addfinalizer(_teardown_end)
    t0 = time.perf_counter()
    try:
        return (yield)
    finally:
        cur["setup"] = cur.get("setup", 0.0) + time.perf_counter() - t0
        fixturedef.addfinalizer(_teardown_start)  # ... and this one just before it


def _teardown_start():
    cur["td_start"] = time.perf_counter()


def _teardown_end():
    cur["teardown"] = cur.get("teardown", 0.0) + time.perf_counter() - cur.pop("td_start")


@pytest.hookimpl(wrapper=True)
def pytest_runtest_setup(item):
    t0 = time.perf_counter()
    try:
        return (yield)
    finally:
        cur["phase_setup"] = time.perf_counter() - t0


@pytest.hookimpl(wrapper=True)
def pytest_runtest_teardown(item, nextitem):
    t0 = time.perf_counter()
    try:
        return (yield)
    finally:
        cur["phase_teardown"] = time.perf_counter() - t0


def pytest_runtest_logfinish(nodeid, location):
    teardown = cur.get("teardown", float("nan"))
    rows.append([cur.get("setup", float("nan")), teardown, cur.get("phase_setup", float("nan")),
                 cur.get("phase_teardown", float("nan"))])
    cur.clear()
    state["done"] += 1
    if state["done"] in (SAMPLE_AT, state["total"]):
        loop_thread = state["config"].stash.get(_LOOP, None) if _LOOP is not None else None
        if loop_thread is not None:
            loop_thread.drain()  # the session's loop stops retired clusters in batches: count after it has
        gc.collect()
        sample = proc_sample()
        if state["done"] == state["total"]:
            from fakekafka.testing.embedded import Cluster
            sample["live_clusters"] = sum(1 for o in gc.get_objects() if isinstance(o, Cluster))
            sample["loop_threads"] = sum(1 for t in threading.enumerate() if t.name == "fakekafka-loop")
        samples["first" if state["done"] == SAMPLE_AT else "last"] = dict(sample, after_test=state["done"])


def pytest_sessionfinish(session, exitstatus):
    with open(OUT, "w") as f:
        json.dump({"rows": rows, "samples": samples, "exitstatus": int(exitstatus)}, f)
'''

BODIES = {
    "produce": "    assert kafka.bootstrap_servers\n    kafka.produce('t', b'x')\n",
    "connect": "    host, port = kafka.bootstrap_servers.split(':')\n    kafka.produce('t', b'x')\n"
               "    assert api_versions(host, int(port)) == 0\n",
}


def test_module(n: int, body: str, uses_kafka: bool) -> str:
    head = PROBE + "\nimport pytest\n\n\n"
    if uses_kafka:
        return head + f"@pytest.mark.parametrize('i', range({n}))\ndef test_one(kafka, i):\n" + BODIES[body]
    return head + f"@pytest.mark.parametrize('i', range({n}))\ndef test_one(i):\n    assert i >= 0\n"


PEER_FIXTURE = """
import json
import os
import signal
import subprocess
import time


class Peer:
    def __init__(self, port):
        self.bootstrap_servers = f"127.0.0.1:{port}"


@pytest.fixture
def kafka():
    \"\"\"A broker process for this test: what the plugin would be if it started a peer per test.\"\"\"
    port = free_port()
    cmd = [part.replace("{port}", str(port)) for part in json.loads(os.environ["PEER_CMD"])]
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL,
                            start_new_session=True)
    deadline = time.monotonic() + 30
    while True:
        try:
            if api_versions("127.0.0.1", port, timeout=1.0) == 0:
                break
        except OSError:
            pass
        if proc.poll() is not None or time.monotonic() > deadline:
            raise RuntimeError(f"the peer did not answer (exit {proc.returncode})")
        time.sleep(0.001)
    yield Peer(port)
    os.kill(proc.pid, signal.SIGTERM)
    proc.wait(10)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]
"""


def peer_module(n: int) -> str:
    return (PROBE + "\nimport pytest\n\n" + PEER_FIXTURE + f"\n\n@pytest.mark.parametrize('i', range({n}))\n"
            "def test_one(kafka, i):\n    host, port = kafka.bootstrap_servers.split(':')\n"
            "    assert api_versions(host, int(port)) == 0\n")


def run_pytest(tmp: str, name: str, source: str, env_extra: dict[str, str] | None = None) -> dict:
    path = os.path.join(tmp, f"test_{name}.py")
    with open(path, "w") as f:
        f.write(source)
    out = os.path.join(tmp, f"{name}.json")
    env = dict(os.environ, FIXTURE_BENCH_OUT=out, PYTHONPATH=os.pathsep.join([tmp, ROOT]),
               PYTHONDONTWRITEBYTECODE="1", **(env_extra or {}))
    cmd = [sys.executable, "-m", "pytest", "-q", "-p", "fixture_bench_timer", "-p", "no:cacheprovider",
           "-p", "no:randomly", "--rootdir", tmp, "-c", os.path.join(tmp, "pytest.ini"), path]
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, cwd=tmp, env=env, capture_output=True, text=True, timeout=600)
    wall = time.perf_counter() - t0
    if proc.returncode != 0 or not os.path.exists(out):
        sys.exit(f"pytest run {name!r} failed ({proc.returncode}):\n{proc.stdout[-4000:]}\n{proc.stderr[-4000:]}")
    with open(out) as f:
        data = json.load(f)
    data["wall_s"] = wall
    data["summary"] = proc.stdout.strip().splitlines()[-1] if proc.stdout.strip() else ""
    return data


# --- in-process loop -------------------------------------------------------------------------------------------
def rss_bytes() -> int:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    return 0


def in_process(n: int) -> dict:
    for _ in range(10):  # warm-up: imports, first event loop
        Cluster().start().stop()
    gc.collect()
    before = (rss_bytes(), len(os.listdir("/proc/self/fd")), threading.active_count())
    times = []
    for _ in range(n):
        t0 = time.perf_counter()
        c = Cluster().start()
        c.stop()
        times.append(time.perf_counter() - t0)
    gc.collect()
    after = (rss_bytes(), len(os.listdir("/proc/self/fd")), threading.active_count())
    return {"times": times, "before": before, "after": after}


# --- a broker process per test ---------------------------------------------------------------------------------
def peer_once(kind: str, timeout: float = 30.0) -> tuple[float, float]:
    """Spawn -> ApiVersions answered (seconds), SIGTERM -> exited (seconds). For Apache Kafka (`kafka`): format and
    start until Metadata and FindCoordinator answer (what a test needs before it can use a group), then its
    controlled shutdown."""
    if kind == "kafka":
        from fakekafka.testing.apache_kafka import KafkaCluster
        t0 = time.perf_counter()
        cluster = KafkaCluster(1).start()
        ready = time.perf_counter() - t0
        t1 = time.perf_counter()
        cluster.stop()
        return ready, time.perf_counter() - t1
    port = _peers.free_port()
    cmd, _ = _peers._command(kind, port, None)
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    if kind == "fakekafka" and "PYTHONPYCACHEPREFIX" not in env:  # as _peers.start_broker does (cached bytecode)
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        env["PYTHONPYCACHEPREFIX"] = os.path.expanduser("~/.cache/fakekafka/pycache")
    with tempfile.TemporaryFile() as log:
        t0 = time.perf_counter()
        proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                start_new_session=True, env=env)
        try:
            while True:
                try:
                    if api_versions(_peers.HOST, port, timeout=1.0) == 0:
                        break
                except OSError:
                    pass
                if proc.poll() is not None or time.perf_counter() - t0 > timeout:
                    log.seek(0)
                    raise RuntimeError(f"{kind} did not answer ApiVersions (exit {proc.returncode}): "
                                       f"{log.read()[-2000:].decode(errors='replace')}")
                time.sleep(0.001)
            ready = time.perf_counter() - t0
            t1 = time.perf_counter()
            os.kill(proc.pid, signal.SIGTERM)
            proc.wait(10)
            return ready, time.perf_counter() - t1
        finally:
            if proc.poll() is None:
                os.kill(proc.pid, signal.SIGKILL)
                proc.wait(10)


def peer_runs(kind: str, runs: int, loop_thread: LoopThread, interleave: int = 25) -> dict:
    """`runs` broker processes, each followed by `interleave` in-process Cluster start+stop cycles as the plugin
    runs them (on its shared loop, a millisecond apart as tests are), so that the two are compared at the same
    moments even when the machine's load drifts."""
    peer_once(kind)  # warm-up (page cache, bytecode)
    ready, stop, cycles = [], [], []
    for _ in range(runs):
        r, s = peer_once(kind)
        ready.append(r)
        stop.append(s)
        for _ in range(interleave):
            time.sleep(0.001)
            t0 = time.perf_counter()
            Cluster().start(loop_thread).stop(wait=False)
            cycles.append(time.perf_counter() - t0)
    return {"ready": ready, "stop": stop, "total": [r + s for r, s in zip(ready, stop, strict=True)],
            "in_process": cycles}


# --- reporting -------------------------------------------------------------------------------------------------
def stats(values: list[float]) -> tuple[float, float, float]:
    v = sorted(x for x in values if x == x)
    if not v:
        return (math.nan,) * 3
    mid = len(v) // 2
    median = v[mid] if len(v) % 2 else (v[mid - 1] + v[mid]) / 2
    return median, v[max(math.ceil(0.95 * len(v)) - 1, 0)], v[-1]


def ms(x: float) -> str:
    return f"{x * 1000:9.2f}" if x < 10 else f"{x * 1000:9.0f}"


def row(label: str, values: list[float]) -> str:
    m, p, x = stats(values)
    return f"  {label:<52}{ms(m)} {ms(p)} {ms(x)} {len(values):6d}"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--tests", type=int, default=1000, help="tests in the generated module (default 1000)")
    ap.add_argument("--peer-runs", type=int, default=20, help="broker processes started per kind (default 20)")
    ap.add_argument("--brokers", default="tansu,fakekafka,kafka",
                    help="process-per-test peers (default tansu,fakekafka,kafka; kafka: Apache Kafka as a JVM)")
    ap.add_argument("--body", choices=sorted(BODIES), default="connect",
                    help="what each test does: produce = bootstrap_servers + one Cluster.produce; connect = also "
                         "one ApiVersions round trip over a socket (default)")
    ap.add_argument("--rss-bound-kib", type=float, default=4.0,
                    help="RSS growth per test allowed beyond the control run's, in KiB (default 4)")
    ap.add_argument("--json", metavar="FILE", help="write the raw samples here")
    args = ap.parse_args(argv)
    if args.tests < 11:
        ap.error("--tests must be more than 10 (the first leak sample is taken after test 10)")
    started = time.perf_counter()

    with tempfile.TemporaryDirectory(prefix="fixture-bench-") as tmp:
        with open(os.path.join(tmp, "fixture_bench_timer.py"), "w") as f:
            f.write(TIMER_PLUGIN)
        with open(os.path.join(tmp, "pytest.ini"), "w") as f:
            f.write("[pytest]\nasyncio_default_fixture_loop_scope = function\n")
        plugin = run_pytest(tmp, "kafka", test_module(args.tests, args.body, True))
        control = run_pytest(tmp, "control", test_module(args.tests, args.body, False))
        peer_fixture = None
        if "tansu" in args.brokers and _peers.tansu_binary() is not None:
            cmd, _ = _peers._command("tansu", 65535, None)
            peer_cmd = json.dumps([part.replace("65535", "{port}") for part in cmd])
            peer_fixture = run_pytest(tmp, "tansu_per_test", peer_module(args.peer_runs), {"PEER_CMD": peer_cmd})
    loop = in_process(args.tests)
    peers = {}
    loop_thread = LoopThread(listener_pool=8).start()  # as the plugin's session fixture makes it
    for kind in [k.strip() for k in args.brokers.split(",") if k.strip()]:
        if kind == "kafka" and not _peers.kafka_available():
            print("Apache Kafka's jars are not installed: run `eval \"$(bash .ci/install.sh)\"`; skipping it",
                  file=sys.stderr)
            continue
        if kind == "tansu" and _peers.tansu_binary() is None:
            print("tansu not found: run `eval \"$(bash .ci/install.sh)\"`; skipping it", file=sys.stderr)
            continue
        peers[kind] = peer_runs(kind, args.peer_runs, loop_thread)
    loop_thread.stop()

    rows = plugin["rows"]
    fixture_total = [r[0] + r[1] for r in rows]
    phases = [r[2] + r[3] for r in rows]
    control_phases = [r[2] + r[3] for r in control["rows"]]
    print(f"pytest plugin fixture cost: {args.tests} tests (body: {args.body}), Python "
          f"{sys.version.split()[0]}, {os.cpu_count()} CPUs")
    print(f"  {'':<52}{'median':>9} {'p95':>9} {'max':>9} {'n':>6}   (ms)")
    print(row("plugin fixture setup+teardown (in pytest)", fixture_total))
    print(row("  setup: the kafka fixture (pytest_fixture_setup)", [r[0] for r in rows]))
    print(row("  teardown: the kafka fixture (stops the cluster)", [r[1] for r in rows]))
    print(row("pytest setup+teardown phases, kafka tests", phases))
    print(row("pytest setup+teardown phases, control (no fixture)", control_phases))
    print(row("in-process Cluster().start(); stop()", loop["times"]))
    for kind, p in peers.items():
        name = {"tansu": "tansu", "kafka": "Apache Kafka (JVM, KRaft)"}.get(kind, "fakekafka serve")
        print(row(f"{name} process per test: spawn..exit", p["total"]))
        print(row("  spawn -> ApiVersions answered", p["ready"]))
        print(row("  SIGTERM -> exited", p["stop"]))
    if peer_fixture is not None:
        peer_total = [r[0] + r[1] for r in peer_fixture["rows"]]
        print(row("a `kafka` fixture starting tansu per test (in pytest)", peer_total))
    print(f"  pytest wall time: {plugin['wall_s']:.1f} s with the fixture ({plugin['summary']}), "
          f"{control['wall_s']:.1f} s control")

    fixture_median = stats(fixture_total)[0]
    verdicts = []
    ok = fixture_median <= GOAL_MEDIAN_MS / 1000
    verdicts.append(ok)
    print(f"\ngoal: fixture setup+teardown median {fixture_median * 1000:.2f} ms <= {GOAL_MEDIAN_MS:.0f} ms: "
          f"{'PASS' if ok else 'FAIL'}")
    if peer_fixture is not None:
        ratio = stats(peer_total)[0] / fixture_median
        ok = ratio >= GOAL_RATIO
        verdicts.append(ok)
        print(f"goal: tansu-per-test fixture / fakekafka fixture, both as pytest runs them = {ratio:.0f}x >= "
              f"{GOAL_RATIO:.0f}x: {'PASS' if ok else 'FAIL'}")
    for kind, p in peers.items():
        ratio = stats(p["total"])[0] / fixture_median
        ok = ratio >= GOAL_RATIO
        if kind == "tansu" and peer_fixture is None:
            verdicts.append(ok)
        print(f"      {kind} process per test, spawn..exit outside pytest / fixture = {ratio:.0f}x"
              f"{'' if kind == 'tansu' else ' (for comparison; not the goal)'}")
        near = stats(p["in_process"])[0]
        print(f"      {kind} / the fixture's own work, Cluster().start(shared loop) + stop(wait=False), timed "
              f"between its runs ({near * 1000:.3f} ms median) = {stats(p['total'])[0] / near:.0f}x")

    # leak check
    first, last = plugin["samples"]["first"], plugin["samples"]["last"]
    cfirst, clast = control["samples"]["first"], control["samples"]["last"]
    span = last["after_test"] - first["after_test"]
    print(f"\nleak check in the pytest process, after test {first['after_test']} -> after test "
          f"{last['after_test']} (gc.collect() before each sample)")
    print(f"  {'':<22}{'with fixture':>26}{'control':>26}")

    def line(label: str, key: str, scale: float = 1.0, unit: str = "") -> None:
        def cell(a: dict, b: dict) -> str:
            x, y = a[key] / scale, b[key] / scale
            return f"{x:.1f} -> {y:.1f} ({y - x:+.1f}{unit})" if scale != 1 else f"{x:.0f} -> {y:.0f} ({y - x:+.0f})"
        print(f"  {label:<22}{cell(first, last):>26}{cell(cfirst, clast):>26}")
    line("RSS MiB", "rss", 1 << 20, "")
    line("Python threads", "threads")
    line("OS threads", "os_threads")
    line("open fds", "fds")
    line("  of them sockets", "sockets")
    print(f"  live fakekafka Cluster objects at the end: {last['live_clusters']}; fakekafka-loop threads "
          f"running: {last['loop_threads']} (the session's)")
    rss_growth = (last["rss"] - first["rss"]) - (clast["rss"] - cfirst["rss"])
    bound = args.rss_bound_kib * 1024 * span
    leaks = []
    for key, label in (("threads", "Python threads"), ("os_threads", "OS threads"), ("fds", "fds"),
                       ("sockets", "sockets")):
        if last[key] > first[key]:
            leaks.append(f"{label} grew by {last[key] - first[key]}")
    if last["live_clusters"]:
        leaks.append(f"{last['live_clusters']} Cluster objects still alive after their tests")
    if last["loop_threads"] > 1:  # the session's own loop thread lives until pytest unconfigures
        leaks.append(f"{last['loop_threads']} fakekafka-loop threads running (1 expected)")
    if rss_growth > bound:
        leaks.append(f"RSS grew {rss_growth / 1024:.0f} KiB more than the control run "
                     f"(bound {args.rss_bound_kib:g} KiB x {span} tests = {bound / 1024:.0f} KiB)")
    print(f"  RSS growth beyond the control run: {rss_growth / 1024:+.0f} KiB over {span} tests "
          f"({rss_growth / 1024 / span:+.2f} KiB/test; bound {args.rss_bound_kib:g} KiB/test)")
    b, a = loop["before"], loop["after"]
    print(f"  in-process loop ({args.tests} clusters, this process): RSS {b[0] / 2**20:.1f} -> {a[0] / 2**20:.1f} "
          f"MiB, fds {b[1]} -> {a[1]}, threads {b[2]} -> {a[2]}")
    if a[1] > b[1] or a[2] > b[2]:
        leaks.append(f"in-process loop: fds {b[1]} -> {a[1]}, threads {b[2]} -> {a[2]}")
    print("  verdict: " + ("LEAK: " + "; ".join(leaks) if leaks else "no leak"))
    verdicts.append(not leaks)
    print(f"\n(benchmark wall time {time.perf_counter() - started:.0f} s)")

    if args.json:
        with open(args.json, "w") as f:
            json.dump({"args": vars(args), "plugin": plugin, "control": control, "peer_fixture": peer_fixture,
                       "in_process": loop,
                       "peers": peers}, f)
    return 0 if all(verdicts) else 1


if __name__ == "__main__":
    sys.exit(main())
