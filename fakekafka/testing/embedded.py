"""`fakekafka.Cluster`: a fake Kafka cluster in this process, for tests and scripts.

`with Cluster() as c:` runs the server on an event loop in a background thread, so synchronous
clients (kafka-python, confluent-kafka, a Java subprocess) can talk to it; `async with Cluster()`
runs it in the caller's loop, so aiokafka in the same loop cannot deadlock. Every read or change of
the model from the caller goes through the loop (`call`), so a test never races the server.
"""

from __future__ import annotations

import asyncio
import collections
import concurrent.futures
import dataclasses
import logging
import os
import tempfile
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

from fakekafka.model.acl import STANDARD_AUTHORIZER, AclBinding, AclBindingFilter, Authorizer
from fakekafka.model.clock import Clock, ManualClock
from fakekafka.model.cluster import ClusterState
from fakekafka.model.config import BrokerConfig
from fakekafka.model.errors import ApiError
from fakekafka.model.faults import Fault, FaultSteering
from fakekafka.model.group import Group
from fakekafka.model.metadata import Broker
from fakekafka.model.transactions import TransactionMetadata
from fakekafka.net.security import TestPki, make_test_pki, parse_listeners
from fakekafka.net.server import ListenerPool, Server
from fakekafka.observe.records import RequestRecord
from fakekafka.storage.datadir import DataDir
from fakekafka.testing.arguments import (
    check_broker,
    check_group,
    check_partition,
    check_topic,
    check_transactional_id,
    listing,
)
from fakekafka.testing.chaos import ChaosRun, ChaosSteering, attach_chaos
from fakekafka.testing.handle import ClusterHandle
from fakekafka.wire import ErrorCode
from fakekafka.wire.records import Compression, Record, build_batch, decode_batch

if TYPE_CHECKING:
    from fakekafka.observe.recording import RequestRecorder
    from fakekafka.registry import SchemaRegistry

__all__ = ["Cluster", "ConsumerGroupView", "ConsumerMemberView", "GroupView", "LoopThread", "MemberView",
           "TransactionView"]

log = logging.getLogger("fakekafka")

T = TypeVar("T")


@dataclass(frozen=True)
class MemberView:
    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    assignment: dict[str, list[int]] | None
    """Decoded consumer-protocol assignment {topic: [partitions]}; None for other protocols."""
    raw_assignment: bytes


@dataclass(frozen=True)
class GroupView:
    group_id: str
    state: str
    generation_id: int
    protocol_type: str | None
    protocol: str | None
    leader: str | None
    members: list[MemberView]
    transitions: list[tuple[str, str]]
    """Every (from, to) state change of the group, oldest first."""

    @classmethod
    def of(cls, group: Group | None) -> GroupView | None:
        if group is None:
            return None
        return cls(group.group_id, group.state.value, group.generation_id, group.protocol_type,
                   group.protocol_name, group.leader_id,
                   [MemberView(m.member_id, m.group_instance_id, m.client_id, m.client_host,
                               decode_assignment(m.assignment) if group.protocol_type == "consumer" else None,
                               m.assignment) for m in group.members.values()],
                   [(f.value, t.value) for _, f, t, _ in group.history])

    def assignments(self) -> dict[str, dict[str, list[int]] | None]:
        return {m.member_id: m.assignment for m in self.members}


@dataclass(frozen=True)
class ConsumerMemberView:
    member_id: str
    instance_id: str | None
    client_id: str
    client_host: str
    member_epoch: int
    state: str
    """STABLE, UNREVOKED_PARTITIONS or UNRELEASED_PARTITIONS (the coordinator's reconciliation state; "" remote)."""
    subscribed_topic_names: list[str]
    subscribed_topic_regex: str | None
    assignment: dict[str, list[int]]
    """What the member owns now {topic: [partitions]}."""
    target_assignment: dict[str, list[int]]
    """What the coordinator's assignor wants it to own at the assignment epoch."""
    protocol: str = "consumer"
    """"classic" for a member of a mixed group that speaks JoinGroup/SyncGroup/Heartbeat."""


