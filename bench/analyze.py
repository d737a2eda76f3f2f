"""How long recording takes and how long `fakekafka analyze` takes on a big recording.

    python bench/analyze.py                        # 10^6 requests over 3 hours: about 1.5 min
    python bench/analyze.py --requests 100000 --hours 1 --keep /tmp/rec     # smaller; keep the files
    python bench/analyze.py --master spark://host:7077                      # the job on a cluster

The recording is synthetic but shaped like a busy test environment: RequestRecords for 4 producer apps
(confluent-kafka, kafka-python, the Java client) writing to 4 topics, 4 consumer groups (15 members, three
client libraries) that fetch, heartbeat, commit and rebalance every 10-40 minutes (JoinGroup and SyncGroup
of every member, REBALANCE_IN_PROGRESS on heartbeats meanwhile), an admin client, Metadata and
FindCoordinator traffic, ApiVersions per connection, and a few NOT_LEADER_OR_FOLLOWER produce errors.
Latencies are log-normal per API; empty fetches wait out a 500 ms long poll.

Timed: (1) feeding the records to `RequestRecorder.__call__` (what the server's loop pays per request);
(2) from the first call until `close()` returns, i.e. all Parquet files written by the writer thread;
(3) `fakekafka analyze DIR` as a subprocess, Spark local[*] unless --master, start to exit (JVM start
included). Generating the records is not timed. Everything lives in a temporary directory, removed
afterwards unless --keep.
"""

from __future__ import annotations

import argparse
import math
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass, field

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)

from fakekafka.observe.recording import RequestRecorder  # noqa: E402
from fakekafka.observe.records import RequestRecord  # noqa: E402

TOPICS = {"orders": 12, "payments": 6, "events": 24, "audit": 3}
BROKERS = (1, 2, 3)


@dataclass
class Client:
    client_id: str
    software: tuple[str, str]
    port: int
    topic: str = ""
    group: str = ""
    member_id: str = ""
    partitions: list[int] = field(default_factory=list)
    started: bool = False


@dataclass
class Group:
    name: str
    topic: str
    members: list[Client]
    generation: int = 0
    next_rebalance: float = 0.0
    rebalancing_until: float = 0.0


