"""Consumer-group scenarios written once, run by every client that has a group consumer.

A scenario drives `GroupMember`s, each one consumer subscribed to a group, and checks two views that
must agree: what the client says it was assigned, and what the coordinator holds
(`Cluster.group()`, decoded independently of any client). Records are produced on the cluster side
(`Cluster.produce`), so a scenario tests consuming, committing and rebalancing only.

Members:
- `PollingMember`: a synchronous client (kafka-python, confluent-kafka) polled on its own thread.
  Clients are not thread-safe, so the test hands calls (commit, close) to that thread.
- `AsyncMember`: an aiokafka consumer in its own event loop on its own thread.
- `SubprocessMember`: any of those in a child process (`python -m tests.integration.clients.group_scenarios`), so a
  test can kill -9 it: no LeaveGroup, no close, only a silent connection, as when a host dies.
- `KcatMember` (kcat -G) is always a subprocess; its assignment comes from its stderr log.

Broker settings: `group_config()` lets sessions be as short as 100 ms (Kafka's floor is 6000 ms) and
starts rebalances at once. Members heartbeat every 100 ms so a rebalance is noticed quickly; their
sessions are long (`SESSION_MS`) unless a scenario wants one to expire.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import json
import os
import queue
import re
import signal
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import pytest

import fakekafka
from fakekafka.testing.embedded import GroupView, MemberView

__all__ = [
    "HEARTBEAT_MS", "KAFKA_TRANSITIONS", "POLL_S", "SESSION_MS", "SHORT_SESSION_MS", "TIMEOUT", "AsyncMember",
    "BoundClient", "Client", "GroupMember", "KcatMember", "MemberConfig", "PollingMember", "Rec", "SubprocessMember",
    "TP", "as_tps", "assert_kafka_transitions", "assert_one_owner_each", "broker_commit_answers", "consumed", "each",
    "group_config", "history", "kcat_client", "make_member", "member_of", "partitions_of", "produce_each",
    "python_client", "scenario_clean_leave", "scenario_commit_and_resume", "scenario_crash", "scenario_fourth_joins",
    "scenario_offset_reset", "scenario_partitions_added", "scenario_share_partitions", "scenario_stale_commit",
    "scenario_static_restart", "scenario_transitions", "wait_consumed", "wait_stable", "wait_until",
]

T = TypeVar("T")
TP = tuple[str, int]
Rec = tuple[str, int, int, bytes | None]
"""(topic, partition, offset, value) of one consumed record."""

ROOT = Path(__file__).resolve().parents[3]
TIMEOUT = 20.0
SESSION_MS = 10_000
"""Long enough that no scenario's rebalance can be a session expiry unless it waits for one."""
HEARTBEAT_MS = 100
SHORT_SESSION_MS = 1_500
"""The session of a member a scenario kills."""
POLL_S = 0.02
"""How often `wait_until` looks again: each wait is bounded by its deadline, never a fixed sleep."""

KAFKA_TRANSITIONS: frozenset[tuple[str, str]] = frozenset({
    ("Empty", "PreparingRebalance"), ("Empty", "Dead"),
    ("PreparingRebalance", "CompletingRebalance"), ("PreparingRebalance", "Empty"), ("PreparingRebalance", "Dead"),
    ("CompletingRebalance", "Stable"), ("CompletingRebalance", "PreparingRebalance"),
    ("CompletingRebalance", "Dead"),
    ("Stable", "PreparingRebalance"), ("Stable", "Dead"),
})
"""Kafka's classic group state diagram (ClassicGroupState.java), written out here rather than read from
fakekafka's own table, so a wrong table cannot agree with itself."""


def group_config(**overrides: Any) -> fakekafka.BrokerConfig:
    return fakekafka.BrokerConfig(**{"group_min_session_timeout_ms": 100, "num_partitions": 6,
                                     "group_initial_rebalance_delay_ms": 0, **overrides})


# --- waiting and checking ------------------------------------------------------------------------------

