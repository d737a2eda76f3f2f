"""What must hold however a run was broken, checked on the cluster's own state and the answers it sent, each
violation reported with its evidence (offsets, producer ids, sequences).

Built in:
- acknowledged records are never lost: every batch a Produce with acks=all was answered NONE for is still in
  its partition at the offset it was given (unless retention or DeleteRecords moved the log start past it, the
  log cleaner passed it on a compacted topic, or an unclean leader election after its acknowledgement elected a
  replica whose log ended before it: that loss is expected; behind the proxy, where the elections are not seen,
  any topic allowing unclean election is excused);
- no duplicates from an idempotent producer: no two batches of a partition with one producer id, epoch and
  sequence;
- per-partition order: an idempotent producer's sequences grow with the offsets in each partition;
- each partition is owned by at most one member of a generation: no two members of a classic group were given the
  same partition in one generation's SyncGroup answers (a client-side assignor's bug); no partition of a KIP-848
  group given by a ConsumerGroupHeartbeat answer to one member while another live member still holds it (was given
  it, or reported owning it, and has not reported releasing it);
- committed offsets never go back: a commit the coordinator accepted for a group's partition is not below the one
  before it (an app that seeks back and commits on purpose names it in `Chaos(skip=...)`);
- read_committed never sees aborted records: every aborted transactional batch a read_committed Fetch returned
  was listed in its answer's aborted transactions (so the client drops it), and nothing at or past the answer's
  last stable offset was returned.

`exactly_once(source, sink)` builds the app-level invariant of a consume-transform-produce loop: every record of
the source topic has its output exactly once among the sink's committed records.

An app-level invariant is a callable given a `ChaosView` (the cluster's records): it returns None or True when
the invariant holds, and False, a message, or raises AssertionError when it does not.

The logs are read through `Logs`: the model's own (`ModelLogs`) on the fake cluster, or a cluster's logs read over
the wire behind the proxy (`fakekafka.proxy.chaos.UpstreamLogs`), where the read_committed check finds the aborted
transactions from the ABORT markers in the log (a transactional batch is aborted when its producer's next marker
after it is ABORT), as the broker's aborted-transaction index is built.
"""

from __future__ import annotations

import uuid
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

from fakekafka.chaos.schedule import Schedule
from fakekafka.model.cluster import ClusterState
from fakekafka.model.hooks import Intercepted
from fakekafka.model.log import ABORT, COMMIT, control_type
from fakekafka.model.metadata import Partition
from fakekafka.model.mixed_groups import parse_assignment
from fakekafka.model.topic_configs import policies
from fakekafka.wire import ApiKey, ErrorCode
from fakekafka.wire.records import Record, decode_batch, read_header

__all__ = ["BUILT_IN", "ChaosFailure", "ChaosView", "Ledger", "Logs", "ModelLogs", "Violation", "check_invariants",
           "exactly_once"]

_READ_COMMITTED = 1


@dataclass(frozen=True)
class Violation:
    invariant: str
    message: str
    evidence: tuple[str, ...] = ()

    def lines(self) -> list[str]:
        return [f"{self.invariant}: {self.message}", *(f"  {e}" for e in self.evidence)]


@dataclass(frozen=True)
class _Acked:
    topic: str
    partition: int
    base_offset: int
    count: int
    producer_id: int
    sequence: int
    client_id: str | None
    seq: int = 0
    """How many cluster events there were when it was acknowledged (an unclean election after it may lose it)."""


@dataclass(frozen=True)
class _FetchedTxn:
    topic: str
    partition: int
    base_offset: int
    producer_id: int
    aborted_listed: bool


class ChaosFailure(AssertionError):
    """An invariant did not hold under chaos: the violations with their evidence, and the schedule applied."""

    def __init__(self, violations: list[Violation], schedule: Schedule) -> None:
        self.violations = violations
        self.schedule = schedule
        lines = [line for v in violations for line in v.lines()]
        seed = f" (seed {schedule.seed})" if schedule.seed is not None else ""
        super().__init__("\n".join([f"chaos{seed}: {len(violations)} invariant(s) violated", *lines,
                                    "schedule applied:", *(f"  {s}" for s in schedule.lines())]))


