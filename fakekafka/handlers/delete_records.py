"""DeleteRecords (key 21), v0-2.

Moves each partition's log start offset up to the requested offset (-1: the high watermark), as Kafka's
Partition.deleteRecordsOnLeader: past the high watermark is OFFSET_OUT_OF_RANGE, a topic whose
cleanup.policy lacks "delete" gets POLICY_VIOLATION, an offset at or below the current start changes
nothing; the answer's low_watermark is the log start afterwards. Whole batches below the start are
dropped and Fetch refuses offsets below it. Behaviour: answered at once, since the model's live
followers take the new start in the same step (Kafka parks the request, up to timeout_ms, until every
live replica has). A topic named twice is answered in one entry and a partition named twice once, with the
last offset given, as Kafka's (it reads the request into a map).
"""

from __future__ import annotations

from typing import Any

from construct import Container

from fakekafka.handlers.common import led_partitions, merged
from fakekafka.handlers.registry import ErrorContext, RequestContext, handles
from fakekafka.model.acl import AclOperation
from fakekafka.model.errors import ApiError
from fakekafka.wire import ApiKey, ErrorCode


def delete_records_error_response(ctx: ErrorContext, req: Container, code: ErrorCode) -> dict[str, Any]:
    """No top-level error code: every partition asked about carries it."""
    return {"throttle_time_ms": 0, "topics": [
        {"name": t.name, "partitions": [{"partition_index": p.partition_index, "low_watermark": -1, "error_code": code}
                                        for p in t.partitions]}
        for t in req.topics]}


@handles(ApiKey.DELETE_RECORDS, 0, 2, errors=delete_records_error_response)
def handle_delete_records(ctx: RequestContext, req: Container) -> dict[str, Any]:
    topics = []
    for name, parts in merged(req.topics):
        results = []
        for p, partition, code in led_partitions(ctx, name, parts, duplicates_invalid=False,
                                                  operation=AclOperation.DELETE):
            low = -1
            if code == ErrorCode.NONE:
                assert partition is not None
                try:
                    low = ctx.cluster.delete_records(partition, p.offset)
                except ApiError as e:
                    code = e.code
            results.append({"partition_index": p.partition_index, "low_watermark": low, "error_code": code})
        topics.append({"name": name, "partitions": results})
    return {"throttle_time_ms": 0, "topics": topics}
