"""Consumer groups seen from the admin API and from the edges of the classic group protocol.

Kafka (group coordinator, classic protocol; KIP-345 static membership; KIP-496 OffsetDelete):
- DescribeGroups reports the state (Stable, Empty, PreparingRebalance, CompletingRebalance, Dead), the
  protocol type ("consumer") and the chosen assignor; ListGroups lists every group the coordinator knows.
- DeleteGroups refuses a group with members (NON_EMPTY_GROUP) and an unknown one (GROUP_ID_NOT_FOUND).
- OffsetDelete forgets committed offsets of an empty group; for a partition of a topic the group is
  subscribed to it answers GROUP_SUBSCRIBED_TO_TOPIC.
- A static member (group.instance.id) that comes back under a new member id takes its predecessor's place
  without a rebalance; the old one is fenced (FENCED_INSTANCE_ID).
- A session timeout outside [group.min.session.timeout.ms, group.max.session.timeout.ms] (6000, 1800000)
  is INVALID_SESSION_TIMEOUT.
- An offset commit with no member id and generation -1 is accepted only while the group is empty (a
  simple consumer); into a live group it is UNKNOWN_MEMBER_ID. Offsets are not checked against the log: a
  committed offset past the end is stored, and the next reader resets from it (auto.offset.reset).

Scenarios with a subscribed member are `slow`: on a broker whose joins take seconds (tansu) `--quick`
leaves them out. The harness drives a second, bare member over the wire (fakekafka.testing.client.WireConnection)
where a state has to be held still long enough to be described (a join that was never synced, a
rebalance waiting for a member that does not rejoin).
"""

from __future__ import annotations

import time
from typing import Any

from compat.clients.base import Client, ClientError, Member, Unsupported
from compat.env import Env, outcome_of, wait_for
from compat.scenarios.registry import Outcome, scenario
from fakekafka.wire import ApiKey

OK = "ok"
ASSIGNOR = {"aiokafka": "roundrobin", "aiokafka-0.13.0": "roundrobin", "franz-go": "cooperative-sticky",
            "kafkajs": "RoundRobinAssigner"}
"""Each client's default assignor (the protocol a group of it runs): range for all but aiokafka
(RoundRobinPartitionAssignor), franz-go (kgo's CooperativeStickyBalancer) and KafkaJS (its RoundRobinAssigner)."""


def _assignor(client: Client) -> str:
    return ASSIGNOR.get(client.name, "range")


def _aiokafka(client: Client) -> bool:
    """aiokafka, current or the previous minor (aiokafka-0.13.0): the same behaviour in these scenarios."""
    return client.name.startswith("aiokafka")


def _ok(fn: Any) -> Any:
    return outcome_of(lambda: fn() or OK)


def _fill(env: Env, topic: str, n: int, partition: int = 0) -> None:
    for i in range(n):
        env.produce(topic, b"r%d" % i, partition=partition)


def _settled(env: Env, members: list[Member], partitions: int) -> list[list[int]]:
    return env.settle(members, partitions)


def _describe(client: Client, group: str) -> Any:
    return outcome_of(lambda: client.describe_group(group))


# --- describing, listing, deleting -------------------------------------------------------------------

@scenario("describe_group_stable", lambda client: {"assigned": [[0, 1]], "group": {
    "state": "Stable", "protocol_type": "consumer", "protocol": _assignor(client),
    "members": [{"assignment": [0, 1], "instance_id": None}]}}, uses=("admin", "group"), slow=True)
def describe_group_stable(client: Client, env: Env) -> Outcome:
    """One member holding both partitions: the group is Stable, type consumer, the client's assignor."""
    topic, group = env.name("t"), env.name("g")
    env.create_topic(topic, 2)
    m = env.member(client, group, topic)
    assigned = _settled(env, [m], 2)
    # a member can hold its partitions while a second join runs (kafka-python rejoins when its metadata of the
    # new topic changes; seen on Kafka 4.4.0 in a parallel run): the group is described once that has settled
    _, group_seen = wait_for(lambda: (d := _describe(client, group)).get("state") == "Stable" and d,
                             env.timing.op_s, 0.3)
    return {"assigned": assigned, "group": group_seen or _describe(client, group)}


