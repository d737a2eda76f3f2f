"""pytest plugin for Spark jobs (entry point `fakekafka_spark`): the `spark` fixture and the `spark` marker.

`spark` is one local SparkSession for the whole test session (Spark takes seconds to start). Its format("kafka")
is Spark's own connector when the connector's jars are found (`.ci/install.sh` resolves them into its cache;
see `kafka_connector_jars`), else fakekafka's stand-in; the route taken is printed in the terminal summary and
added to the report of every failed Spark test, so a run says which connector it checked. Tests that use it
are marked `spark` (added automatically), so `pytest -m "not spark"` runs everything else. Without
pyspark/pyarrow or Java the fixture skips and says what to install. This module imports nothing from pyspark,
so the plugin loads in environments without it.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

__all__ = ["spark"]

_ROUTE = pytest.StashKey[str]()


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "spark: the test runs Spark (the session-wide `spark` fixture); deselect with -m 'not spark'")


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
        request.config.stash[_ROUTE] = _describe(route, detail)
        yield session
    finally:
        session.stop()


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Iterator[Any]:
    report = yield
    route = item.config.stash.get(_ROUTE, None)
    if report.failed and route is not None and "spark" in getattr(item, "fixturenames", ()):
        report.sections.append(("fakekafka spark", route))
    return report


def pytest_terminal_summary(terminalreporter: Any, config: pytest.Config) -> None:
    route = config.stash.get(_ROUTE, None)
    if route is not None:
        terminalreporter.write_line(f"spark: {route}")
