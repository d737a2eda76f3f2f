"""`fakekafka serve` as a user runs it: ready line, a real client, clean exit, clear errors."""

from __future__ import annotations

import signal
import socket
import subprocess
import sys

import pytest


def _start(*args: str) -> tuple[subprocess.Popen[str], str]:
    proc = subprocess.Popen([sys.executable, "-m", "fakekafka", "serve", *args], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    line = proc.stdout.readline()
    return proc, line


def test_serve_prints_bootstrap_and_exits_cleanly_on_sigterm() -> None:
    proc, line = _start("--port", "0", "--partitions", "3")
    try:
        assert line.startswith("fakekafka ready: bootstrap.servers=127.0.0.1:")
        bootstrap = line.strip().split("=", 1)[1]
        from kafka import KafkaProducer
        producer = KafkaProducer(bootstrap_servers=bootstrap)
        meta = producer.send("cli-topic", b"x").get(timeout=10)
        assert meta.offset == 0
        assert producer.partitions_for("cli-topic") == {0, 1, 2}
        producer.close()
    finally:
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(10) == 0


def test_port_in_use_is_a_clear_message_not_a_traceback() -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        port = s.getsockname()[1]
        proc = subprocess.run([sys.executable, "-m", "fakekafka", "serve", "--port", str(port)],
                              capture_output=True, text=True, timeout=20)
    assert proc.returncode == 1
    assert "already in use" in proc.stderr and "Traceback" not in proc.stderr


@pytest.mark.parametrize("args", [["--partitions", "0"], ["--port", "nope"]])
def test_bad_arguments(args: list[str]) -> None:
    proc = subprocess.run([sys.executable, "-m", "fakekafka", "serve", *args], capture_output=True, text=True,
                          timeout=20)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr


def test_console_script_help() -> None:
    proc = subprocess.run(["fakekafka", "serve", "--help"], capture_output=True, text=True, timeout=20)
    assert proc.returncode == 0 and "--no-auto-create-topics" in proc.stdout
