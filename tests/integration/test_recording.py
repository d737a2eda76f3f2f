"""Recordings: real client traffic lands in hour-partitioned Parquet files whose rows match what the clients
did; files are written by count, by time and on close, off the server's loop; `serve --record` works."""

from __future__ import annotations

import collections
import dataclasses
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

import fakekafka
from fakekafka.observe.recording import RequestRecorder, hour_partition, read_records, record_cluster, recording_schema
from fakekafka.observe.records import RequestRecord

ds = pytest.importorskip("pyarrow.dataset")
pq = pytest.importorskip("pyarrow.parquet")


def _wait(predicate, timeout: float = 10.0) -> None:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.02)


def _synthetic(n: int, start: float, step: float) -> list[RequestRecord]:
    """Requests `step` seconds apart, varied in every column (nulls, empty and multi-element lists)."""
    out = []
    for i in range(n):
        topics = tuple((f"t{j}", j - 1) for j in range(i % 3))
        records = i % 17
        partition_records = tuple(records - j if j == 0 else j for j in range(len(topics))) if records else ()
        out.append(RequestRecord(
            time_ms=i * 7, broker=1 + i % 3, client=f"127.0.0.1:{40000 + i % 5}", client_id=None if i % 11 == 0 else
            f"app-{i % 4}", api=("Produce", "Fetch", "JoinGroup", "Heartbeat")[i % 4], version=i % 13,
            correlation_id=i, latency_ms=0.25 * i, error_codes=("NOT_LEADER_OR_FOLLOWER",) if i % 9 == 0 else (),
            wall_time=start + i * step, client_software_name=None if i % 5 == 0 else "sw",
            client_software_version=None if i % 5 == 0 else "1.2", request_bytes=100 + i, response_bytes=i,
            topics=topics, groups=("g",) if i % 4 == 2 else (), records=records, partition_records=partition_records,
            generation_id=i % 6 if i % 4 == 2 else None, member_id=f"m-{i}" if i % 4 == 2 else None))
    return out


def test_hour_partitions_and_round_trip(tmp_path: Path) -> None:
    start = 1_800_000_000 - 1_800_000_000 % 3600 + 3000  # 50 min into an hour; 3.4 h of records: 5 hours
    written = _synthetic(300, start, 41.3)
    hours = collections.Counter(hour_partition(r.wall_time) for r in written)
    assert len(hours) == 5
    with RequestRecorder(tmp_path, max_records=64) as recorder:  # batches straddle hour boundaries
        for r in written:
            recorder(r)
    assert {p.parent.name for p in recorder.files} == set(hours)
    assert recorder.records_written == 300
    for path in recorder.files:
        table = pq.read_table(path)
        assert table.schema.equals(recording_schema())  # (Parquet names list items "element", Arrow "item")
        assert table.schema.metadata == {b"fakekafka.recording": b"1"}
        assert {hour_partition(t.timestamp()) for t in table.column("time").to_pylist()} == {path.parent.name}
    per_dir = collections.Counter()
    for path in recorder.files:
        per_dir[path.parent.name] += pq.read_metadata(path).num_rows
    assert per_dir == hours
    back = read_records(tmp_path)
    assert len(back) == len(written)
    for got, want in zip(back, sorted(written, key=lambda r: r.wall_time), strict=True):
        assert got.wall_time == pytest.approx(want.wall_time, abs=1e-6)  # microseconds in the file
        assert dataclasses.replace(got, wall_time=0.0) == dataclasses.replace(want, wall_time=0.0)
    # Hive partitioning as any reader sees it: the directory's hour matches the row's time
    table = ds.dataset(tmp_path, format="parquet", partitioning="hive").to_table()
    assert table.num_rows == 300
    assert all(f"hour={h}" == hour_partition(t.timestamp())
               for h, t in zip(table.column("hour").to_pylist(), table.column("time").to_pylist(), strict=True))


def test_writes_a_file_every_max_records_in_the_background(tmp_path: Path) -> None:
    records = _synthetic(25, 1_800_000_000, 0.01)
    recorder = RequestRecorder(tmp_path, max_records=10, max_seconds=3600)
    for r in records:
        recorder(r)
    _wait(lambda: len(recorder.files) == 2)  # two full buffers, without flush or close
    assert recorder.records_written == 20
    recorder.close()
    assert len(recorder.files) == 3 and recorder.records_written == 25
    assert [pq.read_metadata(p).num_rows for p in recorder.files] == [10, 10, 5]
    with pytest.raises(RuntimeError, match="closed"):
        recorder(records[0])


