"""Every (API, version) fakekafka advertises, sent over the wire as a valid request for real state.

Encoding conformance cannot catch a handler that reads a field its version does not carry (Fetch v4-8
read `current_leader_epoch`, from v9, and answered UNKNOWN_SERVER_ERROR on every existing topic): only a
real request at every version does. Each pair is its own test id in each of:

- `test_answered`: fakekafka answers, the answer decodes, and no `error_code` anywhere in it is -1
  (UNKNOWN_SERVER_ERROR); pairs real Kafka no longer serves also match their written expectation.
- `test_injected_error`: the same request with an error injected (on a second fakekafka with the same
  state) is answered with that error, never UNKNOWN_SERVER_ERROR nor a closed connection: the error
  responders are version-dependent code too.
- `test_variant_*`: the same two checks for `VARIANTS`, a few more requests per API (unknown topics, the
  cluster-level config resource, invalid topics...), sent after the whole sweep.
- `test_same_as_kafka`: where Apache Kafka is installed (`fakekafka.testing.apache_kafka.kafka_lib()`), the same
  request against one real broker per session, set up with the same topics, records, groups and offsets
  (made over the wire, by the same code), must get the same answer field by field once what legitimately
  differs is normalised (`normalise`). A difference fails unless `KNOWN` lists its path with the reason
  (also written in the handler's docstring and in compat/KNOWN_DIFFERENCES.md). Pairs Kafka 4 no longer
  serves (KIP-896) are checked against `EXPECTED`, a written answer, and reported as skipped with why.

Request bodies come from one builder per API (`BUILDERS`) that names every field any version might need;
`fit` keeps exactly the fields the version's wire declaration has (defaults for the rest), so a field that
does not exist at a version is simply absent. A builder that needs per-version state (a group to leave, a
topic to delete) makes it first, against whichever broker it is building for.

Answers are cached per broker: a pair is sent once to each, in the same order, so the brokers see the same
history (what ListGroups lists, the offsets Produce gets).

Both brokers run with their defaults, under which neither advertises GetTelemetrySubscriptions nor PushTelemetry
(Kafka serves them only with a metrics reporter receiving client telemetry; fakekafka only with client telemetry
on), so they are not swept here: `test_api_sweep_advertises_no_client_telemetry` checks that, and
tests/conformance/test_client_telemetry_kafka.py compares the two, switched on, with Kafka 4.4.0.
"""

from __future__ import annotations

import fnmatch
import time
import uuid
import warnings
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest

import fakekafka
from fakekafka.handlers import advertised_versions, handler_for
from fakekafka.model.config import MODELLED_BROKER_CONFIGS, BrokerConfig
from fakekafka.testing.apache_kafka import KafkaCluster, KafkaUnavailable, kafka_lib
from fakekafka.testing.client import WireConnection
from fakekafka.wire import ApiKey, ErrorCode
from fakekafka.wire.messages import API_MODULES
from fakekafka.wire.messages.consumer_protocol_assignment import ConsumerProtocolAssignmentV0
from fakekafka.wire.messages.consumer_protocol_subscription import ConsumerProtocolSubscriptionV0
from fakekafka.wire.primitives import ZERO_UUID, Message, NullableStruct, _Array
from fakekafka.wire.protocol import request_struct
from fakekafka.wire.records import build_batch, decode_batch, iter_batches

TOPIC = "sweep"  # 2 partitions: p0 holds 5 records in two batches, p1 one record
GROUP = "sweep-group"  # Stable, one member (the leader) holding both partitions, offsets committed
SIMPLE_GROUP = "sweep-offdel"  # Empty: offsets committed with generation -1, for OffsetDelete
CONSUMER_GROUP, CG_MEMBER = "sweep-cg", "sweep-cg-member"  # KIP-848: one member holding both partitions, Stable
EMPTY_CLASSIC = "sweep-cg-from-classic"  # Empty classic group with offsets: a KIP-848 member takes its id over
CONFIGURED_GROUP = "sweep-cg-configured"  # a GROUP config resource: consumer.heartbeat.interval.ms=6000
GROUP_KEYS = ["consumer.assignment.interval.ms", "consumer.heartbeat.interval.ms", "consumer.session.timeout.ms"]
PRODUCE_TOPIC = "sweep-produce"
TXN_TOPIC = "sweep-txn"  # 2 partitions, written by the transaction APIs' builders
TS0 = (int(time.time()) - 3600) * 1000
"""Record timestamps (CreateTime) are TS0 + offset: an hour old, well within retention, so fakekafka's retention
check (30 s after its start; it deletes whole batches, having no segments) leaves them alone however long the
sweep runs. They were fixed in November 2023 once, and a sweep slower than 30 s lost them on fakekafka only."""
P0_RECORDS, P1_RECORDS = 5, 1
SESSION_TIMEOUT_MS = 600_000  # the group's member must outlive the session, whatever the machine's load
REBALANCE_TIMEOUT_MS = 600_000
"""A group left mid-rebalance (CompletingRebalance, a pending join) stays so for the whole sweep: at 60 s, a loaded
run's variants met fakekafka's group already past its sync deadline (Empty) where Kafka's, asked sooner, was not."""
TXN_TIMEOUT_MS = 900_000
"""An open transaction stays open for the whole sweep (Kafka's transaction.max.timeout.ms, the most it accepts): at
60 s, a loaded run's read_committed, require_stable and ListTransactions variants met fakekafka's transactions
already aborted by their timeout."""

BROKER_KEYS = sorted(set(MODELLED_BROKER_CONFIGS) - {"log.dirs"})
"""Kafka has hundreds; these are the ones fakekafka models (not log.dirs: each broker's own paths)."""

SUBSCRIPTION = b"\x00\x00" + ConsumerProtocolSubscriptionV0.build({"topics": [TOPIC], "user_data": None})
ASSIGNMENT = b"\x00\x00" + ConsumerProtocolAssignmentV0.build(
    {"assigned_partitions": [{"topic": TOPIC, "partitions": [0, 1]}], "user_data": None})


def per_version_names(prefix: str, api_key: int) -> list[str]:
    """One fresh name per advertised version of `api_key`, for requests that use their state up."""
    lo, hi = advertised_versions()[api_key]
    return [f"{prefix}-v{v}" for v in range(lo, hi + 1)]


# topics made at set-up: destructive APIs get one per version so each answer is about real state
SETUP_TOPICS = {TOPIC: 2, PRODUCE_TOPIC: 1, TXN_TOPIC: 2, **{n: 1 for n in per_version_names("sweep-delete", 20)},
                **{n: 1 for n in per_version_names("sweep-cp", 37)},
                **{n: 1 for n in per_version_names("sweep-delrec", 21)},
                **{n: 1 for n in per_version_names("sweep-alter", 44)},
                **{n: 1 for n in per_version_names("sweep-legacy", 33)}}
SETUP_GROUPS = per_version_names("sweep-delgroup", 42)  # Empty groups with offsets, for DeleteGroups


# --- the brokers ---------------------------------------------------------------------------------------
@dataclass
class Answer:
    request: dict[str, Any]
    response: Any  # the decoded body, or None when the broker closed the connection instead of answering


@dataclass
class Target:
    """One broker under test, the ids its set-up produced, and its answers so far."""

    name: str
    bootstrap: str
    conn: WireConnection | None = None
    versions: dict[int, tuple[int, int]] = field(default_factory=dict)
    topic_ids: dict[str, uuid.UUID] = field(default_factory=dict)
    leader_epochs: dict[tuple[str, int], int] = field(default_factory=dict)
    member_id: str = ""
    generation_id: int = -1
    cg_epoch: int = -1
    """The member epoch of CONSUMER_GROUP's one member (KIP-848)."""
    answers: dict[tuple[int, int, str], Answer] = field(default_factory=dict)

    def send(self, api_key: int, version: int, body: dict[str, Any]) -> Any:
        """The decoded answer, or None if the broker closed the connection (the next send reconnects)."""
        if self.conn is None:
            host, port = self.bootstrap.split(",")[0].rsplit(":", 1)
            self.conn = WireConnection(host, int(port), "fakekafka-sweep", 30)
            self.versions = self.conn.versions
        try:
            return self.conn.request(api_key, version, body)
        except ConnectionError:
            self.close()
            return None

    def close(self) -> None:
        if self.conn is not None:
            self.conn.close()
            self.conn = None

    def answer(self, api_key: int, version: int, variant: str = "") -> Answer:
        """The pair's request (or the named variant's), built for this broker's state and sent once; later
        calls reuse it."""
        key = (api_key, version, variant)
        if key not in self.answers:
            build = VARIANTS[variant][2] if variant else BUILDERS[api_key]
            body = fit_request(api_key, version, build(self, version))
            self.answers[key] = Answer(body, self.send(api_key, version, body))
        return self.answers[key]


def fit(con: Any, value: Any) -> Any:
    """`value` reduced to the fields `con` declares, in order, with the declared defaults for the rest."""
    if isinstance(con, Message):
        given = value or {}
        return {f.name: fit(f.subcon, given[f.name]) if f.name in given else f.default_value()
                for f in (*con.fields, *con.tagged.values())}
    if isinstance(con, _Array | NullableStruct) and value is not None:
        return [fit(con.subcon, v) for v in value] if isinstance(con, _Array) else fit(con.subcon, value)
    return value


def fit_request(api_key: int, version: int, body: dict[str, Any]) -> dict[str, Any]:
    return fit(request_struct(api_key, version), body)


def must(response: Any, what: str) -> Any:
    """Set-up steps must succeed: a failure here is not the pair under test's fault."""
    codes = list(error_codes(response))
    if response is None or any(c != ErrorCode.NONE for _, c in codes):
        raise AssertionError(f"set-up step {what} failed: {response}")
    return response


def join(t: Target, group: str, version: int = 5) -> tuple[str, int]:
    """A lone consumer joins `group` (v4+: the MEMBER_ID_REQUIRED round first): (member id, generation)."""
    body = {"group_id": group, "session_timeout_ms": SESSION_TIMEOUT_MS, "rebalance_timeout_ms": REBALANCE_TIMEOUT_MS,
            "member_id": "", "group_instance_id": None, "protocol_type": "consumer",
            "protocols": [{"name": "range", "metadata": SUBSCRIPTION}], "reason": None}
    r = t.send(11, version, fit_request(11, version, body))
    if r.error_code == ErrorCode.MEMBER_ID_REQUIRED:
        r = t.send(11, version, fit_request(11, version, {**body, "member_id": r.member_id}))
    return must(r, f"JoinGroup {group}").member_id, r.generation_id


def set_up(t: Target, *, kip848: bool = True) -> None:
    """The state every request refers to, made over the wire so fakekafka and Kafka get it the same way. Without
    `kip848` (an older release: Kafka 3.9 has no GROUP configs and its consumer protocol is off) no group configs
    and no KIP-848 member."""
    must(t.send(19, 7, {"timeout_ms": 30_000, "validate_only": False, "topics": [
        {"name": name, "num_partitions": n, "replication_factor": 1, "assignments": [], "configs": []}
        for name, n in SETUP_TOPICS.items()]}), "CreateTopics")
    deadline = time.monotonic() + 30
    while True:  # Kafka's brokers learn of new leaders a moment after the controller made them
        md = t.send(3, 12, {"topics": [{"name": n, "topic_id": ZERO_UUID} for n in SETUP_TOPICS],
                            "allow_auto_topic_creation": False})
        if all(x.error_code == 0 and x.partitions and all(p.leader_id >= 0 for p in x.partitions) for x in md.topics):
            break
        if time.monotonic() > deadline:
            raise AssertionError(f"topics never got leaders: {md}")
        time.sleep(0.05)
    t.topic_ids = {x.name: x.topic_id for x in md.topics}
    t.leader_epochs = {(x.name, p.partition_index): p.leader_epoch for x in md.topics for p in x.partitions}
    while True:  # ... and take the leadership a moment after Metadata lists them (NOT_LEADER_OR_FOLLOWER till then)
        lo = t.send(2, 1, {"replica_id": -1, "topics": [
            {"name": x.name, "partitions": [{"partition_index": p.partition_index, "timestamp": -1}
                                            for p in x.partitions]} for x in md.topics]})
        if all(code == ErrorCode.NONE for _, code in error_codes(lo)):
            break
        if time.monotonic() > deadline:
            raise AssertionError(f"partition leaders never answered: {lo}")
        time.sleep(0.05)
    batches = [(TOPIC, 0, 0, 2), (TOPIC, 0, 2, 3), (TOPIC, 1, 0, P1_RECORDS),
               *((name, 0, 0, 3) for name in per_version_names("sweep-delrec", 21))]
    for topic, partition, first, n in batches:
        batch = build_batch([{"key": None, "value": f"v{first + i}".encode(), "timestamp": TS0 + first + i}
                             for i in range(n)])
        must(t.send(0, 9, {"acks": -1, "timeout_ms": 30_000, "topic_data": [
            {"name": topic, "partition_data": [{"index": partition, "records": batch}]}]}), f"Produce to {topic}")
    t.member_id, t.generation_id = join(t, GROUP)
    must(t.send(14, 5, {"group_id": GROUP, "generation_id": t.generation_id, "member_id": t.member_id,
                        "group_instance_id": None, "protocol_type": "consumer", "protocol_name": "range",
                        "assignments": [{"member_id": t.member_id, "assignment": ASSIGNMENT}]}), "SyncGroup")
    commit(t, GROUP, t.generation_id, t.member_id)
    for group in (SIMPLE_GROUP, EMPTY_CLASSIC, *SETUP_GROUPS):
        commit(t, group, -1, "")
    if kip848:
        set_up_kip848(t)
    deadline = time.monotonic() + 30
    while True:  # an idempotent producer's first step; a new Kafka is still fetching its block of ids
        r = t.send(22, 0, {"transactional_id": None, "transaction_timeout_ms": 60_000})
        if r.error_code != ErrorCode.COORDINATOR_LOAD_IN_PROGRESS or time.monotonic() > deadline:
            break
        time.sleep(0.05)
    must(r, "InitProducerId")


