"""A Protobuf schema printed as Confluent's registry prints it (`ProtobufSchema.canonicalString()`): what it stores
and answers for a Protobuf schema, whichever form was registered.

Confluent turns a registered schema into Square Wire's element tree (`.proto` text is parsed as written; a base64
FileDescriptorProto is converted field by field) and prints that tree. Its layout, followed here:

- the file: `syntax`, `package`, a blank line and the imports (public ones after the others; weak ones are not
  printed), a blank line and the options, a blank line and the messages then the enums (no blank line between
  them), `extend` blocks, services;
- a message: reserved ranges and names, options, fields, oneofs, groups, extension ranges, `extend` blocks, nested
  messages then nested enums; a blank line between these sections and two spaces of indentation a level (a blank
  line inside a nested message keeps its enclosing indentation, as Java's printer writes it);
- options in brackets (`[deprecated = true]`, several on lines of their own), `default` and `json_name` after the
  others.

From a descriptor, type names are the descriptor's, fully qualified (`.shop.Order.Line`); a map field is the
`repeated` field of its synthetic `...Entry` message, printed with `option map_entry = true;`; a group is the field
of its nested message; standard options are printed in Confluent's order, Confluent's own `confluent.*_meta` options
too, other custom options not (Confluent parses the descriptor without their definitions); editions files have no
`syntax` line and their `features` are printed as option maps. From `.proto` text (`canonical_text`), the names and
labels are as written (`map<string, Line>` stays), comments are dropped, and options keep their written order.
"""

from __future__ import annotations

import importlib
import importlib.util
import re
from dataclasses import dataclass, field
from typing import Any

__all__ = ["canonical_text", "proto_text"]

_MAX_TAG = 536_870_911
_LABELS = {1: "optional", 2: "required", 3: "repeated"}
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
_GROUP, _MESSAGE, _ENUM, _STRING = 10, 11, 14, 9

# Confluent's option kinds (Wire's OptionElement.Kind)
STRING, BOOLEAN, ENUM, NUMBER, MAP, LIST = "STRING", "BOOLEAN", "ENUM", "NUMBER", "MAP", "LIST"

# the standard options Confluent carries over from a descriptor, in its order; others are not printed
_FILE_OPTIONS = (
    "java_package",
    "java_outer_classname",
    "java_multiple_files",
    "java_generate_equals_and_hash",
    "java_string_check_utf8",
    "optimize_for",
    "go_package",
    "cc_generic_services",
    "java_generic_services",
    "py_generic_services",
    "deprecated",
    "cc_enable_arenas",
    "objc_class_prefix",
    "csharp_namespace",
    "swift_prefix",
    "php_class_prefix",
    "php_namespace",
    "php_metadata_namespace",
    "ruby_package",
    "features",
)
_MESSAGE_OPTIONS = ("no_standard_descriptor_accessor", "deprecated", "map_entry", "features")
_FIELD_OPTIONS = (
    "ctype",
    "packed",
    "jstype",
    "deprecated",
    "debug_redact",
    "retention",
    "targets",
    "edition_defaults",
    "features",
    "feature_support",
)
_ENUM_OPTIONS = ("allow_alias", "deprecated", "features")
_ENUM_VALUE_OPTIONS = ("deprecated", "debug_redact", "features", "feature_support")
_SERVICE_OPTIONS = ("deprecated", "features")
_METHOD_OPTIONS = ("deprecated", "idempotency_level", "features")
_ONEOF_OPTIONS = ("features",)
_RANGE_OPTIONS = ("declaration", "features", "verification")
_META = {
    "FileOptions": "file_meta",
    "MessageOptions": "message_meta",
    "FieldOptions": "field_meta",
    "EnumOptions": "enum_meta",
    "EnumValueOptions": "enum_value_meta",
}


class _Unprintable(Exception):
    pass


# --- the element tree (Wire's, as far as Confluent prints it) ---------------------------------------------------


@dataclass
class Prim:
    """A scalar inside an option map (Wire's OptionPrimitive): printed bare."""

    kind: str
    value: str


@dataclass
class Opt:
    name: str
    kind: str
    value: Any  # str for scalars (already as printed, unquoted for STRING), dict for MAP, list for LIST
    parenthesized: bool = False


@dataclass
class Field:
    label: str | None
    type: str
    name: str
    tag: int
    default: str | None = None
    default_kind: str = NUMBER
    json_name: str | None = None
    options: list[Opt] = field(default_factory=list)


