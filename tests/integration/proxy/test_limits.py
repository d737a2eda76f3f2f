"""The proxy's own limits: the broker's connection quotas by Kafka's names (max.connections, max.connections.per.ip and
its overrides, connections.max.idle.ms) on its client connections, and a bound on the listeners an upstream's
answers make it bind (raw frames: what the proxy does to a connection is seen on the socket)."""

from __future__ import annotations

import logging
import socket
import struct
import subprocess
import sys
import threading
import time
import uuid

import pytest

import fakekafka
from fakekafka.proxy import Proxy
from fakekafka.wire import ApiKey, ErrorCode
from fakekafka.wire.protocol import decode_response, encode_request, encode_response
from tests.rawclient import RawClient


def _port(proxy: Proxy) -> int:
    return int(proxy.bootstrap_servers.rsplit(":", 1)[1])


def _closed(raw: RawClient, timeout: float = 10.0) -> bool:
    """Whether the proxy closed the connection (EOF or a reset) before `timeout`."""
    raw.sock.settimeout(timeout)
    try:
        return raw.sock.recv(1) == b""
    except (ConnectionError, OSError):
        return True


def _answers(raw: RawClient) -> bool:
    return raw.request(ApiKey.API_VERSIONS, 0, {}).error_code == 0


def _wait(what: str, check: object, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while not check():  # type: ignore[operator]
        assert time.monotonic() < deadline, what
        time.sleep(0.02)


def test_max_connections_per_ip_closes_the_next_connection_as_kafka_does() -> None:
    with fakekafka.Cluster() as cluster, Proxy(cluster, config={"max.connections.per.ip": "2"}) as proxy:
        first, second = RawClient(proxy.bootstrap_servers), RawClient(proxy.bootstrap_servers)
        assert _answers(first) and _answers(second)
        third = RawClient(proxy.bootstrap_servers)
        assert _closed(third)  # Kafka's TooManyConnectionsException: the new connection is closed
        third.close()
        first.close()
        _wait("the closed connection's slot freed", lambda: proxy.call(lambda: proxy.server.connection_count) == 1)
        fourth = RawClient(proxy.bootstrap_servers)
        assert _answers(fourth)
        for raw in (second, fourth):
            raw.close()
        upstream_clients = {r.client for r in cluster.requests()}
        assert len(upstream_clients) == 3  # the refused connection never reached the upstream


def test_max_connections_per_ip_overrides_exempt_an_address() -> None:
    config = {"max.connections.per.ip": "1", "max.connections.per.ip.overrides": "127.0.0.1:3"}
    with fakekafka.Cluster() as cluster, Proxy(cluster, config=config) as proxy:
        raws = [RawClient(proxy.bootstrap_servers) for _ in range(3)]
        assert all(_answers(r) for r in raws)
        extra = RawClient(proxy.bootstrap_servers)
        assert _closed(extra)
        for raw in (*raws, extra):
            raw.close()


def test_max_connections_holds_the_next_connection_unread_until_a_slot_frees() -> None:
    with fakekafka.Cluster() as cluster, Proxy(cluster, config={"max.connections": "2"}) as proxy:
        first, second = RawClient(proxy.bootstrap_servers), RawClient(proxy.bootstrap_servers)
        assert _answers(first) and _answers(second)
        held = RawClient(proxy.bootstrap_servers, timeout=30)
        corr = held.send(ApiKey.API_VERSIONS, 0, {})
        _wait("the third connection held", lambda: proxy.call(lambda: len(proxy.server.quotas.held[0])) == 1)
        assert proxy.call(lambda: proxy.server.upstream_connections) == 2  # held: no upstream connection yet
        first.close()
        got, answer = held.receive(ApiKey.API_VERSIONS, 0)  # admitted once the first one closed: its request answered
        assert (got, answer.error_code) == (corr, 0)
        for raw in (second, held):
            raw.close()


def test_idle_connections_are_closed_after_connections_max_idle_ms(caplog: pytest.LogCaptureFixture) -> None:
    with fakekafka.Cluster() as cluster, Proxy(cluster, config={"connections.max.idle.ms": "300"}) as proxy:
        raw = RawClient(proxy.bootstrap_servers)
        assert _answers(raw)
        with caplog.at_level(logging.INFO, logger="fakekafka.server"):
            assert _closed(raw, timeout=30)
        raw.close()
        _wait(
            "the pair and its upstream connection gone", lambda: proxy.call(lambda: proxy.server.connection_count) == 0
        )
        assert any("connections.max.idle.ms=300" in r.getMessage() for r in caplog.records)


def test_bad_limits_are_refused_in_words() -> None:
    with pytest.raises(ValueError, match="takes only the broker configs"):
        Proxy("127.0.0.1:9", config={"log.retention.ms": "1"})
    with pytest.raises(ValueError, match="max.connections: .*INT"):
        Proxy("127.0.0.1:9", config={"max.connections": "many"})
    with pytest.raises(ValueError, match="max_brokers"):
        Proxy("127.0.0.1:9", max_brokers=0)


def test_the_command_line_proxy_takes_the_limits_by_kafkas_names() -> None:
    with fakekafka.Cluster() as cluster:
        proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "fakekafka",
                "proxy",
                "--upstream",
                cluster.bootstrap_servers,
                "--listen",
                "127.0.0.1:0",
                "--max-connections-per-ip",
                "1",
                "--config",
                "connections.max.idle.ms=60000",
            ],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        try:
            line = proc.stdout.readline()  # type: ignore[union-attr]
            assert "ready" in line, line + proc.stderr.read()  # type: ignore[union-attr]
            bootstrap = line.split("bootstrap.servers=")[1].split()[0]
            first = RawClient(bootstrap)
            assert _answers(first)
            second = RawClient(bootstrap)
            assert _closed(second)
            for raw in (first, second):
                raw.close()
        finally:
            proc.terminate()
            proc.wait(30)
            proc.stdout.close()  # type: ignore[union-attr]
            proc.stderr.close()  # type: ignore[union-attr]
        bad = subprocess.run(
            [
                sys.executable,
                "-m",
                "fakekafka",
                "proxy",
                "--upstream",
                cluster.bootstrap_servers,
                "--max-connections",
                "-5",
            ],
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert bad.returncode == 2 and "max.connections" in bad.stderr and "Traceback" not in bad.stderr


class _ManyBrokers:
    """An upstream whose Metadata answers name `count` brokers (all at its own address)."""

    def __init__(self, count: int) -> None:
        self.count = count
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.port = self.sock.getsockname()[1]
        self.conns: list[socket.socket] = []
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            self.conns.append(conn)
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    def _serve(self, conn: socket.socket) -> None:
        try:
            while head := conn.recv(4, socket.MSG_WAITALL):
                size = struct.unpack(">i", head)[0]
                frame = conn.recv(size, socket.MSG_WAITALL)
                api_key, version, corr = struct.unpack(">hhi", frame[:8])
                assert api_key == 3
                body = {
                    "throttle_time_ms": 0,
                    "cluster_id": "many",
                    "controller_id": 0,
                    "brokers": [
                        {"node_id": n, "host": "127.0.0.1", "port": self.port, "rack": None} for n in range(self.count)
                    ],
                    "topics": [
                        {
                            "error_code": 0,
                            "name": "t",
                            "topic_id": uuid.UUID(int=1),
                            "is_internal": False,
                            "partitions": [],
                            "topic_authorized_operations": -2147483648,
                        }
                    ],
                    "cluster_authorized_operations": -2147483648,
                }
                conn.sendall(encode_response(api_key, version, corr, body))
        except OSError:
            pass

    def close(self) -> None:
        self.sock.close()
        for conn in self.conns:
            conn.close()


def _metadata(port: int) -> object:
    with socket.create_connection(("127.0.0.1", port), timeout=30) as s:
        s.sendall(
            encode_request(
                3,
                12,
                7,
                {
                    "topics": [{"name": "t", "topic_id": uuid.UUID(int=0)}],
                    "allow_auto_topic_creation": False,
                    "include_topic_authorized_operations": False,
                },
            )
        )
        size = struct.unpack(">i", s.recv(4, socket.MSG_WAITALL))[0]
        return decode_response(3, 12, s.recv(size, socket.MSG_WAITALL))[1]


def test_an_upstream_naming_too_many_brokers_gets_listeners_up_to_the_bound(caplog: pytest.LogCaptureFixture) -> None:
    upstream = _ManyBrokers(60)
    try:
        with (
            caplog.at_level(logging.ERROR, logger="fakekafka.proxy"),
            Proxy(f"127.0.0.1:{upstream.port}", max_brokers=20) as proxy,
        ):
            for _ in range(2):
                answer = _metadata(_port(proxy))
                assert [t["error_code"] for t in answer["topics"]] == [ErrorCode.BROKER_NOT_AVAILABLE]
                assert len(proxy.server.listeners) == 21  # the bootstrap listener and 20 brokers', no more
            said = [r.getMessage() for r in caplog.records if "more than 20 brokers" in r.getMessage()]
            assert len(said) == 1 and "--max-brokers" in said[0]
            assert [e.kind for e in proxy.events()].count("too_many_brokers") == 1
        with Proxy(f"127.0.0.1:{upstream.port}", max_brokers=60) as proxy:  # the bound raised: all served
            answer = _metadata(_port(proxy))
            assert answer["topics"][0]["error_code"] == 0 and len(answer["brokers"]) == 60
            assert {b["port"] for b in answer["brokers"]} == {p for _, p in proxy.brokers().values()}
    finally:
        upstream.close()
