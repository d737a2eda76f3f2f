"""Clusters sharing one event-loop thread (what the pytest plugin does): pooled listeners, retired
clusters stopped in batches, no listener shared by two clusters, nothing left running."""

from __future__ import annotations

import asyncio
import socket

import pytest

import fakekafka
from fakekafka.net.loop_thread import LoopThread
from fakekafka.wire import ApiKey
from tests.rawclient import RawClient


def _refused(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=1) as s:
            s.settimeout(1)
            return s.recv(1) == b""  # accepted by a listener nobody owns: closed at once
    except (ConnectionRefusedError, ConnectionResetError):
        return True


@pytest.fixture
def loop_thread():
    thread = LoopThread(listener_pool=4).start()
    yield thread
    thread.stop()


def _tasks(thread: LoopThread) -> list[asyncio.Task]:
    async def tasks() -> list[asyncio.Task]:
        return [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]

    return thread.submit(tasks()).result(5)


def test_pooled_cluster_serves_requests_and_its_port_closes_once_retired(loop_thread: LoopThread) -> None:
    cluster = fakekafka.Cluster(topics={"t": 2}).start(loop_thread)
    port = int(cluster.bootstrap_servers.split(":")[1])
    raw = RawClient(cluster.bootstrap_servers)
    try:
        body = raw.request(
            ApiKey.METADATA,
            9,
            {
                "topics": [{"name": "t"}],
                "allow_auto_topic_creation": False,
                "include_topic_authorized_operations": False,
            },
        )
        assert [len(t.partitions) for t in body.topics] == [2]
        cluster.produce("t", b"x", partition=1)
        assert cluster.end_offsets("t") == {0: 0, 1: 1}
        cluster.stop(wait=False)
        loop_thread.drain()
        assert raw.is_closed()
    finally:
        raw.close()
    assert _refused(port)


def test_each_pooled_listener_serves_one_cluster(loop_thread: LoopThread) -> None:
    # every cluster stays up until the end, so no port can have been closed and handed out again by the kernel
    clusters = [fakekafka.Cluster(brokers=2).start(loop_thread) for _ in range(20)]
    for c in clusters:  # the pool runs dry here: the rest bind and are served once their start has run
        if c._serving is not None:
            c._serving.result(10)
    servers = [srv for c in clusters for srv in c.server._servers.values()]
    ports = [b.port for c in clusters for b in c.state.brokers.values()]
    assert len(set(map(id, servers))) == len(servers) == 40
    assert len(set(ports)) == 40
    for c in clusters:
        c.stop(wait=False)
    loop_thread.drain()
    assert all(_refused(p) for p in ports)
    assert [t.get_coro().__qualname__ for t in _tasks(loop_thread)] == ["LoopThread._reap_every"]


def test_stop_before_start_finished_leaves_nothing_running() -> None:
    thread = LoopThread().start()  # no pool: every start binds and sends the loop its start
    try:
        ports = []
        for _ in range(20):
            cluster = fakekafka.Cluster().start(thread)
            ports.append(cluster.state.brokers[1].port)
            cluster.stop(wait=False)
        thread.drain()
        assert [t.get_coro().__qualname__ for t in _tasks(thread)] == ["LoopThread._reap_every"]
        assert all(_refused(p) for p in ports)
    finally:
        thread.stop()


def test_stop_waits_when_asked(loop_thread: LoopThread) -> None:
    cluster = fakekafka.Cluster().start(loop_thread)
    port = cluster.state.brokers[1].port
    cluster.stop()
    assert _refused(port)


def test_a_stray_connection_to_a_pooled_listener_is_closed() -> None:
    from fakekafka.net.server import ListenerPool

    async def run() -> bool:
        pool = ListenerPool(size=1)
        await pool.fill()
        listener = pool.take()
        assert listener is not None
        reader, writer = await asyncio.open_connection("127.0.0.1", listener.port)
        closed = await asyncio.wait_for(reader.read(1), 2) == b""
        writer.close()
        listener.server.close()
        await pool.close()
        return closed

    assert asyncio.run(run())
