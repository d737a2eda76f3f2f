"""testcontainers-python's `KafkaContainer`, backed by an in-process fakekafka instead of a Docker container.

A test written for testcontainers migrates by changing one import:

    from testcontainers.kafka import KafkaContainer          # or testcontainers.community.kafka
    from fakekafka.testcontainers import KafkaContainer      # the same test, no Docker, ~1 ms to start

The surface is the one of testcontainers 4 (`testcontainers.community.kafka.KafkaContainer` and the
`DockerContainer` it extends) as far as it means something without a container:

- `start()` / `stop()` / `with KafkaContainer() as kafka:`; `start` returns the container, as there.
- `get_bootstrap_server()`, `get_container_host_ip()`, `get_exposed_port(port)`, `status`.
- `with_kraft()` (fakekafka has no ZooKeeper mode: always KRaft-like), `with_cluster_id(id)`,
  `with_env(key, value)` / `with_envs(**env)` for the broker configs the Confluent image takes as
  `KAFKA_*` variables (`KAFKA_NUM_PARTITIONS`, `KAFKA_AUTO_CREATE_TOPICS_ENABLE`, ... see `_ENV_CONFIGS`; the
  others, about listeners, ZooKeeper or the JVM, have nothing to set and are kept but unused),
  `with_bind_ports(container, host)` (the Kafka port on a fixed host port), `with_name`,
  `with_exposed_ports`, `waiting_for` (kept, unused: the broker answers when `start` returns). Each returns
  the container, so calls chain as they do there.
- What needs Docker (`with_network`, `exec`, `get_wrapped_container`, `get_docker_client`...) raises
  `NotImplementedError` saying so, rather than being silently ignored.

`container.cluster` is the `fakekafka.Cluster` behind it, for what only fakekafka can do (kill a broker,
inject errors, advance a frozen clock).
"""

from __future__ import annotations

from typing import Any, NoReturn, Self

from fakekafka.model.config import BrokerConfig
from fakekafka.testing.embedded import Cluster

__all__ = ["KafkaContainer"]

_ENV_CONFIGS: dict[str, str] = {
    "KAFKA_NUM_PARTITIONS": "num_partitions",
    "KAFKA_AUTO_CREATE_TOPICS_ENABLE": "auto_create_topics",
    "KAFKA_DEFAULT_REPLICATION_FACTOR": "default_replication_factor",
    "KAFKA_MESSAGE_MAX_BYTES": "message_max_bytes",
    "KAFKA_SOCKET_REQUEST_MAX_BYTES": "socket_request_max_bytes",
    "KAFKA_OFFSETS_TOPIC_NUM_PARTITIONS": "offsets_topic_num_partitions",
    "KAFKA_GROUP_INITIAL_REBALANCE_DELAY_MS": "group_initial_rebalance_delay_ms",
    "KAFKA_GROUP_MIN_SESSION_TIMEOUT_MS": "group_min_session_timeout_ms",
    "KAFKA_GROUP_MAX_SESSION_TIMEOUT_MS": "group_max_session_timeout_ms",
    "KAFKA_OFFSETS_RETENTION_MINUTES": "offsets_retention_minutes",
    "KAFKA_REPLICA_LAG_TIME_MAX_MS": "replica_lag_time_max_ms",
}
"""The Confluent image's environment variables (KAFKA_ + the broker config, upper case, dots as
underscores) that set a fakekafka `BrokerConfig` field."""


