"""Broker and topic configuration with Kafka's defaults, names and types.

DescribeConfigs reports these; CreateTopics validates against `TOPIC_CONFIGS`. A topic config whose
value was not set on the topic takes the broker's value for its synonym, as in Kafka. The broker configs are
every one Apache Kafka 4.4 defines, generated from its jars (model/kafka_broker_configs.py); the topic, group
and client-metrics ones are written here. A cluster standing in for an older release (`kafka_version`) uses that
release's broker and topic configs instead (`config_catalog`: model/kafka_configs_<release>.py, generated from its
jars by tools/gen_release_configs.py). Names, defaults, synonyms and which broker configs are dynamic
(reported read_only=False) are checked field by field against a real broker by tests/conformance/test_api_sweep.py and
`python -m compat diff`.
"""

from __future__ import annotations

import functools
import importlib
import re
from collections.abc import Iterator
from dataclasses import dataclass, field, fields, replace
from enum import IntEnum
from typing import NamedTuple

from fakekafka.model.acl import STANDARD_AUTHORIZER
from fakekafka.model.cleaner import dedupe_buffer_problem, offset_map_problem
from fakekafka.model.jaas import JaasEntry, JaasError, server_jaas_entry
from fakekafka.model.kafka_broker_configs import BROKER_CONFIG_DEFS, KAFKA_VERSION, BrokerConfigDef
from fakekafka.model.otlp import OtlpMissing, require_otlp
from fakekafka.model.releases import KafkaRelease, UnknownKafkaVersion, kafka_release

__all__ = [
    "AUTHORIZER_CONFIGS", "BROKER_CONFIGS", "CLIENT_METRICS_CONFIGS", "GROUP_CONFIGS", "INTERNAL_BROKER_CONFIGS",
    "MODELLED_BROKER_CONFIGS", "OAUTHBEARER_JWKS_VALIDATOR", "OLDER_TIMESTAMP_LIMIT", "OAUTHBEARER_UNSECURED_VALIDATOR",
    "LISTENER_CONFIG", "LISTENER_MECHANISM_CONFIGS", "PLAIN_LOGIN_MODULE", "SERVER_CALLBACK_HANDLER", "TOPIC_CONFIGS",
    "JMX_REPORTER", "TELEMETRY_RECEIVER",
    "BrokerConfig", "ConfigCatalog", "ConfigSource", "ConfigSpec", "ConfigType",
    "InvalidConfig", "config_catalog", "known_broker_config",
]


class ConfigType(IntEnum):
    UNKNOWN = 0
    BOOLEAN = 1
    STRING = 2
    INT = 3
    SHORT = 4
    LONG = 5
    DOUBLE = 6
    LIST = 7
    CLASS = 8
    PASSWORD = 9


class ConfigSource(IntEnum):
    UNKNOWN = 0
    TOPIC_CONFIG = 1
    DYNAMIC_BROKER_CONFIG = 2
    DYNAMIC_DEFAULT_BROKER_CONFIG = 3
    STATIC_BROKER_CONFIG = 4
    DEFAULT_CONFIG = 5
    DYNAMIC_BROKER_LOGGER_CONFIG = 6
    DYNAMIC_CLIENT_METRICS_CONFIG = 7
    DYNAMIC_GROUP_CONFIG = 8


class InvalidConfig(ValueError):
    pass


@dataclass(frozen=True)
class ConfigSpec:
    name: str
    type: ConfigType
    default: str | None
    broker_synonym: str | None = None
    choices: tuple[str, ...] = ()
    minimum: int | float | None = None
    maximum: int | float | None = None
    also: int | None = None
    """A value allowed outside [minimum, maximum] (compression.gzip.level's -1)."""
    documentation: str = ""
    dynamic: bool = False
    """A broker config Kafka can change without a restart (DynamicBrokerConfig): DescribeConfigs says
    read_only=False for these, True for the others."""
    case_insensitive: bool = False
    """`choices` compared ignoring case (Kafka's CaseInsensitiveValidString)."""
    list_checks: bool = False
    """A list Kafka's ValidList checks: no element twice, none empty, and (unless `empty_allowed`) not empty."""
    empty_allowed: bool = True
    """False: an empty value is refused (a ValidList that must not be empty, Kafka's NonEmptyString)."""
    entry_form: str = ""
    """Each list entry must be `{id}@{host}:{port}` ("voters") or `{host}:{port}` ("bootstrap"), as Kafka's
    controller.quorum.* validators check them."""
    update_mode: str = "read-only"
    """How a broker config can change at run time, as Kafka says: read-only, per-broker or cluster-wide."""
    internal: bool = False
    """Kafka's internal broker configs: accepted, described only when set."""
    security: bool = False
    """A keystore/truststore setting Kafka updates at run time only per listener (with the listener's prefix)."""
    thread_count: bool = False
    """A thread count a dynamic update may at most halve or double (Kafka's DynamicThreadPool)."""
    versions: tuple[str, ...] = ()
    """A Kafka version config (`message.format.version`, `inter.broker.protocol.version` before 4.0): the
    versions that release knows; a value names one, or its major.minor (Kafka's MetadataVersionValidator)."""
    version_quote: str = ""
    """How the release's refusal quotes the version: "`" in 2.8's ApiVersionValidator, "" after."""
    replica_list: bool = False
    """A throttled replica list: `*` or `partition:broker` pairs (Kafka's ThrottledReplicaListValidator)."""

    def validate(self, value: str | None) -> str | None:
        """`value` if valid, else InvalidConfig with the message Kafka's ConfigDef gives."""
        if value is None:
            return None
        invalid = f"Invalid value {value} for configuration {self.name}: "
        if self.type == ConfigType.BOOLEAN and value.strip().lower() not in ("true", "false"):
            raise InvalidConfig(invalid + "Expected value to be either true or false")
        if self.type in _BITS or self.type == ConfigType.DOUBLE:
            n = _number(value, self.type)
            if n is None:
                raise InvalidConfig(invalid + f"Not a number of type {self.type.name}")
            shown = f"Invalid value {n} for configuration {self.name}: "  # as parsed: 2.0, not 2
            if n != self.also:
                low = self.minimum is not None and n < self.minimum
                high = self.maximum is not None and n > self.maximum
                if (low or high) and self.also is not None:
                    raise InvalidConfig(shown + f"Value must be between {self.minimum} and {self.maximum} or equal "
                                                f"to {self.also}")
                if low:
                    raise InvalidConfig(shown + f"Value must be at least {self.minimum}")
                if high:
                    raise InvalidConfig(shown + f"Value must be no more than {self.maximum}")
        if self.versions:
            self._check_version(value)
            return value
        if self.replica_list:
            parts = [p.strip() for p in value.split(",")]
            if not (all(re.fullmatch(r"([0-9]+:[0-9]+)?", p) for p in parts) or "".join(parts) == "*"):
                raise InvalidConfig(invalid + f"{self.name} must be the literal '*' or a list of replicas in the "
                                              "following format: [partitionId]:[brokerId],[partitionId]:[brokerId],...")
            return value
        if self.list_checks:
            self._check_list(value)
            return value
        if not self.empty_allowed and value == "":
            raise InvalidConfig(invalid + "String must be non-empty")
        if self.type == ConfigType.CLASS and value.strip() not in ("", self.default):
            # Kafka loads the class and refuses one it can't find; fakekafka runs no Java class, so the
            # only one it can honour is the default
            raise InvalidConfig(invalid + f"Class {value.strip()} could not be found.")
        if self.choices:
            parts = [p for p in value.split(",") if p.strip()] if self.type == ConfigType.LIST else [value]
            if self.case_insensitive:  # Kafka's CaseInsensitiveValidString
                if value.strip().lower() not in {c.lower() for c in self.choices}:
                    raise InvalidConfig(f"Invalid value {value} for configuration {self.name}: "
                                        f"String must be one of (case insensitive): {', '.join(self.choices)}")
                return value
            for p in parts:  # a list is checked element by element: the message names the element
                if p.strip() not in self.choices:
                    raise InvalidConfig(f"Invalid value {p.strip()} for configuration {self.name}: "
                                        f"String must be one of: {', '.join(self.choices)}")
        return value

    def _check_version(self, value: str) -> None:
        """A release's version string as its MetadataVersion.fromVersionString reads one: the first three parts of
        a 0.x version, two of a later one, naming a version or the major.minor of some."""
        parts = value.split(".")
        key = ".".join(parts[:3 if value.startswith("0.") else 2])
        if key not in self.versions and key not in {v.split("-IV")[0] for v in self.versions}:
            q = self.version_quote
            raise InvalidConfig(f"Invalid value {value} for configuration {self.name}: Version {q}{value}{q} is not "
                                "a valid version")

    def _check_list(self, value: str) -> None:
        """Kafka's ValidList (and controller.quorum.*) checks, in its order and words. Kafka splits a list on
        commas with the blanks around them, keeping empty elements ("a,,b", "a,")."""
        trimmed = value.strip()
        parts = re.split(r"\s*,\s*", trimmed) if trimmed else []
        if not parts and not self.empty_allowed:
            valid = f"[{', '.join(self.choices)}]" if self.choices else "any non-empty value"
            raise InvalidConfig(f"Configuration '{self.name}' must not be empty. Valid values include: {valid}")
        if len(set(parts)) != len(parts):
            raise InvalidConfig(f"Configuration '{self.name}' values must not be duplicated.")
        if "" in parts:
            raise InvalidConfig(f"Configuration '{self.name}' values must not be empty.")
        for p in parts:
            if self.choices and p not in self.choices:
                raise InvalidConfig(f"Invalid value {p} for configuration {self.name}: "
                                    f"String must be one of: {', '.join(self.choices)}")
            if self.entry_form:
                _check_quorum_entry(self.name, p, self.entry_form)


