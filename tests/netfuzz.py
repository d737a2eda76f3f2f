"""A network fuzzer for a running broker: mutated request frames over many connections, with a sentinel
request after each few so a closed or stuck connection is noticed, and a check that data produced before
is intact. Used by the bounded CI test (tests/integration/test_fuzz.py) and bench/hardening.py.

The seeds are one valid request per advertised (API, version), built by the API sweep's builders against
the broker's own state (topic ids, a group member), so mutations reach the handlers, not only the decoder.
"""

from __future__ import annotations

import random
import select
import socket
import struct
import time
from collections.abc import Callable
from dataclasses import dataclass

from fakekafka import wire
from fakekafka.testing.client import RemoteCluster

__all__ = ["FuzzResult", "fuzz", "mutate", "seed_frames"]

_SENTINEL_CORRELATION = 0x5EED
_BOUNDARY = [b"\x00", b"\xff", b"\x7f", b"\x80", b"\x00\x00\x00\x00", b"\xff\xff\xff\xff", b"\x7f\xff\xff\xff",
             b"\x80\x00\x00\x00", b"\x00\x00\x00\x01", b"\x7f\xff", b"\xff\xfe", b"\x00" * 8, b"\xff" * 8,
             b"\x7f" + b"\xff" * 7]


def seed_frames(bootstrap: str) -> list[bytes]:
    """A valid request frame (size prefix included) for every (API, version) fakekafka advertises."""
    from tests.conformance.test_api_sweep import BUILDERS, PAIRS, Target, fit_request, set_up

    target = Target("fuzz", bootstrap)
    try:
        set_up(target)
        frames = []
        for i, (key, version) in enumerate(PAIRS):
            body = fit_request(key, version, BUILDERS[key](target, version))
            frames.append(wire.encode_request(key, version, 1000 + i, body, client_id="fuzz"))
        return frames
    finally:
        target.close()


def mutate(frame: bytes, rng: random.Random) -> tuple[bytes, bool]:
    """One mutation of a valid frame; returns (bytes to send, whether its size prefix may lie, after which the
    connection is given up)."""
    body = bytearray(frame[4:])
    kind = rng.random()
    if kind < 0.30:  # flip bits
        for _ in range(rng.randint(1, 4)):
            i = rng.randrange(len(body))
            body[i] ^= 1 << rng.randrange(8)
    elif kind < 0.55:  # a boundary value over a field-sized window
        value = rng.choice(_BOUNDARY)
        i = rng.randrange(max(1, len(body) - len(value) + 1))
        body[i:i + len(value)] = value
    elif kind < 0.65:  # truncated
        del body[rng.randrange(len(body)):]
    elif kind < 0.72:  # random bytes appended or inserted
        i = rng.randrange(len(body) + 1)
        body[i:i] = rng.randbytes(rng.randint(1, 64))
    elif kind < 0.80:  # another API key or version in the header
        struct.pack_into(">hh", body, 0, rng.randint(-2, 80), rng.randint(-2, 20))
    elif kind < 0.88:  # a random byte run overwritten
        i = rng.randrange(len(body))
        n = rng.randint(1, 16)
        body[i:i + n] = rng.randbytes(n)
    elif kind < 0.96:  # a length or count in the body made huge or negative
        for _ in range(rng.randint(1, 3)):
            i = rng.randrange(max(1, len(body) - 3))
            body[i:i + 4] = struct.pack(">i", rng.choice([-1, -2, 2**31 - 1, 2**30, 65535, 100_000_000]))
    else:  # the size prefix lies
        return struct.pack(">i", rng.choice([len(body) + rng.randint(1, 1000), max(0, len(body) - 5),
                                             100_000_000, -1])) + bytes(body), True
    return struct.pack(">i", len(body)) + bytes(body), False


def _sentinel() -> bytes:
    return wire.encode_request(18, 3, _SENTINEL_CORRELATION, {"client_software_name": "fuzz",
                                                              "client_software_version": "1"}, client_id="fuzz")


@dataclass
class FuzzResult:
    frames: int = 0
    connections: int = 0
    closed_by_broker: int = 0
    stuck: int = 0
    """Connections whose sentinel did not come back in time (a mutated long-poll or wait), given up."""
    seconds: float = 0.0


class _Reader:
    """Reads a connection's responses until the sentinel's, or until it closes or `deadline` passes."""

    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock
        self.buf = bytearray()

    def until_sentinel(self, deadline: float) -> str:
        while True:
            while len(self.buf) >= 8:
                size = struct.unpack_from(">i", self.buf, 0)[0]
                if len(self.buf) < 4 + size:
                    break
                correlation = struct.unpack_from(">i", self.buf, 4)[0]
                del self.buf[:4 + size]
                if correlation == _SENTINEL_CORRELATION:
                    return "ok"
            left = deadline - time.monotonic()
            if left <= 0:
                return "stuck"
            ready, _, _ = select.select([self.sock], [], [], left)
            if not ready:
                return "stuck"
            try:
                chunk = self.sock.recv(1 << 16)
            except OSError:
                return "closed"
            if not chunk:
                return "closed"
            self.buf += chunk


def fuzz(bootstrap: str, seeds: list[bytes], frames: int, *, seed: int = 17, per_sentinel: int = 8,
         wait: float = 0.5, progress: Callable[[FuzzResult], None] | None = None) -> FuzzResult:
    """Sends `frames` mutated frames, `per_sentinel` at a time followed by an ApiVersions sentinel, on one
    connection until the broker closes it (then a new one)."""
    rng = random.Random(seed)
    host, port = bootstrap.split(",")[0].rsplit(":", 1)
    result = FuzzResult()
    sentinel = _sentinel()
    started = time.monotonic()
    sock: socket.socket | None = None
    reader: _Reader | None = None
    while result.frames < frames:
        if sock is None:
            sock = socket.create_connection((host, int(port)), timeout=10)
            reader = _Reader(sock)
            result.connections += 1
        assert reader is not None
        out = bytearray()
        lied = False
        for _ in range(min(per_sentinel, frames - result.frames)):
            data, lied = mutate(rng.choice(seeds), rng)
            out += data
            result.frames += 1
            if lied:
                break
        try:
            sock.sendall(out + (b"" if lied else sentinel))
            outcome = "gave-up" if lied else reader.until_sentinel(time.monotonic() + wait)
        except OSError:
            outcome = "closed"
        if outcome != "ok":
            result.closed_by_broker += outcome == "closed"
            result.stuck += outcome == "stuck"
            sock.close()
            sock = None
        if progress is not None and result.frames % 1000 < per_sentinel:
            progress(result)
    if sock is not None:
        sock.close()
    result.seconds = time.monotonic() - started
    return result


def produce_reference(bootstrap: str, topic: str = "fuzz-keep", n: int = 50) -> list[bytes]:
    """Records produced (acks=all) before the fuzzing; `intact` checks them afterwards."""
    remote = RemoteCluster(bootstrap)
    try:
        remote.create_topic(topic, 1)
        values = [b"keep-%d" % i for i in range(n)]
        for v in values:
            remote.produce(topic, v, partition=0)
        return values
    finally:
        remote.close()


def stored(bootstrap: str, topic: str = "fuzz-keep") -> list[bytes | None]:
    remote = RemoteCluster(bootstrap)
    try:
        return [r.value for r in remote.records(topic, 0)]
    finally:
        remote.close()
