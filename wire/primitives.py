"""Kafka's field kinds as `construct` constructs.

Classic and compact (flexible) encodings are separate objects rather than one object with a flag, so
the generated declarations in `wire/messages/` read as what goes on the wire for that version.
`Message` is the one struct kind: it fills absent fields with their schema defaults when building (a
handler writes only what it means), and in flexible versions it reads the tagged-field section into
the same container, keeping unknown tags so a proxy can re-emit them byte for byte.
"""

from __future__ import annotations

import io
import struct
import threading
import uuid
from collections.abc import Callable, Iterable
from typing import Any

from construct import (
    Construct,
    Container,
    Float64b,
    Int8sb,
    Int16sb,
    Int16ub,
    Int32sb,
    Int32ub,
    Int64sb,
    SizeofError,
    StreamError,
    stream_read,
    stream_write,
)

__all__ = [
    "Int8", "Int16", "Int32", "Int64", "UInt16", "UInt32", "Float64", "Bool", "Uuid", "UVarint",
    "Varint", "Varlong", "String", "NullableString", "CompactString", "CompactNullableString",
    "Bytes", "NullableBytes", "CompactBytes", "CompactNullableBytes", "Array", "NullableArray",
    "CompactArray", "CompactNullableArray", "NullableStruct", "TaggedNullableStruct", "Field", "Tagged", "Message",
    "UNKNOWN_TAGS", "ZERO_UUID", "STRUCT_DEFAULT", "WireError", "Chunks", "Encoded", "element_budget",
    "build_bytes", "parse_bytes",
]

Int8 = Int8sb
Int16 = Int16sb
Int32 = Int32sb
Int64 = Int64sb
UInt16 = Int16ub
UInt32 = Int32ub
Float64 = Float64b

ZERO_UUID = uuid.UUID(int=0)
UNKNOWN_TAGS = "_unknown_tags"
"""Container key holding [(tag, raw bytes)] for tags this declaration does not know."""

_MISSING = object()
STRUCT_DEFAULT = object()
"""Default of a struct-typed field: the struct with all its own defaults."""
_unpack_i16 = struct.Struct(">h").unpack
_unpack_i32 = struct.Struct(">i").unpack
_pack_i16 = struct.Struct(">h").pack
_pack_i32 = struct.Struct(">i").pack
_ONE_BYTE = tuple(bytes((i,)) for i in range(256))


def build_bytes(subcon: Construct, obj: Any, path: str = "(building)") -> bytes:
    """`subcon.build(obj)` without construct's context, which refers to itself (`_params`): every call left a
    cycle for the garbage collector, and a broker builds on every request (tagged fields, coordinator records)."""
    stream = io.BytesIO()
    subcon._build(obj, stream, Container(), path)
    return stream.getvalue()


def parse_bytes(subcon: Construct, data: bytes | bytearray | memoryview, path: str = "(parsing)") -> Any:
    """`subcon.parse(data)` without construct's self-referring context (see `build_bytes`)."""
    return subcon._parse(io.BytesIO(data), Container(), path)


class WireError(StreamError):
    """Bytes that violate the protocol (a length or count that cannot be right, null where not allowed)."""


def _remaining(stream: Any) -> int:
    """Bytes left to read. (BytesIO.getbuffer() would un-share, i.e. copy, the whole frame.)"""
    try:
        pos = stream.tell()
        end = stream.seek(0, 2)
        stream.seek(pos)
    except (AttributeError, OSError, ValueError):
        return 1 << 62
    return end - pos


def read_uvarint(stream: Any, path: str) -> int:
    first = stream.read(1)
    if first and first[0] < 0x80:  # one byte: nearly every length and count
        return first[0]
    if first:
        stream.seek(-1, 1)
    result = 0
    shift = 0
    while True:
        b = stream_read(stream, 1, path)[0]
        result |= (b & 0x7F) << shift
        if not b & 0x80:
            return result
        shift += 7
        if shift > 63:
            raise WireError("unsigned varint longer than 10 bytes", path=path)


def uvarint_at(data: bytes | bytearray | memoryview, pos: int, max_bytes: int = 10) -> tuple[int, int]:
    """An unsigned varint read in place at `pos`: (value, the position after it). ValueError when the data ends
    inside it or it runs past `max_bytes` (5 for an int32, 10 for an int64). For readers that walk a buffer
    without a stream: record batches, request headers."""
    value = shift = 0
    end = min(len(data), pos + max_bytes)
    while pos < end:
        b = data[pos]
        pos += 1
        value |= (b & 0x7F) << shift
        if b < 0x80:
            return value, pos
        shift += 7
    raise ValueError("truncated or overlong varint")