class Logs(Protocol):
    """The partition logs the built-in invariants read."""

    def partitions(self) -> list[tuple[str, int]]:
        """The applications' partitions (no internal topic)."""
        ...

    def batches(self, topic: str, partition: int) -> list[bytes]:
        """The partition's stored batches below its high watermark, in offset order."""
        ...

    def bounds(self, topic: str, partition: int) -> tuple[int, int] | None:
        """(log start, high watermark); None: no such partition (its topic was deleted)."""
        ...

    def unclean_allowed(self, topic: str) -> bool: ...


class ModelLogs:
    """The fake cluster's logs, read in the model (on the cluster's loop)."""

    def __init__(self, cluster: ClusterState) -> None:
        self.cluster = cluster

    def partitions(self) -> list[tuple[str, int]]:
        return [(p.topic.name, p.index) for p in _user_partitions(self.cluster)]

    def batches(self, topic: str, partition: int) -> list[bytes]:
        p = self.cluster.partition(topic, partition)
        return [] if p is None else list(p.log.batches)

    def bounds(self, topic: str, partition: int) -> tuple[int, int] | None:
        p = self.cluster.partition(topic, partition)
        return None if p is None else (p.log.log_start_offset, p.log.high_watermark)

    def unclean_allowed(self, topic: str) -> bool:
        t = self.cluster.topics.get(topic)
        return t is not None and self.cluster.topic_config(t, "unclean.leader.election.enable")[0] == "true"

    def unclean_elections(self, topic: str, partition: int) -> list[tuple[int, int]]:
        """(event index, where the elected replica's log ended) of each unclean election of the partition."""
        return [(i, int(e.details["log_end_offset"])) for i, e in enumerate(self.cluster.observers.events)
                if e.kind == "leader_elected" and e.details.get("unclean") and e.details.get("topic") == topic
                and e.details.get("partition") == partition and "log_end_offset" in e.details]

    def cleaned_below(self, topic: str, partition: int) -> int:
        """Where the log cleaner got to on a compacted partition's leader log (0: not compacted)."""
        p = self.cluster.partition(topic, partition)
        if p is None or "compact" not in policies(self.cluster.topic_config(p.topic, "cleanup.policy")[0]):
            return 0
        return p.log.cleaner_checkpoint


