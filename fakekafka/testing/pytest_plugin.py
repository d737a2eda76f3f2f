"""pytest plugin (registered through the `pytest11` entry point; no conftest code needed).

Fixtures:
- `fakekafka` (alias `kafka`): a fresh in-process cluster for the test, configured by the
  `@pytest.mark.fakekafka(...)` marker if present; stopped after the test, so nothing leaks.
- `kafka_proxy`: a `fakekafka.Proxy` in front of the test's cluster (whichever `kafka` is).
- `kill_broker`: `kill_broker(node_id)` crashes a broker of the test's cluster, fakekafka's or --kafka-real's.
- `fakekafka_cluster`: a factory, `fakekafka_cluster(partitions=3, auto_create_topics=False,
  clock="frozen", topics={"orders": 6})`, for tests that want several clusters or build one late.

`--fakekafka-bootstrap=HOST:PORT` makes `fakekafka`/`kafka` a handle on that cluster instead (any
Kafka-compatible broker), so the same tests run against a real Kafka; tests that steer the cluster
(clock, faults) carry `@pytest.mark.fakekafka_only` and are skipped there, as are tests whose marker asks
for what only fakekafka has (`clock`, `config`, `racks`, `record`) or for more brokers than the cluster has.
`--kafka-real` is that route with a cluster the plugin starts itself: Apache Kafka as a JVM
(`fakekafka.testing.apache_kafka`, KRaft), once per session and per (`brokers`, `auto_create_topics`) the tests ask
for (`brokers=3` gets a shared 3-node cluster), stopped when the session ends.
As the plugin owns that cluster, it deletes every topic and group after each test, so each test starts on
an empty cluster as it does on fakekafka. `cluster_for(config)` gives a wider fixture (a module's) the same
choice. On a failing test, every cluster it used adds a report section: topics with offsets, groups, and the
last requests.
"""

from __future__ import annotations

import shutil
import warnings
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

import pytest

from fakekafka.testing.stash import CLUSTERS

if TYPE_CHECKING:  # imported where a fixture or hook needs them: a session that never asks for a cluster
    # (most of those with fakekafka installed) must not pay for the cluster, the model and the wire layer
    from fakekafka.proxy import Proxy
    from fakekafka.testing.apache_kafka import KafkaCluster
    from fakekafka.testing.client import RemoteCluster
    from fakekafka.testing.embedded import Cluster, LoopThread
    from fakekafka.testing.handle import ClusterHandle

__all__ = ["CLIENT_NOISE", "cluster_for", "fakekafka", "fakekafka_cluster", "kafka", "kafka_proxy", "kill_broker"]

_SECURITY = ("listeners", "advertised_listeners", "listener_security_protocol_map", "sasl_enabled_mechanisms",
             "ssl_client_auth", "users")
"""Listener, TLS and SASL settings (Kafka's broker config names); the handle's `pki` has the CA and client
certificate files when a listener is SSL or SASL_SSL."""
_SETTINGS = {"partitions", "auto_create_topics", "clock", "topics", "brokers", "racks", "config",
             "group_initial_rebalance_delay_ms", "record", "data_dir", "schema_registry", "chaos", "kafka_version",
             "client_telemetry", *_SECURITY}
_FAKE_SETTINGS = ("clock", "config", "racks", "record", "data_dir", "schema_registry", "chaos", "client_telemetry",
                  *_SECURITY)
"""Marker settings only an in-process fakekafka has: a remote cluster's test that asks for one is skipped."""

REAL_KAFKA_CONFIGS: dict[str, str | None] = {"num.partitions": None, "group.initial.rebalance.delay.ms": "0"}
"""--kafka-real's changes to the launcher's broker configs: the fixture's defaults (groups formed at once;
num.partitions left to Kafka's default, 1, so DescribeConfigs reports it as DEFAULT_CONFIG as fakekafka does);
auto.create.topics.enable follows the marker."""

REAL_KAFKA_LOG_DIRS = 2
"""--kafka-real's brokers have two log dirs each (JBOD), so AlterReplicaLogDirs and kafka-reassign-partitions with
log dirs can be compared (tests/integration/test_kafka_cli.py gives its fakekafka two as well); clients do not see
it."""


