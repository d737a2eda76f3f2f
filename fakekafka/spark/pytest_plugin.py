"""pytest plugin for Spark jobs (entry point `fakekafka_spark`): the `spark` fixture and the `spark` marker.

`spark` is one local SparkSession for the whole test session (Spark takes seconds to start), with
`use_fakekafka_kafka_source` applied, so `format("kafka")` works whether or not Spark's JVM connector is
on the classpath. Tests that use it are marked `spark` (added automatically), so `pytest -m "not spark"`
runs everything else. Without pyspark/pyarrow or Java the fixture skips and says what to install. This module
imports nothing from pyspark, so the plugin loads in environments without it.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

__all__ = ["spark"]


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "spark: the test runs Spark (the session-wide `spark` fixture); deselect with -m 'not spark'")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        if "spark" in getattr(item, "fixturenames", ()) and item.get_closest_marker("spark") is None:
            item.add_marker(pytest.mark.spark)


@pytest.fixture(scope="session")
def spark() -> Iterator[Any]:
    """A local SparkSession (local[2], no UI, 2 shuffle partitions, errors-only logs) on which format("kafka")
    reaches Spark's Kafka connector if present, else fakekafka's Python data source."""
    from fakekafka.spark.session import missing_requirements
    reason = missing_requirements()
    if reason:
        pytest.skip(reason)
    from fakekafka.spark.route import use_fakekafka_kafka_source
    from fakekafka.spark.session import local_spark_session
    session = local_spark_session("fakekafka-tests")
    try:
        use_fakekafka_kafka_source(session)
        yield session
    finally:
        session.stop()
