"""A test's mistake in a handle call is a ValueError or LookupError saying what exists, raised before anything
changes, never a bare KeyError from inside the model nor a second traceback logged by the loop it ran on."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

import pytest

import fakekafka
from fakekafka.model.errors import ApiError


@pytest.mark.fakekafka(brokers=3, topics={"orders": 2})
def test_an_unknown_broker_is_named_with_the_brokers_there_are(kafka: fakekafka.Cluster,
                                                               caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.ERROR)
    for call in (kafka.kill_broker, kafka.stop_broker, kafka.restart_broker, kafka.isolate_broker,
                 kafka.pause_replication):
        with pytest.raises(LookupError, match=r"^there is no broker 7; the brokers are 1, 2, 3$"):
            call(7)
    with pytest.raises(LookupError, match="there is no broker 9; the brokers are 1, 2, 3"):
        kafka.inject_error("Produce", "NOT_LEADER_OR_FOLLOWER", broker=9)
    with pytest.raises(LookupError, match="there is no broker 4"):
        kafka.shrink_isr("orders", 0, 4)
    assert [r for r in caplog.records if "background task failed" in r.getMessage()] == []
    assert kafka.state.faults.rules == []  # the refused fault was not added
    assert all(b.alive for b in kafka.state.brokers.values())


@pytest.mark.fakekafka(topics={"orders": 2})
@pytest.mark.parametrize(("call", "message"), [
    (lambda k: k.end_offsets("nosuch"), r"there is no topic 'nosuch'; the topics are orders"),
    (lambda k: k.records("nosuch"), r"there is no topic 'nosuch'; the topics are orders"),
    (lambda k: k.records("orders", 5), r"there is no partition 5 of 'orders'; its partitions are 0-1"),
    (lambda k: k.records("orders", -1), r"there is no partition -1 of 'orders'"),
    (lambda k: k.log_dirs("nosuch"), r"there is no topic 'nosuch'"),
    (lambda k: k.last_stable_offset("orders", 2), r"there is no partition 2 of 'orders'"),
    (lambda k: k.partition_state("orders", 9), r"there is no partition 9 of 'orders'"),
    (lambda k: k.produce("orders", b"x", partition=3), r"there is no partition 3 of 'orders'"),
    (lambda k: k.move_leader("nosuch", 0, 1), r"there is no topic 'nosuch'"),
    (lambda k: k.pause_replication(1, "orders", 7), r"there is no partition 7 of 'orders'"),
    (lambda k: k.force_compaction("nosuch"), r"there is no topic 'nosuch'"),
    (lambda k: k.force_rebalance("nogroup"), r"there is no classic group 'nogroup'; the classic groups are none"),
    (lambda k: k.expire_member("nogroup", "m-1"), r"there is no group 'nogroup'; the groups are none"),
    (lambda k: k.abort_transaction("tx-1"), r"there is no transactional id 'tx-1'; the transactional ids are none"),
    (lambda k: k.expire_transactional_id("tx-1"), r"there is no transactional id 'tx-1'"),
])
def test_unknown_names_say_what_exists(kafka: fakekafka.Cluster, call: Callable[[Any], Any], message: str) -> None:
    with pytest.raises(LookupError, match=message) as raised:
        call(kafka)
    assert not isinstance(raised.value, KeyError)  # str(KeyError) is the repr of its argument


@pytest.mark.fakekafka(topics={"orders": 1}, auto_create_topics=False)
def test_unknown_topics_are_still_kafkas_error(kafka: fakekafka.Cluster) -> None:
    """The handle's unknown topic or partition is Kafka's UNKNOWN_TOPIC_OR_PARTITION too, as it was."""
    with pytest.raises(ApiError) as raised:
        kafka.produce("nosuch", b"x")
    assert raised.value.code.name == "UNKNOWN_TOPIC_OR_PARTITION" and "the topics are orders" in str(raised.value)


@pytest.mark.fakekafka
@pytest.mark.parametrize(("call", "message"), [
    (lambda k: k.inject_error("Produce", "NOT_LEADER_OR_FOLLOWER", count=-3), r"count must be 1 or more, not -3"),
    (lambda k: k.inject_error("Produce", "NOT_LEADER_OR_FOLLOWER", count=0), r"count must be 1 or more, not 0"),
    (lambda k: k.inject_latency(-100), r"ms must be 0 or more, not -100"),
    (lambda k: k.throttle(-1), r"ms must be 0 or more, not -1"),
    (lambda k: k.drop_connection(count=-1), r"count must be 1 or more, not -1"),
    (lambda k: k.inject_error("Fetch", "NOT_LEADER_OR_FOLLOWER", topic="t", partition=-2),
     r"partition must be 0 or more, not -2"),
])
def test_negative_counts_and_times_are_refused(kafka: fakekafka.Cluster, call: Callable[[Any], Any],
                                               message: str) -> None:
    with pytest.raises(ValueError, match=message):
        call(kafka)
    assert kafka.describe()  # the cluster serves on
