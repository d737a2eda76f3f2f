"""Faults under Spark's Kafka connector: a broker of a 3-broker cluster killed under a running streaming query,
a leader moved mid-stream, injected Fetch and ListOffsets errors, and slow Fetches. The query recovers as the
connector does against Kafka (its Java client refreshes metadata and retries; the driver retries offset
lookups), and every record is read once. Each runs on fakekafka and, under --kafka-real, on Apache Kafka: the
broker kill SIGKILLs a node's JVM of a 3-node Kafka, the leader move is an operator's (a reassignment putting
another replica first, then a preferred election: `RemoteCluster.move_leader`) on that same cluster before the
kill, and the errors and latency are injected by the protocol-aware proxy in front of Kafka (`kafka_proxy`), which
the query then bootstraps from; on fakekafka they are the cluster's own fault rules."""

from __future__ import annotations

import threading
from typing import Any

import pytest

pytest.importorskip("pyspark", reason="needs pyspark: pip install 'fakekafka[spark]'")

from fakekafka import Cluster
from tests.integration.spark.conftest import rows, run_available_now, source

pytestmark = [pytest.mark.spark, pytest.mark.kafka_real]


def produce(kafka: Cluster, topic: str, count: int, partitions: int, start: int = 0) -> None:
    for i in range(start, start + count):
        kafka.produce(topic, f"r{i}".encode(), partition=i % partitions)


class Collected:
    """foreachBatch rows by batch id (a batch replayed after a failure overwrites itself)."""

    def __init__(self) -> None:
        self.batches: dict[int, list[tuple[int, int]]] = {}
        self.lock = threading.Lock()

    def __call__(self, df: Any, batch_id: int) -> None:
        got = sorted((r.partition, r.offset) for r in df.collect())
        with self.lock:
            self.batches[batch_id] = got

    def read(self) -> list[tuple[int, int]]:
        with self.lock:
            return [po for rs in self.batches.values() for po in rs]


def start_query(spark: Any, kafka: Cluster, topic: str, sink: Collected, checkpoint: Any, **options: Any) -> Any:
    return (spark.readStream.format("kafka")
            .options(**source(kafka, subscribe=topic, startingOffsets="earliest", **options))
            .load().writeStream.foreachBatch(sink).option("checkpointLocation", str(checkpoint))
            .trigger(processingTime="200 milliseconds").start())


class Producer(threading.Thread):
    """Writes "r0", "r1", ... to the topic's partitions in turn, one record every 20 ms, until stopped: an
    idempotent producer with acks=all (confluent-kafka), as a pipeline's upstream writes through a broker crash.
    Keeps what was acknowledged and any delivery error."""

    def __init__(self, bootstrap: str, topic: str, partitions: int) -> None:
        super().__init__(daemon=True)
        from confluent_kafka import Producer as KafkaProducer
        self.producer = KafkaProducer({"bootstrap.servers": bootstrap, "enable.idempotence": True, "acks": "all",
                                       "linger.ms": 0, "delivery.timeout.ms": 120000})
        self.topic, self.partitions = topic, partitions
        self.acked: list[tuple[int, int, bytes]] = []
        self.errors: list[str] = []
        self.stopping = threading.Event()

    def delivered(self, err: Any, msg: Any) -> None:
        if err is not None:
            self.errors.append(str(err))
        else:
            self.acked.append((msg.partition(), msg.offset(), msg.value()))

    def run(self) -> None:
        i = 0
        while not self.stopping.wait(0.02):  # the pace: poll() returns at once while callbacks are due
            self.producer.produce(self.topic, f"r{i}".encode(), partition=i % self.partitions,
                                  on_delivery=self.delivered)
            self.producer.poll(0)
            i += 1

    def finish(self) -> None:
        self.stopping.set()
        self.join(10)
        assert self.producer.flush(120) == 0, "records still undelivered 120 s after the producer stopped"


def leader_of(admin: Any, topic: str, partition: int) -> int:
    """The partition's leader as a client's metadata shows it (the same on fakekafka and on Kafka)."""
    return admin.list_topics(topic, timeout=10).topics[topic].partitions[partition].leader


def going(query: Any, producer: Producer, predicate: Any) -> Any:
    """`predicate` for wait_until, failing at once, with the cause, when the query or the producer failed (rather
    than a timeout saying neither)."""
    def check() -> Any:
        if not query.isActive:
            raise AssertionError(f"the query stopped: {query.exception()}")
        if producer.errors:
            raise AssertionError(f"the producer's delivery errors: {producer.errors[:5]}")
        return predicate()
    return check


def faults(request: pytest.FixtureRequest, kafka: Any) -> Any:
    """What injects the faults and where the query bootstraps: the in-process cluster itself, or, on a cluster
    fakekafka cannot steer (--kafka-real's Kafka), the `kafka_proxy` in front of it (the same fault rules)."""
    return kafka if isinstance(kafka, Cluster) else request.getfixturevalue("kafka_proxy")


