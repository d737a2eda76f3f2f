"""--kafka-version: an older release's config names, defaults and checks, against its generated tables and against
what its release notes and source say changed.

The tables (fakekafka/model/kafka_configs_<release>.py) come from each release's own jars
(tools/gen_release_configs.py); tests/conformance/test_api_sweep_kafka39.py compares 3.9's with a live Kafka
3.9.1. Here 2.8 and 3.7, which no broker on this machine runs, are checked through the wire: DescribeConfigs and
CreateTopics list exactly the release's configs at the release's defaults, and alterations are checked by its
rules."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

import fakekafka
from fakekafka.model.cluster import ClusterState
from fakekafka.model.config import TOPIC_CONFIGS, BrokerConfig, InvalidConfig, config_catalog
from fakekafka.model.kafka_configs_2_8 import BROKER_CONFIG_DEFS as BROKER_28
from fakekafka.model.kafka_configs_2_8 import TOPIC_CONFIG_DEFS as TOPIC_28
from fakekafka.model.kafka_configs_3_7 import BROKER_CONFIG_DEFS as BROKER_37
from fakekafka.model.kafka_configs_3_7 import TOPIC_CONFIG_DEFS as TOPIC_37
from fakekafka.model.kafka_configs_3_9 import BROKER_CONFIG_DEFS as BROKER_39
from fakekafka.model.kafka_configs_3_9 import TOPIC_CONFIG_DEFS as TOPIC_39
from fakekafka.wire import ApiKey, ErrorCode
from fakekafka.wire.releases import RELEASES
from tests.rawclient import RawClient

LONG_MAX = str(2**63 - 1)
TABLES = {"2.8": (BROKER_28, TOPIC_28), "3.7": (BROKER_37, TOPIC_37), "3.9": (BROKER_39, TOPIC_39)}
TOPIC, BROKER = 2, 4


@pytest.fixture(scope="module", params=["2.8", "3.7"])
def older(request: pytest.FixtureRequest) -> Iterator[tuple[str, RawClient]]:
    with fakekafka.Cluster(kafka_version=request.param, auto_create_topics=False) as cluster:
        raw = RawClient(cluster.bootstrap_servers)
        try:
            yield request.param, raw
        finally:
            raw.close()


def _describe(raw: RawClient, resource_type: int, name: str) -> dict[str, object]:
    r = raw.request(ApiKey.DESCRIBE_CONFIGS, 1, {"resources": [
        {"resource_type": resource_type, "resource_name": name, "configuration_keys": None}],
        "include_synonyms": True})
    assert r.results[0].error_code == ErrorCode.NONE
    return {c.name: c for c in r.results[0].configs}


def _create(raw: RawClient, name: str, configs: dict[str, str]) -> object:
    r = raw.request(ApiKey.CREATE_TOPICS, 5, {"topics": [
        {"name": name, "num_partitions": 1, "replication_factor": 1, "assignments": [],
         "configs": [{"name": k, "value": v} for k, v in configs.items()]}], "timeout_ms": 5000,
        "validate_only": False})
    return r.topics[0]


def test_each_table_is_its_releases() -> None:
    """One table per release --kafka-version knows, read from that patch release's jars."""
    import importlib
    for name, release in RELEASES.items():
        module = importlib.import_module(f"fakekafka.model.kafka_configs_{name.replace('.', '_')}")
        assert module.KAFKA_VERSION == release.version
        assert config_catalog(name).version == release.version
    assert config_catalog(None).topic is TOPIC_CONFIGS


def test_created_and_described_topic_configs_are_the_releases(older: tuple[str, RawClient]) -> None:
    name, raw = older
    broker, topics = TABLES[name]
    created = _create(raw, f"t-{name}", {"message.format.version": "2.0", "cleanup.policy": "compact"})
    assert created.error_code == ErrorCode.NONE
    expected = {n: d.default for n, d in topics.items() if not d.internal}
    expected.update({"message.format.version": "2.0", "cleanup.policy": "compact"})
    assert {c.name: c.value for c in created.configs} == expected
    described = _describe(raw, TOPIC, f"t-{name}")
    assert {n: c.value for n, c in described.items()} == expected
    fmt = described["message.format.version"]
    assert [(s.name, s.value) for s in fmt.synonyms] == [
        ("message.format.version", "2.0"), ("log.message.format.version", broker["log.message.format.version"].default)]


