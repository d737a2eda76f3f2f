"""DescribeConfigs (key 32), v1-4: Kafka's topic and broker defaults with their sources.

A topic config not set on the topic reports the broker's value for its synonym (DEFAULT_CONFIG, or
STATIC_BROKER_CONFIG when the broker was started with it set; min.insync.replicas is a cluster-level
dynamic config, as on a new Kafka 4.1+ cluster), with the synonym chain in v1+: every layer that has a
value, the one in force first, as Kafka's ConfigHelper lists them. Broker configs Kafka can change at run
time are read_only=False. The broker resource "" is the cluster-wide level: only the configs set there.
A resource described without error carries the error message "" (Kafka's).
Behaviour: configs are listed in name order (Kafka's order is its hash map's). Deliberate differences: a
BROKER_LOGGER resource describes no configs (there are no log4j loggers here to list or set); a
cluster on a frozen or custom clock lifts Kafka 4's one-hour limit on future record timestamps
(log.message.timestamp.after.max.ms, reported as a cluster-wide dynamic config), since its model time is
not the producers' wall-clock time; a broker resource lists the broker configs modelled here
(model/config.py's BROKER_CONFIGS: those a client or a test can observe), not Kafka's ~300 (listeners,
SSL, SASL, quotas, share groups, remote storage, controller settings...: `python -m compat diff` reports
them as missing, compat/KNOWN_DIFFERENCES.md "Wire fields").
"""

from __future__ import annotations

from typing import Any

from construct import Container

from fakekafka.handlers.registry import RequestContext, handles
from fakekafka.model.config import BROKER_CONFIGS, TOPIC_CONFIGS, ConfigSource
from wire import ErrorCode

TOPIC, BROKER, BROKER_LOGGER = 2, 4, 8


def _entry(name: str, value: str | None, source: ConfigSource, config_type: int, synonyms: list[dict[str, Any]],
           doc: str, *, read_only: bool) -> dict[str, Any]:
    return {"name": name, "value": value, "read_only": read_only, "config_source": source, "is_sensitive": False,
            "synonyms": synonyms, "config_type": config_type, "documentation": doc or None}


def _topic_configs(ctx: RequestContext, name: str, keys: list[str] | None, synonyms: bool) -> list[dict[str, Any]]:
    topic = ctx.cluster.topics[name]
    out = []
    for key in sorted(TOPIC_CONFIGS):
        if keys is not None and key not in keys:
            continue
        spec = TOPIC_CONFIGS[key]
        value, source, synonym = ctx.cluster.topic_config(topic, key)
        chain = []
        if synonyms:
            if source == ConfigSource.TOPIC_CONFIG:
                chain.append({"name": key, "value": value, "source": source})
            if synonym:
                chain += [{"name": n, "value": v, "source": s} for n, v, s in ctx.cluster.config.synonyms(synonym)]
        out.append(_entry(key, value, source, spec.type, chain, spec.documentation, read_only=False))
    return out


def _broker_configs(ctx: RequestContext, keys: list[str] | None, synonyms: bool,
                    cluster_level: bool) -> list[dict[str, Any]]:
    """One broker's configs, or (`cluster_level`, the resource named "") only the cluster-wide dynamic ones,
    each with only that layer in its synonyms, as Kafka describes the cluster default resource."""
    out = []
    names = [k for k in ctx.cluster.config.dynamic_defaults if k in BROKER_CONFIGS] if cluster_level else BROKER_CONFIGS
    for key in sorted(names):
        if keys is not None and key not in keys:
            continue
        spec = BROKER_CONFIGS[key]
        if cluster_level:
            layers = [(key, ctx.cluster.config.dynamic_defaults[key], ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG)]
        elif key in ("broker.id", "node.id"):
            layers = [(key, str(ctx.broker.node_id), ConfigSource.STATIC_BROKER_CONFIG)]
            if spec.default is not None:
                layers.append((key, spec.default, ConfigSource.DEFAULT_CONFIG))
        else:
            layers = ctx.cluster.config.synonyms(key)
        value, source = (layers[0][1], layers[0][2]) if layers else (None, ConfigSource.DEFAULT_CONFIG)
        chain = [{"name": n, "value": v, "source": s} for n, v, s in layers] if synonyms else []
        out.append(_entry(key, value, source, spec.type, chain, spec.documentation, read_only=not spec.dynamic))
    return out


def describe_configs_error_response(ctx: RequestContext, req: Container, code: ErrorCode) -> dict[str, Any]:
    """An injected error for every resource asked about (there is no top-level error code)."""
    return {"throttle_time_ms": 0, "results": [
        {"error_code": code, "error_message": None, "resource_type": r.resource_type,
         "resource_name": r.resource_name, "configs": []} for r in req.resources]}


@handles(32, 1, 4, errors=describe_configs_error_response)
def handle_describe_configs(ctx: RequestContext, req: Container) -> dict[str, Any]:
    results = []
    synonyms = bool(req.get("include_synonyms", False))
    for r in req.resources:
        keys = list(r.configuration_keys) if r.configuration_keys is not None else None
        code, message, configs = ErrorCode.NONE, "", []
        if r.resource_type == TOPIC:
            if r.resource_name not in ctx.cluster.topics:
                code, message = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"Topic '{r.resource_name}' does not exist."
            else:
                configs = _topic_configs(ctx, r.resource_name, keys, synonyms)
        elif r.resource_type == BROKER:
            if r.resource_name not in ("", str(ctx.broker.node_id)):
                code, message = ErrorCode.INVALID_REQUEST, \
                    f"Unexpected broker id, expected {ctx.broker.node_id} or empty string, but received " \
                    f"{r.resource_name}"
            else:
                configs = _broker_configs(ctx, keys, synonyms, cluster_level=r.resource_name == "")
        elif r.resource_type == BROKER_LOGGER:
            configs = []
        else:
            code, message = ErrorCode.INVALID_REQUEST, f"Unsupported resource type {r.resource_type}"
        results.append({"error_code": code, "error_message": message, "resource_type": r.resource_type,
                        "resource_name": r.resource_name, "configs": configs})
    return {"throttle_time_ms": 0, "results": results}
