"""Each Kafka client against the `kafka` fixture: a fresh in-process fakekafka cluster per test.

Nothing to configure: point the client at `kafka.bootstrap_servers`, then check what the broker stored
(`kafka.records`) and what the group committed (`kafka.assert_committed`).
"""

import asyncio
import json
from pathlib import Path

import pytest
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer
from confluent_kafka import Consumer, Producer
from kafka import KafkaConsumer, KafkaProducer

pytestmark = pytest.mark.kafka_real  # must pass on Apache Kafka too (`pytest --kafka-real -m kafka_real`)


def all_consumed(kafka, topic):
    """What a group that consumed all of `topic` has committed: {(topic, partition): end offset}."""
    return {(topic, p): end for p, end in kafka.end_offsets(topic).items()}


@pytest.mark.fakekafka(topics={"orders": 3})
def test_kafka_python(kafka):
    producer = KafkaProducer(bootstrap_servers=kafka.bootstrap_servers)
    for i in range(6):
        producer.send("orders", f"order {i}".encode(), key=f"customer-{i % 2}".encode())
    producer.flush()
    producer.close()

    consumer = KafkaConsumer("orders", group_id="billing", bootstrap_servers=kafka.bootstrap_servers,
                             auto_offset_reset="earliest", enable_auto_commit=False)
    consumed = []

    def poll_until_six():
        # poll returns as soon as records arrive; a long timeout lets kafka-python (3.0) finish a group join
        # within one poll (a join cut short by a poll's timeout can leave it with no partitions)
        for batch in consumer.poll(timeout_ms=1000).values():
            consumed.extend(batch)
        return len(consumed) >= 6

    kafka.wait_until(poll_until_six, timeout=10)
    consumer.commit()
    consumer.close()

    assert sorted(r.value for r in consumed) == [f"order {i}".encode() for i in range(6)]
    kafka.assert_consumed_exactly_once("orders", consumed)
    kafka.assert_committed("billing", all_consumed(kafka, "orders"))


@pytest.mark.asyncio
async def test_aiokafka(kafka):
    producer = AIOKafkaProducer(bootstrap_servers=kafka.bootstrap_servers)
    await producer.start()
    try:
        for i in range(3):
            await producer.send_and_wait("events", json.dumps({"n": i}).encode(), headers=[("v", b"1")])
    finally:
        await producer.stop()

    consumer = AIOKafkaConsumer("events", group_id="audit", bootstrap_servers=kafka.bootstrap_servers,
                                auto_offset_reset="earliest", enable_auto_commit=False)
    await consumer.start()
    consumed = []
    try:
        async def until_three():
            while len(consumed) < 3:
                for batch in (await consumer.getmany(timeout_ms=100)).values():
                    consumed.extend(batch)

        await asyncio.wait_for(until_three(), timeout=10)
        await consumer.commit()
    finally:
        await consumer.stop()

    assert [json.loads(r.value) for r in consumed] == [{"n": 0}, {"n": 1}, {"n": 2}]
    assert [r.headers for r in kafka.records("events")] == [[("v", b"1")]] * 3
    kafka.assert_committed("audit", {("events", 0): 3})


def test_confluent_kafka(kafka):
    producer = Producer({"bootstrap.servers": kafka.bootstrap_servers})
    for i in range(3):
        producer.produce("payments", value=f"payment {i}".encode(), key=b"acct-7", headers={"currency": b"EUR"})
    assert producer.flush(10) == 0  # nothing left unsent

    consumer = Consumer({"bootstrap.servers": kafka.bootstrap_servers, "group.id": "ledger",
                         "auto.offset.reset": "earliest", "enable.auto.commit": False})
    consumer.subscribe(["payments"])
    consumed = []

    def poll_until_three():
        msg = consumer.poll(0.1)
        if msg is not None:
            assert msg.error() is None, msg.error()
            consumed.append(msg)
        return len(consumed) >= 3

    kafka.wait_until(poll_until_three, timeout=10)
    consumer.commit(asynchronous=False)
    consumer.close()

    assert [m.value() for m in consumed] == [b"payment 0", b"payment 1", b"payment 2"]
    assert consumed[0].headers() == [("currency", b"EUR")]
    kafka.assert_committed("ledger", {("payments", 0): 3})


def test_java_client(kafka):
    # Compile examples/java/ProduceOrders.java with javac (cached) and run it against this test's cluster.
    # tests/javautil.py is the fakekafka repo's helper: it skips when java, javac or the Kafka jars are missing.
    from tests.javautil import compile_java, run_java

    classes = compile_java(Path(__file__).parent / "java" / "ProduceOrders.java")
    run_java(classes, "ProduceOrders", kafka.bootstrap_servers, "orders", "5")

    records = kafka.records("orders")
    assert [(r.key, r.value) for r in records] == [(f"order-{i}".encode(), f'{{"id": {i}}}'.encode())
                                                   for i in range(5)]
    assert all(r.headers == [("source", b"java")] for r in records)
