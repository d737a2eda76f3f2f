"""A test stuck where pytest-timeout's `signal` method cannot reach fails instead of holding its worker, and the
tier, until CI's own timeout: the signal interrupts Python code only, and a client's C code (a librdkafka close)
can block for ever. Past the test's timeout and a grace (ini `hang_grace`), its process writes every thread's stack,
stops its children and exits; pytest-xdist reports the test as failed (its worker crashed) and the other workers
go on. pytest-timeout's `thread` method would end the process at the timeout itself, also for the tests the signal
does interrupt, each then taking its worker's queued tests with it."""

from __future__ import annotations

import faulthandler
import os
import signal
import sys
import threading
from collections.abc import Iterator

import pytest

_stderr_fd = -1
"""The process's own stderr, which output capture does not replace: where a hung test's stacks are written."""


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addini("hang_grace", "seconds a test may run past its pytest-timeout before its process ends it "
                  "(tests/hang_guard.py)", default="60")


def pytest_configure(config: pytest.Config) -> None:
    global _stderr_fd
    _stderr_fd = os.dup(sys.__stderr__.fileno())


def time_limit(item: pytest.Item) -> float:
    """The test's pytest-timeout in seconds (its marker, else the command line's or the ini file's); 0: none."""
    try:
        configured = float(item.config.getoption("timeout", None) or item.config.getini("timeout") or 0)
    except ValueError:  # pytest-timeout not loaded (`-p no:timeout`): no timeout to outlive
        return 0.0
    marker = item.get_closest_marker("timeout")
    if marker is None:
        return configured
    value = float(marker.kwargs.get("timeout", marker.args[0] if marker.args else configured) or 0)
    # func_only: the marker times the test function alone, its fixtures run on the configured timeout
    return value and (value + configured if marker.kwargs.get("func_only") else value)


def _kill_descendants() -> None:
    """SIGKILL to every process this one started, however deep (a broker's JVM runs in a session of its own)."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as f:
                ppid = int(f.read().rsplit(b")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            continue
        children.setdefault(ppid, []).append(int(entry))
    pending = list(children.get(os.getpid(), []))
    while pending:
        pid = pending.pop()
        pending += children.get(pid, [])
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass


def _end_if_hung(nodeid: str, limit: float, grace: float, done: threading.Event) -> None:
    if done.wait(limit + grace):
        return
    os.write(_stderr_fd, f"\n{nodeid}: still running {grace:.0f} s past its {limit:.0f} s timeout, where "
                         "pytest-timeout's signal does not reach (C code?): every thread's stack, then this process "
                         "stops its children and exits\n".encode())
    faulthandler.dump_traceback(file=_stderr_fd, all_threads=True)
    _kill_descendants()
    os._exit(1)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_protocol(item: pytest.Item) -> Iterator[object]:
    limit = time_limit(item)
    if limit <= 0:
        return (yield)
    grace = float(item.config.getini("hang_grace"))
    done = threading.Event()
    threading.Thread(target=_end_if_hung, args=(item.nodeid, limit, grace, done), daemon=True,
                     name="hang-guard").start()
    # the same from C should the stuck code hold the GIL: the stacks, not the children stopped
    faulthandler.dump_traceback_later(limit + 2 * grace, exit=True, file=_stderr_fd)
    try:
        return (yield)
    finally:
        done.set()
        faulthandler.cancel_dump_traceback_later()
