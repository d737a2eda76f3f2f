"""`fakekafka serve` as a user runs it: ready line, a real client, clean exit, clear errors."""

from __future__ import annotations

import re
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest


def _start(*args: str) -> tuple[subprocess.Popen[str], str]:
    proc = subprocess.Popen(
        [sys.executable, "-m", "fakekafka", "serve", *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
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
        proc = subprocess.run(
            [sys.executable, "-m", "fakekafka", "serve", "--port", str(port)],
            capture_output=True,
            text=True,
            timeout=20,
        )
    assert proc.returncode == 1
    assert "already in use" in proc.stderr and "Traceback" not in proc.stderr


@pytest.mark.parametrize("args", [["--partitions", "0"], ["--port", "nope"]])
def test_bad_arguments(args: list[str]) -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "fakekafka", "serve", *args], capture_output=True, text=True, timeout=20
    )
    assert proc.returncode == 2 and "Traceback" not in proc.stderr


def test_serve_takes_broker_configs_by_kafkas_names(tmp_path: Path) -> None:
    """--config-file (a server.properties) and --config (which wins): DescribeConfigs reports them as
    static broker configs and the cluster runs by them."""
    props = tmp_path / "server.properties"
    props.write_text(
        "# a comment\nnum.partitions = 2\nlog.retention.ms: 3600000\n"
        "group.min.session.timeout.ms=\\\n  1000\n"
        "num.io.threads=4\nbackground.threads=5\nauto.leader.rebalance.enable=false\n"
    )
    proc, line = _start("--port", "0", "--config-file", str(props), "--config", "num.partitions=3")
    try:
        from kafka import KafkaAdminClient, KafkaProducer
        from kafka.admin import ConfigResource, ConfigResourceType

        bootstrap = _field(line, "bootstrap.servers")
        admin = KafkaAdminClient(bootstrap_servers=bootstrap)
        got = admin.describe_configs([ConfigResource(ConfigResourceType.BROKER, "1")], config_filter="all")
        configs = got["broker"]["1"]
        assert (configs["num.partitions"]["value"], configs["num.partitions"]["config_source"]) == (
            "3",
            "STATIC_BROKER_CONFIG",
        )
        assert configs["group.min.session.timeout.ms"]["value"] == "1000"
        assert configs["log.retention.ms"]["value"] == "3600000"
        for name, value in (
            ("num.io.threads", "4"),
            ("background.threads", "5"),  # Kafka's, no use here
            ("auto.leader.rebalance.enable", "false"),
        ):
            assert (configs[name]["value"], configs[name]["config_source"]) == (value, "STATIC_BROKER_CONFIG")
        admin.close()
        producer = KafkaProducer(bootstrap_servers=bootstrap)
        producer.send("cli-configs", b"x").get(timeout=10)
        assert producer.partitions_for("cli-configs") == {0, 1, 2}
        producer.close()
    finally:
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(10) == 0


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--config", "no.such.config=1"], "The configuration 'no.such.config' was supplied but isn't a known config."),
        (
            ["--config", "num.partitions=many"],
            "Invalid value many for configuration num.partitions: Not a number of type INT",
        ),
        (
            ["--config", "log.cleaner.delete.retention.ms=-5"],
            "Invalid value -5 for configuration log.cleaner.delete.retention.ms: Value must be at least 0",
        ),
        (["--config", "num.partitions"], "--config num.partitions: expected KEY=VALUE"),
        (
            ["--config", "num.io.threads=0"],
            "Invalid value 0 for configuration num.io.threads: Value must be at least 1",
        ),
        (
            ["--config-file", "/nonexistent/server.properties"],
            "--config-file: cannot read /nonexistent/server.properties",
        ),
    ],
)
def test_bad_broker_configs_are_refused_in_kafkas_words(args: list[str], message: str) -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "fakekafka", "serve", "--port", "0", *args], capture_output=True, text=True, timeout=20
    )
    assert proc.returncode == 2 and message in proc.stderr and "Traceback" not in proc.stderr


def test_console_script_help() -> None:
    proc = subprocess.run(["fakekafka", "serve", "--help"], capture_output=True, text=True, timeout=20)
    assert proc.returncode == 0 and "--no-auto-create-topics" in proc.stdout


