"""Chaos (fakekafka/chaos) on the model: faults drawn from a seed at request points, the applied schedule
replayed, profiles and schedules read with errors in words, invariants with evidence, ddmin shrinking."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from construct import Container

from fakekafka.chaos import (
    ERRORS,
    Chaos,
    ChaosSource,
    Ledger,
    Schedule,
    Step,
    check_invariants,
    profile_of,
    shrink,
)
from fakekafka.handlers import DropConnection, Park, RequestContext, dispatch
from fakekafka.model.clock import ManualClock
from fakekafka.model.cluster import ClusterState
from fakekafka.wire import ErrorCode, Request
from fakekafka.wire.protocol import request_struct
from fakekafka.wire.records import build_batch, read_header


def produce(cluster: ClusterState, partition: int, *, pid: int = -1, seq: int = -1, broker: int = 1) -> Any:
    struct = request_struct(0, 9)
    batch = build_batch([{"value": f"v{partition}".encode()}], producer_id=pid, producer_epoch=0 if pid >= 0 else -1,
                        base_sequence=seq)
    body = struct.parse(struct.build({"acks": -1, "timeout_ms": 1000, "topic_data": [
        {"name": "orders", "partition_data": [{"index": partition, "records": batch}]}]}))
    result = dispatch(RequestContext(cluster, cluster.brokers[broker], Request(0, 9, 1, "app", Container(), body)))
    while isinstance(result, Park):
        result = result.resume(True)
    return result


def outcome(result: Any) -> str:
    if isinstance(result, DropConnection):
        return "dropped after" if result.applied else "dropped before"
    return ErrorCode(result["responses"][0]["partition_responses"][0]["error_code"]).name


def run(chaos: Chaos, requests: int = 60) -> tuple[Schedule, list[str], ClusterState]:
    cluster = ClusterState(clock=ManualClock())
    cluster.create_topic("orders", 3, 1)
    source = ChaosSource(cluster, chaos)
    cluster.hooks.sources.append(source)
    seen = [outcome(produce(cluster, i % 3)) for i in range(requests)]
    return source.applied, seen, cluster


def test_the_same_seed_gives_the_same_faults_and_outcomes() -> None:
    first = run(Chaos(seed=11, profile="busy"))
    for _ in range(3):
        again = run(Chaos(seed=11, profile="busy"))
        assert again[0].same_as(first[0]) and again[1] == first[1]
    assert len(first[0]) > 3
    assert not run(Chaos(seed=12, profile="busy"))[0].same_as(first[0])


def test_only_legal_errors_are_drawn_with_their_mechanism() -> None:
    schedule, _, _ = run(Chaos(seed=3, profile="harsh"), requests=200)
    legal = {(e.api, e.error, e.after) for e in ERRORS}
    errors = [s for s in schedule if s.kind == "error"]
    assert errors
    for s in errors:
        assert (s.api, s.error, s.after) in legal and s.mechanism
    assert all(s.kind != "kill" for s in schedule)  # no broker operator given: no kills


def test_the_applied_schedule_replays_exactly(tmp_path: Path) -> None:
    schedule, seen, cluster = run(Chaos(seed=5, profile="busy"))
    path = schedule.save(tmp_path / "s.json")
    replayed, seen_again, cluster_again = run(Chaos(schedule=Schedule.load(path)))
    assert replayed.same_as(schedule) and seen_again == seen
    assert [p.log.log_end_offset for p in cluster.topics["orders"].partitions] == \
        [p.log.log_end_offset for p in cluster_again.topics["orders"].partitions]


def test_a_step_reads_as_words() -> None:
    step = Step("Produce", 3, "error", error="NOT_LEADER_OR_FOLLOWER", after=True, topic="orders", partition=3,
                t_ms=1200)
    assert step.describe() == "t=1.2 s: Produce request 3 to orders-3 answered NOT_LEADER_OR_FOLLOWER after append"


def test_profiles_and_schedules_refuse_bad_input_in_words(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="unknown chaos profile 'wild'"):
        profile_of("wild")
    bad = tmp_path / "p.json"
    bad.write_text(json.dumps({"error_rate": 2}))
    with pytest.raises(ValueError, match="error_rate is a rate between 0 and 1"):
        profile_of(bad)
    bad.write_text(json.dumps({"eror_rate": 0.1}))
    with pytest.raises(ValueError, match="unknown field.*eror_rate"):
        profile_of(bad)
    good = tmp_path / "calm.json"
    good.write_text(json.dumps({"error_rate": 0.5, "latency_rate": 0, "drop_rate": 0, "apis": ["Produce"]}))
    assert profile_of(good).name == "calm" and profile_of(good).error_rate == 0.5
    bad.write_text("{}")
    with pytest.raises(ValueError, match="not a chaos schedule"):
        Schedule.load(bad)
    with pytest.raises(ValueError, match="unknown chaos step kind"):
        Step("Produce", 0, "explode")
    with pytest.raises(ValueError, match="seed is an integer"):
        Chaos(seed="7")  # type: ignore[arg-type]


def test_acknowledged_records_lost_are_reported_with_evidence() -> None:
    cluster = ClusterState(clock=ManualClock())
    cluster.create_topic("orders", 1, 1)
    ledger = Ledger(cluster)
    cluster.hooks.observers.append(ledger)
    for seq in (0, 1, 2):
        assert outcome(produce(cluster, 0, pid=7, seq=seq)) == "NONE"
    assert check_invariants(cluster, ledger) == []
    assert len(ledger.acked) == 3
    # a batch the broker lost after acknowledging it: the log cut back under the model's feet
    log = cluster.partition("orders", 0).log
    log.truncate_to(2)
    violations = check_invariants(cluster, ledger)
    assert [v.invariant for v in violations] == ["acknowledged records lost"]
    assert "orders-0 offsets 2..2" in violations[0].evidence[0]


def test_an_app_invariant_is_a_callable_over_the_records() -> None:
    cluster = ClusterState(clock=ManualClock())
    cluster.create_topic("orders", 3, 1)
    ledger = Ledger(cluster)
    for i in range(4):
        produce(cluster, i % 3)

    def one_per_partition(view: Any) -> str | None:
        values = view.values("orders")
        return None if len(values) == len(set(values)) else f"duplicates: {sorted(values)}"
    violations = check_invariants(cluster, ledger, (one_per_partition,))
    assert [v.invariant for v in violations] == ["app invariant one_per_partition"]
    assert "b'v0', b'v0'" in violations[0].message


def test_shrinking_finds_the_steps_that_matter() -> None:
    steps = [Step("Produce", i, "latency", ms=i + 1) for i in range(16)]
    culprits = {steps[3], steps[11]}
    runs: list[int] = []

    def fails(candidate: Schedule) -> bool:
        runs.append(len(candidate))
        return culprits <= set(candidate.steps)
    result = shrink(Schedule(steps, seed=1), fails)
    assert set(result.schedule.steps) == culprits and not result.exhausted
    assert result.runs == len(runs) < 40


def test_duplicates_and_disorder_from_an_idempotent_producer_are_reported() -> None:
    """Batches written past the broker's sequence checks (as a broker that lost its producer state would)."""
    cluster = ClusterState(clock=ManualClock())
    cluster.create_topic("orders", 1, 1)
    log = cluster.partition("orders", 0).log
    for seq in (0, 1, 1, 0):
        batch = build_batch([{"value": b"x"}], producer_id=9, producer_epoch=0, base_sequence=seq)
        log.append(batch, read_header(batch), 0)
    log.high_watermark = log.log_end_offset
    violations = {v.invariant: v for v in check_invariants(cluster, Ledger(cluster))}
    assert set(violations) == {"duplicates from an idempotent producer", "per-partition order"}
    assert violations["duplicates from an idempotent producer"].evidence[0] == \
        "orders-0: producer 9 epoch 0 sequence 1 at offsets 1 and 2"


