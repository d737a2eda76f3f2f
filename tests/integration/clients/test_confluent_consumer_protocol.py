"""KIP-848 consumer groups with confluent-kafka (librdkafka 2.16, `group.protocol=consumer`): the seeds'
rebalance scenarios (members join, leave, crash; partitions added) under the new protocol, with commits,
checked from the client and from the broker's side (`kafka.consumer_group`: epochs, current and target
assignments). The `kafka` fixture makes these run on fakekafka and, under `pytest --kafka-real`, on Apache
Kafka 4.4.0 with the same assertions; the crash needs the clock (45 s sessions) and runs on fakekafka only.
Each rebalance step waits on heartbeats (group.consumer.heartbeat.interval.ms: 0.5 s on fakekafka by default and
on the reference Kafka as the launcher starts it; Kafka's own default is 5 s)."""

from __future__ import annotations

import subprocess
import sys
import textwrap
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewPartitions

from fakekafka import Edit
from fakekafka.model.metadata_hash import group_hash, topic_hash
from fakekafka.testing.handle import ClusterHandle

pytestmark = [pytest.mark.clients, pytest.mark.kafka_real]

TIMEOUT = 30.0


class Member:
    """A confluent-kafka consumer polled by the test, with the partitions it was given."""

    def __init__(self, bootstrap: str, group: str, topics: list[str], name: str, **extra: str) -> None:
        self.consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "group.protocol": "consumer",
                                  "client.id": name, "auto.offset.reset": "earliest", "enable.auto.commit": False,
                                  **extra})
        self.consumer.subscribe(topics)
        self.values: list[bytes] = []
        self.closed = False

    def poll(self) -> None:
        msg = self.consumer.poll(0.05)
        if msg is not None and msg.error() is None:
            self.values.append(msg.value())

    def assignment(self) -> dict[str, list[int]]:
        out: dict[str, list[int]] = {}
        for tp in self.consumer.assignment():
            out.setdefault(tp.topic, []).append(tp.partition)
        return {t: sorted(ps) for t, ps in out.items()}

    def close(self) -> None:
        if not self.closed:
            self.closed = True
            self.consumer.close()


@pytest.fixture
def members(kafka: ClusterHandle) -> Iterator[Callable[..., Member]]:
    made: list[Member] = []

    def make(group: str, topics: list[str], name: str, **extra: str) -> Member:
        m = Member(kafka.bootstrap_servers, group, topics, name, **extra)
        made.append(m)
        return m
    yield make
    for m in made:
        m.close()


def until(what: str, members: list[Member], done: Callable[[], bool], timeout: float = TIMEOUT) -> float:
    """Polls every member until `done()`; the seconds it took."""
    start = time.monotonic()
    while not done():
        if time.monotonic() - start > timeout:
            raise AssertionError(f"{what}: not within {timeout}s; assignments {[m.assignment() for m in members]}")
        for m in members:
            m.poll()
    return time.monotonic() - start


def complete(members: list[Member], topic: str, partitions: int) -> bool:
    owned = [p for m in members for p in m.assignment().get(topic, [])]
    sizes = [len(m.assignment().get(topic, [])) for m in members]
    return sorted(owned) == list(range(partitions)) and max(sizes) - min(sizes) <= 1


def settled(kafka: ClusterHandle, group: str, members: int) -> bool:
    """The broker's side of a stable assignment: the group Stable with `members` members, every one at the
    group's epoch with its target assignment (nothing pending)."""
    view = kafka.consumer_group(group)
    return (view is not None and view.state == "Stable" and len(view.members) == members
            and view.assignment_epoch == view.group_epoch
            and all(m.member_epoch == view.group_epoch and m.assignment == m.target_assignment
                    for m in view.members))


