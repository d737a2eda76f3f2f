"""The proxy in front of fakekafka clusters the tests steer: leader moves, unreachable brokers, recordings that hold
every request once, replays with no difference, malformed frames, a vanishing upstream, and the command line."""

from __future__ import annotations

import asyncio
import os
import signal
import socket
import struct
import subprocess
import sys
import threading
import time
import uuid
from pathlib import Path

import pytest
from confluent_kafka import Consumer, Producer
from confluent_kafka.admin import AdminClient, NewTopic

import fakekafka
from fakekafka.observe.recording import read_records
from fakekafka.proxy import Proxy
from fakekafka.proxy.observe import read_frames
from fakekafka.proxy.replay import replay
from fakekafka.wire.protocol import decode_response, encode_request


def _produce(bootstrap: str, topic: str, n: int, start: int = 0, **config: object) -> None:
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 2, "enable.idempotence": True, **config})
    for i in range(start, start + n):
        producer.produce(topic, f"v{i}".encode(), key=f"k{i}".encode())
    assert producer.flush(30) == 0


def _consume_all(bootstrap: str, topic: str, n: int) -> list[str]:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"g-{uuid.uuid4().hex[:6]}",
                         "auto.offset.reset": "earliest"})
    consumer.subscribe([topic])
    got: list[str] = []
    deadline = time.monotonic() + 30
    while len(got) < n and time.monotonic() < deadline:
        msg = consumer.poll(0.3)
        if msg is not None and not msg.error():
            got.append(msg.value().decode())
    consumer.close()
    return got


def test_a_leader_moving_to_another_broker_is_followed_through_the_proxy() -> None:
    with fakekafka.Cluster(brokers=3, topics={"moving": 1}) as cluster, Proxy(cluster) as proxy:
        cluster.create_topic("moving3", 1, replication_factor=3)
        _produce(proxy.bootstrap_servers, "moving3", 20)
        before = cluster.partition_state("moving3", 0)["leader"]
        after = next(r for r in cluster.partition_state("moving3", 0)["replicas"] if r != before)
        cluster.move_leader("moving3", 0, after)
        _produce(proxy.bootstrap_servers, "moving3", 20, start=20)
        assert cluster.end_offsets("moving3") == {0: 40}
        produce_brokers = {r.broker for r in cluster.requests() if r.api == "Produce"}
        assert produce_brokers == {before, after}
        # the new leader's listener: clients reached broker `after` only through the proxy
        assert {r.client for r in cluster.requests()} <= proxy.server.upstream_local_addresses
        assert set(proxy.brokers()) == {1, 2, 3}


def test_an_unreachable_broker_and_its_return() -> None:
    with fakekafka.Cluster() as cluster, Proxy(cluster) as proxy:
        _produce(proxy.bootstrap_servers, "t", 5)
        proxy.kill_broker(1)
        port = proxy.brokers()[1][1]
        with pytest.raises(OSError), socket.create_connection(("127.0.0.1", port), timeout=2):
            pass
        with socket.socket() as other, pytest.raises(OSError, match="in use"):  # kept for the broker's return
            other.bind(("127.0.0.1", port))
        producer = Producer({"bootstrap.servers": proxy.bootstrap_servers, "message.timeout.ms": 1500})
        failed: list[object] = []
        producer.produce("t", b"lost", on_delivery=lambda err, _m: failed.append(err))
        producer.flush(10)
        assert failed and failed[0] is not None  # nothing reaches broker 1 through the proxy
        proxy.restart_broker(1)
        _produce(proxy.bootstrap_servers, "t", 5, start=5)
        assert cluster.end_offsets("t") == {0: 10}
        assert [e.kind for e in proxy.events() if e.kind.startswith("broker_")] == \
            ["broker_unreachable", "broker_reachable"]
        with pytest.raises(ValueError, match="no broker 7"):
            proxy.kill_broker(7)


