"""Client telemetry (KIP-714) beside Apache Kafka 4.4.0 configured to receive it: a metrics reporter of this test's
(tests/conformance/java/TelemetryReceiverReporter.java, compiled against Kafka's own jars) in `metric.reporters`,
and fakekafka with `client_telemetry=True`. The same CLIENT_METRICS subscriptions are made on both (two selecting
the test's connections, by client id and by software name, one not), then the same requests are sent over raw
connections: ApiVersions' ranges, GetTelemetrySubscriptions answered field by field, refusals included (for the
same client instance id, so the subscription ids and the metrics' order must be equal too), and a sequence of
pushes whose error codes must match step for step (a wrong subscription id, one too early, an unknown compression
on a terminating push, a push after it, a reserved instance id, a push too large, a payload that is not OTLP, a
good gzip one).

Without a reporter neither broker advertises the two APIs, and both answer them alike when asked anyway
(tests/conformance/test_api_sweep.py).
"""

from __future__ import annotations

import gzip
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

import fakekafka
from fakekafka.model.config import TELEMETRY_RECEIVER
from fakekafka.testing.apache_kafka import KafkaCluster, KafkaUnavailable, kafka_lib
from fakekafka.testing.client import WireConnection
from fakekafka.wire import ApiKey, ErrorCode
from tests import javautil

metrics_pb2 = pytest.importorskip("opentelemetry.proto.metrics.v1.metrics_pb2",
                                  reason="pip install 'fakekafka[telemetry]'")

REPORTER = Path(__file__).parent / "java" / "TelemetryReceiverReporter.java"
CLIENT_METRICS = 16
SUBSCRIPTIONS = {
    "producers": {"metrics": "org.apache.kafka.producer., org.apache.kafka.consumer.", "interval.ms": "60000",
                  "match": "client_id=telemetry-.*"},
    "by-software": {"metrics": "org.apache.kafka.admin.,org.apache.kafka.producer.", "interval.ms": "30000",
                    "match": "client_software_name=fakekafka.*"},
    "others": {"metrics": "*", "interval.ms": "100", "match": "client_id=nobody"},
}
"""Two that select the test's connections (their metrics' union, the shorter interval) and one that does not; long
intervals: no step of the push sequence below can be let through by time passing."""
FIELDS = ("throttle_time_ms", "error_code", "client_instance_id", "subscription_id", "accepted_compression_types",
          "push_interval_ms", "telemetry_max_bytes", "delta_temporality", "requested_metrics")
"""GetTelemetrySubscriptions' answer, compared field by field (its refusals too)."""


def _connect(bootstrap: str, client_id: str) -> WireConnection:
    host, port = bootstrap.split(",")[0].rsplit(":", 1)
    return WireConnection(host, int(port), client_id, 30)


def _subscribe(bootstrap: str) -> None:
    conn = _connect(bootstrap, "admin")
    try:
        r = conn.request(ApiKey.INCREMENTAL_ALTER_CONFIGS, 1, {"resources": [{
            "resource_type": CLIENT_METRICS, "resource_name": name, "configs": [
                {"name": k, "config_operation": 0, "value": v} for k, v in configs.items()]}
            for name, configs in SUBSCRIPTIONS.items()], "validate_only": False})
        assert all(x.error_code == ErrorCode.NONE for x in r.responses), r.responses
    finally:
        conn.close()


@pytest.fixture(scope="module")
def brokers() -> Iterator[dict[str, str]]:
    """Bootstrap addresses: Apache Kafka 4.4.0 with the reporter, fakekafka with client telemetry on."""
    lib = kafka_lib()
    if lib is None:
        pytest.skip("Apache Kafka is not installed: run `eval \"$(bash .ci/install.sh)\"`")
    classes = javautil.compile_java(REPORTER, cp=str(lib / "*"))
    kafka = KafkaCluster(configs={"metric.reporters": "TelemetryReceiverReporter"}, classpath=(str(classes),))
    try:
        kafka.start()
    except KafkaUnavailable as e:
        kafka.stop()
        pytest.fail(f"Apache Kafka with the telemetry reporter did not start: {e}")
    try:
        with fakekafka.Cluster(config={"metric.reporters": TELEMETRY_RECEIVER}) as fake:
            targets = {"kafka": kafka.bootstrap_servers, "fakekafka": fake.bootstrap_servers}
            for bootstrap in targets.values():
                _subscribe(bootstrap)
            yield targets
    finally:
        kafka.stop()


