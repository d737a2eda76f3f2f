"""`LoopThread`: an event loop on a daemon thread that in-process clusters (and proxies) are served from."""

from __future__ import annotations

import asyncio
import collections
import concurrent.futures
import logging
import threading
from typing import Any

from fakekafka.net.server import ListenerPool, Server

__all__ = ["LoopThread", "new_event_loop"]

log = logging.getLogger("fakekafka")


def new_event_loop() -> asyncio.AbstractEventLoop:
    """asyncio's own selector loop, whatever event loop policy the process has set: the network edge answers
    from asyncio's socket transports (a socket's `sendmsg` of a response's buffers, its write buffer's size),
    which uvloop's are not (under `uvloop.install()` every connection failed before its first request)."""
    return asyncio.SelectorEventLoop()


class LoopThread:
    """An event loop on a daemon thread that clusters can share (the pytest plugin keeps one per session).

    With `listener_pool=N` it keeps N listening sockets bound and served ahead of time, so a cluster starts
    without a syscall or a message to the loop. Clusters stopped with `retire` are stopped by the loop in
    batches (every few clusters, or within `REAP_INTERVAL_S`), which is also when the pool is refilled: each
    message to the loop is a write to its wake-up pipe, the largest single cost of a start+stop here.
    """

    REAP_INTERVAL_S = 0.05
    REAP_BATCH = 4

    def __init__(self, name: str = "fakekafka-loop", *, listener_pool: int = 0, host: str = "127.0.0.1") -> None:
        self.name = name
        self.pool = ListenerPool(host, listener_pool) if listener_pool > 0 else None
        self.loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._pending: set[concurrent.futures.Future[Any]] = set()
        self._retired: collections.deque[Server] = collections.deque()
        self._reaper: asyncio.Task[None] | None = None
        self._reaping = False

    def start(self) -> LoopThread:
        if self.loop is not None:
            raise RuntimeError("loop thread already started")
        loop = new_event_loop()
        self.loop = loop
        self._thread = threading.Thread(target=self._run, args=(loop,), name=self.name, daemon=True)
        self._thread.start()
        if self.pool is not None:
            self.submit(self.pool.fill()).result(30)
        return self

    async def _reap_every(self) -> None:
        while True:
            await asyncio.sleep(self.REAP_INTERVAL_S)
            await self._reap()

    async def _reap(self) -> None:
        if self._reaping:
            return
        self._reaping = True
        try:
            while self._retired:
                server = self._retired.popleft()
                try:
                    await server.stop()
                except Exception:  # noqa: BLE001 - one cluster's failure must not keep the others open
                    log.exception("fakekafka: stopping a retired cluster failed")
            if self.pool is not None:
                await self.pool.fill()
        finally:
            self._reaping = False

    def _wanted(self) -> bool:
        return len(self._retired) >= self.REAP_BATCH or (
            self.pool is not None and self.pool.ready < self.pool.size // 2)

    def retire(self, server: Server) -> None:
        """Has the loop stop `server` soon (its ports and connections close; its state is left alone)."""
        loop = self.loop
        if loop is None:
            raise RuntimeError("the loop thread is not running")
        self._retired.append(server)
        if self._reaper is None or self._wanted():  # the first retire also starts the periodic reaper
            loop.call_soon_threadsafe(self._kick)

    def drain(self, timeout: float = 10) -> None:
        """Waits until every retired cluster is stopped and the pool is full again (for leak checks)."""
        async def reap_now() -> None:
            while self._reaping:
                await asyncio.sleep(0.001)
            await self._reap()
        self.submit(reap_now()).result(timeout)

    def _kick(self) -> None:
        loop = asyncio.get_running_loop()
        if self._reaper is None:
            self._reaper = loop.create_task(self._reap_every())
        if not self._reaping:
            loop.create_task(self._reap())

    @staticmethod
    def _run(loop: asyncio.AbstractEventLoop) -> None:
        asyncio.set_event_loop(loop)
        try:
            loop.run_forever()
        finally:
            loop.close()

    def in_loop(self) -> bool:
        try:
            return asyncio.get_running_loop() is self.loop
        except RuntimeError:
            return False

    def submit(self, coro: Any, *, report: bool = True) -> concurrent.futures.Future[Any]:
        """Runs a coroutine on the loop; `stop` waits for what is still pending, so nothing is cut short.
        A failure is logged unless `report` is False: a caller that waits for the result gets the exception
        itself, and a second traceback in the log would only repeat it."""
        if self.loop is None:
            coro.close()
            raise RuntimeError("the loop thread is not running")
        fut = asyncio.run_coroutine_threadsafe(coro, self.loop)
        self._pending.add(fut)
        fut.add_done_callback(self._done if report else self._pending.discard)
        return fut

    def _done(self, fut: concurrent.futures.Future[Any]) -> None:
        self._pending.discard(fut)
        if not fut.cancelled() and fut.exception() is not None:
            log.error("fakekafka: background task failed", exc_info=fut.exception())

    async def _end(self) -> None:
        if self._reaper is not None:
            self._reaper.cancel()
        while self._reaping:
            await asyncio.sleep(0.001)
        if self.pool is not None:
            await self.pool.close()
        await self._reap()

    def stop(self, timeout: float = 10) -> None:
        loop, thread = self.loop, self._thread
        if loop is None:
            return
        concurrent.futures.wait(list(self._pending), timeout)
        self.submit(self._end()).result(timeout)
        self.loop = self._thread = None
        loop.call_soon_threadsafe(loop.stop)
        if thread is not None and thread is not threading.current_thread():
            thread.join(timeout)