def test_a_recording_holds_every_request_once_and_replays_without_difference(tmp_path: Path) -> None:
    rec = tmp_path / "rec"
    with fakekafka.Cluster(partitions=2) as cluster:
        with Proxy(cluster, record=rec, record_frames=True, summary=True) as proxy:
            _produce(proxy.bootstrap_servers, "orders", 50)
            admin = AdminClient({"bootstrap.servers": proxy.bootstrap_servers})
            admin.create_topics([NewTopic("audit", 1, 1)])["audit"].result(10)
            del admin
            served = len(cluster.requests())
        records = read_records(rec)
        frames = read_frames(rec)
        # every request the upstream served was recorded once, with the same correlation ids
        assert len(records) == len(frames) == served
        assert sorted((r.api, r.correlation_id) for r in records) == \
            sorted((r.api, r.correlation_id) for r in cluster.requests())
        produced = sum(r.records for r in records if r.api == "Produce")
        assert produced == 50
        assert "Produce" in proxy.summary_table()
    # the same session against a fresh cluster of the same kind answers the same (replay is imported with the
    # module: importing it here, with librdkafka clients being finalised, once met CPython 3.11.7's "AST
    # constructor recursion depth mismatch" in pytest's assertion rewriting)
    with fakekafka.Cluster(partitions=2) as fresh:
        report = asyncio.run(replay(str(rec), fresh.bootstrap_servers))
        assert report.requests == len(frames) and report.compared > 0
        assert report.same, report.text()
        assert fresh.end_offsets("orders") == cluster.end_offsets("orders")
    # and against a cluster that differs, the difference is shown
    with fakekafka.Cluster(partitions=2, auto_create_topics=False) as strict:
        report = asyncio.run(replay(str(rec), strict.bootstrap_servers))
        assert not report.same
        assert any("error_code" in d.field for d in report.differences.values()), report.text()


def _raw(port: int) -> socket.socket:
    s = socket.create_connection(("127.0.0.1", port), timeout=5)
    return s


def test_malformed_frames_close_that_connection_only() -> None:
    with fakekafka.Cluster() as cluster, Proxy(cluster) as proxy:
        port = int(proxy.bootstrap_servers.rsplit(":", 1)[1])
        good = _raw(port)
        bad = _raw(port)
        bad.sendall(struct.pack(">i", 3) + b"\x00\x03\x00")  # shorter than a header
        assert bad.recv(10) == b""
        bad2 = _raw(port)
        bad2.sendall(struct.pack(">i", 200_000_000))  # past socket.request.max.bytes
        assert bad2.recv(10) == b""
        good.sendall(encode_request(18, 0, 5, {}))
        size = struct.unpack(">i", good.recv(4))[0]
        data = b""
        while len(data) < size:
            data += good.recv(size - len(data))
        assert decode_response(18, 0, data)[0] == 5
        for s in (good, bad, bad2):
            s.close()
        # each closing is an event with its reason (what compat's recording relay reports as its errors)
        reasons = [e.details["reason"] for e in proxy.events() if e.kind == "connection_closed"]
        assert len(reasons) == 2 and "malformed request" in reasons[0] and "socket.request.max.bytes" in reasons[1]


def _answered(s: socket.socket, correlation_id: int) -> None:
    s.sendall(encode_request(18, 0, correlation_id, {}))
    size = struct.unpack(">i", s.recv(4))[0]
    data = b""
    while len(data) < size:
        data += s.recv(size - len(data))
    assert decode_response(18, 0, data)[0] == correlation_id


