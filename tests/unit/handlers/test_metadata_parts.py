"""Metadata's kept topic entries (handlers/metadata.py's TopicParts): an answer built from them is byte for byte the
answer built afresh, for every version, all topics and named ones, after each change that alters an entry (a topic
made or deleted, partitions added, a leader moved, an ISR shrunk, a broker killed and back), and an ACL-filtered
answer still leaves out what the principal may not describe. The fresh answer is what the handler builds while a
hook observes the cluster (dicts, never a kept entry)."""

from __future__ import annotations

import gc
import weakref
from typing import Any

import pytest
from construct import Container

from fakekafka.handlers import Park, RequestContext, dispatch
from fakekafka.handlers.connection import ConnectionState
from fakekafka.handlers.metadata import topic_parts
from fakekafka.model.acl import AclBinding
from fakekafka.model.clock import ManualClock
from fakekafka.model.cluster import ClusterState
from fakekafka.model.config import BrokerConfig
from fakekafka.model.metadata import Broker
from fakekafka.wire import ApiKey
from fakekafka.wire.primitives import ZERO_UUID
from fakekafka.wire.protocol import Request, decode_response, encode_response_chunks, request_struct

VERSIONS = range(0, 14)


def _state(**overrides: str) -> ClusterState:
    c = ClusterState(BrokerConfig(overrides=dict(overrides)), ManualClock(1_000),
                     [Broker(i, "127.0.0.1", 9000 + i) for i in (1, 2, 3)])
    c.config.auto_create_topics = False
    c.create_topic("a", 3, 3)
    c.create_topic("b", 2, 2)
    return c


def _body(version: int, names: list[str] | None, *, by_id: dict[str, Any] | None = None,
          authorized_ops: bool = False) -> dict[str, Any]:
    if names is None:
        topics = [] if version == 0 else None
    elif version >= 10:
        topics = [{"name": None if by_id and n in by_id else n,
                   "topic_id": by_id[n] if by_id and n in by_id else ZERO_UUID} for n in names]
    else:
        topics = [{"name": n} for n in names]
    return {"topics": topics, "allow_auto_topic_creation": False,
            "include_cluster_authorized_operations": False, "include_topic_authorized_operations": authorized_ops}


def _answer(c: ClusterState, version: int, body: dict[str, Any], *, fresh: bool = False,
            principal: str | None = None) -> bytes:
    struct = request_struct(ApiKey.METADATA, version)
    request = Request(ApiKey.METADATA, version, 7, "client", Container(), struct.parse(struct.build(body)))
    conn = ConnectionState()
    if principal is not None:
        conn.ssl_principal = principal
    observer = (lambda *_: None)
    if fresh:
        c.hooks.observers.append(observer)
    try:
        result = dispatch(RequestContext(c, c.brokers[1], request, connection=conn))
        while isinstance(result, Park):
            result = result.resume(False)
    finally:
        if fresh:
            c.hooks.observers.remove(observer)
    return b"".join(bytes(x) for x in encode_response_chunks(ApiKey.METADATA, version, 7, result))


def _same(c: ClusterState, names: list[str] | None = None, **kw: Any) -> None:
    for v in VERSIONS:
        if v < 12 and kw.get("by_id"):
            continue
        body = _body(v, names, **kw)
        kept, fresh = _answer(c, v, body), _answer(c, v, body, fresh=True)
        assert kept == fresh, f"v{v}"


def test_every_version_matches_a_fresh_answer_and_is_encoded_once() -> None:
    c = _state()
    _same(c)
    parts = topic_parts(c)
    made = parts.encoded
    assert made == 2 * len(VERSIONS)  # each topic once per version
    _same(c)
    _same(c, ["b", "a", "b"])
    assert parts.encoded == made  # reused: nothing changed
    _same(c, ["a", "missing"])


def test_topic_ids_and_authorized_operations() -> None:
    c = _state()
    ids = {n: c.topics[n].topic_id for n in ("a", "b")}
    _same(c, ["a", "b"], by_id={"a": ids["a"]})
    _same(c, None, authorized_ops=True)
    _same(c, ["a"], authorized_ops=True)
    decoded = decode_response(ApiKey.METADATA, 12, _answer(c, 12, _body(12, ["a"], by_id=ids))[4:])[1]
    assert decoded.topics[0].topic_id == ids["a"] and decoded.topics[0].name == "a"


@pytest.mark.parametrize("change", ["create", "delete", "partitions", "leader", "isr", "broker", "recreate"])
def test_a_change_is_seen_at_once(change: str) -> None:
    c = _state()
    before = {v: _answer(c, v, _body(v, None)) for v in VERSIONS}
    if change == "create":
        c.create_topic("c", 1, 1)
    elif change == "delete":
        c.delete_topic("b")
    elif change == "partitions":
        c.create_partitions("a", 5)
    elif change == "leader":
        p = c.topics["a"].partitions[0]
        c.move_leader("a", 0, next(r for r in p.replicas if r != p.leader_id))
    elif change == "isr":
        p = c.topics["a"].partitions[1]
        c.shrink_isr("a", 1, next(r for r in p.isr if r != p.leader_id))
    elif change == "broker":
        c.kill_broker(3)
    elif change == "recreate":
        old = c.topics["b"].topic_id
        c.delete_topic("b")
        c.create_topic("b", 2, 2)
        assert c.topics["b"].topic_id != old
    for v in VERSIONS:
        after = _answer(c, v, _body(v, None))
        assert after == _answer(c, v, _body(v, None), fresh=True), f"v{v}"
        if change != "recreate" or v >= 10:  # a topic id shows from v10
            assert after != before[v], f"v{v}: the change does not show"
    if change == "broker":
        c.restart_broker(3)
        _same(c)


def test_acl_filtered_answers() -> None:
    c = _state(**{"authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer"})
    assert c.authorizer is not None
    c.authorizer.create([AclBinding.of("TOPIC", "a", "User:alice", "DESCRIBE"),
                         AclBinding.of("TOPIC", "*", "User:bob", "DESCRIBE")])
    for v in VERSIONS:
        body = _body(v, None)
        alice = decode_response(ApiKey.METADATA, v, _answer(c, v, body, principal="User:alice")[4:])[1]
        bob = decode_response(ApiKey.METADATA, v, _answer(c, v, body, principal="User:bob")[4:])[1]
        assert [t.name for t in alice.topics] == ["a"]
        assert sorted(t.name for t in bob.topics) == ["a", "b"]
        named = _body(v, ["b", "a"])
        assert _answer(c, v, named, principal="User:alice") == _answer(c, v, named, principal="User:alice", fresh=True)


def test_a_deleted_topic_is_not_kept_alive_by_its_kept_entries() -> None:
    """The entries name a topic by id: a deleted topic (and its logs) goes at once, not at the next Metadata."""
    c = _state()
    _answer(c, 12, _body(12, None))
    assert topic_parts(c).entries
    gone = weakref.ref(c.topics["a"])
    c.delete_topic("a")
    gc.collect()
    assert gone() is None
