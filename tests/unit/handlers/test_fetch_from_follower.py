"""A consumer's Fetch at a follower (KIP-392): from v11 a replica that is not the leader answers from its own log
below its own high watermark, as Kafka's does for requests carrying client metadata (FetchParams.fetchOnlyLeader);
before v11, or at a broker holding no replica, it is NOT_LEADER_OR_FOLLOWER. A consumer whose partition's leader
moves therefore keeps reading at the old leader, now a follower, as it does on Kafka."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

import fakekafka
from fakekafka.wire import ApiKey, ErrorCode
from fakekafka.wire.records import decode_batch, iter_batches
from tests.rawclient import RawClient


@pytest.fixture
def cluster() -> Iterator[fakekafka.Cluster]:
    config = fakekafka.BrokerConfig(replica_lag_time_max_ms=10_000)
    with fakekafka.Cluster(brokers=3, clock="frozen", config=config) as c:
        c.create_topic("t", 1, replication_factor=2)
        yield c


def _body(offset: int, epoch: int = -1) -> dict[str, Any]:
    return {"replica_id": -1, "max_wait_ms": 0, "min_bytes": 0, "max_bytes": 1 << 24, "isolation_level": 0,
            "session_id": 0, "session_epoch": -1, "forgotten_topics_data": [], "rack_id": "",
            "topics": [{"topic": "t", "partitions": [{"partition": 0, "current_leader_epoch": epoch,
                                                      "fetch_offset": offset, "last_fetched_epoch": -1,
                                                      "log_start_offset": -1, "partition_max_bytes": 1 << 20}]}]}


def _fetch(cluster: fakekafka.Cluster, node: int, version: int, offset: int = 0, epoch: int = -1) -> Any:
    raw = RawClient(f"127.0.0.1:{cluster.state.brokers[node].port}")
    try:
        return raw.request(ApiKey.FETCH, version, _body(offset, epoch)).responses[0].partitions[0]
    finally:
        raw.close()


def _values(answer: Any) -> list[bytes]:
    data = bytes(answer.records or b"")
    return [r.value for _, batch in iter_batches(data) for r in decode_batch(batch).records]


def test_a_follower_answers_a_v11_consumer_fetch_from_its_own_log(cluster: fakekafka.Cluster) -> None:
    state = cluster.partition_state("t", 0)
    leader, follower = state["leader"], next(r for r in state["replicas"] if r != state["leader"])
    outsider = next(n for n in (1, 2, 3) if n not in state["replicas"])
    for i in range(3):
        cluster.produce("t", b"v%d" % i)
    cluster.wait_until(lambda: _fetch(cluster, follower, 11).high_watermark == 3, timeout=10)

    at_follower = _fetch(cluster, follower, 11)
    assert at_follower.error_code == ErrorCode.NONE
    assert _values(at_follower) == [b"v0", b"v1", b"v2"]
    assert at_follower.preferred_read_replica == -1
    # before v11 a consumer's fetch is the leader's alone; a broker with no replica never answers one
    assert _fetch(cluster, follower, 10).error_code == ErrorCode.NOT_LEADER_OR_FOLLOWER
    assert _fetch(cluster, outsider, 12).error_code == ErrorCode.NOT_LEADER_OR_FOLLOWER
    # the epoch is checked as at the leader
    assert _fetch(cluster, follower, 12, epoch=state["leader_epoch"]).error_code == ErrorCode.NONE
    assert _fetch(cluster, follower, 12, epoch=state["leader_epoch"] + 1).error_code == \
        ErrorCode.UNKNOWN_LEADER_EPOCH

    # a follower that stopped fetching reads only what it has, below its own high watermark
    cluster.pause_replication(follower)
    cluster.produce("t", b"v3")
    assert cluster.partition_state("t", 0)["log_end_offsets"][leader] == 4
    behind = _fetch(cluster, follower, 11)
    assert (behind.error_code, behind.high_watermark, _values(behind)) == (ErrorCode.NONE, 3, [b"v0", b"v1", b"v2"])
    assert _fetch(cluster, follower, 11, offset=3).records in (b"", None)

    # the leader moved: the old leader, now a follower, still answers, and a stale epoch there is fenced
    cluster.pause_replication(follower, paused=False)
    cluster.wait_until(lambda: _fetch(cluster, follower, 11).high_watermark == 4, timeout=10)
    cluster.move_leader("t", 0, follower)
    old = _fetch(cluster, leader, 12, offset=2)
    assert old.error_code == ErrorCode.NONE and _values(old) == [b"v2", b"v3"]
    assert _fetch(cluster, leader, 12, epoch=state["leader_epoch"]).error_code == ErrorCode.FENCED_LEADER_EPOCH
