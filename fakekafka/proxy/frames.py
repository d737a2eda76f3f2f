"""What the proxy reads of a frame without decoding it: the request header's fixed part and client id, where a
Produce request's acks sit, a response's correlation id. Pure functions over bytes, so the forwarding path
parses no body and an API the wire layer does not know still passes through."""

from __future__ import annotations

import struct
from dataclasses import dataclass

from fakekafka.wire import ApiKey
from fakekafka.wire.messages import API_MODULES
from fakekafka.wire.primitives import uvarint_at
from fakekafka.wire.protocol import request_header_version

__all__ = ["FrameError", "RequestHead", "produce_acks", "read_request_head"]

_HEAD = struct.Struct(">hhi")
_I16 = struct.Struct(">h")


class FrameError(ValueError):
    """A frame too short or inconsistent to be a Kafka request."""


@dataclass(frozen=True, slots=True)
class RequestHead:
    api_key: int
    api_version: int
    correlation_id: int
    client_id: str | None
    body_offset: int | None
    """Where the body starts in the frame; None for an API or version the wire layer does not know (its
    header's tagged fields cannot be told from its body)."""

    @property
    def known(self) -> bool:
        spec = API_MODULES.get(self.api_key)
        return spec is not None and spec[2] <= self.api_version <= spec[3]

    @property
    def api_name(self) -> str:
        spec = API_MODULES.get(self.api_key)
        return spec[0] if spec else f"ApiKey{self.api_key}"


def _uvarint(frame: bytes | memoryview, pos: int) -> tuple[int, int]:
    try:
        return uvarint_at(frame, pos, 5)
    except ValueError:
        raise FrameError("truncated or overlong varint in the request header") from None


def read_request_head(frame: bytes | memoryview) -> RequestHead:
    """The header of a request frame (size prefix excluded). The client id is a nullable int16-length string
    in header versions 1 and 2 alike, so it is read for any API; only a known API's header version says
    whether tagged fields follow."""
    if len(frame) < _HEAD.size:
        raise FrameError(f"a request of {len(frame)} bytes is shorter than a request header")
    api_key, version, correlation_id = _HEAD.unpack_from(frame)
    if version < 0:
        raise FrameError(f"negative API version {version}")
    spec = API_MODULES.get(api_key)
    known = spec is not None and spec[2] <= version <= spec[3]
    header_version = request_header_version(api_key, version) if known else 1
    pos = _HEAD.size
    client_id = None
    if header_version >= 1:
        if len(frame) < pos + 2:
            raise FrameError("the request header ends before its client id")
        (length,) = _I16.unpack_from(frame, pos)
        pos += 2
        if length >= 0:
            if len(frame) < pos + length:
                raise FrameError("the client id runs past the end of the request")
            client_id = bytes(frame[pos:pos + length]).decode("utf-8", "replace")
            pos += length
    if not known:
        return RequestHead(api_key, version, correlation_id, client_id, None)
    if header_version >= 2:
        count, pos = _uvarint(frame, pos)
        for _ in range(count):
            _tag, pos = _uvarint(frame, pos)
            size, pos = _uvarint(frame, pos)
            pos += size
        if pos > len(frame):
            raise FrameError("the request header's tagged fields run past the end of the request")
    return RequestHead(api_key, version, correlation_id, client_id, pos)


def produce_acks(frame: bytes | memoryview, head: RequestHead) -> int | None:
    """A Produce request's acks (0: the broker sends no answer, so none is waited for), read past its
    transactional id; None when it cannot be read (an unknown version: an answer is expected)."""
    if head.api_key != ApiKey.PRODUCE or head.body_offset is None or head.api_version < 3:
        return None
    pos = head.body_offset
    try:
        if head.api_version >= 9:  # compact nullable string: length + 1 as an unsigned varint
            length, pos = _uvarint(frame, pos)
            pos += max(length - 1, 0)
        else:
            (length,) = _I16.unpack_from(frame, pos)
            pos += 2 + max(length, 0)
        (acks,) = _I16.unpack_from(frame, pos)
    except (struct.error, FrameError):
        return None
    return acks
