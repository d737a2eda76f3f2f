"""aiokafka consumer groups against fakekafka: subscribe(), rebalances, static members, commits, admin.

The shared scenarios (tests/integration/clients/group_scenarios.py) run each aiokafka consumer in an event loop of its
own on a thread of its own, as separate applications would. One test runs the broker and three
consumers in the test's own loop, as `async with fakekafka.Cluster()` is meant to be used.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Iterator
from typing import Any, TypeVar

import pytest
from aiokafka import AIOKafkaConsumer, TopicPartition
from aiokafka import errors as aerrors
from aiokafka.admin import AIOKafkaAdminClient, NewPartitions

import fakekafka
from fakekafka.testing.handle import ClusterHandle
from tests.integration.clients import group_scenarios as gs

pytestmark = pytest.mark.clients

T = TypeVar("T")


@pytest.fixture
def cluster() -> Iterator[fakekafka.Cluster]:
    with fakekafka.Cluster(config=gs.group_config()) as c:
        yield c


@pytest.fixture
def client(cluster: fakekafka.Cluster) -> Iterator[gs.BoundClient]:
    bound = gs.BoundClient(gs.python_client("aiokafka"), cluster)
    yield bound
    bound.close_all()


def with_admin(cluster: fakekafka.Cluster, action: Callable[[AIOKafkaAdminClient], Awaitable[T]]) -> T:
    """Runs `action` with an admin client in a short-lived loop of its own (the cluster runs on its thread)."""
    async def run() -> T:
        admin = AIOKafkaAdminClient(bootstrap_servers=cluster.bootstrap_servers)
        await admin.start()
        try:
            return await action(admin)
        finally:
            await admin.close()
    return asyncio.run(run())


class TestSharedScenarios(gs.SharedScenarios):
    """Share, transitions, leave, crash, join, static restart, commit/resume, offset reset."""


def test_offset_reset_none_raises(cluster: fakekafka.Cluster, client: gs.BoundClient) -> None:
    cluster.create_topic("t", 6)
    cluster.produce("t", b"x", partition=0)
    member = client.member("fresh", ["t"], "m", auto_offset_reset="none")
    gs.wait_stable(cluster, "fresh", [member])
    errors = gs.wait_until(lambda: list(member.errors), "the consumer's error")
    assert all(isinstance(e, aerrors.NoOffsetForPartitionError) for e in errors), errors
    assert not member.records()
    assert cluster.committed("fresh") == {}


def test_stale_member_commit_is_refused(client: gs.BoundClient) -> None:
    error = gs.scenario_stale_commit(client)
    assert isinstance(error, aerrors.CommitFailedError), repr(error)


def test_partitions_added_are_assigned(cluster: fakekafka.Cluster, client: gs.BoundClient) -> None:
    def add(topic: str, count: int) -> None:
        with_admin(cluster, lambda admin: admin.create_partitions({topic: NewPartitions(count)}))
    gs.scenario_partitions_added(client, add)


def test_admin_list_describe_offsets(cluster: fakekafka.Cluster, client: gs.BoundClient) -> None:
    # AIOKafkaAdminClient has no delete_consumer_groups
    cluster.create_topic("t", 6)
    members = client.members("g", ["t"], 3)
    view = gs.wait_stable(cluster, "g", members)
    gs.wait_consumed(members, gs.produce_each(cluster, "t", range(6), 3))
    gs.each(members, lambda m: m.commit())

    async def inspect(admin: AIOKafkaAdminClient) -> tuple[Any, Any, Any]:
        return (await admin.list_consumer_groups(), await admin.describe_consumer_groups(["g"]),
                await admin.list_consumer_group_offsets("g"))
    listed, described, offsets = with_admin(cluster, inspect)

    assert ("g", "consumer") in [tuple(g[:2]) for g in listed]
    (group,) = described[0].to_object()["groups"]
    assert (group["error_code"], group["group"], group["state"], group["protocol_type"], group["protocol"]) == \
        (0, "g", "Stable", "consumer", view.protocol)
    assert {m["client_id"]: (m["member_id"], m["member_assignment"]) for m in group["members"]} == \
        {m.client_id: (m.member_id, m.raw_assignment) for m in view.members}
    assert {(tp.topic, tp.partition): om.offset for tp, om in offsets.items()} == {("t", p): 3 for p in range(6)}


async def test_in_the_brokers_own_loop() -> None:
    """The broker and three consumers share the test's event loop; the group forms and splits the topic."""
    async with fakekafka.Cluster(config=gs.group_config()) as cluster:
        cluster.create_topic("t", 6)
        expected = gs.produce_each(cluster, "t", range(6), 2)
        consumers = [AIOKafkaConsumer("t", bootstrap_servers=cluster.bootstrap_servers, group_id="g",
                                      client_id=f"m{i}", auto_offset_reset="earliest", enable_auto_commit=False,
                                      heartbeat_interval_ms=gs.HEARTBEAT_MS, fetch_max_wait_ms=20) for i in range(3)]
        got: list[gs.Rec] = []

        async def run(consumer: AIOKafkaConsumer) -> None:
            await consumer.start()
            while True:
                for tp, records in (await consumer.getmany(timeout_ms=50)).items():
                    got.extend((tp.topic, tp.partition, r.offset, r.value) for r in records)

        tasks = [asyncio.create_task(run(c)) for c in consumers]
        try:
            async with asyncio.timeout(gs.TIMEOUT):
                while True:
                    view = cluster.group("g")
                    owned = {f"m{i}": c.assignment() for i, c in enumerate(consumers)}
                    if view and view.state == "Stable" and len(view.members) == 3 and all(
                            owned[m.client_id] == {TopicPartition(t, p) for t, p in gs.as_tps(m.assignment)}
                            for m in view.members) and set(got) >= expected:
                        break
                    await asyncio.sleep(gs.POLL_S)
            gs.assert_one_owner_each(view, "t", 6)
            assert sorted(got) == sorted(expected)
        finally:
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            await asyncio.gather(*(c.stop() for c in consumers))
        assert cluster.group("g").state == "Empty"


@pytest.mark.kafka_real
def test_session_timeout_below_broker_minimum_is_refused(kafka: ClusterHandle) -> None:
    """Below the broker's group.min.session.timeout.ms (6000 ms, Kafka's default) a join is refused: runs on
    the plugin's cluster, so `--kafka-real` checks it against Kafka."""
    kafka.create_topic("t", 6)
    client = gs.BoundClient(gs.python_client("aiokafka"), kafka)
    with pytest.raises(aerrors.InvalidSessionTimeoutError):
        client.member("g", ["t"], "m", session_timeout_ms=1000)  # start() joins the group
    assert kafka.group("g") is None
