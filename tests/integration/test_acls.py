"""ACLs and the authorizer: the rules (model), the ACL APIs and their enforcement on the wire, real clients
allowed and refused, and the same exchanges answered field by field as Apache Kafka 4.4.0 answers them when
started with `authorizer.class.name=org.apache.kafka.metadata.authorizer.StandardAuthorizer`.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import os
import re
import subprocess
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import fakekafka
from fakekafka.handlers.configs import BROKER as CONFIG_BROKER  # config resource types, not the ACLs' RT
from fakekafka.handlers.configs import GROUP as CONFIG_GROUP
from fakekafka.handlers.configs import TOPIC as CONFIG_TOPIC
from fakekafka.model.acl import (
    STANDARD_AUTHORIZER,
    AclBinding,
    AclBindingFilter,
    AclOperation,
    Authorizer,
    PatternType,
    ResourceType,
)
from fakekafka.model.config import InvalidConfig
from fakekafka.net.security import ssl_principal_name
from fakekafka.testing.client import consumer_group_heartbeat
from fakekafka.wire import ApiKey, ErrorCode
from fakekafka.wire.primitives import ZERO_UUID
from tests.conftest import SECURE_SUPER_USERS, SECURE_USERS
from tests.rawclient import RawClient

USERS = SECURE_USERS
ACL_CONFIG = {"authorizer.class.name": STANDARD_AUTHORIZER, "super.users": SECURE_SUPER_USERS}
"""The settings of the session's secure Apache Kafka (tests/conftest.py's secure_apache_kafka)."""
OP, RT = AclOperation, ResourceType


def acl(
    resource: str,
    name: str,
    principal: str,
    operation: str,
    permission: str = "ALLOW",
    pattern: str = "LITERAL",
    host: str = "*",
) -> AclBinding:
    return AclBinding.of(resource, name, principal, operation, permission=permission, pattern=pattern, host=host)


# --- the rules (pure model) ------------------------------------------------------------------------------


def _authorizer(*acls: AclBinding, allow_everyone: bool = False) -> Authorizer:
    a = Authorizer(["User:admin"], allow_everyone)
    assert a.create(acls) == [None] * len(acls)
    return a


def test_literal_prefixed_and_wildcard_patterns() -> None:
    a = _authorizer(
        acl("TOPIC", "orders", "User:alice", "READ"),
        acl("TOPIC", "pay-", "User:alice", "WRITE", pattern="PREFIXED"),
        acl("GROUP", "*", "User:alice", "READ"),
    )
    assert a.authorize("User:alice", "10.0.0.1", OP.READ, RT.TOPIC, "orders")
    assert not a.authorize("User:alice", "10.0.0.1", OP.READ, RT.TOPIC, "orders2")  # literal: the whole name
    assert a.authorize("User:alice", "10.0.0.1", OP.WRITE, RT.TOPIC, "pay-eu")
    assert not a.authorize("User:alice", "10.0.0.1", OP.WRITE, RT.TOPIC, "pa")
    assert a.authorize("User:alice", "10.0.0.1", OP.READ, RT.GROUP, "any-group")
    assert not a.authorize("User:bob", "10.0.0.1", OP.READ, RT.TOPIC, "orders")
    assert a.authorize("User:admin", "10.0.0.1", OP.DELETE, RT.CLUSTER, "kafka-cluster")  # super user


def test_deny_wins_and_implications_apply_to_allow_only() -> None:
    a = _authorizer(
        acl("TOPIC", "t", "User:*", "ALL"),
        acl("TOPIC", "t", "User:alice", "WRITE", "DENY"),
        acl("TOPIC", "u", "User:alice", "READ", "DENY"),
        acl("TOPIC", "u", "User:alice", "DESCRIBE"),
        acl("TOPIC", "v", "User:alice", "ALTER_CONFIGS"),
    )
    assert a.authorize("User:bob", "h", OP.WRITE, RT.TOPIC, "t")
    assert not a.authorize("User:alice", "h", OP.WRITE, RT.TOPIC, "t")
    assert a.authorize("User:alice", "h", OP.READ, RT.TOPIC, "t")
    assert a.authorize("User:alice", "h", OP.DESCRIBE, RT.TOPIC, "u")  # DENY READ does not deny DESCRIBE
    assert not a.authorize("User:alice", "h", OP.READ, RT.TOPIC, "u")
    assert a.authorize("User:alice", "h", OP.DESCRIBE_CONFIGS, RT.TOPIC, "v")  # implied by ALTER_CONFIGS
    assert not a.authorize("User:alice", "h", OP.DESCRIBE, RT.TOPIC, "v")


def test_hosts_and_the_no_acl_default() -> None:
    a = _authorizer(acl("TOPIC", "t", "User:alice", "READ", host="10.0.0.1"), allow_everyone=True)
    assert a.authorize("User:alice", "10.0.0.1", OP.READ, RT.TOPIC, "t")
    assert not a.authorize("User:alice", "10.0.0.2", OP.READ, RT.TOPIC, "t")  # ACLs on t, none for this host
    assert a.authorize("User:bob", "10.0.0.2", OP.WRITE, RT.TOPIC, "no-acls")  # allow.everyone.if.no.acl.found
    assert not _authorizer().authorize("User:bob", "h", OP.READ, RT.TOPIC, "no-acls")  # Kafka's default: deny


def test_authorize_by_resource_type_for_idempotent_producers() -> None:
    a = _authorizer(
        acl("TOPIC", "app-", "User:alice", "WRITE", pattern="PREFIXED"),
        acl("TOPIC", "app-x", "User:bob", "WRITE"),
        acl("TOPIC", "app", "User:bob", "WRITE", "DENY", pattern="PREFIXED"),
    )
    assert a.authorize_by_resource_type("User:alice", "h", OP.WRITE, RT.TOPIC)
    assert not a.authorize_by_resource_type("User:bob", "h", OP.WRITE, RT.TOPIC)  # a prefix DENY covers it
    assert not a.authorize_by_resource_type("User:carol", "h", OP.WRITE, RT.TOPIC)


def test_filters_match_as_kafkas_acl_binding_filter() -> None:
    a = _authorizer(
        acl("TOPIC", "orders", "User:alice", "READ"),
        acl("TOPIC", "ord", "User:bob", "READ", pattern="PREFIXED"),
        acl("TOPIC", "*", "User:carol", "WRITE"),
        acl("GROUP", "orders", "User:alice", "READ"),
    )
    match = AclBindingFilter(RT.TOPIC, "orders", PatternType.MATCH)
    assert {x.principal for x in a.describe(match)} == {"User:alice", "User:bob", "User:carol"}
    assert [x.principal for x in a.describe(AclBindingFilter(RT.ANY, "orders", PatternType.LITERAL))] == [
        "User:alice",
        "User:alice",
    ]
    assert len(a.describe(AclBindingFilter(principal="User:bob"))) == 1
    assert len(a.delete(AclBindingFilter(RT.TOPIC))) == 3 and len(a.acls) == 1


def test_invalid_acls_are_refused_in_kafkas_words() -> None:
    a = Authorizer()
    assert a.create(
        [
            acl("TOPIC", "t", "User:a", "READ", pattern="MATCH"),
            acl("ANY", "t", "User:a", "READ"),
            acl("TOPIC", "t", "User:a", "ANY"),
            acl("TOPIC", "t", "alice", "READ"),
            acl("TOPIC", "", "User:a", "READ"),
        ]
    ) == [
        "Invalid patternType MATCH",
        "Invalid resourceType ANY",
        "Invalid operation ANY",
        "Could not parse principal from `alice` (no colon is present separating the principal type from the "
        "principal name)",
        "Resource name should not be empty",
    ]
    assert a.acls == []


def test_authorized_operations_bits() -> None:
    a = _authorizer(acl("TOPIC", "t", "User:alice", "READ"))
    assert a.authorized_operations("User:alice", "h", RT.TOPIC, "t") == (1 << OP.READ) | (1 << OP.DESCRIBE)
    assert a.authorized_operations("User:admin", "h", RT.GROUP, "g") == 3400  # every group operation


def test_ssl_principal_mapping_rules() -> None:
    dn = "CN=alice,OU=eng,O=acme"
    assert ssl_principal_name(dn) == dn
    assert ssl_principal_name(dn, "RULE:^CN=(.*?),OU=(.*?),O=(.*?)$/$1@$2/L,DEFAULT") == "alice@eng"
    assert ssl_principal_name("CN=Bob,O=x", "RULE:^CN=(.*?),OU=.*$/$1/,RULE:^CN=(.*?),O=.*$/$1/U") == "BOB"
    with pytest.raises(ValueError, match="No rules apply"):
        ssl_principal_name(dn, "RULE:^OU=(.*)$/$1/")


def test_config_names_and_refusals() -> None:
    with pytest.raises(InvalidConfig, match="authorizer.class.name"):
        fakekafka.Cluster(config={"authorizer.class.name": "kafka.security.authorizer.AclAuthorizer"})
    with pytest.raises(InvalidConfig, match="allow.everyone.if.no.acl.found"):
        fakekafka.Cluster(config={"allow.everyone.if.no.acl.found": "maybe"})
    assert fakekafka.Cluster().state.authorizer is None  # Kafka's default: no authorizer
    c = fakekafka.Cluster(config={**ACL_CONFIG, "allow.everyone.if.no.acl.found": "true"})
    assert c.state.authorizer is not None and c.state.authorizer.allow_everyone_if_no_acl_found
    with pytest.raises(ValueError, match="No Authorizer is configured"):
        fakekafka.Cluster().create_acls(acl("TOPIC", "t", "User:a", "READ"))


# --- on the wire ---------------------------------------------------------------------------------------


def _login(address: str, user: str, timeout: float = 10.0) -> RawClient:
    raw = RawClient(address, timeout=timeout)
    assert raw.request(ApiKey.SASL_HANDSHAKE, 1, {"mechanism": "PLAIN"}).error_code == 0
    auth = raw.request(ApiKey.SASL_AUTHENTICATE, 2, {"auth_bytes": f"\0{user}\0{USERS[user]}".encode()})
    assert auth.error_code == 0, auth
    return raw


@pytest.fixture
def secured() -> Iterator[fakekafka.Cluster]:
    with fakekafka.Cluster(
        listeners="PLAINTEXT://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0", users=USERS, config=ACL_CONFIG
    ) as c:
        yield c


def test_acl_apis_without_an_authorizer_answer_security_disabled(kafka: fakekafka.Cluster) -> None:
    raw = RawClient(kafka.bootstrap_servers)
    d = raw.request(ApiKey.DESCRIBE_ACLS, 3, _describe_filter())
    assert (d.error_code, d.error_message) == (ErrorCode.SECURITY_DISABLED, "No Authorizer is configured on the broker")
    c = raw.request(ApiKey.CREATE_ACLS, 3, {"creations": [_creation("TOPIC", "t", "User:a", "READ")]})
    assert [(r.error_code, r.error_message) for r in c.results] == [
        (ErrorCode.SECURITY_DISABLED, "No Authorizer is configured.")
    ]


def test_python_api_and_wire_see_the_same_acls(secured: fakekafka.Cluster) -> None:
    secured.create_acls(acl("TOPIC", "orders", "User:alice", "READ"))
    raw = _login(secured.bootstrap_servers_for("SASL_PLAINTEXT"), "admin")
    created = raw.request(
        ApiKey.CREATE_ACLS, 3, {"creations": [_creation("GROUP", "g-", "User:alice", "READ", "PREFIXED")]}
    )
    assert [r.error_code for r in created.results] == [0]
    assert [(a.resource_type, a.resource_name, a.pattern_type) for a in secured.acls()] == [
        (RT.TOPIC, "orders", PatternType.LITERAL),
        (RT.GROUP, "g-", PatternType.PREFIXED),
    ]
    described = raw.request(ApiKey.DESCRIBE_ACLS, 3, _describe_filter())
    assert [(r.resource_name, [a.principal for a in r.acls]) for r in described.resources] == [
        ("orders", ["User:alice"]),
        ("g-", ["User:alice"]),
    ]
    assert [a.resource_name for a in secured.delete_acls(AclBindingFilter(RT.GROUP))] == ["g-"]
    with pytest.raises(ValueError, match="Invalid patternType MATCH"):
        secured.create_acls(acl("TOPIC", "x", "User:a", "READ", pattern="MATCH"))


def test_unknown_elements_close_the_connection(secured: fakekafka.Cluster) -> None:
    raw = _login(secured.bootstrap_servers_for("SASL_PLAINTEXT"), "admin")
    raw.send(ApiKey.DESCRIBE_ACLS, 3, {**_describe_filter(), "resource_type_filter": RT.UNKNOWN})
    assert raw.is_closed()


def test_plaintext_principal_is_anonymous_and_tls_certificates_name_theirs() -> None:
    config = {**ACL_CONFIG, "super.users": "User:admin", "ssl.principal.mapping.rules": "RULE:^CN=(.*?)$/$1/,DEFAULT"}
    with fakekafka.Cluster(
        listeners="PLAINTEXT://127.0.0.1:0,SSL://127.0.0.1:0", ssl_client_auth="required", config=config
    ) as c:
        assert c.pki is not None
        c.create_acls(acl("TOPIC", "*", "User:client", "DESCRIBE"))
        plain = RawClient(c.bootstrap_servers_for("PLAINTEXT"))
        md = plain.request(ApiKey.METADATA, 12, {"topics": [{"name": "t"}], "allow_auto_topic_creation": False})
        assert md.topics[0].error_code == ErrorCode.TOPIC_AUTHORIZATION_FAILED  # User:ANONYMOUS
        c.create_topic("t")
        from kafka import KafkaConsumer  # the certificate's CN=client, mapped to User:client, may describe

        consumer = KafkaConsumer(
            bootstrap_servers=c.bootstrap_servers_for("SSL"),
            security_protocol="SSL",
            ssl_cafile=str(c.pki.ca_file),
            ssl_certfile=str(c.pki.client_cert),
            ssl_keyfile=str(c.pki.client_key),
        )
        try:
            assert consumer.partitions_for_topic("t") == {0}
        finally:
            consumer.close()


# --- real clients --------------------------------------------------------------------------------------


def _kafka_python(c: fakekafka.Cluster, user: str, **extra: Any) -> dict[str, Any]:
    return {
        "bootstrap_servers": c.bootstrap_servers_for("SASL_PLAINTEXT"),
        "security_protocol": "SASL_PLAINTEXT",
        "sasl_mechanism": "SCRAM-SHA-256",
        "sasl_plain_username": user,
        "sasl_plain_password": USERS[user],
        **extra,
    }


def test_kafka_python_produces_and_consumes_with_acls_and_is_refused_without(secured: fakekafka.Cluster) -> None:
    from kafka import KafkaConsumer, KafkaProducer
    from kafka.errors import GroupAuthorizationFailedError, TopicAuthorizationFailedError

    secured.create_topic("orders")
    secured.create_topic("secret")
    secured.create_acls(
        acl("TOPIC", "orders", "User:alice", "WRITE"),
        acl("TOPIC", "orders", "User:alice", "READ"),
        acl("GROUP", "billing", "User:alice", "READ"),
    )
    producer = KafkaProducer(**_kafka_python(secured, "alice", max_block_ms=5000))
    try:
        assert producer.send("orders", b"o-1").get(timeout=10).offset == 0
        with pytest.raises(TopicAuthorizationFailedError):
            producer.send("secret", b"x").get(timeout=10)
    finally:
        producer.close()
    consumer = KafkaConsumer(
        "orders", **_kafka_python(secured, "alice", group_id="billing", auto_offset_reset="earliest")
    )
    try:
        records = secured.wait_until(lambda: consumer.poll(timeout_ms=500))
        assert [r.value for batch in records.values() for r in batch] == [b"o-1"]
        consumer.commit()
        assert secured.committed("billing") == {("orders", 0): 1}
    finally:
        consumer.close()
    refused = KafkaConsumer("orders", **_kafka_python(secured, "alice", group_id="other", consumer_timeout_ms=3000))
    try:
        with pytest.raises(GroupAuthorizationFailedError):
            refused.poll(timeout_ms=3000)
    finally:
        refused.close()


def test_confluent_kafka_with_and_without_acls(secured: fakekafka.Cluster) -> None:
    confluent_kafka = pytest.importorskip("confluent_kafka")
    secured.create_topic("events")
    secured.create_acls(acl("TOPIC", "ev", "User:alice", "WRITE", pattern="PREFIXED"))
    conf = {
        "bootstrap.servers": secured.bootstrap_servers_for("SASL_PLAINTEXT"),
        "security.protocol": "SASL_PLAINTEXT",
        "sasl.mechanisms": "PLAIN",
        "sasl.password": None,
    }
    results: dict[str, Any] = {}
    for user in ("alice", "bob"):
        p = confluent_kafka.Producer(
            {**conf, "sasl.username": user, "sasl.password": USERS[user], "message.timeout.ms": 5000}
        )
        try:
            p.produce("events", b"x", on_delivery=lambda err, msg, user=user: results.__setitem__(user, err))
            p.flush(15)
        finally:
            p.close()
    assert results["alice"] is None
    assert results["bob"].code() == confluent_kafka.KafkaError.TOPIC_AUTHORIZATION_FAILED
    assert [r.value for r in secured.records("events")] == [b"x"]


def test_confluent_kafka_consumer_protocol_gets_only_topics_it_may_read(secured: fakekafka.Cluster) -> None:
    """A KIP-848 consumer (group.protocol=consumer) subscribed by regex is assigned only the matching topics its
    user may describe, and consumes those; subscribed by name to a topic it may not describe, it is refused."""
    confluent_kafka = pytest.importorskip("confluent_kafka")
    for topic in ("cf-ok", "cf-secret"):
        secured.create_topic(topic)
        secured.produce(topic, topic.encode())
    secured.create_acls(
        acl("TOPIC", "cf-ok", "User:alice", "READ"), acl("GROUP", "cf-", "User:alice", "READ", pattern="PREFIXED")
    )
    conf = {
        "bootstrap.servers": secured.bootstrap_servers_for("SASL_PLAINTEXT"),
        "security.protocol": "SASL_PLAINTEXT",
        "sasl.mechanisms": "PLAIN",
        "sasl.username": "alice",
        "sasl.password": USERS["alice"],
        "group.protocol": "consumer",
        "auto.offset.reset": "earliest",
    }
    consumer = confluent_kafka.Consumer({**conf, "group.id": "cf-regex"})
    try:
        consumer.subscribe(["^cf-.*"])
        got: list[bytes] = []
        deadline = time.monotonic() + 20
        while not got and time.monotonic() < deadline:
            m = consumer.poll(0.5)
            if m is not None and m.error() is None:
                got.append(m.value())
        assert got == [b"cf-ok"]
        assert {tp.topic for tp in consumer.assignment()} == {"cf-ok"}
    finally:
        consumer.close()
    consumer = confluent_kafka.Consumer({**conf, "group.id": "cf-names"})
    try:
        consumer.subscribe(["cf-secret"])
        errors = []
        deadline = time.monotonic() + 20
        while not errors and time.monotonic() < deadline:
            m = consumer.poll(0.5)
            if m is not None and m.error() is not None:
                errors.append(m.error().code())
            assert m is None or m.error() is not None, m.value()
        assert errors[:1] == [confluent_kafka.KafkaError.TOPIC_AUTHORIZATION_FAILED]
    finally:
        consumer.close()


async def test_aiokafka_with_and_without_acls(secured: fakekafka.Cluster) -> None:
    from aiokafka import AIOKafkaProducer
    from aiokafka.errors import TopicAuthorizationFailedError

    secured.create_topic("aio-orders")
    secured.create_acls(acl("TOPIC", "aio-orders", "User:alice", "WRITE"))
    sent: dict[str, Any] = {}
    for user in ("alice", "bob"):
        producer = AIOKafkaProducer(
            bootstrap_servers=secured.bootstrap_servers_for("SASL_PLAINTEXT"),
            security_protocol="SASL_PLAINTEXT",
            sasl_mechanism="PLAIN",
            sasl_plain_username=user,
            sasl_plain_password=USERS[user],
            request_timeout_ms=5000,
        )
        await producer.start()
        try:
            sent[user] = await producer.send_and_wait("aio-orders", user.encode())
        except TopicAuthorizationFailedError as e:
            sent[user] = e
        finally:
            await producer.stop()
    assert sent["alice"].offset == 0
    assert isinstance(sent["bob"], TopicAuthorizationFailedError)
    assert [r.value for r in secured.records("aio-orders")] == [b"alice"]


def test_kcat_with_and_without_acls(secured: fakekafka.Cluster, kcat: str) -> None:
    secured.create_topic("kcat-orders")
    secured.create_acls(acl("TOPIC", "kcat-orders", "User:alice", "WRITE"))
    outcomes = {}
    for user in ("alice", "bob"):
        r = subprocess.run(
            [
                kcat,
                "-b",
                secured.bootstrap_servers_for("SASL_PLAINTEXT"),
                "-X",
                "security.protocol=SASL_PLAINTEXT",
                "-X",
                "sasl.mechanism=PLAIN",
                "-X",
                f"sasl.username={user}",
                "-X",
                f"sasl.password={USERS[user]}",
                "-X",
                "message.timeout.ms=5000",
                "-P",
                "-t",
                "kcat-orders",
            ],
            input=user.encode() + b"\n",
            capture_output=True,
            timeout=60,
        )
        outcomes[user] = (r.returncode, r.stderr)
    assert outcomes["alice"][0] == 0, outcomes["alice"][1]
    assert outcomes["bob"][0] != 0 and b"Topic authorization failed" in outcomes["bob"][1], outcomes["bob"][1]
    assert [r.value for r in secured.records("kcat-orders")] == [b"alice"]


def test_admin_clients_manage_acls_and_scram_users(secured: fakekafka.Cluster) -> None:
    """confluent-kafka's admin creates an ACL and a SCRAM user; kafka-python logs in as that user at once."""
    admin_mod = pytest.importorskip("confluent_kafka.admin")
    from kafka import KafkaProducer

    secured.create_topic("payments")
    admin = admin_mod.AdminClient(
        {
            "bootstrap.servers": secured.bootstrap_servers_for("SASL_PLAINTEXT"),
            "security.protocol": "SASL_PLAINTEXT",
            "sasl.mechanisms": "PLAIN",
            "sasl.username": "admin",
            "sasl.password": USERS["admin"],
        }
    )
    binding = admin_mod.AclBinding(
        admin_mod.ResourceType.TOPIC,
        "payments",
        admin_mod.ResourcePatternType.LITERAL,
        "User:carol",
        "*",
        admin_mod.AclOperation.WRITE,
        admin_mod.AclPermissionType.ALLOW,
    )
    for future in admin.create_acls([binding]).values():
        future.result(10)
    described = admin.describe_acls(
        admin_mod.AclBindingFilter(
            admin_mod.ResourceType.ANY,
            None,
            admin_mod.ResourcePatternType.ANY,
            None,
            None,
            admin_mod.AclOperation.ANY,
            admin_mod.AclPermissionType.ANY,
        )
    ).result(10)
    assert [(b.name, b.principal, b.operation) for b in described] == [
        ("payments", "User:carol", admin_mod.AclOperation.WRITE)
    ]
    upsert = admin_mod.UserScramCredentialUpsertion(
        "carol", admin_mod.ScramCredentialInfo(admin_mod.ScramMechanism.SCRAM_SHA_256, 8192), b"carol-secret"
    )
    for future in admin.alter_user_scram_credentials([upsert]).values():
        future.result(10)
    carol = admin.describe_user_scram_credentials(["carol"])["carol"].result(10)
    assert [(i.mechanism, i.iterations) for i in carol.scram_credential_infos] == [
        (admin_mod.ScramMechanism.SCRAM_SHA_256, 8192)
    ]
    producer = KafkaProducer(
        bootstrap_servers=secured.bootstrap_servers_for("SASL_PLAINTEXT"),
        security_protocol="SASL_PLAINTEXT",
        sasl_mechanism="SCRAM-SHA-256",
        sasl_plain_username="carol",
        sasl_plain_password="carol-secret",
    )
    try:
        assert producer.send("payments", b"p-1").get(timeout=10).offset == 0
    finally:
        producer.close()


