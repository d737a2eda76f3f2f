"""What the fuzzers found where fakekafka answered otherwise than Apache Kafka 4.4.0. Raw frames, so these run
against real Kafka too (`pytest --kafka-real tests/unit/test_fuzz_findings.py`), where the expectations come from."""

from __future__ import annotations

import struct
import time
import uuid

import pytest

from fakekafka import wire
from fakekafka.wire import ApiKey, ErrorCode
from fakekafka.wire.primitives import uvarint_bytes
from fakekafka.wire.records import build_batch
from tests.rawclient import RawClient, eventually

ZERO = uuid.UUID(int=0)


def _create(raw: RawClient, name: str) -> tuple[int, str | None]:
    r = raw.request(
        ApiKey.CREATE_TOPICS,
        5,
        {
            "topics": [{"name": name, "num_partitions": 1, "replication_factor": 1, "assignments": [], "configs": []}],
            "timeout_ms": 5000,
            "validate_only": True,
        },
    )
    return r.topics[0].error_code, r.topics[0].error_message


def test_malformed_utf8_in_a_name_is_answered_not_dropped(kafka) -> None:
    """Java decodes malformed UTF-8 to U+FFFD: the topic name is invalid, the connection lives on."""
    raw = RawClient(kafka.bootstrap_servers)
    frame = wire.encode_request(
        19,
        5,
        7,
        {
            "topics": [
                {"name": "QQQQ", "num_partitions": 1, "replication_factor": 1, "assignments": [], "configs": []}
            ],
            "timeout_ms": 5000,
            "validate_only": True,
        },
        client_id="QQQQ",
    )
    raw.send_bytes(frame.replace(b"QQQQ", b"\xff\xfeab"))
    _, r = raw.receive(ApiKey.CREATE_TOPICS, 5)
    assert (r.topics[0].name, r.topics[0].error_code) == ("\ufffd\ufffdab", ErrorCode.INVALID_TOPIC_EXCEPTION)
    assert r.topics[0].error_message == (
        "Topic name is invalid: '\ufffd\ufffdab' contains one or more characters "
        "other than ASCII alphanumerics, '.', '_' and '-'"
    )
    raw.close()


@pytest.mark.parametrize(
    ("name", "message"),
    [
        (
            "a b",
            "Topic name is invalid: 'a b' contains one or more characters other than ASCII alphanumerics, '.', "
            "'_' and '-'",
        ),
        ("", "Topic name is invalid: the empty string is not allowed"),
        ("..", "Topic name is invalid: '..' is not allowed"),
        ("x" * 250, f"Topic name is invalid: the length of '{'x' * 250}' is longer than the max allowed length 249"),
    ],
)
def test_invalid_topic_names_in_kafkas_words(kafka, name: str, message: str) -> None:
    raw = RawClient(kafka.bootstrap_servers)
    assert _create(raw, name) == (ErrorCode.INVALID_TOPIC_EXCEPTION, message)
    raw.close()


@pytest.mark.parametrize(
    ("version", "name", "topic_id"), [(10, None, ZERO), (11, None, uuid.UUID(int=5)), (10, "named", uuid.UUID(int=5))]
)
def test_metadata_v10_11_refuse_ids_and_null_names(kafka, version: int, name: str | None, topic_id: uuid.UUID) -> None:
    """Found by the network fuzzer: a null name in v10 made an answer that did not encode (a traceback)."""
    raw = RawClient(kafka.bootstrap_servers)
    r = raw.request(
        ApiKey.METADATA,
        version,
        {
            "topics": [{"name": name, "topic_id": topic_id}],
            "allow_auto_topic_creation": False,
            "include_topic_authorized_operations": False,
        },
    )
    assert [(t.name, t.error_code) for t in r.topics] == [(name or "", ErrorCode.INVALID_REQUEST)]
    raw.close()


