"""The example Spark job (examples/spark_pipeline) against fakekafka and against tansu, in the same run.

    python bench/spark_job.py [--records 10000] [--repeat 5] [--brokers fakekafka,tansu] [--json out.json]

What is timed: `spark_pipeline.job.start(..., available_now=True)` until `awaitTermination()` returns, i.e.
the whole scheduled run of the job: reading --records JSON orders from a 3-partition topic through
format("kafka") (Spark's own connector where .ci/install.sh put its jars, else fakekafka's stand-in: the
route is printed first), parsing,
the stream-static join, the per-customer aggregation, and writing the totals (one record per customer,
500 customers) to a second topic, acknowledged. Each cell gets fresh topics and a fresh checkpoint; the
orders are produced (confluent-kafka, untimed) before the clock starts, followed by one single-record batch
per partition (an order of customer "end-of-load"): tansu answers ListOffsets(latest) with the last
batch's base offset + 1 instead of the log's end, which would otherwise hide the rest of the last batch
from the job (the table's "records in -> out" column shows both brokers processed the same data).

Both brokers run as subprocesses on loopback for the whole run (`_peers.py`); one local[2] SparkSession
serves every cell. One unrecorded warm-up run per broker comes first (Spark's first query starts its
Python workers), then the cells alternate fakekafka, tansu, ... so drifts in the machine's load hit both.

Spark dominates the job's time, so the table also shows the broker's share: the broker process's CPU time
during the job (/proc/PID/task/*/schedstat, all threads) over the job's wall time; and from Spark's own
progress report, the time of the batch's `latestOffset` (the source asking the broker for offsets) and
`addBatch` (reading, processing and writing the batch).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import statistics
import sys
import tempfile
import time
import uuid
from dataclasses import asdict, dataclass

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
for path in (ROOT, os.path.join(ROOT, "examples")):
    if path not in sys.path:
        sys.path.insert(0, path)

from _peers import BrokerProcess, start_broker, stop_all  # noqa: E402

try:
    from confluent_kafka import Producer
    from confluent_kafka.admin import AdminClient, NewTopic
except ImportError:  # pragma: no cover
    sys.exit("bench/spark_job.py needs confluent-kafka: pip install confluent-kafka")

CUSTOMERS = 500
PARTITIONS = 3


@dataclass
class Cell:
    broker: str
    repeat: int
    records_in: int
    records_out: int
    wall_s: float
    broker_cpu_s: float
    latest_offset_ms: float
    add_batch_ms: float
    trigger_ms: float


def _create_topics(bootstrap: str, names: list[str]) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    futures = admin.create_topics([NewTopic(n, PARTITIONS, 1) for n in names], operation_timeout=20)
    for f in futures.values():
        f.result(timeout=30)
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:  # metadata may lag the CreateTopics answer
        md = admin.list_topics(timeout=10)
        if all(n in md.topics and len(md.topics[n].partitions) == PARTITIONS for n in names):
            return
        time.sleep(0.05)
    raise RuntimeError(f"topics {names} not visible in metadata after 20s")


def _orders(n: int, seed: int) -> list[bytes]:
    rnd = random.Random(seed)
    skus = [("pen", 1.5), ("ink", 7.25), ("pad", 3.0), ("cap", 0.75)]
    out = []
    for i in range(n):
        items = [{"sku": s, "price": p, "qty": rnd.randint(1, 5)} for s, p in rnd.sample(skus, rnd.randint(1, 3))]
        out.append(json.dumps({"id": f"o-{i}", "customer": f"c{rnd.randrange(CUSTOMERS)}", "items": items}).encode())
    return out


def _produce(bootstrap: str, topic: str, values: list[bytes]) -> None:
    p = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5, "acks": 1})
    for i, v in enumerate(values):
        while True:
            try:
                p.produce(topic, v, key=f"o-{i}".encode())
                break
            except BufferError:
                p.poll(0.05)
    if p.flush(60):
        raise RuntimeError(f"could not produce {len(values)} orders to {topic}")
    # tansu answers ListOffsets(latest) with the last batch's base offset + 1, not the end of the log, so a
    # reader that asks where a partition ends (Spark's connector does) would miss the rest of the last batch.
    # A one-record batch at the end of each partition makes both brokers' answers the true end.
    for partition in range(PARTITIONS):
        p.produce(topic, json.dumps({"id": f"end-{partition}", "customer": "end-of-load", "items": []}).encode(),
                  partition=partition)
        if p.flush(10):
            raise RuntimeError(f"could not produce the end marker to {topic}-{partition}")


def _count(bootstrap: str, topic: str) -> int:
    """Records in `topic`, by reading them (tansu's high watermarks stop at the last batch's first record)."""
    from confluent_kafka import Consumer, TopicPartition
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": f"count-{uuid.uuid4()}", "enable.auto.commit": False})
    try:
        c.assign([TopicPartition(topic, p, 0) for p in range(PARTITIONS)])
        seen = set()
        idle_since = time.monotonic()
        while time.monotonic() - idle_since < 1.0:
            msgs = [m for m in c.consume(1000, 0.2) if m.error() is None]
            if msgs:
                idle_since = time.monotonic()
            seen.update((m.partition(), m.offset()) for m in msgs)
        return len(seen)
    finally:
        c.close()


def run_cell(spark, broker: BrokerProcess, repeat: int, orders: list[bytes], workdir: str) -> Cell:
    from spark_pipeline.job import start
    tag = uuid.uuid4().hex[:8]
    source, sink = f"orders-{tag}", f"customer-totals-{tag}"
    _create_topics(broker.bootstrap, [source, sink])
    _produce(broker.bootstrap, source, orders)
    checkpoint = os.path.join(workdir, f"{broker.kind}-{tag}")
    cpu0 = broker.cpu_seconds()
    t0 = time.perf_counter()
    query = start(spark, broker.bootstrap, checkpoint, source=source, sink=sink, available_now=True)
    if not query.awaitTermination(600):
        query.stop()
        raise RuntimeError(f"the job on {broker.kind} did not finish within 600s")
    wall = time.perf_counter() - t0
    cpu = broker.cpu_seconds() - cpu0
    progress = [p for p in query.recentProgress if p.get("numInputRows")]
    durations = [p["durationMs"] for p in progress]
    shutil.rmtree(checkpoint, ignore_errors=True)
    return Cell(broker.kind, repeat, sum(p["numInputRows"] for p in progress), _count(broker.bootstrap, sink), wall,
                cpu, sum(d.get("latestOffset", 0) for d in durations), sum(d.get("addBatch", 0) for d in durations),
                sum(d.get("triggerExecution", 0) for d in durations))


def _median(xs: list[float]) -> float:
    return statistics.median(xs) if xs else float("nan")


def table(cells: list[Cell], brokers: list[str]) -> str:
    lines = ["| broker | runs | job wall, median [min-max] | broker CPU during the job | broker share | "
             "latestOffset | addBatch | trigger | records in -> out |",
             "|---|---|---|---|---|---|---|---|---|"]
    medians: dict[str, float] = {}
    for b in brokers:
        cs = [c for c in cells if c.broker == b]
        if not cs:
            continue
        walls = [c.wall_s for c in cs]
        medians[b] = _median(walls)
        share = _median([c.broker_cpu_s / c.wall_s for c in cs])
        lines.append(f"| {b} | {len(cs)} | {medians[b]:.2f} s [{min(walls):.2f}-{max(walls):.2f}] | "
                     f"{_median([c.broker_cpu_s for c in cs]):.3f} s | {share:.1%} | "
                     f"{_median([c.latest_offset_ms for c in cs]):.0f} ms | "
                     f"{_median([c.add_batch_ms for c in cs]):.0f} ms | {_median([c.trigger_ms for c in cs]):.0f} ms | "
                     f"{cs[0].records_in} -> {cs[0].records_out} |")
    if "fakekafka" in medians and "tansu" in medians:
        lines.append("")
        lines.append(f"job wall time tansu/fakekafka: {medians['tansu'] / medians['fakekafka']:.2f}x")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=10_000)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--brokers", default="fakekafka,tansu")
    parser.add_argument("--json", metavar="PATH")
    args = parser.parse_args()
    brokers = [b.strip() for b in args.brokers.split(",") if b.strip()]

    from fakekafka.spark import local_spark_session, use_fakekafka_kafka_source
    workdir = tempfile.mkdtemp(prefix="fakekafka-spark-bench-")
    running: dict[str, BrokerProcess] = {}
    spark = None
    try:
        for b in brokers:
            running[b] = start_broker(b)
        spark = local_spark_session("fakekafka-bench")
        route = use_fakekafka_kafka_source(spark)
        print(f"Spark {spark.version}, format('kafka') route: {route}; {args.records} orders, {CUSTOMERS} customers, "
              f"{PARTITIONS} partitions", flush=True)
        orders = _orders(args.records, seed=1)
        for b in brokers:  # warm-up: Spark's first query on a session starts its Python workers
            c = run_cell(spark, running[b], -1, orders, workdir)
            print(f"  warm-up {b}: {c.wall_s:.2f} s", flush=True)
        cells: list[Cell] = []
        for r in range(args.repeat):
            for b in brokers:
                c = run_cell(spark, running[b], r, orders, workdir)
                cells.append(c)
                print(f"  {b} #{r + 1}: {c.wall_s:.2f} s, broker CPU {c.broker_cpu_s:.3f} s, "
                      f"{c.records_in} -> {c.records_out}", flush=True)
        print()
        print(table(cells, brokers))
        if args.json:
            with open(args.json, "w") as f:
                json.dump([asdict(c) for c in cells], f, indent=1)
    finally:
        if spark is not None:
            spark.stop()
        stop_all()
        shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    main()
