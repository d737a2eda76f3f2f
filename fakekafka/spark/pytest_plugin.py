"""pytest plugin for Spark jobs (entry point `fakekafka_spark`): the `spark` fixture and the `spark` marker.

`spark` is one local SparkSession for the whole test session (Spark takes seconds to start), checked before each
test and started again when it stopped answering (its JVM died, a timeout cut a py4j call), so a test that breaks
it fails alone; the restarts and their causes are printed in the terminal summary. Its format("kafka")
is Spark's own connector when the connector's jars are found (`.ci/install.sh` resolves them into its cache;
see `kafka_connector_jars`), else fakekafka's stand-in; the route taken is printed in the terminal summary and
added to the report of every failed Spark test, so a run says which connector it checked. Tests that use it
are marked `spark` (added automatically), so `pytest -m "not spark"` runs everything else.
`--spark-route both` runs each Spark test twice in the one session, `[connector]` and `[standin]` (the
stand-in's redirect switched on for that test only), so a machine with the connector's jars checks the
fallback too; `--spark-route marked` does so for the tests marked `spark_both_routes` only (a cheaper
selection: the stand-in's queries take 1.7 times the connector's), `--spark-route standin` runs every test on
the stand-in. A test marked `spark_any_route` (it names format("fakekafka") itself, or checks the route
choice) runs once. Without
pyspark/pyarrow or Java the fixture skips and says what to install. This module imports nothing from pyspark,
so the plugin loads in environments without it.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

__all__ = ["spark", "spark_route"]

_ROUTE = pytest.StashKey[str]()
_CHOSEN = pytest.StashKey[str]()
"""The route the session chose ("jvm" or "python"), before any per-test switch to the stand-in."""
_RESTARTS = pytest.StashKey[list[str]]()
"""Why the session's SparkSession was started again, one entry per restart (with the test that found it broken)."""
_ROUTES = {"auto": (), "both": ("connector", "standin"), "marked": ("connector", "standin"), "standin": ("standin",)}


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.getgroup("fakekafka").addoption(
        "--spark-route", choices=sorted(_ROUTES), default="auto",
        help="the route format('kafka') takes in Spark tests: auto (Spark's connector when its jars are found, "
             "else fakekafka's stand-in), both (each test on the connector and on the stand-in), marked (both for "
             "tests marked spark_both_routes, auto for the rest), standin")


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "spark: the test runs Spark (the session-wide `spark` fixture); deselect with -m 'not spark'")
    config.addinivalue_line(
        "markers", "spark_any_route: the Spark test does not depend on the route format('kafka') takes; "
                   "--spark-route both runs it once")
    config.addinivalue_line(
        "markers", "spark_both_routes: --spark-route marked runs this Spark test on the connector and the stand-in")


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    mode = metafunc.config.getoption("--spark-route")
    routes = _ROUTES[mode]
    definition = metafunc.definition
    if not routes or "spark" not in metafunc.fixturenames or definition.get_closest_marker("spark_any_route"):
        return
    if mode == "marked" and not definition.get_closest_marker("spark_both_routes"):
        return
    metafunc.parametrize("spark_route", routes, indirect=True)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        if "spark" not in getattr(item, "fixturenames", ()):
            continue
        if item.get_closest_marker("spark") is None:
            item.add_marker(pytest.mark.spark)
        _time_the_test_only(item)


def _time_the_test_only(item: pytest.Item) -> None:
    """pytest-timeout's limit for a Spark test counts the test, not the fixtures (func_only): starting the shared
    SparkSession, or starting it again after an earlier test broke it, is not charged to whichever test comes
    next. Otherwise a restart slowed by a loaded machine runs that test out of time, its cut-off py4j call
    breaks the session again, and one timeout becomes a run of them. A test's own timeout marker keeps its
    value (and its own func_only, if it says one)."""
    marker = item.get_closest_marker("timeout")
    if marker is not None and "func_only" in marker.kwargs:
        return
    args = marker.args if marker is not None else ()
    kwargs = {**(marker.kwargs if marker is not None else {}), "func_only": True}
    item.add_marker(pytest.mark.timeout(*args, **kwargs), append=False)


def _describe(route: str, detail: str) -> str:
    if route == "jvm":
        return f"format('kafka') ran through Spark's own Kafka connector ({detail})"
    return f"format('kafka') ran through fakekafka's stand-in (Python data source), not Spark's connector: {detail}"


class _SparkHolder:
    """The session's SparkSession, checked before each test and started again when it no longer answers (its JVM
    died, its py4j connection was cut mid-call by a timeout, its SparkContext was stopped), so one broken test
    does not take every later Spark test with it."""

    def __init__(self, config: pytest.Config) -> None:
        self.config = config
        self.session: Any = None
        self.restarts = config.stash.setdefault(_RESTARTS, [])

    def get(self, test: str) -> Any:
        if self.session is not None:
            why = _why_broken(self.session)
            if why is None:
                return self.session
            self.restarts.append(f"before {test}: {why}")
            self.session = None
            if why != _STOPPED:  # a stopped SparkContext leaves its JVM healthy: the new one starts there
                _discard()
        self.session = self._start()
        return self.session

    def _start(self) -> Any:
        from fakekafka.spark.route import choose_kafka_route, register
        from fakekafka.spark.session import local_spark_session
        try:
            session = local_spark_session("fakekafka-tests")
            route, detail = choose_kafka_route(session)
            if route == "jvm":
                register(session)
        except BaseException:  # a start cut off by a timeout too: the next test starts from scratch
            _discard()
            raise
        stash = self.config.stash
        stash[_CHOSEN] = route
        stash[_ROUTE] = _describe(route, detail)
        if route == "jvm" and self.config.getoption("--spark-route") != "auto":
            stash[_ROUTE] += "; the [standin] tests through fakekafka's stand-in (--spark-route)"
        return session

    def stop(self) -> None:
        if self.session is not None:
            if _why_broken(self.session) is None:
                self.session.stop()
            else:
                _discard()
            self.session = None


