"""The byzantine faults: answers no Apache Kafka broker gives, drawn only when asked for by name (the `byzantine`
profile, a profile's `byzantine_rate`, or a schedule's `corrupt_crc` / `out_of_order` / `reordered_records` steps),
to see what a client does with a broken broker or a broken network path: a Fetch answer's first batch with its CRC
corrupted (a client that checks CRCs reports the corruption), its first two batches served out of offset order, or
the first two records inside one batch swapped (offset deltas out of order, the CRC recomputed: only the order is
wrong, so no CRC check catches it)."""

from __future__ import annotations

from typing import Any

from fakekafka.wire.records import BATCH_OVERHEAD, InvalidBatch, decode_batch, read_header, rebuild_batch

__all__ = ["BYZANTINE_EDITS", "BYZANTINE_KINDS", "corrupt_crc", "out_of_order", "reordered_records"]

BYZANTINE_KINDS = {
    "corrupt_crc": "byzantine, not something Kafka does: the Fetch answer's first record batch served with its CRC "
                   "corrupted (a disk or network fault Kafka's own checks would catch); a client checking CRCs "
                   "reports it as a corrupt record",
    "out_of_order": "byzantine, not something Kafka does: the Fetch answer's first two record batches served in "
                    "the wrong offset order",
    "reordered_records": "byzantine, not something Kafka does: inside the Fetch answer's first batch of several "
                         "records, its first two records swapped (their offset deltas out of order), the CRC "
                         "recomputed so that only the order is wrong",
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


def reordered_records(answer: dict[str, Any]) -> dict[str, Any]:
    """The first batch holding two records or more with its first two swapped: each record keeps its offset delta
    and timestamp, the batch its header fields, and the CRC is computed afresh over the reordered records."""
    for p in _partitions_with_records(answer):
        data = _joined(p["records"])
        pos = 0
        while len(data) - pos >= BATCH_OVERHEAD:
            header = read_header(data, pos)
            end = pos + header.size
            if end > len(data):
                break
            if header.records_count >= 2 and not header.is_control:
                try:
                    batch = decode_batch(bytes(data[pos:end]))
                except InvalidBatch:  # not a batch this can rewrite: left as served
                    break
                records = batch.records
                records[0], records[1] = records[1], records[0]
                p["records"] = bytes(data[:pos] + rebuild_batch(header, records) + data[end:])
                return answer
            pos = end
    return answer


BYZANTINE_EDITS = {"corrupt_crc": corrupt_crc, "out_of_order": out_of_order, "reordered_records": reordered_records}
"""Each byzantine kind's edit of a Fetch answer."""