@pytest.mark.parametrize(
    ("topic", "corrupt", "closed"),
    [("t0", False, False), ("t0", True, True), ("missing", False, True)],
    ids=["stored", "corrupt-batch", "unknown-topic"],
)
def test_acks0_produce_error_closes_the_connection(kafka, topic: str, corrupt: bool, closed: bool) -> None:
    """acks=0 has no answer to carry an error, so Kafka closes the connection; a clean one stays open."""
    kafka.create_topic("t0", 1)
    kafka.wait_for_topic("t0", 1)
    batch = bytearray(build_batch([{"value": b"v", "timestamp": int(time.time() * 1000)}]))
    if corrupt:
        batch[-1] ^= 1
    raw = RawClient(kafka.bootstrap_servers)
    raw.send(
        ApiKey.PRODUCE,
        9,
        {
            "transactional_id": None,
            "acks": 0,
            "timeout_ms": 5000,
            "topic_data": [{"name": topic, "partition_data": [{"index": 0, "records": bytes(batch)}]}],
        },
    )
    if closed:
        assert raw.is_closed()
    else:
        assert (
            raw.request(
                ApiKey.API_VERSIONS, 3, {"client_software_name": "t", "client_software_version": "1"}
            ).error_code
            == 0
        )
    raw.close()


def _consumer_heartbeat(group_id: str, member_id: str, epoch: int = 0) -> dict:
    return {
        "group_id": group_id,
        "member_id": member_id,
        "member_epoch": epoch,
        "instance_id": None,
        "rack_id": None,
        "rebalance_timeout_ms": 30000,
        "subscribed_topic_names": ["t"],
        "subscribed_topic_regex": None,
        "server_assignor": None,
        "topic_partitions": [],
    }


def _listed(kafka, version: int) -> list[int]:
    raw = RawClient(kafka.bootstrap_servers)
    r = raw.request(ApiKey.LIST_GROUPS, version, {"states_filter": [], "types_filter": []})
    raw.close()
    return sorted(len(g.group_id) for g in r.groups)


def _oversized(api_key: int, version: int, body: dict, field: str, length: int) -> bytes:
    """A frame whose compact string `field` is `length` bytes: the wire layer builds no such string (as Kafka's
    does not), so it is built around a placeholder whose bytes and length prefix are then swapped."""
    placeholder = f"PLACEHOLDER-{length}"
    frame = wire.encode_request(api_key, version, 1, {**body, field: placeholder}, client_id="raw")
    small = uvarint_bytes(len(placeholder) + 1) + placeholder.encode()
    assert frame.count(small) == 1
    out = frame[4:].replace(small, uvarint_bytes(length + 1) + b"x" * length)
    return struct.pack(">i", len(out)) + out


@pytest.mark.parametrize(
    ("api_key", "version", "body", "field", "length"),
    [
        (68, 1, _consumer_heartbeat("g", "m"), "group_id", 40_000),
        (68, 1, _consumer_heartbeat("g", "m"), "member_id", 32_768),
        (
            22,
            4,
            {"transactional_id": "t", "transaction_timeout_ms": 60000, "producer_id": -1, "producer_epoch": -1},
            "transactional_id",
            1 << 20,
        ),
    ],
    ids=["group-id", "member-id", "transactional-id"],
)
def test_a_string_over_32767_bytes_closes_the_connection_and_changes_nothing(
    kafka, api_key: int, version: int, body: dict, field: str, length: int
) -> None:
    """Kafka's readers refuse any string over 32767 bytes, compact ones too: the request is malformed, the
    connection closed, nothing kept. A 40,000-byte group id used to stay (after UNKNOWN_SERVER_ERROR) and made
    every later ListGroups v0-v2 close its connection, its id not fitting their strings."""
    before = _listed(kafka, 0)
    raw = RawClient(kafka.bootstrap_servers)
    raw.send_bytes(_oversized(api_key, version, body, field, length))
    assert raw.is_closed()
    raw.close()
    for version in (0, 2, 5):
        assert _listed(kafka, version) == before


def test_a_32767_byte_group_id_is_taken_and_listed_by_every_listgroups(kafka) -> None:
    raw = RawClient(kafka.bootstrap_servers)
    group, member = "g" * 32767, "m" * 22
    # a fresh Kafka answers NOT_COORDINATOR until the group's offsets partition is loaded
    r = eventually(
        "the heartbeat is answered",
        lambda: (
            r
            if (r := raw.request(ApiKey.CONSUMER_GROUP_HEARTBEAT, 1, _consumer_heartbeat(group, member))).error_code
            != ErrorCode.NOT_COORDINATOR
            else None
        ),
    )
    assert r.error_code == ErrorCode.NONE
    assert all(32767 in _listed(kafka, version) for version in (0, 2, 5))
    assert (
        raw.request(ApiKey.CONSUMER_GROUP_HEARTBEAT, 1, _consumer_heartbeat(group, member, epoch=-1)).error_code
        == ErrorCode.NONE
    )
    raw.close()
