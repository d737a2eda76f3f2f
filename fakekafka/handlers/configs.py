"""DescribeConfigs (key 32), v1-4, AlterConfigs (key 33), v0-2, IncrementalAlterConfigs (key 44), v0-1, and
ListConfigResources (key 74), v0-1.

Alterations: TOPIC resources (DYNAMIC_TOPIC_CONFIG) and BROKER resources, "" for the cluster-wide dynamic
default (DYNAMIC_DEFAULT_BROKER_CONFIG) and the answering broker's id for its own (DYNAMIC_BROKER_CONFIG), as
Kafka 4.4's broker and controller check them, with their codes and words (checked against Kafka by
tests/conformance/test_api_sweep.py): each resource is validated whole and applied whole or not at all; duplicate
resources or keys, a null SET value, the default topic resource "", another broker's id are INVALID_REQUEST;
unknown topic configs and bad values INVALID_CONFIG (checked before the topic's existence, as Kafka does);
APPEND/SUBTRACT work on the current value or else the default, for LIST configs only; broker configs Kafka
cannot change at run time are refused ("Cannot update these configs dynamically"), as are keystore settings
without a listener prefix, per-broker configs at the cluster-wide level and thread counts more than halved or
doubled (Kafka's DynamicBrokerConfig and DynamicThreadPool checks), broker names it does not
know are kept and described with their value hidden, as Kafka's; the cluster-level min.insync.replicas can't
be removed (ELR, KAFKA-16540). AlterConfigs replaces the resource's whole dynamic set. Changes take effect
at once, since the model reads configs on every use (max.message.bytes, min.insync.replicas,
message.timestamp.*, cleanup.policy), retention at its next check. GROUP resources (Kafka 4.4's group configs:
consumer.*, share.*, streams.*, errors.deadletterqueue.*) are kept per group id (DYNAMIC_GROUP_CONFIG), checked
against the broker's min/max bounds as Kafka's GroupConfig does, and read by the consumer and share group
coordinators; whether or not the group exists, as Kafka. CLIENT_METRICS resources (KIP-714 subscriptions:
`metrics`, `interval.ms`, `match`) are kept per name with Kafka 4.4's checks, codes and words; one left
without configs no longer exists. BROKER_LOGGER resources (IncrementalAlterConfigs only, as Kafka) set or
reset the level of one of fakekafka's Python loggers (model/loggers.py), checked as Kafka's
ConfigAdminManager checks them. A broker config outside model/config.py's
BROKER_CONFIGS (Kafka 4.4's own list, generated from its jars) is one Kafka does not know. Deliberate
differences: the loggers are fakekafka's Python loggers, not Kafka's
log4j ones (Java class names), and are shared by every broker of the process.

DescribeConfigs: Kafka's topic and broker defaults with their sources.

A topic config not set on the topic reports the broker's value for its synonym (DEFAULT_CONFIG, or
STATIC_BROKER_CONFIG when the broker was started with it set; min.insync.replicas is a cluster-level
dynamic config, as on a new Kafka 4.1+ cluster), with the synonym chain in v1+: every layer that has a
value, the one in force first, as Kafka's ConfigHelper lists them. Broker configs Kafka can change at run
time are read_only=False. Kafka's internal broker configs (log.initial.task.delay.ms) are listed only when the
broker was started with them set, as Kafka lists them. The broker resource "" is the cluster-wide level: only
the configs set there.
A resource described without error carries the error message "" (Kafka's).
Behaviour: configs are listed in name order (Kafka's order is its hash map's). A BROKER_LOGGER resource lists
the loggers with their effective levels (DYNAMIC_BROKER_LOGGER_CONFIG), a CLIENT_METRICS one its three configs
(DYNAMIC_CLIENT_METRICS_CONFIG or DEFAULT_CONFIG), whether or not it exists. Deliberate differences: a
cluster on a frozen or custom clock lifts Kafka 4's one-hour limit on future record timestamps
(log.message.timestamp.after.max.ms, reported as a cluster-wide dynamic config), since its model time is
not the producers' wall-clock time. A broker resource lists every broker config Kafka 4.4 lists (its
non-internal ConfigDef keys, with Kafka's types, defaults, read_only flags, synonyms and documentation), the
ones fakekafka has no use for (threads, socket buffers, log flushing, replica fetching, controller settings...)
at the value they were given, or Kafka's default: a broker that was not given `listeners`,
`process.roles`, `controller.*` reports Kafka's defaults for them (fakekafka has no controller quorum), where a
real broker's server.properties sets them (compat/KNOWN_DIFFERENCES.md "Wire fields").
"""

from __future__ import annotations

from typing import Any

from construct import Container

from fakekafka.handlers.authz import authorize, authorize_cluster
from fakekafka.handlers.registry import ErrorContext, RequestContext, handles
from fakekafka.model.acl import AclOperation, ResourceType
from fakekafka.model.cleaner import dedupe_buffer_problem
from fakekafka.model.config import (
    AUTHORIZER_CONFIGS,
    CLIENT_METRICS_CONFIGS,
    GROUP_CONFIGS,
    LISTENER_CONFIG,
    LISTENER_MECHANISM_CONFIGS,
    TELEMETRY_RECEIVER,
    BrokerConfig,
    ConfigSource,
    ConfigSpec,
    ConfigType,
    InvalidConfig,
    valid_client_match,
    validate_group_config,
)
from fakekafka.model.loggers import ROOT_LOGGER, VALID_LEVELS
from fakekafka.model.otlp import OtlpMissing, require_otlp
from fakekafka.wire import ApiKey, ErrorCode

