"""The client tests against real Apache Kafka, inside the ordinary `python -m pytest` run (what CI runs).

`pytest --kafka-real` makes the plugin's `kafka` fixture a handle on Apache Kafka (a JVM the plugin starts
once); these tests run that over the client tests as a child pytest, so one command checks every such test on
fakekafka (the main run) and on Kafka (here), and a difference fails CI with the child's failures in the
message. They skip where Kafka's jars or java are missing, and inside a run that is itself --kafka-real.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from fakekafka.testing.apache_kafka import INSTALL_HINT, kafka_lib
from tests import background
from tests.subproc import run_terminating

pytestmark = pytest.mark.clients  # `-m "not clients"` leaves these out with the other client tests

ROOT = Path(__file__).resolve().parents[2]
CHILD_TIMEOUT_S = 1680
"""Within this module's own pytest timeout (1800 s), leaving time to stop the child cleanly. The clients child ran
787 s on a loaded machine with this session's additions (proxy, share and consumer groups, Kafka's tools, Connect):
room for a slow machine, which CI's 90 minutes have."""

CLIENT_TESTS = ["tests/integration/clients/test_kafka_python.py", "tests/integration/clients/test_aiokafka.py",
                "tests/integration/clients/test_confluent_kafka.py", "tests/integration/clients/test_kcat.py",
                "tests/integration/clients/test_java_client.py", "tests/integration/clients/test_transactions.py",
                "tests/integration/clients/test_java_transactions.py",
                "tests/integration/clients/test_kafka_streams.py",
                "tests/integration/clients/test_kafka_connect.py",
                "tests/integration/clients/test_java_consumer_protocol.py",
                "tests/integration/clients/test_confluent_consumer_protocol.py",
                "tests/integration/clients/test_java_mixed_groups.py", "tests/integration/test_mixed_groups_wire.py",
                "tests/integration/test_migration_policies_wire.py",
                "tests/integration/clients/test_go_node_drivers.py",
                "tests/integration/clients/test_python_frameworks.py",
                "tests/integration/clients/test_share_groups.py",
                "tests/integration/clients/test_share_groups_confluent.py",
                "tests/integration/clients/test_proxy_clients.py", "tests/integration/clients/test_proxy_compat.py",
                "tests/integration/test_remote_cluster.py", "tests/integration/test_kafka_cli.py",
                "examples/test_clients.py", "examples/order_enricher", "examples/order_api",
                *(f"tests/integration/clients/test_groups_{c}.py::test_session_timeout_below_broker_minimum_is_refused"
                  for c in ("kafka_python", "aiokafka", "confluent_kafka"))]
"""Every client test that runs on the plugin's cluster (`kafka` fixture or `cluster_for`), Spark's aside, and
the remote handle's own tests. (The other group tests read the coordinator's generations and history, which
Kafka does not show over the wire: they run on fakekafka only.)"""

SPARK_TESTS = ["tests/integration/spark", "examples/spark_pipeline"]
"""The Spark source and sink tests and the example pipeline: a Spark JVM beside Kafka's, so apart. The leader
move and the broker kill (tests/integration/spark/test_faults.py) share a 3-node Kafka, in this child only: the move
first, then one node SIGKILLed; that file's injected errors and latency go through a proxy in front of Kafka."""


def _check_real_kafka(config: pytest.Config) -> None:
    """Skips unless Apache Kafka can be started here and this run is not itself against a remote cluster."""
    if config.getoption("--kafka-real") or config.getoption("--fakekafka-bootstrap"):
        pytest.skip("this run is already against a remote cluster")
    if kafka_lib() is None or shutil.which("java") is None:
        pytest.skip(f"Apache Kafka's jars or java are missing: {INSTALL_HINT}")


RDKAFKA_LOG = re.compile(r"%\d\|\d+\.\d+\|")
SUMMARY = re.compile(r"\b(passed|failed|errors?|skipped|no tests ran)\b.* in [\d.]+s\b")
"""pytest's last line ("1 failed, 182 passed, 13 skipped in 312.67s (0:05:12)")."""

CHILD_DURATIONS = 15
"""The child's slowest tests, shown in the parent's terminal summary (conftest.py), so a CI log shows where the
child's minutes go too."""


