"""Hooks and chaos on an in-process cluster: `Cluster.intercept(...)`, `Cluster(chaos=...)`, and `explore` — run
an application under many seeds, check the invariants, shrink the first failure and replay it.

The pure parts (drawing, schedules, invariants, shrinking) are in fakekafka/chaos; here they meet a running
cluster: the server's loop (every read goes through `call`), broker kills on the network edge, real clients.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

from fakekafka.chaos import (
    Chaos,
    ChaosFailure,
    ChaosSource,
    Ledger,
    Schedule,
    Violation,
    chaos_of,
    check_invariants,
)
from fakekafka.chaos.timeline import Timeline
from fakekafka.model.cluster import ClusterState
from fakekafka.model.faults import hook_of
from fakekafka.model.hooks import Action, Hook, Intercepted
from fakekafka.net.operator import ServerOperator
from fakekafka.net.server import Server

if TYPE_CHECKING:
    pass

__all__ = ["ChaosFailure", "ChaosRun", "ChaosSteering", "attach_chaos"]

T = TypeVar("T")


class ChaosRun:
    """One cluster's chaos: the source drawing (or replaying) faults, the ledger of its answers, the checks."""

    def __init__(self, state: ClusterState, server: Server, chaos: Chaos) -> None:
        self.chaos = chaos
        self.state = state
        self.source = ChaosSource(state, chaos, ServerOperator(server))
        self.ledger = Ledger(state)
        self.timeline = Timeline(self.source.applied)
        state.hooks.sources.append(self.source)
        state.hooks.observers.append(self.ledger)
        state.hooks.observers.append(self.timeline)

    @property
    def seed(self) -> int | None:
        return self.chaos.seed

    def applied(self) -> Schedule:
        """A copy of the schedule applied so far (call on the cluster's loop)."""
        return self.source.applied.subset(self.source.applied.steps)

    def timeline_svg(self, title: str = "chaos run") -> str:
        """The run so far as an SVG picture: requests, faults, group generations (call on the cluster's loop)."""
        return self.timeline.svg(title)

    def violations(self) -> list[Violation]:
        """(call on the cluster's loop)"""
        return check_invariants(self.state, self.ledger, tuple(self.chaos.invariants),  # type: ignore[arg-type]
                                self.chaos.skip)


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
        hook = hook_of(api, fn, keep=keep, broker=broker, topic=topic, partition=partition, client_id=client_id)
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
