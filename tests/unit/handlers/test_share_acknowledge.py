"""ShareAcknowledge and ShareFetch acknowledgements refused as Kafka 4.4.0 refuses them, codes and words: the
answers below are what Kafka 4.4.0 gave to the same raw requests (a share group with share.auto.offset.reset
earliest, one member holding offsets 0-2 of a three-record partition, another member, a made-up member id),
compared by hand with fakekafka's on 2026-11-24 (the API sweep compares a ShareAcknowledge field by field too,
but words only as present or not)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

import fakekafka
from fakekafka.wire import ErrorCode
from tests.rawclient import RawClient

HEARTBEAT, FETCH, ACK, INCREMENTAL = 76, 78, 79, 44
GROUP, M1, M2 = "g", "member-one-000000000001", "member-two-000000000002"
ACCEPT, RELEASE = 1, 2


@pytest.fixture
def raw() -> Iterator[tuple[RawClient, Any]]:
    with fakekafka.Cluster(auto_create_topics=False) as c:
        c.create_topic("t", 1)
        for i in range(3):
            c.produce("t", b"v%d" % i)
        client = RawClient(c.bootstrap_servers)
        topic_id = c.state.topics["t"].topic_id
        r = client.request(INCREMENTAL, 1, {"validate_only": False, "resources": [
            {"resource_type": 32, "resource_name": GROUP, "configs": [
                {"name": "share.auto.offset.reset", "config_operation": 0, "value": "earliest"}]}]})
        assert r.responses[0].error_code == 0
        r = client.request(HEARTBEAT, 1, {"group_id": GROUP, "member_id": M1, "member_epoch": 0, "rack_id": None,
                                          "subscribed_topic_names": ["t"]})
        assert r.error_code == 0
        yield client, topic_id
        client.close()


def _batch(first: int, last: int, kind: int = ACCEPT) -> list[dict[str, Any]]:
    return [{"first_offset": first, "last_offset": last, "acknowledge_types": [kind]}]


def _fetch(raw: tuple[RawClient, Any], member: str, epoch: int, acks: list[dict[str, Any]] | None = None) -> Any:
    client, topic_id = raw
    return client.request(FETCH, 1, {
        "group_id": GROUP, "member_id": member, "share_session_epoch": epoch, "max_wait_ms": 0, "min_bytes": 1,
        "max_bytes": 1 << 20, "max_records": 500, "batch_size": 500, "share_acquire_mode": 0, "is_renew_ack": False,
        "forgotten_topics_data": [], "topics": [{"topic_id": topic_id, "partitions": [
            {"partition_index": 0, "partition_max_bytes": 1 << 20, "acknowledgement_batches": acks or []}]}]})


def _ack(raw: tuple[RawClient, Any], member: str, epoch: int, batches: list[dict[str, Any]]
         ) -> tuple[int, list[tuple[int, str | None]]]:
    client, topic_id = raw
    r = client.request(ACK, 1, {"group_id": GROUP, "member_id": member, "share_session_epoch": epoch,
                                "is_renew_ack": False, "topics": [{"topic_id": topic_id, "partitions": [
                                    {"partition_index": 0, "acknowledgement_batches": batches}]}]})
    return r.error_code, [(p.error_code, p.error_message) for t in r.responses for p in t.partitions]


def test_a_share_acknowledge_cannot_open_a_session(raw: tuple[RawClient, Any]) -> None:
    """Epoch 0 opens a session only on ShareFetch: a ShareAcknowledge at 0 is INVALID_SHARE_SESSION_EPOCH, for a
    joined member, a made-up one and one with a session alike; an empty member id is INVALID_REQUEST first."""
    assert _ack(raw, M1, 0, _batch(0, 0)) == (ErrorCode.INVALID_SHARE_SESSION_EPOCH, [])
    assert _ack(raw, "not-a-uuid", 0, _batch(0, 0)) == (ErrorCode.INVALID_SHARE_SESSION_EPOCH, [])
    assert _fetch(raw, M1, 0).error_code == 0
    assert _ack(raw, M1, 0, _batch(0, 0)) == (ErrorCode.INVALID_SHARE_SESSION_EPOCH, [])
    assert _ack(raw, "", 0, _batch(0, 0)) == (ErrorCode.INVALID_REQUEST, [])
    assert _fetch(raw, M1, 0, _batch(0, 0)).error_code == ErrorCode.INVALID_REQUEST  # acks on a new session


def test_refusals_in_kafkas_codes_and_words(raw: tuple[RawClient, Any]) -> None:
    r = _fetch(raw, M1, 0)
    assert [(a.first_offset, a.last_offset) for a in r.responses[0].partitions[0].acquired_records] == [(0, 2)]
    assert _fetch(raw, M2, 0).error_code == 0
    irs, inv = ErrorCode.INVALID_RECORD_STATE, ErrorCode.INVALID_REQUEST
    assert _ack(raw, M2, 1, _batch(0, 0)) == (0, [(irs, "Member is not the owner of batch record")])
    assert _ack(raw, "not-a-uuid", 1, _batch(0, 0)) == (ErrorCode.SHARE_SESSION_NOT_FOUND, [])
    assert _ack(raw, M1, 1, _batch(5, 5)) == (0, [(
        inv, "Batch record not found. The first offset in request is past acquired records.")])
    assert _ack(raw, M1, 2, _batch(2, 6)) == (0, [(
        inv, "Batch record not found. The last offset in request is past acquired records.")])
    assert _ack(raw, M1, 3, [{"first_offset": 3, "last_offset": 2, "acknowledge_types": [1]}]) == (0, [(inv, None)])
    assert _ack(raw, M1, 4, _batch(0, 0, 9)) == (0, [(inv, None)])  # no such acknowledge type
    assert _ack(raw, M1, 5, _batch(0, 0)) == (0, [(0, None)])
    assert _ack(raw, M1, 6, _batch(0, 0)) == (0, [(0, None)])  # below the share-partition start now: nothing to do
    assert _ack(raw, M1, 7, _batch(0, 1, RELEASE)) == (0, [(0, None)])  # 0 skipped, 1 released
    # the in-flight batch 0-2 was acknowledged in part: Kafka words its refusals per offset now
    assert _ack(raw, M1, 8, _batch(1, 1)) == (0, [(irs, "The offset cannot be acknowledged. The offset is not "
                                                         "acquired.")])
    assert _ack(raw, M1, 9, _batch(2, 2) + _batch(1, 1)) == (0, [(inv, None)])  # batches out of order
    # a refused batch undoes the ones before it: offset 2 is still M1's
    assert _ack(raw, M1, 10, _batch(2, 2) + _batch(5, 5)) == (0, [(
        inv, "Batch record not found. The first offset in request is past acquired records.")])
    assert _ack(raw, M1, 11, _batch(2, 2)) == (0, [(0, None)])
    r = _fetch(raw, M1, 12, _batch(7, 7))  # riding a ShareFetch: the same words
    p = r.responses[0].partitions[0]
    assert (p.acknowledge_error_code, p.acknowledge_error_message) == (
        inv, "Batch record not found. The first offset in request is past acquired records.")


def test_nothing_in_flight_is_not_found_in_the_cache(raw: tuple[RawClient, Any]) -> None:
    """Every record acknowledged, the share-partition start at the end: an acknowledgement past it finds no
    batch ("not found in the cache", INVALID_RECORD_STATE); one below it is nothing to do."""
    _fetch(raw, M1, 0)
    assert _ack(raw, M1, 1, _batch(0, 2)) == (0, [(0, None)])
    assert _ack(raw, M1, 2, _batch(3, 3)) == (0, [(
        ErrorCode.INVALID_RECORD_STATE, "Batch record not found. The request batch offsets are not found in the "
                                        "cache.")])
    assert _ack(raw, M1, 3, _batch(1, 2)) == (0, [(0, None)])