def test_cluster_events_apply_only_where_kafka_could_and_never_through_a_proxy() -> None:
    from fakekafka.chaos import Chaos, ChaosSource, Schedule, Step
    from fakekafka.model.hooks import Intercepted
    from fakekafka.model.internal_topics import OFFSETS_TOPIC
    from fakekafka.model.metadata import Broker
    cluster = ClusterState(clock=ManualClock(), brokers=[Broker(i, "127.0.0.1", 9000 + i) for i in (1, 2, 3)])
    cluster.create_topic("events", 1, 3)
    p = cluster.partition("events", 0)
    follower = next(r for r in p.replicas if r != p.leader_id)
    cluster.coordinator_for("g")  # creates __consumer_offsets
    offsets = cluster.partition(OFFSETS_TOPIC, cluster.offsets_partition_for("g"))
    other = next(r for r in offsets.isr if r != offsets.leader_id)
    steps = [Step("Produce", 0, "isr_shrink", topic="events", partition=0, broker=follower),
             Step("Produce", 1, "isr_shrink", topic="events", partition=0, broker=p.leader_id),  # not a follower
             Step("Heartbeat", 0, "rebalance", group="g"),  # no such group: left out
             Step("OffsetCommit", 0, "move_coordinator", topic=OFFSETS_TOPIC, partition=offsets.index, broker=other,
                  group="g"),
             Step("Produce", 2, "isr_expand", topic="events", partition=0, broker=follower)]
    source = ChaosSource(cluster, Chaos(schedule=Schedule(steps)))

    def request(api_key: int, nth: int) -> Intercepted:
        return Intercepted(api_key, 0, p.leader_id, "c", nth, None, {("events", 0)}, 0, nth)
    source.actions(request(0, 0))
    assert follower not in p.isr and follower in p.paused
    source.actions(request(0, 1))
    source.actions(request(12, 0))
    source.actions(request(8, 0))
    assert offsets.leader_id == other
    source.actions(request(0, 2))
    assert follower not in p.paused
    assert [s.kind for s in source.applied] == ["isr_shrink", "move_coordinator", "isr_expand"]
    assert "fell out of the ISR" in source.applied.steps[0].describe()
    assert "replica.lag.time.max.ms" in source.applied.steps[0].mechanism
    # a proxy (no cluster) draws and replays none of them
    proxied = ChaosSource(None, Chaos(schedule=Schedule(steps)), now_ms=lambda: 0)
    for api_key, nth in ((0, 0), (12, 0), (8, 0), (0, 2)):
        assert proxied.actions(request(api_key, nth)) == []
    assert len(proxied.applied) == 0
    drawn = ChaosSource(None, Chaos(seed=3, profile="cluster"), now_ms=lambda: 0)
    for nth in range(200):
        drawn.actions(request(12, nth))
    assert {s.kind for s in drawn.applied} <= {"error", "latency", "drop_before", "drop_after"}