def _ctl(control: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "fakekafka", "ctl", "--control", control, *args],
        capture_output=True,
        text=True,
        timeout=30,
    )


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
        killed = _ctl(control, "kill-broker", str(leader))
        assert killed.returncode == 0
        # a sentence, then the events the kill caused: the dead leader leaves the ISR (Kafka's ISR shrink)
        # before a new leader is elected from it
        lines = killed.stdout.splitlines()
        assert lines[0].startswith(f"broker {leader} killed")
        assert lines[1] == f"  broker_killed broker={leader}"
        assert f"  isr_shrink topic=steered partition=0 replica={leader} isr=" in killed.stdout
        elected = next(i for i, x in enumerate(lines) if x.startswith("  leader_elected topic=steered partition=0"))
        assert elected > next(i for i, x in enumerate(lines) if x.startswith("  isr_shrink"))
        state = json.loads(_ctl(control, "partition-state", "steered", "0").stdout)
        assert state["leader"] != leader and state["leader_epoch"] == 1 and leader not in state["isr"]
        assert producer.send("steered", b"2", partition=0).get(30).offset == 1  # the client failed over
        restarted = _ctl(control, "restart-broker", str(leader))
        assert restarted.returncode == 0 and restarted.stdout.startswith(f"broker {leader} restarted on port ")
        injected = _ctl(control, "inject-error", "Produce", "NOT_LEADER_OR_FOLLOWER", "--count", "1")
        assert injected.stdout.startswith("injected: error NOT_LEADER_OR_FOLLOWER for Produce")
        assert producer.send("steered", b"3", partition=0).get(30).offset == 2  # retried after the error
        events = [e["kind"] for e in json.loads(_ctl(control, "events").stdout)]
        assert events[0] == "broker_killed" and "isr_shrink" in events and "fault" in events
        assert events.index("isr_shrink") < events.index("leader_elected")
        bad = _ctl(control, "move-leader", "steered", "0", "9")
        assert bad.returncode == 1 and bad.stderr == "fakekafka ctl: there is no broker 9; the brokers are 1, 2, 3\n"
        bad = _ctl(control, "move-leader", "steered", "0", str(leader))
        if bad.returncode:  # not back in the ISR yet: Kafka's error, in words
            assert "NOT_LEADER_OR_FOLLOWER: broker" in bad.stderr and "not a live in-sync replica" in bad.stderr
        producer.close()
    finally:
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(10) == 0


@pytest.fixture(scope="module")
def three_brokers() -> Iterator[str]:
    """A running `fakekafka serve --brokers 3`; yields its control address."""
    proc, line = _start("--port", "0", "--brokers", "3", "--replication-factor", "3")
    try:
        yield _field(line, "control")
    finally:
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(10) == 0


@pytest.mark.parametrize(
    ("args", "code", "message"),
    [
        (["kill-broker", "7"], 1, "fakekafka ctl: there is no broker 7; the brokers are 1, 2, 3\n"),
        (["kill-broker", "abc"], 2, "argument broker: invalid int value: 'abc'"),
        (
            ["partition-state", "nosuch", "0"],
            1,
            "fakekafka ctl: UNKNOWN_TOPIC_OR_PARTITION: there is no topic 'nosuch'; the topics are none\n",
        ),
        (
            ["inject-error", "Produce", "BOGUS"],
            1,
            "fakekafka ctl: unknown error 'BOGUS'; names are Kafka's, e.g. NOT_LEADER_OR_FOLLOWER",
        ),
        (["inject-error", "Bogus", "NOT_LEADER_OR_FOLLOWER"], 1, "fakekafka ctl: unknown API 'Bogus'"),
        (["shrink-isr", "nosuch", "0", "2"], 1, "UNKNOWN_TOPIC_OR_PARTITION: there is no topic 'nosuch'"),
        (
            ["advance-clock", "10"],
            1,
            "fakekafka ctl: advance-clock needs a frozen clock: start the broker with "
            "`fakekafka serve --clock frozen`\n",
        ),
        (
            ["force-compaction", "nosuch"],
            1,
            "fakekafka ctl: UNKNOWN_TOPIC_OR_PARTITION: there is no topic 'nosuch'; the topics are none\n",
        ),
        (
            ["inject-error", "Produce", "NOT_LEADER_OR_FOLLOWER", "--count", "-3"],
            1,
            "fakekafka ctl: count must be 1 or more, not -3\n",
        ),
        (["inject-latency", "-100"], 1, "fakekafka ctl: ms must be 0 or more, not -100\n"),
        (["throttle", "-5"], 1, "fakekafka ctl: ms must be 0 or more, not -5\n"),
    ],
)
def test_ctl_mistakes_are_answered_in_words(three_brokers: str, args: list[str], code: int, message: str) -> None:
    r = _ctl(three_brokers, *args)
    assert (r.returncode, r.stdout) == (code, "")
    assert message in r.stderr and "Traceback" not in r.stderr and "KeyError" not in r.stderr


