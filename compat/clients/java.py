"""Kafka's Java client (kafka-clients), through compat/clients/java/CompatDriver.java: the client's one driver,
compiled once per source and client version by tests/javautil.py. As the compat agent, one JVM per run serves
every scenario (a member to be killed gets its own); tests/integration/clients/test_java_client.py runs the same source
in its scenario mode (`scenario_args`). "java" is the newest client; "java-3.9" and "java-2.8" run the same driver
on the older jars .ci/install.sh puts beside it, since users upgrade slowly and Kafka 4 refuses the oldest
protocol versions."""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
from pathlib import Path

from compat.clients.agent import AgentClient
from compat.clients.base import Timing, Unsupported

__all__ = ["JAVA_CLIENTS", "MAIN", "SOURCE", "JavaClient", "java_command", "scenario_args"]

JAVA_CLIENTS: dict[str, str | None] = {"java": None, "java-3.9": "3.9.1", "java-2.8": "2.8.2"}
"""Client name -> kafka-clients version (None: the newest, $FAKEKAFKA_JARS)."""
SOURCE = Path(__file__).resolve().parent / "java" / "CompatDriver.java"
MAIN = "CompatDriver"
JVM_ARGS = ("-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-Xss1m", "-Xmx256m",
            "-Dorg.slf4j.simpleLogger.defaultLogLevel=error")


def java_command(version: str | None = None) -> list[str]:
    """`java ... CompatDriver` compiled against kafka-clients `version` (None: the newest), with its jars
    (Unsupported when missing)."""
    try:
        import pytest

        from tests import javautil
    except ImportError as e:
        raise Unsupported(f"the Java client needs tests/javautil.py and pytest: {e}") from None
    try:
        classes = javautil.compile_java(SOURCE, version=version)
        cp = javautil.classpath(version)
    except pytest.skip.Exception as e:  # javautil skips (naming .ci/install.sh) when Java or the jars are missing
        raise Unsupported(str(e.msg if hasattr(e, "msg") else e)) from None
    java = shutil.which("java")
    if java is None:
        raise Unsupported(f"java not found: {javautil.INSTALL_HINT}")
    return [java, *JVM_ARGS, "-cp", os.pathsep.join([str(classes), cp]), MAIN]


def scenario_args(bootstrap: str, *scenarios: str, timing: Timing | None = None) -> list[str]:
    """The driver's arguments for its scenario mode: run `scenarios` (every one when none is named) against
    `bootstrap`, one result line each (tests/integration/clients/test_java_client.py reads them with
    javautil.run_driver)."""
    return [bootstrap, json.dumps(dataclasses.asdict(timing or Timing())), "scenarios", *scenarios]


class JavaClient(AgentClient):
    def __init__(self, bootstrap: str, timing: Timing, name: str = "java") -> None:
        cmd = java_command(JAVA_CLIENTS[name]) + [bootstrap, json.dumps(dataclasses.asdict(timing))]
        super().__init__(name, bootstrap, timing, cmd)
