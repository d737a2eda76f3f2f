"""What a produced `records` field must be before the log stores it: Kafka's LogValidator's checks.

Kafka (4.4.0) checks a Produce v3+ partition's bytes in three places, and the answer depends on which:
the request handler iterates the batches (the first batch's framing: size field below 14 or a magic
outside 0..2 is CORRUPT_MESSAGE with the reason on the wire; no complete batch, a magic 0/1 batch or a
second complete batch is INVALID_RECORD), the log's append analyses each batch (a base offset other
than 0 is INVALID_RECORD, bytes past the batch are CORRUPT_MESSAGE, too large is MESSAGE_TOO_LARGE, a
bad CRC is CORRUPT_MESSAGE), and LogValidator reads the records (codec ids 5-7 and data that does not
decompress are UNKNOWN_SERVER_ERROR, as Kafka's IllegalArgumentException/KafkaException map; a record
count that disagrees with the offset range, or records that do not fill the batch exactly, are
INVALID_RECORD). Every answer here was taken from a real broker with raw frames
(`tests/unit/test_batch_validation.py`, which also runs with `--kafka-real`). Inner offset deltas are not
checked: Kafka accepts an uncompressed batch whose deltas skip (and rewrites a compressed one).

Every record is walked field by field in place, as Kafka's skipKeyValueIterator reads a compressed batch, nothing
decoded, with one check more that Kafka's full read of an uncompressed batch (DefaultRecord.readFrom) makes: each
record's fields fill the length it declares. A batch of many records is walked a field at a time for all of them
(fakekafka/model/record_walk.py), falling back to the walk here for the error whenever that does not find every
record well formed. Compressed batches are decompressed first, up to MAX_DECOMPRESSED_BATCH (listed in
compat/KNOWN_DIFFERENCES.md).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

import crc32c

from fakekafka.model.record_walk import MIN_RECORDS, records_well_formed
from fakekafka.wire import ErrorCode
from fakekafka.wire.primitives import varint_at
from fakekafka.wire.records import (
    BATCH_OVERHEAD,
    BatchHeader,
    Compression,
    InvalidBatch,
    TooLarge,
    batch_body,
    read_header,
)

__all__ = [
    "MAX_DECOMPRESSED_BATCH",
    "Refused",
    "check_batch",
    "first_batch_refusal",
    "request_refusal",
    "split_produced",
]

_LOG_OVERHEAD = 12
"""offset (8) + size (4): what precedes every batch's size-counted bytes."""
_HEADER_UP_TO_MAGIC = 17
_MIN_RECORD_OVERHEAD = 14
"""Kafka's smallest size field (a v0 message's overhead); below it the stream is corrupt."""
_CRC_START = 21
_CODECS = frozenset(int(c) for c in Compression)
MAX_DECOMPRESSED_BATCH = 128 << 20
"""The most a compressed batch's records may take decompressed (fakekafka's own bound: Kafka streams through
a batch and has none). It is decompressed whole to be checked, so a small batch of zeros could otherwise
take gigabytes; past it the batch is INVALID_RECORD, found from its frames' headers before decompressing."""


@dataclass(frozen=True, slots=True)
class Refused:
    """Why a partition's data is refused: the error code, the reason, and whether Kafka's answer carries
    the reason as the partition's error_message (only for errors found while reading the first batch's
    size and magic)."""

    error: ErrorCode
    message: str
    shown: bool = False


def _frame(data: bytes | memoryview, pos: int) -> tuple[int, int] | Refused | None:
    """(size field, magic) of the batch at `pos`, None when the bytes left do not hold a whole one, or why
    they are corrupt: Kafka's batch iterator's rules."""
    left = len(data) - pos
    if left < _HEADER_UP_TO_MAGIC:
        return None
    size = int.from_bytes(data[pos + 8 : pos + 12], "big", signed=True)
    if size < _MIN_RECORD_OVERHEAD:
        return Refused(
            ErrorCode.CORRUPT_MESSAGE,
            f"Record size {size} is less than the minimum record overhead ({_MIN_RECORD_OVERHEAD})",
            True,
        )
    magic = int.from_bytes(data[pos + 16 : pos + 17], "big", signed=True)
    if not 0 <= magic <= 2:
        return Refused(ErrorCode.CORRUPT_MESSAGE, f"Invalid magic found in record: {magic}", True)
    if _LOG_OVERHEAD + size > left:
        return None
    return size, magic


