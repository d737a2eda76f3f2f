"""Failover time and the cost of replication on fakekafka, with librdkafka's mock cluster where comparable.

    python bench/failover.py [--runs N] [--records N] [--size B] [--repeat R] [--only failover|throughput]
                             [--json out.json]

Failover: a producer (acks=all, idempotent, linger.ms=1) sends one record about every millisecond to a
partition with three replicas, with at most 20 unacknowledged; once `--before` records are acknowledged the
partition leader's broker is killed, and the clock runs from just before the kill until the first
acknowledgement that arrives after the kill is done (the killed broker's connections are gone by then, so that
acknowledgement came from the new leader). Median, min and max over `--runs` runs, after one unrecorded warm-up
run per cell. Cells:

- Java (kafka-clients, tests/integration/clients/java/ReplicationDriver.java) against `fakekafka serve --brokers 3`, a
  subprocess; the kill goes through its control port, the protocol `fakekafka ctl kill-broker` speaks.
- confluent-kafka (librdkafka) against the same fakekafka, killed the same way.
- confluent-kafka against librdkafka's mock cluster (3 brokers, in this process, driven through librdkafka's
  C API with ctypes: rd_kafka_mock_broker_set_down on the leader, then rd_kafka_mock_partition_set_leader to a
  follower; the mock does not move leaders by itself).
- Java against the mock: not measured. The Java client gets no metadata from the mock (bench/README.md).

Throughput: confluent-kafka produce_batch (acks=all) of `--records` x `--size` B into a new single-partition
topic with replication factor 1 and 3 on the same three-broker fakekafka, interleaved, `--repeat` times; once
with large batches (linger.ms=5: thousands of records per batch) and once with `--small-batch` records per
batch (batch.num.messages), since fakekafka replicates batch by batch. records/s medians, broker CPU
microseconds per record, ratio RF3/RF1.

Every process started here (fakekafka, the JVM) is stopped by its PID; every wait has a deadline.
"""

from __future__ import annotations

import argparse
import atexit
import ctypes
import glob
import json
import os
import re
import select
import statistics
import subprocess
import sys
import threading
import time
import uuid
import zipfile
from collections.abc import Callable
from typing import Any

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)

from _peers import HOST, BrokerProcess  # noqa: E402

from fakekafka.ops.control import send_command  # noqa: E402

try:
    import confluent_kafka
    from confluent_kafka import Producer
    from confluent_kafka.admin import AdminClient, NewTopic
except ImportError:  # pragma: no cover
    sys.exit("bench/failover.py needs confluent-kafka: pip install confluent-kafka")

JAVA_SOURCE = os.path.join(ROOT, "tests", "integration", "clients", "java", "ReplicationDriver.java")
JVM_ARGS = ["-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-Xmx512m", "-Dorg.slf4j.simpleLogger.defaultLogLevel=error"]
FAILOVER_PRODUCER = {"acks": "all", "enable.idempotence": True, "linger.ms": 1, "log_level": 2}
THROUGHPUT_PRODUCER = {"acks": "all", "linger.ms": 5, "compression.type": "none", "delivery.report.only.error": True,
                       "queue.buffering.max.messages": 1_000_000, "queue.buffering.max.kbytes": 1_048_576}
MAX_UNACKED = 20
_started: list[BrokerProcess] = []


# ------------------------------------------------------------------------------------------- fakekafka

