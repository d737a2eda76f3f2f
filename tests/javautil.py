"""Compile and run small Java programs against Kafka's own client jars, for tests.

Four calls, each of which skips the calling test (naming `.ci/install.sh`) when Java or the jars are
missing, so a machine without them reports skips rather than failures:

    classpath(version=None)          the jar classpath: $FAKEKAFKA_CLASSPATH, else the jars in
                                     $FAKEKAFKA_JARS or ~/.cache/fakekafka/kafka-clients-<newest>
                                     (kafka-clients from Maven Central, with its codecs and slf4j-simple);
                                     version="3.9.1" (any of CLIENT_VERSIONS) names an older client, from
                                     ~/.cache/fakekafka/kafka-clients-<version>
    compile_java(*sources, version=None, cp=None)
                                     javac the sources once; returns the class directory, cached under
                                     ~/.cache/fakekafka/javac/<hash of sources, classpath, javac>; cp=
                                     streams_classpath() compiles against Kafka Streams' jars instead
    streams_classpath()              Kafka Streams' jars (with its own kafka-clients and RocksDB), from
                                     $FAKEKAFKA_STREAMS_JARS or ~/.cache/fakekafka/kafka-streams-<version>
    connect_classpath()              Kafka Connect's worker and file connectors (with its own kafka-clients),
                                     from $FAKEKAFKA_CONNECT_JARS or ~/.cache/fakekafka/kafka-connect-<version>
    run_java(classes, main, *args, version=None)
                                     java -cp classes:jars main args; returns CompletedProcess (text)
                                     and raises JavaError with stderr when it exits non-zero

Get everything with: eval "$(bash .ci/install.sh)" (INSTALL_HINT says so, for skip messages).

For the end-to-end modules in tests/integration/clients/, where one long-lived JVM driver runs every scenario against
one broker and each test asserts one scenario's result:

    JavaRun                          what a driver run left: results by scenario, the APIs the broker
                                     served, the broker's warnings, stderr; `result(scenario)` fails the test
    run_driver(run, classes, main, *args, serve=, on_result=)
                                     runs the driver, reading its JSON lines (results, and requests the
                                     Python side carries out and answers on stdin) while watching the broker
"""

from __future__ import annotations

import glob
import hashlib
import json
import logging
import os
import shutil
import subprocess
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import pytest

import fakekafka
from fakekafka.observe.records import RequestRecord
from fakekafka.testing.handle import ClusterHandle

__all__ = ["INSTALL_HINT", "JavaError", "JavaRun", "classpath", "compile_java", "connect_classpath", "run_driver",
           "run_java", "streams_classpath"]

INSTALL_HINT = 'run `eval "$(bash .ci/install.sh)"` to install javac and the Kafka client jars'
_CACHE = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "fakekafka"
CLIENT_VERSIONS = ("4.4.0", "3.9.1", "3.7.2", "2.8.2")  # .ci/install.sh's, newest first
CLIENT_VERSION = CLIENT_VERSIONS[0]
STREAMS_VERSION = "4.3.1"
"""compat/kafka/streams-pom.xml's kafka-streams (4.4.0 is not on Maven Central)."""
CONNECT_VERSION = "4.3.1"
"""compat/kafka/connect-pom.xml's connect-runtime and connect-file (4.4.0 is not on Maven Central either)."""


class JavaError(RuntimeError):
    """A Java program exited non-zero; the message carries its stderr."""


def _tool(name: str) -> str:
    path = shutil.which(name)
    if path is None:
        pytest.skip(f"{name} not found: {INSTALL_HINT}")
    return path


def classpath(version: str | None = None) -> str:
    """The Kafka client classpath (entries may be `dir/*` wildcards, which java and javac expand).

    `version` picks one of .ci/install.sh's client directories, for checks that need an older client
    (Kafka 4 dropped old protocol versions, KIP-896); None or the newest honours $FAKEKAFKA_CLASSPATH and
    $FAKEKAFKA_JARS, which point at the newest.
    """
    if version is not None and version not in CLIENT_VERSIONS:
        raise ValueError(f"kafka-clients {version} is not installed by .ci/install.sh ({', '.join(CLIENT_VERSIONS)})")
    cp = None if version not in (None, CLIENT_VERSION) else os.environ.get("FAKEKAFKA_CLASSPATH")
    if not cp:
        newest = os.environ.get("FAKEKAFKA_JARS") if version in (None, CLIENT_VERSION) else None
        jars = Path(newest or _CACHE / f"kafka-clients-{version or CLIENT_VERSION}")
        cp = str(jars / "*")
    found = [p for entry in cp.split(os.pathsep) for p in glob.glob(entry)]
    if not any(os.path.basename(p).startswith("kafka-clients") for p in found):
        pytest.skip(f"no kafka-clients jar on the classpath {cp!r}: {INSTALL_HINT}")
    return cp