def test_ctl_confirms_what_it_did(three_brokers: str) -> None:
    assert _ctl(three_brokers, "elect-preferred-leaders").stdout == (
        "every partition is led by its preferred replica already (or that replica cannot lead now)\n"
    )
    stopped = _ctl(three_brokers, "stop-broker", "3")
    assert stopped.returncode == 0
    assert stopped.stdout.splitlines()[:2] == [
        "broker 3 stopped (controlled shutdown: leadership moved first)",
        "  broker_killed broker=3",
    ]
    assert _ctl(three_brokers, "kill-broker", "3").stdout == "broker 3 is down already: nothing changed\n"
    assert _ctl(three_brokers, "restart-broker", "3").returncode == 0
    assert _ctl(three_brokers, "restart-broker", "3").stdout == "broker 3 is up already: nothing changed\n"
    assert _ctl(three_brokers, "clear-faults").stdout == "every injected fault removed\n"
    assert _ctl(three_brokers, "isolate-broker", "2").stdout.startswith("broker 2 cut off from the other brokers")
    assert _ctl(three_brokers, "heal-broker", "2").stdout.startswith("broker 2 reconnected")


def test_elect_preferred_leaders_says_how_many_moved() -> None:
    proc, line = _start("--port", "0", "--brokers", "2", "--replication-factor", "2")
    try:
        from kafka import KafkaProducer

        control = _field(line, "control")
        producer = KafkaProducer(bootstrap_servers=_field(line, "bootstrap.servers"))
        producer.send("moved", b"x").get(10)
        producer.close()
        import json

        leader = json.loads(_ctl(control, "partition-state", "moved", "0").stdout)["leader"]
        other = 3 - leader
        assert _ctl(control, "move-leader", "moved", "0", str(other)).stdout.startswith(f"broker {other} leads moved-0")
        r = _ctl(control, "elect-preferred-leaders")
        assert r.returncode == 0
        assert r.stdout.splitlines()[0] == "leadership moved back to the preferred replica in 1 partition"
        assert f"  leader_elected topic=moved partition=0 leader={leader} previous={other}" in r.stdout
    finally:
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(10) == 0


def test_ctl_describe_prints_tables() -> None:
    from kafka import KafkaConsumer, KafkaProducer

    proc, line = _start("--port", "0", "--partitions", "2")
    try:
        bootstrap, control = _field(line, "bootstrap.servers"), _field(line, "control")
        producer = KafkaProducer(bootstrap_servers=bootstrap)
        for i in range(3):
            producer.send("orders", b"o", partition=i % 2).get(10)
        producer.close()
        consumer = KafkaConsumer(
            "orders",
            group_id="billing",
            bootstrap_servers=bootstrap,
            client_id="biller",
            auto_offset_reset="earliest",
            enable_auto_commit=False,
        )
        got = 0
        deadline = time.monotonic() + 30
        while got < 3 and time.monotonic() < deadline:
            got += sum(len(v) for v in consumer.poll(timeout_ms=1000).values())
        consumer.commit()
        r = _ctl(control, "describe")
        consumer.close()
        assert r.returncode == 0, r.stderr
        out = r.stdout.splitlines()
        topics = out.index("TOPICS")
        assert out[topics + 1].split() == ["TOPIC", "PARTITIONS", "REPLICATION", "RECORDS", "BYTES"]
        assert out[topics + 2].split()[:4] == ["orders", "2", "1", "3"]
        partitions = out.index("PARTITIONS")
        assert out[partitions + 1].split() == [
            "TOPIC",
            "PARTITION",
            "LEADER",
            "EPOCH",
            "REPLICAS",
            "ISR",
            "START",
            "END",
        ]
        assert [row.split() for row in out[partitions + 2 : partitions + 4]] == [
            ["orders", "0", "1", "0", "1", "1", "0", "2"],
            ["orders", "1", "1", "0", "1", "1", "0", "1"],
        ]
        groups = out.index("GROUPS")
        assert out[groups + 1].split() == ["GROUP", "STATE", "PROTOCOL", "GENERATION", "MEMBERS", "COMMITTED", "LAG"]
        row = out[groups + 2].split()
        assert row[:3] == ["billing", "Stable", "range"] and row[3].isdigit() and row[4:] == ["1", "2", "0"]
        members = out.index("GROUP MEMBERS")
        row = out[members + 2].split()
        assert row[0] == "billing" and row[2] == "biller" and row[-1] == "orders:0,1"
        # every column starts where its header does
        header = out[topics + 1]
        assert out[topics + 2].index("2") >= header.index("PARTITIONS")
    finally:
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(10) == 0


