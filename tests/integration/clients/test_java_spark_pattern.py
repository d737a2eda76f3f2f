"""Spark's JVM Kafka connector's call pattern, made by the Java client against fakekafka.

The connector jar (spark-sql-kafka-0-10) cannot be installed here, so
tests/integration/clients/java/SparkCallPattern.java
re-creates how it uses kafka-clients: the driver's Admin-based offset reader (describeTopics, the
pattern path over listTopics, listOffsets at earliest/latest/timestamps with the query's isolation
level), the deprecated consumer-based reader (a subscribed consumer in a spark-kafka-source-... group,
poll(0), seekToBeginning/seekToEnd/position, offsetsForTimes), the executors' fetch-then-verify loop
(assign + seek + poll + position + the available range, skipping invisible offsets), the
failOnDataLoss paths after the log start moved (Admin.deleteRecords), and the sink's shared producer.
Each with the configs KafkaSourceProvider forces. One JVM runs every scenario against one broker that
this module fills first; each test asserts one scenario's JSON against the broker's stored state.

Transactions are not implemented in fakekafka, so the committed transactions that put invisible
offsets (markers) into spark-txn are written into the partition's log directly, as the transaction
coordinator's markers would be. Skips (naming .ci/install.sh) without java, javac or the Kafka jars.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import fakekafka
from fakekafka.model.cluster import ClusterState
from fakekafka.wire.records import build_batch, read_header
from tests import javautil
from tests.javautil import JavaRun

pytestmark = pytest.mark.clients

JAVA_SOURCE = Path(__file__).resolve().parent / "java" / "SparkCallPattern.java"
RUN_TIMEOUT_S = 120
BASE = int(time.time() * 1000) - 3_600_000   # spark-src's timestamps: an hour ago, then + 100 * i etc.
SRC = {0: [BASE + 100 * i for i in range(5)], 1: [BASE + 1000 + i for i in range(3)],
       2: [BASE + 50 + i for i in range(2)]}
TXN_LAYOUT = ["plain", "plain", "txn", "txn", "txn", "marker", "plain", "plain", "txn", "txn", "marker"]
VISIBLE_TXN_OFFSETS = [o for o, kind in enumerate(TXN_LAYOUT) if kind != "marker"]


# ------------------------------------------------------------------------------------- the broker

def _commit_marker(producer_id: int, epoch: int, timestamp: int) -> bytes:
    """A COMMIT control batch: key (version 0, type 1), value (version 0, coordinator epoch 0)."""
    return build_batch([{"key": b"\x00\x00\x00\x01", "value": b"\x00\x00\x00\x00\x00\x00", "timestamp": timestamp}],
                       producer_id=producer_id, producer_epoch=epoch, transactional=True, control=True)


def _fill(cluster: fakekafka.Cluster) -> None:
    """The topics the scenarios read, and the ones they write to (created empty, as Spark expects). The sinks keep
    every record whatever its age: some rows are stamped in 2023, and the retention check 30 s after the broker
    starts would delete a segment that held only those."""
    for name, partitions in [("spark-src", 3), ("spark-src-extra", 1), ("other-src", 1), ("spark-grow", 1),
                             ("spark-txn", 1), ("spark-loss", 1), ("spark-sink", 3), ("spark-sink-b", 1)]:
        cluster.create_topic(name, partitions, configs={"retention.ms": "-1"} if "sink" in name else None)
    for p, stamps in SRC.items():
        for i, ts in enumerate(stamps):
            cluster.produce("spark-src", f"v{p}.{i}".encode(), key=f"k{p}.{i}".encode(), partition=p, timestamp=ts,
                            headers=[("i", str(i).encode()), ("none", None)])
    cluster.produce("spark-src-extra", b"e0", timestamp=BASE)
    cluster.produce("other-src", b"o0", timestamp=BASE)
    for i in range(2):
        cluster.produce("spark-grow", f"g{i}".encode(), timestamp=BASE + i)

    def write(state: ClusterState) -> None:
        txn = state.partition("spark-txn", 0)
        loss = state.partition("spark-loss", 0)
        assert txn is not None and loss is not None
        code, pid, epoch = state.transactions.init_producer_id("spark-txn-writer", 60000)
        assert code == 0
        sequence = 0
        offset = 0
        while offset < len(TXN_LAYOUT):
            kind = TXN_LAYOUT[offset]
            if kind == "plain":
                r = state.append(txn, build_batch([{"key": f"p{offset}".encode(), "value": f"plain-{offset}".encode(),
                                                    "timestamp": BASE + offset}]))
                assert r.error == 0, r
                offset += 1
            elif kind == "txn":
                n = TXN_LAYOUT.index("marker", offset) - offset
                batch = build_batch([{"key": f"t{offset + i}".encode(), "value": f"txn-{offset + i}".encode(),
                                      "timestamp": BASE + offset + i} for i in range(n)],
                                    producer_id=pid, producer_epoch=epoch, base_sequence=sequence, transactional=True)
                r = state.append(txn, batch)
                assert r.error == 0, r
                sequence += n
                offset += n
            else:  # what WriteTxnMarkers stores when the coordinator commits
                marker = _commit_marker(pid, epoch, BASE + offset)
                txn.log.append(marker, read_header(marker), txn.leader_epoch)
                txn.log.high_watermark = txn.log.log_end_offset
                state.notify(txn)
                offset += 1
        for b in range(5):  # spark-loss: offsets 0..9 in five batches of two
            r = state.append(loss, build_batch([{"value": f"l{2 * b + i}".encode(), "timestamp": BASE + 2 * b + i}
                                                for i in range(2)]))
            assert r.error == 0, r
    cluster.call(lambda: write(cluster.state))


# -------------------------------------------------------------------------------------- the JVM run

@pytest.fixture(scope="module")
def spark() -> Iterator[JavaRun]:
    """One broker, filled, and one JVM making every scenario's calls; the broker stays up for the checks."""
    classes = javautil.compile_java(JAVA_SOURCE)
    with fakekafka.Cluster(auto_create_topics=False) as cluster:
        _fill(cluster)
        yield javautil.run_driver(JavaRun(cluster), classes, "SparkCallPattern", cluster.bootstrap_servers,
                                  str(BASE), timeout=RUN_TIMEOUT_S, log_level="error")


