"""What abuse costs a `fakekafka serve` process: memory per connection held, the largest abuse survived with
bounded memory, fuzzed frames with no traceback (issue 17's figures).

    python bench/hardening.py [--connections N] [--abusers N] [--parked N] [--frames N] [--json out.json]

Each section starts a fresh `fakekafka serve --port 0` child (its log to a file, read at the end for
tracebacks) and reads its RSS from /proc/PID/status:

- connections held: N connections idle (one ApiVersions answered, then nothing), N stalled (a frame of
  100 MB announced, 2 bytes of it sent), N parked (a Fetch waiting 24 days for data), N active (an
  ApiVersions request each, all answered, over 20 rounds): RSS growth per connection.
- abuse: `--abusers` connections each announcing 100 MB (200 GB announced by default) and sending nothing
  more, then three rounds of `--parked` parked fetches disconnected at once (the finding that kept ~74 KB
  each until the wait ended): RSS growth while held and after each round (Python reuses freed memory
  rather than returning it, so flat growth across rounds is what shows nothing is kept), and whether the
  server still answers.
- fuzz: `--frames` mutated request frames of every advertised (API, version) (tests/netfuzz.py), then
  tracebacks in the log, connections the broker closed, and whether records produced before are intact.

Every process started here is stopped by its PID.
"""

from __future__ import annotations

import argparse
import json
import re
import socket
import struct
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from fakekafka import wire  # noqa: E402
from tests import netfuzz  # noqa: E402
from tests.rawclient import RawClient  # noqa: E402


