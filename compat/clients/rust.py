"""The Rust client, through its driver in compat/clients/rust (the agent protocol of agent.py; the Rust side
of the protocol in rust/src/agent.rs): "rdkafka" is the rdkafka crate 0.39 with the librdkafka 2.12.1 it
bundles and builds. One process serves a run; a member to be killed gets one of its own. The binary is built
by toolchains.py (by .ci/install.sh ahead of time)."""

from __future__ import annotations

import dataclasses
import json

from compat.clients.agent import AgentClient
from compat.clients.base import Timing, Unsupported
from compat.clients.toolchains import BuildError, rust_driver

__all__ = ["RUST_CLIENTS", "RustClient"]

RUST_CLIENTS = ("rdkafka",)


class RustClient(AgentClient):
    def __init__(self, bootstrap: str, timing: Timing, name: str) -> None:
        try:
            binary = rust_driver()
        except BuildError as e:
            raise Unsupported(str(e)) from None
        super().__init__(name, bootstrap, timing, [str(binary), bootstrap, json.dumps(dataclasses.asdict(timing))])

    def log_since(self, mark: int, n: int = 40_000, head: int = 40_000) -> str:
        """More of the log than other agents give: KIP-848 members log librdkafka's group debug (about 400 lines at
        each end; a cell that waits out a stalled rebalance fills the tail with steady heartbeats, so its start is
        kept too)."""
        return super().log_since(mark, n, head)
