"""The Python client libraries, in this process: what `python -m compat.clients.serve` serves, and what
the registry makes for kafka-python, aiokafka and confluent-kafka."""

from __future__ import annotations

from compat.clients.base import Client, Timing, Unsupported
from compat.clients.catalog import PYTHON_CLIENTS

__all__ = ["python_client"]


def python_client(name: str, bootstrap: str, timing: Timing) -> Client:
    """An in-process Python client; Unsupported (with how to install it) when its library is missing."""
    if name not in PYTHON_CLIENTS:
        raise ValueError(f"{name} is not a Python client")
    # imported here: each adapter imports its client library, which a machine may not have (its cells are
    # then Unsupported, the other clients' run)
    try:
        if name == "kafka-python":
            from compat.clients.kafka_python import KafkaPythonClient as cls
        elif name == "aiokafka":
            from compat.clients.aiokafka_client import AiokafkaClient as cls
        else:
            from compat.clients.confluent import ConfluentClient as cls
    except ImportError as e:
        raise Unsupported(f"{name} is not installed ({e}): pip install {name}") from None
    return cls(bootstrap, timing)
