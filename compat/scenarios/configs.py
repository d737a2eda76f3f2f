"""DescribeConfigs through each client's admin API (with synonyms asked for): what a topic and a broker
report, with which source, read-only flag and synonym chain.

Kafka (ConfigHelper / KIP-226): a topic config not set on the topic reports the broker's value for it,
with source DEFAULT_CONFIG (or STATIC_BROKER_CONFIG when the broker's properties set it); one set on the
topic reports DYNAMIC_TOPIC_CONFIG; synonyms list where the value could come from, most specific first,
leaving out the broker names that have no value. Broker configs are read-only unless they may be changed
dynamically (DynamicBrokerConfig). Only the configs asked for are returned; an unknown topic is
UNKNOWN_TOPIC_OR_PARTITION.

Configs that the harness's Kafka sets in its properties file (num.partitions, default.replication.factor,
flush.messages' log.flush.interval.messages...) are left out: their source says how the broker was
started, not how it behaves.
"""

from __future__ import annotations

from typing import Any

from compat.clients.base import Client
from compat.env import Env, outcome_of
from compat.scenarios.registry import Outcome, scenario

TOPIC_DEFAULTS = {
    "cleanup.policy": "delete", "compression.type": "producer", "delete.retention.ms": "86400000",
    "max.message.bytes": "1048588", "message.timestamp.type": "CreateTime", "min.compaction.lag.ms": "0",
    "min.insync.replicas": "1", "retention.bytes": "-1", "retention.ms": "604800000",
    "segment.bytes": "1073741824", "unclean.leader.election.enable": "false",
}


def _short(entries: dict[str, dict[str, Any]], *fields: str) -> dict[str, list[Any]]:
    return {k: [e[f] for f in fields] for k, e in sorted(entries.items())}


# Kafka 4.x formats its storage with min.insync.replicas set as a cluster-wide dynamic default (KIP-966's
# eligible leader replicas need it), so a topic reports that one as DYNAMIC_DEFAULT_BROKER_CONFIG.
@scenario("describe_topic_config_defaults",
          {"configs": {k: [v, "DYNAMIC_DEFAULT_BROKER_CONFIG" if k == "min.insync.replicas" else "DEFAULT_CONFIG",
                           False, False] for k, v in sorted(TOPIC_DEFAULTS.items())}},
          uses=("admin",))
def describe_topic_config_defaults(client: Client, env: Env) -> Outcome:
    """DescribeConfigs of a fresh topic: Kafka's defaults, source DEFAULT_CONFIG, not read-only."""
    topic = env.name("t")
    env.create_topic(topic)
    got = client.describe_configs("topic", topic, sorted(TOPIC_DEFAULTS))
    return {"configs": _short(got, "value", "source", "read_only", "sensitive")}


SET = {"cleanup.policy": "compact", "retention.ms": "3600000", "max.message.bytes": "2000000",
       "message.timestamp.type": "LogAppendTime"}


@scenario("describe_topic_config_set",
          {"configs": {**{k: [v, "DYNAMIC_TOPIC_CONFIG"] for k, v in SET.items()},
                       "segment.bytes": ["1073741824", "DEFAULT_CONFIG"]}}, uses=("admin",))
def describe_topic_config_set(client: Client, env: Env) -> Outcome:
    """A topic created with four configs reports them as DYNAMIC_TOPIC_CONFIG; the rest stay defaults."""
    topic = env.name("t")
    env.create_topic(topic, configs=SET)
    got = client.describe_configs("topic", topic, [*SET, "segment.bytes"])
    return {"configs": _short(got, "value", "source")}