class FakeKafka:
    """`fakekafka serve --brokers N --port 0` as a subprocess (its own process group), steered through its
    control port with the same JSON-line protocol `fakekafka ctl` uses."""

    def __init__(self, brokers: int = 3, timeout: float = 20.0) -> None:
        cmd = [sys.executable, "-m", "fakekafka", "serve", "--host", HOST, "--port", "0", "--brokers", str(brokers),
               "--replication-factor", str(brokers), "--log-level", "warning"]
        env = dict(os.environ, PYTHONUNBUFFERED="1")
        if "PYTHONPYCACHEPREFIX" not in env:  # as bench/_peers.py: bytecode cached outside the work tree
            env.pop("PYTHONDONTWRITEBYTECODE", None)
            env["PYTHONPYCACHEPREFIX"] = os.path.expanduser("~/.cache/fakekafka/pycache")
        t0 = time.perf_counter()
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                start_new_session=True, env=env, cwd=ROOT)
        self.process = BrokerProcess("fakekafka", 0, proc, t0)
        _started.append(self.process)
        fd = proc.stdout.fileno()  # type: ignore[union-attr]
        deadline = time.monotonic() + timeout
        out = self.process.output
        ready = re.compile(rb"fakekafka ready: bootstrap\.servers=(\S+) control=(\S+)\r?\n")
        while (m := ready.search(out)) is None:
            if proc.poll() is not None or time.monotonic() > deadline:
                self.stop()
                raise RuntimeError(f"fakekafka serve not ready: {out.decode(errors='replace')}")
            if select.select([fd], [], [], 0.05)[0]:
                out += os.read(fd, 65536)
        self.bootstrap, self.control = m.group(1).decode(), m.group(2).decode()
        threading.Thread(target=self._drain, daemon=True).start()

    def _drain(self) -> None:
        try:
            while chunk := self.process.proc.stdout.read1(65536):  # type: ignore[union-attr]
                self.process.output += chunk
                del self.process.output[:-65536]
        except (OSError, ValueError):
            pass

    def ctl(self, command: str, **args: Any) -> Any:
        reply = send_command(self.control, command, args, timeout=10)
        if not reply.get("ok"):
            raise RuntimeError(f"fakekafka ctl {command} {args}: {reply.get('error')}")
        return reply.get("result")

    def kill_leader(self, topic: str) -> dict[str, Any]:
        """Kills the broker leading partition 0 of `topic`: (kill_ns, killed_ns) on time.monotonic_ns around it,
        and the partition's new leader, epoch and epoch start (the new leader's log end offset just after)."""
        leader = self.ctl("partition-state", topic=topic, partition=0)["leader"]
        kill_ns = time.monotonic_ns()
        self.ctl("kill-broker", broker=leader)
        killed_ns = time.monotonic_ns()
        after = self.ctl("partition-state", topic=topic, partition=0)
        return {"killed": leader, "kill_ns": kill_ns, "killed_ns": killed_ns, "leader": after["leader"],
                "leader_epoch": after["leader_epoch"],
                "epoch_start": after["log_end_offsets"][str(after["leader"])]}

    def restart(self, broker: int, topics: list[str], timeout: float = 10.0) -> None:
        """Brings the broker back and waits until every topic's ISR is full again."""
        self.ctl("restart-broker", broker=broker)
        deadline = time.monotonic() + timeout
        for t in topics:
            while len(self.ctl("partition-state", topic=t, partition=0)["isr"]) < 3:
                if time.monotonic() > deadline:
                    raise TimeoutError(f"{t}'s ISR did not fill within {timeout}s after restarting broker {broker}")
                time.sleep(0.01)

    def stop(self) -> None:
        self.process.stop()
        if self.process in _started:
            _started.remove(self.process)


def _stop_started() -> None:
    for p in list(_started):
        p.stop()


atexit.register(_stop_started)


def create_topics(bootstrap: str, names: list[str], rf: int, timeout: float = 15.0) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap, "log_level": 3})
    futures = admin.create_topics([NewTopic(n, num_partitions=1, replication_factor=rf) for n in names],
                                  operation_timeout=timeout, request_timeout=timeout)
    for f in futures.values():
        f.result(timeout)


def delete_topic(bootstrap: str, topic: str, timeout: float = 15.0) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap, "log_level": 3})
    try:
        admin.delete_topics([topic], operation_timeout=timeout, request_timeout=timeout)[topic].result(timeout)
    except Exception as e:  # noqa: BLE001 - freeing memory is not the benchmark's concern
        print(f"note: deleting {topic} failed: {e}", file=sys.stderr)


# ---------------------------------------------------------------------------------- librdkafka's mock