def wait_until(check: Callable[[], T], what: str, timeout: float = TIMEOUT) -> T:
    """Calls `check` until it returns something truthy (returned), failing after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        result = check()
        if result:
            return result
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {what}")
        time.sleep(POLL_S)


def wait_stable(c: fakekafka.Cluster, group_id: str, members: list[GroupMember], *, after_generation: int = -1,
                timeout: float = TIMEOUT) -> GroupView:
    """Waits until the group is Stable with exactly `members`, past `after_generation`, every partition of the
    topics they subscribe to is assigned, and every member's own view of its assignment equals what the
    coordinator holds for it; returns the coordinator's view. (A leader may assign before it knows the topic:
    that generation is Stable with nothing assigned, and the leader rejoins once its metadata arrives.)"""
    topics = {t for m in members for t in m.config.topics}

    def settled() -> GroupView | None:
        # the clients' views first: what a client holds came from the coordinator, so the coordinator's view read
        # after it is at least as new (read first, it could miss a static member's replacement its client knows)
        mine = [(member.client_id, member.assignment()) for member in members]
        view = c.group(group_id)
        if view is None or view.state != "Stable" or view.generation_id <= after_generation:
            return None
        if sorted(m.client_id for m in view.members) != sorted(m.client_id for m in members):
            return None
        held = {m.client_id: as_tps(m.assignment) for m in view.members}
        if set().union(*held.values()) != partitions_of(c, topics):
            return None
        if any(assignment != held[client_id] for client_id, assignment in mine):
            return None
        return view
    try:
        return wait_until(settled, f"group {group_id} Stable with {[m.client_id for m in members]}", timeout)
    except AssertionError as e:
        view = c.group(group_id)
        held = None if view is None else (view.state, view.generation_id,
                                          {m.client_id: m.assignment for m in view.members})
        clients = {m.client_id: sorted(m.assignment()) for m in members}
        raise AssertionError(f"{e}; coordinator: {held}; clients: {clients}") from None


def partitions_of(c: fakekafka.Cluster, topics: Iterable[str]) -> set[TP]:
    def read() -> set[TP]:
        return {(t, p.index) for t in topics if t in c.state.topics for p in c.state.topics[t].partitions}
    return c.call(read)


def as_tps(assignment: dict[str, list[int]] | None) -> frozenset[TP]:
    return frozenset((t, p) for t, ps in (assignment or {}).items() for p in ps)


def member_of(view: GroupView, client_id: str) -> MemberView:
    return next(m for m in view.members if m.client_id == client_id)


def assert_one_owner_each(view: GroupView, topic: str, partitions: int) -> dict[str, frozenset[TP]]:
    """Every partition of `topic` is assigned to exactly one member; returns client id -> partitions."""
    owned = {m.client_id: as_tps(m.assignment) for m in view.members}
    counts = Counter(tp for tps in owned.values() for tp in tps)
    assert counts == Counter({(topic, p): 1 for p in range(partitions)}), owned
    return owned


def assert_kafka_transitions(transitions: list[tuple[str, str]]) -> None:
    """Each transition is an edge of Kafka's diagram, each starts where the last ended, the first from Empty."""
    assert transitions, "no transitions recorded"
    assert transitions[0][0] == "Empty", transitions
    for (a, b), (c, _) in zip(transitions, transitions[1:], strict=False):
        assert b == c, f"{a}->{b} followed by {c}->...: {transitions}"
    illegal = [t for t in transitions if t not in KAFKA_TRANSITIONS]
    assert not illegal, f"not in Kafka's state diagram: {illegal}"


def history(c: fakekafka.Cluster, group_id: str) -> list[tuple[int, str, str, int]]:
    """(broker time in ms, from, to, generation) of each transition, for scenarios that check when."""
    def read() -> list[tuple[int, str, str, int]]:
        g = c.state.groups.group(group_id)
        return [(t, f.value, to.value, gen) for t, f, to, gen in g.history] if g else []
    return c.call(read)


def produce_each(c: fakekafka.Cluster, topic: str, partitions: Iterable[int], count: int, tag: str = "") -> set[Rec]:
    """`count` records to each partition; returns them as consumers should see them."""
    out: set[Rec] = set()
    for p in partitions:
        for i in range(count):
            value = f"{tag}{p}-{i}".encode()
            _, offset = c.produce(topic, value, partition=p)
            out.add((topic, p, offset, value))
    return out


def each(members: Iterable[GroupMember], action: Callable[[GroupMember], object]) -> None:
    """`action(member)` for every member at once (a call may wait for the member's current poll to end)."""
    members = list(members)
    if not members:
        return
    with concurrent.futures.ThreadPoolExecutor(len(members)) as pool:
        for future in [pool.submit(action, m) for m in members]:
            future.result(TIMEOUT * 2)


def consumed(members: Iterable[GroupMember]) -> list[Rec]:
    return [r for m in members for r in m.records()]


def wait_consumed(members: list[GroupMember], expected: set[Rec], what: str = "records") -> list[Rec]:
    """Waits until the members together consumed everything in `expected`; returns all they consumed."""
    wait_until(lambda: expected <= set(consumed(members)), f"{len(expected)} {what} consumed by "
               f"{[m.client_id for m in members]}")
    return consumed(members)


@dataclass
class CommitSpy:
    answers: list[tuple[str, int, set[str]]] = field(default_factory=list)
    """(member id, generation, error names) of every OffsetCommit the coordinator answered."""


def broker_commit_answers(c: fakekafka.Cluster) -> CommitSpy:
    """Records what the coordinator answers each OffsetCommit, so a test knows the broker (not the client)
    refused a commit."""
    spy = CommitSpy()
    groups = c.state.groups
    original = groups.commit

    def commit(group_id: str, generation_id: int, member_id: str, *args: Any, **kw: Any) -> Any:
        codes = original(group_id, generation_id, member_id, *args, **kw)
        spy.answers.append((member_id, generation_id, {code.name for code in codes.values()}))
        return codes
    c.call(lambda: setattr(groups, "commit", commit))
    return spy


# --- members -------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class MemberConfig:
    """One consumer's settings, in client-neutral names (each client's factory translates them)."""

    bootstrap: str
    group_id: str
    topics: tuple[str, ...]
    client_id: str
    session_timeout_ms: int = SESSION_MS
    heartbeat_interval_ms: int = HEARTBEAT_MS
    max_poll_interval_ms: int = 30_000
    """The rebalance timeout: how long a rebalance may wait for a member that does not rejoin."""
    auto_offset_reset: str = "earliest"
    """earliest, latest or none (librdkafka's 'error')."""
    group_instance_id: str | None = None
    metadata_max_age_ms: int = 300_000
    auto_commit: bool = False
    assignor: str | None = None
    """librdkafka's partition.assignment.strategy (confluent-kafka only); None for the client's default."""