def _check_quorum_entry(name: str, entry: str, form: str) -> None:
    """One controller.quorum.voters (`{id}@{host}:{port}`) or .bootstrap.servers (`{host}:{port}`) entry."""
    address = entry
    if form == "voters":
        voter, at, address = entry.partition("@")
        if not at:
            raise InvalidConfig(f"Invalid configuration value for {name}. Each entry should be in the form "
                                "`{id}@{host}:{port}`.")
        if not re.fullmatch(r"-?\d+", voter.strip()):
            raise InvalidConfig(f"Failed to parse voter ID as an integer from {voter}")
    if not re.fullmatch(r"(\[[0-9a-fA-F:.]+\]|[^:\s]+):\d+", address):
        if form == "voters":
            raise InvalidConfig(f"Failed to parse host name from entry {entry} for the configuration {name}. "
                                "Each entry should be in the form `{id}@{host}:{port}`.")
        raise InvalidConfig(f"Failed to parse host name from {entry} for the configuration {name}. Each entry "
                            'should be in the form "{host}:{port}"')


_T = ConfigType
_BITS = {ConfigType.SHORT: 16, ConfigType.INT: 32, ConfigType.LONG: 64}


def _number(value: str, config_type: ConfigType) -> int | float | None:
    """`value` parsed as Java would for the type (an int out of its bits is not one), or None."""
    try:
        if config_type == ConfigType.DOUBLE:
            return float(value)
        n = int(value.strip())
    except ValueError:
        return None
    half = 2 ** (_BITS[config_type] - 1)
    return n if -half <= n < half else None
LONG_MAX = str(2**63 - 1)
DEFAULT_LOG_DIR = "/tmp/kafka-logs"
"""Kafka's default `log.dir`: the one log directory of a broker not given `log.dirs`."""

TOPIC_CONFIGS: dict[str, ConfigSpec] = {s.name: s for s in (
    ConfigSpec("cleanup.policy", _T.LIST, "delete", "log.cleanup.policy", ("compact", "delete")),
    ConfigSpec("compression.gzip.level", _T.INT, "-1", "compression.gzip.level", minimum=1, maximum=9, also=-1),
    ConfigSpec("compression.lz4.level", _T.INT, "9", "compression.lz4.level", minimum=1, maximum=17),
    ConfigSpec("compression.type", _T.STRING, "producer", "compression.type",
               ("uncompressed", "zstd", "lz4", "snappy", "gzip", "producer")),
    ConfigSpec("compression.zstd.level", _T.INT, "3", "compression.zstd.level", minimum=-131072, maximum=22),
    ConfigSpec("delete.retention.ms", _T.LONG, "86400000", "log.cleaner.delete.retention.ms", minimum=0),
    ConfigSpec("errors.deadletterqueue.group.enable", _T.BOOLEAN, "false", None),
    ConfigSpec("file.delete.delay.ms", _T.LONG, "60000", "log.segment.delete.delay.ms", minimum=0),
    ConfigSpec("flush.messages", _T.LONG, LONG_MAX, "log.flush.interval.messages", minimum=1),
    ConfigSpec("flush.ms", _T.LONG, LONG_MAX, "log.flush.interval.ms", minimum=0),
    ConfigSpec("follower.replication.throttled.replicas", _T.LIST, "", None),
    ConfigSpec("index.interval.bytes", _T.INT, "4096", "log.index.interval.bytes", minimum=0),
    ConfigSpec("leader.replication.throttled.replicas", _T.LIST, "", None),
    ConfigSpec("local.retention.bytes", _T.LONG, "-2", "log.local.retention.bytes", minimum=-2),
    ConfigSpec("local.retention.ms", _T.LONG, "-2", "log.local.retention.ms", minimum=-2),
    ConfigSpec("max.compaction.lag.ms", _T.LONG, LONG_MAX, "log.cleaner.max.compaction.lag.ms", minimum=1),
    ConfigSpec("max.decompressed.message.bytes", _T.INT, "2147483639", "max.decompressed.message.bytes", minimum=1),
    ConfigSpec("max.message.bytes", _T.INT, "1048588", "message.max.bytes", minimum=0),
    # Kafka 4.0 lowered this default from Long.MAX_VALUE to one hour (KIP-1030)
    ConfigSpec("message.timestamp.after.max.ms", _T.LONG, "3600000", "log.message.timestamp.after.max.ms",
               minimum=0),
    ConfigSpec("message.timestamp.before.max.ms", _T.LONG, LONG_MAX, "log.message.timestamp.before.max.ms",
               minimum=0),
    ConfigSpec("message.timestamp.type", _T.STRING, "CreateTime", "log.message.timestamp.type",
               ("CreateTime", "LogAppendTime")),
    ConfigSpec("min.cleanable.dirty.ratio", _T.DOUBLE, "0.5", "log.cleaner.min.cleanable.ratio", minimum=0, maximum=1),
    ConfigSpec("min.compaction.lag.ms", _T.LONG, "0", "log.cleaner.min.compaction.lag.ms", minimum=0),
    ConfigSpec("min.insync.replicas", _T.INT, "1", "min.insync.replicas", minimum=1),
    ConfigSpec("preallocate", _T.BOOLEAN, "false", "log.preallocate"),
    ConfigSpec("remote.copy.lag.bytes", _T.LONG, "-1", "log.remote.copy.lag.bytes", minimum=-1),
    ConfigSpec("remote.copy.lag.ms", _T.LONG, "0", "log.remote.copy.lag.ms"),
    ConfigSpec("remote.log.copy.disable", _T.BOOLEAN, "false", None),
    ConfigSpec("remote.log.delete.on.disable", _T.BOOLEAN, "false", None),
    ConfigSpec("remote.storage.enable", _T.BOOLEAN, "false", None),
    ConfigSpec("retention.bytes", _T.LONG, "-1", "log.retention.bytes"),
    ConfigSpec("retention.ms", _T.LONG, "604800000", "log.retention.ms", minimum=-1),
    ConfigSpec("segment.bytes", _T.INT, "1073741824", "log.segment.bytes", minimum=1048576),  # 1 MiB: KIP-1030
    ConfigSpec("segment.index.bytes", _T.INT, "10485760", "log.index.size.max.bytes", minimum=4),
    ConfigSpec("segment.jitter.ms", _T.LONG, "0", "log.roll.jitter.ms", minimum=0),
    ConfigSpec("segment.ms", _T.LONG, "604800000", "log.roll.ms", minimum=1),
    ConfigSpec("unclean.leader.election.enable", _T.BOOLEAN, "false", "unclean.leader.election.enable"),
)}

def _spec(d: BrokerConfigDef) -> ConfigSpec:
    """A generated Kafka broker config definition as the spec fakekafka checks and describes it by."""
    v = d.validator
    spec = ConfigSpec(d.name, ConfigType[d.type], d.default, documentation=d.documentation or "",
                      dynamic=d.dynamic, update_mode=d.update_mode, internal=d.internal, security=d.security,
                      thread_count=d.thread_count)
    if v is None:
        return spec
    if v.kind == "Range":
        return replace(spec, minimum=v.min, maximum=v.max)
    if v.kind in ("ValidString", "CaseInsensitiveValidString"):
        return replace(spec, choices=v.strings or (), case_insensitive=v.kind.startswith("Case"))
    if v.kind == "ValidList":
        return replace(spec, choices=v.strings or (), list_checks=True, empty_allowed=bool(v.empty_allowed))
    if v.kind == "NonEmptyString":
        return replace(spec, empty_allowed=False)
    if v.kind.rstrip("$") in ("MetadataVersionValidator", "ApiVersionValidator"):
        return replace(spec, versions=tuple(x.strip() for x in v.text.strip("[]").split(",")),
                       version_quote="`" if v.kind.startswith("Api") else "")
    if v.kind.rstrip("$") == "ThrottledReplicaListValidator":
        return replace(spec, replica_list=True)
    if v.kind.startswith("ControllerQuorum"):
        return replace(spec, list_checks=True, entry_form="voters" if "Voters" in v.kind else "bootstrap")
    bounds = re.fullmatch(r"\[(-?\d+),\.\.\.,(-?\d+)\] or (-?\d+)", v.text)  # compression.gzip.level's
    if bounds:
        low, high, also = map(int, bounds.groups())
        return replace(spec, minimum=low, maximum=high, also=also)
    return spec  # NonNullValidator: a value read from text is never null


