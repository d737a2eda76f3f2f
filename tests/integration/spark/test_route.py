"""Which connector format("kafka") reaches: Spark's JVM connector when it is on the classpath, else the Python
data source, and why the Python source cannot simply be registered under the name "kafka"."""

from __future__ import annotations

import logging
import os
import re

import pytest

pytest.importorskip("pyspark", reason="needs pyspark: pip install 'fakekafka[spark]'")
from pyspark.errors import PySparkException
from pyspark.sql.datasource import DataSource

from fakekafka.spark import JVM_PROVIDER, kafka_connector_available, kafka_connector_jars, use_fakekafka_kafka_source
from tests.integration.spark.conftest import source, standin_differs

# the route choice itself: checked once
pytestmark = [pytest.mark.spark, pytest.mark.spark_any_route, pytest.mark.kafka_real]

NOT_DEPLOYED = "Failed to find data source: kafka. Please deploy|KAFKA_DATA_SOURCE_NOT_ENABLED"
"""Spark's error for format("kafka") without the connector: 4.2's words, and 4.3's error class."""


def test_python_route_is_chosen_and_logged_without_the_connector(spark, caplog):
    available, detail = kafka_connector_available(spark)
    if available:
        pytest.skip(f"Spark's Kafka connector is on this classpath ({detail}): the Python route is not taken")
    with caplog.at_level(logging.INFO, logger="fakekafka.spark"):
        assert use_fakekafka_kafka_source(spark) == "python"
    assert re.search(NOT_DEPLOYED, detail), detail
    assert any("format('kafka') on this session uses fakekafka's Python data source" in r.getMessage()
               for r in caplog.records)


def test_spark_refuses_a_python_source_named_kafka(spark):
    """Pins the Spark behaviour that makes the redirect necessary: registering under "kafka" is refused (the
    check looks the name up, and the lookup raises Kafka's own not-deployed error)."""
    if kafka_connector_available(spark)[0]:
        pytest.skip("Spark's Kafka connector is on this classpath: the name is taken by it")

    class NamedKafka(DataSource):
        @classmethod
        def name(cls) -> str:
            return "kafka"

    with pytest.raises(PySparkException, match="DATA_SOURCE_ALREADY_EXISTS"):
        spark.dataSource.register(NamedKafka)


def test_only_activated_sessions_are_redirected(spark, kafka):
    if kafka_connector_available(spark)[0]:
        pytest.skip("Spark's Kafka connector is on this classpath: nothing is redirected")
    kafka.produce("t", b"v")
    other = spark.newSession()
    with pytest.raises(PySparkException, match=NOT_DEPLOYED):
        other.read.format("kafka").options(**source(kafka, subscribe="t")).load()
    assert use_fakekafka_kafka_source(other) == "python"
    assert [r.value for r in other.read.format("kafka").options(**source(kafka, subscribe="t")).load().collect()] \
        == [b"v"]
    # the Python source also answers to its own name, "fakekafka"
    assert other.read.format("fakekafka").options(**source(kafka, subscribe="t")).load().count() == 1


def test_jvm_route_when_the_connector_is_on_the_classpath(spark, kafka, caplog):
    available, detail = kafka_connector_available(spark)
    if not available:
        pytest.skip(f"Spark's Kafka connector ({JVM_PROVIDER}, jar spark-sql-kafka-0-10_2.13) is not on the "
                    f"classpath: {detail}. bash .ci/install.sh puts its jars where the spark fixture finds them")
    with caplog.at_level(logging.INFO, logger="fakekafka.spark"):
        assert use_fakekafka_kafka_source(spark) == "jvm"
    assert any("uses Spark's Kafka connector" in r.getMessage() for r in caplog.records)
    kafka.produce("t", b"through-the-jvm", key=b"k")
    got = spark.read.format("kafka").options(**source(kafka, subscribe="t")).load().collect()
    assert [(r.key, r.value, r.offset) for r in got] == [(b"k", b"through-the-jvm", 0)]


def test_sql_using_kafka_reaches_the_connector(spark, kafka):
    """SQL has no PySpark reader to redirect: `USING kafka` works only through Spark's own connector."""
    standin_differs(spark, "SQL asks Spark for the data source by name, which the stand-in cannot answer to")
    kafka.produce("t", b"over-sql", key=b"k")
    spark.sql(f"CREATE OR REPLACE TEMPORARY VIEW kafka_t USING kafka OPTIONS "
              f"(`kafka.bootstrap.servers` '{kafka.bootstrap_servers}', subscribe 't')")
    try:
        assert [(r.key, r.value) for r in spark.sql("SELECT key, value FROM kafka_t").collect()] == [
            (b"k", b"over-sql")]
    finally:
        spark.sql("DROP VIEW IF EXISTS kafka_t")


def _pyspark_version() -> str:
    from importlib.metadata import version
    return version("pyspark")


def test_connector_jars_are_found_only_for_the_installed_spark(tmp_path, monkeypatch):
    """The connector calls Spark internals, so jars for another Spark version are passed over, saying why."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "no-cache"))
    monkeypatch.setenv("FAKEKAFKA_SPARK_JARS", str(tmp_path))
    (tmp_path / "kafka-clients-3.9.2.jar").write_bytes(b"")
    (tmp_path / "spark-sql-kafka-0-10_2.13-0.0.1.jar").write_bytes(b"")
    jars, why = kafka_connector_jars()
    assert jars == []
    assert f"no spark-sql-kafka-0-10_2.13-{_pyspark_version()}.jar (pyspark {_pyspark_version()})" in why
    assert ".ci/install.sh" in why
    (tmp_path / f"spark-sql-kafka-0-10_2.13-{_pyspark_version()}.jar").write_bytes(b"")
    jars, where = kafka_connector_jars()
    assert sorted(os.path.basename(j) for j in jars) == sorted(p.name for p in tmp_path.glob("*.jar"))
    assert str(tmp_path) in where
