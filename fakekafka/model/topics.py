"""The topic registry: creating and deleting topics and adding partitions, with Kafka 4.4's controller's checks
and words, and placing their replicas on brokers."""

from __future__ import annotations

import uuid
from collections.abc import Callable

from fakekafka.model.config import BrokerConfig, ConfigSpec, InvalidConfig
from fakekafka.model.errors import ApiError
from fakekafka.model.internal_topics import INTERNAL_TOPICS
from fakekafka.model.log import StorageError
from fakekafka.model.metadata import Broker, Partition, Topic, find_partition, validate_topic_name
from fakekafka.model.ports import ClusterStorage
from fakekafka.wire import ErrorCode

__all__ = ["TopicRegistry"]


class TopicRegistry:
    def __init__(self, config: BrokerConfig, brokers: dict[int, Broker], topics: dict[str, Topic],
                 topics_by_id: dict[uuid.UUID, Topic], place_replicas: Callable[[list[Partition]], None],
                 metadata_changed: Callable[[], None], topic_deleted: Callable[[str], None]) -> None:
        self.config, self.brokers, self.topics, self.topics_by_id = config, brokers, topics, topics_by_id
        self.place_replicas = place_replicas
        self.metadata_changed = metadata_changed
        """Called when partitions were added (consumer group assignments look again)."""
        self.topic_deleted = topic_deleted
        """Called with a deleted topic's name (the coordinators forget its partitions)."""
        self.storage: ClusterStorage | None = None
        self.placement = 0
        """Where round-robin replica placement starts next (it moves by one per topic, as Kafka spreads
        leaders); kept by the data dir."""
        self._indexed = -1
        """len(topics) when the two indexes below were last made or kept up to date (-1: never): topics added
        around the registry (a data dir's recovery) make them again, so a create costs the same at any size."""
        self._by_collision: dict[str, str] = {}
        """A name with '.' as '_' -> the topic's name (Kafka refuses names that collide so)."""
        self._held = 0
        """Partitions of the non-internal topics (held to `max_partitions`)."""

    def _indexes(self) -> None:
        if self._indexed != len(self.topics):
            self._by_collision = {name.replace(".", "_"): name for name in self.topics}
            self._held = sum(len(t.partitions) for t in self.topics.values() if not t.is_internal)
            self._indexed = len(self.topics)

    def partition(self, topic: str, index: int) -> Partition | None:
        return find_partition(self.topics, topic, index)

    def _assign(self, count: int, replication_factor: int, start: int = 0) -> list[list[int]]:
        """Round-robin replica placement with a moving start, as Kafka spreads leaders."""
        ids = sorted(b.node_id for b in self.brokers.values() if b.alive)
        out = []
        for p in range(count):
            first = (self.placement + start + p) % len(ids)
            out.append([ids[(first + r) % len(ids)] for r in range(replication_factor)])
        return out

    def create_topic(self, name: str, num_partitions: int = -1, replication_factor: int = -1,
                     assignments: dict[int, list[int]] | None = None, configs: dict[str, str | None] | None = None,
                     *, validate_only: bool = False, admit: Callable[[int], None] | None = None) -> Topic:
        """`admit` is asked for the partitions once the topic is valid (the controller mutation quota: it raises
        THROTTLING_QUOTA_EXCEEDED), before anything is made; validate_only asks it too, as Kafka's controller."""
        validate_topic_name(name)
        if name in self.topics:
            raise ApiError(ErrorCode.TOPIC_ALREADY_EXISTS, f"Topic '{name}' already exists.")
        self._indexes()
        collision = name.replace(".", "_")
        existing = self._by_collision.get(collision)
        if existing is not None and existing in self.topics:
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
            alive = sum(1 for b in self.brokers.values() if b.alive)
            if replication_factor > alive:
                raise ApiError(ErrorCode.INVALID_REPLICATION_FACTOR,
                               f"Unable to replicate the partition {replication_factor} time(s): The target "
                               f"replication factor of {replication_factor} cannot be reached because only "
                               f"{alive} broker(s) are registered or some brokers have all their log directories "
                               f"cordoned.")  # Kafka 4.4's words (KIP-1066 added the cordoned clause)
            self._check_partition_ceiling(name, num_partitions)
            replica_lists = self._assign(num_partitions, replication_factor)
        clean = self._validate_configs(configs or {}, self.config.catalog.topic)
        if admit is not None:
            admit(len(replica_lists))
        topic = Topic(name, uuid.uuid4(), [], clean, is_internal=name in INTERNAL_TOPICS)
        topic.partitions = [Partition(topic, i, r, r[0]) for i, r in enumerate(replica_lists)]
        if validate_only:
            return topic
        self.place_replicas(topic.partitions)
        self.placement += 1
        self.topics[name] = topic
        self.topics_by_id[topic.topic_id] = topic
        if self.storage is not None:  # its directories first: a crash before the metadata names it leaves
            try:  # directories the restart deletes
                for partition in topic.partitions:
                    self.storage.attach(partition)
                self.storage.save(topics=(name,))
            except StorageError as e:  # not durable, so not made: refused, its directories gone
                del self.topics[name]
                del self.topics_by_id[topic.topic_id]
                self.placement -= 1
                self.storage.drop_topic(topic)
                raise ApiError(ErrorCode.KAFKA_STORAGE_ERROR, f"Topic '{name}' was not created: {e}") from None
        self._by_collision[collision] = name
        if not topic.is_internal:
            self._held += len(topic.partitions)
        self._indexed = len(self.topics)
        self.metadata_changed()
        return topic

    def _check_partition_ceiling(self, name: str, added: int) -> None:
        """`max_partitions` (a test's ceiling on the cluster's partitions; internal topics are the broker's
        own and not held to it): POLICY_VIOLATION, the error Kafka's controller gives a request that would
        make too many partitions at once."""
        if name in INTERNAL_TOPICS:
            return
        limit = self.config.max_partitions
        self._indexes()
        held = self._held
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
    def _validate_configs(configs: dict[str, str | None], specs: dict[str, ConfigSpec]) -> dict[str, str]:
        """A new topic's configs checked against the release's topic configs (`specs`), in Kafka's words."""
        clean: dict[str, str] = {}
        for key, value in configs.items():
            spec = specs.get(key)
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

    def delete_topic(self, name: str, admit: Callable[[int], None] | None = None) -> Topic:
        """`admit`: as create_topic's, asked for the topic's partitions."""
        topic = self.topics.get(name)
        if topic is None:
            raise ApiError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, "This server does not host this topic-partition.")
        if topic.is_internal:
            raise ApiError(ErrorCode.TOPIC_AUTHORIZATION_FAILED, f"Internal topic {name} cannot be deleted.")
        if admit is not None:
            admit(len(topic.partitions))
        self._indexes()
        del self.topics[name]
        del self.topics_by_id[topic.topic_id]
        if self.storage is not None:  # the metadata first: directories it no longer names go at a restart
            try:
                self.storage.save(topics=(name,))
            except StorageError as e:  # the deletion is not durable: not made
                self.topics[name] = topic
                self.topics_by_id[topic.topic_id] = topic
                raise ApiError(ErrorCode.KAFKA_STORAGE_ERROR, f"Topic '{name}' was not deleted: {e}") from None
            self.storage.drop_topic(topic)
        if self._by_collision.get(name.replace(".", "_")) == name:
            del self._by_collision[name.replace(".", "_")]
        if not topic.is_internal:
            self._held -= len(topic.partitions)
        self._indexed = len(self.topics)
        self.topic_deleted(name)
        return topic

    def create_partitions(self, name: str, count: int, assignments: list[list[int]] | None = None,
                          *, validate_only: bool = False, admit: Callable[[int], None] | None = None) -> None:
        """`admit`: as create_topic's, asked for the partitions added."""
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
        if admit is not None:
            admit(added)
        if assignments is not None:
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
                self.storage.save(topics=(name,))
            except StorageError as e:  # not durable, so not made
                for partition in topic.partitions[current:]:
                    for node_id in list(partition.logs):
                        self.storage.detach(partition, node_id)
                del topic.partitions[current:]
                raise ApiError(ErrorCode.KAFKA_STORAGE_ERROR, f"Partitions of '{name}' were not created: {e}") \
                    from None
        if not topic.is_internal:
            self._held += added
        self.metadata_changed()
