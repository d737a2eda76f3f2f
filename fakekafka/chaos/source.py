"""Chaos as a source of hook actions (fakekafka/model/hooks.py): at each request point a seeded generator draws a
Kafka-legal fault, or a schedule replays one; every fault applied is kept as a step of the applied schedule.

The draw for a request depends only on the seed, the API and the request's place among that API's requests
(`Intercepted.nth`), so the same client behaviour meets the same faults whatever other APIs' requests interleave.
Broker kills need the network edge (closing the broker's connections, listening again later): the owner of the
cluster gives a `BrokerOperator`; without one, chaos draws no kills.
"""

from __future__ import annotations

import dataclasses
import os
import random
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Protocol

from fakekafka.chaos.byzantine import BYZANTINE_EDITS, BYZANTINE_KINDS
from fakekafka.chaos.cluster_events import apply_event, draw_event, event_applicable
from fakekafka.chaos.invariants import BUILT_IN
from fakekafka.chaos.kinds import CLUSTER_KINDS, KINDS, legal_errors
from fakekafka.chaos.profile import Profile, profile_of
from fakekafka.chaos.registry import (
    REGISTRY_KINDS,
    RegistryAction,
    legal_registry_errors,
    registry_point,
    registry_status,
    route_of_point,
    unknown_id_legal,
)
from fakekafka.chaos.schedule import Schedule, Step
from fakekafka.model.cluster import ClusterState
from fakekafka.model.hooks import Action, Answer, Delay, Drop, Edit, Fail, Intercepted, Several, Throttle
from fakekafka.model.metadata import Partition
from fakekafka.wire import ErrorCode

__all__ = ["BrokerOperator", "Chaos", "ChaosSource", "chaos_of"]

_SCOPE = ("Produce", "Fetch", "ListOffsets", "FindCoordinator", "JoinGroup", "SyncGroup", "Heartbeat",
          "OffsetCommit", "OffsetFetch", "ConsumerGroupHeartbeat", "InitProducerId", "AddPartitionsToTxn",
          "AddOffsetsToTxn", "TxnOffsetCommit", "EndTxn")
"""The APIs chaos touches by default: the ones applications' correctness rests on. Metadata and ApiVersions are
left alone (their number depends on timers, which would make the request points of a run drift)."""


class BrokerOperator(Protocol):
    def kill_broker(self, node_id: int, down_ms: int) -> None:
        """Kills the broker now (its connections dropped) and restarts it `down_ms` later."""
        ...


@dataclass
class Chaos:
    """What a chaos run is: a seed and a profile (`Chaos(seed=7, profile="busy")`), or a schedule to replay
    (`Chaos(schedule=Schedule.load(path))`). Given to `Cluster(chaos=...)`, the pytest marker's `chaos=`, or
    `fakekafka serve --chaos-seed`. `invariants` are app-level checks (callables over a `ChaosView`) run with the
    built-in ones. A seed of None takes one from the command line (`pytest --chaos-seeds`)."""

    seed: int | None = None
    profile: str | os.PathLike[str] | Profile | None = None
    schedule: Schedule | None = None
    invariants: tuple[object, ...] = ()
    skip: tuple[str, ...] = ()
    """Built-in invariants not to check, by name (`fakekafka.chaos.invariants.BUILT_IN`): an app that seeks back
    and commits on purpose skips "committed offsets never go back"."""

    def __post_init__(self) -> None:
        if self.seed is not None and (not isinstance(self.seed, int) or isinstance(self.seed, bool)):
            raise ValueError(f"a chaos seed is an integer, not {self.seed!r}")
        if self.schedule is not None and not isinstance(self.schedule, Schedule):
            raise ValueError("chaos schedule= takes a fakekafka.Schedule (Schedule.load(path))")
        self.profile = profile_of(self.profile)
        unknown = [n for n in self.skip if n not in BUILT_IN]
        if unknown:
            raise ValueError(f"chaos skip= names built-in invariants; {', '.join(map(repr, unknown))} is not one of "
                             f"{', '.join(map(repr, BUILT_IN))}")
        for check in self.invariants:
            if not callable(check):
                raise ValueError(f"a chaos invariant is a callable over the cluster's records, not {check!r}")


def chaos_of(given: Chaos | Schedule | int | bool | None) -> Chaos | None:
    """What `Cluster(chaos=...)` takes: a Chaos, a Schedule to replay, or a seed."""
    if given is None or given is False:
        return None
    if isinstance(given, Chaos):
        return given
    if isinstance(given, Schedule):
        return Chaos(schedule=given, profile=given.profile if given.profile in (None, *_profile_names()) else None)
    if given is True:
        raise ValueError("chaos=True takes its seeds from the command line (pytest --chaos-seeds N); a cluster "
                         "made by hand needs chaos=fakekafka.Chaos(seed=N)")
    if isinstance(given, int):
        return Chaos(seed=given)
    raise ValueError(f"chaos= takes fakekafka.Chaos(seed=..., profile=...), a fakekafka.Schedule or a seed, "
                     f"not {given!r}")


