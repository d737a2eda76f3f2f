"""The model's clock, driven by the server: timeouts fired as the clock passes them, and timers due at once fired
after the requests already read."""

from __future__ import annotations

import asyncio
import logging

from fakekafka.model.cluster import ClusterState
from fakekafka.net.memory import FreedMemory
from fakekafka.net.quotas import ConnectionQuotas

__all__ = ["Ticker"]

log = logging.getLogger("fakekafka.server")


class Ticker:
    """Runs `cluster.tick()` whenever its next deadline passes (at least every 0.1 s), and `cluster.run_due()`
    when the model has a timer due now."""

    def __init__(self, cluster: ClusterState, quotas: ConnectionQuotas) -> None:
        self.cluster = cluster
        self.quotas = quotas
        self.memory = FreedMemory(cluster)
        self._task: asyncio.Task[None] | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._failures = 0
        self._due_scheduled = False
        self._stopped = False
        cluster.groups.on_due = self._schedule_due

    def start(self) -> None:
        if self._task is None and not self._stopped:
            self._loop = asyncio.get_running_loop()
            self._task = self._loop.create_task(self._run())

    def stop(self) -> None:
        self._stopped = True
        if self._task is not None:
            self._task.cancel()
            self._task = None

    def _schedule_due(self) -> None:
        """The model has a timer due now: it fires once the requests already read are handled (a Kafka
        coordinator's zero-delay timer runs after the events queued before it)."""
        loop = self._loop
        if self._due_scheduled or self._stopped or loop is None or loop.is_closed():
            return
        self._due_scheduled = True
        if asyncio._get_running_loop() is loop:
            loop.call_soon(self._run_due)
        else:  # the model changed from another thread (a test's own call)
            loop.call_soon_threadsafe(self._run_due)

    def _run_due(self) -> None:
        self._due_scheduled = False
        if not self._stopped:
            self.cluster.run_due()

    async def _run(self) -> None:
        """Fires the model's timeouts (sessions, rebalances) as the clock passes them, and returns freed log memory
        to the OS (the stored bytes are looked at every tick, so a peak is seen however briefly it lasted)."""
        clock = self.cluster.clock
        ticks = 0
        while True:
            try:
                self.cluster.tick()
            except Exception:  # a fakekafka bug: said once (each time at debug level); the timeouts keep firing
                if self._failures < 1 or log.isEnabledFor(logging.DEBUG):
                    log.exception("the cluster's tick failed; it keeps running")
                self._failures += 1
            self.quotas.expire_idle()
            ticks += 1
            self.memory.look(look_again=ticks % 10 == 0)
            deadline = self.cluster.next_deadline()
            wait = 0.1 if deadline is None else min(max((deadline - clock.now_ms()) / 1000, 0.005), 0.1)
            await asyncio.sleep(wait)
