"""Wire conformance against Kafka's own codec (kafka-clients' generated `*Data` classes).

For every (API key, version) fakekafka advertises, requests and responses alike, a few messages are
generated from our declaration (seeded, so runs repeat: defaults, then pseudo-random content with
empty and non-ASCII strings, nulls, 0..2 element arrays, tagged fields set or left at their default,
unknown tags, real record batches in every codec) and checked both ways in one JVM run
(tests/conformance/wire/java/WireConformance.java):

1. Python -> Java: Java reads our bytes and writes them back byte for byte; what it read (its JSON
   converter's view) equals our parse field by field; records fields decode with MemoryRecords.
2. Java -> Python: Java builds the same content from JSON; we parse it to that content and re-encode
   it byte for byte.
3. Defaults: Java's `new XData()` encodes like our declaration's defaults.

Record batches are also checked alone: ours (each codec, a large multi-block one included) decoded by
Java, and Java's (each codec) decoded by `wire.records`. A summary goes to stdout (pytest -s) and to
build/conformance.json. Skips, naming .ci/install.sh, without javac or the Kafka jars.

The checker is kafka-clients 4.x. Kafka 4 removed old versions from its message schemas (KIP-896) while
fakekafka still serves them to old clients, so the messages 4.x cannot encode go to a second JVM run of the
same harness on kafka-clients 3.9.1 (CHECKERS); build/conformance.json says which jar checked which pairs.
"""

from __future__ import annotations

import base64
import io
import itertools
import json
import random
import tempfile
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from construct import Construct

from fakekafka.wire.messages import API_MODULES
from fakekafka.wire.primitives import (
    UNKNOWN_TAGS,
    ZERO_UUID,
    Bool,
    Float64,
    Int8,
    Int16,
    Int32,
    Int64,
    Message,
    NullableStruct,
    UInt16,
    UInt32,
    Uuid,
    _Array,
    _Sized,
)
from fakekafka.wire.protocol import request_struct, response_struct
from fakekafka.wire.records import Compression, build_batch, decode_batch, iter_batches
from tests import javautil

ROOT = Path(__file__).resolve().parents[3]
JAVA_SOURCES = (Path(__file__).resolve().parent / "java" / "WireConformance.java",
                Path(__file__).resolve().parent / "java" / "shim" / "RecordsPackage.java")
CHECKERS = (javautil.CLIENT_VERSION, "3.9.1")
"""kafka-clients versions, in the order they are asked: a message the first cannot encode goes to the next."""
SUMMARY_FILE = ROOT / "build" / "conformance.json"
SAMPLES = 4  # per (API, version, kind): the defaults, then seeded random content
CODECS = tuple(Compression)
RECORDS_FIELDS = frozenset({"records", "unaligned_records"})  # schema type `records`, not plain `bytes`
UNKNOWN_TAG_BASE = 10_000  # far above any tag Kafka defines

# What fakekafka advertises, should fakekafka.handlers not be importable (yet).
FALLBACK_ADVERTISED: dict[int, tuple[int, int]] = {
    18: (0, 4), 3: (0, 12), 0: (0, 11), 1: (4, 17), 2: (1, 10), 22: (0, 5), 19: (2, 7), 20: (1, 6),
    37: (0, 3), 32: (1, 4), 60: (0, 1), 10: (0, 6), 23: (2, 4),
}


def advertised() -> tuple[dict[int, tuple[int, int]], str]:
    try:
        from fakekafka.handlers import advertised_versions
    except ImportError:
        return dict(FALLBACK_ADVERTISED), "fallback list in tests/conformance/wire/test_conformance.py"
    return dict(advertised_versions()), "fakekafka.handlers.advertised_versions()"


ADVERTISED, ADVERTISED_FROM = advertised()
KINDS = ("Request", "Response")
CASES = [(key, v, kind) for key, (lo, hi) in sorted(ADVERTISED.items()) for v in range(lo, hi + 1) for kind in KINDS]


def struct_of(key: int, version: int, kind: str) -> Message:
    return (request_struct if kind == "Request" else response_struct)(key, version)


def norm(name: str) -> str:
    """Field names compared across languages: Kafka's camelCase and our snake_case both fold to this."""
    return name.replace("_", "").lower()


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def unb64(text: str | None) -> bytes | None:
    return None if text is None else base64.b64decode(text)


def kafka_uuid(u: uuid.UUID) -> str:
    """Kafka's Uuid.toString(): URL-safe base64 without padding."""
    return base64.urlsafe_b64encode(u.bytes).rstrip(b"=").decode()


