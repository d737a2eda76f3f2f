"""Transactions: AddPartitionsToTxn (24) v0-5, AddOffsetsToTxn (25) v0-4, EndTxn (26) v0-5, WriteTxnMarkers (27) v1
(Kafka 4 dropped v0), TxnOffsetCommit (28) v0-6, DescribeProducers (61) v0, DescribeTransactions (65) v0,
ListTransactions (66) v0-2.

The coordinator's rules are in `fakekafka/model/transactions.py`; these handlers check who is asked (NOT_COORDINATOR
unless this broker leads the id's `__transaction_state` partition, or for TxnOffsetCommit the group's
`__consumer_offsets` partition) and translate errors as Kafka's KafkaApis does for old versions: PRODUCER_FENCED
is INVALID_PRODUCER_EPOCH below AddPartitionsToTxn/AddOffsetsToTxn/EndTxn v2. AddPartitionsToTxn v4+ is the
brokers' batched form (verify_only included); a partition of an unknown topic fails the whole transaction's
request with UNKNOWN_TOPIC_OR_PARTITION for it and OPERATION_NOT_ATTEMPTED for the others. TxnOffsetCommit stages
offsets that the group sees once the transaction commits (written to the group's `__consumer_offsets` partition as a
transactional batch of the producer, settled by the transaction's marker there), after checking (KIP-890 part 1)
that AddOffsetsToTxn added the group: INVALID_TXN_STATE otherwise (TRANSACTION_ABORTABLE from v4); v5+ adds it
itself. EndTxn v5 is transactions version 2 (KIP-890 part 2, chosen by clients from the `transaction.version`
feature ApiVersions finalizes): every end bumps the epoch, and the answer carries the producer id and epoch to use next.
"""

from __future__ import annotations

import re
from typing import Any

from construct import Container

from fakekafka.handlers.authz import authorize, authorize_cluster, filter_authorized
from fakekafka.handlers.common import not_coordinator_of
from fakekafka.handlers.groups import epoch_group
from fakekafka.handlers.groups import not_coordinator as not_group_coordinator
from fakekafka.handlers.registry import ErrorContext, RequestContext, handles
from fakekafka.model.acl import AclOperation, ResourceType
from fakekafka.model.internal_topics import OFFSETS_TOPIC
from fakekafka.model.transactions import TransactionState
from fakekafka.wire import ApiKey, ErrorCode
from fakekafka.wire.primitives import ZERO_UUID


def not_transaction_coordinator(ctx: RequestContext, transactional_id: str) -> bool:
    """True when this broker does not lead the id's `__transaction_state` partition."""
    return not_coordinator_of(ctx, transactional_id, ctx.cluster.transaction_coordinator_for)


def fenced_for(version: int, code: ErrorCode, first_with_fenced: int = 2) -> ErrorCode:
    """Clients older than the version that knows PRODUCER_FENCED get INVALID_PRODUCER_EPOCH (KafkaApis)."""
    if code == ErrorCode.PRODUCER_FENCED and version < first_with_fenced:
        return ErrorCode.INVALID_PRODUCER_EPOCH
    return code


# --- AddPartitionsToTxn ------------------------------------------------------------------------------
def _topic_results(partitions: dict[tuple[str, int], ErrorCode]) -> list[dict[str, Any]]:
    by_topic: dict[str, list[dict[str, Any]]] = {}
    for (topic, index), code in partitions.items():
        by_topic.setdefault(topic, []).append({"partition_index": index, "partition_error_code": code})
    return [{"name": name, "results_by_partition": parts} for name, parts in by_topic.items()]


