"""The clients compat drives, by the names the command line and the table use: what each is, and which
can speak KIP-848's consumer group protocol. Data only: the adapters read it, and compat.clients.registry
makes the clients."""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["CLIENTS", "CLIENT_DOCS", "CONSUMER_PROTOCOL_CLIENTS", "CONSUMER_PROTOCOL_REFUSALS", "GO_NODE_CLIENTS",
           "LIBRDKAFKA_CLIENTS", "OLD_PYTHON_CLIENTS", "PYTHON_CLIENTS", "old_clients_python"]

PYTHON_CLIENTS = ("kafka-python", "aiokafka", "confluent-kafka")
# Versions users still pin, each served by the same adapter as the current one, from the virtualenv
# .ci/install.sh builds for them (confluent-kafka 1.9.2 has no wheel for this Python: it is built against
# Debian's librdkafka 2.0.2; aiokafka 0.13.0 is the minor before the current one): name -> the adapter it runs.
OLD_PYTHON_CLIENTS = {"kafka-python-2.0.2": "kafka-python", "confluent-kafka-1.9.2": "confluent-kafka",
                      "aiokafka-0.13.0": "aiokafka"}
GO_NODE_CLIENTS = ("franz-go", "sarama", "kafka-go", "kafkajs", "rdkafka")
"""Clients in other languages, each one driver process speaking agent.py's protocol (golang.py, node.py,
rust.py)."""
CLIENTS = (*PYTHON_CLIENTS, "kcat", "java", "java-3.9", "java-2.8", *OLD_PYTHON_CLIENTS, *GO_NODE_CLIENTS)
CLIENT_DOCS = {
    "kafka-python": "kafka-python (pure Python), in the harness process",
    "aiokafka": "aiokafka (asyncio), in the harness process",
    "confluent-kafka": "confluent-kafka (librdkafka), in the harness process",
    "kcat": "kcat 1.7 (Debian; librdkafka 2.0.2), a subprocess per call",
    "java": "kafka-clients 4.4.0 (Java), one JVM per run (compat/clients/java/CompatDriver.java)",
    "java-3.9": "kafka-clients 3.9.1, the same Java driver",
    "java-2.8": "kafka-clients 2.8.2, the same Java driver",
    "kafka-python-2.0.2": "kafka-python 2.0.2 in the old-clients virtualenv, as an agent",
    "confluent-kafka-1.9.2": "confluent-kafka 1.9.2 (Debian's librdkafka 2.0.2) in the old-clients virtualenv",
    "aiokafka-0.13.0": "aiokafka 0.13.0 (the previous minor) in the old-clients virtualenv, as an agent",
    "franz-go": "franz-go 1.22.2 (Go; kgo, kadm 1.19.0), one driver process per run (compat/clients/go/franz)",
    "sarama": "IBM/sarama 1.61.1 (Go), its default protocol version 2.8, one driver process per run (go/sarama)",
    "kafka-go": "segmentio/kafka-go 0.4.51 (Go), one driver process per run (go/kafkago)",
    "kafkajs": "KafkaJS 2.2.4 (Node) with kafkajs-snappy, one driver process per run (compat/clients/node)",
    "rdkafka": "the rdkafka crate 0.39.0 (Rust; its bundled librdkafka 2.12.1), one driver process per run "
               "(compat/clients/rust)",
}
"""What each client is, for `python -m compat --list-clients`."""
LIBRDKAFKA_CLIENTS = ("confluent-kafka", "kcat", "confluent-kafka-1.9.2", "rdkafka")

_NO_848_LIBRDKAFKA = "librdkafka 2.0.2 has no group.protocol (KIP-848 came in later librdkafka releases)"
CONSUMER_PROTOCOL_REFUSALS: dict[str, str] = {
    "kafka-python": "kafka-python 3.0 joins groups with JoinGroup/SyncGroup only (it names ConsumerGroupHeartbeat "
                    "as an API key and sends none)",
    "aiokafka": "aiokafka 0.14 joins groups with JoinGroup/SyncGroup only (no group.protocol)",
    "kcat": _NO_848_LIBRDKAFKA,
    "java-2.8": "kafka-clients 2.8 predates KIP-848 (group.protocol came in 3.7)",
    "kafka-python-2.0.2": "kafka-python 2.0.2 predates KIP-848",
    "confluent-kafka-1.9.2": _NO_848_LIBRDKAFKA,
    "aiokafka-0.13.0": "aiokafka 0.13 joins groups with JoinGroup/SyncGroup only (no group.protocol)",
    "sarama": "sarama 1.61 has no KIP-848 consumer (its ConsumerGroup runs JoinGroup/SyncGroup only)",
    "kafka-go": "kafka-go 0.4.51 has no KIP-848 consumer (its Reader's groups run JoinGroup/SyncGroup only)",
    "kafkajs": "KafkaJS 2.2.4 has no KIP-848 consumer (JoinGroup/SyncGroup only; no release since 2023)",
}
"""Clients whose members cannot use group.protocol=consumer, and why (their consumer_protocol_* cells are
unsupported)."""
CONSUMER_PROTOCOL_CLIENTS = ("java", "java-3.9", "confluent-kafka", "franz-go", "rdkafka")
"""The clients whose members can: kafka-clients 4.4 and 3.9 (group.protocol=consumer; 3.9 sends
ConsumerGroupHeartbeat v0), confluent-kafka 2.16 and the rdkafka crate (librdkafka 2.16 / 2.12:
group.protocol=consumer), franz-go 1.22 (kgo.ServerSideBalancer with its cooperative-sticky balancer, which asks
for the broker's `uniform` assignor). Every client is in exactly one of the two."""


def old_clients_python() -> Path | None:
    """The old clients' interpreter ($FAKEKAFKA_OLD_CLIENTS venv, else the install script's), or None."""
    base = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "fakekafka" / "venv-old-clients"
    venv = Path(os.environ.get("FAKEKAFKA_OLD_CLIENTS") or base)
    python = venv / "bin" / "python"
    return python if python.exists() else None
