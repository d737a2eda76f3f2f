"""fakekafka's Schema Registry and Karapace (Aiven's Confluent-compatible registry) answer the same REST requests:
subjects, versions, ids, lookups, soft and hard deletes, configs, modes, references, normalisation, errors, and the
compatibility table's evolutions per format and level. Karapace runs from its own venv against a fakekafka broker
(its `_schemas` topic renamed, so the two registries never read each other's records); the test skips where that
venv is absent. Each request is compared field by field (status, error_code, message, body: a JSON schema's text
as a document, so key order does not count); where Karapace departs from Confluent's documented answer the request
names the difference, compat/KNOWN_DIFFERENCES.md lists it, and only what the two still share is compared.
"""

from __future__ import annotations

import json
import os
import subprocess
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from compat.env import wait_for
from fakekafka.testing.ports import free_port

KARAPACE_VENV = Path(os.environ.get("FAKEKAFKA_KARAPACE_VENV", Path.home() / ".cache/fakekafka/karapace-venv"))
KARAPACE_PYTHON = KARAPACE_VENV / "bin" / "python"

pytestmark = [
    pytest.mark.conformance,
    pytest.mark.skipif(
        not KARAPACE_PYTHON.exists() or not any(KARAPACE_VENV.glob("lib/python3*/site-packages/karapace")),
        reason=f"Karapace is not installed in {KARAPACE_VENV} (Aiven-Open/karapace, Python >= 3.12; "
        "FAKEKAFKA_KARAPACE_VENV names another venv)",
    ),
]
pytest.importorskip("avro")

import fakekafka  # noqa: E402

A1 = json.dumps({"type": "record", "name": "R", "fields": [{"name": "a", "type": "int"}]})
A2 = json.dumps(
    {
        "type": "record",
        "name": "R",
        "fields": [{"name": "a", "type": "int"}, {"name": "b", "type": "string", "default": "x"}],
    }
)
A_RETYPED = json.dumps({"type": "record", "name": "R", "fields": [{"name": "a", "type": "string"}]})
A_NO_DEFAULT = json.dumps(
    {"type": "record", "name": "R", "fields": [{"name": "a", "type": "int"}, {"name": "c", "type": "long"}]}
)
A_REORDERED = json.dumps({"fields": [{"type": "int", "name": "a"}], "name": "N", "type": "record"})
A_OTHER = json.dumps({"type": "record", "name": "N", "fields": [{"name": "a", "type": "int"}]})
REF = json.dumps({"type": "record", "name": "Ref", "namespace": "n", "fields": [{"name": "x", "type": "int"}]})
USER = json.dumps({"type": "record", "name": "U", "fields": [{"name": "r", "type": "n.Ref"}]})
J1 = json.dumps({"type": "object", "properties": {"a": {"type": "integer"}}})
P1 = 'syntax = "proto3";\nmessage M {\n  int32 a = 1;\n}\n'
P2 = 'syntax = "proto3";\nmessage M {\n  string a = 1;\n}\n'

SAME = "same"
"""status, error_code, message and body all equal."""
CODE = "code"
"""status and error_code (or is_compatible) equal; the words or the representation differ, for the reason given."""
STATUS = "status"
"""the status equal; Karapace's body is not Confluent's, for the reason given."""
DEPARTS = "departs"
"""Karapace does not serve this request, or answers it unlike Confluent (another status, or another id);
fakekafka answers as Confluent's source does (the unit tests pin that answer)."""

