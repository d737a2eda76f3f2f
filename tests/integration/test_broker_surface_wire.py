"""What a broker says of itself, with the same assertions on fakekafka and (`pytest --kafka-real`) on Apache Kafka
4.4.0: its listener configs in DescribeConfigs, as its server.properties set them, over raw requests; its KRaft
quorum through `kafka-metadata-quorum describe` (DescribeQuorum), normalised.

fakekafka runs with `listeners` and `advertised.listeners` of its own (the advertised host differs from the bound
one, so the two cannot be mistaken for each other); the --kafka-real Kafka's server.properties sets both too.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

import pytest

from fakekafka.model.config import ConfigSource
from fakekafka.testing.ports import free_port
from fakekafka.testing.pytest_plugin import cluster_for
from tests.kafkacli import ToolSession
from tests.rawclient import RawClient

pytestmark = pytest.mark.kafka_real  # must pass on Apache Kafka too (`pytest --kafka-real -m kafka_real`)

DESCRIBE_CONFIGS, METADATA, DESCRIBE_CLUSTER, BROKER = 32, 3, 60, 4


@pytest.fixture(scope="module")
def broker(request: pytest.FixtureRequest) -> Iterator[str]:
    """Bootstrap servers of fakekafka started with its listeners (or of the --kafka-real Kafka)."""
    if request.config.getoption("--fakekafka-bootstrap"):
        pytest.skip("a remote cluster's listeners are its own")
    settings = {}
    if not request.config.getoption("--kafka-real"):
        port = free_port()
        settings = {"listeners": f"PLAINTEXT://127.0.0.1:{port}",
                    "advertised_listeners": f"PLAINTEXT://localhost:{port}"}
    with cluster_for(request.config, **settings) as cluster:
        yield cluster.bootstrap_servers


@pytest.fixture(scope="module")
def raw(broker: str) -> Iterator[RawClient]:
    client = RawClient(broker)
    try:
        yield client
    finally:
        client.close()


@pytest.fixture(scope="module")
def tools() -> Iterator[ToolSession]:
    session = ToolSession()
    try:
        yield session
    finally:
        session.close()


def _describe(raw: RawClient, name: str) -> tuple[str | None, int, bool, list[int]]:
    r = raw.request(DESCRIBE_CONFIGS, 4, {"resources": [{"resource_type": BROKER, "resource_name": "1",
                                                         "configuration_keys": [name]}],
                                          "include_synonyms": True, "include_documentation": False})
    (config,) = r.results[0].configs
    return config.value, config.config_source, config.read_only, [s.source for s in config.synonyms]


def test_advertised_listeners_are_described_as_set(raw: RawClient) -> None:
    """The value the broker was started with, static and read-only, naming the address Metadata gives clients."""
    value, source, read_only, synonyms = _describe(raw, "advertised.listeners")
    (broker,) = [b for b in raw.request(METADATA, 12, {"topics": [], "allow_auto_topic_creation": False,
                                                        "include_topic_authorized_operations": False}).brokers
                 if b.node_id == 1]
    assert value is not None and f"PLAINTEXT://{broker.host}:{broker.port}" in value.split(",")
    assert (source, read_only, synonyms) == (ConfigSource.STATIC_BROKER_CONFIG, True,
                                             [ConfigSource.STATIC_BROKER_CONFIG])


def test_listeners_are_described_as_set_above_kafkas_default(raw: RawClient) -> None:
    value, source, read_only, synonyms = _describe(raw, "listeners")
    assert value is not None and any(v.startswith("PLAINTEXT://127.0.0.1:") for v in value.split(","))
    assert (source, read_only, synonyms) == (ConfigSource.STATIC_BROKER_CONFIG, False,
                                             [ConfigSource.STATIC_BROKER_CONFIG, ConfigSource.DEFAULT_CONFIG])


STATUS = re.compile(r"ClusterId: (?P<cluster>\S+)\nLeaderId: 1\nLeaderEpoch: (?P<epoch>\d+)\n"
                    r"HighWatermark: (?P<hw>\d+)\nMaxFollowerLag: 0\nMaxFollowerLagTimeMs: 0\n"
                    r'CurrentVoters: \[\{"id": 1, "endpoints": \["(?P<listener>[A-Z_]+)://(?P<host>[\w.]+):(?P<port>\d+)"\]\}\]\n'
                    r"CurrentObservers: \[\]\n")
"""`describe --status` of a one-node quorum whose node leads, has no lag and no observers (the tool pads its
labels; runs of spaces are collapsed first). The voter's listener is CONTROLLER on Kafka, the broker's own on
fakekafka, which has no controller listener (compat/KNOWN_DIFFERENCES.md)."""


def test_metadata_quorum_status_and_replication(tools: ToolSession, raw: RawClient, broker: str) -> None:
    status = tools.run("kafka-metadata-quorum", "--bootstrap-server", broker, "describe", "--status")
    assert status.status == 0, status.messages
    text = re.sub(r" {2,}", " ", status.stdout.replace("\t", " "))
    match = STATUS.fullmatch(text)
    assert match is not None, text
    cluster_id = raw.request(DESCRIBE_CLUSTER, 1, {"include_cluster_authorized_operations": False,
                                                   "endpoint_type": 1}).cluster_id
    assert match["cluster"] == cluster_id
    assert int(match["epoch"]) >= 1 and int(match["hw"]) > 0
    replication = tools.run("kafka-metadata-quorum", "--bootstrap-server", broker, "describe", "--replication")
    assert replication.status == 0, replication.messages
    header, *rows = [line.split() for line in replication.stdout.strip().splitlines()]
    assert header == ["NodeId", "DirectoryId", "LogEndOffset", "Lag", "LastFetchTimestamp",
                      "LastCaughtUpTimestamp", "Status"]
    ((node, directory, end, lag, fetched, caught_up, role),) = rows
    assert (node, directory, lag, role) == ("1", "AAAAAAAAAAAAAAAAAAAAAA", "0", "Leader")
    assert int(end) >= int(match["hw"]) and int(fetched) > 0 and int(caught_up) > 0
