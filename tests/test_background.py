"""tests/background.py, the plugin that starts the suite's long subprocess runs when the session starts: in an
inner pytest run of made-up jobs (no broker), a job runs while the in-process tests do, its tests come last, what
a job raised is its test's outcome, and an ended session leaves no child running."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

JOBS = '''
import os
import sys
import threading
import time

import pytest

from tests import background
from tests.subproc import run_terminating

STARTED = threading.Event()
CHANGED = threading.Event()


@background.job("long", seconds=300)
def _long(config):
    value = os.environ.get("SEEN_AT_START")  # read before any test runs, in the main thread

    def run():
        STARTED.set()
        if background.enabled(config):  # else it runs in its test, after the in-process one
            assert CHANGED.wait(60), "the in-process test did not run while the job ran"
        return f"long done, {value}"
    return run


@background.job("skips", seconds=200)
def _skips(config):
    pytest.skip("no broker here")


@background.job("fails", seconds=100)
def _fails(config):
    def run():
        pytest.fail("the child failed", pytrace=False)
    return run


@background.job("hangs", seconds=400)
def _hangs(config):
    code = "import os, sys, time; open(sys.argv[1], 'w').write(str(os.getpid())); time.sleep(600)"
    return lambda: run_terminating([sys.executable, "-c", code, "child.pid"], 600)


@pytest.mark.background("long")
def test_long(request):
    assert background.result("long", request.config) == "long done, as at the start"


@pytest.mark.background("skips")
def test_skips(request):
    background.result("skips", request.config)


@pytest.mark.background("fails")
def test_fails(request):
    background.result("fails", request.config)


@pytest.mark.background("hangs")
def test_hangs(request):
    background.result("hangs", request.config)


def test_in_process(monkeypatch):
    assert STARTED.wait(60), "the job did not start while the in-process tests ran"
    monkeypatch.setenv("SEEN_AT_START", "as a test set it")  # os.environ is the process's: the job must not care
    CHANGED.set()


def test_fails_once_the_child_runs():
    deadline = time.monotonic() + 60
    while not os.path.exists("child.pid") and time.monotonic() < deadline:
        time.sleep(0.05)
    pytest.fail("the child is running")
'''


@pytest.fixture
def inner(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> pytest.Pytester:
    monkeypatch.setenv("PYTHONPATH", str(ROOT))
    monkeypatch.delenv("FAKEKAFKA_BACKGROUND", raising=False)
    monkeypatch.setenv("SEEN_AT_START", "as at the start")
    pytester.makepyfile(test_jobs=JOBS)
    return pytester


def test_jobs_run_beside_the_in_process_tests_and_their_tests_come_last(inner: pytest.Pytester) -> None:
    result = inner.runpytest_subprocess("-p", "tests.background", "-p", "no:cacheprovider", "-v", "-rs",
                                        "-k", "not hangs and not once_the_child_runs")
    result.assert_outcomes(passed=2, skipped=1, failed=1)
    order = [line.split("::")[1].split()[0] for line in result.outlines if line.startswith("test_jobs.py::")]
    # the in-process test first, then the jobs' tests, the shortest job's first
    assert order == ["test_in_process", "test_fails", "test_skips", "test_long"]
    result.stdout.fnmatch_lines(["*the child failed*", "*background jobs*",
                                 "long: * s in the background, from * s into the session*", "*no broker here*"])


def test_without_background_each_test_runs_its_job_where_it_stands(inner: pytest.Pytester,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FAKEKAFKA_BACKGROUND", "0")
    result = inner.runpytest_subprocess("-p", "tests.background", "-p", "no:cacheprovider", "-v",
                                        "-k", "not hangs and not in_process and not once_the_child_runs")
    result.assert_outcomes(passed=1, skipped=1, failed=1)
    order = [line.split("::")[1].split()[0] for line in result.outlines if line.startswith("test_jobs.py::")]
    assert order == ["test_long", "test_skips", "test_fails"]  # as collected
    result.stdout.fnmatch_lines(["long: * s by its test, *"])


def test_an_ended_session_stops_the_children_of_running_jobs(inner: pytest.Pytester) -> None:
    """-x ends the session at the first failure, while the hanging job's child still runs: it is stopped."""
    result = inner.runpytest_subprocess("-p", "tests.background", "-p", "no:cacheprovider", "-x",
                                        "-k", "hangs or once_the_child_runs", timeout=120)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*the child is running*", "hangs: *in the background*"])
    pid = int((inner.path / "child.pid").read_text())
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)