def _subscription_seen(bootstrap: str) -> None:
    """Kafka's brokers learn subscriptions from the metadata log a moment after the controller has it: a new
    instance id per look (a new instance is never throttled) until it is in the answer."""
    conn = _connect(bootstrap, "telemetry-probe")
    try:
        deadline = time.monotonic() + 30
        while True:
            r = conn.request(ApiKey.GET_TELEMETRY_SUBSCRIPTIONS, 0, {"client_instance_id": uuid.uuid4()})
            if r.error_code == ErrorCode.NONE and len(r.requested_metrics) == 3:
                return
            assert time.monotonic() < deadline, f"the subscription not answered within 30 s: {r}"
            time.sleep(0.05)
    finally:
        conn.close()


def _otlp() -> bytes:
    data = metrics_pb2.MetricsData()
    metric = data.resource_metrics.add().scope_metrics.add().metrics.add()
    metric.name = "org.apache.kafka.producer.record.send.total"
    metric.sum.data_points.add().as_double = 3.0
    return data.SerializeToString()


def _run(bootstrap: str, instance: uuid.UUID) -> dict[str, object]:
    """The steps' answers on one broker, one connection (Kafka keeps a client instance per connection)."""
    _subscription_seen(bootstrap)
    conn = _connect(bootstrap, "telemetry-app")
    out: dict[str, object] = {}
    try:
        versions = conn.request(ApiKey.API_VERSIONS, 3, {"client_software_name": "fakekafka-test",
                                                         "client_software_version": "1"})
        out["api_versions"] = sorted((k.api_key, k.min_version, k.max_version) for k in versions.api_keys
                                     if k.api_key in (ApiKey.GET_TELEMETRY_SUBSCRIPTIONS, ApiKey.PUSH_TELEMETRY))
        get = conn.request(ApiKey.GET_TELEMETRY_SUBSCRIPTIONS, 0, {"client_instance_id": instance})
        out["get"] = {k: get[k] for k in FIELDS}
        sid = get.subscription_id

        def push(name: str, instance_id: uuid.UUID = instance, subscription: int = sid, terminating: bool = False,
                 compression: int = 0, metrics: bytes = b"") -> None:
            r = conn.request(ApiKey.PUSH_TELEMETRY, 0, {
                "client_instance_id": instance_id, "subscription_id": subscription, "terminating": terminating,
                "compression_type": compression, "metrics": metrics})
            out[name] = ErrorCode(r.error_code).name

        def get_again(name: str, instance_id: uuid.UUID = instance) -> int:
            r = conn.request(ApiKey.GET_TELEMETRY_SUBSCRIPTIONS, 0, {"client_instance_id": instance_id})
            out[name] = {"error": ErrorCode(r.error_code).name, **{k: r[k] for k in FIELDS if k != "error_code"}}
            return int(r.subscription_id)

        push("push wrong subscription id", subscription=sid + 1)
        get_again("get after an unknown subscription id")
        push("push too early")
        get_again("get too early")
        push("terminating push, unknown compression", terminating=True, compression=9)
        push("push after terminating")
        push("push with instance id zero", instance_id=uuid.UUID(int=0))
        other = uuid.UUID(int=instance.int ^ 1)
        sid2 = get_again("get, second instance", other)
        push("push too large", other, sid2, metrics=b"\0" * (1048576 + 1))
        third = uuid.UUID(int=instance.int ^ 2)
        sid3 = get_again("get, third instance", third)
        push("push not OTLP", third, sid3, compression=1, metrics=gzip.compress(b"\xff\xff\xff not protobuf"))
        fourth = uuid.UUID(int=instance.int ^ 3)
        sid4 = get_again("get, fourth instance", fourth)
        push("push gzip OTLP", fourth, sid4, compression=1, metrics=gzip.compress(_otlp()))
    finally:
        conn.close()
    return out


def test_client_telemetry_answers_as_kafka(brokers: dict[str, str]) -> None:
    instance = uuid.uuid4()
    kafka, fake = _run(brokers["kafka"], instance), _run(brokers["fakekafka"], instance)
    assert kafka["api_versions"] == [(ApiKey.GET_TELEMETRY_SUBSCRIPTIONS, 0, 0), (ApiKey.PUSH_TELEMETRY, 0, 0)]
    assert kafka["get"]["error_code"] == ErrorCode.NONE  # type: ignore[index]
    differing = {k: (kafka[k], fake.get(k)) for k in kafka if kafka[k] != fake.get(k)}
    assert not differing, f"(Kafka, fakekafka) per step: {differing}"