def test_client_connections_are_answered_without_nagles_algorithm() -> None:
    """Kafka's broker sets TCP_NODELAY on every connection it accepts; so do fakekafka's broker and proxy (asyncio
    sets it only on accepted sockets whose listener's protocol says TCP: the proxy's said 0, and its pipelined
    answers waited for the clients' delayed acknowledgements)."""
    with fakekafka.Cluster() as cluster, Proxy(cluster) as proxy:
        clients = [_raw(int(bootstrap.rsplit(":", 1)[1])) for bootstrap in
                   (cluster.bootstrap_servers, proxy.bootstrap_servers)]
        try:
            for i, s in enumerate(clients):
                _answered(s, i)

            def nodelay(transport: asyncio.BaseTransport) -> int:
                return transport.get_extra_info("socket").getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY)

            # the client's own connection and the proxy's upstream one
            broker = cluster.call(lambda: [nodelay(c.transport) for c in cluster.server.quotas.by_broker[1]])

            async def proxy_side() -> list[int]:
                return [nodelay(pair.client.transport) for listener in proxy.server.listeners.values()
                        for pair in listener.pairs]
            assert broker == [1, 1]
            assert proxy._thread is not None
            assert proxy._thread.submit(proxy_side()).result(10) == [1]
        finally:
            for s in clients:
                s.close()


def test_an_upstream_that_goes_away_closes_the_client_connection() -> None:
    cluster = fakekafka.Cluster().start()
    with Proxy(cluster) as proxy:
        s = _raw(int(proxy.bootstrap_servers.rsplit(":", 1)[1]))
        s.sendall(encode_request(18, 0, 1, {}))
        assert s.recv(4)
        cluster.stop()
        s.settimeout(5)
        rest = b""
        while chunk := s.recv(65536):
            rest += chunk
        s.close()  # the client saw the connection end when the upstream's did


def test_a_slow_reader_holds_the_proxy_back_not_its_memory() -> None:
    """A client that sends requests and reads nothing: the proxy stops reading it once 64 requests wait, and
    the upstream's answers pile up no further than the socket buffers."""
    with fakekafka.Cluster() as cluster, Proxy(cluster) as proxy:
        cluster.create_topic("big", 1)
        cluster.produce("big", b"x" * 900_000)
        s = _raw(int(proxy.bootstrap_servers.rsplit(":", 1)[1]))
        s.setblocking(False)
        fetch = {"replica_id": -1, "max_wait_ms": 0, "min_bytes": 0, "max_bytes": 1 << 20, "isolation_level": 0,
                 "topics": [{"topic": "big", "partitions": [{"partition": 0, "fetch_offset": 0,
                                                             "partition_max_bytes": 1 << 20}]}]}
        sent = 0
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline:
            try:
                s.send(encode_request(1, 4, sent, fetch))
                sent += 1
            except BlockingIOError:
                time.sleep(0.05)
                if sent > 0:
                    break
        time.sleep(0.5)
        served = sum(1 for r in cluster.requests() if r.api == "Fetch")
        assert served < sent or sent < 200  # the proxy stopped forwarding what it could not deliver
        assert served <= 64 + 70  # in flight per connection, plus what the socket buffers held
        s.close()


