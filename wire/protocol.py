"""Requests and responses as bytes <-> containers; no I/O.

A frame here is what follows the 4-byte size prefix. Malformed bytes from a peer always surface as
`DecodeError`, whatever construct or the decoder tripped over, so the server has one thing to catch.
"""

from __future__ import annotations

import io
import struct
from dataclasses import dataclass
from typing import Any

from construct import ConstructError, Container

from fakekafka.wire.messages import API_MODULES, api_module
from fakekafka.wire.messages.request_header import RequestHeaderV0, RequestHeaderV1, RequestHeaderV2
from fakekafka.wire.messages.response_header import ResponseHeaderV0, ResponseHeaderV1
from fakekafka.wire.primitives import Encoded

__all__ = [
    "DecodeError", "Request", "UnknownApiKey", "decode_request", "decode_request_header",
    "encode_request", "encode_response", "decode_response", "is_flexible", "request_struct",
    "response_struct", "parse_body", "encode_response_chunks", "response_part", "encode_part", "encode_array",
]

API_VERSIONS_KEY = 18
_HEAD = struct.Struct(">hhi")


class DecodeError(Exception):
    """Bytes from a peer that are not a valid Kafka message: says what was wrong and where."""

    def __init__(self, what: str, where: str = "", offset: int | None = None) -> None:
        self.what = what
        self.where = where
        self.offset = offset
        at = f" at byte {offset}" if offset is not None else ""
        super().__init__(f"{what}{' in ' + where if where else ''}{at}")


class UnknownApiKey(DecodeError):
    """An API key Kafka does not define; Kafka closes the connection for these."""


def is_flexible(api_key: int, version: int) -> bool:
    flex = API_MODULES[api_key][4]
    return flex is not None and version >= flex


def request_header_version(api_key: int, version: int) -> int:
    if is_flexible(api_key, version):
        return 2
    if api_key == 7 and version == 0:  # ControlledShutdown v0 predates the client id
        return 0
    return 1


def response_header_version(api_key: int, version: int) -> int:
    # ApiVersions responses always use header v0 so a client can read them before it knows our range.
    if api_key == API_VERSIONS_KEY:
        return 0
    return 1 if is_flexible(api_key, version) else 0


def _check_version(api_key: int, version: int) -> None:
    spec = API_MODULES.get(api_key)
    if spec is None:
        raise UnknownApiKey(f"unknown API key {api_key}")
    if not spec[2] <= version <= spec[3]:
        raise DecodeError(f"{spec[0]} v{version} is outside the versions Kafka defines ({spec[2]}-{spec[3]})")


def request_struct(api_key: int, version: int) -> Any:
    _check_version(api_key, version)
    return api_module(api_key).REQUEST[version - API_MODULES[api_key][2]]


def response_struct(api_key: int, version: int) -> Any:
    _check_version(api_key, version)
    return api_module(api_key).RESPONSE[version - API_MODULES[api_key][2]]


def response_part(api_key: int, version: int, *path: str) -> Any:
    """The declaration of a part of a response: `path` names fields from the top, each an array of structs
    or a struct; the part is the struct the last one holds (METADATA, 12, "topics": a topic's entry; ...,
    "topics", "partitions": a partition's entry)."""
    part = response_struct(api_key, version)
    for i, name in enumerate(path):
        fields = [*part.fields, *part.tagged.values()]
        field = next((f for f in fields if f.name == name), None)
        if field is None:
            raise KeyError(f"{API_MODULES[api_key][0]}ResponseV{version} has no {' -> '.join(path[:i + 1])}")
        part = field.subcon.subcon  # the array's (or the nullable struct's) element
    return part


def encode_array(api_key: int, version: int, name: str, values: list[Any]) -> Encoded:
    """A top-level array field of a response, count included, encoded once to be given in its place (an answer
    that repeats a long array, such as ApiVersions' api_keys, then writes it in one piece)."""
    field = next(f for f in response_struct(api_key, version).fields if f.name == name)
    stream = io.BytesIO()
    _build(field.subcon, values, stream, name)
    return Encoded(stream.getvalue())


def encode_part(part: Any, value: Any) -> Encoded:
    """`value` encoded as `part` (from `response_part`), to be given in its place in a response body: the
    encoder writes an `Encoded` value as it is, so a part that does not change is encoded once."""
    stream = io.BytesIO()
    _build(part, value, stream, "part")
    return Encoded(stream.getvalue())


@dataclass(slots=True)
class Request:
    api_key: int
    api_version: int
    correlation_id: int
    client_id: str | None
    header: Container
    body: Container | None  # None when only the header could be read (see decode_request_header)

    @property
    def api_name(self) -> str:
        spec = API_MODULES.get(self.api_key)
        return spec[0] if spec else f"ApiKey{self.api_key}"


