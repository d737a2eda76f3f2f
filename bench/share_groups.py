"""Share groups (KIP-932): records/s consumed and acknowledged by confluent-kafka ShareConsumers, fakekafka
against Apache Kafka 4.4, side by side in one run.

    python bench/share_groups.py [--records 20000] [--consumers 1,2] [--brokers fakekafka,kafka]
                                 [--mode implicit|explicit] [--timeout S]

Each broker runs as a subprocess on loopback (`_peers.py`). Per (broker, consumers) cell: a new one-partition
topic gets --records 100-byte records (produced before the clock starts), a new share group starts at the
earliest offset (`share.auto.offset.reset` through IncrementalAlterConfigs), then N ShareConsumers in this
process poll in turn until every record has been delivered once; implicit mode acknowledges each poll's records
with the next poll (explicit: ACCEPT each record, commit_sync per poll). The clock runs from the first poll
until the last record arrived; the broker's CPU seconds over the same span come from /proc. Deliveries past
the first of a record (redeliveries) are counted: there should be none. Every loop has a deadline.
"""

from __future__ import annotations

import argparse
import sys
import time
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from _peers import BrokerProcess, kafka_available, start_broker, stop_all  # noqa: E402


def _prepare(bootstrap: str, records: int) -> tuple[str, str]:
    from confluent_kafka import Producer
    from confluent_kafka.admin import (
        AdminClient,
        AlterConfigOpType,
        ConfigEntry,
        ConfigResource,
        NewTopic,
        ResourceType,
    )
    topic, group = f"bench-share-{uuid.uuid4().hex[:6]}", f"bench-share-g-{uuid.uuid4().hex[:6]}"
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(topic, 1, 1)])[topic].result(60)
    resource = ConfigResource(ResourceType.GROUP, group, incremental_configs=[
        ConfigEntry("share.auto.offset.reset", "earliest", incremental_operation=AlterConfigOpType.SET)])
    admin.incremental_alter_configs([resource])[resource].result(60)
    time.sleep(1)  # Kafka applies a group config through its metadata log a moment after answering
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5, "batch.num.messages": 1000})
    value = b"x" * 100
    for i in range(records):
        while True:
            try:
                producer.produce(topic, value, key=str(i).encode())
                break
            except BufferError:
                producer.poll(0.05)
    assert producer.flush(120) == 0
    return topic, group


def _cell(broker: BrokerProcess, records: int, consumers: int, mode: str, timeout: float) -> dict[str, float]:
    from confluent_kafka import AcknowledgeType, ShareConsumer
    topic, group = _prepare(broker.bootstrap, records)
    group_consumers = [ShareConsumer({"bootstrap.servers": broker.bootstrap, "group.id": group,
                                      "share.acknowledgement.mode": mode}) for _ in range(consumers)]
    for c in group_consumers:
        c.subscribe([topic])
    seen: set[bytes] = set()
    deliveries = 0
    cpu0 = broker.cpu_seconds()
    t0 = time.perf_counter()
    deadline = t0 + timeout
    try:
        while len(seen) < records and time.perf_counter() < deadline:
            for c in group_consumers:
                messages = c.poll(0.1)
                for m in messages:
                    if m.error() is None:
                        seen.add(m.key())
                        deliveries += 1
                        if mode == "explicit":
                            c.acknowledge(m, AcknowledgeType.ACCEPT)
                if mode == "explicit" and messages:
                    c.commit_sync()
        elapsed = time.perf_counter() - t0
        cpu = broker.cpu_seconds() - cpu0
    finally:
        for c in group_consumers:
            c.close()
    done = len(seen) == records
    return {"records_s": len(seen) / elapsed if done else float("nan"), "seconds": elapsed,
            "broker_cpu_s": cpu, "redeliveries": deliveries - len(seen), "complete": float(done)}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--records", type=int, default=20_000)
    ap.add_argument("--consumers", default="1,2")
    ap.add_argument("--brokers", default="fakekafka,kafka")
    ap.add_argument("--mode", choices=["implicit", "explicit"], default="implicit")
    ap.add_argument("--timeout", type=float, default=120.0)
    args = ap.parse_args(argv)
    kinds = [k for k in args.brokers.split(",") if k]
    if "kafka" in kinds and not kafka_available():
        print("Apache Kafka is not installed (run .ci/install.sh): leaving it out", file=sys.stderr)
        kinds.remove("kafka")
    sizes = [int(n) for n in args.consumers.split(",")]
    brokers = {k: start_broker(k, timeout=120) for k in kinds}
    results: dict[tuple[str, int], dict[str, float]] = {}
    try:
        for n in sizes:  # interleaved, so the machine's drifts hit every broker alike
            for kind, broker in brokers.items():
                results[(kind, n)] = _cell(broker, args.records, n, args.mode, args.timeout)
    finally:
        stop_all()
    print(f"share consumers ({args.mode} acknowledgement), {args.records} records of 100 B, one partition")
    print(f"{'broker':<10} {'consumers':>9} {'records/s':>10} {'seconds':>8} {'broker CPU s':>12} {'redelivered':>11}")
    for (kind, n), r in results.items():
        print(f"{kind:<10} {n:>9} {r['records_s']:>10.0f} {r['seconds']:>8.2f} {r['broker_cpu_s']:>12.2f} "
              f"{r['redeliveries']:>11.0f}")
    for n in sizes:
        if ("fakekafka", n) in results and ("kafka", n) in results:
            ratio = results[("fakekafka", n)]["records_s"] / results[("kafka", n)]["records_s"]
            print(f"fakekafka / kafka records/s with {n} consumer(s): {ratio:.2f}x")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
