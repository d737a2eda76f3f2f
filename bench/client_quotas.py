"""A producer over its `producer_byte_rate`, on fakekafka and on Apache Kafka 4.4.0 in the same run: the
throughput it gets and the throttling it is told of.

Each broker runs as a subprocess (bench/_peers.py) with a small quota window (`quota.window.num=3`,
`quota.window.size.seconds=1`, the same on both) so the burst a fresh window allows is small. A client-id
quota is set with AlterClientQuotas (a raw request: neither Python client has the call), then confluent-kafka
produces `--mb` MB of 1 KB records (acks=1, linger.ms=5). The table gives, per broker: the throughput over
the whole run and from the first throttle on (the steady state the quota sets), each as a multiple of the quota,
how many answers carried a throttle time and their mean and largest, and the fakekafka/Kafka ratio of the
steady throughput.

    python bench/client_quotas.py                      # quota 200 kB/s, 3 MB, both brokers
    python bench/client_quotas.py --quota 500000 --mb 8 --brokers fakekafka
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _peers import kafka_available, start_broker, stop_all  # noqa: E402

WINDOW = {"quota.window.num": "3", "quota.window.size.seconds": "1"}


def measure(bootstrap: str, quota: int, total_mb: float) -> dict[str, float]:
    from confluent_kafka import Producer
    from confluent_kafka.admin import AdminClient, NewTopic

    from fakekafka.net.wire_client import WireConnection
    from fakekafka.wire import ApiKey

    client_id, topic = "bench-quota", f"bench-quota-{int(time.time() * 1000)}"
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(topic, 1, 1)])[topic].result(60)
    host, port = bootstrap.rsplit(":", 1)
    conn = WireConnection(host, int(port), "bench-admin", 60.0)
    answer = conn.request(ApiKey.ALTER_CLIENT_QUOTAS, 1, {"validate_only": False, "entries": [
        {"entity": [{"entity_type": "client-id", "entity_name": client_id}],
         "ops": [{"key": "producer_byte_rate", "value": float(quota), "remove": False}]}]})
    conn.close()
    assert answer.entries[0].error_code == 0, answer
    time.sleep(1.0)  # Kafka's broker learns the quota from the metadata log a moment later
    throttles: list[float] = []
    delivered: list[tuple[float, int]] = []
    producer = Producer({"bootstrap.servers": bootstrap, "client.id": client_id, "linger.ms": 5, "acks": 1,
                         "throttle_cb": lambda e: throttles.append((time.monotonic(), e.throttle_time))})
    payload = b"x" * 1000
    n = int(total_mb * 1000)
    start = time.monotonic()
    for _ in range(n):
        while True:
            try:
                producer.produce(topic, payload, on_delivery=lambda err, msg: delivered.append(
                    (time.monotonic(), len(msg.value()) if err is None else 0)))
                break
            except BufferError:
                producer.poll(0.05)
        producer.poll(0)
    producer.flush(600)
    end = time.monotonic()
    first = throttles[0][0] if throttles else end
    after = sum(size for t, size in delivered if t >= first)
    times = [t for _, t in throttles]
    return {"all": sum(s for _, s in delivered) / (end - start) / quota,
            "steady": after / max(end - first, 1e-3) / quota if throttles else float("nan"),
            "throttles": len(throttles), "mean_ms": statistics.mean(times) * 1000 if times else 0.0,
            "max_ms": max(times, default=0.0) * 1000, "seconds": end - start}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quota", type=int, default=200_000, help="producer_byte_rate, bytes/s")
    ap.add_argument("--mb", type=float, default=3.0, help="MB produced per broker")
    ap.add_argument("--brokers", default="fakekafka,kafka")
    args = ap.parse_args()
    kinds = [k for k in args.brokers.split(",") if k != "kafka" or kafka_available()]
    results: dict[str, dict[str, float]] = {}
    try:
        for kind in kinds:
            broker = start_broker(kind, configs=WINDOW, timeout=300)
            try:
                results[kind] = measure(broker.bootstrap, args.quota, args.mb)
            finally:
                broker.stop()
    finally:
        stop_all()
    print(f"producer_byte_rate {args.quota} B/s, {args.mb} MB of 1 KB records, window 3 x 1 s")
    print(f"{'broker':<10} {'seconds':>8} {'all/quota':>10} {'steady/quota':>13} {'throttles':>10} "
          f"{'mean ms':>8} {'max ms':>8}")
    for kind, r in results.items():
        print(f"{kind:<10} {r['seconds']:>8.1f} {r['all']:>10.2f} {r['steady']:>13.2f} {r['throttles']:>10.0f} "
              f"{r['mean_ms']:>8.0f} {r['max_ms']:>8.0f}")
    if "fakekafka" in results and "kafka" in results:
        print(f"steady throughput fakekafka/kafka: {results['fakekafka']['steady'] / results['kafka']['steady']:.2f}")


if __name__ == "__main__":
    main()
