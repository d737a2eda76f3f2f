"""The server.properties fakekafka.testing.apache_kafka writes for Kafka's nodes (no JVM: the files only)."""

from __future__ import annotations

from pathlib import Path

from fakekafka.testing.apache_kafka import KafkaCluster


def _properties(cluster: KafkaCluster, ports: dict[str, list[int]], tmp: Path) -> dict[str, str]:
    cluster.dir = tmp
    cluster.ports, cluster.controller_ports = [9092], [9093]
    cluster.listener_ports = ports
    text = cluster._node_properties(0, "1@127.0.0.1:9093").read_text()
    return dict(line.split("=", 1) for line in text.splitlines())


def test_a_listener_named_apart_from_its_protocol_is_advertised_where_told(tmp_path: Path):
    """A RELAY listener of protocol PLAINTEXT, advertised at a relay's port in front of it (bench/proxy.py)."""
    cluster = KafkaCluster(1, listeners=("RELAY:PLAINTEXT",), advertised={"RELAY": [7000]})
    props = _properties(cluster, {"RELAY": [9094]}, tmp_path)
    assert props["listeners"] == "PLAINTEXT://127.0.0.1:9092,CONTROLLER://127.0.0.1:9093,RELAY://127.0.0.1:9094"
    assert props["advertised.listeners"] == "PLAINTEXT://127.0.0.1:9092,RELAY://127.0.0.1:7000"
    assert props["listener.security.protocol.map"] == (
        "CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT,RELAY:PLAINTEXT")


def test_a_listener_named_after_its_protocol_is_advertised_at_its_own_port(tmp_path: Path):
    cluster = KafkaCluster(1, listeners=("SASL_PLAINTEXT",))
    props = _properties(cluster, {"SASL_PLAINTEXT": [9094]}, tmp_path)
    assert props["advertised.listeners"] == "PLAINTEXT://127.0.0.1:9092,SASL_PLAINTEXT://127.0.0.1:9094"
    assert props["listener.security.protocol.map"].endswith(",SASL_PLAINTEXT:SASL_PLAINTEXT")
