"""A small stream-processing service: reads JSON orders from "orders" as consumer group "order-enricher",
adds the order's total and the customer's tier, and writes the result to "orders-enriched", keyed by
customer, with a "source" header naming the order it came from (topic/partition/offset). Input offsets are
committed only after the enriched records are acknowledged: at least once, and after a clean stop nothing
is redone.

Nothing here knows about fakekafka: the test hands it a bootstrap address, as production would.

    service = OrderEnricher("kafka:9092").start()   # consumes on a background thread
    ...
    service.stop()   # finishes the batch in hand, commits it, leaves the group, closes the clients
"""

import json
import threading

from confluent_kafka import Consumer, KafkaException, Producer

TIERS = {"alice": "gold", "bob": "silver"}
"""Customer tiers; everyone else is "bronze"."""


def enrich(order: dict, tiers: dict[str, str] = TIERS) -> dict:
    total = sum(item["price"] * item["qty"] for item in order["items"])
    return {**order, "total": round(total, 2), "tier": tiers.get(order["customer"], "bronze")}


class OrderEnricher:
    def __init__(self, bootstrap_servers: str, *, group_id: str = "order-enricher", source: str = "orders",
                 sink: str = "orders-enriched", tiers: dict[str, str] = TIERS) -> None:
        self.bootstrap_servers, self.group_id = bootstrap_servers, group_id
        self.source, self.sink, self.tiers = source, sink, tiers
        self.error: Exception | None = None
        self._stopping = threading.Event()
        self._thread: threading.Thread | None = None
        self._failed_deliveries: list[str] = []

    def run(self) -> None:
        """The consume-enrich-produce-commit loop; returns when `stop()` is called."""
        consumer = Consumer({"bootstrap.servers": self.bootstrap_servers, "group.id": self.group_id,
                             "auto.offset.reset": "earliest", "enable.auto.commit": False})
        producer = Producer({"bootstrap.servers": self.bootstrap_servers, "acks": "all"})
        try:
            consumer.subscribe([self.source])
            while not self._stopping.is_set():
                messages = consumer.consume(num_messages=100, timeout=0.1)
                if not messages:
                    continue
                for msg in messages:
                    if msg.error():
                        raise KafkaException(msg.error())
                    self.handle(msg, producer)
                if producer.flush(10) or self._failed_deliveries:  # every enriched record acknowledged...
                    raise RuntimeError(f"enriched records not delivered: {self._failed_deliveries}")
                consumer.commit(asynchronous=False)                # ...before the input offsets are committed
        finally:
            consumer.close()  # leaves the group; commits nothing more
            producer.flush(10)

    def handle(self, msg, producer: Producer) -> None:
        order = json.loads(msg.value())
        source = f"{msg.topic()}/{msg.partition()}/{msg.offset()}"
        producer.produce(self.sink, json.dumps(enrich(order, self.tiers)).encode(), key=order["customer"].encode(),
                         headers=[("source", source.encode())], on_delivery=self._delivered)

    def _delivered(self, err, msg) -> None:
        if err is not None:
            self._failed_deliveries.append(f"{msg.topic()}: {err}")

    def start(self) -> "OrderEnricher":
        """Runs the loop on a background thread; an error there is raised again by `stop()`."""
        def run_in_thread() -> None:
            try:
                self.run()
            except Exception as e:
                self.error = e

        self._thread = threading.Thread(target=run_in_thread, name="order-enricher", daemon=True)
        self._thread.start()
        return self

    def stop(self, timeout: float = 10) -> None:
        self._stopping.set()
        if self._thread is not None:
            self._thread.join(timeout)
            if self._thread.is_alive():
                raise RuntimeError(f"order enricher did not stop within {timeout}s")
        if self.error is not None:
            raise RuntimeError("order enricher failed") from self.error

    def __enter__(self) -> "OrderEnricher":
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