@scenario("describe_group_empty", lambda client: {"group": {"state": "Empty", "protocol_type": "consumer",
                                                            "protocol": "", "members": []}},
          uses=("admin", "commit", "group"), slow=True)
def describe_group_empty(client: Client, env: Env) -> Outcome:
    """A member commits and leaves: the group stays, Empty, with no members and no protocol."""
    topic, group = env.name("t"), env.name("g")
    env.create_topic(topic)
    _fill(env, topic, 2)
    m = env.member(client, group, topic)
    env.receive(m, 2)
    env.commit(m, {(topic, 0): (2, None)})
    m.close()
    _, got = wait_for(lambda: (d := _describe(client, group)).get("state") == "Empty" and d, env.timing.op_s, 0.2)
    return {"group": got or _describe(client, group)}


def _dead_expected(client: Client) -> Outcome:
    # DescribeGroups v6 (Kafka 4.0, KIP-1043) answers GROUP_ID_NOT_FOUND for an unknown group; before v6 the
    # answer is state Dead without error. Java 4.x, kafka-python 3 and franz-go's kadm ask v6.
    if client.name in ("java", "kafka-python", "franz-go"):
        return {"group": {"error": "GROUP_ID_NOT_FOUND"}}
    return {"group": {"state": "Dead", "protocol_type": "", "protocol": "", "members": []}}


@scenario("describe_group_dead", _dead_expected, uses=("admin",))
def describe_group_dead(client: Client, env: Env) -> Outcome:
    """DescribeGroups of a group nobody ever used: state Dead (or the client's error for it)."""
    return {"group": _describe(client, env.name("never"))}


@scenario("list_groups", lambda client: {"listed": True, "entry": {
    "protocol_type": "consumer", "state": None if _aiokafka(client) else "Stable"}}, uses=("admin", "group"),
    slow=True)
def list_groups(client: Client, env: Env) -> Outcome:
    """ListGroups while a member holds the group's partition: the group is listed as a consumer group."""
    topic, group = env.name("t"), env.name("g")
    env.create_topic(topic)
    m = env.member(client, group, topic)
    _settled(env, [m], 1)
    seen: list[dict[str, Any]] = []

    def done() -> bool:
        # A member holding its partition may still be finishing a rejoin (kafka-python 3 rejoins at once when
        # it learns the topic's partitions, keeping its assignment meanwhile): the state to compare is the
        # one the group settles in, on either broker.
        seen.append(client.list_groups())
        entry = seen[-1].get(group) or {}
        return entry.get("state") not in ("PreparingRebalance", "CompletingRebalance")
    wait_for(done, env.timing.op_s, 0.1)
    return {"listed": group in seen[-1], "entry": seen[-1].get(group)}


@scenario("delete_group", {"while_active": {"error": "NON_EMPTY_GROUP"}, "after_leaving": OK,
                           "again": {"error": "GROUP_ID_NOT_FOUND"}, "committed_after": {}},
          uses=("admin", "commit", "group"), slow=True)
def delete_group(client: Client, env: Env) -> Outcome:
    """DeleteGroups: refused while a member is in the group, done once it left (with its offsets), then gone."""
    topic, group = env.name("t"), env.name("g")
    env.create_topic(topic)
    _fill(env, topic, 1)
    m = env.member(client, group, topic)
    env.receive(m, 1)
    env.commit(m, {(topic, 0): (1, None)})
    out: Outcome = {"while_active": _ok(lambda: client.delete_group(group))}
    m.close()
    out["after_leaving"] = _ok(lambda: client.delete_group(group))
    out["again"] = _ok(lambda: client.delete_group(group))
    out["committed_after"] = {str(p): o for p, (o, _) in client.committed(group, topic, 1).items()}
    return out


@scenario("delete_group_unknown", {"delete": {"error": "GROUP_ID_NOT_FOUND"}}, uses=("admin",))
def delete_group_unknown(client: Client, env: Env) -> Outcome:
    """DeleteGroups of a group nobody ever used: GROUP_ID_NOT_FOUND."""
    return {"delete": _ok(lambda: client.delete_group(env.name("never")))}


