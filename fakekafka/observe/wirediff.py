"""Wire answers made comparable across brokers and runs: decoded values as plain data, normalised (made-up ids,
hosts, times and the like replaced by placeholders), canonical (arrays of structs keyed by their name-like
field), and compared leaf by leaf with a path that says which field differs.

Shared by `python -m compat diff` (compat/diff.py: the same conversation against two brokers) and
`fakekafka replay` (a recorded conversation resent to a broker). The rules are described in compat/diff.py's
module docstring.
"""

from __future__ import annotations

import hashlib
import json
import re
import time
import uuid
from typing import Any

from fakekafka.wire import ApiKey
from fakekafka.wire.messages import API_MODULES

__all__ = ["ABSENT", "DROP", "KEY_FIELDS", "NAMED_ARRAYS", "NODE_FIELDS", "NODE_LISTS", "PLACEHOLDER", "Normaliser",
           "api_name", "canonical", "compare", "plain"]

DROP = frozenset({"throttle_time_ms", "error_message", "batch_index_error_message", "host", "port",
                  "correlation_id"})
"""Fields left out of every comparison."""
PLACEHOLDER = {
    "cluster_id": "<cluster>", "topic_id": "<uuid>", "member_id": "<member>", "producer_id": "<producer>",
    "v3_and_below_producer_id": "<producer>",  # AddPartitionsToTxn v0-3
    "session_id": "<session>", "client_host": "<host>", "replica_directory_id": "<uuid>",
    "directory_id": "<uuid>", "incarnation_id": "<uuid>", "leader": "<member>",
    "generation_id": "<generation>", "generation_id_or_member_epoch": "<generation>",
}
"""Fields whose set value is made up per broker or run: a set value becomes the placeholder (an unset one,
empty, zero, negative or the zero UUID, stays, so "set" versus "unset" still shows)."""
JAVA_CLIENT_SEQ = re.compile(r"^((?:consumer|producer|share-consumer|adminclient)(?:-.*)?)-\d+$")
"""A client id the Java client made up ("consumer-GROUP-67"): its number counts the clients made in that JVM
before, which differs between two lanes' JVMs when a scenario went another way on one broker; the broker only
echoes it, so the number is left out ("consumer-GROUP-<n>")."""
NODE_FIELDS = frozenset({"node_id", "leader_id", "broker_id", "controller_id", "preferred_read_replica",
                         "coordinator_id", "replica_id", "leader"})
NODE_LISTS = frozenset({"replica_nodes", "isr_nodes", "offline_replicas", "eligible_leader_replicas",
                        "last_known_elr", "replicas", "isr", "adding_replicas", "removing_replicas"})
KEY_FIELDS = ("api_key", "name", "topic", "topic_name", "topic_id", "group_id", "partition_index", "partition",
              "resource_name", "key", "transactional_id", "config_name", "group_instance_id", "broker_id",
              "node_id")
"""An array of structs is compared as a mapping keyed by the first of these its elements all have (and
that is unique among them); otherwise as a list sorted by content."""
NAMED_ARRAYS = frozenset({"configs", "synonyms", "supported_features", "finalized_features", "api_keys"})
TIME_WINDOW_MS = 2 * 86_400_000
ZERO_UUID = "00000000-0000-0000-0000-000000000000"
ALL_TOPICS_APIS = {ApiKey.METADATA: "topics", ApiKey.LIST_GROUPS: "groups"}


def api_name(key: int) -> str:
    spec = API_MODULES.get(key)
    return spec[0] if spec else f"ApiKey{key}"


# --- decoding and normalising ---------------------------------------------------------------------------

def plain(value: Any) -> Any:
    """A decoded wire value as plain data: dicts (no construct internals), lists, UUIDs as text."""
    if isinstance(value, dict):
        return {k: plain(v) for k, v in value.items() if not k.startswith("_")}
    if isinstance(value, list | tuple):
        return [plain(v) for v in value]
    if isinstance(value, uuid.UUID):
        return str(value)
    if isinstance(value, bytearray | memoryview):
        return bytes(value)
    return value


def _short_bytes(b: bytes) -> str:
    if len(b) <= 48:
        return "0x" + b.hex()
    return f"{len(b)} bytes sha1:{hashlib.sha1(b).hexdigest()[:12]}"  # noqa: S324 - a fingerprint


