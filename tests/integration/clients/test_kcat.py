"""kcat (with its own librdkafka, 2.0.2 on Debian) against fakekafka, as a subprocess.

kcat is line-based: producing reads stdin (-K key delimiter, -H headers for every message, -Z empty means
null), consuming prints a -f format. It has no admin API, so topics with configs are made on the cluster.
The simple consumer (-C without -G) needs no consumer group. Skips when kcat is not installed.
"""

from __future__ import annotations

import json
import random
import string
import subprocess
from collections.abc import Callable

import pytest

from fakekafka.testing.handle import ClusterHandle
from fakekafka.wire.records import Compression
from tests.integration.clients.scenarios import (
    CODECS,
    KEEP_FOREVER,
    MANY,
    TIMESTAMPS,
    MiB,
    dropping_produce_responses,
    expected_rows,
    stored,
    stored_codecs,
)

pytestmark = [pytest.mark.clients, pytest.mark.kafka_real]

TIMEOUT = 30.0
FAST = ["-X", "fetch.wait.max.ms=10"]
"""-e stops at an empty fetch; without this every consume waits out librdkafka's 500 ms long poll."""

Kcat = Callable[..., subprocess.CompletedProcess[bytes]]


@pytest.fixture
def run(broker: ClusterHandle, kcat: str) -> Kcat:
    return make_runner(kcat, broker)


def make_runner(kcat: str, cluster: ClusterHandle) -> Kcat:
    def run(*args: str, input: bytes = b"", ok: bool = True) -> subprocess.CompletedProcess[bytes]:
        """Runs kcat against `cluster`; with `ok`, fails the test unless it exits 0."""
        result = subprocess.run([kcat, "-b", cluster.bootstrap_servers, *args], input=input, capture_output=True,
                                timeout=TIMEOUT, check=False)
        if ok:
            assert result.returncode == 0, result.stderr.decode(errors="replace")
        return result
    return run


def consume(run: Kcat, topic: str, fmt: str = "%p|%o|%k|%s|%h\\n", *extra: str) -> list[str]:
    out = run("-C", "-t", topic, "-e", "-o", "beginning", "-Z", "-f", fmt, *FAST, *extra).stdout
    return out.decode().splitlines()


LINES = b"k0:v0\n:no key\nk2:\nk3:v3\n"
"""With -K: and -Z: a keyed record, a null key, a null value and another keyed record."""


def test_produce_consume_keys_headers_nulls(broker: ClusterHandle, run: Kcat) -> None:
    broker.create_topic("plain")
    run("-P", "-t", "plain", "-K", ":", "-Z", "-H", "h1=a", "-H", "dup=1", "-H", "dup=2", "-H", "null",
        input=LINES)
    headers = [("h1", b"a"), ("dup", b"1"), ("dup", b"2"), ("null", None)]
    assert stored(broker, "plain") == [(0, b"k0", b"v0", headers), (1, None, b"no key", headers),
                                       (2, b"k2", None, headers), (3, b"k3", b"v3", headers)]
    h = "h1=a,dup=1,dup=2,null=NULL"
    assert consume(run, "plain") == [f"0|0|k0|v0|{h}", f"0|1|NULL|no key|{h}", f"0|2|k2|NULL|{h}",
                                     f"0|3|k3|v3|{h}"]


def test_empty_is_not_null_without_z(broker: ClusterHandle, run: Kcat) -> None:
    run("-P", "-t", "empty", "-K", ":", input=b":v\nk:\n")
    assert stored(broker, "empty") == [(0, b"", b"v", []), (1, b"k", b"", [])]
    out = run("-C", "-t", "empty", "-e", "-o", "beginning", "-f", "%o|%K|%k|%S|%s\\n", *FAST).stdout
    assert out.decode().splitlines() == ["0|0||1|v", "1|1|k|0|"]  # %K and %S: lengths, -1 for null


@pytest.mark.parametrize("codec", CODECS)
def test_compression(broker: ClusterHandle, run: Kcat, codec: str) -> None:
    broker.create_topic("z")
    text = b"fakekafka speaks the Kafka protocol. " * 20
    lines = b"".join(b"k%d:%s%d\n" % (i, text, i) for i in range(10))
    # a batch of exactly the ten lines is sent once full, never earlier (the linger is far away)
    run("-P", "-t", "z", "-K", ":", "-X", f"compression.codec={codec}", "-X", "linger.ms=60000",
        "-X", "batch.num.messages=10", input=lines)
    assert stored_codecs(broker, "z") == [Compression[codec.upper()]]
    want = [(i, b"k%d" % i, b"%s%d" % (text, i), []) for i in range(10)]
    assert stored(broker, "z") == want
    assert consume(run, "z", "%o|%k|%s\\n") == [f"{o}|{k.decode()}|{v.decode()}" for o, k, v, _ in want]


