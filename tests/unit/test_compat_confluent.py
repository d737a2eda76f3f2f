"""confluent-kafka's compat adapter names librdkafka's refusals the same whichever way they come."""

from __future__ import annotations

from typing import Any

import pytest
from confluent_kafka import KafkaError, KafkaException

from compat.clients import confluent
from compat.clients.base import ClientError, Rec, Timing


class _RefusingProducer:
    """librdkafka's producer when its metadata already lacks the partition: produce() raises at once."""

    def __init__(self, config: dict[str, Any]) -> None:
        self.config = config

    def produce(self, *args: Any, **kwargs: Any) -> None:
        raise KafkaException(KafkaError(KafkaError._UNKNOWN_PARTITION))


def test_a_produce_refused_at_once_is_the_same_error_as_in_a_delivery_report(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(confluent, "Producer", _RefusingProducer)
    client = confluent.ConfluentClient("127.0.0.1:9", Timing())
    with pytest.raises(ClientError) as refused:
        client.produce("t", [Rec(None, b"v", [], 5)])
    assert refused.value.outcome()["error"] == "UNKNOWN_TOPIC_OR_PARTITION"
    assert refused.value.outcome() == confluent.kafka_error(KafkaError(KafkaError._UNKNOWN_PARTITION)).outcome()


def test_a_long_cells_librdkafka_log_keeps_its_start_and_its_end() -> None:
    """A KIP-848 member that never finishes a revocation logs a minute of heartbeats: the report keeps the
    cell's first lines (the assignment it was sent and what librdkafka did with it) as well as its last."""
    client = confluent.ConfluentClient("127.0.0.1:9", Timing())
    client.logger.debug("before the cell")
    mark = client.log_mark()
    for i in range(1000):
        client.logger.debug("line %03d", i)
    got = client.log_since(mark).splitlines()
    assert [line.split(" ", 1)[1] for line in got[:2]] == ["line 000", "line 001"]
    assert got[300] == "... 300 lines left out ..."
    assert [line.split(" ", 1)[1] for line in got[301:]] == [f"line {i:03d}" for i in range(600, 1000)]
    short = client.log_mark()
    client.logger.debug("one more")
    assert [line.split(" ", 1)[1] for line in client.log_since(short).splitlines()] == ["one more"]
    assert client.log_since(client.log_mark()) == ""