class KafkaContainer:
    """A fakekafka broker with the interface of testcontainers' `KafkaContainer` (see the module)."""

    def __init__(self, image: str = "confluentinc/cp-kafka:7.6.0", port: int = 9093,
                 wait_strategy_check_string: str = r".*\[KafkaServer id=\d+\] started.*",
                 listener_name: str = "PLAINTEXT", security_protocol: str = "PLAINTEXT", **kwargs: Any) -> None:
        if security_protocol != "PLAINTEXT":
            raise NotImplementedError(f"fakekafka speaks PLAINTEXT only, not {security_protocol}")
        self.image = image
        self.port = port
        self.listener_name = listener_name
        self.security_protocol = security_protocol
        self.kraft_enabled = False
        self.cluster_id = "MkU3OEVBNTcwNTJENDM2Qk"
        self.env: dict[str, str] = {}
        self.ports: dict[int, int | None] = {port: None}
        self.name: str | None = None
        self.cluster: Cluster | None = None
        # what testcontainers' KafkaContainer sets for its single broker
        self.with_env("KAFKA_BROKER_ID", "1")
        self.with_env("KAFKA_OFFSETS_TOPIC_REPLICATION_FACTOR", "1")
        self.with_env("KAFKA_OFFSETS_TOPIC_NUM_PARTITIONS", "1")
        self.with_env("KAFKA_LOG_FLUSH_INTERVAL_MESSAGES", "10000000")
        self.with_env("KAFKA_GROUP_INITIAL_REBALANCE_DELAY_MS", "0")

    # --- configuration (each returns the container) ---------------------------------------------------
    def with_kraft(self) -> Self:
        self.kraft_enabled = True
        return self

    def with_cluster_id(self, cluster_id: str) -> Self:
        self.cluster_id = cluster_id
        return self

    def with_env(self, key: str, value: str) -> Self:
        self.env[key] = str(value)
        return self

    def with_envs(self, **variables: str) -> Self:
        for key, value in variables.items():
            self.with_env(key, value)
        return self

    def with_bind_ports(self, container: str | int, host: str | int | None = None) -> Self:
        """`with_bind_ports(9093, 19093)`: the broker listens on host port 19093 (None: a free one)."""
        self.ports[int(str(container).split("/")[0])] = None if host is None else int(host)
        return self

    def with_exposed_ports(self, *ports: str | int) -> Self:
        for p in ports:
            self.ports.setdefault(int(str(p).split("/")[0]), None)
        return self

    def with_name(self, name: str) -> Self:
        self.name = name
        return self

    def waiting_for(self, strategy: Any) -> Self:
        return self

    # --- lifecycle ---------------------------------------------------------------------------------
    def start(self, timeout: int = 30) -> Self:
        if self.cluster is not None:
            raise RuntimeError("the container is already started")
        self.cluster = Cluster(config=self._config(), port=self.ports.get(self.port) or 0).start()
        return self

    def stop(self, force: bool = True, delete_volume: bool = True) -> None:
        cluster, self.cluster = self.cluster, None
        if cluster is not None:
            cluster.stop()

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, exc_type: type[BaseException] | None, exc_val: BaseException | None, exc_tb: Any) -> None:
        self.stop()

    def _config(self) -> BrokerConfig:
        values: dict[str, Any] = {"cluster_id": self.cluster_id}
        defaults = BrokerConfig()
        for key, value in self.env.items():
            name = _ENV_CONFIGS.get(key)
            if name is None:
                continue
            kind = type(getattr(defaults, name))
            try:
                values[name] = value.strip().lower() == "true" if kind is bool else kind(value)
            except ValueError:
                raise ValueError(f"{key}={value!r}: {name} takes a {kind.__name__}") from None
        return BrokerConfig(**values)

    # --- where it listens -------------------------------------------------------------------------
    def get_bootstrap_server(self) -> str:
        return f"{self.get_container_host_ip()}:{self.get_exposed_port(self.port)}"

    def get_container_host_ip(self) -> str:
        return "127.0.0.1"

    def get_exposed_port(self, port: int) -> int:
        cluster = self._started()
        if int(port) != self.port:
            raise ValueError(f"port {port} is not served: fakekafka serves Kafka's port ({self.port}) only")
        return next(iter(cluster.state.brokers.values())).port

    def get_container_id(self) -> str:
        return f"fakekafka-{id(self):x}"

    @property
    def status(self) -> str:
        return "running" if self.cluster is not None else "exited"

    def _started(self) -> Cluster:
        if self.cluster is None:
            raise RuntimeError("the container is not started: call start() or use `with KafkaContainer() as kafka:`")
        return self.cluster

    # --- what needs Docker --------------------------------------------------------------------------
    def _docker(self, what: str) -> NoReturn:
        raise NotImplementedError(f"{what} needs Docker; fakekafka.testcontainers runs the broker in this "
                                  f"process (for a broker other containers reach, run `fakekafka serve` from the "
                                  f"project's Dockerfile)")

    def with_network(self, network: Any) -> Self:
        self._docker("with_network")

    def with_network_aliases(self, *aliases: str) -> Self:
        self._docker("with_network_aliases")

    def with_volume_mapping(self, host: Any, container: str, mode: str = "ro") -> Self:
        self._docker("with_volume_mapping")

    def with_command(self, command: str | list[str]) -> Self:
        self._docker("with_command")

    def exec(self, command: Any) -> Any:
        self._docker("exec")

    def get_wrapped_container(self) -> Any:
        self._docker("get_wrapped_container")

    def get_docker_client(self) -> Any:
        self._docker("get_docker_client")
