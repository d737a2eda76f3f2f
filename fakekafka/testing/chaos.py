"""Hooks and chaos on an in-process cluster: `Cluster.intercept(...)`, `Cluster(chaos=...)`, and `explore` — run
an application under many seeds, check the invariants, shrink the first failure and replay it.

The pure parts (drawing, schedules, invariants, shrinking) are in fakekafka/chaos; here they meet a running
cluster: the server's loop (every read goes through `call`), broker kills on the network edge, real clients.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeVar

from fakekafka.chaos import (
    Chaos,
    ChaosSource,
    Ledger,
    Schedule,
    ShrinkResult,
    Violation,
    chaos_of,
    check_invariants,
    shrink,
)
from fakekafka.model.cluster import ClusterState
from fakekafka.model.faults import api_key_of
from fakekafka.model.hooks import Action, Hook, Intercepted
from fakekafka.net.operator import ServerOperator
from fakekafka.net.server import Server

if TYPE_CHECKING:
    from fakekafka.testing.embedded import Cluster

__all__ = ["ChaosFailure", "ChaosRun", "ChaosSteering", "Exploration", "Outcome", "explore", "run_once"]

T = TypeVar("T")


class ChaosRun:
    """One cluster's chaos: the source drawing (or replaying) faults, the ledger of its answers, the checks."""

    def __init__(self, state: ClusterState, server: Server, chaos: Chaos) -> None:
        self.chaos = chaos
        self.state = state
        self.source = ChaosSource(state, chaos, ServerOperator(server))
        self.ledger = Ledger(state)
        state.hooks.sources.append(self.source)
        state.hooks.observers.append(self.ledger)

    @property
    def seed(self) -> int | None:
        return self.chaos.seed

    def applied(self) -> Schedule:
        """A copy of the schedule applied so far (call on the cluster's loop)."""
        return self.source.applied.subset(self.source.applied.steps)

    def violations(self) -> list[Violation]:
        """(call on the cluster's loop)"""
        return check_invariants(self.state, self.ledger, tuple(self.chaos.invariants))  # type: ignore[arg-type]


class ChaosFailure(AssertionError):
    """An invariant did not hold under chaos: the violations with their evidence, and the schedule applied."""

    def __init__(self, violations: list[Violation], schedule: Schedule) -> None:
        self.violations = violations
        self.schedule = schedule
        lines = [line for v in violations for line in v.lines()]
        seed = f" (seed {schedule.seed})" if schedule.seed is not None else ""
        super().__init__("\n".join([f"chaos{seed}: {len(violations)} invariant(s) violated", *lines,
                                    "schedule applied:", *(f"  {s}" for s in schedule.lines())]))


class ChaosSteering:
    """`Cluster`'s hook and chaos methods (it provides `call`, `state` and `chaos`)."""

    state: ClusterState
    chaos: ChaosRun | None

    def call(self, fn: Callable[[], T]) -> T:
        raise NotImplementedError

    def intercept(self, api: int | str | None, fn: Callable[[Intercepted], Action | None] | Action, *,
                  keep: bool = False, broker: int | None = None, topic: str | None = None,
                  partition: int | None = None, client_id: str | None = None) -> Hook:
        """Hands the next matching request of `api` (None: any API) to `fn`, which returns what happens to it
        (`fakekafka.Fail(...)`, `Drop(after=True)`, `Answer({...})`, `Edit(fn)`, `Delay(ms)`, `Hold(until)`) or
        None to let it through and wait for the next. An action uses the hook up unless `keep=True` (until
        `hook.remove()`). `fn` may be an action itself, for every matching request alike. Returns the hook: its
        `fired` and `seen` say what it caught."""
        decide = fn if callable(fn) and not isinstance(fn, Action) else (lambda _r, action=fn: action)
        if not isinstance(fn, Action) and not callable(fn):
            raise TypeError(f"intercept takes a function of the request or an action (fakekafka.Fail(...)), "
                            f"not {fn!r}")
        hook = Hook(decide, api_key_of(api), broker, client_id, topic, partition, keep)  # type: ignore[arg-type]
        return self.call(lambda: self.state.hooks.add(hook))

    def remove_hooks(self) -> None:
        """Removes every hook added with `intercept`."""
        self.call(self.state.hooks.clear)

    def chaos_schedule(self) -> Schedule:
        """The chaos schedule applied so far (its steps, in order, as `Schedule.save` writes them)."""
        run = self._chaos_run()
        return self.call(run.applied)

    def check_invariants(self) -> list[Violation]:
        """The built-in invariants and the chaos run's app-level ones, checked now; each violation with its
        evidence (empty: all hold). Needs a cluster with chaos (its ledger of acknowledged batches)."""
        run = self._chaos_run()
        return self.call(run.violations)

    def assert_invariants(self) -> None:
        """Raises `ChaosFailure` (an AssertionError) naming every violation and the schedule applied."""
        run = self._chaos_run()
        violations, schedule = self.call(lambda: (run.violations(), run.applied()))
        if violations:
            raise ChaosFailure(violations, schedule)

    def _chaos_run(self) -> ChaosRun:
        if self.chaos is None:
            raise RuntimeError("this cluster runs without chaos: Cluster(chaos=fakekafka.Chaos(seed=N))")
        return self.chaos


def attach_chaos(state: ClusterState, server: Server, given: Any) -> ChaosRun | None:
    chaos = chaos_of(given)
    return None if chaos is None else ChaosRun(state, server, chaos)


# --- exploring an application under many seeds -------------------------------------------------------------------
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
    from fakekafka.testing.embedded import Cluster
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