def is_records(f: Any) -> bool:
    return isinstance(f.subcon, _Sized) and not f.subcon.text and f.name in RECORDS_FIELDS


def plain(value: Any) -> Any:
    """Containers as plain dicts and lists, so values compare by content."""
    if isinstance(value, dict):
        return {k: plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    return value


# ---------------------------------------------------------------------------------- content generation

_INT_RANGES: list[tuple[Construct, int, int]] = [
    (Int8, -(1 << 7), (1 << 7) - 1), (Int16, -(1 << 15), (1 << 15) - 1), (Int32, -(1 << 31), (1 << 31) - 1),
    (Int64, -(1 << 63), (1 << 63) - 1), (UInt16, 0, (1 << 16) - 1), (UInt32, 0, (1 << 32) - 1),
]
_TEXTS = ("", "x", "topic-1", "é ü ß", "日本語のトピック", "emoji 🎉 ok", "tab\tnew\nline", "\u0000nul")


@dataclass
class RecordsSpec:
    """One records field as generated: where it sits and the batches in it."""

    path: str
    batches: list[dict[str, Any]]
    blob: bytes


def batch_spec(rng: random.Random, codec: Compression, *, big: bool = False) -> dict[str, Any]:
    idempotent = rng.random() < 0.5
    base_ts = rng.choice([0, 1_700_000_000_000 + rng.randrange(10**9)])
    records = []
    for i in range(3 if big else rng.randint(1, 3)):
        if big:  # compressible but not trivially: multi-block for every codec's framing
            words = [rng.choice(("alpha", "beta", "gamma", "delta", "épsilon")) for _ in range(30_000)]
            value = " ".join(words).encode()
        else:
            value = rng.choice([None, b"", "värde 🎉".encode(), rng.randbytes(rng.randint(1, 40))])
        records.append({
            "timestamp": base_ts + i * rng.randint(0, 1000),
            "key": rng.choice([None, b"", b"key", rng.randbytes(8)]),
            "value": value,
            "headers": [(rng.choice(["h", "", "ключ"]), rng.choice([None, b"", b"v", rng.randbytes(5)]))
                        for _ in range(rng.randint(0, 2))],
        })
    return {
        "codec": codec,
        "base_offset": rng.choice([0, rng.randrange(1 << 40)]),
        "producer_id": rng.randrange(1 << 40) if idempotent else -1,
        "producer_epoch": rng.randrange(1 << 15) if idempotent else -1,
        "base_sequence": rng.randrange(1 << 30) if idempotent else -1,
        "transactional": idempotent and rng.random() < 0.5,
        "partition_leader_epoch": rng.choice([-1, rng.randrange(1 << 20)]),
        "records": records,
    }


def build_spec(spec: dict[str, Any]) -> bytes:
    return build_batch(spec["records"], base_offset=spec["base_offset"], compression=spec["codec"],
                       producer_id=spec["producer_id"], producer_epoch=spec["producer_epoch"],
                       base_sequence=spec["base_sequence"], transactional=spec["transactional"],
                       partition_leader_epoch=spec["partition_leader_epoch"])


class ContentGen:
    """Seeded values for a declaration; records fields get real batches, codecs taken in turn."""

    def __init__(self, rng: random.Random, codecs: itertools.cycle) -> None:
        self.rng = rng
        self.codecs = codecs
        self.records: list[RecordsSpec] = []

    def message(self, msg: Message, path: str) -> dict[str, Any]:
        rng = self.rng
        out: dict[str, Any] = {}
        for f in msg.fields:
            out[f.name] = self.field(f, f.subcon, f"{path}.{norm(f.name)}")
        for t in msg.tagged.values():
            if rng.random() < 0.4:
                value = t.default_value()
                if isinstance(value, dict) and rng.random() < 0.3:  # a default struct but for unknown tags
                    value[UNKNOWN_TAGS] = self.unknown_tags()
                out[t.name] = value
            else:
                out[t.name] = self.field(t, t.subcon, f"{path}.{norm(t.name)}")
        if msg.flexible and rng.random() < 0.15:
            out[UNKNOWN_TAGS] = self.unknown_tags()
        return out

    def unknown_tags(self) -> list[tuple[int, bytes]]:
        tags = sorted(self.rng.sample(range(UNKNOWN_TAG_BASE, UNKNOWN_TAG_BASE + 20), self.rng.randint(1, 2)))
        return [(tag, self.rng.randbytes(self.rng.randint(0, 6))) for tag in tags]

    def field(self, f: Any, sub: Construct, path: str) -> Any:
        rng = self.rng
        if is_records(f) and sub is f.subcon:
            return self.records_value(sub.nullable, path)
        for con, lo, hi in _INT_RANGES:
            if sub is con:
                r = rng.random()
                if r < 0.1:
                    return lo
                if r < 0.2:
                    return hi
                if r < 0.3 and lo < 0:
                    return -1
                return rng.randint(lo, hi) if r < 0.7 else rng.randint(max(lo, -1000), min(hi, 1000))
        if sub is Bool:
            return rng.random() < 0.5
        if sub is Float64:
            return rng.choice([0.0, -1.5, 1e300, 5e-324, round(rng.uniform(-1e6, 1e6), 3)])
        if sub is Uuid:
            return ZERO_UUID if rng.random() < 0.1 else uuid.UUID(int=rng.getrandbits(128))
        if isinstance(sub, _Sized):
            if sub.nullable and rng.random() < 0.2:
                return None
            if sub.text:
                return rng.choice(_TEXTS)
            return rng.randbytes(rng.choice([0, 1, 5, 17]))
        if isinstance(sub, _Array):
            if sub.nullable and rng.random() < 0.15:
                return None
            return [self.field(f, sub.subcon, f"{path}[{i}]") for i in range(rng.randint(0, 2))]
        if isinstance(sub, NullableStruct):
            return None if rng.random() < 0.3 else self.message(sub.subcon, path)
        if isinstance(sub, Message):
            return self.message(sub, path)
        raise TypeError(f"no generator for {sub!r} at {path}")

    def records_value(self, nullable: bool, path: str) -> bytes | None:
        r = self.rng.random()
        if nullable and r < 0.1:
            return None
        specs = [] if r < 0.2 else [batch_spec(self.rng, next(self.codecs)) for _ in range(self.rng.randint(1, 2))]
        blob = b"".join(build_spec(s) for s in specs)
        self.records.append(RecordsSpec(path, specs, blob))
        return blob


# ---------------------------------------------------------------------------------- JSON views


def _tag_is_default(t: Any, value: Any) -> bool:
    """Mirrors Message._build: a tagged field at its default is not written (nor shown by Kafka's JSON)."""
    default = t.default_value()
    if isinstance(value, dict) and isinstance(default, dict):  # unknown tags count, as in Kafka's equals()
        return plain({**default, **value}) == plain(default)
    return value == default


def to_json(msg: Message, value: dict[str, Any], *, for_java: bool) -> dict[str, Any]:
    """Our value as Kafka's JSON converters show it, keys still snake_case.

    for_java: the input for XDataJsonConverter.read (every field, records as base64). Otherwise the view
    to compare with XDataJsonConverter.write: tagged fields at their default left out, records blanked
    (Kafka 3.9 and 4.4 write an empty string for any non-null records; those are compared through MemoryRecords).
    """
    out = {}
    for f in msg.fields:
        out[f.name] = _json_value(f, f.subcon, value[f.name], for_java)
    for t in msg.tagged.values():
        if for_java or not _tag_is_default(t, value[t.name]):
            out[t.name] = _json_value(t, t.subcon, value[t.name], for_java)
    return out


def _json_value(f: Any, sub: Construct, value: Any, for_java: bool) -> Any:
    if value is None:
        return None
    if isinstance(sub, NullableStruct):
        sub = sub.subcon
    if isinstance(sub, Message):
        return to_json(sub, value, for_java=for_java)
    if isinstance(sub, _Array):
        return [_json_value(f, sub.subcon, v, for_java) for v in value]
    if isinstance(sub, _Sized):
        if sub.text:
            return value
        return "" if is_records(f) and not for_java else b64(value)
    if sub is Uuid:
        return kafka_uuid(value)
    return value


def diff(ours: Any, theirs: Any, path: str = "", out: list[str] | None = None) -> list[str]:
    """Where two JSON values differ, object keys compared by their normalised names."""
    out = [] if out is None else out
    if isinstance(ours, dict) and isinstance(theirs, dict):
        a = {norm(k): v for k, v in ours.items()}
        b = {norm(k): (k, v) for k, v in theirs.items()}
        for k in sorted(a.keys() | b.keys()):
            if k not in b:
                out.append(f"{path}.{k}: ours {a[k]!r}, Kafka's JSON lacks it")
            elif k not in a:
                out.append(f"{path}.{k}: Kafka has {b[k][1]!r} ({b[k][0]}), ours lacks it")
            else:
                diff(a[k], b[k][1], f"{path}.{k}", out)
    elif isinstance(ours, list) and isinstance(theirs, list):
        if len(ours) != len(theirs):
            out.append(f"{path}: {len(ours)} elements, Kafka has {len(theirs)}")
        for i, (x, y) in enumerate(zip(ours, theirs, strict=False)):
            diff(x, y, f"{path}[{i}]", out)
    elif ours != theirs or isinstance(ours, bool) != isinstance(theirs, bool) or type(ours) is not type(theirs) \
            and not (isinstance(ours, (int, float)) and isinstance(theirs, (int, float))):
        out.append(f"{path}: ours {ours!r}, Kafka {theirs!r}")
    return out


_TYPE_NAMES: list[tuple[Construct, str]] = [
    (Int8, "INT8"), (Int16, "INT16"), (Int32, "INT32"), (Int64, "INT64"), (UInt16, "UINT16"),
    (UInt32, "UNSIGNED_INT32"), (Float64, "FLOAT64"), (Bool, "BOOLEAN"), (Uuid, "UUID"),
]


def schema_of(sub: Construct, f: Any = None) -> Any:
    """Our declaration in the shape the harness describes Kafka's Schema (names normalised)."""
    if isinstance(sub, NullableStruct):
        return {**schema_of(sub.subcon), "nullable": True}
    if isinstance(sub, Message):
        out: dict[str, Any] = {"fields": [[norm(g.name), schema_of(g.subcon, g)] for g in sub.fields],
                               "flexible": sub.flexible, "nullable": False}
        if sub.flexible:
            out["tagged"] = {str(tag): [norm(t.name), schema_of(t.subcon, t)] for tag, t in sub.tagged.items()}
        return out
    if isinstance(sub, _Array):
        return {"array": schema_of(sub.subcon), "compact": sub.compact, "nullable": sub.nullable}
    if isinstance(sub, _Sized):
        compact = "COMPACT_" if sub.compact else ""
        if f is not None and is_records(f):
            return f"{compact}{'NULLABLE_' if sub.nullable else ''}RECORDS"
        return f"{compact}{'NULLABLE_' if sub.nullable else ''}{'STRING' if sub.text else 'BYTES'}"
    for con, name in _TYPE_NAMES:
        if sub is con:
            return name
    raise TypeError(f"no schema name for {sub!r}")


def java_schema(node: Any) -> Any:
    """Kafka's schema description with field names normalised like ours."""
    if isinstance(node, dict):
        out = dict(node)
        if "fields" in node:
            out["fields"] = [[norm(name), java_schema(t)] for name, t in node["fields"]]
        if "tagged" in node:
            out["tagged"] = {tag: [norm(name), java_schema(t)] for tag, (name, t) in node["tagged"].items()}
        if "array" in node:
            out["array"] = java_schema(node["array"])
        return out
    return node


# ---------------------------------------------------------------------------------- records views


def expected_records(spec: dict[str, Any]) -> dict[str, Any]:
    """A batch spec as the Java harness reports a decoded batch."""
    recs = spec["records"]
    return {
        "base_offset": spec["base_offset"], "last_offset": spec["base_offset"] + len(recs) - 1,
        "partition_leader_epoch": spec["partition_leader_epoch"], "magic": 2,
        "compression": spec["codec"].name.lower(), "timestamp_type": 0,
        "max_timestamp": max(r["timestamp"] for r in recs), "producer_id": spec["producer_id"],
        "producer_epoch": spec["producer_epoch"], "base_sequence": spec["base_sequence"],
        "transactional": spec["transactional"], "control": False, "valid": True,
        "records": [_record_view(spec["base_offset"] + i, r["timestamp"], r["key"], r["value"], r["headers"])
                    for i, r in enumerate(recs)],
    }


def _record_view(offset: int, ts: int, key: bytes | None, value: bytes | None, headers: Any) -> dict[str, Any]:
    return {"offset": offset, "timestamp": ts, "key": None if key is None else b64(key),
            "value": None if value is None else b64(value),
            "headers": [[k, None if v is None else b64(v)] for k, v in headers]}


def python_view(blob: bytes) -> list[dict[str, Any]]:
    """wire.records' reading of a records blob, shaped like the Java harness's report."""
    out = []
    for header, raw in iter_batches(blob):
        batch = decode_batch(raw)
        out.append({
            "base_offset": header.base_offset, "last_offset": header.last_offset,
            "partition_leader_epoch": header.partition_leader_epoch, "magic": header.magic,
            "compression": header.compression.name.lower(), "timestamp_type": int(header.timestamp_type),
            "max_timestamp": header.max_timestamp, "producer_id": header.producer_id,
            "producer_epoch": header.producer_epoch, "base_sequence": header.base_sequence,
            "transactional": header.is_transactional, "control": header.is_control, "valid": True,
            "size": header.size,
            "records": [_record_view(r.offset, r.timestamp, r.key, r.value, r.headers) for r in batch.records],
        })
    return out


def records_job(spec: dict[str, Any], job_id: int) -> dict[str, Any]:
    return {
        "id": job_id, "codec": spec["codec"].name.lower(), "base_offset": spec["base_offset"],
        "producer_id": spec["producer_id"], "producer_epoch": spec["producer_epoch"],
        "base_sequence": spec["base_sequence"], "transactional": spec["transactional"],
        "partition_leader_epoch": spec["partition_leader_epoch"],
        "records": [{"timestamp": r["timestamp"], "key": None if r["key"] is None else b64(r["key"]),
                     "value": None if r["value"] is None else b64(r["value"]),
                     "headers": [[k, None if v is None else b64(v)] for k, v in r["headers"]]}
                    for r in spec["records"]],
    }


def strip_size(batches: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [{k: v for k, v in b.items() if k != "size"} for b in batches]


# ---------------------------------------------------------------------------------- the run


@dataclass
class Sample:
    key: int
    version: int
    kind: str
    index: int
    content: dict[str, Any]
    ours: bytes
    records: list[RecordsSpec]


@dataclass
class Report:
    kafka_version: str = "?"
    """The newest checker's version (what checked the record batches and most messages)."""
    checked_by: dict[tuple[int, int, str], str] = field(default_factory=dict)
    """Each checked message case -> the kafka-clients version that checked it."""
    unchecked: dict[tuple[int, int, str], str] = field(default_factory=dict)
    failures: dict[tuple[int, int, str], list[str]] = field(default_factory=dict)
    records_failures: dict[str, list[str]] = field(default_factory=dict)
    codecs_in_messages: set[str] = field(default_factory=set)
    counts: dict[str, int] = field(default_factory=dict)

    def fail(self, case: tuple[int, int, str], text: str) -> None:
        self.failures.setdefault(case, []).append(text)


def parse_all(msg: Message, data: bytes) -> tuple[dict[str, Any] | str, int]:
    """(value, bytes left over), or (why it failed, -1)."""
    stream = io.BytesIO(data)
    try:
        value = msg._parse(stream, {}, "")
    except Exception as e:  # noqa: BLE001 - reported as the finding
        return f"{type(e).__name__}: {str(e).splitlines()[-1]} at byte {stream.tell()}", -1
    return plain(value), len(data) - stream.tell()


def without_unknown(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: without_unknown(v) for k, v in value.items() if k != UNKNOWN_TAGS}
    if isinstance(value, list):
        return [without_unknown(v) for v in value]
    return value


def generate() -> tuple[list[Sample], list[tuple[list[dict[str, Any]], bytes]], list[dict[str, Any]]]:
    codecs = itertools.cycle(CODECS)
    samples = []
    for key, version, kind in CASES:
        msg = struct_of(key, version, kind)
        for i in range(SAMPLES):
            rng = random.Random(f"{key}/{version}/{kind}/{i}")
            gen = ContentGen(rng, codecs)
            content = plain(msg.defaults() if i == 0 else gen.message(msg, ""))
            samples.append(Sample(key, version, kind, i, content, msg.build(content), gen.records))
    rng = random.Random("records")
    ours = []  # our batches, for Java to decode: per codec a small one, a big one, and two in a row
    for codec in CODECS:
        for specs in ([batch_spec(rng, codec)], [batch_spec(rng, codec, big=True)],
                      [batch_spec(rng, codec), batch_spec(rng, codec)]):
            ours.append((specs, b"".join(build_spec(s) for s in specs)))
    theirs = [batch_spec(rng, codec, big=big) for codec in CODECS for big in (False, True)]
    for spec in theirs:  # Kafka's builder takes the first timestamp as the base: keep them ascending
        spec["records"].sort(key=lambda r: r["timestamp"])
    return samples, ours, theirs


def check_message(report: Report, sample: Sample, result: dict[str, Any]) -> None:
    case = (sample.key, sample.version, sample.kind)
    name = f"sample {sample.index}"
    msg = struct_of(*case)
    parsed, left = parse_all(msg, sample.ours)
    if left < 0:
        report.fail(case, f"{name}: our own bytes do not parse: {parsed}")
        return
    if left:
        report.fail(case, f"{name}: {left} of our own bytes left after our parse")
    elif parsed != sample.content:
        for d in diff(to_json(msg, parsed, for_java=True), to_json(msg, sample.content, for_java=True))[:10]:
            report.fail(case, f"{name}: our bytes do not parse back to the content: {d.replace('Kafka', 'content')}")
        if without_unknown(parsed) == without_unknown(sample.content):
            report.fail(case, f"{name}: our bytes do not parse back to the content: unknown tags differ")
    # 1. Python -> Java
    if result["status"] != "ok":
        report.fail(case, f"{name}: Kafka could not read our bytes: {result.get('reason')}")
    else:
        if result["trailing"]:
            report.fail(case, f"{name}: Kafka left {result['trailing']} of our bytes unread")
        theirs = unb64(result["reencoded"])
        if theirs != sample.ours:
            report.fail(case, f"{name}: Kafka re-encodes our {len(sample.ours)} bytes differently "
                              f"({len(theirs)} bytes)\n  ours   {sample.ours.hex()}\n  Kafka  {theirs.hex()}")
        for d in diff(to_json(msg, parsed, for_java=False), result["json"])[:10]:
            report.fail(case, f"{name}: Kafka reads {d}")
        check_embedded_records(report, case, name, sample, result["records"])
    # 2. Java -> Python
    if "from_json_error" in result:
        report.fail(case, f"{name}: Kafka could not build our content from JSON: {result['from_json_error']}")
    elif "from_json" in result:
        built = unb64(result["from_json"])
        parsed2, left2 = parse_all(msg, built)
        expected = without_unknown(sample.content)
        if left2 < 0:
            report.fail(case, f"{name}: we cannot parse Kafka's bytes: {parsed2}")
        elif left2:
            report.fail(case, f"{name}: {left2} of Kafka's bytes left after our parse")
        elif parsed2 != expected:
            for d in diff(to_json(msg, parsed2, for_java=True), to_json(msg, expected, for_java=True))[:10]:
                report.fail(case, f"{name}: we parse Kafka's bytes with {d.replace('Kafka', 'content')}")
        if left2 == 0 and msg.build(parsed2) != built:
            report.fail(case, f"{name}: our re-encoding of Kafka's bytes differs\n  Kafka  {built.hex()}\n"
                              f"  ours   {msg.build(parsed2).hex()}")
    # 3. layout and defaults
    if "schema_error" in result:
        report.fail(case, f"Kafka's schema could not be described: {result['schema_error']}")
    elif "schema" in result:
        for d in diff(schema_of(msg), java_schema(result["schema"]))[:10]:
            report.fail(case, f"layout differs from Kafka's schema at {d}")
    if "defaults" in result:
        theirs = unb64(result["defaults"])
        ours = msg.build({})
        if theirs != ours:
            report.fail(case, f"defaults differ from Kafka's new {API_MODULES[case[0]][0]}{case[2]}Data()\n"
                              f"  ours   {ours.hex()}\n  Kafka  {theirs.hex()}")


def check_embedded_records(report: Report, case: Any, name: str, sample: Sample, found: list[dict[str, Any]]) -> None:
    expected = {r.path: r for r in sample.records}
    seen = {r["path"]: r for r in found}
    for path in sorted(expected.keys() | seen.keys()):
        if path not in seen:
            report.fail(case, f"{name}: Kafka found no records at {path}")
            continue
        if path not in expected:
            report.fail(case, f"{name}: Kafka found unexpected records at {path}")
            continue
        got, spec = seen[path], expected[path]
        if "error" in got:
            report.fail(case, f"{name}: Kafka cannot decode our records at {path}: {got['error']}")
            continue
        if unb64(got["bytes"]) != spec.blob:
            report.fail(case, f"{name}: Kafka holds different records bytes at {path}")
        want = [expected_records(s) for s in spec.batches]
        for d in diff(want, strip_size(got["batches"]))[:5]:
            report.fail(case, f"{name}: records at {path}: {d}")
        report.codecs_in_messages.update(s["codec"].name.lower() for s in spec.batches)


def check_records(report: Report, ours: list[tuple[list[dict[str, Any]], bytes]], theirs: list[dict[str, Any]],
                  result: dict[str, Any]) -> None:
    for (specs, blob), got in zip(ours, result["records_in"], strict=True):
        label = f"ours {'+'.join(s['codec'].name.lower() for s in specs)} ({len(blob)} bytes)"
        if "error" in got:
            report.records_failures.setdefault("python_to_java", []).append(f"{label}: Kafka: {got['error']}")
            continue
        sizes = [b["size"] for b in got["batches"]]
        if sum(sizes) != len(blob):
            report.records_failures.setdefault("python_to_java", []).append(f"{label}: Kafka sees {sizes}")
        for d in diff([expected_records(s) for s in specs], strip_size(got["batches"]))[:5]:
            report.records_failures.setdefault("python_to_java", []).append(f"{label}: {d}")
    for spec, got in zip(theirs, result["records_out"], strict=True):
        codec = spec["codec"].name.lower()
        label = f"Kafka's {codec} batch of {len(spec['records'])} records"
        fails = report.records_failures.setdefault("java_to_python", [])
        if "error" in got:
            fails.append(f"{label}: Kafka could not build it: {got['error']}")
            continue
        blob = unb64(got["bytes"])
        label += f" ({len(blob)} bytes)"
        try:
            view = python_view(blob)
        except Exception as e:  # noqa: BLE001 - any failure to read Kafka's batch is the finding
            fails.append(f"{label}: wire.records cannot read it: {type(e).__name__}: {e}")
            continue
        for d in diff(view, got["batches"])[:5]:
            fails.append(f"{label}: wire.records vs Kafka: {d}")
        for d in diff(strip_size(view), [expected_records(spec)])[:5]:
            fails.append(f"{label}: wire.records vs what was written: {d}")
        if spec["codec"] == Compression.NONE and build_spec(spec) != blob:
            fails.append(f"{label}: build_batch gives different bytes\n  ours   {build_spec(spec).hex()}\n"
                         f"  Kafka  {blob.hex()}")
    for kind in ("python_to_java", "java_to_python"):
        report.records_failures.setdefault(kind, [])


def java_jobs(samples: list[tuple[int, Sample]], ours: list[tuple[list[dict[str, Any]], bytes]],
              theirs: list[dict[str, Any]]) -> dict[str, Any]:
    """The harness's input: messages (with their index in the full sample list as id), then batches."""
    return {
        "messages": [{"id": n, "api": API_MODULES[s.key][0], "kind": s.kind, "version": s.version,
                      "bytes": b64(s.ours), "defaults": s.index == 0,
                      "json": to_json(struct_of(s.key, s.version, s.kind), s.content, for_java=True)}
                     for n, s in samples],
        "records_in": [{"id": n, "bytes": b64(blob)} for n, (_, blob) in enumerate(ours)],
        "records_out": [records_job(spec, n) for n, spec in enumerate(theirs)],
    }


def run_harness(version: str, jobs: dict[str, Any]) -> dict[str, Any]:
    """One JVM run of WireConformance on kafka-clients `version`; its output."""
    classes = javautil.compile_java(*JAVA_SOURCES, version=version)
    with tempfile.TemporaryDirectory(prefix="fakekafka-conformance-") as tmp:
        src, dst = Path(tmp) / "in.json", Path(tmp) / "out.json"
        src.write_text(json.dumps(jobs))
        javautil.run_java(classes, "WireConformance", str(src), str(dst), version=version)
        return json.loads(dst.read_text())


def run() -> Report:
    started = time.monotonic()
    samples, ours, theirs = generate()
    results: dict[int, tuple[str, dict[str, Any]]] = {}  # sample index -> (checker version, its answer)
    pending = list(enumerate(samples))
    java_seconds, versions = 0.0, []
    for i, version in enumerate(CHECKERS):
        if not pending:
            break
        if i:
            try:
                javautil.classpath(version)
            except pytest.skip.Exception:
                break  # an older checker not installed: what it would check stays unchecked, saying why
        java_started = time.monotonic()
        # the record batches go to the newest checker only; the older ones see the messages left over
        result = run_harness(version, java_jobs(pending, ours if i == 0 else [], theirs if i == 0 else []))
        java_seconds += time.monotonic() - java_started
        versions.append(result["kafka_version"])
        if i == 0:
            records_result = result
        for (n, _), res in zip(pending, result["messages"], strict=True):
            assert res["id"] == n
            results[n] = (result["kafka_version"], res)
        pending = [(n, s) for n, s in pending if results[n][1]["status"] == "unsupported"]
    report = Report(kafka_version=versions[0])
    for n, sample in enumerate(samples):
        case = (sample.key, sample.version, sample.kind)
        version, res = results[n]
        if res["status"] == "unsupported":
            report.unchecked[case] = (f"not checkable with kafka-clients {' or '.join(versions)}: {res['reason']}"
                                      + ("" if len(versions) == len(CHECKERS) else
                                         f" (kafka-clients {CHECKERS[len(versions)]} is not installed: "
                                         f"{javautil.INSTALL_HINT})"))
            continue
        report.checked_by[case] = version
        check_message(report, sample, res)
    check_records(report, ours, theirs, records_result)
    pairs = {(k, v) for k, v, _ in CASES}
    checked = {(k, v) for k, v in pairs if (k, v, "Request") not in report.unchecked
               and (k, v, "Response") not in report.unchecked}
    report.counts = {
        "pairs_advertised": len(pairs), "pairs_checked": len(checked),
        "pairs_checked_by": {v: len({(k, ver) for k, ver in checked if report.checked_by[(k, ver, "Request")] == v})
                             for v in versions},
        "messages": len(samples), "records_checks": len(ours) + len(theirs),
        "embedded_batches": sum(len(r.batches) for s in samples for r in s.records),
        "seconds": round(time.monotonic() - started, 2), "java_seconds": round(java_seconds, 2),
    }
    write_summary(report)
    return report


def version_ranges(versions: list[int]) -> str:
    """[0, 1, 2, 5] -> "0-2, 5"."""
    out: list[str] = []
    for _, group in itertools.groupby(enumerate(sorted(versions)), key=lambda iv: iv[1] - iv[0]):
        vs = [v for _, v in group]
        out.append(f"{vs[0]}-{vs[-1]}" if len(vs) > 1 else str(vs[0]))
    return ", ".join(out)


def checked_with(report: Report) -> dict[str, dict[str, str]]:
    """kafka-clients version -> {API name: the versions it checked (requests and responses alike)}."""
    by: dict[str, dict[int, list[int]]] = {}
    for (key, version, kind), checker in sorted(report.checked_by.items()):
        if kind == "Request":
            by.setdefault(checker, {}).setdefault(key, []).append(version)
    return {checker: {API_MODULES[key][0]: version_ranges(vs) for key, vs in sorted(apis.items())}
            for checker, apis in by.items()}


def write_summary(report: Report) -> None:
    c = report.counts
    by = ", ".join(f"{n} with {v}" for v, n in c["pairs_checked_by"].items())
    line = (f"wire conformance: {c['pairs_checked']} pairs checked / {c['pairs_advertised']} pairs advertised "
            f"(kafka-clients {by}; {c['messages']} messages, {c['records_checks']} record "
            f"batch checks; {len(report.unchecked)} messages not checkable; "
            f"{sum(map(len, report.failures.values()))} message failures; {c['seconds']} s)")
    print(f"\n{line}")
    for (k, v, kind), reason in sorted(report.unchecked.items()):
        print(f"  {API_MODULES[k][0]} v{v} {kind}: {reason}")

    def label(case: tuple[int, int, str]) -> str:
        return f"{API_MODULES[case[0]][0]}({case[0]}) v{case[1]} {case[2]}"

    SUMMARY_FILE.parent.mkdir(parents=True, exist_ok=True)
    SUMMARY_FILE.write_text(json.dumps({
        "summary": line,
        "kafka_clients": report.kafka_version,
        "checked_with": checked_with(report),
        "advertised_from": ADVERTISED_FROM,
        "advertised": {API_MODULES[k][0]: list(r) for k, r in sorted(ADVERTISED.items())},
        **c,
        "not_checkable": {label(case): reason for case, reason in sorted(report.unchecked.items())},
        "failures": {label(case): f for case, f in sorted(report.failures.items())},
        "records_failures": report.records_failures,
        "codecs_in_messages": sorted(report.codecs_in_messages),
    }, indent=2, ensure_ascii=False) + "\n")


@pytest.fixture(scope="module")
def conformance() -> Report:
    return run()


def _case_id(case: tuple[int, int, str]) -> str:
    return f"{API_MODULES[case[0]][0]}-v{case[1]}-{case[2].lower()}"


@pytest.mark.parametrize("case", CASES, ids=_case_id)
def test_message(conformance: Report, case: tuple[int, int, str]) -> None:
    if case in conformance.unchecked:
        pytest.skip(conformance.unchecked[case])
    failures = conformance.failures.get(case, [])
    assert not failures, "\n".join(failures)


def test_every_advertised_pair_checked(conformance: Report) -> None:
    """Kafka 4 cannot encode what KIP-896 removed; 3.9.1 checks those, so nothing advertised goes unchecked."""
    missing = sorted({(k, v) for k, v, _ in conformance.unchecked})
    assert not missing, "advertised but not checked: " + ", ".join(
        f"{API_MODULES[k][0]} v{v} ({conformance.unchecked.get((k, v, 'Request')) or ''})" for k, v in missing)


def test_our_batches_read_by_kafka(conformance: Report) -> None:
    failures = conformance.records_failures["python_to_java"]
    assert not failures, "\n".join(failures)


def test_kafka_batches_read_by_us(conformance: Report) -> None:
    failures = conformance.records_failures["java_to_python"]
    assert not failures, "\n".join(failures)


def test_every_codec_inside_messages(conformance: Report) -> None:
    if not conformance.counts["embedded_batches"]:
        pytest.skip("no advertised API carries a records field")
    assert conformance.codecs_in_messages == {c.name.lower() for c in CODECS}
