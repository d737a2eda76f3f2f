"""Log dirs in the model: where new replicas go (the dir with the fewest partitions, as Kafka's LogManager),
AlterReplicaLogDirs' per-partition codes, and a dir named for a replica before the broker holds it."""

from __future__ import annotations

import pytest

from fakekafka.model.clock import ManualClock
from fakekafka.model.cluster import ClusterState
from fakekafka.model.config import BrokerConfig, InvalidConfig
from fakekafka.model.metadata import Broker
from fakekafka.ops.describe import describe_tables
from fakekafka.wire import ErrorCode

DIRS = "/data/a,/data/b"


def cluster(log_dirs: str | None = DIRS, brokers: int = 1) -> ClusterState:
    config = BrokerConfig.from_properties({"log.dirs": log_dirs} if log_dirs else {})
    return ClusterState(config, ManualClock(), [Broker(i, "127.0.0.1", 9092 + i) for i in range(1, brokers + 1)])


def dirs_of(c: ClusterState, topic: str, node: int = 1) -> list[str]:
    return [p.logs[node].log_dir for p in c.topics[topic].partitions]


def test_one_dir_by_default_kafkas_log_dir() -> None:
    c = cluster(None)
    c.create_topic("t", 2)
    assert c.log_dirs() == ["/tmp/kafka-logs"] and dirs_of(c, "t") == ["/tmp/kafka-logs"] * 2


def test_log_dir_alone_and_log_dirs_winning() -> None:
    assert BrokerConfig.from_properties({"log.dir": "/x"}).log_dirs() == ["/x"]
    assert BrokerConfig.from_properties({"log.dir": "/x", "log.dirs": " /y , /z"}).log_dirs() == ["/y", "/z"]
    with pytest.raises(InvalidConfig, match="^Configuration 'log.dirs' values must not be duplicated.$"):
        BrokerConfig.from_properties({"log.dirs": "/y,/z,/y"})  # Kafka 4.4's ValidList refuses a dir twice


def test_new_replicas_go_to_the_dir_with_fewest_partitions() -> None:
    c = cluster()
    c.create_topic("t", 3)
    assert dirs_of(c, "t") == ["/data/a", "/data/b", "/data/a"]  # ties go to the first dir in log.dirs
    c.create_topic("u", 1)
    assert dirs_of(c, "u") == ["/data/b"]
    c.create_partitions("u", 3)
    assert dirs_of(c, "u") == ["/data/b", "/data/a", "/data/b"]


def test_alter_replica_log_dir_codes_and_move() -> None:
    c = cluster()
    c.create_topic("t", 1)
    assert c.alter_replica_log_dir(1, "t", 0, "/data/c") == ErrorCode.LOG_DIR_NOT_FOUND
    assert c.alter_replica_log_dir(1, "nope", 0, "/data/c") == ErrorCode.LOG_DIR_NOT_FOUND  # the dir first
    assert c.alter_replica_log_dir(1, "nope", 0, "/data/b") == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    assert c.alter_replica_log_dir(1, "t", 5, "/data/b") == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    assert c.alter_replica_log_dir(1, "t", 0, "/data/b/") == ErrorCode.LOG_DIR_NOT_FOUND  # names match exactly
    assert c.alter_replica_log_dir(1, "t", 0, "/data/b") == ErrorCode.NONE
    assert dirs_of(c, "t") == ["/data/b"]
    assert c.alter_replica_log_dir(1, "t", 0, "/data/b") == ErrorCode.NONE  # already there
    c.create_topic("u", 1)
    assert dirs_of(c, "u") == ["/data/a"]  # the move counts: /data/a holds fewer now


def test_a_dir_named_before_the_replica_comes() -> None:
    c = cluster(brokers=2)
    c.create_topic("t", 1, 1)
    p = c.topics["t"].partitions[0]
    other = 2 if p.replicas == [1] else 1
    assert c.alter_replica_log_dir(other, "t", 0, "/data/b") == ErrorCode.REPLICA_NOT_AVAILABLE
    c.reassign_partition("t", 0, [*p.replicas, other])
    assert p.logs[other].log_dir == "/data/b"



def test_ctl_describe_shows_each_replicas_dir_when_there_are_several() -> None:
    c = cluster(brokers=2)
    c.create_topic("t", 2, 2)
    c.alter_replica_log_dir(2, "t", 0, "/data/b")
    rows = describe_tables(c).split("PARTITIONS\n", 1)[1].splitlines()
    assert rows[0].split()[-2:] == ["LOG", "DIRS"]
    assert rows[1].split()[-2:] == ["1:/data/a", "2:/data/b"]
    assert "LOG DIRS" not in describe_tables(cluster(None))

