"""Produce with malformed record batches: each refused with the error Apache Kafka 4.4.0 gives, nothing stored.

The batches are raw frames (valid CRC unless the case is about the CRC), so the same tests run against real
Kafka with `pytest --kafka-real tests/unit/test_batch_validation.py`, which is where the expected codes come from.
"""

from __future__ import annotations

import struct
import time
from collections.abc import Callable

import crc32c
import pytest

from fakekafka.wire import ApiKey, ErrorCode
from fakekafka.wire.records import Compression, _sized, _varint, _varlong, build_batch
from tests.rawclient import RawClient

E = ErrorCode


def _now() -> int:
    return int(time.time() * 1000)


def _recrc(b: bytearray) -> bytes:
    struct.pack_into(">I", b, 17, crc32c.crc32c(bytes(b[21:])))
    return bytes(b)


def _batch(n: int = 2, codec: Compression = Compression.NONE, key: bytes | None = b"k") -> bytearray:
    return bytearray(
        build_batch([{"key": key, "value": b"v%d" % i, "timestamp": _now()} for i in range(n)], compression=codec)
    )


def _set(fmt: str, pos: int, value: int, *, base: Callable[[], bytearray] = _batch) -> Callable[[], bytes]:
    def make() -> bytes:
        b = base()
        struct.pack_into(fmt, b, pos, value)
        return _recrc(b)

    return make


def _codec(codec: int, base: Compression = Compression.NONE) -> Callable[[], bytes]:
    def make() -> bytes:
        b = _batch(2, base)
        attributes = struct.unpack_from(">h", b, 21)[0]
        struct.pack_into(">h", b, 21, (attributes & ~7) | codec)
        return _recrc(b)

    return make


def _body(codec: Compression, payload: bytes, count: int = 2) -> Callable[[], bytes]:
    """A header announcing `count` records with `payload` (already compressed or not) as its records."""

    def make() -> bytes:
        b = _batch(1, codec)[:61] + payload
        struct.pack_into(">i", b, 8, len(b) - 12)
        struct.pack_into(">i", b, 23, count - 1)
        struct.pack_into(">i", b, 57, count)
        return _recrc(b)

    return make


def _records(*offset_deltas: int, header_key_size: int | None = None, pad: int = 0) -> bytes:
    """Records of key "k" and value "v"; with `header_key_size` each has one header whose key declares that size
    (and no value); `pad` bytes after the fields, counted in the record's length."""
    out = bytearray()
    for delta in offset_deltas:
        rec = b"\x00" + _varlong(0) + _varint(delta) + _sized(b"k") + _sized(b"v")
        rec += _varint(0) if header_key_size is None else _varint(1) + _varint(header_key_size) + _varint(-1)
        rec += b"\x00" * pad
        out += _varint(len(rec)) + rec
    return bytes(out)


def _truncated(codec: Compression) -> Callable[[], bytes]:
    def make() -> bytes:
        b = _batch(50, codec)
        b = b[:-8]
        struct.pack_into(">i", b, 8, len(b) - 12)
        return _recrc(b)

    return make


def _extra(data: bytes, *, length: bool = True) -> Callable[[], bytes]:
    def make() -> bytes:
        b = _batch() + data
        if length:
            struct.pack_into(">i", b, 8, len(b) - 12)
        return _recrc(b)

    return make


def _flip_crc() -> bytes:
    b = _batch()
    b[-1] ^= 1
    return bytes(b)


def _magic(m: int) -> Callable[[], bytes]:
    def make() -> bytes:
        b = _batch()
        b[16] = m & 0xFF
        return bytes(b)

    return make


