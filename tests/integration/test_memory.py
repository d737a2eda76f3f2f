"""Freed log memory goes back to the OS (issue 16): after a topic is deleted or its records are, the resident size of
a process serving fakekafka falls back near where it was, instead of staying at its peak.

Each case runs in a fresh interpreter (a child process): the test process's own heap, hundreds of megabytes after a
long run, would drown the figure."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
MiB = 1 << 20

SCRIPT = r"""
import json, sys, time
import fakekafka

def rss():
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024

case, count, size = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
with fakekafka.Cluster() as cluster:
    cluster.create_topic("big", 1)
    before = rss()
    if case == "small":  # many one-record batches, appended 10,000 a call (a produce per call would take minutes;
        # all in one call outlasted Cluster.call's 30 s wait on a loaded machine)
        from fakekafka.wire.records import build_batch
        def append(first, last):
            p = cluster.state.partition("big", 0)
            for i in range(first, last):
                cluster.state.append(p, build_batch([{"key": None, "value": bytes([i % 256]) * size, "timestamp": 1}]))
        for first in range(0, count, 10_000):
            cluster.call(lambda first=first: append(first, min(first + 10_000, count)))
    else:
        for i in range(count):
            cluster.produce("big", bytes([i % 256]) * size)
    peak = rss()
    if case in ("topic", "small"):
        cluster.delete_topic("big")
    else:
        end = cluster.end_offsets("big")[0]
        cluster.call(lambda: cluster.state.delete_records(cluster.state.partition("big", 0), end))
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and rss() > before + 25 * 1024 * 1024:
        time.sleep(0.1)
    print(json.dumps({"before": before, "peak": peak, "after": rss()}))
"""


@pytest.mark.parametrize(("case", "count", "size"), [
    ("topic", 160, MiB // 2),        # 80 MiB in 512 KiB records
    ("records", 5000, 16 * 1024),   # 80 MiB in 16 KiB records: malloc's heap, not its own mappings
    ("small", 170_000, 100),        # 29 MB of batches, 78 MB in memory: what each batch holds besides its bytes
])
def test_freed_log_memory_is_returned(case: str, count: int, size: int) -> None:
    r = subprocess.run([sys.executable, "-c", SCRIPT, case, str(count), str(size)], cwd=ROOT, capture_output=True,
                       text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    m = json.loads(r.stdout.strip().splitlines()[-1])
    assert m["peak"] > m["before"] + 60 * MiB
    assert m["after"] < m["before"] + 25 * MiB, m
