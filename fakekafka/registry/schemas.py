"""Schemas of the three formats a Confluent registry takes, parsed with each format's own library.

Avro with the Apache Avro library (`avro`: the parser whose resolution rules `compatibility.py` runs), JSON Schema
with `jsonschema` (the schema is checked against its draft's metaschema), Protobuf with `protobuf`'s descriptors.
A schema's references (other subjects' versions) are resolved before it is parsed: Avro's named types go into one
`Names`, JSON Schema's `$ref`s to a reference's name resolve to that schema, Protobuf's imports to its file.

Protobuf is taken as `.proto` text (what the Java serializers and most tools send), compiled by protoc
(`protobuf.py`), or as a serialized FileDescriptorProto in base64 (what confluent-kafka's serializers send).
"""

from __future__ import annotations

import base64
import binascii
import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from fakekafka.registry.errors import RegistryError

__all__ = ["SCHEMA_TYPES", "ParsedSchema", "Reference", "parse_schema", "protobuf_descriptor", "protobuf_imports",
           "serialized"]

SCHEMA_TYPES = ("AVRO", "JSON", "PROTOBUF")


@dataclass(frozen=True)
class Reference:
    """A schema's use of another subject's version under a name (an Avro type, a JSON `$ref` URI, a .proto path)."""

    name: str
    subject: str
    version: int

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "subject": self.subject, "version": self.version}


@dataclass
class ParsedSchema:
    schema_type: str
    text: str
    """The schema as stored and answered: compact JSON for Avro and JSON Schema, the base64 descriptor for Protobuf."""
    references: tuple[Reference, ...]
    parsed: Any
    """avro.schema.Schema, the JSON Schema document, or a protobuf FileDescriptorProto."""
    referenced: dict[str, Any] = field(default_factory=dict)
    """JSON Schema: each reference's document by its name; Protobuf: each referenced file's descriptor."""

    _normalized: str | None = None

    def normalized(self) -> str:
        """Confluent's `normalize=true` form: one spelling per schema, so equal schemas look equal (kept: a
        register or lookup compares it with every version of the subject)."""
        if self._normalized is None:
            if self.schema_type == "AVRO":
                self._normalized = json.dumps(self.parsed.to_json(), separators=(",", ":"), sort_keys=True)
            elif self.schema_type == "JSON":
                self._normalized = json.dumps(self.parsed, separators=(",", ":"), sort_keys=True)
            else:
                self._normalized = _canonical_proto(self.parsed)
        return self._normalized


Resolver = Callable[[Reference], "ParsedSchema"]
"""Finds and parses a referenced subject version (RegistryError when it does not exist)."""


def parse_schema(schema_type: str, text: str, references: tuple[Reference, ...], resolve: Resolver) -> ParsedSchema:
    """Parses a schema as its format's library does; RegistryError 42201 (invalid schema) in words otherwise."""
    if schema_type == "AVRO":
        return _parse_avro(text, references, resolve)
    if schema_type == "JSON":
        return _parse_json(text, references, resolve)
    if schema_type == "PROTOBUF":
        return _parse_protobuf(text, references, resolve)
    raise RegistryError.invalid_schema(f"Invalid schema type {schema_type}")


def _avro_names(references: tuple[Reference, ...], resolve: Resolver, names: Any, seen: set[Reference]) -> None:
    """Defines every named type of the references (theirs first) in `names`, as Confluent parses references."""
    import avro.errors
    import avro.schema

    for ref in references:
        if ref in seen:
            continue
        seen.add(ref)
        target = resolve(ref)
        if target.schema_type != "AVRO":
            raise RegistryError.invalid_schema(f"Invalid schema: reference {ref.name} is a {target.schema_type} schema")
        _avro_names(target.references, resolve, names, seen)
        try:
            avro.schema.make_avsc_object(json.loads(target.text), names)
        except avro.errors.SchemaParseException:
            pass  # already defined by another reference: the same type


def _parse_avro(text: str, references: tuple[Reference, ...], resolve: Resolver) -> ParsedSchema:
    import avro.errors
    import avro.name
    import avro.schema

    try:
        doc = json.loads(text)
    except ValueError:
        doc = text  # a bare primitive name, e.g. string
    names = avro.name.Names()
    _avro_names(references, resolve, names, set())
    try:
        parsed = avro.schema.make_avsc_object(doc, names)
    except (avro.errors.AvroException, TypeError, KeyError, AttributeError) as e:
        raise RegistryError.invalid_schema(f"Invalid schema {text} with refs {[r.to_json() for r in references]} "
                                           f"of type AVRO, details: {e}") from None
    return ParsedSchema("AVRO", json.dumps(doc, separators=(",", ":")), references, parsed)


def _parse_json(text: str, references: tuple[Reference, ...], resolve: Resolver) -> ParsedSchema:
    import jsonschema.exceptions
    import jsonschema.validators

    try:
        doc = json.loads(text)
    except ValueError as e:
        raise RegistryError.invalid_schema(f"Invalid schema {text}, details: {e}") from None
    if not isinstance(doc, (dict, bool)):
        raise RegistryError.invalid_schema(f"Invalid schema {text}, details: a JSON Schema is an object or a boolean")
    try:
        jsonschema.validators.validator_for(doc).check_schema(doc)
    except jsonschema.exceptions.SchemaError as e:
        raise RegistryError.invalid_schema(f"Invalid schema {text}, details: {e.message}") from None
    referenced: dict[str, Any] = {}
    for ref in references:
        target = resolve(ref)
        if target.schema_type != "JSON":
            raise RegistryError.invalid_schema(f"Invalid schema: reference {ref.name} is a {target.schema_type} schema")
        referenced[ref.name] = target.parsed
        referenced.update(target.referenced)
    return ParsedSchema("JSON", json.dumps(doc, separators=(",", ":")), references, doc, referenced)


