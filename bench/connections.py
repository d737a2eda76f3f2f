"""Memory per open connection, idle and then busy, and the latency of small produces beside thousands of
connections: N raw connections (bench/connload, a small Go program built on first use, so the client is not the
limit), each answered ApiVersions and Metadata as a producer's is on connecting, then left idle; then each sends one
small Produce (acks=1, a 100-byte record) every second for a while; on fakekafka and Apache Kafka 4.4.0 (its own
scripts' JVM settings: 1 GiB heap, G1) in one run. The broker's resident memory (RSS, /proc) before, idle, after the
busy phase, and after that once the topic written to is deleted (fakekafka keeps its log in memory, Kafka in files),
less the first, divided by N; and the produces' p50/p99 latency.

    python bench/connections.py                      # 5,000 connections, 20 s busy
    python bench/connections.py --connections 1000 --brokers fakekafka --baseline /work/main

A JVM's RSS grows by its heap's use as well as by what each connection holds, and G1 gives little back: its
figure is the marginal cost seen from outside, as fakekafka's is. Kafka is given a full GC (jcmd GC.run) before
each reading when jcmd is on PATH, so garbage is not counted.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
import uuid

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)

from _peers import go_tool, kafka_available, start_broker, stop_all  # noqa: E402

from fakekafka.testing.client import RemoteCluster  # noqa: E402
from fakekafka.wire import ApiKey, encode_request  # noqa: E402
from fakekafka.wire.records import build_batch  # noqa: E402

PARTITIONS = 8


def rss_kb(pid: int) -> int:
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def settle(b) -> int:
    jcmd = shutil.which("jcmd")
    if b.kind == "kafka" and jcmd:
        subprocess.run([jcmd, str(b.pid), "GC.run"], capture_output=True, timeout=60)
    time.sleep(1.0)
    return rss_kb(b.pid)


def producer_frames(topic: str) -> tuple[bytes, bytes]:
    """ApiVersions and Metadata as a producer sends them on connecting: what an idle producer's connection has had
    answered."""
    versions = encode_request(ApiKey.API_VERSIONS, 3, 1, {"client_software_name": "bench",
                                                          "client_software_version": "1"})
    metadata = encode_request(ApiKey.METADATA, 12, 2, {"topics": [{"name": topic, "topic_id": uuid.UUID(int=0)}],
                                                       "allow_auto_topic_creation": False})
    return versions, metadata


def produce_frames(topic: str, partitions: int) -> list[bytes]:
    """One Produce per partition (v9, acks=1), each one 100-byte record: connection i sends partition i % N's."""
    batch = build_batch([{"key": None, "value": b"x" * 100, "timestamp": int(time.time() * 1000)}])
    return [encode_request(ApiKey.PRODUCE, 9, 3, {
        "transactional_id": None, "acks": 1, "timeout_ms": 30_000,
        "topic_data": [{"name": topic, "partition_data": [{"index": p, "records": batch}]}]})
        for p in range(partitions)]


def run(binary: str, b, n: int, busy: float, topic: str) -> dict:
    """connload against broker `b`: RSS before, once the connections are open and idle, and after the busy phase."""
    host_port = b.bootstrap
    versions, metadata = producer_frames(topic)
    before = settle(b)
    proc = subprocess.Popen([binary, "-addr", host_port, "-n", str(n), "-setup", f"{versions.hex()},{metadata.hex()}",
                             "-produce", ",".join(f.hex() for f in produce_frames(topic, PARTITIONS)),
                             "-interval", "1s", "-busy", f"{busy}s"],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        opened = float(proc.stdout.readline().split()[1])
        idle = settle(b)
        proc.stdin.write("\n")
        proc.stdin.flush()
        if proc.stdout.readline().strip() != "busy-done":
            raise RuntimeError("connload stopped before its busy phase ended")
        after = settle(b)
        # the records the busy phase wrote out of the reading: fakekafka keeps its log in memory, Kafka in files
        with RemoteCluster(host_port) as cluster:
            cluster.delete_topic(topic)
            unstored = settle(b)
            cluster.create_topic(topic, PARTITIONS)  # for the next run
        proc.stdin.write("\n")
        proc.stdin.flush()
        stats = json.loads(proc.stdout.readline())
    finally:
        proc.kill()
        proc.wait()
    return {"before": before, "idle": idle, "busy": after, "unstored": unstored, "opened": opened, **stats}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--connections", type=int, default=5000)
    ap.add_argument("--busy", type=float, default=20.0, help="seconds of one produce per connection per second")
    ap.add_argument("--brokers", default="fakekafka,kafka")
    ap.add_argument("--baseline", help="a fakekafka checkout to run beside this one")
    args = ap.parse_args()
    kinds = [b for b in args.brokers.split(",") if b]
    if "kafka" in kinds and not kafka_available():
        print("Apache Kafka is not installed: fakekafka only", file=sys.stderr)
        kinds.remove("kafka")
    binary = go_tool("connload")
    rows = []
    try:
        brokers = {k: start_broker(k, timeout=120, stock_jvm=True) for k in kinds}
        if args.baseline:
            brokers[f"fakekafka@{args.baseline}"] = start_broker("fakekafka", timeout=120, cwd=args.baseline)
        for label, b in brokers.items():
            with RemoteCluster(b.bootstrap) as cluster:
                cluster.create_topic("t", PARTITIONS)
            run(binary, b, 100, 2.0, "t")  # the first connections' one-off costs (buffers, caches) out of the figure
            r = run(binary, b, args.connections, args.busy, "t")
            rows.append((label, r))
            print(f"  {label}: RSS {r['before'] / 1024:.1f} -> {r['idle'] / 1024:.1f} (idle) -> "
                  f"{r['busy'] / 1024:.1f} MiB (busy); {r['produces']} produces, {r['errors']} errors",
                  file=sys.stderr)
    finally:
        stop_all()
    n = args.connections
    print(f"\n{n:,} connections (ApiVersions and Metadata answered on each), idle, then each sending one Produce "
          f"(acks=1, 100 B) a second for {args.busy:g} s\n")
    print("| broker | RSS before | per connection, idle | after busy | after busy, topic deleted | opened in "
          "| produces/s | produce p50 / p99 / max |")
    print("|---|---|---|---|---|---|---|---|")
    for label, r in rows:
        per = {k: (r[k] - r["before"]) * 1024 / n / 1000 for k in ("idle", "busy", "unstored")}
        print(f"| {label} | {r['before'] / 1024:.1f} MiB | {per['idle']:.1f} KB | {per['busy']:.1f} KB "
              f"| {per['unstored']:.1f} KB | {r['opened']:.1f} s "
              f"| {r['rate']:,.0f} | {r['p50_ms']:.1f} / {r['p99_ms']:.1f} / {r['max_ms']:.0f} ms |")

if __name__ == "__main__":
    main()
