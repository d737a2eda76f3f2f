"""`fakekafka analyze DIR`: a PySpark job over a recording (fakekafka/observe/recording.py) that writes a traffic
report — Markdown or HTML with matplotlib plots (PNG files next to it).

Every aggregation runs in Spark (local by default, any `--master` otherwise); only the small results
(one row per API, client, group generation, topic, or time bucket) reach the driver for the tables and
plots. The tables are plain Markdown tables with stable headings and headers, so a test or a script can
read the numbers back.

Definitions the report uses:

- errors: requests whose response carried at least one error code (`error_codes` not empty) other than a normal
  step of the protocol (`PROTOCOL_STEPS`: JoinGroup's MEMBER_ID_REQUIRED, the answer to every first join).
- latency percentiles: Spark's `percentile_approx` (accuracy 10000: exact below 10000 requests per API).
- clients: client id plus client software (name and version from ApiVersions v3+; a connection's requests
  before its ApiVersions get the software that connection reported later).
- consumer groups: joins = JoinGroup requests (a first join answered MEMBER_ID_REQUIRED counts too; "joins
  ok" only the error-free ones); rebalances = distinct generations seen, since every completed rebalance
  starts a generation; the generation table says when each generation was first and last seen.
- producer throughput: records and request bytes of Produce requests answered without error (a retried
  request is not counted twice); records are counted per topic from the batch headers; a request naming
  several topics has its bytes shared among them by records.

pyspark and matplotlib are imported only when the job runs, so fakekafka works without them.
"""

from __future__ import annotations

import html
import os
import re
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

__all__ = ["ANALYZE_EXTRA", "Report", "analyze", "load", "require_dependencies", "run", "spark_session"]

PROTOCOL_STEPS = {"JoinGroup": ("MEMBER_ID_REQUIRED",)}
"""Error codes that are a step of an API's protocol, not a failure: a JoinGroup v4+ without a member id is answered
MEMBER_ID_REQUIRED with the id to join again with (KIP-394), once per member of every group."""

ANALYZE_EXTRA = "fakekafka[spark]"
"""The pip extra that brings pyspark, pyarrow and matplotlib."""

SPARK_SCHEMA = (
    "time TIMESTAMP, time_ms BIGINT, broker INT, client STRING, client_id STRING, client_software_name STRING, "
    "client_software_version STRING, api STRING, api_version SMALLINT, correlation_id INT, latency_ms DOUBLE, "
    "error_codes ARRAY<STRING>, request_bytes BIGINT, response_bytes BIGINT, "
    "topics ARRAY<STRUCT<topic: STRING, partition: INT, records: BIGINT>>, groups ARRAY<STRING>, records BIGINT, "
    "generation_id INT, member_id STRING")
"""Recording format 1 as Spark reads it: an explicit schema, so files written by a later version with more
columns still read (the extra columns are ignored)."""

_BUCKETS = (0.1, 0.2, 0.5, 1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200, 10800, 21600, 43200, 86400)
_MAX_BUCKETS = 200
_TOP = 8  # series per plot
_MAX_ROWS = 500  # rows per table; the rest is summarised in a note
_GROUP_APIS = {"JoinGroup": "joins", "SyncGroup": "syncs", "Heartbeat": "heartbeats", "LeaveGroup": "leaves",
               "OffsetCommit": "commits", "OffsetFetch": "fetches"}


def require_dependencies() -> None:
    """Raises ImportError naming the extra when pyspark, pyarrow or matplotlib is missing."""
    missing = []
    for module in ("pyspark", "matplotlib"):
        try:
            __import__(module)
        except ImportError:
            missing.append(module)
    if missing:
        raise ImportError(f"`fakekafka analyze` needs {' and '.join(missing)}: pip install '{ANALYZE_EXTRA}'")


# --- the report model -----------------------------------------------------------------------------
@dataclass
class Section:
    title: str
    level: int = 2
    text: str = ""
    columns: list[str] = field(default_factory=list)
    rows: list[list[Any]] = field(default_factory=list)
    note: str = ""
    images: list[tuple[str, str]] = field(default_factory=list)
    """(alt text, file name relative to the report)."""


