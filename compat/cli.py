"""python -m compat: run the compatibility matrix and print its table.

    python -m compat [--broker fakekafka] [--broker tansu] [--broker kafka] [--broker librdkafka-mock]
                     [--broker bootstrap=HOST:PORT] [--client NAME ...] [--scenario PATTERN ...]
                     [--quick] [--jobs N] [--out build/compat] [--list] [--list-clients]
    python -m compat diff [--broker kafka --broker fakekafka] [...]   (compat/diff.py: field by field)

Writes OUT.json (every cell with its outcome, reference and diff) and OUT.md (the table). Exits 1 when
a cell differs from the reference or errors and compat/KNOWN_DIFFERENCES.md does not list it.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from compat.brokers import KINDS
from compat.clients.base import quiet_client_logs
from compat.clients.catalog import CLIENT_DOCS, CLIENTS
from compat.report import markdown, text
from compat.runner import ROOT, run
from compat.scenarios import SCENARIOS

__all__ = ["main"]


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["diff"]:  # python -m compat diff: differential wire testing (compat/diff.py)
        from compat.diff import main as diff_main
        return diff_main(argv[1:])
    ap = argparse.ArgumentParser(prog="python -m compat", description=__doc__.split("\n\n")[0])
    ap.add_argument("--broker", action="append", help=f"one of {', '.join(KINDS)} (repeatable; default fakekafka)")
    ap.add_argument("--client", action="append", choices=CLIENTS, help="repeatable; default: all")
    ap.add_argument("--scenario", action="append", help="name or pattern (roundtrip_*), repeatable; default: all")
    ap.add_argument("--quick", action="store_true",
                    help="leave out the many-rebalance scenarios on brokers whose group joins are slow (tansu)")
    ap.add_argument("--jobs", type=int, default=10, help="lanes (broker x client) run in parallel (default 10)")
    ap.add_argument("--out", default=str(ROOT / "build" / "compat"), help="writes OUT.json and OUT.md")
    ap.add_argument("--list", action="store_true", help="list the scenarios and exit")
    ap.add_argument("--list-clients", action="store_true", help="list the clients and exit")
    args = ap.parse_args(argv)
    quiet_client_logs()
    if args.list_clients:
        for name in CLIENTS:
            print(f"{name:24} {CLIENT_DOCS[name]}")
        return 0
    if args.list:
        for s in SCENARIOS.values():
            print(f"{s.name:32} {s.doc}")
        return 0

    def progress(lane: tuple[str, str], cells: list) -> None:
        counts: dict[str, int] = {}
        for c in cells:
            counts[c.status] = counts.get(c.status, 0) + 1
        print(f"  {lane[1]} @ {lane[0]}: " + ", ".join(f"{n} {s}" for s, n in sorted(counts.items())),
              file=sys.stderr, flush=True)

    report = run(args.broker or ["fakekafka"], args.client, args.scenario, quick=args.quick, jobs=args.jobs,
                 progress=progress)
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.with_suffix(".json").write_text(json.dumps(report.to_json(), indent=1, default=str) + "\n")
    out.with_suffix(".md").write_text(markdown(report))
    print(text(report))
    print(f"\nwrote {out.with_suffix('.json')} and {out.with_suffix('.md')}")
    if report.failing:
        print(f"{len(report.failing)} cell(s) differ or fail and are not in compat/KNOWN_DIFFERENCES.md")
        return 1
    return 0
