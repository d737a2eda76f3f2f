"""The options of Spark's Kafka connector (spark-sql-kafka-0-10), parsed and checked the way it does.

Pure Python, no pyspark: the data source classes in `datasource.py` call these on the driver so a wrong
option fails when the query is planned, with the connector's wording where it has one. Every option the
connector knows is either implemented here or rejected by name; an option it does not know is rejected
too (Spark would silently ignore a typo such as `startingOffset`, a test should not).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Literal

__all__ = ["OffsetSpec", "OptionError", "SinkOptions", "SourceOptions", "Strategy", "TopicPartition",
           "parse_sink_options", "parse_source_options", "parse_time_ms"]

TopicPartition = tuple[str, int]
EARLIEST = -2
LATEST = -1

# lower-case names, as pyspark hands them over (its CaseInsensitiveDict lower-cases keys)
_STRATEGIES = ("assign", "subscribe", "subscribepattern")
_SOURCE_ONLY = {
    "startingoffsets", "endingoffsets", "startingoffsetsbytimestamp", "endingoffsetsbytimestamp",
    "startingtimestamp", "endingtimestamp", "startingoffsetsbytimestampstrategy", "failondataloss",
    "minpartitions", "maxrecordsperpartition", "maxoffsetspertrigger", "minoffsetspertrigger", "maxtriggerdelay",
    "fetchoffset.numretries", "fetchoffset.retryintervalms", "kafkaconsumer.polltimeoutms", "groupidprefix",
    "includeheaders", *_STRATEGIES,
}
_SINK_ONLY = {"topic"}
KNOWN_OPTIONS = frozenset(_SOURCE_ONLY | _SINK_ONLY)
# options Spark's engine itself reads and hands to every streaming sink along with the sink's own
_ENGINE_OPTIONS = frozenset({"checkpointlocation"})

# Kafka client settings the connector refuses, with its reasons
_REFUSED_CONSUMER = {
    "auto.offset.reset": "Instead set the source option 'startingoffsets' to 'earliest' or 'latest' to specify where "
                         "to start. Structured Streaming manages which offsets are consumed internally",
    "key.deserializer": "keys are deserialized as byte arrays. Use DataFrame operations to explicitly deserialize "
                        "the keys",
    "value.deserializer": "values are deserialized as byte arrays. Use DataFrame operations to explicitly "
                          "deserialize the values",
    "enable.auto.commit": "the query, not the consumer, tracks offsets (in its checkpoint)",
    "interceptor.classes": "interceptors can modify payload, so not safe",
}
_REFUSED_PRODUCER = {
    "key.serializer": "keys are serialized as byte arrays (a string key is encoded as UTF-8)",
    "value.serializer": "values are serialized as byte arrays (a string value is encoded as UTF-8)",
}


class OptionError(ValueError):
    """A Kafka source or sink option is missing, malformed or not supported (Spark raises
    IllegalArgumentException for these)."""


@dataclass(frozen=True)
class Strategy:
    """Which partitions the source reads: `subscribe` (topics), `subscribePattern` (a Java regex matched
    against whole topic names) or `assign` (fixed partitions)."""
    kind: Literal["subscribe", "subscribepattern", "assign"]
    topics: tuple[str, ...] = ()
    pattern: str = ""
    partitions: tuple[TopicPartition, ...] = ()

    def describe(self) -> str:
        if self.kind == "subscribe":
            return f"subscribe={','.join(self.topics)}"
        if self.kind == "subscribepattern":
            return f"subscribePattern={self.pattern}"
        return f"assign={_partitions_json(self.partitions)}"


@dataclass(frozen=True)
class OffsetSpec:
    """Where a read starts or ends, before it is resolved against the brokers.

    kind: earliest | latest | offsets (per partition, -2 earliest, -1 latest) | timestamp (one for every
    partition) | timestamps (per partition). `on_no_match` is startingOffsetsByTimestampStrategy: what a
    starting timestamp later than every record resolves to ("error" or "latest")."""
    kind: Literal["earliest", "latest", "offsets", "timestamp", "timestamps"]
    offsets: Mapping[TopicPartition, int] = field(default_factory=dict)
    timestamp: int = 0
    on_no_match: Literal["error", "latest"] = "error"


@dataclass(frozen=True)
class SourceOptions:
    strategy: Strategy
    starting: OffsetSpec
    ending: OffsetSpec | None  # batch only
    fail_on_data_loss: bool
    include_headers: bool
    min_partitions: int | None
    max_records_per_partition: int | None
    max_offsets_per_trigger: int | None
    min_offsets_per_trigger: int | None
    max_trigger_delay_ms: int
    fetch_offset_num_retries: int
    fetch_offset_retry_interval_ms: int
    poll_timeout_ms: int
    group_id_prefix: str | None
    kafka: dict[str, str]  # client settings, without the "kafka." prefix
    notes: tuple[str, ...] = ()  # warnings Spark logs for these options (ignored options, a fixed group.id)


@dataclass(frozen=True)
class SinkOptions:
    topic: str | None
    kafka: dict[str, str]


def _lower(options: Mapping[str, str]) -> dict[str, str]:
    return {str(k).lower(): str(v) for k, v in options.items() if v is not None}


def _split(options: dict[str, str], what: str, allowed: set[str] | frozenset[str]) -> dict[str, str]:
    """The `kafka.` settings (prefix stripped); rejects any other option Spark's connector does not know."""
    kafka: dict[str, str] = {}
    for key, value in options.items():
        if key.startswith("kafka."):
            kafka[key[len("kafka."):]] = value
        elif key not in allowed:
            raise OptionError(
                f"Kafka {what} option '{key}' is not an option of Spark's Kafka connector (spark-sql-kafka-0-10), "
                f"so fakekafka's fallback does not accept it either. Known options: "
                f"{', '.join(sorted(allowed))}, and kafka.* for the Kafka client")
    if not kafka.get("bootstrap.servers"):
        raise OptionError("Option 'kafka.bootstrap.servers' must be specified for configuring Kafka "
                          + ("consumer" if what == "source" else "producer"))
    return kafka


