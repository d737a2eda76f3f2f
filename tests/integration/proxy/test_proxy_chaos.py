"""Hooks and chaos on the proxy: the fake cluster's hook language and seeded fault schedules on requests crossing
`fakekafka.Proxy`, the invariants checked on the upstream's logs. The planted bug of examples/chaos_orders (a
non-idempotent producer with retries) is found through the proxy in front of the test's cluster: fakekafka, and
Apache Kafka 4.4.0 under `--kafka-real` (marked kafka_real), shrunk to the one dropped answer and replayed.
The read_committed invariant holds for an honest read_committed consumer of a producer that aborts, and finds a
planted bug (the aborted transactions left out of the Fetch answers) on both brokers.
Throttled fetches are drawn and replayed on the proxy as on the fake cluster: answered by the proxy, empty, with
throttle_time_ms, the client's connection muted that long."""

from __future__ import annotations

import dataclasses
import logging
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

import fakekafka
from examples.chaos_orders.service import each_order_once_in, place_orders, place_orders_fixed
from fakekafka.chaos import Chaos, ChaosFailure, Profile, Schedule, Step, shrink
from fakekafka.proxy import Proxy
from tests.integration.clients.scenarios import kafka_python_consumer

ORDERS = list(range(20))
SEEDS = range(1, 9)
"""The shipped checkout's duplicate is found within these seeds (seed 1 on both brokers in the runs here)."""


def _run(kafka: object, chaos: Chaos | Schedule, app: object = place_orders) -> tuple[list[object], Schedule]:
    """One run of the checkout through a fresh chaos proxy, on a topic of its own."""
    topic = f"orders-{uuid.uuid4().hex[:8]}"
    kafka.create_topic(topic, 3)  # type: ignore[attr-defined]
    given = chaos if isinstance(chaos, Chaos) else Chaos(schedule=chaos)
    given = Chaos(given.seed, given.profile, given.schedule, invariants=(each_order_once_in(topic),))
    with Proxy(kafka, chaos=given) as proxy:
        app(proxy.bootstrap_servers, ORDERS, topic)  # type: ignore[operator]
        return proxy.check_invariants(), proxy.chaos_schedule()


@pytest.mark.kafka_real
@pytest.mark.fakekafka(partitions=3)
def test_a_planted_duplicate_is_found_through_the_proxy_shrunk_and_replayed(kafka) -> None:
    found = None
    for seed in SEEDS:
        violations, schedule = _run(kafka, Chaos(seed=seed, profile="network"))
        if violations:
            found = (seed, violations, schedule)
            break
    assert found is not None, f"the planted duplicate was not found within seeds {list(SEEDS)}"
    seed, violations, schedule = found
    assert [v.invariant for v in violations] == ["app invariant each_order_once"]
    wanted = [v.invariant for v in violations]

    def fails(candidate: Schedule) -> bool:
        return [v.invariant for v in _run(kafka, candidate)[0]] == wanted

    shrunk = shrink(schedule, fails, max_runs=12)
    assert 1 <= len(shrunk.schedule) <= 2, shrunk.schedule.lines()
    assert any(s.kind == "drop_after" and s.api == "Produce" for s in shrunk.schedule), shrunk.schedule.lines()
    again, applied = _run(kafka, shrunk.schedule)
    assert [v.invariant for v in again] == wanted
    assert applied.same_as(shrunk.schedule)
    # the fixed checkout (the idempotent producer) passes the seed that broke the shipped one
    assert _run(kafka, Chaos(seed=seed, profile="network"), place_orders_fixed)[0] == []


@pytest.mark.fakekafka(partitions=3)
def test_the_same_seed_applies_the_same_schedule_through_the_proxy(kafka) -> None:
    runs = [_run(kafka, Chaos(seed=5, profile="default"), place_orders_fixed)[1] for _ in range(3)]
    assert len(runs[0]) > 0

    def steps(schedule: Schedule) -> list[object]:  # each run has a topic of its own
        return [dataclasses.replace(s, topic=None) for s in schedule]
    assert all(steps(r) == steps(runs[0]) for r in runs), [r.lines() for r in runs]
    assert {s.kind for s in runs[0]} <= {"error", "latency", "drop_before", "drop_after"}


def test_hooks_on_the_proxy_speak_the_fake_clusters_language() -> None:
    with fakekafka.Cluster(topics={"t": 1}) as cluster, Proxy(cluster) as proxy:
        answered_after = proxy.intercept("Produce", fakekafka.Fail("NOT_ENOUGH_REPLICAS_AFTER_APPEND", after=True))
        place_orders(proxy.bootstrap_servers, [1], "t")  # retried: the error came after the append
        assert answered_after.fired == 1
        assert [r.value for r in cluster.records("t")].count(b'{"order_id": 1, "amount_cents": 1001}') == 2
        refused = proxy.intercept("Produce", fakekafka.Fail("NOT_LEADER_OR_FOLLOWER"))
        place_orders(proxy.bootstrap_servers, [2], "t")  # refused without forwarding: written once
        assert refused.fired == 1
        values = [r.value for r in cluster.records("t")]
        assert values.count(b'{"order_id": 2, "amount_cents": 1002}') == 1
        seen: list[int] = []
        held = proxy.intercept("Produce", fakekafka.Hold(lambda: bool(seen)))
        edited = proxy.intercept("ApiVersions", lambda r: seen.append(r.nth) or None)  # never acts: sees all
        place_orders(proxy.bootstrap_servers, [3], "t")  # the held Produce goes once ApiVersions was seen
        assert held.fired == 1 and seen and edited.fired == 0
        edited.remove()
        assert [e.kind for e in proxy.events() if e.kind in ("fault", "hook", "chaos")] == ["hook"] * 3


