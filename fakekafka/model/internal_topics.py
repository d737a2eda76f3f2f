"""The broker's own topics and how a key picks its partition of one, as Kafka's coordinators do (with Java's string
hashing, and the HashSet order it gives what Kafka sends from a set).

A leaf of the model: the coordinators' logs (offsets_topic, transaction_log, share_state), the handlers and the
cluster all read these names, so they live apart from any of them.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable

__all__ = ["INTERNAL_TOPICS", "OFFSETS_TOPIC", "SHARE_STATE_TOPIC", "TRANSACTION_STATE_TOPIC", "java_hash_set_order",
           "java_string_hash", "kafka_abs", "partition_for"]

OFFSETS_TOPIC = "__consumer_offsets"
TRANSACTION_STATE_TOPIC = "__transaction_state"
SHARE_STATE_TOPIC = "__share_group_state"
INTERNAL_TOPICS = frozenset({OFFSETS_TOPIC, TRANSACTION_STATE_TOPIC, SHARE_STATE_TOPIC})


@functools.lru_cache(maxsize=65_536)
def java_string_hash(s: str) -> int:
    """Java's String.hashCode (over UTF-16 code units, int32 overflow). Cached: every group request asks for its
    group id's coordinator (a 1,000-group profile spent 2.7 % of the broker's time here)."""
    h = 0
    data = s.encode("utf-16-be")
    for i in range(0, len(data), 2):
        h = (31 * h + ((data[i] << 8) | data[i + 1])) & 0xFFFFFFFF
    return h - (1 << 32) if h >= 1 << 31 else h


def java_hash_set_order(items: Iterable[str]) -> list[str]:
    """The iteration order of a java.util.HashSet the strings were added to in this order: by bucket (the spread
    hash masked by the table size the set has grown to), insertion order within a bucket. Kafka sends what it keeps
    in a HashSet or a HashMap's keys in this order (telemetry's metric set, SASL's mechanisms)."""
    distinct = list(dict.fromkeys(items))
    capacity = 16
    while len(distinct) > capacity * 3 // 4:
        capacity *= 2

    def bucket(s: str) -> int:
        h = java_string_hash(s) & 0xFFFFFFFF
        return (h ^ (h >> 16)) & (capacity - 1)

    return sorted(distinct, key=bucket)  # sorted() is stable: insertion order within a bucket


def kafka_abs(n: int) -> int:
    """Kafka's Utils.abs: Math.abs, except that Integer.MIN_VALUE maps to 0."""
    return 0 if n == -(2**31) else abs(n)


def partition_for(key: str, partitions: int) -> int:
    """The partition of an internal topic a group id or transactional id belongs to (Kafka's
    Utils.abs(key.hashCode()) % partitions)."""
    return kafka_abs(java_string_hash(key)) % partitions
