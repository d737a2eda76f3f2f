"""Shared fixtures: a fresh in-process broker per test (`broker`), the session's secure Apache Kafka, kcat; and
the tiers: each test carries the marker of its folder (tests/unit, tests/integration, tests/conformance).
"""

from __future__ import annotations

import re
import shutil
from collections.abc import Iterator

import pytest

import fakekafka

TIERS = {"unit": "unit", "integration": "integration", "conformance": "conformance"}
"""tests/<folder>: the tier marker its tests carry (pyproject's markers say what each tier is). The examples are
integration tests too (examples/conftest.py)."""

pytest_plugins = ["pytester", "tests.hang_guard"]


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Marks each test with its tier, by folder, before `-m` selects on it, and with the xdist group of the costly
    fixture it shares (shared_fixture_group)."""
    tests = config.rootpath / "tests"
    for item in items:
        if item.path.is_relative_to(tests):
            tier = TIERS.get(item.path.relative_to(tests).parts[0])
            if tier is not None:
                item.add_marker(tier)
        group = shared_fixture_group(item)
        if group is not None and item.get_closest_marker("xdist_group") is None:
            item.add_marker(pytest.mark.xdist_group(group))


def shared_fixture_group(item: pytest.Item) -> str | None:
    """Under `pytest -n N --dist loadgroup` (.ci/test), the tests that share a module- or session-scoped fixture of
    this suite (a JVM, an Apache Kafka, a recorded run) go to one worker, so it starts once rather than once per
    worker: the group is the session fixture's name, else the module's path. Tests without one spread freely."""
    info = getattr(item, "_fixtureinfo", None)
    if info is None:
        return None
    module_group = None
    for name, defs in info.name2fixturedefs.items():
        fixture = defs[-1]
        if not fixture.baseid.startswith(("tests", "examples")) or name == "_cluster_ports":
            continue
        if fixture.scope == "session":
            # a session fixture of one test module keeps that module together (its tests may build on each
            # other's state there); one of a conftest is shared by its users wherever they are
            return fixture.baseid if fixture.baseid.endswith(".py") else name
        if fixture.scope in ("module", "package", "class"):
            module_group = item.nodeid.split("::")[0]
    return module_group


@pytest.fixture
def plain_cluster() -> Iterator[fakekafka.Cluster]:
    """A started single-broker cluster on a free loopback port, stopped after the test; markers ignored. Not named
    `broker`: pytest 9.1 loses a subfolder's conftest fixtures when the command line names a file of the folder
    above between that subfolder's files (pytest-dev/pytest#14971), and tests/integration/clients' `broker` (the
    `kafka` fixture) then fell back to a root fixture of that name silently; now it fails as not found."""
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


def secure_configs() -> dict[str, str]:
    """The secure Kafka's server.properties lines (secure_apache_kafka): SASL users and mechanisms per listener by
    Kafka's listener-prefixed configs (PLAIN users from JAAS), the StandardAuthorizer; fakekafka takes the same."""
    from fakekafka.model.acl import STANDARD_AUTHORIZER
    jaas = "org.apache.kafka.common.security"
    return {
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


@pytest.fixture(scope="session")
def secure_apache_kafka() -> Iterator[object]:
    """One Apache Kafka 4.4.0 per session with a SASL_PLAINTEXT listener (PLAIN users from JAAS, SCRAM users written at
    format time: SECURE_USERS; OAUTHBEARER with unsecured tokens, its validator named as fakekafka needs it), a
    NOOAUTH listener (SASL_PLAINTEXT without OAUTHBEARER: NO_OAUTH_MECHANISMS) and the StandardAuthorizer
    (SECURE_SUPER_USERS), shared by the tests that compare SASL, SCRAM credentials and ACLs with fakekafka
    (tests/integration/test_security.py, tests/integration/test_acls.py): one JVM start instead of one per file."""
    from fakekafka.testing.apache_kafka import KafkaCluster, kafka_lib
    if kafka_lib() is None or shutil.which("java") is None:
        pytest.skip("Apache Kafka's jars or java are missing: run `bash .ci/install.sh`")
    configs = secure_configs()
    with KafkaCluster(configs=configs, listeners=("SASL_PLAINTEXT", "NOOAUTH:SASL_PLAINTEXT"),
                      scram_users=SECURE_USERS) as kafka:
        yield kafka


@pytest.fixture
def kcat() -> str:
    path = shutil.which("kcat")
    if path is None:
        pytest.skip("kcat is not installed: run `bash .ci/install.sh` (or `apt-get install kcat`)")
    return path


REFUSED = re.compile(r"Connect to ipv[46]#\[?[0-9a-f.:]+\]?:(\d+) failed: Connection refused")
"""librdkafka's log line for a refused connection: a client still trying a broker whose port is closed."""
_stopped_by: dict[int, tuple[str, int]] = {}
"""Port of a fakekafka broker stopped during a test -> that test's id and place in the run (forgotten when a cluster
binds it again)."""
_leaks: dict[tuple[str, int], str] = {}
"""(test that stopped the cluster, port) -> the first later test during which a client still connected to it."""
_current_test: str | None = None
_tests_run = 0


@pytest.fixture(scope="session", autouse=True)
def _cluster_ports() -> Iterator[None]:
    """Keeps which test stopped the fakekafka cluster on each port (Cluster.start/stop), for the open-client
    check (pytest_runtest_logreport)."""
    def ports(cluster: fakekafka.Cluster) -> list[int]:
        return [port for b in cluster.state.brokers.values() for _, port in [(b.host, b.port), *b.endpoints.values()]
                if port]

    def start(self: fakekafka.Cluster, *args: object, **kwargs: object) -> fakekafka.Cluster:
        started = real_start(self, *args, **kwargs)
        for port in ports(self):
            _stopped_by.pop(port, None)
        return started

    def stop(self: fakekafka.Cluster, *args: object, **kwargs: object) -> None:
        if _current_test is not None and self._loop_thread is not None:
            _stopped_by.update(dict.fromkeys(ports(self), (_current_test, _tests_run)))
        real_stop(self, *args, **kwargs)

    real_start, real_stop = fakekafka.Cluster.start, fakekafka.Cluster.stop
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(fakekafka.Cluster, "start", start)
        mp.setattr(fakekafka.Cluster, "stop", stop)
        yield


@pytest.hookimpl(wrapper=True)
def pytest_runtest_protocol(item: pytest.Item) -> Iterator[object]:
    global _current_test, _tests_run
    _current_test = item.nodeid
    _tests_run += 1
    try:
        return (yield)
    finally:
        _current_test = None


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    """Every client a test opens, it closes: a librdkafka client still connecting to a fakekafka cluster that an
    earlier test stopped (its "Connect to ... failed: Connection refused" lines in this test's output) was left
    open by that test; the session fails naming it (pytest_sessionfinish). Only the test right after counts: a
    client left open retries at once (within its reconnect backoff), while a later test's own broker in a
    subprocess may be given the same port by the OS and its own clients' refusals (a restart) are no leak."""
    for match in REFUSED.finditer(report.capstderr + report.capstdout):
        port = int(match[1])
        owner, at = _stopped_by.get(port, (None, 0))
        if owner is not None and owner != report.nodeid and _tests_run == at + 1:
            _leaks.setdefault((owner, port), report.nodeid)


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node: object, error: object) -> None:
    """Under xdist, each worker checks its own tests (pytest_runtest_logreport) and hands what it found to the
    controller (pytest_sessionfinish), which reports it and fails the session."""
    for (owner, port), seen in getattr(node, "workeroutput", {}).get("open_clients", []):
        _leaks.setdefault((owner, port), seen)


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    for (owner, port), seen in sorted(_leaks.items()):
        terminalreporter.write_line(f"open client: {owner} left a Kafka client open; it still connected to its "
                                    f"stopped cluster (port {port}) during {seen}", red=True)


def pytest_sessionfinish(session: pytest.Session) -> None:
    """Stops the children still running (tests/subproc.py), so an interrupted or `-x`-ended session leaves no
    broker or JVM behind; fails the session when a test left a client open (pytest_runtest_logreport)."""
    from tests.subproc import stop_all
    stop_all()
    workeroutput = getattr(session.config, "workeroutput", None)
    if workeroutput is not None:
        workeroutput["open_clients"] = [[list(key), seen] for key, seen in _leaks.items()]
        return
    if _leaks and session.exitstatus == pytest.ExitCode.OK:
        session.exitstatus = pytest.ExitCode.TESTS_FAILED
