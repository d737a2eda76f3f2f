"""`fakekafka analyze`: a recording of real client traffic (with an injected error and a consumer-group
rebalance) gives a report whose numbers match counts taken independently while the traffic ran."""

from __future__ import annotations

import collections
import math
import os
import re
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

import fakekafka
from fakekafka.observe.records import RequestRecord
from fakekafka.ops.analyze import Report, Section
from fakekafka.ops.cli import main


def _need_spark() -> None:
    pytest.importorskip("pyspark", reason="pyspark is not installed: pip install 'fakekafka[spark]'")
    pytest.importorskip("matplotlib", reason="matplotlib is not installed: pip install 'fakekafka[spark]'")
    pytest.importorskip("pyarrow", reason="pyarrow is not installed: pip install 'fakekafka[spark]'")
    if not (shutil.which("java") or os.environ.get("JAVA_HOME")):
        pytest.skip("Spark needs Java 17+: install a JDK (apt-get install openjdk-17-jre-headless)")


# --- reading the report back ----------------------------------------------------------------------
def _cells(line: str) -> list[str]:
    cells = re.split(r"(?<!\\)\|", line.strip())[1:-1]
    return [c.strip().replace("\\|", "|").replace("\\\\", "\\") for c in cells]


def _tables(markdown: str) -> dict[str, list[dict[str, str]]]:
    """Each Markdown table under the heading above it, as rows of {column: cell}."""
    tables: dict[str, list[dict[str, str]]] = {}
    heading = ""
    lines = markdown.splitlines()
    i = 0
    while i < len(lines):
        line = lines[i]
        if line.startswith("#"):
            heading = line.lstrip("#").strip()
        elif line.startswith("|") and i + 1 < len(lines) and lines[i + 1].startswith("|--"):
            header = _cells(line)
            rows = []
            i += 2
            while i < len(lines) and lines[i].startswith("|"):
                rows.append(dict(zip(header, _cells(lines[i]), strict=True)))
                i += 1
            tables[heading] = rows
            continue
        i += 1
    return tables


def _by(rows: list[dict[str, str]], *keys: str) -> dict[Any, dict[str, str]]:
    return {(r[keys[0]] if len(keys) == 1 else tuple(r[k] for k in keys)): r for r in rows}


# --- the traffic -------------------------------------------------------------------------------------
@dataclass
class Traffic:
    directory: Path
    seen: list[RequestRecord]
    produced: dict[str, int]
    two_member_generation: int
    consumed: int
    delivery_errors: list[str] = field(default_factory=list)
    legacy: list[RequestRecord] = field(default_factory=list)
    """Written by a second recorder into the same directory: a connection whose first request came before its
    ApiVersions (no client software yet), which no client here does on its own."""

    @property
    def all(self) -> list[RequestRecord]:
        return self.seen + self.legacy


