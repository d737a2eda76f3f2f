"""One registry of handlers, keyed by API key, that ApiVersions reads.

A handler is registered with the versions it accepts; the versions it advertises default to the same
range (Produce advertises from 0 but accepts from 3, see produce.py). Registering a key twice or a
range Kafka does not define raises at import time, so the advertised versions cannot drift from the
implemented ones.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Generator
from dataclasses import dataclass, field
from typing import Any

from construct import Container

from fakekafka.handlers.connection import ConnectionState
from fakekafka.model.cluster import ClusterState
from fakekafka.model.config import BrokerConfig
from fakekafka.model.metadata import Broker
from fakekafka.model.releases import KafkaRelease
from fakekafka.wire import ApiKey, ErrorCode, Request
from fakekafka.wire.messages import API_MODULES
from fakekafka.wire.protocol import response_struct

__all__ = [
    "NO_RESPONSE", "ClusterFacts", "DropConnection", "ErrorContext", "Handler", "Park", "RequestContext",
    "TURN_WORK", "advertised_versions", "error_answer", "error_response", "handler_for", "handles", "in_turns",
]


@dataclass
class RequestContext:
    cluster: ClusterState
    broker: Broker
    request: Request
    client_host: str = ""
    connection: ConnectionState = field(default_factory=ConnectionState)
    """The connection's state across its requests: listener, SASL, principal, client software."""
    request_bytes: int = 0
    """The request's size on the wire, header included, size prefix not (Kafka's request.sizeInBytes)."""

    @property
    def listener(self) -> str | None:
        """The listener name the request came in on (None: the cluster's only, implicit listener)."""
        return self.connection.listener

    @property
    def version(self) -> int:
        return self.request.api_version


class _NoResponse:
    def __repr__(self) -> str:
        return "NO_RESPONSE"


NO_RESPONSE = _NoResponse()
"""Returned for requests Kafka does not answer (Produce with acks=0)."""


@dataclass
class Park:
    """A response that is not ready: the server calls `resume(timed_out)` when the model notifies a
    change of one of `keys` (a partition got data, a pending group response was resolved) or after
    `wait_ms` (never, if None), without blocking other connections."""

    wait_ms: int | None
    keys: list[Any]
    resume: Callable[[bool], Any]
    clock_deadline: int | None = None
    """A deadline on the cluster's clock (model time, e.g. a Produce's timeout_ms); with a frozen clock it
    passes only when the test advances the clock."""


class Again:
    """A Park's `resume` that builds the answer again until it is ready: `build(final)` gives the answer, or None
    to wait longer. (A handler's closure that named itself in its own Park made a reference cycle of every parked
    request, left for the garbage collector: a consumer's Fetch parks on most polls.)"""

    __slots__ = ("build", "wait_ms", "keys")

    def __init__(self, build: Callable[[bool], Any], wait_ms: int | None, keys: list[Any]) -> None:
        self.build, self.wait_ms, self.keys = build, wait_ms, keys

    def __call__(self, final: bool) -> Any:
        answer = self.build(final)
        return Park(self.wait_ms, self.keys, self) if answer is None else answer


TURN_WORK = 2048
"""Units of work (about 5-10 µs each: a topic looked up is one, a topic or partition made is more) a request does
in one turn of the event loop before it lets the other connections' requests run."""


def in_turns(steps: Generator[int, None, Any]) -> Any:
    """Runs a handler written as a generator that yields the units of work it has just done: past `TURN_WORK`
    units the answer is a Park of 0 ms, which the server resumes at the event loop's next turn, so a request that
    makes or lists 100,000 topics shares the loop with every other client and with the broker's stop. A request
    under `TURN_WORK` units is answered in one go."""
    done = 0
    try:
        while done < TURN_WORK:
            done += next(steps)
    except StopIteration as finished:
        return finished.value
    return Park(0, [], lambda _timed_out: in_turns(steps))


@dataclass
class DropConnection:
    """Close the connection instead of answering (a fault a test asked for, or Kafka's answer itself)."""

    applied: bool = False
    reason: str | None = None
    """Why, for the log, when it is Kafka's behaviour rather than an injected fault."""


@dataclass(frozen=True)
class ClusterFacts:
    """What an error answer may say of the cluster: Metadata's lists its live brokers, its id and controller (and
    every topic, when all were asked about); DescribeLogDirs v1-2's its log dirs. The proxy gives its own (the
    upstream as seen through it), with no model of the cluster behind it."""

    brokers: list[Broker]
    cluster_id: str | None
    controller_id: int
    topics: list[tuple[str, uuid.UUID]] = field(default_factory=list)
    log_dirs: list[str] = field(default_factory=list)

    @classmethod
    def of(cls, cluster: ClusterState) -> ClusterFacts:
        return cls(cluster.alive_brokers(), cluster.config.cluster_id, cluster.controller_id,
                   [(t.name, t.topic_id) for t in cluster.topics.values()], cluster.log_dirs())


