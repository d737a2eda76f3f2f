"""fakekafka.testcontainers.KafkaContainer: testcontainers-python's surface, an in-process broker behind it."""

from __future__ import annotations

import inspect
import socket

import pytest

from fakekafka.testcontainers import KafkaContainer

SHARED = ["__init__", "start", "stop", "__enter__", "__exit__", "get_bootstrap_server", "get_container_host_ip",
          "get_exposed_port", "with_kraft", "with_cluster_id", "with_env", "with_envs", "with_bind_ports",
          "with_exposed_ports", "with_name", "waiting_for", "with_network", "with_network_aliases",
          "with_volume_mapping", "with_command", "exec", "get_wrapped_container", "get_docker_client",
          "get_container_id", "status"]


@pytest.mark.parametrize("name", SHARED)
def test_same_methods_and_parameters_as_testcontainers(name: str) -> None:
    real = pytest.importorskip("testcontainers.community.kafka",
                               reason="testcontainers is not installed: pip install testcontainers").KafkaContainer
    if isinstance(inspect.getattr_static(real, name), property):
        assert isinstance(inspect.getattr_static(KafkaContainer, name), property)
        return
    theirs = inspect.signature(getattr(real, name))
    ours = inspect.signature(getattr(KafkaContainer, name))
    assert [(p.name, p.kind, p.default) for p in ours.parameters.values()] == \
        [(p.name, p.kind, p.default) for p in theirs.parameters.values()]


def test_a_testcontainers_test_runs_unchanged_but_for_the_import() -> None:
    from kafka import KafkaConsumer, KafkaProducer
    # as testcontainers-python's own documentation writes it
    with KafkaContainer().with_kraft() as kafka:
        connection = kafka.get_bootstrap_server()
        assert connection == f"{kafka.get_container_host_ip()}:{kafka.get_exposed_port(kafka.port)}"
        producer = KafkaProducer(bootstrap_servers=connection)
        producer.send("orders", b"o-1").get(10)
        producer.close()
        consumer = KafkaConsumer("orders", bootstrap_servers=connection, auto_offset_reset="earliest")
        got: list[bytes] = []
        for _ in range(10):
            got += [m.value for ms in consumer.poll(timeout_ms=1000).values() for m in ms]
            if got:
                break
        assert got == [b"o-1"]
        consumer.close()
        assert kafka.status == "running"
    assert kafka.status == "exited"
    with pytest.raises(RuntimeError, match="not started"):
        kafka.get_bootstrap_server()


def test_start_and_stop_without_a_context_manager_and_chained_settings() -> None:
    container = KafkaContainer("confluentinc/cp-kafka:7.6.0")
    assert container.with_kraft() is container and container.with_cluster_id("my-cluster") is container
    assert container.with_envs(KAFKA_NUM_PARTITIONS="3", KAFKA_AUTO_CREATE_TOPICS_ENABLE="false") is container
    assert container.start() is container
    try:
        from confluent_kafka.admin import AdminClient
        admin = AdminClient({"bootstrap.servers": container.get_bootstrap_server()})
        assert admin.describe_cluster().result(10).cluster_id == "my-cluster"
        cluster = container.cluster
        assert cluster is not None
        assert cluster.config.num_partitions == 3 and not cluster.config.auto_create_topics
        assert cluster.config.offsets_topic_num_partitions == 1  # as testcontainers' container sets it
    finally:
        container.stop()
    container.stop()  # twice is harmless, as there


def test_bind_ports_puts_the_broker_on_a_fixed_host_port() -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    with KafkaContainer().with_bind_ports(9093, port) as kafka:
        assert kafka.get_bootstrap_server() == f"127.0.0.1:{port}"
        with pytest.raises(ValueError, match="fakekafka serves Kafka's port"):
            kafka.get_exposed_port(2181)


def test_what_needs_docker_says_so() -> None:
    with pytest.raises(NotImplementedError, match="with_network needs Docker"):
        KafkaContainer().with_network(object())
    with pytest.raises(ValueError, match="KAFKA_NUM_PARTITIONS='many': num_partitions takes a int"):
        KafkaContainer().with_env("KAFKA_NUM_PARTITIONS", "many").start()