@scenario("describe_topic_config_synonyms", {"synonyms": {
    "cleanup.policy": [["log.cleanup.policy", "delete", "DEFAULT_CONFIG"]],
    "max.message.bytes": [["message.max.bytes", "1048588", "DEFAULT_CONFIG"]],
    "retention.ms": [["retention.ms", "3600000", "DYNAMIC_TOPIC_CONFIG"]],
    "segment.bytes": [["log.segment.bytes", "1073741824", "DEFAULT_CONFIG"]],
}}, uses=("admin",))
def describe_topic_config_synonyms(client: Client, env: Env) -> Outcome:
    """Synonym chains of a topic's configs: one set on the topic (retention.ms), three defaults."""
    topic = env.name("t")
    env.create_topic(topic, configs={"retention.ms": "3600000"})
    got = client.describe_configs("topic", topic, ["cleanup.policy", "max.message.bytes", "retention.ms",
                                                    "segment.bytes"])
    return {"synonyms": {k: e["synonyms"] for k, e in sorted(got.items())}}


BROKER_KEYS = {
    "auto.create.topics.enable": ["false", "STATIC_BROKER_CONFIG", True],
    "group.max.session.timeout.ms": ["1800000", "DEFAULT_CONFIG", True],
    "group.min.session.timeout.ms": ["6000", "DEFAULT_CONFIG", True],
    "log.cleanup.policy": ["delete", "DEFAULT_CONFIG", False],
    "log.retention.bytes": ["-1", "DEFAULT_CONFIG", False],
    "log.retention.hours": ["168", "DEFAULT_CONFIG", True],
    "log.segment.bytes": ["1073741824", "DEFAULT_CONFIG", False],
    "message.max.bytes": ["1048588", "DEFAULT_CONFIG", False],
    "offsets.retention.minutes": ["10080", "DEFAULT_CONFIG", True],
    "unclean.leader.election.enable": ["false", "DEFAULT_CONFIG", False],
}


def _broker_id(env: Env) -> str:
    return str(min(b.node_id for b in env.cluster()._metadata(None).brokers))


@scenario("describe_broker_config", {"configs": BROKER_KEYS}, uses=("admin",))
def describe_broker_config(client: Client, env: Env) -> Outcome:
    """DescribeConfigs of a broker: values, sources (auto-create off is set in its properties), read-only."""
    got = client.describe_configs("broker", _broker_id(env), sorted(BROKER_KEYS))
    return {"configs": _short(got, "value", "source", "read_only")}


def _broker_synonyms_expected(client: Client) -> Outcome:
    auto = [["auto.create.topics.enable", "false", "STATIC_BROKER_CONFIG"],
            ["auto.create.topics.enable", "true", "DEFAULT_CONFIG"]]
    if client.name.startswith("confluent-kafka"):  # synonyms keyed by name: the last of a name wins
        auto = auto[1:]
    return {"synonyms": {"auto.create.topics.enable": auto,
                         "log.retention.hours": [["log.retention.hours", "168", "DEFAULT_CONFIG"]],
                         "message.max.bytes": [["message.max.bytes", "1048588", "DEFAULT_CONFIG"]]}}


@scenario("describe_broker_config_synonyms", _broker_synonyms_expected, uses=("admin",))
def describe_broker_config_synonyms(client: Client, env: Env) -> Outcome:
    """Synonym chains of broker configs: one set in the broker's properties, two defaults."""
    got = client.describe_configs("broker", _broker_id(env), ["auto.create.topics.enable", "log.retention.hours",
                                                               "message.max.bytes"])
    return {"synonyms": {k: e["synonyms"] for k, e in sorted(got.items())}}


# kafka-python's describe_configs drops a resource's error and answers an empty set of configs.
@scenario("describe_configs_unknown", lambda client: {
    "unknown_topic": {} if client.name == "kafka-python" else {"error": "UNKNOWN_TOPIC_OR_PARTITION"},
    "unknown_key": ["retention.ms"]}, uses=("admin",))
def describe_configs_unknown(client: Client, env: Env) -> Outcome:
    """DescribeConfigs of a missing topic is UNKNOWN_TOPIC_OR_PARTITION; an unknown key is left out."""
    topic = env.name("t")
    env.create_topic(topic)
    return {"unknown_topic": outcome_of(lambda: client.describe_configs("topic", env.name("missing"),
                                                                        ["retention.ms"])),
            "unknown_key": sorted(client.describe_configs("topic", topic, ["retention.ms", "no.such.key"]))}