TOPIC, BROKER, BROKER_LOGGER, CLIENT_METRICS, GROUP = 2, 4, 8, 16, 32


def _config_authorized(ctx: RequestContext, operation: AclOperation, resource_type: int,
                       name: str) -> tuple[ErrorCode, str] | None:
    """None if the client may do `operation` on the config resource, else the error (and Kafka's message for
    it): a topic's configs are the topic's, a broker's (and its loggers') the cluster's."""
    if resource_type == TOPIC and not authorize(ctx, operation, ResourceType.TOPIC, name):
        return ErrorCode.TOPIC_AUTHORIZATION_FAILED, "Topic authorization failed."
    if resource_type in (BROKER, BROKER_LOGGER, CLIENT_METRICS) and not authorize_cluster(ctx, operation):
        return ErrorCode.CLUSTER_AUTHORIZATION_FAILED, "Cluster authorization failed."
    if resource_type == GROUP and not authorize(ctx, operation, ResourceType.GROUP, name):
        return ErrorCode.GROUP_AUTHORIZATION_FAILED, "Group authorization failed."
    return None


def _entry(name: str, value: str | None, source: ConfigSource, config_type: int, synonyms: list[dict[str, Any]],
           doc: str, *, read_only: bool) -> dict[str, Any]:
    return {"name": name, "value": value, "read_only": read_only, "config_source": source, "is_sensitive": False,
            "synonyms": synonyms, "config_type": config_type, "documentation": doc or None}


def _topic_configs(ctx: RequestContext, name: str, keys: list[str] | None, synonyms: bool,
                   documentation: bool = False) -> list[dict[str, Any]]:
    """A topic's configs: every topic config of the release the cluster stands in for (Kafka 4.4's, or an older
    release's generated from its jars), each its own value or else its broker synonym's."""
    topic = ctx.cluster.topics[name]
    specs = ctx.cluster.config.catalog.topic
    out = []
    for key in sorted(specs):
        if keys is not None and key not in keys:
            continue
        spec = specs[key]
        value, source, synonym = ctx.cluster.topic_config(topic, key, ctx.broker.node_id)
        chain = []
        if synonyms:
            if source == ConfigSource.TOPIC_CONFIG:
                chain.append({"name": key, "value": value, "source": source})
            if synonym:
                chain += [{"name": n, "value": v, "source": s}
                          for n, v, s in ctx.cluster.config.synonyms(synonym, ctx.broker.node_id)]
        out.append(_entry(key, value, source, spec.type, chain, spec.documentation if documentation else "",
                          read_only=False))
    return out


def _group_configs(ctx: RequestContext, group_id: str, keys: list[str] | None, synonyms: bool
                   ) -> list[dict[str, Any]]:
    """A group's configs: its own (DYNAMIC_GROUP_CONFIG) or else its broker synonym's value, as Kafka lists
    them (every group config, whether or not the group exists)."""
    own = ctx.cluster.group_configs.get(group_id, {})
    config = ctx.cluster.config
    out = []
    for key in sorted(GROUP_CONFIGS):
        if keys is not None and key not in keys:
            continue
        spec = GROUP_CONFIGS[key]
        if spec.internal:  # Kafka 4.4 describes none of its internal group configs, set or not
            continue
        synonym = spec.broker_synonym or key
        layers = config.synonyms(synonym, ctx.broker.node_id) if synonym in config.catalog.broker else \
            [(synonym, spec.default, ConfigSource.DEFAULT_CONFIG)]
        if key in own:
            layers = [(key, own[key], ConfigSource.DYNAMIC_GROUP_CONFIG), *layers]
        _, value, source = layers[0]
        chain = [{"name": n, "value": v, "source": src} for n, v, src in layers] if synonyms else []
        out.append(_entry(key, value, source, spec.type, chain, spec.documentation, read_only=False))
    return out


