"""pytest plugin for Spark jobs (entry point `fakekafka_spark`): the `spark` fixture and the `spark` marker.

`spark` is one local SparkSession for the whole test session (Spark takes seconds to start). Its format("kafka")
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
        if "spark" in getattr(item, "fixturenames", ()) and item.get_closest_marker("spark") is None:
            item.add_marker(pytest.mark.spark)


def _describe(route: str, detail: str) -> str:
    if route == "jvm":
        return f"format('kafka') ran through Spark's own Kafka connector ({detail})"
    return f"format('kafka') ran through fakekafka's stand-in (Python data source), not Spark's connector: {detail}"


@pytest.fixture(scope="session")
def spark(request: pytest.FixtureRequest) -> Iterator[Any]:
    """A local SparkSession (local[2], no UI, 2 shuffle partitions, errors-only logs) on which format("kafka")
    is Spark's Kafka connector if its jars are found, else fakekafka's stand-in. The stand-in is registered as
    format("fakekafka") either way."""
    from fakekafka.spark.session import missing_requirements
    reason = missing_requirements()
    if reason:
        pytest.skip(reason)
    from fakekafka.spark.route import choose_kafka_route, register
    from fakekafka.spark.session import local_spark_session
    session = local_spark_session("fakekafka-tests")
    try:
        route, detail = choose_kafka_route(session)
        if route == "jvm":
            register(session)
        request.config.stash[_CHOSEN] = route
        request.config.stash[_ROUTE] = _describe(route, detail)
        if route == "jvm" and request.config.getoption("--spark-route") != "auto":
            request.config.stash[_ROUTE] += "; the [standin] tests through fakekafka's stand-in (--spark-route)"
        yield session
    finally:
        session.stop()


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