def set_up_kip848(t: Target) -> None:
    # the consumer groups' members must outlive the sweep, whatever the machine's load
    group_configs = {**{g: ("consumer.session.timeout.ms", str(SESSION_TIMEOUT_MS))
                        for g in (CONSUMER_GROUP, EMPTY_CLASSIC, *per_version_names("sweep-cgh", 68))},
                     CONFIGURED_GROUP: ("consumer.heartbeat.interval.ms", "6000")}
    must(t.send(44, 1, {"validate_only": False, "resources": [
        {"resource_type": 32, "resource_name": g, "configs": [_alter_op(*kv)]} for g, kv in group_configs.items()]}),
         "group configs")
    deadline = time.monotonic() + 30
    while True:  # Kafka applies a group config once its metadata log reaches the broker
        r = t.send(32, 4, {"resources": [{"resource_type": 32, "resource_name": g, "configuration_keys": [kv[0]]}
                                         for g, kv in group_configs.items()]})
        if [x.configs[0].value for x in r.results if x.configs] == [kv[1] for kv in group_configs.values()]:
            break
        if time.monotonic() > deadline:
            raise AssertionError(f"the group configs never showed: {r}")
        time.sleep(0.05)
    t.cg_epoch = consumer_group_member(t, CONSUMER_GROUP, CG_MEMBER)


def cg_join_body(group: str, member: str, **fields: Any) -> dict[str, Any]:
    return {"group_id": group, "member_id": member, "member_epoch": 0, "instance_id": None, "rack_id": None,
            "rebalance_timeout_ms": REBALANCE_TIMEOUT_MS, "subscribed_topic_names": [TOPIC],
            "subscribed_topic_regex": None, "server_assignor": None, "topic_partitions": [], **fields}


def consumer_group_member(t: Target, group: str, member: str) -> int:
    """A KIP-848 member joins `group` and heartbeats until it holds both partitions of TOPIC (Kafka may hand the
    first assignment out a heartbeat later): its member epoch."""
    r = must(t.send(68, 1, cg_join_body(group, member)), f"ConsumerGroupHeartbeat {group}")
    owned: list[Any] = []
    deadline = time.monotonic() + 30
    while True:
        if r.assignment is not None:
            owned = [{"topic_id": x.topic_id, "partitions": list(x.partitions)} for x in r.assignment.topic_partitions]
        if sum(len(x["partitions"]) for x in owned) == 2:
            return int(r.member_epoch)
        if time.monotonic() > deadline:
            raise AssertionError(f"consumer group {group} never assigned {TOPIC}: {r}")
        time.sleep(0.1)
        r = must(t.send(68, 1, {"group_id": group, "member_id": member, "member_epoch": r.member_epoch,
                                "rebalance_timeout_ms": -1, "topic_partitions": owned}), f"heartbeat {group}")


def commit(t: Target, group: str, generation: int, member: str, version: int = 8) -> Any:
    return must(t.send(8, version, fit_request(8, version, offset_commit_body(group, generation, member))),
                f"OffsetCommit {group}")


def offset_commit_body(group: str, generation: int, member: str, topic_id: uuid.UUID = ZERO_UUID) -> dict[str, Any]:
    return {"group_id": group, "generation_id_or_member_epoch": generation, "member_id": member,
            "group_instance_id": None, "retention_time_ms": -1, "topics": [{
                "name": TOPIC, "topic_id": topic_id, "partitions": [
                {"partition_index": 0, "committed_offset": 2, "committed_leader_epoch": -1,
                 "committed_metadata": "m"},
                {"partition_index": 1, "committed_offset": 1, "committed_leader_epoch": -1,
                 "committed_metadata": None}]}]}


# --- one request builder per API: every field any version needs; `fit` keeps the version's own -----------
def _produce(t: Target, v: int) -> dict[str, Any]:
    batch = build_batch([{"key": b"k", "value": f"produce-v{v}".encode(), "timestamp": TS0 + 100 + v}])
    return {"transactional_id": None, "acks": 1, "timeout_ms": 30_000,
            "topic_data": [{"name": PRODUCE_TOPIC, "topic_id": t.topic_ids[PRODUCE_TOPIC],
                            "partition_data": [{"index": 0, "records": batch}]}]}


def _fetch(t: Target, v: int) -> dict[str, Any]:
    return {"replica_id": -1, "max_wait_ms": 0, "min_bytes": 0, "max_bytes": 1 << 20, "isolation_level": 0,
            "session_id": 0, "session_epoch": -1, "forgotten_topics_data": [], "rack_id": "", "topics": [
                {"topic": TOPIC, "topic_id": t.topic_ids[TOPIC], "partitions": [
                    {"partition": p, "current_leader_epoch": t.leader_epochs[(TOPIC, p)], "fetch_offset": 0,
                     "last_fetched_epoch": -1, "log_start_offset": -1, "partition_max_bytes": 1 << 20}
                    for p in (0, 1)]}]}


def _list_offsets(t: Target, v: int) -> dict[str, Any]:
    return {"replica_id": -1, "isolation_level": 0, "timeout_ms": 30_000, "topics": [{"name": TOPIC, "partitions": [
        {"partition_index": 0, "current_leader_epoch": t.leader_epochs[(TOPIC, 0)], "timestamp": TS0 + 3},
        {"partition_index": 1, "current_leader_epoch": -1, "timestamp": -1}]}]}


def _metadata(t: Target, v: int) -> dict[str, Any]:
    return {"topics": [{"name": TOPIC, "topic_id": ZERO_UUID}], "allow_auto_topic_creation": False,
            "include_cluster_authorized_operations": False, "include_topic_authorized_operations": False}


def _offset_commit(t: Target, v: int) -> dict[str, Any]:
    return offset_commit_body(GROUP, t.generation_id, t.member_id, t.topic_ids[TOPIC])


def _offset_fetch(t: Target, v: int) -> dict[str, Any]:
    topics = [{"name": TOPIC, "topic_id": t.topic_ids[TOPIC], "partition_indexes": [0, 1]}]
    return {"group_id": GROUP, "topics": topics, "require_stable": False,
            "groups": [{"group_id": GROUP, "member_id": None, "member_epoch": -1, "topics": topics}]}


def _find_coordinator(t: Target, v: int) -> dict[str, Any]:
    return {"key": GROUP, "key_type": 0, "coordinator_keys": [GROUP]}


def _join_group(t: Target, v: int) -> dict[str, Any]:
    group = f"sweep-join-v{v}"
    member = ""
    if v >= 4:  # the first round of a join hands out the member id; the pair under test is the second
        r = t.send(11, v, fit_request(11, v, {"group_id": group, "session_timeout_ms": SESSION_TIMEOUT_MS,
                                              "rebalance_timeout_ms": REBALANCE_TIMEOUT_MS, "member_id": "",
                                              "protocol_type": "consumer",
                                              "protocols": [{"name": "range", "metadata": SUBSCRIPTION}]}))
        member = r.member_id
    return {"group_id": group, "session_timeout_ms": SESSION_TIMEOUT_MS, "rebalance_timeout_ms": REBALANCE_TIMEOUT_MS,
            "member_id": member, "group_instance_id": None, "protocol_type": "consumer",
            "protocols": [{"name": "range", "metadata": SUBSCRIPTION}], "reason": None}


def _heartbeat(t: Target, v: int) -> dict[str, Any]:
    return {"group_id": GROUP, "generation_id": t.generation_id, "member_id": t.member_id, "group_instance_id": None}


def _leave_group(t: Target, v: int) -> dict[str, Any]:
    group = f"sweep-leave-v{v}"
    member, _ = join(t, group)
    return {"group_id": group, "member_id": member,
            "members": [{"member_id": member, "group_instance_id": None, "reason": None}]}


def _sync_group(t: Target, v: int) -> dict[str, Any]:
    return {"group_id": GROUP, "generation_id": t.generation_id, "member_id": t.member_id,
            "group_instance_id": None, "protocol_type": "consumer", "protocol_name": "range",
            "assignments": [{"member_id": t.member_id, "assignment": ASSIGNMENT}]}


def _describe_groups(t: Target, v: int) -> dict[str, Any]:
    return {"groups": [GROUP], "include_authorized_operations": False}


def _list_groups(t: Target, v: int) -> dict[str, Any]:
    return {"states_filter": [], "types_filter": []}


def _consumer_group_heartbeat(t: Target, v: int) -> dict[str, Any]:
    """A new KIP-848 group's first member: epoch 2 (one for the member, one for its topics), both partitions."""
    return cg_join_body(f"sweep-cgh-v{v}", f"sweep-cgh-member-v{v}")


def _consumer_group_describe(t: Target, v: int) -> dict[str, Any]:
    return {"group_ids": [CONSUMER_GROUP, "sweep-cgh-v1", GROUP, "sweep-no-such-cg"],
            "include_authorized_operations": True}


def _cg_heartbeat(**fields: Any) -> Callable[[Target, int], dict[str, Any]]:
    """A heartbeat of CONSUMER_GROUP's member at its epoch, owning both partitions, with `fields` changed."""
    def build(t: Target, v: int) -> dict[str, Any]:
        return {"group_id": CONSUMER_GROUP, "member_id": CG_MEMBER, "member_epoch": t.cg_epoch,
                "rebalance_timeout_ms": -1,
                "topic_partitions": [{"topic_id": t.topic_ids[TOPIC], "partitions": [0, 1]}], **fields}
    return build


def _cg_commit(epoch: int | None = None, member: str = CG_MEMBER) -> Callable[[Target, int], dict[str, Any]]:
    def build(t: Target, v: int) -> dict[str, Any]:
        return offset_commit_body(CONSUMER_GROUP, t.cg_epoch if epoch is None else epoch, member, t.topic_ids[TOPIC])
    return build


def _cg_fetch(epoch: int | None = None) -> Callable[[Target, int], dict[str, Any]]:
    def build(t: Target, v: int) -> dict[str, Any]:
        return {"require_stable": False, "groups": [
            {"group_id": CONSUMER_GROUP, "member_id": CG_MEMBER, "member_epoch": t.cg_epoch if epoch is None else epoch,
             "topics": None}]}
    return build


def _api_versions(t: Target, v: int) -> dict[str, Any]:
    return {"client_software_name": "fakekafka-sweep", "client_software_version": "1.0"}


def _sasl_handshake(t: Target, v: int) -> dict[str, Any]:
    return {"mechanism": "PLAIN"}  # on a PLAINTEXT listener: ILLEGAL_SASL_STATE, as KafkaApis answers


def _sasl_authenticate(t: Target, v: int) -> dict[str, Any]:
    return {"auth_bytes": b"\0user\0password"}


# --- ACLs: neither broker has an authorizer, so each answers SECURITY_DISABLED (tests/integration/test_acls.py
# compares them with Kafka running the StandardAuthorizer)
# ----------------------------------------------------------------
def _acl_filter(t: Target, v: int) -> dict[str, Any]:
    return {"resource_type_filter": 2, "resource_name_filter": TOPIC, "pattern_type_filter": 3,
            "principal_filter": "User:alice", "host_filter": None, "operation": 3, "permission_type": 3}


def _create_acls(t: Target, v: int) -> dict[str, Any]:
    return {"creations": [{"resource_type": 2, "resource_name": TOPIC, "resource_pattern_type": 3,
                           "principal": "User:alice", "host": "*", "operation": 3, "permission_type": 3}]}


def _delete_acls(t: Target, v: int) -> dict[str, Any]:
    return {"filters": [_acl_filter(t, v)]}


def _describe_user_scram_credentials(t: Target, v: int) -> dict[str, Any]:
    return {"users": [{"name": "sweep-user"}, {"name": "nobody"}]}


def _alter_user_scram_credentials(t: Target, v: int) -> dict[str, Any]:
    return {"deletions": [{"name": "nobody", "mechanism": 1}], "upsertions": [
        {"name": "sweep-user", "mechanism": 2, "iterations": 4096, "salt": b"salt", "salted_password": b"x" * 64}]}


def _describe_client_quotas(t: Target, v: int) -> dict[str, Any]:
    return {"components": [{"entity_type": "user", "match_type": 0, "match": "sweep-nobody"}], "strict": False}


def _alter_client_quotas(t: Target, v: int) -> dict[str, Any]:
    """validate_only, so the answer does not wait on Kafka's broker learning the change."""
    return {"validate_only": True, "entries": [
        {"entity": [{"entity_type": "user", "entity_name": "sweep-user"}],
         "ops": [{"key": "producer_byte_rate", "value": 1024.0, "remove": False}]},
        {"entity": [{"entity_type": "client-id", "entity_name": None}],
         "ops": [{"key": "producer_byte_rate", "value": 0.5, "remove": False}]}]}