class GroupMember:
    """One consumer in a group, seen from the test: what it was assigned and what it consumed."""

    def __init__(self, config: MemberConfig) -> None:
        self.config = config
        self.client_id = config.client_id
        self._lock = threading.Lock()
        self._records: list[Rec] = []
        self._assignment: frozenset[TP] = frozenset()
        self.errors: list[BaseException] = []

    commits_offsets = True
    """Whether `commit` takes explicit offsets."""

    def assignment(self) -> frozenset[TP]:
        """The partitions the client itself says it owns."""
        with self._lock:
            return self._assignment

    def records(self) -> list[Rec]:
        with self._lock:
            return list(self._records)

    def _got(self, records: list[Rec], assignment: frozenset[TP] | None) -> None:
        with self._lock:
            self._records.extend(records)
            if assignment is not None:
                self._assignment = assignment

    def commit(self, offsets: dict[TP, int] | None = None) -> None:
        """Commits synchronously: `offsets` (next offset to read), or the positions of what was consumed."""
        raise NotImplementedError

    def close(self) -> None:
        """Closes the consumer as an application would (a dynamic member sends LeaveGroup)."""
        raise NotImplementedError

    def kill(self) -> None:
        """kill -9: only members in a child process can die this way."""
        raise NotImplementedError(f"{type(self).__name__} runs in the test process")


@dataclass(frozen=True)
class Driver:
    """How a synchronous client is made and driven; every function runs on the member's own thread."""

    make: Callable[[MemberConfig], Any]
    poll: Callable[[Any], list[Rec]]
    """One short poll: the records it returned (raises the client's error, which the member records)."""
    assigned: Callable[[Any], Iterable[TP]]
    commit: Callable[[Any, dict[TP, int] | None], None]
    close: Callable[[Any], None]
    live_assignment: bool = False
    """Whether `assigned` may be called from another thread while the member polls (confluent-kafka blocks)."""


class PollingMember(GroupMember):
    """A synchronous consumer polled without pause on its own thread, as an application's poll loop."""

    def __init__(self, config: MemberConfig, driver: Driver) -> None:
        super().__init__(config)
        self._driver = driver
        self._consumer: Any = None
        self._calls: queue.SimpleQueue[tuple[Callable[[Any], Any], concurrent.futures.Future[Any]]] = \
            queue.SimpleQueue()
        self._stop = threading.Event()
        started: concurrent.futures.Future[None] = concurrent.futures.Future()
        self._thread = threading.Thread(target=self._run, args=(started,), name=f"member-{config.client_id}",
                                        daemon=True)
        self._thread.start()
        started.result(TIMEOUT)

    def _run(self, started: concurrent.futures.Future[None]) -> None:
        try:
            consumer = self._driver.make(self.config)
        except BaseException as e:  # noqa: BLE001 - handed to the test thread
            started.set_exception(e)
            return
        self._consumer = consumer
        started.set_result(None)
        while not self._stop.is_set():
            while True:
                try:
                    fn, future = self._calls.get_nowait()
                except queue.Empty:
                    break
                try:
                    future.set_result(fn(consumer))
                except BaseException as e:  # noqa: BLE001 - handed to the caller
                    future.set_exception(e)
            if self._stop.is_set():
                break
            try:
                records = self._driver.poll(consumer)
            except Exception as e:  # noqa: BLE001 - a client error is data for the test
                with self._lock:
                    self.errors.append(e)
                records = []
                self._stop.wait(0.05)
            self._got(records, None if self._driver.live_assignment else frozenset(self._driver.assigned(consumer)))

    def assignment(self) -> frozenset[TP]:
        if self._driver.live_assignment and self._thread.is_alive():
            return frozenset(self._driver.assigned(self._consumer))
        return super().assignment()

    def call(self, fn: Callable[[Any], T], timeout: float = TIMEOUT) -> T:
        """Runs `fn(consumer)` on the member's thread, between two polls."""
        future: concurrent.futures.Future[T] = concurrent.futures.Future()
        self._calls.put((fn, future))
        return future.result(timeout)

    def commit(self, offsets: dict[TP, int] | None = None) -> None:
        self.call(lambda k: self._driver.commit(k, offsets))

    def close(self) -> None:
        if not self._thread.is_alive():
            return
        def close(consumer: Any) -> None:
            self._stop.set()  # the thread stops polling once this returns
            self._driver.close(consumer)
        try:
            self.call(close)
        finally:
            self._stop.set()
            self._thread.join(TIMEOUT)


class AsyncMember(GroupMember):
    """An aiokafka consumer in an event loop of its own, on a thread of its own."""

    def __init__(self, config: MemberConfig) -> None:
        super().__init__(config)
        self._loop = asyncio.new_event_loop()
        self._consumer: Any = None
        self._task: asyncio.Task[None] | None = None
        self._thread = threading.Thread(target=self._loop.run_forever, name=f"member-{config.client_id}",
                                        daemon=True)
        self._thread.start()
        try:
            self._consumer = self.call(self._start)
        except BaseException:
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join(TIMEOUT)
            raise

    async def _start(self) -> Any:
        from aiokafka import AIOKafkaConsumer
        k = self.config
        consumer = AIOKafkaConsumer(
            *k.topics, bootstrap_servers=k.bootstrap, group_id=k.group_id, client_id=k.client_id,
            session_timeout_ms=k.session_timeout_ms, heartbeat_interval_ms=k.heartbeat_interval_ms,
            max_poll_interval_ms=k.max_poll_interval_ms, rebalance_timeout_ms=k.max_poll_interval_ms,
            auto_offset_reset=k.auto_offset_reset, enable_auto_commit=k.auto_commit, auto_commit_interval_ms=100,
            group_instance_id=k.group_instance_id, metadata_max_age_ms=k.metadata_max_age_ms, fetch_max_wait_ms=20)
        try:
            await consumer.start()
        except BaseException:
            await consumer.stop()
            raise
        self._consumer = consumer
        self._task = asyncio.get_running_loop().create_task(self._poll_forever())
        return consumer

    async def _poll_forever(self) -> None:
        consumer = self._consumer
        while True:
            try:
                batches = await consumer.getmany(timeout_ms=50)
            except asyncio.CancelledError:
                raise
            except Exception as e:  # noqa: BLE001 - a client error is data for the test
                with self._lock:
                    self.errors.append(e)
                batches = {}
                await asyncio.sleep(0.05)
            records = [(tp.topic, tp.partition, r.offset, r.value) for tp, rs in batches.items() for r in rs]
            self._got(records, frozenset((tp.topic, tp.partition) for tp in consumer.assignment()))

    def call(self, coro_fn: Callable[[], Any], timeout: float = TIMEOUT) -> Any:
        return asyncio.run_coroutine_threadsafe(coro_fn(), self._loop).result(timeout)

    def commit(self, offsets: dict[TP, int] | None = None) -> None:
        from aiokafka import TopicPartition

        async def commit() -> None:
            if offsets is None:
                await self._consumer.commit()
            else:
                await self._consumer.commit({TopicPartition(t, p): o for (t, p), o in offsets.items()})
        self.call(commit)

    def close(self) -> None:
        if not self._thread.is_alive():
            return

        async def stop() -> None:
            if self._task is not None:
                self._task.cancel()
                await asyncio.gather(self._task, return_exceptions=True)
            await self._consumer.stop()
        try:
            self.call(stop)
        finally:
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join(TIMEOUT)
            self._loop.close()


