"""Record batches v2 (magic 2): header without touching records, CRC-32C, codecs, records on demand.

A broker stores the bytes a producer sent. It reads the 61-byte header to learn how many offsets a
batch takes and validates the CRC; it decodes records only where it must (timestamp lookups, the
Python API's `records()`), and the codecs are maintained C libraries (cramjam, crc32c).
"""

from __future__ import annotations

import gzip
import io
import struct
import zlib
from dataclasses import dataclass, field
from enum import IntEnum
from typing import Any

import cramjam
import crc32c
from construct import Int8sb, Int16sb, Int32sb, Int32ub, Int64sb, Struct

from fakekafka.wire.primitives import Varint, Varlong, uvarint_at

__all__ = [
    "BATCH_OVERHEAD", "BatchHeader", "Compression", "DELETE_HORIZON_FLAG", "InvalidBatch", "Record", "RecordBatch",
    "TimestampType", "TooLarge", "build_batch", "crc_of", "decode_batch", "delete_horizon", "iter_batches",
    "read_header", "rebuild_batch", "set_base_offset",
]

BATCH_OVERHEAD = 61
_CRC_START = 21
MAGIC = 2

BatchHeaderStruct = Struct(
    "base_offset" / Int64sb,
    "batch_length" / Int32sb,
    "partition_leader_epoch" / Int32sb,
    "magic" / Int8sb,
    "crc" / Int32ub,
    "attributes" / Int16sb,
    "last_offset_delta" / Int32sb,
    "base_timestamp" / Int64sb,
    "max_timestamp" / Int64sb,
    "producer_id" / Int64sb,
    "producer_epoch" / Int16sb,
    "base_sequence" / Int32sb,
    "records_count" / Int32sb,
).compile()
"""The batch header as a compiled struct: it is read for every batch a producer sends."""

_LENGTH_MAGIC = struct.Struct(">qib")
_HEADER = struct.Struct(">qiibIhiqqqhii")
"""BatchHeaderStruct's layout for the struct module: read_header runs for every batch a producer sends and
every marker, and unpacking 61 bytes this way costs a microsecond where construct's parse costs tens."""


class Compression(IntEnum):
    NONE = 0
    GZIP = 1
    SNAPPY = 2
    LZ4 = 3
    ZSTD = 4


class TimestampType(IntEnum):
    CREATE_TIME = 0
    LOG_APPEND_TIME = 1


class InvalidBatch(ValueError):
    """A batch the broker must refuse (CORRUPT_MESSAGE / INVALID_RECORD); says why. `decompression`: its
    data does not decompress (Kafka answers that with UNKNOWN_SERVER_ERROR)."""

    def __init__(self, what: str, *, corrupt: bool = True, decompression: bool = False) -> None:
        super().__init__(what)
        self.corrupt = corrupt
        self.decompression = decompression


@dataclass(slots=True)
class BatchHeader:
    base_offset: int
    batch_length: int
    partition_leader_epoch: int
    magic: int
    crc: int
    attributes: int
    last_offset_delta: int
    base_timestamp: int
    max_timestamp: int
    producer_id: int
    producer_epoch: int
    base_sequence: int
    records_count: int

    @property
    def size(self) -> int:
        return 12 + self.batch_length

    @property
    def compression(self) -> Compression:
        return Compression(self.attributes & 0x07)

    @property
    def timestamp_type(self) -> TimestampType:
        return TimestampType((self.attributes >> 3) & 1)

    @property
    def is_transactional(self) -> bool:
        return bool(self.attributes & 0x10)

    @property
    def is_control(self) -> bool:
        return bool(self.attributes & 0x20)

    @property
    def last_offset(self) -> int:
        return self.base_offset + self.last_offset_delta

    @property
    def last_sequence(self) -> int:
        if self.base_sequence < 0:
            return -1
        return (self.base_sequence + self.last_offset_delta) & 0x7FFFFFFF


def read_header(data: bytes | bytearray | memoryview, pos: int = 0) -> BatchHeader:
    if len(data) - pos < BATCH_OVERHEAD:
        from construct import StreamError
        raise StreamError(f"a batch header is {BATCH_OVERHEAD} bytes, {max(len(data) - pos, 0)} left")
    return BatchHeader(*_HEADER.unpack_from(data, pos))


def crc_of(batch: bytes | memoryview) -> int:
    return crc32c.crc32c(batch[_CRC_START:])


