"""Listeners by Kafka's names, TLS (with mTLS) and SASL PLAIN/SCRAM, on the wire and with real clients.

The error codes and messages are Kafka 4.4's SaslServerAuthenticator's: an unsupported mechanism gets
UNSUPPORTED_SASL_MECHANISM with the enabled list, a wrong password SASL_AUTHENTICATION_FAILED, and the
connection is closed after either; a request other than ApiVersions/SaslHandshake before the handshake closes
the connection unanswered.
"""

from __future__ import annotations

import asyncio
import errno
import json
import logging
import signal
import socket
import ssl
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import fakekafka
from fakekafka.model.cluster import ClusterState
from fakekafka.model.config import OAUTHBEARER_UNSECURED_VALIDATOR, BrokerConfig, InvalidConfig
from fakekafka.net.security import parse_listeners, protocol_map
from fakekafka.net.server import Server
from fakekafka.wire import ApiKey, ErrorCode
from tests.rawclient import RawClient

SASL_HANDSHAKE, SASL_AUTHENTICATE, METADATA, API_VERSIONS = 17, 36, 3, 18
USERS = {"alice": "alice-secret", "bob": "bob-secret"}


# --- configuration -------------------------------------------------------------------------------------------


def test_listeners_parse_by_kafka_rules() -> None:
    specs = parse_listeners("PLAINTEXT://127.0.0.1:0,INTERNAL://:9093", "PLAINTEXT:PLAINTEXT,INTERNAL:SASL_SSL")
    assert [(s.name, s.protocol, s.host, s.port) for s in specs] == [
        ("PLAINTEXT", "PLAINTEXT", "127.0.0.1", 0),
        ("INTERNAL", "SASL_SSL", "", 9093),
    ]
    assert specs[1].tls and specs[1].sasl and not specs[0].tls
    with pytest.raises(ValueError, match="No security protocol defined for listener EXTERNAL"):
        parse_listeners("EXTERNAL://127.0.0.1:0")
    with pytest.raises(ValueError, match="Each listener must have a different name"):
        parse_listeners("SSL://127.0.0.1:0,SSL://127.0.0.1:1")
    with pytest.raises(ValueError, match="Unable to parse"):
        parse_listeners("PLAINTEXT:127.0.0.1")
    with pytest.raises(ValueError, match="SecurityProtocol.TLS"):
        protocol_map("A:TLS")


def test_several_listeners_each_advertised_to_its_own_clients() -> None:
    """Metadata and FindCoordinator name the listener's own ports, per broker, as Kafka answers per listener."""
    with fakekafka.Cluster(
        brokers=2, listeners="PLAINTEXT://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0", users=USERS
    ) as c:
        plain = c.bootstrap_servers_for("PLAINTEXT").split(",")
        sasl = c.bootstrap_servers_for("SASL_PLAINTEXT").split(",")
        assert c.bootstrap_servers.split(",") == plain and not set(plain) & set(sasl)
        raw = RawClient(plain[1])
        md = raw.request(
            METADATA,
            12,
            {"topics": None, "allow_auto_topic_creation": False, "include_topic_authorized_operations": False},
        )
        assert sorted(f"{b.host}:{b.port}" for b in md.brokers) == sorted(plain)
        raw.close()
        raw = _authenticated(sasl[0], "PLAIN", b"\0alice\0alice-secret")
        md = raw.request(
            METADATA,
            12,
            {"topics": None, "allow_auto_topic_creation": False, "include_topic_authorized_operations": False},
        )
        assert sorted(f"{b.host}:{b.port}" for b in md.brokers) == sorted(sasl)
        fc = raw.request(ApiKey.FIND_COORDINATOR, 4, {"key_type": 0, "coordinator_keys": ["g"]})
        assert f"{fc.coordinators[0].host}:{fc.coordinators[0].port}" in sasl
        raw.close()


def test_advertised_listeners_and_restart_keep_ports() -> None:
    with fakekafka.Cluster(
        listeners="PLAINTEXT://127.0.0.1:0,OTHER://127.0.0.1:0",
        listener_security_protocol_map="PLAINTEXT:PLAINTEXT,OTHER:PLAINTEXT",
        advertised_listeners="PLAINTEXT://localhost:0,OTHER://other.example:19092",
    ) as c:
        assert c.bootstrap_servers_for("OTHER") == "other.example:19092"
        host, port = c.bootstrap_servers.split(":")
        assert host == "localhost"
        c.kill_broker(1)
        c.restart_broker(1)
        raw = RawClient(f"127.0.0.1:{port}")
        assert (
            raw.request(API_VERSIONS, 3, {"client_software_name": "t", "client_software_version": "1"}).error_code == 0
        )
        raw.close()


def _taken(port: int) -> bool:
    """Whether another socket can have the port (as an outgoing connection's local port can, when the kernel
    gives it out): no when something holds it bound."""
    with socket.socket() as other:
        try:
            other.bind(("127.0.0.1", port))
        except OSError as e:
            assert e.errno == errno.EADDRINUSE, e
            return True
    return False


@pytest.mark.parametrize("listeners", [None, "PLAINTEXT://127.0.0.1:0,OTHER://127.0.0.1:0"])
def test_a_down_brokers_ports_are_kept_for_its_restart(listeners: str | None) -> None:
    """A killed or stopped broker's ports refuse connections but stay bound, so no other process's connection
    is given one of them meanwhile and the restart, on the same ports, cannot find them taken."""
    extra = {} if listeners is None else {"listeners": listeners,
                                          "listener_security_protocol_map": "PLAINTEXT:PLAINTEXT,OTHER:PLAINTEXT"}
    with fakekafka.Cluster(brokers=2, **extra) as c:
        names = ["PLAINTEXT"] if listeners is None else ["PLAINTEXT", "OTHER"]
        ports = [int(c.bootstrap_servers_for(n).split(",")[1].rsplit(":", 1)[1]) for n in names]
        for down in (c.kill_broker, c.stop_broker):
            down(2)
            for port in ports:
                with pytest.raises(ConnectionRefusedError):
                    socket.create_connection(("127.0.0.1", port), timeout=2).close()
                assert _taken(port)
            c.restart_broker(2)
            for port in ports:
                raw = RawClient(f"127.0.0.1:{port}")
                versions = raw.request(API_VERSIONS, 3, {"client_software_name": "t", "client_software_version": "1"})
                assert versions.error_code == 0
                raw.close()
    assert not any(_taken(port) for port in ports)  # and the cluster's stop lets them go


def test_tls_listener_needs_a_keystore() -> None:
    """A Cluster makes a throwaway CA for an SSL listener; the server alone refuses to start without one."""
    with pytest.raises(ValueError, match="ssl.keystore.location"):
        Server(ClusterState(BrokerConfig(listeners="SSL://127.0.0.1:0")))


# --- SASL on the wire ------------------------------------------------------------------------------------------


@pytest.fixture
def sasl_cluster() -> Iterator[fakekafka.Cluster]:
    with fakekafka.Cluster(
        listeners="PLAINTEXT://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0",
        users=USERS,
        sasl_enabled_mechanisms="PLAIN,SCRAM-SHA-256",
    ) as c:
        yield c


def _authenticated(address: str, mechanism: str, token: bytes) -> RawClient:
    raw = RawClient(address)
    hs = raw.request(SASL_HANDSHAKE, 1, {"mechanism": mechanism})
    assert hs.error_code == 0
    auth = raw.request(SASL_AUTHENTICATE, 2, {"auth_bytes": token})
    assert auth.error_code == 0, auth
    return raw


def test_request_before_the_handshake_closes_the_connection(sasl_cluster: fakekafka.Cluster) -> None:
    raw = RawClient(sasl_cluster.bootstrap_servers_for("SASL_PLAINTEXT"))
    assert (
        raw.request(API_VERSIONS, 3, {"client_software_name": "t", "client_software_version": "1"}).error_code == 0
    )  # ApiVersions is allowed first, as in Kafka
    raw.send(
        METADATA, 12, {"topics": None, "allow_auto_topic_creation": False, "include_topic_authorized_operations": False}
    )
    assert raw.is_closed()


def test_request_after_the_handshake_gets_illegal_sasl_state_then_closes(sasl_cluster: fakekafka.Cluster) -> None:
    raw = RawClient(sasl_cluster.bootstrap_servers_for("SASL_PLAINTEXT"))
    assert raw.request(SASL_HANDSHAKE, 1, {"mechanism": "PLAIN"}).error_code == 0
    fc = raw.request(ApiKey.FIND_COORDINATOR, 3, {"key": "g", "key_type": 0})
    assert fc.error_code == ErrorCode.ILLEGAL_SASL_STATE
    assert raw.is_closed()


def test_sasl_authenticate_before_the_handshake_closes_the_connection(sasl_cluster: fakekafka.Cluster) -> None:
    raw = RawClient(sasl_cluster.bootstrap_servers_for("SASL_PLAINTEXT"))
    raw.send(SASL_AUTHENTICATE, 2, {"auth_bytes": b"\0alice\0alice-secret"})
    assert raw.is_closed()


