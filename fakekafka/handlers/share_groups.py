"""Share groups (KIP-932): ShareGroupHeartbeat (key 76) v1, ShareGroupDescribe (77) v1, ShareFetch (78) v1-2,
ShareAcknowledge (79) v1-2, DescribeShareGroupOffsets (90) v0-1, AlterShareGroupOffsets (91) v0 and
DeleteShareGroupOffsets (92) v0: the versions Kafka 4.4 serves (v0 of the first four was KIP-932's early
access, which Kafka 4.4 no longer advertises). State lives in fakekafka/model/share.py.

The heartbeat and the group APIs go to the group's coordinator (NOT_COORDINATOR elsewhere); ShareFetch and
ShareAcknowledge to each partition's leader (NOT_LEADER_OR_FOLLOWER with the current leader and its endpoint
otherwise). A share session is a member's on one broker: epoch 0 opens it (acknowledgements are refused
then), each later request carries the next epoch, -1 closes it (ShareFetch then only acknowledges); a
ShareAcknowledge at epoch 0 is INVALID_SHARE_SESSION_EPOCH. Acknowledgements are refused as Kafka 4.4's
share-partition refuses them, in its words (tests/unit/handlers/test_share_acknowledge.py, compared with Kafka by
raw requests): INVALID_REQUEST without words for a malformed batch or batches out of order, with words for one
reaching past the records in flight; nothing done for one wholly below the share-partition start offset;
INVALID_RECORD_STATE for records not acquired by the member, worded per in-flight batch (the new records one
fetch acquired) or, once an acknowledgement took part of that batch, per offset; a refusal undoes the
partition's earlier batches of the same request.
A ShareFetch with nothing to acquire waits up to max_wait_ms for records (or for released or expired ones).
The group config share.isolation.level bounds what a share-partition acquires: the high watermark under
read_uncommitted (the default), the last stable offset under read_committed, where the batches of aborted
transactions are sent but archived, not acquired; transaction markers are acquired under both (the clients
acknowledge them as gaps), as Kafka 4.4 answers. share.auto.offset.reset latest starts a share-partition at the
high watermark under either level (Kafka 4.4 looks the latest offset up read_uncommitted), so records of a
transaction open at that moment are never delivered, even once committed (tests/integration/clients/
test_share_groups_confluent.py, on both brokers).

Deliberate differences from Kafka 4.4 (compat/KNOWN_DIFFERENCES.md, "Share groups"):
- The share-partition state is written to `__share_group_state` synchronously (fakekafka/model/share_state.py),
  with its InitializeShareGroupState snapshot written at the share-partition's first change, not at the
  assignment; DescribeShareGroupOffsets answers from the share-partition itself.
- share.auto.offset.reset by_duration is taken as latest.

With an authorizer, as Kafka 4.4's KafkaApis, before anything else: ShareGroupHeartbeat, ShareFetch,
ShareAcknowledge and AlterShareGroupOffsets need READ on the group, ShareGroupDescribe and
DescribeShareGroupOffsets DESCRIBE, DeleteShareGroupOffsets DELETE (else GROUP_AUTHORIZATION_FAILED). A heartbeat
naming a topic the member may not DESCRIBE is TOPIC_AUTHORIZATION_FAILED; ShareFetch and ShareAcknowledge answer
a partition of a topic it may not READ TOPIC_AUTHORIZATION_FAILED (fetching and acknowledging nothing there);
Alter/DeleteShareGroupOffsets refuse topics without READ, DescribeShareGroupOffsets those without DESCRIBE (left
out of a describe of every offset), listed before the others as Kafka lists them; a ShareGroupDescribe hides
groups assigned topics the client may not describe, as ConsumerGroupDescribe does.
"""

from __future__ import annotations

import uuid
from dataclasses import replace
from typing import Any

from construct import Container

