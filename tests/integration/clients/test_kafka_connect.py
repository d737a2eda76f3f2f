"""Kafka Connect in distributed mode, as users run it: `ConnectDistributed` with a worker properties file.

The worker (connect-runtime and connect-file 4.3.1, the newest on Maven Central, with their own kafka-clients:
compat/kafka/connect-pom.xml) keeps its state in the broker: connector configs in a compacted config topic (one
partition), source offsets in a compacted offsets topic (25), connector and task states in a compacted status topic
(5), each read to its end on start (KafkaBasedLog), and its workers form a group of protocol type "connect" over
JoinGroup/SyncGroup (incremental cooperative rebalancing, subprotocol "sessioned"). Configured through its REST API,
a FileStreamSource connector reads a file's lines into a topic (which the worker creates, topic.creation.*) and a
FileStreamSink connector writes that topic to a file. One test, three worker JVMs, checks on one broker:

- the sink file holds exactly the source file's lines, in order, and the REST API reports both connectors and their
  tasks RUNNING on the worker;
- the worker stopped with SIGTERM commits its source offsets (offsets topic) and sink offsets (group
  `connect-<sink>`) on its way out; lines appended while it is down arrive once the restarted worker resumes from
  those offsets: nothing lost, nothing twice;
- the restarted worker, and the second one, run with `exactly.once.source.support=enabled` (KIP-618: each poll of the
  source task and its offset in one transaction, the leader's config writes transactional, the internal topics read
  read_committed), the upgrade a one-worker cluster makes by restarting with the setting;
- a second worker joining the group takes a connector and a task (the broker's DescribeGroups shows the two members
  and the assignments their leader sent), and lines keep flowing through the moved tasks exactly once;
- pause and resume through either worker (a follower forwards them to the leader) are records in the config topic;
- the worker running the source task, SIGKILLed while it streams, most likely inside a transaction: the other worker
  takes the task over, fences the transaction and resumes, and the sink (read_committed) writes each line once;
- the sink deleted is a tombstone in the config topic; the internal topics are compacted, with Connect's partition
  counts.

Runs on the `kafka` fixture: fakekafka here, Apache Kafka under `pytest --kafka-real`
(the kafka-real tier: `-m kafka_real`), so
both brokers are held to the same assertions. Never more than two worker JVMs at a time; every wait polls the REST
API, the files or the topic. Skips (naming .ci/install.sh) without java or Connect's jars. fakekafka does not compact
(compat/KNOWN_DIFFERENCES.md, "Kafka Connect"); Kafka leaves the active segment alone, so the records this test reads
are the same on both.
"""

from __future__ import annotations

import json
import signal
import struct
import subprocess
import time
import urllib.error
import urllib.request
import uuid
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import pytest
from confluent_kafka import Consumer, IsolationLevel, TopicPartition
from confluent_kafka.admin import AdminClient, ConfigResource, OffsetSpec

import fakekafka
from fakekafka.testing.handle import ClusterHandle
from fakekafka.testing.ports import free_port
from fakekafka.wire import ApiKey
from tests import javautil
from tests.rawclient import RawClient

pytestmark = [pytest.mark.clients, pytest.mark.kafka_real]

WAIT_S = 60.0
"""Each wait's bound (a worker JVM's start, a rebalance, lines reaching the sink): generous for a loaded 2-core
machine, never reached when things work."""
CONNECTOR_TASK = -1
"""How Connect's assignment lists a connector itself among task ids."""
T = TypeVar("T")