def test_one_mib_record(broker: ClusterHandle, run: Kcat) -> None:
    big = "".join(random.Random(1).choices(string.ascii_letters, k=MiB)).encode()  # one line, no delimiter
    broker.create_topic("big", configs={"max.message.bytes": str(2 * MiB)})
    run("-P", "-t", "big", "-X", f"message.max.bytes={2 * MiB}", input=big + b"\n")
    assert stored(broker, "big") == [(0, None, big, [])]
    out = run("-C", "-t", "big", "-e", "-o", "beginning", "-f", "%o %S %s", *FAST).stdout
    assert out == b"0 %d " % MiB + big

    # the broker default max.message.bytes (1048588) cannot hold 1 MiB plus the batch overhead
    broker.create_topic("small")
    result = run("-P", "-t", "small", "-X", f"message.max.bytes={2 * MiB}", "-X", "retries=0", input=big + b"\n",
                 ok=False)
    assert result.returncode != 0
    assert b"Message size too large" in result.stderr
    assert broker.end_offsets("small") == {0: 0}


def test_hundred_partitions(broker: ClusterHandle, kcat: str) -> None:
    broker.create_topic("wide", 100)
    # one kcat per partition (-p), all at once
    procs = [subprocess.Popen([kcat, "-b", broker.bootstrap_servers, "-P", "-t", "wide", "-p", str(i)],
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
             for i in range(100)]
    for i, p in enumerate(procs):
        _, err = p.communicate(b"p%d\n" % i, timeout=TIMEOUT)
        assert p.returncode == 0, err.decode(errors="replace")
    assert broker.end_offsets("wide") == {i: 1 for i in range(100)}
    assert [(r.offset, r.value) for r in broker.records("wide")] == [(0, b"p%d" % i) for i in range(100)]

    lines = consume(make_runner(kcat, broker), "wide", "%p|%o|%s\\n")
    assert sorted(lines) == sorted(f"{i}|0|p{i}" for i in range(100))


def test_offsets_by_time(broker: ClusterHandle, run: Kcat) -> None:
    broker.create_topic("times", configs=KEEP_FOREVER)
    for ts in TIMESTAMPS:
        broker.produce("times", str(ts).encode(), timestamp=ts)

    def query(ts: int) -> int:
        out = json.loads(run("-Q", "-J", "-t", f"times:0:{ts}").stdout)
        return out["times"]["0"]["offset"]
    assert query(TIMESTAMPS[2]) == 2
    assert query(TIMESTAMPS[2] - 1) == 2
    assert query(0) == 0
    assert query(TIMESTAMPS[-1] + 1) == -1  # no record that late: the end

    assert consume(run, "times", "%o|%T\\n", "-o", f"s@{TIMESTAMPS[2]}") == [f"{i}|{TIMESTAMPS[i]}"
                                                                             for i in range(2, 5)]
    out = run("-C", "-t", "times", "-o", "beginning", "-o", f"e@{TIMESTAMPS[2]}", "-f", "%o\\n", *FAST).stdout
    assert out.decode().splitlines() == ["0", "1"]


def test_metadata(broker: ClusterHandle, run: Kcat) -> None:
    broker.create_topic("m", 3)
    md = json.loads(run("-L", "-J").stdout)
    host, port = broker.bootstrap_servers.rsplit(":", 1)
    assert md["brokers"] == [{"id": 1, "name": f"{host}:{port}"}]
    assert md["controllerid"] == 1
    [topic] = [t for t in md["topics"] if not t["topic"].startswith("__")]  # Kafka lists __consumer_offsets
    assert topic["topic"] == "m"
    assert [(p["partition"], p["leader"], p["replicas"], p["isrs"]) for p in topic["partitions"]] == [
        (i, 1, [{"id": 1}], [{"id": 1}]) for i in range(3)]


def test_auto_create_topic(broker: ClusterHandle, run: Kcat) -> None:
    run("-P", "-t", "fresh", "-K", ":", input=b"k:v\n")
    assert broker.topics() == ["fresh"]
    assert stored(broker, "fresh") == [(0, b"k", b"v", [])]


@pytest.mark.fakekafka(auto_create_topics=False)
def test_auto_create_disabled(broker: ClusterHandle, run: Kcat) -> None:
    result = run("-P", "-t", "missing", "-X", "topic.metadata.propagation.max.ms=100", input=b"x\n", ok=False)
    assert result.returncode != 0
    assert b"Unknown topic or partition" in result.stderr
    result = run("-C", "-t", "missing", "-e", "-o", "beginning", ok=False)
    assert result.returncode != 0
    assert b"Unknown topic or partition" in result.stderr
    [topic] = json.loads(run("-L", "-J", "-t", "missing").stdout)["topics"]
    assert topic["error"] == "Broker: Unknown topic or partition"
    assert broker.topics() == []


@pytest.mark.fakekafka_only  # the proxy must be what Metadata advertises: fakekafka's model is changed
def test_idempotent_retry_is_deduplicated(broker: ClusterHandle, run: Kcat) -> None:
    """librdkafka 2.0.2 retries the batches whose responses were lost with their sequences; stored once.
    -E: kcat otherwise exits when its only broker connection drops ("all brokers down")."""
    broker.create_topic("idem")
    with dropping_produce_responses(broker, drops=2) as proxy:
        lines = b"".join(b"k%d:v%d\n" % (i, i) for i in range(100))
        run("-E", "-P", "-t", "idem", "-K", ":", "-X", "enable.idempotence=true", "-X", "batch.num.messages=5",
            "-X", "linger.ms=1", input=lines)
        assert len(proxy.dropped) == 2, "the proxy lost fewer Produce responses than planned"
    assert stored(broker, "idem") == expected_rows(MANY)
