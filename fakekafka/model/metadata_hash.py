"""The metadata hash Kafka 4.4's group coordinator keeps for each consumer and streams group. Pure.

A group's assignment depends on its subscribed topics' metadata; Kafka sums that up in one 64-bit number, written
in ConsumerGroupMetadata's and StreamsGroupMetadata's MetadataHash, and bumps the group epoch (so recomputes the
target assignment) when a heartbeat finds a different one. fakekafka computes the same number, byte for byte as
Kafka's group coordinator feeds its XXH3 (hash4j's streaming XXH3-64, seed 0; `xxhash.xxh3_64` is the same
function over the same bytes):

- a topic: the magic byte 0, the topic id's most and least significant halves (little-endian longs), its name
  (hash4j's `putString`: the UTF-16 code units little-endian, then their count as an int), the partition count;
  then per partition its index and the racks of its replicas' brokers (those with a rack), sorted as Java sorts
  strings (by UTF-16 code unit), each as its length then the string. A topic that does not exist hashes to 0.
- a group: 0 if it subscribes to no existing topic, else the XXH3 of its topics' hashes as longs, in the order
  of the topics' names (Java's String order again).

So a topic recreated (a new id), grown, or whose replicas moved to other racks changes the group's hash; a
topic's leader or ISR changing does not.
"""

from __future__ import annotations

import struct
import uuid
from collections.abc import Iterable, Mapping, Sequence

import xxhash

__all__ = ["TOPIC_HASH_MAGIC_BYTE", "group_hash", "java_string_key", "topic_hash"]

TOPIC_HASH_MAGIC_BYTE = 0
"""The version of the topic hash's layout (Kafka's `Utils.TOPIC_HASH_MAGIC_BYTE`)."""

_INT = struct.Struct("<i")
_LONG = struct.Struct("<q")
_HALVES = struct.Struct("<QQ")


def java_string_key(s: str) -> bytes:
    """A sort key that orders strings as Java's `String.compareTo` does (by UTF-16 code unit), which differs
    from Python's code point order only between characters beyond U+FFFF and those from U+E000 up."""
    return s.encode("utf-16-be")


def _put_string(out: bytearray, s: str) -> None:
    units = s.encode("utf-16-le")
    out += units
    out += _INT.pack(len(units) // 2)


def _signed(value: int) -> int:
    """XXH3's unsigned 64 bits as Java's long (the records' int64 field)."""
    return value - (1 << 64) if value >= 1 << 63 else value


def topic_hash(topic_id: uuid.UUID, name: str, partition_racks: Sequence[Iterable[str]]) -> int:
    """Kafka's `Utils.computeTopicHash` of an existing topic: `partition_racks[i]` holds the racks of partition
    i's replicas' brokers (one per replica whose broker has a rack, in any order)."""
    out = bytearray((TOPIC_HASH_MAGIC_BYTE,))
    out += _HALVES.pack(topic_id.int >> 64, topic_id.int & 0xFFFF_FFFF_FFFF_FFFF)
    _put_string(out, name)
    out += _INT.pack(len(partition_racks))
    encoded: dict[tuple[str, ...], bytes] = {}  # partitions mostly share their racks: each set encoded once
    for index, racks in enumerate(partition_racks):
        out += _INT.pack(index)
        key = tuple(racks)
        tail = encoded.get(key)
        if tail is None:
            part = bytearray()
            for rack in sorted(key, key=java_string_key):
                part += _INT.pack(len(rack.encode("utf-16-le")) // 2)
                _put_string(part, rack)
            tail = encoded[key] = bytes(part)
        out += tail
    return _signed(xxhash.xxh3_64_intdigest(bytes(out)))


def group_hash(topic_hashes: Mapping[str, int]) -> int:
    """Kafka's `Utils.computeGroupHash`: subscribed topic name -> its `topic_hash` (existing topics only)."""
    if not topic_hashes:
        return 0
    out = b"".join(_LONG.pack(topic_hashes[n]) for n in sorted(topic_hashes, key=java_string_key))
    return _signed(xxhash.xxh3_64_intdigest(out))
