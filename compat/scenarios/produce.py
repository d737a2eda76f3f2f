"""Producing: where keyed records go, idempotence, acks=0, headers at scale, many partitions, per-topic
limits and what a compacted topic refuses.

Kafka: the Java producer's default partitioner puts a keyed record on murmur2(key) % partitions
(org.apache.kafka.clients.producer.internals.BuiltInPartitioner; kafka-python and aiokafka copy it);
librdkafka's default is consistent_random, CRC32(key) % partitions (librdkafka CONFIGURATION.md,
`partitioner`); sarama's is its HashPartitioner, FNV-1a(key) as a signed 32-bit value modulo partitions,
made positive (sarama's partitioner.go docs). A topic refuses a batch over its max.message.bytes with
MESSAGE_TOO_LARGE; a compacted topic refuses a record without a key (INVALID_RECORD, "Compacted topic
cannot accept message without key", LogValidator). With acks=0 the producer learns no offset (Java reports -1).
"""

from __future__ import annotations

import zlib

from compat.clients.base import Client, Rec
from compat.env import Env, acks, outcome_of, rows, wait_for
from compat.scenarios.registry import Outcome, scenario

KEYS = [b"key-%d" % i for i in range(20)]
PARTITIONS = 6


def murmur2(data: bytes) -> int:
    """Kafka's murmur2 (seed 0x9747b28c) as a 32-bit unsigned value, written from the algorithm's definition."""
    m, mask = 0x5BD1E995, 0xFFFFFFFF
    h = (0x9747B28C ^ len(data)) & mask
    whole = len(data) - len(data) % 4
    for i in range(0, whole, 4):
        k = int.from_bytes(data[i:i + 4], "little")
        k = (k * m) & mask
        k ^= k >> 24
        k = (k * m) & mask
        h = ((h * m) & mask) ^ k
    tail = data[whole:]
    if len(tail) == 3:
        h ^= tail[2] << 16
    if len(tail) >= 2:
        h ^= tail[1] << 8
    if tail:
        h ^= tail[0]
        h = (h * m) & mask
    h ^= h >> 13
    h = (h * m) & mask
    h ^= h >> 15
    return h


def fnv1a32(data: bytes) -> int:
    """32-bit FNV-1a (offset basis 0x811c9dc5, prime 0x01000193), written from the algorithm's definition."""
    h = 0x811C9DC5
    for b in data:
        h = ((h ^ b) * 0x01000193) & 0xFFFFFFFF
    return h


def default_partition(client: str, key: bytes, n: int) -> int:
    if client in ("confluent-kafka", "kcat", "rdkafka") or client.startswith("confluent-kafka"):
        return zlib.crc32(key) % n
    if client == "sarama":  # HashPartitioner: FNV-1a as a signed 32-bit value, remainder made positive
        h = fnv1a32(key)
        return abs(h - (1 << 32) if h >= 1 << 31 else h) % n
    return (murmur2(key) & 0x7FFFFFFF) % n


@scenario("key_partitioning", lambda client: {"partitions": {k.decode(): default_partition(client.name, k, PARTITIONS)
                                                             for k in KEYS}})
def key_partitioning(client: Client, env: Env) -> Outcome:
    """20 keyed records without a partition on a 6-partition topic: each lands where the client's default
    partitioner puts its key (murmur2 for Java-like clients, CRC32 for librdkafka)."""
    topic = env.name("t")
    env.create_topic(topic, PARTITIONS)
    client.produce(topic, [Rec(k, b"v", [], None) for k in KEYS])
    where: dict[str, int] = {}
    for p in range(PARTITIONS):
        for r in env.cluster().records(topic, p):
            where[r.key.decode()] = p
    return {"partitions": dict(sorted(where.items()))}


@scenario("idempotent_producer", lambda client: {"acks": acks(client, [(0, i) for i in range(5)]),
                                                 "values": ["i0", "i1", "i2", "i3", "i4"], "producer_id_set": True})
def idempotent_producer(client: Client, env: Env) -> Outcome:
    """Five records from an idempotent producer (InitProducerId, sequence numbers) stored once each, in
    order, in batches that carry a producer id."""
    topic = env.name("t")
    env.create_topic(topic)
    sent = client.produce(topic, [Rec(None, b"i%d" % i, [], 0) for i in range(5)], idempotent=True)
    from fakekafka.wire.records import decode_batch
    stored = env.cluster().records(topic, 0)
    headers = [decode_batch(b).header for b in env.cluster().batches(topic, 0)]
    return {"acks": acks(client, sent), "values": [r.value.decode() for r in stored],
            "producer_id_set": bool(headers) and all(h.producer_id >= 0 for h in headers)}


def _acks0_expected(client: Client) -> Outcome:
    # Java reports offset -1 (RecordMetadata, acks=0), aiokafka and confluent-kafka none; kafka-python makes
    # offsets up from the batch it sent; kcat prints nothing.
    return {"offsets_reported": "not reported" if client.name == "kcat" else client.name == "kafka-python",
            "stored": 3}


@scenario("produce_acks_0", _acks0_expected)
def produce_acks_0(client: Client, env: Env) -> Outcome:
    """Three records with acks=0: the broker stores them and answers nothing; the producer reports no offset."""
    topic = env.name("t")
    env.create_topic(topic)
    sent = client.produce(topic, [Rec(None, b"z%d" % i, [], 0) for i in range(3)], acks=0)
    _, end = wait_for(lambda: env.cluster().end_offsets(topic)[0] >= 3, env.timing.op_s, 0.1)
    reported = any(o is not None and o >= 0 for _, o in sent)
    return {"offsets_reported": reported if client.reports_offsets else "not reported",
            "stored": env.cluster().end_offsets(topic)[0]}


