"""KIP-848 consumer groups end to end: Kafka's Java client 4.4 with `group.protocol=consumer` (the broker
computes assignments; ConsumerGroupHeartbeat, no JoinGroup/SyncGroup) against fakekafka, and under
`pytest --kafka-real` against Apache Kafka 4.4.0 with the same assertions.

One JVM (tests/integration/clients/java/ConsumerProtocolDriver.java) runs every scenario against one broker: members
joining and leaving one at a time (each step to a complete, balanced assignment), the server-side `range`
assignor, a static member leaving and coming back under a new member id (then leaving for good), commits
and a resume, a regular expression subscription picking up a new topic, and an assignor the broker does not
have (partitions added: tests/integration/clients/test_confluent_consumer_protocol.py). Each step waits on heartbeats:
0.5 s apart on fakekafka by default and on the reference Kafka as the launcher starts it (Kafka's own default is
5 s, which makes this run take a minute).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

import fakekafka
from fakekafka.testing.pytest_plugin import cluster_for
from tests import javautil
from tests.javautil import JavaRun

pytestmark = [pytest.mark.clients, pytest.mark.kafka_real]

JAVA_SOURCE = Path(__file__).resolve().parent / "java" / "ConsumerProtocolDriver.java"
RUN_TIMEOUT_S = 240


@pytest.fixture(scope="module")
def java(request: pytest.FixtureRequest) -> Iterator[JavaRun]:
    classes = javautil.compile_java(JAVA_SOURCE)
    with cluster_for(request.config) as cluster:
        yield javautil.run_driver(JavaRun(cluster), classes, "ConsumerProtocolDriver",  # type: ignore[arg-type]
                                  cluster.bootstrap_servers, timeout=RUN_TIMEOUT_S)


def test_members_join_and_leave(java: JavaRun) -> None:
    r = java.result("join_leave")
    assert r["alone"] == {"t": [0, 1, 2, 3, 4, 5]}
    assert sorted(r["sizes3"]) == [2, 2, 2]
    d = r["describe3"]
    assert (d["type"], d["state"], d["assignor"]) == ("Consumer", "Stable", "uniform")
    # one epoch per member joining (Kafka 4.4 spends one more on a new group: compat/KNOWN_DIFFERENCES.md)
    assert d["group_epoch"] == d["assignment_epoch"] >= 3
    assert [m["client_id"] for m in d["members"]] == ["A", "B", "C"]
    for m in d["members"]:
        assert m["member_epoch"] == d["group_epoch"]
        assert m["assignment"] == m["target"] and sum(len(ps) for ps in m["assignment"].values()) == 2
    assert r["listed"] == [{"protocol": "consumer", "type": "Consumer", "state": "Stable"}]
    assert r["classic_listing"] is False
    assert r["callbacks_a"] is True
    assert r["empty_state"] == "Empty"


def test_range_assignor(java: JavaRun) -> None:
    r = java.result("range")
    assert r == {"same_partitions_of_both": True, "ranges": [[0, 1], [2, 3]], "assignor": "range"}


def test_static_member_comes_back_to_its_partitions(java: JavaRun) -> None:
    r = java.result("static")
    assert r["members_while_away"] == 2  # it left with epoch -2: still a member, its partitions kept
    assert r["same_partitions"] is True
    assert r["group_epoch_unchanged"] is True
    assert r["empty_after_leaving_for_good"] is True  # closed with GroupMembershipOperation.LEAVE_GROUP: epoch -1


def test_commit_and_resume(java: JavaRun) -> None:
    r = java.result("commit_resume")
    assert r["committed"] == {"t-0": 5, "t-1": 5}
    assert r["resumed_records"] == 2
    assert r["committed_seen_by_member"] == 2


def test_regex_subscription(java: JavaRun) -> None:
    r = java.result("pattern")
    assert r["first"] == {"a1": [0]}
    assert r["after_new_topic"] == {"a1": [0], "a2": [0, 1]}


def test_unknown_assignor(java: JavaRun) -> None:
    error = java.result("unknown_assignor")["error"]
    assert error.startswith("UnsupportedAssignorException: ServerAssignor bogus is not supported.")


def test_no_server_problem(java: JavaRun) -> None:
    if isinstance(java.cluster, fakekafka.Cluster):
        assert java.server_problems == []
        assert java.api_calls["ConsumerGroupHeartbeat"] > 0 and java.api_calls["JoinGroup"] == 0
