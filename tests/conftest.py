"""Shared fixtures: a fresh in-process broker per test (`broker`), the session's secure Apache Kafka, kcat; and
the tiers: each test carries the marker of its folder (tests/unit, tests/integration, tests/conformance).
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator

import pytest

import fakekafka

TIERS = {"unit": "unit", "integration": "integration", "conformance": "conformance"}
"""tests/<folder>: the tier marker its tests carry (pyproject's markers say what each tier is). The examples are
integration tests too (examples/conftest.py)."""

pytest_plugins = ["pytester"]


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Marks each test with its tier, by folder, before `-m` selects on it."""
    tests = config.rootpath / "tests"
    for item in items:
        if item.path.is_relative_to(tests):
            tier = TIERS.get(item.path.relative_to(tests).parts[0])
            if tier is not None:
                item.add_marker(tier)


@pytest.fixture
def broker() -> Iterator[fakekafka.Cluster]:
    """A started single-broker cluster on a free loopback port, stopped after the test."""
    with fakekafka.Cluster() as cluster:
        yield cluster


SECURE_USERS = {"admin": "admin-secret", "alice": "alice-secret", "bob": "bob-secret"}
SECURE_MECHANISMS = "PLAIN,SCRAM-SHA-256,SCRAM-SHA-512,OAUTHBEARER"
SECURE_SUPER_USERS = "User:admin;User:ANONYMOUS"
"""ANONYMOUS: Kafka's own brokers and controller talk over the PLAINTEXT listener, so they must be allowed."""
UNSECURED_OAUTHBEARER = {"listener.name.sasl_plaintext.oauthbearer.sasl.server.callback.handler.class":
                         "org.apache.kafka.common.security.oauthbearer.internals.unsecured."
                         "OAuthBearerUnsecuredValidatorCallbackHandler"}
"""The operator's opt-in to unsigned OAUTHBEARER tokens on the SASL_PLAINTEXT listener, by Kafka's config name:
without it fakekafka does not offer OAUTHBEARER there (issue 26)."""
NO_OAUTH_MECHANISMS = "PLAIN,SCRAM-SHA-256,SCRAM-SHA-512"
"""The secure Kafka's NOOAUTH listener's mechanisms: fakekafka's default, OAUTHBEARER not enabled."""


@pytest.fixture(scope="session")
def secure_apache_kafka() -> Iterator[object]:
    """One Apache Kafka 4.4.0 per session with a SASL_PLAINTEXT listener (PLAIN users from JAAS, SCRAM users written at
    format time: SECURE_USERS; OAUTHBEARER with unsecured tokens, its validator named as fakekafka needs it), a
    NOOAUTH listener (SASL_PLAINTEXT without OAUTHBEARER: NO_OAUTH_MECHANISMS) and the StandardAuthorizer
    (SECURE_SUPER_USERS), shared by the tests that compare SASL, SCRAM credentials and ACLs with fakekafka
    (tests/integration/test_security.py, tests/integration/test_acls.py): one JVM start instead of one per file."""
    from fakekafka.model.acl import STANDARD_AUTHORIZER
    from fakekafka.testing.apache_kafka import KafkaCluster, kafka_lib
    if kafka_lib() is None or shutil.which("java") is None:
        pytest.skip("Apache Kafka's jars or java are missing: run `bash .ci/install.sh`")
    jaas = "org.apache.kafka.common.security"
    configs = {
        "authorizer.class.name": STANDARD_AUTHORIZER, "super.users": SECURE_SUPER_USERS,
        "sasl.enabled.mechanisms": SECURE_MECHANISMS,
        "listener.name.nooauth.sasl.enabled.mechanisms": NO_OAUTH_MECHANISMS,
        **{f"listener.name.{listener}.plain.sasl.jaas.config":
           f"{jaas}.plain.PlainLoginModule required "
           + " ".join(f'user_{u}="{p}"' for u, p in SECURE_USERS.items()) + ";" for listener in ("sasl_plaintext",
                                                                                                 "nooauth")},
        **{f"listener.name.{listener}.{m}.sasl.jaas.config": f"{jaas}.scram.ScramLoginModule required;"
           for m in ("scram-sha-256", "scram-sha-512") for listener in ("sasl_plaintext", "nooauth")},
        # the unsecured OAUTHBEARER validator (Kafka's default, named here as fakekafka needs it) accepts unsecured
        # JWS tokens; the broker's own login needs a subject
        "listener.name.sasl_plaintext.oauthbearer.sasl.jaas.config":
            f'{jaas}.oauthbearer.OAuthBearerLoginModule required unsecuredLoginStringClaim_sub="admin";',
        **UNSECURED_OAUTHBEARER}
    with KafkaCluster(configs=configs, listeners=("SASL_PLAINTEXT", "NOOAUTH:SASL_PLAINTEXT"),
                      scram_users=SECURE_USERS) as kafka:
        yield kafka


@pytest.fixture
def kcat() -> str:
    path = shutil.which("kcat")
    if path is None:
        pytest.skip("kcat is not installed: run `bash .ci/install.sh` (or `apt-get install kcat`)")
    return path


def pytest_sessionfinish(session: pytest.Session) -> None:
    """Stops the children still running (tests/subproc.py), so an interrupted or `-x`-ended session leaves no
    broker or JVM behind."""
    from tests.subproc import stop_all
    stop_all()