@scenario("offset_delete", {"delete": OK, "committed_after": {"1": 2}}, uses=("admin", "commit", "group"))
def offset_delete(client: Client, env: Env) -> Outcome:
    """An empty group with offsets for partitions 0 and 1: OffsetDelete of 0 leaves only 1's."""
    topic, group = env.name("t"), env.name("g")
    env.create_topic(topic, 2)
    m = env.member(client, group, topic, assign=[0, 1]) if client.name != "kcat" else None
    if m is None:
        raise Unsupported("kcat commits only on its own")
    m.commit({(topic, 0): (1, None), (topic, 1): (2, None)})
    m.close()
    out: Outcome = {"delete": _ok(lambda: client.delete_offsets(group, topic, [0]))}
    out["committed_after"] = {str(p): o for p, (o, _) in client.committed(group, topic, 2).items()}
    return out


@scenario("offset_delete_subscribed", {"delete": {"error": "GROUP_SUBSCRIBED_TO_TOPIC"}, "committed_after": {"0": 1}},
          uses=("admin", "commit", "group"), slow=True)
def offset_delete_subscribed(client: Client, env: Env) -> Outcome:
    """OffsetDelete for a topic a live member is subscribed to: GROUP_SUBSCRIBED_TO_TOPIC, nothing deleted."""
    topic, group = env.name("t"), env.name("g")
    env.create_topic(topic)
    _fill(env, topic, 1)
    m = env.member(client, group, topic)
    env.receive(m, 1)
    env.commit(m, {(topic, 0): (1, None)})
    out: Outcome = {"delete": _ok(lambda: client.delete_offsets(group, topic, [0]))}
    out["committed_after"] = {str(p): o for p, (o, _) in client.committed(group, topic, 1).items()}
    return out


# --- states held still by a bare member over the wire -----------------------------------------------

def _string(s: str) -> bytes:
    return len(s).to_bytes(2, "big") + s.encode()


def encode_subscription(topics: list[str]) -> bytes:
    """ConsumerProtocolSubscription v0: the topics, no user data."""
    return (b"\x00\x00" + len(topics).to_bytes(4, "big") + b"".join(_string(t) for t in topics)
            + (-1).to_bytes(4, "big", signed=True))


def encode_assignment(assigned: dict[str, list[int]]) -> bytes:
    """ConsumerProtocolAssignment v0: partitions per topic, no user data."""
    out = b"\x00\x00" + len(assigned).to_bytes(4, "big")
    for topic, parts in assigned.items():
        out += _string(topic) + len(parts).to_bytes(4, "big") + b"".join(p.to_bytes(4, "big") for p in parts)
    return out + (-1).to_bytes(4, "big", signed=True)


class BareMember:
    """A group member the harness drives with raw requests (JoinGroup v5, SyncGroup v3)."""

    def __init__(self, env: Env, group: str, topic: str, session_ms: int = 30000, rebalance_ms: int = 30000) -> None:
        self.env, self.group, self.topic = env, group, topic
        self.session_ms, self.rebalance_ms = session_ms, rebalance_ms
        self.conn = self._connect()
        self.member_id = ""
        self.generation = -1

    def _connect(self) -> Any:
        from fakekafka.testing.client import WireConnection
        cluster = self.env.cluster()
        main = cluster._coordinator(self.group)
        host, port = main.sock.getpeername()[:2]
        return WireConnection(host, port, "compat-bare", 40)

    def _join_body(self) -> dict[str, Any]:
        return {"group_id": self.group, "session_timeout_ms": self.session_ms,
                "rebalance_timeout_ms": self.rebalance_ms, "member_id": self.member_id, "group_instance_id": None,
                "protocol_type": "consumer", "protocols": [{"name": "range",
                                                            "metadata": encode_subscription([self.topic])}]}

    def join(self) -> Any:
        """JoinGroup until answered (the first answer of v4+ is MEMBER_ID_REQUIRED with the id to use)."""
        r = self.conn.request(ApiKey.JOIN_GROUP, 5, self._join_body())
        if r.error_code == 79:  # MEMBER_ID_REQUIRED
            self.member_id = r.member_id
            r = self.conn.request(ApiKey.JOIN_GROUP, 5, self._join_body())
        if r.error_code:
            raise RuntimeError(f"bare JoinGroup: error {r.error_code}")
        self.generation = r.generation_id
        return r

    def send_join(self) -> None:
        """JoinGroup without waiting for the answer (it comes when the rebalance completes)."""
        from fakekafka import wire
        first = self.conn.request(ApiKey.JOIN_GROUP, 5, self._join_body())
        if first.error_code == 79:
            self.member_id = first.member_id
        self.conn.correlation_id += 1
        self.conn.sock.sendall(wire.encode_request(ApiKey.JOIN_GROUP, 5, self.conn.correlation_id, self._join_body(),
                                                   client_id=self.conn.client_id))

    def sync(self, assignment: dict[int, list[int]] | None = None) -> Any:
        body = {"group_id": self.group, "generation_id": self.generation, "member_id": self.member_id,
                "group_instance_id": None,
                "assignments": [{"member_id": self.member_id,
                                 "assignment": encode_assignment({self.topic: [0]})}]}
        return self.conn.request(ApiKey.SYNC_GROUP, 3, body)

    def close(self) -> None:
        try:
            self.conn.close()
        except OSError:
            pass


