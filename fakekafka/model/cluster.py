"""The cluster model: brokers, topics, partitions and their logs, producer ids. Pure state.

No sockets and no asyncio: the server feeds it requests through the handlers, tests drive it
directly, and every time it reads comes from the injected `Clock`. Change listeners let the server
wake long-polling fetches without the model knowing about the server. With a data dir (`storage`), the
logs hand every change to their files and the model tells the data dir of partitions made and dropped;
the files themselves are fakekafka/storage/datadir.py's business.
"""

from __future__ import annotations

import contextlib
import logging
import re
import struct
import uuid
from bisect import bisect_left
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from fakekafka.model.acl import Authorizer
from fakekafka.model.cleaner import CleanerSettings, clean, cleanable
from fakekafka.model.clock import Clock, SystemClock
from fakekafka.model.config import TOPIC_CONFIGS, BrokerConfig, ConfigSource, InvalidConfig
from fakekafka.model.consumer_group import ConsumerGroupConfig, ConsumerGroupCoordinator, TopicInfo
from fakekafka.model.faults import Faults
from fakekafka.model.group import GroupConfig, GroupCoordinator
from fakekafka.model.log import EpochEntry, PartitionLog, StorageError
from fakekafka.model.loggers import BrokerLoggers
from fakekafka.model.offsets_topic import OffsetsTopic
from fakekafka.model.producers import PartitionProducers, ProducerIds
from fakekafka.model.share import ShareConfig, ShareCoordinator
from fakekafka.model.share_state import ShareStateLog
from fakekafka.model.transaction_log import TransactionLog
from fakekafka.model.transactions import TransactionConfig, TransactionCoordinator
from fakekafka.model.validate import Refused, check_batch, split_produced
from fakekafka.net.security import ScramCredentials
from fakekafka.wire import ErrorCode
from fakekafka.wire.records import BatchHeader, build_batch, read_header

if TYPE_CHECKING:
    from fakekafka.storage.datadir import DataDir

__all__ = ["ApiError", "AppendResult", "Broker", "ClusterState", "Event", "Partition", "Topic",
           "validate_topic_name"]

_events_log = logging.getLogger("fakekafka.events")
MAX_TOPIC_NAME = 249
_LEGAL = re.compile(r"^[a-zA-Z0-9._-]+$")
OFFSETS_TOPIC = "__consumer_offsets"
TRANSACTION_STATE_TOPIC = "__transaction_state"
SHARE_STATE_TOPIC = "__share_group_state"
INTERNAL_TOPICS = frozenset({OFFSETS_TOPIC, TRANSACTION_STATE_TOPIC, SHARE_STATE_TOPIC})


def java_string_hash(s: str) -> int:
    """Java's String.hashCode (over UTF-16 code units, int32 overflow)."""
    h = 0
    data = s.encode("utf-16-be")
    for i in range(0, len(data), 2):
        h = (31 * h + ((data[i] << 8) | data[i + 1])) & 0xFFFFFFFF
    return h - (1 << 32) if h >= 1 << 31 else h


def kafka_abs(n: int) -> int:
    """Kafka's Utils.abs: Math.abs, except that Integer.MIN_VALUE maps to 0."""
    return 0 if n == -(2**31) else abs(n)


RETENTION_INITIAL_DELAY_MS = 30_000
"""By default the first retention check comes this long after the cluster starts, then one every
log.retention.check.interval.ms (Kafka's LogManager schedules it so: log.initial.task.delay.ms, an internal
broker config whose default this is, then the interval)."""


class ApiError(Exception):
    """An expected failure of a client request, carried to the response as a Kafka error code."""

    def __init__(self, code: ErrorCode, message: str | None = None) -> None:
        super().__init__(message or code.name)
        self.code = code
        self.message = message


def validate_topic_name(name: str) -> None:
    """Kafka 4.4's controller's checks and words (checked with CreateTopics against a real broker)."""
    if not name:
        raise ApiError(ErrorCode.INVALID_TOPIC_EXCEPTION, "Topic name is invalid: the empty string is not allowed")
    if name in (".", ".."):
        raise ApiError(ErrorCode.INVALID_TOPIC_EXCEPTION, f"Topic name is invalid: '{name}' is not allowed")
    if len(name) > MAX_TOPIC_NAME:
        raise ApiError(ErrorCode.INVALID_TOPIC_EXCEPTION,
                       f"Topic name is invalid: the length of '{name}' is longer than the max allowed length "
                       f"{MAX_TOPIC_NAME}")
    if not _LEGAL.match(name):
        raise ApiError(ErrorCode.INVALID_TOPIC_EXCEPTION,
                       f"Topic name is invalid: '{name}' contains one or more characters other than "
                       "ASCII alphanumerics, '.', '_' and '-'")


@dataclass
class Broker:
    node_id: int
    host: str
    port: int
    rack: str | None = None
    alive: bool = True
    isolated: bool = False
    """Reachable by clients but cut off from the other brokers: it neither replicates nor is replicated."""
    endpoints: dict[str, tuple[str, int]] = field(default_factory=dict)
    """Advertised (host, port) per listener name; clients connected on a listener are told its addresses."""
    bound: dict[str, int] = field(default_factory=dict)
    """The port each listener is bound to (kept across a restart)."""

    def endpoint(self, listener: str | None) -> tuple[str, int]:
        """Where clients of `listener` reach this broker (the first listener's address otherwise)."""
        return self.endpoints.get(listener, (self.host, self.port)) if listener else (self.host, self.port)


@dataclass
class Partition:
    """A partition and its replicas. Each replica has its own log: the leader's is `log`; followers copy
    its batches (same bytes, same offsets) when the cluster replicates, so their logs can lag, diverge
    after an unclean election and be truncated, as in Kafka."""

    topic: Topic
    index: int
    replicas: list[int]
    leader_id: int
    leader_epoch: int = 0
    isr: list[int] = field(default_factory=list)
    logs: dict[int, PartitionLog] = field(default_factory=dict)
    last_caught_up: dict[int, int] = field(default_factory=dict)
    paused: set[int] = field(default_factory=set)
    producers: PartitionProducers = field(default_factory=PartitionProducers)
    adding: list[int] = field(default_factory=list)
    removing: list[int] = field(default_factory=list)
    """An ongoing reassignment: replicas being added (catching up) and to be removed once they have."""
    reassigned_from: list[int] = field(default_factory=list)

    def __post_init__(self) -> None:
        if not self.isr:
            self.isr = list(self.replicas)
        for r in self.replicas:
            self.logs.setdefault(r, PartitionLog())

    @property
    def log(self) -> PartitionLog:
        """The leader's log (the last leader's while the partition is offline)."""
        return self.logs.get(self.leader_id) or self.logs[self.replicas[0]]

    @property
    def online(self) -> bool:
        return self.leader_id >= 0


@dataclass
class Topic:
    name: str
    topic_id: uuid.UUID
    partitions: list[Partition]
    configs: dict[str, str]
    is_internal: bool = False

    @property
    def replication_factor(self) -> int:
        return len(self.partitions[0].replicas) if self.partitions else 0


@dataclass(frozen=True, slots=True)
class Event:
    time_ms: int
    kind: str
    details: dict[str, object]


@dataclass(frozen=True, slots=True)
class AppendResult:
    error: ErrorCode = ErrorCode.NONE
    base_offset: int = -1
    log_append_time: int = -1
    log_start_offset: int = -1
    message: str | None = None
    record_errors: list[tuple[int, str]] = field(default_factory=list)
    """(batch index, message) per refused record (Produce v8+ record_errors)."""
    answer_message: bool = False
    """The message goes into the answer even without record errors (Kafka's hasCustomErrorMessage)."""


def _keyless(batch: bytes, partition_name: str, log_start_offset: int) -> AppendResult | None:
    """A compacted topic refuses records without a key (Kafka's LogValidator): INVALID_RECORD with one
    record error per such record, and a message naming the first three; None when every record has one."""
    from fakekafka.wire.records import decode_batch
    text = f"Compacted topic cannot accept message without key in topic partition {partition_name}"
    errors = [(i, text) for i, r in enumerate(decode_batch(batch).records) if r.key is None]
    if not errors:
        return None
    shown = ", ".join(f"RecordError(batchIndex={i}, message='{m}')" for i, m in errors[:3])
    return AppendResult(ErrorCode.INVALID_RECORD, log_start_offset=log_start_offset, record_errors=errors,
                        message=f"One or more records have been rejected due to {len(errors)} record errors in "
                                f"total, and only showing the first three errors at most: [{shown}]")


