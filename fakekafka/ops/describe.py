"""The state of a running cluster as text tables (`fakekafka ctl describe`) and as one status line
(`fakekafka serve --status-every`, SIGUSR1).

Each table is a section: a title and a function from the `ClusterState` to a header and rows, listed in
`SECTIONS` in the order they print. A new kind of state gets its own function and its own entry there; a
section with no rows prints "(none)" under its title, so an idle cluster still shows
what it would list. Read on the server's event loop: the rows are a consistent snapshot.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence

from fakekafka.model.cluster import ClusterState
from fakekafka.model.group import OffsetAndMetadata
from fakekafka.model.metadata import Partition
from fakekafka.testing.embedded import ConsumerGroupView, GroupView, TransactionView
from fakekafka.testing.views import StreamsGroupView

__all__ = ["SECTIONS", "describe_tables", "render_table", "status_line"]

Rows = tuple[Sequence[str], list[Sequence[object]]]


def render_table(header: Sequence[str], rows: list[Sequence[object]]) -> str:
    """Columns padded to their widest cell; numbers right-aligned, everything else left-aligned."""
    cells = [[str(c) for c in header], *[[_cell(c) for c in row] for row in rows]]
    widths = [max(len(r[i]) for r in cells) for i in range(len(header))]
    numeric = [all(isinstance(row[i], int) for row in rows) and bool(rows) for i in range(len(header))]
    lines = []
    for r in cells:
        line = "  ".join(c.rjust(w) if num else c.ljust(w) for c, w, num in zip(r, widths, numeric, strict=True))
        lines.append(line.rstrip())
    return "\n".join(lines)


def _cell(value: object) -> str:
    if value is None:
        return "-"
    if isinstance(value, (list, tuple)):
        return ",".join(str(v) for v in value) or "-"
    return str(value)


def _topics(state: ClusterState) -> Rows:
    rows: list[Sequence[object]] = []
    for t in sorted(state.topics.values(), key=lambda t: t.name):
        if t.is_internal:
            continue
        records, size = _held(t.partitions)
        rows.append((t.name, len(t.partitions), t.replication_factor, records, _size(size)))
    return ("TOPIC", "PARTITIONS", "REPLICATION", "RECORDS", "BYTES"), rows


def _partitions(state: ClusterState) -> Rows:
    """One row per partition; with several log dirs (`log.dirs`), where each replica is (`node:dir`)."""
    dirs = len(state.log_dirs()) > 1
    rows: list[Sequence[object]] = []
    for t in sorted(state.topics.values(), key=lambda t: t.name):
        if t.is_internal:
            continue
        for p in t.partitions:
            row: tuple[object, ...] = (t.name, p.index, p.leader_id if p.online else "offline", p.leader_epoch,
                                       p.replicas, p.isr, p.log.log_start_offset, p.log.high_watermark)
            if dirs:
                row += (" ".join(f"{n}:{log.log_dir}" for n, log in sorted(p.logs.items())),)
            rows.append(row)
    header = ("TOPIC", "PARTITION", "LEADER", "EPOCH", "REPLICAS", "ISR", "START", "END")
    return (*header, "LOG DIRS") if dirs else header, rows


def _groups(state: ClusterState) -> Rows:
    rows: list[Sequence[object]] = []
    for group_id in sorted(state.groups.groups):
        g = state.groups.groups[group_id]
        view = GroupView.of(g)
        assert view is not None
        rows.append((view.group_id, view.state, view.protocol, view.generation_id, len(view.members),
                     len(g.offsets), _lag(state, g.offsets)))
    return ("GROUP", "STATE", "PROTOCOL", "GENERATION", "MEMBERS", "COMMITTED", "LAG"), rows


def _members(state: ClusterState) -> Rows:
    rows: list[Sequence[object]] = []
    for group_id in sorted(state.groups.groups):
        view = GroupView.of(state.groups.groups[group_id])
        assert view is not None
        for m in view.members:
            assigned = "; ".join(f"{t}:{','.join(map(str, ps))}" for t, ps in sorted(m.assignment.items())) \
                if m.assignment else None
            rows.append((group_id, m.member_id, m.client_id, m.client_host, assigned))
    return ("GROUP", "MEMBER", "CLIENT ID", "HOST", "ASSIGNMENT"), rows


def _lag(state: ClusterState, offsets: dict[tuple[str, int], OffsetAndMetadata]) -> int:
    lag = 0
    for (topic, index), committed in offsets.items():
        p = state.partition(topic, index)
        if p is not None:
            lag += max(p.log.high_watermark - committed.offset, 0)
    return lag


def _consumer_groups(state: ClusterState) -> Rows:
    """KIP-848 groups (group.protocol=consumer): the group epoch next to the target assignment's."""
    rows: list[Sequence[object]] = []
    for group_id in sorted(state.consumer_groups.groups):
        g = state.consumer_groups.groups[group_id]
        rows.append((group_id, g.state.value, g.group_epoch, g.assignment_epoch,
                     g.preferred_assignor(state.consumer_groups.config.assignors[0]), len(g.members), len(g.offsets),
                     _lag(state, g.offsets)))
    return ("GROUP", "STATE", "GROUP EPOCH", "ASSIGNMENT EPOCH", "ASSIGNOR", "MEMBERS", "COMMITTED", "LAG"), rows