def test_writes_what_waited_max_seconds_and_on_flush(tmp_path: Path) -> None:
    records = _synthetic(5, 1_800_000_000, 0.01)
    timed = RequestRecorder(tmp_path / "timed", max_records=1000, max_seconds=0.2)
    for r in records[:3]:
        timed(r)
    _wait(lambda: timed.records_written == 3, 5)  # the timer wrote them: no flush, no close
    time.sleep(0.5)  # an idle recorder writes no empty files
    assert len(timed.files) == 1
    timed.close()
    assert len(timed.files) == 1

    flushed = RequestRecorder(tmp_path / "flushed", max_records=1000, max_seconds=3600)
    for r in records:
        flushed(r)
    flushed.flush()  # returns once written
    assert flushed.records_written == 5 and len(read_records(tmp_path / "flushed")) == 5
    flushed.close()
    assert len(flushed.files) == 1


def test_the_listener_does_not_wait_for_writes(tmp_path: Path) -> None:
    """A slow disk must not stall the server's loop: writing happens on the recorder's thread."""
    recorder = RequestRecorder(tmp_path, max_records=10, max_seconds=3600)
    real_write = recorder._pq.write_table

    class SlowParquet:
        def write_table(self, *args: object, **kwargs: object) -> None:
            time.sleep(0.3)
            real_write(*args, **kwargs)

    recorder._pq = SlowParquet()
    records = _synthetic(100, 1_800_000_000, 0.01)
    started = time.perf_counter()
    for r in records:
        recorder(r)
    took = time.perf_counter() - started
    assert took < 0.25, f"100 listener calls took {took:.2f}s while 10 files of 0.3s each were being written"
    recorder.close()
    assert recorder.records_written == 100 and len(recorder.files) == 10


def test_a_failed_write_is_raised_on_close_and_the_recorder_goes_on(tmp_path: Path) -> None:
    recorder = RequestRecorder(tmp_path, max_records=5, max_seconds=3600)
    real_write = recorder._pq.write_table
    failures = [OSError(28, "No space left on device")]

    class FullDisk:
        def write_table(self, *args: object, **kwargs: object) -> None:
            if failures:
                raise failures.pop()
            real_write(*args, **kwargs)

    recorder._pq = FullDisk()
    for r in _synthetic(10, 1_800_000_000, 0.01):
        recorder(r)
    with pytest.raises(OSError, match="No space left"):
        recorder.close()
    assert recorder.records_written == 5  # the second batch was written after the failure