from fakekafka.handlers.authz import authorize, authorized_operations, filter_authorized
from fakekafka.handlers.common import leader_check
from fakekafka.handlers.consumer_groups import refused_first_and_topics_hidden
from fakekafka.handlers.groups import may, not_coordinator
from fakekafka.handlers.registry import Again, ErrorContext, RequestContext, handles
from fakekafka.model.acl import AclOperation, ResourceType
from fakekafka.model.metadata import Partition
from fakekafka.model.share import ShareGroup
from fakekafka.wire import ApiKey, ErrorCode
from fakekafka.wire.primitives import Chunks

ZERO_UUID = uuid.UUID(int=0)
FINAL_EPOCH = -1


def _assignment(ctx: RequestContext, assignment: dict[uuid.UUID, list[int]]) -> dict[str, Any]:
    return {"topic_partitions": [{"topic_id": t, "partitions": ps} for t, ps in sorted(assignment.items(),
                                                                                       key=lambda kv: str(kv[0]))]}


def _named(ctx: RequestContext, assignment: dict[uuid.UUID, list[int]]) -> dict[str, Any]:
    """A described member's assignment, each topic by id and name."""
    return {"topic_partitions": [
        {"topic_id": t, "topic_name": topic.name, "partitions": ps} for t, ps in sorted(
            assignment.items(), key=lambda kv: str(kv[0])) if (topic := ctx.cluster.topics_by_id.get(t)) is not None]}


@handles(ApiKey.SHARE_GROUP_HEARTBEAT, 1, 1)
def handle_share_group_heartbeat(ctx: RequestContext, req: Container) -> dict[str, Any]:
    cluster = ctx.cluster
    base = {"throttle_time_ms": 0, "error_code": ErrorCode.NONE, "error_message": None, "member_id": None,
            "member_epoch": 0, "heartbeat_interval_ms": 0, "assignment": None}
    if not may(ctx, AclOperation.READ, req.group_id):
        return {**base, "error_code": ErrorCode.GROUP_AUTHORIZATION_FAILED}
    if not req.member_id or len(req.member_id) > 36:  # Kafka's words for it are not sent
        return {**base, "error_code": ErrorCode.INVALID_REQUEST}
    names = set(req.subscribed_topic_names or ())
    if names and filter_authorized(ctx, AclOperation.DESCRIBE, ResourceType.TOPIC, names) != names:
        return {**base, "error_code": ErrorCode.TOPIC_AUTHORIZATION_FAILED}
    if not_coordinator(ctx, req.group_id):
        return {**base, "error_code": ErrorCode.NOT_COORDINATOR}
    classic = cluster.groups.group(req.group_id)
    if (classic is not None and classic.state.value != "Dead") or cluster.consumer_groups.group(req.group_id):
        return {**base, "error_code": ErrorCode.GROUP_ID_NOT_FOUND,
                "error_message": f"Group {req.group_id} is not a share group."}
    code, message, member, send = cluster.shares.heartbeat(
        req.group_id, req.member_id, req.member_epoch, req.rack_id, req.subscribed_topic_names,
        ctx.request.client_id or "", f"/{ctx.client_host.rsplit(':', 1)[0]}" if ctx.client_host else "",
        cluster.share_topic)
    if code != ErrorCode.NONE or member is None:
        return {**base, "error_code": code, "error_message": message}
    return {**base, "member_id": member.member_id, "member_epoch": member.member_epoch,
            "heartbeat_interval_ms": cluster.shares.heartbeat_interval_ms(req.group_id),
            "assignment": _assignment(ctx, member.assignment) if send and member.member_epoch >= 0 else None}


def share_group_describe_error_response(ctx: ErrorContext, req: Container, code: ErrorCode) -> dict[str, Any]:
    return {"throttle_time_ms": 0, "groups": [
        {"error_code": code, "error_message": None, "group_id": g, "group_state": "", "group_epoch": 0,
         "assignment_epoch": 0, "assignor_name": "", "members": [], "authorized_operations": -2147483648}
        for g in req.group_ids]}


