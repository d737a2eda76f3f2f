"""A checkout service that publishes each placed order to Kafka, in two versions: `place_orders` as it was
shipped (retries on, idempotence off: a retried send after a lost answer writes the order twice) and
`place_orders_fixed` (the idempotent producer: the broker drops the retried copy)."""

from __future__ import annotations

import json
from collections.abc import Callable

from kafka import KafkaProducer


def _producer(bootstrap: str, *, idempotent: bool) -> KafkaProducer:
    return KafkaProducer(bootstrap_servers=bootstrap, acks="all", retries=10, retry_backoff_ms=5,
                         request_timeout_ms=3000, max_in_flight_requests_per_connection=1, linger_ms=0,
                         enable_idempotence=idempotent)


def _place(bootstrap: str, order_ids: list[int], *, idempotent: bool, topic: str) -> None:
    producer = _producer(bootstrap, idempotent=idempotent)
    try:
        for order_id in order_ids:
            value = json.dumps({"order_id": order_id, "amount_cents": 1000 + order_id}).encode()
            producer.send(topic, key=str(order_id).encode(), value=value).get(timeout=20)
    finally:
        producer.close()


def place_orders(bootstrap: str, order_ids: list[int], topic: str = "orders") -> None:
    """The planted bug: idempotence is off, so a send retried after a dropped answer is written again."""
    _place(bootstrap, order_ids, idempotent=False, topic=topic)


def place_orders_fixed(bootstrap: str, order_ids: list[int], topic: str = "orders") -> None:
    _place(bootstrap, order_ids, idempotent=True, topic=topic)


def _orders_once(view: object, topic: str) -> str | None:
    ids = [json.loads(v)["order_id"] for v in view.values(topic)]  # type: ignore[attr-defined]
    twice = sorted({i for i in ids if ids.count(i) > 1})
    return f"orders published more than once: {twice}" if twice else None


def each_order_once(view: object) -> str | None:
    """The app's invariant, over the cluster's records: every order is published exactly once."""
    return _orders_once(view, "orders")


def each_order_once_in(topic: str) -> Callable[[object], str | None]:
    """`each_order_once` on another topic (a run per topic on a shared cluster)."""
    def each_order_once(view: object) -> str | None:
        return _orders_once(view, topic)
    return each_order_once