def test_one_owner_per_generation_and_commits_never_going_back_are_checked_from_the_answers() -> None:
    from fakekafka.chaos import Chaos
    from fakekafka.model.hooks import Intercepted
    from fakekafka.model.mixed_groups import encode_assignment
    from fakekafka.wire import ApiKey
    cluster = ClusterState(clock=ManualClock())
    ledger = Ledger(cluster)

    def sync(member: str, generation: int, partitions: list[int]) -> None:
        body = Container(group_id="g", generation_id=generation, member_id=member, protocol_type="consumer")
        ledger(Intercepted(ApiKey.SYNC_GROUP, 5, 1, member, 0, body, set(), 0, 0),
               {"error_code": 0, "assignment": encode_assignment({"t": partitions}, 0)}, True)

    def commit(offset: int, error: int = 0) -> None:
        body = Container(group_id="g", member_id="m", generation_id_or_member_epoch=3, topics=[
            Container(name="t", partitions=[Container(partition_index=0, committed_offset=offset)])])
        ledger(Intercepted(ApiKey.OFFSET_COMMIT, 9, 1, "app", 0, body, {("t", 0)}, 0, 0),
               {"topics": [{"name": "t", "partitions": [{"partition_index": 0, "error_code": error}]}]}, True)
    sync("a", 1, [0, 1])
    sync("b", 1, [2])
    sync("a", 2, [1])
    sync("b", 2, [0, 2])  # a new generation may move partitions: not a violation
    commit(10)
    commit(12)
    commit(4, error=int(ErrorCode.ILLEGAL_GENERATION))  # refused: not a commit
    assert check_invariants(cluster, ledger) == []
    sync("c", 2, [1])  # two members of generation 2 own t-1
    commit(5)  # accepted below 12
    violations = {v.invariant: v for v in check_invariants(cluster, ledger)}
    assert set(violations) == {"one owner per partition per generation", "committed offsets never go back"}
    assert "t-1 given to a and to c" in violations["one owner per partition per generation"].evidence[0]
    assert "t-0 committed 5 by member m" in violations["committed offsets never go back"].evidence[0]
    assert "after 12" in violations["committed offsets never go back"].evidence[0]
    skipped = check_invariants(cluster, ledger, skip=("committed offsets never go back",))
    assert [v.invariant for v in skipped] == ["one owner per partition per generation"]
    with pytest.raises(ValueError, match="not one of"):
        Chaos(seed=1, skip=("commits go forward",))


