"""Python stream-processing frameworks as users run them: a quixstreams app and a faust-streaming app, each keeping
running order totals per customer in a state store backed by a changelog topic, killed mid-stream and restarted.

Both apps (tests/integration/clients/pyapps/) run in a subprocess of their own. The test produces half of the orders,
waits until the app has committed them, and SIGKILLs it; a second instance, with no local state, rebuilds its store
from the changelog and finishes the input:

- quixstreams, processing_guarantee="exactly-once" (one transaction per checkpoint, a random transactional.id per
  process): the rest of the orders is produced before the kill, which comes while the app holds a transaction
  open with updates on the broker (ended by its transaction.timeout.ms, 10 s). A read_committed
  consumer sees exactly what processing each order once gives (per customer the counts 1, 2, 3, ... and each
  order's amount added once); the aborted updates are visible to read_uncommitted only.
- faust-streaming, processing_guarantee="exactly_once" (a transactional producer per input partition,
  "{app}-{group}-{partition}"): the worker is killed once it has committed the first half, and the second one
  gets the rest once it has restored its tables; its counts must go on from the first one's and the changelogs
  hold the final state. (faust 0.15.3 takes the changelogs' ends from Fetch answers its consumer may not have yet,
  and then restores nothing: the app asks the broker instead. Killed mid-transaction with input left to redo, it
  skips some of that input and repeats the last record, on Kafka 4.4.0 as on fakekafka, one run in three; and it
  sends to an output topic its consumer does not read outside its transactions. So its kill is at a commit.)

Both run the same way, with the same counts, on fakekafka and on Apache Kafka 4.4.0.

Runs on the `kafka` fixture: fakekafka here, Apache Kafka under `pytest --kafka-real`
(the kafka-real tier: `-m kafka_real`).
Skips without the framework: faust-streaming is in the test extra, quixstreams in a virtualenv of its own from
.ci/install.sh ($FAKEKAFKA_QUIXSTREAMS), since it pins confluent-kafka below what the other tests use.
"""

from __future__ import annotations

import contextlib
import json
import os
import queue
import random
import subprocess
import sys
import time
import uuid
from collections import Counter, defaultdict
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Consumer, IsolationLevel, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, AlterConfigOpType, ConfigEntry, ConfigResource, ResourceType

import fakekafka
from fakekafka.testing.handle import ClusterHandle
from tests import javautil
from tests.integration.clients.test_kafka_streams import (
    PARTITIONS,
    CommittedReader,
    _configs,
    _latest,
    _open_transaction,
)
from tests.subproc import EventChild

pytestmark = [pytest.mark.clients, pytest.mark.kafka_real]

APPS = Path(__file__).resolve().parent / "pyapps"
ORDERS = 400
CUSTOMERS = 7
FREEZE_AFTER = 320
"""The first instance stops inside a transaction after this many updates: all of the first half's, some of the
second's."""
WAIT_S = 60.0
"""Each wait's bound (start-up, the rebalance after the killed member's 6 s session, the 10 s transaction
timeout, the store's restore): generous for a loaded 2-core machine, never reached when things work."""


def _python_with(module: str, venv_var: str | None = None) -> str:
    """The interpreter to run an app with: this one, or for a framework that pins its dependencies apart (quixstreams:
    confluent-kafka<2.13) the virtualenv .ci/install.sh made for it. Skips the test if the module is missing."""
    python = sys.executable
    if venv_var is not None:
        cache = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "fakekafka"
        python = str(Path(os.environ.get(venv_var) or cache / f"venv-{module}") / "bin" / "python")
    check = [python, "-c", f"import importlib.util, sys; sys.exit(importlib.util.find_spec({module!r}) is None)"]
    if not Path(python).exists() or subprocess.run(check, capture_output=True).returncode != 0:
        hint = "bash .ci/install.sh" if venv_var else "pip install -e '.[test]'"
        pytest.skip(f"{module} is not installed ({python}): {hint}")
    return python


