"""Schema Registry figures: register and lookup latency, and Avro serializer throughput through it.

    python bench/schema_registry.py [--requests 2000] [--records 50000] [--proto-requests 50]

One `fakekafka.Cluster(schema_registry=True)` in this process (its HTTP server on its own threads, the model on
the cluster's loop). Each lookup is a fresh `GET /schemas/ids/{id}` and `POST /subjects/{s}` over one keep-alive
connection (httpx; confluent-kafka's client would answer repeats from its cache), each register a new version
(compatibility NONE, so the check is not what is measured). Serializer throughput is confluent-kafka's
AvroSerializer, which asks the registry once and then serializes from its cache: it shows the registry costs a
serializing application nothing after the first record.

Protobuf: each register of a new `.proto` text version runs protoc once (a child process, on the HTTP thread); a
lookup of a text registered before is answered from the compiled file kept. confluent-kafka's ProtobufSerializer
is measured beside the AvroSerializer in the same run (the ratio is Protobuf's rate over Avro's).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import httpx2 as httpx  # noqa: E402
from confluent_kafka.schema_registry import SchemaRegistryClient  # noqa: E402
from confluent_kafka.schema_registry.avro import AvroSerializer  # noqa: E402
from confluent_kafka.serialization import MessageField, SerializationContext  # noqa: E402

import fakekafka  # noqa: E402


def schema(i: int) -> str:
    return json.dumps({"type": "record", "name": "Order", "fields": [{"name": "id", "type": "string"},
                                                                      {"name": f"f{i}", "type": "int", "default": 0}]})


def proto(i: int) -> str:
    return f'syntax = "proto3";\npackage shop;\nmessage Order {{ string id = 1; int32 f{i} = {i + 2}; }}\n'


def timed(n: int, fn) -> list[float]:  # type: ignore[no-untyped-def]
    out = []
    for i in range(n):
        started = time.perf_counter()
        fn(i)
        out.append((time.perf_counter() - started) * 1000)
    return out


def line(name: str, ms: list[float]) -> str:
    ms = sorted(ms)
    return (f"| {name} | {len(ms) / (sum(ms) / 1000):,.0f}/s | {statistics.median(ms):.3f} | "
            f"{ms[int(len(ms) * 0.99) - 1]:.3f} |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=2000)
    parser.add_argument("--records", type=int, default=50_000)
    parser.add_argument("--proto-requests", type=int, default=50)
    args = parser.parse_args()
    with fakekafka.Cluster(schema_registry=True) as cluster, httpx.Client(base_url=cluster.schema_registry_url) as http:
        http.put("/config", json={"compatibility": "NONE"}).raise_for_status()
        registers = timed(args.requests, lambda i: http.post("/subjects/orders-value/versions",
                                                             json={"schema": schema(i)}).raise_for_status())
        by_id = timed(args.requests, lambda i: http.get(f"/schemas/ids/{i % args.requests + 1}").raise_for_status())
        lookups = timed(args.requests, lambda i: http.post("/subjects/orders-value",
                                                           json={"schema": schema(i)}).raise_for_status())
        n = args.proto_requests
        proto_registers = timed(n, lambda i: http.post("/subjects/orders-proto-value/versions", json={
            "schema": proto(i), "schemaType": "PROTOBUF"}).raise_for_status())
        proto_lookups = timed(n, lambda i: http.post("/subjects/orders-proto-value", json={
            "schema": proto(i), "schemaType": "PROTOBUF"}).raise_for_status())
        serialize = AvroSerializer(SchemaRegistryClient({"url": cluster.schema_registry_url}), schema(0))
        ctx = SerializationContext("orders", MessageField.VALUE)
        started = time.perf_counter()
        for i in range(args.records):
            serialize({"id": "o-1", "f0": i}, ctx)
        elapsed = time.perf_counter() - started
        proto_elapsed = _protobuf_serializer(cluster.schema_registry_url, args.records)
        direct, proxied = _through_the_proxy(cluster.schema_registry_url, args.requests, http)
    print("| request | rate (one client, one after another) | median ms | p99 ms |")
    print("|---|---|---|---|")
    print(line(f"register a new version (of {args.requests})", registers))
    print(line("GET /schemas/ids/{id}", by_id))
    print(line(f"POST /subjects/{{s}} lookup (among {args.requests} versions)", lookups))
    print(line(f"register a new .proto text version (of {n}; protoc each)", proto_registers))
    print(line(f"POST /subjects/{{s}} lookup of a .proto text (among {n} versions)", proto_lookups))
    print(line("GET /schemas/ids/{id} (interleaved with the next row)", direct))
    print(line("GET /schemas/ids/{id} through the proxy's RegistryProxy", proxied))
    avro_rate, proto_rate = args.records / elapsed, args.records / proto_elapsed
    print(f"\nAvroSerializer through the registry: {avro_rate:,.0f} records/s")
    print(f"ProtobufSerializer through the registry: {proto_rate:,.0f} records/s ({proto_rate / avro_rate:.2f}x "
          "Avro's, same run)")
    print(f"The proxy's forwarding: {statistics.median(proxied) / statistics.median(direct):.2f}x the direct "
          "median (same run, requests alternating)")


def _through_the_proxy(url: str, requests: int, direct: httpx.Client) -> tuple[list[float], list[float]]:
    """GET /schemas/ids/{id} straight to the registry and through `RegistryProxy`, alternating request by request
    so both see the same machine load."""
    from fakekafka.proxy.registry import RegistryProxy
    with RegistryProxy(url) as proxy, httpx.Client(base_url=proxy.url) as through:
        straight: list[float] = []
        forwarded: list[float] = []
        for i in range(requests):
            for client, out in ((direct, straight), (through, forwarded)):
                started = time.perf_counter()
                client.get(f"/schemas/ids/{i % requests + 1}").raise_for_status()
                out.append((time.perf_counter() - started) * 1000)
    return straight, forwarded


def _protobuf_serializer(url: str, records: int) -> float:
    """Seconds confluent-kafka's ProtobufSerializer takes for `records` records (a message class made here)."""
    from confluent_kafka.schema_registry.protobuf import ProtobufSerializer
    from google.protobuf import descriptor_pb2, descriptor_pool, message_factory
    file = descriptor_pb2.FileDescriptorProto(name="bench_order.proto", package="bench", syntax="proto3")
    m = file.message_type.add(name="Order")
    m.field.add(name="id", number=1, type=descriptor_pb2.FieldDescriptorProto.TYPE_STRING)
    m.field.add(name="f0", number=2, type=descriptor_pb2.FieldDescriptorProto.TYPE_INT32)
    pool = descriptor_pool.DescriptorPool()
    pool.Add(file)
    order = message_factory.GetMessageClass(pool.FindMessageTypeByName("bench.Order"))
    serialize = ProtobufSerializer(order, SchemaRegistryClient({"url": url}), {"use.deprecated.format": False})
    ctx = SerializationContext("orders-pb", MessageField.VALUE)
    started = time.perf_counter()
    for i in range(records):
        serialize(order(id="o-1", f0=i), ctx)
    return time.perf_counter() - started


if __name__ == "__main__":
    main()
