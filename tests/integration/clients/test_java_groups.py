"""End-to-end consumer groups: Kafka's Java client (kafka-clients 4.4, KafkaConsumer with group.id and
subscribe) against fakekafka's group coordinator over the real wire.

One JVM (tests/integration/clients/java/GroupDriver.java) runs every scenario against one broker started for this
module; each test below asserts one scenario's JSON result. At chosen points the driver asks for a
snapshot of the broker's view (`Cluster.group`, `Cluster.committed`), or for the broker to act behind the
clients' backs (`force_rebalance`, `expire_member`), so each check is made from both sides.

The assignor examples are the seeds' worked examples (seeds 001 and 002 on partition assignment). Java's
assignors order members by member id (by group.instance.id for static members), and fakekafka gives
member ids as "<group.instance.id or client.id>-NNNNNNNN-fakekafka". So the driver names each consumer by
its client.id ("C0", "C1", ... or seed 002's "C1-0", "C2-0", "C3-0"): the member ids then sort as the
seeds' consumer names do, whatever order the members joined in. The broker's
group.initial.rebalance.delay.ms (1 s here) lets all of a group's first members join one generation, so
the sticky assignors start from scratch as the seeds' examples do.

Where the Java client differs from a seed: seed 002's RoundRobin example sorts partitions by hash code
(the old Scala consumer); the Java RoundRobinAssignor sorts by name, so seed 001's example is the one
reproduced. When C1 leaves the sticky example, C0 and C2 keep their partitions and split C1's three as the
seeds say, but kafka-clients (4.4, as 3.9 did) hands them out round-robin in member order (C0 gets t0p1; C2
gets t2p0 and t3p1), where the seeds' listing gives C0 t2p0.

Skips (naming .ci/install.sh) when java, javac or the Kafka jars are missing.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

import fakekafka
from fakekafka.testing.embedded import GroupView
from tests import javautil
from tests.javautil import JavaRun

pytestmark = pytest.mark.clients

JAVA_SOURCE = Path(__file__).resolve().parent / "java" / "GroupDriver.java"
RUN_TIMEOUT_S = 150
BROKER = fakekafka.BrokerConfig(group_min_session_timeout_ms=500, group_initial_rebalance_delay_ms=1000)


# --------------------------------------------------------------------------------------- the JVM run

@dataclass
class Snapshot:
    group: GroupView | None
    committed: dict[tuple[str, int], int]

    def assignment(self, prefix: str = "") -> dict[str, dict[str, list[int]]]:
        """{member name: {topic without prefix: [partitions]}}, the member name read off the member id."""
        assert self.group is not None
        return {_name(m.member_id): {t[len(prefix):]: ps for t, ps in (m.assignment or {}).items() if ps}
                for m in self.group.members}


def _name(member_id: str) -> str:
    """"C0-00000003-fakekafka" -> "C0" (the client.id or group.instance.id the member id starts with)."""
    return member_id.rsplit("-", 2)[0]


@dataclass
class GroupRun(JavaRun):
    snapshots: dict[str, Snapshot] = field(default_factory=dict)
    """The broker's view at the points the driver asked for one, by label."""

    def snapshot(self, label: str) -> Snapshot:
        s = self.snapshots.get(label)
        if s is None:
            pytest.fail(f"no broker snapshot {label!r} was taken (the scenario stopped before it)")
        return s


def _serve(run: GroupRun, request: dict[str, Any]) -> str:
    """Carries out what a scenario asked of the broker; returns the line to answer with."""
    c = run.cluster
    try:
        what = request["request"]
        if what == "snapshot":
            run.snapshots[request["label"]] = Snapshot(c.group(request["group"]), c.committed(request["group"]))
        elif what == "force_rebalance":
            c.force_rebalance(request["group"])
        elif what == "expire":
            c.expire_member(request["group"], request["member"])
        else:
            return f"unknown request {what!r}"
    except Exception as e:  # noqa: BLE001 - reported to the driver, which fails the scenario with it
        return f"{type(e).__name__}: {e}"
    return "ok"


