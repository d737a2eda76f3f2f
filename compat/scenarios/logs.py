"""A partition's log at its edges: DeleteRecords and what follows from it, ListOffsets where there is
nothing to find, fetching at or past the ends, mid-batch starts, and timestamps.

Kafka: DeleteRecords moves the log start offset (the low watermark) to the offset given, or to the high
watermark for -1, and refuses an offset past the high watermark (OFFSET_OUT_OF_RANGE); ListOffsets
"earliest" is the log start, by timestamp the first offset at or after it whose timestamp is at least
the one asked for (KIP-79; records need not be in timestamp order), "max timestamp" (-3, KIP-734) the
offset of the record with the largest timestamp; a Fetch below the log start or past the high watermark
is OFFSET_OUT_OF_RANGE, at the high watermark it waits for data; a fetch from the middle of a batch gets
the whole batch and the client drops the records before its position. A compacted topic's cleaned segments
keep the latest record per key at its offset (tombstones for delete.retention.ms): a consumer from the
beginning reads them with gaps, and the log start stays where it was (LogCleaner). Retention deletes whole
segments from the log start (UnifiedLog.deleteOldSegments): the log start moves to the first segment kept,
below it a Fetch is OFFSET_OUT_OF_RANGE.
"""

from __future__ import annotations

import time
from typing import Any

from compat.clients.base import Client, Rec, Unsupported
from compat.env import T0, Env, acks, outcome_of, wait_for
from compat.scenarios.registry import Outcome, scenario
from fakekafka.model.errors import ApiError


def _offsets(recs: list[Rec]) -> list[int]:
    return [r.offset for r in recs]


def _fill(env: Env, topic: str, n: int, *, ts: list[int] | None = None) -> None:
    for i in range(n):
        env.produce(topic, b"r%d" % i, timestamp=ts[i] if ts else None)


@scenario("delete_records_then_earliest", {"low_watermark": 4, "earliest": 4, "latest": 10,
                                           "read_from_0": [4, 5, 6]}, uses=("admin",))
def delete_records_then_earliest(client: Client, env: Env) -> Outcome:
    """DeleteRecords before offset 4 of 10: the low watermark and earliest are 4; reading from 0 resets to 4."""
    topic = env.name("t")
    env.create_topic(topic)
    _fill(env, topic, 10)
    low = client.delete_records(topic, 0, 4)
    return {"low_watermark": low, "earliest": client.list_offsets(topic, 0, "earliest"),
            "latest": client.list_offsets(topic, 0, "latest"),
            "read_from_0": _offsets(client.fetch(topic, 0, 0, 3, reset="earliest"))}


@scenario("delete_records_edges", {"to_end": 5, "earliest": 5, "latest": 5, "again": 5,
                                   "past_end": {"error": "OFFSET_OUT_OF_RANGE"}}, uses=("admin",))
def delete_records_edges(client: Client, env: Env) -> Outcome:
    """DeleteRecords to the high watermark (-1) empties the log; deleting again is harmless; past it refused."""
    topic = env.name("t")
    env.create_topic(topic)
    _fill(env, topic, 5)
    out: Outcome = {"to_end": client.delete_records(topic, 0, -1)}
    out["earliest"] = client.list_offsets(topic, 0, "earliest")
    out["latest"] = client.list_offsets(topic, 0, "latest")
    out["again"] = outcome_of(lambda: client.delete_records(topic, 0, 3))
    out["past_end"] = outcome_of(lambda: client.delete_records(topic, 0, 100))
    return out


@scenario("list_offsets_empty_log", {"earliest": 0, "latest": 0, "by_time": None})
def list_offsets_empty_log(client: Client, env: Env) -> Outcome:
    """ListOffsets on an empty partition: earliest = latest = 0, and no offset for any timestamp."""
    topic = env.name("t")
    env.create_topic(topic)
    return {"earliest": client.list_offsets(topic, 0, "earliest"), "latest": client.list_offsets(topic, 0, "latest"),
            "by_time": client.list_offsets(topic, 0, 0)}


@scenario("list_offsets_after_delete_records", {"at_0": 3, "at_ts1": 3, "at_ts4": 4, "after_last": None},
          uses=("admin",))
