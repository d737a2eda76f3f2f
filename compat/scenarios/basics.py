"""The first scenarios: records round trips, ListOffsets by time, group membership, commits, offset resets,
CreateTopics refusals, max.message.bytes and producing to an unknown topic."""

from __future__ import annotations

import random
from typing import Any

from compat.clients.base import Client, ClientError, Rec, Unsupported
from compat.env import T0, Env, acks, outcome_of, rows
from compat.scenarios.registry import Outcome, scenario

__all__ = ["CODECS", "SAMPLES", "TIMESTAMPS", "ClientError", "Unsupported"]

# --- records --------------------------------------------------------------------------------------------

CODECS = ("none", "gzip", "snappy", "lz4", "zstd")
TEXT = b"fakekafka speaks the Kafka protocol. " * 20

SAMPLES = [
    Rec(b"k0", b"v0", [("h1", b"a"), ("h2", b"")]),
    Rec(None, b"no key"),
    Rec(b"k2", None, [("tombstone", b"yes")]),
    Rec(b"", b""),
    Rec(b"\x00\xffbin", bytes(range(256)), [("dup", b"1"), ("dup", b"2"), ("utf8-\u00e9", b"\xc3\xa9")]),
]
"""Keys and values null, empty and binary; headers empty-valued, repeated and non-ASCII (order matters)."""

TIMESTAMPS = [T0 + 1000 * i for i in range(5)]  # recent: within retention (compat.env.T0)


def _codec_records(codec: str) -> list[Rec]:
    # compressible (a client may send a batch raw when the codec does not shrink it), one header for all
    return [Rec(b"k%d" % i, TEXT + b"%d" % i, [("codec", codec.encode())], 0) for i in range(10)]


def _expected_rows(recs: list[Rec], first: int = 0, *, ts: bool = False) -> list[list[Any]]:
    return rows([Rec(r.key, r.value, r.headers, r.partition or 0, first + i, r.timestamp) for i, r in
                 enumerate(recs)], ts=ts)


def _roundtrip(codec: str) -> None:
    recs = _codec_records(codec)

    # Kafka: the records a producer sent come back in order with their keys, values and headers, whatever
    # the codec; offsets are consecutive from 0 (KIP-98 record batch format; producer/consumer docs).
    def expected(client: Client) -> Outcome:
        return {"acks": acks(client, [(0, i) for i in range(10)]), "records": _expected_rows(recs), "end": 10}

    def run(client: Client, env: Env) -> Outcome:
        topic = env.name("t")
        env.create_topic(topic)
        sent = client.produce(topic, recs, codec=codec, one_batch=True)
        got = client.fetch(topic, 0, 0, len(recs))
        return {"acks": acks(client, sent), "records": rows(got), "end": client.list_offsets(topic, 0, "latest")}
    run.__doc__ = f"Produce 10 records in one {codec} batch, read them back from offset 0."
    scenario(f"roundtrip_{codec}", expected)(run)


for _codec in CODECS:
    _roundtrip(_codec)


# Kafka: null and empty keys/values are distinct and kept; header order and repeats are kept (KIP-82).
@scenario("keys_headers_nulls", lambda client: {"acks": acks(client, [(0, i) for i in range(len(SAMPLES))]),
                                                 "records": _expected_rows([Rec(r.key, r.value, r.headers, 0)
                                                                            for r in SAMPLES])})
def keys_headers_nulls(client: Client, env: Env) -> Outcome:
    """Null, empty and binary keys and values; empty, repeated and non-ASCII headers, read back as sent."""
    topic = env.name("t")
    env.create_topic(topic)
    sent = client.produce(topic, [Rec(r.key, r.value, r.headers, 0) for r in SAMPLES])
    return {"acks": acks(client, sent), "records": rows(client.fetch(topic, 0, 0, len(SAMPLES)))}


# Kafka: a header's value may be null (KIP-82: "value: bytes (nullable)"), and consumers see null.
@scenario("null_header_value", {"records": [[0, 0, None, "v", [["n", None], ["e", ""]]]]})
def null_header_value(client: Client, env: Env) -> Outcome:
    """A record with a null and an empty header value (written over the wire) is read back as such."""
    topic = env.name("t")
    env.create_topic(topic)
    env.produce(topic, b"v", headers=[("n", None), ("e", b"")])
    return {"records": rows(client.fetch(topic, 0, 0, 1))}


# --- ListOffsets ------------------------------------------------------------------------------------

# Kafka (ListOffsets, KIP-79): by timestamp, the earliest offset whose timestamp is >= the one asked for,
# none (-1) when every record is older; -2/-1 give the log start and the high watermark.
BY_TIME_EXPECTED = {"earliest": 0, "latest": 5, "at_ts2": 2, "before_ts2": 2, "after_last": None, "at_0": 0}