_KAFKA_BROKER_CONFIGS = {d.name: _spec(d) for d in BROKER_CONFIG_DEFS.values()}

BROKER_CONFIGS: dict[str, ConfigSpec] = {n: s for n, s in _KAFKA_BROKER_CONFIGS.items() if not s.internal}
"""Every broker config Kafka 4.4 lists (its non-internal ConfigDef keys), generated from Kafka's jars into
model/kafka_broker_configs.py (tools/gen_broker_configs.py): names, types, defaults, validators, documentation
and which can change at run time. Those fakekafka honours are read by the model (BrokerConfig's fields and
`value()`); the others are accepted, checked, kept and described as Kafka does."""

MODELLED_BROKER_CONFIGS = (
    "auto.create.topics.enable", "broker.id", "node.id", "num.partitions", "default.replication.factor",
    "message.max.bytes", "socket.request.max.bytes", "queued.max.request.bytes", "connections.max.idle.ms",
    "max.connections", "max.connections.per.ip", "max.connections.per.ip.overrides", "fetch.max.bytes",
    "share.coordinator.state.topic.num.partitions", "share.coordinator.state.topic.replication.factor",
    "share.coordinator.state.topic.min.isr", "share.coordinator.snapshot.update.records.per.snapshot",
    "group.share.session.timeout.ms", "group.share.heartbeat.interval.ms", "group.share.record.lock.duration.ms",
    "group.share.delivery.count.limit", "group.share.partition.max.record.locks", "group.share.max.size",
    "group.share.assignment.interval.ms", "max.request.partition.size.limit", "offsets.topic.num.partitions",
    "offsets.topic.replication.factor", "offsets.retention.minutes", "transaction.state.log.num.partitions",
    "transaction.state.log.replication.factor", "transaction.max.timeout.ms", "transactional.id.expiration.ms",
    "transaction.partition.verification.enable", "group.initial.rebalance.delay.ms", "group.min.session.timeout.ms",
    "group.max.session.timeout.ms", "group.consumer.session.timeout.ms", "group.consumer.min.session.timeout.ms",
    "group.consumer.max.session.timeout.ms", "group.consumer.heartbeat.interval.ms",
    "group.consumer.min.heartbeat.interval.ms", "group.consumer.max.heartbeat.interval.ms", "group.consumer.max.size",
    "group.consumer.assignors", "group.consumer.migration.policy", "group.consumer.assignment.interval.ms",
    "group.consumer.min.assignment.interval.ms", "group.consumer.max.assignment.interval.ms", "min.insync.replicas",
    "compression.type", "log.cleanup.policy", "log.flush.interval.ms", "log.retention.ms", "log.roll.ms",
    "log.roll.jitter.ms", "log.retention.minutes", "log.retention.hours", "log.roll.hours", "log.retention.bytes",
    "log.segment.bytes", "log.message.timestamp.type", "log.message.timestamp.after.max.ms",
    "unclean.leader.election.enable", "delete.topic.enable", "replica.lag.time.max.ms",
    "log.retention.check.interval.ms", "log.cleaner.enable", "log.cleaner.backoff.ms", "log.dir", "log.dirs",
    "authorizer.class.name", "ssl.principal.mapping.rules", "connections.max.reauth.ms",
)
"""The broker configs whose effect clients or tests can observe on fakekafka (beside the topic configs' broker
synonyms and the listener/security settings BrokerConfig reads): the ones the API sweep compares with Kafka's
answer value by value."""

CLIENT_METRICS_CONFIGS: dict[str, ConfigSpec] = {s.name: s for s in (
    ConfigSpec("interval.ms", _T.INT, "300000", documentation="Metrics push interval in milliseconds"),
    ConfigSpec("match", _T.LIST, "", documentation="Client match criteria"),
    ConfigSpec("metrics", _T.LIST, "", documentation="Telemetry metric name prefix list"),
)}
"""Kafka 4.4's client metrics subscription configs (KIP-714, CLIENT_METRICS resources)."""

CLIENT_MATCH_SELECTORS = ("client_instance_id", "client_id", "client_software_name", "client_software_version",
                          "client_source_address", "client_source_port")
"""What a subscription's `match` may select clients by (KIP-714)."""


def valid_client_match(entry: str) -> bool:
    """One `match` entry as Kafka's ClientMetricsConfigs parses it: `<selector>=<regular expression>` (split
    on "=" as Java's String.split, trailing empty parts dropped), a known selector and a pattern that
    compiles (Python's `re` standing in for java.util.regex)."""
    parts = entry.split("=")
    while parts and parts[-1] == "":
        parts.pop()
    if len(parts) != 2 or parts[0].strip() not in CLIENT_MATCH_SELECTORS:
        return False
    try:
        re.compile(parts[1].strip())
    except (re.error, OverflowError, RecursionError):  # a repeat count past Python's, nesting past its stack
        return False
    return True


AUTHORIZER_CONFIGS: dict[str, ConfigSpec] = {s.name: s for s in (
    ConfigSpec("super.users", _T.STRING, ""),
    ConfigSpec("allow.everyone.if.no.acl.found", _T.BOOLEAN, "false"),
)}
"""The StandardAuthorizer's own settings: Kafka passes them to the authorizer but does not list them among the
broker's configs (DescribeConfigs leaves them out), so neither does fakekafka."""

OAUTHBEARER_UNSECURED_VALIDATOR = \
    "org.apache.kafka.common.security.oauthbearer.internals.unsecured.OAuthBearerUnsecuredValidatorCallbackHandler"
"""Kafka's validator of unsecured (unsigned, `alg: none`) OAUTHBEARER tokens: any client names any principal.
fakekafka takes such tokens on a listener only when its operator names this class there (SERVER_CALLBACK_HANDLER)."""
OAUTHBEARER_JWKS_VALIDATOR = "org.apache.kafka.common.security.oauthbearer.OAuthBearerValidatorCallbackHandler"
"""Kafka's validator of signed tokens (a JWKS from sasl.oauthbearer.jwks.endpoint.url): not in fakekafka."""
SERVER_CALLBACK_HANDLER = re.compile(r"listener\.name\.(?P<listener>[^.]+)\.(?P<mechanism>[A-Za-z0-9-]+)"
                                     r"\.sasl\.server\.callback\.handler\.class")
"""Kafka's name for the SASL server callback handler of one listener's mechanism (Kafka reads it only with both
prefixes: `listener.name.sasl_ssl.oauthbearer.sasl.server.callback.handler.class`)."""


def _check_server_callback_handler(name: str, value: str) -> None:
    """A listener's SASL server callback handler class, in Kafka's words where it has some: the only one fakekafka
    runs is Kafka's unsecured OAUTHBEARER validator, named for OAUTHBEARER."""
    m = SERVER_CALLBACK_HANDLER.fullmatch(name)
    cls = value.strip()
    if m is None:  # sasl.server.callback.handler.class without its prefixes: Kafka never reads it
        if cls:
            raise InvalidConfig(f"Invalid value {value} for configuration {name}: Kafka reads a server callback "
                                "handler only with its listener and mechanism prefixes, e.g. listener.name."
                                "sasl_plaintext.oauthbearer.sasl.server.callback.handler.class")
        return
    if m.group("listener") != m.group("listener").lower():  # Kafka looks for the lower-case prefix only
        raise InvalidConfig(f"Invalid configuration name {name}: Kafka reads a listener's configs under "
                            f"listener.name.{m.group('listener').lower()}. (its name in lower case)")
    if not cls:
        return
    if m.group("mechanism") == "oauthbearer" and cls == OAUTHBEARER_UNSECURED_VALIDATOR:
        return
    if cls == OAUTHBEARER_JWKS_VALIDATOR:
        raise InvalidConfig(f"Invalid value {value} for configuration {name}: fakekafka validates no signed "
                            f"OAUTHBEARER tokens (sasl.oauthbearer.jwks.endpoint.url); only unsecured ones, with "
                            f"{OAUTHBEARER_UNSECURED_VALIDATOR}")
    raise InvalidConfig(f"Invalid value {value} for configuration {name}: Class {cls} could not be found. (fakekafka "
                        f"runs no Java class; it has {OAUTHBEARER_UNSECURED_VALIDATOR} for OAUTHBEARER)")


LISTENER_CONFIG = re.compile(r"listener\.name\.(?P<listener>[^.]*)\.(?P<config>.+)")
"""A listener-prefixed broker config, as Kafka reads them (DynamicBrokerConfig's ListenerConfigRegex):
`listener.name.<listener in lower case>.<config>`, or for a SASL mechanism's own settings (LISTENER_MECHANISM_CONFIGS)
`listener.name.<listener>.<mechanism in lower case>.<config>`."""

