"""Transactions through the Python clients: what read_committed consumers see, zombie fencing, and
consume-transform-produce exactly once across a crash.

Runs on the `kafka` fixture, so the same tests check fakekafka here and Apache Kafka under --kafka-real
(the kafka-real tier: `-m kafka_real`): the outcomes and the errors each client reports must be the same on both.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import Iterator

import pytest
from confluent_kafka import Consumer, KafkaError, KafkaException, Producer, TopicPartition

from fakekafka.testing.handle import ClusterHandle
from tests.integration.clients.scenarios import kafka_python_consumer

pytestmark = [pytest.mark.clients, pytest.mark.kafka_real]

TIMEOUT = 20.0


@pytest.fixture
def topic(broker: ClusterHandle) -> Iterator[str]:
    name = f"txn-{uuid.uuid4().hex[:8]}"
    broker.create_topic(name, 2)
    broker.wait_for_topic(name, 2)
    yield name


def _read(bootstrap: str, topic: str, isolation: str, expect: int, partitions: int = 2,
          settle: float = 1.0) -> list[str]:
    """Every value in `topic` a consumer with `isolation` reads; stops `settle` s after the `expect`-th."""
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": f"r-{uuid.uuid4().hex[:6]}",
                  "isolation.level": isolation, "enable.auto.commit": False, "auto.offset.reset": "earliest"})
    c.assign([TopicPartition(topic, p, 0) for p in range(partitions)])
    got: list[str] = []
    deadline = time.monotonic() + TIMEOUT
    settled_at = None
    try:
        while time.monotonic() < deadline:
            m = c.poll(0.1)
            if m is not None and not m.error():
                got.append(m.value().decode())
            if len(got) >= expect:
                settled_at = settled_at or time.monotonic()
                if time.monotonic() - settled_at > settle:
                    break
    finally:
        c.close()
    return sorted(got)


def _read_for(bootstrap: str, topic: str, isolation: str, seconds: float) -> list[str]:
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": f"r-{uuid.uuid4().hex[:6]}",
                  "isolation.level": isolation, "enable.auto.commit": False})
    c.assign([TopicPartition(topic, p, 0) for p in range(2)])
    got: list[str] = []
    deadline = time.monotonic() + seconds
    try:
        while time.monotonic() < deadline:
            m = c.poll(0.1)
            if m is not None and not m.error():
                got.append(m.value().decode())
    finally:
        c.close()
    return got


def _txn_producer(bootstrap: str, tid: str, **extra: object) -> Producer:
    p = Producer({"bootstrap.servers": bootstrap, "transactional.id": tid, "linger.ms": 0, **extra})
    p.init_transactions(TIMEOUT)
    return p


# --- confluent-kafka -----------------------------------------------------------------------------------
def test_confluent_committed_visible_aborted_not(broker: ClusterHandle, topic: str) -> None:
    bs = broker.bootstrap_servers
    p = _txn_producer(bs, f"tx-{topic}")
    p.begin_transaction()
    for i in range(4):
        p.produce(topic, f"c{i}".encode(), partition=i % 2)
    p.commit_transaction(TIMEOUT)
    p.begin_transaction()
    for i in range(4):
        p.produce(topic, f"a{i}".encode(), partition=i % 2)
    p.flush(TIMEOUT)
    p.abort_transaction(TIMEOUT)
    p.begin_transaction()
    p.produce(topic, b"late", partition=0)
    p.commit_transaction(TIMEOUT)
    assert _read(bs, topic, "read_committed", 5) == ["c0", "c1", "c2", "c3", "late"]
    assert _read(bs, topic, "read_uncommitted", 9) == ["a0", "a1", "a2", "a3", "c0", "c1", "c2", "c3", "late"]


def test_confluent_open_transaction_holds_back_read_committed(broker: ClusterHandle, topic: str) -> None:
    bs = broker.bootstrap_servers
    p = _txn_producer(bs, f"tx-{topic}")
    p.begin_transaction()
    p.produce(topic, b"open", partition=0)
    p.flush(TIMEOUT)
    plain = Producer({"bootstrap.servers": bs, "linger.ms": 0})
    plain.produce(topic, b"after", partition=0)
    plain.flush(TIMEOUT)
    # the plain record sits above the open transaction's first offset: read_committed sees neither yet
    assert _read_for(bs, topic, "read_committed", 2.0) == []
    c = Consumer({"bootstrap.servers": bs, "group.id": "lso", "isolation.level": "read_committed"})
    try:
        low, high = c.get_watermark_offsets(TopicPartition(topic, 0), TIMEOUT, cached=False)
        assert (low, high) == (0, 0)  # read_committed: the latest offset is the last stable offset
    finally:
        c.close()
    p.commit_transaction(TIMEOUT)
    assert _read(bs, topic, "read_committed", 2) == ["after", "open"]


def test_confluent_zombie_is_fenced(broker: ClusterHandle, topic: str) -> None:
    bs = broker.bootstrap_servers
    tid = f"tx-{topic}"
    zombie = _txn_producer(bs, tid)
    zombie.begin_transaction()
    zombie.produce(topic, b"zombie", partition=0)
    zombie.flush(TIMEOUT)
    successor = _txn_producer(bs, tid)  # aborts the zombie's open transaction
    try:
        successor.begin_transaction()
        successor.produce(topic, b"successor", partition=1)
        successor.commit_transaction(TIMEOUT)
    finally:
        successor.close()
    with pytest.raises(KafkaException) as raised:
        zombie.commit_transaction(TIMEOUT)
    # `raised` keeps this frame alive past the test (a cycle through its traceback): the zombie is let go here, or
    # it would outlive the test's cluster (it cannot be closed: its abort fails, fenced)
    del zombie
    error = raised.value.args[0]
    assert error.fatal() and error.code() == KafkaError._FENCED, error
    assert _read(bs, topic, "read_committed", 1) == ["successor"]
    assert _read(bs, topic, "read_uncommitted", 2) == ["successor", "zombie"]


def _transform(bs: str, source: str, sink: str, group: str, tid: str, crash_after: int | None) -> int:
    """Reads `source` in group `group`, writes each value upper-cased to `sink` and the consumed offsets in the
    same transaction, one transaction per record; with `crash_after`, stops in the middle of that transaction
    without committing it or closing its producer, as a killed process would (its consumer leaves the group,
    which a killed one would do by session timeout). Returns how many transactions it committed."""
    consumer = Consumer({"bootstrap.servers": bs, "group.id": group, "isolation.level": "read_committed",
                         "enable.auto.commit": False, "auto.offset.reset": "earliest"})
    consumer.subscribe([source])
    producer = _txn_producer(bs, tid)
    committed = 0
    started = time.monotonic()
    last = None
    try:
        while time.monotonic() - (last or started) < (3.0 if last else TIMEOUT):
            m = consumer.poll(0.2)
            if m is None or m.error():
                continue
            last = time.monotonic()
            producer.begin_transaction()
            producer.produce(sink, m.value().upper(), partition=m.partition())
            if crash_after is not None and committed == crash_after:
                producer.flush(TIMEOUT)
                return committed  # the process dies here: the transaction stays open
            producer.send_offsets_to_transaction([TopicPartition(source, m.partition(), m.offset() + 1)],
                                                 consumer.consumer_group_metadata(), TIMEOUT)
            producer.commit_transaction(TIMEOUT)
            committed += 1
    finally:
        consumer.close()
    return committed


def test_confluent_consume_transform_produce_exactly_once_across_a_crash(broker: ClusterHandle, topic: str) -> None:
    bs = broker.bootstrap_servers
    sink = f"{topic}-out"
    broker.create_topic(sink, 2)
    broker.wait_for_topic(sink, 2)
    source = Producer({"bootstrap.servers": bs, "linger.ms": 0})
    values = [f"v{i}" for i in range(10)]
    for i, v in enumerate(values):
        source.produce(topic, v.encode(), partition=i % 2)
    source.flush(TIMEOUT)
    group, tid = f"etl-{topic}", f"etl-{topic}-0"
    first = _transform(bs, topic, sink, group, tid, crash_after=3)
    assert first == 3
    # the restarted instance fences the dead one (aborting its open transaction) and carries on from the
    # offsets committed with the outputs
    second = _transform(bs, topic, sink, group, tid, crash_after=None)
    assert first + second == len(values)
    assert _read(bs, sink, "read_committed", len(values)) == sorted(v.upper() for v in values)
    c = Consumer({"bootstrap.servers": bs, "group.id": group})
    try:
        offsets = c.committed([TopicPartition(topic, p) for p in (0, 1)], TIMEOUT)
    finally:
        c.close()
    assert sorted(tp.offset for tp in offsets) == [5, 5]


# --- aiokafka ------------------------------------------------------------------------------------------
def test_aiokafka_transactions_and_fencing(broker: ClusterHandle, topic: str) -> None:
    from aiokafka import AIOKafkaConsumer, AIOKafkaProducer
    from aiokafka.errors import ProducerFenced

    bs = broker.bootstrap_servers

    async def run() -> tuple[list[str], list[str], type[BaseException] | None]:
        p = AIOKafkaProducer(bootstrap_servers=bs, transactional_id=f"aio-{topic}")
        await p.start()
        try:
            async with p.transaction():
                await p.send_and_wait(topic, b"c0", partition=0)
            await p.begin_transaction()
            await p.send_and_wait(topic, b"a0", partition=1)
            await p.abort_transaction()
            successor = AIOKafkaProducer(bootstrap_servers=bs, transactional_id=f"aio-{topic}")
            await successor.start()
            fenced: type[BaseException] | None = None
            try:
                async with successor.transaction():
                    await successor.send_and_wait(topic, b"c1", partition=1)
                try:
                    async with p.transaction():
                        await p.send_and_wait(topic, b"zombie", partition=0)
                except ProducerFenced as e:
                    fenced = type(e)
            finally:
                await successor.stop()
        finally:
            await p.stop()
        seen = {}
        for isolation in ("read_committed", "read_uncommitted"):
            c = AIOKafkaConsumer(topic, bootstrap_servers=bs, isolation_level=isolation,
                                 auto_offset_reset="earliest", enable_auto_commit=False,
                                 group_id=f"g-{isolation}-{topic}")
            await c.start()
            got: list[str] = []
            try:
                deadline = time.monotonic() + TIMEOUT
                while time.monotonic() < deadline:
                    batch = await c.getmany(timeout_ms=500)
                    got += [m.value.decode() for msgs in batch.values() for m in msgs]
                    if len(got) >= (2 if isolation == "read_committed" else 3) and not batch:
                        break
            finally:
                await c.stop()
            seen[isolation] = sorted(got)
        return seen["read_committed"], seen["read_uncommitted"], fenced

    committed, uncommitted, fenced = asyncio.run(run())
    assert committed == ["c0", "c1"]
    assert uncommitted == ["a0", "c0", "c1"]
    assert fenced is ProducerFenced


# --- kafka-python --------------------------------------------------------------------------------------
def test_kafka_python_transactions(broker: ClusterHandle, topic: str) -> None:
    from kafka import KafkaProducer
    from kafka import TopicPartition as KTopicPartition

    bs = broker.bootstrap_servers
    p = KafkaProducer(bootstrap_servers=bs, transactional_id=f"kp-{topic}", linger_ms=0)
    try:
        p.init_transactions()
        p.begin_transaction()
        p.send(topic, b"c0", partition=0)
        p.commit_transaction()
        p.begin_transaction()
        p.send(topic, b"a0", partition=1).get(TIMEOUT)
        p.abort_transaction()
    finally:
        p.close(timeout=TIMEOUT)
    for isolation, expected in (("read_committed", ["c0"]), ("read_uncommitted", ["a0", "c0"])):
        c = kafka_python_consumer(bootstrap_servers=bs, isolation_level=isolation, auto_offset_reset="earliest",
                                  enable_auto_commit=False, consumer_timeout_ms=3000)
        c.assign([KTopicPartition(topic, 0), KTopicPartition(topic, 1)])
        c.seek_to_beginning()
        try:
            assert sorted(m.value.decode() for m in c) == expected, isolation
        finally:
            c.close()


def test_confluent_compaction_drops_aborted_data_and_keeps_markers(broker: ClusterHandle) -> None:
    """Kafka's log cleaner on a compacted topic with transactions: the aborted batch is emptied (kept as a bare
    header, being its producer's last batch), both markers stay while the round saw their transactions' data,
    and every consumer, read_uncommitted too, then reads only committed records. The same batches on Apache
    Kafka, whose cleaner is woken by a lowered log.cleaner.backoff.ms."""
    from confluent_kafka.admin import (
        AdminClient,
        AlterConfigOpType,
        ConfigEntry,
        ConfigResource,
        NewTopic,
        ResourceType,
    )

    bs = broker.bootstrap_servers
    admin = AdminClient({"bootstrap.servers": bs})
    name = f"txn-compacted-{uuid.uuid4().hex[:8]}"
    admin.create_topics([NewTopic(name, 1, config={"cleanup.policy": "compact", "segment.ms": "60000",
                                                   "min.cleanable.dirty.ratio": "0.01"})])[name].result(TIMEOUT)
    broker.wait_for_topic(name)
    node = str(admin.describe_cluster().result(TIMEOUT).controller.id)

    def backoff(value: str | None) -> None:
        op = AlterConfigOpType.SET if value is not None else AlterConfigOpType.DELETE
        r = ConfigResource(ResourceType.BROKER, node, incremental_configs=[
            ConfigEntry("log.cleaner.backoff.ms", value, incremental_operation=op)])
        assert admin.incremental_alter_configs([r])[r].result(TIMEOUT) is None

    def layout() -> list[tuple[int, int, int, bool]]:
        from fakekafka.wire.records import read_header
        from tests.integration.clients.scenarios import stored_batches
        return [(h.base_offset, h.last_offset, h.records_count, h.is_control)
                for h in map(read_header, stored_batches(broker, name))]

    expected = [(0, 0, 1, False), (1, 1, 1, True), (2, 3, 0, False), (4, 4, 1, True), (5, 5, 1, False),
                (6, 6, 1, False), (7, 7, 1, False)]
    backoff("100")  # before writing: the cleaner may clean [0, 5] before offset 7 rolls again, to the same result
    try:
        now = int(time.time() * 1000)
        p = _txn_producer(bs, f"tx-{name}")
        p.begin_transaction()
        p.produce(name, b"c1", b"a", timestamp=now)  # 0, COMMIT at 1
        p.commit_transaction(TIMEOUT)
        p.begin_transaction()
        p.produce(name, b"x", b"a", timestamp=now)
        p.produce(name, b"x", b"b", timestamp=now)  # 2-3, ABORT at 4
        p.flush(TIMEOUT)
        p.abort_transaction(TIMEOUT)
        # Kafka answers EndTxn once the transaction log holds PrepareAbort and writes the marker after: wait for it,
        # or the plain record below may take offset 4 ahead of it
        broker.wait_until(lambda: broker.end_offsets(name) == {0: 5}, timeout=TIMEOUT, message="the ABORT marker")
        plain = Producer({"bootstrap.servers": bs, "linger.ms": 0})
        for key, at in ((b"b", now), (b"c", now + 120_000), (b"d", now + 240_000)):  # 5; 6 and 7 roll segments
            plain.produce(name, b"p", key, timestamp=at)
            assert plain.flush(TIMEOUT) == 0
        seen: list[list[tuple[int, int, int, bool]]] = [[]]

        def cleaned() -> bool:
            seen[0] = layout()
            return seen[0] == expected
        try:
            broker.wait_until(cleaned, timeout=30, message="the cleaner's work")
        except AssertionError as e:
            raise AssertionError(f"{e}\nlast layout (base, last, count, control): {seen[0]}") from None
    finally:
        backoff(None)
    for isolation in ("read_committed", "read_uncommitted"):
        c = Consumer({"bootstrap.servers": bs, "group.id": f"g-{isolation}", "enable.auto.commit": False,
                      "isolation.level": isolation})
        try:
            c.assign([TopicPartition(name, 0, 0)])
            got: list[tuple[int, bytes, bytes]] = []
            deadline = time.monotonic() + TIMEOUT
            while len(got) < 4 and time.monotonic() < deadline:
                m = c.poll(0.1)
                if m is not None and not m.error():
                    got.append((m.offset(), m.key(), m.value()))
            assert got == [(0, b"a", b"c1"), (5, b"b", b"p"), (6, b"c", b"p"), (7, b"d", b"p")], isolation
        finally:
            c.close()
