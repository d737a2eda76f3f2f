"""Free loopback ports for the processes a test starts (a Kafka JVM, a Connect worker, a registry), chosen below the
kernel's ephemeral port range.

A port the kernel hands out for `bind(("127.0.0.1", 0))` is free at that moment, but it is in the ephemeral range:
any outgoing connection may take it as its local port before the process it was chosen for binds it, seconds later
(a JVM's start), and that process fails with "Address already in use" (seen in a clean-clone CI run: a restarted
Connect worker). No outgoing connection takes a port below that range.
"""

from __future__ import annotations

import random
import socket

__all__ = ["free_port", "free_ports"]

LOWEST = 10_000
"""Below it are the well-known services' ports; [LOWEST, the ephemeral range's start) is chosen from."""


def _ephemeral_start() -> int:
    try:
        with open("/proc/sys/net/ipv4/ip_local_port_range") as f:
            return int(f.read().split()[0])
    except (OSError, ValueError, IndexError):
        return 32_768  # Linux's default; elsewhere the kernel's choice below is used


def free_ports(n: int, host: str = "127.0.0.1") -> list[int]:
    """n distinct ports free on `host` now, below the ephemeral range (held together while choosing, so they
    differ); the kernel's own choice when that range leaves no room below it."""
    top = _ephemeral_start()
    rng = random.Random()
    socks: list[socket.socket] = []
    try:
        for _ in range(64 * n):
            if len(socks) == n:
                break
            s = socket.socket()
            try:
                s.bind((host, rng.randrange(LOWEST, top) if top > LOWEST + 1000 else 0))
            except OSError:
                s.close()
                continue
            socks.append(s)
        while len(socks) < n:  # nothing free below the range: the kernel's choice
            s = socket.socket()
            s.bind((host, 0))
            socks.append(s)
        return [s.getsockname()[1] for s in socks]
    finally:
        for s in socks:
            s.close()


def free_port(host: str = "127.0.0.1") -> int:
    return free_ports(1, host)[0]