def synthetic(n: int, hours: float, seed: int = 7) -> Iterator[RequestRecord]:
    """`n` requests spread over `hours`, in time order."""
    rng = random.Random(seed)
    start = float(int(time.time()) // 3600 * 3600 - int(math.ceil(hours)) * 3600)
    span = hours * 3600
    port = iter(range(40000, 65000))
    confluent, kpy = ("confluent-kafka-python", "2.6.1-rdkafka-2.6.1"), ("kafka-python", "2.2.15")
    java, aio = ("apache-kafka-java", "3.9.0"), ("aiokafka", "0.12.0")
    producers = [Client("orders-svc", confluent, next(port), "orders"), Client("orders-svc", confluent, next(port),
                                                                                "orders"),
                 Client("payments-svc", kpy, next(port), "payments"), Client("ingest", java, next(port), "events"),
                 Client("auditor", confluent, next(port), "audit")]
    groups = []
    for name, topic, size, software in (("billing", "orders", 4, confluent), ("analytics", "events", 6, java),
                                        ("audit-readers", "audit", 2, kpy), ("search-indexer", "payments", 3, aio)):
        members = [Client(f"{name}-{i}", software, next(port), topic, name) for i in range(size)]
        groups.append(Group(name, topic, members, next_rebalance=start + rng.uniform(0, 60)))
    admin = Client("ops-admin", java, next(port))
    consumers = [m for g in groups for m in g.members]
    everyone = producers + consumers + [admin]
    corr: dict[str, int] = {}

    def record(c: Client, t: float, api: str, version: int, latency: float, *, errors: tuple[str, ...] = (),
               topics: tuple[tuple[str, int], ...] = (), groups: tuple[str, ...] = (), records: int = 0,
               generation: int | None = None, member: str | None = None, req: int = 100, resp: int = 80
               ) -> RequestRecord:
        key = c.client_id + str(c.port)
        corr[key] = corr.get(key, 0) + 1
        spread = tuple(records // len(topics) + (i < records % len(topics)) for i in range(len(topics))) \
            if records and topics else ()
        return RequestRecord(int(t * 1000), BROKERS[c.port % 3], f"10.0.0.{c.port % 200}:{c.port}", c.client_id,
                             api, version, corr[key], latency, errors, t, c.software[0], c.software[1], req, resp,
                             topics, groups, records, generation, member, spread)

    def rebalance(g: Group, t: float) -> Iterator[RequestRecord]:
        g.generation += 1
        parts = TOPICS[g.topic]
        for i, m in enumerate(g.members):
            m.member_id = m.member_id or f"{m.client_id}-{rng.getrandbits(48):012x}"
            m.partitions = [p for p in range(parts) if p % len(g.members) == i]
            yield record(m, t + i * 0.002, "JoinGroup", 9, rng.lognormvariate(3, 0.5), groups=(g.name,),
                         generation=g.generation, member=m.member_id, req=300, resp=400)
        for i, m in enumerate(g.members):
            yield record(m, t + 0.05 + i * 0.002, "SyncGroup", 5, rng.lognormvariate(0.5, 0.5), groups=(g.name,),
                         generation=g.generation, member=m.member_id, req=200, resp=150)
        g.rebalancing_until = t + 0.05
        g.next_rebalance = t + rng.uniform(600, 2400)

    gap = span / n
    t = start
    emitted = 0
    while emitted < n:
        t += rng.expovariate(1 / gap)
        for g in groups:
            if t >= g.next_rebalance:
                for r in rebalance(g, t):
                    if emitted < n:
                        emitted += 1
                        yield r
        c = rng.choice(everyone) if rng.random() < 0.02 else None
        if c is not None and not c.started:
            c.started = True
            out = record(c, t, "ApiVersions", 3, rng.lognormvariate(-2, 0.3), req=60, resp=450)
        else:
            roll = rng.random()
            if roll < 0.40:
                c = rng.choice(producers)
                parts = tuple(sorted({(c.topic, rng.randrange(TOPICS[c.topic])) for _ in range(rng.randint(1, 3))}))
                recs = max(1, int(rng.lognormvariate(3.5, 1.0)))
                failed = rng.random() < 0.003
                out = record(c, t, "Produce", 9 if c.software[0] != "kafka-python" else 7, rng.lognormvariate(0, .6),
                             errors=("NOT_LEADER_OR_FOLLOWER",) if failed else (), topics=parts, records=recs,
                             req=200 + recs * 130, resp=60 * len(parts))
            elif roll < 0.75:
                c = rng.choice(consumers)
                empty = rng.random() < 0.3
                recs = 0 if empty else max(1, int(rng.lognormvariate(3.5, 1.0)))
                out = record(c, t, "Fetch", 12 if c.software != kpy else 11,
                             500 + rng.random() if empty else rng.lognormvariate(0.3, 0.7),
                             topics=tuple((c.topic, p) for p in c.partitions), records=recs, req=120,
                             resp=100 + recs * 130)
            elif roll < 0.87:
                c = rng.choice(consumers)
                g = next(g for g in groups if g.name == c.group)
                errors = ("REBALANCE_IN_PROGRESS",) if t < g.rebalancing_until + 3 else ()
                out = record(c, t, "Heartbeat", 4, rng.lognormvariate(-1, 0.4), errors=errors, groups=(g.name,),
                             generation=g.generation or None, member=c.member_id or None)
            elif roll < 0.93:
                c = rng.choice(consumers)
                g = next(g for g in groups if g.name == c.group)
                out = record(c, t, "OffsetCommit", 8, rng.lognormvariate(-0.5, 0.5), groups=(g.name,),
                             topics=tuple((c.topic, p) for p in c.partitions), generation=g.generation or None,
                             member=c.member_id or None)
            elif roll < 0.97:
                c = rng.choice(everyone)
                out = record(c, t, "Metadata", 12, rng.lognormvariate(-1.5, 0.4),
                             topics=((c.topic, -1),) if c.topic else (), resp=900)
            elif roll < 0.98:
                c = rng.choice(consumers)
                out = record(c, t, "FindCoordinator", 4, rng.lognormvariate(-2, 0.3), groups=(c.group,))
            elif roll < 0.99:
                c = rng.choice(consumers)
                out = record(c, t, "OffsetFetch", 8, rng.lognormvariate(-1, 0.4), groups=(c.group,),
                             topics=tuple((c.topic, p) for p in c.partitions))
            else:
                out = record(admin, t, rng.choice(["ListOffsets", "DescribeConfigs", "DescribeCluster"]), 2,
                             rng.lognormvariate(-1, 0.5), topics=(("orders", -1),))
        emitted += 1
        yield out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--requests", type=int, default=1_000_000)
    ap.add_argument("--hours", type=float, default=3.0)
    ap.add_argument("--max-records", type=int, default=100_000, help="RequestRecorder's records per file")
    ap.add_argument("--master", help="Spark master for the analyze job (default local[*])")
    ap.add_argument("--format", choices=["md", "html"], default="md")
    ap.add_argument("--keep", metavar="DIR", help="keep the recording and the report in DIR")
    args = ap.parse_args()

    work = args.keep or tempfile.mkdtemp(prefix="fakekafka-bench-analyze-")
    recording = os.path.join(work, "recording")
    report = os.path.join(work, f"report.{args.format}")
    try:
        t0 = time.perf_counter()
        records = list(synthetic(args.requests, args.hours))
        generate = time.perf_counter() - t0

        recorder = RequestRecorder(recording, max_records=args.max_records, max_seconds=3600)
        t0 = time.perf_counter()
        for r in records:
            recorder(r)
        calls = time.perf_counter() - t0
        recorder.close()
        write = time.perf_counter() - t0
        size = sum(p.stat().st_size for p in recorder.files)
        hours = len({p.parent.name for p in recorder.files})

        cmd = [sys.executable, "-m", "fakekafka", "analyze", recording, "--out", report, "--format", args.format]
        if args.master:
            cmd += ["--master", args.master]
        t0 = time.perf_counter()
        proc = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT)
        analyze = time.perf_counter() - t0
        if proc.returncode != 0:
            print(proc.stderr[-3000:], file=sys.stderr)
            return 1

        n = len(records)
        where = report if args.keep else "(removed; --keep DIR keeps it)"
        print(f"{n} synthetic requests over {args.hours:g} h ({generate:.1f} s to generate, not timed below)")
        print()
        print("| step | seconds | requests/s | per request | output |")
        print("|---|---:|---:|---:|---|")
        print(f"| listener calls (server loop's share) | {calls:.2f} | {n / calls:,.0f} | {calls / n * 1e6:.2f} us "
              f"| |")
        print(f"| record: calls + writer until close() | {write:.2f} | {n / write:,.0f} | {write / n * 1e6:.2f} us "
              f"| {len(recorder.files)} files in {hours} hour partitions, {size / 1e6:.1f} MB "
              f"({size / n:.1f} B/request) |")
        print(f"| fakekafka analyze (Spark {args.master or 'local[*]'}, incl. JVM start) | {analyze:.1f} "
              f"| {n / analyze:,.0f} | {analyze / n * 1e6:.1f} us | {where} |")
        return 0
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
