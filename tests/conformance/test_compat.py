"""The compatibility suite's CI part (compat/, `python -m compat`): every scenario through the five current
clients against Apache Kafka, fakekafka and tansu in one run (`--quick`: tansu skips the scenarios with a
subscribed member). Kafka's observed outcome is the reference for
fakekafka's and tansu's cells (each scenario's written expectation, Kafka's documented behaviour, is the
reference for Kafka's own cells and where Kafka is not installed); a cell that differs or errors fails
unless compat/KNOWN_DIFFERENCES.md lists it.

One `python -m compat` run (a subprocess: client libraries, JVMs and brokers stay out of pytest's
process) serves every test here; its lanes (broker × client) run side by side, so the whole run takes
about as long as tansu's slowest lane (tansu joins a group only after session.timeout.ms / 2). The table
goes to build/compat-ci.md. Without Kafka's jars (`.ci/install.sh` resolves them) the run has fakekafka
and tansu only, judged against the written expectations, and the real-Kafka test skips.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from compat.brokers import Unavailable, start_kafka, tansu_binary
from tests import background
from tests.subproc import run_terminating

pytestmark = [pytest.mark.clients, pytest.mark.timeout(960)]

ROOT = Path(__file__).resolve().parents[2]
OUT = ROOT / "build" / "compat-ci"
TANSU_HINT = 'tansu is not installed: run `eval "$(bash .ci/install.sh)"` (sets FAKEKAFKA_BIN)'


CURRENT_CLIENTS = ("kafka-python", "aiokafka", "confluent-kafka", "kcat", "java")
OLD_CLIENTS = ("java-3.9", "java-2.8", "kafka-python-2.0.2", "confluent-kafka-1.9.2", "aiokafka-0.13.0")
GO_NODE_CLIENTS = ("franz-go", "sarama", "kafka-go", "kafkajs", "rdkafka")


def _run(*brokers: str, out: Path = OUT, timeout: float = 900,
         clients: tuple[str, ...] = CURRENT_CLIENTS) -> Callable[[], tuple[subprocess.CompletedProcess[str], Path]]:
    """The function that runs `python -m compat` (its command and env made now: it runs in the background, where
    os.environ may be a test's); `_report` judges what it returns. It prints nothing."""
    # --quick: the scenarios with a subscribed member are left out on tansu (each join takes seconds there);
    # every lane starts at once (--jobs), so the slow tansu lanes do not queue behind the quick ones. The
    # old clients run in a run of their own, against Kafka and fakekafka only (with tansu: 15 min).
    cmd = [sys.executable, "-m", "compat", *(a for b in brokers for a in ("--broker", b)), "--out", str(out),
           "--quick", "--jobs", "20", *(a for c in clients for a in ("--client", c))]
    env = dict(os.environ, PYTHONUNBUFFERED="1")

    def run() -> tuple[subprocess.CompletedProcess[str], Path]:
        out.with_suffix(".json").unlink(missing_ok=True)  # a report from an earlier run must not pass for this one
        return run_terminating(cmd, timeout, cwd=ROOT, env=env), out
    return run


def _report(run: tuple[subprocess.CompletedProcess[str], Path]) -> dict[str, Any]:
    proc, out = run
    print(proc.stdout[-20000:])
    if proc.returncode not in (0, 1) or not out.with_suffix(".json").exists():
        pytest.fail(f"python -m compat exited {proc.returncode}:\n{proc.stderr[-4000:]}")
    return json.loads(out.with_suffix(".json").read_text())


def _kafka_available() -> str | None:
    """None when real Kafka can be started here, else why not."""
    from compat.apache_kafka import kafka_lib
    if kafka_lib() is not None:
        return None
    try:
        target = start_kafka()
    except Unavailable as e:
        return str(e)
    target.stop()  # available (a container): the run starts its own
    return None


@background.job("compat-matrix", seconds=121)
def _matrix(config: pytest.Config) -> Callable[[], tuple[subprocess.CompletedProcess[str], Path]]:
    kafka = ["kafka"] if _kafka_available() is None else []
    return _run(*kafka, "fakekafka", *(["tansu"] if tansu_binary() else []))


@pytest.fixture(scope="module")
def report(request: pytest.FixtureRequest) -> dict[str, Any]:
    return _report(background.result("compat-matrix", request.config))


def _cells(report: dict[str, Any], broker: str) -> list[dict[str, Any]]:
    return [c for c in report["cells"] if c["broker"] == broker]


def _unlisted(cells: list[dict[str, Any]]) -> list[str]:
    return [f"{c['scenario']} / {c['client']}: {c['status']}: " + ("; ".join(c["diff"][:5]) or
                                                                   c["detail"].strip()[-600:])
            for c in cells if c["status"] in ("differs", "error") and not c["known"]]


@pytest.mark.background("compat-matrix")
def test_fakekafka_behaves_like_kafka(report: dict[str, Any]) -> None:
    cells = _cells(report, "fakekafka")
    assert cells and report["brokers"]["fakekafka"]["available"]
    assert not _unlisted(cells), "\n".join(_unlisted(cells))
    # every cell a client can run passes, or differs only where KNOWN_DIFFERENCES.md says why
    assert {c["status"] for c in cells if not c["known"]} <= {"pass", "unsupported"}
    # what is unsupported is the client's limit, never fakekafka's: Kafka's cell is unsupported too
    on_kafka = {(c["scenario"], c["client"]): c["status"] for c in _cells(report, "kafka")}
    for c in cells:
        if c["status"] == "unsupported" and on_kafka:
            assert on_kafka.get((c["scenario"], c["client"])) == "unsupported", (c["scenario"], c["client"])


@pytest.mark.background("compat-matrix")
def test_tansu_differs_only_where_listed(report: dict[str, Any]) -> None:
    if tansu_binary() is None:
        pytest.skip(TANSU_HINT)
    cells = _cells(report, "tansu")
    assert cells and report["brokers"]["tansu"]["available"], report["brokers"]["tansu"]
    assert not _unlisted(cells), "\n".join(_unlisted(cells))
    assert any(c["status"] == "pass" for c in cells)


@pytest.mark.background("compat-matrix")
def test_known_differences_are_current(report: dict[str, Any]) -> None:
    assert not report["stale_known"], report["stale_known"]


@pytest.mark.background("compat-matrix")
def test_real_kafka(report: dict[str, Any]) -> None:
    """Apache Kafka ran in the same run: its own cells match the written expectations, and it was the
    reference for every fakekafka cell it answered."""
    why = _kafka_available()
    if why is not None:
        pytest.skip(why)
    assert report["brokers"].get("kafka", {}).get("available"), report["brokers"].get("kafka")
    kafka = _cells(report, "kafka")
    assert not _unlisted(kafka), "\n".join(_unlisted(kafka))
    assert sum(c["status"] == "pass" for c in kafka) >= 60 * 4  # >= 60 scenarios, most clients
    on_kafka = {(c["scenario"], c["client"]) for c in kafka if c["status"] in ("pass", "differs")}
    for c in _cells(report, "fakekafka"):
        if (c["scenario"], c["client"]) in on_kafka and c["status"] in ("pass", "differs"):
            assert c["reference"] == "kafka", (c["scenario"], c["client"], c["reference"])


@background.job("compat-old-clients", seconds=99)
def _old_clients(config: pytest.Config) -> Callable[[], tuple[subprocess.CompletedProcess[str], Path]]:
    why = _kafka_available()
    if why is not None:
        pytest.skip(why)
    return _run("kafka", "fakekafka", out=ROOT / "build" / "compat-ci-old", clients=OLD_CLIENTS)


@pytest.mark.background("compat-old-clients")
def test_old_clients_see_fakekafka_as_kafka(request: pytest.FixtureRequest) -> None:
    """The versions users still pin (kafka-clients 3.9 and 2.8, kafka-python 2.0.2, confluent-kafka 1.9.2,
    aiokafka 0.13.0), every scenario, on Kafka and fakekafka: each fakekafka cell matches what the same client
    saw on Kafka."""
    report = _report(background.result("compat-old-clients", request.config))
    fake = _cells(report, "fakekafka")
    assert {c["client"] for c in fake} == set(OLD_CLIENTS)
    for broker in ("kafka", "fakekafka"):
        unlisted = _unlisted(_cells(report, broker))
        assert not unlisted, "\n".join(unlisted)
    on_kafka = {(c["scenario"], c["client"]): c["status"] for c in _cells(report, "kafka")}
    for c in fake:
        if c["status"] == "unsupported":
            assert on_kafka.get((c["scenario"], c["client"])) == "unsupported", (c["scenario"], c["client"])
        elif on_kafka.get((c["scenario"], c["client"])) in ("pass", "differs"):
            assert c["reference"] == "kafka", (c["scenario"], c["client"], c["reference"])
    assert not report["stale_known"], report["stale_known"]


@background.job("compat-go-node", seconds=103)
def _go_node_clients(config: pytest.Config) -> Callable[[], tuple[subprocess.CompletedProcess[str], Path]]:
    from compat.clients.toolchains import GO_DRIVERS, BuildError, go_driver, node_modules, rust_driver
    try:
        for name in GO_DRIVERS:
            go_driver(name)
        node_modules()
        rust_driver()
    except BuildError as e:
        pytest.skip(str(e))
    why = _kafka_available()
    if why is not None:
        pytest.skip(why)
    return _run("kafka", "fakekafka", out=ROOT / "build" / "compat-ci-go-node", clients=GO_NODE_CLIENTS)


@pytest.mark.background("compat-go-node")
def test_go_and_node_clients_see_fakekafka_as_kafka(request: pytest.FixtureRequest) -> None:
    """franz-go (kgo, kadm), sarama, kafka-go, KafkaJS and the rdkafka crate through their compat drivers
    (compat/clients/go, node, rust), every scenario, on Kafka and fakekafka in a run of their own: each
    fakekafka cell matches what the same client saw on Kafka, and what is unsupported is the client's limit
    (unsupported on Kafka too)."""
    report = _report(background.result("compat-go-node", request.config))
    fake = _cells(report, "fakekafka")
    assert {c["client"] for c in fake} == set(GO_NODE_CLIENTS)
    for broker in ("kafka", "fakekafka"):
        unlisted = _unlisted(_cells(report, broker))
        assert not unlisted, "\n".join(unlisted)
    on_kafka = {(c["scenario"], c["client"]): c["status"] for c in _cells(report, "kafka")}
    for c in fake:
        if c["status"] == "unsupported":
            assert on_kafka.get((c["scenario"], c["client"])) == "unsupported", (c["scenario"], c["client"])
        elif on_kafka.get((c["scenario"], c["client"])) in ("pass", "differs"):
            assert c["reference"] == "kafka", (c["scenario"], c["client"], c["reference"])
    for client in GO_NODE_CLIENTS:  # the drivers do run: most scenarios pass for each client
        assert sum(c["status"] == "pass" and c["client"] == client for c in fake) >= 40, client
    assert not report["stale_known"], report["stale_known"]
