"""In-place varint readers of wire/primitives.py."""

from __future__ import annotations

import pytest

from fakekafka.wire.primitives import uvarint_at, uvarint_bytes, varint_at


@pytest.mark.parametrize("value", [0, 1, 63, 64, 127, 128, 300, 2**31 - 1, 2**63 - 1])
def test_varints_read_in_place_match_the_stream_codec(value: int) -> None:
    """uvarint_at/varint_at (record batches, request headers, markers) agree with the construct codec."""
    data = b"\xff" + uvarint_bytes(value) + b"tail"
    assert uvarint_at(data, 1) == (value, len(data) - 4)
    for signed in (value // 2, -(value // 2) - 1):
        zigzag = uvarint_bytes((signed << 1) ^ (signed >> 63))
        assert varint_at(zigzag, 0) == (signed, len(zigzag))


@pytest.mark.parametrize(("data", "max_bytes"), [(b"", 10), (b"\x80", 10), (b"\x80\x80\x80\x80\x80\x01", 5)])
def test_truncated_or_overlong_varints_are_refused(data: bytes, max_bytes: int) -> None:
    with pytest.raises(ValueError, match="varint"):
        uvarint_at(data, 0, max_bytes)
