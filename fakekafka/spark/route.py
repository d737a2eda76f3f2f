"""Which Kafka connector `format("kafka")` reaches on a SparkSession: Spark's JVM connector when it is on the
classpath or its jars can be added (`kafka_connector_jars`, put there by `.ci/install.sh`), else fakekafka's
Python data source, the stand-in for machines without the jars.

Why a redirect and not a registration under the name "kafka": Spark (checked on 4.2 and 4.3) refuses it twice.
`spark.dataSource.register` of a Python source named "kafka" fails with DATA_SOURCE_ALREADY_EXISTS, because
its check asks `DataSource.lookupDataSource("kafka")`, which raises Kafka's own not-deployed error instead of
the DATA_SOURCE_NOT_FOUND it tolerates. And a source put in the session's DataSourceManager under "kafka"
(bypassing that check through py4j) is never reached: lookupDataSource throws the Kafka-specific error
before it consults the Python data sources. So the Python source is registered as "fakekafka", and on the
sessions it is activated for, the PySpark readers and writers (`spark.read`, `spark.readStream`,
`df.write`, `df.writeStream`) turn format "kafka" into "fakekafka". SQL (`USING kafka`) and JVM code
still ask Spark directly and are not redirected. Two gaps of Python data sources are bridged on the way:
the default save mode (ErrorIfExists, which Spark's Kafka sink treats as Append) becomes Append, and a
streaming write in Update output mode runs as foreachBatch (see `_install_stream_writer`).
"""

from __future__ import annotations

import functools
import logging
import threading
import weakref
from typing import TYPE_CHECKING, Any, Literal

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

__all__ = ["JVM_PROVIDER", "Route", "choose_kafka_route", "kafka_connector_available", "kafka_route",
           "redirect_kafka_to_standin", "register", "use_fakekafka_kafka_source"]

log = logging.getLogger("fakekafka.spark")

JVM_PROVIDER = "org.apache.spark.sql.kafka010.KafkaSourceProvider"
Route = Literal["jvm", "python"]

_sessions: weakref.WeakSet[Any] = weakref.WeakSet()
_lock = threading.Lock()
_patched = False
_DEFAULT_MODES = {"error", "errorifexists", "default"}


def _classic(spark: SparkSession) -> None:
    if not hasattr(spark, "_jsparkSession"):
        raise TypeError("fakekafka's Kafka fallback needs a classic SparkSession (local or cluster, with a JVM in "
                        "this process); Spark Connect sessions are not supported")


def kafka_connector_available(spark: SparkSession) -> tuple[bool, str]:
    """Asks Spark what format("kafka") resolves to (DataSource.lookupDataSource, the lookup Spark itself does).
    Returns (available, detail): the provider class and its jar, or the first line of Spark's error."""
    _classic(spark)
    jvm = spark.sparkContext._jvm
    assert jvm is not None
    try:
        cls = jvm.org.apache.spark.sql.execution.datasources.DataSource.lookupDataSource(
            "kafka", spark._jsparkSession.sessionState().conf())
    except Exception as e:  # noqa: BLE001 - py4j/pyspark wrap the JVM's error in several exception types
        return False, (str(e).strip().splitlines() or [type(e).__name__])[0]
    try:
        where = cls.getProtectionDomain().getCodeSource().getLocation().toString()
        return True, f"{cls.getName()} from {where}"
    except Exception as e:  # noqa: BLE001 - py4j/pyspark wrap the JVM's error in several exception types
        return False, (str(e).strip().splitlines() or [type(e).__name__])[0]


def register(spark: SparkSession) -> None:
    """Registers the Python source as format "fakekafka" on this session (works whatever the classpath).

    Spark checks a new name against the data sources of the *active* session, so a second session (say
    `spark.newSession()`) would be told DATA_SOURCE_ALREADY_EXISTS while its own registry lacks the source;
    this session is made the active one (on this thread) for the registration."""
    from fakekafka.spark.datasource import KafkaDataSource
    _classic(spark)
    jvm = spark.sparkContext._jvm
    assert jvm is not None
    sessions = jvm.org.apache.spark.sql.SparkSession
    previous = sessions.getActiveSession()
    sessions.setActiveSession(spark._jsparkSession)
    try:
        spark.dataSource.register(KafkaDataSource)
    finally:
        if previous.isDefined():
            sessions.setActiveSession(previous.get())
        else:
            sessions.clearActiveSession()