class PyApp(EventChild):
    """One process of an app: its JSON events read on a thread, stopped with SIGTERM (which both frameworks take as
    "commit what is done and leave the group", as from a supervisor) or killed."""

    def __init__(self, python: str, script: str, args: list[str], stderr_path: Path) -> None:
        # in the test's directory: what an app keeps by its working directory (faust's `<app id>-data`) goes there
        super().__init__([python, str(APPS / script), *args], stderr_path, cwd=stderr_path.parent)

    def wait_for(self, event: str, timeout: float = WAIT_S) -> dict[str, Any]:
        """The next event named `event`; fails the test on the app's exit or the timeout."""
        try:
            e = self.events.get(timeout=timeout)
        except queue.Empty:
            pytest.fail(f"no {event!r} from {self.proc.args[1]} in {timeout:.0f} s; its stderr:\n{self.stderr()}")
        if e["event"] != event:
            pytest.fail(f"{self.proc.args[1]} sent {e} while the test waited for {event!r}:\n{self.stderr()}")
        return e

    def wait_for_log(self, text: str, timeout: float = WAIT_S) -> None:
        """Waits until the app's stderr (its log) shows `text`; fails the test on its exit or the timeout."""
        deadline = time.monotonic() + timeout
        while text not in self.stderr_path.read_text(encoding="utf-8"):
            self.check_alive()
            if time.monotonic() > deadline:
                pytest.fail(f"{self.proc.args[1]} did not log {text!r} in {timeout:.0f} s:\n{self.stderr()}")
            time.sleep(0.1)

    def check_alive(self) -> None:
        if self.proc.poll() is not None:
            pytest.fail(f"{self.proc.args[1]} exited with {self.proc.returncode}; its stderr:\n{self.stderr()}")


