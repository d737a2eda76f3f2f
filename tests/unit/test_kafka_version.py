"""--kafka-version: an older release's ApiVersions ranges, features and refusals, against written expectations.

The 3.9 expectations are what a real Kafka 3.9.1 (KRaft) broker answered; tests/conformance/test_kafka_version.py
compares with one live. The 2.8 ones are a ZooKeeper-era 2.8.2 broker's ranges from its own schemas."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

import fakekafka
from fakekafka.handlers import advertised_versions
from fakekafka.model.config import BrokerConfig, InvalidConfig
from fakekafka.model.releases import UnknownKafkaVersion, kafka_release
from fakekafka.wire import ApiKey, ErrorCode
from tests.rawclient import RawClient


def test_versions_are_named_by_major_minor_or_a_patch_release() -> None:
    r = kafka_release("3.9.1")
    assert r is not None and r.name == "3.9" and r.version == "3.9.1" and not r.zookeeper
    assert kafka_release(" 3.9 ") == r
    assert kafka_release("2.8").zookeeper  # type: ignore[union-attr]
    assert kafka_release("4.4") is None and kafka_release("4.4.0") is None and kafka_release(None) is None


@pytest.mark.parametrize("bad", ["3.5", "5.0", "2.7.1", "three", "3", "3.9.1.2", ""])
def test_an_unknown_version_is_refused_naming_the_known_ones(bad: str) -> None:
    with pytest.raises(UnknownKafkaVersion, match=r"2\.8, 3\.7, 3\.9 and 4\.4 \(the default\)"):
        kafka_release(bad)
    with pytest.raises(InvalidConfig, match="kafka version: .*knows 2.8"):
        BrokerConfig(kafka_version=bad)
    with pytest.raises(ValueError, match="knows 2.8, 3.7, 3.9"):
        fakekafka.Cluster(kafka_version=bad)


def test_an_older_release_finalizes_no_transaction_version() -> None:
    assert BrokerConfig(kafka_version="3.9").transaction_version == 0
    assert BrokerConfig(kafka_version="3.9", transaction_version=2).transaction_version == 0
    assert BrokerConfig().transaction_version == 2


KAFKA_391 = {  # a Kafka 3.9.1 broker's ApiVersions, less what fakekafka does not serve at all (delegation tokens,
    # client quotas, UpdateFeatures, UnregisterBroker, the raft voter APIs) and with fakekafka's lowest versions
    ApiKey.PRODUCE: (0, 11), ApiKey.FETCH: (4, 17), ApiKey.LIST_OFFSETS: (1, 9), ApiKey.METADATA: (0, 12),
    ApiKey.OFFSET_COMMIT: (2, 9), ApiKey.OFFSET_FETCH: (1, 9), ApiKey.FIND_COORDINATOR: (0, 6),
    ApiKey.JOIN_GROUP: (0, 9), ApiKey.HEARTBEAT: (0, 4), ApiKey.LEAVE_GROUP: (0, 5), ApiKey.SYNC_GROUP: (0, 5),
    ApiKey.DESCRIBE_GROUPS: (0, 5), ApiKey.LIST_GROUPS: (0, 5), ApiKey.SASL_HANDSHAKE: (0, 1),
    ApiKey.API_VERSIONS: (0, 4), ApiKey.CREATE_TOPICS: (2, 7), ApiKey.DELETE_TOPICS: (1, 6),
    ApiKey.DELETE_RECORDS: (0, 2), ApiKey.INIT_PRODUCER_ID: (0, 5), ApiKey.OFFSET_FOR_LEADER_EPOCH: (0, 4),
    ApiKey.ADD_PARTITIONS_TO_TXN: (0, 5), ApiKey.ADD_OFFSETS_TO_TXN: (0, 4), ApiKey.END_TXN: (0, 4),
    ApiKey.WRITE_TXN_MARKERS: (1, 1), ApiKey.TXN_OFFSET_COMMIT: (0, 4), ApiKey.DESCRIBE_ACLS: (1, 3),
    ApiKey.CREATE_ACLS: (1, 3), ApiKey.DELETE_ACLS: (1, 3), ApiKey.DESCRIBE_CONFIGS: (1, 4),
    ApiKey.ALTER_CONFIGS: (0, 2), ApiKey.ALTER_REPLICA_LOG_DIRS: (1, 2), ApiKey.DESCRIBE_LOG_DIRS: (1, 4),
    ApiKey.SASL_AUTHENTICATE: (0, 2), ApiKey.CREATE_PARTITIONS: (0, 3), ApiKey.DELETE_GROUPS: (0, 2),
    ApiKey.ELECT_LEADERS: (0, 2), ApiKey.INCREMENTAL_ALTER_CONFIGS: (0, 1),
    ApiKey.ALTER_PARTITION_REASSIGNMENTS: (0, 0), ApiKey.LIST_PARTITION_REASSIGNMENTS: (0, 0),
    ApiKey.OFFSET_DELETE: (0, 0), ApiKey.DESCRIBE_USER_SCRAM_CREDENTIALS: (0, 0),
    ApiKey.ALTER_USER_SCRAM_CREDENTIALS: (0, 0), ApiKey.DESCRIBE_CLIENT_QUOTAS: (0, 1),
    ApiKey.ALTER_CLIENT_QUOTAS: (0, 1), ApiKey.DESCRIBE_QUORUM: (0, 2), ApiKey.DESCRIBE_CLUSTER: (0, 1),
    ApiKey.DESCRIBE_PRODUCERS: (0, 0), ApiKey.DESCRIBE_TRANSACTIONS: (0, 0), ApiKey.LIST_TRANSACTIONS: (0, 1),
    ApiKey.CONSUMER_GROUP_HEARTBEAT: (0, 0), ApiKey.CONSUMER_GROUP_DESCRIBE: (0, 0),
    ApiKey.LIST_CONFIG_RESOURCES: (0, 0), ApiKey.DESCRIBE_TOPIC_PARTITIONS: (0, 0),
}


def test_39_advertises_kafka_391s_ranges_within_what_fakekafka_serves() -> None:
    assert advertised_versions(kafka_release("3.9")) == KAFKA_391


def test_28_is_a_zookeeper_brokers_ranges() -> None:
    got = advertised_versions(kafka_release("2.8"))
    assert got[ApiKey.API_VERSIONS] == (0, 3) and got[ApiKey.PRODUCE] == (0, 9) and got[ApiKey.FETCH] == (4, 12)
    assert got[ApiKey.METADATA] == (0, 11) and got[ApiKey.FIND_COORDINATOR] == (0, 3)
    assert got[ApiKey.JOIN_GROUP] == (0, 7) and got[ApiKey.OFFSET_FETCH] == (1, 7)
    assert got[ApiKey.INIT_PRODUCER_ID] == (0, 4) and got[ApiKey.DESCRIBE_CLUSTER] == (0, 0)
    for absent in (ApiKey.CONSUMER_GROUP_HEARTBEAT, ApiKey.DESCRIBE_TOPIC_PARTITIONS, ApiKey.DESCRIBE_TRANSACTIONS,
                   ApiKey.LIST_TRANSACTIONS, ApiKey.DESCRIBE_QUORUM, ApiKey.SHARE_FETCH, ApiKey.LIST_CONFIG_RESOURCES):
        assert absent not in got, absent.name


def test_37_has_the_consumer_protocol_apis_but_not_39s_versions() -> None:
    got = advertised_versions(kafka_release("3.7"))
    assert got[ApiKey.CONSUMER_GROUP_HEARTBEAT] == (0, 0) and got[ApiKey.API_VERSIONS] == (0, 3)
    assert got[ApiKey.PRODUCE] == (0, 10) and ApiKey.DESCRIBE_TOPIC_PARTITIONS not in got  # KIP-966: 3.8
    assert ApiKey.SHARE_GROUP_HEARTBEAT not in got


@pytest.fixture
def kafka39() -> Iterator[fakekafka.Cluster]:
    with fakekafka.Cluster(kafka_version="3.9") as c:
        c.create_topic("t", 1)
        yield c


def _raw(cluster: fakekafka.Cluster) -> RawClient:
    return RawClient(cluster.bootstrap_servers)


def test_api_versions_lists_39s_features(kafka39: fakekafka.Cluster) -> None:
    raw = _raw(kafka39)
    try:
        r = raw.request(ApiKey.API_VERSIONS, 3, {"client_software_name": "raw", "client_software_version": "1"})
        assert {k.api_key: (k.min_version, k.max_version) for k in r.api_keys} == KAFKA_391
        assert [(f.name, f.min_version, f.max_version) for f in r.supported_features] == [("metadata.version", 1, 21)]
        assert [(f.name, f.min_version_level, f.max_version_level) for f in r.finalized_features] == [
            ("metadata.version", 21, 21)]
        v4 = raw.request(ApiKey.API_VERSIONS, 4, {"client_software_name": "raw", "client_software_version": "1"})
        assert v4.error_code == ErrorCode.NONE  # KIP-1022: a feature supported from 0 only to v4+, as Kafka 3.9.1
        assert [(f.name, f.min_version, f.max_version) for f in v4.supported_features] == [
            ("kraft.version", 0, 1), ("metadata.version", 1, 21)]
    finally:
        raw.close()


def test_api_versions_past_the_releases_answers_v0_unsupported_version(kafka39: fakekafka.Cluster) -> None:
    raw = _raw(kafka39)
    try:  # v5 is Kafka 4.4's: a 3.9 broker answers in the v0 layout, naming its own range
        raw.send(ApiKey.API_VERSIONS, 5, {"client_software_name": "raw", "client_software_version": "1"})
        corr, r = raw.receive(ApiKey.API_VERSIONS, 0)
        assert r.error_code == ErrorCode.UNSUPPORTED_VERSION
        assert [(k.api_key, k.min_version, k.max_version) for k in r.api_keys] == [(ApiKey.API_VERSIONS, 0, 4)]
    finally:
        raw.close()


def test_28_lists_no_features() -> None:
    with fakekafka.Cluster(kafka_version="2.8") as c:
        raw = _raw(c)
        try:
            r = raw.request(ApiKey.API_VERSIONS, 3, {"client_software_name": "raw", "client_software_version": "1"})
            assert r.error_code == ErrorCode.NONE
            assert list(r.supported_features) == [] and list(r.finalized_features) == []
            assert r.finalized_features_epoch == -1
        finally:
            raw.close()


@pytest.mark.parametrize(("api", "version", "body"), [
    (ApiKey.METADATA, 13, {"topics": [], "allow_auto_topic_creation": False,
                           "include_topic_authorized_operations": False}),
    (ApiKey.SHARE_GROUP_HEARTBEAT, 1, {"group_id": "g", "member_id": "m", "member_epoch": 0,
                                       "subscribed_topic_names": ["t"]}),
])
def test_what_39_lacks_closes_the_connection(kafka39: fakekafka.Cluster, api: ApiKey, version: int,
                                             body: dict) -> None:
    raw = _raw(kafka39)
    try:
        with pytest.raises((ConnectionError, EOFError, OSError)):
            raw.request(api, version, body)
    finally:
        raw.close()


def test_39_refuses_the_consumer_protocol_as_its_default_config_does(kafka39: fakekafka.Cluster) -> None:
    raw = _raw(kafka39)
    try:
        hb = raw.request(ApiKey.CONSUMER_GROUP_HEARTBEAT, 0, {
            "group_id": "g", "member_id": "", "member_epoch": 0, "rebalance_timeout_ms": 30000,
            "subscribed_topic_names": ["t"], "server_assignor": None, "topic_partitions": []})
        assert hb.error_code == ErrorCode.UNSUPPORTED_VERSION
        d = raw.request(ApiKey.CONSUMER_GROUP_DESCRIBE, 0, {"group_ids": ["g"],
                                                             "include_authorized_operations": False})
        assert [g.error_code for g in d.groups] == [ErrorCode.UNSUPPORTED_VERSION]
        md = raw.request(ApiKey.METADATA, 12, {"topics": None, "allow_auto_topic_creation": False,
                                               "include_topic_authorized_operations": False})
        assert [t.name for t in md.topics] == ["t"]  # what it has is served as before
    finally:
        raw.close()