@scenario("describe_group_completing_rebalance", {"group": {
    "state": "CompletingRebalance", "protocol_type": "consumer", "protocol": "",
    "members": [{"assignment": [], "instance_id": None}]}}, uses=("admin",))
def describe_group_completing_rebalance(client: Client, env: Env) -> Outcome:
    """A member joined and was never synced: the group is CompletingRebalance, its member without assignment."""
    topic, group = env.name("t"), env.name("g")
    env.create_topic(topic)
    bare = BareMember(env, group, topic)
    try:
        bare.join()
        return {"group": _describe(client, group)}
    finally:
        bare.close()


@scenario("describe_group_preparing_rebalance", {"group": {
    "state": "PreparingRebalance", "protocol_type": "consumer", "protocol": "",
    "members": [{"assignment": [], "instance_id": None}, {"assignment": [0], "instance_id": None}]}},
          uses=("admin",))
def describe_group_preparing_rebalance(client: Client, env: Env) -> Outcome:
    """A Stable one-member group that a second member asks to join: PreparingRebalance until the first rejoins."""
    topic, group = env.name("t"), env.name("g")
    env.create_topic(topic)
    a = BareMember(env, group, topic, rebalance_ms=20000)
    b = BareMember(env, group, topic, rebalance_ms=20000)
    try:
        a.join()
        a.sync()
        b.send_join()

        def rebalancing() -> Any:  # the join is in once the group says so: a loaded broker takes its time
            got = _describe(client, group)
            return got if isinstance(got, dict) and got.get("state") == "PreparingRebalance" else None
        ok, got = wait_for(rebalancing, env.timing.op_s, 0.2)
        return {"group": got if ok else _describe(client, group)}
    finally:
        a.close()
        b.close()


# --- static members ----------------------------------------------------------------------------------

@scenario("static_member_rejoin", lambda client: {
    "before": [[0], [1]], "after": [[0], [1]],
    # aiokafka describes groups with DescribeGroups v2, which has no group.instance.id
    "instances": [None, None] if _aiokafka(client) else ["a", "b"]}, slow=True, uses=("admin", "group"))
def static_member_rejoin(client: Client, env: Env) -> Outcome:
    """Static members a and b share two partitions; a closes and a new consumer with instance id a takes its
    place: the same split, and the group lists exactly a and b."""
    topic, group = env.name("t"), env.name("g")
    env.create_topic(topic, 2)
    a = env.member(client, group, topic, instance_id="a")
    b = env.member(client, group, topic, instance_id="b")
    before = _settled(env, [a, b], 2)
    a.close()
    a2 = env.member(client, group, topic, instance_id="a")
    after = _settled(env, [a2, b], 2)

    def instances() -> Any:
        d = client.describe_group(group)
        return sorted((m["instance_id"] for m in d["members"]), key=str), d.get("state")

    # described once Stable: a member holding its partition may still be finishing a rejoin (kafka-python rejoins
    # when it learns the topic's partitions), and the wire diff compares the last DescribeGroups answer's state
    def settled() -> Any:
        got = outcome_of(instances)
        return isinstance(got, tuple) and got[1] == "Stable" and got[0] in (["a", "b"], [None, None]) and got[0]
    _, got = wait_for(settled, env.timing.op_s, 0.3)
    last = outcome_of(instances)
    return {"before": before, "after": after, "instances": got or (last[0] if isinstance(last, tuple) else last)}


