"""The compatibility suite's CI part (compat/, `python -m compat`): every scenario through the five current
clients against Apache Kafka, fakekafka and tansu in one run (`--quick`: tansu skips the scenarios with a
subscribed member). Kafka's observed outcome is the reference for
fakekafka's and tansu's cells (each scenario's written expectation, Kafka's documented behaviour, is the
reference for Kafka's own cells and where Kafka is not installed); a cell that differs or errors fails
unless compat/KNOWN_DIFFERENCES.md lists it.

One `python -m compat` run per group of clients (a subprocess: client libraries, JVMs and brokers stay out of
pytest's process), a module-scoped fixture, serves that group's tests, one test per client, so a failure names
the client; its lanes (broker × client) run side by side, so the whole run takes about as long as tansu's slowest
lane (tansu joins a group only after session.timeout.ms / 2). The table goes to build/compat-ci.md. Without
Kafka's jars (`.ci/install.sh` resolves them) the run has fakekafka
and tansu only, judged against the written expectations, and the real-Kafka test skips.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import pytest

from compat.brokers import Unavailable, start_kafka, tansu_binary
from tests.subproc import run_terminating

pytestmark = [pytest.mark.clients, pytest.mark.timeout(960)]

ROOT = Path(__file__).resolve().parents[2]
OUT = ROOT / "build" / "compat-ci"
TANSU_HINT = 'tansu is not installed: run `eval "$(bash .ci/install.sh)"` (sets FAKEKAFKA_BIN)'


CURRENT_CLIENTS = ("kafka-python", "aiokafka", "confluent-kafka", "kcat", "java")
OLD_CLIENTS = ("java-3.9", "java-2.8", "kafka-python-2.0.2", "confluent-kafka-1.9.2", "aiokafka-0.13.0")
GO_NODE_CLIENTS = ("franz-go", "sarama", "kafka-go", "kafkajs", "rdkafka")
KAFKA_39_CLIENTS = ("java-3.9", "kafka-python-2.0.2", "confluent-kafka-1.9.2", "java")
"""The clients CI runs on Kafka 3.9.1 and on fakekafka as 3.9: the versions 3.9 users pin, and today's Java client
(a newer client in front of an older cluster); the other clients run on 3.9 by hand (docs/cookbook/older-kafka.md)."""


def _run(*brokers: str, out: Path = OUT, timeout: float = 900, clients: tuple[str, ...] = CURRENT_CLIENTS,
         scenarios: tuple[str, ...] = (), diff_out: Path | None = None) -> dict[str, Any]:
    """Runs `python -m compat` and returns its report (fails when it did not write one); prints its output.
    `diff_out`: the first two brokers' lanes are compared field by field too (`--diff-out`)."""
    # --quick: the scenarios with a subscribed member are left out on tansu (each join takes seconds there);
    # every lane starts at once (--jobs), so the slow tansu lanes do not queue behind the quick ones. The
    # old clients run in a run of their own, against Kafka and fakekafka only (with tansu: 15 min).
    cmd = [sys.executable, "-m", "compat", *(a for b in brokers for a in ("--broker", b)), "--out", str(out),
           "--quick", "--jobs", "20", *(a for c in clients for a in ("--client", c)),
           *(a for n in scenarios for a in ("--scenario", n)),
           *(("--diff-out", str(diff_out)) if diff_out else ())]
    out.with_suffix(".json").unlink(missing_ok=True)  # a report from an earlier run must not pass for this one
    if diff_out:
        diff_out.with_suffix(".json").unlink(missing_ok=True)
    proc = run_terminating(cmd, timeout, cwd=ROOT, env=dict(os.environ, PYTHONUNBUFFERED="1"))
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


DIFF_OUT = ROOT / "build" / "compat-diff-ci"


@pytest.fixture(scope="module")
def report() -> dict[str, Any]:
    """The current clients on Kafka (where it can start), fakekafka and tansu (where installed); with Kafka, the
    wire diff of the same run's Kafka and fakekafka lanes (`--diff-out`) is written to DIFF_OUT."""
    if _kafka_available() is None:
        return _run("kafka", "fakekafka", *(["tansu"] if tansu_binary() else []), diff_out=DIFF_OUT)
    return _run("fakekafka", *(["tansu"] if tansu_binary() else []))


