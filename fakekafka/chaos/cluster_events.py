"""Chaos steps that change the cluster rather than one answer, each only where Kafka's own mechanism could do the
same at that moment:

- `rebalance`: a classic group that is Stable or CompletingRebalance starts a rebalance (a member joined or left):
  every member learns it from its next heartbeat or commit (REBALANCE_IN_PROGRESS) and rejoins;
- `session_expiry`: the member sending this request is expired, as when its session.timeout.ms passed without a
  heartbeat reaching the coordinator (a GC pause, a stalled poll loop); it learns UNKNOWN_MEMBER_ID and rejoins
  (KIP-848 members are fenced: UNKNOWN_MEMBER_ID / FENCED_MEMBER_EPOCH);
- `move_coordinator`: the group's `__consumer_offsets` (or the transactional id's `__transaction_state`) partition
  leadership moves to another in-sync replica, and the coordinator with it (NOT_COORDINATOR on the old one);
- `isr_shrink`: a follower of the partition falls out of the ISR (it stopped fetching: replica.lag.time.max.ms
  passed), so acks=all waits for fewer replicas and min.insync.replicas may refuse writes (NOT_ENOUGH_REPLICAS);
  `isr_expand`: a follower chaos took out fetches again and rejoins the ISR once caught up;
- `retention`: on a frozen clock (`ManualClock`), the clock moves just past the partition's retention.ms for every
  record below its high watermark and a retention check runs (as every log.retention.check.interval.ms): the log
  start moves past whole segments, so a consumer behind it meets OFFSET_OUT_OF_RANGE and its auto.offset.reset; only
  on a topic whose cleanup.policy has delete, and only as far as the profile's `retention_advance_ms` (more time
  passing would expire every session);
- `compaction`: the brokers' log cleaners wake up now (not at their next log.cleaner.backoff.ms) and clean what is
  due (the dirty ratio over min.cleanable.dirty.ratio, or max.compaction.lag.ms passed); only where the partition's
  leader log is due.

Pure: they act on the model (`ClusterState`), on its clock.
"""

from __future__ import annotations

import random
from typing import Any

from fakekafka.chaos.kinds import CLUSTER_KINDS
from fakekafka.chaos.schedule import Step
from fakekafka.model.cleaner import cleanable
from fakekafka.model.clock import ManualClock
from fakekafka.model.cluster import ClusterState
from fakekafka.model.group_metadata import GroupState
from fakekafka.model.hooks import Intercepted
from fakekafka.model.internal_topics import OFFSETS_TOPIC, TRANSACTION_STATE_TOPIC
from fakekafka.model.metadata import Partition
from fakekafka.model.topic_configs import policies

__all__ = ["apply_event", "draw_event", "event_applicable"]

_GROUP_APIS = ("JoinGroup", "SyncGroup", "Heartbeat", "OffsetCommit", "TxnOffsetCommit", "ConsumerGroupHeartbeat")
_TXN_APIS = ("InitProducerId", "AddPartitionsToTxn", "AddOffsetsToTxn", "EndTxn", "TxnOffsetCommit")


def _field(body: Any, name: str) -> Any:
    return body.get(name) if hasattr(body, "get") else getattr(body, name, None)


def _transactional_id(request: Intercepted) -> str | None:
    body = request.body
    tid = _field(body, "transactional_id")
    if tid is None and request.api == "AddPartitionsToTxn":  # v4+: a list of transactions
        txns = _field(body, "transactions") or []
        tid = _field(txns[0], "transactional_id") if txns else None
    return tid or None


def draw_event(cluster: ClusterState, request: Intercepted, kind: str, rng: random.Random,
               shrunk: set[tuple[str, int, int]], base: dict[str, Any], *,
               retention_advance_ms: int = 0) -> Step | None:
    """A step of `kind` for this request, or None where Kafka could not do it now."""
    body = request.body
    if kind in ("retention", "compaction"):
        topic, index = base["topic"], base["partition"]
        p = cluster.partition(topic, index) if topic is not None and index is not None else None
        if p is None or not p.online:
            return None
        if kind == "compaction":
            return Step(**base, kind=kind) if _compaction_due(cluster, p) else None
        advance = _retention_advance(cluster, p)
        if advance is None or advance > retention_advance_ms:
            return None
        return Step(**base, kind=kind, ms=advance)
    if kind in ("rebalance", "session_expiry"):
        group = _field(body, "group_id")
        member = _field(body, "member_id")
        if request.api not in _GROUP_APIS or not group or (kind == "session_expiry" and not member):
            return None
        return Step(**base, kind=kind, group=group, member=member if kind == "session_expiry" else None)
    if kind == "move_coordinator":
        group = _field(body, "group_id") if request.api in _GROUP_APIS else None
        tid = _transactional_id(request) if request.api in _TXN_APIS and not group else None
        if group:
            topic, index = OFFSETS_TOPIC, cluster.offsets_partition_for(group)
        elif tid:
            topic, index = TRANSACTION_STATE_TOPIC, cluster.transaction_partition_for(tid)
        else:
            return None
        p = cluster.partition(topic, index)
        if p is None:
            return None
        others = sorted(r for r in p.isr if r != p.leader_id and cluster.brokers[r].alive)
        if not others:
            return None
        return Step(**{**base, "topic": topic, "partition": index}, kind=kind,
                    broker=others[rng.randrange(len(others))], group=group or tid)
    if kind == "isr_expand":
        if not shrunk:
            return None
        topic, index, replica = sorted(shrunk)[rng.randrange(len(shrunk))]
        return Step(**{**base, "topic": topic, "partition": index}, kind=kind, broker=replica)
    if kind == "isr_shrink":
        topic, index = base["topic"], base["partition"]
        p = cluster.partition(topic, index) if topic is not None and index is not None else None
        if p is None:
            return None
        followers = sorted(r for r in p.isr if r != p.leader_id)
        if not followers:
            return None
        return Step(**base, kind=kind, broker=followers[rng.randrange(len(followers))])
    return None


