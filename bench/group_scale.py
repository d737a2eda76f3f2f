"""Big consumer groups and many small ones, with a load generator that is not the limit: franz-go members
(`bench/groupload`, built with `go build` into ~/.cache/fakekafka/bin) on fakekafka and on Apache Kafka 4.4 in one
run.

    python bench/group_scale.py [--cells 1x500,1000x2] [--protocols consumer,classic] [--brokers fakekafka,kafka]
                                [--repeat N] [--timeout S] [--config KEY=VALUE ...] [--json out.json]
                                [--plot out.svg] [--baseline DIR]

A cell is (broker, protocol, G groups x M members). Both brokers run as subprocesses on loopback for the whole run
(`_peers.py`; Kafka on its stock JVM (1 GiB heap, G1) with the reference launcher's test settings: no initial
rebalance delay, no assignment interval, as fakekafka's defaults), and the cells alternate between them, `--repeat`
times, so both see the same load of a shared machine. Each cell gets a new topic of max(2M, 4) partitions, created
before the clock and known to the group coordinator by then (a one-member group holds a partition of it first), and
new groups; G x M franz-go clients (one process, goroutines) subscribe to it, with the KIP-848
protocol (`ServerSideBalancer`: the broker's `uniform` assignor) or the classic one (cooperative-sticky). The clock
runs from the clients' start until every member holds at least one partition and no partition is held twice in a
group; broker CPU is read from /proc over the same time. The table gives the median of the repeats and their range;
a second table the requests each member sent until then (franz-go's hooks count them), the group protocol's and all;
a third how long the group protocol's round trips took the members (p50 and p99).
`--config KEY=VALUE` (repeatable) sets a broker config on both brokers, e.g. Kafka's stock group settings
(`group.consumer.heartbeat.interval.ms=5000`, `group.consumer.min.heartbeat.interval.ms=5000`,
`group.consumer.assignment.interval.ms=1000`) in place of the test settings.

`--plot` draws the scale curves (matplotlib: `pip install -e '.[bench]'`): time to stable against the group's size for
the cells of one group, and against the number of groups for the cells of 2-member groups, one line per broker and
protocol with each run's point, so the spread shows.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
import uuid
from collections.abc import Callable

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)

from _peers import GoMissing, go_tool, kafka_available, start_broker, stop_all  # noqa: E402
from groups import create_topic  # noqa: E402


def groupload_binary() -> str:
    """bench/groupload built into ~/.cache/fakekafka/bin (again when its source is newer)."""
    try:
        return go_tool("groupload")
    except GoMissing:
        sys.exit("bench/group_scale.py needs Go to build bench/groupload (eval \"$(bash .ci/install.sh)\")")
    except RuntimeError as e:
        sys.exit(str(e))


def groupload(binary: str, broker, topic: str, groups: int, members: int, protocol: str, prefix: str,
              timeout: float) -> dict:
    """One groupload run: its JSON line (`seconds` None when the groups never became stable in `timeout`)."""
    done = subprocess.run([binary, "-brokers", broker.bootstrap, "-topic", topic, "-groups", str(groups),
                           "-members", str(members), "-protocol", protocol, "-prefix", prefix,
                           "-timeout", f"{timeout}s"], capture_output=True, text=True, timeout=timeout + 300)
    lines = [ln for ln in done.stdout.splitlines() if ln.startswith("{")]
    if not lines:
        raise RuntimeError(f"groupload failed ({done.returncode}): {done.stderr[-2000:]}")
    return json.loads(lines[-1])


def run_cell(binary: str, broker, groups: int, members: int, protocol: str, timeout: float) -> dict:
    topic = f"bench-scale-{uuid.uuid4().hex[:8]}"
    partitions = max(2 * members, 4)
    create_topic(broker.bootstrap, topic, partitions, 60)
    # a one-member KIP-848 group until it holds a partition, before the clock: Kafka's group coordinator learns of a
    # new topic a moment after its brokers' metadata, and a join before that gets an empty target (the cell would
    # then measure that race: its first members holding nothing to give up, or everything)
    if groupload(binary, broker, topic, 1, 1, "consumer", f"{topic}-probe", 60)["seconds"] is None:
        raise RuntimeError(f"the probe group never held a partition of {topic} in 60 s")
    cpu0 = broker.cpu_seconds()
    cell = groupload(binary, broker, topic, groups, members, protocol, topic, timeout)
    cpu = broker.cpu_seconds() - cpu0  # includes the members leaving, after the clock stopped
    cell.update(broker=getattr(broker, "label", broker.kind), partitions=partitions, cpu_s=cpu, timeout=timeout)
    return cell


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--cells", default="1x500,1000x2", help="GROUPSxMEMBERS, comma-separated")
    ap.add_argument("--protocols", default="consumer")
    ap.add_argument("--brokers", default="fakekafka,kafka")
    ap.add_argument("--timeout", type=float, default=120.0)
    ap.add_argument("--repeat", type=int, default=1, help="runs of every cell, interleaved (default 1)")
    ap.add_argument("--baseline", help="a fakekafka checkout to run beside this one (`fakekafka@DIR`), in turn")
    ap.add_argument("--config", action="append", default=[], metavar="KEY=VALUE",
                    help="a broker config by Kafka's name, on both brokers (repeatable; e.g. Kafka's stock "
                         "group.consumer.heartbeat.interval.ms=5000)")
    ap.add_argument("--json")
    ap.add_argument("--plot", help="an SVG/PNG of the scale curves (needs matplotlib)")
    args = ap.parse_args()
    if args.plot:
        import matplotlib  # noqa: F401  (before the run: a missing matplotlib should not cost a run)
    cells = [tuple(int(x) for x in c.split("x")) for c in args.cells.split(",") if c]
    protocols = [p for p in args.protocols.split(",") if p]
    brokers = [b for b in args.brokers.split(",") if b]
    if "kafka" in brokers and not kafka_available():
        print("Apache Kafka is not installed (eval \"$(bash .ci/install.sh)\"): fakekafka only", file=sys.stderr)
        brokers.remove("kafka")
    configs = {}
    for c in args.config:
        key, eq, value = c.partition("=")
        if not key or not eq:
            ap.error(f"--config takes KEY=VALUE, not {c!r}")
        configs[key] = value
    binary = groupload_binary()
    rows = []
    try:
        running = {kind: start_broker(kind, timeout=120, stock_jvm=kind == "kafka", configs=configs)
                   for kind in brokers}
        if args.baseline:
            label = f"fakekafka@{os.path.basename(os.path.normpath(args.baseline))}"
            running[label] = start_broker("fakekafka", timeout=120, cwd=args.baseline, configs=configs)
            running[label].label = label
            brokers.append(label)
        for r in range(args.repeat):
            for groups, members in cells:
                for protocol in protocols:
                    for kind in (brokers if r % 2 == 0 else brokers[::-1]):
                        t0 = time.perf_counter()
                        cell = run_cell(binary, running[kind], groups, members, protocol, args.timeout)
                        rows.append(cell)
                        took = "never" if cell["seconds"] is None else f"{cell['seconds']:.2f} s"
                        print(f"  {kind:9} {protocol:8} {groups}x{members}: {took}, {cell['assigned']}/{cell['of']} "
                              f"assigned, broker CPU {cell['cpu_s']:.1f} s (cell {time.perf_counter() - t0:.0f} s)",
                              file=sys.stderr)
    finally:
        stop_all()
    settings = "; " + ", ".join(f"{k}={v}" for k, v in configs.items()) if configs else ""
    print(f"\nTime until every member holds a partition (franz-go; timeout {args.timeout:.0f} s; broker CPU "
          f"including the members leaving; median of {args.repeat} interleaved runs, range in brackets{settings})\n")
    print_table(rows, cells, brokers, protocols, summarize)
    print("\nRequests the members sent until then, per member (median of the runs): the group protocol's "
          "(ConsumerGroupHeartbeat; JoinGroup, SyncGroup and Heartbeat) and all of them\n")
    print_table(rows, cells, brokers, protocols, summarize_requests)
    print("\nThe group protocol's round trips as the members timed them until then (franz-go's end-to-end time, "
          "from writing a request to reading its answer; median over the runs of each run's p50 and p99; a classic "
          "JoinGroup waits for its rebalance)\n")
    print_table(rows, cells, brokers, protocols, summarize_round_trips)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=1)
    if args.plot:
        plot(rows, args.plot)


def plot(rows: list[dict], path: str) -> None:
    """Two panels: one group of M members (x: M), G groups of 2 (x: G); a line through each (broker, protocol)'s
    medians, every run a dot; runs never stable drawn at the timeout, hollow."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    panels = [("members of one group", lambda r: r["groups"] == 1, "members"),
              ("groups of 2 members", lambda r: r["members"] == 2, "groups")]
    fig, axes = plt.subplots(1, 2, figsize=(10, 4))
    styles = {"fakekafka": "tab:blue", "kafka": "tab:orange"}
    for ax, (title, keep, x) in zip(axes, panels, strict=True):
        series: dict[tuple[str, str], dict[int, list[dict]]] = {}
        for r in rows:
            if keep(r):
                series.setdefault((r["broker"], r["protocol"]), {}).setdefault(r[x], []).append(r)
        for (broker, protocol), by_x in sorted(series.items()):
            label = f"{'Apache Kafka 4.4.0' if broker == 'kafka' else broker} {protocol}"
            line = "-" if protocol == "consumer" else "--"
            xs = sorted(by_x)
            medians = [statistics.median(r["seconds"] if r["seconds"] is not None else r["timeout"]
                                         for r in by_x[v]) for v in xs]
            ax.plot(xs, medians, line, color=styles.get(broker), label=label, marker="o", markersize=3)
            for v in xs:
                for r in by_x[v]:
                    never = r["seconds"] is None
                    ax.plot([v], [r["timeout"] if never else r["seconds"]], "o", markersize=4, alpha=0.5,
                            markerfacecolor="none" if never else styles.get(broker),
                            markeredgecolor=styles.get(broker))
        ax.set_xscale("log")
        ax.set_ylim(bottom=0)
        ax.set_xlabel(title)
        ax.set_ylabel("seconds until every member holds a partition")
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize=8)
    fig.suptitle("franz-go members, fakekafka and Apache Kafka 4.4.0 in one run, interleaved", fontsize=10)
    fig.tight_layout()
    fig.savefig(path)
    print(f"plot: {path}", file=sys.stderr)


