"""Broker kills for chaos (fakekafka/chaos/source.py's `BrokerOperator`): the model kills the broker at once, its
connections are dropped and its ports closed on the loop, and it is restarted on its ports after the delay
drawn, as a crashed broker's supervisor would."""

from __future__ import annotations

import asyncio
import logging

from fakekafka.net.server import Server

__all__ = ["ServerOperator"]

log = logging.getLogger("fakekafka.server")


class ServerOperator:
    def __init__(self, server: Server) -> None:
        self.server = server
        self._tasks: set[asyncio.Task[None]] = set()

    def kill_broker(self, node_id: int, down_ms: int) -> None:
        """Called on the server's loop (from request dispatch)."""
        cluster = self.server.cluster
        cluster.kill_broker(node_id)
        loop = asyncio.get_running_loop()
        self._spawn(loop, self.server.close_broker(node_id, abort=True))
        loop.call_later(down_ms / 1000, lambda: self._spawn(loop, self._restart(node_id)))

    async def _restart(self, node_id: int) -> None:
        if self.server.cluster.brokers[node_id].alive or self.server._stopped:
            return  # restarted by hand meanwhile, or the cluster is gone
        try:
            await self.server.open_broker(node_id)
        except OSError as e:  # the server stopped meanwhile, or the port was taken
            log.info("chaos: broker %d not restarted: %s", node_id, e)
            return
        self.server.cluster.restart_broker(node_id)

    def _spawn(self, loop: asyncio.AbstractEventLoop, coro: object) -> None:
        task = loop.create_task(coro)  # type: ignore[arg-type]
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
