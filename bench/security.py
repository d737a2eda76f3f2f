"""The cost of a secured connection: connect + ApiVersions over PLAINTEXT, SSL, SASL_PLAINTEXT (PLAIN,
SCRAM-SHA-256, SCRAM-SHA-512) and SASL_SSL (SCRAM-SHA-512), on one fakekafka with all those listeners, one run.

    python bench/security.py [--connections 200]

Each cell opens --connections connections one after another from this process (a raw client: Python's ssl
module, and SCRAM written out here, so the client is the same for every cell) and times each from connect() to the
ApiVersions answer after authentication. The table gives the median and p99 in ms and the ratio to PLAINTEXT's
median. The broker is in process (a `fakekafka.Cluster` on its own thread), so the figures include the client's
own work, as an application's connection setup does.
"""

from __future__ import annotations

import argparse
import base64
import hashlib
import hmac
import os
import socket
import ssl
import statistics
import struct
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import fakekafka  # noqa: E402
from fakekafka.wire.protocol import decode_response, encode_request  # noqa: E402

USER, PASSWORD = "bench", "bench-secret"
_SIZE = struct.Struct(">i")


def _roundtrip(sock: socket.socket, api_key: int, version: int, body: dict, correlation: int) -> object:
    sock.sendall(encode_request(api_key, version, correlation, body, client_id="bench"))
    head = _read(sock, 4)
    return decode_response(api_key, version, _read(sock, _SIZE.unpack(head)[0]))[1]


def _read(sock: socket.socket, n: int) -> bytes:
    data = bytearray()
    while len(data) < n:
        chunk = sock.recv(n - len(data))
        if not chunk:
            raise ConnectionError("closed")
        data += chunk
    return bytes(data)


def _authenticate(sock: socket.socket, token: bytes) -> bytes:
    r = _roundtrip(sock, 36, 2, {"auth_bytes": token}, 3)
    if r.error_code:  # type: ignore[attr-defined]
        raise RuntimeError(f"SASL failed: {r.error_message}")  # type: ignore[attr-defined]
    return r.auth_bytes  # type: ignore[attr-defined,no-any-return]


def _scram(sock: socket.socket, mechanism: str) -> None:
    digest = "sha256" if mechanism.endswith("256") else "sha512"
    nonce = base64.b64encode(os.urandom(18)).decode()
    first_bare = f"n={USER},r={nonce}"
    server_first = _authenticate(sock, f"n,,{first_bare}".encode()).decode()
    attrs = dict(part.split("=", 1) for part in server_first.split(","))
    salted = hashlib.pbkdf2_hmac(digest, PASSWORD.encode(), base64.b64decode(attrs["s"]), int(attrs["i"]))
    client_key = hmac.digest(salted, b"Client Key", digest)
    stored_key = hashlib.new(digest, client_key).digest()
    without_proof = f"c=biws,r={attrs['r']}"
    auth_message = f"{first_bare},{server_first},{without_proof}".encode()
    signature = hmac.digest(stored_key, auth_message, digest)
    proof = base64.b64encode(bytes(a ^ b for a, b in zip(client_key, signature, strict=True))).decode()
    _authenticate(sock, f"{without_proof},p={proof}".encode())


def _connect(address: str, tls: ssl.SSLContext | None, mechanism: str | None) -> float:
    host, port = address.rsplit(":", 1)
    t0 = time.perf_counter()
    raw = socket.create_connection((host, int(port)), timeout=10)
    sock = tls.wrap_socket(raw, server_hostname=host) if tls is not None else raw
    try:
        if mechanism is not None:
            _roundtrip(sock, 17, 1, {"mechanism": mechanism}, 1)
            if mechanism == "PLAIN":
                _authenticate(sock, f"\0{USER}\0{PASSWORD}".encode())
            else:
                _scram(sock, mechanism)
        _roundtrip(sock, 18, 3, {"client_software_name": "bench", "client_software_version": "1"}, 9)
        return (time.perf_counter() - t0) * 1000
    finally:
        sock.close()


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--connections", type=int, default=200)
    args = ap.parse_args(argv)
    listeners = "PLAINTEXT://127.0.0.1:0,SSL://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0,SASL_SSL://127.0.0.1:0"
    with tempfile.TemporaryDirectory(), fakekafka.Cluster(listeners=listeners, users={USER: PASSWORD}) as cluster:
        assert cluster.pki is not None
        tls = ssl.create_default_context(cafile=str(cluster.pki.ca_file))
        cells = [("PLAINTEXT", None, None), ("SSL", tls, None), ("SASL_PLAINTEXT", None, "PLAIN"),
                 ("SASL_PLAINTEXT", None, "SCRAM-SHA-256"), ("SASL_PLAINTEXT", None, "SCRAM-SHA-512"),
                 ("SASL_SSL", tls, "SCRAM-SHA-512")]
        rows = []
        for listener, context, mechanism in cells:
            address = cluster.bootstrap_servers_for(listener)
            times = sorted(_connect(address, context, mechanism) for _ in range(args.connections))
            rows.append((listener, mechanism or "-", statistics.median(times),
                         times[min(len(times) - 1, int(len(times) * 0.99))]))
    base = rows[0][2]
    print(f"connect + authenticate + ApiVersions, {args.connections} connections per cell, fakekafka "
          f"{fakekafka.__version__} in process")
    print(f"{'listener':<16} {'mechanism':<14} {'median ms':>10} {'p99 ms':>8} {'x plaintext':>12}")
    for listener, mechanism, median, p99 in rows:
        print(f"{listener:<16} {mechanism:<14} {median:>10.2f} {p99:>8.2f} {median / base:>12.1f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