# (method, path, body, how to compare, why not SAME: the difference as compat/KNOWN_DIFFERENCES.md names it)
STEPS: list[tuple[str, str, Any, str, str]] = [
    ("GET", "/subjects", None, SAME, ""),
    ("GET", "/schemas/types", None, CODE, "schema types listed in another order"),
    ("GET", "/config", None, SAME, ""),
    ("GET", "/mode", None, SAME, ""),
    ("GET", "/subjects/none/versions", None, SAME, ""),
    ("GET", "/subjects/none/versions/1", None, SAME, ""),
    ("GET", "/schemas/ids/999", None, SAME, ""),
    ("POST", "/subjects/s1/versions", {"schema": A1}, SAME, ""),
    ("POST", "/subjects/s1/versions", {"schema": A1}, SAME, ""),
    ("GET", "/subjects/s1/versions", None, SAME, ""),
    ("GET", "/subjects/s1/versions/1", None, SAME, ""),
    ("GET", "/subjects/s1/versions/latest", None, SAME, ""),
    ("GET", "/subjects/s1/versions/latest/schema", None, SAME, ""),
    ("GET", "/subjects/s1/versions/-1", None, SAME, ""),
    ("GET", "/subjects/s1/versions/2", None, SAME, ""),
    ("GET", "/subjects/s1/versions/0", None, SAME, ""),
    ("GET", "/subjects/s1/versions/abc", None, SAME, ""),
    ("POST", "/subjects/s1", {"schema": A1}, SAME, ""),
    ("POST", "/subjects/s1", {"schema": A2}, SAME, ""),
    ("POST", "/subjects/none", {"schema": A1}, SAME, ""),
    ("POST", "/subjects/s1/versions", {"schema": A_RETYPED}, CODE, "409 message words"),
    (
        "POST",
        "/compatibility/subjects/s1/versions/latest",
        {"schema": A_RETYPED},
        CODE,
        "compatibility messages without verbose",
    ),
    (
        "POST",
        "/compatibility/subjects/s1/versions/latest?verbose=true",
        {"schema": A_RETYPED},
        CODE,
        "409 message words",
    ),
    ("POST", "/compatibility/subjects/s1/versions/latest", {"schema": A2}, SAME, ""),
    ("POST", "/compatibility/subjects/s1/versions/9", {"schema": A2}, SAME, ""),
    ("POST", "/compatibility/subjects/s1/versions", {"schema": A2}, DEPARTS, "compatibility against all versions"),
    (
        "POST",
        "/compatibility/subjects/nosub/versions/latest",
        {"schema": A2},
        DEPARTS,
        "compatibility with a subject that does not exist",
    ),
    ("POST", "/compatibility/subjects/nosub/versions/1", {"schema": A2}, SAME, ""),
    ("POST", "/subjects/s1/versions", {"schema": A_NO_DEFAULT}, CODE, "409 message words"),
    ("POST", "/subjects/s1/versions", {"schema": A2}, SAME, ""),
    ("GET", "/schemas/ids/1", None, SAME, ""),
    ("GET", "/schemas/ids/1/versions", None, SAME, ""),
    ("GET", "/schemas", None, SAME, ""),
    ("GET", "/schemas?subjectPrefix=s&latestOnly=true", None, SAME, ""),
    ("GET", "/schemas/ids/1/subjects", None, DEPARTS, "GET /schemas/ids/{id}/subjects and .../schema"),
    ("GET", "/schemas/ids/2/schema", None, DEPARTS, "GET /schemas/ids/{id}/subjects and .../schema"),
    ("POST", "/subjects/s1/versions", {"schema": "{not json"}, CODE, "invalid schema message words"),
    ("POST", "/subjects/s1/versions", {"schema": json.dumps({"type": "nope"})}, CODE, "invalid schema message words"),
    ("POST", "/subjects/s1/versions", {"schemaType": "XML", "schema": "x"}, STATUS, "request validation"),
    ("POST", "/subjects/s1/versions", {}, STATUS, "request validation"),
    ("GET", "/config/s1", None, SAME, ""),
    ("GET", "/config/s1?defaultToGlobal=true", None, SAME, ""),
    ("PUT", "/config/s1", {"compatibility": "NONE"}, SAME, ""),
    ("GET", "/config/s1", None, SAME, ""),
    ("PUT", "/config/s1", {"compatibility": "BOGUS"}, CODE, "invalid compatibility message words"),
    ("PUT", "/config", {"compatibility": "FULL"}, SAME, ""),
    ("GET", "/config", None, SAME, ""),
    ("DELETE", "/config/s1", None, STATUS, "DELETE /config/{subject}"),
    ("DELETE", "/config/s1", None, DEPARTS, "DELETE /config/{subject}"),
    ("PUT", "/config", {"compatibility": "BACKWARD"}, SAME, ""),
    ("GET", "/mode/m1", None, STATUS, "modes"),
    ("PUT", "/mode/m1", {"mode": "READONLY"}, DEPARTS, "modes"),
    ("PUT", "/mode", {"mode": "BOGUS"}, DEPARTS, "modes"),
    ("POST", "/subjects/j1/versions", {"schemaType": "JSON", "schema": J1}, SAME, ""),
    ("GET", "/subjects/j1/versions/1", None, SAME, ""),
    ("POST", "/subjects/p1/versions", {"schemaType": "PROTOBUF", "schema": P1}, SAME, ""),
    ("POST", "/subjects/p1/versions", {"schemaType": "PROTOBUF", "schema": P2}, CODE, "409 message words"),
    ("GET", "/subjects/p1/versions/1", None, CODE, "Protobuf text as answered"),
    ("POST", "/subjects/ref/versions", {"schema": REF}, SAME, ""),
    (
        "POST",
        "/subjects/user/versions",
        {"schema": USER, "references": [{"name": "n.Ref", "subject": "ref", "version": 1}]},
        SAME,
        "",
    ),
    (
        "POST",
        "/subjects/user2/versions",
        {"schema": USER, "references": [{"name": "n.Ref", "subject": "ref", "version": 7}]},
        CODE,
        "invalid schema message words",
    ),
    ("POST", "/subjects/user3/versions", {"schema": USER}, CODE, "invalid schema message words"),
    ("GET", "/subjects/user/versions/1", None, SAME, ""),
    ("GET", "/subjects/ref/versions/1/referencedby", None, SAME, ""),
    ("DELETE", "/subjects/ref/versions/1", None, SAME, ""),
    ("DELETE", "/subjects/ref", None, SAME, ""),
    ("DELETE", "/subjects/s1/versions/1?permanent=true", None, SAME, ""),
    ("DELETE", "/subjects/s1/versions/1", None, SAME, ""),
    ("DELETE", "/subjects/s1/versions/1", None, CODE, "soft-deleted version message words"),
    ("GET", "/subjects/s1/versions/1", None, SAME, ""),
    ("GET", "/subjects/s1/versions/1?deleted=true", None, SAME, ""),
    ("GET", "/subjects/s1/versions", None, SAME, ""),
    ("GET", "/subjects/s1/versions?deleted=true", None, SAME, ""),
    ("GET", "/schemas?deleted=true", None, STATUS, "GET /schemas?deleted=true"),
    ("POST", "/subjects/s1?deleted=true", {"schema": A1}, SAME, ""),
    ("DELETE", "/subjects/s1/versions/1?permanent=true", None, SAME, ""),
    ("GET", "/subjects/s1/versions?deleted=true", None, SAME, ""),
    ("DELETE", "/subjects/s1?permanent=true", None, SAME, ""),
    ("DELETE", "/subjects/s1", None, SAME, ""),
    ("DELETE", "/subjects/s1", None, SAME, ""),
    ("GET", "/subjects", None, SAME, ""),
    ("GET", "/subjects?deleted=true", None, CODE, "subjects with deleted=true in another order"),
    ("POST", "/subjects/s1", {"schema": A2}, SAME, ""),
    ("POST", "/subjects/s1?deleted=true", {"schema": A2}, SAME, ""),
    ("DELETE", "/subjects/s1?permanent=true", None, SAME, ""),
    ("GET", "/subjects?deleted=true", None, CODE, "subjects with deleted=true in another order"),
    ("DELETE", "/subjects/nosuch", None, SAME, ""),
    ("POST", "/subjects/norm/versions", {"schema": A_OTHER}, SAME, ""),
    ("POST", "/subjects/norm/versions?normalize=true", {"schema": A_REORDERED}, SAME, ""),
    ("POST", "/subjects/norm?normalize=true", {"schema": A_REORDERED}, SAME, ""),
    ("GET", "/nonexistent", None, STATUS, "unknown paths"),
    # last: from here on the two registries' next ids differ
    ("POST", "/subjects/again/versions", {"schema": A2}, DEPARTS, "an id after a hard delete"),
]


