"""A Schema Registry behind the proxy (`fakekafka.proxy.registry.RegistryProxy`, `fakekafka proxy
--schema-registry-upstream`): confluent-kafka's SchemaRegistryClient and Avro serdes through it to fakekafka's
registry, and the registry's fault language applied on the proxy's side."""

from __future__ import annotations

import json
import socket
from collections.abc import Iterator
from typing import Any

import pytest

pytest.importorskip("fastavro")
pytest.importorskip("authlib")
pytest.importorskip("cachetools")

from confluent_kafka.schema_registry import Schema, SchemaRegistryClient  # noqa: E402
from confluent_kafka.schema_registry.avro import AvroDeserializer, AvroSerializer  # noqa: E402
from confluent_kafka.schema_registry.error import SchemaRegistryError  # noqa: E402
from confluent_kafka.serialization import MessageField, SerializationContext  # noqa: E402

from fakekafka.proxy.registry import RegistryProxy  # noqa: E402

pytestmark = [pytest.mark.fakekafka_only, pytest.mark.fakekafka(schema_registry=True)]

ORDER = {
    "type": "record",
    "name": "Order",
    "namespace": "shop",
    "fields": [{"name": "id", "type": "string"}, {"name": "qty", "type": "int"}],
}


@pytest.fixture
def proxied(kafka: Any) -> Iterator[RegistryProxy]:
    with RegistryProxy(kafka.schema_registry_url) as proxy:
        yield proxy


def test_serdes_through_the_proxy_reach_the_registry(kafka: Any, proxied: RegistryProxy) -> None:
    client = SchemaRegistryClient({"url": proxied.url})
    ctx = SerializationContext("orders", MessageField.VALUE)
    data = AvroSerializer(client, json.dumps(ORDER))({"id": "o-1", "qty": 2}, ctx)
    assert data[:5] == b"\x00\x00\x00\x00\x01"
    direct = SchemaRegistryClient({"url": kafka.schema_registry_url})
    assert direct.get_latest_version("orders-value").schema_id == 1  # registered upstream, not on the proxy
    assert AvroDeserializer(SchemaRegistryClient({"url": proxied.url}))(data, ctx) == {"id": "o-1", "qty": 2}
    with pytest.raises(SchemaRegistryError) as e:
        client.get_version("orders-value", 7)
    assert (e.value.http_status_code, e.value.error_code) == (404, 40402)  # the upstream's own refusal, forwarded


def test_faults_on_the_proxy_side(kafka: Any, proxied: RegistryProxy) -> None:
    client = SchemaRegistryClient({"url": proxied.url, "max.retries": 0})  # else it retries a 503 itself
    schema_id = client.register_schema("orders-value", Schema(json.dumps(ORDER), "AVRO"))
    proxied.inject_error("/subjects/.*/versions", status=503, error_code=50003, method="POST", count=1)
    with pytest.raises(SchemaRegistryError) as e:
        client.register_schema("other-value", Schema(json.dumps(ORDER), "AVRO"))
    assert (e.value.http_status_code, e.value.error_code) == (503, 50003)
    assert client.register_schema("other-value", Schema(json.dumps(ORDER), "AVRO")) == schema_id  # count=1: spent
    proxied.unknown_schema_id(schema_id, count=1)
    with pytest.raises(SchemaRegistryError) as e:
        SchemaRegistryClient({"url": proxied.url}).get_schema(schema_id)
    assert (e.value.http_status_code, e.value.error_code) == (404, 40403)
    slow = proxied.inject_latency(50, "^/schemas/ids/", count=2)
    fresh = SchemaRegistryClient({"url": proxied.url})
    assert json.loads(fresh.get_schema(schema_id).schema_str)["name"] == "Order"
    assert slow.fired == 1 and proxied.faults() == [slow]
    proxied.clear_faults()
    assert proxied.faults() == []


def test_an_upstream_that_does_not_answer_is_a_502_in_words() -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # bound, never listening: connections are refused
        with RegistryProxy(f"http://127.0.0.1:{port}") as proxy:
            with pytest.raises(SchemaRegistryError) as e:
                SchemaRegistryClient({"url": proxy.url, "max.retries": 0}).get_subjects()
    assert e.value.http_status_code == 502
    assert f"the upstream registry http://127.0.0.1:{port} did not answer" in str(e.value)


def test_the_upstream_is_an_http_url() -> None:
    with pytest.raises(ValueError, match="http"):
        RegistryProxy("localhost:8081")


def test_the_command_line_proxy_forwards_a_registry(kafka: Any) -> None:
    import os
    import signal
    import subprocess
    import sys
    from pathlib import Path

    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[3])}
    command = [
        sys.executable,
        "-m",
        "fakekafka",
        "proxy",
        "--upstream",
        kafka.bootstrap_servers,
        "--listen",
        "127.0.0.1:0",
        "--schema-registry-upstream",
        kafka.schema_registry_url,
        "--schema-registry-listen",
        "127.0.0.1:0",
    ]
    proc = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        assert line.startswith("fakekafka proxy schema registry: url="), line
        fields = dict(part.split("=", 1) for part in line.split()[4:])
        assert fields["upstream"] == kafka.schema_registry_url
        assert proc.stdout.readline().startswith("fakekafka proxy ready:")
        client = SchemaRegistryClient({"url": fields["url"]})
        assert client.register_schema("cli-value", Schema(json.dumps(ORDER), "AVRO")) == 1
        assert SchemaRegistryClient({"url": kafka.schema_registry_url}).get_subjects() == ["cli-value"]
    finally:
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=30)
    assert proc.returncode == 0, err
    bad = subprocess.run(
        [*command[:6], "--schema-registry-upstream", "localhost:8081"],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )
    assert bad.returncode == 1 and "--schema-registry-upstream: the upstream registry is an http(s) URL" in bad.stderr


