"""The scenarios, by family; SCENARIOS (compat.scenarios.registry) holds them all, in registration order.

    basics     records round trips, ListOffsets by time, group membership, commits, offset resets,
               CreateTopics refusals, max.message.bytes, producing to an unknown topic (the first 19)
    admin      CreateTopics (validate_only, defaults, configs, name limits), DeleteTopics, CreatePartitions
    configs    DescribeConfigs for topics and brokers: values, sources, synonyms, read-only flags
    logs       DeleteRecords, ListOffsets at the edges, fetching around the log's ends, timestamps
    produce    partitioners, idempotence, acks, headers at scale, many partitions, per-topic limits
    groups     DescribeGroups/ListGroups/DeleteGroups/OffsetDelete, static members, session timeouts,
               commits from outside the generation, pause/resume
    transactions  commit/abort under read_committed and read_uncommitted, the last stable offset, zombie
               fencing, offsets sent to a transaction, misuse the client refuses, the timeout ceiling
    faults     a leader moved, a broker killed under acks=all, a member's session expiring: on three brokers
               only (kafka-3 and fakekafka-3), each cell with the cluster to itself

Names are unique per cell (Env.name), so all scenarios share one broker. Topics are created over the
wire by the harness (Env.create_topic), not by the client, except where creating them is the point; the
brokers run with auto-create off where they can (fakekafka, real Kafka), so a client that auto-creates
by mistake would show.

A scenario may call only what it needs: a client lacking it raises Unsupported and the cell says so.
"""

from __future__ import annotations

from compat.scenarios import (  # noqa: F401 (they register)
    admin,
    basics,  # noqa: F401, I001 (registers first: the table keeps its first rows)
    configs,
    faults,
    groups,
    logs,
    produce,
    transactions,
)
from compat.scenarios.basics import CODECS, SAMPLES, TIMESTAMPS
from compat.scenarios.registry import SCENARIOS, Outcome, Scenario, scenario

__all__ = ["CODECS", "SAMPLES", "SCENARIOS", "TIMESTAMPS", "Outcome", "Scenario", "scenario"]
