"""Streams groups (KIP-1071) on the fake clock: the topology configured against the topics, the epochs and
statuses Kafka 4.4.0 answers with (checked with raw heartbeats against it), the sticky task assignor,
revocation before reassignment, fencing."""

from __future__ import annotations

from typing import Any

import pytest

from fakekafka.model.clock import ManualClock
from fakekafka.model.config import GROUP_CONFIGS, BrokerConfig, InvalidConfig, validate_group_config
from fakekafka.model.streams_assignment import MemberSpec, Tasks, assign
from fakekafka.model.streams_group import StreamsGroupConfig, StreamsGroupCoordinator, StreamsHeartbeat
from fakekafka.model.streams_topology import InternalTopic, Status, Subtopology, Topology, configure
from fakekafka.wire import ErrorCode

TOPOLOGY = Topology(0, (
    Subtopology("0", source_topics=("in",), repartition_sink_topics=("app-rep",)),
    Subtopology("1", state_changelog_topics=(InternalTopic("app-store-changelog"),),
                repartition_source_topics=(InternalTopic("app-rep", configs=(("cleanup.policy", "delete"),)),))))


class World:
    def __init__(self, **config: Any) -> None:
        self.clock = ManualClock(0)
        self.topics: dict[str, int] = {"in": 3}
        self.coordinator = StreamsGroupCoordinator(self.clock, StreamsGroupConfig(**config), topics=lambda: self.topics)

    def heartbeat(self, member: str, epoch: int, **kw: Any) -> dict[str, Any]:
        if epoch == 0:
            kw.setdefault("topology", TOPOLOGY)
            kw.setdefault("active", {})
            kw.setdefault("standby", {})
            kw.setdefault("warmup", {})
            kw.setdefault("rebalance_timeout_ms", 30_000)
        kw.setdefault("process_id", f"p-{member}")
        return self.coordinator.heartbeat(StreamsHeartbeat("app", member, epoch, **kw))


def test_topology_configured_against_the_topics() -> None:
    c = configure(TOPOLOGY, {})
    assert c.status == [(Status.MISSING_SOURCE_TOPICS, "Source topics in are missing.")]
    c = configure(TOPOLOGY, {"in": 4})
    assert c.status == [(Status.MISSING_INTERNAL_TOPICS, "Internal topics are missing: app-rep, app-store-changelog")]
    assert sorted((t.name, n) for t, n in c.to_create) == [("app-rep", 4), ("app-store-changelog", 4)]
    c = configure(TOPOLOGY, {"in": 4, "app-rep": 4, "app-store-changelog": 4})
    assert c.ready and c.partitions == {"0": 4, "1": 4}
    c = configure(TOPOLOGY, {"in": 4, "app-rep": 4, "app-store-changelog": 2})
    assert c.status[0][0] == Status.INCORRECTLY_PARTITIONED_TOPICS


def test_join_waits_for_internal_topics_then_gets_every_task() -> None:
    w = World(initial_rebalance_delay_ms=0)
    r = w.heartbeat("m1", 0)
    # as Kafka 4.4.0: the first assignment (after the initial delay) bumps the epoch again; no topics yet
    assert (r["member_epoch"], r["active_tasks"]) == (2, [])
    assert r["status"] == [{"status_code": Status.MISSING_INTERNAL_TOPICS,
                            "status_detail": "Internal topics are missing: app-rep, app-store-changelog"}]
    assert w.coordinator.group("app").state.value == "NotReady"
    w.topics.update({"app-rep": 3, "app-store-changelog": 3})
    w.clock.advance(1000)
    r = w.heartbeat("m1", 2)
    assert r["member_epoch"] == 3 and r["status"] == []
    assert r["active_tasks"] == [{"subtopology_id": "0", "partitions": [0, 1, 2]},
                                 {"subtopology_id": "1", "partitions": [0, 1, 2]}]
    assert "active_tasks" not in w.heartbeat("m1", 3)  # unchanged: null on the wire
    assert w.coordinator.group("app").state.value == "Stable"