LISTENER_MECHANISM_CONFIGS = ("sasl.jaas.config", "sasl.login.callback.handler.class", "sasl.login.class",
                              "sasl.server.callback.handler.class", "connections.max.reauth.ms")
"""The configs Kafka reads per listener *and* SASL mechanism (DynamicBrokerConfig.ListenerMechanismConfigs)."""

LISTENER_APPLIED = ("sasl.enabled.mechanisms", "ssl.client.auth", "ssl.keystore.location", "ssl.truststore.location",
                    "ssl.key.password", "ssl.principal.mapping.rules")
"""The listener-prefixed configs fakekafka applies to their listener (BrokerConfig.listener_value), beside the
mechanism-prefixed JAAS lines and server callback handlers."""

PLAIN_LOGIN_MODULE = "org.apache.kafka.common.security.plain.PlainLoginModule"
"""The login module whose `user_<name>="<password>"` options are a listener's PLAIN users (Kafka's
PlainServerCallbackHandler reads them from this module's entry only)."""
LOGIN_MODULES = {
    PLAIN_LOGIN_MODULE: "PLAIN",
    "org.apache.kafka.common.security.scram.ScramLoginModule": "SCRAM-SHA-256/512",
    "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule": "OAUTHBEARER",
}
"""Kafka's login modules for the mechanisms fakekafka offers (Kafka does not tie a module to a mechanism)."""
_JAAS_MECHANISMS = ("plain", "scram-sha-256", "scram-sha-512", "oauthbearer")


def _check_jaas_config(name: str, mechanism: str, value: str) -> None:
    """A listener's and mechanism's sasl.jaas.config, parsed as Kafka's JaasContext.loadServerContext does
    (one login module); refused in Kafka's words when malformed, in fakekafka's when it names what fakekafka
    does not have. The value (a password) is not repeated."""
    if mechanism == "gssapi":
        raise InvalidConfig(f"Invalid value [hidden] for configuration {name}: fakekafka does not offer GSSAPI "
                            f"(Kerberos); its mechanisms are PLAIN, SCRAM-SHA-256, SCRAM-SHA-512 and OAUTHBEARER")
    if mechanism not in _JAAS_MECHANISMS:
        raise InvalidConfig(f"Invalid configuration name {name}: {mechanism} is not a SASL mechanism fakekafka "
                            f"offers ({', '.join(_JAAS_MECHANISMS)}; Kafka reads the mechanism in lower case)")
    try:
        entry = server_jaas_entry(value)
    except JaasError as e:
        raise InvalidConfig(f"Invalid value [hidden] for configuration {name}: {e}") from None
    if entry.login_module not in LOGIN_MODULES:
        raise InvalidConfig(f"Invalid value [hidden] for configuration {name}: No LoginModule found for "
                            f"{entry.login_module} (fakekafka runs no Java class; it has "
                            f"{', '.join(LOGIN_MODULES)})")


def _check_listener_config(name: str, value: str, catalog: ConfigCatalog) -> None:
    """A listener-prefixed broker config: the mechanism-prefixed ones fakekafka reads, the listener settings it
    applies per listener (LISTENER_APPLIED) and the ones it does not model anyway (accepted as their unprefixed
    names are); InvalidConfig for an unknown name, an upper-case listener name (Kafka never reads it), or a
    setting fakekafka applies only to every listener at once."""
    m = LISTENER_CONFIG.fullmatch(name)
    assert m is not None
    listener, config = m.group("listener"), m.group("config")
    if listener != listener.lower():
        raise InvalidConfig(f"Invalid configuration name {name}: Kafka reads a listener's configs under "
                            f"listener.name.{listener.lower()}. (its name in lower case)")
    mechanism, _, base = config.partition(".")
    if base in LISTENER_MECHANISM_CONFIGS:
        if base == "sasl.server.callback.handler.class":
            _check_server_callback_handler(name, value)
        elif base == "sasl.jaas.config":
            _check_jaas_config(name, mechanism, value)
        elif base == "connections.max.reauth.ms":
            raise InvalidConfig(f"Invalid configuration name {name}: fakekafka applies connections.max.reauth.ms to "
                                "every listener and mechanism; set it without prefixes")
        elif value.strip():
            raise InvalidConfig(f"Invalid value {value} for configuration {name}: Class {value.strip()} could not "
                                "be found. (fakekafka runs no Java class)")
        return
    if config in LISTENER_MECHANISM_CONFIGS:  # Kafka reads these per listener only with a mechanism too
        raise InvalidConfig(f"Invalid configuration name {name}: Kafka reads {config} of a listener only with a "
                            f"SASL mechanism prefix too, e.g. listener.name.{listener}.plain.{config}")
    spec = known_broker_config(config, catalog)
    if spec is None:
        raise InvalidConfig(f"The configuration '{name}' was supplied but isn't a known config.")
    if config not in LISTENER_APPLIED and (config in _FROM_OVERRIDES or config in MODELLED_BROKER_CONFIGS):
        raise InvalidConfig(f"Invalid configuration name {name}: fakekafka applies {config} to every listener; "
                            "set it without the listener prefix")
    spec.validate(value)


INTERNAL_BROKER_CONFIGS: dict[str, ConfigSpec] = {n: s for n, s in _KAFKA_BROKER_CONFIGS.items() if s.internal}
"""Broker configs Kafka defines as internal (ConfigDef.defineInternal, "for testing only"): accepted at start-up
like any other, and listed by DescribeConfigs only when set (Kafka's ConfigHelper lists the originals a broker was
started with beside its non-internal values: STATIC_BROKER_CONFIG, read-only, the default as a synonym).
`log.initial.task.delay.ms`: how long after start LogManager's first retention check comes (then one every
log.retention.check.interval.ms); the compat brokers set it to 0 so retention is seen within a second."""


def _fallbacks(defs: dict[str, BrokerConfigDef]) -> dict[str, tuple[str, ...]]:
    """Broker configs whose value, when unset, comes from a coarser one (Kafka's synonyms after the name itself:
    log.retention.ms's minutes and hours, log.roll.ms's hours, log.flush.interval.ms's scheduler interval...)."""
    return {d.name: d.synonyms[1:] for d in defs.values() if d.synonyms[1:] and d.synonyms[0] == d.name}


@dataclass(frozen=True)
class ConfigCatalog:
    """The configs one Kafka release defines, as its brokers describe, validate and default them: Kafka 4.4's
    (the module's tables), or an older release's (`--kafka-version`), generated from that release's own jars into
    model/kafka_configs_<release>.py by tools/gen_release_configs.py."""

    version: str
    """The patch release the tables come from ("4.4.0", "3.9.1", ...)."""
    broker: dict[str, ConfigSpec]
    """Its broker configs, less the internal ones (what DescribeConfigs lists)."""
    internal: dict[str, ConfigSpec]
    """Its internal broker configs: accepted, described only when set."""
    topic: dict[str, ConfigSpec]
    """Its topic configs, each with its broker synonym."""
    fallbacks: dict[str, tuple[str, ...]] = field(repr=False)

    def broker_spec(self, name: str) -> ConfigSpec | None:
        """A broker config of this release by Kafka's name (internal ones included), or None."""
        return self.broker.get(name) or self.internal.get(name)

    def broker_default(self, name: str) -> str | None:
        spec = self.broker_spec(name)
        return spec.default if spec is not None else None


def _topic_spec(d: NamedTuple) -> ConfigSpec:
    """A generated topic config definition (an older release's LogConfig key) as the spec fakekafka checks by."""
    spec = _spec(BrokerConfigDef(d.name, d.type, d.default, False, None, d.internal, False, "read-only", (),
                                 False, False, d.validator, d.documentation))
    return replace(spec, broker_synonym=d.broker_synonym)


CURRENT_CATALOG = ConfigCatalog(KAFKA_VERSION, BROKER_CONFIGS, INTERNAL_BROKER_CONFIGS, TOPIC_CONFIGS,
                                _fallbacks(BROKER_CONFIG_DEFS))
"""Kafka 4.4's configs: the ones fakekafka follows when no older release is named."""


@functools.cache
def config_catalog(release: str | None) -> ConfigCatalog:
    """The configs of a release by its major.minor ("3.9"; None: Kafka 4.4), its generated tables loaded on first
    use (each is some 150 kB of Python that a cluster of Kafka 4.4 never needs)."""
    known = kafka_release(release)
    if known is None:
        return CURRENT_CATALOG
    module = importlib.import_module(f"fakekafka.model.kafka_configs_{known.name.replace('.', '_')}")
    specs = {d.name: _spec(d) for d in module.BROKER_CONFIG_DEFS.values()}
    topics = {d.name: _topic_spec(d) for d in module.TOPIC_CONFIG_DEFS.values() if not d.internal}
    return ConfigCatalog(module.KAFKA_VERSION, {n: s for n, s in specs.items() if not s.internal},
                         {n: s for n, s in specs.items() if s.internal}, topics,
                         _fallbacks(module.BROKER_CONFIG_DEFS))


