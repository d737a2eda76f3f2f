"""Share groups (KIP-932, queues for Kafka): members that share partitions, records acquired under a lock,
acknowledged one by one, redelivered on release or when the lock expires.

Two halves, as in Kafka:
- the group, kept by the group coordinator: members join and leave with ShareGroupHeartbeat (the client makes
  its member id), every change of membership, subscriptions or subscribed topics' partitions bumps the group
  epoch, and the `simple` assignor gives each member partitions of the topics it subscribes to: spread over
  the members when there are at least as many partitions as members, shared by several members when there are
  fewer (KIP-932: a partition may be consumed by many members at once). Share groups have no revocation:
  a member takes its new assignment at its next heartbeat. Sessions expire on the clock
  (`group.share.session.timeout.ms`).
- the share-partition, kept by the partition's leader: the share-partition start offset (SPSO) and end offset
  (SPEO) and, between them, each in-flight record's state (AVAILABLE, ACQUIRED by a member until its lock
  expires, ACKNOWLEDGED, ARCHIVED) and delivery count. ShareFetch acquires available records (whole batches of
  new records, up to `max_records` rounded up to a batch, and at most `group.share.partition.max.record.locks`
  in flight); ShareAcknowledge (or acknowledgements riding a ShareFetch) ACCEPTs, RELEASEs, REJECTs or RENEWs
  them. A released or expired record is redelivered until its delivery count reaches
  `group.share.delivery.count.limit`, then archived. The SPSO moves past every acknowledged or archived record
  at its head. Where a partition's SPSO starts is `share.auto.offset.reset` (latest by default: the high
  watermark, not the last stable offset, under either isolation level, as Kafka 4.4).
  `share.isolation.level` read_committed acquires only below the last stable offset and archives the records of
  aborted transactions as the SPEO passes them (sent, not acquired); transaction markers are acquired under
  either level (clients acknowledge them as gaps), as Kafka 4.4 does.
Pure state: no sockets; the clock is the cluster's, so a frozen clock drives lock and session expiry. What Kafka's
share-partition leader persists is written through `persist` (fakekafka/model/share_state.py, `__share_group_state`).
"""

from __future__ import annotations

import math
import uuid
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from enum import IntEnum
from typing import Any

from fakekafka.model.clock import Clock
from fakekafka.model.log import AbortedTxn
from fakekafka.wire import ErrorCode
from fakekafka.wire.records import read_header

__all__ = ["CLIENT_REJECT", "DELIVERY_COUNT_EXCEEDED", "AcknowledgeType", "DeadLetter", "RecordState",
           "ShareConfig", "ShareCoordinator", "ShareGroup", "ShareMember",
           "SharePartition", "ShareSession"]


class RecordState(IntEnum):
    AVAILABLE = 0
    ACQUIRED = 1
    ACKNOWLEDGED = 2
    ARCHIVED = 4


class AcknowledgeType(IntEnum):
    GAP = 0
    ACCEPT = 1
    RELEASE = 2
    REJECT = 3
    RENEW = 4


@dataclass
class ShareConfig:
    """The broker configs of share groups, by Kafka's names (defaults are Kafka 4.4's)."""

    session_timeout_ms: int = 45_000  # group.share.session.timeout.ms
    heartbeat_interval_ms: int = 5_000  # group.share.heartbeat.interval.ms
    record_lock_duration_ms: int = 30_000  # group.share.record.lock.duration.ms
    delivery_count_limit: int = 5  # group.share.delivery.count.limit
    max_record_locks: int = 2_000  # group.share.partition.max.record.locks
    max_size: int = 200  # group.share.max.size (members per group)


@dataclass
class ShareMember:
    member_id: str
    client_id: str
    client_host: str
    rack_id: str | None
    subscribed: list[str]
    member_epoch: int = 0
    assignment: dict[uuid.UUID, list[int]] = field(default_factory=dict)
    deadline: int = 0
    """When its session expires without a heartbeat (the cluster's clock)."""
    sent_epoch: int = -1
    """The member epoch whose assignment it was last sent."""