def _broker_configs(ctx: RequestContext, keys: list[str] | None, synonyms: bool, cluster_level: bool,
                    documentation: bool = False) -> list[dict[str, Any]]:
    """One broker's configs, or (`cluster_level`, the resource named "") only the cluster-wide dynamic ones,
    each with only that layer in its synonyms, as Kafka describes the cluster default resource. Every broker
    config of the release the cluster stands in for (model/config.py's catalog: Kafka 4.4's BROKER_CONFIGS or an
    older release's, each generated from that release's own definitions), each with Kafka's documentation when
    asked for it; a password's value hidden (is_sensitive), as Kafka does."""
    out = []
    config = ctx.cluster.config
    catalog = config.catalog
    own = config.dynamic_brokers.get(ctx.broker.node_id, {})
    internal = {n for n in catalog.internal if n in config.overrides}  # Kafka lists these only when set
    prefixed = {n for n in config.overrides if LISTENER_CONFIG.fullmatch(n)}  # listener-prefixed, as set
    # a name the release does not know, set at start (a 4.4 setting given to a cluster standing in for 3.9): listed,
    # its value hidden, as Kafka lists every original it was started with
    unknown = {n for n in config.overrides if catalog.broker_spec(n) is None and n not in prefixed
               and n not in AUTHORIZER_CONFIGS}
    names = set(config.dynamic_defaults) if cluster_level else \
        {*catalog.broker, *own, *internal, *prefixed, *unknown}
    for key in sorted(names):
        if keys is not None and key not in keys:
            continue
        if key in prefixed:
            out.append(_listener_config(config, key, ctx.broker.node_id, synonyms))
            continue
        spec = catalog.broker.get(key) or (catalog.internal.get(key) if key in internal else None)
        if spec is None:  # a name Kafka does not know, set dynamically or at start: listed, its value hidden
            source = ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG if cluster_level else \
                ConfigSource.DYNAMIC_BROKER_CONFIG if key in own else ConfigSource.STATIC_BROKER_CONFIG
            chain = [{"name": key, "value": None, "source": source}] if synonyms else []
            out.append({**_entry(key, None, source, 0, chain, "", read_only=True), "is_sensitive": True})
            continue
        if cluster_level:
            layers = [(key, ctx.cluster.config.dynamic_defaults[key], ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG)]
        elif key in ("broker.id", "node.id"):
            layers = [(key, str(ctx.broker.node_id), ConfigSource.STATIC_BROKER_CONFIG)]
            if spec.default is not None:
                layers.append((key, spec.default, ConfigSource.DEFAULT_CONFIG))
        else:
            layers = config.synonyms(key, ctx.broker.node_id)
        value, source = (layers[0][1], layers[0][2]) if layers else (None, ConfigSource.DEFAULT_CONFIG)
        sensitive = spec.type == ConfigType.PASSWORD  # Kafka hides a password's value, its synonyms' too
        chain = [{"name": n, "value": None if sensitive else v, "source": s} for n, v, s in layers] \
            if synonyms else []
        entry = _entry(key, None if sensitive else value, source, spec.type, chain,
                       spec.documentation if documentation else "", read_only=not spec.dynamic)
        out.append({**entry, "is_sensitive": sensitive})
    return out


def _listener_config(config: BrokerConfig, key: str, node_id: int, synonyms: bool) -> dict[str, Any]:
    """A listener-prefixed config as Kafka lists one set in server.properties: its value (null if its type is
    PASSWORD: a JAAS line, a key password), STATIC_BROKER_CONFIG, read-only, no documentation of its own, the type
    and, after itself, the synonyms of the config it prefixes (`sasl.jaas.config` for a mechanism's
    `listener.name.<l>.<mechanism>.sasl.jaas.config`)."""
    m = LISTENER_CONFIG.fullmatch(key)
    assert m is not None
    base = m.group("config")
    mechanism_base = base.partition(".")[2]
    if mechanism_base in LISTENER_MECHANISM_CONFIGS:
        base = mechanism_base
    spec = config.catalog.broker.get(base)
    config_type = spec.type if spec is not None else ConfigType.UNKNOWN
    sensitive = config_type == ConfigType.PASSWORD
    value = None if sensitive else config.overrides[key]
    layers = [(key, config.overrides[key], ConfigSource.STATIC_BROKER_CONFIG), *config.synonyms(base, node_id)]
    chain = [{"name": n, "value": None if sensitive else v, "source": s} for n, v, s in layers] if synonyms else []
    return {**_entry(key, value, ConfigSource.STATIC_BROKER_CONFIG, config_type, chain, "", read_only=True),
            "is_sensitive": sensitive}


def _logger_broker_refused(ctx: RequestContext, name: str) -> str | None:
    """DescribeConfigs' check of a BROKER_LOGGER resource's name (the answering broker's id), in Kafka's words."""
    if name == "":
        return "Broker id must not be empty"
    try:
        node = int(name)
    except ValueError:
        return f"Broker id must be an integer, but it is: {name}"
    if node != ctx.broker.node_id:
        return f"Unexpected broker id, expected {ctx.broker.node_id} but received {name}"
    return None


def _logger_configs(ctx: RequestContext, keys: list[str] | None) -> list[dict[str, Any]]:
    """The broker's loggers and their levels (model/loggers.py), as Kafka lists its log4j loggers: each a
    DYNAMIC_BROKER_LOGGER_CONFIG of unknown type, no synonyms, documentation ""; asked-for names that are
    not loggers left out."""
    loggers = ctx.cluster.loggers
    names = loggers.names() if keys is None else [k for k in keys if loggers.exists(k)]
    return [{**_entry(n, loggers.level(n), ConfigSource.DYNAMIC_BROKER_LOGGER_CONFIG, ConfigType.UNKNOWN, [], "",
                      read_only=False), "documentation": ""} for n in dict.fromkeys(names)]


