"""`fakekafka serve --data-dir` as a user runs it: kill -9 under acks=all load, restart, every acknowledged
record there once; Kafka's own kafka-dump-log reads the segments; unusable dirs refused in words."""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from fakekafka.storage.datadir import read_segment
from fakekafka.wire import ApiKey

confluent_kafka = pytest.importorskip("confluent_kafka")


def _start(data_dir: Path, *args: str, log: Path | None = None) -> tuple[subprocess.Popen[str], str]:
    """`serve` on the data dir; its log to `log` if given (a file: a pipe nobody reads would fill)."""
    with contextlib.ExitStack() as files:
        stderr = files.enter_context(open(log, "w")) if log is not None else subprocess.PIPE
        proc = subprocess.Popen(
            [sys.executable, "-m", "fakekafka", "serve", "--port", "0", "--data-dir", str(data_dir), *args],
            stdout=subprocess.PIPE,
            stderr=stderr,
            text=True,
        )
    assert proc.stdout is not None
    line = proc.stdout.readline()
    assert line.startswith("fakekafka ready"), (line, proc.stderr.read() if proc.stderr else log and log.read_text())
    return proc, next(p.split("=", 1)[1] for p in line.split() if p.startswith("bootstrap.servers="))


def _read_all(bootstrap: str, topic: str, partitions: int) -> dict[tuple[int, int], bytes]:
    """Every record of the topic, by (partition, offset), read with CRC checks on."""
    from confluent_kafka import Consumer, TopicPartition

    c = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": "check",
            "enable.auto.commit": False,
            "check.crcs": True,
            "fetch.error.backoff.ms": 10,
        }
    )
    ends = {p: c.get_watermark_offsets(TopicPartition(topic, p), timeout=10)[1] for p in range(partitions)}
    c.assign([TopicPartition(topic, p, 0) for p in range(partitions)])
    out: dict[tuple[int, int], bytes] = {}
    next_offset = dict.fromkeys(ends, 0)  # per partition: kept as it goes (a scan of `out` per record is quadratic)
    deadline = time.monotonic() + 20
    while any(next_offset[p] < ends[p] for p in ends):
        assert time.monotonic() < deadline, (ends, next_offset)
        msg = c.poll(0.2)
        if msg is None:
            continue
        assert msg.error() is None, msg.error()
        key = (msg.partition(), msg.offset())
        assert key not in out
        out[key] = msg.value()
        next_offset[key[0]] = max(next_offset[key[0]], key[1] + 1)
    c.close()
    return out


def _topic(bootstrap: str) -> tuple[str, str | None]:
    from confluent_kafka.admin import AdminClient, ConfigResource

    admin = AdminClient({"bootstrap.servers": bootstrap})
    topic_id = admin.describe_topics(confluent_kafka.TopicCollection(["crash"]))["crash"].result(10).topic_id
    configs = next(iter(admin.describe_configs([ConfigResource("TOPIC", "crash")]).values())).result(10)
    return str(topic_id), configs["retention.ms"].value


def test_kill_9_under_acks_all_load_loses_nothing_acknowledged(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """Also: the topic comes back with its id and configs. The restart is in this process (a second child would
    add its start-up time, seconds on a loaded machine, for nothing the first one did not show)."""
    from confluent_kafka import Producer
    from confluent_kafka.admin import AdminClient, NewTopic

    import fakekafka

    data = tmp_path / "data"
    proc, bootstrap = _start(data)
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic("crash", 2, 1, config={"retention.ms": "86400001"})])["crash"].result(10)
    topic = _topic(bootstrap)
    assert topic[1] == "86400001"
    acked: dict[tuple[int, int], bytes] = {}

    def delivered(err: object, msg: object) -> None:
        if err is None:
            acked[(msg.partition(), msg.offset())] = msg.value()  # type: ignore[attr-defined]

    producer = Producer(
        {
            "bootstrap.servers": bootstrap,
            "acks": "all",
            "enable.idempotence": True,
            "linger.ms": 2,
            "batch.num.messages": 100,
            "message.timeout.ms": 3000,
            "reconnect.backoff.max.ms": 100,
        }
    )
    i = 0
    while len(acked) < 2000:  # still producing when the kill comes: requests in flight, batches being written
        producer.produce("crash", value=b"value-%08d" % i, key=b"%d" % (i % 7), on_delivery=delivered)
        i += 1
        if i % 100 == 0:
            producer.poll(0.001)
    proc.kill()
    proc.communicate(timeout=20)
    producer.poll(0)
    producer.purge()
    producer.flush(0)
    assert len(acked) >= 2000
    segment = data / "broker-1" / "tmp_kafka-logs" / "crash-0" / "00000000000000000000.log"
    with open(segment, "r+b") as f:  # as a write cut short by the kill would leave the tail
        first = f.read(200)
        f.seek(0, os.SEEK_END)
        f.write(first[:150])

    with caplog.at_level("WARNING", "fakekafka.storage"), fakekafka.Cluster(data_dir=data) as cluster:
        assert _topic(cluster.bootstrap_servers) == topic
        stored = _read_all(cluster.bootstrap_servers, "crash", 2)
    assert "crash-0" in caplog.text and "cut" in caplog.text  # the torn tail (150 bytes, or more if the kill tore one)
    missing = {k: v for k, v in acked.items() if stored.get(k) != v}
    assert not missing, f"{len(missing)} acknowledged records lost, e.g. {next(iter(missing.items()))}"
    values = list(stored.values())
    assert len(values) == len(set(values))  # nothing twice
    for seg in data.glob("broker-1/*/*/*.log"):
        assert read_segment(seg.read_bytes(), int(seg.stem), 0)[2] is None, seg


