"""The cluster's own events as chaos steps (fakekafka/chaos/cluster_events.py) against real clients: a
confluent-kafka producer and consumer group on three brokers under the `cluster` profile meet rebalances,
session expiries, coordinator moves and ISR shrinks and expands; every record produced is consumed and the
invariants hold. The ISR steps are replayed from a hand-written schedule against confluent-kafka and franz-go.
(A consumer group's run is not replayed step for step here: its Fetch and Heartbeat requests follow the client's
timers, so their request points drift between runs.)"""

from __future__ import annotations

import time

import pytest

from fakekafka import Chaos, Cluster, Edit, Schedule, Step
from fakekafka.wire import ErrorCode

confluent_kafka = pytest.importorskip("confluent_kafka")

RECORDS = 60
GROUP = "chaos-consumers"


def produce_and_consume(c: Cluster) -> list[bytes]:
    """Produces RECORDS records (idempotent, acks=all), then consumes them in a group committing as it goes, until
    it has every one (at least once) or 60 s passed. Returns the values consumed."""
    from confluent_kafka import Consumer, Producer
    p = Producer({"bootstrap.servers": c.bootstrap_servers, "acks": "all", "enable.idempotence": True,
                  "linger.ms": 0, "retry.backoff.ms": 5, "socket.timeout.ms": 3000, "message.timeout.ms": 30000})
    errors: list[str] = []
    for i in range(RECORDS):
        p.produce("events", key=str(i).encode(), value=f"event-{i}".encode(),
                  on_delivery=lambda err, _m: errors.append(str(err)) if err else None)
        p.poll(0)
    assert p.flush(30) == 0 and not errors, errors
    consumer = Consumer({"bootstrap.servers": c.bootstrap_servers, "group.id": GROUP, "auto.offset.reset": "earliest",
                         "enable.auto.commit": False, "session.timeout.ms": 6000, "heartbeat.interval.ms": 100,
                         "retry.backoff.ms": 10, "reconnect.backoff.ms": 10})
    seen: list[bytes] = []
    try:
        consumer.subscribe(["events"])
        deadline = time.monotonic() + 60
        while len(set(seen)) < RECORDS and time.monotonic() < deadline:
            m = consumer.poll(0.2)
            if m is None or m.error():
                continue
            seen.append(m.value())
            try:
                consumer.commit(m, asynchronous=False)
            except confluent_kafka.KafkaException:
                pass  # a commit refused by a rebalance or a moved coordinator: the record may come again
    finally:
        consumer.close()
    return seen


def test_the_cluster_profile_draws_each_event_and_the_app_still_reads_everything() -> None:
    kinds: set[str] = set()
    for seed in range(1, 7):
        with Cluster(brokers=3, chaos=Chaos(seed=seed, profile="cluster")) as c:
            c.create_topic("events", 3, replication_factor=3)
            seen = produce_and_consume(c)
            assert {f"event-{i}".encode() for i in range(RECORDS)} <= set(seen), f"seed {seed}"
            assert c.check_invariants() == [], f"seed {seed}"
            kinds |= {s.kind for s in c.chaos_schedule()}
        if {"rebalance", "session_expiry", "move_coordinator", "isr_shrink", "isr_expand"} <= kinds:
            break
    assert {"rebalance", "session_expiry", "move_coordinator", "isr_shrink", "isr_expand"} <= kinds, kinds


def test_an_isr_shrink_below_min_insync_refuses_acks_all_writes_until_it_expands() -> None:
    with Cluster(brokers=3) as probe:  # the followers of events-0 on a cluster made as the run's is
        probe.create_topic("events", 1, replication_factor=3, configs={"min.insync.replicas": "2"})
        followers = probe.call(lambda: [r for r in probe.state.partition("events", 0).replicas
                                        if r != probe.state.partition("events", 0).leader_id])
    steps = [Step("Produce", 2, "isr_shrink", topic="events", partition=0, broker=followers[0]),
             Step("Produce", 3, "isr_shrink", topic="events", partition=0, broker=followers[1]),
             Step("Produce", 6, "isr_expand", topic="events", partition=0, broker=followers[0])]
    from confluent_kafka import Producer
    with Cluster(brokers=3, chaos=Schedule(steps)) as c:
        c.create_topic("events", 1, replication_factor=3, configs={"min.insync.replicas": "2"})
        codes: list[int] = []
        c.intercept("Produce", lambda r: Edit(lambda answer: codes.extend(
            p["error_code"] for t in answer["responses"] for p in t["partition_responses"])), keep=True)
        p = Producer({"bootstrap.servers": c.bootstrap_servers, "acks": "all", "enable.idempotence": True,
                      "linger.ms": 0, "retry.backoff.ms": 20, "message.timeout.ms": 30000})
        for i in range(8):
            p.produce("events", value=f"e{i}".encode())
            assert p.flush(30) == 0
        assert [r.value for r in c.records("events")] == [f"e{i}".encode() for i in range(8)]
        assert [s.kind for s in c.chaos_schedule()] == ["isr_shrink", "isr_shrink", "isr_expand"]
        # with one replica in the ISR the leader refused acks=all writes (NOT_ENOUGH_REPLICAS, before the
        # append) and the producer retried until the follower had caught up and rejoined
        assert ErrorCode.NOT_ENOUGH_REPLICAS in codes, codes
        isr = c.call(lambda: list(c.state.partition("events", 0).isr))
        assert followers[0] in isr and followers[1] not in isr
        assert c.check_invariants() == []


@pytest.mark.clients
def test_franz_go_rides_out_an_isr_shrink_below_min_insync() -> None:
    """The same ISR steps against the Go client (franz-go, compat's driver): its acks=all produces are refused
    while one replica is in sync and go through once the follower is back, each record once."""
    from compat.clients.base import Rec, Timing, Unsupported
    from compat.clients.registry import make_client
    with Cluster(brokers=3) as probe:
        probe.create_topic("events", 1, replication_factor=3, configs={"min.insync.replicas": "2"})
        followers = probe.call(lambda: [r for r in probe.state.partition("events", 0).replicas
                                        if r != probe.state.partition("events", 0).leader_id])
    steps = [Step("Produce", 1, "isr_shrink", topic="events", partition=0, broker=followers[0]),
             Step("Produce", 2, "isr_shrink", topic="events", partition=0, broker=followers[1]),
             Step("Produce", 4, "isr_expand", topic="events", partition=0, broker=followers[0])]
    with Cluster(brokers=3, chaos=Schedule(steps)) as c:
        c.create_topic("events", 1, replication_factor=3, configs={"min.insync.replicas": "2"})
        try:  # the driver takes one bootstrap address
            client = make_client("franz-go", c.bootstrap_servers.split(",")[0], Timing(op_s=30, fetch_s=5,
                                                                                       group_s=10))
        except Unsupported as e:
            pytest.skip(str(e))
        codes: list[int] = []
        c.intercept("Produce", lambda r: Edit(lambda answer: codes.extend(
            p["error_code"] for t in answer["responses"] for p in t["partition_responses"])), keep=True)
        try:
            offsets = [client.produce("events", [Rec(None, f"e{i}".encode(), [], 0)]) for i in range(6)]
        finally:
            client.close()
        assert offsets == [[(0, i)] for i in range(6)]
        assert [r.value for r in c.records("events")] == [f"e{i}".encode() for i in range(6)]
        assert ErrorCode.NOT_ENOUGH_REPLICAS in codes, codes
        assert [s.kind for s in c.chaos_schedule()] == ["isr_shrink", "isr_shrink", "isr_expand"]
