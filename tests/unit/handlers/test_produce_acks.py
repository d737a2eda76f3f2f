"""acks=-1 over raw sockets: waiting for the high watermark, on the cluster's clock, and its errors."""

from __future__ import annotations

import socket
from collections.abc import Iterator

import pytest

import fakekafka
from fakekafka.wire import ErrorCode
from fakekafka.wire.records import build_batch
from tests.rawclient import RawClient


@pytest.fixture
def cluster() -> Iterator[fakekafka.Cluster]:
    config = fakekafka.BrokerConfig(replica_lag_time_max_ms=10_000)
    with fakekafka.Cluster(brokers=3, clock="frozen", config=config) as c:
        c.create_topic("w", 1, replication_factor=3, configs={"min.insync.replicas": "2"})
        yield c


def _leader_client(cluster: fakekafka.Cluster) -> tuple[RawClient, dict]:
    state = cluster.partition_state("w", 0)
    port = cluster.state.brokers[state["leader"]].port
    return RawClient(f"127.0.0.1:{port}"), state


def _send(raw: RawClient, acks: int = -1, timeout_ms: int = 5000) -> None:
    raw.send(0, 9, {"acks": acks, "timeout_ms": timeout_ms, "topic_data": [
        {"name": "w", "partition_data": [{"index": 0, "records": build_batch([{"value": b"x"}])}]}]})


def _answered_within(raw: RawClient, seconds: float) -> bool:
    raw.sock.settimeout(seconds)
    try:
        raw.sock.recv(1, socket.MSG_PEEK)
        return True
    except TimeoutError:
        return False
    finally:
        raw.sock.settimeout(10)


def _code(raw: RawClient) -> ErrorCode:
    return ErrorCode(raw.receive(0, 9)[1].responses[0].partition_responses[0].error_code)


def test_waits_for_the_followers_then_succeeds(cluster: fakekafka.Cluster) -> None:
    raw, state = _leader_client(cluster)
    followers = [r for r in state["replicas"] if r != state["leader"]]
    cluster.pause_replication(followers[0])
    _send(raw)
    assert not _answered_within(raw, 0.3)  # the paused follower is still in the ISR: the HW cannot move
    cluster.pause_replication(followers[0], paused=False)
    assert _code(raw) == ErrorCode.NONE
    assert cluster.partition_state("w", 0)["high_watermark"] == 1


def test_request_timeout_follows_the_clusters_clock(cluster: fakekafka.Cluster) -> None:
    raw, state = _leader_client(cluster)
    cluster.pause_replication(state["replicas"][1] if state["replicas"][1] != state["leader"] else
                              state["replicas"][2])
    _send(raw, timeout_ms=5000)
    assert not _answered_within(raw, 0.3)
    cluster.advance_clock(4999)
    assert not _answered_within(raw, 0.3)
    cluster.advance_clock(1)
    assert _code(raw) == ErrorCode.REQUEST_TIMED_OUT


def test_isr_shrinking_below_min_while_waiting(cluster: fakekafka.Cluster) -> None:
    raw, state = _leader_client(cluster)
    followers = [r for r in state["replicas"] if r != state["leader"]]
    for f in followers:
        cluster.pause_replication(f)
    _send(raw, timeout_ms=60_000)
    assert not _answered_within(raw, 0.3)  # parked on the leader
    cluster.advance_clock(10_001)  # both followers fall out of the ISR; the HW moves to the leader's LEO
    assert _code(raw) == ErrorCode.NOT_ENOUGH_REPLICAS_AFTER_APPEND
    _send(raw)
    assert _code(raw) == ErrorCode.NOT_ENOUGH_REPLICAS  # refused up front now
    _send(raw, acks=1)
    assert _code(raw) == ErrorCode.NONE
