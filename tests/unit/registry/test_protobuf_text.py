"""A Protobuf schema is answered as Confluent's registry answers it: its canonical printing
(`ProtobufSchema.canonicalString()` of Confluent's protobuf-provider), of the descriptor when registered as a base64
FileDescriptorProto, of the text as written when registered as `.proto` text. Each row is a schema and the text
Confluent's printer writes for it, derived from that printer's rules (section order, blank lines, indentation,
options in brackets, fully qualified names from a descriptor, names as written from text)."""

from __future__ import annotations

import base64

import pytest

pytest.importorskip("google.protobuf")
pytest.importorskip("grpc_tools")

from fakekafka.registry.model import MemoryLog, Registry  # noqa: E402
from fakekafka.registry.protobuf import compile_proto  # noqa: E402
from fakekafka.registry.protobuf_text import canonical_text, proto_text  # noqa: E402
from fakekafka.registry.schemas import _canonical_proto, _compile_text, protobuf_spans  # noqa: E402

PROTO3 = """syntax = "proto3";
// the shop's orders
package shop;
import "google/protobuf/timestamp.proto";
option java_package = "com.shop";
message Order {
  string id = 1;  // trailing comment
  repeated int64 qty = 2 [packed = false];
  map<string,Line> lines = 3;
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
# a blank line inside a nested message keeps its enclosing indentation (Java's appendIndented): written `  $`
PROTO3_FROM_DESCRIPTOR = """syntax = "proto3";
package shop;

import "google/protobuf/timestamp.proto";

option java_package = "com.shop";

message Order {
  reserved 10;
  reserved 12 to 15;
  reserved 100 to max;
  reserved "old";

  string id = 1 [json_name = "id"];
  repeated int64 qty = 2 [
    packed = false,
    json_name = "qty"
  ];
  repeated .shop.Order.LinesEntry lines = 3 [json_name = "lines"];
  optional double price = 4 [json_name = "price"];
  .google.protobuf.Timestamp at = 7 [json_name = "at"];

  oneof pay {
    string card = 5 [json_name = "card"];
    bytes token = 6 [json_name = "token"];
  }

  message LinesEntry {
    option map_entry = true;
  $
    string key = 1 [json_name = "key"];
    .shop.Order.Line value = 2 [json_name = "value"];
  }
  message Line {
    int32 n = 1 [json_name = "n"];
    .shop.Order.Kind kind = 2 [
      deprecated = true,
      json_name = "kind"
    ];
  }
  enum Kind {
    reserved 5 to 7;
    reserved "OLD";
    option allow_alias = true;
    K0 = 0;
    K1 = 1;
    ALIAS = 1;
  }
}
enum Status {
  UNKNOWN = 0;
  DONE = 1;
}

service Shop {
  rpc Get (.shop.Order) returns (stream .shop.Order);
  rpc Put (stream .shop.Order) returns (.shop.Order);
}
""".replace("$\n", "\n")
PROTO3_FROM_TEXT = """syntax = "proto3";
package shop;

import "google/protobuf/timestamp.proto";

option java_package = "com.shop";

message Order {
  reserved 10, 12 to 15, 100 to max;
  reserved "old";

  string id = 1;
  repeated int64 qty = 2 [packed = false];
  map<string, Line> lines = 3;
  optional double price = 4;
  google.protobuf.Timestamp at = 7;

  oneof pay {
    string card = 5;
    bytes token = 6;
  }

  message Line {
    int32 n = 1;
    Kind kind = 2 [deprecated = true];
  }
  enum Kind {
    reserved 5 to 7;
    reserved "OLD";
    option allow_alias = true;
    K0 = 0;
    K1 = 1;
    ALIAS = 1;
  }
}
enum Status {
  UNKNOWN = 0;
  DONE = 1;
}

