"""Produce/consume throughput of fakekafka against tansu and Apache Kafka, side by side, with confluent-kafka
as the load.

    python bench/throughput.py [--records N] [--large-records N] [--repeat R] [--brokers fakekafka,tansu,kafka]
                               [--clients K] [--json out.json] [--profile DIR]

Both brokers run as subprocesses on loopback for the whole run; every (repeat, record size, broker) cell
gets a fresh single-partition topic, created with CreateTopics before timing. The cells are interleaved
(repeat 1: fakekafka then tansu, repeat 2: ...) so drifts in the machine's load hit both alike.

Produce: one confluent-kafka Producer (acks=1, linger.ms=5, compression none; produce_batch() by
default), timed from the first produce to flush() returning. Consume: one Consumer, no group subscription
(assign from offset 0, enable.auto.commit=false), timed from assign() to the N-th record. records/s and
MB/s (10^6 bytes of record values) are medians over the repeats; broker and client CPU use per phase show
which side is the limit. Start-to-ready: spawn -> port accepts a connection, and spawn -> ready line on
stdout, medians of --startup-samples fresh processes of each broker. See bench/README.md.

Goal (the issue's): fakekafka produce >= 2x tansu's records/s, consume >= 5x, in the same run.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import select
import signal
import statistics
import subprocess
import sys
import time
import uuid

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)

from _peers import BrokerProcess, kafka_available, start_broker, stop_all  # noqa: E402

try:
    from confluent_kafka import Consumer, KafkaError, KafkaException, Producer
    from confluent_kafka.admin import AdminClient, NewTopic
except ImportError:  # pragma: no cover
    sys.exit("bench/throughput.py needs confluent-kafka: pip install confluent-kafka")

GOALS = {"produce": 2.0, "consume": 5.0}
CLIENT_BOUND_BROKER, CLIENT_BOUND_CLIENT = 0.6, 0.9  # CPU shares (1.0 = one core) that mark a client-bound cell
PRODUCER_CONFIG = {"acks": 1, "linger.ms": 5, "compression.type": "none", "delivery.report.only.error": True,
                   "queue.buffering.max.messages": 1_000_000, "queue.buffering.max.kbytes": 1_048_576}
# group.id: confluent-kafka's Consumer insists on one, though assign() never joins a group. The queue settings
# keep librdkafka from pausing fetches for fetch.queue.backoff.ms (default 1 s) when this process falls behind
# (queued.min.messages, queued.max.messages.kbytes), which otherwise adds 1 s stalls to random runs.
CONSUMER_CONFIG = {"enable.auto.commit": False, "enable.auto.offset.store": False, "group.id": "fakekafka-bench",
                   "queued.min.messages": 10_000_000, "queued.max.messages.kbytes": 2_097_151,
                   "fetch.queue.backoff.ms": 1}
SMALL, LARGE = 100, 10 * 1024
BATCH_CHUNK = 10_000
# consume() takes at most this many bytes of values per call (10,000 x 100 B, 97 x 10 KiB). A call returns
# a list the loop holds until the next call: 10,000 x 10 KiB is 100 MB of fresh bytes objects each time, and
# malloc gives that back to the kernel and faults it in again every batch (page faults were 70 % of the
# client's CPU against fakekafka, making the client the limit; against tansu the client idles either way).
CONSUME_CHUNK_BYTES = 1_000_000


def _create_topic(bootstrap: str, topic: str, timeout: float, partitions: int = 1) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap, "log_level": 3})
    fut = admin.create_topics([NewTopic(topic, num_partitions=partitions, replication_factor=1)],
                              operation_timeout=timeout, request_timeout=timeout)[topic]
    fut.result(timeout)
    # wait until metadata shows the partition with a leader (bounded)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        md = admin.list_topics(topic, timeout=timeout).topics.get(topic)
        if md is not None and md.error is None and md.partitions and all(p.leader >= 0
                                                                          for p in md.partitions.values()):
            return
        time.sleep(0.01)
    raise RuntimeError(f"topic {topic} has no leader after {timeout}s")


def _delete_topic(bootstrap: str, topic: str, timeout: float) -> None:
    """Frees the cell's data so memory stays flat across repeats (errors are not the benchmark's concern)."""
    admin = AdminClient({"bootstrap.servers": bootstrap, "log_level": 3})
    try:
        admin.delete_topics([topic], operation_timeout=timeout, request_timeout=timeout)[topic].result(timeout)
    except Exception as e:  # noqa: BLE001
        print(f"note: deleting {topic} failed: {e}", file=sys.stderr)


_BARRIER = None  # set in --clients worker processes: every worker starts its clock when all are ready


def _init_worker(barrier: object) -> None:
    global _BARRIER
    _BARRIER = barrier


def _go() -> tuple[float, float]:
    """(perf_counter, process CPU seconds) at the start line, after every worker is ready."""
    if _BARRIER is not None:
        _BARRIER.wait(60)  # type: ignore[attr-defined]
    return time.perf_counter(), time.process_time()


def run_produce(bootstrap: str, topic: str, n: int, size: int, timeout: float, api: str = "batch",
                partition: int = 0) -> tuple[float, float, float]:
    """(start, end, client CPU seconds) from the first produce() to flush() done, n records of `size` bytes."""
    value = os.urandom(size)
    errors: list[KafkaError] = []

    def on_delivery(err: KafkaError | None, _msg: object) -> None:
        if err is not None:
            errors.append(err)

    p = Producer({"bootstrap.servers": bootstrap, **PRODUCER_CONFIG})
    # connect and fetch metadata before timing
    p.list_topics(topic, timeout=timeout)
    deadline = time.monotonic() + timeout
    if api == "batch":
        # produce_batch() queues a list in one call; the list (one shared dict) is built before timing
        chunk = min(n, BATCH_CHUNK)
        msgs = [{"value": value}] * chunk
        t0, c0 = _go()
        sent = 0
        while sent < n:
            k = min(chunk, n - sent)
            queued = p.produce_batch(topic, msgs if k == chunk else msgs[:k], partition=partition,
                                     on_delivery=on_delivery)
            if queued != k:
                raise RuntimeError(f"produce_batch queued {queued} of {k} (local queue too small?)")
            sent += k
            p.poll(0)
    else:
        produce, poll = p.produce, p.poll
        t0, c0 = _go()
        for _ in range(n):
            while True:
                try:
                    produce(topic, value, partition=partition, on_delivery=on_delivery)
                    break
                except BufferError:
                    poll(0.001)
                    if time.monotonic() > deadline:
                        raise TimeoutError("produce: local queue stayed full") from None
    left = p.flush(max(0.0, deadline - time.monotonic()))
    t1, c1 = time.perf_counter(), time.process_time()
    if left:
        raise TimeoutError(f"produce: {left} records undelivered after {timeout}s")
    if errors:
        raise RuntimeError(f"produce: {len(errors)} delivery errors, first: {errors[0]}")
    return t0, t1, c1 - c0


def run_consume(bootstrap: str, topic: str, n: int, size: int, timeout: float,
                partition: int = 0) -> tuple[float, float, float]:
    """(start, end, client CPU seconds) from assign(offset 0) to the n-th record (of `size` bytes) received."""
    from confluent_kafka import TopicPartition

    c = Consumer({"bootstrap.servers": bootstrap, **CONSUMER_CONFIG})
    try:
        got = 0
        t0, c0 = _go()
        deadline = time.monotonic() + timeout
        c.assign([TopicPartition(topic, partition, 0)])
        consume = c.consume
        chunk = max(1, min(BATCH_CHUNK, CONSUME_CHUNK_BYTES // max(size, 1)))
        while got < n:
            if time.monotonic() > deadline:
                raise TimeoutError(f"consume: {got} of {n} records after {timeout}s")
            # ask for no more than is left: consume() waits for all it asks for (or the timeout)
            for m in consume(min(chunk, n - got), 0.5):
                err = m.error()
                if err is None:
                    got += 1
                elif err.code() != KafkaError._PARTITION_EOF:
                    raise KafkaException(err)
        return t0, time.perf_counter(), time.process_time() - c0
    finally:
        c.close()


def _worker(job: tuple) -> tuple[float, float, float]:
    phase, args = job
    return run_produce(*args) if phase == "produce" else run_consume(*args)


def run_phase(pool: object | None, phase: str, bootstrap: str, topic: str, n: int, size: int, timeout: float,
              api: str, clients: int) -> tuple[float, float]:
    """(wall seconds, client CPU seconds) of one phase; with a pool, `clients` processes share the n records,
    one partition each, and the wall time runs from their common start to the last one's end."""
    if pool is None:
        args = (bootstrap, topic, n, size, timeout, api) if phase == "produce" else (bootstrap, topic, n, size, timeout)
        t0, t1, cpu = _worker((phase, args))
        return t1 - t0, cpu
    jobs = []
    for i in range(clients):
        k = n // clients + (1 if i < n % clients else 0)
        args = ((bootstrap, topic, k, size, timeout, api, i) if phase == "produce"
                else (bootstrap, topic, k, size, timeout, i))
        jobs.append((phase, args))
    results = pool.map(_worker, jobs)  # type: ignore[attr-defined]
    return max(r[1] for r in results) - min(r[0] for r in results), sum(r[2] for r in results)


