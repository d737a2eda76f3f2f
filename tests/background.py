"""The suite's long subprocess runs (the compat matrix and diff, the --kafka-real child runs) started in the
background when the session starts, so that their minutes of waiting on brokers, JVMs and client timeouts overlap
the in-process tests instead of following them (a clean-clone CI spent about 15 of its 25 minutes in six such
runs, using well under both cores through most of them). A pytest plugin (tests/conftest.py loads it).

A test module registers a job (`job`): a function of the pytest config, called in the main thread before any
test runs, that checks what the job needs (pytest.skip) and returns the function that runs its subprocess and
returns what the test judges. That one runs in another thread while tests run, and tests change the process's
os.environ (monkeypatch), so it reads nothing from it: the command and its env are made beforehand. It prints
nothing (printing is the test's, so the output lands in the test's report). A test that needs the job carries
`@pytest.mark.background(NAME)` and takes the result with `result(NAME, config)`. After collection (and
deselection) those tests move to the end of the run, and their jobs start as the tests do, in a thread of
their own, one after another, the longest first. A test whose job has not started when it
runs (the test run alone, under xdist, or at the end of the session, where the main thread has nothing else to
do) runs the job itself: the tests at the end come in the reverse order of the jobs, so from the end of the
in-process tests on two jobs run at once, and never more. What a job raised (pytest.skip, pytest.fail, a
timeout) is raised again in its test. At the session's end the children still running are stopped.

FAKEKAFKA_BACKGROUND=0 turns this off: each test then runs its job itself, where it stands in the run.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future
from typing import Any

import pytest

__all__ = ["enabled", "job", "result", "timings"]

Job = Callable[[pytest.Config], Callable[[], Any]]

_JOBS: dict[str, tuple[Job, float]] = {}
_PREPARED: dict[str, Callable[[], Any]] = {}
_FUTURES: dict[str, Future[Any]] = {}
_CLAIMED: set[str] = set()
_LOCK = threading.Lock()
_STOPPING = threading.Event()
_T0 = time.monotonic()
_TIMES: dict[str, dict[str, Any]] = {}
"""Per job: where it ran, when it started and ended, how long its test waited (the terminal summary's lines)."""
_SELECTED = pytest.StashKey[list[str]]()


def job(name: str, seconds: float) -> Callable[[Job], Job]:
    """Registers `fn(config)`, which returns the function running the job `name` (or skips), as that job, which
    takes about `seconds` (a clean-clone CI's figure: the longest start first)."""
    def register(fn: Job) -> Job:
        _JOBS[name] = (fn, seconds)
        return fn
    return register


def enabled(config: pytest.Config) -> bool:
    """Off under xdist (each worker collects every test but runs only some) and with FAKEKAFKA_BACKGROUND=0."""
    if os.environ.get("FAKEKAFKA_BACKGROUND", "1") == "0":
        return False
    return not hasattr(config, "workerinput") and not getattr(config.option, "numprocesses", None)


def _claim(name: str, where: str) -> Future[Any] | None:
    """The job's future if the caller is the one to run it now, else None (it runs or ran elsewhere)."""
    with _LOCK:
        if name in _CLAIMED:
            return None
        _CLAIMED.add(name)
        _TIMES[name] = {"where": where, "start": time.monotonic()}
        return _FUTURES.setdefault(name, Future())


def _run(name: str, fut: Future[Any], config: pytest.Config) -> None:
    try:
        run = _PREPARED.get(name) or _JOBS[name][0](config)  # prepared at the start, or here (run by its test)
        fut.set_result(run())
    except BaseException as e:  # noqa: BLE001 - pytest's Skipped and Failed are BaseExceptions: the test re-raises
        fut.set_exception(e)
    finally:
        _TIMES[name]["end"] = time.monotonic()


def _start(config: pytest.Config, names: list[str]) -> None:
    """Runs the named jobs in a background thread, in this order, each unless a test has claimed it first."""
    with _LOCK:
        for n in names:
            _FUTURES.setdefault(n, Future())
    for n in names:  # in the main thread, before any test can change os.environ
        try:
            _PREPARED[n] = _JOBS[n][0](config)
        except (Exception, pytest.skip.Exception, pytest.fail.Exception) as e:  # the test re-raises it
            fut = _claim(n, "not run (its checks raised)")
            if fut is not None:
                fut.set_exception(e)
                _TIMES[n]["end"] = _TIMES[n]["start"]

    def worker() -> None:
        for n in names:
            if _STOPPING.is_set():
                return
            fut = _claim(n, "in the background")
            if fut is not None:
                _run(n, fut, config)

    if names:
        threading.Thread(target=worker, name="background-jobs", daemon=True).start()


def result(name: str, config: pytest.Config) -> Any:
    """The job's result: waits for it when it runs in the background, runs it here when nothing has started it."""
    asked = time.monotonic()
    fut = _claim(name, "by its test")
    if fut is not None:
        _run(name, fut, config)
        return fut.result()
    fut = _FUTURES[name]
    try:
        return fut.result()
    finally:
        _TIMES[name].setdefault("waited", time.monotonic() - asked)


def timings() -> list[str]:
    """One line per job that ran (the tests' --durations show only what they waited)."""
    lines = []
    for name, t in sorted(_TIMES.items(), key=lambda kv: kv[1]["start"]):
        end = t.get("end")
        took = f"{end - t['start']:.0f} s" if end is not None else "did not finish"
        line = f"{name}: {took} {t['where']}, from {t['start'] - _T0:.0f} s into the session"
        if "waited" in t:
            line += f"; its test waited {t['waited']:.0f} s for it"
        lines.append(line)
    return lines


def _job_of(item: pytest.Item) -> str | None:
    marker = item.get_closest_marker("background")
    return marker.args[0] if marker else None


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "background(name): the test judges the job NAME, which starts in the "
                                       "background when the session starts (tests/background.py)")


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Moves the selected tests of jobs to the end of the run, grouped by job, the shortest job first."""
    if not enabled(config):
        return
    waiting = [item for item in items if _job_of(item) is not None]
    names = sorted({_job_of(item) for item in waiting} & set(_JOBS), key=lambda n: -_JOBS[n][1])
    if not names:
        return
    rank = {n: i for i, n in enumerate(names)}
    waiting.sort(key=lambda item: -rank.get(_job_of(item), -1))  # stable: a module's order within a job
    items[:] = [item for item in items if _job_of(item) is None] + waiting
    config.stash[_SELECTED] = names


def pytest_runtestloop(session: pytest.Session) -> None:
    """Starts the selected tests' jobs as the tests start (not under --collect-only or after collection errors)."""
    config = session.config
    if config.option.collectonly or (session.testsfailed and not config.option.continue_on_collection_errors):
        return
    _start(config, config.stash.get(_SELECTED, []))


def pytest_sessionfinish(session: pytest.Session) -> None:
    """Starts nothing more and stops the children still running (tests/subproc.py), so an interrupted or
    `-x`-ended session leaves no broker or JVM behind."""
    from tests.subproc import stop_all
    _STOPPING.set()
    stop_all()


def pytest_terminal_summary(terminalreporter: Any) -> None:
    lines = timings()
    if lines:
        terminalreporter.write_sep("=", "background jobs (tests/background.py)")
        terminalreporter.write("\n".join(lines) + "\n")
