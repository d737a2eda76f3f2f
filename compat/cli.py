"""python -m compat: run the compatibility matrix and print its table.

    python -m compat [--broker fakekafka] [--broker tansu] [--broker kafka] [--broker librdkafka-mock]
                     [--broker bootstrap=HOST:PORT] [--client NAME ...] [--scenario PATTERN ...]
                     [--quick] [--jobs N] [--out build/compat] [--diff-out build/compat-diff]
                     [--list] [--list-clients]
    python -m compat diff [--broker kafka --broker fakekafka] [...]   (compat/diff.py: field by field)

Writes OUT.json (every cell with its outcome, reference and diff) and OUT.md (the table). Exits 1 when
a cell differs from the reference or errors and compat/KNOWN_DIFFERENCES.md does not list it. With
--diff-out, the lanes of the first two brokers (the reference first, e.g. kafka then fakekafka) also go through
recording relays and are compared field by field as `python -m compat diff` compares them (one run where two
would take twice the time); exits 1 too when a field differs that KNOWN_DIFFERENCES.md does not list.
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
    ap.add_argument("--diff-out", help="also compare the first two brokers' lanes field by field (python -m "
                                       "compat diff) and write DIFF_OUT.json and DIFF_OUT.md")
    ap.add_argument("--verbose", action="store_true", help="a line on stderr as each cell ends (lane lines only "
                                                           "without it)")
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

    if args.verbose:
        from compat import runner
        runner.CELL_PROGRESS = lambda c: print(f"    {c.scenario} / {c.client} @ {c.broker}: {c.status} "
                                               f"({c.seconds} s)", file=sys.stderr, flush=True)
    brokers = args.broker or ["fakekafka"]
    recording = None
    if args.diff_out:
        if len(brokers) < 2:
            ap.error("--diff-out: give at least two --broker (the reference first, then the broker under test)")
        from compat.diff import Recording
        recording = Recording((brokers[0], brokers[1]), required=False)
    report = run(brokers, args.client, args.scenario, quick=args.quick, jobs=args.jobs, progress=progress,
                 recording=recording)
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.with_suffix(".json").write_text(json.dumps(report.to_json(), indent=1, default=str) + "\n")
    out.with_suffix(".md").write_text(markdown(report))
    print(text(report))
    print(f"\nwrote {out.with_suffix('.json')} and {out.with_suffix('.md')}")
    status = 0
    if report.failing:
        print(f"{len(report.failing)} cell(s) differ or fail and are not in compat/KNOWN_DIFFERENCES.md")
        status = 1
    if recording is not None:
        if not recording.recorded:
            print(f"--diff-out: nothing compared: {brokers[0]} or {brokers[1]} did not start")
            return 1
        from compat.diff import write_report
        if write_report(recording.analyse(report), Path(args.diff_out)):
            status = 1
    return status