CLIENT_NOISE = (
    # kafka-python 3 reads each of its protocol schemas with importlib.resources.read_text, deprecated in Python
    # 3.11 and 3.12 (undeprecated in 3.13): two warnings per schema, over 200 in a run that uses the client. The
    # open_text one is read_text calling open_text inside importlib; a user's own read_text still warns.
    "ignore:read_text is deprecated:DeprecationWarning:kafka.protocol.schemas.load_json",
    "ignore:open_text is deprecated:DeprecationWarning:importlib.resources._legacy",
)
"""Warnings the clients people drive fakekafka with raise from their own code, filtered from every run with the
plugin (ini-level: a -W or @pytest.mark.filterwarnings of the user's still wins)."""


def pytest_addoption(parser: pytest.Parser, pluginmanager: pytest.PytestPluginManager) -> None:
    from fakekafka.testing import chaos_pytest
    pluginmanager.register(chaos_pytest, "fakekafka-chaos")  # --chaos-seeds and the chaos marker's runs
    group = parser.getgroup("fakekafka")
    group.addoption("--fakekafka-bootstrap", metavar="HOST:PORT", default=None,
                    help="run the fakekafka/kafka fixtures against this Kafka-compatible cluster instead of an "
                         "in-process fakekafka")
    group.addoption("--kafka-real", action="store_true", default=False,
                    help="start Apache Kafka (a JVM, KRaft; its jars from `fakekafka kafka install` or "
                         "$FAKEKAFKA_KAFKA_LIB) once for the session and run the fakekafka/kafka fixtures against "
                         "it; tests marked fakekafka_only are skipped")


class RealKafka:
    """--kafka-real's clusters, one per (broker count, auto-create) the tests ask for (auto-create is a static
    broker config), each started on first use (a session that selects no test using the fixtures starts no
    JVM) and stopped when the session ends. A start that failed fails every later test that needs it at once,
    with the same message, instead of trying again."""

    def __init__(self) -> None:
        self.clusters: dict[_Key, KafkaCluster] = {}
        self.failures: dict[_Key, str] = {}
        self.retired: dict[str, KafkaCluster] = {}
        """Clusters a test killed a node of, by bootstrap address: stopped when that test releases them."""
        self.started: list[tuple[_Key, KafkaCluster]] = []
        self.restarts: list[str] = []
        """Why a cluster was started again (a node's JVM had died), for the terminal summary."""

    def bootstrap(self, brokers: int, auto_create: bool, version: str | None = None) -> str:
        """A cluster's bootstrap servers; `version`: an older Kafka than the one --kafka-real runs (OLDER_KAFKA)."""
        key = (brokers, auto_create, version)
        if key in self.failures:
            pytest.fail(self.failures[key], pytrace=False)
        cluster = self.clusters.get(key)
        dead = [] if cluster is None else [p for p in cluster.procs if p.poll() is not None]
        if cluster is not None and dead:
            # a node's JVM died (killed by a timeout, the OOM killer): this test and the next get a new cluster
            self.restarts.append(f"{_describe(key)}: node JVM pid {dead[0].pid} exited with {dead[0].returncode}; "
                                 f"its log: {cluster.log(cluster.procs.index(dead[0]) + 1, tail=300)!r}")
            del self.clusters[key]
            cluster.stop(graceful=False)
            cluster = None
        if cluster is None:
            from fakekafka.testing.apache_kafka import KafkaCluster, KafkaUnavailable
            configs: dict[str, str | None] = {**REAL_KAFKA_CONFIGS,
                                              "auto.create.topics.enable": str(auto_create).lower()}
            try:
                cluster = KafkaCluster(brokers, configs=configs, log_dirs=REAL_KAFKA_LOG_DIRS,
                                       **({"version": version} if version else {})).start()
            except KafkaUnavailable as e:
                self.failures[key] = f"--kafka-real: Apache Kafka ({_describe(key)}) did not start: {e}"
                pytest.fail(self.failures[key], pytrace=False)
            self.clusters[key] = cluster
            self.started.append((key, cluster))
        return cluster.bootstrap_servers

    def kill_node(self, bootstrap: str, node_id: int) -> None:
        """SIGKILLs a node of the cluster at `bootstrap` and retires that cluster: a later test asking for the
        same kind gets a fresh one (a crashed node's JVM is not brought back: that is a start of its own)."""
        key, cluster = next(((k, c) for k, c in self.clusters.items() if c.bootstrap_servers == bootstrap),
                            (None, self.retired.get(bootstrap)))
        if cluster is None:
            raise ValueError(f"no --kafka-real cluster at {bootstrap}")
        if key is not None:
            del self.clusters[key]
            self.retired[bootstrap] = cluster
        cluster.kill_node(node_id)

    def stop(self) -> None:
        """At the session's end: SIGKILL at once, the clusters are thrown away. A controlled shutdown of three nodes
        waits out its timeouts once two are gone (the last loses its quorum), and pytest-xdist does not wait that
        long for a worker to end: the worker went and the last node's JVM was left running."""
        for cluster in [*self.clusters.values(), *self.retired.values()]:
            cluster.stop(graceful=False)
        self.clusters.clear()
        self.retired.clear()


