"""Compatibility of a new schema with earlier ones, by each format's rules, in Confluent's levels and words.

BACKWARD: the new schema reads data written with the old one; FORWARD: the old reads the new's; FULL: both. The
`_TRANSITIVE` levels check against every live version, the others against the latest only (the caller chooses the
versions). Each check returns the incompatibilities as Confluent's 409 message and `verbose=true` list them.

- Avro: Apache Avro's own reader/writer resolution check (`avro.compatibility`, a port of Java's
  SchemaCompatibility that Confluent's registry runs), described in Confluent's words per incompatibility type.
- JSON Schema: Confluent's rules (its JSON Schema diff): a change is compatible when every document the writer's
  schema accepts is accepted by the reader's. Open and closed content models (`additionalProperties`), properties
  added or removed, `required`, types (integer widening to number), `enum`, numeric and length bounds, `items`,
  `anyOf`/`oneOf`/`allOf`, `not`; local `$ref`s and references are followed.
- Protobuf (from descriptors, `protobuf_rules`): Confluent's rules as its own diff examples give them.
"""

from __future__ import annotations

import re
from typing import Any

from fakekafka.registry.schemas import ParsedSchema

__all__ = ["LEVELS", "check"]

LEVELS = ("NONE", "BACKWARD", "BACKWARD_TRANSITIVE", "FORWARD", "FORWARD_TRANSITIVE", "FULL", "FULL_TRANSITIVE")


def check(level: str, new: ParsedSchema, old: ParsedSchema) -> list[str]:
    """The incompatibilities of `new` with `old` under `level` (empty: compatible), each in Confluent's form."""
    if level == "NONE":
        return []
    if new.schema_type != old.schema_type:
        return [f"{{errorType:'TYPE_MISMATCH', description:'The new schema type {new.schema_type} does not match the "
                f"old schema type {old.schema_type}'}}"]
    pairs = []
    if level.startswith(("BACKWARD", "FULL")):
        pairs.append((new, old))  # (reader, writer)
    if level.startswith(("FORWARD", "FULL")):
        pairs.append((old, new))
    out: list[str] = []
    for reader, writer in pairs:
        if new.schema_type == "AVRO":
            found = _avro(reader, writer)
        elif new.schema_type == "JSON":
            found = _json(reader, writer)
        else:
            found = _protobuf(reader, writer)
        out.extend(f for f in found if f not in out)
    return out


# --- Avro -----------------------------------------------------------------------------------------------------
_AVRO_WORDS = {
    "reader_field_missing_default_value": "The field '{info}' at path '{path}' in the new schema has no default value "
                                          "and is missing in the old schema",
    "type_mismatch": "The type (path '{path}') of a field in the new schema does not match with the old schema",
    "missing_enum_symbols": "The new schema is missing enum symbols '{info}' at path '{path}' in the old schema",
    "name_mismatch": "The name of the schema has changed (path '{path}')",
    "fixed_size_mismatch": "The size of FIXED type field at path '{path}' in the new schema does not match with the "
                           "old schema",
    "missing_union_branch": "The new schema is missing a type inside a union field at path '{path}' in the old schema",
}


def _avro(reader: ParsedSchema, writer: ParsedSchema) -> list[str]:
    from avro.compatibility import ReaderWriterCompatibilityChecker, SchemaCompatibilityType

    result = ReaderWriterCompatibilityChecker().get_compatibility(reader=reader.parsed, writer=writer.parsed)
    if result.compatibility is SchemaCompatibilityType.compatible:
        return []
    # the library keeps messages and locations as sets: paired by order when there is one of each per type
    messages, locations = sorted(result.messages), sorted(result.locations)
    out = []
    for i, kind in enumerate(result.incompatibilities):
        info = messages[i] if i < len(messages) else ""
        info = re.sub(r"(reader|writer) type: (\w+)", lambda m: f"{m[1]} type: {m[2].upper()}", info)
        path = locations[i] if i < len(locations) else "/"
        words = _AVRO_WORDS[kind.value].format(info=info, path=path)
        out.append(f"{{errorType:'{kind.value.upper()}', description:'{words}', additionalInfo:'{info}'}}")
    return out


