"""Every generated declaration, every version: round trips, defaults, tagged fields, malformed input."""

from __future__ import annotations

import io
import random
import uuid
from typing import Any

import pytest
from construct import Container

from fakekafka import wire
from fakekafka.wire.messages import API_MODULES, api_module
from fakekafka.wire.primitives import (
    UNKNOWN_TAGS,
    Bool,
    Message,
    NullableStruct,
    Uuid,
    _Array,
    _Sized,
    _ZigZag,
)
from fakekafka.wire.protocol import request_struct, response_struct

INT_RANGES = {1: (-128, 127), 2: (-(2**15), 2**15 - 1), 4: (-(2**31), 2**31 - 1), 8: (-(2**63), 2**63 - 1)}


def sample(sub: Any, rng: random.Random, depth: int = 0) -> Any:
    """A random value that `sub` can encode, with nulls and empties where the type allows them."""
    if isinstance(sub, Message):
        obj = Container()
        for f in sub.fields:
            obj[f.name] = sample(f.subcon, rng, depth + 1)
        for t in sub.tagged.values():
            if rng.random() < 0.5:
                obj[t.name] = sample(t.subcon, rng, depth + 1)
            else:
                obj[t.name] = t.default_value()
        return obj
    if isinstance(sub, NullableStruct):
        return None if rng.random() < 0.3 else sample(sub.subcon, rng, depth)
    if isinstance(sub, _Array):
        if sub.nullable and rng.random() < 0.2:
            return None
        return [sample(sub.subcon, rng, depth + 1) for _ in range(rng.randint(0, 2 if depth < 4 else 0))]
    if isinstance(sub, _Sized):
        if sub.nullable and rng.random() < 0.2:
            return None
        if sub.text:
            return rng.choice(["", "topic-a", "ünïcødé ✓", "x" * rng.randint(1, 40)])
        return bytes(rng.getrandbits(8) for _ in range(rng.randint(0, 20)))
    if sub is Bool:
        return rng.random() < 0.5
    if sub is Uuid:
        return uuid.UUID(int=rng.getrandbits(128))
    if isinstance(sub, _ZigZag):
        return rng.randint(-1000, 1000)
    fmt = getattr(sub, "fmtstr", None)
    if fmt is not None:
        if fmt.endswith("d"):
            return rng.choice([0.0, 1.5, -2.25])
        size = sub.sizeof()
        if fmt[-1].isupper():
            return rng.randint(0, 2 ** (8 * size) - 1)
        lo, hi = INT_RANGES[size]
        return rng.choice([lo, -1, 0, 1, hi, rng.randint(lo, hi)])
    raise AssertionError(f"no sampler for {sub!r}")


def strip_unknown(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: strip_unknown(v) for k, v in value.items() if k != UNKNOWN_TAGS and not k.startswith("_")}
    if isinstance(value, list):
        return [strip_unknown(v) for v in value]
    return value


def all_pairs() -> list[tuple[int, int, str]]:
    out = []
    for key, (name, _, lo, hi, _) in sorted(API_MODULES.items()):
        for v in range(lo, hi + 1):
            out.append((key, v, name))
    return out


PAIRS = all_pairs()


@pytest.mark.parametrize(("api_key", "version", "name"), PAIRS, ids=[f"{n}v{v}" for _, v, n in PAIRS])
def test_round_trip_every_declared_version(api_key: int, version: int, name: str) -> None:
    rng = random.Random(f"{api_key}/{version}")
    for struct in (request_struct(api_key, version), response_struct(api_key, version)):
        for _ in range(3):
            value = sample(struct, rng)
            data = struct.build(value)
            parsed = struct.parse(data)
            assert strip_unknown(parsed) == strip_unknown(value)
            assert struct.build(parsed) == data


def test_missing_fields_take_schema_defaults() -> None:
    body = response_struct(0, 8).parse(response_struct(0, 8).build({"responses": [{"name": "t",
                                                                                   "partition_responses": [{}]}]}))
    p = body.responses[0].partition_responses[0]
    assert (p.base_offset, p.log_append_time_ms, p.log_start_offset, p.error_message) == (0, -1, -1, None)


def test_tagged_fields_written_only_when_not_default() -> None:
    struct = response_struct(1, 12)
    partition = {"partition_index": 0, "records": b""}
    plain = struct.build({"responses": [{"topic": "t", "partitions": [partition]}]})
    with_leader = struct.build({"responses": [{"topic": "t", "partitions": [
        {**partition, "current_leader": {"leader_id": 3, "leader_epoch": 7}}]}]})
    assert len(with_leader) > len(plain)
    parsed = struct.parse(with_leader).responses[0].partitions[0]
    assert parsed.current_leader == {"leader_id": 3, "leader_epoch": 7}
    # a tagged struct equal to its default is not written at all
    same = struct.build({"responses": [{"topic": "t", "partitions": [
        {**partition, "current_leader": {"leader_id": -1, "leader_epoch": -1}}]}]})
    assert same == plain


def test_api_versions_v3_response_carries_no_optional_tags() -> None:
    """librdkafka 2.0.2 cannot parse a v3 ApiVersions response with trailing tagged fields."""
    data = response_struct(18, 3).build({"api_keys": [{"api_key": 18, "min_version": 0, "max_version": 4}]})
    assert data.endswith(b"\x00\x00\x00\x00\x00")  # throttle_time_ms 0, then an empty tag section
    assert data == bytes.fromhex("0000" "02" "0012" "0000" "0004" "00" "00000000" "00")