@pytest.mark.parametrize("control", ["localhost", "localhost:http", ":9192", "localhost:0"])
def test_ctl_control_address_is_checked(control: str) -> None:
    r = _ctl(control, "events")
    assert r.returncode == 2 and "is not" in r.stderr and "Traceback" not in r.stderr


def test_ctl_without_a_server_says_so() -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    r = _ctl(f"127.0.0.1:{port}", "events")
    assert r.returncode == 1 and "is `fakekafka serve` or `fakekafka proxy` running?" in r.stderr


def _serve(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "fakekafka", "serve", *args], capture_output=True, text=True, timeout=20
    )


def test_version() -> None:
    import fakekafka

    r = subprocess.run([sys.executable, "-m", "fakekafka", "--version"], capture_output=True, text=True, timeout=20)
    assert (r.returncode, r.stdout) == (0, f"fakekafka {fakekafka.__version__}\n")


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            ["--port", "99999"],
            "argument --port: '99999' is not a port: give a number from 1 to 65535 (0 picks a free one)",
        ),
        (["--port", "-1"], "argument --port: '-1' is not a port"),
        (["--control-port", "70000"], "argument --control-port: '70000' is not a port"),
        (["--advertised-port", "0"], "argument --advertised-port: '0' is not a port: give a number from 1 to 65535\n"),
        (
            ["--port", "65535", "--brokers", "2"],
            "fakekafka: --port 65535 with --brokers 2 needs ports 65535 to 65536; the highest is 65535",
        ),
        (["--port", "0", "--brokers", "2", "--advertised-port", "9092"], "--advertised-port needs a single broker"),
        (["--status-every", "0"], "--status-every takes a number of seconds above 0"),
    ],
)
def test_ports_and_numbers_are_checked_before_anything_listens(args: list[str], message: str) -> None:
    r = _serve(*args)
    assert r.returncode == 2 and r.stdout == ""
    assert message in r.stderr and "Traceback" not in r.stderr


def test_a_usage_mistake_is_one_line_before_anything_else() -> None:
    """The mistake first and alone (with where the usage is), not after serve's whole usage block."""
    r = _serve("--port", "70000")
    assert r.returncode == 2 and r.stdout == ""
    assert r.stderr.splitlines() == [
        "fakekafka serve: error: argument --port: '70000' is not a port: give a number from 1 to 65535 (0 picks a "
        "free one)",
        "(fakekafka serve --help lists the options)",
    ]


def test_cli_messages_use_cli_words() -> None:
    r = subprocess.run(
        [sys.executable, "-m", "fakekafka", "proxy", "--upstream", "127.0.0.1:9", "--record-frames"],
        capture_output=True,
        text=True,
        timeout=20,
    )
    assert (r.returncode, r.stdout, r.stderr) == (2, "", "fakekafka proxy: error: --record-frames needs --record DIR\n")


def _held_port_after_a_free_one(gap: int) -> tuple[socket.socket, int]:
    """A listening socket on port P + gap where P is free now (for serve --port P)."""
    for _ in range(50):
        held = socket.socket()
        held.bind(("127.0.0.1", 0))
        held.listen()
        port = held.getsockname()[1] - gap
        if port > 0:
            with socket.socket() as probe:
                try:
                    probe.bind(("127.0.0.1", port))
                    return held, port
                except OSError:
                    pass
        held.close()
    pytest.skip("no free port below a held one")