_REAL = pytest.StashKey[RealKafka]()


_Key = tuple[int, bool, str | None]
"""A --kafka-real cluster's kind: brokers, auto-create, the older Kafka version it runs (None: the current one)."""


def _describe(key: _Key) -> str:
    brokers, auto_create, version = key
    return (f"{brokers} node{'s' if brokers > 1 else ''}{'' if auto_create else ', auto-create off'}"
            f"{f', Kafka {version}' if version else ''}")


def _check_real_kafka(config: pytest.Config) -> None:
    """`--kafka-real` where it cannot work is a usage error before any test runs, saying what to install."""
    if config.getoption("--fakekafka-bootstrap"):
        raise pytest.UsageError("--kafka-real and --fakekafka-bootstrap exclude each other: --kafka-real starts "
                                "the cluster, --fakekafka-bootstrap names one")
    from fakekafka.testing.apache_kafka import INSTALL_HINT, KAFKA_VERSION, kafka_lib
    if kafka_lib() is None:
        raise pytest.UsageError(f"--kafka-real: Apache Kafka {KAFKA_VERSION}'s jars are not installed: "
                                f"{INSTALL_HINT}, or set FAKEKAFKA_KAFKA_LIB to a directory holding them")
    if shutil.which("java") is None:
        raise pytest.UsageError("--kafka-real: java is not on PATH (Apache Kafka needs Java 17 or newer)")
    config.stash[_REAL] = RealKafka()


def _remote_target(config: pytest.Config) -> str | None:
    """What runs in place of an in-process fakekafka: the bootstrap address given, "Apache Kafka" for
    --kafka-real, or None (fakekafka)."""
    if config.getoption("--kafka-real"):
        from fakekafka.testing.apache_kafka import KAFKA_VERSION
        return f"Apache Kafka {KAFKA_VERSION} (--kafka-real)"
    return config.getoption("--fakekafka-bootstrap")


def pytest_configure(config: pytest.Config) -> None:
    if config.getoption("--kafka-real"):
        _check_real_kafka(config)
    for line in CLIENT_NOISE:
        config.addinivalue_line("filterwarnings", line)
    config.addinivalue_line(
        "markers", "fakekafka(partitions=1, auto_create_topics=True, clock=None, topics=None, brokers=1, "
                   "data_dir=None, schema_registry=False): how the test's fakekafka cluster is set up (topics: "
                   "{name: partitions}; data_dir: logs and metadata kept there across clusters; schema_registry: "
                   "a Schema Registry beside it, at kafka.schema_registry_url)")
    config.addinivalue_line(
        "markers", "fakekafka_only: the test steers the cluster (clock, faults) and is skipped under "
                   "--fakekafka-bootstrap and --kafka-real")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    target = _remote_target(config)
    if not target:
        return
    skip = pytest.mark.skip(reason=f"steers the cluster, which needs an in-process fakekafka (running against "
                                   f"{target})")
    for item in items:
        if item.get_closest_marker("fakekafka_only"):
            item.add_marker(skip)


def _start(settings: dict[str, Any], loop_thread: LoopThread | None) -> Cluster:
    from fakekafka.model.config import BrokerConfig
    from fakekafka.testing.embedded import Cluster
    unknown = set(settings) - _SETTINGS
    if unknown:
        raise TypeError(f"unknown fakekafka setting(s): {', '.join(sorted(unknown))}; "
                        f"known: {', '.join(sorted(_SETTINGS))}")
    config = settings.get("config")
    if config is None or isinstance(config, dict):  # a dict: broker configs by Kafka's names
        config = BrokerConfig.from_properties(
            config or {}, num_partitions=settings.get("partitions", 1),
            auto_create_topics=settings.get("auto_create_topics", True),
            group_initial_rebalance_delay_ms=settings.get("group_initial_rebalance_delay_ms", 0),
            kafka_version=settings.get("kafka_version"))  # checked by the names of the release it stands in for
    return Cluster(config=config, clock=settings.get("clock"), brokers=settings.get("brokers", 1),
                   racks=settings.get("racks"), topics=settings.get("topics"),
                   record=settings.get("record"), data_dir=settings.get("data_dir"),
                   schema_registry=settings.get("schema_registry") or False, chaos=settings.get("chaos"),
                   kafka_version=settings.get("kafka_version"),
                   client_telemetry=bool(settings.get("client_telemetry")),
                   **{name: settings[name] for name in _SECURITY if name in settings}).start(loop_thread)


