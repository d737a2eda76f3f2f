"""The byzantine faults (asked for by name only; never something Kafka does) against real clients, on the fake
cluster and through the proxy: a Fetch answer's batch with its CRC corrupted is reported as a corruption by
confluent-kafka (check.crcs=true: its own _BAD_MSG error, then the records from a clean fetch) and by kafka-python
(CorruptRecordError) and by Java's KafkaConsumer (through compat's driver: its KafkaException "Record batch ...
is invalid, cause: Record is corrupt"); batches served out of offset order are delivered out of order by
confluent-kafka and kafka-python, while Java's KafkaConsumer drops the batch behind its position and asks again
(it delivers every record once, in offset order); two records swapped inside one batch (CRC recomputed, so no CRC
check notices) are delivered swapped by confluent-kafka and kafka-python, while Java's skips the record that came
behind its position: it never delivers it, and raises nothing."""

from __future__ import annotations

import contextlib
import time
import uuid
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from fakekafka import Cluster, Schedule, Step
from fakekafka.proxy import Proxy

pytest.importorskip("confluent_kafka")
pytest.importorskip("kafka")

Seen = list[tuple[object, ...]]


def confluent(bootstrap_servers: str, topic: str) -> Seen:
    """(offset, value) per message, ("error", code) per error event, until five records came."""
    from confluent_kafka import Consumer, TopicPartition

    consumer = Consumer({"bootstrap.servers": bootstrap_servers, "group.id": f"g-{uuid.uuid4().hex[:8]}",
                         "check.crcs": True, "enable.auto.commit": False})
    seen: Seen = []
    try:
        consumer.assign([TopicPartition(topic, 0, 0)])
        deadline = time.monotonic() + 30
        while sum(1 for s in seen if s[0] != "error") < 5 and time.monotonic() < deadline:
            m = consumer.poll(0.2)
            if m is not None:
                seen.append((m.offset(), m.value()) if m.error() is None else ("error", m.error().code()))
    finally:
        consumer.close()
    return seen


def kafka_python(bootstrap_servers: str, topic: str) -> Seen:
    """(offset, value) per record until five came, or ("error", the exception's name) and stop."""
    from kafka import KafkaConsumer, TopicPartition

    consumer = KafkaConsumer(bootstrap_servers=bootstrap_servers, enable_auto_commit=False, fetch_max_wait_ms=100)
    seen: Seen = []
    try:
        tp = TopicPartition(topic, 0)
        consumer.assign([tp])
        consumer.seek(tp, 0)
        deadline = time.monotonic() + 30
        while len(seen) < 5 and time.monotonic() < deadline:
            try:
                batches = consumer.poll(timeout_ms=200)
            except Exception as e:  # noqa: BLE001 - what the client raises is what the test looks at
                seen.append(("error", type(e).__name__))
                break
            seen.extend((r.offset, r.value) for records in batches.values() for r in records)
    finally:
        consumer.close()
    return seen


@contextlib.contextmanager
def served(where: str, kind: str, *, one_batch: bool = False) -> Iterator[tuple[str, Callable[[], Schedule]]]:
    """Five single-record batches on topic t (`one_batch`: one batch of five records), the first Fetch of them
    served with the byzantine `kind`: by the fake cluster's chaos, or by a proxy's in front of it."""
    schedule = Schedule([Step("Fetch", 0, kind)])
    with Cluster(topics={"t": 1}, chaos=schedule if where == "fake" else None) as cluster:
        if one_batch:
            from fakekafka.wire.records import build_batch
            batch = build_batch([{"value": f"e{i}".encode(), "timestamp": 1_700_000_000_000 + i} for i in range(5)])
            cluster.call(lambda: cluster.state.append(cluster.state.topics["t"].partitions[0], batch))
        else:
            for i in range(5):
                cluster.produce("t", f"e{i}".encode())
        if where == "fake":
            yield cluster.bootstrap_servers, cluster.chaos_schedule
        else:
            with Proxy(cluster, chaos=schedule) as proxy:
                yield proxy.bootstrap_servers, proxy.chaos_schedule


RECORDS = [(i, f"e{i}".encode()) for i in range(5)]


