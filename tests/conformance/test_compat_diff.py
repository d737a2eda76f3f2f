"""`python -m compat diff` (compat/diff.py, compat/relay.py): the relay (on the proxy's hooks), the normaliser
and the aligner on their own (fakekafka in process, hand-made exchanges: no Kafka needed). The whole tool over the
compat scenarios against real Apache Kafka runs inside the compat matrix's own run (`--diff-out`):
tests/conformance/test_compat.py::test_wire_diff_against_real_kafka_has_no_unexplained_field.
"""

from __future__ import annotations

import socket
import struct
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Any

from compat.diff import (
    Decoded,
    KnownField,
    Normaliser,
    add_context,
    align,
    canonical,
    compare,
    diff_sessions,
    load_known_fields,
    served_versions,
)
from compat.known import load_known
from compat.relay import Exchange, RelayGroup
from fakekafka import wire

ROOT = Path(__file__).resolve().parents[2]


class Raw:
    def __init__(self, bootstrap: str) -> None:
        host, port = bootstrap.rsplit(":", 1)
        self.sock = socket.create_connection((host, int(port)), timeout=10)
        self.corr = 0

    def send(self, api_key: int, version: int, body: dict[str, Any], client_id: str = "raw") -> int:
        self.corr += 1
        self.sock.sendall(wire.encode_request(api_key, version, self.corr, body, client_id=client_id))
        return self.corr

    def receive(self, api_key: int, version: int) -> tuple[int, Any]:
        size = struct.unpack(">i", self._exact(4))[0]
        return wire.decode_response(api_key, version, self._exact(size))

    def _exact(self, n: int) -> bytes:
        buf = b""
        while len(buf) < n:
            chunk = self.sock.recv(n - len(buf))
            if not chunk:
                raise ConnectionError("closed")
            buf += chunk
        return buf

    def close(self) -> None:
        self.sock.close()


def _produce(topic: str, acks: int) -> dict[str, Any]:
    from fakekafka.wire.records import build_batch
    batch = build_batch([{"key": b"k", "value": b"v"}])
    return {"transactional_id": None, "acks": acks, "timeout_ms": 5000,
            "topic_data": [{"name": topic, "partition_data": [{"index": 0, "records": batch}]}]}


# --- the relay -------------------------------------------------------------------------------------------

def test_relay_forwards_records_and_rewrites_addresses() -> None:
    import fakekafka
    with fakekafka.Cluster(partitions=1) as kafka:
        kafka.create_topic("t", 1)
        relay = RelayGroup("first", caps={18: (0, 3), 3: (0, 12), 0: (3, 9)})
        try:
            front = relay.front(kafka.bootstrap_servers)
            assert front != kafka.bootstrap_servers
            raw = Raw(front)
            # newer than the caps: refused by the relay as a broker without that version would (KIP-511)
            raw.send(18, 4, {"client_software_name": "t", "client_software_version": "1"})
            _, refused = raw.receive(18, 0)
            assert refused.error_code == 35 and [(k.api_key, k.max_version) for k in refused.api_keys] == [(18, 3)]
            raw.send(18, 3, {"client_software_name": "t", "client_software_version": "1"})
            _, versions = raw.receive(18, 3)
            # narrowed to the caps: only the three APIs, Produce to 3-9
            assert {k.api_key: (k.min_version, k.max_version) for k in versions.api_keys} == \
                {18: (0, 3), 3: (0, 12), 0: (3, 9)}
            raw.send(3, 12, {"topics": [{"name": "t"}], "allow_auto_topic_creation": False})
            _, md = raw.receive(3, 12)
            # the broker is named at a listener of the relay's own (the proxy's: one per upstream broker)
            upstream_port = int(kafka.bootstrap_servers.rsplit(":", 1)[1])
            assert [b.host for b in md.brokers] == [front.rsplit(":", 1)[0]] and md.brokers[0].port != upstream_port
            raw.close()
            raw = Raw(f"{md.brokers[0].host}:{md.brokers[0].port}")
            relay.tag = "second"
            raw.send(0, 9, _produce("t", 0))           # acks=0: no answer
            corr = raw.send(0, 9, _produce("t", 1))
            got, resp = raw.receive(0, 9)
            assert got == corr and resp.responses[0].partition_responses[0].base_offset == 1
            raw.close()
        finally:
            exchanges = relay.close()
    assert exchanges[0].meta["answered_by_relay"]
    exchanges = exchanges[1:]
    assert [(e.tag, e.api_key) for e in exchanges] == [("first", 18), ("first", 3), ("second", 0), ("second", 0)]
    assert exchanges[2].response is None and exchanges[3].response is not None
    assert all(e.client_id == "raw" for e in exchanges)
    assert [e.conn for e in exchanges] == [1, 1, 2, 2]
    # what is recorded is the broker's own answer, not the rewritten one
    _, md = wire.decode_response(3, 12, exchanges[1].response)
    assert md.brokers[0].port == upstream_port
    _, av = wire.decode_response(18, 3, exchanges[0].response)
    assert len(av.api_keys) > 3
    assert not relay.errors


