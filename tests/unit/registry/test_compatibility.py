"""The compatibility table: schema evolutions per format and level, with the verdict Confluent documents for each
(Confluent's "Schema Evolution and Compatibility" pages for Avro, Protobuf and JSON Schema). `python -m
tests.unit.registry.test_compatibility` prints the table as Markdown for the docs."""

from __future__ import annotations

import base64
import json
from collections.abc import Callable
from typing import Any

import pytest

pytest.importorskip("avro")
pytest.importorskip("google.protobuf")

from google.protobuf import descriptor_pb2  # noqa: E402

from fakekafka.registry.compatibility import check  # noqa: E402
from fakekafka.registry.errors import RegistryError  # noqa: E402
from fakekafka.registry.schemas import ParsedSchema, parse_schema  # noqa: E402

OK, NO = True, False
LEVELS = ("BACKWARD", "FORWARD", "FULL")
ALL_OK = {"BACKWARD": OK, "FORWARD": OK, "FULL": OK}
ALL_NO = {"BACKWARD": NO, "FORWARD": NO, "FULL": NO}


def _no_refs(ref: Any) -> ParsedSchema:
    raise AssertionError("no references here")


Source = Callable[[], ParsedSchema]
"""A schema of the table, parsed when its test runs (the docs build reads the table without parsing it)."""


def avro(*fields: dict[str, Any], name: str = "Order") -> Source:
    return lambda: parse_schema("AVRO", json.dumps({"type": "record", "name": name, "fields": list(fields)}), (),
                                _no_refs)


def jsonschema(properties: dict[str, Any], additional: Any = None, required: list[str] | None = None) -> Source:
    doc: dict[str, Any] = {"type": "object", "properties": properties}
    if additional is not None:
        doc["additionalProperties"] = additional
    if required:
        doc["required"] = required
    return lambda: parse_schema("JSON", json.dumps(doc), (), _no_refs)


F = descriptor_pb2.FieldDescriptorProto


def proto(messages: dict[str, list[tuple[str, int, int]]], package: str = "shop",
          oneofs: dict[str, dict[str, list[str]]] | None = None) -> Source:
    """A proto3 file of messages {name: [(field, number, FieldDescriptorProto type)]}; oneofs {message: {oneof:
    [fields]}}; sent as confluent-kafka sends it (a base64 FileDescriptorProto)."""
    file = descriptor_pb2.FileDescriptorProto(name="shop.proto", package=package, syntax="proto3")
    for name, fields in messages.items():
        m = file.message_type.add(name=name)
        groups = (oneofs or {}).get(name, {})
        for group in groups:
            m.oneof_decl.add(name=group)
        for field_name, number, kind in fields:
            f = m.field.add(name=field_name, number=number, type=kind, label=F.LABEL_OPTIONAL)
            for i, (_, members) in enumerate(groups.items()):
                if field_name in members:
                    f.oneof_index = i
    return lambda: parse_schema("PROTOBUF", base64.b64encode(file.SerializeToString()).decode(), (), _no_refs)


def pt(body: str, syntax: int = 3, package: str = "shop") -> Source:
    """A `.proto` file as the Java serializers register it (compiled by protoc when the test runs)."""
    return lambda: parse_schema("PROTOBUF", f'syntax = "proto{syntax}";\npackage {package};\n{body}\n', (),
                                _no_refs)