# --- the same exchanges against Apache Kafka 4.4.0 -------------------------------------------------------


def _creation(
    resource: str,
    name: str,
    principal: str,
    operation: str,
    pattern: str = "LITERAL",
    permission: str = "ALLOW",
    host: str = "*",
) -> dict[str, Any]:
    b = acl(resource, name, principal, operation, permission, pattern, host)
    return {
        "resource_type": b.resource_type,
        "resource_name": name,
        "resource_pattern_type": b.pattern_type,
        "principal": principal,
        "host": host,
        "operation": b.operation,
        "permission_type": b.permission_type,
    }


def _describe_filter(**given: Any) -> dict[str, Any]:
    return {
        "resource_type_filter": RT.ANY,
        "resource_name_filter": None,
        "pattern_type_filter": PatternType.ANY,
        "principal_filter": None,
        "host_filter": None,
        "operation": OP.ANY,
        "permission_type": 1,
        **given,
    }


def _denied(message: str | None) -> str | None:
    """Kafka's message for a request refused on the cluster prints its internal request object (processor,
    session hashes): only the shape and the operation are compared."""
    m = re.fullmatch(r"Request Request\(.*\) needs (\w+) permission\.", message or "", re.DOTALL)
    return f"Request Request(...) needs {m.group(1)} permission." if m else message


