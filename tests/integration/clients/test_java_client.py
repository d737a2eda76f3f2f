"""End-to-end: Kafka's official Java client (kafka-clients 4.4) against fakekafka over the real wire.

One JVM runs every scenario against one broker started for this module: the Java client's one driver,
compat/clients/java/CompatDriver.java in its scenario mode (the compat suite runs the same source as its agent,
so one compile per source hash, by `tests.javautil`, serves both); each test below asserts one scenario's
JSON result, cross-checking what the broker stored. Consumers use assign()+seek with no group.id (the
groups are tests/integration/clients/test_java_groups.py's and the compat suite's). A scenario that needs the broker
changed behind the client's back (a leader epoch bump) asks for it on stdout and waits on stdin. The APIs
the broker served and its warnings are recorded, so tests can check which APIs the client used and that no
handler failed.

Skips (naming .ci/install.sh) when java, javac or the Kafka jars are missing.
"""

from __future__ import annotations

import base64
import hashlib
import uuid
from collections.abc import Iterator
from typing import Any

import pytest

import fakekafka
from compat.clients.java import MAIN, SOURCE, scenario_args
from fakekafka.model.config import TOPIC_CONFIGS
from fakekafka.testing.client import RemoteCluster
from fakekafka.testing.handle import ClusterHandle
from fakekafka.testing.pytest_plugin import cluster_for
from fakekafka.wire.records import Compression, read_header
from tests import javautil
from tests.javautil import JavaRun

pytestmark = [pytest.mark.clients, pytest.mark.kafka_real]

RUN_TIMEOUT_S = 90
MiB = 1024 * 1024


# --------------------------------------------------------------------------------------- the JVM run

def _serve(cluster: fakekafka.Cluster, request: dict[str, Any]) -> str:
    """Carries out what a scenario asked of the broker; returns the line to answer with."""
    if request["request"] == "bump_leader_epoch":
        def bump() -> int:
            p = cluster.state.partition(request["topic"], request["partition"])
            assert p is not None
            p.leader_epoch += 1   # what a leader election does to the partition (one broker: no other leader to
            cluster.state.observers.metadata_changed()  # move to), and a metadata change, as elections count it
            return p.leader_epoch
        return str(cluster.call(bump))
    raise AssertionError(f"unknown request from the Java driver: {request}")


SCENARIOS = ["roundtrip", "compression", "large", "partitions100", "admin_create", "admin_delete", "admin_partitions",
             "admin_describe", "admin_configs", "admin_alter_configs", "admin_client_quotas", "admin_list_offsets",
             "consumer_offsets", "read_committed", "validation"]
STEERED = {"validation"}
"""Scenarios that change the broker behind the client's back: fakekafka only."""


@pytest.fixture(scope="module")
def java(request: pytest.FixtureRequest) -> Iterator[JavaRun]:
    """One broker and one JVM running every scenario; the broker stays up for the tests' checks. The broker is
    the plugin's choice (`cluster_for`): fakekafka, or Apache Kafka under `pytest --kafka-real`, where the
    scenarios that steer the broker are left out."""
    classes = javautil.compile_java(SOURCE)
    with cluster_for(request.config) as cluster:
        if isinstance(cluster, fakekafka.Cluster):
            yield javautil.run_driver(JavaRun(cluster), classes, MAIN, *scenario_args(cluster.bootstrap_servers),
                                      timeout=RUN_TIMEOUT_S, serve=lambda request: _serve(cluster, request))
        else:
            scenarios = [name for name in SCENARIOS if name not in STEERED]
            yield javautil.run_driver(JavaRun(cluster), classes, MAIN,  # type: ignore[arg-type]
                                      *scenario_args(cluster.bootstrap_servers, *scenarios), timeout=RUN_TIMEOUT_S)


def _local(java: JavaRun) -> fakekafka.Cluster | None:
    """The in-process fakekafka, or None on a remote cluster (where the requests served are not ours to see)."""
    return java.cluster if isinstance(java.cluster, fakekafka.Cluster) else None


# ------------------------------------------------------------------------------------------ helpers

def _b(h: str | None) -> bytes | None:
    return None if h is None else bytes.fromhex(h)


