"""Share-group dead-letter queues (fakekafka/model/share_dlq.py, KIP-1191): what Kafka 4.4's share-partition leader
writes to the group's DLQ topic when a record is rejected or runs out of delivery attempts, and when it writes
nothing."""

from __future__ import annotations

from fakekafka.model.clock import ManualClock
from fakekafka.model.cluster import ClusterState
from fakekafka.model.config import BrokerConfig
from fakekafka.model.metadata import Broker
from fakekafka.model.share import AcknowledgeType, RecordState, SharePartition
from fakekafka.model.share_dlq import HEADERS
from fakekafka.wire.records import Record, build_batch, decode_batch

A = AcknowledgeType
DLQ = "dlq.g"


def _cluster(**props: str) -> ClusterState:
    config = BrokerConfig.from_properties(props) if props else BrokerConfig()
    state = ClusterState(config, ManualClock(1_000_000), [Broker(1, "127.0.0.1", 9092)])
    state.create_topic("t", 2, 1)
    state.group_configs["g"] = {"share.auto.offset.reset": "earliest", "share.delivery.count.limit": "2"}
    state.share_state_topic()
    return state


def _dlq_topic(state: ClusterState, partitions: int = 1, enable: str | None = "true") -> None:
    state.create_topic(
        DLQ, partitions, 1, configs={} if enable is None else {"errors.deadletterqueue.group.enable": enable}
    )
    state.group_configs["g"]["errors.deadletterqueue.topic.name"] = DLQ


def _share(state: ClusterState, partition: int = 1, n: int = 1) -> SharePartition:
    p = state.partition("t", partition)
    assert p is not None
    for i in range(n):
        state.append(
            p,
            build_batch([{"key": b"k%d" % i, "value": b"v%d" % i, "timestamp": 5, "headers": [("h", b"x")]}]),
            acks=-1,
        )
    return state.shares.share_partition("g", "t", partition, p.log.log_start_offset, p.log.high_watermark)


def _acquire(state: ClusterState, sp: SharePartition, member: str = "m") -> list[dict[str, int]]:
    p = state.partition("t", sp.partition)
    assert p is not None
    _, ranges = sp.acquire(
        member,
        lambda o: p.log.read(o, 1 << 20, min_one=True),
        p.log.high_watermark,
        500,
        state.clock.now_ms(),
        30_000,
        2_000,
    )
    return ranges


def _ack(state: ClusterState, sp: SharePartition, first: int, last: int, kind: A, member: str = "m") -> None:
    """What the ShareAcknowledge handler does: acknowledge, then persist the share-partition's state."""
    assert (
        sp.acknowledge(member, first, last, [kind], state.clock.now_ms(), 30_000, state.shares.delivery_limit("g")).name
        == "NONE"
    )
    state.share_state.write(sp)


def _dead_letters(state: ClusterState, partition: int = 0) -> list[Record]:
    p = state.partition(DLQ, partition)
    assert p is not None
    return [r for b in p.log.batches for r in decode_batch(bytes(b)).records]


def _headers(r: Record) -> dict[str, str]:
    return {k: (v or b"").decode() for k, v in r.headers}


def test_a_rejected_record_is_written_with_kafkas_headers_and_no_key_or_value_by_default() -> None:
    state = _cluster()
    _dlq_topic(state)
    sp = _share(state)
    _acquire(state, sp)
    state.clock.advance(7)
    _ack(state, sp, 0, 0, A.REJECT)
    [r] = _dead_letters(state)
    assert [k for k, _ in r.headers] == list(HEADERS)
    assert _headers(r) == {
        "__dlq.errors.topic": "t",
        "__dlq.errors.partition": "1",
        "__dlq.errors.offset": "0",
        "__dlq.errors.group": "g",
        "__dlq.errors.delivery.count": "1",
        "__dlq.errors.message": "Offset rejected by client.",
    }
    assert (r.key, r.value, r.timestamp) == (None, None, 1_000_007)  # the broker's time, not the record's
    assert sp.state_of(0).state == RecordState.ARCHIVED and not sp.dead_letters