# aiokafka heartbeats with Heartbeat v1, which carries no group.instance.id: both brokers answer the replaced
# member UNKNOWN_MEMBER_ID, it rejoins as the static member and takes the slot back, and the two members take it in
# turns (seen in aiokafka's log on both brokers). A JoinGroup that meets the other's pending join or sync fences
# it (FENCED_INSTANCE_ID, which aiokafka has no class for: a bare KafkaError "UnknownError()"), and the fenced one
# stays fenced: aiokafka keeps the replaced member id and joins with it again, FENCED_INSTANCE_ID each time. Whether
# that happens, and to which of the two, is the clients' timing, not the broker's: the old member's rejoin landing
# between the new member's JoinGroup and SyncGroup fences the new one before it ever holds the partition (made so on
# purpose with a delayed SyncGroup on fakekafka; seen once on one broker in a parallel CI run). For aiokafka the
# new member takes the partition or is fenced so, and the fences are left out of `old_error`.
def _fenced_expected(client: Client) -> Outcome:
    if client.name == "kafka-python":
        return {"new": [[0]], "old_refused": True}
    if _aiokafka(client):
        return {"new_took_it_or_was_fenced": True, "old_error": None}
    return {"new": [[0]], "old_error": "FENCED_INSTANCE_ID"}


@scenario("static_member_fenced", _fenced_expected, slow=True, uses=("group",))
def static_member_fenced(client: Client, env: Env) -> Outcome:
    """Two live consumers with the same group.instance.id: the newer takes the partition, the older is
    fenced (FENCED_INSTANCE_ID) the next time it talks to the coordinator."""
    topic, group = env.name("t"), env.name("g")
    env.create_topic(topic)
    old = env.member(client, group, topic, instance_id="same")
    _settled(env, [old], 1)
    new = env.member(client, group, topic, instance_id="same")
    if _aiokafka(client):
        fences: list[str] = []

        def took_or_fenced() -> bool:
            fences.extend(e.message for e in new.errors() if "UnknownError" in e.message)
            return [p for _, p in new.assignment()] == [0] or bool(fences)
        took, _ = wait_for(took_or_fenced, env.timing.group_s, 0.1)
        _, seen = wait_for(lambda: [e.code for e in old.errors() if "UnknownError" not in e.message],
                           env.timing.group_s / 2, 0.2)
        return {"new_took_it_or_was_fenced": took, "old_error": seen[0] if seen else None}
    got = _settled(env, [new], 1)
    errors: list[str] = []

    def fenced() -> bool:
        errors.extend(e.code for e in old.errors())
        return any("FENCED" in e for e in errors)
    if client.name == "kafka-python":
        # kafka-python 3 only logs a heartbeat's FENCED_INSTANCE_ID; its poll() raises it when the member
        # happens to rejoin afterwards, which it did on an idle machine and not under load (on both brokers,
        # whose heartbeat answers were the same). Its next call to the coordinator from the application, a
        # commit, is refused as fenced every time: that is what the scenario asks it once it stopped waiting.
        # kafka-python also refuses a commit itself while it believes its member is rejoining
        # (REBALANCE_IN_PROGRESS, never sent by either broker), and on both brokers it was seen to stay there for
        # the whole wait in parallel CI runs: what is compared for it is that the old member cannot commit, by the
        # coordinator's FENCED_INSTANCE_ID or by its own refusal; the commit is made again until one of them comes.
        def commit_refused() -> bool:
            try:
                old.commit({(topic, 0): (0, None)})
            except ClientError as e:
                errors.append(e.code)
            return fenced() or "REBALANCE_IN_PROGRESS" in errors
        if not wait_for(fenced, 5, 0.2)[0]:
            wait_for(commit_refused, env.timing.group_s / 2, 0.5)
        return {"new": got, "old_refused": fenced() or "REBALANCE_IN_PROGRESS" in errors}
    wait_for(fenced, env.timing.group_s / 2, 0.2)
    return {"new": got, "old_error": next((e for e in errors if "FENCED" in e), errors[0] if errors else None)}