_ABSENT_MEANS = {"transaction.partition.verification.enable": "false",
                 "group.coordinator.rebalance.protocols": "classic"}
"""What a release without one of these broker configs does, as its value: before 3.6 (KIP-890 part 1) a broker
took transactional records for a partition without checking it had been added to the transaction; before 3.7 it had
classic groups only."""

OLDER_TIMESTAMP_LIMIT = "message.timestamp.difference.max.ms"
"""Before Kafka 3.6 (KIP-937) the one limit on how far a record's timestamp may be from the broker's clock, both
ways; 3.6 to 3.9 still use it where message.timestamp.before/after.max.ms are left at Long.MAX_VALUE (LogConfig's
getMessageTimestampBeforeMaxMs); Kafka 4.0 removed it."""

_DERIVED = {"retention.ms": (("log.retention.minutes", 60_000), ("log.retention.hours", 3_600_000)),
            "segment.ms": (("log.roll.hours", 3_600_000),),
            "segment.jitter.ms": (("log.roll.jitter.hours", 3_600_000),)}
"""Topic configs whose broker synonym in ms is unset: Kafka derives the default from the coarser setting
(log.retention.hours=1 makes retention.ms 3600000), still reported as DEFAULT_CONFIG with no synonyms."""

_FROM_OVERRIDES = {
    "socket.request.max.bytes": "socket_request_max_bytes", "queued.max.request.bytes": "queued_max_request_bytes",
    "connections.max.idle.ms": "connections_max_idle_ms", "max.connections": "max_connections",
    "max.connections.per.ip": "max_connections_per_ip", "fetch.max.bytes": "fetch_max_bytes",
    "max.connections.per.ip.overrides": "max_connections_per_ip_overrides",
    "num.partitions": "num_partitions", "auto.create.topics.enable": "auto_create_topics",
    "default.replication.factor": "default_replication_factor", "message.max.bytes": "message_max_bytes",
    "offsets.topic.num.partitions": "offsets_topic_num_partitions",
    "transaction.state.log.num.partitions": "transaction_state_log_num_partitions",
    "transaction.max.timeout.ms": "transaction_max_timeout_ms",
    "transactional.id.expiration.ms": "transactional_id_expiration_ms",
    "group.initial.rebalance.delay.ms": "group_initial_rebalance_delay_ms",
    "group.min.session.timeout.ms": "group_min_session_timeout_ms",
    "group.max.session.timeout.ms": "group_max_session_timeout_ms",
    "group.consumer.assignment.interval.ms": "group_consumer_assignment_interval_ms",
    "group.consumer.heartbeat.interval.ms": "group_consumer_heartbeat_interval_ms",
    "group.consumer.min.heartbeat.interval.ms": "group_consumer_min_heartbeat_interval_ms",
    "offsets.retention.minutes": "offsets_retention_minutes", "replica.lag.time.max.ms": "replica_lag_time_max_ms",
    "listeners": "listeners", "advertised.listeners": "advertised_listeners",
    "listener.security.protocol.map": "listener_security_protocol_map",
    "sasl.enabled.mechanisms": "sasl_enabled_mechanisms", "ssl.client.auth": "ssl_client_auth",
    "ssl.keystore.location": "ssl_keystore_location", "ssl.truststore.location": "ssl_truststore_location",
    "ssl.key.password": "ssl_key_password",
    "connection.failed.authentication.delay.ms": "connection_failed_authentication_delay_ms",
    "connections.max.reauth.ms": "connections_max_reauth_ms",
}
"""Broker configs the model reads from fields, which a setting by Kafka's name (`overrides`: the CLI's
--config, a marker's or `Cluster(config={...})`) also sets."""


JMX_REPORTER = "org.apache.kafka.common.metrics.JmxReporter"
"""`metric.reporters`' default."""
TELEMETRY_RECEIVER = "fakekafka.ClientTelemetryReceiver"
"""The `metric.reporters` entry that turns client telemetry on (Kafka's is any reporter class implementing
ClientTelemetry or ClientTelemetryExporterProvider; fakekafka runs no Java class, its receiver has this name)."""


def _names_receiver(reporters: str | None) -> bool:
    """Whether a `metric.reporters` value lists fakekafka's telemetry receiver."""
    return TELEMETRY_RECEIVER in (r.strip() for r in (reporters or "").split(","))


def known_broker_config(name: str, catalog: ConfigCatalog | None = None) -> ConfigSpec | None:
    """The spec of a broker config by Kafka's name (every topic config's broker synonym is one) in the release
    `catalog` describes (None: Kafka 4.4), or of one of the StandardAuthorizer's settings, or None."""
    return (catalog or CURRENT_CATALOG).broker_spec(name) or AUTHORIZER_CONFIGS.get(name)


