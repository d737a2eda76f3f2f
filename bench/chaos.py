"""What chaos mode costs, and how long a failing schedule takes to shrink.

    python bench/chaos.py [--starts N] [--records N] [--repeat R] [--json out.json]

1. Fixture: `Cluster(chaos=...).start()` + `stop()` on a shared loop thread, N times (default 200), for chaos
   off, on with the `none` profile (every request goes through the chaos source, nothing is drawn) and on with
   `busy`. Median and p90 in ms.
2. Throughput: confluent-kafka produces N records (default 20,000 x 100 B, acks=all, idempotent, linger.ms=5)
   to a 3-partition topic, then a consumer reads them back (assign from offset 0); records/s, median of R
   repeats (default 3), for the same three settings. `busy` includes the faults' own cost (latency, retries).
3. Shrinking: examples/chaos_orders' shipped service (a non-idempotent producer with retries) under the
   `network` profile, seeds from 0 until one fails; the time to find it, to shrink its schedule (each candidate
   is a whole run of the app on a fresh cluster) and to replay the result.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from fakekafka import Chaos, Cluster  # noqa: E402
from fakekafka.net.loop_thread import LoopThread  # noqa: E402
from fakekafka.testing.chaos_explore import explore  # noqa: E402

SETTINGS: dict[str, Chaos | None] = {"off": None, "on, profile none": Chaos(seed=1, profile="none"),
                                     "on, profile busy": Chaos(seed=1, profile="busy")}


def fixture(starts: int) -> dict[str, list[float]]:
    thread = LoopThread(listener_pool=8).start()
    out: dict[str, list[float]] = {}
    try:
        for name, chaos in SETTINGS.items():
            times = []
            for _ in range(starts):
                t = time.perf_counter()
                c = Cluster(chaos=chaos).start(thread)
                c.stop(wait=False)
                times.append((time.perf_counter() - t) * 1000)
            out[name] = times
    finally:
        thread.stop()
    return out


def throughput(records: int, chaos: Chaos | None) -> tuple[float, float]:
    from confluent_kafka import Consumer, Producer, TopicPartition
    value = b"x" * 100
    with Cluster(topics={"load": 3}, chaos=chaos) as c:
        p = Producer({"bootstrap.servers": c.bootstrap_servers, "acks": "all", "enable.idempotence": True,
                      "linger.ms": 5, "retry.backoff.ms": 5, "queue.buffering.max.messages": records + 1})
        t = time.perf_counter()
        for i in range(records):
            p.produce("load", value, partition=i % 3)
            if i % 10_000 == 0:
                p.poll(0)
        p.flush(120)
        produce = records / (time.perf_counter() - t)
        consumer = Consumer({"bootstrap.servers": c.bootstrap_servers, "group.id": "bench",
                             "enable.auto.commit": False, "fetch.queue.backoff.ms": 1})
        t = time.perf_counter()
        consumer.assign([TopicPartition("load", i, 0) for i in range(3)])
        got = 0
        while got < records and time.perf_counter() - t < 120:
            got += sum(1 for m in consumer.consume(10_000, 1.0) if m.error() is None)
        consume = got / (time.perf_counter() - t)
        consumer.close()
    return produce, consume


def shrinking() -> dict[str, Any]:
    from examples.chaos_orders.service import each_order_once, place_orders

    def app(c: Cluster) -> None:
        place_orders(c.bootstrap_servers, list(range(20)))
    t = time.perf_counter()
    found = explore(app, range(0, 50), profile="network", invariants=(each_order_once,), topics={"orders": 3})
    total = time.perf_counter() - t
    assert found.failure is not None and found.shrunk is not None and found.replay is not None
    find = sum(o.seconds for o in found.outcomes)
    return {"seeds_tried": len(found.outcomes), "seed": found.failure.chaos.seed,
            "steps": len(found.failure.schedule), "shrunk_steps": len(found.shrunk.schedule),
            "shrink_runs": found.shrunk.runs, "find_s": find, "shrink_s": total - find - found.replay.seconds,
            "replay_fails_the_same_way": found.replay.signature() == found.failure.signature(),
            "shrunk": found.shrunk.schedule.lines()}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--starts", type=int, default=200)
    ap.add_argument("--records", type=int, default=20_000)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--json", metavar="PATH")
    args = ap.parse_args()
    fx = fixture(args.starts)
    tp = {name: [throughput(args.records, chaos) for _ in range(args.repeat)] for name, chaos in SETTINGS.items()}
    sh = shrinking()
    print("| chaos | fixture start+stop median ms | p90 ms | produce rec/s | consume rec/s |")
    print("|---|---:|---:|---:|---:|")
    for name in SETTINGS:
        times = sorted(fx[name])
        print(f"| {name} | {statistics.median(times):.2f} | {times[int(len(times) * 0.9)]:.2f} | "
              f"{statistics.median(p for p, _ in tp[name]):,.0f} | {statistics.median(c for _, c in tp[name]):,.0f} |")
    print()
    print(f"shrinking (examples/chaos_orders, profile network): seed {sh['seed']} failed after {sh['seeds_tried']} "
          f"seed(s) in {sh['find_s']:.1f} s; {sh['steps']} steps shrunk to {sh['shrunk_steps']} in "
          f"{sh['shrink_runs']} runs, {sh['shrink_s']:.1f} s; the replay fails the same way: "
          f"{sh['replay_fails_the_same_way']}")
    for line in sh["shrunk"]:
        print(f"  {line}")
    if args.json:
        Path(args.json).write_text(json.dumps({"fixture_ms": fx, "throughput": tp, "shrinking": sh}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