@dataclass
class Group:
    label: str | None
    name: str
    tag: int
    fields: list[Field]


@dataclass
class OneOf:
    name: str
    fields: list[Field]
    groups: list[Group] = field(default_factory=list)
    options: list[Opt] = field(default_factory=list)


@dataclass
class Extend:
    name: str
    fields: list[Field]


@dataclass
class Message:
    name: str
    reserved: list[list[Any]] = field(default_factory=list)  # each: values (int, (start, end) or str)
    options: list[Opt] = field(default_factory=list)
    fields: list[Field] = field(default_factory=list)
    oneofs: list[OneOf] = field(default_factory=list)
    groups: list[Group] = field(default_factory=list)
    extensions: list[tuple[list[Any], list[Opt]]] = field(default_factory=list)
    extends: list[Extend] = field(default_factory=list)
    nested: list[Any] = field(default_factory=list)


@dataclass
class Constant:
    name: str
    tag: int
    options: list[Opt] = field(default_factory=list)


@dataclass
class Enum:
    name: str
    reserved: list[list[Any]] = field(default_factory=list)
    options: list[Opt] = field(default_factory=list)
    constants: list[Constant] = field(default_factory=list)


@dataclass
class Rpc:
    name: str
    request: str
    response: str
    request_streaming: bool
    response_streaming: bool
    options: list[Opt] = field(default_factory=list)


@dataclass
class Service:
    name: str
    rpcs: list[Rpc]
    options: list[Opt] = field(default_factory=list)


@dataclass
class File:
    syntax: str | None
    package: str | None
    imports: list[str] = field(default_factory=list)
    public_imports: list[str] = field(default_factory=list)
    options: list[Opt] = field(default_factory=list)
    types: list[Any] = field(default_factory=list)
    extends: list[Extend] = field(default_factory=list)
    services: list[Service] = field(default_factory=list)


# --- printing (Confluent's ProtobufSchemaUtils.toString, not normalized) ----------------------------------------


def _indented(text: str) -> str:
    """Java's appendIndented: every line of `text` (trailing empty lines dropped, as String.split drops them)
    prefixed with two spaces, blank ones included."""
    lines = text.split("\n")
    while lines and lines[-1] == "":
        lines.pop()
    return "".join(f"  {line}\n" for line in lines)


def escape(value: str) -> str:
    """Confluent's escapeChars."""
    table = {
        "\a": "\\a",
        "\b": "\\b",
        "\f": "\\f",
        "\n": "\\n",
        "\r": "\\r",
        "\t": "\\t",
        "\v": "\\v",
        "\\": "\\\\",
        "'": "\\'",
        '"': '\\"',
    }
    return "".join(table.get(ch, ch) for ch in value)


def _option(opt: Opt) -> str:
    name = f"({opt.name})" if opt.parenthesized else opt.name
    if opt.kind == STRING:
        return f'{name} = "{escape(opt.value)}"'
    if opt.kind in (BOOLEAN, ENUM, NUMBER):
        return f"{name} = {opt.value}"
    if opt.kind == MAP:
        return f"{name} = {{\n{_option_map(opt.value)}}}"
    if opt.kind == LIST:
        return f"{name} = {_bracketed(opt.value)}"
    return name


def _option_map(values: dict[str, Any]) -> str:
    last = len(values) - 1
    items = enumerate(values.items())
    return "".join(_indented(f"{k}: {_map_value(v)}{',' if i != last else ''}") for i, (k, v) in items)


def _map_value(value: Any) -> str:
    if isinstance(value, str):
        return f'"{escape(value)}"'
    if isinstance(value, dict):
        return "{\n" + _option_map(value) + "}"
    if isinstance(value, list):
        last = len(value) - 1
        return "[\n" + "".join(_indented(_map_value(v) + ("," if i != last else "")) for i, v in enumerate(value)) + "]"
    if isinstance(value, Prim):
        return value.value
    if isinstance(value, Opt):
        return _option(value)
    return str(value)


def _bracketed(options: list[Any]) -> str:
    """Java's appendOptions: one in brackets on the line, several a line each."""
    if len(options) == 1:
        return f"[{_map_value(options[0])}]"
    last = len(options) - 1
    return "[\n" + "".join(_indented(_map_value(o) + ("," if i != last else "")) for i, o in enumerate(options)) + "]"


def _option_line(opt: Opt) -> str:
    return f"option {_option(opt)};\n"


