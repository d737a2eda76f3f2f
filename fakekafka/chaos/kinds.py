"""The faults chaos may draw, each with the Kafka mechanism that produces it: a schedule never does what a real
cluster cannot. Errors are listed per API, only where Kafka's broker answers them, and with whether the request
took effect first (Kafka appends a Produce before it times out waiting for the ISR; it refuses one for too few
in-sync replicas before appending)."""

from __future__ import annotations

from dataclasses import dataclass

from fakekafka.chaos.byzantine import BYZANTINE_KINDS
from fakekafka.chaos.registry import REGISTRY_KINDS

__all__ = ["CLUSTER_KINDS", "ERRORS", "KINDS", "LegalError", "legal_errors"]


@dataclass(frozen=True)
class LegalError:
    api: str
    error: str
    after: bool
    """The broker applied the request before answering the error."""
    retriable: bool
    mechanism: str


_COORDINATOR = (
    ("COORDINATOR_LOAD_IN_PROGRESS", False, True,
     "the coordinator's __consumer_offsets / __transaction_state partition is still loading after a leader change"),
    ("NOT_COORDINATOR", False, True,
     "the coordinator moved: its partition's leadership went to another broker since the client looked it up"),
)

ERRORS: tuple[LegalError, ...] = (
    LegalError("Produce", "NOT_LEADER_OR_FOLLOWER", False, True,
               "leadership moved (election, reassignment, controlled shutdown) before the client's metadata caught up"),
    LegalError("Produce", "NOT_ENOUGH_REPLICAS", False, True,
               "the ISR shrank below min.insync.replicas (a follower fell behind), checked before the append"),
    LegalError("Produce", "NOT_ENOUGH_REPLICAS_AFTER_APPEND", True, True,
               "the ISR shrank below min.insync.replicas after the leader appended (acks=all)"),
    LegalError("Produce", "REQUEST_TIMED_OUT", True, True,
               "acks=all: the leader appended, the followers did not replicate within the request's timeout_ms"),
    LegalError("Fetch", "NOT_LEADER_OR_FOLLOWER", False, True,
               "leadership moved before the consumer's metadata caught up"),
    LegalError("ListOffsets", "NOT_LEADER_OR_FOLLOWER", False, True,
               "leadership moved before the client's metadata caught up"),
    LegalError("FindCoordinator", "COORDINATOR_NOT_AVAILABLE", False, True,
               "the coordinator's internal-topic partition has no live leader for a moment"),
    *(LegalError(api, error, after, retriable, mechanism) for api in (
        "JoinGroup", "SyncGroup", "Heartbeat", "OffsetCommit", "OffsetFetch", "ConsumerGroupHeartbeat",
        "InitProducerId", "AddPartitionsToTxn", "AddOffsetsToTxn", "TxnOffsetCommit", "EndTxn")
      for error, after, retriable, mechanism in _COORDINATOR),
    LegalError("OffsetCommit", "COORDINATOR_NOT_AVAILABLE", False, True,
               "writing the commit to __consumer_offsets timed out (Kafka maps NOT_ENOUGH_REPLICAS and "
               "REQUEST_TIMED_OUT of that append to COORDINATOR_NOT_AVAILABLE)"),
    LegalError("InitProducerId", "CONCURRENT_TRANSACTIONS", False, True,
               "the id's previous transaction is still completing (markers being written)"),
    LegalError("AddPartitionsToTxn", "CONCURRENT_TRANSACTIONS", False, True,
               "the producer's previous transaction is still completing (markers being written)"),
    LegalError("AddOffsetsToTxn", "CONCURRENT_TRANSACTIONS", False, True,
               "the producer's previous transaction is still completing (markers being written)"),
    LegalError("OffsetCommit", "REBALANCE_IN_PROGRESS", False, False,
               "a rebalance started (a member joined or left) after the consumer's last heartbeat"),
    LegalError("OffsetCommit", "ILLEGAL_GENERATION", False, False,
               "the group moved to a new generation without this member (its session expired meanwhile)"),
    LegalError("Heartbeat", "REBALANCE_IN_PROGRESS", False, True,
               "a rebalance started (a member joined or left): the member must rejoin"),
)