def test_members_join_and_leave(kafka: ClusterHandle, members: Callable[..., Member]) -> None:
    kafka.create_topic("orders", 4)
    kafka.wait_for_topic("orders", 4)
    a = members("billing", ["orders"], "a")
    until("a alone", [a], lambda: a.assignment() == {"orders": [0, 1, 2, 3]})
    b = members("billing", ["orders"], "b")
    until("a and b", [a, b], lambda: complete([a, b], "orders", 4) and settled(kafka, "billing", 2))
    view = kafka.consumer_group("billing")
    assert view is not None
    assert view.group_epoch == view.assignment_epoch
    for m in view.members:
        assert m.member_epoch == view.group_epoch and m.assignment == m.target_assignment
        assert len(m.assignment["orders"]) == 2
    assert sorted(m.client_id for m in view.members) == ["a", "b"]
    b.close()
    until("a after b left", [a], lambda: a.assignment() == {"orders": [0, 1, 2, 3]} and settled(kafka, "billing", 1))
    assert kafka.consumer_group("billing").group_epoch > view.group_epoch


def test_commit_and_resume(kafka: ClusterHandle, members: Callable[..., Member]) -> None:
    kafka.create_topic("payments", 2)
    kafka.wait_for_topic("payments", 2)
    p = Producer({"bootstrap.servers": kafka.bootstrap_servers})
    for i in range(6):
        p.produce("payments", f"p{i}".encode(), partition=i % 2)
    p.flush(10)
    a = members("ledger", ["payments"], "a")
    until("6 records", [a], lambda: len(a.values) == 6)
    a.consumer.commit(asynchronous=False)  # OffsetCommit v9+ with the member epoch
    kafka.assert_committed("ledger", {("payments", 0): 3, ("payments", 1): 3})
    a.close()
    p.produce("payments", b"p6", partition=0)
    p.flush(10)
    b = members("ledger", ["payments"], "b")
    until("the new record", [b], lambda: b.values == [b"p6"])


def test_partitions_added(kafka: ClusterHandle, members: Callable[..., Member]) -> None:
    kafka.create_topic("events", 2)
    kafka.wait_for_topic("events", 2)
    a = members("audit", ["events"], "a", **{"topic.metadata.refresh.interval.ms": "500"})
    b = members("audit", ["events"], "b", **{"topic.metadata.refresh.interval.ms": "500"})
    until("2 partitions", [a, b], lambda: complete([a, b], "events", 2))
    epoch = kafka.consumer_group("audit").group_epoch
    admin = AdminClient({"bootstrap.servers": kafka.bootstrap_servers})
    admin.create_partitions([NewPartitions("events", 4)])["events"].result(10)
    until("4 partitions", [a, b], lambda: complete([a, b], "events", 4) and settled(kafka, "audit", 2))
    assert kafka.consumer_group("audit").group_epoch > epoch


CRASHER = textwrap.dedent("""
    import os, sys
    from confluent_kafka import Consumer
    c = Consumer({"bootstrap.servers": sys.argv[1], "group.id": sys.argv[2], "group.protocol": "consumer",
                  "client.id": "crasher"})
    c.subscribe([sys.argv[3]])
    while not c.assignment():
        c.poll(0.05)
    print("assigned", flush=True)
    os._exit(0)  # no leave: the coordinator finds out when its session ends
""")


@pytest.mark.fakekafka_only
@pytest.mark.fakekafka(clock="frozen")
def test_member_crash_is_fenced_when_its_session_ends(kafka: ClusterHandle, members: Callable[..., Member]) -> None:
    kafka.create_topic("jobs", 2)
    a = members("workers", ["jobs"], "a")
    until("a alone", [a], lambda: a.assignment() == {"jobs": [0, 1]})
    crasher = subprocess.Popen([sys.executable, "-c", CRASHER, kafka.bootstrap_servers, "workers", "jobs"],
                               stdout=subprocess.PIPE, text=True)
    try:
        assert crasher.stdout is not None
        deadline = time.monotonic() + TIMEOUT
        line = ""
        while "assigned" not in line and time.monotonic() < deadline:  # a must let go of one partition first
            a.poll()
            if crasher.poll() is not None:
                line = crasher.stdout.read()
        assert "assigned" in line, "the crashing member never got a partition"
    finally:
        crasher.kill()
        crasher.wait()
    assert len(a.assignment()["jobs"]) == 1
    view = kafka.consumer_group("workers")
    assert len(view.members) == 2
    kafka.advance_clock(45_000)  # group.consumer.session.timeout.ms: the crashed member is fenced
    until("a takes both back", [a], lambda: a.assignment() == {"jobs": [0, 1]} and settled(kafka, "workers", 1))
    assert [m.client_id for m in kafka.consumer_group("workers").members] == ["a"]


