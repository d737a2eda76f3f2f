"""The compiled parse and build of every declared message give what the generic field walk gives:
the same bytes, the same values, and for bad input the same error (type, message, field path, offset)."""

from __future__ import annotations

import io
import random
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import pytest
from construct import ConstructError, Container

from fakekafka import wire
from fakekafka.wire.primitives import Message, NullableStruct, _Array
from fakekafka.wire.protocol import request_struct, response_struct
from tests.unit.wire.test_messages import PAIRS, sample


def _messages(sub: Any, seen: dict[int, Message]) -> None:
    if isinstance(sub, Message):
        if id(sub) in seen:
            return
        seen[id(sub)] = sub
        for f in (*sub.fields, *sub.tagged.values()):
            _messages(f.subcon, seen)
    elif isinstance(sub, (_Array, NullableStruct)):
        _messages(sub.subcon, seen)


@contextmanager
def generic(struct: Message) -> Iterator[None]:
    """Every message inside `struct` walks its fields generically while inside the block."""
    seen: dict[int, Message] = {}
    _messages(struct, seen)
    saved = {i: (m.__dict__.get("_parse"), m.__dict__.get("_build")) for i, m in seen.items()}
    for m in seen.values():
        m._parse, m._build = m._parse_generic, m._build_generic  # type: ignore[method-assign]
    try:
        yield
    finally:
        for i, m in seen.items():
            for name, fn in zip(("_parse", "_build"), saved[i], strict=True):
                if fn is None:
                    m.__dict__.pop(name, None)
                else:
                    m.__dict__[name] = fn


def _typed(value: Any) -> Any:
    """`value` with every leaf's type beside it: True and 1 compare equal, a parsed bool and int must not."""
    if isinstance(value, dict):
        return (type(value).__name__, [(k, _typed(v)) for k, v in value.items()])
    if isinstance(value, list):
        return [_typed(v) for v in value]
    return (type(value).__name__, value)


def _outcome(fn: Callable[[], Any], stream: io.BytesIO | None = None) -> tuple[Any, ...]:
    try:
        value = fn()
    except ConstructError as e:
        return ("error", type(e).__name__, str(e).split("\n", 1)[-1], e.path, stream.tell() if stream else None)
    except (UnicodeDecodeError, ValueError, OverflowError) as e:  # what parse_body turns into DecodeError too
        return ("error", type(e).__name__, str(e), None, stream.tell() if stream else None)
    return ("ok", _typed(value), stream.tell() if stream else None)


def _parse(struct: Message, data: bytes) -> tuple[Any, ...]:
    stream = io.BytesIO(data)
    return _outcome(lambda: struct._parse(stream, Container(), "Top"), stream)


def _build(struct: Message, value: Any) -> tuple[Any, ...]:
    stream = io.BytesIO()
    out = _outcome(lambda: struct._build(value, stream, Container(), "Top"))
    return out if out[0] == "error" else ("ok", stream.getvalue())


def _break_one_field(value: Any, rng: random.Random) -> bool:
    """Puts a value no field kind accepts (a string where a number goes, or a number out of range)
    somewhere inside `value`; False if it holds nothing to break."""
    if isinstance(value, dict):
        keys = [k for k, v in value.items() if not k.startswith("_") and v is not None]
        rng.shuffle(keys)
        for k in keys:
            v = value[k]
            if isinstance(v, bool) or not isinstance(v, (int, dict, list)):
                continue
            if isinstance(v, int):
                value[k] = rng.choice(["not a number", 2**64, -(2**64)])
                return True
            if _break_one_field(v, rng):
                return True
    elif isinstance(value, list):
        for item in value:
            if _break_one_field(item, rng):
                return True
    return False


@pytest.mark.parametrize(("api_key", "version", "name"), PAIRS, ids=[f"{n}v{v}" for _, v, n in PAIRS])
def test_compiled_matches_generic(api_key: int, version: int, name: str) -> None:
    rng = random.Random(f"compiled/{api_key}/{version}")
    for struct in (request_struct(api_key, version), response_struct(api_key, version)):
        for _ in range(3):
            value = sample(struct, rng)
            built = _build(struct, value)
            with generic(struct):
                assert _build(struct, value) == built
            assert built[0] == "ok"
            data = built[1]
            cuts = sorted({0, len(data), *(rng.randrange(len(data) + 1) for _ in range(12))})
            for cut in cuts:
                parsed = _parse(struct, data[:cut])
                with generic(struct):
                    assert _parse(struct, data[:cut]) == parsed, f"cut at {cut} of {len(data)}"
            for _ in range(8):  # flipped bytes: other lengths, counts, booleans, tags
                bad = bytearray(data)
                if bad:
                    bad[rng.randrange(len(bad))] = rng.choice([0x00, 0x02, 0x7F, 0x80, 0xFF])
                parsed = _parse(struct, bytes(bad))
                with generic(struct):
                    assert _parse(struct, bytes(bad)) == parsed
            if _break_one_field(value, rng):
                broken = _build(struct, value)
                with generic(struct):
                    assert _build(struct, value) == broken
                assert broken[0] == "error"


