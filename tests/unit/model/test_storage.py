"""The data dir (fakekafka/storage/datadir.py): what a restart brings back, and what recovery cuts off after a crash.

A "crash" here is a state dropped without DataDir.close (its files left as a killed process leaves them: every
write() done, nothing flushed or saved at the end); a clean stop calls close. The cluster runs on the fake clock.
"""

from __future__ import annotations

import json
import logging
import os
import re
import shutil
import struct
from pathlib import Path

import pytest

from fakekafka.model.acl import AclBinding
from fakekafka.model.clock import ManualClock
from fakekafka.model.cluster import ClusterState
from fakekafka.model.config import BrokerConfig
from fakekafka.model.errors import ApiError
from fakekafka.model.metadata import Broker, Partition
from fakekafka.storage.datadir import METADATA_FILE, DataDir, DataDirError, read_segment, segment_name
from fakekafka.storage.journal import JOURNAL_FILE
from fakekafka.wire import ErrorCode
from fakekafka.wire.records import build_batch, decode_batch

AUTHORIZER = {"authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer"}


def _open(path: Path, brokers: int = 1, **overrides: str) -> ClusterState:
    state = ClusterState(BrokerConfig(overrides=dict(overrides)), ManualClock(1_000_000),
                         [Broker(n, "127.0.0.1", 9091 + n) for n in range(1, brokers + 1)])
    state.storage = data_dir = DataDir(path, state.config.cluster_id, list(state.brokers))
    data_dir.load(state)
    return state


def _crash(state: ClusterState) -> None:
    """Drops the state as a killed process would: file descriptors and the lock go, nothing else is written."""
    assert state.storage is not None
    for files in state.storage.logs.values():
        files.close()
    os.close(state.storage._lock)


def _produce(state: ClusterState, p: Partition, value: bytes, **batch: int) -> int:
    r = state.append(p, build_batch([{"key": b"k", "value": value, "timestamp": 1_000_000}], **batch), acks=-1)
    assert r.error == ErrorCode.NONE, r
    return r.base_offset


def _values(p: Partition) -> list[bytes | None]:
    return [rec.value for b in p.log.read(p.log.log_start_offset, 1 << 30, min_one=True)
            for rec in decode_batch(b).records if rec.offset >= p.log.log_start_offset]


def test_an_empty_dir_starts_a_fresh_cluster_and_writes_kafkas_layout(tmp_path: Path) -> None:
    state = _open(tmp_path / "new")
    assert not state.topics
    state.create_topic("orders", 2)
    _produce(state, state.topics["orders"].partitions[1], b"v")
    d = tmp_path / "new"
    assert (d / METADATA_FILE).is_file()
    assert "node.id=1" in (d / "broker-1" / "tmp_kafka-logs" / "meta.properties").read_text()
    assert (d / "broker-1" / "tmp_kafka-logs" / "orders-0" / segment_name(0)).stat().st_size == 0
    data = (d / "broker-1" / "tmp_kafka-logs" / "orders-1" / segment_name(0)).read_bytes()
    assert data == bytes(state.topics["orders"].partitions[1].log.batches[0])  # the stored bytes, as Fetch serves
    state.storage.close()


