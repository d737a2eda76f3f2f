"""The fault scenarios (compat/scenarios/faults.py) in CI: a leader moved by reassignment and election, the leader's
broker killed under acks=all with min.insync.replicas=2, a group member's session expiring, each caused by the same
means on three Apache Kafka 4.4.0 nodes (`kafka-3`: one JVM SIGKILLed, then started again) and on
`fakekafka serve --brokers 3` (`fakekafka-3`: `kill-broker` / `restart-broker` on its control port), the outcome
of every cell on fakekafka judged against the same client's on Kafka.

One `python -m compat` run (a subprocess) serves the module: the two clusters start once and every fault cell
takes its cluster for itself (a killed broker is every lane's). The clients are one of each family (kafka-python,
librdkafka through confluent-kafka, the Java client); every other compat client runs the same scenarios by hand
(`python -m compat --broker kafka-3 --broker fakekafka-3 --scenario 'fault_*'`). Without Kafka's jars fakekafka-3
runs alone, judged against the written expectations.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.conformance.test_compat import _cells, _judge_against_kafka, _kafka_available, _run, _unlisted

pytestmark = [pytest.mark.clients, pytest.mark.timeout(600)]

ROOT = Path(__file__).resolve().parents[2]
CLIENTS = ("kafka-python", "confluent-kafka", "java")
FAULTS = ("fault_leader_moved", "fault_broker_killed_acks_all", "fault_member_session_expired")


@pytest.fixture(scope="module")
def faults_report() -> dict[str, Any]:
    kafka = ["kafka-3"] if _kafka_available() is None else []
    report = _run(*kafka, "fakekafka-3", out=ROOT / "build" / "compat-ci-faults", timeout=540, clients=CLIENTS,
                  scenarios=FAULTS)
    assert not report["stale_known"], report["stale_known"]
    return report


@pytest.mark.parametrize("client", CLIENTS)
def test_faults_look_the_same_on_fakekafka_as_on_kafka(faults_report: dict[str, Any], client: str) -> None:
    cells = _cells(faults_report, "fakekafka-3", client)
    assert faults_report["brokers"]["fakekafka-3"]["available"], faults_report["brokers"]["fakekafka-3"]
    assert {c["scenario"] for c in cells} == set(FAULTS)
    # every fault ran on fakekafka's three brokers and came out as Kafka's (or as written, without Kafka)
    assert all(c["status"] == "pass" for c in cells), "\n".join(_unlisted(cells)) or cells
    if "kafka-3" in faults_report["brokers"] and faults_report["brokers"]["kafka-3"]["available"]:
        _judge_against_kafka(faults_report, client, kafka="kafka-3", fake="fakekafka-3")
        assert all(c["reference"] == "kafka-3" for c in cells), [(c["scenario"], c["reference"]) for c in cells]


def test_faults_need_three_brokers() -> None:
    """On a broker kind without three brokers to kill, the fault scenarios are unsupported, and say why."""
    from compat.brokers import Target
    from compat.clients.base import Client, Timing
    from compat.runner import _run_cell
    from compat.scenarios import SCENARIOS

    one = Target("fakekafka", "127.0.0.1:1", Timing(), auto_create=False)
    for name in FAULTS:
        cell = _run_cell(SCENARIOS[name], Client("127.0.0.1:1", Timing()), one, "t")
        assert (cell.status, "three brokers" in cell.detail) == ("unsupported", True), cell