# (case, batch, error code, error message on the wire)
CASES: list[tuple[str, Callable[[], bytes], ErrorCode, str | None]] = [
    ("codec-5", _codec(5), E.UNKNOWN_SERVER_ERROR, None),
    ("codec-6", _codec(6), E.UNKNOWN_SERVER_ERROR, None),
    ("codec-7", _codec(7), E.UNKNOWN_SERVER_ERROR, None),
    ("codec-5-over-gzip", _codec(5, Compression.GZIP), E.UNKNOWN_SERVER_ERROR, None),
    ("gzip-garbage", _body(Compression.GZIP, b"\x1f\x8b garbage garbage"), E.UNKNOWN_SERVER_ERROR, None),
    ("snappy-garbage", _body(Compression.SNAPPY, b"\xff\xff\xff garbage garbage"), E.UNKNOWN_SERVER_ERROR, None),
    ("lz4-garbage", _body(Compression.LZ4, b"\x04\x22\x4d\x18 garbage garbage"), E.UNKNOWN_SERVER_ERROR, None),
    ("zstd-garbage", _body(Compression.ZSTD, b"\x28\xb5\x2f\xfd garbage garbage"), E.UNKNOWN_SERVER_ERROR, None),
    ("gzip-truncated", _truncated(Compression.GZIP), E.UNKNOWN_SERVER_ERROR, None),
    ("zstd-truncated", _truncated(Compression.ZSTD), E.UNKNOWN_SERVER_ERROR, None),
    ("crc", _flip_crc, E.CORRUPT_MESSAGE, None),
    ("magic-0", _magic(0), E.INVALID_RECORD, None),
    ("magic-1", _magic(1), E.INVALID_RECORD, None),
    ("magic-3", _magic(3), E.CORRUPT_MESSAGE, "Invalid magic found in record: 3"),
    ("magic-negative", _magic(-1), E.CORRUPT_MESSAGE, "Invalid magic found in record: -1"),
    ("count-above-offsets", _set(">i", 57, 3), E.INVALID_RECORD, None),
    ("count-below-offsets", _set(">i", 57, 1), E.INVALID_RECORD, None),
    ("last-offset-delta", _set(">i", 23, 5), E.INVALID_RECORD, None),
    ("count-zero", _body(Compression.NONE, b"", 0), E.INVALID_RECORD, None),
    ("count-negative", _set(">i", 57, -1), E.INVALID_RECORD, None),
    ("gzip-count-above-offsets", _set(">i", 57, 3, base=lambda: _batch(2, Compression.GZIP)), E.INVALID_RECORD, None),
    ("fewer-records-than-count", _body(Compression.NONE, _records(0, 1), 3), E.INVALID_RECORD, None),
    ("more-records-than-count", _body(Compression.NONE, _records(0, 1, 2), 2), E.INVALID_RECORD, None),
    (
        "gzip-fewer-records-than-count",
        _body(Compression.GZIP, bytes(__import__("cramjam").gzip.compress(_records(0, 1))), 3),
        E.INVALID_RECORD,
        None,
    ),
    (
        "gzip-negative-header-key-size",
        _body(Compression.GZIP, bytes(__import__("cramjam").gzip.compress(_records(0, header_key_size=-1))), 1),
        E.INVALID_RECORD,
        None,
    ),
    (
        "gzip-record-fields-short-of-its-length",
        _body(Compression.GZIP, bytes(__import__("cramjam").gzip.compress(_records(0, pad=1))), 1),
        E.INVALID_RECORD,
        None,
    ),
    ("negative-header-key-size", _body(Compression.NONE, _records(0, header_key_size=-1), 1), E.INVALID_RECORD, None),
    ("record-fields-short-of-its-length", _body(Compression.NONE, _records(0, pad=1), 1), E.INVALID_RECORD, None),
    ("header-key-past-its-record", _body(Compression.NONE, _records(0, header_key_size=40), 1), E.INVALID_RECORD,
     None),
    ("trailing-bytes", _extra(b"\x00\x00"), E.INVALID_RECORD, None),
    ("record-length", _set(">b", 61, 0x10), E.INVALID_RECORD, None),
    ("base-offset-not-zero", _set(">q", 0, 5), E.INVALID_RECORD, None),
    ("length-past-the-end", _set(">i", 8, 10_000), E.INVALID_RECORD, None),
    (
        "length-below-overhead",
        _set(">i", 8, 10),
        E.CORRUPT_MESSAGE,
        "Record size 10 is less than the minimum record overhead (14)",
    ),
    ("length-below-batch-header", _set(">i", 8, 20), E.CORRUPT_MESSAGE, None),
    ("second-batch-size-zero", _extra(b"\x00" * 20, length=False), E.CORRUPT_MESSAGE, None),
    (
        "second-batch-magic-3",
        _extra(b"\x00" * 8 + struct.pack(">i", 100) + b"\x00" * 4 + b"\x03", length=False),
        E.CORRUPT_MESSAGE,
        None,
    ),
    ("trailing-bytes-outside-the-batch", _extra(b"\x00" * 5, length=False), E.CORRUPT_MESSAGE, None),
    (
        "second-batch-past-the-end",
        _extra(b"\x00" * 8 + struct.pack(">i", 1000) + b"\x00" * 4 + b"\x02" + b"\x00" * 10, length=False),
        E.CORRUPT_MESSAGE,
        None,
    ),
    ("second-whole-batch", _extra(build_batch([{"value": b"x"}]), length=False), E.INVALID_RECORD, None),
]


def _produce(raw: RawClient, topic: str, records: bytes) -> object:
    body = {
        "transactional_id": None,
        "acks": 1,
        "timeout_ms": 5000,
        "topic_data": [{"name": topic, "partition_data": [{"index": 0, "records": records}]}],
    }
    return raw.request(ApiKey.PRODUCE, 9, body).responses[0].partition_responses[0]


