"""Whether one client's big request stalls the others, and what many partitions cost an idle broker: fakekafka
beside Apache Kafka 4.4.0, in the same run.

    python bench/wedge.py [--names 100000] [--kafka-names 10000] [--creates 7] [--kafka-creates 2]
                          [--topics-per-create 4000] [--idle-seconds 10] [--broker fakekafka --broker kafka]
                          [--data-dir | --data-dir-only] [--json out.json]

For each broker (a fresh process each, from bench/_peers.py: `fakekafka serve`, Kafka as a KRaft JVM), while
one client's request runs, another client sends Metadata for no topic again and again, and its latencies
(p50, max) are what "another client waits" means:

- metadata: one Metadata v12 naming `--names` new topics, auto-creation on (Kafka's default; 10,000 names on
  Kafka by default: 100,000 partitions exceed its JVM's default memory map count on this machine).
- create: `--creates` CreateTopics of `--topics-per-create` one-partition topics each, one after another (2 on
  Kafka by default: each partition holds a file open, and this machine allows a process 20,000).
- idle: then nothing for `--idle-seconds`: the broker's CPU (% of one core) with all those partitions.
- data dir (`--data-dir`, or `--data-dir-only` for this section alone): `--creates` CreateTopics of
  `--topics-per-create` topics with fakekafka's `--data-dir` (each topic made appends its own record to the metadata
  journal), another client's Metadata meanwhile, then a fresh broker on a fresh data dir gets one more CreateTopics
  and SIGTERM while it runs; Kafka (which always has its log dir on disk) does the same in the same run with
  `--kafka-creates` of them.
- stop: a Metadata naming `--names` new topics sent, then SIGTERM: seconds until the process has exited.

Every process started here is stopped by its PID.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import threading
import time
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from _peers import BrokerProcess, kafka_available, start_broker  # noqa: E402

from tests.rawclient import RawClient  # noqa: E402

ZERO = uuid.UUID(int=0)


class Watcher:
    """Another client: Metadata for no topic, back to back, on its own connection, until stopped."""

    def __init__(self, bootstrap: str) -> None:
        self.raw = RawClient(bootstrap, timeout=300)
        self.latencies: list[float] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.is_set():
            t = time.perf_counter()
            self.raw.request(3, 12, {"topics": [], "allow_auto_topic_creation": False,
                                     "include_topic_authorized_operations": False})
            self.latencies.append((time.perf_counter() - t) * 1000)
            time.sleep(0.005)

    def stop(self) -> dict[str, float]:
        self._stop.set()
        self._thread.join(600)
        self.raw.close()
        lat = self.latencies or [float("nan")]
        return {"p50_ms": round(statistics.median(lat), 1), "max_ms": round(max(lat), 1), "requests": len(lat)}


def _metadata(raw: RawClient, names: list[str]) -> float:
    t = time.perf_counter()
    raw.request(3, 12, {"topics": [{"name": n, "topic_id": ZERO} for n in names], "allow_auto_topic_creation": True,
                        "include_topic_authorized_operations": False})
    return time.perf_counter() - t


def _create(raw: RawClient, names: list[str]) -> float:
    t = time.perf_counter()
    r = raw.request(19, 7, {"topics": [{"name": n, "num_partitions": 1, "replication_factor": 1, "assignments": [],
                                        "configs": []} for n in names], "timeout_ms": 120_000,
                            "validate_only": False})
    bad = [t.error_code for t in r.topics if t.error_code]
    if bad:
        raise RuntimeError(f"CreateTopics failed for {len(bad)} topics (error {bad[0]})")
    return time.perf_counter() - t


def _start(kind: str, args: list[str] | None = None) -> BrokerProcess:
    configs = {"auto.create.topics.enable": "true"} if kind == "kafka" else None
    return start_broker(kind, timeout=180, configs=configs, args=args)


def run(kind: str, names: int, creates: int, per_create: int, idle_seconds: float) -> dict[str, object]:
    out: dict[str, object] = {"broker": kind, "names": names}
    b = _start(kind)
    try:
        raw = RawClient(b.bootstrap, timeout=600)
        watcher = Watcher(b.bootstrap)
        out["metadata_s"] = round(_metadata(raw, [f"m{i}" for i in range(names)]), 2)
        out["metadata_other"] = watcher.stop()
        watcher = Watcher(b.bootstrap)
        times = [_create(raw, [f"c{k}-{i}" for i in range(per_create)]) for k in range(creates)]
        out["create_s"] = [round(t, 2) for t in times]
        out["create_other"] = watcher.stop()
        raw.close()
        time.sleep(3)  # what the creations left to do (Kafka's controller, log directories) settles
        cpu = b.cpu_seconds()
        time.sleep(idle_seconds)
        out["idle_cpu_pct"] = round((b.cpu_seconds() - cpu) / idle_seconds * 100, 1)
        out["partitions"] = names + creates * per_create
    finally:
        b.stop(grace=120)
    b = _start(kind)
    try:
        raw = RawClient(b.bootstrap, timeout=600)
        raw.send(3, 12, {"topics": [{"name": f"s{i}", "topic_id": ZERO} for i in range(names)],
                         "allow_auto_topic_creation": True, "include_topic_authorized_operations": False})
        time.sleep(0.5)  # the request is being worked on
        t = time.perf_counter()
        b.stop(grace=120)
        out["stop_s"] = round(time.perf_counter() - t, 2)
        raw.close()
    finally:
        b.stop()
    return out


def data_dir(kind: str, per_create: int, creates: int) -> dict[str, object]:
    """Many topics made with the logs on disk: fakekafka with --data-dir, Kafka as it always runs."""
    with tempfile.TemporaryDirectory(prefix="fakekafka-wedge-") as d:
        extra = ["--data-dir", d] if kind == "fakekafka" else None
        b = _start(kind, extra)
        try:
            raw = RawClient(b.bootstrap, timeout=600)
            watcher = Watcher(b.bootstrap)
            times = [_create(raw, [f"d{k}-{i}" for i in range(per_create)]) for k in range(creates)]
            other = watcher.stop()
            raw.close()
        finally:
            b.stop(grace=120)
    with tempfile.TemporaryDirectory(prefix="fakekafka-wedge-") as d:
        b = _start(kind, ["--data-dir", d] if kind == "fakekafka" else None)
        try:
            raw = RawClient(b.bootstrap, timeout=600)
            raw.send(19, 7, {"topics": [{"name": f"s{i}", "num_partitions": 1, "replication_factor": 1,
                                         "assignments": [], "configs": []} for i in range(per_create)],
                             "timeout_ms": 120_000, "validate_only": False})
            time.sleep(0.5)  # the request is being worked on
            t = time.perf_counter()
            b.stop(grace=120)
            stop_s = time.perf_counter() - t
            raw.close()
        finally:
            b.stop()
    return {"broker": kind, "partitions": per_create * creates, "create_s": [round(t, 2) for t in times],
            "metadata_other": other, "stop_s": round(stop_s, 2)}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--broker", action="append", choices=["fakekafka", "kafka"],
                    help="brokers to run (default both; Kafka where it is installed)")
    ap.add_argument("--names", type=int, default=100_000, help="new topic names in one Metadata (default 100000)")
    ap.add_argument("--kafka-names", type=int, default=10_000, help="the same on Kafka (default 10000)")
    ap.add_argument("--creates", type=int, default=7, help="CreateTopics requests (default 7)")
    ap.add_argument("--kafka-creates", type=int, default=2, help="the same on Kafka (default 2)")
    ap.add_argument("--topics-per-create", type=int, default=4000, help="topics per CreateTopics (default 4000)")
    ap.add_argument("--idle-seconds", type=float, default=10.0, help="idle CPU measured over (default 10)")
    ap.add_argument("--data-dir", action="store_true", help="also the data-dir section")
    ap.add_argument("--data-dir-only", action="store_true", help="the data-dir section alone")
    ap.add_argument("--json", metavar="PATH", help="also write the figures as JSON")
    args = ap.parse_args()
    brokers = args.broker or ["fakekafka", *(["kafka"] if kafka_available() else [])]
    rows = []
    for kind in [] if args.data_dir_only else brokers:
        names = args.kafka_names if kind == "kafka" else args.names
        creates = args.kafka_creates if kind == "kafka" else args.creates
        print(f"{kind}: Metadata of {names} new names, {creates} x CreateTopics of {args.topics_per_create}, "
              "idle, stop ...", flush=True)
        rows.append(run(kind, names, creates, args.topics_per_create, args.idle_seconds))
        print(json.dumps(rows[-1]), flush=True)
    dd = []
    for kind in brokers if args.data_dir or args.data_dir_only else []:
        creates = args.kafka_creates if kind == "kafka" else args.creates
        print(f"{kind} with its logs on disk: {creates} x CreateTopics of {args.topics_per_create}, another "
              "client's Metadata meanwhile, then SIGTERM during one ...", flush=True)
        dd.append(data_dir(kind, args.topics_per_create, creates))
        print(json.dumps(dd[-1]), flush=True)
    print()
    if rows:
        print(f"{'broker':<10} {'names':>7} {'Metadata s':>10} {'other p50/max ms':>17} "
              f"{'creates s (first..last)':>24} {'other p50/max ms':>17} {'partitions':>10} {'idle CPU %':>10} "
              f"{'stop s':>7}")
    for r in rows:
        m, c = r["metadata_other"], r["create_other"]
        cs = r["create_s"]
        print(f"{r['broker']:<10} {r['names']:>7} {r['metadata_s']:>10} {m['p50_ms']:>8}/{m['max_ms']:<8} "
              f"{f'{cs[0]}..{cs[-1]} (sum {round(sum(cs), 1)})':>24} {c['p50_ms']:>8}/{c['max_ms']:<8} "
              f"{r['partitions']:>10} {r['idle_cpu_pct']:>10} {r['stop_s']:>7}")
    if dd:
        print(f"{'on disk':<10} {'creates s (first..last)':>28} {'other p50/max ms':>17} {'partitions':>10} "
              f"{'SIGTERM mid-create s':>21}")
    for r in dd:
        m, cs = r["metadata_other"], r["create_s"]
        print(f"{r['broker']:<10} {f'{cs[0]}..{cs[-1]} (sum {round(sum(cs), 1)})':>28} "
              f"{m['p50_ms']:>8}/{m['max_ms']:<8} {r['partitions']:>10} {r['stop_s']:>21}")
    if args.json:
        Path(args.json).write_text(json.dumps({"brokers": rows, "data_dir": dd}, indent=2))
    return 0


if __name__ == "__main__":
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    sys.exit(main())
