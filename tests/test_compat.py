"""The compatibility suite's CI part (compat/, `python -m compat`): every scenario through every client
against fakekafka and tansu, judged against the scenarios' written expectations (Kafka's documented
behaviour); a cell that differs or errors fails unless compat/KNOWN_DIFFERENCES.md lists it.

One `python -m compat` run (a subprocess: client libraries, JVMs and brokers stay out of pytest's
process) serves every test here; its lanes (broker × client) run side by side, so the whole run takes
about as long as tansu's slowest lane (~1.5 min; tansu joins a group only after session.timeout.ms / 2).
The table goes to build/compat-ci.md. The real-Kafka part needs Docker and skips without it.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from compat.brokers import Unavailable, start_kafka, tansu_binary

pytestmark = [pytest.mark.clients, pytest.mark.timeout(600)]

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "build" / "compat-ci"
TANSU_HINT = 'tansu is not installed: run `eval "$(bash .ci/install.sh)"` (sets FAKEKAFKA_BIN)'


def _run(*brokers: str, out: Path = OUT, timeout: float = 540) -> dict[str, Any]:
    cmd = [sys.executable, "-m", "compat", *(a for b in brokers for a in ("--broker", b)), "--out", str(out)]
    proc = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=timeout, check=False,
                          env=dict(os.environ, PYTHONUNBUFFERED="1"))
    print(proc.stdout[-20000:])
    if proc.returncode not in (0, 1) or not out.with_suffix(".json").exists():
        pytest.fail(f"python -m compat exited {proc.returncode}:\n{proc.stderr[-4000:]}")
    return json.loads(out.with_suffix(".json").read_text())


@pytest.fixture(scope="module")
def report() -> dict[str, Any]:
    return _run("fakekafka", *(["tansu"] if tansu_binary() else []))


def _cells(report: dict[str, Any], broker: str) -> list[dict[str, Any]]:
    return [c for c in report["cells"] if c["broker"] == broker]


def _unlisted(cells: list[dict[str, Any]]) -> list[str]:
    return [f"{c['scenario']} / {c['client']}: {c['status']}: " + ("; ".join(c["diff"][:5]) or
                                                                   c["detail"].strip()[-600:])
            for c in cells if c["status"] in ("differs", "error") and not c["known"]]


def test_fakekafka_behaves_like_kafka(report: dict[str, Any]) -> None:
    cells = _cells(report, "fakekafka")
    assert cells and report["brokers"]["fakekafka"]["available"]
    assert not _unlisted(cells), "\n".join(_unlisted(cells))
    # fakekafka has no listed differences: every cell a client can run passes
    assert {c["status"] for c in cells} <= {"pass", "unsupported"}
    # what is unsupported is the client's limit, never fakekafka's
    assert {c["client"] for c in cells if c["status"] == "unsupported"} <= {"kcat"}


def test_tansu_differs_only_where_listed(report: dict[str, Any]) -> None:
    if tansu_binary() is None:
        pytest.skip(TANSU_HINT)
    cells = _cells(report, "tansu")
    assert cells and report["brokers"]["tansu"]["available"], report["brokers"]["tansu"]
    assert not _unlisted(cells), "\n".join(_unlisted(cells))
    assert any(c["status"] == "pass" for c in cells)


def test_known_differences_are_current(report: dict[str, Any]) -> None:
    assert not report["stale_known"], report["stale_known"]


def test_real_kafka() -> None:
    """The same scenarios against Apache Kafka (testcontainers), the reference for fakekafka's cells."""
    try:
        target = start_kafka()
    except Unavailable as e:
        pytest.skip(str(e))
    target.stop()  # available: the run below starts its own
    result = _run("kafka", "fakekafka", out=ROOT / "build" / "compat-kafka")
    for broker in ("kafka", "fakekafka"):
        unlisted = _unlisted(_cells(result, broker))
        assert not unlisted, "\n".join(unlisted)