class Broker:
    """A `fakekafka serve` child on a free port, its log in a file."""

    def __init__(self, *extra: str) -> None:
        self.log = Path(tempfile.mkstemp(prefix="fakekafka-hardening-", suffix=".log")[1])
        with self.log.open("w") as out:
            self.proc = subprocess.Popen([sys.executable, "-m", "fakekafka", "serve", "--port", "0",
                                          "--control-port", "0", *extra], cwd=ROOT, stdout=subprocess.PIPE,
                                         stderr=out, text=True)
        assert self.proc.stdout is not None
        m = re.search(r"bootstrap\.servers=(\S+)", self.proc.stdout.readline())
        if not m:
            self.stop()
            raise SystemExit(f"fakekafka did not start: {self.log.read_text()[-2000:]}")
        self.bootstrap = m.group(1)
        host, port = self.bootstrap.rsplit(":", 1)
        self.address = (host, int(port))

    def rss_kb(self) -> int:
        for line in Path(f"/proc/{self.proc.pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
        raise RuntimeError("no VmRSS")

    def answers(self) -> bool:
        try:
            raw = RawClient(self.bootstrap, timeout=30)
            code = raw.request(18, 3, {"client_software_name": "b", "client_software_version": "1"}).error_code
            raw.close()
            return code == 0
        except OSError:
            return False

    def settle(self) -> int:
        """RSS once the server has read everything sent so far (an answered request comes after it)."""
        assert self.answers()
        return self.rss_kb()

    def stop(self) -> str:
        self.proc.terminate()
        try:
            self.proc.wait(30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(10)
        text = self.log.read_text()
        self.log.unlink()
        return text


def _connect(b: Broker, n: int) -> list[socket.socket]:
    return [socket.create_connection(b.address, timeout=30) for _ in range(n)]


_API_VERSIONS = wire.encode_request(18, 3, 1, {"client_software_name": "b", "client_software_version": "1"},
                                    client_id="bench")


def _read_answers(socks: list[socket.socket]) -> None:
    for s in socks:
        (size,) = struct.unpack(">i", _recv_exact(s, 4))
        _recv_exact(s, size)


def _recv_exact(s: socket.socket, n: int) -> bytes:
    buf = b""
    while len(buf) < n:
        chunk = s.recv(n - len(buf))
        if not chunk:
            raise ConnectionError("closed by the broker")
        buf += chunk
    return buf


def _parked_fetch(topic_id: object) -> bytes:
    return wire.encode_request(1, 16, 2, {
        "max_wait_ms": 2**31 - 1, "min_bytes": 1, "max_bytes": 1 << 20, "session_epoch": -1,
        "topics": [{"topic_id": topic_id, "partitions": [{"partition": 0, "fetch_offset": 0,
                                                          "partition_max_bytes": 1 << 20}]}]}, client_id="bench")


def _topic_id(b: Broker, name: str) -> object:
    from fakekafka.testing.client import RemoteCluster
    remote = RemoteCluster(b.bootstrap)
    try:
        remote.create_topic(name, 1)
        return remote._topic(name).topic_id
    finally:
        remote.close()


def connections_held(n: int) -> dict[str, float]:
    """RSS growth per connection of each kind, each kind on a fresh broker (memory freed by one kind would
    otherwise be reused by the next and hide its cost)."""
    out: dict[str, float] = {}
    tracebacks = 0
    for kind in ("idle", "stalled", "parked", "active"):
        b = Broker()
        try:
            topic_id = _topic_id(b, "parked")
            for s in _connect(b, 50):  # warm-up: the first connections' one-off allocations
                s.sendall(_API_VERSIONS)
                _read_answers([s])
                s.close()
            before = b.settle()
            socks = _connect(b, n)
            if kind == "idle":
                for s in socks:
                    s.sendall(_API_VERSIONS)
                _read_answers(socks)
            elif kind == "stalled":
                for s in socks:
                    s.sendall(struct.pack(">i", 100_000_000) + b"\x00\x12")
            elif kind == "parked":
                frame = _parked_fetch(topic_id)
                for s in socks:
                    s.sendall(frame)
            else:
                for _ in range(20):
                    for s in socks:
                        s.sendall(_API_VERSIONS)
                    _read_answers(socks)
            out[f"{kind}_kb_per_connection"] = round((b.settle() - before) / n, 1)
            for s in socks:
                s.close()
        finally:
            tracebacks += b.stop().count("Traceback")
    out["tracebacks"] = tracebacks
    return out


def abuse(abusers: int, parked: int) -> dict[str, float]:
    out: dict[str, float] = {"abusers": abusers, "announced_gb": abusers * 0.1, "parked": parked}
    b = Broker()
    try:
        topic_id = _topic_id(b, "parked")
        for s in _connect(b, 50):  # warm-up, as in connections_held
            s.sendall(_API_VERSIONS)
            _read_answers([s])
            s.close()
        base = b.settle()
        socks = _connect(b, abusers)
        for s in socks:
            s.sendall(struct.pack(">i", 100_000_000))
        out["rss_growth_mb_while_announced"] = round((b.settle() - base) / 1024, 1)
        for s in socks:
            s.close()
        frame = _parked_fetch(topic_id)
        for cycle in (1, 2, 3):  # freed memory is reused, not returned to the OS: a leak would grow per cycle
            socks = _connect(b, parked)
            for s in socks:
                s.sendall(frame)
            out[f"rss_growth_mb_while_parked_{cycle}"] = round((b.settle() - base) / 1024, 1)
            for s in socks:
                s.close()
            time.sleep(1.0)
            out[f"rss_growth_mb_after_dropped_{cycle}"] = round((b.settle() - base) / 1024, 1)
        out["still_answers"] = b.answers()
    finally:
        out["tracebacks"] = b.stop().count("Traceback")
    return out


def fuzz(frames: int) -> dict[str, float]:
    b = Broker()
    try:
        seeds = netfuzz.seed_frames(b.bootstrap)
        kept = netfuzz.produce_reference(b.bootstrap)
        base = b.settle()
        result = netfuzz.fuzz(b.bootstrap, seeds, frames)
        intact = netfuzz.stored(b.bootstrap)[:len(kept)] == kept
        grown = (b.settle() - base) / 1024
    finally:
        log = b.stop()
    return {"frames": result.frames, "seeds": len(seeds), "seconds": round(result.seconds, 1),
            "frames_per_s": round(result.frames / result.seconds), "connections": result.connections,
            "closed_by_broker": result.closed_by_broker, "given_up_waiting": result.stuck,
            "tracebacks": log.count("Traceback"), "error_lines": log.count(" ERROR "), "data_intact": intact,
            "rss_growth_mb": round(grown, 1)}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--connections", type=int, default=1000, help="connections per kind held (default 1000)")
    ap.add_argument("--abusers", type=int, default=2000, help="connections announcing 100 MB (default 2000)")
    ap.add_argument("--parked", type=int, default=2000, help="parked fetches disconnected (default 2000)")
    ap.add_argument("--frames", type=int, default=100_000, help="fuzzed frames (default 100000)")
    ap.add_argument("--json", metavar="PATH", help="also write the figures as JSON")
    args = ap.parse_args()
    figures = {}
    print(f"connections held ({args.connections} of each kind) ...", flush=True)
    figures["connections"] = connections_held(args.connections)
    print(json.dumps(figures["connections"]), flush=True)
    print(f"abuse ({args.abusers} x 100 MB announced, {args.parked} parked fetches dropped) ...", flush=True)
    figures["abuse"] = abuse(args.abusers, args.parked)
    print(json.dumps(figures["abuse"]), flush=True)
    print(f"fuzz ({args.frames} mutated frames) ...", flush=True)
    figures["fuzz"] = fuzz(args.frames)
    print(json.dumps(figures["fuzz"]), flush=True)
    if args.json:
        Path(args.json).write_text(json.dumps(figures, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
