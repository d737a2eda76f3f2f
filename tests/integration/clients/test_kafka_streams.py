"""A Kafka Streams application with processing.guarantee=exactly_once_v2, killed mid-stream and restarted.

The application (tests/integration/clients/java/StreamsTotals.java; Kafka Streams 4.3.1, the newest on Maven Central,
with its own kafka-clients and RocksDB: compat/kafka/streams-pom.xml) keeps per-customer order totals: a repartition
(selectKey), a state store with its changelog, an output topic, all written in one transaction per commit. The test
produces half of the orders, lets the application commit their totals, produces the rest, and SIGKILLs the JVM while
its stream thread holds a transaction open with updates already on the output topic. A second JVM (same application
id and state directory, so the same transactional id) fences the first, restores the store from the changelog and
finishes the input. A read_committed consumer must then see exactly what processing each order once gives: per
customer the counts 1, 2, 3, ... and each order's amount added once, nothing more; the aborted updates stay visible
to read_uncommitted only.

Runs on the `kafka` fixture: fakekafka here, Apache Kafka under `pytest --kafka-real`
(the kafka-real tier: `-m kafka_real`).
Skips (naming .ci/install.sh) without java or the Streams jars.
"""

from __future__ import annotations

import random
import time
import uuid
from collections import Counter, defaultdict
from collections.abc import Callable
from pathlib import Path

import pytest
from confluent_kafka import Consumer, IsolationLevel, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, ConfigResource, OffsetSpec

import fakekafka
from fakekafka.testing.handle import ClusterHandle
from tests import javautil
from tests.integration.clients.streams_app import StreamsApp, compile_app

pytestmark = [pytest.mark.clients, pytest.mark.kafka_real]

ORDERS = 600
CUSTOMERS = 7
PARTITIONS = 3
FREEZE_AFTER = ORDERS * 3 // 4
"""The first JVM stops processing after this many updates: all of the first half's, some of the second's."""
WAIT_S = 60.0
"""Each wait's bound (JVM start-up, the group's rebalance after the old member's 6 s session expires,
restoring the store): generous for a loaded 2-core machine, never reached when things work."""


class CommittedReader:
    """A read_committed consumer on every output partition from offset 0, keeping what it has read."""

    def __init__(self, bootstrap: str, topic: str) -> None:
        self.topic = topic
        self.consumer = Consumer(
            {
                "bootstrap.servers": bootstrap,
                "group.id": f"reader-{uuid.uuid4().hex[:6]}",
                "isolation.level": "read_committed",
                "enable.auto.commit": False,
            }
        )
        self.consumer.assign([TopicPartition(topic, p, 0) for p in range(PARTITIONS)])
        self.records: list[tuple[int, int, str, str]] = []
        """(partition, offset, key, value) in the order read."""

    def pump(self, until: Callable[[], bool], timeout: float = WAIT_S, also: Callable[[], None] | None = None) -> None:
        deadline = time.monotonic() + timeout
        while not until():
            if time.monotonic() > deadline:
                pytest.fail(f"read_committed saw {len(self.records)} output records after {timeout:.0f} s")
            if also is not None:
                also()
            for m in self.consumer.consume(500, 0.2):
                if m.error() is None:
                    self.records.append((m.partition(), m.offset(), m.key().decode(), m.value().decode()))

    def at(self, ends: dict[int, int]) -> bool:
        """Whether this consumer's position has reached `ends` (partition → offset) on every partition."""
        positions = self.consumer.position([TopicPartition(self.topic, p) for p in range(PARTITIONS)])
        return all(tp.offset >= ends[tp.partition] for tp in positions)

    def close(self) -> None:
        self.consumer.close()


def _latest(admin: AdminClient, topic: str, isolation: IsolationLevel) -> dict[int, int]:
    """ListOffsets latest under `isolation`: the high watermark, or the last stable offset for read_committed."""
    futures = admin.list_offsets(
        {TopicPartition(topic, p): OffsetSpec.latest() for p in range(PARTITIONS)},
        isolation_level=isolation,
        request_timeout=30,
    )
    return {tp.partition: f.result().offset for tp, f in futures.items()}


def _open_transaction(admin: AdminClient, topic: str) -> bool:
    """Whether a partition of `topic` holds records of an open transaction (its high watermark is past its last
    stable offset)."""
    hw = _latest(admin, topic, IsolationLevel.READ_UNCOMMITTED)
    lso = _latest(admin, topic, IsolationLevel.READ_COMMITTED)
    return any(hw[p] > lso[p] for p in hw)


def _configs(admin: AdminClient, topic: str, *names: str) -> dict[str, str]:
    """The named configs of `topic`, as DescribeConfigs gives them."""
    resource = ConfigResource(ConfigResource.Type.TOPIC, topic)
    entries = admin.describe_configs([resource])[resource].result(30)
    return {name: entries[name].value for name in names}