# ------------------------------------------------------------------------------------------ helpers

def _b(h: str | None) -> bytes | None:
    return None if h is None else bytes.fromhex(h)


def _ends(cluster: fakekafka.Cluster, *topics: str) -> dict[str, int]:
    return {f"{t}-{p}": end for t in topics for p, end in cluster.end_offsets(t).items()}


def _first_at_or_after(cluster: fakekafka.Cluster, topic: str, target: int) -> dict[str, int]:
    """Per partition: the first stored offset whose timestamp is >= target, else the end offset (Spark's
    no-match-means-latest), computed from what the broker stored."""
    out = {}
    for p, end in cluster.end_offsets(topic).items():
        hits = [r.offset for r in cluster.records(topic, p) if r.timestamp >= target]
        out[f"{topic}-{p}"] = hits[0] if hits else end
    return out


def _sink_rows(task: str) -> list[tuple[str, bytes | None, bytes | None, list[tuple[str, bytes | None]], int | None,
                                   int | None]]:
    """SparkCallPattern.sinkRows: (topic, key, value, headers, partition, timestamp) per row."""
    rows = []
    for i in range(12):
        topic = "spark-sink-b" if i == 11 else "spark-sink"
        key = None if i % 4 == 3 else f"{task}-k{i}".encode()
        value = None if i == 7 else f"{task}-v{i}".encode()
        headers: list[tuple[str, bytes | None]] = \
            [("h", f"x{i}".encode()), ("empty", b""), ("null", None)] if i % 3 == 1 else []
        partition = i % 3 if i % 2 == 0 and i != 11 else None
        timestamp = 1_700_000_000_000 + i if i % 5 == 0 else None
        rows.append((topic, key, value, headers, partition, timestamp))
    return rows