def _drive(directory: Path) -> Traffic:
    import confluent_kafka
    from kafka import KafkaProducer

    from fakekafka.observe.recording import RequestRecorder, record_cluster
    seen: list[RequestRecord] = []
    produced = {"an-orders": 60, "an-payments": 20}
    errors: list[str] = []
    with fakekafka.Cluster(partitions=3) as cluster:
        server = cluster.server
        cluster.call(lambda: server.add_request_listener(seen.append))  # the independent count
        recorder = record_cluster(cluster, directory)
        cluster.inject_error("Produce", "NOT_LEADER_OR_FOLLOWER", count=2)
        bootstrap = cluster.bootstrap_servers
        producer = confluent_kafka.Producer({"bootstrap.servers": bootstrap, "client.id": "an-producer",
                                             "linger.ms": 10, "retry.backoff.ms": 20})
        for i in range(produced["an-orders"]):
            producer.produce("an-orders", b"order-%d" % i, partition=i % 3,
                             on_delivery=lambda err, _msg: errors.append(str(err)) if err else None)
        assert producer.flush(15) == 0
        kp = KafkaProducer(bootstrap_servers=bootstrap, client_id="an-kpy")
        for i in range(produced["an-payments"]):
            kp.send("an-payments", b"payment-%d" % i, partition=i % 3)
        kp.flush(10)
        kp.close(10)

        config = {"bootstrap.servers": bootstrap, "group.id": "an-billing", "auto.offset.reset": "earliest",
                  "enable.auto.commit": False, "heartbeat.interval.ms": 200, "session.timeout.ms": 6000}
        c1 = confluent_kafka.Consumer({**config, "client.id": "an-c1"})
        c1.subscribe(["an-orders"])
        offsets: set[tuple[int, int]] = set()

        def poll(consumers: list[Any], until: Any, timeout: float = 20) -> None:
            deadline = time.monotonic() + timeout
            while not until():
                assert time.monotonic() < deadline, "the consumer group did not get there in time"
                for c in consumers:
                    msg = c.poll(0.05)
                    if msg is not None and msg.error() is None:
                        offsets.add((msg.partition(), msg.offset()))

        poll([c1], lambda: bool(c1.assignment()))
        c2 = confluent_kafka.Consumer({**config, "client.id": "an-c2"})
        c2.subscribe(["an-orders"])

        def two_members() -> bool:
            g = cluster.group("an-billing")
            return g is not None and g.state == "Stable" and len(g.members) == 2 and bool(c1.assignment()) \
                and bool(c2.assignment())

        poll([c1, c2], lambda: two_members() and len(offsets) == produced["an-orders"])
        two_member_generation = cluster.group("an-billing").generation_id
        for c in (c1, c2):
            try:
                c.commit(asynchronous=False)
            except confluent_kafka.KafkaException:  # nothing consumed on this member since the rebalance
                pass
        c1.close()
        c2.close()
        cluster.call(lambda: [server.remove_request_listener(fn) for fn in (seen.append, recorder)])
        recorder.close()
    now = time.time()
    legacy = [RequestRecord(0, 1, "127.0.0.1:1", "an-legacy", api, version, i, 0.5, (), now + i * 0.01,
                            *software, request_bytes=50, response_bytes=60)
              for i, (api, version, software) in enumerate((("Metadata", 1, (None, None)),
                                                            ("ApiVersions", 3, ("legacy-client", "0.9")),
                                                            ("Metadata", 9, ("legacy-client", "0.9"))))]
    with RequestRecorder(directory) as other:
        for r in legacy:
            other(r)
    return Traffic(directory, seen, produced, two_member_generation, len(offsets), errors, legacy)


@pytest.fixture(scope="module")
def traffic(tmp_path_factory: pytest.TempPathFactory) -> Traffic:
    _need_spark()
    pytest.importorskip("confluent_kafka")
    pytest.importorskip("kafka")
    return _drive(tmp_path_factory.mktemp("analyze") / "recording")


@dataclass
class Analysis:
    path: Path
    text: str
    tables: dict[str, list[dict[str, str]]]
    seconds: float


@pytest.fixture(scope="module")
def analysis(traffic: Traffic) -> Analysis:
    """One `fakekafka analyze` run (Spark local) shared by the checks below."""
    out = traffic.directory.parent / "report" / "traffic.md"
    started = time.monotonic()
    proc = subprocess.run([sys.executable, "-m", "fakekafka", "analyze", str(traffic.directory), "--out", str(out)],
                          capture_output=True, text=True, timeout=280)
    seconds = time.monotonic() - started
    assert proc.returncode == 0, proc.stderr[-4000:]
    assert f"wrote {out}" in proc.stdout
    text = out.read_text()
    return Analysis(out, text, _tables(text), seconds)


def _software_by_connection(seen: list[RequestRecord]) -> dict[tuple[int, str], tuple[str | None, str | None]]:
    """The report's rule, computed here independently: a connection's software is what it reported."""
    out: dict[tuple[int, str], tuple[str | None, str | None]] = {}
    for r in seen:
        if r.client_software_name is not None:
            out[(r.broker, r.client)] = (r.client_software_name, r.client_software_version)
    return out


def _failures(r: RequestRecord) -> list[str]:
    """The report's rule, computed here independently: error codes but a first join's MEMBER_ID_REQUIRED."""
    return [e for e in r.error_codes if not (r.api == "JoinGroup" and e == "MEMBER_ID_REQUIRED")]


# --- the checks ----------------------------------------------------------------------------------------
@pytest.mark.spark
@pytest.mark.timeout(400)
def test_the_traffic_ran_as_planned(traffic: Traffic) -> None:
    assert not traffic.delivery_errors
    assert traffic.consumed == 60
    assert traffic.two_member_generation >= 2
    injected = [r for r in traffic.seen if r.api == "Produce" and "NOT_LEADER_OR_FOLLOWER" in r.error_codes]
    assert len(injected) == 2