@pytest.mark.parametrize(("case", "make", "code", "message"), CASES, ids=[c[0] for c in CASES])
def test_refused_with_kafkas_error_and_nothing_stored(
    kafka, case: str, make: Callable[[], bytes], code: ErrorCode, message: str | None
) -> None:
    kafka.create_topic("v", 1)
    kafka.wait_for_topic("v", 1)
    raw = RawClient(kafka.bootstrap_servers)
    try:
        p = _produce(raw, "v", make())
        assert (ErrorCode(p.error_code).name, p.error_message) == (code.name, message)
        if code != E.NONE:
            assert p.base_offset == -1
            assert kafka.end_offsets("v") == {0: 0}
        # the connection and the partition still work
        assert _produce(raw, "v", bytes(_batch())).error_code == E.NONE
    finally:
        raw.close()


@pytest.mark.parametrize(
    ("value_size", "codec", "code"),
    [
        (10, Compression.GZIP, E.NONE),
        (500, Compression.GZIP, E.INVALID_RECORD),
        (500, Compression.ZSTD, E.INVALID_RECORD),
        (500, Compression.NONE, E.NONE),
    ],
    ids=["small-records", "gzip-record-above", "zstd-record-above", "uncompressed"],
)
def test_max_decompressed_message_bytes_bounds_each_record_of_a_compressed_batch(
    kafka, value_size: int, codec: Compression, code: ErrorCode
) -> None:
    """Kafka checks each record's declared size against the topic's max.decompressed.message.bytes while it
    decompresses a batch (an uncompressed one is bounded by max.message.bytes alone)."""
    kafka.create_topic("d", 1, configs={"max.decompressed.message.bytes": "100"})
    kafka.wait_for_topic("d", 1)
    raw = RawClient(kafka.bootstrap_servers)
    try:
        batch = build_batch(
            [{"key": b"k", "value": b"v" * value_size, "timestamp": _now()} for _ in range(50)], compression=codec
        )
        p = _produce(raw, "d", batch)
        assert (ErrorCode(p.error_code).name, p.error_message) == (code.name, None)
        assert kafka.end_offsets("d") == {0: 50 if code == E.NONE else 0}
    finally:
        raw.close()


def _set_size_10() -> bytes:
    b = _batch()
    struct.pack_into(">i", b, 8, 10)
    return bytes(b)


@pytest.mark.parametrize(
    ("version", "bad", "code", "message"),
    [
        (9, _magic(3), E.CORRUPT_MESSAGE, "Invalid magic found in record: 3"),
        (9, _set_size_10, E.CORRUPT_MESSAGE, "Record size 10 is less than the minimum record overhead (14)"),
        (3, _codec(5), E.UNKNOWN_SERVER_ERROR, None),
        (6, _codec(7), E.UNKNOWN_SERVER_ERROR, None),
    ],
    ids=["magic-3", "size-10", "v3-codec-5", "v6-codec-7"],
)
def test_first_batch_faults_fail_the_whole_request(
    kafka, version: int, bad: Callable[[], bytes], code: ErrorCode, message: str | None
) -> None:
    """Kafka reads every partition's first batch header before appending anything: these fail every partition."""
    for name in ("good", "bad"):
        kafka.create_topic(name, 1)
        kafka.wait_for_topic(name, 1)
    raw = RawClient(kafka.bootstrap_servers)
    body = {
        "transactional_id": None,
        "acks": 1,
        "timeout_ms": 5000,
        "topic_data": [
            {"name": "good", "partition_data": [{"index": 0, "records": bytes(_batch())}]},
            {"name": "bad", "partition_data": [{"index": 0, "records": bad()}]},
        ],
    }
    r = raw.request(ApiKey.PRODUCE, version, body)
    got = [
        (t.name, ErrorCode(p.error_code).name, p.get("error_message"))
        for t in r.responses
        for p in t.partition_responses
    ]
    assert sorted(got) == [("bad", code.name, message), ("good", code.name, message)]  # Kafka: its map's order
    assert kafka.end_offsets("good") == {0: 0}
    raw.close()


def test_zstd_needs_produce_v7(kafka) -> None:
    for name in ("good", "zstd"):
        kafka.create_topic(name, 1)
        kafka.wait_for_topic(name, 1)
    raw = RawClient(kafka.bootstrap_servers)
    body = {
        "transactional_id": None,
        "acks": 1,
        "timeout_ms": 5000,
        "topic_data": [
            {"name": "good", "partition_data": [{"index": 0, "records": bytes(_batch())}]},
            {"name": "zstd", "partition_data": [{"index": 0, "records": bytes(_batch(2, Compression.ZSTD))}]},
        ],
    }
    r = raw.request(ApiKey.PRODUCE, 6, body)
    got = [(t.name, ErrorCode(p.error_code).name) for t in r.responses for p in t.partition_responses]
    assert sorted(got) == [("good", "NONE"), ("zstd", "UNSUPPORTED_COMPRESSION_TYPE")]
    assert kafka.end_offsets("zstd") == {0: 0}
    raw.close()
