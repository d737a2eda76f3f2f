"""Broker kills on the cluster's clock: a killed broker restarts when the clock passes the kill's time plus its
down time, so under a frozen clock it stays down until the test moves the clock, and a schedule with kills replays
exactly (kafka-python, three brokers)."""

from __future__ import annotations

import time

import pytest

from fakekafka import Chaos, Cluster, Schedule
from fakekafka.chaos import Profile

pytest.importorskip("kafka")

KILLS = Profile(
    "kills", error_rate=0, latency_rate=0, drop_rate=0, kill_rate=0.25, down_ms=(100, 200), max_faults=2, skip_first=1
)
BEFORE, AFTER = 12, 8


def wait_until(condition: object, what: str, bound_s: float = 30) -> None:
    deadline = time.monotonic() + bound_s
    while not condition():  # type: ignore[operator]
        if time.monotonic() > deadline:
            raise AssertionError(f"not within {bound_s} s: {what}")
        time.sleep(0.02)


def app(c: Cluster) -> list[bool]:
    """Writes BEFORE records one at a time (the chaos kills brokers on the way), moves the frozen clock past every
    down time, waits for the brokers to be back, writes AFTER more. Returns which brokers were alive before the clock
    moved."""
    from kafka import KafkaProducer

    p = KafkaProducer(
        bootstrap_servers=c.bootstrap_servers,
        acks="all",
        retries=20,
        retry_backoff_ms=20,
        request_timeout_ms=3000,
        max_in_flight_requests_per_connection=1,
        enable_idempotence=True,
        linger_ms=0,
        reconnect_backoff_ms=20,
        reconnect_backoff_max_ms=200,
    )
    try:
        for i in range(BEFORE):
            p.send("orders", value=f"order-{i}".encode()).get(timeout=30)
        alive = c.call(lambda: [b.alive for _, b in sorted(c.state.brokers.items())])
        c.advance_clock(1000)
        wait_until(lambda: c.call(lambda: all(b.alive for b in c.state.brokers.values())), "every broker back")
        for i in range(BEFORE, BEFORE + AFTER):
            p.send("orders", value=f"order-{i}".encode()).get(timeout=30)
    finally:
        p.close()
    return alive


def run(chaos: Chaos | Schedule) -> tuple[Schedule, list[bool], list[bytes | None]]:
    with Cluster(brokers=3, clock="frozen", chaos=chaos) as c:
        c.create_topic("orders", 1, replication_factor=3)
        alive = app(c)
        assert c.check_invariants() == []
        return c.chaos_schedule(), alive, [r.value for r in c.records("orders")]


def test_a_killed_broker_stays_down_until_the_frozen_clock_passes_its_restart() -> None:
    schedule, alive, records = run(Chaos(seed=3, profile=KILLS))
    kills = [s for s in schedule if s.kind == "kill"]
    assert kills, schedule.lines()
    assert alive.count(False) == len({s.broker for s in kills})  # the wall clock passed; the frozen one did not
    assert records == [f"order-{i}".encode() for i in range(BEFORE + AFTER)]


def test_a_schedule_with_kills_replays_to_the_same_applied_schedule_five_times() -> None:
    first, alive, records = run(Chaos(seed=3, profile=KILLS))
    assert any(s.kind == "kill" for s in first), first.lines()
    for _ in range(5):
        again, again_alive, again_records = run(first)
        assert again.same_as(first), (again.lines(), first.lines())
        assert (again_alive, again_records) == (alive, records)
