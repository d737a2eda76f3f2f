"""One JVM of a Kafka Streams test application (tests/integration/clients/java/Streams*.java): its JSON events read
on a thread, stopped through stdin or killed. Shared by the classic-protocol and the streams-group tests."""

from __future__ import annotations

import json
import os
import queue
import signal
import subprocess
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from tests import javautil

JAVA = Path(__file__).resolve().parent / "java"


def compile_app(main: str) -> tuple[Path, str]:
    """The classes of `main` (java/MAIN.java, compiled with the StreamsTestApp class it uses) and the Kafka Streams
    classpath they run with."""
    cp = javautil.streams_classpath()
    return javautil.compile_java(JAVA / f"{main}.java", JAVA / "StreamsTestApp.java", cp=cp), cp


class StreamsApp:
    """`main` (a class of `classes`) run with `args`; its stderr kept in `stderr_path`."""

    def __init__(self, main: str, classes: Path, cp: str, args: list[str], stderr_path: Path) -> None:
        self.stderr_path = stderr_path
        self._stderr = stderr_path.open("w", encoding="utf-8")
        self.proc = subprocess.Popen(
            [
                javautil._tool("java"),
                *javautil.driver_jvm_args(),
                "-cp",
                os.pathsep.join([str(classes), cp]),
                main,
                *args,
            ],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self._stderr,
            text=True,
            encoding="utf-8",
        )
        self.events: queue.Queue[dict[str, Any]] = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            try:
                self.events.put(json.loads(line))
            except ValueError:
                self.events.put({"event": "stray", "line": line.rstrip("\n")})
        self.events.put({"event": "exit"})

    def stderr(self) -> str:
        if not self._stderr.closed:
            self._stderr.flush()
        return self.stderr_path.read_text(encoding="utf-8")[-6000:]

    def wait_for(self, event: str, timeout: float) -> dict[str, Any]:
        """The next event named `event`; fails the test on the application's error, its exit or the timeout."""
        deadline = time.monotonic() + timeout
        while True:
            try:
                e = self.events.get(timeout=max(0.0, deadline - time.monotonic()))
            except queue.Empty:
                pytest.fail(f"no {event!r} from the Streams app in {timeout:.0f} s; its stderr:\n{self.stderr()}")
            if e["event"] == event:
                return e
            if e["event"] in ("error", "exit"):
                pytest.fail(f"the Streams app ended while waiting for {event!r}: {e}\nits stderr:\n{self.stderr()}")

    def wait_running(self, timeout: float) -> None:
        """Until the application reports the RUNNING state; fails the test on its error, its exit or the timeout."""
        deadline = time.monotonic() + timeout
        while True:
            try:
                e = self.events.get(timeout=max(0.0, deadline - time.monotonic()))
            except queue.Empty:
                pytest.fail(f"the Streams app was not RUNNING in {timeout:.0f} s; its stderr:\n{self.stderr()}")
            if e.get("state") == "RUNNING":
                return
            if e["event"] in ("error", "exit"):
                pytest.fail(f"the Streams app ended: {e}\nits stderr:\n{self.stderr()}")

    def check_alive(self) -> None:
        """Fails the test if the application reported an error or exited (drains the events seen so far)."""
        while not self.events.empty():
            e = self.events.get_nowait()
            if e["event"] in ("error", "exit"):
                pytest.fail(f"the Streams app ended: {e}\nits stderr:\n{self.stderr()}")

    def kill(self) -> None:
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait(30)
        self._stderr.close()

    def stop(self) -> int:
        """Closes the application cleanly (a "stop" line) and returns its exit code."""
        assert self.proc.stdin is not None
        try:
            self.proc.stdin.write("stop\n")
            self.proc.stdin.flush()
        except BrokenPipeError:  # it has exited already: its code says how
            pass
        try:
            code = self.proc.wait(60)
        finally:
            if self.proc.poll() is None:
                self.proc.kill()
                self.proc.wait()
            self._stderr.close()
        return code
