"""The cluster model: brokers, topics, partitions and their logs, producer ids. Pure state.

No sockets and no asyncio: the server feeds it requests through the handlers, tests drive it
directly, and every time it reads comes from the injected `Clock`. Change listeners let the server
wake long-polling fetches without the model knowing about the server.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field

from fakekafka.model.clock import Clock, SystemClock
from fakekafka.model.config import TOPIC_CONFIGS, BrokerConfig, ConfigSource, InvalidConfig
from fakekafka.model.group import GroupConfig, GroupCoordinator
from fakekafka.model.log import PartitionLog
from fakekafka.model.producers import PartitionProducers, ProducerIds
from wire import ErrorCode
from wire.records import InvalidBatch, iter_batches

__all__ = ["ApiError", "AppendResult", "Broker", "ClusterState", "Partition", "Topic", "validate_topic_name"]

MAX_TOPIC_NAME = 249
_LEGAL = re.compile(r"^[a-zA-Z0-9._-]+$")
OFFSETS_TOPIC = "__consumer_offsets"
INTERNAL_TOPICS = frozenset({OFFSETS_TOPIC, "__transaction_state"})


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


class ApiError(Exception):
    """An expected failure of a client request, carried to the response as a Kafka error code."""

    def __init__(self, code: ErrorCode, message: str | None = None) -> None:
        super().__init__(message or code.name)
        self.code = code
        self.message = message


def validate_topic_name(name: str) -> None:
    if not name:
        raise ApiError(ErrorCode.INVALID_TOPIC_EXCEPTION, "Topic name is illegal, it can't be empty")
    if name in (".", ".."):
        raise ApiError(ErrorCode.INVALID_TOPIC_EXCEPTION, "Topic name cannot be \".\" or \"..\"")
    if len(name) > MAX_TOPIC_NAME:
        raise ApiError(ErrorCode.INVALID_TOPIC_EXCEPTION,
                       f"Topic name is illegal, it can't be longer than {MAX_TOPIC_NAME} characters, "
                       f"topic name: {name}")
    if not _LEGAL.match(name):
        raise ApiError(ErrorCode.INVALID_TOPIC_EXCEPTION,
                       f"Topic name \"{name}\" is illegal, it contains a character other than "
                       "ASCII alphanumerics, '.', '_' and '-'")


@dataclass
class Broker:
    node_id: int
    host: str
    port: int
    rack: str | None = None


@dataclass
class Partition:
    topic: Topic
    index: int
    replicas: list[int]
    leader_id: int
    leader_epoch: int = 0
    log: PartitionLog = field(default_factory=PartitionLog)
    producers: PartitionProducers = field(default_factory=PartitionProducers)

    @property
    def isr(self) -> list[int]:
        return list(self.replicas)


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
class AppendResult:
    error: ErrorCode = ErrorCode.NONE
    base_offset: int = -1
    log_append_time: int = -1
    log_start_offset: int = -1
    message: str | None = None


class ClusterState:
    def __init__(self, config: BrokerConfig | None = None, clock: Clock | None = None,
                 brokers: list[Broker] | None = None) -> None:
        self.config = config or BrokerConfig()
        self.clock: Clock = clock or SystemClock()
        self.brokers: dict[int, Broker] = {b.node_id: b for b in (brokers or [Broker(1, "127.0.0.1", 9092)])}
        self.controller_id = min(self.brokers)
        self.topics: dict[str, Topic] = {}
        self.topics_by_id: dict[uuid.UUID, Topic] = {}
        self.producer_ids = ProducerIds()
        self._change_listeners: list[Callable[[object], None]] = []
        self._placement = 0
        c = self.config
        self.groups = GroupCoordinator(self.clock, GroupConfig(
            min_session_timeout_ms=c.group_min_session_timeout_ms,
            max_session_timeout_ms=c.group_max_session_timeout_ms,
            initial_rebalance_delay_ms=c.group_initial_rebalance_delay_ms,
            offsets_retention_ms=c.offsets_retention_minutes * 60_000), notify=self.notify)

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
        """Fires every timeout the clock has passed (sessions, rebalances, retention)."""
        self.groups.tick()

    def next_deadline(self) -> int | None:
        return self.groups.next_deadline()

    # --- coordinators ----------------------------------------------------------------------------
    def offsets_partition_for(self, group_id: str) -> int:
        return kafka_abs(java_string_hash(group_id)) % self.config.offsets_topic_num_partitions

    def coordinator_for(self, group_id: str) -> Broker:
        """The leader of the group's `__consumer_offsets` partition (created on first use, as Kafka does)."""
        topic = self.topics.get(OFFSETS_TOPIC)
        if topic is None:
            topic = self.create_topic(OFFSETS_TOPIC, self.config.offsets_topic_num_partitions,
                                      min(3, len(self.brokers)), configs={"cleanup.policy": "compact",
                                                                         "segment.bytes": "104857600"})
        return self.brokers[topic.partitions[self.offsets_partition_for(group_id)].leader_id]

    # --- topics ------------------------------------------------------------------------------
    def partition(self, topic: str, index: int) -> Partition | None:
        t = self.topics.get(topic)
        if t is None or not 0 <= index < len(t.partitions):
            return None
        return t.partitions[index]

    def _assign(self, count: int, replication_factor: int, start: int = 0) -> list[list[int]]:
        """Round-robin replica placement with a moving start, as Kafka spreads leaders."""
        ids = sorted(self.brokers)
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
            if replication_factor > len(self.brokers):
                raise ApiError(ErrorCode.INVALID_REPLICATION_FACTOR,
                               f"Unable to replicate the partition {replication_factor} time(s): The target "
                               f"replication factor of {replication_factor} cannot be reached because only "
                               f"{len(self.brokers)} broker(s) are registered.")
            replica_lists = self._assign(num_partitions, replication_factor)
        clean = self._validate_configs(configs or {})
        topic = Topic(name, uuid.uuid4(), [], clean, is_internal=name in INTERNAL_TOPICS)
        if validate_only:
            topic.partitions = [Partition(topic, i, r, r[0]) for i, r in enumerate(replica_lists)]
            return topic
        topic.partitions = [Partition(topic, i, r, r[0]) for i, r in enumerate(replica_lists)]
        self._placement += 1
        self.topics[name] = topic
        self.topics_by_id[topic.topic_id] = topic
        return topic

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
        self.groups.remove_partitions(name)
        return topic

    def create_partitions(self, name: str, count: int, assignments: list[list[int]] | None = None,
                          *, validate_only: bool = False) -> None:
        topic = self.topics.get(name)
        if topic is None:
            raise ApiError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"The topic '{name}' does not exist.")
        current = len(topic.partitions)
        if count < current:
            raise ApiError(ErrorCode.INVALID_PARTITIONS,
                           f"Topic currently has {current} partitions, which is higher than the requested {count}.")
        if count == current:
            raise ApiError(ErrorCode.INVALID_PARTITIONS, f"Topic already has {current} partitions.")
        added = count - current
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

    # --- configs -----------------------------------------------------------------------------
    def topic_config(self, topic: Topic, name: str) -> tuple[str | None, ConfigSource, str | None]:
        if name in topic.configs:
            return topic.configs[name], ConfigSource.TOPIC_CONFIG, TOPIC_CONFIGS[name].broker_synonym
        return self.config.topic_default(name)

    def topic_config_int(self, topic: Topic, name: str) -> int:
        value = self.topic_config(topic, name)[0]
        return int(value) if value is not None else 0

    # --- produce -----------------------------------------------------------------------------
    def append(self, partition: Partition, records: bytes | None) -> AppendResult:
        """Validates and stores one partition's data from a Produce request (v3+: exactly one batch)."""
        log = partition.log
        topic = partition.topic
        if not records:
            return AppendResult(ErrorCode.INVALID_RECORD, message="Produce request must carry a record batch")
        max_bytes = self.topic_config_int(topic, "max.message.bytes")
        try:
            batches = iter_batches(records)
        except InvalidBatch as e:
            return AppendResult(ErrorCode.CORRUPT_MESSAGE if e.corrupt else ErrorCode.INVALID_RECORD,
                                message=str(e))
        if len(batches) != 1:
            return AppendResult(ErrorCode.INVALID_RECORD, message="Produce requests with version 3 and up are "
                                "only allowed to contain exactly one record batch per partition")
        header, batch = batches[0]
        if len(batch) > max_bytes:
            return AppendResult(ErrorCode.MESSAGE_TOO_LARGE,
                                message=f"The batch of {len(batch)} bytes exceeds max.message.bytes {max_bytes}")
        if header.is_control:
            return AppendResult(ErrorCode.INVALID_RECORD, message="Producers may not write control batches")
        now = self.clock.now_ms()
        stamp_type = self.topic_config(topic, "message.timestamp.type")[0]
        log_append = stamp_type == "LogAppendTime"
        if not log_append:
            before = self.topic_config_int(topic, "message.timestamp.before.max.ms")
            after = self.topic_config_int(topic, "message.timestamp.after.max.ms")
            if header.max_timestamp >= 0 and (now - header.base_timestamp > before
                                              or header.max_timestamp - now > after):
                return AppendResult(ErrorCode.INVALID_TIMESTAMP,
                                    message="Timestamp is out of range of message.timestamp.before/after.max.ms")
        idempotent = header.producer_id >= 0 and header.base_sequence >= 0
        if idempotent:
            check = partition.producers.check(header)
            if check.duplicate_of is not None:
                return AppendResult(ErrorCode.NONE, check.duplicate_of, check.duplicate_log_append_time,
                                    log.log_start_offset)
            if check.error != ErrorCode.NONE:
                return AppendResult(check.error, message=check.message)
        append_time = now if log_append else None
        base = log.append(batch, header, partition.leader_epoch, append_time)
        if idempotent:
            partition.producers.record(header, base, append_time if append_time is not None else -1)
        self.notify(partition)
        return AppendResult(ErrorCode.NONE, base, append_time if append_time is not None else -1, log.log_start_offset)
