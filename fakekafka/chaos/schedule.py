"""A chaos schedule: the faults a run applied, each at its point of the request sequence (the nth request of an
API), written out as JSON (or YAML: a path ending .yaml or .yml, with PyYAML) and replayed exactly: the same steps at
the same points."""

from __future__ import annotations

import dataclasses
import json
import os
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from fakekafka.chaos.kinds import KINDS
from fakekafka.chaos.registry import registry_status

__all__ = ["Schedule", "Step"]

_FORMAT = "fakekafka-chaos-schedule/1"


@dataclass(frozen=True)
class Step:
    """One fault at one request point: the `nth` request (0 first) of `api` the cluster dispatched."""

    api: str
    nth: int
    kind: str
    """One of `fakekafka.chaos.kinds.KINDS`."""
    error: str | None = None
    after: bool = False
    ms: int = 0
    """latency: the delay; kill, unclean_election: how long the broker stays down; throttle: throttle_time_ms;
    retention: how far the clock moved."""
    broker: int | None = None
    """kill: the broker killed; move_leader: the new leader; otherwise the broker that got the request."""
    topic: str | None = None
    partition: int | None = None
    group: str | None = None
    """rebalance, session_expiry: the group; move_coordinator: the group or transactional id."""
    member: str | None = None
    """session_expiry: the member expired."""
    mechanism: str = ""
    t_ms: int = field(default=0, compare=False)
    """When it applied, on the cluster's clock, since the run started (for reading; not part of its identity)."""

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"unknown chaos step kind {self.kind!r}; kinds: {', '.join(KINDS)}")
        if self.kind == "error" and not self.error:
            raise ValueError("a chaos error step names its error (Kafka's name, e.g. NOT_LEADER_OR_FOLLOWER)")
        if self.kind == "registry_error" and not (self.error or "").isdigit():
            raise ValueError(f"a registry_error step names Confluent's error code (e.g. 50001), not {self.error!r}")
        if self.nth < 0:
            raise ValueError(f"a chaos step's nth counts requests from 0, not {self.nth}")

    @property
    def point(self) -> tuple[str, int]:
        return self.api, self.nth

    def describe(self) -> str:
        """In words: "t=1.2 s: Produce request 3 to orders-3 answered NOT_LEADER_OR_FOLLOWER after append"."""
        where = ""
        if self.topic is not None:
            where = f" to {self.topic}" + (f"-{self.partition}" if self.partition is not None else "")
        applied = "append" if self.api == "Produce" else "it was applied"
        what = {
            "error": f"answered {self.error}" + (f" after {applied}" if self.after else ""),
            "latency": f"answered {self.ms} ms late",
            "drop_before": "connection dropped before it was applied",
            "drop_after": f"connection dropped after {applied}",
            "kill": f"broker {self.broker} killed, restarted {self.ms} ms later",
            "move_leader": f"leadership moved to broker {self.broker}",
            "rebalance": f"group {self.group} rebalanced (a member joined or left)",
            "session_expiry": f"member {self.member} of group {self.group} expired (session timeout)",
            "move_coordinator": f"coordinator of {self.group} moved to broker {self.broker}",
            "isr_shrink": f"broker {self.broker} fell out of the ISR",
            "isr_expand": f"broker {self.broker} fetches again (rejoins the ISR once caught up)",
            "throttle": f"answered empty with throttle_time_ms={self.ms} (over a fetch quota), connection muted",
            "retention": f"clock moved {self.ms} ms past retention.ms, a retention check ran",
            "compaction": "the log cleaner passed (superseded keys removed)",
            "unclean_election": f"leader {self.broker} crashed, an out-of-sync replica elected (unclean), "
                                f"restarted {self.ms} ms later",
            "registry_error": f"answered {self._registry_status()} with {self.error}"
                              + (" after it was applied" if self.after else ""),
            "registry_latency": f"answered {self.ms} ms late",
            "unknown_schema_id": "answered 404 with 40403 (schema id unknown to the instance answering)",
            "corrupt_crc": "answered with its first batch's CRC corrupted (byzantine: never Kafka's)",
            "out_of_order": "answered with its first two batches out of offset order (byzantine: never Kafka's)",
            "reordered_records": "answered with two records inside one batch swapped, CRC recomputed "
                                 "(byzantine: never Kafka's)",
        }[self.kind]
        return f"t={self.t_ms / 1000:.1f} s: {self.api} request {self.nth}{where} {what}"

    def _registry_status(self) -> int | str:
        return registry_status(int(self.error)) if (self.error or "").isdigit() else "?"

    def to_json(self) -> dict[str, Any]:
        defaults = {f.name: f.default for f in dataclasses.fields(self)}
        return {k: v for k, v in dataclasses.asdict(self).items()
                if k in ("api", "nth", "kind") or (v is not None and v != defaults[k])}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Step:
        known = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(data) - known)
        if unknown:
            raise ValueError(f"a chaos step has unknown field(s) {', '.join(unknown)}; "
                             f"fields: {', '.join(sorted(known))}")
        missing = [k for k in ("api", "nth", "kind") if k not in data]
        if missing:
            raise ValueError(f"a chaos step needs {', '.join(missing)}: {data}")
        return cls(**data)