# --- session timeouts ------------------------------------------------------------------------------

def _session_outcome(client: Client, env: Env, session_ms: int) -> Outcome:
    topic, group = env.name("t"), env.name("g")
    env.create_topic(topic)
    try:
        m = env.member(client, group, topic, session_timeout_ms=session_ms)
    except ClientError as e:
        if e.code != "CLIENT_REJECTED":  # a driver in another process reports the client's own refusal thus
            raise
        return {"error": "CLIENT_REJECTED", "exception": e.type, "assigned": []}
    except Unsupported:
        raise
    except Exception as e:  # noqa: BLE001 - the client refused the setting itself
        return {"error": "CLIENT_REJECTED", "exception": type(e).__name__, "assigned": []}
    errors: list[str] = []

    def seen() -> bool:
        errors.extend(e.code for e in m.errors())
        return bool(errors)
    wait_for(seen, 8, 0.2)
    return {"error": errors[0] if errors else None, "assigned": [p for _, p in m.assignment()]}


@scenario("session_timeout_below_min", {"error": "INVALID_SESSION_TIMEOUT", "assigned": []}, slow=True,
          uses=("group",))
def session_timeout_below_min(client: Client, env: Env) -> Outcome:
    """A member with session.timeout.ms=1000, under group.min.session.timeout.ms (6000): INVALID_SESSION_TIMEOUT."""
    return _session_outcome(client, env, 1000)


def _above_max_expected(client: Client) -> Outcome:
    # librdkafka caps session.timeout.ms at 3600000 but refuses more than its request timeout allows itself
    error = {"confluent-kafka": "CLIENT_REJECTED", "kcat": "CLIENT:kcat", "rdkafka": "CLIENT_REJECTED"}.get(
        client.name, "INVALID_SESSION_TIMEOUT")
    return {"error": error, "assigned": []}


@scenario("session_timeout_above_max", _above_max_expected, slow=True, uses=("group",))
def session_timeout_above_max(client: Client, env: Env) -> Outcome:
    """A member with session.timeout.ms=1800001, over group.max.session.timeout.ms: INVALID_SESSION_TIMEOUT."""
    return _session_outcome(client, env, 1_800_001)


# --- commits -------------------------------------------------------------------------------------------

def _live_commit_expected(client: Client) -> Outcome:
    # the broker answers UNKNOWN_MEMBER_ID; Java (4.4, 3.9 and 2.8 alike), kafka-python and aiokafka turn it
    # into CommitFailed
    java = client.name == "java" or client.name.startswith("java-")
    error = {"kafka-python": "CLIENT:CommitFailedError", "aiokafka": "CLIENT:CommitFailedError",
             "aiokafka-0.13.0": "CLIENT:CommitFailedError"}.get(
        client.name, "CLIENT:CommitFailedException" if java else "UNKNOWN_MEMBER_ID")
    return {"commit": {"error": error}, "committed": {}}


@scenario("commit_into_live_group", _live_commit_expected, uses=("commit", "group"), slow=True)
def commit_into_live_group(client: Client, env: Env) -> Outcome:
    """A consumer with manually assigned partitions commits into a group that has a live member: refused."""
    topic, group = env.name("t"), env.name("g")
    env.create_topic(topic)
    _fill(env, topic, 2)
    live = env.member(client, group, topic)
    _settled(env, [live], 1)
    outsider = env.member(client, group, topic, assign=[0])
    out: Outcome = {"commit": _ok(lambda: outsider.commit({(topic, 0): (1, None)}))}
    out["committed"] = {str(p): o for p, (o, _) in client.committed(group, topic, 1).items()}
    return out


@scenario("commit_beyond_end", {"commit": OK, "committed": {"0": 1000}, "resumed": [0, 1, 2]}, uses=("commit", "group"))
def commit_beyond_end(client: Client, env: Env) -> Outcome:
    """Offset 1000 committed for a 3-record partition is stored; the next reader resets (earliest) to 0."""
    topic, group = env.name("t"), env.name("g")
    env.create_topic(topic)
    _fill(env, topic, 3)
    a = env.member(client, group, topic, assign=[0])
    out: Outcome = {"commit": _ok(lambda: a.commit({(topic, 0): (1000, None)}))}
    a.close()
    out["committed"] = {str(p): o for p, (o, _) in client.committed(group, topic, 1).items()}
    b = env.member(client, group, topic, assign=[0], offset_reset="earliest")
    got, _ = env.receive(b, 3, timeout=env.timing.fetch_s)
    out["resumed"] = [r.offset for r in got]
    return out