HEADERS = [(f"h{i:03d}", b"value-%d" % i) for i in range(100)]


@scenario("headers_at_scale", {"records": 50, "headers_each": 100, "all_as_sent": True})
def headers_at_scale(client: Client, env: Env) -> Outcome:
    """50 records with 100 headers each, read back with every header in order."""
    topic = env.name("t")
    env.create_topic(topic)
    client.produce(topic, [Rec(b"k%d" % i, b"v%d" % i, HEADERS, 0) for i in range(50)])
    got = client.fetch(topic, 0, 0, 50)
    return {"records": len(got), "headers_each": len(got[0].headers) if got else 0,
            "all_as_sent": all(list(r.headers) == HEADERS for r in got)}


MANY = 32


@scenario("many_partitions", lambda client: {"count": MANY, "acks": acks(client, [(p, 0) for p in range(MANY)]),
                                             "ends": [1] * MANY, "last": [[MANY - 1, 0, None, "p31", []]]})
def many_partitions(client: Client, env: Env) -> Outcome:
    """A 32-partition topic: metadata shows them all; one record to each, read back from the last."""
    topic = env.name("t")
    env.create_topic(topic, MANY)
    count = client.partition_count(topic)
    sent = client.produce(topic, [Rec(None, b"p%d" % p, [], p) for p in range(MANY)])
    ends = env.cluster().end_offsets(topic)
    return {"count": count, "acks": acks(client, sent), "ends": [ends[p] for p in range(MANY)],
            "last": rows(client.fetch(topic, MANY - 1, 0, 1))}


@scenario("max_message_bytes_topic", lambda client: {"small": acks(client, [(0, 0)]),
                                                     "big": {"error": "MESSAGE_TOO_LARGE"}, "end": 1})
def max_message_bytes_topic(client: Client, env: Env) -> Outcome:
    """A topic with max.message.bytes=1000: a 500-byte record is taken, a 3000-byte one refused."""
    topic = env.name("t")
    env.create_topic(topic, configs={"max.message.bytes": "1000"})
    small = outcome_of(lambda: acks(client, client.produce(topic, [Rec(None, b"s" * 500, [], 0)])))
    big = outcome_of(lambda: client.produce(topic, [Rec(None, b"b" * 3000, [], 0)]))
    return {"small": small, "big": big, "end": env.cluster().end_offsets(topic)[0]}


# aiokafka has no error class for INVALID_RECORD (87) and reports UnknownError (UNKNOWN_SERVER_ERROR)
@scenario("compacted_topic_null_key", lambda client: {
    "keyed": acks(client, [(0, 0)]), "end": 1,
    "null_key": {"error": "UNKNOWN_SERVER_ERROR" if client.name.startswith("aiokafka") else "INVALID_RECORD"}})
def compacted_topic_null_key(client: Client, env: Env) -> Outcome:
    """cleanup.policy=compact: a keyed record is taken, one without a key refused (INVALID_RECORD)."""
    topic = env.name("t")
    env.create_topic(topic, configs={"cleanup.policy": "compact"})
    keyed = outcome_of(lambda: acks(client, client.produce(topic, [Rec(b"k", b"v", [], 0)])))
    null_key = outcome_of(lambda: client.produce(topic, [Rec(None, b"v", [], 0)]))
    return {"keyed": keyed, "null_key": null_key, "end": env.cluster().end_offsets(topic)[0]}


def _unknown_partition_expected(client: Client) -> Outcome:
    # kafka-python and aiokafka refuse a partition metadata does not show before sending
    produce = {"confluent-kafka": "UNKNOWN_TOPIC_OR_PARTITION", "kcat": "UNKNOWN_TOPIC_OR_PARTITION",
               "rdkafka": "UNKNOWN_TOPIC_OR_PARTITION",
               "kafka-python": "CLIENT_REJECTED", "aiokafka": "CLIENT_REJECTED", "aiokafka-0.13.0": "CLIENT_REJECTED",
               }.get(client.name, "TIMEOUT")
    return {"produce": {"error": produce}, "end": 0}


@scenario("produce_unknown_partition", _unknown_partition_expected)
def produce_unknown_partition(client: Client, env: Env) -> Outcome:
    """Producing to partition 5 of a 1-partition topic fails (metadata never shows it); nothing is stored."""
    topic = env.name("t")
    env.create_topic(topic)
    produce = outcome_of(lambda: client.produce(topic, [Rec(None, b"v", [], 5)]))
    return {"produce": produce, "end": env.cluster().end_offsets(topic)[0]}


@scenario("empty_values_compressed", {"records": [[0, i, f"k{i}", "", []] for i in range(20)]})
def empty_values_compressed(client: Client, env: Env) -> Outcome:
    """20 records with empty values in one gzip batch read back as empty (not null) values."""
    topic = env.name("t")
    env.create_topic(topic)
    client.produce(topic, [Rec(b"k%d" % i, b"", [], 0) for i in range(20)], codec="gzip", one_batch=True)
    return {"records": rows(client.fetch(topic, 0, 0, 20))}


@scenario("large_batch_lz4", {"count": 2000, "first": 0, "last": 1999, "values_in_order": True})
def large_batch_lz4(client: Client, env: Env) -> Outcome:
    """2000 small records in one lz4 batch come back complete and in order."""
    topic = env.name("t")
    env.create_topic(topic)
    client.produce(topic, [Rec(None, b"n%05d" % i, [], 0) for i in range(2000)], codec="lz4", one_batch=True)
    got = client.fetch(topic, 0, 0, 2000)
    return {"count": len(got), "first": got[0].offset if got else None, "last": got[-1].offset if got else None,
            "values_in_order": [r.value for r in got] == [b"n%05d" % i for i in range(2000)]}
