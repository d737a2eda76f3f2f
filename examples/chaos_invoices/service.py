"""An invoicing service: a consume-transform-produce loop reading orders and writing one invoice per order in a
Kafka transaction, restarting (new consumer, new producer with the same transactional.id) when a Kafka call
fails. Two versions: `run_invoicer` as it was shipped commits the consumer's offsets with `consumer.commit()`
after the transaction (outside it: a failure between the two leaves the invoices committed and the offsets not,
and the restarted loop invoices those orders again) and `run_invoicer_fixed` (the offsets go into the
transaction with `send_offsets_to_transaction`: both commit or neither)."""

from __future__ import annotations

import time

from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition

from fakekafka.chaos import Profile, exactly_once


def _invoice_all(bootstrap: str, *, in_transaction: bool, source: str, sink: str,
                 group: str, deadline_s: float) -> int:
    """Runs the loop until the group's committed offsets reach the end of the orders (a restart re-reads from
    them) or the deadline passed; returns how many restarts it took."""
    restarts = 0
    deadline = time.monotonic() + deadline_s
    while time.monotonic() < deadline:
        consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "auto.offset.reset": "earliest",
                             "enable.auto.commit": False, "isolation.level": "read_committed",
                             "session.timeout.ms": 6000, "retry.backoff.ms": 10})
        producer = Producer({"bootstrap.servers": bootstrap, "transactional.id": f"{group}-invoicer",
                             "transaction.timeout.ms": 10000, "retry.backoff.ms": 10})
        try:
            producer.init_transactions(10)
            consumer.subscribe([source])
            while time.monotonic() < deadline:
                batch = consumer.consume(10, 0.2)
                batch = [m for m in batch if not m.error()]
                if not batch:
                    if _caught_up(consumer):
                        return restarts
                    continue
                producer.begin_transaction()
                for m in batch:
                    producer.produce(sink, key=m.key(), value=b"invoice for " + (m.value() or b""))
                offsets = [TopicPartition(m.topic(), m.partition(), m.offset() + 1) for m in batch]
                if in_transaction:
                    producer.send_offsets_to_transaction(offsets, consumer.consumer_group_metadata(), 10)
                    producer.commit_transaction(10)
                else:
                    producer.commit_transaction(10)
                    consumer.commit(offsets=offsets, asynchronous=False)  # the planted bug: outside the transaction
        except KafkaException:
            restarts += 1  # the process dies and restarts from the group's committed offsets
        finally:
            consumer.close()
            producer.flush(1)
    return restarts


def _caught_up(consumer: Consumer) -> bool:
    """Whether the group's committed offsets reached the end of every assigned partition (the work is done)."""
    assignment = consumer.assignment()
    if not assignment:
        return False
    for tp in consumer.committed(assignment, timeout=5):
        _, high = consumer.get_watermark_offsets(tp, timeout=5)
        if tp.offset < 0 or tp.offset < high:
            return False
    return True


def run_invoicer(bootstrap: str, source: str = "orders", sink: str = "invoices",
                 group: str = "invoicer", deadline_s: float = 30) -> int:
    """The planted bug: offsets committed with `consumer.commit()` after the transaction."""
    return _invoice_all(bootstrap, in_transaction=False, source=source, sink=sink, group=group,
                        deadline_s=deadline_s)


def run_invoicer_fixed(bootstrap: str, source: str = "orders", sink: str = "invoices",
                       group: str = "invoicer", deadline_s: float = 30) -> int:
    return _invoice_all(bootstrap, in_transaction=True, source=source, sink=sink, group=group,
                        deadline_s=deadline_s)


COMMIT_FAULTS = Profile("commits", error_rate=0.3, non_retriable=True, latency_rate=0, drop_rate=0.2,
                        apis=("OffsetCommit", "TxnOffsetCommit", "EndTxn"))
"""The chaos this service is tested under: errors (retriable or not) and dropped connections on its commits."""

each_order_invoiced_once = exactly_once("orders", "invoices")
"""The app's invariant: every order has exactly one committed invoice."""
