"""Produce answers for batches the log refuses record by record, as Kafka 4.4 gives them (found by
`python -m compat diff`): the record errors, the partition's log start offset, no base offset."""

from __future__ import annotations

import time

import fakekafka
from fakekafka.wire import ApiKey, ErrorCode
from fakekafka.wire.records import build_batch
from tests.rawclient import RawClient


def _produce(raw: RawClient, topic: str, records: list[dict]) -> object:
    body = {
        "transactional_id": None,
        "acks": 1,
        "timeout_ms": 5000,
        "topic_data": [{"name": topic, "partition_data": [{"index": 0, "records": build_batch(records)}]}],
    }
    return raw.request(ApiKey.PRODUCE, 9, body).responses[0].partition_responses[0]


def test_timestamp_out_of_range_has_a_record_error_per_record_and_the_log_start() -> None:
    with fakekafka.Cluster() as kafka:
        kafka.create_topic("t", 1)
        raw = RawClient(kafka.bootstrap_servers)
        now = int(time.time() * 1000)
        assert _produce(raw, "t", [{"value": b"ok", "timestamp": now}]).error_code == ErrorCode.NONE
        future = now + 2 * 3_600_000  # past message.timestamp.after.max.ms (one hour in Kafka 4)
        p = _produce(
            raw,
            "t",
            [
                {"value": b"a", "timestamp": now},
                {"value": b"b", "timestamp": future},
                {"value": b"c", "timestamp": future},
            ],
        )
        assert p.error_code == ErrorCode.INVALID_TIMESTAMP and p.base_offset == -1 and p.log_start_offset == 0
        assert [e.batch_index for e in p.record_errors] == [1, 2]
        assert p.record_errors[0].batch_index_error_message.startswith(f"Timestamp {future} of message with offset 1 ")
        assert p.error_message == "One or more records have been rejected due to invalid timestamp"
        assert kafka.end_offsets("t") == {0: 1}
