"""The fake cluster's hook language on the proxy (fakekafka/model/hooks.py): a request crossing the proxy is shown
to the hooks (`Proxy.intercept`), the fault rules and chaos as an `Intercepted`, and the actions they return are
carried out where the proxy can carry them out:

- `Answer(body)`: answered by the proxy, nothing forwarded;
- `Fail(error)`: answered by the proxy with the error, nothing forwarded (the handlers' own error answers);
  `Fail(error, after=True)`: forwarded, and the upstream's answer replaced by the error (the upstream applied it);
- `Drop()`: the connection closed instead of forwarding; `Drop(after=True)`: forwarded, closed once the upstream
  answered (the upstream applied it, the client never hears);
- `Delay(ms)`: forwarded that much later (the connection's later requests wait too: Kafka answers in order);
- `Throttle(ms)`: the answer's throttle_time_ms set, the connection muted that long once it went out (with
  `Answer`, the proxy's own answer: chaos's throttled Fetch, empty, as Kafka answers one over its quota);
- `Edit(fn)`: the upstream's decoded answer through `fn`;
- `Hold(until)`: forwarded once `until()` holds (looked at every few milliseconds; the connection's later
  requests wait behind it), or once its `timeout_ms` passed.

The observers (`Hooks.observers`: chaos's ledger) are called with each request's decoded answer and whether the
upstream was sent it. The clock is the wall clock: the upstream's is.
"""

from __future__ import annotations

import contextlib
import io
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from fakekafka.model.faults import touched_partitions
from fakekafka.model.hooks import (
    Answer,
    Delay,
    Drop,
    Edit,
    Fail,
    Hold,
    Hooks,
    Intercepted,
    Throttle,
    actions_of,
    describe_actions,
)
from fakekafka.proxy.frames import RequestHead
from fakekafka.wire import DecodeError, ErrorCode
from fakekafka.wire.protocol import parse_body, request_struct

__all__ = ["HOLD_POLL_S", "Plan", "plan_request"]

HOLD_POLL_S = 0.005
"""How often a held request's condition is looked at (besides every request and answer crossing the proxy)."""


@dataclass(slots=True)
class Plan:
    """What the actions taken for one request make the proxy do with it."""

    request: Intercepted
    names: list[str] = field(default_factory=list)
    """Who decided each action (a fault rule, a hook, chaos), for the connection's log line."""
    drop_before: bool = False
    drop_after: bool = False
    answer: Any = None
    error: ErrorCode | None = None
    error_after: ErrorCode | None = None
    edits: list[Callable[[Any], Any]] = field(default_factory=list)
    latency_ms: int = 0
    throttle_ms: int = 0
    hold: Hold | None = None
    hold_deadline: float | None = None
    observed: bool = False
    """Observers want its answer (decoded)."""

    @property
    def acts(self) -> bool:
        """It does something to the request or its answer (else only observers look at it)."""
        return bool(self.names)

    @property
    def forwards(self) -> bool:
        return not (self.drop_before or self.answer is not None or self.error is not None)

    def add(self, actions: list[Any]) -> None:
        for a in actions:
            if isinstance(a, Hold):
                if self.hold is None:
                    self.hold = a
                    if a.timeout_ms is not None:
                        self.hold_deadline = time.monotonic() + a.timeout_ms / 1000
                    continue
                a = a.then
                if a is None:
                    continue
            if isinstance(a, Drop):
                if a.after:
                    self.drop_after = True
                else:
                    self.drop_before = True
            elif isinstance(a, Answer):
                self.answer = a.body if self.answer is None else self.answer
            elif isinstance(a, Fail):
                if a.after:
                    self.error_after = self.error_after or a.error
                else:
                    self.error = self.error or a.error
            elif isinstance(a, Edit):
                self.edits.append(a.fn)
            elif isinstance(a, Delay):
                self.latency_ms += a.ms
            elif isinstance(a, Throttle):
                self.throttle_ms = max(self.throttle_ms, a.ms)

    def release(self) -> bool:
        """Whether a held request may go on (its condition holds, or its hold timed out); then the hold's
        `then` joins the plan."""
        hold = self.hold
        if hold is None:
            return True
        if not hold.until() and (self.hold_deadline is None or time.monotonic() < self.hold_deadline):
            return False
        self.hold = None
        self.add(actions_of(hold.then))
        return True


def plan_request(hooks: Hooks, head: RequestHead, frame: memoryview, node_id: int,
                 topic_name: Callable[[Any], str | None],
                 event: Callable[..., None]) -> Plan | None:
    """The request shown to the hooks; None when nothing acts on it and nobody observes it."""
    body = None
    if head.body_offset is not None and head.known:
        stream = io.BytesIO(frame)
        stream.seek(head.body_offset)
        with contextlib.suppress(DecodeError, ValueError):
            body = parse_body(request_struct(head.api_key, head.api_version), stream, head.api_name)
    nth = hooks.point(head.api_key)
    seen = Intercepted(head.api_key, head.api_version, node_id, head.client_id, head.correlation_id, body,
                       touched_partitions(body, topic_name) if body is not None else set(),
                       int(time.time() * 1000), nth)
    taken = hooks.take(seen)
    if not taken and not hooks.observers:
        return None
    plan = Plan(seen, observed=bool(hooks.observers))
    for who, action in taken:
        kind = "fault" if who.startswith("fault: ") else "chaos" if who.startswith("chaos: ") else "hook"
        actions = actions_of(action)
        event(kind, **{kind: who.split(": ", 1)[-1] if kind != "hook" else who},
              action=describe_actions(actions), api=head.api_name, broker=node_id, client_id=head.client_id,
              correlation_id=head.correlation_id)
        plan.names.append(who)
        plan.add(actions)
    return plan