def test_served_versions_reads_what_a_broker_advertises() -> None:
    import fakekafka
    with fakekafka.Cluster() as kafka:
        caps = served_versions(kafka.bootstrap_servers)
    assert caps[18][0] == 0 and caps[3][1] >= 12 and 1 in caps


def test_finalized_features_are_narrowed_to_the_broker_under_test() -> None:
    """Kafka 4 finalizes transaction.version 2: a client that saw it through a relay narrowed to the versions
    of a broker without it would speak transactions v2 over Produce v11, which Kafka refuses
    (TRANSACTION_ABORTABLE)."""
    from types import SimpleNamespace as NS

    from compat.diff import served_features
    from compat.relay import cap_versions
    body = NS(api_keys=[NS(api_key=0, min_version=3, max_version=13)], finalized_features=[
        NS(name="transaction.version", min_version_level=2, max_version_level=2),
        NS(name="group.version", min_version_level=1, max_version_level=1),
        NS(name="metadata.version", min_version_level=1, max_version_level=27)])
    assert cap_versions(body, {0: (3, 11)}, {"metadata.version": 20})
    assert [(f.name, f.max_version_level) for f in body.finalized_features] == [("metadata.version", 20)]
    assert body.api_keys[0].max_version == 11
    body = NS(api_keys=[NS(api_key=0, min_version=3, max_version=11)], finalized_features=[
        NS(name="transaction.version", min_version_level=2, max_version_level=2)])
    assert not cap_versions(body, {0: (3, 11)})  # without features: left as they are
    import fakekafka
    with fakekafka.Cluster() as kafka:
        assert served_features(kafka.bootstrap_servers).get("transaction.version") == 2


# --- normalising, comparing, aligning ---------------------------------------------------------------------

def test_normaliser_placeholders_nodes_times_and_session_filter() -> None:
    now = 1_800_000_000_000
    n = Normaliser(now_ms=now, prefix="compat-x-s-c")
    body = {"throttle_time_ms": 5, "cluster_id": "abc", "controller_id": 3, "brokers": [
        {"node_id": 3, "host": "h", "port": 1, "rack": None}],
        "topics": [{"name": "compat-x-s-c-t", "topic_id": "1" * 8 + "-0000-0000-0000-000000000000",
                    "error_code": 0, "partitions": [{"partition_index": 0, "leader_id": 3, "replica_nodes": [3],
                                                     "isr_nodes": [3], "offline_replicas": []}]},
                   {"name": "__consumer_offsets", "topic_id": "x", "error_code": 0, "partitions": []}]}
    out = n.response(3, {"topics": None}, body)
    assert "throttle_time_ms" not in out and out["cluster_id"] == "<cluster>" and out["controller_id"] == "<node>"
    assert out["brokers"] == [{"node_id": "<node>", "rack": None}]
    assert [t["name"] for t in out["topics"]] == ["compat-x-s-c-t"]  # everything-listing: the session's only
    p = out["topics"][0]["partitions"][0]
    assert p["leader_id"] == "<node>" and p["replica_nodes"] == ["<node>"] and out["topics"][0]["topic_id"] == "<uuid>"
    # unset stays unset
    assert n.value("cluster_id", None) is None and n.value("producer_id", -1) == -1 and n.value("member_id", "") == ""
    assert n.value("session_id", 0) == 0 and n.value("session_id", 7) == "<session>"
    assert n.value("log_append_time_ms", now - 5000) == "<now>" and n.value("log_append_time_ms", -1) == -1
    assert n.value("timestamp", 1_700_000_000_000) == 1_700_000_000_000  # a producer-set time is kept
    # the Java client's made-up client ids count the clients made in that JVM before: the count is left out
    assert n.value("client_id", "consumer-compat-x-g-67") == n.value("client_id", "consumer-compat-x-g-68") == \
        "consumer-compat-x-g-<n>"
    assert n.value("client_id", "producer-12") == "producer-<n>"
    assert n.value("client_id", "my-app-7") == "my-app-7"  # an id the app chose is compared as it is
    # asked for named topics: nothing is filtered
    kept = Normaliser(now_ms=now, prefix="zzz").response(3, {"topics": [{"name": "a"}]},
                                                         {"topics": [{"name": "a", "partitions": []}]})
    assert kept["topics"] == [{"name": "a", "partitions": []}]


