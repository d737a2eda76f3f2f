"""Group and offset APIs over raw sockets: what each version carries, and the errors Kafka gives."""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Iterator

import pytest

import fakekafka
from fakekafka.wire import ApiKey, ErrorCode
from tests.rawclient import RawClient


@pytest.fixture
def cluster() -> Iterator[fakekafka.Cluster]:
    with fakekafka.Cluster(config=fakekafka.BrokerConfig(group_min_session_timeout_ms=100)) as c:
        c.create_topic("t", 2)
        yield c


@pytest.fixture
def raw(cluster: fakekafka.Cluster) -> Iterator[RawClient]:
    client = RawClient(cluster.bootstrap_servers)
    yield client
    client.close()


def _join(raw: RawClient, version: int, member_id: str = "", group: str = "g", **extra: object) -> object:
    body = {
        "group_id": group,
        "session_timeout_ms": 10_000,
        "rebalance_timeout_ms": 10_000,
        "member_id": member_id,
        "protocol_type": "consumer",
        "protocols": [{"name": "range", "metadata": b"m"}],
        **extra,
    }
    return raw.request(ApiKey.JOIN_GROUP, version, body)


def _stable_member(raw: RawClient, version: int = 9) -> tuple[str, int]:
    first = _join(raw, version)
    member_id = first.member_id
    if first.error_code == ErrorCode.MEMBER_ID_REQUIRED:
        joined = _join(raw, version, member_id)
        assert joined.error_code == ErrorCode.NONE
        generation = joined.generation_id
    else:
        generation = first.generation_id
    sync = raw.request(
        ApiKey.SYNC_GROUP,
        min(version, 5),
        {
            "group_id": "g",
            "generation_id": generation,
            "member_id": member_id,
            "assignments": [{"member_id": member_id, "assignment": b"A"}],
        },
    )
    assert sync.error_code == ErrorCode.NONE and sync.assignment == b"A"
    return member_id, generation


@pytest.mark.parametrize("version", [0, 3, 4, 7, 9])
def test_join_sync_heartbeat_across_versions(raw: RawClient, cluster: fakekafka.Cluster, version: int) -> None:
    member_id, generation = _stable_member(raw, version)
    hb = raw.request(
        ApiKey.HEARTBEAT, min(version, 4), {"group_id": "g", "generation_id": generation, "member_id": member_id}
    )
    assert hb.error_code == ErrorCode.NONE
    view = cluster.group("g")
    assert view.state == "Stable" and view.leader == member_id and view.protocol == "range"


def test_member_id_required_from_v4(raw: RawClient) -> None:
    first = _join(raw, 4)
    assert first.error_code == ErrorCode.MEMBER_ID_REQUIRED and first.member_id
    assert _join(raw, 4, "made-up").error_code == ErrorCode.UNKNOWN_MEMBER_ID


def test_join_v5_needs_protocol_name_for_old_versions(raw: RawClient) -> None:
    r = _join(raw, 5, "unknown-member")
    assert r.error_code == ErrorCode.UNKNOWN_MEMBER_ID and r.protocol_name == ""


def test_follower_sync_waits_for_leader(cluster: fakekafka.Cluster) -> None:
    a, b = RawClient(cluster.bootstrap_servers), RawClient(cluster.bootstrap_servers)
    leader_id, _ = _stable_member(a, 3)
    results: dict[str, object] = {}
    t = threading.Thread(target=lambda: results.setdefault("b", _join(b, 3)))
    t.start()
    deadline = time.monotonic() + 10
    while len(cluster.group("g").members) < 2 and time.monotonic() < deadline:  # b's JoinGroup has arrived
        time.sleep(0.005)
    rejoin = _join(a, 3, leader_id)  # the leader rejoins: the rebalance completes for both
    t.join(10)
    gen = rejoin.generation_id
    follower = results["b"].member_id
    assert {m.member_id for m in rejoin.members} == {leader_id, follower}
    f = threading.Thread(
        target=lambda: results.setdefault(
            "sync",
            b.request(
                ApiKey.SYNC_GROUP, 3, {"group_id": "g", "generation_id": gen, "member_id": follower, "assignments": []}
            ),
        )
    )
    f.start()
    a.request(
        ApiKey.SYNC_GROUP,
        3,
        {
            "group_id": "g",
            "generation_id": gen,
            "member_id": leader_id,
            "assignments": [{"member_id": leader_id, "assignment": b"L"}, {"member_id": follower, "assignment": b"F"}],
        },
    )
    f.join(10)
    assert results["sync"].assignment == b"F"
    a.close()
    b.close()