def _add_connector_jars(spark: SparkSession) -> str | None:
    """Adds the connector's jars to a running session (SQL ADD JAR: the session's class loader, which Spark's
    data source lookup consults, and the executors'); returns where they came from, or None if there are none."""
    from fakekafka.spark.session import kafka_connector_jars
    jars, detail = kafka_connector_jars()
    if not jars:
        return None
    for jar in jars:
        spark.sql(f"ADD JAR '{jar}'")
    return detail


def choose_kafka_route(spark: SparkSession, *, jars: bool = True) -> tuple[Route, str]:
    """Makes format("kafka") work on this session and says how: ("jvm", the connector's provider class and jars)
    or ("python", why the connector is not there). Spark's connector is used when it is on the classpath or,
    unless jars is false, when its jars are found and added; otherwise fakekafka's Python data source answers
    format("kafka") from the PySpark readers and writers of this session. Logs the route on logger
    "fakekafka.spark". Idempotent."""
    available, detail = kafka_connector_available(spark)
    if not available and jars and _add_connector_jars(spark) is not None:
        available, provider = kafka_connector_available(spark)
        detail = f"{provider}, added to the running session" if available else detail
    if available:
        log.info("format('kafka') uses Spark's Kafka connector (%s)", detail)
        return "jvm", detail
    register(spark)
    _install()
    _sessions.add(spark)
    log.info("Spark's Kafka connector is not on the classpath (%s); format('kafka') on this session uses "
             "fakekafka's Python data source (format 'fakekafka')", detail)
    return "python", detail


def use_fakekafka_kafka_source(spark: SparkSession, *, jars: bool = True) -> Route:
    """Makes format("kafka") work on this session: returns "jvm" (Spark's own connector, already on the
    classpath or its jars added now) or "python" (fakekafka's stand-in). See choose_kafka_route."""
    return choose_kafka_route(spark, jars=jars)[0]


def kafka_route(spark: SparkSession) -> Route:
    """The route format("kafka") takes on this session now: "python" when its PySpark readers and writers are
    redirected to the stand-in, else "jvm" (Spark's own lookup: its connector, or its not-deployed error)."""
    return "python" if spark in _sessions else "jvm"


def redirect_kafka_to_standin(spark: SparkSession, on: bool = True) -> None:
    """Turns the redirect of format("kafka") to the stand-in on or off for this session, whatever is on its
    classpath: with the connector's jars present, one session can run the same job on both routes (the pytest
    plugin's `--spark-route both`). The stand-in must be registered (`register`)."""
    if on:
        _install()
        _sessions.add(spark)
    else:
        _sessions.discard(spark)


def _redirected(obj: Any, source: Any) -> bool:
    return isinstance(source, str) and source.strip().lower() == "kafka" and getattr(obj, "_spark", None) in _sessions


def _install() -> None:
    """Wraps methods of the four PySpark reader/writer classes, once per process; sessions that were not
    activated pass through untouched."""
    global _patched
    with _lock:
        if _patched:
            return
        from pyspark.sql.readwriter import DataFrameReader, DataFrameWriter
        from pyspark.sql.streaming.readwriter import DataStreamReader

        from fakekafka.spark.datasource import FORMAT

        for cls in (DataFrameReader, DataStreamReader):
            original = cls.format

            @functools.wraps(original)
            def fmt(self: Any, source: str, _original: Any = original) -> Any:
                return _original(self, FORMAT if _redirected(self, source) else source)

            cls.format = fmt  # type: ignore[method-assign]

        original_format, original_mode = DataFrameWriter.format, DataFrameWriter.mode

        @functools.wraps(original_format)
        def writer_format(self: Any, source: str) -> Any:
            if not _redirected(self, source):
                return original_format(self, source)
            # Spark's Kafka sink treats ErrorIfExists (the default mode) as Append; a Python data source refuses
            # it, so the redirected writer asks for Append unless another mode was chosen
            self._fakekafka_kafka = True
            if getattr(self, "_fakekafka_mode", "errorifexists") in _DEFAULT_MODES:
                original_mode(self, "append")
            return original_format(self, FORMAT)

        @functools.wraps(original_mode)
        def writer_mode(self: Any, saveMode: str | None) -> Any:
            if saveMode is not None:
                self._fakekafka_mode = saveMode.strip().lower()
                if getattr(self, "_fakekafka_kafka", False) and self._fakekafka_mode in _DEFAULT_MODES:
                    saveMode = "append"
            return original_mode(self, saveMode)

        DataFrameWriter.format = writer_format  # type: ignore[method-assign]
        DataFrameWriter.mode = writer_mode  # type: ignore[method-assign]
        _install_stream_writer(FORMAT)
        _patched = True