@pytest.mark.fakekafka_only
def test_a_revocation_answered_too_late_is_sent_again(kafka: ClusterHandle, members: Callable[..., Member]) -> None:
    """librdkafka drops a ConsumerGroupHeartbeat answer that comes after its heartbeat timeout (the heartbeat
    interval: 0.5 s here) and, while it holds partitions, sends no full request after one. When the broker stalls
    (a loaded machine) after applying the heartbeat whose answer tells `a` to give two partitions to `b`, `a` never
    hears it: that answer keeps a's epoch, so its next heartbeats are not fenced, and Kafka sends an assignment
    once: `a` would keep all four until its rebalance timeout (5 minutes). fakekafka tells a member its assignment
    again until it reports owning it (compat/KNOWN_DIFFERENCES.md). (An answer that moves a member to a new epoch,
    lost the same way, ends in FENCED_MEMBER_EPOCH and a rejoin on both brokers; a member with no partitions sends
    full requests.)"""
    kafka.create_topic("orders", 4)
    a = members("billing", ["orders"], "a")
    until("a alone", [a], lambda: a.assignment() == {"orders": [0, 1, 2, 3]})
    stalled: list[Any] = []

    def stall(answer: Any) -> None:
        told = answer["assignment"]
        if not stalled and told is not None and sum(len(t["partitions"]) for t in told["topic_partitions"]) < 4:
            stalled.append(answer)
            time.sleep(2.0)  # the whole broker, after the heartbeat was applied: past librdkafka's timeout
    kafka.intercept("ConsumerGroupHeartbeat", lambda _: Edit(stall), keep=True, client_id="a")
    b = members("billing", ["orders"], "b")
    until("a and b", [a, b], lambda: complete([a, b], "orders", 4) and settled(kafka, "billing", 2))
    assert stalled, "no answer told a to give partitions up"


def test_consume_transform_produce_with_the_member_epoch(kafka: ClusterHandle, members: Callable[..., Member]) -> None:
    """Offsets sent to a transaction with a KIP-848 member's group metadata (TxnOffsetCommit with its member id
    and epoch) are committed with the transaction."""
    kafka.create_topic("in", 1)
    kafka.create_topic("out", 1)
    kafka.wait_for_topic("in", 1)
    kafka.wait_for_topic("out", 1)
    p = Producer({"bootstrap.servers": kafka.bootstrap_servers})
    for i in range(3):
        p.produce("in", f"i{i}".encode())
    p.flush(10)
    a = members("etl", ["in"], "a", **{"isolation.level": "read_committed"})
    until("3 records", [a], lambda: len(a.values) == 3)
    txn = Producer({"bootstrap.servers": kafka.bootstrap_servers, "transactional.id": "etl-tx"})
    txn.init_transactions(30)
    txn.begin_transaction()
    for v in a.values:
        txn.produce("out", v.upper())
    positions = a.consumer.position(a.consumer.assignment())
    txn.send_offsets_to_transaction(positions, a.consumer.consumer_group_metadata(), 30)
    txn.commit_transaction(30)
    # Kafka writes the transaction's markers (and so the offsets) a moment after EndTxn; fakekafka at once
    kafka.wait_until(lambda: kafka.committed("etl") == {("in", 0): 3}, 30, message="the transaction's offsets")
    assert [r.value for r in kafka.records("out") if r.value is not None] == [b"I0", b"I1", b"I2"]