# -------------------------------------------------------------------------------------------- tests

def test_sink_shared_producer_writes_every_row(spark: JavaRun) -> None:
    r = spark.result("sink")
    acks = {a["row"]: a for a in r["acks"]}
    assert len(acks) == 24
    stored = {(t, rec.partition, rec.offset): rec for t in ("spark-sink", "spark-sink-b")
              for rec in spark.cluster.records(t)}
    assert len(stored) == 24
    for task in ("t0", "t1"):
        for i, (topic, key, value, headers, partition, timestamp) in enumerate(_sink_rows(task)):
            ack = acks[f"{task}/{i}"]
            assert ack["topic"] == topic
            if partition is not None:
                assert ack["partition"] == partition
            rec = stored[(topic, ack["partition"], ack["offset"])]
            assert (rec.key, rec.value, rec.headers) == (key, value, headers)
            if timestamp is not None:
                assert rec.timestamp == ack["timestamp"] == timestamp
            else:  # the producer stamps the send time
                assert r["before"] <= rec.timestamp == ack["timestamp"] <= r["after"]
    ends = spark.cluster.end_offsets("spark-sink")
    assert sum(ends.values()) == 22 and spark.cluster.end_offsets("spark-sink-b") == {0: 2}
    assert r["missing_partition"] == "TimeoutException"   # partition 5 of a one-partition topic
    assert spark.api_calls["Produce"] >= 1 and spark.api_calls["InitProducerId"] >= 1


@pytest.mark.parametrize("level", ["read_uncommitted", "read_committed"])
def test_admin_reader_partitions_and_offsets(spark: JavaRun, level: str) -> None:
    r = spark.result("admin_reader")[level]
    cluster = spark.cluster
    src = _ends(cluster, "spark-src")
    assert src == {"spark-src-0": 5, "spark-src-1": 3, "spark-src-2": 2}
    extra = _ends(cluster, "spark-src-extra")
    assert r["subscribe"] == {"partitions": sorted(src), "earliest": dict.fromkeys(src, 0), "latest": src,
                              "latest_known": src}
    # Spark's pattern path finds the regex anywhere in a name: spark-src-extra matches, other-src does not
    both = src | extra
    assert r["pattern"] == {"partitions": sorted(both), "earliest": dict.fromkeys(both, 0), "latest": both,
                            "latest_known": both}
    assigned = {k: v for k, v in src.items() if k != "spark-src-1"}
    assert r["assign"] == {"partitions": sorted(assigned), "earliest": dict.fromkeys(assigned, 0),
                           "latest": assigned, "latest_known": assigned}
    ts = r["timestamps"]
    assert ts["specific_ending"] == src   # no record that late: ending offsets become latest
    assert ts["specific_starting_no_match_error"] == \
        f"No offset matched from request of topic-partition spark-src-2 and timestamp {BASE + 10_000}."
    assert ts["specific_starting_no_match_latest"] == _first_at_or_after(cluster, "spark-src", BASE + 250) == \
        {"spark-src-0": 3, "spark-src-1": 0, "spark-src-2": 2}


def test_admin_reader_global_timestamps(spark: JavaRun) -> None:
    r = spark.result("admin_reader")["global_timestamp"]
    for delta, offsets in r.items():
        assert offsets == _first_at_or_after(spark.cluster, "spark-src", BASE + int(delta)), delta
    assert r["150"] == {"spark-src-0": 2, "spark-src-1": 0, "spark-src-2": 2}
    assert r["5000"] == {"spark-src-0": 5, "spark-src-1": 3, "spark-src-2": 2}