def _create_topics(t: Target, v: int) -> dict[str, Any]:
    return {"timeout_ms": 30_000, "validate_only": False, "topics": [
        {"name": f"sweep-create-v{v}", "num_partitions": 2, "replication_factor": 1, "assignments": [],
         "configs": [{"name": "retention.ms", "value": "3600000"}]}]}


def _delete_topics(t: Target, v: int) -> dict[str, Any]:
    name = f"sweep-delete-v{v}"
    return {"timeout_ms": 30_000, "topic_names": [name], "topics": [{"name": name, "topic_id": ZERO_UUID}]}


def _delete_records(t: Target, v: int) -> dict[str, Any]:
    return {"timeout_ms": 30_000,
            "topics": [{"name": f"sweep-delrec-v{v}", "partitions": [{"partition_index": 0, "offset": 2}]}]}


def _init_producer_id(t: Target, v: int) -> dict[str, Any]:
    return {"transactional_id": None, "transaction_timeout_ms": 60_000, "producer_id": -1, "producer_epoch": -1}


def _offset_for_leader_epoch(t: Target, v: int) -> dict[str, Any]:
    return {"replica_id": -1, "topics": [{"topic": TOPIC, "partitions": [
        {"partition": 0, "current_leader_epoch": t.leader_epochs[(TOPIC, 0)], "leader_epoch": 0}]}]}


def _describe_configs(t: Target, v: int) -> dict[str, Any]:
    return {"include_synonyms": True, "include_documentation": False, "resources": [
        {"resource_type": 2, "resource_name": TOPIC, "configuration_keys": None},
        {"resource_type": 4, "resource_name": "1", "configuration_keys": BROKER_KEYS}]}


def _incremental_alter_configs(t: Target, v: int) -> dict[str, Any]:
    """Every operation on a topic of the version's own, and this broker's own dynamic config (set to the
    value it has, so later answers about the broker stay as they were)."""
    return {"validate_only": False, "resources": [
        {"resource_type": 2, "resource_name": f"sweep-alter-v{v}", "configs": [
            {"name": "retention.ms", "config_operation": 0, "value": "3600000"},
            {"name": "cleanup.policy", "config_operation": 2, "value": "compact"},
            {"name": "segment.ms", "config_operation": 1, "value": None},
            {"name": "follower.replication.throttled.replicas", "config_operation": 3, "value": "0:1"}]},
        {"resource_type": 4, "resource_name": "1", "configs": [
            {"name": "message.max.bytes", "config_operation": 0, "value": "1048588"}]}]}


def _alter_configs(t: Target, v: int) -> dict[str, Any]:
    return {"validate_only": False, "resources": [
        {"resource_type": 2, "resource_name": f"sweep-legacy-v{v}", "configs": [
            {"name": "retention.ms", "value": "7200000"}, {"name": "max.message.bytes", "value": "2000000"}]}]}


def _alter_op(name: str, value: str | None, op: int = 0) -> dict[str, Any]:
    return {"name": name, "config_operation": op, "value": value}


def _create_partitions(t: Target, v: int) -> dict[str, Any]:
    return {"timeout_ms": 30_000, "validate_only": False,
            "topics": [{"name": f"sweep-cp-v{v}", "count": 2, "assignments": None}]}


def _delete_groups(t: Target, v: int) -> dict[str, Any]:
    return {"groups_names": [f"sweep-delgroup-v{v}"]}


def _elect_leaders(t: Target, v: int) -> dict[str, Any]:
    return {"election_type": 0, "timeout_ms": 30_000, "topic_partitions": [{"topic": TOPIC, "partitions": [0, 1]}]}


def _alter_partition_reassignments(t: Target, v: int) -> dict[str, Any]:
    return {"timeout_ms": 30_000, "allow_replication_factor_change": True, "topics": [
        {"name": TOPIC, "partitions": [{"partition_index": 1, "replicas": [1]}]}]}


def _list_partition_reassignments(t: Target, v: int) -> dict[str, Any]:
    return {"timeout_ms": 30_000, "topics": [{"name": TOPIC, "partition_indexes": [0, 1]}]}


def _offset_delete(t: Target, v: int) -> dict[str, Any]:
    return {"group_id": SIMPLE_GROUP, "topics": [{"name": TOPIC, "partitions": [{"partition_index": 0}]}]}


def _describe_topic_partitions(t: Target, v: int) -> dict[str, Any]:
    return {"topics": [{"name": TOPIC}, {"name": "nope"}], "response_partition_limit": 2000, "cursor": None}


def _describe_topic_partitions_of(names: list[str], limit: int = 2000, cursor: tuple[str, int] | None = None
                                  ) -> Callable[[Target, int], dict[str, Any]]:
    return lambda t, v: {"topics": [{"name": n} for n in names], "response_partition_limit": limit,
                         "cursor": None if cursor is None else {"topic_name": cursor[0], "partition_index": cursor[1]}}


def _describe_log_dirs(t: Target, v: int) -> dict[str, Any]:
    return {"topics": [{"topic": TOPIC, "partitions": [0, 1, 5]}, {"topic": "nope", "partitions": [0]}]}


def log_dir_of(t: Target) -> str:
    """The broker's (first) log dir: where AlterReplicaLogDirs may move a replica (the sweep's Kafka has one)."""
    r = must(t.send(35, 4, fit_request(35, 4, {"topics": []})), "DescribeLogDirs")
    return r.results[0].log_dir


def _alter_replica_log_dirs(t: Target, v: int) -> dict[str, Any]:
    """The replica's own dir (nothing to move), an unknown partition and topic, then a dir the broker lacks."""
    return {"dirs": [{"path": log_dir_of(t), "topics": [{"name": TOPIC, "partitions": [0, 1, 7]},
                                                        {"name": "nope", "partitions": [0]}]},
                     {"path": "/no/such/dir", "topics": [{"name": PRODUCE_TOPIC, "partitions": [0]}]}]}


def _list_config_resources(t: Target, v: int) -> dict[str, Any]:
    return {"resource_types": [16, 32, 4]}


def _describe_cluster(t: Target, v: int) -> dict[str, Any]:
    return {"include_cluster_authorized_operations": False, "endpoint_type": 1}


def _describe_quorum(t: Target, v: int) -> dict[str, Any]:
    return {"topics": [{"topic_name": "__cluster_metadata", "partitions": [{"partition_index": 0}]}]}


# --- transactions: each builder makes its own transactional id (and its state) first -----------------------
RETRY_TXN = (ErrorCode.COORDINATOR_LOAD_IN_PROGRESS, ErrorCode.NOT_COORDINATOR, ErrorCode.COORDINATOR_NOT_AVAILABLE,
             ErrorCode.CONCURRENT_TRANSACTIONS)


def retried(t: Target, api_key: int, version: int, body: dict[str, Any], what: str) -> Any:
    """A set-up request sent until the transaction coordinator is ready (a new Kafka loads
    `__transaction_state` a moment after creating it)."""
    deadline = time.monotonic() + 30
    while True:
        r = t.send(api_key, version, fit_request(api_key, version, body))
        if not any(c in RETRY_TXN for _, c in error_codes(r)) or time.monotonic() > deadline:
            return must(r, what)
        time.sleep(0.05)


def settled(t: Target) -> None:
    """Kafka writes a transaction's markers after answering EndTxn: wait until no transaction is still ending,
    so the next transaction's batches land after them on both brokers and the logs are the same."""
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        r = t.send(66, 0, {"state_filters": ["PrepareCommit", "PrepareAbort"], "producer_id_filters": []})
        if r is not None and not r.transaction_states:
            return
        time.sleep(0.02)
    raise AssertionError("transactions never finished ending")


def txn_producer(t: Target, tid: str, partitions: tuple[tuple[str, int], ...] = (), data: bool = False,
                 group: str | None = None) -> tuple[int, int]:
    """InitProducerId for `tid` (after FindCoordinator made `__transaction_state`), then, if asked, partitions
    added, one transactional batch written to each, and a group's offsets added."""
    settled(t)
    retried(t, 10, 4, {"key_type": 1, "coordinator_keys": [tid]}, f"FindCoordinator {tid}")
    r = retried(t, 22, 4, {"transactional_id": tid, "transaction_timeout_ms": TXN_TIMEOUT_MS, "producer_id": -1,
                           "producer_epoch": -1}, f"InitProducerId {tid}")
    pid, epoch = r.producer_id, r.producer_epoch
    if partitions:
        by_topic: dict[str, list[int]] = {}
        for topic, index in partitions:
            by_topic.setdefault(topic, []).append(index)
        retried(t, 24, 3, {"v3_and_below_transactional_id": tid, "v3_and_below_producer_id": pid,
                           "v3_and_below_producer_epoch": epoch, "v3_and_below_topics": [
                               {"name": n, "partitions": ps} for n, ps in by_topic.items()]}, f"AddPartitions {tid}")
    if data:
        for topic, index in partitions:
            batch = build_batch([{"key": None, "value": f"{tid}".encode(), "timestamp": TS0}], producer_id=pid,
                                producer_epoch=epoch, base_sequence=0, transactional=True)
            must(t.send(0, 9, {"transactional_id": tid, "acks": -1, "timeout_ms": 30_000, "topic_data": [
                {"name": topic, "partition_data": [{"index": index, "records": batch}]}]}), f"Produce {tid}")
    if group is not None:
        retried(t, 25, 3, {"transactional_id": tid, "producer_id": pid, "producer_epoch": epoch, "group_id": group},
                f"AddOffsetsToTxn {tid}")
    return pid, epoch


def _add_partitions_to_txn(t: Target, v: int) -> dict[str, Any]:
    tid = f"sweep-apt-v{v}"
    pid, epoch = txn_producer(t, tid, ((TXN_TOPIC, 0),) if v == 5 else ())
    topics = [{"name": TXN_TOPIC, "partitions": [0, 1]}]
    return {"v3_and_below_transactional_id": tid, "v3_and_below_producer_id": pid, "v3_and_below_producer_epoch": epoch,
            "v3_and_below_topics": topics, "transactions": [
                {"transactional_id": tid, "producer_id": pid, "producer_epoch": epoch, "verify_only": v == 5,
                 "topics": topics}]}


def _add_offsets_to_txn(t: Target, v: int) -> dict[str, Any]:
    tid = f"sweep-aot-v{v}"
    pid, epoch = txn_producer(t, tid)
    return {"transactional_id": tid, "producer_id": pid, "producer_epoch": epoch, "group_id": GROUP}


def _end_txn(t: Target, v: int) -> dict[str, Any]:
    """Even versions commit, odd ones abort, a transaction with a batch in sweep-txn-0."""
    tid = f"sweep-end-v{v}"
    pid, epoch = txn_producer(t, tid, ((TXN_TOPIC, 0),), data=True)
    return {"transactional_id": tid, "producer_id": pid, "producer_epoch": epoch, "committed": v % 2 == 0}


def _write_txn_markers(t: Target, v: int) -> dict[str, Any]:
    """What `kafka-transactions abort` sends for a hanging transaction in sweep-txn-1."""
    tid = f"sweep-wtm-v{v}"
    pid, epoch = txn_producer(t, tid, ((TXN_TOPIC, 1),), data=True)
    return {"markers": [{"producer_id": pid, "producer_epoch": epoch, "transaction_result": False,
                         "topics": [{"name": TXN_TOPIC, "partition_indexes": [1]}], "coordinator_epoch": 0}]}


def _txn_offset_commit(t: Target, v: int) -> dict[str, Any]:
    return _txn_offset_commit_for(t, f"sweep-toc-v{v}")


def _txn_offset_commit_for(t: Target, tid: str, added: bool = True) -> dict[str, Any]:
    pid, epoch = txn_producer(t, tid, group=GROUP if added else None)
    return {"transactional_id": tid, "group_id": GROUP, "producer_id": pid, "producer_epoch": epoch,
            "generation_id_or_member_epoch": t.generation_id, "member_id": t.member_id, "group_instance_id": None,
            "topics": [{"name": TOPIC, "topic_id": t.topic_ids[TOPIC], "partitions": [
                {"partition_index": 0, "committed_offset": 3, "committed_leader_epoch": -1,
                 "committed_metadata": "t"}]}]}


def _cg_txn_offset_commit(epoch: int | None = None) -> Callable[[Target, int], dict[str, Any]]:
    """TxnOffsetCommit to CONSUMER_GROUP naming its KIP-848 member and epoch (or an older epoch)."""
    def build(t: Target, v: int) -> dict[str, Any]:
        tid = f"sweep-cg-txn-{epoch}-v{v}"
        pid, producer_epoch = txn_producer(t, tid, group=CONSUMER_GROUP)
        return {"transactional_id": tid, "group_id": CONSUMER_GROUP, "producer_id": pid,
                "producer_epoch": producer_epoch, "generation_id_or_member_epoch": t.cg_epoch if epoch is None
                else epoch, "member_id": CG_MEMBER, "group_instance_id": None,
                "topics": [{"name": TOPIC, "topic_id": t.topic_ids[TOPIC], "partitions": [
                    {"partition_index": 0, "committed_offset": 3, "committed_leader_epoch": -1,
                     "committed_metadata": "t"}]}]}
    return build


def _describe_producers(t: Target, v: int) -> dict[str, Any]:
    return {"topics": [{"name": TXN_TOPIC, "partition_indexes": [0, 1]}, {"name": TOPIC, "partition_indexes": [0]}]}