def test_a_schedule_saves_and_loads_as_yaml_too(tmp_path: Path) -> None:
    from fakekafka.chaos import Schedule, Step
    schedule = Schedule([Step("Produce", 3, "drop_after", topic="orders", partition=1, broker=1),
                         Step("Heartbeat", 2, "session_expiry", group="g", member="m-1")], seed=7, profile="cluster")
    for name in ("run.yaml", "run.yml"):
        path = schedule.save(tmp_path / name)
        assert path.read_text().startswith("format: fakekafka-chaos-schedule/1")
        again = Schedule.load(path)
        assert again.same_as(schedule) and again.seed == 7 and again.profile == "cluster"
    (tmp_path / "bad.yaml").write_text("steps: [unclosed")
    with pytest.raises(ValueError, match="not YAML"):
        Schedule.load(tmp_path / "bad.yaml")
    (tmp_path / "other.yml").write_text("just: text")
    with pytest.raises(ValueError, match="not a chaos schedule"):
        Schedule.load(tmp_path / "other.yml")


def test_one_owner_per_partition_is_checked_for_kip848_groups_from_the_heartbeat_answers() -> None:
    from fakekafka.model.hooks import Intercepted
    from fakekafka.wire import ApiKey
    cluster = ClusterState(clock=ManualClock())
    ledger = Ledger(None)

    def heartbeat(member: str, epoch: int, owned: list[int] | None, given: list[int] | None,
                  error: int = 0) -> None:
        body = Container(group_id="g", member_id=member, member_epoch=epoch, topic_partitions=None if owned is None
                         else [Container(topic_name="t", name="t", partitions=owned)])
        answer = {"error_code": error, "member_id": member, "member_epoch": epoch + 1, "assignment": None
                  if given is None else {"topic_partitions": [{"name": "t", "partitions": given}]}}
        ledger(Intercepted(ApiKey.CONSUMER_GROUP_HEARTBEAT, 1, 1, member, 0, body, set(), 0, 0), answer, True)
    heartbeat("a", 0, [], [0, 1])
    heartbeat("a", 1, [0, 1], None)
    heartbeat("b", 0, [], [])  # b joins: nothing until a releases t-1
    heartbeat("a", 1, [0, 1], [0])  # a is told to give up t-1 ...
    heartbeat("a", 2, [0], None)  # ... and reports it released
    heartbeat("b", 2, [], [1])  # so b may have it
    heartbeat("b", 3, [1], None, error=int(ErrorCode.FENCED_MEMBER_EPOCH))  # b fenced: its partitions go back
    heartbeat("c", 0, [], [1])
    heartbeat("c", 1, [1], None)
    heartbeat("c", -1, [1], None)  # c leaves
    heartbeat("d", 0, [], [1])
    assert check_invariants(cluster, ledger) == []
    heartbeat("e", 0, [], [0])  # a still holds t-0
    violations = check_invariants(cluster, ledger)
    assert [v.invariant for v in violations] == ["one owner per partition per generation"]
    assert "t-0 given to e (epoch 1) while a still held it" in violations[0].evidence[0]


def test_a_kip848_member_whose_session_expired_on_the_fake_cluster_holds_nothing() -> None:
    from fakekafka.model.hooks import Intercepted
    from fakekafka.wire import ApiKey
    cluster = ClusterState(clock=ManualClock())
    ledger = Ledger(cluster)  # on the fake cluster the group's live members are known: "a" is in no group
    for member in ("a", "b"):
        body = Container(group_id="g", member_id=member, member_epoch=0, topic_partitions=[])
        ledger(Intercepted(ApiKey.CONSUMER_GROUP_HEARTBEAT, 1, 1, member, 0, body, set(), 0, 0),
               {"error_code": 0, "member_id": member, "member_epoch": 1,
                "assignment": {"topic_partitions": [{"name": "t", "partitions": [0]}]}}, True)
    assert ledger.owned_twice == []


class _Logs:
    """Partition logs for ChaosView in a unit test: topic -> batches of one partition."""

    def __init__(self, topics: dict[str, list[bytes]]) -> None:
        self.topics = topics

    def partitions(self) -> list[tuple[str, int]]:
        return [(t, 0) for t in self.topics]

    def batches(self, topic: str, partition: int) -> list[bytes]:
        return self.topics[topic]

    def bounds(self, topic: str, partition: int) -> tuple[int, int] | None:
        last = read_header(self.topics[topic][-1]) if self.topics[topic] else None
        return 0, 0 if last is None else last.last_offset + 1

    def unclean_allowed(self, topic: str) -> bool:
        return False


def _txn(keys: list[bytes], offset: int, pid: int, commit: bool) -> list[bytes]:
    data = build_batch([{"key": k, "value": b"out"} for k in keys], base_offset=offset, producer_id=pid,
                       producer_epoch=0, base_sequence=0, transactional=True)
    marker = build_batch([{"key": (0).to_bytes(2, "big") + int(commit).to_bytes(2, "big"), "value": b""}],
                         base_offset=offset + len(keys), producer_id=pid, producer_epoch=0, transactional=True,
                         control=True)
    return [data, marker]