def test_a_busy_second_broker_port_is_named() -> None:
    held, port = _held_port_after_a_free_one(1)
    with held:
        r = _serve("--port", str(port), "--brokers", "2", "--control-port", "0")
    assert r.returncode == 1 and "Traceback" not in r.stderr
    assert f"fakekafka: cannot listen on 127.0.0.1:{port + 1}: the address is already in use" in r.stderr


def test_a_busy_default_control_port_falls_back_to_a_free_one() -> None:
    held, port = _held_port_after_a_free_one(100)
    with held:
        proc, line = _start("--port", str(port))
        try:
            control = _field(line, "control")
            assert control != f"127.0.0.1:{port + 100}"
            assert _field(line, "bootstrap.servers") == f"127.0.0.1:{port}"
            assert _ctl(control, "describe").returncode == 0
        finally:
            proc.send_signal(signal.SIGTERM)
            assert proc.wait(10) == 0
            assert proc.stderr is not None
            err = proc.stderr.read()
        assert (
            f"fakekafka: control port {port + 100} (--port + 100) is not free (the address is already in use); "
            f"using {control.rsplit(':', 1)[1]} instead: `fakekafka ctl --control {control} ...` (choose one "
            "with --control-port)"
        ) in err
        # asked for by name, a busy control port is an error that names the option
        r = _serve("--port", "0", "--control-port", str(port + 100))
    assert r.returncode == 1 and r.stdout == ""
    assert (
        f"fakekafka: cannot listen on control port 127.0.0.1:{port + 100} (--control-port): the address is "
        "already in use"
    ) in r.stderr


def test_status_every_and_sigusr1_print_one_line() -> None:
    from kafka import KafkaProducer

    proc, line = _start("--port", "0", "--status-every", "0.2")
    try:
        producer = KafkaProducer(bootstrap_servers=_field(line, "bootstrap.servers"))
        producer.send("orders", b"x" * 100).get(10)
        assert proc.stdout is not None
        status = ""
        while "1 record " not in status:
            status = proc.stdout.readline()
        assert re.fullmatch(
            r"fakekafka status: up \d+s; brokers 1/1 alive; 1 topic, 1 partition, 1 record "
            r"\(\d+ B\); 0 groups; [12] connections?; \d+ requests \(\d+\.\d/s\)\n",
            status,
        ), status
        producer.close()
    finally:
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(10) == 0
    proc, line = _start("--port", "0")
    try:
        proc.send_signal(signal.SIGUSR1)
        assert proc.stdout is not None
        status = proc.stdout.readline()
        assert status.startswith(
            "fakekafka status: up 0s; brokers 1/1 alive; 0 topics, 0 partitions, 0 records "
            "(0 B); 0 groups; 0 connections; 0 requests"
        )
    finally:
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(10) == 0


def test_a_commands_events_on_internal_topics_are_counted_not_listed() -> None:
    from fakekafka.model.events import Event
    from fakekafka.ops.control import _caused

    events = [
        Event(0, "broker_killed", {"broker": 1}),
        *(Event(0, "isr_shrink", {"topic": "__consumer_offsets", "partition": i}) for i in range(50)),
        *(Event(0, "isr_shrink", {"topic": "t", "partition": i, "replica": 1}) for i in range(25)),
    ]
    lines = _caused(events)
    assert lines[0] == "  broker_killed broker=1"
    assert lines[1] == "  isr_shrink topic=t partition=0 replica=1"
    assert lines[20:] == [
        "  ... and 6 more",
        "  ... and 50 on internal topics (__consumer_offsets)",
        "  (`fakekafka ctl events` lists every one)",
    ]
    assert _caused(events[:1]) == ["  broker_killed broker=1"]