def _install_stream_writer(target: str) -> None:
    """DataStreamWriter: format("kafka") -> target, and Update output mode through foreachBatch.

    Spark accepts Update mode only from sinks that declare they treat it as Append (its Kafka sink does);
    a Python data source cannot declare it, so Spark refuses Update for it ("does not support Update mode").
    The redirected writer therefore runs an Update query as foreachBatch, writing each micro-batch's rows
    with the batch sink: the records Spark's Kafka sink would write, at least once as with it. The writer's
    options are recorded as they are set, because the JVM side keeps them out of reach."""
    from pyspark.sql.readwriter import to_str
    from pyspark.sql.streaming.readwriter import DataStreamWriter

    from fakekafka.spark.datasource import check_sink_schema
    from fakekafka.spark.options import parse_sink_options

    cls = DataStreamWriter
    original_format, original_mode, original_option, original_options, original_start = (
        cls.format, cls.outputMode, cls.option, cls.options, cls.start)

    def recorded(self: Any) -> dict[str, str]:
        if not hasattr(self, "_fakekafka_options"):
            self._fakekafka_options = {}
        return self._fakekafka_options

    @functools.wraps(original_format)
    def fmt(self: Any, source: str) -> Any:
        self._fakekafka_kafka = _redirected(self, source)
        return original_format(self, target if self._fakekafka_kafka else source)

    @functools.wraps(original_mode)
    def output_mode(self: Any, outputMode: str) -> Any:
        result = original_mode(self, outputMode)
        self._fakekafka_output_mode = outputMode.strip().lower()
        return result

    @functools.wraps(original_option)
    def option(self: Any, key: str, value: Any) -> Any:
        result = original_option(self, key, value)
        recorded(self)[key] = to_str(value)
        return result

    @functools.wraps(original_options)
    def options(self: Any, **opts: Any) -> Any:
        result = original_options(self, **opts)
        recorded(self).update({k: to_str(v) for k, v in opts.items()})
        return result

    @functools.wraps(original_start)
    def start(self: Any, path: str | None = None, format: str | None = None, outputMode: str | None = None,
              partitionBy: Any = None, queryName: str | None = None, **opts: Any) -> Any:
        if opts:
            self.options(**opts)
        if outputMode is not None:
            self.outputMode(outputMode)
        if format is not None:
            self.format(format)
        if getattr(self, "_fakekafka_kafka", False) and getattr(self, "_fakekafka_output_mode", "") == "update":
            sink = {k: v for k, v in recorded(self).items() if k.lower() != "checkpointlocation"}
            check_sink_schema(self._df.schema, parse_sink_options(sink).topic)

            def write_batch(df: Any, batch_id: int) -> None:
                df.write.format(target).options(**sink).mode("append").save()

            self.foreachBatch(write_batch)
            log.info("format('kafka') in Update output mode runs as foreachBatch with fakekafka's batch sink (Spark "
                     "refuses Update mode for Python data sources)")
        return original_start(self, path=path, partitionBy=partitionBy, queryName=queryName)

    cls.format, cls.outputMode, cls.option, cls.options, cls.start = (  # type: ignore[method-assign]
        fmt, output_mode, option, options, start)