@dataclass
class Ledger:
    """An observer of the cluster's answers (`Hooks.observers`): what it acknowledged and what read_committed
    consumers were given. Topic ids are named by the cluster's own topics, or by `topic_name` (the proxy's
    names learned from Metadata answers)."""

    cluster: ClusterState | None = None
    acked: list[_Acked] = field(default_factory=list)
    fetched: list[_FetchedTxn] = field(default_factory=list)
    past_lso: list[str] = field(default_factory=list)
    topic_name: Callable[[uuid.UUID], str | None] | None = None
    owners: dict[tuple[str, int], dict[tuple[str, int], str]] = field(default_factory=dict)
    """(group, generation) -> (topic, partition) -> the first member given it in that generation."""
    owned_twice: list[str] = field(default_factory=list)
    commits: dict[tuple[str, str, int], tuple[int, str]] = field(default_factory=dict)
    """(group, topic, partition) -> (the last accepted committed offset, who committed it)."""
    rewound: list[str] = field(default_factory=list)
    held: dict[str, dict[str, tuple[set[tuple[str, int]], set[tuple[str, int]]]]] = field(default_factory=dict)
    """KIP-848 group -> member -> (the partitions its last assignment gave it, those it last reported owning)."""

    def __call__(self, request: Intercepted, answer: Any, applied: bool) -> None:
        if answer is None or not applied:
            return
        if request.api_key == ApiKey.PRODUCE and request.body.acks == -1:
            self._produced(request, answer)
        elif request.api_key == ApiKey.FETCH and getattr(request.body, "isolation_level", 0) == _READ_COMMITTED:
            self._fetched(answer)
        elif request.api_key == ApiKey.SYNC_GROUP and hasattr(answer, "get"):
            self._synced(request, answer)
        elif request.api_key == ApiKey.OFFSET_COMMIT and hasattr(answer, "get"):
            self._committed(request, answer)
        elif request.api_key == ApiKey.CONSUMER_GROUP_HEARTBEAT and hasattr(answer, "get"):
            self._heartbeat(request, answer)

    def _partitions(self, topics: Any) -> set[tuple[str, int]]:
        return {(name, p) for t in topics for name in (self._name(t),) if name is not None for p in t["partitions"]}

    def _heartbeat(self, request: Intercepted, answer: Any) -> None:
        """KIP-848: the coordinator gives a member a partition only once its previous owner released it; a member
        holds what it was given and what it reports owning until its heartbeat reports it released."""
        body = request.body
        members = self.held.setdefault(body.group_id, {})
        member = answer.get("member_id") or body.member_id
        if answer.get("error_code", 0) in (ErrorCode.UNKNOWN_MEMBER_ID, ErrorCode.FENCED_MEMBER_EPOCH):
            members.pop(body.member_id, None)  # fenced: the coordinator has taken its partitions back
            return
        if answer.get("error_code", 0) != 0:
            return
        if body.member_epoch < 0:  # leaving (-1) or a static member leaving (-2)
            members.pop(member, None)
            return
        given, owned = members.setdefault(member, (set(), set()))
        if body.get("topic_partitions") is not None:
            owned.clear()
            owned.update(self._partitions(body.topic_partitions))
        assignment = answer.get("assignment")
        if assignment is None:
            return
        new = self._partitions(assignment["topic_partitions"]) - given - owned
        given.clear()
        given.update(self._partitions(assignment["topic_partitions"]))
        for other, (other_given, other_owned) in list(members.items()):
            if other == member or not new & (other_given | other_owned):
                continue
            if not self._live(body.group_id, other):
                del members[other]  # its session expired on the coordinator: its partitions were taken back
                continue
            for topic, partition in sorted(new & (other_given | other_owned)):
                self.owned_twice.append(f"group {body.group_id} (KIP-848): {topic}-{partition} given to {member} "
                                        f"(epoch {answer.get('member_epoch')}) while {other} still held it")

    def _live(self, group_id: str, member: str) -> bool:
        """Whether a member is still in its group (on the fake cluster; behind the proxy it is taken as live)."""
        if self.cluster is None:
            return True
        group = self.cluster.consumer_groups.group(group_id)
        return group is not None and member in group.members

    def _synced(self, request: Intercepted, answer: Any) -> None:
        body = request.body
        if answer.get("error_code", 0) != 0 or body.get("protocol_type") not in (None, "consumer"):
            return
        try:
            assignment = parse_assignment(bytes(answer.get("assignment") or b""))
        except ValueError:
            return
        if assignment is None:
            return
        owners = self.owners.setdefault((body.group_id, body.generation_id), {})
        member = body.member_id
        for t in assignment.assigned_partitions:
            for partition in t.partitions:
                first = owners.setdefault((t.topic, partition), member)
                if first != member:
                    self.owned_twice.append(f"group {body.group_id} generation {body.generation_id}: {t.topic}-"
                                            f"{partition} given to {first} and to {member}")

    def _committed(self, request: Intercepted, answer: Any) -> None:
        body = request.body
        member = body.get("member_id") or "(no member)"
        generation = body.get("generation_id_or_member_epoch", body.get("generation_id", -1))
        asked = {(self._name(t), p.partition_index): p.committed_offset
                 for t in body.topics for p in t.partitions}
        for t in answer.get("topics") or ():
            name = self._name(t)
            for p in t.get("partitions") or ():
                key = (name, p["partition_index"])
                if p["error_code"] != 0 or name is None or key not in asked:
                    continue
                offset = asked[key]
                who = f"member {member} (generation {generation}, client {request.client_id})"
                before = self.commits.get((body.group_id, *key))  # type: ignore[arg-type]
                if before is not None and offset < before[0]:
                    self.rewound.append(f"group {body.group_id}: {name}-{key[1]} committed {offset} by {who} after "
                                        f"{before[0]} by {before[1]}")
                self.commits[(body.group_id, *key)] = (offset, who)  # type: ignore[index]

    def _name(self, entry: Any) -> str | None:
        name = (entry.get("name") or entry.get("topic")) if hasattr(entry, "get") else None
        if name:
            return name
        topic_id = entry.get("topic_id") if hasattr(entry, "get") else None
        if topic_id is None:
            return None
        if self.topic_name is not None:
            return self.topic_name(topic_id)
        t = self.cluster.topics_by_id.get(topic_id) if self.cluster is not None else None
        return t.name if t is not None else None

    def _produced(self, request: Intercepted, answer: Any) -> None:
        sent: dict[tuple[str, int], bytes] = {}
        for t in request.body.topic_data:
            name = self._name(t)
            for p in t.partition_data:
                if name is not None and p.records:
                    sent[(name, p.index)] = bytes(p.records[:61])
        for t in answer["responses"]:
            name = self._name(t)
            for r in t["partition_responses"]:
                head = sent.get((name, r["index"])) if name is not None else None
                if head is None or r["error_code"] != 0 or len(head) < 61:
                    continue
                h = read_header(head)
                self.acked.append(_Acked(name, r["index"], r["base_offset"], h.last_offset_delta + 1,  # type: ignore[arg-type]
                                         h.producer_id, h.base_sequence, request.client_id,
                                         len(self.cluster.observers.events) if self.cluster is not None else 0))

    def _fetched(self, answer: Any) -> None:
        for t in answer.get("responses", []):
            name = self._name(t)
            if name is None:
                continue
            for p in t.get("partitions", []):
                records = p.get("records")
                if not records:
                    continue
                buffers = records if isinstance(records, tuple) else (records,)
                aborted = {(a["producer_id"], a["first_offset"]) for a in p.get("aborted_transactions") or []}
                lso = p.get("last_stable_offset", -1)
                for buf in buffers:
                    data, pos = memoryview(buf), 0
                    while len(data) - pos >= 61:
                        h = read_header(data, pos)
                        pos += h.size
                        if lso >= 0 and h.last_offset >= lso and not h.is_control:
                            self.past_lso.append(f"{name}-{p['partition_index']}: batch {h.base_offset}.."
                                                 f"{h.last_offset} returned with last stable offset {lso}")
                        if h.is_transactional and not h.is_control:
                            listed = any(pid == h.producer_id and first <= h.base_offset for pid, first in aborted)
                            self.fetched.append(_FetchedTxn(name, p["partition_index"], h.base_offset,
                                                            h.producer_id, listed))