def test_a_flipped_byte_in_an_old_segment_keeps_every_later_segment(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """A byte flipped in a rolled (fsynced) segment, and the active one's tail torn by a kill -9: the restart
    recovers only past the recovery point, as Kafka's, so every other acknowledged record is read back by a real
    client, the corrupt one is said in words and kept as stored, and new records get new offsets."""
    from confluent_kafka import Consumer, Producer, TopicPartition
    from confluent_kafka.admin import AdminClient, NewTopic

    import fakekafka

    data = tmp_path / "data"
    proc, bootstrap = _start(data)
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic("seg", 1, 1, config={"segment.bytes": "1048576"})])["seg"].result(10)
    acked: dict[int, bytes] = {}
    producer = Producer(
        {
            "bootstrap.servers": bootstrap,
            "acks": "all",
            "enable.idempotence": True,
            "linger.ms": 5,
            "batch.num.messages": 20,
        }
    )
    for i in range(1000):
        producer.produce(
            "seg",
            value=b"." * 5000 + b"value-%08d" % i,
            on_delivery=lambda err, msg: err is None and acked.__setitem__(msg.offset(), msg.value()),
        )
    assert producer.flush(30) == 0 and len(acked) == 1000
    proc.kill()
    proc.communicate(timeout=20)
    d = data / "broker-1" / "tmp_kafka-logs" / "seg-0"
    segments = sorted(d.glob("*.log"))
    assert len(segments) >= 5
    old = segments[0].read_bytes()
    batches = read_segment(old, 0, 0)[0]
    at = len(batches[0]) + len(batches[1]) - 2  # a digit of the last value of the segment's second batch
    corrupt = {int.from_bytes(batches[1][:8], "big") + int.from_bytes(batches[1][23:27], "big")}
    with open(segments[0], "r+b") as f:
        f.seek(at)
        f.write(bytes([old[at] ^ 0x01]))
        f.seek(0, os.SEEK_END)
    with open(segments[-1], "ab") as f:  # a write cut short by the kill
        f.write(old[:150])

    with caplog.at_level("WARNING", "fakekafka.storage"), fakekafka.Cluster(data_dir=data) as cluster:
        c = Consumer(
            {
                "bootstrap.servers": cluster.bootstrap_servers,
                "group.id": "g",
                "check.crcs": False,
                "enable.auto.commit": False,
            }
        )
        c.assign([TopicPartition("seg", 0, 0)])
        got: dict[int, bytes] = {}
        deadline = time.monotonic() + 30
        while len(got) < 1000:
            assert time.monotonic() < deadline, len(got)
            msg = c.poll(0.2)
            if msg is not None:
                assert msg.error() is None, msg.error()
                got[msg.offset()] = msg.value()
        c.close()
        more = Producer({"bootstrap.servers": cluster.bootstrap_servers, "acks": "all"})
        offsets: list[int] = []
        for i in range(5):
            more.produce("seg", value=b"after-%d" % i, on_delivery=lambda err, msg: offsets.append(msg.offset()))
        assert more.flush(10) == 0
    assert {o for o in acked if got[o] != acked[o]} == corrupt  # the one flipped value, served as stored
    assert got.keys() == acked.keys()
    assert sorted(offsets) == list(range(1000, 1005))  # after the last acknowledged one: none used again
    assert f"segment {segments[0]} is corrupt: a CRC mismatch" in caplog.text
    assert f"segment {segments[-1]}: its batches are valid up to byte" in caplog.text
    assert all(s.exists() for s in segments)