A = {"name": "id", "type": "string"}
# (format, change, old, new, {level: compatible?}) -- each verdict as Confluent's docs give it
TABLE: list[tuple[str, str, Source, Source, dict[str, bool]]] = [
    ("Avro", "field added with a default", avro(A), avro(A, {"name": "qty", "type": "int", "default": 1}),
     {"BACKWARD": OK, "FORWARD": OK, "FULL": OK}),
    ("Avro", "field added without a default", avro(A), avro(A, {"name": "qty", "type": "int"}),
     {"BACKWARD": NO, "FORWARD": OK, "FULL": NO}),
    ("Avro", "field with a default removed", avro(A, {"name": "qty", "type": "int", "default": 1}), avro(A),
     {"BACKWARD": OK, "FORWARD": OK, "FULL": OK}),
    ("Avro", "field without a default removed", avro(A, {"name": "qty", "type": "int"}), avro(A),
     {"BACKWARD": OK, "FORWARD": NO, "FULL": NO}),
    ("Avro", "field renamed (no alias, no default)", avro(A, {"name": "qty", "type": "int"}),
     avro(A, {"name": "quantity", "type": "int"}), {"BACKWARD": NO, "FORWARD": NO, "FULL": NO}),
    ("Avro", "int promoted to long", avro({"name": "qty", "type": "int"}), avro({"name": "qty", "type": "long"}),
     {"BACKWARD": OK, "FORWARD": NO, "FULL": NO}),
    ("Avro", "string changed to int", avro({"name": "qty", "type": "string"}), avro({"name": "qty", "type": "int"}),
     {"BACKWARD": NO, "FORWARD": NO, "FULL": NO}),
    ("Avro", "enum symbol added",
     avro({"name": "state", "type": {"type": "enum", "name": "S", "symbols": ["NEW", "PAID"]}}),
     avro({"name": "state", "type": {"type": "enum", "name": "S", "symbols": ["NEW", "PAID", "SHIPPED"]}}),
     {"BACKWARD": OK, "FORWARD": NO, "FULL": NO}),
    ("Avro", "enum symbol removed",
     avro({"name": "state", "type": {"type": "enum", "name": "S", "symbols": ["NEW", "PAID"]}}),
     avro({"name": "state", "type": {"type": "enum", "name": "S", "symbols": ["NEW"]}}),
     {"BACKWARD": NO, "FORWARD": OK, "FULL": NO}),
    ("Avro", "union branch added", avro({"name": "note", "type": ["null", "string"]}),
     avro({"name": "note", "type": ["null", "string", "int"]}), {"BACKWARD": OK, "FORWARD": NO, "FULL": NO}),
    ("Avro", "record renamed", avro(A), avro(A, name="Purchase"), {"BACKWARD": NO, "FORWARD": NO, "FULL": NO}),
    ("JSON Schema", "property added to an open content model", jsonschema({"id": {"type": "string"}}),
     jsonschema({"id": {"type": "string"}, "qty": {"type": "integer"}}), {"BACKWARD": NO, "FORWARD": OK, "FULL": NO}),
    ("JSON Schema", "optional property added to a closed content model (additionalProperties false)",
     jsonschema({"id": {"type": "string"}}, False),
     jsonschema({"id": {"type": "string"}, "qty": {"type": "integer"}}, False),
     {"BACKWARD": OK, "FORWARD": NO, "FULL": NO}),
    ("JSON Schema", "required property added to a closed content model",
     jsonschema({"id": {"type": "string"}}, False),
     jsonschema({"id": {"type": "string"}, "qty": {"type": "integer"}}, False, ["qty"]),
     {"BACKWARD": NO, "FORWARD": NO, "FULL": NO}),
    ("JSON Schema", "required property with a default added to a closed content model",
     jsonschema({"id": {"type": "string"}}, False),
     jsonschema({"id": {"type": "string"}, "qty": {"type": "integer", "default": 1}}, False, ["qty"]),
     {"BACKWARD": OK, "FORWARD": NO, "FULL": NO}),
    ("JSON Schema", "property removed from an open content model",
     jsonschema({"id": {"type": "string"}, "qty": {"type": "integer"}}), jsonschema({"id": {"type": "string"}}),
     {"BACKWARD": OK, "FORWARD": NO, "FULL": NO}),
    ("JSON Schema", "property removed from a closed content model",
     jsonschema({"id": {"type": "string"}, "qty": {"type": "integer"}}, False),
     jsonschema({"id": {"type": "string"}}, False), {"BACKWARD": NO, "FORWARD": OK, "FULL": NO}),
    ("JSON Schema", "integer widened to number", jsonschema({"qty": {"type": "integer"}}),
     jsonschema({"qty": {"type": "number"}}), {"BACKWARD": OK, "FORWARD": NO, "FULL": NO}),
    ("JSON Schema", "string changed to integer", jsonschema({"qty": {"type": "string"}}),
     jsonschema({"qty": {"type": "integer"}}), {"BACKWARD": NO, "FORWARD": NO, "FULL": NO}),
    ("JSON Schema", "enum extended", jsonschema({"s": {"enum": ["NEW", "PAID"]}}),
     jsonschema({"s": {"enum": ["NEW", "PAID", "SHIPPED"]}}), {"BACKWARD": OK, "FORWARD": NO, "FULL": NO}),
    ("JSON Schema", "additionalProperties false removed (the model opened)",
     jsonschema({"id": {"type": "string"}}, False), jsonschema({"id": {"type": "string"}}),
     {"BACKWARD": OK, "FORWARD": NO, "FULL": NO}),
    ("JSON Schema", "maxLength decreased", jsonschema({"id": {"type": "string", "maxLength": 10}}),
     jsonschema({"id": {"type": "string", "maxLength": 5}}), {"BACKWARD": NO, "FORWARD": OK, "FULL": NO}),
    ("Protobuf", "field added", pt("message Order { string id = 1; }"),
     pt("message Order { string id = 1; int32 qty = 2; }"), ALL_OK),
    ("Protobuf", "field removed", pt("message Order { string id = 1; int32 qty = 2; }"),
     pt("message Order { string id = 1; }"), ALL_OK),
    ("Protobuf", "field renamed (same number)", pt("message Order { int32 qty = 2; }"),
     pt("message Order { int32 quantity = 2; }"), ALL_OK),
    ("Protobuf", "field number changed (a field removed, another added)", pt("message Order { string id = 1; }"),
     pt("message Order { string id = 2; }"), ALL_OK),
    ("Protobuf", "field number reused with another scalar type", pt("message Order { int32 qty = 2; }"),
     pt("message Order { string note = 2; }"), ALL_NO),
    ("Protobuf", "int32 changed to int64 (same wire type)", pt("message Order { int32 qty = 2; }"),
     pt("message Order { int64 qty = 2; }"), ALL_OK),
    ("Protobuf", "string changed to bytes", pt("message Order { string id = 1; }"),
     pt("message Order { bytes id = 1; }"), ALL_OK),
    ("Protobuf", "int32 changed to an enum", pt("message Order { int32 state = 1; }"),
     pt("message Order { State state = 1; }\nenum State { NEW = 0; PAID = 1; }"), ALL_OK),
    ("Protobuf", "scalar changed to a message", pt("message Order { int32 item = 1; }"),
     pt("message Order { Item item = 1; }\nmessage Item { string sku = 1; }"), ALL_NO),
    ("Protobuf", "field's message type renamed",
     pt("message Order { Item item = 1; }\nmessage Item { string sku = 1; }"),
     pt("message Order { Line item = 1; }\nmessage Line { string sku = 1; }"), ALL_NO),
    ("Protobuf", "field's message type changed incompatibly",
     pt("message Order { Item item = 1; }\nmessage Item { string sku = 1; }"),
     pt("message Order { Item item = 1; }\nmessage Item { int32 sku = 1; }"), ALL_NO),
    ("Protobuf", "message removed", pt("message Order { string id = 1; }\nmessage Item { string sku = 1; }"),
     pt("message Order { string id = 1; }"), {"BACKWARD": NO, "FORWARD": OK, "FULL": NO}),
    ("Protobuf", "enum removed (its field now int32)",
     pt("message Order { State state = 1; }\nenum State { NEW = 0; PAID = 1; }"),
     pt("message Order { int32 state = 1; }"), ALL_OK),
    ("Protobuf", "enum constant renamed", pt("message Order { State s = 1; }\nenum State { NEW = 0; PAID = 1; }"),
     pt("message Order { State s = 1; }\nenum State { NEW = 0; SETTLED = 1; }"), ALL_OK),
    ("Protobuf", "repeated added to an int32 field", pt("message Order { int32 qty = 1; }"),
     pt("message Order { repeated int32 qty = 1; }"), ALL_NO),
    ("Protobuf", "repeated added to a string field", pt("message Order { string tag = 1; }"),
     pt("message Order { repeated string tag = 1; }"), ALL_OK),
    ("Protobuf", "map field renamed", pt("message Order { map<string, int32> qty = 1; }"),
     pt("message Order { map<string, int32> quantities = 1; }"), ALL_OK),
    ("Protobuf", "map value type changed", pt("message Order { map<string, int32> qty = 1; }"),
     pt("message Order { map<string, string> qty = 1; }"), ALL_NO),
    ("Protobuf", "required field added (proto2)", pt("message Order { optional string id = 1; }", 2),
     pt("message Order { optional string id = 1; required int32 qty = 2; }", 2), ALL_NO),
    ("Protobuf", "one field moved into a new oneof", pt("message Order { string a = 1; }"),
     pt("message Order { oneof o { string a = 1; int32 b = 2; } }"), ALL_OK),
    ("Protobuf", "two fields moved into a new oneof", pt("message Order { string a = 1; string b = 2; }"),
     pt("message Order { oneof ab { string a = 1; string b = 2; } }"), {"BACKWARD": NO, "FORWARD": OK, "FULL": NO}),
    ("Protobuf", "field added to a oneof", pt("message Order { oneof o { string a = 1; string b = 2; } }"),
     pt("message Order { oneof o { string a = 1; string b = 2; int32 c = 3; } }"),
     {"BACKWARD": OK, "FORWARD": NO, "FULL": NO}),
    ("Protobuf", "package changed", pt("message Order { string id = 1; }"),
     pt("message Order { string id = 1; }", package="store"), ALL_OK),
    ("Protobuf", "field number reused with another type (serialized descriptors)",
     proto({"Order": [("qty", 2, F.TYPE_INT32)]}), proto({"Order": [("note", 2, F.TYPE_STRING)]}), ALL_NO),
    ("Protobuf", "two fields moved into a new oneof (serialized descriptors)",
     proto({"Order": [("a", 1, F.TYPE_STRING), ("b", 2, F.TYPE_STRING)]}),
     proto({"Order": [("a", 1, F.TYPE_STRING), ("b", 2, F.TYPE_STRING)]}, oneofs={"Order": {"ab": ["a", "b"]}}),
     {"BACKWARD": NO, "FORWARD": OK, "FULL": NO}),
]


