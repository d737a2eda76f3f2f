"""Transactions: what read_committed and read_uncommitted consumers see, the last stable offset, zombie
fencing, offsets sent to a transaction, and the calls a client refuses in the wrong state.

Kafka (KIP-98; KIP-447; KIP-890; Kafka's "Transactions" design and the producer's javadoc):
- A transaction's records take offsets as they arrive; EndTxn writes a control record (the COMMIT or ABORT
  marker) to every partition of the transaction, which takes an offset of its own and is never delivered.
- A read_committed consumer reads only up to the last stable offset (LSO: the first offset of the oldest
  open transaction) and skips aborted records (Fetch's aborted-transactions list); a read_uncommitted one
  sees every record. ListOffsets "latest" under read_committed answers the LSO.
- InitProducerId with a transactional id in use bumps the epoch: the older producer's open transaction is
  aborted and its next EndTxn is refused (PRODUCER_FENCED).
- TxnOffsetCommit stages a group's offsets: the group's committed offsets change only when the
  transaction commits (OffsetFetch with require_stable answers UNSTABLE_OFFSET_COMMIT meanwhile); an abort
  drops them. A TxnOffsetCommit by group id alone (generation -1, no member id) is accepted.
- transaction.timeout.ms above the broker's transaction.max.timeout.ms (900000) is INVALID_TRANSACTION_TIMEOUT.
- commit or abort with no transaction open, and begin twice, are refused by the client itself
  (CLIENT_REJECTED: Java's IllegalStateException, librdkafka's _STATE, kafka-python's IllegalStateError,
  aiokafka's IllegalOperation) without a request.

Every scenario here needs a transactional producer (`uses=("transactions",)`): kcat has none.
"""

from __future__ import annotations

from typing import Any

from compat.clients.base import Client, Rec
from compat.env import Env, acks, outcome_of, rows, wait_for
from compat.scenarios.registry import Outcome, scenario
from fakekafka.wire import ApiKey

RC, RU = "read_committed", "read_uncommitted"
OK = "ok"
USES = ("transactions",)


def _r(value: bytes, partition: int = 0) -> Rec:
    return Rec(None, value, [], partition)


def _row(partition: int, offset: int, value: str) -> list[Any]:
    return [partition, offset, None, value, []]


def _ok(fn: Any) -> Any:
    return outcome_of(lambda: fn() or OK)


def _offset(env: Env, topic: str, partition: int, isolation_level: int) -> int:
    """ListOffsets latest over the wire, read_uncommitted (0: the high watermark) or read_committed (1: the
    last stable offset)."""
    r = env.cluster()._leader(topic, partition).request(ApiKey.LIST_OFFSETS, None, {
        "replica_id": -1, "isolation_level": isolation_level,
        "topics": [{"name": topic, "partitions": [{"partition_index": partition, "timestamp": -1}]}]})
    return r.topics[0].partitions[0].offset


def _landed(env: Env, topic: str, partitions: int = 1) -> None:
    """Waits until the markers of the transactions ended so far are in the log (the last stable offset is
    the high watermark on every partition): Kafka writes them just after answering EndTxn, fakekafka before,
    so a client reading at once would be answered from different logs (python -m compat diff pairs its
    Fetch requests)."""
    wait_for(lambda: all(_offset(env, topic, i, 1) == _offset(env, topic, i, 0) for i in range(partitions)),
             env.timing.op_s, 0.02)


@scenario("txn_commit_abort_visibility", lambda client: {
    "acks": acks(client, [[0, 0], [0, 1], [0, 3], [0, 4], [0, 6]]),
    "read_committed": [_row(0, 0, "c0"), _row(0, 1, "c1"), _row(0, 6, "c2")],
    "read_uncommitted": [_row(0, 0, "c0"), _row(0, 1, "c1"), _row(0, 3, "a0"), _row(0, 4, "a1"), _row(0, 6, "c2")],
    "end": 8, "latest_read_committed": 8}, uses=USES)
