"""Produce (key 0): advertised v0-13, accepted v3-13.

Advertised from v0 because librdkafka turns compression off when a broker's Produce range does not start at 0
(Kafka 4.0 does the same, KAFKA-18659); v0-2 (message formats v0/v1) get UNSUPPORTED_VERSION per partition. An
unknown topic is UNKNOWN_TOPIC_OR_PARTITION whatever its name and the auto-creation setting (Kafka creates topics
on Metadata requests, never on Produce), and a partition's error message is set only for a record validation error,
as Kafka's. Deliberate difference: Kafka 4 closes the connection on Produce v0-2 instead (its socket server treats
them as unsupported); an answer tells an old client why, where a dropped connection only makes it retry. acks=0
gets no response; when a partition fails, the connection is closed instead, as Kafka does (the client's only way to
notice). Each partition must carry exactly one v2 batch (Kafka's rule). acks=-1 is refused with NOT_ENOUGH_REPLICAS
when the ISR is below min.insync.replicas, otherwise waits (parked, not blocking) until the high watermark passes
the batch, then reports NOT_ENOUGH_REPLICAS_AFTER_APPEND if the ISR shrank meanwhile, or REQUEST_TIMED_OUT after
timeout_ms. A compacted topic refuses a batch with a record without a key: INVALID_RECORD, with the record errors
and message Kafka's LogValidator gives; so does a batch with a timestamp outside
message.timestamp.before/after.max.ms (INVALID_TIMESTAMP, one record error per such record), and both answers carry
the partition's log start offset, as Kafka's do. A transactional batch that opens its producer's transaction on a
partition is checked with the transaction coordinator first (KIP-890 part 1): a partition not added to the
transaction is INVALID_TXN_STATE (TRANSACTION_ABORTABLE from v11), a stale epoch INVALID_PRODUCER_EPOCH, a
transaction still ending NOT_ENOUGH_REPLICAS (retriable), as Kafka's ReplicaManager. From v12 (transactions version
2, KIP-890 part 2) that first batch adds the partition to the transaction itself, as Kafka's broker does for such a
producer; v13 names topics by id (UNKNOWN_TOPIC_ID for an unknown one). With an authorizer, transactional batches
need WRITE on the transactional id (else every partition is TRANSACTIONAL_ID_AUTHORIZATION_FAILED) and each topic
WRITE (else its partitions are TOPIC_AUTHORIZATION_FAILED, whether it exists or not). Batches are checked as Kafka
4.4 checks them (fakekafka/model/validate.py), including the first-batch faults for which Kafka fails every
partition of the request."""

from __future__ import annotations

from typing import Any

from construct import Container

from fakekafka.handlers.authz import authorize
from fakekafka.handlers.registry import NO_RESPONSE, DropConnection, ErrorContext, Park, RequestContext, handles
from fakekafka.handlers.throttling import record_bytes
from fakekafka.model.acl import AclOperation, ResourceType
from fakekafka.model.client_quotas import QuotaType
from fakekafka.model.validate import first_batch_refusal, request_refusal
from fakekafka.wire import ApiKey, ErrorCode


def _partition_result(index: int, code: ErrorCode, message: str | None = None, base_offset: int = -1,
                      log_append_time: int = -1, log_start_offset: int = -1) -> dict[str, Any]:
    return {"index": index, "error_code": code, "base_offset": base_offset, "log_append_time_ms": log_append_time,
            "log_start_offset": log_start_offset, "record_errors": [], "error_message": message}


def _transactional(records: bytes | None) -> bool:
    """The batch's transactional attribute bit (a v2 batch's attributes are bytes 21-22)."""
    return records is not None and len(records) > 22 and bool(records[22] & 0x10)


def _topic_key(ctx: RequestContext | ErrorContext, t: Container) -> dict[str, Any]:
    """How a topic is named in the answer: by name, or (v13+) by id."""
    return {"topic_id": t.topic_id} if ctx.version >= 13 else {"name": t.name}


def produce_error_response(ctx: ErrorContext, req: Container, code: ErrorCode,
                           message: str | None = None) -> dict[str, Any]:
    return {"responses": [{**_topic_key(ctx, t), "partition_responses": [_partition_result(p.index, code, message)
                                                                         for p in t.partition_data]}
                          for t in req.topic_data], "throttle_time_ms": 0}


def _timestamp_errors(ctx: RequestContext, topic: Any, records: bytes) -> tuple[list[tuple[int, str]], str]:
    """A batch refused with INVALID_TIMESTAMP: one record error per record out of range and the message, as
    Kafka's LogValidator gives them (the partition answer also carries the log start offset, as Kafka's
    does for a record validation error; found by `python -m compat diff`)."""
    from fakekafka.wire.records import decode_batch
    cluster = ctx.cluster
    now = cluster.clock.now_ms()
    before, after = cluster.topic_configs.timestamp_bounds(topic)
    lo, hi = now - before, now + after
    errors = []
    try:
        recs = decode_batch(bytes(records)).records
    except Exception:  # noqa: BLE001 - the model refused it already; the answer still says why
        recs = []
    for i, rec in enumerate(recs):
        if not lo <= rec.timestamp <= hi:
            errors.append((i, f"Timestamp {rec.timestamp} of message with offset {rec.offset} is out of range. "
                              f"The timestamp should be within [{lo}, {hi}]"))
    return errors, "One or more records have been rejected due to invalid timestamp"