def _acls_of(resources: Any) -> list[tuple[Any, ...]]:
    return sorted(
        (r.resource_type, r.resource_name, r.pattern_type, a.principal, a.host, a.operation, a.permission_type)
        for r in resources
        for a in r.acls
    )


def _settled(ask: Any, timeout: float = 30) -> Any:
    """An answer without a retriable coordinator error: Kafka makes its transaction log and producer id block
    on first use, so its first answers may be COORDINATOR_NOT_AVAILABLE or COORDINATOR_LOAD_IN_PROGRESS."""
    retriable = {ErrorCode.COORDINATOR_NOT_AVAILABLE, ErrorCode.COORDINATOR_LOAD_IN_PROGRESS}
    deadline = time.monotonic() + timeout
    while True:
        answer = ask()
        codes = [c.error_code for c in answer.coordinators] if hasattr(answer, "coordinators") else [answer.error_code]
        if not retriable & set(codes) or time.monotonic() > deadline:
            return answer
        time.sleep(0.1)


def _wait(check: Any, what: str, timeout: float = 30) -> Any:
    """Kafka's brokers learn of new topics and ACLs a moment after the controller answers."""
    deadline = time.monotonic() + timeout
    while True:
        value = check()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"{what} never happened")
        time.sleep(0.05)


SCENARIO_ACLS = [
    _creation("TOPIC", "acl-t", "User:alice", "READ"),
    _creation("TOPIC", "acl-", "User:alice", "WRITE", "PREFIXED"),
    _creation("TOPIC", "acl-denied", "User:alice", "WRITE", permission="DENY"),
    _creation("GROUP", "acl-g", "User:alice", "READ"),
    _creation("TRANSACTIONAL_ID", "acl-txn", "User:alice", "WRITE"),
]
INVALID_ACLS = [
    _creation("CLUSTER", "not-the-cluster", "User:alice", "ALTER"),
    _creation("TOPIC", "", "User:alice", "READ"),
    _creation("TOPIC", "x", "User:alice", "READ", "MATCH"),
    _creation("TOPIC", "x", "alice", "READ"),
    _creation("TOPIC", "x", "User:alice", "ANY"),
    _creation("TOPIC", "x", "User:alice", "READ", permission="ANY"),
    _creation("ANY", "x", "User:alice", "READ"),
]
TOPICS = ("acl-t", "acl-x", "acl-denied", "other")


def _create_topics(admin: RawClient, names: tuple[str, ...]) -> None:
    """Creates one-partition topics `names` and waits until the brokers know each with its leader."""
    created = admin.request(
        ApiKey.CREATE_TOPICS,
        7,
        {
            "timeout_ms": 30_000,
            "validate_only": False,
            "topics": [
                {"name": n, "num_partitions": 1, "replication_factor": 1, "assignments": [], "configs": []}
                for n in names
            ],
        },
    )
    assert all(t.error_code == 0 for t in created.topics), created
    _wait(
        lambda: all(
            t.error_code == 0 and t.partitions and t.partitions[0].leader_id >= 0
            for t in admin.request(
                ApiKey.METADATA, 12, {"topics": [{"name": n} for n in names], "allow_auto_topic_creation": False}
            ).topics
        ),
        "topics",
    )


