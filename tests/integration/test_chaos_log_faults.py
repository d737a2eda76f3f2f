"""The chaos kinds that act on logs, quotas and elections, each against a real client: a throttled Fetch (a fetch
quota's answer: empty, throttle_time_ms, the connection muted) that kafka-python backs off from; retention passing on
a frozen clock, after which a kafka-python and a Java consumer behind the new log start meet OFFSET_OUT_OF_RANGE and
reset by auto.offset.reset; a compaction pass a kafka-python consumer reads with its gaps; an unclean election only
where the topic allows it, its loss expected by the acknowledged-records invariant."""

from __future__ import annotations

import logging
import time

import pytest

from fakekafka import Chaos, Cluster, Edit, Schedule, Step
from fakekafka.chaos import Profile
from fakekafka.wire import ErrorCode

pytest.importorskip("kafka")


def fetch_codes(c: Cluster) -> list[int]:
    """The partition error codes of every Fetch answer from now on."""
    codes: list[int] = []
    c.intercept(
        "Fetch",
        lambda r: Edit(
            lambda answer: codes.extend(p["error_code"] for t in answer.get("responses", []) for p in t["partitions"])
        ),
        keep=True,
    )
    return codes


def consume(
    c: Cluster, topic: str, want: int, *, reset: str = "earliest", end: int | None = None
) -> list[tuple[int, bytes | None]]:
    """kafka-python, assigned partition 0 from offset 0 (no group): (offset, value) until `want` records came, or
    its position reached `end` (when what is wanted is that nothing comes: a state to wait for, not a time)."""
    from kafka import KafkaConsumer, TopicPartition

    consumer = KafkaConsumer(
        bootstrap_servers=c.bootstrap_servers, auto_offset_reset=reset, enable_auto_commit=False, fetch_max_wait_ms=100
    )
    got: list[tuple[int, bytes | None]] = []
    try:
        tp = TopicPartition(topic, 0)
        consumer.assign([tp])
        consumer.seek(tp, 0)
        deadline = time.monotonic() + 30
        while len(got) < want and time.monotonic() < deadline:
            if end is not None and consumer.position(tp) >= end:
                break
            for records in consumer.poll(timeout_ms=200).values():
                got.extend((r.offset, r.value) for r in records)
    finally:
        consumer.close()
    return got


def test_a_throttled_fetch_is_answered_empty_and_kafka_python_backs_off(caplog: pytest.LogCaptureFixture) -> None:
    with Cluster(topics={"events": 1}, chaos=Schedule([Step("Fetch", 0, "throttle", ms=700)])) as c:
        for i in range(5):
            c.produce("events", f"e{i}".encode())
        caplog.set_level(logging.WARNING, logger="kafka")
        started = time.monotonic()
        got = consume(c, "events", 5)
        took = time.monotonic() - started
        assert [v for _, v in got] == [f"e{i}".encode() for i in range(5)]  # every record, after the throttle
        assert [s.kind for s in c.chaos_schedule()] == ["throttle"]
        assert any("throttled by broker (700 ms)" in r.getMessage() for r in caplog.records), caplog.text
        assert took >= 0.7  # its next fetch waited out the throttle time
        assert c.check_invariants() == []


RETAINED = {"retention.ms": "60000", "segment.ms": "10000"}


def log_with_old_and_new_segments(c: Cluster) -> None:
    """Records 0-9 at the start, 10-14 30 s later (a new segment: segment.ms): the first segment passes
    retention.ms 30 s later, the second 60 s after that."""
    c.create_topic("logs", 1, configs=RETAINED)
    for i in range(10):
        c.produce("logs", f"old-{i}".encode())
    c.advance_clock(30_000)
    for i in range(10, 15):
        c.produce("logs", f"new-{i}".encode())


def test_retention_on_the_frozen_clock_moves_the_log_start_and_kafka_python_resets() -> None:
    steps = [Step("Fetch", 0, "retention", topic="logs", partition=0, ms=30_001)]
    with Cluster(clock="frozen", chaos=Schedule(steps)) as c:
        log_with_old_and_new_segments(c)
        codes = fetch_codes(c)
        got = consume(c, "logs", 5)
        assert got == [(i, f"new-{i}".encode()) for i in range(10, 15)]  # auto.offset.reset=earliest: the new start
        assert ErrorCode.OFFSET_OUT_OF_RANGE in codes
        assert [(s.kind, s.ms) for s in c.chaos_schedule()] == [("retention", 30_001)]
        assert c.check_invariants() == []


@pytest.mark.parametrize("client", ["kafka-python", "java"])
def test_a_consumer_behind_retention_resets_by_auto_offset_reset(client: str) -> None:
    """The same through compat's drivers, Java's KafkaConsumer among them: a fetch from 0 after retention moved the
    log start to 10 resets to it (earliest)."""
    from compat.clients.base import Timing, Unsupported
    from compat.clients.registry import make_client

    steps = [Step("Fetch", 0, "retention", topic="logs", partition=0, ms=30_001)]
    with Cluster(clock="frozen", chaos=Schedule(steps)) as c:
        log_with_old_and_new_segments(c)
        try:
            driver = make_client(client, c.bootstrap_servers, Timing(op_s=30, fetch_s=10, group_s=10))
        except Unsupported as e:
            pytest.skip(str(e))
        try:
            got = driver.fetch("logs", 0, 0, 5, reset="earliest")
        finally:
            driver.close()
        assert [r.value for r in got] == [f"new-{i}".encode() for i in range(10, 15)]
        assert [s.kind for s in c.chaos_schedule()] == ["retention"]
        assert c.call(lambda: c.state.partition("logs", 0).log.log_start_offset) == 10