@dataclass
class ShareGroup:
    group_id: str
    group_epoch: int = 0
    assignment_epoch: int = 0
    members: dict[str, ShareMember] = field(default_factory=dict)
    partitions: dict[tuple[str, int], SharePartition] = field(default_factory=dict)
    """Share-partitions by (topic, partition): created at the group's first fetch of a partition."""
    assigned_topics: tuple[tuple[str, str, int], ...] | None = None
    """The subscribed topics (name, id, partitions) the current assignment was computed from."""

    @property
    def state(self) -> str:
        if not self.members:
            return "Empty"
        return "Stable" if self.assignment_epoch == self.group_epoch else "Assigning"



CLIENT_REJECT = "Offset rejected by client."
DELIVERY_COUNT_EXCEEDED = "Offset delivery count exceeded the threshold."
"""Kafka 4.4's causes of a dead letter (ShareGroupDLQManager), written as its `__dlq.errors.message` header."""


@dataclass(frozen=True)
class DeadLetter:
    """One archived record bound for the group's dead-letter queue: its offset, delivery count and cause."""

    offset: int
    delivery_count: int
    cause: str


@dataclass
class _InFlight:
    state: RecordState
    delivery_count: int = 0
    member_id: str | None = None
    deadline: int = 0
    batch: int = -1
    """The first offset of the records acquired with it (Kafka's in-flight batch); -1: none known."""
    split: bool = False
    """An acknowledgement took part of its in-flight batch (Kafka then tracks the batch's offsets one by one)."""