class ChaosView:
    """The cluster's records for an app-level invariant (read on the cluster's loop: no races with requests)."""

    def __init__(self, cluster: ClusterState | Logs) -> None:
        self.logs: Logs = ModelLogs(cluster) if isinstance(cluster, ClusterState) else cluster

    def topics(self) -> list[str]:
        return sorted({t for t, _ in self.logs.partitions()})

    def records(self, topic: str, *, committed: bool = True) -> list[Record]:
        """Every record of the topic up to the high watermark, partition by partition in offset order, with
        `.partition` set; with `committed` (the default) as a read_committed consumer sees them: no aborted
        records and nothing of a transaction still open (told by the transaction markers in the log)."""
        indexes = sorted(p for t, p in self.logs.partitions() if t == topic)
        if not indexes:
            raise KeyError(f"no topic {topic!r}; topics: {', '.join(self.topics()) or '(none)'}")
        out: list[Record] = []
        for index in indexes:
            bounds = self.logs.bounds(topic, index)
            if bounds is None:
                continue
            start, end = bounds
            kept: list[Record] = []
            open_txns: dict[int, list[Record]] = defaultdict(list)
            for batch in self.logs.batches(topic, index):
                h = read_header(batch)
                if h.last_offset < start or h.base_offset >= end:
                    continue
                records = [r for r in decode_batch(batch).records if start <= r.offset < end]
                if h.is_control:
                    ended = open_txns.pop(h.producer_id, [])
                    commit = control_type(batch) == COMMIT
                    if commit or not committed:
                        kept.extend(ended)
                elif h.is_transactional and committed:
                    open_txns[h.producer_id].extend(records)
                else:
                    kept.extend(records)
            for r in kept:
                r.partition = index
            out.extend(sorted(kept, key=lambda r: r.offset))
        return out

    def values(self, topic: str, *, committed: bool = True) -> list[bytes | None]:
        return [r.value for r in self.records(topic, committed=committed)]