class MockCluster:
    """librdkafka's mock cluster, created and steered through its C API (ctypes on the librdkafka that
    confluent-kafka's wheel ships), so a broker can be taken down and a leader moved, which confluent-kafka's
    Python API does not offer."""

    def __init__(self, brokers: int = 3) -> None:
        libdir = os.path.join(os.path.dirname(os.path.dirname(confluent_kafka.__file__)), "confluent_kafka.libs")
        found = glob.glob(os.path.join(libdir, "librdkafka*.so*"))
        lib = ctypes.CDLL(found[0] if found else "librdkafka.so.1")
        vp, cp, i32 = ctypes.c_void_p, ctypes.c_char_p, ctypes.c_int32
        for name, res, args in [
                ("rd_kafka_conf_new", vp, []), ("rd_kafka_conf_set", ctypes.c_int, [vp, cp, cp, cp, ctypes.c_size_t]),
                ("rd_kafka_new", vp, [ctypes.c_int, vp, cp, ctypes.c_size_t]), ("rd_kafka_destroy", None, [vp]),
                ("rd_kafka_mock_cluster_new", vp, [vp, ctypes.c_int]), ("rd_kafka_mock_cluster_destroy", None, [vp]),
                ("rd_kafka_mock_cluster_bootstraps", cp, [vp]),
                ("rd_kafka_mock_topic_create", ctypes.c_int, [vp, cp, ctypes.c_int, ctypes.c_int]),
                ("rd_kafka_mock_partition_set_leader", ctypes.c_int, [vp, cp, i32, i32]),
                ("rd_kafka_mock_broker_set_down", ctypes.c_int, [vp, i32]),
                ("rd_kafka_mock_broker_set_up", ctypes.c_int, [vp, i32])]:
            fn = getattr(lib, name)
            fn.restype, fn.argtypes = res, args
        self.lib = lib
        errstr = ctypes.create_string_buffer(512)
        conf = lib.rd_kafka_conf_new()
        lib.rd_kafka_conf_set(conf, b"log_level", b"2", errstr, 512)
        self.rk = lib.rd_kafka_new(0, conf, errstr, 512)  # a bare handle that owns the mock cluster
        if not self.rk:
            raise RuntimeError(f"rd_kafka_new: {errstr.value.decode()}")
        self.mc = lib.rd_kafka_mock_cluster_new(self.rk, brokers)
        if not self.mc:
            lib.rd_kafka_destroy(self.rk)
            raise RuntimeError("rd_kafka_mock_cluster_new failed")
        self.bootstrap = lib.rd_kafka_mock_cluster_bootstraps(self.mc).decode()
        self.brokers = brokers
        self.leaders: dict[str, int] = {}

    def _check(self, what: str, err: int) -> None:
        if err:
            raise RuntimeError(f"{what}: librdkafka error {err}")

    def create_topic(self, topic: str, leader: int = 1) -> None:
        self._check("topic_create", self.lib.rd_kafka_mock_topic_create(self.mc, topic.encode(), 1, self.brokers))
        self._check("set_leader", self.lib.rd_kafka_mock_partition_set_leader(self.mc, topic.encode(), 0, leader))
        self.leaders[topic] = leader

    def kill_leader(self, topic: str) -> dict[str, Any]:
        old = self.leaders[topic]
        new = old % self.brokers + 1
        kill_ns = time.monotonic_ns()
        self._check("broker_set_down", self.lib.rd_kafka_mock_broker_set_down(self.mc, old))
        self._check("set_leader", self.lib.rd_kafka_mock_partition_set_leader(self.mc, topic.encode(), 0, new))
        killed_ns = time.monotonic_ns()
        self.leaders[topic] = new
        return {"killed": old, "kill_ns": kill_ns, "killed_ns": killed_ns, "leader": new, "epoch_start": None}

    def restart(self, broker: int) -> None:
        self._check("broker_set_up", self.lib.rd_kafka_mock_broker_set_up(self.mc, broker))

    def close(self) -> None:
        if self.mc:
            self.lib.rd_kafka_mock_cluster_destroy(self.mc)
            self.mc = None
        if self.rk:
            self.lib.rd_kafka_destroy(self.rk)
            self.rk = None


# ---------------------------------------------------------------------------------------- failover

