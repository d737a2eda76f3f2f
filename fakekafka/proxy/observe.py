"""What the proxy tells its listeners: the same `RequestRecord` a fake cluster's recordings hold (so
`fakekafka analyze` reads both), a per-API summary printed at exit, and optionally the raw frames of every
exchange (what `fakekafka replay` resends).

Decoding for these happens only when a listener is attached (`ProxyServer.decode_answers`).
"""

from __future__ import annotations

import io
import os
import statistics
import threading
import time
import uuid
from collections import Counter, defaultdict
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from fakekafka.observe.records import RequestRecord, error_codes_in
from fakekafka.observe.traffic import touched
from fakekafka.proxy.exchange import Exchange, Slot
from fakekafka.wire import ApiKey, DecodeError, ErrorCode
from fakekafka.wire.protocol import decode_response, parse_body, request_struct

__all__ = ["FRAMES_DIR", "FrameRecorder", "Summary", "exchange_record", "read_frames"]

_KNOWN = frozenset(int(c) for c in ErrorCode)
FRAMES_DIR = "frames"
"""Where, inside a recording directory, the raw frames go (`fakekafka analyze` reads only `hour=*`)."""


def decode_exchange(exchange: Exchange) -> None:
    """Fills the exchange's decoded request and response bodies where the wire layer knows the API."""
    head = exchange.head
    if head.body_offset is None:
        return
    try:
        stream = io.BytesIO(exchange.request_frame)
        stream.seek(head.body_offset)
        exchange.request_body = parse_body(request_struct(head.api_key, head.api_version), stream, head.api_name)
    except DecodeError:
        exchange.request_body = None
    if exchange.response_frame is not None:
        try:
            _, exchange.response_body = decode_response(head.api_key, head.api_version, exchange.response_frame)
        except DecodeError:
            exchange.response_body = None


def exchange_record(exchange: Exchange, slot: Slot, node_id: int, peer: str, *, decode: bool,
                    topic_names: Mapping[uuid.UUID, str],
                    software: dict[str, tuple[str | None, str | None]] | None = None) -> RequestRecord:
    """The exchange as a `RequestRecord`: decoded (`decode`: the proxy decodes answers) for its error codes and
    what it touched (topic ids named by `topic_names`)."""
    head = exchange.head
    latency = (time.perf_counter() - slot.started) * 1000
    codes: set[int] = set()
    topics: tuple[tuple[str, int], ...] = ()
    groups: tuple[str, ...] = ()
    records, generation, member, per_partition = 0, None, None, ()
    name = version = None
    if decode:
        decode_exchange(exchange)
        error_codes_in(exchange.response_body, codes)
        if exchange.request_body is not None:
            seen = touched(head.api_key, exchange.request_body, exchange.response_body, topic_names.get)
            topics = tuple(sorted(seen.topics))
            groups = tuple(sorted(seen.groups))
            records, generation, member = seen.records, seen.generation_id, seen.member_id
            per_partition = tuple(seen.partition_records.get(tp, 0) for tp in topics) if seen.records else ()
            if head.api_key == ApiKey.API_VERSIONS and exchange.request_body.get("client_software_name"):
                name = exchange.request_body.get("client_software_name")
                version = exchange.request_body.get("client_software_version")
                if software is not None:
                    software[exchange.connection] = (name, version)
        if name is None and software is not None:
            name, version = software.get(exchange.connection, (None, None))
    return RequestRecord(
        int(slot.wall * 1000), node_id, peer, head.client_id, head.api_name, head.api_version, head.correlation_id,
        latency, tuple(ErrorCode(c).name if c in _KNOWN else str(c) for c in sorted(codes)), slot.wall,
        client_software_name=name, client_software_version=version, request_bytes=exchange.request_size + 4,
        response_bytes=(exchange.response_size or 0) + 4 if exchange.response_size is not None else 0,
        topics=topics, groups=groups, records=records, generation_id=generation, member_id=member,
        partition_records=per_partition)


@dataclass
class _ApiStats:
    count: int = 0
    latencies: list[float] = field(default_factory=list)
    errors: Counter[str] = field(default_factory=Counter)