def test_proxy_chaos_on_the_command_line(tmp_path: Path) -> None:
    bad = subprocess.run([sys.executable, "-m", "fakekafka", "proxy", "--upstream", "127.0.0.1:1",
                          "--chaos-profile", "busy"], capture_output=True, text=True, timeout=60)
    assert bad.returncode == 2 and "need --chaos-seed N or --chaos-schedule FILE" in bad.stderr
    bad = subprocess.run([sys.executable, "-m", "fakekafka", "proxy", "--upstream", "127.0.0.1:1",
                          "--chaos-seed", "1", "--chaos-profile", "nonsense"], capture_output=True, text=True,
                         timeout=60)
    assert bad.returncode == 2 and "unknown chaos profile 'nonsense'" in bad.stderr


def test_an_invariant_failure_through_the_proxy_raises_with_the_schedule() -> None:
    with fakekafka.Cluster(topics={"orders": 1}) as cluster, \
            Proxy(cluster, chaos=Chaos(seed=1, profile="none", invariants=(each_order_once_in("orders"),))) as proxy:
        proxy.drop_connection("Produce", when="after")  # a fault rule: the same language as the chaos steps
        place_orders(proxy.bootstrap_servers, [7], "orders")
        with pytest.raises(ChaosFailure, match=r"orders published more than once: \[7\]"):
            proxy.assert_invariants()
        assert len(proxy.chaos_schedule()) == 0  # the fault was a rule, not a chaos step


THROTTLES = Profile("throttles", error_rate=0, latency_rate=0, drop_rate=0, throttle_rate=0.5, throttle_ms=(50, 200),
                    apis=("Fetch",), max_faults=4)


def _consume(bootstrap_servers: str, topic: str, want: int) -> tuple[list[bytes], float]:
    """kafka-python, assigned partition 0 from offset 0: the values until `want` came, and how long it took."""
    from kafka import TopicPartition

    consumer = kafka_python_consumer(bootstrap_servers=bootstrap_servers, enable_auto_commit=False,
                                     fetch_max_wait_ms=100)
    got: list[bytes] = []
    started = time.monotonic()
    try:
        tp = TopicPartition(topic, 0)
        consumer.assign([tp])
        consumer.seek(tp, 0)
        deadline = started + 30
        while len(got) < want and time.monotonic() < deadline:
            for records in consumer.poll(timeout_ms=200).values():
                got.extend(r.value for r in records)
    finally:
        consumer.close()
    return got, time.monotonic() - started


def _events_topic(kafka: object, n: int) -> str:
    topic = f"events-{uuid.uuid4().hex[:8]}"
    kafka.create_topic(topic, 1)  # type: ignore[attr-defined]
    for i in range(n):
        kafka.produce(topic, f"e{i}".encode())  # type: ignore[attr-defined]
    return topic


@pytest.mark.kafka_real
@pytest.mark.fakekafka(partitions=1)
def test_a_throttled_fetch_through_the_proxy_is_answered_empty_and_kafka_python_backs_off(
        kafka, caplog: pytest.LogCaptureFixture) -> None:
    pytest.importorskip("kafka")
    topic = _events_topic(kafka, 5)
    caplog.set_level(logging.WARNING, logger="kafka")
    with Proxy(kafka, chaos=Schedule([Step("Fetch", 0, "throttle", ms=700)])) as proxy:
        got, took = _consume(proxy.bootstrap_servers, topic, 5)
        assert got == [f"e{i}".encode() for i in range(5)]  # every record, after the throttle
        assert [(s.kind, s.ms) for s in proxy.chaos_schedule()] == [("throttle", 700)]
        assert any("throttled by broker (700 ms)" in r.getMessage() for r in caplog.records), caplog.text
        assert took >= 0.7  # its connection was muted: the next fetch waited out the throttle time
        chaos_events = [e for e in proxy.events() if e.kind == "chaos"]
        assert len(chaos_events) == 1 and "Fetch" in str(chaos_events[0]), chaos_events
        assert proxy.check_invariants() == []


