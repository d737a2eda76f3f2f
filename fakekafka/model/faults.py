"""Faults a test asks for, like librdkafka's mock cluster and kfake's ControlKey: an error code for
the next N requests of an API, latency, a dropped connection before or after the request is applied,
throttling. Rules are matched in handler dispatch (never in the server) and every firing is recorded.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from enum import Enum
from typing import Any

from fakekafka.model.hooks import Action, Delay, Drop, Fail, Hook, Intercepted, Throttle
from fakekafka.wire import ErrorCode
from fakekafka.wire.messages import API_MODULES

__all__ = ["Fault", "FaultKind", "FaultSteering", "Faults", "api_key_of", "error_code_of", "hook_of",
           "touched_partitions"]

_NAMES = {name.lower(): key for key, (name, *_rest) in API_MODULES.items()}


def api_key_of(api: int | str | None) -> int | None:
    """An API given by key or by Kafka's name ("Produce", "fetch")."""
    if api is None or isinstance(api, int):
        return api
    key = _NAMES.get(api.replace("_", "").replace("-", "").lower())
    if key is None:
        raise ValueError(f"unknown API {api!r}; names are Kafka's, e.g. Produce, Fetch, JoinGroup")
    return key


def error_code_of(error: ErrorCode | int | str) -> ErrorCode:
    """An error given by Kafka's name ("NOT_LEADER_OR_FOLLOWER", any case) or by its code."""
    if isinstance(error, ErrorCode):
        return error
    name = str(error).strip()
    try:
        return ErrorCode(int(name)) if name.lstrip("-").isdigit() else ErrorCode[name.upper()]
    except (KeyError, ValueError):
        raise ValueError(f"unknown error {error!r}; names are Kafka's, e.g. NOT_LEADER_OR_FOLLOWER, "
                         f"REQUEST_TIMED_OUT, or a code number") from None


def hook_of(api: int | str | None, fn: Callable[[Intercepted], Action | None] | Action, *, keep: bool = False,
            broker: int | None = None, topic: str | None = None, partition: int | None = None,
            client_id: str | None = None) -> Hook:
    """What `intercept` adds (on the fake cluster and on the proxy): `fn` decides, or is the action itself."""
    if isinstance(fn, Action):
        def decide(_request: Intercepted, action: Action = fn) -> Action:
            return action
    elif callable(fn):
        decide = fn
    else:
        raise TypeError(f"intercept takes a function of the request or an action (fakekafka.Fail(...)), not {fn!r}")
    return Hook(decide, api_key_of(api), broker, client_id, topic, partition, keep)


class FaultKind(Enum):
    ERROR = "error"
    LATENCY = "latency"
    DROP_BEFORE = "drop_before"
    DROP_AFTER = "drop_after"
    THROTTLE = "throttle"