@pytest.mark.parametrize("version", [0, 2, 3, 5])
def test_leave_group_versions(raw: RawClient, cluster: fakekafka.Cluster, version: int) -> None:
    member_id, _ = _stable_member(raw)
    if version >= 3:
        r = raw.request(
            ApiKey.LEAVE_GROUP,
            version,
            {"group_id": "g", "members": [{"member_id": member_id}, {"member_id": "nobody"}]},
        )
        assert r.error_code == ErrorCode.NONE
        assert [m.error_code for m in r.members] == [ErrorCode.NONE, ErrorCode.UNKNOWN_MEMBER_ID]
    else:
        r = raw.request(ApiKey.LEAVE_GROUP, version, {"group_id": "g", "member_id": member_id})
        assert r.error_code == ErrorCode.NONE
    assert cluster.group("g").state == "Empty"


def test_offset_commit_and_fetch_versions(raw: RawClient, cluster: fakekafka.Cluster) -> None:
    member_id, generation = _stable_member(raw)
    commit = raw.request(
        ApiKey.OFFSET_COMMIT,
        9,
        {
            "group_id": "g",
            "generation_id_or_member_epoch": generation,
            "member_id": member_id,
            "topics": [
                {
                    "name": "t",
                    "partitions": [
                        {
                            "partition_index": 0,
                            "committed_offset": 7,
                            "committed_leader_epoch": 0,
                            "committed_metadata": "m",
                        },
                        {"partition_index": 9, "committed_offset": 1},
                    ],
                }
            ],
        },
    )
    assert [p.error_code for p in commit.topics[0].partitions] == [ErrorCode.NONE, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION]
    stale = raw.request(
        ApiKey.OFFSET_COMMIT,
        2,
        {
            "group_id": "g",
            "generation_id_or_member_epoch": generation - 1,
            "member_id": member_id,
            "topics": [{"name": "t", "partitions": [{"partition_index": 1, "committed_offset": 3}]}],
        },
    )
    assert stale.topics[0].partitions[0].error_code == ErrorCode.ILLEGAL_GENERATION
    assert cluster.committed("g") == {("t", 0): 7}

    v1 = raw.request(ApiKey.OFFSET_FETCH, 1, {"group_id": "g", "topics": [{"name": "t", "partition_indexes": [0, 1]}]})
    assert [(p.partition_index, p.committed_offset, p.metadata) for p in v1.topics[0].partitions] == [
        (0, 7, "m"),
        (1, -1, ""),
    ]
    v7 = raw.request(ApiKey.OFFSET_FETCH, 7, {"group_id": "g", "topics": None, "require_stable": True})
    assert v7.error_code == ErrorCode.NONE
    assert [(p.partition_index, p.committed_offset, p.committed_leader_epoch) for p in v7.topics[0].partitions] == [
        (0, 7, 0)
    ]
    v8 = raw.request(
        ApiKey.OFFSET_FETCH, 8, {"groups": [{"group_id": "g", "topics": None}, {"group_id": "none", "topics": None}]}
    )
    assert [(g.group_id, len(g.topics)) for g in v8.groups] == [("g", 1), ("none", 0)]