def _add_one(ctx: RequestContext, transactional_id: str, producer_id: int, epoch: int, topics: list[Container],
             verify_only: bool) -> dict[tuple[str, int], ErrorCode]:
    wanted = [(t.name, p) for t in topics for p in t.partitions]
    if ctx.version >= 4:  # from a broker verifying a Produce: the cluster's own traffic
        if not authorize_cluster(ctx, AclOperation.CLUSTER_ACTION):
            return dict.fromkeys(wanted, ErrorCode.CLUSTER_AUTHORIZATION_FAILED)
    elif not authorize(ctx, AclOperation.WRITE, ResourceType.TRANSACTIONAL_ID, transactional_id):
        return dict.fromkeys(wanted, ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED)
    else:
        writable = filter_authorized(ctx, AclOperation.WRITE, ResourceType.TOPIC, (t for t, _ in wanted))
        if any(t not in writable for t, _ in wanted):
            return {tp: ErrorCode.TOPIC_AUTHORIZATION_FAILED if tp[0] not in writable
                    else ErrorCode.UNKNOWN_TOPIC_OR_PARTITION if ctx.cluster.partition(*tp) is None
                    else ErrorCode.OPERATION_NOT_ATTEMPTED for tp in wanted}
    unknown = {tp for tp in wanted if ctx.cluster.partition(*tp) is None}
    if unknown:
        return {tp: ErrorCode.UNKNOWN_TOPIC_OR_PARTITION if tp in unknown else ErrorCode.OPERATION_NOT_ATTEMPTED
                for tp in wanted}
    if not transactional_id:
        return dict.fromkeys(wanted, ErrorCode.INVALID_REQUEST)
    if not_transaction_coordinator(ctx, transactional_id):
        return dict.fromkeys(wanted, ErrorCode.NOT_COORDINATOR)
    txns = ctx.cluster.transactions
    if verify_only:
        return txns.verify_partitions(transactional_id, producer_id, epoch, set(wanted))
    code = txns.add_partitions(transactional_id, producer_id, epoch, set(wanted))
    return dict.fromkeys(wanted, fenced_for(ctx.version, code))


def add_partitions_error_response(ctx: ErrorContext, req: Container, code: ErrorCode) -> dict[str, Any]:
    if ctx.version >= 4:
        return {"throttle_time_ms": 0, "error_code": code, "results_by_transaction": []}
    return {"throttle_time_ms": 0, "results_by_topic_v3_and_below": _topic_results(
        {(t.name, p): code for t in req.v3_and_below_topics for p in t.partitions})}


@handles(ApiKey.ADD_PARTITIONS_TO_TXN, 0, 5, errors=add_partitions_error_response)
def handle_add_partitions_to_txn(ctx: RequestContext, req: Container) -> dict[str, Any]:
    if ctx.version < 4:
        results = _add_one(ctx, req.v3_and_below_transactional_id, req.v3_and_below_producer_id,
                           req.v3_and_below_producer_epoch, req.v3_and_below_topics, False)
        return {"throttle_time_ms": 0, "results_by_topic_v3_and_below": _topic_results(results)}
    out = []
    for t in req.transactions:
        results = _add_one(ctx, t.transactional_id, t.producer_id, t.producer_epoch, t.topics, t.verify_only)
        if ctx.version < 5:  # TRANSACTION_ABORTABLE is v5's
            results = {tp: ErrorCode.INVALID_TXN_STATE if c == ErrorCode.TRANSACTION_ABORTABLE else c
                       for tp, c in results.items()}
        out.append({"transactional_id": t.transactional_id, "topic_results": _topic_results(results)})
    return {"throttle_time_ms": 0, "error_code": ErrorCode.NONE, "results_by_transaction": out}


# --- AddOffsetsToTxn / EndTxn ----------------------------------------------------------------------
@handles(ApiKey.ADD_OFFSETS_TO_TXN, 0, 4)
def handle_add_offsets_to_txn(ctx: RequestContext, req: Container) -> dict[str, Any]:
    cluster = ctx.cluster
    if not authorize(ctx, AclOperation.WRITE, ResourceType.TRANSACTIONAL_ID, req.transactional_id):
        code = ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
    elif not authorize(ctx, AclOperation.READ, ResourceType.GROUP, req.group_id):
        code = ErrorCode.GROUP_AUTHORIZATION_FAILED
    elif not req.transactional_id:
        code = ErrorCode.INVALID_REQUEST
    elif not_transaction_coordinator(ctx, req.transactional_id):
        code = ErrorCode.NOT_COORDINATOR
    else:
        cluster.coordinator_for(req.group_id)  # makes sure __consumer_offsets exists
        tp = (OFFSETS_TOPIC, cluster.offsets_partition_for(req.group_id))
        code = cluster.transactions.add_partitions(req.transactional_id, req.producer_id, req.producer_epoch, {tp})
    return {"throttle_time_ms": 0, "error_code": fenced_for(ctx.version, code)}