@dataclass
class SharePartition:
    """One share group's view of one partition (see the module docstring)."""

    group_id: str
    topic: str
    partition: int
    start_offset: int
    end_offset: int
    """SPEO: the first offset never acquired; offsets from it on are AVAILABLE with no delivery."""
    records: dict[int, _InFlight] = field(default_factory=dict)
    """In-flight offsets in [start_offset, end_offset) that have a state."""
    refusal: str | None = field(default=None, compare=False, repr=False)
    """Kafka's words for the last acknowledgement refused (acknowledge), None where Kafka gives none."""
    dead_letters: list[DeadLetter] = field(default_factory=list, compare=False, repr=False)
    """Records archived since the last drain for a reason Kafka 4.4 routes to the group's dead-letter queue
    (KIP-1191): rejected by a client, or out of delivery attempts. `model/share_dlq.py` drains it."""

    def _archive(self, offset: int, r: _InFlight, cause: str) -> None:
        r.state, r.member_id = RecordState.ARCHIVED, None
        self.dead_letters.append(DeadLetter(offset, r.delivery_count, cause))

    def _give_back(self, offset: int, r: _InFlight, delivery_limit: int) -> None:
        """A released or expired record: AVAILABLE again, or archived once out of delivery attempts."""
        if r.delivery_count >= delivery_limit:
            self._archive(offset, r, DELIVERY_COUNT_EXCEEDED)
        else:
            r.state, r.member_id = RecordState.AVAILABLE, None

    def state_of(self, offset: int) -> _InFlight:
        found = self.records.get(offset)
        if found is None:
            if offset >= self.end_offset:
                return _InFlight(RecordState.AVAILABLE)
            return _InFlight(RecordState.ARCHIVED)  # acknowledged records are dropped once the SPSO passes
        return found

    def in_flight(self) -> int:
        return self.end_offset - self.start_offset

    def advance_start(self, log_start: int) -> None:
        """Moves the SPSO past acknowledged and archived records at its head (and past records the log no longer
        has)."""
        if self.start_offset < log_start:
            for o in range(self.start_offset, min(log_start, self.end_offset)):
                self.records.pop(o, None)
            self.start_offset = log_start
            self.end_offset = max(self.end_offset, log_start)
        while self.start_offset < self.end_offset:
            r = self.records.get(self.start_offset)
            if r is None or r.state in (RecordState.ACKNOWLEDGED, RecordState.ARCHIVED):
                self.records.pop(self.start_offset, None)
                self.start_offset += 1
            else:
                break

    def acquire(self, member_id: str, batches: Callable[[int], list[bytes]], upper: int, max_records: int,
                now: int, lock_ms: int, max_locks: int, aborted: Iterable[AbortedTxn] | None = None
                ) -> tuple[list[bytes], list[dict[str, int]]]:
        """Acquires up to `max_records` available records (new ones a whole batch at a time) for `member_id`;
        returns the stored batches holding them and the acquired ranges with their delivery counts.

        Under read_committed the caller passes the last stable offset as `upper` and the log's aborted
        transactions as `aborted`: a batch of an aborted transaction is archived as it is reached and left out
        of the acquired ranges, though sent with the others, as Kafka 4.4 answers (the API sweep compares it):
        clients deliver only acquired records."""
        aborted_by: dict[int, list[AbortedTxn]] = {}
        for a in aborted or ():
            aborted_by.setdefault(a.producer_id, []).append(a)
        acquired: list[tuple[int, int]] = []  # (offset, delivery count)
        # first, records released or expired earlier
        for offset in sorted(o for o, r in self.records.items() if r.state == RecordState.AVAILABLE):
            if len(acquired) >= max_records:
                break
            r = self.records[offset]
            r.state, r.member_id, r.deadline = RecordState.ACQUIRED, member_id, now + lock_ms
            r.delivery_count += 1
            acquired.append((offset, r.delivery_count))
        # then new records, whole batches; transaction markers are acquired like records (the client skips them
        # and acknowledges them as gaps), as Kafka 4.4 does
        spans: list[dict[str, int]] = []
        batch_start = self.end_offset  # the new records acquired here are one in-flight batch, as in Kafka
        while len(acquired) < max_records and self.end_offset < upper and self.in_flight() < max_locks:
            found = batches(self.end_offset)
            if not found:
                break
            progressed = False
            for batch in found:
                h = read_header(batch)
                if h.last_offset < self.end_offset:
                    continue
                first, last = max(h.base_offset, self.end_offset), min(h.last_offset, upper - 1)
                if last < first:
                    break
                dropped = h.is_transactional and not h.is_control and any(
                    a.first_offset <= h.base_offset <= a.last_offset for a in aborted_by.get(h.producer_id, ()))
                if dropped:  # sent (Kafka sends the fetched batches whole) but never acquired
                    spans.append({"first_offset": first, "last_offset": last})
                for offset in range(first, last + 1):
                    if dropped:
                        self.records[offset] = _InFlight(RecordState.ARCHIVED)
                    else:
                        self.records[offset] = _InFlight(RecordState.ACQUIRED, 1, member_id, now + lock_ms,
                                                         batch=batch_start)
                        acquired.append((offset, 1))
                self.end_offset = last + 1
                progressed = True
                if len(acquired) >= max_records or self.in_flight() >= max_locks or self.end_offset >= upper:
                    break
            if not progressed:
                break
        if not acquired:
            return [], []
        ranges: list[dict[str, int]] = []
        for offset, count in sorted(acquired):
            last = ranges[-1] if ranges else None
            if last is not None and last["last_offset"] == offset - 1 and last["delivery_count"] == count:
                last["last_offset"] = offset
            else:
                ranges.append({"first_offset": offset, "last_offset": offset, "delivery_count": count})
        data: list[bytes] = []
        seen: set[int] = set()
        for r in ranges + spans:
            offset = r["first_offset"]
            while offset <= r["last_offset"]:
                found = batches(offset)
                if not found:
                    break
                moved = False
                for batch in found:
                    h = read_header(batch)
                    if h.last_offset < offset:
                        continue
                    if h.base_offset > r["last_offset"]:
                        break
                    if h.base_offset not in seen:
                        seen.add(h.base_offset)
                        data.append(batch)
                    offset = h.last_offset + 1
                    moved = True
                    if offset > r["last_offset"]:
                        break
                if not moved:
                    break
        data.sort(key=lambda b: read_header(b).base_offset)
        return data, ranges

    def acknowledge(self, member_id: str, first: int, last: int, types: list[int], now: int, lock_ms: int,
                    delivery_limit: int) -> ErrorCode:
        """Applies one acknowledgement batch (one type for the range, or one per offset), or refuses it whole,
        as Kafka 4.4's SharePartition does: INVALID_REQUEST for a malformed batch or one reaching past the
        records in flight, nothing done for one wholly below the SPSO (already acknowledged or archived),
        INVALID_RECORD_STATE when no record is in flight or an offset asked for (gaps excepted) is not ACQUIRED
        by `member_id`. `refusal` keeps Kafka's words for the refusal (None where Kafka gives none)."""
        self.refusal = None
        if last < first or not types or (len(types) != 1 and len(types) != last - first + 1):
            return ErrorCode.INVALID_REQUEST  # refused by KafkaApis before the share-partition: no words
        if any(t not in AcknowledgeType._value2member_map_ for t in types):
            return ErrorCode.INVALID_REQUEST
        if last < self.start_offset:
            return ErrorCode.NONE
        if self.start_offset >= self.end_offset:  # nothing in flight
            self.refusal = "Batch record not found. The request batch offsets are not found in the cache."
            return ErrorCode.INVALID_RECORD_STATE
        if first >= self.end_offset:
            self.refusal = "Batch record not found. The first offset in request is past acquired records."
            return ErrorCode.INVALID_REQUEST
        if last >= self.end_offset:
            self.refusal = "Batch record not found. The last offset in request is past acquired records."
            return ErrorCode.INVALID_REQUEST

        def kind(offset: int) -> int:
            return types[0] if len(types) == 1 else types[offset - first]
        asked = [o for o in range(max(first, self.start_offset), last + 1) if kind(o) != AcknowledgeType.GAP]
        for r in (self.state_of(o) for o in asked):
            if r.state == RecordState.ACQUIRED and r.member_id == member_id:
                continue
            if r.split:  # Kafka's words for an offset of a batch tracked offset by offset
                self.refusal = "The offset cannot be acknowledged. The offset is not acquired." \
                    if r.state != RecordState.ACQUIRED else "Member is not the owner of offset"
            else:  # for a whole in-flight batch, whose owner is checked first
                self.refusal = "The batch cannot be acknowledged. The batch is not in the acquired state." \
                    if r.member_id is None else "Member is not the owner of batch record"
            return ErrorCode.INVALID_RECORD_STATE
        parts = {r.batch for o in asked if (r := self.records.get(o)) is not None and r.batch >= 0}
        for b in parts:  # an acknowledgement of part of an in-flight batch splits it
            of_batch = [o for o, r in self.records.items() if r.batch == b]
            if min(of_batch) < first or max(of_batch) > last:
                for o in of_batch:
                    self.records[o].split = True
        for offset in range(max(first, self.start_offset), last + 1):
            t = kind(offset)
            r = self.records.get(offset)
            if t == AcknowledgeType.GAP:
                if r is not None or offset < self.end_offset:
                    self.records[offset] = _InFlight(RecordState.ARCHIVED)
                continue
            assert r is not None
            if t == AcknowledgeType.ACCEPT:
                r.state, r.member_id = RecordState.ACKNOWLEDGED, None
            elif t == AcknowledgeType.REJECT:
                self._archive(offset, r, CLIENT_REJECT)
            elif t == AcknowledgeType.RELEASE:
                self._give_back(offset, r, delivery_limit)
            elif t == AcknowledgeType.RENEW:
                r.deadline = now + lock_ms
        return ErrorCode.NONE

    def expire(self, now: int, delivery_limit: int) -> int:
        """Records whose lock passed go back to AVAILABLE (ARCHIVED at the delivery limit); how many."""
        expired = 0
        for offset, r in self.records.items():
            if r.state == RecordState.ACQUIRED and r.deadline <= now:
                self._give_back(offset, r, delivery_limit)
                expired += 1
        return expired

    def release_member(self, member_id: str, delivery_limit: int) -> int:
        """What a member held, released (it left, or its session ended)."""
        released = 0
        for offset, r in self.records.items():
            if r.state == RecordState.ACQUIRED and r.member_id == member_id:
                self._give_back(offset, r, delivery_limit)
                released += 1
        return released

    def next_deadline(self) -> int | None:
        return min((r.deadline for r in self.records.values() if r.state == RecordState.ACQUIRED), default=None)

    def has_available(self, upper: int) -> bool:
        return self.end_offset < upper or any(r.state == RecordState.AVAILABLE for r in self.records.values())


