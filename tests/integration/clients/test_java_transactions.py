"""End-to-end: the Java client's (kafka-clients 4.4) transactions against the plugin's cluster: fakekafka in the
ordinary run, Apache Kafka 4.4 under `pytest --kafka-real` the kafka-real tier, `-m kafka_real`, runs this module so).

One JVM (tests/integration/clients/java/TxnDriver.java) runs four scenarios, the slow one ("timeout", which waits for
the broker to abort a transaction on its own) in a thread beside the others; each test asserts one scenario's JSON
result and cross-checks what the broker stored through the cluster handle:

- commit_abort: committed, aborted and open transactions seen by read_committed and read_uncommitted consumers;
- fencing: a second producer with the same transactional.id fences the first (open transaction or idle);
- ctp: consume-transform-produce with sendOffsetsToTransaction; the app (a child JVM) dies mid-transaction
  after producing outputs and sending offsets, and the restarted app processes every input exactly once;
- timeout: transaction.timeout.ms=2000 and a transaction left open: the broker aborts it.

What a fenced or timed-out producer meets depends on the cluster's finalized `transaction.version`: Kafka 4.4
finalizes 2 (KIP-890 part 2) by default, fakekafka serves version 1 (fakekafka/model/transactions.py). The
version-1 expectations below are also what Kafka 4.4 gives with transaction.version downgraded to 1 (checked by
hand with `Admin.updateFeatures`), so the two brokers agree wherever they speak the same version.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import fakekafka
from fakekafka.testing.pytest_plugin import cluster_for
from tests import javautil
from tests.javautil import JavaRun

pytestmark = [pytest.mark.clients, pytest.mark.kafka_real]

JAVA_SOURCE = Path(__file__).resolve().parent / "java" / "TxnDriver.java"
RUN_TIMEOUT_S = 150
SCENARIOS = ["commit_abort", "fencing", "ctp", "timeout"]


@pytest.fixture(scope="module")
def java(request: pytest.FixtureRequest) -> Iterator[JavaRun]:
    """One cluster (`cluster_for`: fakekafka, or Kafka under --kafka-real) and one JVM running every scenario;
    the cluster stays up for the tests' checks."""
    classes = javautil.compile_java(JAVA_SOURCE)
    with cluster_for(request.config) as cluster:
        yield javautil.run_driver(JavaRun(cluster), classes, "TxnDriver",  # type: ignore[arg-type]
                                  cluster.bootstrap_servers, timeout=RUN_TIMEOUT_S)


def _local(java: JavaRun) -> fakekafka.Cluster | None:
    return java.cluster if isinstance(java.cluster, fakekafka.Cluster) else None


def _view(values: list[str], offsets: list[int], end: int) -> dict[str, Any]:
    """A consumer's read of a partition from the start: it stops at `end` (its isolation level's end offset)."""
    return {"end": end, "position": end, "values": values, "offsets": offsets}


# ------------------------------------------------------------------------------------ commit / abort

COMMITTED = ["c0", "c1", "c2", "c3", "c4"]
ABORTED = ["a0", "a1", "a2", "a3", "a4"]
LATE = ["o0", "o1", "n0"]  # the third transaction's two records, then a plain producer's written while it is open


def test_read_committed_sees_committed_records_only(java: JavaRun) -> None:
    r = java.result("commit_abort")
    # offsets: c0-c4 0-4, commit marker 5, a0-a4 6-10, abort marker 11, o0 o1 12-13, n0 14, commit marker 15
    assert r["final"]["read_committed"] == _view(COMMITTED + LATE, [0, 1, 2, 3, 4, 12, 13, 14], 16)
    assert r["final"]["read_uncommitted"] == _view(COMMITTED + ABORTED + LATE, [*range(5), *range(6, 11), 12, 13, 14],
                                                   16)
    assert java.cluster.end_offsets("txn-rc") == {0: 16}
    # the data records as stored, aborted ones included (the in-process handle's `records` also lists the
    # markers, as control records; the remote one leaves them out)
    markers = {5, 11, 15}
    assert [(rec.offset, rec.value) for rec in java.cluster.records("txn-rc") if rec.offset not in markers] == \
        [(o, v.encode()) for o, v in zip([*range(5), *range(6, 11), 12, 13, 14], COMMITTED + ABORTED + LATE,
                                         strict=True)]


def test_open_transaction_holds_back_read_committed_at_the_last_stable_offset(java: JavaRun) -> None:
    r = java.result("commit_abort")["open"]
    # the open transaction starts at 12: read_committed ends there, the plain record at 14 waits behind it
    assert r["read_committed"] == _view(COMMITTED, [0, 1, 2, 3, 4], 12)
    assert r["read_uncommitted"] == _view(COMMITTED + ABORTED + LATE, [*range(5), *range(6, 11), 12, 13, 14], 15)


# ------------------------------------------------------------------------------------------ fencing

FENCED = {
    # transaction.version 0-1: AddPartitionsToTxn and EndTxn v4 with the old epoch get PRODUCER_FENCED
    1: {"open_send": "InvalidProducerEpochException", "open_commit": "InvalidProducerEpochException",
        "open_abort": "ProducerFencedException", "idle_begin": "ok", "idle_send": "ProducerFencedException",
        "idle_commit": "ProducerFencedException"},
    # transaction.version 2: the idle producer sends no AddPartitionsToTxn (Produce adds the partition); its
    # Produce is refused with INVALID_PRODUCER_EPOCH, an abortable error its commit then rethrows
    2: {"open_send": "InvalidProducerEpochException", "open_commit": "InvalidProducerEpochException",
        "open_abort": "ProducerFencedException", "idle_begin": "ok", "idle_send": "InvalidProducerEpochException",
        "idle_commit": "InvalidProducerEpochException"},
}
"""What the fenced producer's calls meet, by the cluster's transaction.version (as Kafka 4.4 gives them)."""


