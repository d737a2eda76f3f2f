"""Broker configs by Kafka's names (`Cluster(config={...})`, `serve --config`): checked in Kafka's words and
read by the model as the fields they stand for."""

from __future__ import annotations

import pytest

import fakekafka
from fakekafka.model.config import BrokerConfig, ConfigSource, InvalidConfig


def test_names_set_the_fields_the_model_reads() -> None:
    c = fakekafka.Cluster(config={"num.partitions": "3", "group.min.session.timeout.ms": "1000",
                                  "auto.create.topics.enable": "false", "log.cleaner.delete.retention.ms": "5"})
    assert c.config.num_partitions == 3 and c.config.auto_create_topics is False
    assert c.state.groups.config.min_session_timeout_ms == 1000
    assert c.config.value("num.partitions") == ("3", ConfigSource.STATIC_BROKER_CONFIG)
    topic = c.state.create_topic("t")
    assert len(topic.partitions) == 3
    assert c.state.topic_config(topic, "delete.retention.ms")[:2] == ("5", ConfigSource.STATIC_BROKER_CONFIG)


def test_a_name_wins_over_the_field() -> None:
    assert BrokerConfig.from_properties({"num.partitions": "4"}, num_partitions=2).num_partitions == 4


@pytest.mark.parametrize(("props", "message"), [
    ({"no.such": "1"}, "The configuration 'no.such' was supplied but isn't a known config."),
    ({"num.partitions": "0"}, "Invalid value 0 for configuration num.partitions: Value must be at least 1"),
    ({"auto.create.topics.enable": "yes"}, "Invalid value yes for configuration auto.create.topics.enable: "
                                           "Expected value to be either true or false"),
])
def test_refused_in_kafkas_words(props: dict[str, str], message: str) -> None:
    with pytest.raises(InvalidConfig) as e:
        fakekafka.Cluster(config=props)
    assert str(e.value) == message


def test_client_match_patterns() -> None:
    """A KIP-714 `match` entry: a known selector, "=", a pattern that compiles (even one Python's `re` cannot
    hold is refused, not raised)."""
    from fakekafka.model.config import valid_client_match
    assert valid_client_match(" client_id = a.* ") and valid_client_match("client_source_port=9.*")
    for bad in ("client_id=", "client_id", "bogus=x", "client_id=a=b", "client_id=[", "client_id=a{99999999999}",
                "client_id=" + "(" * 2000 + ")" * 2000):
        assert not valid_client_match(bad), bad


@pytest.mark.parametrize("release", [None, "3.9"])
def test_the_value_in_force_is_the_synonym_chains_first_layer(release: str | None) -> None:
    """`in_force` (what every append reads topic defaults through) finds what `synonyms` lists first, for every
    broker config of the release and every layer that may set it."""
    c = fakekafka.Cluster(config={"log.roll.hours": "3", "log.segment.bytes": "2000000"},
                          advertised_listeners="PLAINTEXT://h:1", kafka_version=release)
    cfg = c.config
    cfg.dynamic_defaults.update({"log.roll.ms": "7000", "log.retention.ms": "9000", "num.partitions": "5"})
    cfg.dynamic_brokers[1] = {"log.retention.ms": "11", "log.segment.bytes": "3000000"}
    for name in [*cfg.catalog.broker, *cfg.catalog.internal, "group.streams.heartbeat.interval.ms", "no.such"]:
        for node in (None, 1, 2):
            chain = cfg.synonyms(name, node)
            assert cfg.in_force(name, node) == (chain[0][1:] if chain else None), (name, node)
    for topic_name, spec in cfg.catalog.topic.items():
        for node in (None, 1):
            chain = cfg.synonyms(spec.broker_synonym, node) if spec.broker_synonym else []
            if chain:  # the broker synonym's value in force (the derived and plain defaults are checked below)
                assert cfg.topic_default(topic_name, node) == (chain[0][1], chain[0][2], spec.broker_synonym), (
                    topic_name, node)
    assert cfg.topic_default("segment.bytes", 1)[:2] == ("3000000", ConfigSource.DYNAMIC_BROKER_CONFIG)
    assert cfg.topic_default("segment.ms", 1)[:2] == ("7000", ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG)
    del cfg.dynamic_defaults["log.roll.ms"]
    assert cfg.topic_default("segment.ms", 1)[:2] == (str(3 * 3600 * 1000), ConfigSource.DEFAULT_CONFIG)
