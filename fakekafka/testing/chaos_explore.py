"""Exploring an application under many chaos seeds: each run on a fresh `Cluster`, the first failure shrunk
(delta debugging) and replayed. Apart from testing/chaos.py, which the Cluster itself uses, so the arrows run one
way."""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from fakekafka.chaos import Chaos, Schedule, ShrinkResult, Violation, shrink
from fakekafka.testing.embedded import Cluster

__all__ = ["Exploration", "Outcome", "explore", "run_once"]


@dataclass
class Outcome:
    """One run: what the application raised (None: returned), the violations, the schedule applied."""

    chaos: Chaos
    schedule: Schedule
    violations: list[Violation]
    error: str | None
    seconds: float

    @property
    def failed(self) -> bool:
        return bool(self.violations) or self.error is not None

    def signature(self) -> tuple[str, ...]:
        """How it failed, to tell "fails the same way" when shrinking and replaying."""
        if self.error is not None:
            return ("error", self.error.split(":", 1)[0])
        return tuple(sorted(v.invariant for v in self.violations))

    def report(self) -> str:
        lines = [f"seed {self.chaos.seed}: " + ("fails" if self.failed else "passes")]
        if self.error is not None:
            lines.append(f"  the application raised {self.error}")
        lines.extend(f"  {line}" for v in self.violations for line in v.lines())
        return "\n".join(lines)


@dataclass
class Exploration:
    """What `explore` found: every seed's outcome, and for the first failure its shrunk schedule."""

    outcomes: list[Outcome] = field(default_factory=list)
    failure: Outcome | None = None
    shrunk: ShrinkResult | None = None
    replay: Outcome | None = None
    """The shrunk schedule replayed once more: it fails the same way."""

    def report(self) -> str:
        if self.failure is None:
            return f"{len(self.outcomes)} seeds, no failure"
        lines = [f"seed {self.failure.chaos.seed} fails (after {len(self.outcomes)} seeds):",
                 self.failure.report()]
        if self.shrunk is not None:
            lines.append(f"shrunk in {self.shrunk.runs} runs from {len(self.failure.schedule)} to "
                         f"{len(self.shrunk.schedule)} step(s):")
            lines.extend(f"  {line}" for line in self.shrunk.schedule.lines())
        return "\n".join(lines)


def run_once(app: Callable[[Cluster], Any], chaos: Chaos, **cluster: Any) -> Outcome:
    """Runs `app(cluster)` on a fresh cluster under `chaos`, then checks the invariants."""
    started = time.perf_counter()
    error = None
    with Cluster(chaos=chaos, **cluster) as c:
        try:
            app(c)
        except Exception as e:  # noqa: BLE001 - the application's failure is the outcome
            error = f"{type(e).__name__}: {e}"
        violations = c.check_invariants()
        schedule = c.chaos_schedule()
    return Outcome(chaos, schedule, violations, error, time.perf_counter() - started)


def explore(app: Callable[[Cluster], Any], seeds: Iterable[int], *, profile: Any = None,
            invariants: Iterable[Callable[..., Any]] = (), shrink_runs: int = 64,
            save_dir: str | os.PathLike[str] | None = None, **cluster: Any) -> Exploration:
    """Runs `app` under each seed until one fails; that one's schedule is shrunk (delta debugging: rerun with
    subsets while it fails the same way) and the result replayed. `save_dir` keeps the failing and the shrunk
    schedules as JSON. `cluster` are `Cluster`'s settings for every run."""
    found = Exploration()
    checks = tuple(invariants)
    for seed in seeds:
        outcome = run_once(app, Chaos(seed=seed, profile=profile, invariants=checks), **cluster)
        found.outcomes.append(outcome)
        if outcome.failed:
            found.failure = outcome
            break
    if found.failure is None:
        return found
    failure = found.failure
    wanted = failure.signature()

    def fails(candidate: Schedule) -> bool:
        again = run_once(app, Chaos(schedule=candidate, profile=profile, invariants=checks), **cluster)
        return again.failed and again.signature() == wanted

    found.shrunk = shrink(failure.schedule, fails, max_runs=shrink_runs)
    found.replay = run_once(app, Chaos(schedule=found.shrunk.schedule, profile=profile, invariants=checks),
                            **cluster)
    if save_dir is not None:
        failure.schedule.save(os.path.join(save_dir, f"seed-{failure.chaos.seed}.json"))
        found.shrunk.schedule.save(os.path.join(save_dir, f"seed-{failure.chaos.seed}-shrunk.json"))
    return found