def _client_metrics_configs(ctx: RequestContext, name: str, keys: list[str] | None, synonyms: bool,
                            documentation: bool) -> list[dict[str, Any]]:
    """A client metrics subscription's three configs, set (DYNAMIC_CLIENT_METRICS_CONFIG, itself as its one
    synonym) or default (DEFAULT_CONFIG, no synonyms), whether or not the subscription exists, as Kafka."""
    own = ctx.cluster.client_metrics.get(name, {})
    older = ctx.cluster.config.release is not None
    out = []
    for key in sorted(CLIENT_METRICS_CONFIGS):
        if older and key not in own:  # before 4.0: only the configs set, without synonyms (Kafka 3.9.1's answer)
            continue
        if keys is not None and key not in keys:
            continue
        spec = CLIENT_METRICS_CONFIGS[key]
        if key in own:
            value, source = own[key], ConfigSource.DYNAMIC_CLIENT_METRICS_CONFIG
            chain = [{"name": key, "value": value, "source": source}] if synonyms and not older else []
        else:
            value, source, chain = spec.default, ConfigSource.DEFAULT_CONFIG, []
        out.append(_entry(key, value, source, spec.type, chain, spec.documentation if documentation else "",
                          read_only=False))
    return out


def describe_configs_error_response(ctx: ErrorContext, req: Container, code: ErrorCode) -> dict[str, Any]:
    """An injected error for every resource asked about (there is no top-level error code)."""
    return {"throttle_time_ms": 0, "results": [
        {"error_code": code, "error_message": None, "resource_type": r.resource_type,
         "resource_name": r.resource_name, "configs": []} for r in req.resources]}


OLDER_INVALID_REQUEST = ("This most likely occurs because of a request being malformed by the client library or the "
                         "message was sent to an incompatible broker. See the broker logs for more details.")
"""INVALID_REQUEST's own words, which a broker before 4.0 answers a whole DescribeConfigs with when one resource is
of a type it does not know (its KafkaApis throws; the error response carries the error's default message)."""


def _unknown_to_release(ctx: RequestContext, resource_type: int) -> bool:
    """A resource type the release the cluster stands in for does not have (GROUP before 4.0, CLIENT_METRICS before
    3.7, anything outside Kafka's types); Kafka 4.4 (release None) answers those resource by resource instead."""
    release = ctx.cluster.config.release
    if release is None:
        return False
    return resource_type not in (TOPIC, BROKER, BROKER_LOGGER, CLIENT_METRICS) or \
        (resource_type == CLIENT_METRICS and not release.client_metrics_resources)


@handles(ApiKey.DESCRIBE_CONFIGS, 1, 4, errors=describe_configs_error_response)
def handle_describe_configs(ctx: RequestContext, req: Container) -> dict[str, Any]:
    results = []
    synonyms = bool(req.get("include_synonyms", False))
    if any(_unknown_to_release(ctx, r.resource_type) for r in req.resources):
        return {"throttle_time_ms": 0, "results": [
            {"error_code": ErrorCode.INVALID_REQUEST, "error_message": OLDER_INVALID_REQUEST,
             "resource_type": r.resource_type, "resource_name": r.resource_name, "configs": []}
            for r in req.resources]}
    for r in req.resources:
        keys = list(r.configuration_keys) if r.configuration_keys is not None else None
        code, message, configs = ErrorCode.NONE, "", []
        refused = _config_authorized(ctx, AclOperation.DESCRIBE_CONFIGS, r.resource_type, r.resource_name)
        if refused is not None:
            code, message = refused
        elif r.resource_type == TOPIC:
            if r.resource_name not in ctx.cluster.topics:
                code, message = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"Topic '{r.resource_name}' does not exist."
            else:
                configs = _topic_configs(ctx, r.resource_name, keys, synonyms,
                                         bool(req.get("include_documentation", False)))
        elif r.resource_type == BROKER:
            if r.resource_name not in ("", str(ctx.broker.node_id)):
                code, message = ErrorCode.INVALID_REQUEST, \
                    f"Unexpected broker id, expected {ctx.broker.node_id} or empty string, but received " \
                    f"{r.resource_name}"
            else:
                configs = _broker_configs(ctx, keys, synonyms, cluster_level=r.resource_name == "",
                                          documentation=bool(req.get("include_documentation", False)))
        elif r.resource_type == BROKER_LOGGER:
            refused = _logger_broker_refused(ctx, r.resource_name)
            if refused is not None:
                code, message = ErrorCode.INVALID_REQUEST, refused
            else:
                configs = _logger_configs(ctx, keys)
        elif r.resource_type == CLIENT_METRICS:
            if r.resource_name == "":
                code, message = ErrorCode.INVALID_REQUEST, "Client metrics subscription name must not be empty"
            else:
                configs = _client_metrics_configs(ctx, r.resource_name, keys, synonyms,
                                                  bool(req.get("include_documentation", False)))
        elif r.resource_type == GROUP:
            configs = _group_configs(ctx, r.resource_name, keys, synonyms)
        else:
            code, message = ErrorCode.INVALID_REQUEST, f"Unsupported resource type {r.resource_type}"
        results.append({"error_code": code, "error_message": message, "resource_type": r.resource_type,
                        "resource_name": r.resource_name, "configs": configs})
    return {"throttle_time_ms": 0, "results": results}


SET, DELETE, APPEND, SUBTRACT = 0, 1, 2, 3
_OP_NAMES = {APPEND: "APPEND", SUBTRACT: "SUBTRACT"}