def _remote(config: pytest.Config, settings: dict[str, Any]) -> RemoteCluster:
    """A handle on the remote cluster for a test's settings; skips the test when they need fakekafka."""
    from fakekafka.model.errors import ApiError
    from fakekafka.testing.client import RemoteCluster
    unknown = set(settings) - _SETTINGS
    if unknown:
        raise TypeError(f"unknown fakekafka setting(s): {', '.join(sorted(unknown))}; "
                        f"known: {', '.join(sorted(_SETTINGS))}")
    fake = [name for name in _FAKE_SETTINGS if settings.get(name) is not None]
    if fake:
        pytest.skip(f"the fakekafka marker's {', '.join(fake)} needs an in-process fakekafka (running against "
                    f"{_remote_target(config)})")
    brokers, auto_create = settings.get("brokers", 1), settings.get("auto_create_topics", True)
    real = config.stash.get(_REAL, None)
    older = _older_kafka(settings.get("kafka_version"), real is not None, _remote_target(config))
    if real is not None:
        bootstrap = real.bootstrap(brokers, auto_create, older)
    else:
        bootstrap = config.getoption("--fakekafka-bootstrap")
    remote = RemoteCluster(bootstrap, default_partitions=settings.get("partitions", -1))
    if real is None:  # a cluster we did not start: skip a test it cannot serve
        have = len(remote._metadata(None).brokers)
        why = f"needs {brokers} brokers; the cluster at {bootstrap} has {have}" if have < brokers else None
        if "auto_create_topics" in settings and not why:
            try:
                theirs = remote.broker_config("auto.create.topics.enable")
            except ApiError:  # a broker without DescribeConfigs for brokers: its setting is unknown
                theirs = None
            if theirs is not None and (theirs == "true") != auto_create:
                why = (f"asks for auto_create_topics={auto_create}; the cluster at {bootstrap} has "
                       f"auto.create.topics.enable={theirs}")
        if why:
            remote.close()
            pytest.skip(why)
    existing = remote.topics()
    for name, partitions in (settings.get("topics") or {}).items():
        if name not in existing:
            remote.create_topic(name, partitions)
    return remote


def _older_kafka(kafka_version: str | None, real: bool, target: str | None) -> str | None:
    """The older Kafka a remote test's `kafka_version` asks for: under --kafka-real, Kafka 3.9.1 for "3.9" (skipped
    where its jars are missing, and for a release with no reference broker here); None for the current one. A
    cluster named by --fakekafka-bootstrap is whatever version it is: such a test is skipped there."""
    from fakekafka.model.releases import kafka_release
    release = kafka_release(kafka_version)
    if release is None:
        return None
    if not real:
        pytest.skip(f"the fakekafka marker's kafka_version={kafka_version!r} needs an in-process fakekafka or "
                    f"--kafka-real (running against {target})")
    from fakekafka.testing.apache_kafka import OLDER_KAFKA, kafka_lib
    if not OLDER_KAFKA.startswith(release.name + "."):
        pytest.skip(f"kafka_version={kafka_version!r}: --kafka-real has no Apache Kafka {release.name} to run "
                    f"(it runs {OLDER_KAFKA} for 3.9)")
    if kafka_lib(OLDER_KAFKA) is None:
        pytest.skip(f"kafka_version={kafka_version!r}: Apache Kafka {OLDER_KAFKA}'s jars are not installed (run "
                    f"`fakekafka kafka install --version {OLDER_KAFKA}`)")
    return OLDER_KAFKA