class ConnectWorker:
    """One distributed worker JVM, its REST API on a free loopback port, its log in a file."""

    def __init__(self, cp: str, config: dict[str, str], work: Path, name: str) -> None:
        port = free_port()
        self.url = f"http://127.0.0.1:{port}"
        self.worker_id = f"127.0.0.1:{port}"
        """What Connect calls this worker in statuses: its advertised REST host and port."""
        props = work / f"{name}.properties"
        props.write_text("".join(f"{k}={v}\n" for k, v in {**config, "listeners": self.url}.items()), encoding="utf-8")
        self.log_path = work / f"{name}.log"
        self.stop_s: float | None = None
        """How long SIGTERM took to end it."""
        self.hang = ""
        """Its log with every thread's stack, when it did not end after SIGTERM (then `stop` returns None)."""
        self._log = self.log_path.open("w", encoding="utf-8")
        self.proc = subprocess.Popen(
            [
                javautil._tool("java"),
                *javautil.FAST_START,
                "-Xmx256m",
                "-Dorg.slf4j.simpleLogger.showDateTime=true",
                "-cp",
                cp,
                "org.apache.kafka.connect.cli.ConnectDistributed",
                str(props),
            ],
            stdin=subprocess.DEVNULL,
            stdout=self._log,
            stderr=subprocess.STDOUT,
        )

    def log(self, tail: int = 8000) -> str:
        """The log's last `tail` characters, also once `stop` or `kill` has closed it."""
        if not self._log.closed:
            self._log.flush()
        return self.log_path.read_text(encoding="utf-8", errors="replace")[-tail:]

    def rest(self, method: str, path: str, body: dict[str, Any] | None = None) -> Any:
        """The REST API's JSON answer; raises urllib's HTTPError on an error status."""
        data = None if body is None else json.dumps(body).encode()
        req = urllib.request.Request(
            self.url + path,
            data=data,
            method=method,
            headers={"Content-Type": "application/json", "Accept": "application/json"},
        )
        with urllib.request.urlopen(req, timeout=30) as resp:
            raw = resp.read()
        return json.loads(raw) if raw else None

    def wait(self, what: str, predicate: Callable[[], T], timeout: float = WAIT_S) -> T:
        """Polls `predicate` until it returns something truthy; fails with the worker's log if the JVM exits or
        the time runs out. Connection errors and the REST API's 404/409 (not started, rebalancing) count as
        not yet."""
        deadline = time.monotonic() + timeout
        while True:
            if self.proc.poll() is not None:
                pytest.fail(
                    f"worker {self.worker_id} exited ({self.proc.returncode}) while waiting for {what}:\n" + self.log()
                )
            try:
                value = predicate()
            except urllib.error.HTTPError as e:
                if e.code not in (404, 409):
                    raise
                value = None
            except (urllib.error.URLError, ConnectionError):
                value = None
            if value:
                return value
            if time.monotonic() > deadline:
                pytest.fail(f"no {what} within {timeout:.0f} s; worker {self.worker_id}'s log:\n{self.log()}")
            time.sleep(0.1)

    def kill(self) -> None:
        """SIGKILL: the JVM ends where it is, no shutdown hook, nothing committed on the way out."""
        self.proc.kill()
        self.proc.wait(WAIT_S)
        self._log.close()

    def stop(self) -> int | None:
        """SIGTERM, as `kill` or a service manager stops it (Connect's shutdown hook stops the herder), and its
        exit code."""
        if self._log.closed:
            return self.proc.wait()
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        started = time.monotonic()
        try:
            code = self.proc.wait(WAIT_S)
            self.stop_s = time.monotonic() - started
            return code
        except subprocess.TimeoutExpired:
            # where it hangs: SIGQUIT makes the JVM print every thread's stack to its stdout, the log
            self.proc.send_signal(signal.SIGQUIT)
            time.sleep(2)
            self.hang = f"worker {self.worker_id} still running {WAIT_S:.0f} s after SIGTERM:\n{self.log(40_000)}"
            return None
        finally:
            if self.proc.poll() is None:
                self.proc.kill()
                self.proc.wait()
            self._log.close()


def _statuses(worker: ConnectWorker) -> dict[str, dict[str, Any]]:
    """GET /connectors?expand=status: each connector's state and its tasks', with the workers running them."""
    return {name: v["status"] for name, v in worker.rest("GET", "/connectors?expand=status").items()}


def _placement(statuses: dict[str, dict[str, Any]]) -> dict[str, tuple[str, str]] | None:
    """(worker, state) of every connector and task ("name" and "name-0"), or None while a task list is empty."""
    out: dict[str, tuple[str, str]] = {}
    for name, s in statuses.items():
        out[name] = (s["connector"]["worker_id"], s["connector"]["state"])
        if not s["tasks"]:
            return None
        for t in s["tasks"]:
            out[f"{name}-{t['id']}"] = (t["worker_id"], t["state"])
    return out