def test_initial_delay_and_assignment_interval_are_reported() -> None:
    w = World(initial_rebalance_delay_ms=2000)
    w.topics.update({"app-rep": 3, "app-store-changelog": 3})
    r = w.heartbeat("m1", 0)
    assert r["member_epoch"] == 1 and r["status"][0]["status_code"] == Status.ASSIGNMENT_DELAYED
    group = w.coordinator.group("app")  # as Kafka 4.4.0 describes it: the epoch bumped for the first assignment
    assert (group.state.value, group.group_epoch, group.assignment_epoch) == ("Assigning", 2, 1)
    w.clock.advance(2000)
    r = w.heartbeat("m1", 1)
    assert r["member_epoch"] == 2 and len(r["active_tasks"]) == 2
    r2 = w.heartbeat("m2", 0)  # within the assignment interval: epoch of the current assignment, no tasks
    assert (r2["member_epoch"], r2["active_tasks"]) == (2, [])
    assert r2["status"] == [{"status_code": Status.ASSIGNMENT_DELAYED,
                             "status_detail": "Assignment delayed due to the configured assignment interval."}]


def test_tasks_move_only_after_revocation() -> None:
    w = World(initial_rebalance_delay_ms=0, assignment_interval_ms=0)
    w.topics.update({"app-rep": 3, "app-store-changelog": 3})
    e1 = w.heartbeat("m1", 0)["member_epoch"]
    e2 = w.heartbeat("m2", 0)["member_epoch"]
    assert e2 == e1 + 1
    r1 = w.heartbeat("m1", e1)  # must give up tasks: same epoch, fewer tasks
    assert r1["member_epoch"] == e1
    kept = {(t["subtopology_id"], p) for t in r1["active_tasks"] for p in t["partitions"]}
    assert 0 < len(kept) < 6
    r2 = w.heartbeat("m2", e2)  # what m2 wants is still m1's: withheld
    assert r2.get("active_tasks", []) == []
    owned = {s: frozenset(p for (t, p) in kept if t == s) for s in ("0", "1")}
    r1 = w.heartbeat("m1", e1, active=owned, standby={}, warmup={})
    assert r1["member_epoch"] == e2
    r2 = w.heartbeat("m2", e2)
    got = {(t["subtopology_id"], p) for t in r2["active_tasks"] for p in t["partitions"]}
    assert got and not got & kept and len(got | kept) == 6
    # assignment epochs, as Kafka 4.4 keeps them: a kept task stays at the epoch it came, a moved one gets the
    # target epoch at which it moved
    group = w.coordinator.group("app")
    assert group.members["m1"].active_epochs == dict.fromkeys(kept, e1)
    assert group.members["m2"].active_epochs == dict.fromkeys(got, e2)


def test_errors_as_kafka_words_them() -> None:
    w = World()
    assert w.heartbeat("", 0)["error_message"] == "MemberId can't be empty."
    r = w.heartbeat("m1", 0, active=None)
    assert (r["error_code"], r["error_message"]) == (ErrorCode.INVALID_REQUEST,
                                                     "ActiveTasks must be empty when (re-)joining.")
    e = w.heartbeat("m1", 0)["member_epoch"]
    r = w.heartbeat("m1", e + 5)
    assert r["error_code"] == ErrorCode.FENCED_MEMBER_EPOCH
    assert r["error_message"] == (f"The streams group member has a greater member epoch ({e + 5}) than the one "
                                  f"known by the group coordinator ({e}). The member must abandon all its "
                                  "partitions and rejoin.")
    r = w.heartbeat("m3", 1)
    assert (r["error_code"], r["error_message"]) == (ErrorCode.UNKNOWN_MEMBER_ID,
                                                     "Member m3 is not a member of group app.")
    assert w.heartbeat("m1", 1, topology=TOPOLOGY)["error_message"] == \
        "Topology can only be provided when (re-)joining."
    r = w.coordinator.heartbeat(StreamsHeartbeat("cg", "m", 0, topology=TOPOLOGY, active={}, standby={}, warmup={},
                                                 rebalance_timeout_ms=1), lambda g: "consumer")
    assert (r["error_code"], r["error_message"]) == (ErrorCode.GROUP_ID_NOT_FOUND, "Group cg is not a streams group.")


def test_session_expiry_fences_and_leave_empties() -> None:
    w = World(initial_rebalance_delay_ms=0, session_timeout_ms=45_000)
    w.heartbeat("m1", 0)
    e = w.heartbeat("m2", 0)["member_epoch"]
    w.clock.advance(45_000)
    w.coordinator.tick()
    group = w.coordinator.group("app")
    assert not group.members and group.state.value == "Empty"
    assert group.group_epoch == group.assignment_epoch > e
    assert w.heartbeat("m1", 2)["error_code"] == ErrorCode.UNKNOWN_MEMBER_ID