def test_api_versions_after_the_handshake_is_refused(sasl_cluster: fakekafka.Cluster) -> None:
    raw = RawClient(sasl_cluster.bootstrap_servers_for("SASL_PLAINTEXT"))
    assert raw.request(SASL_HANDSHAKE, 1, {"mechanism": "PLAIN"}).error_code == 0
    answer = raw.request(API_VERSIONS, 3, {"client_software_name": "t", "client_software_version": "1"})
    assert answer.error_code == ErrorCode.ILLEGAL_SASL_STATE
    assert raw.is_closed()


def test_unsupported_mechanism_lists_the_enabled_ones(sasl_cluster: fakekafka.Cluster) -> None:
    raw = RawClient(sasl_cluster.bootstrap_servers_for("SASL_PLAINTEXT"))
    hs = raw.request(SASL_HANDSHAKE, 1, {"mechanism": "SCRAM-SHA-512"})
    assert hs.error_code == ErrorCode.UNSUPPORTED_SASL_MECHANISM
    assert list(hs.mechanisms) == ["PLAIN", "SCRAM-SHA-256"]
    assert raw.is_closed()


PLAIN_REFUSED = "Authentication failed: Invalid username or password"
AUTHZID = "Authentication failed: Client requested an authorization id that is different from username"


@pytest.mark.parametrize(
    ("token", "message"),
    [
        (b"\0alice\0wrong", PLAIN_REFUSED),
        (b"\0mallory\0alice-secret", PLAIN_REFUSED),
        (b"bob\0alice\0alice-secret", AUTHZID),
        (
            b"alice-secret",
            "Authentication failed during authentication due to invalid credentials with SASL mechanism PLAIN",
        ),
    ],
)
def test_plain_refused_with_kafkas_message(sasl_cluster: fakekafka.Cluster, token: bytes, message: str) -> None:
    """The messages Kafka 4.4.0 sends (PlainSaslServer's own; its generic one for a malformed token)."""
    raw = RawClient(sasl_cluster.bootstrap_servers_for("SASL_PLAINTEXT"))
    assert raw.request(SASL_HANDSHAKE, 1, {"mechanism": "PLAIN"}).error_code == 0
    auth = raw.request(SASL_AUTHENTICATE, 1, {"auth_bytes": token})
    assert (auth.error_code, auth.error_message) == (ErrorCode.SASL_AUTHENTICATION_FAILED, message)
    assert raw.is_closed()


def test_authenticated_connection_is_served_and_sasl_again_is_illegal(sasl_cluster: fakekafka.Cluster) -> None:
    raw = _authenticated(sasl_cluster.bootstrap_servers_for("SASL_PLAINTEXT"), "PLAIN", b"alice\0alice\0alice-secret")
    again = raw.request(SASL_HANDSHAKE, 1, {"mechanism": "PLAIN"})
    assert again.error_code == ErrorCode.ILLEGAL_SASL_STATE and list(again.mechanisms) == []
    md = raw.request(
        METADATA, 12, {"topics": None, "allow_auto_topic_creation": False, "include_topic_authorized_operations": False}
    )
    assert md.brokers
    raw.close()


def test_sasl_requests_on_a_plaintext_listener_are_illegal(sasl_cluster: fakekafka.Cluster) -> None:
    raw = RawClient(sasl_cluster.bootstrap_servers_for("PLAINTEXT"))
    assert raw.request(SASL_HANDSHAKE, 1, {"mechanism": "PLAIN"}).error_code == ErrorCode.ILLEGAL_SASL_STATE
    auth = raw.request(SASL_AUTHENTICATE, 2, {"auth_bytes": b"\0alice\0alice-secret"})
    assert (auth.error_code, auth.error_message) == (
        ErrorCode.ILLEGAL_SASL_STATE,
        "SaslAuthenticate request received after successful authentication",
    )
    assert (
        raw.request(API_VERSIONS, 3, {"client_software_name": "t", "client_software_version": "1"}).error_code == 0
    )  # still open: Kafka answers these without closing
    raw.close()


# --- TLS ----------------------------------------------------------------------------------------------------


def _tls_connect(address: str, ctx: ssl.SSLContext) -> ssl.SSLSocket:
    host, port = address.rsplit(":", 1)
    sock = ctx.wrap_socket(socket.create_connection((host, int(port)), timeout=10), server_hostname=host)
    sock.sendall(b"")
    return sock


def test_mtls_requires_a_client_certificate_from_the_ca() -> None:
    with fakekafka.Cluster(listeners="SSL://127.0.0.1:0", ssl_client_auth="required") as c:
        assert c.pki is not None
        address = c.bootstrap_servers_for("SSL")
        ctx = ssl.create_default_context(cafile=str(c.pki.ca_file))
        ctx.load_cert_chain(str(c.pki.client_cert), str(c.pki.client_key))
        with _tls_connect(address, ctx) as sock:
            sock.sendall(_api_versions_frame())
            assert len(sock.recv(4)) == 4
        anonymous = ssl.create_default_context(cafile=str(c.pki.ca_file))
        with pytest.raises((ssl.SSLError, ConnectionError)):
            with _tls_connect(address, anonymous) as sock:  # TLS 1.3: refused at the first read
                sock.sendall(_api_versions_frame())
                if not sock.recv(4):
                    raise ConnectionError("closed")


def _api_versions_frame() -> bytes:
    from fakekafka import wire

    return wire.encode_request(
        API_VERSIONS, 3, 1, {"client_software_name": "t", "client_software_version": "1"}, client_id="t"
    )


# --- clients ------------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def secure() -> Iterator[fakekafka.Cluster]:
    """SASL_SSL with every mechanism, OAUTHBEARER's unsecured tokens taken as its operator asked."""
    with fakekafka.Cluster(
        listeners="PLAINTEXT://127.0.0.1:0,SASL_SSL://127.0.0.1:0,SSL://127.0.0.1:0",
        ssl_client_auth="requested",
        users=USERS,
        sasl_enabled_mechanisms="PLAIN,SCRAM-SHA-256,SCRAM-SHA-512,OAUTHBEARER",
        config={
            "listener.name.sasl_ssl.oauthbearer.sasl.server.callback.handler.class": OAUTHBEARER_UNSECURED_VALIDATOR
        },
    ) as c:
        yield c


@pytest.mark.parametrize("mechanism", ["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"])
def test_kafka_python_over_sasl_ssl(secure: fakekafka.Cluster, mechanism: str) -> None:
    from kafka import KafkaConsumer, KafkaProducer

    assert secure.pki is not None
    common = {
        "bootstrap_servers": secure.bootstrap_servers_for("SASL_SSL"),
        "security_protocol": "SASL_SSL",
        "sasl_mechanism": mechanism,
        "sasl_plain_username": "alice",
        "sasl_plain_password": "alice-secret",
        "ssl_cafile": str(secure.pki.ca_file),
    }
    topic = f"kp-{mechanism}"
    producer = KafkaProducer(**common)
    producer.send(topic, b"over sasl_ssl").get(10)
    producer.close()
    consumer = KafkaConsumer(topic, auto_offset_reset="earliest", consumer_timeout_ms=10000, **common)
    assert next(consumer).value == b"over sasl_ssl"  # the record, not the idle timeout ending the iteration
    consumer.close()


def test_kafka_python_wrong_password(secure: fakekafka.Cluster, caplog: pytest.LogCaptureFixture) -> None:
    """kafka-python logs Kafka's message and gives up bootstrapping (it retries, each attempt refused)."""
    from kafka import KafkaProducer
    from kafka.errors import KafkaTimeoutError

    assert secure.pki is not None
    with pytest.raises(KafkaTimeoutError, match="Unable to bootstrap"):
        KafkaProducer(
            bootstrap_servers=secure.bootstrap_servers_for("SASL_SSL"),
            security_protocol="SASL_SSL",
            sasl_mechanism="SCRAM-SHA-256",
            sasl_plain_username="alice",
            sasl_plain_password="nope",
            ssl_cafile=str(secure.pki.ca_file),
            bootstrap_timeout_ms=3000,
        )
    assert "invalid credentials with SASL mechanism SCRAM-SHA-256" in caplog.text


def test_kafka_python_mtls(secure: fakekafka.Cluster) -> None:
    from kafka import KafkaProducer

    assert secure.pki is not None
    producer = KafkaProducer(
        bootstrap_servers=secure.bootstrap_servers_for("SSL"),
        security_protocol="SSL",
        ssl_cafile=str(secure.pki.ca_file),
        ssl_certfile=str(secure.pki.client_cert),
        ssl_keyfile=str(secure.pki.client_key),
    )
    try:
        assert producer.send("kp-mtls", b"with a client certificate").get(10).offset == 0
    finally:
        producer.close()
    assert [r.value for r in secure.records("kp-mtls")] == [b"with a client certificate"]


def _confluent(secure: fakekafka.Cluster, **extra: str) -> dict[str, str]:
    assert secure.pki is not None
    return {"ssl.ca.location": str(secure.pki.ca_file), **extra}


@pytest.mark.parametrize("mechanism", ["PLAIN", "SCRAM-SHA-512"])
def test_confluent_kafka_over_sasl_ssl(secure: fakekafka.Cluster, mechanism: str) -> None:
    from confluent_kafka import Consumer, Producer

    conf = _confluent(
        secure,
        **{
            "bootstrap.servers": secure.bootstrap_servers_for("SASL_SSL"),
            "security.protocol": "SASL_SSL",
            "sasl.mechanism": mechanism,
            "sasl.username": "bob",
            "sasl.password": "bob-secret",
        },
    )
    topic = f"ck-{mechanism}"
    producer = Producer(conf)
    producer.produce(topic, b"librdkafka")
    assert producer.flush(10) == 0
    consumer = Consumer({**conf, "group.id": f"g-{mechanism}", "auto.offset.reset": "earliest"})
    consumer.subscribe([topic])
    msg = None
    for _ in range(50):
        msg = consumer.poll(0.2)
        if msg is not None and not msg.error():
            break
    consumer.close()
    assert msg is not None and msg.value() == b"librdkafka"