@handles(ApiKey.END_TXN, 0, 5)
def handle_end_txn(ctx: RequestContext, req: Container) -> dict[str, Any]:
    """v5 is transactions version 2: the epoch is bumped at every end and the answer carries the producer id
    and epoch for the next transaction."""
    pid, epoch = -1, -1
    if not authorize(ctx, AclOperation.WRITE, ResourceType.TRANSACTIONAL_ID, req.transactional_id):
        code = ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
    elif not req.transactional_id:
        code = ErrorCode.INVALID_REQUEST
    elif not_transaction_coordinator(ctx, req.transactional_id):
        code = ErrorCode.NOT_COORDINATOR
    elif ctx.version >= 5:
        code, pid, epoch = ctx.cluster.transactions.end_transaction_v2(req.transactional_id, req.producer_id,
                                                                       req.producer_epoch, req.committed)
    else:
        code = ctx.cluster.transactions.end_transaction(req.transactional_id, req.producer_id, req.producer_epoch,
                                                         req.committed)
    return {"throttle_time_ms": 0, "error_code": fenced_for(ctx.version, code), "producer_id": pid,
            "producer_epoch": epoch}


# --- WriteTxnMarkers ------------------------------------------------------------------------------------
def write_txn_markers_error_response(ctx: ErrorContext, req: Container, code: ErrorCode) -> dict[str, Any]:
    return {"markers": [{"producer_id": m.producer_id, "topics": [
        {"name": t.name, "partitions": [{"partition_index": i, "error_code": code} for i in t.partition_indexes]}
        for t in m.topics]} for m in req.markers]}


@handles(ApiKey.WRITE_TXN_MARKERS, 1, 1, errors=write_txn_markers_error_response)
def handle_write_txn_markers(ctx: RequestContext, req: Container) -> dict[str, Any]:
    """What the coordinator sends partition leaders, and what `kafka-transactions abort` sends to end a hanging
    transaction: each partition this broker leads gets the marker."""
    cluster = ctx.cluster
    markers = []
    for m in req.markers:
        topics = []
        for t in m.topics:
            parts = []
            for index in t.partition_indexes:
                partition = cluster.partition(t.name, index)
                if partition is None:
                    code = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
                elif partition.leader_id != ctx.broker.node_id:
                    code = ErrorCode.NOT_LEADER_OR_FOLLOWER
                else:
                    code = cluster.write_marker(partition, m.producer_id, m.producer_epoch, m.transaction_result,
                                                m.coordinator_epoch)
                parts.append({"partition_index": index, "error_code": code})
            topics.append({"name": t.name, "partitions": parts})
        markers.append({"producer_id": m.producer_id, "topics": topics})
    return {"markers": markers}


# --- TxnOffsetCommit ------------------------------------------------------------------------------------
def txn_offset_commit_error_response(ctx: ErrorContext, req: Container, code: ErrorCode) -> dict[str, Any]:
    return {"throttle_time_ms": 0, "topics": [
        {"name": t.get("name", ""), "topic_id": t.get("topic_id", ZERO_UUID),
         "partitions": [{"partition_index": p.partition_index, "error_code": code} for p in t.partitions]}
        for t in req.topics]}


