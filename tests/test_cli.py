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


def _field(line: str, name: str) -> str:
    return next(part.split("=", 1)[1] for part in line.split() if part.startswith(name + "="))


def test_serve_prints_bootstrap_and_exits_cleanly_on_sigterm() -> None:
    proc, line = _start("--port", "0", "--partitions", "3")
    try:
        assert line.startswith("fakekafka ready: bootstrap.servers=127.0.0.1:")
        bootstrap = _field(line, "bootstrap.servers")
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


def _ctl(control: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "fakekafka", "ctl", "--control", control, *args],
                          capture_output=True, text=True, timeout=30)


def test_ctl_steers_a_running_cluster() -> None:
    import json

    from kafka import KafkaProducer
    proc, line = _start("--port", "0", "--brokers", "3", "--replication-factor", "3")
    try:
        bootstrap, control = _field(line, "bootstrap.servers"), _field(line, "control")
        assert len(bootstrap.split(",")) == 3
        producer = KafkaProducer(bootstrap_servers=bootstrap, acks="all")
        producer.send("steered", b"1", partition=0).get(10)
        state = json.loads(_ctl(control, "partition-state", "steered", "0").stdout)
        assert state["isr"] == [1, 2, 3] and state["high_watermark"] == 1
        leader = state["leader"]
        assert _ctl(control, "kill-broker", str(leader)).returncode == 0
        state = json.loads(_ctl(control, "partition-state", "steered", "0").stdout)
        assert state["leader"] != leader and state["leader_epoch"] == 1 and leader not in state["isr"]
        assert producer.send("steered", b"2", partition=0).get(30).offset == 1  # the client failed over
        assert _ctl(control, "restart-broker", str(leader)).returncode == 0
        injected = _ctl(control, "inject-error", "Produce", "NOT_LEADER_OR_FOLLOWER", "--count", "1")
        assert "NOT_LEADER_OR_FOLLOWER" in injected.stdout
        assert producer.send("steered", b"3", partition=0).get(30).offset == 2  # retried after the error
        events = [e["kind"] for e in json.loads(_ctl(control, "events").stdout)]
        assert events[:3] == ["broker_killed", "controller_elected", "leader_elected"] and "fault" in events
        bad = _ctl(control, "move-leader", "steered", "0", "9")
        assert bad.returncode == 1 and "not a live in-sync replica" in bad.stderr
        producer.close()
    finally:
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(10) == 0


def test_ctl_without_a_server_says_so() -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    r = _ctl(f"127.0.0.1:{port}", "events")
    assert r.returncode == 1 and "is `fakekafka serve` running?" in r.stderr
