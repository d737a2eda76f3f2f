"""`--chaos-seed`, `--chaos-profile`, `--chaos-schedule` and `--chaos-out`: the same options on `fakekafka serve`
and `fakekafka proxy`, read into what `Cluster(chaos=...)` and `Proxy(chaos=...)` take."""

from __future__ import annotations

import argparse
import logging

from fakekafka.chaos import Chaos, Schedule

__all__ = ["add_chaos_options", "chaos_done", "chaos_from_args"]


def add_chaos_options(parser: argparse.ArgumentParser, what: str) -> None:
    parser.add_argument("--chaos-seed", type=int, metavar="N",
                        help=f"draw Kafka-legal faults ({what}) from this seed at each request point; the same "
                             "seed and client behaviour give the same faults")
    parser.add_argument("--chaos-profile", metavar="NAME|FILE",
                        help="how much chaos: none, default, network, busy, harsh, cluster, registry, byzantine "
                             "(never Kafka's: corrupt CRCs, batches out of order), or a JSON file of rates")
    parser.add_argument("--chaos-schedule", metavar="FILE",
                        help="replay a chaos schedule (a file --chaos-out or a failing pytest chaos run wrote)")
    parser.add_argument("--chaos-out", metavar="FILE",
                        help="write the chaos schedule applied to this file when it stops (JSON; YAML for a "
                             ".yaml or .yml path)")


def chaos_from_args(args: argparse.Namespace) -> Chaos | str | None:
    """`--chaos-*` as `chaos=` takes it, or what is wrong with them in words."""
    if args.chaos_seed is None and args.chaos_schedule is None:
        if args.chaos_profile or args.chaos_out:
            return "--chaos-profile and --chaos-out need --chaos-seed N or --chaos-schedule FILE"
        return None
    if args.chaos_seed is not None and args.chaos_schedule is not None:
        return "--chaos-seed draws a schedule, --chaos-schedule replays one: give one of them"
    try:
        schedule = Schedule.load(args.chaos_schedule) if args.chaos_schedule else None
        return Chaos(seed=args.chaos_seed, profile=args.chaos_profile, schedule=schedule)
    except ValueError as e:
        return f"--chaos-{'schedule' if args.chaos_schedule else 'profile'}: {e}"


def chaos_done(args: argparse.Namespace, applied: Schedule, logger: str) -> None:
    """Says how many faults applied, and writes them to --chaos-out."""
    where = ""
    if args.chaos_out:
        try:
            where = f", written to {applied.save(args.chaos_out)}"
        except OSError as e:
            where = f"; cannot write {args.chaos_out}: {e.strerror or e}"
    logging.getLogger(logger).info("chaos: %d fault(s) applied%s", len(applied), where)