def test_confluent_kafka_wrong_password_reports_authentication(secure: fakekafka.Cluster) -> None:
    from confluent_kafka import KafkaError, Producer

    errors: list[KafkaError] = []
    conf = _confluent(
        secure,
        **{
            "bootstrap.servers": secure.bootstrap_servers_for("SASL_SSL"),
            "security.protocol": "SASL_SSL",
            "sasl.mechanism": "SCRAM-SHA-256",
            "sasl.username": "bob",
            "sasl.password": "wrong",
        },
    )
    producer = Producer({**conf, "error_cb": errors.append})
    for _ in range(50):
        producer.poll(0.1)
        if errors:
            break
    assert errors and errors[0].code() == KafkaError._AUTHENTICATION
    assert "invalid credentials with SASL mechanism SCRAM-SHA-256" in errors[0].str()


def test_confluent_kafka_mtls(secure: fakekafka.Cluster) -> None:
    from confluent_kafka.admin import AdminClient

    assert secure.pki is not None
    admin = AdminClient(
        _confluent(
            secure,
            **{
                "bootstrap.servers": secure.bootstrap_servers_for("SSL"),
                "security.protocol": "SSL",
                "ssl.certificate.location": str(secure.pki.client_cert),
                "ssl.key.location": str(secure.pki.client_key),
            },
        )
    )
    md = admin.list_topics(timeout=10)
    assert {f"{b.host}:{b.port}" for b in md.brokers.values()} == set(secure.bootstrap_servers_for("SSL").split(","))


@pytest.mark.parametrize("mechanism", ["PLAIN", "SCRAM-SHA-256"])
async def test_aiokafka_over_sasl_ssl_and_a_wrong_password(secure: fakekafka.Cluster, mechanism: str) -> None:
    from aiokafka import AIOKafkaConsumer, AIOKafkaProducer
    from aiokafka.errors import KafkaConnectionError, KafkaError
    from aiokafka.helpers import create_ssl_context

    assert secure.pki is not None
    common = {
        "bootstrap_servers": secure.bootstrap_servers_for("SASL_SSL"),
        "security_protocol": "SASL_SSL",
        "sasl_mechanism": mechanism,
        "sasl_plain_username": "alice",
        "sasl_plain_password": "alice-secret",
        "ssl_context": create_ssl_context(cafile=str(secure.pki.ca_file)),
    }
    topic = f"aio-{mechanism}"
    producer = AIOKafkaProducer(**common)
    await producer.start()
    try:
        await producer.send_and_wait(topic, b"aiokafka over sasl_ssl")
    finally:
        await producer.stop()
    consumer = AIOKafkaConsumer(topic, auto_offset_reset="earliest", **common)
    await consumer.start()
    try:
        msg = await asyncio.wait_for(consumer.getone(), 10)
    finally:
        await consumer.stop()
    assert msg.value == b"aiokafka over sasl_ssl"
    wrong = AIOKafkaProducer(**{**common, "sasl_plain_password": "nope"})
    with pytest.raises((KafkaConnectionError, KafkaError)):  # aiokafka: the bootstrap connection fails
        await wrong.start()
    await wrong.stop()


async def test_aiokafka_mtls(secure: fakekafka.Cluster) -> None:
    from aiokafka.admin import AIOKafkaAdminClient
    from aiokafka.helpers import create_ssl_context

    assert secure.pki is not None
    ctx = create_ssl_context(
        cafile=str(secure.pki.ca_file), certfile=str(secure.pki.client_cert), keyfile=str(secure.pki.client_key)
    )
    admin = AIOKafkaAdminClient(
        bootstrap_servers=secure.bootstrap_servers_for("SSL"), security_protocol="SSL", ssl_context=ctx
    )
    await admin.start()
    try:
        cluster = await admin.describe_cluster()
    finally:
        await admin.close()
    assert {f"{b['host']}:{b['port']}" for b in cluster["brokers"]} == set(
        secure.bootstrap_servers_for("SSL").split(",")
    )


def _kcat_tls(secure: fakekafka.Cluster) -> list[str]:
    assert secure.pki is not None
    return ["-X", f"ssl.ca.location={secure.pki.ca_file}"]


@pytest.mark.parametrize("mechanism", ["PLAIN", "SCRAM-SHA-512"])
def test_kcat_over_sasl_ssl_and_a_wrong_password(secure: fakekafka.Cluster, kcat: str, mechanism: str) -> None:
    sasl = [
        "-b",
        secure.bootstrap_servers_for("SASL_SSL"),
        "-X",
        "security.protocol=SASL_SSL",
        "-X",
        f"sasl.mechanism={mechanism}",
        "-X",
        "sasl.username=bob",
        *_kcat_tls(secure),
    ]
    topic = f"kcat-{mechanism}"
    produced = subprocess.run(
        [kcat, *sasl, "-X", "sasl.password=bob-secret", "-P", "-t", topic],
        input=b"from kcat\n",
        capture_output=True,
        timeout=60,
    )
    assert produced.returncode == 0, produced.stderr
    consumed = subprocess.run(
        [kcat, *sasl, "-X", "sasl.password=bob-secret", "-C", "-t", topic, "-o", "beginning", "-e", "-q"],
        capture_output=True,
        timeout=60,
    )
    assert consumed.returncode == 0 and consumed.stdout == b"from kcat\n", consumed.stderr
    refused = subprocess.run(
        [kcat, *sasl, "-X", "sasl.password=wrong", "-L", "-m", "2"], capture_output=True, timeout=60
    )
    assert refused.returncode != 0
    assert b"Authentication failed" in refused.stderr or b"invalid credentials" in refused.stderr, refused.stderr


def test_kcat_mtls(secure: fakekafka.Cluster, kcat: str) -> None:
    assert secure.pki is not None
    listed = subprocess.run(
        [
            kcat,
            "-b",
            secure.bootstrap_servers_for("SSL"),
            "-X",
            "security.protocol=SSL",
            *_kcat_tls(secure),
            "-X",
            f"ssl.certificate.location={secure.pki.client_cert}",
            "-X",
            f"ssl.key.location={secure.pki.client_key}",
            "-L",
            "-J",
        ],
        capture_output=True,
        timeout=60,
    )
    assert listed.returncode == 0, listed.stderr
    brokers = {f"{b['name']}" for b in json.loads(listed.stdout)["brokers"]}
    assert brokers == set(secure.bootstrap_servers_for("SSL").split(","))


def test_serve_with_a_sasl_ssl_listener(tmp_path: Path) -> None:
    """`fakekafka serve --listeners ... --user ...` prints each listener's bootstrap and the CA to trust."""
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "fakekafka",
            "serve",
            "--port",
            "0",
            "--control-port",
            "0",
            "--listeners",
            "PLAINTEXT://127.0.0.1:0,SASL_SSL://127.0.0.1:0",
            "--user",
            "carol=carol-secret",
            "--ssl-dir",
            str(tmp_path),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    assert proc.stdout is not None
    try:
        lines = [proc.stdout.readline() for _ in range(4)]
        assert lines[0].startswith("fakekafka listener PLAINTEXT (PLAINTEXT): bootstrap.servers=127.0.0.1:")
        assert lines[1].startswith("fakekafka listener SASL_SSL (SASL_SSL): bootstrap.servers=127.0.0.1:")
        assert lines[2].startswith(f"fakekafka ssl: ca={tmp_path / 'ca.pem'} ")
        assert lines[3].startswith("fakekafka ready: ")
        from kafka import KafkaProducer

        producer = KafkaProducer(
            bootstrap_servers=lines[1].split("bootstrap.servers=")[1].strip(),
            security_protocol="SASL_SSL",
            sasl_mechanism="SCRAM-SHA-256",
            sasl_plain_username="carol",
            sasl_plain_password="carol-secret",
            ssl_cafile=str(tmp_path / "ca.pem"),
        )
        assert producer.send("cli-sasl", b"x").get(timeout=10).offset == 0
        producer.close()
    finally:
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(10) == 0