def _exchanges(address: str) -> list[Any]:
    """The ACL APIs and their enforcement, as admin (a super user), alice (some ACLs) and bob (none)."""
    out: list[Any] = []
    admin = _login(address, "admin")
    created = admin.request(ApiKey.CREATE_ACLS, 3, {"creations": SCENARIO_ACLS})
    out.append(("create", [(r.error_code, r.error_message) for r in created.results]))
    for version in (1, 3):
        for invalid in INVALID_ACLS:  # one per request: some fail the whole request
            refused = admin.request(ApiKey.CREATE_ACLS, version, {"creations": [SCENARIO_ACLS[0], invalid]})
            out.append(
                (
                    "create invalid",
                    version,
                    invalid["resource_name"],
                    [(r.error_code, r.error_message) for r in refused.results],
                )
            )
    _create_topics(admin, TOPICS)
    heads = {
        "replica_id": -1,
        "isolation_level": 0,
        "topics": [
            {"name": n, "partitions": [{"partition_index": 0, "timestamp": -1, "current_leader_epoch": -1}]}
            for n in TOPICS
        ],
    }
    _wait(
        lambda: all(
            p.error_code == 0 for t in admin.request(ApiKey.LIST_OFFSETS, 7, heads).topics for p in t.partitions
        ),
        "leaders",
    )  # Kafka's brokers lead a moment after Metadata names them
    _wait(lambda: len(_acls_of(admin.request(ApiKey.DESCRIBE_ACLS, 3, _describe_filter()).resources)) == 5, "ACLs")
    for name, f in (
        ("all", _describe_filter()),
        (
            "match acl-t",
            _describe_filter(
                resource_type_filter=RT.TOPIC, resource_name_filter="acl-t", pattern_type_filter=PatternType.MATCH
            ),
        ),
        ("literal acl-t", _describe_filter(resource_name_filter="acl-t", pattern_type_filter=PatternType.LITERAL)),
        ("deny", _describe_filter(permission_type=2)),
        ("nobody", _describe_filter(principal_filter="User:nobody")),
    ):
        d = admin.request(ApiKey.DESCRIBE_ACLS, 3, f)
        out.append(("describe", name, d.error_code, d.error_message, _acls_of(d.resources)))

    alice, bob = _login(address, "alice"), _login(address, "bob")
    for who, raw in (("alice", alice), ("bob", bob)):
        c = raw.request(ApiKey.CREATE_ACLS, 3, {"creations": SCENARIO_ACLS[:1]})
        out.append((who, "create", [(r.error_code, _denied(r.error_message)) for r in c.results]))
        d = raw.request(ApiKey.DESCRIBE_ACLS, 3, _describe_filter())
        out.append((who, "describe", d.error_code, _denied(d.error_message), d.resources))
        x = raw.request(ApiKey.DELETE_ACLS, 3, {"filters": [_describe_filter()]})
        out.append(
            (who, "delete", [(r.error_code, _denied(r.error_message), r.matching_acls) for r in x.filter_results])
        )
        md = raw.request(
            ApiKey.METADATA,
            12,
            {
                "topics": [{"name": n} for n in (*TOPICS, "acl-new", "nope")],
                "allow_auto_topic_creation": False,
                "include_topic_authorized_operations": True,
            },
        )
        out.append(
            (
                who,
                "metadata",
                sorted(
                    (t.name, t.error_code, t.is_internal, len(t.partitions), t.topic_authorized_operations)
                    for t in md.topics
                ),
            )
        )
        md = raw.request(ApiKey.METADATA, 12, {"topics": None, "allow_auto_topic_creation": False})
        out.append((who, "metadata all", sorted(t.name for t in md.topics)))
        md = raw.request(
            ApiKey.METADATA,
            10,
            {"topics": [], "include_cluster_authorized_operations": True, "allow_auto_topic_creation": False},
        )
        out.append((who, "cluster operations", md.cluster_authorized_operations))
        from fakekafka.wire.records import build_batch

        batch = build_batch([{"key": None, "value": b"v", "timestamp": 1_700_000_000_000}])
        p = raw.request(
            ApiKey.PRODUCE,
            11,
            {
                "acks": 1,
                "timeout_ms": 10_000,
                "transactional_id": None,
                "topic_data": [
                    {"name": n, "partition_data": [{"index": 0, "records": batch}]} for n in (*TOPICS, "nope")
                ],
            },
        )
        out.append(
            (
                who,
                "produce",
                sorted((t.name, r.error_code, r.base_offset) for t in p.responses for r in t.partition_responses),
            )
        )
        f = raw.request(
            ApiKey.FETCH,
            12,
            {
                "replica_id": -1,
                "max_wait_ms": 0,
                "min_bytes": 0,
                "max_bytes": 1 << 20,
                "isolation_level": 0,
                "session_id": 0,
                "session_epoch": -1,
                "forgotten_topics_data": [],
                "rack_id": "",
                "topics": [
                    {
                        "topic": n,
                        "partitions": [
                            {
                                "partition": 0,
                                "current_leader_epoch": -1,
                                "fetch_offset": 0,
                                "last_fetched_epoch": -1,
                                "log_start_offset": -1,
                                "partition_max_bytes": 1 << 20,
                            }
                        ],
                    }
                    for n in (*TOPICS, "nope")
                ],
            },
        )
        out.append(
            (who, "fetch", sorted((t.topic, p.error_code, p.high_watermark) for t in f.responses for p in t.partitions))
        )
        lo = raw.request(
            ApiKey.LIST_OFFSETS,
            7,
            {
                "replica_id": -1,
                "isolation_level": 0,
                "topics": [
                    {"name": n, "partitions": [{"partition_index": 0, "timestamp": -1, "current_leader_epoch": -1}]}
                    for n in TOPICS
                ],
            },
        )
        out.append(
            (who, "list offsets", sorted((t.name, p.error_code, p.offset) for t in lo.topics for p in t.partitions))
        )
        fc = raw.request(ApiKey.FIND_COORDINATOR, 4, {"key_type": 0, "coordinator_keys": ["acl-g", "other-g"]})
        out.append(
            (who, "find group coordinator", sorted((c.key, c.error_code, c.error_message) for c in fc.coordinators))
        )
        fc = _settled(
            lambda raw=raw: raw.request(
                ApiKey.FIND_COORDINATOR, 4, {"key_type": 1, "coordinator_keys": ["acl-txn", "other-txn"]}
            )
        )
        out.append(
            (who, "find txn coordinator", sorted((c.key, c.error_code, c.error_message) for c in fc.coordinators))
        )
        ip = _settled(
            lambda raw=raw: raw.request(
                ApiKey.INIT_PRODUCER_ID,
                5,
                {"transactional_id": None, "transaction_timeout_ms": 60_000, "producer_id": -1, "producer_epoch": -1},
            )
        )
        out.append((who, "idempotent producer id", ip.error_code))
        ip = raw.request(
            ApiKey.INIT_PRODUCER_ID,
            5,
            {
                "transactional_id": "other-txn",
                "transaction_timeout_ms": 60_000,
                "producer_id": -1,
                "producer_epoch": -1,
            },
        )
        out.append((who, "transactional producer id", ip.error_code))
        jg = raw.request(
            ApiKey.JOIN_GROUP,
            9,
            {
                "group_id": "other-g",
                "session_timeout_ms": 10_000,
                "rebalance_timeout_ms": 10_000,
                "member_id": "",
                "group_instance_id": None,
                "protocol_type": "consumer",
                "protocols": [{"name": "range", "metadata": b""}],
                "reason": None,
            },
        )
        out.append((who, "join", jg.error_code, jg.generation_id, jg.member_id, jg.protocol_name))
        of = raw.request(
            ApiKey.OFFSET_FETCH,
            9,
            {
                "groups": [
                    {
                        "group_id": "acl-g",
                        "member_id": None,
                        "member_epoch": -1,
                        "topics": [{"name": n, "partition_indexes": [0]} for n in TOPICS],
                    },
                    {"group_id": "other-g", "member_id": None, "member_epoch": -1, "topics": None},
                ],
                "require_stable": False,
            },
        )
        out.append(
            (
                who,
                "offset fetch",
                sorted(
                    (
                        g.group_id,
                        g.error_code,
                        sorted((t.name, p.error_code, p.committed_offset) for t in g.topics for p in t.partitions),
                    )
                    for g in of.groups
                ),
            )
        )
        ct = raw.request(
            ApiKey.CREATE_TOPICS,
            7,
            {
                "timeout_ms": 10_000,
                "validate_only": True,
                "topics": [
                    {"name": n, "num_partitions": 1, "replication_factor": 1, "assignments": [], "configs": []}
                    for n in ("acl-created", "not-mine")
                ],
            },
        )
        out.append((who, "create topics", sorted((t.name, t.error_code, t.error_message) for t in ct.topics)))
        dc = raw.request(
            ApiKey.DESCRIBE_CLUSTER, 1, {"include_cluster_authorized_operations": True, "endpoint_type": 1}
        )
        out.append((who, "describe cluster", dc.error_code, dc.cluster_authorized_operations))
        cfg = raw.request(
            ApiKey.DESCRIBE_CONFIGS,
            4,
            {
                "include_synonyms": False,
                "include_documentation": False,
                "resources": [
                    {"resource_type": CONFIG_TOPIC, "resource_name": "acl-t", "configuration_keys": ["cleanup.policy"]},
                    {"resource_type": CONFIG_BROKER, "resource_name": "1", "configuration_keys": ["num.partitions"]},
                ],
            },
        )
        out.append(
            (who, "describe configs", sorted((r.resource_name, r.error_code, r.error_message) for r in cfg.results))
        )
        dg = raw.request(
            ApiKey.DESCRIBE_GROUPS, 6, {"groups": ["acl-g", "other-g"], "include_authorized_operations": True}
        )
        out.append(
            (
                who,
                "describe groups",
                sorted(
                    (g.group_id, g.error_code, g.error_message, g.group_state, g.authorized_operations)
                    for g in dg.groups
                ),
            )
        )
        oc = raw.request(
            ApiKey.OFFSET_COMMIT,
            9,
            {
                "group_id": "acl-g",
                "generation_id_or_member_epoch": -1,
                "member_id": "",
                "group_instance_id": None,
                "topics": [
                    {
                        "name": n,
                        "partitions": [
                            {
                                "partition_index": 0,
                                "committed_offset": 0,
                                "committed_leader_epoch": -1,
                                "committed_metadata": "",
                            }
                        ],
                    }
                    for n in TOPICS
                ],
            },
        )
        out.append((who, "offset commit", sorted((t.name, p.error_code) for t in oc.topics for p in t.partitions)))
        dt = raw.request(
            ApiKey.DELETE_TOPICS,
            6,
            {"timeout_ms": 10_000, "topics": [{"name": n, "topic_id": ZERO_UUID} for n in ("other", "nope")]},
        )
        out.append((who, "delete topics", sorted((r.name, r.error_code, r.error_message) for r in dt.responses)))
        cp = raw.request(
            ApiKey.CREATE_PARTITIONS,
            3,
            {
                "timeout_ms": 10_000,
                "validate_only": True,
                "topics": [{"name": n, "count": 2, "assignments": None} for n in ("acl-t", "other")],
            },
        )
        out.append((who, "create partitions", sorted((r.name, r.error_code, r.error_message) for r in cp.results)))
        dr = raw.request(
            ApiKey.DELETE_RECORDS,
            2,
            {
                "timeout_ms": 10_000,
                "topics": [
                    {"name": n, "partitions": [{"partition_index": 0, "offset": 0}]} for n in ("acl-t", "other")
                ],
            },
        )
        out.append((who, "delete records", sorted((t.name, p.error_code) for t in dr.topics for p in t.partitions)))
        ac = raw.request(
            ApiKey.INCREMENTAL_ALTER_CONFIGS,
            1,
            {
                "validate_only": True,
                "resources": [
                    {
                        "resource_type": CONFIG_TOPIC,
                        "resource_name": n,
                        "configs": [{"name": "retention.ms", "config_operation": 0, "value": "1000"}],
                    }
                    for n in ("acl-t", "other")
                ],
            },
        )
        out.append(
            (who, "alter configs", sorted((r.resource_name, r.error_code, r.error_message) for r in ac.responses))
        )
        lg = raw.request(ApiKey.LIST_GROUPS, 5, {"states_filter": [], "types_filter": []})
        out.append((who, "list groups", lg.error_code, sorted(g.group_id for g in lg.groups)))

    deleted = admin.request(
        ApiKey.DELETE_ACLS,
        3,
        {
            "filters": [
                _describe_filter(
                    resource_type_filter=RT.TOPIC, resource_name_filter="acl-t", pattern_type_filter=PatternType.MATCH
                ),
                _describe_filter(permission_type=2),
            ]
        },
    )
    out.append(
        (
            "delete",
            [
                (
                    r.error_code,
                    r.error_message,
                    sorted(
                        (
                            m.error_code,
                            m.error_message,
                            m.resource_type,
                            m.resource_name,
                            m.pattern_type,
                            m.principal,
                            m.host,
                            m.operation,
                            m.permission_type,
                        )
                        for m in r.matching_acls
                    ),
                )
                for r in deleted.filter_results
            ],
        )
    )
    _wait(lambda: len(_acls_of(admin.request(ApiKey.DESCRIBE_ACLS, 3, _describe_filter()).resources)) == 2, "deletion")
    out.append(("left", _acls_of(admin.request(ApiKey.DESCRIBE_ACLS, 3, _describe_filter()).resources)))
    out += _scram_exchanges(address, admin, alice)
    admin.send(ApiKey.CREATE_ACLS, 3, {"creations": [{**SCENARIO_ACLS[0], "operation": 0}]})
    out.append(("unknown operation: closed", admin.is_closed()))
    return out


