"""What a test does to an in-process cluster on purpose: faults, the clock, forced rebalances and expiries.

`ClusterSteering` is a part of `fakekafka.Cluster`: brokers killed, stopped, restarted or cut off, replication
paused, ISRs shrunk, leaders moved, errors and delays injected (`FaultSteering`'s language, shared with the proxy),
a manual clock advanced, and what Kafka would do after a timeout done now (a member expired, a transaction aborted,
a log compacted). Each change runs where the server runs (`call`), so it never races a request.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any, TypeVar

from fakekafka.model.clock import ManualClock
from fakekafka.model.cluster import ClusterState
from fakekafka.model.faults import Fault, FaultSteering
from fakekafka.net.loop_thread import LoopThread
from fakekafka.net.server import Server
from fakekafka.testing.arguments import (
    check_broker,
    check_group,
    check_partition,
    check_topic,
    check_transactional_id,
    listing,
)

__all__ = ["ClusterSteering"]

T = TypeVar("T")


class ClusterSteering(FaultSteering):
    """Faults and the clock of `fakekafka.Cluster` (which provides `state`, `server`, `call` and its loop)."""

    state: ClusterState
    server: Server
    _loop: asyncio.AbstractEventLoop | None
    _loop_thread: LoopThread | None

    def call(self, fn: Callable[[], T]) -> T:
        raise NotImplementedError

    def force_rebalance(self, group_id: str) -> None:
        """Starts a rebalance now: members learn it from their next heartbeat, as with any rebalance."""
        def rebalance() -> None:
            check_group(self.state, group_id, classic_only=True)
            self.state.groups.force_rebalance(group_id)
        self.call(rebalance)

    def expire_member(self, group_id: str, member_id: str) -> None:
        """Acts as if the member's session timed out (a classic or a consumer protocol member)."""
        def expire() -> None:
            if self.state.consumer_groups.group(group_id) is not None:
                if not self.state.consumer_groups.expire_member(group_id, member_id):
                    members = self.state.consumer_groups.group(group_id).members
                    raise LookupError(f"group {group_id!r} has no member {member_id!r}; its members are "
                                      f"{listing(members)}")
                return
            check_group(self.state, group_id)
            g = self.state.groups.group(group_id)
            if member_id not in g.members:
                raise LookupError(f"group {group_id!r} has no member {member_id!r}; its members are "
                                  f"{listing(g.members)}")
            g.members[member_id].heartbeat_deadline = self.state.clock.now_ms()
            self.state.tick()
        self.call(expire)

    def abort_transaction(self, transactional_id: str) -> None:
        """Aborts the id's open transaction as its timeout would: markers written, its producer fenced."""
        def abort() -> None:
            check_transactional_id(self.state, transactional_id)
            self.state.transactions.abort(transactional_id)
        self.call(abort)

    def expire_transactional_id(self, transactional_id: str) -> None:
        """Forgets an idle transactional id as transactional.id.expiration.ms would."""
        def expire() -> None:
            check_transactional_id(self.state, transactional_id)
            self.state.transactions.expire(transactional_id)
        self.call(expire)

    def force_compaction(self, topic: str) -> int:
        """Runs the log cleaner on a compacted topic now, whatever its min.cleanable.dirty.ratio (Kafka's
        cleaner would wait for the ratio or max.compaction.lag.ms): the latest record per key of each
        partition's non-active segments stays. Returns how many replica logs were cleaned."""
        def compact() -> int:
            check_topic(self.state, topic)
            return self.state.force_compaction(topic)
        return self.call(compact)

    def advance_clock(self, ms: int) -> int:
        """Moves a manual clock forward and fires every timeout it passes; returns the new time."""
        clock = self.state.clock
        if not isinstance(clock, ManualClock):
            raise TypeError("advance_clock needs a cluster started with clock=ManualClock() (or clock='frozen')")

        def advance() -> int:
            now = clock.advance(ms)
            self.state.tick()
            return now
        return self.call(advance)

    def _run(self, coro_fn: Callable[[], Any]) -> Any:
        """Runs a coroutine where the server runs and waits for it."""
        if self._loop is None:
            raise RuntimeError("the cluster is not started")
        if self._loop_thread is None:
            raise RuntimeError("inside `async with`, await the async variant of this call")
        return self._loop_thread.submit(coro_fn(), report=False).result(30)

    async def kill_broker_async(self, node_id: int) -> None:
        self.state.kill_broker(node_id)
        await self.server.close_broker(node_id, abort=True)

    async def stop_broker_async(self, node_id: int) -> None:
        self.state.stop_broker(node_id)
        await self.server.close_broker(node_id, abort=False)

    async def restart_broker_async(self, node_id: int) -> None:
        await self.server.open_broker(node_id)
        self.state.restart_broker(node_id)

    def kill_broker(self, node_id: int) -> None:
        """The broker dies: connections dropped at once, leaders re-elected, the controller moves."""
        self.call(lambda: check_broker(self.state, node_id))
        self._run(lambda: self.kill_broker_async(node_id))

    def stop_broker(self, node_id: int) -> None:
        """A controlled shutdown: leadership moves to other in-sync replicas first, then the broker stops."""
        self.call(lambda: check_broker(self.state, node_id))
        self._run(lambda: self.stop_broker_async(node_id))

    def restart_broker(self, node_id: int) -> None:
        """The broker comes back on its port; its replicas catch up and rejoin the ISR."""
        self.call(lambda: check_broker(self.state, node_id))
        self._run(lambda: self.restart_broker_async(node_id))

    def isolate_broker(self, node_id: int, isolated: bool = True) -> None:
        """Cut the broker off from the others (clients still reach it); `isolated=False` heals it."""
        def apply() -> None:
            self.state.brokers[check_broker(self.state, node_id)].isolated = isolated
            self.state.event("broker_isolated" if isolated else "broker_healed", broker=node_id)
            self.state.tick()
        self.call(apply)

    def pause_replication(self, node_id: int, topic: str | None = None, partition: int | None = None,
                          paused: bool = True) -> None:
        """Stops (or, with `paused=False`, resumes) the broker's follower fetches, for one partition,
        a topic or everything it follows."""
        def apply() -> None:
            check_broker(self.state, node_id)
            if topic is not None:
                check_topic(self.state, topic) if partition is None else check_partition(self.state, topic, partition)
            for t in self.state.topics.values():
                if topic is not None and t.name != topic:
                    continue
                for p in t.partitions:
                    if (partition is None or p.index == partition) and node_id in p.replicas:
                        (p.paused.add if paused else p.paused.discard)(node_id)
            self.state.event("replication_paused" if paused else "replication_resumed", broker=node_id,
                             topic=topic, partition=partition)
            self.state.tick()
        self.call(apply)

    def shrink_isr(self, topic: str, partition: int, node_id: int) -> None:
        """Takes a follower out of the partition's ISR now; it stays out until `expand_isr`."""
        self._checked(topic, partition, node_id, lambda: self.state.shrink_isr(topic, partition, node_id))

    def expand_isr(self, topic: str, partition: int, node_id: int) -> None:
        """Lets the follower fetch again: it rejoins the ISR once caught up."""
        self._checked(topic, partition, node_id, lambda: self.state.expand_isr(topic, partition, node_id))

    def move_leader(self, topic: str, partition: int, node_id: int) -> None:
        self._checked(topic, partition, node_id, lambda: self.state.move_leader(topic, partition, node_id))

    def elect_preferred_leaders(self) -> int:
        return self.call(self.state.elect_preferred_leaders)

    def _checked(self, topic: str, partition: int, node_id: int, change: Callable[[], None]) -> None:
        """`change` where the model runs, once the partition and the broker are known to exist."""
        def apply() -> None:
            check_partition(self.state, topic, partition)
            check_broker(self.state, node_id)
            change()
        self.call(apply)

    def _fault(self, fault: Fault) -> Fault:
        def add() -> None:
            if fault.broker is not None:
                check_broker(self.state, fault.broker)
            self.state.faults.add(fault)
        self.call(add)
        return fault

    def clear_faults(self) -> None:
        self.call(self.state.faults.clear)
