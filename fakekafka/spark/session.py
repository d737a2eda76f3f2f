"""A local SparkSession sized for tests: two cores, no UI, few shuffle partitions, loopback only, quiet logs, the
JVM's quick compiler alone (C1: the tests' small jobs took 27 % less CPU), and Spark's own Kafka connector on
spark.jars where `.ci/install.sh` (or the user) has put its jars."""

from __future__ import annotations

import glob
import os
import shutil
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

__all__ = ["CONNECTOR_JAR", "kafka_connector_jars", "local_spark_session", "missing_requirements"]

CONNECTOR_JAR = "spark-sql-kafka-0-10_2.13"

_LOG4J2 = """\
rootLogger.level = error
rootLogger.appenderRef.stderr.ref = stderr
appender.console.type = Console
appender.console.name = stderr
appender.console.target = SYSTEM_ERR
appender.console.layout.type = PatternLayout
appender.console.layout.pattern = %d{HH:mm:ss.SSS} %p %c{1}: %m%n%ex
"""


def missing_requirements() -> str | None:
    """Why Spark cannot start here (pyspark, pyarrow or Java missing), or None."""
    import importlib.util
    for module, package in (("pyspark", "pyspark"), ("pyarrow", "pyarrow"), ("confluent_kafka", "confluent-kafka")):
        if importlib.util.find_spec(module) is None:
            return f"{package} is not installed: pip install 'fakekafka[spark]'"
    java_home = os.environ.get("JAVA_HOME")
    if not shutil.which("java") and not (java_home and os.access(os.path.join(java_home, "bin", "java"), os.X_OK)):
        return ("Spark needs Java 17 or later (none on PATH or in JAVA_HOME); pip install 'fakekafka[spark]' "
                "installs pyspark, not Java")
    return None


def kafka_connector_jars() -> tuple[list[str], str]:
    """The jars of Spark's Kafka connector for the installed pyspark, and where they came from or why there are
    none. Looked for in $FAKEKAFKA_SPARK_JARS, else the install script's cache (~/.cache/fakekafka/spark-kafka-
    <version>). A directory for another Spark version is passed over: the connector calls Spark internals that
    change between releases, so a mismatch fails at run time rather than at start."""
    from importlib.metadata import PackageNotFoundError, version
    try:
        spark_version = version("pyspark")
    except PackageNotFoundError:
        return [], "pyspark is not installed"
    env = os.environ.get("FAKEKAFKA_SPARK_JARS")
    cache = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "fakekafka"
    cache = cache / f"spark-kafka-{spark_version}"
    looked = []
    for d in ([Path(env)] if env else []) + [cache]:
        jars = sorted(glob.glob(str(d / "*.jar")))
        if any(os.path.basename(j) == f"{CONNECTOR_JAR}-{spark_version}.jar" for j in jars):
            return jars, f"{CONNECTOR_JAR}-{spark_version}.jar and its dependencies from {d}"
        looked.append(str(d))
    return [], (f"no {CONNECTOR_JAR}-{spark_version}.jar (pyspark {spark_version}) in {' or '.join(looked)}: "
                "bash .ci/install.sh resolves it through Maven (compat/kafka/spark-pom.xml)")


def local_spark_session(app_name: str = "fakekafka", cores: int = 2, *, kafka_connector: bool = True,
                        **conf: str) -> SparkSession:
    """Starts (or returns the running) local SparkSession, with Spark's Kafka connector on spark.jars when its
    jars are found (kafka_connector_jars) unless kafka_connector is false or spark.jars is given. The JVM's
    log4j is set to errors only through a config file in a temporary directory, since log levels set after
    start miss the start-up lines."""
    from pyspark.sql import SparkSession

    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")  # no lookup of the host's own address
    log_dir = tempfile.mkdtemp(prefix="fakekafka-spark-")
    log_config = os.path.join(log_dir, "log4j2.properties")
    with open(log_config, "w") as f:
        f.write(_LOG4J2)
    settings = {
        "spark.ui.enabled": "false",
        "spark.ui.showConsoleProgress": "false",
        "spark.sql.shuffle.partitions": str(cores),
        "spark.default.parallelism": str(cores),
        "spark.driver.host": "127.0.0.1",
        "spark.driver.bindAddress": "127.0.0.1",
        "spark.sql.session.timeZone": "UTC",
        # Python workers connect back over a Unix socket (Spark 4.1+; 4.0 ignores the key): on a loopback port, a
        # Kafka client still reconnecting to a stopped broker's port number can reach it first ("Python worker
        # failed to connect back ... Authentication failed" in a CI run)
        "spark.python.unix.domain.socket.enabled": "true",
        "spark.driver.extraJavaOptions": f"-XX:TieredStopAtLevel=1 -Dlog4j2.configurationFile=file:{log_config}",
        **conf,
    }
    jars, _ = kafka_connector_jars() if kafka_connector else ([], "")
    if jars and "spark.jars" not in settings:
        settings["spark.jars"] = ",".join(jars)
    builder = SparkSession.builder.master(f"local[{cores}]").appName(app_name)
    for key, value in settings.items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    return spark
