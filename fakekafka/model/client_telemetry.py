"""Client telemetry (KIP-714): what Kafka 4.4's ClientMetricsManager does with GetTelemetrySubscriptions and
PushTelemetry, as pure state on the cluster's clock.

A client asks a broker for its subscription: the CLIENT_METRICS resources whose `match` selects it (all of them
when a resource has no `match`) give the metric name prefixes it should push (their union, or just `*` when one
says `*`) and the push interval (the smallest `interval.ms`, 5 minutes without one). The broker answers a
subscription id, the CRC32C of the metric list as Java prints the set plus the interval, xor the client instance
id's hash: a push carrying another id (the subscriptions changed since) gets UNKNOWN_SUBSCRIPTION_ID and the
client asks again. A client instance is kept per broker until its connection closes or it has been quiet for
max(60 s, 3 push intervals). Pushes come at most once per interval (a push right after a subscription request
is taken whatever the interval, for the client's jitter); one too early gets THROTTLING_QUOTA_EXCEEDED, unless
it is the client's terminating push. After a terminating push the instance takes no more pushes
(INVALID_REQUEST). A push larger than `telemetry.max.bytes` gets TELEMETRY_TOO_LARGE, a compression type Kafka
does not know UNSUPPORTED_COMPRESSION_TYPE. What the client pushed goes to the receiver (Kafka's metrics reporter
implementing ClientTelemetry; here the cluster's own, which decodes the OTLP metrics and keeps them to be read by
tests): a payload it cannot decompress or decode is answered INVALID_RECORD, as Kafka answers a receiver's
failure.
"""

from __future__ import annotations

import uuid
from collections import deque
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

import crc32c

from fakekafka.model.clock import Clock
from fakekafka.model.internal_topics import java_hash_set_order
from fakekafka.model.otlp import MetricPoint, check_metrics, decode_metrics, decompress_metrics
from fakekafka.wire import ErrorCode
from fakekafka.wire.records import Compression

__all__ = [
    "ACCEPTED_COMPRESSION_TYPES",
    "CACHE_EXPIRY_MS",
    "DEFAULT_INTERVAL_MS",
    "ClientInfo",
    "ClientTelemetry",
    "Subscription",
    "TelemetryPush",
    "subscription_id",
]

ACCEPTED_COMPRESSION_TYPES = (Compression.ZSTD, Compression.LZ4, Compression.GZIP, Compression.SNAPPY)
"""What GetTelemetrySubscriptions offers, in Kafka's order (the client takes the first it can do)."""
DEFAULT_INTERVAL_MS = 300_000
"""A client no subscription selects (or whose subscriptions set no `interval.ms`) asks again after 5 minutes."""
CACHE_EXPIRY_MS = 60_000
"""A client instance is forgotten after max(this, 3 push intervals) without a request."""
RESERVED_IDS = frozenset({uuid.UUID(int=0), uuid.UUID(int=1)})
"""Kafka's Uuid.RESERVED: no client instance id."""
MAX_KEPT_PUSHES = 10_000
"""Decoded pushes kept for tests to read, oldest dropped first (a long-running `serve` stays bounded)."""


@dataclass(frozen=True)
class ClientInfo:
    """What a `match` selects on (Kafka's client selectors), from the request and its connection."""

    client_id: str | None
    software_name: str | None
    software_version: str | None
    source_address: str | None
    source_port: str | None

    def selectors(self, instance_id: uuid.UUID) -> dict[str, str | None]:
        return {
            "client_instance_id": str(instance_id),
            "client_id": self.client_id,
            "client_software_name": self.software_name,
            "client_software_version": self.software_version,
            "client_source_address": self.source_address,
            "client_source_port": self.source_port,
        }


@dataclass(frozen=True)
class Subscription:
    """GetTelemetrySubscriptions' answer (error NONE) or its refusal (the other fields then unset)."""

    error: ErrorCode
    message: str | None = None
    client_instance_id: uuid.UUID = uuid.UUID(int=0)
    subscription_id: int = 0
    requested_metrics: tuple[str, ...] = ()
    push_interval_ms: int = 0
    telemetry_max_bytes: int = 0
    accepted_compression_types: tuple[int, ...] = ()
    delta_temporality: bool = False


@dataclass(frozen=True)
class TelemetryPush:
    """One accepted push with metrics: who pushed, when, and (decoded when first read) the metric points it
    carried and its resource attributes."""

    client_instance_id: uuid.UUID
    broker: int
    time_ms: int
    client_id: str | None
    client_software_name: str | None
    client_software_version: str | None
    subscription_id: int
    terminating: bool
    compression: str
    data: bytes = field(repr=False)
    """The OTLP MetricsData as pushed, decompressed (checked to parse when pushed)."""

    @cached_property
    def _decoded(self) -> tuple[dict[str, Any], tuple[MetricPoint, ...]]:
        return decode_metrics(self.data)

    @property
    def resource(self) -> dict[str, Any]:
        """The push's resource attributes."""
        return self._decoded[0]

    @property
    def metrics(self) -> tuple[MetricPoint, ...]:
        """Every data point of every metric pushed, in the push's order."""
        return self._decoded[1]

    def names(self) -> set[str]:
        """The metric names this push carried."""
        return {m.name for m in self.metrics}

    def value(self, name: str) -> float | int | None:
        """The (first) data point's value of the metric named `name` in this push (None: not pushed)."""
        return next((m.value for m in self.metrics if m.name == name), None)