def _cells(report: dict[str, Any], broker: str, client: str | None = None) -> list[dict[str, Any]]:
    return [c for c in report["cells"] if c["broker"] == broker and client in (None, c["client"])]


def _unlisted(cells: list[dict[str, Any]]) -> list[str]:
    """Each failing cell: what differs, then its detail (the error; on real Kafka, the broker's log about it)."""
    return [f"{c['scenario']} / {c['client']} on {c['broker']}: {c['status']}: " + "; ".join(c["diff"][:5])
            + (f"\n{_ends(c['detail'].strip())}" if c["detail"].strip() else "")
            for c in cells if c["status"] in ("differs", "error") and not c["known"]]


def _ends(text: str, head: int = 20_000, tail: int = 5000) -> str:
    """A long detail's start (a stalled rebalance's first steps) and end (the error, the broker's log)."""
    if len(text) <= head + tail:
        return text
    return f"{text[:head]}\n... {len(text) - head - tail} characters ...\n{text[-tail:]}"


def _judge_against_kafka(report: dict[str, Any], client: str, kafka: str = "kafka",
                         fake: str = "fakekafka") -> None:
    """The client's fakekafka cells match what it saw on Kafka: nothing unlisted differs or errs on either broker;
    what is unsupported is the client's limit (unsupported on Kafka too); Kafka was the reference where it
    answered."""
    fake_cells = _cells(report, fake, client)
    assert fake_cells, f"no {fake} cell for {client}"
    for broker in (kafka, fake):
        unlisted = _unlisted(_cells(report, broker, client))
        assert not unlisted, "\n".join(unlisted)
    on_kafka = {c["scenario"]: c["status"] for c in _cells(report, kafka, client)}
    for c in fake_cells:
        if c["status"] == "unsupported":
            assert on_kafka.get(c["scenario"]) == "unsupported", (c["scenario"], client)
        elif on_kafka.get(c["scenario"]) in ("pass", "differs"):
            assert c["reference"] == kafka, (c["scenario"], client, c["reference"])


@pytest.mark.parametrize("client", CURRENT_CLIENTS)
def test_fakekafka_behaves_like_kafka(report: dict[str, Any], client: str) -> None:
    cells = _cells(report, "fakekafka", client)
    assert cells and report["brokers"]["fakekafka"]["available"]
    assert not _unlisted(cells), "\n".join(_unlisted(cells))
    # every cell a client can run passes, or differs only where KNOWN_DIFFERENCES.md says why
    assert {c["status"] for c in cells if not c["known"]} <= {"pass", "unsupported"}
    # what is unsupported is the client's limit, never fakekafka's: Kafka's cell is unsupported too
    on_kafka = {c["scenario"]: c["status"] for c in _cells(report, "kafka", client)}
    for c in cells:
        if c["status"] == "unsupported" and on_kafka:
            assert on_kafka.get(c["scenario"]) == "unsupported", (c["scenario"], client)


def test_tansu_differs_only_where_listed(report: dict[str, Any]) -> None:
    if tansu_binary() is None:
        pytest.skip(TANSU_HINT)
    cells = _cells(report, "tansu")
    assert cells and report["brokers"]["tansu"]["available"], report["brokers"]["tansu"]
    assert not _unlisted(cells), "\n".join(_unlisted(cells))
    assert any(c["status"] == "pass" for c in cells)


def test_known_differences_are_current(report: dict[str, Any]) -> None:
    assert not report["stale_known"], report["stale_known"]


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


def test_wire_diff_against_real_kafka_has_no_unexplained_field(report: dict[str, Any]) -> None:
    """`python -m compat diff`'s comparison over the run's lanes on Kafka and fakekafka (the five current clients,
    every scenario, each through a recording relay): a response field that differs and is not listed under "Wire
    fields" in compat/KNOWN_DIFFERENCES.md fails."""
    why = _kafka_available()
    if why is not None:
        pytest.skip(why)
    diff = json.loads(DIFF_OUT.with_suffix(".json").read_text())
    assert diff["totals"]["responses_compared"] > 0 and diff["sessions"] > 0
    assert diff["totals"]["api_versions_compared"] >= 20 and diff["totals"]["fields_compared"] > 10_000
    assert set(diff["clients"]) == set(CURRENT_CLIENTS)
    unexplained = [f"{u['api']} v{u['version']} {u['field']}: {u['example']}" for u in diff["unexplained"]]
    assert not unexplained, "fields that differ from real Kafka and are not listed under 'Wire fields' in " \
                            "compat/KNOWN_DIFFERENCES.md:\n" + "\n".join(unexplained)