def test_java_client_over_sasl_ssl_and_mtls() -> None:
    """Kafka's own client: PEM truststore/keystore (ssl.*.type=PEM), SASL PLAIN and SCRAM, wrong passwords; an
    unsigned OAUTHBEARER token refused by a broker left at its defaults, taken by one whose operator opted in."""
    from tests.javautil import compile_java, run_java

    classes = compile_java(Path(__file__).parent / "clients" / "java" / "SecureClients.java")
    with (
        fakekafka.Cluster(
            listeners="PLAINTEXT://127.0.0.1:0,SASL_SSL://127.0.0.1:0,SSL://127.0.0.1:0",
            ssl_client_auth="required",
            users=USERS,
        ) as c,
        fakekafka.Cluster(
            listeners="PLAINTEXT://127.0.0.1:0,SASL_SSL://127.0.0.1:0",
            sasl_enabled_mechanisms="OAUTHBEARER",
            config={
                "listener.name.sasl_ssl.oauthbearer.sasl.server.callback.handler.class": (
                    OAUTHBEARER_UNSECURED_VALIDATOR
                ),
                "ssl.keystore.location": str(c.config.ssl_keystore_location),
            },
        ) as opted_in,
    ):
        assert c.pki is not None
        out = run_java(
            classes,
            "SecureClients",
            c.bootstrap_servers_for("SASL_SSL"),
            c.bootstrap_servers_for("SSL"),
            str(c.pki.ca_file),
            str(c.pki.client_keystore),
            opted_in.bootstrap_servers_for("SASL_SSL"),
            timeout=180,
        )
    results = {
        name: (status, detail)
        for name, status, detail in (line.split("\t", 2) for line in out.stdout.splitlines() if line.count("\t") >= 2)
    }
    for case in ("produce-PLAIN", "produce-SCRAM-SHA-256", "produce-SCRAM-SHA-512", "produce-mTLS"):
        assert results[case][0] == "ok", (case, results[case])
    refused = "error", "org.apache.kafka.common.errors.SaslAuthenticationException: "
    assert results["wrong-password-PLAIN"] == (refused[0], refused[1] + PLAIN_REFUSED)
    assert results["wrong-password-SCRAM-SHA-512"] == (
        refused[0],
        refused[1] + "Authentication failed during "
        "authentication due to invalid credentials with SASL mechanism "
        "SCRAM-SHA-512",
    )
    assert results["unsigned-OAUTHBEARER-refused"] == (
        "error",
        "org.apache.kafka.common.errors.UnsupportedSaslMechanismException: Client SASL mechanism "
        "'OAUTHBEARER' not enabled in the server, enabled mechanisms are "
        "[PLAIN, SCRAM-SHA-512, SCRAM-SHA-256]",
    )
    assert results["unsigned-OAUTHBEARER-opted-in"][0] == "ok", results["unsigned-OAUTHBEARER-opted-in"]


# --- the same exchanges against Apache Kafka 4.4.0 --------------------------------------------------------------


def _exchanges(address: str) -> list[tuple[object, ...]]:
    """What a SASL_PLAINTEXT listener answers to each way in, wrong ones included, and whether it then closes."""

    def answer(body: Any, *fields: str) -> tuple[object, ...]:
        return tuple(list(getattr(body, f)) if f == "mechanisms" else getattr(body, f) for f in fields)

    out: list[tuple[object, ...]] = []
    raw = RawClient(address)
    out.append(answer(raw.request(SASL_HANDSHAKE, 1, {"mechanism": "GSSAPI"}), "error_code", "mechanisms"))
    out.append(("closed", raw.is_closed()))
    for token in (b"\0alice\0wrong", b"bob\0alice\0alice-secret", b"\0alice\0alice-secret"):
        raw = RawClient(address)
        out.append(answer(raw.request(SASL_HANDSHAKE, 1, {"mechanism": "PLAIN"}), "error_code", "mechanisms"))
        out.append(
            answer(
                raw.request(SASL_AUTHENTICATE, 2, {"auth_bytes": token}),
                "error_code",
                "error_message",
                "session_lifetime_ms",
            )
        )
    again = raw.request(SASL_HANDSHAKE, 1, {"mechanism": "PLAIN"})  # the authenticated connection
    out.append(answer(again, "error_code", "mechanisms"))
    raw.close()
    raw = RawClient(address)
    raw.send(
        METADATA, 12, {"topics": None, "allow_auto_topic_creation": False, "include_topic_authorized_operations": False}
    )
    out.append(("metadata first: closed", raw.is_closed()))
    raw = RawClient(address)
    raw.request(SASL_HANDSHAKE, 1, {"mechanism": "PLAIN"})
    out.append(answer(raw.request(ApiKey.FIND_COORDINATOR, 3, {"key": "g", "key_type": 0}), "error_code", "node_id"))
    out.append(("closed", raw.is_closed()))
    return out


def test_sasl_exchanges_answered_as_apache_kafka_answers(secure_apache_kafka: Any) -> None:
    """Against the session's Kafka with a SASL_PLAINTEXT listener (tests/conftest.py), and fakekafka set up alike."""
    from tests.conftest import SECURE_MECHANISMS, SECURE_USERS, UNSECURED_OAUTHBEARER

    with fakekafka.Cluster(
        listeners="PLAINTEXT://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0",
        users=SECURE_USERS,
        sasl_enabled_mechanisms=SECURE_MECHANISMS,
        config=UNSECURED_OAUTHBEARER,
    ) as c:
        fake = _exchanges(c.bootstrap_servers_for("SASL_PLAINTEXT"))
    real = _exchanges(secure_apache_kafka.bootstrap_servers_for("SASL_PLAINTEXT"))
    assert fake == real


@pytest.mark.fakekafka(listeners="PLAINTEXT://127.0.0.1:0,SASL_SSL://127.0.0.1:0", users={"dave": "dave-secret"})
def test_marker_settings_give_the_fixture_a_sasl_ssl_listener(kafka: fakekafka.Cluster) -> None:
    """The pytest marker takes the same names; the handle has the listener's bootstrap and the CA to trust."""
    from kafka import KafkaProducer

    assert kafka.pki is not None and kafka.pki.ca_file.exists()
    producer = KafkaProducer(
        bootstrap_servers=kafka.bootstrap_servers_for("SASL_SSL"),
        security_protocol="SASL_SSL",
        sasl_mechanism="SCRAM-SHA-256",
        sasl_plain_username="dave",
        sasl_plain_password="dave-secret",
        ssl_cafile=str(kafka.pki.ca_file),
    )
    assert producer.send("marker-sasl", b"x").get(timeout=10).offset == 0
    producer.close()
    assert [r.value for r in kafka.records("marker-sasl")] == [b"x"]


# --- OAUTHBEARER (unsecured JWS, Kafka's default validator, taken when the operator names it) ------------------


def _b64(value: dict[str, Any]) -> str:
    import base64
    import json

    return base64.b64encode(json.dumps(value).encode()).decode().rstrip("=")


def _jws(claims: dict[str, Any], alg: str = "none") -> str:
    return f"{_b64({'alg': alg})}.{_b64(claims)}."


def _oauth_exchanges(address: str) -> list[tuple[object, ...]]:
    """Tokens good and bad, malformed first messages: each answer and, after a refusal, the %x01 step's."""
    now = int(time.time())
    good = _jws({"sub": "alice", "exp": now + 3600, "iat": now - 10})
    cases = [
        ("good", f"n,,\x01auth=Bearer {good}\x01\x01"),
        ("good with extensions and authzid", f"n,a=alice,\x01auth=Bearer {good}\x01traceId=abc\x01\x01"),
        ("expired", f"n,,\x01auth=Bearer {_jws({'sub': 'alice', 'exp': now - 60})}\x01\x01"),
        (
            "issued in the future",
            f"n,,\x01auth=Bearer {_jws({'sub': 'a', 'exp': now + 7200, 'iat': now + 3600})}\x01\x01",
        ),
        ("signed", f"n,,\x01auth=Bearer {_jws({'sub': 'alice', 'exp': now + 3600}, alg='HS256')}\x01\x01"),
        ("no subject", f"n,,\x01auth=Bearer {_jws({'exp': now + 3600})}\x01\x01"),
        ("no expiry", f"n,,\x01auth=Bearer {_jws({'sub': 'alice'})}\x01\x01"),
        ("other authzid", f"n,a=bob,\x01auth=Bearer {good}\x01\x01"),
        ("no auth", "n,,\x01traceId=abc\x01\x01"),
        ("basic scheme", "n,,\x01auth=Basic abc\x01\x01"),
        ("not a first message", "hello"),
    ]
    out: list[tuple[object, ...]] = []
    for name, message in cases:
        raw = RawClient(address)
        row: tuple[object, ...] = (name,)
        try:
            hs = raw.request(SASL_HANDSHAKE, 1, {"mechanism": "OAUTHBEARER"})
            auth = raw.request(SASL_AUTHENTICATE, 2, {"auth_bytes": message.encode()})
            # a good token's session lasts until it expires (KIP-368): about an hour, to the second
            row += (
                hs.error_code,
                auth.error_code,
                auth.error_message,
                bytes(auth.auth_bytes),
                round(auth.session_lifetime_ms / 60_000),
            )
            if auth.error_code == 0 and auth.auth_bytes:  # refused token: the client acknowledges with %x01
                final = raw.request(SASL_AUTHENTICATE, 2, {"auth_bytes": b"\x01"})
                row += (final.error_code, final.error_message, "closed" if raw.is_closed() else "open")
            elif auth.error_code == 0:
                md = raw.request(METADATA, 12, {"topics": [], "allow_auto_topic_creation": False})
                row += ("served", md.cluster_id is not None)
            else:
                row += ("closed" if raw.is_closed() else "open",)
        except ConnectionError:
            row += ("closed without an answer",)
        out.append(row)
        raw.close()
    return out


def _bearer(sub: str, seconds: int) -> bytes:
    now = int(time.time())
    return f"n,,\x01auth=Bearer {_jws({'sub': sub, 'exp': now + seconds, 'iat': now - 1})}\x01\x01".encode()