@handles(ApiKey.SHARE_GROUP_DESCRIBE, 1, 1, errors=share_group_describe_error_response)
def handle_share_group_describe(ctx: RequestContext, req: Container) -> dict[str, Any]:
    cluster = ctx.cluster
    groups = []
    refused = []
    for group_id in req.group_ids:
        empty = {"error_code": ErrorCode.NONE, "error_message": None, "group_id": group_id, "group_state": "",
                 "group_epoch": 0, "assignment_epoch": 0, "assignor_name": "", "members": [],
                 "authorized_operations": -2147483648}
        if not may(ctx, AclOperation.DESCRIBE, group_id):
            refused.append(group_id)
            continue
        if not_coordinator(ctx, group_id):
            groups.append({**empty, "error_code": ErrorCode.NOT_COORDINATOR})
            continue
        group = cluster.shares.describe(group_id)
        if group is None:
            groups.append({**empty, "error_code": ErrorCode.GROUP_ID_NOT_FOUND,
                           "error_message": f"Group {group_id} not found."})
            continue
        groups.append({**empty, "group_state": group.state, "group_epoch": group.group_epoch,
                       "assignment_epoch": group.assignment_epoch, "assignor_name": "simple",
                       "members": [{"member_id": m.member_id, "rack_id": m.rack_id, "member_epoch": m.member_epoch,
                                    "client_id": m.client_id, "client_host": m.client_host,
                                    "subscribed_topic_names": sorted(m.subscribed),
                                    "assignment": _named(ctx, m.assignment)}
                                   for m in group.members.values()],
                       "authorized_operations": authorized_operations(ctx, ResourceType.GROUP, group_id)
                       if req.include_authorized_operations else -2147483648})
    return {"throttle_time_ms": 0, "groups": refused_first_and_topics_hidden(ctx, groups, refused, {
        "error_code": ErrorCode.NONE, "error_message": None, "group_state": "", "group_epoch": 0,
        "assignment_epoch": 0, "assignor_name": "", "members": [], "authorized_operations": -2147483648})}


_LEADERSHIP = (ErrorCode.NOT_LEADER_OR_FOLLOWER, ErrorCode.FENCED_LEADER_EPOCH)


def _leader(ctx: RequestContext, partition: Partition | None, code: ErrorCode = ErrorCode.NOT_LEADER_OR_FOLLOWER
            ) -> dict[str, int]:
    """The partition's leader where the error is about leadership; Kafka leaves the field at its zero
    defaults otherwise (checked against Kafka 4.4)."""
    if code not in _LEADERSHIP:
        return {"leader_id": 0, "leader_epoch": 0}
    if partition is None:
        return {"leader_id": -1, "leader_epoch": -1}
    return {"leader_id": partition.leader_id, "leader_epoch": partition.leader_epoch}


_MESSAGES: dict[ErrorCode, str | None] = {ErrorCode.TOPIC_AUTHORIZATION_FAILED: None,  # Kafka 4.4 gives no words
             ErrorCode.INVALID_RECORD_STATE: "The record state is invalid. The acknowledgement of delivery could "
                                             "not be completed.",
             ErrorCode.INVALID_REQUEST: "The request is invalid.",
             ErrorCode.UNKNOWN_TOPIC_OR_PARTITION: "This server does not host this topic-partition.",
             ErrorCode.UNKNOWN_TOPIC_ID: "This server does not host this topic ID.",
             ErrorCode.NOT_LEADER_OR_FOLLOWER: "For requests intended only for the leader, this error indicates "
                                               "that the broker is not the current leader."}


def _message(code: ErrorCode) -> str | None:
    return None if code == ErrorCode.NONE else _MESSAGES.get(code, code.name)