def _bool(options: dict[str, str], key: str, default: bool) -> bool:
    value = options.get(key)
    if value is None:
        return default
    if value.strip().lower() not in ("true", "false"):
        raise OptionError(f"option '{key}' must be true or false, got {value!r}")
    return value.strip().lower() == "true"


def _int(options: dict[str, str], key: str, *, positive: bool = False) -> int | None:
    value = options.get(key)
    if value is None:
        return None
    try:
        n = int(value.strip())
    except ValueError:
        raise OptionError(f"option '{key}' must be an integer, got {value!r}") from None
    if positive and n <= 0:
        raise OptionError(f"{key} must be positive")
    return n


def _default(value: int | None, default: int) -> int:
    return default if value is None else value


_TIME_UNITS = {"us": 0.001, "ms": 1, "s": 1000, "m": 60_000, "min": 60_000, "h": 3_600_000, "d": 86_400_000}


def parse_time_ms(text: str) -> int:
    """A Spark time string ("15m", "10s", "500ms", "1h"; a bare number is milliseconds) in milliseconds."""
    m = re.fullmatch(r"\s*(-?\d+)\s*([a-z]*)\s*", text.lower())
    if not m or (m.group(2) and m.group(2) not in _TIME_UNITS):
        raise OptionError(f"invalid time string {text!r} (expected e.g. 15m, 10s, 500ms)")
    return int(int(m.group(1)) * _TIME_UNITS[m.group(2) or "ms"])


def _json_object(text: str, key: str) -> dict:
    try:
        value = json.loads(text)
    except ValueError:
        value = None
    if not isinstance(value, dict):
        raise OptionError(f"Expected e.g. {{\"topicA\":{{\"0\":23,\"1\":-1}},\"topicB\":{{\"0\":-2}}}} for option "
                          f"'{key}', got {text}")
    return value


def _partition_values(text: str, key: str) -> dict[TopicPartition, int]:
    """{"t":{"0":23,"1":-1}} -> {("t", 0): 23, ("t", 1): -1}"""
    out: dict[TopicPartition, int] = {}
    for topic, parts in _json_object(text, key).items():
        if not isinstance(parts, dict):
            raise OptionError(f"Expected e.g. {{\"topicA\":{{\"0\":23,\"1\":-1}}}} for option '{key}', got {text}")
        for p, v in parts.items():
            try:
                out[(topic, int(p))] = int(v)
            except (TypeError, ValueError):
                raise OptionError(f"option '{key}': partition {p!r} of topic {topic!r} needs an integer "
                                  f"partition and value, got {v!r}") from None
    return out


