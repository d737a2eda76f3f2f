"""The OpenTelemetry (OTLP) metrics a client pushes (KIP-714's payload: a `MetricsData` protobuf, compressed with
the codec the push names), decoded with the `opentelemetry-proto` package into plain values tests can compare.

`opentelemetry-proto` comes with `pip install 'fakekafka[telemetry]'`; it is imported when client telemetry is
switched on (`require_otlp`), so fakekafka without it still runs everything else.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from fakekafka.wire.records import Compression, InvalidBatch, TooLarge, decompress

__all__ = ["MetricPoint", "OtlpMissing", "check_metrics", "decode_metrics", "decompress_metrics", "require_otlp"]


class OtlpMissing(RuntimeError):
    """Client telemetry was asked for without the package that decodes it."""


def require_otlp() -> None:
    """Raises OtlpMissing, in words, when `opentelemetry-proto` is not installed."""
    try:
        from opentelemetry.proto.metrics.v1 import metrics_pb2  # noqa: F401
    except ImportError as e:
        raise OtlpMissing(
            "client telemetry decodes the clients' OTLP metrics with opentelemetry-proto, which is "
            f"not installed ({e}): pip install 'fakekafka[telemetry]'"
        ) from None


@dataclass(frozen=True)
class MetricPoint:
    """One data point of one pushed metric. `kind`: gauge, sum, histogram, exponential_histogram or summary;
    `value`: a gauge's or sum's number, a histogram's or summary's sum; `count`: a histogram's or summary's
    count (None for the others); `attributes`: the point's (a topic, a node id...)."""

    name: str
    kind: str
    value: float | int | None
    attributes: dict[str, Any]
    time_unix_nano: int
    monotonic: bool | None = None
    count: int | None = None


def _any_value(v: Any) -> Any:
    which = v.WhichOneof("value")
    if which is None:
        return None
    if which == "array_value":
        return [_any_value(x) for x in v.array_value.values]
    if which == "kvlist_value":
        return {kv.key: _any_value(kv.value) for kv in v.kvlist_value.values}
    return getattr(v, which)


def _attributes(kvs: Any) -> dict[str, Any]:
    return {kv.key: _any_value(kv.value) for kv in kvs}


def _number(p: Any) -> float | int | None:
    which = p.WhichOneof("value")
    return None if which is None else getattr(p, which)


def decompress_metrics(codec: Compression, data: bytes, limit: int) -> bytes:
    """A push's metrics decompressed, as Kafka's broker decompresses them before any receiver sees them;
    ValueError saying why when they do not decompress or decompress past `limit` bytes (telemetry.max.bytes)."""
    try:
        raw = decompress(codec, data, limit)
    except TooLarge as e:
        raise ValueError(f"metrics decompress past telemetry.max.bytes ({limit}): {e}") from None
    except InvalidBatch as e:
        raise ValueError(str(e)) from None
    if len(raw) > limit:
        raise ValueError(f"metrics decompress to {len(raw)} bytes, past telemetry.max.bytes ({limit})")
    return raw


def _parse(raw: bytes) -> Any:
    from google.protobuf.message import DecodeError
    from opentelemetry.proto.metrics.v1 import metrics_pb2

    message = metrics_pb2.MetricsData()
    try:
        message.ParseFromString(raw)
    except DecodeError as e:
        raise ValueError(f"not OTLP metrics: {e}") from None
    return message


def check_metrics(raw: bytes) -> None:
    """ValueError when decompressed metrics are not OTLP `MetricsData` (a parse only, fast: no values read)."""
    _parse(raw)


def decode_metrics(raw: bytes) -> tuple[dict[str, Any], tuple[MetricPoint, ...]]:
    """Decompressed OTLP `MetricsData`: its resource attributes and metric points; ValueError when it is not."""
    message = _parse(raw)
    resource: dict[str, Any] = {}
    points: list[MetricPoint] = []
    for rm in message.resource_metrics:
        resource.update(_attributes(rm.resource.attributes))
        for sm in rm.scope_metrics:
            for m in sm.metrics:
                kind = m.WhichOneof("data")
                if kind in ("gauge", "sum"):
                    body = getattr(m, kind)
                    mono = body.is_monotonic if kind == "sum" else None
                    points += [
                        MetricPoint(m.name, kind, _number(p), _attributes(p.attributes), p.time_unix_nano, mono)
                        for p in body.data_points
                    ]
                elif kind in ("histogram", "exponential_histogram", "summary"):
                    points += [
                        MetricPoint(m.name, kind, p.sum, _attributes(p.attributes), p.time_unix_nano, None, p.count)
                        for p in getattr(m, kind).data_points
                    ]
    return resource, tuple(points)