def test_offsets_by_topic_id_from_v10(raw: RawClient, cluster: fakekafka.Cluster) -> None:
    member_id, generation = _stable_member(raw)
    topic_id = cluster.state.topics["t"].topic_id
    unknown = uuid.UUID(int=1)
    commit = raw.request(
        ApiKey.OFFSET_COMMIT,
        10,
        {
            "group_id": "g",
            "generation_id_or_member_epoch": generation,
            "member_id": member_id,
            "topics": [
                {"topic_id": topic_id, "partitions": [{"partition_index": 0, "committed_offset": 5}]},
                {"topic_id": unknown, "partitions": [{"partition_index": 0, "committed_offset": 1}]},
            ],
        },
    )
    assert [(t.topic_id, [p.error_code for p in t.partitions]) for t in commit.topics] == [
        (topic_id, [ErrorCode.NONE]),
        (unknown, [ErrorCode.UNKNOWN_TOPIC_ID]),
    ]
    assert cluster.committed("g") == {("t", 0): 5}
    fetched = raw.request(
        ApiKey.OFFSET_FETCH,
        10,
        {
            "groups": [
                {
                    "group_id": "g",
                    "topics": [
                        {"topic_id": topic_id, "partition_indexes": [0]},
                        {"topic_id": unknown, "partition_indexes": [2]},
                    ],
                }
            ]
        },
    )
    assert [
        (t.topic_id, [(p.partition_index, p.committed_offset, p.error_code) for p in t.partitions])
        for t in fetched.groups[0].topics
    ] == [(topic_id, [(0, 5, ErrorCode.NONE)]), (unknown, [(2, -1, ErrorCode.UNKNOWN_TOPIC_ID)])]
    every = raw.request(ApiKey.OFFSET_FETCH, 10, {"groups": [{"group_id": "g", "topics": None}]})
    assert [t.topic_id for t in every.groups[0].topics] == [topic_id]


@pytest.mark.parametrize("version", [5, 6])
def test_describe_unknown_group(raw: RawClient, version: int) -> None:
    r = raw.request(ApiKey.DESCRIBE_GROUPS, version, {"groups": ["nobody"]})
    g = r.groups[0]
    assert g.group_state == "Dead"
    if version >= 6:  # KIP-1043
        assert (g.error_code, g.error_message) == (ErrorCode.GROUP_ID_NOT_FOUND, "Group nobody not found.")
    else:
        assert g.error_code == ErrorCode.NONE


def test_simple_consumer_commit_with_generation_minus_one(raw: RawClient, cluster: fakekafka.Cluster) -> None:
    r = raw.request(
        ApiKey.OFFSET_COMMIT,
        8,
        {
            "group_id": "assign-only",
            "generation_id_or_member_epoch": -1,
            "member_id": "",
            "topics": [{"name": "t", "partitions": [{"partition_index": 1, "committed_offset": 4}]}],
        },
    )
    assert r.topics[0].partitions[0].error_code == ErrorCode.NONE
    assert cluster.committed("assign-only") == {("t", 1): 4}
    assert cluster.group("assign-only").state == "Empty"


