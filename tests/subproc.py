"""Run a child that starts brokers of its own (python -m compat, pytest --kafka-real) with a deadline that lets it
clean up, and stop those still running when the session ends (tests/conftest.py); and EventChild, a test's
long-running app that reports JSON events on stdout."""

from __future__ import annotations

import json
import queue
import signal
import subprocess
import threading
from pathlib import Path
from typing import Any

__all__ = ["EventChild", "run_terminating", "stop_all"]

_RUNNING: dict[subprocess.Popen[str], int] = {}
"""Children running now, with the signal that lets each stop cleanly."""
_LOCK = threading.Lock()
_STOPPED = threading.Event()


def _stop(proc: subprocess.Popen[str], sig: int, grace: float) -> tuple[str, str]:
    proc.send_signal(sig)
    try:
        return proc.communicate(timeout=grace)
    except subprocess.TimeoutExpired:
        proc.kill()
        return proc.communicate()


def run_terminating(
    cmd: list[str],
    timeout: float,
    grace: float = 60,
    stop_signal: int = signal.SIGTERM,
    merge_stderr: bool = False,
    **kw: Any,
) -> subprocess.CompletedProcess[str]:
    """subprocess.run(cmd, capture_output=True, text=True) that on timeout sends `stop_signal` first (compat stops
    its brokers and client agents on SIGTERM, pytest ends its session on SIGINT: they run in sessions of their own,
    which SIGKILL would leave behind), SIGKILL only after `grace` seconds, and then raises
    subprocess.TimeoutExpired with what the child printed. `merge_stderr`: stderr goes into stdout."""
    stderr = subprocess.STDOUT if merge_stderr else subprocess.PIPE
    with _LOCK:  # started and registered at once: stop_all misses no child
        if _STOPPED.is_set():
            raise RuntimeError(f"not started, the session is ending: {' '.join(cmd)[:200]}")
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=stderr, text=True, **kw)
        _RUNNING[proc] = stop_signal
    with proc:
        try:
            try:
                out, err = proc.communicate(timeout=timeout)
            except subprocess.TimeoutExpired:
                out, err = _stop(proc, stop_signal, grace)
                raise subprocess.TimeoutExpired(cmd, timeout, output=out, stderr=err) from None
        finally:
            with _LOCK:
                _RUNNING.pop(proc, None)
        return subprocess.CompletedProcess(cmd, proc.returncode, out, err or "")


def stop_all(grace: float = 60) -> None:
    """Sends each running child its stop signal (its communicate() in another thread then returns), kills those
    still there after `grace` seconds, and starts no more."""
    with _LOCK:
        _STOPPED.set()
        running = list(_RUNNING.items())
    for proc, sig in running:
        try:
            proc.send_signal(sig)
        except OSError:
            pass
    for proc, _ in running:
        try:
            proc.wait(timeout=grace)
        except subprocess.TimeoutExpired:
            proc.kill()


class EventChild:
    """A child app that prints one JSON object a line: its events, read on a thread into `events` (then an
    {"event": "exit"} when its stdout ends), its stderr kept in `stderr_path`; stopped by `stop` (SIGTERM unless a
    subclass asks otherwise in `_ask_to_stop`) or killed. Lines that are not JSON are dropped, or kept as
    {"event": "stray", "line": LINE} with `keep_stray`."""

    def __init__(
        self, cmd: list[str], stderr_path: Path, stdin: int = subprocess.DEVNULL, keep_stray: bool = False,
        cwd: Path | None = None,
    ) -> None:
        self.stderr_path = stderr_path
        self._keep_stray = keep_stray
        self._stderr = stderr_path.open("w", encoding="utf-8")
        self.proc = subprocess.Popen(
            cmd, stdin=stdin, stdout=subprocess.PIPE, stderr=self._stderr, text=True, encoding="utf-8", cwd=cwd
        )
        self.events: queue.Queue[dict[str, Any]] = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            try:
                self.events.put(json.loads(line))
            except ValueError:  # the app's or its libraries' own prints
                if self._keep_stray:
                    self.events.put({"event": "stray", "line": line.rstrip("\n")})
        self.events.put({"event": "exit"})

    def stderr(self) -> str:
        """The end of what the app has written to stderr so far."""
        if not self._stderr.closed:
            self._stderr.flush()
        return self.stderr_path.read_text(encoding="utf-8")[-6000:]

    def kill(self) -> None:
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait(30)
        self._stderr.close()

    def _ask_to_stop(self) -> None:
        self.proc.send_signal(signal.SIGTERM)

    def stop(self) -> int:
        """Asks the app to stop and returns its exit code; kills it if it is still there after 60 s."""
        self._ask_to_stop()
        try:
            code = self.proc.wait(60)
        finally:
            if self.proc.poll() is None:
                self.proc.kill()
                self.proc.wait()
            self._stderr.close()
        return code
