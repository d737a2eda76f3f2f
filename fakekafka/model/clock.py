"""Time for the model: every timestamp and timeout reads a `Clock`, never the wall clock directly.

Tests freeze a `ManualClock` and advance it; the server uses `SystemClock`.
"""

from __future__ import annotations

import time
from typing import Protocol

__all__ = ["Clock", "ManualClock", "SystemClock"]


class Clock(Protocol):
    def now_ms(self) -> int: ...


class SystemClock:
    def now_ms(self) -> int:
        return time.time_ns() // 1_000_000


class ManualClock:
    """A clock that moves only when told to.

    It starts at the wall-clock time of its creation unless given `start_ms`: real clients stamp records with
    today's time, so retention and timestamp checks on their records follow `advance` from the start.
    """

    def __init__(self, start_ms: int | None = None) -> None:
        if start_ms is not None and start_ms < 0:
            raise ValueError(f"start_ms must be 0 or more, not {start_ms}")
        self._now = time.time_ns() // 1_000_000 if start_ms is None else start_ms

    def now_ms(self) -> int:
        return self._now

    def advance(self, ms: int) -> int:
        if ms < 0:
            raise ValueError("a clock does not go backwards")
        self._now += ms
        return self._now