def _ranges(keyword: str, values: list[Any]) -> str:
    parts = []
    for v in values:
        if isinstance(v, str):
            parts.append(f'"{v}"')
        elif isinstance(v, tuple):
            parts.append(f"{v[0]} to {v[1] if v[1] < _MAX_TAG else 'max'}")
        else:
            parts.append(str(v))
    return f"{keyword} {', '.join(parts)}"


def _print_field(f: Field) -> str:
    out = f"{f.label} " if f.label else ""
    out += f"{f.type} {f.name} = {f.tag}"
    options = list(f.options)
    if f.default is not None:
        options.append(Opt("default", f.default_kind, f.default))
    if f.json_name is not None:
        options.append(Opt("json_name", STRING, f.json_name))
    if options:
        out += " " + _bracketed(options)
    return out + ";\n"


def _print_group(g: Group) -> str:
    out = f"{g.label} " if g.label else ""
    out += f"group {g.name} = {g.tag} {{"
    if g.fields:
        out += "\n" + "".join(_indented(_print_field(f)) for f in g.fields)
    return out + "}\n"


def _print_extend(e: Extend) -> str:
    out = f"extend {e.name} {{"
    if e.fields:
        out += "\n" + "".join(_indented(_print_field(f)) for f in e.fields)
    return out + "}\n"


def _print_enum(e: Enum) -> str:
    out = f"enum {e.name} {{"
    if e.reserved:
        out += "\n" + "".join(_indented(_ranges("reserved", r) + ";\n") for r in e.reserved)
    elif e.options or e.constants:
        out += "\n"
    out += "".join(_indented(_option_line(o)) for o in e.options)
    for c in e.constants:
        line = f"{c.name} = {c.tag}" + (f" {_bracketed(c.options)}" if c.options else "") + ";\n"
        out += _indented(line)
    return out + "}\n"


def _print_message(m: Message) -> str:
    out = f"message {m.name} {{"
    if m.reserved:
        out += "\n" + "".join(_indented(_ranges("reserved", r) + ";\n") for r in m.reserved)
    if m.options:
        out += "\n" + "".join(_indented(_option_line(o)) for o in m.options)
    if m.fields:
        out += "\n" + "".join(_indented(_print_field(f)) for f in m.fields)
    if m.oneofs:
        out += "\n"
        for o in m.oneofs:
            body = f"oneof {o.name} {{"
            if o.options:
                body += "\n" + "".join(_indented(_option_line(x)) for x in o.options)
            if o.fields:
                body += "\n" + "".join(_indented(_print_field(f)) for f in o.fields)
            if o.groups:
                body += "\n" + "".join(_indented(_print_group(g)) for g in o.groups)
            out += _indented(body + "}\n")
    if m.groups:
        out += "\n" + "".join(_indented(_print_group(g)) for g in m.groups)
    if m.extensions:
        out += "\n"
        for values, options in m.extensions:
            out += _indented(_ranges("extensions", values) + (f" {_bracketed(options)}" if options else "") + ";\n")
    if m.extends:
        out += "\n" + "".join(_indented(_print_extend(e)) for e in m.extends)
    if m.nested:
        out += "\n"
        out += "".join(_indented(_print_message(t)) for t in m.nested if isinstance(t, Message))
        out += "".join(_indented(_print_enum(t)) for t in m.nested if isinstance(t, Enum))
    return out + "}\n"


def _print_rpc(r: Rpc) -> str:
    out = f"rpc {r.name} ({'stream ' if r.request_streaming else ''}{r.request}) returns "
    out += f"({'stream ' if r.response_streaming else ''}{r.response})"
    if r.options:
        out += " {\n" + "".join(_indented(_option_line(o)) for o in r.options) + "}"
    return out + ";\n"


def _print_service(s: Service) -> str:
    out = f"service {s.name} {{"
    if s.options:
        out += "\n" + "".join(_indented(_option_line(o)) for o in s.options)
    if s.rpcs:
        out += "\n" + "".join(_indented(_print_rpc(r)) for r in s.rpcs)
    return out + "}\n"


def print_file(f: File) -> str:
    """Confluent's canonical text of element tree `f`."""
    out = f'syntax = "{f.syntax}";\n' if f.syntax else ""
    if f.package:
        out += f"package {f.package};\n"
    if f.imports or f.public_imports:
        out += "\n" + "".join(f'import "{i}";\n' for i in f.imports)
        out += "".join(f'import public "{i}";\n' for i in f.public_imports)
    if f.options:
        out += "\n" + "".join(_option_line(o) for o in f.options)
    if f.types:
        out += "\n"
        out += "".join(_print_message(t) for t in f.types if isinstance(t, Message))
        out += "".join(_print_enum(t) for t in f.types if isinstance(t, Enum))
    if f.extends:
        out += "\n" + "".join(_print_extend(e) for e in f.extends)
    if f.services:
        out += "\n" + "".join(_print_service(s) for s in f.services)
    return out