def _by_time(client: Client, topic: str) -> Outcome:
    return {"earliest": client.list_offsets(topic, 0, "earliest"), "latest": client.list_offsets(topic, 0, "latest"),
            "at_ts2": client.list_offsets(topic, 0, TIMESTAMPS[2]),
            "before_ts2": client.list_offsets(topic, 0, TIMESTAMPS[2] - 1),
            "after_last": client.list_offsets(topic, 0, TIMESTAMPS[-1] + 1), "at_0": client.list_offsets(topic, 0, 0)}


@scenario("list_offsets_by_time", {**BY_TIME_EXPECTED, "timestamps": TIMESTAMPS})
def list_offsets_by_time(client: Client, env: Env) -> Outcome:
    """ListOffsets earliest/latest/by time over 5 records a second apart, one batch each (written over the wire)."""
    topic = env.name("t")
    env.create_topic(topic)
    for ts in TIMESTAMPS:
        env.produce(topic, b"%d" % ts, timestamp=ts)
    return {**_by_time(client, topic), "timestamps": [r.timestamp for r in client.fetch(topic, 0, 0, 5)]}


@scenario("list_offsets_one_batch", lambda client: {**BY_TIME_EXPECTED,
                                                     "acks": acks(client, [(0, i) for i in range(5)])},
          uses=("timestamps",))
def list_offsets_one_batch(client: Client, env: Env) -> Outcome:
    """The same lookups when the client produced all 5 records in one batch (latest = high watermark)."""
    topic = env.name("t")
    env.create_topic(topic)
    sent = client.produce(topic, [Rec(None, b"%d" % ts, [], 0, timestamp=ts) for ts in TIMESTAMPS], one_batch=True)
    return {**_by_time(client, topic), "acks": acks(client, sent)}


# --- consumer groups ----------------------------------------------------------------------------------

# Kafka (consumer group protocol; KafkaConsumer javadoc "Consumer Groups and Topic Subscriptions"): the
# partitions are divided among the live members; a member that leaves (LeaveGroup) gives its partitions
# back at once, one that stops heartbeating loses them after session.timeout.ms; a newcomer gets a share.
@scenario("group_join_leave_crash_rejoin", {"a_alone": [[0, 1]], "a_b": [[0], [1]], "b_left": [[0, 1]],
                                            "a_c": [[0], [1]], "c_crashed": [[0, 1]], "a_d": [[0], [1]]},
          slow=True, uses=("group",))
def group_join_leave_crash_rejoin(client: Client, env: Env) -> Outcome:
    """Two partitions: A joins, B joins, B leaves, C joins and is killed (-9), D joins; the shares each time."""
    topic, group = env.name("t"), env.name("g")
    env.create_topic(topic, 2)
    out: Outcome = {}
    a = env.member(client, group, topic)
    out["a_alone"] = env.settle([a], 2)
    b = env.member(client, group, topic)
    out["a_b"] = env.settle([a, b], 2)
    b.close()
    out["b_left"] = env.settle([a], 2)
    c = env.member(client, group, topic, own_process=True)
    out["a_c"] = env.settle([a, c], 2)
    c.kill()
    out["c_crashed"] = env.settle([a], 2)
    d = env.member(client, group, topic)
    out["a_d"] = env.settle([a, d], 2)
    return out


# Kafka (KafkaConsumer javadoc, "Offsets and Consumer Position"): a committed offset is where the next
# member of the group starts; OffsetFetch returns it.
@scenario("commit_and_resume", {"first": [0, 1, 2, 3, 4, 5], "committed": {"0": 3}, "resumed": [3, 4, 5]},
          slow=True, uses=("commit", "group"))
def commit_and_resume(client: Client, env: Env) -> Outcome:
    """A member reads 6 records, commits offset 3 and leaves; the next member of the group resumes at 3."""
    topic, group = env.name("t"), env.name("g")
    env.create_topic(topic)
    for i in range(6):
        env.produce(topic, b"r%d" % i)
    a = env.member(client, group, topic)
    first, errors = env.receive(a, 6)
    env.commit(a, {(topic, 0): (3, None)})
    a.close()
    committed = {str(p): o for p, (o, _) in client.committed(group, topic, 1).items()}
    b = env.member(client, group, topic)
    resumed, errors2 = env.receive(b, 3)
    out = {"first": [r.offset for r in first], "committed": committed, "resumed": [r.offset for r in resumed]}
    if errors or errors2:
        out["errors"] = errors + errors2
    return out