def test_the_cluster_profile_draws_retention_only_on_a_frozen_clock_and_within_its_bound() -> None:
    retention = Profile(
        "retention",
        error_rate=0,
        latency_rate=0,
        drop_rate=0,
        retention_rate=1.0,
        retention_advance_ms=120_000,
        max_faults=1,
    )
    with Cluster(clock="frozen", chaos=Chaos(seed=1, profile=retention)) as c:
        log_with_old_and_new_segments(c)
        got = consume(c, "logs", 1, reset="earliest", end=15)
        step = c.chaos_schedule().steps[0]
        assert (step.kind, step.ms) == ("retention", 60_001)  # every record below the high watermark expired
        assert got == []
        assert c.call(lambda: c.state.partition("logs", 0).log.log_start_offset) == 15
    with Cluster(chaos=Chaos(seed=1, profile=retention)) as c:  # the wall clock: nothing to move
        c.create_topic("logs", 1, configs=RETAINED)
        c.produce("logs", b"x")
        assert consume(c, "logs", 1) == [(0, b"x")] and len(c.chaos_schedule()) == 0
    bounded = Profile(
        "bounded",
        error_rate=0,
        latency_rate=0,
        drop_rate=0,
        retention_rate=1.0,
        retention_advance_ms=10_000,
        max_faults=1,
    )
    with Cluster(clock="frozen", chaos=Chaos(seed=1, profile=bounded)) as c:  # would need 60 s: left alone
        log_with_old_and_new_segments(c)
        assert len(consume(c, "logs", 15)) == 15 and len(c.chaos_schedule()) == 0


def test_a_compaction_pass_removes_superseded_keys_and_kafka_python_reads_the_gaps() -> None:
    configs = {"cleanup.policy": "compact", "segment.ms": "1000", "min.cleanable.dirty.ratio": "0.01"}
    with Cluster(clock="frozen", chaos=Schedule([Step("Fetch", 0, "compaction", topic="keys", partition=0)])) as c:
        c.create_topic("keys", 1, configs=configs)
        for rnd in range(3):  # three rounds of the same five keys, each in a segment of its own
            for k in range(5):
                c.produce("keys", f"{k}@{rnd}".encode(), key=f"k{k}".encode())
            c.advance_clock(2000)
        got = consume(c, "keys", 10)
        # the first round is superseded; the second stays (the active segment's keys are not in the cleaner's map)
        assert got == [(5 * rnd + k, f"{k}@{rnd}".encode()) for rnd in (1, 2) for k in range(5)]
        assert [s.kind for s in c.chaos_schedule()] == ["compaction"]
        assert c.check_invariants() == []
    with Cluster(clock="frozen", chaos=Schedule([Step("Fetch", 0, "compaction", topic="keys", partition=0)])) as c:
        # records younger than min.compaction.lag.ms: nothing the cleaner may take, so no pass is drawn
        c.create_topic("keys", 1, configs={**configs, "min.compaction.lag.ms": "3600000"})
        for rnd in range(3):
            for k in range(5):
                c.produce("keys", f"{k}@{rnd}".encode(), key=f"k{k}".encode())
            c.advance_clock(2000)
        assert len(consume(c, "keys", 15)) == 15 and len(c.chaos_schedule()) == 0


def unclean_run(allowed: bool) -> tuple[list[str], list[bytes | None], list[object], list[int]]:
    """Two brokers: broker `follower` falls out of the ISR at the 2nd Produce, the leader (the ISR's last member)
    crashes at the 8th; kafka-python (not idempotent, acks=all) writes 10 records one at a time."""
    from kafka import KafkaProducer

    with Cluster(brokers=2) as probe:
        probe.create_topic("pay", 1, replication_factor=2)
        leader = probe.call(lambda: probe.state.partition("pay", 0).leader_id)
    follower = 3 - leader
    steps = [
        Step("Produce", 2, "isr_shrink", topic="pay", partition=0, broker=follower),
        Step("Produce", 8, "unclean_election", topic="pay", partition=0, broker=leader, ms=60_000),
    ]
    configs = {"unclean.leader.election.enable": "true"} if allowed else {}
    with Cluster(brokers=2, clock="frozen", chaos=Schedule(steps)) as c:
        c.create_topic("pay", 1, replication_factor=2, configs=configs)
        p = KafkaProducer(
            bootstrap_servers=c.bootstrap_servers,
            acks="all",
            retries=20,
            retry_backoff_ms=50,
            request_timeout_ms=3000,
            max_in_flight_requests_per_connection=1,
            enable_idempotence=False,
            linger_ms=0,
            reconnect_backoff_ms=20,
        )
        try:
            offsets = [p.send("pay", f"pay-{i}".encode()).get(timeout=30).offset for i in range(10)]
        finally:
            p.close()
        kinds = [s.kind for s in c.chaos_schedule()]
        return kinds, [r.value for r in c.records("pay")], c.check_invariants(), offsets


def test_an_unclean_election_where_the_topic_allows_it_loses_records_the_invariant_expects() -> None:
    kinds, values, violations, offsets = unclean_run(allowed=True)
    assert kinds == ["isr_shrink", "unclean_election"]
    # the out-of-sync follower had records 0-1; the records the old leader acknowledged after them are gone
    assert values[:2] == [b"pay-0", b"pay-1"] and b"pay-2" not in values and values[-1] == b"pay-9"
    assert offsets[:8] == list(range(8)) and offsets[8] == 2  # the new leader appends from its own log end
    assert violations == []


def test_no_unclean_election_where_the_topic_does_not_allow_it() -> None:
    kinds, values, violations, offsets = unclean_run(allowed=False)
    assert kinds == ["isr_shrink"]
    assert values == [f"pay-{i}".encode() for i in range(10)] and offsets == list(range(10))
    assert violations == []