def _salted(password: str, salt: bytes, iterations: int, hash_name: str = "sha256") -> bytes:
    return hashlib.pbkdf2_hmac(hash_name, password.encode(), salt, iterations)


def _scram_login(address: str, user: str, password: str, mechanism: str = "SCRAM-SHA-256") -> tuple[int, str]:
    """A SCRAM client (RFC 5802): the final answer's error code and message."""
    hash_name = {"SCRAM-SHA-256": "sha256", "SCRAM-SHA-512": "sha512"}[mechanism]
    raw = RawClient(address)
    try:
        assert raw.request(ApiKey.SASL_HANDSHAKE, 1, {"mechanism": mechanism}).error_code == 0
        nonce = base64.b64encode(os.urandom(18)).decode()
        first_bare = f"n={user},r={nonce}"
        first = raw.request(ApiKey.SASL_AUTHENTICATE, 2, {"auth_bytes": f"n,,{first_bare}".encode()})
        if first.error_code:
            return first.error_code, first.error_message
        server_first = bytes(first.auth_bytes).decode()
        attrs = dict(part.split("=", 1) for part in server_first.split(","))
        salted = _salted(password, base64.b64decode(attrs["s"]), int(attrs["i"]), hash_name)
        without_proof = f"c=biws,r={attrs['r']}"
        auth_message = f"{first_bare},{server_first},{without_proof}".encode()
        client_key = hmac.digest(salted, b"Client Key", hash_name)
        signature = hmac.digest(hashlib.new(hash_name, client_key).digest(), auth_message, hash_name)
        proof = base64.b64encode(bytes(a ^ b for a, b in zip(client_key, signature, strict=True))).decode()
        final = raw.request(ApiKey.SASL_AUTHENTICATE, 2, {"auth_bytes": f"{without_proof},p={proof}".encode()})
        return final.error_code, final.error_message
    finally:
        raw.close()


def _scram_exchanges(address: str, admin: RawClient, alice: RawClient) -> list[Any]:
    """DescribeUserScramCredentials / AlterUserScramCredentials, and logins with what they changed."""

    def describe(raw: RawClient, users: list[str] | None) -> tuple[Any, ...]:
        d = raw.request(
            ApiKey.DESCRIBE_USER_SCRAM_CREDENTIALS,
            0,
            {"users": None if users is None else [{"name": u} for u in users]},
        )
        return (
            d.error_code,
            d.error_message,
            sorted(
                (r.user, r.error_code, r.error_message, sorted((c.mechanism, c.iterations) for c in r.credential_infos))
                for r in d.results
            ),
        )

    def alter(
        raw: RawClient, deletions: list[tuple[str, int]], upsertions: list[tuple[str, int, int, bytes]]
    ) -> list[tuple[Any, ...]]:
        a = raw.request(
            ApiKey.ALTER_USER_SCRAM_CREDENTIALS,
            0,
            {
                "deletions": [{"name": n, "mechanism": m} for n, m in deletions],
                "upsertions": [
                    {"name": n, "mechanism": m, "iterations": i, "salt": b"salt-" + n.encode(), "salted_password": s}
                    for n, m, i, s in upsertions
                ],
            },
        )
        return sorted((r.user, r.error_code, _denied(r.error_message)) for r in a.results)

    out: list[Any] = [
        ("scram describe all", describe(admin, None)),
        ("scram describe some", describe(admin, ["alice", "nobody", "bob", "bob"])),
    ]
    carol = _salted("carol-secret", b"salt-carol", 8192)
    out.append(
        (
            "scram alter",
            alter(
                admin,
                [("bob", 2), ("gina", 1), ("alice", 1), ("", 1)],
                [
                    ("carol", 1, 8192, carol),
                    ("alice", 2, 4096, carol),
                    ("dave", 0, 4096, carol),
                    ("erin", 1, 100, carol),
                    ("frank", 1, 20_000, carol),
                ],
            ),
        )
    )
    _wait(lambda: describe(admin, ["carol"])[2][0][1] == 0, "carol's credential")
    out.append(("scram described after", describe(admin, None)))
    out.append(("carol logs in", _scram_login(address, "carol", "carol-secret")))
    out.append(("carol's wrong password", _scram_login(address, "carol", "nope")))
    out.append(("bob's deleted mechanism", _scram_login(address, "bob", USERS["bob"], "SCRAM-SHA-512")))
    out.append(("bob's other one", _scram_login(address, "bob", USERS["bob"], "SCRAM-SHA-256")))
    out.append(("alice describes", describe(alice, ["bob"])))
    out.append(("alice alters", alter(alice, [("bob", 1)], [("carol", 1, 4096, carol)])))
    return out


def test_acl_exchanges_answered_as_apache_kafka_answers(secure_apache_kafka: Any) -> None:
    from tests.javautil import compile_java

    classes = compile_java(Path(__file__).parent / "clients" / "java" / "AclClients.java")
    with fakekafka.Cluster(
        listeners="PLAINTEXT://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0",
        users=USERS,
        config={**ACL_CONFIG, "auto.create.topics.enable": "false"},
    ) as c:
        fake = _exchanges(c.bootstrap_servers_for("SASL_PLAINTEXT"))
        fake_java = _java_cases(classes, c.bootstrap_servers_for("SASL_PLAINTEXT"))
    real = _exchanges(secure_apache_kafka.bootstrap_servers_for("SASL_PLAINTEXT"))
    real_java = _java_cases(classes, secure_apache_kafka.bootstrap_servers_for("SASL_PLAINTEXT"))
    for f, r in zip(fake, real, strict=True):
        assert f == r
    assert fake_java == real_java
    assert fake_java["alice-produce"][0] == fake_java["alice-consume"][0] == "ok", fake_java
    assert fake_java["bob-produce"] == (
        "error",
        "org.apache.kafka.common.errors.TopicAuthorizationException: Not authorized to access topics: [java-acl]",
    )


def _java_cases(classes: Path, bootstrap: str) -> dict[str, tuple[str, str]]:
    """The Java client's cases (tests/integration/clients/java/AclClients.java): {case: (ok/error, detail)}."""
    from tests.javautil import run_java

    out = run_java(classes, "AclClients", bootstrap, timeout=180)
    return {
        name: (status, _denied(detail.rpartition(": ")[2]) if "needs" in detail else detail)
        for name, status, detail in (line.split("\t", 2) for line in out.stdout.splitlines() if line.count("\t") >= 2)
    }