def test_exactly_once_reads_the_sink_as_read_committed_and_names_lost_twice_and_stray_outputs() -> None:
    from fakekafka.chaos import ChaosView, exactly_once
    source = [build_batch([{"key": k, "value": b"in"} for k in (b"1", b"2", b"3")])]
    check = exactly_once("in", "out")
    good = _txn([b"1", b"2"], 0, 7, commit=True) + _txn([b"2", b"3"], 3, 7, commit=False) + _txn([b"3"], 6, 7, True)
    assert check(ChaosView(_Logs({"in": source, "out": good}))) is None  # the aborted duplicate is not seen
    bad = _txn([b"1", b"2"], 0, 7, commit=True) + _txn([b"2", b"9"], 3, 8, commit=True)
    verdict = check(ChaosView(_Logs({"in": source, "out": bad})))
    assert verdict is not None
    assert "1 input(s) with no committed output (first: [b'3'])" in verdict
    assert "(b'2', 2)" in verdict and "output(s) of no input (first: [b'9'])" in verdict
    violations = check_invariants(_Logs({"in": source, "out": bad}), Ledger(None), app=(check,))
    assert [v.invariant for v in violations] == ["app invariant exactly_once(in -> out)"]


def test_read_committed_behind_the_proxy_tells_aborted_batches_by_the_markers_in_the_log() -> None:
    """A log read over the wire has no aborted-transaction index: a transactional batch is aborted when its
    producer's next marker is ABORT. A read_committed Fetch that returned one without listing it is a violation."""
    from fakekafka.model.hooks import Intercepted
    from fakekafka.wire import ApiKey
    log = _txn([b"1"], 0, 7, commit=True) + _txn([b"2"], 2, 7, commit=False) + _txn([b"3"], 4, 7, commit=True)

    def fetched(aborted: list[dict[str, int]]) -> Ledger:
        ledger = Ledger(None)
        body = Container(isolation_level=1)
        ledger(Intercepted(ApiKey.FETCH, 12, 1, "c", 0, body, set(), 0, 0), {"responses": [{"topic": "out",
               "partitions": [{"partition_index": 0, "records": b"".join(log), "last_stable_offset": 6,
                               "aborted_transactions": aborted}]}]}, True)
        return ledger
    logs = _Logs({"out": log})
    skip = ("duplicates from an idempotent producer", "per-partition order")  # _txn's batches all start at sequence 0
    assert check_invariants(logs, fetched([{"producer_id": 7, "first_offset": 2}]), skip=skip) == []
    [violation] = check_invariants(logs, fetched([]), skip=skip)
    assert violation.invariant == "read_committed sees only committed records"
    assert violation.evidence == ("out-0: aborted batch at offset 2 (producer 7) returned without its aborted "
                                  "transaction listed",)


