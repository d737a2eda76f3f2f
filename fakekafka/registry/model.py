"""The registry's state and rules, kept as Confluent keeps them: a fold over the records of the `_schemas` topic.

Every change is a record appended to the log first and applied when it is read back (`sync`), as Confluent's
registry writes to its KafkaStore and waits for its reader to see the write: so the state after a restart, rebuilt
from the topic, is the state before it, and a reader of `_schemas` sees what a Confluent registry would write. The
log is given (`SchemaLog`): the cluster's `_schemas` topic (`store.py`) or, in unit tests, a list.

Records, Confluent's JSON (keys and values):

    {"keytype":"SCHEMA","subject":S,"version":V,"magic":1}   {"subject":S,"version":V,"id":N,"schema":...,
                                                             "deleted":false} (+ schemaType, references); null: a
                                                             hard delete
    {"keytype":"CONFIG","subject":S|null,"magic":0}          {"compatibilityLevel":"BACKWARD"}; null: removed
    {"keytype":"MODE","subject":S|null,"magic":0}            {"mode":"READONLY"}; null: removed
    {"keytype":"DELETE_SUBJECT","subject":S,"magic":0}       {"subject":S,"version":V}: versions up to V soft-deleted

Nothing here touches sockets, threads or the cluster: the REST layer (`http.py`) calls these methods.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

from fakekafka.registry import compatibility
from fakekafka.registry.errors import RegistryError
from fakekafka.registry.protobuf_text import canonical_text, proto_text
from fakekafka.registry.schemas import (
    SCHEMA_TYPES,
    ParsedSchema,
    Reference,
    parse_schema,
    protobuf_descriptor,
    protobuf_imports,
    protobuf_spans,
    serialized,
)
from fakekafka.registry.settings import MODES, RegistrySettings, dumps, flag

__all__ = ["MODES", "MemoryLog", "Registry", "SchemaLog"]

MAX_VERSION = 2**31 - 1

class SchemaLog(Protocol):
    """Where the records live: appended in order, read back from an offset."""

    def append(self, records: list[tuple[bytes, bytes | None]]) -> None:
        """Appends the records (key, value) as one write; RegistryError (50001) when they cannot be stored."""

    def read(self, offset: int) -> list[tuple[int, bytes | None, bytes | None]]:
        """(offset, key, value) of every record at or after `offset`, in order."""

class MemoryLog:
    """A SchemaLog in a list, for the model's own tests."""

    def __init__(self) -> None:
        self.records: list[tuple[bytes, bytes | None]] = []

    def append(self, records: list[tuple[bytes, bytes | None]]) -> None:
        self.records.extend(records)

    def read(self, offset: int) -> list[tuple[int, bytes | None, bytes | None]]:
        return [(i, k, v) for i, (k, v) in enumerate(self.records) if i >= offset]

@dataclass
class _Version:
    subject: str
    version: int
    schema_id: int
    deleted: bool

@dataclass(frozen=True)
class _Schema:
    schema_type: str
    text: str
    references: tuple[Reference, ...]

def schema_key(subject: str, version: int) -> bytes:
    return dumps({"keytype": "SCHEMA", "subject": subject, "version": version, "magic": 1})