def test_the_command_line_proxy_is_steered_with_ctl(tmp_path: Path) -> None:
    with fakekafka.Cluster() as cluster:
        env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[3])}
        proc = subprocess.Popen([sys.executable, "-m", "fakekafka", "proxy", "--upstream", cluster.bootstrap_servers,
                                 "--listen", "127.0.0.1:0", "--summary", "--record", str(tmp_path / "rec")],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
        try:
            assert proc.stdout is not None
            line = proc.stdout.readline()
            assert line.startswith("fakekafka proxy ready: bootstrap.servers="), line
            fields = dict(part.split("=", 1) for part in line.split()[3:])
            bootstrap, control = fields["bootstrap.servers"], fields["control"]

            def ctl(*args: str) -> subprocess.CompletedProcess[str]:
                return subprocess.run([sys.executable, "-m", "fakekafka", "ctl", "--control", control, *args],
                                      capture_output=True, text=True, env=env, timeout=30)
            r = ctl("inject-error", "Produce", "NOT_LEADER_OR_FOLLOWER", "--count", "1")
            assert r.returncode == 0 and "injected: error NOT_LEADER_OR_FOLLOWER for Produce" in r.stdout
            _produce(bootstrap, "cli", 10)
            r = ctl("describe")
            assert r.returncode == 0 and "127.0.0.1" in r.stdout and "faults: none" in r.stdout, r.stdout
            r = ctl("advance-clock", "100")
            assert r.returncode == 1 and "a proxy takes" in r.stderr
            r = ctl("kill-broker", "9")
            assert r.returncode == 1 and "no broker 9" in r.stderr
            r = ctl("kill-broker", "1")
            assert r.returncode == 0 and "unreachable" in r.stdout
        finally:
            proc.send_signal(signal.SIGTERM)
            out, err = proc.communicate(timeout=30)
        assert proc.returncode == 0, err
        assert "Produce" in out and "NOT_LEADER_OR_FOLLOWER x1" in out
        assert cluster.end_offsets("cli") == {0: 10}
        assert read_records(tmp_path / "rec")


def test_the_command_line_proxy_keeps_its_control_port_on_loopback() -> None:
    """Issue 26: listening for clients on every address put the control port there too. It stays on loopback
    unless --control-host says otherwise; then it tells the token other hosts need."""
    with fakekafka.Cluster() as cluster:
        env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
        env.pop("FAKEKAFKA_CONTROL_TOKEN", None)
        for extra, host in (([], "127.0.0.1"), (["--control-host", "0.0.0.0"], "0.0.0.0")):
            proc = subprocess.Popen([sys.executable, "-m", "fakekafka", "proxy", "--upstream",
                                     cluster.bootstrap_servers, "--listen", "0.0.0.0:0", "--advertised-host",
                                     "127.0.0.1", *extra], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                    env=env)
            try:
                assert proc.stdout is not None
                line = proc.stdout.readline()
                control = dict(part.split("=", 1) for part in line.split()[3:])["control"]
                assert control.rsplit(":", 1)[0] == host, line
                r = subprocess.run([sys.executable, "-m", "fakekafka", "ctl", "--control",
                                    "127.0.0.1:" + control.rsplit(":", 1)[1], "describe"],
                                   capture_output=True, text=True, env=env, timeout=30)
                assert r.returncode == 0, r.stderr
            finally:
                proc.send_signal(signal.SIGTERM)
                _, err = proc.communicate(timeout=30)
            assert proc.returncode == 0, err
            assert ("commands from other hosts need its token" in err) == (host == "0.0.0.0"), err


@pytest.mark.parametrize(("args", "words"), [
    (["--upstream", "nohost"], "is not HOST:PORT"),
    (["--upstream", "127.0.0.1:1", "--listen", "127.0.0.1:99999"], "is not a port"),
])
def test_the_command_line_refuses_bad_input_in_words(args: list[str], words: str) -> None:
    r = subprocess.run([sys.executable, "-m", "fakekafka", "proxy", *args], capture_output=True, text=True, timeout=30,
                       env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[3])})
    assert r.returncode != 0 and words in r.stderr and "Traceback" not in r.stderr


def _answer_of(sock: socket.socket, api_key: int, version: int) -> tuple[int, object]:
    size = struct.unpack(">i", sock.recv(4))[0]
    data = b""
    while len(data) < size:
        data += sock.recv(size - len(data))
    return decode_response(api_key, version, data)


