"""Memory per open connection: N idle clients, each connected as a producer leaves its connection (ApiVersions
and Metadata answered, then nothing), on fakekafka and Apache Kafka 4.4.0 (its own scripts' JVM settings: 1 GiB
heap, G1) in one run; the broker's resident memory (RSS, /proc) before and after, divided by N.

    python bench/connections.py                      # 5,000 connections
    python bench/connections.py --connections 1000 --brokers fakekafka --baseline /work/main

A JVM's RSS grows by its heap's use as well as by what each connection holds, and G1 gives little back: its
figure is the marginal cost seen from outside, as fakekafka's is. Kafka is given a full GC (jcmd GC.run) before
each reading when jcmd is on PATH, so garbage is not counted.
"""

from __future__ import annotations

import argparse
import os
import shutil
import socket
import struct
import subprocess
import sys
import time
import uuid

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)

from _peers import kafka_available, start_broker, stop_all  # noqa: E402

from fakekafka.wire import ApiKey, encode_request  # noqa: E402


def rss_kb(pid: int) -> int:
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def settle(b) -> int:
    jcmd = shutil.which("jcmd")
    if b.kind == "kafka" and jcmd:
        subprocess.run([jcmd, str(b.pid), "GC.run"], capture_output=True, timeout=60)
    time.sleep(1.0)
    return rss_kb(b.pid)


def call(s: socket.socket, frame: bytes) -> None:
    s.sendall(frame)
    need = struct.unpack(">i", _read(s, 4))[0]
    _read(s, need)


def _read(s: socket.socket, n: int) -> bytes:
    out = bytearray()
    while len(out) < n:
        chunk = s.recv(n - len(out))
        if not chunk:
            raise ConnectionError("closed")
        out += chunk
    return bytes(out)


def producer_frames() -> tuple[bytes, bytes]:
    """ApiVersions and Metadata as a producer sends them on connecting: what an idle producer's connection has had
    answered."""
    versions = encode_request(ApiKey.API_VERSIONS, 3, 1, {"client_software_name": "bench",
                                                          "client_software_version": "1"})
    metadata = encode_request(ApiKey.METADATA, 12, 2, {"topics": [{"name": "t", "topic_id": uuid.UUID(int=0)}],
                                                       "allow_auto_topic_creation": False})
    return versions, metadata


def open_idle(host: str, port: int, frames: tuple[bytes, bytes]) -> socket.socket:
    """A connection answered `frames` (producer_frames) and then left idle."""
    s = socket.create_connection((host, port))
    for frame in frames:
        call(s, frame)
    return s


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--connections", type=int, default=5000)
    ap.add_argument("--brokers", default="fakekafka,kafka")
    ap.add_argument("--baseline", help="a fakekafka checkout to run beside this one")
    args = ap.parse_args()
    kinds = [b for b in args.brokers.split(",") if b]
    if "kafka" in kinds and not kafka_available():
        print("Apache Kafka is not installed: fakekafka only", file=sys.stderr)
        kinds.remove("kafka")
    frames = producer_frames()
    rows = []
    try:
        brokers = {k: start_broker(k, timeout=120, stock_jvm=True) for k in kinds}
        if args.baseline:
            brokers[f"fakekafka@{args.baseline}"] = start_broker("fakekafka", timeout=120, cwd=args.baseline)
        for label, b in brokers.items():
            host, port = b.bootstrap.rsplit(":", 1)
            warm = []
            for _ in range(100):  # the first connections' one-off costs (buffers, caches) out of the figure
                warm.append(open_idle(host, int(port), frames))
            before = settle(b)
            socks = []
            t0 = time.perf_counter()
            for _ in range(args.connections):
                socks.append(open_idle(host, int(port), frames))
            took = time.perf_counter() - t0
            after = settle(b)
            rows.append((label, before, after, took))
            print(f"  {label}: RSS {before / 1024:.1f} -> {after / 1024:.1f} MiB", file=sys.stderr)
            for s in socks + warm:
                s.close()
    finally:
        stop_all()
    n = args.connections
    print(f"\n{n:,} idle connections (ApiVersions and Metadata answered on each, then nothing)\n")
    print("| broker | RSS before | RSS after | per connection | opened in |")
    print("|---|---|---|---|---|")
    for label, before, after, took in rows:
        per = (after - before) * 1024 / n / 1000
        print(f"| {label} | {before / 1024:.1f} MiB | {after / 1024:.1f} MiB | {per:.1f} KB | {took:.1f} s |")


if __name__ == "__main__":
    main()
