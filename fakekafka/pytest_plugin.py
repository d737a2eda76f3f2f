"""pytest plugin (registered through the `pytest11` entry point; no conftest code needed).

Fixtures:
- `fakekafka` (alias `kafka`): a fresh in-process cluster for the test, configured by the
  `@pytest.mark.fakekafka(...)` marker if present; stopped after the test, so nothing leaks.
- `fakekafka_cluster`: a factory, `fakekafka_cluster(partitions=3, auto_create_topics=False,
  clock="frozen", topics={"orders": 6})`, for tests that want several clusters or build one late.

`--fakekafka-bootstrap=HOST:PORT` makes `fakekafka`/`kafka` a handle on that cluster instead (any
Kafka-compatible broker), so the same tests run against a real Kafka; tests that steer the cluster
(clock, faults) carry `@pytest.mark.fakekafka_only` and are skipped there. On a failing test, every
cluster it used adds a report section: topics with offsets, groups, and the last requests.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest

from fakekafka.embedded import Cluster, LoopThread
from fakekafka.handle import ClusterHandle
from fakekafka.model.config import BrokerConfig

__all__ = ["fakekafka", "fakekafka_cluster", "kafka"]

_CLUSTERS = pytest.StashKey[list[ClusterHandle]]()
_SETTINGS = {"partitions", "auto_create_topics", "clock", "topics", "brokers", "racks", "config",
             "group_initial_rebalance_delay_ms", "record"}


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("fakekafka")
    group.addoption("--fakekafka-bootstrap", metavar="HOST:PORT", default=None,
                    help="run the fakekafka/kafka fixtures against this Kafka-compatible cluster instead of an "
                         "in-process fakekafka")


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "fakekafka(partitions=1, auto_create_topics=True, clock=None, topics=None, brokers=1): "
                   "how the test's fakekafka cluster is set up (topics: {name: partitions})")
    config.addinivalue_line(
        "markers", "fakekafka_only: the test steers the cluster (clock, faults) and is skipped under "
                   "--fakekafka-bootstrap")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    bootstrap = config.getoption("--fakekafka-bootstrap")
    if not bootstrap:
        return
    skip = pytest.mark.skip(reason=f"steers the cluster, which needs an in-process fakekafka (running against "
                                   f"{bootstrap})")
    for item in items:
        if item.get_closest_marker("fakekafka_only"):
            item.add_marker(skip)


def _start(settings: dict[str, Any], loop_thread: LoopThread) -> Cluster:
    unknown = set(settings) - _SETTINGS
    if unknown:
        raise TypeError(f"unknown fakekafka setting(s): {', '.join(sorted(unknown))}; "
                        f"known: {', '.join(sorted(_SETTINGS))}")
    config = settings.get("config")
    if config is None:
        config = BrokerConfig(num_partitions=settings.get("partitions", 1),
                              auto_create_topics=settings.get("auto_create_topics", True),
                              group_initial_rebalance_delay_ms=settings.get("group_initial_rebalance_delay_ms", 0))
    return Cluster(config=config, clock=settings.get("clock"), brokers=settings.get("brokers", 1),
                   racks=settings.get("racks"), topics=settings.get("topics"),
                   record=settings.get("record")).start(loop_thread)


def _remote(bootstrap: str, settings: dict[str, Any]) -> ClusterHandle:
    from fakekafka.client import RemoteCluster
    remote = RemoteCluster(bootstrap)
    for name, partitions in (settings.get("topics") or {}).items():
        if name not in remote.topics():
            remote.create_topic(name, partitions)
    return remote


_LOOP = pytest.StashKey[LoopThread]()


def _loop_thread(config: pytest.Config) -> LoopThread:
    """The event-loop thread every cluster of the session is served from, with listening sockets it binds
    ahead of time: a cluster's start is then building its model and taking a served port. Each cluster
    still has its own state and its own ports, never shared with another cluster. Kept in the config's stash,
    not a session fixture: resolving even a cached fixture costs each test about as much as the start."""
    thread = config.stash.get(_LOOP, None)
    if thread is None:
        thread = config.stash[_LOOP] = LoopThread(listener_pool=8).start()
    return thread


def pytest_unconfigure(config: pytest.Config) -> None:
    thread = config.stash.get(_LOOP, None)
    if thread is not None:
        thread.stop()
        del config.stash[_LOOP]


@pytest.fixture
def fakekafka_cluster(request: pytest.FixtureRequest) -> Iterator[Callable[..., ClusterHandle]]:
    """A factory of clusters, each stopped when the test ends."""
    made: list[ClusterHandle] = []
    request.node.stash.setdefault(_CLUSTERS, []).extend([])  # make the report hook see this test's list
    bootstrap = request.config.getoption("--fakekafka-bootstrap")

    def make(**settings: Any) -> ClusterHandle:
        handle = _remote(bootstrap, settings) if bootstrap else _start(settings, _loop_thread(request.config))
        made.append(handle)
        request.node.stash[_CLUSTERS].append(handle)
        return handle

    yield make
    try:
        for handle in made:
            if isinstance(handle, Cluster):
                handle.stop(wait=False)
            else:
                handle.close()
    finally:
        # pytest keeps every item, stash included, until the session ends; the report hook needs the handles
        # only for setup/call reports, so drop them here or every test's stopped cluster stays in memory
        request.node.stash[_CLUSTERS].clear()


_MAIN = pytest.StashKey[ClusterHandle]()


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
    bootstrap = request.config.getoption("--fakekafka-bootstrap")
    handle = _remote(bootstrap, settings) if bootstrap else _start(settings, _loop_thread(request.config))
    stash = request.node.stash
    stash[_MAIN] = handle
    stash.setdefault(_CLUSTERS, []).append(handle)
    try:
        yield handle
    finally:
        try:
            if isinstance(handle, Cluster):
                handle.stop(wait=False)  # its ports close on the shared loop before any later cluster's work
            else:
                handle.close()
        finally:
            del stash[_MAIN]
            stash[_CLUSTERS].clear()  # see fakekafka_cluster: the stash lives as long as the session


@pytest.fixture
def fakekafka(request: pytest.FixtureRequest) -> Iterator[ClusterHandle]:
    """A fresh cluster for this test (see the `fakekafka` marker to configure it)."""
    yield from _test_cluster(request)


@pytest.fixture
def kafka(request: pytest.FixtureRequest) -> Iterator[ClusterHandle]:
    """Another name for the `fakekafka` fixture (the same cluster when a test asks for both)."""
    yield from _test_cluster(request)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Iterator[Any]:
    report = yield
    if report.failed and call.when in ("call", "setup"):
        for i, handle in enumerate(item.stash.get(_CLUSTERS, [])):
            try:
                text = handle.describe()
            except Exception as e:  # noqa: BLE001 - a report must not hide the test's own failure
                text = f"(could not describe the cluster: {e!r})"
            report.sections.append((f"fakekafka cluster {i + 1}", text))
    return report
