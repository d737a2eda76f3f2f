"""How much chaos: the rate of each fault kind per request, and their ranges. Named profiles, or a JSON file of
the same fields."""

from __future__ import annotations

import dataclasses
import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from fakekafka.model.faults import api_key_of

__all__ = ["PROFILES", "Profile", "profile_of"]

_RATES = ("error_rate", "latency_rate", "drop_rate", "kill_rate", "move_leader_rate", "rebalance_rate",
          "session_expiry_rate", "coordinator_move_rate", "isr_rate", "throttle_rate", "retention_rate",
          "compaction_rate", "unclean_rate", "byzantine_rate")
_REGISTRY_RATES = ("registry_error_rate", "registry_latency_rate", "unknown_schema_id_rate")
"""Drawn once per Schema Registry request, apart from the broker's requests (so they add up on their own)."""


@dataclass(frozen=True)
class Profile:
    """Rates are per request of an API chaos may touch (the ones with legal errors, Produce and Fetch first),
    drawn once per request: at most one fault per request."""

    name: str = "default"
    error_rate: float = 0.05
    non_retriable: bool = False
    """Also errors the client cannot retry (a commit refused for a new generation)."""
    latency_rate: float = 0.05
    latency_ms: tuple[int, int] = (5, 50)
    drop_rate: float = 0.03
    """Half before the request is applied, half after."""
    kill_rate: float = 0.0
    down_ms: tuple[int, int] = (50, 300)
    move_leader_rate: float = 0.0
    rebalance_rate: float = 0.0
    """A classic group's rebalance started (a member joined or left), drawn on its members' group requests."""
    session_expiry_rate: float = 0.0
    """The member sending a group request expired (its session timed out)."""
    coordinator_move_rate: float = 0.0
    """The group's or transactional id's coordinator moved (its internal partition's leadership; several brokers)."""
    isr_rate: float = 0.0
    """Half: a follower of the partition falls out of the ISR; half: one chaos took out fetches again (several
    brokers)."""
    throttle_rate: float = 0.0
    """A Fetch over the consumer's fetch quota: answered empty with throttle_time_ms, its connection muted."""
    throttle_ms: tuple[int, int] = (50, 500)
    retention_rate: float = 0.0
    """The clock moves past the partition's retention.ms and a retention check runs (a cluster on a frozen clock,
    a topic whose cleanup.policy has delete)."""
    retention_advance_ms: int = 10_000
    """The most a retention step moves the clock: a topic whose retention.ms needs more is left alone (so much time
    passing without a heartbeat would expire every session)."""
    compaction_rate: float = 0.0
    """The log cleaner passes over a compacted partition with something to clean."""
    unclean_rate: float = 0.0
    """The leader of a partition whose ISR is only itself crashes and an out-of-sync replica is elected (a topic
    with unclean.leader.election.enable=true; several brokers)."""
    byzantine_rate: float = 0.0
    """A Fetch answered with a corrupted batch CRC or its batches out of order: never something Kafka does, so no
    profile but `byzantine` sets it (fakekafka/chaos/byzantine.py)."""
    registry_error_rate: float = 0.0
    """A Schema Registry request answered one of Confluent's errors legal on its route (fakekafka/chaos/registry.py;
    with a cluster's `schema_registry=True` or the proxy's forwarded registry)."""
    registry_latency_rate: float = 0.0
    """A Schema Registry request answered late (`latency_ms`)."""
    unknown_schema_id_rate: float = 0.0
    """A read of a schema id answered 40403: a record whose schema id the registry instance does not know yet."""
    apis: tuple[str, ...] = ()
    """Only these APIs (Kafka's names); empty: every API a fault kind applies to."""
    max_faults: int | None = 20
    """At most this many faults in a run (None: no limit), so a run ends."""
    skip_first: int = 0
    """Requests of each API left alone at the start (the client's first connection, say)."""

    def __post_init__(self) -> None:
        for name in (*_RATES, *_REGISTRY_RATES):
            rate = getattr(self, name)
            if not isinstance(rate, (int, float)) or not 0 <= rate <= 1:
                raise ValueError(f"chaos profile {self.name!r}: {name} is a rate between 0 and 1, not {rate!r}")
        if sum(getattr(self, n) for n in _RATES) > 1:
            raise ValueError(f"chaos profile {self.name!r}: the rates add up to more than 1 (one fault per request)")
        if not isinstance(self.retention_advance_ms, int) or self.retention_advance_ms < 0:
            raise ValueError(f"chaos profile {self.name!r}: retention_advance_ms is milliseconds, 0 or more, not "
                             f"{self.retention_advance_ms!r}")
        if sum(getattr(self, n) for n in _REGISTRY_RATES) > 1:
            raise ValueError(f"chaos profile {self.name!r}: the registry rates add up to more than 1 (one fault per "
                             "registry request)")
        for name in ("latency_ms", "down_ms", "throttle_ms"):
            lo, hi = getattr(self, name)
            if not 0 <= lo <= hi:
                raise ValueError(f"chaos profile {self.name!r}: {name} is [low, high] milliseconds, not {[lo, hi]}")
        for api in self.apis:
            api_key_of(api)  # unknown names in Kafka's words

    @property
    def quiet(self) -> bool:
        return not any(getattr(self, n) for n in (*_RATES, *_REGISTRY_RATES))

    def to_json(self) -> dict[str, Any]:
        return {k: list(v) if isinstance(v, tuple) else v for k, v in dataclasses.asdict(self).items()}

    @classmethod
    def from_json(cls, data: dict[str, Any], name: str = "file") -> Profile:
        known = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(data) - known)
        if unknown:
            raise ValueError(f"chaos profile {name!r}: unknown field(s) {', '.join(unknown)}; fields: "
                             f"{', '.join(sorted(known))}")
        given = {k: tuple(v) if isinstance(v, list) else v for k, v in data.items()}
        return cls(**{"name": name, **given})