@pytest.fixture(scope="module")
def java() -> Iterator[GroupRun]:
    """One broker and one JVM running every scenario; the broker stays up for the tests' checks."""
    classes = javautil.compile_java(JAVA_SOURCE)
    with fakekafka.Cluster(config=BROKER) as cluster:
        run = GroupRun(cluster)
        yield javautil.run_driver(run, classes, "GroupDriver", cluster.bootstrap_servers, timeout=RUN_TIMEOUT_S,
                                  serve=lambda request: _serve(run, request))


# ------------------------------------------------------------------------------------------ helpers

def tp(spec: str) -> tuple[str, list[int]]:
    """"t0p1" -> ("t0", [1])."""
    topic, partition = spec.split("p")
    return topic, [int(partition)]


def parts(*specs: str) -> dict[str, list[int]]:
    """parts("t0p0", "t0p1", "t1p0") -> {"t0": [0, 1], "t1": [0]}, the seeds' notation as an assignment."""
    out: dict[str, list[int]] = {}
    for spec in specs:
        topic, partition = tp(spec)
        out.setdefault(topic, []).extend(partition)
    return {t: sorted(ps) for t, ps in out.items()}


def assert_stable(snap: Snapshot, generation: int, members: set[str]) -> None:
    g = snap.group
    assert g is not None
    assert (g.state, g.generation_id) == ("Stable", generation)
    assert {_name(m.member_id) for m in g.members} == members


def rebalances(snap: Snapshot) -> int:
    """How many rebalances the group has started (entries into PreparingRebalance)."""
    assert snap.group is not None
    return sum(1 for _, to in snap.group.transitions if to == "PreparingRebalance")


# ------------------------------------------------------------------------------- assignor examples

def test_range_seed_001_examples(java: GroupRun) -> None:
    r = java.result("range")
    # 4 partitions each: C0 t0p0 t0p1 t1p0 t1p1, C1 t0p2 t0p3 t1p2 t1p3
    four = {"C0": parts("t0p0", "t0p1", "t1p0", "t1p1"), "C1": parts("t0p2", "t0p3", "t1p2", "t1p3")}
    # 3 partitions each: C0 t0p0 t0p1 t1p0 t1p1, C1 t0p2 t1p2 (the uneven split the seed points out)
    three = {"C0": parts("t0p0", "t0p1", "t1p0", "t1p1"), "C1": parts("t0p2", "t1p2")}
    assert r["range4"]["assignment"] == four
    assert r["range3"]["assignment"] == three
    for group, expected in (("range4", four), ("range3", three)):
        snap = java.snapshot(group)
        assert_stable(snap, 1, {"C0", "C1"})
        assert snap.group is not None and snap.group.protocol == "range"
        assert snap.assignment(group + "-") == expected
        assert set(r[group]["generations"].values()) == {1}


def test_range_seed_002_examples(java: GroupRun) -> None:
    r = java.result("range_seed2")
    span = {"C1-0": [0, 1, 2, 3], "C2-0": [4, 5, 6], "C3-0": [7, 8, 9]}          # 10 partitions, 3 consumers
    span11 = {"C1-0": [0, 1, 2, 3], "C2-0": [4, 5, 6, 7], "C3-0": [8, 9, 10]}    # 11 partitions
    expected = {name: {"T1": span[name], "T2": span[name], "T3": span11[name]} for name in span}
    assert r["assignment"] == expected
    snap = java.snapshot("range10")
    assert_stable(snap, 1, set(span))
    assert snap.assignment("range10-") == expected


def test_round_robin_seed_example(java: GroupRun) -> None:
    r = java.result("roundrobin")
    # C0 subscribes t0, C1 t0 and t1, C2 t0, t1 and t2 (1, 2 and 3 partitions)
    expected = {"C0": parts("t0p0"), "C1": parts("t1p0"), "C2": parts("t1p1", "t2p0", "t2p1", "t2p2")}
    assert r["assignment"] == expected
    snap = java.snapshot("rr")
    assert_stable(snap, 1, {"C0", "C1", "C2"})
    assert snap.group is not None and snap.group.protocol == "roundrobin"
    assert snap.assignment("rr-") == expected


