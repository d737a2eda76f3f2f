"""What `fakekafka proxy` costs: produce and consume throughput and request latency through the proxy against
direct connections, in front of Apache Kafka 4.4.0 and fakekafka, in the same run.

    python bench/proxy.py [--brokers kafka,fakekafka] [--records N] [--large-records N] [--repeat R]
                          [--latency-requests N] [--compare DIR] [--no-relay] [--json out.json] [--profile DIR]

Each broker runs as a subprocess (bench/_peers.py), with a `fakekafka proxy` subprocess in front of it (as
users run it: `fakekafka proxy --upstream HOST:PORT`). Every (repeat, record size, broker) cell creates a
fresh single-partition topic and measures the direct path and the proxied path one after the other (the
order alternates between repeats, so a drift in the machine's load hits both alike). `--compare DIR` adds a
third path, the proxy of another checkout (a worktree of main), in the same cells, each path first in turn:
an A/B of two proxy versions under the same load. The path "relay" (unless `--no-relay`, or without Go) is
bench/tcprelay in front of the broker's second listener, which Metadata advertises at the relay: a
byte-for-byte relay in Go that moves bytes with splice(2) and parses nothing, the floor of what one more TCP
hop costs on this machine, whatever the proxy does.

Throughput: bench/throughput.py's confluent-kafka producer and consumer, unchanged (acks=1, linger.ms=5,
produce_batch; assign from offset 0), timed the same way; medians over the repeats.

Latency: one request at a time on one connection, from a raw socket with pre-encoded frames (only the
correlation id is patched in), so the client adds next to nothing and the same to both paths: Produce v9
(one 100-byte record, acks=1), Fetch v12 (max_wait_ms 0, from offset 0, 1 KiB) and Metadata v12 (the one the
proxy decodes and rewrites). Blocks of requests alternate between direct and proxied; p50 and p99 over
every request.

Goal (issue 18): at most 10 % throughput loss and at most 0.2 ms added median latency on loopback.
"""

from __future__ import annotations

import argparse
import json
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

from _peers import BrokerProcess, free_port, kafka_available, start_broker, stop_all, tcprelay_binary  # noqa: E402
from throughput import (  # noqa: E402
    PySpy,
    _create_topic,
    _delete_topic,
    _fmt_rate,
    print_profiles,
    run_consume,
    run_produce,
)

from fakekafka.wire.protocol import encode_request  # noqa: E402
from fakekafka.wire.records import build_batch  # noqa: E402

GOAL_LOSS = 0.10
GOAL_ADDED_MS = 0.2
PATHS = ("direct", "proxy")
_SIZE = struct.Struct(">i")


# --- latency ------------------------------------------------------------------------------------------------
def _frames(topic: str) -> dict[str, bytes]:
    """The requests timed for latency, encoded once (correlation id 0; patched per request)."""
    batch = build_batch([{"key": None, "value": os.urandom(100), "headers": [], "timestamp": int(time.time() * 1000)}])
    produce = encode_request(0, 9, 0, {"transactional_id": None, "acks": 1, "timeout_ms": 10000, "topic_data": [
        {"name": topic, "partition_data": [{"index": 0, "records": batch}]}]}, client_id="bench-proxy")
    fetch = encode_request(1, 12, 0, {
        "replica_id": -1, "max_wait_ms": 0, "min_bytes": 1, "max_bytes": 1024, "isolation_level": 0,
        "session_id": 0, "session_epoch": -1, "topics": [{"topic": topic, "partitions": [{
            "partition": 0, "current_leader_epoch": -1, "fetch_offset": 0, "last_fetched_epoch": -1,
            "log_start_offset": -1, "partition_max_bytes": 1024}]}],
        "forgotten_topics_data": [], "rack_id": ""}, client_id="bench-proxy")
    metadata = encode_request(3, 12, 0, {"topics": [{"topic_id": uuid.UUID(int=0), "name": topic}],
                                         "allow_auto_topic_creation": False,
                                         "include_topic_authorized_operations": False}, client_id="bench-proxy")
    return {"Produce": produce, "Fetch": fetch, "Metadata": metadata}