def test_log_faults_apply_on_the_fake_clock_only_where_kafka_could() -> None:
    """retention moves a frozen clock and runs a retention check; a compaction pass only where the cleaner is due;
    an unclean election only where the topic allows it and the leader is its ISR's last member; a throttled Fetch
    is answered empty with throttle_time_ms; a proxy (no cluster) takes none of them."""
    from fakekafka.model.hooks import Answer, Intercepted, Several, Throttle
    from fakekafka.model.metadata import Broker

    class Operator:
        killed: list[tuple[int, int]] = []

        def kill_broker(self, node_id: int, down_ms: int) -> None:
            self.killed.append((node_id, down_ms))
            cluster.kill_broker(node_id)

    clock = ManualClock(1_000_000)
    cluster = ClusterState(clock=clock, brokers=[Broker(i, "127.0.0.1", 9000 + i) for i in (1, 2)])
    cluster.create_topic("logs", 1, 1, configs={"retention.ms": "60000"})
    cluster.create_topic("keys", 1, 1, configs={"cleanup.policy": "compact"})
    cluster.create_topic("pay", 1, 2, configs={"unclean.leader.election.enable": "true"})
    cluster.create_topic("safe", 1, 2)
    logs = cluster.partition("logs", 0)
    cluster.append(logs, build_batch([{"value": b"old", "timestamp": clock.now_ms()}]))
    pay, safe = cluster.partition("pay", 0), cluster.partition("safe", 0)
    for p in (pay, safe):
        cluster.shrink_isr(p.topic.name, 0, next(r for r in p.replicas if r != p.leader_id))
    steps = [Step("Fetch", 0, "throttle", ms=300),
             Step("Fetch", 1, "retention", topic="logs", partition=0, ms=60_001),
             Step("Fetch", 2, "compaction", topic="keys", partition=0),  # nothing to clean: left out
             Step("Produce", 0, "unclean_election", topic="safe", partition=0, broker=safe.leader_id, ms=100),
             Step("Produce", 1, "unclean_election", topic="pay", partition=0, broker=pay.leader_id, ms=100)]
    operator = Operator()
    source = ChaosSource(cluster, Chaos(schedule=Schedule(steps)), operator)

    def request(api_key: int, nth: int, topic: str) -> Intercepted:
        return Intercepted(api_key, 12, 1, "c", nth, None, {(topic, 0)}, 0, nth)
    [(_, throttled)] = source.actions(request(1, 0, "logs"))
    assert isinstance(throttled, Several)
    answer, throttle = throttled.actions
    assert isinstance(answer, Answer) and answer.body["responses"] == [] and answer.body["throttle_time_ms"] == 300
    assert throttle == Throttle(300)
    assert source.actions(request(1, 1, "logs")) == []  # the request meets the moved log start
    assert clock.now_ms() == 1_060_001 and logs.log.log_start_offset == 1
    assert source.actions(request(1, 2, "keys")) == []
    old_leader = pay.leader_id
    source.actions(request(0, 0, "safe"))
    source.actions(request(0, 1, "pay"))
    assert operator.killed == [(old_leader, 100)] and pay.leader_id != old_leader
    assert [s.kind for s in source.applied] == ["throttle", "retention", "unclean_election"]
    assert "throttle_time_ms=300" in source.applied.steps[0].describe()
    assert "retention.ms" in source.applied.steps[1].mechanism
    proxied = ChaosSource(None, Chaos(schedule=Schedule(steps)), now_ms=lambda: 0)
    [(_, on_proxy)] = proxied.actions(request(1, 0, "logs"))  # a proxy answers a throttled Fetch itself
    assert on_proxy == throttled
    for api_key, nth, topic in ((1, 1, "logs"), (0, 1, "pay")):  # it moves no log start and elects no leader
        assert proxied.actions(request(api_key, nth, topic)) == []
    assert [s.kind for s in proxied.applied] == ["throttle"]


def test_an_unclean_elections_loss_is_expected_and_one_without_it_is_not() -> None:
    from fakekafka.model.metadata import Broker
    cluster = ClusterState(clock=ManualClock(), brokers=[Broker(i, "127.0.0.1", 9000 + i) for i in (1, 2)])
    cluster.create_topic("orders", 1, 2, configs={"unclean.leader.election.enable": "true"})
    ledger = Ledger(cluster)
    cluster.hooks.observers.append(ledger)
    p = cluster.partition("orders", 0)
    leader = p.leader_id
    follower = next(r for r in p.replicas if r != leader)
    assert outcome(produce(cluster, 0, broker=leader)) == "NONE"  # offset 0, on both replicas
    cluster.shrink_isr("orders", 0, follower)
    for _ in range(2):  # offsets 1 and 2, on the leader alone
        assert outcome(produce(cluster, 0, broker=leader)) == "NONE"
    cluster.kill_broker(leader)  # the follower, out of sync, is elected: offsets 1 and 2 are lost
    assert p.leader_id == follower and p.log.log_end_offset == 1
    elected = [e for e in cluster.observers.events if e.kind == "leader_elected" and e.details["unclean"]]
    assert [e.details["log_end_offset"] for e in elected] == [1]
    assert check_invariants(cluster, ledger) == []
    p.log.truncate_to(0)  # offset 0 gone too: a loss the election does not explain
    violations = check_invariants(cluster, ledger)
    assert [v.invariant for v in violations] == ["acknowledged records lost"]
    assert "orders-0 offsets 0..0" in violations[0].evidence[0] and len(violations[0].evidence) == 1