@dataclass
class Fault:
    kind: FaultKind
    api_key: int | None = None
    error: ErrorCode | None = None
    ms: int = 0
    count: int | None = 1
    """How many more requests it applies to; None: until cleared."""
    broker: int | None = None
    topic: str | None = None
    partition: int | None = None
    client_id: str | None = None
    after: bool = False
    """An ERROR fault answers with its error after the request is applied (forwarded, for the proxy): a
    client that retries then repeats a request that took effect, as a timed-out answer makes it do."""
    fired: int = 0

    def __post_init__(self) -> None:
        if self.count is not None and self.count < 0:  # 0: used up
            raise ValueError(f"count must be 1 or more, not {self.count}")
        if self.ms < 0:
            raise ValueError(f"ms must be 0 or more, not {self.ms}")
        if self.partition is not None and self.partition < 0:
            raise ValueError(f"partition must be 0 or more, not {self.partition}")

    def matches(self, api_key: int, broker: int, client_id: str | None,
                touched: set[tuple[str, int | None]]) -> bool:
        if self.count is not None and self.count <= 0:
            return False
        if self.api_key is not None and self.api_key != api_key:
            return False
        if self.broker is not None and self.broker != broker:
            return False
        if self.client_id is not None and self.client_id != client_id:
            return False
        if self.topic is not None:
            if not any(t == self.topic and (self.partition is None or p in (self.partition, None))
                       for t, p in touched):
                return False
        return True

    def action(self) -> Action:
        """The hook action this rule stands for (faults are hooks with a fixed action and a count)."""
        if self.kind == FaultKind.ERROR:
            assert self.error is not None
            return Fail(self.error, after=self.after)
        if self.kind in (FaultKind.DROP_BEFORE, FaultKind.DROP_AFTER):
            return Drop(after=self.kind == FaultKind.DROP_AFTER)
        return Delay(self.ms) if self.kind == FaultKind.LATENCY else Throttle(self.ms)

    def describe(self) -> str:
        api = API_MODULES[self.api_key][0] if self.api_key is not None else "any API"
        what = {FaultKind.ERROR: f"error {self.error.name if self.error else '?'}"
                                 + (" after the request is applied" if self.after else ""),
                FaultKind.LATENCY: f"{self.ms} ms latency", FaultKind.THROTTLE: f"{self.ms} ms throttle",
                FaultKind.DROP_BEFORE: "connection dropped before the request is applied",
                FaultKind.DROP_AFTER: "connection dropped after the request is applied"}[self.kind]
        scope = "".join(f" {k}={v}" for k, v in (("broker", self.broker), ("topic", self.topic),
                                                  ("partition", self.partition), ("client_id", self.client_id))
                        if v is not None)
        left = "until cleared" if self.count is None else f"{self.count} more"
        return f"{what} for {api}{scope} ({left})"


@dataclass
class Faults:
    rules: list[Fault] = field(default_factory=list)

    def add(self, fault: Fault) -> Fault:
        self.rules.append(fault)
        return fault

    def clear(self) -> None:
        self.rules.clear()

    def take(self, api_key: int, broker: int, client_id: str | None, body: Any,
             topic_name: Callable[[uuid.UUID], str | None] | None = None) -> list[Fault]:
        """The rules this request triggers, each counted down once. `topic_name` resolves the topic ids
        that requests name topics by (Fetch v13+), so a rule for a topic matches them too."""
        if not self.rules:
            return []
        touched = touched_partitions(body, topic_name)
        fired = []
        for rule in self.rules:
            if rule.matches(api_key, broker, client_id, touched):
                if rule.count is not None:
                    rule.count -= 1
                rule.fired += 1
                fired.append(rule)
        self.rules = [r for r in self.rules if r.count is None or r.count > 0]
        return fired

    # --- as a source of hook actions (model/hooks.py): how the fake cluster applies its fault rules ----------
    @property
    def armed(self) -> bool:
        return bool(self.rules)

    def actions(self, request: Intercepted) -> list[tuple[str, Action]]:
        fired = []
        for rule in self.rules:
            if rule.matches(request.api_key, request.broker, request.client_id, request.touched):
                if rule.count is not None:
                    rule.count -= 1
                rule.fired += 1
                fired.append((f"fault: {rule.describe()}", rule.action()))
        self.rules = [r for r in self.rules if r.count is None or r.count > 0]
        return fired


