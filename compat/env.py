"""What a scenario gets besides its client: the broker's address, unique names, and a client-independent
handle on the cluster (fakekafka.testing.client.RemoteCluster, plain wire requests) for setting things up and for
reading what the broker holds without trusting the client under test."""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeVar

from compat.clients.base import TP, ClientError, Member, Rec, Timing, TxnProducer, Unsupported
from fakekafka.wire import ApiKey

if TYPE_CHECKING:
    from compat.brokers import Target

__all__ = ["Env", "show", "rows", "acks", "wait_for"]

T = TypeVar("T")


def show(b: bytes | None) -> str | None:
    """Bytes as the outcome shows them: printable ASCII as text, anything else as "0x" + hex."""
    if b is None:
        return None
    if all(32 <= c < 127 for c in b) and not b.startswith(b"0x"):
        return b.decode()
    return "0x" + b.hex()


def rows(recs: list[Rec], *, ts: bool = False) -> list[list[Any]]:
    """[partition, offset, key, value, headers(, timestamp)] per record: what a consumer saw."""
    out = []
    for r in recs:
        row: list[Any] = [r.partition, r.offset, show(r.key), show(r.value), [[n, show(v)] for n, v in r.headers]]
        if ts:
            row.append(r.timestamp)
        out.append(row)
    return out


def acks(client: Any, pairs: list[tuple[int, int]] | list[list[int]]) -> list[list[int]] | str:
    """What the producer reported per record: [partition, offset], or "not reported" (kcat prints none)."""
    if not getattr(client, "reports_offsets", True):
        return "not reported"
    return [list(p) for p in pairs]


T0 = (int(time.time()) - 3600) * 1000
"""The record time of scenarios that choose their records' timestamps: a whole second an hour before this run (the
same for every cell of it). Recent, so within every broker's retention: the compat brokers check retention every
100 ms (compat/brokers.py), and a timestamp days old on a topic with the default retention.ms (7 days) would see
its segment deleted within a second."""


def wait_for(fn: Callable[[], T], timeout: float, interval: float = 0.05) -> tuple[bool, T]:
    """Calls fn until it returns something true or `timeout` passes; (succeeded, last value)."""
    deadline = time.monotonic() + timeout
    while True:
        value = fn()
        if value or time.monotonic() >= deadline:
            return bool(value), value
        time.sleep(interval)