@pytest.mark.parametrize("where", ["fake", "proxy"])
def test_a_corrupted_crc_is_reported_by_clients_that_check_crcs(where: str) -> None:
    from confluent_kafka import KafkaError

    with served(where, "corrupt_crc") as (bootstrap_servers, schedule):
        seen = confluent(bootstrap_servers, "t")
        assert seen == [("error", KafkaError._BAD_MSG), *RECORDS]  # reported, then fetched again clean
        assert [s.kind for s in schedule()] == ["corrupt_crc"]
    with served(where, "corrupt_crc") as (bootstrap_servers, _):
        assert kafka_python(bootstrap_servers, "t") == [("error", "CorruptRecordError")]


@pytest.mark.parametrize("where", ["fake", "proxy"])
def test_batches_out_of_order_are_delivered_out_of_order(where: str) -> None:
    out_of_order = [RECORDS[1], RECORDS[0], *RECORDS[2:]]
    with served(where, "out_of_order") as (bootstrap_servers, schedule):
        assert confluent(bootstrap_servers, "t") == out_of_order
        assert [s.kind for s in schedule()] == ["out_of_order"]
    with served(where, "out_of_order") as (bootstrap_servers, _):
        assert kafka_python(bootstrap_servers, "t") == out_of_order


@pytest.mark.parametrize("where", ["fake", "proxy"])
def test_records_reordered_inside_one_batch_are_delivered_as_served_or_skipped(where: str) -> None:
    """The batch's CRC holds (recomputed), so no client checking CRCs notices; each record keeps its offset."""
    reordered = [RECORDS[1], RECORDS[0], *RECORDS[2:]]
    with served(where, "reordered_records", one_batch=True) as (bootstrap_servers, schedule):
        assert confluent(bootstrap_servers, "t") == reordered
        assert [s.kind for s in schedule()] == ["reordered_records"]
    with served(where, "reordered_records", one_batch=True) as (bootstrap_servers, _):
        assert kafka_python(bootstrap_servers, "t") == reordered
    with served(where, "reordered_records", one_batch=True) as (bootstrap_servers, _):
        with java_driver(bootstrap_servers) as driver:
            got = driver.fetch("t", 0, 0, 4, reset="earliest")
    # Java's fetcher skips a record whose offset is below its position (record 0, after record 1 moved it on):
    # the record is lost to it, silently
    assert [(r.offset, r.value) for r in got] == [RECORDS[1], *RECORDS[2:]]


def test_the_java_consumer_skips_a_batch_served_behind_its_position() -> None:
    """Java's fetcher drops a batch whose offsets lie before the position it asked from (the second batch came
    first, so the first comes after the position moved past it) and goes on from the position: it delivers the
    second record, skips the first, then the rest in order. It raises nothing."""
    with served("fake", "out_of_order") as (bootstrap_servers, schedule):
        with java_driver(bootstrap_servers) as driver:
            got = driver.fetch("t", 0, 0, 4, reset="earliest")
        assert [s.kind for s in schedule()] == ["out_of_order"]
    assert [(r.offset, r.value) for r in got] == [RECORDS[1], *RECORDS[2:]]


@contextlib.contextmanager
def java_driver(bootstrap_servers: str) -> Iterator[Any]:
    """compat's Java driver (kafka-clients 4.4.0) on the cluster, closed after; the test skips without Java."""
    from compat.clients.base import Timing, Unsupported
    from compat.clients.registry import make_client

    try:
        driver = make_client("java", bootstrap_servers, Timing(op_s=30, fetch_s=10, group_s=10))
    except Unsupported as e:
        pytest.skip(str(e))
    try:
        yield driver
    finally:
        driver.close()


@pytest.mark.parametrize("where", ["fake", "proxy"])
def test_the_java_consumer_reports_a_corrupted_crc(where: str) -> None:
    from compat.clients.base import ClientError, Timing, Unsupported
    from compat.clients.registry import make_client

    with served(where, "corrupt_crc") as (bootstrap_servers, schedule):
        try:
            driver = make_client("java", bootstrap_servers, Timing(op_s=30, fetch_s=10, group_s=10))
        except Unsupported as e:
            pytest.skip(str(e))
        try:
            with pytest.raises(ClientError, match=r"Record batch for partition t-0 at offset 0 is invalid, cause: "
                                                  r"Record is corrupt \(stored crc = \d+, computed crc = \d+\)"):
                driver.fetch("t", 0, 0, 5, reset="earliest")
        finally:
            driver.close()
        assert [s.kind for s in schedule()] == ["corrupt_crc"]
