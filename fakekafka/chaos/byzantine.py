"""The byzantine faults: answers no Apache Kafka broker gives, drawn only when asked for by name (the `byzantine`
profile, a profile's `byzantine_rate`, or a schedule's `corrupt_crc` / `out_of_order` steps), to see what a
client does with a broken broker or a broken network path: a Fetch answer's first batch with its CRC corrupted
(a client that checks CRCs reports the corruption), or its first two batches served out of offset order."""

from __future__ import annotations

from typing import Any

from fakekafka.wire.records import BATCH_OVERHEAD, read_header

__all__ = ["BYZANTINE_KINDS", "corrupt_crc", "out_of_order"]

BYZANTINE_KINDS = {
    "corrupt_crc": "byzantine, not something Kafka does: the Fetch answer's first record batch served with its CRC "
                   "corrupted (a disk or network fault Kafka's own checks would catch); a client checking CRCs "
                   "reports it as a corrupt record",
    "out_of_order": "byzantine, not something Kafka does: the Fetch answer's first two record batches served in "
                    "the wrong offset order",
}

_CRC_AT = 17
"""A v2 batch's CRC: after base offset (8), length (4), partition leader epoch (4) and magic (1)."""


def _partitions_with_records(answer: dict[str, Any]) -> list[dict[str, Any]]:
    return [p for t in answer.get("responses") or () for p in t.get("partitions") or () if p.get("records")]


def _joined(records: Any) -> bytearray:
    parts = records if isinstance(records, (tuple, list)) else (records,)
    return bytearray(b"".join(bytes(r) for r in parts))


def corrupt_crc(answer: dict[str, Any]) -> dict[str, Any]:
    """The first partition's first batch with one CRC byte flipped (its records untouched)."""
    for p in _partitions_with_records(answer):
        data = _joined(p["records"])
        if len(data) >= BATCH_OVERHEAD:
            data[_CRC_AT] ^= 0xFF
            p["records"] = bytes(data)
            break
    return answer


def out_of_order(answer: dict[str, Any]) -> dict[str, Any]:
    """The first partition holding two whole batches with those two swapped."""
    for p in _partitions_with_records(answer):
        data = _joined(p["records"])
        if len(data) < BATCH_OVERHEAD:
            continue
        first = read_header(data).size
        if len(data) - first < BATCH_OVERHEAD:
            continue
        second = read_header(data, first).size
        if first + second > len(data):
            continue
        p["records"] = bytes(data[first:first + second] + data[:first] + data[first + second:])
        break
    return answer