def consumer_group_config(c: BrokerConfig) -> ConsumerGroupConfig:
    """The KIP-848 coordinator's settings from the broker's `group.consumer.*` configs."""
    def value(name: str) -> str:
        v = c.value(name)[0]
        assert v is not None, name
        return v

    return ConsumerGroupConfig(
        session_timeout_ms=int(value("group.consumer.session.timeout.ms")),
        heartbeat_interval_ms=int(value("group.consumer.heartbeat.interval.ms")),
        assignors=tuple(a.strip().rsplit(".", 1)[-1].removesuffix("Assignor").lower()
                        for a in value("group.consumer.assignors").split(",") if a.strip()),
        max_size=int(value("group.consumer.max.size")),
        assignment_interval_ms=int(value("group.consumer.assignment.interval.ms")),
        offsets_retention_ms=c.offsets_retention_minutes * 60_000,
        migration_policy=value("group.consumer.migration.policy").strip().lower())


class ClusterState:
    def __init__(self, config: BrokerConfig | None = None, clock: Clock | None = None,
                 brokers: list[Broker] | None = None) -> None:
        self.config = config or BrokerConfig()
        self.clock: Clock = clock or SystemClock()
        lifted = "log.message.timestamp.after.max.ms"
        if not isinstance(self.clock, SystemClock) and lifted not in self.config.overrides:
            # Model time is not the producers' time (a frozen clock starts in 2023 and moves when the test says):
            # Kafka 4's one-hour limit on future timestamps would refuse every wall-clock record, so such a
            # cluster runs as if its operator had lifted the limit cluster-wide (a dynamic config in Kafka).
            self.config.dynamic_defaults.setdefault(lifted, str(2**63 - 1))
        self.brokers: dict[int, Broker] = {b.node_id: b for b in (brokers or [Broker(1, "127.0.0.1", 9092)])}
        self.controller_id = min(self.brokers)
        self.controller_epoch = 1
        self.sasl_users: dict[str, str] = {}
        self.scram = ScramCredentials()
        """SCRAM users' credentials (users given with a password get both mechanisms; AlterUserScramCredentials
        changes them)."""
        o = self.config.overrides
        self.authorizer: Authorizer | None = Authorizer.from_config(
            o.get("super.users", ""), o.get("allow.everyone.if.no.acl.found", "false")) \
            if o.get("authorizer.class.name", "").strip() else None
        """The ACLs and their decisions when `authorizer.class.name` names Kafka's StandardAuthorizer; None
        (Kafka's default): every request is allowed and the ACL APIs answer SECURITY_DISABLED."""
        """SASL PLAIN and SCRAM users: name -> password (Cluster(users=...))."""
        self.events: list[Event] = []
        self.faults = Faults()
        self.topics: dict[str, Topic] = {}
        self.topics_by_id: dict[uuid.UUID, Topic] = {}
        self.producer_ids = ProducerIds()
        self.storage: DataDir | None = None
        """The data dir the cluster's logs and metadata are kept in (storage/datadir.py); None: memory only."""
        self._change_listeners: list[Callable[[object], None]] = []
        self._next_retention_check = self.clock.now_ms() + int(
            self.config.value("log.initial.task.delay.ms")[0] or RETENTION_INITIAL_DELAY_MS)
        self._next_cleaner_run: dict[int, int] = {n: self.clock.now_ms() + self._cleaner_backoff(n)
                                                  for n in self.brokers}
        """node id -> when its log cleaner wakes next (it found nothing at start-up and backs off)."""
        self._placement = 0
        self.preferred_log_dirs: dict[tuple[str, int, int], str] = {}
        """(topic, partition, node) -> the log dir AlterReplicaLogDirs named for a replica the node does not
        hold yet: the replica is made there when it comes (Kafka's LogManager.maybeUpdatePreferredLogDir)."""
        c = self.config
        self.groups = GroupCoordinator(self.clock, GroupConfig(
            min_session_timeout_ms=c.group_min_session_timeout_ms,
            max_session_timeout_ms=c.group_max_session_timeout_ms,
            initial_rebalance_delay_ms=c.group_initial_rebalance_delay_ms,
            offsets_retention_ms=c.offsets_retention_minutes * 60_000), notify=self.notify)
        self.group_configs: dict[str, dict[str, str]] = {}
        self.client_metrics: dict[str, dict[str, str]] = {}
        """CLIENT_METRICS resources (KIP-714 subscriptions): name -> `metrics`, `interval.ms`, `match`."""
        self.loggers = BrokerLoggers()
        """BROKER_LOGGER resources: fakekafka's Python loggers and the levels changed through them."""
        """GROUP resources' dynamic configs (IncrementalAlterConfigs): group id -> name -> value."""
        self.consumer_groups = ConsumerGroupCoordinator(
            self.clock, consumer_group_config(c), topics=self._topic_infos,
            group_config=lambda g: self.group_configs.get(g, {}), classic=self.groups)
        self.offsets_topic = OffsetsTopic(self)
        """Where the coordinators' records go (`__consumer_offsets`), and whence they are loaded."""
        self.groups.records = self.consumer_groups.records = self.offsets_topic
        self.shares = ShareCoordinator(self.clock, share_config(c), notify=self.notify, event=self.event,
                                       group_config=lambda g: self.group_configs.get(g, {}))
        self.share_state = ShareStateLog(self)
        """Where share-partitions' persisted state goes (`__share_group_state`), and whence it is loaded."""
        self.shares.persist = self.share_state.write
        self.shares.forget = self.share_state.delete_share_partition
        self.transactions = TransactionCoordinator(
            self.clock, TransactionConfig(max_timeout_ms=c.transaction_max_timeout_ms,
                                          id_expiration_ms=c.transactional_id_expiration_ms),
            allocate_producer_id=self.producer_ids.allocate, write_marker=self._coordinator_marker,
            coordinator_epoch=self._transaction_coordinator_epoch)
        self.transaction_log = TransactionLog(self)
        self.transactions.log = self.transaction_log

    def add_user(self, user: str, password: str) -> None:
        """A SASL user: PLAIN checks the password, SCRAM-SHA-256/512 the credentials made from it."""
        self.sasl_users[user] = password
        self.scram.set_password(user, password)

    # --- observers ---------------------------------------------------------------------------
    def add_change_listener(self, fn: Callable[[object], None]) -> None:
        """`fn(obj)` is called when `obj` changes in a way a parked request may wait for (a partition
        got data, a pending group response was resolved)."""
        self._change_listeners.append(fn)

    def remove_change_listener(self, fn: Callable[[object], None]) -> None:
        self._change_listeners.remove(fn)

    def notify(self, obj: object) -> None:
        for fn in self._change_listeners:
            fn(obj)

    def tick(self) -> None:
        """Fires every timeout the clock has passed: replication and ISR changes, sessions, rebalances,
        retention. A step a storage error stops (a full disk; reported once by the data dir) does not stop the
        others: they run again at the next tick."""
        for topic in list(self.topics.values()):
            for partition in topic.partitions:
                if len(partition.replicas) > 1:
                    self.replicate(partition)
        for step in (self.groups.tick, self.consumer_groups.tick, lambda: self.shares.tick(self.share_topic),
                     self.transactions.tick):
            try:
                step()
            except StorageError:
                pass
        now = self.clock.now_ms()
        if now >= self._next_retention_check:
            interval = int(self.config.value("log.retention.check.interval.ms")[0] or 300000)
            while self._next_retention_check <= now:  # a jump of the clock past several checks runs one
                self._next_retention_check += interval
            self.apply_retention()
        for node_id, broker in self.brokers.items():
            due = self._next_cleaner_run.setdefault(node_id, now + self._cleaner_backoff(node_id))
            if broker.alive and now >= due:
                self._next_cleaner_run[node_id] = now + self._cleaner_backoff(node_id)
                self.run_cleaner(node_id=node_id)
        if self.storage is not None:
            self.storage.tick(self)
        self.notify(self.clock)  # requests waiting on a clock deadline look again

    def next_deadline(self) -> int | None:
        times = [t for t in (self.groups.next_deadline(), self.consumer_groups.next_deadline(),
                             self._replication_deadline(), self.transactions.next_deadline(),
                             self.shares.next_deadline()) if t is not None]
        return min(times, default=None)

    def _topic_infos(self) -> dict[str, TopicInfo]:
        """The metadata image consumer group assignments are computed from."""
        return {name: TopicInfo(t.topic_id, name, len(t.partitions)) for name, t in self.topics.items()}

    def share_topic(self, name: str) -> tuple[uuid.UUID, int] | None:
        """(topic id, partition count) of a topic share groups may subscribe to; None if there is none."""
        topic = self.topics.get(name)
        return None if topic is None or topic.is_internal else (topic.topic_id, len(topic.partitions))

    def event(self, kind: str, **details: object) -> None:
        """Records a fault or state change for tests to assert on, and logs it."""
        self.events.append(Event(self.clock.now_ms(), kind, details))
        _events_log.info("%s %s", kind, " ".join(f"{k}={v}" for k, v in details.items()))

    # --- replication -------------------------------------------------------------------------------
    def _fetching(self, partition: Partition, follower: int) -> bool:
        """Whether `follower` is fetching from the partition's leader right now."""
        b, leader = self.brokers.get(follower), self.brokers.get(partition.leader_id)
        return (b is not None and b.alive and not b.isolated and leader is not None and leader.alive
                and not leader.isolated and follower not in partition.paused)

    def replicate(self, partition: Partition) -> None:
        """One round of follower fetches for a partition: followers truncate where their log diverged
        from the leader's (by leader epoch), copy what they miss (after `replication_lag_ms`), and the
        leader moves the ISR and the high watermark, as Kafka's ReplicaManager and Partition do."""
        if not partition.online:
            return
        now = self.clock.now_ms()
        leader_log = partition.log
        lag = self.config.replication_lag_ms
        segment_configs: dict[str, int] | None = None
        for follower in partition.replicas:
            if follower == partition.leader_id or not self._fetching(partition, follower):
                continue
            flog = partition.logs[follower]
            try:
                flog.truncate_to(flog.divergence_from(leader_log))
                if flog.log_end_offset < leader_log.log_start_offset:
                    flog.delete_before(leader_log.log_start_offset)  # too far behind: start again at the leader's
                i = bisect_left(leader_log.last_offsets, flog.log_end_offset)
                while i < len(leader_log.batches) and leader_log.appended_at[i] + lag <= now:
                    if segment_configs is None:
                        segment_configs = self.segment_configs(partition, follower)
                    flog.append_replica(leader_log.batches[i], leader_log.base_offsets[i],
                                        leader_log.last_offsets[i], leader_log.max_timestamps[i],
                                        leader_log.batch_epochs[i], now, **segment_configs)
                    i += 1
            except StorageError:  # it stays where its files end, falling out of the ISR as a follower that lags
                pass
            if flog.log_end_offset >= leader_log.log_end_offset:
                partition.last_caught_up[follower] = now
            flog.high_watermark = min(flog.log_end_offset, leader_log.high_watermark)
            with contextlib.suppress(StorageError):
                flog.delete_before(min(leader_log.log_start_offset, flog.high_watermark))
        self._update_isr(partition, now)

    def _update_isr(self, partition: Partition, now: int) -> None:
        leader_log = partition.log
        max_lag = self.config.replica_lag_time_max_ms
        shrunk = False
        for follower in list(partition.isr):
            if follower == partition.leader_id:
                continue
            if now - partition.last_caught_up.setdefault(follower, now) > max_lag:
                partition.isr.remove(follower)
                shrunk = True
                self.event("isr_shrink", topic=partition.topic.name, partition=partition.index, replica=follower,
                           isr=list(partition.isr))
        if shrunk:  # as Kafka's maybeShrinkIsr: the high watermark moves first, so a follower left behind (one
            self._advance_high_watermark(partition)  # that cannot write) is not taken straight back in below it
        for follower in partition.replicas:
            if follower in partition.isr or follower == partition.leader_id or not self._fetching(partition, follower):
                continue
            flog = partition.logs[follower]
            epoch_start = leader_log.epochs[-1].start_offset if leader_log.epochs else 0
            if flog.log_end_offset >= leader_log.high_watermark and flog.log_end_offset >= epoch_start:
                partition.isr.append(follower)
                partition.isr.sort(key=partition.replicas.index)
                self.event("isr_expand", topic=partition.topic.name, partition=partition.index, replica=follower,
                           isr=list(partition.isr))
        self._advance_high_watermark(partition)
        self._maybe_complete_reassignment(partition)

    def _advance_high_watermark(self, partition: Partition) -> None:
        leader_log = partition.log
        hw = min(partition.logs[r].log_end_offset for r in partition.isr) if partition.isr \
            else leader_log.log_end_offset
        if hw > leader_log.high_watermark:
            leader_log.high_watermark = hw
            self.notify(partition)

    def _replication_deadline(self) -> int | None:
        """When `tick` next has replication work: a lagging batch due, or an ISR member about to expire."""
        lag, max_lag = self.config.replication_lag_ms, self.config.replica_lag_time_max_ms
        times: list[int] = []
        for topic in self.topics.values():
            for p in topic.partitions:
                if len(p.replicas) < 2 or not p.online:
                    continue
                leader_log = p.log
                for f in p.replicas:
                    if f == p.leader_id:
                        continue
                    flog = p.logs[f]
                    if self._fetching(p, f) and flog.log_end_offset < leader_log.log_end_offset:
                        i = bisect_left(leader_log.last_offsets, flog.log_end_offset)
                        if i < len(leader_log.appended_at):
                            times.append(leader_log.appended_at[i] + lag)
                    if f in p.isr:
                        times.append(p.last_caught_up.get(f, self.clock.now_ms()) + max_lag + 1)
        return min(times, default=None)

    # --- brokers, leaders, the controller --------------------------------------------------------------
    def alive_brokers(self) -> list[Broker]:
        return [b for b in self.brokers.values() if b.alive]

    def _partitions_with(self, node_id: int) -> list[Partition]:
        return [p for t in self.topics.values() for p in t.partitions if node_id in p.replicas]

    def elect_leader(self, partition: Partition, *, preferred: int | None = None) -> None:
        """A new leader from the ISR (or, if the topic allows unclean election, any live replica); the
        leader epoch grows. With no candidate the partition goes offline (leader -1)."""
        def eligible(r: int) -> bool:
            return self.brokers[r].alive
        candidates = [r for r in partition.replicas if r in partition.isr and eligible(r)]
        unclean = False
        if not candidates and self.topic_config(partition.topic, "unclean.leader.election.enable")[0] == "true":
            candidates = [r for r in partition.replicas if eligible(r)]
            unclean = bool(candidates)
        if preferred is not None and preferred in candidates:
            candidates.remove(preferred)
            candidates.insert(0, preferred)
        old = partition.leader_id
        if not candidates:
            partition.leader_id = -1
            self.event("partition_offline", topic=partition.topic.name, partition=partition.index, last_leader=old)
            self.notify(partition)
            return
        new = candidates[0]
        same_log = self._same_log(partition.logs.get(old), partition.logs[new])
        if not same_log:
            # the producer state described the old leader's log; the new leader's differs
            partition.producers = PartitionProducers.from_log(partition.logs[new].batches)
        partition.leader_id = new
        partition.leader_epoch += 1
        if unclean:
            partition.isr = [new]
        partition.logs[new].epochs.append(EpochEntry(partition.leader_epoch, partition.logs[new].log_end_offset))
        partition.last_caught_up = {r: self.clock.now_ms() for r in partition.isr}
        self.event("leader_elected", topic=partition.topic.name, partition=partition.index, leader=new,
                   previous=old, leader_epoch=partition.leader_epoch, unclean=unclean, isr=list(partition.isr))
        if partition.topic.name == OFFSETS_TOPIC and not same_log:
            # the new coordinator loads the groups from its replica (what it lacks is lost, as with Kafka)
            self.offsets_topic.load(partition)
        if partition.topic.name == TRANSACTION_STATE_TOPIC and old >= 0:
            # the new transaction coordinator loads its ids from its replica; deciding transactions finish. A
            # partition back from offline keeps the state: fakekafka's coordinator went on deciding meanwhile
            # (Kafka's would have answered NOT_COORDINATOR), and what it decided was not written
            self.transaction_log.load(partition)
        if partition.topic.name == SHARE_STATE_TOPIC and old >= 0:
            # the new share coordinator loads its keys (snapshot epochs, update counts) from its replica; the
            # share-partitions, kept by their own partitions' leaders, go on as they were, as in Kafka
            self.share_state.load(partition)
        elif partition.topic.name not in INTERNAL_TOPICS and old >= 0 and new != old:
            # the new leader's share-partitions start from what was persisted, as Kafka's read the persister
            self.share_state.leader_moved(partition.topic.name, partition.index)
        self.replicate(partition)
        self.notify(partition)
        if old < 0:  # markers that waited for this partition to be led again
            self.transactions.retry_pending_markers()

    @staticmethod
    def _same_log(a: PartitionLog | None, b: PartitionLog) -> bool:
        """Whether two replicas' logs hold the same batches (followers share the leader's batch objects,
        so comparing the ends is enough): then an election need not rebuild producer state."""
        if a is None or a.log_end_offset != b.log_end_offset or len(a.batches) != len(b.batches):
            return False
        return not a.batches or a.batches[-1] is b.batches[-1]

    def _elect_controller(self) -> None:
        alive = sorted(b.node_id for b in self.alive_brokers())
        new = alive[0] if alive else -1
        if new != self.controller_id:
            self.controller_id = new
            self.controller_epoch += 1
            self.event("controller_elected", broker=new, controller_epoch=self.controller_epoch)

    def kill_broker(self, node_id: int) -> None:
        """The broker dies: it leaves every ISR, its partitions get new leaders, the controller moves."""
        broker = self.brokers[node_id]
        if not broker.alive:
            return
        broker.alive = False
        self.event("broker_killed", broker=node_id)
        if node_id == self.controller_id:
            self._elect_controller()
        for p in self._partitions_with(node_id):
            if node_id in p.isr and len(p.isr) > 1:  # the last member stays: it is the one that may lead again
                p.isr.remove(node_id)
                self.event("isr_shrink", topic=p.topic.name, partition=p.index, replica=node_id, isr=list(p.isr))
            if p.leader_id == node_id:
                self.elect_leader(p)
            self.notify(p)

    def restart_broker(self, node_id: int) -> None:
        """The broker comes back: its replicas catch up (truncating where they diverged) and rejoin the
        ISR; partitions left offline with it as their last ISR member get it as leader again."""
        broker = self.brokers[node_id]
        if broker.alive:
            return
        broker.alive = True
        self.event("broker_restarted", broker=node_id)
        if self.controller_id == -1:
            self._elect_controller()
        for p in self._partitions_with(node_id):
            if not p.online and (node_id in p.isr or
                                 self.topic_config(p.topic, "unclean.leader.election.enable")[0] == "true"):
                self.elect_leader(p)
            else:
                self.replicate(p)

    def move_leader(self, topic: str, index: int, node_id: int) -> None:
        p = self.partition(topic, index)
        if p is None:
            raise ApiError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"{topic}-{index} does not exist")
        if node_id not in p.isr or not self.brokers[node_id].alive:
            raise ApiError(ErrorCode.NOT_LEADER_OR_FOLLOWER, f"broker {node_id} is not a live in-sync replica of "
                                                             f"{topic}-{index} (ISR {p.isr})")
        if p.leader_id != node_id:
            self.elect_leader(p, preferred=node_id)

    def shrink_isr(self, topic: str, index: int, replica: int) -> None:
        """Takes a follower out of the ISR now (and stops its fetching, or it would rejoin at once)."""
        p = self.partition(topic, index)
        if p is None:
            raise ApiError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"{topic}-{index} does not exist")
        if replica == p.leader_id or replica not in p.isr:
            raise ApiError(ErrorCode.INVALID_REQUEST, f"broker {replica} is not a follower in the ISR {p.isr} of "
                                                      f"{topic}-{index} (leader {p.leader_id})")
        p.paused.add(replica)
        p.isr.remove(replica)
        self.event("isr_shrink", topic=topic, partition=index, replica=replica, isr=list(p.isr), forced=True)
        self._advance_high_watermark(p)

    def expand_isr(self, topic: str, index: int, replica: int) -> None:
        """Lets a follower fetch again; it rejoins the ISR as soon as it has caught up, as in Kafka."""
        p = self.partition(topic, index)
        if p is None or replica not in p.replicas:
            raise ApiError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"broker {replica} has no replica of {topic}-{index}")
        p.paused.discard(replica)
        self.replicate(p)

    def reassign_partition(self, topic: str, index: int, replicas: list[int] | None,
                           allow_rf_change: bool = True) -> None:
        """Moves a partition to `replicas` as Kafka reassigns: the added replicas join and catch up, and
        only once all of them are in the ISR do the removed ones leave (leadership moves off them).
        `replicas=None` cancels an ongoing reassignment. Without `allow_rf_change` (KIP-860) a new replica
        count is INVALID_REPLICATION_FACTOR, checked after the list itself, as Kafka's controller does."""
        p = self.partition(topic, index)
        if p is None:
            raise ApiError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"{topic}-{index} does not exist")
        if replicas is None:
            if not p.adding and not p.removing:
                raise ApiError(ErrorCode.NO_REASSIGNMENT_IN_PROGRESS)  # no message, as Kafka's controller
            for r in p.adding:
                if self.storage is not None:
                    self.storage.detach(p, r)
                p.logs.pop(r, None)
                if r in p.isr:
                    p.isr.remove(r)
            p.replicas, p.adding, p.removing = list(p.reassigned_from), [], []
            self.event("reassignment_cancelled", topic=topic, partition=index, replicas=list(p.replicas))
            if p.leader_id not in p.replicas:
                self.elect_leader(p)
            return
        if not replicas or len(set(replicas)) != len(replicas) or any(r not in self.brokers for r in replicas):
            raise ApiError(ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                           f"invalid replica list {replicas}: it must be non-empty, without duplicates, of known "
                           f"brokers {sorted(self.brokers)}")
        current = [r for r in p.replicas if r not in p.removing]  # an ongoing reassignment's target
        if not allow_rf_change and len(current) != len(replicas):
            raise ApiError(ErrorCode.INVALID_REPLICATION_FACTOR,
                           f"the replication factor would change from {len(current)} to {len(replicas)}, "
                           "and the request does not allow it")
        original = p.reassigned_from if (p.adding or p.removing) else list(p.replicas)
        p.reassigned_from = original
        p.adding = [r for r in replicas if r not in original]
        p.removing = [r for r in original if r not in replicas]
        p.replicas = list(replicas) + p.removing
        for r in p.adding:
            p.logs.setdefault(r, PartitionLog())
        self.place_replicas([p])
        if self.storage is not None:
            self.storage.attach(p)
        self.event("reassignment_started", topic=topic, partition=index, target=list(replicas),
                   adding=list(p.adding), removing=list(p.removing))
        self.replicate(p)
        self._maybe_complete_reassignment(p)

    def _maybe_complete_reassignment(self, p: Partition) -> None:
        if not p.adding and not p.removing:
            return
        target = [r for r in p.replicas if r not in p.removing]
        if not all(r in p.isr for r in target):
            return
        removed = p.removing
        p.replicas, p.adding, p.removing = target, [], []
        p.isr = [r for r in p.isr if r in target]
        for r in removed:
            if self.storage is not None:
                self.storage.detach(p, r)
            p.logs.pop(r, None)
            p.paused.discard(r)
        self.event("reassignment_completed", topic=p.topic.name, partition=p.index, replicas=list(target))
        if p.leader_id not in target:
            self.elect_leader(p, preferred=target[0])

    def _election_partition(self, topic: str, index: int) -> Partition:
        """The partition an ElectLeaders names, or Kafka's controller's error in its words."""
        if topic not in self.topics:
            raise ApiError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"No such topic as {topic}")
        p = self.partition(topic, index)
        if p is None:
            raise ApiError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"No such partition as {topic}-{index}")
        return p

    def elect_unclean(self, topic: str, index: int) -> None:
        """ElectLeaders UNCLEAN: an offline partition takes any live replica as leader (data may be lost)."""
        p = self._election_partition(topic, index)
        if p.online:
            raise ApiError(ErrorCode.ELECTION_NOT_NEEDED, "Leader election not needed for topic partition.")
        alive = [r for r in p.replicas if self.brokers[r].alive]
        if not alive:
            raise ApiError(ErrorCode.ELIGIBLE_LEADERS_NOT_AVAILABLE, "No live replica can become leader.")
        p.isr = [alive[0]]
        self.elect_leader(p, preferred=alive[0])

    def elect_preferred_leader(self, topic: str, index: int) -> None:
        """ElectLeaders PREFERRED for one partition, with Kafka's errors."""
        p = self._election_partition(topic, index)
        preferred = p.replicas[0]
        if p.leader_id == preferred:
            raise ApiError(ErrorCode.ELECTION_NOT_NEEDED, "Leader election not needed for topic partition.")
        if preferred not in p.isr or not self.brokers[preferred].alive:
            raise ApiError(ErrorCode.PREFERRED_LEADER_NOT_AVAILABLE,
                           f"Failed to elect leader for partition {topic}-{index} under strategy PreferredReplica")
        self.elect_leader(p, preferred=preferred)

    def elect_preferred_leaders(self) -> int:
        """Moves leadership back to each partition's first replica where it is alive and in sync."""
        moved = 0
        for t in list(self.topics.values()):
            for p in t.partitions:
                try:
                    self.elect_preferred_leader(t.name, p.index)
                except ApiError:  # already preferred, or the preferred replica cannot lead now
                    continue
                moved += 1
        return moved

    def stop_broker(self, node_id: int) -> None:
        """A controlled shutdown: leadership moves to another live in-sync replica first, then the broker
        goes, so no partition it led waits for an election."""
        for p in [p for t in self.topics.values() for p in t.partitions if p.leader_id == node_id]:
            others = [r for r in p.isr if r != node_id and self.brokers[r].alive]
            if others:
                self.elect_leader(p, preferred=others[0])
        self.kill_broker(node_id)

    # --- coordinators ----------------------------------------------------------------------------
    def offsets_partition_for(self, group_id: str) -> int:
        return kafka_abs(java_string_hash(group_id)) % self.config.offsets_topic_num_partitions

    def coordinator_for(self, group_id: str) -> Broker | None:
        """The leader of the group's `__consumer_offsets` partition (created on first use, as Kafka does);
        None while that partition has no leader."""
        topic = self.topics.get(OFFSETS_TOPIC)
        if topic is None:
            topic = self.create_topic(OFFSETS_TOPIC, self.config.offsets_topic_num_partitions,
                                      min(3, len(self.brokers)), configs={"cleanup.policy": "compact",
                                                                         "segment.bytes": "104857600",
                                                                         "compression.type": "producer"})
        return self.brokers.get(topic.partitions[self.offsets_partition_for(group_id)].leader_id)

    def share_state_topic(self) -> Topic:
        """`__share_group_state`, created the first time a share group's state is needed (a share-partition
        starts, or its offsets are described or altered), as Kafka's share coordinator does; `share_state` writes
        the share-partitions' state to it."""
        topic = self.topics.get(SHARE_STATE_TOPIC)
        if topic is None:
            rf = min(int(self.config.value("share.coordinator.state.topic.replication.factor")[0] or 3),
                     len(self.brokers))
            topic = self.create_topic(SHARE_STATE_TOPIC,
                                      int(self.config.value("share.coordinator.state.topic.num.partitions")[0] or 50),
                                      rf, configs={"cleanup.policy": "delete", "compression.type": "producer",
                                                   "segment.bytes": "104857600"})
        return topic

    def transaction_partition_for(self, transactional_id: str) -> int:
        return kafka_abs(java_string_hash(transactional_id)) % self.config.transaction_state_log_num_partitions

    def _transaction_state_topic(self) -> Topic:
        topic = self.topics.get(TRANSACTION_STATE_TOPIC)
        if topic is None:
            rf = min(3, len(self.brokers))
            topic = self.create_topic(TRANSACTION_STATE_TOPIC, self.config.transaction_state_log_num_partitions, rf,
                                      configs={"cleanup.policy": "compact", "segment.bytes": "104857600",
                                               "compression.type": "uncompressed",
                                               "unclean.leader.election.enable": "false",
                                               "min.insync.replicas": str(min(2, rf))})
        return topic

    def transaction_coordinator_for(self, transactional_id: str) -> Broker | None:
        """The leader of the id's `__transaction_state` partition (the topic is created on first use, as Kafka
        does); None while that partition has no leader. The coordinator moves with that leadership."""
        topic = self._transaction_state_topic()
        return self.brokers.get(topic.partitions[self.transaction_partition_for(transactional_id)].leader_id)

    def _transaction_coordinator_epoch(self, transactional_id: str) -> int:
        topic = self.topics.get(TRANSACTION_STATE_TOPIC)
        return topic.partitions[self.transaction_partition_for(transactional_id)].leader_epoch if topic else 0

    # --- transaction markers ---------------------------------------------------------------------
    def _coordinator_marker(self, tp: tuple[str, int], producer_id: int, epoch: int, commit: bool,
                            coordinator_epoch: int) -> bool:
        """The coordinator's marker for one partition: False while the partition has no leader (retried)."""
        partition = self.partition(*tp)
        if partition is None:
            return True  # deleted with its topic: nothing to mark, as Kafka's marker channel drops it
        if not partition.online:
            return False
        self.write_marker(partition, producer_id, epoch, commit, coordinator_epoch)
        return True

    def append_internal(self, partition: Partition, batch: bytes, now: int) -> None:
        """A batch the broker writes itself (a coordinator's records) appended at the partition's leader and
        replicated as a produce with acks=all would be; fetches waiting on the partition are woken."""
        partition.log.append(batch, read_header(batch), partition.leader_epoch, None, now,
                             **self.segment_configs(partition))
        if len(partition.replicas) > 1:
            self.replicate(partition)
        else:
            self._advance_high_watermark(partition)
        self.notify(partition)

    def write_marker(self, partition: Partition, producer_id: int, epoch: int, commit: bool,
                     coordinator_epoch: int) -> ErrorCode:
        """Appends a COMMIT or ABORT control batch for the producer's transaction to the partition's leader log
        (WriteTxnMarkers); on `__consumer_offsets` it also commits or drops the offsets the transaction staged."""
        code = partition.producers.check_marker(producer_id, epoch, coordinator_epoch)
        if code != ErrorCode.NONE:
            return code
        now = self.clock.now_ms()
        key = struct.pack(">hh", 0, 1 if commit else 0)
        value = struct.pack(">hi", 0, coordinator_epoch)
        batch = build_batch([{"key": key, "value": value, "timestamp": now}], producer_id=producer_id,
                            producer_epoch=epoch, transactional=True, control=True)
        partition.log.append(batch, read_header(batch), partition.leader_epoch, None, now,
                             **self.segment_configs(partition))
        partition.producers.record_marker(producer_id, epoch, now, coordinator_epoch)
        if partition.topic.name == OFFSETS_TOPIC:
            index = partition.index
            def here(group_id: str) -> bool:
                return self.offsets_partition_for(group_id) == index
            self.groups.complete_txn_offsets(producer_id, commit, here)
            self.consumer_groups.complete_txn_offsets(producer_id, commit, here)
        if len(partition.replicas) > 1:
            self.replicate(partition)
        else:
            self._advance_high_watermark(partition)
        self.notify(partition)  # read_committed fetches waiting on the last stable offset
        return ErrorCode.NONE

    # --- topics ------------------------------------------------------------------------------
    def partition(self, topic: str, index: int) -> Partition | None:
        t = self.topics.get(topic)
        if t is None or not 0 <= index < len(t.partitions):
            return None
        return t.partitions[index]

    def _assign(self, count: int, replication_factor: int, start: int = 0) -> list[list[int]]:
        """Round-robin replica placement with a moving start, as Kafka spreads leaders."""
        ids = sorted(b.node_id for b in self.alive_brokers())
        out = []
        for p in range(count):
            first = (self._placement + start + p) % len(ids)
            out.append([ids[(first + r) % len(ids)] for r in range(replication_factor)])
        return out

    def create_topic(self, name: str, num_partitions: int = -1, replication_factor: int = -1,
                     assignments: dict[int, list[int]] | None = None, configs: dict[str, str | None] | None = None,
                     *, validate_only: bool = False) -> Topic:
        validate_topic_name(name)
        if name in self.topics:
            raise ApiError(ErrorCode.TOPIC_ALREADY_EXISTS, f"Topic '{name}' already exists.")
        collision = name.replace(".", "_")
        for existing in self.topics:
            if existing.replace(".", "_") == collision:
                raise ApiError(ErrorCode.INVALID_TOPIC_EXCEPTION,
                               f"Topic '{name}' collides with existing topic: {existing}")
        if assignments:
            if num_partitions != -1 or replication_factor != -1:
                raise ApiError(ErrorCode.INVALID_REQUEST,
                               "Both numPartitions or replicationFactor and replicasAssignments were set. "
                               "Both cannot be used at the same time.")
            if sorted(assignments) != list(range(len(assignments))):
                raise ApiError(ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                               "Partitions should be a consecutive 0-based integer sequence")
            self._check_partition_ceiling(name, len(assignments))
            replica_lists = [assignments[p] for p in range(len(assignments))]
            self._check_assignment(replica_lists)
        else:
            if num_partitions == -1:
                num_partitions = self.config.num_partitions
            if replication_factor == -1:
                replication_factor = self.config.default_replication_factor
            if num_partitions <= 0:
                raise ApiError(ErrorCode.INVALID_PARTITIONS, "Number of partitions must be larger than 0.")
            if replication_factor <= 0:
                raise ApiError(ErrorCode.INVALID_REPLICATION_FACTOR, "Replication factor must be larger than 0.")
            alive = len(self.alive_brokers())
            if replication_factor > alive:
                raise ApiError(ErrorCode.INVALID_REPLICATION_FACTOR,
                               f"Unable to replicate the partition {replication_factor} time(s): The target "
                               f"replication factor of {replication_factor} cannot be reached because only "
                               f"{alive} broker(s) are registered or some brokers have all their log directories "
                               f"cordoned.")  # Kafka 4.4's words (KIP-1066 added the cordoned clause)
            self._check_partition_ceiling(name, num_partitions)
            replica_lists = self._assign(num_partitions, replication_factor)
        clean = self._validate_configs(configs or {})
        topic = Topic(name, uuid.uuid4(), [], clean, is_internal=name in INTERNAL_TOPICS)
        if validate_only:
            topic.partitions = [Partition(topic, i, r, r[0]) for i, r in enumerate(replica_lists)]
            return topic
        topic.partitions = [Partition(topic, i, r, r[0]) for i, r in enumerate(replica_lists)]
        self.place_replicas(topic.partitions)
        self._placement += 1
        self.topics[name] = topic
        self.topics_by_id[topic.topic_id] = topic
        if self.storage is not None:  # its directories first: a crash before the metadata names it leaves
            try:  # directories the restart deletes
                for partition in topic.partitions:
                    self.storage.attach(partition)
                self.storage.save(self)
            except StorageError as e:  # not durable, so not made: refused, its directories gone
                del self.topics[name]
                del self.topics_by_id[topic.topic_id]
                self._placement -= 1
                self.storage.drop_topic(topic)
                raise ApiError(ErrorCode.KAFKA_STORAGE_ERROR, f"Topic '{name}' was not created: {e}") from None
        self.consumer_groups.metadata_changed()
        return topic

    # --- log directories --------------------------------------------------------------------------
    def log_dirs(self) -> list[str]:
        """Every broker's log directories, by name (`log.dirs` / `log.dir`; the same on each broker, as the
        same server.properties on several hosts)."""
        return self.config.log_dirs()

    def _dir_counts(self, node_id: int, dirs: list[str]) -> dict[str, int]:
        counts = dict.fromkeys(dirs, 0)
        for t in self.topics.values():
            for p in t.partitions:
                log = p.logs.get(node_id)
                if log is not None and log.log_dir in counts:
                    counts[log.log_dir] += 1
        return counts

    def place_replicas(self, partitions: list[Partition]) -> None:
        """Puts each new replica in a log dir of its broker as Kafka's LogManager does: the dir AlterReplicaLogDirs
        named for it beforehand, else the one holding the fewest partitions (ties to the first in `log.dirs`)."""
        dirs = self.log_dirs()
        counts: dict[int, dict[str, int]] = {}
        for p in partitions:
            for node, log in p.logs.items():
                if log.log_dir:
                    continue
                preferred = self.preferred_log_dirs.pop((p.topic.name, p.index, node), None)
                if len(dirs) == 1:
                    log.log_dir = dirs[0]
                    continue
                if node not in counts:
                    counts[node] = self._dir_counts(node, dirs)
                chosen = preferred if preferred in counts[node] else min(dirs, key=counts[node].__getitem__)
                log.log_dir = chosen
                counts[node][chosen] += 1

    def alter_replica_log_dir(self, node_id: int, topic: str, index: int, log_dir: str) -> ErrorCode:
        """Moves broker `node_id`'s replica of a partition to another of its log dirs, with the per-partition
        code Kafka's ReplicaManager.alterReplicaLogDirs answers: LOG_DIR_NOT_FOUND for a dir not in `log.dirs`
        (checked first), UNKNOWN_TOPIC_OR_PARTITION, and REPLICA_NOT_AVAILABLE for a replica the broker does not
        hold (the dir is remembered for when it comes). Kafka copies the replica into a future log that takes
        over once caught up; here the move is done when the answer is given."""
        if log_dir not in self.log_dirs():
            return ErrorCode.LOG_DIR_NOT_FOUND
        p = self.partition(topic, index)
        if p is None:
            return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
        log = p.logs.get(node_id)
        if log is None:
            self.preferred_log_dirs[(topic, index, node_id)] = log_dir
            return ErrorCode.REPLICA_NOT_AVAILABLE
        if log.log_dir != log_dir:
            self.event("replica_log_dir_moved", topic=topic, partition=index, node=node_id, log_dir=log_dir,
                       previous=log.log_dir)
            log.log_dir = log_dir
            if self.storage is not None:  # its directory moves to the new log dir's
                self.storage.move(p, node_id)
        return ErrorCode.NONE

    def _check_partition_ceiling(self, name: str, added: int) -> None:
        """`max_partitions` (a test's ceiling on the cluster's partitions; internal topics are the broker's
        own and not held to it): POLICY_VIOLATION, the error Kafka's controller gives a request that would
        make too many partitions at once."""
        if name in INTERNAL_TOPICS:
            return
        limit = self.config.max_partitions
        held = sum(len(t.partitions) for t in self.topics.values() if not t.is_internal)
        if held + added > limit:
            raise ApiError(ErrorCode.POLICY_VIOLATION,
                           f"Adding {added} partition(s) would exceed the cluster's limit of {limit} partitions "
                           f"(max.partitions; {held} exist).")

    def _check_assignment(self, replica_lists: list[list[int]]) -> None:
        for replicas in replica_lists:
            if not replicas:
                raise ApiError(ErrorCode.INVALID_REPLICA_ASSIGNMENT, "The manual partition assignment "
                               "includes a partition with no replicas.")
            if len(set(replicas)) != len(replicas):
                raise ApiError(ErrorCode.INVALID_REPLICA_ASSIGNMENT, "The manual partition assignment "
                               "includes a partition with duplicate replicas.")
            missing = [r for r in replicas if r not in self.brokers]
            if missing:
                raise ApiError(ErrorCode.INVALID_REPLICA_ASSIGNMENT, "The manual partition assignment includes "
                               f"broker {missing[0]}, but no such broker is registered.")
        if len({len(r) for r in replica_lists}) > 1:
            raise ApiError(ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                           "All partitions in the manual partition assignment must have the same number of replicas.")

    @staticmethod
    def _validate_configs(configs: dict[str, str | None]) -> dict[str, str]:
        clean: dict[str, str] = {}
        for key, value in configs.items():
            spec = TOPIC_CONFIGS.get(key)
            if spec is None:
                raise ApiError(ErrorCode.INVALID_CONFIG, f"Unknown topic config name: {key}")
            if value is None:
                raise ApiError(ErrorCode.INVALID_CONFIG, f"Null value not supported for topic configs: {key}")
            try:
                checked = spec.validate(value)
            except InvalidConfig as e:
                raise ApiError(ErrorCode.INVALID_CONFIG, str(e)) from None
            if checked is not None:
                clean[key] = checked
        return clean

    def auto_create(self, name: str) -> Topic | None:
        """The topic, created with the broker defaults if auto-creation is on; None otherwise."""
        topic = self.topics.get(name)
        if topic is not None or not self.config.auto_create_topics:
            return topic
        return self.create_topic(name)

    def delete_topic(self, name: str) -> Topic:
        topic = self.topics.get(name)
        if topic is None:
            raise ApiError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, "This server does not host this topic-partition.")
        if topic.is_internal:
            raise ApiError(ErrorCode.TOPIC_AUTHORIZATION_FAILED, f"Internal topic {name} cannot be deleted.")
        del self.topics[name]
        del self.topics_by_id[topic.topic_id]
        if self.storage is not None:  # the metadata first: directories it no longer names go at a restart
            try:
                self.storage.save(self)
            except StorageError as e:  # the deletion is not durable: not made
                self.topics[name] = topic
                self.topics_by_id[topic.topic_id] = topic
                raise ApiError(ErrorCode.KAFKA_STORAGE_ERROR, f"Topic '{name}' was not deleted: {e}") from None
            self.storage.drop_topic(topic)
        self.groups.remove_partitions(name)
        self.consumer_groups.remove_partitions(name)
        self.consumer_groups.metadata_changed()
        self.shares.forget_topic(name)
        return topic

    def create_partitions(self, name: str, count: int, assignments: list[list[int]] | None = None,
                          *, validate_only: bool = False) -> None:
        topic = self.topics.get(name)
        if topic is None:
            raise ApiError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)  # no message, as Kafka's controller
        current = len(topic.partitions)
        if count < current:
            raise ApiError(ErrorCode.INVALID_PARTITIONS,
                           f"The topic {name} currently has {current} partition(s); {count} would not be an increase.")
        if count == current:
            raise ApiError(ErrorCode.INVALID_PARTITIONS, f"Topic already has {current} partition(s).")
        added = count - current
        self._check_partition_ceiling(name, added)
        if assignments is not None:
            if len(assignments) != added:
                raise ApiError(ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                               f"Attempted to add {added} additional partition(s), but only {len(assignments)} "
                               "assignment(s) were specified.")
            self._check_assignment(assignments + [topic.partitions[0].replicas])
            replica_lists = assignments
        else:
            replica_lists = self._assign(added, topic.replication_factor, start=current)
        if validate_only:
            return
        for i, replicas in enumerate(replica_lists):
            topic.partitions.append(Partition(topic, current + i, replicas, replicas[0]))
        self.place_replicas(topic.partitions[current:])
        if self.storage is not None:
            try:
                for partition in topic.partitions[current:]:
                    self.storage.attach(partition)
                self.storage.save(self)
            except StorageError as e:  # not durable, so not made
                for partition in topic.partitions[current:]:
                    for node_id in list(partition.logs):
                        self.storage.detach(partition, node_id)
                del topic.partitions[current:]
                raise ApiError(ErrorCode.KAFKA_STORAGE_ERROR, f"Partitions of '{name}' were not created: {e}") \
                    from None
        self.consumer_groups.metadata_changed()

    # --- configs -----------------------------------------------------------------------------
    def topic_config(self, topic: Topic, name: str, node_id: int | None = None
                     ) -> tuple[str | None, ConfigSource, str | None]:
        """A topic config's value as broker `node_id` sees it (its per-broker dynamic configs count)."""
        if name in topic.configs:
            return topic.configs[name], ConfigSource.TOPIC_CONFIG, TOPIC_CONFIGS[name].broker_synonym
        return self.config.topic_default(name, node_id)

    def topic_config_int(self, topic: Topic, name: str, node_id: int | None = None) -> int:
        value = self.topic_config(topic, name, node_id)[0]
        return int(value) if value is not None else 0

    def segment_configs(self, partition: Partition, node_id: int | None = None) -> dict[str, int]:
        """segment.bytes, segment.ms, segment.index.bytes and index.interval.bytes as the broker holding the
        replica sees them, for rolling at append."""
        node = partition.leader_id if node_id is None else node_id
        topic = partition.topic
        return {"segment_bytes": self.topic_config_int(topic, "segment.bytes", node),
                "segment_ms": self.topic_config_int(topic, "segment.ms", node),
                "segment_index_bytes": self.topic_config_int(topic, "segment.index.bytes", node),
                "index_interval_bytes": self.topic_config_int(topic, "index.interval.bytes", node)}

    def set_topic_configs(self, topic: Topic, configs: dict[str, str]) -> None:
        """A topic's dynamic configs replaced (validated by the caller); they take effect at once, as the
        model reads them on every use, and retention at its next check."""
        topic.configs = dict(configs)
        self.event("topic_configs", topic=topic.name, configs=dict(configs))

    def set_broker_configs(self, node_id: int | None, configs: dict[str, str]) -> None:
        """Broker `node_id`'s dynamic configs (None: the cluster-wide defaults) replaced."""
        before = {n: self._cleaner_backoff(n) for n in self.brokers}
        if node_id is None:
            self.config.dynamic_defaults = dict(configs)
        else:
            self.config.dynamic_brokers[node_id] = dict(configs)
        for n, backoff in before.items():  # Kafka restarts its cleaner threads on a new cleaner config: they
            if self._cleaner_backoff(n) != backoff:  # look for work at once
                self._next_cleaner_run[n] = self.clock.now_ms()
        self.consumer_groups.config = consumer_group_config(self.config)  # group.consumer.assignment.interval.ms
        self.event("broker_configs", node=node_id, configs=dict(configs))

    # --- retention ---------------------------------------------------------------------------
    def apply_retention(self) -> None:
        """One retention check, as Kafka's LogManager runs every log.retention.check.interval.ms: on each
        partition whose cleanup.policy has "delete", retention.ms and retention.bytes (or their broker
        synonyms, as the leader sees them) move the log start past whole segments; followers follow."""
        now = self.clock.now_ms()
        for topic in list(self.topics.values()):
            policy = self.topic_config(topic, "cleanup.policy")[0] or ""
            if "delete" not in [p.strip() for p in policy.split(",")]:
                continue
            for partition in topic.partitions:
                if not partition.online:
                    continue
                log = partition.log
                leader = partition.leader_id
                start = log.retention_start(now, self.topic_config_int(topic, "retention.ms", leader),
                                            self.topic_config_int(topic, "retention.bytes", leader))
                if start <= log.log_start_offset:
                    continue
                try:
                    log.delete_before(start)
                except StorageError:  # reported once; its files keep the segments until a check succeeds
                    continue
                self.event("retention", topic=topic.name, partition=partition.index, log_start_offset=start)
                if len(partition.replicas) > 1:
                    self.replicate(partition)
                self.notify(partition)

    # --- compaction ------------------------------------------------------------------------------
    @staticmethod
    def _policies(value: str | None) -> list[str]:
        return [p.strip() for p in (value or "").split(",")]

    def cleaner_settings(self, topic: Topic, node_id: int | None) -> CleanerSettings:
        """A topic's cleaning configs as broker `node_id` sees them."""
        ratio = self.topic_config(topic, "min.cleanable.dirty.ratio", node_id)[0]
        return CleanerSettings(float(ratio) if ratio is not None else 0.5,
                               self.topic_config_int(topic, "min.compaction.lag.ms", node_id),
                               self.topic_config_int(topic, "max.compaction.lag.ms", node_id),
                               self.topic_config_int(topic, "delete.retention.ms", node_id),
                               self.topic_config_int(topic, "segment.bytes", node_id))

    def _cleaner_backoff(self, node_id: int) -> int:
        return int(self.config.value("log.cleaner.backoff.ms", node_id)[0] or 15000)

    def run_cleaner(self, topic_name: str | None = None, node_id: int | None = None) -> int:
        """One wake-up of Kafka's log cleaner on broker `node_id` (every log.cleaner.backoff.ms when it finds
        nothing to do; None: every broker): each of its live replicas' logs of a topic whose cleanup.policy
        has "compact" is cleaned if it is due (dirty ratio or max.compaction.lag.ms). With `topic_name`, that
        topic's logs are cleaned now whatever their dirty ratio (still never the active segment, open
        transactions or records within min.compaction.lag.ms): what tests use for deterministic compaction.
        Returns how many logs were cleaned."""
        if topic_name is None and self.config.value("log.cleaner.enable")[0] == "false":
            return 0
        now = self.clock.now_ms()
        cleaned = 0
        topics = [self.topics[topic_name]] if topic_name is not None else list(self.topics.values())
        for topic in topics:
            if "compact" not in self._policies(self.topic_config(topic, "cleanup.policy")[0]):
                continue
            for partition in topic.partitions:
                for holder, log in partition.logs.items():
                    broker = self.brokers.get(holder)
                    if broker is None or not broker.alive or node_id not in (None, holder):
                        continue
                    settings = self.cleaner_settings(topic, holder)
                    to_clean = cleanable(log, now, settings)
                    if to_clean.cleanable_bytes <= 0 or (topic_name is None and not to_clean.due(settings)):
                        continue
                    try:
                        clean(log, now, settings, to_clean)
                    except StorageError:  # reported once; the replica's files were failed (their old segments
                        continue          # stay whole)
                    cleaned += 1
                    if holder == partition.leader_id:
                        self.event("compaction", topic=topic.name, partition=partition.index,
                                   cleaned_up_to=to_clean.upper)
        return cleaned

    def force_compaction(self, topic_name: str) -> int:
        """Cleans every partition of a compacted topic now (see run_cleaner); UNKNOWN_TOPIC_OR_PARTITION for
        an unknown topic, INVALID_CONFIG for one whose cleanup.policy lacks "compact"."""
        topic = self.topics.get(topic_name)
        if topic is None:
            raise ApiError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"Topic {topic_name} does not exist")
        if "compact" not in self._policies(self.topic_config(topic, "cleanup.policy")[0]):
            raise ApiError(ErrorCode.INVALID_CONFIG, f"Topic {topic_name} is not compacted (cleanup.policy="
                                                     f"{self.topic_config(topic, 'cleanup.policy')[0]})")
        return self.run_cleaner(topic_name)

    # --- deleting records ----------------------------------------------------------------------
    def delete_records(self, partition: Partition, offset: int) -> int:
        """DeleteRecords on the partition's leader, as Kafka's Partition.deleteRecordsOnLeader: -1 means the
        high watermark; past it is OFFSET_OUT_OF_RANGE; a topic whose cleanup.policy lacks "delete" refuses.
        Moves the log start (never back) and returns it, the low watermark; live followers take it at once."""
        policy = self.topic_config(partition.topic, "cleanup.policy")[0] or ""
        if "delete" not in [p.strip() for p in policy.split(",")]:
            raise ApiError(ErrorCode.POLICY_VIOLATION, f"Records of partition {partition.topic.name}-"
                                                       f"{partition.index} can not be deleted due to the configured "
                                                       "policy")
        log = partition.log
        target = log.high_watermark if offset == -1 else offset
        if target < 0 or target > log.high_watermark:
            raise ApiError(ErrorCode.OFFSET_OUT_OF_RANGE, f"Cannot increment the log start offset to {target} of "
                                                          f"partition {partition.topic.name}-{partition.index} since "
                                                          f"it is larger than the high watermark {log.high_watermark}")
        log.delete_before(target)
        if len(partition.replicas) > 1:
            self.replicate(partition)
        self.notify(partition)  # a parked fetch below the new start is answered OFFSET_OUT_OF_RANGE now
        return log.log_start_offset

    # --- produce -----------------------------------------------------------------------------
    def _verify_transactional(self, partition: Partition, header: BatchHeader, transactional_id: str,
                              verification: str) -> AppendResult | None:
        """The errors Kafka's ReplicaManager turns a failed verification (or implicit add) into, as a producer
        sees them."""
        tp = (partition.topic.name, partition.index)
        if verification == "add":
            code = self.transactions.add_partitions(transactional_id, header.producer_id, header.producer_epoch,
                                                    {tp}, implicit=True)
        elif self.config.value("transaction.partition.verification.enable")[0] == "false":
            return None
        else:
            code = self.transactions.verify_partitions(transactional_id, header.producer_id, header.producer_epoch,
                                                       {tp})[tp]
        if code == ErrorCode.NONE:
            return None
        if code == ErrorCode.TRANSACTION_ABORTABLE and verification == "verify":
            code = ErrorCode.INVALID_TXN_STATE
        if code == ErrorCode.INVALID_TXN_STATE:
            return AppendResult(code, message="Partition was not added to the transaction", answer_message=True)
        if code == ErrorCode.PRODUCER_FENCED:
            return AppendResult(ErrorCode.INVALID_PRODUCER_EPOCH)
        if code in (ErrorCode.CONCURRENT_TRANSACTIONS, ErrorCode.NOT_COORDINATOR,
                    ErrorCode.COORDINATOR_NOT_AVAILABLE):
            return AppendResult(ErrorCode.NOT_ENOUGH_REPLICAS,
                                message="Unable to verify the partition has been added to the transaction. "
                                        f"Underlying error: {code.name}", answer_message=True)
        return AppendResult(code)

    def min_insync_replicas(self, partition: Partition) -> int:
        return self.topic_config_int(partition.topic, "min.insync.replicas", partition.leader_id)

    def append(self, partition: Partition, records: bytes | None, acks: int = 1,
               transactional_id: str | None = None, verification: str = "verify") -> AppendResult:
        """Validates and stores one partition's data from a Produce request (v3+: exactly one batch) on
        the leader, then lets the followers fetch it. acks=-1 is refused up front when the ISR is smaller
        than min.insync.replicas; waiting for the high watermark is the caller's business. A transactional
        batch from a request naming its transactional id, opening the producer's transaction on this
        partition, is first checked with the coordinator (KIP-890 part 1): `verification` is "verify"
        (Produce v3-10), "abortable" (v11, which knows TRANSACTION_ABORTABLE) or "add" (v12+, transactions
        version 2: the batch adds its partition to the transaction)."""
        log = partition.log
        topic = partition.topic
        if acks == -1 and len(partition.isr) < self.min_insync_replicas(partition):
            return AppendResult(ErrorCode.NOT_ENOUGH_REPLICAS,
                                message=f"The size of the current ISR {partition.isr} is insufficient to satisfy "
                                        f"the min.isr requirement of {self.min_insync_replicas(partition)}")
        if not records:
            return AppendResult(ErrorCode.INVALID_RECORD, message="Produce request must carry a record batch")
        split = split_produced(records)
        refused = split if isinstance(split, Refused) else check_batch(
            split[0], split[1], self.topic_config_int(topic, "max.message.bytes", partition.leader_id),
            self.topic_config_int(topic, "max.decompressed.message.bytes", partition.leader_id))
        if refused is not None:
            return AppendResult(refused.error, message=refused.message, answer_message=refused.shown)
        assert not isinstance(split, Refused)
        header, batch = split
        if header.is_control:
            return AppendResult(ErrorCode.INVALID_RECORD, message="Producers may not write control batches")
        if "compact" in self.topic_config(topic, "cleanup.policy", partition.leader_id)[0].split(","):
            refused = _keyless(batch, f"{topic.name}-{partition.index}", log.log_start_offset)
            if refused:
                return refused
        now = self.clock.now_ms()
        stamp_type = self.topic_config(topic, "message.timestamp.type", partition.leader_id)[0]
        log_append = stamp_type == "LogAppendTime"
        if not log_append:
            before = self.topic_config_int(topic, "message.timestamp.before.max.ms", partition.leader_id)
            after = self.topic_config_int(topic, "message.timestamp.after.max.ms", partition.leader_id)
            if header.max_timestamp >= 0 and (now - header.base_timestamp > before
                                              or header.max_timestamp - now > after):
                return AppendResult(ErrorCode.INVALID_TIMESTAMP,
                                    message="Timestamp is out of range of message.timestamp.before/after.max.ms")
        if not header.is_transactional and header.producer_id in log.open_txns:
            return AppendResult(ErrorCode.INVALID_TXN_STATE,
                                message=f"Expected transactional write from producer {header.producer_id}")
        if header.is_transactional and transactional_id is not None \
                and header.producer_id not in log.open_txns:
            refused = self._verify_transactional(partition, header, transactional_id, verification)
            if refused is not None:
                return refused
        idempotent = header.producer_id >= 0 and header.base_sequence >= 0
        if idempotent:
            check = partition.producers.check(header)
            if check.duplicate_of is not None:
                return AppendResult(ErrorCode.NONE, check.duplicate_of, check.duplicate_log_append_time,
                                    log.log_start_offset)
            if check.error != ErrorCode.NONE:
                return AppendResult(check.error, message=check.message)
        append_time = now if log_append else None
        try:
            base = log.append(batch, header, partition.leader_epoch, append_time, now,
                              **self.segment_configs(partition))
        except StorageError as e:  # not stored, in memory or on disk: Kafka's answer for a failed log dir
            return AppendResult(ErrorCode.KAFKA_STORAGE_ERROR, message=str(e))
        if idempotent:
            partition.producers.record(header, base, append_time if append_time is not None else -1)
        if len(partition.replicas) > 1:
            self.replicate(partition)
        else:
            self._advance_high_watermark(partition)
        return AppendResult(ErrorCode.NONE, base, append_time if append_time is not None else -1, log.log_start_offset)


def share_config(c: BrokerConfig) -> ShareConfig:
    """The share-group broker configs (group.share.*), by Kafka's names."""
    def get(name: str, default: int) -> int:
        value = c.value(name)[0]
        return int(value) if value not in (None, "") else default
    return ShareConfig(
        session_timeout_ms=get("group.share.session.timeout.ms", 45_000),
        heartbeat_interval_ms=get("group.share.heartbeat.interval.ms", 5_000),
        record_lock_duration_ms=get("group.share.record.lock.duration.ms", 30_000),
        delivery_count_limit=get("group.share.delivery.count.limit", 5),
        max_record_locks=get("group.share.partition.max.record.locks", 2_000),
        max_size=get("group.share.max.size", 200))