def exactly_once(source: str, sink: str, *, output_of: Callable[[Record], bytes | None] | None = None,
                 input_of: Callable[[Record], bytes | None] | None = None) -> Callable[[ChaosView], str | None]:
    """The invariant of a consume-transform-produce loop: every record of `source` has its output exactly once
    among `sink`'s committed records (read_committed), and nothing else is there. Records are matched by
    `input_of(source record)` == `output_of(sink record)` (by default both the record's key; an app that keeps
    the input's identity elsewhere says where)."""
    take_in = input_of or (lambda r: r.key)
    take_out = output_of or (lambda r: r.key)

    def check(view: ChaosView) -> str | None:
        inputs = [take_in(r) for r in view.records(source, committed=True)]
        counts: dict[bytes | None, int] = defaultdict(int)
        for r in view.records(sink, committed=True):
            counts[take_out(r)] += 1
        wanted = set(inputs)
        lost = [k for k in inputs if counts.get(k, 0) == 0]
        twice = sorted((k for k, n in counts.items() if n > 1 and k in wanted), key=repr)
        stray = sorted((k for k in counts if k not in wanted), key=repr)
        problems = []
        if lost:
            problems.append(f"{len(lost)} input(s) with no committed output (first: {lost[:5]})")
        if twice:
            problems.append(f"{len(twice)} input(s) with their output committed more than once "
                            f"(first: {[(k, counts[k]) for k in twice[:5]]})")
        if stray:
            problems.append(f"{len(stray)} committed output(s) of no input (first: {stray[:5]})")
        return f"{source} -> {sink}: " + "; ".join(problems) if problems else None

    check.__name__ = f"exactly_once({source} -> {sink})"
    return check


def _user_partitions(cluster: ClusterState) -> list[Partition]:
    return [p for t in cluster.topics.values() if not t.name.startswith("__") for p in t.partitions]


BUILT_IN = ("acknowledged records lost", "duplicates from an idempotent producer", "per-partition order",
            "one owner per partition per generation", "committed offsets never go back",
            "read_committed sees only committed records")
"""The built-in invariants' names (what `Chaos(skip=...)` takes)."""


def check_invariants(cluster: ClusterState | Logs, ledger: Ledger,
                     app: tuple[Callable[[ChaosView], Any], ...] = (), skip: tuple[str, ...] = ()) -> list[Violation]:
    """Every violation of the built-in invariants (but those named in `skip`) and of `app`'s, with evidence."""
    logs: Logs = ModelLogs(cluster) if isinstance(cluster, ClusterState) else cluster
    out: list[Violation] = []
    out.extend(_acked_not_lost(logs, ledger))
    out.extend(_idempotent(logs))
    if ledger.owned_twice:
        out.append(Violation("one owner per partition per generation",
                             f"{len(ledger.owned_twice)} partition(s) assigned to two members at once",
                             tuple(ledger.owned_twice[:20])))
    if ledger.rewound:
        out.append(Violation("committed offsets never go back",
                             f"{len(ledger.rewound)} accepted commit(s) below the group's previous one",
                             tuple(ledger.rewound[:20])))
    out.extend(_read_committed(logs, ledger))
    out = [v for v in out if v.invariant not in skip]
    view = ChaosView(logs)
    for check in app:
        name = getattr(check, "__name__", repr(check))
        try:
            verdict = check(view)
        except AssertionError as e:
            out.append(Violation(f"app invariant {name}", str(e) or "assertion failed"))
            continue
        if verdict is False:
            out.append(Violation(f"app invariant {name}", "returned False"))
        elif isinstance(verdict, str):
            out.append(Violation(f"app invariant {name}", verdict))
    return out


def _acked_not_lost(logs: Logs, ledger: Ledger) -> list[Violation]:
    lost: list[str] = []
    batches: dict[tuple[str, int], dict[int, int]] = {}
    model = isinstance(logs, ModelLogs)
    for a in ledger.acked:
        bounds = logs.bounds(a.topic, a.partition)
        if bounds is None or (not model and logs.unclean_allowed(a.topic)):
            continue  # a deleted topic; or unclean election allowed where the elections are not seen
        log_start, high_watermark = bounds
        if a.base_offset < log_start:
            continue  # retention or DeleteRecords, not a loss
        if model:
            assert isinstance(logs, ModelLogs)
            last = a.base_offset + a.count - 1
            if any(i >= a.seq and last >= end for i, end in logs.unclean_elections(a.topic, a.partition)):
                continue  # an unclean election after it elected a replica without it: the loss Kafka implies
            if a.base_offset < logs.cleaned_below(a.topic, a.partition):
                continue  # the log cleaner removed what later records of the same keys supersede
        if (a.topic, a.partition) not in batches:
            batches[(a.topic, a.partition)] = {h.base_offset: h.last_offset_delta + 1 for h in (
                read_header(b) for b in logs.batches(a.topic, a.partition))}
        count = batches[(a.topic, a.partition)].get(a.base_offset)
        if count != a.count or a.base_offset + a.count > high_watermark:
            lost.append(f"{a.topic}-{a.partition} offsets {a.base_offset}..{a.base_offset + a.count - 1} "
                        f"(producer {a.producer_id}, sequence {a.sequence}, client {a.client_id}) were acknowledged; "
                        f"the log has {'no batch there' if count is None else f'{count} records there'}, high "
                        f"watermark {high_watermark}")
    if not lost:
        return []
    return [Violation("acknowledged records lost", f"{len(lost)} acknowledged batch(es) (acks=all) are gone",
                      tuple(lost[:20]))]