@dataclass
class Report:
    title: str
    summary: str
    sections: list[Section]
    path: Path | None = None
    images: list[Path] = field(default_factory=list)

    def markdown(self) -> str:
        out = [f"# {self.title}", "", self.summary, ""]
        for s in self.sections:
            out += ["#" * s.level + " " + s.title, ""]
            if s.text:
                out += [s.text, ""]
            if s.columns:
                out.append("| " + " | ".join(_md_cell(c) for c in s.columns) + " |")
                out.append("|" + "|".join("---:" if _numeric_column(s.rows, i) else "---"
                                          for i in range(len(s.columns))) + "|")
                out += ["| " + " | ".join(_md_cell(_fmt(v)) for v in row) + " |" for row in s.rows]
                out.append("")
            if s.note:
                out += [s.note, ""]
            for alt, name in s.images:
                out += [f"![{alt}]({name})", ""]
        return "\n".join(out)

    def html(self) -> str:
        e = html.escape
        out = ["<!doctype html>", "<html><head><meta charset='utf-8'>", f"<title>{e(self.title)}</title>",
               "<style>body{font-family:sans-serif;max-width:1100px;margin:2em auto;padding:0 1em;color:#222}"
               "table{border-collapse:collapse;margin:.5em 0 1em}th,td{border:1px solid #ccc;padding:.2em .6em}"
               "th{background:#f3f3f3}td.n{text-align:right;font-variant-numeric:tabular-nums}"
               "img{max-width:100%;margin:.5em 0 1.5em}</style>", "</head><body>",
               f"<h1>{e(self.title)}</h1>", f"<p>{_html_inline(self.summary)}</p>"]
        for s in self.sections:
            out.append(f"<h{s.level}>{e(s.title)}</h{s.level}>")
            if s.text:
                out.append(f"<p>{_html_inline(s.text)}</p>")
            if s.columns:
                numeric = [_numeric_column(s.rows, i) for i in range(len(s.columns))]
                out.append("<table><thead><tr>" + "".join(f"<th>{e(c)}</th>" for c in s.columns) + "</tr></thead>")
                out.append("<tbody>")
                for row in s.rows:
                    out.append("<tr>" + "".join(f"<td class='n'>{e(_fmt(v))}</td>" if numeric[i] else
                                                f"<td>{e(_fmt(v))}</td>" for i, v in enumerate(row)) + "</tr>")
                out.append("</tbody></table>")
            if s.note:
                out.append(f"<p>{_html_inline(s.note)}</p>")
            for alt, name in s.images:
                out.append(f"<img src='{e(name)}' alt='{e(alt)}'>")
        out.append("</body></html>")
        return "\n".join(out)


def _fmt(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, float):
        return f"{value:.3f}"
    if isinstance(value, (list, tuple)):
        return ", ".join(_fmt(v) for v in value)
    return str(value)


def _md_cell(text: str) -> str:
    return text.replace("\\", "\\\\").replace("|", "\\|").replace("\n", " ")


def _html_inline(text: str) -> str:
    escaped = html.escape(text)
    escaped = re.sub(r"\*\*(.+?)\*\*", r"<b>\1</b>", escaped)
    return re.sub(r"`(.+?)`", r"<code>\1</code>", escaped)


def _numeric_column(rows: list[list[Any]], i: int) -> bool:
    values = [row[i] for row in rows if row[i] is not None]
    return bool(values) and all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in values)


def _when(seconds: float | None) -> str | None:
    return None if seconds is None else datetime.fromtimestamp(seconds, UTC).strftime("%Y-%m-%d %H:%M:%S.%f")[:-3]


def _bucket_seconds(span: float) -> float:
    """The smallest plot bucket (seconds) that keeps a time axis under _MAX_BUCKETS points."""
    return next((b for b in _BUCKETS if span / b <= _MAX_BUCKETS), _BUCKETS[-1])


