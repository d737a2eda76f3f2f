"""Consume (and produce) rates across record sizes and partition counts, with a load generator that is not the limit:
franz-go clients (`bench/recload`, built with `go build` into ~/.cache/fakekafka/bin) against fakekafka and Apache
Kafka 4.4.0 in one run, Kafka with its own scripts' JVM settings (1 GiB heap, G1).

    python bench/consume_scale.py                              # 100 B, 1 KiB, 10 KiB x 1, 8, 64 partitions, 3 repeats
    python bench/consume_scale.py --sizes 10240 --partitions 64 --repeat 1 --brokers fakekafka
    python bench/consume_scale.py --profile /tmp/prof           # py-spy on fakekafka during each produce and consume
    python bench/consume_scale.py --baseline DIR                # also a fakekafka from another checkout, in turn

Both brokers run side by side; each (repeat, size, partitions) cell runs on each broker in turn, on a new topic
(deleted afterwards): `recload -mode produce` writes the records (acks=1, linger 5 ms, round-robin over the
partitions), then `recload -mode consume` reads them all from offset 0 with `--clients` clients (each assigned
every clients-th partition; one client when the topic has fewer partitions). Broker CPU is read from /proc
during each phase; `us/rec` is broker CPU microseconds per record. The table gives medians and the min-max range.
"""

from __future__ import annotations

import argparse
import json
import os
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

from _peers import GoMissing, go_tool, kafka_available, start_broker, stop_all  # noqa: E402
from confluent_kafka.admin import AdminClient  # noqa: E402
from groups import create_topic  # noqa: E402

# bytes of values per cell: enough for a second or more of consuming on either broker
DEFAULT_BYTES = {100: 100_000_000, 1024: 300_000_000, 10240: 400_000_000, 102400: 400_000_000}


def recload_binary() -> str:
    """bench/recload built into ~/.cache/fakekafka/bin (again when its source is newer)."""
    try:
        return go_tool("recload")
    except GoMissing:
        sys.exit("bench/consume_scale.py needs Go to build bench/recload (eval \"$(bash .ci/install.sh)\")")
    except RuntimeError as e:
        sys.exit(str(e))


