"""A Protobuf schema registered as a base64 FileDescriptorProto is answered as `.proto` text, as Confluent answers
it; `format=serialized` still gives the descriptor. The printed text compiles back to the same descriptor."""

from __future__ import annotations

import base64

import pytest

pytest.importorskip("google.protobuf")
pytest.importorskip("grpc_tools")

from fakekafka.registry.model import MemoryLog, Registry  # noqa: E402
from fakekafka.registry.protobuf import compile_proto  # noqa: E402
from fakekafka.registry.protobuf_text import proto_text  # noqa: E402
from fakekafka.registry.schemas import _canonical_proto  # noqa: E402

PROTO3 = """syntax = "proto3";
package shop;
import "google/protobuf/timestamp.proto";
option java_package = "com.shop";
message Order {
  string id = 1;
  repeated int64 qty = 2 [packed = false];
  map<string, Line> lines = 3;
  optional double price = 4;
  oneof pay { string card = 5; bytes token = 6; }
  google.protobuf.Timestamp at = 7;
  message Line { int32 n = 1; Kind kind = 2 [deprecated = true]; }
  enum Kind { option allow_alias = true; K0 = 0; K1 = 1; ALIAS = 1; reserved 5 to 7; reserved "OLD"; }
  reserved 10, 12 to 15, 100 to max;
  reserved "old";
}
enum Status { UNKNOWN = 0; DONE = 1; }
service Shop { rpc Get(Order) returns (stream Order); rpc Put(stream Order) returns (Order); }
"""
PROTO2 = """syntax = "proto2";
package p2;
message A {
  required string a = 1;
  optional int32 b = 2 [default = 7];
  optional string c = 3 [default = "x\\"y"];
  optional E e = 4 [default = TWO];
  extensions 100 to 199;
}
enum E { ONE = 1; TWO = 2; }
extend A { optional int32 ext = 100; }
"""


@pytest.mark.parametrize("source", [PROTO3, PROTO2], ids=["proto3", "proto2"])
def test_the_printed_text_compiles_back_to_the_same_descriptor(source: str) -> None:
    fd = compile_proto(source, {})
    text = proto_text(fd)
    assert text is not None and text.startswith('syntax = "')
    assert _canonical_proto(compile_proto(text, {})) == _canonical_proto(fd)


def test_a_base64_descriptor_is_answered_as_proto_text_and_serialized_on_request() -> None:
    fd = compile_proto(PROTO3, {})
    encoded = base64.b64encode(fd.SerializeToString()).decode()
    r = Registry(MemoryLog())
    schema_id = r.register("orders-value", {"schemaType": "PROTOBUF", "schema": encoded})["id"]
    answered = r.schema_by_id(schema_id)["schema"]
    assert "message Order {" in answered and "map<string, .shop.Order.Line> lines = 3;" in answered
    assert _canonical_proto(compile_proto(answered, {})) == _canonical_proto(fd)
    assert r.get_version("orders-value", "latest")["schema"] == answered
    assert (
        r.schema_by_id(schema_id, fmt="serialized")["schema"]
        == base64.b64encode(fd.SerializeToString(deterministic=True)).decode()
    )
    # the same schema registered as the text it was answered with is the same schema (same id)
    assert r.register("orders-value", {"schemaType": "PROTOBUF", "schema": answered})["id"] == schema_id


def test_text_registered_stays_as_sent_and_what_cannot_be_printed_is_answered_as_registered() -> None:
    r = Registry(MemoryLog())
    schema_id = r.register("t-value", {"schemaType": "PROTOBUF", "schema": PROTO2})["id"]
    assert r.schema_by_id(schema_id)["schema"] == PROTO2
    fd = compile_proto('syntax = "proto2";\nmessage G { optional group Item = 1 { optional int32 n = 2; } }\n', {})
    assert proto_text(fd) is None  # proto2 groups: not printed