class _ChildProcessMember(GroupMember):
    """Shared by members in a child process: reader threads, kill -9, terminate on close."""

    def __init__(self, config: MemberConfig, argv: list[str], **popen: Any) -> None:
        super().__init__(config)
        self.process = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, **popen)
        self.stderr_lines: list[str] = []
        self._readers = [threading.Thread(target=self._read, args=(self.process.stdout, self._on_stdout), daemon=True),
                         threading.Thread(target=self._read, args=(self.process.stderr, self._on_stderr), daemon=True)]
        for t in self._readers:
            t.start()

    @staticmethod
    def _read(stream: Any, handle: Callable[[str], None]) -> None:
        for raw in iter(stream.readline, b""):
            handle(raw.decode(errors="replace").rstrip("\n"))

    def _on_stdout(self, line: str) -> None:
        raise NotImplementedError

    def _on_stderr(self, line: str) -> None:
        with self._lock:
            self.stderr_lines.append(line)

    def kill(self) -> None:
        self.process.send_signal(signal.SIGKILL)
        self.process.wait(TIMEOUT)

    def _finish(self, sig: int) -> None:
        if self.process.poll() is None:
            self.process.send_signal(sig)
            try:
                self.process.wait(TIMEOUT)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(TIMEOUT)
        for t in self._readers:
            t.join(TIMEOUT)


class SubprocessMember(_ChildProcessMember):
    """A Python client's member in a child process; it reports its assignment and records (without their
    values) as JSON lines."""

    def __init__(self, client: str, config: MemberConfig) -> None:
        argv = [sys.executable, "-m", "tests.integration.clients.group_scenarios", json.dumps({"client": client,
                                                                                   **asdict(config)})]
        env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
        super().__init__(config, argv, cwd=ROOT, env=env)

    def _on_stdout(self, line: str) -> None:
        msg = json.loads(line)
        self._got([tuple(r) for r in msg.get("records", [])],  # type: ignore[misc]
                  frozenset((t, p) for t, p in msg["assignment"]))

    def close(self) -> None:
        self._finish(signal.SIGTERM)


_KCAT_REBALANCE = re.compile(r"rebalanced \(memberid [^)]*\): (assigned|revoked): ?(.*)$")
_KCAT_PARTITION = re.compile(r"(\S+) \[(\d+)\]")


class KcatMember(_ChildProcessMember):
    """kcat -G: librdkafka's balanced consumer in kcat's own process. It logs every assignment on stderr
    ("% Group g rebalanced (memberid …): assigned: t [0], t [1]") and prints records as -f says.
    SIGTERM closes it cleanly (committing what it consumed, then LeaveGroup)."""

    FORMAT = "%t|%p|%o|%s\\n"
    commits_offsets = False

    def __init__(self, kcat: str, config: MemberConfig) -> None:
        k = config
        settings = {
            "client.id": k.client_id, "session.timeout.ms": k.session_timeout_ms,
            "heartbeat.interval.ms": k.heartbeat_interval_ms, "max.poll.interval.ms": k.max_poll_interval_ms,
            "auto.offset.reset": "error" if k.auto_offset_reset == "none" else k.auto_offset_reset,
            "fetch.wait.max.ms": 10,
            "topic.metadata.refresh.interval.ms": k.metadata_max_age_ms, "metadata.max.age.ms": k.metadata_max_age_ms,
        }
        if k.group_instance_id is not None:
            settings["group.instance.id"] = k.group_instance_id
        argv = [kcat, "-b", k.bootstrap, "-G", k.group_id, "-u", "-f", self.FORMAT]
        for name, value in settings.items():
            argv += ["-X", f"{name}={value}"]
        super().__init__(config, [*argv, *k.topics])

    def _on_stdout(self, line: str) -> None:
        topic, partition, offset, value = line.split("|", 3)
        self._got([(topic, int(partition), int(offset), value.encode())], None)

    def _on_stderr(self, line: str) -> None:
        super()._on_stderr(line)
        match = _KCAT_REBALANCE.search(line)
        if match:
            tps = frozenset((t, int(p)) for t, p in _KCAT_PARTITION.findall(match.group(2)))
            with self._lock:
                self._assignment = tps if match.group(1) == "assigned" else self._assignment - tps

    def commit(self, offsets: dict[TP, int] | None = None) -> None:
        """kcat cannot be asked to commit: it commits what it consumed when it closes (and librdkafka
        auto-commits every auto.commit.interval.ms, 5 s by default)."""
        assert offsets is None, "kcat commits only what it consumed"

    def close(self) -> None:
        running = self.process.poll() is None
        self._finish(signal.SIGTERM)
        if running:
            assert self.process.returncode == 0, "\n".join(self.stderr_lines)