# --- from a FileDescriptorProto (Confluent's toProtoFile(FileDescriptorProto)) ----------------------------------


def proto_text(fd: Any) -> str | None:
    """Confluent's canonical text of FileDescriptorProto `fd` (a schema registered as a base64 descriptor), or None
    where it holds what this printer does not write."""
    try:
        return print_file(_from_descriptor(fd))
    except _Unprintable:
        return None


def _confluent_meta() -> Any | None:
    """confluent-kafka's `confluent/meta.proto` module (its options' extensions), when installed."""
    if importlib.util.find_spec("confluent_kafka") is None:
        return None
    try:
        return importlib.import_module("confluent_kafka.schema_registry.confluent.meta_pb2")
    except ImportError:
        return None


def _prim(field_desc: Any, value: Any) -> Any:
    """A value inside an option map: strings quoted, messages as maps, enums by name, the rest bare."""
    if field_desc.type == field_desc.TYPE_MESSAGE:
        return _message_map(value)
    if field_desc.type == field_desc.TYPE_ENUM:
        v = field_desc.enum_type.values_by_number.get(value)
        return Prim(ENUM, v.name if v is not None else str(value))
    if field_desc.type == field_desc.TYPE_BOOL:
        return Prim(BOOLEAN, "true" if value else "false")
    if field_desc.type == field_desc.TYPE_STRING:
        return value
    if field_desc.type == field_desc.TYPE_BYTES:
        raise _Unprintable("bytes in an option")
    if isinstance(value, float):
        raise _Unprintable("a floating point option")
    return Prim(NUMBER, str(value))


def _message_map(message: Any) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for f, value in message.ListFields():
        key = f"[{f.full_name}]" if f.is_extension else f.name
        if _is_repeated(f):
            out[key] = [_prim(f, v) for v in value]
        else:
            out[key] = _prim(f, value)
    return out


def _is_repeated(f: Any) -> bool:
    repeated = getattr(f, "is_repeated", None)
    return bool(repeated) if repeated is not None else f.label == f.LABEL_REPEATED


def _std_options(options: Any, names: tuple[str, ...]) -> list[Opt]:
    """The standard options Confluent carries over, in its order (repeated ones an element each)."""
    out = []
    for name in names:
        f = options.DESCRIPTOR.fields_by_name.get(name)
        if f is None:
            continue
        if _is_repeated(f):
            for v in getattr(options, name):
                out += [_std_value(name, f, v)]
        elif options.HasField(name):
            out.append(_std_value(name, f, getattr(options, name)))
    return out


def _std_value(name: str, f: Any, value: Any) -> Opt:
    if f.type == f.TYPE_MESSAGE:
        return Opt(name, MAP, _message_map(value))
    if f.type == f.TYPE_ENUM:
        v = f.enum_type.values_by_number.get(value)
        return Opt(name, ENUM, v.name if v is not None else str(value))
    if f.type == f.TYPE_BOOL:
        return Opt(name, BOOLEAN, "true" if value else "false")
    if f.type == f.TYPE_STRING:
        return Opt(name, STRING, value)
    return Opt(name, NUMBER, str(value))


def _meta_option(options: Any) -> list[Opt]:
    """Confluent's `(confluent.*_meta)` option, as Confluent writes it: doc, params (a list of key/value maps),
    tags, rules."""
    meta_module = _confluent_meta()
    kind = _META.get(options.DESCRIPTOR.name)
    if meta_module is None or kind is None:
        return []
    raw = options.SerializeToString()
    if not raw:
        return []
    parsed = type(options)()
    parsed.ParseFromString(raw)  # with confluent/meta.proto imported, its extensions parse as such
    extension = getattr(meta_module, kind)
    if not parsed.HasExtension(extension):
        return []
    meta = parsed.Extensions[extension]
    values: dict[str, Any] = {}
    if meta.doc:
        values["doc"] = meta.doc
    if meta.params:
        pairs = []
        for key, value in meta.params.items():  # precision and scale: value first, as Confluent writes them
            first = key in ("precision", "scale")
            pairs.append({"value": value, "key": key} if first else {"key": key, "value": value})
        values["params"] = pairs
    if meta.tags:
        values["tags"] = list(meta.tags)
    rules = []
    for rule in getattr(meta, "rules", ()):
        entry = {k: getattr(rule, k) for k in ("name", "doc", "expr", "sql") if getattr(rule, k, "")}
        if entry:
            rules.append(entry)
    if rules:
        values["rules"] = rules
    return [Opt(f"confluent.{kind}", MAP, values, parenthesized=True)] if values else []