def test_hooks_answer_note_and_edit_requests_for_a_layer_on_top() -> None:
    """`intercept` answers a request itself and notes the others; `answer_edits` edits an API's answers;
    listeners get the note and the upstream's own answer (compat's recording relay is built on these)."""
    from fakekafka.wire.protocol import encode_response
    seen: list[tuple[object, bytes | None, bytes | None]] = []

    def intercept(head, frame, connection):  # type: ignore[no-untyped-def]
        local = encode_response(18, 0, head.correlation_id, {"error_code": 35, "api_keys": []}) \
            if head.api_key == 18 and head.api_version > 3 else None
        return f"{head.api_key}/{head.correlation_id}", local

    def edit(head, body) -> bool:  # type: ignore[no-untyped-def]
        body.api_keys = [k for k in body.api_keys if k.api_key == 18]
        return True

    with fakekafka.Cluster() as cluster, Proxy(cluster) as proxy:
        def hook() -> None:
            proxy.server.intercept = intercept
            proxy.server.answer_edits[18] = edit
            proxy.server.add_request_listener(lambda _r, e: seen.append(
                (e.note, e.response_frame, e.upstream_response_frame)))
        proxy.call(hook)
        s = _raw(int(proxy.bootstrap_servers.rsplit(":", 1)[1]))
        s.sendall(encode_request(18, 4, 1, {"client_software_name": "t", "client_software_version": "1"}))
        assert _answer_of(s, 18, 0)[1].error_code == 35  # answered by the hook: the upstream serves v4
        s.sendall(encode_request(18, 3, 2, {"client_software_name": "t", "client_software_version": "1"}))
        assert [k.api_key for k in _answer_of(s, 18, 3)[1].api_keys] == [18]
        s.close()
        assert proxy.server.requests_forwarded == 1 and proxy.server.requests_answered_locally == 1
    assert [note for note, _, _ in seen] == ["18/1", "18/2"]
    assert seen[0][2] is None  # no upstream answer for the one answered locally
    assert len(decode_response(18, 3, seen[1][2])[1].api_keys) > 1  # the upstream's own, unedited


def test_an_answer_due_when_the_client_left_still_reaches_the_listeners() -> None:
    """A consumer closing during its long poll: the upstream applied the request and answers it; the
    listeners (a recording, compat's relay) get that answer although the client is gone."""
    with fakekafka.Cluster() as cluster, Proxy(cluster) as proxy:
        cluster.create_topic("t", 1)
        seen: list[tuple[int, bytes | None]] = []
        proxy.call(lambda: proxy.server.add_request_listener(
            lambda _r, e: seen.append((e.head.api_key, e.response_frame))))
        s = _raw(int(proxy.bootstrap_servers.rsplit(":", 1)[1]))
        fetch = {"replica_id": -1, "max_wait_ms": 300, "min_bytes": 1, "max_bytes": 1 << 20, "topics": [
            {"topic": "t", "partitions": [{"partition": 0, "fetch_offset": 0, "partition_max_bytes": 1 << 20}]}]}
        s.sendall(encode_request(1, 11, 7, fetch))
        deadline = time.monotonic() + 5
        while proxy.server.requests_forwarded == 0 and time.monotonic() < deadline:
            time.sleep(0.01)
        s.close()  # before the long poll's answer
        while not seen and time.monotonic() < deadline:
            time.sleep(0.01)
        assert [(api, frame is not None) for api, frame in seen] == [(1, True)]
        assert decode_response(1, 11, seen[0][1])[0] == 7
        while proxy.server.connection_count and time.monotonic() < deadline:
            time.sleep(0.01)
        assert proxy.server.connection_count == 0  # the upstream connection closed after that answer


def test_faults_are_one_language_for_cluster_and_proxy() -> None:
    """The same methods, the same rule objects, the same descriptions."""
    with fakekafka.Cluster() as cluster, Proxy(cluster) as proxy:
        for target in (cluster, proxy):
            rule = target.inject_error("Fetch", "NOT_LEADER_OR_FOLLOWER", count=3, topic="t", after=True)
            assert rule.describe() == ("error NOT_LEADER_OR_FOLLOWER after the request is applied for Fetch "
                                       "topic=t (3 more)")
            target.clear_faults()
        assert fakekafka.Cluster.inject_error is fakekafka.Proxy.inject_error


