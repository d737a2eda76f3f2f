"""confluent-kafka (librdkafka) against fakekafka, end to end over the wire.

Consumers use assign() with explicit start offsets and enable.auto.commit=false: consumer groups are not
implemented yet, and an assignment without an offset would ask the group coordinator (OffsetFetch).
Every scenario also reads what fakekafka stored (tests/integration/clients/scenarios.py), independently of the client.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaError, KafkaException, Message, Producer, TopicPartition
from confluent_kafka.admin import (
    AdminClient,
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    ConfigSource,
    NewPartitions,
    NewTopic,
    OffsetSpec,
    ResourceType,
)

import fakekafka
from fakekafka.testing.handle import ClusterHandle
from fakekafka.wire.records import DELETE_HORIZON_FLAG, Compression, read_header
from tests.integration.clients.scenarios import (
    BAD_TOPIC_NAMES,
    CODECS,
    COMPRESSIBLE,
    KEEP_FOREVER,
    MANY,
    SAMPLES,
    TIMESTAMPS,
    MiB,
    Row,
    Sample,
    dropping_produce_responses,
    expected_rows,
    random_bytes,
    stored,
    stored_batches,
    stored_codecs,
)

pytestmark = [pytest.mark.clients, pytest.mark.kafka_real]

TIMEOUT = 10.0


@pytest.fixture
def connect(broker: ClusterHandle) -> Iterator[Callable[..., Any]]:
    """Makes producers, consumers and admin clients for `broker` and closes them after the test."""
    made: list[Any] = []

    def make(kind: type, *, cluster: ClusterHandle | None = None, **config: Any) -> Any:
        config = {"bootstrap.servers": (cluster or broker).bootstrap_servers, **config}
        if kind is Consumer:
            config = {"group.id": "unused", "enable.auto.commit": False, "enable.partition.eof": False, **config}
        client = kind(config)
        made.append(client)
        return client

    yield make
    for client in reversed(made):
        if isinstance(client, Producer):
            client.purge()
            client.close()
        elif isinstance(client, Consumer):
            client.close()
        else:
            client.__exit__(None, None, None)


class Deliveries:
    """Delivery reports of one producer, in the order librdkafka gave them."""

    def __init__(self) -> None:
        self.reports: list[tuple[KafkaError | None, Message]] = []

    def __call__(self, err: KafkaError | None, msg: Message) -> None:
        self.reports.append((err, msg))

    def ok(self) -> list[tuple[int, int]]:
        """(partition, offset) of each delivered message; fails on any delivery error."""
        errors = [err for err, _ in self.reports if err is not None]
        assert not errors, errors
        return [(m.partition(), m.offset()) for _, m in self.reports]


def knowing(producer: Producer, topic: str) -> Producer:
    """The producer once it holds the topic's metadata: records produced before librdkafka knows the topic wait
    in its unassigned queue, and on a loaded machine (seen on Kafka) its flush can then send them in two batches,
    the first of small records sent uncompressed."""
    assert producer.list_topics(topic, timeout=TIMEOUT).topics[topic].error is None
    return producer


def produce_all(producer: Producer, topic: str, samples: list[Sample] = SAMPLES, **kw: Any) -> Deliveries:
    reports = Deliveries()
    for s in samples:
        producer.produce(topic, key=s.key, value=s.value, headers=list(s.headers), on_delivery=reports, **kw)
    assert producer.flush(TIMEOUT) == 0, "messages still queued after flush"
    assert len(reports.reports) == len(samples)
    return reports


def consume(consumer: Consumer, count: int) -> list[Message]:
    """Polls until `count` messages arrived (failing after TIMEOUT or on an error), then checks no more."""
    out: list[Message] = []
    deadline = time.monotonic() + TIMEOUT
    while len(out) < count:
        assert time.monotonic() < deadline, f"consumed {len(out)} of {count} messages in {TIMEOUT}s"
        for m in consumer.consume(count - len(out), timeout=0.2):
            assert m.error() is None, m.error()
            out.append(m)
    assert not consumer.consume(1, timeout=0.05), "more messages than produced"
    return out


def rows(messages: list[Message]) -> list[Row]:
    return [(m.offset(), m.key(), m.value(), list(m.headers() or [])) for m in messages]


def assign_from_start(consumer: Consumer, topic: str, partitions: int = 1) -> None:
    consumer.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in range(partitions)])


def admin_error(future: Any) -> int:
    """The Kafka error code an admin future failed with."""
    with pytest.raises(KafkaException) as info:
        future.result(TIMEOUT)
    return info.value.args[0].code()


def test_produce_consume_keys_headers_nulls(broker: ClusterHandle, connect: Callable[..., Any]) -> None:
    broker.create_topic("plain")
    samples = SAMPLES + [Sample(None, None, (("null", None),))]  # librdkafka writes a null header value
    reports = produce_all(connect(Producer), "plain", samples)
    assert reports.ok() == [(0, i) for i in range(len(samples))]
    assert stored(broker, "plain") == expected_rows(samples)

    consumer = connect(Consumer)
    assign_from_start(consumer, "plain")
    assert rows(consume(consumer, len(samples))) == expected_rows(samples)


@pytest.mark.parametrize("codec", CODECS)
def test_compression(broker: ClusterHandle, connect: Callable[..., Any], codec: str) -> None:
    broker.create_topic("z")
    # a long linger and one flush put every record in one batch
    producer = knowing(connect(Producer, **{"compression.type": codec, "linger.ms": 10_000}), "z")
    produce_all(producer, "z", COMPRESSIBLE).ok()
    assert stored_codecs(broker, "z") == [Compression[codec.upper()]]
    assert stored(broker, "z") == expected_rows(COMPRESSIBLE)
    consumer = connect(Consumer)
    assign_from_start(consumer, "z")
    assert rows(consume(consumer, len(COMPRESSIBLE))) == expected_rows(COMPRESSIBLE)


def test_one_mib_record(broker: ClusterHandle, connect: Callable[..., Any]) -> None:
    big = random_bytes(MiB)
    admin = connect(AdminClient)
    admin.create_topics([NewTopic("big", 1, config={"max.message.bytes": str(2 * MiB)})])["big"].result(TIMEOUT)
    producer = connect(Producer, **{"message.max.bytes": 2 * MiB, "retries": 0})
    reports = Deliveries()
    producer.produce("big", key=b"k", value=big, on_delivery=reports)
    producer.flush(TIMEOUT)
    assert reports.ok() == [(0, 0)]
    assert stored(broker, "big") == [(0, b"k", big, [])]
    consumer = connect(Consumer, **{"max.partition.fetch.bytes": MiB // 2})  # one batch comes whatever the limit
    assign_from_start(consumer, "big")
    assert rows(consume(consumer, 1)) == [(0, b"k", big, [])]

    # the broker default max.message.bytes (1048588) cannot hold 1 MiB plus the batch overhead
    broker.create_topic("small")
    reports = Deliveries()
    producer.produce("small", value=big, on_delivery=reports)
    producer.flush(TIMEOUT)
    assert [err.code() for err, _ in reports.reports] == [KafkaError.MSG_SIZE_TOO_LARGE]
    assert broker.end_offsets("small") == {0: 0}


def test_hundred_partitions(broker: ClusterHandle, connect: Callable[..., Any]) -> None:
    broker.create_topic("wide", 100)
    producer = connect(Producer)
    reports = Deliveries()
    for i in range(100):
        producer.produce("wide", value=f"p{i}".encode(), partition=i, on_delivery=reports)
    producer.flush(TIMEOUT)
    assert sorted(reports.ok()) == [(i, 0) for i in range(100)]
    assert broker.end_offsets("wide") == {i: 1 for i in range(100)}

    consumer = connect(Consumer)
    assign_from_start(consumer, "wide", 100)
    got = consume(consumer, 100)
    assert sorted((m.partition(), m.offset(), m.value()) for m in got) == [(i, 0, f"p{i}".encode())
                                                                           for i in range(100)]


def test_list_offsets(broker: ClusterHandle, connect: Callable[..., Any]) -> None:
    broker.create_topic("times", configs=KEEP_FOREVER)
    # all five in one compressed batch: lookups by time must look inside it
    producer = knowing(connect(Producer, **{"linger.ms": 60_000, "batch.num.messages": len(TIMESTAMPS),
                                            "compression.type": "zstd"}), "times")
    reports = Deliveries()
    for ts in TIMESTAMPS:
        producer.produce("times", value=b"%d" % ts * 10, timestamp=ts, on_delivery=reports)
    producer.flush(TIMEOUT)
    assert reports.ok() == [(0, i) for i in range(len(TIMESTAMPS))]
    assert stored_codecs(broker, "times") == [Compression.ZSTD]

    consumer = connect(Consumer)
    assert consumer.get_watermark_offsets(TopicPartition("times", 0), timeout=TIMEOUT) == (0, len(TIMESTAMPS))

    def by_time(ts: int) -> int:
        [tp] = consumer.offsets_for_times([TopicPartition("times", 0, ts)], timeout=TIMEOUT)
        assert tp.error is None
        return tp.offset
    assert by_time(TIMESTAMPS[2]) == 2
    assert by_time(TIMESTAMPS[2] - 1) == 2
    assert by_time(0) == 0
    assert by_time(TIMESTAMPS[-1] + 1) == -1  # OFFSET_END: no record that late

    admin = connect(AdminClient)
    tp = TopicPartition("times", 0)
    specs = [(OffsetSpec.earliest(), 0), (OffsetSpec.latest(), len(TIMESTAMPS)),
             (OffsetSpec.max_timestamp(), len(TIMESTAMPS) - 1), (OffsetSpec.for_timestamp(TIMESTAMPS[3]), 3)]
    for spec, offset in specs:
        info = admin.list_offsets({tp: spec})[tp].result(TIMEOUT)
        assert info.offset == offset, spec
    info = admin.list_offsets({tp: OffsetSpec.max_timestamp()})[tp].result(TIMEOUT)
    assert info.timestamp == TIMESTAMPS[-1]


def test_auto_create_topic(broker: ClusterHandle, connect: Callable[..., Any]) -> None:
    reports = Deliveries()
    producer = connect(Producer)
    producer.produce("fresh", key=b"k", value=b"v", on_delivery=reports)
    producer.flush(TIMEOUT)
    assert reports.ok() == [(0, 0)]
    assert "fresh" in broker.topics()
    assert stored(broker, "fresh") == [(0, b"k", b"v", [])]


@pytest.mark.fakekafka(auto_create_topics=False)
def test_auto_create_disabled(broker: ClusterHandle, connect: Callable[..., Any]) -> None:
    producer = connect(Producer, **{"topic.metadata.propagation.max.ms": 100})
    reports = Deliveries()
    producer.produce("missing", value=b"v", on_delivery=reports)
    producer.flush(TIMEOUT)
    assert [err.code() for err, _ in reports.reports] == [KafkaError.UNKNOWN_TOPIC_OR_PART]

    md = producer.list_topics("missing", timeout=TIMEOUT)
    assert md.topics["missing"].error.code() == KafkaError.UNKNOWN_TOPIC_OR_PART

    assert broker.topics() == []


def test_admin_topics(broker: ClusterHandle, connect: Callable[..., Any]) -> None:
    admin = connect(AdminClient)
    assert admin.create_topics([NewTopic("made", 3, 1)])["made"].result(TIMEOUT) is None
    broker.wait_for_topic("made", 3)  # Kafka's brokers learn of it after the controller answers
    assert len(admin.list_topics(timeout=TIMEOUT).topics["made"].partitions) == 3

    assert admin_error(admin.create_topics([NewTopic("made", 1)])["made"]) == KafkaError.TOPIC_ALREADY_EXISTS
    assert admin_error(admin.create_topics([NewTopic("p", 0)])["p"]) == KafkaError.INVALID_PARTITIONS
    with pytest.raises(ValueError, match="num_partitions"):  # librdkafka refuses -5 itself
        admin.create_topics([NewTopic("p", -5)])
    assert admin_error(admin.create_topics([NewTopic("r", 1, 2)])["r"]) == KafkaError.INVALID_REPLICATION_FACTOR
    for name in BAD_TOPIC_NAMES:
        assert admin_error(admin.create_topics([NewTopic(name, 1)])[name]) == KafkaError.TOPIC_EXCEPTION
    assert broker.topics() == ["made"]

    assert admin.create_partitions([NewPartitions("made", 5)])["made"].result(TIMEOUT) is None
    broker.wait_for_topic("made", 5)
    assert admin_error(admin.create_partitions([NewPartitions("made", 2)])["made"]) == KafkaError.INVALID_PARTITIONS

    assert admin.delete_topics(["made"])["made"].result(TIMEOUT) is None
    broker.wait_until(lambda: broker.topics() == [], message="the topic deleted")
    assert admin_error(admin.delete_topics(["made"])["made"]) == KafkaError.UNKNOWN_TOPIC_OR_PART


def test_describe_configs(broker: ClusterHandle, connect: Callable[..., Any]) -> None:
    admin = connect(AdminClient)
    admin.create_topics([NewTopic("cfg", 1, config={"cleanup.policy": "compact"})])["cfg"].result(TIMEOUT)
    broker.wait_for_topic("cfg")  # else Kafka's broker may not know it yet: UNKNOWN_TOPIC_OR_PARTITION
    resource = ConfigResource(ResourceType.TOPIC, "cfg")
    configs = admin.describe_configs([resource])[resource].result(TIMEOUT)
    assert configs["retention.ms"].value == "604800000"
    assert configs["retention.ms"].source == ConfigSource.DEFAULT_CONFIG.value
    assert configs["max.message.bytes"].value == "1048588"
    assert configs["cleanup.policy"].value == "compact"
    assert configs["cleanup.policy"].source == ConfigSource.DYNAMIC_TOPIC_CONFIG.value

    missing = ConfigResource(ResourceType.TOPIC, "nope")
    assert admin_error(admin.describe_configs([missing])[missing]) == KafkaError.UNKNOWN_TOPIC_OR_PART


def test_incremental_alter_configs(broker: ClusterHandle, connect: Callable[..., Any]) -> None:
    """librdkafka's incremental_alter_configs on a topic and on a broker (librdkafka refuses the cluster-wide
    resource ""): the new values and their sources in describe_configs, Kafka's error for a bad value, and
    nothing of that request applied."""
    admin = connect(AdminClient)
    admin.create_topics([NewTopic("alt", 1)])["alt"].result(TIMEOUT)
    broker.wait_for_topic("alt")
    topic = ConfigResource(ResourceType.TOPIC, "alt", incremental_configs=[
        ConfigEntry("retention.ms", "3600000", incremental_operation=AlterConfigOpType.SET),
        ConfigEntry("cleanup.policy", "compact", incremental_operation=AlterConfigOpType.APPEND)])
    assert admin.incremental_alter_configs([topic])[topic].result(TIMEOUT) is None
    node = str(admin.describe_cluster().result(TIMEOUT).controller.id)
    cluster = ConfigResource(ResourceType.BROKER, node, incremental_configs=[
        ConfigEntry("log.retention.bytes", "1000000000", incremental_operation=AlterConfigOpType.SET)])
    assert admin.incremental_alter_configs([cluster])[cluster].result(TIMEOUT) is None
    described = ConfigResource(ResourceType.TOPIC, "alt")

    def configs() -> dict[str, Any]:
        return admin.describe_configs([described])[described].result(TIMEOUT)
    broker.wait_until(lambda: configs()["retention.bytes"].value == "1000000000", message="the broker's value")
    got = configs()
    assert (got["retention.ms"].value, got["retention.ms"].source) == (
        "3600000", ConfigSource.DYNAMIC_TOPIC_CONFIG.value)
    assert got["cleanup.policy"].value == "delete,compact"
    assert got["retention.bytes"].source == ConfigSource.DYNAMIC_BROKER_CONFIG.value
    bad = ConfigResource(ResourceType.TOPIC, "alt", incremental_configs=[
        ConfigEntry("retention.ms", "1", incremental_operation=AlterConfigOpType.SET),
        ConfigEntry("segment.bytes", "100", incremental_operation=AlterConfigOpType.SET)])
    assert admin_error(admin.incremental_alter_configs([bad])[bad]) == KafkaError.INVALID_CONFIG
    assert configs()["retention.ms"].value == "3600000"
    undo = ConfigResource(ResourceType.BROKER, node, incremental_configs=[
        ConfigEntry("log.retention.bytes", None, incremental_operation=AlterConfigOpType.DELETE)])
    assert admin.incremental_alter_configs([undo])[undo].result(TIMEOUT) is None


@pytest.mark.fakekafka_only
@pytest.mark.fakekafka(clock="frozen")
def test_lowered_retention_deletes_at_the_next_check(broker: ClusterHandle, connect: Callable[..., Any]) -> None:
    """retention.ms lowered through incremental_alter_configs: at the next retention check on the cluster's
    clock the old records are gone: the earliest offset moves and a consumer at 0 is out of range."""
    assert isinstance(broker, fakekafka.Cluster)
    admin = connect(AdminClient)
    admin.create_topics([NewTopic("ret", 1)])["ret"].result(TIMEOUT)
    broker.wait_for_topic("ret")
    producer = connect(Producer, **{"bootstrap.servers": broker.bootstrap_servers})
    for i in range(3):
        producer.produce("ret", value=f"v{i}".encode(), timestamp=broker.state.clock.now_ms())
    assert producer.flush(TIMEOUT) == 0
    lower = ConfigResource(ResourceType.TOPIC, "ret", incremental_configs=[
        ConfigEntry("retention.ms", "1000", incremental_operation=AlterConfigOpType.SET)])
    assert admin.incremental_alter_configs([lower])[lower].result(TIMEOUT) is None
    tp = TopicPartition("ret", 0)

    def earliest() -> int:
        return admin.list_offsets({tp: OffsetSpec.earliest()})[tp].result(TIMEOUT).offset
    assert earliest() == 0
    broker.advance_clock(300_000)  # past the first check (30 s in) and 1 s of retention
    assert earliest() == 3
    consumer = connect(Consumer, **{"bootstrap.servers": broker.bootstrap_servers, "group.id": "ret",
                                    "auto.offset.reset": "error", "enable.auto.commit": False})
    consumer.assign([TopicPartition("ret", 0, 0)])
    deadline = time.monotonic() + TIMEOUT
    msg = None
    while (msg is None or msg.error() is None) and time.monotonic() < deadline:
        msg = consumer.poll(0.1)
    assert msg is not None and msg.error() is not None and msg.error().code() == KafkaError._AUTO_OFFSET_RESET


COMPACTED_WRITES = [([(b"a", b"1"), (b"b", b"1"), (b"a", b"2"), (b"c", b"1")], 0),  # offsets 0-3
                    ([(b"b", None), (b"a", b"3")], 1000),  # 4-5: a new segment (segment.ms 100 between timestamps)
                    ([(b"d", b"1")], 2000)]  # 6: another, so [4, 5] is no longer the active segment
COMPACTED_VIEW = [(3, b"c", b"1"), (4, b"b", None), (5, b"a", b"3"), (6, b"d", b"1")]
"""The latest record per key below the active segment, at the offsets they were written; a tombstone stays
for delete.retention.ms (a day by default) after the cleaning that first sees it."""


def write_compacted(broker: ClusterHandle, admin: Any, node: str, backoff: str | None) -> None:
    """A compacted topic whose segments roll by record timestamps; the broker's log cleaner backoff set (or
    removed again, None): Kafka restarts its cleaner threads on that change, so they look for work at once."""
    op = AlterConfigOpType.SET if backoff is not None else AlterConfigOpType.DELETE
    cleaner = ConfigResource(ResourceType.BROKER, node, incremental_configs=[
        ConfigEntry("log.cleaner.backoff.ms", backoff, incremental_operation=op)])
    assert admin.incremental_alter_configs([cleaner])[cleaner].result(TIMEOUT) is None


def test_compacted_topic_read_from_the_beginning(broker: ClusterHandle, connect: Callable[..., Any]) -> None:
    """Kafka's log cleaner on a topic with small segments: a consumer from the beginning gets the latest value
    per key and the tombstone, skipping the offsets compaction removed; the earliest offset stays 0. The
    same on Apache Kafka, whose cleaner is woken by a lowered log.cleaner.backoff.ms."""
    admin = connect(AdminClient)
    admin.create_topics([NewTopic("compacted", 1, config={
        "cleanup.policy": "compact", "segment.ms": "100", "min.cleanable.dirty.ratio": "0.01"})])["compacted"] \
        .result(TIMEOUT)
    broker.wait_for_topic("compacted")
    node = str(admin.describe_cluster().result(TIMEOUT).controller.id)
    write_compacted(broker, admin, node, "100")
    producer = connect(Producer)
    t0 = int(time.time() * 1000)
    for rows, at in COMPACTED_WRITES:
        for key, value in rows:
            producer.produce("compacted", key=key, value=value, timestamp=t0 + at)
        assert producer.flush(TIMEOUT) == 0
    try:
        broker.wait_until(lambda: [(r.offset, r.key, r.value) for r in broker.records("compacted")] == COMPACTED_VIEW,
                          timeout=30, message="the log cleaner's work")
    finally:
        write_compacted(broker, admin, node, None)
    consumer = connect(Consumer)
    consumer.assign([TopicPartition("compacted", 0, OFFSET_BEGINNING)])
    got: list[tuple[int, bytes | None, bytes | None]] = []
    deadline = time.monotonic() + TIMEOUT
    while len(got) < len(COMPACTED_VIEW) and time.monotonic() < deadline:
        msg = consumer.poll(0.2)
        if msg is not None and msg.error() is None:
            got.append((msg.offset(), msg.key(), msg.value()))
    assert got == COMPACTED_VIEW
    assert consumer.get_watermark_offsets(TopicPartition("compacted", 0), TIMEOUT) == (0, 7)
    # the cleaner's batches: base and last offsets kept, the tombstone's batch stamped with its delete horizon
    headers = [read_header(b) for b in stored_batches(broker, "compacted")]
    assert [(h.base_offset, h.last_offset, h.records_count, bool(h.attributes & DELETE_HORIZON_FLAG))
            for h in headers] == [(0, 3, 1, False), (4, 5, 2, True), (6, 6, 1, False)]
    assert t0 + 86_400_000 <= headers[1].base_timestamp <= int(time.time() * 1000) + 86_400_000


@pytest.mark.fakekafka_only  # the proxy must be what Metadata advertises: fakekafka's model is changed
def test_idempotent_retry_is_deduplicated(broker: ClusterHandle, connect: Callable[..., Any]) -> None:
    """Two Produce responses are lost after the broker applied them; librdkafka retries those batches (and
    any in flight behind them) with their sequences, and each record is stored exactly once."""
    broker.create_topic("idem")
    with dropping_produce_responses(broker, drops=2) as proxy:
        producer = connect(Producer, **{"bootstrap.servers": broker.bootstrap_servers, "enable.idempotence": True,
                                        "batch.num.messages": 5, "linger.ms": 1})
        reports = produce_all(producer, "idem", MANY)
        assert len(proxy.dropped) == 2, "the proxy lost fewer Produce responses than planned"
    assert sorted(reports.ok()) == [(0, i) for i in range(len(MANY))]
    assert stored(broker, "idem") == expected_rows(MANY)
    consumer = connect(Consumer)
    assign_from_start(consumer, "idem")
    assert rows(consume(consumer, len(MANY))) == expected_rows(MANY)
