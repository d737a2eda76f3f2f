"""The registry's log: the cluster's compacted `_schemas` topic, as Confluent's KafkaStore keeps it.

Records go through the model's ordinary produce path (`ClusterState.append`, acks=all), so they are validated,
replicated, written to a data dir and compacted like any producer's; they are read back from the leader's log.
Every call here runs where the cluster's model runs (its event loop).
"""

from __future__ import annotations

from fakekafka.model.cluster import ClusterState
from fakekafka.model.errors import ApiError
from fakekafka.model.metadata import Partition
from fakekafka.registry.errors import RegistryError
from fakekafka.wire import ErrorCode
from fakekafka.wire.records import build_batch, decode_batch

__all__ = ["SCHEMAS_TOPIC", "TopicLog"]

SCHEMAS_TOPIC = "_schemas"
"""Confluent's `kafkastore.topic` default."""


class TopicLog:
    """A SchemaLog on partition 0 of `_schemas`, created (one partition, cleanup.policy=compact, replication
    factor up to 3: Confluent's `kafkastore.topic.replication.factor`) when missing."""

    def __init__(self, state: ClusterState, topic: str = SCHEMAS_TOPIC) -> None:
        self.state = state
        self.topic = topic

    def _partition(self, create: bool) -> Partition | None:
        partition = self.state.partition(self.topic, 0)
        if partition is None and create:
            replicas = min(3, len(self.state.alive_brokers()))
            try:
                self.state.create_topic(self.topic, 1, replicas, configs={"cleanup.policy": "compact"})
            except ApiError as e:
                raise RegistryError.store_error(f"Error while creating the {self.topic} topic: {e}") from None
            partition = self.state.partition(self.topic, 0)
        return partition

    def append(self, records: list[tuple[bytes, bytes | None]]) -> None:
        partition = self._partition(create=True)
        if partition is None or not partition.online:
            raise RegistryError.store_error(f"Error while writing to the {self.topic} topic: its partition has no "
                                            "leader")
        now = self.state.clock.now_ms()
        batch = build_batch([{"key": k, "value": v, "timestamp": now} for k, v in records])
        result = self.state.append(partition, batch, acks=-1)
        if result.error != ErrorCode.NONE:
            raise RegistryError.store_error(f"Error while writing to the {self.topic} topic: {result.error.name}"
                                            + (f": {result.message}" if result.message else ""))
        self.state.notify(partition)  # consumers of _schemas waiting in a Fetch

    def read(self, offset: int) -> list[tuple[int, bytes | None, bytes | None]]:
        partition = self._partition(create=False)
        if partition is None:
            return []
        log = partition.log
        start = max(offset, log.log_start_offset)
        out = []
        for batch in log.read(start, 1 << 62, min_one=True, upper=log.log_end_offset):
            decoded = decode_batch(batch)
            if decoded.header.is_control:
                continue
            out.extend((r.offset, r.key, r.value) for r in decoded.records if r.offset >= start)
        return out

    def ensure(self) -> None:
        """Creates the topic now, as Confluent's registry does when it starts."""
        self._partition(create=True)