def request_refusal(partitions: Iterable[bytes | memoryview | None], version: int) -> Refused | None:
    """Why Kafka fails a whole Produce request, every partition with the same error and nothing appended:
    its request handler reads each partition's first batch header before appending (a size below 14 or a
    magic outside 0..2 is CORRUPT_MESSAGE with the reason), and for v3-6 asks the batch's codec, which for ids
    5-7 throws out of the request (UNKNOWN_SERVER_ERROR). Checked against Kafka 4.4 with raw frames."""
    for records in partitions:
        if not records:
            continue
        first = _frame(records, 0)
        if isinstance(first, Refused):
            return first
        if first is not None and version < 7 and first[1] == 2 and len(records) >= BATCH_OVERHEAD:
            codec = records[22] & 0x07
            if codec not in _CODECS:
                return Refused(ErrorCode.UNKNOWN_SERVER_ERROR, f"Unknown compression type id: {codec}")
    return None


def first_batch_refusal(records: bytes | memoryview | None, version: int) -> Refused | None:
    """Produce v3-6 may not carry zstd batches (Kafka's UNSUPPORTED_COMPRESSION_TYPE, per partition)."""
    if version >= 7 or not records or len(records) < BATCH_OVERHEAD or records[16] != 2:
        return None
    if records[22] & 0x07 == Compression.ZSTD:
        return Refused(
            ErrorCode.UNSUPPORTED_COMPRESSION_TYPE,
            f"Produce requests with version {version} are not allowed to use ZStandard compression",
        )
    return None


def split_produced(records: bytes | memoryview) -> tuple[BatchHeader, bytes | memoryview] | Refused:
    """The one v2 batch of a Produce v3+ partition, or why the bytes are refused."""
    first = _frame(records, 0)
    if first is None:
        return Refused(
            ErrorCode.INVALID_RECORD, "Produce requests with version 3 and up must have at least one record batch"
        )
    if isinstance(first, Refused):
        return first
    size, magic = first
    if magic != 2:
        return Refused(
            ErrorCode.INVALID_RECORD,
            "Produce requests with version 3 and up are only allowed to contain record batches with magic version 2",
        )
    end = _LOG_OVERHEAD + size
    if end < len(records):
        second = _frame(records, end)
        if isinstance(second, tuple):
            return Refused(
                ErrorCode.INVALID_RECORD,
                "Produce requests with version 3 and up are only allowed to "
                "contain exactly one record batch per partition",
            )
        why = second.message if second is not None else f"{len(records) - end} bytes follow the record batch"
        return Refused(ErrorCode.CORRUPT_MESSAGE, why)
    if end < BATCH_OVERHEAD:
        return Refused(
            ErrorCode.CORRUPT_MESSAGE,
            f"Record batch size {size} is below the v2 batch header's {BATCH_OVERHEAD - _LOG_OVERHEAD} bytes",
        )
    batch = records if end == len(records) else records[:end]
    return read_header(batch), batch


def check_batch(
    header: BatchHeader, batch: bytes | memoryview, max_message_bytes: int, max_record_bytes: int | None = None
) -> Refused | None:
    """The log's and LogValidator's checks of one v2 batch from a client, in Kafka's order; None if it may
    be stored. `max_record_bytes` is the topic's max.decompressed.message.bytes: a record of a compressed
    batch declaring a larger size is INVALID_RECORD (Kafka's DefaultRecord.readFrom refuses it before
    reading it; an uncompressed batch is bounded by max.message.bytes alone)."""
    if header.base_offset != 0:
        return Refused(
            ErrorCode.INVALID_RECORD, f"The baseOffset of the record batch should be 0, but it is {header.base_offset}"
        )
    if len(batch) > max_message_bytes:
        return Refused(
            ErrorCode.MESSAGE_TOO_LARGE,
            f"The batch of {len(batch)} bytes exceeds max.message.bytes {max_message_bytes}",
        )
    actual = crc32c.crc32c(batch[_CRC_START:])
    if actual != header.crc:
        return Refused(
            ErrorCode.CORRUPT_MESSAGE, f"Record batch is corrupt (stored crc = {header.crc}, computed crc = {actual})"
        )
    codec = header.attributes & 0x07
    if codec not in _CODECS:
        return Refused(ErrorCode.UNKNOWN_SERVER_ERROR, f"Unknown compression type id: {codec}")
    count = header.records_count
    if count < 0:
        return Refused(ErrorCode.INVALID_RECORD, f"Invalid reported count for record batch: {count}")
    if header.last_offset_delta < 0:
        return Refused(ErrorCode.INVALID_RECORD, f"Batch has an invalid offset range: [0, {header.last_offset_delta}]")
    if count != header.last_offset_delta + 1:
        return Refused(
            ErrorCode.INVALID_RECORD,
            f"Inconsistent batch offset range [0, {header.last_offset_delta}] and count of records {count}",
        )
    if codec == Compression.NONE:  # Kafka reads every record of it in full (DefaultRecord.readFrom)
        records = bytes(batch[BATCH_OVERHEAD:])
        if count >= MIN_RECORDS and records_well_formed(records, count):
            return None
        return _walk_fields(records, count)
    data = bytes(batch)
    try:
        body = batch_body(data, header, MAX_DECOMPRESSED_BATCH, readonly_copy=False)
    except TooLarge as e:
        return Refused(ErrorCode.INVALID_RECORD, str(e))
    except InvalidBatch as e:
        return Refused(ErrorCode.UNKNOWN_SERVER_ERROR, str(e))
    if count >= MIN_RECORDS and records_well_formed(body, count, max_record_bytes):
        return None  # the same walk, a field at a time for every record (fakekafka/model/record_walk.py)
    return _walk_fields(body, count, max_record_bytes)