def iter_batches(data: bytes, *, validate: bool = True) -> list[tuple[BatchHeader, bytes]]:
    """Split a `records` field into (header, batch bytes), refusing anything but whole v2 batches."""
    out = []
    pos = 0
    end = len(data)
    view = memoryview(data)
    while pos < end:
        if end - pos < 17:
            raise InvalidBatch(f"{end - pos} trailing bytes are not a record batch")
        _, length, _ = _LENGTH_MAGIC.unpack_from(data, pos)
        magic = data[pos + 16]
        if magic != MAGIC:
            raise InvalidBatch(f"record batch magic {magic} is not supported (only v2)", corrupt=False)
        size = 12 + length
        if length < BATCH_OVERHEAD - 12 or pos + size > end:
            raise InvalidBatch(f"record batch length {length} does not fit the {end - pos} bytes left")
        header = read_header(view, pos)
        batch = data[pos:pos + size] if (pos or size != end) else data
        if validate:
            actual = crc32c.crc32c(view[pos + _CRC_START:pos + size])
            if actual != header.crc:
                raise InvalidBatch(f"CRC mismatch: batch says {header.crc:#010x}, bytes give {actual:#010x}")
            if header.records_count < 0 or header.last_offset_delta < 0:
                raise InvalidBatch("negative record count or offset delta")
            if header.records_count != header.last_offset_delta + 1 and header.compression == Compression.NONE \
                    and not header.is_control and header.records_count != 0:
                raise InvalidBatch(
                    f"batch holds {header.records_count} records but spans {header.last_offset_delta + 1} offsets",
                    corrupt=False)
        out.append((header, batch))
        pos += size
    return out


def set_base_offset(batch: bytes | bytearray, base_offset: int, leader_epoch: int) -> bytearray:
    """A copy of the batch with the broker's fields set (neither is covered by the CRC): one copy,
    stamped in place, as this runs for every batch a producer sends."""
    out = bytearray(batch)
    struct.pack_into(">q", out, 0, base_offset)
    struct.pack_into(">i", out, 12, leader_epoch)
    return out


def set_log_append_time(batch: bytes, timestamp: int) -> bytes:
    """LogAppendTime topics: the broker stamps max timestamp and the type bit and re-computes the CRC."""
    buf = bytearray(batch)
    attributes = struct.unpack_from(">h", buf, 21)[0] | 0x08
    struct.pack_into(">h", buf, 21, attributes)
    struct.pack_into(">q", buf, 35, timestamp)
    struct.pack_into(">I", buf, 17, crc32c.crc32c(memoryview(buf)[_CRC_START:]))
    return bytes(buf)


# --- codecs -------------------------------------------------------------------------------------

_XERIAL_MAGIC = b"\x82SNAPPY\x00"


class TooLarge(InvalidBatch):
    """A batch whose records would decompress to more than a limit (refused before decompressing it)."""

    def __init__(self, what: str) -> None:
        super().__init__(what, corrupt=False)


def _lz4_bound(data: bytes) -> int:
    """The most an LZ4 frame (Kafka's framing) decompresses to: its blocks times their maximum size."""
    total, pos = 0, 0
    while pos < len(data):
        if data[pos:pos + 4] != b"\x04\x22\x4d\x18":
            raise ValueError("not an LZ4 frame")
        flg, bd = data[pos + 4], data[pos + 5]
        block_max = 1 << (8 + 2 * ((bd >> 4) & 7))
        pos += 7 + (8 if flg & 0x08 else 0) + (4 if flg & 0x01 else 0)
        while True:
            (size,) = struct.unpack_from("<I", data, pos)
            pos += 4
            if size == 0:
                break
            total += block_max
            pos += (size & 0x7FFFFFFF) + (4 if flg & 0x10 else 0)
        pos += 4 if flg & 0x04 else 0
    return total


