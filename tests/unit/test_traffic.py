"""What the server tells request listeners (recordings build on it), checked against real clients."""

from __future__ import annotations

import time

import pytest

import fakekafka
from fakekafka.observe.records import RequestRecord, error_codes_in
from fakekafka.observe.traffic import count_records, touched
from fakekafka.wire.records import build_batch

confluent_kafka = pytest.importorskip("confluent_kafka")


def test_count_records_reads_batch_headers() -> None:
    one = build_batch([{"value": b"a"}, {"value": b"b"}, {"value": b"c"}])
    two = build_batch([{"value": b"d"}])
    assert count_records(bytes(one) + bytes(two)) == 4
    assert count_records((bytes(one), bytes(two))) == 4
    assert count_records(b"") == 0
    assert count_records(b"\x00" * 10) == 0


def test_error_codes_in_finds_nested_codes_and_skips_arrays_of_numbers() -> None:
    answer = {"error_code": 0, "assignment": {"topic_partitions": [{"topic_id": "x", "partitions": [0, 1, 2]}]},
              "topics": [{"error_code": 3, "partitions": [{"error_code": 0}, {"error_code": 6}]}], "empty": [],
              "nested": [[{"error_code": 15}]]}
    assert error_codes_in(answer, set()) == {3, 6, 15}


def test_touched_names_groups_of_offset_fetch_v8_and_find_coordinator_keys() -> None:
    seen = touched(9, {"groups": [{"group_id": "g1", "topics": [{"name": "t", "partition_indexes": [0, 2]}]}]}, {})
    assert seen.groups == {"g1"} and seen.topics == {("t", 0), ("t", 2)}
    seen = touched(10, {"key_type": 0, "coordinator_keys": ["a", "b"]}, {})
    assert seen.groups == {"a", "b"}
    assert touched(10, {"key_type": 1, "coordinator_keys": ["txn"]}, {}).groups == set()

    # OffsetCommit and TxnOffsetCommit call it generation_id_or_member_epoch (KIP-848's name)
    commit = {"group_id": "g", "generation_id_or_member_epoch": 7, "member_id": "m", "topics": []}
    assert touched(28, commit, {}).generation_id == 7 and touched(8, commit, {}).generation_id == 7


def test_listener_sees_topics_records_groups_and_client_software() -> None:
    seen: list[RequestRecord] = []
    with fakekafka.Cluster(partitions=2) as cluster:
        cluster.server.add_request_listener(seen.append)  # listeners run on the server's loop
        bootstrap = cluster.bootstrap_servers
        producer = confluent_kafka.Producer({"bootstrap.servers": bootstrap, "linger.ms": 50})
        for i in range(10):
            producer.produce("traffic", value=b"v%d" % i, partition=i % 2)
        assert producer.flush(10) == 0
        consumer = confluent_kafka.Consumer({"bootstrap.servers": bootstrap, "group.id": "g-traffic",
                                             "auto.offset.reset": "earliest", "enable.auto.commit": False})
        consumer.subscribe(["traffic"])
        got = 0
        deadline = time.monotonic() + 20
        while got < 10 and time.monotonic() < deadline:
            msg = consumer.poll(0.5)
            if msg is not None and msg.error() is None:
                got += 1
        consumer.commit(asynchronous=False)
        consumer.close()
        records = cluster.call(lambda: list(seen))
    assert got == 10
    produced = [r for r in records if r.api == "Produce"]
    assert sum(r.records for r in produced) == 10
    assert {tp for r in produced for tp in r.topics} == {("traffic", 0), ("traffic", 1)}
    per_partition: dict[tuple[str, int], int] = {}
    for r in produced + [r for r in records if r.api == "Fetch"]:
        assert len(r.partition_records) in (0, len(r.topics))
        for tp, n in zip(r.topics, r.partition_records, strict=False):
            per_partition[tp] = per_partition.get(tp, 0) + n
    assert per_partition == {("traffic", 0): 10, ("traffic", 1): 10}  # 5 + 5 produced, then fetched
    fetched = [r for r in records if r.api == "Fetch"]
    assert sum(r.records for r in fetched) == 10
    joins = [r for r in records if r.api == "JoinGroup"]
    assert joins and all(r.groups == ("g-traffic",) for r in joins)
    assert any(r.generation_id is not None and r.generation_id >= 1 and r.member_id for r in joins)
    commits = [r for r in records if r.api == "OffsetCommit"]
    assert commits and set(commits[-1].topics) == {("traffic", 0), ("traffic", 1)}
    assert all(r.client_software_name == "confluent-kafka-python" for r in records if r.api != "ApiVersions")
    assert all(r.request_bytes > 0 and r.response_bytes > 0 for r in records)
    assert all(r.wall_time > 1e9 for r in records)


def test_cluster_record_writes_every_request_once_stopped(tmp_path) -> None:
    pytest.importorskip("pyarrow")
    from fakekafka.observe.recording import read_records

    with fakekafka.Cluster(record=tmp_path) as cluster:
        producer = confluent_kafka.Producer({"bootstrap.servers": cluster.bootstrap_servers, "linger.ms": 20})
        for i in range(7):
            producer.produce("recorded", value=b"%d" % i)
        assert producer.flush(10) == 0
        served = cluster.requests()
    recorded = read_records(tmp_path)
    # the producer may still refresh metadata between `requests()` and the stop: those come after
    assert [(r.api, r.correlation_id) for r in recorded][:len(served)] == [(r.api, r.correlation_id) for r in served]
    assert all(r.api in ("Metadata", "ApiVersions") for r in recorded[len(served):])
    assert sum(r.records for r in recorded if r.api == "Produce") == 7