class Run:
    """What the two tests share: the topics, the orders, a producer keyed like Kafka's (murmur2, which faust's
    co-partitioning needs), a read_committed reader of the output, and the kill-and-restart sequence."""

    def __init__(self, kafka: ClusterHandle, prefix: str) -> None:
        self.kafka = kafka
        self.app_id = f"{prefix}-{uuid.uuid4().hex[:8]}"
        self.source, self.sink = f"{self.app_id}-orders", f"{self.app_id}-out"
        for topic in (self.source, self.sink):
            kafka.create_topic(topic, PARTITIONS)
            kafka.wait_for_topic(topic, PARTITIONS)
        rng = random.Random(19)
        self.orders = [(f"o{i}", f"c{rng.randrange(CUSTOMERS)}", rng.randint(1, 1000)) for i in range(ORDERS)]
        self.producer = Producer(
            {"bootstrap.servers": kafka.bootstrap_servers, "enable.idempotence": True, "partitioner": "murmur2_random"}
        )
        self.admin = AdminClient({"bootstrap.servers": kafka.bootstrap_servers})
        self.reader = CommittedReader(kafka.bootstrap_servers, self.sink)
        self.phases: dict[str, float] = {}
        self.watch = javautil._ServerWatch()
        self.processed_at_kill = self.committed_at_kill = 0
        """Orders the first instance had processed when killed, and the ones its group had committed."""
        self.apps: list[PyApp] = []
        """The instances started, whose logs a failed test prints."""

    def close(self) -> None:
        """Closes the reader and lets go of the producer and the admin client (a librdkafka handle ends when
        dropped): a failed test's traceback keeps the Run, and must not keep them connected to a stopped cluster."""
        with contextlib.suppress(RuntimeError):  # closed already
            self.reader.close()
        for name in ("producer", "admin"):
            self.__dict__.pop(name, None)

    def produce(self, batch: list[tuple[str, str, int]]) -> None:
        for order_id, customer, amount in batch:
            self.producer.produce(self.source, key=customer, value=json.dumps({"order": order_id, "amount": amount}))
        assert self.producer.flush(30) == 0

    def inputs_committed(self) -> int:
        """How many orders the app's group has committed (its offsets on the input, summed)."""
        return sum(offset for (topic, _), offset in self.kafka.committed(self.app_id).items() if topic == self.source)

    def kill_and_restart(self, start: Callable[[bool], PyApp], open_on: str, done: Callable[[], bool]) -> int:
        """Runs the sequence with `start(first)` making an instance: the first is killed once `open_on` holds an open
        transaction, the second stopped once `done()`. Returns the second one's exit code."""
        t0 = time.monotonic()
        # fakekafka's warnings and the APIs it served (nothing seen on Kafka)
        with javautil._watch(self.kafka) as self.watch:
            try:
                self.produce(self.orders[: ORDERS // 2])
                first = start(True)
                self.apps.append(first)
                try:
                    self.kafka.wait_until(
                        lambda: first.check_alive() or self.inputs_committed() == ORDERS // 2, timeout=WAIT_S
                    )
                    self.phases["first half committed"] = time.monotonic() - t0
                    self.produce(self.orders[ORDERS // 2 :])
                    self.processed_at_kill = first.wait_for("frozen")["processed"]
                    assert self.processed_at_kill >= FREEZE_AFTER
                    # every update sent is on the broker, and the open transaction has records there
                    self.kafka.wait_until(
                        lambda: len(self.kafka.records(self.sink)) == self.processed_at_kill, timeout=WAIT_S
                    )
                    self.kafka.wait_until(lambda: _open_transaction(self.admin, open_on), timeout=WAIT_S)
                    self.committed_at_kill = self.inputs_committed()
                finally:
                    first.kill()
                self.phases["killed"] = time.monotonic() - t0
                assert ORDERS // 2 <= self.committed_at_kill < self.processed_at_kill

                second = start(False)
                self.apps.append(second)
                try:
                    self.reader.pump(done, timeout=WAIT_S, also=second.check_alive)
                    self.kafka.wait_until(
                        lambda: second.check_alive() or self.inputs_committed() == ORDERS, timeout=WAIT_S
                    )
                    self.phases["all committed"] = time.monotonic() - t0
                finally:
                    code = second.stop()
                ends = _latest(self.admin, self.sink, IsolationLevel.READ_COMMITTED)
                self.reader.pump(lambda: self.reader.at(ends))
                self.phases["stopped, output read"] = time.monotonic() - t0
                return code
            finally:
                self.reader.close()

    def crash_after_commit_and_restart(self, start: Callable[[bool], PyApp], ready: str) -> int:
        """The first instance is killed once it has committed the first half; the second, once it logs `ready`,
        gets the second half and is stopped when all is committed. Returns the second one's exit code."""
        t0 = time.monotonic()
        with javautil._watch(self.kafka) as self.watch:
            try:
                self.produce(self.orders[: ORDERS // 2])
                first = start(True)
                self.apps.append(first)
                try:
                    self.kafka.wait_until(
                        lambda: first.check_alive() or self.inputs_committed() == ORDERS // 2, timeout=WAIT_S
                    )
                    self.reader.pump(lambda: len(self.reader.records) >= ORDERS // 2, also=first.check_alive)
                    self.processed_at_kill = self.committed_at_kill = self.inputs_committed()
                finally:
                    first.kill()
                self.phases["first half committed, killed"] = time.monotonic() - t0
                second = start(False)
                self.apps.append(second)
                try:
                    second.wait_for_log(ready)
                    self.phases["restored"] = time.monotonic() - t0
                    self.produce(self.orders[ORDERS // 2 :])
                    self.reader.pump(lambda: len(self.reader.records) >= ORDERS, also=second.check_alive)
                    self.kafka.wait_until(
                        lambda: second.check_alive() or self.inputs_committed() == ORDERS, timeout=WAIT_S
                    )
                    self.phases["all committed"] = time.monotonic() - t0
                finally:
                    code = second.stop()
                ends = _latest(self.admin, self.sink, IsolationLevel.READ_COMMITTED)
                self.reader.pump(lambda: self.reader.at(ends))
                self.phases["stopped, output read"] = time.monotonic() - t0
                return code
            finally:
                self.reader.close()

    def amounts(self) -> dict[str, list[int]]:
        """Each customer's order amounts, in order."""
        amounts: dict[str, list[int]] = defaultdict(list)
        for _, customer, amount in self.orders:
            amounts[customer].append(amount)
        return amounts

    def outputs(self) -> dict[str, list[tuple[int, int]]]:
        """The (count, total) updates read per customer, in offset order (a customer's are on one partition)."""
        by_customer: dict[str, list[tuple[int, int]]] = defaultdict(list)
        for _, _, customer, value in sorted(self.reader.records):
            totals = json.loads(value)
            by_customer[customer].append((totals["count"], totals["total"]))
        return by_customer

    def check_totals(self, totals: dict[str, list[tuple[int, int]]]) -> None:
        """Asserts `totals` is what processing each order once gives: per customer the counts 1, 2, ... n and each
        order's amount added once."""
        amounts = self.amounts()
        assert sorted(totals) == sorted(amounts)
        for customer, updates in totals.items():
            assert [c for c, _ in updates] == list(range(1, len(amounts[customer]) + 1)), customer
            sums = [s for _, s in updates]
            added = Counter(b - a for a, b in zip([0, *sums], sums, strict=False))
            assert added == Counter(amounts[customer]), customer  # every order's amount once, no other

    def check_inputs_committed(self) -> None:
        """The input's offsets were committed to its end (with the last transaction)."""
        committed = self.kafka.committed(self.app_id)
        assert {p: committed.get((self.source, p)) for p in range(PARTITIONS)} == self.kafka.end_offsets(self.source)

    def committed_changelog(self, topic: str) -> dict[bytes, bytes]:
        """The last value per key of `topic` as read_committed sees it (what a restore loads)."""
        ends = _latest(self.admin, topic, IsolationLevel.READ_COMMITTED)
        consumer = Consumer(
            {
                "bootstrap.servers": self.kafka.bootstrap_servers,
                "group.id": f"cl-{uuid.uuid4().hex}",
                "isolation.level": "read_committed",
                "enable.auto.commit": False,
            }
        )
        consumer.assign([TopicPartition(topic, p, 0) for p in range(PARTITIONS)])
        latest: dict[bytes, bytes] = {}
        deadline = time.monotonic() + WAIT_S
        try:
            while not all(
                tp.offset >= ends[tp.partition]
                for tp in consumer.position([TopicPartition(topic, p) for p in range(PARTITIONS)])
            ):
                assert time.monotonic() < deadline, f"{topic}: read_committed did not reach {ends}"
                for m in consumer.consume(500, 0.2):
                    if m.error() is None:
                        latest[m.key()] = m.value()
        finally:
            consumer.close()
        return latest

    def report(self, name: str) -> None:
        print(
            f"{name}: {ORDERS} orders, {self.processed_at_kill} processed and {self.committed_at_kill} committed "
            "when killed; " + ", ".join(f"{phase} at {t:.1f} s" for phase, t in self.phases.items())
        )


@pytest.fixture
def runs(kafka: ClusterHandle) -> Iterator[Callable[[str], Run]]:
    """Makes the test's Run(s) and closes them after it, whether it passed or not."""
    made: list[Run] = []

    def make(prefix: str) -> Run:
        made.append(Run(kafka, prefix))
        return made[-1]

    yield make
    for run in made:
        run.close()
        for app in run.apps:  # what each instance did, restored and processed: pytest shows it when the test failed
            lines = app.stderr_path.read_text(encoding="utf-8", errors="replace").splitlines()
            print(f"--- {app.stderr_path.name}, its last {min(len(lines), 600)} of {len(lines)} lines:")
            print("\n".join(lines[-600:]))


@pytest.mark.timeout(300)
def test_quixstreams_exactly_once_across_a_killed_instance(
    kafka: ClusterHandle, runs: Callable[[str], Run], tmp_path: Path
) -> None:
    python = _python_with("quixstreams", "FAKEKAFKA_QUIXSTREAMS")
    run = runs("quix")

    def start(first: bool) -> PyApp:
        state_dir = tmp_path / ("state-first" if first else "state-second")  # the second starts with no state
        args = [
            kafka.bootstrap_servers,
            run.app_id,
            str(state_dir),
            run.source,
            run.sink,
            str(FREEZE_AFTER if first else 0),
        ]
        return PyApp(python, "quix_totals.py", args, tmp_path / f"{'first' if first else 'second'}.stderr")

    assert run.kill_and_restart(start, open_on=run.sink, done=lambda: len(run.reader.records) >= ORDERS) == 0
    assert not run.watch.problems, run.watch.problems
    outputs = run.outputs()
    assert len(run.reader.records) == ORDERS
    run.check_totals(outputs)
    # the killed instance's open transaction was aborted, not lost: read_uncommitted still sees its updates
    assert len(kafka.records(run.sink)) == ORDERS + run.processed_at_kill - run.committed_at_kill
    run.check_inputs_committed()
    # the store's changelog, as quixstreams names and configures it, holds every customer's committed state
    changelog = f"changelog__{run.app_id}--{run.source}--default"
    assert _configs(run.admin, changelog, "cleanup.policy") == {"cleanup.policy": "compact"}
    stored = {k: json.loads(v) for k, v in run.committed_changelog(changelog).items()}
    assert stored == {
        f'{c}|"{field}"'.encode(): value
        for c, updates in outputs.items()
        for field, value in zip(("count", "total"), updates[-1], strict=True)
    }  # key|json(state key)
    if isinstance(kafka, fakekafka.Cluster):  # the coordinator's side, which Kafka does not show over the wire
        assert {"InitProducerId", "AddPartitionsToTxn", "TxnOffsetCommit", "EndTxn"} <= set(run.watch.api_calls)
        # two transactional ids, one per process: the killed one's open transaction was ended by its timeout
        # (its producer fenced, as Kafka does), the second one's committed and closed
        txns = {t: kafka.transaction(t) for t in kafka.transactions()}
        assert sorted((v.state, ("Ongoing", "PrepareEpochFence") in v.transitions) for v in txns.values()) == [
            ("CompleteAbort", True),
            ("CompleteCommit", False),
        ], txns
    run.report("quixstreams exactly-once")


@pytest.mark.timeout(300)
def test_faust_exactly_once_tables_across_a_killed_worker(
    kafka: ClusterHandle, runs: Callable[[str], Run], tmp_path: Path
) -> None:
    python = _python_with("faust")
    run = runs("faust")
    changelogs = {"counts": f"{run.app_id}-counts-changelog", "sums": f"{run.app_id}-sums-changelog"}

    def start(first: bool) -> PyApp:
        # --without-web: faust's worker command turns the web server back on whatever the App says, on 0.0.0.0:6066,
        # which a second worker (the --kafka-real child's, run beside this session) found taken
        args = [kafka.bootstrap_servers, run.app_id, run.source, run.sink, "worker", "--without-web", "-l", "info"]
        return PyApp(python, "faust_totals.py", args, tmp_path / f"{'first' if first else 'second'}.stderr")

    assert run.crash_after_commit_and_restart(start, ready="Worker ready") == 0
    assert not run.watch.problems, run.watch.problems
    outputs = run.outputs()
    assert len(run.reader.records) == ORDERS
    run.check_totals(outputs)  # the second worker's counts go on from the first one's: the tables were restored
    run.check_inputs_committed()
    # the tables' changelogs hold every customer's committed state
    for index, (table, changelog) in enumerate(changelogs.items()):
        assert _configs(run.admin, changelog, "cleanup.policy") == {"cleanup.policy": "compact"}
        stored = {json.loads(k): json.loads(v) for k, v in run.committed_changelog(changelog).items()}
        assert stored == {c: updates[-1][index] for c, updates in outputs.items()}, table
    if isinstance(kafka, fakekafka.Cluster):  # the coordinator's side, which Kafka does not show over the wire
        assert {"InitProducerId", "AddPartitionsToTxn", "AddOffsetsToTxn", "TxnOffsetCommit", "EndTxn"} <= set(
            run.watch.api_calls
        )
        # one transactional id per input partition ({app}-{topic group}-{partition}), taken over by the second
        # worker (a new epoch) and committed
        txns = {t: kafka.transaction(t) for t in kafka.transactions() if t.startswith(f"{run.app_id}-1-")}
        assert sorted(txns) == [f"{run.app_id}-1-{p}" for p in range(PARTITIONS)], txns
        assert all(v is not None and v.producer_epoch >= 1 and v.state == "CompleteCommit" for v in txns.values()), txns
    run.report("faust exactly_once")


@pytest.mark.timeout(300)
def test_quixstreams_restores_its_store_from_a_compacted_changelog(
    kafka: ClusterHandle, runs: Callable[[str], Run], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The quixstreams app's changelog compacted, then a second instance with no local state restores from it:
    its totals go on from the first's. The changelog gets small segments (segment.ms) before the second half of
    the orders, so its first segment, all the first half's updates, is cleanable; fakekafka cleans it with
    force_compaction, Apache Kafka's cleaner once log.cleaner.backoff.ms is lowered."""
    python = _python_with("quixstreams", "FAKEKAFKA_QUIXSTREAMS")
    run = runs("quixc")
    changelog = f"changelog__{run.app_id}--{run.source}--default"

    def start(first: bool) -> PyApp:
        state_dir = tmp_path / ("state-first" if first else "state-second")  # the second starts with no state
        return PyApp(
            python,
            "quix_totals.py",
            [kafka.bootstrap_servers, run.app_id, str(state_dir), run.source, run.sink, "0"],
            tmp_path / f"{'first' if first else 'second'}.stderr",
        )

    def alter(resource: ConfigResource) -> None:
        assert run.admin.incremental_alter_configs([resource])[resource].result(30) is None

    def configs(topic: str) -> dict[str, str | None]:
        resource = ConfigResource(ResourceType.TOPIC, topic)
        entries = run.admin.describe_configs([resource])[resource].result(30)
        return {name: entry.value for name, entry in entries.items()}

    try:
        run.produce(run.orders[: ORDERS // 2])
        first = start(True)
        try:
            kafka.wait_until(lambda: first.check_alive() or run.inputs_committed() == ORDERS // 2, timeout=WAIT_S)
            # the first half's changelog records, all in each partition's one (active) segment: nothing of them is
            # cleanable until the second half's first write rolls it (segment.ms below); whichever cleaner pass
            # comes after that (Kafka's own every 15 s, or the one the test asks for) removes some of them
            first_half = {(rec.partition, rec.offset) for rec in kafka.records(changelog)}
            alter(
                ConfigResource(
                    ResourceType.TOPIC,
                    changelog,
                    incremental_configs=[
                        ConfigEntry("segment.ms", "100", incremental_operation=AlterConfigOpType.SET),
                        ConfigEntry("min.cleanable.dirty.ratio", "0.01", incremental_operation=AlterConfigOpType.SET),
                    ],
                )
            )
            # Kafka applies a topic's new configs once its broker has read them from the metadata log: until then
            # an append does not roll the segment (on a loaded machine the second half was all written before)
            kafka.wait_until(
                lambda: configs(changelog).get("segment.ms") == "100",
                timeout=WAIT_S,
                message="the changelog's segment.ms in the broker's own configs",
            )
            time.sleep(0.2)  # a time gap, not a wait: the next changelog write is segment.ms after the last
            run.produce(run.orders[ORDERS // 2 :])
            kafka.wait_until(lambda: first.check_alive() or run.inputs_committed() == ORDERS, timeout=WAIT_S)
        finally:
            assert first.stop() == 0  # it leaves the group: the second joins without waiting out its session
        written = len(kafka.records(changelog))

        def cleaned() -> bool:
            return not first_half <= {(rec.partition, rec.offset) for rec in kafka.records(changelog)}

        if isinstance(kafka, fakekafka.Cluster):
            kafka.force_compaction(changelog)  # nothing left to do if its own cleaner's pass came first
        else:
            node = str(run.admin.describe_cluster().result(30).controller.id)
            backoff = ConfigResource(
                ResourceType.BROKER,
                node,
                incremental_configs=[
                    ConfigEntry("log.cleaner.backoff.ms", "100", incremental_operation=AlterConfigOpType.SET)
                ],
            )
            alter(backoff)
            try:
                # a bound, not a guess: the restarted cleaner's first pass comes within the 100 ms backoff
                kafka.wait_until(
                    cleaned,
                    timeout=60,
                    message="Kafka's cleaner on the changelog",
                )
            finally:
                alter(
                    ConfigResource(
                        ResourceType.BROKER,
                        node,
                        incremental_configs=[
                            ConfigEntry("log.cleaner.backoff.ms", None, incremental_operation=AlterConfigOpType.DELETE)
                        ],
                    )
                )
        assert cleaned(), "no record of the first half's segment was cleaned"
        kept = len(kafka.records(changelog))
        run.reader.pump(lambda: len(run.reader.records) >= ORDERS)
        before = {c: updates[-1] for c, updates in run.outputs().items()}
        # one checkpoint's worth (commit_every=50), so the second instance commits them
        extra = [(f"x{i}", f"c{i % CUSTOMERS}", 1000 + i) for i in range(50)]
        # librdkafka's group and partition states on the second instance's stderr, whose end a failure shows
        monkeypatch.setenv("FAKEKAFKA_RDKAFKA_DEBUG", "cgrp,topic")
        second = start(False)
        try:
            run.produce(extra)
            run.reader.pump(lambda: len(run.reader.records) >= ORDERS + len(extra), also=second.check_alive)
        finally:
            assert second.stop() == 0
        after = {c: updates[-1] for c, updates in run.outputs().items()}
        added: dict[str, list[int]] = defaultdict(list)
        for _, customer, amount in extra:
            added[customer].append(amount)
        assert after == {c: (count + len(added[c]), total + sum(added[c])) for c, (count, total) in before.items()}
        print(
            f"quixstreams from a compacted changelog: {written} changelog records when the first instance stopped, "
            f"{kept} after compaction ({len(first_half)} from the first half before it)"
        )
    finally:
        run.reader.close()
