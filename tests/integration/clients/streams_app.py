"""One JVM of a Kafka Streams test application (tests/integration/clients/java/Streams*.java): its JSON events read
on a thread, stopped through stdin or killed. Shared by the classic-protocol and the streams-group tests."""

from __future__ import annotations

import os
import queue
import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests import javautil
from tests.subproc import EventChild

JAVA = Path(__file__).resolve().parent / "java"


def compile_app(main: str) -> tuple[Path, str]:
    """The classes of `main` (java/MAIN.java, compiled with the StreamsTestApp class it uses) and the Kafka Streams
    classpath they run with."""
    cp = javautil.streams_classpath()
    return javautil.compile_java(JAVA / f"{main}.java", JAVA / "StreamsTestApp.java", cp=cp), cp


class StreamsApp(EventChild):
    """`main` (a class of `classes`) run with `args`; its stderr kept in `stderr_path`; stopped by a "stop" line."""

    def __init__(self, main: str, classes: Path, cp: str, args: list[str], stderr_path: Path) -> None:
        cmd = [
            javautil._tool("java"),
            *javautil.driver_jvm_args(),
            "-cp",
            os.pathsep.join([str(classes), cp]),
            main,
            *args,
        ]
        super().__init__(cmd, stderr_path, stdin=subprocess.PIPE, keep_stray=True)

    def wait_for(self, event: str, timeout: float) -> dict[str, Any]:
        """The next event named `event`; fails the test on the application's error, its exit or the timeout."""
        return self._wait(lambda e: e["event"] == event, repr(event), timeout)

    def wait_running(self, timeout: float) -> None:
        """Until the application reports the RUNNING state; fails the test on its error, its exit or the timeout."""
        self._wait(lambda e: e.get("state") == "RUNNING", "RUNNING state", timeout)

    def _wait(self, wanted: Callable[[dict[str, Any]], bool], what: str, timeout: float) -> dict[str, Any]:
        deadline = time.monotonic() + timeout
        while True:
            try:
                e = self.events.get(timeout=max(0.0, deadline - time.monotonic()))
            except queue.Empty:
                pytest.fail(f"no {what} from the Streams app in {timeout:.0f} s; its stderr:\n{self.stderr()}")
            if wanted(e):
                return e
            if e["event"] in ("error", "exit"):
                pytest.fail(f"the Streams app ended while waiting for {what}: {e}\nits stderr:\n{self.stderr()}")

    def check_alive(self) -> None:
        """Fails the test if the application reported an error or exited (drains the events seen so far)."""
        while not self.events.empty():
            e = self.events.get_nowait()
            if e["event"] in ("error", "exit"):
                pytest.fail(f"the Streams app ended: {e}\nits stderr:\n{self.stderr()}")

    def _ask_to_stop(self) -> None:
        """A "stop" line: the application closes cleanly, leaving the group."""
        assert self.proc.stdin is not None
        try:
            self.proc.stdin.write("stop\n")
            self.proc.stdin.flush()
        except BrokenPipeError:  # it has exited already: its code says how
            pass