def _lines(path: Path) -> list[str]:
    return path.read_text(encoding="utf-8").splitlines() if path.exists() else []


def _append(path: Path, first: int, count: int) -> list[str]:
    lines = [f"line {i} {uuid.uuid4().hex[:8]}" for i in range(first, first + count)]
    with path.open("a", encoding="utf-8") as f:
        f.write("".join(line + "\n" for line in lines))
    return lines


def _read_string(buf: bytes, pos: int) -> tuple[str, int]:
    (n,) = struct.unpack_from(">h", buf, pos)
    return buf[pos + 2 : pos + 2 + n].decode(), pos + 2 + n


def _read_assignment_list(buf: bytes, pos: int) -> tuple[dict[str, list[int]], int]:
    (count,) = struct.unpack_from(">i", buf, pos)
    pos += 4
    out: dict[str, list[int]] = {}
    for _ in range(max(count, 0)):
        connector, pos = _read_string(buf, pos)
        (n,) = struct.unpack_from(">i", buf, pos)
        out[connector] = list(struct.unpack_from(f">{n}i", buf, pos + 4))
        pos += 4 + 4 * n
    return out, pos


def decode_connect_assignment(buf: bytes) -> dict[str, Any]:
    """A `connect` group member's assignment as its leader wrote it in SyncGroup (Connect's incremental cooperative
    format, versions 1 and 2): the leader's REST URL, the config offset it saw, and the connectors (task id -1) and
    tasks newly given to the member and those it must give up (incremental: what it keeps is in neither)."""
    version, error = struct.unpack_from(">hh", buf, 0)
    leader, pos = _read_string(buf, 4)
    leader_url, pos = _read_string(buf, pos)
    (config_offset,) = struct.unpack_from(">q", buf, pos)
    assigned, pos = _read_assignment_list(buf, pos + 8)
    revoked, pos = _read_assignment_list(buf, pos) if version >= 1 else ({}, pos)
    return {
        "version": version,
        "error": error,
        "leader": leader,
        "leader_url": leader_url,
        "config_offset": config_offset,
        "assigned": assigned,
        "revoked": revoked,
    }


def decode_connect_metadata(buf: bytes) -> dict[str, Any]:
    """A `connect` group member's metadata as it sent it in JoinGroup (Connect's format, versions 0-2): its REST URL
    and the config offset it had read (versions 1 and 2 add the assignment it holds, not read here)."""
    (version,) = struct.unpack_from(">h", buf, 0)
    url, pos = _read_string(buf, 2)
    (config_offset,) = struct.unpack_from(">q", buf, pos)
    return {"version": version, "url": url, "config_offset": config_offset}


def _described_members(bootstrap: str, group: str) -> dict[str, bytes]:
    """DescribeGroups v5 from the group's coordinator, over the wire: each member's client id and its metadata (which
    a Stable group's answer carries)."""
    raw = RawClient(bootstrap)
    try:
        found = raw.request(ApiKey.FIND_COORDINATOR, 4, {"key_type": 0, "coordinator_keys": [group]}).coordinators[0]
    finally:
        raw.close()
    assert found.error_code == 0, found
    raw = RawClient(f"{found.host}:{found.port}")
    try:
        described = raw.request(
            ApiKey.DESCRIBE_GROUPS, 5, {"groups": [group], "include_authorized_operations": False}
        ).groups[0]
    finally:
        raw.close()
    assert (described.error_code, described.group_state) == (0, "Stable"), described
    return {m.client_id: bytes(m.member_metadata) for m in described.members}


def _source_position(kafka: ClusterHandle, offsets_topic: str, connector: str, source: Path) -> int | None:
    """The last source offset the worker committed for `source` (its offsets topic holds JSON: the key
    ["<connector>", {"filename": ...}], the value {"position": <bytes read>})."""
    position = None
    for rec in kafka.records(offsets_topic):
        if rec.key is None or json.loads(rec.key) != [connector, {"filename": str(source)}]:
            continue
        position = None if rec.value is None else json.loads(rec.value)["position"]
    return position