# --- the clients ---------------------------------------------------------------------------------------

def _kafka_python_driver() -> Driver:
    from kafka import KafkaConsumer, TopicPartition
    from kafka.structs import OffsetAndMetadata

    from compat.clients.kafka_python import finish_a_join_left_in_flight

    def make(k: MemberConfig) -> Any:
        consumer = KafkaConsumer(
            bootstrap_servers=k.bootstrap, group_id=k.group_id, client_id=k.client_id,
            session_timeout_ms=k.session_timeout_ms, heartbeat_interval_ms=k.heartbeat_interval_ms,
            max_poll_interval_ms=k.max_poll_interval_ms, auto_offset_reset=k.auto_offset_reset,
            enable_auto_commit=k.auto_commit, auto_commit_interval_ms=100, group_instance_id=k.group_instance_id,
            metadata_max_age_ms=k.metadata_max_age_ms, fetch_max_wait_ms=20)
        consumer.subscribe(list(k.topics))
        return consumer

    def poll(consumer: Any) -> list[Rec]:
        # Long polls (they return as soon as records come): a join rarely outlasts one; one that does is awaited
        # by the next (kafka-python 3.0.12 would lose it: finish_a_join_left_in_flight)
        records = consumer.poll(timeout_ms=1000)
        finish_a_join_left_in_flight(consumer)
        return [(tp.topic, tp.partition, r.offset, r.value) for tp, rs in records.items() for r in rs]

    def commit(consumer: Any, offsets: dict[TP, int] | None) -> None:
        if offsets is None:
            consumer.commit()
        else:
            consumer.commit({TopicPartition(t, p): OffsetAndMetadata(o, "", -1) for (t, p), o in offsets.items()})

    # kafka-python keeps the assignment on its network thread: reading it does not wait for a 1 s poll
    return Driver(make, poll, lambda c: [(tp.topic, tp.partition) for tp in c.assignment()], commit,
                  lambda c: c.close(), live_assignment=True)


def _confluent_driver() -> Driver:
    from confluent_kafka import Consumer, KafkaError, KafkaException, TopicPartition

    def make(k: MemberConfig) -> Any:
        settings: dict[str, Any] = {
            "bootstrap.servers": k.bootstrap, "group.id": k.group_id, "client.id": k.client_id,
            "session.timeout.ms": k.session_timeout_ms, "heartbeat.interval.ms": k.heartbeat_interval_ms,
            "max.poll.interval.ms": k.max_poll_interval_ms,
            "auto.offset.reset": "error" if k.auto_offset_reset == "none" else k.auto_offset_reset,
            "enable.auto.commit": k.auto_commit, "auto.commit.interval.ms": 100, "fetch.wait.max.ms": 10,
            "topic.metadata.refresh.interval.ms": k.metadata_max_age_ms, "metadata.max.age.ms": k.metadata_max_age_ms,
            "enable.partition.eof": False,
        }
        if k.group_instance_id is not None:
            settings["group.instance.id"] = k.group_instance_id
        if k.assignor is not None:
            settings["partition.assignment.strategy"] = k.assignor
        consumer = Consumer(settings)
        consumer.subscribe(list(k.topics))
        return consumer

    def poll(consumer: Any) -> list[Rec]:
        out: list[Rec] = []
        for m in consumer.consume(100, timeout=0.05):
            if m.error() is not None:
                raise KafkaException(m.error())
            out.append((m.topic(), m.partition(), m.offset(), m.value()))
        return out

    def commit(consumer: Any, offsets: dict[TP, int] | None) -> None:
        try:
            if offsets is None:
                consumer.commit(asynchronous=False)
            else:
                consumer.commit(offsets=[TopicPartition(t, p, o) for (t, p), o in offsets.items()],
                                asynchronous=False)
        except KafkaException as e:
            if e.args[0].code() != KafkaError._NO_OFFSET:  # nothing consumed since the last commit
                raise

    return Driver(make, poll, lambda c: [(tp.topic, tp.partition) for tp in c.assignment()], commit,
                  lambda c: c.close())


@dataclass(frozen=True)
class Client:
    """One client under test: how to start a member in this process, and in a child process."""

    name: str
    start: Callable[[MemberConfig], GroupMember]
    start_killable: Callable[[MemberConfig], GroupMember]


def make_member(client: str, config: MemberConfig) -> GroupMember:
    """A member of one of the Python clients, in this process."""
    if client == "kafka-python":
        return PollingMember(config, _kafka_python_driver())
    if client == "confluent-kafka":
        return PollingMember(config, _confluent_driver())
    if client == "aiokafka":
        return AsyncMember(config)
    raise ValueError(client)


def python_client(name: str) -> Client:
    return Client(name, lambda k: make_member(name, k), lambda k: SubprocessMember(name, k))


def kcat_client(kcat: str) -> Client:
    return Client("kcat", lambda k: KcatMember(kcat, k), lambda k: KcatMember(kcat, k))