def test_admin_reader_sees_added_partitions_and_missing_topics(spark: JavaRun) -> None:
    r = spark.result("admin_reader")
    assert r["grow"] == {"before": {"spark-grow-0": 2},
                         "after": {"spark-grow-0": 2, "spark-grow-1": 0, "spark-grow-2": 0},
                         "added_earliest": {"spark-grow-1": 0, "spark-grow-2": 0},
                         "partitions_seen": ["spark-grow-0", "spark-grow-1", "spark-grow-2"]}
    assert spark.cluster.end_offsets("spark-grow") == {0: 2, 1: 0, 2: 0}
    assert r["subscribe_missing_topic"] == "UnknownTopicOrPartitionException"
    assert "spark-gone" not in spark.cluster.topics()


def test_deprecated_consumer_reader(spark: JavaRun) -> None:
    r = spark.result("deprecated_reader")
    cluster = spark.cluster
    src = _ends(cluster, "spark-src")
    sub = r["subscribe"]
    assert sub["group_id"].startswith("spark-kafka-source-") and sub["group_id"].endswith("-driver-0")
    assert sub["assignment"] == sorted(src)
    assert sub["earliest"] == dict.fromkeys(src, 0)
    assert sub["latest"] == src
    assert sub["specific"] == {"spark-src-0": 2, "spark-src-1": 0, "spark-src-2": src["spark-src-2"]}
    assert sub["offsets_for_times_0"] == {f"spark-src-{p}": {"offset": 0, "timestamp": stamps[0]}
                                          for p, stamps in SRC.items()}
    assert sub["by_timestamp_0"] == dict.fromkeys(src, 0)
    pat = r["pattern"]
    both = src | _ends(cluster, "spark-src-extra")
    assert pat["group_id"] == sub["group_id"][:-1] + "1"
    assert pat["assignment"] == sorted(both)   # the consumer's Pattern must match the whole name
    assert pat["latest"] == both
    assert pat["specific"] == {"spark-src-0": 2, "spark-src-1": 0, "spark-src-2": 2, "spark-src-extra-0": 1}
    for group_id in (sub["group_id"], pat["group_id"]):
        group = cluster.group(group_id)
        assert group is not None and group.protocol_type == "consumer"
        assert group.generation_id >= 1 and group.state == "Empty" and group.members == []  # joined, then left
        assert cluster.committed(group_id) == {}   # enable.auto.commit=false, and Spark never commits
    assert spark.api_calls["JoinGroup"] >= 2 and spark.api_calls["LeaveGroup"] >= 2


@pytest.mark.parametrize("level", ["read_uncommitted", "read_committed"])
def test_executor_loop_skips_transaction_markers(spark: JavaRun, level: str) -> None:
    r = spark.result(f"executor_{level}")
    stored = {rec.offset: rec for rec in spark.cluster.records("spark-txn", control=True)}
    assert sorted(stored) == list(range(len(TXN_LAYOUT)))   # markers are stored records too
    assert [o for o, rec in stored.items() if rec.key == b"\x00\x00\x00\x01"] == [5, 10]

    def rows(offsets: list[int]) -> list[dict[str, Any]]:
        return [{"offset": o, "key": stored[o].key.hex(), "value": stored[o].value.hex(), "headers": [],
                 "timestamp": stored[o].timestamp, "timestamp_type": "CreateTime"} for o in offsets]

    whole = r["whole"]
    assert (whole["from"], whole["until"]) == (0, spark.cluster.end_offsets("spark-txn")[0]) == (0, 11)
    assert whole["records"] == rows(VISIBLE_TXN_OFFSETS)
    assert whole["next_offset"] == 10
    assert r["whole_counters"]["events"] == ["invisible [5, 6)", "invisible [10, 11)"]
    assert r["whole_counters"]["data_loss"] == 0 and r["whole_counters"]["offset_out_of_range"] == 0
    assert r["from_marker"]["records"] == rows([6, 7, 8])
    assert r["from_marker_counters"]["events"] == ["invisible [5, 6)"]
    assert r["only_marker"]["records"] == [] and r["only_marker_counters"]["events"] == ["invisible [10, 11)"]
    assert r["past_end_fail_on_data_loss"] == "DataLoss"
    assert r["whole_counters"]["consumers"] == 1   # one assigned consumer per partition, reused

    src = r["src"]
    assert (src["from"], src["until"]) == (1, 5)
    assert [(x["offset"], _b(x["key"]), _b(x["value"]), [(k, _b(v)) for k, v in x["headers"]], x["timestamp"])
            for x in src["records"]] == \
        [(rec.offset, rec.key, rec.value, rec.headers, rec.timestamp) for rec in spark.cluster.records("spark-src", 0)
         if rec.offset >= 1]
    # the executors' group id is only a label: assign() never joins a group or commits
    assert r["group_id"].startswith("spark-kafka-relation-") and r["group_id"].endswith("-executor")
    assert spark.cluster.group(r["group_id"]) is None