def test_ctl_describe_lists_transactions() -> None:
    confluent_kafka = pytest.importorskip("confluent_kafka", reason="pip install confluent-kafka")
    proc, line = _start("--port", "0")
    try:
        control = _field(line, "control")
        producer = confluent_kafka.Producer(
            {
                "bootstrap.servers": _field(line, "bootstrap.servers"),
                "transactional.id": "billing-tx",
                "transaction.timeout.ms": 30000,
            }
        )
        producer.init_transactions(10)
        producer.begin_transaction()
        producer.produce("ledger", b"debit", partition=0)
        producer.flush(10)

        def row() -> list[str]:
            out = _ctl(control, "describe").stdout.splitlines()
            at = out.index("TRANSACTIONS")
            assert out[at + 1].split("  ")[0] == "TRANSACTIONAL ID"
            return out[at + 2].split()

        ongoing = row()
        assert ongoing[:2] == ["billing-tx", "Ongoing"] and ongoing[3:5] == ["0", "30000"]
        assert ongoing[5].isdigit() and ongoing[6] == "ledger-0"
        producer.commit_transaction(10)
        assert row()[:2] == ["billing-tx", "CompleteCommit"]
        producer.begin_transaction()
        producer.produce("ledger", b"credit", partition=0)
        producer.flush(10)
        aborted = _ctl(control, "abort-transaction", "billing-tx")
        assert aborted.returncode == 0, aborted.stderr
        assert aborted.stdout.startswith(
            "transaction of billing-tx aborted as its timeout would: abort markers for ledger-0; producer "
        )
        assert row()[:2] == ["billing-tx", "CompleteAbort"]
        with pytest.raises(confluent_kafka.KafkaException):  # the producer was fenced
            producer.commit_transaction(10)
        again = _ctl(control, "abort-transaction", "billing-tx")
        assert again.returncode == 1 and "has no open transaction (state CompleteAbort)" in again.stderr
        unknown = _ctl(control, "abort-transaction", "nosuch")
        assert unknown.returncode == 1
        assert unknown.stderr == "fakekafka ctl: there is no transactional id 'nosuch'; the ids are: billing-tx\n"
        expired = _ctl(control, "expire-transactional-id", "billing-tx")
        assert expired.returncode == 0 and expired.stdout.startswith("transactional id billing-tx expired"), expired
        gone = _ctl(control, "expire-transactional-id", "billing-tx")
        assert (
            gone.returncode == 1 and "there is no transactional id 'billing-tx'; the ids are: none yet" in gone.stderr
        )
    finally:
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(10) == 0


@pytest.mark.parametrize(
    ("feature", "said"),
    [
        ("transaction.version=3", "takes a level from 0 to 2"),
        ("metadata.version=20", "unknown feature 'metadata.version'"),
        ("transaction.version", "takes a level from 0 to 2"),
    ],
)
def test_bad_feature_is_refused_in_words(feature: str, said: str) -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "fakekafka", "serve", "--port", "0", "--feature", feature],
        capture_output=True,
        text=True,
        timeout=20,
    )
    assert proc.returncode == 2 and said in proc.stderr and "Traceback" not in proc.stderr


@pytest.mark.parametrize("level", [1, 2])
def test_feature_transaction_version_is_what_clients_see(level: int) -> None:
    proc, line = _start("--port", "0", "--feature", f"transaction.version={level}")
    try:
        host, port = _field(line, "bootstrap.servers").rsplit(":", 1)
        from fakekafka.testing.client import WireConnection
        from fakekafka.wire import ApiKey

        conn = WireConnection(host, int(port), "cli-test", 10)
        try:
            r = conn.request(ApiKey.API_VERSIONS, 3, {"client_software_name": "t", "client_software_version": "1"})
        finally:
            conn.close()
        assert [(f.name, f.max_version_level) for f in r.finalized_features] == [
            ("group.version", 1),
            ("share.version", 2),
            ("streams.version", 1),
            ("transaction.version", level),
        ]
    finally:
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(10) == 0


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (["--kafka-version", "3.5"], "fakekafka does not know Kafka 3.5; it knows 2.8, 3.7, 3.9 and 4.4 (the default)"),
        (["--kafka-version", "latest"], "'latest' is not a Kafka version"),
        (
            ["--kafka-version", "3.9", "--feature", "transaction.version=2"],
            "Kafka 3.9 finalizes no transaction.version",
        ),
        (
            ["--config", "zookeeper.connect=localhost:2181"],  # Kafka 4.0 removed it; 2.8's (next test) has it
            "The configuration 'zookeeper.connect' was supplied but isn't a known config.",
        ),
        (
            ["--kafka-version", "3.7", "--config", "compression.gzip.level=5"],  # KIP-390: 3.8
            "The configuration 'compression.gzip.level' was supplied but isn't a known config.",
        ),
    ],
)
def test_bad_kafka_version_is_refused_in_words(args: list[str], said: str) -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "fakekafka", "serve", "--port", "0", *args], capture_output=True, text=True, timeout=20
    )
    assert proc.returncode == 2 and said in proc.stderr and "Traceback" not in proc.stderr


