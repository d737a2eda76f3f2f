"""Hooks and chaos with real clients over the wire: a hook's dropped-after-apply connection makes a
non-idempotent producer write twice; the same seed gives the same applied schedule and the same records ten
times in a row for a kafka-python and a confluent-kafka application; a schedule replays from its file."""

from __future__ import annotations

import signal
import subprocess
import sys
from pathlib import Path

import pytest

import fakekafka
from fakekafka import Chaos, Cluster, Drop, Fail, Schedule

pytest.importorskip("kafka")
pytest.importorskip("confluent_kafka")

ORDERS = 20


def kafka_python_app(c: Cluster, *, idempotent: bool = True) -> None:
    from kafka import KafkaProducer
    p = KafkaProducer(bootstrap_servers=c.bootstrap_servers, acks="all", retries=10, retry_backoff_ms=5,
                      request_timeout_ms=3000, max_in_flight_requests_per_connection=1,
                      enable_idempotence=idempotent, linger_ms=0)
    try:
        for i in range(ORDERS):
            p.send("orders", key=str(i).encode(), value=f"order-{i}".encode()).get(timeout=20)
    finally:
        p.close()


def confluent_app(c: Cluster) -> None:
    from confluent_kafka import Producer
    p = Producer({"bootstrap.servers": c.bootstrap_servers, "acks": "all", "enable.idempotence": True,
                  "linger.ms": 0, "retry.backoff.ms": 5, "socket.timeout.ms": 3000, "message.timeout.ms": 20000})
    errors: list[str] = []
    for i in range(ORDERS):
        p.produce("orders", key=str(i).encode(), value=f"order-{i}".encode(),
                  on_delivery=lambda err, _m: errors.append(str(err)) if err else None)
        p.flush(20)
    assert not errors, errors


def values(c: Cluster) -> list[tuple[int, bytes | None]]:
    return [(r.partition, r.value) for r in c.records("orders")]


def test_a_hook_dropping_after_apply_makes_a_non_idempotent_producer_write_twice() -> None:
    with Cluster(topics={"orders": 1}) as c:
        hook = c.intercept("Produce", lambda r: Drop(after=True) if r.nth == 3 else None, keep=True)
        kafka_python_app(c, idempotent=False)
        assert hook.fired == 1
        got = [v for _, v in values(c)]
        assert got.count(b"order-3") == 2 and len(got) == ORDERS + 1
    with Cluster(topics={"orders": 1}) as c:  # the same with idempotence: the retried batch is deduplicated
        c.intercept("Produce", lambda r: Drop(after=True) if r.nth == 3 else None, keep=True)
        kafka_python_app(c)
        assert [v for _, v in values(c)] == [f"order-{i}".encode() for i in range(ORDERS)]


def test_an_action_given_directly_fails_the_next_request_only() -> None:
    with Cluster(topics={"orders": 1}) as c:
        hook = c.intercept("Produce", Fail("NOT_LEADER_OR_FOLLOWER"))
        kafka_python_app(c)
        assert hook.fired == 1 and hook.seen[0].api == "Produce"
        assert [e.details["action"] for e in c.events() if e.kind == "hook"] == ["answered NOT_LEADER_OR_FOLLOWER"]


@pytest.mark.parametrize("app", [kafka_python_app, confluent_app], ids=["kafka-python", "confluent-kafka"])
def test_the_same_seed_gives_the_same_schedule_and_outcome_ten_times(app: object) -> None:
    runs = []
    for _ in range(10):
        with Cluster(topics={"orders": 3}, chaos=Chaos(seed=4, profile="default")) as c:
            app(c)  # type: ignore[operator]
            # who each fault hit, for the failure message: a request from outside the app would change the schedule
            hit = [(e.details["api"], e.details["client_id"], e.details["broker"]) for e in c.events()
                   if e.kind == "chaos"]
            runs.append((c.chaos_schedule(), values(c), c.check_invariants(), hit))
    schedule, records, violations, first_hit = runs[0]
    assert len(schedule) >= 2 and violations == []
    assert sorted(v for _, v in records) == sorted(f"order-{i}".encode() for i in range(ORDERS))
    for again, again_records, _, hit in runs[1:]:
        assert again.same_as(schedule), (again.lines(), hit, schedule.lines(), first_hit)
        assert again_records == records


def test_a_saved_schedule_replays_the_same_faults(tmp_path: Path) -> None:
    with Cluster(topics={"orders": 3}, chaos=fakekafka.Chaos(seed=9, profile="busy")) as c:
        kafka_python_app(c)
        first = c.chaos_schedule()
    path = first.save(tmp_path / "run.json")
    with Cluster(topics={"orders": 3}, chaos=Schedule.load(path)) as c:
        kafka_python_app(c)
        assert c.chaos_schedule().same_as(first) and len(first) > 0


def test_chaos_refuses_bad_settings_in_words() -> None:
    with pytest.raises(ValueError, match="chaos=True takes its seeds from the command line"):
        Cluster(chaos=True)
    with pytest.raises(ValueError, match="unknown chaos profile 'stormy'"):
        Cluster(chaos=Chaos(seed=1, profile="stormy"))
    with Cluster() as c, pytest.raises(RuntimeError, match="runs without chaos"):
        c.chaos_schedule()


def _serve(*args: str) -> tuple[subprocess.Popen[str], str]:
    proc = subprocess.Popen([sys.executable, "-m", "fakekafka", "serve", "--port", "0", *args],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    return proc, proc.stdout.readline()


def _run_served(args: list[str]) -> str:
    proc, line = _serve(*args)
    try:
        assert line.startswith("fakekafka ready: bootstrap.servers="), line
        bootstrap = line.split("bootstrap.servers=")[1].split()[0]
        from kafka.admin import KafkaAdminClient, NewTopic
        admin = KafkaAdminClient(bootstrap_servers=bootstrap)
        admin.create_topics([NewTopic("orders", 3, 1)])
        admin.close()

        class Served:
            bootstrap_servers = bootstrap
        kafka_python_app(Served(), idempotent=False)  # type: ignore[arg-type]
    finally:
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=20)
    assert proc.returncode == 0, err
    return err


def test_serve_draws_chaos_from_a_seed_and_replays_the_schedule_it_wrote(tmp_path: Path) -> None:
    first = tmp_path / "first.json"
    err = _run_served(["--chaos-seed", "9", "--chaos-profile", "busy", "--chaos-out", str(first)])
    schedule = Schedule.load(first)
    assert schedule.seed == 9 and schedule.profile == "busy" and len(schedule) > 0
    assert f"fault(s) applied, written to {first}" in err
    again = tmp_path / "again.json"
    _run_served(["--chaos-schedule", str(first), "--chaos-out", str(again)])
    assert Schedule.load(again).same_as(schedule)


@pytest.mark.parametrize(("args", "words"), [
    (["--chaos-seed", "1", "--chaos-profile", "wild"], "--chaos-profile: unknown chaos profile 'wild'"),
    (["--chaos-schedule", "/nonexistent.json"], "--chaos-schedule: cannot read chaos schedule /nonexistent.json"),
    (["--chaos-seed", "1", "--chaos-schedule", "x.json"], "give one of them"),
    (["--chaos-out", "x.json"], "need --chaos-seed N or --chaos-schedule FILE"),
])
def test_serve_refuses_bad_chaos_options_in_words(args: list[str], words: str) -> None:
    proc = subprocess.run([sys.executable, "-m", "fakekafka", "serve", "--port", "0", *args], capture_output=True,
                          text=True, timeout=20)
    assert proc.returncode == 2 and words in proc.stderr and "Traceback" not in proc.stderr