def test_the_releases_defaults_where_they_differ_from_44s(older: tuple[str, RawClient]) -> None:
    """What changed between the release and 4.4, as the release notes and the release's source say."""
    name, raw = older
    _create(raw, f"d-{name}", {})
    topic = {n: c.value for n, c in _describe(raw, TOPIC, f"d-{name}").items()}
    broker = {n: c.value for n, c in _describe(raw, BROKER, "1").items()}
    # removed in 4.0 (KIP-724, KIP-500): the message format and down-conversion, ZooKeeper
    assert topic["message.format.version"] == ("2.8-IV1" if name == "2.8" else "3.0-IV1")
    assert topic["message.downconversion.enable"] == "true"
    assert topic["message.timestamp.difference.max.ms"] == LONG_MAX
    assert "zookeeper.connect" in broker and "log.message.format.version" in broker
    assert broker["num.recovery.threads.per.data.dir"] == "1"  # 2 from 4.0 (KIP-1030)
    # added later: KIP-390's compression levels (3.8), KIP-1030's limits, 4.x's decompressed size
    assert "compression.gzip.level" not in topic and "max.decompressed.message.bytes" not in topic
    if name == "2.8":  # KIP-937's before/after (3.6) and tiered storage (3.6) came after 2.8
        assert "message.timestamp.after.max.ms" not in topic and "remote.storage.enable" not in topic
        assert "group.coordinator.rebalance.protocols" not in broker and "zookeeper.sync.time.ms" in broker
    else:
        assert topic["message.timestamp.after.max.ms"] == LONG_MAX  # one hour from 4.0 (KIP-1030)
        assert broker["group.coordinator.rebalance.protocols"] == "classic"


def test_alterations_are_checked_by_the_releases_rules(older: tuple[str, RawClient]) -> None:
    name, raw = older
    _create(raw, f"a-{name}", {})

    def alter(resource_type: int, resource: str, key: str, value: str) -> tuple[int, str | None]:
        r = raw.request(ApiKey.INCREMENTAL_ALTER_CONFIGS, 0, {"resources": [
            {"resource_type": resource_type, "resource_name": resource,
             "configs": [{"name": key, "config_operation": 0, "value": value}]}], "validate_only": False})
        return r.responses[0].error_code, r.responses[0].error_message

    assert alter(TOPIC, f"a-{name}", "message.downconversion.enable", "false") == (ErrorCode.NONE, None)
    assert alter(TOPIC, f"a-{name}", "segment.bytes", "100000") == (ErrorCode.NONE, None)  # 4.4: at least 1 MiB
    quote = "`" if name == "2.8" else ""
    assert alter(TOPIC, f"a-{name}", "message.format.version", "9.9") == (
        ErrorCode.INVALID_CONFIG, f"Invalid value 9.9 for configuration message.format.version: Version {quote}9.9"
                                  f"{quote} is not a valid version")
    assert alter(TOPIC, f"a-{name}", "compression.gzip.level", "5") == (
        ErrorCode.INVALID_CONFIG, "Unknown topic config name: compression.gzip.level")
    assert alter(BROKER, "1", "log.message.format.version", "2.8") == (
        ErrorCode.INVALID_REQUEST, "Cannot update these configs dynamically: Set(log.message.format.version)")
    assert alter(BROKER, "", "log.cleaner.threads", "2") == (ErrorCode.NONE, None)  # no ELR before 4.1
    assert _describe(raw, TOPIC, f"a-{name}")["message.downconversion.enable"].value == "false"


def test_zookeeper_era_settings_are_known_to_the_releases_that_had_them() -> None:
    props = {"zookeeper.connect": "localhost:2181", "log.message.format.version": "2.8"}
    with fakekafka.Cluster(kafka_version="2.8", config=props) as cluster:
        raw = RawClient(cluster.bootstrap_servers)
        try:
            assert _describe(raw, BROKER, "1")["zookeeper.connect"].value == "localhost:2181"
        finally:
            raw.close()
    with pytest.raises(InvalidConfig, match="'zookeeper.connect' was supplied but isn't a known config"):
        BrokerConfig.from_properties(props)
    with pytest.raises(InvalidConfig, match="'compression.gzip.level' was supplied but isn't a known config"):
        BrokerConfig.from_properties({"compression.gzip.level": "5"}, kafka_version="3.7")
    with pytest.raises(InvalidConfig, match="Version `9.9` is not a valid version"):
        BrokerConfig.from_properties({"log.message.format.version": "9.9"}, kafka_version="2.8")


def _bounds(kafka_version: str, configs: dict[str, str]) -> tuple[int, int]:
    cluster = ClusterState(BrokerConfig(kafka_version=kafka_version))
    topic = cluster.create_topic("t", configs=configs)
    return cluster.topic_configs.timestamp_bounds(topic)