def test_a_restart_keeps_topics_configs_acls_scram_quotas_records_and_log_starts(tmp_path: Path) -> None:
    state = _open(tmp_path, 3, **AUTHORIZER)
    topic = state.create_topic("orders", 2, 3, configs={"retention.ms": "1234", "cleanup.policy": "delete"})
    state.set_broker_configs(None, {**state.config.dynamic_defaults, "log.retention.check.interval.ms": "5000"})
    state.set_broker_configs(2, {"log.cleaner.backoff.ms": "777"})
    assert state.authorizer is not None
    state.authorizer.create([AclBinding.of("TOPIC", "orders", "User:alice", "READ")])
    state.scram.set_password("bob", "secret")
    state.client_quotas.alter([([("user", "bob"), ("client-id", None)], [("producer_byte_rate", 1024.0, False)]),
                               ([("ip", None)], [("connection_creation_rate", 5.0, False)])])
    p0 = topic.partitions[0]
    for i in range(5):
        _produce(state, p0, b"v%d" % i)
    state.delete_records(p0, 2)
    state.create_partitions("orders", 3)
    pid = state.producer_ids.allocate()
    state.storage.save()
    ids = (topic.topic_id, [p.replicas for p in topic.partitions], state.scram.get("bob", "SCRAM-SHA-256"))
    state.storage.close()

    again = _open(tmp_path, 3, **AUTHORIZER)
    t = again.topics["orders"]
    assert (t.topic_id, [p.replicas for p in t.partitions], again.scram.get("bob", "SCRAM-SHA-256")) == ids
    assert len(t.partitions) == 3
    assert again.topics_by_id[t.topic_id] is t
    assert t.configs == {"retention.ms": "1234", "cleanup.policy": "delete"}
    assert again.config.value("log.retention.check.interval.ms")[0] == "5000"
    assert again.config.value("log.cleaner.backoff.ms", 2)[0] == "777"
    assert again.authorizer is not None and again.authorizer.acls == state.authorizer.acls
    assert again.client_quotas.entries == {(("client-id", None), ("user", "bob")): {"producer_byte_rate": 1024.0},
                                           (("ip", None),): {"connection_creation_rate": 5.0}}
    p = t.partitions[0]
    assert (p.log.log_start_offset, p.log.log_end_offset, p.log.high_watermark) == (2, 5, 5)
    assert _values(p) == [b"v2", b"v3", b"v4"]
    for r in p.replicas:  # every replica's log came back, sharing the leader's batch objects
        assert p.logs[r].log_start_offset == 2
        assert all(a is b for a, b in zip(p.logs[r].batches, p.log.batches, strict=True))
    assert again.producer_ids.allocate() > pid
    assert _produce(again, p, b"v5") == 5
    again.storage.close()


def test_a_torn_tail_is_cut_and_the_log_goes_on_from_there(tmp_path: Path) -> None:
    state = _open(tmp_path)
    p = state.create_topic("t", 1).partitions[0]
    for i in range(3):
        _produce(state, p, b"value-%d" % i)
    _crash(state)
    seg = tmp_path / "broker-1" / "tmp_kafka-logs" / "t-0" / segment_name(0)
    size = seg.stat().st_size
    with open(seg, "r+b") as f:
        f.truncate(size - 5)  # the last write() was cut short

    again = _open(tmp_path)
    p = again.topics["t"].partitions[0]
    assert _values(p) == [b"value-0", b"value-1"]
    assert seg.stat().st_size == size - len(state.topics["t"].partitions[0].log.batches[2])
    assert _produce(again, p, b"after") == 2
    assert read_segment(seg.read_bytes(), 0, 0)[2] is None
    again.storage.close()


def test_a_segment_of_garbage_is_emptied_as_kafka_does_and_said_in_words(tmp_path: Path,
                                                                      caplog: pytest.LogCaptureFixture) -> None:
    """Kafka's LogSegment.recover truncates a segment at its first invalid batch, so a segment whose first bytes
    are garbage is emptied: fakekafka does the same, and its one warning says what was lost and why, in words."""
    state = _open(tmp_path)
    p = state.create_topic("t", 1).partitions[0]
    for i in range(3):
        _produce(state, p, b"value-%d" % i)
    _crash(state)
    seg = tmp_path / "broker-1" / "tmp_kafka-logs" / "t-0" / segment_name(0)
    garbage = b"this is not a kafka segment\n" * 10
    seg.write_bytes(garbage)
    with caplog.at_level(logging.WARNING, logger="fakekafka.storage"):
        again = _open(tmp_path)
    p = again.topics["t"].partitions[0]
    assert _values(p) == [] and p.log.log_end_offset == 0 and seg.stat().st_size == 0
    [warning] = [r.getMessage() for r in caplog.records if "recovering t-0" in r.getMessage()]
    assert warning == (
        f"recovering t-0 on broker 1: segment {seg}: it holds no valid record batch at all (a torn batch at byte 0 "
        f"({len(garbage)} of {12 + struct.unpack_from('>i', garbage, 8)[0]} bytes)), so all its {len(garbage)} "
        f"bytes are dropped and it "
        f"is left empty (if it is not a segment fakekafka or Kafka wrote, it does not belong in the data dir). The "
        f"log now ends at offset 0: records from there on are lost on this replica. This is what Kafka's log "
        f"recovery does with an invalid batch (it truncates the segment at the first one).")
    assert _produce(again, p, b"after") == 0
    again.storage.close()


