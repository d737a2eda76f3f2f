"""kafka-python consumer groups against fakekafka: subscribe(), rebalances, static members, commits, admin.

The scenarios are shared (tests/integration/clients/group_scenarios.py); this file adds what is kafka-python's own:
the error `auto_offset_reset='none'` raises, CommitFailedError, and KafkaAdminClient's group calls.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from kafka import KafkaAdminClient, TopicPartition
from kafka import errors as kerrors
from kafka.admin import NewPartitions

import fakekafka
from fakekafka.testing.handle import ClusterHandle
from tests.integration.clients import group_scenarios as gs

pytestmark = pytest.mark.clients


@pytest.fixture
def cluster() -> Iterator[fakekafka.Cluster]:
    # A short initial rebalance delay (Kafka's default is 3000 ms) lets the first member's metadata arrive
    # before it assigns: a kafka-python leader that assigned without it rejoins when it comes, one more
    # rebalance, and in 3.0.12 that rejoin can be lost for good (see _kafka_python_driver in group_scenarios).
    with fakekafka.Cluster(config=gs.group_config(group_initial_rebalance_delay_ms=300)) as c:
        yield c


@pytest.fixture
def client(cluster: fakekafka.Cluster) -> Iterator[gs.BoundClient]:
    bound = gs.BoundClient(gs.python_client("kafka-python"), cluster)
    yield bound
    bound.close_all()


@pytest.fixture
def admin(cluster: fakekafka.Cluster) -> Iterator[KafkaAdminClient]:
    a = KafkaAdminClient(bootstrap_servers=cluster.bootstrap_servers)
    yield a
    a.close()


class TestSharedScenarios(gs.SharedScenarios):
    """Share, transitions, leave, crash, join, static restart, commit/resume, offset reset."""


def test_offset_reset_none_raises(cluster: fakekafka.Cluster, client: gs.BoundClient) -> None:
    cluster.create_topic("t", 6)
    cluster.produce("t", b"x", partition=0)
    member = client.member("fresh", ["t"], "m", auto_offset_reset="none")
    gs.wait_stable(cluster, "fresh", [member])
    errors = gs.wait_until(lambda: list(member.errors), "the consumer's error")
    assert all(isinstance(e, kerrors.NoOffsetForPartitionError) for e in errors), errors
    assert not member.records()
    assert cluster.committed("fresh") == {}


def test_stale_member_commit_is_refused(client: gs.BoundClient) -> None:
    error = gs.scenario_stale_commit(client)
    assert isinstance(error, kerrors.CommitFailedError), repr(error)


def test_partitions_added_are_assigned(client: gs.BoundClient, admin: KafkaAdminClient) -> None:
    gs.scenario_partitions_added(client, lambda topic, n: admin.create_partitions({topic: NewPartitions(n)}))


def test_admin_list_describe_delete_offsets(cluster: fakekafka.Cluster, client: gs.BoundClient,
                                            admin: KafkaAdminClient) -> None:
    cluster.create_topic("t", 6)
    members = client.members("g", ["t"], 3)
    view = gs.wait_stable(cluster, "g", members)
    expected = gs.produce_each(cluster, "t", range(6), 3)
    gs.wait_consumed(members, expected)
    gs.each(members, lambda m: m.commit())

    listed = {g["group_id"]: g for g in admin.list_groups()}
    assert listed["g"]["protocol_type"] == "consumer"
    assert listed["g"]["group_state"] == "Stable"

    described = admin.describe_groups(["g"])["g"]
    assert described["group_state"] == "Stable"
    assert described["protocol_type"] == "consumer" and described["protocol_data"] == view.protocol
    got = {m["client_id"]: m for m in described["members"]}
    assert sorted(got) == ["m0", "m1", "m2"]
    for m in view.members:
        assert got[m.client_id]["member_id"] == m.member_id
        assignment = got[m.client_id]["member_assignment"]
        assert {(tp["topic"], p) for tp in assignment["assigned_partitions"] for p in tp["partitions"]} == \
            gs.as_tps(m.assignment)

    assert admin.delete_groups(["g"]) == {"g": "NonEmptyGroupError"}
    offsets = admin.list_group_offsets({"g": None})["g"]
    assert {(tp.topic, tp.partition): om.offset for tp, om in offsets.items()} == {("t", p): 3 for p in range(6)}
    one = admin.list_group_offsets({"g": [TopicPartition("t", 4)]})["g"]
    assert {(tp.topic, tp.partition): om.offset for tp, om in one.items()} == {("t", 4): 3}
    assert admin.delete_group_offsets("g", [TopicPartition("t", 0)]) == \
        {TopicPartition("t", 0): kerrors.GroupSubscribedToTopicError}

    client.close_all()
    gs.wait_until(lambda: cluster.group("g").state == "Empty", "group Empty")
    assert {g["group_id"]: g["group_state"] for g in admin.list_groups()}["g"] == "Empty"
    assert admin.delete_group_offsets("g", [TopicPartition("t", 0)]) == {TopicPartition("t", 0): kerrors.NoError}
    assert cluster.committed("g") == {("t", p): 3 for p in range(1, 6)}
    assert admin.delete_groups(["g"]) == {"g": "OK"}
    assert cluster.group("g") is None
    assert "g" not in {g["group_id"] for g in admin.list_groups()}
    assert admin.delete_groups(["g"]) == {"g": "GroupIdNotFoundError"}


@pytest.mark.kafka_real
def test_session_timeout_below_broker_minimum_is_refused(kafka: ClusterHandle) -> None:
    """Below the broker's group.min.session.timeout.ms (6000 ms, Kafka's default) a join is refused: runs on
    the plugin's cluster, so `--kafka-real` checks it against Kafka."""
    kafka.create_topic("t", 6)
    client = gs.BoundClient(gs.python_client("kafka-python"), kafka)
    try:
        member = client.member("g", ["t"], "m", session_timeout_ms=1000)
        errors = gs.wait_until(lambda: list(member.errors), "the consumer's error")
        assert isinstance(errors[0], kerrors.InvalidSessionTimeoutError), errors
        assert kafka.group("g") is None
    finally:
        client.close_all()


def test_a_rebalance_outlasting_a_poll_keeps_every_member(cluster: fakekafka.Cluster, client: gs.BoundClient,
                                                          admin: KafkaAdminClient) -> None:
    """Partitions added while SyncGroup answers take 1.5 s, longer than the driver's 1 s poll: kafka-python 3.0.12
    would lose the leader's join left in flight (its session then ends and it is dropped from the group, as a
    loaded CI run saw); the driver has the next poll await it, and both members share the six partitions."""
    cluster.create_topic("grows", 3)
    members = client.members("g", ["grows"], 2, metadata_max_age_ms=300)
    before = gs.wait_stable(cluster, "g", members)
    cluster.inject_latency(1500, api="SyncGroup")
    admin.create_partitions({"grows": NewPartitions(6)})
    after = gs.wait_stable(cluster, "g", members, after_generation=before.generation_id)
    gs.assert_one_owner_each(after, "grows", 6)
