"""A FileDescriptorProto printed as `.proto` text: how a Confluent registry answers a Protobuf schema that was
registered as a base64 descriptor (it renders the schema as text unless asked `format=serialized`).

protobuf's Python runtime has no descriptor printer (C++'s `DebugString` is not exposed by upb), so this walks the
descriptor: syntax, package, imports, file options, messages (nested types, map fields, oneofs, proto3
`optional`, reserved ranges and names, extension ranges), enums, services and `extend` blocks. Type names are
written fully qualified (`.shop.Money`), which protoc resolves whatever the scope. What it cannot print (proto2
groups, editions) makes `proto_text` return None, and the schema is answered as registered.
"""

from __future__ import annotations

import json
from typing import Any

__all__ = ["proto_text"]

_SCALARS = {
    1: "double",
    2: "float",
    3: "int64",
    4: "uint64",
    5: "int32",
    6: "fixed64",
    7: "fixed32",
    8: "bool",
    9: "string",
    12: "bytes",
    13: "uint32",
    15: "sfixed32",
    16: "sfixed64",
    17: "sint32",
    18: "sint64",
}
_GROUP, _MESSAGE, _ENUM = 10, 11, 14
_OPTIONAL, _REQUIRED, _REPEATED = 1, 2, 3
_MAX_FIELD = 536870911
_MAX_ENUM = 2147483647


class _Unprintable(Exception):
    pass


def proto_text(fd: Any) -> str | None:
    """The `.proto` source of FileDescriptorProto `fd`, or None where it has what this printer does not write."""
    try:
        return _File(fd).render()
    except _Unprintable:
        return None


def _value(field: Any, value: Any) -> str:
    if field.type == field.TYPE_ENUM:
        return field.enum_type.values_by_number[value].name if value in field.enum_type.values_by_number else str(value)
    if field.type == field.TYPE_BOOL:
        return "true" if value else "false"
    if field.type == field.TYPE_STRING:
        return json.dumps(value)
    if field.type == field.TYPE_BYTES:
        return '"' + "".join(chr(b) if 32 <= b < 127 and b not in (34, 92) else f"\\{b:03o}" for b in value) + '"'
    if field.type == field.TYPE_MESSAGE:
        raise _Unprintable("message-valued option")
    return repr(value) if isinstance(value, float) else str(value)


def _options(options: Any, skip: tuple[str, ...] = ()) -> list[str]:
    """`name = value` for each option set (custom ones in parentheses)."""
    out = []
    for field, value in options.ListFields():
        if field.name in skip:
            continue
        name = f"({field.full_name})" if field.is_extension else field.name
        if _repeated(field):
            out += [f"{name} = {_value(field, v)}" for v in value]
        else:
            out.append(f"{name} = {_value(field, value)}")
    return out


def _repeated(field: Any) -> bool:
    """protobuf 5.28+ names it `is_repeated` (7 dropped `label`); older ones have only `label`."""
    repeated = getattr(field, "is_repeated", None)
    return bool(repeated) if repeated is not None else field.label == field.LABEL_REPEATED


def _ranges(ranges: Any, top: int) -> str:
    parts = []
    for r in ranges:  # descriptor ranges are [start, end)
        end = r.end - 1
        parts.append(str(r.start) if end == r.start else f"{r.start} to {'max' if end >= top else end}")
    return ", ".join(parts)


