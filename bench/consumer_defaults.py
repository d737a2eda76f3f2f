"""A consumer as a user writes it: librdkafka's default settings, draining with consume(10000), 10 KiB records.

    python bench/consumer_defaults.py [--brokers fakekafka,tansu,kafka] [--records 40000] [--repeat 3]

throughput.py turns librdkafka's fetch-queue backoff off; this one keeps every default (only group.id and
enable.auto.commit=false are set) to show what a user sees and why. Each broker gets one topic with N 10 KiB
records (produced before timing); each run is a fresh Consumer assigned to offset 0 that calls
consume(10000, 0.5) until it has all N. Runs are interleaved across brokers (run 1 on each, then run 2...).

librdkafka's `debug=fetch` log is read for each run: how many Fetch responses it enqueued, how many records
each carried (Kafka caps a partition's share at max.partition.fetch.bytes, 1 MiB by default: 97 records of
10 KiB), and how often it backed off because its fetch queue was full ("Fetch backoff for 1000ms: Local:
Queue full", queued.max.messages.kbytes = 64 MiB by default, fetch.queue.backoff.ms = 1000).
"""

from __future__ import annotations

import argparse
import logging
import os
import re
import statistics
import sys
import time
import uuid
from dataclasses import dataclass, field

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.dirname(HERE))

from _peers import BrokerProcess, kafka_available, start_broker, stop_all  # noqa: E402

SIZE = 10 * 1024
ENQUEUE = re.compile(r"Enqueue (\d+) message\(s\)")


@dataclass
class Run:
    kind: str
    seconds: float
    records: int
    fetches: int = 0
    per_fetch: list[int] = field(default_factory=list)
    backoffs: int = 0

    @property
    def rate(self) -> float:
        return self.records / self.seconds


def fill(b: BrokerProcess, topic: str, n: int) -> None:
    from confluent_kafka import Producer
    from confluent_kafka.admin import AdminClient, NewTopic
    admin = AdminClient({"bootstrap.servers": b.bootstrap})  # held: a dropped handle cancels its request
    admin.create_topics([NewTopic(topic, 1, 1)])[topic].result(30)
    time.sleep(0.5)  # Kafka's leader takes the partition a moment after CreateTopics answers
    p = Producer({"bootstrap.servers": b.bootstrap, "linger.ms": 5, "acks": 1, "log_level": 3})
    value = b"x" * SIZE
    deadline = time.monotonic() + 120
    for _ in range(n):
        while True:
            try:
                p.produce(topic, value)
                break
            except BufferError:
                p.poll(0.01)
                if time.monotonic() > deadline:
                    raise TimeoutError("producing took over 120 s") from None
    if p.flush(60):
        raise TimeoutError("records still unacknowledged after 60 s")


def consume(b: BrokerProcess, topic: str, n: int, timeout: float = 120) -> Run:
    from confluent_kafka import Consumer, TopicPartition
    lines: list[str] = []

    class Keep(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            lines.append(record.getMessage())
    logger = logging.getLogger(f"consumer-defaults-{uuid.uuid4().hex[:6]}")
    logger.propagate = False
    logger.setLevel(logging.DEBUG)
    logger.addHandler(Keep())
    c = Consumer({"bootstrap.servers": b.bootstrap, "group.id": f"bench-{uuid.uuid4().hex[:6]}",
                  "enable.auto.commit": False, "debug": "fetch", "logger": logger})
    try:
        got = 0
        t0 = time.perf_counter()
        c.assign([TopicPartition(topic, 0, 0)])
        while got < n:
            if time.perf_counter() - t0 > timeout:
                raise TimeoutError(f"{b.kind}: {got} of {n} records after {timeout} s")
            got += sum(1 for m in c.consume(10000, 0.5) if m.error() is None)
        run = Run(b.kind, time.perf_counter() - t0, got)
    finally:
        c.close()
    for line in lines:
        m = ENQUEUE.search(line)
        if m:
            run.fetches += 1
            run.per_fetch.append(int(m.group(1)))
        elif "Fetch backoff for 1000ms: Local: Queue full" in line:
            run.backoffs += 1
    return run


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--brokers", default="fakekafka,tansu,kafka")
    ap.add_argument("--records", type=int, default=40_000)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    kinds = [k.strip() for k in args.brokers.split(",") if k.strip()]
    if "kafka" in kinds and not kafka_available():
        print('Apache Kafka\'s jars are not installed (run `eval "$(bash .ci/install.sh)"`): leaving kafka out',
              file=sys.stderr)
        kinds.remove("kafka")
    topic = f"bench-defaults-{uuid.uuid4().hex[:6]}"
    brokers: dict[str, BrokerProcess] = {}
    runs: list[Run] = []
    try:
        for kind in kinds:
            brokers[kind] = start_broker(kind)
            fill(brokers[kind], topic, args.records)
        for r in range(args.repeat):
            for kind in kinds:
                run = consume(brokers[kind], topic, args.records)
                runs.append(run)
                print(f"[{r + 1}/{args.repeat}] {kind:9s} {run.rate:>10,.0f} rec/s  {run.fetches} fetches, "
                      f"{statistics.median(run.per_fetch) if run.per_fetch else 0:.0f} records each (median), "
                      f"{run.backoffs} queue-full backoffs", flush=True)
    finally:
        for b in brokers.values():
            b.stop()
        stop_all()
    print(f"\nlibrdkafka defaults, consume(10000), {args.records} x 10 KiB records, {args.repeat} runs per broker")
    print(f"{'broker':10s} {'median rec/s':>13s} {'min-max rec/s':>21s} {'records/fetch':>14s} "
          f"{'backoffs/run':>13s}")
    for kind in kinds:
        rs = [r for r in runs if r.kind == kind]
        rates = [r.rate for r in rs]
        per = statistics.median([x for r in rs for x in r.per_fetch] or [0])
        print(f"{kind:10s} {statistics.median(rates):>13,.0f} {min(rates):>10,.0f}-{max(rates):<10,.0f} "
              f"{per:>14.0f} {statistics.mean(r.backoffs for r in rs):>13.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
