"""A local SparkSession sized for tests: two cores, no UI, few shuffle partitions, loopback only, quiet logs."""

from __future__ import annotations

import os
import shutil
import tempfile
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

__all__ = ["local_spark_session", "missing_requirements"]

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


def local_spark_session(app_name: str = "fakekafka", cores: int = 2, **conf: str) -> SparkSession:
    """Starts (or returns the running) local SparkSession. The JVM's log4j is set to errors only through a
    config file in a temporary directory, since log levels set after start miss the start-up lines."""
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
        "spark.driver.extraJavaOptions": f"-Dlog4j2.configurationFile=file:{log_config}",
        **conf,
    }
    builder = SparkSession.builder.master(f"local[{cores}]").appName(app_name)
    for key, value in settings.items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    return spark