@pytest.mark.fakekafka(brokers=3)
def test_stream_follows_a_leader_moved_mid_stream(spark, kafka, tmp_path):
    """Runs before the broker kill: under --kafka-real both share one 3-node Kafka, which the kill retires."""
    kafka.create_topic("t", 1, replication_factor=3)
    produce(kafka, "t", 5, 1)
    sink = Collected()
    query = start_query(spark, kafka, "t", sink, tmp_path)
    try:
        kafka.wait_until(lambda: len(sink.read()) == 5, timeout=60, message="the first 5 records")
        state = kafka.partition_state("t", 0)
        successor = next(r for r in state["isr"] if r != state["leader"])
        kafka.move_leader("t", 0, successor)
        assert kafka.partition_state("t", 0)["leader"] == successor
        produce(kafka, "t", 5, 1, start=5)
        kafka.wait_until(lambda: len(sink.read()) == 10, timeout=90, message="the 5 written after the move")
        assert query.exception() is None
    finally:
        query.stop()
    kafka.assert_consumed_exactly_once("t", sink.read())


@pytest.mark.fakekafka(brokers=3)
@pytest.mark.timeout(300)
def test_stream_survives_the_leaders_broker_being_killed(spark, kafka, kill_broker, tmp_path):
    """A replicated topic (3 replicas, min.insync.replicas 2) written to throughout; the broker leading
    partition 0 is SIGKILLed (on Kafka: its JVM) while the query runs. The query carries on, reading the
    records written after the crash from the new leaders, and holds every acknowledged record exactly once."""
    from confluent_kafka.admin import AdminClient
    kafka.create_topic("t", 2, replication_factor=3, configs={"min.insync.replicas": "2"})
    admin = AdminClient({"bootstrap.servers": kafka.bootstrap_servers})
    producer = Producer(kafka.bootstrap_servers, "t", 2)
    producer.start()
    sink = Collected()
    # a pipeline that wants a quick failover shortens its clients' timeouts: on Kafka the dead node leads its
    # partitions until the controller fences it (broker.session.timeout.ms, 9 s), and the connector's Kafka
    # clients met it there and waited out default.api.timeout.ms (60 s) before retrying (fakekafka re-elects
    # at once: compat/KNOWN_DIFFERENCES.md)
    timeouts = {"kafka.default.api.timeout.ms": 10000, "kafka.request.timeout.ms": 10000}
    query = start_query(spark, kafka, "t", sink, tmp_path, **timeouts)
    try:
        kafka.wait_until(going(query, producer, lambda: len(sink.read()) >= 20), timeout=90, interval=0.1,
                         message="20 records before the crash")
        killed = leader_of(admin, "t", 0)
        before = {p: max(o for q, o, _ in producer.acked if q == p) for p in (0, 1)}
        kill_broker(killed)

        def read_past_the_crash() -> bool:
            got = sink.read()
            return all(any(q == p and o > before[p] + 20 for q, o in got) for p in (0, 1))
        kafka.wait_until(going(query, producer, read_past_the_crash), timeout=120, interval=0.1,
                         message="20 records of each partition written after the crash")
        assert leader_of(admin, "t", 0) != killed
        producer.finish()
        acked = {(p, o) for p, o, _ in producer.acked}
        kafka.wait_until(going(query, producer, lambda: acked <= set(sink.read())), timeout=90, interval=0.1,
                         message=f"every acknowledged record ({len(acked)})")
        assert query.exception() is None
    finally:
        producer.stopping.set()
        query.stop()
    assert producer.errors == []
    kafka.assert_consumed_exactly_once("t", sink.read())
    assert set(sink.read()) == acked, "the sink differs from what the producer had acknowledged"


@pytest.mark.parametrize(("api", "error"), [("Fetch", "NOT_LEADER_OR_FOLLOWER"), ("Fetch", "UNKNOWN_SERVER_ERROR"),
                                            ("ListOffsets", "LEADER_NOT_AVAILABLE")])
def test_injected_errors_are_retried(spark, kafka, request, tmp_path, api, error):
    kafka.create_topic("t", 2)
    produce(kafka, "t", 8, 2)
    steer = faults(request, kafka)
    fault = steer.inject_error(api, error, count=2, topic="t")
    got = rows(run_available_now(spark, source(steer, subscribe="t", startingOffsets="earliest"), tmp_path))
    assert fault.fired == 2
    kafka.assert_consumed_exactly_once("t", [(r.partition, r.offset) for r in got])


def test_slow_fetches_still_read_everything(spark, kafka, request, tmp_path):
    kafka.create_topic("t", 2)
    produce(kafka, "t", 8, 2)
    steer = faults(request, kafka)
    fault = steer.inject_latency(300, "Fetch", count=4)
    got = rows(run_available_now(spark, source(steer, subscribe="t", startingOffsets="earliest"), tmp_path))
    assert fault.fired == 4
    kafka.assert_consumed_exactly_once("t", [(r.partition, r.offset) for r in got])