@dataclass
class Env:
    """One (scenario, client, broker) cell's surroundings."""

    target: Target
    prefix: str  # unique per run and cell: compat-<run>-<scenario>-<client>
    members: list[Member] = field(default_factory=list)
    txns: list[TxnProducer] = field(default_factory=list)
    _cluster: Any = None
    _waiter: Any = None

    @property
    def bootstrap(self) -> str:
        return self.target.bootstrap

    @property
    def timing(self) -> Timing:
        return self.target.timing

    def name(self, suffix: str) -> str:
        """A topic or group name unique to this cell (Kafka's legal characters only)."""
        return re.sub(r"[^a-zA-Z0-9._-]", "-", f"{self.prefix}-{suffix}")[:240]

    # --- the cluster, without the client under test ---------------------------------------------------
    def cluster(self) -> Any:
        if self._cluster is None:
            from fakekafka.testing.client import RemoteCluster
            self._cluster = RemoteCluster(self.bootstrap, client_id="compat-setup", timeout=self.timing.op_s)
        return self._cluster

    def waiter(self) -> Any:
        """A cluster handle for waiting on the broker's own background work (the log cleaner): past `compat
        diff`'s recording relay, so the polls, whose answers are timing (a cleaning seen half done on one
        broker), are not compared; the cluster() handle otherwise."""
        if self.target.direct is None:
            return self.cluster()
        if self._waiter is None:
            from fakekafka.testing.client import RemoteCluster
            self._waiter = RemoteCluster(self.target.direct, client_id="compat-setup", timeout=self.timing.op_s)
        return self._waiter

    def create_topic(self, topic: str, partitions: int = 1, configs: dict[str, str] | None = None, *,
                     replication_factor: int = 1) -> None:
        """CreateTopics over the wire, then wait until metadata shows every partition led."""
        self.target.create_topic(self.cluster(), topic, partitions, configs, replication_factor)

    def topic_at_group_coordinator(self, group: str, topic: str) -> None:
        """Waits until `group`'s coordinator can give `topic`'s partitions to a KIP-848 member (on Kafka a moment
        after metadata lists the topic; a member joining before is given nothing for now), past compat diff's
        recording relay: the probe's answers are not the scenario's."""
        self.waiter().wait_for_topic_at_group_coordinator(group, topic, self.timing.group_s)

    def produce(self, topic: str, value: bytes | None, *, partition: int = 0, key: bytes | None = None,
                headers: list[tuple[str, bytes | None]] | None = None, timestamp: int | None = None,
                unrecorded: bool = False) -> int:
        """One record in a batch of its own, written over the wire; returns its offset. Retried while the
        partition's leader is not ready yet: Kafka's brokers take up a (re)created topic's leadership a
        moment after metadata names the leader (NOT_LEADER_OR_FOLLOWER; a refused write stores nothing).
        `unrecorded`: written past compat diff's relay (Env.waiter), for writes whose answers are timing (the
        log start offset a Produce answer carries moves when a retention check runs between two writes)."""
        from fakekafka.model.errors import ApiError
        from fakekafka.wire import ErrorCode
        deadline = time.monotonic() + self.timing.op_s
        while True:
            try:
                cluster = self.waiter() if unrecorded else self.cluster()
                return cluster.produce(topic, value, key=key, headers=headers, partition=partition,
                                       timestamp=timestamp)[1]
            except ApiError as e:
                retriable = e.code in (ErrorCode.NOT_LEADER_OR_FOLLOWER, ErrorCode.LEADER_NOT_AVAILABLE,
                                       ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
                if not retriable or time.monotonic() >= deadline:
                    raise
                time.sleep(0.05)

    def produce_batch(self, topic: str, values: list[bytes], timestamps: list[int] | None = None, *,
                      partition: int = 0) -> int:
        """Records in one batch (uncompressed), written over the wire; returns the base offset."""
        from fakekafka.wire import ErrorCode
        from fakekafka.wire.records import build_batch
        now = int(time.time() * 1000)
        batch = build_batch([{"key": None, "value": v, "headers": [], "timestamp": timestamps[i] if timestamps
                              else now} for i, v in enumerate(values)])
        cluster = self.cluster()
        r = cluster._leader(topic, partition).request(ApiKey.PRODUCE, None, {
            "transactional_id": None, "acks": -1, "timeout_ms": int(self.timing.op_s * 1000),
            "topic_data": [{"name": topic, "partition_data": [{"index": partition, "records": batch}]}]})
        p = r.responses[0].partition_responses[0]
        if p.error_code != ErrorCode.NONE:
            raise RuntimeError(f"producing a batch to {topic}: {ErrorCode(p.error_code).name}")
        return p.base_offset

    def topics(self) -> list[str]:
        return self.cluster().topics()

    def close(self) -> None:
        for m in [*self.txns, *self.members]:
            try:
                m.close()
            except Exception:  # noqa: BLE001, S110 - a member that is already gone
                pass
        for handle in (self._cluster, self._waiter):
            if handle is not None:
                handle.close()

    def transactional(self, client: Any, suffix: str, *, timeout_ms: int | None = None) -> TxnProducer:
        """The client's transactional producer for transactional.id name(suffix), closed with the cell."""
        txn = client.transactional(self.name(suffix), timeout_ms=timeout_ms)
        self.txns.append(txn)
        return txn

    # --- group helpers ----------------------------------------------------------------------------
    def member(self, client: Any, group: str, topic: str, **kw: Any) -> Member:
        m = client.member(group, topic, **kw)
        self.members.append(m)
        return m

    def settle(self, members: list[Member], partitions: int) -> list[list[int]]:
        """Waits (timing.group_s at most) until the live members hold every partition exactly once, each at
        least one; returns their partition lists, sorted (member ids are random: order carries nothing)."""
        def now() -> list[list[int]]:
            return sorted(sorted(p for _, p in m.assignment()) for m in members)

        def settled() -> bool:
            held = now()
            flat = sorted(p for ps in held for p in ps)
            return flat == list(range(partitions)) and all(held) if len(members) <= partitions else False
        wait_for(settled, self.timing.group_s, 0.1)
        return now()

    def commit(self, member: Member, offsets: dict[TP, tuple[int, str | None]]) -> None:
        """Commits as an application does: a commit refused with REBALANCE_IN_PROGRESS (kafka-python refuses one
        itself while its member rejoins, e.g. when it learns a new topic's partitions, until its polling thread
        completes the join) is made again; the refusal is raised when it lasts half the group timeout."""
        def committed() -> bool:
            try:
                member.commit(offsets)
            except ClientError as e:
                if e.code != "REBALANCE_IN_PROGRESS":
                    raise
                return False
            return True
        if not wait_for(committed, self.timing.group_s / 2, 0.5)[0]:
            member.commit(offsets)

    def receive(self, member: Member, count: int, timeout: float | None = None) -> tuple[list[Rec], list[str]]:
        """Records from a member until `count` arrived (or the group timeout); plus the errors it saw."""
        got: list[Rec] = []
        errors: list[str] = []
        deadline = time.monotonic() + (timeout or self.timing.group_s)
        while len(got) < count and time.monotonic() < deadline:
            got.extend(member.take())
            errors.extend(e.code for e in member.errors())
            if len(got) < count:
                time.sleep(0.05)
        return got, errors


def outcome_of(fn: Callable[[], T]) -> T | dict[str, str]:
    """fn's result, or the ClientError it raised as {"error": NAME, "exception": TYPE}."""
    try:
        return fn()
    except ClientError as e:
        return e.outcome()


__all__ += ["outcome_of", "Unsupported", "TP"]