def _endpoints(ctx: RequestContext, codes: list[tuple[Partition | None, ErrorCode]]) -> list[dict[str, Any]]:
    """The leaders' endpoints for partitions answered NOT_LEADER_OR_FOLLOWER (KIP-951)."""
    out = {}
    for partition, code in codes:
        if code == ErrorCode.NOT_LEADER_OR_FOLLOWER and partition is not None:
            broker = ctx.cluster.brokers.get(partition.leader_id)
            if broker is not None and broker.alive:
                host, port = broker.endpoint(ctx.listener)
                out[broker.node_id] = {"node_id": broker.node_id, "host": host, "port": port, "rack": broker.rack}
    return list(out.values())


def _resolve(ctx: RequestContext, topic_id: uuid.UUID, index: int) -> tuple[str | None, Partition | None, ErrorCode]:
    """A share request's partition: its topic's name, the partition and the code it is answered (READ on the
    topic is checked before the partition is looked for, as Kafka's KafkaApis does)."""
    topic = ctx.cluster.topics_by_id.get(topic_id)
    if topic is None:
        return None, None, ErrorCode.UNKNOWN_TOPIC_ID
    if not authorize(ctx, AclOperation.READ, ResourceType.TOPIC, topic.name):
        return topic.name, None, ErrorCode.TOPIC_AUTHORIZATION_FAILED
    partition = topic.partitions[index] if 0 <= index < len(topic.partitions) else None
    if partition is None:
        return topic.name, None, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    return topic.name, partition, leader_check(ctx, partition)


def _acknowledge(ctx: RequestContext, group_id: str, member_id: str, topic_id: uuid.UUID, index: int,
                 batches: list[Any]) -> tuple[ErrorCode, str | None]:
    """Applies a partition's acknowledgement batches, all or none: the first refusal undoes the batches before
    it, as Kafka's share-partition rolls its state back; the code and Kafka's words for it."""
    cluster = ctx.cluster
    name, partition, code = _resolve(ctx, topic_id, index)
    if code != ErrorCode.NONE or partition is None or name is None:
        return code, _message(code)
    sp = cluster.shares.share_partition(group_id, name, index, partition.log.log_start_offset,
                                        partition.log.high_watermark)
    if any(b.first_offset <= a.last_offset for a, b in zip(batches, batches[1:], strict=False)):
        return ErrorCode.INVALID_REQUEST, None  # out of order or overlapping: refused before the share-partition
    now = cluster.clock.now_ms()
    before = {o: replace(r) for o, r in sp.records.items()}
    for b in batches:
        code = sp.acknowledge(member_id, b.first_offset, b.last_offset, list(b.acknowledge_types), now,
                              cluster.shares.lock_ms(group_id), cluster.shares.delivery_limit(group_id))
        if code != ErrorCode.NONE:
            sp.records = before
            return code, sp.refusal
    # the acknowledged state, through the persister, as Kafka's leader writes it: before the SPSO moves past it
    cluster.share_state.write(sp)
    sp.advance_start(partition.log.log_start_offset)
    cluster.notify(sp)
    return ErrorCode.NONE, None


def _session_error(code: ErrorCode, v: int, extra: dict[str, Any]) -> dict[str, Any]:
    return {"throttle_time_ms": 0, "error_code": code, "error_message": None, "responses": [],
            "node_endpoints": [], **extra}