def _zstd_bound(data: bytes) -> int:
    """The most zstd frames decompress to, from their block headers (raw and RLE blocks say their size; a
    compressed block is at most 128 KiB)."""
    total, pos = 0, 0
    while pos < len(data):
        (magic,) = struct.unpack_from("<I", data, pos)
        if magic & 0xFFFFFFF0 == 0x184D2A50:  # a skippable frame
            pos += 8 + struct.unpack_from("<I", data, pos + 4)[0]
            continue
        if magic != 0xFD2FB528:
            raise ValueError("not a zstd frame")
        fhd = data[pos + 4]
        single = fhd & 0x20
        pos += 5 + (0 if single else 1) + (0, 1, 2, 4)[fhd & 3] + ((1 if single else 0), 2, 4, 8)[fhd >> 6]
        while True:
            header = data[pos] | data[pos + 1] << 8 | data[pos + 2] << 16
            pos += 3
            kind, size = (header >> 1) & 3, header >> 3
            total += size if kind in (0, 1) else 128 * 1024
            pos += 1 if kind == 1 else size
            if header & 1:
                break
        pos += 4 if fhd & 0x04 else 0
    return total


def _snappy_bound(data: bytes) -> int:
    if not data.startswith(_XERIAL_MAGIC):
        return uvarint_at(data, 0)[0]
    total, pos = 0, 16
    while pos < len(data):
        (n,) = struct.unpack_from(">i", data, pos)
        total += uvarint_at(data, pos + 4)[0]
        pos += 4 + n
    return total


_SNAPPY_INTO_MAX = 64 << 20
"""Without a limit, raw snappy data declaring up to this many bytes is decompressed into a buffer of that size."""


def _snappy_raw(data: bytes, limit: int | None) -> bytearray | bytes:
    """Raw snappy data decompressed: into a bytearray of its declared size (its preamble) when that is within `limit`
    (already checked) or `_SNAPPY_INTO_MAX`. Turning cramjam's own output buffer, or that bytearray, into bytes took
    0.7-0.9 ms per MB here, ten times the decompression (bench/README.md, one partition's produce rate)."""
    declared = uvarint_at(data, 0)[0]
    if declared > (_SNAPPY_INTO_MAX if limit is None else limit):
        return bytes(cramjam.snappy.decompress_raw(data))
    out = bytearray(declared)
    if cramjam.snappy.decompress_raw_into(data, out) != declared:
        raise ValueError(f"snappy data decompresses to other than the {declared} bytes it declares")
    return out


def _gunzip(data: bytes, limit: int) -> bytes:
    """gzip members one after another, as Java's GZIPInputStream reads them, stopping past `limit` bytes."""
    out = bytearray()
    while data:
        d = zlib.decompressobj(31)
        out += d.decompress(data, limit + 1 - len(out))
        if len(out) > limit:
            raise TooLarge(f"gzip data decompresses to more than {limit} bytes")
        if not d.eof:
            raise OSError("truncated gzip data")
        data = d.unused_data
    return bytes(out)


def decompress(codec: Compression, data: bytes, limit: int | None = None, *,
               readonly_copy: bool = True) -> bytes | bytearray:
    """The codec's data decompressed; past `limit` bytes TooLarge, found before decompressing it (from the
    frames' headers; gzip by decompressing in a stream that stops there). `readonly_copy=False`: a caller that only
    reads the result may get the bytearray it was decompressed into (snappy), not a bytes copy of it."""
    try:
        if codec == Compression.NONE:
            return data
        if limit is not None:
            if codec == Compression.GZIP:
                return _gunzip(bytes(data), limit)
            bound = {Compression.SNAPPY: _snappy_bound, Compression.LZ4: _lz4_bound,
                     Compression.ZSTD: _zstd_bound}[codec](bytes(data))
            if bound > limit:
                raise TooLarge(f"{codec.name.lower()} data may decompress to {bound} bytes, more than {limit}")
        if codec == Compression.GZIP:
            return bytes(cramjam.gzip.decompress(data))
        if codec == Compression.SNAPPY:
            if data.startswith(_XERIAL_MAGIC):  # Java's xerial framing: 16-byte header, then sized blocks
                out = bytearray()
                pos = 16
                while pos < len(data):
                    (n,) = struct.unpack_from(">i", data, pos)
                    out += _snappy_raw(data[pos + 4:pos + 4 + n], limit)
                    pos += 4 + n
                return bytes(out) if readonly_copy else out
            raw = _snappy_raw(data, limit)
            return bytes(raw) if readonly_copy and isinstance(raw, bytearray) else raw
        if codec == Compression.LZ4:
            return bytes(cramjam.lz4.decompress(data))
        if codec == Compression.ZSTD:
            return bytes(cramjam.zstd.decompress(data))
    except TooLarge:
        raise
    except (cramjam.DecompressionError, struct.error, OSError, ValueError, IndexError, zlib.error) as e:
        raise InvalidBatch(f"{codec.name.lower()} data does not decompress: {e}", decompression=True) from None
    raise InvalidBatch(f"unknown compression codec {int(codec)}", corrupt=False, decompression=True)