@pytest.mark.parametrize("standby", [0, 1])
def test_sticky_assignor_balances_keeps_and_places_standbys_elsewhere(standby: int) -> None:
    first = assign({"a": MemberSpec("pa", Tasks()), "b": MemberSpec("pb", Tasks())}, {"0": 4}, standby)
    assert sorted(len(t.active.get("0", ())) for t in first.values()) == [2, 2]
    again = assign({"a": MemberSpec("pa", first["a"]), "b": MemberSpec("pb", first["b"]),
                    "c": MemberSpec("pc", Tasks())}, {"0": 4}, standby)
    for m in ("a", "b"):
        assert again[m].active["0"] <= first[m].active["0"]  # nobody takes another's task while it may keep it
    for t in again.values():
        assert not set(t.standby.get("0", ())) & set(t.active.get("0", ()))
    assert sum(len(t.standby.get("0", ())) for t in again.values()) == 4 * standby


def test_ctl_describe_tables_and_the_handles_view_show_streams_groups() -> None:
    """`fakekafka ctl describe`'s streams group tables and the pytest handle's view, read mid-reconciliation."""
    from fakekafka.model.cluster import ClusterState
    from fakekafka.ops.describe import describe_tables, status_line
    from fakekafka.testing.views import StreamsGroupView

    state = ClusterState(clock=ManualClock(0))
    state.streams_groups.config.initial_rebalance_delay_ms = 0
    for name, n in (("in", 2), ("app-rep", 2), ("app-store-changelog", 2)):
        state.create_topic(name, n)
    joined = {}
    for member in ("a", "b"):
        state.clock.advance(state.streams_groups.config.assignment_interval_ms)
        joined[member] = state.streams_groups.heartbeat(StreamsHeartbeat(
            "app", member, 0, topology=TOPOLOGY, active={}, standby={}, warmup={}, rebalance_timeout_ms=30_000,
            process_id=f"p-{member}", client_id=f"client-{member}"))
    out = describe_tables(state).splitlines()
    groups = out.index("STREAMS GROUPS")
    assert out[groups + 1].split() == ["GROUP", "STATE", "GROUP", "EPOCH", "ASSIGNMENT", "EPOCH", "TOPOLOGY", "EPOCH",
                                       "TASKS", "MEMBERS", "COMMITTED", "LAG"]
    assert out[groups + 2].split() == ["app", "Reconciling", "3", "3", "0", "4", "2", "0", "0"]
    members = out.index("STREAMS GROUP MEMBERS")
    rows = {r.split()[1]: r for r in out[members + 2:members + 4]}
    # a still has every task at epoch 2 (half to give up at its next heartbeat); b waits at epoch 3 for them
    assert rows["a"].split()[2:6] == ["client-a", "p-a", "2", "STABLE"]
    assert "active 0:0,1; active 1:0,1" in rows["a"]
    assert rows["b"].split()[2:6] == ["client-b", "p-b", "3", "UNRELEASED_TASKS"]
    view = StreamsGroupView.of(state.streams_groups.group("app"))
    assert view is not None and (view.state, view.topology_epoch, view.subtopologies) == \
        ("Reconciling", 0, {"0": ["in"], "1": ["app-rep"]})
    a = next(m for m in view.members if m.member_id == "a")
    assert a.tasks["active"] == {"0": [0, 1], "1": [0, 1]} and a.target_tasks != a.tasks
    assert "1 Reconciling" in status_line(state, uptime_s=1, connections=0, requests=0)


def test_no_warmup_tasks_as_kafka_4_4() -> None:
    """Kafka 4.4.0 assigns no warm-up tasks: its sticky assignor's MemberAssignment carries active and standby
    tasks only, and its AssignmentRefiner (where `streams.num.warmup.replicas` and `acceptable.recovery.lag`
    would apply) returns the assignment unchanged. A task moving to a member whose reported offsets lag far
    behind its end offsets moves as an active task, with no warm-up first."""
    w = World(initial_rebalance_delay_ms=0, assignment_interval_ms=0, acceptable_recovery_lag=0,
              num_standby_replicas=1)
    w.topics.update({"app-rep": 3, "app-store-changelog": 3})
    e1 = w.heartbeat("m1", 0)["member_epoch"]
    w.heartbeat("m1", e1)
    assert set(w.coordinator.group("app").members["m1"].assigned.active) == {"0", "1"}
    far_behind = [("1", p, 0) for p in range(3)]
    e2 = w.heartbeat("m2", 0, task_offsets=far_behind, task_end_offsets=[("1", p, 1_000_000) for p in range(3)])[
        "member_epoch"]
    for _ in range(3):
        owned = w.coordinator.group("app").members["m1"].assigned
        w.heartbeat("m1", w.coordinator.group("app").members["m1"].member_epoch, active=owned.active,
                    standby=owned.standby, warmup={})
        r2 = w.heartbeat("m2", e2, active={}, standby={}, warmup={})
        e2 = r2["member_epoch"]
    group = w.coordinator.group("app")
    assert any(group.target[m].active for m in ("m1", "m2"))
    assert all(not t.warmup for t in group.target.values())
    assert all(not m.assigned.warmup for m in group.members.values())
    assert not r2.get("warmup_tasks")
    assert group.members["m2"].assigned.active  # the lagging member got its share of active tasks directly