def list_offsets_after_delete_records(client: Client, env: Env) -> Outcome:
    """By-time lookups after DeleteRecords before 3 (of 5, a second apart): nothing below the log start."""
    topic = env.name("t")
    env.create_topic(topic)
    ts = [T0 + 1000 * i for i in range(5)]
    _fill(env, topic, 5, ts=ts)
    client.delete_records(topic, 0, 3)
    return {"at_0": client.list_offsets(topic, 0, 0), "at_ts1": client.list_offsets(topic, 0, ts[1]),
            "at_ts4": client.list_offsets(topic, 0, ts[4]), "after_last": client.list_offsets(topic, 0, ts[4] + 1)}


OUT_OF_ORDER = [T0 + 5000, T0 + 1000, T0 + 3000, T0 + 2000]


@scenario("list_offsets_unordered_timestamps", lambda client: {
    "at_t0": 0, "at_2000": 0, "at_4000": 0, "at_5001": None,
    # OffsetSpec.maxTimestamp() is in kafka-clients 3.0 and later (KIP-734): not in java-2.8, nor in
    # kafka-python 2.0.2, confluent-kafka 1.9.2, aiokafka or the rdkafka crate (no ListOffsets admin call)
    "max_timestamp": "unsupported" if client.name in ("aiokafka", "kcat", "java-2.8", "kafka-python-2.0.2",
                                                       "confluent-kafka-1.9.2", "rdkafka",
                                                       "aiokafka-0.13.0") else 0})
def list_offsets_unordered_timestamps(client: Client, env: Env) -> Outcome:
    """Timestamps 5000, 1000, 3000, 2000 (ms past T0): by time finds the first offset with a timestamp at
    least the one asked for, wherever later records stand; max timestamp is offset 0."""
    topic = env.name("t")
    env.create_topic(topic)
    _fill(env, topic, 4, ts=OUT_OF_ORDER)
    return {"at_t0": client.list_offsets(topic, 0, T0), "at_2000": client.list_offsets(topic, 0, T0 + 2000),
            "at_4000": client.list_offsets(topic, 0, T0 + 4000),
            "at_5001": client.list_offsets(topic, 0, T0 + 5001),
            "max_timestamp": _unless_unsupported(lambda: client.list_offsets(topic, 0, "max_timestamp"))}


def _unless_unsupported(fn: Any) -> Any:
    """fn's outcome, or "unsupported" when the client cannot do it (the rest of the scenario still runs)."""
    try:
        return outcome_of(fn)
    except Unsupported:
        return "unsupported"


@scenario("list_offsets_max_timestamp", {"empty": None, "one_per_batch": 2, "in_one_batch": 1})
def list_offsets_max_timestamp(client: Client, env: Env) -> Outcome:
    """ListOffsets max timestamp (-3): none on an empty log; the record with the largest timestamp, also
    when it sits inside a batch (the offset of that record, not of the batch)."""
    empty, singles, batch = env.name("empty"), env.name("singles"), env.name("batch")
    for t in (empty, singles, batch):
        env.create_topic(t)
    out: Outcome = {"empty": client.list_offsets(empty, 0, "max_timestamp")}
    _fill(env, singles, 4, ts=[T0, T0 + 1000, T0 + 9000, T0 + 2000])
    out["one_per_batch"] = client.list_offsets(singles, 0, "max_timestamp")
    env.produce_batch(batch, [b"b0", b"b1", b"b2"], [T0, T0 + 9000, T0 + 5000])
    out["in_one_batch"] = client.list_offsets(batch, 0, "max_timestamp")
    return out


# --- fetching around the ends ------------------------------------------------------------------------

@scenario("fetch_at_end_waits", {"at_end": [], "then": [3]})
def fetch_at_end_waits(client: Client, env: Env) -> Outcome:
    """Reading from the high watermark (3) finds nothing until a record arrives, then gets offset 3."""
    topic = env.name("t")
    env.create_topic(topic)
    _fill(env, topic, 3)
    at_end = _offsets(_short_fetch(client, env, topic, 3))
    env.produce(topic, b"late")
    return {"at_end": at_end, "then": _offsets(client.fetch(topic, 0, 3, 1))}


def _short_fetch(client: Client, env: Env, topic: str, offset: int) -> list[Rec]:
    """A fetch expected to come back empty: the client's fetch waits timing.fetch_s for one record."""
    saved = env.timing.fetch_s
    client.timing.fetch_s = min(saved, 2.0)
    try:
        return client.fetch(topic, 0, offset, 1)
    finally:
        client.timing.fetch_s = saved


