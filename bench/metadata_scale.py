"""Metadata for many partitions: the time a Metadata request for all topics (and one naming a tenth of them) takes
to be answered, one request at a time on one connection, on fakekafka and Apache Kafka 4.4.0 (its own scripts' JVM
settings: 1 GiB heap, G1) in one run, plus the broker's idle CPU with those partitions.

    python bench/metadata_scale.py                                   # 10,000 partitions: 100 topics x 100
    python bench/metadata_scale.py --topics 1000 --partitions 10 --brokers fakekafka
    python bench/metadata_scale.py --baseline /work/main             # also a fakekafka run from another checkout

Each broker gets the same topics (created with CreateTopics in batches, then waited for until Metadata lists every
partition with a leader); the requests are Metadata v12 frames encoded once (the correlation id patched in), sent
in blocks of `--block` that alternate between the brokers, so a change in the machine's load hits them alike.
"""

from __future__ import annotations

import argparse
import os
import socket
import statistics
import struct
import sys
import time
import uuid

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)

from _peers import kafka_available, start_broker, stop_all  # noqa: E402
from confluent_kafka.admin import AdminClient, NewTopic  # noqa: E402

from fakekafka.wire import ApiKey, decode_response, encode_request  # noqa: E402


class Conn:
    def __init__(self, bootstrap: str) -> None:
        host, port = bootstrap.rsplit(":", 1)
        self.sock = socket.create_connection((host, int(port)))
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.corr = 0

    def call(self, frame: bytearray) -> bytes:
        self.corr += 1
        struct.pack_into(">i", frame, 8, self.corr)
        self.sock.sendall(frame)
        head = self._read(4)
        return self._read(struct.unpack(">i", head)[0])

    def _read(self, n: int) -> bytes:
        buf = bytearray(n)
        view = memoryview(buf)
        got = 0
        while got < n:
            k = self.sock.recv_into(view[got:])
            if not k:
                raise ConnectionError("closed")
            got += k
        return bytes(buf)

    def close(self) -> None:
        self.sock.close()


def metadata_frame(names: list[str] | None) -> bytearray:
    topics = None if names is None else [{"name": n, "topic_id": uuid.UUID(int=0)} for n in names]
    body = {"topics": topics, "allow_auto_topic_creation": False, "include_topic_authorized_operations": False}
    return bytearray(encode_request(ApiKey.METADATA, 12, 0, body))


def make_topics(bootstrap: str, names: list[str], partitions: int) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap, "log_level": 3})
    step = max(1, 5000 // partitions)  # both brokers refuse a batch making over 10,000 partitions
    for i in range(0, len(names), step):
        futures = admin.create_topics([NewTopic(n, num_partitions=partitions, replication_factor=1)
                                       for n in names[i:i + step]], operation_timeout=300, request_timeout=300)
        for f in futures.values():
            f.result(600)
    conn = Conn(bootstrap)
    frame = metadata_frame(None)
    deadline = time.monotonic() + 600
    while time.monotonic() < deadline:
        answer = decode_response(ApiKey.METADATA, 12, conn.call(frame))[1]
        ready = sum(1 for t in answer.topics if t.name in set(names)
                    for p in t.partitions if p.leader_id >= 0)
        if ready == len(names) * partitions:
            conn.close()
            return
        time.sleep(0.5)
    raise RuntimeError("the topics' partitions have no leaders after 600 s")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--topics", type=int, default=100)
    ap.add_argument("--partitions", type=int, default=100, help="partitions per topic")
    ap.add_argument("--requests", type=int, default=200, help="requests of each kind per broker")
    ap.add_argument("--block", type=int, default=10)
    ap.add_argument("--brokers", default="fakekafka,kafka")
    ap.add_argument("--baseline", help="a fakekafka checkout to run beside this one (`fakekafka@DIR`)")
    ap.add_argument("--idle", type=float, default=5.0, help="seconds of idle CPU measured per broker")
    args = ap.parse_args()
    kinds = [b for b in args.brokers.split(",") if b]
    if "kafka" in kinds and not kafka_available():
        print("Apache Kafka is not installed: fakekafka only", file=sys.stderr)
        kinds.remove("kafka")
    names = [f"md-{i:05d}" for i in range(args.topics)]
    some = names[::10] or names[:1]
    frames = {"all": metadata_frame(None), "tenth": metadata_frame(some)}
    brokers = {}
    try:
        for kind in kinds:
            brokers[kind] = start_broker(kind, timeout=120, stock_jvm=True)
        if args.baseline:
            brokers[f"fakekafka@{args.baseline}"] = start_broker("fakekafka", timeout=120, cwd=args.baseline)
        for label, b in brokers.items():
            t0 = time.perf_counter()
            make_topics(b.bootstrap, names, args.partitions)
            print(f"  {label}: {args.topics * args.partitions} partitions made in {time.perf_counter() - t0:.1f} s",
                  file=sys.stderr)
        conns = {label: Conn(b.bootstrap) for label, b in brokers.items()}
        sizes: dict[str, int] = {}
        times: dict[tuple[str, str], list[float]] = {(label, k): [] for label in brokers for k in frames}
        cpu: dict[str, float] = dict.fromkeys(brokers, 0.0)
        for c in conns.values():  # warm-up, not timed
            for k, f in frames.items():
                sizes[k] = len(c.call(f))
        done = 0
        while done < args.requests:
            for label, c in conns.items():
                for k, f in frames.items():
                    c0 = brokers[label].cpu_seconds()
                    for _ in range(args.block):
                        t0 = time.perf_counter()
                        c.call(f)
                        times[(label, k)].append((time.perf_counter() - t0) * 1000)
                    cpu[label] += brokers[label].cpu_seconds() - c0
            done += args.block
        for c in conns.values():
            c.close()
        idle = {}
        for label, b in brokers.items():
            c0 = b.cpu_seconds()
            time.sleep(args.idle)
            idle[label] = (b.cpu_seconds() - c0) / args.idle * 100
    finally:
        stop_all()
    n = args.topics * args.partitions
    print(f"\nMetadata v12, {args.topics} topics x {args.partitions} partitions ({n:,}), one request at a time; "
          f"all topics: {sizes['all']:,} B, a tenth named: {sizes['tenth']:,} B\n")
    print("| broker | all topics p50 / p99 ms | a tenth named p50 / p99 ms | broker CPU per request ms | idle CPU |")
    print("|---|---|---|---|---|")
    for label in brokers:
        cells = []
        for k in frames:
            xs = sorted(times[(label, k)])
            cells.append(f"{statistics.median(xs):.2f} / {xs[int(len(xs) * 0.99) - 1]:.2f}")
        per = cpu[label] / (len(times[(label, 'all')]) * len(frames)) * 1000
        print(f"| {label} | {cells[0]} | {cells[1]} | {per:.2f} | {idle[label]:.1f} % |")


if __name__ == "__main__":
    main()
