"""Programmable hooks (fakekafka/model/hooks.py) through the dispatcher: answer, fail before or after applying, drop,
edit, delay, hold until a condition; one request or until removed; fault rules as hooks. Requests are parsed from
real request bytes and dispatched in process on a frozen clock."""

from __future__ import annotations

from typing import Any

import pytest
from construct import Container

from fakekafka.handlers import DropConnection, Park, RequestContext, dispatch
from fakekafka.model.clock import ManualClock
from fakekafka.model.cluster import ClusterState
from fakekafka.model.faults import Fault, FaultKind, api_key_of
from fakekafka.model.hooks import Answer, Delay, Drop, Edit, Fail, Hold, Hook, Several, Throttle
from fakekafka.wire import ErrorCode, Request
from fakekafka.wire.protocol import request_struct
from fakekafka.wire.records import build_batch


def produce(cluster: ClusterState, partition: int = 0, correlation_id: int = 1) -> Any:
    struct = request_struct(0, 9)
    body = struct.parse(struct.build({"acks": 1, "timeout_ms": 1000, "topic_data": [
        {"name": "orders", "partition_data": [{"index": partition, "records": build_batch([{"value": b"v"}])}]}]}))
    return dispatch(RequestContext(cluster, cluster.brokers[1], Request(0, 9, correlation_id, "app", Container(),
                                                                        body)))


def code(answer: Any) -> ErrorCode:
    return ErrorCode(answer["responses"][0]["partition_responses"][0]["error_code"])


def end(cluster: ClusterState, partition: int = 0) -> int:
    return cluster.partition("orders", partition).log.log_end_offset


@pytest.fixture
def cluster() -> ClusterState:
    c = ClusterState(clock=ManualClock())
    c.create_topic("orders", 2, 1)
    return c


def test_a_hook_fails_one_request_then_is_used_up(cluster: ClusterState) -> None:
    hook = cluster.hooks.add(Hook(lambda r: Fail("NOT_LEADER_OR_FOLLOWER"), api_key=0))
    assert code(produce(cluster)) == ErrorCode.NOT_LEADER_OR_FOLLOWER
    assert end(cluster) == 0
    assert code(produce(cluster)) == ErrorCode.NONE
    assert end(cluster) == 1
    assert hook.fired == 1 and hook.seen[0].api == "Produce" and hook.seen[0].touched == {("orders", 0)}


def test_failing_after_applying_appends_and_answers_the_error(cluster: ClusterState) -> None:
    cluster.hooks.add(Hook(lambda r: Fail(ErrorCode.REQUEST_TIMED_OUT, after=True)))
    assert code(produce(cluster)) == ErrorCode.REQUEST_TIMED_OUT
    assert end(cluster) == 1


def test_a_kept_hook_decides_per_request_until_removed(cluster: ClusterState) -> None:
    hook = cluster.hooks.add(Hook(lambda r: Drop(after=True) if r.nth % 2 == 0 else None, api_key=0, keep=True))
    results = [produce(cluster) for _ in range(4)]
    assert [isinstance(r, DropConnection) and r.applied for r in results] == [True, False, True, False]
    assert end(cluster) == 4  # dropped after applying: every request took effect
    hook.remove()
    assert code(produce(cluster)) == ErrorCode.NONE and hook.fired == 2


def test_drop_before_applies_nothing(cluster: ClusterState) -> None:
    cluster.hooks.add(Hook(lambda r: Drop()))
    result = produce(cluster)
    assert isinstance(result, DropConnection) and not result.applied
    assert end(cluster) == 0


def test_answer_yourself_and_edit_the_answer(cluster: ClusterState) -> None:
    made = {"responses": [{"name": "orders", "partition_responses": [
        {"index": 0, "error_code": ErrorCode.KAFKA_STORAGE_ERROR, "base_offset": -1}]}], "throttle_time_ms": 0}
    cluster.hooks.add(Hook(lambda r: Answer(made)))
    assert produce(cluster) is made and end(cluster) == 0

    def offset_plus_100(answer: Any) -> None:
        answer["responses"][0]["partition_responses"][0]["base_offset"] += 100
    cluster.hooks.add(Hook(lambda r: Several(Edit(offset_plus_100), Throttle(250))))
    answer = produce(cluster)
    assert answer["responses"][0]["partition_responses"][0]["base_offset"] == 100
    assert answer["throttle_time_ms"] == 250 and end(cluster) == 1


def test_a_hook_matches_topic_and_partition(cluster: ClusterState) -> None:
    cluster.hooks.add(Hook(lambda r: Fail("NOT_ENOUGH_REPLICAS"), topic="orders", partition=1))
    assert code(produce(cluster, 0)) == ErrorCode.NONE
    assert code(produce(cluster, 1)) == ErrorCode.NOT_ENOUGH_REPLICAS


def test_delay_parks_the_request_for_its_time(cluster: ClusterState) -> None:
    cluster.hooks.add(Hook(lambda r: Delay(40)))
    parked = produce(cluster)
    assert isinstance(parked, Park) and parked.wait_ms == 40 and end(cluster) == 0
    assert code(parked.resume(True)) == ErrorCode.NONE and end(cluster) == 1


def test_hold_orders_two_requests(cluster: ClusterState) -> None:
    """The first Produce is held until a second one has been applied: partition 1 is written first."""
    cluster.hooks.add(Hook(lambda r: Hold(lambda: end(cluster, 1) > 0), api_key=0, partition=0, topic="orders"))
    held = produce(cluster, 0)
    assert isinstance(held, Park) and cluster.hooks.held == 1
    assert held.resume(False) is not None and end(cluster, 0) == 0  # condition not yet true: parked again
    assert code(produce(cluster, 1)) == ErrorCode.NONE
    answer = held.resume(False)
    assert code(answer) == ErrorCode.NONE and end(cluster, 0) == 1 and cluster.hooks.held == 0


def test_fault_rules_go_through_the_hooks(cluster: ClusterState) -> None:
    key = api_key_of("Produce")
    cluster.faults.add(Fault(FaultKind.ERROR, key, ErrorCode.NOT_LEADER_OR_FOLLOWER, count=1))
    assert code(produce(cluster)) == ErrorCode.NOT_LEADER_OR_FOLLOWER
    fault = [e for e in cluster.events if e.kind == "fault"]
    assert fault and fault[0].details["action"] == "answered NOT_LEADER_OR_FOLLOWER"


def test_requests_are_counted_per_api(cluster: ClusterState) -> None:
    seen: list[int] = []
    cluster.hooks.add(Hook(lambda r: seen.append(r.nth), keep=True))  # type: ignore[func-returns-value]
    for _ in range(3):
        produce(cluster)
    assert seen == [0, 1, 2]


def test_unknown_error_names_are_refused_in_words() -> None:
    with pytest.raises(ValueError, match="unknown error 'NOT_A_THING'"):
        Fail("NOT_A_THING")
