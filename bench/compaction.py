"""Compaction throughput: records per second cleaned by fakekafka's log cleaner and by Apache Kafka's, one run.

Each broker gets the same compacted topic (1 partition, `segment.bytes` 1 MiB, `min.cleanable.dirty.ratio` 0.01)
with `log.cleaner.backoff.ms=100` on the broker, and N keyed records of 100 bytes over K keys produced by
confluent-kafka while `min.compaction.lag.ms` holds the cleaner off. Then an IncrementalAlterConfigs sets the
lag to 0 and the clock starts: DescribeLogDirs is polled every 10 ms until the partition's size has dropped and
stayed put for a second; the time to its last change is the cleaning time (the cleaner's wake-up, at most
100 ms, included on both). Records/s is N over that time: both cleaners clean every segment but the active one
(at most 1 MiB, under 10,000 of the records), so N overstates the records cleaned alike on both. Broker CPU
over the same span from /proc. Medians of --repeat runs (a new topic each). Prints a Markdown table.

    python bench/compaction.py [--records 300000] [--keys 1000] [--repeat 3] [--brokers fakekafka,kafka]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
import uuid
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from _peers import BrokerProcess, kafka_available, start_broker, stop_all  # noqa: E402
from confluent_kafka import Producer  # noqa: E402
from confluent_kafka.admin import AdminClient, NewTopic  # noqa: E402

from fakekafka.testing.client import WireConnection  # noqa: E402

VALUE = b"x" * 100
BROKER_CONFIGS = {"log.cleaner.backoff.ms": "100"}
TOPIC_CONFIGS = {"cleanup.policy": "compact", "segment.bytes": str(1 << 20), "min.cleanable.dirty.ratio": "0.01",
                 "min.compaction.lag.ms": str(24 * 3600 * 1000)}


def partition_size(conn: WireConnection, topic: str) -> int:
    """The partition's size on its broker, summed over its log dirs (DescribeLogDirs)."""
    r = conn.request(35, 4, {"topics": [{"topic": topic, "partitions": [0]}]})
    return sum(p.partition_size for d in r.results for t in d.topics for p in t.partitions)


def fill(bootstrap: str, records: int, keys: int, timeout: float) -> str:
    """A new compacted topic holding `records` keyed records, the cleaner held off by min.compaction.lag.ms."""
    topic = f"compaction-bench-{uuid.uuid4().hex[:8]}"
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(topic, 1, 1, config=TOPIC_CONFIGS)])[topic].result(timeout)
    time.sleep(0.5)  # Kafka's partition leader takes a moment after the controller
    p = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5, "batch.num.messages": 1000,
                  "queue.buffering.max.messages": 1_000_000})
    for i in range(records):
        while True:
            try:
                p.produce(topic, VALUE, key=b"key-%d" % (i % keys), partition=0)
                break
            except BufferError:
                p.poll(0.01)
    if p.flush(timeout):
        raise RuntimeError("records left unsent")
    return topic


def clean(broker: BrokerProcess, topic: str, timeout: float) -> tuple[float, float, int, int]:
    """(seconds, broker CPU seconds, size before, size after) of the cleaning the lag's removal lets run."""
    conn = WireConnection("127.0.0.1", broker.port, "compaction-bench", 30)
    try:
        before = partition_size(conn, topic)
        cpu0 = broker.cpu_seconds()
        t0 = time.perf_counter()
        r = conn.request(44, 1, {"validate_only": False, "resources": [{"resource_type": 2, "resource_name": topic,
                                 "configs": [{"name": "min.compaction.lag.ms", "config_operation": 0,
                                              "value": "0"}]}]})
        if r.responses[0].error_code:
            raise RuntimeError(f"IncrementalAlterConfigs: {r.responses[0]}")
        size, changed_at = before, t0
        while time.perf_counter() - t0 < timeout:
            now_size = partition_size(conn, topic)
            now = time.perf_counter()
            if now_size != size:
                size, changed_at = now_size, now
            elif size < before / 2 and now - changed_at > 1.0:
                return changed_at - t0, broker.cpu_seconds() - cpu0, before, size
            time.sleep(0.01)
        raise RuntimeError(f"not cleaned within {timeout} s (size {before} -> {size})")
    finally:
        conn.close()


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--records", type=int, default=300_000)
    ap.add_argument("--keys", type=int, default=1000)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--brokers", default="fakekafka,kafka")
    ap.add_argument("--timeout", type=float, default=120.0)
    args = ap.parse_args(argv)
    kinds = args.brokers.split(",")
    if "kafka" in kinds and not kafka_available():
        print("kafka: jars missing (run .ci/install.sh); left out", file=sys.stderr)
        kinds.remove("kafka")
    results: dict[str, dict[str, Any]] = {}
    try:
        for kind in kinds:
            broker = start_broker(kind, timeout=60.0, configs=BROKER_CONFIGS)
            runs = []
            try:
                for _ in range(args.repeat):
                    topic = fill(broker.bootstrap, args.records, args.keys, args.timeout)
                    runs.append(clean(broker, topic, args.timeout))
            except (RuntimeError, OSError) as e:
                results[kind] = {"error": str(e)}
                continue
            finally:
                broker.stop()
            seconds = statistics.median(r[0] for r in runs)
            results[kind] = {"seconds": seconds, "rate": args.records / seconds,
                             "cpu": statistics.median(r[1] for r in runs), "before": runs[0][2], "after": runs[0][3],
                             "range": (min(args.records / r[0] for r in runs), max(args.records / r[0] for r in runs))}
    finally:
        stop_all()
    print(f"\n{args.records:,} records of 100 B over {args.keys:,} keys, 1 partition, segment.bytes 1 MiB, "
          f"median of {args.repeat} runs\n")
    print("| broker | cleaning time | records/s cleaned (range) | broker CPU | partition size before -> after |")
    print("|---|---|---|---|---|")
    for kind, r in results.items():
        if "error" in r:
            print(f"| {kind} | failed: {r['error']} | | | |")
            continue
        print(f"| {kind} | {r['seconds']:.2f} s | {r['rate']:,.0f} ({r['range'][0]:,.0f}-{r['range'][1]:,.0f}) | "
              f"{r['cpu']:.2f} s | {r['before'] / 2**20:.1f} MiB -> {r['after'] / 2**20:.2f} MiB |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