JMX = "org.apache.kafka.common.metrics.JmxReporter"
BROKER = 4


def _advertises(address: str) -> bool:
    """Whether the broker at `address` lists GetTelemetrySubscriptions and PushTelemetry in ApiVersions."""
    conn = _connect(address, "telemetry-versions")
    try:
        listed = {ApiKey.GET_TELEMETRY_SUBSCRIPTIONS, ApiKey.PUSH_TELEMETRY} & set(conn.versions)
    finally:
        conn.close()
    assert len(listed) in (0, 2), listed
    return bool(listed)


def _set_reporters(address: str, broker: str, value: str | None) -> None:
    """IncrementalAlterConfigs on BROKER `broker` ("" for the cluster-wide default): `metric.reporters` set to
    `value`, or deleted (None)."""
    conn = _connect(address, "admin")
    try:
        r = conn.request(ApiKey.INCREMENTAL_ALTER_CONFIGS, 1, {"resources": [{
            "resource_type": BROKER, "resource_name": broker, "configs": [{
                "name": "metric.reporters", "config_operation": 0 if value is not None else 1, "value": value}]}],
            "validate_only": False})
        assert r.responses[0].error_code == ErrorCode.NONE, r.responses[0]
    finally:
        conn.close()


def _per_broker_steps(bootstrap: str, receiver: str) -> list[tuple[str, list[bool]]]:
    """Which of a two-broker cluster's brokers advertise client telemetry as `metric.reporters` changes: set on
    broker 1 alone, deleted there again, then set cluster-wide. A broker applies a change a moment after the
    controller has it (Kafka: from the metadata log), so each step waits until the broker it changed shows it."""
    addresses = bootstrap.split(",")

    def wait_for(address: str, on: bool) -> None:
        deadline = time.monotonic() + 30
        while _advertises(address) != on:
            assert time.monotonic() < deadline, f"{address} advertising={not on} after 30 s"
            time.sleep(0.1)

    out = [("at start", [_advertises(a) for a in addresses])]
    _set_reporters(addresses[0], "1", f"{JMX},{receiver}")
    wait_for(addresses[0], True)
    out.append(("set on broker 1", [_advertises(a) for a in addresses]))
    _set_reporters(addresses[0], "1", None)
    deadline = time.monotonic() + 3  # a change taking away what it added would show by then
    while time.monotonic() < deadline and _advertises(addresses[0]):
        time.sleep(0.2)
    out.append(("deleted on broker 1", [_advertises(a) for a in addresses]))
    _set_reporters(addresses[0], "", f"{JMX},{receiver}")
    wait_for(addresses[1], True)
    out.append(("set cluster-wide", [_advertises(a) for a in addresses]))
    return out


def test_metric_reporters_per_broker_as_kafka() -> None:
    """`metric.reporters` is read per broker, as Kafka reconfigures each broker's reporters: set on broker 1 alone
    (IncrementalAlterConfigs on BROKER "1") only broker 1 advertises client telemetry; deleted again it keeps its
    receiver; set cluster-wide every broker advertises. Apache Kafka 4.4.0 (two brokers, the reporter class on
    their classpath but not configured) and fakekafka (two brokers) step for step."""
    lib = kafka_lib()
    if lib is None:
        pytest.skip("Apache Kafka is not installed: run `eval \"$(bash .ci/install.sh)\"`")
    classes = javautil.compile_java(REPORTER, cp=str(lib / "*"))
    kafka = KafkaCluster(brokers=2, classpath=(str(classes),))
    try:
        kafka.start()
        theirs = _per_broker_steps(kafka.bootstrap_servers, "TelemetryReceiverReporter")
    except KafkaUnavailable as e:
        pytest.fail(f"Apache Kafka did not start: {e}")
    finally:
        kafka.stop()
    with fakekafka.Cluster(brokers=2) as fake:
        ours = _per_broker_steps(fake.bootstrap_servers, TELEMETRY_RECEIVER)
    assert theirs == [("at start", [False, False]), ("set on broker 1", [True, False]),
                      ("deleted on broker 1", [True, False]), ("set cluster-wide", [True, True])]
    assert ours == theirs
