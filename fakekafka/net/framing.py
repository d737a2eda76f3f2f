"""Kafka's framing, read: size-prefixed frames out of an asyncio BufferedProtocol's reads, for the broker and the
proxy alike.

A small frame is read through a scratch buffer and copied out; a large one is received straight into its own
buffer, allocated up to `upfront` bytes when its size is read and grown with the bytes that arrive past that
(so an announced size costs at most `upfront` until its bytes come). Each frame is delivered whole as a buffer
nobody writes to again.

What to do with an announced size is the owner's: `admit` says go on, stop (the connection is being closed) or
wait (the broker's queued.max.request.bytes is spent: the reader keeps what it has read past the size prefix
until `resume_frame`). A frame of `STREAM_MIN` bytes or more may be taken as a `FrameStream` instead (the proxy,
fakekafka/proxy/server.py), which gets it in the pieces it arrives in and nothing is assembled.
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from typing import Any

__all__ = ["GO", "STOP", "WAIT", "FrameReader", "FrameStream"]

_SIZE = struct.Struct(">i")
_ZEROS = bytes(1 << 20)
GO, STOP, WAIT = 0, 1, 2
"""What `admit` answers for an announced size: read the frame; stop reading (the connection is being closed);
hold the frame until `resume_frame`."""


def _grow(buf: bytearray, n: int) -> None:
    """Appends `n` zero bytes without a temporary of that size."""
    while n > 0:
        k = min(n, len(_ZEROS))
        buf += memoryview(_ZEROS)[:k]
        n -= k


class FrameStream:
    """A frame passed on while it arrives: `feed` gets each piece (a view valid for the call only) and whether
    it is the frame's last."""

    def feed(self, data: memoryview, last: bool) -> None:
        raise NotImplementedError


def _deliver_nothing(_: bytearray) -> None:
    """A stopped reader's `deliver`."""


def _admit_nothing(_: int) -> int:
    """A stopped reader's `admit`."""
    return STOP


