"""`group.consumer.migration.policy` (KIP-848's upgrade and downgrade paths) over raw requests, with the same
assertions on fakekafka and (`pytest --kafka-real`) on Apache Kafka 4.4.0, for the three policies other than the
default (bidirectional: tests/integration/test_mixed_groups_wire.py,
tests/integration/clients/test_java_mixed_groups.py).

The policy is a static broker config in Kafka 4.4 (not in GroupCoordinatorConfig's reconfigurable set), so under
--kafka-real each policy gets a one-node Kafka of its own, one after the other (a JVM start each, ~12 s here),
which runs the three scenarios:
- upgrade: a consumer-protocol member (ConsumerGroupHeartbeat at epoch 0) meets a classic group with a member:
  taken in (upgrade, the group is a consumer group) or refused GROUP_ID_NOT_FOUND with Kafka's words;
- classic join and downgrade: a classic JoinGroup meets a consumer group with a member: refused
  INCONSISTENT_GROUP_PROTOCOL under disabled, else taken in; when the consumer-protocol member then leaves, the
  group turns classic only if the policy allows the downgrade;
- a static consumer-protocol member's return on the classic protocol: the downgrade done at once, kept from, or
  the JoinGroup refused.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import pytest

import fakekafka
from fakekafka.model.config import BrokerConfig
from fakekafka.testing.pytest_plugin import REAL_KAFKA_CONFIGS
from fakekafka.wire import ApiKey, ErrorCode
from fakekafka.wire.messages.consumer_protocol_assignment import VERSIONS as ASSIGNMENT
from fakekafka.wire.messages.consumer_protocol_subscription import VERSIONS as SUBSCRIPTION
from tests.rawclient import RawClient, eventually

pytestmark = pytest.mark.kafka_real  # must pass on Apache Kafka too (`pytest --kafka-real -m kafka_real`)

TOPIC = "policy-t"
SESSION_MS = 30_000
POLICY = "group.consumer.migration.policy"


@pytest.fixture(scope="module", params=["upgrade", "downgrade", "disabled"])
def broker(request: pytest.FixtureRequest) -> Iterator[tuple[str, str]]:
    """(policy, bootstrap) of a broker with that policy: fakekafka, or a Kafka of its own under --kafka-real."""
    policy = request.param
    if request.config.getoption("--fakekafka-bootstrap"):
        pytest.skip("a remote cluster's migration policy is its own (a static broker config)")
    if request.config.getoption("--kafka-real"):
        from fakekafka.testing.apache_kafka import KafkaCluster

        with KafkaCluster(
            1, configs={**REAL_KAFKA_CONFIGS, "auto.create.topics.enable": "false", POLICY: policy}
        ) as real:
            yield policy, real.bootstrap_servers
    else:
        cluster = fakekafka.Cluster(config=BrokerConfig.from_properties({POLICY: policy}, auto_create_topics=False))
        with cluster:
            yield policy, cluster.bootstrap_servers


@pytest.fixture
def raw(broker: tuple[str, str]) -> Iterator[RawClient]:
    client = RawClient(broker[1])
    if client.request(
        ApiKey.CREATE_TOPICS,
        7,
        {
            "topics": [{"name": TOPIC, "num_partitions": 2, "replication_factor": 1, "assignments": [], "configs": []}],
            "timeout_ms": 30_000,
            "validate_only": False,
        },
    ).topics[0].error_code not in (ErrorCode.NONE, ErrorCode.TOPIC_ALREADY_EXISTS):
        raise AssertionError("the topic was not created")
    try:
        yield client
    finally:
        client.close()


def _group_id(raw: RawClient) -> str:
    group = f"policy-{uuid.uuid4().hex[:8]}"
    eventually(
        "the group coordinator",
        lambda: (
            raw.request(ApiKey.FIND_COORDINATOR, 4, {"key_type": 0, "coordinator_keys": [group]})
            .coordinators[0]
            .error_code
            == ErrorCode.NONE
            or None
        ),
    )
    # a fresh Kafka answers FindCoordinator before its coordinator for this group's partition is loaded
    eventually(
        "the group coordinator loaded",
        lambda: (
            raw.request(ApiKey.DESCRIBE_GROUPS, 5, {"groups": [group], "include_authorized_operations": False})
            .groups[0]
            .error_code
            == ErrorCode.NONE
            or None
        ),
    )
    return group


def _subscription() -> bytes:
    return b"\x00\x00" + SUBSCRIPTION[0].build({"topics": [TOPIC], "user_data": None})


def _assignment(partitions: list[int]) -> bytes:
    return b"\x00\x00" + ASSIGNMENT[0].build(
        {"assigned_partitions": [{"topic": TOPIC, "partitions": partitions}], "user_data": None}
    )


def _join(raw: RawClient, group: str, member_id: str, instance: str | None = None) -> Any:
    return raw.request(
        ApiKey.JOIN_GROUP,
        5,
        {
            "group_id": group,
            "session_timeout_ms": SESSION_MS,
            "rebalance_timeout_ms": SESSION_MS,
            "member_id": member_id,
            "group_instance_id": instance,
            "protocol_type": "consumer",
            "protocols": [{"name": "range", "metadata": _subscription()}],
        },
    )


def _heartbeat(raw: RawClient, group: str, member_id: str, epoch: int, instance: str | None = None) -> Any:
    return raw.request(
        ApiKey.CONSUMER_GROUP_HEARTBEAT,
        1,
        {
            "group_id": group,
            "member_id": member_id,
            "member_epoch": epoch,
            "instance_id": instance,
            "rack_id": None,
            "rebalance_timeout_ms": SESSION_MS if epoch == 0 else -1,
            "subscribed_topic_names": [TOPIC] if epoch == 0 else None,
            "server_assignor": None,
            "topic_partitions": [] if epoch == 0 else None,
        },
    )


def _group_type(raw: RawClient, group: str) -> str | None:
    listed = raw.request(ApiKey.LIST_GROUPS, 5, {"states_filter": [], "types_filter": []}).groups
    return next((g.group_type for g in listed if g.group_id == group), None)


def _leave(raw: RawClient, group: str, member_id: str) -> None:
    raw.request(
        ApiKey.LEAVE_GROUP,
        5,
        {"group_id": group, "members": [{"member_id": member_id, "group_instance_id": None, "reason": None}]},
    )


def test_a_consumer_protocol_member_upgrades_a_classic_group_only_where_the_policy_allows(
    broker: tuple[str, str], raw: RawClient
) -> None:
    policy = broker[0]
    group = _group_id(raw)
    first = _join(raw, group, "")
    assert first.error_code == ErrorCode.MEMBER_ID_REQUIRED
    classic = first.member_id
    joined = _join(raw, group, classic)
    assert joined.error_code == ErrorCode.NONE
    synced = raw.request(
        ApiKey.SYNC_GROUP,
        5,
        {
            "group_id": group,
            "generation_id": joined.generation_id,
            "member_id": classic,
            "group_instance_id": None,
            "protocol_type": "consumer",
            "protocol_name": "range",
            "assignments": [{"member_id": classic, "assignment": _assignment([0, 1])}],
        },
    )
    assert synced.error_code == ErrorCode.NONE
    member = uuid.uuid4().hex[:22]
    hb = _heartbeat(raw, group, member, 0)
    if policy == "upgrade":
        assert (hb.error_code, hb.member_epoch) == (ErrorCode.NONE, joined.generation_id + 1)
        assert _group_type(raw, group) == "consumer"
        assert _heartbeat(raw, group, member, -1).error_code == ErrorCode.NONE
    else:
        assert (hb.error_code, hb.error_message) == (
            ErrorCode.GROUP_ID_NOT_FOUND,
            f"Cannot upgrade classic group {group} to consumer group because online upgrade is disabled.",
        )
        assert _group_type(raw, group) == "classic"
        _leave(raw, group, classic)  # an empty classic group is taken over whatever the policy
        taken = _heartbeat(raw, group, member, 0)
        assert taken.error_code == ErrorCode.NONE and taken.member_epoch > 0
        assert _group_type(raw, group) == "consumer"
        assert _heartbeat(raw, group, member, -1).error_code == ErrorCode.NONE
        return
    _leave(raw, group, classic)


def test_a_classic_member_joins_a_consumer_group_and_its_leaving_peer_downgrades_it_where_allowed(
    broker: tuple[str, str], raw: RawClient
) -> None:
    policy = broker[0]
    group = _group_id(raw)
    member = uuid.uuid4().hex[:22]
    hb = _heartbeat(raw, group, member, 0)
    assert hb.error_code == ErrorCode.NONE and hb.member_epoch > 0
    first = _join(raw, group, "")
    if policy == "disabled":
        assert (first.error_code, first.member_id, first.generation_id) == (
            ErrorCode.INCONSISTENT_GROUP_PROTOCOL,
            "",
            -1,
        )
        assert _group_type(raw, group) == "consumer"
        assert _heartbeat(raw, group, member, -1).error_code == ErrorCode.NONE
        first = _join(raw, group, "")  # an empty consumer group is taken over whatever the policy
        assert first.error_code == ErrorCode.MEMBER_ID_REQUIRED
        joined = _join(raw, group, first.member_id)
        assert (joined.error_code, _group_type(raw, group)) == (ErrorCode.NONE, "classic")
        _leave(raw, group, first.member_id)
        return
    assert first.error_code == ErrorCode.MEMBER_ID_REQUIRED
    classic = first.member_id
    joined = _join(raw, group, classic)
    assert (joined.error_code, joined.protocol_name, joined.leader, list(joined.members)) == (
        ErrorCode.NONE,
        "range",
        "",
        [],
    )  # answered by the consumer group: no leader, no barrier
    gen = joined.generation_id
    assert (
        raw.request(
            ApiKey.SYNC_GROUP,
            5,
            {
                "group_id": group,
                "generation_id": gen,
                "member_id": classic,
                "group_instance_id": None,
                "protocol_type": "consumer",
                "protocol_name": "range",
                "assignments": [],
            },
        ).error_code
        == ErrorCode.NONE
    )
    assert _heartbeat(raw, group, member, -1).error_code == ErrorCode.NONE  # the last consumer-protocol member
    described = raw.request(
        ApiKey.DESCRIBE_GROUPS, 5, {"groups": [group], "include_authorized_operations": False}
    ).groups[0]
    modern = raw.request(
        ApiKey.CONSUMER_GROUP_DESCRIBE, 1, {"group_ids": [group], "include_authorized_operations": False}
    ).groups[0]
    if policy == "downgrade":  # a classic group again, rebalancing with the classic member
        assert (_group_type(raw, group), described.group_state, described.protocol_type, len(described.members)) == (
            "classic",
            "PreparingRebalance",
            "consumer",
            1,
        )
        assert (modern.error_code, modern.error_message) == (
            ErrorCode.GROUP_ID_NOT_FOUND,
            f"Group {group} is not a consumer group.",
        )
    else:  # still a consumer group, of one classic member (DescribeGroups v5 answers it Dead)
        assert (
            _group_type(raw, group),
            described.group_state,
            modern.error_code,
            [m.member_type for m in modern.members],
        ) == ("consumer", "Dead", ErrorCode.NONE, [0])
    assert (
        raw.request(
            ApiKey.HEARTBEAT,
            4,
            {"group_id": group, "generation_id": gen, "member_id": classic, "group_instance_id": None},
        ).error_code
        == ErrorCode.REBALANCE_IN_PROGRESS
    )
    rejoined = _join(raw, group, classic)
    assert (rejoined.error_code, rejoined.generation_id, rejoined.leader == classic) == (
        ErrorCode.NONE,
        gen + 1,
        policy == "downgrade",
    )
    _leave(raw, group, classic)


def test_a_static_member_back_on_the_classic_protocol_downgrades_the_group_where_allowed(
    broker: tuple[str, str], raw: RawClient
) -> None:
    """The static consumer-protocol member leaves for now (epoch -2) and comes back as a classic member under a new
    member id: the group turns classic at once under downgrade (Kafka 4.4's validateOnlineDowngradeWithReplacedMember),
    stays a consumer group under upgrade, and the JoinGroup is refused under disabled."""
    policy = broker[0]
    group = _group_id(raw)
    member = uuid.uuid4().hex[:22]
    assert _heartbeat(raw, group, member, 0, "i1").error_code == ErrorCode.NONE
    assert _heartbeat(raw, group, member, -2, "i1").error_code == ErrorCode.NONE
    back = _join(raw, group, "", "i1")
    described = raw.request(
        ApiKey.DESCRIBE_GROUPS, 5, {"groups": [group], "include_authorized_operations": False}
    ).groups[0]
    if policy == "disabled":
        assert (back.error_code, back.member_id) == (ErrorCode.INCONSISTENT_GROUP_PROTOCOL, "")
        assert (_group_type(raw, group), described.group_state) == ("consumer", "Dead")
        return
    assert back.error_code == ErrorCode.NONE and back.member_id not in ("", member)
    if policy == "downgrade":
        assert (_group_type(raw, group), described.group_state, described.protocol_type, len(described.members)) == (
            "classic",
            "Stable",
            "consumer",
            1,
        )
    else:
        assert (_group_type(raw, group), described.group_state) == ("consumer", "Dead")
    raw.request(
        ApiKey.LEAVE_GROUP,
        5,
        {"group_id": group, "members": [{"member_id": back.member_id, "group_instance_id": "i1", "reason": None}]},
    )
