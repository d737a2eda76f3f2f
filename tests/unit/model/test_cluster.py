"""ClusterState: topic administration rules and the append path, with a manual clock."""

from __future__ import annotations

import pytest

from fakekafka.model.clock import ManualClock
from fakekafka.model.cluster import ClusterState
from fakekafka.model.config import BrokerConfig
from fakekafka.model.errors import ApiError
from fakekafka.model.metadata import Broker
from fakekafka.wire import ErrorCode
from fakekafka.wire.records import TimestampType, build_batch, decode_batch, read_header


@pytest.fixture
def cluster() -> ClusterState:
    return ClusterState(BrokerConfig(num_partitions=3), ManualClock(1_000_000))


def _code(fn) -> ErrorCode:  # noqa: ANN001
    with pytest.raises(ApiError) as e:
        fn()
    return e.value.code


def test_create_topic_defaults_and_ids(cluster: ClusterState) -> None:
    t = cluster.create_topic("orders")
    assert len(t.partitions) == 3 and t.replication_factor == 1
    assert cluster.topics_by_id[t.topic_id] is t
    assert [p.leader_id for p in t.partitions] == [1, 1, 1]


@pytest.mark.parametrize(("name", "code"), [
    ("", ErrorCode.INVALID_TOPIC_EXCEPTION), (".", ErrorCode.INVALID_TOPIC_EXCEPTION),
    ("..", ErrorCode.INVALID_TOPIC_EXCEPTION), ("bad name", ErrorCode.INVALID_TOPIC_EXCEPTION),
    ("x" * 250, ErrorCode.INVALID_TOPIC_EXCEPTION),
])
def test_bad_topic_names(cluster: ClusterState, name: str, code: ErrorCode) -> None:
    assert _code(lambda: cluster.create_topic(name)) == code


def test_topic_admin_errors(cluster: ClusterState) -> None:
    cluster.create_topic("a.b")
    assert _code(lambda: cluster.create_topic("a.b")) == ErrorCode.TOPIC_ALREADY_EXISTS
    assert _code(lambda: cluster.create_topic("a_b")) == ErrorCode.INVALID_TOPIC_EXCEPTION
    assert _code(lambda: cluster.create_topic("z", 0)) == ErrorCode.INVALID_PARTITIONS
    assert _code(lambda: cluster.create_topic("z", 1, 2)) == ErrorCode.INVALID_REPLICATION_FACTOR
    assert _code(lambda: cluster.create_topic("z", 1, 0)) == ErrorCode.INVALID_REPLICATION_FACTOR
    assert _code(lambda: cluster.create_topic("z", configs={"nope": "1"})) == ErrorCode.INVALID_CONFIG
    assert _code(lambda: cluster.create_topic("z", configs={"retention.ms": "soon"})) == ErrorCode.INVALID_CONFIG
    assert _code(lambda: cluster.create_topic("z", assignments={0: [9]})) == ErrorCode.INVALID_REPLICA_ASSIGNMENT
    assert _code(lambda: cluster.delete_topic("missing")) == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    assert "z" not in cluster.topics


def test_validate_only_creates_nothing(cluster: ClusterState) -> None:
    cluster.create_topic("v", validate_only=True)
    assert "v" not in cluster.topics


def test_create_partitions_rules(cluster: ClusterState) -> None:
    cluster.create_topic("t", 2)
    assert _code(lambda: cluster.create_partitions("t", 2)) == ErrorCode.INVALID_PARTITIONS
    assert _code(lambda: cluster.create_partitions("t", 1)) == ErrorCode.INVALID_PARTITIONS
    assert _code(lambda: cluster.create_partitions("nope", 3)) == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    cluster.create_partitions("t", 5)
    assert [p.index for p in cluster.topics["t"].partitions] == [0, 1, 2, 3, 4]


def test_auto_create_follows_config() -> None:
    on = ClusterState(BrokerConfig(num_partitions=2))
    assert on.auto_create("x") is not None and len(on.topics["x"].partitions) == 2
    off = ClusterState(BrokerConfig(auto_create_topics=False))
    assert off.auto_create("x") is None and not off.topics


def test_append_checks_size_crc_and_batch_count(cluster: ClusterState) -> None:
    t = cluster.create_topic("t", 1, configs={"max.message.bytes": "200"})
    p = t.partitions[0]
    assert cluster.append(p, build_batch([{"value": b"x" * 300}])).error == ErrorCode.MESSAGE_TOO_LARGE
    bad = bytearray(build_batch([{"value": b"x"}]))
    bad[-1] ^= 1
    assert cluster.append(p, bytes(bad)).error == ErrorCode.CORRUPT_MESSAGE
    two = build_batch([{"value": b"a"}]) + build_batch([{"value": b"b"}])
    assert cluster.append(p, two).error == ErrorCode.INVALID_RECORD
    assert cluster.append(p, None).error == ErrorCode.INVALID_RECORD
    assert p.log.log_end_offset == 0


def test_log_append_time_uses_the_clock(cluster: ClusterState) -> None:
    t = cluster.create_topic("t", 1, configs={"message.timestamp.type": "LogAppendTime"})
    r = cluster.append(t.partitions[0], build_batch([{"value": b"x", "timestamp": 5}]))
    assert r.log_append_time == 1_000_000
    stored = t.partitions[0].log.batches[0]
    assert read_header(stored).timestamp_type == TimestampType.LOG_APPEND_TIME
    assert decode_batch(stored).records[0].timestamp == 1_000_000


def test_idempotent_retry_is_not_appended_twice(cluster: ClusterState) -> None:
    t = cluster.create_topic("t", 1)
    p = t.partitions[0]
    batch = build_batch([{"value": b"a"}, {"value": b"b"}], producer_id=9, producer_epoch=0, base_sequence=0)
    first = cluster.append(p, batch)
    again = cluster.append(p, batch)
    assert first.base_offset == again.base_offset == 0 and again.error == ErrorCode.NONE
    assert p.log.log_end_offset == 2


def test_append_notifies_listeners(cluster: ClusterState) -> None:
    seen = []
    cluster.add_change_listener(seen.append)
    t = cluster.create_topic("t", 1)
    cluster.append(t.partitions[0], build_batch([{"value": b"a"}]))
    assert seen == [t.partitions[0]]


def test_several_brokers_spread_leaders() -> None:
    c = ClusterState(brokers=[Broker(1, "h", 1), Broker(2, "h", 2), Broker(3, "h", 3)])
    t = c.create_topic("t", 6, 3)
    assert sorted(p.leader_id for p in t.partitions) == [1, 1, 2, 2, 3, 3]
    assert all(len(set(p.replicas)) == 3 for p in t.partitions)