@dataclass
class BrokerConfig:
    """Settings of the whole fake cluster (the ones a test or the CLI can change)."""

    num_partitions: int = 1
    auto_create_topics: bool = True
    default_replication_factor: int = 1
    message_max_bytes: int = 1048588
    socket_request_max_bytes: int = 104857600
    """A request's size prefix above this closes its connection, as Kafka's InvalidReceiveException does."""
    queued_max_request_bytes: int = -1
    """Bytes of requests being read or waiting to be answered, per broker, announced sizes counted (Kafka's
    memory pool): when spent, connections stop being read until requests finish. -1: no limit."""
    connections_max_idle_ms: int = 600000
    """A connection that neither sent nor received for this long (on the cluster's clock) is closed."""
    max_connections: int = 2147483647
    """Connections per broker; past it a new one is not read until another closes, as Kafka's acceptor waits."""
    max_connections_per_ip: int = 2147483647
    """Connections per broker from one address; past it a new one is closed at once, as Kafka does."""
    fetch_max_bytes: int = 57671680
    """The most a Fetch response carries whatever the request's max_bytes (still at least one batch)."""
    max_connections_per_ip_overrides: str = ""
    """Per-address exceptions to max.connections.per.ip, Kafka's "host:count,host:count" (a host name or an
    address)."""
    listeners: str = ""
    """Kafka's `listeners` (NAME://host:port,...; port 0 picks a free one per broker, a non-zero port is the
    first broker's and the next brokers take the following numbers). Empty: one PLAINTEXT listener on the
    cluster's host and port."""
    advertised_listeners: str = ""
    """What Metadata tells clients connected on each listener (port 0: the bound port); empty: `listeners`."""
    listener_security_protocol_map: str = ""
    """Listener name -> PLAINTEXT/SSL/SASL_PLAINTEXT/SASL_SSL; empty: Kafka's default (each name maps to itself)."""
    sasl_enabled_mechanisms: str = "PLAIN,SCRAM-SHA-256,SCRAM-SHA-512"
    """Kafka's default is GSSAPI, which fakekafka does not offer: its mechanisms that check a password are on by
    default. OAUTHBEARER only when listed, and then on a listener only when its operator names a validator there
    (`oauthbearer_validator`), since Kafka's default one takes unsigned tokens for any principal."""
    ssl_client_auth: str = "none"
    ssl_keystore_location: str = ""
    """PEM file with the broker's key and certificate chain (Kafka's ssl.keystore.type=PEM)."""
    ssl_truststore_location: str = ""
    """PEM file of the CAs client certificates must chain to (ssl.client.auth=required/requested)."""
    ssl_key_password: str = ""
    connections_max_reauth_ms: int = 0
    """KIP-368: the longest a SASL session lasts before the client must re-authenticate (0: no limit; an
    OAUTHBEARER token's expiry limits it anyway)."""
    connection_failed_authentication_delay_ms: int = 100
    """How long a connection that failed authentication stays open (unread) after its answer, as Kafka's."""
    max_partitions: int = 2147483647
    """Partitions the cluster may hold (KIP-578's name; Kafka has no such limit yet): CreateTopics and
    CreatePartitions past it are refused with POLICY_VIOLATION. fakekafka's own."""
    offsets_topic_num_partitions: int = 50
    transaction_state_log_num_partitions: int = 50
    transaction_max_timeout_ms: int = 900000
    transactional_id_expiration_ms: int = 604800000
    transaction_version: int = 2
    """The `transaction.version` feature level the cluster finalizes (Kafka 4.x formats new clusters at 2, and
    `kafka-storage format --feature transaction.version=1` makes one at 1): at 2 clients run KIP-890 part 2
    transactions (an epoch bump per transaction, partitions added by Produce v12), at 1 or 0 version 1."""
    kafka_version: str | None = None
    """The older Kafka release the cluster stands in for ("3.9", "2.8", ...; None: Kafka 4.4, which fakekafka
    follows): ApiVersions capped to that release's ranges, its features (no KIP-848 consumer groups or share
    groups, `transaction.version` not finalized before 4.0) (fakekafka/model/releases.py)."""
    cluster_id: str = "fakekafka-cluster-0001"
    client_telemetry: bool = False
    """KIP-714 client telemetry: the brokers advertise and serve GetTelemetrySubscriptions and PushTelemetry,
    and keep what clients push (`Cluster.client_metrics()`). Kafka does so only when `metric.reporters` names a
    reporter that receives client telemetry; here that is `fakekafka.ClientTelemetryReceiver` (this field turns it
    on by adding it there). Off by default, as on Kafka."""
    group_initial_rebalance_delay_ms: int = 0
    """Kafka's default is 3000; a test double answers at once unless asked to wait."""
    group_min_session_timeout_ms: int = 6000
    group_max_session_timeout_ms: int = 1800000
    group_consumer_assignment_interval_ms: int = 0
    """Kafka 4.4's default is 1000 (a consumer group's target assignment at most once a second, in the first
    heartbeat after that); a test double assigns in every heartbeat that needs it unless asked to wait."""
    group_consumer_heartbeat_interval_ms: int = 500
    group_consumer_min_heartbeat_interval_ms: int = 500
    """Kafka's defaults are 5000 for both: a KIP-848 member learns of a new assignment (and of partitions to give
    up) only at its next heartbeat, so each rebalance step takes a heartbeat interval or two; a test double
    converges in a tenth of that time unless asked to wait."""
    offsets_retention_minutes: int = 10080
    replica_lag_time_max_ms: int = 30000
    replication_lag_ms: int = 0
    """How long after the leader appends a batch its followers have it (0: at once). fakekafka's own."""
    overrides: dict[str, str] = field(default_factory=dict)
    """Broker configs set explicitly (reported with source STATIC_BROKER_CONFIG)."""
    dynamic_defaults: dict[str, str] = field(default_factory=dict)
    """Cluster-wide dynamic configs (DYNAMIC_DEFAULT_BROKER_CONFIG, above the static ones). A new Kafka 4.1+
    cluster has eligible leader replicas on, and with them a cluster-level min.insync.replicas holding the
    static value (KAFKA-16540), so it is always here."""
    dynamic_brokers: dict[int, dict[str, str]] = field(default_factory=dict)
    """Per-broker dynamic configs (DYNAMIC_BROKER_CONFIG, above every other layer), by node id."""
    telemetry_brokers: set[int] = field(default_factory=set, init=False, repr=False, compare=False)
    """The brokers that took fakekafka's telemetry receiver from a `metric.reporters` set at run time (their own or
    the cluster-wide one): they keep it, as Kafka's broker keeps a receiver it added."""
    catalog: ConfigCatalog = field(init=False, repr=False, compare=False)
    """The configs of the release the cluster stands in for (names, defaults, checks, synonyms), set from
    `kafka_version` at construction: read on every config lookup, so kept rather than looked up."""

    @property
    def release(self) -> KafkaRelease | None:
        """The older release `kafka_version` names (None: Kafka 4.4)."""
        return kafka_release(self.kafka_version)

    def __post_init__(self) -> None:
        try:
            release = kafka_release(self.kafka_version)
        except UnknownKafkaVersion as e:
            raise InvalidConfig(f"kafka version: {e}") from None
        self.catalog = config_catalog(None if release is None else release.name)
        if release is not None:
            self.kafka_version = release.name
            self.transaction_version = 0  # not finalized before 4.0 (TV_1 needs metadata.version 4.0-IV2)
        explicit = {
            "num.partitions": (self.num_partitions, 1),
            "auto.create.topics.enable": (self.auto_create_topics, True),
            "default.replication.factor": (self.default_replication_factor, 1),
            "message.max.bytes": (self.message_max_bytes, 1048588),
            "socket.request.max.bytes": (self.socket_request_max_bytes, 104857600),
            "queued.max.request.bytes": (self.queued_max_request_bytes, -1),
            "connections.max.idle.ms": (self.connections_max_idle_ms, 600000),
            "max.connections": (self.max_connections, 2147483647),
            "max.connections.per.ip": (self.max_connections_per_ip, 2147483647),
            "fetch.max.bytes": (self.fetch_max_bytes, 57671680),
            "max.connections.per.ip.overrides": (self.max_connections_per_ip_overrides, ""),
            "offsets.topic.num.partitions": (self.offsets_topic_num_partitions, 50),
            "transaction.state.log.num.partitions": (self.transaction_state_log_num_partitions, 50),
            "transaction.max.timeout.ms": (self.transaction_max_timeout_ms, 900000),
            "transactional.id.expiration.ms": (self.transactional_id_expiration_ms, 604800000),
            "group.initial.rebalance.delay.ms": (self.group_initial_rebalance_delay_ms, 3000),
            "group.min.session.timeout.ms": (self.group_min_session_timeout_ms, 6000),
            "group.max.session.timeout.ms": (self.group_max_session_timeout_ms, 1800000),
            "group.consumer.assignment.interval.ms": (self.group_consumer_assignment_interval_ms, 1000),
            "group.consumer.heartbeat.interval.ms": (self.group_consumer_heartbeat_interval_ms, 5000),
            "group.consumer.min.heartbeat.interval.ms": (self.group_consumer_min_heartbeat_interval_ms, 5000),
            "offsets.retention.minutes": (self.offsets_retention_minutes, 10080),
            "replica.lag.time.max.ms": (self.replica_lag_time_max_ms, 30000),
        }
        for name, attr in _FROM_OVERRIDES.items():  # set by Kafka's name: that wins over the field
            if name in self.overrides:
                value, kind = self.overrides[name], type(_FIELD_DEFAULTS[attr])
                setattr(self, attr, value.strip().lower() == "true" if kind is bool else kind(value.strip()))
        for name, (value, default) in explicit.items():  # (only the release's own: an older one lacks some)
            if value != default and name not in self.overrides and self.catalog.broker_spec(name) is not None:
                self.overrides[name] = str(value).lower() if isinstance(value, bool) else str(value)
        reporters = [r.strip() for r in self.overrides.get("metric.reporters", "").split(",") if r.strip()]
        if TELEMETRY_RECEIVER in reporters:
            self.client_telemetry = True
        if self.client_telemetry:
            try:
                require_otlp()
            except OtlpMissing as e:
                raise InvalidConfig(str(e)) from None
        if self.client_telemetry and TELEMETRY_RECEIVER not in reporters:  # described as on a Kafka started so
            self.overrides["metric.reporters"] = ",".join([*(reporters or [JMX_REPORTER]), TELEMETRY_RECEIVER])
        self.ip_overrides()  # a malformed value is refused here, not at the first connection
        self._check_cleaner_buffer()
        if release is None:  # ELR's cluster-level min.insync.replicas came with Kafka 4.1 (KAFKA-16540)
            self.dynamic_defaults.setdefault("min.insync.replicas", self.overrides.get("min.insync.replicas", "1"))

    def _check_cleaner_buffer(self) -> None:
        """A broker Kafka would not start for its cleaner's dedupe buffer is refused, in Kafka's words."""
        def static(name: str) -> str:
            value = self.overrides[name] if name in self.overrides else self.catalog.broker_default(name)
            return (value or "").strip()
        try:
            size, threads = int(static("log.cleaner.dedupe.buffer.size")), int(static("log.cleaner.threads"))
            load_factor = float(static("log.cleaner.io.buffer.load.factor"))
        except ValueError:  # refused by its type where set by name (from_properties)
            return
        problem = dedupe_buffer_problem(size, threads)
        if problem is None and static("log.cleaner.enable").lower() != "false":
            problem = offset_map_problem(size, threads, load_factor)
        if problem is not None:
            raise InvalidConfig(problem)

    @classmethod
    def from_properties(cls, properties: dict[str, str], **fields: object) -> BrokerConfig:
        """A config from broker settings by Kafka's names (a server.properties' or `serve --config`'s),
        each checked: InvalidConfig in Kafka's words for a name it does not know or a value it refuses.
        Kafka only warns of an unknown name and ignores it; here it is refused, since ignoring it silently
        would leave a test running on a setting it did not get. The names and checks are those of the release
        `kafka_version` names (a ZooKeeper-era setting is known to 2.8, not to 4.4)."""
        try:
            catalog = config_catalog(fields.get("kafka_version"))  # type: ignore[arg-type]
        except UnknownKafkaVersion as e:
            raise InvalidConfig(f"kafka version: {e}") from None
        for name, value in properties.items():
            if LISTENER_CONFIG.fullmatch(name):
                _check_listener_config(name, value, catalog)
                continue
            if name == "sasl.server.callback.handler.class":
                _check_server_callback_handler(name, value)
                continue
            if name == "sasl.jaas.config" and value.strip():  # Kafka ignores it, with a warning
                raise InvalidConfig(f"Invalid value [hidden] for configuration {name}: Kafka reads a broker's JAAS "
                                    "config only with its listener and mechanism prefixes, e.g. listener.name."
                                    "sasl_plaintext.plain.sasl.jaas.config")
            spec = known_broker_config(name, catalog)
            if spec is None:
                raise InvalidConfig(f"The configuration '{name}' was supplied but isn't a known config.")
            spec.validate(value)
            if name == "authorizer.class.name" and value.strip() not in ("", STANDARD_AUTHORIZER):
                raise InvalidConfig(f"Invalid value {value} for configuration {name}: Class {value.strip()} cannot "
                                    f"be found (fakekafka's authorizer is Kafka's {STANDARD_AUTHORIZER})")
        extra = fields.pop("overrides", None) or {}
        return cls(**fields, overrides={**extra, **properties})  # type: ignore[arg-type]

    def client_telemetry_on(self, node_id: int | None = None) -> bool:
        """Client telemetry is on at broker `node_id`: switched on at start, or since the `metric.reporters` that
        broker reads (its own dynamic one, else the cluster-wide one; Kafka reconfigures each broker's reporters
        from its own) named fakekafka's receiver. Once on it stays on, as Kafka's broker keeps a receiver it added
        when its reporter is removed again. `node_id` None: on at any broker."""
        if self.client_telemetry:
            return True
        if node_id is None:
            return bool(self.telemetry_brokers) or _names_receiver(self.value("metric.reporters")[0])
        if node_id not in self.telemetry_brokers and _names_receiver(self.value("metric.reporters", node_id)[0]):
            self.telemetry_brokers.add(node_id)
        return node_id in self.telemetry_brokers

    def sasl_server_callback_handler(self, listener: str, mechanism: str) -> str | None:
        """`listener.name.<listener>.<mechanism>.sasl.server.callback.handler.class`, as set (None: not set)."""
        value = self.overrides.get(f"listener.name.{listener.lower()}.{mechanism.lower()}.sasl.server.callback."
                                   "handler.class", "").strip()
        return value or None

    def oauthbearer_validator(self, listener: str) -> str | None:
        """The class validating OAUTHBEARER tokens on `listener`, None when its operator named none: then
        OAUTHBEARER is not enabled there (Kafka would validate with OAUTHBEARER_UNSECURED_VALIDATOR, which takes
        any unsigned token; fakekafka runs it only when named)."""
        return self.sasl_server_callback_handler(listener, "OAUTHBEARER")

    def listener_value(self, listener: str, name: str) -> str | None:
        """`listener.name.<listener>.<name>` as set (Kafka reads the listener's name in lower case), else None."""
        return self.overrides.get(f"listener.name.{listener.lower()}.{name}")

    def sasl_mechanisms(self, listener: str) -> list[str]:
        """The mechanisms a SASL listener offers: its listener.name.<l>.sasl.enabled.mechanisms, else
        sasl.enabled.mechanisms (upper-cased, each once, in the config's order), less OAUTHBEARER where no
        validator is named for the listener."""
        listed = self.listener_value(listener, "sasl.enabled.mechanisms")
        listed = self.sasl_enabled_mechanisms if listed is None else listed
        names = dict.fromkeys(m.strip().upper() for m in listed.split(",") if m.strip())
        return [m for m in names if m != "OAUTHBEARER" or self.oauthbearer_validator(listener) is not None]

    def jaas_entry(self, listener: str, mechanism: str) -> JaasEntry | None:
        """The login module of `listener.name.<listener>.<mechanism>.sasl.jaas.config`, None when not set."""
        value = self.listener_value(listener, f"{mechanism.lower()}.sasl.jaas.config")
        return server_jaas_entry(value) if value is not None else None

    def plain_users(self, listener: str) -> dict[str, str] | None:
        """A listener's PLAIN users from its JAAS line, as Kafka's PlainServerCallbackHandler reads them: the
        `user_<name>` options of its PlainLoginModule. None when the listener has no PLAIN JAAS line (then the
        cluster's users, `Cluster(users=...)` / `serve --user`, log in with PLAIN there)."""
        entry = self.jaas_entry(listener, "PLAIN")
        if entry is None:
            return None
        if entry.login_module != PLAIN_LOGIN_MODULE:
            return {}
        return {k[len("user_"):]: v for k, v in entry.options.items() if k.startswith("user_")}

    def listener_ssl(self, listener: str, protocol: str) -> tuple[str, str, str, str]:
        """(keystore, truststore, client auth, key password) of a TLS listener: each its listener-prefixed setting
        if set, else the broker's. ssl.client.auth without the prefix applies to SSL listeners only: a SASL_SSL
        listener asks for a client certificate only when its own prefixed setting says so (KIP-684)."""
        def get(name: str, default: str) -> str:
            value = self.listener_value(listener, name)
            return default if value is None else value.strip()
        return (get("ssl.keystore.location", self.ssl_keystore_location),
                get("ssl.truststore.location", self.ssl_truststore_location),
                get("ssl.client.auth", self.ssl_client_auth if protocol == "SSL" else "none"),
                get("ssl.key.password", self.ssl_key_password))

    def log_dirs(self) -> list[str]:
        """Each broker's log directories (`log.dirs`, else `log.dir`, as Kafka reads them): names in the model,
        where DescribeLogDirs reports replicas and AlterReplicaLogDirs moves them (the logs are in memory)."""
        raw = self.overrides.get("log.dirs") or self.overrides.get("log.dir") or DEFAULT_LOG_DIR
        dirs: list[str] = []
        for d in (d.strip() for d in raw.split(",")):
            if d and d not in dirs:
                dirs.append(d)
        return dirs or [DEFAULT_LOG_DIR]

    def ip_overrides(self) -> dict[str, int]:
        """max.connections.per.ip.overrides as {host: count}; InvalidConfig in Kafka's words if malformed."""
        out = {}
        for entry in filter(None, (e.strip() for e in self.max_connections_per_ip_overrides.split(","))):
            host, _, count = entry.rpartition(":")
            if not host or not count.strip().isdigit():
                raise InvalidConfig(f"Invalid value {self.max_connections_per_ip_overrides} for configuration "
                                    "max.connections.per.ip.overrides: Map entry should be of form "
                                    "<key>:<value>")
            out[host.strip()] = int(count)
        return out

    def synonyms(self, name: str, node_id: int | None = None) -> list[tuple[str, str, ConfigSource]]:
        """Every layer that gives broker config `name` a value, the one in force first (Kafka's synonym
        chain): broker `node_id`'s dynamic value, the cluster-wide dynamic value, the static setting, the
        default."""
        chain = [(name, value, source) for value, source in self._layers(name, node_id)]
        if chain:  # a config set in ms lists the coarser ones it overrides (Kafka lists them only then)
            for coarser in self.catalog.fallbacks.get(name, ()):
                chain += self.synonyms(coarser, node_id)
        return chain

    def in_force(self, name: str, node_id: int | None = None) -> tuple[str, ConfigSource] | None:
        """The first layer of `synonyms(name, node_id)` (None: no layer gives it a value), found without building
        the chain: every append reads a few topic configs through it."""
        return next(self._layers(name, node_id), None)

    def _layers(self, name: str, node_id: int | None) -> Iterator[tuple[str, ConfigSource]]:
        """(value, source) of each layer setting `name` itself, the one in force first."""
        if node_id is not None and (own := self.dynamic_brokers.get(node_id)) and name in own:
            yield own[name], ConfigSource.DYNAMIC_BROKER_CONFIG
        if name in self.dynamic_defaults:
            yield self.dynamic_defaults[name], ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG
        if name in self.overrides:
            yield self.overrides[name], ConfigSource.STATIC_BROKER_CONFIG
        elif (attr := _STATIC_FIELDS.get(name)) is not None and getattr(self, attr) != _FIELD_DEFAULTS[attr]:
            yield str(getattr(self, attr)), ConfigSource.STATIC_BROKER_CONFIG
        catalog = self.catalog
        default = catalog.broker_default(name)
        if default is None and catalog.broker_spec(name) is None:
            # a config the release does not have (4.4's group.streams.* on 3.9): what fakekafka runs by, Kafka 4.4's
            # default, never described for that release
            default = _ABSENT_MEANS.get(name, CURRENT_CATALOG.broker_default(name))
        if default is not None:
            yield default, ConfigSource.DEFAULT_CONFIG

    def value(self, name: str, node_id: int | None = None) -> tuple[str | None, ConfigSource]:
        return self.in_force(name, node_id) or (None, ConfigSource.DEFAULT_CONFIG)

    def topic_default(self, name: str, node_id: int | None = None) -> tuple[str | None, ConfigSource, str | None]:
        """A topic config's value when the topic does not set it: (value, source, broker synonym), as broker
        `node_id` (whose per-broker dynamic configs count) sees it. A topic config the release does not have
        (4.4's max.decompressed.message.bytes on 3.9) is what that release does without it: Kafka 4.4's default."""
        spec = self.catalog.topic.get(name) or TOPIC_CONFIGS[name]
        first = self.in_force(spec.broker_synonym, node_id) if spec.broker_synonym else None
        if first is not None:
            return first[0], first[1], spec.broker_synonym
        for coarser, factor in _DERIVED.get(name, ()):
            layer = self.in_force(coarser, node_id)
            if layer is not None:
                return str(int(layer[0]) * factor), ConfigSource.DEFAULT_CONFIG, spec.broker_synonym
        return spec.default, ConfigSource.DEFAULT_CONFIG, spec.broker_synonym