@dataclass
class _Instance:
    instance_id: uuid.UUID
    info: ClientInfo
    subscription_id: int
    version: int
    metrics: tuple[str, ...]
    interval_ms: int
    last_get_ms: int = 0
    last_push_ms: int = 0
    terminating: bool = False
    last_error: ErrorCode = ErrorCode.NONE
    expires_ms: int = 0


def java_uuid_hash(u: uuid.UUID) -> int:
    """Kafka's Uuid.hashCode: the two halves xored, then the two ints of that xored."""
    x = (u.int >> 64) ^ (u.int & 0xFFFFFFFFFFFFFFFF)
    return ((x >> 32) ^ x) & 0xFFFFFFFF


def subscription_id(metrics: list[str], interval_ms: int, instance_id: uuid.UUID) -> int:
    """Kafka's subscription id: CRC32C of the metric set as Java prints it ("[a, b]") followed by the push
    interval, xor the client instance id's hash, as a signed 32-bit int."""
    text = "[" + ", ".join(metrics) + "]" + str(interval_ms)
    v = (crc32c.crc32c(text.encode()) ^ java_uuid_hash(instance_id)) & 0xFFFFFFFF
    return v - (1 << 32) if v & 0x80000000 else v


def _list(value: str | None) -> list[str]:
    return [p.strip() for p in (value or "").split(",") if p.strip()]


def _matches(match: list[str], selectors: Mapping[str, str | None]) -> bool:
    """Every `selector=regex` of a subscription's `match` fully matches the client's value (no entries: all)."""
    import re

    for entry in match:
        name, _, pattern = entry.partition("=")
        value = selectors.get(name.strip())
        try:
            if value is None or re.fullmatch(pattern.strip(), value) is None:
                return False
        except re.error:  # refused when set; kept from an older data dir, it selects nothing
            return False
    return True