def _reauth_exchanges(address: str) -> list[tuple[object, ...]]:
    """KIP-368: re-authenticating a session that has a lifetime, with the same and another principal, another
    mechanism, too soon; a session without one; and a session used after it ended."""

    def step(raw: RawClient, api: int, body: dict[str, Any]) -> tuple[object, ...]:
        try:
            r = raw.request(api, 2 if api == SASL_AUTHENTICATE else 1, body)
        except ConnectionError:
            return ("closed",)
        if api == SASL_HANDSHAKE:
            return (r.error_code,)
        return (r.error_code, r.error_message, round(r.session_lifetime_ms / 60_000))

    out: list[tuple[object, ...]] = []
    raw = RawClient(address)
    for what in ("authenticate", "re-authenticate"):
        out.append(
            (
                what,
                step(raw, SASL_HANDSHAKE, {"mechanism": "OAUTHBEARER"}),
                step(raw, SASL_AUTHENTICATE, {"auth_bytes": _bearer("alice", 3600)}),
            )
        )
    out.append(("too soon", step(raw, SASL_HANDSHAKE, {"mechanism": "OAUTHBEARER"})))
    md = raw.request(METADATA, 12, {"topics": [], "allow_auto_topic_creation": False})
    out.append(("served", md.cluster_id is not None))
    for what, mechanism, token in (
        ("other principal", "OAUTHBEARER", _bearer("bob", 3600)),
        ("other mechanism", "PLAIN", b"\0alice\0alice-secret"),
    ):
        raw = RawClient(address)
        step(raw, SASL_HANDSHAKE, {"mechanism": "OAUTHBEARER"})
        step(raw, SASL_AUTHENTICATE, {"auth_bytes": _bearer("alice", 3600)})
        out.append(
            (
                what,
                step(raw, SASL_HANDSHAKE, {"mechanism": mechanism}),
                step(raw, SASL_AUTHENTICATE, {"auth_bytes": token}),
                "closed" if raw.is_closed() else "open",
            )
        )
    raw = RawClient(address)
    step(raw, SASL_HANDSHAKE, {"mechanism": "OAUTHBEARER"})
    out.append(("short session", step(raw, SASL_AUTHENTICATE, {"auth_bytes": _bearer("alice", 2)})[:2]))
    deadline = time.monotonic() + 15
    while time.monotonic() < deadline:  # served until the token expires, then closed at the next request
        try:
            raw.request(METADATA, 12, {"topics": [], "allow_auto_topic_creation": False})
        except ConnectionError:
            out.append(("closed once expired", True))
            break
        time.sleep(0.2)
    else:
        out.append(("closed once expired", False))
    return out


def test_reauthentication_as_apache_kafka_does(secure_apache_kafka: Any) -> None:
    from tests.conftest import SECURE_MECHANISMS, SECURE_USERS, UNSECURED_OAUTHBEARER

    with fakekafka.Cluster(
        listeners="PLAINTEXT://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0",
        users=SECURE_USERS,
        sasl_enabled_mechanisms=SECURE_MECHANISMS,
        config=UNSECURED_OAUTHBEARER,
    ) as c:
        fake = _reauth_exchanges(c.bootstrap_servers_for("SASL_PLAINTEXT"))
    real = _reauth_exchanges(secure_apache_kafka.bootstrap_servers_for("SASL_PLAINTEXT"))
    for f, r in zip(fake, real, strict=True):
        assert f == r
    assert fake[1] == ("re-authenticate", (0,), (0, "", 60)) and fake[-1] == ("closed once expired", True)


def test_oauthbearer_exchanges_answered_as_apache_kafka_answers(secure_apache_kafka: Any) -> None:
    from tests.conftest import SECURE_MECHANISMS, SECURE_USERS, UNSECURED_OAUTHBEARER

    with fakekafka.Cluster(
        listeners="PLAINTEXT://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0",
        users=SECURE_USERS,
        sasl_enabled_mechanisms=SECURE_MECHANISMS,
        config=UNSECURED_OAUTHBEARER,
    ) as c:
        fake = _oauth_exchanges(c.bootstrap_servers_for("SASL_PLAINTEXT"))
    real = _oauth_exchanges(secure_apache_kafka.bootstrap_servers_for("SASL_PLAINTEXT"))
    for f, r in zip(fake, real, strict=True):
        assert f == r
    assert fake[0][2:5] == (0, "", b"")


def test_confluent_kafka_oauthbearer_unsecured_jwt(secure: fakekafka.Cluster) -> None:
    """librdkafka's built-in unsecured JWT (sasl.oauthbearer.config principal=...) logs in as that user."""
    confluent_kafka = pytest.importorskip("confluent_kafka")
    assert secure.pki is not None
    p = confluent_kafka.Producer(
        {
            "bootstrap.servers": secure.bootstrap_servers_for("SASL_SSL"),
            "security.protocol": "SASL_SSL",
            "ssl.ca.location": str(secure.pki.ca_file),
            "sasl.mechanisms": "OAUTHBEARER",
            "enable.sasl.oauthbearer.unsecure.jwt": True,
            "sasl.oauthbearer.config": "principal=alice",
            "message.timeout.ms": 10_000,
        }
    )
    delivered: list[Any] = []
    p.produce("oauth-topic", b"x", on_delivery=lambda err, msg: delivered.append(err))
    p.flush(15)
    assert delivered == [None]
    assert [r.value for r in secure.records("oauth-topic")] == [b"x"]


# --- OAUTHBEARER only when the operator asks for it (issue 26) -------------------------------------------------


def test_default_mechanisms_check_a_password() -> None:
    """fakekafka's default (Kafka's is GSSAPI, which fakekafka lacks): PLAIN and SCRAM, never OAUTHBEARER."""
    config = BrokerConfig()
    assert config.sasl_enabled_mechanisms == "PLAIN,SCRAM-SHA-256,SCRAM-SHA-512"
    assert config.sasl_mechanisms("SASL_PLAINTEXT") == ["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"]
    listed = BrokerConfig(
        sasl_enabled_mechanisms="PLAIN,OAUTHBEARER",
        overrides={
            "listener.name.sasl_ssl.oauthbearer.sasl.server.callback.handler.class": OAUTHBEARER_UNSECURED_VALIDATOR
        },
    )
    assert listed.sasl_mechanisms("SASL_SSL") == ["PLAIN", "OAUTHBEARER"]
    assert listed.sasl_mechanisms("SASL_PLAINTEXT") == ["PLAIN"]  # named for another listener only


def _oauth_handshake(address: str) -> tuple[object, ...]:
    """An unsecured token naming a super user, as librdkafka's enable.sasl.oauthbearer.unsecure.jwt makes it."""
    raw = RawClient(address)
    try:
        hs = raw.request(SASL_HANDSHAKE, 1, {"mechanism": "OAUTHBEARER"})
        if hs.error_code:
            return hs.error_code, list(hs.mechanisms), "closed" if raw.is_closed() else "open"
        auth = raw.request(SASL_AUTHENTICATE, 2, {"auth_bytes": _bearer("admin", 3600)})
        return hs.error_code, list(hs.mechanisms), auth.error_code, auth.error_message
    finally:
        raw.close()


def test_oauthbearer_refused_unless_a_validator_is_named(caplog: pytest.LogCaptureFixture) -> None:
    """Not listed: refused. Listed with no validator named for the listener: refused too (Kafka would take
    unsigned tokens there), and said at start. Named: taken."""
    refused = (ErrorCode.UNSUPPORTED_SASL_MECHANISM, ["PLAIN", "SCRAM-SHA-512", "SCRAM-SHA-256"], "closed")
    with fakekafka.Cluster(listeners="PLAINTEXT://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0", users=USERS) as c:
        assert _oauth_handshake(c.bootstrap_servers_for("SASL_PLAINTEXT")) == refused
    with (
        caplog.at_level("WARNING", logger="fakekafka.server"),
        fakekafka.Cluster(
            listeners="SASL_PLAINTEXT://127.0.0.1:0,OAUTH://127.0.0.1:0",
            listener_security_protocol_map="SASL_PLAINTEXT:SASL_PLAINTEXT,OAUTH:SASL_PLAINTEXT",
            users=USERS,
            sasl_enabled_mechanisms="PLAIN,SCRAM-SHA-256,SCRAM-SHA-512,OAUTHBEARER",
            config={
                "listener.name.oauth.oauthbearer.sasl.server.callback.handler.class": OAUTHBEARER_UNSECURED_VALIDATOR
            },
        ) as c,
    ):
        assert _oauth_handshake(c.bootstrap_servers_for("SASL_PLAINTEXT")) == refused
        assert _oauth_handshake(c.bootstrap_servers_for("OAUTH")) == (
            0,
            ["PLAIN", "SCRAM-SHA-512", "SCRAM-SHA-256", "OAUTHBEARER"],
            0,
            "",
        )
    warnings = [r.getMessage() for r in caplog.records if "OAUTHBEARER" in r.getMessage()]
    assert len(warnings) == 1 and "not enabled on listener SASL_PLAINTEXT" in warnings[0]
    assert "listener.name.sasl_plaintext.oauthbearer.sasl.server.callback.handler.class=" in warnings[0]