def _describe_transactions(t: Target, v: int) -> dict[str, Any]:
    return {"transactional_ids": ["sweep-end-v0", "sweep-end-v1", "sweep-wtm-v0", "sweep-toc-v0", "nope"]}


def _list_transactions(t: Target, v: int) -> dict[str, Any]:
    return {"state_filters": [], "producer_id_filters": [], "duration_filter": -1, "transactional_id_pattern": None}


def _api_versions_for(cluster_id: str | None, node_id: int) -> Callable[[Target, int], dict[str, Any]]:
    """ApiVersions v5 naming the cluster ("" for the broker's own, from Metadata) and node it means to reach."""
    def build(t: Target, v: int) -> dict[str, Any]:
        cid = cluster_id
        if cid == "":
            cid = must(t.send(3, 12, {"topics": [], "allow_auto_topic_creation": False}), "Metadata").cluster_id
        return {**_api_versions(t, v), "cluster_id": cid, "node_id": node_id}
    return build


def _list_transactions_matching(pattern: str) -> Callable[[Target, int], dict[str, Any]]:
    return lambda t, v: {**_list_transactions(t, v), "transactional_id_pattern": pattern}


# --- share groups (KIP-932): a group with one member subscribed to TOPIC --------------------------------------
SHARE_GROUP = "sweep-share"
SHARE_MEMBER = "sweep-share-member-000"  # share group members make their own ids


def _share_group_heartbeat(t: Target, v: int) -> dict[str, Any]:
    return {"group_id": SHARE_GROUP, "member_id": SHARE_MEMBER, "member_epoch": 0, "rack_id": None,
            "subscribed_topic_names": [TOPIC]}


def _share_member(t: Target) -> None:
    t.send(76, 1, _share_group_heartbeat(t, 1))


def _share_group_describe(t: Target, v: int) -> dict[str, Any]:
    _share_member(t)
    return {"group_ids": [SHARE_GROUP, "sweep-no-such-share-group"], "include_authorized_operations": False}


STREAMS_TOPOLOGY = {"epoch": 0, "subtopologies": [
    {"subtopology_id": "0", "source_topics": [TOPIC], "source_topic_regex": [], "state_changelog_topics": [],
     "repartition_sink_topics": [], "repartition_source_topics": [], "copartition_groups": []}]}


def _streams_group_heartbeat(t: Target, v: int) -> dict[str, Any]:
    """A member joining a streams group of its own (per version) with a one-subtopology topology."""
    return {"group_id": f"sweep-sg-v{v}", "member_id": "sweep-sg-member", "member_epoch": 0,
            "endpoint_information_epoch": 0, "instance_id": None, "rack_id": None, "rebalance_timeout_ms": 30000,
            "topology": STREAMS_TOPOLOGY, "active_tasks": [], "standby_tasks": [], "warmup_tasks": [],
            "process_id": "sweep-process", "user_endpoint": None, "client_tags": None, "task_offsets": None,
            "task_end_offsets": None, "shutdown_application": False}


def _streams_group_describe(t: Target, v: int) -> dict[str, Any]:
    t.send(88, v, _streams_group_heartbeat(t, v))
    return {"group_ids": [f"sweep-sg-v{v}", "sweep-no-such-streams-group"], "include_authorized_operations": False}


def _streams_group_topology_description_update(t: Target, v: int) -> dict[str, Any]:
    """A member of the swept streams group pushing its topology description (neither broker has the plugin)."""
    t.send(88, 1, _streams_group_heartbeat(t, 1))
    return {"group_id": "sweep-sg-v1", "member_id": "sweep-sg-member", "topology_epoch": 0,
            "topology_description": {"subtopologies": [{"subtopology_id": "0", "nodes": [
                {"name": "KSTREAM-SOURCE-0000000000", "node_type": 0, "source_topics": [TOPIC], "sink_topic": None,
                 "stores": [], "successors": []}]}], "global_stores": []}}


