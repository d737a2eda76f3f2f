"""Groups' metadata hash (`fakekafka.model.metadata_hash`): Kafka 4.4.0's own numbers, and where the hash goes.

The vectors were computed once by Kafka 4.4.0's group coordinator itself: `tools/MetadataHashVectors.java`
(compiled and run against ~/.cache/fakekafka/kafka-4.4.0/lib, see its header) builds a KRaft metadata image
(six brokers: 1 in "rack-b", 2 in "rack-a", 3 and 4 (partly) without a rack, 4 "räck", 5 "～" U+FF5E, 6 "😀"
U+1F600; three topics) and prints `Utils.computeTopicHash` and `Utils.computeGroupHash` of them.
"""

from __future__ import annotations

import uuid
from typing import Any

from fakekafka.model.clock import ManualClock
from fakekafka.model.cluster import ClusterState
from fakekafka.model.config import BrokerConfig
from fakekafka.model.consumer_group import HeartbeatRequest
from fakekafka.model.internal_topics import OFFSETS_TOPIC
from fakekafka.model.metadata import Broker
from fakekafka.model.metadata_hash import group_hash, java_string_key, topic_hash
from fakekafka.model.offsets_topic import decode_record
from fakekafka.wire import ErrorCode
from fakekafka.wire.records import decode_batch


def kafka_uuid(most: int, least: int) -> uuid.UUID:
    """A topic id from Kafka's `new Uuid(mostSignificantBits, leastSignificantBits)` (signed longs)."""
    return uuid.UUID(int=((most & (2**64 - 1)) << 64) | (least & (2**64 - 1)))


RACKS = {1: "rack-b", 2: "rack-a", 3: None, 4: "r\u00e4ck", 5: "\uff5e", 6: "\U0001f600"}
T1 = kafka_uuid(0x0123456789ABCDEF, 0xFEDCBA9876543210)  # ASNFZ4mrze_-3LqYdlQyEA
T2 = kafka_uuid(0x5F1C2A7E9B3D4C60, 0x8A2E4F6B1C3D5E70)  # Xxwqfps9TGCKLk9rHD1ecA
T3 = kafka_uuid(-0x1122334455667788, 1)  # 7t3Mu6qZiHgAAAAAAAAAAQ


def racks(*brokers: int) -> list[str]:
    return [r for b in brokers if (r := RACKS[b]) is not None]


def test_topic_hashes_are_kafkas() -> None:
    assert topic_hash(T1, "t1", [racks(1)]) == -2388963290066438656
    assert topic_hash(T2, "orders.v2", [racks(1, 2), racks(2, 3), racks(3, 1)]) == -1614266455081218662
    # racks beyond ASCII, one beyond the BMP: Java sorts "😀" (a surrogate pair, 0xD83D...) before "～" (0xFF5E)
    assert topic_hash(T3, "unicode-racks", [racks(4, 5, 6, 2), racks(6, 5)]) == -4946885277410964748


def test_group_hashes_are_kafkas() -> None:
    h1, h2 = -2388963290066438656, -1614266455081218662
    h3 = -4946885277410964748
    assert group_hash({"t1": h1}) == 7684295836068883274
    assert group_hash({"t1": h1, "orders.v2": h2}) == -4723286281198044003  # by name: orders.v2 first
    assert group_hash({"unicode-racks": h3, "t1": h1, "orders.v2": h2}) == 7482071620260934324
    assert group_hash({}) == 0


def test_racks_sort_as_java_strings() -> None:
    assert sorted(["\uff5e", "\U0001f600", "rack-a"], key=java_string_key) == ["rack-a", "\U0001f600", "\uff5e"]
    # the order of a partition's replicas does not matter, their racks do
    assert topic_hash(T1, "t1", [["b", "a"]]) == topic_hash(T1, "t1", [["a", "b"]]) != topic_hash(T1, "t1", [["a"]])


def make() -> ClusterState:
    c = ClusterState(
        BrokerConfig(group_initial_rebalance_delay_ms=0),
        ManualClock(1_000),
        [Broker(i, "127.0.0.1", 9000 + i, rack) for i, rack in ((1, "r1"), (2, "r1"), (3, "r2"))],
    )
    c.create_topic("t", assignments={0: [1], 1: [2]})
    return c


def heartbeat(c: ClusterState, member: str, epoch: int, owned: list[Any] | None = None) -> dict[str, Any]:
    return c.consumer_groups.heartbeat(
        HeartbeatRequest(
            group_id="cg",
            member_id=member,
            member_epoch=epoch,
            rebalance_timeout_ms=30_000 if epoch == 0 else -1,
            subscribed_topic_names=["t"] if epoch == 0 else None,
            owned=[] if epoch == 0 else owned,
            version=1,
        )
    )


def group_metadata_records(c: ClusterState) -> list[tuple[int, int]]:
    """(epoch, metadata hash) of every ConsumerGroupMetadata record of group "cg"."""
    p = c.partition(OFFSETS_TOPIC, c.offsets_partition_for("cg"))
    assert p is not None
    out = []
    for batch in p.log.batches:
        for r in decode_batch(bytes(batch)).records:
            if r.key is not None:
                record_type, key, _, value = decode_record(r.key, r.value)
                if record_type == 3 and key.group_id == "cg" and value is not None:
                    out.append((value.epoch, value.metadata_hash))
    return out


def expected(c: ClusterState, partition_racks: list[list[str]]) -> int:
    return group_hash({"t": topic_hash(c.topics["t"].topic_id, "t", partition_racks)})


def test_the_group_record_carries_the_hash_and_a_rack_move_bumps_the_epoch() -> None:
    c = make()
    c.coordinator_for("cg")
    assert heartbeat(c, "m1", 0)["error_code"] == ErrorCode.NONE
    group = c.consumer_groups.groups["cg"]
    assert group_metadata_records(c) == [(2, expected(c, [["r1"], ["r1"]]))]
    # a replica moved to a broker of the same rack: the hash, and so the epoch, stay
    c.reassign_partition("t", 0, [2])
    c.tick()
    assert group.group_epoch == 2 and group.metadata_hash == expected(c, [["r1"], ["r1"]])
    # to another rack: a new hash, a new group epoch (written at the group's next heartbeat or timer)
    c.reassign_partition("t", 1, [3])
    c.tick()
    assert (group.group_epoch, group.metadata_hash) == (3, expected(c, [["r1"], ["r2"]]))
    assert group_metadata_records(c)[-1] == (3, expected(c, [["r1"], ["r2"]]))
    # a partition added: a new hash again
    c.create_partitions("t", 3)
    c.tick()
    assert group.group_epoch == 4 and group.metadata_hash == expected(c, [["r1"], ["r2"], c_racks(c, 2)])
    # the last member leaves: no subscribed topic, hash 0
    tid = c.topics["t"].topic_id
    assert heartbeat(c, "m1", -1, [(tid, [0, 1, 2])])["error_code"] == ErrorCode.NONE
    assert group_metadata_records(c)[-1] == (5, 0)


def c_racks(c: ClusterState, partition: int) -> list[str]:
    """The racks of a partition's replicas' brokers, as the cluster placed them."""
    replicas = c.topics["t"].partitions[partition].replicas
    return [r for b in replicas if (r := c.brokers[b].rack) is not None]
