"""Shrinking a failing schedule: delta debugging (Zeller's ddmin) over its steps, down to a schedule whose every
step is needed for the failure (1-minimal), within a budget of runs."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from fakekafka.chaos.schedule import Schedule, Step

__all__ = ["ShrinkResult", "shrink"]


@dataclass
class ShrinkResult:
    schedule: Schedule
    runs: int
    tried: list[int] = field(default_factory=list)
    """The size of each schedule tried, in order."""
    exhausted: bool = False
    """The budget ran out before the schedule was 1-minimal."""


def shrink(schedule: Schedule, fails: Callable[[Schedule], bool], *, max_runs: int = 64) -> ShrinkResult:
    """The smallest subset of `schedule` found for which `fails` still holds (`fails(schedule)` is assumed)."""
    steps: list[Step] = list(schedule.steps)
    runs = 0
    tried: list[int] = []
    cache: dict[tuple[Step, ...], bool] = {}

    def test(candidate: list[Step]) -> bool:
        nonlocal runs
        key = tuple(candidate)
        if key not in cache:
            runs += 1
            tried.append(len(candidate))
            cache[key] = fails(schedule.subset(candidate))
        return cache[key]

    n = 2
    while len(steps) >= 2:
        if runs >= max_runs:
            return ShrinkResult(schedule.subset(steps), runs, tried, exhausted=True)
        size = len(steps) // n
        chunks = [steps[i:i + size] for i in range(0, len(steps), size)] if size else [[s] for s in steps]
        reduced = False
        for chunk in chunks:  # a chunk alone fails
            if runs >= max_runs:
                break
            if len(chunk) < len(steps) and test(chunk):
                steps, n, reduced = chunk, 2, True
                break
        if not reduced:
            for chunk in chunks:  # the rest without a chunk fails
                if runs >= max_runs:
                    break
                rest = [s for s in steps if s not in chunk]
                if rest and test(rest):
                    steps, n, reduced = rest, max(n - 1, 2), True
                    break
        if not reduced:
            if n >= len(steps):
                break
            n = min(len(steps), 2 * n)
    if len(steps) == 1 and runs < max_runs and test([]):
        steps = []
    return ShrinkResult(schedule.subset(steps), runs, tried)
