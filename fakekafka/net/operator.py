"""Broker kills for chaos (fakekafka/chaos/source.py's `BrokerOperator`): the model kills the broker at once, its
connections are dropped and its ports closed on the loop, and it restarts when the cluster's clock passes the
kill's time plus the delay drawn, as a crashed broker's supervisor would. The restart is a point of the cluster's
clock, not a wall-clock timer: under a frozen clock (`clock="frozen"`) the broker stays down until the test moves
the clock past it, so a replayed schedule meets the broker down and up at the same request points."""

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
        self.restarts: dict[int, int] = {}
        """node id -> when (cluster clock, ms) the killed broker restarts."""
        self._listening = False

    def kill_broker(self, node_id: int, down_ms: int) -> None:
        """Called on the server's loop (from request dispatch)."""
        cluster = self.server.cluster
        cluster.kill_broker(node_id)
        self._spawn(self.server.close_broker(node_id, abort=True))
        self.restarts[node_id] = cluster.clock.now_ms() + down_ms
        if not self._listening:  # the cluster's tick (and a test's advance_clock) tells its clock's listeners
            cluster.add_change_listener(self._clock_moved)
            self._listening = True

    def _clock_moved(self, changed: object) -> None:
        cluster = self.server.cluster
        if changed is not cluster.clock or not self.restarts:
            return
        now = cluster.clock.now_ms()
        for node_id, due in sorted(self.restarts.items(), key=lambda kv: (kv[1], kv[0])):
            if due > now:
                continue
            del self.restarts[node_id]  # before restarting: the restart notifies listeners again
            if self.server._stopped or cluster.brokers[node_id].alive:
                continue  # the cluster is gone, or the broker was restarted by hand meanwhile
            cluster.restart_broker(node_id)  # in the model now, at this point of the clock
            self._spawn(self._listen(node_id))

    async def _listen(self, node_id: int) -> None:
        try:
            await self.server.open_broker(node_id)
        except OSError as e:  # the server stopped meanwhile, or the port was taken
            log.info("chaos: broker %d restarted, but its ports could not be opened again: %s", node_id, e)

    def _spawn(self, coro: object) -> None:
        task = asyncio.get_running_loop().create_task(coro)  # type: ignore[arg-type]
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