def test_records_are_compared_decoded() -> None:
    from fakekafka.wire.records import build_batch
    now = time.time() * 1000
    a = build_batch([{"key": b"k", "value": b"v", "timestamp": int(now)}], base_offset=5)
    b = build_batch([{"key": b"k", "value": b"v", "timestamp": int(now) + 3}], base_offset=5)
    assert a != b
    n = Normaliser(now_ms=now)
    ra, rb = n.records(a), n.records(b)
    assert ra == rb and ra[0]["records"][0]["offset"] == 5 and ra[0]["records"][0]["timestamp"] == "<now>"
    assert n.records(a + a[:20])[-1] == {"trailing_bytes": 20}


def test_compare_keys_arrays_and_names_api_and_config_fields() -> None:
    a = canonical({"api_keys": [{"api_key": 1, "max_version": 17}, {"api_key": 0, "max_version": 11}],
                   "topics": [{"name": "b", "e": 1}, {"name": "a", "e": 0}]})
    b = canonical({"api_keys": [{"api_key": 0, "max_version": 11}, {"api_key": 1, "max_version": 16}],
                   "topics": [{"name": "a", "e": 0}, {"name": "b", "e": 2}]})
    n, diffs = compare(a, b)
    assert n == 8
    assert [(p, g, x, y) for p, g, x, y in diffs] == [
        ("api_keys[Fetch].max_version", "api_keys[Fetch].max_version", 17, 16),
        ("topics[b].e", "topics[*].e", 1, 2)]
    _, missing = compare(canonical({"configs": [{"name": "x", "value": "1"}]}), canonical({"configs": []}))
    assert missing[0][1] == "configs" or missing[0][1] == "configs[x]"


def test_align_pairs_same_requests_and_leaves_extra_polls_over() -> None:
    # the reference needed two more polls of the same question before the answer matched
    a = [("md", "unknown"), ("md", "unknown"), ("md", "ok"), ("fetch", "r1")]
    b = [("fetch", "r1"), ("md", "ok")]
    pairs, only_a, only_b = align(a, b, key=lambda x: x[0], answer=lambda x: x[1])
    assert pairs == [(2, 1), (3, 0)] and only_a == [0, 1] and only_b == []
    # different answers: the last of a stretch pairs with the other side's
    pairs, only_a, only_b = align([("md", "u"), ("md", "x")], [("md", "y")], key=lambda x: x[0],
                                  answer=lambda x: x[1])
    assert pairs == [(1, 0)] and only_a == [0]
    # different questions are not paired
    pairs, only_a, only_b = align([("a", 1)], [("b", 1)], key=lambda x: x[0])
    assert pairs == [] and only_a == [0] and only_b == [0]


def test_reads_are_keyed_by_the_writes_answered_before_them() -> None:
    def d(seq: int, api: int, request: dict[str, Any], t0: float, t1: float | None, conn: int = 1) -> Decoded:
        ex = Exchange(conn, seq, "s", api, 0, seq, "c", b"", b"r" if t1 is not None else None, t0, t1 or 0.0)
        return Decoded(ex, request, {}, "k")
    fetch = {"topics": [{"topic": "t", "partitions": []}]}
    got = [d(1, 1, fetch, 1.0, 1.5), d(2, 0, {"topic_data": [{"name": "t"}]}, 2.0, 3.0, conn=2),
           d(3, 1, fetch, 2.5, 4.0),  # sent before the produce (another connection's) was answered: raced it
           d(4, 1, {"topics": [{"topic_id": "<id:t>"}]}, 3.5, 4.0), d(5, 1, {"topics": [{"topic": "u"}]}, 5, 6),
           d(6, 9, {"group_id": "g"}, 6, 7), d(7, 8, {"group_id": "g"}, 7, 8), d(8, 9, {"group_id": "g"}, 7.5, 10),
           d(9, 9, {"group_id": "g"}, 7.6, 10, conn=3)]
    add_context(got)
    # the OffsetFetch sent on the committing connection right after the commit counts it (a broker takes a
    # connection's requests in order); the one on another connection before the commit was answered does not
    assert [x.key for x in got] == ["k|after 0 writes", "k", "k|after 0 writes", "k|after 1 writes",
                                    "k|after 0 writes", "k|after 0 writes", "k", "k|after 1 writes",
                                    "k|after 0 writes"]
    assert [x.raced for x in got[:5]] == [set(), set(), {"t"}, set(), set()]  # the produce came while 3 waited


