"""Log directories: which of its broker's `log.dirs` each replica lives in, and moving it to another
(AlterReplicaLogDirs), as Kafka's LogManager places and moves logs."""

from __future__ import annotations

from fakekafka.model.config import BrokerConfig
from fakekafka.model.events import ClusterEvents
from fakekafka.model.metadata import Partition, Topic, find_partition
from fakekafka.model.ports import ClusterStorage
from fakekafka.wire import ErrorCode

__all__ = ["LogDirs"]


class LogDirs:
    def __init__(self, config: BrokerConfig, topics: dict[str, Topic], events: ClusterEvents) -> None:
        self.config, self.topics, self.events = config, topics, events
        self.storage: ClusterStorage | None = None
        self.preferred: dict[tuple[str, int, int], str] = {}
        """(topic, partition, node) -> the log dir AlterReplicaLogDirs named for a replica the node does not
        hold yet: the replica is made there when it comes (Kafka's LogManager.maybeUpdatePreferredLogDir)."""

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
                preferred = self.preferred.pop((p.topic.name, p.index, node), None)
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
        p = find_partition(self.topics, topic, index)
        if p is None:
            return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
        log = p.logs.get(node_id)
        if log is None:
            self.preferred[(topic, index, node_id)] = log_dir
            return ErrorCode.REPLICA_NOT_AVAILABLE
        if log.log_dir != log_dir:
            self.events.event("replica_log_dir_moved", topic=topic, partition=index, node=node_id, log_dir=log_dir,
                              previous=log.log_dir)
            log.log_dir = log_dir
            if self.storage is not None:  # its directory moves to the new log dir's
                self.storage.move(p, node_id)
        return ErrorCode.NONE
