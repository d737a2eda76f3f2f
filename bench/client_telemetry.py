"""Client telemetry (KIP-714) on fakekafka and on Apache Kafka 4.4.0 in the same run: how long a client instance's
GetTelemetrySubscriptions and its PushTelemetry take.

Kafka runs with a metrics reporter that receives client telemetry and parses each push as OTLP
(tests/conformance/java/TelemetryReceiverReporter.java, compiled against its jars, as the conformance test does);
fakekafka runs `serve --client-telemetry`, whose receiver decodes and keeps each push. Over one raw connection per
broker, each of `--instances` new client instances asks for its subscription and pushes a zstd-compressed OTLP
payload of `--metrics` sums and gauges with attributes (about what the Java producer pushes); the brokers take turns
per round. The table gives each broker's median and 90th percentile per request and the fakekafka/Kafka ratio of
the medians.

    python bench/client_telemetry.py                       # 3 rounds x 300 instances, 60 metrics
    python bench/client_telemetry.py --rounds 5 --metrics 200
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))
sys.path.insert(0, str(ROOT))

from _peers import start_broker, stop_all  # noqa: E402


def payload(metrics: int) -> bytes:
    from opentelemetry.proto.metrics.v1 import metrics_pb2

    from fakekafka.wire.records import Compression, compress

    data = metrics_pb2.MetricsData()
    scope = data.resource_metrics.add().scope_metrics.add()
    for i in range(metrics):
        m = scope.metrics.add()
        m.name = f"org.apache.kafka.producer.node.request.latency.{i}"
        points = m.sum.data_points if i % 2 else m.gauge.data_points
        p = points.add()
        p.as_double, p.time_unix_nano = float(i), time.time_ns()
        for key, value in (("node_id", f"node-{i % 3}"), ("client_id", "bench"), ("topic", "orders")):
            a = p.attributes.add()
            a.key, a.value.string_value = key, value
    return compress(Compression.ZSTD, data.SerializeToString())


def measure(bootstrap: str, instances: int, body: bytes) -> tuple[list[float], list[float]]:
    """Seconds per GetTelemetrySubscriptions and per PushTelemetry, one new client instance each."""
    from fakekafka.net.wire_client import WireConnection
    from fakekafka.wire import ApiKey

    host, port = bootstrap.rsplit(":", 1)
    conn = WireConnection(host, int(port), "bench-telemetry", 30.0)
    gets, pushes = [], []
    try:
        for _ in range(instances):
            t0 = time.perf_counter()
            sub = conn.request(ApiKey.GET_TELEMETRY_SUBSCRIPTIONS, 0, {"client_instance_id": uuid.uuid4()})
            t1 = time.perf_counter()
            pushed = conn.request(ApiKey.PUSH_TELEMETRY, 0, {
                "client_instance_id": sub.client_instance_id, "subscription_id": sub.subscription_id,
                "terminating": False, "compression_type": 4, "metrics": body})
            t2 = time.perf_counter()
            assert sub.error_code == 0 and pushed.error_code == 0, (sub, pushed)
            gets.append(t1 - t0)
            pushes.append(t2 - t1)
    finally:
        conn.close()
    return gets, pushes


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--instances", type=int, default=300)
    ap.add_argument("--metrics", type=int, default=60)
    args = ap.parse_args()
    from fakekafka.testing.apache_kafka import KafkaCluster, kafka_lib
    from tests import javautil

    lib = kafka_lib()
    if lib is None:
        print("Apache Kafka is not installed: run `eval \"$(bash .ci/install.sh)\"`", file=sys.stderr)
        return 2
    classes = javautil.compile_java(ROOT / "tests" / "conformance" / "java" / "TelemetryReceiverReporter.java",
                                    cp=str(lib / "*"))
    body = payload(args.metrics)
    kafka = KafkaCluster(configs={"metric.reporters": "TelemetryReceiverReporter"}, classpath=(str(classes),))
    results: dict[str, tuple[list[float], list[float]]] = {"fakekafka": ([], []), "kafka": ([], [])}
    try:
        kafka.start()
        fake = start_broker("fakekafka", args=["--client-telemetry"])
        targets = {"fakekafka": fake.bootstrap, "kafka": kafka.bootstrap_servers}
        for bootstrap in targets.values():  # warm-up, not recorded
            measure(bootstrap, 50, body)
        for r in range(args.rounds):
            order = list(targets) if r % 2 == 0 else list(reversed(targets))
            for name in order:
                gets, pushes = measure(targets[name], args.instances, body)
                results[name][0].extend(gets)
                results[name][1].extend(pushes)
    finally:
        stop_all()
        kafka.stop()

    def q(xs: list[float], p: float) -> float:
        return sorted(xs)[int(p * (len(xs) - 1))] * 1e6

    print(f"{args.rounds} rounds x {args.instances} instances, push of {len(body)} B zstd ({args.metrics} metrics)")
    print(f"{'request':<28}{'broker':<11}{'median us':>11}{'p90 us':>10}{'fake/Kafka':>12}")
    for i, what in enumerate(("GetTelemetrySubscriptions", "PushTelemetry")):
        ratio = statistics.median(results["fakekafka"][i]) / statistics.median(results["kafka"][i])
        for name in ("fakekafka", "kafka"):
            xs = results[name][i]
            print(f"{what:<28}{name:<11}{q(xs, 0.5):>11.0f}{q(xs, 0.9):>10.0f}"
                  f"{(f'{ratio:.2f}' if name == 'fakekafka' else ''):>12}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