def test_the_progress_a_long_poll_met_a_write_in_is_timing() -> None:
    """Both brokers held a Fetch while two records were written: fakekafka answered after the first, Kafka
    after the second (as seen with aiokafka): the high watermarks and records differ, nothing else."""
    fetch = {"replica_id": -1, "max_wait_ms": 500, "min_bytes": 1, "max_bytes": 1 << 20, "isolation_level": 0,
             "session_id": 0, "session_epoch": -1, "topics": [{"topic": "compat-r-s-c-t", "partitions": [
                 {"partition": 0, "current_leader_epoch": -1, "fetch_offset": 3, "log_start_offset": -1,
                  "partition_max_bytes": 1 << 20}]}], "forgotten_topics_data": [], "rack_id": ""}

    def answer(hw: int, error: int = 0) -> dict[str, Any]:
        return {"throttle_time_ms": 0, "error_code": 0, "session_id": 0, "responses": [
            {"topic": "compat-r-s-c-t", "partitions": [
                {"partition_index": 0, "error_code": error, "high_watermark": hw, "last_stable_offset": hw,
                 "log_start_offset": 0, "aborted_transactions": [], "preferred_read_replica": -1,
                 "records": None}]}]}

    def exchanges(hw: int, error: int = 0, produce_at: float = 2.0) -> list[Exchange]:
        return _read_beside_a_write(_exchange(1, 1, 11, fetch, answer(hw, error)), (1.0, 3.0), produce_at)
    stats = diff_sessions({"s / c": (exchanges(5), exchanges(4))}, ("kafka", "fakekafka"), known=[])
    assert not stats[(1, 11)].diffs and stats[(1, 11)].compared == 1
    # the rest of the answer is still compared
    stats = diff_sessions({"s / c": (exchanges(5), exchanges(4, error=6))}, ("kafka", "fakekafka"), known=[])
    assert list(stats[(1, 11)].diffs) == ["responses[*].partitions[*].error_code"]
    # and without a write during the poll, the high watermark is compared
    stats = diff_sessions({"s / c": (exchanges(5, produce_at=0.5), exchanges(4, produce_at=0.5))},
                          ("kafka", "fakekafka"), known=[])
    assert "responses[*].partitions[*].high_watermark" in stats[(1, 11)].diffs


def test_a_list_offsets_a_write_was_in_flight_with_is_timing() -> None:
    """As seen with kafka-python resetting to the end while the scenario wrote a record: Kafka's answer counted
    the write, fakekafka's did not."""
    asked = {"replica_id": -1, "isolation_level": 0, "topics": [{"name": "compat-r-s-c-t", "partitions": [
        {"partition_index": 0, "current_leader_epoch": -1, "timestamp": -1}]}], "timeout_ms": 0}

    def exchanges(end: int, produce_at: float = 1.2) -> list[Exchange]:
        lo = _exchange(1, 2, 11, asked, {"throttle_time_ms": 0, "topics": [{"name": "compat-r-s-c-t", "partitions": [
            {"partition_index": 0, "error_code": 0, "timestamp": -1, "offset": end, "leader_epoch": 0}]}]})
        return _read_beside_a_write(lo, (1.0, 1.5), produce_at)
    stats = diff_sessions({"s / c": (exchanges(4), exchanges(3))}, ("kafka", "fakekafka"), known=[])
    assert not stats[(2, 11)].diffs and stats[(2, 11)].compared == 1
    stats = diff_sessions({"s / c": (exchanges(4, 0.5), exchanges(3, 0.5))}, ("kafka", "fakekafka"), known=[])
    assert list(stats[(2, 11)].diffs) == ["topics[*].partitions[*].offset"]


