"""The registry: every scenario, by name. Each drives one client against one broker and returns what the
client observed, as plain JSON-able data. Each is written once for every client (through
compat.clients.base.Client) and carries its expected outcome, written from Kafka's documented behaviour
(the source is named beside it). That expectation is the reference unless the run includes a real Kafka,
whose outcome then is."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from compat.clients.base import Client
from compat.env import Env

__all__ = ["SCENARIOS", "Outcome", "Scenario", "scenario"]

Outcome = dict[str, Any]


@dataclass(frozen=True)
class Scenario:
    name: str
    run: Callable[[Client, Env], Outcome]
    expected: Callable[[Client], Outcome]
    doc: str
    needs: frozenset[str] = field(default_factory=frozenset)  # target features: "auto_create_off"
    slow: bool = False  # group joins: `--quick` leaves it out on brokers with slow joins (tansu)
    uses: frozenset[str] = field(default_factory=frozenset)  # client abilities: "admin", "commit", "timestamps"


SCENARIOS: dict[str, Scenario] = {}


Run = Callable[[Client, Env], Outcome]


def scenario(name: str, expected: Outcome | Callable[[Client], Outcome], *, needs: tuple[str, ...] = (),
             slow: bool = False, uses: tuple[str, ...] = ()) -> Callable[[Run], Run]:
    """Registers a scenario; `expected` is the outcome Kafka documents (a dict, or one per client)."""
    def register(fn: Run) -> Run:
        if name in SCENARIOS:
            raise ValueError(f"scenario {name} registered twice")
        exp = expected if callable(expected) else (lambda _client, e=expected: e)
        SCENARIOS[name] = Scenario(name, fn, exp, (fn.__doc__ or "").strip().split("\n")[0], frozenset(needs),
                                   slow, frozenset(uses))
        return fn
    return register