def _idempotent(logs: Logs) -> list[Violation]:
    dups: list[str] = []
    disorder: list[str] = []
    for topic, index in logs.partitions():
        seen: dict[tuple[int, int, int], int] = {}
        last: dict[tuple[int, int], tuple[int, int]] = defaultdict(lambda: (-1, -1))
        for b in logs.batches(topic, index):
            h = read_header(b)
            if h.producer_id < 0 or h.base_sequence < 0 or h.is_control:
                continue
            key = (h.producer_id, h.producer_epoch, h.base_sequence)
            where = f"{topic}-{index}"
            if key in seen:
                dups.append(f"{where}: producer {h.producer_id} epoch {h.producer_epoch} sequence {h.base_sequence} "
                            f"at offsets {seen[key]} and {h.base_offset}")
            seen[key] = h.base_offset
            prev_seq, prev_offset = last[(h.producer_id, h.producer_epoch)]
            if prev_seq >= 0 and h.base_sequence <= prev_seq and prev_seq - h.base_sequence < 1 << 30:
                disorder.append(f"{where}: producer {h.producer_id} sequence {h.base_sequence} at offset "
                                f"{h.base_offset} follows sequence {prev_seq} at offset {prev_offset}")
            last[(h.producer_id, h.producer_epoch)] = (h.last_sequence, h.base_offset)
    out = []
    if dups:
        out.append(Violation("duplicates from an idempotent producer", f"{len(dups)} batch(es) written twice",
                             tuple(dups[:20])))
    if disorder:
        out.append(Violation("per-partition order", f"{len(disorder)} batch(es) out of sequence order",
                             tuple(disorder[:20])))
    return out


def _aborted_by_markers(logs: Logs, topic: str, partition: int) -> set[tuple[int, int]]:
    """(producer id, base offset) of each transactional batch whose producer's next marker is ABORT: the aborted
    transactions of a log read over the wire, as the broker builds its aborted-transaction index from them."""
    aborted: set[tuple[int, int]] = set()
    open_txns: dict[int, list[int]] = defaultdict(list)
    for batch in logs.batches(topic, partition):
        h = read_header(batch)
        if h.is_control:
            ended = open_txns.pop(h.producer_id, [])
            if control_type(batch) == ABORT:
                aborted.update((h.producer_id, offset) for offset in ended)
        elif h.is_transactional:
            open_txns[h.producer_id].append(h.base_offset)
    return aborted


def _read_committed(logs: Logs, ledger: Ledger) -> list[Violation]:
    bad: list[str] = []
    marked: dict[tuple[str, int], set[tuple[int, int]]] = {}
    for f in ledger.fetched:
        if f.aborted_listed:
            continue
        if isinstance(logs, ModelLogs):  # the fake cluster's own aborted-transaction index
            p = logs.cluster.partition(f.topic, f.partition)
            was_aborted = p is not None and any(
                a.producer_id == f.producer_id and a.first_offset <= f.base_offset <= a.last_offset
                for a in p.log.aborted)
        else:
            if (f.topic, f.partition) not in marked:
                marked[(f.topic, f.partition)] = _aborted_by_markers(logs, f.topic, f.partition)
            was_aborted = (f.producer_id, f.base_offset) in marked[(f.topic, f.partition)]
        if was_aborted:
            bad.append(f"{f.topic}-{f.partition}: aborted batch at offset {f.base_offset} (producer "
                       f"{f.producer_id}) returned without its aborted transaction listed")
    bad.extend(ledger.past_lso)
    if not bad:
        return []
    return [Violation("read_committed sees only committed records",
                      f"{len(bad)} batch(es) a read_committed consumer could take as committed", tuple(bad[:20]))]