# --- kafka-acls (Kafka's AclCommand) against both ----------------------------------------------------------

TOOLS_VERSION = "4.3.1"
"""kafka-tools on Maven Central (no 4.4.0 there): what bin/kafka-acls.sh runs, org.apache.kafka.tools.AclCommand."""


def _tools_classpath() -> str:
    import glob

    from tests import javautil

    jars = Path(os.environ.get("FAKEKAFKA_TOOLS_JARS") or javautil._CACHE / f"kafka-tools-{TOOLS_VERSION}")
    if not glob.glob(str(jars / "kafka-tools-*.jar")):
        pytest.skip(f"no kafka-tools jar in {jars}: {javautil.INSTALL_HINT}")
    return str(jars / "*")


def _kafka_acls(bootstrap: str, config_dir: Path, *commands: tuple[str, ...]) -> list[tuple[str, str]]:
    """Each command (as admin, or as alice when it starts with "alice") through kafka-acls in one JVM:
    [(exit line, output)] with what differs between brokers for other reasons than behaviour blanked."""
    import subprocess

    from tests import javautil

    cp = _tools_classpath()
    classes = javautil.compile_java(Path(__file__).parent / "clients" / "java" / "AclCli.java", cp=cp)
    for user in ("admin", "alice"):
        (config_dir / f"{user}.properties").write_text(
            "security.protocol=SASL_PLAINTEXT\nsasl.mechanism=PLAIN\nsasl.jaas.config=org.apache.kafka.common."
            f'security.plain.PlainLoginModule required username="{user}" password="{USERS[user]}";\n'
        )
    args: list[str] = []
    for command in commands:
        user, rest = ("alice", command[1:]) if command[0] == "alice" else ("admin", command)
        args += [
            *(["--next"] if args else []),
            "--bootstrap-server",
            bootstrap,
            "--command-config",
            str(config_dir / f"{user}.properties"),
            *rest,
        ]
    proc = subprocess.run(
        [
            javautil._tool("java"),
            *javautil.driver_jvm_args("error"),
            "-cp",
            os.pathsep.join([str(classes), cp]),
            "AclCli",
            *args,
        ],
        capture_output=True,
        text=True,
        timeout=180,
        check=True,
    )
    out = []
    for block in proc.stdout.split("### ")[1:]:
        head, _, body = block.partition("\n")
        body = re.sub(r"Request Request\(.*?\) needs", "Request Request(...) needs", body, flags=re.DOTALL)
        body = re.sub(
            r"only supports operations \[([^]]*)\]",  # a hash set's order too
            lambda m: "only supports operations [" + ", ".join(sorted(m.group(1).split(", "))) + "]",
            body,
        )
        body = "\n".join(line for line in body.splitlines() if not line.startswith(("\tat ", "\t... ")))
        # the tool keeps resources and entries in hash sets whose order changes from one JVM to the next (enum
        # hash codes): blocks and the entries in each are compared as sets
        blocks = sorted(
            "\n".join([lines[0], *sorted(lines[1:])])
            for block in body.split("\n\n")
            if (lines := [x.strip() for x in block.splitlines() if x.strip()])
        )
        out.append((head, "\n\n".join(blocks)))
    return out


ACL_COMMANDS = [
    ("--add", "--allow-principal", "User:alice", "--operation", "Read", "--operation", "Write", "--topic", "cli-t"),
    (
        "--add",
        "--deny-principal",
        "User:bob",
        "--operation",
        "All",
        "--topic",
        "cli-",
        "--resource-pattern-type",
        "prefixed",
    ),
    (
        "--add",
        "--allow-principal",
        "User:alice",
        "--allow-host",
        "127.0.0.1",
        "--consumer",
        "--topic",
        "cli-c",
        "--group",
        "cli-g",
    ),
    ("--add", "--allow-principal", "User:alice", "--producer", "--topic", "cli-p", "--transactional-id", "cli-txn"),
    ("--list", "--topic", "cli-t"),
    ("--list", "--principal", "User:bob"),
    ("--list", "--topic", "cli-t", "--resource-pattern-type", "match"),
    ("--remove", "--force", "--allow-principal", "User:alice", "--operation", "Read", "--topic", "cli-t"),
    ("--list", "--topic", "cli-t"),
    ("--add", "--allow-principal", "alice", "--operation", "Read", "--topic", "cli-x"),
    ("--add", "--allow-principal", "User:alice", "--operation", "Read", "--cluster"),
    ("alice", "--list"),
    ("alice", "--add", "--allow-principal", "User:alice", "--operation", "All", "--topic", "mine"),
]


def test_kafka_acls_tool_says_what_it_says_on_apache_kafka(secure_apache_kafka: Any, tmp_path: Path) -> None:
    """bin/kafka-acls.sh adding, listing and removing ACLs (and refused as alice): the same output, word for
    word, against fakekafka and Apache Kafka 4.4.0."""
    (tmp_path / "fake").mkdir()
    (tmp_path / "real").mkdir()
    with fakekafka.Cluster(
        listeners="PLAINTEXT://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0", users=USERS, config=ACL_CONFIG
    ) as c:
        fake = _kafka_acls(c.bootstrap_servers_for("SASL_PLAINTEXT"), tmp_path / "fake", *ACL_COMMANDS)
    real = _kafka_acls(secure_apache_kafka.bootstrap_servers_for("SASL_PLAINTEXT"), tmp_path / "real", *ACL_COMMANDS)
    for f, r in zip(fake, real, strict=True):
        assert f == r
    assert fake[0][0].startswith("exit 0") and "(principal=User:alice, host=*, operation=WRITE" in fake[0][1]


def _client_outcomes(bootstrap: str, admin_conf: dict[str, str], kcat: str | None) -> dict[str, str]:
    """What kafka-python, confluent-kafka, aiokafka and kcat see producing as bob, who has no ACL on the topic
    (a super user creates it): the error each client reports, by Kafka's name."""
    import asyncio

    from aiokafka import AIOKafkaProducer
    from confluent_kafka import Producer
    from confluent_kafka.admin import AdminClient, NewTopic
    from kafka import KafkaProducer
    from kafka.errors import KafkaError as KafkaPythonError

    topic = f"acl-refused-{uuid.uuid4().hex[:6]}"
    admin = AdminClient(admin_conf)
    admin.create_topics([NewTopic(topic, 1, 1)])[topic].result(30)
    deadline = time.monotonic() + 30
    while topic not in admin.list_topics(timeout=10).topics and time.monotonic() < deadline:
        time.sleep(0.1)  # Kafka's metadata has the topic a moment after CreateTopics answers
    # confluent-kafka's AdminClient has no close(): it ends when dropped. Dropped here, not with this frame,
    # which kafka-python's refused send keeps alive until a garbage collection (its exception's traceback, held
    # by the producer's future, holds this frame), so its librdkafka handle outlived the cluster
    del admin
    out: dict[str, str] = {}
    sasl = {
        "security_protocol": "SASL_PLAINTEXT",
        "sasl_mechanism": "PLAIN",
        "sasl_plain_username": "bob",
        "sasl_plain_password": USERS["bob"],
    }
    kp = KafkaProducer(bootstrap_servers=bootstrap, max_block_ms=10000, **sasl)
    try:
        kp.send(topic, b"x").get(timeout=15)
        out["kafka-python"] = "ok"
    except KafkaPythonError as e:
        out["kafka-python"] = type(e).__name__
    finally:
        kp.close()
    errors: list[Any] = []
    ck = Producer(
        {
            "bootstrap.servers": bootstrap,
            "security.protocol": "SASL_PLAINTEXT",
            "sasl.mechanisms": "PLAIN",
            "sasl.username": "bob",
            "sasl.password": USERS["bob"],
            "message.timeout.ms": 10000,
        }
    )
    try:
        ck.produce(topic, b"x", on_delivery=lambda err, _m: errors.append(err))
        ck.flush(20)
    finally:
        ck.close()
    out["confluent-kafka"] = errors[0].name() if errors and errors[0] is not None else "ok"

    async def aio() -> str:
        p = AIOKafkaProducer(bootstrap_servers=bootstrap, request_timeout_ms=10000, **sasl)
        await p.start()
        try:
            await p.send_and_wait(topic, b"x")
            return "ok"
        except Exception as e:  # noqa: BLE001 - the outcome is the exception's name
            return type(e).__name__
        finally:
            await p.stop()

    out["aiokafka"] = asyncio.run(aio())
    if kcat is not None:
        r = subprocess.run(
            [
                kcat,
                "-b",
                bootstrap,
                "-X",
                "security.protocol=SASL_PLAINTEXT",
                "-X",
                "sasl.mechanism=PLAIN",
                "-X",
                "sasl.username=bob",
                "-X",
                f"sasl.password={USERS['bob']}",
                "-X",
                "message.timeout.ms=10000",
                "-P",
                "-t",
                topic,
            ],
            input=b"x\n",
            capture_output=True,
            timeout=60,
        )
        out["kcat"] = (
            "Topic authorization failed"
            if b"Topic authorization failed" in r.stderr
            else f"exit {r.returncode}: {r.stderr[-200:]!r}"
        )
    return out


def test_each_client_sees_what_apache_kafka_makes_it_see_without_acls(secure_apache_kafka: Any) -> None:
    import shutil

    kcat = shutil.which("kcat")
    admin = {
        "security.protocol": "SASL_PLAINTEXT",
        "sasl.mechanisms": "PLAIN",
        "sasl.username": "admin",
        "sasl.password": USERS["admin"],
    }
    with fakekafka.Cluster(
        listeners="PLAINTEXT://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0",
        users=USERS,
        config={**ACL_CONFIG, "auto.create.topics.enable": "false"},
    ) as c:
        bootstrap = c.bootstrap_servers_for("SASL_PLAINTEXT")
        fake = _client_outcomes(bootstrap, {**admin, "bootstrap.servers": bootstrap}, kcat)
    bootstrap = secure_apache_kafka.bootstrap_servers_for("SASL_PLAINTEXT")
    real = _client_outcomes(bootstrap, {**admin, "bootstrap.servers": bootstrap}, kcat)
    assert fake == real
    assert fake["kafka-python"] == "TopicAuthorizationFailedError"
    assert fake["confluent-kafka"] == "TOPIC_AUTHORIZATION_FAILED"
    assert fake["aiokafka"] == "TopicAuthorizationFailedError"