def txn_commit_abort_visibility(client: Client, env: Env) -> Outcome:
    """Committed, aborted, committed: read_committed sees the committed records only, read_uncommitted all
    of them; each COMMIT/ABORT marker takes an offset."""
    topic = env.name("t")
    env.create_topic(topic)
    p = env.transactional(client, "tx")
    p.begin()
    sent = p.send(topic, [_r(b"c0"), _r(b"c1")])
    p.commit()
    p.begin()
    sent += p.send(topic, [_r(b"a0"), _r(b"a1")])
    p.abort()
    p.begin()
    sent += p.send(topic, [_r(b"c2")])
    p.commit()
    _landed(env, topic)
    return {"acks": acks(client, sent), "read_committed": rows(client.fetch(topic, 0, 0, 3, isolation=RC)),
            "read_uncommitted": rows(client.fetch(topic, 0, 0, 5, isolation=RU)),
            "end": env.cluster().end_offsets(topic)[0],
            "latest_read_committed": client.list_offsets(topic, 0, "latest", isolation=RC)}


@scenario("txn_open_holds_back_read_committed", {
    "open": {"latest_read_committed": 0, "high_watermark": 2,
             "read_uncommitted": [_row(0, 0, "open"), _row(0, 1, "plain")]},
    "committed": {"latest_read_committed": 3, "read_committed": [_row(0, 0, "open"), _row(0, 1, "plain")]}},
    uses=USES)
def txn_open_holds_back_read_committed(client: Client, env: Env) -> Outcome:
    """A plain record written after an open transaction's first record: the last stable offset (latest
    under read_committed) stays at the transaction's start until it commits, then both are readable."""
    topic = env.name("t")
    env.create_topic(topic)
    p = env.transactional(client, "tx")
    p.begin()
    p.send(topic, [_r(b"open")])
    env.produce(topic, b"plain")
    opened = {"latest_read_committed": client.list_offsets(topic, 0, "latest", isolation=RC),
              "high_watermark": env.cluster().end_offsets(topic)[0],
              "read_uncommitted": rows(client.fetch(topic, 0, 0, 2, isolation=RU))}
    p.commit()
    _landed(env, topic)
    read = rows(client.fetch(topic, 0, 0, 2, isolation=RC))
    committed = {"latest_read_committed": client.list_offsets(topic, 0, "latest", isolation=RC),
                 "read_committed": read}
    return {"open": opened, "committed": committed}


@scenario("txn_abort_multi_partition", {
    "read_committed": [[_row(0, 3, "c0")], [_row(1, 2, "c1")], [_row(2, 2, "c2")]],
    "read_uncommitted_p0": [_row(0, 0, "a0"), _row(0, 1, "a3"), _row(0, 3, "c0")],
    "ends": {"0": 5, "1": 4, "2": 4}}, uses=USES)
def txn_abort_multi_partition(client: Client, env: Env) -> Outcome:
    """A transaction over three partitions aborted, then one committed: every partition got its ABORT
    marker, read_committed skips the aborted records on each, read_uncommitted shows them."""
    topic = env.name("t")
    env.create_topic(topic, 3)
    p = env.transactional(client, "tx")
    p.begin()
    p.send(topic, [_r(b"a0", 0), _r(b"a1", 1), _r(b"a2", 2), _r(b"a3", 0)])
    p.abort()
    p.begin()
    p.send(topic, [_r(b"c0", 0), _r(b"c1", 1), _r(b"c2", 2)])
    p.commit()
    _landed(env, topic, 3)
    return {"read_committed": [rows(client.fetch(topic, i, 0, 1, isolation=RC)) for i in range(3)],
            "read_uncommitted_p0": rows(client.fetch(topic, 0, 0, 3, isolation=RU)),
            "ends": {str(k): v for k, v in sorted(env.cluster().end_offsets(topic).items())}}


def _fenced_expected(client: Client) -> Outcome:
    # KafkaJS asks EndTxn v0, where Kafka names the stale epoch INVALID_PRODUCER_EPOCH (PRODUCER_FENCED is for
    # v2+ and the clients that map it: Java, librdkafka's _FENCED, kafka-python, aiokafka, franz-go)
    fenced = "INVALID_PRODUCER_EPOCH" if client.name == "kafkajs" else "PRODUCER_FENCED"
    return {"zombie_commit": {"error": fenced},
            "read_committed": [_row(0, 2, "s0")], "read_uncommitted": [_row(0, 0, "zombie"), _row(0, 2, "s0")],
            "successor_p1": [_row(1, 0, "s1")]}


