"""Kafka's command-line tools, run from their jars in one JVM, for tests/integration/test_kafka_cli.py.

bin/kafka-topics.sh and its siblings are thin wrappers: `kafka-run-class.sh MAIN "$@"`. TOOLS maps each
script's name to that main class (kafka-tools 4.3.1, and kafka_2.13's ConfigCommand; compat/kafka/tools-pom.xml,
resolved by .ci/install.sh into $FAKEKAFKA_TOOLS_JARS). `ToolSession` starts
tests/integration/clients/java/ToolRunner.java
once and runs any number of tool invocations through it (a JVM start per command would cost about a second
each); each gives back the tool's exit status, stdout and stderr. `normalise` blanks what differs between two
brokers for reasons other than behaviour (topic ids, ports, host names, times, rates), so one expected text
holds on fakekafka and on Apache Kafka.
"""

from __future__ import annotations

import glob
import json
import os
import re
import subprocess
import sys
import threading
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests import javautil

__all__ = ["TOOLS", "ToolResult", "ToolSession", "normalise", "tools_classpath"]

TOOLS_VERSION = "4.3.1"
"""compat/kafka/tools-pom.xml's kafka-tools (4.4.0 is not on Maven Central)."""

TOOLS = {
    "kafka-topics": "org.apache.kafka.tools.TopicCommand",
    "kafka-console-producer": "org.apache.kafka.tools.ConsoleProducer",
    "kafka-console-consumer": "org.apache.kafka.tools.consumer.ConsoleConsumer",
    "kafka-consumer-groups": "org.apache.kafka.tools.consumer.group.ConsumerGroupCommand",
    "kafka-streams-groups": "org.apache.kafka.tools.streams.StreamsGroupCommand",
    "kafka-configs": "kafka.admin.ConfigCommand",
    "kafka-transactions": "org.apache.kafka.tools.TransactionsCommand",
    "kafka-get-offsets": "org.apache.kafka.tools.GetOffsetShell",
    "kafka-leader-election": "org.apache.kafka.tools.LeaderElectionCommand",
    "kafka-reassign-partitions": "org.apache.kafka.tools.reassign.ReassignPartitionsCommand",
    "kafka-delete-records": "org.apache.kafka.tools.DeleteRecordsCommand",
    "kafka-log-dirs": "org.apache.kafka.tools.LogDirsCommand",
    "kafka-client-metrics": "org.apache.kafka.tools.ClientMetricsCommand",
    "kafka-metadata-quorum": "org.apache.kafka.tools.MetadataQuorumCommand",
    "kafka-producer-perf-test": "org.apache.kafka.tools.ProducerPerformance",
    "kafka-consumer-perf-test": "org.apache.kafka.tools.ConsumerPerformance",
}
"""bin/<name>.sh's main class, as each script names it."""

SOURCE = Path(__file__).resolve().parent / "integration" / "clients" / "java" / "ToolRunner.java"


def tools_classpath() -> str:
    """The tools' classpath: $FAKEKAFKA_TOOLS_JARS, else ~/.cache/fakekafka/kafka-tools-<TOOLS_VERSION>."""
    jars = Path(os.environ.get("FAKEKAFKA_TOOLS_JARS") or javautil._CACHE / f"kafka-tools-{TOOLS_VERSION}")
    if not glob.glob(str(jars / "kafka-tools-*.jar")):
        pytest.skip(f"no kafka-tools jar in {jars}: {javautil.INSTALL_HINT}")
    return str(jars / "*")


@dataclass(frozen=True)
class ToolResult:
    status: int
    stdout: str
    stderr: str

    @property
    def messages(self) -> str:
        """stderr without log lines and stack frames: what the tool itself told the user."""
        keep = [line for line in self.stderr.splitlines()
                if not line.startswith(("\tat ", "\t... ", "Caused by: ")) and not _LOG_LINE.match(line)]
        return "\n".join(keep)


_LOG_LINE = re.compile(r"^\[[^\]]+\] (TRACE|DEBUG|INFO|WARN|ERROR) ")
"""slf4j-simple's line: `[thread] LEVEL logger - message`."""


class ToolSession:
    """One ToolRunner JVM; `run(tool, *args, stdin=)` runs bin/<tool>.sh's main class with those arguments."""

    def __init__(self, timeout: float = 60.0) -> None:
        classpath = tools_classpath()
        classes = javautil.compile_java(SOURCE, cp=classpath)
        java = javautil._tool("java")
        self.timeout = timeout
        self._proc = subprocess.Popen(
            [java, *javautil.driver_jvm_args("error"), "-cp", os.pathsep.join([str(classes), classpath]),
             "ToolRunner"],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, encoding="utf-8")
        self._stderr: list[str] = []
        self._drain = threading.Thread(target=self._read_stderr, daemon=True)
        self._drain.start()

    def _read_stderr(self) -> None:
        assert self._proc.stderr is not None
        for line in self._proc.stderr:
            self._stderr.append(line)

    def run(self, tool: str, *args: str, stdin: str = "") -> ToolResult:
        """Runs the tool to its exit (killing the JVM after `timeout` seconds, which fails the test)."""
        assert self._proc.stdin is not None and self._proc.stdout is not None
        self._proc.stdin.write(json.dumps({"main": TOOLS[tool], "args": list(args), "stdin": stdin}) + "\n")
        self._proc.stdin.flush()
        watchdog = threading.Timer(self.timeout, self._proc.kill)
        watchdog.start()
        try:
            line = self._proc.stdout.readline()
        finally:
            watchdog.cancel()
        if not line:
            pytest.fail(f"ToolRunner ended during {tool} {' '.join(args)}:\n{''.join(self._stderr)[-4000:]}")
        answer = json.loads(line)
        if os.environ.get("KAFKACLI_TIMES"):
            print(f"[{answer['ms']} ms] {tool} {' '.join(args)}", file=sys.stderr)
        return ToolResult(answer["status"], answer["stdout"], answer["stderr"])

    def close(self) -> None:
        if self._proc.poll() is None:
            assert self._proc.stdin is not None
            self._proc.stdin.close()
            try:
                self._proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self._proc.kill()
                self._proc.wait()
        self._drain.join(timeout=5)


_TOPIC_ID = re.compile(r"\b(TopicId: ?)[A-Za-z0-9_-]{22}(?![\w-])")
_MEMBER = re.compile(r"\b([\w.-]+?)-(?:[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}|\d{8}-fakekafka)\b")
"""A group member's id: Kafka's client id + "-" + a random UUID; fakekafka's client id, a counter and
"-fakekafka" (compat/KNOWN_DIFFERENCES.md: member ids are each broker's own making)."""
_HOST_PORT = re.compile(r"/?(?:127\.0\.0\.1|localhost)(?::\d+)?")


def normalise(text: str, bootstrap: str = "") -> str:
    """Blanks topic ids, member ids, hosts and ports; collapses runs of spaces (the tools pad columns to the
    widest value, which changes with the ids)."""
    text = _MEMBER.sub(r"\1-<member>", text)
    text = _TOPIC_ID.sub(r"\1<id>", text)
    if bootstrap:
        text = text.replace(bootstrap, "<bootstrap>")
    text = _HOST_PORT.sub("<host>", text)
    return "\n".join(re.sub(r" {2,}", " ", line).rstrip() for line in text.splitlines())
