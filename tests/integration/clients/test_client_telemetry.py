"""KIP-714 client telemetry end to end: real clients that push their metrics (the Java client 4.4 and
confluent-kafka's librdkafka do by default when the broker advertises GetTelemetrySubscriptions/PushTelemetry) to a
cluster with client telemetry on, subscribed through a CLIENT_METRICS resource; what they pushed is read back,
decoded, from the pytest handle (`kafka.client_metrics()`).

fakekafka only: Kafka 4.4 serves client telemetry only with a metrics reporter class of the operator's that
receives it, and keeps nothing to read back.
"""

from __future__ import annotations

import base64
import subprocess
import uuid
from pathlib import Path

import pytest

from fakekafka.testing.embedded import Cluster
from fakekafka.wire import ApiKey
from tests import javautil

pytest.importorskip("opentelemetry.proto.metrics.v1.metrics_pb2", reason="pip install 'fakekafka[telemetry]'")

pytestmark = [pytest.mark.clients, pytest.mark.fakekafka_only]

JAVA = Path(__file__).parent / "java" / "TelemetryClients.java"


def _java_uuid(text: str) -> uuid.UUID:
    """Kafka's Uuid.toString (URL-safe base64 without padding) as a Python UUID."""
    return uuid.UUID(bytes=base64.urlsafe_b64decode(text + "=="))


@pytest.mark.fakekafka(client_telemetry=True)
def test_the_java_producer_pushes_its_subscribed_metrics(kafka: Cluster) -> None:
    classes = javautil.compile_java(JAVA)
    java = [javautil._tool("java"), *javautil.driver_jvm_args(), "-cp",
            f"{classes}:{javautil.classpath()}", "TelemetryClients", kafka.bootstrap_servers, "500"]
    with subprocess.Popen(java, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          text=True) as proc:
        try:
            assert proc.stdout is not None and proc.stdin is not None
            line = proc.stdout.readline()
            assert line.startswith("instance\t"), f"{line!r}; stderr: {proc.stderr.read() if proc.stderr else ''}"
            instance = _java_uuid(line.split("\t")[1].strip())

            def pushed() -> list:
                return [p for p in kafka.client_metrics("telemetry-java") if p.client_instance_id == instance
                        and any(n.startswith("org.apache.kafka.producer.") for n in p.names())]
            first = kafka.wait_until(pushed, timeout=30, message="a metrics push from the Java producer")[0]
            assert first.client_software_name == "apache-kafka-java" and first.client_software_version == "4.4.0"
            assert first.compression in ("zstd", "lz4", "gzip", "snappy")  # the first Kafka offers it can do
            assert all(n.startswith("org.apache.kafka.producer.") for n in first.names())  # only the subscribed
            assert first.value("org.apache.kafka.producer.record.send.total") is not None
            proc.stdin.write("close\n")
            proc.stdin.flush()
            assert proc.wait(60) == 0
        finally:
            if proc.poll() is None:
                proc.kill()
    assert kafka.call(lambda: kafka.state.client_metrics["java-producers"]) == {
        "metrics": "org.apache.kafka.producer.", "interval.ms": "500", "match": "client_id=telemetry-.*"}


@pytest.mark.fakekafka(client_telemetry=True)
def test_confluent_kafka_pushes_its_metrics(kafka: Cluster) -> None:
    confluent_kafka = pytest.importorskip("confluent_kafka")
    if confluent_kafka.libversion()[1] < 0x02050000:
        pytest.skip(f"librdkafka {confluent_kafka.libversion()[0]} predates client telemetry (2.5)")
    kafka.call(lambda: kafka.state.client_metrics.update({"everything": {"metrics": "*", "interval.ms": "200"}}))
    kafka.call(kafka.state.client_telemetry.subscriptions_changed)  # as IncrementalAlterConfigs does
    producer = confluent_kafka.Producer({"bootstrap.servers": kafka.bootstrap_servers, "client.id": "rdkafka-app"})
    try:
        producer.produce("telemetry-rd", b"v")
        producer.flush(30)

        def pushed() -> list:
            producer.poll(0)
            return [p for p in kafka.client_metrics("rdkafka-app") if p.metrics]
        push = kafka.wait_until(pushed, timeout=30, message="a metrics push from librdkafka")[-1]
        assert push.client_software_name == "confluent-kafka-python"
        assert any(n.startswith("org.apache.kafka.producer.") for n in push.names())
    finally:
        producer.close()


def test_without_client_telemetry_nothing_is_advertised(kafka: Cluster) -> None:
    """Kafka without a telemetry reporter (its default) does not advertise the two APIs, so clients push nothing."""
    from fakekafka.handlers import advertised_versions

    served = advertised_versions(None, kafka.config)
    assert ApiKey.GET_TELEMETRY_SUBSCRIPTIONS not in served and ApiKey.PUSH_TELEMETRY not in served
    with pytest.raises(RuntimeError, match="client_telemetry=True"):
        kafka.client_metrics()


