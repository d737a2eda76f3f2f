"""A topic's configs as a broker sees them: the topic's own, else the broker's dynamic and static defaults.

Read on every use (nothing is cached), so a config change takes effect at once, as in Kafka.
"""

from __future__ import annotations

from fakekafka.model.cleaner import CleanerSettings, max_desired_map_size
from fakekafka.model.config import OLDER_TIMESTAMP_LIMIT, TOPIC_CONFIGS, BrokerConfig, ConfigSource
from fakekafka.model.metadata import Partition, Topic

__all__ = ["TopicConfigs", "policies"]


def policies(value: str | None) -> list[str]:
    """The policies a `cleanup.policy` value lists ("delete", "compact")."""
    return [p.strip() for p in (value or "").split(",")]


class TopicConfigs:
    def __init__(self, config: BrokerConfig, seed: int = 0) -> None:
        self.config = config
        self.seed = seed
        """What every replica's segment jitter is drawn from (with the replica's name), so that a run repeats."""

    def topic_config(self, topic: Topic, name: str, node_id: int | None = None
                     ) -> tuple[str | None, ConfigSource, str | None]:
        """A topic config's value as broker `node_id` sees it (its per-broker dynamic configs count)."""
        if name in topic.configs:
            spec = self.config.catalog.topic.get(name) or TOPIC_CONFIGS[name]
            return topic.configs[name], ConfigSource.TOPIC_CONFIG, spec.broker_synonym
        return self.config.topic_default(name, node_id)

    def topic_config_int(self, topic: Topic, name: str, node_id: int | None = None) -> int:
        value = self.topic_config(topic, name, node_id)[0]
        return int(value) if value is not None else 0

    def timestamp_bounds(self, topic: Topic, node_id: int | None = None) -> tuple[int, int]:
        """How far before and after the broker's clock a CreateTime record's timestamp may be, as the release the
        cluster stands in for reads its configs: message.timestamp.before/after.max.ms (Kafka 3.6+), each
        message.timestamp.difference.max.ms where left at Long.MAX_VALUE (3.6-3.9), that one alone before 3.6."""
        older = OLDER_TIMESTAMP_LIMIT in self.config.catalog.topic
        bounds = []
        for name in ("message.timestamp.before.max.ms", "message.timestamp.after.max.ms"):
            value = self.topic_config_int(topic, name, node_id) if name in self.config.catalog.topic else None
            if older and (value is None or value == 2**63 - 1):
                value = self.topic_config_int(topic, OLDER_TIMESTAMP_LIMIT, node_id)
            bounds.append(self.topic_config_int(topic, name, node_id) if value is None else value)
        return bounds[0], bounds[1]

    def segment_configs(self, partition: Partition, node_id: int | None = None) -> dict[str, int]:
        """segment.bytes, the roll time, segment.index.bytes, index.interval.bytes and the jitter bound as the
        broker holding the replica sees them, for rolling at append. The roll time is Kafka's
        LogConfig.maxSegmentMs: segment.ms, or max.compaction.lag.ms when a compacted topic's is shorter (its
        active segment rolls so that the cleaner can take it); the jitter is bound by min(segment.jitter.ms,
        segment.ms) (randomSegmentJitter), with the seed of the replica's own draws (the cluster's seed and the
        replica's name: deterministic, unlike a hash())."""
        node = partition.leader_id if node_id is None else node_id
        topic = partition.topic
        segment_ms = roll_ms = self.topic_config_int(topic, "segment.ms", node)
        if "compact" in policies(self.topic_config(topic, "cleanup.policy", node)[0]):
            lag = self.topic_config_int(topic, "max.compaction.lag.ms", node)
            if lag > 0:
                roll_ms = min(lag, segment_ms)
        jitter = min(self.topic_config_int(topic, "segment.jitter.ms", node), segment_ms)
        seed = int.from_bytes(f"{self.seed}:{topic.name}:{partition.index}:{node}".encode()) if jitter > 0 else 0
        return {"segment_bytes": self.topic_config_int(topic, "segment.bytes", node),
                "segment_ms": roll_ms,
                "segment_index_bytes": self.topic_config_int(topic, "segment.index.bytes", node),
                "index_interval_bytes": self.topic_config_int(topic, "index.interval.bytes", node),
                "segment_jitter_ms": jitter, "jitter_seed": seed}

    def min_insync_replicas(self, partition: Partition) -> int:
        return self.topic_config_int(partition.topic, "min.insync.replicas", partition.leader_id)

    def cleaner_settings(self, topic: Topic, node_id: int | None) -> CleanerSettings:
        """A topic's cleaning configs as broker `node_id` sees them, with the size of that broker's offset map."""
        ratio = self.topic_config(topic, "min.cleanable.dirty.ratio", node_id)[0]
        return CleanerSettings(float(ratio) if ratio is not None else 0.5,
                               self.topic_config_int(topic, "min.compaction.lag.ms", node_id),
                               self.topic_config_int(topic, "max.compaction.lag.ms", node_id),
                               self.topic_config_int(topic, "delete.retention.ms", node_id),
                               self.topic_config_int(topic, "segment.bytes", node_id),
                               self.offset_map_size(node_id))

    def offset_map_size(self, node_id: int | None) -> int:
        """How many keys a cleaning round on broker `node_id` maps (log.cleaner.dedupe.buffer.size,
        log.cleaner.threads, log.cleaner.io.buffer.load.factor as it reads them)."""
        def broker(name: str, default: str) -> str:
            return self.config.value(name, node_id)[0] or default
        return max_desired_map_size(int(broker("log.cleaner.dedupe.buffer.size", "134217728")),
                                    int(broker("log.cleaner.threads", "1")),
                                    float(broker("log.cleaner.io.buffer.load.factor", "0.9")))

    def unclean_election(self, topic: Topic) -> bool:
        """Whether the topic lets an out-of-sync replica lead (unclean.leader.election.enable)."""
        return self.topic_config(topic, "unclean.leader.election.enable")[0] == "true"