def call(base: str, method: str, path: str, body: Any = None) -> tuple[int, Any]:
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(
        base + path, data=data, method=method, headers={"Content-Type": "application/vnd.schemaregistry.v1+json"}
    )
    try:
        with urllib.request.urlopen(request, timeout=30) as r:
            status, raw = r.status, r.read()
    except urllib.error.HTTPError as e:
        status, raw = e.code, e.read()
    try:
        return status, json.loads(raw)
    except ValueError:
        return status, raw.decode(errors="replace")


def normal(value: Any) -> Any:
    """A JSON schema's text as a document (key order is a representation); `schemaType: AVRO` and empty
    references dropped (Confluent leaves the defaults out, Karapace's GET /schemas writes them)."""
    if isinstance(value, list):
        return [normal(v) for v in value]
    if not isinstance(value, dict):
        return value
    out = {
        k: normal(v)
        for k, v in value.items()
        if not (k == "schemaType" and v == "AVRO") and not (k == "references" and not v)
    }
    if isinstance(out.get("schema"), str) and out.get("schemaType") != "PROTOBUF":
        try:
            out["schema"] = json.loads(out["schema"])
        except ValueError:
            pass
    return out


def shared(body: Any) -> Any:
    """What a CODE comparison keeps: error_code or is_compatible (a body without either: the body, unordered)."""
    if isinstance(body, dict):
        kept = {k: body[k] for k in ("error_code", "is_compatible", "subject", "version", "id") if k in body}
        return kept or sorted(body)
    if isinstance(body, list):
        return sorted(map(json.dumps, body))
    return body