def test_a_produce_by_topic_id_counts_as_a_write_of_that_topic() -> None:
    """Produce v13 names its topics by id (normalised to "<id:NAME>"): a Fetch of the topic after it counts it."""
    def d(seq: int, api: int, request: dict[str, Any], t0: float, t1: float) -> Decoded:
        return Decoded(Exchange(1, seq, "s", api, 13, seq, "c", b"", b"r", t0, t1), request, {}, "k")
    got = [d(1, 0, {"topic_data": [{"name": "", "topic_id": "<id:t>"}]}, 1.0, 2.0),
           d(2, 1, {"topics": [{"topic_id": "<id:t>"}]}, 3.0, 4.0)]
    add_context(got)
    assert got[1].key == "k|after 1 writes"


def test_known_field_patterns_take_brackets_literally() -> None:
    k = KnownField("DescribeConfigs", "1-4", "results[*].configs[*] (missing)", "r", 1)
    assert k.matches("DescribeConfigs", 4, "results[*].configs[ssl.key.password] (missing)")
    assert not k.matches("DescribeConfigs", 4, "results[*].configs[ssl.key.password].value")
    assert not k.matches("DescribeConfigs", 5, "results[*].configs[x] (missing)")
    assert KnownField("*", "*", "api_keys[Fetch].max_version", "r", 1).matches("ApiVersions", 3,
                                                                               "api_keys[Fetch].max_version")


TOPIC_ID = uuid.UUID("6bd2bda3-9a4d-4d2a-8c3a-1e0f0f0f0f01")


def _read_beside_a_write(read: Exchange, sent_answered: tuple[float, float], written_at: float) -> list[Exchange]:
    """A read of compat-r-s-c-t sent and answered at `sent_answered`, and a Produce to it on another connection,
    answered at `written_at`, 0.1 s after it was sent."""
    read.t_request, read.t_response = sent_answered
    write = _exchange(2, 0, 9, _produce("compat-r-s-c-t", 1), {"responses": []})
    write.conn, write.t_request, write.t_response = 2, written_at - 0.1, written_at
    return [read, write]


def _exchange(seq: int, api: int, version: int, req: dict[str, Any], resp: dict[str, Any] | None,
              tag: str = "s", conn: int = 1, answered: float | None = None) -> Exchange:
    frame = wire.encode_request(api, version, seq, req)[4:]
    answer = wire.encode_response(api, version, seq, resp)[4:] if resp is not None else None
    return Exchange(conn, seq, tag, api, version, seq, "fakekafka", frame, answer, float(seq),
                    seq + 0.5 if answered is None else answered)


def test_diff_sessions_reports_fields_known_fields_and_request_differences(tmp_path: Path) -> None:
    md_req = {"topics": [{"name": "compat-r-s-c-t"}], "allow_auto_topic_creation": False}

    def md(epoch: int, node: int) -> dict[str, Any]:
        return {"brokers": [{"node_id": node, "host": "h", "port": node + 9000}], "cluster_id": f"c{node}",
                "controller_id": node, "topics": [{"error_code": 0, "name": "compat-r-s-c-t", "partitions": [
                    {"partition_index": 0, "leader_id": node, "leader_epoch": epoch, "replica_nodes": [node],
                     "isr_nodes": [node]}]}]}
    hb = {"group_id": "g", "generation_id": 1, "member_id": "m"}
    ref = [_exchange(1, 3, 12, md_req, md(0, 1)), _exchange(2, 12, 4, hb, {"error_code": 0}),
           _exchange(3, 3, 12, {**md_req, "allow_auto_topic_creation": True}, md(0, 1))]
    sub = [_exchange(1, 3, 12, md_req, md(1, 0)), _exchange(2, 12, 4, hb, {"error_code": 27})]
    known_file = tmp_path / "K.md"
    known_file.write_text("# x\n\n## Wire fields\n\n| api | versions | field | reason |\n|---|---|---|---|\n"
                          "| `Heartbeat` | `0-4` | `error_code` | a reason |\n\n## other\n\n"
                          "| `Metadata` | `*` | `*` | not this section |\n")
    known = load_known_fields(known_file)
    assert [(k.api, k.versions, k.field) for k in known] == [("Heartbeat", "0-4", "error_code")]
    assert load_known(known_file) == []  # the scenario table's reader leaves 4-column rows alone
    stats = diff_sessions({"s / c": (ref, sub)}, ("kafka", "fakekafka"), known=known)
    m, h = stats[(3, 12)], stats[(12, 4)]
    assert m.pairs == 1 and m.compared == 1 and m.unpaired == {"kafka": 1, "fakekafka": 0}
    assert list(m.diffs) == ["topics[*].partitions[*].leader_epoch"]  # ids, hosts and ports normalised
    d = m.diffs["topics[*].partitions[*].leader_epoch"]
    assert not d.known and d.example["kafka"] == 0 and d.example["fakekafka"] == 1
    assert h.diffs["error_code"].known == "a reason"
    assert m.fields > 5