def test_second_producer_with_the_same_transactional_id_fences_the_first(java: JavaRun) -> None:
    r = java.result("fencing")
    tv = min(r.pop("transaction_version"), 2) or 1
    final = r.pop("final")
    assert r == FENCED[tv]
    # first's open transaction was aborted by second's initTransactions; nothing a fenced producer sent got in
    assert final["read_committed"] == _view(["second-0", "third-0"], [2, 4], 6)
    assert final["read_uncommitted"] == _view(["first-0", "second-0", "third-0"], [0, 2, 4], 6)


# --------------------------------------------------------------------------- consume-transform-produce

def test_consume_transform_produce_is_exactly_once_across_a_crash(java: JavaRun) -> None:
    r = java.result("ctp")
    inputs = r["inputs"]
    assert len(inputs) == 24
    crashed, restarted = r["crashed"], r["restarted"]
    assert crashed["committed_transactions"] == 2 and crashed["inflight_outputs"]
    committed_view = r["output"]["read_committed"]
    # every input's output exactly once, in the order the two runs committed them
    assert Counter(committed_view["values"]) == Counter(f"out-{v}" for v in inputs)
    assert committed_view["values"] == crashed["committed_outputs"] + restarted["committed_outputs"]
    for part in ("0", "1"):  # each input partition's outputs in input order
        assert [v for v in committed_view["values"] if v.startswith(f"out-in-{part}-")] == \
            [f"out-{v}" for v in inputs if v.startswith(f"in-{part}-")]
    # the dead app's outputs are on the broker, aborted: only read_uncommitted sees them, as duplicates
    uncommitted = Counter(r["output"]["read_uncommitted"]["values"])
    assert uncommitted - Counter(committed_view["values"]) == Counter(crashed["inflight_outputs"])
    # the group's offsets moved with the transactions: the input's end, not the dead app's staged ones
    assert r["committed"] == {"txn-ctp-in-0": 12, "txn-ctp-in-1": 12}
    assert java.cluster.committed("txn-ctp") == {("txn-ctp-in", 0): 12, ("txn-ctp-in", 1): 12}
    assert java.cluster.end_offsets("txn-ctp-out") == {0: committed_view["end"]}
    local = _local(java)
    if local is not None:  # the restarted app's initTransactions fenced the dead one's open transaction
        view = local.transaction("txn-ctp-app")
        assert view is not None and view.state == "CompleteCommit"
        assert ("Ongoing", "PrepareEpochFence") in view.transitions


# ------------------------------------------------------------------------------------------ timeout

TIMED_OUT = {
    # transaction.version 0-1: the abort bumped the epoch; EndTxn v4 with the old one gets PRODUCER_FENCED
    1: {"commit": "ProducerFencedException", "abort": "ProducerFencedException",
        "next_begin": "ProducerFencedException"},
    # transaction.version 2: EndTxn v5 gets INVALID_TXN_STATE, fatal: later calls fail with KafkaException
    # ("Cannot execute transactional method because we are in an error state")
    2: {"commit": "InvalidTxnStateException", "abort": "KafkaException", "next_begin": "KafkaException"},
}
"""What the producer meets after the broker aborted its timed-out transaction, by transaction.version."""


def test_broker_aborts_a_transaction_open_past_its_timeout(java: JavaRun) -> None:
    r = java.result("timeout")
    tv = min(r.pop("transaction_version"), 2) or 1
    states, aborted_after = r.pop("states"), r.pop("aborted_after_ms")
    final = r.pop("final")
    assert states[0] == "Ongoing" and states[-1] == "CompleteAbort"
    # not before transaction.timeout.ms (Kafka looks every 10 s, transaction.abort.timed.out.transaction.
    # cleanup.interval.ms; fakekafka as soon as the timeout passes)
    assert aborted_after >= 2000
    assert r == TIMED_OUT[tv]
    assert final["read_committed"] == _view([], [], 2)       # t0 at 0, the abort marker at 1
    assert final["read_uncommitted"] == _view(["t0"], [0], 2)
    local = _local(java)
    if local is not None:  # the coordinator fenced the producer (an epoch bump) as it aborted
        view = local.transaction("txn-timeout")
        assert view is not None and view.state == "CompleteAbort"
        assert view.transitions[-3:] == [("Ongoing", "PrepareEpochFence"), ("PrepareEpochFence", "PrepareAbort"),
                                         ("PrepareAbort", "CompleteAbort")]


# -------------------------------------------------------------------------------------------- the run

def test_every_scenario_ran_and_the_broker_logged_no_problem(java: JavaRun) -> None:
    failed = {name: r["error"].splitlines()[0] for name, r in java.results.items() if not r["ok"]}
    assert not failed
    assert set(java.results) == set(SCENARIOS)
    assert java.server_problems == []
    local = _local(java)
    if local is not None:  # the transactional APIs the client used, on the broker we can watch
        assert {"InitProducerId", "TxnOffsetCommit", "EndTxn", "DescribeTransactions"} <= set(java.api_calls)
        # transactions version 2 (fakekafka's default, as Kafka 4.4's): Produce and TxnOffsetCommit add the
        # partitions, so the client sends no AddPartitionsToTxn/AddOffsetsToTxn; version 1 sends both
        explicit = {"AddPartitionsToTxn", "AddOffsetsToTxn"} & set(java.api_calls)
        assert explicit == (set() if local.state.config.transaction_version >= 2 else
                            {"AddPartitionsToTxn", "AddOffsetsToTxn"})