def _from_descriptor(fd: Any) -> File:
    syntax = fd.syntax if fd.syntax in ("proto2", "proto3") else None
    proto3 = fd.syntax == "proto3"
    public, weak = set(fd.public_dependency), set(fd.weak_dependency)
    out = File(syntax, fd.package or None)
    for i, dep in enumerate(fd.dependency):
        if i in public:
            out.public_imports.append(dep)
        elif i not in weak:
            out.imports.append(dep)
    out.options = _std_options(fd.options, _FILE_OPTIONS) + _meta_option(fd.options)
    out.types = [_message(m, proto3) for m in fd.message_type] + [_enum(e) for e in fd.enum_type]
    out.extends = _extends(fd.extension, proto3)
    for s in fd.service:
        rpcs = [
            Rpc(
                m.name,
                m.input_type,
                m.output_type,
                m.client_streaming,
                m.server_streaming,
                _std_options(m.options, _METHOD_OPTIONS),
            )
            for m in s.method
        ]
        out.services.append(Service(s.name, rpcs, _std_options(s.options, _SERVICE_OPTIONS)))
    return out


def _field(f: Any, proto3: bool, in_oneof: bool) -> Field:
    label = None
    if not in_oneof:
        if f.proto3_optional:
            label = "optional"
        elif f.label == 3 or not proto3:
            label = _LABELS[f.label]
    type_name = f.type_name if f.HasField("type_name") else _SCALARS.get(f.type)
    if type_name is None:
        raise _Unprintable(f"field type {f.type}")
    default = f.default_value if not proto3 and f.HasField("default_value") else None
    # Confluent's kind of a default: by the field's type (bool, string; numbers and bytes bare; anything else,
    # enums and messages, an enum name)
    kind = {8: BOOLEAN, 9: STRING}.get(f.type, NUMBER if f.type in _SCALARS else ENUM)
    return Field(
        label,
        type_name,
        f.name,
        f.number,
        default,
        kind,
        f.json_name if f.HasField("json_name") else None,
        _std_options(f.options, _FIELD_OPTIONS) + _meta_option(f.options),
    )


def _extends(fields: Any, proto3: bool) -> list[Extend]:
    by_extendee: dict[str, list[Field]] = {}
    for f in fields:
        by_extendee.setdefault(f.extendee, []).append(_field(f, proto3, False))
    return [Extend(name, group) for name, group in by_extendee.items()]


def _range_value(start: int, end_inclusive: int) -> Any:
    return start if start == end_inclusive else (start, end_inclusive)


def _message(m: Any, proto3: bool) -> Message:
    out = Message(m.name)
    oneofs = [OneOf(o.name, [], options=_std_options(o.options, _ONEOF_OPTIONS)) for o in m.oneof_decl]
    for f in m.field:
        if f.HasField("oneof_index") and not f.proto3_optional:
            oneofs[f.oneof_index].fields.append(_field(f, proto3, True))
        else:
            out.fields.append(_field(f, proto3, False))
    out.nested = [_message(n, proto3) for n in m.nested_type] + [_enum(e) for e in m.enum_type]
    out.reserved = [[_range_value(r.start, r.end - 1)] for r in m.reserved_range]
    out.reserved += [[name] for name in m.reserved_name]
    for r in m.extension_range:
        options: list[Opt] = []
        if r.HasField("options"):
            options = _std_options(r.options, _RANGE_OPTIONS)
        out.extensions.append(([_range_value(r.start, r.end - 1)], options))
    out.options = _std_options(m.options, _MESSAGE_OPTIONS) + _meta_option(m.options)
    out.extends = _extends(m.extension, proto3)
    out.oneofs = [o for o in oneofs if o.fields]
    return out


def _enum(e: Any) -> Enum:
    out = Enum(e.name)
    for v in e.value:
        out.constants.append(
            Constant(v.name, v.number, _std_options(v.options, _ENUM_VALUE_OPTIONS) + _meta_option(v.options))
        )
    out.reserved = [[_range_value(r.start, r.end)] for r in e.reserved_range]  # enum ranges are inclusive
    out.reserved += [[name] for name in e.reserved_name]
    out.options = _std_options(e.options, _ENUM_OPTIONS) + _meta_option(e.options)
    return out


