"""The compatibility table: schema evolutions per format and level, with the verdict Confluent documents for each
(Confluent's "Schema Evolution and Compatibility" pages for Avro, Protobuf and JSON Schema). `python -m
tests.unit.registry.test_compatibility` prints the table as Markdown for the docs."""

from __future__ import annotations

import base64
import json
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


def _no_refs(ref: Any) -> ParsedSchema:
    raise AssertionError("no references here")


def avro(*fields: dict[str, Any], name: str = "Order") -> ParsedSchema:
    return parse_schema("AVRO", json.dumps({"type": "record", "name": name, "fields": list(fields)}), (), _no_refs)


def jsonschema(properties: dict[str, Any], additional: Any = None, required: list[str] | None = None) -> ParsedSchema:
    doc: dict[str, Any] = {"type": "object", "properties": properties}
    if additional is not None:
        doc["additionalProperties"] = additional
    if required:
        doc["required"] = required
    return parse_schema("JSON", json.dumps(doc), (), _no_refs)


F = descriptor_pb2.FieldDescriptorProto


def proto(messages: dict[str, list[tuple[str, int, int]]], package: str = "shop",
          oneofs: dict[str, dict[str, list[str]]] | None = None) -> ParsedSchema:
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
    return parse_schema("PROTOBUF", base64.b64encode(file.SerializeToString()).decode(), (), _no_refs)


A = {"name": "id", "type": "string"}
# (format, change, old, new, {level: compatible?}) -- each verdict as Confluent's docs give it
TABLE: list[tuple[str, str, ParsedSchema, ParsedSchema, dict[str, bool]]] = [
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
    ("Protobuf", "field added", proto({"Order": [("id", 1, F.TYPE_STRING)]}),
     proto({"Order": [("id", 1, F.TYPE_STRING), ("qty", 2, F.TYPE_INT32)]}),
     {"BACKWARD": OK, "FORWARD": OK, "FULL": OK}),
    ("Protobuf", "field removed", proto({"Order": [("id", 1, F.TYPE_STRING), ("qty", 2, F.TYPE_INT32)]}),
     proto({"Order": [("id", 1, F.TYPE_STRING)]}), {"BACKWARD": OK, "FORWARD": OK, "FULL": OK}),
    ("Protobuf", "field renamed (same number)", proto({"Order": [("qty", 2, F.TYPE_INT32)]}),
     proto({"Order": [("quantity", 2, F.TYPE_INT32)]}), {"BACKWARD": OK, "FORWARD": OK, "FULL": OK}),
    ("Protobuf", "field number reused with another type", proto({"Order": [("qty", 2, F.TYPE_INT32)]}),
     proto({"Order": [("note", 2, F.TYPE_STRING)]}), {"BACKWARD": NO, "FORWARD": NO, "FULL": NO}),
    ("Protobuf", "int32 changed to int64 (same wire type)", proto({"Order": [("qty", 2, F.TYPE_INT32)]}),
     proto({"Order": [("qty", 2, F.TYPE_INT64)]}), {"BACKWARD": OK, "FORWARD": OK, "FULL": OK}),
    ("Protobuf", "message removed", proto({"Order": [("id", 1, F.TYPE_STRING)], "Item": [("sku", 1, F.TYPE_STRING)]}),
     proto({"Order": [("id", 1, F.TYPE_STRING)]}), {"BACKWARD": NO, "FORWARD": OK, "FULL": NO}),
    ("Protobuf", "two fields moved into one oneof",
     proto({"Order": [("a", 1, F.TYPE_STRING), ("b", 2, F.TYPE_STRING)]}),
     proto({"Order": [("a", 1, F.TYPE_STRING), ("b", 2, F.TYPE_STRING)]}, oneofs={"Order": {"ab": ["a", "b"]}}),
     {"BACKWARD": NO, "FORWARD": NO, "FULL": NO}),
    ("Protobuf", "package changed", proto({"Order": [("id", 1, F.TYPE_STRING)]}),
     proto({"Order": [("id", 1, F.TYPE_STRING)]}, package="store"), {"BACKWARD": NO, "FORWARD": NO, "FULL": NO}),
]


@pytest.mark.parametrize(("fmt", "change", "old", "new", "verdicts"), TABLE,
                         ids=[f"{row[0]}: {row[1]}" for row in TABLE])
@pytest.mark.parametrize("level", LEVELS)
def test_verdict(fmt: str, change: str, old: ParsedSchema, new: ParsedSchema, verdicts: dict[str, bool],
                 level: str) -> None:
    found = check(level, new, old)
    assert (not found) == verdicts[level], f"{fmt}, {change}, {level}: {found}"
    assert check("NONE", new, old) == []


def test_the_transitive_levels_check_like_theirs() -> None:
    old, new = avro(A), avro(A, {"name": "qty", "type": "int"})
    for level in LEVELS:
        assert check(f"{level}_TRANSITIVE", new, old) == check(level, new, old)


def test_avro_incompatibility_in_confluents_words() -> None:
    [found] = check("BACKWARD", avro(A, {"name": "qty", "type": "int"}), avro(A))
    assert found == ("{errorType:'READER_FIELD_MISSING_DEFAULT_VALUE', description:'The field 'qty' at path "
                     "'/fields/1' in the new schema has no default value and is missing in the old schema', "
                     "additionalInfo:'qty'}")
    [found] = check("BACKWARD", avro({"name": "qty", "type": "int"}), avro({"name": "qty", "type": "long"}))
    assert "errorType:'TYPE_MISMATCH'" in found and "reader type: INT not compatible with writer type: LONG" in found


def test_different_formats_are_incompatible() -> None:
    [found] = check("BACKWARD", jsonschema({}), avro(A))
    assert "TYPE_MISMATCH" in found


@pytest.mark.parametrize(("schema_type", "text", "words"), [
    ("AVRO", '{"type": "record", "name": "R"}', "of type AVRO"),
    ("AVRO", '{"type": "nosuchtype"}', "of type AVRO"),
    ("JSON", '{"type": 12}', "Invalid schema"),
    ("JSON", "[1, 2]", "object or a boolean"),
    ("PROTOBUF", "syntax = 'proto3'; message M { int32 a = 1; }", ".proto text is not supported yet"),
])
def test_invalid_schemas_are_42201(schema_type: str, text: str, words: str) -> None:
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


def test_the_docs_table_is_this_table() -> None:
    from pathlib import Path
    page = Path(__file__).parents[3] / "docs" / "cookbook" / "schema-registry.md"
    assert markdown() in page.read_text()


if __name__ == "__main__":
    print(markdown())