@handles(ApiKey.TXN_OFFSET_COMMIT, 0, 6, errors=txn_offset_commit_error_response)
def handle_txn_offset_commit(ctx: RequestContext, req: Container) -> dict[str, Any]:
    """v0-4 check (KIP-890 part 1) that AddOffsetsToTxn added the group's `__consumer_offsets` partition:
    INVALID_TXN_STATE if not, TRANSACTION_ABORTABLE from v4. v5+ adds it themselves (KIP-890 part 2: Kafka's
    broker does so whatever the cluster's transaction.version), so a client needs no AddOffsetsToTxn; v6 names
    topics by id (UNKNOWN_TOPIC_ID for an unknown one). All as Kafka 4.4 answers
    (tests/conformance/test_api_sweep.py)."""
    cluster = ctx.cluster
    v = ctx.version
    by_id = v >= 6
    if not authorize(ctx, AclOperation.WRITE, ResourceType.TRANSACTIONAL_ID, req.transactional_id):
        return txn_offset_commit_error_response(ctx, req, ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED)
    if not authorize(ctx, AclOperation.READ, ResourceType.GROUP, req.group_id):
        return txn_offset_commit_error_response(ctx, req, ErrorCode.GROUP_AUTHORIZATION_FAILED)
    codes: dict[tuple[Any, int], ErrorCode] = {}
    wanted: dict[tuple[str, int], tuple[int, int, str | None]] = {}
    for t in req.topics:
        topic = cluster.topics_by_id.get(t.topic_id) if by_id else cluster.topics.get(t.name)
        key = t.topic_id if by_id else t.name
        name = topic.name if topic is not None else None if by_id else t.name
        readable = name is None or authorize(ctx, AclOperation.READ, ResourceType.TOPIC, name)
        for p in t.partitions:
            if not readable:
                codes[(key, p.partition_index)] = ErrorCode.TOPIC_AUTHORIZATION_FAILED
            elif topic is None:
                codes[(key, p.partition_index)] = \
                    ErrorCode.UNKNOWN_TOPIC_ID if by_id else ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
            else:
                wanted[(topic.name, p.partition_index)] = (
                    p.committed_offset, p.get("committed_leader_epoch", -1), p.committed_metadata)
    if wanted:
        offsets_tp = (OFFSETS_TOPIC, cluster.offsets_partition_for(req.group_id))
        top = ErrorCode.NONE
        if not_group_coordinator(ctx, req.group_id):
            top = ErrorCode.NOT_COORDINATOR
        else:
            if v >= 5:
                verified = cluster.transactions.add_partitions(req.transactional_id, req.producer_id,
                                                               req.producer_epoch, {offsets_tp}, implicit=True)
            else:
                verified = cluster.transactions.verify_partitions(req.transactional_id, req.producer_id,
                                                                  req.producer_epoch, {offsets_tp})[offsets_tp]
            if verified == ErrorCode.TRANSACTION_ABORTABLE:
                top = ErrorCode.TRANSACTION_ABORTABLE if v >= 4 else ErrorCode.INVALID_TXN_STATE
            elif verified == ErrorCode.PRODUCER_FENCED:
                top = ErrorCode.INVALID_PRODUCER_EPOCH
            elif verified != ErrorCode.NONE:
                top = verified
        coordinator, consumer_group = epoch_group(cluster, req.group_id)
        if top != ErrorCode.NONE:
            committed = dict.fromkeys(wanted, top)
        elif consumer_group is not None:  # KIP-848/1071: the member and its epoch, when the producer names them
            committed = coordinator.txn_commit(
                consumer_group, req.producer_id, req.get("member_id", ""),
                req.get("generation_id_or_member_epoch", -1), wanted, req.producer_epoch)
        else:
            committed = cluster.groups.txn_commit(
                req.group_id, req.producer_id, req.get("generation_id_or_member_epoch", -1),
                req.get("member_id", ""), req.get("group_instance_id"), wanted, req.producer_epoch)
        for (name, index), code in committed.items():
            codes[(cluster.topics[name].topic_id if by_id else name, index)] = code
    return {"throttle_time_ms": 0, "topics": [
        {"name": t.get("name", ""), "topic_id": t.get("topic_id", ZERO_UUID), "partitions": [
            {"partition_index": p.partition_index,
             "error_code": codes[(t.topic_id if by_id else t.name, p.partition_index)]} for p in t.partitions]}
        for t in req.topics]}


# --- tooling: DescribeProducers, DescribeTransactions, ListTransactions -------------------------------------
def describe_producers_error_response(ctx: ErrorContext, req: Container, code: ErrorCode) -> dict[str, Any]:
    return {"throttle_time_ms": 0, "topics": [
        {"name": t.name, "partitions": [{"partition_index": i, "error_code": code, "error_message": None,
                                         "active_producers": []} for i in t.partition_indexes]}
        for t in req.topics]}


@handles(ApiKey.DESCRIBE_PRODUCERS, 0, 0, errors=describe_producers_error_response)
def handle_describe_producers(ctx: RequestContext, req: Container) -> dict[str, Any]:
    cluster = ctx.cluster
    topics = []
    for t in req.topics:
        parts = []
        readable = authorize(ctx, AclOperation.READ, ResourceType.TOPIC, t.name)
        for index in t.partition_indexes:
            partition = cluster.partition(t.name, index)
            if not readable:
                parts.append({"partition_index": index, "error_code": ErrorCode.TOPIC_AUTHORIZATION_FAILED,
                              "error_message": None, "active_producers": []})
                continue
            if partition is None:
                parts.append({"partition_index": index, "error_code": ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
                              "error_message": None, "active_producers": []})
                continue
            if partition.leader_id != ctx.broker.node_id:
                parts.append({"partition_index": index, "error_code": ErrorCode.NOT_LEADER_OR_FOLLOWER,
                              "error_message": None, "active_producers": []})
                continue
            open_txns = partition.log.open_txns
            active = [{"producer_id": pid, "producer_epoch": entry.epoch,
                       "last_sequence": partition.producers.last_sequence(pid),
                       "last_timestamp": entry.last_timestamp, "coordinator_epoch": entry.coordinator_epoch,
                       "current_txn_start_offset": open_txns.get(pid, -1)}
                      for pid, entry in sorted(partition.producers.entries.items())]
            parts.append({"partition_index": index, "error_code": ErrorCode.NONE, "error_message": None,
                          "active_producers": active})
        topics.append({"name": t.name, "partitions": parts})
    return {"throttle_time_ms": 0, "topics": topics}