def event_applicable(cluster: ClusterState, step: Step) -> bool:
    """Whether Kafka could take the step now (a replayed step meets the cluster as it is in the replay)."""
    if step.kind == "rebalance":
        g = cluster.groups.group(step.group) if step.group else None
        return g is not None and g.state in (GroupState.STABLE, GroupState.COMPLETING_REBALANCE)
    if step.kind == "session_expiry":
        if not step.group or not step.member:
            return False
        cg = cluster.consumer_groups.group(step.group)
        if cg is not None:
            return step.member in cg.members
        g = cluster.groups.group(step.group)
        return g is not None and step.member in g.members
    if step.kind in ("retention", "compaction"):
        p = cluster.partition(step.topic, step.partition) if step.topic is not None and step.partition is not None \
            else None
        if p is None or not p.online:
            return False
        if step.kind == "compaction":
            return _compaction_due(cluster, p)
        return isinstance(cluster.clock, ManualClock) and "delete" in _policy(cluster, p)
    if step.topic is None or step.partition is None or step.broker is None:
        return False
    p = cluster.partition(step.topic, step.partition)
    if p is None:
        return False
    if step.kind == "move_coordinator":
        return step.broker in p.isr and step.broker != p.leader_id and cluster.brokers[step.broker].alive
    if step.kind == "isr_shrink":
        return step.broker in p.isr and step.broker != p.leader_id
    if step.kind == "isr_expand":
        return step.broker in p.replicas and step.broker in p.paused
    return False


def apply_event(cluster: ClusterState, step: Step, shrunk: set[tuple[str, int, int]]) -> None:
    assert step.kind in CLUSTER_KINDS
    if step.kind == "retention":
        assert isinstance(cluster.clock, ManualClock)
        cluster.clock.advance(step.ms)
        cluster.tick()  # every other timeout the time passing fires, as advance_clock does
        cluster.log_manager.apply_retention()  # and a retention check ran
    elif step.kind == "compaction":
        cluster.log_manager.run_cleaner()  # every broker's cleaner wakes now and cleans what is due
    elif step.kind == "rebalance":
        assert step.group is not None
        cluster.groups.force_rebalance(step.group)
    elif step.kind == "session_expiry":
        assert step.group is not None and step.member is not None
        if cluster.consumer_groups.group(step.group) is not None:
            cluster.consumer_groups.expire_member(step.group, step.member)
        else:
            group = cluster.groups.group(step.group)
            assert group is not None
            group.members[step.member].heartbeat_deadline = cluster.clock.now_ms()
            cluster.tick()
    elif step.kind == "move_coordinator":
        assert step.topic is not None and step.partition is not None and step.broker is not None
        cluster.move_leader(step.topic, step.partition, step.broker)
    elif step.kind == "isr_shrink":
        assert step.topic is not None and step.partition is not None and step.broker is not None
        cluster.shrink_isr(step.topic, step.partition, step.broker)
        shrunk.add((step.topic, step.partition, step.broker))
    else:
        assert step.topic is not None and step.partition is not None and step.broker is not None
        cluster.expand_isr(step.topic, step.partition, step.broker)
        shrunk.discard((step.topic, step.partition, step.broker))


def _policy(cluster: ClusterState, p: Partition) -> set[str]:
    return set(policies(cluster.topic_config(p.topic, "cleanup.policy")[0]))


def _compaction_due(cluster: ClusterState, p: Partition) -> bool:
    """Whether the leader's cleaner would clean the partition's log at its next wake-up."""
    if "compact" not in _policy(cluster, p) or cluster.config.value("log.cleaner.enable")[0] == "false":
        return False
    settings = cluster.cleaner_settings(p.topic, p.leader_id)
    to_clean = cleanable(p.log, cluster.clock.now_ms(), settings)
    return to_clean.cleanable_bytes > 0 and to_clean.due(settings)


def _retention_advance(cluster: ClusterState, p: Partition) -> int | None:
    """How far a frozen clock must move for retention.ms to take every record below the high watermark; None where
    retention cannot move the log start (no frozen clock, no delete policy, no time limit, nothing to delete)."""
    if not isinstance(cluster.clock, ManualClock) or "delete" not in _policy(cluster, p):
        return None
    retention_ms = cluster.topic_config_int(p.topic, "retention.ms", p.leader_id)
    log = p.log
    if retention_ms < 0 or log.log_start_offset >= log.high_watermark:
        return None
    newest = max((s.largest_timestamp for s in log.segments if s.size), default=None)
    if newest is None:
        return None
    return max(0, newest + retention_ms + 1 - cluster.clock.now_ms())
