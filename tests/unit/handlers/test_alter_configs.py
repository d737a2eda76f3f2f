"""IncrementalAlterConfigs and AlterConfigs over the wire: Kafka's errors, sources in DescribeConfigs after,
and changes that take effect at once (max.message.bytes)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

import fakekafka
from fakekafka.wire import ErrorCode
from fakekafka.wire.records import build_batch
from tests.rawclient import RawClient

INCREMENTAL, LEGACY, DESCRIBE, PRODUCE = 44, 33, 32, 0
TOPIC, BROKER = 2, 4
SET, DELETE, APPEND, SUBTRACT = 0, 1, 2, 3


@pytest.fixture
def raw() -> Iterator[RawClient]:
    with fakekafka.Cluster(auto_create_topics=False) as c:
        c.create_topic("t", 1)
        c.create_topic("u", 1)
        client = RawClient(c.bootstrap_servers)
        yield client
        client.close()


def _inc(raw: RawClient, resources: list[tuple[int, str, list[tuple[str, int, str | None]]]],
         validate_only: bool = False, version: int = 1) -> list[tuple[int, str | None]]:
    r = raw.request(INCREMENTAL, version, {"validate_only": validate_only, "resources": [
        {"resource_type": t, "resource_name": n, "configs": [{"name": k, "config_operation": o, "value": v}
                                                             for k, o, v in ops]} for t, n, ops in resources]})
    return [(x.error_code, x.error_message) for x in r.responses]


def _legacy(raw: RawClient, resources: list[tuple[int, str, list[tuple[str, str | None]]]],
            version: int = 2) -> list[tuple[int, str | None]]:
    r = raw.request(LEGACY, version, {"validate_only": False, "resources": [
        {"resource_type": t, "resource_name": n, "configs": [{"name": k, "value": v} for k, v in cs]}
        for t, n, cs in resources]})
    return [(x.error_code, x.error_message) for x in r.responses]


def _describe(raw: RawClient, resource_type: int, name: str, key: str) -> Any:
    r = raw.request(DESCRIBE, 4, {"include_synonyms": True, "include_documentation": False, "resources": [
        {"resource_type": resource_type, "resource_name": name, "configuration_keys": [key]}]})
    entries = r.results[0].configs
    return (entries[0].value, entries[0].config_source, [(s.name, s.value, s.source) for s in entries[0].synonyms]) \
        if entries else None


def test_topic_set_delete_append_subtract(raw: RawClient) -> None:
    assert _inc(raw, [(TOPIC, "t", [("retention.ms", SET, "1000"), ("cleanup.policy", APPEND, "compact")])]) == \
        [(0, None)]
    assert _describe(raw, TOPIC, "t", "retention.ms") == ("1000", 1, [("retention.ms", "1000", 1)])
    assert _describe(raw, TOPIC, "t", "cleanup.policy")[0] == "delete,compact"  # appended to the default
    assert _inc(raw, [(TOPIC, "t", [("cleanup.policy", SUBTRACT, "delete"), ("retention.ms", DELETE, None)])]) == \
        [(0, None)]
    assert _describe(raw, TOPIC, "t", "cleanup.policy")[0] == "compact"
    assert _describe(raw, TOPIC, "t", "retention.ms") == ("604800000", 5, [])


@pytest.mark.parametrize(("ops", "code", "message"), [
    ([("foo", SET, "1")], ErrorCode.INVALID_CONFIG, "Unknown topic config name: foo"),
    ([("retention.ms", SET, "abc")], ErrorCode.INVALID_CONFIG,
     "Invalid value abc for configuration retention.ms: Not a number of type LONG"),
    ([("retention.ms", APPEND, "5")], ErrorCode.INVALID_CONFIG,
     "Can't APPEND to key retention.ms because its type is not LIST."),
    ([("segment.ms", SET, None)], ErrorCode.INVALID_REQUEST, "Null value not supported for : segment.ms"),
    ([("retention.ms", SET, "1"), ("retention.ms", SET, "2")], ErrorCode.INVALID_REQUEST,
     "Error due to duplicate config keys"),
    ([("retention.ms", SET, "1"), ("segment.bytes", SET, "100")], ErrorCode.INVALID_CONFIG,
     "Invalid value 100 for configuration segment.bytes: Value must be at least 1048576"),
])
def test_topic_refused_whole(raw: RawClient, ops: list[tuple[str, int, str | None]], code: int, message: str) -> None:
    assert _inc(raw, [(TOPIC, "t", ops)]) == [(code, message)]
    assert _describe(raw, TOPIC, "t", "retention.ms")[1] == 5  # nothing of a refused resource applied


def test_resource_errors(raw: RawClient) -> None:
    assert _inc(raw, [(TOPIC, "nope", [("retention.ms", SET, "1")]), (TOPIC, "", [("retention.ms", SET, "1")]),
                      (BROKER, "2", [("message.max.bytes", SET, "5")]),
                      (BROKER, "x", [("message.max.bytes", SET, "5")])]) == [
        (ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, "The topic 'nope' does not exist."),
        (ErrorCode.INVALID_REQUEST, "Default topic resources are not allowed."),
        (ErrorCode.INVALID_REQUEST, "Unexpected broker id, expected 1, but received 2"),
        (ErrorCode.INVALID_REQUEST, "Node id must be an integer, but it is: x")]
    twice = [(TOPIC, "t", [("retention.ms", SET, "1")])] * 2
    assert _inc(raw, twice) == [(ErrorCode.INVALID_REQUEST, "Each resource must appear at most once.")] * 2


def test_validate_only_changes_nothing(raw: RawClient) -> None:
    assert _inc(raw, [(TOPIC, "t", [("retention.ms", SET, "1000")])], validate_only=True) == [(0, None)]
    assert _describe(raw, TOPIC, "t", "retention.ms")[1] == 5


def test_broker_levels_and_sources(raw: RawClient) -> None:
    assert _inc(raw, [(BROKER, "", [("log.retention.ms", SET, "1000")]),
                      (BROKER, "1", [("message.max.bytes", SET, "2000000")])]) == [(0, None), (0, None)]
    assert _describe(raw, TOPIC, "u", "retention.ms") == (
        "1000", 3, [("log.retention.ms", "1000", 3), ("log.retention.hours", "168", 5)])
    assert _describe(raw, TOPIC, "u", "max.message.bytes") == (
        "2000000", 2, [("message.max.bytes", "2000000", 2), ("message.max.bytes", "1048588", 5)])
    assert _describe(raw, BROKER, "", "log.retention.ms") == ("1000", 3, [("log.retention.ms", "1000", 3)])
    assert _inc(raw, [(BROKER, "", [("num.partitions", SET, "3")]), (BROKER, "1", [("broker.id", SET, "5")])]) == [
        (ErrorCode.INVALID_REQUEST, "Cannot update these configs dynamically: [num.partitions]"),
        (ErrorCode.INVALID_REQUEST, "Cannot update these configs dynamically: [broker.id]")]
    assert _inc(raw, [(BROKER, "", [("message.max.bytes", APPEND, "5")]),
                      (BROKER, "1", [("min.insync.replicas", SET, "x")])]) == [
        (ErrorCode.INVALID_CONFIG, "Config value append is not allowed for config key: message.max.bytes"),
        (ErrorCode.INVALID_REQUEST, "Invalid value x for configuration min.insync.replicas: Not a number of type INT")]
    assert _inc(raw, [(BROKER, "", [("min.insync.replicas", DELETE, None)])]) == [
        (ErrorCode.INVALID_CONFIG, "Cluster-level min.insync.replicas cannot be removed while ELR is enabled.")]


_THREADS = "Invalid value org.apache.kafka.common.config.ConfigException: Dynamic thread count update validation " \
    "failed for {}, value should {} for configuration Invalid dynamic configuration"


def test_broker_configs_fakekafka_has_no_use_for_are_checked_as_kafka_checks_them(raw: RawClient) -> None:
    """Kafka 4.4's answers (each seen from a real broker with the same requests): keystore settings only with
    a listener prefix, per-broker configs not cluster-wide, thread counts at most halved or doubled."""
    refused = [
        ("", "listeners", "PLAINTEXT://127.0.0.1:0",
         "Cannot update these configs at default cluster level, broker id must be specified: [listeners]"),
        ("1", "ssl.keystore.password", "pw", "These security configs can be dynamically updated only per-listener "
                                             "using the listener prefix: [ssl.keystore.password]"),
        ("1", "num.io.threads", "1", _THREADS.format("num.io.threads=1", "be at least half the current value 8")),
        ("1", "num.network.threads", "100", _THREADS.format("num.network.threads=100",
                                                            "not be greater than double the current value 3")),
        ("1", "num.io.threads", "0", "Invalid value 0 for configuration num.io.threads: Value must be at least 1"),
        ("1", "auto.leader.rebalance.enable", "false",
         "Cannot update these configs dynamically: [auto.leader.rebalance.enable]")]
    for node, name, value, words in refused:
        assert _inc(raw, [(BROKER, node, [(name, SET, value)])], validate_only=True) == [
            (ErrorCode.INVALID_REQUEST, words)], name
    assert _inc(raw, [(BROKER, "", [("background.threads", SET, "12")]),
                      (BROKER, "1", [("num.io.threads", SET, "6")])]) == [(0, None), (0, None)]
    assert _describe(raw, BROKER, "1", "num.io.threads") == (
        "6", 2, [("num.io.threads", "6", 2), ("num.io.threads", "8", 5)])
    assert _inc(raw, [(BROKER, "1", [("num.io.threads", SET, "13")])]) == [  # against the value now in force
        (ErrorCode.INVALID_REQUEST, _THREADS.format("num.io.threads=13",
                                                    "not be greater than double the current value 6"))]


_DEDUPE = "requirement failed: log.cleaner.dedupe.buffer.size must be at least 1MB per cleaner thread."


def test_a_dedupe_buffer_under_1mib_a_cleaner_thread_is_refused(raw: RawClient) -> None:
    """Kafka builds the config the answering broker would run by and checks it whole (KafkaConfig), so a
    change is refused for what it makes of the other layers: the threads set per broker, the buffer cluster-wide."""
    assert _inc(raw, [(BROKER, "", [("log.cleaner.dedupe.buffer.size", SET, "1048576")])]) == [
        (ErrorCode.INVALID_REQUEST, _DEDUPE)]
    assert _inc(raw, [(BROKER, "1", [("log.cleaner.threads", SET, "0")])]) == [(ErrorCode.INVALID_REQUEST, "/ by zero")]
    assert _inc(raw, [(BROKER, "1", [("log.cleaner.threads", SET, "2")]),
                      (BROKER, "", [("log.cleaner.dedupe.buffer.size", SET, "4194304")])]) == [(0, None), (0, None)]
    assert _inc(raw, [(BROKER, "", [("log.cleaner.dedupe.buffer.size", SET, "2097152")])]) == [  # 1 MiB a thread
        (ErrorCode.INVALID_REQUEST, _DEDUPE)]
    assert _inc(raw, [(BROKER, "1", [("log.cleaner.threads", SET, "4")])]) == [(ErrorCode.INVALID_REQUEST, _DEDUPE)]


def test_legacy_replaces_whole_set(raw: RawClient) -> None:
    assert _inc(raw, [(TOPIC, "t", [("retention.ms", SET, "1000"), ("cleanup.policy", SET, "compact")])]) == \
        [(0, None)]
    assert _legacy(raw, [(TOPIC, "t", [("retention.ms", "2000")])]) == [(0, None)]
    assert _describe(raw, TOPIC, "t", "retention.ms")[:2] == ("2000", 1)
    assert _describe(raw, TOPIC, "t", "cleanup.policy")[:2] == ("delete", 5)
    assert _legacy(raw, [(TOPIC, "t", [("retention.ms", None)]), (BROKER, "", [("log.retention.bytes", "1")])]) == [
        (ErrorCode.INVALID_REQUEST, "Null value not supported for : retention.ms"),
        (ErrorCode.INVALID_CONFIG, "Cluster-level min.insync.replicas cannot be removed while ELR is enabled.")]


def test_raised_max_message_bytes_admits_larger_batch(raw: RawClient) -> None:
    batch = build_batch([{"value": b"x" * 1_200_000}])

    def produce() -> int:
        r = raw.request(PRODUCE, 9, {"acks": 1, "timeout_ms": 5000, "transactional_id": None, "topic_data": [
            {"name": "t", "partition_data": [{"index": 0, "records": batch}]}]})
        return r.responses[0].partition_responses[0].error_code
    assert produce() == ErrorCode.MESSAGE_TOO_LARGE
    assert _inc(raw, [(TOPIC, "t", [("max.message.bytes", SET, "2000000")])]) == [(0, None)]
    assert produce() == ErrorCode.NONE


def test_min_insync_and_timestamp_type_take_effect_at_once(raw: RawClient) -> None:
    def produce(acks: int) -> Any:
        r = raw.request(PRODUCE, 9, {"acks": acks, "timeout_ms": 5000, "transactional_id": None, "topic_data": [
            {"name": "u", "partition_data": [{"index": 0, "records": build_batch([{"value": b"v",
                                                                                    "timestamp": 1000}])}]}]})
        return r.responses[0].partition_responses[0]
    assert produce(-1).error_code == ErrorCode.NONE
    assert _inc(raw, [(TOPIC, "u", [("min.insync.replicas", SET, "2")])]) == [(0, None)]
    assert produce(-1).error_code == ErrorCode.NOT_ENOUGH_REPLICAS
    assert _inc(raw, [(TOPIC, "u", [("min.insync.replicas", DELETE, None),
                                    ("message.timestamp.type", SET, "LogAppendTime")])]) == [(0, None)]
    answer = produce(-1)
    assert answer.error_code == ErrorCode.NONE and answer.log_append_time_ms > 1000


def test_internal_broker_config_listed_only_when_set() -> None:
    """log.initial.task.delay.ms, internal in Kafka (defineInternal): Kafka 4.4 lists it only when the broker
    was started with it (a static config, read-only, its default 30000 as a synonym), never when unset."""
    with fakekafka.Cluster(config={"log.initial.task.delay.ms": "0"}) as c:
        client = RawClient(c.bootstrap_servers)
        try:
            assert _describe(client, BROKER, "1", "log.initial.task.delay.ms") == (
                "0", 4, [("log.initial.task.delay.ms", "0", 4), ("log.initial.task.delay.ms", "30000", 5)])
            r = client.request(DESCRIBE, 4, {"include_synonyms": False, "include_documentation": False, "resources": [
                {"resource_type": BROKER, "resource_name": "1", "configuration_keys": None}]})
            entry = next(e for e in r.results[0].configs if e.name == "log.initial.task.delay.ms")
            assert (entry.read_only, entry.config_type, entry.is_sensitive) == (True, 5, False)
        finally:
            client.close()
    with fakekafka.Cluster() as c:
        client = RawClient(c.bootstrap_servers)
        try:
            assert _describe(client, BROKER, "1", "log.initial.task.delay.ms") is None
            r = client.request(DESCRIBE, 4, {"include_synonyms": False, "include_documentation": False, "resources": [
                {"resource_type": BROKER, "resource_name": "1", "configuration_keys": None}]})
            assert r.results[0].error_code == 0 and r.results[0].configs
            assert "log.initial.task.delay.ms" not in {e.name for e in r.results[0].configs}
        finally:
            client.close()
