"""The Node clients, each through its driver in compat/clients/node (the agent protocol of agent.py; the
shared JavaScript side in node/agent.js): "kafkajs" is KafkaJS 2.2.4 with kafkajs-snappy. One process
serves a run; a member to be killed gets one of its own. Their node_modules come from the package.json and
package-lock.json beside the drivers, installed by toolchains.py (by .ci/install.sh ahead of time)."""

from __future__ import annotations

import dataclasses
import json
import os
import shutil

from compat.clients.agent import AgentClient
from compat.clients.base import Timing, Unsupported
from compat.clients.toolchains import NODE_DIR, BuildError, node_modules

__all__ = ["NODE_CLIENTS", "NodeClient"]

NODE_CLIENTS = {"kafkajs": "kafkajs.js"}
"""Client name -> its driver script in compat/clients/node."""


class NodeClient(AgentClient):
    def __init__(self, bootstrap: str, timing: Timing, name: str) -> None:
        node = shutil.which("node")
        if node is None:
            raise Unsupported('node not found: the Node clients need it (eval "$(bash .ci/install.sh)")')
        try:
            modules = node_modules()
        except BuildError as e:
            raise Unsupported(str(e)) from None
        os.environ["NODE_PATH"] = str(modules)  # the agent (and the agents it spawns) find the pinned packages
        super().__init__(name, bootstrap, timing, [node, str(NODE_DIR / NODE_CLIENTS[name]), bootstrap,
                                                   json.dumps(dataclasses.asdict(timing))])
