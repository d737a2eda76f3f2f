"""The cluster's own events as chaos steps (fakekafka/chaos/cluster_events.py) against real clients: a
confluent-kafka producer and consumer group on three brokers under the `cluster` profile meet rebalances,
session expiries, coordinator moves and ISR shrinks and expands; every record produced is consumed and the
invariants hold. Kafka's Java client (compat's driver) meets the same events with broker kills and leader moves
besides. The ISR steps are replayed from a hand-written schedule against confluent-kafka and franz-go.
(A consumer group's run is not replayed step for step here: its Fetch and Heartbeat requests follow the client's
timers, so their request points drift between runs.)"""

from __future__ import annotations

import dataclasses
import time

import pytest

from fakekafka import Chaos, Cluster, Edit, Schedule, Step
from fakekafka.chaos import PROFILES
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


CLUSTER_AND_BROKERS = dataclasses.replace(PROFILES["cluster"], name="cluster+brokers", kill_rate=0.02,
                                         move_leader_rate=0.04)
"""The cluster profile's events, and brokers killed and restarted and leaders moved (what `busy` draws)."""
EVERY_EVENT = {"rebalance", "session_expiry", "move_coordinator", "isr_shrink", "isr_expand", "kill", "move_leader"}


def java_produce_and_consume(c: Cluster) -> tuple[list[bytes], list[str]]:
    """Through the Java client: RECORDS records produced (idempotent, acks=all, ten per call), then read by a group
    member committing each record's offset, until it has every one (at least once) or 60 s passed. The driver's member
    polls on its own thread, so records taken in before a rebalance may come after the ones read again from the
    committed offset: an offset below one already committed is not committed again (the group's commits never go
    back). Returns the values read and the errors the member met (commits refused by a rebalance)."""
    from compat.clients.base import ClientError, Rec, Timing, Unsupported
    from compat.clients.registry import make_client

    try:
        client = make_client("java", c.bootstrap_servers, Timing(op_s=30, fetch_s=5, group_s=20, heartbeat_ms=100))
    except Unsupported as e:
        pytest.skip(str(e))
    seen: list[bytes] = []
    errors: list[str] = []
    committed: dict[int, int] = {}
    try:
        for first in range(0, RECORDS, 10):
            client.produce("events", [Rec(str(i).encode(), f"event-{i}".encode())
                                      for i in range(first, first + 10)], acks=-1, idempotent=True)
        member = client.member(GROUP, "events")
        try:
            deadline = time.monotonic() + 60
            while len(set(seen)) < RECORDS and time.monotonic() < deadline:
                got = member.take()
                if not got:
                    time.sleep(0.05)
                    continue
                for r in got:
                    seen.append(r.value or b"")
                    partition = r.partition or 0
                    if r.offset < committed.get(partition, 0):
                        continue  # read again after a rebalance (the member had taken it in before): not committed back
                    try:  # one commit per record: many group requests for the events to fall on
                        member.commit({("events", partition): (r.offset + 1, None)})
                        committed[partition] = r.offset + 1
                    except ClientError as e:
                        errors.append(e.code)
            errors.extend(e.code for e in member.errors())
        finally:
            member.close()
    finally:
        client.close()
    return seen, errors


@pytest.mark.clients
def test_the_java_client_rides_out_the_cluster_events_and_broker_kills() -> None:
    """Kafka's Java client (producer and a group member) under the cluster's events and broker kills and leader
    moves, seed after seed until each kind was met: every record read, the invariants held."""
    kinds: set[str] = set()
    for seed in range(3, 11):
        with Cluster(brokers=3, chaos=Chaos(seed=seed, profile=CLUSTER_AND_BROKERS)) as c:
            c.create_topic("events", 3, replication_factor=3)
            seen, errors = java_produce_and_consume(c)
            assert {f"event-{i}".encode() for i in range(RECORDS)} <= set(seen), f"seed {seed}: {errors}"
            assert c.check_invariants() == [], f"seed {seed}"
            kinds |= {s.kind for s in c.chaos_schedule()}
        if EVERY_EVENT <= kinds:
            break
    assert EVERY_EVENT <= kinds, kinds


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