def compress(codec: Compression, data: bytes) -> bytes:
    if codec == Compression.NONE:
        return data
    if codec == Compression.GZIP:
        return gzip.compress(data, mtime=0)
    if codec == Compression.SNAPPY:
        return bytes(cramjam.snappy.compress_raw(data))
    if codec == Compression.LZ4:
        # Independent blocks: Java's KafkaLZ4BlockInputStream refuses linked ones (lz4's default)
        # with "Dependent block stream is unsupported".
        lz4 = cramjam.lz4.Compressor(block_linked=False)
        lz4.compress(data)
        return bytes(lz4.finish())
    if codec == Compression.ZSTD:
        return bytes(cramjam.zstd.compress(data))
    raise ValueError(f"unknown compression codec {codec}")


# --- records --------------------------------------------------------------------------------------

@dataclass(slots=True)
class Record:
    offset: int
    timestamp: int
    key: bytes | None
    value: bytes | None
    headers: list[tuple[str, bytes | None]] = field(default_factory=list)
    partition: int = -1  # set by whoever knows which partition the batch came from


@dataclass(slots=True)
class RecordBatch:
    header: BatchHeader
    records: list[Record]


def _read_bytes(stream: io.BytesIO, path: str) -> bytes | None:
    n = Varint._parse(stream, None, path)
    if n < 0:
        return None
    data = stream.read(n)
    if len(data) != n:
        raise InvalidBatch(f"record field of {n} bytes runs past the batch ({path})")
    return data


def batch_body(batch: bytes, header: BatchHeader | None = None, limit: int | None = None, *,
               readonly_copy: bool = True) -> bytes | bytearray:
    """The batch's records, decompressed (TooLarge past `limit` bytes; `readonly_copy` as for `decompress`)."""
    header = header or read_header(batch)
    codec = header.attributes & 0x07
    if codec > Compression.ZSTD:
        raise InvalidBatch(f"Unknown compression type id: {codec}", corrupt=False, decompression=True)
    return decompress(Compression(codec), batch[BATCH_OVERHEAD:header.size], limit, readonly_copy=readonly_copy)


def decode_batch(batch: bytes, body: bytes | None = None) -> RecordBatch:
    """Every record of one batch (decompressed, unless `body` is that already); control batches yield their
    control records."""
    header = read_header(batch)
    if body is None:
        body = batch_body(batch, header)
    stream = io.BytesIO(body)
    records = []
    log_append = header.timestamp_type == TimestampType.LOG_APPEND_TIME
    try:
        for _ in range(header.records_count):
            length = Varint._parse(stream, None, "record")
            start = stream.tell()
            stream.read(1)  # attributes, unused
            ts_delta = Varlong._parse(stream, None, "timestampDelta")
            off_delta = Varint._parse(stream, None, "offsetDelta")
            key = _read_bytes(stream, "key")
            value = _read_bytes(stream, "value")
            n_headers = Varint._parse(stream, None, "headers")
            if n_headers < 0 or n_headers > length:
                raise InvalidBatch(f"record claims {n_headers} headers")
            headers = []
            for _ in range(n_headers):
                hkey = _read_bytes(stream, "header key")
                hvalue = _read_bytes(stream, "header value")
                headers.append(((hkey or b"").decode("utf-8", "replace"), hvalue))
            if stream.tell() - start != length:
                raise InvalidBatch(f"record length {length} disagrees with its fields ({stream.tell() - start})")
            timestamp = header.max_timestamp if log_append else header.base_timestamp + ts_delta
            records.append(Record(header.base_offset + off_delta, timestamp, key, value, headers))
        if stream.tell() != len(body):
            raise InvalidBatch("Incorrect declared batch size, records still remaining in file")
    except InvalidBatch:
        raise
    except Exception as e:  # construct StreamError, varint overflow: all mean a malformed batch
        raise InvalidBatch(f"malformed record: {e}") from None
    return RecordBatch(header, records)


def _varint(n: int) -> bytes:
    s = io.BytesIO()
    Varint._build(n, s, None, "")
    return s.getvalue()


