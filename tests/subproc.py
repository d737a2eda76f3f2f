"""Run a child that starts brokers of its own (python -m compat) with a deadline that lets it clean up."""

from __future__ import annotations

import signal
import subprocess
from typing import Any

__all__ = ["run_terminating"]


def run_terminating(cmd: list[str], timeout: float, grace: float = 60, **kw: Any) -> subprocess.CompletedProcess[str]:
    """subprocess.run(cmd, capture_output=True, text=True) that on timeout sends SIGTERM first (compat stops its
    brokers and client agents on it: they run in sessions of their own, which SIGKILL would leave behind),
    SIGKILL only after `grace` seconds, and then raises subprocess.TimeoutExpired with what the child printed."""
    with subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, **kw) as proc:
        try:
            out, err = proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            proc.send_signal(signal.SIGTERM)
            try:
                out, err = proc.communicate(timeout=grace)
            except subprocess.TimeoutExpired:
                proc.kill()
                out, err = proc.communicate()
            raise subprocess.TimeoutExpired(cmd, timeout, output=out, stderr=err) from None
        return subprocess.CompletedProcess(cmd, proc.returncode, out, err)