# --- JSON Schema ----------------------------------------------------------------------------------------------
_TYPES = ("null", "boolean", "object", "array", "number", "string", "integer")


class _Json:
    """Walks a writer's and a reader's schema side by side, naming every change a writer's document could fail."""

    def __init__(self, reader: ParsedSchema, writer: ParsedSchema) -> None:
        self.docs = {"reader": (reader.parsed, reader.referenced), "writer": (writer.parsed, writer.referenced)}
        self.found: list[tuple[str, str]] = []
        self._seen: set[tuple[int, int]] = set()

    def deref(self, side: str, schema: Any) -> Any:
        root, referenced = self.docs[side]
        for _ in range(32):  # a chain of $refs, bounded
            if not isinstance(schema, dict) or "$ref" not in schema:
                return schema
            ref = schema["$ref"]
            base, _, pointer = ref.partition("#")
            doc = referenced.get(base, root) if base else root
            target = doc
            for part in (p for p in pointer.split("/") if p):
                part = part.replace("~1", "/").replace("~0", "~")
                target = target.get(part) if isinstance(target, dict) else None
            schema = target if target is not None else {}
        return schema

    def add(self, kind: str, path: str) -> None:
        if (kind, path) not in self.found:
            self.found.append((kind, path))

    def compare(self, writer: Any, reader: Any, path: str) -> None:
        writer, reader = self.deref("writer", writer), self.deref("reader", reader)
        key = (id(writer), id(reader))
        if key in self._seen:  # recursive schemas: each pair once
            return
        self._seen.add(key)
        if reader is True or reader == {}:
            return  # accepts anything
        if writer is False:
            return
        if reader is False:
            self.add("SCHEMA_REMOVED" if writer is True else "TYPE_NARROWED", path)
            return
        if writer is True:
            writer = {}
        self._types(writer, reader, path)
        self._enum(writer, reader, path)
        self._bounds(writer, reader, path)
        if "object" in self._type_set(reader) or "properties" in reader or "properties" in writer:
            self._object(writer, reader, path)
        if "array" in self._type_set(reader) or "items" in reader:
            self._array(writer, reader, path)
        self._combined(writer, reader, path)
        if "not" in reader or "not" in writer:
            if "not" not in writer:
                self.add("NOT_TYPE_EXTENDED", path)
            elif "not" in reader:
                inner = _Json.__new__(_Json)
                inner.docs, inner.found, inner._seen = self.docs, [], set()
                inner.compare(reader["not"], writer["not"], path + "/not")  # negation flips the direction
                if inner.found:
                    self.add("NOT_TYPE_EXTENDED", path)

    @staticmethod
    def _type_set(schema: dict[str, Any]) -> set[str]:
        t = schema.get("type")
        if t is None:
            return set(_TYPES)
        return {t} if isinstance(t, str) else set(t)

    def _types(self, writer: dict[str, Any], reader: dict[str, Any], path: str) -> None:
        if "type" not in reader:
            return
        w, r = self._type_set(writer), self._type_set(reader)
        if "number" in r:
            r = r | {"integer"}  # an integer is a number: widening integer to number is compatible
        missing = w - r
        if not missing:
            return
        narrowed = bool(w & r) or (missing == {"number"} and "integer" in r)
        self.add("TYPE_NARROWED" if narrowed else "TYPE_CHANGED", path)

    def _enum(self, writer: dict[str, Any], reader: dict[str, Any], path: str) -> None:
        if "enum" in reader:
            if "enum" not in writer:
                self.add("ENUM_ARRAY_NARROWED", path)
            elif any(v not in reader["enum"] for v in writer["enum"]):
                self.add("ENUM_ARRAY_NARROWED" if set(map(repr, reader["enum"])) < set(map(repr, writer["enum"]))
                         else "ENUM_ARRAY_CHANGED", path)
        if "const" in reader and writer.get("const", object()) != reader["const"]:
            self.add("ENUM_ARRAY_CHANGED", path)

    def _bounds(self, writer: dict[str, Any], reader: dict[str, Any], path: str) -> None:
        upper = ("maxLength", "maximum", "exclusiveMaximum", "maxItems", "maxProperties")
        lower = ("minLength", "minimum", "exclusiveMinimum", "minItems", "minProperties")
        names = {"maxLength": "MAX_LENGTH", "maximum": "MAXIMUM", "exclusiveMaximum": "EXCLUSIVE_MAXIMUM",
                 "maxItems": "MAX_ITEMS", "maxProperties": "MAX_PROPERTIES", "minLength": "MIN_LENGTH",
                 "minimum": "MINIMUM", "exclusiveMinimum": "EXCLUSIVE_MINIMUM", "minItems": "MIN_ITEMS",
                 "minProperties": "MIN_PROPERTIES"}
        for key in (*upper, *lower):
            if key not in reader or isinstance(reader[key], bool):
                continue
            if key not in writer or isinstance(writer[key], bool):
                self.add(f"{names[key]}_ADDED", path)
            elif key in upper and reader[key] < writer[key]:
                self.add(f"{names[key]}_DECREASED", path)
            elif key in lower and reader[key] > writer[key]:
                self.add(f"{names[key]}_INCREASED", path)
        if "pattern" in reader and writer.get("pattern") != reader["pattern"]:
            self.add("PATTERN_ADDED" if "pattern" not in writer else "PATTERN_CHANGED", path)
        if "multipleOf" in reader:
            w = writer.get("multipleOf")
            if w is None:
                self.add("MULTIPLE_OF_ADDED", path)
            elif w != reader["multipleOf"] and (w / reader["multipleOf"]) % 1:
                self.add("MULTIPLE_OF_CHANGED", path)
        if reader.get("uniqueItems") and not writer.get("uniqueItems"):
            self.add("UNIQUE_ITEMS_ADDED", path)

    def _additional(self, side: str, schema: dict[str, Any]) -> Any:
        """additionalProperties as a schema (absent: true, an open content model)."""
        return self.deref(side, schema.get("additionalProperties", True))

    def _covers(self, side: str, schema: dict[str, Any], name: str) -> Any:
        """The schema a property `name` not listed in `properties` must match (patternProperties, then additional)."""
        for pattern, sub in schema.get("patternProperties", {}).items():
            if re.search(pattern, name):
                return sub
        return self._additional(side, schema)

    def _object(self, writer: dict[str, Any], reader: dict[str, Any], path: str) -> None:
        wprops, rprops = writer.get("properties", {}), reader.get("properties", {})
        wreq, rreq = set(writer.get("required", [])), set(reader.get("required", []))
        for name, rsub in rprops.items():
            sub_path = f"{path}/properties/{name}"
            if name in wprops:
                self.compare(wprops[name], rsub, sub_path)
                continue
            covering = self._covers("writer", writer, name)
            if covering is False:  # the writer never wrote it: the reader may want it only if not required
                if name in rreq and "default" not in self.deref("reader", rsub):
                    self.add("REQUIRED_PROPERTY_ADDED_TO_UNOPEN_CONTENT_MODEL", sub_path)
            elif covering is True or covering == {}:  # the writer may have written anything under that name
                if self.deref("reader", rsub) not in (True, {}):
                    self.add("PROPERTY_ADDED_TO_OPEN_CONTENT_MODEL", sub_path)
            else:  # a partially open model: its schema for the name must fit the reader's
                before = len(self.found)
                self.compare(covering, rsub, sub_path)
                if len(self.found) > before:
                    del self.found[before:]
                    self.add("PROPERTY_ADDED_NOT_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL", sub_path)
        for name, wsub in wprops.items():
            if name in rprops:
                continue
            sub_path = f"{path}/properties/{name}"
            covering = self._covers("reader", reader, name)
            if covering is False:
                self.add("PROPERTY_REMOVED_FROM_CLOSED_CONTENT_MODEL", sub_path)
            elif not (covering is True or covering == {}):
                before = len(self.found)
                self.compare(wsub, covering, sub_path)
                if len(self.found) > before:
                    del self.found[before:]
                    self.add("PROPERTY_REMOVED_NOT_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL", sub_path)
        for name in sorted(rreq - wreq):
            if name in wprops and "default" not in self.deref("reader", rprops.get(name, {})):
                self.add("REQUIRED_ATTRIBUTE_ADDED", f"{path}/required/{name}")
        wadd, radd = self._additional("writer", writer), self._additional("reader", reader)
        if radd is False and wadd is not False:
            self.add("ADDITIONAL_PROPERTIES_REMOVED", path)
        elif isinstance(radd, dict) and radd != {} and wadd is not False:
            if wadd is True or wadd == {}:
                self.add("ADDITIONAL_PROPERTIES_NARROWED", path)
            else:
                self.compare(wadd, radd, f"{path}/additionalProperties")

    def _array(self, writer: dict[str, Any], reader: dict[str, Any], path: str) -> None:
        ritems, witems = reader.get("items", True), writer.get("items", True)
        if isinstance(ritems, list) or isinstance(witems, list):
            rl = ritems if isinstance(ritems, list) else []
            wl = witems if isinstance(witems, list) else []
            for i, (w, r) in enumerate(zip(wl, rl, strict=False)):
                self.compare(w, r, f"{path}/items/{i}")
            if len(rl) > len(wl):
                self.add("ITEM_ADDED_TO_OPEN_CONTENT_MODEL", path)
            elif len(wl) > len(rl) and reader.get("additionalItems", True) is False:
                self.add("ITEM_REMOVED_FROM_CLOSED_CONTENT_MODEL", path)
            return
        self.compare(witems, ritems, f"{path}/items")

    def _combined(self, writer: dict[str, Any], reader: dict[str, Any], path: str) -> None:
        for key in ("anyOf", "oneOf", "allOf"):
            rsubs, wsubs = reader.get(key), writer.get(key)
            if rsubs is None and wsubs is None:
                continue
            if rsubs is None:
                if key == "allOf":
                    continue  # the reader dropped conditions: it accepts more
                continue
            if wsubs is None:
                self.add("COMBINED_TYPE_CHANGED" if key != "allOf" else "PRODUCT_TYPE_EXTENDED", path)
                continue
            if key == "allOf":  # a product: the reader may not add conditions
                if len(rsubs) > len(wsubs):
                    self.add("PRODUCT_TYPE_EXTENDED", path)
                    continue
            elif len(rsubs) < len(wsubs):  # a sum: the reader may not drop alternatives
                self.add("SUM_TYPE_NARROWED", path)
                continue
            # each writer alternative must fit some reader alternative
            for i, w in enumerate(wsubs):
                fits = False
                for r in rsubs:
                    inner = _Json.__new__(_Json)
                    inner.docs, inner.found, inner._seen = self.docs, [], set()
                    inner.compare(w, r, f"{path}/{key}/{i}")
                    if not inner.found:
                        fits = True
                        break
                if not fits:
                    self.add("COMBINED_TYPE_SUBSCHEMAS_CHANGED", f"{path}/{key}/{i}")


def _json(reader: ParsedSchema, writer: ParsedSchema) -> list[str]:
    walk = _Json(reader, writer)
    walk.compare(writer.parsed, reader.parsed, "#")
    return [f"{{errorType:'{kind}', description:'Found incompatible change: Difference{{jsonPath='{path}', "
            f"type={kind}}}'}}" for kind, path in walk.found]


# --- Protobuf -------------------------------------------------------------------------------------------------
def _protobuf(reader: ParsedSchema, writer: ParsedSchema) -> list[str]:
    from fakekafka.registry.protobuf_rules import incompatibilities

    # Confluent diffs the writer's schema (the original) against the reader's (the update)
    found = incompatibilities(writer.parsed, writer.referenced, reader.parsed, reader.referenced)
    return [f"{{errorType:'{kind}', description:'Found incompatible change: Difference{{fullPath='{path}', "
            f"type={kind}}}'}}" for kind, path in found]