class BoundClient:
    """A client and a cluster: starts members and closes whatever is left at the end of a test."""

    def __init__(self, client: Client, c: fakekafka.Cluster) -> None:
        self.client = client
        self.cluster = c
        self.started: list[GroupMember] = []

    def config(self, group_id: str, topics: Iterable[str], client_id: str, **overrides: Any) -> MemberConfig:
        return MemberConfig(self.cluster.bootstrap_servers, group_id, tuple(topics), client_id, **overrides)

    def member(self, group_id: str, topics: Iterable[str], client_id: str, *, killable: bool = False,
               **overrides: Any) -> GroupMember:
        config = self.config(group_id, topics, client_id, **overrides)
        member = (self.client.start_killable if killable else self.client.start)(config)
        self.started.append(member)
        return member

    def members(self, group_id: str, topics: Iterable[str], count: int, prefix: str = "m",
                **overrides: Any) -> list[GroupMember]:
        return [self.member(group_id, topics, f"{prefix}{i}", **overrides) for i in range(count)]

    def close_all(self) -> None:
        started, self.started = self.started, []
        each(started, lambda m: m.close())


# --- scenarios -----------------------------------------------------------------------------------------

def scenario_share_partitions(client: BoundClient, topic: str = "t", group: str = "g") -> None:
    """Three members split six partitions, each exactly once in both views; every record is consumed
    exactly once, by its partition's owner; closing all leaves the group Empty."""
    c = client.cluster
    c.create_topic(topic, 6)
    members = client.members(group, [topic], 3)
    view = wait_stable(c, group, members)
    owned = assert_one_owner_each(view, topic, 6)
    assert all(owned.values()), f"a member got nothing: {owned}"

    expected = produce_each(c, topic, range(6), 5)
    got = wait_consumed(members, expected)
    assert Counter(got) == Counter(expected), "lost, duplicated or foreign records"
    for m in members:
        assert {(t, p) for t, p, _, _ in m.records()} <= owned[m.client_id], f"{m.client_id} read a foreign partition"
    assert c.group(group).generation_id == view.generation_id, "a rebalance while the group was stable"

    each(members, lambda m: m.close())
    final = wait_until(lambda: (g := c.group(group)) and g.state == "Empty" and g, "group Empty after every close")
    assert not final.members
    assert_kafka_transitions(final.transitions)
    assert final.transitions[-1] == ("PreparingRebalance", "Empty")


def scenario_transitions(client: BoundClient, topic: str = "t", group: str = "g") -> None:
    """The exact state sequence for: one member joins, a second joins, the second leaves, the first leaves."""
    c = client.cluster
    c.create_topic(topic, 6)
    first = client.member(group, [topic], "first")
    wait_stable(c, group, [first])
    rebalance = [("Stable", "PreparingRebalance"), ("PreparingRebalance", "CompletingRebalance"),
                 ("CompletingRebalance", "Stable")]
    expected = [("Empty", "PreparingRebalance"), ("PreparingRebalance", "CompletingRebalance"),
                ("CompletingRebalance", "Stable")]
    assert c.group(group).transitions == expected

    second = client.member(group, [topic], "second")
    view = wait_stable(c, group, [first, second])
    expected += rebalance
    assert view.transitions == expected

    second.close()
    view = wait_stable(c, group, [first], after_generation=view.generation_id)
    expected += rebalance
    assert view.transitions == expected

    first.close()
    view = wait_until(lambda: (g := c.group(group)) and g.state == "Empty" and g, "group Empty")
    assert view.transitions == [*expected, ("Stable", "PreparingRebalance"), ("PreparingRebalance", "Empty")]


def scenario_clean_leave(client: BoundClient, topic: str = "t", group: str = "g") -> None:
    """A member that closes leaves at once: the others take its partitions in a new generation long before
    its session (SESSION_MS) could have expired, and consume what is produced to them."""
    c = client.cluster
    c.create_topic(topic, 6)
    members = client.members(group, [topic], 3)
    before = wait_stable(c, group, members)
    leaver = members.pop(0)
    leaver_id = member_of(before, leaver.client_id).member_id

    started = time.monotonic()
    leaver.close()
    after = wait_stable(c, group, members, after_generation=before.generation_id, timeout=SESSION_MS / 1000)
    took = time.monotonic() - started
    assert took < SESSION_MS / 1000 / 4, f"the rebalance took {took:.2f}s: was LeaveGroup ignored?"
    assert leaver_id not in {m.member_id for m in after.members}
    assert_one_owner_each(after, topic, 6)
    assert_kafka_transitions(after.transitions)
    assert ("Stable", "PreparingRebalance") in after.transitions[len(before.transitions):]

    expected = produce_each(c, topic, range(6), 2)
    assert Counter(wait_consumed(members, expected)) == Counter(expected)


