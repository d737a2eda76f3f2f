"""Replication: followers fetching from leaders, the ISR and the high watermark, as Kafka's ReplicaManager and
Partition move them. Leaders and elections are leadership.py's."""

from __future__ import annotations

import contextlib
from bisect import bisect_left
from collections.abc import Callable

from fakekafka.model.clock import Clock
from fakekafka.model.config import BrokerConfig
from fakekafka.model.errors import ApiError
from fakekafka.model.events import ClusterEvents
from fakekafka.model.log import StorageError
from fakekafka.model.metadata import Broker, Partition, Topic, find_partition
from fakekafka.model.topic_configs import TopicConfigs
from fakekafka.wire import ErrorCode

__all__ = ["Replication"]


class Replication:
    def __init__(self, config: BrokerConfig, clock: Clock, brokers: dict[int, Broker], topics: dict[str, Topic],
                 events: ClusterEvents, configs: TopicConfigs, isr_changed: Callable[[Partition], None]) -> None:
        self.config, self.clock, self.brokers, self.topics = config, clock, brokers, topics
        self.events, self.configs = events, configs
        self.isr_changed = isr_changed
        """Called after each ISR update (a reassignment completes once its new replicas are all in sync)."""
        self._watched: dict[int, Partition] = {}
        """Replicated partitions `tick` visits, by id: those with something to do (a follower behind, one in the ISR
        not fetching). The rest are quiet, their followers caught up, until the leader's log grows (`replicate`
        watches it then) or the cluster changes (`_look_again`): idle ticks cost nothing per partition."""
        self._seen: tuple[int, int] = (-1, -1)
        """(metadata changes, events) when every replicated partition was last looked at."""

    def fetching(self, partition: Partition, follower: int) -> bool:
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
        for follower in partition.replicas:
            if follower == partition.leader_id or not self.fetching(partition, follower):
                continue
            # as this follower's broker sees them (its dynamic configs), with its own jitter seed
            segment_configs: dict[str, int] | None = None
            flog = partition.logs[follower]
            try:
                flog.truncate_to(flog.divergence_from(leader_log))
                if flog.log_end_offset < leader_log.log_start_offset:
                    flog.delete_before(leader_log.log_start_offset)  # too far behind: start again at the leader's
                i = bisect_left(leader_log.last_offsets, flog.log_end_offset)
                while i < len(leader_log.batches) and leader_log.appended_at[i] + lag <= now:
                    if segment_configs is None:
                        segment_configs = self.configs.segment_configs(partition, follower)
                    flog.append_replica(leader_log.batches[i], leader_log.base_offsets[i],
                                        leader_log.last_offsets[i], leader_log.max_timestamps[i],
                                        leader_log.batch_epochs[i], now, **segment_configs)
                    i += 1
            except StorageError:  # it stays where its files end, falling out of the ISR as a follower that lags
                pass
            if flog.log_end_offset >= leader_log.log_end_offset:
                partition.last_caught_up[follower] = now
            hw = min(flog.log_end_offset, leader_log.high_watermark)
            if hw > flog.high_watermark:  # a consumer's fetch parked at this follower (Fetch v11+) reads on
                flog.high_watermark = hw
                self.events.notify(partition)
            else:
                flog.high_watermark = hw
            with contextlib.suppress(StorageError):
                flog.delete_before(min(leader_log.log_start_offset, flog.high_watermark))
        self._update_isr(partition, now)
        if self._quiet(partition):
            self._watched.pop(id(partition), None)
        else:
            self._watched[id(partition)] = partition

    def _quiet(self, partition: Partition) -> bool:
        """Nothing for a tick to do until the leader's log or the cluster changes: every follower fetching is in
        the ISR with the leader's log (its start and high watermark followed), every one not fetching is out."""
        if not partition.online:
            return True  # until an election, an event
        leader_log = partition.log
        for follower in partition.replicas:
            if follower == partition.leader_id:
                continue
            if not self.fetching(partition, follower):
                if follower in partition.isr:
                    return False  # leaves the ISR after replica.lag.time.max.ms
                continue
            flog = partition.logs[follower]
            if (follower not in partition.isr or flog.log_end_offset != leader_log.log_end_offset
                    or (flog.batches and flog.batches[-1] is not leader_log.batches[-1])
                    or flog.high_watermark != min(flog.log_end_offset, leader_log.high_watermark)
                    or flog.log_start_offset < min(leader_log.log_start_offset, flog.high_watermark)):
                return False
        return True

    def _look_again(self) -> None:
        """After any event or metadata change (a broker killed, isolated or back, leaders, reassignments,
        configs, topics made) every replicated partition is watched again. A quiet one's followers in the ISR
        were fetching and caught up until the first of those changes: that is when they were last caught up."""
        events = self.events.events
        seen = (self.events.metadata_changes, len(events))
        if seen == self._seen:
            return
        since = events[self._seen[1]].time_ms if 0 <= self._seen[1] < len(events) else self.clock.now_ms()
        self._seen = seen
        for topic in self.topics.values():
            for p in topic.partitions:
                if len(p.replicas) < 2 or id(p) in self._watched:
                    continue
                for f in p.isr:
                    if f != p.leader_id and p.last_caught_up.get(f, since) < since:
                        p.last_caught_up[f] = since
                self._watched[id(p)] = p

    def replicate_or_advance(self, partition: Partition) -> None:
        """After the leader's log grew: followers fetch, or with no follower the high watermark moves at once."""
        if len(partition.replicas) > 1:
            self.replicate(partition)
        else:
            self.advance_high_watermark(partition)

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
                self.events.event("isr_shrink", topic=partition.topic.name, partition=partition.index,
                                  replica=follower, isr=list(partition.isr))
        if shrunk:  # as Kafka's maybeShrinkIsr: the high watermark moves first, so a follower left behind (one
            self.advance_high_watermark(partition)  # that cannot write) is not taken straight back in below it
        for follower in partition.replicas:
            if follower in partition.isr or follower == partition.leader_id or not self.fetching(partition, follower):
                continue
            flog = partition.logs[follower]
            epoch_start = leader_log.epochs[-1].start_offset if leader_log.epochs else 0
            if flog.log_end_offset >= leader_log.high_watermark and flog.log_end_offset >= epoch_start:
                partition.isr.append(follower)
                partition.isr.sort(key=partition.replicas.index)
                self.events.event("isr_expand", topic=partition.topic.name, partition=partition.index,
                                  replica=follower, isr=list(partition.isr))
        self.advance_high_watermark(partition)
        self.isr_changed(partition)

    def advance_high_watermark(self, partition: Partition) -> None:
        leader_log = partition.log
        hw = min(partition.logs[r].log_end_offset for r in partition.isr) if partition.isr \
            else leader_log.log_end_offset
        if hw > leader_log.high_watermark:
            leader_log.high_watermark = hw
            self.events.notify(partition)

    def next_deadline(self) -> int | None:
        """When `tick` next has replication work: a lagging batch due, or an ISR member about to expire."""
        lag, max_lag = self.config.replication_lag_ms, self.config.replica_lag_time_max_ms
        times: list[int] = []
        self._look_again()
        for p in self._watched.values():
            if len(p.replicas) < 2 or not p.online:
                continue
            leader_log = p.log
            for f in p.replicas:
                if f == p.leader_id:
                    continue
                flog = p.logs[f]
                if self.fetching(p, f) and flog.log_end_offset < leader_log.log_end_offset:
                    i = bisect_left(leader_log.last_offsets, flog.log_end_offset)
                    if i < len(leader_log.appended_at):
                        times.append(leader_log.appended_at[i] + lag)
                if f in p.isr:
                    times.append(p.last_caught_up.get(f, self.clock.now_ms()) + max_lag + 1)
        return min(times, default=None)

    def tick(self) -> None:
        """A round of follower fetches on every watched partition (the others are quiet)."""
        self._look_again()
        for partition in list(self._watched.values()):
            if self.topics.get(partition.topic.name) is not partition.topic or len(partition.replicas) < 2:
                self._watched.pop(id(partition), None)  # deleted, or no follower left
                continue
            self.replicate(partition)

    def shrink_isr(self, topic: str, index: int, replica: int) -> None:
        """Takes a follower out of the ISR now (and stops its fetching, or it would rejoin at once)."""
        p = find_partition(self.topics, topic, index)
        if p is None:
            raise ApiError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"{topic}-{index} does not exist")
        if replica == p.leader_id or replica not in p.isr:
            raise ApiError(ErrorCode.INVALID_REQUEST, f"broker {replica} is not a follower in the ISR {p.isr} of "
                                                      f"{topic}-{index} (leader {p.leader_id})")
        p.paused.add(replica)
        p.isr.remove(replica)
        self.events.event("isr_shrink", topic=topic, partition=index, replica=replica, isr=list(p.isr), forced=True)
        self.advance_high_watermark(p)

    def expand_isr(self, topic: str, index: int, replica: int) -> None:
        """Lets a follower fetch again; it rejoins the ISR as soon as it has caught up, as in Kafka."""
        p = find_partition(self.topics, topic, index)
        if p is None or replica not in p.replicas:
            raise ApiError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"broker {replica} has no replica of {topic}-{index}")
        p.paused.discard(replica)
        self.replicate(p)