def child(paths: list[str], *args: str) -> Callable[[], tuple[subprocess.CompletedProcess[str], float]]:
    """The function that runs `python -m pytest --kafka-real PATHS` and returns how it ended and how long it took
    (its command and env made now: it runs in the background, where os.environ may be a test's). On timeout the
    child gets Ctrl-C, not a kill: pytest then ends the session and stops its Kafka JVMs (their own sessions,
    which a killed child would leave running)."""
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1"}
    cmd = [sys.executable, "-m", "pytest", "--kafka-real", "-p", "no:cacheprovider", "-q", "-rfEs",
           f"--durations={CHILD_DURATIONS}", *args, *paths]

    def run() -> tuple[subprocess.CompletedProcess[str], float]:
        t0 = time.monotonic()
        try:
            proc = run_terminating(cmd, CHILD_TIMEOUT_S, stop_signal=signal.SIGINT, merge_stderr=True, cwd=ROOT,
                                   env=env)
        except subprocess.TimeoutExpired as e:
            out = e.output if isinstance(e.output, str) else ""
            pytest.fail(f"pytest --kafka-real did not finish in {CHILD_TIMEOUT_S} s:\n{out[-6000:]}", pytrace=False)
        return proc, time.monotonic() - t0
    return run


def judge_child(paths: list[str], proc: subprocess.CompletedProcess[str], seconds: float,
                node: pytest.Item | None = None) -> str:
    """Fails with the child's failures unless every test passed or was skipped; returns its output. With `node`,
    the child's slowest tests become a report section of that test."""
    out = proc.stdout
    # librdkafka's log lines of clients finalised at the child's exit (reconnecting to a broker already stopped)
    # can follow pytest's summary and fill the output's end: left out of what the failure shows
    kept = [line for line in out.splitlines() if not RDKAFKA_LOG.match(line)]
    summaries = [line for line in kept if SUMMARY.search(line)]
    summary = summaries[-1].strip("= ") if summaries else (kept[-1] if kept else "(no output)")
    print(f"pytest --kafka-real {' '.join(paths)}: {summary} ({seconds:.0f} s)")
    slowest = re.search(r"^=+ slowest .*? =+\n(.*?)(?=^=)", out, re.M | re.S)
    if node is not None and slowest:
        node.add_report_section("call", "kafka-real child durations",
                                f"pytest --kafka-real {' '.join(paths)}: {summary}\n{slowest.group(1)}")
    if proc.returncode != 0:
        failures = [line for line in out.splitlines() if re.match(r"(FAILED|ERROR) ", line)]
        pytest.fail(f"pytest --kafka-real exited {proc.returncode}: {summary}\n" + "\n".join(failures)
                    + "\n--- its output's end (librdkafka's log lines left out) ---\n"
                    + "\n".join(kept)[-6000:], pytrace=False)
    assert re.search(r"\d+ passed", summary), summary
    return out


@background.job("kafka-real-clients", seconds=320)
def _clients_child(config: pytest.Config) -> Callable[[], tuple[subprocess.CompletedProcess[str], float]]:
    _check_real_kafka(config)
    return child(CLIENT_TESTS)


@background.job("kafka-real-spark", seconds=115)
def _spark_child(config: pytest.Config) -> Callable[[], tuple[subprocess.CompletedProcess[str], float]]:
    _check_real_kafka(config)
    pytest.importorskip("pyspark", reason="needs pyspark: pip install 'fakekafka[spark]'")
    # the connector only: the stand-in's second route (pyproject's --spark-route) is checked on fakekafka
    return child(SPARK_TESTS, "--spark-route=auto")


@pytest.mark.background("kafka-real-clients")
@pytest.mark.timeout(1800)
def test_client_tests_pass_against_apache_kafka(request: pytest.FixtureRequest) -> None:
    judge_child(CLIENT_TESTS, *background.result("kafka-real-clients", request.config), node=request.node)


@pytest.mark.spark
@pytest.mark.background("kafka-real-spark")
@pytest.mark.timeout(1800)
def test_spark_tests_pass_against_apache_kafka(request: pytest.FixtureRequest) -> None:
    judge_child(SPARK_TESTS, *background.result("kafka-real-spark", request.config), node=request.node)
