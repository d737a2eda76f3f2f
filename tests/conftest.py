"""Shared fixtures: a fresh in-process broker per test (the pytest plugin of a later issue builds on
`fakekafka.Cluster` the same way), and the --kafka-real child runs' slowest tests in the terminal summary."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from typing import Any

import pytest

import fakekafka

pytest_plugins = ["pytester"]


@pytest.fixture
def broker() -> Iterator[fakekafka.Cluster]:
    """A started single-broker cluster on a free loopback port, stopped after the test."""
    with fakekafka.Cluster() as cluster:
        yield cluster


SECURE_USERS = {"admin": "admin-secret", "alice": "alice-secret", "bob": "bob-secret"}
SECURE_MECHANISMS = "PLAIN,SCRAM-SHA-256,SCRAM-SHA-512,OAUTHBEARER"
SECURE_SUPER_USERS = "User:admin;User:ANONYMOUS"
"""ANONYMOUS: Kafka's own brokers and controller talk over the PLAINTEXT listener, so they must be allowed."""


@pytest.fixture(scope="session")
def secure_apache_kafka() -> Iterator[object]:
    """One Apache Kafka 4.4.0 per session with a SASL_PLAINTEXT listener (PLAIN users from JAAS, SCRAM users written at
    format time: SECURE_USERS; OAUTHBEARER with unsecured tokens) and the StandardAuthorizer
    (SECURE_SUPER_USERS), shared by the tests that compare SASL, SCRAM credentials and ACLs with fakekafka
    (tests/test_security.py, tests/test_acls.py): one JVM start instead of one per file."""
    from fakekafka.apache_kafka import KafkaCluster, kafka_lib
    from fakekafka.model.acl import STANDARD_AUTHORIZER
    if kafka_lib() is None or shutil.which("java") is None:
        pytest.skip("Apache Kafka's jars or java are missing: run `bash .ci/install.sh`")
    jaas = "org.apache.kafka.common.security"
    configs = {
        "authorizer.class.name": STANDARD_AUTHORIZER, "super.users": SECURE_SUPER_USERS,
        "sasl.enabled.mechanisms": SECURE_MECHANISMS,
        "listener.name.sasl_plaintext.plain.sasl.jaas.config":
            f"{jaas}.plain.PlainLoginModule required "
            + " ".join(f'user_{u}="{p}"' for u, p in SECURE_USERS.items()) + ";",
        **{f"listener.name.sasl_plaintext.{m}.sasl.jaas.config": f"{jaas}.scram.ScramLoginModule required;"
           for m in ("scram-sha-256", "scram-sha-512")},
        # the default OAUTHBEARER validator accepts unsecured JWS tokens; the broker's own login needs a subject
        "listener.name.sasl_plaintext.oauthbearer.sasl.jaas.config":
            f'{jaas}.oauthbearer.OAuthBearerLoginModule required unsecuredLoginStringClaim_sub="admin";'}
    with KafkaCluster(configs=configs, listeners=("SASL_PLAINTEXT",), scram_users=SECURE_USERS) as kafka:
        yield kafka


@pytest.fixture
def kcat() -> str:
    path = shutil.which("kcat")
    if path is None:
        pytest.skip("kcat is not installed: run `bash .ci/install.sh` (or `apt-get install kcat`)")
    return path


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    """Keeps the --kafka-real child runs' durations (tests/test_kafka_real.py) for the terminal summary; reports
    carry them from xdist workers too."""
    texts = [text for name, text in report.sections if "kafka-real child durations" in name]
    if texts and report.when == "call":
        _SECTIONS.extend(texts)


_SECTIONS: list[str] = []


def pytest_terminal_summary(terminalreporter: Any) -> None:
    for text in _SECTIONS:
        terminalreporter.write_sep("=", "slowest tests of a --kafka-real child run")
        terminalreporter.write(text if text.endswith("\n") else text + "\n")

