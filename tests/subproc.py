"""Run a child that starts brokers of its own (python -m compat, pytest --kafka-real) with a deadline that lets it
clean up, and stop those still running when the session ends (tests/conftest.py)."""

from __future__ import annotations

import signal
import subprocess
import threading
from typing import Any

__all__ = ["run_terminating", "stop_all"]

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