def varint_at(data: bytes | bytearray | memoryview, pos: int, max_bytes: int = 10) -> tuple[int, int]:
    """A signed (zigzag) varint read in place at `pos`, as `uvarint_at`."""
    raw, pos = uvarint_at(data, pos, max_bytes)
    return (raw >> 1) ^ -(raw & 1), pos


def write_uvarint(value: int, stream: Any, path: str) -> None:
    if 0 <= value < 0x80:
        stream.write(_ONE_BYTE[value])
        return
    if value < 0:
        raise WireError(f"unsigned varint cannot hold {value}", path=path)
    out = bytearray()
    while value > 0x7F:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    stream_write(stream, bytes(out), len(out), path)


def uvarint_bytes(value: int) -> bytes:
    out = bytearray()
    while value > 0x7F:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


class _UVarint(Construct):
    """Unsigned LEB128, as used for compact lengths and tags."""

    def _parse(self, stream, context, path):  # noqa: ANN001, ANN202
        return read_uvarint(stream, path)

    def _build(self, obj, stream, context, path):  # noqa: ANN001, ANN202
        write_uvarint(obj, stream, path)
        return obj

    def _sizeof(self, context, path):  # noqa: ANN001, ANN202
        raise SizeofError("varint has no fixed size", path=path)


class _ZigZag(Construct):
    """Zig-zag signed varint (records, and `varint`/`varlong` schema fields)."""

    def __init__(self, bits: int) -> None:
        super().__init__()
        self.bits = bits

    def _parse(self, stream, context, path):  # noqa: ANN001, ANN202
        n = read_uvarint(stream, path)
        return (n >> 1) ^ -(n & 1)

    def _build(self, obj, stream, context, path):  # noqa: ANN001, ANN202
        write_uvarint((obj << 1) ^ (obj >> (self.bits - 1)), stream, path)
        return obj

    def _sizeof(self, context, path):  # noqa: ANN001, ANN202
        raise SizeofError("varint has no fixed size", path=path)


UVarint = _UVarint()
Varint = _ZigZag(32)
Varlong = _ZigZag(64)


class _Bool(Construct):
    def _parse(self, stream, context, path):  # noqa: ANN001, ANN202
        return stream_read(stream, 1, path) != b"\x00"

    def _build(self, obj, stream, context, path):  # noqa: ANN001, ANN202
        stream_write(stream, b"\x01" if obj else b"\x00", 1, path)
        return obj

    def _sizeof(self, context, path):  # noqa: ANN001, ANN202
        return 1


Bool = _Bool()


class _Uuid(Construct):
    def _parse(self, stream, context, path):  # noqa: ANN001, ANN202
        return uuid.UUID(bytes=stream_read(stream, 16, path))

    def _build(self, obj, stream, context, path):  # noqa: ANN001, ANN202
        raw = obj.bytes if isinstance(obj, uuid.UUID) else bytes(obj)
        stream_write(stream, raw, 16, path)
        return obj

    def _sizeof(self, context, path):  # noqa: ANN001, ANN202
        return 16


Uuid = _Uuid()


