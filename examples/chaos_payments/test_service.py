"""The payment service under rebalances drawn at its workers' commits. The fixed workers (commit on revoke, drop
what they took in for partitions they no longer own) charge each order once under every seed;
`pytest tests/integration/test_chaos_payments.py` shows the shipped ones (revocation ignored) found, shrunk and
replayed. `pytest examples/chaos_payments --chaos-seeds 20` runs the fixed service under 20 seeds."""

import pytest

import fakekafka
from examples.chaos_payments.service import REBALANCES, each_order_charged_once, run_payments_fixed


@pytest.mark.fakekafka(
    topics={"orders": 4, "charges": 2}, chaos=fakekafka.Chaos(profile=REBALANCES, invariants=(each_order_charged_once,))
)
def test_fixed_workers_charge_each_order_once(kafka):
    charged = run_payments_fixed(kafka.bootstrap_servers)
    assert len(charged) == 60