def describe_transactions_error_response(ctx: ErrorContext, req: Container, code: ErrorCode) -> dict[str, Any]:
    return {"throttle_time_ms": 0, "transaction_states": [
        {"transactional_id": tid, "error_code": code, "transaction_state": "", "transaction_timeout_ms": 0,
         "transaction_start_time_ms": -1, "producer_id": -1, "producer_epoch": -1, "topics": []}
        for tid in req.transactional_ids]}


@handles(ApiKey.DESCRIBE_TRANSACTIONS, 0, 0, errors=describe_transactions_error_response)
def handle_describe_transactions(ctx: RequestContext, req: Container) -> dict[str, Any]:
    txns = ctx.cluster.transactions
    states = []
    for tid in req.transactional_ids:
        state: dict[str, Any] = {"transactional_id": tid, "error_code": ErrorCode.NONE, "transaction_state": "",
                                 "transaction_timeout_ms": 0, "transaction_start_time_ms": -1, "producer_id": -1,
                                 "producer_epoch": -1, "topics": []}
        txn = txns.transactions.get(tid) if tid else None
        if not authorize(ctx, AclOperation.DESCRIBE, ResourceType.TRANSACTIONAL_ID, tid):
            state["error_code"] = ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
        elif not tid:
            state["error_code"] = ErrorCode.INVALID_REQUEST
        elif not_transaction_coordinator(ctx, tid):
            state["error_code"] = ErrorCode.NOT_COORDINATOR
        elif txn is None or txn.state == TransactionState.DEAD:
            state["error_code"] = ErrorCode.TRANSACTIONAL_ID_NOT_FOUND
        else:
            by_topic: dict[str, list[int]] = {}
            for topic, index in sorted(txn.partitions):
                by_topic.setdefault(topic, []).append(index)
            state.update(transaction_state=txn.state.value, transaction_timeout_ms=txn.timeout_ms,
                         transaction_start_time_ms=txn.start_ms, producer_id=txn.producer_id,
                         producer_epoch=txn.producer_epoch,
                         topics=[{"topic": t, "partitions": p} for t, p in by_topic.items()])
        states.append(state)
    return {"throttle_time_ms": 0, "transaction_states": states}


@handles(ApiKey.LIST_TRANSACTIONS, 0, 2)
def handle_list_transactions(ctx: RequestContext, req: Container) -> dict[str, Any]:
    """The transactions whose coordinator is this broker (a tool asks every broker), filtered as asked. v2's
    transactional_id_pattern (KIP-1152) is a regular expression the whole id must match, as Java's
    Pattern.matches; null or empty lists every id, and one that does not compile is INVALID_REGULAR_EXPRESSION
    (Python's `re` stands in for Java's: the common syntax is the same)."""
    cluster = ctx.cluster
    pattern = None
    if req.get("transactional_id_pattern"):
        try:
            pattern = re.compile(req.transactional_id_pattern)
        except re.error:
            return {"throttle_time_ms": 0, "error_code": ErrorCode.INVALID_REGULAR_EXPRESSION,
                    "unknown_state_filters": [], "transaction_states": []}
    known = {s.value for s in TransactionState}
    unknown = [s for s in req.state_filters if s not in known]
    states = set(req.state_filters)
    pids = set(req.producer_id_filters)
    duration = req.get("duration_filter", -1)
    now = cluster.clock.now_ms()
    out = []
    for tid, txn in sorted(cluster.transactions.transactions.items()):
        if txn.state == TransactionState.DEAD or not_transaction_coordinator(ctx, tid):
            continue
        if (states and txn.state.value not in states) or (pids and txn.producer_id not in pids):
            continue
        if pattern is not None and not pattern.fullmatch(tid):
            continue
        if duration >= 0 and (txn.state != TransactionState.ONGOING or now - txn.start_ms < duration):
            continue
        if not authorize(ctx, AclOperation.DESCRIBE, ResourceType.TRANSACTIONAL_ID, tid):
            continue
        out.append({"transactional_id": tid, "producer_id": txn.producer_id, "transaction_state": txn.state.value})
    return {"throttle_time_ms": 0, "error_code": ErrorCode.NONE, "unknown_state_filters": unknown,
            "transaction_states": out}