# --- Spark ------------------------------------------------------------------------------------------
def spark_session(master: str | None = None, app_name: str = "fakekafka analyze") -> Any:
    """A SparkSession for the job: `local[*]` unless `master` names a cluster; UTC; no UI."""
    from pyspark.sql import SparkSession
    builder = (SparkSession.builder.appName(app_name).master(master or "local[*]")
               .config("spark.ui.enabled", "false")
               .config("spark.ui.showConsoleProgress", "false")
               .config("spark.sql.session.timeZone", "UTC"))
    if master is None or master.startswith("local"):
        builder = builder.config("spark.sql.shuffle.partitions", "8")
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    return spark


def _location(directory: str | os.PathLike[str]) -> str:
    """A local directory as an absolute path (checked: it holds Parquet files); a URI (hdfs://, s3a://) as is."""
    text = os.fspath(directory)
    if "://" in text:
        return text
    path = Path(text).resolve()
    if not path.is_dir():
        raise FileNotFoundError(f"no recording at {path}: not a directory")
    if not any(not p.name.startswith((".", "_")) for p in path.rglob("*.parquet")):
        raise FileNotFoundError(f"no recording at {path}: no .parquet files (record with `fakekafka serve --record "
                                f"{text}`)")
    return str(path)


def load(spark: Any, directory: str | os.PathLike[str]) -> Any:
    """The recording as a DataFrame, with `sec` (unix seconds, double), `failures` (the error codes that are not
    `PROTOCOL_STEPS`) and `failed` (0/1: any failure) added."""
    from pyspark.sql import functions as F

    def failure(api: Any, code: Any) -> Any:
        step = F.lit(False)
        for name, codes in PROTOCOL_STEPS.items():
            step = step | ((api == name) & code.isin(*codes))
        return ~step
    return (spark.read.schema(SPARK_SCHEMA).option("recursiveFileLookup", "true")
            .option("pathGlobFilter", "*.parquet").parquet(_location(directory))
            .withColumn("sec", F.unix_micros("time") / 1e6)
            .withColumn("failures", F.filter("error_codes", lambda code: failure(F.col("api"), code)))
            .withColumn("failed", F.when(F.size("failures") > 0, 1).otherwise(0)))