def test_cli_diff_is_a_subcommand_and_the_matrix_keeps_its_options() -> None:
    proc = subprocess.run([sys.executable, "-m", "compat", "diff", "--help"], cwd=ROOT, capture_output=True,
                          text=True, timeout=60, check=False)
    assert proc.returncode == 0 and "--broker" in proc.stdout and "reference" in proc.stdout
    proc = subprocess.run([sys.executable, "-m", "compat", "--list"], cwd=ROOT, capture_output=True, text=True,
                          timeout=60, check=False)
    assert proc.returncode == 0 and "roundtrip_none" in proc.stdout


def test_known_wire_fields_table_parses() -> None:
    rows = load_known_fields()
    assert rows, "compat/KNOWN_DIFFERENCES.md has a Wire fields table"
    assert all(r.reason for r in rows)


def _classic_join(member: str, session_ms: int = 6000, instance: str | None = None) -> dict[str, Any]:
    return {"group_id": "g", "session_timeout_ms": session_ms, "rebalance_timeout_ms": 60000, "member_id": member,
            "group_instance_id": instance, "protocol_type": "consumer",
            "protocols": [{"name": "range", "metadata": b""}]}


_JOINED = {"error_code": 0, "generation_id": 1, "protocol_type": "consumer", "protocol_name": "range",
           "leader": "m", "skip_assignment": False, "member_id": "m", "members": []}


def test_group_answers_after_a_fork_are_shown_but_not_unexplained() -> None:
    join, joined = _classic_join("m"), _JOINED
    hb = {"group_id": "g", "generation_id": 1, "member_id": "m", "group_instance_id": None}
    ref = [_exchange(1, 11, 7, join, joined), _exchange(3, 12, 4, hb, {"error_code": 0})]
    # the subject's member rejoined once more (a race went the other way), then its heartbeat differs
    sub = [_exchange(1, 11, 7, join, joined), _exchange(2, 11, 7, {**join, "rebalance_timeout_ms": 1}, joined),
           _exchange(3, 12, 4, hb, {"error_code": 27})]
    stats = diff_sessions({"s / c": (ref, sub)}, ("kafka", "fakekafka"), known=[])
    d = stats[(12, 4)].diffs["error_code"]
    assert d.count == 1 and not d.known and not d.unexplained and d.diverged == {"s / c"}
    # the same difference without the extra join is unexplained
    stats = diff_sessions({"s / c": (ref, [sub[0], sub[2]])}, ("kafka", "fakekafka"), known=[])
    assert stats[(12, 4)].diffs["error_code"].unexplained


def test_a_sync_another_members_join_was_sent_while_one_side_held_it_is_not_unexplained() -> None:
    """As seen with aiokafka's two members sharing a group.instance.id (static_member_fenced, a loaded CI run):
    Kafka held the SyncGroup while its assignment was written, the other member's rejoin came meanwhile and fenced
    it (82); fakekafka had answered it before that JoinGroup was sent."""
    def join(member: str) -> dict[str, Any]:
        return _classic_join(member, instance="same")
    joined = {**_JOINED, "leader": "m1", "member_id": "m1"}
    sync = {"group_id": "g", "generation_id": 1, "member_id": "m1", "group_instance_id": "same",
            "protocol_type": "consumer", "protocol_name": "range", "assignments": []}

    def synced(error: int) -> dict[str, Any]:
        return {"error_code": error, "protocol_type": "consumer", "protocol_name": "range", "assignment": b""}
    jg, sg = wire.ApiKey.JOIN_GROUP, wire.ApiKey.SYNC_GROUP

    def session(sync_error: int, sync_answered: float) -> list[Exchange]:
        return [_exchange(1, jg, 7, join(""), joined),
                _exchange(2, sg, 5, sync, synced(sync_error), answered=sync_answered),
                _exchange(3, jg, 7, join(""), joined, conn=2)]  # the other member's JoinGroup, sent at 3.0
    stats = diff_sessions({"s / c": (session(82, 3.4), session(0, 2.001))}, ("kafka", "fakekafka"), known=[])
    d = stats[(sg, 5)].diffs["error_code"]
    assert not d.unexplained and d.diverged == {"s / c"}
    # the same answers where both brokers had answered the SyncGroup before the JoinGroup was sent: unexplained
    stats = diff_sessions({"s / c": (session(82, 2.9), session(0, 2.001))}, ("kafka", "fakekafka"), known=[])
    assert stats[(sg, 5)].diffs["error_code"].unexplained