class RawConnection:
    """A socket that sends a pre-encoded request and reads its whole answer, nothing decoded."""

    def __init__(self, bootstrap: str) -> None:
        host, port = bootstrap.rsplit(":", 1)
        self.sock = socket.create_connection((host, int(port)), timeout=30)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.correlation_id = 0
        self.buf = bytearray(4)

    def exchange(self, frame: bytearray) -> int:
        """Sends `frame` with the next correlation id; returns the nanoseconds until the answer was read."""
        self.correlation_id += 1
        _SIZE.pack_into(frame, 8, self.correlation_id)
        sock = self.sock
        t0 = time.perf_counter_ns()
        sock.sendall(frame)
        view = memoryview(self.buf)
        got = 0
        while got < 4:
            n = sock.recv_into(view[got:], 4 - got)
            if not n:
                raise ConnectionError("closed")
            got += n
        (size,) = _SIZE.unpack(self.buf)
        left = size
        while left:
            chunk = sock.recv(min(left, 1 << 20))
            if not chunk:
                raise ConnectionError("closed")
            left -= len(chunk)
        t1 = time.perf_counter_ns()
        return t1 - t0

    def close(self) -> None:
        self.sock.close()


def measure_latency(bootstraps: dict[str, str], topic: str, requests: int, block: int = 100
                    ) -> dict[str, dict[str, list[int]]]:
    """{api: {path: [nanoseconds per request]}}; blocks of `block` requests alternate between the paths."""
    frames = _frames(topic)
    out: dict[str, dict[str, list[int]]] = {api: {p: [] for p in bootstraps} for api in frames}
    conns = {p: RawConnection(b) for p, b in bootstraps.items()}
    try:
        for api, frame in frames.items():
            buf = bytearray(frame)
            for conn in conns.values():  # warm-up: connections, caches, the proxy's first decode of an API
                for _ in range(50):
                    conn.exchange(buf)
            done = 0
            while done < requests:
                k = min(block, requests - done)
                order = list(conns.items()) if (done // block) % 2 == 0 else list(conns.items())[::-1]
                for path, conn in order:
                    out[api][path].extend(conn.exchange(buf) for _ in range(k))
                done += k
    finally:
        for conn in conns.values():
            conn.close()
    return out


def _pct(values: list[int], q: float) -> float:
    """The q-quantile in milliseconds (nearest rank)."""
    s = sorted(values)
    return s[min(len(s) - 1, int(q * len(s)))] / 1e6


# --- main ---------------------------------------------------------------------------------------------------
def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--brokers", default="kafka,fakekafka",
                    help="comma-separated: kafka (Apache Kafka 4.4.0, left out when its jars are absent), fakekafka")
    ap.add_argument("--records", type=int, default=300_000, help="100-byte records per cell (default 300000)")
    ap.add_argument("--large-records", type=int, default=20_000, help="10 KiB records per cell (default 20000)")
    ap.add_argument("--sizes", default="100,10240", help="record value sizes in bytes (default 100,10240)")
    ap.add_argument("--repeat", type=int, default=3, help="runs per cell; medians are reported (default 3)")
    ap.add_argument("--latency-requests", type=int, default=2000,
                    help="timed requests per API and path (default 2000; 0: no latency part)")
    ap.add_argument("--timeout", type=float, default=120.0, help="bound on any one phase, seconds (default 120)")
    ap.add_argument("--profile", metavar="DIR",
                    help="attach py-spy (pip install py-spy) to the proxy during each proxied phase; raw stacks go "
                         "to DIR and a top-functions table is printed (do not quote a profiled run's figures)")
    ap.add_argument("--profile-top", type=int, default=25)
    ap.add_argument("--compare", metavar="DIR",
                    help="also measure the proxy of another checkout (e.g. a worktree of main) as a third path, "
                         "'base', in the same cells: an A/B of two proxy versions under the same load")
    ap.add_argument("--no-relay", action="store_true",
                    help="leave out the 'relay' path (bench/tcprelay, a byte-for-byte Go relay: the floor of a hop)")
    ap.add_argument("--json", metavar="PATH", help="also write raw samples and medians as JSON")
    args = ap.parse_args(argv)

    kinds = [k.strip() for k in args.brokers.split(",") if k.strip()]
    if "kafka" in kinds and not kafka_available():
        print('Apache Kafka\'s jars are not installed (run `eval "$(bash .ci/install.sh)"`): leaving kafka out',
              file=sys.stderr)
        kinds.remove("kafka")
    if not kinds:
        print("no broker to measure", file=sys.stderr)
        return 2
    sizes = [int(s) for s in args.sizes.split(",")]
    count = {s: (args.records if s <= 1024 else args.large_records) for s in sizes}
    phases = ("produce", "consume")
    relay = not args.no_relay and tcprelay_binary() is not None
    if not args.no_relay and not relay:
        print("no Go to build bench/tcprelay: leaving the relay path out", file=sys.stderr)
    extra = (("relay",) if relay else ()) + (("base",) if args.compare else ())
    paths = PATHS + extra
    # samples[kind][size][phase][path][metric]
    samples: dict = {k: {s: {ph: {p: {"seconds": [], "broker_cpu": [], "proxy_cpu": []} for p in paths}
                             for ph in phases} for s in sizes} for k in kinds}
    latency: dict = {}
    profiles: dict[str, list[str]] = {}
    if args.profile:
        os.makedirs(args.profile, exist_ok=True)
    brokers: dict[str, BrokerProcess] = {}
    proxies: dict[str, BrokerProcess] = {}
    bases: dict[str, BrokerProcess] = {}
    relays: dict[str, BrokerProcess] = {}
    try:
        for kind in kinds:
            relay_port = free_port() if relay else None
            brokers[kind] = start_broker(kind, relay_port=relay_port)
            if relay_port is not None:
                relays[kind] = start_broker("relay", port=relay_port,
                                            upstream=f"127.0.0.1:{brokers[kind].relay_listener}")
            proxies[kind] = start_broker("proxy", upstream=brokers[kind].bootstrap)
            if args.compare:
                bases[kind] = start_broker("proxy", upstream=brokers[kind].bootstrap, cwd=args.compare)
        for r in range(args.repeat):
            for size in sizes:
                n = count[size]
                for kind in kinds:
                    b = brokers[kind]
                    line = f"[{r + 1}/{args.repeat}] {kind:9s} {size:>6d} B x {n}:"
                    for path in paths[r % len(paths):] + paths[:r % len(paths)]:  # each first in turn
                        px = {"base": bases, "relay": relays}.get(path, proxies)[kind]
                        bootstrap = b.bootstrap if path == "direct" else px.bootstrap
                        topic = f"bench-proxy-{size}-{r}-{path}-{uuid.uuid4().hex[:8]}"
                        _create_topic(b.bootstrap, topic, args.timeout)
                        for ph in phases:
                            spy = None
                            if args.profile and path not in ("direct", "relay"):
                                out = os.path.join(args.profile, f"proxy-{kind}-{ph}-{size}-{r}.txt")
                                profiles.setdefault(f"{kind} {ph} {size} B", []).append(out)
                                spy = PySpy(px.pid, out)
                            b0, p0 = b.cpu_seconds(), px.cpu_seconds()
                            try:
                                if ph == "produce":
                                    t0, t1, _ = run_produce(bootstrap, topic, n, size, args.timeout)
                                else:
                                    t0, t1, _ = run_consume(bootstrap, topic, n, size, args.timeout)
                            finally:
                                if spy is not None:
                                    spy.stop()
                            secs = t1 - t0
                            cell = samples[kind][size][ph][path]
                            cell["seconds"].append(secs)
                            cell["broker_cpu"].append((b.cpu_seconds() - b0) / secs)
                            cell["proxy_cpu"].append((px.cpu_seconds() - p0) / secs)
                            line += f" {path} {ph} {n / secs:>9,.0f} rec/s;"
                        _delete_topic(b.bootstrap, topic, args.timeout)
                    print(line, file=sys.stderr, flush=True)
        if args.latency_requests > 0:
            for kind in kinds:
                b, px = brokers[kind], proxies[kind]
                topic = f"bench-proxy-latency-{uuid.uuid4().hex[:8]}"
                _create_topic(b.bootstrap, topic, args.timeout)
                latency[kind] = measure_latency({"direct": b.bootstrap, "proxy": px.bootstrap}, topic,
                                                args.latency_requests)
                print(f"latency {kind}: {args.latency_requests} requests per API and path", file=sys.stderr,
                      flush=True)
                _delete_topic(b.bootstrap, topic, args.timeout)
    finally:
        for p in [*proxies.values(), *bases.values(), *relays.values()]:
            p.stop()
        for b in brokers.values():
            b.stop(grace=30)
        stop_all()

    # ---- tables
    result: dict = {"config": {"repeat": args.repeat, "records": {str(s): count[s] for s in sizes},
                               "latency_requests": args.latency_requests, "cpus": os.cpu_count(),
                               "python": sys.version.split()[0]}, "throughput": {}, "latency": {}}
    print()
    hdr = (f"{'broker':9s} {'phase':8s} {'record':>7s} | {'direct rec/s':>12s} {'proxy rec/s':>12s} {'loss':>6s} "
           f"{'goal':>5s} | {'broker CPU d/p':>14s} {'proxy CPU':>9s} {'proxy us/rec':>12s}")
    print(hdr)
    print("-" * len(hdr))
    for kind in kinds:
        for ph in phases:
            for size in sizes:
                n = count[size]
                cells = samples[kind][size][ph]
                rate = {p: n / statistics.median(cells[p]["seconds"]) for p in paths}
                loss = 1 - rate["proxy"] / rate["direct"]
                bcpu = {p: statistics.median(cells[p]["broker_cpu"]) for p in paths}
                pcpu = statistics.median(cells["proxy"]["proxy_cpu"])
                us_rec = statistics.median(c * t for c, t in zip(cells["proxy"]["proxy_cpu"],
                                                                 cells["proxy"]["seconds"], strict=True)) / n * 1e6
                ok = loss <= GOAL_LOSS
                label = f"{size} B" if size < 1024 else f"{size // 1024} KiB"
                rates = f"{_fmt_rate(rate['direct']):>12s} {_fmt_rate(rate['proxy']):>12s}"
                cpus = f"{bcpu['direct'] * 100:>6.0f}/{bcpu['proxy'] * 100:<6.0f}"
                print(f"{kind:9s} {ph:8s} {label:>7s} | {rates} {loss * 100:>5.1f}% {'ok' if ok else 'MISS':>5s} | "
                      f"{cpus}  {pcpu * 100:>8.0f}% {us_rec:>12.2f}")
                for other in extra:
                    other_loss = 1 - rate[other] / rate["direct"]
                    other_us = statistics.median(c * t for c, t in zip(
                        cells[other]["proxy_cpu"], cells[other]["seconds"], strict=True)) / n * 1e6
                    other_cpu = statistics.median(cells[other]["proxy_cpu"])
                    print(f"{'':9s} {'  ' + other:8s} {label:>7s} | {'':>12s} {_fmt_rate(rate[other]):>12s} "
                          f"{other_loss * 100:>5.1f}% {'ok' if other_loss <= GOAL_LOSS else 'MISS':>5s} | "
                          f"{'':>6s}/{bcpu[other] * 100:<6.0f}  {other_cpu * 100:>8.0f}% {other_us:>12.2f}")
                result["throughput"].setdefault(kind, {}).setdefault(str(size), {})[ph] = {
                    **cells, "records_per_s": rate, "loss": loss, "goal_met": ok, "proxy_cpu_us_per_record": us_rec}
    print(f"loss: 1 - proxy rec/s / direct rec/s (goal <= {GOAL_LOSS:.0%}); broker CPU d/p: the broker's CPU use "
          f"direct / through the proxy, proxy CPU: the proxy process's (100 % = one core; {os.cpu_count()} CPUs "
          "here, shared with the client); proxy us/rec: proxy CPU microseconds per record."
          + (" relay: bench/tcprelay (Go, splice(2), parses nothing) in the same cells, the floor of a hop;"
             " its CPU columns are the relay's." if relay else "")
          + (f" base: the proxy of {args.compare}, measured in the same cells." if args.compare else ""))
    if latency:
        print()
        hdr = (f"{'broker':9s} {'request':9s} | {'direct p50':>10s} {'p99':>7s} | {'proxy p50':>10s} {'p99':>7s} | "
               f"{'added p50':>9s} {'p99':>7s} {'goal':>5s}")
        print(hdr)
        print("-" * len(hdr))
        for kind, by_api in latency.items():
            for api, by_path in by_api.items():
                d50, d99 = _pct(by_path["direct"], 0.5), _pct(by_path["direct"], 0.99)
                p50, p99 = _pct(by_path["proxy"], 0.5), _pct(by_path["proxy"], 0.99)
                ok = p50 - d50 <= GOAL_ADDED_MS
                print(f"{kind:9s} {api:9s} | {d50:>8.3f}ms {d99:>5.2f}ms | {p50:>8.3f}ms {p99:>5.2f}ms | "
                      f"{(p50 - d50):>7.3f}ms {(p99 - d99):>5.2f}ms {'ok' if ok else 'MISS':>5s}")
                result["latency"].setdefault(kind, {})[api] = {
                    "direct_p50_ms": d50, "direct_p99_ms": d99, "proxy_p50_ms": p50, "proxy_p99_ms": p99,
                    "added_p50_ms": p50 - d50, "goal_met": ok}
        print(f"One request at a time on one connection ({args.latency_requests} per API and path, raw frames); "
              f"goal: added p50 <= {GOAL_ADDED_MS} ms. Metadata is decoded and rewritten by the proxy (the "
              "addresses); Produce and Fetch pass as bytes.")
    if profiles:
        print_profiles(args.profile, profiles, args.profile_top)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(result, f, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
