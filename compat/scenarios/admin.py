"""Topic administration through each client's admin API: CreateTopics beyond the plain refusals (basics'
admin_topic_errors), DeleteTopics, CreatePartitions.

Kafka's rules (controller side: ReplicationControlManager.createTopic, createPartitions; topic names:
org.apache.kafka.common.internals.Topic): validate_only checks everything and creates nothing; -1
partitions or replication factor take the broker's num.partitions / default.replication.factor
(CreateTopics v4+, KIP-464); an unknown config name or a value of the wrong kind is INVALID_CONFIG; a name
that differs from an existing one only in '.' versus '_' collides (INVALID_TOPIC_EXCEPTION); names are at
most 249 characters. CreatePartitions only grows a topic: the same count or fewer is INVALID_PARTITIONS.
"""

from __future__ import annotations

import time
from typing import Any

from compat.clients.base import Client, ClientError, Rec
from compat.env import Env, acks, outcome_of, wait_for
from compat.scenarios.registry import Outcome, scenario

OK = "ok"


def _ok(fn: Any) -> Any:
    return outcome_of(lambda: fn() or OK)


def _gone(env: Env, topic: str) -> bool:
    ok, _ = wait_for(lambda: topic not in env.topics(), env.timing.op_s, 0.1)
    return ok


@scenario("create_topic_validate_only", {"valid": OK, "exists_after": False,
                                         "invalid": {"error": "INVALID_REPLICATION_FACTOR"}}, uses=("admin",))
def create_topic_validate_only(client: Client, env: Env) -> Outcome:
    """CreateTopics with validate_only: a valid topic is accepted and not created; an invalid one refused."""
    topic = env.name("t")
    valid = _ok(lambda: client.create_topic(topic, 3, validate_only=True))
    invalid = _ok(lambda: client.create_topic(env.name("rf"), 1, 1000, validate_only=True))
    time.sleep(0.2)
    return {"valid": valid, "exists_after": topic in env.topics(), "invalid": invalid}


def _defaults_expected(client: Client) -> Outcome:
    if client.name.startswith("aiokafka"):  # aiokafka's NewTopic refuses -1 itself (IllegalArgumentError)
        return {"create": {"error": "CLIENT:IllegalArgumentError"}}
    return {"create": OK, "partitions": 1}


@scenario("create_topic_broker_defaults", _defaults_expected, uses=("admin",))
def create_topic_broker_defaults(client: Client, env: Env) -> Outcome:
    """CreateTopics with -1 partitions and replication factor: the broker's defaults (num.partitions=1)."""
    topic = env.name("t")
    out: Outcome = {"create": _ok(lambda: client.create_topic(topic, -1, -1))}
    if out["create"] == OK:
        wait_for(lambda: topic in env.topics(), env.timing.op_s, 0.1)
        out["partitions"] = outcome_of(lambda: client.partition_count(topic))
    return out


@scenario("create_topic_bad_configs", {"unknown_name": {"error": "INVALID_CONFIG"},
                                       "not_a_number": {"error": "INVALID_CONFIG"},
                                       "not_a_choice": {"error": "INVALID_CONFIG"},
                                       "created": []}, uses=("admin",))
def create_topic_bad_configs(client: Client, env: Env) -> Outcome:
    """CreateTopics with an unknown config name, a non-numeric retention.ms, cleanup.policy=bogus: refused."""
    names = {k: env.name(k) for k in ("unknown", "nan", "choice")}
    out = {
        "unknown_name": _ok(lambda: client.create_topic(names["unknown"], 1, configs={"no.such.config": "1"})),
        "not_a_number": _ok(lambda: client.create_topic(names["nan"], 1, configs={"retention.ms": "soon"})),
        "not_a_choice": _ok(lambda: client.create_topic(names["choice"], 1, configs={"cleanup.policy": "bogus"})),
    }
    topics = env.topics()
    out["created"] = sorted(k for k, n in names.items() if n in topics)
    return out


@scenario("create_topic_name_limits", {"249_chars": OK, "250_chars": {"error": "INVALID_TOPIC_EXCEPTION"},
                                       "dot_then_underscore": {"error": "INVALID_TOPIC_EXCEPTION"},
                                       "empty": {"error": "INVALID_TOPIC_EXCEPTION"}}, uses=("admin",))
def create_topic_name_limits(client: Client, env: Env) -> Outcome:
    """Names of 249 and 250 characters; a name colliding with an existing one through '.' vs '_'; ""."""
    long = env.prefix.replace("_", "-")
    out = {"249_chars": _ok(lambda: client.create_topic(long + "x" * (249 - len(long)), 1)),
           "250_chars": _ok(lambda: client.create_topic(long + "y" * (250 - len(long)), 1))}
    env.create_topic(env.name("dot.t"))
    out["dot_then_underscore"] = _ok(lambda: client.create_topic(env.name("dot_t"), 1))
    out["empty"] = _ok(lambda: client.create_topic("", 1))
    return out


@scenario("delete_topic", {"delete": OK, "metadata_after": {"error": "UNKNOWN_TOPIC_OR_PARTITION"},
                           "again": {"error": "UNKNOWN_TOPIC_OR_PARTITION"}}, uses=("admin",))
def delete_topic(client: Client, env: Env) -> Outcome:
    """DeleteTopics: the topic goes from metadata; deleting it again is UNKNOWN_TOPIC_OR_PARTITION."""
    topic = env.name("t")
    env.create_topic(topic)
    out: Outcome = {"delete": _ok(lambda: client.delete_topic(topic))}
    _gone(env, topic)
    out["metadata_after"] = outcome_of(lambda: client.partition_count(topic))
    out["again"] = _ok(lambda: client.delete_topic(topic))
    return out


