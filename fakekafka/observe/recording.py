"""Recordings: every request a broker serves, as Parquet files that Spark, pyarrow or DuckDB read directly.

`RequestRecorder(directory)` is a request listener (`Server.add_request_listener`). It buffers records in
memory and a writer thread turns them into one Parquet file every `max_records` records or `max_seconds`
seconds (and on `flush`/`close`), so the server's event loop only pays for a list append and a long
recording is a few files per hour, not one per request. `fakekafka serve --record DIR` and
`record_cluster(cluster, DIR)` attach one; `fakekafka analyze DIR` reads them (fakekafka/ops/analyze.py).
The protocol-aware proxy writes the same format.

Layout (Hive partitioning by the UTC hour of `time`; files appear atomically, written under a dot-name
that readers skip, then renamed)::

    DIR/hour=2026-11-22T06/part-<uuid>.parquet

Columns (format version 1, in the schema metadata as `fakekafka.recording=1`; one row per request)::

    time                     timestamp[us, UTC]  when the broker received the request (RequestRecord.wall_time)
    time_ms                  int64     the cluster's clock in ms (differs from `time` under a frozen test clock)
    broker                   int32     node id of the broker that answered
    client                   string    the connection's peer host:port
    client_id                string    the request header's client id (null when the client sent none)
    client_software_name     string    from ApiVersions v3+ of that connection; null before/without it
    client_software_version  string    likewise
    api                      string    API name, e.g. "Produce"
    api_version              int16     (RequestRecord.version)
    correlation_id           int32
    latency_ms               float64   receipt to response written
    error_codes              list<string>  error names in the response, distinct and sorted; empty: no error
    request_bytes            int64     frame size including the 4-byte length
    response_bytes           int64     0 when nothing was answered (acks=0)
    topics                   list<struct<topic: string, partition: int32, records: int64>>  what the request
                                       named, sorted; partition -1 means the topic as a whole (Metadata,
                                       CreateTopics...); records: those produced to / fetched from it
    groups                   list<string>  consumer groups named (JoinGroup, OffsetCommit, FindCoordinator...)
    records                  int64     records produced (Produce) or returned (Fetch); 0 otherwise
    generation_id            int32     group generation the request ended with (JoinGroup, SyncGroup,
                                       Heartbeat, OffsetCommit); null when none
    member_id                string    group member id; null when none

pyarrow is imported only when a recorder is made, so fakekafka runs without it.
"""

from __future__ import annotations

import logging
import os
import queue
import threading
import time
import uuid
from collections import defaultdict
from collections.abc import Callable, Iterable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Protocol, TypeVar

from fakekafka.observe.records import RequestRecord

__all__ = ["FORMAT_VERSION", "RECORD_EXTRA", "RequestRecorder", "hour_partition", "read_records",
           "record_cluster", "recording_schema"]

log = logging.getLogger("fakekafka.recording")

FORMAT_VERSION = "1"
RECORD_EXTRA = "fakekafka[record]"
"""The pip extra that brings pyarrow."""


def _pyarrow() -> tuple[Any, Any]:
    try:  # here, not at the top: pyarrow is a heavy optional dependency (the `record` extra)
        import pyarrow as pa
        import pyarrow.parquet as pq
    except ImportError as e:
        raise ImportError(f"recording requests needs pyarrow: pip install '{RECORD_EXTRA}' ({e})") from e
    return pa, pq


def recording_schema() -> Any:
    """The Parquet schema of a recording (a `pyarrow.Schema`); see the module docstring."""
    pa, _ = _pyarrow()
    return pa.schema([
        pa.field("time", pa.timestamp("us", tz="UTC"), nullable=False),
        pa.field("time_ms", pa.int64(), nullable=False),
        pa.field("broker", pa.int32(), nullable=False),
        pa.field("client", pa.string(), nullable=False),
        pa.field("client_id", pa.string()),
        pa.field("client_software_name", pa.string()),
        pa.field("client_software_version", pa.string()),
        pa.field("api", pa.string(), nullable=False),
        pa.field("api_version", pa.int16(), nullable=False),
        pa.field("correlation_id", pa.int32(), nullable=False),
        pa.field("latency_ms", pa.float64(), nullable=False),
        pa.field("error_codes", pa.list_(pa.string()), nullable=False),
        pa.field("request_bytes", pa.int64(), nullable=False),
        pa.field("response_bytes", pa.int64(), nullable=False),
        pa.field("topics", pa.list_(pa.struct([pa.field("topic", pa.string()), pa.field("partition", pa.int32()),
                                                 pa.field("records", pa.int64())])), nullable=False),
        pa.field("groups", pa.list_(pa.string()), nullable=False),
        pa.field("records", pa.int64(), nullable=False),
        pa.field("generation_id", pa.int32()),
        pa.field("member_id", pa.string()),
    ], metadata={"fakekafka.recording": FORMAT_VERSION})


def hour_partition(wall_time: float) -> str:
    """The partition directory of a request received at `wall_time` (unix seconds): `hour=YYYY-MM-DDTHH`, UTC."""
    return "hour=" + datetime.fromtimestamp(wall_time, UTC).strftime("%Y-%m-%dT%H")