@pytest.mark.kafka_real
@pytest.mark.fakekafka(partitions=1)
def test_throttles_drawn_on_the_fake_cluster_replay_the_same_through_the_proxy(kafka) -> None:
    pytest.importorskip("kafka")
    chaos = Chaos(seed=3, profile=THROTTLES)
    with fakekafka.Cluster(topics={"events": 1}, chaos=chaos) as fake:
        fake_fetches = _fetch_counter(fake)
        for i in range(5):
            fake.produce("events", f"e{i}".encode())
        got, _ = _consume(fake.bootstrap_servers, "events", 5)
        drawn = fake.chaos_schedule()
    assert len(got) == 5
    assert drawn.steps and {s.kind for s in drawn} == {"throttle"}, drawn.lines()
    points = [(s.api, s.nth, s.kind, s.ms) for s in drawn]
    topic = _events_topic(kafka, 5)
    # how many Fetches 5 records take is timing's: each schedule is compared over the Fetches both runs made
    with Proxy(kafka, chaos=chaos) as proxy:  # the same seed draws the same throttles at the same Fetches
        fetches = _fetch_counter(proxy)
        got, _ = _consume(proxy.bootstrap_servers, topic, 5)
        assert len(got) == 5
        on_proxy = [(s.api, s.nth, s.kind, s.ms) for s in proxy.chaos_schedule()]
    assert on_proxy, drawn.lines()
    assert ([p for p in on_proxy if p[1] < len(fake_fetches)]
            == [p for p in points if p[1] < len(fetches)]), (on_proxy, points, len(fake_fetches), len(fetches))
    with Proxy(kafka, chaos=drawn) as proxy:  # the fake's schedule replayed through the proxy, step for step
        fetches = _fetch_counter(proxy)
        got, _ = _consume(proxy.bootstrap_servers, topic, 5)
        assert len(got) == 5
        replayed = [(s.api, s.nth, s.kind, s.ms) for s in proxy.chaos_schedule()]
    assert replayed and replayed == [p for p in points if p[1] < len(fetches)], (replayed, points, len(fetches))


def _fetch_counter(target: fakekafka.Cluster | Proxy) -> list[int]:
    """The place (`nth`) of every Fetch the target's hooks and chaos saw, filled as they arrive."""
    seen: list[int] = []

    def count(request: fakekafka.Intercepted) -> None:
        seen.append(request.nth)

    target.intercept("Fetch", count, keep=True)
    return seen


def _transactions(bootstrap_servers: str, topic: str) -> None:
    """A transactional confluent-kafka producer: c1 committed, a2 aborted, c3 committed."""
    from confluent_kafka import Producer

    producer = Producer({"bootstrap.servers": bootstrap_servers, "transactional.id": f"tx-{uuid.uuid4().hex[:8]}"})
    producer.init_transactions(30)
    for value, commit in ((b"c1", True), (b"a2", False), (b"c3", True)):
        producer.begin_transaction()
        producer.produce(topic, value, partition=0)
        producer.flush(30)
        if commit:
            producer.commit_transaction(30)
        else:
            producer.abort_transaction(30)


def _read_committed_values(bootstrap_servers: str, topic: str) -> list[bytes]:
    """A confluent-kafka consumer at read_committed, partition 0 from offset 0, until the last commit's c3."""
    from confluent_kafka import Consumer, TopicPartition

    consumer = Consumer({"bootstrap.servers": bootstrap_servers, "group.id": f"g-{uuid.uuid4().hex[:8]}",
                         "isolation.level": "read_committed", "enable.auto.commit": False})
    got: list[bytes] = []
    try:
        consumer.assign([TopicPartition(topic, 0, 0)])
        deadline = time.monotonic() + 30
        while b"c3" not in got and time.monotonic() < deadline:
            m = consumer.poll(0.2)
            if m is not None and m.error() is None:
                got.append(m.value())
    finally:
        consumer.close()
    return got


def _without_aborted_transactions(answer: dict) -> None:
    for t in answer.get("responses") or ():
        for p in t["partitions"]:
            p["aborted_transactions"] = []


@pytest.mark.kafka_real
@pytest.mark.fakekafka(partitions=1)
def test_read_committed_through_the_proxy_holds_and_finds_a_planted_bug(kafka) -> None:
    pytest.importorskip("confluent_kafka")
    topic = f"ledger-{uuid.uuid4().hex[:8]}"
    kafka.create_topic(topic, 1)
    with Proxy(kafka, chaos=Chaos(seed=1, profile="none")) as proxy:
        _transactions(proxy.bootstrap_servers, topic)
        assert _read_committed_values(proxy.bootstrap_servers, topic) == [b"c1", b"c3"]
        assert proxy.check_invariants() == []  # the aborted a2 was fetched, and listed as aborted
    with Proxy(kafka, chaos=Chaos(seed=1, profile="none")) as proxy:
        # the planted bug: a broker whose Fetch answers leave out the aborted transactions
        proxy.intercept("Fetch", fakekafka.Edit(_without_aborted_transactions), keep=True)
        assert _read_committed_values(proxy.bootstrap_servers, topic) == [b"c1", b"a2", b"c3"]
        [violation] = proxy.check_invariants()
        assert violation.invariant == "read_committed sees only committed records"
        assert any(f"{topic}-0: aborted batch at offset" in line for line in violation.lines()), violation.lines()