class _File:
    def __init__(self, fd: Any) -> None:
        if fd.syntax not in ("", "proto2", "proto3"):
            raise _Unprintable(f"syntax {fd.syntax}")
        self.fd = fd
        self.proto3 = fd.syntax == "proto3"

    def render(self) -> str:
        fd = self.fd
        lines = [f'syntax = "{fd.syntax or "proto2"}";']
        if fd.package:
            lines.append(f"package {fd.package};")
        public, weak = set(fd.public_dependency), set(fd.weak_dependency)
        if fd.dependency:
            lines.append("")
            for i, dep in enumerate(fd.dependency):
                kind = "public " if i in public else "weak " if i in weak else ""
                lines.append(f'import {kind}"{dep}";')
        options = _options(fd.options)
        if options:
            lines.append("")
            lines += [f"option {o};" for o in options]
        for message in fd.message_type:
            lines.append("")
            lines += self.message(message, 0)
        for enum in fd.enum_type:
            lines.append("")
            lines += self.enum(enum, 0)
        lines += self.extends(fd.extension, 0, leading_blank=True)
        for service in fd.service:
            lines.append("")
            lines += self.service(service)
        return "\n".join(lines) + "\n"

    def type_of(self, field: Any) -> str:
        if field.type == _GROUP:
            raise _Unprintable("group")
        if field.type in (_MESSAGE, _ENUM):
            return field.type_name if field.type_name.startswith(".") else f".{field.type_name}"
        return _SCALARS[field.type]

    def field(self, field: Any, maps: dict[str, Any], in_oneof: bool = False) -> str:
        entry = maps.get(field.type_name.lstrip(".")) if field.type == _MESSAGE else None
        options = _options(field.options)
        if field.HasField("default_value"):
            default = field.default_value
            if field.type == 9:
                default = json.dumps(default)
            elif field.type == 12:
                raise _Unprintable("bytes default")
            options.insert(0, f"default = {default}")
        if field.HasField("json_name") and field.json_name != _camel(field.name):
            options.append(f"json_name = {json.dumps(field.json_name)}")
        suffix = f" [{', '.join(options)}]" if options else ""
        if entry is not None:
            key, value = entry.field[0], entry.field[1]
            return f"map<{self.type_of(key)}, {self.type_of(value)}> {field.name} = {field.number}{suffix};"
        label = ""
        if not in_oneof:
            if field.label == _REPEATED:
                label = "repeated "
            elif field.label == _REQUIRED:
                label = "required "
            elif not self.proto3 or field.proto3_optional:
                label = "optional "
        return f"{label}{self.type_of(field)} {field.name} = {field.number}{suffix};"

    def message(self, message: Any, depth: int, scope: str = "") -> list[str]:
        pad = "  " * (depth + 1)
        name = f"{scope or self.fd.package}.{message.name}".lstrip(".")
        maps = {f"{name}.{n.name}": n for n in message.nested_type if n.options.map_entry}
        lines = ["  " * depth + f"message {message.name} {{"]
        lines += [f"{pad}option {o};" for o in _options(message.options)]
        real_oneofs: dict[int, list[Any]] = {}
        for field in message.field:
            if field.HasField("oneof_index") and not field.proto3_optional:
                real_oneofs.setdefault(field.oneof_index, []).append(field)
        done: set[int] = set()
        for field in message.field:
            if field.HasField("oneof_index") and not field.proto3_optional:
                index = field.oneof_index
                if index in done:
                    continue
                done.add(index)
                oneof = message.oneof_decl[index]
                lines.append(f"{pad}oneof {oneof.name} {{")
                lines += [f"{pad}  option {o};" for o in _options(oneof.options)]
                lines += [f"{pad}  {self.field(f, maps, in_oneof=True)}" for f in real_oneofs[index]]
                lines.append(f"{pad}}}")
            else:
                lines.append(pad + self.field(field, maps))
        for nested in message.nested_type:
            if not nested.options.map_entry:
                lines += self.message(nested, depth + 1, name)
        for enum in message.enum_type:
            lines += self.enum(enum, depth + 1)
        if message.extension_range:
            lines.append(f"{pad}extensions {_ranges(message.extension_range, _MAX_FIELD)};")
        lines += self.extends(message.extension, depth + 1)
        if message.reserved_range:
            lines.append(f"{pad}reserved {_ranges(message.reserved_range, _MAX_FIELD)};")
        if message.reserved_name:
            lines.append(f"{pad}reserved {', '.join(json.dumps(n) for n in message.reserved_name)};")
        lines.append("  " * depth + "}")
        return lines

    def enum(self, enum: Any, depth: int) -> list[str]:
        pad = "  " * (depth + 1)
        lines = ["  " * depth + f"enum {enum.name} {{"]
        lines += [f"{pad}option {o};" for o in _options(enum.options)]
        for value in enum.value:
            options = _options(value.options)
            suffix = f" [{', '.join(options)}]" if options else ""
            lines.append(f"{pad}{value.name} = {value.number}{suffix};")
        for r in enum.reserved_range:  # enum ranges are inclusive
            lines.append(f"{pad}reserved {r.start if r.start == r.end else f'{r.start} to {r.end}'};")
        if enum.reserved_name:
            lines.append(f"{pad}reserved {', '.join(json.dumps(n) for n in enum.reserved_name)};")
        lines.append("  " * depth + "}")
        return lines

    def extends(self, fields: Any, depth: int, leading_blank: bool = False) -> list[str]:
        lines: list[str] = []
        by_extendee: dict[str, list[Any]] = {}
        for field in fields:
            by_extendee.setdefault(field.extendee, []).append(field)
        for extendee, group in by_extendee.items():
            if leading_blank:
                lines.append("")
            target = extendee if extendee.startswith(".") else f".{extendee}"
            lines.append("  " * depth + f"extend {target} {{")
            lines += ["  " * (depth + 1) + self.field(f, {}) for f in group]
            lines.append("  " * depth + "}")
        return lines

    def service(self, service: Any) -> list[str]:
        lines = [f"service {service.name} {{"]
        lines += [f"  option {o};" for o in _options(service.options)]
        for m in service.method:
            given = "stream " if m.client_streaming else ""
            back = "stream " if m.server_streaming else ""
            options = _options(m.options)
            body = " {\n" + "".join(f"    option {o};\n" for o in options) + "  }" if options else ";"
            lines.append(f"  rpc {m.name}({given}{m.input_type}) returns ({back}{m.output_type}){body}")
        lines.append("}")
        return lines


def _camel(name: str) -> str:
    """protoc's default json_name: lowerCamelCase of the field name."""
    out, upper = [], False
    for ch in name:
        if ch == "_":
            upper = True
        elif upper:
            out.append(ch.upper())
            upper = False
        else:
            out.append(ch)
    return "".join(out)