def _partitions_json(tps: tuple[TopicPartition, ...]) -> str:
    by_topic: dict[str, list[int]] = {}
    for t, p in tps:
        by_topic.setdefault(t, []).append(p)
    return json.dumps(by_topic, separators=(",", ":"))


def _strategy(options: dict[str, str]) -> Strategy:
    given = [k for k in _STRATEGIES if k in options]
    if not given:  # in the connector's order of the names
        raise OptionError("One of the following options must be specified for Kafka source: "
                          "subscribe, subscribepattern, assign. See the docs for more details.")
    if len(given) > 1:
        raise OptionError("Only one of the following options can be specified for Kafka source: "
                          f"{', '.join(_STRATEGIES)}. See the docs for more details.")
    kind = given[0]
    value = options[kind]
    if kind == "assign":
        if not value.strip().startswith("{"):
            raise OptionError(f"No topicpartitions to assign as specified value for option 'assign' is '{value}'")
        try:
            parsed = json.loads(value)
            tps = tuple((t, int(p)) for t, ps in parsed.items() for p in ps)
        except (ValueError, TypeError, AttributeError):
            raise OptionError(f"Expected e.g. {{\"topicA\":[0,1],\"topicB\":[0,1]}} for option 'assign', "
                              f"got {value}") from None
        return Strategy("assign", partitions=tps)
    if kind == "subscribe":
        topics = tuple(t.strip() for t in value.split(",") if t.strip())
        if not topics:
            raise OptionError(f"No topics to subscribe to as specified value for option 'subscribe' is '{value}'")
        return Strategy("subscribe", topics=topics)
    if not value.strip():
        raise OptionError(f"Pattern to subscribe is empty as specified value for option 'subscribePattern' is "
                          f"'{value}'")
    try:
        re.compile(value.strip())
    except re.error as e:
        raise OptionError(f"subscribePattern {value!r} is not a valid regular expression: {e}") from None
    return Strategy("subscribepattern", pattern=value.strip())


def _offset_spec(options: dict[str, str], prefix: Literal["starting", "ending"], default: str) -> OffsetSpec:
    """Spark's order of preference: <prefix>Timestamp, then <prefix>OffsetsByTimestamp, then <prefix>Offsets."""
    strategy = options.get("startingoffsetsbytimestampstrategy", "error").strip().lower()
    if strategy not in ("error", "latest"):
        raise OptionError(f"startingOffsetsByTimestampStrategy must be 'error' or 'latest', got {strategy!r}")
    on_no_match: Literal["error", "latest"] = "latest" if strategy == "latest" else "error"
    if f"{prefix}timestamp" in options:
        text = options[f"{prefix}timestamp"].strip()
        try:
            return OffsetSpec("timestamp", timestamp=int(text), on_no_match=on_no_match)
        except ValueError:
            raise OptionError(f"Expected a single long value, got {text}") from None
    if f"{prefix}offsetsbytimestamp" in options:
        key = f"{prefix}offsetsbytimestamp"
        return OffsetSpec("timestamps", offsets=_partition_values(options[key], key), on_no_match=on_no_match)
    text = options.get(f"{prefix}offsets", default).strip()
    if text.lower() in ("earliest", "latest"):
        return OffsetSpec("earliest" if text.lower() == "earliest" else "latest")
    key = f"{prefix}offsets"
    return OffsetSpec("offsets", offsets=_partition_values(text, key))


def _kafka_consumer_settings(kafka: dict[str, str]) -> None:
    for name, why in _REFUSED_CONSUMER.items():
        if name in kafka:
            raise OptionError(f"Kafka option '{name}' is not supported: {why}")