def scenario_crash(client: BoundClient, topic: str = "t", group: str = "g") -> None:
    """A member killed with -9 sends nothing: the coordinator keeps it until its session expires (not on the
    closed connection, not earlier), then the others rebalance and take its partitions."""
    c = client.cluster
    c.create_topic(topic, 6)
    members = client.members(group, [topic], 2)
    victim = client.member(group, [topic], "victim", killable=True, session_timeout_ms=SHORT_SESSION_MS)
    before = wait_stable(c, group, [*members, victim])
    victim_id = member_of(before, victim.client_id).member_id
    assert victim.assignment(), "the victim got no partition to lose"

    victim.kill()

    def last_heartbeat_and_now() -> tuple[int, int]:
        m = c.state.groups.group(group).members[victim_id]
        return m.heartbeat_deadline - m.session_timeout_ms, c.state.clock.now_ms()
    last_heartbeat, killed_at = c.call(last_heartbeat_and_now)
    after = wait_stable(c, group, members, after_generation=before.generation_id,
                        timeout=SHORT_SESSION_MS / 1000 + 10)
    assert victim_id not in {m.member_id for m in after.members}
    assert_one_owner_each(after, topic, 6)
    rebalanced_at = next(t for t, a, b, _ in history(c, group) if t >= killed_at and (a, b) ==
                         ("Stable", "PreparingRebalance"))
    # not on the closed connection, not before the session ran out, and not long after
    assert rebalanced_at >= last_heartbeat + SHORT_SESSION_MS, (last_heartbeat, killed_at, rebalanced_at)
    assert rebalanced_at <= killed_at + SHORT_SESSION_MS + 1000, (last_heartbeat, killed_at, rebalanced_at)
    assert_kafka_transitions(after.transitions)

    expected = produce_each(c, topic, range(6), 2)
    assert Counter(wait_consumed(members, expected)) == Counter(expected)


def scenario_fourth_joins(client: BoundClient, topic: str = "t", group: str = "g") -> None:
    """A fourth member joining a stable group of three triggers a rebalance that gives it partitions."""
    c = client.cluster
    c.create_topic(topic, 6)
    members = client.members(group, [topic], 3)
    before = wait_stable(c, group, members)
    members.append(client.member(group, [topic], "late"))
    after = wait_stable(c, group, members, after_generation=before.generation_id)
    owned = assert_one_owner_each(after, topic, 6)
    assert owned["late"], f"the new member got nothing: {owned}"
    assert sorted(len(tps) for tps in owned.values()) == [1, 1, 2, 2]
    assert_kafka_transitions(after.transitions)
    assert after.transitions[len(before.transitions)] == ("Stable", "PreparingRebalance")

    expected = produce_each(c, topic, range(6), 2)
    assert Counter(wait_consumed(members, expected)) == Counter(expected)


def scenario_static_restart(client: BoundClient, topic: str = "t", group: str = "g") -> None:
    """A static member (group.instance.id) that closes sends no LeaveGroup; restarted within its session, it
    takes its old place under a new member id: no rebalance, same generation, same partitions."""
    c = client.cluster
    c.create_topic(topic, 6)
    others = client.members(group, [topic], 2)
    static = client.member(group, [topic], "static-a", group_instance_id="instance-1")
    before = wait_stable(c, group, [*others, static])
    old = member_of(before, "static-a")
    assert old.group_instance_id == "instance-1"
    partitions = static.assignment()
    assert partitions

    static.close()
    # the coordinator still holds it: nothing changed
    same = c.group(group)
    assert (same.state, same.generation_id, same.transitions) == ("Stable", before.generation_id, before.transitions)
    assert old.member_id in {m.member_id for m in same.members}

    again = client.member(group, [topic], "static-a", group_instance_id="instance-1")
    after = wait_stable(c, group, [*others, again])
    assert after.generation_id == before.generation_id, "the restart caused a rebalance"
    assert after.transitions == before.transitions
    new = member_of(after, "static-a")
    assert new.member_id != old.member_id and new.group_instance_id == "instance-1"
    assert again.assignment() == partitions
    assert {m.client_id: m.assignment for m in after.members} == {m.client_id: m.assignment for m in before.members}

    expected = produce_each(c, topic, range(6), 2)
    assert Counter(wait_consumed([*others, again], expected)) == Counter(expected)


def scenario_commit_and_resume(client: BoundClient, topic: str = "t", group: str = "g") -> None:
    """Where a group resumes after all its members stopped: at each committed offset, reading nothing before
    it again and skipping nothing after it. The members read 5 records a partition and commit offset 3
    (kcat, which cannot choose, commits all it read)."""
    c = client.cluster
    c.create_topic(topic, 6)
    first = client.members(group, [topic], 3)
    wait_stable(c, group, first)
    old = produce_each(c, topic, range(6), 5, "old-")
    assert Counter(wait_consumed(first, old)) == Counter(old)
    at = 3 if all(m.commits_offsets for m in first) else 5
    each(first, lambda m: m.commit({tp: at for tp in m.assignment()} if m.commits_offsets else None))
    each(first, lambda m: m.close())
    wait_until(lambda: c.group(group).state == "Empty", "group Empty")
    assert c.committed(group) == {(topic, p): at for p in range(6)}

    new = produce_each(c, topic, range(6), 5, "new-")
    # one member restarts the group: while several were still joining, a partition handed from one to
    # another would be read again from the committed offset (Kafka's at-least-once, not what this checks)
    again = client.member(group, [topic], "again")
    wait_stable(c, group, [again])
    expected = {r for r in old if r[2] >= at} | new
    got = wait_consumed([again], expected)
    assert Counter(got) == Counter(expected), f"read again: {sorted(Counter(got) - Counter(expected))}"


def scenario_offset_reset(client: BoundClient, reset: str, topic: str = "t") -> None:
    """A new group starts at each partition's first record (earliest), or past what exists (latest)."""
    c = client.cluster
    c.create_topic(topic, 6)
    old = produce_each(c, topic, range(6), 3, "old-")
    group = f"fresh-{reset}"
    member = client.member(group, [topic], "m", auto_offset_reset=reset)
    wait_stable(c, group, [member])
    if reset == "earliest":
        assert Counter(wait_consumed([member], old)) == Counter(old)
        return
    # latest: the reset may race with records produced right after the assignment, so keep producing one
    # record per partition until each partition delivered one; what was there before must never show
    seen: set[int] = set()

    def each_partition_delivered() -> bool:
        nonlocal seen
        got = member.records()
        seen = {p for _, p, _, _ in got}
        if len(seen) == 6:
            return True
        produce_each(c, topic, range(6), 1, "new-")
        return False
    wait_until(each_partition_delivered, "a record from each partition")
    got = member.records()
    assert not set(got) & old, "latest read records that existed before the group"
    for p in range(6):
        offsets = sorted(o for _, q, o, _ in got if q == p)
        assert offsets[0] >= 3 and offsets == list(range(offsets[0], offsets[-1] + 1)), (p, offsets)
    assert not c.committed(group)