class Summary:
    """Per-API counts, latencies and errors of the requests that crossed the proxy, as a table.

    Latencies kept per API are bounded (`max_samples`, the first ones plus every later one with falling
    probability is not needed here: past the bound every k-th is kept), so a long run does not grow."""

    def __init__(self, max_samples: int = 100_000) -> None:
        self.max_samples = max_samples
        self.apis: dict[str, _ApiStats] = defaultdict(_ApiStats)
        self.started = time.time()
        self._lock = threading.Lock()

    def __call__(self, record: RequestRecord, _exchange: object = None) -> None:
        with self._lock:
            stats = self.apis[record.api]
            stats.count += 1
            if len(stats.latencies) < self.max_samples:
                stats.latencies.append(record.latency_ms)
            else:
                stats.latencies[stats.count % self.max_samples] = record.latency_ms
            for code in record.error_codes:
                stats.errors[code] += 1

    def table(self) -> str:
        with self._lock:
            rows = sorted(self.apis.items(), key=lambda kv: -kv[1].count)
            lines = [f"fakekafka proxy: {sum(s.count for _, s in rows)} requests in "
                     f"{time.time() - self.started:.1f} s",
                     f"{'api':<28} {'requests':>9} {'p50 ms':>8} {'p99 ms':>8} {'max ms':>8}  errors"]
            for api, s in rows:
                lat = sorted(s.latencies)
                p50 = statistics.median(lat) if lat else 0.0
                p99 = lat[min(len(lat) - 1, int(len(lat) * 0.99))] if lat else 0.0
                errors = ", ".join(f"{name} x{n}" for name, n in s.errors.most_common()) or "-"
                lines.append(f"{api:<28} {s.count:>9} {p50:>8.2f} {p99:>8.2f} {max(lat, default=0):>8.2f}  {errors}")
        return "\n".join(lines)


def _frames_schema() -> Any:
    import pyarrow as pa
    return pa.schema([
        pa.field("time", pa.timestamp("us", tz="UTC"), nullable=False),
        pa.field("connection", pa.string(), nullable=False),
        pa.field("sequence", pa.int64(), nullable=False),
        pa.field("broker", pa.int32(), nullable=False),
        pa.field("api_key", pa.int16(), nullable=False),
        pa.field("api_version", pa.int16(), nullable=False),
        pa.field("correlation_id", pa.int32(), nullable=False),
        pa.field("request", pa.binary(), nullable=False),
        pa.field("response", pa.binary()),
    ], metadata={"fakekafka.frames": "1"})


class FrameRecorder:
    """Every exchange's raw frames (size prefixes excluded) under DIR/frames/, one Parquet file per
    `max_frames` exchanges and at `close()`: what `fakekafka replay` resends, connection by connection."""

    def __init__(self, directory: str | os.PathLike[str], max_frames: int = 20_000) -> None:
        import pyarrow  # noqa: F401 - fail at start, not at the first write
        self.directory = Path(directory) / FRAMES_DIR
        self.directory.mkdir(parents=True, exist_ok=True)
        self.max_frames = max_frames
        self.frames_written = 0
        self._rows: list[tuple[Any, ...]] = []
        self._sequence: Counter[str] = Counter()
        self._lock = threading.Lock()

    def __call__(self, record: RequestRecord, exchange: Exchange) -> None:
        with self._lock:
            self._sequence[exchange.connection] += 1
            self._rows.append((record.wall_time, exchange.connection, self._sequence[exchange.connection],
                               record.broker, exchange.head.api_key, exchange.head.api_version,
                               exchange.head.correlation_id, exchange.request_frame, exchange.response_frame))
            if len(self._rows) < self.max_frames:
                return
            rows, self._rows = self._rows, []
        self._write(rows)

    def _write(self, rows: list[tuple[Any, ...]]) -> None:
        if not rows:
            return
        import pyarrow as pa
        import pyarrow.parquet as pq
        schema = _frames_schema()
        columns = list(zip(*rows, strict=True))
        arrays = [pa.array([round(t * 1_000_000) for t in columns[0]], pa.int64()).cast(schema.field("time").type)]
        arrays += [pa.array(col, schema.field(i + 1).type) for i, col in enumerate(columns[1:])]
        name = f"part-{uuid.uuid4().hex}.parquet"
        temporary = self.directory / f".{name}.tmp"
        pq.write_table(pa.Table.from_arrays(arrays, schema=schema), temporary, compression="zstd")
        os.replace(temporary, self.directory / name)
        self.frames_written += len(rows)

    def close(self) -> None:
        with self._lock:
            rows, self._rows = self._rows, []
        self._write(rows)


def read_frames(directory: str | os.PathLike[str]) -> list[dict[str, Any]]:
    """A recording's raw frames, in order within each connection (connections interleaved by time)."""
    import pyarrow.parquet as pq
    folder = Path(directory) / FRAMES_DIR
    files = sorted(p for p in folder.glob("*.parquet") if not p.name.startswith("."))
    if not files:
        raise FileNotFoundError(f"{directory} has no raw frames: record with `fakekafka proxy --record DIR "
                                f"--record-frames`")
    rows: list[dict[str, Any]] = []
    for f in files:
        rows.extend(pq.read_table(f).to_pylist())
    rows.sort(key=lambda r: (r["time"], r["connection"], r["sequence"]))
    return rows
