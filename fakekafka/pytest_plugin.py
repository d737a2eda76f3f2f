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

from fakekafka.embedded import Cluster
from fakekafka.handle import ClusterHandle
from fakekafka.model.config import BrokerConfig

__all__ = ["fakekafka", "fakekafka_cluster", "kafka"]

_CLUSTERS = pytest.StashKey[list[ClusterHandle]]()
_SETTINGS = {"partitions", "auto_create_topics", "clock", "topics", "brokers", "racks", "config",
             "group_initial_rebalance_delay_ms"}


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


def _start(settings: dict[str, Any]) -> Cluster:
    unknown = set(settings) - _SETTINGS
    if unknown:
        raise TypeError(f"unknown fakekafka setting(s): {', '.join(sorted(unknown))}; "
                        f"known: {', '.join(sorted(_SETTINGS))}")
    config = settings.get("config")
    if config is None:
        config = BrokerConfig(num_partitions=settings.get("partitions", 1),
                              auto_create_topics=settings.get("auto_create_topics", True),
                              group_initial_rebalance_delay_ms=settings.get("group_initial_rebalance_delay_ms", 0))
    cluster = Cluster(config=config, clock=settings.get("clock"), brokers=settings.get("brokers", 1),
                      racks=settings.get("racks")).start()
    for name, partitions in (settings.get("topics") or {}).items():
        cluster.create_topic(name, partitions)
    return cluster


def _remote(bootstrap: str, settings: dict[str, Any]) -> ClusterHandle:
    from fakekafka.client import RemoteCluster
    remote = RemoteCluster(bootstrap)
    for name, partitions in (settings.get("topics") or {}).items():
        if name not in remote.topics():
            remote.create_topic(name, partitions)
    return remote


@pytest.fixture
def fakekafka_cluster(request: pytest.FixtureRequest) -> Iterator[Callable[..., ClusterHandle]]:
    """A factory of clusters, each stopped when the test ends."""
    made: list[ClusterHandle] = []
    request.node.stash.setdefault(_CLUSTERS, []).extend([])  # make the report hook see this test's list
    bootstrap = request.config.getoption("--fakekafka-bootstrap")

    def make(**settings: Any) -> ClusterHandle:
        handle = _remote(bootstrap, settings) if bootstrap else _start(settings)
        made.append(handle)
        request.node.stash[_CLUSTERS].append(handle)
        return handle

    yield make
    try:
        for handle in made:
            closer = getattr(handle, "stop", None) or getattr(handle, "close", None)
            if closer is not None:
                closer()
    finally:
        # pytest keeps every item, stash included, until the session ends; the report hook needs the handles
        # only for setup/call reports, so drop them here or every test's stopped cluster stays in memory
        request.node.stash[_CLUSTERS].clear()


@pytest.fixture
def fakekafka(request: pytest.FixtureRequest, fakekafka_cluster: Callable[..., ClusterHandle]) -> ClusterHandle:
    """A fresh cluster for this test (see the `fakekafka` marker to configure it)."""
    marker = request.node.get_closest_marker("fakekafka")
    settings = dict(marker.kwargs) if marker is not None else {}
    if marker is not None and marker.args:
        raise TypeError("the fakekafka marker takes keyword arguments only, e.g. "
                        "@pytest.mark.fakekafka(topics={'orders': 6})")
    return fakekafka_cluster(**settings)


@pytest.fixture
def kafka(fakekafka: ClusterHandle) -> ClusterHandle:
    """Another name for the `fakekafka` fixture."""
    return fakekafka


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
