"""End-to-end replication: Kafka's Java client (kafka-clients 4.4) against a three-broker fakekafka cluster,
with brokers killed under it.

One JVM (tests/integration/clients/java/ReplicationDriver.java) runs two scenarios against one
`fakekafka.Cluster(brokers=3)`
started for this module. When a scenario needs a broker killed or restarted it asks on stdout; this module does
it through the in-process handle (`kill_broker`, `restart_broker`) and answers on stdin with the partition's new
state, so each check is made from both sides:

- failover: an acks=all idempotent producer keeps sending to a partition with three replicas while the
  partition leader's broker is killed; a consumer (assign, auto.offset.reset=none, so a failed position
  validation would raise) reads along. Every acknowledged record is stored exactly once, in order, on every
  replica; the leader epoch went up; the consumer read everything across the failover without an error and
  validated its position with OffsetForLeaderEpoch.
- min_isr: min.insync.replicas=2; with two of the three brokers killed the acks=all producer's callback gets
  NotEnoughReplicasException (delivery.timeout.ms 15 s, retries 3: the retries run out first) while acks=1
  succeeds; with one broker back acks=all succeeds again. With unlimited retries kafka-clients reports
  TimeoutException ("Expiring 1 record(s)") at delivery.timeout.ms instead, whatever the broker answered: its
  Sender expires the batch while it waits to retry, and builds that exception without a cause.

Skips (naming .ci/install.sh) when java, javac or the Kafka jars are missing.
"""

from __future__ import annotations

import json
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

import fakekafka
from tests import javautil
from tests.javautil import JavaRun

pytestmark = pytest.mark.clients

JAVA_SOURCE = Path(__file__).resolve().parent / "java" / "ReplicationDriver.java"
RUN_TIMEOUT_S = 90
FAILOVER, MIN_ISR = "java-repl-failover", "java-repl-min-isr"
BEFORE, AFTER = 300, 300   # acknowledgements before the kill, and from the new leader after it
TOPIC_CONFIGS = {"min.insync.replicas": "2"}


# --------------------------------------------------------------------------------------- the JVM run

@dataclass
class ReplicationRun(JavaRun):
    requests: list[tuple[dict[str, Any], dict[str, Any]]] = field(default_factory=list)
    """Every (request, answer) exchanged with the driver."""
    states: dict[str, dict[str, Any]] = field(default_factory=dict)
    """partition_state of each scenario's partition right after its scenario ended."""
    killed: list[int] = field(default_factory=list)


def _wait_for(what: str, done: Any, timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while not done():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.01)


def _restart_all(run: ReplicationRun) -> None:
    """Brings every killed broker back and waits until every partition's ISR is full again."""
    c = run.cluster
    while run.killed:
        c.restart_broker(run.killed.pop())
    for topic in (FAILOVER, MIN_ISR):
        _wait_for(f"{topic}'s ISR to fill", lambda t=topic: len(c.partition_state(t, 0)["isr"]) == 3)


def _serve(run: ReplicationRun, request: dict[str, Any]) -> dict[str, Any]:
    """Carries out what a scenario asked of the cluster; returns the answer."""
    c = run.cluster
    topic, index = request["topic"], request["partition"]
    before = c.partition_state(topic, index)
    if request["request"] == "kill_leader":
        kill_ns = time.monotonic_ns()   # System.nanoTime's clock on Linux (CLOCK_MONOTONIC)
        c.kill_broker(before["leader"])
        killed_ns = time.monotonic_ns()
        run.killed.append(before["leader"])
        after = c.partition_state(topic, index)
        epoch_start = c.call(lambda: c.state.partition(topic, index).log.epochs[-1].start_offset)
        return {"killed": before["leader"], "kill_ns": kill_ns, "killed_ns": killed_ns, "leader": after["leader"],
                "leader_epoch": after["leader_epoch"], "previous_epoch": before["leader_epoch"],
                "epoch_start": epoch_start, "isr": after["isr"]}
    if request["request"] == "kill_two":
        victims = [before["leader"], next(r for r in before["replicas"] if r != before["leader"])]
        for b in victims:
            c.kill_broker(b)
            run.killed.append(b)
        after = c.partition_state(topic, index)
        return {"killed": victims, "leader": after["leader"], "isr": after["isr"]}
    if request["request"] == "restart_one":
        b = run.killed.pop()
        c.restart_broker(b)
        _wait_for("the restarted broker to rejoin the ISR", lambda: b in c.partition_state(topic, index)["isr"])
        after = c.partition_state(topic, index)
        return {"restarted": b, "leader": after["leader"], "isr": after["isr"]}
    raise AssertionError(f"unknown request from the Java driver: {request}")


def _answer(run: ReplicationRun, request: dict[str, Any]) -> str:
    answer = _serve(run, request)
    run.requests.append((request, answer))
    return json.dumps(answer)


def _scenario_done(run: ReplicationRun, result: dict[str, Any]) -> None:
    """Keeps the partition's state as the scenario left it, then brings every broker back for the next one."""
    if result.get("topic"):
        run.states[result["scenario"]] = run.cluster.partition_state(result["topic"], 0)
    _restart_all(run)