def test_kafka_version_is_what_clients_see() -> None:
    proc, line = _start("--port", "0", "--kafka-version", "2.8", "--config", "zookeeper.connect=localhost:2181")
    try:
        host, port = _field(line, "bootstrap.servers").rsplit(":", 1)
        from fakekafka.testing.client import WireConnection
        from fakekafka.wire import ApiKey

        conn = WireConnection(host, int(port), "cli-test", 10)
        try:  # a 2.8 broker's ApiVersions: v0-3, no features; no KIP-848 API at all
            assert conn.versions[ApiKey.API_VERSIONS] == (0, 3) and conn.versions[ApiKey.METADATA] == (0, 11)
            assert ApiKey.CONSUMER_GROUP_HEARTBEAT not in conn.versions
            r = conn.request(ApiKey.API_VERSIONS, 3, {"client_software_name": "t", "client_software_version": "1"})
            assert list(r.finalized_features) == [] and r.finalized_features_epoch == -1
            d = conn.request(
                ApiKey.DESCRIBE_CONFIGS,
                1,
                {
                    "resources": [
                        {  # 2.8's configs, zookeeper.connect set
                            "resource_type": 4,
                            "resource_name": "1",
                            "configuration_keys": ["zookeeper.connect", "port"],
                        }
                    ],
                    "include_synonyms": False,
                },
            )
            assert {c.name: c.value for c in d.results[0].configs} == {
                "zookeeper.connect": "localhost:2181",
                "port": "9092",
            }
        finally:
            conn.close()
    finally:
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(10) == 0


# --- the control port: who may steer (issue 26, item 9) --------------------------------------------------------


def test_control_port_listens_on_loopback_unless_asked(tmp_path: Path) -> None:
    """`serve --host 0.0.0.0` (as the Dockerfile runs it) used to put the control port there too: anyone who could
    reach the broker could kill it or read what ACLs hide. It stays on loopback, where `ctl` needs nothing."""
    proc, line = _start("--host", "0.0.0.0", "--port", "0", "--advertised-host", "127.0.0.1")
    try:
        control = _field(line, "control")
        assert control.startswith("127.0.0.1:"), line
        r = _ctl(control, "describe")
        assert r.returncode == 0, r.stderr
    finally:
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=10)
    assert proc.returncode == 0 and "token" not in err


