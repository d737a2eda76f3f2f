"""Share groups (KIP-932) end to end with the Java client's KafkaShareConsumer (kafka-clients 4.4), against the
plugin's cluster: fakekafka in the ordinary run, Apache Kafka 4.4 under `pytest --kafka-real`.

One JVM (tests/integration/clients/java/ShareDriver.java) runs every scenario; each starts a share group at offset 0
with AlterShareGroupOffsets, as an operator would, so records produced before the consumers start are delivered:
- deliver: implicit acknowledgement, every record once;
- release: RELEASE brings each record back with delivery count 2;
- reject: REJECT archives the records, nothing comes back;
- limit: a record released every time is delivered group.share.delivery.count.limit (5) times, then archived;
- shared: two members on one partition share it (both assigned it) and each record is accepted once;
- admin: ListGroups lists it as a share group while it has a member; DeleteGroups refuses it then
  (GroupNotEmptyException) and deletes it once the member left;
- read_committed / read_uncommitted: the group config share.isolation.level (IncrementalAlterConfigs on the
  GROUP) over a transactional producer's committed, aborted and still open transactions;
- dlq: KIP-1191's dead-letter queue: a record rejected and one released until out of delivery attempts land in
  the group's DLQ topic with Kafka's `__dlq.errors.*` headers, no key or value; dlq_copy: the same with
  `errors.deadletterqueue.copy.record.enable`, the original key and value copied (not its headers).
The share-partition start offset the admin client lists afterwards is checked on fakekafka only: Kafka 4.4's
share coordinator had not persisted the advanced offset 15 s after the consumer closed (it answered 0), see
compat/KNOWN_DIFFERENCES.md ("Share groups").
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

import fakekafka
from fakekafka.testing.pytest_plugin import cluster_for
from tests import javautil
from tests.javautil import JavaRun

pytestmark = [pytest.mark.clients, pytest.mark.kafka_real]

JAVA_SOURCE = Path(__file__).resolve().parent / "java" / "ShareDriver.java"
SCENARIOS = ["deliver", "release", "reject", "limit", "shared", "admin", "read_committed", "read_uncommitted", "dlq",
             "dlq_copy"]


@pytest.fixture(scope="module")
def java(request: pytest.FixtureRequest) -> Iterator[JavaRun]:
    classes = javautil.compile_java(JAVA_SOURCE)
    with cluster_for(request.config) as cluster:
        yield javautil.run_driver(JavaRun(cluster), classes, "ShareDriver",  # type: ignore[arg-type]
                                  cluster.bootstrap_servers, "share", *SCENARIOS, timeout=240)


def _fake(java: JavaRun) -> fakekafka.Cluster | None:
    return java.cluster if isinstance(java.cluster, fakekafka.Cluster) else None


def test_every_record_is_delivered_once_with_implicit_acknowledgement(java: JavaRun) -> None:
    r = java.result("deliver")
    assert (r["values"], r["deliveries"], r["max_delivery_count"]) == (20, 20, 1)
    assert (r["state"], r["members"]) == ("Stable", 1)
    if _fake(java) is not None:
        assert r["start_offset"] == 20


def test_released_records_come_back_with_their_delivery_count(java: JavaRun) -> None:
    r = java.result("release")
    assert r["delivery_counts"] == [1] * 5 + [2] * 5
    if (cluster := _fake(java)) is not None:
        assert r["start_offset"] == 5
        assert any(e.kind == "share_member_removed" and e.details["released"] == 0 for e in cluster.events())


def test_rejected_records_are_never_redelivered(java: JavaRun) -> None:
    r = java.result("reject")
    assert (r["first"], r["again"]) == (5, 0)
    if _fake(java) is not None:
        assert r["start_offset"] == 5


def test_a_record_is_archived_at_the_delivery_count_limit(java: JavaRun) -> None:
    r = java.result("limit")
    assert (r["deliveries"], r["last_delivery_count"]) == (5, 5)
    if _fake(java) is not None:
        assert r["start_offset"] == 1


def test_members_outnumbering_partitions_share_them(java: JavaRun) -> None:
    r = java.result("shared")
    assert (r["values"], r["deliveries"], r["members"], r["partitions_assigned"]) == (200, 200, 2, 2)


def test_admin_lists_and_deletes_share_groups(java: JavaRun) -> None:
    r = java.result("admin")
    assert r["listed"] == "Share/share/Stable"
    assert r["delete_while_active"] == "GroupNotEmptyException"
    assert r["listed_after_delete"] == "absent"


def test_read_committed_delivers_committed_records_and_waits_for_the_open_transaction(java: JavaRun) -> None:
    r = java.result("read_committed")
    assert (r["before"], r["after"]) == ("c0,c1,c2,c3", "o0,o1")


def test_read_uncommitted_delivers_aborted_and_open_records_too(java: JavaRun) -> None:
    r = java.result("read_uncommitted")
    assert (r["before"], r["after"]) == ("c0,c1,c2,a0,a1,c3,o0,o1", "")


@pytest.mark.parametrize(("scenario", "k0", "k1"), [("dlq", "null/null", "null/null"), ("dlq_copy", "k0/v0", "k1/v1")])
def test_rejected_and_exhausted_records_land_in_the_dead_letter_topic_with_kafkas_headers(
        java: JavaRun, scenario: str, k0: str, k1: str) -> None:
    r = java.result(scenario)
    assert r["deliveries"] == 3  # k0 once (rejected), k1 twice (released at the delivery count limit, 2)
    common = f"__dlq.errors.topic=share-{scenario}|__dlq.errors.partition=0"
    group = f"__dlq.errors.group=share-g-{scenario}"
    assert r["letters"] == [
        f"{k0}/CreateTime|{common}|__dlq.errors.offset=0|{group}"
        "|__dlq.errors.delivery.count=1|__dlq.errors.message=Offset rejected by client.",
        f"{k1}/CreateTime|{common}|__dlq.errors.offset=1|{group}"
        "|__dlq.errors.delivery.count=2|__dlq.errors.message=Offset delivery count exceeded the threshold.",
    ]