def test_describe_list_delete_groups(raw: RawClient, cluster: fakekafka.Cluster) -> None:
    member_id, _ = _stable_member(raw)
    d = raw.request(ApiKey.DESCRIBE_GROUPS, 5, {"groups": ["g", "missing"]})
    g, missing = d.groups
    assert (g.group_state, g.protocol_type, g.protocol_data) == ("Stable", "consumer", "range")
    assert [(m.member_id, m.member_metadata, m.member_assignment) for m in g.members] == [(member_id, b"m", b"A")]
    assert (missing.error_code, missing.group_state) == (ErrorCode.NONE, "Dead")
    listed = raw.request(ApiKey.LIST_GROUPS, 5, {"states_filter": ["stable"], "types_filter": []})
    assert [(x.group_id, x.group_state, x.group_type) for x in listed.groups] == [("g", "Stable", "classic")]
    assert raw.request(ApiKey.LIST_GROUPS, 4, {"states_filter": ["Empty"]}).groups == []
    assert (
        raw.request(ApiKey.DELETE_GROUPS, 2, {"groups_names": ["g"]}).results[0].error_code == ErrorCode.NON_EMPTY_GROUP
    )
    raw.request(ApiKey.LEAVE_GROUP, 5, {"group_id": "g", "members": [{"member_id": member_id}]})
    deleted = raw.request(ApiKey.DELETE_GROUPS, 2, {"groups_names": ["g", "missing"]})
    assert [r.error_code for r in deleted.results] == [ErrorCode.NONE, ErrorCode.GROUP_ID_NOT_FOUND]
    assert cluster.group("g") is None


def test_offset_delete(raw: RawClient, cluster: fakekafka.Cluster) -> None:
    raw.request(
        ApiKey.OFFSET_COMMIT,
        8,
        {
            "group_id": "od",
            "generation_id_or_member_epoch": -1,
            "member_id": "",
            "topics": [
                {
                    "name": "t",
                    "partitions": [
                        {"partition_index": 0, "committed_offset": 1},
                        {"partition_index": 1, "committed_offset": 2},
                    ],
                }
            ],
        },
    )
    r = raw.request(
        ApiKey.OFFSET_DELETE, 0, {"group_id": "od", "topics": [{"name": "t", "partitions": [{"partition_index": 0}]}]}
    )
    assert r.error_code == ErrorCode.NONE and r.topics[0].partitions[0].error_code == ErrorCode.NONE
    assert cluster.committed("od") == {("t", 1): 2}
    assert (
        raw.request(ApiKey.OFFSET_DELETE, 0, {"group_id": "nope", "topics": []}).error_code
        == ErrorCode.GROUP_ID_NOT_FOUND
    )


def test_find_coordinator_versions(raw: RawClient, cluster: fakekafka.Cluster) -> None:
    old = raw.request(ApiKey.FIND_COORDINATOR, 3, {"key": "g", "key_type": 0})
    assert (old.error_code, old.node_id) == (ErrorCode.NONE, 1)
    new = raw.request(ApiKey.FIND_COORDINATOR, 6, {"key_type": 0, "coordinator_keys": ["a", "b"]})
    assert [(c.key, c.node_id) for c in new.coordinators] == [("a", 1), ("b", 1)]
    assert (
        raw.request(ApiKey.FIND_COORDINATOR, 4, {"key_type": 7, "coordinator_keys": ["a"]}).coordinators[0].error_code
        == ErrorCode.INVALID_REQUEST
    )
    assert "__consumer_offsets" in cluster.topics()


def test_java_string_hash_places_groups_like_kafka() -> None:
    from fakekafka.model.internal_topics import java_string_hash, kafka_abs

    # values printed by String.hashCode() on OpenJDK 17
    assert java_string_hash("") == 0
    assert java_string_hash("hello") == 99162322
    assert java_string_hash("my-group") == -1906497762
    assert java_string_hash("polygenelubricants") == -(2**31)
    assert java_string_hash("ünï-✓") == 236245379
    assert java_string_hash("console-consumer-12345") == 158455506
    assert kafka_abs(-(2**31)) == 0