def _consumer_group_members(state: ClusterState) -> Rows:
    """Each KIP-848 member: its epoch and reconciliation state, what it owns and what the assignor wants."""
    def text(a: dict[str, list[int]]) -> str | None:
        return "; ".join(f"{t}:{','.join(map(str, ps))}" for t, ps in sorted(a.items())) or None

    rows: list[Sequence[object]] = []
    for group_id in sorted(state.consumer_groups.groups):
        view = ConsumerGroupView.of(state.consumer_groups.describe(group_id))
        assert view is not None
        for m in view.members:
            rows.append((group_id, m.member_id, m.client_id, m.instance_id, m.protocol, m.member_epoch, m.state,
                         text(m.assignment), text(m.target_assignment)))
    return ("GROUP", "MEMBER", "CLIENT ID", "INSTANCE ID", "PROTOCOL", "EPOCH", "STATE", "ASSIGNMENT", "TARGET"), rows


def _streams_groups(state: ClusterState) -> Rows:
    """KIP-1071 groups (group.protocol=streams): the epochs, the topology's and the number of tasks."""
    rows: list[Sequence[object]] = []
    for group_id in sorted(state.streams_groups.groups):
        g = state.streams_groups.groups[group_id]
        tasks = sum(g.configured.partitions.values()) if g.configured is not None else 0
        rows.append((group_id, g.state.value, g.group_epoch, g.assignment_epoch,
                     None if g.topology is None else g.topology.epoch, tasks, len(g.members), len(g.offsets),
                     _lag(state, g.offsets)))
    return ("GROUP", "STATE", "GROUP EPOCH", "ASSIGNMENT EPOCH", "TOPOLOGY EPOCH", "TASKS", "MEMBERS", "COMMITTED",
            "LAG"), rows


def _streams_group_members(state: ClusterState) -> Rows:
    """Each KIP-1071 member: its process, epoch and reconciliation state, the tasks it owns and its target."""
    def text(t: dict[str, dict[str, list[int]]]) -> str | None:
        return "; ".join(f"{role} {s}:{','.join(map(str, ps))}" for role, ts in t.items()
                         for s, ps in ts.items()) or None

    rows: list[Sequence[object]] = []
    for group_id in sorted(state.streams_groups.groups):
        view = StreamsGroupView.of(state.streams_groups.groups[group_id])
        assert view is not None
        for m in view.members:
            rows.append((group_id, m.member_id, m.client_id, m.process_id, m.member_epoch, m.state, text(m.tasks),
                         text(m.target_tasks)))
    return ("GROUP", "MEMBER", "CLIENT ID", "PROCESS", "EPOCH", "STATE", "TASKS", "TARGET"), rows


def _share_groups(state: ClusterState) -> Rows:
    """KIP-932 share groups: epochs and members with the partitions the simple assignor gave each."""
    names = {t.topic_id: t.name for t in state.topics.values()}
    rows: list[Sequence[object]] = []
    for group_id in sorted(state.shares.groups):
        g = state.shares.groups[group_id]
        for m in sorted(g.members.values(), key=lambda m: m.member_id) or [None]:
            assignment = None if m is None else "; ".join(
                f"{names.get(t, t)}:{','.join(map(str, ps))}" for t, ps in sorted(m.assignment.items(),
                                                                               key=lambda kv: str(kv[0])))
            rows.append((group_id, g.state, g.group_epoch, None if m is None else m.member_id,
                         None if m is None else m.member_epoch, assignment or None))
    return ("GROUP", "STATE", "GROUP EPOCH", "MEMBER", "EPOCH", "ASSIGNMENT"), rows