def _release(config: pytest.Config, handle: ClusterHandle) -> None:
    """Ends a test's use of a cluster: stops an in-process one; for --kafka-real's own cluster, deletes every
    topic and group the test left (a cluster named by --fakekafka-bootstrap is not ours to empty)."""
    from fakekafka.testing.embedded import Cluster
    if isinstance(handle, Cluster):
        handle.stop(wait=False)  # its ports close on the shared loop before any later cluster's work
        return
    from fakekafka.testing.client import RemoteCluster
    assert isinstance(handle, RemoteCluster)
    real = config.stash.get(_REAL, None)
    retired = real.retired.pop(handle.bootstrap_servers, None) if real is not None else None
    if retired is not None:  # a test killed one of its nodes: nothing to empty, the cluster goes
        handle.close()
        retired.stop(graceful=False)
        return
    try:
        if real is not None:
            kept = handle.clear()
            if kept:
                warnings.warn(f"--kafka-real: group(s) {', '.join(kept)} still had members after the test (a "
                              f"consumer left open?) and stay on the cluster", pytest.PytestWarning, stacklevel=1)
    finally:
        handle.close()


@contextmanager
def cluster_for(config: pytest.Config, /, **settings: Any) -> Iterator[ClusterHandle]:
    """A cluster for a fixture wider than a test (a module's, say, that runs one client program for all its
    tests), chosen as the `kafka` fixture chooses: in-process fakekafka (its own loop thread: it may outlive
    the session's), or a handle on the remote cluster under --fakekafka-bootstrap or --kafka-real. Released on
    exit as the fixture's are (stopped, or, for --kafka-real's cluster, emptied)."""
    from fakekafka.testing.embedded import Cluster
    if _remote_target(config):
        handle: ClusterHandle = _remote(config, settings)
    else:
        handle = _start(settings, None)
    try:
        yield handle
    finally:
        if isinstance(handle, Cluster):
            handle.stop()
        else:
            _release(config, handle)


_LOOP = pytest.StashKey["LoopThread"]()


def _loop_thread(config: pytest.Config) -> LoopThread:
    """The event-loop thread every cluster of the session is served from, with listening sockets it binds
    ahead of time: a cluster's start is then building its model and taking a served port. Each cluster
    still has its own state and its own ports, never shared with another cluster. Kept in the config's stash,
    not a session fixture: resolving even a cached fixture costs each test about as much as the start."""
    thread = config.stash.get(_LOOP, None)
    if thread is None:
        from fakekafka.net.loop_thread import LoopThread
        thread = config.stash[_LOOP] = LoopThread(listener_pool=8).start()
    return thread


def pytest_unconfigure(config: pytest.Config) -> None:
    thread = config.stash.get(_LOOP, None)
    if thread is not None:
        thread.stop()
        del config.stash[_LOOP]
    real = config.stash.get(_REAL, None)
    if real is not None:
        real.stop()


def pytest_terminal_summary(terminalreporter: Any, config: pytest.Config) -> None:
    real = config.stash.get(_REAL, None)
    for key, cluster in real.started if real is not None else []:
        terminalreporter.write_line(f"--kafka-real: Apache Kafka ({_describe(key)}) at {cluster.bootstrap_servers}, "
                                    f"started in {cluster.start_seconds} s")
    for restart in real.restarts if real is not None else []:
        terminalreporter.write_line(f"--kafka-real: started again, a node had died: {restart}")


@pytest.fixture
def fakekafka_cluster(request: pytest.FixtureRequest) -> Iterator[Callable[..., ClusterHandle]]:
    """A factory of clusters, each stopped when the test ends."""
    made: list[ClusterHandle] = []
    request.node.stash.setdefault(CLUSTERS, []).extend([])  # make the report hook see this test's list
    remote = bool(_remote_target(request.config))

    def make(**settings: Any) -> ClusterHandle:
        handle = _remote(request.config, settings) if remote else _start(settings, _loop_thread(request.config))
        made.append(handle)
        request.node.stash[CLUSTERS].append(handle)
        return handle

    yield make
    try:
        for handle in made:
            _release(request.config, handle)
    finally:
        # pytest keeps every item, stash included, until the session ends; the report hook needs the handles
        # only for setup/call reports, so drop them here or every test's stopped cluster stays in memory
        request.node.stash[CLUSTERS].clear()


_MAIN = pytest.StashKey["ClusterHandle"]()