@scenario("delete_topic_recreate", lambda client: {"delete": OK, "recreate": OK,
                                                   "records": [[0, "new"]], "latest": 1}, uses=("admin",))
def delete_topic_recreate(client: Client, env: Env) -> Outcome:
    """A topic with 3 records deleted and created again under the same name starts empty, at offset 0."""
    topic = env.name("t")
    env.create_topic(topic)
    for i in range(3):
        env.produce(topic, b"old%d" % i)
    out: Outcome = {"delete": _ok(lambda: client.delete_topic(topic))}
    _gone(env, topic)

    def recreate() -> Any:
        got = _ok(lambda: client.create_topic(topic, 1))
        return got if got == OK or got.get("error") != "TOPIC_ALREADY_EXISTS" else None
    _, out["recreate"] = wait_for(recreate, env.timing.op_s, 0.2)
    _wait_led(env, topic)
    env.produce(topic, b"new")
    out["records"] = [[r.offset, r.value.decode() if r.value else r.value] for r in client.fetch(topic, 0, 0, 1)]
    out["latest"] = client.list_offsets(topic, 0, "latest")
    return out


def _wait_led(env: Env, topic: str, partitions: int = 1) -> None:
    """Until metadata names a leader for every partition and each leader answers for it: Kafka's metadata
    names a new partition's leader a moment before that broker serves it (a write then gets
    NOT_LEADER_OR_FOLLOWER: seen with java-2.8, which does not retry, in create_partitions_grow)."""
    def led() -> bool:
        try:
            t = env.cluster()._topic(topic)
            if len(t.partitions) < partitions or any(p.leader_id < 0 for p in t.partitions):
                return False
            env.cluster().end_offsets(topic)  # ListOffsets to each leader: refused until it serves
        except Exception:  # noqa: BLE001 - not there yet
            return False
        return True
    wait_for(led, env.timing.op_s, 0.05)


def _produce_after_delete_expected(client: Client) -> Outcome:
    # As producing to a topic that never existed (basics' unknown_topic_autocreate_off): Java-like clients
    # time out waiting for metadata, librdkafka reports the topic unknown.
    produce = "UNKNOWN_TOPIC_OR_PARTITION" if client.name in ("confluent-kafka", "kcat", "rdkafka") else "TIMEOUT"
    return {"before": acks(client, [(0, 0)]), "after": {"error": produce}, "recreated": False}


@scenario("delete_topic_then_produce", _produce_after_delete_expected, needs=("auto_create_off",), uses=("admin",))
def delete_topic_then_produce(client: Client, env: Env) -> Outcome:
    """Produce, delete the topic, produce again: the second fails and the topic is not created again."""
    topic = env.name("t")
    env.create_topic(topic)
    before = outcome_of(lambda: acks(client, client.produce(topic, [Rec(None, b"v", [], 0)])))
    client.delete_topic(topic)
    _gone(env, topic)
    after = outcome_of(lambda: acks(client, client.produce(topic, [Rec(None, b"v", [], 0)])))
    return {"before": before, "after": after, "recreated": topic in env.topics()}


# --- CreatePartitions --------------------------------------------------------------------------------

@scenario("create_partitions_grow", lambda client: {"grow": OK, "count": 3, "produced": acks(client, [(2, 0)])},
          uses=("admin",))
def create_partitions_grow(client: Client, env: Env) -> Outcome:
    """CreatePartitions 1 -> 3: metadata shows 3 partitions and the new partition 2 takes records."""
    topic = env.name("t")
    env.create_topic(topic)
    out: Outcome = {"grow": _ok(lambda: client.create_partitions(topic, 3))}
    _wait_led(env, topic, 3)
    out["count"] = outcome_of(lambda: client.partition_count(topic))
    out["produced"] = outcome_of(lambda: acks(client, client.produce(topic, [Rec(None, b"p2", [], 2)])))
    return out


@scenario("create_partitions_refused", {"shrink": {"error": "INVALID_PARTITIONS"},
                                        "same": {"error": "INVALID_PARTITIONS"},
                                        "unknown_topic": {"error": "UNKNOWN_TOPIC_OR_PARTITION"}, "count": 3},
          uses=("admin",))
def create_partitions_refused(client: Client, env: Env) -> Outcome:
    """CreatePartitions 3 -> 2 and 3 -> 3 are INVALID_PARTITIONS; an unknown topic UNKNOWN_TOPIC_OR_PARTITION."""
    topic = env.name("t")
    env.create_topic(topic, 3)
    return {"shrink": _ok(lambda: client.create_partitions(topic, 2)),
            "same": _ok(lambda: client.create_partitions(topic, 3)),
            "unknown_topic": _ok(lambda: client.create_partitions(env.name("missing"), 2)),
            "count": client.partition_count(topic)}


@scenario("create_partitions_validate_only", {"validate": OK, "count": 1,
                                              "invalid": {"error": "INVALID_PARTITIONS"}}, uses=("admin",))
def create_partitions_validate_only(client: Client, env: Env) -> Outcome:
    """CreatePartitions 1 -> 4 with validate_only: accepted, the topic keeps 1 partition; 1 -> 1 refused."""
    topic = env.name("t")
    env.create_topic(topic)
    out = {"validate": _ok(lambda: client.create_partitions(topic, 4, validate_only=True))}
    time.sleep(0.2)
    out["count"] = client.partition_count(topic)
    out["invalid"] = _ok(lambda: client.create_partitions(topic, 1, validate_only=True))
    return out


__all__ = ["ClientError"]
