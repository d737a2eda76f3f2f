"""A process whose asyncio runs on uvloop (`uvloop.install()`, a pytest-asyncio loop factory) still gets a cluster
that answers: fakekafka serves on asyncio's own selector loop, in a thread of its own when the caller's loop is
another kind."""

from __future__ import annotations

import asyncio
import signal
import subprocess
import sys
from collections.abc import Iterator

import pytest
import uvloop

import fakekafka
from fakekafka.net.loop_thread import LoopThread


@pytest.fixture
def uvloop_policy() -> Iterator[None]:
    """uvloop's policy for the test, as `uvloop.install()` sets it; asyncio's again afterwards."""
    before = asyncio.get_event_loop_policy()
    asyncio.set_event_loop_policy(uvloop.EventLoopPolicy())
    try:
        yield
    finally:
        asyncio.set_event_loop_policy(before)


def _round_trip(bootstrap: str, topic: str) -> list[bytes]:
    from kafka import KafkaConsumer, KafkaProducer

    producer = KafkaProducer(bootstrap_servers=bootstrap, request_timeout_ms=10_000, max_block_ms=10_000)
    try:
        producer.send(topic, b"one").get(10)
        producer.send(topic, b"two").get(10)
    finally:
        producer.close()
    consumer = KafkaConsumer(topic, bootstrap_servers=bootstrap, auto_offset_reset="earliest",
                             consumer_timeout_ms=10_000)
    try:
        values = []
        for record in consumer:
            values.append(record.value)
            if len(values) == 2:
                break
        return values
    finally:
        consumer.close()


def test_a_cluster_started_under_uvloops_policy_serves_on_asyncios_loop(uvloop_policy: None) -> None:
    assert isinstance(asyncio.new_event_loop(), uvloop.Loop)  # what the policy gives anyone else
    thread = LoopThread().start()
    try:
        assert isinstance(thread.loop, asyncio.SelectorEventLoop)
    finally:
        thread.stop()
    with fakekafka.Cluster() as cluster:
        assert _round_trip(cluster.bootstrap_servers, "under-uvloop") == [b"one", b"two"]


def test_async_with_on_a_uvloop_loop_serves_aiokafka_in_that_loop() -> None:
    from aiokafka import AIOKafkaConsumer, AIOKafkaProducer

    async def main() -> tuple[list[bytes], dict[int, int]]:
        assert isinstance(asyncio.get_running_loop(), uvloop.Loop)
        async with fakekafka.Cluster() as cluster:
            producer = AIOKafkaProducer(bootstrap_servers=cluster.bootstrap_servers)
            await producer.start()
            try:
                await producer.send_and_wait("async-uvloop", b"a")
                await producer.send_and_wait("async-uvloop", b"b")
            finally:
                await producer.stop()
            consumer = AIOKafkaConsumer("async-uvloop", bootstrap_servers=cluster.bootstrap_servers,
                                        auto_offset_reset="earliest")
            await consumer.start()
            try:
                values = [(await consumer.getone()).value for _ in range(2)]
            finally:
                await consumer.stop()
            return values, cluster.end_offsets("async-uvloop")  # the model, reached from the caller's loop

    with asyncio.Runner(loop_factory=uvloop.new_event_loop) as runner:
        assert runner.run(asyncio.wait_for(main(), 60)) == ([b"a", b"b"], {0: 2})


def test_serve_runs_on_asyncios_loop_when_the_interpreter_installed_uvloop() -> None:
    code = "import sys, uvloop; uvloop.install(); from fakekafka.ops.cli import main; sys.exit(main(sys.argv[1:]))"
    proc = subprocess.Popen([sys.executable, "-c", code, "serve", "--port", "0"], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        assert line.startswith("fakekafka ready: bootstrap.servers="), proc.stderr.read() if not line else line
        bootstrap = line.split()[2].split("=", 1)[1]
        assert _round_trip(bootstrap, "serve-uvloop") == [b"one", b"two"]
    finally:
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(10) == 0
        assert proc.stderr is not None
        assert "Traceback" not in proc.stderr.read()