_IDEMPOTENT_INIT = LegalError(
    "InitProducerId", "COORDINATOR_LOAD_IN_PROGRESS", False, True,
    "the broker's block of producer ids is used up and the next one from the controller has not arrived (an "
    "InitProducerId without a transactional id is answered by the broker it reaches, from that block, not by a "
    "coordinator)")
"""The one error Kafka answers an idempotent (non-transactional) producer's InitProducerId with: its
TransactionCoordinator hands such a request straight to the ProducerIdManager, which fails only while waiting for a
block; NOT_COORDINATOR and CONCURRENT_TRANSACTIONS belong to a transactional id."""

KINDS = {
    "error": "an error answer Kafka's broker gives for this API (see each error's mechanism)",
    "latency": "a slow answer: a busy request queue, a GC pause, a slow disk flush on the broker",
    "drop_before": "the TCP connection broke before the broker read the request (network fault, broker restart)",
    "drop_after": "the broker applied the request, then the connection broke before the answer reached the client "
                  "(the client times out and retries a request that took effect)",
    "kill": "the broker process crashed (SIGKILL) and was restarted: its connections drop, leaders move to the ISR",
    "move_leader": "a partition's leadership moved to another in-sync replica (preferred-replica election, "
                   "reassignment)",
    "throttle": "the consumer went over its fetch quota (consumer_byte_rate): the Fetch is answered at once, empty, "
                "with throttle_time_ms, and the broker mutes the connection for that long (Kafka's "
                "ClientQuotaManager); the consumer fetches again after it",
    "unclean_election": "the partition's leader, its last in-sync replica, crashed while an out-of-sync replica was "
                        "alive, and the topic allows unclean.leader.election.enable=true: the controller elects that "
                        "replica, the records it lacked are lost (expected by the invariants) and the old leader "
                        "truncates when it restarts",
}

CLUSTER_KINDS = {
    "rebalance": "a member joined or left the group, so its coordinator started a rebalance: the members learn it "
                 "from their next heartbeat or commit (REBALANCE_IN_PROGRESS) and rejoin",
    "session_expiry": "the member's session.timeout.ms passed without a heartbeat reaching the coordinator (a GC "
                      "pause, a stalled poll loop): it is removed from the group and must rejoin",
    "move_coordinator": "the leadership of the group's __consumer_offsets partition (or the transactional id's "
                        "__transaction_state partition) moved to another in-sync replica, and the coordinator "
                        "with it: the old one answers NOT_COORDINATOR",
    "isr_shrink": "a follower stopped fetching for longer than replica.lag.time.max.ms and fell out of the ISR: "
                  "acks=all waits for fewer replicas, and below min.insync.replicas writes are refused",
    "isr_expand": "a follower that fell out of the ISR fetches again and rejoins it once caught up",
    "retention": "the cluster's clock passed the partition's retention.ms and a retention check "
                 "(log.retention.check.interval.ms) ran: the log start moves past whole segments, and a consumer "
                 "behind it meets OFFSET_OUT_OF_RANGE and resets by its auto.offset.reset",
    "compaction": "the log cleaner passed over a compacted partition (its dirty ratio over "
                  "min.cleanable.dirty.ratio, or max.compaction.lag.ms passed): records a later one with the same key "
                  "supersedes are removed, offsets kept, never the active segment",
}
"""The cluster's own events chaos draws on the fake cluster (fakekafka/chaos/cluster_events.py)."""
KINDS.update(CLUSTER_KINDS)
KINDS.update(REGISTRY_KINDS)  # the Schema Registry's (fakekafka/chaos/registry.py)
KINDS.update(BYZANTINE_KINDS)  # never Kafka's: only when asked for by name (fakekafka/chaos/byzantine.py)


def legal_errors(api: str, *, non_retriable: bool, transactional: bool = True) -> list[LegalError]:
    """The errors chaos may answer `api` with; `transactional=False`: an InitProducerId without a transactional id."""
    if api == "InitProducerId" and not transactional:
        return [_IDEMPOTENT_INIT]
    return [e for e in ERRORS if e.api == api and (non_retriable or e.retriable)]