PAST_OLD_END = "a record written after the reset"


# kcat -e exits at the end of the partition: after the reset it stops before the next record comes.
STOPS_AT_END = ("kcat",)


@scenario("fetch_past_end_reset_latest",
          lambda client: {"first": None if client.name in STOPS_AT_END else PAST_OLD_END})
def fetch_past_end_reset_latest(client: Client, env: Env) -> Outcome:
    """Reading from offset 50 of a 3-record log with auto.offset.reset=latest: reset to the end, then the records
    written after it, never the 3 before. A record is written every 1.5 s until the fetch ends (a client on a loaded
    machine may reset after the first one: it then reads the second); none for a client that stops at the end,
    whose one fetch after the reset would read a record written while it waited, or not, by timing."""
    topic = env.name("t")
    env.create_topic(topic)
    _fill(env, topic, 3)
    import threading
    done = threading.Event()

    def feed() -> None:
        while not done.wait(1.5):
            env.produce(topic, b"next")
    feeder = threading.Thread(target=feed, daemon=True)
    if client.name not in STOPS_AT_END:
        feeder.start()
    try:
        got = _offsets(client.fetch(topic, 0, 50, 1, reset="latest"))
    finally:
        done.set()
        if feeder.is_alive():
            feeder.join()
    return {"first": None if not got else PAST_OLD_END if got[0] >= 3 else got[0]}


@scenario("fetch_mid_batch", {"offsets": [5, 6, 7, 8, 9], "values": ["v5", "v6", "v7", "v8", "v9"]})
def fetch_mid_batch(client: Client, env: Env) -> Outcome:
    """Ten records in one batch, read from offset 5: the client drops the five before its position."""
    topic = env.name("t")
    env.create_topic(topic)
    env.produce_batch(topic, [b"v%d" % i for i in range(10)])
    got = client.fetch(topic, 0, 5, 5)
    return {"offsets": _offsets(got), "values": [r.value.decode() if r.value else None for r in got]}


# librdkafka (auto.offset.reset=error) reports ERR__AUTO_OFFSET_RESET, its "no offset" error, for it
@scenario("fetch_below_log_start", lambda client: {
    "reset_earliest": [2, 3],
    "reset_none": {"error": "NO_OFFSET_FOR_PARTITION" if client.name.startswith(("confluent-kafka", "rdkafka"))
                   else "OFFSET_OUT_OF_RANGE"}}, uses=("admin",))
def fetch_below_log_start(client: Client, env: Env) -> Outcome:
    """After DeleteRecords before 2, reading from 0: reset to the log start, or an error with reset none."""
    topic = env.name("t")
    env.create_topic(topic)
    _fill(env, topic, 4)
    client.delete_records(topic, 0, 2)
    earliest = _offsets(client.fetch(topic, 0, 0, 2, reset="earliest"))
    none = outcome_of(lambda: _offsets(_short_fetch_reset(client, env, topic, "none")))
    return {"reset_earliest": earliest, "reset_none": none}


def _short_fetch_reset(client: Client, env: Env, topic: str, reset: str) -> list[Rec]:
    saved = env.timing.fetch_s
    client.timing.fetch_s = min(saved, 3.0)
    try:
        return client.fetch(topic, 0, 0, 1, reset=reset)
    finally:
        client.timing.fetch_s = saved


# --- timestamps --------------------------------------------------------------------------------------

@scenario("log_append_time", lambda client: {"acks": acks(client, [(0, 0), (0, 1)]), "producer_ts_kept": False,
                                             "broker_time": True, "by_time_old": 0})
