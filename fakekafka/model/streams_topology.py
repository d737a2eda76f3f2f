"""A streams group's topology (KIP-1071) and its configuration against the cluster's topics. Pure data.

A Kafka Streams member joins with its topology: subtopologies, each reading source topics (user topics) and
repartition source topics, writing repartition sink topics, keeping state changelog topics. As Kafka 4.4's
InternalTopicManager does, the coordinator *configures* it against the metadata image: every source topic must
exist (else MISSING_SOURCE_TOPICS), a repartition topic without a partition count takes the largest count of the
source topics of the subtopologies writing to it, a changelog topic the largest source count of its
subtopology, copartitioned topics must agree (else INCORRECTLY_PARTITIONED_TOPICS), and internal topics that do
not exist yet are reported (MISSING_INTERNAL_TOPICS) for the broker to create with the topology's configs. A
subtopology's task count is the largest partition count among its source and repartition source topics.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

__all__ = ["ConfiguredTopology", "InternalTopic", "Status", "Subtopology", "Topology", "configure"]


class Status:
    """StreamsGroupHeartbeat's status codes."""

    STALE_TOPOLOGY = 0
    MISSING_SOURCE_TOPICS = 1
    INCORRECTLY_PARTITIONED_TOPICS = 2
    MISSING_INTERNAL_TOPICS = 3
    SHUTDOWN_APPLICATION = 4
    ASSIGNMENT_DELAYED = 5


@dataclass(frozen=True)
class InternalTopic:
    name: str
    partitions: int = 0
    """0: derived from the source topics."""
    replication_factor: int = 0
    """0: the broker's default."""
    configs: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True)
class Subtopology:
    subtopology_id: str
    source_topics: tuple[str, ...] = ()
    repartition_sink_topics: tuple[str, ...] = ()
    state_changelog_topics: tuple[InternalTopic, ...] = ()
    repartition_source_topics: tuple[InternalTopic, ...] = ()
    copartition_groups: tuple[tuple[tuple[int, ...], tuple[int, ...]], ...] = ()
    """(indexes into source_topics, indexes into repartition_source_topics) per group."""


@dataclass(frozen=True)
class Topology:
    epoch: int
    subtopologies: tuple[Subtopology, ...]

    @staticmethod
    def from_request(t: Any) -> Topology:
        def topic(i: Any) -> InternalTopic:
            return InternalTopic(i.name, i.partitions, i.replication_factor,
                                 tuple((c.key, c.value) for c in i.topic_configs))
        return Topology(t.epoch, tuple(Subtopology(
            s.subtopology_id, tuple(s.source_topics), tuple(s.repartition_sink_topics),
            tuple(topic(c) for c in s.state_changelog_topics), tuple(topic(r) for r in s.repartition_source_topics),
            tuple((tuple(g.source_topics), tuple(g.repartition_source_topics)) for g in s.copartition_groups))
            for s in t.subtopologies))


@dataclass
class ConfiguredTopology:
    """The topology against the cluster's topics: tasks per subtopology when it is ready, else the status why
    not, and the internal topics the broker should create."""

    partitions: dict[str, int] = field(default_factory=dict)
    """subtopology id -> task count; empty unless ready."""
    internal_partitions: dict[str, int] = field(default_factory=dict)
    """internal topic -> the partition count it has or is to have."""
    status: list[tuple[int, str]] = field(default_factory=list)
    to_create: list[tuple[InternalTopic, int]] = field(default_factory=list)
    """(topic, partitions) of the missing internal topics."""

    @property
    def ready(self) -> bool:
        return not self.status


def configure(topology: Topology, partitions_of: dict[str, int]) -> ConfiguredTopology:
    """`partitions_of`: the cluster's topics by name -> partition count."""
    out = ConfiguredTopology()
    missing = sorted({t for s in topology.subtopologies for t in s.source_topics if t not in partitions_of})
    if missing:
        out.status.append((Status.MISSING_SOURCE_TOPICS, f"Source topics {', '.join(missing)} are missing."))
        return out
    repartition: dict[str, int] = {}
    declared = {r.name: r for s in topology.subtopologies for r in s.repartition_source_topics}
    for name, r in declared.items():
        if r.partitions > 0:
            repartition[name] = r.partitions
    # a repartition topic without a count takes the largest count of its writers' sources, until all settle
    for _ in range(len(declared) + 1):
        for s in topology.subtopologies:
            counts = [partitions_of[t] for t in s.source_topics] + \
                     [repartition[r.name] for r in s.repartition_source_topics if r.name in repartition]
            if not counts:
                continue
            for sink in s.repartition_sink_topics:
                if sink in declared and sink not in repartition:
                    repartition[sink] = max(counts)
    unsettled = sorted(n for n in declared if n not in repartition)
    if unsettled:
        out.status.append((Status.INCORRECTLY_PARTITIONED_TOPICS,
                           f"Failed to compute the number of partitions for repartition topics {unsettled}."))
        return out
    # copartitioned topics must agree; repartition topics without a fixed count follow the others
    for s in topology.subtopologies:
        for sources, reps in s.copartition_groups:
            names = [s.source_topics[i] for i in sources if i < len(s.source_topics)]
            rep_names = [s.repartition_source_topics[i].name for i in reps if i < len(s.repartition_source_topics)]
            counts = {partitions_of[n] for n in names}
            if len(counts) > 1:
                out.status.append((Status.INCORRECTLY_PARTITIONED_TOPICS, "Following topics do not have the same "
                                   f"number of partitions: [{', '.join(sorted(names))}]"))
                return out
            target = counts.pop() if counts else max((repartition[n] for n in rep_names), default=0)
            for n in rep_names:
                if declared[n].partitions == 0:
                    repartition[n] = target
    for s in topology.subtopologies:
        counts = [partitions_of[t] for t in s.source_topics] + \
                 [repartition[r.name] for r in s.repartition_source_topics]
        tasks = max(counts, default=0)
        out.partitions[s.subtopology_id] = tasks
        for c in s.state_changelog_topics:
            out.internal_partitions[c.name] = c.partitions or tasks
    out.internal_partitions.update(repartition)
    internal = {t.name: t for s in topology.subtopologies for t in (*s.state_changelog_topics,
                                                                    *s.repartition_source_topics)}
    wrong = sorted(n for n, p in out.internal_partitions.items() if n in partitions_of and partitions_of[n] != p)
    if wrong:
        out.status.append((Status.INCORRECTLY_PARTITIONED_TOPICS,
                           "Existing internal topics have invalid number of partitions: "
                           + ", ".join(f"{n} (expected {out.internal_partitions[n]}, got {partitions_of[n]})"
                                       for n in wrong)))
        out.partitions = {}
        return out
    absent = sorted(n for n in out.internal_partitions if n not in partitions_of)
    if absent:
        out.status.append((Status.MISSING_INTERNAL_TOPICS, f"Internal topics are missing: {', '.join(absent)}"))
        out.to_create = [(internal[n], out.internal_partitions[n]) for n in absent]
        out.partitions = {}
    return out
