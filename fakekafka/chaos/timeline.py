"""A chaos run's timeline, drawn as an SVG picture for the failure report: the requests the cluster answered (one
lane per API, in the order answered), the faults applied (at the request they fell on, named by kind and point) and
the groups' generations (a classic group's from its JoinGroup answers, a KIP-848 member's epoch from its
ConsumerGroupHeartbeat answers). Pure: an observer of the cluster's answers (`Hooks.observers`); the picture is text.

The x axis is the answered requests' order, not time: under a frozen clock every step has the same time, and the
order is what a replay repeats. A clock lane under it reads the cluster's clock at evenly spaced requests (seconds
since the first), so time is there to read where it passed."""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field
from typing import Any
from xml.sax.saxutils import escape, quoteattr

from fakekafka.chaos.schedule import Schedule, Step
from fakekafka.model.hooks import Intercepted

__all__ = ["Timeline"]

MAX_REQUESTS = 20_000
"""Requests kept (the latest): a long run's picture stays bounded."""

_LANE = 18
_LEFT = 170
_WIDTH = 1200
_CLOCK_TICKS = 8


def _field(obj: Any, name: str) -> Any:
    return obj.get(name) if hasattr(obj, "get") else getattr(obj, name, None)


@dataclass
class Timeline:
    """Records the run as the cluster answers it; `svg()` draws it."""

    schedule: Schedule
    """The chaos source's applied schedule, growing as the run goes (steps are placed when they appear)."""
    requests: deque[tuple[int, str, bool]] = field(default_factory=lambda: deque(maxlen=MAX_REQUESTS))
    """(index, API, answered: False for a connection dropped instead of an answer)."""
    faults: list[tuple[int, Step]] = field(default_factory=list)
    generations: list[tuple[int, str, str]] = field(default_factory=list)
    """(index, group, "generation 3" or "member m epoch 4")."""
    answered: int = 0
    clock: deque[tuple[int, int]] = field(default_factory=lambda: deque(maxlen=MAX_REQUESTS))
    """(index, the cluster's clock in ms when that request arrived)."""
    started_ms: int | None = None
    _placed: int = 0
    _seen: dict[str, Any] = field(default_factory=dict)

    def __call__(self, request: Intercepted, answer: Any, applied: bool) -> None:
        i = self.answered
        self.answered += 1
        for step in self.schedule.steps[self._placed :]:  # drawn while this request was dispatched
            self.faults.append((i, step))
        self._placed = len(self.schedule.steps)
        self.requests.append((i, request.api, answer is not None))
        self.clock.append((i, request.now_ms))
        if self.started_ms is None:
            self.started_ms = request.now_ms
        if answer is None or _field(answer, "error_code") not in (0, None):
            return
        group = _field(request.body, "group_id")
        if request.api == "JoinGroup" and group:
            generation = _field(answer, "generation_id")
            if generation is not None and self._seen.get(group) != generation:
                self._seen[group] = generation
                self.generations.append((i, group, f"generation {generation}"))
        elif request.api == "ConsumerGroupHeartbeat" and group:
            member, epoch = _field(answer, "member_id"), _field(answer, "member_epoch")
            key = f"{group}/{member}"
            if member and epoch is not None and epoch >= 0 and self._seen.get(key) != epoch:
                self._seen[key] = epoch
                self.generations.append((i, group, f"member {member[:8]} epoch {epoch}"))

    def svg(self, title: str = "chaos run") -> str:
        """The picture: a lane per API (a tick per request, a cross where the connection was dropped), the faults'
        lane (a red mark and its words per fault), the groups' lane (a blue mark per new generation or epoch)."""
        apis = sorted({api for _, api, _ in self.requests})
        end = max(self.answered, 1)
        lanes = ["faults", "groups", *apis, "clock (s)"]
        height = 40 + _LANE * (len(lanes) + 1) + 14 * len(self.faults)

        def x(i: int) -> float:
            return _LEFT + (_WIDTH - _LEFT - 20) * i / end

        out = [
            f'<svg xmlns="http://www.w3.org/2000/svg" width="{_WIDTH}" height="{height}" '
            f'font-family="monospace" font-size="11">',
            f"<title>{escape(title)}</title>",
            f'<text x="8" y="16" font-size="13">{escape(title)}: {self.answered} requests answered, '
            f"{len(self.faults)} fault(s); x: requests in the order answered, with the cluster's clock below</text>",
        ]
        y_of = {lane: 36 + _LANE * n for n, lane in enumerate(lanes)}
        for lane, y in y_of.items():
            out.append(f'<text x="8" y="{y + 4}">{escape(lane)}</text>')
            out.append(f'<line x1="{_LEFT}" y1="{y}" x2="{_WIDTH - 20}" y2="{y}" stroke="#ddd"/>')
        for i, api, answered in self.requests:
            y = y_of[api]
            if answered:
                out.append(f'<line x1="{x(i):.1f}" y1="{y - 5}" x2="{x(i):.1f}" y2="{y + 5}" stroke="#555"/>')
            else:
                out.append(f'<text x="{x(i) - 3:.1f}" y="{y + 4}" fill="#c00">x</text>')
        if self.clock:
            y = y_of["clock (s)"]
            kept = list(self.clock)
            for n in range(_CLOCK_TICKS + 1):
                i, now = kept[min(len(kept) - 1, n * (len(kept) - 1) // _CLOCK_TICKS)]
                seconds = (now - (self.started_ms or 0)) / 1000
                out.append(f'<line x1="{x(i):.1f}" y1="{y - 8}" x2="{x(i):.1f}" y2="{y - 2}" stroke="#999"/>')
                out.append(f'<text x="{x(i):.1f}" y="{y + 8}" text-anchor="middle" fill="#666">{seconds:.1f}</text>')
        for i, group, what in self.generations:
            y = y_of["groups"]
            out.append(
                f'<circle cx="{x(i):.1f}" cy="{y}" r="4" fill="#06c">'
                f"<title>{escape(group)}: {escape(what)}</title></circle>"
            )
        words_y = 36 + _LANE * len(lanes) + 4
        for n, (i, step) in enumerate(self.faults):
            y = y_of["faults"]
            words = f"{step.kind} at {step.api} request {step.nth}: {step.describe()}"
            out.append(
                f'<rect x="{x(i) - 3:.1f}" y="{y - 6}" width="6" height="12" fill="#c00" '
                f"data-kind={quoteattr(step.kind)}><title>{escape(words)}</title></rect>"
            )
            out.append(f'<text x="8" y="{words_y + 14 * n}" fill="#c00">{n + 1}. {escape(words)}</text>')
        out.append("</svg>")
        return "\n".join(out) + "\n"