@scenario("committed_overrides_reset", {"offsets": [1, 2]}, uses=("commit", "group"))
def committed_overrides_reset(client: Client, env: Env) -> Outcome:
    """A committed offset (1) wins over auto.offset.reset=latest: reading resumes at 1, not at the end."""
    topic, group = env.name("t"), env.name("g")
    env.create_topic(topic)
    _fill(env, topic, 3)
    a = env.member(client, group, topic, assign=[0])
    a.commit({(topic, 0): (1, None)})
    a.close()
    b = env.member(client, group, topic, assign=[0], offset_reset="latest")
    got, _ = env.receive(b, 2, timeout=env.timing.fetch_s)
    return {"offsets": [r.offset for r in got]}


@scenario("committed_unknown_group", {"committed": {}}, uses=("commit", "group"))
def committed_unknown_group(client: Client, env: Env) -> Outcome:
    """OffsetFetch for a group nobody used: no committed offsets (and no error)."""
    topic = env.name("t")
    env.create_topic(topic)
    return {"committed": outcome_of(lambda: {str(p): o for p, (o, _) in
                                             client.committed(env.name("never"), topic, 1).items()})}


# --- positions ---------------------------------------------------------------------------------------

@scenario("pause_resume", {"first": [0, 1], "while_paused": [], "after_resume": [2, 3]}, uses=("group",))
def pause_resume(client: Client, env: Env) -> Outcome:
    """An assigned consumer reads 2 records, pauses, misses 2 new ones while paused, gets them on resume."""
    topic, group = env.name("t"), env.name("g")
    env.create_topic(topic)
    _fill(env, topic, 2)
    m = env.member(client, group, topic, assign=[0])
    first, _ = env.receive(m, 2, timeout=env.timing.fetch_s)
    m.pause([(topic, 0)])
    # a client may pause from its next Fetch on (sarama): the records come after the Fetch in flight at the pause
    # has ended, which its long poll bounds (fetch max wait: 100 ms to 500 ms in the drivers)
    time.sleep(1.0)
    env.produce(topic, b"p2")
    env.produce(topic, b"p3")
    time.sleep(1.5)
    paused = m.take()
    m.resume([(topic, 0)])
    after, _ = env.receive(m, 2, timeout=env.timing.fetch_s)
    return {"first": [r.offset for r in first], "while_paused": [r.offset for r in paused],
            "after_resume": [r.offset for r in after]}


@scenario("seek_middle", {"first": list(range(10)), "after_seek": [4, 5, 6, 7, 8, 9]}, uses=("group",))
def seek_middle(client: Client, env: Env) -> Outcome:
    """An assigned consumer reads 10 records, seeks back to 4 and reads 4..9 again."""
    topic, group = env.name("t"), env.name("g")
    env.create_topic(topic)
    _fill(env, topic, 10)
    m = env.member(client, group, topic, assign=[0])
    first, _ = env.receive(m, 10, timeout=env.timing.fetch_s)
    m.seek((topic, 0), 4)
    again, _ = env.receive(m, 6, timeout=env.timing.fetch_s)
    return {"first": [r.offset for r in first], "after_seek": [r.offset for r in again]}


# --- KIP-848: the consumer group protocol (group.protocol=consumer) --------------------------------------

def _kip848(client: Client, env: Env, group: str, topic: str) -> Member:
    """A member speaking KIP-848's protocol; Unsupported (the cell is not applicable) for clients without it.
    Kafka's coordinator must know the topic first: a member joining before is given nothing, and librdkafka's
    member was seen to hold nothing for minutes after that under load, while its partner held both."""
    env.topic_at_group_coordinator(group, topic)
    return env.member(client, group, topic, group_protocol="consumer")