class Normaliser:
    """Turns one decoded request or response into what is compared (see the module docstring)."""

    def __init__(self, now_ms: float | None = None, prefix: str | None = None,
                 topic_names: dict[str, str] | None = None) -> None:
        self.now_ms = now_ms if now_ms is not None else time.time() * 1000
        self.prefix = prefix  # this session's names contain it (answers listing everything are filtered)
        self.topic_names = topic_names or {}  # topic id -> name, as this broker's answers said
        self.members: dict[str, int] = {}  # member id -> its rank of first appearance in this session

    def member(self, member_id: Any) -> int | None:
        """The rank of a member id in this session (the first seen is 1), None for no member id."""
        if not isinstance(member_id, str) or not member_id:
            return None
        return self.members.setdefault(member_id, len(self.members) + 1)

    def _is_now(self, name: str, v: int) -> bool:
        return ("time" in name or name.endswith("_ms")) and abs(v - self.now_ms) <= TIME_WINDOW_MS

    def records(self, data: bytes | None) -> Any:
        if data is None:
            return None
        from fakekafka.wire.records import BATCH_OVERHEAD, decode_batch, read_header
        out: list[Any] = []
        pos = 0
        while pos + BATCH_OVERHEAD <= len(data):
            try:
                header = read_header(data, pos)
            except Exception:  # noqa: BLE001 - a partial batch at the end of a Fetch answer
                break
            end = pos + header.size
            if end > len(data):
                out.append({"partial_batch": True})
                break
            try:
                batch = decode_batch(bytes(data[pos:end]))
            except Exception as e:  # noqa: BLE001
                out.append({"undecodable_batch": f"{type(e).__name__}: {e}"[:200]})
                pos = end
                continue
            h = batch.header
            out.append({
                "base_offset": h.base_offset, "partition_leader_epoch": h.partition_leader_epoch,
                "magic": h.magic, "attributes": h.attributes, "last_offset_delta": h.last_offset_delta,
                "base_timestamp": self._ts("base_timestamp", h.base_timestamp),
                "max_timestamp": self._ts("max_timestamp", h.max_timestamp),
                "producer_id": "<producer>" if h.producer_id >= 0 else h.producer_id,
                "producer_epoch": h.producer_epoch, "base_sequence": h.base_sequence,
                "records_count": h.records_count,
                "records": [{"offset": r.offset, "timestamp": self._ts("timestamp", r.timestamp),
                             "key": None if r.key is None else _short_bytes(r.key),
                             "value": None if r.value is None else _short_bytes(r.value),
                             "headers": [[k, None if v is None else _short_bytes(v)] for k, v in r.headers]}
                            for r in batch.records],
            })
            pos = end
        if pos < len(data) and not (out and "partial_batch" in out[-1]):
            out.append({"trailing_bytes": len(data) - pos})
        return out

    def _ts(self, name: str, v: int) -> Any:
        return "<now>" if self._is_now(name, v) else v

    def value(self, name: str, v: Any) -> Any:
        if name == "topic_id" and isinstance(v, str) and v in self.topic_names:
            return f"<id:{self.topic_names[v]}>"  # each broker's ids differ; the topics they name do not
        if name in PLACEHOLDER:
            if isinstance(v, str):
                return PLACEHOLDER[name] if v and v != ZERO_UUID else v
            if isinstance(v, int) and not isinstance(v, bool) and name not in NODE_FIELDS:
                return PLACEHOLDER[name] if (v != 0 if name == "session_id" else v >= 0) else v
        if name == "client_id" and isinstance(v, str):
            return JAVA_CLIENT_SEQ.sub(r"\1-<n>", v)
        if name in NODE_FIELDS and isinstance(v, int) and not isinstance(v, bool):
            return "<node>" if v >= 0 else v
        if name in NODE_LISTS and isinstance(v, list) and all(isinstance(x, int) for x in v):
            return ["<node>" if x >= 0 else x for x in v]
        if name == "records" and isinstance(v, bytes | type(None)):
            return self.records(v)
        if isinstance(v, bytes):
            return _short_bytes(v)
        if isinstance(v, int) and not isinstance(v, bool) and self._is_now(name, v):
            return "<now>"
        if isinstance(v, dict):
            return self.struct(v)
        if isinstance(v, list):
            return [self.value(name, x) for x in v]
        return v

    def struct(self, obj: dict[str, Any]) -> dict[str, Any]:
        return {k: self.value(k, v) for k, v in obj.items() if k not in DROP}

    def only_session(self, api_key: int, request: dict[str, Any] | None, response: dict[str, Any]) -> None:
        """Answers that list everything keep this session's names only."""
        field_ = ALL_TOPICS_APIS.get(api_key)
        if field_ is None or self.prefix is None or not isinstance(response.get(field_), list):
            return
        if api_key == ApiKey.METADATA and request is not None and request.get("topics"):
            return  # asked for named topics: every one is the session's business
        name_of = "name" if api_key == ApiKey.METADATA else "group_id"
        response[field_] = [t for t in response[field_] if self.prefix in str(t.get(name_of) or "")]

    def request(self, api_key: int, body: dict[str, Any]) -> dict[str, Any]:
        return self.struct(body)

    def response(self, api_key: int, request: dict[str, Any] | None, body: dict[str, Any]) -> dict[str, Any]:
        self.only_session(api_key, request, body)
        return self.struct(body)