STICKY_FIRST = {"C0": parts("t0p0", "t1p1", "t3p0"), "C1": parts("t0p1", "t2p0", "t3p1"), "C2": parts("t1p0", "t2p1")}
# kafka-clients 4.4 (as 3.9) after C1 leaves (see the module docstring for how this differs from the seeds' listing)
STICKY_AFTER = {"C0": parts("t0p0", "t1p1", "t3p0", "t0p1"), "C2": parts("t1p0", "t2p1", "t2p0", "t3p1")}


def _merge(*assignments: dict[str, list[int]]) -> dict[str, list[int]]:
    out: dict[str, list[int]] = {}
    for a in assignments:
        for topic, ps in a.items():
            out.setdefault(topic, []).extend(ps)
    return {t: sorted(ps) for t, ps in out.items()}


def _owns(big: dict[str, list[int]], small: dict[str, list[int]]) -> bool:
    return all(set(ps) <= set(big.get(t, [])) for t, ps in small.items())


@pytest.mark.parametrize("scenario", ["sticky", "cooperative"])
def test_sticky_seed_example(java: GroupRun, scenario: str) -> None:
    r = java.result(scenario)
    group = "sticky" if scenario == "sticky" else "coop"
    assert r["first"]["assignment"] == STICKY_FIRST
    assert set(r["first"]["generations"].values()) == {1}
    first = java.snapshot(f"{group}-1")
    assert_stable(first, 1, {"C0", "C1", "C2"})
    assert first.assignment(f"{group}-") == STICKY_FIRST

    after = r["after_c1_left"]["assignment"]
    # C0 and C2 keep what they had and split C1's partitions between them, 4 and 4
    for name in ("C0", "C2"):
        assert _owns(after[name], STICKY_FIRST[name])
        assert sum(map(len, after[name].values())) == 4
    assert _merge(after["C0"], after["C2"]) == _merge(*STICKY_FIRST.values())
    assert after == STICKY_AFTER
    second = java.snapshot(f"{group}-2")
    assert_stable(second, 2, {"C0", "C2"})
    assert second.assignment(f"{group}-") == STICKY_AFTER
    assert set(r["after_c1_left"]["generations"].values()) == {2}


def test_sticky_is_eager_cooperative_revokes_nothing_kept(java: GroupRun) -> None:
    # eager StickyAssignor: every member gives up everything before rejoining, then gets it back
    eager = java.result("sticky")["after_c1_left"]["events"]
    for name in ("C0", "C2"):
        kinds = [e["event"] for e in eager[name]]
        assert kinds == ["revoked", "assigned"], eager[name]
        assert len(eager[name][0]["partitions"]) == sum(map(len, STICKY_FIRST[name].values()))
    # cooperative: C1's partitions move to members that keep theirs, so nobody revokes anything
    coop = java.result("cooperative")["after_c1_left"]["events"]
    for name in ("C0", "C2"):
        assert [e["event"] for e in coop[name]] == ["assigned"], coop[name]
        gained = {f"coop-{t}-{p}" for t, ps in STICKY_AFTER[name].items() for p in ps} - \
            {f"coop-{t}-{p}" for t, ps in STICKY_FIRST[name].items() for p in ps}
        assert set(coop[name][0]["partitions"]) == gained


def _names(a: dict[str, list[int]], prefix: str) -> set[str]:
    return {f"{prefix}{t}-{p}" for t, ps in a.items() for p in ps}