class _Sized(Construct):
    """A length-prefixed string or byte string, classic (int16/int32) or compact (uvarint + 1)."""

    def __init__(self, *, text: bool, compact: bool, nullable: bool) -> None:
        super().__init__()
        self.text = text
        self.compact = compact
        self.nullable = nullable

    def _read_length(self, stream: Any, path: str) -> int:
        if self.compact:
            return read_uvarint(stream, path) - 1
        if self.text:
            return _unpack_i16(stream_read(stream, 2, path))[0]
        return _unpack_i32(stream_read(stream, 4, path))[0]

    def _parse(self, stream, context, path):  # noqa: ANN001, ANN202
        length = self._read_length(stream, path)
        if length < 0:
            if length == -1 and self.nullable:
                return None
            raise WireError(f"length {length} is not allowed here", path=path)
        if self.text and length > 0x7FFF:
            # Kafka's generated readers refuse any string over 32767 bytes, compact ones too, so every id fits
            # every version's (int16-prefixed) string and the internal topics' records
            raise WireError(f"string field had invalid length {length}", path=path)
        # at most what is left, however large `length` claims to be (a compact length can exceed what read() takes)
        data = stream.read(length) if length <= 0x7FFFFFFF else b""
        if len(data) != length:
            raise WireError(f"length {length} runs past the end of the data", path=path)
        # Kafka reads strings as Java's new String(bytes, UTF_8) does: malformed bytes become U+FFFD and the
        # request is answered (a topic name with them is INVALID_TOPIC_EXCEPTION), not refused
        return data.decode("utf-8", errors="replace") if self.text else data

    def _build(self, obj, stream, context, path):  # noqa: ANN001, ANN202
        if obj.__class__ is Encoded:  # the whole array, count included
            stream_write(stream, obj, len(obj), path)
            return obj
        if obj is None:
            if not self.nullable:
                raise WireError("null given for a non-nullable field", path=path)
            if self.compact:
                stream_write(stream, b"\x00", 1, path)
            else:
                stream_write(stream, b"\xff\xff" if self.text else b"\xff\xff\xff\xff",
                             2 if self.text else 4, path)
            return obj
        if isinstance(obj, Chunks):
            self._write_length(obj.nbytes, stream, path)
            for chunk in obj:
                stream.write(chunk)
            return obj
        if isinstance(obj, str):
            data: Any = obj.encode("utf-8")
        elif isinstance(obj, (bytes, bytearray)):
            data = obj
        else:
            data = bytes(obj)
        n = len(data)
        self._write_length(n, stream, path)
        stream.write(data)  # construct's stream_write takes bytes only; stored batches are bytearrays
        return obj

    def _write_length(self, n: int, stream: Any, path: str) -> None:
        if self.text and n > 0x7FFF:
            raise WireError(f"string of {n} bytes is too long", path=path)
        if self.compact:
            write_uvarint(n + 1, stream, path)
        elif self.text:
            stream_write(stream, _pack_i16(n), 2, path)
        else:
            stream_write(stream, _pack_i32(n), 4, path)

    def _sizeof(self, context, path):  # noqa: ANN001, ANN202
        raise SizeofError("variable size", path=path)


String = _Sized(text=True, compact=False, nullable=False)
NullableString = _Sized(text=True, compact=False, nullable=True)
CompactString = _Sized(text=True, compact=True, nullable=False)
CompactNullableString = _Sized(text=True, compact=True, nullable=True)
Bytes = _Sized(text=False, compact=False, nullable=False)
NullableBytes = _Sized(text=False, compact=False, nullable=True)
CompactBytes = _Sized(text=False, compact=True, nullable=False)
CompactNullableBytes = _Sized(text=False, compact=True, nullable=True)


class Encoded(bytes):
    """An array, or an element of one, already encoded for the message version being built (a part a handler
    keeps between answers, such as a topic's entry in Metadata): written as it is."""


class Chunks(tuple):
    """A bytes value given as several buffers (stored record batches), written one after another
    without being joined first."""

    @property
    def nbytes(self) -> int:
        return sum(len(c) for c in self)


_element_budget = threading.local()
"""Array elements a parse may still make (`element_budget`); unset: no limit."""


class element_budget:  # noqa: N801 - used as a function: `with element_budget(n):`
    """Within it, parses on this thread may make at most `limit` array elements in all, else WireError: a
    small frame of one-byte elements would otherwise become a large tree of Python objects."""

    def __init__(self, limit: int) -> None:
        self.limit = limit

    def __enter__(self) -> None:
        self.saved = getattr(_element_budget, "left", None)
        _element_budget.left = self.limit

    def __exit__(self, *exc: object) -> None:
        _element_budget.left = self.saved


class _Array(Construct):
    def __init__(self, subcon: Construct, *, compact: bool, nullable: bool) -> None:
        super().__init__()
        self.subcon = subcon
        self.compact = compact
        self.nullable = nullable

    def _parse(self, stream, context, path):  # noqa: ANN001, ANN202
        if self.compact:
            count = read_uvarint(stream, path) - 1
        else:
            count = _unpack_i32(stream_read(stream, 4, path))[0]
        if count < 0:
            if count == -1 and self.nullable:
                return None
            raise WireError(f"array count {count} is not allowed here", path=path)
        if count > 16 and count > _remaining(stream):  # a few elements too many fail in the loop anyway
            raise WireError(f"array count {count} exceeds the bytes left", path=path)
        left = getattr(_element_budget, "left", None)
        if left is not None:
            if count > left:
                raise WireError(f"array count {count} is past the request's element budget", path=path)
            _element_budget.left = left - count
        parse = self.subcon._parse
        return [parse(stream, context, path) for _ in range(count)]

    def _build(self, obj, stream, context, path):  # noqa: ANN001, ANN202
        if obj.__class__ is Encoded:  # the whole array, count included
            stream_write(stream, obj, len(obj), path)
            return obj
        if obj is None:
            if not self.nullable:
                raise WireError("null given for a non-nullable array", path=path)
            if self.compact:
                stream_write(stream, b"\x00", 1, path)
            else:
                stream_write(stream, b"\xff\xff\xff\xff", 4, path)
            return obj
        if self.compact:
            write_uvarint(len(obj) + 1, stream, path)
        else:
            stream_write(stream, _pack_i32(len(obj)), 4, path)
        build = self.subcon._build
        for item in obj:
            if item.__class__ is Encoded:
                stream_write(stream, item, len(item), path)
            else:
                build(item, stream, context, path)
        return obj

    def _sizeof(self, context, path):  # noqa: ANN001, ANN202
        raise SizeofError("variable size", path=path)


