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
