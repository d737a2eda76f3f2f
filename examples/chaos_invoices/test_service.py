"""The invoicing loop under chaos on its commits. The fixed loop (offsets sent to the transaction) invoices each
order exactly once under every seed; `pytest tests/integration/test_chaos_invoices.py` shows the shipped one
(`consumer.commit()` after the transaction) found, shrunk and replayed. `pytest examples/chaos_invoices
--chaos-seeds 20` runs the fixed loop under 20 seeds."""

import pytest
from confluent_kafka import Producer

import fakekafka
from examples.chaos_invoices.service import COMMIT_FAULTS, each_order_invoiced_once, run_invoicer_fixed


@pytest.mark.fakekafka(topics={"orders": 2, "invoices": 2},
                       chaos=fakekafka.Chaos(profile=COMMIT_FAULTS, invariants=(each_order_invoiced_once,)))
def test_fixed_invoicer_invoices_each_order_once(kafka):
    producer = Producer({"bootstrap.servers": kafka.bootstrap_servers, "enable.idempotence": True})
    for i in range(20):
        producer.produce("orders", key=str(i).encode(), value=f"order-{i}".encode())
    assert producer.flush(30) == 0
    run_invoicer_fixed(kafka.bootstrap_servers)