def _three_segments(tmp_path: Path) -> tuple[ClusterState, Partition, Path]:
    """Six batches of 400 KB, two a segment: segments 0, 2 and 4, the first two rolled (fsynced)."""
    state = _open(tmp_path, **{"log.segment.bytes": "1048576"})
    p = state.create_topic("t", 1, configs={"segment.bytes": "1048576"}).partitions[0]
    for i in range(6):
        _produce(state, p, b"%d" % i * 400_000)
    assert [s.base_offset for s in p.log.segments] == [0, 2, 4]
    return state, p, tmp_path / "broker-1" / "tmp_kafka-logs" / "t-0"


def _flip(path: Path, at: int, mask: int = 0xFF) -> None:
    with open(path, "r+b") as f:
        f.seek(at)
        b = f.read(1)[0]
        f.seek(at)
        f.write(bytes([b ^ mask]))


def test_a_roll_fsyncs_the_segment_and_checkpoints_the_recovery_point(tmp_path: Path,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    synced: list[int] = []
    real = os.fsync
    monkeypatch.setattr(os, "fsync", lambda fd: (synced.append(fd), real(fd))[1])
    state, p, d = _three_segments(tmp_path)
    assert len(synced) == 2  # one per roll, nothing per write (flush.messages is Kafka's default)
    assert (d.parent / "recovery-point-offset-checkpoint").read_text() == "0\n1\nt 0 4\n"
    state.storage.close()  # a clean stop: the recovery point is the log end, and Kafka's marker is written
    assert (d.parent / "recovery-point-offset-checkpoint").read_text() == "0\n1\nt 0 6\n"
    assert (d.parent / ".kafka_cleanshutdown").exists()
    again = _open(tmp_path)
    assert not (d.parent / ".kafka_cleanshutdown").exists()  # deleted once loaded: a crash now is unclean
    assert again.storage.logs[(1, "t", 0)].recovery_point == 6
    again.storage.close()


def test_a_corrupt_old_segment_is_reported_and_kept_and_the_later_ones_served(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    """Below the recovery point Kafka's LogLoader recovers nothing: a flipped byte in a rolled segment is an
    error to report, not a reason to cut it or delete the intact segments after it (it deleted 870 of 1,000
    acknowledged records, and new records then took their offsets)."""
    state, p, d = _three_segments(tmp_path)
    first = len(p.log.batches[0])
    _crash(state)
    _flip(d / segment_name(2), first + 100)  # in the records of offset 3: its CRC no longer matches
    _flip(d / segment_name(0), first + 8, 0x40)  # the length of offset 1: the segment cannot be framed past it
    sizes = {n: (d / n).stat().st_size for n in os.listdir(d)}
    with open(d / segment_name(4), "ab") as f:  # and the active segment's tail torn by the crash
        f.write(p.log.batches[5][:300])
    with caplog.at_level(logging.WARNING, logger="fakekafka.storage"):
        again = _open(tmp_path)
    p = again.topics["t"].partitions[0]
    assert [s.base_offset for s in p.log.segments] == [0, 2, 4] and p.log.log_end_offset == 6
    assert {n: (d / n).stat().st_size for n in os.listdir(d)} == sizes  # every byte kept but the torn tail
    values = [v[:1] if v else v for v in _values(p)]
    assert values == [b"0", b"2", b"3", b"4", b"5"]  # offset 1 cannot be found; offset 3 served as stored
    assert decode_batch(p.log.batches[2]).records[0].offset == 3
    words = [r.getMessage() for r in caplog.records if "recovering t-0" in r.getMessage()]
    assert len(words) == 3, words
    assert words[0].startswith(f"recovering t-0 on broker 1: segment {d / segment_name(0)} is corrupt: a torn batch "
                               f"at byte {first} ")
    assert f"the {sizes[segment_name(0)] - first} bytes from byte {first} on are kept in the file" in words[0]
    assert "below the recovery point 4" in words[0] and "nothing in it or after it is cut or deleted" in words[0]
    assert words[1].startswith(f"recovering t-0 on broker 1: segment {d / segment_name(2)} is corrupt: a CRC "
                               f"mismatch in the batch at byte {first} (offset 3): kept as stored")
    assert words[2].startswith(f"recovering t-0 on broker 1: segment {d / segment_name(4)}: its batches are valid "
                               f"up to byte {sizes[segment_name(4)]}")
    assert _produce(again, p, b"after") == 6  # no offset handed out before is used again
    again.storage.close()
    third = _open(tmp_path)  # a clean stop: nothing recovered, the same log again
    assert third.topics["t"].partitions[0].log.log_end_offset == 7
    third.storage.close()


def test_past_the_recovery_point_a_corrupt_crc_cuts_the_log_and_deletes_later_segments(tmp_path: Path) -> None:
    """Without a recovery point (an older data dir; or a crash between a roll and its checkpoint) every
    segment is unflushed, and Kafka's recovery cuts at the first invalid batch and deletes the segments after."""
    state, p, d = _three_segments(tmp_path)
    _crash(state)
    (d.parent / "recovery-point-offset-checkpoint").unlink()
    seg = d / segment_name(2)
    second = len(p.log.batches[2])
    _flip(seg, second + 100)

    again = _open(tmp_path)
    p = again.topics["t"].partitions[0]
    assert (p.log.log_end_offset, [s.base_offset for s in p.log.segments]) == (3, [0, 2])
    assert seg.stat().st_size == second
    assert not (d / segment_name(4)).exists()
    assert p.log.segments[1].size == second
    again.storage.close()


def test_a_segment_of_garbage_and_an_empty_one_after_it(tmp_path: Path) -> None:
    state = _open(tmp_path)
    p = state.create_topic("t", 1).partitions[0]
    _produce(state, p, b"a")
    _crash(state)
    d = tmp_path / "broker-1" / "tmp_kafka-logs" / "t-0"
    with open(d / segment_name(0), "ab") as f:
        f.write(struct.pack(">qi", 1, 3) + b"\x00" * 20)  # a length below any batch's
    (d / segment_name(7)).write_bytes(b"")
    again = _open(tmp_path)
    p = again.topics["t"].partitions[0]
    assert (p.log.log_end_offset, _values(p)) == (1, [b"a"])
    assert sorted(os.listdir(d)) == [segment_name(0), "partition.metadata"]
    again.storage.close()


def test_idempotent_retries_and_open_transactions_after_a_crash(tmp_path: Path) -> None:
    state = _open(tmp_path)
    p = state.create_topic("t", 1).partitions[0]
    pid = state.producer_ids.allocate()
    _produce(state, p, b"a", producer_id=pid, producer_epoch=0, base_sequence=0)
    txn = state.producer_ids.allocate()
    _produce(state, p, b"t", producer_id=txn, producer_epoch=3, base_sequence=0, transactional=True)
    assert p.log.last_stable_offset == 1
    _crash(state)

    again = _open(tmp_path)
    p = again.topics["t"].partitions[0]
    retry = again.append(p, build_batch([{"key": b"k", "value": b"a", "timestamp": 1_000_000}], producer_id=pid,
                                        producer_epoch=0, base_sequence=0), acks=-1)
    assert (retry.error, retry.base_offset, p.log.log_end_offset) == (ErrorCode.NONE, 0, 3)
    # the transaction's coordinator did not survive: an ABORT marker, written at start, ends it (epoch bumped)
    assert (p.log.last_stable_offset, [a.producer_id for a in p.log.aborted]) == (3, [txn])
    assert p.producers.entries[txn].epoch == 4
    assert any(e.kind == "transaction_aborted_at_start" for e in again.events)
    again.storage.close()


def test_committed_offsets_come_back_from_consumer_offsets(tmp_path: Path) -> None:
    state = _open(tmp_path)
    state.create_topic("t", 1)
    state.coordinator_for("g")
    codes = state.groups.commit("g", -1, "", None, {("t", 0): (42, -1, "meta")})
    assert set(codes.values()) == {ErrorCode.NONE}
    _crash(state)
    again = _open(tmp_path)
    committed = again.groups.fetch_offsets("g", [("t", 0)])[("t", 0)]
    assert committed is not None and (committed.offset, committed.metadata) == (42, "meta")
    again.storage.close()


def test_deleted_topics_retention_and_compaction_change_the_files(tmp_path: Path) -> None:
    state = _open(tmp_path)
    gone = state.create_topic("gone", 1)
    _produce(state, gone.partitions[0], b"x")
    state.delete_topic("gone")
    assert not (tmp_path / "broker-1" / "tmp_kafka-logs" / "gone-0").exists()
    p = state.create_topic("c", 1, configs={"cleanup.policy": "compact", "segment.bytes": "1048576",
                                            "min.cleanable.dirty.ratio": "0.01"}).partitions[0]
    for i in range(4):
        _produce(state, p, b"%d" % i + b"y" * 500_000)  # key k every time: only the last survives cleaning
    assert state.force_compaction("c") == 1
    compacted = _values(p)
    assert len(compacted) < 4
    d = tmp_path / "broker-1" / "tmp_kafka-logs" / "c-0"
    files = sorted(n for n in os.listdir(d) if n.endswith(".log"))
    assert files == [segment_name(s.base_offset) for s in p.log.segments]
    assert sum((d / n).stat().st_size for n in files) == p.log.size_bytes
    assert (d.parent / "cleaner-offset-checkpoint").read_text() == f"0\n1\nc 0 {p.log.cleaner_checkpoint}\n"
    r = state.create_topic("r", 1, configs={"segment.bytes": "1048576"}).partitions[0]
    for _ in range(4):
        _produce(state, r, b"z" * 600_000)
    state.delete_records(r, 3)
    logs = tmp_path / "broker-1" / "tmp_kafka-logs"
    assert sorted(os.listdir(logs / "r-0")) == [segment_name(3), "partition.metadata"]
    assert (logs / "log-start-offset-checkpoint").read_text() == "0\n1\nr 0 3\n"
    _crash(state)

    again = _open(tmp_path)
    assert set(again.topics) == {"c", "r"}
    assert _values(again.topics["c"].partitions[0]) == compacted
    assert again.topics["c"].partitions[0].log.cleaner_checkpoint == p.log.cleaner_checkpoint > 0
    assert again.topics["r"].partitions[0].log.log_start_offset == 3
    again.storage.close()


def test_several_log_dirs_a_moved_replica_and_a_dir_dropped_from_log_dirs(tmp_path: Path) -> None:
    state = _open(tmp_path, **{"log.dirs": "/data/a,/data/b"})
    t = state.create_topic("t", 2)
    assert [p.log.log_dir for p in t.partitions] == ["/data/a", "/data/b"]
    _produce(state, t.partitions[0], b"x")
    _produce(state, t.partitions[0], b"w")
    state.delete_records(t.partitions[0], 1)
    assert state.alter_replica_log_dir(1, "t", 0, "/data/b") == ErrorCode.NONE
    b = tmp_path / "broker-1" / "data_b"
    assert sorted(os.listdir(b)) == ["log-start-offset-checkpoint", "meta.properties",
                               "recovery-point-offset-checkpoint", "t-0", "t-1"]
    assert (b / "log-start-offset-checkpoint").read_text() == "0\n1\nt 0 1\n"
    assert not (tmp_path / "broker-1" / "data_a" / "t-0").exists()
    _produce(state, t.partitions[0], b"y")
    state.storage.close()

    again = _open(tmp_path, **{"log.dirs": "/data/b,/data/c"})
    t = again.topics["t"]
    assert [p.log.log_dir for p in t.partitions] == ["/data/b", "/data/b"]
    assert (_values(t.partitions[0]), t.partitions[0].log.log_start_offset) == ([b"w", b"y"], 1)
    again.storage.close()
    again = _open(tmp_path, **{"log.dirs": "/data/c"})  # /data/b gone from log.dirs: its replicas move to /data/c
    t = again.topics["t"]
    assert [p.log.log_dir for p in t.partitions] == ["/data/c", "/data/c"]
    assert (_values(t.partitions[0]), t.partitions[0].log.log_start_offset) == ([b"w", b"y"], 1)
    c = tmp_path / "broker-1" / "data_c"
    assert sorted(os.listdir(c)) == ["log-start-offset-checkpoint", "meta.properties",
                               "recovery-point-offset-checkpoint", "t-0", "t-1"]
    assert (c / "log-start-offset-checkpoint").read_text() == "0\n1\nt 0 1\n"
    again.storage.close()


def test_a_recreated_topic_starts_empty(tmp_path: Path) -> None:
    state = _open(tmp_path)
    _produce(state, state.create_topic("t", 1).partitions[0], b"old")
    state.delete_topic("t")
    p = state.create_topic("t", 1).partitions[0]
    _produce(state, p, b"new")
    state.storage.close()
    again = _open(tmp_path)
    assert _values(again.topics["t"].partitions[0]) == [b"new"]
    again.storage.close()


def test_a_replica_dir_of_another_topic_id_is_not_loaded(tmp_path: Path) -> None:
    state = _open(tmp_path)
    _produce(state, state.create_topic("t", 1).partitions[0], b"old")
    _crash(state)
    d = tmp_path / "broker-1" / "tmp_kafka-logs" / "t-0"
    (d / "partition.metadata").write_text("version: 0\ntopic_id: AAAAAAAAAAAAAAAAAAAAAA\n")
    again = _open(tmp_path)
    assert _values(again.topics["t"].partitions[0]) == []
    assert "topic_id: AAAA" not in (d / "partition.metadata").read_text()
    stray, = d.parent.glob("t-0.*-stray")  # the other topic's data set aside, as Kafka does, not deleted
    assert "topic_id: AAAA" in (stray / "partition.metadata").read_text()
    assert (stray / segment_name(0)).stat().st_size > 0
    again.storage.close()


def test_flush_messages_fsyncs_per_its_count(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    synced: list[int] = []
    real = os.fsync
    monkeypatch.setattr(os, "fsync", lambda fd: synced.append(fd) or real(fd))
    state = _open(tmp_path)
    p = state.create_topic("t", 1, configs={"flush.messages": "2"}).partitions[0]
    state.storage.save()
    for _ in range(5):
        _produce(state, p, b"x")
    assert len(synced) == 2  # after offsets 1 and 3, none for the default topic of Kafka's defaults
    q = state.create_topic("u", 1).partitions[0]
    state.storage.save()
    _produce(state, q, b"x")
    assert len(synced) == 2
    state.storage.close()


def test_a_diverged_follower_truncates_its_file(tmp_path: Path) -> None:
    state = _open(tmp_path, 3)
    p = state.create_topic("t", 1, 3, configs={"unclean.leader.election.enable": "true"}).partitions[0]
    first = p.leader_id
    _produce(state, p, b"a")
    for r in p.replicas:
        if r != first:
            state.shrink_isr("t", 0, r)
    assert state.append(p, build_batch([{"key": b"k", "value": b"lost", "timestamp": 1}]), acks=1).error == 0
    state.kill_broker(first)  # an unclean election: the new leader never had "lost"
    assert p.leader_id != first
    for r in p.replicas:
        if r != first:
            state.expand_isr("t", 0, r)
    _produce(state, p, b"c")
    state.restart_broker(first)  # its log diverged at offset 1: truncated there, then "c" copied
    assert [decode_batch(b).records[0].value for b in p.logs[first].batches] == [b"a", b"c"]
    seg = tmp_path / f"broker-{first}" / "tmp_kafka-logs" / "t-0" / segment_name(0)
    assert seg.read_bytes() == b"".join(bytes(b) for b in p.logs[first].batches)
    _crash(state)
    again = _open(tmp_path, 3)
    q = again.topics["t"].partitions[0]
    assert {r: [decode_batch(b).records[0].value for b in q.logs[r].batches] for r in q.replicas} == \
        {r: [b"a", b"c"] for r in q.replicas}
    again.storage.close()


def test_at_most_max_open_files_stay_open(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import fakekafka.storage.datadir
    monkeypatch.setattr(fakekafka.storage.datadir, "MAX_OPEN_FILES", 2)
    state = _open(tmp_path)
    t = state.create_topic("t", 5)
    for round_ in range(2):
        for p in t.partitions:
            _produce(state, p, b"%d-%d" % (p.index, round_))
            assert len(state.storage._open_files) <= 2
    _crash(state)
    again = _open(tmp_path)
    assert [_values(p) for p in again.topics["t"].partitions] == [[b"%d-0" % i, b"%d-1" % i] for i in range(5)]
    again.storage.close()


def test_dirs_that_cannot_be_used_are_refused_in_words(tmp_path: Path) -> None:
    foreign = tmp_path / "foreign"
    foreign.mkdir()
    (foreign / "notes.txt").write_text("mine")
    with pytest.raises(DataDirError, match="not a fakekafka data dir"):
        _open(foreign)
    assert [p.name for p in foreign.iterdir()] == ["notes.txt"]  # nothing written into a refused dir: no .lock
    state = _open(tmp_path / "d")
    with pytest.raises(DataDirError, match="in use by another fakekafka cluster"):
        _open(tmp_path / "d")
    assert (tmp_path / "d" / ".lock").exists()  # the lock of the cluster using it stays
    state.storage.close()
    with pytest.raises(DataDirError, match="holds brokers \\[1\\]"):
        _open(tmp_path / "d", 3)
    meta = tmp_path / "d" / METADATA_FILE
    meta.write_text(meta.read_text().replace('"format":1', '"format":99'))
    (tmp_path / "d" / ".lock").unlink()
    with pytest.raises(DataDirError, match="format 99"):
        _open(tmp_path / "d")
    assert not (tmp_path / "d" / ".lock").exists()
    (tmp_path / "file").write_text("")
    with pytest.raises(DataDirError, match="cannot use"):
        _open(tmp_path / "file")


def test_a_stale_metadata_file_sets_unnamed_replica_dirs_aside_as_kafkas_strays(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    state = _open(tmp_path)
    _produce(state, state.create_topic("kept", 1).partitions[0], b"k")
    stale = {name: (tmp_path / name).read_bytes() for name in (METADATA_FILE, JOURNAL_FILE)}
    _produce(state, state.create_topic("later", 2).partitions[1], b"precious")
    _crash(state)
    for name, data in stale.items():  # the metadata from before "later" was made
        (tmp_path / name).write_bytes(data)
    logs = tmp_path / "broker-1" / "tmp_kafka-logs"
    segment = (logs / "later-1" / segment_name(0)).read_bytes()

    with caplog.at_level(logging.WARNING, logger="fakekafka.storage"):
        again = _open(tmp_path)
    assert set(again.topics) == {"kept"}
    assert not (logs / "later-1").exists()
    strays = sorted(p.name for p in logs.iterdir() if p.name.startswith("later-"))
    assert [s.rsplit(".", 1)[0] for s in strays] == ["later-0", "later-1"]
    assert all(re.fullmatch(r"later-\d\.[0-9a-f]{32}-stray", s) for s in strays)
    assert (logs / strays[1] / segment_name(0)).read_bytes() == segment  # nothing deleted
    said = [r.getMessage() for r in caplog.records if "stray" in r.getMessage()]
    assert len(said) == 2 and all(METADATA_FILE in m for m in said)
    again.storage.close()

    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="fakekafka.storage"):
        third = _open(tmp_path)  # strays stay as they are, said no more
    assert sorted(p.name for p in logs.iterdir() if p.name.startswith("later-")) == strays
    assert not [r for r in caplog.records if "stray" in r.getMessage()]
    third.storage.close()


def _metadata_of(state: ClusterState) -> tuple[object, ...]:
    return (sorted((t.name, str(t.topic_id), tuple(tuple(p.replicas) for p in t.partitions), tuple(
        sorted(t.configs.items()))) for t in state.topics.values()), sorted(state.config.dynamic_defaults.items()))


def test_a_topic_made_appends_its_own_record_not_the_whole_metadata(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Each topic made rewrote the whole metadata file (making thousands was quadratic); now it appends its own
    record to the journal, and the snapshot is written again only when the journal outgrows it."""
    import fakekafka.storage.journal as datadir
    state = _open(tmp_path)
    snapshots: list[int] = []
    write = datadir.write_atomically
    monkeypatch.setattr(datadir, "write_atomically",
                        lambda path, text: (snapshots.append(len(text)), write(path, text))[1])
    journal = tmp_path / JOURNAL_FILE
    grown = []
    for i in range(400):
        before = journal.stat().st_size
        state.create_topic(f"t{i}", 2)
        grown.append(journal.stat().st_size - before)
    assert snapshots == []  # no snapshot rewritten while 400 topics were made
    assert max(grown) < 600 and max(grown[-50:]) <= max(grown[:50]) + 10  # the topic's own record, whatever the size
    state.delete_topic("t7")
    state.create_partitions("t8", 3)
    state.set_broker_configs(None, {**state.config.dynamic_defaults, "log.retention.check.interval.ms": "5000"})
    state.storage.save()  # an admin change: the tick or the request writes it
    assert snapshots == []
    expected = _metadata_of(state)
    _crash(state)
    again = _open(tmp_path)
    assert _metadata_of(again) == expected
    assert "t7" not in again.topics and len(again.topics["t8"].partitions) == 3
    again.storage.close()


def test_the_journal_is_folded_into_a_snapshot_once_it_outgrows_it(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import fakekafka.storage.journal as journal
    monkeypatch.setattr(journal, "COMPACT_AFTER", 4096)
    state = _open(tmp_path)
    for i in range(200):
        state.create_topic(f"t{i}", 1)
        if i % 3 == 0:
            state.delete_topic(f"t{i}")
    assert (tmp_path / JOURNAL_FILE).stat().st_size <= max(4096, (tmp_path / METADATA_FILE).stat().st_size) + 600
    generation = json.loads((tmp_path / METADATA_FILE).read_text())["journal"]
    assert generation > 3  # folded several times
    expected = _metadata_of(state)
    _crash(state)
    again = _open(tmp_path)
    assert _metadata_of(again) == expected
    again.storage.close()


def test_a_crash_at_any_point_of_the_journal_leaves_a_loadable_dir(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    """The journal cut at every line end and inside every line (a write the process did not finish): the dir
    loads, with the topics of the whole lines before the cut."""
    state = _open(tmp_path / "d")
    journal = tmp_path / "d" / JOURNAL_FILE
    ends = [journal.stat().st_size]
    for i in range(12):
        state.create_topic(f"t{i}", 1)
        ends.append(journal.stat().st_size)
    _crash(state)
    full = journal.read_bytes()
    for k, end in enumerate(ends):
        for cut in {end, end - 1, (end + ends[k - 1]) // 2 if k else end}:
            d = tmp_path / f"cut{cut}"
            shutil.copytree(tmp_path / "d", d)
            os.unlink(d / ".lock")
            (d / JOURNAL_FILE).write_bytes(full[:cut])
            made = sum(1 for e in ends[1:] if e <= cut)
            with caplog.at_level(logging.WARNING, logger="fakekafka.storage"):
                again = _open(d)
            assert sorted(again.topics) == sorted(f"t{i}" for i in range(made)), cut
            again.storage.close()
            shutil.rmtree(d)
    assert any("cut short" in r.getMessage() for r in caplog.records)


def test_a_fold_cut_short_and_a_full_disk_leave_the_metadata_whole(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import errno

    import fakekafka.storage.journal as journal_module
    state = _open(tmp_path)
    state.create_topic("before", 1)
    # a fold whose new snapshot is renamed in but whose new journal is never started (the process died there)
    monkeypatch.setattr(journal_module.MetadataJournal, "reset",
                        lambda self, generation: (_ for _ in ()).throw(OSError(errno.ENOSPC, "No space left")))
    with pytest.raises(Exception, match="No space left"):
        state.storage.save(force=True)
    monkeypatch.undo()
    header = json.loads((tmp_path / JOURNAL_FILE).read_bytes().split(b"\n")[0])
    assert json.loads((tmp_path / METADATA_FILE).read_text())["journal"] == header["generation"] + 1
    expected = _metadata_of(state)
    _crash(state)  # the old journal (of the previous snapshot) is still there: it is not applied again
    again = _open(tmp_path)
    assert _metadata_of(again) == expected
    # a full disk in the middle of a journal write: the topic is refused, the journal ends at a whole line
    real_write = os.write

    def half(fd: int, data: object) -> int:
        if fd == again.storage.journal.fd:
            real_write(fd, bytes(data)[:10])  # type: ignore[call-overload]
            raise OSError(errno.ENOSPC, "No space left on device")
        return real_write(fd, data)  # type: ignore[arg-type]
    monkeypatch.setattr(journal_module.os, "write", half)
    with pytest.raises(ApiError) as refused:
        again.create_topic("lost", 1)
    assert refused.value.code == ErrorCode.KAFKA_STORAGE_ERROR and "lost" not in again.topics
    monkeypatch.undo()
    assert (tmp_path / JOURNAL_FILE).read_bytes().endswith(b"\n")
    again.create_topic("after", 1)
    expected = _metadata_of(again)
    _crash(again)
    third = _open(tmp_path)
    assert _metadata_of(third) == expected and "lost" not in third.topics
    third.storage.close()


def test_a_damaged_journal_line_is_refused_in_words(tmp_path: Path) -> None:
    state = _open(tmp_path)
    state.create_topic("a", 1)
    state.create_topic("b", 1)
    _crash(state)
    lines = (tmp_path / JOURNAL_FILE).read_bytes().split(b"\n")
    lines[1] = lines[1][:5] + b"#" + lines[1][6:]
    (tmp_path / JOURNAL_FILE).write_bytes(b"\n".join(lines))
    with pytest.raises(DataDirError, match="is damaged .*move it aside"):
        _open(tmp_path)