@handles(ApiKey.SHARE_FETCH, 1, 2)
def handle_share_fetch(ctx: RequestContext, req: Container) -> Any:
    cluster = ctx.cluster
    cluster.share_state_topic()
    v = ctx.version
    shares = cluster.shares
    lock = shares.lock_ms(req.group_id)
    lock_field = {"acquisition_lock_timeout_ms": lock}
    if not may(ctx, AclOperation.READ, req.group_id):
        return _session_error(ErrorCode.GROUP_AUTHORIZATION_FAILED, v, {"acquisition_lock_timeout_ms": 0})
    acks_given = any(p.acknowledgement_batches for t in req.topics for p in t.partitions)
    if req.share_session_epoch == 0 and acks_given:
        return _session_error(ErrorCode.INVALID_REQUEST, v, lock_field)
    if not req.member_id:
        return _session_error(ErrorCode.INVALID_REQUEST, v, lock_field)
    code, session = shares.session(ctx.broker.node_id, req.group_id, req.member_id, req.share_session_epoch,
                                   id(ctx.connection))
    if code != ErrorCode.NONE or session is None:
        return _session_error(code, v, lock_field)
    final = req.share_session_epoch == FINAL_EPOCH
    forgotten = {(t.topic_id, p) for t in req.forgotten_topics_data for p in t.partitions}
    ack_codes: dict[tuple[uuid.UUID, int], tuple[ErrorCode, str | None]] = {}
    for t in req.topics:
        for p in t.partitions:
            key = (t.topic_id, p.partition_index)
            if not final and key not in session.partitions and key not in forgotten:
                session.partitions.append(key)
            if p.acknowledgement_batches:
                ack_codes[key] = _acknowledge(ctx, req.group_id, req.member_id, t.topic_id, p.partition_index,
                                              p.acknowledgement_batches)
    session.partitions = [k for k in session.partitions if k not in forgotten]
    if final:
        shares.close_session(session)
    committed = shares.read_committed(req.group_id)
    max_records = req.max_records if v >= 1 and req.max_records > 0 else 500
    max_bytes = req.max_bytes if req.max_bytes > 0 else 0x7FFFFFFF
    watched: list[Any] = []
    for topic_id, index in ([] if final else session.partitions):
        name, partition, code = _resolve(ctx, topic_id, index)
        if code == ErrorCode.NONE and partition is not None and name is not None:
            watched.append(partition)
            watched.append(shares.share_partition(req.group_id, name, index, partition.log.log_start_offset,
                                                  partition.log.high_watermark))

    def build(timed_out: bool) -> Any:
        by_topic: dict[uuid.UUID, list[dict[str, Any]]] = {}
        codes: list[tuple[Partition | None, ErrorCode]] = []
        total_records, total_bytes = 0, 0
        now = cluster.clock.now_ms()
        for topic_id, index in ([] if final else session.partitions):
            name, partition, code = _resolve(ctx, topic_id, index)
            codes.append((partition, code))
            ack, ack_message = ack_codes.get((topic_id, index), (ErrorCode.NONE, None))
            entry: dict[str, Any] = {"partition_index": index, "error_code": code, "error_message": _message(code),
                                     "acknowledge_error_code": ack, "acknowledge_error_message": ack_message,
                                     "current_leader": _leader(ctx, partition, code),
                                     "records": b"", "acquired_records": []}
            if code == ErrorCode.NONE and partition is not None and name is not None:
                log = partition.log
                sp = shares.share_partition(req.group_id, name, index, log.log_start_offset, log.high_watermark)
                sp.advance_start(log.log_start_offset)
                cluster.share_state.write_if_passed(sp, log.log_start_offset)
                left = max_records - total_records
                if left > 0 and total_bytes < max_bytes:
                    upper, aborted = log.high_watermark, None
                    if committed:
                        upper = log.last_stable_offset
                        aborted = log.aborted_between(sp.end_offset, upper)
                    data, ranges = sp.acquire(
                        req.member_id, lambda offset, log=log, upper=upper: log.read(offset, max_bytes, min_one=True,
                                                                                     upper=upper),
                        upper, left, now, lock, shares.max_locks(req.group_id), aborted)
                    if ranges:
                        entry["records"] = Chunks(data)
                        entry["acquired_records"] = ranges
                        total_records += sum(r["last_offset"] - r["first_offset"] + 1 for r in ranges)
                        total_bytes += sum(len(b) for b in data)
            keep = (topic_id, index) in ack_codes or code != ErrorCode.NONE or entry["acquired_records"]
            if keep:
                by_topic.setdefault(topic_id, []).append(entry)
        if final:
            for (topic_id, index), (ack, ack_message) in ack_codes.items():
                _, partition, _ = _resolve(ctx, topic_id, index)
                by_topic.setdefault(topic_id, []).append({
                    "partition_index": index, "error_code": ErrorCode.NONE, "error_message": None,
                    "acknowledge_error_code": ack, "acknowledge_error_message": ack_message,
                    "current_leader": _leader(ctx, partition, ack), "records": b"", "acquired_records": []})
        waiting = not timed_out and not total_records and not ack_codes and watched and req.max_wait_ms > 0
        if waiting:
            return None  # not yet: parked (`Again`)
        return {"throttle_time_ms": 0, "error_code": ErrorCode.NONE, "error_message": None, **lock_field,
                "responses": [{"topic_id": t, "partitions": ps} for t, ps in by_topic.items()],
                "node_endpoints": _endpoints(ctx, codes)}

    return Again(build, req.max_wait_ms, watched)(False)


