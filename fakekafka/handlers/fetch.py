"""Fetch (key 1), v4-18.

Returns stored batch bytes untouched. Behaviour: fetch sessions are declined (we answer session id 0, so clients
keep sending full requests; an incremental request gets FETCH_SESSION_ID_NOT_FOUND). Consumers read below the high
watermark only; an offset up to the log end is valid (empty answer) and past it (or below the log start) is
OFFSET_OUT_OF_RANGE, whose partition answer carries -1 as high watermark, last stable offset and log start offset,
as Kafka's does (checked with `python -m compat diff`): the client learns the offsets from ListOffsets when it
resets. Only whole batches are returned: the first batch of the response always, and any partition's first batch
even past its partition_max_bytes while it fits the response's max_bytes, so a consumer always progresses. A fetch
with less than min_bytes parks until data arrives or max_wait_ms passes. v13+ addresses topics by id
(UNKNOWN_TOPIC_ID for an unknown one). The client's current leader epoch is checked from v9, the version that
carries it. From v11 a follower answers too, from its own log below its own high watermark (as Kafka's does for a
consumer whose request carries client metadata), and the leader's broker never names a preferred read replica (no
replica.selector.class); from v12 a last_fetched_epoch the leader cannot place (newer than its own) is
OFFSET_OUT_OF_RANGE, as in Kafka. A topic named twice is answered in one entry and a partition asked for twice once
(the last entry), as Kafka's. Under read_committed a consumer reads below the last stable offset only (no open
transaction's records, nor an ended one's before its marker is replicated), and is told the aborted transactions
from the fetch offset on; control batches are returned like any other, so clients skip them and drop aborted data.
With an authorizer, a topic the consumer may not READ is TOPIC_AUTHORIZATION_FAILED for each partition asked for (an
unknown topic id stays UNKNOWN_TOPIC_ID). v18 adds only a follower's high watermark (a tagged field, KIP-1166),
which a consumer does not send and no broker here needs."""

from __future__ import annotations

from typing import Any

from construct import Container

from fakekafka.handlers.authz import authorize
from fakekafka.handlers.common import epoch_check, leader_check, merged
from fakekafka.handlers.registry import Again, ErrorContext, RequestContext, handles
from fakekafka.handlers.throttling import fetch_allowance, record_bytes, unrecord_bytes
from fakekafka.model.acl import AclOperation, ResourceType
from fakekafka.model.client_quotas import QuotaType
from fakekafka.model.log import PartitionLog
from fakekafka.model.metadata import Partition
from fakekafka.wire import ApiKey, ErrorCode
from fakekafka.wire.primitives import Chunks

READ_COMMITTED = 1
UNKNOWN = (ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, ErrorCode.UNKNOWN_TOPIC_ID, ErrorCode.TOPIC_AUTHORIZATION_FAILED)
"""Refused before any log is read: Kafka's answer for these has aborted_transactions [] (its default), not the
null of a read_uncommitted read (checked against Kafka 4.4 by tests/conformance/test_api_sweep.py)."""


def _partition_response(index: int, code: ErrorCode, log: PartitionLog | None = None,
                        records: Chunks | None = None, read_committed: bool = False,
                        aborted: list[dict[str, int]] | None = None) -> dict[str, Any]:
    log = log if code == ErrorCode.NONE else None  # errors: -1s, as Kafka
    return {
        "partition_index": index,
        "error_code": code,
        "high_watermark": log.high_watermark if log else -1,
        "last_stable_offset": log.last_stable_offset if log else -1,
        "log_start_offset": log.log_start_offset if log else -1,
        "aborted_transactions": (aborted or []) if read_committed or code in UNKNOWN else None,
        "preferred_read_replica": -1,
        "records": records if records is not None else b"",
    }


def replica_check(ctx: RequestContext, partition: Partition | None, current_leader_epoch: int) -> ErrorCode:
    """NONE if this broker may answer a consumer's fetch of `partition`: as its leader, or from v11 (KIP-392) as
    any replica holding a log of it, whose own high watermark bounds the read — Kafka's fetchOnlyLeader holds only
    for consumers without client metadata, which v11+ requests carry. The epoch is checked first, as Kafka's
    Partition.localLogWithEpochOrThrow does."""
    if partition is None or partition.leader_id == ctx.broker.node_id or ctx.version < 11:
        return leader_check(ctx, partition, current_leader_epoch)
    if ctx.broker.node_id not in partition.logs or ctx.broker.node_id not in partition.replicas:
        return ErrorCode.NOT_LEADER_OR_FOLLOWER
    return epoch_check(partition, current_leader_epoch)


def fetch_error_response(ctx: ErrorContext, req: Container, code: ErrorCode) -> dict[str, Any]:
    """Top-level in v7+; older versions have no top-level error code, so every partition carries it."""
    if ctx.version >= 7:
        return {"throttle_time_ms": 0, "error_code": code, "session_id": 0, "responses": []}
    return {"throttle_time_ms": 0, "responses": [
        {"topic": t.topic, "partitions": [_partition_response(p.partition, code) for p in t.partitions]}
        for t in req.topics]}


