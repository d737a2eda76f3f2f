"""Kafka's Java client (kafka-clients), through compat/clients/java/CompatDriver.java: compiled once per
source by tests/javautil.py, one JVM per run serving every scenario (a member to be killed gets its own)."""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
from pathlib import Path

from compat.clients.agent import AgentClient
from compat.clients.base import Timing, Unsupported

__all__ = ["JavaClient", "java_command"]

SOURCE = Path(__file__).resolve().parent / "java" / "CompatDriver.java"
JVM_ARGS = ("-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-Xss1m", "-Xmx256m",
            "-Dorg.slf4j.simpleLogger.defaultLogLevel=error")


def java_command() -> list[str]:
    """`java ... CompatDriver` with the compiled driver and the Kafka jars (Unsupported when missing)."""
    try:
        import pytest

        from tests import javautil
    except ImportError as e:
        raise Unsupported(f"the Java client needs tests/javautil.py and pytest: {e}") from None
    try:
        classes = javautil.compile_java(SOURCE)
        cp = javautil.classpath()
    except pytest.skip.Exception as e:  # javautil skips (naming .ci/install.sh) when Java or the jars are missing
        raise Unsupported(str(e.msg if hasattr(e, "msg") else e)) from None
    java = shutil.which("java")
    if java is None:
        raise Unsupported(f"java not found: {javautil.INSTALL_HINT}")
    return [java, *JVM_ARGS, "-cp", os.pathsep.join([str(classes), cp]), "CompatDriver"]


class JavaClient(AgentClient):
    def __init__(self, bootstrap: str, timing: Timing) -> None:
        cmd = java_command() + [bootstrap, json.dumps(dataclasses.asdict(timing))]
        super().__init__("java", bootstrap, timing, cmd)