@pytest.mark.spark
@pytest.mark.timeout(400)
def test_requests_errors_and_latency_per_api(traffic: Traffic, analysis: Analysis) -> None:
    seen = traffic.all
    assert f"**{len(seen)} requests**" in analysis.text
    per_api = _by(analysis.tables["Requests per API"], "api")
    assert {api: int(r["requests"]) for api, r in per_api.items()} == collections.Counter(r.api for r in seen)
    # a first JoinGroup's MEMBER_ID_REQUIRED is the protocol's step, not an error
    assert any(r.api == "JoinGroup" and "MEMBER_ID_REQUIRED" in r.error_codes for r in seen)
    errors = collections.Counter(r.api for r in seen if _failures(r))
    assert {api: int(r["errors"]) for api, r in per_api.items() if int(r["errors"])} == errors
    assert int(per_api["Produce"]["errors"]) == 2
    for api, row in per_api.items():
        assert int(row["request bytes"]) == sum(r.request_bytes for r in seen if r.api == api)
        assert row["versions"] == ", ".join(str(v) for v in sorted({r.version for r in seen if r.api == api}))

    codes = {(r["api"], r["error"]): int(r["requests"]) for r in analysis.tables["Errors"]}
    assert codes == collections.Counter((r.api, e) for r in seen if _failures(r) for e in _failures(r))
    assert ("JoinGroup", "MEMBER_ID_REQUIRED") not in codes
    assert codes[("Produce", "NOT_LEADER_OR_FOLLOWER")] == 2  # what was injected

    latency = _by(analysis.tables["Latency per API"], "api")
    for api, row in latency.items():
        values = sorted(r.latency_ms for r in seen if r.api == api)
        assert float(row["max ms"]) == pytest.approx(values[-1], abs=1e-3)
        for column, p in (("p50 ms", 0.5), ("p95 ms", 0.95), ("p99 ms", 0.99)):
            # percentile_approx is exact below 10000 values: the smallest value with >= p of them at or below it
            assert float(row[column]) == pytest.approx(values[max(math.ceil(p * len(values)) - 1, 0)], abs=1e-3)


@pytest.mark.spark
@pytest.mark.timeout(400)
def test_clients_and_their_api_versions(traffic: Traffic, analysis: Analysis) -> None:
    seen = traffic.all
    software = _software_by_connection(seen)
    expected = collections.Counter((r.client_id, *software.get((r.broker, r.client), (None, None))) for r in seen)
    clients = analysis.tables["Clients"]
    got = {(r["client id"] or None, r["software"] or None, r["software version"] or None): int(r["requests"])
           for r in clients}
    assert got == expected
    names = {r["client id"]: r["software"] for r in clients}
    assert names["an-producer"] == names["an-c1"] == names["an-c2"] == "confluent-kafka-python"
    assert names["an-kpy"] == "kafka-python"
    assert names["an-legacy"] == "legacy-client"  # its first request, before ApiVersions, too
    errors = {r["client id"]: int(r["errors"]) for r in clients}
    assert errors["an-producer"] == 2 and errors["an-kpy"] == 0

    versions = collections.defaultdict(set)
    for r in seen:
        name, version = software.get((r.broker, r.client), (None, None))
        versions[(name or "", version or "", r.api)].add(r.version)
    table = {(r["software"], r["software version"], r["api"]): r["versions"]
             for r in analysis.tables["Client API versions"]}
    assert table == {k: ", ".join(str(v) for v in sorted(vs)) for k, vs in versions.items()}