@scenario("txn_zombie_fenced", _fenced_expected, uses=USES)
def txn_zombie_fenced(client: Client, env: Env) -> Outcome:
    """A second producer with the same transactional.id fences the first: the zombie's open transaction is
    aborted, its commit refused; the successor's records are committed."""
    topic = env.name("t")
    env.create_topic(topic, 2)
    zombie = env.transactional(client, "tx")
    zombie.begin()
    zombie.send(topic, [_r(b"zombie", 0)])
    successor = env.transactional(client, "tx")
    successor.begin()
    successor.send(topic, [_r(b"s0", 0), _r(b"s1", 1)])
    successor.commit()
    _landed(env, topic, 2)
    return {"zombie_commit": _ok(zombie.commit),
            "read_committed": rows(client.fetch(topic, 0, 0, 1, isolation=RC)),
            "read_uncommitted": rows(client.fetch(topic, 0, 0, 2, isolation=RU)),
            "successor_p1": rows(client.fetch(topic, 1, 0, 1, isolation=RC))}


def _stable_fetch(env: Env, group: str, topic: str) -> str:
    """OffsetFetch with require_stable over the wire: the partition's error name (or its offset)."""
    from fakekafka.wire import ErrorCode
    conn = env.cluster()._coordinator(group)
    r = conn.request(ApiKey.OFFSET_FETCH, 8, {
        "groups": [{"group_id": group, "topics": [{"name": topic, "partition_indexes": [0]}]}],
        "require_stable": True})
    g = r.groups[0]
    if g.error_code:
        return ErrorCode(g.error_code).name
    part = g.topics[0].partitions[0]
    return ErrorCode(part.error_code).name if part.error_code else str(part.committed_offset)


def _settled(env: Env, group: str, topic: str) -> dict[str, Any]:
    """The group's offsets once the transaction's marker reached the group coordinator: Kafka answers
    EndTxn before it writes the markers, so UNSTABLE_OFFSET_COMMIT may last a moment after commit or abort."""
    _, stable = wait_for(lambda: (s := _stable_fetch(env, group, topic)) != "UNSTABLE_OFFSET_COMMIT" and s,
                         env.timing.op_s, 0.05)
    return {"committed": _committed(env, group), "require_stable": stable or _stable_fetch(env, group, topic)}


def _committed(env: Env, group: str) -> dict[str, int]:
    """The group's committed offsets as OffsetFetch (require_stable off) shows them, by partition."""
    return {str(p): o for (_, p), o in sorted(env.cluster().committed(group).items())}


def _pending(client: Client) -> dict[str, Any]:
    # sarama keeps the offsets of AddOffsetsToTxn in the client and sends them (AddOffsetsToTxn,
    # TxnOffsetCommit) only within CommitTxn: until then the coordinator has nothing pending
    stable = "-1" if client.name == "sarama" else "UNSTABLE_OFFSET_COMMIT"
    return {"committed": {}, "require_stable": stable}


@scenario("txn_send_offsets_commit_and_abort", lambda client: {
    "pending": _pending(client),
    "after_commit": {"committed": {"0": 2}, "require_stable": "2"},
    "after_abort": {"committed": {"0": 2}, "require_stable": "2"},
    "outputs_read_committed": [_row(0, 0, "IN0"), _row(0, 1, "IN1")]}, uses=USES)
def txn_send_offsets_commit_and_abort(client: Client, env: Env) -> Outcome:
    """Consume-transform-produce: offsets sent to a transaction (by group id) become the group's committed
    offsets only when it commits (pending meanwhile: UNSTABLE_OFFSET_COMMIT under require_stable); the
    next transaction's offsets are dropped with its abort."""
    source, sink, group = env.name("in"), env.name("out"), env.name("g")
    env.create_topic(source)
    env.create_topic(sink)
    for i in range(4):
        env.produce(source, b"in%d" % i)
    p = env.transactional(client, "tx")
    out: Outcome = {}
    for step, (start, end) in (("after_commit", (0, 2)), ("after_abort", (2, 4))):
        got = client.fetch(source, 0, start, end - start, isolation=RC)
        p.begin()
        p.send(sink, [_r((r.value or b"").upper()) for r in got])
        p.send_offsets(group, {(source, 0): end})
        if step == "after_commit":
            out["pending"] = {"committed": _committed(env, group), "require_stable": _stable_fetch(env, group, source)}
            p.commit()
        else:
            p.abort()
        out[step] = _settled(env, group, source)
    _landed(env, sink)
    out["outputs_read_committed"] = rows(client.fetch(sink, 0, 0, 2, isolation=RC))
    return out