# --- from .proto text (Confluent parses it with Wire's ProtoParser, names as written) ---------------------------


def canonical_text(text: str, fd: Any) -> str | None:
    """Confluent's canonical text of `.proto` source `text`, whose compiled descriptor (with source info) is `fd`;
    None where the source holds what this printer does not write (then the text is answered as sent)."""
    if fd.syntax not in ("", "proto2", "proto3"):
        return None  # editions: Confluent's parser (Wire) reads no `edition` statement
    try:
        return print_file(_SourceFile(text, fd).file())
    except (_Unprintable, KeyError, IndexError, ValueError):
        return None


_OPTION_RE = re.compile(r"^\s*(?:option\s+)?(\(\s*[\w.]+\s*\)|[\w]+)\s*=\s*(.+?)\s*;?\s*$", re.S)


class _SourceFile:
    """An element tree of `.proto` text as Wire parses it, read from protoc's descriptor and source spans."""

    def __init__(self, text: str, fd: Any) -> None:
        self.fd = fd
        self.lines = text.splitlines(keepends=True)
        self.proto3 = fd.syntax == "proto3"
        self.spans: dict[tuple[int, ...], list[list[int]]] = {}
        for loc in fd.source_code_info.location:
            self.spans.setdefault(tuple(loc.path), []).append(list(loc.span))
        if not self.spans:
            raise _Unprintable("no source info")

    def span_text(self, span: list[int]) -> str:
        if len(span) == 3:
            line, start, end = span[0], span[1], span[2]
            return self.lines[line][start:end]
        start_line, start_col, end_line, end_col = span
        parts = [self.lines[start_line][start_col:]]
        parts += self.lines[start_line + 1 : end_line]
        parts.append(self.lines[end_line][:end_col])
        return "".join(parts)

    def text_at(self, path: tuple[int, ...]) -> str | None:
        spans = self.spans.get(path)
        return self.span_text(spans[0]) if spans else None

    def options_at(self, path: tuple[int, ...], skip: tuple[int, ...] = ()) -> list[Opt]:
        """The options written under `path` (an `...Options` field), in written order, as Wire reads them."""
        found = []
        n = len(path)
        for p, spans in self.spans.items():
            if len(p) > n and p[:n] == path and p[n] not in skip:
                for span in spans:
                    found.append((span[0], span[1], p, span))
        out: list[Opt] = []
        seen: set[tuple[int, int]] = set()
        for line, col, _p, span in sorted(found, key=lambda x: (x[0], x[1], -len(x[2]))):
            if (line, col) in seen:
                continue  # a deeper path inside the same option's span
            seen.add((line, col))
            out.append(self.option(self.span_text(span)))
        return out

    def option(self, written: str) -> Opt:
        match = _OPTION_RE.match(written)
        if match is None:
            raise _Unprintable(f"option {written!r}")
        name, value = match.group(1), match.group(2)
        parenthesized = name.startswith("(")
        if parenthesized:
            name = name[1:-1].strip()
        return Opt(name, *_scalar(value), parenthesized=parenthesized)

    def file(self) -> File:
        fd = self.fd
        syntax = fd.syntax or "proto2" if (12,) in self.spans else None
        out = File(syntax, fd.package or None)
        public, weak = set(fd.public_dependency), set(fd.weak_dependency)
        for i, dep in enumerate(fd.dependency):
            if i in public:
                out.public_imports.append(dep)
            elif i not in weak:
                out.imports.append(dep)
        out.options = self.options_at((8,))
        out.types = [self.message(m, (4, i)) for i, m in enumerate(fd.message_type)]
        out.types += [self.enum(e, (5, i)) for i, e in enumerate(fd.enum_type)]
        out.extends = self.extends(fd.extension, (7,))
        for si, s in enumerate(fd.service):
            rpcs = []
            for mi, m in enumerate(s.method):
                base = (6, si, 2, mi)
                rpcs.append(
                    Rpc(
                        m.name,
                        self.text_at(base + (2,)) or m.input_type,
                        self.text_at(base + (3,)) or m.output_type,
                        m.client_streaming,
                        m.server_streaming,
                        self.options_at(base + (4,)),
                    )
                )
            out.services.append(Service(s.name, rpcs, self.options_at((6, si, 3))))
        return out

    def field(self, f: Any, path: tuple[int, ...], in_oneof: bool, maps: dict[str, Any]) -> Field:
        entry = maps.get(f.type_name) if f.type == _MESSAGE else None
        if entry is not None:
            written = re.fullmatch(r"\s*map\s*<\s*([\w.]+)\s*,\s*([\w.]+)\s*>\s*", self.text_at(path + (6,)) or "")
            if written is None:
                raise _Unprintable("map field")
            type_name = f"map<{written.group(1)}, {written.group(2)}>"  # Wire's ProtoType spacing
            label = None
        else:
            type_name = self.text_at(path + (6,)) if f.HasField("type_name") else _SCALARS[f.type]
            written_label = self.text_at(path + (4,))
            label = written_label.strip() if written_label and not in_oneof else None
        default = None
        if f.HasField("default_value") and (path + (7,)) in self.spans:
            default = _scalar(_value_of(self.text_at(path + (7,)) or ""))[1]
        json_name = None
        if (path + (10,)) in self.spans:
            json_name = _scalar(_value_of(self.text_at(path + (10,)) or ""))[1]
        kind = {8: BOOLEAN, 9: STRING}.get(f.type, NUMBER if f.type in _SCALARS else ENUM)
        return Field(
            label, type_name or f.type_name, f.name, f.number, default, kind, json_name, self.options_at(path + (8,))
        )

    def extends(self, fields: Any, path: tuple[int, ...]) -> list[Extend]:
        out: list[Extend] = []
        for i, f in enumerate(fields):
            written = self.text_at(path + (i, 2)) or f.extendee
            if out and out[-1].name == written and self.extend_block(path + (i,)) == self.extend_block(path + (i - 1,)):
                out[-1].fields.append(self.field(f, path + (i,), False, {}))
            else:
                out.append(Extend(written, [self.field(f, path + (i,), False, {})]))
        return out

    def extend_block(self, path: tuple[int, ...]) -> int:
        """Which `extend` statement a field was written in (protoc gives each its own span of the block)."""
        spans = self.spans.get(path[:-1], [])
        field_span = self.spans[path][0]
        for i, span in enumerate(spans):
            end = (span[2], span[3]) if len(span) == 4 else (span[0], span[2])
            if (span[0], span[1]) <= (field_span[0], field_span[1]) <= end:
                return i
        return -1

    def message(self, m: Any, path: tuple[int, ...], scope: str = "") -> Message:
        full = f"{scope or ('.' + self.fd.package if self.fd.package else '')}.{m.name}"
        # map fields written as `map<K, V>`; an `...Entry` message written out with `option map_entry = true;`
        # (Confluent's printing of a descriptor, registered again as text) stays a message, as Wire reads it
        written_maps = {
            f.type_name
            for i, f in enumerate(m.field)
            if f.type == _MESSAGE and (self.text_at(path + (2, i, 6)) or "").lstrip().startswith("map")
        }
        maps = {
            f"{full}.{n.name}": n for n in m.nested_type if n.options.map_entry and f"{full}.{n.name}" in written_maps
        }
        groups = {
            f"{full}.{n.name}": (i, n)
            for i, n in enumerate(m.nested_type)
            if any(f.type == _GROUP and f.type_name == f"{full}.{n.name}" for f in m.field)
        }
        out = Message(m.name)
        oneofs = [OneOf(o.name, [], options=self.options_at(path + (8, i, 2))) for i, o in enumerate(m.oneof_decl)]
        for i, f in enumerate(m.field):
            in_oneof = f.HasField("oneof_index") and not f.proto3_optional
            if f.type == _GROUP:
                index, nested = groups[f.type_name]
                label_text = self.text_at(path + (2, i, 4))
                group = Group(
                    None if in_oneof or not label_text else label_text.strip(),
                    nested.name,
                    f.number,
                    [self.field(g, path + (3, index, 2, j), False, {}) for j, g in enumerate(nested.field)],
                )
                (oneofs[f.oneof_index].groups if in_oneof else out.groups).append(group)
                continue
            target = oneofs[f.oneof_index].fields if in_oneof else out.fields
            target.append(self.field(f, path + (2, i), in_oneof, maps))
        out.oneofs = [o for o in oneofs if o.fields or o.groups]
        nested_messages = [
            self.message(n, path + (3, i), full)
            for i, n in enumerate(m.nested_type)
            if f"{full}.{n.name}" not in maps and f"{full}.{n.name}" not in groups
        ]
        out.nested = nested_messages + [self.enum(e, path + (4, i)) for i, e in enumerate(m.enum_type)]
        out.reserved = self.reserved(path, 9, 10, m.reserved_range, m.reserved_name, exclusive=True)
        for i, r in enumerate(m.extension_range):
            out.extensions.append(([_range_value(r.start, r.end - 1)], self.options_at(path + (5, i, 3))))
        out.extensions = self.group_statements(path + (5,), out.extensions)
        out.options = self.options_at(path + (7,))
        if m.options.map_entry:  # written out (its mark blanked for protoc): Wire keeps it as an option
            out.options.insert(0, Opt("map_entry", BOOLEAN, "true"))
        out.extends = self.extends(m.extension, path + (6,))
        return out

    def group_statements(self, path: tuple[int, ...], items: list[Any]) -> list[Any]:
        """Ranges written in one `extensions` statement: one element, as Wire keeps them."""
        statements = self.spans.get(path, [])
        if len(statements) == len(items) or not items:
            return items
        merged: list[Any] = []
        owner = [self.statement_of(statements, self.spans[path + (i,)][0]) for i in range(len(items))]
        for i, item in enumerate(items):
            if merged and owner[i] == owner[i - 1]:
                merged[-1][0].extend(item[0])
            else:
                merged.append((list(item[0]), item[1]))
        return merged

    @staticmethod
    def statement_of(statements: list[list[int]], span: list[int]) -> int:
        for i, s in enumerate(statements):
            end = (s[2], s[3]) if len(s) == 4 else (s[0], s[2])
            if (s[0], s[1]) <= (span[0], span[1]) <= end:
                return i
        return -1

    def reserved(
        self, path: tuple[int, ...], ranges_at: int, names_at: int, ranges: Any, names: Any, exclusive: bool
    ) -> list[list[Any]]:
        """`reserved` statements as written: each statement one element with its values."""
        items: list[tuple[tuple[int, int], int, Any]] = []
        for i, r in enumerate(ranges):
            span = self.spans[path + (ranges_at, i)][0]
            items.append(
                (
                    (span[0], span[1]),
                    self.statement_of(self.spans.get(path + (ranges_at,), []), span),
                    _range_value(r.start, r.end - 1 if exclusive else r.end),
                )
            )
        for i, n in enumerate(names):
            span = self.spans[path + (names_at, i)][0]
            items.append(
                ((span[0], span[1]), 1000 + self.statement_of(self.spans.get(path + (names_at,), []), span), n)
            )
        items.sort(key=lambda x: x[0])
        out: list[list[Any]] = []
        last = None
        for _pos, statement, value in items:
            if out and statement == last:
                out[-1].append(value)
            else:
                out.append([value])
            last = statement
        return out

    def enum(self, e: Any, path: tuple[int, ...]) -> Enum:
        out = Enum(e.name)
        for i, v in enumerate(e.value):
            out.constants.append(Constant(v.name, v.number, self.options_at(path + (2, i, 3))))
        out.reserved = self.reserved(path, 4, 5, e.reserved_range, e.reserved_name, exclusive=False)
        out.options = self.options_at(path + (3,))
        return out


