"""A shipping service: a consumer reading orders and writing one shipment per order, crashing (and restarting from
the group's committed offsets) when a shipment cannot be written in time. Two versions: `run_shipper` as it was
shipped commits each batch's offsets before processing it (a crash between the commit and the last shipment loses
the rest of the batch: the restarted consumer starts past it) and `run_shipper_fixed` (process, then commit: a
crash repeats some shipments, never loses one)."""

from __future__ import annotations

import time

from kafka import KafkaConsumer, KafkaProducer
from kafka.errors import KafkaError
from kafka.structs import OffsetAndMetadata

from fakekafka.chaos import Profile

SHIPMENT_TIMEOUT_S = 0.5
"""How long the service waits for a shipment's write before it gives up and crashes (the producer's metadata is
fetched before: a loaded machine's first connection must not crash every restart)."""


def _ship_all(bootstrap: str, *, commit_first: bool, source: str, sink: str, group: str, deadline_s: float) -> int:
    """Runs until the group's committed offsets reach the end of the orders or the deadline passed; returns how
    many crashes (restarts) it took."""
    crashes = 0
    deadline = time.monotonic() + deadline_s
    while time.monotonic() < deadline:
        consumer = KafkaConsumer(
            source,
            bootstrap_servers=bootstrap,
            group_id=group,
            enable_auto_commit=False,
            auto_offset_reset="earliest",
            max_poll_records=5,
        )
        producer = KafkaProducer(bootstrap_servers=bootstrap, linger_ms=0)
        try:
            consumer.topics()  # the source's metadata before the first join: kafka-python 3.0.12 can lose the second
            # join that a first one without partitions is followed by (compat/clients/kafka_python.py says how)
            producer.partitions_for(sink)  # the sink's metadata, so the timeout is the write's alone
            while time.monotonic() < deadline:
                batches = consumer.poll(timeout_ms=200)
                if not batches:
                    if _caught_up(consumer):
                        return crashes
                    continue
                offsets = {tp: OffsetAndMetadata(records[-1].offset + 1, "", -1) for tp, records in batches.items()}
                if commit_first:
                    consumer.commit(offsets)  # the planted bug: committed before the shipments are written
                for records in batches.values():
                    for r in records:
                        producer.send(sink, key=r.key, value=b"shipment for " + r.value).get(SHIPMENT_TIMEOUT_S)
                if not commit_first:
                    consumer.commit(offsets)
        except KafkaError:
            crashes += 1  # the process dies; a new one starts from the group's committed offsets
        finally:
            producer.close(timeout=5)
            consumer.close(autocommit=False)
    return crashes


def _caught_up(consumer: KafkaConsumer) -> bool:
    """Whether the group's committed offsets reached the end of every assigned partition."""
    assignment = consumer.assignment()
    if not assignment:
        return False
    ends = consumer.end_offsets(list(assignment))
    return all((consumer.committed(tp) or 0) >= ends[tp] for tp in assignment)


def run_shipper(
    bootstrap: str, source: str = "orders", sink: str = "shipments", group: str = "shipper", deadline_s: float = 30
) -> int:
    """The planted bug: each batch's offsets committed before its shipments are written."""
    return _ship_all(bootstrap, commit_first=True, source=source, sink=sink, group=group, deadline_s=deadline_s)


def run_shipper_fixed(
    bootstrap: str, source: str = "orders", sink: str = "shipments", group: str = "shipper", deadline_s: float = 30
) -> int:
    return _ship_all(bootstrap, commit_first=False, source=source, sink=sink, group=group, deadline_s=deadline_s)


SLOW_WRITES = Profile(
    "slow-writes",
    error_rate=0,
    latency_rate=0.2,
    latency_ms=(1000, 1200),
    drop_rate=0,
    apis=("Produce",),
    max_faults=2,
    skip_first=1,
)
"""The chaos this service is tested under: a few of its writes answered later than it waits (a slow disk flush,
a GC pause on the broker)."""


def every_order_shipped(view: object) -> str | None:
    """The app's invariant: every order has at least one shipment (a repeated shipment is allowed)."""
    shipped = {r.key for r in view.records("shipments")}  # type: ignore[attr-defined]
    lost = [r.key for r in view.records("orders") if r.key not in shipped]  # type: ignore[attr-defined]
    return f"{len(lost)} order(s) never shipped (first: {lost[:5]})" if lost else None
