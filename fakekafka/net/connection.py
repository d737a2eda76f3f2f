"""One client connection of a broker: an asyncio BufferedProtocol that reads frames (fakekafka/net/framing.py),
queues them for the connection's task and writes its answers.

Frames queue up here (a client may pipeline requests) and are answered one at a time by the connection's task.
Reading pauses for any of: too many frames queued, the broker's queued.max.request.bytes spent, max.connections
reached (the connection waits to be admitted). What it needs of the server is `ConnectionOwner`."""

from __future__ import annotations

import asyncio
import logging
import socket
import sys
from collections.abc import Coroutine
from typing import Any, Protocol

from fakekafka.handlers.connection import ConnectionState
from fakekafka.model.metadata import Broker
from fakekafka.net.framing import GO, STOP, WAIT, FrameReader
from fakekafka.net.security import ListenerSpec

__all__ = ["Connection", "ConnectionOwner"]

log = logging.getLogger("fakekafka.server")
_IOV_MAX = 1024  # buffers per sendmsg(): Linux's UIO_MAXIOV
# Python 3.11's transport joins writelines() into one bytes (a copy of every stored batch a Fetch returns);
# 3.12+ sends them with sendmsg() itself.
_TRANSPORT_JOINS = sys.version_info < (3, 12)


def _take(chunks: list[Any], limit: int) -> tuple[list[Any], list[Any]]:
    """(the first `limit` bytes of `chunks`, the rest), splitting the buffer that straddles the limit."""
    total = 0
    for i, c in enumerate(chunks):
        n = len(c)
        if total + n >= limit:
            cut = limit - total
            if cut == n:
                return chunks[:i + 1], chunks[i + 1:]
            view = memoryview(c)
            return [*chunks[:i], view[:cut]], [view[cut:], *chunks[i + 1:]]
        total += n
    return chunks, []


class ConnectionOwner(Protocol):
    """What a connection needs of the server that accepted it."""

    scratch: bytearray
    """One read buffer for all connections (each read is parsed, and what is kept copied, before the next)."""

    def request_max_bytes(self) -> int: ...

    def connection_made(self, conn: Connection) -> None: ...

    def touch(self, conn: Connection) -> None: ...

    def reserve(self, conn: Connection, size: int) -> bool: ...

    def forget(self, conn: Connection) -> None: ...

    def serve(self, conn: Connection) -> Coroutine[Any, Any, None]: ...