def group_records(kafka: ClusterHandle, group: str) -> list[tuple[int, Any, Any]]:
    """The group's records in `__consumer_offsets` (its partition read to its end), decoded in Kafka's schemas:
    (record type, key, value or None for a tombstone)."""
    from fakekafka.model.internal_topics import java_string_hash, kafka_abs
    from fakekafka.model.offsets_topic import decode_record
    tp = TopicPartition("__consumer_offsets", kafka_abs(java_string_hash(group)) % 50, 0)
    reader = Consumer({"bootstrap.servers": kafka.bootstrap_servers, "group.id": f"{group}-reader",
                       "enable.auto.commit": False, "isolation.level": "read_uncommitted"})
    try:
        end = reader.get_watermark_offsets(tp, timeout=TIMEOUT)[1]
        reader.assign([tp])
        out: list[tuple[int, Any, Any]] = []
        deadline = time.monotonic() + TIMEOUT
        position = 0
        while position < end:
            assert time.monotonic() < deadline, f"read to {position} of {end}"
            msg = reader.poll(0.2)
            if msg is None or msg.error() is not None:
                continue
            position = msg.offset() + 1
            record_type, key, _, value = decode_record(msg.key(), msg.value())
            if getattr(key, "group", None) == group or getattr(key, "group_id", None) == group:
                out.append((record_type, key, value))
        return out
    finally:
        reader.close()


def test_the_group_as_records_of_consumer_offsets(kafka: ClusterHandle, members: Callable[..., Member]) -> None:
    """What the coordinator writes to `__consumer_offsets` for a KIP-848 member's join, commit and leave, read
    back by a consumer and decoded in Kafka's schemas: the same records, in the same order, on both brokers."""
    kafka.create_topic("ledger", 2)
    kafka.wait_for_topic("ledger", 2)
    a = members("ledger-g", ["ledger"], "a")
    until("a alone", [a], lambda: a.assignment() == {"ledger": [0, 1]} and settled(kafka, "ledger-g", 1))
    a.consumer.commit(offsets=[TopicPartition("ledger", 0, 0)], asynchronous=False)
    a.close()
    view = kafka.consumer_group("ledger-g")
    assert view is not None and (view.state, view.group_epoch, view.assignment_epoch) == ("Empty", 3, 3)
    records = group_records(kafka, "ledger-g")
    kinds = [(t, v is None) for t, _, v in records]
    # joined: member, group epoch, target member, target epoch, current assignment; the commit; left: the member's
    # records go, the group epoch moves on and the empty group's target assignment with it
    assert kinds == [(5, False), (3, False), (7, False), (6, False), (8, False), (1, False),
                     (8, True), (7, True), (5, True), (3, False), (6, False)]
    by_kind = {t: v for t, _, v in records[:6]}
    tid = by_kind[1].topic_id
    member = by_kind[5]
    assert (member.client_id, member.subscribed_topic_names, member.subscribed_topic_regex, member.instance_id,
            member.server_assignor, member.rebalance_timeout_ms) == ("a", ["ledger"], "", None, None, 300_000)
    assert (by_kind[3].epoch, by_kind[6].assignment_epoch) == (2, 2)
    # Kafka's metadata hash of the subscribed topic: of its id (each broker's own, as its records show), name and
    # partitions (one broker, no racks); 0 once no member subscribes to anything
    assert by_kind[3].metadata_hash == group_hash({"ledger": topic_hash(tid, "ledger", [[], []])}) != 0
    assert records[9][2].metadata_hash == 0
    assert [(tp.topic_id, tp.partitions) for tp in by_kind[7].topic_partitions] == [(tid, [0, 1])]
    current = by_kind[8]
    assert (current.member_epoch, current.previous_member_epoch, current.state) == (2, 0, 0)
    assert [(tp.topic_id, tp.partitions, tp.assignment_epochs) for tp in current.assigned_partitions] == \
        [(tid, [0, 1], [2, 2])]  # each partition with the epoch it was assigned at
    assert (records[5][1].topic, records[5][1].partition, by_kind[1].offset) == ("ledger", 0, 0)
    assert (records[9][2].epoch, records[10][2].assignment_epoch, records[10][2].assignment_timestamp) == (3, 3, 0)