def test_the_timeline_draws_requests_faults_and_generations_as_svg() -> None:
    from xml.etree import ElementTree

    from fakekafka.chaos.timeline import Timeline
    from fakekafka.model.hooks import Intercepted
    applied = Schedule()
    timeline = Timeline(applied)

    def answered(api_key: int, nth: int, body: Any, answer: Any) -> None:
        now_ms = 5_000 + 1_500 * timeline.answered  # the cluster's clock at each request
        timeline(Intercepted(api_key, 0, 1, "c", nth, body, set(), now_ms, nth), answer, True)
    answered(11, 0, {"group_id": "g"}, {"error_code": 0, "generation_id": 1, "member_id": "m"})
    applied.steps.append(Step("Produce", 0, "drop_after", topic="orders", partition=0))
    answered(0, 0, {}, None)  # the fault fell on this request: its connection dropped
    answered(11, 1, {"group_id": "g"}, {"error_code": 0, "generation_id": 1, "member_id": "m"})  # same generation
    answered(11, 2, {"group_id": "g"}, {"error_code": 0, "generation_id": 2, "member_id": "m"})
    svg = ElementTree.fromstring(timeline.svg("t<1>"))
    ns = "{http://www.w3.org/2000/svg}"
    assert [r.get("data-kind") for r in svg.iter(f"{ns}rect")] == ["drop_after"]
    texts = [t.text or "" for t in svg.iter(f"{ns}text")]
    assert any("drop_after at Produce request 0" in t and "connection dropped after append" in t for t in texts)
    assert {"JoinGroup", "Produce", "faults", "groups"} <= set(texts)
    assert [c.findtext(f"{ns}title") for c in svg.iter(f"{ns}circle")] == ["g: generation 1", "g: generation 2"]
    assert timeline.faults == [(1, applied.steps[0])]
    # the clock lane reads the cluster's clock since the first request, from 0.0 to the last request's 4.5 s
    assert "clock (s)" in texts and "0.0" in texts and "4.5" in texts


def test_the_profiles_draw_the_new_kinds_where_they_belong() -> None:
    """busy throttles Fetches (never other APIs); an unclean election (harsh's) is drawn on a topic allowing it
    once its ISR is the leader alone (once: the leader is then down), never on a topic that does not allow it."""
    from fakekafka.model.hooks import Intercepted
    from fakekafka.model.metadata import Broker
    cluster = ClusterState(clock=ManualClock(), brokers=[Broker(i, "127.0.0.1", 9000 + i) for i in (1, 2)])
    cluster.create_topic("pay", 1, 2, configs={"unclean.leader.election.enable": "true"})
    cluster.create_topic("safe", 1, 2)
    for name in ("pay", "safe"):
        p = cluster.partition(name, 0)
        cluster.shrink_isr(name, 0, next(r for r in p.replicas if r != p.leader_id))

    def request(api_key: int, nth: int, topic: str) -> Intercepted:
        return Intercepted(api_key, 12, 1, "c", nth, None, {(topic, 0)}, 0, nth)
    busy = ChaosSource(cluster, Chaos(seed=5, profile="busy"))
    for nth in range(300):
        busy.actions(request(1, nth, "nowhere"))  # Fetches of a topic that does not exist: no partition events
    assert "throttle" in {s.kind for s in busy.applied}
    assert all(s.api == "Fetch" for s in busy.applied if s.kind == "throttle")
    # a proxy (no cluster) draws the same throttles at the same Fetches as the fake cluster at the same seed
    proxied = ChaosSource(None, Chaos(seed=5, profile="busy"), now_ms=lambda: 0)
    for nth in range(300):
        proxied.actions(request(1, nth, "nowhere"))

    def throttles(source: ChaosSource) -> list[tuple[int, int]]:
        return [(s.nth, s.ms) for s in source.applied if s.kind == "throttle"]
    assert throttles(proxied) and throttles(proxied) == throttles(busy)[:len(throttles(proxied))]

    class Operator:
        def kill_broker(self, node_id: int, down_ms: int) -> None:
            cluster.kill_broker(node_id)
    from fakekafka.chaos import PROFILES, Profile
    assert PROFILES["harsh"].unclean_rate > 0 and PROFILES["busy"].unclean_rate == 0
    unclean = Profile("unclean", error_rate=0, latency_rate=0, drop_rate=0, unclean_rate=0.2)
    for topic, expected in (("safe", False), ("pay", True)):
        source = ChaosSource(cluster, Chaos(seed=2, profile=unclean), Operator())
        for nth in range(100):
            source.actions(request(0, nth, topic))
        assert [s.kind for s in source.applied] == (["unclean_election"] if expected else []), topic