@dataclass(frozen=True)
class ConsumerGroupView:
    """A KIP-848 consumer group: epochs, and each member's current assignment next to its target."""

    group_id: str
    state: str
    group_epoch: int
    assignment_epoch: int
    assignor: str
    members: list[ConsumerMemberView]

    @classmethod
    def of(cls, summary: dict[str, Any] | None) -> ConsumerGroupView | None:
        if summary is None:
            return None
        return cls(summary["group_id"], summary["state"], summary["group_epoch"], summary["assignment_epoch"],
                   summary["assignor"], [
                       ConsumerMemberView(mid, m["instance_id"], m["client_id"], m["client_host"], m["member_epoch"],
                                          m["state"], m["subscribed_topic_names"], m["subscribed_topic_regex"],
                                          m["assignment"], m["target_assignment"], m.get("protocol", "consumer"))
                       for mid, m in summary["members"].items()])

    def assignments(self) -> dict[str, dict[str, list[int]]]:
        return {m.member_id: m.assignment for m in self.members}

    def lines(self) -> list[str]:
        """For reports: the group, then one line per member with its epoch, current and target assignment."""
        out = [f"  {self.group_id}: {self.state} (consumer protocol), group epoch {self.group_epoch}, "
               f"assignment epoch {self.assignment_epoch}, assignor {self.assignor}"]
        for m in self.members:
            target = "" if m.target_assignment == m.assignment else f", target {m.target_assignment}"
            kind = " classic protocol" if m.protocol == "classic" else ""
            out.append(f"    {m.member_id} ({m.client_id}, {m.client_host}{kind}) epoch {m.member_epoch} {m.state}: "
                       f"{m.assignment}{target}")
        return out


@dataclass(frozen=True)
class TransactionView:
    transactional_id: str
    producer_id: int
    producer_epoch: int
    state: str
    partitions: list[tuple[str, int]]
    timeout_ms: int
    start_ms: int
    transitions: list[tuple[str, str]]
    """Every (from, to) state change, oldest first."""

    @classmethod
    def of(cls, txn: TransactionMetadata | None) -> TransactionView | None:
        if txn is None:
            return None
        return cls(txn.transactional_id, txn.producer_id, txn.producer_epoch, txn.state.value,
                   sorted(txn.partitions), txn.timeout_ms, txn.start_ms,
                   [(f.value, t.value) for _, f, t in txn.history])

    def line(self) -> str:
        parts = ", ".join(f"{t}-{p}" for t, p in self.partitions) or "no partitions"
        return (f"  {self.transactional_id}: {self.state}, producer {self.producer_id} epoch {self.producer_epoch}, "
                f"timeout {self.timeout_ms} ms, {parts}")


def decode_assignment(data: bytes) -> dict[str, list[int]]:
    """A consumer-protocol assignment (what the leader hands each member) as {topic: [partitions]}."""
    if len(data) < 2:
        return {}
    from fakekafka.wire.messages.consumer_protocol_assignment import VERSIONS
    version = int.from_bytes(data[:2], "big", signed=True)
    body = VERSIONS[min(max(version, 0), len(VERSIONS) - 1)].parse(data[2:])
    return {t.topic: sorted(t.partitions) for t in body.assigned_partitions}