def rdkafka_failover(bootstrap: str, topic: str, kill: Callable[[str], dict[str, Any]], before: int, after: int,
                     timeout: float) -> dict[str, Any]:
    """One run with a confluent-kafka producer, as ReplicationDriver's failover does it (no consumer)."""
    acks: list[tuple[int, int]] = []   # (monotonic ns at the delivery report, offset)
    errors: list[str] = []

    def on_delivery(err: Any, msg: Any) -> None:
        if err is None:
            acks.append((time.monotonic_ns(), msg.offset()))
        else:
            errors.append(str(err))

    p = Producer({"bootstrap.servers": bootstrap, **FAILOVER_PRODUCER})
    deadline = time.monotonic() + timeout
    sent, info = 0, None
    try:
        while True:
            if time.monotonic() > deadline:
                raise TimeoutError(f"{topic}: {len(acks)} of {sent} acknowledged after {timeout}s ({errors[:3]})")
            if info is None and len(acks) >= before:
                info = kill(topic)
            if info is not None and sum(1 for t, _ in acks if t >= info["killed_ns"]) >= after:
                break
            if sent - len(acks) - len(errors) < MAX_UNACKED:
                p.produce(topic, f"r-{sent}".encode(), partition=0, on_delivery=on_delivery)
                sent += 1
            p.poll(0.001)
        left = p.flush(max(0.0, deadline - time.monotonic()))
    finally:
        p.flush(0)
    first = min(t for t, _ in acks if t >= info["killed_ns"])
    first_new = min((t for t, o in acks if info["epoch_start"] is not None and o >= info["epoch_start"]),
                    default=None)
    return {"failover_ms": (first - info["kill_ns"]) / 1e6, "kill_ms": (info["killed_ns"] - info["kill_ns"]) / 1e6,
            "failover_epoch_ms": None if first_new is None else (first_new - info["kill_ns"]) / 1e6,
            "sent": sent, "acked": len(acks), "errors": len(errors), "unflushed": left}