_FIELD_DEFAULTS = {f.name: f.default for f in fields(BrokerConfig)}

_STATIC_FIELDS = {"listeners": "listeners", "advertised.listeners": "advertised_listeners",
                  "listener.security.protocol.map": "listener_security_protocol_map",
                  "sasl.enabled.mechanisms": "sasl_enabled_mechanisms", "ssl.client.auth": "ssl_client_auth",
                  "ssl.keystore.location": "ssl_keystore_location",
                  "ssl.truststore.location": "ssl_truststore_location"}
"""Broker configs the cluster's own arguments set (`Cluster(advertised_listeners=...)`, `serve --listeners`) as
fields rather than by name: described as set (STATIC_BROKER_CONFIG), as Kafka describes its server.properties,
when they differ from the field's default. Read from the fields when described, so a config copied with
another value (dataclasses.replace) is described with the value in force."""


GROUP_CONFIGS: dict[str, ConfigSpec] = {s.name: s for s in (
    ConfigSpec("consumer.session.timeout.ms", _T.INT, "45000", "group.consumer.session.timeout.ms"),
    ConfigSpec("consumer.heartbeat.interval.ms", _T.INT, "5000", "group.consumer.heartbeat.interval.ms"),
    ConfigSpec("consumer.assignment.interval.ms", _T.INT, "1000", "group.consumer.assignment.interval.ms"),
    ConfigSpec("share.session.timeout.ms", _T.INT, "45000", "group.share.session.timeout.ms"),
    ConfigSpec("share.heartbeat.interval.ms", _T.INT, "5000", "group.share.heartbeat.interval.ms"),
    ConfigSpec("share.record.lock.duration.ms", _T.INT, "30000", "group.share.record.lock.duration.ms"),
    ConfigSpec("share.delivery.count.limit", _T.INT, "5", "group.share.delivery.count.limit"),
    ConfigSpec("share.partition.max.record.locks", _T.INT, "2000", "group.share.partition.max.record.locks"),
    ConfigSpec("share.assignment.interval.ms", _T.INT, "1000", "group.share.assignment.interval.ms"),
    ConfigSpec("share.auto.offset.reset", _T.STRING, "latest", "share.auto.offset.reset"),
    ConfigSpec("share.isolation.level", _T.STRING, "read_uncommitted", "share.isolation.level",
               ("read_committed", "read_uncommitted")),
    ConfigSpec("share.renew.acknowledge.enable", _T.BOOLEAN, "true", "share.renew.acknowledge.enable"),
    ConfigSpec("streams.session.timeout.ms", _T.INT, "45000", "group.streams.session.timeout.ms"),
    ConfigSpec("streams.heartbeat.interval.ms", _T.INT, "5000", "group.streams.heartbeat.interval.ms"),
    ConfigSpec("streams.num.standby.replicas", _T.INT, "0", "group.streams.num.standby.replicas"),
    ConfigSpec("streams.initial.rebalance.delay.ms", _T.INT, "3000", "group.streams.initial.rebalance.delay.ms"),
    ConfigSpec("streams.assignment.interval.ms", _T.INT, "1000", "group.streams.assignment.interval.ms"),
    ConfigSpec("streams.assignor.name", _T.STRING, "sticky", "group.streams.assignors"),
    ConfigSpec("streams.rack.aware.assignment.tags", _T.LIST, "", "group.streams.rack.aware.assignment.tags"),
    # Kafka's internal group configs: accepted and used, never described
    ConfigSpec("consumer.assignor.offload.enable", _T.BOOLEAN, "true", "group.consumer.assignor.offload.enable",
               internal=True),
    ConfigSpec("share.assignor.offload.enable", _T.BOOLEAN, "true", "group.share.assignor.offload.enable",
               internal=True),
    ConfigSpec("streams.assignor.offload.enable", _T.BOOLEAN, "true", "group.streams.assignor.offload.enable",
               internal=True),
    ConfigSpec("streams.task.offset.interval.ms", _T.INT, "60000", "group.streams.task.offset.interval.ms",
               minimum=1, internal=True),
    ConfigSpec("streams.num.warmup.replicas", _T.INT, "2", "group.streams.num.warmup.replicas", minimum=0,
               internal=True),
    ConfigSpec("streams.acceptable.recovery.lag", _T.LONG, "10000", "group.streams.acceptable.recovery.lag",
               minimum=0, internal=True),
    ConfigSpec("errors.deadletterqueue.topic.name", _T.STRING, "", "errors.deadletterqueue.topic.name"),
    ConfigSpec("errors.deadletterqueue.copy.record.enable", _T.BOOLEAN, "false",
               "errors.deadletterqueue.copy.record.enable"),
)}
"""Kafka 4.4's group configs (GroupConfig): GROUP resources of DescribeConfigs and (Incremental)AlterConfigs.
Each falls back to its broker synonym (group.consumer.*, group.share.*, group.streams.*) when the group does not
set it."""

