"""tests/hang_guard.py: a test stuck where pytest-timeout's signal cannot reach fails alone under xdist, its
children stopped, instead of holding the tier."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state != "Z"


def test_a_test_stuck_in_c_code_fails_alone_and_its_children_are_stopped(
        pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, request: pytest.FixtureRequest) -> None:
    monkeypatch.setenv("PYTHONPATH", str(request.config.rootpath))
    pytester.makeini("[pytest]\ntimeout = 1\nhang_grace = 1\n")
    child_pid = pytester.path / "child.pid"
    pytester.makepyfile(test_stuck=f"""
        import os
        import subprocess

        def test_stuck_in_c():
            child = subprocess.Popen(["sleep", "120"], start_new_session=True)
            open({str(child_pid)!r}, "w").write(str(child.pid))
            os.system("sleep 120")  # C's system(): waits in C, where a Python signal handler does not run

        def test_interrupted_by_pytest_timeout():
            import time
            time.sleep(120)

        def test_passes():
            pass
    """)
    result = pytester.runpytest_subprocess("-p", "tests.hang_guard", "-p", "no:cacheprovider", "-p", "no:fakekafka",
                                           "-n", "3", "--dist", "loadgroup", "--max-worker-restart", "0")
    result.assert_outcomes(passed=1, failed=2)
    result.stdout.fnmatch_lines(["*worker 'gw*' crashed while running 'test_stuck.py::test_stuck_in_c'*"])
    result.stdout.fnmatch_lines(["*test_interrupted_by_pytest_timeout*Timeout*"])
    err = result.stderr.str() + result.stdout.str()
    assert "test_stuck.py::test_stuck_in_c: still running 1 s past its 1 s timeout" in err
    assert re.search(r'test_stuck\.py", line \d+ in test_stuck_in_c', err), "no stack of the stuck test"
    assert not _alive(int(child_pid.read_text())), "the stuck test's child still runs"
    assert os.getpid()  # this process was not the one ended
