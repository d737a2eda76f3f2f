"""The correct versions pass 200 seeds: every fixed example app under chaos, seed after seed.

    python bench/chaos_apps.py [--seeds N] [--base-seed S] [--jobs J] [--apps orders,invoices,shipping,payments]
                               [--json out]

Each seed is one run of the app's fixed version on a fresh `Cluster` under its chaos profile, then its invariants
(`fakekafka.testing.chaos_explore.run_once`, as `explore` and `pytest --chaos-seeds` run them). Prints per app:
seeds run, passed, the failing seeds with how they failed, the median and p90 seconds per seed, and the faults
applied per run (median, max). `--jobs` runs that many seeds at once (separate processes, each its own cluster).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from fakekafka import Chaos, Cluster  # noqa: E402
from fakekafka.testing.chaos_explore import run_once  # noqa: E402


def _orders(c: Cluster) -> None:
    from examples.chaos_orders.service import place_orders_fixed

    place_orders_fixed(c.bootstrap_servers, list(range(20)))


def _confluent_orders(bootstrap: str) -> None:
    from confluent_kafka import Producer

    p = Producer({"bootstrap.servers": bootstrap, "enable.idempotence": True})
    for i in range(20):
        p.produce("orders", key=str(i).encode(), value=f"order-{i}".encode())
    if p.flush(30):
        raise RuntimeError("the orders were not all written")


def _invoices(c: Cluster) -> None:
    from examples.chaos_invoices.service import run_invoicer_fixed

    _confluent_orders(c.bootstrap_servers)
    run_invoicer_fixed(c.bootstrap_servers)


def _shipping(c: Cluster) -> None:
    from examples.chaos_shipping.service import run_shipper_fixed

    _confluent_orders(c.bootstrap_servers)
    run_shipper_fixed(c.bootstrap_servers)


def _payments(c: Cluster) -> None:
    from examples.chaos_payments.service import run_payments_fixed

    run_payments_fixed(c.bootstrap_servers)  # it writes its orders itself, once both workers hold partitions


def _setup(app: str) -> tuple[Callable[[Cluster], Any], Any, tuple[Any, ...], dict[str, int]]:
    """The app's fixed version, its profile, its invariants and its topics, as its example tests run it."""
    if app == "orders":
        from examples.chaos_orders.service import each_order_once

        return _orders, "network", (each_order_once,), {"orders": 3}
    if app == "invoices":
        from examples.chaos_invoices.service import COMMIT_FAULTS, each_order_invoiced_once

        return _invoices, COMMIT_FAULTS, (each_order_invoiced_once,), {"orders": 2, "invoices": 2}
    if app == "shipping":
        from examples.chaos_shipping.service import SLOW_WRITES, every_order_shipped

        return _shipping, SLOW_WRITES, (every_order_shipped,), {"orders": 2, "shipments": 2}
    if app == "payments":
        from examples.chaos_payments.service import REBALANCES, each_order_charged_once

        return _payments, REBALANCES, (each_order_charged_once,), {"orders": 4, "charges": 2}
    raise SystemExit(f"no such app: {app} (orders, invoices, shipping, payments)")


def one_seed(app: str, seed: int) -> dict[str, Any]:
    run, profile, invariants, topics = _setup(app)
    outcome = run_once(run, Chaos(seed=seed, profile=profile, invariants=invariants), topics=topics)
    return {
        "app": app,
        "seed": seed,
        "failed": outcome.failed,
        "seconds": outcome.seconds,
        "faults": len(outcome.schedule),
        "how": outcome.report() if outcome.failed else "",
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seeds", type=int, default=200)
    ap.add_argument("--base-seed", type=int, default=0)
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--apps", default="orders,invoices,shipping,payments")
    ap.add_argument("--json", type=Path)
    args = ap.parse_args()
    if args.seeds < 1 or args.jobs < 1:
        raise SystemExit("--seeds and --jobs take a number, at least 1")
    apps = [a.strip() for a in args.apps.split(",") if a.strip()]
    for app in apps:
        _setup(app)  # an unknown name refused before anything runs
    results: list[dict[str, Any]] = []
    started = time.perf_counter()
    with ProcessPoolExecutor(args.jobs) as pool:
        for app in apps:
            seeds = range(args.base_seed, args.base_seed + args.seeds)
            results.extend(pool.map(one_seed, [app] * len(seeds), seeds))
    wall = time.perf_counter() - started
    print("| app | seeds run | passed | failing seeds | s per seed (median / p90) | faults per run (median / max) |")
    print("|---|---|---|---|---|---|")
    for app in apps:
        rows = [r for r in results if r["app"] == app]
        secs = sorted(r["seconds"] for r in rows)
        faults = [r["faults"] for r in rows]
        failing = [r["seed"] for r in rows if r["failed"]]
        p90 = secs[min(len(secs) - 1, int(len(secs) * 0.9))]
        print(
            f"| {app} | {len(rows)} | {len(rows) - len(failing)} | {', '.join(map(str, failing)) or 'none'} | "
            f"{statistics.median(secs):.2f} / {p90:.2f} | {statistics.median(faults):g} / {max(faults)} |"
        )
    print(f"\n{len(results)} runs in {wall:.0f} s with {args.jobs} job(s)")
    for r in results:
        if r["failed"]:
            print(f"\n{r['app']}:\n{r['how']}")
    if args.json:
        args.json.write_text(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