def _profile_names() -> tuple[str, ...]:
    from fakekafka.chaos.profile import PROFILES
    return tuple(PROFILES)


@dataclass
class ChaosSource:
    """Draws (or replays) faults for one cluster and keeps the schedule it applied. Without a cluster (the proxy
    in front of a real one) it draws only what a proxy can do: errors, latency, dropped connections and throttled
    fetches, on `now_ms`'s clock."""

    cluster: ClusterState | None
    chaos: Chaos
    operator: BrokerOperator | None = None
    applied: Schedule = field(default_factory=Schedule)
    started_ms: int = 0
    now_ms: Callable[[], int] | None = None

    def __post_init__(self) -> None:
        profile = self.chaos.profile
        assert isinstance(profile, Profile)
        self.profile = profile
        self.applied = Schedule([], self.chaos.seed, profile.name if self.chaos.schedule is None
                                else self.chaos.schedule.profile)
        if self.now_ms is None:
            if self.cluster is None:
                raise ValueError("chaos without a cluster needs a clock (now_ms)")
            self.now_ms = self.cluster.clock.now_ms
        self.started_ms = self.now_ms()
        self.replay = None if self.chaos.schedule is None else {s.point: s for s in self.chaos.schedule}
        self.scope = set(profile.apis or _SCOPE)
        self.shrunk: set[tuple[str, int, int]] = set()
        """Followers chaos took out of an ISR (an isr_expand lets one fetch again)."""
        if self.replay is None and self.chaos.seed is None:
            raise ValueError("a chaos run needs a seed or a schedule (fakekafka.Chaos(seed=N))")
        self._registry_seen: dict[str, int] = {}
        self._registry_lock = threading.Lock()
        """The registry's HTTP threads draw here; a proxy's forwarded registry does so beside the proxy's loop."""

    @property
    def armed(self) -> bool:
        return True

    def actions(self, request: Intercepted) -> list[tuple[str, Action]]:
        if request.touched and all(t.startswith("__") for t, _ in request.touched):
            return []  # the brokers' own traffic on internal topics is not the application's
        if self.replay is not None:
            step = self.replay.get((request.api, request.nth))
            step = step if step is not None and self._applicable(step, request) else None
        else:
            step = self._draw(request)
        if step is None:
            return []
        action = self._apply(step, request)
        step = dataclasses.replace(step, t_ms=self.now_ms() - self.started_ms,  # type: ignore[misc]
                                   mechanism=step.mechanism or self._mechanism(step))
        self.applied.steps.append(step)
        return [(f"chaos: {step.describe()}", action)] if action is not None else []

    def registry_action(self, route: str) -> RegistryAction | None:
        """The fault (None: none) for the next Schema Registry request of `route` ("GET /schemas/ids/{id}"), drawn
        from the seed by the route and its place among that route's requests, or replayed; kept in the schedule."""
        api = registry_point(route)
        with self._registry_lock:
            nth = self._registry_seen.get(api, 0)
            self._registry_seen[api] = nth + 1
            if self.replay is not None:
                step = self.replay.get((api, nth))
                step = step if step is not None and step.kind in REGISTRY_KINDS else None
            else:
                step = self._draw_registry(api, route, nth)
            if step is None:
                return None
            step = dataclasses.replace(step, t_ms=self.now_ms() - self.started_ms,  # type: ignore[misc]
                                       mechanism=step.mechanism or self._mechanism(step))
            self.applied.steps.append(step)
        if step.kind == "registry_latency":
            return RegistryAction(latency_ms=step.ms)
        if step.kind == "unknown_schema_id":
            return RegistryAction(status=404, error_code=40403, message="Schema not found")
        code = int(step.error or 0)
        return RegistryAction(status=registry_status(code), error_code=code, message=_REGISTRY_MESSAGES.get(
            code, f"{step.error} (chaos: {step.mechanism})"), after=step.after)

    def _draw_registry(self, api: str, route: str, nth: int) -> Step | None:
        p = self.profile
        if nth < p.skip_first or (p.max_faults is not None and len(self.applied) >= p.max_faults):
            return None
        rng = random.Random(f"{self.chaos.seed}:{api}:{nth}")
        u = rng.random()
        errors = legal_registry_errors(route)
        for kind, rate in (("registry_error", p.registry_error_rate if errors else 0),
                           ("registry_latency", p.registry_latency_rate),
                           ("unknown_schema_id", p.unknown_schema_id_rate if unknown_id_legal(route) else 0)):
            if u >= rate:
                u -= rate
                continue
            if kind == "registry_error":
                e = errors[rng.randrange(len(errors))]
                return Step(api, nth, kind, error=str(e.error_code), after=e.after, mechanism=e.mechanism)
            if kind == "registry_latency":
                return Step(api, nth, kind, ms=rng.randint(*p.latency_ms))
            return Step(api, nth, kind)
        return None

    # --- drawing --------------------------------------------------------------------------------------------
    def _draw(self, request: Intercepted) -> Step | None:
        p = self.profile
        if request.api not in self.scope or request.nth < p.skip_first:
            return None
        if p.max_faults is not None and len(self.applied) >= p.max_faults:
            return None
        rng = random.Random(f"{self.chaos.seed}:{request.api}:{request.nth}")
        u = rng.random()
        where = _first_partition(request)
        topic, partition = where if where else (None, None)
        base = {"api": request.api, "nth": request.nth, "topic": topic, "partition": partition}
        errors = legal_errors(request.api, non_retriable=p.non_retriable, transactional=not _idempotent_init(request))
        for kind, rate in (("error", p.error_rate if errors else 0), ("latency", p.latency_rate),
                           ("drop", p.drop_rate), ("kill", p.kill_rate if self.operator and self.cluster else 0),
                           ("move_leader", p.move_leader_rate),
                           *((k, r if self.cluster is not None or k == "throttle" else 0) for k, r in (
                               ("rebalance", p.rebalance_rate), ("session_expiry", p.session_expiry_rate),
                               ("move_coordinator", p.coordinator_move_rate), ("isr", p.isr_rate),
                               ("throttle", p.throttle_rate if request.api == "Fetch" else 0),  # a proxy too
                               ("retention", p.retention_rate), ("compaction", p.compaction_rate),
                               ("unclean_election", p.unclean_rate if self.operator else 0))),
                           ("byzantine", p.byzantine_rate if request.api == "Fetch" else 0)):
            if u >= rate:
                u -= rate
                continue
            if kind == "error":
                e = errors[rng.randrange(len(errors))]
                return Step(**base, kind="error", error=e.error, after=e.after, broker=request.broker,
                            mechanism=e.mechanism)
            if kind == "latency":
                return Step(**base, kind="latency", ms=rng.randint(*p.latency_ms), broker=request.broker)
            if kind == "drop":
                return Step(**base, kind="drop_after" if rng.random() < 0.5 else "drop_before",
                            broker=request.broker)
            if kind == "byzantine":
                byzantine = sorted(BYZANTINE_KINDS)
                return Step(**base, kind=byzantine[rng.randrange(len(byzantine))], broker=request.broker)
            if kind == "kill":
                step = Step(**base, kind="kill", broker=request.broker, ms=rng.randint(*p.down_ms))
            elif kind == "move_leader":
                step = self._leader_move(base, where, rng)
            elif kind == "throttle":
                step = Step(**base, kind="throttle", ms=rng.randint(*p.throttle_ms), broker=request.broker)
            elif kind == "unclean_election":
                step = self._unclean_election(base, where, rng)
            else:
                assert self.cluster is not None
                if kind == "isr":
                    kind = "isr_shrink" if rng.random() < 0.5 else "isr_expand"
                step = draw_event(self.cluster, request, kind, rng, self.shrunk, base,
                                  retention_advance_ms=p.retention_advance_ms)
            return step if step is not None and self._applicable(step, request) else None
        return None

    def _leader_move(self, base: dict[str, object], where: tuple[str, int] | None,
                     rng: random.Random) -> Step | None:
        if where is None or where[1] is None or self.cluster is None:
            return None
        p = self.cluster.partition(*where)
        if p is None:
            return None
        others = sorted(r for r in p.isr if r != p.leader_id and self.cluster.brokers[r].alive)
        if not others:
            return None
        return Step(**base, kind="move_leader", broker=others[rng.randrange(len(others))])  # type: ignore[arg-type]

    def _unclean_election(self, base: dict[str, object], where: tuple[str, int] | None,
                          rng: random.Random) -> Step | None:
        if where is None or self.cluster is None:
            return None
        p = self.cluster.partition(*where)
        if p is None or not _unclean_possible(self.cluster, p):
            return None
        return Step(**base, kind="unclean_election", broker=p.leader_id,  # type: ignore[arg-type]
                    ms=rng.randint(*self.profile.down_ms))

    def _applicable(self, step: Step, request: Intercepted) -> bool:
        """A step is applied only where Kafka could do it now (a replayed leader move needs its broker in sync)."""
        if step.kind in ("kill", "move_leader", "unclean_election", *CLUSTER_KINDS) and self.cluster is None:
            return False  # a proxy kills no broker, moves no leader and changes no group, ISR or log
        if step.kind in ("throttle", *BYZANTINE_KINDS):
            return step.api == "Fetch"
        if step.kind == "unclean_election":
            assert self.cluster is not None
            if self.operator is None or step.topic is None or step.partition is None:
                return False
            p = self.cluster.partition(step.topic, step.partition)
            return p is not None and p.leader_id == step.broker and _unclean_possible(self.cluster, p)
        if step.kind in CLUSTER_KINDS:
            assert self.cluster is not None
            return event_applicable(self.cluster, step)
        if step.kind == "kill":
            assert self.cluster is not None
            alive = [b for b in self.cluster.brokers.values() if b.alive]
            return self.operator is not None and step.broker in {b.node_id for b in alive}
        if step.kind == "move_leader":
            assert self.cluster is not None
            if step.topic is None or step.partition is None or step.broker is None:
                return False
            p = self.cluster.partition(step.topic, step.partition)
            return p is not None and step.broker in p.isr and step.broker != p.leader_id \
                and self.cluster.brokers[step.broker].alive
        return True

    # --- applying -------------------------------------------------------------------------------------------
    def _apply(self, step: Step, request: Intercepted) -> Action | None:
        if step.kind == "error":
            assert step.error is not None
            return Fail(ErrorCode[step.error], after=step.after)
        if step.kind == "latency":
            return Delay(step.ms)
        if step.kind in BYZANTINE_KINDS:  # asked for by name only: the answer edited as no Kafka broker serves it
            return Edit(BYZANTINE_EDITS[step.kind])
        if step.kind in ("drop_before", "drop_after"):
            return Drop(after=step.kind == "drop_after")
        if step.kind in CLUSTER_KINDS:
            assert self.cluster is not None
            apply_event(self.cluster, step, self.shrunk)
            return None  # the request meets the changed cluster, as Kafka's would
        if step.kind == "throttle":  # as Kafka answers a Fetch over its quota: empty, at once, the channel muted
            empty: dict[str, object] = {"throttle_time_ms": step.ms, "responses": []}
            if request.version >= 7:
                empty.update(error_code=ErrorCode.NONE, session_id=0)
            return Several(Answer(empty), Throttle(step.ms))
        if step.kind in ("kill", "unclean_election"):  # an unclean election: the controller elects the out-of-sync
            assert self.operator is not None and step.broker is not None  # replica as the leader dies
            self.operator.kill_broker(step.broker, step.ms)
            return Drop() if request.broker == step.broker else None
        assert step.topic is not None and step.partition is not None and step.broker is not None
        assert self.cluster is not None
        self.cluster.move_leader(step.topic, step.partition, step.broker)
        return None  # the request meets the new leadership as Kafka's would (NOT_LEADER_OR_FOLLOWER on the old)

    @staticmethod
    def _mechanism(step: Step) -> str:
        route = route_of_point(step.api)
        if step.kind == "registry_error" and route is not None:
            for r in legal_registry_errors(route):
                if str(r.error_code) == step.error:
                    return r.mechanism
        if step.kind == "error":
            for e in legal_errors(step.api, non_retriable=True):
                if e.error == step.error:
                    return e.mechanism
        return KINDS[step.kind]


