"""Transactions per second and read_committed consume throughput: fakekafka, Apache Kafka and tansu in one run.

A confluent-kafka transactional producer commits T transactions of R records (100 bytes each) to a 1-partition
topic, one after the other (begin, produce R, commit): transactions/s is what an exactly-once pipeline that
commits every R records can reach. Then a read_committed consumer reads them all back (records/s), and, for
the abort path, the same is done with every other transaction aborted (the consumer must drop those records).
Broker CPU per transaction comes from /proc. Medians of --repeat runs. Prints a Markdown table.

    python bench/transactions.py [--transactions 200] [--records 100] [--brokers fakekafka,kafka,tansu]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from _peers import kafka_available, start_broker, stop_all, tansu_binary  # noqa: E402
from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition  # noqa: E402
from confluent_kafka.admin import AdminClient, NewTopic  # noqa: E402

VALUE = b"x" * 100


def _topic(bootstrap: str, timeout: float) -> str:
    name = f"txn-bench-{uuid.uuid4().hex[:8]}"
    admin = AdminClient({"bootstrap.servers": bootstrap})  # kept alive until the result is in
    admin.create_topics([NewTopic(name, 1, 1)])[name].result(timeout)
    time.sleep(0.5)  # Kafka's partition leader takes a moment after the controller
    return name


def produce(bootstrap: str, topic: str, transactions: int, records: int, abort_every: int,
            timeout: float) -> float:
    """Seconds for `transactions` transactions (every `abort_every`-th aborted; 0: none)."""
    p = Producer({"bootstrap.servers": bootstrap, "transactional.id": f"bench-{topic}", "linger.ms": 5})
    p.init_transactions(timeout)
    t0 = time.perf_counter()
    for i in range(transactions):
        p.begin_transaction()
        for _ in range(records):
            p.produce(topic, VALUE, partition=0)
        if abort_every and i % abort_every == abort_every - 1:
            p.abort_transaction(timeout)
        else:
            p.commit_transaction(timeout)
    return time.perf_counter() - t0


def consume(bootstrap: str, topic: str, expected: int, timeout: float) -> float:
    """Seconds from the first committed record to the last (the consumer's start-up left out)."""
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": f"g-{topic}", "isolation.level": "read_committed",
                  "enable.auto.commit": False, "fetch.max.bytes": 50 << 20})
    c.assign([TopicPartition(topic, 0, 0)])
    got = 0
    first = None
    deadline = time.perf_counter() + timeout
    try:
        while got < expected and time.perf_counter() < deadline:
            for m in c.consume(10_000, 0.5):
                if not m.error():
                    first = first or time.perf_counter()
                    got += 1
    finally:
        c.close()
    if got != expected or first is None:
        raise RuntimeError(f"read {got} of {expected} committed records")
    return time.perf_counter() - first


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--transactions", type=int, default=200)
    ap.add_argument("--records", type=int, default=100, help="records per transaction (default 100)")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--brokers", default="fakekafka,kafka,tansu")
    ap.add_argument("--timeout", type=float, default=120.0)
    args = ap.parse_args(argv)
    kinds = [k for k in args.brokers.split(",") if k]
    if "kafka" in kinds and not kafka_available():
        print("kafka: jars missing (run .ci/install.sh); left out", file=sys.stderr)
        kinds.remove("kafka")
    if "tansu" in kinds and tansu_binary() is None:
        print("tansu: binary missing; left out", file=sys.stderr)
        kinds.remove("tansu")
    rows: dict[str, dict[str, object]] = {}
    try:
        for kind in kinds:
            broker = start_broker(kind, timeout=60.0)
            cells: dict[str, list[float]] = {"commit": [], "cpu": [], "consume": [], "mixed": [], "consume_mixed": []}
            mixed_errors: list[str] = []
            try:
                for _ in range(args.repeat):
                    topic = _topic(broker.bootstrap, args.timeout)
                    cpu0 = broker.cpu_seconds()
                    secs = produce(broker.bootstrap, topic, args.transactions, args.records, 0, args.timeout)
                    cells["cpu"].append((broker.cpu_seconds() - cpu0) / args.transactions * 1e6)
                    cells["commit"].append(args.transactions / secs)
                    n = args.transactions * args.records
                    cells["consume"].append(n / consume(broker.bootstrap, topic, n, args.timeout))
                    topic = _topic(broker.bootstrap, args.timeout)
                    try:
                        secs = produce(broker.bootstrap, topic, args.transactions, args.records, 2, args.timeout)
                        cells["mixed"].append(args.transactions / secs)
                        kept = (args.transactions - args.transactions // 2) * args.records
                        cells["consume_mixed"].append(kept / consume(broker.bootstrap, topic, kept, args.timeout))
                    except (KafkaException, RuntimeError) as e:  # reported, the commit-only cells still count
                        mixed_errors.append(str(e))
                rows[kind] = {k: statistics.median(v) if v else float("nan") for k, v in cells.items()}
                rows[kind]["mixed_errors"] = mixed_errors
            except (KafkaException, RuntimeError) as e:
                rows[kind] = {"error": str(e)}
            finally:
                broker.stop()
    finally:
        stop_all()
    print(f"\n{args.transactions} transactions of {args.records} x 100 B records, confluent-kafka, "
          f"median of {args.repeat}\n")
    print("| broker | commits/s | broker CPU per transaction | read_committed consume | half aborted: txn/s "
          "| half aborted: consume (aborted dropped) |")
    print("|---|---|---|---|---|---|")
    for kind, r in rows.items():
        if "error" in r:
            print(f"| {kind} | failed: {r['error']} | | | | |")
            continue
        failed = f" ({len(r['mixed_errors'])} of {args.repeat} runs failed)" if r["mixed_errors"] else ""
        print(f"| {kind} | {r['commit']:,.0f} | {r['cpu']:,.0f} µs | {r['consume']:,.0f} rec/s "
              f"| {r['mixed']:,.0f}{failed} | {r['consume_mixed']:,.0f} rec/s |")
    for kind, r in rows.items():
        for e in r.get("mixed_errors", []):  # type: ignore[union-attr]
            print(f"\n{kind}, half aborted: {e}")
    if "fakekafka" in rows and "error" not in rows["fakekafka"]:
        for other in ("kafka", "tansu"):
            if other in rows and "error" not in rows[other]:
                f, o = rows["fakekafka"], rows[other]
                print(f"\nfakekafka vs {other}: commits/s {f['commit'] / o['commit']:.2f}x, "  # type: ignore[operator]
                      f"read_committed consume {f['consume'] / o['consume']:.2f}x")  # type: ignore[operator]
    return 0


if __name__ == "__main__":
    sys.exit(main())
