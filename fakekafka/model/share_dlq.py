"""Share-group dead-letter queues (KIP-1191), as Kafka 4.4's share-partition leader writes them.

A record a share group archives because a client rejected it, or because it ran out of delivery attempts
(`share.delivery.count.limit`), is written to the group's dead-letter topic (Kafka 4.4 does so from
`share.version` 2, which fakekafka always finalizes) when the group config `errors.deadletterqueue.topic.name`
names one. Kafka checks the topic first and drops the dead letter (the record stays archived, nothing written)
when the name is empty, starts with `__`, lacks the broker's `errors.deadletterqueue.topic.name.prefix` (`dlq.` by
default), names a topic that is missing while `errors.deadletterqueue.auto.create.topics.enable` is off, or a topic
without the topic config
`errors.deadletterqueue.group.enable=true`. An auto-created topic gets that config and
`message.timestamp.type=CreateTime`, with the broker's default partitions and replication factor.

Each dead letter is one record in partition (source partition mod the topic's partitions), stamped with the
broker's time, carrying the headers `__dlq.errors.topic`, `__dlq.errors.partition`, `__dlq.errors.offset`,
`__dlq.errors.group`, `__dlq.errors.delivery.count` and `__dlq.errors.message` (all UTF-8 text), and the
original key and value only when the group config `errors.deadletterqueue.copy.record.enable` is true (null key
and value otherwise). Kafka writes through an inter-broker produce and holds the SPSO until it ends; here the write
is immediate, before the share-partition's state is persisted.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

from fakekafka.model.clock import Clock
from fakekafka.model.errors import ApiError
from fakekafka.model.metadata import Partition, Topic
from fakekafka.model.share import DeadLetter, SharePartition
from fakekafka.model.topic_configs import TopicConfigs
from fakekafka.wire.records import InvalidBatch, Record, build_batch, decode_batch

__all__ = ["HEADERS", "ShareDeadLetters"]

HEADERS = (
    "__dlq.errors.topic",
    "__dlq.errors.partition",
    "__dlq.errors.offset",
    "__dlq.errors.group",
    "__dlq.errors.delivery.count",
    "__dlq.errors.message",
)
"""The headers of a dead letter, in Kafka 4.4's order."""

TOPIC_NAME = "errors.deadletterqueue.topic.name"
COPY_RECORD = "errors.deadletterqueue.copy.record.enable"
TOPIC_ENABLE = "errors.deadletterqueue.group.enable"
PREFIX = "errors.deadletterqueue.topic.name.prefix"
AUTO_CREATE = "errors.deadletterqueue.auto.create.topics.enable"


class DeadLetterCluster(Protocol):
    """What the dead-letter writer needs of the cluster."""

    @property
    def clock(self) -> Clock: ...
    @property
    def topics(self) -> dict[str, Topic]: ...
    @property
    def topic_configs(self) -> TopicConfigs: ...
    @property
    def group_configs(self) -> dict[str, dict[str, str]]: ...

    def partition(self, topic: str, index: int) -> Partition | None: ...
    def append_internal(self, partition: Partition, batch: bytes, now: int) -> None: ...
    def create_topic(
        self,
        name: str,
        num_partitions: int = -1,
        replication_factor: int = -1,
        assignments: dict[int, list[int]] | None = None,
        configs: dict[str, str | None] | None = None,
    ) -> Topic: ...
    def event(self, kind: str, **details: object) -> None: ...


class ShareDeadLetters:
    """Drains share-partitions' dead letters into their groups' dead-letter topics (see the module docstring)."""

    def __init__(self, cluster: DeadLetterCluster, broker_config: Callable[[str], str | None]) -> None:
        self.cluster = cluster
        self.broker_config = broker_config

    def topic_for(self, group_id: str) -> tuple[Topic | None, str | None]:
        """The group's dead-letter topic (created if Kafka would), or None and Kafka's words for why not."""
        name = (self.cluster.group_configs.get(group_id, {}).get(TOPIC_NAME) or "").strip()
        if not name:
            return None, f"DLQ topic is not configured for share group {group_id}."
        if name.startswith("__"):
            return None, f"Configured DLQ topic name in share group: {group_id} cannot start with __, topic: {name}."
        prefix = self.broker_config(PREFIX)
        prefix = "dlq." if prefix is None else prefix
        if prefix and not name.startswith(prefix):
            return None, (
                "Configured DLQ topic name does not comply with the DLQ topic prefix in share group: "
                f"{group_id}, topic: {name}, prefix: {prefix}."
            )
        topic = self.cluster.topics.get(name)
        if topic is None:
            if (self.broker_config(AUTO_CREATE) or "false").lower() != "true":
                return None, (
                    "DLQ topic does not exist and auto create is disabled on cluster for share group: "
                    f"{group_id}, topic: {name}."
                )
            try:
                topic = self.cluster.create_topic(
                    name, configs={TOPIC_ENABLE: "true", "message.timestamp.type": "CreateTime"}
                )
            except ApiError as e:
                return None, f"Unable to create DLQ topic for {group_id} using DLQ topic {name}: {e.message}."
        enabled = self.cluster.topic_configs.topic_config(topic, TOPIC_ENABLE)[0]
        if (enabled or "false").lower() != "true":
            return None, f"DLQ is not enabled on configured DLQ topic for share group: {group_id}, topic: {name}."
        return topic, None

    def original(self, topic: str, index: int, offset: int) -> Record | None:
        """The record at `offset` of the source partition's leader log; None once the log no longer has it (the
        dead letter then has headers only, as Kafka's when it cannot read the record)."""
        partition = self.cluster.partition(topic, index)
        if partition is None:
            return None
        for batch in partition.log.read(offset, 1, min_one=True):
            try:
                found = decode_batch(bytes(batch))
            except InvalidBatch:
                return None
            return next((r for r in found.records if r.offset == offset), None)
        return None

    def route(self, sp: SharePartition) -> int:
        """Writes the share-partition's pending dead letters; how many were written. Pending ones are dropped
        either way, as Kafka drops a dead letter it cannot write (the record stays archived)."""
        letters, sp.dead_letters = sp.dead_letters, []
        if not letters:
            return 0

        def dropped(why: str) -> int:
            self.cluster.event("share_dlq_dropped", group=sp.group_id, topic=sp.topic, partition=sp.partition,
                               records=len(letters), why=why)
            return 0

        topic, why = self.topic_for(sp.group_id)
        if topic is None:
            return dropped(why) if why and "is not configured" not in why else 0
        index = sp.partition % len(topic.partitions)
        partition = self.cluster.partition(topic.name, index)
        if partition is None or not partition.online:
            return dropped(f"DLQ topic partition {topic.name}-{index} has no leader.")
        copy = (self.cluster.group_configs.get(sp.group_id, {}).get(COPY_RECORD) or "false").lower() == "true"
        now = self.cluster.clock.now_ms()
        records = [
            self._record(sp, letter, self.original(sp.topic, sp.partition, letter.offset) if copy else None, now)
            for letter in letters
        ]
        self.cluster.append_internal(partition, build_batch(records), now)
        return len(records)

    @staticmethod
    def _record(sp: SharePartition, letter: DeadLetter, original: Record | None, now: int) -> dict[str, object]:
        values = (
            sp.topic,
            str(sp.partition),
            str(letter.offset),
            sp.group_id,
            str(letter.delivery_count),
            letter.cause,
        )
        return {
            "key": original.key if original is not None else None,
            "value": original.value if original is not None else None,
            "timestamp": now,
            "headers": [(k, v.encode()) for k, v in zip(HEADERS, values, strict=True)],
        }
