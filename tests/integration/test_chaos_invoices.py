"""pytest under chaos on examples/chaos_invoices (a transactional consume-transform-produce loop committing its
offsets with `consumer.commit()` outside the transaction): `--chaos-seeds 4` finds the duplicates within 4 seeds,
shrinks the schedule to a few steps, the replay fails the same way; the fixed loop
(`send_offsets_to_transaction`) passes the same seeds."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.integration.chaos_report import first_shrunk

pytest.importorskip("confluent_kafka")

SERVICE = (Path(__file__).resolve().parents[2] / "examples" / "chaos_invoices" / "service.py").read_text()

TESTS = '''
import pytest
from confluent_kafka import Producer
import fakekafka
from service import COMMIT_FAULTS, each_order_invoiced_once, run_invoicer, run_invoicer_fixed

CHAOS = fakekafka.Chaos(profile=COMMIT_FAULTS, invariants=(each_order_invoiced_once,))

def orders(bootstrap):
    p = Producer({"bootstrap.servers": bootstrap, "enable.idempotence": True})
    for i in range(20):
        p.produce("orders", key=str(i).encode(), value=f"order-{i}".encode())
    assert p.flush(30) == 0

@pytest.mark.fakekafka(topics={"orders": 2, "invoices": 2}, chaos=CHAOS)
def test_shipped(kafka):
    orders(kafka.bootstrap_servers)
    run_invoicer(kafka.bootstrap_servers)

@pytest.mark.fakekafka(topics={"orders": 2, "invoices": 2}, chaos=CHAOS)
def test_fixed(kafka):
    orders(kafka.bootstrap_servers)
    run_invoicer_fixed(kafka.bootstrap_servers)
'''


@pytest.mark.timeout(300)  # a child pytest: 4 seeds, shrinking, a replay; about 60 s, twice that beside heavy tests
def test_chaos_seeds_find_shrink_and_replay_offsets_committed_outside_the_transaction(
        pytester: pytest.Pytester) -> None:
    pytester.makepyfile(service=SERVICE, test_invoicer=TESTS)
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "--chaos-seeds", "4", "-k", "shipped",
                                           "--chaos-dir", str(pytester.path / "schedules"))
    out = result.stdout.str()
    assert result.parseoutcomes().get("failed", 0) >= 1, out
    assert "app invariant exactly_once(orders -> invoices)" in out
    assert "committed more than once" in out
    shrunk = first_shrunk(out)
    assert shrunk is not None and 1 <= shrunk.steps <= 4, out
    again = pytester.runpytest_subprocess("-p", "no:cacheprovider", *shrunk.replay, "--chaos-shrink-runs", "0")
    assert again.parseoutcomes() == {"failed": 1}, again.stdout.str()
    assert "committed more than once" in again.stdout.str()

    fixed = pytester.runpytest_subprocess("-p", "no:cacheprovider", "--chaos-seeds", "4", "-k", "fixed")
    assert fixed.parseoutcomes() == {"passed": 4, "deselected": 4}, fixed.stdout.str()