@pytest.mark.spark
@pytest.mark.timeout(400)
def test_consumer_group_timeline(traffic: Traffic, analysis: Analysis) -> None:
    mine = [r for r in traffic.seen if "an-billing" in r.groups]
    row = _by(analysis.tables["Consumer groups"], "group")["an-billing"]
    count = collections.Counter(r.api for r in mine)
    assert int(row["requests"]) == len(mine)
    assert int(row["joins"]) == count["JoinGroup"] >= 2
    assert int(row["joins ok"]) == sum(1 for r in mine if r.api == "JoinGroup" and not r.error_codes)
    assert int(row["syncs"]) == count["SyncGroup"] and int(row["heartbeats"]) == count["Heartbeat"]
    assert int(row["commits"]) == count["OffsetCommit"] and int(row["leaves"]) == count["LeaveGroup"]
    generations = {r.generation_id for r in mine if r.generation_id is not None}
    assert int(row["rebalances"]) == len(generations) >= 2
    assert int(row["last generation"]) >= traffic.two_member_generation  # the model's, while two were members

    timeline = [r for r in analysis.tables["Group generations"] if r["group"] == "an-billing"]
    assert [int(r["generation"]) for r in timeline] == sorted(generations)
    two = next(r for r in timeline if int(r["generation"]) == traffic.two_member_generation)
    assert int(two["members"]) == 2
    assert [r["first seen"] for r in timeline] == sorted(r["first seen"] for r in timeline)


@pytest.mark.spark
@pytest.mark.timeout(400)
def test_producer_throughput_per_topic(traffic: Traffic, analysis: Analysis) -> None:
    topics = _by(analysis.tables["Producer throughput"], "topic")
    assert {t: int(r["records"]) for t, r in topics.items()} == traffic.produced  # the injected errors not twice
    for topic, row in topics.items():
        ok = [r for r in traffic.seen if r.api == "Produce" and not r.error_codes and r.topics[0][0] == topic]
        assert int(row["produce requests"]) == len(ok)
        assert int(row["bytes"]) == sum(r.request_bytes for r in ok)
        assert float(row["peak records/s"]) > 0 and float(row["mean records/s"]) > 0


@pytest.mark.spark
@pytest.mark.timeout(400)
def test_plots_are_written_next_to_the_report(analysis: Analysis) -> None:
    images = re.findall(r"!\[[^\]]*\]\(([^)]+)\)", analysis.text)
    assert sorted(images) == sorted(f"traffic-{n}.png" for n in
                                    ("requests", "latency", "clients", "groups", "throughput"))
    for name in images:
        assert (analysis.path.parent / name).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


# --- without Spark ----------------------------------------------------------------------------------------
def test_html_and_markdown_rendering_escape_what_clients_send() -> None:
    report = Report("t", "**3 requests**", [Section("Clients", columns=["client id", "requests"],
                                                    rows=[["a|b<script>", 3], [None, 1.5]],
                                                    images=[("plot", "t-clients.png")])])
    tables = _tables(report.markdown())
    assert tables["Clients"] == [{"client id": "a|b<script>", "requests": "3"}, {"client id": "", "requests": "1.500"}]
    page = report.html()
    assert "a|b&lt;script&gt;" in page and "<script>" not in page
    assert "<b>3 requests</b>" in page and "<img src='t-clients.png'" in page and "<td class='n'>3</td>" in page


def test_missing_pyspark_is_a_readable_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setitem(sys.modules, "pyspark", None)
    assert main(["analyze", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert "pip install 'fakekafka[spark]'" in err and "pyspark" in err and "Traceback" not in err


@pytest.mark.parametrize(("args", "words"), [
    (["--out", "r.pdf"], "--out r.pdf: the report is Markdown, written to a .md or .markdown file (--format html "
                         "writes HTML: .html or .htm)"),
    (["--out", "r.md", "--format", "html"], "--out r.md: the report is HTML, written to a .html or .htm file"),
    (["--out", "report"], "--out report: the report is Markdown"),
])
def test_an_output_name_it_would_not_write_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                      monkeypatch: pytest.MonkeyPatch, args: list[str],
                                                      words: str) -> None:
    """Refused before the recording is read or Spark starts (no pyspark needed), and nothing is written."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setitem(sys.modules, "pyspark", None)
    assert main(["analyze", str(tmp_path / "nope"), *args]) == 2
    assert f"fakekafka analyze: {words}" in capsys.readouterr().err
    assert list(tmp_path.iterdir()) == []


def test_missing_recording_is_a_clear_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip("pyspark")
    pytest.importorskip("matplotlib")
    assert main(["analyze", str(tmp_path / "nope")]) == 1
    assert "no recording at" in capsys.readouterr().err
    assert main(["analyze", str(tmp_path)]) == 1  # a directory without Parquet files
    assert "no .parquet files" in capsys.readouterr().err
