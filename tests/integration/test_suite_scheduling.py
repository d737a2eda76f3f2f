"""How .ci/test spreads the suite over pytest-xdist workers: tests sharing a costly fixture of the suite stay on
one worker (tests/conftest.py: shared_fixture_group), the others spread."""

from __future__ import annotations

import collections

import pytest


def test_tests_sharing_a_module_fixture_run_on_one_worker(pytester: pytest.Pytester, monkeypatch, request) -> None:
    monkeypatch.setenv("PYTHONPATH", str(request.config.rootpath))
    tests = pytester.mkdir("tests")
    (tests / "test_shared.py").write_text("""
import os, time
import pytest

@pytest.fixture(scope="module")
def costly():
    return os.getpid()

@pytest.mark.parametrize("i", range(8))
def test_uses_it(costly, i):
    time.sleep(0.05)
    print("WORKER", os.environ["PYTEST_XDIST_WORKER"])

@pytest.mark.parametrize("i", range(8))
def test_free(i):
    time.sleep(0.05)
    print("WORKER", os.environ["PYTEST_XDIST_WORKER"])
""")
    result = pytester.runpytest_subprocess("-p", "tests.conftest", "-p", "no:cacheprovider", "-n", "2",
                                           "--dist", "loadgroup", "-v", "-rA", "tests")
    result.assert_outcomes(passed=16)
    workers: dict[str, set[str]] = collections.defaultdict(set)
    for line in result.outlines:
        # -v lines: "[gw1] [ 12%] PASSED tests/test_shared.py::test_uses_it[3]@tests/test_shared.py" (its group)
        if line.startswith("[gw") and "PASSED" in line:
            test = line.split("::")[1]
            workers[test.split("[")[0]].add(line.split()[0])
            assert ("@" in test) == test.startswith("test_uses_it"), line
    assert len(workers["test_uses_it"]) == 1, workers
    assert len(workers["test_free"]) >= 1, workers
