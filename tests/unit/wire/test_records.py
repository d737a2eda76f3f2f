"""Record batches v2: header, CRC-32C, codecs, records, broker-side rewrites."""

from __future__ import annotations

import struct

import pytest

from fakekafka.wire.records import (
    Compression,
    InvalidBatch,
    TimestampType,
    build_batch,
    crc_of,
    decode_batch,
    iter_batches,
    read_header,
    set_base_offset,
    set_log_append_time,
)

RECORDS = [
    {"key": b"k1", "value": b"v" * 300, "timestamp": 1_000, "headers": [("h1", b"x"), ("h2", None)]},
    {"key": None, "value": None, "timestamp": 1_007},
    {"key": b"", "value": b"", "timestamp": 999},
]


@pytest.mark.parametrize("codec", list(Compression))
def test_round_trip_each_codec(codec: Compression) -> None:
    batch = build_batch(RECORDS, compression=codec, producer_id=7, producer_epoch=1, base_sequence=10)
    h = read_header(batch)
    assert (h.compression, h.records_count, h.last_offset_delta) == (codec, 3, 2)
    assert (h.base_timestamp, h.max_timestamp) == (999, 1_007)
    assert (h.producer_id, h.producer_epoch, h.base_sequence, h.last_sequence) == (7, 1, 10, 12)
    assert crc_of(batch) == h.crc
    records = decode_batch(batch).records
    assert [(r.offset, r.key, r.value, r.timestamp) for r in records] == [
        (0, b"k1", b"v" * 300, 1_000), (1, None, None, 1_007), (2, b"", b"", 999)]
    assert records[0].headers == [("h1", b"x"), ("h2", None)]


def test_broker_fields_are_outside_the_crc() -> None:
    batch = build_batch(RECORDS)
    moved = set_base_offset(batch, 1234, 5)
    h = read_header(moved)
    assert (h.base_offset, h.partition_leader_epoch) == (1234, 5)
    assert crc_of(moved) == h.crc
    assert moved[16:] == batch[16:]
    assert [r.offset for r in decode_batch(moved).records] == [1234, 1235, 1236]


def test_log_append_time_restamps_and_keeps_crc_valid() -> None:
    stamped = set_log_append_time(build_batch(RECORDS), 55_555)
    (header, _), = iter_batches(stamped)
    assert header.timestamp_type == TimestampType.LOG_APPEND_TIME and header.max_timestamp == 55_555
    assert {r.timestamp for r in decode_batch(stamped).records} == {55_555}


def test_iter_batches_splits_several() -> None:
    a, b = build_batch(RECORDS[:1]), build_batch(RECORDS, compression=Compression.LZ4)
    got = iter_batches(a + b)
    assert [x[1] for x in got] == [a, b]


def test_crc_mismatch_is_corrupt() -> None:
    bad = bytearray(build_batch(RECORDS))
    bad[-1] ^= 0xFF
    with pytest.raises(InvalidBatch, match="CRC") as e:
        iter_batches(bytes(bad))
    assert e.value.corrupt


@pytest.mark.parametrize("data,match", [
    (b"\x00" * 10, "trailing"),
    (struct.pack(">qii", 0, 5000, 0) + b"\x02" + b"\x00" * 60, "does not fit"),
    (struct.pack(">qi", 0, 49) + b"\x00\x00\x00\x00\x01" + b"\x00" * 44, "magic 1"),
])
def test_malformed_batches(data: bytes, match: str) -> None:
    with pytest.raises(InvalidBatch, match=match):
        iter_batches(data)


def test_garbage_compressed_payload_is_invalid_not_a_crash() -> None:
    batch = bytearray(build_batch(RECORDS, compression=Compression.ZSTD))
    batch[61:70] = b"\xff" * 9
    struct.pack_into(">I", batch, 17, crc_of(bytes(batch)))
    with pytest.raises(InvalidBatch):
        decode_batch(bytes(batch))


def test_xerial_snappy_from_java_is_read() -> None:
    import cramjam
    payload_batch = build_batch(RECORDS)
    body = payload_batch[61:]
    block = bytes(cramjam.snappy.compress_raw(body))
    xerial = b"\x82SNAPPY\x00" + struct.pack(">ii", 1, 1) + struct.pack(">i", len(block)) + block
    batch = bytearray(payload_batch[:61] + xerial)
    struct.pack_into(">i", batch, 8, len(batch) - 12)
    struct.pack_into(">h", batch, 21, int(Compression.SNAPPY))
    struct.pack_into(">I", batch, 17, crc_of(bytes(batch)))
    assert [r.value for r in decode_batch(bytes(batch)).records] == [r["value"] for r in RECORDS]