def parse_source_options(options: Mapping[str, str], *, streaming: bool) -> SourceOptions:
    """Checks a Kafka source's options as Spark's KafkaSourceProvider does (validateStreamOptions /
    validateBatchOptions) and returns them parsed."""
    opts = _lower(options)
    kafka = _split(opts, "source", KNOWN_OPTIONS)
    strategy = _strategy(opts)
    _kafka_consumer_settings(kafka)
    notes: list[str] = []
    if streaming:
        if "endingoffsets" in opts:
            raise OptionError("ending offset not valid in streaming queries")
        if "endingoffsetsbytimestamp" in opts or "endingtimestamp" in opts:
            raise OptionError("ending timestamp not valid in streaming queries")
    starting = _offset_spec(opts, "starting", "latest" if streaming else "earliest")
    ending = None
    if not streaming:
        if starting.kind == "latest":
            raise OptionError("starting offset can't be latest for batch queries on Kafka")
        if starting.kind == "offsets":
            for (t, p), off in starting.offsets.items():
                if off == LATEST:
                    raise OptionError(f"startingOffsets for {t}-{p} can't be latest for batch queries on Kafka")
        ending = _offset_spec(opts, "ending", "latest")
        if ending.kind == "earliest":
            raise OptionError("ending offset can't be earliest for batch queries on Kafka")
        if ending.kind == "offsets":
            for (t, p), off in ending.offsets.items():
                if off == EARLIEST:
                    raise OptionError(f"ending offset for {t}-{p} can't be earliest for batch queries on Kafka")
        _check_start_before_end(starting, ending)
        for key in ("maxoffsetspertrigger", "minoffsetspertrigger", "maxtriggerdelay"):
            if key in opts:
                notes.append(f"{key} option ignored in batch queries")
    min_partitions = _int(opts, "minpartitions", positive=True)
    max_records = _int(opts, "maxrecordsperpartition", positive=True)
    max_per_trigger = _int(opts, "maxoffsetspertrigger", positive=True)
    min_per_trigger = _int(opts, "minoffsetspertrigger", positive=True)
    if min_per_trigger is not None and max_per_trigger is not None and min_per_trigger > max_per_trigger:
        raise OptionError(f"The value of minOffsetPerTrigger({min_per_trigger}) is higher than the "
                          f"maxOffsetsPerTrigger({max_per_trigger}).")
    if "group.id" in kafka:
        notes.append("Kafka option 'kafka.group.id' has been set on this query; every consumer of the query uses "
                     "it as is (not recommended: queries sharing a group id interfere with each other)")
        if "groupidprefix" in opts:
            notes.append("Option groupIdPrefix will be ignored as option kafka.group.id has been set.")
    return SourceOptions(
        strategy=strategy, starting=starting, ending=ending,
        fail_on_data_loss=_bool(opts, "failondataloss", True),
        include_headers=_bool(opts, "includeheaders", False),
        min_partitions=min_partitions, max_records_per_partition=max_records,
        max_offsets_per_trigger=max_per_trigger, min_offsets_per_trigger=min_per_trigger,
        max_trigger_delay_ms=parse_time_ms(opts.get("maxtriggerdelay", "15m")),
        fetch_offset_num_retries=_default(_int(opts, "fetchoffset.numretries"), 3),
        fetch_offset_retry_interval_ms=_default(_int(opts, "fetchoffset.retryintervalms"), 1000),
        poll_timeout_ms=_default(_int(opts, "kafkaconsumer.polltimeoutms", positive=True), 120_000),
        group_id_prefix=opts.get("groupidprefix"), kafka=kafka, notes=tuple(notes))


def _check_start_before_end(start: OffsetSpec, end: OffsetSpec) -> None:
    """Spark's checkOffsetLimitValidity: per-partition starts and ends name the same partitions, start <= end."""
    if start.kind != end.kind or start.kind not in ("offsets", "timestamps"):
        return
    if set(start.offsets) != set(end.offsets):
        raise OptionError(f"The specified start and end offsets name different partitions: start "
                          f"{sorted(start.offsets)}, end {sorted(end.offsets)}")
    for tp, s in start.offsets.items():
        e = end.offsets[tp]
        if s >= 0 and e >= 0 and s > e:
            what = "offset" if start.kind == "offsets" else "timestamp"
            raise OptionError(f"The specified starting {what} ({s}) is greater than ending {what} ({e}) for "
                              f"topic partition {tp[0]}-{tp[1]}")


def parse_sink_options(options: Mapping[str, str]) -> SinkOptions:
    """The Kafka sink's options: `topic` (overrides a topic column) and `kafka.*`. Source options are
    accepted and ignored, as Spark does, so one option map can serve both sides."""
    opts = _lower(options)
    kafka = _split(opts, "sink", KNOWN_OPTIONS | _ENGINE_OPTIONS)
    for name, why in _REFUSED_PRODUCER.items():
        if name in kafka:
            raise OptionError(f"Kafka option '{name}' is not supported as {why}")
    topic = opts.get("topic")
    return SinkOptions(topic=topic.strip() if topic is not None else None, kafka=kafka)
