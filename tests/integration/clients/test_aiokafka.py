"""aiokafka against the plugin's cluster, end to end over the wire.

The cluster is the `kafka` fixture (tests/integration/clients/conftest.py): fakekafka on the plugin's loop thread, or
Apache Kafka under `pytest --kafka-real`; a broker inside the test's own event loop is covered by
test_groups_aiokafka.py. Consumers use assign() with group_id=None. Every scenario also reads what the broker
stored through the handle (tests/integration/clients/scenarios.py).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import pytest
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition
from aiokafka import errors as aerrors
from aiokafka.admin import AIOKafkaAdminClient, NewPartitions, NewTopic
from aiokafka.admin.config_resource import ConfigResource, ConfigResourceType

from fakekafka.model.config import ConfigSource
from fakekafka.testing.handle import ClusterHandle
from fakekafka.wire import ErrorCode
from fakekafka.wire.records import Compression
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
    stored_codecs,
)

pytestmark = [pytest.mark.clients, pytest.mark.kafka_real]

TIMEOUT = 10.0
Connect = Callable[..., Awaitable[Any]]


@pytest.fixture
def cluster(kafka: ClusterHandle) -> ClusterHandle:
    """The test's cluster (the `kafka` fixture), under the name this module uses."""
    return kafka


@pytest.fixture
async def connect(cluster: ClusterHandle) -> AsyncIterator[Connect]:
    """Starts producers, consumers and admin clients for `cluster` and closes them after the test."""
    made: list[Any] = []

    async def make(kind: type, **config: Any) -> Any:
        config.setdefault("bootstrap_servers", cluster.bootstrap_servers)
        if kind is AIOKafkaConsumer:
            config = {"group_id": None, "enable_auto_commit": False, "auto_offset_reset": "earliest", **config}
        client = kind(**config)
        await client.start()
        made.append(client)
        return client

    yield make
    for client in reversed(made):
        await (client.close() if isinstance(client, AIOKafkaAdminClient) else client.stop())


async def consume(consumer: AIOKafkaConsumer, count: int) -> list[Any]:
    """Fetches until `count` records arrived (failing after TIMEOUT), then checks nothing more follows."""
    out: list[Any] = []

    async def fill() -> None:
        while len(out) < count:
            for records in (await consumer.getmany(timeout_ms=200)).values():
                out.extend(records)
    try:
        await asyncio.wait_for(fill(), TIMEOUT)
    except TimeoutError:
        pytest.fail(f"consumed {len(out)} of {count} records in {TIMEOUT}s")
    assert not await consumer.getmany(timeout_ms=0), "more records than produced"
    return out


def rows(records: list[Any]) -> list[Row]:
    return [(r.offset, r.key, r.value, list(r.headers)) for r in records]


async def send_samples(producer: AIOKafkaProducer, topic: str, samples: list[Sample] = SAMPLES) -> list[Any]:
    """Sends all samples before awaiting any, so a batching producer may put them in one batch."""
    futures = [await producer.send(topic, key=s.key, value=s.value, headers=list(s.headers)) for s in samples]
    return await asyncio.wait_for(asyncio.gather(*futures), TIMEOUT)


async def test_produce_consume_keys_headers_nulls(cluster: ClusterHandle, connect: Connect) -> None:
    cluster.create_topic("plain")
    samples = SAMPLES + [Sample(b"nh", b"v", (("null", None),))]  # aiokafka writes a null header value
    metas = await send_samples(await connect(AIOKafkaProducer), "plain", samples)
    assert [(m.partition, m.offset) for m in metas] == [(0, i) for i in range(len(samples))]
    assert stored(cluster, "plain") == expected_rows(samples)

    consumer = await connect(AIOKafkaConsumer)
    consumer.assign([TopicPartition("plain", 0)])
    assert rows(await consume(consumer, len(samples))) == expected_rows(samples)


@pytest.mark.parametrize("codec", CODECS)
async def test_compression(cluster: ClusterHandle, connect: Connect, codec: str) -> None:
    cluster.create_topic("z")
    # one explicit batch (aiokafka's batch API), so no timing decides how records are grouped
    producer = await connect(AIOKafkaProducer, compression_type=None if codec == "none" else codec)
    batch = producer.create_batch()
    for s in COMPRESSIBLE:
        assert batch.append(key=s.key, value=s.value, timestamp=None, headers=list(s.headers)) is not None
    await asyncio.wait_for(await producer.send_batch(batch, "z", partition=0), TIMEOUT)
    assert stored_codecs(cluster, "z") == [Compression[codec.upper()]]
    assert stored(cluster, "z") == expected_rows(COMPRESSIBLE)
    consumer = await connect(AIOKafkaConsumer)
    consumer.assign([TopicPartition("z", 0)])
    assert rows(await consume(consumer, len(COMPRESSIBLE))) == expected_rows(COMPRESSIBLE)


