"""What a test reads from an in-process cluster: snapshots of groups, transactions, partitions and requests.

`ClusterSnapshots` is a part of `fakekafka.Cluster`: each read runs where the server runs (`call`) and returns
plain values or the frozen views of `fakekafka.testing.views`, so a test can keep, compare and print them.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from fakekafka.model.cluster import ClusterState
from fakekafka.net.server import Server
from fakekafka.observe.records import RequestRecord
from fakekafka.testing.arguments import (
    check_partition,
    check_topic,
)
from fakekafka.testing.views import ConsumerGroupView, GroupView, StreamsGroupView, TransactionView

__all__ = ["ClusterSnapshots"]

T = TypeVar("T")


class ClusterSnapshots:
    """The reading half of `fakekafka.Cluster` (which provides `state`, `server`, `call` and its addresses)."""

    state: ClusterState
    server: Server
    bootstrap_servers: str

    def call(self, fn: Callable[[], T]) -> T:
        raise NotImplementedError

    def group(self, group_id: str) -> GroupView | None:
        """A snapshot of a group: state, generation, leader, members with decoded assignments, history."""
        return self.call(lambda: GroupView.of(self.state.groups.group(group_id)))

    def consumer_group(self, group_id: str) -> ConsumerGroupView | None:
        """A snapshot of a KIP-848 consumer group (group.protocol=consumer): state, group and assignment epochs,
        assignor, members with their epochs, reconciliation states, current and target assignments."""
        return self.call(lambda: ConsumerGroupView.of(self.state.consumer_groups.describe(group_id)))

    def streams_group(self, group_id: str) -> StreamsGroupView | None:
        """A snapshot of a KIP-1071 streams group (group.protocol=streams): state, group and assignment epochs,
        topology, members with their epochs, reconciliation states, tasks and target tasks."""
        return self.call(lambda: StreamsGroupView.of(self.state.streams_groups.group(group_id)))

    def groups(self) -> list[str]:
        """Every group id, classic, consumer and streams protocol."""
        return self.call(lambda: sorted({*self.state.groups.groups, *self.state.consumer_groups.groups,
                                         *self.state.streams_groups.groups}))

    def committed(self, group_id: str) -> dict[tuple[str, int], int]:
        """The group's committed offsets: {(topic, partition): offset}."""
        def read() -> dict[tuple[str, int], int]:
            g = self.state.groups.group(group_id) or self.state.consumer_groups.group(group_id) \
                or self.state.streams_groups.group(group_id)
            return {tp: om.offset for tp, om in sorted(g.offsets.items())} if g else {}
        return self.call(read)

    def transaction(self, transactional_id: str) -> TransactionView | None:
        """A snapshot of a transactional id: producer id and epoch, state, partitions, timeout, history."""
        return self.call(lambda: TransactionView.of(self.state.transactions.transactions.get(transactional_id)))

    def transactions(self) -> list[str]:
        return self.call(lambda: sorted(self.state.transactions.transactions))

    def last_stable_offset(self, topic: str, partition: int) -> int:
        def read() -> int:
            return check_partition(self.state, topic, partition).log.last_stable_offset
        return self.call(read)

    def log_dirs(self, topic: str) -> dict[int, dict[int, str]]:
        """Where each replica of a topic is: partition -> {node id: its log dir} (`log.dirs`; one dir,
        /tmp/kafka-logs, unless configured). AlterReplicaLogDirs or kafka-reassign-partitions move them."""
        return self.call(lambda: {p.index: {n: log.log_dir for n, log in sorted(p.logs.items())}
                                  for p in check_topic(self.state, topic).partitions})

    def partition_state(self, topic: str, partition: int) -> dict[str, Any]:
        """Leader, leader epoch, replicas, ISR, and each replica's log end offset and high watermark."""
        def read() -> dict[str, Any]:
            p = check_partition(self.state, topic, partition)
            return {"leader": p.leader_id, "leader_epoch": p.leader_epoch, "replicas": list(p.replicas),
                    "isr": list(p.isr), "high_watermark": p.log.high_watermark,
                    "log_end_offsets": {r: log.log_end_offset for r, log in p.logs.items()}}
        return self.call(read)

    def events(self) -> list[Any]:
        """Every fault and state change so far (broker killed, leader elected, ISR shrink...)."""
        return self.call(lambda: list(self.state.events))

    def requests(self) -> list[RequestRecord]:
        """The most recent requests the brokers served, oldest first."""
        return self.call(lambda: list(self.server.request_log))

    def describe(self, last_requests: int = 20) -> str:
        """Topics with offsets, groups with members and state, and the last requests, as text."""
        def snapshot() -> tuple[list[str], list[str], list[str], list[RequestRecord]]:
            topics = []
            for t in self.state.topics.values():
                if t.is_internal:
                    continue
                parts = ", ".join(f"{p.index}: {p.log.log_start_offset}..{p.log.high_watermark}" for p in t.partitions)
                topics.append(f"  {t.name} ({len(t.partitions)} partitions) [{parts}]")
            groups = []
            for g in self.state.groups.groups.values():
                view = GroupView.of(g)
                assert view is not None
                groups.append(f"  {view.group_id}: {view.state}, generation {view.generation_id}, "
                              f"protocol {view.protocol}, leader {view.leader}")
                for m in view.members:
                    groups.append(f"    {m.member_id} ({m.client_id}, {m.client_host}): {m.assignment}")
                for (topic, index), om in sorted(g.offsets.items()):
                    groups.append(f"    committed {topic}-{index}: {om.offset}")
            for group_id, cg in self.state.consumer_groups.groups.items():
                cview = ConsumerGroupView.of(self.state.consumer_groups.describe(group_id))
                assert cview is not None
                groups.extend(cview.lines())
                for (topic, index), om in sorted(cg.offsets.items()):
                    groups.append(f"    committed {topic}-{index}: {om.offset}")
            for sg in self.state.streams_groups.groups.values():
                sview = StreamsGroupView.of(sg)
                assert sview is not None
                groups.extend(sview.lines())
                for (topic, index), om in sorted(sg.offsets.items()):
                    groups.append(f"    committed {topic}-{index}: {om.offset}")
            txns = [TransactionView.of(t).line() for t in self.state.transactions.transactions.values()]
            return topics, groups, txns, list(self.server.request_log)[-last_requests:]
        topics, groups, txns, requests = self.call(snapshot)
        lines = [f"fakekafka cluster at {self.bootstrap_servers}", "topics:", *(topics or ["  (none)"]),
                 "groups:", *(groups or ["  (none)"]), "transactions:", *(txns or ["  (none)"]),
                 f"last {len(requests)} requests:"]
        for r in requests:
            errors = f" -> {', '.join(r.error_codes)}" if r.error_codes else ""
            lines.append(f"  {r.api} v{r.version} from {r.client_id or '-'} ({r.client}) "
                         f"corr {r.correlation_id}{errors}")
        return "\n".join(lines)
