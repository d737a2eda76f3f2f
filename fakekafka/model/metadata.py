"""The cluster's metadata records: brokers, topics and partitions with their replicas' logs.

Plain data every part of the model shares (the topic registry, replication, the coordinators' logs, storage's
loading): no behaviour beyond what a record says about itself.
"""

from __future__ import annotations

import re
import uuid
from dataclasses import dataclass, field

from fakekafka.model.errors import ApiError
from fakekafka.model.log import PartitionLog
from fakekafka.model.producers import PartitionProducers
from fakekafka.wire import ErrorCode

__all__ = ["MAX_TOPIC_NAME", "Broker", "Partition", "Topic", "find_partition", "validate_topic_name"]

MAX_TOPIC_NAME = 249
_LEGAL = re.compile(r"^[a-zA-Z0-9._-]+$")

def validate_topic_name(name: str) -> None:
    """Kafka 4.4's controller's checks and words (checked with CreateTopics against a real broker)."""
    if not name:
        raise ApiError(ErrorCode.INVALID_TOPIC_EXCEPTION, "Topic name is invalid: the empty string is not allowed")
    if name in (".", ".."):
        raise ApiError(ErrorCode.INVALID_TOPIC_EXCEPTION, f"Topic name is invalid: '{name}' is not allowed")
    if len(name) > MAX_TOPIC_NAME:
        raise ApiError(ErrorCode.INVALID_TOPIC_EXCEPTION,
                       f"Topic name is invalid: the length of '{name}' is longer than the max allowed length "
                       f"{MAX_TOPIC_NAME}")
    if not _LEGAL.match(name):
        raise ApiError(ErrorCode.INVALID_TOPIC_EXCEPTION,
                       f"Topic name is invalid: '{name}' contains one or more characters other than "
                       "ASCII alphanumerics, '.', '_' and '-'")


@dataclass
class Broker:
    node_id: int
    host: str
    port: int
    rack: str | None = None
    alive: bool = True
    isolated: bool = False
    """Reachable by clients but cut off from the other brokers: it neither replicates nor is replicated."""
    endpoints: dict[str, tuple[str, int]] = field(default_factory=dict)
    """Advertised (host, port) per listener name; clients connected on a listener are told its addresses."""
    bound: dict[str, int] = field(default_factory=dict)
    """The port each listener is bound to (kept across a restart)."""

    def endpoint(self, listener: str | None) -> tuple[str, int]:
        """Where clients of `listener` reach this broker (the first listener's address otherwise)."""
        return self.endpoints.get(listener, (self.host, self.port)) if listener else (self.host, self.port)


@dataclass
class Partition:
    """A partition and its replicas. Each replica has its own log: the leader's is `log`; followers copy
    its batches (same bytes, same offsets) when the cluster replicates, so their logs can lag, diverge
    after an unclean election and be truncated, as in Kafka."""

    topic: Topic
    index: int
    replicas: list[int]
    leader_id: int
    leader_epoch: int = 0
    isr: list[int] = field(default_factory=list)
    logs: dict[int, PartitionLog] = field(default_factory=dict)
    last_caught_up: dict[int, int] = field(default_factory=dict)
    paused: set[int] = field(default_factory=set)
    producers: PartitionProducers = field(default_factory=PartitionProducers)
    adding: list[int] = field(default_factory=list)
    removing: list[int] = field(default_factory=list)
    """An ongoing reassignment: replicas being added (catching up) and to be removed once they have."""
    reassigned_from: list[int] = field(default_factory=list)

    def __post_init__(self) -> None:
        if not self.isr:
            self.isr = list(self.replicas)
        for r in self.replicas:
            self.logs.setdefault(r, PartitionLog())

    @property
    def log(self) -> PartitionLog:
        """The leader's log (the last leader's while the partition is offline)."""
        return self.logs.get(self.leader_id) or self.logs[self.replicas[0]]

    @property
    def online(self) -> bool:
        return self.leader_id >= 0


@dataclass
class Topic:
    name: str
    topic_id: uuid.UUID
    partitions: list[Partition]
    configs: dict[str, str]
    is_internal: bool = False

    @property
    def replication_factor(self) -> int:
        return len(self.partitions[0].replicas) if self.partitions else 0


def find_partition(topics: dict[str, Topic], topic: str, index: int) -> Partition | None:
    """Partition `index` of the named topic; None if either does not exist."""
    t = topics.get(topic)
    if t is None or not 0 <= index < len(t.partitions):
        return None
    return t.partitions[index]