def log_append_time(client: Client, env: Env) -> Outcome:
    """A topic with message.timestamp.type=LogAppendTime: consumers see the broker's append time, not the
    producer's (an hour-old timestamp), and ListOffsets by that old time finds the first record."""
    topic = env.name("t")
    env.create_topic(topic, configs={"message.timestamp.type": "LogAppendTime"})
    old = int(time.time() * 1000) - 3_600_000
    before = int(time.time() * 1000) - 5000
    recs = [Rec(None, b"a", [], 0, timestamp=old), Rec(None, b"b", [], 0, timestamp=old)]
    sent = outcome_of(lambda: client.produce(topic, recs))
    if isinstance(sent, dict):  # kcat cannot set timestamps: let the harness write them
        for r in recs:
            env.produce(topic, r.value or b"", timestamp=old)
        sent = [(0, 0), (0, 1)]
    got = client.fetch(topic, 0, 0, 2)
    after = int(time.time() * 1000) + 5000
    stamps = [r.timestamp for r in got]
    return {"acks": acks(client, sent), "producer_ts_kept": any(t == old for t in stamps),
            "broker_time": bool(stamps) and all(t is not None and before <= t <= after for t in stamps),
            "by_time_old": client.list_offsets(topic, 0, old)}


@scenario("timestamp_far_future_refused", lambda client: {
    "future": {"error": "INVALID_TIMESTAMP"}, "end": 0, "within_limit": acks(client, [(0, 0)])},
          uses=("timestamps",))
def timestamp_far_future_refused(client: Client, env: Env) -> Outcome:
    """message.timestamp.after.max.ms=60000 (KIP-937): a record stamped a day ahead is INVALID_TIMESTAMP;
    one stamped now is taken."""
    topic = env.name("t")
    env.create_topic(topic, configs={"message.timestamp.after.max.ms": "60000"})
    now = int(time.time() * 1000)
    future = outcome_of(lambda: client.produce(topic, [Rec(None, b"f", [], 0, timestamp=now + 86_400_000)]))
    end = env.cluster().end_offsets(topic)[0]
    ok = outcome_of(lambda: acks(client, client.produce(topic, [Rec(None, b"n", [], 0, timestamp=now)])))
    return {"future": future, "end": end, "within_limit": ok}


__all__ = ["wait_for"]


COMPACTED_WRITES = [([(b"a", b"1"), (b"b", b"1"), (b"a", b"2"), (b"c", b"1")], 0),  # offsets 0-3
                    ([(b"b", None), (b"a", b"3")], 1000),  # 4-5: a new segment (segment.ms 100 between timestamps)
                    ([(b"d", b"1")], 2000)]  # 6: another, so [4, 5] is no longer the active segment
@scenario("compacted_topic_read_from_earliest", {
    "earliest": 0, "latest": 7,
    "records": [[0, 3, "c", "1", []], [0, 4, "b", None, []], [0, 5, "a", "3", []], [0, 6, "d", "1", []]]})
def compacted_topic_read_from_earliest(client: Client, env: Env) -> Outcome:
    """What the log cleaner leaves readable: a compacted topic with small segments (segment.ms, records a second
    apart) and min.cleanable.dirty.ratio 0.01, cleaned by a broker whose log.cleaner.backoff.ms is 100 ms
    (compat/brokers.py; a broker started otherwise may take its 15 s); read from the beginning, the latest
    record per key outside the active segment, at its offset, the tombstone kept (delete.retention.ms is a
    day), the earliest offset still 0. Kafka answers the first Fetch from the cleaned segment alone."""
    topic = env.name("t")
    env.create_topic(topic, configs={"cleanup.policy": "compact", "segment.ms": "100",
                                     "min.cleanable.dirty.ratio": "0.01"})
    t0 = int(time.time() * 1000)
    for recs, at in COMPACTED_WRITES:
        for key, value in recs:
            env.produce(topic, value, key=key, timestamp=t0 + at)
    # the cleaner's work, seen over the wire without the client under test: offsets 0-2 gone (a broker whose
    # log the waiter cannot read is not waited for: the client's own read is the outcome)
    try:
        wait_for(lambda: [r.offset for r in env.waiter().records(topic)][:1] == [3], timeout=20)
    except ApiError:
        pass
    got = client.fetch(topic, 0, 0, 4)
    return {"earliest": client.list_offsets(topic, 0, "earliest"), "latest": client.list_offsets(topic, 0, "latest"),
            "records": [[r.partition, r.offset, r.key.decode() if r.key is not None else None,
                         r.value.decode() if r.value is not None else None, r.headers] for r in got]}


DAY_MS = 86_400_000
RETAINED = {"time": 3, "all_old": 3, "size": 3}
"""Where each topic of retention_leaves_readable starts once retention has run (its wait's target)."""
NO_RESET_EARLIEST = ("sarama",)  # refuses an offset out of range instead of resetting it
NO_RESET_NONE = ("sarama", "kafka-go", "kafkajs")  # no auto.offset.reset=none