def test_defaults_fill_missing_fields_when_compiled() -> None:
    struct = response_struct(1, 16)
    value = {"responses": [{"topic_id": b"\x00" * 16, "partitions": [{"partition_index": 3}]}]}
    built = _build(struct, value)
    with generic(struct):
        assert _build(struct, value) == built


def test_decode_error_names_the_field_path() -> None:
    frame = wire.encode_request(1, 11, 7, {"max_wait_ms": 500, "topics": [
        {"topic": "t", "partitions": [{"partition": 0, "fetch_offset": 5}]}]})[4:]
    cut = frame.index(b"\x00\x00\x00\x00\x00\x00\x00\x05") + 3  # inside fetch_offset
    with pytest.raises(wire.DecodeError) as e:
        wire.decode_request(frame[:cut])
    assert e.value.where == "FetchRequestV11 -> topics -> partitions -> fetch_offset"


def test_each_message_is_compiled_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """Arrays hold their element's lazy method through a whole loop, and a nested struct field is
    called from its parent's compiled code: neither may compile the message again."""
    from fakekafka.wire.primitives import Array, Field, Int32, String

    compiled: list[int] = []
    real = wire.compiled.compile_message

    def counting(msg: Message) -> Any:
        compiled.append(id(msg))
        return real(msg)

    monkeypatch.setattr(Message, "compiler", counting)
    inner = Message(Field("n", Int32, 0))
    nested = Message(Field("s", String, ""), Field("inner", inner, None))
    top = Message(Field("items", Array(nested), list), Field("direct", inner, None))
    value = {"items": [{"s": str(i), "inner": {"n": i}} for i in range(5)], "direct": {"n": 9}}
    for _ in range(3):
        data = top.build(value)
        assert top.parse(data)["items"][4].inner.n == 4
    assert sorted(compiled) == sorted({id(top), id(nested), id(inner)})


def test_parsed_fields_are_read_without_containers_getattr(monkeypatch: pytest.MonkeyPatch) -> None:
    """A compiled parse's Container answers its fields' names from its class, not through construct's
    `__getattr__` (half a microsecond a read, run after Python's own lookup has failed); everything else reads
    as a Container's: keys, methods, a field the version lacks, a field set, a copy or pickle."""
    import copy
    import pickle
    import uuid

    topic_id = uuid.uuid4()
    body = wire.decode_request(wire.encode_request(
        wire.ApiKey.CONSUMER_GROUP_HEARTBEAT, 0, 1, {"group_id": "g", "member_id": "m", "member_epoch": 3,
                                                     "topic_partitions": [{"topic_id": topic_id, "partitions": [1]}]})
        [4:]).body
    assert body is not None
    fallbacks: list[str] = []
    real = Container.__getattr__

    def counting(self: Container, name: str) -> Any:
        fallbacks.append(name)
        return real(self, name)

    monkeypatch.setattr(Container, "__getattr__", counting)
    assert (body.group_id, body.member_epoch, body.topic_partitions[0].topic_id) == ("g", 3, topic_id)
    assert fallbacks == []
    assert not hasattr(body, "subscribed_topic_regex")  # a v1 field: looked up, not there
    assert fallbacks == ["subscribed_topic_regex"]
    assert callable(body.items) and body["member_id"] == "m" and isinstance(body, Container)
    body.group_id = "h"
    assert (body.group_id, body["group_id"]) == ("h", "h")
    for other in (copy.copy(body), copy.deepcopy(body), pickle.loads(pickle.dumps(body))):
        assert type(other) is Container and other == body
    during_repr: list[list[str]] = []

    class Probe:
        def __repr__(self) -> str:
            during_repr.append(list(body))
            return "probe"

    body["probe"] = Probe()  # construct's repr holds a recursion lock: in its slot, not among the fields
    assert "probe=probe" in repr(body) and "__recursion_lock__" not in during_repr[0]