@pytest.fixture(scope="module")
def old_clients_report() -> dict[str, Any]:
    """The versions users still pin (kafka-clients 3.9 and 2.8, kafka-python 2.0.2, confluent-kafka 1.9.2,
    aiokafka 0.13.0), every scenario, on Kafka and fakekafka, in a run of their own."""
    why = _kafka_available()
    if why is not None:
        pytest.skip(why)
    report = _run("kafka", "fakekafka", out=ROOT / "build" / "compat-ci-old", clients=OLD_CLIENTS)
    assert not report["stale_known"], report["stale_known"]
    return report


@pytest.mark.xdist_group("compat-old")  # a run of its own, beside the current clients' rather than after it
@pytest.mark.parametrize("client", OLD_CLIENTS)
def test_old_clients_see_fakekafka_as_kafka(old_clients_report: dict[str, Any], client: str) -> None:
    _judge_against_kafka(old_clients_report, client)


@pytest.fixture(scope="module")
def go_node_report() -> dict[str, Any]:
    """franz-go (kgo, kadm), sarama, kafka-go, KafkaJS and the rdkafka crate through their compat drivers
    (compat/clients/go, node, rust), every scenario, on Kafka and fakekafka in a run of their own."""
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
    report = _run("kafka", "fakekafka", out=ROOT / "build" / "compat-ci-go-node", clients=GO_NODE_CLIENTS)
    assert not report["stale_known"], report["stale_known"]
    return report


@pytest.mark.xdist_group("compat-go-node")  # a run of its own: beside the module's other two, not after them
@pytest.mark.parametrize("client", GO_NODE_CLIENTS)
def test_go_and_node_clients_see_fakekafka_as_kafka(go_node_report: dict[str, Any], client: str) -> None:
    _judge_against_kafka(go_node_report, client)
    # the driver does run: most scenarios pass
    assert sum(c["status"] == "pass" for c in _cells(go_node_report, "fakekafka", client)) >= 40, client


@pytest.fixture(scope="module")
def kafka39_report() -> dict[str, Any]:
    """KAFKA_39_CLIENTS on Apache Kafka 3.9.1 and on `fakekafka serve --kafka-version 3.9` (judged against it),
    every scenario but the KIP-848 ones: on 3.9 their members never get partitions (Kafka 3.9's consumer
    protocol is off), each waiting out its timeouts (eight of ten minutes of the run), and the refusal itself
    is compared by the API sweep against Kafka 3.9.1 (ConsumerGroupHeartbeat)."""
    from compat.apache_kafka import OLDER_KAFKA, kafka_lib
    from compat.scenarios import SCENARIOS
    if kafka_lib(OLDER_KAFKA) is None:
        pytest.skip(f"Apache Kafka {OLDER_KAFKA} is not installed: run `eval \"$(bash .ci/install.sh)\"`")
    scenarios = tuple(name for name in SCENARIOS if not name.startswith("consumer_protocol_"))
    report = _run("kafka-3.9", "fakekafka-3.9", out=ROOT / "build" / "compat-ci-3.9", clients=KAFKA_39_CLIENTS,
                  scenarios=scenarios)
    assert not report["stale_known"], report["stale_known"]
    return report


@pytest.mark.xdist_group("compat-3.9")  # a run of its own, beside the others
@pytest.mark.parametrize("client", KAFKA_39_CLIENTS)
def test_fakekafka_as_39_behaves_like_kafka_391(kafka39_report: dict[str, Any], client: str) -> None:
    _judge_against_kafka(kafka39_report, client, kafka="kafka-3.9", fake="fakekafka-3.9")
    assert sum(c["status"] == "pass" for c in _cells(kafka39_report, "fakekafka-3.9", client)) >= 40, client