def _keyed(items: list[Any]) -> tuple[str | None, Any]:
    """A list of structs as {key: struct} by its first unique KEY_FIELDS field; (None, sorted list) if none."""
    if items and all(isinstance(x, dict) for x in items):
        for k in KEY_FIELDS:
            if all(k in x for x in items):
                keys = [x[k] for x in items]
                if not any(isinstance(v, str) and v.startswith("<") and not v.startswith("<id:") for v in keys) and \
                        len(set(map(repr, keys))) == len(keys):
                    label = (lambda v: api_name(v)) if k == "api_key" else str
                    return k, {"[]": {label(v): x for v, x in zip(keys, items, strict=True)}, "[by]": k}
                break
        return None, sorted(items, key=lambda x: json.dumps(x, sort_keys=True, default=str))
    return None, items


def canonical(value: Any) -> Any:
    """Key-sorted, arrays of structs keyed or sorted: two answers that say the same thing compare equal."""
    if isinstance(value, dict):
        return {k: canonical(v) for k, v in sorted(value.items())}
    if isinstance(value, list):
        items = [canonical(v) for v in value]
        return _keyed(items)[1]
    return value


# --- comparing -----------------------------------------------------------------------------------------

ABSENT = "<absent>"


def compare(a: Any, b: Any, path: str = "", generic: str = "") -> tuple[int, list[tuple[str, str, Any, Any]]]:
    """(leaves compared, [(path, generic path, a's value, b's value)]) for two canonical values. The generic
    path has [*] for array indexes and keys, except API, config and feature names, which say what the field
    is: api_keys[Fetch].max_version, configs[retention.ms].value."""
    if isinstance(a, dict) and isinstance(b, dict):
        if "[]" in a and "[]" in b and a.get("[by]") == b.get("[by]"):
            n, out = 0, []
            ea, eb = a["[]"], b["[]"]
            # the key stays in the generic path where it names what the field is (an API, a config)
            named = a["[by]"] == "api_key" or generic.rsplit(".", 1)[-1] in NAMED_ARRAYS
            for k in list(ea) + [k for k in eb if k not in ea]:
                g = k if named else "*"
                m, o = compare(ea.get(k, ABSENT), eb.get(k, ABSENT), f"{path}[{k}]", f"{generic}[{g}]")
                n += m
                out += o
            return n, out
        n, out = 0, []
        for k in list(a) + [k for k in b if k not in a]:
            m, o = compare(a.get(k, ABSENT), b.get(k, ABSENT), f"{path}.{k}" if path else k,
                           f"{generic}.{k}" if generic else k)
            n += m
            out += o
        return n, out
    if isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        n, out = 0, []
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            m, o = compare(x, y, f"{path}[{i}]", f"{generic}[*]")
            n += m
            out += o
        return max(n, 1), out
    if a != b:
        g = generic or "/"
        if a is ABSENT or b is ABSENT:  # a whole element one side lists and the other does not
            g += f" ({'missing' if b is ABSENT else 'extra'})"
        return 1, [(path or "/", g, a, b)]
    return 1, []
