"""Faults Kafka itself can have, caused by the same means on both three-broker kinds (kafka-3: three Apache Kafka
JVMs; fakekafka-3: `fakekafka serve --brokers 3`), the client-visible outcome compared as every scenario's is: a
partition's leader moved by an operator (AlterPartitionReassignments, then ElectLeaders) while a producer and a
group member run; the leader's broker killed (SIGKILL of its JVM; fakekafka's `kill-broker`) under acks=all with
min.insync.replicas=2; a group member stopped without leaving (its process killed), its session expiring and the
other member taking its partitions.

Each needs three brokers (`needs=(THREE_BROKERS,)`): on any other broker kind its cells are unsupported. A fault
cell has the cluster to itself while it runs (compat.brokers.Faults.lock), and leaves it whole: a killed broker
is started again and the cell waits until it is back in its partition's ISR.
"""

from __future__ import annotations

from typing import Any

from compat.brokers import THREE_BROKERS
from compat.clients.base import Client, Rec
from compat.env import Env, acks, rows, wait_for
from compat.scenarios.registry import Outcome, scenario

NEEDS = (THREE_BROKERS,)


def _recs(first: int, count: int) -> list[Rec]:
    return [Rec(b"k%d" % i, b"r%d" % i, [], 0) for i in range(first, first + count)]


def _state(env: Env, topic: str, partition: int = 0) -> dict[str, Any] | None:
    """Leader, replicas and ISR from the first live broker that answers (a fresh connection each time: the one a
    handle kept may be to the broker just killed); None when none answers."""
    from fakekafka.testing.client import RemoteCluster
    for address in env.bootstrap.split(","):
        try:
            with RemoteCluster(address, client_id="compat-faults", timeout=5) as rc:
                return rc.partition_state(topic, partition)
        except Exception:  # noqa: BLE001, S112 - this broker is down or not answering: the next
            continue
    return None


def _state_everywhere(env: Env, topic: str, partition: int) -> list[dict[str, Any] | None]:
    """The partition's state as each broker answers it (None where one does not)."""
    from fakekafka.testing.client import RemoteCluster
    states: list[dict[str, Any] | None] = []
    for address in env.bootstrap.split(","):
        try:
            with RemoteCluster(address, client_id="compat-faults", timeout=5) as rc:
                states.append(rc.partition_state(topic, partition))
        except Exception:  # noqa: BLE001 - this broker is down or not answering
            states.append(None)
    return states


def _full_isr(env: Env, topic: str, partitions: int = 1, timeout: float = 90) -> None:
    """Waits until every broker answers and every partition's ISR holds all three replicas: a fault meets a whole
    cluster (a broker started again by the cell before takes seconds to catch up; a new topic's followers a moment
    to fetch). Every broker, not the first that answers: right after a kill Kafka's ISR still names the dead broker
    until its session expires, so a full ISR alone does not say the killed broker is back."""
    def whole(p: int) -> list[dict[str, Any] | None] | None:
        states = _state_everywhere(env, topic, p)
        return states if all(s is not None and len(s["isr"]) == 3 for s in states) else None

    for p in range(partitions):
        ok, state = wait_for(lambda p=p: whole(p), timeout, 0.1)
        if not ok:
            raise TimeoutError(f"{topic}-{p} has no full ISR on every broker after {timeout:.0f} s: {state}")


def _kafka_errors(errors: list[str]) -> list[str]:
    """The members' errors by Kafka's names, once each: a client's own log lines (CLIENT:..., such as kcat's about
    a connection) come and go with timing, so they are not compared."""
    return sorted({e for e in errors if not e.startswith("CLIENT:")})


def _acked(client: Client) -> list[list[int]] | str:
    """Records 0 to 9 acknowledged at offsets 0 to 9 of partition 0 (as the client reports them)."""
    return acks(client, [(0, i) for i in range(10)])


def _expected_rows(first: int, count: int) -> list[list[Any]]:
    return [[0, i, f"k{i}", f"r{i}", []] for i in range(first, first + count)]


# Kafka (AlterPartitionReassignments, KIP-455; ElectLeaders, KIP-460): an operator reorders a partition's replicas
# and elects the preferred one; the old leader answers NOT_LEADER_OR_FOLLOWER, which the producer and consumer
# retry after refreshing their metadata: every record is acknowledged once and delivered once, in order.
@scenario("fault_leader_moved", lambda client: {"acks": _acked(client), "delivered": _expected_rows(0, 10),
                                                "leader_moved": True, "owned_after": [[0]]},
          needs=NEEDS, slow=True, uses=("group",))
