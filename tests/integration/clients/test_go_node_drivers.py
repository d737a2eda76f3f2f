"""The Go, Node and Rust clients' compat drivers (compat/clients/go, node, rust) on the test's cluster: the
one driver per client that `python -m compat` runs (tests/conformance/test_compat.py runs every scenario through them on
Kafka and fakekafka); here, what each driver must do whatever the scenario: speak the protocol, carry
records through unchanged and name a broker's refusal as Kafka does."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from compat.clients.agent import AgentClient
from compat.clients.base import ClientError, Rec, Timing, Unsupported
from compat.clients.registry import make_client
from compat.clients.toolchains import RUST_DIR
from fakekafka.testing.handle import ClusterHandle
from fakekafka.wire import ErrorCode

pytestmark = [pytest.mark.clients, pytest.mark.kafka_real]

GO_NODE = ("franz-go", "sarama", "kafka-go", "kafkajs", "rdkafka")


@pytest.fixture(params=GO_NODE)
def client(request: pytest.FixtureRequest, kafka: ClusterHandle) -> Iterator[AgentClient]:
    try:
        c = make_client(request.param, kafka.bootstrap_servers, Timing(op_s=10, fetch_s=5, group_s=10))
    except Unsupported as e:
        pytest.skip(str(e))
    assert isinstance(c, AgentClient)
    yield c
    c.close()


def test_an_unknown_op_is_unsupported(client: AgentClient) -> None:
    with pytest.raises(Unsupported, match="no_such_op"):
        client.request("no_such_op")


def test_records_round_trip_through_the_driver(client: AgentClient, kafka: ClusterHandle) -> None:
    client.create_topic("t", 1)
    kafka.wait_for_topic("t", 1)
    recs = [Rec(b"k0", b"v0", [("h", b"x"), ("h", b"y")], 0), Rec(b"k1", b"\x00\xff", [], 0)]
    assert client.produce("t", recs) == [(0, 0), (0, 1)]
    got = client.fetch("t", 0, 0, 2)
    assert [(r.offset, r.key, r.value, r.headers) for r in got] == [
        (0, b"k0", b"v0", [("h", b"x"), ("h", b"y")]), (1, b"k1", b"\x00\xff", [])]
    assert client.list_offsets("t", 0, "latest") == 2


def test_a_refusal_is_named_as_kafka_names_it(client: AgentClient, kafka: ClusterHandle) -> None:
    client.create_topic("twice", 1)
    kafka.wait_for_topic("twice", 1)
    with pytest.raises(ClientError) as refused:
        client.create_topic("twice", 1)
    assert refused.value.code == "TOPIC_ALREADY_EXISTS"


def test_the_rust_drivers_error_names_are_kafkas() -> None:
    """compat/clients/rust/src/kafka_errors.rs is generated from wire.ErrorCode: every code, by Kafka's name."""
    import re
    table = dict(re.findall(r'(-?\d+) => "([A-Z_0-9]+)"', (RUST_DIR / "src" / "kafka_errors.rs").read_text()))
    assert table == {str(int(c)): c.name for c in ErrorCode}


def test_configs_altered_and_described(client: AgentClient, kafka: ClusterHandle) -> None:
    """AlterConfigs, the whole-set form KafkaJS's admin has (no incremental one): a topic's dynamic configs
    become exactly those sent, so a second call without retention.ms puts its default back; a bad value is
    INVALID_CONFIG and changes nothing; DescribeConfigs with synonyms shows each value's source. The drivers
    without the op say so (skipped)."""
    client.create_topic("cfg", 1)
    kafka.wait_for_topic("cfg", 1)
    keys = ["cleanup.policy", "retention.ms", "segment.bytes"]
    try:
        client.alter_configs("topic", "cfg", {"retention.ms": "3600000", "cleanup.policy": "compact"})
    except Unsupported as e:
        pytest.skip(str(e))

    def described() -> dict[str, Any]:
        return client.describe_configs("topic", "cfg", keys)
    # Kafka's brokers apply an alteration a moment after they acknowledge it
    kafka.wait_until(lambda: described()["retention.ms"]["value"] == "3600000", message="retention.ms set")
    got = described()
    assert {k: (e["value"], e["source"], e["synonyms"]) for k, e in got.items()} == {
        "cleanup.policy": ("compact", "DYNAMIC_TOPIC_CONFIG", [["cleanup.policy", "compact", "DYNAMIC_TOPIC_CONFIG"],
                                                               ["log.cleanup.policy", "delete", "DEFAULT_CONFIG"]]),
        "retention.ms": ("3600000", "DYNAMIC_TOPIC_CONFIG", [["retention.ms", "3600000", "DYNAMIC_TOPIC_CONFIG"]]),
        "segment.bytes": ("1073741824", "DEFAULT_CONFIG", [["log.segment.bytes", "1073741824", "DEFAULT_CONFIG"]])}
    with pytest.raises(ClientError) as refused:
        client.alter_configs("topic", "cfg", {"retention.ms": "soon"})
    assert refused.value.code == "INVALID_CONFIG"
    assert described()["retention.ms"]["value"] == "3600000"
    client.alter_configs("topic", "cfg", {"cleanup.policy": "compact"})
    kafka.wait_until(lambda: described()["retention.ms"]["source"] == "DEFAULT_CONFIG", message="retention.ms gone")
    got = described()
    assert (got["retention.ms"]["value"], got["cleanup.policy"]["value"]) == ("604800000", "compact")
    broker = client.describe_configs("broker", "1", ["message.max.bytes"])
    assert (broker["message.max.bytes"]["value"], broker["message.max.bytes"]["source"]) == (
        "1048588", "DEFAULT_CONFIG")