@pytest.mark.parametrize(("fmt", "change", "old", "new", "verdicts"), TABLE,
                         ids=[f"{row[0]}: {row[1]}" for row in TABLE])
@pytest.mark.parametrize("level", LEVELS)
def test_verdict(fmt: str, change: str, old: Source, new: Source, verdicts: dict[str, bool], level: str) -> None:
    if fmt == "Protobuf" and "serialized" not in change:
        pytest.importorskip("grpc_tools")
    found = check(level, new(), old())
    assert (not found) == verdicts[level], f"{fmt}, {change}, {level}: {found}"
    assert check("NONE", new(), old()) == []


def test_the_transitive_levels_check_like_theirs() -> None:
    old, new = avro(A)(), avro(A, {"name": "qty", "type": "int"})()
    for level in LEVELS:
        assert check(f"{level}_TRANSITIVE", new, old) == check(level, new, old)


def test_avro_incompatibility_in_confluents_words() -> None:
    [found] = check("BACKWARD", avro(A, {"name": "qty", "type": "int"})(), avro(A)())
    assert found == ("{errorType:'READER_FIELD_MISSING_DEFAULT_VALUE', description:'The field 'qty' at path "
                     "'/fields/1' in the new schema has no default value and is missing in the old schema', "
                     "additionalInfo:'qty'}")
    [found] = check("BACKWARD", avro({"name": "qty", "type": "int"})(), avro({"name": "qty", "type": "long"})())
    assert "errorType:'TYPE_MISMATCH'" in found and "reader type: INT not compatible with writer type: LONG" in found