def test_cooperative_third_member_joins_incrementally(java: GroupRun) -> None:
    r = java.result("cooperative")["after_c3_joined"]
    before, after, events = STICKY_AFTER, r["assignment"], r["events"]
    assert sorted(sum(map(len, a.values())) for a in after.values()) == [2, 3, 3]
    assert _merge(*after.values()) == _merge(*before.values())
    # C0 and C2 keep what they do not give up, revoke exactly what moves to C3 (each partition once), and
    # nothing is lost or newly given to them
    revoked_in: dict[str, int] = {}
    for name in ("C0", "C2"):
        assert _owns(before[name], after[name])
        revoked = [(e["generation"], p) for e in events[name] if e["event"] == "revoked" for p in e["partitions"]]
        assert sorted(p for _, p in revoked) == sorted(_names(before[name], "coop-") - _names(after[name], "coop-"))
        revoked_in.update((p, generation) for generation, p in revoked)
        assert not any(e["event"] == "lost" for e in events[name])
        assert all(e["partitions"] == [] for e in events[name] if e["event"] == "assigned")
    # C3 gets each moved partition only in a generation after the one its owner revoked it in: never two
    # owners at once, so at least two generations (which member syncs first decides whether it takes more)
    got_in = {p: e["generation"] for e in events["C3"] if e["event"] == "assigned" for p in e["partitions"]}
    assert set(got_in) == set(revoked_in) == _names(after["C3"], "coop-")
    assert all(got_in[p] > revoked_in[p] for p in got_in), (revoked_in, got_in)
    generation = r["generations"]["C3"]
    assert set(r["generations"].values()) == {generation} and generation >= 4
    snap = java.snapshot("coop-3")
    assert_stable(snap, generation, {"C0", "C2", "C3"})
    assert snap.assignment("coop-") == after
    assert rebalances(snap) - rebalances(java.snapshot("coop-2")) == generation - 2
    assert snap.group is not None and snap.group.protocol == "cooperative-sticky"


# ------------------------------------------------------------------------------- static membership

def test_static_member_restart_keeps_partitions_without_rebalance(java: GroupRun) -> None:
    r = java.result("static")
    before, restarted = r["before"], r["restarted"]
    assert before["assignment"] == {"S0": {"t0": [0, 1]}, "S1": {"t0": [2, 3]}}
    assert restarted["assignment"] == before["assignment"]
    assert restarted["generations"] == before["generations"]
    assert restarted["member_ids"]["S0"] == before["member_ids"]["S0"]
    assert restarted["member_ids"]["S1"] != before["member_ids"]["S1"]
    # S0 never saw a rebalance: one assignment, no revocation
    assert [e["event"] for e in restarted["S0_events"]] == ["assigned"]

    s1, s2 = java.snapshot("static-1"), java.snapshot("static-2")
    generation = before["generations"]["S0"]
    assert_stable(s1, generation, {"S0", "S1"})
    assert_stable(s2, generation, {"S0", "S1"})
    assert s2.group is not None and s1.group is not None
    assert s2.group.transitions == s1.group.transitions
    assert {m.group_instance_id: m.member_id for m in s2.group.members} == restarted["member_ids"]
    # as in Kafka, the replacement takes over the old member's entry, client.id included
    assert {m.group_instance_id: m.client_id for m in s2.group.members} == {"S0": "S0-first", "S1": "S1-first"}
    assert s2.assignment("static-") == before["assignment"]


def test_static_member_duplicate_instance_id_fences_the_old_one(java: GroupRun) -> None:
    r = java.result("static")
    dup = r["duplicate"]
    assert dup["old_S0"] == "FencedInstanceIdException"
    assert dup["assignment"] == r["before"]["assignment"]
    assert dup["generations"] == r["before"]["generations"]
    assert dup["member_ids"]["S0"] != r["restarted"]["member_ids"]["S0"]
    snap = java.snapshot("static-3")
    assert_stable(snap, r["before"]["generations"]["S0"], {"S0", "S1"})
    assert snap.group is not None
    assert {m.group_instance_id: m.member_id for m in snap.group.members} == dup["member_ids"]
    assert snap.group.transitions == java.snapshot("static-1").group.transitions  # type: ignore[union-attr]


# ------------------------------------------------------------------------------------------ offsets