class Registry(RegistrySettings):
    """Subjects, versions, global ids, compatibility configs and modes: Confluent Schema Registry's model."""

    def __init__(self, log: SchemaLog) -> None:
        self.log = log
        self.offset = 0
        self.subjects: dict[str, dict[int, _Version]] = {}
        self.schemas: dict[int, _Schema] = {}
        self.ids: dict[_Schema, int] = {}
        self.max_id = 0
        self.configs: dict[str | None, str] = {}
        self.modes: dict[str | None, str] = {}
        self._parsed: dict[int, ParsedSchema] = {}
        self._printed: dict[int, str] = {}
        self.sync()

    # --- the log ---------------------------------------------------------------------------------------------
    def sync(self) -> None:
        """Applies the records written since the last read (by this registry or anyone else)."""
        for offset, key, value in self.log.read(self.offset):
            self.offset = offset + 1
            if key is None:
                continue
            try:
                k = json.loads(key)
                v = json.loads(value) if value is not None else None
            except ValueError:
                continue  # not a registry record: Confluent's reader skips what it cannot deserialize too
            if isinstance(k, dict) and (v is None or isinstance(v, dict)):
                self._apply(k, v)

    def _write(self, records: list[tuple[bytes, bytes | None]]) -> None:
        self.log.append(records)
        self.sync()

    def _apply(self, key: dict[str, Any], value: dict[str, Any] | None) -> None:
        keytype, subject = key.get("keytype"), key.get("subject")
        if keytype == "SCHEMA" and isinstance(subject, str) and isinstance(key.get("version"), int):
            versions = self.subjects.setdefault(subject, {})
            if value is None:
                gone = versions.pop(key["version"], None)
                if not versions:
                    del self.subjects[subject]
                if gone is not None and not self._in_use(gone.schema_id):
                    schema = self.schemas.pop(gone.schema_id, None)
                    self._parsed.pop(gone.schema_id, None)
                    self._printed.pop(gone.schema_id, None)
                    if schema is not None and self.ids.get(schema) == gone.schema_id:
                        del self.ids[schema]
                return
            schema = _Schema(value.get("schemaType", "AVRO"), value["schema"],
                             tuple(Reference(r["name"], r["subject"], r["version"])
                                   for r in value.get("references") or ()))
            schema_id = value["id"]
            self.schemas.setdefault(schema_id, schema)
            self.ids.setdefault(schema, schema_id)
            self.max_id = max(self.max_id, schema_id)
            versions[key["version"]] = _Version(subject, key["version"], schema_id, bool(value.get("deleted")))
        elif keytype == "CONFIG":
            if value is None:
                self.configs.pop(subject, None)
            elif "compatibilityLevel" in value:
                self.configs[subject] = value["compatibilityLevel"]
        elif keytype == "MODE":
            if value is None:
                self.modes.pop(subject, None)
            elif "mode" in value:
                self.modes[subject] = value["mode"]
        elif keytype == "DELETE_SUBJECT" and value is not None:
            for v in self.subjects.get(subject, {}).values():
                if v.version <= value.get("version", MAX_VERSION):
                    v.deleted = True

    def _in_use(self, schema_id: int) -> bool:
        return any(v.schema_id == schema_id for versions in self.subjects.values() for v in versions.values())

    # --- reading ---------------------------------------------------------------------------------------------
    def parsed(self, schema_id: int) -> ParsedSchema:
        if schema_id not in self._parsed:
            s = self.schemas[schema_id]
            self._parsed[schema_id] = parse_schema(s.schema_type, s.text, s.references, self._resolve)
        return self._parsed[schema_id]

    def _resolve(self, ref: Reference) -> ParsedSchema:
        versions = self.subjects.get(ref.subject)
        if not versions:
            raise RegistryError.invalid_schema(f"Invalid schema: reference {ref.name} names subject "
                                               f"'{ref.subject}', which has no versions")
        number = max(versions) if ref.version == -1 else ref.version
        version = versions.get(number)
        if version is None:
            raise RegistryError.invalid_schema(f"Invalid schema: reference {ref.name} names version {ref.version} "
                                               f"of subject '{ref.subject}', which does not exist")
        return self.parsed(version.schema_id)

    def _versions(self, subject: str, deleted: bool = False) -> list[_Version]:
        out = [v for _, v in sorted(self.subjects.get(subject, {}).items()) if deleted or not v.deleted]
        return out

    def _subject_versions(self, subject: str, deleted: bool = False) -> list[_Version]:
        versions = self._versions(subject, deleted)
        if not versions:
            raise RegistryError.subject_not_found(subject)
        return versions

    @staticmethod
    def parse_version(version: str | int) -> int:
        """A version in a path: 1..2^31-1, or latest (-1); RegistryError 42202 otherwise."""
        if version == "latest":
            return -1
        try:
            number = int(version)
        except (TypeError, ValueError):
            raise RegistryError.invalid_version(version) from None
        if number == -1 or 1 <= number <= MAX_VERSION:
            return number
        raise RegistryError.invalid_version(version)

    def _version(self, subject: str, version: str | int, deleted: bool = False) -> _Version:
        number = self.parse_version(version)
        versions = self._subject_versions(subject, deleted)
        if number == -1:
            return versions[-1]
        for v in versions:
            if v.version == number:
                return v
        raise RegistryError.version_not_found(number)

    def _schema_json(self, schema_id: int, fmt: str | None = None) -> dict[str, Any]:
        s = self.schemas[schema_id]
        out: dict[str, Any] = {}
        if s.schema_type != "AVRO":
            out["schemaType"] = s.schema_type
        if s.references:
            out["references"] = [r.to_json() for r in s.references]
        if fmt == "serialized":
            out["schema"] = serialized(self.parsed(schema_id))
        elif s.schema_type == "PROTOBUF":  # printed once, kept
            out["schema"] = self._printed.get(schema_id) or self._printed.setdefault(
                schema_id, _protobuf_answer(s.text, lambda: self.parsed(schema_id)))
        else:
            out["schema"] = s.text
        return out

    def _version_json(self, v: _Version, fmt: str | None = None) -> dict[str, Any]:
        return {"subject": v.subject, "version": v.version, "id": v.schema_id,
                **self._schema_json(v.schema_id, fmt)}

    def list_subjects(self, deleted: Any = False, deleted_only: Any = False, prefix: str = "") -> list[str]:
        only = flag(deleted_only)
        with_deleted = flag(deleted) or only
        return sorted(s for s, versions in self.subjects.items() if s.startswith(prefix or "") and any(
            (v.deleted if only else (with_deleted or not v.deleted)) for v in versions.values()))

    def list_versions(self, subject: str, deleted: Any = False, deleted_only: Any = False) -> list[int]:
        only = flag(deleted_only)
        versions = self._versions(subject, flag(deleted) or only)
        if only:
            versions = [v for v in versions if v.deleted]
        if not versions:
            raise RegistryError.subject_not_found(subject)
        return [v.version for v in versions]

    def get_version(self, subject: str, version: str | int, deleted: Any = False, fmt: str | None = None
                    ) -> dict[str, Any]:
        """`fmt="serialized"`: a Protobuf schema as a base64 FileDescriptorProto."""
        return self._version_json(self._version(subject, version, flag(deleted)), fmt)

    def referenced_by(self, subject: str, version: str | int) -> list[int]:
        v = self._version(subject, version)
        return sorted({u.schema_id for versions in self.subjects.values() for u in versions.values()
                       if not u.deleted and any(r.subject == subject and r.version == v.version
                                                for r in self.schemas[u.schema_id].references)})

    def schema_by_id(self, schema_id: int, subject: str | None = None, fmt: str | None = None) -> dict[str, Any]:
        # `subject` only names the context to look in (Confluent's contexts; fakekafka has the default one only):
        # an id is found whichever subject registered it, as a deserializer asks with its own topic's subject
        if schema_id not in self.schemas:
            raise RegistryError.schema_not_found()
        return self._schema_json(schema_id, fmt)

    def schema_versions(self, schema_id: int, deleted: Any = False, subject: str | None = None
                        ) -> list[dict[str, Any]]:
        if schema_id not in self.schemas:
            raise RegistryError.schema_not_found()
        with_deleted = flag(deleted)
        return [{"subject": v.subject, "version": v.version}
                for s in sorted(self.subjects) if not subject or s == subject
                for v in self._versions(s, with_deleted) if v.schema_id == schema_id]

    def schema_subjects(self, schema_id: int, deleted: Any = False, subject: str | None = None) -> list[str]:
        return list(dict.fromkeys(v["subject"] for v in self.schema_versions(schema_id, deleted, subject)))

    # --- schemas ---------------------------------------------------------------------------------------------
    def _request(self, body: Any, normalize: bool = False) -> ParsedSchema:
        """The schema of a register/lookup/compatibility request body, parsed (42201, 42202 or 400 in words)."""
        if not isinstance(body, dict) or not isinstance(body.get("schema"), str):
            raise RegistryError.invalid_schema("Empty schema" if isinstance(body, dict) else
                                               "The request body is not a JSON object with a schema")
        schema_type = body.get("schemaType") or "AVRO"
        if schema_type not in SCHEMA_TYPES:
            raise RegistryError.invalid_schema(f"Invalid schema type {schema_type}")
        refs = []
        for r in body.get("references") or []:
            if not isinstance(r, dict) or not isinstance(r.get("name"), str) or not isinstance(r.get("subject"), str):
                raise RegistryError.invalid_schema(f"Invalid reference {r}: it needs a name, a subject and a version")
            refs.append(Reference(r["name"], r["subject"], self.parse_version(r.get("version", -1))))
        parsed = parse_schema(schema_type, body["schema"], tuple(refs), self._resolve)
        if normalize and parsed.schema_type != "PROTOBUF":  # Protobuf's normal form is its descriptor: text kept
            parsed.text = parsed.normalized()
        return parsed

    def protobuf_source(self, body: Any) -> tuple[str, dict[str, Any]] | None:
        """A request's `.proto` text and its imports' descriptors (None: not a Protobuf text, or refused), for the
        HTTP thread to compile before the request runs here."""
        if not isinstance(body, dict) or body.get("schemaType") != "PROTOBUF" or not isinstance(body.get("schema"),
                                                                                                   str):
            return None
        if protobuf_descriptor(body["schema"]) is not None:
            return None
        try:
            refs = tuple(Reference(r["name"], r["subject"], self.parse_version(r.get("version", -1)))
                         for r in body.get("references") or [])
            return body["schema"], protobuf_imports(refs, self._resolve)
        except (RegistryError, KeyError, TypeError):
            return None  # the request itself answers what is wrong with it

    @staticmethod
    def _same(a: ParsedSchema, b: ParsedSchema) -> bool:
        return a.schema_type == b.schema_type and a.references == b.references and (
            a.text == b.text or a.normalized() == b.normalized())

    def lookup(self, subject: str, body: Any, normalize: Any = False, deleted: Any = False) -> dict[str, Any]:
        """POST /subjects/{subject}: the version of `subject` holding this schema."""
        with_deleted = flag(deleted)
        versions = self._versions(subject, with_deleted)
        if not versions:
            raise RegistryError.subject_not_found(subject)
        schema = self._request(body, flag(normalize))
        for v in reversed(versions):
            if self._same(schema, self.parsed(v.schema_id)):
                return self._version_json(v)
        raise RegistryError.schema_not_found()

    def incompatibilities(self, subject: str, schema: ParsedSchema, against: list[_Version] | None = None
                          ) -> list[str]:
        level = self.compatibility(subject)
        if against is None:
            live = self._versions(subject)
            against = live if level.endswith("_TRANSITIVE") else live[-1:]
        out: list[str] = []
        for v in reversed(against):
            found = compatibility.check(level, schema, self.parsed(v.schema_id))
            if found:
                out.extend(found)
                out.append(f"{{oldSchemaVersion: {v.version}}}")
                out.append(f"{{oldSchema: '{self.schemas[v.schema_id].text}'}}")
                break
        if out:
            out.append(f"{{compatibility: '{level}'}}")
        return out

    def register(self, subject: str, body: Any, normalize: Any = False) -> dict[str, Any]:
        """POST /subjects/{subject}/versions: the schema's global id, registered as a new version if needed."""
        if not subject or any(ord(c) < 32 for c in subject):
            raise RegistryError.invalid_subject(subject)
        mode = self.mode(subject)
        if mode in ("READONLY", "READONLY_OVERRIDE"):
            raise RegistryError.operation_not_permitted(f"Subject {subject} is in read-only mode")
        schema = self._request(body, flag(normalize))
        wanted_id, wanted_version = body.get("id"), body.get("version")
        if (wanted_id is not None or wanted_version is not None) and mode != "IMPORT" and wanted_id not in (None, -1):
            raise RegistryError.operation_not_permitted(f"Subject {subject} is not in import mode")
        live = self._versions(subject)
        for v in reversed(live):
            if self._same(schema, self.parsed(v.schema_id)) and wanted_id in (None, -1, v.schema_id):
                return {"id": v.schema_id}
        if mode != "IMPORT":
            found = self.incompatibilities(subject, schema)
            if found:
                raise RegistryError.incompatible(subject, found)
        key = _Schema(schema.schema_type, schema.text, schema.references)
        if wanted_id not in (None, -1):
            if not isinstance(wanted_id, int) or wanted_id < 1:
                raise RegistryError.invalid_schema(f"Invalid schema id {wanted_id}")
            existing = self.schemas.get(wanted_id)
            if existing is not None and existing != key:
                raise RegistryError.operation_not_permitted(
                    f"Overwrite new schema with id {wanted_id} is not permitted.")
            schema_id = wanted_id
        else:
            schema_id = self.ids.get(key) or self.max_id + 1
        every = self.subjects.get(subject, {})
        if wanted_version not in (None, -1) and mode == "IMPORT":
            version = self.parse_version(wanted_version)
            if version in every:
                raise RegistryError.operation_not_permitted(
                    f"Overwrite new schema with version {version} is not permitted.")
        else:
            version = max(every, default=0) + 1
        value: dict[str, Any] = {"subject": subject, "version": version, "id": schema_id}
        if schema.schema_type != "AVRO":
            value["schemaType"] = schema.schema_type
        if schema.references:
            value["references"] = [r.to_json() for r in schema.references]
        value.update(schema=schema.text, deleted=False)
        self._write([(schema_key(subject, version), dumps(value))])
        self._parsed.setdefault(schema_id, schema)
        return {"id": schema_id}

    def test_compatibility(self, subject: str, version: str | int | None, body: Any, verbose: Any = False
                           ) -> dict[str, Any]:
        """POST /compatibility/subjects/{subject}/versions[/{version}]."""
        schema = self._request(body)
        if version is None:
            found = self.incompatibilities(subject, schema)
        else:
            # as Confluent: "latest" of a subject with no live version has nothing to be incompatible with;
            # a numbered version must be live (40402, whether or not the subject exists)
            number = self.parse_version(version)
            live = self._versions(subject)
            against = live[-1:] if number == -1 else [v for v in live if v.version == number]
            if number != -1 and not against:
                raise RegistryError.version_not_found(number)
            found = self.incompatibilities(subject, schema, against)
        out: dict[str, Any] = {"is_compatible": not found}
        if flag(verbose):
            out["messages"] = found
        return out

    # --- deletes ---------------------------------------------------------------------------------------------
    def _check_unreferenced(self, subject: str, version: int) -> None:
        for versions in self.subjects.values():
            for v in versions.values():
                if v.subject == subject and v.version == version:
                    continue
                if any(r.subject == subject and r.version in (version, -1)
                       for r in self.schemas[v.schema_id].references) and not v.deleted:
                    raise RegistryError.reference_exists(subject, version)

    def delete_subject(self, subject: str, permanent: Any = False) -> list[int]:
        """DELETE /subjects/{subject}: soft (the versions hidden, kept) or, once soft-deleted, permanent."""
        self._check_writable(subject)
        every = self._versions(subject, deleted=True)
        if not every:
            raise RegistryError.subject_not_found(subject)
        live = [v for v in every if not v.deleted]
        if flag(permanent):
            if live:
                raise RegistryError.subject_not_soft_deleted(subject)
            for v in every:
                self._check_unreferenced(subject, v.version)
            records: list[tuple[bytes, bytes | None]] = [(schema_key(subject, v.version), None) for v in every]
            if subject in self.configs:
                records.append((dumps({"keytype": "CONFIG", "subject": subject, "magic": 0}), None))
            if subject in self.modes:
                records.append((dumps({"keytype": "MODE", "subject": subject, "magic": 0}), None))
            self._write(records)
            return [v.version for v in every]
        if not live:
            raise RegistryError.subject_soft_deleted(subject)
        for v in live:
            self._check_unreferenced(subject, v.version)
        self._write([(dumps({"keytype": "DELETE_SUBJECT", "subject": subject, "magic": 0}),
                      dumps({"subject": subject, "version": live[-1].version}))])
        return [v.version for v in live]

    def delete_version(self, subject: str, version: str | int, permanent: Any = False) -> int:
        """DELETE /subjects/{subject}/versions/{version}: soft, or permanent once soft-deleted."""
        self._check_writable(subject)
        number = self.parse_version(version)
        hard = flag(permanent)
        every = self._versions(subject, deleted=True)
        if not every:
            raise RegistryError.subject_not_found(subject)
        if number == -1:
            candidates = every if hard else [v for v in every if not v.deleted]
            if not candidates:
                raise RegistryError.subject_not_found(subject)
            v = candidates[-1]
        else:
            found = [v for v in every if v.version == number]
            if not found:
                raise RegistryError.version_not_found(number)
            v = found[0]
        if hard and not v.deleted:
            raise RegistryError.version_not_soft_deleted(subject, v.version)
        if not hard and v.deleted:
            raise RegistryError.version_soft_deleted(subject, v.version)
        self._check_unreferenced(subject, v.version)
        if hard:
            self._write([(schema_key(subject, v.version), None)])
        else:
            value = {"subject": subject, "version": v.version, "id": v.schema_id,
                     **{k: x for k, x in self._schema_json(v.schema_id).items()}, "deleted": True}
            self._write([(schema_key(subject, v.version), dumps(value))])
        return v.version

    def schema_types(self) -> list[str]:
        return ["JSON", "PROTOBUF", "AVRO"]


def _protobuf_answer(text: str, parsed: Callable[[], ParsedSchema]) -> str:
    """A Protobuf schema as Confluent answers it without `format=serialized`: its canonical printing (Confluent's
    `ProtobufSchema.canonicalString()`), of the descriptor when it was registered as base64, of the text as written
    otherwise; what the printer does not write is answered as registered."""
    if protobuf_descriptor(text) is None:
        schema = parsed()
        return canonical_text(text, protobuf_spans(text, schema.referenced)) or text
    return proto_text(parsed().parsed) or text


def list_schemas(registry: Registry, prefix: str = "", deleted: Any = False, latest_only: Any = False
                 ) -> list[dict[str, Any]]:
    """Confluent's `GET /schemas`: every subject's versions (or only its latest), subjects in name order."""
    out: list[dict[str, Any]] = []
    for subject in registry.list_subjects(deleted, prefix=prefix):
        versions = registry.list_versions(subject, deleted)
        out += [registry.get_version(subject, v, deleted) for v in (versions[-1:] if flag(latest_only) else versions)]
    return out
