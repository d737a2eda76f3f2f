"""Every broker config Kafka 4.4 defines (generated from its jars into model/kafka_broker_configs.py): a
server.properties in Kafka's style is accepted, each setting checked with Kafka's validators and words, kept
and described back as Kafka 4.4 describes it (checked against a real broker: compat/KNOWN_DIFFERENCES.md)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

import fakekafka
from fakekafka.model.config import BROKER_CONFIGS, INTERNAL_BROKER_CONFIGS, BrokerConfig, ConfigType, InvalidConfig
from fakekafka.model.kafka_broker_configs import BROKER_CONFIG_DEFS
from fakekafka.ops.cli import _properties_file
from tests.rawclient import RawClient

DESCRIBE, BROKER = 32, 4
DEFAULT, STATIC = 5, 4

SERVER_PROPERTIES = """\
# Kafka's style: settings fakekafka has no use for, beside one it honours
num.io.threads=4
background.threads=5
auto.leader.rebalance.enable=false
num.network.threads=2
socket.send.buffer.bytes=204800
socket.receive.buffer.bytes=204800
socket.listen.backlog.size=100
num.recovery.threads.per.data.dir=3
log.flush.interval.messages=10000
log.flush.interval.ms=1000
replica.fetch.max.bytes=2097152
leader.imbalance.check.interval.seconds=600
ssl.keystore.password=secret
num.partitions=3
"""

EXPECTED = {  # name: (value, type, read_only) as Kafka 4.4 describes a broker started with SERVER_PROPERTIES
    "num.io.threads": ("4", ConfigType.INT, False),
    "background.threads": ("5", ConfigType.INT, False),
    "auto.leader.rebalance.enable": ("false", ConfigType.BOOLEAN, True),
    "num.network.threads": ("2", ConfigType.INT, False),
    "socket.send.buffer.bytes": ("204800", ConfigType.INT, True),
    "socket.receive.buffer.bytes": ("204800", ConfigType.INT, True),
    "socket.listen.backlog.size": ("100", ConfigType.INT, True),
    "num.recovery.threads.per.data.dir": ("3", ConfigType.INT, False),
    "log.flush.interval.messages": ("10000", ConfigType.LONG, False),
    "log.flush.interval.ms": ("1000", ConfigType.LONG, False),
    "replica.fetch.max.bytes": ("2097152", ConfigType.INT, True),
    "leader.imbalance.check.interval.seconds": ("600", ConfigType.LONG, True),
    "ssl.keystore.password": (None, ConfigType.PASSWORD, False),  # sensitive: Kafka hides the value
    "num.partitions": ("3", ConfigType.INT, True),
}


@pytest.fixture(scope="module")
def described(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, dict]]:
    """DescribeConfigs v4 (all configs, synonyms, documentation) of a cluster started with SERVER_PROPERTIES,
    read the way `serve --config-file` reads it."""
    path = tmp_path_factory.mktemp("props") / "server.properties"
    path.write_text(SERVER_PROPERTIES)
    props = _properties_file(str(path))
    assert isinstance(props, dict)
    with fakekafka.Cluster(config=props) as c:
        client = RawClient(c.bootstrap_servers)
        r = client.request(DESCRIBE, 4, {"include_synonyms": True, "include_documentation": True, "resources": [
            {"resource_type": BROKER, "resource_name": "1", "configuration_keys": None}]})
        client.close()
        (result,) = r.results
        assert result.error_code == 0
        yield {e.name: e for e in result.configs}


def test_every_kafka_broker_config_is_described(described: dict[str, dict]) -> None:
    """Kafka lists its non-internal broker configs, and the internal ones only when set: so does fakekafka."""
    kafka_names = {n for n, d in BROKER_CONFIG_DEFS.items() if not d.internal}
    assert len(kafka_names) == 350 and set(BROKER_CONFIGS) == kafka_names
    assert set(described) == kafka_names
    fakekafkas_own = {*BrokerConfig().overrides, *BrokerConfig().dynamic_defaults}  # its test-double defaults
    for name, entry in described.items():
        d = BROKER_CONFIG_DEFS[name]
        assert entry.config_type == ConfigType[d.type], name
        assert entry.read_only is (not d.dynamic), name
        assert entry.documentation == d.documentation, name
        if name not in EXPECTED and name not in fakekafkas_own and name not in ("broker.id", "node.id"):
            assert entry.config_source == DEFAULT, name
            assert entry.value == (None if d.type == "PASSWORD" else d.default), name


def test_a_kafka_style_server_properties_is_described_back(described: dict[str, dict]) -> None:
    for name, (value, config_type, read_only) in EXPECTED.items():
        e = described[name]
        assert (e.value, e.config_source, e.config_type, e.read_only) == (value, STATIC, config_type, read_only), name
        assert e.is_sensitive is (config_type == ConfigType.PASSWORD)
        assert e.synonyms[0].name == name and e.synonyms[0].source == STATIC and e.synonyms[0].value == value
    # Kafka's synonym for log.flush.interval.ms: the scheduler interval's default, after the static setting
    assert [(s.name, s.value, s.source) for s in described["log.flush.interval.ms"].synonyms] == [
        ("log.flush.interval.ms", "1000", STATIC),
        ("log.flush.scheduler.interval.ms", "9223372036854775807", DEFAULT)]


def test_every_default_is_accepted() -> None:
    """Kafka's own default of each config passes fakekafka's checks (a validator read wrongly would refuse it)."""
    for name, d in BROKER_CONFIG_DEFS.items():
        if d.default is not None and d.type != "PASSWORD":
            assert BrokerConfig.from_properties({name: d.default}).overrides[name] == d.default


@pytest.mark.parametrize(("props", "message"), [  # each checked with Kafka 4.4's ConfigDef (tools/gen_*.py's jars)
    ({"num.io.threads": "0"}, "Invalid value 0 for configuration num.io.threads: Value must be at least 1"),
    ({"num.io.threads": "3000000000"}, "Invalid value 3000000000 for configuration num.io.threads: Not a number "
                                       "of type INT"),
    ({"background.threads": "x"}, "Invalid value x for configuration background.threads: Not a number of type INT"),
    ({"auto.leader.rebalance.enable": "yes"}, "Invalid value yes for configuration auto.leader.rebalance.enable: "
                                              "Expected value to be either true or false"),
    ({"offsets.topic.replication.factor": "70000"}, "Invalid value 70000 for configuration "
                                                    "offsets.topic.replication.factor: Not a number of type SHORT"),
    ({"log.cleaner.min.cleanable.ratio": "2"}, "Invalid value 2.0 for configuration log.cleaner.min.cleanable.ratio: "
                                               "Value must be no more than 1"),
    ({"compression.gzip.level": "10"}, "Invalid value 10 for configuration compression.gzip.level: Value must be "
                                       "between 1 and 9 or equal to -1"),
    ({"process.roles": "broker,foo"}, "Invalid value foo for configuration process.roles: String must be one of: "
                                      "broker, controller"),
    ({"process.roles": ""}, "Configuration 'process.roles' must not be empty. Valid values include: "
                            "[broker, controller]"),
    ({"listeners": ""}, "Configuration 'listeners' must not be empty. Valid values include: any non-empty value"),
    ({"log.cleanup.policy": "compact,,delete"}, "Configuration 'log.cleanup.policy' values must not be empty."),
    ({"sasl.enabled.mechanisms": "PLAIN,PLAIN"}, "Configuration 'sasl.enabled.mechanisms' values must not be "
                                                 "duplicated."),
    ({"remote.log.storage.manager.impl.prefix": ""},
     "Invalid value  for configuration remote.log.storage.manager.impl.prefix: String must be non-empty"),
    ({"controller.quorum.voters": "x"}, "Invalid configuration value for controller.quorum.voters. Each entry "
                                        "should be in the form `{id}@{host}:{port}`."),
    ({"controller.quorum.voters": "1@h:x"}, "Failed to parse host name from entry 1@h:x for the configuration "
                                            "controller.quorum.voters. Each entry should be in the form "
                                            "`{id}@{host}:{port}`."),
    ({"controller.quorum.bootstrap.servers": "h:x"}, "Failed to parse host name from h:x for the configuration "
                                                     'controller.quorum.bootstrap.servers. Each entry should be in '
                                                     'the form "{host}:{port}"'),
    ({"ssl.client.auth": "x"}, "Invalid value x for configuration ssl.client.auth: String must be one of: required, "
                               "requested, none"),
    ({"principal.builder.class": "nope.Cls"}, "Invalid value nope.Cls for configuration principal.builder.class: "
                                              "Class nope.Cls could not be found."),
    ({"no.such.config": "1"}, "The configuration 'no.such.config' was supplied but isn't a known config."),
])
def test_refused_in_kafkas_words(props: dict[str, str], message: str) -> None:
    with pytest.raises(InvalidConfig) as e:
        fakekafka.Cluster(config=props)
    assert str(e.value) == message


def test_quorum_and_list_values_kafka_takes() -> None:
    ok = {"controller.quorum.voters": "1@localhost:9093,2@[::1]:9094", "controller.quorum.bootstrap.servers": "",
          "process.roles": "broker", "log.cleanup.policy": "", "group.consumer.migration.policy": "Upgrade",
          "auto.leader.rebalance.enable": " TRUE ", "principal.builder.class":
          "org.apache.kafka.common.security.authenticator.DefaultKafkaPrincipalBuilder"}
    assert ok.items() <= BrokerConfig.from_properties(ok).overrides.items()


def test_every_topic_configs_broker_synonym_is_a_kafka_broker_config() -> None:
    from fakekafka.model.config import TOPIC_CONFIGS
    for spec in TOPIC_CONFIGS.values():
        assert spec.broker_synonym is None or spec.broker_synonym in BROKER_CONFIGS, spec.name


def test_internal_configs_are_accepted_and_listed_only_when_set() -> None:
    assert "log.initial.task.delay.ms" in INTERNAL_BROKER_CONFIGS
    assert "unstable.api.versions.enable" in INTERNAL_BROKER_CONFIGS
    assert BrokerConfig.from_properties({"unstable.api.versions.enable": "false"}).overrides


@pytest.mark.fakekafka(config={"num.io.threads": "4", "auto.leader.rebalance.enable": "false"})
def test_the_pytest_marker_takes_them(kafka: fakekafka.Cluster) -> None:
    """The marker's `config` (a fakekafka-only setting: skipped under --kafka-real) takes them by name too."""
    client = RawClient(kafka.bootstrap_servers)
    r = client.request(DESCRIBE, 4, {"include_synonyms": False, "include_documentation": False, "resources": [
        {"resource_type": BROKER, "resource_name": "1",
         "configuration_keys": ["num.io.threads", "auto.leader.rebalance.enable"]}]})
    client.close()
    assert sorted((e.name, e.value, e.config_source, e.read_only) for e in r.results[0].configs) == [
        ("auto.leader.rebalance.enable", "false", STATIC, True), ("num.io.threads", "4", STATIC, False)]