def protobuf_imports(references: tuple[Reference, ...], resolve: Resolver) -> dict[str, Any]:
    """The descriptors a Protobuf schema's imports resolve to, by import path (the references', theirs too)."""
    referenced: dict[str, Any] = {}
    for ref in references:
        target = resolve(ref)
        if target.schema_type != "PROTOBUF":
            raise RegistryError.invalid_schema(f"Invalid schema: reference {ref.name} is a {target.schema_type} schema")
        referenced[ref.name] = target.parsed
        referenced.update(target.referenced)
    return referenced


def protobuf_descriptor(text: str) -> Any | None:
    """The FileDescriptorProto a base64 text holds, or None when the text is `.proto` source."""
    from google.protobuf import descriptor_pb2, message

    proto = descriptor_pb2.FileDescriptorProto()
    try:
        proto.ParseFromString(base64.b64decode(text, validate=True))
    except (binascii.Error, ValueError, message.DecodeError):
        return None
    return proto if proto.name or proto.message_type or proto.enum_type else None


def _parse_protobuf(text: str, references: tuple[Reference, ...], resolve: Resolver) -> ParsedSchema:
    referenced = protobuf_imports(references, resolve)
    proto = protobuf_descriptor(text)
    if proto is None:
        # .proto text, as the Java serializers and most tools send it: compiled by protoc against the references
        proto = _compile_text(text, referenced)
    if not proto.message_type and not proto.enum_type:
        raise RegistryError.invalid_schema("Invalid schema: the Protobuf file defines no message or enum")
    missing = [d for d in proto.dependency if d not in referenced and not d.startswith("google/protobuf/")
               and not d.startswith("confluent/")]
    if missing:
        raise RegistryError.invalid_schema(f"Invalid schema: imports without a reference: {', '.join(missing)}")
    return ParsedSchema("PROTOBUF", text, references, proto, referenced)


_MAP_ENTRY = re.compile(r"(\bmessage\s+(\w+)\s*\{\s*)option\s+map_entry\s*=\s*true\s*;")


def _compile_text(text: str, referenced: dict[str, Any], source_info: bool = False) -> Any:
    """protoc's descriptor of `.proto` text. Confluent prints a map field of a descriptor as the `repeated` field of
    its `...Entry` message marked `option map_entry = true;`, which protoc refuses in source: such text (what
    Confluent's registry, and this one, answered for a descriptor) is compiled without the marks, and the marked
    messages are then map entries again, as in the descriptor it was printed from."""
    from fakekafka.registry.protobuf import compile_proto

    try:
        return compile_proto(text, referenced, source_info)
    except RegistryError:
        entries = {m.group(2) for m in _MAP_ENTRY.finditer(text)}
        if not entries:
            raise
    # the marks blanked out, not removed: the source spans still point into the text as registered
    blanked = _MAP_ENTRY.sub(lambda m: m.group(1) + re.sub(r"[^\n]", " ", m.group(0)[len(m.group(1)) :]), text)
    proto = compile_proto(blanked, referenced, source_info)

    def mark(messages: Any) -> None:
        for m in messages:
            if m.name in entries:
                m.options.map_entry = True
            mark(m.nested_type)
    mark(proto.message_type)
    return proto


def protobuf_spans(text: str, referenced: dict[str, Any]) -> Any:
    """The descriptor of `.proto` text with protoc's source spans (what the canonical printer reads the names and
    options as written from)."""
    return _compile_text(text, referenced, source_info=True)


def serialized(schema: ParsedSchema) -> str:
    """`format=serialized`: a Protobuf schema as a base64 FileDescriptorProto (what confluent-kafka's Protobuf
    serdes ask for, whichever form was registered); other formats as stored."""
    if schema.schema_type != "PROTOBUF":
        return schema.text
    return base64.b64encode(schema.parsed.SerializeToString(deterministic=True)).decode("ascii")


def _canonical_proto(proto: Any) -> str:
    """A descriptor with what does not change its meaning left out (file name, comments and positions, json names
    protoc fills in), so the same file registered as text and as a descriptor compares equal."""
    canon = type(proto)()
    canon.CopyFrom(proto)
    canon.ClearField("name")
    canon.ClearField("source_code_info")

    def strip(messages: Any) -> None:
        for m in messages:
            for f in list(m.field) + list(m.extension):
                f.ClearField("json_name")
            # the order fields are written in does not change the message (Confluent prints a oneof's after the others)
            ordered = sorted(m.field, key=lambda f: f.number)
            copies = [type(f)() for f in ordered]
            for copy, f in zip(copies, ordered, strict=True):
                copy.CopyFrom(f)
            del m.field[:]
            m.field.extend(copies)
            strip(m.nested_type)
    strip(canon.message_type)
    for f in canon.extension:
        f.ClearField("json_name")
    return base64.b64encode(canon.SerializeToString(deterministic=True)).decode("ascii")