def _per_connection(df: Any) -> Any:
    """Requests per connection, client id, software and API version — small, whatever the recording's size —
    with each connection's software filled in on its rows from before its ApiVersions (a window over this
    small table instead of a join over every request)."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F
    keys = ["broker", "client", "client_id", "client_software_name", "client_software_version", "api",
            "api_version"]
    small = df.groupBy(*keys).agg(
        F.count(F.lit(1)).alias("requests"), F.sum("failed").alias("errors"),
        F.sum("request_bytes").alias("request_bytes"), F.sum("response_bytes").alias("response_bytes"),
        F.min("sec").alias("first"), F.max("sec").alias("last"))
    connection = Window.partitionBy("broker", "client")
    return (small.withColumn("client_software_name", F.coalesce(
                "client_software_name", F.max("client_software_name").over(connection)))
            .withColumn("client_software_version", F.coalesce(
                "client_software_version", F.max("client_software_version").over(connection))))


def _rows(df: Any, limit: int | None = None) -> list[Any]:
    return df.limit(limit).collect() if limit else df.collect()


def _compute(df: Any) -> dict[str, Any]:
    """Every aggregation of the report, each collected as a short list of rows."""
    from pyspark.sql import functions as F
    out: dict[str, Any] = {}
    ov = df.agg(F.count(F.lit(1)).alias("requests"), F.min("sec").alias("start"), F.max("sec").alias("end"),
                F.sum("failed").alias("failed"), F.countDistinct("broker", "client").alias("connections"),
                F.countDistinct("client_id").alias("client_ids"), F.countDistinct("broker").alias("brokers"),
                F.sum("request_bytes").alias("request_bytes"),
                F.sum("response_bytes").alias("response_bytes")).first()
    out["overview"] = ov
    if not ov["requests"]:
        return out
    bucket = _bucket_seconds(ov["end"] - ov["start"])
    out["bucket"] = bucket
    df = df.withColumn("bucket", F.floor(F.col("sec") / bucket))  # the bucket's index: start = index * bucket

    out["apis"] = _rows(df.groupBy("api").agg(
        F.count(F.lit(1)).alias("requests"), F.sum("failed").alias("errors"),
        F.sum("request_bytes").alias("request_bytes"), F.sum("response_bytes").alias("response_bytes"),
        F.array_sort(F.collect_set("api_version")).alias("versions"),
        F.percentile_approx("latency_ms", [0.5, 0.95, 0.99], 10000).alias("pct"),
        F.max("latency_ms").alias("max"), F.avg("latency_ms").alias("mean"),
    ).orderBy(F.desc("requests"), "api"))
    out["api_time"] = _rows(df.groupBy("bucket", "api").agg(F.count(F.lit(1)).alias("n"),
                                                            F.sum("failed").alias("errors")))
    out["errors"] = _rows(df.where(F.col("failed") == 1).select("api", F.explode("failures").alias("error"))
                          .groupBy("api", "error").agg(F.count(F.lit(1)).alias("n"))
                          .orderBy(F.desc("n"), "api", "error"), _MAX_ROWS)
    connections = _per_connection(df).persist()
    out["clients"] = _rows(connections.groupBy("client_id", "client_software_name", "client_software_version").agg(
        F.sum("requests").alias("requests"), F.sum("errors").alias("errors"),
        F.countDistinct("broker", "client").alias("connections"), F.countDistinct("api").alias("apis"),
        F.sum("request_bytes").alias("request_bytes"), F.sum("response_bytes").alias("response_bytes"),
        F.min("first").alias("first"), F.max("last").alias("last"),
    ).orderBy(F.desc("requests"), "client_id"), _MAX_ROWS)
    out["versions"] = _rows(connections.groupBy("client_software_name", "client_software_version", "api").agg(
        F.array_sort(F.collect_set("api_version")).alias("versions"), F.sum("requests").alias("requests"),
        F.countDistinct("client_id").alias("client_ids"),
    ).orderBy("client_software_name", "client_software_version", "api"), _MAX_ROWS)
    connections.unpersist()

    grouped = df.where(F.size("groups") > 0).select("*", F.explode("groups").alias("group"))
    counts = [F.sum(F.when(F.col("api") == api, 1).otherwise(0)).alias(name) for api, name in _GROUP_APIS.items()]
    out["groups"] = _rows(grouped.groupBy("group").agg(
        F.count(F.lit(1)).alias("requests"), *counts,
        F.sum(F.when((F.col("api") == "JoinGroup") & (F.size("error_codes") == 0), 1).otherwise(0)).alias("joins_ok"),
        F.sum("failed").alias("errors"), F.countDistinct("member_id").alias("members"),
        F.countDistinct("generation_id").alias("generations"), F.max("generation_id").alias("last_generation"),
        F.min("sec").alias("first"), F.max("sec").alias("last"),
    ).orderBy(F.desc("requests"), "group"), _MAX_ROWS)
    out["generations"] = _rows(grouped.where(F.col("generation_id").isNotNull()).groupBy("group", "generation_id").agg(
        F.min("sec").alias("first"), F.max("sec").alias("last"), F.countDistinct("member_id").alias("members"),
        F.sum(F.when(F.col("api") == "JoinGroup", 1).otherwise(0)).alias("joins"),
        F.count(F.lit(1)).alias("requests"),
    ).orderBy("group", "generation_id"), _MAX_ROWS)
    out["group_joins"] = _rows(grouped.where(F.col("api") == "JoinGroup").groupBy("group", "bucket")
                               .agg(F.count(F.lit(1)).alias("n")))

    produce = (df.where((F.col("api") == "Produce") & (F.col("failed") == 0) & (F.size("topics") > 0))
               .select("sec", "bucket", "records", "request_bytes", "topics",
                       F.explode(F.array_distinct(F.transform("topics", lambda t: t["topic"]))).alias("topic")))
    mine = F.filter("topics", lambda t: t["topic"] == F.col("topic"))
    topic_records = F.aggregate(mine, F.lit(0).cast("bigint"), lambda acc, t: acc + F.coalesce(t["records"], F.lit(0)))
    # bytes: the request's, shared by records (by partitions named when it carried none)
    share = F.when(F.col("records") > 0, topic_records / F.col("records")).otherwise(F.size(mine) / F.size("topics"))
    produce = produce.select("topic", "sec", "bucket", topic_records.alias("records"),
                             (F.col("request_bytes") * share).alias("bytes"))
    per_bucket = produce.groupBy("topic", "bucket").agg(F.sum("records").alias("records"),
                                                        F.sum("bytes").alias("bytes"))
    peaks = per_bucket.groupBy("topic").agg((F.max("records") / bucket).alias("peak_rps"),
                                            (F.max("bytes") / bucket).alias("peak_bps"))
    out["topics"] = _rows(produce.groupBy("topic").agg(
        F.count(F.lit(1)).alias("requests"), F.sum("records").alias("records"), F.sum("bytes").alias("bytes"),
        F.min("sec").alias("first"), F.max("sec").alias("last"),
    ).join(peaks, "topic").orderBy(F.desc("records"), "topic"), _MAX_ROWS)
    top = [r["topic"] for r in out["topics"][:_TOP]]
    out["topic_time"] = _rows(per_bucket.where(F.col("topic").isin(top))) if top else []
    return out


# --- the report -------------------------------------------------------------------------------------
def _sections(data: dict[str, Any], images: dict[str, str]) -> tuple[str, list[Section]]:
    ov = data["overview"]
    if not ov["requests"]:
        return "The recording holds no requests.", []
    span = ov["end"] - ov["start"]
    summary = (f"**{ov['requests']} requests** from {_when(ov['start'])} to {_when(ov['end'])} UTC "
               f"({span:.1f} s) on {ov['brokers']} broker(s), {ov['connections']} connection(s), "
               f"{ov['client_ids']} client id(s); {ov['failed']} request(s) answered with an error; "
               f"{ov['request_bytes']} bytes in, {ov['response_bytes']} bytes out. "
               f"Plots use {data['bucket']:g}-second buckets.")
    sections = []
    sections.append(Section(
        "Requests per API", columns=["api", "requests", "errors", "error %", "request bytes", "response bytes",
                                     "versions"],
        rows=[[r["api"], r["requests"], r["errors"], 100.0 * r["errors"] / r["requests"], r["request_bytes"],
               r["response_bytes"], list(r["versions"])] for r in data["apis"]],
        images=[("requests per API over time", images["requests"])] if "requests" in images else []))
    sections.append(Section(
        "Errors", text="Requests answered with each error code (a response with several codes counts once per code; "
                       "JoinGroup's MEMBER_ID_REQUIRED, a step of every first join, is not an error).",
        columns=["api", "error", "requests"], rows=[[r["api"], r["error"], r["n"]] for r in data["errors"]],
        note="" if data["errors"] else "No request was answered with an error."))
    sections.append(Section(
        "Latency per API", text="Milliseconds from receiving a request to writing its response.",
        columns=["api", "requests", "p50 ms", "p95 ms", "p99 ms", "max ms", "mean ms"],
        rows=[[r["api"], r["requests"], *[float(p) for p in r["pct"]], float(r["max"]), float(r["mean"])]
              for r in data["apis"]],
        images=[("latency percentiles per API", images["latency"])] if "latency" in images else []))
    sections.append(Section(
        "Clients", text="One row per client id and client software (name and version from ApiVersions).",
        columns=["client id", "software", "software version", "requests", "errors", "connections", "apis",
                 "request bytes", "response bytes", "first seen", "last seen"],
        rows=[[r["client_id"], r["client_software_name"], r["client_software_version"], r["requests"], r["errors"],
               r["connections"], r["apis"], r["request_bytes"], r["response_bytes"], _when(r["first"]),
               _when(r["last"])] for r in data["clients"]],
        note=_cap_note(data["clients"]),
        images=[("requests per client", images["clients"])] if "clients" in images else []))
    sections.append(Section(
        "Client API versions", text="Which versions of each API every client software used.",
        columns=["software", "software version", "api", "versions", "requests", "client ids"],
        rows=[[r["client_software_name"], r["client_software_version"], r["api"], list(r["versions"]),
               r["requests"], r["client_ids"]] for r in data["versions"]],
        note=_cap_note(data["versions"])))
    groups = data["groups"]
    sections.append(Section(
        "Consumer groups",
        text="Requests naming each group. joins: JoinGroup requests (joins ok: answered without error); "
             "rebalances: distinct generations seen, one per completed rebalance.",
        columns=["group", "requests", "joins", "joins ok", "syncs", "heartbeats", "leaves", "commits",
                 "offset fetches", "errors", "members", "rebalances", "last generation", "first seen", "last seen"],
        rows=[[r["group"], r["requests"], r["joins"], r["joins_ok"], r["syncs"], r["heartbeats"], r["leaves"],
               r["commits"], r["fetches"], r["errors"], r["members"], r["generations"], r["last_generation"],
               _when(r["first"]), _when(r["last"])] for r in groups],
        note="" if groups else "No request named a consumer group."))
    if data["generations"]:
        sections.append(Section(
            "Group generations", level=3,
            text="Each generation of each group: when it was first and last seen, its members and the JoinGroup "
                 "responses that opened it.",
            columns=["group", "generation", "first seen", "last seen", "members", "joins", "requests"],
            rows=[[r["group"], r["generation_id"], _when(r["first"]), _when(r["last"]), r["members"], r["joins"],
                   r["requests"]] for r in data["generations"]],
            note=_cap_note(data["generations"]),
            images=[("group generations and joins over time", images["groups"])] if "groups" in images else []))
    topics = data["topics"]
    sections.append(Section(
        "Producer throughput",
        text="Produce requests answered without error, per topic. Mean rates are over the topic's first to last "
             f"produce (at least 1 s); peaks are the busiest {data['bucket']:g}-second bucket.",
        columns=["topic", "produce requests", "records", "bytes", "mean records/s", "peak records/s",
                 "mean bytes/s", "peak bytes/s", "first seen", "last seen"],
        rows=[[r["topic"], r["requests"], round(r["records"]), round(r["bytes"]),
               r["records"] / max(r["last"] - r["first"], 1.0), float(r["peak_rps"]),
               r["bytes"] / max(r["last"] - r["first"], 1.0), float(r["peak_bps"]), _when(r["first"]),
               _when(r["last"])] for r in topics],
        note="" if topics else "Nothing was produced.",
        images=[("producer throughput per topic", images["throughput"])] if "throughput" in images else []))
    return summary, sections


def _cap_note(rows: Sequence[Any]) -> str:
    return f"Only the first {_MAX_ROWS} rows are shown." if len(rows) >= _MAX_ROWS else ""


# --- plots ------------------------------------------------------------------------------------------
def _figure(rows: int = 1, height: float = 3.2) -> tuple[Any, Any]:
    from matplotlib.figure import Figure
    fig = Figure(figsize=(10, height * rows), layout="constrained")
    axes = fig.subplots(rows, 1, sharex=True, squeeze=False)[:, 0]
    return fig, axes


def _time_axis(ax: Any) -> None:
    from matplotlib import dates
    locator = dates.AutoDateLocator(tz=UTC)
    ax.xaxis.set_major_locator(locator)
    ax.xaxis.set_major_formatter(dates.ConciseDateFormatter(locator, tz=UTC))
    ax.set_xlabel("time (UTC)")


def _series(points: dict[str, dict[int, float]], names: list[str], buckets: list[int], bucket: float
            ) -> tuple[list[datetime], list[list[float]]]:
    """Step-plot data: one x per bucket start plus the end of the last bucket, so every bucket has its width."""
    xs = [datetime.fromtimestamp(b * bucket, UTC) for b in [*buckets, buckets[-1] + 1]]
    ys = [[points[n].get(b, 0.0) for b in buckets] for n in names]
    return xs, [y + y[-1:] for y in ys]


def _plots(data: dict[str, Any], out: Path) -> dict[str, Path]:
    """PNG files next to the report: `<stem>-<name>.png`."""
    from matplotlib.ticker import MaxNLocator
    if not data["overview"]["requests"]:
        return {}
    files: dict[str, Path] = {}
    bucket = data["bucket"]

    def save(fig: Any, name: str) -> None:
        path = out.with_name(f"{out.stem}-{name}.png")
        fig.savefig(path, dpi=100)
        files[name] = path

    # requests over time, stacked by API, and errors
    per_api: dict[str, dict[int, float]] = defaultdict(dict)
    errors: dict[str, dict[int, float]] = {"errors": defaultdict(float)}
    for r in data["api_time"]:
        per_api[r["api"]][r["bucket"]] = r["n"] / bucket
        errors["errors"][r["bucket"]] += r["errors"] / bucket
    seen = [r["bucket"] for r in data["api_time"]]
    buckets = list(range(min(seen), max(seen) + 1))
    names = [r["api"] for r in data["apis"]][:_TOP]
    rest = [r["api"] for r in data["apis"]][_TOP:]
    if rest:
        per_api["other"] = {b: sum(per_api[a].get(b, 0.0) for a in rest) for b in buckets}
        names.append("other")
    xs, ys = _series(per_api, names, buckets, bucket)
    fig, (ax, ax_err) = _figure(2)
    ax.stackplot(xs, ys, labels=names, step="post")
    ax.set_ylabel("requests/s")
    ax.set_title("Requests per API")
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1), fontsize="small")
    ax_err.step(xs, _series(errors, ["errors"], buckets, bucket)[1][0], where="post", color="tab:red")
    ax_err.set_ylabel("errors/s")
    _time_axis(ax_err)
    save(fig, "requests")

    # latency percentiles per API
    apis = data["apis"][:20]
    fig, (ax,) = _figure(1, max(2.5, 0.35 * len(apis) + 1))
    ys_pos = list(range(len(apis)))
    for i, (label, value) in enumerate((("p50", lambda r: r["pct"][0]), ("p95", lambda r: r["pct"][1]),
                                        ("p99", lambda r: r["pct"][2]), ("max", lambda r: r["max"]))):
        ax.barh([y + (i - 1.5) * 0.2 for y in ys_pos], [max(float(value(r)), 1e-3) for r in apis], height=0.2,
                label=label)
    ax.set_yticks(ys_pos, [r["api"] for r in apis])
    ax.invert_yaxis()
    ax.set_xscale("log")
    ax.set_xlabel("latency (ms)")
    ax.set_title("Latency per API")
    ax.legend(fontsize="small")
    save(fig, "latency")

    # requests per client
    clients = data["clients"][:15]
    fig, (ax,) = _figure(1, max(2.5, 0.35 * len(clients) + 1))
    labels = [f"{r['client_id'] or '(none)'} · {r['client_software_name'] or '?'} {r['client_software_version'] or ''}"
              for r in clients]
    ax.barh(labels, [r["requests"] for r in clients], label="requests")
    ax.barh(labels, [r["errors"] for r in clients], label="errors", color="tab:red")
    ax.invert_yaxis()
    ax.set_xlabel("requests")
    ax.set_title("Requests per client")
    ax.legend(fontsize="small")
    save(fig, "clients")

    # consumer groups: generation over time, joins per bucket
    if data["generations"]:
        top_groups = [r["group"] for r in data["groups"] if r["generations"]][:_TOP]
        fig, (ax, ax_joins) = _figure(2)
        end = datetime.fromtimestamp(data["overview"]["end"], UTC)
        for g in top_groups:
            gens = [r for r in data["generations"] if r["group"] == g]
            xs = [datetime.fromtimestamp(r["first"], UTC) for r in gens] + [end]
            ax.step(xs, [r["generation_id"] for r in gens] + [gens[-1]["generation_id"]], where="post", label=g)
            ax.plot(xs[:-1], [r["generation_id"] for r in gens], "o", color=ax.lines[-1].get_color(), markersize=3)
        ax.set_ylabel("generation")
        ax.set_title("Consumer group generations (a step is a rebalance)")
        ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1), fontsize="small")
        joins: dict[str, dict[int, float]] = defaultdict(dict)
        for r in data["group_joins"]:
            joins[r["group"]][r["bucket"]] = r["n"]
        xs, ys = _series(joins, top_groups, buckets, bucket)
        for g, y in zip(top_groups, ys, strict=True):
            ax_joins.step(xs, y, where="post", label=g)
        ax_joins.set_ylabel(f"joins per {bucket:g} s")
        ax.yaxis.set_major_locator(MaxNLocator(integer=True))
        ax_joins.yaxis.set_major_locator(MaxNLocator(integer=True))
        _time_axis(ax_joins)
        save(fig, "groups")

    # producer throughput per topic
    if data["topic_time"]:
        top_topics = [r["topic"] for r in data["topics"]][:_TOP]
        rps: dict[str, dict[int, float]] = defaultdict(dict)
        bps: dict[str, dict[int, float]] = defaultdict(dict)
        for r in data["topic_time"]:
            rps[r["topic"]][r["bucket"]] = r["records"] / bucket
            bps[r["topic"]][r["bucket"]] = r["bytes"] / bucket
        fig, (ax, ax_bytes) = _figure(2)
        xs, ys = _series(rps, top_topics, buckets, bucket)
        for t, y in zip(top_topics, ys, strict=True):
            ax.step(xs, y, where="post", label=t)
        ax.set_ylabel("records/s")
        ax.set_title("Producer throughput per topic")
        ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1), fontsize="small")
        xs, ys = _series(bps, top_topics, buckets, bucket)
        for t, y in zip(top_topics, ys, strict=True):
            ax_bytes.step(xs, y, where="post", label=t)
        ax_bytes.set_ylabel("bytes/s")
        _time_axis(ax_bytes)
        save(fig, "throughput")
    return files


# --- entry points -----------------------------------------------------------------------------------
def analyze(spark: Any, directory: str | os.PathLike[str], out: str | os.PathLike[str], fmt: str = "md") -> Report:
    """Runs the job on `spark` (the caller's session, left running) and writes the report to `out` and its
    plots next to it; returns the report (tables included)."""
    if fmt not in ("md", "html"):
        raise ValueError(f"format must be md or html, not {fmt!r}")
    out_path = Path(out)
    out_path.parent.mkdir(parents=True, exist_ok=True)
    data = _compute(load(spark, directory))  # no cache: each job reads only its columns, which is faster here
    plots = _plots(data, out_path)
    summary, sections = _sections(data, {name: p.name for name, p in plots.items()})
    location = os.fspath(directory)
    report = Report("fakekafka traffic report", f"Recording `{location}`: " + summary, sections, out_path,
                    list(plots.values()))
    out_path.write_text(report.html() if fmt == "html" else report.markdown(), encoding="utf-8")
    return report


def run(directory: str | os.PathLike[str], out: str | os.PathLike[str], *, master: str | None = None,
        fmt: str = "md") -> Report:
    """`fakekafka analyze`: its own SparkSession (local unless `master`), stopped afterwards."""
    require_dependencies()
    _location(directory)  # a missing or empty recording fails before Spark starts
    spark = spark_session(master)
    try:
        return analyze(spark, directory, out, fmt)
    finally:
        spark.stop()
