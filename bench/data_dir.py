"""The cost of a data dir on produce and consume: fakekafka with `--data-dir` against fakekafka in memory, and
Apache Kafka 4.4.0 with its log dir on disk against the same Kafka with its log dir in tmpfs (/dev/shm: the
nearest Kafka has to memory only), in one run.

    python bench/data_dir.py [--records N] [--size BYTES] [--repeat R] [--no-kafka] [--json out.json]

Both fakekafka processes run for the whole run and their cells are interleaved (repeat 1: memory then data
dir, repeat 2: ...); the two Kafka JVMs run one after the other (one JVM at a time on this machine). Each cell
is a fresh single-partition topic: produce N records with confluent-kafka (acks=all, linger.ms=5, produce_batch),
then consume them from offset 0 (bench/throughput.py's run_produce and run_consume). The table gives medians of
records/s and the ratio of the data dir's figure to memory's (tmpfs's for Kafka): 1.00 is no cost.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
import uuid

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import throughput  # noqa: E402
from _peers import BrokerProcess, _live, kafka_available, start_broker, stop_all  # noqa: E402


def _kafka(log_root: str, timeout: float) -> BrokerProcess:
    """A one-broker Apache Kafka whose directory (log.dirs inside it) is made under `log_root`."""
    from fakekafka.testing.apache_kafka import KafkaCluster
    saved = tempfile.tempdir
    tempfile.tempdir = log_root
    try:
        cluster = KafkaCluster(1, timeout=max(timeout, 120)).start()
    finally:
        tempfile.tempdir = saved
    b = BrokerProcess("kafka", int(cluster.bootstrap_servers.rsplit(":", 1)[1]), cluster.procs[0], time.perf_counter(),
                      on_stop=cluster.stop)
    _live.append(b)
    return b


def _cell(b: BrokerProcess, n: int, size: int, timeout: float) -> tuple[float, float]:
    """(produce records/s, consume records/s) on a fresh topic."""
    bootstrap = f"127.0.0.1:{b.port}"
    topic = f"bench-{uuid.uuid4().hex[:8]}"
    throughput._create_topic(bootstrap, topic, timeout)
    t0, t1, _ = throughput.run_produce(bootstrap, topic, n, size, timeout)
    c0, c1, _ = throughput.run_consume(bootstrap, topic, n, size, timeout)
    throughput._delete_topic(bootstrap, topic, timeout)
    return n / (t1 - t0), n / (c1 - c0)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--records", type=int, default=200_000, help="records per cell (default 200000)")
    ap.add_argument("--size", type=int, default=100, help="record value bytes (default 100)")
    ap.add_argument("--repeat", type=int, default=3, help="cells per setting; medians reported (default 3)")
    ap.add_argument("--no-kafka", action="store_true", help="fakekafka only")
    ap.add_argument("--timeout", type=float, default=120.0)
    ap.add_argument("--json", metavar="PATH", help="also write the samples as JSON")
    args = ap.parse_args(argv)
    throughput.PRODUCER_CONFIG["acks"] = "all"  # what a data dir is for: nothing acknowledged is lost
    disk = tempfile.mkdtemp(prefix="fakekafka-bench-data-dir-")
    samples: dict[str, list[tuple[float, float]]] = {}
    try:
        memory = start_broker("fakekafka")
        stored = start_broker("fakekafka", args=["--data-dir", os.path.join(disk, "fakekafka")])
        for _ in range(args.repeat):
            for name, b in (("fakekafka memory", memory), ("fakekafka --data-dir", stored)):
                samples.setdefault(name, []).append(_cell(b, args.records, args.size, args.timeout))
        memory.stop()
        stored.stop()
        if not args.no_kafka and kafka_available():
            for name, root in (("Kafka 4.4.0 tmpfs", "/dev/shm"), ("Kafka 4.4.0 disk", disk)):
                b = _kafka(root, args.timeout)
                try:
                    for _ in range(args.repeat):
                        samples.setdefault(name, []).append(_cell(b, args.records, args.size, args.timeout))
                finally:
                    b.stop()
    finally:
        stop_all()
        shutil.rmtree(disk, ignore_errors=True)
    med = {k: (statistics.median(p for p, _ in v), statistics.median(c for _, c in v)) for k, v in samples.items()}
    print(f"\n{args.records} records of {args.size} B, acks=all, median of {args.repeat}; ratio = on disk / in memory")
    print(f"| {'broker':<22} | {'produce rec/s':>13} | {'ratio':>5} | {'consume rec/s':>13} | {'ratio':>5} |")
    print(f"|{'-' * 24}|{'-' * 14}:|{'-' * 6}:|{'-' * 14}:|{'-' * 6}:|")
    pairs = {"fakekafka --data-dir": "fakekafka memory", "Kafka 4.4.0 disk": "Kafka 4.4.0 tmpfs"}
    for name, (p, c) in med.items():
        base = med.get(pairs.get(name, ""))
        rp = f"{p / base[0]:.2f}" if base else ""
        rc = f"{c / base[1]:.2f}" if base else ""
        print(f"| {name:<22} | {p:>13,.0f} | {rp:>5} | {c:>13,.0f} | {rc:>5} |")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"samples": samples, "medians": med, "records": args.records, "size": args.size}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
