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