@pytest.fixture(scope="module")
def registries(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, str]]:
    """(fakekafka's registry url, Karapace's url): Karapace keeps its schemas in a topic of its own on the same
    fakekafka broker."""
    with fakekafka.Cluster(schema_registry=True) as cluster:
        port = free_port()
        log = tmp_path_factory.mktemp("karapace") / "karapace.log"
        env = {
            **os.environ,
            "KARAPACE_BOOTSTRAP_URI": cluster.bootstrap_servers,
            "KARAPACE_HOST": "127.0.0.1",
            "KARAPACE_PORT": str(port),
            "KARAPACE_REGISTRY_HOST": "127.0.0.1",
            "KARAPACE_REGISTRY_PORT": str(port),
            "KARAPACE_KARAPACE_REST": "false",
            "KARAPACE_KARAPACE_REGISTRY": "true",
            "KARAPACE_TOPIC_NAME": "_karapace_schemas",
            "KARAPACE_LOG_LEVEL": "WARNING",
        }
        env.pop("PYTHONPATH", None)
        with log.open("w") as out:
            proc = subprocess.Popen(
                [str(KARAPACE_PYTHON), "-m", "karapace"], env=env, stdout=out, stderr=subprocess.STDOUT, cwd=log.parent
            )
        url = f"http://127.0.0.1:{port}"

        def ready() -> bool:
            if proc.poll() is not None:
                return True
            try:
                return call(url, "GET", "/master_available")[1] == {"master_available": True}
            except OSError:
                return False

        try:
            # Karapace elects itself master, then waits 5 s before it writes: 60 s is generous
            up, _ = wait_for(ready, timeout=60, interval=0.2)
            if not up or proc.poll() is not None:
                pytest.fail(f"Karapace did not become ready (exit {proc.poll()}):\n{log.read_text()[-3000:]}")
            yield cluster.schema_registry_url, url
        finally:
            proc.terminate()
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


def test_rest_requests_answer_alike(registries: tuple[str, str]) -> None:
    fk, kp = registries
    differences = []
    for i, (method, path, body, how, why) in enumerate(STEPS):
        ours, theirs = call(fk, method, path, body), call(kp, method, path, body)
        if how == DEPARTS:
            assert (theirs[0], normal(theirs[1])) != (ours[0], normal(ours[1])), (
                f"Karapace now answers {method} {path} as fakekafka does: {theirs} ({why})"
            )
            assert ours[0] != 405 and not isinstance(ours[1], str), f"fakekafka: {method} {path}: {ours}"
            continue
        if how == SAME:
            a, b = (ours[0], normal(ours[1])), (theirs[0], normal(theirs[1]))
        elif how == CODE:
            a, b = (ours[0], shared(normal(ours[1]))), (theirs[0], shared(normal(theirs[1])))
        else:
            a, b = ours[0], theirs[0]
        if a != b:
            differences.append(
                f"#{i} {method} {path} {json.dumps(body)[:80] if body else ''}\n"
                f"  fakekafka: {ours}\n  karapace:  {theirs}"
            )
    assert not differences, "\n".join(differences)