def test_serve_client_telemetry_and_ctl_client_metrics() -> None:
    """`fakekafka serve --client-telemetry`: a subscription made with IncrementalAlterConfigs, a gzip push over the
    wire, and `fakekafka ctl client-metrics` printing it decoded; without the flag the APIs are not advertised (but
    answered, as Kafka answers them)."""
    import gzip
    import json
    import signal
    import sys

    from opentelemetry.proto.metrics.v1 import metrics_pb2

    from fakekafka.testing.client import WireConnection

    def serve(*args: str) -> tuple[subprocess.Popen[str], dict[str, str]]:
        proc = subprocess.Popen([sys.executable, "-m", "fakekafka", "serve", "--port", "0", *args],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        assert proc.stdout is not None
        line = proc.stdout.readline()
        return proc, dict(part.split("=", 1) for part in line.split() if "=" in part)

    proc, ready = serve()
    try:
        host, port = ready["bootstrap.servers"].rsplit(":", 1)
        conn = WireConnection(host, int(port), "cli-test", 10)
        try:
            assert ApiKey.PUSH_TELEMETRY not in {k.api_key for k in conn.request(ApiKey.API_VERSIONS, 3, {
                "client_software_name": "t", "client_software_version": "1"}).api_keys}
            asked = conn.request(ApiKey.GET_TELEMETRY_SUBSCRIPTIONS, 0, {"client_instance_id": uuid.UUID(int=0)})
            assert (asked.error_code, list(asked.requested_metrics)) == (0, [])  # answered anyway, as by Kafka
        finally:
            conn.close()
    finally:
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(10) == 0

    proc, ready = serve("--client-telemetry")
    try:
        host, port = ready["bootstrap.servers"].rsplit(":", 1)
        conn = WireConnection(host, int(port), "app-1", 10)
        try:
            altered = conn.request(ApiKey.INCREMENTAL_ALTER_CONFIGS, 1, {"resources": [{
                "resource_type": 16, "resource_name": "all", "configs": [
                    {"name": "metrics", "config_operation": 0, "value": "org.apache.kafka."},
                    {"name": "interval.ms", "config_operation": 0, "value": "1000"}]}], "validate_only": False})
            assert altered.responses[0].error_code == 0
            sub = conn.request(ApiKey.GET_TELEMETRY_SUBSCRIPTIONS, 0, {"client_instance_id": uuid.UUID(int=0)})
            assert (sub.error_code, list(sub.requested_metrics), sub.push_interval_ms) == (0, ["org.apache.kafka."],
                                                                                           1000)
            data = metrics_pb2.MetricsData()
            metric = data.resource_metrics.add().scope_metrics.add().metrics.add()
            metric.name = "org.apache.kafka.producer.record.send.total"
            metric.sum.data_points.add().as_double = 3.0
            pushed = conn.request(ApiKey.PUSH_TELEMETRY, 0, {
                "client_instance_id": sub.client_instance_id, "subscription_id": sub.subscription_id,
                "terminating": False, "compression_type": 1, "metrics": gzip.compress(data.SerializeToString())})
            assert pushed.error_code == 0
        finally:
            conn.close()
        out = subprocess.run([sys.executable, "-m", "fakekafka", "ctl", "--control", ready["control"],
                              "client-metrics", "--client-id", "app-1"], capture_output=True, text=True, timeout=30)
        assert out.returncode == 0, out.stderr
        [push] = json.loads(out.stdout)
        assert (push["client_instance_id"], push["compression"]) == (str(sub.client_instance_id), "gzip")
        assert [(m["name"], m["kind"], m["value"]) for m in push["metrics"]] == [
            ("org.apache.kafka.producer.record.send.total", "sum", 3.0)]
    finally:
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(10) == 0


def test_metric_reporters_set_at_run_time_switches_it_on() -> None:
    """As on Kafka, a reporter receiving client telemetry added to `metric.reporters` at run time (cluster-wide,
    IncrementalAlterConfigs) starts the advertising; clients that connect then push."""
    from fakekafka.model.config import TELEMETRY_RECEIVER
    from fakekafka.testing.client import WireConnection

    with Cluster() as cluster:
        host, port = cluster.bootstrap_servers.rsplit(":", 1)

        def advertised() -> set[int]:
            conn = WireConnection(host, int(port), "t", 10)
            try:
                return set(conn.versions)
            finally:
                conn.close()
        assert ApiKey.GET_TELEMETRY_SUBSCRIPTIONS not in advertised()
        conn = WireConnection(host, int(port), "admin", 10)
        try:
            r = conn.request(ApiKey.INCREMENTAL_ALTER_CONFIGS, 1, {"resources": [{
                "resource_type": 4, "resource_name": "", "configs": [{
                    "name": "metric.reporters", "config_operation": 0,
                    "value": f"org.apache.kafka.common.metrics.JmxReporter,{TELEMETRY_RECEIVER}"}]}],
                "validate_only": False})
            assert r.responses[0].error_code == 0, r.responses[0]
        finally:
            conn.close()
        assert {ApiKey.GET_TELEMETRY_SUBSCRIPTIONS, ApiKey.PUSH_TELEMETRY} <= advertised()
        assert cluster.client_metrics() == []
