"""Log management: retention, compaction and DeleteRecords moving logs' starts and rewriting their segments, and
when the periodic ones run, as Kafka's LogManager and LogCleaner schedule them."""

from __future__ import annotations

from fakekafka.model.cleaner import clean, cleanable
from fakekafka.model.clock import Clock
from fakekafka.model.config import BrokerConfig
from fakekafka.model.errors import ApiError
from fakekafka.model.events import ClusterEvents
from fakekafka.model.log import StorageError
from fakekafka.model.metadata import Broker, Partition, Topic
from fakekafka.model.replication import Replication
from fakekafka.model.topic_configs import TopicConfigs, policies
from fakekafka.wire import ErrorCode

__all__ = ["RETENTION_INITIAL_DELAY_MS", "LogManager"]

RETENTION_INITIAL_DELAY_MS = 30_000
"""By default the first retention check comes this long after the cluster starts, then one every
log.retention.check.interval.ms (Kafka's LogManager schedules it so: log.initial.task.delay.ms, an internal
broker config whose default this is, then the interval)."""


class LogManager:
    def __init__(self, config: BrokerConfig, clock: Clock, brokers: dict[int, Broker], topics: dict[str, Topic],
                 events: ClusterEvents, configs: TopicConfigs, replication: Replication) -> None:
        self.config, self.clock, self.brokers, self.topics = config, clock, brokers, topics
        self.events, self.configs, self.replication = events, configs, replication
        self._next_retention_check = clock.now_ms() + int(
            config.value("log.initial.task.delay.ms")[0] or RETENTION_INITIAL_DELAY_MS)
        self._next_cleaner_run: dict[int, int] = {n: clock.now_ms() + self._cleaner_backoff(n) for n in brokers}
        """node id -> when its log cleaner wakes next (it found nothing at start-up and backs off)."""

    def tick(self) -> None:
        """The retention check and each broker's log cleaner, when they are due."""
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

    def cleaner_backoffs(self) -> dict[int, int]:
        return {n: self._cleaner_backoff(n) for n in self.brokers}

    def broker_configs_changed(self, backoffs_before: dict[int, int]) -> None:
        """Kafka restarts its cleaner threads on a new cleaner config: they look for work at once."""
        for n, backoff in backoffs_before.items():
            if self._cleaner_backoff(n) != backoff:
                self._next_cleaner_run[n] = self.clock.now_ms()

    # --- retention ---------------------------------------------------------------------------
    def apply_retention(self) -> None:
        """One retention check, as Kafka's LogManager runs every log.retention.check.interval.ms: on each
        partition whose cleanup.policy has "delete", retention.ms and retention.bytes (or their broker
        synonyms, as the leader sees them) move the log start past whole segments; followers follow."""
        now = self.clock.now_ms()
        for topic in list(self.topics.values()):
            if "delete" not in policies(self.configs.topic_config(topic, "cleanup.policy")[0]):
                continue
            for partition in topic.partitions:
                if not partition.online:
                    continue
                log = partition.log
                leader = partition.leader_id
                start = log.retention_start(now, self.configs.topic_config_int(topic, "retention.ms", leader),
                                            self.configs.topic_config_int(topic, "retention.bytes", leader))
                if start <= log.log_start_offset:
                    continue
                try:
                    log.delete_before(start)
                except StorageError:  # reported once; its files keep the segments until a check succeeds
                    continue
                self.events.event("retention", topic=topic.name, partition=partition.index, log_start_offset=start)
                if len(partition.replicas) > 1:
                    self.replication.replicate(partition)
                self.events.notify(partition)

    # --- compaction ------------------------------------------------------------------------------
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
            if "compact" not in policies(self.configs.topic_config(topic, "cleanup.policy")[0]):
                continue
            for partition in topic.partitions:
                for holder, log in partition.logs.items():
                    broker = self.brokers.get(holder)
                    if broker is None or not broker.alive or node_id not in (None, holder):
                        continue
                    settings = self.configs.cleaner_settings(topic, holder)
                    if settings.max_desired_map_size < 1:  # Kafka's cleaner threads fail to start so
                        continue
                    to_clean = cleanable(log, now, settings)
                    if to_clean.cleanable_bytes <= 0 or (topic_name is None and not to_clean.due(settings)):
                        continue
                    try:
                        cleaned_up_to = clean(log, now, settings, to_clean)
                    except StorageError:  # reported once; the replica's files were failed (their old segments
                        continue          # stay whole)
                    cleaned += 1
                    if holder == partition.leader_id:
                        self.events.event("compaction", topic=topic.name, partition=partition.index,
                                          cleaned_up_to=cleaned_up_to)
        return cleaned

    def force_compaction(self, topic_name: str) -> int:
        """Cleans every partition of a compacted topic now (see run_cleaner); UNKNOWN_TOPIC_OR_PARTITION for
        an unknown topic, INVALID_CONFIG for one whose cleanup.policy lacks "compact"."""
        topic = self.topics.get(topic_name)
        if topic is None:
            raise ApiError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"Topic {topic_name} does not exist")
        policy = self.configs.topic_config(topic, "cleanup.policy")[0]
        if "compact" not in policies(policy):
            raise ApiError(ErrorCode.INVALID_CONFIG, f"Topic {topic_name} is not compacted (cleanup.policy={policy})")
        return self.run_cleaner(topic_name)

    # --- deleting records ----------------------------------------------------------------------
    def delete_records(self, partition: Partition, offset: int) -> int:
        """DeleteRecords on the partition's leader, as Kafka's Partition.deleteRecordsOnLeader: -1 means the
        high watermark; past it is OFFSET_OUT_OF_RANGE; a topic whose cleanup.policy lacks "delete" refuses.
        Moves the log start (never back) and returns it, the low watermark; live followers take it at once."""
        if "delete" not in policies(self.configs.topic_config(partition.topic, "cleanup.policy")[0]):
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
            self.replication.replicate(partition)
        self.events.notify(partition)  # a parked fetch below the new start is answered OFFSET_OUT_OF_RANGE now
        return log.log_start_offset