# (format, the first schema, the second, the levels under which the second may follow the first)
EVOLUTIONS: list[tuple[str, str, str]] = [
    ("AVRO", A1, A2),  # a field with a default added
    ("AVRO", A2, A1),  # a field with a default removed
    ("AVRO", A1, A_NO_DEFAULT),  # a field without a default added
    ("AVRO", A_NO_DEFAULT, A1),  # a field without a default removed
    ("AVRO", A1, A_RETYPED),  # int to string
    ("AVRO", A1, json.dumps({"type": "record", "name": "R", "fields": [{"name": "a", "type": "long"}]})),  # promoted
    (
        "AVRO",
        json.dumps({"type": "enum", "name": "E", "symbols": ["A", "B"]}),
        json.dumps({"type": "enum", "name": "E", "symbols": ["A"]}),
    ),  # a symbol removed
    (
        "AVRO",
        json.dumps({"type": "enum", "name": "E", "symbols": ["A"]}),
        json.dumps({"type": "enum", "name": "E", "symbols": ["A", "B"]}),
    ),  # a symbol added
    (
        "AVRO",
        A1,
        json.dumps(
            {"type": "record", "name": "R", "fields": [{"name": "a", "type": ["null", "int"], "default": None}]}
        ),
    ),  # into a union
    (
        "JSON",
        json.dumps({"type": "object", "properties": {"a": {"type": "integer"}}}),
        json.dumps({"type": "object", "properties": {"a": {"type": "string"}}}),
    ),  # retyped
    (
        "JSON",
        json.dumps({"type": "object", "properties": {"a": {"type": "integer"}}}),
        json.dumps({"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"]}),
    ),  # now required
    (
        "JSON",
        json.dumps({"type": "object", "properties": {"a": {"type": "integer"}}, "additionalProperties": False}),
        json.dumps(
            {
                "type": "object",
                "properties": {"a": {"type": "integer"}, "b": {"type": "string"}},
                "additionalProperties": False,
            }
        ),
    ),  # a property added to a closed object
    (
        "JSON",
        json.dumps(
            {
                "type": "object",
                "properties": {"a": {"type": "integer"}, "b": {"type": "string"}},
                "additionalProperties": False,
            }
        ),
        json.dumps({"type": "object", "properties": {"a": {"type": "integer"}}, "additionalProperties": False}),
    ),
    ("JSON", json.dumps({"type": "string", "maxLength": 5}), json.dumps({"type": "string", "maxLength": 3})),
    ("JSON", json.dumps({"type": "integer"}), json.dumps({"type": "number"})),  # widened
    ("PROTOBUF", P1, P2),  # int32 to string
    ("PROTOBUF", P1, 'syntax = "proto3";\nmessage M {\n  int32 a = 1;\n  string b = 2;\n}\n'),  # a field added
    ("PROTOBUF", 'syntax = "proto3";\nmessage M {\n  int32 a = 1;\n  string b = 2;\n}\n', P1),  # a field removed
    ("PROTOBUF", P1, 'syntax = "proto3";\nmessage M {\n  int64 a = 1;\n}\n'),  # int32 to int64
    ("PROTOBUF", P1, 'syntax = "proto3";\nmessage M {\n  int32 b = 1;\n}\n'),  # renamed, same number
    ("PROTOBUF", P1, 'syntax = "proto3";\nmessage N {\n  int32 a = 1;\n}\n'),  # message renamed
]
LEVELS = ["BACKWARD", "FORWARD", "FULL", "NONE"]
KARAPACE_DIFFERS: dict[tuple[int, str], str] = {
    # Confluent: a property newly required is REQUIRED_ATTRIBUTE_ADDED, incompatible for a reader of old data
    (10, "BACKWARD"): "JSON Schema: a property made required",
    (10, "FULL"): "JSON Schema: a property made required",
}
"""(evolution, level): Karapace's verdict differs from Confluent's documented one (compat/KNOWN_DIFFERENCES.md)."""