_STOPPED = "its SparkContext was stopped"


def _why_broken(session: Any) -> str | None:
    """Why this SparkSession cannot run the next test, or None: its JVM exited, the py4j gateway does not echo
    a fresh value (connection refused, or an answer left over from a call a timeout interrupted), or its
    SparkContext is stopped."""
    import secrets
    sc = session.sparkContext
    proc = getattr(sc._gateway, "proc", None)
    if proc is not None and proc.poll() is not None:
        return f"the Spark JVM (pid {proc.pid}) exited with {proc.returncode}"
    client = getattr(sc._gateway, "_gateway_client", None)
    if hasattr(client, "get_thread_connection"):  # PySpark's pinned threads: one py4j connection per thread
        connection = client.get_thread_connection()
        if connection is not None and connection.socket is not None and connection not in client.deque:
            # taken from the pool for a call and never given back: the call was cut off (a test's timeout), its
            # answer is still to come and the JVM may still be running the job
            return "a py4j call into its JVM was cut off (a timeout?) and its job may still be running"
    nonce = secrets.randbelow(1 << 30) + 1
    try:
        echoed = sc._jvm.java.lang.Math.abs(-nonce)
        if echoed != nonce:
            return f"the py4j gateway answered {echoed!r} to a call echoing {nonce!r} (a call was interrupted)"
        if sc._jsc is None or sc._jsc.sc().isStopped():
            return _STOPPED
    except Exception as e:  # noqa: BLE001 - py4j raises its own errors, socket errors and TypeErrors when broken
        return f"the py4j gateway failed: {type(e).__name__}: {e}"
    return None


def _discard() -> None:
    """Ends a broken (or half-started) SparkSession without asking its JVM: kills the JVM, closes the gateway and
    clears PySpark's globals, so the next `local_spark_session` launches a new JVM instead of reusing the dead
    one."""
    import contextlib

    from pyspark import SparkContext
    from pyspark.sql import SparkSession, SQLContext
    sc = SparkContext._active_spark_context
    gateway = SparkContext._gateway
    proc = getattr(gateway, "proc", None)
    if proc is not None and proc.poll() is None:
        proc.kill()
        proc.wait(timeout=30)
    with contextlib.suppress(Exception):
        gateway.shutdown()
    if sc is not None:
        with contextlib.suppress(Exception):
            sc._accumulatorServer.shutdown()
        sc._jsc = None
    with SparkContext._lock:
        SparkContext._active_spark_context = None
        SparkContext._gateway = None
        SparkContext._jvm = None
    SparkSession._instantiatedSession = None
    SparkSession._activeSession = None
    SQLContext._instantiatedContext = None


@pytest.fixture(scope="session")
def _spark_holder(request: pytest.FixtureRequest) -> Iterator[_SparkHolder]:
    from fakekafka.spark.session import missing_requirements
    reason = missing_requirements()
    if reason:
        pytest.skip(reason)
    holder = _SparkHolder(request.config)
    try:
        yield holder
    finally:
        holder.stop()


@pytest.fixture
def spark(request: pytest.FixtureRequest, _spark_holder: _SparkHolder) -> Any:
    """A local SparkSession (local[2], no UI, 2 shuffle partitions, errors-only logs) on which format("kafka")
    is Spark's Kafka connector if its jars are found, else fakekafka's stand-in. The stand-in is registered as
    format("fakekafka") either way. One session serves the whole test session; it is checked before each test
    and started again if it stopped answering (a dead JVM, a call cut by a timeout)."""
    return _spark_holder.get(request.node.nodeid)


@pytest.fixture(autouse=True)
def spark_route(request: pytest.FixtureRequest) -> Iterator[str | None]:
    """Under --spark-route, the route this Spark test takes: "connector" (skipped where Spark's connector is
    missing) or "standin" (format("kafka") redirected to the stand-in for this test). Autouse, so the option
    can parametrise every test using `spark`; for other tests, and without the option, it does nothing."""
    wanted = getattr(request, "param", None)
    if wanted is None:
        yield None
        return
    session = request.getfixturevalue("spark")
    if wanted == "connector":
        if request.config.stash.get(_CHOSEN, None) != "jvm":
            pytest.skip(f"Spark's Kafka connector is not on this machine: {request.config.stash[_ROUTE]}")
        yield wanted
        return
    from fakekafka.spark.route import redirect_kafka_to_standin
    switched = request.config.stash.get(_CHOSEN, None) == "jvm"
    if switched:
        redirect_kafka_to_standin(session)
    try:
        yield wanted
    finally:
        if switched:
            redirect_kafka_to_standin(session, on=False)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Iterator[Any]:
    report = yield
    route = item.config.stash.get(_ROUTE, None)
    if report.failed and route is not None and "spark" in getattr(item, "fixturenames", ()):
        callspec = getattr(item, "callspec", None)
        if callspec is not None and callspec.params.get("spark_route") == "standin":
            route = _describe("python", "switched to for this test (--spark-route)")
        report.sections.append(("fakekafka spark", route))
    return report


def pytest_terminal_summary(terminalreporter: Any, config: pytest.Config) -> None:
    route = config.stash.get(_ROUTE, None)
    if route is not None:
        terminalreporter.write_line(f"spark: {route}")
    for restart in config.stash.get(_RESTARTS, []):
        terminalreporter.write_line(f"spark: the SparkSession was started again {restart}")
