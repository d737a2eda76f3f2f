"""The shipping service under chaos on its writes. The fixed service (process, then commit) ships every order under
every seed; `pytest tests/integration/test_chaos_shipping.py` shows the shipped one (commit, then process) found,
shrunk and replayed. `pytest examples/chaos_shipping --chaos-seeds 20` runs the fixed service under 20 seeds."""

import pytest
from kafka import KafkaProducer

import fakekafka
from examples.chaos_shipping.service import SLOW_WRITES, every_order_shipped, run_shipper_fixed


@pytest.mark.fakekafka(
    topics={"orders": 2, "shipments": 2}, chaos=fakekafka.Chaos(profile=SLOW_WRITES, invariants=(every_order_shipped,))
)
def test_fixed_shipper_ships_every_order(kafka):
    producer = KafkaProducer(bootstrap_servers=kafka.bootstrap_servers)
    for i in range(20):
        producer.send("orders", key=str(i).encode(), value=f"order-{i}".encode())
    producer.flush(30)
    producer.close()
    run_shipper_fixed(kafka.bootstrap_servers)