def test_compatibility_table_alike(registries: tuple[str, str]) -> None:
    """Each evolution under each level: is_compatible (and register's 200 or 409) the same from both."""
    fk, kp = registries
    differences = []
    for n, (fmt, first, second) in enumerate(EVOLUTIONS):
        for level in LEVELS:
            subject = f"evo-{n}-{level.lower()}"
            answers = []
            for base in (fk, kp):
                steps = [
                    call(base, "PUT", f"/config/{subject}", {"compatibility": level}),
                    call(base, "POST", f"/subjects/{subject}/versions", {"schemaType": fmt, "schema": first}),
                ]
                assert all(status == 200 for status, _ in steps), (base, subject, steps)
                check = call(
                    base,
                    "POST",
                    f"/compatibility/subjects/{subject}/versions/latest",
                    {"schemaType": fmt, "schema": second},
                )
                register = call(base, "POST", f"/subjects/{subject}/versions", {"schemaType": fmt, "schema": second})
                answers.append((check[0], check[1].get("is_compatible"), register[0]))
            if (answers[0] == answers[1]) == ((n, level) in KARAPACE_DIFFERS):
                differences.append(
                    f"{fmt} #{n} {level}: fakekafka {answers[0]}, karapace {answers[1]} "
                    f"(listed as differing: {KARAPACE_DIFFERS.get((n, level), 'no')})\n"
                    f"  {first}\n  -> {second}"
                )
    assert not differences, "\n".join(differences)


# (format, three schemas registered in turn): the third follows the second but not the first, so the transitive
# levels and the plain ones part
CHAINS: list[tuple[str, str, str, str]] = [
    (
        "AVRO",
        A1,
        A2,
        json.dumps(
            {"type": "record", "name": "R", "fields": [{"name": "a", "type": "int"}, {"name": "b", "type": "string"}]}
        ),
    ),
    ("PROTOBUF", P1, 'syntax = "proto3";\nmessage M {\n}\n', P2),
]
TRANSITIVE_LEVELS = [
    "BACKWARD",
    "BACKWARD_TRANSITIVE",
    "FORWARD",
    "FORWARD_TRANSITIVE",
    "FULL",
    "FULL_TRANSITIVE",
    "NONE",
]


def test_transitive_levels_alike(registries: tuple[str, str]) -> None:
    """A chain of three schemas: the third's verdict (check and register) the same from both, at every level."""
    fk, kp = registries
    differences = []
    for n, (fmt, first, second, third) in enumerate(CHAINS):
        for level in TRANSITIVE_LEVELS:
            subject = f"chain-{n}-{level.lower()}"
            answers = []
            for base in (fk, kp):
                steps = [call(base, "PUT", f"/config/{subject}", {"compatibility": "NONE"})]
                steps += [
                    call(base, "POST", f"/subjects/{subject}/versions", {"schemaType": fmt, "schema": s})
                    for s in (first, second)
                ]
                steps.append(call(base, "PUT", f"/config/{subject}", {"compatibility": level}))
                assert all(status == 200 for status, _ in steps), (base, subject, steps)
                check = call(
                    base, "POST", f"/compatibility/subjects/{subject}/versions", {"schemaType": fmt, "schema": third}
                )
                register = call(base, "POST", f"/subjects/{subject}/versions", {"schemaType": fmt, "schema": third})
                answers.append(register[0])
                if base == fk:
                    assert check[1].get("is_compatible") == (register[0] == 200), (subject, check, register)
            if answers[0] != answers[1]:
                differences.append(f"{fmt} chain #{n} {level}: fakekafka {answers[0]}, karapace {answers[1]}")
    assert not differences, "\n".join(differences)


