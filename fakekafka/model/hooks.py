"""Programmable hooks: a test (or the chaos generator) intercepts a request where the broker dispatches it and
decides what happens to it, as franz-go's kfake does with ControlKey / KeepControl / SleepControl.

A hook is a function of the request (`Intercepted`) that returns an `Action` or None:

- `Answer(body)`: answer it yourself, nothing applied;
- `Fail(error)`: answered with Kafka's error, nothing applied; `Fail(error, after=True)`: applied, then the error;
- `Drop()`: the connection closed before the request is applied; `Drop(after=True)`: applied, then closed;
- `Edit(fn)`: applied, and the answer passes through `fn` (which may change it in place or return a new one);
- `Delay(ms)`: answered `ms` later; `Throttle(ms)`: the answer carries throttle_time_ms and the connection is
  muted that long after it (no request of it read), as Kafka's quota managers do;
- `Hold(until)`: parked until `until()` holds (looked at on every request and every change of the model), so two
  requests can be ordered on purpose; then handled as `then` says (None: as usual);
- `Several(...)`: more than one of them for the same request.

Returning None lets the request through and keeps the hook; an action uses it up, unless the hook was added with
`keep=True` (kfake's KeepControl), which lasts until removed. The count-based faults of `faults.py` are hooks with a
fixed action, so hand-placed faults, programmable hooks and chaos go through the same dispatch. Pure: no sockets,
no asyncio; the dispatcher (fakekafka/handlers) turns actions into answers, parks and dropped connections.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any, Protocol

from fakekafka.wire import ErrorCode
from fakekafka.wire.messages import API_MODULES

__all__ = ["Action", "Answer", "Delay", "Drop", "Edit", "Fail", "Hold", "Hook", "Hooks", "Intercepted", "Several",
           "Throttle", "actions_of"]


@dataclass
class Intercepted:
    """A request as a hook sees it, before the broker applies it."""

    api_key: int
    version: int
    broker: int
    client_id: str | None
    correlation_id: int
    body: Any
    """The decoded request (Kafka's field names, snake_case: `body.acks`, `body.topic_data`)."""
    touched: set[tuple[str, int | None]]
    """(topic, partition or None) pairs the request names."""
    now_ms: int
    """The cluster's clock when the request arrived."""
    nth: int
    """How many requests of this API the cluster had dispatched before this one (0: the first): a point of the
    request sequence that does not depend on how other APIs' requests interleave."""

    @property
    def api(self) -> str:
        """Kafka's name of the API ("Produce")."""
        return API_MODULES[self.api_key][0]

    def topics(self) -> list[str]:
        return sorted({t for t, _ in self.touched})


class Action:
    """What a hook makes of a request (the subclasses below)."""


@dataclass(frozen=True)
class Answer(Action):
    body: Any
    """The answer the client gets, by the response's field names (a dict); the request is not applied."""


@dataclass(frozen=True)
class Fail(Action):
    error: ErrorCode
    """Kafka's error, by code or by name ("NOT_LEADER_OR_FOLLOWER")."""
    after: bool = False
    """Applied first (the client retries a request that took effect, as after a timed-out answer)."""

    def __post_init__(self) -> None:
        if not isinstance(self.error, ErrorCode):
            name = str(self.error).strip()
            try:
                code = ErrorCode(int(name)) if name.lstrip("-").isdigit() else ErrorCode[name.upper()]
            except (KeyError, ValueError):
                raise ValueError(f"unknown error {self.error!r}; names are Kafka's, e.g. NOT_LEADER_OR_FOLLOWER") \
                    from None
            object.__setattr__(self, "error", code)


@dataclass(frozen=True)
class Drop(Action):
    after: bool = False


@dataclass(frozen=True)
class Edit(Action):
    fn: Callable[[Any], Any]
    """Given the answer; returns the answer to send (None: the one given, changed in place)."""


@dataclass(frozen=True)
class Delay(Action):
    ms: int


@dataclass(frozen=True)
class Throttle(Action):
    ms: int


@dataclass(frozen=True)
class Hold(Action):
    until: Callable[[], bool]
    then: Action | None = None
    timeout_ms: int | None = None
    """Given up after this long (wall time), then handled as `then` says; None: held until `until()` holds."""


@dataclass(frozen=True)
class Several(Action):
    actions: tuple[Action, ...]

    def __init__(self, *actions: Action) -> None:
        object.__setattr__(self, "actions", tuple(actions))


def actions_of(action: Action | None) -> list[Action]:
    """An action with `Several` flattened."""
    if action is None:
        return []
    if isinstance(action, Several):
        return [a for inner in action.actions for a in actions_of(inner)]
    return [action]


class Matcher(Protocol):
    def matches(self, api_key: int, broker: int, client_id: str | None,
                touched: set[tuple[str, int | None]]) -> bool: ...


@dataclass(eq=False)
class Hook:
    """A hook added with `Hooks.add` (or `Cluster.intercept`); `remove()` takes it away."""

    decide: Callable[[Intercepted], Action | None]
    api_key: int | None = None
    broker: int | None = None
    client_id: str | None = None
    topic: str | None = None
    partition: int | None = None
    keep: bool = False
    fired: int = 0
    """Requests it took an action on."""
    seen: list[Intercepted] = field(default_factory=list, repr=False)
    """The requests it took an action on, oldest first."""
    owner: Hooks | None = field(default=None, repr=False)

    def matches(self, api_key: int, broker: int, client_id: str | None,
                touched: set[tuple[str, int | None]]) -> bool:
        if self.api_key is not None and self.api_key != api_key:
            return False
        if self.broker is not None and self.broker != broker:
            return False
        if self.client_id is not None and self.client_id != client_id:
            return False
        if self.topic is not None:
            return any(t == self.topic and (self.partition is None or p in (self.partition, None))
                       for t, p in touched)
        return True

    def remove(self) -> None:
        if self.owner is not None and self in self.owner.hooks:
            self.owner.hooks.remove(self)


class Source(Protocol):
    """A source of actions beyond the hooks a test added: the hand-placed faults, the chaos generator."""

    @property
    def armed(self) -> bool:
        """Whether it may act at all (the dispatcher skips the work of intercepting otherwise)."""
        ...

    def actions(self, request: Intercepted) -> list[tuple[str, Action]]: ...


Observer = Callable[[Intercepted, Any, bool], None]
"""Called with a request, its answer (None: none sent) and whether it was applied, once it is answered."""


class Hooks:
    """The hooks of one cluster, in the order added, after the sources (faults first, then chaos)."""

    def __init__(self) -> None:
        self.hooks: list[Hook] = []
        self.sources: list[Source] = []
        self.observers: list[Observer] = []
        self.counts: dict[int, int] = {}
        """Requests dispatched per API key (what `Intercepted.nth` counts)."""
        self.held = 0
        """Requests parked by a `Hold` now: the dispatcher wakes them on every request while there are some."""

    def add(self, hook: Hook) -> Hook:
        hook.owner = self
        self.hooks.append(hook)
        return hook

    def clear(self) -> None:
        self.hooks.clear()

    @property
    def active(self) -> bool:
        return bool(self.hooks or self.observers or self.held or any(s.armed for s in self.sources))

    def point(self, api_key: int) -> int:
        """The request's place among its API's requests, counted here (every request passes once)."""
        nth = self.counts.get(api_key, 0)
        self.counts[api_key] = nth + 1
        return nth

    def take(self, request: Intercepted) -> list[tuple[str, Action]]:
        """The actions this request gets, each with who decided it (for the event log)."""
        out: list[tuple[str, Action]] = []
        for source in self.sources:
            if source.armed:
                out.extend(source.actions(request))
        for hook in list(self.hooks):
            if not hook.matches(request.api_key, request.broker, request.client_id, request.touched):
                continue
            action = hook.decide(request)
            if action is None:
                continue
            hook.fired += 1
            hook.seen.append(request)
            if not hook.keep:
                hook.remove()
            out.append((f"hook {getattr(hook.decide, '__name__', 'hook')}", action))
        return out

    def answered(self, request: Intercepted, answer: Any, applied: bool) -> None:
        for fn in self.observers:
            fn(request, answer, applied)


def describe_actions(actions: Iterable[Action]) -> str:
    """An action list in words, for the event log."""
    words = []
    for a in actions:
        if isinstance(a, Fail):
            words.append(f"answered {a.error.name}" + (" after applying" if a.after else ""))
        elif isinstance(a, Drop):
            words.append("connection dropped " + ("after applying" if a.after else "before applying"))
        elif isinstance(a, Delay):
            words.append(f"delayed {a.ms} ms")
        elif isinstance(a, Throttle):
            words.append(f"throttled {a.ms} ms")
        elif isinstance(a, Hold):
            words.append("held until its condition holds")
        elif isinstance(a, Answer):
            words.append("answered by the hook")
        elif isinstance(a, Edit):
            words.append("answer edited")
    return ", ".join(words)