def streams_classpath() -> str:
    """Kafka Streams' classpath (its own kafka-clients and RocksDB included): $FAKEKAFKA_STREAMS_JARS, else
    ~/.cache/fakekafka/kafka-streams-<STREAMS_VERSION>, as .ci/install.sh resolves compat/kafka/streams-pom.xml."""
    jars = Path(os.environ.get("FAKEKAFKA_STREAMS_JARS") or _CACHE / f"kafka-streams-{STREAMS_VERSION}")
    if not glob.glob(str(jars / "kafka-streams-*.jar")):
        pytest.skip(f"no kafka-streams jar in {jars}: {INSTALL_HINT}")
    return str(jars / "*")


def connect_classpath() -> str:
    """Kafka Connect's classpath (connect-runtime, connect-file, their own kafka-clients): $FAKEKAFKA_CONNECT_JARS,
    else ~/.cache/fakekafka/kafka-connect-<CONNECT_VERSION>, as .ci/install.sh resolves compat/kafka/connect-pom.xml."""
    jars = Path(os.environ.get("FAKEKAFKA_CONNECT_JARS") or _CACHE / f"kafka-connect-{CONNECT_VERSION}")
    if not glob.glob(str(jars / "connect-runtime-*.jar")):
        pytest.skip(f"no connect-runtime jar in {jars}: {INSTALL_HINT}")
    return str(jars / "*")


REGISTRY_CLIENT_VERSION = "4.2.0"


def registry_client_classpath() -> str:
    """Spring Cloud Stream's ConfluentSchemaRegistryClient with Avro and Spring's RestTemplate:
    $FAKEKAFKA_REGISTRY_CLIENT_JARS, else ~/.cache/fakekafka/registry-client-<REGISTRY_CLIENT_VERSION>, as
    .ci/install.sh resolves compat/kafka/registry-client-pom.xml (used beside kafka-clients' jars)."""
    jars = Path(os.environ.get("FAKEKAFKA_REGISTRY_CLIENT_JARS")
                or _CACHE / f"registry-client-{REGISTRY_CLIENT_VERSION}")
    if not glob.glob(str(jars / "spring-cloud-stream-schema-registry-client-*.jar")):
        pytest.skip(f"no spring-cloud-stream-schema-registry-client jar in {jars}: {INSTALL_HINT}")
    return str(jars / "*")


def compile_java(*sources: str | os.PathLike[str], version: str | None = None, cp: str | None = None) -> Path:
    """Compile the sources (once per content and classpath) against kafka-clients `version` (None: the newest),
    or against the classpath `cp` when given (Streams' own jars), and return the directory holding their
    classes."""
    javac = _tool("javac")
    cp = cp or classpath(version)
    digest = hashlib.sha256(cp.encode())
    digest.update(os.path.realpath(javac).encode())
    for src in sorted(Path(s).resolve() for s in sources):
        digest.update(src.name.encode() + b"\0" + src.read_bytes() + b"\0")
    out = _CACHE / "javac" / digest.hexdigest()[:20]
    if out.is_dir():
        return out
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=".tmp-", dir=out.parent))
    try:
        proc = subprocess.run(
            [javac, "-nowarn", "-encoding", "UTF-8", "-cp", cp, "-d", str(tmp), *map(str, sources)],
            capture_output=True, text=True, check=False)
        if proc.returncode != 0:
            raise JavaError(f"javac failed:\n{proc.stdout}{proc.stderr}")
        tmp.chmod(0o755)
        try:
            tmp.rename(out)  # atomic: a concurrent run that got there first wins, with identical classes
        except OSError:
            if not out.is_dir():
                raise
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)
    return out


FAST_START = ("-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1")
"""JVM flags for short runs: start-up matters more than peak speed."""


def run_java(classes: Path, main: str, *args: str, timeout: float = 120,
             jvm_args: tuple[str, ...] = FAST_START, version: str | None = None) -> subprocess.CompletedProcess[str]:
    """Run `main` from `classes` with the jars of kafka-clients `version` (None: the newest); raise JavaError
    (with stderr) on a non-zero exit."""
    java = _tool("java")
    cmd = [java, *jvm_args, "-cp", os.pathsep.join([str(classes), classpath(version)]), main, *args]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, check=False)
    if proc.returncode != 0:
        raise JavaError(f"{main} exited with {proc.returncode}:\n{proc.stderr[-4000:]}")
    return proc


# ------------------------------------------------------------------------------------- JVM drivers

def driver_jvm_args(log_level: str = "warn") -> tuple[str, ...]:
    """FAST_START plus a small heap, with the clients' slf4j-simple logging cut to `log_level`."""
    return (*FAST_START, "-Xss1m", "-Xmx512m", f"-Dorg.slf4j.simpleLogger.defaultLogLevel={log_level}")


