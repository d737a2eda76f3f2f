"""The vectorized record walk (fakekafka/model/record_walk.py) says "well formed" only where the exact walk
(`validate._walk_fields`) finds nothing wrong, and a batch's answer is the exact walk's either way."""

from __future__ import annotations

import struct

import crc32c
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fakekafka.model import record_walk
from fakekafka.model.record_walk import MIN_RECORDS, records_well_formed
from fakekafka.model.validate import _walk_fields, check_batch
from fakekafka.wire import ErrorCode
from fakekafka.wire.primitives import varint_at
from fakekafka.wire.records import Compression, _sized, _varint, _varlong, build_batch, compress, read_header

pytest.importorskip("numpy")

N = MIN_RECORDS + 72


def _record(
    ts_delta: int = 0,
    offset_delta: int = 0,
    key: bytes | None = None,
    value: bytes | None = b"v",
    headers: list[tuple[int, bytes | None]] | None = None,
    pad: bytes = b"",
) -> bytes:
    """One record's bytes, length first; headers as (key size as declared, value); `pad` after the fields,
    counted in the length."""
    rec = b"\x00" + _varlong(ts_delta) + _varint(offset_delta) + _sized(key) + _sized(value)
    hs = headers or []
    rec += _varint(len(hs))
    for key_size, hv in hs:
        rec += _varint(key_size) + b"h" * max(key_size, 0) + _sized(hv)
    rec += pad
    return _varint(len(rec)) + rec


def _body(records: list[bytes]) -> bytes:
    return b"".join(records)