# --- the KIP-848 and KIP-932 group APIs under ACLs, against both ---------------------------------------------

GROUP_ACLS = [
    _creation("TOPIC", "gp-ok", "User:alice", "READ"),
    _creation("TOPIC", "gp-desc", "User:alice", "DESCRIBE"),
    _creation("GROUP", "alice-", "User:alice", "READ", "PREFIXED"),
    _creation("GROUP", "alice-empty", "User:alice", "DELETE"),
]
GROUP_TOPICS = ("gp-ok", "gp-desc", "gp-secret")
"""alice may read gp-ok, only describe gp-desc, nothing on gp-secret; read (so describe) the groups alice-*."""


def _member_id() -> str:
    return base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")


def _group_exchanges(address: str) -> list[Any]:
    """As alice: each group API of KIP-848 and KIP-932 (and the classic ones those groups reach) asked about
    groups and topics alice may and may not use, while admin (a super user) shares her groups with a topic
    she may not see."""
    out: list[Any] = []
    admin = _login(address, "admin")
    assert all(r.error_code == 0 for r in admin.request(ApiKey.CREATE_ACLS, 3, {"creations": GROUP_ACLS}).results)
    _create_topics(admin, GROUP_TOPICS)
    ids = {
        t.name: t.topic_id
        for t in admin.request(
            ApiKey.METADATA, 12, {"topics": [{"name": n} for n in GROUP_TOPICS], "allow_auto_topic_creation": False}
        ).topics
    }
    names = {v: k for k, v in ids.items()}
    from fakekafka.wire.records import build_batch

    for n in GROUP_TOPICS:
        batch = build_batch([{"key": None, "value": b"v%d" % i, "timestamp": 1_700_000_000_000} for i in range(3)])
        _wait(
            lambda n=n, batch=batch: (
                admin.request(
                    ApiKey.PRODUCE,
                    11,
                    {
                        "acks": -1,
                        "timeout_ms": 10_000,
                        "transactional_id": None,
                        "topic_data": [{"name": n, "partition_data": [{"index": 0, "records": batch}]}],
                    },
                )
                .responses[0]
                .partition_responses[0]
                .error_code
                == 0
            ),
            "produce",
        )
    for g in ("alice-sg", "alice-empty"):
        r = admin.request(
            ApiKey.INCREMENTAL_ALTER_CONFIGS,
            1,
            {
                "validate_only": False,
                "resources": [
                    {
                        "resource_type": CONFIG_GROUP,
                        "resource_name": g,
                        "configs": [{"name": "share.auto.offset.reset", "config_operation": 0, "value": "earliest"}],
                    }
                ],
            },
        )
        assert r.responses[0].error_code == 0, r
    mine = {a["resource_name"] for a in GROUP_ACLS}  # the session's Kafka may hold other tests' ACLs
    _wait(
        lambda: (
            len(
                [
                    a
                    for a in _acls_of(admin.request(ApiKey.DESCRIBE_ACLS, 3, _describe_filter()).resources)
                    if a[1] in mine
                ]
            )
            == len(GROUP_ACLS)
        ),
        "ACLs",
    )
    alice = _login(address, "alice", timeout=45)  # a share fetch below waits up to 30 s

    def assigned(assignment: Any) -> list[str]:
        return sorted(names[t.topic_id] for t in assignment.topic_partitions) if assignment else []

    def cg_heartbeat(raw: RawClient, group: str, member: str, epoch: int, **sub: Any) -> Any:
        return _settled(lambda: consumer_group_heartbeat(raw, group, None, member, epoch, 1, **sub))

    def cg_until_assigned(raw: RawClient, group: str, **sub: Any) -> tuple[str, Any]:
        member = _member_id()
        r = cg_heartbeat(raw, group, member, 0, **sub)
        assert r.error_code == 0, r
        epoch = r.member_epoch
        deadline = time.monotonic() + 30
        while not (r.assignment and r.assignment.topic_partitions) and time.monotonic() < deadline:
            time.sleep(0.2)  # Kafka resolves a regex off the heartbeat
            r = cg_heartbeat(raw, group, member, epoch)
            assert r.error_code == 0, r
            epoch = r.member_epoch
        return member, r

    # ConsumerGroupHeartbeat
    r = cg_heartbeat(alice, "bob-g", _member_id(), 0, subscribed_topic_names=["gp-ok"])
    out.append(("cg heartbeat: group refused", r.error_code, r.error_message, r.member_id, r.member_epoch))
    r = cg_heartbeat(alice, "alice-cg", _member_id(), 0, subscribed_topic_names=["gp-ok", "gp-secret"])
    out.append(("cg heartbeat: topic refused", r.error_code, r.error_message, r.member_id, r.member_epoch))
    r = cg_heartbeat(alice, "alice-cg", _member_id(), 0, subscribed_topic_names=["gp-ok", "gp-desc"])
    out.append(("cg heartbeat: describable", r.error_code))
    _, r = cg_until_assigned(alice, "alice-rx", subscribed_topic_regex="gp-.*")
    out.append(("cg regex: only describable topics", r.error_code, assigned(r.assignment)))

    def cg_describe(raw: RawClient, groups: list[str]) -> list[Any]:
        d = raw.request(ApiKey.CONSUMER_GROUP_DESCRIBE, 1, {"group_ids": groups, "include_authorized_operations": True})
        return [
            (
                g.group_id,
                g.error_code,
                g.error_message,
                g.group_state,
                g.authorized_operations,
                sorted(assigned(m.assignment) for m in g.members),
            )
            for g in d.groups
        ]

    out.append(("cg describe", cg_describe(alice, ["alice-rx", "bob-g", "alice-none"])))
    _, r = cg_until_assigned(admin, "alice-rx", subscribed_topic_names=["gp-secret"])
    _wait(
        lambda: all(
            g.group_epoch == g.assignment_epoch and any("gp-secret" in assigned(m.target_assignment) for m in g.members)
            for g in admin.request(
                ApiKey.CONSUMER_GROUP_DESCRIBE, 1, {"group_ids": ["alice-rx"], "include_authorized_operations": False}
            ).groups
        ),
        "admin's assignment",
    )
    out.append(("cg describe: a topic hidden", cg_describe(alice, ["alice-rx", "bob-g"])))
    of = alice.request(
        ApiKey.OFFSET_FETCH,
        9,
        {
            "groups": [
                {
                    "group_id": "alice-rx",
                    "member_id": None,
                    "member_epoch": -1,
                    "topics": [{"name": n, "partition_indexes": [0]} for n in GROUP_TOPICS],
                }
            ],
            "require_stable": False,
        },
    )
    out.append(
        (
            "cg offset fetch",
            sorted(
                (
                    g.group_id,
                    g.error_code,
                    sorted((t.name, p.error_code, p.committed_offset) for t in g.topics for p in t.partitions),
                )
                for g in of.groups
            ),
        )
    )

    # ShareGroupHeartbeat
    def sg_heartbeat(raw: RawClient, group: str, member: str, epoch: int, topics: list[str] | None) -> Any:
        return _settled(
            lambda: raw.request(
                ApiKey.SHARE_GROUP_HEARTBEAT,
                1,
                {
                    "group_id": group,
                    "member_id": member,
                    "member_epoch": epoch,
                    "rack_id": None,
                    "subscribed_topic_names": topics,
                },
            )
        )

    r = sg_heartbeat(alice, "bob-g", _member_id(), 0, ["gp-ok"])
    out.append(("sg heartbeat: group refused", r.error_code, r.error_message, r.member_id, r.member_epoch))
    r = sg_heartbeat(alice, "alice-sg", _member_id(), 0, ["gp-ok", "gp-secret"])
    out.append(("sg heartbeat: topic refused", r.error_code, r.error_message, r.member_id, r.member_epoch))
    for bad in ("", "m" * 37):  # checked after the group's ACL, before the topics'
        r = sg_heartbeat(alice, "alice-sg", bad, 0, ["gp-secret"])
        out.append(("sg heartbeat: invalid member id", len(bad), r.error_code, r.error_message))
    member = _member_id()
    r = sg_heartbeat(alice, "alice-sg", member, 0, ["gp-ok", "gp-desc"])
    assert r.error_code == 0, r
    epoch, deadline = r.member_epoch, time.monotonic() + 30
    while len(assigned(r.assignment)) < 2 and time.monotonic() < deadline:
        time.sleep(0.2)  # Kafka assigns a share group apart from the joining heartbeat
        r = sg_heartbeat(alice, "alice-sg", member, epoch, None)
        epoch = r.member_epoch if r.error_code == 0 else epoch
    out.append(("sg heartbeat: describable topics assigned", r.error_code, assigned(r.assignment)))

    # ShareFetch and ShareAcknowledge
    def share_fetch(group: str, epoch: int, topics: list[str], acks: dict[str, list[Any]] | None = None,
                    max_wait_ms: int = 5000) -> Any:
        return alice.request(
            ApiKey.SHARE_FETCH,
            1,
            {
                "group_id": group,
                "member_id": member,
                "share_session_epoch": epoch,
                "max_wait_ms": max_wait_ms,
                "min_bytes": 1,
                "max_bytes": 1 << 20,
                "max_records": 500,
                "batch_size": 500,
                "forgotten_topics_data": [],
                "topics": [
                    {
                        "topic_id": ids[n],
                        "partitions": [
                            {
                                "partition_index": 0,
                                "partition_max_bytes": 1 << 20,
                                "acknowledgement_batches": (acks or {}).get(n, []),
                            }
                        ],
                    }
                    for n in topics
                ],
            },
        )

    def fetched(f: Any) -> list[Any]:
        return [
            f.error_code,
            f.error_message,
            sorted(
                (
                    names[t.topic_id],
                    p.error_code,
                    p.error_message,
                    p.acknowledge_error_code,
                    [(a.first_offset, a.last_offset) for a in p.acquired_records],
                )
                for t in f.responses
                for p in t.partitions
            ),
        ]

    out.append(("share fetch: group refused", fetched(share_fetch("bob-g", 0, ["gp-ok"]))))
    # up to 30 s for the records, answered as soon as they can be acquired: Kafka's share partition first loads its
    # state from the share coordinator, which took over 5 s in a loaded CI run (the answer then had no records)
    out.append(("share fetch", fetched(share_fetch("alice-sg", 0, list(GROUP_TOPICS), max_wait_ms=30_000))))
    batch = [{"first_offset": 0, "last_offset": 0, "acknowledge_types": [1]}]
    f = share_fetch("alice-sg", 1, ["gp-ok", "gp-desc"], {"gp-ok": batch, "gp-desc": batch})
    out.append(
        (
            "share fetch: acknowledgements",
            f.error_code,
            sorted(
                (names[t.topic_id], p.error_code, p.acknowledge_error_code, p.acknowledge_error_message)
                for t in f.responses
                for p in t.partitions
            ),
        )
    )

    def share_ack(group: str, epoch: int, topics: list[str]) -> Any:
        a = alice.request(
            ApiKey.SHARE_ACKNOWLEDGE,
            1,
            {
                "group_id": group,
                "member_id": member,
                "share_session_epoch": epoch,
                "topics": [
                    {
                        "topic_id": ids[n],
                        "partitions": [
                            {
                                "partition_index": 0,
                                "acknowledgement_batches": [
                                    {"first_offset": 1, "last_offset": 1, "acknowledge_types": [1]}
                                ],
                            }
                        ],
                    }
                    for n in topics
                ],
            },
        )
        return [
            a.error_code,
            a.error_message,
            sorted((names[t.topic_id], p.error_code, p.error_message) for t in a.responses for p in t.partitions),
        ]

    out.append(("share acknowledge: group refused", share_ack("bob-g", 1, ["gp-ok"])))
    out.append(("share acknowledge", share_ack("alice-sg", 2, ["gp-ok", "gp-desc", "gp-secret"])))

    # ShareGroupDescribe, then admin joins with a topic alice may not see
    def sg_describe() -> list[Any]:
        d = alice.request(
            ApiKey.SHARE_GROUP_DESCRIBE,
            1,
            {"group_ids": ["alice-sg", "bob-g", "alice-none"], "include_authorized_operations": True},
        )
        return [
            (
                g.group_id,
                g.error_code,
                g.error_message,
                g.group_state,
                g.authorized_operations,
                sorted(
                    sorted((t.topic_name, list(t.partitions)) for t in m.assignment.topic_partitions) for m in g.members
                ),
            )
            for g in d.groups
        ]

    out.append(("sg describe", sg_describe()))
    admin_member = _member_id()
    r = sg_heartbeat(admin, "alice-sg", admin_member, 0, ["gp-secret"])
    assert r.error_code == 0, r
    epoch, deadline = r.member_epoch, time.monotonic() + 30
    while not assigned(r.assignment) and time.monotonic() < deadline:
        time.sleep(0.2)
        r = sg_heartbeat(admin, "alice-sg", admin_member, epoch, None)
        epoch = r.member_epoch if r.error_code == 0 else epoch
    admin.request(
        ApiKey.SHARE_FETCH,
        1,
        {
            "group_id": "alice-sg",
            "member_id": admin_member,
            "share_session_epoch": 0,
            "max_wait_ms": 5000,
            "min_bytes": 1,
            "max_bytes": 1 << 20,
            "max_records": 500,
            "batch_size": 500,
            "forgotten_topics_data": [],
            "topics": [
                {
                    "topic_id": ids["gp-secret"],
                    "partitions": [
                        {"partition_index": 0, "partition_max_bytes": 1 << 20, "acknowledgement_batches": []}
                    ],
                }
            ],
        },
    )
    out.append(("sg describe: a topic hidden", sg_describe()))

    # Describe/Alter/DeleteShareGroupOffsets
    def describe_offsets(group: str, topics: list[str] | None) -> list[Any]:
        d = alice.request(
            ApiKey.DESCRIBE_SHARE_GROUP_OFFSETS,
            1,
            {
                "groups": [
                    {
                        "group_id": group,
                        "topics": None if topics is None else [{"topic_name": n, "partitions": [0]} for n in topics],
                    }
                ]
            },
        )
        return [
            (
                g.group_id,
                g.error_code,
                g.error_message,
                [
                    (
                        t.topic_name,
                        t.topic_id == ZERO_UUID,
                        [
                            (
                                p.partition_index,
                                p.error_code,
                                p.error_message,
                                p.leader_epoch,
                                (p.start_offset, p.lag) if p.error_code else "offsets",
                            )
                            for p in t.partitions
                        ],
                    )
                    for t in g.topics
                    if topics is not None or t.topic_name in ("gp-ok", "gp-secret")
                ],
            )
            for g in d.groups
        ]

    out.append(("describe share offsets: group refused", describe_offsets("bob-g", None)))
    out.append(("describe share offsets", describe_offsets("alice-sg", ["gp-secret", "gp-ok"])))
    _wait(
        lambda: any(
            t.topic_name == "gp-secret"
            for g in admin.request(
                ApiKey.DESCRIBE_SHARE_GROUP_OFFSETS, 1, {"groups": [{"group_id": "alice-sg", "topics": None}]}
            ).groups
            for t in g.topics
        ),
        "admin's share-partition",
    )
    out.append(("describe share offsets: all", describe_offsets("alice-sg", None)))

    def alter_offsets(group: str, topics: list[str]) -> list[Any]:
        a = alice.request(
            ApiKey.ALTER_SHARE_GROUP_OFFSETS,
            0,
            {
                "group_id": group,
                "topics": [
                    {"topic_name": n, "partitions": [{"partition_index": 0, "start_offset": 1}]} for n in topics
                ],
            },
        )
        return [
            a.error_code,
            a.error_message,
            [
                (
                    t.topic_name,
                    t.topic_id == ZERO_UUID,
                    [(p.partition_index, p.error_code, p.error_message) for p in t.partitions],
                )
                for t in a.responses
            ],
        ]

    out.append(("alter share offsets: group refused", alter_offsets("bob-g", ["gp-ok"])))
    out.append(("alter share offsets", alter_offsets("alice-empty", ["gp-ok", "gp-secret", "gp-nope", "gp-desc"])))

    def delete_offsets(group: str, topics: list[str]) -> list[Any]:
        d = alice.request(
            ApiKey.DELETE_SHARE_GROUP_OFFSETS, 0, {"group_id": group, "topics": [{"topic_name": n} for n in topics]}
        )
        return [
            d.error_code,
            d.error_message,
            [(t.topic_name, t.topic_id == ZERO_UUID, t.error_code, t.error_message) for t in d.responses],
        ]

    out.append(("delete share offsets: group refused", delete_offsets("bob-g", ["gp-ok"])))
    out.append(("delete share offsets: no DELETE", delete_offsets("alice-sg", ["gp-ok"])))
    out.append(("delete share offsets", delete_offsets("alice-empty", ["gp-ok", "gp-secret"])))

    # the classic APIs these groups reach
    lg = alice.request(ApiKey.LIST_GROUPS, 5, {"states_filter": [], "types_filter": []})
    out.append(
        (
            "list groups",
            lg.error_code,
            sorted((g.group_id, g.group_type) for g in lg.groups if g.group_id.startswith(("alice-", "bob-"))),
        )
    )
    dg = alice.request(
        ApiKey.DESCRIBE_GROUPS, 6, {"groups": ["alice-rx", "alice-sg", "bob-g"], "include_authorized_operations": True}
    )
    out.append(("describe groups", [(g.group_id, g.error_code, g.error_message) for g in dg.groups]))
    dl = alice.request(ApiKey.DELETE_GROUPS, 2, {"groups_names": ["bob-g", "alice-rx", "alice-empty", "bob-g"]})
    out.append(("delete groups", [(r.group_id, r.error_code) for r in dl.results]))
    return out