@pytest.mark.parametrize(
    ("name", "value", "refusal"),
    [
        (
            "listener.name.sasl_ssl.oauthbearer.sasl.server.callback.handler.class",
            "org.apache.kafka.common.security.oauthbearer.OAuthBearerValidatorCallbackHandler",
            "fakekafka validates no signed OAUTHBEARER tokens",
        ),
        (
            "listener.name.sasl_ssl.oauthbearer.sasl.server.callback.handler.class",
            "com.example.Mine",
            "Class com.example.Mine could not be found.",
        ),
        (
            "listener.name.sasl_ssl.plain.sasl.server.callback.handler.class",
            OAUTHBEARER_UNSECURED_VALIDATOR,
            "could not be found",
        ),
        (
            "sasl.server.callback.handler.class",
            OAUTHBEARER_UNSECURED_VALIDATOR,
            "only with its listener and mechanism prefixes",
        ),
        (
            "listener.name.SASL_SSL.oauthbearer.sasl.server.callback.handler.class",
            OAUTHBEARER_UNSECURED_VALIDATOR,
            r"under listener.name.sasl_ssl. \(its name in lower case\)",
        ),
    ],
)
def test_a_server_callback_handler_fakekafka_cannot_run_is_refused(name: str, value: str, refusal: str) -> None:
    with pytest.raises(InvalidConfig, match=refusal):
        BrokerConfig.from_properties({name: value})
    taken = BrokerConfig.from_properties(
        {"listener.name.sasl_ssl.oauthbearer.sasl.server.callback.handler.class": OAUTHBEARER_UNSECURED_VALIDATOR}
    )
    assert taken.oauthbearer_validator("SASL_SSL") == OAUTHBEARER_UNSECURED_VALIDATOR


def test_oauthbearer_not_enabled_answered_as_apache_kafka_answers(secure_apache_kafka: Any) -> None:
    """Kafka's NOOAUTH listener has PLAIN and SCRAM only, as fakekafka's default: the same refusal of an unsigned
    token for a super user (and the same acceptance where both enable it, by the validator's name)."""
    from tests.conftest import SECURE_MECHANISMS, SECURE_USERS, UNSECURED_OAUTHBEARER

    with fakekafka.Cluster(listeners="PLAINTEXT://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0", users=SECURE_USERS) as c:
        fake = _oauth_handshake(c.bootstrap_servers_for("SASL_PLAINTEXT"))
    real = _oauth_handshake(secure_apache_kafka.bootstrap_servers_for("NOOAUTH"))
    assert fake == real == (ErrorCode.UNSUPPORTED_SASL_MECHANISM, ["PLAIN", "SCRAM-SHA-512", "SCRAM-SHA-256"], "closed")
    with fakekafka.Cluster(
        listeners="PLAINTEXT://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0",
        users=SECURE_USERS,
        sasl_enabled_mechanisms=SECURE_MECHANISMS,
        config=UNSECURED_OAUTHBEARER,
    ) as c:
        fake = _oauth_handshake(c.bootstrap_servers_for("SASL_PLAINTEXT"))
        described = _described(c.bootstrap_servers, *UNSECURED_OAUTHBEARER)
    assert fake == _oauth_handshake(secure_apache_kafka.bootstrap_servers_for("SASL_PLAINTEXT"))
    assert fake[2:] == (0, "")
    assert described == _described(secure_apache_kafka.bootstrap_servers, *UNSECURED_OAUTHBEARER)
    assert described[0][:2] == (*UNSECURED_OAUTHBEARER, *UNSECURED_OAUTHBEARER.values())


def _described(address: str, name: str) -> list[tuple[object, ...]]:
    """DescribeConfigs of one broker config, with synonyms and documentation, as a tuple per entry."""
    raw = RawClient(address)
    resource = {"resource_type": 4, "resource_name": "1", "configuration_keys": [name]}
    answer = raw.request(
        ApiKey.DESCRIBE_CONFIGS, 4, {"resources": [resource], "include_synonyms": True, "include_documentation": True}
    )
    raw.close()
    return [
        (
            e.name,
            e.value,
            e.read_only,
            e.config_source,
            e.is_sensitive,
            e.config_type,
            e.documentation,
            [(s.name, s.value, s.source) for s in e.synonyms],
        )
        for r in answer.results
        for e in r.configs
    ]


class _Serve:
    """`fakekafka serve` as the issue's operator ran it: PLAIN/SCRAM users, a super user, ACLs."""

    def __init__(self, tmp_path: Path, *extra: str) -> None:
        from fakekafka.model.acl import STANDARD_AUTHORIZER

        self.log = tmp_path / f"serve-{len(list(tmp_path.iterdir()))}.log"
        self.proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "fakekafka",
                "serve",
                "--port",
                "0",
                "--control-port",
                "0",
                "--listeners",
                "PLAINTEXT://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0",
                "--user",
                "admin=admin-secret",
                "--user",
                "bob=bob-secret",
                "--config",
                f"authorizer.class.name={STANDARD_AUTHORIZER}",
                "--config",
                "super.users=User:admin;User:ANONYMOUS",
                *extra,
            ],
            stdout=subprocess.PIPE,
            stderr=self.log.open("w"),
            text=True,
        )
        assert self.proc.stdout is not None
        lines = [self.proc.stdout.readline() for _ in range(3)]
        assert lines[2].startswith("fakekafka ready: "), lines
        self.sasl = lines[1].split("bootstrap.servers=")[1].strip()

    def close(self) -> str:
        self.proc.send_signal(signal.SIGTERM)
        self.proc.communicate(timeout=10)
        err = self.log.read_text()
        assert self.proc.returncode == 0, err
        return err


def _unsigned_admin(bootstrap: str, errors: list[Any]) -> Any:
    confluent_kafka = pytest.importorskip("confluent_kafka")
    from confluent_kafka.admin import AdminClient

    return AdminClient(
        {
            "bootstrap.servers": bootstrap,
            "security.protocol": "SASL_PLAINTEXT",
            "sasl.mechanisms": "OAUTHBEARER",
            "enable.sasl.oauthbearer.unsecure.jwt": True,
            "sasl.oauthbearer.config": "principal=admin",
            "error_cb": errors.append,
            "reconnect.backoff.max.ms": 500,
            "log_level": 2,
        }
    ), confluent_kafka


def test_confluent_kafka_unsigned_token_for_a_super_user_refused_by_serve(tmp_path: Path) -> None:
    """The issue's attack: librdkafka's unsigned token naming the super user, against `serve` with SASL users
    and ACLs: refused, the secret topic untouched; the same client gets in once the operator names the
    unsecured validator (and with it, knowingly, lets anyone be anyone)."""
    from confluent_kafka.admin import (
        AclBinding,
        AclOperation,
        AclPermissionType,
        NewTopic,
        ResourcePatternType,
        ResourceType,
    )

    server = _Serve(tmp_path)
    try:
        owner = _admin_over_plain(server.sasl)
        owner.create_topics([NewTopic("secret", 1)])["secret"].result(15)
        errors: list[Any] = []
        attacker, confluent_kafka = _unsigned_admin(server.sasl, errors)
        with pytest.raises(confluent_kafka.KafkaException):
            attacker.delete_topics(["secret"], operation_timeout=2, request_timeout=2)["secret"].result(15)
        allow_all = AclBinding(
            ResourceType.TOPIC,
            "*",
            ResourcePatternType.LITERAL,
            "User:bob",
            "*",
            AclOperation.ALL,
            AclPermissionType.ALLOW,
        )
        with pytest.raises(confluent_kafka.KafkaException):
            attacker.create_acls([allow_all], request_timeout=2)[allow_all].result(15)
        attacker.poll(0)  # the error callback
        assert any(
            "Unsupported SASL mechanism: broker's supported mechanisms: PLAIN,SCRAM-SHA-512,SCRAM-SHA-256" in e.str()
            for e in errors
        ), errors
        assert "secret" in owner.list_topics(timeout=10).topics
        assert owner.describe_acls(_all_acls(), request_timeout=10).result(15) == []
    finally:
        assert "is not enabled on listener" not in server.close()  # not listed: nothing to warn of
    server = _Serve(
        tmp_path,
        "--sasl-enabled-mechanisms",
        "PLAIN,SCRAM-SHA-256,SCRAM-SHA-512,OAUTHBEARER",
        "--config",
        f"listener.name.sasl_plaintext.oauthbearer.sasl.server.callback.handler.class="
        f"{OAUTHBEARER_UNSECURED_VALIDATOR}",
    )
    try:
        attacker, _ = _unsigned_admin(server.sasl, [])
        assert attacker.list_topics(timeout=10).brokers  # the operator asked for it
    finally:
        server.close()


def _admin_over_plain(bootstrap: str) -> Any:
    from confluent_kafka.admin import AdminClient

    return AdminClient(
        {
            "bootstrap.servers": bootstrap,
            "security.protocol": "SASL_PLAINTEXT",
            "sasl.mechanisms": "PLAIN",
            "sasl.username": "admin",
            "sasl.password": "admin-secret",
        }
    )


def _all_acls() -> Any:
    from confluent_kafka.admin import (
        AclBindingFilter,
        AclOperation,
        AclPermissionType,
        ResourcePatternType,
        ResourceType,
    )

    return AclBindingFilter(
        ResourceType.ANY, None, ResourcePatternType.ANY, None, None, AclOperation.ANY, AclPermissionType.ANY
    )