class FaultSteering:
    """The fault methods a test calls, the same on `fakekafka.Cluster` and `fakekafka.Proxy`: one fault
    language for the fake cluster and for the proxy in front of a real one. A class using it provides
    `_fault` (add a rule where requests are served) and `clear_faults`."""

    def _fault(self, fault: Fault) -> Fault:
        raise NotImplementedError

    def _new(self, fault: Fault) -> Fault:
        """`_fault` for a test's new fault: one that applies to no request is a mistake, not a no-op."""
        if fault.count == 0:
            raise ValueError("count must be 1 or more, not 0")
        return self._fault(fault)

    def clear_faults(self) -> None:
        raise NotImplementedError

    def inject_error(self, api: int | str, error: ErrorCode | int | str, count: int | None = 1, *,
                     broker: int | None = None, topic: str | None = None, partition: int | None = None,
                     client_id: str | None = None, after: bool = False) -> Fault:
        """The next `count` matching requests of `api` (None: all, until `clear_faults`) are answered with
        `error` instead of being applied, as librdkafka's mock cluster does; with `after=True` they are
        applied first (a proxy forwards them), and the answer is the error all the same."""
        return self._new(Fault(FaultKind.ERROR, api_key_of(api), error_code_of(error), count=count, broker=broker,
                                 topic=topic, partition=partition, client_id=client_id, after=after))

    def inject_latency(self, ms: int, api: int | str | None = None, count: int | None = None, *,
                       broker: int | None = None, client_id: str | None = None) -> Fault:
        """Matching requests are answered `ms` later (other connections are not held up)."""
        return self._new(Fault(FaultKind.LATENCY, api_key_of(api), ms=ms, count=count, broker=broker,
                                 client_id=client_id))

    def drop_connection(self, api: int | str | None = None, *, when: str = "before", count: int | None = 1,
                        broker: int | None = None, client_id: str | None = None) -> Fault:
        """Closes the connection instead of answering: `when="before"` the request is applied (the client
        retries a request that never happened) or `"after"` (it retries one that did: idempotence)."""
        kinds = {"before": FaultKind.DROP_BEFORE, "after": FaultKind.DROP_AFTER}
        if when not in kinds:
            raise ValueError("when is 'before' or 'after'")
        return self._new(Fault(kinds[when], api_key_of(api), count=count, broker=broker, client_id=client_id))

    def throttle(self, ms: int, api: int | str | None = None, count: int | None = None, *,
                 broker: int | None = None) -> Fault:
        """Matching responses carry throttle_time_ms = `ms` (clients back off)."""
        return self._new(Fault(FaultKind.THROTTLE, api_key_of(api), ms=ms, count=count, broker=broker))


_TOPIC_KEYS = ("name", "topic")
_PARTITION_LISTS = ("partition_data", "partitions", "partition_indexes")
_PARTITION_KEYS = ("index", "partition", "partition_index")
_TOPIC_RESOURCE = 2  # DescribeConfigs / AlterConfigs resource_type


def touched_partitions(body: Any, topic_name: Callable[[uuid.UUID], str | None] | None = None
                       ) -> set[tuple[str, int | None]]:
    """(topic, partition or None) pairs a request names, found by Kafka's field names: the entries of its
    topic lists (a field named like `topics`, `topic_data` or `topic_names`, at any depth) with the
    partitions they list, and topic resources of the config APIs. Other entries that carry a `name`
    (JoinGroup's protocols, a new topic's configs) are not topics. A topic given by id only (Fetch v13+)
    is named through `topic_name`, if given."""
    found: set[tuple[str, int | None]] = set()

    def topic_entry(entry: Any) -> None:
        if isinstance(entry, str):
            found.add((entry, None))
            return
        if not isinstance(entry, dict):
            return
        topic = next((entry[k] for k in _TOPIC_KEYS if isinstance(entry.get(k), str) and entry[k]), None)
        if topic is None and topic_name is not None and isinstance(entry.get("topic_id"), uuid.UUID):
            topic = topic_name(entry["topic_id"])
        if topic is None:
            return
        parts = next((entry[k] for k in _PARTITION_LISTS if isinstance(entry.get(k), list)), None)
        if not parts:
            found.add((topic, None))
            return
        for p in parts:
            index = p if isinstance(p, int) else next(
                (p[k] for k in _PARTITION_KEYS if isinstance(p, dict) and k in p), None)
            found.add((topic, index))

    def walk(obj: Any) -> None:
        if isinstance(obj, dict):
            if obj.get("resource_type") == _TOPIC_RESOURCE and isinstance(obj.get("resource_name"), str):
                found.add((obj["resource_name"], None))
            for key, value in obj.items():
                if isinstance(value, list) and "topic" in key:
                    for entry in value:
                        topic_entry(entry)
                elif isinstance(value, (dict, list)):
                    walk(value)
        elif isinstance(obj, list):
            for item in obj:
                walk(item)

    walk(body)
    return found