def test_group_protocol_apis_under_acls_answered_as_apache_kafka_answers(secure_apache_kafka: Any) -> None:
    """KIP-848 and KIP-932 groups under ACLs: a member is not assigned (nor shown) topics it may not describe, nor
    fetches or acknowledges records of topics it may not read, nor uses groups it has no ACL for; the same
    answers from fakekafka and Apache Kafka 4.4.0."""
    with fakekafka.Cluster(
        listeners="PLAINTEXT://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0",
        users=USERS,
        config={**ACL_CONFIG, "auto.create.topics.enable": "false"},
    ) as c:
        fake = _group_exchanges(c.bootstrap_servers_for("SASL_PLAINTEXT"))
    real = _group_exchanges(secure_apache_kafka.bootstrap_servers_for("SASL_PLAINTEXT"))
    pairs = list(zip(fake, real, strict=True))
    assert [f for f, r in pairs if f != r] == [r for f, r in pairs if f != r]
    found = dict((x[0], x[1:]) for x in fake)
    assert found["cg regex: only describable topics"] == (0, ["gp-desc", "gp-ok"])
    assert [p[:2] for p in found["share fetch"][0][2]] == [
        ("gp-desc", ErrorCode.TOPIC_AUTHORIZATION_FAILED),
        ("gp-ok", 0),
        ("gp-secret", ErrorCode.TOPIC_AUTHORIZATION_FAILED),
    ]