def _share_fetch_body(t: Target, epoch: int, acks: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    return {"group_id": SHARE_GROUP, "member_id": SHARE_MEMBER, "share_session_epoch": epoch, "max_wait_ms": 0,
            "min_bytes": 1, "max_bytes": 1 << 20, "max_records": 500, "batch_size": 500, "share_acquire_mode": 0,
            "is_renew_ack": False, "forgotten_topics_data": [],
            "topics": [{"topic_id": t.topic_ids[TOPIC], "partitions": [
                {"partition_index": 0, "partition_max_bytes": 1 << 20, "acknowledgement_batches": acks or []}]}]}


def _share_fetch(t: Target, v: int) -> dict[str, Any]:
    _share_member(t)
    return _share_fetch_body(t, 0)


def _share_acknowledge(t: Target, v: int) -> dict[str, Any]:
    """An offset past the log end, with nothing in flight (the share-partition starts at the end): refused,
    INVALID_RECORD_STATE ("not found in the cache"), whether or not Kafka's share coordinator has initialized
    the share-partition yet (offset 0, below the start of an initialized one, would be nothing to do)."""
    _share_member(t)
    t.send(78, 1, _share_fetch_body(t, 0))
    return {"group_id": SHARE_GROUP, "member_id": SHARE_MEMBER, "share_session_epoch": 1, "is_renew_ack": False,
            "topics": [{"topic_id": t.topic_ids[TOPIC], "partitions": [{"partition_index": 0,
                                                                         "acknowledgement_batches": [
                {"first_offset": 1000, "last_offset": 1000, "acknowledge_types": [1]}]}]}]}


def _share_assigned(t: Target, heartbeat: dict[str, Any], topic: str, timeout: float = 15.0) -> None:
    """Heartbeats (ShareGroupHeartbeat v1) until the member is assigned `topic`'s partition 0: Kafka computes a
    share group's assignment apart from the heartbeat that joined (group.share.assignment.interval.ms), and a
    ShareFetch of a partition not yet assigned gets no records, UNKNOWN_SERVER_ERROR, after its max_wait_ms."""
    deadline = time.monotonic() + timeout
    while True:
        answer = t.send(76, 1, heartbeat)
        if answer is not None and answer.assignment is not None and any(
                tp.topic_id == t.topic_ids[topic] and 0 in tp.partitions for tp in answer.assignment.topic_partitions):
            return
        if time.monotonic() > deadline:
            raise AssertionError(f"{heartbeat['member_id']} was not assigned {topic}-0 within {timeout} s")
        if answer is not None and answer.error_code == 0:
            heartbeat = {**heartbeat, "member_epoch": answer.member_epoch}
        time.sleep(0.1)


def _share_fetch_isolated(level: str) -> Callable[[Target, int], dict[str, Any]]:
    """ShareFetch of sweep-txn-0 (the EndTxn builders' committed and aborted transactions, with their markers)
    from its start, by a share group whose share.isolation.level is `level`; the fetch waits for the share
    coordinator to initialize the share-partition (Kafka does so asynchronously)."""
    def build(t: Target, v: int) -> dict[str, Any]:
        group = f"sweep-share-{level}-v{v}"
        must(t.send(44, 1, {"validate_only": False, "resources": [{"resource_type": 32, "resource_name": group,
                                                                 "configs": [
            _alter_op("share.isolation.level", level), _alter_op("share.auto.offset.reset", "earliest")]}]}),
             f"IncrementalAlterConfigs {group}")
        member = f"sweep-{level[5:7]}-member-v{v}-000"  # 22 characters: Kafka reads a member id as a Uuid
        _share_assigned(t, {"group_id": group, "member_id": member, "member_epoch": 0, "rack_id": None,
                            "subscribed_topic_names": [TXN_TOPIC]}, TXN_TOPIC)
        # up to 20 s, answered as soon as records can be acquired: Kafka's share-partition state took over 5 s to
        # load from its share coordinator in a loaded CI run (the answer then had no records)
        return {**_share_fetch_body(t, 0), "group_id": group, "member_id": member, "max_wait_ms": 20_000,
                "topics": [{"topic_id": t.topic_ids[TXN_TOPIC], "partitions": [
                    {"partition_index": 0, "partition_max_bytes": 1 << 20, "acknowledgement_batches": []}]}]}
    return build


def _describe_share_group_offsets(t: Target, v: int) -> dict[str, Any]:
    return {"groups": [{"group_id": f"sweep-share-alter-v{v}", "topics": [{"topic_name": TOPIC, "partitions": [0]}]},
                       {"group_id": "sweep-no-such-share-group", "topics": None}]}


def _alter_share_group_offsets(t: Target, v: int) -> dict[str, Any]:
    return {"group_id": "sweep-share-alter-v0", "topics": [{"topic_name": TOPIC, "partitions": [
        {"partition_index": 0, "start_offset": 1}]}, {"topic_name": "sweep-no-such-topic", "partitions": [
        {"partition_index": 0, "start_offset": 0}]}]}


def _delete_share_group_offsets(t: Target, v: int) -> dict[str, Any]:
    t.send(91, 0, _alter_share_group_offsets(t, 0))
    return {"group_id": "sweep-share-alter-v0", "topics": [{"topic_name": TOPIC}]}


BUILDERS: dict[int, Callable[[Target, int], dict[str, Any]]] = {
    76: _share_group_heartbeat, 77: _share_group_describe, 78: _share_fetch, 79: _share_acknowledge,
    88: _streams_group_heartbeat, 89: _streams_group_describe, 93: _streams_group_topology_description_update,
    90: _describe_share_group_offsets, 91: _alter_share_group_offsets, 92: _delete_share_group_offsets,
    0: _produce, 1: _fetch, 2: _list_offsets, 3: _metadata, 8: _offset_commit, 9: _offset_fetch,
    10: _find_coordinator, 11: _join_group, 12: _heartbeat, 13: _leave_group, 14: _sync_group,
    15: _describe_groups, 16: _list_groups,
    17: _sasl_handshake, 18: _api_versions, 19: _create_topics, 20: _delete_topics,
    21: _delete_records, 22: _init_producer_id, 23: _offset_for_leader_epoch, 32: _describe_configs,
    37: _create_partitions, 42: _delete_groups, 43: _elect_leaders, 45: _alter_partition_reassignments,
    46: _list_partition_reassignments, 47: _offset_delete, 60: _describe_cluster, 55: _describe_quorum,
    24: _add_partitions_to_txn,
    25: _add_offsets_to_txn, 26: _end_txn, 27: _write_txn_markers, 28: _txn_offset_commit, 61: _describe_producers,
    65: _describe_transactions, 66: _list_transactions, 33: _alter_configs, 44: _incremental_alter_configs,
    36: _sasl_authenticate, 29: _acl_filter, 30: _create_acls, 31: _delete_acls,
    50: _describe_user_scram_credentials, 51: _alter_user_scram_credentials,
    48: _describe_client_quotas, 49: _alter_client_quotas,
    68: _consumer_group_heartbeat, 69: _consumer_group_describe, 75: _describe_topic_partitions, 35: _describe_log_dirs,
    34: _alter_replica_log_dirs, 74: _list_config_resources,
}

PAIRS = [(k, v) for k, (lo, hi) in advertised_versions().items() for v in range(lo, hi + 1)]
IDS = [f"{API_MODULES[k][0]}-v{v}" for k, v in PAIRS]

# Pairs Kafka 4 no longer serves (KIP-896): Kafka's answer cannot be the reference, so fakekafka's is checked
# against this written one (a subset of the normalised answer). Pairs outside Kafka's advertised range are
# found from its ApiVersions; Produce v0-2 are still advertised (KAFKA-18659) but Kafka closes the connection.
EXPECTED: dict[tuple[int, int], tuple[str, dict[str, Any]]] = {
    **{(0, v): ("Kafka 4 advertises Produce v0-2 (librdkafka needs v0 listed to compress, KAFKA-18659) but "
                "closes the connection on them (message formats v0/v1 are gone, KIP-896); fakekafka answers "
                "UNSUPPORTED_VERSION for every partition, which old clients report instead of retrying",
                {"responses": [{"name": PRODUCE_TOPIC, "partition_responses": [
                    {"index": 0, "error_code": ErrorCode.UNSUPPORTED_VERSION, "base_offset": -1}]}]})
       for v in (0, 1, 2)},
    **{(23, v): ("Kafka 4 removed OffsetForLeaderEpoch v0-1 (KIP-896); fakekafka keeps them: the end offset of "
                 "epoch 0 is the log end",
                 {"topics": [{"topic": TOPIC, "partitions": [
                     {"error_code": 0, "partition": 0, "end_offset": P0_RECORDS, **({"leader_epoch": 0} if v else {})}
                 ]}]}) for v in (0, 1)},
}



def _fetch_of(topic: str, partition: int, epoch: int = -1, *, by_id: uuid.UUID | None = None, offset: int = 0,
              last_fetched_epoch: int = -1) -> Callable[[Target, int], dict[str, Any]]:
    def build(t: Target, v: int) -> dict[str, Any]:
        return {**_fetch(t, v), "topics": [{"topic": topic, "topic_id": by_id or t.topic_ids.get(topic, ZERO_UUID),
                                            "partitions": [{"partition": partition, "current_leader_epoch": epoch,
                                                            "fetch_offset": offset,
                                                            "last_fetched_epoch": last_fetched_epoch,
                                                            "log_start_offset": -1, "partition_max_bytes": 1 << 20}]}]}
    return build


def _epoch_end(topic: str, epoch: int) -> Callable[[Target, int], dict[str, Any]]:
    return lambda t, v: {"replica_id": -1, "topics": [{"topic": topic, "partitions": [
        {"partition": 0, "current_leader_epoch": -1, "leader_epoch": epoch}]}]}


def _produce_of(topic: str, value: bytes = b"x", timestamp: int = TS0, **batch: int
                ) -> Callable[[Target, int], dict[str, Any]]:
    return lambda t, v: {"acks": 1, "timeout_ms": 30_000, "topic_data": [{"name": topic, "partition_data": [
        {"index": 0, "records": build_batch([{"key": None, "value": value, "timestamp": timestamp}], **batch)}]}]}


def _timestamps(p0: int, p1: int) -> Callable[[Target, int], dict[str, Any]]:
    return lambda t, v: {"replica_id": -1, "topics": [{"name": TOPIC, "partitions": [
        {"partition_index": 0, "timestamp": p0, "current_leader_epoch": -1},
        {"partition_index": 1, "timestamp": p1, "current_leader_epoch": -1}]}]}


def _broker_resource(keys: list[str] | None) -> Callable[[Target, int], dict[str, Any]]:
    return lambda t, v: {"include_synonyms": True, "resources": [
        {"resource_type": 4, "resource_name": "", "configuration_keys": keys}]}


VARIANTS: dict[str, tuple[int, list[int], Callable[[Target, int], dict[str, Any]]]] = {
    # name: (API key, versions, builder); requests that answered differently from Kafka once, and edges
    "all-topics": (3, [1, 12], lambda t, v: {"topics": None, "allow_auto_topic_creation": False}),
    # DescribeQuorum describes only a request for exactly its one partition: any other is refused on each
    "quorum-mixed": (55, [0, 2], lambda t, v: {"topics": [
        {"topic_name": "__cluster_metadata", "partitions": [{"partition_index": 0}, {"partition_index": 1}]},
        {"topic_name": TOPIC, "partitions": [{"partition_index": 0}]}]}),
    "quorum-other-topic": (55, [2], lambda t, v: {"topics": [{"topic_name": TOPIC,
                                                               "partitions": [{"partition_index": 0}]}]}),
    # without an authorizer Kafka answers every operation the resource type has, unknown topics included
    "authorized-operations": (3, [8, 10, 12], lambda t, v: {
        "topics": [{"name": TOPIC}, {"name": "nope"}], "allow_auto_topic_creation": False,
        "include_cluster_authorized_operations": True, "include_topic_authorized_operations": True}),
    "cluster-authorized-operations": (60, [0, 2], lambda t, v: {"include_cluster_authorized_operations": True,
                                                               "endpoint_type": 1}),
    "group-authorized-operations": (15, [5, 6], lambda t, v: {"groups": [GROUP, "nope"],
                                                             "include_authorized_operations": True}),
    "invalid-topic-name": (3, [9], lambda t, v: {"topics": [{"name": "bad name!"}], "allow_auto_topic_creation": True}),
    "to-invalid-topic-name": (0, [9], _produce_of("bad name!")),
    "too-large": (0, [9], _produce_of(PRODUCE_TOPIC, value=b"x" * 1_100_000)),
    "future-timestamp": (0, [9], _produce_of(PRODUCE_TOPIC, timestamp=4_000_000_000_000)),
    "new-producer-mid-sequence": (0, [9], _produce_of(PRODUCE_TOPIC, producer_id=999, producer_epoch=0,
                                                      base_sequence=5)),
    "unknown-topic": (1, [4, 12], _fetch_of("nope", 0)),
    "unknown-partition": (1, [12], _fetch_of(TOPIC, 7)),
    "unknown-topic-id": (1, [13], _fetch_of("", 0, by_id=uuid.UUID(int=1))),
    "newer-leader-epoch": (1, [12], _fetch_of(TOPIC, 0, 5)),
    "last-fetched-epoch-unknown": (1, [12], _fetch_of(TOPIC, 0, offset=3, last_fetched_epoch=2)),
    "last-fetched-epoch-known": (1, [12], _fetch_of(TOPIC, 0, offset=3, last_fetched_epoch=0)),
    "epoch-newer-than-leader": (23, [4], _epoch_end(TOPIC, 3)),
    "empty-log-epoch": (23, [4], _epoch_end("sweep-cp-v0", 0)),
    "empty-log-newer-epoch": (23, [4], _epoch_end("sweep-cp-v0", 2)),
    "empty-group-id": (10, [0, 4], lambda t, v: {"key": "", "key_type": 0, "coordinator_keys": ["", GROUP]}),
    "controller-endpoints": (60, [1], lambda t, v: {"endpoint_type": 2}),
    "page-cut-in-topic": (75, [0], _describe_topic_partitions_of([TOPIC, PRODUCE_TOPIC], limit=1)),
    "page-ends-at-topic-end": (75, [0], _describe_topic_partitions_of([TOPIC, PRODUCE_TOPIC, "nope"], limit=2)),
    "every-topic-from-cursor": (75, [0], _describe_topic_partitions_of([], limit=3, cursor=(TOPIC, 1))),
    "unknown-topic-and-partition": (43, [2], lambda t, v: {"election_type": 0, "timeout_ms": 30_000,
                                                           "topic_partitions": [{"topic": "nope", "partitions": [0]},
                                                                                {"topic": TOPIC, "partitions": [9]}]}),
    "one-partition-of-two-topics": (35, [4], lambda t, v: {"topics": [{"topic": TOPIC, "partitions": [1]},
                                                                      {"topic": "sweep-cp-v0", "partitions": [0]}]}),
    "cursor-not-listed": (75, [0], _describe_topic_partitions_of([TOPIC], cursor=("zzz", 0))),
    "negative-cursor-partition": (75, [0], _describe_topic_partitions_of([TOPIC], cursor=(TOPIC, -1))),
    "invalid-and-repeated-names": (75, [0], _describe_topic_partitions_of(["bad name!", TOPIC, TOPIC])),
    "unknown-topic-partitions": (37, [3], lambda t, v: {"timeout_ms": 30_000,
                                                        "topics": [{"name": "nope", "count": 3}]}),
    "cancel-no-reassignment": (45, [0], lambda t, v: {"timeout_ms": 30_000, "topics": [
        {"name": TOPIC, "partitions": [{"partition_index": 0, "replicas": None}]}]}),
    "same-replica-count": (45, [1], lambda t, v: {"timeout_ms": 30_000, "allow_replication_factor_change": False,
                                                  "topics": [{"name": TOPIC, "partitions": [
                                                      {"partition_index": 1, "replicas": [1]},
                                                      {"partition_index": 0, "replicas": [1, 2]}]}]}),
    "broker-loggers": (32, [4], lambda t, v: {"resources": [
        {"resource_type": 8, "resource_name": "1", "configuration_keys": None}]}),
    "max-timestamp": (2, [9], lambda t, v: {"replica_id": -1, "topics": [{"name": TOPIC, "partitions": [
        {"partition_index": 0, "timestamp": -3, "current_leader_epoch": -1},
        {"partition_index": 1, "timestamp": -2, "current_leader_epoch": -1}]}]}),
    "all-committed": (9, [7, 10], lambda t, v: {"group_id": GROUP, "topics": None, "groups": [
        {"group_id": GROUP, "member_id": None, "member_epoch": -1, "topics": None}]}),
    "cluster-level": (32, [1, 4], _broker_resource(None)),
    "cluster-level-keys": (32, [4], _broker_resource(["min.insync.replicas", "num.partitions"])),
    "invalid-topics": (19, [7], lambda t, v: {"timeout_ms": 30_000, "topics": [
        {"name": "bad name!", "num_partitions": 1, "replication_factor": 1},
        {"name": "zero-partitions", "num_partitions": 0, "replication_factor": 1},
        {"name": "rf-too-big", "num_partitions": 1, "replication_factor": 3}]}),
    "non-empty-group": (42, [2, 3], lambda t, v: {"groups_names": [GROUP, "nope"]}),
    "invalid-configs": (19, [7], lambda t, v: {"timeout_ms": 30_000, "topics": [
        {"name": f"bad-config-{i}", "num_partitions": 1, "replication_factor": 1,
         "configs": [{"name": name, "value": value}]}
        for i, (name, value) in enumerate([("segment.bytes", "100"), ("retention.ms", None),
                                           ("compression.gzip.level", "0"), ("min.cleanable.dirty.ratio", "2"),
                                           ("preallocate", "yes"), ("segment.bytes", "99999999999"),
                                           ("retention.ms", "-2"), ("min.insync.replicas", "0")])]}),
    "too-many-partitions": (19, [7], lambda t, v: {"timeout_ms": 30_000, "topics": [
        {"name": f"big-{i}", "num_partitions": 5001, "replication_factor": 1} for i in (1, 2)]}),
    "too-many-more-partitions": (37, [3], lambda t, v: {"timeout_ms": 30_000, "topics": [
        {"name": "sweep-cp-v1", "count": 20_000}]}),
    "unknown-member": (14, [5], lambda t, v: {**_sync_group(t, v), "member_id": "nope", "assignments": []}),
    "commit-unknown-member": (8, [8, 10], lambda t, v: offset_commit_body(GROUP, t.generation_id, "nope",
                                                                           t.topic_ids[TOPIC])),
    "commit-unknown-topic-id": (8, [10], lambda t, v: offset_commit_body(GROUP, t.generation_id, t.member_id,
                                                                         uuid.UUID(int=1))),
    "fetch-unknown-topic-id": (9, [10], lambda t, v: {"require_stable": False, "groups": [
        {"group_id": GROUP, "member_id": None, "member_epoch": -1, "topics": [
            {"topic_id": uuid.UUID(int=1), "partition_indexes": [0]},
            {"topic_id": t.topic_ids[TOPIC], "partition_indexes": [0, 1]}]}]}),
    "require-stable-all": (9, [7], lambda t, v: {"group_id": GROUP, "topics": None, "require_stable": True}),
    "rebalancing-group": (15, [4], lambda t, v: {"groups": ["sweep-join-v9"]}),
    "unknown-static-member": (13, [5], lambda t, v: {"group_id": GROUP, "members": [
        {"member_id": "", "group_instance_id": "nope"}]}),
    "unknown-partitions": (47, [0], lambda t, v: {"group_id": SIMPLE_GROUP, "topics": [
        {"name": TOPIC, "partitions": [{"partition_index": 9}]},
        {"name": "nope", "partitions": [{"partition_index": 0}]}]}),
    # asked twice: Kafka reads these requests into maps and answers once
    "duplicates": (2, [1, 9], lambda t, v: {"replica_id": -1, "topics": [
        {"name": TOPIC, "partitions": [{"partition_index": 1, "timestamp": -1},
                                       {"partition_index": 0, "timestamp": -1}]},
        {"name": TOPIC, "partitions": [{"partition_index": 1, "timestamp": -2}]}]}),
    "duplicate-partitions": (21, [2], lambda t, v: {"timeout_ms": 30_000, "topics": [
        {"name": "sweep-delrec-v0", "partitions": [{"partition_index": 0, "offset": 2}]},
        {"name": "sweep-delrec-v0", "partitions": [{"partition_index": 0, "offset": 3}]}]}),
    "duplicate-partition": (1, [12], lambda t, v: {**_fetch(t, v), "topics": [
        *_fetch(t, v)["topics"], {"topic": TOPIC, "partitions": [{"partition": 1, "fetch_offset": 1}]}]}),
    "duplicate-topic": (19, [7], lambda t, v: {"timeout_ms": 30_000, "topics": [
        {"name": "dup", "num_partitions": 1, "replication_factor": 1}, {"name": "once", "num_partitions": 1,
                                                                        "replication_factor": 1},
        {"name": "dup", "num_partitions": 1, "replication_factor": 1}]}),
    "duplicate-topics": (37, [3], lambda t, v: {"timeout_ms": 30_000, "topics": [
        {"name": "sweep-cp-v2", "count": 3}, {"name": "sweep-cp-v2", "count": 3}]}),
    "duplicate-names": (20, [5], lambda t, v: {"timeout_ms": 30_000, "topic_names": ["nope", "nope"]}),
    "transactional": (22, [4], lambda t, v: {"transactional_id": "sweep-init", "transaction_timeout_ms": 60_000}),
    "timeout-too-long": (22, [4], lambda t, v: {"transactional_id": "sweep-init-2",
                                                "transaction_timeout_ms": 900_001}),
    "empty-transactional-id": (22, [4], lambda t, v: {"transactional_id": "", "transaction_timeout_ms": 60_000}),
    "transaction-coordinator": (10, [4], lambda t, v: {"key_type": 1, "coordinator_keys": ["sweep-end-v0", ""]}),
    "not-added": (0, [9, 11, 12], lambda t, v: _produce_txn(t, f"sweep-notadded-v{v}")),
    "end-empty": (26, [4], lambda t, v: {**_end_txn_ids(t, "sweep-end-empty"), "committed": True}),
    "unknown-producer": (26, [4], lambda t, v: {"transactional_id": "sweep-end-v0", "producer_id": 1,
                                                "producer_epoch": 0, "committed": True}),
    "unknown-txn-topic": (24, [3], lambda t, v: {**_add_partitions_to_txn(t, 3), "v3_and_below_topics": [
        {"name": TXN_TOPIC, "partitions": [0]}, {"name": "nope", "partitions": [0]}]}),
    "not-added-offsets": (28, [3, 4, 5, 6], lambda t, v: _txn_offset_commit_for(t, f"sweep-toc-notadded-v{v}",
                                                                                added=False)),
    "unknown-topic-id-offsets": (28, [6], lambda t, v: {
        **_txn_offset_commit_for(t, "sweep-toc-unknown-id"),
        "topics": [{"topic_id": uuid.UUID(int=1), "partitions": [{"partition_index": 0, "committed_offset": 1}]}]}),
    "this-cluster-and-node": (18, [5], _api_versions_for("", 1)),
    "other-cluster": (18, [5], _api_versions_for("not-this-cluster", 1)),
    "other-node": (18, [5], _api_versions_for("", 7)),
    "cluster-without-node": (18, [5], _api_versions_for("", -1)),
    "node-without-cluster": (18, [5], _api_versions_for(None, 1)),
    "unknown-and-deleted-groups": (15, [5, 6], lambda t, v: {"groups": ["nope", "sweep-delgroup-v0", SIMPLE_GROUP],
                                                             "include_authorized_operations": False}),
    "include-fenced": (60, [2], lambda t, v: {"endpoint_type": 1, "include_fenced_brokers": True}),
    # negative timestamps a version does not know are UNSUPPORTED_VERSION (v11 knows -6, none knows -7)
    "special-timestamps": (2, [1, 7, 8, 9, 10, 11], _timestamps(-6, -7)),
    "tiered-timestamps": (2, [1, 8, 9], _timestamps(-4, -5)),
    "id-pattern": (66, [2], _list_transactions_matching("sweep-end-v[0-9]+")),
    "id-pattern-partial": (66, [2], _list_transactions_matching("end")),
    "id-pattern-empty": (66, [2], _list_transactions_matching("")),
    "id-pattern-invalid": (66, [2], _list_transactions_matching("(unclosed")),
    # one partition, one batch (how far Kafka reads past the first under read_committed varies from run to run):
    # the aborted batch of sweep-end-v1 at 2, and in partition 1 the one WriteTxnMarkers aborted
    "read-committed": (1, [12], lambda t, v: _read_committed(t, v, 0, 2)),
    "read-committed-p1": (1, [12], lambda t, v: _read_committed(t, v, 1, 0)),
    "read-committed-latest": (2, [9], lambda t, v: {"replica_id": -1, "isolation_level": 1, "topics": [
        {"name": TXN_TOPIC, "partitions": [{"partition_index": p, "timestamp": -1, "current_leader_epoch": -1}
                                           for p in (0, 1)]}]}),
    "ongoing": (65, [0], lambda t, v: {"transactional_ids": [_ongoing(t, "sweep-ongoing")]}),
    "ongoing-only": (66, [1], lambda t, v: {"state_filters": ["Ongoing", "Bogus"], "producer_id_filters": []}),
    "alter-errors": (44, [0, 1], lambda t, v: {"validate_only": False, "resources": [
        {"resource_type": rt, "resource_name": name, "configs": [_alter_op(*op) for op in ops]}
        for rt, name, ops in [
            (2, "sweep-alter-v0", [("foo", "1")]), (2, "sweep-alter-v1", [("retention.ms", "5", 2)]),
            (2, "sweep-delete-v0", [("retention.ms", "abc")]), (2, "nope", [("retention.ms", "1")]),
            (2, "", [("retention.ms", "1")]), (2, TOPIC, [("segment.ms", None)]),
            (2, PRODUCE_TOPIC, [("retention.ms", "1"), ("retention.ms", "2")]),
            (2, TXN_TOPIC, [("segment.bytes", "100")]),
            (4, "", [("num.partitions", "3")]), (4, "1", [("message.max.bytes", "x")]),
            (4, "2", [("message.max.bytes", "1")]), (4, "x", [("message.max.bytes", "1")]),
            (3, "x", [("a", "1")])]]}),
    "alter-broker-errors": (44, [1], lambda t, v: {"validate_only": False, "resources": [
        {"resource_type": 4, "resource_name": "", "configs": [_alter_op("min.insync.replicas", None, 1)]},
        {"resource_type": 4, "resource_name": "1", "configs": [_alter_op("message.max.bytes", "5", 2)]}]}),
    "alter-value-errors": (44, [1], lambda t, v: {"validate_only": False, "resources": [
        {"resource_type": rt, "resource_name": name, "configs": [_alter_op(*op) for op in ops]}
        for rt, name, ops in [
            (4, "", [("message.max.bytes", "-5")]), (4, "1", [("log.retention.bytes", "abc")]),
            (2, "sweep-alter-v0", [("cleanup.policy", "bogus", 2)]),
            (2, "sweep-alter-v1", [("min.insync.replicas", "0")])]]}),
    "alter-static-pair": (44, [1], lambda t, v: {"validate_only": False, "resources": [
        {"resource_type": 4, "resource_name": "1", "configs": [_alter_op("num.partitions", "2"),
                                                               _alter_op("broker.id", "3")]}]}),
    "duplicate-resources": (44, [1], lambda t, v: {"validate_only": False, "resources": [
        {"resource_type": 2, "resource_name": "sweep-alter-v0", "configs": [_alter_op("retention.ms", "1")]}] * 2}),
    "validate-only": (44, [1], lambda t, v: {"validate_only": True, "resources": [
        {"resource_type": 2, "resource_name": "sweep-alter-v0", "configs": [_alter_op("max.message.bytes", "5")]}]}),
    "legacy-errors": (33, [0, 2], lambda t, v: {"validate_only": False, "resources": [
        {"resource_type": rt, "resource_name": name, "configs": [{"name": k, "value": val}]}
        for rt, name, k, val in [(2, "sweep-legacy-v0", "retention.ms", None), (2, "sweep-legacy-v1", "foo", "1"),
                                 (2, "nope", "retention.ms", "1"), (4, "", "log.retention.bytes", "1000"),
                                 (4, "2", "message.max.bytes", "1")]]}),
    "altered": (32, [4], lambda t, v: {"include_synonyms": True, "include_documentation": False, "resources": [
        {"resource_type": 2, "resource_name": name, "configuration_keys": None}
        for name in ("sweep-alter-v0", "sweep-alter-v1", "sweep-legacy-v2")]}),
    "group-describe": (32, [4], lambda t, v: {"include_synonyms": True, "include_documentation": False,
                                               "resources": [{"resource_type": 32, "resource_name": "sweep-gcfg",
                                                              "configuration_keys": None}]}),
    "group-alter": (44, [1], lambda t, v: {"validate_only": False, "resources": [
        {"resource_type": 32, "resource_name": f"sweep-gcfg-{i}", "configs": [_alter_op(k, val)]}
        for i, (k, val) in enumerate([("share.auto.offset.reset", "earliest"),
                                      ("share.record.lock.duration.ms", "1000"), ("bogus.config", "1"),
                                      ("share.auto.offset.reset", "sometimes"),
                                      ("consumer.session.timeout.ms", "70000"), ("share.delivery.count.limit", "x"),
                                      ("share.isolation.level", "read_committed")])]}),
    # share.isolation.level: what a share-partition acquires and sends of a partition with transactions
    "share-read-committed": (78, [1, 2], _share_fetch_isolated("read_committed")),
    "share-read-uncommitted": (78, [1, 2], _share_fetch_isolated("read_uncommitted")),
    "group-legacy-alter": (33, [2], lambda t, v: {"validate_only": False, "resources": [
        {"resource_type": 32, "resource_name": "sweep-gcfg-legacy", "configs": [
            {"name": "share.delivery.count.limit", "value": "4"}]}]}),
    "name-and-id": (20, [6], lambda t, v: {"timeout_ms": 30_000, "topics": [
        {"name": TOPIC, "topic_id": t.topic_ids[TOPIC]}, {"name": None, "topic_id": ZERO_UUID}]}),
    # KIP-848 consumer groups: CONSUMER_GROUP's member, and the coordinator's error paths
    "cg-heartbeat": (68, [0, 1], _cg_heartbeat()),
    "cg-unknown-member": (68, [1], _cg_heartbeat(member_id="nope")),
    "cg-greater-epoch": (68, [1], _cg_heartbeat(member_epoch=99)),
    "cg-smaller-epoch": (68, [1], _cg_heartbeat(member_epoch=1)),
    "cg-unknown-group": (68, [1], _cg_heartbeat(group_id="sweep-no-such-cg")),
    "cg-empty-classic-group": (68, [1], lambda t, v: cg_join_body(EMPTY_CLASSIC, "m")),
    "cg-offsets-of-empty-classic-group": (9, [9], lambda t, v: {"require_stable": False, "groups": [
        {"group_id": EMPTY_CLASSIC, "member_id": None, "member_epoch": -1, "topics": None}]}),
    "cg-bad-assignor": (68, [1], lambda t, v: cg_join_body("sweep-cg-bad", "m", server_assignor="bogus")),
    "cg-invalid-regex": (68, [1], lambda t, v: cg_join_body("sweep-cg-bad", "m", subscribed_topic_names=None,
                                                            subscribed_topic_regex="(a")),
    "cg-no-subscription": (68, [1], lambda t, v: cg_join_body("sweep-cg-bad", "m", subscribed_topic_names=None)),
    "cg-empty-member-id": (68, [1], lambda t, v: cg_join_body("sweep-cg-bad", "")),
    "cg-no-rebalance-timeout": (68, [1], lambda t, v: cg_join_body("sweep-cg-bad", "m", rebalance_timeout_ms=-1)),
    "cg-owned-when-joining": (68, [1], lambda t, v: cg_join_body("sweep-cg-bad", "m", topic_partitions=None)),
    "cg-bad-epoch": (68, [1], _cg_heartbeat(member_epoch=-3)),
    "cg-leave-unknown": (68, [1], _cg_heartbeat(member_id="nope", member_epoch=-1)),
    "cg-static-leave-unknown": (68, [1], _cg_heartbeat(member_epoch=-2, instance_id="nope")),
    "cg-describe-classic-api": (15, [5, 6], lambda t, v: {"groups": [CONSUMER_GROUP],
                                                          "include_authorized_operations": False}),
    "cg-list-consumer": (16, [5], lambda t, v: {"states_filter": [], "types_filter": ["consumer"]}),
    "cg-list-classic": (16, [5], lambda t, v: {"states_filter": ["stable"], "types_filter": ["classic"]}),
    "cg-commit": (8, [9, 10], _cg_commit()),
    "cg-commit-stale": (8, [9], _cg_commit(epoch=1)),
    "cg-commit-unknown-member": (8, [9], _cg_commit(member="nope")),
    "cg-commit-v8": (8, [8], _cg_commit()),
    "cg-commit-admin": (8, [9], _cg_commit(epoch=-1, member="")),
    "cg-fetch": (9, [9, 10], _cg_fetch()),
    "cg-fetch-stale": (9, [9], _cg_fetch(epoch=1)),
    "cg-txn-offset-commit": (28, [4, 5], _cg_txn_offset_commit()),
    "cg-txn-offset-commit-stale": (28, [5], _cg_txn_offset_commit(1)),
    "cg-delete": (42, [2], lambda t, v: {"groups_names": [CONSUMER_GROUP]}),
    "group-configs": (32, [1, 4], lambda t, v: {"include_synonyms": True, "include_documentation": False,
                                                "resources": [{"resource_type": 32, "resource_name": g,
                                                               "configuration_keys": GROUP_KEYS}
                                                              for g in (CONFIGURED_GROUP, "sweep-any-group")]}),
    "alter-group-configs": (44, [0, 1], lambda t, v: {"validate_only": False, "resources": [
        {"resource_type": 32, "resource_name": f"sweep-cg-alter-{i}-v{v}", "configs": [_alter_op(*op)]}
        for i, op in enumerate([("consumer.session.timeout.ms", "50000"), ("consumer.session.timeout.ms", "1000"),
                                ("consumer.heartbeat.interval.ms", "60000"), ("consumer.session.timeout.ms", "abc"),
                                ("nosuch.config", "1"), ("consumer.session.timeout.ms", "1", 2),
                                ("consumer.assignment.interval.ms", "20000"),
                                ("consumer.heartbeat.interval.ms", None, 1)])]
        + [{"resource_type": 32, "resource_name": "",
            "configs": [_alter_op("consumer.session.timeout.ms", "50000")]}]}),
    "alter-group-configs-legacy": (33, [0, 2], lambda t, v: {"validate_only": False, "resources": [
        {"resource_type": 32, "resource_name": f"sweep-cg-legacy-v{v}",
         "configs": [{"name": "consumer.session.timeout.ms", "value": "50000"}]},
        {"resource_type": 32, "resource_name": f"sweep-cg-legacy-bad-v{v}",
         "configs": [{"name": "consumer.session.timeout.ms", "value": "5"}]}]}),
    "cg-configured-interval": (68, [1], lambda t, v: cg_join_body(CONFIGURED_GROUP, "m")),
    "cg-leave-group-api": (13, [5], lambda t, v: {"group_id": CONSUMER_GROUP, "members": [
        {"member_id": CG_MEMBER, "group_instance_id": None, "reason": None},
        {"member_id": "", "group_instance_id": "nope", "reason": None}]}),
    # log dirs: a relative path, a path with a trailing slash (Kafka matches the name exactly)
    "other-paths": (34, [2], lambda t, v: {"dirs": [{"path": p, "topics": [{"name": TOPIC, "partitions": [0]}]}
                                                    for p in ("kafka-logs", log_dir_of(t) + "/")]}),
    # BROKER_LOGGER resources (Kafka's loggers are Java classes: only the root logger is named alike)
    "logger-errors": (44, [0, 1], lambda t, v: {"validate_only": False, "resources": [
        {"resource_type": 8, "resource_name": name, "configs": [_alter_op(*op) for op in ops]}
        for name, ops in [("1", [("root", "LOUD")]), ("1", [("no.such.Logger", "INFO")]),
                          ("1", [("root", None, 1)]), ("1", [("root", "INFO", 2)]), ("1", [("root", "INFO", 3)]),
                          ("1", [("root", "debug")]), ("1", [("root", None)]), ("1", [("no.such.Logger", None, 1)]),
                          ("1", [("root", "OFF")]), ("2", [("root", "INFO")]), ("", [("root", "INFO")]),
                          ("x", [("root", "INFO")])]]}),
    "logger-set": (44, [1], lambda t, v: {"validate_only": False, "resources": [
        {"resource_type": 8, "resource_name": "1", "configs": [_alter_op("root", "WARN")]}]}),
    "logger-validate-only": (44, [1], lambda t, v: {"validate_only": True, "resources": [
        {"resource_type": 8, "resource_name": "1", "configs": [_alter_op("root", "DEBUG")]}]}),
    "logger-legacy": (33, [2], lambda t, v: {"validate_only": False, "resources": [
        {"resource_type": 8, "resource_name": "1", "configs": [{"name": "root", "value": "INFO"}]}]}),
    "logger-describe": (32, [1, 4], lambda t, v: {"include_synonyms": True, "include_documentation": True,
                                                   "resources": [
        {"resource_type": 8, "resource_name": name, "configuration_keys": ["root", "no.such.Logger"]}
        for name in ("1", "2", "", "x")]}),
    # CLIENT_METRICS resources (KIP-714 subscriptions)
    "client-metrics-alter": (44, [0, 1], lambda t, v: {"validate_only": False, "resources": [
        {"resource_type": 16, "resource_name": f"sweep-cm-{i}-v{v}", "configs": [_alter_op(*op) for op in ops]}
        for i, ops in enumerate([
            [("metrics", "org.apache.kafka.producer.,org.apache.kafka.consumer.coordinator.rebalance.latency.max"),
             ("interval.ms", "1000"), ("match", "client_id=abc, client_software_name=java.*")],
            [("interval.ms", "10")], [("interval.ms", "3600001")], [("interval.ms", "abc")],
            [("match", "client_bogus=abc")], [("match", "client_id=")], [("match", "client_id=[a")],
            [("match", "noequals")], [("nope", "1")], [("metrics", "a.b", 2)], [("metrics", "x", 3)],
            [("metrics", None)], [("nope", None, 1)], [("metrics", "*"), ("interval.ms", "100")]])]
        + [{"resource_type": 16, "resource_name": "", "configs": [_alter_op("interval.ms", "1000")]}]}),
    "client-metrics-legacy": (33, [0, 2], lambda t, v: {"validate_only": False, "resources": [
        {"resource_type": 16, "resource_name": f"sweep-cm-legacy-v{v}", "configs": [
            {"name": "interval.ms", "value": "2000"}]},
        {"resource_type": 16, "resource_name": f"sweep-cm-legacy-bad-v{v}", "configs": [
            {"name": "interval.ms", "value": "20"}]}]}),
    "client-metrics-validate-only": (44, [1], lambda t, v: {"validate_only": True, "resources": [
        {"resource_type": 16, "resource_name": "sweep-cm-never", "configs": [_alter_op("interval.ms", "1000")]}]}),
    "client-metrics-delete": (44, [1], lambda t, v: {"validate_only": False, "resources": [
        {"resource_type": 16, "resource_name": "sweep-cm-13-v1", "configs": [_alter_op("metrics", None, 1),
                                                                             _alter_op("interval.ms", None, 1)]}]}),
    "client-metrics-describe": (32, [1, 4], lambda t, v: {"include_synonyms": True, "include_documentation": True,
                                                           "resources": [
        {"resource_type": 16, "resource_name": name, "configuration_keys": None}
        for name in ("sweep-cm-0-v1", "sweep-cm-legacy-v2", "sweep-cm-never", "")]}),
    "client-metrics-keys": (32, [4], lambda t, v: {"include_synonyms": False, "include_documentation": False,
                                                   "resources": [{"resource_type": 16, "resource_name": "sweep-cm-0-v0",
                                                                  "configuration_keys": ["interval.ms", "nope"]}]}),
    "list-client-metrics": (74, [0, 1], lambda t, v: {"resource_types": [16]}),
    "list-brokers-and-loggers": (74, [1], lambda t, v: {"resource_types": [4, 8]}),
    "list-unknown-type": (74, [1], lambda t, v: {"resource_types": [2, 99]}),
    "list-unknown-type-zero": (74, [1], lambda t, v: {"resource_types": [0]}),
    # last: the Stable classic group becomes a consumer group with a classic member (an online upgrade)
    "cg-classic-group": (68, [1], lambda t, v: cg_join_body(GROUP, "m")),
    # ... and its classic member keeps speaking the classic protocol to it (a mixed group)
    "cg-mixed-describe": (69, [1], lambda t, v: {"group_ids": [GROUP], "include_authorized_operations": False}),
    "cg-mixed-heartbeat": (12, [4], lambda t, v: {"group_id": GROUP, "generation_id": t.generation_id,
                                                  "member_id": t.member_id, "group_instance_id": None}),
    "cg-mixed-sync-stale": (14, [5], lambda t, v: _mixed_sync(t, t.generation_id)),
    "cg-mixed-join": (11, [5], lambda t, v: _mixed_join(t)),
    "cg-mixed-sync": (14, [5], lambda t, v: _mixed_sync(t, t.answers[(11, 5, "cg-mixed-join")].response.generation_id)),
    "cg-mixed-commit": (8, [8], lambda t, v: offset_commit_body(
        GROUP, t.answers[(11, 5, "cg-mixed-join")].response.generation_id, t.member_id)),
    "cg-mixed-describe-groups": (15, [5, 6], lambda t, v: {"groups": [GROUP], "include_authorized_operations": False}),
    "cg-mixed-list": (16, [5], lambda t, v: {"states_filter": [], "types_filter": ["consumer"]}),
}


def _mixed_join(t: Target) -> dict[str, Any]:
    """The classic member of GROUP (a consumer group since cg-classic-group) rejoins, as the eager `range`
    assignor's client does: owning nothing."""
    return {"group_id": GROUP, "session_timeout_ms": SESSION_TIMEOUT_MS, "rebalance_timeout_ms": REBALANCE_TIMEOUT_MS,
            "member_id": t.member_id, "group_instance_id": None, "protocol_type": "consumer",
            "protocols": [{"name": "range", "metadata": SUBSCRIPTION}], "reason": None}


def _mixed_sync(t: Target, generation: int) -> dict[str, Any]:
    return {"group_id": GROUP, "generation_id": generation, "member_id": t.member_id, "group_instance_id": None,
            "protocol_type": "consumer", "protocol_name": "range", "assignments": []}
def _read_committed(t: Target, v: int, partition: int, offset: int) -> dict[str, Any]:
    return {**_fetch(t, v), "isolation_level": 1, "topics": [{"topic": TXN_TOPIC, "partitions": [
        {"partition": partition, "fetch_offset": offset, "partition_max_bytes": 1, "current_leader_epoch": -1,
         "last_fetched_epoch": -1}]}]}


def _end_txn_ids(t: Target, tid: str) -> dict[str, Any]:
    pid, epoch = txn_producer(t, tid)
    return {"transactional_id": tid, "producer_id": pid, "producer_epoch": epoch}


def _produce_txn(t: Target, tid: str) -> dict[str, Any]:
    """A transactional batch for a partition its transaction never added."""
    pid, epoch = txn_producer(t, tid)
    batch = build_batch([{"key": None, "value": b"x", "timestamp": TS0}], producer_id=pid, producer_epoch=epoch,
                        base_sequence=0, transactional=True)
    return {"transactional_id": tid, "acks": -1, "timeout_ms": 30_000, "topic_data": [
        {"name": TXN_TOPIC, "partition_data": [{"index": 1, "records": batch}]}]}


def _ongoing(t: Target, tid: str) -> str:
    txn_producer(t, tid, ((TXN_TOPIC, 1),))
    return tid


VARIANT_CASES = [(k, v, name) for name, (k, versions, _) in VARIANTS.items() for v in versions]
VARIANT_IDS = [f"{API_MODULES[k][0]}-v{v}-{name}" for k, v, name in VARIANT_CASES]


# --- what may differ -------------------------------------------------------------------------------------
VOLATILE = frozenset({"throttle_time_ms", "cluster_id", "port", "member_id", "leader", "producer_id",
                      "producer_epoch", "last_timestamp", "transaction_start_time_ms"})
"""Made up by each broker: replaced by a placeholder. Topic ids keep only whether they are set (the zero UUID
or not), the message of an error only whether there is one (the message of no error is compared: Kafka says
"NONE" or ""); node ids and hosts are compared (both brokers are node 1 on 127.0.0.1)."""

UNORDERED = {"partitions": ("partition_index", "partition", "partition_id"), "partition_responses": ("index",),
             "groups": ("group_id",), "configs": ("name",), "topics": ("name",),
             "responses": ("name", "topic", "topic_name"),
             "transaction_states": ("transactional_id",), "results_by_topic_v3_and_below": ("name",),
             "results_by_partition": ("partition_index",), "replica_election_results": ("topic",),
             "partition_result": ("partition_id",), "members": ("member_type",), "results": ("topic_name",),
             "config_resources": ("resource_name",)}
"""Lists compared in key order (field -> the key of its items): Kafka answers some (ListOffsets' partitions,
ListGroups, DescribeConfigs' configs, Metadata's topics, DeleteTopics' results, a mixed group's members in
ConsumerGroupDescribe, by their made-up member ids) in its hash maps' order, which no client relies on. Items
without the key keep their order."""

FEATURES_WHY = ("fakekafka lists four features: `group.version` (supported 0-1, finalized at 1: KIP-848 consumer "
                "groups), `share.version` (supported 0-2, finalized at 2: KIP-932 share groups), `streams.version` "
                "(supported 0-1, finalized at 1: KIP-1071 streams groups) and "
                "`transaction.version` (supported 0-2, finalized at 2 as a new Kafka 4.x cluster, or at "
                "the level `serve --feature` / BrokerConfig(transaction_version=) sets), from which clients choose "
                "protocols; "
                "metadata.version, kraft.version and the like describe a KRaft quorum fakekafka does not have; "
                "finalized_features_epoch is 1 (Kafka's is its metadata offset)")
SHARE_INIT_WHY = ("Kafka 4.4 initializes a share group's partitions in its share coordinator (an asynchronous write) "
                  "before it assigns them: a new member's first heartbeat is answered with member epoch 2 and an "
                  "empty assignment, the partitions come with a later heartbeat. fakekafka's share-partitions need "
                  "no initialization: the first heartbeat is answered with epoch 1 and the assignment")
QUORUM_WHY = ("the end of the metadata log: Kafka's counts its records (several per change, a NoOp every "
              "metadata.max.idle.interval.ms); fakekafka's counts the cluster's metadata changes")
LOGGERS_WHY = ("Kafka's broker loggers are its log4j loggers, Java class names (kafka.server.KafkaApis, ...); "
               "fakekafka's are its Python loggers (fakekafka.server, fakekafka.events, ...): only `root` is in both")
KNOWN: dict[int | tuple[int, str], list[tuple[str, str]]] = {
    18: [("/api_keys*", "fakekafka advertises only the APIs and versions it implements, each answered for real "
                        "state by this sweep; every one of them is in Kafka's ranges or in EXPECTED"),
         ("/supported_features*", FEATURES_WHY), ("/finalized_features*", FEATURES_WHY)],
    55: [("/topics[[]*]/partitions[[]*]/high_watermark", QUORUM_WHY),
         ("/topics[[]*]/partitions[[]*]/current_voters[[]*]/log_end_offset", QUORUM_WHY),
         ("/topics[[]*]/partitions[[]*]/current_voters[[]*]/last_*_timestamp", "the time of the answer"),
         ("/nodes[[]*]/listeners[[]*]/*", "Kafka's voter lists its CONTROLLER listener; fakekafka has no controller "
                                          "listener and lists the broker's own")],
    76: [("/member_epoch", SHARE_INIT_WHY), ("/assignment/topic_partitions", SHARE_INIT_WHY)],
    77: [("/groups[[]*]/group_epoch", SHARE_INIT_WHY), ("/groups[[]*]/assignment_epoch", SHARE_INIT_WHY),
         ("/groups[[]*]/members[[]*]/member_epoch", SHARE_INIT_WHY),
         ("/groups[[]*]/members[[]*]/assignment/topic_partitions", SHARE_INIT_WHY)],
    35: [("/results[[]0]/log_dir", "each broker's own directory: a temporary one for the JVM Kafka, Kafka's default "
                                   "log.dir, /tmp/kafka-logs, for fakekafka's in-memory logs"),
         ("/results[[]0]/total_bytes", "the volume's size; fakekafka's logs are in memory, so -1 (unknown)"),
         ("/results[[]0]/usable_bytes", "the volume's free space; fakekafka's logs are in memory, so -1 (unknown)")],
    (32, "broker-loggers"): [("/results[[]0]/configs", LOGGERS_WHY)],
}
"""Deliberate differences: API key, or (API key, variant name), -> [(path pattern, reason)], the same reasons
as the handler docstrings and compat/KNOWN_DIFFERENCES.md. A path is `/field[i]/field`; patterns are
fnmatch-style ([[] for a bracket)."""


def error_codes(value: Any, path: str = "") -> Iterator[tuple[str, int]]:
    """Every `error_code` field in a decoded answer, with its path."""
    if isinstance(value, dict):
        for k, v in value.items():
            if k.endswith("error_code") and isinstance(v, int):
                yield f"{path}/{k}", v
            else:
                yield from error_codes(v, f"{path}/{k}")
    elif isinstance(value, list):
        for i, v in enumerate(value):
            yield from error_codes(v, f"{path}[{i}]")


def normalise(value: Any) -> Any:
    """A plain, comparable form of a decoded answer without what each broker makes up (see VOLATILE)."""
    if isinstance(value, dict):
        out = {}
        for k, v in value.items():
            if k.startswith("_"):
                continue
            if k in UNORDERED and isinstance(v, list):
                keys = UNORDERED[k]
                out[k] = sorted(normalise(v), key=lambda i: next((str(i[key]) for key in keys if key in i), "")
                                if isinstance(i, dict) else i)
            elif k in VOLATILE:
                out[k] = f"<{k}>"
            elif (k == "error_message" and value.get("error_code", 0) != 0) or k == "batch_index_error_message":
                out[k] = None if v is None else "<message>"
            elif k == "records" and isinstance(v, bytes | bytearray | memoryview):
                out[k] = records_view(bytes(v))
            elif k == "topic_id" and isinstance(v, uuid.UUID):
                out[k] = "<zero>" if v == ZERO_UUID else "<uuid>"
            else:
                out[k] = normalise(v)
        return out
    if isinstance(value, list | tuple):
        return [normalise(v) for v in value]
    if isinstance(value, bytes | bytearray | memoryview):
        return bytes(value)
    return value


def records_view(data: bytes) -> Any:
    """Record batches with what each broker makes up (the producer id, and so the CRC) masked; other bytes as
    they are."""
    try:
        batches = iter_batches(data, validate=False)
    except Exception:  # noqa: BLE001 - not batches (or a partial one): compared as bytes
        return data
    if not batches or all(h.producer_id < 0 for h, _ in batches):
        return data
    return [{"base_offset": h.base_offset, "last_offset_delta": h.last_offset_delta, "attributes": h.attributes,
             "producer_id": "<producer_id>" if h.producer_id >= 0 else -1, "base_sequence": h.base_sequence,
             "records": [(r.key, r.value, r.headers) for r in decode_batch(bytes(b)).records]} for h, b in batches]


def differences(got: Any, want: Any, path: str = "") -> Iterator[tuple[str, Any, Any]]:
    """(path, fakekafka's value, Kafka's value) for every leaf that differs."""
    if isinstance(got, dict) and isinstance(want, dict):
        for k in [*want, *(k for k in got if k not in want)]:
            yield from differences(got.get(k, "<absent>"), want.get(k, "<absent>"), f"{path}/{k}")
    elif isinstance(got, list) and isinstance(want, list) and len(got) == len(want):
        for i, (g, w) in enumerate(zip(got, want, strict=True)):
            yield from differences(g, w, f"{path}[{i}]")
    elif got != want:
        yield path or "/", got, want


def contains(got: Any, want: Any) -> bool:
    """`want` is a subset of `got`: dicts by key, lists item by item (same length)."""
    if isinstance(want, dict):
        return isinstance(got, dict) and all(k in got and contains(got[k], w) for k, w in want.items())
    if isinstance(want, list):
        return isinstance(got, list) and len(got) == len(want) and all(map(contains, got, want))
    return got == want


USED: set[tuple[int | tuple[int, str], str]] = set()
COMPARED: set[int | tuple[int, str]] = set()
"""Which KNOWN patterns excused a difference, and which APIs were compared with Kafka, in this session."""


def known_reason(api_key: int, variant: str, path: str) -> str | None:
    for key in (api_key, (api_key, variant)):
        for pattern, why in KNOWN.get(key, []):
            if fnmatch.fnmatchcase(path, pattern):
                USED.add((key, pattern))
                return why
    return None


# --- fixtures and tests ----------------------------------------------------------------------------------
def fake_cluster() -> fakekafka.Cluster:
    """In-process fakekafka with the Kafka launcher's static broker configs (auto-creation off, ...), which
    DescribeConfigs reports."""
    config = BrokerConfig(auto_create_topics=False, group_initial_rebalance_delay_ms=0,
                          overrides=dict(KafkaCluster().configs))
    return fakekafka.Cluster(config=config)


@pytest.fixture(scope="session")
def fake() -> Iterator[Target]:
    with fake_cluster() as cluster:
        target = Target("fakekafka", cluster.bootstrap_servers)
        set_up(target)
        yield target
        target.close()


@pytest.fixture(scope="module")
def faulty() -> Iterator[tuple[Target, fakekafka.Cluster]]:
    """A second fakekafka with the same state, for requests answered with an injected error."""
    with fake_cluster() as cluster:
        target = Target("fakekafka-faults", cluster.bootstrap_servers)
        set_up(target)
        yield target, cluster
        target.close()


@pytest.fixture(scope="session")
def real_kafka() -> Iterator[Target]:
    if kafka_lib() is None:
        pytest.skip("Apache Kafka is not installed: run `eval \"$(bash .ci/install.sh)\"`")
    yield from started_kafka("kafka", "Kafka", lambda: KafkaCluster(brokers=1))


def started_kafka(name: str, label: str, make: Callable[[], KafkaCluster], **set_up_args: Any) -> Iterator[Target]:
    """A started Apache Kafka set up for the sweep (set_up), as a fixture yields it; started once more if the start
    or set-up fails (a port taken meanwhile on a shared machine), stopped after."""
    first_failure = None
    for _ in range(2):
        cluster = make()
        try:
            cluster.start()
            target = Target(name, cluster.bootstrap_servers)
            set_up(target, **set_up_args)
        except (KafkaUnavailable, AssertionError, OSError) as e:
            cluster.stop()
            if first_failure is not None:
                raise AssertionError(f"{label} failed twice; first: {first_failure!r}") from e
            first_failure = e
            warnings.warn(f"starting or setting up {label} failed, trying once more: {e!r}", stacklevel=1)
            continue
        try:
            yield target
        finally:
            target.close()
            cluster.stop()
        return


@pytest.mark.parametrize(("api_key", "version"), PAIRS, ids=IDS)
def test_answered(fake: Target, api_key: int, version: int) -> None:
    answer = fake.answer(api_key, version)
    assert answer.response is not None, "fakekafka closed the connection instead of answering"
    failed = [p for p, code in error_codes(answer.response) if code == ErrorCode.UNKNOWN_SERVER_ERROR]
    assert not failed, f"UNKNOWN_SERVER_ERROR at {failed} for {answer.request}: {answer.response}"
    if (api_key, version) in EXPECTED:
        why, expected = EXPECTED[(api_key, version)]
        got = normalise(answer.response)
        assert contains(got, expected), f"{why}\nexpected (a subset): {expected}\ngot: {got}"


@pytest.mark.parametrize(("api_key", "version"), PAIRS, ids=IDS)
def test_injected_error(faulty: tuple[Target, fakekafka.Cluster], api_key: int, version: int) -> None:
    target, cluster = faulty
    reg = handler_for(api_key)
    assert reg is not None
    body = fit_request(api_key, version, BUILDERS[api_key](target, version))  # its set-up steps run unfaulted
    # advertised but not accepted (Produce v0-2): refused before any fault applies
    injected = ErrorCode.COORDINATOR_LOAD_IN_PROGRESS if version >= reg.min_version else ErrorCode.UNSUPPORTED_VERSION
    cluster.inject_error(api_key, injected, count=1)
    try:
        response = target.send(api_key, version, body)
    finally:
        cluster.clear_faults()
    # every API can say it: a top-level error code or an error responder (a closed connection would make the
    # client retry a network error instead of handling the error the test asked for)
    assert response is not None, "closed the connection instead of answering the injected error"
    codes = [code for _, code in error_codes(response)]
    assert ErrorCode.UNKNOWN_SERVER_ERROR not in codes, response
    assert injected in codes, f"the injected error is nowhere in {response}"


@pytest.mark.parametrize(("api_key", "version"), PAIRS, ids=IDS)
def test_same_as_kafka(fake: Target, real_kafka: Target, api_key: int, version: int) -> None:
    lo, hi = real_kafka.versions.get(api_key, (0, -1))
    ours = fake.answer(api_key, version)
    if (api_key, version) in EXPECTED:
        if lo <= version <= hi:
            assert real_kafka.answer(api_key, version).response is None, \
                "Kafka answers this pair now: compare with it instead of the written expectation"
        why, expected = EXPECTED[(api_key, version)]
        assert contains(normalise(ours.response), expected), why
        pytest.skip(f"Kafka does not serve this pair; checked against the written expectation only ({why})")
    assert lo <= version <= hi, f"Kafka does not serve {API_MODULES[api_key][0]} v{version}: add it to EXPECTED"
    assert_same(api_key, "", ours, real_kafka.answer(api_key, version))


def assert_same(api_key: int, variant: str, ours: Answer, theirs: Answer) -> None:
    assert theirs.response is not None, "Kafka closed the connection instead of answering"
    unexplained = [(path, got, want) for path, got, want in differences(normalise(ours.response),
                                                                         normalise(theirs.response))
                   if known_reason(api_key, variant, path) is None]
    COMPARED.update({api_key, (api_key, variant)})
    assert not unexplained, "fields that differ from Kafka's answer (fakekafka, Kafka):\n" + "\n".join(
        f"  {path}: {got!r:.200} vs {want!r:.200}" for path, got, want in unexplained)


def swept(target: Target) -> Target:
    """The target after every pair of the sweep, so variants meet the same history on both brokers whatever
    the selection of tests."""
    for api_key, version in PAIRS:
        target.answer(api_key, version)
    return target


@pytest.mark.parametrize(("api_key", "version", "variant"), VARIANT_CASES, ids=VARIANT_IDS)
def test_variant_answered(fake: Target, api_key: int, version: int, variant: str) -> None:
    answer = swept(fake).answer(api_key, version, variant)
    assert answer.response is not None, "fakekafka closed the connection instead of answering"
    failed = [p for p, code in error_codes(answer.response) if code == ErrorCode.UNKNOWN_SERVER_ERROR]
    assert not failed, f"UNKNOWN_SERVER_ERROR at {failed} for {answer.request}: {answer.response}"


@pytest.mark.parametrize(("api_key", "version", "variant"), VARIANT_CASES, ids=VARIANT_IDS)
def test_variant_same_as_kafka(fake: Target, real_kafka: Target, api_key: int, version: int, variant: str) -> None:
    assert_same(api_key, variant, swept(fake).answer(api_key, version, variant),
                swept(real_kafka).answer(api_key, version, variant))


def test_no_stale_known_difference(real_kafka: Target) -> None:
    """A listed difference that no longer shows (for an API compared in this session) is to be deleted."""
    stale = [(k, pattern) for k in COMPARED for pattern, _ in KNOWN.get(k, []) if (k, pattern) not in USED]
    assert not stale, f"KNOWN lists differences Kafka no longer shows: {stale}"


def test_api_sweep_advertises_no_client_telemetry(fake: Target, real_kafka: Target) -> None:
    """With their defaults neither broker advertises client telemetry (KIP-714), so the sweep has no pair of it;
    asked anyway, both answer alike (Kafka's ClientMetricsManager runs without a reporter; nothing receives the
    push)."""
    for target in (fake, real_kafka):
        answer = target.answer(ApiKey.API_VERSIONS, 3)
        assert answer.response is not None
        keys = {k.api_key for k in answer.response.api_keys}
        assert keys.isdisjoint({ApiKey.GET_TELEMETRY_SUBSCRIPTIONS, ApiKey.PUSH_TELEMETRY}), target.name
    # asked anyway, both answer: a new client instance with nothing to push, every five minutes
    answers = {}
    for target in (fake, real_kafka):
        got = target.send(ApiKey.GET_TELEMETRY_SUBSCRIPTIONS, 0, {"client_instance_id": ZERO_UUID})
        assert got is not None, f"{target.name} closed the connection"
        assert got.client_instance_id != ZERO_UUID
        answers[target.name] = {k: got[k] for k in ("throttle_time_ms", "error_code", "accepted_compression_types",
                                                     "push_interval_ms", "telemetry_max_bytes", "delta_temporality",
                                                     "requested_metrics")}
        pushed = target.send(ApiKey.PUSH_TELEMETRY, 0, {"client_instance_id": got.client_instance_id,
                                                        "subscription_id": got.subscription_id, "metrics": b"x"})
        assert pushed is not None and pushed.error_code == ErrorCode.NONE, (target.name, pushed)
    assert answers[fake.name] == answers[real_kafka.name]
    assert {ApiKey.GET_TELEMETRY_SUBSCRIPTIONS, ApiKey.PUSH_TELEMETRY}.isdisjoint(k for k, _ in PAIRS)