class _Refused(Exception):
    """One resource's alteration refused: the code and message Kafka answers it with."""

    def __init__(self, code: ErrorCode, message: str | None) -> None:
        super().__init__(message)
        self.code, self.message = code, message


def _list_value(current: str | None) -> list[str]:
    return [p for p in (current or "").split(",") if p]


def _apply(current: dict[str, str], ops: list[tuple[str, int, str | None]], *, topic: bool,
           defaults: dict[str, str | None], specs: dict[str, ConfigSpec]) -> dict[str, str]:
    """The resource's configs after IncrementalAlterConfigs' operations, as Kafka's controller applies them:
    APPEND/SUBTRACT work on the current value or else the default, only for LIST configs."""
    out = dict(current)
    for name, op, value in ops:
        if op == SET:
            if value is None:
                raise _Refused(ErrorCode.INVALID_REQUEST, f"Null value not supported for : {name}")
            out[name] = value
        elif op == DELETE:
            out.pop(name, None)
        elif op in (APPEND, SUBTRACT):
            spec = specs.get(name)
            if spec is None or spec.type != ConfigType.LIST:
                if topic:
                    raise _Refused(ErrorCode.INVALID_CONFIG,
                                   f"Can't {_OP_NAMES[op]} to key {name} because its type is not LIST.")
                verb = "append" if op == APPEND else "subtract"
                raise _Refused(ErrorCode.INVALID_CONFIG, f"Config value {verb} is not allowed for config key: {name}")
            parts = _list_value(out[name] if name in out else defaults.get(name))
            for v in _list_value(value):
                if op == APPEND and v not in parts:
                    parts.append(v)
                elif op == SUBTRACT and v in parts:
                    parts.remove(v)
            out[name] = ",".join(parts)
        else:
            raise _Refused(ErrorCode.UNKNOWN_SERVER_ERROR, None)
    return out


def _check_topic(configs: dict[str, str], specs: dict[str, ConfigSpec]) -> dict[str, str]:
    for name, value in configs.items():
        spec = specs.get(name)
        if spec is None:
            raise _Refused(ErrorCode.INVALID_CONFIG, f"Unknown topic config name: {name}")
        try:
            spec.validate(value)
        except InvalidConfig as e:
            raise _Refused(ErrorCode.INVALID_CONFIG, str(e)) from None
    return configs


def _check_broker(configs: dict[str, str], changed: list[str], cluster_level: bool,
                  current: BrokerConfig, node_id: int) -> dict[str, str]:
    """Kafka's DynamicBrokerConfig checks, in its order: static configs can't change at run time, keystore and
    truststore settings only with a listener prefix, values must parse, per-broker configs (listeners, SSL,
    SASL...) not at the cluster-wide level, a thread count at most halved or doubled from the value in
    force on the answering broker. Names it does not know are kept (a plugin's configs), as Kafka keeps them."""
    scala = current.release is not None  # before 4.0 the check was Scala's, and so is how it prints a set

    def refuse_names(names: list[str], words: str, mutable: bool = False) -> None:
        if names:
            listed = ", ".join(names)
            shown = (f"HashSet({listed})" if mutable or len(names) > 4 else f"Set({listed})") if scala else \
                f"[{listed}]"
            raise _Refused(ErrorCode.INVALID_REQUEST, f"{words}: {shown}")

    known = current.catalog.broker
    specs = {n: known[n] for n in configs if n in known}
    refuse_names([n for n in changed if n in specs and not specs[n].dynamic], "Cannot update these configs dynamically")
    refuse_names([n for n in configs if n in specs and specs[n].security],
                 "These security configs can be dynamically updated only per-listener using the listener prefix",
                 mutable=True)
    for name, value in configs.items():
        if name in specs:
            try:
                specs[name].validate(value)
            except InvalidConfig as e:
                raise _Refused(ErrorCode.INVALID_REQUEST, str(e)) from None
    if "metric.reporters" in changed and TELEMETRY_RECEIVER in (r.strip() for r in configs.get(
            "metric.reporters", "").split(",")):
        try:
            require_otlp()
        except OtlpMissing as e:
            raise _Refused(ErrorCode.INVALID_REQUEST,
                           f"Invalid value for configuration metric.reporters: {e}") from None
    if cluster_level:
        refuse_names([n for n in configs if n in specs and specs[n].update_mode == "per-broker"],
                     "Cannot update these configs at default cluster level, broker id must be specified")
    _check_dedupe_buffer(configs, cluster_level, current, node_id)
    for name in changed:
        if name in configs and name in specs and specs[name].thread_count:
            _check_thread_count(name, int(configs[name].strip()), int(current.value(name, node_id)[0] or 0))
    if cluster_level and "min.insync.replicas" not in configs and current.release is None:  # ELR: 4.1 on
        raise _Refused(ErrorCode.INVALID_CONFIG,
                       "Cluster-level min.insync.replicas cannot be removed while ELR is enabled.")
    return configs