class Connection(asyncio.BufferedProtocol):
    """A broker's client connection (see the module's docstring)."""

    _MAX_QUEUED = 64
    WRITE_PIECE = 1 << 20
    """Bytes of an answer handed to the transport at a time (see `write`)."""

    def __init__(self, owner: ConnectionOwner, broker: Broker, listener: ListenerSpec | None = None) -> None:
        self.owner = owner
        self.broker = broker
        self.listener = listener
        self.state = ConnectionState(listener=None if listener is None else listener.name)
        """What the broker knows of the connection across its requests (handlers read and set it)."""
        self.peer = "?"
        self.ip = "?"
        self.transport: asyncio.Transport | None = None
        self.task: asyncio.Task[None] | None = None
        self.frames = FrameReader(self._deliver, self._admit, scratch=owner.scratch)
        self._queue: list[bytearray] = []  # at most _MAX_QUEUED: a list is 56 bytes where a deque is 760
        self._wakeup: asyncio.Future[None] | None = None
        self.closed = False
        self._paused: tuple[str, ...] = ()  # why reading is paused; a set cost 216 bytes per connection
        self._writable = True
        self._drained: asyncio.Future[None] | None = None
        """Made only while an answer waits for the transport to drain (an Event per connection cost 760 bytes)."""
        self._sock: socket.socket | None = None
        self.reserved = 0
        """Bytes of this connection's frames counted against queued.max.request.bytes (announced sizes)."""
        self.last_active = 0
        self.in_request = False
        self.admitted = False
        self.counted_ip = False

    @property
    def quota_node(self) -> int:
        """What the connection quotas count it per: its broker."""
        return self.broker.node_id

    # protocol callbacks ------------------------------------------------------------------------
    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport
        if _TRANSPORT_JOINS and transport.get_extra_info("sslcontext") is None:  # TLS: bytes go through ssl
            sock = getattr(transport.get_extra_info("socket"), "_sock", None)
            self._sock = sock if isinstance(sock, socket.socket) and hasattr(sock, "sendmsg") else None
        peer = transport.get_extra_info("peername")
        self.peer = f"{peer[0]}:{peer[1]}" if isinstance(peer, tuple) else str(peer)
        self.ip = str(peer[0]) if isinstance(peer, tuple) else self.peer
        self.owner.connection_made(self)

    def start(self) -> None:
        """Admitted (counted as one of the broker's connections): served."""
        self.admitted = True
        self.resume("held")
        self.task = asyncio.get_running_loop().create_task(self.owner.serve(self))

    def pause(self, reason: str) -> None:
        if not self._paused and self.transport is not None:
            self.transport.pause_reading()
        if reason not in self._paused:
            self._paused += (reason,)

    def resume(self, reason: str) -> None:
        if reason in self._paused:
            self._paused = tuple(r for r in self._paused if r != reason)
            if not self._paused and self.transport is not None and not self.closed:
                self.transport.resume_reading()

    def get_buffer(self, sizehint: int) -> memoryview:
        return self.frames.get_buffer()

    def buffer_updated(self, nbytes: int) -> None:
        self.owner.touch(self)
        self.frames.updated(nbytes)

    def _admit(self, size: int) -> int:
        limit = self.owner.request_max_bytes()
        if size < 0 or size > limit:
            log.warning("connection %s: frame of %d bytes is outside 0..%d (socket.request.max.bytes); closing",
                        self.peer, size, limit)
            self.close()
            return STOP
        if not self.owner.reserve(self, size):  # queued.max.request.bytes spent: wait for it
            self.pause("budget")
            return WAIT
        return GO

    def unstarve(self) -> None:
        """The budget has room again (counted already): reads the frame this connection waits to start."""
        if self.closed:
            return
        self.resume("budget")
        self.frames.resume_frame()

    def _deliver(self, frame: bytearray) -> None:
        self._queue.append(frame)
        if len(self._queue) >= self._MAX_QUEUED:
            self.pause("queue")
        self._wake()

    def eof_received(self) -> bool:
        partial = self.frames.partial()
        if partial is not None:
            log.warning("connection %s: truncated frame (%d of %d bytes); closing", self.peer, *partial)
        return False

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed = True
        self.frames.stop()
        self.owner.forget(self)
        self.resume_writing()
        self._wake()
        if self.in_request and self.task is not None and not self.task.done():
            self.task.cancel()  # a parked request ends with its connection (and lets go of its memory)

    def pause_writing(self) -> None:
        self._writable = False

    def resume_writing(self) -> None:
        self._writable = True
        drained = self._drained
        if drained is not None and not drained.done():
            drained.set_result(None)

    # used by the connection's task -----------------------------------------------------------------
    def _wake(self) -> None:
        if self._wakeup is not None and not self._wakeup.done():
            self._wakeup.set_result(None)

    async def next_frame(self) -> bytearray | None:
        while not self._queue:
            if self.closed:
                return None
            self._wakeup = asyncio.get_running_loop().create_future()
            await self._wakeup
        frame = self._queue.pop(0)
        if len(self._queue) < self._MAX_QUEUED // 2:
            self.resume("queue")
        return frame

    async def write(self, chunks: list[Any]) -> None:
        """Sends an answer, handing the transport at most `WRITE_PIECE` bytes at a time and waiting for it to
        drain before the next piece: a client that does not read holds its answer's views of the stored batches,
        not a copy of them (Python 3.11's transport joins what it is given; TLS encrypts it all at once). The
        connection's next request is read only after this returns, so what it holds unsent stays bounded."""
        if self.closed or self.transport is None:
            raise ConnectionError("connection closed")
        self.owner.touch(self)
        while chunks:
            if self.closed:
                raise ConnectionError("connection closed")
            if self._sock is not None and not self.transport.get_write_buffer_size():
                chunks = self._send_now(chunks)
                if not chunks:
                    return
            piece, chunks = _take(chunks, self.WRITE_PIECE)
            # the last buffer through write(): its check of the buffered size pauses the connection (Python 3.12.1
            # and 3.13.0's writelines() buffers without that check, so a reader that reads nothing never paused it)
            self.transport.writelines(piece[:-1])
            self.transport.write(piece[-1])
            while not self._writable:
                self._drained = asyncio.get_running_loop().create_future()
                await self._drained
            self._drained = None

    def _send_now(self, chunks: list[Any]) -> list[Any]:
        """Sends what the socket takes straight from the response's buffers (stored batches are not copied
        into one bytes first); returns what is left for the transport, which buffers it and reports errors."""
        assert self._sock is not None
        while chunks:
            head = chunks[:_IOV_MAX]
            try:
                sent = self._sock.sendmsg(head)
            except (BlockingIOError, InterruptedError):
                return chunks
            except OSError:
                return chunks  # the transport's own send meets the same error and closes the connection
            for i, c in enumerate(head):
                n = len(c)
                if sent < n:
                    return [memoryview(c)[sent:], *chunks[i + 1:]]
                sent -= n
            chunks = chunks[len(head):]
        return chunks

    def close(self, *, abort: bool = False) -> None:
        self.closed = True
        self.frames.stopped = True
        if self.transport is not None:
            if abort:
                self.transport.abort()
            else:
                self.transport.close()
        self._wake()