def _varlong(n: int) -> bytes:
    s = io.BytesIO()
    Varlong._build(n, s, None, "")
    return s.getvalue()


def _sized(data: bytes | None) -> bytes:
    if data is None:
        return _varint(-1)
    return _varint(len(data)) + data


def build_batch(records: list[dict[str, Any]], *, base_offset: int = 0,
                compression: Compression = Compression.NONE, producer_id: int = -1,
                producer_epoch: int = -1, base_sequence: int = -1, transactional: bool = False,
                control: bool = False, timestamp_type: TimestampType = TimestampType.CREATE_TIME,
                partition_leader_epoch: int = -1) -> bytes:
    """One v2 batch from dicts with key/value/headers/timestamp (ms); what a producer sends."""
    if not records:
        raise ValueError("a batch holds at least one record")
    base_ts = min(r.get("timestamp", 0) for r in records)
    max_ts = max(r.get("timestamp", 0) for r in records)
    body = bytearray()
    for i, r in enumerate(records):
        hdrs = r.get("headers") or []
        rec = bytearray(b"\x00")
        rec += _varlong(r.get("timestamp", 0) - base_ts) + _varint(i)
        rec += _sized(r.get("key")) + _sized(r.get("value"))
        rec += _varint(len(hdrs))
        for hk, hv in hdrs:
            rec += _sized(hk.encode("utf-8")) + _sized(hv)
        body += _varint(len(rec)) + rec
    payload = compress(compression, bytes(body))
    attributes = int(compression) | (int(timestamp_type) << 3) | (0x10 if transactional else 0) \
        | (0x20 if control else 0)
    after_crc = struct.pack(">hiqqqhii", attributes, len(records) - 1, base_ts, max_ts, producer_id,
                            producer_epoch, base_sequence, len(records)) + payload
    crc = crc32c.crc32c(after_crc)
    length = 4 + 1 + 4 + len(after_crc)
    return struct.pack(">qiibI", base_offset, length, partition_leader_epoch, MAGIC, crc) + after_crc



DELETE_HORIZON_FLAG = 0x40
"""Batch attribute bit (KIP-534): the base timestamp holds the delete horizon the log cleaner set."""


def rebuild_batch(header: BatchHeader, records: list[Record], delete_horizon_ms: int = -1) -> bytes:
    """A batch holding only `records` of the batch `header` describes, as Kafka's log cleaner writes it
    (MemoryRecords.filterTo): the same base and last offset, producer fields, epoch, codec and timestamp
    type; each record keeps its offset and timestamp; with `delete_horizon_ms` >= 0 the base timestamp is
    that horizon and the delete-horizon attribute is set. No records: the bare header Kafka keeps to hold
    a producer's last sequence or the round's last offset."""
    log_append = header.timestamp_type == TimestampType.LOG_APPEND_TIME
    attributes = header.attributes & ~DELETE_HORIZON_FLAG
    if not records:
        body, base_ts, max_ts, attributes = b"", header.max_timestamp, header.max_timestamp, attributes & ~0x07
    else:
        base_ts = delete_horizon_ms if delete_horizon_ms >= 0 else records[0].timestamp
        max_ts = header.max_timestamp if log_append else max(r.timestamp for r in records)
        raw = bytearray()
        for r in records:
            rec = bytearray(b"\x00")
            rec += _varlong(r.timestamp - base_ts) + _varint(r.offset - header.base_offset)
            rec += _sized(r.key) + _sized(r.value) + _varint(len(r.headers))
            for hk, hv in r.headers:
                rec += _sized(hk.encode("utf-8")) + _sized(hv)
            raw += _varint(len(rec)) + rec
        body = compress(header.compression, bytes(raw))
        if delete_horizon_ms >= 0:
            attributes |= DELETE_HORIZON_FLAG
    after_crc = struct.pack(">hiqqqhii", attributes, header.last_offset_delta, base_ts, max_ts, header.producer_id,
                            header.producer_epoch, header.base_sequence, len(records)) + body
    return struct.pack(">qiibI", header.base_offset, 9 + len(after_crc), header.partition_leader_epoch, MAGIC,
                       crc32c.crc32c(after_crc)) + after_crc


def delete_horizon(header: BatchHeader) -> int:
    """The delete horizon the cleaner set on a batch, or -1."""
    return header.base_timestamp if header.attributes & DELETE_HORIZON_FLAG else -1