def test_without_pyarrow_the_error_names_the_extra(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "pyarrow", None)
    monkeypatch.setitem(sys.modules, "pyarrow.parquet", None)
    with pytest.raises(ImportError, match=r"pip install 'fakekafka\[record\]'"):
        RequestRecorder(tmp_path)
    # importing fakekafka (the CLI included) never pulls in pyarrow, pyspark or matplotlib
    code = ("import sys, fakekafka, fakekafka.ops.cli, fakekafka.observe.recording, fakekafka.ops.analyze; "
            "print(sorted(m for m in ('pyarrow', 'pyspark', 'matplotlib') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=30, check=True)
    assert out.stdout.strip() == "[]"


@pytest.mark.clients
def test_recording_of_real_clients_matches_what_they_did(tmp_path: Path) -> None:
    confluent_kafka = pytest.importorskip("confluent_kafka")
    pytest.importorskip("kafka")
    seen: list[RequestRecord] = []
    produced = {"rec-orders": 30, "rec-events": 10}
    with fakekafka.Cluster(partitions=2) as cluster:
        server = cluster.server
        cluster.call(lambda: server.add_request_listener(seen.append))
        recorder = record_cluster(cluster, tmp_path, max_records=40)
        bootstrap = cluster.bootstrap_servers
        producer = confluent_kafka.Producer({"bootstrap.servers": bootstrap, "client.id": "rec-producer",
                                             "linger.ms": 20})
        for topic, n in produced.items():
            for i in range(n):
                producer.produce(topic, value=b"v%d" % i, partition=i % 2)
        assert producer.flush(10) == 0
        from kafka import KafkaProducer
        kp = KafkaProducer(bootstrap_servers=bootstrap, client_id="rec-kpy")
        for i in range(5):
            kp.send("rec-orders", b"k%d" % i, partition=0)
        kp.flush(10)
        kp.close(10)
        produced["rec-orders"] += 5
        consumer = confluent_kafka.Consumer({"bootstrap.servers": bootstrap, "group.id": "rec-group",
                                             "client.id": "rec-consumer", "auto.offset.reset": "earliest",
                                             "enable.auto.commit": False})
        consumer.subscribe(list(produced))
        got = 0
        deadline = time.monotonic() + 20
        while got < sum(produced.values()) and time.monotonic() < deadline:
            msg = consumer.poll(0.2)
            if msg is not None and msg.error() is None:
                got += 1
        consumer.commit(asynchronous=False)
        generation = cluster.group("rec-group").generation_id
        consumer.close()
        cluster.call(lambda: [server.remove_request_listener(fn) for fn in (seen.append, recorder)])
        recorder.close()
    assert got == 45

    table = ds.dataset(tmp_path, format="parquet", partitioning="hive").to_table()
    rows = table.to_pylist()
    assert len(rows) == len(seen) > 20
    assert collections.Counter(r["api"] for r in rows) == collections.Counter(r.api for r in seen)
    assert len(recorder.files) <= len(rows) // 40 + 2  # a file per 40 requests (plus the rest), not per request
    assert {"hour=" + r["hour"] for r in rows} == {hour_partition(r.wall_time) for r in seen}

    produce = [r for r in rows if r["api"] == "Produce"]
    assert all(not r["error_codes"] for r in produce)
    per_topic: collections.Counter[str] = collections.Counter()
    for r in produce:
        (topic,) = {t["topic"] for t in r["topics"]}  # each of these requests named one topic
        per_topic[topic] += r["records"]
    assert per_topic == produced
    assert {(t["topic"], t["partition"]) for r in produce for t in r["topics"]} == {
        ("rec-orders", 0), ("rec-orders", 1), ("rec-events", 0), ("rec-events", 1)}
    assert sum(r["records"] for r in rows if r["api"] == "Fetch") == got

    joins = [r for r in rows if r["api"] == "JoinGroup"]
    assert joins and all(r["groups"] == ["rec-group"] for r in joins)
    assert max(r["generation_id"] or 0 for r in joins) == generation
    assert any(r["member_id"] for r in joins)
    commits = [r for r in rows if r["api"] == "OffsetCommit"]
    assert commits and {(t["topic"], t["partition"]) for t in commits[-1]["topics"]} >= {("rec-orders", 0)}

    by_client = {r["client_id"]: r["client_software_name"] for r in rows if r["client_software_name"]}
    assert by_client["rec-producer"] == "confluent-kafka-python" == by_client["rec-consumer"]
    assert by_client["rec-kpy"] == "kafka-python"
    assert all(r["request_bytes"] > 0 and r["latency_ms"] >= 0 for r in rows)


def test_serve_record_writes_readable_files(tmp_path: Path) -> None:
    confluent_kafka = pytest.importorskip("confluent_kafka")
    recording = tmp_path / "rec"
    proc = subprocess.Popen([sys.executable, "-m", "fakekafka", "serve", "--port", "0", "--record", str(recording)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        assert line.startswith("fakekafka ready:"), line + (proc.stderr.read() if proc.poll() is not None else "")
        bootstrap = next(p.split("=", 1)[1] for p in line.split() if p.startswith("bootstrap.servers="))
        producer = confluent_kafka.Producer({"bootstrap.servers": bootstrap, "client.id": "serve-rec"})
        for i in range(7):
            producer.produce("served", b"x%d" % i)
        assert producer.flush(10) == 0
        del producer
    finally:
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=20)
    assert proc.returncode == 0, err
    assert "recorded" in err
    records = read_records(recording)
    assert sum(r.records for r in records if r.api == "Produce") == 7
    assert {r.client_id for r in records} == {"serve-rec"}
    assert all(p.parent.name.startswith("hour=") for p in recording.rglob("*.parquet"))


def test_serve_record_to_an_unwritable_place_is_a_clear_error(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    proc = subprocess.run([sys.executable, "-m", "fakekafka", "serve", "--port", "0", "--record",
                           str(blocker / "rec")], capture_output=True, text=True, timeout=30)
    assert proc.returncode == 1 and "--record" in proc.stderr and "Traceback" not in proc.stderr


def test_cluster_record_argument_records_until_stop(tmp_path: Path) -> None:
    confluent_kafka = pytest.importorskip("confluent_kafka")
    with fakekafka.Cluster(record=tmp_path) as cluster:
        producer = confluent_kafka.Producer({"bootstrap.servers": cluster.bootstrap_servers, "client.id": "arg"})
        for i in range(4):
            producer.produce("arg-topic", b"%d" % i)
        assert producer.flush(10) == 0
        del producer
    records = read_records(tmp_path)  # complete once the cluster has stopped
    assert sum(r.records for r in records if r.api == "Produce") == 4
    assert {r.client_id for r in records} == {"arg"}
