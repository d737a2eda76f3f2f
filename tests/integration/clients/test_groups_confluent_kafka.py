"""confluent-kafka (librdkafka) consumer groups against fakekafka: subscribe(), rebalances, static members,
commits, AdminClient's group calls.

The scenarios are shared (tests/integration/clients/group_scenarios.py); this file adds what is confluent-kafka's own:
auto.offset.reset=error, the KafkaError a refused commit raises, and AdminClient.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator

import pytest
from confluent_kafka import ConsumerGroupState, ConsumerGroupTopicPartitions, KafkaError, KafkaException
from confluent_kafka.admin import AdminClient, NewPartitions

import fakekafka
from fakekafka.testing.handle import ClusterHandle
from tests.integration.clients import group_scenarios as gs

pytestmark = pytest.mark.clients

TIMEOUT = 10.0


@pytest.fixture
def cluster() -> Iterator[fakekafka.Cluster]:
    with fakekafka.Cluster(config=gs.group_config()) as c:
        yield c


@pytest.fixture
def client(cluster: fakekafka.Cluster) -> Iterator[gs.BoundClient]:
    bound = gs.BoundClient(gs.python_client("confluent-kafka"), cluster)
    yield bound
    bound.close_all()


@pytest.fixture
def admin(cluster: fakekafka.Cluster) -> Iterator[AdminClient]:
    with AdminClient({"bootstrap.servers": cluster.bootstrap_servers}) as a:
        yield a


class TestSharedScenarios(gs.SharedScenarios):
    """Share, transitions, leave, crash, join, static restart, commit/resume, offset reset."""


def test_offset_reset_error(cluster: fakekafka.Cluster, client: gs.BoundClient) -> None:
    cluster.create_topic("t", 6)
    cluster.produce("t", b"x", partition=0)
    member = client.member("fresh", ["t"], "m", auto_offset_reset="none")
    gs.wait_stable(cluster, "fresh", [member])
    errors = gs.wait_until(lambda: list(member.errors), "the consumer's error")
    assert all(isinstance(e, KafkaException) and e.args[0].code() == KafkaError._AUTO_OFFSET_RESET
               for e in errors), errors
    assert not member.records()
    assert cluster.committed("fresh") == {}


def test_stale_member_commit_is_refused(client: gs.BoundClient) -> None:
    error = gs.scenario_stale_commit(client)
    assert isinstance(error, KafkaException), repr(error)
    assert error.args[0].code() in (KafkaError.UNKNOWN_MEMBER_ID, KafkaError.ILLEGAL_GENERATION,
                                    KafkaError.REBALANCE_IN_PROGRESS), error


def test_partitions_added_are_assigned(client: gs.BoundClient, admin: AdminClient) -> None:
    def add(topic: str, count: int) -> None:
        for future in admin.create_partitions([NewPartitions(topic, count)]).values():
            future.result(TIMEOUT)
    gs.scenario_partitions_added(client, add)


def test_admin_list_describe_delete_offsets(cluster: fakekafka.Cluster, client: gs.BoundClient,
                                            admin: AdminClient) -> None:
    cluster.create_topic("t", 6)
    members = client.members("g", ["t"], 3)
    view = gs.wait_stable(cluster, "g", members)
    gs.wait_consumed(members, gs.produce_each(cluster, "t", range(6), 3))
    gs.each(members, lambda m: m.commit())

    listed = admin.list_consumer_groups().result(TIMEOUT)
    assert not listed.errors
    found = {g.group_id: g for g in listed.valid}
    assert found["g"].state == ConsumerGroupState.STABLE
    assert not found["g"].is_simple_consumer_group

    described = admin.describe_consumer_groups(["g"])["g"].result(TIMEOUT)
    assert described.state == ConsumerGroupState.STABLE
    assert described.partition_assignor == view.protocol
    assert not described.is_simple_consumer_group
    assert described.coordinator.id == 1
    got = {m.client_id: m for m in described.members}
    assert sorted(got) == ["m0", "m1", "m2"]
    for m in view.members:
        assert got[m.client_id].member_id == m.member_id
        assert {(tp.topic, tp.partition) for tp in got[m.client_id].assignment.topic_partitions} == \
            gs.as_tps(m.assignment)

    with pytest.raises(KafkaException) as refused:
        admin.delete_consumer_groups(["g"])["g"].result(TIMEOUT)
    assert refused.value.args[0].code() == KafkaError.NON_EMPTY_GROUP

    offsets = admin.list_consumer_group_offsets([ConsumerGroupTopicPartitions("g")])["g"].result(TIMEOUT)
    assert {(tp.topic, tp.partition): tp.offset for tp in offsets.topic_partitions} == {("t", p): 3 for p in range(6)}

    client.close_all()
    gs.wait_until(lambda: cluster.group("g").state == "Empty", "group Empty")
    empty = admin.list_consumer_groups(states={ConsumerGroupState.EMPTY}).result(TIMEOUT)
    assert [g.group_id for g in empty.valid] == ["g"]
    admin.delete_consumer_groups(["g"])["g"].result(TIMEOUT)
    assert cluster.group("g") is None
    assert "g" not in {g.group_id for g in admin.list_consumer_groups().result(TIMEOUT).valid}
    with pytest.raises(KafkaException) as missing:
        admin.delete_consumer_groups(["g"])["g"].result(TIMEOUT)
    assert missing.value.args[0].code() == KafkaError.GROUP_ID_NOT_FOUND


def test_cooperative_sticky_member_joins_and_leaves(cluster: fakekafka.Cluster, client: gs.BoundClient) -> None:
    """KIP-429 over the classic protocol: members revoke only what moves and rejoin at once, so each change
    is two rebalances; the coordinator must take both, and no partition is ever owned twice or lost."""
    cluster.create_topic("t", 6)
    members = client.members("g", ["t"], 3, assignor="cooperative-sticky")
    before = gs.wait_stable(cluster, "g", members)
    assert before.protocol == "cooperative-sticky"
    kept = {m.client_id: m.assignment() for m in members}

    members.append(client.member("g", ["t"], "late", assignor="cooperative-sticky"))
    # the first rebalance only takes partitions away (the group is Stable in between with some unowned)
    gs.wait_until(lambda: any(m.client_id == "late" and m.assignment for m in cluster.group("g").members),
                  "the second rebalance, giving the new member partitions")
    after = gs.wait_stable(cluster, "g", members, after_generation=before.generation_id)
    owned = gs.assert_one_owner_each(after, "t", 6)
    assert all(owned[name] <= partitions for name, partitions in kept.items()), "sticky members lost partitions"
    assert owned["late"]
    assert after.generation_id >= before.generation_id + 2, "a cooperative join takes two rebalances"

    members.pop(0).close()
    last = gs.wait_stable(cluster, "g", members, after_generation=after.generation_id)
    gs.assert_one_owner_each(last, "t", 6)
    gs.assert_kafka_transitions(last.transitions)
    expected = gs.produce_each(cluster, "t", range(6), 2)
    assert Counter(gs.wait_consumed(members, expected)) == Counter(expected)


@pytest.mark.kafka_real
def test_session_timeout_below_broker_minimum_is_refused(kafka: ClusterHandle) -> None:
    """Below the broker's group.min.session.timeout.ms (6000 ms, Kafka's default) a join is refused: runs on
    the plugin's cluster, so `--kafka-real` checks it against Kafka."""
    kafka.create_topic("t", 6)
    client = gs.BoundClient(gs.python_client("confluent-kafka"), kafka)
    try:
        member = client.member("g", ["t"], "m", session_timeout_ms=1000)
        errors = gs.wait_until(lambda: list(member.errors), "the consumer's error")
        assert errors[0].args[0].code() == KafkaError.INVALID_SESSION_TIMEOUT, errors
        assert kafka.group("g") is None
    finally:
        client.close_all()