def java_failover(fk: FakeKafka, runs: int, before: int, after: int, timeout: float) -> list[dict[str, Any]]:
    """`runs` failovers in one JVM (ReplicationDriver), each on its own topic; the killed broker comes back
    between runs."""
    from tests import javautil  # raises pytest's Skipped when java, javac or the jars are missing

    classes = javautil.compile_java(JAVA_SOURCE)
    topics = [f"fo-java-{uuid.uuid4().hex[:8]}-{i}" for i in range(runs)]
    create_topics(fk.bootstrap, topics, 3)
    cp = os.pathsep.join([str(classes), javautil.classpath()])
    specs = [f"failover:{t}:{before}:{after}:noconsumer" for t in topics]
    proc = subprocess.Popen(["java", *JVM_ARGS, "-cp", cp, "ReplicationDriver", fk.bootstrap, *specs],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    watchdog = threading.Timer(timeout, proc.kill)
    watchdog.start()
    results: list[dict[str, Any]] = []
    killed: list[int] = []
    try:
        assert proc.stdout is not None and proc.stdin is not None
        for line in proc.stdout:
            if not line.startswith("{"):
                continue
            msg = json.loads(line)
            if "request" in msg:
                info = fk.kill_leader(msg["topic"])
                killed.append(info["killed"])
                proc.stdin.write(json.dumps(info) + "\n")
                proc.stdin.flush()
            elif "scenario" in msg:
                if not msg["ok"]:
                    raise RuntimeError(f"ReplicationDriver failed on {msg['topic']}:\n{msg['error']}")
                r = msg["result"]
                results.append({k: r[k] for k in ("failover_ms", "failover_epoch_ms", "kill_ms", "sent")} |
                               {"acked": len(r["acks"]), "errors": len(r["failures"])})
                while killed:
                    fk.restart(killed.pop(), topics)
        proc.wait(5)
    finally:
        watchdog.cancel()
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        stderr = proc.stderr.read() if proc.stderr else ""
        if proc.stdout:
            proc.stdout.close()
        if proc.stdin:
            proc.stdin.close()
        if proc.stderr:
            proc.stderr.close()
    if len(results) < runs:
        raise RuntimeError(f"the JVM reported {len(results)} of {runs} runs; stderr ends:\n{stderr[-2000:]}")
    return results


def java_version() -> str:
    try:
        from tests import javautil
        for entry in javautil.classpath().split(os.pathsep):
            for jar in glob.glob(entry):
                if os.path.basename(jar).startswith("kafka-clients"):
                    with zipfile.ZipFile(jar) as z:
                        props = z.read("kafka/kafka-version.properties").decode()
                    return "kafka-clients " + re.search(r"version=(\S+)", props).group(1)  # type: ignore[union-attr]
    except BaseException:  # noqa: BLE001 - a label only (pytest's Skipped is a BaseException)
        pass
    return "kafka-clients"


# -------------------------------------------------------------------------------------- throughput

def produce_throughput(fk: FakeKafka, topic: str, n: int, size: int, timeout: float,
                       overrides: dict[str, Any]) -> dict[str, float]:
    value = os.urandom(size)
    errors: list[Any] = []
    p = Producer({"bootstrap.servers": fk.bootstrap, **THROUGHPUT_PRODUCER, **overrides})
    p.list_topics(topic, timeout=timeout)
    msgs = [{"value": value}] * min(n, 10_000)
    deadline = time.monotonic() + timeout
    cpu0, t0 = fk.process.cpu_seconds(), time.perf_counter()
    sent = 0
    while sent < n:
        k = min(len(msgs), n - sent)
        queued = p.produce_batch(topic, msgs[:k], partition=0, on_delivery=lambda e, _m: e and errors.append(e))
        if queued != k:
            raise RuntimeError(f"produce_batch queued {queued} of {k}")
        sent += k
        p.poll(0)
    left = p.flush(max(0.0, deadline - time.monotonic()))
    seconds, cpu = time.perf_counter() - t0, fk.process.cpu_seconds() - cpu0
    if left or errors:
        raise RuntimeError(f"{topic}: {left} undelivered, {len(errors)} errors ({errors[:1]})")
    return {"records_per_s": n / seconds, "mb_per_s": n * size / seconds / 1e6, "broker_us_per_record": cpu / n * 1e6}


# ------------------------------------------------------------------------------------------- report

def _summary(samples: list[float]) -> str:
    if not samples:
        return "-"
    return f"{statistics.median(samples):7.1f} ms  [{min(samples):.1f}-{max(samples):.1f}]"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=11, help="failovers per cell, after one warm-up (default 11)")
    ap.add_argument("--before", type=int, default=200, help="acknowledgements before the kill (default 200)")
    ap.add_argument("--after", type=int, default=50, help="acknowledgements after it (default 50)")
    ap.add_argument("--records", type=int, default=200_000, help="records per throughput cell (default 200000)")
    ap.add_argument("--small-batch", type=int, default=10,
                    help="records per batch in the small-batch throughput cells (default 10)")
    ap.add_argument("--small-records", type=int, default=50_000,
                    help="records per small-batch throughput cell (default 50000)")
    ap.add_argument("--size", type=int, default=100, help="record value bytes (default 100)")
    ap.add_argument("--repeat", type=int, default=3, help="throughput repeats (default 3)")
    ap.add_argument("--only", choices=["failover", "throughput"], help="run one part only")
    ap.add_argument("--timeout", type=float, default=120.0, help="bound for each cell in seconds (default 120)")
    ap.add_argument("--json", metavar="FILE", help="write every sample as JSON")
    args = ap.parse_args(argv)
    started = time.monotonic()
    out: dict[str, Any] = {"failover": {}, "throughput": {}}
    fk = FakeKafka(3)
    try:
        if args.only != "throughput":
            fo = out["failover"]
            print(f"failover: {args.runs} runs per cell after a warm-up; fakekafka {fk.bootstrap}", file=sys.stderr)
            try:
                fo["java/fakekafka"] = java_failover(fk, args.runs + 1, args.before, args.after, args.timeout)[1:]
            except BaseException as e:  # noqa: BLE001 - pytest's Skipped when Java is missing
                if isinstance(e, KeyboardInterrupt):
                    raise
                fo["java/fakekafka"] = f"not run: {e}"
            runs = []
            for i in range(args.runs + 1):
                topic = f"fo-rdk-{uuid.uuid4().hex[:8]}-{i}"
                create_topics(fk.bootstrap, [topic], 3)
                killed: list[int] = []

                def kill(t: str, killed: list[int] = killed) -> dict[str, Any]:
                    info = fk.kill_leader(t)
                    killed.append(info["killed"])
                    return info
                try:
                    runs.append(rdkafka_failover(fk.bootstrap, topic, kill, args.before, args.after, args.timeout))
                finally:
                    for b in killed:
                        fk.restart(b, [topic])
            fo["confluent-kafka/fakekafka"] = runs[1:]
            mock = MockCluster(3)
            try:
                runs = []
                for i in range(args.runs + 1):
                    topic = f"fo-mock-{i}"
                    mock.create_topic(topic, leader=i % 3 + 1)   # leaders rotate, as fakekafka places them
                    try:
                        runs.append(rdkafka_failover(mock.bootstrap, topic, mock.kill_leader, args.before,
                                                     args.after, args.timeout))
                    finally:
                        for b in range(1, 4):
                            mock.restart(b)
                fo["confluent-kafka/mock"] = runs[1:]
            finally:
                mock.close()
        if args.only != "failover":
            tp: dict[str, dict[str, list[dict[str, float]]]] = {}
            shapes = [("linger.ms=5", args.records, {}),
                      (f"batch.num.messages={args.small_batch}", args.small_records,
                       {"batch.num.messages": args.small_batch})]
            for _ in range(args.repeat):
                for shape, n, overrides in shapes:
                    for rf in (1, 3):
                        topic = f"tp-rf{rf}-{uuid.uuid4().hex[:8]}"
                        create_topics(fk.bootstrap, [topic], rf)
                        tp.setdefault(shape, {}).setdefault(str(rf), []).append(
                            produce_throughput(fk, topic, n, args.size, args.timeout, overrides) | {"records": n})
                        delete_topic(fk.bootstrap, topic)
            out["throughput"] = tp
    finally:
        fk.stop()
    _print(out, args, java_version())
    print(f"\n(total {time.monotonic() - started:.0f} s)")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(out, f, indent=1)
    return 0


