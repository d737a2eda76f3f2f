"""Passing a large answer through while it arrives, for the one that may name a broker at its end.

A Fetch answer of v16+ may end with the node endpoints of KIP-951 (top-level tagged field 0), which the proxy
must rewrite to its own listeners; everything before them (the record sets, most of its bytes) is passed on
untouched. `FetchTail` follows the answer's structure over the bytes as they come, reading only counts and
lengths and skipping the record sets, to find where the top-level tagged fields begin; the proxy forwards
the bytes before that point at once and holds only the tail.

The answer's size prefix has gone to the client before the tail is read, so the rewritten tail must keep the
tail's length (`rewrite_tail`). Ports are four bytes whatever their value, so only the host names change the
length: the same name (the usual loopback case) keeps it exactly; a shorter one is made up by an overlong
varint (the tagged-field count) or by a padding tagged field with a tag no Kafka version defines, which every
client skips as the protocol asks of unknown tags; a longer one cannot fit, and then the node endpoints are
left out of that answer (the client asks for metadata instead, as for an answer without them).
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Generator, Iterable

from fakekafka.proxy.frames import FrameError
from fakekafka.wire.primitives import uvarint_at, uvarint_bytes

__all__ = ["PAD_TAG", "FetchTail", "overlong_uvarint", "rewrite_tail"]

FIRST_TAILED = 16
"""The first Fetch version whose answer may carry node endpoints."""
PAD_TAG = 0x7FFF
"""The tag of the padding field that keeps a shortened tail's length (tags 0.. are Kafka's; this one is far past
any it defines)."""
NODE_ENDPOINTS_TAG = 0
_I32 = struct.Struct(">i")

Layout = Generator[int, bytes | None, None]
"""Yields n > 0 to read the next n bytes (sent back), n < 0 to skip -n bytes; returns at the tail."""


def _uvarint() -> Generator[int, bytes | None, int]:
    value = shift = 0
    for _ in range(5):
        got = yield 1
        byte = got[0]  # type: ignore[index]
        value |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return value
        shift += 7
    raise FrameError("an overlong varint in a Fetch answer")


def _skip_tagged() -> Generator[int, bytes | None, None]:
    count = yield from _uvarint()
    for _ in range(count):
        yield from _uvarint()
        size = yield from _uvarint()
        if size:
            yield -size


def fetch_layout(version: int) -> Layout:
    """A flexible (v12+) Fetch answer from its size prefix up to its top-level tagged fields."""
    yield -8  # size, correlation id
    yield from _skip_tagged()  # response header v1
    yield -10  # throttle_time_ms, error_code, session_id
    topics = (yield from _uvarint()) - 1
    for _ in range(max(topics, 0)):
        if version >= 13:
            yield -16  # topic id
        else:
            name = (yield from _uvarint()) - 1
            if name > 0:
                yield -name
        partitions = (yield from _uvarint()) - 1
        for _ in range(max(partitions, 0)):
            yield -30  # partition_index, error_code, high_watermark, last_stable_offset, log_start_offset
            aborted = (yield from _uvarint()) - 1
            for _ in range(max(aborted, 0)):
                yield -16  # producer_id, first_offset
                yield from _skip_tagged()
            yield -4  # preferred_read_replica
            records = (yield from _uvarint()) - 1
            if records > 0:
                yield -records
            yield from _skip_tagged()
        yield from _skip_tagged()


class FetchTail:
    """Where a Fetch answer's top-level tagged fields begin, found over its bytes as they arrive."""

    def __init__(self, version: int) -> None:
        self._layout = fetch_layout(version)
        self._want = next(self._layout)
        self._got = bytearray()
        self.found = False

    def feed(self, data: memoryview) -> int:
        """How many of `data`'s bytes come before the tail (all of them until it is found)."""
        if self.found:
            return 0
        pos, end = 0, len(data)
        while pos < end:
            want = self._want
            if want < 0:
                step = min(-want, end - pos)
                pos += step
                if step < -want:
                    self._want = want + step
                    return pos
                sent = None
            else:
                step = min(want - len(self._got), end - pos)
                self._got += data[pos:pos + step]
                pos += step
                if len(self._got) < want:
                    return pos
                sent = bytes(self._got)
                self._got.clear()
            try:
                self._want = self._layout.send(sent)
            except StopIteration:
                self.found = True
                return pos
        return pos


def overlong_uvarint(value: int, width: int) -> bytes:
    """`value` as an unsigned varint of exactly `width` bytes (1-5): the same value to every decoder."""
    out = bytearray()
    for _ in range(width - 1):
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    if value > 0x7F:
        raise ValueError("the value needs more bytes")
    out.append(value)
    return bytes(out)