# Kafka (OffsetCommit/OffsetFetch: committed_metadata is stored and returned as given).
@scenario("commit_metadata", {"committed": {"0": [2, "compat-meta"]}}, uses=("commit", "group"))
def commit_metadata(client: Client, env: Env) -> Outcome:
    """Commit offset 2 with metadata from an assigned (not subscribed) consumer; OffsetFetch returns both."""
    topic, group = env.name("t"), env.name("g")
    env.create_topic(topic)
    for i in range(3):
        env.produce(topic, b"r%d" % i)
    m = env.member(client, group, topic, assign=[0])
    m.commit({(topic, 0): (2, "compat-meta")})
    m.close()
    return {"committed": {str(p): [o, meta] for p, (o, meta) in client.committed(group, topic, 1).items()}}


# Kafka (consumer config auto.offset.reset): with no committed offset, "earliest" starts at the log
# start, "latest" at the high watermark, "none" raises (NoOffsetForPartitionException; librdkafka:
# auto.offset.reset=error gives ERR__AUTO_OFFSET_RESET).
@scenario("auto_offset_reset_earliest", {"offsets": [0, 1, 2]}, uses=("group",))
def auto_offset_reset_earliest(client: Client, env: Env) -> Outcome:
    """No committed offset, auto.offset.reset=earliest: reading starts at offset 0."""
    topic, group = env.name("t"), env.name("g")
    env.create_topic(topic)
    for i in range(3):
        env.produce(topic, b"r%d" % i)
    m = env.member(client, group, topic, assign=[0], offset_reset="earliest")
    got, errors = env.receive(m, 3)
    return {"offsets": [r.offset for r in got], **({"errors": errors} if errors else {})}


@scenario("auto_offset_reset_latest", {"position": 3, "offsets": [3, 4]}, uses=("group",))
def auto_offset_reset_latest(client: Client, env: Env) -> Outcome:
    """No committed offset, auto.offset.reset=latest: the position is the end (3); only newer records come."""
    topic, group = env.name("t"), env.name("g")
    env.create_topic(topic)
    for i in range(3):
        env.produce(topic, b"old%d" % i)
    m = env.member(client, group, topic, assign=[0], offset_reset="latest")
    from compat.env import wait_for
    # an assigned member joins no group: one ListOffsets tells it where the end is (op_s, not group_s; a client
    # that cannot tell its position before the first record, the rdkafka crate, waits no longer than that)
    _, position = wait_for(lambda: m.position((topic, 0)), env.timing.op_s, 0.1)
    for i in range(2):
        env.produce(topic, b"new%d" % i)
    got, errors = env.receive(m, 2)
    return {"position": position, "offsets": [r.offset for r in got], **({"errors": errors} if errors else {})}


@scenario("auto_offset_reset_none", {"error": "NO_OFFSET_FOR_PARTITION", "records": 0}, uses=("group",))
def auto_offset_reset_none(client: Client, env: Env) -> Outcome:
    """No committed offset, auto.offset.reset=none: the consumer reports an error and reads nothing."""
    topic, group = env.name("t"), env.name("g")
    env.create_topic(topic)
    env.produce(topic, b"r0")
    m = env.member(client, group, topic, assign=[0], offset_reset="none")
    from compat.env import wait_for
    got: list[Rec] = []

    def error() -> str | None:
        got.extend(m.take())
        errs = m.errors()
        return errs[0].code if errs else None
    _, code = wait_for(error, env.timing.fetch_s, 0.1)
    got.extend(m.take())
    return {"error": code, "records": len(got)}


# Kafka (auto.offset.reset: "what to do ... if the current offset does not exist any more on the server"):
# a fetch past the end gets OFFSET_OUT_OF_RANGE and the consumer resets, here to the earliest offset.
@scenario("offset_out_of_range_reset", {"offsets": [0, 1, 2]})
def offset_out_of_range_reset(client: Client, env: Env) -> Outcome:
    """Reading from offset 100 of a 3-record partition with auto.offset.reset=earliest restarts at 0."""
    topic = env.name("t")
    env.create_topic(topic)
    for i in range(3):
        env.produce(topic, b"r%d" % i)
    return {"offsets": [r.offset for r in client.fetch(topic, 0, 100, 3, reset="earliest")]}


# --- admin and limits ---------------------------------------------------------------------------------

# Kafka (CreateTopics; org.apache.kafka.common.internals.Topic.validate, AdminZkClient/ControllerApis):
# an existing name gives TOPIC_ALREADY_EXISTS; partitions 0 or below -1 INVALID_PARTITIONS; a replication
# factor above the broker count INVALID_REPLICATION_FACTOR; names with other characters than
# [a-zA-Z0-9._-], "." and "..", and names over 249 characters INVALID_TOPIC_EXCEPTION.
ADMIN_EXPECTED = {
    "create": "ok", "again": {"error": "TOPIC_ALREADY_EXISTS"}, "partitions_0": {"error": "INVALID_PARTITIONS"},
    "partitions_-5": {"error": "INVALID_PARTITIONS"}, "replication_1000": {"error": "INVALID_REPLICATION_FACTOR"},
    "name_bad name!": {"error": "INVALID_TOPIC_EXCEPTION"}, "name_.": {"error": "INVALID_TOPIC_EXCEPTION"},
    "name_..": {"error": "INVALID_TOPIC_EXCEPTION"}, "name_250_chars": {"error": "INVALID_TOPIC_EXCEPTION"},
}