@dataclass
class ShareSession:
    group_id: str
    member_id: str
    broker: int
    epoch: int = 1
    """The epoch its next request must carry."""
    partitions: list[tuple[uuid.UUID, int]] = field(default_factory=list)
    connection: int | None = None
    """The connection that opened it: its close ends the session and releases what the member holds, as Kafka's
    share session cache does on a disconnect."""


class ShareCoordinator:
    """Every share group of the cluster and their share-partitions (see the module docstring)."""

    def __init__(self, clock: Clock, config: ShareConfig | None = None,
                 notify: Callable[[object], None] = lambda _obj: None,
                 event: Callable[..., None] = lambda kind, **details: None,
                 group_config: Callable[[str], dict[str, str]] = lambda _g: {}) -> None:
        self.clock = clock
        self.group_config = group_config
        """A group's dynamic configs (GROUP resources): share.auto.offset.reset, share.record.lock.duration.ms,
        share.delivery.count.limit, share.partition.max.record.locks, share.session.timeout.ms,
        share.heartbeat.interval.ms, share.isolation.level; unset ones fall back to the broker's group.share.*
        configs."""
        self.config = config or ShareConfig()
        self.groups: dict[str, ShareGroup] = {}
        self.sessions: dict[tuple[int, str, str], ShareSession] = {}
        self._notify = notify
        self._event = event
        self.persist: Callable[[SharePartition], None] = lambda _sp: None
        """Writes a share-partition's persisted state (`model/share_state.py`) after it changed, as Kafka's
        share-partition leader writes through the persister."""
        self.forget: Callable[[SharePartition], None] = lambda _sp: None
        """Deletes a share-partition's persisted state (its group, offsets or topic went)."""

    # --- the group ------------------------------------------------------------------------------------------
    def heartbeat(self, group_id: str, member_id: str, member_epoch: int, rack_id: str | None,
                  subscribed: list[str] | None, client_id: str, client_host: str,
                  partitions_of: Callable[[str], tuple[uuid.UUID, int] | None]
                  ) -> tuple[ErrorCode, str | None, ShareMember | None, bool]:
        """One ShareGroupHeartbeat: (error, message, the member, whether its assignment is to be sent)."""
        now = self.clock.now_ms()
        if not member_id:
            return ErrorCode.INVALID_REQUEST, "MemberId can't be empty.", None, False
        if member_epoch == 0 and not subscribed:
            return ErrorCode.INVALID_REQUEST, "SubscribedTopicNames must be set in first request.", None, False
        group = self.groups.get(group_id)
        if member_epoch == -1:  # leaving
            if group is None or member_id not in group.members:
                return ErrorCode.UNKNOWN_MEMBER_ID, None, None, False
            member = group.members[member_id]
            # the group's side only: its share sessions and what it acquired in them stay until the session's last
            # request or the locks pass, so acknowledgements sent after the leave (on close) are taken, as Kafka's
            self._remove(group, member_id, "left", keep_sessions=True)
            member.member_epoch = -1
            return ErrorCode.NONE, None, member, False
        if group is None:
            if member_epoch != 0:
                return ErrorCode.UNKNOWN_MEMBER_ID, None, None, False
            group = self.groups[group_id] = ShareGroup(group_id)
        member = group.members.get(member_id)
        if member is None:
            if member_epoch != 0:
                return ErrorCode.UNKNOWN_MEMBER_ID, None, None, False
            if len(group.members) >= self.config.max_size:
                return ErrorCode.GROUP_MAX_SIZE_REACHED, (
                    f"The share group has reached its maximum capacity of {self.config.max_size} members."
                ), None, False
            member = group.members[member_id] = ShareMember(member_id, client_id, client_host, rack_id,
                                                             list(subscribed or []))
            group.group_epoch += 1
            self._event("share_member_joined", group=group_id, member=member_id, group_epoch=group.group_epoch)
        elif member_epoch not in (0, member.member_epoch):
            return ErrorCode.FENCED_MEMBER_EPOCH, (
                f"The share group member has a smaller member epoch ({member_epoch}) than the one known by the "
                f"group coordinator ({member.member_epoch}). The member must abandon all its partitions and rejoin."
                if member_epoch < member.member_epoch else
                f"The share group member has a greater member epoch ({member_epoch}) than the one known by the "
                f"group coordinator ({member.member_epoch}). The member must abandon all its partitions and rejoin."
            ), None, False
        else:
            if subscribed is not None and sorted(subscribed) != sorted(member.subscribed):
                member.subscribed = list(subscribed)
                group.group_epoch += 1
            if rack_id is not None:
                member.rack_id = rack_id
        member.deadline = now + self.session_timeout_ms(group_id)
        self._assign(group, partitions_of)
        rejoined = member_epoch == 0
        if member.member_epoch != group.assignment_epoch:
            member.member_epoch = group.assignment_epoch
        send = rejoined or member.sent_epoch != member.member_epoch
        member.sent_epoch = member.member_epoch
        return ErrorCode.NONE, None, member, send

    def _assign(self, group: ShareGroup, partitions_of: Callable[[str], tuple[uuid.UUID, int] | None]) -> None:
        """The `simple` assignor, recomputed when the group epoch or the subscribed topics changed."""
        topics: dict[str, tuple[uuid.UUID, int]] = {}
        for m in group.members.values():
            for name in m.subscribed:
                found = partitions_of(name)
                if found is not None:
                    topics[name] = found
        signature = tuple(sorted((n, str(t), c) for n, (t, c) in topics.items()))
        if group.assignment_epoch == group.group_epoch and group.assigned_topics == signature:
            return
        if group.assigned_topics not in (None, signature) and group.assignment_epoch == group.group_epoch:
            group.group_epoch += 1  # a subscribed topic appeared, went away or got partitions
        group.assigned_topics = signature
        members = sorted(group.members)
        assignment: dict[str, dict[uuid.UUID, list[int]]] = {m: {} for m in members}
        for name, (topic_id, count) in sorted(topics.items()):
            subscribers = [m for m in members if name in group.members[m].subscribed]
            if not subscribers or count <= 0:
                continue
            # Kafka's simple assignor: each partition goes to ceil(members / partitions) members, and member i
            # gets ceil(s * (i + 1)) - ceil(s * i) of the partitions × sharing, s = sharing × partitions / members
            sharing = (len(subscribers) + count - 1) // count
            share = sharing * count / len(subscribers)
            sequence = [p for _ in range(sharing) for p in range(count)]
            taken = 0
            for i, m in enumerate(subscribers):
                n = math.ceil(share * (i + 1)) - math.ceil(share * i)
                assignment[m].setdefault(topic_id, []).extend(sequence[taken:taken + n])
                taken += n
        for m in members:
            group.members[m].assignment = {t: sorted(ps) for t, ps in assignment[m].items()}
        group.assignment_epoch = group.group_epoch

    def _remove(self, group: ShareGroup, member_id: str, why: str, *, keep_sessions: bool = False) -> None:
        group.members.pop(member_id, None)
        group.group_epoch += 1
        released = 0
        if not keep_sessions:
            released = self._release(group, member_id)
            for key in [k for k, s in self.sessions.items()
                        if s.group_id == group.group_id and s.member_id == member_id]:
                del self.sessions[key]
        self._event("share_member_removed", group=group.group_id, member=member_id, why=why, released=released,
                    group_epoch=group.group_epoch)

    def _release(self, group: ShareGroup, member_id: str) -> int:
        """What the member holds in the group's share-partitions, released; how many records."""
        limit = self.delivery_limit(group.group_id)
        released = 0
        changed = []
        for sp in group.partitions.values():
            count = sp.release_member(member_id, limit)
            if count:
                released += count
                changed.append(sp)
                self.persist(sp)
        for sp in changed:
            self._notify(sp)
        return released

    # --- share-partitions -----------------------------------------------------------------------------------
    def share_partition(self, group_id: str, topic: str, partition: int, log_start: int, high_watermark: int
                        ) -> SharePartition:
        group = self.groups.get(group_id)
        if group is None:
            group = self.groups[group_id] = ShareGroup(group_id)
        sp = group.partitions.get((topic, partition))
        if sp is None:
            reset = self.group_config(group_id).get("share.auto.offset.reset", "latest")
            start = log_start if reset == "earliest" else high_watermark
            sp = group.partitions[(topic, partition)] = SharePartition(group_id, topic, partition, start, start)
            self._event("share_partition_initialized", group=group_id, topic=topic, partition=partition,
                        start_offset=start)
        return sp

    def _int(self, group_id: str, name: str, default: int) -> int:
        value = self.group_config(group_id).get(name)
        return int(value) if value is not None and value.strip().lstrip("-").isdigit() else default

    def lock_ms(self, group_id: str) -> int:
        return self._int(group_id, "share.record.lock.duration.ms", self.config.record_lock_duration_ms)

    def delivery_limit(self, group_id: str) -> int:
        return self._int(group_id, "share.delivery.count.limit", self.config.delivery_count_limit)

    def max_locks(self, group_id: str) -> int:
        return self._int(group_id, "share.partition.max.record.locks", self.config.max_record_locks)

    def read_committed(self, group_id: str) -> bool:
        """share.isolation.level (a group config only; Kafka has no broker-wide default to fall back to)."""
        return self.group_config(group_id).get("share.isolation.level", "read_uncommitted") == "read_committed"

    def session_timeout_ms(self, group_id: str) -> int:
        return self._int(group_id, "share.session.timeout.ms", self.config.session_timeout_ms)

    def heartbeat_interval_ms(self, group_id: str) -> int:
        return self._int(group_id, "share.heartbeat.interval.ms", self.config.heartbeat_interval_ms)

    # --- sessions -----------------------------------------------------------------------------------------
    def session(self, broker: int, group_id: str, member_id: str, epoch: int, connection: int | None = None
                ) -> tuple[ErrorCode, ShareSession | None]:
        """The share session a request with `epoch` continues (0: a new one on `connection`, replacing any; -1:
        the last request of one)."""
        key = (broker, group_id, member_id)
        if epoch == 0:
            s = self.sessions[key] = ShareSession(group_id, member_id, broker, connection=connection)
            return ErrorCode.NONE, s
        s = self.sessions.get(key)
        if s is None:
            return ErrorCode.SHARE_SESSION_NOT_FOUND, None
        if epoch == -1:
            return ErrorCode.NONE, s
        if epoch != s.epoch:
            return ErrorCode.INVALID_SHARE_SESSION_EPOCH, None
        s.epoch += 1
        return ErrorCode.NONE, s

    def close_session(self, session: ShareSession) -> int:
        """The session's last request (epoch -1): it ends, and what its member still holds is released, as
        Kafka's releaseSession does after the request's acknowledgements; how many records."""
        self.sessions.pop((session.broker, session.group_id, session.member_id), None)
        group = self.groups.get(session.group_id)
        if group is None or any(s.group_id == session.group_id and s.member_id == session.member_id
                                for s in self.sessions.values()):
            return 0
        return self._release(group, session.member_id)

    def connection_closed(self, connection: int) -> None:
        """A client connection closed: the share sessions it opened end, as after their last request."""
        for session in [s for s in self.sessions.values() if s.connection == connection]:
            self.close_session(session)

    # --- the clock ------------------------------------------------------------------------------------------
    def tick(self, partitions_of: Callable[[str], tuple[uuid.UUID, int] | None] | None = None) -> None:
        now = self.clock.now_ms()
        for group in list(self.groups.values()):
            for member_id in [m for m, member in group.members.items() if member.deadline <= now]:
                self._remove(group, member_id, "session timeout")
            limit = self.delivery_limit(group.group_id)
            for sp in group.partitions.values():
                if sp.expire(now, limit):
                    self.persist(sp)
                    self._event("share_lock_expired", group=group.group_id, topic=sp.topic, partition=sp.partition)
                    self._notify(sp)
            if partitions_of is not None and group.members:
                self._assign(group, partitions_of)

    def next_deadline(self) -> int | None:
        times: list[int] = []
        for group in self.groups.values():
            times.extend(m.deadline for m in group.members.values())
            times.extend(t for sp in group.partitions.values() if (t := sp.next_deadline()) is not None)
        return min(times, default=None)

    def forget_topic(self, name: str) -> None:
        for group in self.groups.values():
            for key in [k for k in group.partitions if k[0] == name]:
                self.forget(group.partitions.pop(key))

    def delete_group(self, group_id: str) -> ErrorCode:
        """DeleteGroups of a share group: NON_EMPTY_GROUP while it has members; else it and its share-partitions
        go."""
        group = self.groups.get(group_id)
        if group is None:
            return ErrorCode.GROUP_ID_NOT_FOUND
        if group.members:
            return ErrorCode.NON_EMPTY_GROUP
        for sp in self.groups.pop(group_id).partitions.values():
            self.forget(sp)
        self._event("share_group_deleted", group=group_id)
        return ErrorCode.NONE

    def describe(self, group_id: str) -> ShareGroup | None:
        return self.groups.get(group_id)

    def members(self, group_id: str) -> Iterable[ShareMember]:
        group = self.groups.get(group_id)
        return group.members.values() if group else ()

    @staticmethod
    def view(group: ShareGroup) -> dict[str, Any]:
        return {"group_id": group.group_id, "state": group.state, "group_epoch": group.group_epoch,
                "members": {m.member_id: {"epoch": m.member_epoch, "assignment": m.assignment}
                            for m in group.members.values()}}