@handles(ApiKey.FETCH, 4, 18, errors=fetch_error_response)
def handle_fetch(ctx: RequestContext, req: Container) -> Any:
    v = ctx.version
    cluster = ctx.cluster
    if v >= 7:
        if req.session_id != 0:
            return fetch_error_response(ctx, req, ErrorCode.FETCH_SESSION_ID_NOT_FOUND)
        if req.session_epoch not in (-1, 0):
            return fetch_error_response(ctx, req, ErrorCode.INVALID_FETCH_SESSION_EPOCH)
    read_committed = req.isolation_level == READ_COMMITTED
    max_bytes = min(req.max_bytes if req.max_bytes > 0 else 0x7FFFFFFF, cluster.config.fetch_max_bytes)
    if (allowance := fetch_allowance(ctx)) is not None:  # no more than the consumer's quota window holds
        max_bytes = min(max_bytes, allowance)

    # resolve once; the log itself is re-read when a parked fetch resumes
    # a topic named twice is one entry, a partition asked for twice is fetched once (Kafka's map, last entry)
    key = "topic_id" if v >= 13 else "topic"
    wanted: list[tuple[Any, Any, list[tuple[Container, Partition | None, ErrorCode]]]] = []
    for name_or_id, entries in merged(req.topics, key, "partition"):
        if v >= 13:
            topic = cluster.topics_by_id.get(name_or_id)
            missing = ErrorCode.UNKNOWN_TOPIC_ID
        else:
            topic = cluster.topics.get(name_or_id)
            missing = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
        parts = []
        name = topic.name if v >= 13 and topic is not None else name_or_id
        readable = (v >= 13 and topic is None) or authorize(ctx, AclOperation.READ, ResourceType.TOPIC, name)
        for p, _ in entries:
            partition = topic.partitions[p.partition] if topic and 0 <= p.partition < len(topic.partitions) else None
            code = ErrorCode.TOPIC_AUTHORIZATION_FAILED if not readable else missing if topic is None \
                else replica_check(ctx, partition, p.get("current_leader_epoch", -1))
            parts.append((p, partition, code))
        wanted.append((name_or_id, topic, parts))
    watched = [partition for _, _, parts in wanted for _, partition, code in parts if code == ErrorCode.NONE]

    def build(final: bool) -> Any:
        total = 0
        errors = False
        responses = []
        for name_or_id, _topic, parts in wanted:
            results = []
            for p, partition, code in parts:
                if code != ErrorCode.NONE:
                    errors = True
                    results.append(_partition_response(p.partition, code))
                    continue
                assert partition is not None
                log = partition.logs[ctx.broker.node_id] if partition.leader_id != ctx.broker.node_id \
                    else partition.log
                upper = log.last_stable_offset if read_committed else log.high_watermark
                if v >= 12 and p.last_fetched_epoch >= 0:
                    epoch, end = log.end_offset_for_epoch(p.last_fetched_epoch, partition.leader_epoch)
                    if end < 0:  # an epoch the leader never had: Kafka cannot tell where it ended
                        errors = True
                        results.append(_partition_response(p.partition, ErrorCode.OFFSET_OUT_OF_RANGE, log))
                        continue
                    if epoch != p.last_fetched_epoch or end < p.fetch_offset:
                        errors = True
                        r = _partition_response(p.partition, ErrorCode.NONE, log, None, read_committed)
                        r["diverging_epoch"] = {"epoch": epoch, "end_offset": end}
                        results.append(r)
                        continue
                # after the divergence check, as Kafka's Partition.readRecords
                if p.fetch_offset < log.log_start_offset or p.fetch_offset > log.log_end_offset:
                    errors = True
                    results.append(_partition_response(p.partition, ErrorCode.OFFSET_OUT_OF_RANGE, log))
                    continue
                left = max_bytes - total
                batches = log.read(p.fetch_offset, min(p.partition_max_bytes, left), min_one=total == 0,
                                   upper=upper, one_segment=True) if left > 0 else []
                if not batches and 0 < left and p.fetch_offset < upper:
                    batches = log.read(p.fetch_offset, left, min_one=False, upper=upper, one_segment=True)[:1]
                data = Chunks(batches)
                total += data.nbytes
                aborted = None
                if read_committed and batches and log.aborted:
                    # from the fetch offset to the log end, as Kafka's sparse offset index makes it for a log
                    # under index.interval.bytes (beyond that Kafka stops sooner; clients skip the extras)
                    aborted = [{"producer_id": a.producer_id, "first_offset": a.first_offset}
                               for a in log.aborted_between(p.fetch_offset, log.log_end_offset)]
                results.append(_partition_response(p.partition, ErrorCode.NONE, log, data, read_committed, aborted))
            responses.append({key: name_or_id, "partitions": results})
        if final or errors or total >= req.min_bytes or req.max_wait_ms <= 0 or not watched:
            response = {"throttle_time_ms": 0, "error_code": ErrorCode.NONE, "session_id": 0, "responses": responses}
            if record_bytes(ctx, QuotaType.FETCH, total, response):  # over its quota: answered empty, not counted
                unrecord_bytes(ctx, QuotaType.FETCH, total)
                response["responses"] = []
            return response
        return None  # not yet: parked (`Again`)

    return Again(build, req.max_wait_ms, watched)(False)