def _misuse_expected(client: Client) -> Outcome:
    # franz-go's EndTransaction outside a transaction does nothing and returns no error
    ended = OK if client.name == "franz-go" else {"error": "CLIENT_REJECTED"}
    return {"commit_after_end": ended, "abort_after_end": ended, "begin_twice": {"error": "CLIENT_REJECTED"},
            "then_commit": OK, "read_committed": [_row(0, 0, "first"), _row(0, 2, "second")]}


@scenario("txn_end_misuse", _misuse_expected, uses=USES)
def txn_end_misuse(client: Client, env: Env) -> Outcome:
    """Commit and abort with no transaction open (the last one committed), and begin twice, are refused by
    the client without a request; the producer still works afterwards."""
    topic = env.name("t")
    env.create_topic(topic)
    p = env.transactional(client, "tx")
    p.begin()
    p.send(topic, [_r(b"first")])
    p.commit()
    out: Outcome = {"commit_after_end": _ok(p.commit), "abort_after_end": _ok(p.abort)}
    p.begin()
    out["begin_twice"] = _ok(p.begin)
    p.send(topic, [_r(b"second")])
    out["then_commit"] = _ok(p.commit)
    _landed(env, topic)
    out["read_committed"] = rows(client.fetch(topic, 0, 0, 2, isolation=RC))
    return out


@scenario("txn_timeout_above_max", {"over_max": {"error": "INVALID_TRANSACTION_TIMEOUT"}, "at_max": OK},
          uses=USES)
def txn_timeout_above_max(client: Client, env: Env) -> Outcome:
    """transaction.timeout.ms above the broker's transaction.max.timeout.ms (900000) is refused by
    InitProducerId (at initTransactions, or at the first begin where the client asks for its producer id
    lazily); 900000 itself is taken."""
    topic = env.name("t")
    env.create_topic(topic)

    def one(suffix: str, timeout_ms: int) -> None:
        p = env.transactional(client, suffix, timeout_ms=timeout_ms)
        p.begin()
        p.send(topic, [_r(suffix.encode())])
        p.commit()
    return {"over_max": _ok(lambda: one("over", 900_001)), "at_max": _ok(lambda: one("max", 900_000))}


@scenario("txn_crash_restart_exactly_once", {
    "committed_seen_by_restart": {"0": 2}, "restart_fences_and_commits": OK,
    "outputs_read_committed": [_row(0, 0, "IN0"), _row(0, 1, "IN1"), _row(0, 6, "IN2"), _row(0, 7, "IN3")],
    "committed_at_end": {"0": 4}}, uses=USES)
def txn_crash_restart_exactly_once(client: Client, env: Env) -> Outcome:
    """Consume-transform-produce across a crash: the first instance commits two inputs' outputs with their
    offsets, then dies mid-transaction (outputs and offsets sent, never committed); its restart (same
    transactional.id) fences it, aborting that transaction, and carries on from the committed offset:
    every input's output exactly once under read_committed (the aborted copies and three markers between:
    offsets 0, 1, 6, 7)."""
    source, sink, group = env.name("in"), env.name("out"), env.name("g")
    env.create_topic(source)
    env.create_topic(sink)
    for i in range(4):
        env.produce(source, b"in%d" % i)

    def process(p: Any, start: int, end: int, *, commit: bool) -> None:
        got = client.fetch(source, 0, start, end - start, isolation=RC)
        p.begin()
        p.send(sink, [_r((r.value or b"").upper()) for r in got])
        p.send_offsets(group, {(source, 0): end})
        if commit:
            p.commit()

    first = env.transactional(client, "etl")
    process(first, 0, 2, commit=True)
    process(first, 2, 4, commit=False)  # the process dies here
    restarted = env.transactional(client, "etl")  # fences the dead one: its open transaction is aborted
    # Kafka writes the abort's markers just after answering: give the group's offset a moment to settle
    # (KafkaJS asks for its producer id, fencing, only at begin: there it stays pending until then)
    wait_for(lambda: _stable_fetch(env, group, source) != "UNSTABLE_OFFSET_COMMIT", 3.0, 0.05)
    seen = client.committed(group, source, 1)
    start = seen.get(0, (0, None))[0]
    out: Outcome = {"committed_seen_by_restart": {str(p): o for p, (o, _) in seen.items()}}
    out["restart_fences_and_commits"] = _ok(lambda: process(restarted, start, 4, commit=True))
    _landed(env, sink)
    out["outputs_read_committed"] = rows(client.fetch(sink, 0, 0, 4, isolation=RC))
    out["committed_at_end"] = _settled(env, group, source)["committed"]
    return out