def _pattern(size: int) -> bytes:
    return bytes(i % 251 for i in range(251)) * (size // 251) + bytes(range(size % 251))


def _java_uuid(u: uuid.UUID) -> str:
    """org.apache.kafka.common.Uuid#toString: URL-safe base64 without padding."""
    return base64.urlsafe_b64encode(u.bytes).rstrip(b"=").decode()


def _batches(cluster: ClusterHandle, topic: str, partition: int = 0) -> list[bytes]:
    if isinstance(cluster, RemoteCluster):
        return cluster.batches(topic, partition)
    assert isinstance(cluster, fakekafka.Cluster)
    return cluster.call(lambda: list(cluster.state.topics[topic].partitions[partition].log.batches))


def _topic_id(cluster: ClusterHandle, topic: str) -> str:
    if isinstance(cluster, RemoteCluster):
        return _java_uuid(cluster.topic_id(topic))
    assert isinstance(cluster, fakekafka.Cluster)
    return _java_uuid(cluster.call(lambda: cluster.state.topics[topic].topic_id))


def _topic_configs(cluster: ClusterHandle, topic: str) -> dict[str, str]:
    if isinstance(cluster, RemoteCluster):
        return cluster.topic_configs(topic)
    assert isinstance(cluster, fakekafka.Cluster)
    return cluster.call(lambda: dict(cluster.state.topics[topic].configs))


def _cluster_id(cluster: ClusterHandle) -> str:
    if isinstance(cluster, RemoteCluster):
        return cluster.cluster_id()
    assert isinstance(cluster, fakekafka.Cluster)
    return cluster.state.config.cluster_id


# -------------------------------------------------------------------------------------------- tests

ROUNDTRIP = [  # key, value, headers as the driver sends them (timestamps base + index)
    (b"k0", b"v0", [("h1", b"x"), ("h2", None)]),
    (None, b"v1", []),
    (b"k2", None, []),
    (None, None, []),
    (b"k4", b"", [("dup", b"a"), ("dup", b"b"), ("empty", b"")]),
    (b"\x00\xff", b"\x80\x00", []),
    (b"k6", b"v6", []),
]


def test_produce_then_consume_roundtrip(java: JavaRun) -> None:
    r = java.result("roundtrip")
    base = r["base_timestamp"]
    assert [(m["partition"], m["offset"], m["timestamp"]) for m in r["sent"]] == \
        [(0, i, base + i) for i in range(len(ROUNDTRIP))]
    got = [(c["offset"], _b(c["key"]), _b(c["value"]), [(k, _b(v)) for k, v in c["headers"]], c["timestamp"],
            c["timestamp_type"], c["leader_epoch"]) for c in r["records"]]
    assert got == [(i, k, v, h, base + i, "CREATE_TIME", 0) for i, (k, v, h) in enumerate(ROUNDTRIP)]
    assert r["position"] == len(ROUNDTRIP)

    stored = java.cluster.records("java-roundtrip")
    assert [(s.offset, s.key, s.value, s.headers, s.timestamp) for s in stored] == \
        [(i, k, v, h, base + i) for i, (k, v, h) in enumerate(ROUNDTRIP)]
    assert java.cluster.end_offsets("java-roundtrip") == {0: len(ROUNDTRIP)}
    # idempotence is on by default: one producer id, sequences from 0 without gaps
    headers = [read_header(b) for b in _batches(java.cluster, "java-roundtrip")]
    assert len({h.producer_id for h in headers}) == 1 and headers[0].producer_id >= 0
    assert [h.base_sequence for h in headers] == [h.base_offset for h in headers]
    assert java.api_calls["InitProducerId"] >= 1 or not _local(java)


@pytest.mark.parametrize("codec", ["none", "gzip", "snappy", "lz4", "zstd"])
def test_compression(java: JavaRun, codec: str) -> None:
    r = java.result("compression")[codec]
    assert r["received"] == r["sent"]
    topic = f"java-codec-{codec}"
    headers = [read_header(b) for b in _batches(java.cluster, topic)]
    assert {h.compression for h in headers} == {Compression[codec.upper()]}
    assert [s.value.decode() for s in java.cluster.records(topic)] == r["sent"]


def test_one_mib_record(java: JavaRun) -> None:
    r = java.result("large")
    assert r["big_sent"]["offset"] == 0
    assert r["after"]["offset"] == 1
    digest = hashlib.sha256(_pattern(MiB)).hexdigest()
    assert r["consumed"] == [
        {"offset": 0, "key": b"big".hex(), "size": MiB, "sha256": digest},
        {"offset": 1, "key": b"after".hex(), "size": 5, "sha256": hashlib.sha256(b"small").hexdigest()},
    ]
    stored = java.cluster.records("java-large")
    assert [len(s.value) for s in stored] == [MiB, 5] and stored[0].value == _pattern(MiB)


def test_too_large_record_rejected(java: JavaRun) -> None:
    r = java.result("large")
    assert r["too_large_for_topic"] == "RecordTooLargeException"      # 3 MiB > the topic's 2 MiB
    assert r["too_large_for_default"] == "RecordTooLargeException"    # 1.5 MiB > the default 1048588
    assert r["client_side_limit"] == "RecordTooLargeException"        # > the producer's max.request.size
    # refused batches leave nothing behind, and the idempotent producer goes on
    assert r["after_default"]["offset"] == 0
    assert java.cluster.end_offsets("java-large") == {0: 2}
    assert java.cluster.end_offsets("java-large-default") == {0: 1}


def test_hundred_partitions(java: JavaRun) -> None:
    r = java.result("partitions100")
    assert r["consumed"] == {str(p): [f"{i}={p}:{i}" for i in range(3)] for p in range(100)}
    assert r["end_offsets"] == {str(p): 3 for p in range(100)}
    assert java.cluster.end_offsets("java-p100") == {p: 3 for p in range(100)}


def test_admin_create_topics(java: JavaRun) -> None:
    r = java.result("admin_create")
    assert r["created"] == {"topic_id": _topic_id(java.cluster, "java-admin-a"), "num_partitions": 3,
                            "replication_factor": 1, "retention_ms": "12345", "defaults_partitions": 1,
                            "defaults_replication_factor": 1}
    assert r["exists"] == "TopicExistsException"
    assert r["zero_partitions"] == "InvalidPartitionsException"
    assert r["replication_factor_3"] == "InvalidReplicationFactorException"
    assert r["bad_name"] == "InvalidTopicException"
    assert r["too_long_name"] == "InvalidTopicException"
    assert r["collision"] == "InvalidTopicException"
    assert r["bad_config"] == "InvalidConfigurationException"
    assert r["validate_only"] == "ok"
    assert {"java-admin-a", "java-admin-defaults", "java.collide"} <= set(r["topics"])
    assert not {"java-admin-zero", "java-admin-rf3", "java_collide", "java-admin-validate"} & set(r["topics"])
    assert "java-admin-validate" not in java.cluster.topics()
    assert _topic_configs(java.cluster, "java-admin-a") == {"retention.ms": "12345"}


def test_admin_delete_topics(java: JavaRun) -> None:
    r = java.result("admin_delete")
    assert r["by_name"] == "ok"
    assert r["unknown_name"] == "UnknownTopicOrPartitionException"
    assert r["by_id"] == "ok"
    assert r["unknown_id"] == "UnknownTopicIdException"
    assert r["again"] == "UnknownTopicOrPartitionException"
    assert not {"java-admin-del", "java-admin-delid"} & set(r["topics"])
    assert r["recreate"] == "ok"
    assert "java-admin-delid" not in java.cluster.topics()
    assert java.cluster.end_offsets("java-admin-del") == {0: 0}


def test_admin_create_partitions(java: JavaRun) -> None:
    r = java.result("admin_partitions")
    assert r["increase"] == "ok"
    assert r["partitions"] == 5
    assert r["decrease"] == "InvalidPartitionsException"
    assert r["same"] == "InvalidPartitionsException"
    assert r["unknown"] == "UnknownTopicOrPartitionException"
    assert (r["produced"]["partition"], r["produced"]["offset"]) == (4, 0)
    assert java.cluster.end_offsets("java-admin-parts") == {0: 0, 1: 0, 2: 0, 3: 0, 4: 1}


def test_admin_describe_topics(java: JavaRun) -> None:
    r = java.result("admin_describe")
    port = int(java.cluster.bootstrap_servers.rsplit(":", 1)[1])
    node = {"id": 1, "host": "127.0.0.1", "port": port, "rack": None}
    expected = {"name": "java-admin-desc", "topic_id": _topic_id(java.cluster, "java-admin-desc"), "internal": False,
                "partitions": [{"partition": p, "leader": node, "replicas": [1], "isr": [1]} for p in range(3)]}
    assert r["created_id"] == expected["topic_id"]
    assert r["by_name"] == expected
    assert r["by_id"] == expected
    assert r["unknown_name"] == "UnknownTopicOrPartitionException"
    assert r["unknown_id"] == "UnknownTopicIdException"


def test_admin_describe_cluster(java: JavaRun) -> None:
    r = java.result("admin_describe")["cluster"]
    port = int(java.cluster.bootstrap_servers.rsplit(":", 1)[1])
    node = {"id": 1, "host": "127.0.0.1", "port": port, "rack": None}
    assert r == {"cluster_id": _cluster_id(java.cluster), "controller": node, "nodes": [node]}


def test_admin_incremental_alter_configs(java: JavaRun) -> None:
    """The Java Admin's incrementalAlterConfigs: values and sources after SET and APPEND, then SUBTRACT and DELETE
    (the topic's own retention.ms gone, the broker's default back), Kafka's exceptions for a bad value,
    an unknown topic and a static broker config, and the broker's value gone again after DELETE."""
    r = java.result("admin_alter_configs")
    topic = r["topic"]
    assert (topic["retention.ms"]["value"], topic["retention.ms"]["source"]) == ("3600000", "DYNAMIC_TOPIC_CONFIG")
    assert topic["cleanup.policy"]["value"] == "delete,compact"
    assert topic["retention.bytes"]["synonyms"] == [["log.retention.bytes", "1000000000", "DYNAMIC_BROKER_CONFIG"],
                                                    ["log.retention.bytes", "-1", "DEFAULT_CONFIG"]]
    subtracted = r["subtracted"]
    assert (subtracted["cleanup.policy"]["value"], subtracted["cleanup.policy"]["source"]) == (
        "compact", "DYNAMIC_TOPIC_CONFIG")
    assert subtracted["retention.ms"]["value"] == "604800000"
    assert subtracted["retention.ms"]["source"] == "DEFAULT_CONFIG"
    assert subtracted["retention.ms"]["synonyms"] == []  # Kafka 4.4.0 lists no default log.retention.hours here
    assert r["refused"] == "InvalidConfigurationException"
    assert r["unknown_topic"] == "UnknownTopicOrPartitionException"
    assert r["static"] == "InvalidRequestException"
    assert (r["restored"]["retention.bytes"]["value"], r["restored"]["retention.bytes"]["source"]) == (
        "-1", "DEFAULT_CONFIG")


def test_admin_client_quotas(java: JavaRun) -> None:
    """The Java Admin's alterClientQuotas and describeClientQuotas (set, one removed, Kafka's exceptions), and its
    createTopics meeting `controller_mutation_rate` without retrying: ThrottlingQuotaExceededException."""
    r = java.result("admin_client_quotas")
    assert r["set"] == {"controller_mutation_rate": 1.0, "producer_byte_rate": 1048576.0}
    assert r["removed"] == {"controller_mutation_rate": 1.0}
    assert r["unknown_key"] == "InvalidRequestException"
    assert r["wrong_entity"] == "InvalidRequestException"
    assert r["topics_made"] >= 1  # the burst: 11 partitions
    assert r["throttled"]["error"] == "ThrottlingQuotaExceededException"
    assert 0 < r["throttled"]["throttle_time_ms"] <= 11_000 * max(r["topics_made"], 1)
    assert r["cleared"] == {}


def test_admin_describe_configs(java: JavaRun) -> None:
    r = java.result("admin_configs")
    topic, broker = r["topic"], r["broker"]
    assert set(topic) == set(TOPIC_CONFIGS)
    assert topic["cleanup.policy"]["value"] == "compact"
    assert topic["cleanup.policy"]["source"] == "DYNAMIC_TOPIC_CONFIG"
    assert topic["cleanup.policy"]["synonyms"] == [["cleanup.policy", "compact", "DYNAMIC_TOPIC_CONFIG"],
                                                   ["log.cleanup.policy", "delete", "DEFAULT_CONFIG"]]
    assert (topic["max.message.bytes"]["value"], topic["max.message.bytes"]["type"]) == ("200000", "INT")
    assert (topic["retention.ms"]["value"], topic["retention.ms"]["source"]) == ("604800000", "DEFAULT_CONFIG")
    assert not any(e["sensitive"] for e in topic.values())
    assert r["broker_id"] == "1"
    assert broker["message.max.bytes"]["value"] == "1048588"
    assert broker["broker.id"]["value"] == "1"
    assert broker["num.partitions"]["source"] == "DEFAULT_CONFIG"
    assert r["unknown_topic"] == "UnknownTopicOrPartitionException"


def test_admin_list_offsets(java: JavaRun) -> None:
    r = java.result("admin_list_offsets")
    base = r["base"]

    def at(offset: int, ts: int | None = None, epoch: int | None = 0) -> dict[str, Any]:
        return {"offset": offset, "timestamp": -1 if ts is None else base + ts, "leader_epoch": epoch}

    none = {"offset": -1, "timestamp": -1, "leader_epoch": None}
    # partition 0 holds timestamps (base +) 0, 100, 300, 200, 250 | 400, 350 in two batches; partition 1 is empty
    assert r["earliest"] == {"p0": at(0), "p1": at(0)}
    assert r["latest"] == {"p0": at(7), "p1": at(0)}
    assert r["max_timestamp"] == {"p0": at(5, 400), "p1": none}
    assert r["ts_150"] == {"p0": at(2, 300), "p1": none}
    assert r["ts_300"] == {"p0": at(2, 300), "p1": none}
    assert r["ts_360"] == {"p0": at(5, 400), "p1": none}
    assert r["ts_future"] == {"p0": none, "p1": none}
    assert r["ts_past"] == {"p0": at(0, 0), "p1": none}
    assert java.api_calls["ListOffsets"] >= 8 or not _local(java)


def test_consumer_offset_lookups(java: JavaRun) -> None:
    r = java.result("consumer_offsets")
    base = r["base"]
    assert r["beginning"] == {"p0": 0, "p1": 0}
    assert r["end"] == {"p0": 5, "p1": 0}

    def at(offset: int) -> dict[str, Any]:
        return {"offset": offset, "timestamp": base + 100 * offset, "leader_epoch": 0}

    assert r["ts_-1000"] == {"p0": at(0), "p1": None}
    assert r["ts_0"] == {"p0": at(0), "p1": None}
    assert r["ts_150"] == {"p0": at(2), "p1": None}
    assert r["ts_400"] == {"p0": at(4), "p1": None}
    assert r["ts_500"] == {"p0": None, "p1": None}


def test_read_committed_consumer_reads_everything(java: JavaRun) -> None:
    r = java.result("read_committed")
    assert r["values"] == [f"{i}=v{i}" for i in range(20)]
    assert r["end_offset"] == 20
    assert r["position"] == 20
    assert len(_batches(java.cluster, "java-read-committed")) >= 3


def test_position_validation_after_metadata_refresh(java: JavaRun) -> None:
    cluster = _local(java)
    if cluster is None:
        pytest.skip("bumps the partition's leader epoch behind the client's back: needs an in-process fakekafka")
    r = java.result("validation")
    assert r["first"] == [0, 1, 2, 3, 4]
    assert r["idle"] == []
    assert r["bump"] == "1"
    assert r["second"] == [{"offset": o, "leader_epoch": 1} for o in range(5, 10)]
    assert r["after_seek_epoch_0"] == list(range(3, 10))
    assert r["after_seek_epoch_1"] == [8, 9]
    assert r["position"] == 10
    assert java.api_calls["OffsetForLeaderEpoch"] >= 2
    epochs = cluster.call(lambda: cluster.state.topics["java-validation"].partitions[0].log.epochs)
    assert [(e.epoch, e.start_offset) for e in epochs] == [(0, 0), (1, 5)]


def test_every_scenario_ran_and_the_broker_logged_no_problem(java: JavaRun) -> None:
    failed = {name: r["error"].splitlines()[0] for name, r in java.results.items() if not r["ok"]}
    assert not failed
    assert set(java.results) >= set(SCENARIOS) - (set() if _local(java) else STEERED)
    assert java.server_problems == []
    assert java.seconds < 60, f"the JVM run took {java.seconds:.1f}s"
