"""Where the coordinators live: each group or transactional id belongs to a partition of an internal topic
(created on first use, as Kafka does) whose leader is its coordinator; and the coordinators' settings from the
broker configs."""

from __future__ import annotations

from collections.abc import Callable

from fakekafka.model.config import BrokerConfig
from fakekafka.model.consumer_group import ConsumerGroupConfig
from fakekafka.model.internal_topics import OFFSETS_TOPIC, SHARE_STATE_TOPIC, TRANSACTION_STATE_TOPIC, partition_for
from fakekafka.model.metadata import Broker, Topic
from fakekafka.model.share import ShareConfig
from fakekafka.model.streams_group_metadata import StreamsGroupConfig

__all__ = ["CoordinatorPlacement", "consumer_group_config", "share_config"]


class CoordinatorPlacement:
    def __init__(self, config: BrokerConfig, brokers: dict[int, Broker], topics: dict[str, Topic],
                 create_topic: Callable[..., Topic]) -> None:
        self.config, self.brokers, self.topics, self.create_topic = config, brokers, topics, create_topic

    def offsets_partition_for(self, group_id: str) -> int:
        return partition_for(group_id, self.config.offsets_topic_num_partitions)

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
        return partition_for(transactional_id, self.config.transaction_state_log_num_partitions)

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

    def transaction_coordinator_epoch(self, transactional_id: str) -> int:
        topic = self.topics.get(TRANSACTION_STATE_TOPIC)
        return topic.partitions[self.transaction_partition_for(transactional_id)].leader_epoch if topic else 0


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


def streams_group_config(c: BrokerConfig) -> StreamsGroupConfig:
    """The streams group coordinator's settings from the broker's `group.streams.*` configs."""
    def get(name: str) -> int:
        value = c.value(f"group.streams.{name}")[0]
        assert value is not None, name
        return int(value)
    return StreamsGroupConfig(
        session_timeout_ms=get("session.timeout.ms"), heartbeat_interval_ms=get("heartbeat.interval.ms"),
        num_standby_replicas=get("num.standby.replicas"),
        initial_rebalance_delay_ms=get("initial.rebalance.delay.ms"),
        assignment_interval_ms=get("assignment.interval.ms"), task_offset_interval_ms=get("task.offset.interval.ms"),
        acceptable_recovery_lag=get("acceptable.recovery.lag"), max_size=get("max.size"),
        offsets_retention_ms=c.offsets_retention_minutes * 60_000)


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
