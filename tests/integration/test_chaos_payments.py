"""pytest under chaos on examples/chaos_payments (two confluent-kafka workers in a group that ignore revocation:
they neither commit what they charged nor drop the records they took in when a rebalance takes their partitions):
a rebalance drawn at one of their commits makes the next owner charge orders again, found within 3 seeds (seed 0
does), shrunk to one step (or two), the replay fails the same way; the fixed workers (commit on revoke, drop the
rest) pass the same seeds."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.integration.chaos_report import first_shrunk

pytest.importorskip("confluent_kafka")

SERVICE = (Path(__file__).resolve().parents[2] / "examples" / "chaos_payments" / "service.py").read_text()

TESTS = """
import pytest
import fakekafka
from service import REBALANCES, each_order_charged_once, run_payments, run_payments_fixed

CHAOS = fakekafka.Chaos(profile=REBALANCES, invariants=(each_order_charged_once,))

@pytest.mark.fakekafka(topics={"orders": 4, "charges": 2}, chaos=CHAOS)
def test_shipped(kafka):
    run_payments(kafka.bootstrap_servers)

@pytest.mark.fakekafka(topics={"orders": 4, "charges": 2}, chaos=CHAOS)
def test_fixed(kafka):
    run_payments_fixed(kafka.bootstrap_servers)
"""


def test_chaos_seeds_find_shrink_and_replay_a_revoked_partition_not_handled(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(service=SERVICE, test_payments=TESTS)
    result = pytester.runpytest_subprocess(
        "-p",
        "no:cacheprovider",
        "-x",
        "--chaos-seeds",
        "3",
        "-k",
        "shipped",
        "--chaos-dir",
        str(pytester.path / "schedules"),
    )
    out = result.stdout.str()
    assert result.parseoutcomes().get("failed") == 1, out
    assert "app invariant each_order_charged_once" in out
    assert "charged more than once" in out
    shrunk = first_shrunk(out)
    # one step; both only when each step's run alone did not charge an order twice (the shipped workers' commits
    # only go forward, so every run of the schedule breaks the app invariant alone: the replays fail the same way)
    assert shrunk is not None and 1 <= shrunk.steps <= 2, out
    assert re.search(r"OffsetCommit request \d+ .*group payments rebalanced", out), out
    again = pytester.runpytest_subprocess("-p", "no:cacheprovider", *shrunk.replay, "--chaos-shrink-runs", "0")
    assert again.parseoutcomes() == {"failed": 1}, again.stdout.str()
    assert "charged more than once" in again.stdout.str()

    fixed = pytester.runpytest_subprocess("-p", "no:cacheprovider", "--chaos-seeds", "3", "-k", "fixed")
    assert fixed.parseoutcomes() == {"passed": 3, "deselected": 3}, fixed.stdout.str()
