"""A faust-streaming app as its docs write one: an agent keeping running order totals per customer in Tables
(in memory, each backed by a changelog topic), processing_guarantee="exactly_once".

    python faust_totals.py BOOTSTRAP APP_ID SOURCE SINK worker -l info

Input: key customer, value {"order": id, "amount": n}, partitioned by the key with Kafka's murmur2 (faust's
co-partitioning rule: a table's partition is the input's); output: key customer, value {"order": id,
"count": c, "total": t}.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping

import faust
from faust.transport.drivers.aiokafka import AIOKafkaConsumerThread
from faust.types import TP


async def _highwaters(self: AIOKafkaConsumerThread, partitions: list[TP]) -> Mapping[TP, int]:
    """Asks the broker for the changelogs' ends (ListOffsets, read_committed: the last stable offsets).

    faust 0.15.3 under exactly_once takes them from the last Fetch answer its consumer holds for each partition
    (`last_stable_offset`), None for a changelog partition not fetched yet when the restore begins; it then
    restores nothing for that partition, and the restarted worker's counts start again from 1. Whether the first
    Fetch answer comes before that moment is a race on any broker (seen on Kafka 4.4 in CI; on fakekafka with Fetch
    answers delayed 300 ms).
    """
    return await self._ensure_consumer().end_offsets(partitions)


AIOKafkaConsumerThread._highwaters = _highwaters

bootstrap, app_id, source, sink = sys.argv[1:5]
del sys.argv[1:5]  # what is left is faust's command line: `worker ...`

app = faust.App(
    app_id,
    broker=f"kafka://{bootstrap}",
    store="memory://",  # a restarted worker rebuilds its tables from their changelogs
    processing_guarantee="exactly_once",
    topic_partitions=3,
    table_standby_replicas=0,
    web_enabled=False,
    consumer_auto_offset_reset="earliest",
    broker_commit_interval=0.5,
    broker_session_timeout=6,  # a killed worker leaves the group after 6 s (faust: 60 s)
    broker_heartbeat_interval=1,
)
orders = app.topic(source, key_type=str, value_serializer="json")
totals_topic = app.topic(sink, key_type=str, value_serializer="json")
counts = app.Table("counts", default=int)
sums = app.Table("sums", default=int)


@app.agent(orders)
async def add(stream: faust.StreamT) -> None:
    """Adds each order to its customer's running totals and sends them on."""
    async for customer, order in stream.items():
        counts[customer] += 1
        sums[customer] += order["amount"]
        await totals_topic.send(key=customer, value={"order": order["order"], "count": counts[customer],
                                                     "total": sums[customer]})
        # faust queues a table's changelog writes in its producer buffer and, under exactly_once, commits without
        # draining it (at_least_once drains it first): a write still queued at a commit lands in the next
        # transaction, and a crash before that one commits loses it while its order's offset is committed. Handing
        # them to the producer before this order is acked keeps the tables exactly once.
        await app.producer.buffer.flush()


if __name__ == "__main__":
    app.main()