def _share_partitions(state: ClusterState) -> Rows:
    """Each share-partition: its start and end offsets and its in-flight records by state."""
    rows: list[Sequence[object]] = []
    for group_id in sorted(state.shares.groups):
        for (topic, index), sp in sorted(state.shares.groups[group_id].partitions.items()):
            states = [r.state.name for r in sp.records.values()]
            rows.append((group_id, topic, index, sp.start_offset, sp.end_offset, states.count("ACQUIRED"),
                         states.count("AVAILABLE"), states.count("ACKNOWLEDGED") + states.count("ARCHIVED")))
    return ("GROUP", "TOPIC", "PARTITION", "START", "END", "ACQUIRED", "AVAILABLE", "DONE"), rows


def _transactions(state: ClusterState) -> Rows:
    rows: list[Sequence[object]] = []
    now = state.clock.now_ms()
    for tid in sorted(state.transactions.transactions):
        view = TransactionView.of(state.transactions.transactions[tid])
        assert view is not None
        partitions = ", ".join(f"{t}-{p}" for t, p in view.partitions) or None
        open_ms = now - view.start_ms if view.state == "Ongoing" and view.start_ms >= 0 else None
        rows.append((tid, view.state, view.producer_id, view.producer_epoch, view.timeout_ms, open_ms, partitions))
    return ("TRANSACTIONAL ID", "STATE", "PRODUCER ID", "EPOCH", "TIMEOUT MS", "OPEN MS", "PARTITIONS"), rows


SECTIONS: list[tuple[str, Callable[[ClusterState], Rows]]] = [
    ("topics", _topics),
    ("partitions", _partitions),
    ("groups", _groups),
    ("group members", _members),
    ("consumer groups", _consumer_groups),
    ("consumer group members", _consumer_group_members),
    ("streams groups", _streams_groups),
    ("streams group members", _streams_group_members),
    ("share groups", _share_groups),
    ("share partitions", _share_partitions),
    ("transactions", _transactions),
]
"""(title, rows) in print order."""


def describe_tables(state: ClusterState) -> str:
    out = []
    for title, rows_of in SECTIONS:
        header, rows = rows_of(state)
        out.append(title.upper())
        out.append(render_table(header, rows) if rows else "(none)")
        out.append("")
    return "\n".join(out).rstrip("\n")


def _held(partitions: Sequence[Partition]) -> tuple[int, int]:
    """Records (offsets from log start to high watermark: transaction markers included) and bytes stored."""
    return (sum(p.log.high_watermark - p.log.log_start_offset for p in partitions),
            sum(p.log.size_bytes for p in partitions))


def _size(n: int) -> str:
    for unit in ("B", "KiB", "MiB"):
        if n < 1024:
            return f"{n} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024  # type: ignore[assignment]
    return f"{n:.1f} GiB"


def _duration(seconds: float) -> str:
    s = int(seconds)
    h, rest = divmod(s, 3600)
    m, s = divmod(rest, 60)
    return f"{h}h{m:02d}m{s:02d}s" if h else f"{m}m{s:02d}s" if m else f"{s}s"


def status_line(state: ClusterState, *, uptime_s: float, connections: int, requests: int,
                requests_before: int | None = None, interval_s: float | None = None) -> str:
    """One line: uptime, brokers alive, topics and what they hold, groups by state, connections, requests
    (and the rate since the previous line when given)."""
    alive = sum(1 for b in state.brokers.values() if b.alive)
    topics = [t for t in state.topics.values() if not t.is_internal]
    partitions = sum(len(t.partitions) for t in topics)
    records, size = _held([p for t in topics for p in t.partitions])
    states = Counter([*(g.state.value for g in state.groups.groups.values()),
                      *(g.state.value for g in state.consumer_groups.groups.values()),
                      *(g.state.value for g in state.streams_groups.groups.values())])
    groups = _count(sum(states.values()), "group")
    if states:
        groups += " (" + ", ".join(f"{n} {s}" for s, n in sorted(states.items())) + ")"
    rate = ""
    if requests_before is not None and interval_s:
        rate = f" ({(requests - requests_before) / interval_s:.1f}/s)"
    return (f"fakekafka status: up {_duration(uptime_s)}; brokers {alive}/{len(state.brokers)} alive; "
            f"{_count(len(topics), 'topic')}, {_count(partitions, 'partition')}, {_count(records, 'record')} "
            f"({_size(size)}); {groups}; {_count(connections, 'connection')}; {_count(requests, 'request')}{rate}")


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"