def test_commit_then_resume_at_committed_offsets(java: GroupRun) -> None:
    r = java.result("commit_resume")
    assert r["first_read"] == {"C0": {"p0": list(range(10))}, "C1": {"p1": list(range(10))}}
    assert r["committed_seen_by_C0"] == {"p0": {"offset": 4, "metadata": "four"}, "p1": {"offset": 7, "metadata": ""}}
    assert java.snapshot("commit-1").committed == {("commit-t0", 0): 4, ("commit-t0", 1): 7}
    resumed = r["resumed"]
    assert resumed["assignment"] == {"C0": {"t0": [0]}, "C1": {"t0": [1]}}
    assert resumed["C0"] == {"p0": list(range(4, 10))}
    assert resumed["C1"] == {"p1": list(range(7, 10))}
    assert resumed["positions"] == {"p0": 10, "p1": 10}
    assert java.snapshot("commit-2").committed == {("commit-t0", 0): 10, ("commit-t0", 1): 10}


def test_stale_commits(java: GroupRun) -> None:
    r = java.result("stale_commits")
    t0, t1 = ("stale-t0", 0), ("stale-t0", 1)
    # forced rebalance: the member that has not rejoined yet still belongs to the current generation
    assert r["commit_before_rejoining"] == "ok"
    # the member waiting in JoinGroup cannot commit until the rebalance completes
    assert [e["event"] for e in r["C1_events"]] == ["revoked"]
    assert r["commit_while_rejoining"] == "RebalanceInProgressException"
    s2 = java.snapshot("stale-2")
    assert s2.group is not None and s2.group.state == "PreparingRebalance"
    assert s2.committed == {t0: 1}
    assert r["generation_after_rebalance"] == r["generation"] + 1
    # a member the broker expired: its commit fails, and it gets back in by polling
    assert r["commit_after_expiry"] == "CommitFailedException"
    s3 = java.snapshot("stale-3")
    assert s3.committed == {t0: 1}
    assert s3.group is not None and r["rejoined"]["old_member_id"] not in {m.member_id for m in s3.group.members}
    assert r["rejoined"]["member_id"] != r["rejoined"]["old_member_id"]
    assert r["commit_after_rejoining"] == "ok"
    s4 = java.snapshot("stale-4")
    assert s4.committed == {t0: 1, t1: 3}
    assert_stable(s4, r["rejoined"]["generation"], {"C0", "C1"})


# ------------------------------------------------------------------------------------------ pattern

def test_pattern_subscription_follows_new_topics_and_partitions(java: GroupRun) -> None:
    r = java.result("pattern")
    assert r["first"]["assignment"] == {"C0": {"orders-a": [0]}, "C1": {"orders-a": [1]}}
    assert r["new_topic"]["assignment"] == {"C0": {"orders-a": [0], "orders-b": [0]},
                                            "C1": {"orders-a": [1], "orders-b": [1]}}
    assert r["more_partitions"]["assignment"] == {"C0": {"orders-a": [0, 1], "orders-b": [0]},
                                                  "C1": {"orders-a": [2, 3], "orders-b": [1]}}
    gens = [set(r[step]["generations"].values()) for step in ("first", "new_topic", "more_partitions")]
    assert len(gens[0]) == len(gens[1]) == len(gens[2]) == 1
    g0, g1, g2 = (min(g) for g in gens)
    assert g0 < g1 < g2
    for label, step in (("pattern-1", "first"), ("pattern-2", "new_topic"), ("pattern-3", "more_partitions")):
        snap = java.snapshot(label)
        assert_stable(snap, min(r[step]["generations"].values()), {"C0", "C1"})
        assert snap.assignment() == r[step]["assignment"]


# -------------------------------------------------------------------------------------------- admin