def _table(pa: Any, schema: Any, records: list[RequestRecord]) -> Any:
    """Column by column (list columns from flat values and offsets): several times faster than row dicts."""
    err_off, err_flat = [0], []
    grp_off, grp_flat = [0], []
    tp_off, tp_names, tp_parts, tp_records = [0], [], [], []
    for r in records:
        err_flat.extend(r.error_codes)
        err_off.append(len(err_flat))
        grp_flat.extend(r.groups)
        grp_off.append(len(grp_flat))
        for name, part in r.topics:
            tp_names.append(name)
            tp_parts.append(part)
        tp_records.extend(r.partition_records or [0] * len(r.topics))
        tp_off.append(len(tp_names))

    def strings(off: list[int], flat: list[str]) -> Any:
        return pa.ListArray.from_arrays(pa.array(off, pa.int32()), pa.array(flat, pa.string()))

    topic_type = schema.field("topics").type
    topics = pa.ListArray.from_arrays(
        pa.array(tp_off, pa.int32()),
        pa.StructArray.from_arrays([pa.array(tp_names, pa.string()), pa.array(tp_parts, pa.int32()),
                                    pa.array(tp_records, pa.int64())], fields=list(topic_type.value_type)))
    columns = [
        pa.array([round(r.wall_time * 1_000_000) for r in records], pa.int64()).cast(schema.field("time").type),
        pa.array([r.time_ms for r in records], pa.int64()),
        pa.array([r.broker for r in records], pa.int32()),
        pa.array([r.client for r in records], pa.string()),
        pa.array([r.client_id for r in records], pa.string()),
        pa.array([r.client_software_name for r in records], pa.string()),
        pa.array([r.client_software_version for r in records], pa.string()),
        pa.array([r.api for r in records], pa.string()),
        pa.array([r.version for r in records], pa.int16()),
        pa.array([r.correlation_id for r in records], pa.int32()),
        pa.array([r.latency_ms for r in records], pa.float64()),
        strings(err_off, err_flat),
        pa.array([r.request_bytes for r in records], pa.int64()),
        pa.array([r.response_bytes for r in records], pa.int64()),
        topics,
        strings(grp_off, grp_flat),
        pa.array([r.records for r in records], pa.int64()),
        pa.array([r.generation_id for r in records], pa.int32()),
        pa.array([r.member_id for r in records], pa.string()),
    ]
    return pa.Table.from_arrays(columns, schema=schema)


class _Flush:
    """A marker in the writer's queue: write what is buffered, then wake the caller (and stop, on close)."""

    __slots__ = ("done", "stop")

    def __init__(self, stop: bool = False) -> None:
        self.done = threading.Event()
        self.stop = stop