def _check_dedupe_buffer(configs: dict[str, str], cluster_level: bool, current: BrokerConfig, node_id: int) -> None:
    """Kafka checks the whole config the answering broker would run by (a new KafkaConfig: its static configs,
    the cluster-wide dynamic ones, its own dynamic ones, the new layer in its place): among others, each cleaner
    thread's share of log.cleaner.dedupe.buffer.size. Its refusal is INVALID_REQUEST with its message."""
    layers = [current.dynamic_brokers.get(node_id, {}), configs] if cluster_level else \
        [configs, current.dynamic_defaults]

    def in_force(name: str) -> str:
        for layer in layers:
            if name in layer:
                return layer[name].strip()
        return next(v for _, v, source in current.synonyms(name)
                    if source in (ConfigSource.STATIC_BROKER_CONFIG, ConfigSource.DEFAULT_CONFIG)).strip()
    problem = dedupe_buffer_problem(int(in_force("log.cleaner.dedupe.buffer.size")),
                                    int(in_force("log.cleaner.threads")))
    if problem is not None:
        raise _Refused(ErrorCode.INVALID_REQUEST, problem)


def _check_thread_count(name: str, new: int, old: int) -> None:
    """Kafka's DynamicThreadPool check of a new thread count against the one in force, in its words."""
    problem = f"Dynamic thread count update validation failed for {name}={new}"
    if new <= 0:
        problem += ", value should be at least 1"
    elif new < old / 2:
        problem += f", value should be at least half the current value {old}"
    elif new > old * 2:
        problem += f", value should not be greater than double the current value {old}"
    else:
        return
    raise _Refused(ErrorCode.INVALID_REQUEST, f"Invalid value org.apache.kafka.common.config.ConfigException: "
                                              f"{problem} for configuration Invalid dynamic configuration")


def _alter(ctx: RequestContext, resource_type: int, name: str, ops: list[tuple[str, int, str | None]], *,
           incremental: bool, validate_only: bool) -> None:
    """Validates one resource's alteration whole and, unless `validate_only`, applies it; _Refused if not."""
    if len({o[0] for o in ops}) != len(ops):
        raise _Refused(ErrorCode.INVALID_REQUEST, "Error due to duplicate config keys")
    cluster = ctx.cluster
    catalog = cluster.config.catalog
    if _unknown_to_release(ctx, resource_type):  # Kafka 3.9.1's words for GROUP
        raise _Refused(ErrorCode.INVALID_REQUEST, f"Unknown resource type {resource_type}")
    if resource_type == TOPIC:
        if name == "":
            raise _Refused(ErrorCode.INVALID_REQUEST, "Default topic resources are not allowed.")
        topic = cluster.topics.get(name)
        if incremental:  # the values are checked before the topic's existence, as Kafka's controller does
            new = _apply(topic.configs if topic else {}, ops, topic=True, specs=catalog.topic,
                         defaults={k: s.default for k, s in catalog.topic.items()})
        else:
            new = _replace(ops)
        _check_topic(new, catalog.topic)
        if topic is None:
            raise _Refused(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"The topic '{name}' does not exist.")
        if not validate_only:
            cluster.set_topic_configs(topic, new)
        return
    if resource_type == GROUP:
        if name == "":  # Kafka 4.4's answer (the sweep's alter-group-configs variant)
            raise _Refused(ErrorCode.INVALID_REQUEST, "Default group resources are not allowed.")
        current_group = cluster.group_configs.get(name, {})
        new = _apply(current_group, ops, topic=True, specs=GROUP_CONFIGS,
                     defaults={k: s.default for k, s in GROUP_CONFIGS.items()}) if incremental else _replace(ops)
        for key, value in new.items():
            try:
                validate_group_config(key, value, cluster.config)
            except InvalidConfig as e:
                raise _Refused(ErrorCode.INVALID_CONFIG, str(e)) from None
        if not validate_only:
            if new:
                cluster.group_configs[name] = new
            else:
                cluster.group_configs.pop(name, None)
        return
    if resource_type == BROKER_LOGGER and incremental:
        _alter_loggers(ctx, name, ops, validate_only=validate_only)
        return
    if resource_type == CLIENT_METRICS:
        _alter_client_metrics(ctx, name, ops, incremental=incremental, validate_only=validate_only)
        return
    if resource_type != BROKER:
        raise _Refused(ErrorCode.INVALID_REQUEST, f"Unknown resource type {resource_type}")
    node: int | None = None
    if name != "":
        try:
            node = int(name)
        except ValueError:
            raise _Refused(ErrorCode.INVALID_REQUEST, f"Node id must be an integer, but it is: {name}") from None
        if node != ctx.broker.node_id:
            raise _Refused(ErrorCode.INVALID_REQUEST,
                           f"Unexpected broker id, expected {ctx.broker.node_id}, but received {name}")
    config = cluster.config
    current = config.dynamic_defaults if node is None else config.dynamic_brokers.get(node, {})
    if incremental:
        new = _apply(current, ops, topic=False, specs=catalog.broker,
                     defaults={k: s.default for k, s in catalog.broker.items()})
    else:
        new = _replace(ops)
    _check_broker(new, [o[0] for o in ops], node is None, config, ctx.broker.node_id)
    if not validate_only:
        cluster.set_broker_configs(node, new)