def test_admin_list_and_describe_groups(java: GroupRun) -> None:
    r = java.result("admin")
    assert r["list"]["adm-live"] == "Stable"
    assert r["list"]["adm-empty"] == "Empty"
    assert "adm-live" in r["list_stable"] and "adm-empty" not in r["list_stable"]
    assert set(r["list_stable"].values()) == {"Stable"}
    assert "adm-empty" in r["list_empty"] and "adm-live" not in r["list_empty"]
    assert set(r["list_empty"].values()) == {"Empty"}

    port = int(java.cluster.bootstrap_servers.rsplit(":", 1)[1])
    live = r["describe"]["adm-live"]
    assert (live["state"], live["assignor"], live["simple"]) == ("Stable", "range", False)
    assert live["coordinator"] == {"id": 1, "host": "127.0.0.1", "port": port}
    snap = java.snapshot("adm-live")
    assert snap.group is not None
    assert [(m["member_id"], m["client_id"], m["group_instance_id"]) for m in live["members"]] == \
        sorted((m.member_id, m.client_id, m.group_instance_id) for m in snap.group.members)
    assert {_name(m["member_id"]): m["assignment"] for m in live["members"]} == \
        {"C0": {"adm-t0": [0]}, "C1": {"adm-t0": [1]}} == snap.assignment()
    assert all(m["host"] == "/127.0.0.1" for m in live["members"])   # InetAddress.toString(), as Kafka gives
    assert {m.client_host for m in snap.group.members} == {"/127.0.0.1"}
    empty = r["describe"]["adm-empty"]
    assert (empty["state"], empty["members"]) == ("Empty", [])


def test_admin_group_offsets(java: GroupRun) -> None:
    r = java.result("admin")
    assert r["offsets_live"] == {"adm-t0-0": 3, "adm-t0-1": 4, "adm-other-0": 1}
    assert r["offsets_empty"] == {"adm-t0-0": 5, "adm-t0-1": 6}
    assert java.snapshot("adm-live").committed == {("adm-other", 0): 1, ("adm-t0", 0): 3, ("adm-t0", 1): 4}
    # a topic the live group subscribes to keeps its offsets; one it does not loses them
    assert r["delete_offsets_subscribed"] == {"all": "GroupSubscribedToTopicException",
                                              "partition": "GroupSubscribedToTopicException"}
    assert r["delete_offsets_unsubscribed"] == "ok"
    assert r["offsets_live_after"] == {"adm-t0-0": 3, "adm-t0-1": 4}
    assert r["delete_offsets_empty"] == "ok"
    assert r["offsets_empty_after"] == {"adm-t0-1": 6}


def test_admin_delete_groups(java: GroupRun) -> None:
    r = java.result("admin")
    assert r["delete_live"] == "GroupNotEmptyException"
    assert r["delete_empty"] == "ok"
    assert r["delete_unknown"] == "GroupIdNotFoundException"
    # the Java 4.4 client asks DescribeGroups v6 (KIP-1043, Kafka 4.0): a deleted group is GROUP_ID_NOT_FOUND, as
    # on Kafka 4.4 (before v6 it was state Dead without an error)
    assert r["describe_deleted"] == "GroupIdNotFoundException"
    assert "adm-empty" not in r["list_after_delete"] and r["list_after_delete"]["adm-live"] == "Stable"
    assert r["delete_live_after_close"] == "ok"
    assert "adm-live" not in r["list_at_end"]
    assert java.cluster.group("adm-live") is None and java.cluster.group("adm-empty") is None


def test_every_scenario_ran_and_the_broker_logged_no_problem(java: GroupRun) -> None:
    failed = {name: r["error"].splitlines()[0] for name, r in java.results.items() if not r["ok"]}
    assert not failed
    assert set(java.results) == {"range", "range_seed2", "roundrobin", "sticky", "cooperative", "static",
                                 "commit_resume", "stale_commits", "pattern", "admin"}
    assert java.server_problems == []
    for api in ("FindCoordinator", "JoinGroup", "SyncGroup", "Heartbeat", "LeaveGroup", "OffsetCommit",
                "OffsetFetch", "ListGroups", "DescribeGroups", "OffsetDelete", "DeleteGroups"):
        assert java.api_calls[api] > 0, api
    assert java.seconds < 75, f"the JVM run took {java.seconds:.1f}s"