def print_table(rows: list[dict], cells: list[tuple[int, ...]], brokers: list[str], protocols: list[str],
                summary: Callable[[list[dict]], str]) -> None:
    """A markdown table: a line per cell, a column per broker and protocol, `summary` of the runs in each."""
    header = ["cell", *(f"{b} {p}" for b in brokers for p in protocols)]
    print("| " + " | ".join(header) + " |")
    print("|" + "---|" * len(header))
    for groups, members in cells:
        out = [summary([r for r in rows if (r["broker"], r["protocol"], r["groups"], r["members"])
                        == (b, p, groups, members)]) for b in brokers for p in protocols]
        print(f"| {groups} x {members} | " + " | ".join(out) + " |")


def summarize(runs: list[dict]) -> str:
    """Median time and CPU of a cell's runs, with their range; runs that never became stable are counted."""
    stable = [r["seconds"] for r in runs if r["seconds"] is not None]
    cpu = [r["cpu_s"] for r in runs]
    never = len(runs) - len(stable)
    if not stable:
        worst = min(runs, key=lambda r: r["assigned"])
        return f"never ({worst['assigned']}/{worst['of']}), {statistics.median(cpu):.1f} s CPU"
    spread = f" [{min(stable):.1f}-{max(stable):.1f}]" if len(stable) > 1 else ""
    text = f"{statistics.median(stable):.1f} s{spread}, {statistics.median(cpu):.1f} s CPU"
    return text + (f", never stable in {never} of {len(runs)}" if never else "")


GROUP_APIS = {"consumer": ("ConsumerGroupHeartbeat",), "classic": ("JoinGroup", "SyncGroup", "Heartbeat")}


def summarize_requests(runs: list[dict]) -> str:
    """Median requests per member until the cell was stable (counted by groupload's client hooks): a broker
    that makes its clients ask more often pays for it in time."""
    if not runs:
        return ""
    group = [sum(r["requests"].get(a, 0) for a in GROUP_APIS[r["protocol"]]) / r["of"] for r in runs]
    every = [sum(r["requests"].values()) / r["of"] for r in runs]
    return f"{statistics.median(group):.1f} group, {statistics.median(every):.1f} in all"


def summarize_round_trips(runs: list[dict]) -> str:
    """The members' group requests' p50 and p99 round trip, each the median over the runs: a broker busy on one
    thread answers heartbeats late, and its members act on the answers that much later."""
    timed = [r["group_ms"] for r in runs if r.get("group_ms")]
    if not timed:
        return ""
    return (f"p50 {statistics.median(t['p50'] for t in timed):.0f} ms, "
            f"p99 {statistics.median(t['p99'] for t in timed):.0f} ms")


if __name__ == "__main__":
    main()