def _walk_fields(body: bytes | bytearray, count: int, max_record_bytes: int | None = None) -> Refused | None:
    """`count` records that end exactly where `body` does, each one's fields filling its declared length: what
    Kafka's skipKeyValueIterator reads of a compressed batch (attributes, timestamp and offset deltas, key and
    value lengths skipped over, header count, each header key's length not negative), walked in place. Nothing
    is decoded or kept: the offset deltas only decide whether Kafka rewrites the batch, and timestamps and keys
    are checked from the batch header and by the compacted-topic check."""
    pos, end = 0, len(body)
    try:
        for i in range(count):
            if pos >= end:
                return Refused(ErrorCode.INVALID_RECORD, f"Found {i} records where the batch declares {count}")
            b = body[pos]
            if b < 0x80:  # one length byte (records under 64 bytes), then two (under 8 KiB): no call
                length, pos = (b >> 1) ^ -(b & 1), pos + 1
            elif body[pos + 1] < 0x80:
                raw = (b & 0x7F) | (body[pos + 1] << 7)
                length, pos = (raw >> 1) ^ -(raw & 1), pos + 2
            else:
                length, pos = varint_at(body, pos, 5)
            if max_record_bytes is not None and length > max_record_bytes:
                return Refused(
                    ErrorCode.INVALID_RECORD,
                    f"Record of {length} bytes is above max.decompressed.message.bytes {max_record_bytes}",
                )
            stop = pos + length
            if length < 0 or stop > end:
                return Refused(
                    ErrorCode.INVALID_RECORD, f"Invalid record size: {length} bytes at {pos} of a {end}-byte batch"
                )
            p = pos + 1  # attributes
            last = p + 9  # timestampDelta: a varlong (at most 10 bytes) skipped over
            while body[p] >= 0x80:
                p += 1
                if p > last:
                    raise ValueError("overlong varlong")
            p += 1
            last = p + 4  # offsetDelta: a varint (at most 5 bytes) skipped over
            while body[p] >= 0x80:
                p += 1
                if p > last:
                    raise ValueError("overlong varint")
            p += 1
            for _ in (0, 1):  # key, value: a length (negative: null), then its bytes
                b = body[p]
                if b < 0x80:
                    n, p = (b >> 1) ^ -(b & 1), p + 1
                elif body[p + 1] < 0x80:
                    raw = (b & 0x7F) | (body[p + 1] << 7)
                    n, p = (raw >> 1) ^ -(raw & 1), p + 2
                else:
                    n, p = varint_at(body, p, 5)
                if n > 0:
                    p += n
            b = body[p]
            if b < 0x80:
                headers, p = (b >> 1) ^ -(b & 1), p + 1
            else:
                headers, p = varint_at(body, p, 5)
            if headers < 0 or headers > stop - p:
                return Refused(ErrorCode.INVALID_RECORD, f"Found invalid number of record headers {headers}")
            for _ in range(headers):
                n, p = varint_at(body, p, 5)
                if n < 0:
                    return Refused(ErrorCode.INVALID_RECORD, f"Invalid negative header key size {n}")
                p += n
                n, p = varint_at(body, p, 5)
                if n > 0:
                    p += n
            if p != stop:
                return Refused(
                    ErrorCode.INVALID_RECORD,
                    f"Invalid record size: expected to read {length} bytes in "
                    f"record payload, but instead read {p - pos}",
                )
            pos = stop
    except (IndexError, ValueError):
        return Refused(ErrorCode.INVALID_RECORD, "Found invalid record structure")
    if pos != end:
        return Refused(ErrorCode.INVALID_RECORD, "Incorrect declared batch size, records still remaining in file")
    return None