@handles(ApiKey.SHARE_ACKNOWLEDGE, 1, 2)
def handle_share_acknowledge(ctx: RequestContext, req: Container) -> dict[str, Any]:
    cluster = ctx.cluster
    cluster.share_state_topic()
    extra = {"acquisition_lock_timeout_ms": cluster.shares.lock_ms(req.group_id)} if ctx.version >= 2 else {}
    if not may(ctx, AclOperation.READ, req.group_id):
        return _session_error(ErrorCode.GROUP_AUTHORIZATION_FAILED, ctx.version,
                              {"acquisition_lock_timeout_ms": 0} if ctx.version >= 2 else {})
    if not req.member_id:
        return _session_error(ErrorCode.INVALID_REQUEST, ctx.version, extra)
    if req.share_session_epoch == 0:  # a ShareAcknowledge cannot open a session (Kafka 4.4's words: none)
        return _session_error(ErrorCode.INVALID_SHARE_SESSION_EPOCH, ctx.version, extra)
    code, session = cluster.shares.session(ctx.broker.node_id, req.group_id, req.member_id,
                                           req.share_session_epoch)
    if code != ErrorCode.NONE or session is None:
        return _session_error(code, ctx.version, extra)
    responses: dict[uuid.UUID, list[dict[str, Any]]] = {}
    codes: list[tuple[Partition | None, ErrorCode]] = []
    for t in req.topics:
        for p in t.partitions:
            code, message = _acknowledge(ctx, req.group_id, req.member_id, t.topic_id, p.partition_index,
                                         p.acknowledgement_batches)
            _, partition, _ = _resolve(ctx, t.topic_id, p.partition_index)
            codes.append((partition, code))
            responses.setdefault(t.topic_id, []).append({
                "partition_index": p.partition_index, "error_code": code, "error_message": message,
                "current_leader": _leader(ctx, partition, code)})
    if req.share_session_epoch == FINAL_EPOCH:
        cluster.shares.close_session(session)
    return {"throttle_time_ms": 0, "error_code": ErrorCode.NONE, "error_message": None, **extra,
            "responses": [{"topic_id": t, "partitions": ps} for t, ps in responses.items()],
            "node_endpoints": _endpoints(ctx, codes)}


def _lag(partition: Partition, sp: Any) -> int:
    return max(partition.log.high_watermark - sp.start_offset
               - sum(1 for r in sp.records.values() if r.state.name in ("ACKNOWLEDGED", "ARCHIVED")), 0)


def describe_share_group_offsets_error_response(ctx: ErrorContext, req: Container, code: ErrorCode
                                                ) -> dict[str, Any]:
    return {"throttle_time_ms": 0, "groups": [{"group_id": g.group_id, "topics": [], "error_code": code,
                                               "error_message": None} for g in req.groups]}