def _internal_topics(group: str) -> dict[str, str]:
    return {"config": f"{group}-configs", "offset": f"{group}-offsets", "status": f"{group}-status"}


def _worker_config(kafka: ClusterHandle, group: str, extra: dict[str, str] | None = None) -> dict[str, str]:
    """A distributed worker's properties: its group and internal topics named after `group`, string converters,
    the settings that keep the test short, and `extra`."""
    return {
        "bootstrap.servers": kafka.bootstrap_servers,
        "group.id": group,
        "key.converter": "org.apache.kafka.connect.storage.StringConverter",
        "value.converter": "org.apache.kafka.connect.storage.StringConverter",
        **{f"{kind}.storage.topic": name for kind, name in _internal_topics(group).items()},
        **{f"{kind}.storage.replication.factor": "1" for kind in ("config", "offset", "status")},
        "offset.flush.interval.ms": "500",  # source offsets and sink commits twice a second
        "heartbeat.interval.ms": "1000",  # a worker learns of a rebalance from its heartbeat: sooner than 3 s
        "plugin.discovery": "service_load",  # the file connectors' ServiceLoader manifests: no classpath scan
        **(extra or {}),
    }


def _configs(admin: AdminClient, topic: str, *names: str) -> dict[str, str]:
    resource = ConfigResource(ConfigResource.Type.TOPIC, topic)
    entries = admin.describe_configs([resource])[resource].result(30)
    return {name: entries[name].value for name in names}


def _read_committed(bootstrap: str, topic: str) -> list[str]:
    """Every value a read_committed consumer reads from partition 0 of `topic`, up to its last stable offset."""
    admin = AdminClient({"bootstrap.servers": bootstrap})
    tp = TopicPartition(topic, 0)
    end = (
        admin.list_offsets(
            {tp: OffsetSpec.latest()}, isolation_level=IsolationLevel.READ_COMMITTED, request_timeout=30
        )[tp]
        .result()
        .offset
    )
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"reader-{uuid.uuid4().hex[:6]}",
            "isolation.level": "read_committed",
            "enable.auto.commit": False,
        }
    )
    values: list[str] = []
    try:
        consumer.assign([TopicPartition(topic, 0, 0)])
        deadline = time.monotonic() + WAIT_S
        while consumer.position([tp])[0].offset < end:
            assert time.monotonic() < deadline, f"read_committed read {len(values)} records of {topic}, not to {end}"
            for m in consumer.consume(1000, 0.2):
                if m.error() is None:
                    values.append(m.value().decode())
    finally:
        consumer.close()
    return values