def test_copy_record_enable_copies_the_key_and_value_but_not_the_headers() -> None:
    state = _cluster()
    _dlq_topic(state)
    state.group_configs["g"]["errors.deadletterqueue.copy.record.enable"] = "true"
    sp = _share(state, n=2)
    _acquire(state, sp)
    _ack(state, sp, 1, 1, A.REJECT)
    [r] = _dead_letters(state)
    assert (r.key, r.value, _headers(r)["__dlq.errors.offset"]) == (b"k1", b"v1", "1")
    assert "h" not in _headers(r)


def test_a_record_out_of_delivery_attempts_is_written_once_whether_released_or_expired() -> None:
    state = _cluster()
    _dlq_topic(state)
    sp = _share(state, n=2)
    limit = state.shares.delivery_limit("g")
    for _ in range(limit):
        _acquire(state, sp)
        _ack(state, sp, 0, 0, A.RELEASE)
        state.clock.advance(30_001)  # offset 1's lock runs out
        sp.expire(state.clock.now_ms(), limit)
        state.share_state.write(sp)
    letters = _dead_letters(state)
    assert [
        (
            _headers(r)["__dlq.errors.offset"],
            _headers(r)["__dlq.errors.delivery.count"],
            _headers(r)["__dlq.errors.message"],
        )
        for r in letters
    ] == [
        ("0", "2", "Offset delivery count exceeded the threshold."),
        ("1", "2", "Offset delivery count exceeded the threshold."),
    ]
    assert sp.state_of(0).state == sp.state_of(1).state == RecordState.ARCHIVED


def test_a_released_record_with_attempts_left_is_not_a_dead_letter() -> None:
    state = _cluster()
    _dlq_topic(state)
    sp = _share(state)
    _acquire(state, sp)
    _ack(state, sp, 0, 0, A.RELEASE)
    assert _dead_letters(state) == [] and sp.state_of(0).state == RecordState.AVAILABLE


def test_the_dlq_partition_is_the_source_partition_mod_the_dlq_topics_partitions() -> None:
    state = _cluster()
    _dlq_topic(state, partitions=3)
    sp = _share(state, partition=1)
    _acquire(state, sp)
    _ack(state, sp, 0, 0, A.REJECT)
    assert len(_dead_letters(state, 1)) == 1 and _dead_letters(state, 0) == []


def test_nothing_is_written_where_kafka_refuses_the_dlq_topic() -> None:
    cases: list[tuple[str, dict[str, str], str | None]] = [
        ("", {}, "true"),  # not configured
        ("__dlq", {"errors.deadletterqueue.topic.name.prefix": ""}, "true"),
        ("other.g", {}, "true"),  # lacks the dlq. prefix
        (DLQ, {}, None),  # the topic does not enable errors.deadletterqueue.group.enable
        (DLQ, {}, "false"),
    ]
    for name, props, enable in cases:
        state = _cluster(**props)
        if name:
            state.create_topic(
                name, 1, 1, configs={} if enable is None else {"errors.deadletterqueue.group.enable": enable}
            )
        state.group_configs["g"]["errors.deadletterqueue.topic.name"] = name
        sp = _share(state)
        _acquire(state, sp)
        _ack(state, sp, 0, 0, A.REJECT)
        p = state.partition(name, 0) if name else None
        assert p is None or p.log.log_end_offset == 0, (name, props, enable)
        assert sp.state_of(0).state == RecordState.ARCHIVED and not sp.dead_letters


def test_a_missing_topic_is_created_only_with_auto_create_enabled() -> None:
    state = _cluster()
    state.group_configs["g"]["errors.deadletterqueue.topic.name"] = DLQ
    sp = _share(state)
    _acquire(state, sp)
    _ack(state, sp, 0, 0, A.REJECT)
    assert DLQ not in state.topics

    state = _cluster(**{"errors.deadletterqueue.auto.create.topics.enable": "true"})
    state.group_configs["g"]["errors.deadletterqueue.topic.name"] = DLQ
    sp = _share(state)
    _acquire(state, sp)
    _ack(state, sp, 0, 0, A.REJECT)
    topic = state.topics[DLQ]
    assert topic.configs == {"errors.deadletterqueue.group.enable": "true", "message.timestamp.type": "CreateTime"}
    assert len(_dead_letters(state)) == 1
