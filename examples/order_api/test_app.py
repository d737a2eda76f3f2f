"""Testing the order API as it runs in production: FastAPI's TestClient drives the app through HTTP (its
lifespan starts and stops the real aiokafka producer), against a fresh cluster per test (the `kafka`
fixture). The assertions read the broker's side through the fixture: what was stored, where, with which
headers. `python -m pytest examples --kafka-real` runs the same tests against Apache Kafka."""

import json

import pytest

pytest.importorskip("fastapi", reason="the order API needs FastAPI: pip install -e '.[examples]'")
from fastapi.testclient import TestClient  # noqa: E402

from order_api.app import TOPIC, create_app  # noqa: E402

pytestmark = pytest.mark.kafka_real  # must pass on Apache Kafka too (`pytest --kafka-real -m kafka_real`)

PARTITIONS = 3


@pytest.fixture
def api(kafka):
    with TestClient(create_app(kafka.bootstrap_servers)) as client:  # runs the lifespan: producer started
        yield client


@pytest.mark.fakekafka(topics={TOPIC: PARTITIONS})
def test_an_accepted_order_is_in_kafka(kafka, api):
    order = {"id": "o-1", "customer": "alice", "amount": 12.5}
    resp = api.post("/orders", json=order, headers={"X-Request-ID": "req-42"})

    assert resp.status_code == 202, resp.text
    where = resp.json()
    assert where["topic"] == TOPIC and where["offset"] == 0
    [record] = kafka.records(TOPIC, where["partition"])
    assert record.key == b"alice"
    assert json.loads(record.value) == {**order, "note": ""}
    assert dict(record.headers) == {"request-id": b"req-42"}


@pytest.mark.fakekafka(topics={TOPIC: PARTITIONS})
def test_one_customers_orders_stay_in_order_on_one_partition(kafka, api):
    answers = [api.post("/orders", json={"id": f"o-{i}", "customer": "bob", "amount": i + 1}) for i in range(5)]

    assert [a.status_code for a in answers] == [202] * 5
    partitions = {a.json()["partition"] for a in answers}
    assert len(partitions) == 1
    assert [a.json()["offset"] for a in answers] == [0, 1, 2, 3, 4]
    stored = kafka.records(TOPIC, partitions.pop())
    assert [json.loads(r.value)["id"] for r in stored] == [f"o-{i}" for i in range(5)]
    assert all(dict(r.headers)["request-id"] for r in stored)  # a generated id when the request has none


@pytest.mark.fakekafka(topics={TOPIC: PARTITIONS})
def test_a_malformed_order_is_refused_and_nothing_is_produced(kafka, api):
    resp = api.post("/orders", json={"id": "o-1", "customer": "alice", "amount": -3})

    assert resp.status_code == 422
    assert sum(kafka.end_offsets(TOPIC).values()) == 0


def test_a_record_the_broker_refuses_is_a_413(kafka, api):
    # the topic takes records of at most 200 bytes (max.message.bytes counts the whole batch): Kafka answers
    # the produce MESSAGE_TOO_LARGE, which the producer raises and the handler turns into 413
    kafka.create_topic(TOPIC, 1, configs={"max.message.bytes": "200"})
    small = api.post("/orders", json={"id": "o-1", "customer": "alice", "amount": 1})
    large = api.post("/orders", json={"id": "o-2", "customer": "alice", "amount": 1, "note": "x" * 500})

    assert small.status_code == 202, small.text
    assert large.status_code == 413, large.text
    assert "MessageSizeTooLarge" in large.json()["detail"]
    assert [json.loads(r.value)["id"] for r in kafka.records(TOPIC)] == ["o-1"]