def _stable_at_epoch(env: Env, group: str, members: int) -> bool:
    """Whether the broker comes to show `group` as a KIP-848 consumer group (ConsumerGroupDescribe, asked by the
    harness) of `members` members, each at the group's epoch with its target assignment: a client that fell
    back to the classic protocol (franz-go does on a broker without ConsumerGroupHeartbeat v1) fails here."""
    def stable() -> bool:
        view = env.cluster().consumer_group(group)
        return (view is not None and len(view.members) == members and view.assignment_epoch == view.group_epoch
                and all(m.member_epoch == view.group_epoch and m.assignment == m.target_assignment
                        for m in view.members))
    return wait_for(stable, env.timing.group_s, 0.1)[0]


@scenario("consumer_protocol_join_leave", {"two": [2, 2], "after_leave": [[0, 1, 2, 3]], "listed": True,
                                           "entry": {"protocol_type": "consumer", "state": "Stable"},
                                           "stable_at_epoch": [True, True]},
          uses=("group", "admin"), slow=True)
def consumer_protocol_join_leave(client: Client, env: Env) -> Outcome:
    """KIP-848: two members share four partitions two and two (the broker's uniform assignor; which two each
    gets is the broker's choice), the group is listed as a consumer group, and when one leaves the other
    holds all four; each time the broker shows every member at the group's epoch with nothing pending."""
    topic, group = env.name("t"), env.name("g")
    env.create_topic(topic, 4)
    a = _kip848(client, env, group, topic)
    _settled(env, [a], 4)  # b joins a group a holds (see consumer_protocol_partitions_added)
    b = _kip848(client, env, group, topic)
    two = [len(ps) for ps in _settled(env, [a, b], 4)]
    stable_two = _stable_at_epoch(env, group, 2)
    groups = client.list_groups()
    b.close()
    after_leave = _settled(env, [a], 4)
    return {"two": two, "after_leave": after_leave, "listed": group in groups, "entry": groups.get(group),
            "stable_at_epoch": [stable_two, _stable_at_epoch(env, group, 1)]}


@scenario("consumer_protocol_commit_resume", {"first": ["r0", "r1", "r2"], "committed": {"0": 3},
                                              "resumed": ["r3"]},
          uses=("group", "commit"), slow=True)
def consumer_protocol_commit_resume(client: Client, env: Env) -> Outcome:
    """KIP-848: a member commits (OffsetCommit with its member epoch) and leaves; the next member resumes
    from the committed offset."""
    topic, group = env.name("t"), env.name("g")
    env.create_topic(topic)
    _fill(env, topic, 3)
    a = _kip848(client, env, group, topic)
    first, _ = env.receive(a, 3)
    a.commit({(topic, 0): (3, None)})
    a.close()
    env.produce(topic, b"r3")
    b = _kip848(client, env, group, topic)
    resumed, _ = env.receive(b, 1)
    return {"first": [(r.value or b"").decode() for r in first],
            "committed": {str(p): o for p, (o, _) in client.committed(group, topic, 1).items()},
            "resumed": [(r.value or b"").decode() for r in resumed]}


@scenario("consumer_protocol_partitions_added", {"before": [[0], [1]], "after": [2, 2], "stable_at_epoch": True},
          uses=("group", "admin"), slow=True)
def consumer_protocol_partitions_added(client: Client, env: Env) -> Outcome:
    """KIP-848, the seeds' third rebalance trigger: partitions added to a subscribed topic (CreatePartitions, 2
    to 4) reach the two members from the broker, which notices the new metadata itself (a classic group waits
    for a client's metadata refresh); they end with two each, every member at the group's epoch."""
    topic, group = env.name("t"), env.name("g")
    env.create_topic(topic, 2)
    a = _kip848(client, env, group, topic)
    # b joins once a holds both: started one after the other, the two can join in either order, and a
    # confluent-kafka member that joined first on Kafka 4.4 (the other's join 1.1 s late) never gave up the
    # partition the second was to get, for the whole 60 s wait; the scenario is about the partitions added
    _settled(env, [a], 2)
    b = _kip848(client, env, group, topic)
    before = _settled(env, [a, b], 2)
    client.create_partitions(topic, 4)
    after = [len(ps) for ps in _settled(env, [a, b], 4)]
    return {"before": before, "after": after, "stable_at_epoch": _stable_at_epoch(env, group, 2)}