def _admin_expected(client: Client) -> Outcome:
    if client.name in ("confluent-kafka", "rdkafka"):
        # librdkafka refuses num_partitions below -1 itself, before sending (rd_kafka_NewTopic_new:
        # "num_partitions out of expected range"); confluent-kafka raises ValueError from NewTopic, the
        # rdkafka crate KafkaError::AdminOpCreation
        return {**ADMIN_EXPECTED, "partitions_-5": {"error": "CLIENT_REJECTED"}}
    return ADMIN_EXPECTED


@scenario("admin_topic_errors", _admin_expected, uses=("admin",))
def admin_topic_errors(client: Client, env: Env) -> Outcome:
    """CreateTopics through the client's admin API: a new topic, then each of Kafka's refusals."""
    topic = env.name("t")

    def create(name: str, partitions: int = 1, rf: int = 1) -> Any:
        return outcome_of(lambda: client.create_topic(name, partitions, rf) or "ok")
    out = {"create": create(topic)}
    out["again"] = create(topic)
    out["partitions_0"] = create(env.name("p0"), 0)
    out["partitions_-5"] = create(env.name("p5"), -5)
    out["replication_1000"] = create(env.name("rf"), 1, 1000)
    # unique per cell where the name allows it (a broker that accepts them would otherwise answer
    # TOPIC_ALREADY_EXISTS to the next client); "." and ".." are what they are
    out["name_bad name!"] = create(f"{env.prefix}-bad name!")
    out["name_."] = create(".")
    out["name_.."] = create("..")
    out["name_250_chars"] = create(env.prefix + "x" * (250 - len(env.prefix)))
    return out


MiB = 1024 * 1024
BIG = random.Random(7).randbytes(MiB + MiB // 10)  # incompressible; over the default max.message.bytes


# Kafka (topic config max.message.bytes, default 1048588: "the largest record batch size allowed"): a
# bigger batch is refused with MESSAGE_TOO_LARGE and nothing is appended; a topic may raise its limit.
@scenario("message_too_large", lambda client: {"default_limit": {"error": "MESSAGE_TOO_LARGE"}, "end": 0,
                                               "raised_limit": acks(client, [(0, 0)])})
def message_too_large(client: Client, env: Env) -> Outcome:
    """A 1.1 MiB record: refused by a topic with the default max.message.bytes, taken by one raised to 2 MiB."""
    small, big = env.name("small"), env.name("big")
    env.create_topic(small)
    env.create_topic(big, configs={"max.message.bytes": str(2 * MiB)})
    rec = [Rec(b"k", BIG, [], 0)]
    refused = outcome_of(lambda: client.produce(small, rec, max_request_bytes=4 * MiB))
    taken = outcome_of(lambda: acks(client, client.produce(big, rec, max_request_bytes=4 * MiB)))
    return {"default_limit": refused, "end": env.cluster().end_offsets(small)[0], "raised_limit": taken}


def _unknown_topic_expected(client: Client) -> Outcome:
    # Producing to a topic the cluster does not have, with auto.create.topics.enable=false:
    # - Java: send() waits max.block.ms for metadata, then TimeoutException "Topic ... not present in
    #   metadata" (KafkaProducer javadoc, max.block.ms); kafka-python and aiokafka mirror it
    #   (KafkaTimeoutError after max_block_ms / request_timeout_ms).
    # - librdkafka (confluent-kafka, kcat, rdkafka): the message fails with ERR__UNKNOWN_TOPIC once the topic is
    #   still absent after topic.metadata.propagation.max.ms (librdkafka CONFIGURATION.md).
    # Metadata for it answers UNKNOWN_TOPIC_OR_PARTITION to every client, and the topic is not created.
    produce = "UNKNOWN_TOPIC_OR_PARTITION" if client.name in ("confluent-kafka", "kcat", "rdkafka") else "TIMEOUT"
    return {"produce": {"error": produce}, "metadata": {"error": "UNKNOWN_TOPIC_OR_PARTITION"}, "created": False}


@scenario("unknown_topic_autocreate_off", _unknown_topic_expected, needs=("auto_create_off",))
def unknown_topic_autocreate_off(client: Client, env: Env) -> Outcome:
    """With auto-create off: producing to a missing topic fails, metadata says unknown, nothing is created."""
    topic = env.name("missing")
    produce = outcome_of(lambda: client.produce(topic, [Rec(None, b"v")]))
    metadata = outcome_of(lambda: client.partition_count(topic))
    return {"produce": produce, "metadata": metadata, "created": topic in env.topics()}