def test_kafka_python_unsigned_token_refused_by_default(caplog: pytest.LogCaptureFixture) -> None:
    """kafka-python's OAUTHBEARER with a token provider handing out an unsigned token for the super user."""
    from kafka import KafkaAdminClient
    from kafka.errors import KafkaError

    try:
        from kafka.net.sasl.oauth import AbstractTokenProvider  # kafka-python 3
    except ImportError:  # kafka-python 2
        from kafka.sasl.oauth import AbstractTokenProvider  # type: ignore[no-redef]

    class Unsigned(AbstractTokenProvider):  # type: ignore[misc]
        def token(self) -> str:
            now = int(time.time())
            return _jws({"sub": "admin", "exp": now + 3600, "iat": now - 1})

    made: list[Any] = []

    def network_client(**config: Any) -> Any:
        made.append(KafkaAdminClient.DEFAULT_CONFIG["kafka_client"](**config))
        return made[-1]

    def admin(address: str) -> Any:
        return KafkaAdminClient(
            bootstrap_servers=address,
            security_protocol="SASL_PLAINTEXT",
            sasl_mechanism="OAUTHBEARER",
            sasl_oauth_token_provider=Unsigned(),
            request_timeout_ms=5000,
            bootstrap_timeout_ms=3000,
            kafka_client=network_client,
        )

    with fakekafka.Cluster(
        listeners="PLAINTEXT://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0", users=USERS, topics={"secret": 1}
    ) as c:
        try:
            with pytest.raises(KafkaError):  # it logs the refusal and gives up bootstrapping
                admin(c.bootstrap_servers_for("SASL_PLAINTEXT")).delete_topics(["secret"])
        finally:  # kafka-python 3.0.12's admin client raising from its constructor leaves its I/O thread running
            for client in made:
                client.close()
        assert "SaslHandshake failed: UnsupportedSaslMechanismError" in caplog.text
        assert "secret" in c.topics()
    with fakekafka.Cluster(
        listeners="PLAINTEXT://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0",
        users=USERS,
        sasl_enabled_mechanisms="PLAIN,OAUTHBEARER",
        config={
            "listener.name.sasl_plaintext.oauthbearer.sasl.server.callback.handler.class": (
                OAUTHBEARER_UNSECURED_VALIDATOR
            )
        },
    ) as c:
        client = admin(c.bootstrap_servers_for("SASL_PLAINTEXT"))
        assert client.list_topics() is not None
        client.close()


def test_the_throwaway_pki_keeps_its_private_keys_to_its_owner(tmp_path: Path) -> None:
    """Issue 26: the keys were written world-readable (0644). Certificates stay readable; a key file left by an
    earlier run is made private too."""
    from fakekafka.net.security import make_test_pki

    (tmp_path / "client.key").write_bytes(b"old")
    (tmp_path / "client.key").chmod(0o644)
    pki = make_test_pki(tmp_path)
    modes = {p.name: p.stat().st_mode & 0o777 for p in tmp_path.iterdir()}
    assert modes == {
        "ca.pem": 0o644 & ~_umask(),
        "server.pem": 0o644 & ~_umask(),
        "client.pem": 0o644 & ~_umask(),
        "server.key": 0o600,
        "server-keystore.pem": 0o600,
        "client.key": 0o600,
        "client-keystore.pem": 0o600,
    }
    assert pki.client_key.read_bytes().startswith(b"-----BEGIN PRIVATE KEY-----")


def _umask() -> int:
    import os

    mask = os.umask(0)
    os.umask(mask)
    return mask


def test_serve_takes_users_from_a_file_or_the_environment(tmp_path: Path) -> None:
    """Issue 26: `--user NAME=PASSWORD` shows the password to anyone who lists processes. --users-file and
    $FAKEKAFKA_USERS keep it out of the command line (the variable over the file, --user over both)."""
    import os

    users = tmp_path / "users"
    users.write_text("# SASL users\nalice=from-the-file\ncarol=carol-secret\n")
    env = {**os.environ, "FAKEKAFKA_USERS": "alice=alice-secret\ndave=dave = secret"}
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "fakekafka",
            "serve",
            "--port",
            "0",
            "--control-port",
            "0",
            "--listeners",
            "PLAINTEXT://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0",
            "--users-file",
            str(users),
            "--user",
            "erin=erin-secret",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        env=env,
    )
    assert proc.stdout is not None
    try:
        lines = [proc.stdout.readline() for _ in range(3)]
        assert lines[2].startswith("fakekafka ready: "), lines
        sasl = lines[1].split("bootstrap.servers=")[1].strip()
        cmdline = Path(f"/proc/{proc.pid}/cmdline").read_bytes()
        assert b"carol-secret" not in cmdline and b"alice-secret" not in cmdline
        for user, password, ok in (
            ("alice", "alice-secret", True),
            ("alice", "from-the-file", False),
            ("carol", "carol-secret", True),
            ("dave", "dave = secret", True),
            ("erin", "erin-secret", True),
        ):
            raw = RawClient(sasl)
            assert raw.request(SASL_HANDSHAKE, 1, {"mechanism": "PLAIN"}).error_code == 0
            auth = raw.request(SASL_AUTHENTICATE, 2, {"auth_bytes": f"\0{user}\0{password}".encode()})
            assert (auth.error_code == 0) is ok, (user, password, auth)
            raw.close()
    finally:
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(10) == 0
    users.write_text("alice\n")
    r = subprocess.run(
        [sys.executable, "-m", "fakekafka", "serve", "--port", "0", "--users-file", str(users)],
        capture_output=True,
        text=True,
        timeout=20,
        env={**os.environ, "FAKEKAFKA_USERS": ""},
    )
    assert r.returncode == 2 and f"--users-file {users} line 1: expected NAME=PASSWORD" in r.stderr