SHAPES = {
    "null-key-100B": lambda i: _record(offset_delta=i, value=bytes(100)),
    "keys-and-1KiB": lambda i: _record(offset_delta=i, key=b"key-%d" % i, value=bytes(1024)),
    "null-and-empty-values": lambda i: _record(offset_delta=i, key=b"k", value=None if i % 2 else b""),
    "varying-sizes": lambda i: _record(offset_delta=i, value=bytes(i * 37 % 3000)),
    "runs-of-sizes": lambda i: _record(offset_delta=i, value=bytes((10, 200, 11, 5000)[i // 23 % 4])),
    "long-timestamp-deltas": lambda i: _record(ts_delta=(-1) ** i * 7 ** (i % 22), offset_delta=i, value=b"x"),
    "headers": lambda i: _record(
        offset_delta=i, value=b"v" * (i % 5), headers=[(3, b"vv"), (0, None), (1, b"")][: i % 4]
    ),
}


@pytest.mark.parametrize("shape", sorted(SHAPES))
@pytest.mark.parametrize("codec", [Compression.SNAPPY, Compression.LZ4, Compression.ZSTD, Compression.GZIP])
def test_well_formed_batches_pass_both_walks(shape: str, codec: Compression) -> None:
    body = _body([SHAPES[shape](i) for i in range(N)])
    assert records_well_formed(body, N)
    assert _walk_fields(body, N) is None
    batch = _compressed_batch(body, N, codec)
    assert check_batch(read_header(batch), batch, 1 << 30) is None


def test_records_of_8_kib_and_more_are_left_to_the_exact_walk() -> None:
    body = _body([_record(offset_delta=i, value=bytes(9000)) for i in range(N)])  # 3-byte record lengths
    assert not records_well_formed(body, N)
    assert _walk_fields(body, N) is None


def _compressed_batch(body: bytes, count: int, codec: Compression) -> bytes:
    """A batch of one record, its records replaced by `body` (compressed) announcing `count` records."""
    base = bytearray(build_batch([{"value": b"x"}], compression=Compression.NONE))[:61]
    b = base + compress(codec, body)
    struct.pack_into(">h", b, 21, int(codec))
    struct.pack_into(">i", b, 8, len(b) - 12)
    struct.pack_into(">i", b, 23, count - 1)
    struct.pack_into(">i", b, 57, count)
    struct.pack_into(">I", b, 17, crc32c.crc32c(bytes(b[21:])))
    return bytes(b)


GOOD = [
    _record(offset_delta=i, key=b"k%d" % i, value=b"v" * (i % 90), headers=[(2, b"x")] if i % 3 == 0 else None)
    for i in range(N)
]

# (case, the faulty record, the start of the exact walk's message, where it does not depend on what follows)
FAULTS = [
    ("negative-header-key-size", _record(value=b"v", headers=[(-1, None)]), "Invalid negative header key size -1"),
    ("fields-short-of-length", _record(value=b"v", pad=b"\x00"), "Invalid record size: expected to read"),
    ("header-count-above-bytes-left", b"\x0a\x00\x00\x00\x01\x02v\x7e\x00\x00\x00", "Found invalid number of"),
    ("negative-header-count", b"\x0a\x00\x00\x00\x01\x02v\x01\x00\x00\x00", "Found invalid number of"),
    ("overlong-offset-delta", b"\x12\x00\x00" + b"\xff" * 5 + b"\x01\x01\x01\x00", "Found invalid record structure"),
    ("overlong-timestamp-delta", b"\x1c\x00" + b"\xff" * 11 + b"\x00\x01\x01\x00", "Found invalid record structure"),
    ("value-past-the-record", b"\x10\x00\x00\x00\x01\x28vv\x00", None),  # a value of 20 bytes in a record of 8
    ("negative-record-length", b"\x03", "Invalid record size: -2 bytes"),
]


@pytest.mark.parametrize(("case", "bad", "message"), FAULTS, ids=[f[0] for f in FAULTS])
@pytest.mark.parametrize("where", [0, N // 2, N - 1])
def test_a_faulty_record_anywhere_gets_the_exact_walks_answer(
    case: str, bad: bytes, message: str | None, where: int
) -> None:
    records = list(GOOD)
    records[where] = bad
    body = _body(records)
    assert not records_well_formed(body, N)
    refused = _walk_fields(body, N)
    assert refused is not None and refused.error == ErrorCode.INVALID_RECORD
    assert message is None or message in refused.message
    batch = _compressed_batch(body, N, Compression.SNAPPY)
    assert check_batch(read_header(batch), batch, 1 << 30) == refused


def test_max_decompressed_message_bytes_is_the_exact_walks() -> None:
    body = _body(GOOD)
    largest = max(varint_at(r, 0)[0] for r in GOOD)
    assert records_well_formed(body, N, largest)
    assert not records_well_formed(body, N, largest - 1)
    batch = _compressed_batch(body, N, Compression.SNAPPY)
    refused = check_batch(read_header(batch), batch, 1 << 30, largest - 1)
    assert refused == _walk_fields(body, N, largest - 1) and refused is not None


@settings(max_examples=400, derandomize=True, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.lists(st.tuples(st.integers(0, 5000), st.integers(0, 255)), min_size=1, max_size=4),
    st.integers(-2, 2),
    st.integers(0, 3),
)
def test_mutated_bodies_are_never_called_well_formed_where_the_exact_walk_refuses(
    flips: list[tuple[int, int]], count_change: int, cut: int
) -> None:
    body = bytearray(_body(GOOD))
    for at, byte in flips:
        body[at % len(body)] = byte
    if cut:
        del body[-cut:]
    count = N + count_change
    exact = _walk_fields(bytes(body), count)
    if records_well_formed(body, count):
        assert exact is None


@settings(max_examples=200, derandomize=True, deadline=None)
@given(st.lists(st.tuples(st.sampled_from([0, 1, 60, 61, 200, 8100]), st.integers(1, 60)), min_size=1, max_size=12))
def test_runs_of_one_size_and_mixed_sizes_are_found_well_formed(runs: list[tuple[int, int]]) -> None:
    sizes = [size for size, times in runs for _ in range(times)]
    body = _body([_record(offset_delta=i, value=bytes(size)) for i, size in enumerate(sizes)])
    assert records_well_formed(body, len(sizes))
    assert not records_well_formed(body, len(sizes) + 1) and not records_well_formed(body, len(sizes) - 1)
    assert not records_well_formed(body + b"\x00", len(sizes)) and not records_well_formed(body[:-1], len(sizes))


def test_without_numpy_the_exact_walk_answers(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(record_walk, "_np", None)
    monkeypatch.setattr(record_walk, "_missing", True)
    body = _body(GOOD)
    assert not records_well_formed(body, N)
    batch = _compressed_batch(body, N, Compression.SNAPPY)
    assert check_batch(read_header(batch), batch, 1 << 30) is None
