"""Freed log memory goes back to the OS (issue 16): after a topic is deleted or its records are, the process's
resident size falls back near where it was, instead of staying at its peak."""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest

import fakekafka

MiB = 1 << 20


def _rss() -> int:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    raise AssertionError("no VmRSS")


def _settles_below(limit: int, seconds: float = 10) -> int:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if (now := _rss()) < limit:
            return now
        time.sleep(0.1)
    return _rss()


@pytest.fixture
def cluster() -> Iterator[fakekafka.Cluster]:
    with fakekafka.Cluster() as c:
        yield c


def test_a_deleted_topics_memory_is_returned(cluster: fakekafka.Cluster) -> None:
    cluster.create_topic("big", 1)
    before = _rss()
    for i in range(160):  # 80 MiB in 512 KiB records
        cluster.produce("big", bytes([i % 256]) * (MiB // 2))
    assert _rss() > before + 60 * MiB
    cluster.delete_topic("big")
    assert _settles_below(before + 25 * MiB) < before + 25 * MiB


def test_deleted_records_memory_is_returned(cluster: fakekafka.Cluster) -> None:
    cluster.create_topic("small", 1)
    before = _rss()
    for i in range(5000):  # 80 MiB in 16 KiB records: malloc's heap, not its own mappings
        cluster.produce("small", bytes([i % 256]) * (16 * 1024))
    assert _rss() > before + 60 * MiB
    end = cluster.end_offsets("small")[0]
    cluster.call(lambda: cluster.state.delete_records(cluster.state.partition("small", 0), end))
    assert _settles_below(before + 25 * MiB) < before + 25 * MiB