service Shop {
  rpc Get (Order) returns (stream Order);
  rpc Put (stream Order) returns (Order);
}
"""
PROTO2 = """syntax = "proto2";
package p2;
message A {
  required string a = 1;
  optional int32 b = 2 [default = 7];
  optional string c = 3 [default = "x\\"y", json_name = "see"];
  optional E e = 4 [default = TWO];
  extensions 100 to 199;
}
enum E { ONE = 1; TWO = 2; }
extend A { optional int32 ext = 100; }
"""
PROTO2_FROM_DESCRIPTOR = """package p2;

message A {
  required string a = 1 [json_name = "a"];
  optional int32 b = 2 [
    default = 7,
    json_name = "b"
  ];
  optional string c = 3 [
    default = "x\\"y",
    json_name = "see"
  ];
  optional .p2.E e = 4 [
    default = TWO,
    json_name = "e"
  ];

  extensions 100 to 199;
}
enum E {
  ONE = 1;
  TWO = 2;
}

extend .p2.A {
  optional int32 ext = 100 [json_name = "ext"];
}
"""
PROTO2_FROM_TEXT = """syntax = "proto2";
package p2;

message A {
  required string a = 1;
  optional int32 b = 2 [default = 7];
  optional string c = 3 [
    default = "x\\"y",
    json_name = "see"
  ];
  optional E e = 4 [default = TWO];

  extensions 100 to 199;
}
enum E {
  ONE = 1;
  TWO = 2;
}

extend A {
  optional int32 ext = 100;
}
"""
GROUPS = "message G { optional group Item = 1 { optional int32 n = 2; } }\n"
GROUPS_FROM_DESCRIPTOR = """
message G {
  optional .G.Item item = 1 [json_name = "item"];

  message Item {
    optional int32 n = 2 [json_name = "n"];
  }
}
"""
GROUPS_FROM_TEXT = """
message G {
  optional group Item = 1 {
    optional int32 n = 2;
  }
}
"""
NESTED = """syntax = "proto3";
import public "google/protobuf/any.proto";
import "google/protobuf/empty.proto";
message Outer {
  option deprecated = true;
  message Inner {
    enum Color { RED = 0 [deprecated = true]; }
    Color color = 1;
    oneof which { int32 a = 2; }
  }
  Inner inner = 1;
}
"""
NESTED_FROM_TEXT = """syntax = "proto3";

import "google/protobuf/empty.proto";
import public "google/protobuf/any.proto";

message Outer {
  option deprecated = true;

  Inner inner = 1;

  message Inner {
    Color color = 1;
  $
    oneof which {
      int32 a = 2;
    }
  $
    enum Color {
      RED = 0 [deprecated = true];
    }
  }
}
""".replace("$\n", "\n")

CASES = [
    ("proto3", PROTO3, PROTO3_FROM_DESCRIPTOR, PROTO3_FROM_TEXT),
    ("proto2", PROTO2, PROTO2_FROM_DESCRIPTOR, PROTO2_FROM_TEXT),
    ("proto2 groups", GROUPS, GROUPS_FROM_DESCRIPTOR, GROUPS_FROM_TEXT),
    ("nested, public import", NESTED, None, NESTED_FROM_TEXT),
]


@pytest.mark.parametrize(("source", "from_descriptor", "from_text"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_confluents_canonical_text(source: str, from_descriptor: str | None, from_text: str) -> None:
    fd = compile_proto(source, {})
    if from_descriptor is not None:
        assert proto_text(fd) == from_descriptor
    assert canonical_text(source, protobuf_spans(source, {})) == from_text


def test_text_answered_in_confluents_layout_is_the_same_schema() -> None:
    r = Registry(MemoryLog())
    schema_id = r.register("t-value", {"schemaType": "PROTOBUF", "schema": PROTO3})["id"]
    answered = r.schema_by_id(schema_id)["schema"]
    assert answered == PROTO3_FROM_TEXT
    assert r.get_version("t-value", 1)["schema"] == PROTO3_FROM_TEXT
    assert r.register("t-value", {"schemaType": "PROTOBUF", "schema": answered})["id"] == schema_id


def test_a_base64_descriptor_is_answered_as_confluent_prints_it_and_serialized_on_request() -> None:
    fd = compile_proto(PROTO3, {})
    encoded = base64.b64encode(fd.SerializeToString()).decode()
    r = Registry(MemoryLog())
    schema_id = r.register("orders-value", {"schemaType": "PROTOBUF", "schema": encoded})["id"]
    answered = r.schema_by_id(schema_id)["schema"]
    assert answered == PROTO3_FROM_DESCRIPTOR
    assert r.get_version("orders-value", "latest")["schema"] == answered
    assert (
        r.schema_by_id(schema_id, fmt="serialized")["schema"]
        == base64.b64encode(fd.SerializeToString(deterministic=True)).decode()
    )
    # Confluent's text of a map (an `...Entry` message marked map_entry, which protoc refuses in source) is read
    # back as the map it was printed from: registered again, it is the same schema (same id)
    assert _canonical_proto(_compile_text(answered, {})) == _canonical_proto(fd)
    assert r.register("orders-value", {"schemaType": "PROTOBUF", "schema": answered})["id"] == schema_id
    # that text under a new subject: a text registered, printed as Confluent's parser reads it, i.e. as it is
    text_id = r.register("orders-text-value", {"schemaType": "PROTOBUF", "schema": answered})["id"]
    assert canonical_text(answered, protobuf_spans(answered, {})) == PROTO3_FROM_DESCRIPTOR
    assert r.schema_by_id(text_id)["schema"] == PROTO3_FROM_DESCRIPTOR


def test_what_the_printer_does_not_write_is_answered_as_registered() -> None:
    aggregate = (
        'syntax = "proto3";\nimport "google/protobuf/descriptor.proto";\n'
        "extend google.protobuf.FieldOptions { Rule rule = 50000; }\nmessage Rule { int32 min = 1; }\n"
        "message M { int32 n = 1 [(rule) = {min: 1}]; }\n"
    )
    r = Registry(MemoryLog())
    schema_id = r.register("a-value", {"schemaType": "PROTOBUF", "schema": aggregate})["id"]
    assert r.schema_by_id(schema_id)["schema"] == aggregate


META = """syntax = "proto3";
package m;
import "confluent/meta.proto";
message A {
  string a = 1 [(confluent.field_meta) = {doc: "the a", tags: ["PII"]}];
}
"""
META_FROM_DESCRIPTOR = """syntax = "proto3";
package m;

import "confluent/meta.proto";

message A {
  string a = 1 [
    (confluent.field_meta) = {
      doc: "the a",
      tags: [
        "PII"
      ]
    },
    json_name = "a"
  ];
}
"""
EDITIONS = 'edition = "2023";\npackage e;\nmessage E { string a = 1; }\n'
EDITIONS_FROM_DESCRIPTOR = """package e;

message E {
  optional string a = 1 [json_name = "a"];
}
"""


def test_confluents_own_meta_option_and_an_editions_descriptor() -> None:
    pytest.importorskip("confluent_kafka.schema_registry.confluent.meta_pb2")
    assert proto_text(compile_proto(META, {})) == META_FROM_DESCRIPTOR
    # Confluent's converter knows no editions: no syntax line, every singular field `optional`
    assert proto_text(compile_proto(EDITIONS, {})) == EDITIONS_FROM_DESCRIPTOR
    # an editions text is answered as registered (Confluent's parser reads no `edition` statement)
    assert canonical_text(EDITIONS, protobuf_spans(EDITIONS, {})) is None