@dataclass
class JavaRun:
    """What one driver run left behind, kept for the module's tests (subclass to keep more)."""

    cluster: fakekafka.Cluster
    main: str = "the Java driver"
    results: dict[str, dict[str, Any]] = field(default_factory=dict)
    """Each scenario's last line: {"scenario": ..., "ok": ..., "result" or "error": ...}."""
    api_calls: Counter[str] = field(default_factory=Counter)
    server_problems: list[str] = field(default_factory=list)
    stray_output: list[str] = field(default_factory=list)
    stderr: str = ""
    seconds: float = 0.0

    def result(self, scenario: str) -> dict[str, Any]:
        """The scenario's result; fails the test (with the driver's stderr) if it failed or never reported."""
        r = self.results.get(scenario)
        if r is None:
            pytest.fail(f"{self.main} reported nothing for {scenario!r}; its stderr ends with:\n"
                        f"{self.stderr[-4000:]}\nstdout besides JSON: {self.stray_output[-20:]}")
        if not r["ok"]:
            pytest.fail(f"{self.main} scenario {scenario!r} failed:\n{r['error']}")
        return r["result"]


class _ServerWatch(logging.Handler):
    """Counts the APIs the broker served (a request listener) and keeps fakekafka's WARNING+ log lines,
    so a test can check which calls a client made and that no handler failed behind its back."""

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.api_calls: Counter[str] = Counter()
        self.problems: list[str] = []

    def on_request(self, record: RequestRecord) -> None:
        self.api_calls[record.api] += 1

    def emit(self, record: logging.LogRecord) -> None:
        text = record.getMessage()
        if record.exc_info:
            text += "\n" + logging.Formatter().formatException(record.exc_info)
        self.problems.append(f"{record.levelname} {record.name}: {text}")


def _remove_listener(cluster: fakekafka.Cluster, listener: Callable[[RequestRecord], None]) -> None:
    try:
        cluster.server.remove_request_listener(listener)
    except ValueError:  # the server dropped it already, after it raised (and logged that as a problem)
        pass


@contextmanager
def _watch(cluster: ClusterHandle) -> Iterator[_ServerWatch]:
    """Watches an in-process fakekafka; a remote cluster (`pytest --kafka-real`) serves requests we cannot see,
    so its watch stays empty."""
    logger = logging.getLogger("fakekafka")
    watch = _ServerWatch()
    saved = logger.level
    if logger.getEffectiveLevel() > logging.WARNING:
        logger.setLevel(logging.WARNING)
    logger.addHandler(watch)
    local = cluster if isinstance(cluster, fakekafka.Cluster) else None
    if local is not None:
        local.call(lambda: local.server.add_request_listener(watch.on_request))  # listeners change on the loop
    try:
        yield watch
    finally:
        if local is not None:
            local.call(lambda: _remove_listener(local, watch.on_request))
        logger.removeHandler(watch)
        logger.setLevel(saved)


R = TypeVar("R", bound=JavaRun)


def run_driver(run: R, classes: Path, main: str, *args: str, timeout: float, log_level: str = "warn",
               serve: Callable[[dict[str, Any]], str] | None = None,
               on_result: Callable[[dict[str, Any]], None] | None = None) -> R:
    """Runs `main` from `classes` with the Kafka jars and `args`, filling `run` as its JSON lines arrive.

    A line with "scenario" is a result (stored, then passed to `on_result`); one with "request" asks the
    Python side to act (on the broker, usually) and waits on stdin for `serve`'s one-line answer. Anything
    else on stdout is kept as stray output. The JVM is killed after `timeout` seconds; the scenarios it did
    not finish then report nothing, which `run.result` turns into a failure showing stderr.
    """
    java = _tool("java")
    cmd = [java, *driver_jvm_args(log_level), "-cp", os.pathsep.join([str(classes), classpath()]), main, *args]
    run.main = main
    started = time.monotonic()
    with _watch(run.cluster) as watch, tempfile.TemporaryFile("w+", encoding="utf-8") as err:
        proc = subprocess.Popen(cmd, stdin=subprocess.PIPE if serve else subprocess.DEVNULL, stdout=subprocess.PIPE,
                                stderr=err, text=True, encoding="utf-8")
        watchdog = threading.Timer(timeout, proc.kill)
        watchdog.start()
        try:
            assert proc.stdout is not None
            for line in proc.stdout:
                try:
                    msg = json.loads(line)
                except ValueError:
                    msg = None
                if isinstance(msg, dict) and "scenario" in msg:
                    run.results[msg["scenario"]] = msg
                    if on_result is not None:
                        on_result(msg)
                elif isinstance(msg, dict) and "request" in msg and serve is not None:
                    assert proc.stdin is not None
                    proc.stdin.write(serve(msg) + "\n")
                    proc.stdin.flush()
                else:
                    run.stray_output.append(line.rstrip("\n"))
            proc.wait()
        finally:
            watchdog.cancel()
            if proc.poll() is None:
                proc.kill()
                proc.wait()
        err.seek(0)
        run.stderr = err.read()
    run.seconds = time.monotonic() - started
    run.api_calls, run.server_problems = watch.api_calls, watch.problems
    return run