def test_control_port_off_loopback_tells_or_takes_its_token(tmp_path: Path) -> None:
    """--control-host elsewhere: a new token told on stderr, or the one in --control-token-file (made 0600 when
    missing), or $FAKEKAFKA_CONTROL_TOKEN's; this machine's own `ctl` still needs none."""
    import os

    env = {k: v for k, v in os.environ.items() if k != "FAKEKAFKA_CONTROL_TOKEN"}
    proc = subprocess.Popen(
        [sys.executable, "-m", "fakekafka", "serve", "--port", "0", "--control-host", "0.0.0.0"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    assert proc.stdout is not None and proc.stderr is not None
    told = proc.stderr.readline()
    line = proc.stdout.readline()
    try:
        assert _field(line, "control").startswith("0.0.0.0:")
        assert re.search(
            r"the control port listens on 0\.0\.0\.0: commands from other hosts need its token "
            r"[-\w]{43} ",
            told,
        ), told
        port = _field(line, "control").rsplit(":", 1)[1]
        assert _ctl(f"127.0.0.1:{port}", "describe").returncode == 0
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.communicate(timeout=10)
    token_file = tmp_path / "control-token"
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "fakekafka",
            "serve",
            "--port",
            "0",
            "--control-host",
            "0.0.0.0",
            "--control-token-file",
            str(token_file),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    assert proc.stdout is not None and proc.stderr is not None
    told = proc.stderr.readline()
    line = proc.stdout.readline()
    try:
        token = token_file.read_text().strip()
        assert len(token) == 43 and token_file.stat().st_mode & 0o777 == 0o600
        assert f"need the token in {token_file}" in told and token not in told
        port = _field(line, "control").rsplit(":", 1)[1]
        r = subprocess.run(
            [
                sys.executable,
                "-m",
                "fakekafka",
                "ctl",
                "--control",
                f"127.0.0.1:{port}",
                "--token-file",
                str(token_file),
                "describe",
            ],
            capture_output=True,
            text=True,
            timeout=30,
        )
        assert r.returncode == 0, r.stderr
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.communicate(timeout=10)
    empty = tmp_path / "empty"
    empty.write_text("\n")
    r = subprocess.run(
        [sys.executable, "-m", "fakekafka", "serve", "--port", "0", "--control-token-file", str(empty)],
        capture_output=True,
        text=True,
        timeout=20,
        env=env,
    )
    assert r.returncode == 1 and f"the control token file {empty} is empty" in r.stderr and "Traceback" not in r.stderr


def test_commands_from_another_host_need_the_token(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """The port's check, with this test's connections taken for another host's: no token, a wrong one, or a port
    without one: refused in words and the connection closed; the right one: served."""
    import asyncio

    import fakekafka
    from fakekafka.ops import control

    async def run() -> list[dict[str, object]]:
        async with fakekafka.Cluster(topics={"hidden": 1}) as cluster:
            with_token = await control.serve_control(cluster, "127.0.0.1", 0, "s3cret")
            without = await control.serve_control(cluster, "127.0.0.1", 0, None)
            monkeypatch.setattr(control, "is_loopback", lambda host: False)
            addresses = [f"127.0.0.1:{s.sockets[0].getsockname()[1]}" for s in (with_token, without)]
            replies = [
                await asyncio.to_thread(control.send_command, addresses[0], "describe", {}, 10, token)
                for token in (None, "wrong", "s3cret")
            ]
            replies.append(await asyncio.to_thread(control.send_command, addresses[1], "describe", {}, 10, "s3cret"))
            for server in (with_token, without):
                server.close()
            return replies

    with caplog.at_level("WARNING", logger="fakekafka.control"):
        replies = asyncio.run(run())
    needs = (
        "this control port needs its token from 127.0.0.1 (`fakekafka ctl --token-file FILE`, or "
        "$FAKEKAFKA_CONTROL_TOKEN); "
    )
    assert replies[0] == {"ok": False, "error": needs + "none was given"}
    assert replies[1] == {"ok": False, "error": needs + "the one given is wrong"}
    assert replies[2]["ok"] is True and "hidden" in str(replies[2]["result"])
    assert replies[3] == {
        "ok": False,
        "error": "this control port takes commands from this machine only (127.0.0.1 is not a loopback address)",
    }
    assert caplog.text.count("control: refused a command from 127.0.0.1") == 3


@pytest.mark.parametrize(
    ("host", "loopback"),
    [
        ("127.0.0.1", True),
        ("127.8.9.10", True),
        ("::1", True),
        ("::ffff:127.0.0.1", True),
        ("localhost", True),
        ("0.0.0.0", False),
        ("::", False),
        ("10.1.2.3", False),
        ("::ffff:10.0.0.1", False),
        ("example.org", False),
    ],
)
def test_what_counts_as_loopback(host: str, loopback: bool) -> None:
    from fakekafka.ops.control import is_loopback

    assert is_loopback(host) is loopback


def test_a_control_line_too_long_is_answered_not_a_traceback() -> None:
    """A line past 64 KiB raised out of the handler (asyncio's default limit); lines up to 1 MiB are read, a
    longer one is answered and the connection closed."""
    import json

    proc, line = _start("--port", "0")
    try:
        host, port = _field(line, "control").rsplit(":", 1)
        for size, words in ((100_000, "unknown command"), (2 << 20, "a command line is at most 1048576 bytes")):
            with socket.create_connection((host, int(port)), timeout=10) as s:
                data = b""
                try:
                    s.sendall(json.dumps({"command": "x" * size}).encode() + b"\n")
                    while not data.endswith(b"\n"):
                        chunk = s.recv(65536)
                        assert chunk, "closed unanswered"
                        data += chunk
                except ConnectionResetError:  # closed with the line's unread end still queued: the answer may
                    assert size > 1 << 20  # be lost to the reset
                    continue
                assert words in json.loads(data)["error"]
        assert _ctl(f"{host}:{port}", "describe").returncode == 0  # still steering
    finally:
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=10)
    assert proc.returncode == 0 and "Traceback" not in err
