"""The Go, Node and Rust clients' compat drivers (compat/clients/go, node, rust) on the test's cluster: the
one driver per client that `python -m compat` runs (tests/test_compat.py runs every scenario through them on
Kafka and fakekafka); here, what each driver must do whatever the scenario: speak the protocol, carry
records through unchanged and name a broker's refusal as Kafka does."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from compat.clients import make_client
from compat.clients.agent import AgentClient
from compat.clients.base import ClientError, Rec, Timing, Unsupported
from compat.clients.toolchains import RUST_DIR
from fakekafka.handle import ClusterHandle
from wire import ErrorCode

pytestmark = pytest.mark.clients

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
