"""Confluent's Protobuf compatibility rules, over FileDescriptorProtos (from `.proto` text or serialized).

Confluent diffs an original schema against an update and calls the update incompatible when the diff holds one of
the incompatible changes; BACKWARD diffs the old schema (original) against the new (update), FORWARD the other way.
The verdicts follow Confluent's own examples (its Protobuf provider's diff examples):

- incompatible: a message of the file removed (moved into an import too); a field's number reused with a kind
  (scalar, message) or a scalar type outside its wire group; a field's message type renamed, or changed
  incompatibly (followed into the imports); `repeated` added or dropped on a numeric field; a proto2 `required`
  field added or removed; a field dropped from a oneof that stays; several fields moved into a oneof, or one
  into a oneof with members of an earlier oneof;
- compatible: fields added, removed or renamed; messages and enums added; enums removed; enum constants
  changed; a whole oneof removed; the package changed; int32/uint32/int64/uint64/bool/enum, sint32/sint64,
  fixed32/sfixed32, fixed64/sfixed64 and string/bytes within their group; `repeated` on string, bytes and message
  fields; one field moved into a new oneof; a map's field renamed.

Paths are Confluent's: `#/` then the message's name inside its package, nested names and the field number joined
by `/` (`#/Wrapper/TestMessage/2`).
"""

from __future__ import annotations

from typing import Any

__all__ = ["incompatibilities"]

# scalar types that share a wire encoding and read each other's values (enum is a varint, as int32)
_WIRE_GROUPS = [{"int32", "uint32", "int64", "uint64", "bool", "enum"}, {"sint32", "sint64"},
                {"fixed32", "sfixed32"}, {"fixed64", "sfixed64"}, {"string", "bytes"}]
_NOT_NUMERIC = {"string", "bytes", "message"}


class _File:
    """One side of the diff: its main file's messages by local name, and every type (imports too) by full name."""

    def __init__(self, main: Any, imports: dict[str, Any]) -> None:
        self.messages: dict[str, Any] = {}  # local name (without the package) -> DescriptorProto, main file only
        self.types: dict[str, tuple[str, Any]] = {}  # ".pkg.Outer.Inner" -> (local name, DescriptorProto or enum)
        for index, fd in enumerate([main, *imports.values()]):
            prefix = f".{fd.package}" if fd.package else ""
            self._walk(fd, prefix, "", fd.message_type, fd.enum_type, index == 0)

    def _walk(self, fd: Any, prefix: str, scope: str, messages: Any, enums: Any, main: bool) -> None:
        for e in enums:
            local = f"{scope}{e.name}"
            self.types[f"{prefix}.{local}"] = (local, e)
        for m in messages:
            local = f"{scope}{m.name}"
            self.types[f"{prefix}.{local}"] = (local, m)
            if main and not m.options.map_entry:  # a map's entry is the map field, not a message of the file
                self.messages[local] = m
            self._walk(fd, prefix, f"{local}.", m.nested_type, m.enum_type, main)


def _kind(field: Any) -> str:
    """A field's scalar type name, "enum" or "message"."""
    from google.protobuf.descriptor_pb2 import FieldDescriptorProto as F

    if field.type in (F.TYPE_MESSAGE, F.TYPE_GROUP):
        return "message"
    return F.Type.Name(field.type)[len("TYPE_"):].lower()


def _real_oneof(field: Any) -> bool:
    return field.HasField("oneof_index") and not field.proto3_optional