class FrameReader:
    """Size-prefixed frames out of a BufferedProtocol's reads (`get_buffer`, `updated`).

    `deliver` gets each whole frame, with its size prefix when `keep_prefix` (the proxy forwards frames as
    received), without it otherwise. `scratch`: a read buffer to share between readers (each read is parsed,
    and what is kept copied, before the next one), filled on first use; by default the reader has its own.
    `stream_scratch`: the same for the larger buffer a reader that has streamed reads into (shared, the proxy's
    connections cost no buffer of their own while idle).

    A frame of `STREAM_MIN` bytes or more is first offered to `open_stream` with its first bytes (`DECIDE`,
    doubled while it is undecided): it may take the frame as a `FrameStream`. A reader that has streamed reads
    `STREAM_SCRATCH` bytes at a time from then on (fewer wake-ups per large frame)."""

    SCRATCH = 65536
    STREAM_SCRATCH = 1048576
    STREAM_MIN = 65536
    DECIDE = 1024

    def __init__(self, deliver: Callable[[bytearray], None], admit: Callable[[int], int], *, upfront: int = 0,
                 keep_prefix: bool = False, scratch: bytearray | None = None,
                 open_stream: Callable[[memoryview, int], Any] | None = None,
                 stream_scratch: bytearray | None = None) -> None:
        self.deliver = deliver
        self.admit = admit
        """Called with each announced size: GO, STOP or WAIT."""
        self.upfront = upfront
        self.base = 4 if keep_prefix else 0
        self.open_stream = open_stream
        """(the frame's first bytes, its whole size) -> None: undecided, more bytes wanted; False: assemble it
        whole; a `FrameStream`: pass it on as it comes."""
        self.scratch = bytearray(self.SCRATCH) if scratch is None else scratch
        self.stream_scratch = stream_scratch
        self.head = bytearray()
        self.frame: bytearray | None = None
        self.size = 0
        self.filled = 0
        self.direct = False
        self.stopped = False
        self.deciding = False
        self.stream: FrameStream | None = None
        self.remaining = 0
        self.waiting: int | None = None
        """The announced size of a frame `admit` said to WAIT for."""
        self._stash = b""

    def get_buffer(self) -> memoryview:
        frame = self.frame
        if frame is not None and self.size - self.filled >= self.SCRATCH and not self.deciding:
            if len(frame) - self.filled < self.SCRATCH:  # grow by what has arrived, never past the size
                _grow(frame, min(self.size, max(2 * len(frame), self.filled + self.SCRATCH)) - len(frame))
            self.direct = True
            return memoryview(frame)[self.filled:]
        self.direct = False
        scratch = self.scratch
        if not scratch:
            scratch.extend(bytes(self.SCRATCH))
        return memoryview(scratch)

    def updated(self, nbytes: int) -> None:
        """Takes the `nbytes` just read into the buffer `get_buffer` gave."""
        if self.direct:
            self.filled += nbytes
            if self.filled == self.size:
                frame, self.frame = self.frame, None
                self.deliver(frame)  # type: ignore[arg-type]
            return
        self.feed(memoryview(self.scratch)[:nbytes])

    def partial(self) -> tuple[int, int] | None:
        """(bytes read, bytes wanted) of a frame begun and not complete; None between frames (and for a frame told
        to WAIT: not begun)."""
        if self.frame is not None:
            return self.filled - self.base, self.size - self.base
        if self.head and self.waiting is None:
            return len(self.head), 4
        return None

    def stop(self) -> None:
        """Reads nothing more and lets go of what it holds."""
        self.stopped = True
        self.frame = None
        self._stash = b""
        self.waiting = None
        # and of its owner: the callbacks are its bound methods, a cycle the garbage collector would have to find
        self.deliver, self.admit, self.open_stream = _deliver_nothing, _admit_nothing, None

    def resume_frame(self) -> None:
        """The frame `admit` said to WAIT for may be read now: it is, then what came after it."""
        size, stash = self.waiting, self._stash
        self.waiting, self._stash = None, b""
        if size is None or self.stopped:
            return
        self._begin(size, len(stash))
        if self.filled == self.size:
            self._complete()
        self.feed(memoryview(stash))

    def _begin(self, size: int, available: int) -> bytearray:
        self.size = self.base + size
        self.deciding = self.open_stream is not None and self.size >= self.STREAM_MIN
        first = self.DECIDE if self.deciding else max(self.upfront, self.base + available)
        frame = self.frame = bytearray(min(self.size, first))
        if self.base:
            frame[:4] = self.head
        self.head = bytearray()
        self.filled = self.base
        return frame

    def _complete(self) -> None:
        frame, self.frame = self.frame, None
        self.deliver(frame)  # type: ignore[arg-type]

    def feed(self, data: memoryview) -> None:
        """Takes bytes read (a view of a buffer read into again: whatever is kept is copied)."""
        nbytes = len(data)
        pos = 0
        start = -1  # where the frame being read began in this read (-1: in an earlier one)
        while pos < nbytes and not self.stopped:
            stream = self.stream
            if stream is not None:
                take = min(self.remaining, nbytes - pos)
                self.remaining -= take
                if self.remaining == 0:
                    self.stream = None
                stream.feed(data[pos:pos + take], self.remaining == 0)
                pos += take
                continue
            frame = self.frame
            if frame is None:
                start = pos if not self.head else -1
                need = 4 - len(self.head)
                self.head += data[pos:pos + need]
                pos += min(need, nbytes - pos)
                if len(self.head) < 4:
                    return
                (size,) = _SIZE.unpack(self.head)
                verdict = self.admit(size)
                if verdict:
                    if verdict == WAIT:
                        self.waiting = size
                        self._stash = bytes(data[pos:])
                    else:
                        self.stopped = True
                    return
                frame = self._begin(size, nbytes - pos)
            take = min(self.size - self.filled, nbytes - pos)
            if self.deciding:  # only the first bytes are copied to decide on: doubled while undecided
                if self.filled == len(frame):
                    frame.extend(bytes(len(frame)))
                take = min(take, len(frame) - self.filled)
            elif len(frame) < self.filled + take:
                _grow(frame, self.filled + take - len(frame))
            frame[self.filled:self.filled + take] = data[pos:pos + take]
            self.filled += take
            pos += take
            if self.deciding and self._decide(frame, start):
                if start >= 0:  # the stream takes the frame from its first byte, in one piece with the rest
                    pos = start
                continue
            if self.filled == self.size:
                self.frame = None
                self.deliver(frame)

    def _decide(self, frame: bytearray, start: int) -> bool:
        """Offers the frame read so far to `open_stream`; True when it became a stream. A frame that began
        in this read (`start` >= 0) is fed to its stream from the read's buffer, from its first byte; one
        begun earlier gets what was read of it first. (A first piece sent apart cost a client of one
        partition 40 ms stalls, TCP's delayed acknowledgement, on about every other Fetch.)"""
        verdict = self.open_stream(memoryview(frame)[:self.filled], self.size)  # type: ignore[misc]
        if verdict is None and self.filled < self.size:
            return False
        self.deciding = False
        if not verdict:
            return False
        self.frame = None
        if len(self.scratch) < self.STREAM_SCRATCH:  # a connection that streams reads in larger pieces
            shared = self.stream_scratch  # (the read's buffer stays alive in its views)
            if shared is None:
                shared = bytearray(self.STREAM_SCRATCH)
            elif not shared:
                shared.extend(bytes(self.STREAM_SCRATCH))
            self.scratch = shared
        if start >= 0:
            self.remaining = self.size
            self.stream = verdict
            return True
        self.remaining = self.size - self.filled
        self.stream = verdict if self.remaining else None
        verdict.feed(memoryview(frame)[:self.filled], self.remaining == 0)
        return True
