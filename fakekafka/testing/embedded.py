"""`fakekafka.Cluster`: a fake Kafka cluster in this process, for tests and scripts.

`with Cluster() as c:` runs the server on an event loop in a background thread, so synchronous
clients (kafka-python, confluent-kafka, a Java subprocess) can talk to it; `async with Cluster()`
runs it in the caller's loop, so aiokafka in the same loop cannot deadlock. Every read or change of
the model from the caller goes through the loop (`call`), so a test never races the server.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import dataclasses
import os
import tempfile
from collections.abc import Callable, Mapping
from typing import Any, TypeVar

from fakekafka.model.acl import STANDARD_AUTHORIZER, AclBinding, AclBindingFilter, Authorizer
from fakekafka.model.client_telemetry import TelemetryPush
from fakekafka.model.clock import Clock, ManualClock
from fakekafka.model.cluster import ClusterState
from fakekafka.model.config import BrokerConfig
from fakekafka.model.errors import ApiError
from fakekafka.model.metadata import Broker
from fakekafka.net.loop_thread import LoopThread
from fakekafka.net.security import TestPki, make_test_pki, parse_listeners
from fakekafka.net.server import Server
from fakekafka.observe.recording import RequestRecorder
from fakekafka.registry import SchemaRegistry, loop_caller
from fakekafka.storage.datadir import DataDir
from fakekafka.testing.arguments import (
    check_partition,
    check_topic,
)
from fakekafka.testing.chaos import ChaosRun, ChaosSteering, attach_chaos
from fakekafka.testing.handle import ClusterHandle
from fakekafka.testing.snapshots import ClusterSnapshots
from fakekafka.testing.steering import ClusterSteering
from fakekafka.testing.views import (
    ConsumerGroupView,
    ConsumerMemberView,
    GroupView,
    MemberView,
    StreamsGroupView,
    StreamsMemberView,
    TransactionView,
    decode_assignment,
)
from fakekafka.wire import ErrorCode
from fakekafka.wire.records import Compression, Record, build_batch, decode_batch

__all__ = ["Cluster", "ConsumerGroupView", "ConsumerMemberView", "GroupView", "LoopThread", "MemberView",
           "StreamsGroupView", "StreamsMemberView", "TransactionView", "decode_assignment"]

T = TypeVar("T")


class Cluster(ClusterSteering, ChaosSteering, ClusterSnapshots, ClusterHandle):
    """A fake Kafka cluster in this process: its lifecycle, its ACLs and users, and topics and records read and
    written through the model; faults and the clock come with `ClusterSteering`, seeded chaos with
    `ChaosSteering`, snapshots of groups, transactions and requests with `ClusterSnapshots`."""

    def __init__(self, *, partitions: int = 1, auto_create_topics: bool = True, host: str = "127.0.0.1",
                 port: int = 0, node_id: int = 1, clock: Clock | str | None = None,
                 config: BrokerConfig | Mapping[str, str] | None = None, group_initial_rebalance_delay_ms: int = 0,
                 brokers: int = 1, racks: list[str] | None = None,
                 topics: dict[str, int] | None = None, record: str | os.PathLike[str] | None = None,
                 listeners: str | None = None, advertised_listeners: str | None = None,
                 listener_security_protocol_map: str | None = None, sasl_enabled_mechanisms: str | None = None,
                 ssl_client_auth: str | None = None, users: dict[str, str] | None = None,
                 data_dir: str | os.PathLike[str] | None = None, schema_registry: bool | int = False,
                 chaos: Any = None, kafka_version: str | None = None, client_telemetry: bool = False) -> None:
        """`listeners` and the settings after it are Kafka's broker configs of the same names (they override
        `config`'s). An SSL/SASL_SSL listener without ssl.keystore.location gets a throwaway CA and
        certificates (`self.pki`: the CA file and a client certificate for clients). `users` are the
        SASL PLAIN/SCRAM users, name -> password. `data_dir` keeps the logs and metadata in that directory,
        so a cluster made again on it has them back (fakekafka/storage/datadir.py; DataDirError, a ValueError, for a
        directory that cannot be used); without it everything lives in memory only. `schema_registry` (True, or a
        port) serves a Confluent-compatible Schema Registry beside the brokers (`schema_registry_url`). `chaos`:
        faults drawn from a seed (`fakekafka.Chaos(seed=7, profile="busy")`) or a schedule replayed
        (`fakekafka.Schedule.load(path)`), with invariants checked (fakekafka/testing/chaos.py). `kafka_version`:
        an older Kafka release to stand in for ("3.9", "3.7", "2.8"): ApiVersions capped to its ranges, its features
        (fakekafka/model/releases.py); a version fakekafka does not know is a ValueError naming those it knows.
        `client_telemetry`: KIP-714 client telemetry on (as Kafka with a reporter receiving it in `metric.reporters`):
        clients that push metrics do, and `client_metrics()` reads them."""
        if clock == "frozen":
            clock = ManualClock()
        elif isinstance(clock, str):
            raise ValueError(f"clock must be a Clock, 'frozen' or None, not {clock!r}")
        if isinstance(config, Mapping):  # broker configs by Kafka's names, checked as `serve --config` checks them
            config = BrokerConfig.from_properties(  # by the names of the release it stands in for
                dict(config), num_partitions=partitions, auto_create_topics=auto_create_topics,
                group_initial_rebalance_delay_ms=group_initial_rebalance_delay_ms, kafka_version=kafka_version)
        self.config = config or BrokerConfig(num_partitions=partitions, auto_create_topics=auto_create_topics,
                                             group_initial_rebalance_delay_ms=group_initial_rebalance_delay_ms)
        security = {name: value for name, value in (
            ("listeners", listeners), ("advertised_listeners", advertised_listeners),
            ("listener_security_protocol_map", listener_security_protocol_map),
            ("sasl_enabled_mechanisms", sasl_enabled_mechanisms), ("ssl_client_auth", ssl_client_auth))
            if value is not None}
        if kafka_version is not None:
            security["kafka_version"] = kafka_version
        if client_telemetry:
            security["client_telemetry"] = True
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
            self.schema_registry = SchemaRegistry(self.state, loop_caller(lambda: self._loop), self.server.host,
                                                  self._registry_port)
            if self.chaos is not None:  # registry faults join the broker's in one schedule
                self.schema_registry.server.chaos = self.chaos.source.registry_action
            self.schema_registry.start()

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

    def client_metrics(self, client_id: str | None = None) -> list[TelemetryPush]:
        """The metrics clients pushed (KIP-714), decoded, one entry per accepted push, oldest first (of
        `client_id`'s clients only, if given); needs client telemetry on (`Cluster(client_telemetry=True)`)."""
        if not self.call(self.config.client_telemetry_on):
            raise RuntimeError("client telemetry is off on this cluster, so clients push no metrics: start it with "
                               "Cluster(client_telemetry=True) (the marker's client_telemetry=True, `fakekafka serve "
                               "--client-telemetry`)")
        return self.call(lambda: [p for p in self.state.client_telemetry.pushes
                                  if client_id is None or p.client_id == client_id])

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
        """Serves from the running loop when it is asyncio's selector loop; from a thread of its own on any other
        (uvloop's, Windows' proactor), whose transports the network edge does not answer through."""
        loop = asyncio.get_running_loop()
        if not isinstance(loop, asyncio.SelectorEventLoop):
            await asyncio.to_thread(self.start)
            return self
        self._loop = loop
        await self.server.start()
        self._start_registry()
        return self

    async def __aexit__(self, *exc: object) -> None:
        if self._loop_thread is not None:  # served from a thread (`__aenter__`)
            await asyncio.to_thread(self.stop)
            return
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

    def __repr__(self) -> str:
        return f"<fakekafka.Cluster {self.bootstrap_servers or '(not started)'}>"