@handles(ApiKey.DESCRIBE_SHARE_GROUP_OFFSETS, 0, 1, errors=describe_share_group_offsets_error_response)
def handle_describe_share_group_offsets(ctx: RequestContext, req: Container) -> dict[str, Any]:
    cluster = ctx.cluster
    cluster.share_state_topic()
    out = []
    for g in req.groups:
        if not may(ctx, AclOperation.DESCRIBE, g.group_id):
            out.append({"group_id": g.group_id, "topics": [], "error_code": ErrorCode.GROUP_AUTHORIZATION_FAILED,
                        "error_message": None})
            continue
        if not_coordinator(ctx, g.group_id):
            out.append({"group_id": g.group_id, "topics": [], "error_code": ErrorCode.NOT_COORDINATOR,
                        "error_message": None})
            continue
        group = cluster.shares.describe(g.group_id)
        wanted: list[tuple[str, list[int] | None]] = (
            [(t.topic_name, list(t.partitions)) for t in g.topics] if g.topics is not None
            else sorted({(name, None) for name, _ in (group.partitions if group else {})}))
        describable = filter_authorized(ctx, AclOperation.DESCRIBE, ResourceType.TOPIC, (n for n, _ in wanted))
        refused = [{"topic_name": name, "topic_id": ZERO_UUID, "partitions": [
            {"partition_index": i, "start_offset": -1, "leader_epoch": 0, "lag": -1,
             "error_code": ErrorCode.TOPIC_AUTHORIZATION_FAILED, "error_message": "Topic authorization failed."}
            for i in indexes or ()]} for name, indexes in wanted if name not in describable and indexes is not None]
        wanted = [(name, indexes) for name, indexes in wanted if name in describable]
        topics = []
        for name, indexes in wanted:
            topic = cluster.topics.get(name)
            parts = []
            for index in (indexes if indexes is not None else sorted(
                    i for n, i in (group.partitions if group else {}) if n == name)):
                sp = group.partitions.get((name, index)) if group else None
                partition = topic.partitions[index] if topic and 0 <= index < len(topic.partitions) else None
                entry = {"partition_index": index, "start_offset": -1, "leader_epoch": -1, "lag": -1,
                         "error_code": ErrorCode.NONE, "error_message": None}
                if topic is None or partition is None:
                    entry["error_code"] = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
                    entry["error_message"] = "This server does not host this topic-partition."
                else:
                    entry["leader_epoch"] = partition.leader_epoch
                    if sp is not None:
                        entry.update(start_offset=sp.start_offset, lag=_lag(partition, sp))
                parts.append(entry)
            topics.append({"topic_name": name, "topic_id": topic.topic_id if topic else ZERO_UUID,
                           "partitions": parts})
        out.append({"group_id": g.group_id, "topics": topics + refused, "error_code": ErrorCode.NONE,
                    "error_message": None})
    return {"throttle_time_ms": 0, "groups": out}


def _group_for_offsets(ctx: RequestContext, group_id: str) -> tuple[ErrorCode, str | None]:
    if not_coordinator(ctx, group_id):
        return ErrorCode.NOT_COORDINATOR, None
    group = ctx.cluster.shares.describe(group_id)
    if group is None:
        return ErrorCode.GROUP_ID_NOT_FOUND, f"Group {group_id} not found."
    if group.members:
        return ErrorCode.NON_EMPTY_GROUP, "The group has active members."
    return ErrorCode.NONE, None