def Array(subcon: Construct) -> Construct:  # noqa: N802 - reads like a construct
    return _Array(subcon, compact=False, nullable=False)


def NullableArray(subcon: Construct) -> Construct:  # noqa: N802
    return _Array(subcon, compact=False, nullable=True)


def CompactArray(subcon: Construct) -> Construct:  # noqa: N802
    return _Array(subcon, compact=True, nullable=False)


def CompactNullableArray(subcon: Construct) -> Construct:  # noqa: N802
    return _Array(subcon, compact=True, nullable=True)


class NullableStruct(Construct):
    """A nullable struct field that is not tagged: an int8 marker, -1 for null, 1 for present."""

    def __init__(self, subcon: Construct) -> None:
        super().__init__()
        self.subcon = subcon

    def _parse(self, stream, context, path):  # noqa: ANN001, ANN202
        marker = stream_read(stream, 1, path)
        if marker == b"\xff":
            return None
        return self.subcon._parse(stream, context, path)

    def _build(self, obj, stream, context, path):  # noqa: ANN001, ANN202
        if obj is None:
            stream_write(stream, b"\xff", 1, path)
            return obj
        stream_write(stream, b"\x01", 1, path)
        return self.subcon._build(obj, stream, context, path)

    def _sizeof(self, context, path):  # noqa: ANN001, ANN202
        raise SizeofError("variable size", path=path)


class TaggedNullableStruct(NullableStruct):
    """A nullable struct in a tagged field, as Kafka's generator writes one: a varint marker, 0 for null, 1 for
    present (a null differing from the field's default is written as the lone marker)."""

    def defaults(self) -> Container:
        return self.subcon.defaults()

    def _parse(self, stream, context, path):  # noqa: ANN001, ANN202
        marker = stream_read(stream, 1, path)
        if marker == b"\x00":
            return None
        return self.subcon._parse(stream, context, path)

    def _build(self, obj, stream, context, path):  # noqa: ANN001, ANN202
        if obj is None:
            stream_write(stream, b"\x00", 1, path)
            return obj
        stream_write(stream, b"\x01", 1, path)
        return self.subcon._build(obj, stream, context, path)


class Field:
    """A named field of a `Message` with the schema's default (a callable for mutable defaults)."""

    __slots__ = ("name", "subcon", "default")

    def __init__(self, name: str, subcon: Construct, default: Any = None) -> None:
        self.name = name
        self.subcon = subcon
        self.default = default

    def default_value(self) -> Any:
        d = self.default
        if d is STRUCT_DEFAULT:
            return self.subcon.defaults()
        return d() if callable(d) else d


class Tagged(Field):
    """A tagged field: written only when its value differs from the default (as Kafka writes them)."""

    __slots__ = ("tag",)

    def __init__(self, tag: int, name: str, subcon: Construct, default: Any = None) -> None:
        super().__init__(name, subcon, default)
        self.tag = tag


def _plain(value: Any) -> Any:
    """A comparable form of a value: plain dicts, since Container's == skips keys starting with "_"
    (so it would overlook the unknown tags)."""
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    return value