# Protobuf schemas as each registry answers them (GET /subjects/{s}/versions/1, GET /schemas/ids/{id}): the
# canonical printing of Confluent's ProtobufSchema. (name, schema as registered)
PROTO_LAYOUTS: list[tuple[str, str]] = [
    ("flat proto3", 'syntax = "proto3";\npackage shop;\nmessage Order { string id = 1; int64 qty = 2; }\n'),
    (
        "comments, options, imports",
        'syntax = "proto3";\n// the shop\npackage shop;\nimport "google/protobuf/timestamp.proto";\n'
        'option java_package = "com.shop";\noption java_multiple_files = true;\n'
        "message Order {\n  // the id\n  string id = 1 [deprecated = true];\n"
        "  google.protobuf.Timestamp at = 2;\n  repeated int32 n = 3 [packed = false];\n}\n",
    ),
    (
        "nested, oneof, map, enum, reserved",
        'syntax = "proto3";\npackage shop;\nmessage Order {\n  message Line { int32 n = 1; }\n'
        "  enum Kind { K0 = 0; K1 = 1; }\n  oneof pay { string card = 5; bytes token = 6; }\n"
        '  map<string, Line> lines = 3;\n  Kind kind = 4;\n  reserved 10, 12 to 15;\n  reserved "old";\n'
        "  optional double price = 7;\n}\nenum Status { UNKNOWN = 0; DONE = 1; }\n",
    ),
    ("service", 'syntax = "proto3";\nmessage Q { }\nservice S { rpc Get(Q) returns (stream Q); }\n'),
    (
        "proto2 defaults, extensions, groups",
        'syntax = "proto2";\npackage p2;\nmessage A {\n  required string a = 1;\n'
        '  optional int32 b = 2 [default = 7];\n  optional string c = 3 [default = "x"];\n'
        "  optional group G = 4 { optional int32 n = 5; }\n  extensions 100 to 199;\n}\n"
        "extend A { optional int32 ext = 100; }\n",
    ),
]


# where Karapace departs from Confluent's printing (ProtobufSchemaUtils.toString and ProtobufSchema's
# toProtoFile(FileDescriptorProto) in confluentinc/schema-registry's protobuf-provider), fakekafka prints Confluent's
PROTO_LAYOUT_DEPARTURES = {
    ("comments, options, imports", "text"): "Karapace keeps comments; Confluent's printer writes no documentation",
    ("comments, options, imports", "descriptor"): "Karapace drops a descriptor's field options (packed, "
    "deprecated); Confluent's toField carries them over",
    ("nested, oneof, map, enum, reserved", "descriptor"): "Karapace merges reserved ranges and names into one "
    "statement and leaves out `option map_entry = true;`; Confluent's toMessage writes a reserved element per "
    "range and name and the map_entry option",
    ("service", "descriptor"): "Karapace leaves a descriptor's services out; Confluent's toProtoFile converts them",
    ("proto2 defaults, extensions, groups", "descriptor"): "Karapace does not answer the registration (a proto2 "
    "descriptor with a group and an extension); Confluent prints the group as a message field",
}


def _descriptor(text: str) -> str:
    import base64

    from fakekafka.registry.protobuf import compile_proto

    fd = compile_proto(text, {})
    fd.name = "schema.proto"
    # as generated code carries it (what confluent-kafka's serializer registers): json_name only where written
    for m in fd.message_type:
        for f in m.field:
            f.ClearField("json_name")
        for n in m.nested_type:
            for f in n.field:
                f.ClearField("json_name")
    for f in fd.extension:
        f.ClearField("json_name")
    return base64.b64encode(fd.SerializeToString()).decode()


@pytest.mark.parametrize("form", ["text", "descriptor"])
def test_protobuf_layout_alike(registries: tuple[str, str], form: str) -> None:
    pytest.importorskip("grpc_tools")
    fk, kp = registries
    differences = []
    for i, (name, text) in enumerate(PROTO_LAYOUTS):
        body = {"schemaType": "PROTOBUF", "schema": text if form == "text" else _descriptor(text)}
        subject = f"layout-{form}-{i}"
        answers = []
        for base in (fk, kp):
            try:
                status, _ = call(base, "POST", f"/subjects/{subject}/versions", body)
                got = call(base, "GET", f"/subjects/{subject}/versions/1")
            except TimeoutError:
                answers.append((0, "no answer in 30 s"))
                continue
            answers.append((status, got[1].get("schema") if isinstance(got[1], dict) else got[1]))
        departs = PROTO_LAYOUT_DEPARTURES.get((name, form))
        if departs:
            assert answers[0][0] == 200 and answers[0] != answers[1], (
                f"Karapace now answers {name} ({form}) as fakekafka does ({departs}): {answers}"
            )
        elif answers[0] != answers[1]:
            differences.append(
                f"{name} ({form}):\n--- fakekafka {answers[0][0]}\n{answers[0][1]}\n"
                f"--- karapace {answers[1][0]}\n{answers[1][1]}"
            )
    assert not differences, "\n".join(differences)