def _read_tagged(tail: bytes) -> list[tuple[int, bytes]]:
    try:
        count, pos = uvarint_at(tail, 0, 5)
        fields = []
        for _ in range(count):
            tag, pos = uvarint_at(tail, pos, 5)
            size, pos = uvarint_at(tail, pos, 5)
            if pos + size > len(tail):
                raise FrameError("a tagged field runs past the end of the answer")
            fields.append((tag, tail[pos:pos + size]))
            pos += size
    except ValueError as e:
        raise FrameError(f"the answer's tagged fields do not decode: {e}") from None
    if pos != len(tail):
        raise FrameError(f"{len(tail) - pos} bytes follow the answer's tagged fields")
    return fields


def _compact_string(data: bytes, pos: int) -> tuple[str | None, int]:
    length, pos = uvarint_at(data, pos, 5)
    if length == 0:
        return None, pos
    end = pos + length - 1
    if end > len(data):
        raise FrameError("a node endpoint's string runs past its field")
    return data[pos:end].decode("utf-8"), end


def _compact_bytes(text: str | None) -> bytes:
    if text is None:
        return b"\x00"
    raw = text.encode("utf-8")
    return uvarint_bytes(len(raw) + 1) + raw


def _rewrite_endpoints(data: bytes, rewrite: Callable[[int, str, int], tuple[str, int]]) -> bytes:
    try:
        count, pos = uvarint_at(data, 0, 5)
        out = [uvarint_bytes(count)]
        for _ in range(max(count - 1, 0)):
            (node_id,) = _I32.unpack_from(data, pos)
            host, pos = _compact_string(data, pos + 4)
            (port,) = _I32.unpack_from(data, pos)
            start = pos + 4
            _rack, pos = _compact_string(data, start)
            tags, pos = uvarint_at(data, pos, 5)
            for _ in range(tags):
                _tag, pos = uvarint_at(data, pos, 5)
                size, pos = uvarint_at(data, pos, 5)
                pos += size
            if host is not None and node_id >= 0:
                host, port = rewrite(node_id, host, port)
            out += [_I32.pack(node_id), _compact_bytes(host), _I32.pack(port), data[start:pos]]
    except (ValueError, struct.error, UnicodeDecodeError) as e:
        raise FrameError(f"the answer's node endpoints do not decode: {e}") from None
    if pos != len(data):
        raise FrameError("the answer's node endpoints do not fill their tagged field")
    return b"".join(out)


def _fit(fields: list[tuple[int, bytes]], length: int) -> bytes | None:
    """Tagged fields encoded in exactly `length` bytes, padded as the module says; None if they are longer."""
    body = b"".join(uvarint_bytes(tag) + uvarint_bytes(len(data)) + data for tag, data in fields)
    count = len(fields)
    gap = length - len(uvarint_bytes(count)) - len(body)
    if gap < 0:
        return None
    if len(uvarint_bytes(count)) + gap <= 5:
        return overlong_uvarint(count, len(uvarint_bytes(count)) + gap) + body
    room = length - len(uvarint_bytes(count + 1)) - len(body) - len(uvarint_bytes(PAD_TAG))
    size = room - 1 if room - 1 < 0x80 else room - 5  # the padding's own length: one byte, or five (overlong)
    return (uvarint_bytes(count + 1) + body + uvarint_bytes(PAD_TAG) + overlong_uvarint(size, room - size)
            + bytes(size))


def rewrite_tail(tail: bytes, hosts: Iterable[bytes], rewrite: Callable[[int, str, int], tuple[str, int]]
                 ) -> tuple[bytes, str | None]:
    """The answer's top-level tagged fields with the node endpoints rewritten, in exactly `len(tail)` bytes;
    and a note when the endpoints had to be left out. A tail that names no upstream host is returned as it
    is."""
    if not any(host in tail for host in hosts):
        return tail, None
    fields = _read_tagged(tail)
    rewritten = [(tag, _rewrite_endpoints(data, rewrite) if tag == NODE_ENDPOINTS_TAG else data)
                 for tag, data in fields]
    fitted = _fit(rewritten, len(tail))
    if fitted is not None:
        return fitted, None
    kept = [(tag, data) for tag, data in fields if tag != NODE_ENDPOINTS_TAG]
    fitted = _fit(kept, len(tail))
    if fitted is None:  # cannot happen: leaving a field out only shortens the fields
        raise FrameError("the answer's tagged fields cannot be rewritten in their length")
    return fitted, "the proxy's host name is longer than the upstream's, so the node endpoints were left out"
