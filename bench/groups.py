"""Consumer-group rebalance time of fakekafka against tansu, side by side, with confluent-kafka consumers.

    python bench/groups.py [--sizes 2,10,50] [--partitions 100] [--repeat 7] [--tansu-repeat 3]
                           [--brokers fakekafka,tansu] [--timeout S] [--tansu-timeout S] [--tansu-budget S]
                           [--consumer-config key=value ...] [--json out.json]

Both brokers run as subprocesses on loopback for the whole run (`_peers.py`); each gets one topic with
--partitions partitions, created with CreateTopics before any timing. A cell is (group size N, repeat,
broker): N confluent-kafka Consumers in this one process, each with its own librdkafka threads, join a new
group (its own group.id) subscribed to that topic. Before the clock starts every consumer has fetched the
topic's metadata and had an OffsetFetch answered by its group coordinator (so that connection is up too);
then all N call subscribe() back to back, and the clock runs from the last subscribe() returning until the
assignments the consumers hold (from their on_assign/on_revoke callbacks, driven by poll(0) on every
consumer in turn) cover every partition exactly once with every consumer holding at least one. Afterwards,
untimed, DescribeGroups must show the group Stable with the same N members and the same assignment ("check"
column). The cells are interleaved (for each N and repeat: fakekafka, then tansu) so drifts in the
machine's load hit both alike.

group.initial.rebalance.delay.ms is 0 on both: fakekafka's default (no CLI flag), and tansu has no such
setting (it has no initial delay). The consumers use librdkafka's defaults for the group (session.timeout.ms
45 s, heartbeat.interval.ms 3 s, max.poll.interval.ms 5 min) and the eager `range` assignor;
--consumer-config overrides any of it for both brokers.

tansu takes ~23 s per group join on this machine, so it gets fewer repeats, each bounded by
--tansu-timeout, and no further repeats for an N once --tansu-budget seconds have gone to that N; a cell that
runs out of time is shown as "timeout" (and tansu is restarted for the next cell). Every loop has a
deadline; consumers are closed (in a helper thread, bounded) and brokers stopped by PID. See bench/README.md.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import threading
import time
import uuid
from dataclasses import asdict, dataclass, field

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)

from _peers import BrokerProcess, kafka_available, start_broker, stop_all  # noqa: E402

try:
    from confluent_kafka import Consumer, ConsumerGroupState, TopicPartition
    from confluent_kafka.admin import AdminClient, NewTopic
except ImportError:  # pragma: no cover
    sys.exit("bench/groups.py needs confluent-kafka: pip install confluent-kafka")

# log_level 2: librdkafka's critical lines only; its "Connect ... failed" errors when a timed-out broker is
# stopped under the consumers would flood the table (--consumer-config log_level=7 debug=cgrp shows everything).
CONSUMER_CONFIG = {"enable.auto.commit": False, "partition.assignment.strategy": "range", "log_level": 2}
POLL_PAUSE = 0.0005  # seconds between rounds of poll(0) over all consumers: the clock's resolution, roughly


@dataclass
class Cell:
    kind: str
    n: int
    repeat: int
    seconds: float | None = None  # last subscribe() -> every partition assigned exactly once; None: timeout
    subscribe_spread_s: float = 0.0  # first subscribe() call -> last subscribe() returned (not in `seconds`)
    assign_callbacks: int = 0  # on_assign calls in the timed window; N means one generation did it
    revoke_callbacks: int = 0
    broker_cpu_s: float = float("nan")  # broker CPU during the timed window
    check: str = ""  # DescribeGroups afterwards: "ok" or what differed
    close_s: float = float("nan")
    notes: list[str] = field(default_factory=list)


def create_topic(bootstrap: str, topic: str, partitions: int, timeout: float) -> None:
    """CreateTopics, then wait (bounded) until metadata shows every partition with a leader."""
    admin = AdminClient({"bootstrap.servers": bootstrap, "log_level": 3})
    admin.create_topics([NewTopic(topic, num_partitions=partitions, replication_factor=1)],
                        operation_timeout=timeout, request_timeout=timeout)[topic].result(timeout)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        md = admin.list_topics(topic, timeout=timeout).topics.get(topic)
        if md is not None and md.error is None and len(md.partitions) == partitions \
                and all(p.leader >= 0 for p in md.partitions.values()):
            return
        time.sleep(0.01)
    raise RuntimeError(f"topic {topic}: not {partitions} partitions with leaders after {timeout}s")


def describe_check(bootstrap: str, group: str, n: int, held: dict[int, set[tuple[str, int]]],
                   member_ids: list[str], timeout: float) -> str:
    """What DescribeGroups says about the group, compared with what the consumers hold: 'ok' or the difference."""
    admin = AdminClient({"bootstrap.servers": bootstrap, "log_level": 3})
    try:
        d = admin.describe_consumer_groups([group], request_timeout=timeout)[group].result(timeout)
    except Exception as e:  # noqa: BLE001 - reported, not fatal
        return f"describe failed: {e}"
    problems = []
    if d.state != ConsumerGroupState.STABLE:
        problems.append(f"state {d.state.name}")
    if len(d.members) != n:
        problems.append(f"{len(d.members)} members")
    broker_view = {m.member_id: {(tp.topic, tp.partition) for tp in (m.assignment.topic_partitions or [])}
                   for m in d.members}
    client_view = {member_ids[i]: parts for i, parts in held.items()}
    if broker_view != client_view:
        problems.append("assignments differ from the consumers'")
    return "ok" if not problems else "; ".join(problems)


def close_all(consumers: list[Consumer], timeout: float) -> tuple[float, int]:
    """Closes every consumer (LeaveGroup) in a helper thread; (seconds, how many still open at the deadline)."""
    done = [0]

    def run() -> None:
        for c in consumers:
            try:
                c.close()
            except Exception:  # noqa: BLE001 - closing is best effort
                pass
            done[0] += 1

    t0 = time.perf_counter()
    t = threading.Thread(target=run, daemon=True)
    t.start()
    t.join(timeout)
    return time.perf_counter() - t0, len(consumers) - done[0]


def run_cell(broker: BrokerProcess, topic: str, partitions: int, n: int, repeat: int, timeout: float,
             extra_config: dict[str, str]) -> Cell:
    cell = Cell(broker.kind, n, repeat)
    group = f"bench-groups-{n}-{repeat}-{uuid.uuid4().hex[:8]}"
    everything = {(topic, p) for p in range(partitions)}
    held: dict[int, set[tuple[str, int]]] = {}
    counts = {"assign": 0, "revoke": 0}
    consumers: list[Consumer] = []

    def callbacks(i: int) -> dict:
        def on_assign(_c: Consumer, parts: list) -> None:
            counts["assign"] += 1
            held[i] = {(p.topic, p.partition) for p in parts}

        def on_revoke(_c: Consumer, _parts: list) -> None:
            counts["revoke"] += 1
            held.pop(i, None)
        return {"on_assign": on_assign, "on_revoke": on_revoke}

    try:
        for _ in range(n):
            c = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": group, **CONSUMER_CONFIG,
                          **extra_config})
            consumers.append(c)
        for c in consumers:
            # not part of the timing: metadata known, and the group coordinator found and connected (librdkafka
            # talks to it over a connection of its own; OffsetFetch goes there). Without this the last
            # consumers created are still looking for their coordinator when subscribe() is called.
            c.list_topics(topic, timeout=30)
            c.committed([TopicPartition(topic, 0)], timeout=30)
        cbs = [callbacks(i) for i in range(n)]
        cpu0 = broker.cpu_seconds()
        t_first = time.perf_counter()
        for c, cb in zip(consumers, cbs, strict=True):
            c.subscribe([topic], **cb)
        t0 = time.perf_counter()
        cell.subscribe_spread_s = t0 - t_first
        deadline = t0 + timeout
        while True:
            for c in consumers:
                msg = c.poll(0)
                if msg is not None and msg.error() is not None:
                    cell.notes.append(f"poll: {msg.error()}")
                    del cell.notes[:-5]
            now = time.perf_counter()
            if len(held) == n and all(held.values()):
                got = [tp for parts in held.values() for tp in parts]
                if len(got) == partitions and set(got) == everything:
                    cell.seconds = now - t0
                    break
            if now > deadline:
                break
            time.sleep(POLL_PAUSE)
        cell.broker_cpu_s = broker.cpu_seconds() - cpu0
        cell.assign_callbacks, cell.revoke_callbacks = counts["assign"], counts["revoke"]
        if cell.seconds is not None:
            cell.check = describe_check(broker.bootstrap, group, n, dict(held), [c.memberid() for c in consumers],
                                        timeout=30)
        else:
            cell.check = f"timeout: {len(held)} of {n} consumers held an assignment"
    finally:
        if cell.seconds is None:
            # librdkafka's close() waits for the JoinGroup still outstanding (tansu answers it only after
            # session.timeout.ms / 2): stop the broker first so that close() ends at once; the caller
            # starts a fresh one for the next cell
            broker.stop()
        cell.close_s, still_open = close_all(consumers, timeout=60)
        if still_open:
            cell.notes.append(f"{still_open} consumers still closing after 60 s")
    return cell


def fmt_s(x: float | None) -> str:
    if x is None:
        return "timeout"
    return f"{x * 1e3:.1f} ms" if x < 1 else f"{x:.2f} s"


def median_or_none(cells: list[Cell]) -> float | None:
    """Median of the finished cells; None (shown as timeout) if none finished."""
    vals = [c.seconds for c in cells if c.seconds is not None]
    return statistics.median(vals) if vals else None


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", default="2,10,50", help="group sizes N, comma-separated (default 2,10,50)")
    ap.add_argument("--partitions", type=int, default=100, help="partitions of the topic (default 100)")
    ap.add_argument("--repeat", type=int, default=7, help="repeats per N for fakekafka (default 7)")
    ap.add_argument("--tansu-repeat", type=int, default=3, help="repeats per N for tansu (default 3)")
    ap.add_argument("--brokers", default="fakekafka,tansu,kafka",
                    help="comma-separated: fakekafka, tansu, kafka (Apache Kafka, left out when its jars are absent)")
    ap.add_argument("--timeout", type=float, default=60, help="per-cell limit for fakekafka, s (default 60)")
    ap.add_argument("--tansu-timeout", type=float, default=60, help="per-cell limit for tansu, s (default 60)")
    ap.add_argument("--tansu-budget", type=float, default=100,
                    help="no further tansu repeats for an N once this many seconds went to it (default 100)")
    ap.add_argument("--consumer-config", action="append", default=[], metavar="KEY=VALUE",
                    help="librdkafka consumer setting for both brokers (repeatable)")
    ap.add_argument("--no-warmup", action="store_true", help="skip fakekafka's unrecorded N=2 warm-up cell")
    ap.add_argument("--json", help="write every cell as JSON here")
    args = ap.parse_args()

    sizes = [int(s) for s in args.sizes.split(",")]
    kinds = [k.strip() for k in args.brokers.split(",") if k.strip()]
    if "kafka" in kinds and not kafka_available():
        print('Apache Kafka\'s jars are not installed (run `eval "$(bash .ci/install.sh)"`): leaving kafka out',
              file=sys.stderr)
        kinds.remove("kafka")
    if any(n > args.partitions for n in sizes):
        sys.exit("every N must be <= --partitions (each consumer should get a partition)")
    extra = dict(kv.split("=", 1) for kv in args.consumer_config)
    repeats = {"fakekafka": args.repeat, "tansu": args.tansu_repeat}
    limits = {"fakekafka": args.timeout, "tansu": args.tansu_timeout}

    started = time.perf_counter()
    topic = f"bench-groups-{uuid.uuid4().hex[:8]}"
    brokers: dict[str, BrokerProcess] = {}

    def fresh(kind: str) -> BrokerProcess:
        b = start_broker(kind)
        create_topic(b.bootstrap, topic, args.partitions, timeout=30)
        return b

    cells: list[Cell] = []
    try:
        for kind in kinds:
            brokers[kind] = fresh(kind)
            print(f"{kind}: pid {brokers[kind].pid} on {brokers[kind].bootstrap}, topic {topic} "
                  f"({args.partitions} partitions)", flush=True)
        if "fakekafka" in brokers and not args.no_warmup:
            w = run_cell(brokers["fakekafka"], topic, args.partitions, 2, -1, args.timeout, extra)
            print(f"fakekafka warm-up (N=2, not recorded): {fmt_s(w.seconds)}", flush=True)
        for n in sizes:
            spent = {k: 0.0 for k in kinds}
            for r in range(max(repeats.get(k, args.repeat) for k in kinds)):
                for kind in kinds:
                    if r >= repeats.get(kind, args.repeat):
                        continue
                    if kind == "tansu" and spent[kind] >= args.tansu_budget:
                        continue
                    t = time.perf_counter()
                    cell = run_cell(brokers[kind], topic, args.partitions, n, r, limits.get(kind, args.timeout),
                                    extra)
                    spent[kind] += time.perf_counter() - t
                    cells.append(cell)
                    print(f"  N={n:<3} {kind:<9} #{r + 1}: {fmt_s(cell.seconds):>9}  "
                          f"(subscribe spread {fmt_s(cell.subscribe_spread_s)}, on_assign x{cell.assign_callbacks}, "
                          f"on_revoke x{cell.revoke_callbacks}, broker CPU {cell.broker_cpu_s:.2f} s, "
                          f"close {fmt_s(cell.close_s)}, check {cell.check})"
                          + (f" notes: {cell.notes}" if cell.notes else ""), flush=True)
                    if cell.seconds is None:
                        # run_cell stopped the broker (a group left mid-rebalance might also weigh on the next
                        # cell): start over with a fresh one
                        brokers[kind].stop()
                        brokers[kind] = fresh(kind)
                        if kind == "tansu":
                            spent[kind] = args.tansu_budget  # another repeat would most likely time out too
    finally:
        for b in brokers.values():
            b.stop()
        stop_all()

    print()
    print("Time from the last subscribe() until every partition is assigned exactly once across the N consumers")
    print(f"(topic with {args.partitions} partitions; confluent-kafka {_versions()}; medians, runs in brackets)")
    head = f"{'N':>4}"
    for kind in kinds:
        head += f"  {kind + ' median':>18} {'(min-max, runs)':<26}"
    if {"fakekafka", "tansu"} <= set(kinds):
        head += f"  {'tansu/fakekafka':>15}"
    if {"fakekafka", "kafka"} <= set(kinds):
        head += f"  {'kafka/fakekafka':>15}"
    print(head)
    for n in sizes:
        line = f"{n:>4}"
        med = {}
        for kind in kinds:
            cs = [c for c in cells if c.kind == kind and c.n == n]
            med[kind] = median_or_none(cs)
            vals = [c.seconds for c in cs if c.seconds is not None]
            timeouts = sum(c.seconds is None for c in cs)
            spread = f"{fmt_s(min(vals))}-{fmt_s(max(vals))}, {len(vals)}" if vals else "no run finished"
            if timeouts:
                spread += f", {timeouts} timeout"
            spread = f"({spread})"
            line += f"  {fmt_s(med[kind]) if cs else 'n/a':>18} {spread:<26}"
        if {"fakekafka", "tansu"} <= set(kinds):
            f, t = med["fakekafka"], med["tansu"]
            if f and t:
                ratio = f"{t / f:.0f}x" if t / f >= 10 else f"{t / f:.1f}x"
            elif f and t is None and any(c.kind == "tansu" and c.n == n for c in cells):
                ratio = f"> {min(limits['tansu'], 1e9) / f:.0f}x"
            else:
                ratio = "n/a"
            line += f"  {ratio:>15}"
        if {"fakekafka", "kafka"} <= set(kinds):
            f, k = med["fakekafka"], med["kafka"]
            line += f"  {(f'{k / f:.1f}x' if f and k else 'n/a'):>15}"
        print(line)
    bad: dict[tuple[str, str], list[str]] = {}
    for c in cells:
        if c.seconds is not None and c.check != "ok":
            bad.setdefault((c.kind, c.check), []).append(f"N={c.n} #{c.repeat + 1}")
    for (kind, check), where in bad.items():
        print(f"note: {kind}: DescribeGroups afterwards: {check} ({', '.join(where)})")
    print(f"\ntotal runtime {time.perf_counter() - started:.1f} s")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"args": vars(args), "cells": [asdict(c) for c in cells]}, f, indent=1)


def _versions() -> str:
    import confluent_kafka
    v = confluent_kafka.version()
    return f"{v[0] if isinstance(v, tuple) else v} / librdkafka {confluent_kafka.libversion()[0]}"


if __name__ == "__main__":
    main()
