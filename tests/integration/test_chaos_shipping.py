"""pytest under chaos on examples/chaos_shipping (a consumer committing each batch's offsets before writing its
shipments): the first seed of slow writes finds the lost orders (every one of seeds 0-2 does), the schedule shrinks
to one step, the replay fails the same way; the fixed service (write, then commit) passes the same seed and the
next."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.integration.chaos_report import first_shrunk

pytest.importorskip("kafka")

SERVICE = (Path(__file__).resolve().parents[2] / "examples" / "chaos_shipping" / "service.py").read_text()

TESTS = """
import pytest
from kafka import KafkaProducer
import fakekafka
from service import SLOW_WRITES, every_order_shipped, run_shipper, run_shipper_fixed

CHAOS = fakekafka.Chaos(profile=SLOW_WRITES, invariants=(every_order_shipped,))

def orders(bootstrap):
    p = KafkaProducer(bootstrap_servers=bootstrap)
    for i in range(20):
        p.send("orders", key=str(i).encode(), value=f"order-{i}".encode())
    p.flush(30)
    p.close()

@pytest.mark.fakekafka(topics={"orders": 2, "shipments": 2}, chaos=CHAOS)
def test_shipped(kafka):
    orders(kafka.bootstrap_servers)
    run_shipper(kafka.bootstrap_servers)

@pytest.mark.fakekafka(topics={"orders": 2, "shipments": 2}, chaos=CHAOS)
def test_fixed(kafka):
    orders(kafka.bootstrap_servers)
    run_shipper_fixed(kafka.bootstrap_servers)
"""


def test_chaos_seeds_find_shrink_and_replay_offsets_committed_before_processing(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(service=SERVICE, test_shipper=TESTS)
    result = pytester.runpytest_subprocess(
        "-p", "no:cacheprovider", "--chaos-seeds", "1", "-k", "shipped", "--chaos-dir", str(pytester.path / "schedules")
    )
    out = result.stdout.str()
    assert result.parseoutcomes() == {"failed": 1, "deselected": 1}, out
    assert "app invariant every_order_shipped" in out
    assert "never shipped" in out
    shrunk = first_shrunk(out)
    assert shrunk is not None and shrunk.steps == 1, out
    again = pytester.runpytest_subprocess("-p", "no:cacheprovider", *shrunk.replay, "--chaos-shrink-runs", "0")
    assert again.parseoutcomes() == {"failed": 1}, again.stdout.str()
    assert "never shipped" in again.stdout.str()

    fixed = pytester.runpytest_subprocess("-p", "no:cacheprovider", "--chaos-seeds", "2", "-k", "fixed")
    assert fixed.parseoutcomes() == {"passed": 2, "deselected": 2}, fixed.stdout.str()
