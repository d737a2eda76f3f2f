"""What the model tells the world: events for tests to assert on, and change notices for parked requests.

The server wakes long-polling fetches and pending group answers through a change listener, so the model never
knows about the server.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass

from fakekafka.model.clock import Clock

__all__ = ["ClusterEvents", "Event"]

_events_log = logging.getLogger("fakekafka.events")


@dataclass(frozen=True, slots=True)
class Event:
    time_ms: int
    kind: str
    details: dict[str, object]


METADATA_EVENTS = frozenset({
    "leader_elected", "partition_offline", "isr_shrink", "isr_expand", "controller_elected", "broker_killed",
    "broker_restarted", "topic_configs", "broker_configs", "reassignment_started", "reassignment_completed",
    "reassignment_cancelled", "replica_log_dir_moved"})
"""Events that are changes of the cluster's metadata (what Kafka's controller writes to its metadata log)."""


class ClusterEvents:
    """The cluster's event record and its change listeners."""

    def __init__(self, clock: Clock) -> None:
        self.clock = clock
        self.events: list[Event] = []
        self._change_listeners: list[Callable[[object], None]] = []
        self.metadata_changes = 0
        """How many times the cluster's metadata changed (topics and partitions made or deleted, leaders, ISRs,
        brokers, configs): the end of the metadata log fakekafka's quorum describes, one entry per change."""

    def metadata_changed(self) -> None:
        self.metadata_changes += 1

    def event(self, kind: str, **details: object) -> None:
        """Records a fault or state change for tests to assert on, and logs it."""
        if kind in METADATA_EVENTS:
            self.metadata_changes += 1
        self.events.append(Event(self.clock.now_ms(), kind, details))
        _events_log.info("%s %s", kind, " ".join(f"{k}={v}" for k, v in details.items()))

    def add_change_listener(self, fn: Callable[[object], None]) -> None:
        """`fn(obj)` is called when `obj` changes in a way a parked request may wait for (a partition
        got data, a pending group response was resolved)."""
        self._change_listeners.append(fn)

    def remove_change_listener(self, fn: Callable[[object], None]) -> None:
        self._change_listeners.remove(fn)

    def notify(self, obj: object) -> None:
        for fn in self._change_listeners:
            fn(obj)