class LoopThread:
    """An event loop on a daemon thread that clusters can share (the pytest plugin keeps one per session).

    With `listener_pool=N` it keeps N listening sockets bound and served ahead of time, so a cluster starts
    without a syscall or a message to the loop. Clusters stopped with `retire` are stopped by the loop in
    batches (every few clusters, or within `REAP_INTERVAL_S`), which is also when the pool is refilled: each
    message to the loop is a write to its wake-up pipe, the largest single cost of a start+stop here.
    """

    REAP_INTERVAL_S = 0.05
    REAP_BATCH = 4

    def __init__(self, name: str = "fakekafka-loop", *, listener_pool: int = 0, host: str = "127.0.0.1") -> None:
        self.name = name
        self.pool = ListenerPool(host, listener_pool) if listener_pool > 0 else None
        self.loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._pending: set[concurrent.futures.Future[Any]] = set()
        self._retired: collections.deque[Server] = collections.deque()
        self._reaper: asyncio.Task[None] | None = None
        self._reaping = False

    def start(self) -> LoopThread:
        if self.loop is not None:
            raise RuntimeError("loop thread already started")
        loop = asyncio.new_event_loop()
        self.loop = loop
        self._thread = threading.Thread(target=self._run, args=(loop,), name=self.name, daemon=True)
        self._thread.start()
        if self.pool is not None:
            self.submit(self.pool.fill()).result(30)
        return self

    async def _reap_every(self) -> None:
        while True:
            await asyncio.sleep(self.REAP_INTERVAL_S)
            await self._reap()

    async def _reap(self) -> None:
        if self._reaping:
            return
        self._reaping = True
        try:
            while self._retired:
                server = self._retired.popleft()
                try:
                    await server.stop()
                except Exception:  # noqa: BLE001 - one cluster's failure must not keep the others open
                    log.exception("fakekafka: stopping a retired cluster failed")
            if self.pool is not None:
                await self.pool.fill()
        finally:
            self._reaping = False

    def _wanted(self) -> bool:
        return len(self._retired) >= self.REAP_BATCH or (
            self.pool is not None and self.pool.ready < self.pool.size // 2)

    def retire(self, server: Server) -> None:
        """Has the loop stop `server` soon (its ports and connections close; its state is left alone)."""
        loop = self.loop
        if loop is None:
            raise RuntimeError("the loop thread is not running")
        self._retired.append(server)
        if self._reaper is None or self._wanted():  # the first retire also starts the periodic reaper
            loop.call_soon_threadsafe(self._kick)

    def drain(self, timeout: float = 10) -> None:
        """Waits until every retired cluster is stopped and the pool is full again (for leak checks)."""
        async def reap_now() -> None:
            while self._reaping:
                await asyncio.sleep(0.001)
            await self._reap()
        self.submit(reap_now()).result(timeout)

    def _kick(self) -> None:
        loop = asyncio.get_running_loop()
        if self._reaper is None:
            self._reaper = loop.create_task(self._reap_every())
        if not self._reaping:
            loop.create_task(self._reap())

    @staticmethod
    def _run(loop: asyncio.AbstractEventLoop) -> None:
        asyncio.set_event_loop(loop)
        try:
            loop.run_forever()
        finally:
            loop.close()

    def in_loop(self) -> bool:
        try:
            return asyncio.get_running_loop() is self.loop
        except RuntimeError:
            return False

    def submit(self, coro: Any, *, report: bool = True) -> concurrent.futures.Future[Any]:
        """Runs a coroutine on the loop; `stop` waits for what is still pending, so nothing is cut short.
        A failure is logged unless `report` is False: a caller that waits for the result gets the exception
        itself, and a second traceback in the log would only repeat it."""
        if self.loop is None:
            coro.close()
            raise RuntimeError("the loop thread is not running")
        fut = asyncio.run_coroutine_threadsafe(coro, self.loop)
        self._pending.add(fut)
        fut.add_done_callback(self._done if report else self._pending.discard)
        return fut

    def _done(self, fut: concurrent.futures.Future[Any]) -> None:
        self._pending.discard(fut)
        if not fut.cancelled() and fut.exception() is not None:
            log.error("fakekafka: background task failed", exc_info=fut.exception())

    async def _end(self) -> None:
        if self._reaper is not None:
            self._reaper.cancel()
        while self._reaping:
            await asyncio.sleep(0.001)
        if self.pool is not None:
            await self.pool.close()
        await self._reap()

    def stop(self, timeout: float = 10) -> None:
        loop, thread = self.loop, self._thread
        if loop is None:
            return
        concurrent.futures.wait(list(self._pending), timeout)
        self.submit(self._end()).result(timeout)
        self.loop = self._thread = None
        loop.call_soon_threadsafe(loop.stop)
        if thread is not None and thread is not threading.current_thread():
            thread.join(timeout)


class Cluster(FaultSteering, ChaosSteering, ClusterHandle):
    def __init__(self, *, partitions: int = 1, auto_create_topics: bool = True, host: str = "127.0.0.1",
                 port: int = 0, node_id: int = 1, clock: Clock | str | None = None,
                 config: BrokerConfig | Mapping[str, str] | None = None, group_initial_rebalance_delay_ms: int = 0,
                 brokers: int = 1, racks: list[str] | None = None,
                 topics: dict[str, int] | None = None, record: str | os.PathLike[str] | None = None,
                 listeners: str | None = None, advertised_listeners: str | None = None,
                 listener_security_protocol_map: str | None = None, sasl_enabled_mechanisms: str | None = None,
                 ssl_client_auth: str | None = None, users: dict[str, str] | None = None,
                 data_dir: str | os.PathLike[str] | None = None, schema_registry: bool | int = False,
                 chaos: Any = None) -> None:
        """`listeners` and the settings after it are Kafka's broker configs of the same names (they override
        `config`'s). An SSL/SASL_SSL listener without ssl.keystore.location gets a throwaway CA and
        certificates (`self.pki`: the CA file and a client certificate for clients). `users` are the
        SASL PLAIN/SCRAM users, name -> password. `data_dir` keeps the logs and metadata in that directory,
        so a cluster made again on it has them back (fakekafka/storage/datadir.py; DataDirError, a ValueError, for a
        directory that cannot be used); without it everything lives in memory only. `schema_registry` (True, or a
        port) serves a Confluent-compatible Schema Registry beside the brokers (`schema_registry_url`). `chaos`:
        faults drawn from a seed (`fakekafka.Chaos(seed=7, profile="busy")`) or a schedule replayed
        (`fakekafka.Schedule.load(path)`), with invariants checked (fakekafka/testing/chaos.py)."""
        if clock == "frozen":
            clock = ManualClock()
        elif isinstance(clock, str):
            raise ValueError(f"clock must be a Clock, 'frozen' or None, not {clock!r}")
        if isinstance(config, Mapping):  # broker configs by Kafka's names, checked as `serve --config` checks them
            config = BrokerConfig.from_properties(
                dict(config), num_partitions=partitions, auto_create_topics=auto_create_topics,
                group_initial_rebalance_delay_ms=group_initial_rebalance_delay_ms)
        self.config = config or BrokerConfig(num_partitions=partitions, auto_create_topics=auto_create_topics,
                                             group_initial_rebalance_delay_ms=group_initial_rebalance_delay_ms)
        security = {name: value for name, value in (
            ("listeners", listeners), ("advertised_listeners", advertised_listeners),
            ("listener_security_protocol_map", listener_security_protocol_map),
            ("sasl_enabled_mechanisms", sasl_enabled_mechanisms), ("ssl_client_auth", ssl_client_auth))
            if value is not None}
        if security:
            self.config = dataclasses.replace(self.config, **security)
        self.pki: TestPki | None = None
        """The throwaway CA and certificates an SSL listener was given (None when the config names files)."""
        self._pki_dir: tempfile.TemporaryDirectory[str] | None = None
        if self.config.listeners and not self.config.ssl_keystore_location and any(
                spec.tls for spec in parse_listeners(self.config.listeners,
                                                     self.config.listener_security_protocol_map)):
            self._pki_dir = tempfile.TemporaryDirectory(prefix="fakekafka-pki-")
            hosts = tuple(dict.fromkeys([host, "localhost", "127.0.0.1", "::1"]))
            self.pki = make_test_pki(self._pki_dir.name, hosts)
            self.config = dataclasses.replace(self.config, ssl_keystore_location=str(self.pki.server_keystore),
                                              ssl_truststore_location=str(self.pki.ca_file))
        if brokers < 1:
            raise ValueError("a cluster needs at least one broker")
        if racks is not None and len(racks) != brokers:
            raise ValueError(f"racks names one rack per broker: {brokers} brokers, {len(racks)} racks")
        self.state = ClusterState(self.config, clock, [
            Broker(node_id + i, host, port + i if port else 0, racks[i] if racks else None) for i in range(brokers)])
        for user, password in (users or {}).items():
            self.state.add_user(user, password)
        if data_dir is not None:  # the state writes through its data dir from the moment it has one
            self.state.storage = storage = DataDir(data_dir, self.config.cluster_id, list(self.state.brokers))
            storage.load(self.state)
        for name, count in (topics or {}).items():  # before anyone can see the state: no loop needed
            if name not in self.state.topics:  # a data dir may have it already
                self.state.create_topic(name, count)
        self.server = Server(self.state, host)
        self.chaos: ChaosRun | None = attach_chaos(self.state, self.server, chaos)
        """The chaos run (None: no chaos): its applied schedule through `chaos_schedule()`."""
        self.recorder: RequestRecorder | None = None
        if record is not None:  # every request from the first one, as Parquet (fakekafka/observe/recording.py)
            from fakekafka.observe.recording import RequestRecorder
            self.recorder = RequestRecorder(record)
            self.server.add_request_listener(self.recorder)
        self._loop: asyncio.AbstractEventLoop | None = None
        self._loop_thread: LoopThread | None = None
        self._owns_thread = False
        self._serving: concurrent.futures.Future[None] | None = None
        self._registry_port = None if schema_registry is False else 0 if schema_registry is True else schema_registry
        self.schema_registry: SchemaRegistry | None = None
        """The registry (fakekafka/registry/) while the cluster runs with one: its faults, its server."""

    @property
    def bootstrap_servers(self) -> str:
        return self.server.bootstrap_servers

    @property
    def schema_registry_url(self) -> str:
        """The Schema Registry's URL (`schema.registry.url`, SchemaRegistryClient's `url`)."""
        if self.schema_registry is None:
            raise RuntimeError("this cluster has no schema registry: start it with Cluster(schema_registry=True) "
                               "(the marker's schema_registry=True, `fakekafka serve --schema-registry`)")
        return self.schema_registry.url

    def _start_registry(self) -> None:
        if self._registry_port is not None and self.schema_registry is None:
            from fakekafka.registry import SchemaRegistry, loop_caller
            self.schema_registry = SchemaRegistry(self.state, loop_caller(lambda: self._loop), self.server.host,
                                                  self._registry_port).start()

    def _stop_registry(self) -> None:
        registry, self.schema_registry = self.schema_registry, None
        if registry is not None:
            registry.stop()

    def bootstrap_servers_for(self, listener: str) -> str:
        """The brokers' advertised addresses on one listener, by its name ("SASL_SSL", "SSL", ...)."""
        return self.server.bootstrap_servers_for(listener)

    def add_user(self, user: str, password: str) -> None:
        """Adds (or changes the password of) a SASL PLAIN/SCRAM user; new connections see it."""
        self.call(lambda: self.state.add_user(user, password))

    def create_acls(self, *acls: AclBinding) -> None:
        """Adds ACLs as CreateAcls does (`fakekafka.AclBinding.of("TOPIC", "orders", "User:alice", "READ")`);
        ValueError, in Kafka's words, for one Kafka would refuse (none is added then), or when the cluster has
        no authorizer (`config={"authorizer.class.name": fakekafka.STANDARD_AUTHORIZER}`)."""
        def create() -> None:
            authorizer = self._authorizer()
            errors = [e for e in (acl.validation_error() for acl in acls) if e]
            if errors:
                raise ValueError("; ".join(errors))
            for acl, error in zip(acls, authorizer.create(acls), strict=True):
                if error:
                    raise ValueError(f"{acl}: {error}")
        self.call(create)

    def acls(self, acl_filter: AclBindingFilter | None = None) -> list[AclBinding]:
        """The ACLs the filter matches (all by default), in the order they were created."""
        return self.call(lambda: self._authorizer().describe(acl_filter or AclBindingFilter()))

    def delete_acls(self, acl_filter: AclBindingFilter | None = None) -> list[AclBinding]:
        """Removes the ACLs the filter matches (all by default) and returns them."""
        return self.call(lambda: self._authorizer().delete(acl_filter or AclBindingFilter()))

    def _authorizer(self) -> Authorizer:
        if self.state.authorizer is None:
            raise ValueError("No Authorizer is configured: start the cluster with "
                             f"config={{'authorizer.class.name': '{STANDARD_AUTHORIZER}'}}")
        return self.state.authorizer

    # --- lifecycle -----------------------------------------------------------------------------
    def start(self, loop_thread: LoopThread | None = None) -> Cluster:
        """Serves the cluster from a background event loop: its own thread, or `loop_thread` shared with
        other clusters. Returns once the ports are bound (clients may connect at once)."""
        if self._loop is not None:
            raise RuntimeError("cluster already started")
        owns = loop_thread is None
        thread = LoopThread().start() if loop_thread is None else loop_thread
        assert thread.loop is not None, "the loop thread is not running"
        if thread.pool is not None and self.server.adopt(thread.pool):
            # every broker got a listener the loop already serves: nothing to send the loop
            self._loop, self._loop_thread, self._owns_thread = thread.loop, thread, owns
            self._start_registry()
            return self
        try:
            self.server.bind()
        except BaseException:
            if owns:
                thread.stop()
            raise
        self._loop, self._loop_thread, self._owns_thread = thread.loop, thread, owns
        self._serving = thread.submit(self.server.start())
        if owns:
            try:
                self._serving.result(30)  # a thread of its own: report a failed start here
            except BaseException:
                self._loop = self._loop_thread = None
                thread.stop()
                raise
        self._start_registry()
        return self

    def stop(self, *, wait: bool = True) -> None:
        """Stops serving and drops every connection. `wait=False` leaves that to the loop (the pytest plugin's
        teardown: the ports are closed before the loop does anything else for a later cluster), except with a
        data dir, whose files are closed and lock released before this returns."""
        thread = self._loop_thread
        if thread is None:
            return
        self._stop_registry()
        self._loop = self._loop_thread = None
        if self.recorder is not None:  # the recording is complete only once the server has stopped
            thread.submit(self.server.stop()).result(30)
            self.recorder.close()
            if self._owns_thread:
                thread.stop()
            return
        if not wait and not self._owns_thread and self.state.storage is None:
            # (a data dir is closed before stop returns: a cluster made next on it finds it unlocked)
            thread.retire(self.server)
            return
        stopping = thread.submit(self.server.stop())
        if self._owns_thread:
            thread.stop()
        else:
            stopping.result(30)

    def __enter__(self) -> Cluster:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    async def __aenter__(self) -> Cluster:
        self._loop = asyncio.get_running_loop()
        await self.server.start()
        self._start_registry()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await asyncio.to_thread(self._stop_registry)  # its threads may be waiting on this loop
        self._loop = None
        await self.server.stop()
        if self.recorder is not None:
            await asyncio.to_thread(self.recorder.close)  # the last file is written off the loop

    # --- access to the model ---------------------------------------------------------------------
    def call(self, fn: Callable[[], T]) -> T:
        """Runs `fn` where the server runs, so it sees and changes the model without races."""
        thread = self._loop_thread
        if thread is None or thread.in_loop():
            return fn()

        async def wrapper() -> T:
            return fn()
        return thread.submit(wrapper(), report=False).result(30)
    def create_topic(self, name: str, partitions: int = -1, *, replication_factor: int = -1,
                     configs: dict[str, str] | None = None) -> None:
        self.call(lambda: self.state.create_topic(name, partitions, replication_factor, configs=configs))

    def delete_topic(self, name: str) -> None:
        def delete() -> None:
            self.state.delete_topic(name)  # not returned: the caller's future would keep its logs alive
        self.call(delete)

    def produce(self, topic: str, value: bytes | None, *, key: bytes | None = None,
                headers: list[tuple[str, bytes | None]] | None = None, partition: int | None = None,
                timestamp: int | None = None, compression: Compression = Compression.NONE) -> tuple[int, int]:
        """Appends one record as a producer would; returns (partition, offset)."""

        def append() -> tuple[int, int]:
            if self.state.auto_create(topic) is None:
                check_topic(self.state, topic)  # says which topics there are
            index = partition if partition is not None else 0
            p = check_partition(self.state, topic, index)
            ts = self.state.clock.now_ms() if timestamp is None else timestamp
            batch = build_batch([{"key": key, "value": value, "headers": headers or [], "timestamp": ts}],
                                compression=compression)
            r = self.state.append(p, batch)
            if r.error != ErrorCode.NONE:
                raise ApiError(r.error, r.message)
            return index, r.base_offset
        return self.call(append)

    def records(self, topic: str, partition: int | None = None, *, control: bool = False) -> list[Record]:
        """Every record a consumer can read from a topic (or one partition), decoded, in partition then offset
        order: from the log start to the high watermark, without transaction markers unless `control` (as the
        remote handle reads them)."""

        def read() -> list[tuple[int, int, int, list[bytes]]]:
            t = check_topic(self.state, topic)
            parts = t.partitions if partition is None else [check_partition(self.state, topic, partition)]
            return [(p.index, p.log.log_start_offset, p.log.high_watermark, list(p.log.batches)) for p in parts]
        out: list[Record] = []
        for index, start, end, batches in self.call(read):
            for b in batches:
                decoded = decode_batch(b)
                if decoded.header.is_control and not control:
                    continue
                for r in decoded.records:
                    if start <= r.offset < end:
                        r.partition = index
                        out.append(r)
        return out

    def end_offsets(self, topic: str) -> dict[int, int]:
        def read() -> dict[int, int]:
            t = check_topic(self.state, topic)
            return {p.index: p.log.high_watermark for p in t.partitions}
        return self.call(read)

    def topics(self) -> list[str]:
        return self.call(lambda: sorted(self.state.topics))

    # --- groups and the clock ------------------------------------------------------------------------
    def group(self, group_id: str) -> GroupView | None:
        """A snapshot of a group: state, generation, leader, members with decoded assignments, history."""
        return self.call(lambda: GroupView.of(self.state.groups.group(group_id)))

    def consumer_group(self, group_id: str) -> ConsumerGroupView | None:
        """A snapshot of a KIP-848 consumer group (group.protocol=consumer): state, group and assignment epochs,
        assignor, members with their epochs, reconciliation states, current and target assignments."""
        return self.call(lambda: ConsumerGroupView.of(self.state.consumer_groups.describe(group_id)))

    def groups(self) -> list[str]:
        """Every group id, classic and consumer protocol."""
        return self.call(lambda: sorted({*self.state.groups.groups, *self.state.consumer_groups.groups}))

    def committed(self, group_id: str) -> dict[tuple[str, int], int]:
        """The group's committed offsets: {(topic, partition): offset}."""
        def read() -> dict[tuple[str, int], int]:
            g = self.state.groups.group(group_id) or self.state.consumer_groups.group(group_id)
            return {tp: om.offset for tp, om in sorted(g.offsets.items())} if g else {}
        return self.call(read)

    def force_rebalance(self, group_id: str) -> None:
        """Starts a rebalance now: members learn it from their next heartbeat, as with any rebalance."""
        def rebalance() -> None:
            check_group(self.state, group_id, classic_only=True)
            self.state.groups.force_rebalance(group_id)
        self.call(rebalance)

    def expire_member(self, group_id: str, member_id: str) -> None:
        """Acts as if the member's session timed out (a classic or a consumer protocol member)."""
        def expire() -> None:
            if self.state.consumer_groups.group(group_id) is not None:
                if not self.state.consumer_groups.expire_member(group_id, member_id):
                    members = self.state.consumer_groups.group(group_id).members
                    raise LookupError(f"group {group_id!r} has no member {member_id!r}; its members are "
                                      f"{listing(members)}")
                return
            check_group(self.state, group_id)
            g = self.state.groups.group(group_id)
            if member_id not in g.members:
                raise LookupError(f"group {group_id!r} has no member {member_id!r}; its members are "
                                  f"{listing(g.members)}")
            g.members[member_id].heartbeat_deadline = self.state.clock.now_ms()
            self.state.tick()
        self.call(expire)

    # --- transactions --------------------------------------------------------------------------------
    def transaction(self, transactional_id: str) -> TransactionView | None:
        """A snapshot of a transactional id: producer id and epoch, state, partitions, timeout, history."""
        return self.call(lambda: TransactionView.of(self.state.transactions.transactions.get(transactional_id)))

    def transactions(self) -> list[str]:
        return self.call(lambda: sorted(self.state.transactions.transactions))

    def abort_transaction(self, transactional_id: str) -> None:
        """Aborts the id's open transaction as its timeout would: markers written, its producer fenced."""
        def abort() -> None:
            check_transactional_id(self.state, transactional_id)
            self.state.transactions.abort(transactional_id)
        self.call(abort)

    def expire_transactional_id(self, transactional_id: str) -> None:
        """Forgets an idle transactional id as transactional.id.expiration.ms would."""
        def expire() -> None:
            check_transactional_id(self.state, transactional_id)
            self.state.transactions.expire(transactional_id)
        self.call(expire)

    def last_stable_offset(self, topic: str, partition: int) -> int:
        def read() -> int:
            return check_partition(self.state, topic, partition).log.last_stable_offset
        return self.call(read)

    def log_dirs(self, topic: str) -> dict[int, dict[int, str]]:
        """Where each replica of a topic is: partition -> {node id: its log dir} (`log.dirs`; one dir,
        /tmp/kafka-logs, unless configured). AlterReplicaLogDirs or kafka-reassign-partitions move them."""
        return self.call(lambda: {p.index: {n: log.log_dir for n, log in sorted(p.logs.items())}
                                  for p in check_topic(self.state, topic).partitions})

    def force_compaction(self, topic: str) -> int:
        """Runs the log cleaner on a compacted topic now, whatever its min.cleanable.dirty.ratio (Kafka's
        cleaner would wait for the ratio or max.compaction.lag.ms): the latest record per key of each
        partition's non-active segments stays. Returns how many replica logs were cleaned."""
        def compact() -> int:
            check_topic(self.state, topic)
            return self.state.force_compaction(topic)
        return self.call(compact)

    def advance_clock(self, ms: int) -> int:
        """Moves a manual clock forward and fires every timeout it passes; returns the new time."""
        clock = self.state.clock
        if not isinstance(clock, ManualClock):
            raise TypeError("advance_clock needs a cluster started with clock=ManualClock() (or clock='frozen')")

        def advance() -> int:
            now = clock.advance(ms)
            self.state.tick()
            return now
        return self.call(advance)

    # --- faults ------------------------------------------------------------------------------------------
    def _run(self, coro_fn: Callable[[], Any]) -> Any:
        """Runs a coroutine where the server runs and waits for it."""
        if self._loop is None:
            raise RuntimeError("the cluster is not started")
        if self._loop_thread is None:
            raise RuntimeError("inside `async with`, await the async variant of this call")
        return self._loop_thread.submit(coro_fn(), report=False).result(30)

    async def kill_broker_async(self, node_id: int) -> None:
        self.state.kill_broker(node_id)
        await self.server.close_broker(node_id, abort=True)

    async def stop_broker_async(self, node_id: int) -> None:
        self.state.stop_broker(node_id)
        await self.server.close_broker(node_id, abort=False)

    async def restart_broker_async(self, node_id: int) -> None:
        await self.server.open_broker(node_id)
        self.state.restart_broker(node_id)

    def kill_broker(self, node_id: int) -> None:
        """The broker dies: connections dropped at once, leaders re-elected, the controller moves."""
        self.call(lambda: check_broker(self.state, node_id))
        self._run(lambda: self.kill_broker_async(node_id))

    def stop_broker(self, node_id: int) -> None:
        """A controlled shutdown: leadership moves to other in-sync replicas first, then the broker stops."""
        self.call(lambda: check_broker(self.state, node_id))
        self._run(lambda: self.stop_broker_async(node_id))

    def restart_broker(self, node_id: int) -> None:
        """The broker comes back on its port; its replicas catch up and rejoin the ISR."""
        self.call(lambda: check_broker(self.state, node_id))
        self._run(lambda: self.restart_broker_async(node_id))

    def isolate_broker(self, node_id: int, isolated: bool = True) -> None:
        """Cut the broker off from the others (clients still reach it); `isolated=False` heals it."""
        def apply() -> None:
            self.state.brokers[check_broker(self.state, node_id)].isolated = isolated
            self.state.event("broker_isolated" if isolated else "broker_healed", broker=node_id)
            self.state.tick()
        self.call(apply)

    def pause_replication(self, node_id: int, topic: str | None = None, partition: int | None = None,
                          paused: bool = True) -> None:
        """Stops (or, with `paused=False`, resumes) the broker's follower fetches, for one partition,
        a topic or everything it follows."""
        def apply() -> None:
            check_broker(self.state, node_id)
            if topic is not None:
                check_topic(self.state, topic) if partition is None else check_partition(self.state, topic, partition)
            for t in self.state.topics.values():
                if topic is not None and t.name != topic:
                    continue
                for p in t.partitions:
                    if (partition is None or p.index == partition) and node_id in p.replicas:
                        (p.paused.add if paused else p.paused.discard)(node_id)
            self.state.event("replication_paused" if paused else "replication_resumed", broker=node_id,
                             topic=topic, partition=partition)
            self.state.tick()
        self.call(apply)

    def shrink_isr(self, topic: str, partition: int, node_id: int) -> None:
        """Takes a follower out of the partition's ISR now; it stays out until `expand_isr`."""
        self._checked(topic, partition, node_id, lambda: self.state.shrink_isr(topic, partition, node_id))

    def expand_isr(self, topic: str, partition: int, node_id: int) -> None:
        """Lets the follower fetch again: it rejoins the ISR once caught up."""
        self._checked(topic, partition, node_id, lambda: self.state.expand_isr(topic, partition, node_id))

    def move_leader(self, topic: str, partition: int, node_id: int) -> None:
        self._checked(topic, partition, node_id, lambda: self.state.move_leader(topic, partition, node_id))

    def elect_preferred_leaders(self) -> int:
        return self.call(self.state.elect_preferred_leaders)

    def _checked(self, topic: str, partition: int, node_id: int, change: Callable[[], None]) -> None:
        """`change` where the model runs, once the partition and the broker are known to exist."""
        def apply() -> None:
            check_partition(self.state, topic, partition)
            check_broker(self.state, node_id)
            change()
        self.call(apply)

    def _fault(self, fault: Fault) -> Fault:
        def add() -> None:
            if fault.broker is not None:
                check_broker(self.state, fault.broker)
            self.state.faults.add(fault)
        self.call(add)
        return fault

    def clear_faults(self) -> None:
        self.call(self.state.faults.clear)

    def partition_state(self, topic: str, partition: int) -> dict[str, Any]:
        """Leader, leader epoch, replicas, ISR, and each replica's log end offset and high watermark."""
        def read() -> dict[str, Any]:
            p = check_partition(self.state, topic, partition)
            return {"leader": p.leader_id, "leader_epoch": p.leader_epoch, "replicas": list(p.replicas),
                    "isr": list(p.isr), "high_watermark": p.log.high_watermark,
                    "log_end_offsets": {r: log.log_end_offset for r, log in p.logs.items()}}
        return self.call(read)

    def events(self) -> list[Any]:
        """Every fault and state change so far (broker killed, leader elected, ISR shrink...)."""
        return self.call(lambda: list(self.state.events))

    # --- reporting ---------------------------------------------------------------------------------
    def requests(self) -> list[RequestRecord]:
        """The most recent requests the brokers served, oldest first."""
        return self.call(lambda: list(self.server.request_log))

    def describe(self, last_requests: int = 20) -> str:
        """Topics with offsets, groups with members and state, and the last requests, as text."""
        def snapshot() -> tuple[list[str], list[str], list[str], list[RequestRecord]]:
            topics = []
            for t in self.state.topics.values():
                if t.is_internal:
                    continue
                parts = ", ".join(f"{p.index}: {p.log.log_start_offset}..{p.log.high_watermark}" for p in t.partitions)
                topics.append(f"  {t.name} ({len(t.partitions)} partitions) [{parts}]")
            groups = []
            for g in self.state.groups.groups.values():
                view = GroupView.of(g)
                assert view is not None
                groups.append(f"  {view.group_id}: {view.state}, generation {view.generation_id}, "
                              f"protocol {view.protocol}, leader {view.leader}")
                for m in view.members:
                    groups.append(f"    {m.member_id} ({m.client_id}, {m.client_host}): {m.assignment}")
                for (topic, index), om in sorted(g.offsets.items()):
                    groups.append(f"    committed {topic}-{index}: {om.offset}")
            for group_id, cg in self.state.consumer_groups.groups.items():
                cview = ConsumerGroupView.of(self.state.consumer_groups.describe(group_id))
                assert cview is not None
                groups.extend(cview.lines())
                for (topic, index), om in sorted(cg.offsets.items()):
                    groups.append(f"    committed {topic}-{index}: {om.offset}")
            txns = [TransactionView.of(t).line() for t in self.state.transactions.transactions.values()]
            return topics, groups, txns, list(self.server.request_log)[-last_requests:]
        topics, groups, txns, requests = self.call(snapshot)
        lines = [f"fakekafka cluster at {self.bootstrap_servers}", "topics:", *(topics or ["  (none)"]),
                 "groups:", *(groups or ["  (none)"]), "transactions:", *(txns or ["  (none)"]),
                 f"last {len(requests)} requests:"]
        for r in requests:
            errors = f" -> {', '.join(r.error_codes)}" if r.error_codes else ""
            lines.append(f"  {r.api} v{r.version} from {r.client_id or '-'} ({r.client}) "
                         f"corr {r.correlation_id}{errors}")
        return "\n".join(lines)

    def __repr__(self) -> str:
        return f"<fakekafka.Cluster {self.bootstrap_servers or '(not started)'}>"