GROUP_CONFIG_BOUNDS: dict[str, tuple[str, int, str, int]] = {
    "consumer.session.timeout.ms": ("group.consumer.min.session.timeout.ms", 45000,
                                    "group.consumer.max.session.timeout.ms", 60000),
    "consumer.heartbeat.interval.ms": ("group.consumer.min.heartbeat.interval.ms", 5000,
                                       "group.consumer.max.heartbeat.interval.ms", 15000),
    "consumer.assignment.interval.ms": ("group.consumer.min.assignment.interval.ms", 0,
                                        "group.consumer.max.assignment.interval.ms", 15000),
    "share.session.timeout.ms": ("group.share.min.session.timeout.ms", 45000,
                                 "group.share.max.session.timeout.ms", 60000),
    "share.heartbeat.interval.ms": ("group.share.min.heartbeat.interval.ms", 5000,
                                    "group.share.max.heartbeat.interval.ms", 15000),
    "share.record.lock.duration.ms": ("group.share.min.record.lock.duration.ms", 15000,
                                      "group.share.max.record.lock.duration.ms", 60000),
    "share.delivery.count.limit": ("group.share.min.delivery.count.limit", 2,
                                   "group.share.max.delivery.count.limit", 10),
    "share.partition.max.record.locks": ("group.share.min.partition.max.record.locks", 100,
                                         "group.share.max.partition.max.record.locks", 4000),
    "share.assignment.interval.ms": ("group.share.min.assignment.interval.ms", 0,
                                     "group.share.max.assignment.interval.ms", 15000),
    "streams.session.timeout.ms": ("group.streams.min.session.timeout.ms", 45000,
                                   "group.streams.max.session.timeout.ms", 60000),
    "streams.heartbeat.interval.ms": ("group.streams.min.heartbeat.interval.ms", 5000,
                                      "group.streams.max.heartbeat.interval.ms", 15000),
}
"""A group config's range, from the broker's min/max configs (name, default) as Kafka's GroupConfig checks it."""


GROUP_CONFIG_LIMITS: tuple[tuple[str, str, int, bool], ...] = (
    ("streams.num.warmup.replicas", "group.streams.max.warmup.replicas", 20, True),
    ("streams.task.offset.interval.ms", "group.streams.min.task.offset.interval.ms", 15000, False),
)
"""A group config's one-sided limit from a broker config (name, default; True: a maximum), in Kafka's words."""


def validate_group_config(name: str, value: str, broker: BrokerConfig) -> None:
    """InvalidConfig with Kafka 4.4's words (checked with IncrementalAlterConfigs against Kafka 4.4)."""
    spec = GROUP_CONFIGS.get(name)
    if spec is None:
        raise InvalidConfig(f"Unknown group config name: {name}")
    spec.validate(value)
    if name == "share.auto.offset.reset" and value not in ("earliest", "latest") \
            and not value.startswith("by_duration:"):
        raise InvalidConfig(f"Invalid value {value} for configuration {name}: Invalid value `{value}` for "
                            f"configuration {name}. The value must be either 'earliest', 'latest' or of the "
                            f"format 'by_duration:<PnDTnHnMn.nS>'.")
    for limited, broker_name, default, above in GROUP_CONFIG_LIMITS:
        if name == limited:
            limit = int(broker.value(broker_name)[0] or default) if broker_name in BROKER_CONFIGS else default
            if (int(value.strip()) > limit) if above else (int(value.strip()) < limit):
                raise InvalidConfig(f"{name} must be {'less' if above else 'greater'} than or equal to {limit}")
    bounds = GROUP_CONFIG_BOUNDS.get(name)
    if bounds is not None:
        low_name, low_default, high_name, high_default = bounds
        low = int(broker.value(low_name)[0] or low_default) if low_name in BROKER_CONFIGS else low_default
        high = int(broker.value(high_name)[0] or high_default) if high_name in BROKER_CONFIGS else high_default
        if not low <= int(value.strip()) <= high:
            raise InvalidConfig(f"{name} must be in the range {low} to {high} inclusive.")