class PySpy:
    """`py-spy record` attached to a running broker by PID for one phase; stop() writes collapsed stacks."""

    def __init__(self, pid: int, out: str, rate: int = 500) -> None:
        self.out = out
        self.proc = subprocess.Popen(["py-spy", "record", "--pid", str(pid), "--rate", str(rate), "--format", "raw",
                                      "--output", out, "--nonblocking"],
                                     stdout=subprocess.PIPE, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        # wait (bounded) for "py-spy> Sampling process ..." so the phase is sampled from its start
        fd = self.proc.stdout.fileno()  # type: ignore[union-attr]
        deadline = time.monotonic() + 10
        buf = b""
        while b"Sampling" not in buf and time.monotonic() < deadline and self.proc.poll() is None:
            if select.select([fd], [], [], 0.05)[0]:
                buf += os.read(fd, 4096)
        if b"Sampling" not in buf:
            self.stop()
            raise RuntimeError(f"py-spy did not start: {buf.decode(errors='replace')}")

    def stop(self) -> None:
        if self.proc.poll() is None:
            os.kill(self.proc.pid, signal.SIGINT)
            try:
                self.proc.communicate(timeout=30)
            except subprocess.TimeoutExpired:
                os.kill(self.proc.pid, signal.SIGKILL)
                self.proc.communicate(timeout=5)


def _frame_name(frame: str) -> str:
    """'func (path/file.py:12)' -> 'func (path/file.py)'."""
    name, _, where = frame.rpartition(" (")
    return f"{name} ({where.rsplit(':', 1)[0]})" if name else frame


def summarize_profile(paths: list[str], top: int) -> tuple[int, list[tuple[str, int, int]]]:
    """Merges py-spy raw outputs; returns (samples, [(function, self samples, inclusive samples)]) by self."""
    self_n: dict[str, int] = {}
    incl_n: dict[str, int] = {}
    total = 0
    for path in paths:
        if not os.path.exists(path):
            continue
        with open(path) as f:
            for line in f:
                stack, _, count = line.rstrip("\n").rpartition(" ")
                if not stack:
                    continue
                n = int(count)
                total += n
                frames = [_frame_name(fr) for fr in stack.split(";")]
                self_n[frames[-1]] = self_n.get(frames[-1], 0) + n
                for fr in set(frames):
                    incl_n[fr] = incl_n.get(fr, 0) + n
    rows = sorted(((fn, self_n.get(fn, 0), incl_n[fn]) for fn in incl_n), key=lambda r: -r[1])
    return total, rows[:top]


def print_profiles(profile_dir: str, files: dict[str, list[str]], top: int) -> None:
    for key, paths in files.items():
        total, rows = summarize_profile(paths, top)
        print(f"\nfakekafka profile, {key}: {total} samples (busy only; py-spy raw files in {profile_dir})")
        print(f"  {'self %':>6s} {'incl %':>6s}  function")
        for fn, s_n, i_n in rows:
            print(f"  {100 * s_n / max(total, 1):6.1f} {100 * i_n / max(total, 1):6.1f}  {fn}")


def measure_startup(kinds: list[str], samples: int) -> dict[str, dict[str, list[float]]]:
    out: dict[str, dict[str, list[float]]] = {}
    for kind in kinds:  # one unrecorded start each: page cache and bytecode cache warm
        start_broker(kind).stop()
    for _ in range(samples):
        for kind in kinds:
            b = start_broker(kind)
            b.stop()
            d = out.setdefault(kind, {"accept_s": [], "ready_line_s": []})
            d["accept_s"].append(b.accept_s)
            d["ready_line_s"].append(b.ready_line_s)
    return out


def _fmt_rate(v: float) -> str:
    return f"{v / 1000:,.1f}k" if v < 1e6 else f"{v / 1e6:,.2f}M"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--records", type=int, default=500_000, help="100-byte records per run (default 500000)")
    ap.add_argument("--large-records", type=int, default=40_000, help="10 KiB records per run (default 40000)")
    ap.add_argument("--sizes", default=f"{SMALL},{LARGE}", help="record value sizes in bytes (default 100,10240)")
    ap.add_argument("--repeat", type=int, default=5, help="runs per cell; medians are reported (default 5)")
    ap.add_argument("--brokers", default="fakekafka,tansu,kafka",
                    help="comma-separated: fakekafka, tansu, kafka (Apache Kafka, left out when its jars are absent)")
    ap.add_argument("--startup-samples", type=int, default=5, help="fresh processes per broker for start-to-ready")
    ap.add_argument("--timeout", type=float, default=120.0, help="bound on any one phase, seconds (default 120)")
    ap.add_argument("--produce-api", choices=["batch", "single"], default="batch",
                    help="Producer.produce_batch() in chunks of 10000 (default; less client overhead) or "
                         "one produce() call per record")
    ap.add_argument("--clients", type=int, default=1,
                    help="client processes per phase, each with its own partition of the topic (default 1: one "
                         "client in this process); more load the broker harder when one client is the limit")
    ap.add_argument("--phases", default="produce,consume", help="produce,consume (consume needs produce)")
    ap.add_argument("--fakekafka-wrap", default="",
                    help="prefix for fakekafka's command, e.g. 'py-spy record -o prof.svg --' (profiling)")
    ap.add_argument("--profile", metavar="DIR",
                    help="attach py-spy (pip install py-spy) to fakekafka during each phase; raw stacks go to DIR "
                         "and a top-functions table per phase and record size is printed")
    ap.add_argument("--profile-top", type=int, default=25, help="functions per profile table (default 25)")
    ap.add_argument("--profile-rate", type=int, default=500, help="py-spy samples per second (default 500)")
    ap.add_argument("--json", metavar="PATH", help="also write raw samples and medians as JSON")
    args = ap.parse_args(argv)

    kinds = [k.strip() for k in args.brokers.split(",") if k.strip()]
    if "kafka" in kinds and not kafka_available():
        print('Apache Kafka\'s jars are not installed (run `eval "$(bash .ci/install.sh)"`): leaving kafka out',
              file=sys.stderr)
        kinds.remove("kafka")
    sizes = [int(s) for s in args.sizes.split(",")]
    count = {s: (args.records if s <= 1024 else args.large_records) for s in sizes}
    do_consume = "consume" in args.phases

    startup = measure_startup(kinds, args.startup_samples) if args.startup_samples > 0 else {}

    brokers: dict[str, BrokerProcess] = {}
    profiles: dict[str, list[str]] = {}
    if args.profile:
        os.makedirs(args.profile, exist_ok=True)
    phases = ["produce", "consume"] if do_consume else ["produce"]
    # samples[kind][size][phase][metric] -> one value per repeat
    samples = {k: {s: {ph: {"seconds": [], "broker_cpu": [], "client_cpu": []} for ph in phases} for s in sizes}
               for k in kinds}
    pool = None
    if args.clients > 1:
        ctx = multiprocessing.get_context("spawn")
        pool = ctx.Pool(args.clients, _init_worker, (ctx.Barrier(args.clients),))
    try:
        for kind in kinds:
            wrap = args.fakekafka_wrap.split() if kind == "fakekafka" and args.fakekafka_wrap else None
            brokers[kind] = start_broker(kind, wrap=wrap, timeout=60 if wrap else 20)
        for r in range(args.repeat):
            for size in sizes:
                n = count[size]
                for kind in kinds:
                    b = brokers[kind]
                    topic = f"bench-{size}-{r}-{uuid.uuid4().hex[:8]}"
                    _create_topic(b.bootstrap, topic, args.timeout, args.clients)
                    line = f"[{r + 1}/{args.repeat}] {kind:9s} {size:>6d} B x {n}:"
                    for ph in phases:
                        spy = None
                        if args.profile and kind == "fakekafka":
                            out = os.path.join(args.profile, f"fakekafka-{ph}-{size}-{r}.txt")
                            profiles.setdefault(f"{ph} {size} B", []).append(out)
                            spy = PySpy(b.pid, out, args.profile_rate)
                        b0 = b.cpu_seconds()
                        try:
                            secs, client_cpu = run_phase(pool, ph, b.bootstrap, topic, n, size, args.timeout,
                                                         args.produce_api, args.clients)
                        finally:
                            if spy is not None:
                                spy.stop()
                        bcpu, ccpu = (b.cpu_seconds() - b0) / secs, client_cpu / secs
                        cell = samples[kind][size][ph]
                        cell["seconds"].append(secs)
                        cell["broker_cpu"].append(bcpu)
                        cell["client_cpu"].append(ccpu)
                        line += (f" {ph} {n / secs:>9,.0f} rec/s (broker CPU {bcpu:4.0%}, "
                                 f"client CPU {ccpu:4.0%});")
                    print(line, file=sys.stderr, flush=True)
                    _delete_topic(b.bootstrap, topic, args.timeout)
    finally:
        if pool is not None:
            pool.terminate()
            pool.join()
        for b in brokers.values():
            b.stop(grace=30)  # a profiler wrapper may need time to write its output
        stop_all()

    # ---- medians and table
    result: dict = {"config": {"producer": PRODUCER_CONFIG, "produce_api": args.produce_api,
                               "consumer": CONSUMER_CONFIG, "repeat": args.repeat, "clients": args.clients,
                               "records": {str(s): count[s] for s in sizes}, "cpus": os.cpu_count(),
                               "python": sys.version.split()[0]},
                    "throughput": {}, "startup": {}, "ratios": {}}
    med: dict[tuple[str, int, str], float] = {}
    cpu: dict[tuple[str, int, str], tuple[float, float]] = {}
    usrec: dict[tuple[str, int, str], float] = {}
    for kind in kinds:
        for size in sizes:
            for ph in phases:
                cell = samples[kind][size][ph]
                m = statistics.median(cell["seconds"])
                rps = count[size] / m
                med[(kind, size, ph)] = rps
                cpu[(kind, size, ph)] = (statistics.median(cell["broker_cpu"]), statistics.median(cell["client_cpu"]))
                # broker CPU time per record (microseconds): what the broker itself spends, whoever is the bottleneck
                usrec[(kind, size, ph)] = statistics.median(
                    c * t for c, t in zip(cell["broker_cpu"], cell["seconds"], strict=True)) / count[size] * 1e6
                result["throughput"].setdefault(kind, {}).setdefault(str(size), {})[ph] = {
                    **cell, "median_seconds": m, "records_per_s": rps, "mb_per_s": rps * size / 1e6,
                    "median_broker_cpu": cpu[(kind, size, ph)][0], "median_client_cpu": cpu[(kind, size, ph)][1],
                    "broker_cpu_us_per_record": usrec[(kind, size, ph)]}

    print()
    hdr = f"{'phase':8s} {'record':>7s} {'N':>7s}"
    for kind in kinds:
        hdr += f" | {kind + ' rec/s':>16s} {'MB/s':>7s} {'CPU b/c':>9s} {'us/rec':>6s}"
    both = "fakekafka" in kinds and "tansu" in kinds
    if both:
        hdr += f" | {'ratio':>6s} {'goal':>5s}        {'CPU ratio':>9s}"
    vs_kafka = "fakekafka" in kinds and "kafka" in kinds
    if vs_kafka:
        hdr += f" | {'vs kafka':>8s} {'CPU ratio':>9s}"
    print(hdr)
    print("-" * len(hdr))
    for ph in phases:
        for size in sizes:
            label = f"{size} B" if size < 1024 else f"{size // 1024} KiB"
            row = f"{ph:8s} {label:>7s} {count[size]:>7d}"
            for kind in kinds:
                rps = med[(kind, size, ph)]
                bc, cc = cpu[(kind, size, ph)]
                row += (f" | {_fmt_rate(rps):>16s} {rps * size / 1e6:>7.1f} {bc * 100:>4.0f}/{cc * 100:<4.0f} "
                        f"{usrec[(kind, size, ph)]:>6.2f}")
            if both:
                ratio = med[("fakekafka", size, ph)] / med[("tansu", size, ph)]
                ok = ratio >= GOALS[ph]
                # both brokers well under a core while the client is near its limit: the client sets the pace
                client_bound = all(cpu[(k, size, ph)][0] < CLIENT_BOUND_BROKER
                                   and cpu[(k, size, ph)][1] > CLIENT_BOUND_CLIENT for k in ("fakekafka", "tansu"))
                cpu_ratio = usrec[("tansu", size, ph)] / max(usrec[("fakekafka", size, ph)], 1e-9)
                result["ratios"].setdefault(ph, {})[str(size)] = {"ratio": ratio, "goal": GOALS[ph], "met": ok,
                                                                   "client_bound": client_bound,
                                                                   "broker_cpu_ratio": cpu_ratio}
                verdict = "ok  " if ok else "client" if client_bound else "MISS"
                row += f" | {ratio:>5.2f}x {GOALS[ph]:>4.0f}x {verdict:<6s} {cpu_ratio:>6.2f}x"
            if vs_kafka:
                ratio = med[("fakekafka", size, ph)] / med[("kafka", size, ph)]
                cpu_ratio = usrec[("kafka", size, ph)] / max(usrec[("fakekafka", size, ph)], 1e-9)
                result.setdefault("ratios_vs_kafka", {}).setdefault(ph, {})[str(size)] = {
                    "ratio": ratio, "broker_cpu_ratio": cpu_ratio}
                row += f" | {ratio:>7.2f}x {cpu_ratio:>8.2f}x"
            print(row)
    print("vs kafka: fakekafka rec/s / Apache Kafka's (a JVM, KRaft, one node, log on this machine's disk), and "
          "kafka us/rec / fakekafka us/rec. " if vs_kafka else "", end="")
    print(f"ratio: fakekafka rec/s / tansu rec/s. CPU b/c: CPU use of the broker process / of this client process "
          f"during the phase (100 = one core busy; {os.cpu_count()} CPUs here); us/rec: broker CPU microseconds per "
          "record; CPU ratio: tansu us/rec / fakekafka us/rec. A cell whose client CPU is near its limit while the "
          "broker idles is client-bound: its ratio measures the client, not the broker. 'client' in the goal column: "
          f"a missed goal in a cell where both brokers used under {CLIENT_BOUND_BROKER:.0%} of a core and the client "
          f"over {CLIENT_BOUND_CLIENT:.0%}; only a lighter load generator could tell the brokers apart there.")
    if startup:
        print()
        title = f"start-to-ready (median of {args.startup_samples})"
        print(f"{title:32s} {'port accepts':>13s} {'ready line':>11s}")
        for kind, d in startup.items():
            acc, rdy = statistics.median(d["accept_s"]), statistics.median(d["ready_line_s"])
            result["startup"][kind] = {**d, "median_accept_s": acc, "median_ready_line_s": rdy}
            print(f"{kind:32s} {acc * 1000:>10.1f} ms {rdy * 1000:>8.1f} ms")
    if profiles:
        print_profiles(args.profile, profiles, args.profile_top)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(result, f, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
