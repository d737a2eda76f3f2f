"""The client adapters, by the names the command line and the table use."""

from __future__ import annotations

from collections.abc import Callable

from compat.clients.base import Client, Timing, Unsupported

__all__ = ["CLIENTS", "PYTHON_CLIENTS", "make_client", "python_client"]

PYTHON_CLIENTS = ("kafka-python", "aiokafka", "confluent-kafka")
CLIENTS = (*PYTHON_CLIENTS, "kcat", "java", "java-3.9", "java-2.8")
LIBRDKAFKA_CLIENTS = ("confluent-kafka", "kcat")


def _factory(name: str) -> Callable[[str, Timing], Client]:
    try:
        if name == "kafka-python":
            from compat.clients.kafka_python import KafkaPythonClient as cls
        elif name == "aiokafka":
            from compat.clients.aiokafka_client import AiokafkaClient as cls
        elif name == "confluent-kafka":
            from compat.clients.confluent import ConfluentClient as cls
        elif name == "kcat":
            from compat.clients.kcat import KcatClient as cls
        elif name in ("java", "java-3.9", "java-2.8"):  # one driver, on kafka-clients 4.4 / 3.9 / 2.8
            from compat.clients.java import JavaClient
            return lambda bootstrap, timing: JavaClient(bootstrap, timing, name)
        else:
            raise ValueError(f"unknown client {name!r}; choose from {', '.join(CLIENTS)}")
    except ImportError as e:
        raise Unsupported(f"{name} is not installed ({e}): pip install {name}") from None
    return cls


def python_client(name: str, bootstrap: str, timing: Timing) -> Client:
    """An in-process Python client (what the agent subprocess serves)."""
    if name not in PYTHON_CLIENTS:
        raise ValueError(f"{name} is not a Python client")
    return _factory(name)(bootstrap, timing)


def make_client(name: str, bootstrap: str, timing: Timing) -> Client:
    """The client `name` on `bootstrap`; Unsupported (with how to install it) when it is missing."""
    return _factory(name)(bootstrap, timing)
