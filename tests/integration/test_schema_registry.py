"""The Schema Registry beside the broker, end to end with confluent-kafka's own SchemaRegistryClient and its
Avro, JSON Schema and Protobuf serializers: records round-trip through fakekafka's registry and broker, a second
process reads what the first wrote, Confluent's refusals (409 with the reasons, the delete rules), the `_schemas`
topic surviving a restart on a data dir, `fakekafka serve --schema-registry`, and injected registry faults."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import textwrap
import uuid
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("fastavro")
pytest.importorskip("avro")
pytest.importorskip("authlib")
pytest.importorskip("cachetools")

from confluent_kafka import Consumer, Producer  # noqa: E402
from confluent_kafka.schema_registry import Schema, SchemaRegistryClient  # noqa: E402
from confluent_kafka.schema_registry.error import SchemaRegistryError  # noqa: E402
from confluent_kafka.serialization import MessageField, SerializationContext  # noqa: E402

import fakekafka  # noqa: E402

pytestmark = [pytest.mark.fakekafka_only, pytest.mark.fakekafka(schema_registry=True)]

ORDER = {"type": "record", "name": "Order", "namespace": "shop",
         "fields": [{"name": "id", "type": "string"}, {"name": "qty", "type": "int"}]}


def produce(kafka: Any, topic: str, values: list[bytes]) -> None:
    p = Producer({"bootstrap.servers": kafka.bootstrap_servers})
    for v in values:
        p.produce(topic, v)
    assert p.flush(10) == 0


def consume(kafka: Any, topic: str, count: int) -> list[bytes]:
    c = Consumer({"bootstrap.servers": kafka.bootstrap_servers, "group.id": f"g-{uuid.uuid4()}",
                  "auto.offset.reset": "earliest"})
    c.subscribe([topic])
    out: list[bytes] = []
    try:
        kafka.wait_until(lambda: (m := c.poll(0.5)) is not None and not m.error() and out.append(m.value())
                         or len(out) >= count, timeout=20)
    finally:
        c.close()
    return out


def test_avro_round_trip_and_a_second_process(kafka: Any, tmp_path: Path) -> None:
    from confluent_kafka.schema_registry.avro import AvroDeserializer, AvroSerializer
    sr = SchemaRegistryClient({"url": kafka.schema_registry_url})
    serialize = AvroSerializer(sr, json.dumps(ORDER))
    ctx = SerializationContext("orders", MessageField.VALUE)
    produce(kafka, "orders", [serialize({"id": f"o-{i}", "qty": i}, ctx) for i in range(3)])
    latest = sr.get_latest_version("orders-value")
    assert (latest.version, latest.schema_id, latest.schema.schema_type) == (1, 1, "AVRO")
    raw = consume(kafka, "orders", 3)
    assert raw[0][:5] == b"\x00\x00\x00\x00\x01"  # Confluent's wire format: magic byte, schema id 1
    deserialize = AvroDeserializer(sr)
    assert [deserialize(v, ctx) for v in raw] == [{"id": f"o-{i}", "qty": i} for i in range(3)]
    # another process, with nothing but the two addresses, reads the same records through the registry
    script = textwrap.dedent(f"""
        import json, uuid
        from confluent_kafka import Consumer
        from confluent_kafka.schema_registry import SchemaRegistryClient
        from confluent_kafka.schema_registry.avro import AvroDeserializer
        from confluent_kafka.serialization import MessageField, SerializationContext
        d = AvroDeserializer(SchemaRegistryClient({{"url": "{kafka.schema_registry_url}"}}))
        c = Consumer({{"bootstrap.servers": "{kafka.bootstrap_servers}", "group.id": str(uuid.uuid4()),
                      "auto.offset.reset": "earliest"}})
        c.subscribe(["orders"])
        out = []
        for _ in range(100):
            m = c.poll(0.5)
            if m is not None and not m.error():
                out.append(d(m.value(), SerializationContext("orders", MessageField.VALUE)))
            if len(out) == 3:
                break
        c.close()
        print(json.dumps(out))
    """)
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == [{"id": f"o-{i}", "qty": i} for i in range(3)]


@pytest.mark.timeout(900)  # the first run builds the Go program (franz-go, its sr package, hamba/avro)
def test_a_go_service_reads_and_writes_through_the_registry(kafka: Any) -> None:
    """A Go program (franz-go's schema registry client, hamba/avro) reads the records a Python producer wrote with
    confluent-kafka's AvroSerializer, each writer schema found by its id, and writes one that Python reads back."""
    import shutil

    from confluent_kafka.schema_registry.avro import AvroDeserializer, AvroSerializer

    from compat.clients.toolchains import go_program
    if shutil.which("go") is None:
        pytest.skip('go not found: the Go program is built with the Go toolchain (eval "$(bash .ci/install.sh)")')
    binary = go_program(Path(__file__).parent / "clients" / "go_registry")
    sr = SchemaRegistryClient({"url": kafka.schema_registry_url})
    ctx = SerializationContext("orders-to-go", MessageField.VALUE)
    serialize = AvroSerializer(sr, json.dumps(ORDER))
    produce(kafka, "orders-to-go", [serialize({"id": f"o-{i}", "qty": i}, ctx) for i in (1, 2)])
    schema_id = sr.get_latest_version("orders-to-go-value").schema_id
    done = subprocess.run([str(binary), kafka.bootstrap_servers, kafka.schema_registry_url, "orders-to-go", "2",
                           "orders-from-go"], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    lines = [json.loads(line) for line in done.stdout.splitlines()]
    assert lines == [{"schema_id": schema_id, "value": {"id": "o-1", "qty": 1}},
                     {"schema_id": schema_id, "value": {"id": "o-2", "qty": 2}}, {"produced": schema_id}]
    [raw] = consume(kafka, "orders-from-go", 1)
    back = AvroDeserializer(sr)(raw, SerializationContext("orders-from-go", MessageField.VALUE))
    assert back == {"id": "go-1", "qty": 7}


def test_a_java_service_reads_and_writes_through_the_registry(kafka: Any) -> None:
    """A Java program (Spring Cloud Stream's ConfluentSchemaRegistryClient on Confluent's REST API, Avro's Java
    library, Kafka's Java clients) reads the records confluent-kafka's AvroSerializer wrote, each writer schema
    fetched by the id in Confluent's wire format, and writes one (magic byte, 4-byte id) that Python's
    AvroDeserializer reads back. Confluent's own Java serdes are not on Maven Central."""
    from confluent_kafka.schema_registry.avro import AvroDeserializer, AvroSerializer

    from tests import javautil

    classes_cp = os.pathsep.join([javautil.registry_client_classpath(), javautil.classpath()])
    classes = javautil.compile_java(Path(__file__).parent / "clients" / "java" / "RegistryAvro.java", cp=classes_cp)
    sr = SchemaRegistryClient({"url": kafka.schema_registry_url})
    ctx = SerializationContext("orders-to-java", MessageField.VALUE)
    serialize = AvroSerializer(sr, json.dumps(ORDER))
    produce(kafka, "orders-to-java", [serialize({"id": f"o-{i}", "qty": i}, ctx) for i in (1, 2)])
    schema_id = sr.get_latest_version("orders-to-java-value").schema_id

    def java(*args: str) -> list[Any]:
        cmd = [javautil._tool("java"), *javautil.FAST_START, "-cp", os.pathsep.join([str(classes), classes_cp]),
               "RegistryAvro", *args]
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=120, check=False)
        assert done.returncode == 0, done.stderr[-4000:]
        return [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]

    read = java("read", kafka.bootstrap_servers, kafka.schema_registry_url, "orders-to-java", "2")
    assert read == [{"id": schema_id, "record": {"id": "o-1", "qty": 1}},
                    {"id": schema_id, "record": {"id": "o-2", "qty": 2}}]
    # the same schema under another subject: the same global id, as Confluent gives it
    written = java("write", kafka.bootstrap_servers, kafka.schema_registry_url, "orders-from-java",
                   "orders-from-java-value", json.dumps(ORDER), "java-1", "7")
    assert written == [{"id": schema_id}]
    assert sr.get_latest_version("orders-from-java-value").schema_id == schema_id
    [raw] = consume(kafka, "orders-from-java", 1)
    back = AvroDeserializer(sr)(raw, SerializationContext("orders-from-java", MessageField.VALUE))
    assert back == {"id": "java-1", "qty": 7}


def test_json_schema_round_trip(kafka: Any) -> None:
    pytest.importorskip("jsonschema")
    from confluent_kafka.schema_registry.json_schema import JSONDeserializer, JSONSerializer
    schema = json.dumps({"$schema": "http://json-schema.org/draft-07/schema#", "title": "Order", "type": "object",
                         "properties": {"id": {"type": "string"}, "qty": {"type": "integer"}}, "required": ["id"]})
    sr = SchemaRegistryClient({"url": kafka.schema_registry_url})
    ctx = SerializationContext("orders-json", MessageField.VALUE)
    serialize = JSONSerializer(schema, sr)
    produce(kafka, "orders-json", [serialize({"id": "o-1", "qty": 2}, ctx)])
    with pytest.raises(Exception, match="is a required property"):  # the serializer validates against it
        serialize({"qty": 2}, ctx)
    [raw] = consume(kafka, "orders-json", 1)
    assert JSONDeserializer(None, schema_registry_client=sr)(raw, ctx) == {"id": "o-1", "qty": 2}
    assert sr.get_latest_version("orders-json-value").schema.schema_type == "JSON"


def test_protobuf_round_trip(kafka: Any) -> None:
    from confluent_kafka.schema_registry.protobuf import ProtobufDeserializer, ProtobufSerializer
    from google.protobuf import descriptor_pb2, descriptor_pool, message_factory
    file = descriptor_pb2.FileDescriptorProto(name=f"order_{uuid.uuid4().hex}.proto", package="shop",
                                              syntax="proto3")
    m = file.message_type.add(name="Order")
    m.field.add(name="id", number=1, type=descriptor_pb2.FieldDescriptorProto.TYPE_STRING)
    m.field.add(name="qty", number=2, type=descriptor_pb2.FieldDescriptorProto.TYPE_INT32)
    pool = descriptor_pool.DescriptorPool()
    pool.Add(file)
    order = message_factory.GetMessageClass(pool.FindMessageTypeByName("shop.Order"))
    sr = SchemaRegistryClient({"url": kafka.schema_registry_url})
    ctx = SerializationContext("orders-pb", MessageField.VALUE)
    serialize = ProtobufSerializer(order, sr, {"use.deprecated.format": False})
    produce(kafka, "orders-pb", [serialize(order(id="o-1", qty=3), ctx)])
    [raw] = consume(kafka, "orders-pb", 1)
    back = ProtobufDeserializer(order, {"use.deprecated.format": False}, sr)(raw, ctx)
    assert (back.id, back.qty) == ("o-1", 3)
    latest = sr.get_latest_version("orders-pb-value")
    assert latest.schema.schema_type == "PROTOBUF"
    # registered as a base64 FileDescriptorProto, answered as Confluent answers it: .proto text (the descriptor
    # only with format=serialized, which the deserializer above asked for)
    text = SchemaRegistryClient({"url": kafka.schema_registry_url}).get_schema(latest.schema_id).schema_str
    assert text.startswith('syntax = "proto3";\npackage shop;\n') and "message Order {" in text, text
    assert "  int32 qty = 2;" in text
    serialized = SchemaRegistryClient({"url": kafka.schema_registry_url}).get_schema(latest.schema_id, fmt="serialized")
    assert descriptor_pb2.FileDescriptorProto.FromString(__import__("base64").b64decode(
        serialized.schema_str)).message_type[0].name == "Order"
    again = ProtobufSerializer(order, SchemaRegistryClient({"url": kafka.schema_registry_url}),
                               {"use.deprecated.format": False, "auto.register.schemas": False,
                                "use.latest.version": True})
    data = again(order(id="o-2", qty=4), ctx)  # a producer pinned to the latest version, read as text
    assert ProtobufDeserializer(order, {"use.deprecated.format": False},
                                SchemaRegistryClient({"url": kafka.schema_registry_url}))(data, ctx).qty == 4


MONEY_PROTO = 'syntax = "proto3";\npackage common;\nmessage Money { int64 cents = 1; string currency = 2; }\n'
ORDER_PROTO = ('syntax = "proto3";\npackage shop;\nimport "common/money.proto";\n\n'
               '// registered as the Java serializer registers it: .proto text with a reference per import\n'
               'message Order {\n  string id = 1;\n  common.Money total = 2;\n  map<string, int32> lines = 3;\n}\n')


def test_proto_text_with_a_reference_read_by_confluent_kafkas_protobuf_serdes(kafka: Any) -> None:
    """A `.proto` text schema with an import (what the Java serdes register) is served to confluent-kafka's Protobuf
    serializer and deserializer as the descriptors they ask for (`format=serialized`), references included."""
    pytest.importorskip("grpc_tools")
    from confluent_kafka.schema_registry import SchemaReference
    from confluent_kafka.schema_registry.protobuf import ProtobufDeserializer, ProtobufSerializer
    from google.protobuf import descriptor_pool, message_factory
    from google.protobuf.descriptor_pb2 import FileDescriptorProto
    sr = SchemaRegistryClient({"url": kafka.schema_registry_url})
    money = sr.register_schema("common/money.proto", Schema(MONEY_PROTO, "PROTOBUF"))
    order_id = sr.register_schema("orders-proto-value", Schema(ORDER_PROTO, "PROTOBUF", [
        SchemaReference("common/money.proto", "common/money.proto", 1)]))
    assert money != order_id
    got = sr.get_schema(order_id)
    # answered in Confluent's layout (its canonical printing of the text as written: the comment gone)
    assert got.schema_str == (
        'syntax = "proto3";\npackage shop;\n\nimport "common/money.proto";\n\nmessage Order {\n  string id = 1;\n'
        "  common.Money total = 2;\n  map<string, int32> lines = 3;\n}\n"
    )
    assert [r.name for r in got.references] == ["common/money.proto"]
    # the classes a Python service would generate from the same files
    pool = descriptor_pool.DescriptorPool()
    for text_name, fmt_subject in (("common/money.proto", "common/money.proto"), ("shop.proto", "orders-proto-value")):
        fd = FileDescriptorProto()
        fd.ParseFromString(__import__("base64").b64decode(
            sr.get_latest_version(fmt_subject, fmt="serialized").schema.schema_str))
        fd.name = text_name
        if text_name == "shop.proto":
            del fd.dependency[:]
            fd.dependency.append("common/money.proto")
        pool.Add(fd)
    order = message_factory.GetMessageClass(pool.FindMessageTypeByName("shop.Order"))
    money_cls = message_factory.GetMessageClass(pool.FindMessageTypeByName("common.Money"))
    ctx = SerializationContext("orders-proto", MessageField.VALUE)
    serialize = ProtobufSerializer(order, sr, {"use.deprecated.format": False, "auto.register.schemas": False,
                                               "use.latest.version": True})
    value = order(id="o-1", total=money_cls(cents=1250, currency="EUR"))
    value.lines["sku-1"] = 2
    raw = serialize(value, ctx)
    assert int.from_bytes(raw[1:5], "big") == order_id  # written with the text schema's id
    produce(kafka, "orders-proto", [raw])
    [back_raw] = consume(kafka, "orders-proto", 1)
    # a consumer's own client (sr's cache keeps the id's text answer from the get_schema above)
    reader = SchemaRegistryClient({"url": kafka.schema_registry_url})
    back = ProtobufDeserializer(order, {"use.deprecated.format": False}, reader)(back_raw, ctx)
    assert (back.id, back.total.cents, dict(back.lines)) == ("o-1", 1250, {"sku-1": 2})
    # an incompatible edit of the text is refused with Confluent's difference
    with pytest.raises(SchemaRegistryError) as refused:
        sr.register_schema("orders-proto-value", Schema(ORDER_PROTO.replace("string id = 1", "int32 id = 1"),
                                                        "PROTOBUF", got.references))
    assert refused.value.http_status_code == 409 and "FIELD_SCALAR_KIND_CHANGED" in refused.value.error_message
    with pytest.raises(SchemaRegistryError) as invalid:
        sr.register_schema("orders-proto-value", Schema("syntax = \"proto3\"; message M { strin a = 1; }", "PROTOBUF"))
    assert invalid.value.error_code == 42201 and '"strin" is not defined' in invalid.value.error_message


def test_protoc_runs_off_the_clusters_loop(kafka: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """protoc (a child process) compiles a registered `.proto` on the HTTP thread: the broker's requests never wait
    for it. An invalid file is compiled once, its refusal kept."""
    pytest.importorskip("grpc_tools")
    import asyncio

    from fakekafka.registry import protobuf
    runs: list[bool] = []
    real = protobuf._run_protoc

    def watched(text: str, imports: dict[str, Any]) -> bytes:
        try:
            asyncio.get_running_loop()
            runs.append(True)  # on an event loop: the cluster's
        except RuntimeError:
            runs.append(False)
        return real(text, imports)
    monkeypatch.setattr(protobuf, "_run_protoc", watched)
    sr = SchemaRegistryClient({"url": kafka.schema_registry_url})
    unique = uuid.uuid4().hex
    text = f'syntax = "proto3";\npackage p{unique};\nmessage M {{ string a = 1; }}\n'
    schema_id = sr.register_schema(f"off-loop-{unique}", Schema(text, "PROTOBUF"))
    assert sr.lookup_schema(f"off-loop-{unique}", Schema(text, "PROTOBUF")).schema_id == schema_id
    layout = f'syntax = "proto3";\npackage p{unique};\n\nmessage M {{\n  string a = 1;\n}}\n'
    assert sr.get_schema(schema_id).schema_str == layout
    with pytest.raises(SchemaRegistryError):
        sr.register_schema(f"off-loop-{unique}", Schema(text.replace("string", "strin"), "PROTOBUF"))
    # the valid file once (its answer's layout read from the same run's source spans), the invalid once, neither on
    # the loop
    assert runs == [False, False]


def test_incompatible_schema_refused_with_confluents_409(kafka: Any) -> None:
    sr = SchemaRegistryClient({"url": kafka.schema_registry_url})
    sr.register_schema("orders-value", Schema(json.dumps(ORDER), "AVRO"))
    widened = {**ORDER, "fields": [*ORDER["fields"], {"name": "note", "type": "string"}]}
    with pytest.raises(SchemaRegistryError) as refused:
        sr.register_schema("orders-value", Schema(json.dumps(widened), "AVRO"))
    assert (refused.value.http_status_code, refused.value.error_code) == (409, 409)
    assert refused.value.error_message.startswith(
        'Schema being registered is incompatible with an earlier schema for subject "orders-value", details: '
        "[{errorType:'READER_FIELD_MISSING_DEFAULT_VALUE', description:'The field 'note' at path '/fields/2' in the "
        "new schema has no default value and is missing in the old schema', additionalInfo:'note'}")
    assert not sr.test_compatibility("orders-value", Schema(json.dumps(widened), "AVRO"))
    sr.set_compatibility("orders-value", "FORWARD")
    assert sr.get_compatibility("orders-value") == "FORWARD"
    assert sr.register_schema("orders-value", Schema(json.dumps(widened), "AVRO")) == 2
    with pytest.raises(SchemaRegistryError) as bad:
        sr.register_schema("orders-value", Schema('{"type": "record"}', "AVRO"))
    assert bad.value.error_code == 42201


def test_soft_and_hard_deletes(kafka: Any) -> None:
    sr = SchemaRegistryClient({"url": kafka.schema_registry_url})
    first = sr.register_schema("s-value", Schema(json.dumps(ORDER), "AVRO"))
    optional = {**ORDER, "fields": [*ORDER["fields"], {"name": "note", "type": "string", "default": ""}]}
    sr.register_schema("s-value", Schema(json.dumps(optional), "AVRO"))
    with pytest.raises(SchemaRegistryError) as refused:
        sr.delete_subject("s-value", permanent=True)
    assert (refused.value.error_code, refused.value.error_message) == (
        40405, "Subject 's-value' was not deleted first before being permanently deleted")
    assert sr.delete_version("s-value", 1) == 1
    assert sr.get_versions("s-value") == [2]
    with pytest.raises(SchemaRegistryError) as hidden:
        sr.get_version("s-value", 1)
    assert hidden.value.error_code == 40402
    assert sr.get_schema(first).schema_str == json.dumps(ORDER, separators=(",", ":"))  # ids stay readable
    assert sr.delete_subject("s-value") == [2]
    assert sr.get_subjects() == []
    with pytest.raises(SchemaRegistryError) as gone:
        sr.get_latest_version("s-value")
    assert gone.value.error_code == 40401
    assert sr.delete_subject("s-value", permanent=True) == [1, 2]
    tombstones = [r for r in kafka.records("_schemas") if r.value is None]
    assert {json.loads(r.key)["version"] for r in tombstones} == {1, 2}


def test_the_registry_survives_a_restart_on_a_data_dir(tmp_path: Path) -> None:
    with fakekafka.Cluster(data_dir=tmp_path, schema_registry=True) as cluster:
        sr = SchemaRegistryClient({"url": cluster.schema_registry_url})
        schema_id = sr.register_schema("orders-value", Schema(json.dumps(ORDER), "AVRO"))
        sr.set_compatibility("orders-value", "FULL")
    with fakekafka.Cluster(data_dir=tmp_path, schema_registry=True) as cluster:
        sr = SchemaRegistryClient({"url": cluster.schema_registry_url})
        assert sr.get_schema(schema_id).schema_str == json.dumps(ORDER, separators=(",", ":"))
        assert sr.get_compatibility("orders-value") == "FULL"
        assert cluster.topics() == ["_schemas"]


def test_registry_faults(kafka: Any) -> None:
    sr = SchemaRegistryClient({"url": kafka.schema_registry_url, "max.retries": 0})
    kafka.schema_registry.inject_error("/subjects/.*/versions", status=500, error_code=50001, count=1,
                                       method="POST")
    with pytest.raises(SchemaRegistryError) as failed:
        sr.register_schema("orders-value", Schema(json.dumps(ORDER), "AVRO"))
    assert (failed.value.http_status_code, failed.value.error_code) == (500, 50001)
    schema_id = sr.register_schema("orders-value", Schema(json.dumps(ORDER), "AVRO"))  # the fault was used up
    kafka.schema_registry.inject_error("/schemas/ids/", status=404, error_code=40403, message="Schema not found")
    fresh = SchemaRegistryClient({"url": kafka.schema_registry_url})
    with pytest.raises(SchemaRegistryError) as unknown:  # a record whose schema id the registry does not know
        fresh.get_schema(schema_id)
    assert unknown.value.error_code == 40403
    assert fresh.get_schema(schema_id).schema_type == "AVRO"
    fault = kafka.schema_registry.inject_latency(300, "/schemas/ids/", count=1)
    import time
    started = time.monotonic()
    SchemaRegistryClient({"url": kafka.schema_registry_url}).get_schema(schema_id)
    assert time.monotonic() - started >= 0.3 and fault.fired == 1
    with pytest.raises(ValueError, match="count is at least 1"):
        kafka.schema_registry.inject_error("/", count=0)


def test_rest_corner_cases(kafka: Any) -> None:
    import httpx2 as httpx
    url = kafka.schema_registry_url
    with httpx.Client(base_url=url) as http:
        assert http.get("/subjects/x/versions/0").json()["error_code"] == 42202
        assert http.get("/nowhere").status_code == 404
        assert http.put("/subjects").status_code == 405
        r = http.post("/subjects/x/versions", content=b"{not json", headers={"Content-Type": "application/json"})
        assert r.status_code == 400
        r = http.post("/subjects/x/versions", content=b"x" * (17 * 1024 * 1024))
        assert r.status_code == 413
        assert http.get("/schemas/types").json() == ["JSON", "PROTOBUF", "AVRO"]
        assert http.get("/config/nobody").json()["error_code"] == 40408
        assert http.put("/mode", json={"mode": "READONLY"}).json() == {"mode": "READONLY"}
        r = http.post("/subjects/x/versions", json={"schema": '"string"'})
        assert (r.status_code, r.json()["error_code"]) == (422, 42205)


def test_serve_schema_registry_and_ctl_registry_faults(tmp_path: Path) -> None:
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    proc = subprocess.Popen([sys.executable, "-m", "fakekafka", "serve", "--port", "0", "--schema-registry", "0"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    try:
        assert proc.stdout is not None
        first = proc.stdout.readline()
        url = re.fullmatch(r"fakekafka schema registry: url=(\S+)\n", first)
        assert url, first
        ready = proc.stdout.readline()
        control = re.search(r"control=(\S+)", ready)
        assert ready.startswith("fakekafka ready: ") and control, ready
        sr = SchemaRegistryClient({"url": url[1], "max.retries": 0})
        assert sr.register_schema("t-value", Schema('"string"', "AVRO")) == 1

        from fakekafka.ops.control import send_command

        def ctl(command: str, **args: Any) -> dict[str, Any]:  # what `fakekafka ctl` sends, without its start-up
            return send_command(control[1], command, args)
        # the broker's fault language, for the registry: errors, an unknown schema id, latency, clear-faults
        done = subprocess.run([sys.executable, "-m", "fakekafka", "ctl", "--control", control[1],
                               "registry-inject-error", "--path", "/subjects/.*/versions", "--method", "POST",
                               "--status", "503"], capture_output=True, text=True, timeout=60, env=env)
        assert done.returncode == 0 and "injected: registry error 503/503 on next 1 POST" in done.stdout, done
        with pytest.raises(SchemaRegistryError) as failed:
            sr.register_schema("u-value", Schema('"int"', "AVRO"))
        assert (failed.value.http_status_code, failed.value.error_code) == (503, 503)
        assert sr.register_schema("u-value", Schema('"int"', "AVRO")) == 2  # used up
        assert ctl("registry-unknown-schema-id", id=1)["ok"]
        with pytest.raises(SchemaRegistryError) as unknown:
            SchemaRegistryClient({"url": url[1]}).get_schema(1)
        assert unknown.value.error_code == 40403
        assert SchemaRegistryClient({"url": url[1]}).get_schema(2).schema_str == '"int"'  # only id 1 forgotten
        done = ctl("registry-inject-latency", ms=250, path="^/config$")
        assert "latency 250 ms on every any ^/config$" in done["result"], done
        assert ctl("clear-faults")["ok"]
        assert SchemaRegistryClient({"url": url[1]}).get_schema(1).schema_str == '"string"'  # cleared
        assert ctl("registry-inject-error", status=200) == {
            "ok": False, "error": "--status is an HTTP error status from 400 to 599, not 200"}
    finally:
        proc.terminate()
        proc.wait(10)
    assert proc.returncode == 0
