"""A mixed group over raw requests, on fakekafka and (`pytest --kafka-real`) on Apache Kafka 4.4.0 with the same
assertions: a classic group upgraded by a static consumer-protocol member, its classic member rebalanced inside
the consumer group, then the static member back on the classic protocol under a new member id, which turns the
group back into a classic group at once (Kafka 4.4's downgrade on a static member's replacement)."""

from __future__ import annotations

from typing import Any

import pytest

from fakekafka.wire import ApiKey, ErrorCode
from fakekafka.wire.messages.consumer_protocol_assignment import VERSIONS as ASSIGNMENT
from fakekafka.wire.messages.consumer_protocol_subscription import VERSIONS as SUBSCRIPTION
from tests.rawclient import RawClient, eventually

pytestmark = pytest.mark.kafka_real  # must pass on Apache Kafka too (`pytest --kafka-real -m kafka_real`)

GROUP, TOPIC = "mixed-wire", "mixed-wire-t"
SESSION_MS = 30_000


def _subscription() -> bytes:
    return b"\x00\x00" + SUBSCRIPTION[0].build({"topics": [TOPIC], "user_data": None})


def _assignment(partitions: list[int]) -> bytes:
    return b"\x00\x00" + ASSIGNMENT[0].build(
        {"assigned_partitions": [{"topic": TOPIC, "partitions": partitions}], "user_data": None}
    )


def _partitions(data: bytes) -> list[int]:
    body = ASSIGNMENT[0].parse(data[2:])
    return sorted(p for t in body.assigned_partitions for p in t.partitions)


def _join(raw: RawClient, member_id: str, instance: str | None = None) -> Any:
    return raw.request(
        ApiKey.JOIN_GROUP,
        5,
        {
            "group_id": GROUP,
            "session_timeout_ms": SESSION_MS,
            "rebalance_timeout_ms": SESSION_MS,
            "member_id": member_id,
            "group_instance_id": instance,
            "protocol_type": "consumer",
            "protocols": [{"name": "range", "metadata": _subscription()}],
        },
    )


def _sync(
    raw: RawClient,
    generation: int,
    member_id: str,
    instance: str | None = None,
    assignments: list[dict[str, Any]] | None = None,
) -> Any:
    return raw.request(
        ApiKey.SYNC_GROUP,
        5,
        {
            "group_id": GROUP,
            "generation_id": generation,
            "member_id": member_id,
            "group_instance_id": instance,
            "protocol_type": "consumer",
            "protocol_name": "range",
            "assignments": assignments or [],
        },
    )


def _heartbeat(raw: RawClient, epoch: int, owned: list[Any] | None, **fields: Any) -> Any:
    body = {
        "group_id": GROUP,
        "member_id": "static-one-member-id",
        "member_epoch": epoch,
        "instance_id": "i1",
        "rebalance_timeout_ms": SESSION_MS if epoch == 0 else -1,
        "subscribed_topic_names": [TOPIC] if epoch == 0 else None,
        "topic_partitions": owned,
        **fields,
    }
    return raw.request(ApiKey.CONSUMER_GROUP_HEARTBEAT, 1, body)


def test_static_member_back_on_the_classic_protocol_downgrades_the_group(kafka) -> None:  # noqa: ANN001
    kafka.create_topic(TOPIC, 2)
    raw = RawClient(kafka.bootstrap_servers)
    eventually(
        "the group coordinator",
        lambda: (
            raw.request(ApiKey.FIND_COORDINATOR, 4, {"key_type": 0, "coordinator_keys": [GROUP]})
            .coordinators[0]
            .error_code
            == ErrorCode.NONE
            or None
        ),
    )
    # a classic group: member A holds both partitions
    first = _join(raw, "")
    assert first.error_code == ErrorCode.MEMBER_ID_REQUIRED
    a = first.member_id
    joined = _join(raw, a)
    assert joined.error_code == ErrorCode.NONE and joined.leader == a
    gen = joined.generation_id
    assert _sync(raw, gen, a, assignments=[{"member_id": a, "assignment": _assignment([0, 1])}]).error_code == 0
    # a static consumer-protocol member joins: the group is upgraded, A keeps both partitions for now
    hb = _heartbeat(raw, 0, [])
    assert (hb.error_code, hb.member_epoch) == (ErrorCode.NONE, gen + 1)
    assert (
        raw.request(
            ApiKey.HEARTBEAT, 4, {"group_id": GROUP, "generation_id": gen, "member_id": a, "group_instance_id": None}
        ).error_code
        == ErrorCode.REBALANCE_IN_PROGRESS
    )
    rejoined = _join(raw, a)  # eager: it owns nothing when it rejoins
    assert (rejoined.error_code, rejoined.generation_id, rejoined.leader, list(rejoined.members)) == (
        ErrorCode.NONE,
        gen + 1,
        "",
        [],
    )
    synced = _sync(raw, gen + 1, a)
    assert synced.error_code == ErrorCode.NONE and len(_partitions(synced.assignment)) == 1

    def static_member_owns_one() -> Any:
        r = _heartbeat(raw, gen + 1, None)
        owned = [] if r.assignment is None else [p for t in r.assignment.topic_partitions for p in t.partitions]
        return r if len(owned) == 1 else None

    assert eventually("the static member's partition", static_member_owns_one).member_epoch == gen + 1
    described = raw.request(
        ApiKey.CONSUMER_GROUP_DESCRIBE, 1, {"group_ids": [GROUP], "include_authorized_operations": False}
    ).groups[0]
    assert (described.group_state, sorted(m.member_type for m in described.members)) == ("Stable", [0, 1])
    # it leaves for now (epoch -2) and comes back as a classic member with a new member id
    assert _heartbeat(raw, -2, None).error_code == ErrorCode.NONE
    back = _join(raw, "", "i1")
    assert (back.error_code, back.generation_id) == (ErrorCode.NONE, gen + 1)
    groups = raw.request(ApiKey.DESCRIBE_GROUPS, 5, {"groups": [GROUP], "include_authorized_operations": False}).groups[
        0
    ]
    assert (groups.error_code, groups.group_state, groups.protocol_type, groups.protocol_data, len(groups.members)) == (
        ErrorCode.NONE,
        "Stable",
        "consumer",
        "range",
        2,
    )
    mine = _sync(raw, gen + 1, back.member_id, "i1")
    assert mine.error_code == ErrorCode.NONE
    assert sorted(_partitions(mine.assignment) + _partitions(synced.assignment)) == [0, 1]
    assert (
        raw.request(
            ApiKey.HEARTBEAT,
            4,
            {"group_id": GROUP, "generation_id": gen + 1, "member_id": a, "group_instance_id": None},
        ).error_code
        == ErrorCode.NONE
    )
    for member, instance in ((a, None), (back.member_id, "i1")):
        raw.request(
            ApiKey.LEAVE_GROUP,
            5,
            {"group_id": GROUP, "members": [{"member_id": member, "group_instance_id": instance}]},
        )
    raw.close()