def _print(out: dict[str, Any], args: argparse.Namespace, java: str) -> None:
    rdk = f"confluent-kafka {confluent_kafka.__version__} (librdkafka {confluent_kafka.libversion()[0]})"
    fo = out["failover"]
    if fo:
        print(f"\nFailover: kill the partition leader's broker (3 replicas) under an acks=all idempotent producer;\n"
              f"time until the next record is acknowledged, median [min-max] over {args.runs} runs\n")
        print(f"{'client':<44} {'cluster':<28} {'kill -> next ack':<27} {'kill':>7} {'done -> ack':>11}  notes")
        rows = [(java, "fakekafka serve --brokers 3", fo.get("java/fakekafka")),
                (java, "librdkafka mock, 3 brokers", "not comparable: the Java client gets no metadata from the "
                                                     "mock cluster, so it never produces"),
                (rdk, "fakekafka serve --brokers 3", fo.get("confluent-kafka/fakekafka")),
                (rdk, "librdkafka mock, 3 brokers", fo.get("confluent-kafka/mock"))]
        for client, cluster, cell in rows:
            if isinstance(cell, list):
                times = [r["failover_ms"] for r in cell]
                kill = statistics.median(r["kill_ms"] for r in cell)
                done = statistics.median(r["failover_ms"] - r["kill_ms"] for r in cell)
                notes = f"all: {' '.join(f'{t:.0f}' for t in sorted(times))}; {sum(r['errors'] for r in cell)} errors"
                print(f"{client:<44} {cluster:<28} {_summary(times):<27} {kill:5.1f} ms {done:8.1f} ms  {notes}")
            else:
                print(f"{client:<44} {cluster:<28} {'n/a':<27} {'':>7} {'':>11}  {cell or 'not run'}")
        print("\nkill: how long the kill itself took (fakekafka: the control command `fakekafka ctl kill-broker`\n"
              "sends; the mock: rd_kafka_mock_broker_set_down + rd_kafka_mock_partition_set_leader);\n"
              "done -> ack: the rest, from the kill's return to the acknowledgement. Medians.")

    tp = out["throughput"]
    if tp:
        print(f"\nProduce throughput, replication factor 3 vs 1 (fakekafka serve --brokers 3, {rdk},\n"
              f"acks=all, {args.size} B values, one partition, produce_batch; medians of {args.repeat})\n")
        print(f"{'producer batching':<24} {'records':>8} {'RF':>3} {'records/s':>12} {'MB/s':>7} {'broker us/rec':>14} "
              f"{'RF3/RF1':>8}")
        for shape, cells in tp.items():
            med = {rf: statistics.median(c["records_per_s"] for c in cells[rf]) for rf in cells}
            for rf in ("1", "3"):
                ratio = f"{med['3'] / med['1']:8.2f}" if rf == "3" else ""
                print(f"{shape:<24} {cells[rf][0]['records']:>8} {rf:>3} {med[rf]:>12,.0f} "
                      f"{statistics.median(c['mb_per_s'] for c in cells[rf]):>7.1f} "
                      f"{statistics.median(c['broker_us_per_record'] for c in cells[rf]):>14.2f} {ratio}")


if __name__ == "__main__":
    sys.exit(main())
