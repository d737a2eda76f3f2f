"""ListOffsets (key 2), v1-11.

Timestamps: -1 latest (the high watermark; the last stable offset under read_committed), -2 earliest (log start),
-3 max timestamp (v7+), -4 earliest local (v8+, the log start: nothing is tiered), -5 latest tiered (v9+, -1:
nothing is tiered), -6 earliest pending upload (v11+, KIP-1023; -1: nothing waits for tiered storage); any other
negative timestamp, or one its version does not know, is UNSUPPORTED_VERSION, as Kafka 4.4 answers; otherwise
the first offset whose timestamp is >= the target, or -1 if there is none. A topic
named twice is answered in one entry and a partition asked for twice once, with INVALID_REQUEST (Kafka's). An error
injected by a test is answered for every partition asked about (there is no top-level error code)."""

from __future__ import annotations

from typing import Any

from construct import Container

from fakekafka.handlers.common import led_partitions, merged
from fakekafka.handlers.registry import ErrorContext, RequestContext, handles
from fakekafka.model.acl import AclOperation
from fakekafka.model.log import PartitionLog
from fakekafka.wire import ApiKey, ErrorCode

LATEST, EARLIEST, MAX_TIMESTAMP, EARLIEST_LOCAL, LATEST_TIERED, EARLIEST_PENDING_UPLOAD = -1, -2, -3, -4, -5, -6
SINCE_VERSION = {LATEST: 0, EARLIEST: 0, MAX_TIMESTAMP: 7, EARLIEST_LOCAL: 8, LATEST_TIERED: 9,
                 EARLIEST_PENDING_UPLOAD: 11}
"""The first version that knows each special timestamp."""


def _epoch_at(log: PartitionLog, offset: int) -> int:
    epoch = -1
    for e in log.epochs:
        if e.start_offset > offset:
            break
        epoch = e.epoch
    return epoch


def _lookup(log: PartitionLog, timestamp: int, current_epoch: int,
            read_committed: bool = False) -> tuple[ErrorCode, int, int, int]:
    """(error, timestamp, offset, leader epoch)."""
    if timestamp == LATEST:
        return ErrorCode.NONE, -1, log.last_stable_offset if read_committed else log.high_watermark, current_epoch
    if timestamp in (EARLIEST, EARLIEST_LOCAL):
        return ErrorCode.NONE, -1, log.log_start_offset, _epoch_at(log, log.log_start_offset) \
            if log.log_end_offset > log.log_start_offset else current_epoch
    if timestamp in (LATEST_TIERED, EARLIEST_PENDING_UPLOAD):
        return ErrorCode.NONE, -1, -1, -1
    if timestamp == MAX_TIMESTAMP:
        found = log.max_timestamp_offset()
    else:
        found = log.offset_for_timestamp(timestamp)
    if found is None:
        return ErrorCode.NONE, -1, -1, -1
    return ErrorCode.NONE, found[1], found[0], _epoch_at(log, found[0])


def list_offsets_error_response(ctx: ErrorContext, req: Container, code: ErrorCode) -> dict[str, Any]:
    return {"throttle_time_ms": 0, "topics": [
        {"name": t.name, "partitions": [{"partition_index": p.partition_index, "error_code": code, "timestamp": -1,
                                         "offset": -1, "leader_epoch": -1} for p in t.partitions]}
        for t in req.topics]}


@handles(ApiKey.LIST_OFFSETS, 1, 11, errors=list_offsets_error_response)
def handle_list_offsets(ctx: RequestContext, req: Container) -> dict[str, Any]:
    v = ctx.version
    topics = []
    for name, parts in merged(req.topics):
        results = []
        for p, partition, code in led_partitions(ctx, name, parts, duplicates_invalid=True,
                                                  operation=AclOperation.DESCRIBE):
            ts, offset, epoch = -1, -1, -1
            if code == ErrorCode.NONE:
                assert partition is not None
                if p.timestamp < 0 and v < SINCE_VERSION.get(p.timestamp, 1 << 15):
                    code = ErrorCode.UNSUPPORTED_VERSION
                else:
                    code, ts, offset, epoch = _lookup(partition.log, p.timestamp, partition.leader_epoch,
                                                      req.get("isolation_level", 0) == 1)
            results.append({"partition_index": p.partition_index, "error_code": code, "timestamp": ts,
                            "offset": offset, "leader_epoch": epoch})
        topics.append({"name": name, "partitions": results})
    return {"throttle_time_ms": 0, "topics": topics}