def recload(binary: str, broker, *args: str, timeout: float, profile: str | None = None) -> dict:
    spy = None
    if profile is not None and broker.kind == "fakekafka":
        spy = subprocess.Popen(["py-spy", "record", "-p", str(broker.pid), "-r", "200", "-f", "raw", "-o", profile],
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(0.5)
    cpu0 = broker.cpu_seconds()
    done = subprocess.run([binary, "-brokers", broker.bootstrap, *args, "-timeout", f"{timeout}s"],
                          capture_output=True, text=True, timeout=timeout + 60)
    cpu = broker.cpu_seconds() - cpu0
    if spy is not None:
        spy.send_signal(2)
        spy.wait(30)
    lines = [ln for ln in done.stdout.splitlines() if ln.startswith("{")]
    if not lines or done.returncode != 0:
        raise RuntimeError(f"recload {args} failed ({done.returncode}): {done.stderr[-2000:]}")
    out = json.loads(lines[-1])
    out["cpu_s"] = cpu
    return out


def run_cell(binary: str, broker, size: int, partitions: int, records: int, clients: int, timeout: float,
             profile: str | None) -> dict:
    topic = f"bench-consume-{uuid.uuid4().hex[:8]}"
    create_topic(broker.bootstrap, topic, partitions, 60)
    try:
        common = ["-topic", topic, "-partitions", str(partitions), "-records", str(records)]
        prod = recload(binary, broker, "-mode", "produce", *common, "-size", str(size), timeout=timeout,
                       profile=profile and profile.replace(".txt", "-produce.txt"))
        if not prod["complete"]:
            raise RuntimeError(f"{broker.kind}: produced {prod['records']} of {records}")
        cons = recload(binary, broker, "-mode", "consume", *common, "-clients", str(min(clients, partitions)),
                       timeout=timeout, profile=profile and profile.replace(".txt", "-consume.txt"))
    finally:
        admin = AdminClient({"bootstrap.servers": broker.bootstrap, "log_level": 3})
        admin.delete_topics([topic], operation_timeout=60)[topic].result(60)
    return {"broker": broker.label, "size": size, "partitions": partitions, "records": records,
            "produce_rps": prod["records"] / prod["seconds"], "produce_us": prod["cpu_s"] / records * 1e6,
            "consume_rps": cons["records"] / cons["seconds"] if cons["complete"] else None,
            "consume_us": cons["cpu_s"] / max(cons["records"], 1) * 1e6, "consumed": cons["records"]}


def fmt_rate(xs: list[float]) -> str:
    def k(x: float) -> str:
        return f"{x / 1e6:.2f}M" if x >= 1e6 else f"{x / 1e3:.0f}k" if x >= 1e4 else f"{x / 1e3:.1f}k"
    return f"{k(statistics.median(xs))} ({k(min(xs))}-{k(max(xs))})" if len(xs) > 1 else k(xs[0])


def fmt_us(xs: list[float]) -> str:
    return f"{statistics.median(xs):.2f}" + (f" ({min(xs):.2f}-{max(xs):.2f})" if len(xs) > 1 else "")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", default="100,1024,10240", help="record value sizes in bytes, comma-separated")
    ap.add_argument("--partitions", default="1,8,64")
    ap.add_argument("--clients", type=int, default=4, help="consuming clients when the topic has that many partitions")
    ap.add_argument("--bytes", type=float, default=None, help="value bytes per cell (default: by record size)")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--brokers", default="fakekafka,kafka")
    ap.add_argument("--timeout", type=float, default=120.0)
    ap.add_argument("--profile", help="directory for py-spy's raw profiles of fakekafka's produce and consume phases")
    ap.add_argument("--baseline", help="a fakekafka checkout to run beside this one (`fakekafka@DIR`), in turn")
    ap.add_argument("--json")
    args = ap.parse_args()
    sizes = [int(x) for x in args.sizes.split(",") if x]
    parts = [int(x) for x in args.partitions.split(",") if x]
    kinds = [b for b in args.brokers.split(",") if b]
    if "kafka" in kinds and not kafka_available():
        print("Apache Kafka is not installed (eval \"$(bash .ci/install.sh)\"): fakekafka only", file=sys.stderr)
        kinds.remove("kafka")
    if args.profile:
        os.makedirs(args.profile, exist_ok=True)
    binary = recload_binary()
    rows = []
    try:
        brokers = {k: start_broker(k, timeout=120, stock_jvm=True) for k in kinds}
        if args.baseline:
            label = f"fakekafka@{os.path.basename(os.path.normpath(args.baseline))}"
            brokers[label] = start_broker("fakekafka", timeout=120, cwd=args.baseline)
            kinds.append(label)
        for label, broker in brokers.items():
            broker.label = label
        for rep in range(args.repeat):
            for size in sizes:
                records = int((args.bytes or DEFAULT_BYTES.get(size, 3e8)) // size)
                for p in parts:
                    for kind in (kinds if rep % 2 == 0 else kinds[::-1]):
                        prof = (os.path.join(args.profile, f"{kind.replace('/', '_')}-{size}-{p}-{rep}.txt")
                                if args.profile else None)
                        cell = run_cell(binary, brokers[kind], size, p, records, args.clients, args.timeout, prof)
                        rows.append(cell)
                        rate = "incomplete" if cell["consume_rps"] is None else f"{cell['consume_rps']:,.0f} rec/s"
                        print(f"  {kind:9} {size:6} B x {p:3} partitions: consume {rate} "
                              f"({cell['consume_us']:.2f} us/rec), produce {cell['produce_rps']:,.0f} rec/s "
                              f"({cell['produce_us']:.2f} us/rec)", file=sys.stderr)
    finally:
        stop_all()
    print("\nfranz-go (bench/recload), same run; records/s median (min-max) and broker CPU us per record\n")
    header = ["record", "partitions"]
    for k in kinds:
        header += [f"{k} consume", f"{k} us/rec"]
    for k in kinds:
        header += [f"{k} produce", f"{k} us/rec "]
    print("| " + " | ".join(header) + " |")
    print("|" + "---|" * len(header))
    for size in sizes:
        for p in parts:
            out = [f"{size} B", str(p)]
            for phase in ("consume", "produce"):
                for k in kinds:
                    cells = [r for r in rows if (r["broker"], r["size"], r["partitions"]) == (k, size, p)]
                    rates = [r[f"{phase}_rps"] for r in cells if r[f"{phase}_rps"] is not None]
                    out += [fmt_rate(rates) if rates else "incomplete", fmt_us([r[f"{phase}_us"] for r in cells])]
            print("| " + " | ".join(out) + " |")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=1)


if __name__ == "__main__":
    main()
