"""A Kafka Streams application in a streams group (`group.protocol=streams`, KIP-1071): two instances, one
stopped and restarted, with a stateful topology.

The application (tests/integration/clients/java/StreamsGroupCount.java; Kafka Streams 4.3.1, the newest on Maven
Central) counts words: a repartition (selectKey) and a count in a RocksDB store with its changelog, under
exactly_once_v2 with the record cache off, so each input record gives one output update. The broker's
group coordinator assigns its tasks (StreamsGroupHeartbeat) and creates its internal topics. Two instances
run; the test produces a third of the words, stops one instance (it leaves the group), produces another third,
restarts it from its state directory and produces the rest. A read_committed reader must then see, per word, the
counts 1, 2, ..., n each exactly once: nothing lost, nothing counted twice across the moves of the tasks.

Runs on the `kafka` fixture: fakekafka here, Apache Kafka 4.4.0 under `pytest --kafka-real` (the kafka-real
tier), both with Kafka's default `group.streams.*` settings. Skips (naming .ci/install.sh) without java or the
Streams jars.
"""

from __future__ import annotations

import json
import os
import queue
import subprocess
import threading
import time
import uuid
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition

from fakekafka.testing.handle import ClusterHandle
from tests import javautil

pytestmark = [pytest.mark.clients, pytest.mark.kafka_real]

SOURCE = Path(__file__).resolve().parent / "java" / "StreamsGroupCount.java"
PARTITIONS = 3
WORDS = 7
PER_PHASE = 60
WAIT_S = 120.0
"""Each wait's bound: JVM start-up and a streams-group rebalance at Kafka's default 5 s heartbeat interval on a
loaded 2-core machine; never reached when things work."""


class StreamsInstance:
    """One JVM of the application: its JSON events read on a thread, stopped through stdin."""

    def __init__(self, classes: Path, cp: str, args: list[str], stderr_path: Path) -> None:
        self.stderr_path = stderr_path
        self._stderr = stderr_path.open("w", encoding="utf-8")
        self.proc = subprocess.Popen(
            [javautil._tool("java"), *javautil.driver_jvm_args(), "-cp", os.pathsep.join([str(classes), cp]),
             "StreamsGroupCount", *args],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self._stderr, text=True, encoding="utf-8")
        self.events: queue.Queue[dict[str, Any]] = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            try:
                self.events.put(json.loads(line))
            except ValueError:
                self.events.put({"event": "stray", "line": line.rstrip("\n")})
        self.events.put({"event": "exit"})

    def stderr(self) -> str:
        if not self._stderr.closed:
            self._stderr.flush()
        return self.stderr_path.read_text(encoding="utf-8")[-6000:]

    def wait_running(self) -> None:
        deadline = time.monotonic() + WAIT_S
        while True:
            try:
                e = self.events.get(timeout=max(0.0, deadline - time.monotonic()))
            except queue.Empty:
                pytest.fail(f"the Streams app was not RUNNING in {WAIT_S:.0f} s; its stderr:\n{self.stderr()}")
            if e.get("state") == "RUNNING":
                return
            if e["event"] in ("error", "exit"):
                pytest.fail(f"the Streams app ended: {e}\nits stderr:\n{self.stderr()}")

    def stop(self) -> int:
        assert self.proc.stdin is not None
        try:
            self.proc.stdin.write("stop\n")
            self.proc.stdin.flush()
        except BrokenPipeError:
            pass
        try:
            code = self.proc.wait(60)
        finally:
            if self.proc.poll() is None:
                self.proc.kill()
                self.proc.wait()
            self._stderr.close()
        return code


def _read_until(consumer: Consumer, records: list[tuple[str, int]], total: int, apps: list[StreamsInstance]) -> None:
    deadline = time.monotonic() + WAIT_S
    while len(records) < total:
        if time.monotonic() > deadline:
            stderr = "\n".join(a.stderr() for a in apps)
            pytest.fail(f"read_committed saw {len(records)} of {total} updates in {WAIT_S:.0f} s; stderr:\n{stderr}")
        for m in consumer.consume(500, 0.2):
            if m.error() is None:
                records.append((m.key().decode(), int(m.value().decode())))


@pytest.mark.timeout(600)
def test_two_instances_one_restarted_count_each_word_once(kafka: ClusterHandle, tmp_path: Path) -> None:
    cp = javautil.streams_classpath()
    classes = javautil.compile_java(SOURCE, cp=cp)
    app_id = f"words-{uuid.uuid4().hex[:8]}"
    source, sink = f"{app_id}-in", f"{app_id}-out"
    for topic in (source, sink):
        kafka.create_topic(topic, PARTITIONS)
        kafka.wait_for_topic(topic, PARTITIONS)
    producer = Producer({"bootstrap.servers": kafka.bootstrap_servers, "enable.idempotence": True})
    sent: Counter[str] = Counter()

    def produce(phase: int) -> None:
        for i in range(PER_PHASE):
            word = f"w{(i * 3 + phase) % WORDS}"
            sent[word] += 1
            producer.produce(source, key=f"{phase}-{i}", value=word)
        assert producer.flush(30) == 0

    reader = Consumer({"bootstrap.servers": kafka.bootstrap_servers, "group.id": f"reader-{app_id}",
                       "isolation.level": "read_committed", "enable.auto.commit": False})
    reader.assign([TopicPartition(sink, p, 0) for p in range(PARTITIONS)])
    records: list[tuple[str, int]] = []

    def start(name: str) -> StreamsInstance:
        return StreamsInstance(classes, cp, [kafka.bootstrap_servers, app_id, str(tmp_path / f"state-{name}"),
                                             source, sink], tmp_path / f"{name}-{time.monotonic_ns()}.stderr")

    apps: list[StreamsInstance] = []
    try:
        a, b = start("a"), start("b")
        apps += [a, b]
        a.wait_running()
        b.wait_running()
        produce(0)
        _read_until(reader, records, PER_PHASE, apps)
        assert b.stop() == 0
        apps.remove(b)
        produce(1)
        _read_until(reader, records, 2 * PER_PHASE, apps)
        b = start("b")
        apps.append(b)
        b.wait_running()
        produce(2)
        _read_until(reader, records, 3 * PER_PHASE, apps)
    finally:
        for app in apps:
            app.stop()
        producer.flush(5)
        reader.close()
    counts: dict[str, list[int]] = defaultdict(list)
    for word, n in records:
        counts[word].append(n)
    assert {w: sorted(ns) for w, ns in counts.items()} == {w: list(range(1, n + 1)) for w, n in sent.items()}