@pytest.fixture(scope="module")
def java() -> Iterator[ReplicationRun]:
    """Three brokers and one JVM running both scenarios; the cluster stays up for the tests' checks."""
    classes = javautil.compile_java(JAVA_SOURCE)
    with fakekafka.Cluster(brokers=3) as cluster:
        for topic in (FAILOVER, MIN_ISR):
            cluster.create_topic(topic, 1, replication_factor=3, configs=TOPIC_CONFIGS)
        run = ReplicationRun(cluster)
        yield javautil.run_driver(run, classes, "ReplicationDriver", cluster.bootstrap_servers,
                                  f"failover:{FAILOVER}:{BEFORE}:{AFTER}", f"min_isr:{MIN_ISR}",
                                  timeout=RUN_TIMEOUT_S, log_level="error",
                                  serve=lambda request: _answer(run, request),
                                  on_result=lambda result: _scenario_done(run, result))


# -------------------------------------------------------------------------------------------- tests

def test_failover_every_acknowledged_record_stored_once(java: ReplicationRun) -> None:
    r = java.result("failover")
    assert r["failures"] == []
    sent = r["sent"]
    assert sent >= BEFORE + AFTER
    # every send was acknowledged, in order, at offset = sequence number: nothing lost, nothing doubled
    assert r["acks"] == [[i, i] for i in range(sent)]
    stored = java.cluster.records(FAILOVER)
    assert [(s.offset, s.value) for s in stored] == [(i, f"r-{i}".encode()) for i in range(sent)]
    values = Counter(s.value for s in stored)
    assert all(n == 1 for n in values.values())


def test_failover_elects_a_new_leader_with_a_higher_epoch(java: ReplicationRun) -> None:
    r = java.result("failover")
    kill = r["kill"]
    assert kill["leader"] not in (-1, kill["killed"])
    assert kill["leader_epoch"] == kill["previous_epoch"] + 1
    assert kill["killed"] not in kill["isr"] and len(kill["isr"]) == 2
    assert 0 < kill["epoch_start"] <= r["sent"]
    # the new leader appended what came after the kill: the acknowledgements went on past its epoch start
    assert max(offset for _, offset in r["acks"]) >= kill["epoch_start"] + AFTER - 1
    state = java.states["failover"]
    assert (state["leader"], state["leader_epoch"]) == (kill["leader"], kill["leader_epoch"])
    kinds = [(e.kind, e.details.get("leader_epoch")) for e in java.cluster.events()
             if e.details.get("topic") == FAILOVER and e.kind == "leader_elected"]
    assert kinds[0] == ("leader_elected", kill["leader_epoch"])
    assert 0 < r["failover_ms"] <= r["failover_epoch_ms"] < 5000


def test_failover_replicas_agree_after_the_killed_broker_returns(java: ReplicationRun) -> None:
    sent = java.result("failover")["sent"]
    state = java.cluster.partition_state(FAILOVER, 0)
    assert sorted(state["isr"]) == [1, 2, 3]
    assert state["log_end_offsets"] == {1: sent, 2: sent, 3: sent}
    assert state["high_watermark"] == sent
    logs = java.cluster.call(lambda: {r: list(log.batches) for r, log in
                                      java.cluster.state.partition(FAILOVER, 0).logs.items()})
    assert logs[1] == logs[2] == logs[3]


def test_failover_consumer_reads_across_it_and_validates(java: ReplicationRun) -> None:
    r = java.result("failover")
    kill = r["kill"]
    assert r["consumer_errors"] == []
    consumed = r["consumed"]
    assert [(o, v) for o, v, _ in consumed] == [(i, f"r-{i}") for i in range(r["sent"])]
    # records carry the epoch they were appended in: the old one before the new leader's start, then the new
    assert {e for o, _, e in consumed if o < kill["epoch_start"]} == {kill["previous_epoch"]}
    assert {e for o, _, e in consumed if o >= kill["epoch_start"]} == {kill["leader_epoch"]}
    assert r["position"] == r["sent"]
    # after the leader change the consumer validated its position against the new leader (KIP-320)
    assert java.api_calls["OffsetForLeaderEpoch"] >= 1


def test_min_isr_refuses_acks_all_with_two_brokers_down(java: ReplicationRun) -> None:
    r = java.result("min_isr")
    assert r["all_before"]["offset"] == 0
    killed = r["killed"]
    assert len(killed["killed"]) == 2 and killed["isr"] == [killed["leader"]]
    assert killed["leader"] not in killed["killed"]
    assert r["all_two_down"]["error"] == "NotEnoughReplicasException", r["all_two_down"]
    assert r["all_two_down"]["ms"] < 15_000   # the retries ran out before delivery.timeout.ms
    # with unlimited retries the Java producer reports its own timeout, as it would against Kafka
    assert r["all_two_down_patient"]["error"] in ("TimeoutException", "NotEnoughReplicasException")
    assert r["all_two_down_patient"]["ms"] >= 2900
    produce_errors = [c for rec in java.cluster.requests() if rec.api == "Produce" for c in rec.error_codes]
    assert "NOT_ENOUGH_REPLICAS" in produce_errors
    assert r["one_two_down"]["offset"] == 1
    assert len(r["restarted"]["isr"]) == 2
    assert r["all_after_restart"]["offset"] == 2
    assert [s.value for s in java.cluster.records(MIN_ISR)] == [b"all-before", b"one-two-down",
                                                                 b"all-after-restart"]
    assert any(e.kind == "broker_killed" for e in java.cluster.events())


def test_the_broker_logged_no_problem_and_the_run_was_quick(java: ReplicationRun) -> None:
    failed = {name: r["error"].splitlines()[0] for name, r in java.results.items() if not r["ok"]}
    assert not failed
    assert set(java.results) == {"failover", "min_isr"}
    assert java.server_problems == []
    assert java.seconds < 60, f"the JVM run took {java.seconds:.1f}s"
