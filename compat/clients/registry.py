"""Makes the client adapters by name: in process (the Python libraries), as agents (the old Python clients),
or as driver processes (Java, Go, Node, Rust, kcat)."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable

from compat.clients.agent import ROOT, AgentClient
from compat.clients.base import Client, Timing, Unsupported
from compat.clients.catalog import CLIENTS, OLD_PYTHON_CLIENTS, PYTHON_CLIENTS, old_clients_python
from compat.clients.golang import GoClient
from compat.clients.in_process import python_client
from compat.clients.java import JavaClient
from compat.clients.kcat import KcatClient
from compat.clients.node import NodeClient
from compat.clients.rust import RustClient

__all__ = ["make_client"]


def _old_client(name: str) -> Callable[[str, Timing], Client]:
    def make(bootstrap: str, timing: Timing) -> Client:
        python = old_clients_python()
        if python is None:
            raise Unsupported(f"{name} lives in a virtualenv that .ci/install.sh builds: "
                              f'run `eval "$(bash .ci/install.sh)"`')
        cmd = [str(python), "-m", "compat.clients.serve", OLD_PYTHON_CLIENTS[name], bootstrap,
               json.dumps(dataclasses.asdict(timing))]
        return AgentClient(name, bootstrap, timing, cmd, cwd=ROOT)
    return make


def _factory(name: str) -> Callable[[str, Timing], Client]:
    if name in OLD_PYTHON_CLIENTS:
        return _old_client(name)
    if name in PYTHON_CLIENTS:
        return lambda bootstrap, timing: python_client(name, bootstrap, timing)
    if name == "kcat":
        return KcatClient
    if name in ("java", "java-3.9", "java-2.8"):  # one driver, on kafka-clients 4.4 / 3.9 / 2.8
        return lambda bootstrap, timing: JavaClient(bootstrap, timing, name)
    if name in ("franz-go", "sarama", "kafka-go"):
        return lambda bootstrap, timing: GoClient(bootstrap, timing, name)
    if name == "kafkajs":
        return lambda bootstrap, timing: NodeClient(bootstrap, timing, name)
    if name == "rdkafka":
        return lambda bootstrap, timing: RustClient(bootstrap, timing, name)
    raise ValueError(f"unknown client {name!r}; choose from {', '.join(CLIENTS)}")


def make_client(name: str, bootstrap: str, timing: Timing) -> Client:
    """The client `name` on `bootstrap`; Unsupported (with how to install it) when it is missing."""
    return _factory(name)(bootstrap, timing)