def test_a_classic_join_takes_over_an_empty_consumer_group_with_its_offsets(
    raw: RawClient, cluster: fakekafka.Cluster
) -> None:
    """As Kafka 4.4: an empty KIP-848 group gives its id, and its committed offsets, to a classic group."""
    hb = raw.request(
        ApiKey.CONSUMER_GROUP_HEARTBEAT,
        1,
        {
            "group_id": "g",
            "member_id": "m1",
            "member_epoch": 0,
            "rebalance_timeout_ms": 10_000,
            "subscribed_topic_names": ["t"],
            "topic_partitions": [],
        },
    )
    assert hb.error_code == ErrorCode.NONE
    offsets = [{"name": "t", "partitions": [{"partition_index": 0, "committed_offset": 3}]}]
    commit = raw.request(
        ApiKey.OFFSET_COMMIT,
        9,
        {"group_id": "g", "generation_id_or_member_epoch": hb.member_epoch, "member_id": "m1", "topics": offsets},
    )
    assert commit.topics[0].partitions[0].error_code == ErrorCode.NONE
    left = raw.request(ApiKey.CONSUMER_GROUP_HEARTBEAT, 1, {"group_id": "g", "member_id": "m1", "member_epoch": -1})
    assert left.error_code == ErrorCode.NONE
    member_id, _ = _stable_member(raw)
    assert cluster.group("g").state == "Stable"
    fetched = raw.request(
        ApiKey.OFFSET_FETCH, 8, {"groups": [{"group_id": "g", "topics": [{"name": "t", "partition_indexes": [0]}]}]}
    )
    assert fetched.groups[0].topics[0].partitions[0].committed_offset == 3
    # and a classic member of a classic group with members is not answered by the consumer coordinator
    hb2 = raw.request(ApiKey.HEARTBEAT, 4, {"group_id": "g", "generation_id": 1, "member_id": member_id})
    assert hb2.error_code == ErrorCode.NONE


def test_offset_delete_of_a_consumer_group_writes_tombstones(raw: RawClient, cluster: fakekafka.Cluster) -> None:
    """OffsetDelete on a KIP-848 group (served in the handler) writes its tombstones to `__consumer_offsets`."""
    from fakekafka.model.consumer_group import HeartbeatRequest
    from fakekafka.model.offsets_topic import decode_record
    from fakekafka.wire.records import decode_batch

    state = cluster.state

    def records() -> list[tuple[int, object, object]]:
        p = state.partition("__consumer_offsets", state.offsets_partition_for("cg"))
        out = []
        for batch in list(p.log.batches):
            out += [decode_record(r.key, r.value) for r in decode_batch(bytes(batch)).records]
        return [(t, k, v) for t, k, _, v in out]

    def heartbeat(epoch: int) -> None:
        r = state.consumer_groups.heartbeat(
            HeartbeatRequest(
                group_id="cg",
                member_id="m",
                member_epoch=epoch,
                rebalance_timeout_ms=10_000 if epoch == 0 else -1,
                subscribed_topic_names=["t"] if epoch == 0 else None,
                owned=[] if epoch == 0 else None,
                version=1,
            )
        )
        assert r["error_code"] == ErrorCode.NONE

    assert (
        raw.request(ApiKey.FIND_COORDINATOR, 4, {"key_type": 0, "coordinator_keys": ["cg"]}).coordinators[0].error_code
        == 0
    )
    cluster.call(lambda: heartbeat(0))
    cluster.call(lambda: heartbeat(-1))  # the group stays, empty: a commit with epoch -1 is accepted
    offsets = [{"name": "t", "partitions": [{"partition_index": 1, "committed_offset": 4}]}]
    commit = raw.request(
        ApiKey.OFFSET_COMMIT,
        9,
        {"group_id": "cg", "generation_id_or_member_epoch": -1, "member_id": "", "topics": offsets},
    )
    assert commit.topics[0].partitions[0].error_code == ErrorCode.NONE
    deleted = raw.request(
        ApiKey.OFFSET_DELETE, 0, {"group_id": "cg", "topics": [{"name": "t", "partitions": [{"partition_index": 1}]}]}
    )
    assert deleted.error_code == ErrorCode.NONE and deleted.topics[0].partitions[0].error_code == ErrorCode.NONE
    written = cluster.call(records)
    assert [(t, k.partition, v is None) for t, k, v in written if t == 1] == [(1, 1, False), (1, 1, True)]