def test_a_failing_connection_set_up_closes_the_connection_and_is_logged_once(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """An exception while a connection is set up (reading an mTLS client's certificate needs `cryptography`; a
    plain install once lacked it) closes that connection at once and is logged once: the client sees a close,
    not silence until its request timeout."""
    import fakekafka.net.server

    def missing(der: bytes) -> str:
        raise ModuleNotFoundError("No module named 'cryptography'")

    monkeypatch.setattr(fakekafka.net.server, "certificate_subject", missing)
    with (
        fakekafka.Cluster(listeners="SSL://127.0.0.1:0", ssl_client_auth="required") as c,
        caplog.at_level(logging.ERROR, logger="fakekafka.server"),
    ):
        assert c.pki is not None
        ctx = ssl.create_default_context(cafile=str(c.pki.ca_file))
        ctx.load_cert_chain(str(c.pki.client_cert), str(c.pki.client_key))
        with _tls_connect(c.bootstrap_servers_for("SSL"), ctx) as sock:
            sock.settimeout(10)  # a close comes at once; this only bounds the test if it does not
            sock.sendall(_api_versions_frame())
            assert sock.recv(4) == b""
        failures = [r for r in caplog.records if "set-up failed" in r.getMessage()]
        assert len(failures) == 1 and failures[0].exc_info is not None
        assert "its set-up failed; closing it" in failures[0].getMessage()
        assert all("Task exception" not in r.getMessage() for r in caplog.records)


def test_cryptography_is_a_dependency_of_a_plain_install() -> None:
    """TLS listeners need it (the throwaway PKI, an mTLS client's subject): declared, not left to chance."""
    from importlib.metadata import requires

    assert any(r.split(";")[0].replace(" ", "").startswith("cryptography") for r in requires("fakekafka") or [])


# --- listener-prefixed configs: users from JAAS, mechanisms and TLS per listener -------------------------------

_PLAIN_MODULE = "org.apache.kafka.common.security.plain.PlainLoginModule"
_SCRAM_MODULE = "org.apache.kafka.common.security.scram.ScramLoginModule"


def test_serve_takes_a_server_properties_with_jaas_users_per_listener(tmp_path: Path) -> None:
    """A real server.properties with SASL: each listener's PLAIN users from its JAAS line, its own mechanisms; real
    clients log in where their user is declared, and nowhere else."""
    from confluent_kafka import KafkaError, Producer
    from kafka import KafkaProducer
    from kafka.errors import KafkaError as PythonKafkaError

    properties = tmp_path / "server.properties"
    properties.write_text(f"""\
listeners=PLAINTEXT://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0,PARTNERS://127.0.0.1:0
listener.security.protocol.map=PLAINTEXT:PLAINTEXT,SASL_PLAINTEXT:SASL_PLAINTEXT,PARTNERS:SASL_PLAINTEXT
sasl.enabled.mechanisms=PLAIN,SCRAM-SHA-256
listener.name.partners.sasl.enabled.mechanisms=PLAIN
listener.name.sasl_plaintext.plain.sasl.jaas.config={_PLAIN_MODULE} required \\
    username="admin" password="admin-secret" user_admin="admin-secret" user_alice="alice-secret";
listener.name.sasl_plaintext.scram-sha-256.sasl.jaas.config={_SCRAM_MODULE} required;
listener.name.partners.plain.sasl.jaas.config={_PLAIN_MODULE} required user_carol="carol-secret";
""")
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "fakekafka",
            "serve",
            "--port",
            "0",
            "--control-port",
            "0",
            "--config-file",
            str(properties),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    assert proc.stdout is not None
    try:
        lines = [proc.stdout.readline() for _ in range(4)]
        assert lines[3].startswith("fakekafka ready: "), lines
        sasl, partners = (line.split("bootstrap.servers=")[1].strip() for line in lines[1:3])
        producer = KafkaProducer(
            bootstrap_servers=sasl,
            security_protocol="SASL_PLAINTEXT",
            sasl_mechanism="PLAIN",
            sasl_plain_username="alice",
            sasl_plain_password="alice-secret",
        )
        assert producer.send("jaas", b"alice").get(timeout=10).offset == 0
        producer.close()
        with pytest.raises(PythonKafkaError):  # alice is not a user of PARTNERS
            KafkaProducer(
                bootstrap_servers=partners,
                security_protocol="SASL_PLAINTEXT",
                sasl_mechanism="PLAIN",
                sasl_plain_username="alice",
                sasl_plain_password="alice-secret",
                max_block_ms=3000,
            )

        def confluent(bootstrap: str, user: str, password: str, mechanism: str = "PLAIN") -> list[KafkaError]:
            errors: list[KafkaError] = []
            producer = Producer(
                {
                    "bootstrap.servers": bootstrap,
                    "security.protocol": "SASL_PLAINTEXT",
                    "sasl.mechanism": mechanism,
                    "sasl.username": user,
                    "sasl.password": password,
                    "error_cb": errors.append,
                }
            )
            delivered: list[bool] = []
            producer.produce("jaas", user.encode(), on_delivery=lambda err, _msg: delivered.append(err is None))
            deadline = time.monotonic() + 10
            while not (delivered or errors) and time.monotonic() < deadline:  # a refusal is an error, not a wait
                producer.poll(0.1)
            producer.purge()
            producer.flush(1)
            return errors

        assert confluent(partners, "carol", "carol-secret") == []
        wrong = confluent(partners, "carol", "wrong")
        assert wrong and wrong[0].code() == KafkaError._AUTHENTICATION
        assert "Authentication failed: Invalid username or password" in wrong[0].str()
        other = confluent(sasl, "carol", "carol-secret")  # carol is PARTNERS' user only
        assert other and other[0].code() == KafkaError._AUTHENTICATION
        scram = confluent(partners, "carol", "carol-secret", "SCRAM-SHA-256")  # PARTNERS offers PLAIN only
        assert scram and "SCRAM-SHA-256" in scram[0].str() and "PLAIN" in scram[0].str()
        consumed = _consumed_values(lines[0].split("bootstrap.servers=")[1].strip(), "jaas", 2)
        assert consumed == [b"alice", b"carol"]
    finally:
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(10) == 0
    properties.write_text(
        f'listener.name.sasl_plaintext.plain.sasl.jaas.config={_PLAIN_MODULE} required user_alice="alice-secret"\n'
    )
    r = subprocess.run(
        [sys.executable, "-m", "fakekafka", "serve", "--port", "0", "--config-file", str(properties)],
        capture_output=True,
        text=True,
        timeout=20,
    )
    assert r.returncode == 2 and "Traceback" not in r.stderr
    assert (
        "configuration listener.name.sasl_plaintext.plain.sasl.jaas.config: JAAS config entry not terminated by "
        "semi-colon"
    ) in r.stderr and "alice-secret" not in r.stderr


def _consumed_values(bootstrap: str, topic: str, count: int) -> list[bytes]:
    from kafka import KafkaConsumer

    consumer = KafkaConsumer(
        topic, bootstrap_servers=bootstrap, auto_offset_reset="earliest", consumer_timeout_ms=10000
    )
    values = []
    for record in consumer:
        values.append(record.value)
        if len(values) == count:
            break
    consumer.close()
    return values


def test_tls_settings_per_listener() -> None:
    """listener.name.<l>.ssl.client.auth asks that listener's clients for a certificate, SASL_SSL ones too; the other
    listeners keep the broker's setting."""
    with fakekafka.Cluster(
        listeners="SSL://127.0.0.1:0,MTLS://127.0.0.1:0,SASL_SSL://127.0.0.1:0",
        listener_security_protocol_map="SSL:SSL,MTLS:SSL,SASL_SSL:SASL_SSL",
        users=USERS,
        config={"listener.name.mtls.ssl.client.auth": "required", "listener.name.sasl_ssl.ssl.client.auth": "required"},
    ) as c:
        assert c.pki is not None
        anonymous = ssl.create_default_context(cafile=str(c.pki.ca_file))
        with _tls_connect(c.bootstrap_servers_for("SSL"), anonymous) as sock:
            sock.sendall(_api_versions_frame())
            assert len(sock.recv(4)) == 4
        for listener in ("MTLS", "SASL_SSL"):
            with pytest.raises((ssl.SSLError, ConnectionError)):
                with _tls_connect(c.bootstrap_servers_for(listener), anonymous) as sock:
                    sock.sendall(_api_versions_frame())
                    if not sock.recv(4):
                        raise ConnectionError("closed")
            ctx = ssl.create_default_context(cafile=str(c.pki.ca_file))
            ctx.load_cert_chain(str(c.pki.client_cert), str(c.pki.client_key))
            with _tls_connect(c.bootstrap_servers_for(listener), ctx) as sock:
                sock.sendall(_api_versions_frame())
                assert len(sock.recv(4)) == 4


def _listener_view(address: str, users: list[tuple[str, str]]) -> list[object]:
    """What a client sees of one SASL listener: the mechanisms it offers (asking for GSSAPI, which neither broker
    enables), and each PLAIN login's answer."""
    raw = RawClient(address)
    hs = raw.request(SASL_HANDSHAKE, 1, {"mechanism": "GSSAPI"})
    out: list[object] = [(hs.error_code, list(hs.mechanisms))]
    raw.close()
    for user, password in users:
        raw = RawClient(address)
        raw.request(SASL_HANDSHAKE, 1, {"mechanism": "PLAIN"})
        auth = raw.request(SASL_AUTHENTICATE, 2, {"auth_bytes": f"\0{user}\0{password}".encode()})
        out.append((user, password, auth.error_code, auth.error_message))
        raw.close()
    return out


def test_jaas_users_and_listener_configs_as_apache_kafka_takes_them(secure_apache_kafka: Any) -> None:
    """fakekafka started with the secure Kafka's own server.properties lines (tests/conftest.py: PLAIN users from
    JAAS on each listener, NOOAUTH's own sasl.enabled.mechanisms): the same mechanisms per listener, the same
    logins and refusals, the same DescribeConfigs of the listener-prefixed configs (JAAS lines hidden)."""
    from kafka import KafkaProducer

    from tests.conftest import SECURE_USERS, secure_configs

    configs = secure_configs()
    logins = [("alice", "alice-secret"), ("alice", "wrong"), ("nobody", "alice-secret")]
    prefixed = sorted(n for n in configs if n.startswith("listener.name."))

    def seen(kafka: Any) -> list[object]:
        from kafka.admin import KafkaAdminClient, NewTopic

        admin = KafkaAdminClient(bootstrap_servers=kafka.bootstrap_servers)  # Kafka's auto-create is off
        admin.create_topics([NewTopic(f"jaas-{n}", 1, 1) for n in ("SASL_PLAINTEXT", "NOOAUTH")])
        admin.close()
        out: list[object] = []
        for listener in ("SASL_PLAINTEXT", "NOOAUTH"):
            out.append(_listener_view(kafka.bootstrap_servers_for(listener), logins))
            producer = KafkaProducer(
                bootstrap_servers=kafka.bootstrap_servers_for(listener),
                security_protocol="SASL_PLAINTEXT",
                sasl_mechanism="SCRAM-SHA-256",
                sasl_plain_username="admin",
                sasl_plain_password="admin-secret",
            )
            out.append(producer.send(f"jaas-{listener}", b"x").get(timeout=15).offset)
            producer.close()
        out += [_described(kafka.bootstrap_servers, name) for name in prefixed]
        return out

    # SCRAM users are the cluster's (Kafka: kafka-storage format --add-scram); PLAIN users come from the JAAS lines
    with fakekafka.Cluster(
        listeners="PLAINTEXT://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0,NOOAUTH://127.0.0.1:0",
        listener_security_protocol_map="PLAINTEXT:PLAINTEXT,SASL_PLAINTEXT:SASL_PLAINTEXT,NOOAUTH:SASL_PLAINTEXT",
        users={u: p for u, p in SECURE_USERS.items() if u != "alice"},
        config=configs,
    ) as c:
        fake = seen(c)
    real = seen(secure_apache_kafka)
    assert fake == real
    assert fake[0][0] == (
        ErrorCode.UNSUPPORTED_SASL_MECHANISM,  # type: ignore[index]
        ["PLAIN", "SCRAM-SHA-512", "SCRAM-SHA-256", "OAUTHBEARER"],
    )
    assert fake[2][0] == (ErrorCode.UNSUPPORTED_SASL_MECHANISM, ["PLAIN", "SCRAM-SHA-512", "SCRAM-SHA-256"])  # type: ignore[index]
    assert fake[0][1][2] == 0 and fake[0][2][2] == ErrorCode.SASL_AUTHENTICATION_FAILED  # type: ignore[index]
    jaas = next(d for d in fake[4:] if "plain.sasl.jaas.config" in d[0][0])  # type: ignore[index]
    assert jaas[0][1:5] == (None, True, 4, True)  # hidden, read-only, STATIC_BROKER_CONFIG, sensitive
