"""A share-group member that leaves the group (ShareGroupHeartbeat at member epoch -1) and then acknowledges the
records it still holds, over raw requests, with the same assertions on fakekafka and (`pytest --kafka-real`) on
Apache Kafka 4.4.0.

In Kafka the group (the group coordinator) and the share session (the broker serving ShareFetch) are apart: the
leave takes the member out of the group, while its share session and the records acquired in it stay until the
session's last request (epoch -1), its connection closes or the acquisition locks pass. Real clients send their
last acknowledgements on close, often after the leave: the acknowledgement is taken and the records are never
delivered again.
"""

from __future__ import annotations

import uuid
from typing import Any

import pytest

from fakekafka.wire import ErrorCode
from tests.rawclient import RawClient, eventually

pytestmark = pytest.mark.kafka_real  # must pass on Apache Kafka too (`pytest --kafka-real -m kafka_real`)

HEARTBEAT, FETCH, ACK, INCREMENTAL, METADATA = 76, 78, 79, 44, 3
ACCEPT = 1


class ShareMember:
    """One member on a connection of its own (Kafka ties a share session to its connection)."""

    def __init__(self, bootstrap: str, group: str, topic: str, topic_id: uuid.UUID) -> None:
        self.raw = RawClient(bootstrap)
        self.group, self.topic, self.topic_id = group, topic, topic_id
        self.member_id = uuid.uuid4().hex[:22]
        self.epoch = 0
        self.session_epoch = 0

    def heartbeat(self, epoch: int | None = None) -> Any:
        epoch = self.epoch if epoch is None else epoch
        r = self.raw.request(HEARTBEAT, 1, {"group_id": self.group, "member_id": self.member_id,
                                            "member_epoch": epoch, "rack_id": None,
                                            "subscribed_topic_names": [self.topic] if epoch == 0 else None})
        if r.error_code == ErrorCode.NONE:
            self.epoch = r.member_epoch
        return r

    def join(self) -> None:
        """Heartbeats until the group assigns it the partition (Kafka assigns once it initialized the
        share-partition)."""
        first = self.heartbeat(0)
        assert first.error_code == ErrorCode.NONE
        if not _assigned(first):  # an assignment is sent once, when it changes
            eventually("the assignment", lambda: _assigned(self.heartbeat()) or None)

    def fetch(self, max_wait_ms: int = 500) -> list[tuple[int, int]]:
        """One ShareFetch in its session: the (first, last) offset ranges it acquired."""
        r = self.raw.request(FETCH, 1, {
            "group_id": self.group, "member_id": self.member_id, "share_session_epoch": self.session_epoch,
            "max_wait_ms": max_wait_ms, "min_bytes": 1, "max_bytes": 1 << 20, "max_records": 500, "batch_size": 500,
            "share_acquire_mode": 0, "is_renew_ack": False, "forgotten_topics_data": [],
            "topics": [{"topic_id": self.topic_id, "partitions": [
                {"partition_index": 0, "partition_max_bytes": 1 << 20, "acknowledgement_batches": []}]}]})
        assert r.error_code == ErrorCode.NONE, r
        self.session_epoch += 1
        return [(a.first_offset, a.last_offset) for t in r.responses for p in t.partitions
                for a in p.acquired_records]

    def acknowledge(self, first: int, last: int) -> tuple[int, list[int]]:
        r = self.raw.request(ACK, 1, {"group_id": self.group, "member_id": self.member_id,
                                      "share_session_epoch": self.session_epoch, "is_renew_ack": False,
                                      "topics": [{"topic_id": self.topic_id, "partitions": [
                                          {"partition_index": 0, "acknowledgement_batches": [
                                              {"first_offset": first, "last_offset": last,
                                               "acknowledge_types": [ACCEPT]}]}]}]})
        if r.error_code == ErrorCode.NONE:
            self.session_epoch += 1
        return r.error_code, [p.error_code for t in r.responses for p in t.partitions]


def _assigned(heartbeat: Any) -> bool:
    return heartbeat.assignment is not None and any(t.partitions for t in heartbeat.assignment.topic_partitions)


def _topic_id(raw: RawClient, topic: str) -> uuid.UUID:
    r = raw.request(METADATA, 12, {"topics": [{"topic_id": uuid.UUID(int=0), "name": topic}],
                                   "allow_auto_topic_creation": False, "include_topic_authorized_operations": False})
    return r.topics[0].topic_id


def _share_topic(kafka: Any, admin: RawClient) -> tuple[str, str, uuid.UUID]:
    """A topic of three records and a group that starts at its beginning, whose locks outlast the test's waits
    (so only what the test is about, not an expired lock, makes records available again)."""
    topic, group = f"share-leave-{uuid.uuid4().hex[:6]}", f"share-leave-{uuid.uuid4().hex[:6]}"
    kafka.create_topic(topic, 1)
    for i in range(3):
        kafka.produce(topic, b"v%d" % i)
    r = admin.request(INCREMENTAL, 1, {"validate_only": False, "resources": [
        {"resource_type": 32, "resource_name": group, "configs": [
            {"name": "share.auto.offset.reset", "config_operation": 0, "value": "earliest"},
            {"name": "share.record.lock.duration.ms", "config_operation": 0, "value": "60000"}]}]})
    assert r.responses[0].error_code == ErrorCode.NONE
    return topic, group, _topic_id(admin, topic)


def test_acknowledgements_after_the_leave_are_taken_and_not_redelivered(kafka) -> None:  # noqa: ANN001
    admin = RawClient(kafka.bootstrap_servers)
    topic, group, topic_id = _share_topic(kafka, admin)
    leaver = ShareMember(kafka.bootstrap_servers, group, topic, topic_id)
    stayer = ShareMember(kafka.bootstrap_servers, group, topic, topic_id)
    try:
        leaver.join()
        assert eventually("the records acquired", lambda: leaver.fetch() or None) == [(0, 2)]
        # it leaves the group, then acknowledges what it held in its share session: taken
        left = leaver.heartbeat(-1)
        assert (left.error_code, left.member_epoch) == (ErrorCode.NONE, -1)
        assert leaver.acknowledge(0, 2) == (ErrorCode.NONE, [ErrorCode.NONE])
        # the next member gets only what came after: the acknowledged records are not delivered again
        kafka.produce(topic, b"v3")
        stayer.join()
        assert eventually("the new record acquired", lambda: stayer.fetch() or None) == [(3, 3)]
        assert stayer.heartbeat(-1).error_code == ErrorCode.NONE
    finally:
        for c in (leaver.raw, stayer.raw, admin):
            c.close()


def test_a_closed_connection_releases_what_its_member_held(kafka) -> None:  # noqa: ANN001
    """The member leaves (which releases nothing) and its connection closes without the session's last request:
    the records it acquired are available to the next member at once, long before their locks would pass."""
    admin = RawClient(kafka.bootstrap_servers)
    topic, group, topic_id = _share_topic(kafka, admin)
    gone = ShareMember(kafka.bootstrap_servers, group, topic, topic_id)
    other = ShareMember(kafka.bootstrap_servers, group, topic, topic_id)
    try:
        gone.join()
        assert eventually("the records acquired", lambda: gone.fetch() or None) == [(0, 2)]
        other.join()
        assert gone.heartbeat(-1).error_code == ErrorCode.NONE
        assert other.fetch(max_wait_ms=0) == []  # still held by the member that left
        gone.raw.close()
        assert eventually("the released records acquired", lambda: other.fetch() or None) == [(0, 2)]
        assert other.heartbeat(-1).error_code == ErrorCode.NONE
    finally:
        for c in (gone.raw, other.raw, admin):
            c.close()
