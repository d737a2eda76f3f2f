"""Testing the order enricher the way it runs in production: a real consumer group and a real producer, against
a fresh fakekafka cluster per test (the `kafka` fixture), with the service on a background thread."""

import json

import pytest

from order_enricher.service import OrderEnricher, enrich

pytestmark = pytest.mark.kafka_real  # must pass on Apache Kafka too (`pytest --kafka-real -m kafka_real`)

ORDERS = [
    {"id": "o-1", "customer": "alice", "items": [{"sku": "pen", "price": 1.5, "qty": 4}]},
    {"id": "o-2", "customer": "bob", "items": [{"sku": "ink", "price": 7.25, "qty": 2}]},
    {"id": "o-3", "customer": "carol", "items": [{"sku": "pad", "price": 3.0, "qty": 1},
                                                 {"sku": "pen", "price": 1.5, "qty": 2}]},
    {"id": "o-4", "customer": "alice", "items": [{"sku": "pad", "price": 3.0, "qty": 10}]},
]
PARTITIONS = 3


def produce_orders(kafka, orders):
    for order in orders:
        partition = int(order["id"][2:]) % PARTITIONS  # spread the orders over the partitions
        kafka.produce("orders", json.dumps(order).encode(), key=order["id"].encode(), partition=partition)


def enriched(kafka, count):
    """Waits until "orders-enriched" holds at least `count` records."""
    kafka.wait_until(lambda: len(kafka.records("orders-enriched")) >= count, timeout=10,
                     message=f"{count} enriched orders")


def source_offsets(records):
    """The (partition, offset) of the order each enriched record came from, read off its "source" header."""
    out = []
    for r in records:
        _topic, partition, offset = dict(r.headers)["source"].decode().split("/")
        out.append((int(partition), int(offset)))
    return out


def all_committed(kafka):
    """Offsets of a group that processed everything in "orders" (an empty partition has nothing to commit)."""
    return {("orders", p): end for p, end in kafka.end_offsets("orders").items() if end}


def test_enrich():
    assert enrich(ORDERS[2]) == {**ORDERS[2], "total": 6.0, "tier": "bronze"}


@pytest.mark.fakekafka(topics={"orders": PARTITIONS, "orders-enriched": PARTITIONS})
def test_enriches_orders_and_commits(kafka):
    produce_orders(kafka, ORDERS)

    with OrderEnricher(kafka.bootstrap_servers):
        enriched(kafka, len(ORDERS))
    # stopping finished the batch in hand (produced, acknowledged, committed)
    out = kafka.records("orders-enriched")

    by_id = {json.loads(r.value)["id"]: r for r in out}
    assert sorted(by_id) == ["o-1", "o-2", "o-3", "o-4"]
    assert {i: (r.key, json.loads(r.value)["total"], json.loads(r.value)["tier"]) for i, r in by_id.items()} == {
        "o-1": (b"alice", 6.0, "gold"),
        "o-2": (b"bob", 14.5, "silver"),
        "o-3": (b"carol", 6.0, "bronze"),
        "o-4": (b"alice", 30.0, "gold"),
    }
    assert json.loads(by_id["o-3"].value)["items"] == ORDERS[2]["items"]  # the order itself is passed on
    # keyed by customer, so one customer's orders share a partition
    assert by_id["o-1"].partition == by_id["o-4"].partition
    assert dict(by_id["o-1"].headers) == {"source": b"orders/1/0"}
    kafka.assert_consumed_exactly_once("orders", source_offsets(out))
    kafka.assert_committed("order-enricher", all_committed(kafka))


@pytest.mark.fakekafka(topics={"orders": PARTITIONS, "orders-enriched": PARTITIONS})
def test_restart_resumes_from_committed_offsets(kafka):
    produce_orders(kafka, ORDERS[:2])
    with OrderEnricher(kafka.bootstrap_servers):
        enriched(kafka, 2)
    kafka.assert_committed("order-enricher", all_committed(kafka))

    produce_orders(kafka, ORDERS[2:])  # arrive while the service is down
    with OrderEnricher(kafka.bootstrap_servers):
        enriched(kafka, 4)
    out = kafka.records("orders-enriched")

    assert sorted(json.loads(r.value)["id"] for r in out) == ["o-1", "o-2", "o-3", "o-4"]  # none twice
    kafka.assert_consumed_exactly_once("orders", source_offsets(out))
    kafka.assert_committed("order-enricher", all_committed(kafka))
