"""What a request was, as the broker or the proxy saw it: the record request listeners get, the request log keeps
and recordings hold (a row of fakekafka/observe/recording.py's Parquet files)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

__all__ = ["RequestRecord", "error_codes_in"]


@dataclass(frozen=True, slots=True)
class RequestRecord:
    """One request as the server saw it: what a failing test's report shows."""

    time_ms: int
    broker: int
    client: str
    client_id: str | None
    api: str
    version: int
    correlation_id: int
    latency_ms: float
    error_codes: tuple[str, ...]
    wall_time: float = 0.0
    """Unix time (s) the request was received: recordings are read on a real time line."""
    client_software_name: str | None = None
    client_software_version: str | None = None
    request_bytes: int = 0
    response_bytes: int = 0
    topics: tuple[tuple[str, int], ...] = ()
    """(topic, partition) the request touched (partition -1: the topic as a whole); filled for listeners only."""
    groups: tuple[str, ...] = ()
    records: int = 0
    """Records produced (Produce) or returned (Fetch)."""
    generation_id: int | None = None
    member_id: str | None = None
    partition_records: tuple[int, ...] = ()
    """Records per entry of `topics` (same order), for Produce and Fetch; empty otherwise."""


def error_codes_in(result: Any, found: set[int]) -> set[int]:
    """Every non-zero `error_code` in a decoded answer, added to `found`. A Kafka array holds one kind of
    element, so an array whose first element is not a struct (partition numbers, ids) is not walked: every
    answer passes through here."""
    if isinstance(result, dict):
        for key, value in result.items():
            if key == "error_code":
                if value:
                    found.add(int(value))
            elif isinstance(value, dict) or (isinstance(value, list) and value
                                             and isinstance(value[0], (dict, list))):
                error_codes_in(value, found)
    elif isinstance(result, list):
        for item in result:
            if isinstance(item, (dict, list)):
                error_codes_in(item, found)
    return found