def _alter_loggers(ctx: RequestContext, name: str, ops: list[tuple[str, int, str | None]], *,
                   validate_only: bool) -> None:
    """IncrementalAlterConfigs on a BROKER_LOGGER resource, checked as Kafka's ConfigAdminManager does (every
    operation before any applies): SET a level Kafka knows, DELETE (back to the parent's level), not the root
    logger's; APPEND/SUBTRACT refused. AlterConfigs has no BROKER_LOGGER resources ("Unknown resource type")."""
    try:
        node = int(name)
    except ValueError:
        raise _Refused(ErrorCode.INVALID_REQUEST, f"Node id must be an integer, but it is: {name}") from None
    if node != ctx.broker.node_id:
        raise _Refused(ErrorCode.INVALID_REQUEST,
                       f"Unexpected node id. Expected {ctx.broker.node_id}, but received {name}")
    loggers = ctx.cluster.loggers
    for logger, op, value in ops:
        if op == SET and value is None:
            raise _Refused(ErrorCode.INVALID_REQUEST, f"Null value not supported for : {logger}")
    for logger, op, value in ops:
        if op in (APPEND, SUBTRACT):
            raise _Refused(ErrorCode.INVALID_REQUEST,
                           f"{_OP_NAMES[op]} operation is not allowed for the BROKER_LOGGER resource")
        if op not in (SET, DELETE):
            raise _Refused(ErrorCode.UNKNOWN_SERVER_ERROR, None)
        if not loggers.exists(logger):
            raise _Refused(ErrorCode.INVALID_CONFIG, f"Logger {logger} does not exist!")
        if op == SET and value not in VALID_LEVELS:
            raise _Refused(ErrorCode.INVALID_CONFIG,
                           f"Cannot set the log level of {logger} to {value} as it is not a supported log level. "
                           f"Valid log levels are {', '.join(VALID_LEVELS)}")
        if op == DELETE and logger == ROOT_LOGGER:
            raise _Refused(ErrorCode.INVALID_REQUEST, "Removing the log level of the root logger is not allowed")
    if validate_only:
        return
    for logger, op, value in ops:
        if op == SET:
            assert value is not None
            loggers.set_level(logger, value)
        else:
            loggers.reset(logger)


def _check_client_metrics(configs: dict[str, str]) -> None:
    """Kafka 4.4's ClientMetricsConfigs checks and words: unknown names INVALID_REQUEST, a value its type does
    not parse INVALID_CONFIG, interval.ms out of 100-3600000 INVALID_REQUEST, a `match` entry that is not
    `<client selector>=<regular expression>` INVALID_CONFIG."""
    for key, value in configs.items():
        spec = CLIENT_METRICS_CONFIGS.get(key)
        if spec is None:
            raise _Refused(ErrorCode.INVALID_REQUEST, f"Unknown client metrics configuration: {key}")
        try:
            spec.validate(value)
        except InvalidConfig as e:
            raise _Refused(ErrorCode.INVALID_CONFIG, str(e)) from None
    interval = configs.get("interval.ms")
    if interval is not None and not 100 <= int(interval.strip()) <= 3_600_000:
        raise _Refused(ErrorCode.INVALID_REQUEST,
                       f"Invalid value {interval.strip()} for interval.ms, interval must be between 100 and 3600000 "
                       "(1 hour)")
    for entry in _list_value(configs.get("match")):
        if not valid_client_match(entry):
            raise _Refused(ErrorCode.INVALID_CONFIG, f"Illegal client matching pattern: {entry.strip()}")


def _alter_client_metrics(ctx: RequestContext, name: str, ops: list[tuple[str, int, str | None]], *,
                          incremental: bool, validate_only: bool) -> None:
    """A client metrics subscription's configs set, deleted or (AlterConfigs) replaced; one left without
    configs no longer exists (ListConfigResources stops listing it), as in Kafka."""
    if name == "":
        raise _Refused(ErrorCode.INVALID_REQUEST, "Subscription name can't be empty")
    current = ctx.cluster.client_metrics.get(name, {})
    if incremental:
        for key, op, value in ops:
            if op == SET and value is None:
                raise _Refused(ErrorCode.INVALID_REQUEST, f"Null value not supported for : {key}")
            if op in (APPEND, SUBTRACT):  # Kafka's words, though `metrics` and `match` are lists
                raise _Refused(ErrorCode.INVALID_CONFIG,
                               f"Can't {_OP_NAMES[op]} to key {key} because its type is not LIST.")
        new = _apply(current, ops, topic=True, specs=CLIENT_METRICS_CONFIGS, defaults={})
    else:
        new = _replace(ops)
    _check_client_metrics(new)
    new = {k: ",".join(p.strip() for p in v.split(",")) if CLIENT_METRICS_CONFIGS[k].type == ConfigType.LIST
           else v for k, v in new.items()}  # stored as Kafka parses a LIST: entries trimmed
    if validate_only:
        return
    if new:
        ctx.cluster.client_metrics[name] = new
        ctx.cluster.client_telemetry.subscriptions_changed()  # clients learn it at their next request
    elif ctx.cluster.client_metrics.pop(name, None) is not None:
        ctx.cluster.client_telemetry.subscriptions_changed()