def _unclean_possible(cluster: ClusterState, p: Partition) -> bool:
    """Whether the leader's death would elect an out-of-sync replica: the topic allows it, the leader is the ISR's
    last member, and another replica is alive."""
    if not cluster.topic_configs.unclean_election(p.topic) or not p.online or p.isr != [p.leader_id]:
        return False
    return any(r != p.leader_id and cluster.brokers[r].alive for r in p.replicas)


_REGISTRY_MESSAGES = {
    40401: "Subject not found.",
    40403: "Schema not found",
    50001: "Error in the backend data store",
    50002: "Operation timed out",
    50003: "Error while forwarding the request to the leader",
    503: "Service Unavailable",
}
"""Confluent's words for each code (its RestException classes' messages; a load balancer's 503)."""


def _idempotent_init(request: Intercepted) -> bool:
    """An InitProducerId without a transactional id (an idempotent producer's), when its body was read."""
    body = request.body
    if request.api != "InitProducerId" or body is None:
        return False
    return (body.get("transactional_id") if hasattr(body, "get") else getattr(body, "transactional_id", None)) is None


def _first_partition(request: Intercepted) -> tuple[str, int] | None:
    named = sorted((t, p) for t, p in request.touched if p is not None and not t.startswith("__"))
    return named[0] if named else None