@scenario("retention_leaves_readable", lambda client: {
    "by_time": {"earliest": 3, "latest": 5,
                "reset_earliest": "unsupported" if client.name in NO_RESET_EARLIEST else [[3, "new0"], [4, "new1"]],
                "reset_none": "unsupported" if client.name in NO_RESET_NONE else {
                    "error": "NO_OFFSET_FOR_PARTITION" if client.name.startswith(("confluent-kafka", "rdkafka"))
                    else "OFFSET_OUT_OF_RANGE"}},
    "all_old": {"earliest": 3, "latest": 3}, "by_size": {"earliest": 3, "latest": 5},
    "old_behind_fresh": {"earliest": 0, "latest": 4}})
def retention_leaves_readable(client: Client, env: Env) -> Outcome:
    """What retention leaves readable, on brokers checking retention from start-up and every 100 ms
    (compat/brokers.py; a broker started otherwise waits Kafka's 30 s, then checks every 5 minutes). Every
    record has a segment of its own (segment.ms 100, timestamps at least a second apart) and retention takes
    whole segments from the log start: retention.ms one hour takes three day-old records and leaves two fresh
    ones (reading from 0 resets to 3, or fails with auto.offset.reset none); three day-old records alone all go,
    the active segment too, the log start at the end; retention.bytes of two batches leaves the last two of five;
    a fresh first record keeps the day-old ones after it (their segment's newest timestamp is the fresh one's,
    since nothing rolls for an older timestamp)."""
    from fakekafka.wire.records import build_batch
    now = int(time.time() * 1000)
    topics = {k: env.name(k) for k in ("time", "all_old", "size", "behind")}
    one_batch = len(build_batch([{"key": None, "value": b"v0", "headers": [], "timestamp": now}]))
    configs = {"time": {"retention.ms": "3600000"}, "all_old": {"retention.ms": "3600000"},
               "size": {"retention.bytes": str(2 * one_batch)}, "behind": {"retention.ms": "3600000"}}
    for k, topic in topics.items():
        env.create_topic(topic, configs={**configs[k], "segment.ms": "100"})
    # written past compat diff's relay: a check may come between two writes on one broker and not the other
    def write(k: str, value: bytes, at: int) -> None:
        env.produce(topics[k], value, timestamp=at, unrecorded=True)
    write("behind", b"new", now)  # first: the checks awaited below come after it
    for i in range(3):
        for k in ("behind", "time", "all_old"):
            write(k, b"old%d" % i, now - DAY_MS + 1000 * i)
    for i in range(2):
        write("time", b"new%d" % i, now + 1000 * i)
    for i in range(5):
        write("size", b"v%d" % i, now - 10_000 + 1000 * i)
    _await_retention(env, topics)

    def ends(topic: str) -> dict[str, Any]:
        return {"earliest": client.list_offsets(topic, 0, "earliest"),
                "latest": client.list_offsets(topic, 0, "latest")}

    def reset_earliest() -> list[list[Any]]:
        got = client.fetch(topics["time"], 0, 0, 2, reset="earliest")
        return [[r.offset, r.value.decode() if r.value is not None else None] for r in got]
    by_time = {**ends(topics["time"]), "reset_earliest": _unless_unsupported(reset_earliest),
               "reset_none": _unless_unsupported(
                   lambda: _offsets(_short_fetch_reset(client, env, topics["time"], "none")))}
    return {"by_time": by_time, "all_old": ends(topics["all_old"]), "by_size": ends(topics["size"]),
            "old_behind_fresh": ends(topics["behind"])}


def _await_retention(env: Env, topics: dict[str, str]) -> None:
    """Until a retention check after the last write has run, seen past compat diff's relay (Env.waiter): every
    log start where it ends up. A broker whose log the waiter cannot read (Fetch leaves the partition out, as
    tansu's does) is not waited for: the client's own reads are the outcome."""
    waiter = env.waiter()
    try:
        waiter.records(topics["time"])
    except ApiError:
        return
    wait_for(lambda: all(waiter._list_offset(topics[k], 0, -2) >= start for k, start in RETAINED.items()),
             timeout=10)