class Message(Construct):
    """A Kafka struct: fields in order, then (flexible versions) the tagged-field section.

    Parsing yields a `Container` holding every field of this version, tagged ones included (absent
    tags get their defaults). Building accepts any mapping; missing fields take their defaults.
    """

    def __init__(self, *fields: Field, flexible: bool = False) -> None:
        super().__init__()
        self.fields: tuple[Field, ...] = tuple(f for f in fields if not isinstance(f, Tagged))
        self.tagged: dict[int, Tagged] = {f.tag: f for f in fields if isinstance(f, Tagged)}
        self.flexible = flexible
        if self.tagged and not flexible:
            raise ValueError("tagged fields need a flexible message")

    def field_names(self) -> list[str]:
        return [f.name for f in self.fields] + [t.name for t in self.tagged.values()]

    def defaults(self) -> Container:
        obj = Container()
        for f in self.fields:
            obj[f.name] = f.default_value()
        for t in self.tagged.values():
            obj[t.name] = t.default_value()
        return obj

    # The first parse or build of a Message swaps in code specialised for its fields (wire/compiled.py, which
    # installs itself here when the wire package is imported, so the arrow runs one way); the generic versions
    # below are what it must match, and what the tests compare it with.
    compiler: Callable[[Message], tuple[Callable[..., Any], Callable[..., Any]]] | None = None

    def _compile(self) -> None:
        """Once: a caller may hold this lazy method from before (an array's loop) and call it again."""
        if "_parse" not in self.__dict__:
            if Message.compiler is None:
                self._parse, self._build = self._parse_generic, self._build_generic  # type: ignore[method-assign]
            else:
                self._parse, self._build = Message.compiler(self)  # type: ignore[method-assign]

    def _parse(self, stream, context, path):  # noqa: ANN001, ANN202
        self._compile()
        return self._parse(stream, context, path)

    def _build(self, obj, stream, context, path):  # noqa: ANN001, ANN202
        self._compile()
        return self._build(obj, stream, context, path)

    def _parse_generic(self, stream, context, path):  # noqa: ANN001, ANN202
        obj = Container()
        for f in self.fields:
            obj[f.name] = f.subcon._parse(stream, context, f"{path} -> {f.name}")
        if self.flexible:
            self._parse_tags(stream, path, obj)
        return obj

    def _parse_tags(self, stream: Any, path: str, obj: dict[str, Any]) -> None:
        """The tagged-field section into `obj`: known tags by name (absent ones at their defaults),
        unknown ones kept raw under UNKNOWN_TAGS."""
        for t in self.tagged.values():
            obj[t.name] = t.default_value()
        count = read_uvarint(stream, path)
        if count > _remaining(stream):
            raise WireError(f"tagged field count {count} exceeds the bytes left", path=path)
        unknown: list[tuple[int, bytes]] = []
        last = -1
        for _ in range(count):
            tag = read_uvarint(stream, path)
            if tag <= last:
                raise WireError(f"tag {tag} out of order after {last}", path=path)
            last = tag
            size = read_uvarint(stream, path)
            if size > _remaining(stream):
                raise WireError(f"tagged field {tag} of {size} bytes runs past the end", path=path)
            raw = stream_read(stream, size, path)
            known = self.tagged.get(tag)
            if known is None:
                unknown.append((tag, raw))
            else:
                obj[known.name] = parse_bytes(known.subcon, raw, path)
        if unknown:
            obj[UNKNOWN_TAGS] = unknown

    def _build_generic(self, obj, stream, context, path):  # noqa: ANN001, ANN202
        get = obj.get
        for f in self.fields:
            value = get(f.name, _MISSING)
            if value is _MISSING:
                value = f.default_value()
            f.subcon._build(value, stream, context, f"{path} -> {f.name}")
        if self.flexible:
            self._build_tags(obj, stream, path)
        return obj

    def _build_tags(self, obj: Any, stream: Any, path: str) -> None:
        """The tagged-field section: each known tag whose value differs from its default, and the
        unknown tags a parse kept, in tag order."""
        get = obj.get
        entries: list[tuple[int, bytes]] = []
        for tag, t in self.tagged.items():
            value = get(t.name, _MISSING)
            if value is _MISSING:
                continue
            default = t.default_value()
            if isinstance(value, dict) and isinstance(default, dict):
                # Kafka writes a tagged struct unless it equals a new one, unknown tags included.
                if _plain({**default, **value}) == _plain(default):
                    continue
            elif value == default:
                continue
            entries.append((tag, build_bytes(t.subcon, value, path)))
        entries.extend(get(UNKNOWN_TAGS, None) or ())
        entries.sort(key=lambda e: e[0])
        write_uvarint(len(entries), stream, path)
        for tag, raw in entries:
            write_uvarint(tag, stream, path)
            write_uvarint(len(raw), stream, path)
            stream_write(stream, raw, len(raw), path)

    def _sizeof(self, context, path):  # noqa: ANN001, ANN202
        raise SizeofError("variable size", path=path)


def list_of(items: Iterable[Any]) -> Callable[[], list[Any]]:
    """A default factory for array fields (a fresh list each time)."""
    frozen = tuple(items)
    return lambda: list(frozen)
