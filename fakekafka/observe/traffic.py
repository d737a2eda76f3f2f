"""What a request touched: topics and partitions, groups, records, generation — read off the parsed
request and the response the handler built, for the request log and for recordings.

One walk serves every API because Kafka's schemas name these things the same way everywhere
(`topics`/`topic_data` arrays of `name`/`topic`/`topic_id`, partitions as `partition`/`partition_index`/
`index` or a `partition_indexes` list, `group_id`, `generation_id`, `member_id`). It only runs when a
recording listener is attached, so the hot path does not pay for it.
"""

from __future__ import annotations

import struct
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from fakekafka.wire import ApiKey

__all__ = ["Touched", "count_records", "touched"]

_TOPIC_LISTS = ("topics", "topic_data", "responses")
_PARTITION_LISTS = ("partitions", "partition_data", "partition_responses")
_PARTITION_KEYS = ("partition_index", "partition", "index")
_GROUP_LISTS = ("groups", "groups_names")
_I32 = struct.Struct(">i")
_BATCH_HEADER = 61  # bytes of a v2 batch header before its records; the record count sits in the last 4


@dataclass(slots=True)
class Touched:
    topics: set[tuple[str, int]]
    """(topic, partition); partition is -1 when the request names the topic only."""
    groups: set[str]
    records: int
    generation_id: int | None = None
    member_id: str | None = None
    partition_records: dict[tuple[str, int], int] = field(default_factory=dict)
    """Records per (topic, partition) of `records`."""


def count_records(data: Any) -> int:
    """Records in a run of v2 batches (bytes or the stored buffers a fetch returns), from their headers."""
    if data is None:
        return 0
    if isinstance(data, (tuple, list)):
        return sum(count_records(chunk) for chunk in data)
    view = memoryview(data)
    total, pos = 0, 0
    while pos + _BATCH_HEADER <= len(view):
        length = _I32.unpack_from(view, pos + 8)[0]
        if length < _BATCH_HEADER - 12 or view[pos + 16] != 2:  # not a v2 batch: stop rather than guess
            break
        total += max(_I32.unpack_from(view, pos + 57)[0], 0)
        pos += 12 + length
    return total


def _topic_name(item: Mapping[str, Any], name_of_id: Callable[[uuid.UUID], str | None]) -> str | None:
    for key in ("name", "topic"):
        value = item.get(key)
        if isinstance(value, str):
            return value
    topic_id = item.get("topic_id")
    if isinstance(topic_id, uuid.UUID) and topic_id.int:
        return name_of_id(topic_id) or str(topic_id)
    return None


def _walk(node: Any, out: Touched, name_of_id: Callable[[uuid.UUID], str | None], count: bool) -> None:
    if isinstance(node, list):
        for item in node:
            _walk(item, out, name_of_id, count)
        return
    if not isinstance(node, Mapping):
        return
    group = node.get("group_id")
    if isinstance(group, str):
        out.groups.add(group)
    for key in _GROUP_LISTS:
        names = node.get(key)
        if isinstance(names, list):
            out.groups.update(n for n in names if isinstance(n, str))
    for key in _TOPIC_LISTS:
        topics = node.get(key)
        if not isinstance(topics, list):
            continue
        for t in topics:
            if not isinstance(t, Mapping):
                if isinstance(t, str):  # DeleteTopics v0-5 names topics as plain strings
                    out.topics.add((t, -1))
                continue
            name = _topic_name(t, name_of_id)
            if name is None:
                _walk(t, out, name_of_id, count)
                continue
            parts = next((t[k] for k in _PARTITION_LISTS if isinstance(t.get(k), list)), None)
            indexes = t.get("partition_indexes")
            if parts:
                for p in parts:
                    index = next((p[k] for k in _PARTITION_KEYS if isinstance(p.get(k), int)), -1)
                    out.topics.add((name, index))
                    if count:
                        n = count_records(p.get("records"))
                        if n:
                            out.records += n
                            key = (name, index)
                            out.partition_records[key] = out.partition_records.get(key, 0) + n
            elif isinstance(indexes, list) and indexes:
                out.topics.update((name, i) for i in indexes)
            else:
                out.topics.add((name, -1))
    for key, value in node.items():
        if key not in _TOPIC_LISTS and isinstance(value, list) and value and isinstance(value[0], Mapping):
            _walk(value, out, name_of_id, count)


def touched(api_key: int, request: Any, response: Any,
            name_of_id: Callable[[uuid.UUID], str | None] = lambda _: None) -> Touched:
    """What the request named (topics, partitions, groups), the records it carried (Produce) or got back
    (Fetch), and the group generation and member it ended with."""
    out = Touched(set(), set(), 0)
    _walk(request, out, name_of_id, count=api_key == ApiKey.PRODUCE)
    if api_key == ApiKey.FETCH and isinstance(response, Mapping):
        fetched = Touched(set(), set(), 0)
        _walk(response, fetched, name_of_id, count=True)
        out.records, out.partition_records = fetched.records, fetched.partition_records
    if api_key == ApiKey.FIND_COORDINATOR and isinstance(request, Mapping):  # it names a group as its key (v4+: keys)
        key_type = request.get("key_type", 0)
        if key_type == 0:
            keys = request.get("coordinator_keys") or ([request["key"]] if request.get("key") else [])
            out.groups.update(k for k in keys if isinstance(k, str))
    for source in (response, request):
        if not isinstance(source, Mapping):
            continue
        # OffsetCommit and TxnOffsetCommit name it generation_id_or_member_epoch since KIP-848
        generation = source.get("generation_id", source.get("generation_id_or_member_epoch"))
        if out.generation_id is None and isinstance(generation, int) and generation >= 0:
            out.generation_id = generation
        member = source.get("member_id")
        if out.member_id is None and isinstance(member, str) and member:
            out.member_id = member
    return out