def parse_body(struct_: Any, stream: io.BytesIO, where: str) -> Container:
    try:
        return struct_._parse(stream, Container(), where)
    except ConstructError as e:
        what = str(e).split("\n", 1)[-1] if e.path else str(e)
        raise DecodeError(what or type(e).__name__, e.path or where, stream.tell()) from None
    except (UnicodeDecodeError, ValueError, OverflowError) as e:
        raise DecodeError(f"{type(e).__name__}: {e}", where, stream.tell()) from None


def decode_request_header(frame: bytes) -> tuple[Request, io.BytesIO]:
    """The header alone, for a request whose body this broker will not parse."""
    if len(frame) < _HEAD.size:
        raise DecodeError(f"request of {len(frame)} bytes is shorter than a header", "RequestHeader", 0)
    api_key, version, correlation_id = _HEAD.unpack_from(frame)
    if api_key not in API_MODULES:
        raise UnknownApiKey(f"unknown API key {api_key}", "RequestHeader", 0)
    stream = io.BytesIO(frame)
    if version < 0:
        raise DecodeError(f"negative API version {version}", "RequestHeader", 2)
    if version > API_MODULES[api_key][3]:
        hv = 1  # a version newer than Kafka's: read up to the client id, the rest is not ours to parse
    else:
        hv = request_header_version(api_key, version)
    header = parse_body((RequestHeaderV0, RequestHeaderV1, RequestHeaderV2)[hv], stream, "RequestHeader")
    return Request(api_key, version, correlation_id, header.get("client_id"), header, None), stream


def decode_request(frame: bytes) -> Request:
    request, stream = decode_request_header(frame)
    struct_ = request_struct(request.api_key, request.api_version)
    request.body = parse_body(struct_, stream, f"{request.api_name}RequestV{request.api_version}")
    return request


def _build(struct_: Any, obj: Any, stream: Any, where: str) -> None:
    struct_._build(obj, stream, Container(), where)


class _ChunkWriter:
    """A write-only stream that keeps large buffers by reference: a Fetch response is its encoded
    fields plus the stored batches, handed to the socket without being copied into one buffer."""

    LARGE = 16384

    def __init__(self) -> None:
        self.chunks: list[Any] = []
        self._small = bytearray(4)  # room for the size prefix
        self.size = 4

    def write(self, data: Any) -> int:
        n = len(data)
        if n >= self.LARGE:
            if self._small:
                self.chunks.append(self._small)
                self._small = bytearray()
            self.chunks.append(data)
        else:
            self._small += data
        self.size += n
        return n

    def finish(self) -> list[Any]:
        if self._small:
            self.chunks.append(self._small)
        struct.pack_into(">i", self.chunks[0], 0, self.size - 4)
        return self.chunks


def encode_response_chunks(api_key: int, version: int, correlation_id: int, body: Any, *,
                           header_version: int | None = None) -> list[Any]:
    """A whole response frame, size prefix included, as buffers to write in order."""
    stream = _ChunkWriter()
    hv = response_header_version(api_key, version) if header_version is None else header_version
    _build((ResponseHeaderV0, ResponseHeaderV1)[hv], {"correlation_id": correlation_id}, stream, "ResponseHeader")
    _build(response_struct(api_key, version), body, stream, f"{API_MODULES[api_key][0]}ResponseV{version}")
    return stream.finish()


def encode_response(api_key: int, version: int, correlation_id: int, body: Any, *,
                    header_version: int | None = None) -> bytes:
    """A whole response frame, size prefix included."""
    return b"".join(encode_response_chunks(api_key, version, correlation_id, body, header_version=header_version))


def encode_request(api_key: int, version: int, correlation_id: int, body: Any,
                   client_id: str | None = "fakekafka") -> bytes:
    """A whole request frame, size prefix included (used by tests and the proxy)."""
    stream = io.BytesIO()
    stream.write(b"\x00\x00\x00\x00")
    hv = request_header_version(api_key, version)
    header = {"request_api_key": api_key, "request_api_version": version,
              "correlation_id": correlation_id, "client_id": client_id}
    _build((RequestHeaderV0, RequestHeaderV1, RequestHeaderV2)[hv], header, stream, "RequestHeader")
    _build(request_struct(api_key, version), body, stream, f"{API_MODULES[api_key][0]}RequestV{version}")
    buf = stream.getbuffer()
    struct.pack_into(">i", buf, 0, len(buf) - 4)
    del buf
    return stream.getvalue()


def decode_response(api_key: int, version: int, frame: bytes) -> tuple[int, Container]:
    """(correlation id, body) of a response frame without its size prefix."""
    stream = io.BytesIO(frame)
    hv = response_header_version(api_key, version)
    header = parse_body((ResponseHeaderV0, ResponseHeaderV1)[hv], stream, "ResponseHeader")
    body = parse_body(response_struct(api_key, version), stream, f"{API_MODULES[api_key][0]}ResponseV{version}")
    return header.correlation_id, body