@handles(ApiKey.PRODUCE, 3, 13, advertise_from=0, errors=produce_error_response)
def handle_produce(ctx: RequestContext, req: Container) -> Any:
    cluster = ctx.cluster
    if req.acks not in (-1, 0, 1):
        return produce_error_response(ctx, req, ErrorCode.INVALID_REQUIRED_ACKS)
    refused = request_refusal((p.records for t in req.topic_data for p in t.partition_data), ctx.version)
    if refused is not None:  # Kafka fails the whole request, nothing appended (fakekafka/model/validate.py)
        if req.acks == 0:
            return DropConnection(reason=f"acks=0 and {refused.error.name}")
        return produce_error_response(ctx, req, refused.error, refused.message if refused.shown else None)
    if any(_transactional(p.records) for t in req.topic_data for p in t.partition_data) and (
            req.transactional_id is None
            or not authorize(ctx, AclOperation.WRITE, ResourceType.TRANSACTIONAL_ID, req.transactional_id)):
        if req.acks == 0:
            return DropConnection(reason="acks=0 and TRANSACTIONAL_ID_AUTHORIZATION_FAILED")
        return produce_error_response(ctx, req, ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED)
    responses = []
    waiting: list[tuple[Any, int, dict[str, Any]]] = []
    by_id = ctx.version >= 13
    verification = "add" if ctx.version >= 12 else "abortable" if ctx.version >= 11 else "verify"
    for t in req.topic_data:
        # never created here: Kafka auto-creates on Metadata only
        topic = cluster.topics_by_id.get(t.topic_id) if by_id else cluster.topics.get(t.name)
        code = ErrorCode.UNKNOWN_TOPIC_ID if by_id else ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
        results = []
        writable = authorize(ctx, AclOperation.WRITE, ResourceType.TOPIC, topic.name if by_id and topic else t.name) \
            if topic is not None or not by_id else True
        for p in t.partition_data:
            if not writable:  # before its existence is looked at: Kafka does not disclose it
                results.append(_partition_result(p.index, ErrorCode.TOPIC_AUTHORIZATION_FAILED))
                continue
            partition = topic.partitions[p.index] if topic and 0 <= p.index < len(topic.partitions) else None
            if partition is None:
                results.append(_partition_result(p.index, code))
                continue
            if (refused := first_batch_refusal(p.records, ctx.version)) is not None:
                results.append(_partition_result(p.index, refused.error))
                continue
            if partition.leader_id != ctx.broker.node_id:
                results.append(_partition_result(p.index, ErrorCode.NOT_LEADER_OR_FOLLOWER))
                continue
            r = cluster.append(partition, p.records, req.acks, req.transactional_id, verification)
            record_errors, message, log_start = r.record_errors, r.message, r.log_start_offset
            if r.error == ErrorCode.INVALID_TIMESTAMP and not record_errors:
                record_errors, message = _timestamp_errors(ctx, topic, p.records)
                log_start = partition.log.log_start_offset
            # Kafka's answer carries a message only for a record validation error (with record errors)
            result = _partition_result(p.index, r.error, message if record_errors or r.answer_message else None,
                                       r.base_offset,
                                       r.log_append_time, log_start)
            result["record_errors"] = [{"batch_index": i, "batch_index_error_message": m} for i, m in record_errors]
            results.append(result)
            if req.acks == -1 and r.error == ErrorCode.NONE:
                end = partition.log.batch_end(r.base_offset)
                waiting.append((partition, end, result))
        responses.append({**_topic_key(ctx, t), "partition_responses": results})
    response = {"responses": responses, "throttle_time_ms": 0}
    record_bytes(ctx, QuotaType.PRODUCE, ctx.request_bytes, response)  # acks=0 too: its channel is muted
    if req.acks == 0:  # no answer to carry an error: Kafka closes the connection so the client notices
        failed = sorted({ErrorCode(r["error_code"]).name for t in responses for r in t["partition_responses"]
                         if r["error_code"] != ErrorCode.NONE})
        return DropConnection(applied=True, reason=f"acks=0 and {', '.join(failed)}") if failed else NO_RESPONSE
    if not waiting:
        return response
    node_id = ctx.broker.node_id
    deadline = cluster.clock.now_ms() + max(req.timeout_ms, 0)

    def complete(timed_out: bool) -> Any:
        """acks=-1: done once the high watermark passes the batch, as Kafka's DelayedProduce."""
        pending = False
        for partition, end, result in waiting:
            if result["error_code"] != ErrorCode.NONE or result.get("_done"):
                continue
            if partition.leader_id != node_id:
                result["error_code"] = ErrorCode.NOT_LEADER_OR_FOLLOWER
            elif partition.log.high_watermark >= end:
                result["_done"] = True
                if len(partition.isr) < cluster.min_insync_replicas(partition):
                    result["error_code"] = ErrorCode.NOT_ENOUGH_REPLICAS_AFTER_APPEND
            elif timed_out:
                result["error_code"] = ErrorCode.REQUEST_TIMED_OUT
            else:
                pending = True
        if pending:
            return Park(None, [w[0] for w in waiting], complete, clock_deadline=deadline)
        for _, _, result in waiting:
            result.pop("_done", None)
        return response

    return complete(False)