def test_data_loss_after_the_log_start_moves(spark: JavaRun) -> None:
    r = spark.result("data_loss")
    tp = "spark-loss-0"
    assert r["offsets_before"] == {"earliest": {tp: 0}, "latest": {tp: 10}}
    assert [x["offset"] for x in r["batch1"]["records"]] == [0, 1, 2, 3]
    assert r["low_watermark"] == 5
    assert r["offsets_after"] == {"earliest": {tp: 5}, "latest": {tp: 10}}
    assert r["timestamp_of_deleted_record"] == {"offset": 5, "timestamp": BASE + 5}
    assert r["fail_on_data_loss"] == {"error": "DataLoss", "start": 4, "end": 10, "cause": "OffsetOutOfRangeException"}
    assert r["fail_counters"]["events"] == ["out of range 4"]
    assert [(x["offset"], _b(x["value"])) for x in r["skip_lost"]["records"]] == \
        [(o, f"l{o}".encode()) for o in range(5, 10)]
    assert r["skip_counters"]["offset_out_of_range"] == 1 and r["skip_counters"]["data_loss"] == 1
    assert r["skip_counters"]["events"] == ["out of range 4", "skip [4, 5)"]
    assert r["past_end"]["records"] == []
    assert r["past_end_counters"]["events"] == ["out of range 10",
                                                "skip [10, 12) outside Range[earliest=5, latest=10]"]
    assert r["past_end_fail"] == "DataLoss [10, 12)"
    assert r["delete_past_end"] == "OffsetOutOfRangeException"
    assert r["delete_below_start_low_watermark"] == 5   # deleting below the log start changes nothing

    def state() -> tuple[int, list[int], int]:
        log = spark.cluster.state.partition("spark-loss", 0).log  # type: ignore[union-attr]
        return log.log_start_offset, list(log.base_offsets), log.high_watermark
    # whole batches below the log start are gone; the one holding it stays, its first record unreadable
    assert spark.cluster.call(state) == (5, [4, 6, 8], 10)
    assert spark.api_calls["DeleteRecords"] == 3


def test_describe_cluster(spark: JavaRun) -> None:
    r = spark.result("describe_cluster")
    port = int(spark.cluster.bootstrap_servers.rsplit(":", 1)[1])
    node = {"id": 1, "host": "127.0.0.1", "port": port, "rack": None}
    assert r == {"cluster_id": spark.cluster.state.config.cluster_id, "controller": node, "nodes": [node]}


def test_every_scenario_ran_and_the_broker_logged_no_problem(spark: JavaRun) -> None:
    failed = {name: r["error"].splitlines()[0] for name, r in spark.results.items() if not r["ok"]}
    assert not failed
    assert set(spark.results) == {"sink", "admin_reader", "deprecated_reader", "executor_read_uncommitted",
                                  "executor_read_committed", "data_loss", "describe_cluster"}
    assert spark.server_problems == []
    assert spark.seconds < 90, f"the JVM run took {spark.seconds:.1f}s"
