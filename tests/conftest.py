"""Shared fixtures: a fresh in-process broker per test (the pytest plugin of a later issue builds on
`fakekafka.Cluster` the same way), the --kafka-real child runs' slowest tests in the terminal summary, and how
`pytest -n 2 --dist loadscope` (pytest-xdist) shares the tests out.

Under xdist every test module is one unit of work, so a module's fixtures (a JVM driver, a compat run) start
once, on one worker; the Spark tests are one unit, sharing one SparkSession. The units that run a subprocess
for minutes go first, each on its own where they share nothing, so they overlap each other and the many short
tests instead of ending the run alone.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from typing import Any

import pytest

import fakekafka

TIERS = {"unit": "unit", "integration": "integration", "conformance": "conformance"}
"""tests/<folder>: the tier marker its tests carry (pyproject's markers say what each tier is). The examples are
integration tests too (examples/conftest.py)."""

pytest_plugins = ["pytester", "tests.background"]  # the long subprocess runs start early


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


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    """Keeps the --kafka-real child runs' durations (tests/conformance/test_kafka_real.py) for the terminal summary;
    reports
    carry them from xdist workers too."""
    texts = [text for name, text in report.sections if "kafka-real child durations" in name]
    if texts and report.when == "call":
        _SECTIONS.extend(texts)


_SECTIONS: list[str] = []


def pytest_terminal_summary(terminalreporter: Any) -> None:
    for text in _SECTIONS:
        terminalreporter.write_sep("=", "slowest tests of a --kafka-real child run")
        terminalreporter.write(text if text.endswith("\n") else text + "\n")


SPARK_UNIT = ("tests/integration/spark/", "examples/spark_pipeline/")
"""Test paths that share the session's SparkSession (a JVM of its own): one unit of work under xdist."""

SOLO_TESTS = ("tests/conformance/test_kafka_real.py", "tests/conformance/test_compat.py")
"""Modules whose tests share no module fixture between them that matters: each test (the `report` fixture's
tests of test_compat together) is a unit of its own, so the minutes-long child runs go to both workers."""

LONG_FIRST = ("tests/conformance/test_kafka_real.py::test_spark_tests_pass_against_apache_kafka",
              "tests/conformance/test_compat_diff.py",
              "tests/conformance/test_kafka_real.py::test_client_tests_pass_against_apache_kafka",
              "tests/conformance/test_compat.py::report",
              "tests/conformance/test_compat.py::test_old_clients_see_fakekafka_as_kafka",
              "tests/conformance/test_compat.py::test_go_and_node_clients_see_fakekafka_as_kafka",
              "spark", "tests/integration/test_security.py", "tests/integration/clients/test_python_frameworks.py",
              "tests/integration/test_analyze.py", "tests/integration/clients/test_java_groups.py",
              "tests/conformance/test_api_sweep.py")
"""Units that take longest (a clean-clone run's --durations, longest first), handed out first; the rest follow in
collection order."""


def unit_of(nodeid: str) -> str:
    """The xdist unit of work a test belongs to (see the module docstring)."""
    path = nodeid.split("::", 1)[0]
    if path.startswith(SPARK_UNIT):
        return "spark"
    if path in SOLO_TESTS:
        name = nodeid.split("::", 1)[1].split("[", 1)[0]
        uses_report = path == "tests/conformance/test_compat.py" and name not in (
            "test_old_clients_see_fakekafka_as_kafka", "test_go_and_node_clients_see_fakekafka_as_kafka")
        return f"{path}::report" if uses_report else f"{path}::{name}"
    return path


try:
    from xdist.scheduler import LoadScopeScheduling
except ImportError:  # xdist is in the test extra; without it there is nothing to schedule
    LoadScopeScheduling = None


if LoadScopeScheduling is not None:
    class LongFirstScheduling(LoadScopeScheduling):
        """xdist's loadscope with this suite's units, the long ones first, and a worker given its next unit
        only when it is down to the one test it holds (so a long unit is not queued behind another)."""

        def _split_scope(self, nodeid: str) -> str:
            return unit_of(nodeid)

        def _assign_work_unit(self, node: Any) -> None:
            if not getattr(self, "_ordered", False):
                rank = {unit: i for i, unit in enumerate(LONG_FIRST)}
                units = sorted(self.workqueue.items(), key=lambda kv: rank.get(kv[0], len(rank)))
                self.workqueue.clear()
                self.workqueue.update(units)
                self._ordered = True
            super()._assign_work_unit(node)

        def _reschedule(self, node: Any) -> None:
            if node.shutting_down or not self.workqueue or self._pending_of(self.assigned_work[node]) <= 1:
                super()._reschedule(node)


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    """`--dist loadscope` (or load, loadfile, loadgroup) uses LongFirstScheduling: a plain `-n N` sends single
    tests, which would start a module's fixtures on every worker."""
    if LoadScopeScheduling is None or config.getvalue("dist") not in ("load", "loadscope", "loadfile", "loadgroup"):
        return None
    return LongFirstScheduling(config, log)