def test_chaos_on_the_forwarded_registry_same_seed_same_faults_and_replay(kafka: Any) -> None:
    from fakekafka.chaos import Chaos, Profile, Schedule

    profile = Profile("registry-only", error_rate=0, latency_rate=0, drop_rate=0, registry_error_rate=0.3,
                      unknown_schema_id_rate=0.4, max_faults=None)
    schema_id = SchemaRegistryClient({"url": kafka.schema_registry_url}).register_schema(
        "chaos-value", Schema(json.dumps(ORDER), "AVRO"))

    def app(chaos: Any) -> tuple[list[str], Schedule]:
        seen = []
        with RegistryProxy(kafka.schema_registry_url, chaos=chaos) as proxy:
            for _ in range(12):  # a fresh client each time: nothing cached
                client = SchemaRegistryClient({"url": proxy.url, "max.retries": 0})
                try:
                    seen.append(json.loads(client.get_schema(schema_id).schema_str)["name"])
                except SchemaRegistryError as e:
                    seen.append(f"{e.http_status_code}/{e.error_code}")
            return seen, proxy.chaos_schedule()

    seen, schedule = app(Chaos(seed=2, profile=profile))
    again, same = app(Chaos(seed=2, profile=profile))
    assert seen == again and schedule.same_as(same) and len(schedule) > 0
    assert "404/40403" in seen and "Order" in seen
    replayed, applied = app(schedule)
    assert replayed == seen and applied.same_as(schedule)


def test_ctl_steers_the_forwarded_registry_and_chaos_draws_on_it(kafka: Any, tmp_path: Any) -> None:
    import os
    import signal
    import subprocess
    import sys
    from pathlib import Path

    from fakekafka.chaos import Schedule
    from fakekafka.ops.control import send_command

    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[3])}
    profile = tmp_path / "registry.json"
    profile.write_text(json.dumps({"error_rate": 0, "latency_rate": 0, "drop_rate": 0, "unknown_schema_id_rate": 1,
                                   "max_faults": 1}))
    out = tmp_path / "applied.json"
    schema_id = SchemaRegistryClient({"url": kafka.schema_registry_url}).register_schema(
        "ctl-value", Schema(json.dumps(ORDER), "AVRO"))
    command = [sys.executable, "-m", "fakekafka", "proxy", "--upstream", kafka.bootstrap_servers, "--listen",
               "127.0.0.1:0", "--schema-registry-upstream", kafka.schema_registry_url, "--schema-registry-listen",
               "127.0.0.1:0", "--chaos-seed", "1", "--chaos-profile", str(profile), "--chaos-out", str(out)]
    proc = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    try:
        assert proc.stdout is not None
        url = dict(part.split("=", 1) for part in proc.stdout.readline().split()[4:])["url"]
        ready = proc.stdout.readline()
        control = dict(part.split("=", 1) for part in ready.split()[3:])["control"]
        client = SchemaRegistryClient({"url": url, "max.retries": 0})
        with pytest.raises(SchemaRegistryError) as e:  # chaos: the first read of an id is answered 40403
            client.get_schema(schema_id)
        assert (e.value.http_status_code, e.value.error_code) == (404, 40403)
        assert json.loads(client.get_schema(schema_id).schema_str)["name"] == "Order"  # max_faults: 1

        # the served registry's commands, the same words, on the forwarded one
        done = subprocess.run([sys.executable, "-m", "fakekafka", "ctl", "--control", control,
                               "registry-inject-error", "--path", "/subjects/.*/versions", "--method", "POST",
                               "--error-code", "50003"], capture_output=True, text=True, timeout=60, env=env)
        assert done.returncode == 0 and "injected: registry error 500/50003 on next 1 POST" in done.stdout, done
        with pytest.raises(SchemaRegistryError) as e:
            client.register_schema("ctl2-value", Schema(json.dumps(ORDER), "AVRO"))
        assert (e.value.http_status_code, e.value.error_code) == (500, 50003)
        assert client.register_schema("ctl2-value", Schema(json.dumps(ORDER), "AVRO")) == schema_id  # spent
        assert send_command(control, "registry-unknown-schema-id", {"id": schema_id})["ok"]
        with pytest.raises(SchemaRegistryError) as e:
            SchemaRegistryClient({"url": url, "max.retries": 0}).get_schema(schema_id)
        assert e.value.error_code == 40403
        slow = send_command(control, "registry-inject-latency", {"ms": 20, "path": "^/config$"})
        assert "latency 20 ms on every any ^/config$" in slow["result"], slow
        assert send_command(control, "clear-faults", {})["ok"]
        assert SchemaRegistryClient({"url": url}).get_schema(schema_id).schema_type == "AVRO"
        described = send_command(control, "describe", {})
        assert described["ok"], described
    finally:
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=30)
    assert proc.returncode == 0, err
    applied = Schedule.load(out)
    assert [(s.api, s.nth, s.kind) for s in applied] == [("registry GET /schemas/ids/{id}", 0, "unknown_schema_id")]