def test_an_error_after_applying_on_the_fake_cluster_too() -> None:
    with fakekafka.Cluster() as cluster:
        cluster.inject_error("Produce", "REQUEST_TIMED_OUT", count=1, after=True)
        producer = Producer({"bootstrap.servers": cluster.bootstrap_servers, "enable.idempotence": True})
        producer.produce("after", b"once")
        assert producer.flush(10) == 0
        assert [r.value for r in cluster.records("after")] == [b"once"]
        assert [r.error_codes for r in cluster.requests() if r.api == "Produce"][0] == ("REQUEST_TIMED_OUT",)


def test_tls_towards_clients(tmp_path: Path) -> None:
    from fakekafka.net.security import make_test_pki, server_ssl_context
    pki = make_test_pki(tmp_path)
    with fakekafka.Cluster() as cluster, Proxy(cluster, client_ssl=server_ssl_context(
            str(pki.server_keystore), None, "none")) as proxy:
        conf = {"bootstrap.servers": proxy.bootstrap_servers, "security.protocol": "SSL",
                "ssl.ca.location": str(pki.ca_file)}
        producer = Producer({**conf, "enable.idempotence": True})
        producer.produce("tls", b"secret")
        assert producer.flush(15) == 0
        assert [r.value for r in cluster.records("tls")] == [b"secret"]
        plain = Producer({"bootstrap.servers": proxy.bootstrap_servers, "message.timeout.ms": 1000})
        failed: list[object] = []
        plain.produce("tls", b"nope", on_delivery=lambda err, _m: failed.append(err))
        plain.flush(5)
        assert failed and failed[0] is not None  # a plaintext client does not get through a TLS listener
        assert [r.value for r in cluster.records("tls")] == [b"secret"]
        # large Produce requests and Fetch answers pass through the TLS listener while they arrive
        big = [os.urandom(20_000) for _ in range(40)]
        for value in big:
            producer.produce("tls-big", value)
        assert producer.flush(15) == 0
        consumer = Consumer({**conf, "group.id": "tls", "auto.offset.reset": "earliest"})
        consumer.subscribe(["tls-big"])
        got: list[bytes] = []
        deadline = time.monotonic() + 30
        while len(got) < len(big) and time.monotonic() < deadline:
            msg = consumer.poll(0.3)
            if msg is not None and not msg.error():
                got.append(msg.value())
        consumer.close()
        assert got == big
        assert proxy.server.frames_streamed >= 2


def test_sasl_passes_through_and_tls_reaches_the_upstream() -> None:
    """A SASL_SSL upstream: the proxy speaks TLS to it (trusting its CA) and passes the SASL exchange through
    untouched, so the client authenticates to the upstream itself; a wrong password fails as it would direct."""
    import ssl
    with fakekafka.Cluster(listeners="SASL_SSL://127.0.0.1:0", users={"alice": "alice-secret"}) as cluster:
        assert cluster.pki is not None
        upstream_tls = ssl.create_default_context(cafile=str(cluster.pki.ca_file))
        with Proxy(cluster.bootstrap_servers_for("SASL_SSL"), upstream_ssl=upstream_tls) as proxy:
            for mechanism in ("PLAIN", "SCRAM-SHA-256"):
                conf = {"bootstrap.servers": proxy.bootstrap_servers, "security.protocol": "SASL_PLAINTEXT",
                        "sasl.mechanism": mechanism, "sasl.username": "alice", "sasl.password": "alice-secret"}
                producer = Producer({**conf, "enable.idempotence": True})
                producer.produce("secure", mechanism.encode())
                assert producer.flush(15) == 0
            wrong = Producer({**conf, "sasl.password": "nope", "message.timeout.ms": 2000})
            failed: list[object] = []
            wrong.produce("secure", b"refused", on_delivery=lambda err, _m: failed.append(err))
            wrong.flush(10)
            assert failed and failed[0] is not None
            assert [r.value for r in cluster.records("secure")] == [b"PLAIN", b"SCRAM-SHA-256"]
            big = os.urandom(300_000)  # a Produce streamed to the TLS upstream while it arrives
            producer.produce("secure-big", big)
            assert producer.flush(15) == 0
            assert [r.value for r in cluster.records("secure-big")] == [big]
            assert proxy.server.frames_streamed >= 1
            apis = [r.api for r in proxy.requests()]
            assert "SaslHandshake" in apis and "SaslAuthenticate" in apis