def test_a_heartbeat_with_an_epoch_the_broker_had_moved_past_forks_the_group() -> None:
    """As seen with confluent-kafka: a member sent its state again with epoch 2 after fakekafka had answered it
    with epoch 3 (and a smaller assignment), and was fenced; on Kafka the same heartbeat came first."""
    def hb(epoch: int, owned: list[int] | None) -> dict[str, Any]:
        return {"group_id": "g", "member_id": "m1", "member_epoch": epoch, "instance_id": None, "rack_id": None,
                "rebalance_timeout_ms": 300000, "subscribed_topic_names": None, "subscribed_topic_regex": None,
                "server_assignor": None,
                "topic_partitions": None if owned is None else [{"topic_id": TOPIC_ID, "partitions": owned}]}

    def answer(epoch: int, error: int = 0) -> dict[str, Any]:
        return {"error_code": error, "member_id": "m1", "member_epoch": epoch, "heartbeat_interval_ms": 500,
                "assignment": None}
    cgh = wire.ApiKey.CONSUMER_GROUP_HEARTBEAT
    ref = [_exchange(1, cgh, 1, hb(2, [0, 1]), answer(2)), _exchange(3, cgh, 1, hb(2, None), answer(3))]
    sub = [_exchange(1, cgh, 1, hb(2, []), answer(3)), _exchange(2, cgh, 1, hb(2, [0, 1]), answer(0, 110)),
           _exchange(3, cgh, 1, hb(2, None), answer(3))]
    stats = diff_sessions({"s / c": (ref, sub)}, ("kafka", "fakekafka"), known=[])
    d = stats[(cgh, 1)].diffs["error_code"]
    assert not d.unexplained and d.diverged == {"s / c"}
    # the same answers to heartbeats that were not behind the broker are unexplained
    sub[0] = _exchange(1, cgh, 1, hb(2, []), answer(2))
    stats = diff_sessions({"s / c": (ref, sub)}, ("kafka", "fakekafka"), known=[])
    assert stats[(cgh, 1)].diffs["error_code"].unexplained


def test_a_write_that_met_the_previous_transactions_markers_is_set_aside() -> None:
    def produce(partition: int) -> dict[str, Any]:
        return {"transactional_id": "tx", "acks": -1, "timeout_ms": 1000,
                "topic_data": [{"name": "compat-r-s-c-t", "partition_data": [{"index": partition, "records": None}]}]}

    def answer(partition: int, error: int) -> dict[str, Any]:
        return {"responses": [{"name": "compat-r-s-c-t", "partition_responses": [
            {"index": partition, "error_code": error, "base_offset": -1 if error else 2, "log_append_time_ms": -1,
             "log_start_offset": -1 if error else 0}]}]}
    # Kafka refused the first write (the last transaction's markers were in flight), the client sent it again
    ref = [_exchange(1, 0, 9, produce(0), answer(0, 51)), _exchange(2, 0, 9, produce(0), answer(0, 0)),
           _exchange(3, 0, 9, produce(1), answer(1, 0))]
    sub = [_exchange(1, 0, 9, produce(0), answer(0, 0)), _exchange(2, 0, 9, produce(1), answer(1, 0))]
    stats = diff_sessions({"s / c": (ref, sub)}, ("kafka", "fakekafka"), known=[])
    p = stats[(0, 9)]
    assert not p.diffs and p.pairs == 2 and dict(p.markers_pending) == {"kafka": 1}
    assert not p.unpaired["kafka"] and not p.unpaired["fakekafka"]
    # any other error is compared as before
    ref[0] = _exchange(1, 0, 9, produce(0), answer(0, 47))
    stats = diff_sessions({"s / c": (ref, sub)}, ("kafka", "fakekafka"), known=[])
    assert not stats[(0, 9)].markers_pending