@handles(ApiKey.ALTER_SHARE_GROUP_OFFSETS, 0, 0)
def handle_alter_share_group_offsets(ctx: RequestContext, req: Container) -> dict[str, Any]:
    cluster = ctx.cluster
    cluster.share_state_topic()
    if not may(ctx, AclOperation.READ, req.group_id):
        return {"throttle_time_ms": 0, "error_code": ErrorCode.GROUP_AUTHORIZATION_FAILED,
                "error_message": "Group authorization failed.", "responses": []}
    code, message = _group_for_offsets(ctx, req.group_id)
    if code == ErrorCode.GROUP_ID_NOT_FOUND:  # Kafka makes an empty share group for offsets set ahead of use
        cluster.shares.groups.setdefault(req.group_id, ShareGroup(req.group_id))
        code, message = ErrorCode.NONE, None
    if code != ErrorCode.NONE:
        return {"throttle_time_ms": 0, "error_code": code, "error_message": message, "responses": []}
    refused, responses = [], []
    for t in req.topics:  # topics refused READ or unknown first, as Kafka's KafkaApis answers them
        topic = cluster.topics.get(t.topic_name)
        if not authorize(ctx, AclOperation.READ, ResourceType.TOPIC, t.topic_name):
            code, words = ErrorCode.TOPIC_AUTHORIZATION_FAILED, "Topic authorization failed."
        elif topic is None:
            code, words = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, "This server does not host this topic-partition."
        else:
            continue
        refused.append({"topic_name": t.topic_name, "topic_id": topic.topic_id if topic else ZERO_UUID,
                        "partitions": [{"partition_index": p.partition_index, "error_code": code,
                                        "error_message": words} for p in t.partitions]})
    for t in req.topics:
        topic = cluster.topics.get(t.topic_name)
        if topic is None or not authorize(ctx, AclOperation.READ, ResourceType.TOPIC, t.topic_name):
            continue
        parts = []
        for p in t.partitions:
            partition = topic.partitions[p.partition_index] if topic and 0 <= p.partition_index < len(
                topic.partitions) else None
            if partition is None:
                parts.append({"partition_index": p.partition_index,
                              "error_code": ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
                              "error_message": "This server does not host this topic-partition."})
                continue
            log = partition.log
            start = min(max(p.start_offset, log.log_start_offset), log.high_watermark) if p.start_offset >= 0 \
                else log.high_watermark
            sp = cluster.shares.share_partition(req.group_id, t.topic_name, p.partition_index, start, start)
            sp.start_offset = sp.end_offset = start
            sp.records.clear()
            cluster.share_state.write(sp, state_epoch_bump=True)
            parts.append({"partition_index": p.partition_index, "error_code": ErrorCode.NONE, "error_message": None})
        responses.append({"topic_name": t.topic_name, "topic_id": topic.topic_id, "partitions": parts})
    return {"throttle_time_ms": 0, "error_code": ErrorCode.NONE, "error_message": None,
            "responses": refused + responses}


@handles(ApiKey.DELETE_SHARE_GROUP_OFFSETS, 0, 0)
def handle_delete_share_group_offsets(ctx: RequestContext, req: Container) -> dict[str, Any]:
    cluster = ctx.cluster
    if not may(ctx, AclOperation.DELETE, req.group_id):
        return {"throttle_time_ms": 0, "error_code": ErrorCode.GROUP_AUTHORIZATION_FAILED,
                "error_message": "Group authorization failed.", "responses": []}
    code, message = _group_for_offsets(ctx, req.group_id)
    if code != ErrorCode.NONE:
        return {"throttle_time_ms": 0, "error_code": code, "error_message": message, "responses": []}
    group = cluster.shares.describe(req.group_id)
    assert group is not None
    readable = filter_authorized(ctx, AclOperation.READ, ResourceType.TOPIC, (t.topic_name for t in req.topics))
    responses = [{"topic_name": t.topic_name, "topic_id": ZERO_UUID, "error_code": ErrorCode.TOPIC_AUTHORIZATION_FAILED,
                  "error_message": "Topic authorization failed."} for t in req.topics if t.topic_name not in readable]
    for t in req.topics:
        if t.topic_name not in readable:
            continue
        topic = cluster.topics.get(t.topic_name)
        if topic is None:
            responses.append({"topic_name": t.topic_name, "topic_id": ZERO_UUID,
                              "error_code": ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
                              "error_message": "This server does not host this topic-partition."})
            continue
        for key in [k for k in group.partitions if k[0] == t.topic_name]:
            cluster.share_state.delete_share_partition(group.partitions.pop(key))
        responses.append({"topic_name": t.topic_name, "topic_id": topic.topic_id, "error_code": ErrorCode.NONE,
                          "error_message": None})
    return {"throttle_time_ms": 0, "error_code": ErrorCode.NONE, "error_message": None, "responses": responses}

