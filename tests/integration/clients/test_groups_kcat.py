"""kcat -G (librdkafka's balanced consumer, in kcat's own process) against fakekafka.

Each member is a kcat process (tests/integration/clients/group_scenarios.py, `KcatMember`): its assignment is read
from its log, its records from stdout, SIGTERM closes it cleanly and SIGKILL crashes it. kcat commits
through librdkafka's auto-commit only and has no admin API, so the explicit-offset and stale-commit
scenarios and the admin calls are left to the library clients; partitions are added on the cluster.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

import fakekafka
from tests.integration.clients import group_scenarios as gs

pytestmark = pytest.mark.clients


@pytest.fixture
def cluster() -> Iterator[fakekafka.Cluster]:
    with fakekafka.Cluster(config=gs.group_config()) as c:
        yield c


@pytest.fixture
def client(cluster: fakekafka.Cluster, kcat: str) -> Iterator[gs.BoundClient]:
    bound = gs.BoundClient(gs.kcat_client(kcat), cluster)
    yield bound
    bound.close_all()


class TestSharedScenarios(gs.SharedScenarios):
    """Share, transitions, leave, crash, join, static restart, commit/resume, offset reset."""


def test_offset_reset_error(cluster: fakekafka.Cluster, client: gs.BoundClient) -> None:
    cluster.create_topic("t", 6)
    cluster.produce("t", b"x", partition=0)
    member = client.member("fresh", ["t"], "m", auto_offset_reset="none")
    gs.wait_stable(cluster, "fresh", [member])
    assert isinstance(member, gs.KcatMember)
    # librdkafka (auto.offset.reset=error) reports it per partition and kcat exits on the error
    gs.wait_until(lambda: any("no previously committed offset available" in line for line in member.stderr_lines),
                  "kcat to report that there is no offset to reset to")
    assert member.process.wait(gs.TIMEOUT) != 0
    assert not member.records()
    assert cluster.committed("fresh") == {}


def test_partitions_added_are_assigned(cluster: fakekafka.Cluster, client: gs.BoundClient) -> None:
    def add(topic: str, count: int) -> None:
        cluster.call(lambda: cluster.state.create_partitions(topic, count))
    gs.scenario_partitions_added(client, add)