def test_internal_group_configs_as_kafka_4_4() -> None:
    """Kafka 4.4's internal streams group configs (`streams.num.warmup.replicas`, `streams.acceptable.recovery.lag`,
    `streams.task.offset.interval.ms`, the `*.assignor.offload.enable`s) are accepted with Kafka's checks and words
    (probed with IncrementalAlterConfigs against Kafka 4.4.0), never described, and a group's own
    `streams.acceptable.recovery.lag` and `streams.task.offset.interval.ms` are what its heartbeats answer."""
    broker = BrokerConfig()
    for name, value in [("streams.num.warmup.replicas", "20"), ("streams.acceptable.recovery.lag", "0"),
                        ("streams.task.offset.interval.ms", "15000"), ("streams.assignor.offload.enable", "false"),
                        ("consumer.assignor.offload.enable", "false"), ("share.assignor.offload.enable", "true")]:
        validate_group_config(name, value, broker)
    for name, value, words in [
            ("streams.num.warmup.replicas", "21", "streams.num.warmup.replicas must be less than or equal to 20"),
            ("streams.num.warmup.replicas", "-1",
             "Invalid value -1 for configuration streams.num.warmup.replicas: Value must be at least 0"),
            ("streams.acceptable.recovery.lag", "-1",
             "Invalid value -1 for configuration streams.acceptable.recovery.lag: Value must be at least 0"),
            ("streams.task.offset.interval.ms", "1000",
             "streams.task.offset.interval.ms must be greater than or equal to 15000"),
            ("streams.task.offset.interval.ms", "-1",
             "Invalid value -1 for configuration streams.task.offset.interval.ms: Value must be at least 1"),
            ("streams.assignor.offload.enable", "maybe", "Invalid value maybe for configuration "
             "streams.assignor.offload.enable: Expected value to be either true or false")]:
        with pytest.raises(InvalidConfig) as e:
            validate_group_config(name, value, broker)
        assert str(e.value) == words
    assert {n for n, s in GROUP_CONFIGS.items() if s.internal} >= {
        "streams.num.warmup.replicas", "streams.acceptable.recovery.lag", "streams.task.offset.interval.ms"}
    clock = ManualClock(0)
    own = {"app": {"streams.acceptable.recovery.lag": "7", "streams.task.offset.interval.ms": "20000"}}
    coordinator = StreamsGroupCoordinator(clock, StreamsGroupConfig(initial_rebalance_delay_ms=0),
                                          topics=lambda: {"in": 3}, group_config=lambda g: own.get(g, {}))
    for group in ("app", "other"):
        r = coordinator.heartbeat(StreamsHeartbeat(group, "m1", 0, topology=TOPOLOGY, active={}, standby={},
                                                   warmup={}, rebalance_timeout_ms=30_000, process_id="p"))
        assert (r["acceptable_recovery_lag"], r["task_offset_interval_ms"]) == \
            ((7, 20000) if group == "app" else (10_000, 60_000))


def test_standby_candidates_ranked_as_kafka_4_4() -> None:
    """Kafka 4.4's sticky assignor offers a standby task to its previous standby owners first, then to the members
    whose reported task offsets show its state furthest along, before the least-loaded."""
    active_a = Tasks({"0": frozenset({0})})
    specs = {"a": MemberSpec("pa", active_a), "b": MemberSpec("pb", Tasks(), {("0", 0): 10}),
             "c": MemberSpec("pc", Tasks(), {("0", 0): 500}), "d": MemberSpec("pd", Tasks())}
    got = assign(specs, {"0": 1}, 1)
    assert got["a"].active == {"0": frozenset({0})}
    assert [m for m, t in got.items() if t.standby] == ["c"]  # furthest along, not the first by id
    specs["b"] = MemberSpec("pb", Tasks(standby={"0": frozenset({0})}), {("0", 0): 10})
    got = assign(specs, {"0": 1}, 1)
    assert [m for m, t in got.items() if t.standby] == ["b"]  # the previous standby owner keeps it