@dataclass
class Schedule:
    """Steps in the order they applied; `seed` and `profile` say where they came from (None: made by hand or
    shrunk)."""

    steps: list[Step] = field(default_factory=list)
    seed: int | None = None
    profile: str | None = None

    def __iter__(self) -> Iterator[Step]:
        return iter(self.steps)

    def __len__(self) -> int:
        return len(self.steps)

    def key(self) -> list[Step]:
        """What makes two schedules the same (times left out: they are on the wall clock unless it is frozen)."""
        return list(self.steps)

    def same_as(self, other: Schedule) -> bool:
        return self.key() == other.key()

    def subset(self, steps: Iterable[Step]) -> Schedule:
        return Schedule(list(steps), self.seed, self.profile)

    def lines(self) -> list[str]:
        return [s.describe() for s in self.steps] or ["(no faults)"]

    def describe(self) -> str:
        return "; ".join(self.lines())

    def to_json(self) -> dict[str, Any]:
        return {"format": _FORMAT, "seed": self.seed, "profile": self.profile,
                "steps": [s.to_json() for s in self.steps]}

    def save(self, path: str | os.PathLike[str]) -> Path:
        """Written as JSON, or as YAML when the path ends .yaml or .yml (needs PyYAML)."""
        out = Path(path)
        if _is_yaml(out):
            text = _yaml(out).safe_dump(self.to_json(), sort_keys=False, allow_unicode=True)
        else:
            text = json.dumps(self.to_json(), indent=1) + "\n"
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(text)
        return out

    @classmethod
    def from_json(cls, data: Any) -> Schedule:
        if not isinstance(data, dict) or data.get("format") != _FORMAT or not isinstance(data.get("steps"), list):
            raise ValueError(f"not a chaos schedule: an object with format {_FORMAT!r} and a list of steps "
                             "is expected")
        return cls([Step.from_json(s) for s in data["steps"]], data.get("seed"), data.get("profile"))

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> Schedule:
        """A schedule written by `save` (a chaos run, a shrunk failure), to replay with `chaos=Schedule.load(p)`;
        JSON, or YAML for a path ending .yaml or .yml (with PyYAML)."""
        try:
            text = Path(path).read_text()
        except OSError as e:
            raise ValueError(f"cannot read chaos schedule {os.fspath(path)}: {e.strerror}") from None
        if _is_yaml(Path(path)):
            yaml = _yaml(Path(path))
            try:
                return cls.from_json(yaml.safe_load(text))
            except yaml.YAMLError as e:
                raise ValueError(f"chaos schedule {os.fspath(path)}: not YAML ({e})") from None
        try:
            return cls.from_json(json.loads(text))
        except json.JSONDecodeError as e:
            raise ValueError(f"chaos schedule {os.fspath(path)}: not JSON ({e})") from None


def _is_yaml(path: Path) -> bool:
    return path.suffix.lower() in (".yaml", ".yml")


def _yaml(path: Path) -> Any:
    try:
        import yaml
    except ImportError:
        raise ValueError(f"chaos schedule {path}: YAML schedules need PyYAML (pip install 'fakekafka[yaml]'), or "
                         "give a .json path") from None
    return yaml