def _replace(ops: list[tuple[str, int, str | None]]) -> dict[str, str]:
    """AlterConfigs' whole new config set (what it does not name is removed)."""
    out = {}
    for name, _, value in ops:
        if value is None:
            raise _Refused(ErrorCode.INVALID_REQUEST, f"Null value not supported for : {name}")
        out[name] = value
    return out


def _alter_all(ctx: RequestContext, resources: list[Any], *, incremental: bool,
               validate_only: bool) -> list[dict[str, Any]]:
    keys = [(r.resource_type, r.resource_name) for r in resources]
    release = ctx.cluster.config.release
    if release is not None and release.zookeeper and any(_unknown_to_release(ctx, r.resource_type)
                                                         for r in resources):
        # 2.8's KafkaApis throws for the whole request, naming the type as its enum does (UNKNOWN)
        return [{"error_code": ErrorCode.INVALID_REQUEST, "error_message": "Unexpected resource type UNKNOWN",
                 "resource_type": r.resource_type, "resource_name": r.resource_name} for r in resources]
    out = []
    for r in resources:
        code, message = ErrorCode.NONE, None
        ops = [(c.name, c.config_operation if incremental else SET, c.value) for c in r.configs]
        try:
            if keys.count((r.resource_type, r.resource_name)) > 1:
                raise _Refused(ErrorCode.INVALID_REQUEST, "Each resource must appear at most once.")
            refused = _config_authorized(ctx, AclOperation.ALTER_CONFIGS, r.resource_type, r.resource_name)
            if refused is not None:
                raise _Refused(*refused)
            _alter(ctx, r.resource_type, r.resource_name, ops, incremental=incremental, validate_only=validate_only)
        except _Refused as e:
            code, message = e.code, e.message
        out.append({"error_code": code, "error_message": message, "resource_type": r.resource_type,
                    "resource_name": r.resource_name})
    return out


def alter_configs_error_response(ctx: ErrorContext, req: Container, code: ErrorCode) -> dict[str, Any]:
    """An injected error for every resource (there is no top-level error code)."""
    return {"throttle_time_ms": 0, "responses": [
        {"error_code": code, "error_message": None, "resource_type": r.resource_type,
         "resource_name": r.resource_name} for r in req.resources]}


@handles(ApiKey.INCREMENTAL_ALTER_CONFIGS, 0, 1, errors=alter_configs_error_response)
def handle_incremental_alter_configs(ctx: RequestContext, req: Container) -> dict[str, Any]:
    """IncrementalAlterConfigs (key 44), v0-1: SET/DELETE/APPEND/SUBTRACT on topic and broker configs."""
    return {"throttle_time_ms": 0, "responses": _alter_all(ctx, req.resources, incremental=True,
                                                           validate_only=req.validate_only)}


@handles(ApiKey.ALTER_CONFIGS, 0, 2, errors=alter_configs_error_response)
def handle_alter_configs(ctx: RequestContext, req: Container) -> dict[str, Any]:
    """AlterConfigs (key 33), v0-2: each resource's whole dynamic config set replaced."""
    return {"throttle_time_ms": 0, "responses": _alter_all(ctx, req.resources, incremental=False,
                                                           validate_only=req.validate_only)}


LISTED_TYPES = (CLIENT_METRICS, BROKER_LOGGER, BROKER, TOPIC, GROUP)
"""ListConfigResources v1's resource types, in the order Kafka 4.4 lists them."""


@handles(ApiKey.LIST_CONFIG_RESOURCES, 0, 1)
def handle_list_config_resources(ctx: RequestContext, req: Container) -> dict[str, Any]:
    """ListConfigResources (key 74, ListClientMetricsResources before Kafka 4.1), v0-1: v0 lists the client
    metrics subscriptions; v1 the config resources of the types asked for (none: every type), as Kafka 4.4:
    every topic (internal ones too), each live broker's id for BROKER and BROKER_LOGGER (compared with a
    one-node Kafka only), the subscriptions, and groups with configs of their own. A type it does not list is
    UNSUPPORTED_VERSION; without DESCRIBE_CONFIGS on the cluster, CLUSTER_AUTHORIZATION_FAILED."""
    if not authorize_cluster(ctx, AclOperation.DESCRIBE_CONFIGS):
        return {"throttle_time_ms": 0, "error_code": ErrorCode.CLUSTER_AUTHORIZATION_FAILED, "config_resources": []}
    cluster = ctx.cluster
    types = list(req.get("resource_types") or []) if ctx.version >= 1 else [CLIENT_METRICS]
    if any(t not in LISTED_TYPES for t in types):
        return {"throttle_time_ms": 0, "error_code": ErrorCode.UNSUPPORTED_VERSION, "config_resources": []}
    wanted = set(types or LISTED_TYPES)
    brokers = [str(b.node_id) for b in cluster.alive_brokers()]
    names: dict[int, list[str]] = {CLIENT_METRICS: sorted(cluster.client_metrics), BROKER_LOGGER: brokers,
                                   BROKER: brokers, TOPIC: sorted(cluster.topics),
                                   GROUP: sorted(g for g, c in cluster.group_configs.items() if c)}
    return {"throttle_time_ms": 0, "error_code": ErrorCode.NONE, "config_resources": [
        {"resource_name": n, "resource_type": t} for t in LISTED_TYPES if t in wanted for n in names[t]]}
