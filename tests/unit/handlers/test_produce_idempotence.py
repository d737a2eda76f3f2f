"""An idempotent producer's retried batch, sent twice over a real socket, is answered with its original
base offset and stored once (the dedup lives in fakekafka/model/producers.py; the client tests in
tests/integration/clients provoke the same retry through a proxy that loses the first Produce response)."""

from __future__ import annotations

import socket
import struct
from typing import Any

import fakekafka
from fakekafka.wire import ErrorCode, decode_response, encode_request
from fakekafka.wire.records import build_batch

PRODUCE, INIT_PRODUCER_ID = 0, 22
PRODUCE_V, INIT_V = 9, 4


class Connection:
    def __init__(self, cluster: fakekafka.Cluster) -> None:
        host, port = cluster.bootstrap_servers.rsplit(":", 1)
        self.sock = socket.create_connection((host, int(port)), timeout=10)
        self.correlation_id = 0

    def call(self, api_key: int, version: int, body: dict[str, Any]) -> Any:
        self.correlation_id += 1
        self.sock.sendall(encode_request(api_key, version, self.correlation_id, body))
        (size,) = struct.unpack(">i", self._read(4))
        correlation_id, response = decode_response(api_key, version, self._read(size))
        assert correlation_id == self.correlation_id
        return response

    def _read(self, n: int) -> bytes:
        buf = b""
        while len(buf) < n:
            chunk = self.sock.recv(n - len(buf))
            assert chunk, "broker closed the connection"
            buf += chunk
        return buf

    def produce(self, topic: str, batch: bytes) -> tuple[int, int]:
        """(error code, base offset) of one batch produced to partition 0 with acks=-1."""
        response = self.call(PRODUCE, PRODUCE_V, {
            "transactional_id": None, "acks": -1, "timeout_ms": 5000,
            "topic_data": [{"name": topic, "partition_data": [{"index": 0, "records": batch}]}]})
        [p] = response.responses[0].partition_responses
        return p.error_code, p.base_offset

    def close(self) -> None:
        self.sock.close()


def test_retried_batch_gets_its_original_offset(plain_cluster: fakekafka.Cluster) -> None:
    plain_cluster.create_topic("dedup")
    first = Connection(plain_cluster)
    init = first.call(INIT_PRODUCER_ID, INIT_V, {"transactional_id": None, "transaction_timeout_ms": 60000,
                                                  "producer_id": -1, "producer_epoch": -1})
    assert init.error_code == ErrorCode.NONE
    pid, epoch = init.producer_id, init.producer_epoch

    def batch(seq: int, *values: bytes) -> bytes:
        return build_batch([{"value": v, "timestamp": 1000} for v in values], producer_id=pid,
                           producer_epoch=epoch, base_sequence=seq)

    a, b = batch(0, b"a0", b"a1"), batch(2, b"b0")
    assert first.produce("dedup", a) == (ErrorCode.NONE, 0)
    assert first.produce("dedup", b) == (ErrorCode.NONE, 2)
    first.close()

    # the retries arrive on a new connection, as after a lost response
    retry = Connection(plain_cluster)
    assert retry.produce("dedup", a) == (ErrorCode.NONE, 0)
    assert retry.produce("dedup", b) == (ErrorCode.NONE, 2)
    assert plain_cluster.end_offsets("dedup") == {0: 3}
    assert [(r.offset, r.value) for r in plain_cluster.records("dedup")] == [(0, b"a0"), (1, b"a1"), (2, b"b0")]

    # a gap in the sequence is refused and not stored
    assert retry.produce("dedup", batch(5, b"gap"))[0] == ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER
    assert retry.produce("dedup", batch(3, b"c0")) == (ErrorCode.NONE, 3)
    assert plain_cluster.end_offsets("dedup") == {0: 4}
    retry.close()