def test_unknown_tags_are_kept_and_re_emitted() -> None:
    struct = request_struct(3, 12)
    data = bytearray(struct.build({"topics": None}))
    assert data[-1] == 0
    data[-1:] = bytes([1, 42, 3]) + b"abc"  # one tagged field: tag 42, 3 bytes
    parsed = struct.parse(bytes(data))
    assert parsed[UNKNOWN_TAGS] == [(42, b"abc")]
    assert struct.build(parsed) == bytes(data)


def test_request_header_and_frame() -> None:
    frame = wire.encode_request(3, 12, 99, {"topics": None}, client_id="me")
    assert int.from_bytes(frame[:4], "big") == len(frame) - 4
    req = wire.decode_request(frame[4:])
    assert (req.api_key, req.api_version, req.correlation_id, req.client_id) == (3, 12, 99, "me")
    assert req.body.topics is None


def test_api_versions_response_uses_header_v0() -> None:
    frame = wire.encode_response(18, 3, 5, {"api_keys": []})
    # size, correlation id, then straight to the body: no tag section after the correlation id
    assert frame[4:8] == (5).to_bytes(4, "big") and frame[8:10] == b"\x00\x00"


# --- malformed input ------------------------------------------------------------------------------

def _produce_frame() -> bytes:
    return wire.encode_request(0, 9, 1, {"acks": -1, "timeout_ms": 100, "topic_data": [
        {"name": "t", "partition_data": [{"index": 0, "records": b"x" * 30}]}]})[4:]


def test_every_truncation_is_a_decode_error() -> None:
    frame = _produce_frame()
    for cut in range(len(frame)):
        with pytest.raises(wire.DecodeError):
            wire.decode_request(frame[:cut])


@pytest.mark.parametrize("mutation", [
    ("huge array count", lambda f: f[:22] + b"\x7f\xff\xff\xff" + f[26:]),
    ("garbage", lambda f: f[:10] + b"\x7f" * 64),
])
def test_corrupted_bytes_raise_decode_error_not_crash(mutation: tuple[str, Any]) -> None:
    frame = wire.encode_request(3, 8, 1, {"topics": [{"name": "t"}], "allow_auto_topic_creation": True})[4:]
    with pytest.raises(wire.DecodeError):
        wire.decode_request(mutation[1](frame))


def test_malformed_utf8_becomes_replacement_characters_as_in_java() -> None:
    """Kafka reads strings with Java's new String(bytes, UTF_8): a request with malformed UTF-8 in a name is
    answered (INVALID_TOPIC_EXCEPTION and the like), not refused as malformed."""
    frame = wire.encode_request(3, 8, 1, {"topics": [{"name": "QQQQ"}], "allow_auto_topic_creation": True},
                                client_id="QQQQ")[4:]
    request = wire.decode_request(frame.replace(b"QQQQ", b"\xff\xfeab"))
    assert request.client_id == request.body.topics[0].name == "\ufffd\ufffdab"


def test_random_garbage_never_escapes_as_another_error() -> None:
    rng = random.Random(7)
    base = _produce_frame()
    for _ in range(500):
        data = bytearray(base)
        for _ in range(rng.randint(1, 6)):
            data[rng.randrange(8, len(data))] = rng.getrandbits(8)
        try:
            wire.decode_request(bytes(data))
        except wire.DecodeError as e:
            assert e.what
        except Exception as e:  # noqa: BLE001
            pytest.fail(f"{type(e).__name__} escaped: {e}")


def test_negative_length_on_non_nullable_string_is_rejected() -> None:
    frame = bytearray(wire.encode_request(3, 1, 1, {"topics": [{"name": "t"}]})[4:])
    pos = frame.index(b"\x00\x01t")
    frame[pos:pos + 2] = b"\xff\xff"
    with pytest.raises(wire.DecodeError, match="not allowed"):
        wire.decode_request(bytes(frame))


def test_unknown_api_key() -> None:
    with pytest.raises(wire.UnknownApiKey):
        wire.decode_request(b"\x03\xe7\x00\x00\x00\x00\x00\x01\x00\x00")


def test_decode_error_says_where() -> None:
    with pytest.raises(wire.DecodeError) as e:
        wire.decode_request(_produce_frame()[:20])
    assert "Produce" in str(e.value) and e.value.offset is not None


def test_generated_modules_are_lazy_and_complete() -> None:
    for key in API_MODULES:
        mod = api_module(key)
        lo, hi = mod.VERSIONS
        assert len(mod.REQUEST) == len(mod.RESPONSE) == hi - lo + 1


def test_varints_zigzag() -> None:
    from fakekafka.wire.primitives import Varint, Varlong
    for n in (0, -1, 1, 63, -64, 64, 2**31 - 1, -(2**31)):
        s = io.BytesIO()
        Varint._build(n, s, None, "")
        assert Varint.parse(s.getvalue()) == n
    s = io.BytesIO()
    Varlong._build(-(2**63), s, None, "")
    assert Varlong.parse(s.getvalue()) == -(2**63)
    assert Varint.build(-1) == b"\x01" and Varint.build(1) == b"\x02"


def test_a_length_past_any_buffer_is_a_decode_error_that_says_so() -> None:
    from fakekafka.wire.primitives import CompactNullableBytes, write_uvarint
    from fakekafka.wire.protocol import parse_body

    for claimed in (10, 2**31, 2**62):
        s = io.BytesIO()
        write_uvarint(claimed + 1, s, "")
        s.write(b"abc")
        with pytest.raises(wire.DecodeError, match=f"length {claimed} runs past the end"):
            parse_body(CompactNullableBytes, io.BytesIO(s.getvalue()), "X")
