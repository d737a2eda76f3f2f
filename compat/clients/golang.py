"""The Go clients, each through its driver in compat/clients/go (the agent protocol of agent.py; the shared
Go side in go/agent): "franz-go" is twmb/franz-go (kgo and kadm), "sarama" is IBM/sarama, "kafka-go" is
segmentio/kafka-go. One process serves a run; a member to be killed gets one of its own. The binaries are
built by toolchains.py (by .ci/install.sh ahead of time)."""

from __future__ import annotations

import dataclasses
import json

from compat.clients.agent import AgentClient
from compat.clients.base import Timing, Unsupported
from compat.clients.toolchains import BuildError, go_driver

__all__ = ["GO_CLIENTS", "GoClient"]

GO_CLIENTS = {"franz-go": "franz", "sarama": "sarama", "kafka-go": "kafkago"}
"""Client name -> its driver's main package under compat/clients/go."""


class GoClient(AgentClient):
    def __init__(self, bootstrap: str, timing: Timing, name: str) -> None:
        try:
            binary = go_driver(GO_CLIENTS[name])
        except BuildError as e:
            raise Unsupported(str(e)) from None
        super().__init__(name, bootstrap, timing, [str(binary), bootstrap, json.dumps(dataclasses.asdict(timing))])