async def test_one_mib_record(cluster: ClusterHandle, connect: Connect) -> None:
    big = random_bytes(MiB)
    admin = await connect(AIOKafkaAdminClient)
    await admin.create_topics([NewTopic("big", 1, 1, topic_configs={"max.message.bytes": str(2 * MiB)})])
    cluster.wait_for_topic("big")  # Kafka's brokers learn of it after the controller answers
    assert cluster.topics() == ["big"]
    producer = await connect(AIOKafkaProducer, max_request_size=2 * MiB)
    assert (await producer.send_and_wait("big", key=b"k", value=big)).offset == 0
    assert stored(cluster, "big") == [(0, b"k", big, [])]
    consumer = await connect(AIOKafkaConsumer, max_partition_fetch_bytes=MiB // 2)  # one batch comes anyway
    consumer.assign([TopicPartition("big", 0)])
    assert rows(await consume(consumer, 1)) == [(0, b"k", big, [])]

    # the broker default max.message.bytes (1048588) cannot hold 1 MiB plus the batch overhead
    cluster.create_topic("small")
    with pytest.raises(aerrors.MessageSizeTooLargeError):
        await producer.send_and_wait("small", value=big)
    assert cluster.end_offsets("small") == {0: 0}


async def test_hundred_partitions(cluster: ClusterHandle, connect: Connect) -> None:
    cluster.create_topic("wide", 100)
    producer = await connect(AIOKafkaProducer)
    futures = [await producer.send("wide", value=f"p{i}".encode(), partition=i) for i in range(100)]
    metas = await asyncio.wait_for(asyncio.gather(*futures), TIMEOUT)
    assert [(m.partition, m.offset) for m in metas] == [(i, 0) for i in range(100)]
    assert cluster.end_offsets("wide") == {i: 1 for i in range(100)}

    consumer = await connect(AIOKafkaConsumer)
    consumer.assign([TopicPartition("wide", i) for i in range(100)])
    got = await consume(consumer, 100)
    assert sorted((r.partition, r.offset, r.value) for r in got) == [(i, 0, f"p{i}".encode()) for i in range(100)]


async def test_list_offsets(cluster: ClusterHandle, connect: Connect) -> None:
    cluster.create_topic("times", configs=KEEP_FOREVER)
    producer = await connect(AIOKafkaProducer)
    for ts in TIMESTAMPS:
        await producer.send_and_wait("times", value=str(ts).encode(), timestamp_ms=ts)
    tp = TopicPartition("times", 0)
    consumer = await connect(AIOKafkaConsumer)
    assert await consumer.beginning_offsets([tp]) == {tp: 0}
    assert await consumer.end_offsets([tp]) == {tp: len(TIMESTAMPS)}
    found = (await consumer.offsets_for_times({tp: TIMESTAMPS[2]}))[tp]
    assert (found.offset, found.timestamp) == (2, TIMESTAMPS[2])
    found = (await consumer.offsets_for_times({tp: TIMESTAMPS[2] - 1}))[tp]
    assert (found.offset, found.timestamp) == (2, TIMESTAMPS[2])
    assert (await consumer.offsets_for_times({tp: TIMESTAMPS[-1] + 1}))[tp] is None
    assert (await consumer.offsets_for_times({tp: 0}))[tp].offset == 0


async def test_auto_create_topic(cluster: ClusterHandle, connect: Connect) -> None:
    producer = await connect(AIOKafkaProducer)
    meta = await producer.send_and_wait("fresh", key=b"k", value=b"v")
    assert (meta.topic, meta.partition, meta.offset) == ("fresh", 0, 0)
    assert "fresh" in cluster.topics()
    assert stored(cluster, "fresh") == [(0, b"k", b"v", [])]


@pytest.mark.fakekafka(auto_create_topics=False)
async def test_auto_create_disabled(cluster: ClusterHandle, connect: Connect) -> None:
    # aiokafka waits for the topic's metadata for request_timeout_ms, then gives the broker's error
    producer = await connect(AIOKafkaProducer, request_timeout_ms=300)
    with pytest.raises(aerrors.UnknownTopicOrPartitionError):
        await producer.send_and_wait("missing", value=b"v")
    admin = await connect(AIOKafkaAdminClient)
    [described] = await admin.describe_topics(["missing"])
    assert (described["topic"], described["error_code"]) == ("missing", ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
    assert cluster.topics() == []


def _create_errors(response: Any) -> list[tuple[str, int]]:
    return [(name, code) for name, code, *_ in response.topic_errors]


async def test_admin_topics(cluster: ClusterHandle, connect: Connect) -> None:
    admin = await connect(AIOKafkaAdminClient)
    response = await admin.create_topics([NewTopic("made", 3, 1)])
    assert _create_errors(response) == [("made", 0)]
    cluster.wait_for_topic("made", 3)  # Kafka's brokers learn of it after the controller answers
    assert "made" in await admin.list_topics()

    async def create_error(topic: NewTopic) -> int:
        [(name, code)] = _create_errors(await admin.create_topics([topic]))
        assert name == topic.name
        return code

    assert await create_error(NewTopic("made", 1, 1)) == ErrorCode.TOPIC_ALREADY_EXISTS
    for partitions in (0, -5):
        assert await create_error(NewTopic("p", partitions, 1)) == ErrorCode.INVALID_PARTITIONS
    assert await create_error(NewTopic("r", 1, 2)) == ErrorCode.INVALID_REPLICATION_FACTOR
    for name in BAD_TOPIC_NAMES:
        assert await create_error(NewTopic(name, 1, 1)) == ErrorCode.INVALID_TOPIC_EXCEPTION
    assert cluster.topics() == ["made"]

    await admin.create_partitions({"made": NewPartitions(5)})
    cluster.wait_for_topic("made", 5)
    with pytest.raises(aerrors.InvalidPartitionsError):
        await admin.create_partitions({"made": NewPartitions(2)})

    response = await admin.delete_topics(["made"])
    assert [tuple(e)[:2] for e in response.topic_error_codes] == [("made", 0)]
    cluster.wait_until(lambda: cluster.topics() == [], message="the topic deleted")
    response = await admin.delete_topics(["made"])
    assert [tuple(e)[:2] for e in response.topic_error_codes] == [("made", ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)]


async def test_describe_configs(cluster: ClusterHandle, connect: Connect) -> None:
    admin = await connect(AIOKafkaAdminClient)
    await admin.create_topics([NewTopic("cfg", 1, 1, topic_configs={"cleanup.policy": "compact"})])
    cluster.wait_for_topic("cfg")  # else Kafka's broker may not know it yet: UNKNOWN_TOPIC_OR_PARTITION
    [response] = await admin.describe_configs([ConfigResource(ConfigResourceType.TOPIC, "cfg")])
    [(code, _, _, name, entries)] = [tuple(r) for r in response.resources]
    assert (code, name) == (0, "cfg")
    configs = {e[0]: (e[1], e[3]) for e in entries}  # name: (value, config source)
    assert configs["retention.ms"] == ("604800000", ConfigSource.DEFAULT_CONFIG)
    assert configs["max.message.bytes"] == ("1048588", ConfigSource.DEFAULT_CONFIG)
    assert configs["cleanup.policy"] == ("compact", ConfigSource.TOPIC_CONFIG)

    [response] = await admin.describe_configs([ConfigResource(ConfigResourceType.TOPIC, "nope")])
    [(code, _, _, name, _)] = [tuple(r) for r in response.resources]
    assert (code, name) == (ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, "nope")


@pytest.mark.fakekafka_only  # the proxy must be what Metadata advertises: fakekafka's model is changed
async def test_idempotent_retry_is_deduplicated(cluster: ClusterHandle, connect: Connect) -> None:
    """Two Produce responses are lost after the broker applied them; aiokafka retries those batches with
    their sequences, and each record is stored exactly once."""
    cluster.create_topic("idem")
    with dropping_produce_responses(cluster, drops=2) as proxy:
        producer = await connect(AIOKafkaProducer, bootstrap_servers=cluster.bootstrap_servers,
                                 enable_idempotence=True, max_batch_size=200, linger_ms=1)
        metas = await send_samples(producer, "idem", MANY)
        assert len(proxy.dropped) == 2, "the proxy lost fewer Produce responses than planned"
    assert [m.offset for m in metas] == list(range(len(MANY)))
    assert stored(cluster, "idem") == expected_rows(MANY)
    consumer = await connect(AIOKafkaConsumer)
    consumer.assign([TopicPartition("idem", 0)])
    assert rows(await consume(consumer, len(MANY))) == expected_rows(MANY)