def test_byzantine_faults_are_drawn_only_when_asked_for_by_name() -> None:
    """No profile but `byzantine` draws them (they are not something Kafka does); it draws both, on Fetches only,
    on the fake cluster and the proxy alike; each edits the answer as it says."""
    from fakekafka.chaos import PROFILES
    from fakekafka.chaos.byzantine import BYZANTINE_KINDS, corrupt_crc, out_of_order
    from fakekafka.model.hooks import Edit, Intercepted
    from fakekafka.wire.records import crc_of

    def request(api_key: int, nth: int) -> Intercepted:
        return Intercepted(api_key, 12, 1, "c", nth, None, {("t", 0)}, 0, nth)
    for name in PROFILES:
        source = ChaosSource(None, Chaos(seed=1, profile=name), now_ms=lambda: 0)
        for nth in range(300):
            for api_key in (0, 1):
                source.actions(request(api_key, nth))
        kinds = {s.kind for s in source.applied} & set(BYZANTINE_KINDS)
        assert kinds == (set(BYZANTINE_KINDS) if name == "byzantine" else set()), name
        assert all(s.api == "Fetch" for s in source.applied if s.kind in BYZANTINE_KINDS)
    [(_, action)] = ChaosSource(None, Chaos(schedule=Schedule([Step("Fetch", 0, "corrupt_crc")])),
                                now_ms=lambda: 0).actions(request(1, 0))
    assert isinstance(action, Edit) and action.fn is corrupt_crc
    batches = [build_batch([{"value": f"e{i}".encode()}], base_offset=i) for i in range(3)]

    def answer() -> dict[str, Any]:
        return {"responses": [{"topic": "t", "partitions": [{"partition_index": 0, "records": b"".join(batches)}]}]}
    corrupted = corrupt_crc(answer())["responses"][0]["partitions"][0]["records"]
    first = read_header(corrupted)
    assert first.crc != crc_of(corrupted[:first.size]) and corrupted[first.size:] == b"".join(batches[1:])
    swapped = out_of_order(answer())["responses"][0]["partitions"][0]["records"]
    assert swapped == batches[1] + batches[0] + batches[2]
    assert out_of_order({"responses": []}) == {"responses": []}  # nothing to serve out of order: untouched


def test_reordered_records_swaps_two_records_inside_one_batch_with_a_valid_crc() -> None:
    """Only the order is wrong: the batch's CRC holds, its header is the same, each record keeps its offset delta
    and timestamp; a batch of one record is left alone and the first batch of several is the one edited."""
    from fakekafka.chaos.byzantine import reordered_records
    from fakekafka.wire.records import decode_batch, iter_batches

    single = build_batch([{"value": b"s", "timestamp": 5}], base_offset=0)
    several = build_batch([{"value": f"v{i}".encode(), "key": f"k{i}".encode(), "timestamp": 10 + i,
                            "headers": [("h", f"{i}".encode())]} for i in range(3)], base_offset=1)
    answer = {"responses": [{"topic": "t", "partitions": [{"partition_index": 0, "records": single + several}]}]}
    served = reordered_records(answer)["responses"][0]["partitions"][0]["records"]
    [(h0, b0), (h1, b1)] = iter_batches(served)  # validates each CRC
    assert b0 == single
    before, after = read_header(several), h1
    assert (after.base_offset, after.last_offset_delta, after.records_count, after.producer_id) == \
        (before.base_offset, before.last_offset_delta, before.records_count, before.producer_id)
    records = decode_batch(b1).records
    assert [(r.offset, r.key, r.value, r.timestamp, r.headers) for r in records] == [
        (2, b"k1", b"v1", 11, [("h", b"1")]), (1, b"k0", b"v0", 10, [("h", b"0")]),
        (3, b"k2", b"v2", 12, [("h", b"2")])]
    assert reordered_records({"responses": [{"topic": "t", "partitions": [
        {"partition_index": 0, "records": single}]}]})["responses"][0]["partitions"][0]["records"] == single



def test_an_idempotent_producers_init_producer_id_meets_only_the_error_kafka_gives_it() -> None:
    """Without a transactional id Kafka's broker answers InitProducerId from its block of producer ids: only
    COORDINATOR_LOAD_IN_PROGRESS (waiting for the next block); a transactional id's meets the coordinator's errors."""
    from fakekafka.chaos import Profile
    from fakekafka.model.faults import api_key_of
    from fakekafka.model.hooks import Intercepted

    every_one = Profile("inits", error_rate=1, latency_rate=0, drop_rate=0, non_retriable=True,
                        apis=("InitProducerId",), max_faults=None)

    def drawn(transactional_id: str | None) -> list[Step]:
        source = ChaosSource(ClusterState(clock=ManualClock()), Chaos(seed=1, profile=every_one))
        for nth in range(40):
            body = Container(transactional_id=transactional_id, transaction_timeout_ms=60000)
            source.actions(Intercepted(api_key_of("InitProducerId"), 4, 1, "app", nth, body, set(), 0, nth))
        return list(source.applied)

    idempotent = drawn(None)
    assert len(idempotent) == 40 and {s.error for s in idempotent} == {"COORDINATOR_LOAD_IN_PROGRESS"}
    assert all("block of producer ids" in s.mechanism for s in idempotent)
    assert {"NOT_COORDINATOR", "CONCURRENT_TRANSACTIONS"} <= {s.error for s in drawn("payments-1")}
