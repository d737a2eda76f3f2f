"""The walk of a decompressed batch's records (`validate._walk_fields`) done a field at a time for all records at
once with numpy, for batches of many records.

One Produce of a client that keeps a single request in flight per partition (franz-go, the Java producer with
idempotence) is answered before the next is sent, so on one partition the rate is a batch per round trip, and
walking 7,600 records of 100 bytes in Python, about 6 ms, was most of it. Here the records' starts are found in
one Python loop (each length is 1 or 2 bytes below 8 KiB), and then each field (attributes, timestamp and offset
deltas, key and value lengths, header count and headers) is read for every record with a few array operations.

It only ever says "well formed": `records_well_formed` is True only when every check of the exact walk holds
(each varint within its bytes, no negative record length or header key, every record's fields filling exactly
its declared length, the records filling the body exactly); anything else, including what it does not handle (a
record length of 3 bytes or more, more than `MAX_HEADERS` headers), is False, and the exact walk runs to find the
error and its message. Without numpy it is always False.
"""

from __future__ import annotations

from typing import Any

__all__ = ["MAX_HEADERS", "MIN_RECORDS", "RUN", "records_well_formed"]

MIN_RECORDS = 128
"""Batches of fewer records are walked in Python: a few dozen array operations cost about what 128 records do."""
RUN = 8
"""Records of one size in a row after which the next are looked for as a run of that size (`_record_heads`)."""
MAX_HEADERS = 32
"""Records with more headers than this are left to the exact walk (one pass over the records per header)."""

_np: Any = None
_missing = False


def _numpy() -> Any:
    """numpy, imported on the first large batch (not at start-up: about 0.1 s); None without it."""
    global _np, _missing
    if _np is None and not _missing:
        try:
            import numpy
        except ImportError:
            _missing = True
        else:
            _np = numpy
    return _np


def _record_heads(np: Any, data: Any, body: bytes | bytearray, count: int) -> Any:
    """Where each of `count` records begins (its length), as an array; None where a length is negative, of 3
    bytes or more, or past the end. Found one record at a time in Python, except that after `RUN` records of one
    size in a row the following records are taken to be that size too, as far as their length bytes are the same,
    in one array comparison (records of one size, most batches of many records, cost next to nothing). Proposed
    only: `records_well_formed` checks that the records they begin follow one another and fill the body."""
    end = len(body)
    pieces: list[Any] = []
    heads: list[int] = []
    pos = i = same = 0
    last = b = c = -1  # the size and length bytes of the record before
    want = RUN
    try:
        while i < count:
            if same >= want:
                fit = min(count - i, (end - pos) // last)
                at = pos + last * np.arange(fit, dtype=np.int64)
                alike = data[at] == b  # the length bytes of the records before
                if b >= 0x80:
                    alike &= data[at + 1] == c
                run = fit if alike.all() else int(alike.argmin())
                if heads:
                    pieces.append(np.array(heads, dtype=np.int64))
                    heads = []
                pieces.append(at[:run])
                pos += run * last
                i += run
                if run < want:  # short runs: look for the next one later, so the comparisons cost little
                    want *= 2
                same = 0
                continue
            b = body[pos]
            c = -1
            if b < 0x80:
                raw, size = b, 1
            else:
                c = body[pos + 1]
                if c >= 0x80:
                    return None
                raw, size = (b & 0x7F) | (c << 7), 2
            if raw & 1:  # zigzag: a negative length
                return None
            size += raw >> 1
            same = same + 1 if size == last else 0
            last = size
            heads.append(pos)
            pos += size
            i += 1
    except IndexError:
        return None
    if pos != end:
        return None
    if heads:
        pieces.append(np.array(heads, dtype=np.int64))
    return pieces[0] if len(pieces) == 1 else np.concatenate(pieces)


def _varint_sizes(np: Any, data: Any, at: Any, most: int) -> Any:
    """Bytes taken by the varint at each of `at` (an int or an array); None where one runs past `most` bytes."""
    more = data.take(at, mode="clip") >= 0x80
    if not more.any():
        return 1
    size = 1 + more.astype(np.int64)
    for j in range(1, most):
        more &= data.take(at + j, mode="clip") >= 0x80
        if not more.any():
            return size
        size += more
    return None


def _varints(np: Any, data: Any, at: Any, most: int) -> tuple[Any, Any] | None:
    """(the zigzag varints at `at`, the bytes each takes); None where one runs past `most` bytes."""
    b = data.take(at, mode="clip")
    more = b >= 0x80
    if not more.any():
        raw = b.astype(np.int64)
        return (raw >> 1) ^ -(raw & 1), 1
    raw = (b & 0x7F).astype(np.int64)
    size = 1 + more.astype(np.int64)
    for j in range(1, most):
        b = data.take(at + j, mode="clip")
        raw |= ((b & 0x7F).astype(np.int64) << (7 * j)) * more
        more &= b >= 0x80
        if not more.any():
            return (raw >> 1) ^ -(raw & 1), size
        size += more
    return None


def records_well_formed(body: bytes | bytearray, count: int, max_record_bytes: int | None = None) -> bool:
    """True when the exact walk (`validate._walk_fields`) would find all `count` records of `body` well formed;
    False when it might not (it then decides). Reads past a record's end are clipped to the body and show up as a
    record whose fields do not end where it does."""
    np = _numpy()
    if np is None or count < 1:
        return False
    data = np.frombuffer(body, dtype=np.uint8)
    heads = _record_heads(np, data, body, count)
    if heads is None or len(heads) != count:
        return False
    first = data[heads]  # each record's length: 1 or 2 bytes, not negative
    two = first >= 0x80
    raw = (first & 0x7F).astype(np.int64)
    if two.any():
        second = data.take(heads + 1, mode="clip")
        if (second[two] >= 0x80).any():
            return False
        raw |= second.astype(np.int64) << 7 & -two.astype(np.int64)
    if (raw & 1).any():
        return False
    start = heads + 1 + two
    stop = start + (raw >> 1)
    if int(stop[-1]) != len(body) or (stop[:-1] != heads[1:]).any():  # one after another, filling the body
        return False
    if max_record_bytes is not None and int((raw >> 1).max()) > max_record_bytes:
        return False
    pos = start + 1  # attributes
    for most in (10, 5):  # timestampDelta (a varlong), offsetDelta: skipped over
        size = _varint_sizes(np, data, pos, most)
        if size is None:
            return False
        pos = pos + size
    for _ in range(2):  # key, value: a length (negative: null), then its bytes
        read = _varints(np, data, pos, 5)
        if read is None:
            return False
        n, size = read
        pos = pos + size + np.maximum(n, 0)
    read = _varints(np, data, pos, 5)
    if read is None:
        return False
    headers, size = read
    pos = pos + size
    if headers.any():
        if int(headers.min()) < 0 or (headers > stop - pos).any() or int(headers.max()) > MAX_HEADERS:
            return False
        for h in range(int(headers.max())):
            rows = np.flatnonzero(headers > h)
            p = pos[rows]
            read = _varints(np, data, p, 5)  # the header's key: a length, not negative
            if read is None or int(read[0].min()) < 0:
                return False
            p = p + read[1] + read[0]
            read = _varints(np, data, p, 5)  # its value: a length (negative: null)
            if read is None:
                return False
            pos[rows] = p + read[1] + np.maximum(read[0], 0)
    return bool((pos == stop).all())