def test_different_formats_are_incompatible() -> None:
    [found] = check("BACKWARD", jsonschema({})(), avro(A)())
    assert "TYPE_MISMATCH" in found


@pytest.mark.parametrize(("schema_type", "text", "words"), [
    ("AVRO", '{"type": "record", "name": "R"}', "of type AVRO"),
    ("AVRO", '{"type": "nosuchtype"}', "of type AVRO"),
    ("JSON", '{"type": 12}', "Invalid schema"),
    ("JSON", "[1, 2]", "object or a boolean"),
    ("PROTOBUF", "syntax = 'proto3'; message M { strin a = 1; }", '"strin" is not defined'),
    ("PROTOBUF", "syntax = 'proto3'; message M { int32 a = 1; int32 b = 1; }", "Field number 1 has already been used"),
    ("PROTOBUF", "syntax = 'proto3'; import 'other.proto'; message M { Other a = 1; }", "other.proto"),
])
def test_invalid_schemas_are_42201(schema_type: str, text: str, words: str) -> None:
    if schema_type == "PROTOBUF":
        pytest.importorskip("grpc_tools")
    with pytest.raises(RegistryError) as refused:
        parse_schema(schema_type, text, (), _no_refs)
    assert (refused.value.status, refused.value.error_code) == (422, 42201)
    assert words in refused.value.message