class RequestRecorder:
    """A request listener writing what it hears to Parquet under `directory` (see the module docstring).

    `__call__` runs on the server's event loop and only appends to a buffer; a full buffer (`max_records`)
    or one older than `max_seconds` is written by a writer thread. `flush()` writes what is buffered and
    returns once it is on disk; `close()` does the same and stops the thread. A failed write is logged and
    raised again from the next `flush`/`close`.
    """

    def __init__(self, directory: str | os.PathLike[str], *, max_records: int = 100_000, max_seconds: float = 60.0,
                 compression: str = "zstd", on_close: Callable[[], None] | None = None) -> None:
        if max_records < 1 or max_seconds <= 0:
            raise ValueError("max_records must be at least 1 and max_seconds positive")
        self._pa, self._pq = _pyarrow()
        self._schema = recording_schema()
        self.directory = Path(directory)
        self.directory.mkdir(parents=True, exist_ok=True)
        self.max_records = max_records
        self.max_seconds = max_seconds
        self.compression = compression
        self.files: list[Path] = []
        """Every file written so far, in order."""
        self.records_written = 0
        self._on_close = on_close
        self._buffer: list[RequestRecord] = []
        self._lock = threading.Lock()
        self._queue: queue.SimpleQueue[list[RequestRecord] | _Flush] = queue.SimpleQueue()
        self._error: BaseException | None = None
        self._closed = False
        self._thread = threading.Thread(target=self._run, name="fakekafka-recorder", daemon=True)
        self._thread.start()

    # --- the listener (server's loop) ------------------------------------------------------------
    def __call__(self, record: RequestRecord) -> None:
        if self._closed:
            raise RuntimeError(f"recorder for {self.directory} is closed")
        with self._lock:
            self._buffer.append(record)
            if len(self._buffer) < self.max_records:
                return
            batch, self._buffer = self._buffer, []
        self._queue.put(batch)

    # --- control (any thread) --------------------------------------------------------------------
    def flush(self) -> None:
        """Writes everything received so far; returns once it is on disk."""
        if self._closed:
            return
        marker = _Flush()
        self._queue.put(marker)
        marker.done.wait()
        self._raise_error()

    def close(self) -> None:
        """Detaches (when made by `record_cluster`), writes what is buffered and stops the writer thread."""
        if self._closed:
            return
        if self._on_close is not None:
            self._on_close()
        self._closed = True
        marker = _Flush(stop=True)
        self._queue.put(marker)
        self._thread.join()
        self._raise_error()

    def __enter__(self) -> RequestRecorder:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _raise_error(self) -> None:
        error, self._error = self._error, None
        if error is not None:
            raise OSError(f"writing the recording to {self.directory} failed: {error}") from error

    # --- the writer thread -------------------------------------------------------------------------
    def _take(self) -> list[RequestRecord]:
        with self._lock:
            batch, self._buffer = self._buffer, []
        return batch

    def _run(self) -> None:
        deadline = time.monotonic() + self.max_seconds
        while True:
            try:
                item = self._queue.get(timeout=max(deadline - time.monotonic(), 0.0))
            except queue.Empty:
                self._write(self._take())
                deadline = time.monotonic() + self.max_seconds
                continue
            if isinstance(item, list):
                self._write(item)
                continue
            self._write(self._take())
            item.done.set()
            if item.stop:
                return

    def _write(self, batch: list[RequestRecord]) -> None:
        if not batch:
            return
        try:
            by_hour: dict[int, list[RequestRecord]] = defaultdict(list)
            for r in batch:
                by_hour[int(r.wall_time // 3600)].append(r)
            for hour, records in sorted(by_hour.items()):
                folder = self.directory / hour_partition(hour * 3600)
                folder.mkdir(parents=True, exist_ok=True)
                name = f"part-{uuid.uuid4().hex}.parquet"
                temporary, final = folder / f".{name}.tmp", folder / name
                self._pq.write_table(_table(self._pa, self._schema, records), temporary,
                                     compression=self.compression)
                os.replace(temporary, final)
                self.files.append(final)
                self.records_written += len(records)
        except Exception as e:  # noqa: BLE001 - the thread must survive; the error surfaces on flush/close
            log.exception("writing %d recorded requests to %s failed", len(batch), self.directory)
            self._error = e


T = TypeVar("T")


class RequestSource(Protocol):
    """A server that tells listeners of every request it serves (`fakekafka.net.server.Server` is one)."""

    def add_request_listener(self, listener: Callable[[RequestRecord], None]) -> None: ...

    def remove_request_listener(self, listener: Callable[[RequestRecord], None]) -> None: ...


class RecordableCluster(Protocol):
    """What `record_cluster` needs of a cluster (`fakekafka.Cluster` is one): its server, and a way to run a
    function where that server runs."""

    @property
    def server(self) -> RequestSource: ...

    def call(self, fn: Callable[[], T]) -> T: ...


def record_cluster(cluster: RecordableCluster, directory: str | os.PathLike[str], **options: Any) -> RequestRecorder:
    """Records every request `cluster` serves from now on; `close()` the recorder to detach and finish the files.

    Attaching and detaching run on the cluster's loop (`cluster.call`), as listeners must be changed there.
    `options` go to `RequestRecorder` (max_records, max_seconds, compression).
    """
    server = cluster.server

    def remove() -> None:
        try:
            server.remove_request_listener(recorder)
        except ValueError:  # already removed (by the caller, or by the server after the listener raised)
            pass

    def detach() -> None:
        cluster.call(remove)

    recorder = RequestRecorder(directory, on_close=detach, **options)
    cluster.call(lambda: server.add_request_listener(recorder))
    return recorder


def read_records(directory: str | os.PathLike[str]) -> list[RequestRecord]:
    """A recording read back as `RequestRecord`s in time order: for tests and small recordings (use Spark,
    pyarrow.dataset or DuckDB on large ones)."""
    _pyarrow()
    import pyarrow.dataset as ds  # optional and heavy: only when a recording is read back
    files = [str(p) for p in _parquet_files(Path(directory))]
    if not files:
        return []
    table = ds.dataset(files, format="parquet", schema=recording_schema()).to_table()
    table = table.sort_by([("time", "ascending"), ("broker", "ascending"), ("correlation_id", "ascending")])
    out = []
    for row in table.to_pylist():
        out.append(RequestRecord(
            time_ms=row["time_ms"], broker=row["broker"], client=row["client"], client_id=row["client_id"],
            api=row["api"], version=row["api_version"], correlation_id=row["correlation_id"],
            latency_ms=row["latency_ms"], error_codes=tuple(row["error_codes"]),
            wall_time=row["time"].timestamp(), client_software_name=row["client_software_name"],
            client_software_version=row["client_software_version"], request_bytes=row["request_bytes"],
            response_bytes=row["response_bytes"], topics=tuple((t["topic"], t["partition"]) for t in row["topics"]),
            groups=tuple(row["groups"]), records=row["records"], generation_id=row["generation_id"],
            member_id=row["member_id"],
            partition_records=tuple(t["records"] or 0 for t in row["topics"]) if row["records"] else ()))
    return out


def _parquet_files(directory: Path) -> Iterable[Path]:
    """The finished files of a recording (not the dot-named ones still being written)."""
    return sorted(p for p in directory.glob("hour=*/*.parquet") if not p.name.startswith((".", "_")))
