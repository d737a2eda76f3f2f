"""Testing the customer-totals job the way it runs: a real Spark streaming query reading from and writing to
Kafka, here a fresh fakekafka cluster per test (`kafka` fixture) and the session's SparkSession (`spark`
fixture, on which format("kafka") works without Spark's JVM connector)."""

import json

import pytest

pytest.importorskip("pyspark", reason="needs pyspark: pip install 'fakekafka[spark]'")

from spark_pipeline.job import TIERS, customer_totals, start

pytestmark = [pytest.mark.spark, pytest.mark.spark_both_routes, pytest.mark.kafka_real]  # CI: also on the stand-in

ORDERS = [
    {"id": "o-1", "customer": "alice", "items": [{"sku": "pen", "price": 1.5, "qty": 4}]},
    {"id": "o-2", "customer": "bob", "items": [{"sku": "ink", "price": 7.25, "qty": 2}]},
    {"id": "o-3", "customer": "carol", "items": [{"sku": "pad", "price": 3.0, "qty": 1},
                                                 {"sku": "pen", "price": 1.5, "qty": 2}]},
    {"id": "o-4", "customer": "alice", "items": [{"sku": "pad", "price": 3.0, "qty": 10}]},
]
MORE = [
    {"id": "o-5", "customer": "bob", "items": [{"sku": "pen", "price": 1.5, "qty": 1}]},
    {"id": "o-6", "customer": "dave", "items": [{"sku": "ink", "price": 7.25, "qty": 4}]},
]


def produce(kafka, orders):
    for order in orders:
        kafka.produce("orders", json.dumps(order).encode(), key=order["id"].encode(),
                      partition=int(order["id"][2:]) % 3)


def latest_totals(kafka):
    """The last value written for each customer: what a compacted topic would keep."""
    latest = {}
    for r in sorted(kafka.records("customer-totals"), key=lambda r: (r.timestamp, r.partition, r.offset)):
        latest[r.key.decode()] = json.loads(r.value)
    return latest


def run_once(spark, kafka, checkpoint):
    query = start(spark, kafka.bootstrap_servers, str(checkpoint), available_now=True)
    assert query.awaitTermination(120), "the job did not finish"
    assert query.exception() is None


def test_customer_totals_of_a_batch(spark):
    orders = spark.createDataFrame([(json.dumps(o),) for o in ORDERS], "value string")
    tiers = spark.createDataFrame(TIERS, "customer string, tier string")
    got = {r.key: json.loads(r.value) for r in customer_totals(orders, tiers).collect()}
    assert got == {
        "alice": {"customer": "alice", "tier": "gold", "orders": 2, "revenue": 36.0},
        "bob": {"customer": "bob", "tier": "silver", "orders": 1, "revenue": 14.5},
        "carol": {"customer": "carol", "tier": "bronze", "orders": 1, "revenue": 6.0},
    }


@pytest.mark.fakekafka(topics={"orders": 3, "customer-totals": 3})
def test_job_writes_running_totals_and_resumes_from_its_checkpoint(spark, kafka, tmp_path):
    produce(kafka, ORDERS)
    run_once(spark, kafka, tmp_path / "checkpoint")
    assert latest_totals(kafka) == {
        "alice": {"customer": "alice", "tier": "gold", "orders": 2, "revenue": 36.0},
        "bob": {"customer": "bob", "tier": "silver", "orders": 1, "revenue": 14.5},
        "carol": {"customer": "carol", "tier": "bronze", "orders": 1, "revenue": 6.0},
    }
    written = len(kafka.records("customer-totals"))
    assert written == 3  # one batch: one update per customer

    # the next scheduled run reads only the new orders; the totals carry on from the checkpointed state
    produce(kafka, MORE)
    run_once(spark, kafka, tmp_path / "checkpoint")
    assert latest_totals(kafka) == {
        "alice": {"customer": "alice", "tier": "gold", "orders": 2, "revenue": 36.0},
        "bob": {"customer": "bob", "tier": "silver", "orders": 2, "revenue": 16.0},
        "carol": {"customer": "carol", "tier": "bronze", "orders": 1, "revenue": 6.0},
        "dave": {"customer": "dave", "tier": "bronze", "orders": 1, "revenue": 29.0},
    }
    assert len(kafka.records("customer-totals")) == written + 2  # only bob and dave changed
    # records are keyed by customer, so a customer's updates share a partition, in order
    partitions = {}
    for r in kafka.records("customer-totals"):
        partitions.setdefault(r.key, set()).add(r.partition)
    assert all(len(p) == 1 for p in partitions.values())