def test_a_consumer_group_session_replays_without_difference(tmp_path: Path) -> None:
    """JoinGroup hands out member ids the replay must use in its later SyncGroup, Heartbeat, OffsetCommit and
    LeaveGroup: they are remapped, and the answers match."""
    rec = tmp_path / "rec"
    with fakekafka.Cluster(partitions=2) as cluster, Proxy(cluster, record=rec, record_frames=True) as proxy:
        _produce(proxy.bootstrap_servers, "grouped", 20)
        assert len(_consume_all(proxy.bootstrap_servers, "grouped", 20)) == 20
    apis = {r["api_key"] for r in read_frames(rec)}
    assert {11, 14, 8} <= apis  # JoinGroup, SyncGroup, OffsetCommit were recorded
    with fakekafka.Cluster(partitions=2) as fresh:
        report = asyncio.run(replay(str(rec), fresh.bootstrap_servers))
        assert report.same, report.text()
        groups = cluster.groups()
        assert groups and fresh.groups() == groups
        for group in groups:  # the replayed commits are the recorded ones
            assert fresh.committed(group) == cluster.committed(group) != {}


def test_the_command_line_proxy_checks_its_upstream_before_it_is_ready() -> None:
    """No "ready" in front of nothing: an upstream that refuses, or accepts and closes without answering
    ApiVersions, is named with what happened, and the proxy exits; one answering upstream of two is enough."""
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[3])}
    silent = socket.socket()
    silent.bind(("127.0.0.1", 0))
    silent.listen()
    refused = socket.socket()
    refused.bind(("127.0.0.1", 0))  # bound, not listening: connections are refused
    closed_port, refused_port = silent.getsockname()[1], refused.getsockname()[1]

    def close_what_arrives() -> None:
        try:
            conn, _ = silent.accept()
            conn.recv(65536)  # the ApiVersions request read first: closing over unread bytes would be a reset
            conn.close()
        except OSError:
            pass
    threading.Thread(target=close_what_arrives, daemon=True).start()
    try:
        r = subprocess.run([sys.executable, "-m", "fakekafka", "proxy", "--upstream",
                            f"127.0.0.1:{refused_port},127.0.0.1:{closed_port}", "--listen", "127.0.0.1:0"],
                           capture_output=True, text=True, timeout=30, env=env)
    finally:
        silent.close()
        refused.close()
    assert r.returncode == 1 and "ready" not in r.stdout, r.stdout
    assert r.stderr == (f"fakekafka proxy: the upstream does not answer: 127.0.0.1:{refused_port}: connection "
                        f"refused; 127.0.0.1:{closed_port}: it closed the connection without answering ApiVersions "
                        f"(not a Kafka broker, or TLS expected?) (check --upstream)\n")

    with fakekafka.Cluster() as cluster:
        proc = subprocess.Popen([sys.executable, "-m", "fakekafka", "proxy", "--upstream",
                                 f"127.0.0.1:{refused_port},{cluster.bootstrap_servers}", "--listen", "127.0.0.1:0"],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
        try:
            assert proc.stdout is not None
            assert proc.stdout.readline().startswith("fakekafka proxy ready: ")
        finally:
            proc.send_signal(signal.SIGTERM)
            _, err = proc.communicate(timeout=30)
        assert f"upstream 127.0.0.1:{refused_port}: connection refused; going on with the others" in err
