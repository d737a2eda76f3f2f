"""Steering transactions from a test: the handle shows them, aborts one, and a frozen clock times one out.

These are fakekafka's own controls (a real cluster has none), so they run on fakekafka only; the client's
reaction to a coordinator-side abort is the one it has with Kafka (tests/integration/clients/test_transactions.py).
"""

from __future__ import annotations

import pytest
from confluent_kafka import KafkaError, KafkaException, Producer

import fakekafka
from fakekafka.model.clock import ManualClock

pytestmark = pytest.mark.clients

TIMEOUT = 15.0


def _open_transaction(cluster: fakekafka.Cluster, tid: str, **config: object) -> Producer:
    p = Producer({"bootstrap.servers": cluster.bootstrap_servers, "transactional.id": tid, "linger.ms": 0,
                  **config})
    p.init_transactions(TIMEOUT)
    p.begin_transaction()
    p.produce("t", b"pending", partition=0)
    p.flush(TIMEOUT)
    return p


def test_the_handle_shows_and_aborts_a_transaction() -> None:
    with fakekafka.Cluster() as cluster:
        cluster.create_topic("t", 1)
        p = _open_transaction(cluster, "steered")
        view = cluster.transaction("steered")
        assert view is not None and view.state == "Ongoing" and view.partitions == [("t", 0)]
        assert cluster.last_stable_offset("t", 0) == 0
        assert "steered: Ongoing" in cluster.describe()
        cluster.abort_transaction("steered")
        view = cluster.transaction("steered")
        assert view is not None and view.state == "CompleteAbort"
        assert view.transitions[-3:] == [("Ongoing", "PrepareEpochFence"), ("PrepareEpochFence", "PrepareAbort"),
                                         ("PrepareAbort", "CompleteAbort")]
        assert cluster.last_stable_offset("t", 0) == 2  # the aborted batch and its marker
        with pytest.raises(KafkaException) as raised:
            p.commit_transaction(TIMEOUT)
        assert raised.value.args[0].code() == KafkaError._FENCED
        # the fenced producer cannot be closed (its abort fails); dropped while its cluster still runs, with the
        # exception that holds it, so it does not go on connecting to the stopped cluster during the next test
        del raised, p
        with pytest.raises(ValueError, match="no open transaction"):
            cluster.abort_transaction("steered")


def test_a_frozen_clock_times_a_transaction_out() -> None:
    with fakekafka.Cluster(clock=ManualClock()) as cluster:
        cluster.create_topic("t", 1)
        _open_transaction(cluster, "slow", **{"transaction.timeout.ms": 10_000})
        cluster.advance_clock(9_999)
        assert cluster.transaction("slow").state == "Ongoing"  # type: ignore[union-attr]
        cluster.advance_clock(1)
        assert cluster.transaction("slow").state == "CompleteAbort"  # type: ignore[union-attr]
        assert cluster.last_stable_offset("t", 0) == 2