@dataclass
class ClientTelemetry:
    """The cluster's client telemetry: subscriptions answered from the CLIENT_METRICS resources, pushes
    checked and decoded (see the module's docstring)."""

    clock: Clock
    subscriptions: Callable[[], Mapping[str, Mapping[str, str]]]
    """The CLIENT_METRICS resources: name -> `metrics`, `interval.ms`, `match` (those set)."""
    max_bytes: Callable[[], int]
    """`telemetry.max.bytes`: the most a push's (compressed) metrics may be."""
    receiving: Callable[[int], bool] = lambda _: True
    """Whether broker N's receiver takes pushes (client telemetry on there): off, Kafka still answers both APIs (it
    only leaves them out of ApiVersions) and decompresses a push, but nothing decodes or keeps it."""
    new_id: Callable[[], uuid.UUID] = uuid.uuid4
    pushes: deque[TelemetryPush] = field(default_factory=lambda: deque(maxlen=MAX_KEPT_PUSHES))
    """Accepted pushes with metrics, decoded, oldest first."""
    version: int = 0
    """Bumped by every change of a subscription: an instance made before it is made again at its next request."""
    _instances: dict[tuple[int, uuid.UUID], _Instance] = field(default_factory=dict)
    _by_connection: dict[tuple[int, object], uuid.UUID] = field(default_factory=dict)

    def subscriptions_changed(self) -> None:
        self.version += 1

    def connection_closed(self, broker: int, connection: object) -> None:
        """Kafka forgets the instance last seen on a connection when it closes."""
        instance_id = self._by_connection.pop((broker, connection), None)
        if instance_id is not None:
            self._instances.pop((broker, instance_id), None)

    def instance_ids(self) -> list[uuid.UUID]:
        """The client instances the brokers know now (expired ones left out)."""
        now = self.clock.now_ms()
        return list(dict.fromkeys(i.instance_id for i in self._instances.values() if i.expires_ms > now))

    def get_subscriptions(
        self, broker: int, instance_id: uuid.UUID | None, info: ClientInfo, connection: object
    ) -> Subscription:
        """GetTelemetrySubscriptions: a zero id asks for a new one; an instance asking again before its push
        interval is throttled, unless its last push failed on its subscription id or compression."""
        now = self.clock.now_ms()
        if instance_id is None or instance_id == uuid.UUID(int=0):
            instance_id = self._fresh_id(broker)
        inst = self._instance(broker, instance_id, info, connection, now)
        if now - max(inst.last_get_ms, inst.last_push_ms) >= inst.interval_ms:
            inst.last_get_ms = now
        elif inst.last_error not in (ErrorCode.UNKNOWN_SUBSCRIPTION_ID, ErrorCode.UNSUPPORTED_COMPRESSION_TYPE):
            return Subscription(
                ErrorCode.THROTTLING_QUOTA_EXCEEDED,
                f"Request from the client [{instance_id}] arrived before the next push interval time",
            )
        inst.last_error = ErrorCode.NONE
        return Subscription(
            ErrorCode.NONE,
            None,
            instance_id,
            inst.subscription_id,
            inst.metrics,
            inst.interval_ms,
            self.max_bytes(),
            tuple(int(c) for c in ACCEPTED_COMPRESSION_TYPES),
            True,
        )

    def push(
        self,
        broker: int,
        instance_id: uuid.UUID,
        subscription: int,
        terminating: bool,
        compression: int,
        metrics: bytes,
        info: ClientInfo,
        connection: object,
    ) -> tuple[ErrorCode, str | None]:
        """PushTelemetry: checked in Kafka's order, then the metrics decoded and kept."""
        if instance_id in RESERVED_IDS:
            return (
                ErrorCode.INVALID_REQUEST,
                f"Invalid request from the client [{instance_id}], invalid client instance id",
            )
        now = self.clock.now_ms()
        inst = self._instance(broker, instance_id, info, connection, now)
        try:
            error, message = self._check_push(inst, subscription, terminating, compression, len(metrics), now)
        finally:
            inst.terminating = terminating
        if error != ErrorCode.NONE:
            inst.last_error = error
            return error, message
        if metrics:
            codec = Compression(compression)
            try:  # Kafka decompresses a push whether or not a receiver takes it
                raw = decompress_metrics(codec, metrics, self.max_bytes())
                if not self.receiving(broker):
                    inst.last_error = ErrorCode.NONE
                    return ErrorCode.NONE, None
                check_metrics(raw)  # decoded when a test reads it: a push costs a parse, not a decode
            except ValueError as e:
                inst.last_error = ErrorCode.INVALID_RECORD
                return ErrorCode.INVALID_RECORD, f"Error exporting client metrics: {e}"
            self.pushes.append(
                TelemetryPush(
                    instance_id,
                    broker,
                    now,
                    info.client_id,
                    info.software_name,
                    info.software_version,
                    subscription,
                    terminating,
                    codec.name.lower(),
                    raw,
                )
            )
        inst.last_error = ErrorCode.NONE
        return ErrorCode.NONE, None

    def _check_push(
        self, inst: _Instance, subscription: int, terminating: bool, compression: int, size: int, now: int
    ) -> tuple[ErrorCode, str | None]:
        who = inst.instance_id
        if inst.terminating:
            return ErrorCode.INVALID_REQUEST, (
                f"Client [{who}] sent the previous request with state terminating to "
                "TRUE, can not acceptany requests after that"
            )
        accept = inst.last_get_ms > inst.last_push_ms or now - inst.last_push_ms >= inst.interval_ms
        if accept:
            inst.last_push_ms = now
        elif not terminating:
            return (
                ErrorCode.THROTTLING_QUOTA_EXCEEDED,
                f"Request from the client [{who}] arrived before the next push interval time",
            )
        if subscription != inst.subscription_id:
            return ErrorCode.UNKNOWN_SUBSCRIPTION_ID, f"Unknown client subscription id for the client [{who}]"
        if compression not in set(Compression):
            return (
                ErrorCode.UNSUPPORTED_COMPRESSION_TYPE,
                f"Unknown compression type [{compression}] is received in telemetry request from [{who}]",
            )
        limit = self.max_bytes()
        if size > limit:
            return (
                ErrorCode.TELEMETRY_TOO_LARGE,
                f"Telemetry request from [{who}] is larger than the maximum allowed size [{limit}]",
            )
        return ErrorCode.NONE, None

    def _fresh_id(self, broker: int) -> uuid.UUID:
        while True:
            new = self.new_id()
            if (broker, new) not in self._instances and new not in RESERVED_IDS:
                return new

    def _instance(
        self, broker: int, instance_id: uuid.UUID, info: ClientInfo, connection: object, now: int
    ) -> _Instance:
        """The instance as Kafka's cache has it: made at its first request, made again (timestamps reset) when a
        subscription changed since, forgotten once expired; its expiry pushed back by this request."""
        key = (broker, instance_id)
        inst = self._instances.get(key)
        if inst is not None and inst.expires_ms <= now:
            inst = None
        if inst is None or inst.version < self.version:
            inst = self._make(instance_id, info if inst is None else inst.info)
            self._instances[key] = inst
            self._by_connection[(broker, connection)] = instance_id
        inst.expires_ms = now + max(CACHE_EXPIRY_MS, 3 * inst.interval_ms)
        return inst

    def _make(self, instance_id: uuid.UUID, info: ClientInfo) -> _Instance:
        interval = DEFAULT_INTERVAL_MS
        added: list[str] = []
        everything = False
        selectors = info.selectors(instance_id)
        for _name, configs in sorted(self.subscriptions().items()):
            if not _matches(_list(configs.get("match")), selectors):
                continue
            own = java_hash_set_order(_list(configs.get("metrics")))
            everything = everything or "*" in own
            added += own
            if configs.get("interval.ms", "").strip():
                interval = min(interval, int(configs["interval.ms"]))
        metrics = ["*"] if everything else java_hash_set_order(added)
        return _Instance(
            instance_id, info, subscription_id(metrics, interval, instance_id), self.version, tuple(metrics), interval
        )