def markdown() -> str:
    lines = ["| format | change | BACKWARD | FORWARD | FULL |", "|---|---|---|---|---|"]
    for fmt, change, _old, _new, verdicts in TABLE:
        cells = " | ".join("compatible" if verdicts[level] else "incompatible" for level in LEVELS)
        lines.append(f"| {fmt} | {change} | {cells} |")
    return "\n".join(lines)


def test_the_docs_table_is_generated_from_this_table() -> None:
    import sys
    from pathlib import Path
    root = Path(__file__).parents[3]
    page = (root / "docs" / "cookbook" / "schema-registry.md").read_text()
    assert "<!-- gen: registry-compat-table -->" in page
    sys.path.insert(0, str(root / "tools"))
    try:
        import docs_hooks
    finally:
        sys.path.remove(str(root / "tools"))
    assert markdown() in docs_hooks.expand(page)


def _refs(files: dict[str, ParsedSchema]) -> Any:
    return lambda ref: files[ref.subject]


def test_protobuf_follows_a_referenced_type_and_its_changes() -> None:
    """A field whose type lives in an import: a change there is the field's change (Confluent follows references);
    a message moved from the file into an import is removed from the file."""
    pytest.importorskip("grpc_tools")
    from fakekafka.registry.schemas import Reference
    lib = {v: parse_schema("PROTOBUF", f'syntax = "proto3";\npackage lib;\nmessage Home {{ {t} id = 1; }}\n', (),
                           _no_refs) for v, t in (("v1", "int32"), ("v2", "string"), ("v3", "int64"))}
    refs = {v: (Reference("lib/home.proto", v, 1),) for v in lib}
    text = 'syntax = "proto3";\nimport "lib/home.proto";\nmessage Order {{ lib.Home home = 1; }}\n'
    order = {v: parse_schema("PROTOBUF", text.format(), refs[v], _refs(lib)) for v in lib}
    assert order["v1"].parsed.dependency == ["lib/home.proto"]
    assert check("BACKWARD", order["v3"], order["v1"]) == []  # int32 -> int64 in the import: compatible
    found = check("BACKWARD", order["v2"], order["v1"])
    kinds = [f.split("type=")[1].rstrip("}'") for f in found]
    assert kinds == ["FIELD_SCALAR_KIND_CHANGED", "FIELD_NAMED_TYPE_CHANGED"]
    assert "fullPath='#/Home/1'" in found[0] and "fullPath='#/Order/1'" in found[1]
    local = parse_schema("PROTOBUF", 'syntax = "proto3";\npackage lib;\nmessage Order { Home home = 1; }\n'
                         'message Home { int32 id = 1; }\n', (), _no_refs)
    moved = check("BACKWARD", order["v1"], local)
    assert any("MESSAGE_REMOVED" in f and "#/Home" in f for f in moved)


def test_protobuf_text_and_descriptor_of_one_file_are_the_same_schema() -> None:
    """The Java serializer registers text, confluent-kafka the descriptor: a lookup of one finds the other."""
    pytest.importorskip("grpc_tools")
    from fakekafka.registry.schemas import serialized
    text = parse_schema("PROTOBUF", 'syntax = "proto3";\npackage shop;\n// a comment\nmessage Order { string id = 1; }',
                        (), _no_refs)
    as_descriptor = parse_schema("PROTOBUF", serialized(text), (), _no_refs)
    assert as_descriptor.normalized() == text.normalized()
    assert as_descriptor.parsed.message_type[0].name == "Order"


if __name__ == "__main__":
    print(markdown())