@pytest.mark.timeout(300)
def test_distributed_file_copy_across_restart_rebalance_and_kill(kafka: ClusterHandle, tmp_path: Path) -> None:
    cp = javautil.connect_classpath()
    run = f"connect-{uuid.uuid4().hex[:8]}"
    topic, src, snk = f"{run}-lines", f"{run}-src", f"{run}-snk"
    internal = _internal_topics(run)
    worker_config = _worker_config(
        kafka,
        run,
        {
            "session.timeout.ms": "6000",  # a killed worker is gone sooner
            "scheduled.rebalance.max.delay.ms": "0",
        },
    )  # its tasks move at once
    # the restarted worker and the second one run exactly-once sources (KIP-618): what a cluster upgraded from the
    # default does once its only worker restarts with the setting
    eos_config = {**worker_config, "exactly.once.source.support": "enabled"}
    source, sink = tmp_path / "source.txt", tmp_path / "sink.txt"
    written = _append(source, 0, 200)

    def sink_has(n: int) -> Callable[[], bool]:
        return lambda: len(_lines(sink)) >= n

    phases: dict[str, float] = {}
    t0 = time.monotonic()
    admin = AdminClient({"bootstrap.servers": kafka.bootstrap_servers})
    workers: list[ConnectWorker] = []
    with javautil._watch(kafka) as watch:  # fakekafka's warnings and the APIs it served (nothing seen on Kafka)
        try:
            # one worker: both connectors configured over REST, the file copied through the topic
            first = ConnectWorker(cp, worker_config, tmp_path, "first")
            workers.append(first)
            info = first.wait("the REST API", lambda: first.rest("GET", "/"))
            assert info["version"] == javautil.CONNECT_VERSION
            phases["worker up"] = time.monotonic() - t0
            assert {p["class"].rsplit(".", 1)[1] for p in first.rest("GET", "/connector-plugins")} >= {
                "FileStreamSourceConnector",
                "FileStreamSinkConnector",
            }
            created = first.rest(
                "PUT",
                f"/connectors/{src}/config",
                {
                    "connector.class": "org.apache.kafka.connect.file.FileStreamSourceConnector",
                    "file": str(source),
                    "topic": topic,
                    "tasks.max": "1",
                    "topic.creation.default.partitions": "1",
                    "topic.creation.default.replication.factor": "1",
                },
            )
            assert (created["name"], created["type"]) == (src, "source")
            kafka.wait_for_topic(topic, 1, timeout=WAIT_S)  # the worker creates it for the source task
            first.rest(
                "PUT",
                f"/connectors/{snk}/config",
                {
                    "connector.class": "org.apache.kafka.connect.file.FileStreamSinkConnector",
                    "file": str(sink),
                    "topics": topic,
                    "tasks.max": "1",
                    # aborted source transactions (below) stay out of the file
                    "consumer.override.isolation.level": "read_committed",
                },
            )
            first.wait("200 lines in the sink file", sink_has(len(written)))
            assert _lines(sink) == written
            phases["copied"] = time.monotonic() - t0
            placement = first.wait("both tasks", lambda: _placement(_statuses(first)))
            assert placement == {name: (first.worker_id, "RUNNING") for name in (src, f"{src}-0", snk, f"{snk}-0")}
            assert sorted(first.rest("GET", "/connectors")) == sorted([src, snk])
            assert first.rest("GET", f"/connectors/{src}/status")["type"] == "source"
            assert [t["id"] for t in first.rest("GET", f"/connectors/{snk}/tasks")] == [{"connector": snk, "task": 0}]

            # more lines while it runs, then SIGTERM: the worker commits both kinds of offsets on its way out
            written += _append(source, len(written), 100)
            first.wait("300 lines in the sink file", sink_has(len(written)))
            code = first.stop()
            assert code in (0, 128 + signal.SIGTERM), first.hang or f"exit {code}:\n{first.log()}"
            phases["stopped"] = time.monotonic() - t0
            stopped_at = source.stat().st_size
            assert _source_position(kafka, internal["offset"], src, source) == stopped_at
            assert kafka.committed(f"connect-{snk}") == {(topic, 0): len(written)}
            assert kafka.end_offsets(topic) == {0: len(written)}

            # lines appended while no worker runs; the restarted worker resumes from the committed offsets
            written += _append(source, len(written), 100)
            again = ConnectWorker(cp, eos_config, tmp_path, "restarted")
            workers.append(again)
            again.wait("400 lines in the sink file", sink_has(len(written)))
            assert _lines(sink) == written
            phases["resumed"] = time.monotonic() - t0
            again.wait(
                "both tasks running again",
                lambda: (p := _placement(_statuses(again))) and all(state == "RUNNING" for _, state in p.values()),
            )

            # a second worker joins: the leader hands it a connector and a task, the moved ones carry on
            second = ConnectWorker(cp, eos_config, tmp_path, "second")
            workers.append(second)

            def spread() -> dict[str, tuple[str, str]] | None:
                p = _placement(_statuses(again))
                if p is None or any(state != "RUNNING" for _, state in p.values()):
                    return None
                per_worker = Counter(w for w, _ in p.values())
                return p if per_worker == {again.worker_id: 2, second.worker_id: 2} else None

            placement = second.wait("the tasks spread over both workers", spread)
            phases["rebalanced"] = time.monotonic() - t0
            connectors_on = Counter(placement[name][0] for name in (src, snk))
            tasks_on = Counter(placement[f"{name}-0"][0] for name in (src, snk))
            assert connectors_on == tasks_on == {again.worker_id: 1, second.worker_id: 1}, placement
            assert second.wait(
                "the same statuses from the second worker", lambda: _placement(_statuses(second)) == placement
            )

            group = kafka.group(run)
            assert group is not None
            assert (group.state, group.protocol_type, group.protocol) == ("Stable", "connect", "sessioned")
            # the broker relays what the workers sent: their member ids carry the client id connect-<worker id>,
            # and each one's assignment is the leader's, naming the leader's REST URL and only these connectors
            assert sorted(m.client_id for m in group.members) == sorted(
                f"connect-{w.worker_id}" for w in (again, second)
            )
            assignments = [decode_connect_assignment(m.raw_assignment) for m in group.members]
            assert {(a["version"], a["error"]) for a in assignments} == {(2, 0)}, assignments
            leader_urls = {a["leader_url"].rstrip("/") for a in assignments}
            assert len(leader_urls) == 1 and leader_urls <= {again.url, second.url}, assignments
            named = {
                (connector, task)
                for a in assignments
                for moved in (a["assigned"], a["revoked"])
                for connector, tasks in moved.items()
                for task in tasks
            }
            assert named <= {(src, CONNECTOR_TASK), (src, 0), (snk, CONNECTOR_TASK), (snk, 0)}, assignments
            # and each member's metadata is what it sent in JoinGroup: its own REST URL, the config it had read
            metadata = {
                client: decode_connect_metadata(m)
                for client, m in _described_members(kafka.bootstrap_servers, run).items()
            }
            assert {client: (m["version"], m["url"].rstrip("/")) for client, m in metadata.items()} == {
                f"connect-{w.worker_id}": (2, w.url) for w in (again, second)
            }, metadata
            assert all(m["config_offset"] > 0 for m in metadata.values()), metadata  # both connectors were read

            written += _append(source, len(written), 100)
            second.wait("500 lines in the sink file", sink_has(len(written)))
            assert _lines(sink) == written
            phases["copied after the rebalance"] = time.monotonic() - t0

            # the source paused and resumed, the sink deleted, asked of either worker (a follower forwards writes to
            # the leader): each a record in the config topic, which every worker reads
            def states(worker: ConnectWorker, name: str) -> set[str]:
                status = _statuses(worker)[name]
                return {status["connector"]["state"], *(t["state"] for t in status["tasks"])}

            second.rest("PUT", f"/connectors/{src}/pause")
            again.wait("the source paused", lambda: states(again, src) == {"PAUSED"})
            again.rest("PUT", f"/connectors/{src}/resume")
            second.wait("the source resumed", lambda: states(second, src) == {"RUNNING"})
            written += _append(source, len(written), 50)
            second.wait("550 lines in the sink file", sink_has(len(written)))
            phases["paused, resumed"] = time.monotonic() - t0

            # SIGKILL the worker running the source task while it streams 10,000 lines, most likely inside a poll's
            # transaction; the other worker takes the task over once the group drops the dead member, fences the
            # transaction (InitProducerId on <group>-<connector>-<task>) and resumes from the last committed offset.
            # The sink task already ran on the other worker: its read_committed consumer copies each line once.
            running = again.wait("the tasks' places", lambda: _placement(_statuses(again)))[f"{src}-0"][0]
            victim, survivor = (again, second) if running == again.worker_id else (second, again)
            logged = kafka.end_offsets(topic)[0]
            written += _append(source, len(written), 10_000)
            victim.wait("the new lines in the log", lambda: kafka.end_offsets(topic)[0] > logged)
            victim.kill()
            at_kill = kafka.end_offsets(topic)[0] - logged
            assert at_kill < 10_000, at_kill  # it had not finished: the lines and a marker per poll
            survivor.wait(f"{len(written)} lines in the sink file", sink_has(len(written)))
            assert _lines(sink) == written
            assert _read_committed(kafka.bootstrap_servers, topic) == written
            phases["failed over"] = time.monotonic() - t0
            assert survivor.wait("the source task on the survivor", lambda: _placement(_statuses(survivor)))[
                f"{src}-0"
            ] == (survivor.worker_id, "RUNNING")

            survivor.rest("DELETE", f"/connectors/{snk}")
            survivor.wait("the sink gone", lambda: survivor.rest("GET", "/connectors") == [src])
            phases["deleted"] = time.monotonic() - t0
        finally:
            for w in workers:  # SIGTERM to all first: the workers shut down side by side
                if w.proc.poll() is None:
                    w.proc.send_signal(signal.SIGTERM)
            codes = [w.stop() for w in workers]
    hung = [w.hang for w in workers if w.hang]
    assert not hung, "\n".join(hung)
    assert all(code in (0, 128 + signal.SIGTERM) for w, code in zip(workers, codes, strict=True) if w is not victim), (
        "\n".join(f"worker {w.worker_id} exit {code}:\n{w.log()}" for w, code in zip(workers, codes, strict=True)))
    phases["all stopped"] = time.monotonic() - t0
    assert _lines(sink) == written
    assert _source_position(kafka, internal["offset"], src, source) == source.stat().st_size
    # the sink commits the offset after the last record it was given; the commit marker behind it is not one
    assert kafka.committed(f"connect-{snk}") == {(topic, 0): kafka.records(topic)[-1].offset + 1}
    assert not watch.problems, watch.problems
    killed_inside = at_kill <= 2000  # no marker yet: the source task's first poll (2000 lines) was open
    if killed_inside:  # its records stay in the log, aborted: read_uncommitted sees them as well
        assert len(kafka.records(topic)) == len(written) + at_kill

    # the internal topics, as the worker created them
    for kind, partitions in (("config", 1), ("offset", 25), ("status", 5)):
        assert _configs(admin, internal[kind], "cleanup.policy") == {"cleanup.policy": "compact"}, kind
        assert set(kafka.end_offsets(internal[kind])) == set(range(partitions)), kind
    config_records = [(rec.key.decode(), rec.value) for rec in kafka.records(internal["config"]) if rec.key is not None]
    config_keys = {key for key, _ in config_records}
    assert {
        f"connector-{src}",
        f"task-{src}-0",
        f"commit-{src}",
        f"target-state-{src}",
        f"connector-{snk}",
        f"task-{snk}-0",
        "session-key",
    } <= config_keys, config_keys
    # the deletion is a tombstone (a key without a value), which a compacted topic takes
    assert [value for key, value in config_records if key == f"connector-{snk}"][-1] is None
    status_keys = {rec.key.decode() for rec in kafka.records(internal["status"]) if rec.key is not None}
    assert {
        f"status-connector-{src}",
        f"status-task-{src}-0",
        f"status-connector-{snk}",
        f"status-task-{snk}-0",
    } <= status_keys, status_keys
    if isinstance(kafka, fakekafka.Cluster):
        # what the workers asked of the broker beside produce and fetch: their group over JoinGroup/SyncGroup,
        # the internal topics' creation and cleanup.policy check, read-to-end through ListOffsets
        assert {
            "JoinGroup",
            "SyncGroup",
            "Heartbeat",
            "LeaveGroup",
            "CreateTopics",
            "DescribeConfigs",
            "ListOffsets",
            "OffsetCommit",
            "OffsetFetch",
            "InitProducerId",
            "EndTxn",
        } <= set(watch.api_calls), watch.api_calls
        # the coordinator's side, which Kafka does not show over the wire: the source task's transactions and the
        # leader's, and the killed task's open one fenced by the survivor's InitProducerId rather than timed out
        task_txn = kafka.transaction(f"{run}-{src}-0")
        assert task_txn is not None and kafka.transaction(f"connect-cluster-{run}") is not None, kafka.transactions()
        assert task_txn.state == "CompleteCommit", task_txn
        if killed_inside:
            assert ("Ongoing", "PrepareEpochFence") in task_txn.transitions, task_txn
    print(
        f"Kafka Connect distributed: {len(written)} lines, {at_kill} of the last 10,000 in the log when killed; "
        + ", ".join(f"{name} at {t:.1f} s" for name, t in phases.items())
        + "; SIGTERM to exit: "
        + ", ".join(f"{w.log_path.stem} {w.stop_s:.1f} s" for w in workers if w.stop_s is not None)
    )
