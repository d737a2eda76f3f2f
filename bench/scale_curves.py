"""Scale curves: fakekafka and Apache Kafka 4.4.0 (its own scripts' JVM settings: 1 GiB heap, G1) side by side in
one run, as partitions, open connections and stored bytes grow; a table per curve and, with `--plot`, a picture.

    python bench/scale_curves.py                               # every curve at its default steps
    python bench/scale_curves.py --curves partitions --partitions 100,1000 --brokers fakekafka
    python bench/scale_curves.py --plot docs/img/scale-curves.svg --json /tmp/curves.json
    python bench/scale_curves.py --replot /tmp/curves.json --plot docs/img/scale-curves.svg

Each broker climbs each curve on one running process, step by step, so a step costs only what it adds:
- partitions: topics of 100 partitions (fewer for the first step) made with CreateTopics until the step's count
  has leaders; then Metadata v12 for all topics, one request at a time (p50 of `--requests`), the broker's RSS and
  its idle CPU over `--idle` seconds.
- connections: raw connections, each answered ApiVersions and Metadata and then left idle, until the step's count;
  then the RSS (Kafka given a full GC with jcmd first) and the p50/p99 of small Metadata requests on one more
  connection while the others stay open.
- stored bytes: 10 KiB records of random bytes (incompressible) written by franz-go (`bench/recload -random`,
  acks=1) into one topic of 8 partitions until the step's bytes; the rate of each step's writing and the RSS
  after it (fakekafka keeps its logs in memory; Kafka's are files in the page cache, outside its RSS).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
import uuid

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)

from _peers import kafka_available, start_broker, stop_all  # noqa: E402
from confluent_kafka.admin import AdminClient  # noqa: E402
from connections import open_idle, producer_frames, settle  # noqa: E402
from consume_scale import recload, recload_binary  # noqa: E402
from metadata_scale import Conn, make_topics, metadata_frame  # noqa: E402

CURVES = ("partitions", "connections", "bytes")
RECORD = 10240
PER_TOPIC = 100


def ints(text: str) -> list[int]:
    return sorted({int(float(x)) for x in text.split(",") if x})


def latency_ms(conn: Conn, frame: bytearray, n: int) -> list[float]:
    out = []
    for _ in range(n):
        t0 = time.perf_counter()
        conn.call(frame)
        out.append((time.perf_counter() - t0) * 1000)
    return sorted(out)


def partitions_curve(b, steps: list[int], requests: int, idle: float) -> list[dict]:
    rows, made, topic_no = [], 0, 0
    frame = metadata_frame(None)
    for step in steps:
        t0 = time.perf_counter()
        names, sizes = [], []
        while made < step:
            size = min(PER_TOPIC, step - made)
            names.append(f"curve-p-{topic_no:05d}")
            sizes.append(size)
            topic_no += 1
            made += size
        for size in sorted(set(sizes)):
            make_topics(b.bootstrap, [n for n, s in zip(names, sizes, strict=True) if s == size], size)
        took = time.perf_counter() - t0
        conn = Conn(b.bootstrap)
        conn.call(frame)  # warm-up, not timed
        times = latency_ms(conn, frame, requests)
        conn.close()
        rss = settle(b)
        c0 = b.cpu_seconds()
        time.sleep(idle)
        rows.append({"partitions": step, "made_s": took, "metadata_p50_ms": statistics.median(times),
                     "rss_mib": rss / 1024, "idle_cpu_pct": (b.cpu_seconds() - c0) / idle * 100})
        print(f"  {b.kind}: {step:,} partitions: {rows[-1]}", file=sys.stderr)
    return rows


def connections_curve(b, steps: list[int], requests: int) -> list[dict]:
    host, port = b.bootstrap.rsplit(":", 1)
    frames = producer_frames()
    small = metadata_frame(["t"])
    rows, socks = [], []
    try:
        base = settle(b)
        for step in steps:
            t0 = time.perf_counter()
            while len(socks) < step:
                socks.append(open_idle(host, int(port), frames))
            took = time.perf_counter() - t0
            rss = settle(b)
            probe = Conn(b.bootstrap)
            probe.call(small)
            times = latency_ms(probe, small, requests)
            probe.close()
            rows.append({"connections": step, "opened_s": took, "rss_mib": rss / 1024,
                         "per_connection_kb": (rss - base) * 1024 / step / 1000,
                         "metadata_p50_ms": statistics.median(times),
                         "metadata_p99_ms": times[max(0, int(len(times) * 0.99) - 1)]})
            print(f"  {b.kind}: {step:,} connections: {rows[-1]}", file=sys.stderr)
    finally:
        for s in socks:
            s.close()
    return rows


def bytes_curve(b, steps: list[int], timeout: float) -> list[dict]:
    binary = recload_binary()
    topic = f"curve-bytes-{uuid.uuid4().hex[:8]}"
    make_topics(b.bootstrap, [topic], 8)  # waits until every partition has a leader
    rows, stored = [], 0
    try:
        for step in steps:
            records = max(1, (step - stored) // RECORD)
            out = recload(binary, b, "-mode", "produce", "-topic", topic, "-partitions", "8", "-records",
                          str(records), "-size", str(RECORD), "-random", timeout=timeout)
            if not out["complete"]:
                raise RuntimeError(f"{b.kind}: produced {out['records']} of {records}")
            stored += records * RECORD
            rows.append({"bytes": step, "write_mb_s": records * RECORD / out["seconds"] / 1e6,
                         "rss_mib": settle(b) / 1024})
            print(f"  {b.kind}: {step / 1e6:,.0f} MB stored: {rows[-1]}", file=sys.stderr)
    finally:
        admin = AdminClient({"bootstrap.servers": b.bootstrap, "log_level": 3})
        admin.delete_topics([topic], operation_timeout=120)[topic].result(120)
        del admin  # gone before its broker stops (it would log failed reconnections)
    return rows


def table(curve: str, results: dict[str, dict[str, list[dict]]]) -> None:
    cols = {"partitions": ("made_s", "metadata_p50_ms", "rss_mib", "idle_cpu_pct"),
            "connections": ("opened_s", "metadata_p50_ms", "metadata_p99_ms", "rss_mib", "per_connection_kb"),
            "bytes": ("write_mb_s", "rss_mib")}[curve]
    brokers = [k for k in results if results[k].get(curve)]
    if not brokers:
        return
    print(f"\n{curve}\n")
    print("| " + curve + " | " + " | ".join(f"{b} {c}" for c in cols for b in brokers) + " |")
    print("|---" * (1 + len(cols) * len(brokers)) + "|")
    for i, row in enumerate(results[brokers[0]][curve]):
        cells = []
        for c in cols:
            for b in brokers:
                rows = results[b][curve]
                cells.append(f"{rows[i][c]:.3g}" if i < len(rows) else "")
        x = row[curve]
        print(f"| {x / 1e6:,.0f} MB | " if curve == "bytes" else f"| {x:,} | ", end="")
        print(" | ".join(cells) + " |")


def plot(results: dict[str, dict[str, list[dict]]], path: str) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    panels = [("partitions", "metadata_p50_ms", "Metadata (all topics) p50, ms"),
              ("connections", "metadata_p50_ms", "small Metadata p50 beside them, ms"),
              ("bytes", "write_mb_s", "writing, MB/s"),
              ("partitions", "rss_mib", "RSS, MiB"), ("connections", "rss_mib", "RSS, MiB"),
              ("bytes", "rss_mib", "RSS, MiB")]
    xlabel = {"partitions": "partitions", "connections": "open connections", "bytes": "stored bytes (MB)"}
    colors = {"fakekafka": "tab:blue", "kafka": "tab:orange"}
    fig, axes = plt.subplots(2, 3, figsize=(13, 7))
    for ax, (curve, key, label) in zip(axes.flat, panels, strict=True):
        for broker, curves in results.items():
            rows = curves.get(curve) or []
            if not rows:
                continue
            xs = [r[curve] / 1e6 if curve == "bytes" else r[curve] for r in rows]
            name = "Apache Kafka 4.4.0" if broker == "kafka" else broker
            ax.plot(xs, [r[key] for r in rows], marker="o", markersize=3, color=colors.get(broker), label=name)
        ax.set_xscale("log")
        ax.set_xlabel(xlabel[curve])
        ax.set_ylabel(label)
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize=8)
    fig.suptitle("fakekafka and Apache Kafka 4.4.0 as the work grows (bench/scale_curves.py, one run)")
    fig.tight_layout()
    fig.savefig(path)
    print(f"plot: {path}", file=sys.stderr)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--curves", default=",".join(CURVES), help=f"which of {', '.join(CURVES)}")
    ap.add_argument("--partitions", default="100,1000,3000,10000", help="the partition counts measured")
    ap.add_argument("--connections", default="100,1000,2500,5000", help="the connection counts measured")
    ap.add_argument("--bytes", default="1e8,5e8,1e9,4e9", help="the stored bytes measured")
    ap.add_argument("--brokers", default="fakekafka,kafka")
    ap.add_argument("--requests", type=int, default=50, help="Metadata requests timed per step")
    ap.add_argument("--idle", type=float, default=3.0, help="seconds of idle CPU measured per partition step")
    ap.add_argument("--timeout", type=float, default=600, help="seconds allowed to write one step's bytes")
    ap.add_argument("--json", help="write the measurements here")
    ap.add_argument("--plot", help="an SVG/PNG of the curves (needs matplotlib: pip install -e '.[bench]')")
    ap.add_argument("--replot", help="draw --plot from a --json of an earlier run, measuring nothing")
    args = ap.parse_args()
    if args.plot:
        import matplotlib  # noqa: F401  (before the run: a missing matplotlib should not cost a run)
    if args.replot:
        with open(args.replot) as f:
            results = json.load(f)["results"]
    else:
        curves = [c for c in args.curves.split(",") if c]
        unknown = set(curves) - set(CURVES)
        if unknown:
            ap.error(f"unknown curve(s) {', '.join(sorted(unknown))}: choose from {', '.join(CURVES)}")
        kinds = [b for b in args.brokers.split(",") if b]
        if "kafka" in kinds and not kafka_available():
            print("Apache Kafka is not installed: fakekafka only", file=sys.stderr)
            kinds.remove("kafka")
        steps = {"partitions": ints(args.partitions), "connections": ints(args.connections),
                 "bytes": ints(args.bytes)}
        results = {k: {} for k in kinds}
        try:
            for curve in curves:  # a fresh broker per curve, the brokers one after the other
                for kind in kinds:
                    b = start_broker(kind, timeout=120, stock_jvm=True)
                    try:
                        if curve == "partitions":
                            results[kind][curve] = partitions_curve(b, steps[curve], args.requests, args.idle)
                        elif curve == "connections":
                            results[kind][curve] = connections_curve(b, steps[curve], args.requests)
                        else:
                            results[kind][curve] = bytes_curve(b, steps[curve], args.timeout)
                    finally:
                        b.stop()
        finally:
            stop_all()
        if args.json:
            with open(args.json, "w") as f:
                json.dump({"when": time.strftime("%Y-%m-%d %H:%M"), "load": os.getloadavg(), "results": results},
                          f, indent=1)
    for curve in CURVES:
        table(curve, results)
    if args.plot:
        plot(results, args.plot)


if __name__ == "__main__":
    main()