def scenario_partitions_added(client: BoundClient, add_partitions: Callable[[str, int], None],
                              topic: str = "grows", group: str = "g") -> None:
    """Partitions added to a subscribed topic are found by the members' metadata refresh; they rejoin and the
    new partitions are assigned and consumed."""
    c = client.cluster
    c.create_topic(topic, 3)
    members = client.members(group, [topic], 2, metadata_max_age_ms=300)
    before = wait_stable(c, group, members)
    assert_one_owner_each(before, topic, 3)

    add_partitions(topic, 6)
    after = wait_stable(c, group, members, after_generation=before.generation_id)
    assert_one_owner_each(after, topic, 6)
    assert_kafka_transitions(after.transitions)
    expected = produce_each(c, topic, range(6), 2)
    assert Counter(wait_consumed(members, expected)) == Counter(expected)


def scenario_stale_commit(client: BoundClient, topic: str = "t", group: str = "g") -> BaseException:
    """A member the coordinator dropped (its session expired as far as the broker knows) commits with its old
    generation and member id: the coordinator refuses, the committed offsets stay, and the client gets an
    error, which is returned for the test to check its type."""
    c = client.cluster
    c.create_topic(topic, 6)
    # the stale member heartbeats rarely, so it cannot learn that it was dropped before it commits
    interval = 4_000
    stale = client.member(group, [topic], "stale", session_timeout_ms=20_000, heartbeat_interval_ms=interval,
                          max_poll_interval_ms=60_000)
    other = client.member(group, [topic], "other")
    before = wait_stable(c, group, [stale, other])
    stale_id = member_of(before, "stale").member_id
    owned = stale.assignment()
    assert owned
    expected = produce_each(c, topic, range(6), 2)
    wait_consumed([stale, other], expected)
    spy = broker_commit_answers(c)

    def heartbeat_far() -> bool:
        def since_last_touch() -> int:
            m = c.state.groups.group(group).members[stale_id]
            return c.state.clock.now_ms() - (m.heartbeat_deadline - m.session_timeout_ms)
        return c.call(since_last_touch) < interval - 2_500
    # drop it when its next heartbeat is at least 2.5 s away: the rest happens before that
    wait_until(heartbeat_far, "a recent heartbeat from the stale member", timeout=10)
    c.expire_member(group, stale_id)
    after = wait_stable(c, group, [other], after_generation=before.generation_id, timeout=5)
    assert after.generation_id > before.generation_id

    with_error: BaseException | None = None
    try:
        stale.commit({tp: 1 for tp in owned})  # clients commit only partitions they think they own
    except Exception as e:  # noqa: BLE001 - returned to the client's test
        with_error = e
    assert with_error is not None, "the stale member's commit succeeded"
    refused = [a for a in spy.answers if a[0] == stale_id]
    assert refused, f"the client refused on its own; the coordinator saw {spy.answers}"
    assert all(codes and codes <= {"UNKNOWN_MEMBER_ID", "ILLEGAL_GENERATION", "REBALANCE_IN_PROGRESS"}
               for _, _, codes in refused), refused
    assert all(gen == before.generation_id for _, gen, _ in refused)
    assert c.committed(group) == {}
    return with_error


# --- the child process of a SubprocessMember -------------------------------------------------------------

def _child(spec: dict[str, Any]) -> None:
    client = spec.pop("client")
    config = MemberConfig(**{**spec, "topics": tuple(spec["topics"])})
    member = make_member(client, config)
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    reported: tuple[frozenset[TP], int] = (frozenset(), 0)
    while not stop.wait(0.02):
        now = (member.assignment(), len(member.records()))
        if now != reported:
            records = member.records()[reported[1]:]
            print(json.dumps({"assignment": sorted(now[0]),
                              "records": [[t, p, o, None] for t, p, o, _ in records]}), flush=True)
            reported = now
    member.close()



class SharedScenarios:
    """The scenarios every client runs the same way. A client's module subclasses it as `TestShared...`
    (this base is not collected) and supplies the `client` fixture; what differs per client stays there."""

    def test_three_members_share_six_partitions(self, client: BoundClient) -> None:
        scenario_share_partitions(client)

    def test_state_transitions(self, client: BoundClient) -> None:
        scenario_transitions(client)

    def test_clean_leave_rebalances_at_once(self, client: BoundClient) -> None:
        scenario_clean_leave(client)

    def test_crashed_member_expires_after_session(self, client: BoundClient) -> None:
        scenario_crash(client)

    def test_fourth_member_joins(self, client: BoundClient) -> None:
        scenario_fourth_joins(client)

    def test_static_member_restarts_without_rebalance(self, client: BoundClient) -> None:
        scenario_static_restart(client)

    def test_commit_then_restart_resumes(self, client: BoundClient) -> None:
        scenario_commit_and_resume(client)

    @pytest.mark.parametrize("reset", ["earliest", "latest"])
    def test_offset_reset_new_group(self, client: BoundClient, reset: str) -> None:
        scenario_offset_reset(client, reset)


if __name__ == "__main__":
    _child(json.loads(sys.argv[1]))

