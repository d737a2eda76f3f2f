"""Time for N consumers to a complete assignment: the consumer group protocol of KIP-848 against the classic
one, on fakekafka and on Apache Kafka 4.4, in one run.

    python bench/group_protocols.py [--sizes 2,10,50] [--partitions 100] [--brokers fakekafka,kafka]
                                    [--timeout S] [--json out.json]

Both brokers run as subprocesses on loopback for the whole run (`_peers.py`; `kafka` is the reference launcher,
fakekafka/testing/apache_kafka.py, with its test settings: group.initial.rebalance.delay.ms 0, KIP-848 heartbeats every
0.5 s and no assignment interval, as fakekafka's defaults). Each broker gets one topic with --partitions
partitions. A cell is (broker, protocol, N): N confluent-kafka Consumers in this one process, each with its
own librdkafka threads, join a new group subscribed to the topic: `group.protocol=classic` with the eager
`range` assignor (the leader assigns; JoinGroup/SyncGroup), or `group.protocol=consumer` (the broker assigns
with its `uniform` assignor; ConsumerGroupHeartbeat). The clock runs from the last subscribe() until the
consumers' assignments (poll(0) on every consumer in turn, librdkafka's on_assign/on_revoke) cover every
partition exactly once with every consumer holding at least one. One run each (no repeats): the table shows
single samples, for orders of magnitude, not for small differences.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
import uuid

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)

from _peers import kafka_available, start_broker, stop_all  # noqa: E402
from groups import close_all, create_topic  # noqa: E402

try:
    from confluent_kafka import Consumer, TopicPartition, libversion
except ImportError:  # pragma: no cover
    sys.exit("bench/group_protocols.py needs confluent-kafka: pip install confluent-kafka")

PROTOCOLS = {
    "classic": {"group.protocol": "classic", "partition.assignment.strategy": "range"},
    "consumer": {"group.protocol": "consumer"},
}
"""group.protocol=consumer leaves the assignor to the broker (librdkafka refuses a client-side one with it)."""


def run_cell(bootstrap: str, topic: str, partitions: int, n: int, protocol: str, timeout: float) -> dict:
    group = f"bench-protocols-{protocol}-{n}-{uuid.uuid4().hex[:8]}"
    held: dict[int, set[tuple[str, int]]] = {i: set() for i in range(n)}

    def listeners(i: int) -> dict:
        def assign(_c: Consumer, tps: list[TopicPartition]) -> None:
            held[i] |= {(tp.topic, tp.partition) for tp in tps}

        def revoke(_c: Consumer, tps: list[TopicPartition]) -> None:
            held[i] -= {(tp.topic, tp.partition) for tp in tps}
        return {"on_assign": assign, "on_revoke": revoke}

    consumers = [Consumer({"bootstrap.servers": bootstrap, "group.id": group, "enable.auto.commit": False,
                           "log_level": 2, **PROTOCOLS[protocol]}) for _ in range(n)]
    for c in consumers:  # metadata before the clock starts, as bench/groups.py does
        c.list_topics(topic, timeout=timeout)
    result: dict = {"protocol": protocol, "n": n, "seconds": None}
    try:
        for i, c in enumerate(consumers):
            c.subscribe([topic], **listeners(i))
        t0 = time.perf_counter()
        deadline = t0 + timeout
        while time.perf_counter() < deadline:
            for c in consumers:
                c.poll(0)
            owned = [tp for parts in held.values() for tp in parts]
            if len(owned) == partitions == len(set(owned)) and all(held.values()):
                result["seconds"] = time.perf_counter() - t0
                break
            time.sleep(0.0005)
    finally:
        close_all(consumers, 30)
    return result


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", default="2,10,50")
    ap.add_argument("--partitions", type=int, default=100)
    ap.add_argument("--brokers", default="fakekafka,kafka")
    ap.add_argument("--timeout", type=float, default=120.0)
    ap.add_argument("--json")
    args = ap.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    brokers = [b for b in args.brokers.split(",") if b]
    if "kafka" in brokers and not kafka_available():
        print("Apache Kafka is not installed (eval \"$(bash .ci/install.sh)\"): fakekafka only", file=sys.stderr)
        brokers.remove("kafka")
    rows = []
    try:
        for kind in brokers:
            broker = start_broker(kind, timeout=120)
            bootstrap = f"127.0.0.1:{broker.port}"
            topic = f"bench-protocols-{uuid.uuid4().hex[:8]}"
            create_topic(bootstrap, topic, args.partitions, 60)
            for n in sizes:
                for protocol in PROTOCOLS:
                    cell = run_cell(bootstrap, topic, args.partitions, n, protocol, args.timeout)
                    cell["broker"] = kind
                    rows.append(cell)
                    took = "timeout" if cell["seconds"] is None else f"{cell['seconds']:.2f} s"
                    print(f"  {kind:9} {protocol:8} N={n:<3} {took}", file=sys.stderr)
            broker.stop()
    finally:
        stop_all()
    print(f"\nTime to a complete assignment, {args.partitions} partitions, one run each "
          f"(confluent-kafka {libversion()[0]}; classic: range, consumer: the broker's uniform)\n")
    header = ["N", *(f"{b} {p}" for b in brokers for p in PROTOCOLS)]
    print("| " + " | ".join(header) + " |")
    print("|" + "---|" * len(header))
    for n in sizes:
        cells = []
        for b in brokers:
            for p in PROTOCOLS:
                s = next(r["seconds"] for r in rows if r["broker"] == b and r["protocol"] == p and r["n"] == n)
                cells.append("timeout" if s is None else f"{s:.2f} s")
        print(f"| {n} | " + " | ".join(cells) + " |")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=1)


if __name__ == "__main__":
    main()