@dataclass
class ErrorContext:
    """What an error answer is built from: the request, the listener it came in on, and the cluster's facts
    (looked up only by the answers that say something of the cluster)."""

    request: Request
    listener: str | None
    cluster: ClusterState | None = None
    given: ClusterFacts | None = None

    @property
    def version(self) -> int:
        return self.request.api_version

    @property
    def facts(self) -> ClusterFacts:
        if self.given is None:
            assert self.cluster is not None
            self.given = ClusterFacts.of(self.cluster)
        return self.given


Result = Container | dict[str, Any] | Park | _NoResponse | DropConnection
Handler = Callable[[RequestContext, Container], Result]
ErrorResponder = Callable[[ErrorContext, Container, ErrorCode], dict[str, Any]]


@dataclass(frozen=True)
class Registered:
    api_key: ApiKey
    min_version: int
    max_version: int
    advertised_min: int
    handler: Handler
    error_responder: ErrorResponder | None
    advertised_when: Callable[[BrokerConfig, int | None], bool] | None = None
    """Whether a broker (by node id; None: any) of a cluster of this config lists the API in ApiVersions (None:
    always). One it does not list is still answered, as Kafka 4.4 answers client telemetry requests it does not
    advertise."""


_REGISTRY: dict[ApiKey, Registered] = {}


def handles(api_key: ApiKey, min_version: int, max_version: int, *, advertise_from: int | None = None,
            errors: ErrorResponder | None = None,
            advertised_when: Callable[[BrokerConfig, int | None], bool] | None = None
            ) -> Callable[[Handler], Handler]:
    if not isinstance(api_key, ApiKey):  # a bare number says nothing to the reader: name the API
        raise TypeError(f"handles() takes an ApiKey (ApiKey.JOIN_GROUP, not 11), got {api_key!r}")
    spec = API_MODULES.get(api_key)
    if spec is None or not spec[2] <= min_version <= max_version <= spec[3]:
        raise ValueError(f"API {api_key} v{min_version}-{max_version} is not a range Kafka defines")
    if api_key in _REGISTRY:
        raise ValueError(f"API {spec[0]} registered twice")

    def register(fn: Handler) -> Handler:
        _REGISTRY[api_key] = Registered(api_key, min_version, max_version,
                                        min_version if advertise_from is None else advertise_from, fn, errors,
                                        advertised_when)
        return fn
    return register


def handler_for(api_key: int) -> Registered | None:
    return _REGISTRY.get(api_key)


def advertising(config: BrokerConfig | None, node_id: int | None = None) -> tuple[int, ...]:
    """What `advertised_versions` depends on besides the release: how many APIs are registered and which of those
    listed only when switched on this config switches on at broker `node_id` (a key for answers kept between
    requests)."""
    if config is None:
        return (len(_REGISTRY),)
    return (len(_REGISTRY), *(k for k, r in _conditional() if r.advertised_when(config, node_id)))


_conditional_seen: list[Any] = [-1, ()]


def _conditional() -> tuple[tuple[int, Registered], ...]:
    """The registered APIs listed only when switched on (few: looked at on every ApiVersions), kept until more
    APIs register."""
    if _conditional_seen[0] != len(_REGISTRY):
        _conditional_seen[:] = [len(_REGISTRY), tuple((k, r) for k, r in _REGISTRY.items()
                                                      if r.advertised_when is not None)]
    return _conditional_seen[1]


def advertised_versions(release: KafkaRelease | None = None, config: BrokerConfig | None = None,
                        node_id: int | None = None) -> dict[int, tuple[int, int]]:
    """Each served API's advertised range; with an older `release`, capped to its ranges (an API it lacks left
    out). An API served only when switched on (client telemetry) is listed when `config` switches it on at broker
    `node_id` (None: at any broker)."""
    out = {k: (r.advertised_min, r.max_version) for k, r in sorted(_REGISTRY.items())
           if r.advertised_when is None or (config is not None and r.advertised_when(config, node_id))}
    if release is None:
        return out
    return {k: capped for k, (lo, hi) in out.items() if (capped := release.caps(k, lo, hi)) is not None}


def error_response(ctx: RequestContext, body: Container, code: ErrorCode) -> dict[str, Any] | None:
    """A response that reports `code` for the whole request, or None if the API has no way to say it."""
    return error_answer(ErrorContext(ctx.request, ctx.listener, ctx.cluster), body, code)


def error_answer(ctx: ErrorContext, body: Container, code: ErrorCode) -> dict[str, Any] | None:
    """`error_response` without a cluster model: the facts the answer may need are `ctx`'s (the proxy's)."""
    reg = _REGISTRY.get(ctx.request.api_key)
    if reg is not None and reg.error_responder is not None:
        return reg.error_responder(ctx, body, code)
    names = response_struct(ctx.request.api_key, ctx.version).field_names()
    if "error_code" in names:
        return {"error_code": code}
    return None