def _test_cluster(request: pytest.FixtureRequest) -> Iterator[ClusterHandle]:
    """The test's cluster, shared by `fakekafka` and `kafka` (two fixtures of one level rather than a chain:
    pytest's own cost per fixture is larger than starting the cluster)."""
    existing = request.node.stash.get(_MAIN, None)
    if existing is not None:  # the test asked for both names: one cluster
        yield existing
        return
    marker = request.node.get_closest_marker("fakekafka")
    settings = dict(marker.kwargs) if marker is not None else {}
    if marker is not None and marker.args:
        raise TypeError("the fakekafka marker takes keyword arguments only, e.g. "
                        "@pytest.mark.fakekafka(topics={'orders': 6})")
    if settings.get("chaos") not in (None, False):
        from fakekafka.testing.chaos_pytest import chaos_for
        settings["chaos"] = chaos_for(request, settings["chaos"])
    remote = bool(_remote_target(request.config))
    handle = _remote(request.config, settings) if remote else _start(settings, _loop_thread(request.config))
    stash = request.node.stash
    stash[_MAIN] = handle
    stash.setdefault(CLUSTERS, []).append(handle)
    try:
        yield handle
    finally:
        try:
            _release(request.config, handle)
        finally:
            del stash[_MAIN]
            stash[CLUSTERS].clear()  # see fakekafka_cluster: the stash lives as long as the session


@pytest.fixture
def fakekafka(request: pytest.FixtureRequest) -> Iterator[ClusterHandle]:
    """A fresh cluster for this test (see the `fakekafka` marker to configure it)."""
    yield from _test_cluster(request)


@pytest.fixture
def kafka(request: pytest.FixtureRequest) -> Iterator[ClusterHandle]:
    """Another name for the `fakekafka` fixture (the same cluster when a test asks for both)."""
    yield from _test_cluster(request)


@pytest.fixture
def kafka_proxy(request: pytest.FixtureRequest, kafka: ClusterHandle) -> Iterator[Proxy]:
    """A `fakekafka.Proxy` in front of the test's cluster, whichever it is (in-process fakekafka, the
    --fakekafka-bootstrap cluster, --kafka-real's Kafka): clients given `kafka_proxy.bootstrap_servers` reach
    the cluster only through it, and the test steers it with the fake cluster's fault methods. Stopped after
    the test; its per-API summary is a report section of a failing test."""
    from fakekafka.proxy import Proxy
    proxy = Proxy(kafka, summary=True).start(_loop_thread(request.config))
    request.node.stash[_PROXIES] = [*request.node.stash.get(_PROXIES, []), proxy]
    try:
        yield proxy
    finally:
        proxy.stop()


_PROXIES = pytest.StashKey[list["Proxy"]]()


@pytest.fixture
def kill_broker(request: pytest.FixtureRequest) -> Callable[[int], None]:
    """`kill_broker(node_id)` crashes a broker of the test's cluster (the `kafka` fixture's), whichever it is:
    fakekafka's `kill_broker`, or under --kafka-real a SIGKILL of that node's JVM. A --kafka-real cluster with
    a killed node is retired (stopped after the test; the next test asking for one gets a fresh cluster). A
    cluster named by --fakekafka-bootstrap is not ours to crash: the test is skipped."""
    from fakekafka.testing.embedded import Cluster
    handle = request.getfixturevalue("kafka")
    real = request.config.stash.get(_REAL, None)
    if not isinstance(handle, Cluster) and real is None:
        pytest.skip(f"kills a broker, which needs fakekafka or --kafka-real (running against "
                    f"{_remote_target(request.config)})")

    def kill(node_id: int) -> None:
        if isinstance(handle, Cluster):
            handle.kill_broker(node_id)
            return
        assert real is not None
        real.kill_node(handle.bootstrap_servers, node_id)
        handle.close()  # its connections may be to the dead node; they are made again on next use

    return kill


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Iterator[Any]:
    report = yield
    if report.failed and call.when in ("call", "setup"):
        for i, handle in enumerate(item.stash.get(CLUSTERS, [])):
            try:
                text = handle.describe()
            except Exception as e:  # noqa: BLE001 - a report must not hide the test's own failure
                text = f"(could not describe the cluster: {e!r})"
            report.sections.append((f"fakekafka cluster {i + 1}", text))
        for i, proxy in enumerate(item.stash.get(_PROXIES, [])):
            report.sections.append((f"fakekafka proxy {i + 1}", proxy.summary_table()))
    if call.when == "teardown":
        item.stash.get(_PROXIES, []).clear()
    return report