def _value_of(written: str) -> str:
    """The value of `name = value` (protoc spans some options whole, some by their value)."""
    match = _OPTION_RE.match(written)
    return match.group(2) if match else written


def _unquote(value: str) -> str:
    """A string literal's value (protoc's escapes)."""
    if len(value) >= 2 and value[0] in "\"'" and value[-1] == value[0]:
        return value[1:-1].encode("latin-1", "backslashreplace").decode("unicode_escape")
    return value


def _scalar(value: str) -> tuple[str, str]:
    """The kind and value of an option's written value, as Wire's OptionReader reads it."""
    value = value.strip()
    if value[:1] in "\"'":
        parts = re.findall(r"\"(?:[^\"\\]|\\.)*\"|'(?:[^'\\]|\\.)*'", value)
        if "".join(parts) != re.sub(r"\s+", "", value) and len(parts) != 1:
            raise _Unprintable("string literal")
        return STRING, "".join(_unquote(p) for p in parts)
    if value in ("true", "false"):
        return BOOLEAN, value
    if value[:1] in "{[":
        raise _Unprintable("aggregate option")
    if re.fullmatch(r"[-+]?(\d|\.\d|inf\b|nan\b).*", value):
        return NUMBER, value
    if re.fullmatch(r"[A-Za-z_][\w.]*", value):
        return ENUM, value
    raise _Unprintable(f"option value {value!r}")
