"""The fuzzing harness: hypothesis on the request decoder and the batch validator, and a bounded network fuzzer
against a live server (20,000 mutated frames of every advertised request, 0 tracebacks, data produced
before it intact). bench/hardening.py runs the network fuzzer longer and prints its figures."""

from __future__ import annotations

import re
import struct
import subprocess
import sys
import uuid
from pathlib import Path

import crc32c
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fakekafka import wire
from fakekafka.model.clock import ManualClock
from fakekafka.model.cluster import ClusterState
from fakekafka.model.validate import Refused, check_batch, split_produced
from fakekafka.wire.messages import API_MODULES
from fakekafka.wire.protocol import parse_body, request_struct
from fakekafka.wire.records import Compression, build_batch, decode_batch, read_header
from tests import netfuzz

ROOT = Path(__file__).resolve().parents[2]

_SEEDS = [
    wire.encode_request(18, 3, 1, {"client_software_name": "f", "client_software_version": "1"}, client_id="f"),
    wire.encode_request(3, 12, 2, {"topics": [{"name": "t", "topic_id": uuid.UUID(int=0)}],
                                   "allow_auto_topic_creation": True, "include_topic_authorized_operations": False},
                        client_id="f"),
    wire.encode_request(0, 9, 3, {"transactional_id": None, "acks": 1, "timeout_ms": 100, "topic_data": [
        {"name": "t", "partition_data": [{"index": 0, "records": build_batch([{"key": b"k", "value": b"v"}])}]}]}),
    wire.encode_request(19, 7, 4, {"topics": [{"name": "n", "num_partitions": 3, "replication_factor": 1,
                                               "assignments": [], "configs": [{"name": "retention.ms",
                                                                               "value": "1"}]}],
                                   "timeout_ms": 100, "validate_only": False}),
    wire.encode_request(11, 9, 5, {"group_id": "g", "session_timeout_ms": 10000, "rebalance_timeout_ms": 10000,
                                   "member_id": "", "group_instance_id": None, "protocol_type": "consumer",
                                   "protocols": [{"name": "range", "metadata": b"\x00\x01"}], "reason": None}),
]


def _decode(frame: bytes) -> None:
    """What the server does with a frame's bytes: header, then body; only DecodeError may come out."""
    request, stream = wire.decode_request_header(frame)
    if request.api_version <= API_MODULES[request.api_key][3]:
        parse_body(request_struct(request.api_key, request.api_version), stream, "body")


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.binary(max_size=256))
def test_decoder_takes_any_bytes(data: bytes) -> None:
    try:
        _decode(data)
    except wire.DecodeError:
        pass


@settings(max_examples=600, deadline=None)
@given(st.sampled_from(range(len(_SEEDS))), st.lists(st.tuples(st.integers(0, 10_000), st.integers(0, 255)),
                                                     min_size=1, max_size=6), st.integers(0, 10_000))
def test_decoder_takes_mutated_requests(seed: int, changes: list[tuple[int, int]], cut: int) -> None:
    frame = bytearray(_SEEDS[seed][4:])
    for pos, value in changes:
        frame[pos % len(frame)] = value
    try:
        _decode(bytes(frame[:max(1, len(frame) - cut % 8)]))
    except wire.DecodeError:
        pass


def _recrc(b: bytearray) -> bytes:
    if len(b) >= 21:
        struct.pack_into(">I", b, 17, crc32c.crc32c(bytes(b[21:])))
    return bytes(b)


_BATCHES = [build_batch([{"key": b"k%d" % i, "value": b"v" * i, "headers": [("h", b"x")]} for i in range(n)],
                        compression=codec)
            for n in (1, 3) for codec in Compression]


@settings(max_examples=1500, deadline=None)
@given(st.sampled_from(range(len(_BATCHES))),
       st.lists(st.tuples(st.integers(0, 4096), st.integers(0, 255)), max_size=5),
       st.integers(-8, 16), st.booleans())
def test_validator_refuses_or_accepts_and_accepted_batches_decode(which: int, changes: list[tuple[int, int]],
                                                                  resize: int, fix_crc: bool) -> None:
    """Never an exception; what it accepts holds exactly the records its header announces, decoded in full."""
    b = bytearray(_BATCHES[which])
    for pos, value in changes:
        b[pos % len(b)] = value
    if resize < 0:
        del b[resize:]
    else:
        b += bytes(resize)
    data = _recrc(b) if fix_crc else bytes(b)
    split = split_produced(data)
    if isinstance(split, Refused):
        return
    header, batch = split
    if check_batch(header, batch, 1 << 20) is not None:
        return
    assert len(decode_batch(bytes(batch)).records) == header.records_count


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=200))
def test_append_of_any_bytes_stores_a_whole_batch_or_nothing(data: bytes) -> None:
    cluster = ClusterState(clock=ManualClock())
    partition = cluster.create_topic("t", 1).partitions[0]
    result = cluster.append(partition, data)
    if result.error:
        assert partition.log.log_end_offset == 0 and not partition.log.batches
    else:
        assert partition.log.log_end_offset == read_header(partition.log.batches[0]).records_count


def test_network_fuzz_20000_frames_no_traceback_data_intact(tmp_path: Path) -> None:
    """The bounded CI run: a `fakekafka serve` child, every advertised request mutated 20,000 times."""
    log_path = tmp_path / "server.log"
    with log_path.open("w") as log:
        # the seeds are the API sweep's requests, whose set-up gives consumer groups sessions longer than Kafka's
        # default ceiling: the sweep's brokers raise it, and so does this one
        proc = subprocess.Popen([sys.executable, "-m", "fakekafka", "serve", "--port", "0", "--control-port", "0",
                                 "--config", "group.consumer.max.session.timeout.ms=600000"],
                                cwd=ROOT, stdout=subprocess.PIPE, stderr=log, text=True)
    try:
        assert proc.stdout is not None
        m = re.search(r"bootstrap\.servers=(\S+)", proc.stdout.readline())
        assert m, log_path.read_text()[-2000:]
        bootstrap = m.group(1)
        seeds = netfuzz.seed_frames(bootstrap)
        kept = netfuzz.produce_reference(bootstrap)
        result = netfuzz.fuzz(bootstrap, seeds, 20_000)
        assert result.frames == 20_000
        assert netfuzz.stored(bootstrap)[:len(kept)] == kept
    finally:
        proc.terminate()
        proc.wait(30)
    text = log_path.read_text()
    assert proc.returncode == 0, text[-3000:]
    assert "Traceback" not in text and " ERROR " not in text, text[text.find("Traceback") - 500:][:4000]


if __name__ == "__main__":  # pragma: no cover - a longer run by hand: python -m tests.integration.test_fuzz
    sys.exit(pytest.main([__file__, "-q", "--hypothesis-seed=0"]))
