"""kafka-python against fakekafka, end to end over the wire.

Consumers use assign() with group_id=None: consumer groups are not implemented yet. Every scenario also
reads what fakekafka stored (tests/integration/clients/scenarios.py), independently of the client.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from typing import Any

import kafka.codec
import pytest
from kafka import KafkaAdminClient, KafkaConsumer, KafkaProducer, TopicPartition
from kafka import errors as kerrors
from kafka.admin import ConfigResource, ConfigResourceType, OffsetSpec

import fakekafka
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
    kafka_python_consumer,
    random_bytes,
    stored,
    stored_codecs,
)

pytestmark = [pytest.mark.clients, pytest.mark.kafka_real]

TIMEOUT = 10.0
UNKNOWN_TOPIC_OR_PARTITION = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION.value


@pytest.fixture
def connect(broker: ClusterHandle) -> Iterator[Callable[..., Any]]:
    """Makes producers, consumers and admin clients for `broker` and closes them after the test."""
    made: list[Any] = []

    def make(kind: type, *, cluster: ClusterHandle | None = None, **config: Any) -> Any:
        config.setdefault("bootstrap_servers", (cluster or broker).bootstrap_servers)
        if kind is KafkaConsumer:
            client = kafka_python_consumer(**{"group_id": None, "enable_auto_commit": False,
                                              "auto_offset_reset": "earliest", **config})
        else:
            client = kind(**config)
        made.append(client)
        return client

    yield make
    for client in reversed(made):
        client.close(**({"timeout": 5} if isinstance(client, KafkaProducer) else {}))


def consume(consumer: KafkaConsumer, count: int, timeout: float = TIMEOUT) -> list[Any]:
    """Polls until `count` records arrived (failing after `timeout`), then checks nothing more follows."""
    out: list[Any] = []
    deadline = time.monotonic() + timeout
    while len(out) < count:
        assert time.monotonic() < deadline, f"consumed {len(out)} of {count} records in {timeout}s"
        for records in consumer.poll(timeout_ms=200).values():
            out.extend(records)
    assert not consumer.poll(timeout_ms=0), "more records than produced"
    return out


def rows(records: list[Any]) -> list[Row]:
    return [(r.offset, r.key, r.value, list(r.headers)) for r in records]


def send_samples(producer: KafkaProducer, topic: str, samples: list[Sample] = SAMPLES, **kw: Any) -> list[Any]:
    futures = [producer.send(topic, key=s.key, value=s.value, headers=list(s.headers), **kw) for s in samples]
    producer.flush(TIMEOUT)
    return [f.get(TIMEOUT) for f in futures]


def test_produce_consume_keys_headers_nulls(broker: ClusterHandle, connect: Callable[..., Any]) -> None:
    broker.create_topic("plain")
    metas = send_samples(connect(KafkaProducer), "plain")
    assert [(m.partition, m.offset) for m in metas] == [(0, i) for i in range(len(SAMPLES))]
    assert stored(broker, "plain") == expected_rows(SAMPLES)

    consumer = connect(KafkaConsumer)
    consumer.assign([TopicPartition("plain", 0)])
    assert rows(consume(consumer, len(SAMPLES))) == expected_rows(SAMPLES)


def test_consume_null_header_value(broker: ClusterHandle, connect: Callable[..., Any]) -> None:
    # kafka-python's producer only takes bytes header values; a null one written by another client reads back
    broker.produce("hdr", b"v", headers=[("n", None), ("e", b"")])
    consumer = connect(KafkaConsumer)
    consumer.assign([TopicPartition("hdr", 0)])
    assert rows(consume(consumer, 1)) == [(0, None, b"v", [("n", None), ("e", b"")])]


@pytest.mark.parametrize("codec", CODECS)
def test_compression(broker: ClusterHandle, connect: Callable[..., Any], codec: str) -> None:
    if codec != "none" and not getattr(kafka.codec, f"has_{codec}")():
        pytest.skip(f"kafka-python needs a library for {codec}: pip install 'kafka-python[{codec}]'")
    broker.create_topic("z")
    # a long linger and one flush put every record in one batch, compressible enough that kafka-python
    # (which sends a batch uncompressed when the codec does not shrink it) really compresses it
    producer = connect(KafkaProducer, compression_type=None if codec == "none" else codec, linger_ms=10_000)
    send_samples(producer, "z", COMPRESSIBLE)
    assert stored_codecs(broker, "z") == [Compression[codec.upper()]]
    assert stored(broker, "z") == expected_rows(COMPRESSIBLE)
    consumer = connect(KafkaConsumer)
    consumer.assign([TopicPartition("z", 0)])
    assert rows(consume(consumer, len(COMPRESSIBLE))) == expected_rows(COMPRESSIBLE)


def test_one_mib_record(broker: ClusterHandle, connect: Callable[..., Any]) -> None:
    big = random_bytes(MiB)
    admin = connect(KafkaAdminClient)
    admin.create_topics({"big": {"configs": {"max.message.bytes": str(2 * MiB)}}})
    producer = connect(KafkaProducer, max_request_size=2 * MiB, retries=0)
    assert producer.send("big", key=b"k", value=big).get(TIMEOUT).offset == 0
    assert stored(broker, "big") == [(0, b"k", big, [])]
    consumer = connect(KafkaConsumer, max_partition_fetch_bytes=MiB // 2)  # one batch is returned whatever the limit
    consumer.assign([TopicPartition("big", 0)])
    assert rows(consume(consumer, 1)) == [(0, b"k", big, [])]

    # the broker default max.message.bytes (1048588) cannot hold 1 MiB plus the batch overhead
    broker.create_topic("small")
    with pytest.raises(kerrors.MessageSizeTooLargeError):
        producer.send("small", value=big).get(TIMEOUT)
    assert broker.end_offsets("small") == {0: 0}


def test_hundred_partitions(broker: ClusterHandle, connect: Callable[..., Any]) -> None:
    broker.create_topic("wide", 100)
    producer = connect(KafkaProducer)
    futures = [producer.send("wide", value=f"p{i}".encode(), partition=i) for i in range(100)]
    assert [(m.partition, m.offset) for m in (f.get(TIMEOUT) for f in futures)] == [(i, 0) for i in range(100)]
    assert broker.end_offsets("wide") == {i: 1 for i in range(100)}

    consumer = connect(KafkaConsumer)
    consumer.assign([TopicPartition("wide", i) for i in range(100)])
    got = consume(consumer, 100)
    assert sorted((r.partition, r.offset, r.value) for r in got) == [(i, 0, f"p{i}".encode()) for i in range(100)]


def test_list_offsets(broker: ClusterHandle, connect: Callable[..., Any]) -> None:
    broker.create_topic("times", configs=KEEP_FOREVER)
    producer = connect(KafkaProducer)
    for ts in TIMESTAMPS:
        producer.send("times", value=str(ts).encode(), timestamp_ms=ts).get(TIMEOUT)
    tp = TopicPartition("times", 0)
    consumer = connect(KafkaConsumer)
    assert consumer.beginning_offsets([tp]) == {tp: 0}
    assert consumer.end_offsets([tp]) == {tp: len(TIMESTAMPS)}
    found = consumer.offsets_for_times({tp: TIMESTAMPS[2]})[tp]
    assert (found.offset, found.timestamp) == (2, TIMESTAMPS[2])
    found = consumer.offsets_for_times({tp: TIMESTAMPS[2] - 1})[tp]
    assert (found.offset, found.timestamp) == (2, TIMESTAMPS[2])
    assert consumer.offsets_for_times({tp: TIMESTAMPS[-1] + 1})[tp] is None
    assert consumer.offsets_for_times({tp: 0})[tp].offset == 0

    admin = connect(KafkaAdminClient)
    specs = {OffsetSpec.EARLIEST: (0, -1), OffsetSpec.LATEST: (len(TIMESTAMPS), -1),
             OffsetSpec.MAX_TIMESTAMP: (len(TIMESTAMPS) - 1, TIMESTAMPS[-1]), TIMESTAMPS[1]: (1, TIMESTAMPS[1])}
    for spec, want in specs.items():
        got = admin.list_partition_offsets({tp: spec})[tp]
        assert (got.offset, got.timestamp) == want, spec


def test_auto_create_topic(broker: ClusterHandle, connect: Callable[..., Any]) -> None:
    meta = connect(KafkaProducer).send("fresh", key=b"k", value=b"v").get(TIMEOUT)
    assert (meta.topic, meta.partition, meta.offset) == ("fresh", 0, 0)
    assert "fresh" in broker.topics()
    assert stored(broker, "fresh") == [(0, b"k", b"v", [])]


@pytest.mark.fakekafka(auto_create_topics=False)
def test_auto_create_disabled(broker: ClusterHandle, connect: Callable[..., Any]) -> None:
    # as against Kafka: metadata keeps answering UNKNOWN_TOPIC_OR_PARTITION until max_block_ms passes
    producer = connect(KafkaProducer, max_block_ms=300)
    with pytest.raises(kerrors.KafkaTimeoutError, match="metadata"):
        producer.send("missing", value=b"v").get(TIMEOUT)
    assert not connect(KafkaConsumer).partitions_for_topic("missing")
    described = connect(KafkaAdminClient).describe_topics(["missing"])
    assert [(t["name"], t["error_code"]) for t in described] == [("missing", UNKNOWN_TOPIC_OR_PARTITION)]
    assert broker.topics() == []


@pytest.mark.fakekafka_only  # about the tests' own consumer helper, not the broker
def test_consumer_helper_does_not_recreate_a_deleted_topic(broker: ClusterHandle,
                                                           connect: Callable[..., Any]) -> None:
    """The helper behind `connect(KafkaConsumer)` keeps kafka-python 3.0.12 from asking to create the topics it
    reads (its ClusterMetadata ignores the consumer's allow_auto_create_topics): a consumer that goes on
    refreshing its metadata after its topic's deletion must not bring the topic back."""
    broker.create_topic("gone", 1)
    consumer = connect(KafkaConsumer, metadata_max_age_ms=100)
    consumer.assign([TopicPartition("gone", 0)])
    consumer.poll(timeout_ms=500)
    broker.delete_topic("gone")
    deleted = time.time()

    def refreshed() -> bool:
        consumer.poll(timeout_ms=50)
        return sum(r.api == "Metadata" and r.wall_time > deleted for r in broker.requests()) >= 3

    broker.wait_until(refreshed, message="three metadata requests after the delete")
    assert broker.topics() == []


def test_admin_topics(broker: ClusterHandle, connect: Callable[..., Any]) -> None:
    admin = connect(KafkaAdminClient)
    result = admin.create_topics({"made": {"num_partitions": 3, "replication_factor": 1}})
    assert [(t["name"], t["error_code"], t["num_partitions"]) for t in result["topics"]] == [("made", 0, 3)]
    broker.wait_for_topic("made", 3)  # Kafka's brokers learn of it after the controller answers
    assert "made" in admin.list_topics()

    with pytest.raises(kerrors.TopicAlreadyExistsError):
        admin.create_topics({"made": {"num_partitions": 1}})
    for partitions in (0, -5):
        with pytest.raises(kerrors.InvalidPartitionsError):
            admin.create_topics({"p": {"num_partitions": partitions}})
    with pytest.raises(kerrors.InvalidReplicationFactorError):
        admin.create_topics({"r": {"num_partitions": 1, "replication_factor": 2}})
    for name in BAD_TOPIC_NAMES:
        with pytest.raises(kerrors.InvalidTopicError):
            admin.create_topics({name: {"num_partitions": 1}})
    assert broker.topics() == ["made"]

    admin.create_partitions({"made": 5})
    broker.wait_for_topic("made", 5)
    with pytest.raises(kerrors.InvalidPartitionsError):
        admin.create_partitions({"made": 2})

    admin.delete_topics(["made"])
    broker.wait_until(lambda: broker.topics() == [], message="the topic deleted")
    with pytest.raises(kerrors.UnknownTopicOrPartitionError):
        admin.delete_topics(["made"])


def test_describe_configs(broker: ClusterHandle, connect: Callable[..., Any]) -> None:
    admin = connect(KafkaAdminClient)
    admin.create_topics({"cfg": {"num_partitions": 1, "configs": {"cleanup.policy": "compact"}}})
    broker.wait_for_topic("cfg")  # else Kafka's broker may not know it yet: UNKNOWN_TOPIC_OR_PARTITION
    result = admin.describe_configs([ConfigResource(ConfigResourceType.TOPIC, "cfg")], config_filter="all")
    configs = result["topic"]["cfg"]
    assert (configs["retention.ms"]["value"], configs["retention.ms"]["config_source"]) == ("604800000",
                                                                                          "DEFAULT_CONFIG")
    assert configs["max.message.bytes"]["value"] == "1048588"
    assert (configs["cleanup.policy"]["value"], configs["cleanup.policy"]["config_source"]) == (
        "compact", "DYNAMIC_TOPIC_CONFIG")
    modified = admin.describe_configs([ConfigResource(ConfigResourceType.TOPIC, "cfg")])["topic"]["cfg"]
    assert set(modified) == {"cleanup.policy"}
    # kafka-python drops a resource's error code; an unknown topic just has no configs
    assert admin.describe_configs([ConfigResource(ConfigResourceType.TOPIC, "nope")]) == {"topic": {"nope": {}}}


@pytest.mark.parametrize("incremental", [True, False])
def test_alter_configs(broker: ClusterHandle, connect: Callable[..., Any], incremental: bool) -> None:
    """kafka-python's alter_configs, through IncrementalAlterConfigs and through AlterConfigs (which it fills
    with the topic's other dynamic configs first): the new value and source, an unknown topic's error."""
    admin = connect(KafkaAdminClient)
    admin.create_topics({"alt": {"num_partitions": 1, "configs": {"cleanup.policy": "compact"}}})
    broker.wait_for_topic("alt")
    resource = ConfigResource(ConfigResourceType.TOPIC, "alt", configs={"retention.ms": "3600000"})
    admin.alter_configs([resource], incremental=incremental)

    def configs() -> dict[str, Any]:
        return admin.describe_configs([ConfigResource(ConfigResourceType.TOPIC, "alt")])["topic"]["alt"]
    broker.wait_until(lambda: "retention.ms" in configs(), message="the altered config")
    got = configs()
    assert (got["retention.ms"]["value"], got["retention.ms"]["config_source"]) == ("3600000", "DYNAMIC_TOPIC_CONFIG")
    assert got["cleanup.policy"]["value"] == "compact"  # kept: the other dynamic config was not removed
    missing = ConfigResource(ConfigResourceType.TOPIC, "nope", configs={"retention.ms": "1"})
    result = admin.alter_configs([missing], incremental=incremental, raise_on_unknown=False)
    assert result["topic"]["nope"] == "[Error 3] UnknownTopicOrPartitionError: The topic 'nope' does not exist."


@pytest.mark.fakekafka_only  # the proxy must be what Metadata advertises: fakekafka's model is changed
def test_idempotent_retry_is_deduplicated(broker: ClusterHandle, connect: Callable[..., Any]) -> None:
    """Two Produce responses are lost after the broker applied them; kafka-python retries those batches (and
    any in flight behind them) with their sequences, and each record is stored exactly once."""
    broker.create_topic("idem")
    with dropping_produce_responses(broker, drops=2) as proxy:
        producer = connect(KafkaProducer, bootstrap_servers=broker.bootstrap_servers, enable_idempotence=True,
                           batch_size=200, linger_ms=1)
        metas = send_samples(producer, "idem", MANY)
        assert len(proxy.dropped) == 2, "the proxy lost fewer Produce responses than planned"
    assert [m.offset for m in metas] == list(range(len(MANY)))
    assert stored(broker, "idem") == expected_rows(MANY)
    consumer = connect(KafkaConsumer)
    consumer.assign([TopicPartition("idem", 0)])
    assert rows(consume(consumer, len(MANY))) == expected_rows(MANY)


@pytest.mark.fakekafka_only  # steers the frozen clock
@pytest.mark.fakekafka(clock="frozen")
def test_retention_of_records_stamped_by_the_client(broker: ClusterHandle, connect: Callable[..., Any]) -> None:
    """The frozen clock starts at the wall-clock time of the cluster's creation: records the client stamps with
    today's time are past retention.ms once the clock is advanced by two days (with a clock started in the
    past, they looked like records from the future and stayed)."""
    assert isinstance(broker, fakekafka.Cluster)
    broker.create_topic("ret", 1, configs={"retention.ms": "60000"})
    producer = connect(KafkaProducer)
    for i in range(3):
        producer.send("ret", f"v{i}".encode()).get(TIMEOUT)  # CreateTime: the client's wall clock
    assert broker.end_offsets("ret") == {0: 3}
    broker.advance_clock(2 * 24 * 3600 * 1000)
    assert broker.records("ret") == []
    consumer = connect(KafkaConsumer)
    tp = TopicPartition("ret", 0)
    assert consumer.beginning_offsets([tp]) == {tp: 3}


@pytest.mark.fakekafka_only  # steers the frozen clock: Kafka's cleaner and delete horizons run on wall time
@pytest.mark.fakekafka(clock="frozen")
def test_compacted_topic_on_the_cleaners_clock(broker: ClusterHandle, connect: Callable[..., Any]) -> None:
    """The log cleaner wakes every log.cleaner.backoff.ms of the cluster's clock: kafka-python reading from the
    beginning then gets the latest value per key across the offset gaps; a tombstone is gone after
    delete.retention.ms, once a later cleaning sees new dirty data (as on Kafka)."""
    assert isinstance(broker, fakekafka.Cluster)
    broker.create_topic("latest", configs={"cleanup.policy": "compact", "segment.ms": "1000",
                                           "delete.retention.ms": "60000", "min.cleanable.dirty.ratio": "0.1"})
    producer = connect(KafkaProducer)

    def send(key: bytes, value: bytes | None) -> None:
        producer.send("latest", key=key, value=value, timestamp_ms=broker.state.clock.now_ms()).get(TIMEOUT)

    def read() -> list[tuple[int, bytes, bytes | None]]:
        consumer = connect(KafkaConsumer)
        consumer.assign([TopicPartition("latest", 0)])
        consumer.seek_to_beginning()
        end = consumer.end_offsets([TopicPartition("latest", 0)])[TopicPartition("latest", 0)]
        out: list[tuple[int, bytes, bytes | None]] = []
        deadline = time.monotonic() + TIMEOUT
        while consumer.position(TopicPartition("latest", 0)) < end and time.monotonic() < deadline:
            for records in consumer.poll(timeout_ms=200).values():
                out += [(r.offset, r.key, r.value) for r in records]
        consumer.close()
        return out

    for key, value in [(b"k1", b"a"), (b"k2", b"a"), (b"k1", b"b"), (b"k2", None)]:
        send(key, value)
    broker.advance_clock(1001)
    send(b"k3", b"a")  # a new segment: offsets 0-3 can be cleaned
    assert len(read()) == 5
    broker.advance_clock(15_000)  # log.cleaner.backoff.ms: the cleaner's next wake-up
    assert read() == [(2, b"k1", b"b"), (3, b"k2", None), (4, b"k3", b"a")]
    broker.advance_clock(60_000)  # past the tombstone's delete horizon, but nothing new is dirty
    assert read() == [(2, b"k1", b"b"), (3, b"k2", None), (4, b"k3", b"a")]
    send(b"k3", b"b")  # 5, rolls: [4] becomes dirty
    broker.advance_clock(1001)
    send(b"k4", b"a")  # 6, rolls again
    broker.advance_clock(15_000)
    assert read() == [(2, b"k1", b"b"), (5, b"k3", b"b"), (6, b"k4", b"a")]


def test_consumer_offsets_records_read_by_a_consumer_of_internal_topics(broker: ClusterHandle,
                                                                        connect: Callable[..., Any]) -> None:
    """A group's rebalance and commit are records of `__consumer_offsets` in Kafka's schemas: a consumer with
    exclude_internal_topics=False, subscribed by pattern, reads them (decoded by the schemas' declarations)."""
    from fakekafka.model.offsets_topic import decode_record

    broker.create_topic("offlog", 1)
    for i in range(3):
        broker.produce("offlog", str(i).encode())
    member = connect(KafkaConsumer, group_id="offlog-g", client_id="offlog-member")
    member.subscribe(["offlog"])
    member.topics()  # metadata after the subscription: one join (compat/clients/kafka_python.py says why)
    # a member's first records come after its group's join: on Kafka that can include creating and loading
    # __consumer_offsets (its first group on the cluster), more than a fetch's bound on a busy machine
    assert len(consume(member, 3, timeout=6 * TIMEOUT)) == 3
    # as an application commits: kafka-python refuses a commit while its member rejoins (it rejoins once it has
    # the topic's metadata; on a loaded machine that can come after the records), until a poll completes the join
    deadline = time.monotonic() + TIMEOUT
    while True:
        try:
            member.commit()
            break
        except kerrors.RebalanceInProgressError:
            assert time.monotonic() < deadline, "the member's rejoin did not end"
            assert not member.poll(timeout_ms=200), "more records than produced"
    reader = connect(KafkaConsumer, group_id="offlog-reader", exclude_internal_topics=False)
    reader.subscribe(pattern="^__consumer_offsets$")
    commits, metadata = [], []
    deadline = time.monotonic() + 3 * TIMEOUT
    while not (commits and metadata):
        assert time.monotonic() < deadline, f"commits {commits}, group metadata {metadata}"
        for records in reader.poll(timeout_ms=200).values():
            for r in records:
                record_type, key, version, value = decode_record(r.key, r.value)
                if record_type == 1 and key.group == "offlog-g":
                    commits.append((key.topic, key.partition, version, value.offset, value.metadata))
                elif record_type == 2 and key.group == "offlog-g" and value is not None and value.members:
                    metadata.append((version, value.generation, value.protocol_type, value.protocol,
                                     [m.client_id for m in value.members]))
    assert commits == [("offlog", 0, 4, 3, "")]
    # one record per completed rebalance (kafka-python may rejoin once it has the topic's metadata)
    assert [m[1] for m in metadata] == list(range(1, len(metadata) + 1))
    assert {(m[0], m[2], m[3], tuple(m[4])) for m in metadata} == {(3, "consumer", "range", ("offlog-member",))}