PROFILES: dict[str, Profile] = {
    "none": Profile("none", error_rate=0, latency_rate=0, drop_rate=0),
    "default": Profile("default"),
    "network": Profile("network", error_rate=0, latency_rate=0.1, latency_ms=(10, 200), drop_rate=0.1),
    "busy": Profile("busy", error_rate=0.15, latency_rate=0.1, drop_rate=0.08, kill_rate=0.01,
                    move_leader_rate=0.03, max_faults=40, throttle_rate=0.05),
    "harsh": Profile("harsh", error_rate=0.2, non_retriable=True, latency_rate=0.1, drop_rate=0.1, kill_rate=0.02,
                     move_leader_rate=0.05, max_faults=60, isr_rate=0.04, throttle_rate=0.05, retention_rate=0.02,
                     compaction_rate=0.02, unclean_rate=0.02),
    "cluster": Profile("cluster", error_rate=0.03, latency_rate=0.02, drop_rate=0.02, rebalance_rate=0.05,
                       session_expiry_rate=0.03, coordinator_move_rate=0.04, isr_rate=0.06, max_faults=30,
                       retention_rate=0.03, compaction_rate=0.03),
    "registry": Profile("registry", error_rate=0.02, latency_rate=0.02, drop_rate=0.02, registry_error_rate=0.2,
                        registry_latency_rate=0.1, unknown_schema_id_rate=0.1, max_faults=30),
    "byzantine": Profile("byzantine", error_rate=0, latency_rate=0, drop_rate=0, byzantine_rate=0.2, max_faults=10),
}
"""none: chaos on, nothing drawn (its overhead alone); default: a few retriable errors, small latencies, dropped
connections; network: latency and dropped connections only; busy: more of everything, broker kills and leader
moves, throttled fetches; harsh: busy with errors clients cannot retry, ISR changes, retention and compaction
passes and unclean elections where the topic allows them; cluster: the cluster's own events (rebalances, session
expiries, coordinator moves, ISR shrink and expand, retention on a frozen clock, compaction passes) with a few
errors and drops; registry: the Schema Registry's
errors, latency and unknown schema ids, with a few broker errors and drops (only this profile draws registry
faults by default; a JSON profile sets their rates on any other); byzantine: Fetch answers with a corrupted batch
CRC or batches out of order, which Kafka never serves (only this profile draws them, or a JSON profile's
byzantine_rate)."""


def profile_of(given: str | os.PathLike[str] | Profile | None) -> Profile:
    """A profile by name, from a JSON file, or as given."""
    if given is None:
        return PROFILES["default"]
    if isinstance(given, Profile):
        return given
    text = os.fspath(given)
    if text in PROFILES:
        return PROFILES[text]
    path = Path(text)
    if not path.is_file():
        raise ValueError(f"unknown chaos profile {text!r}: names are {', '.join(PROFILES)}, or a JSON file's path")
    try:
        data = json.loads(path.read_text())
    except json.JSONDecodeError as e:
        raise ValueError(f"chaos profile {text}: not JSON ({e})") from None
    if not isinstance(data, dict):
        raise ValueError(f"chaos profile {text}: a JSON object of rates is expected")
    return Profile.from_json(data, name=data.pop("name", path.stem))