def test_kafkas_dump_log_reads_a_fakekafka_segment(tmp_path: Path) -> None:
    import fakekafka
    from tests.javautil import _tool
    from tests.kafkacli import tools_classpath

    classpath, java = tools_classpath(), _tool("java")
    with fakekafka.Cluster(data_dir=tmp_path, topics={"dump": 1}) as cluster:
        for i in range(3):
            cluster.produce("dump", b"payload-%d" % i, key=b"k")
    segment = tmp_path / "broker-1" / "tmp_kafka-logs" / "dump-0" / "00000000000000000000.log"
    r = subprocess.run(
        [java, "-cp", classpath, "org.apache.kafka.tools.DumpLogSegments", "--files", str(segment), "--print-data-log"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert r.returncode == 0, r.stderr
    assert r.stdout.count("isvalid: true") == 3
    assert [line.rsplit("payload: ", 1)[1] for line in r.stdout.splitlines() if "payload:" in line] == [
        "payload-0",
        "payload-1",
        "payload-2",
    ]


@pytest.mark.parametrize(
    ("setup", "said"),
    [
        ("file", "cannot use"),
        ("foreign", "not a fakekafka data dir"),
        ("format", "format 7; this fakekafka reads format 1 only"),
    ],
)
def test_unusable_data_dirs_are_refused_in_words(
    tmp_path: Path, setup: str, said: str, capsys: pytest.CaptureFixture[str]
) -> None:
    from fakekafka.ops.cli import main

    target = tmp_path / "d"
    if setup == "file":
        (tmp_path / "f").write_text("")
        target = tmp_path / "f" / "d"
    elif setup == "foreign":
        target.mkdir()
        (target / "00000000000000000000.log").write_bytes(b"x")
    else:
        target.mkdir()
        (target / "fakekafka-metadata.json").write_text('{"format": 7}')
    assert main(["serve", "--port", "0", "--data-dir", str(target)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("fakekafka: --data-dir: ") and said in err, err


def test_transactional_ids_and_an_open_transaction_survive_a_restart(tmp_path: Path) -> None:
    """The coordinator's state comes back from `__transaction_state`: the open transaction is still Ongoing under
    its producer id and epoch (not aborted at start), and the id's next producer fences and aborts it, as Kafka."""
    import fakekafka

    tid = "restart-txn"
    with fakekafka.Cluster(data_dir=tmp_path, topics={"txn": 1}) as cluster:
        p = confluent_kafka.Producer(
            {"bootstrap.servers": cluster.bootstrap_servers, "transactional.id": tid, "transaction.timeout.ms": 60_000}
        )
        p.init_transactions(30)
        p.begin_transaction()
        p.produce("txn", b"open")
        p.flush(30)
        before = cluster.transaction(tid)
        assert before is not None and before.state == "Ongoing"
    with fakekafka.Cluster(data_dir=tmp_path) as cluster:
        after = cluster.transaction(tid)
        assert after is not None
        assert (after.producer_id, after.producer_epoch, after.state, after.partitions) == (
            before.producer_id,
            before.producer_epoch,
            "Ongoing",
            before.partitions,
        )
        assert cluster.last_stable_offset("txn", 0) == 0  # still open
        q = confluent_kafka.Producer({"bootstrap.servers": cluster.bootstrap_servers, "transactional.id": tid})
        q.init_transactions(30)  # fences the old producer: its transaction is aborted
        q.begin_transaction()
        q.produce("txn", b"committed")
        q.commit_transaction(30)
        again = cluster.transaction(tid)
        assert again is not None and again.producer_id == before.producer_id and again.state == "CompleteCommit"
        c = confluent_kafka.Consumer(
            {
                "bootstrap.servers": cluster.bootstrap_servers,
                "group.id": "restart-txn",
                "isolation.level": "read_committed",
                "auto.offset.reset": "earliest",
            }
        )
        c.subscribe(["txn"])
        got: list[bytes] = []
        deadline = time.monotonic() + 20
        while not got and time.monotonic() < deadline:
            msg = c.poll(0.2)
            if msg is not None and msg.error() is None:
                got.append(msg.value())
        c.close()
        assert got == [b"committed"]


def test_a_share_group_continues_after_a_restart_from_its_persisted_state(tmp_path: Path) -> None:
    """`__share_group_state` brings the share-partition back: confluent-kafka's ShareConsumer, after the restart,
    gets only what was not accepted before it, each record with its delivery count kept (released once: 2)."""
    from confluent_kafka import AcknowledgeType, ShareConsumer
    from confluent_kafka.admin import AdminClient, AlterConfigOpType, ConfigEntry, ConfigResource, ResourceType

    import fakekafka

    def consumer(bootstrap: str) -> ShareConsumer:
        c = ShareConsumer(
            {"bootstrap.servers": bootstrap, "group.id": "sq-group", "share.acknowledgement.mode": "explicit"}
        )
        c.subscribe(["sq"])
        return c

    def drain(c: ShareConsumer, handle: object, enough: object) -> None:
        deadline = time.monotonic() + 30
        while not enough() and time.monotonic() < deadline:  # type: ignore[operator]
            messages = c.poll(0.5)
            for m in messages:
                assert m.error() is None, m.error()
                handle(m)  # type: ignore[operator]
            if messages:
                c.commit_sync()

    with fakekafka.Cluster(data_dir=tmp_path, topics={"sq": 1}) as cluster:
        admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers})
        resource = ConfigResource(
            ResourceType.GROUP,
            "sq-group",
            incremental_configs=[
                ConfigEntry("share.auto.offset.reset", "earliest", incremental_operation=AlterConfigOpType.SET)
            ],
        )
        admin.incremental_alter_configs([resource])[resource].result(30)
        p = confluent_kafka.Producer({"bootstrap.servers": cluster.bootstrap_servers})
        for i in range(6):
            p.produce("sq", f"v{i}".encode())
        assert p.flush(30) == 0
        before: list[tuple[bytes, int]] = []
        c = consumer(cluster.bootstrap_servers)

        def first(m: Any) -> None:
            before.append((m.value(), m.delivery_count()))
            accepted = m.value() in (b"v0", b"v1", b"v2")
            c.acknowledge(m, AcknowledgeType.ACCEPT if accepted else AcknowledgeType.RELEASE)

        try:
            drain(c, first, lambda: len(before) >= 6)
        finally:
            c.close()
        assert sorted(before)[:3] == [(b"v0", 1), (b"v1", 1), (b"v2", 1)]
    with fakekafka.Cluster(data_dir=tmp_path) as cluster:
        after: list[tuple[bytes, int]] = []
        c = consumer(cluster.bootstrap_servers)

        def second(m: Any) -> None:
            after.append((m.value(), m.delivery_count()))
            c.acknowledge(m, AcknowledgeType.ACCEPT)

        try:
            drain(c, second, lambda: len(after) >= 3)
        finally:
            c.close()
        assert sorted(after) == [(b"v3", 2), (b"v4", 2), (b"v5", 2)]


@pytest.fixture
def full_disk(tmp_path: Path) -> Iterator[Path]:
    """A 2 MiB tmpfs: a filesystem that really fills (ENOSPC mid-write), unmounted afterwards."""
    disk = tmp_path / "disk"
    disk.mkdir()
    r = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=2m", "tmpfs", str(disk)], capture_output=True, text=True)
    if r.returncode != 0:
        pytest.skip(f"cannot mount a small tmpfs to fill (needs root): {r.stderr.strip() or r.returncode}")
    try:
        yield disk
    finally:
        if subprocess.run(["umount", str(disk)], capture_output=True).returncode != 0:
            subprocess.run(["umount", "-l", str(disk)], check=False)


def _fill(path: Path) -> None:
    """Takes every block still free on the filesystem holding `path`."""
    with open(path, "wb", buffering=0) as f:
        chunk = b"\0" * 4096
        with contextlib.suppress(OSError):
            while True:
                f.write(chunk)
    with open(path, "ab", buffering=0) as f, contextlib.suppress(OSError):
        while True:
            f.write(b"\0")


def test_a_full_disk_refuses_writes_with_storage_errors_and_loses_nothing_acknowledged(
    full_disk: Path, tmp_path: Path
) -> None:
    """A real filesystem filling under confluent-kafka's acks=all load on 3 brokers (the followers' writes fail
    in the cluster's tick): each refused batch is KAFKA_STORAGE_ERROR and leaves nothing in the segments, later
    batches go after the last whole one; a topic created while the disk is full is refused, not kept in memory
    only; the tick keeps running (an idle connection is closed);
    once there is room writes succeed again; after the restart every acknowledged record is there, in order."""
    from confluent_kafka import KafkaError, KafkaException, Producer
    from confluent_kafka.admin import AdminClient, NewTopic

    import fakekafka

    data, log = full_disk / "data", tmp_path / "serve.log"
    reserve = full_disk / "reserve"  # given back at the end: room again
    reserve.write_bytes(b"\0" * 256 * 1024)
    proc, bootstrap = _start(
        data,
        "--brokers",
        "3",
        "--connections-max-idle-ms",
        "4000",
        "--config",
        "replica.lag.time.max.ms=500",
        "--config",
        "offsets.topic.num.partitions=1",
        log=log,
    )
    try:
        admin = AdminClient({"bootstrap.servers": bootstrap})
        admin.create_topics([NewTopic("full", 1, 3)])["full"].result(10)
        acked: dict[int, bytes] = {}
        failed: list[KafkaError] = []

        def delivered(err: KafkaError | None, msg: Any) -> None:
            if err is None:
                acked[msg.offset()] = msg.value()
            else:
                failed.append(err)

        producer = Producer(
            {"bootstrap.servers": bootstrap, "acks": "all", "retries": 0, "linger.ms": 5, "message.timeout.ms": 20000}
        )

        def produce(n: int, start: int, size: int = 600) -> None:
            for i in range(start, start + n):
                producer.produce("full", os.urandom(size) + b"%08d" % i, on_delivery=delivered)
                producer.poll(0)
            assert producer.flush(30) == 0

        i, after_first = 0, 0
        while after_first < 200:  # past the first refusal: later batches must not follow a torn one
            assert i < 20_000, "the 2 MiB disk never filled"
            produce(50, i)
            i += 50
            if failed:
                after_first += 50
        assert {e.code() for e in failed} == {KafkaError.KAFKA_STORAGE_ERROR}, failed[:3]
        assert acked, "nothing was acknowledged before the disk filled"
        filler = full_disk / "filler"
        _fill(filler)  # not a block left: a topic's directory and the metadata cannot be written
        with pytest.raises(KafkaException) as refused:
            admin.create_topics([NewTopic("late", 1, 1)])["late"].result(10)
        assert refused.value.args[0].code() == KafkaError.KAFKA_STORAGE_ERROR, refused.value
        assert "late" not in admin.list_topics(timeout=10).topics
        before = len(failed)
        produce(5, i, 10_000)  # more than the slack in a segment's last page
        i += 5
        assert len(failed) == before + 5
        with socket.create_connection(bootstrap.split(",")[0].rsplit(":", 1)) as idle:  # the tick closes it
            idle.settimeout(20)
            assert idle.recv(1) == b""
        filler.unlink()
        reserve.unlink()
        ok = len(acked)
        produce(20, i)
        assert len(acked) == ok + 20, failed[before + 5 :]  # room again: writes succeed
        admin.create_topics([NewTopic("after", 1, 1)])["after"].result(10)
        p2 = Producer({"bootstrap.servers": bootstrap, "acks": "all"})
        p2.produce("after", b"kept")
        assert p2.flush(20) == 0
    finally:
        proc.terminate()
        proc.communicate(timeout=30)
    text = log.read_text()
    assert "Traceback" not in text, text[-3000:]
    assert text.count("cannot write to the data dir") == 1, text[-3000:]
    with fakekafka.Cluster(data_dir=data, brokers=3, config={"offsets.topic.num.partitions": "1"}) as cluster:
        stored = _read_all(cluster.bootstrap_servers, "full", 1)
        assert "late" not in cluster.state.topics
        after = _read_all(cluster.bootstrap_servers, "after", 1)
    missing = {o: v for o, v in acked.items() if stored.get((0, o)) != v}
    assert not missing, f"{len(missing)} of {len(acked)} acknowledged records lost, e.g. offset {min(missing)}"
    assert sorted(stored) == [(0, o) for o in sorted(acked)]  # in order, and nothing refused kept
    assert list(after.values()) == [b"kept"]


def test_kill_9_during_a_mass_creation_keeps_every_topic_acknowledged(tmp_path: Path) -> None:
    """CreateTopics of 300 topics each, back to back, until kill -9: every topic an answer acknowledged comes back
    with its id (each topic made is its own record in the metadata journal, written before the answer)."""
    import threading
    import uuid

    import fakekafka
    from tests.rawclient import RawClient

    data = tmp_path / "data"
    proc, bootstrap = _start(data)
    raw = RawClient(bootstrap, timeout=60)
    acked: dict[str, uuid.UUID] = {}
    stop = threading.Event()

    def create() -> None:
        k = 0
        with contextlib.suppress(ConnectionError, OSError):
            while not stop.is_set():
                r = raw.request(
                    ApiKey.CREATE_TOPICS,
                    7,
                    {
                        "topics": [
                            {
                                "name": f"m{k}-{i}",
                                "num_partitions": 1,
                                "replication_factor": 1,
                                "assignments": [],
                                "configs": [],
                            }
                            for i in range(300)
                        ],
                        "timeout_ms": 60_000,
                        "validate_only": False,
                    },
                )
                acked.update((t.name, t.topic_id) for t in r.topics if t.error_code == 0)
                k += 1

    thread = threading.Thread(target=create, daemon=True)
    thread.start()
    deadline = time.monotonic() + 120
    while len(acked) < 1500:  # several requests in: the next one is being made when the kill comes
        assert time.monotonic() < deadline and thread.is_alive(), len(acked)
        time.sleep(0.01)
    proc.kill()
    proc.communicate(timeout=20)
    stop.set()
    thread.join(60)
    raw.close()
    with fakekafka.Cluster(data_dir=data) as cluster:
        made = {name: t.topic_id for name, t in cluster.state.topics.items()}
    missing = {n for n, tid in acked.items() if made.get(n) != tid}
    assert not missing, f"{len(missing)} acknowledged topics lost, e.g. {sorted(missing)[:3]}"


def test_a_stale_metadata_file_sets_unnamed_partitions_aside_and_says_so(tmp_path: Path) -> None:
    """`serve` started on a data dir whose metadata file is older than its logs (restored from a backup, copied
    in from another run) keeps the partitions it does not name: renamed `topic-N.<id>-stray` as Kafka's LogManager
    renames a stray log, a warning in words on stderr for each, their records still in the segment; a real client
    then sees only the topics the metadata names and may make the same name again, empty."""
    from confluent_kafka import Producer
    from confluent_kafka.admin import AdminClient, NewTopic

    from fakekafka.storage.journal import JOURNAL_FILE, METADATA_FILE

    data = tmp_path / "data"

    def run(log: Path | None = None, make: str | None = None) -> set[str]:
        """One `serve` on the data dir, stopped by SIGTERM: makes `make` (2 partitions, a record in each) if
        given, and returns the topics a client sees."""
        proc, bootstrap = _start(data, log=log)
        try:
            admin = AdminClient({"bootstrap.servers": bootstrap})
            if make is not None:
                admin.create_topics([NewTopic(make, 2, 1)])[make].result(10)
                producer = Producer({"bootstrap.servers": bootstrap, "acks": "all"})
                for p in range(2):
                    producer.produce(make, f"precious {p}".encode(), partition=p)
                assert producer.flush(20) == 0
            return {t for t in admin.list_topics(timeout=10).topics if not t.startswith("__")}
        finally:
            proc.terminate()
            proc.communicate(timeout=30)

    assert run(make="kept") == {"kept"}
    stale = {name: (data / name).read_bytes() for name in (METADATA_FILE, JOURNAL_FILE) if (data / name).exists()}
    assert run(make="later") == {"kept", "later"}
    for name in (METADATA_FILE, JOURNAL_FILE):  # the metadata from before "later" was made
        (data / name).unlink(missing_ok=True)
    for name, content in stale.items():
        (data / name).write_bytes(content)

    log = tmp_path / "serve.log"
    assert run(log) == {"kept"}
    text = log.read_text()
    assert "Traceback" not in text, text[-3000:]
    strays = sorted(data.rglob("later-*-stray"))
    assert sorted(s.name.split(".", 1)[0] for s in strays) == ["later-0", "later-1"]
    assert not [d for d in data.rglob("later-*") if d.is_dir() and not d.name.endswith("-stray")]
    for stray in strays:
        assert f"renamed to {stray}" in text and METADATA_FILE in text, text[-3000:]
        segment = next(stray.glob("*.log")).read_bytes()
        assert b"precious " + stray.name[len("later-")].encode() in segment  # the records are still there

    assert run(make="later") == {"kept", "later"}  # the name made again: a new, empty log beside the strays
    assert sorted(data.rglob("later-*-stray")) == strays