def fault_leader_moved(client: Client, env: Env) -> Outcome:
    """RF 3: a member reads 5 records acks=all; the leader moves (reassignment + election); 5 more, all read."""
    topic, group = env.name("t"), env.name("g")
    env.create_topic(topic, 1, replication_factor=3)
    _full_isr(env, topic)
    member = env.member(client, group, topic)
    env.settle([member], 1)
    sent = client.produce(topic, _recs(0, 5), acks=-1, idempotent=True)
    got, errors = env.receive(member, 5)
    before = env.cluster().partition_state(topic, 0)
    target = next(r for r in before["isr"] if r != before["leader"])
    env.cluster().move_leader(topic, 0, target)
    sent += client.produce(topic, _recs(5, 5), acks=-1, idempotent=True)
    more, errors2 = env.receive(member, 10 - len(got))
    out: Outcome = {"acks": acks(client, sent), "delivered": rows(got + more),
                    "leader_moved": env.cluster().partition_state(topic, 0)["leader"] == target,
                    "owned_after": env.settle([member], 1)}
    if _kafka_errors(errors + errors2):
        out["errors"] = _kafka_errors(errors + errors2)
    return out


# Kafka (acks=all with min.insync.replicas, KafkaProducer javadoc and the topic config's docs): a record is
# acknowledged once every in-sync replica has it; when the leader's broker dies the controller fences it
# (broker.session.timeout.ms), elects an in-sync follower and shrinks the ISR to the two left, still
# min.insync.replicas: the producer retries onto the new leader, nothing acknowledged is lost, nothing is written
# twice (idempotence, on by default). The broker started again catches up and rejoins the ISR.
@scenario("fault_broker_killed_acks_all", lambda client: {
    "acks": _acked(client), "records": _expected_rows(0, 10), "new_leader_in_isr": True, "isr_after_kill": 2},
          needs=NEEDS, slow=True, uses=("broker_loss",))
def fault_broker_killed_acks_all(client: Client, env: Env) -> Outcome:
    """RF 3, min.insync.replicas 2: 5 records acks=all, the leader's broker killed, 5 more, all read back."""
    faults = env.target.faults
    assert faults is not None
    topic = env.name("t")
    env.create_topic(topic, 1, {"min.insync.replicas": "2"}, replication_factor=3)
    _full_isr(env, topic)
    sent = client.produce(topic, _recs(0, 5), acks=-1, idempotent=True)
    killed = env.cluster().partition_state(topic, 0)["leader"]
    faults.kill(killed)
    try:
        sent += client.produce(topic, _recs(5, 5), acks=-1, idempotent=True)
        ok, after = wait_for(lambda: (s := _state(env, topic)) and s["leader"] not in (killed, -1)
                             and killed not in s["isr"] and s, env.timing.group_s)
        got = client.fetch(topic, 0, 0, 10)
    finally:
        faults.restart(killed)
        _full_isr(env, topic)  # the cluster whole again for the next cell, whether or not the client coped
    return {"acks": acks(client, sent), "records": rows(got),
            "new_leader_in_isr": bool(ok) and after["leader"] in after["isr"],
            "isr_after_kill": len(after["isr"]) if ok else after}


# Kafka (KafkaConsumer javadoc, "Detecting Consumer Failures"; the classic group protocol): a member that stops
# heartbeating without LeaveGroup is removed session.timeout.ms later; the group rebalances and the live member
# gets its partitions, reading them from the committed offsets (none here: auto.offset.reset=earliest).
@scenario("fault_member_session_expired", {"before": [[0], [1]], "after": [[0, 1]],
                                           "received": [[0, 0], [0, 1], [1, 0], [1, 1]]},
          needs=NEEDS, slow=True, uses=("group",))
def fault_member_session_expired(client: Client, env: Env) -> Outcome:
    """RF 3, two partitions, two members; one is killed (no LeaveGroup): the other takes both and reads both."""
    topic, group = env.name("t"), env.name("g")
    env.create_topic(topic, 2, replication_factor=3)
    _full_isr(env, topic, 2)
    a = env.member(client, group, topic, own_process=True)
    b = env.member(client, group, topic)
    out: Outcome = {"before": env.settle([a, b], 2)}
    a.kill()
    out["after"] = env.settle([b], 2)
    for p in (0, 1):
        for i in range(2):
            env.produce(topic, b"r%d" % i, partition=p)
    got, errors = env.receive(b, 4)
    out["received"] = sorted([r.partition, r.offset] for r in got)
    if _kafka_errors(errors):
        out["errors"] = _kafka_errors(errors)
    return out