class _Diff:
    def __init__(self, original: _File, update: _File) -> None:
        self.original, self.update = original, update
        self.found: list[tuple[str, str]] = []
        self._compared: dict[tuple[str, str], bool] = {}

    def add(self, kind: str, path: str) -> None:
        if (kind, path) not in self.found:
            self.found.append((kind, path))

    def files(self) -> None:
        for local, message in self.original.messages.items():
            other = self.update.messages.get(local)
            if other is None:
                self.add("MESSAGE_REMOVED", f"#/{local.replace('.', '/')}")
            else:
                self.message(local, message, other)

    def message(self, local: str, original: Any, update: Any) -> bool:
        """Compares two versions of a message (once per pair); whether it found an incompatible change."""
        key = (local, update.name)
        if key in self._compared:
            return self._compared[key]
        self._compared[key] = False  # a recursive type compares as compatible with itself meanwhile
        before = len(self.found)
        where = f"#/{local.replace('.', '/')}"
        fields = {f.number: f for f in update.field}
        for f in original.field:
            other = fields.get(f.number)
            if other is not None:
                self.field(f, other, f"{where}/{f.number}")
        self.required(original, update, where)
        self.oneofs(original, update, where)
        self._compared[key] = len(self.found) > before
        return self._compared[key]

    def field(self, original: Any, update: Any, path: str) -> None:
        from google.protobuf.descriptor_pb2 import FieldDescriptorProto as F

        okind, ukind = _kind(original), _kind(update)
        if (okind == "message") != (ukind == "message"):
            self.add("FIELD_KIND_CHANGED", path)
            return
        if okind == "message":
            omsg, umsg = self.original.types.get(original.type_name), self.update.types.get(update.type_name)
            if omsg is None or umsg is None:
                return
            if omsg[1].options.map_entry and umsg[1].options.map_entry:  # maps: their keys and values compared
                for o, u in zip(omsg[1].field, umsg[1].field, strict=False):
                    self.field(o, u, path)
                return
            if omsg[0] != umsg[0] or self.message(omsg[0], omsg[1], umsg[1]):
                self.add("FIELD_NAMED_TYPE_CHANGED", path)
        elif not any(okind in g and ukind in g for g in _WIRE_GROUPS):
            self.add("FIELD_SCALAR_KIND_CHANGED", path)
        elif okind == ukind == "enum":
            oenum, uenum = self.original.types.get(original.type_name), self.update.types.get(update.type_name)
            if oenum is not None and uenum is not None and oenum[0] != uenum[0]:
                self.add("FIELD_NAMED_TYPE_CHANGED", path)
        if (original.label == F.LABEL_REPEATED) != (update.label == F.LABEL_REPEATED) and \
                okind not in _NOT_NUMERIC and ukind not in _NOT_NUMERIC:
            self.add("FIELD_NUMERIC_LABEL_CHANGED", path)

    def required(self, original: Any, update: Any, where: str) -> None:
        from google.protobuf.descriptor_pb2 import FieldDescriptorProto as F

        orequired = {f.number for f in original.field if f.label == F.LABEL_REQUIRED}
        urequired = {f.number for f in update.field if f.label == F.LABEL_REQUIRED}
        for number in sorted(urequired - orequired):
            self.add("REQUIRED_FIELD_ADDED", f"{where}/{number}")
        for number in sorted(orequired - urequired):
            self.add("REQUIRED_FIELD_REMOVED", f"{where}/{number}")

    def oneofs(self, original: Any, update: Any, where: str) -> None:
        def members(message: Any) -> dict[str, set[int]]:
            out: dict[str, set[int]] = {d.name: set() for d in message.oneof_decl}
            for f in message.field:
                if _real_oneof(f):
                    out[message.oneof_decl[f.oneof_index].name].add(f.number)
            return {name: numbers for name, numbers in out.items() if numbers}  # proto3 optional's are not real

        omembers, umembers = members(original), members(update)
        in_a_oneof = set().union(*omembers.values()) if omembers else set()
        plain = {f.number for f in original.field} - in_a_oneof
        for name, numbers in omembers.items():
            if name in umembers:  # a whole oneof removed is compatible, a member taken out of a kept one is not
                for number in sorted(numbers - umembers[name]):
                    self.add("ONEOF_FIELD_REMOVED", f"{where}/{name}/{number}")
        for name, numbers in umembers.items():
            moved = numbers & plain
            if len(moved) > 1:
                self.add("MULTIPLE_FIELDS_MOVED_TO_ONEOF", f"{where}/{name}")
            elif moved and numbers & in_a_oneof:
                self.add("FIELD_MOVED_TO_EXISTING_ONEOF", f"{where}/{name}")


def incompatibilities(original: Any, original_imports: dict[str, Any], update: Any,
                      update_imports: dict[str, Any]) -> list[tuple[str, str]]:
    """The incompatible changes (Confluent's difference type, path) from `original` to `update`."""
    diff = _Diff(_File(original, original_imports), _File(update, update_imports))
    diff.files()
    return diff.found
