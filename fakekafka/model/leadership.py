"""Who leads: partition leader elections, the controller, brokers dying and coming back, and reassignments, as
Kafka's controller decides them. Followers fetching and the ISR are replication.py's."""

from __future__ import annotations

from collections.abc import Callable

from fakekafka.model.clock import Clock
from fakekafka.model.errors import ApiError
from fakekafka.model.events import ClusterEvents
from fakekafka.model.log import EpochEntry, PartitionLog
from fakekafka.model.metadata import Broker, Partition, Topic, find_partition
from fakekafka.model.ports import ClusterStorage
from fakekafka.model.producers import PartitionProducers
from fakekafka.model.replication import Replication
from fakekafka.model.topic_configs import TopicConfigs
from fakekafka.wire import ErrorCode

__all__ = ["Leadership"]


class Leadership:
    def __init__(self, clock: Clock, brokers: dict[int, Broker], topics: dict[str, Topic], events: ClusterEvents,
                 configs: TopicConfigs, replication: Replication,
                 place_replicas: Callable[[list[Partition]], None],
                 leader_changed: Callable[[Partition, int, int, bool], None],
                 back_online: Callable[[], None],
                 replicas_changed: Callable[[Partition], None] = lambda _: None) -> None:
        self.clock, self.brokers, self.topics, self.events = clock, brokers, topics, events
        self.configs, self.replication, self.place_replicas = configs, replication, place_replicas
        self.leader_changed = leader_changed
        """Called with (partition, old leader, new leader, whether the new leader's log is the old one's) once a
        new leader is in place, before it replicates: the coordinators of internal topics load their state."""
        self.back_online = back_online
        """Called after a partition without a leader got one (markers waiting for it are retried)."""
        self.replicas_changed = replicas_changed
        """Called when a reassignment changed a partition's replicas (groups' metadata hashes cover their racks)."""
        self.storage: ClusterStorage | None = None
        self.controller_id = min(brokers)
        self.controller_epoch = 1

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
        if not candidates and self.configs.unclean_election(partition.topic):
            candidates = [r for r in partition.replicas if eligible(r)]
            unclean = bool(candidates)
        if preferred is not None and preferred in candidates:
            candidates.remove(preferred)
            candidates.insert(0, preferred)
        old = partition.leader_id
        if not candidates:
            partition.leader_id = -1
            self.events.event("partition_offline", topic=partition.topic.name, partition=partition.index,
                              last_leader=old)
            self.events.notify(partition)
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
        self.events.event("leader_elected", topic=partition.topic.name, partition=partition.index, leader=new,
                          previous=old, leader_epoch=partition.leader_epoch, unclean=unclean, isr=list(partition.isr),
                          # an unclean one says where its leader's log ended: the old leader's records past it are lost
                          **({"log_end_offset": partition.logs[new].log_end_offset} if unclean else {}))
        self.leader_changed(partition, old, new, same_log)
        self.replication.replicate(partition)
        self.events.notify(partition)
        if old < 0:  # markers that waited for this partition to be led again
            self.back_online()

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
            self.events.event("controller_elected", broker=new, controller_epoch=self.controller_epoch)

    def kill_broker(self, node_id: int) -> None:
        """The broker dies: it leaves every ISR, its partitions get new leaders, the controller moves."""
        broker = self.brokers[node_id]
        if not broker.alive:
            return
        broker.alive = False
        self.events.event("broker_killed", broker=node_id)
        if node_id == self.controller_id:
            self._elect_controller()
        for p in self._partitions_with(node_id):
            if node_id in p.isr and len(p.isr) > 1:  # the last member stays: it is the one that may lead again
                p.isr.remove(node_id)
                self.events.event("isr_shrink", topic=p.topic.name, partition=p.index, replica=node_id,
                                  isr=list(p.isr))
            if p.leader_id == node_id:
                self.elect_leader(p)
            self.events.notify(p)

    def restart_broker(self, node_id: int) -> None:
        """The broker comes back: its replicas catch up (truncating where they diverged) and rejoin the
        ISR; partitions left offline with it as their last ISR member get it as leader again."""
        broker = self.brokers[node_id]
        if broker.alive:
            return
        broker.alive = True
        self.events.event("broker_restarted", broker=node_id)
        if self.controller_id == -1:
            self._elect_controller()
        for p in self._partitions_with(node_id):
            if not p.online and (node_id in p.isr or self.configs.unclean_election(p.topic)):
                self.elect_leader(p)
            else:
                self.replication.replicate(p)

    def stop_broker(self, node_id: int) -> None:
        """A controlled shutdown: leadership moves to another live in-sync replica first, then the broker
        goes, so no partition it led waits for an election."""
        for p in [p for t in self.topics.values() for p in t.partitions if p.leader_id == node_id]:
            others = [r for r in p.isr if r != node_id and self.brokers[r].alive]
            if others:
                self.elect_leader(p, preferred=others[0])
        self.kill_broker(node_id)

    def move_leader(self, topic: str, index: int, node_id: int) -> None:
        p = find_partition(self.topics, topic, index)
        if p is None:
            raise ApiError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"{topic}-{index} does not exist")
        if node_id not in p.isr or not self.brokers[node_id].alive:
            raise ApiError(ErrorCode.NOT_LEADER_OR_FOLLOWER, f"broker {node_id} is not a live in-sync replica of "
                                                             f"{topic}-{index} (ISR {p.isr})")
        if p.leader_id != node_id:
            self.elect_leader(p, preferred=node_id)

    # --- ElectLeaders ----------------------------------------------------------------------------------
    def _election_partition(self, topic: str, index: int) -> Partition:
        """The partition an ElectLeaders names, or Kafka's controller's error in its words."""
        if topic not in self.topics:
            raise ApiError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"No such topic as {topic}")
        p = find_partition(self.topics, topic, index)
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

    # --- reassignment ----------------------------------------------------------------------------------
    def reassign_partition(self, topic: str, index: int, replicas: list[int] | None,
                           allow_rf_change: bool = True) -> None:
        """Moves a partition to `replicas` as Kafka reassigns: the added replicas join and catch up, and
        only once all of them are in the ISR do the removed ones leave (leadership moves off them).
        `replicas=None` cancels an ongoing reassignment. Without `allow_rf_change` (KIP-860) a new replica
        count is INVALID_REPLICATION_FACTOR, checked after the list itself, as Kafka's controller does."""
        p = find_partition(self.topics, topic, index)
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
            self.events.event("reassignment_cancelled", topic=topic, partition=index, replicas=list(p.replicas))
            self.replicas_changed(p)
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
        self.events.event("reassignment_started", topic=topic, partition=index, target=list(replicas),
                          adding=list(p.adding), removing=list(p.removing))
        self.replicas_changed(p)
        self.replication.replicate(p)
        self.maybe_complete_reassignment(p)

    def maybe_complete_reassignment(self, p: Partition) -> None:
        """Ends a reassignment once every replica of its target is in the ISR: the removed ones go."""
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
        self.events.event("reassignment_completed", topic=p.topic.name, partition=p.index, replicas=list(target))
        self.replicas_changed(p)
        if p.leader_id not in target:
            self.elect_leader(p, preferred=target[0])