def test_record_timestamps_are_bounded_as_the_release_bounds_them() -> None:
    """2.8: message.timestamp.difference.max.ms both ways; 3.6-3.9: before/after.max.ms, each the difference where
    left at Long.MAX_VALUE (LogConfig's getMessageTimestampBeforeMaxMs); 4.0 on: before/after alone, after an
    hour by default."""
    unlimited = 2**63 - 1
    assert _bounds("2.8", {}) == (unlimited, unlimited)
    assert _bounds("2.8", {"message.timestamp.difference.max.ms": "60000"}) == (60000, 60000)
    assert _bounds("3.9", {}) == (unlimited, unlimited)
    assert _bounds("3.9", {"message.timestamp.difference.max.ms": "60000"}) == (60000, 60000)
    assert _bounds("3.7", {"message.timestamp.difference.max.ms": "60000",
                           "message.timestamp.after.max.ms": "1000"}) == (60000, 1000)
    assert _bounds("4.4", {}) == (unlimited, 3600000)


def test_a_2_8_broker_does_not_verify_transactional_partitions() -> None:
    """KIP-890 part 1 (3.6) added transaction.partition.verification.enable; before it nothing was verified."""
    assert BrokerConfig(kafka_version="2.8").value("transaction.partition.verification.enable")[0] == "false"
    assert BrokerConfig(kafka_version="3.7").value("transaction.partition.verification.enable")[0] == "true"


def test_resource_types_the_release_lacks(older: tuple[str, RawClient]) -> None:
    """GROUP resources came with 4.0, CLIENT_METRICS with 3.7 (KIP-714): a DescribeConfigs naming one the release
    lacks fails whole, as its KafkaApis throws; an alteration of one is refused alone on 3.x ("Unknown resource
    type", as Kafka 3.9.1), the whole request on 2.8 (its KafkaApis throws there too, naming the type UNKNOWN)."""
    name, raw = older
    _create(raw, f"r-{name}", {})
    lacking = [32] if name == "3.7" else [32, 16]
    for resource_type in lacking:
        d = raw.request(ApiKey.DESCRIBE_CONFIGS, 1, {"resources": [
            {"resource_type": resource_type, "resource_name": "x", "configuration_keys": None},
            {"resource_type": TOPIC, "resource_name": f"r-{name}", "configuration_keys": None}],
            "include_synonyms": False})
        assert [(r.error_code, len(r.configs)) for r in d.results] == [(ErrorCode.INVALID_REQUEST, 0)] * 2
        assert d.results[1].error_message.startswith("This most likely occurs because of a request being malformed")
        a = raw.request(ApiKey.INCREMENTAL_ALTER_CONFIGS, 0, {"resources": [
            {"resource_type": resource_type, "resource_name": "x",
             "configs": [{"name": "interval.ms", "config_operation": 0, "value": "60000"}]},
            {"resource_type": TOPIC, "resource_name": f"r-{name}",
             "configs": [{"name": "retention.ms", "config_operation": 0, "value": "1000"}]}], "validate_only": True})
        expected = [(ErrorCode.INVALID_REQUEST, "Unexpected resource type UNKNOWN")] * 2 if name == "2.8" else \
            [(ErrorCode.INVALID_REQUEST, f"Unknown resource type {resource_type}"), (ErrorCode.NONE, None)]
        assert [(r.error_code, r.error_message) for r in a.responses] == expected


@pytest.mark.parametrize(("kafka_version", "protocols", "code"), [
    ("3.9", None, ErrorCode.UNSUPPORTED_VERSION),
    ("3.9", "classic,consumer", ErrorCode.NONE),
    ("3.7", "classic,consumer", ErrorCode.NONE),
    ("3.7", "classic", ErrorCode.UNSUPPORTED_VERSION),
])
def test_the_kip848_preview_is_on_where_the_config_lists_consumer(kafka_version: str, protocols: str | None,
                                                                   code: ErrorCode) -> None:
    """3.7-3.9 answer ConsumerGroupHeartbeat when group.coordinator.rebalance.protocols lists consumer (the KIP-848
    preview; their KafkaApis' isConsumerGroupProtocolEnabled), UNSUPPORTED_VERSION at their default, classic."""
    config = {"group.coordinator.rebalance.protocols": protocols} if protocols else {}
    with fakekafka.Cluster(kafka_version=kafka_version, config=config, topics={"t": 1}) as cluster:
        raw = RawClient(cluster.bootstrap_servers)
        try:
            r = raw.request(ApiKey.CONSUMER_GROUP_HEARTBEAT, 0, {
                "group_id": "g", "member_id": "m-1", "member_epoch": 0, "instance_id": None, "rack_id": None,
                "rebalance_timeout_ms": 30000, "subscribed_topic_names": ["t"], "server_assignor": None,
                "topic_partitions": []})
            assert r.error_code == code
        finally:
            raw.close()
