"""The proxy's memory per connection: an idle client connection (and its upstream one) costs a few KB, not two read
buffers of 64 KiB each, and what connections cost is given back when they close. The proxy runs in a fresh
interpreter (a child process) so its resident size is its own; the upstream is a fakekafka in this process."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import fakekafka

ROOT = Path(__file__).resolve().parents[3]
KiB, MiB = 1 << 10, 1 << 20

SCRIPT = r"""
import asyncio, gc, json, socket, sys, weakref
from fakekafka.proxy.server import ProxyServer

def rss():
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024

async def until(check):
    for _ in range(3000):
        if check():
            return
        await asyncio.sleep(0.01)
    raise AssertionError("not reached")

async def connect_and_close(proxy, n, port):
    loop = asyncio.get_running_loop()
    socks = []
    for _ in range(n):  # connected while the loop runs: the proxy accepts as they come
        s = socket.socket()
        s.setblocking(False)
        await loop.sock_connect(s, ("127.0.0.1", port))
        socks.append(s)
    await until(lambda: proxy.connection_count == n and all(p.upstream is not None for p in proxy._pairs))
    opened = rss()
    pairs = weakref.WeakSet(proxy._pairs)
    for s in socks:
        s.close()
    del socks, s
    await until(lambda: proxy.connection_count == 0)
    await until(lambda: gc.collect() is not None and not pairs)  # every pair and its sides gone
    return opened, rss()

async def main(upstream, n):
    proxy = ProxyServer(upstream)
    await proxy.start()
    port = int(proxy.bootstrap_servers.rsplit(":", 1)[1])
    before = rss()
    rounds = [await connect_and_close(proxy, n, port) for _ in range(2)]
    await proxy.stop()
    print(json.dumps({"before": before, "rounds": rounds}))

asyncio.run(main(sys.argv[1], int(sys.argv[2])))
"""


def test_idle_proxy_connections_cost_little_and_give_it_back() -> None:
    n = 2000
    with fakekafka.Cluster(config={"max.connections.per.ip": "5000"}) as cluster:
        r = subprocess.run([sys.executable, "-c", SCRIPT, cluster.bootstrap_servers, str(n)], cwd=ROOT,
                           capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    m = json.loads(r.stdout.strip().splitlines()[-1])
    (opened, closed), (again, closed_again) = m["rounds"]
    assert (opened - m["before"]) / n < 24 * KiB, m  # was about 137 KB a connection: two 64 KiB read buffers
    assert closed < m["before"] + n * 24 * KiB, m  # was all of it kept
    assert again < opened + 4 * MiB and closed_again < closed + 4 * MiB, m  # what is kept is reused, not added to