def test_a_heartbeat_in_flight_with_another_members_leave_is_not_unexplained() -> None:
    """As seen with kcat in a loaded CI run (group_join_leave_crash_rejoin): the last member's heartbeat was answered
    REBALANCE_IN_PROGRESS by fakekafka and NONE by Kafka, the other member's LeaveGroup at the scenario's end sent
    before it on both sides (a relay or a broker under load may take two requests in flight in either order)."""
    leave = {"group_id": "g", "members": [{"member_id": "a", "group_instance_id": None}]}
    left = {"error_code": 0, "members": [{"member_id": "a", "group_instance_id": None, "error_code": 0}]}
    hb = {"group_id": "g", "generation_id": 3, "member_id": "d", "group_instance_id": None}
    lg, hbk = wire.ApiKey.LEAVE_GROUP, wire.ApiKey.HEARTBEAT

    def session(error: int, leave_answered: float) -> list[Exchange]:
        # the LeaveGroup sent at 3.0 on connection 2, the heartbeat at 4.0 (answered at 4.5) on connection 1
        return [_exchange(3, lg, 3, leave, left, conn=2, answered=leave_answered),
                _exchange(4, hbk, 3, hb, {"error_code": error})]
    stats = diff_sessions({"s / c": (session(0, 4.2), session(27, 3.001))}, ("kafka", "fakekafka"), known=[])
    d = stats[(hbk, 3)].diffs["error_code"]
    assert not d.unexplained and d.diverged == {"s / c"}
    # the LeaveGroup answered on both sides before the heartbeat was sent: its answer is compared
    stats = diff_sessions({"s / c": (session(0, 3.5), session(27, 3.001))}, ("kafka", "fakekafka"), known=[])
    assert stats[(hbk, 3)].diffs["error_code"].unexplained


def test_a_heartbeat_around_a_killed_members_session_end_is_not_unexplained() -> None:
    """As seen with aiokafka in a loaded CI run (group_join_leave_crash_rejoin): member c is killed; its session
    ends at a moment each broker's clock decides, and a's next heartbeat was answered REBALANCE_IN_PROGRESS by
    fakekafka, NONE by Kafka."""
    jg, hbk = wire.ApiKey.JOIN_GROUP, wire.ApiKey.HEARTBEAT

    def hb(member: str) -> dict[str, Any]:
        return {"group_id": "g", "generation_id": 1, "member_id": member, "group_instance_id": None}

    def session(a_error: int, a_at: int) -> list[Exchange]:
        # a joins on connection 1, c on connection 3 and heartbeats last at 3.0 (6 s sessions): killed
        return [_exchange(1, jg, 5, _classic_join(""), _JOINED),
                _exchange(2, jg, 5, _classic_join(""), _JOINED, conn=3),
                _exchange(3, hbk, 3, hb("c"), {"error_code": 0}, conn=3),
                _exchange(a_at, hbk, 3, hb("a"), {"error_code": a_error})]
    stats = diff_sessions({"s / c": (session(0, 9), session(27, 9))}, ("kafka", "fakekafka"), known=[])
    d = stats[(hbk, 3)].diffs["error_code"]
    assert not d.unexplained and d.diverged == {"s / c"}
    # a heartbeat sent well before c's session could end: its answer is compared
    stats = diff_sessions({"s / c": (session(0, 7), session(27, 7))}, ("kafka", "fakekafka"), known=[])
    assert stats[(hbk, 3)].diffs["error_code"].unexplained


def test_heartbeats_after_a_second_connection_joins_with_the_same_instance_id_are_not_unexplained() -> None:
    """As seen with aiokafka in a loaded CI run (static_member_fenced): two members share a group.instance.id and
    take the slot in turns; an evicted member's heartbeat (Heartbeat v1 carries no instance id) was answered
    UNKNOWN_MEMBER_ID by Kafka and NONE by fakekafka, which had not yet taken the other's rejoin."""
    jg, hbk = wire.ApiKey.JOIN_GROUP, wire.ApiKey.HEARTBEAT
    hb = {"group_id": "g", "generation_id": 1, "member_id": "m", "group_instance_id": None}

    def session(error: int, second_join_at: int) -> list[Exchange]:
        return [_exchange(1, jg, 5, _classic_join("", instance="same"), _JOINED),
                _exchange(second_join_at, jg, 5, _classic_join("", instance="same"), _JOINED, conn=2),
                _exchange(4, hbk, 1, hb, {"error_code": error})]
    stats = diff_sessions({"s / c": (session(25, 3), session(0, 3))}, ("kafka", "fakekafka"), known=[])
    d = stats[(hbk, 1)].diffs["error_code"]
    assert not d.unexplained and d.diverged == {"s / c"}
    # the heartbeat before the second member joined: compared
    stats = diff_sessions({"s / c": (session(25, 5), session(0, 5))}, ("kafka", "fakekafka"), known=[])
    assert stats[(hbk, 1)].diffs["error_code"].unexplained