@pytest.mark.timeout(300)
def test_exactly_once_v2_across_a_killed_instance(kafka: ClusterHandle, tmp_path: Path) -> None:
    classes, cp = compile_app("StreamsTotals")
    app_id = f"totals-{uuid.uuid4().hex[:8]}"
    source, sink = f"{app_id}-orders", f"{app_id}-out"
    for topic in (source, sink):
        kafka.create_topic(topic, PARTITIONS)
        kafka.wait_for_topic(topic, PARTITIONS)
    rng = random.Random(14)
    orders = [(f"o{i}", f"c{rng.randrange(CUSTOMERS)}", rng.randint(1, 1000)) for i in range(ORDERS)]
    producer = Producer({"bootstrap.servers": kafka.bootstrap_servers, "enable.idempotence": True})

    def produce(batch: list[tuple[str, str, int]]) -> None:
        for order_id, customer, amount in batch:
            producer.produce(source, key=order_id, value=f"{customer}:{amount}")
        assert producer.flush(30) == 0

    admin = AdminClient({"bootstrap.servers": kafka.bootstrap_servers})
    reader = CommittedReader(kafka.bootstrap_servers, sink)
    args = [kafka.bootstrap_servers, app_id, str(tmp_path / "state"), source, sink]
    phases: dict[str, float] = {}
    t0 = time.monotonic()
    with javautil._watch(kafka) as watch:  # fakekafka's warnings and the APIs it served (nothing seen on Kafka)
        try:
            # the first instance: half of the orders committed, then frozen inside a transaction after them
            produce(orders[: ORDERS // 2])
            first = StreamsApp("StreamsTotals", classes, cp, [*args, str(FREEZE_AFTER)], tmp_path / "first.stderr")
            try:
                reader.pump(lambda: len(reader.records) >= ORDERS // 2, also=first.check_alive)
                phases["first half committed"] = time.monotonic() - t0
                produce(orders[ORDERS // 2 :])
                assert first.wait_for("frozen", WAIT_S)["written"] == FREEZE_AFTER
                # its open transaction has updates on the output topic (sent by the producer's own thread)
                kafka.wait_until(lambda: _open_transaction(admin, sink), timeout=WAIT_S)
                stable = _latest(admin, sink, IsolationLevel.READ_COMMITTED)
                reader.pump(lambda: reader.at(stable))
                committed_at_kill = len(reader.records)
            finally:
                first.kill()
            phases["killed"] = time.monotonic() - t0
            assert ORDERS // 2 <= committed_at_kill < FREEZE_AFTER

            # the second instance: fences the first, restores the store from the changelog, finishes the input
            second = StreamsApp("StreamsTotals", classes, cp, [*args, "0"], tmp_path / "second.stderr")
            try:
                reader.pump(lambda: len(reader.records) >= ORDERS, also=second.check_alive)
                phases["all committed"] = time.monotonic() - t0
            finally:
                code = second.stop()
            assert code == 0, second.stderr()
            ends = _latest(admin, sink, IsolationLevel.READ_COMMITTED)
            reader.pump(lambda: reader.at(ends))
            phases["stopped, output read"] = time.monotonic() - t0
        finally:
            reader.close()
    assert not watch.problems, watch.problems

    by_customer: dict[str, list[tuple[int, int]]] = defaultdict(list)
    for _, _, customer, total in sorted(reader.records):  # offset order within each partition
        count, amount_sum = map(int, total.split(","))
        by_customer[customer].append((count, amount_sum))
    amounts: dict[str, list[int]] = defaultdict(list)
    for _, customer, amount in orders:
        amounts[customer].append(amount)
    assert len(reader.records) == ORDERS
    assert sorted(by_customer) == sorted(amounts)
    for customer, totals in by_customer.items():
        counts = [c for c, _ in totals]
        sums = [s for _, s in totals]
        assert counts == list(range(1, len(amounts[customer]) + 1)), customer
        added = Counter(b - a for a, b in zip([0, *sums], sums, strict=False))
        assert added == Counter(amounts[customer]), customer  # every order's amount once, no other
    if isinstance(kafka, fakekafka.Cluster):  # the coordinator's side, which Kafka does not show over the wire
        assert {"InitProducerId", "TxnOffsetCommit", "EndTxn"} <= set(watch.api_calls)
        # transactions version 2 (fakekafka's default, as Kafka 4.4's): Produce v12 adds partitions itself
        assert ("AddPartitionsToTxn" in watch.api_calls) == (kafka.state.config.transaction_version < 2)
        # both instances used one transactional id (the process id kept in the state directory), and the
        # second one's InitProducerId fenced the first's open transaction: no timeout needed to end it
        (txn_id,) = [t for t in kafka.transactions() if t.startswith(app_id)]
        txn = kafka.transaction(txn_id)
        assert txn is not None and ("Ongoing", "PrepareEpochFence") in txn.transitions, txn
    # the killed instance's open transaction was aborted, not lost: read_uncommitted still sees its updates
    assert len(kafka.records(sink)) > ORDERS
    # the input's offsets were committed with the last transaction, and the closed instance left the group
    committed = kafka.committed(app_id)
    assert {p: committed.get((source, p)) for p in range(PARTITIONS)} == kafka.end_offsets(source)
    group = admin.describe_consumer_groups([app_id])[app_id].result(30)
    assert not group.members, group
    # the internal topics are as Streams asked for them
    changelog, repartition = f"{app_id}-totals-changelog", f"{app_id}-by-customer-repartition"
    assert _configs(admin, changelog, "cleanup.policy") == {"cleanup.policy": "compact"}
    assert _configs(admin, repartition, "cleanup.policy", "retention.ms") == {
        "cleanup.policy": "delete",
        "retention.ms": "-1",
    }
    assert kafka.end_offsets(changelog).keys() == kafka.end_offsets(repartition).keys() == set(range(PARTITIONS))
    # Streams deleted the repartition records it had consumed and committed (DeleteRecords)
    purged = admin.list_offsets(
        {TopicPartition(repartition, p): OffsetSpec.earliest() for p in range(PARTITIONS)}, request_timeout=30
    )
    assert sum(f.result().offset for f in purged.values()) > 0
    print(
        f"Kafka Streams exactly_once_v2: {ORDERS} orders, {committed_at_kill} updates committed when killed; "
        + ", ".join(f"{name} at {t:.1f} s" for name, t in phases.items())
    )
