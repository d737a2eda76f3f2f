"""Helpers for the Spark connector tests: every test gets a fresh fakekafka cluster (`kafka` fixture) and shares
one SparkSession (`spark` fixture of fakekafka.spark.pytest_plugin). format("kafka") there is Spark's own
connector where `.ci/install.sh` put its jars (CI), else fakekafka's stand-in; the tests state what Spark's
connector does, and the few places where the stand-in does otherwise skip on it (`standin_differs`). CI runs
them on both routes in that one session (`--spark-route both`, pyproject.toml's addopts)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from fakekafka.testing.handle import ClusterHandle

pytestmark = pytest.mark.spark

try:
    from py4j.protocol import Py4JJavaError
    from pyspark.errors import PySparkException
    ERRORS: tuple[type[Exception], ...] = (PySparkException, Py4JJavaError)
    """What a failed Spark call raises in Python: a captured Spark error, or a JVM exception Spark does not
    convert (the connector's KafkaIllegalStateException)."""
except ImportError:  # the test modules skip without pyspark
    ERRORS = ()


def standin_differs(spark: Any, why: str) -> None:
    """Skips when format("kafka") is fakekafka's stand-in (the session's fallback, or this test's [standin]
    route under --spark-route), which does not do what Spark's connector does here."""
    from fakekafka.spark import kafka_connector_available, kafka_route
    if kafka_route(spark) == "python" or not kafka_connector_available(spark)[0]:
        pytest.skip(f"fakekafka's stand-in differs from Spark's Kafka connector here: {why}")


def source(kafka: ClusterHandle, **options: Any) -> dict[str, str]:
    """Options of a Kafka source on the test's cluster (plus the given ones, values as strings)."""
    return {"kafka.bootstrap.servers": kafka.bootstrap_servers, **{k: str(v) for k, v in options.items()}}


def run_available_now(spark: Any, options: dict[str, str], checkpoint: Path,
                      timeout: float = 90) -> list[tuple[int, list[Any]]]:
    """Runs a streaming read of format("kafka") with trigger(availableNow=True) to the end; returns each
    micro-batch as (batch id, rows sorted by topic, partition, offset). A failed query raises."""
    batches: list[tuple[int, list[Any]]] = []

    def collect(df: Any, batch_id: int) -> None:
        try:
            got = df.collect()
        except Exception as e:  # noqa: BLE001
            # PySpark's collect reads the rows from a local socket the JVM opens for it; under load in CI that
            # connection was once refused ([CANNOT_OPEN_SOCKET], which PySpark 4.2's _load_from_socket then
            # hides behind an UnboundLocalError of its own): the batch's rows are read again once
            if "CANNOT_OPEN_SOCKET" not in f"{e} {e.__context__}":
                raise
            got = df.collect()
        batches.append((batch_id, sorted(got, key=lambda r: (r.topic, r.partition, r.offset))))

    query = (spark.readStream.format("kafka").options(**options).load()
             .writeStream.foreachBatch(collect).option("checkpointLocation", str(checkpoint))
             .trigger(availableNow=True).start())
    try:
        assert query.awaitTermination(timeout), f"the availableNow query did not finish within {timeout}s"
    finally:
        query.stop()
    return batches


def rows(batches: list[tuple[int, list[Any]]]) -> list[Any]:
    return [r for _, rs in batches for r in rs]


def checkpoint_offsets(checkpoint: Path) -> dict[str, dict[str, int]]:
    """The source offsets of the last batch in a query's offset log (checkpoint/offsets/N, last line)."""
    logs = sorted((p for p in (checkpoint / "offsets").iterdir() if p.name.isdigit()), key=lambda p: int(p.name))
    return json.loads(logs[-1].read_text().splitlines()[-1])
