"""Mixed groups end to end (KIP-848's upgrade and downgrade paths): Kafka's Java client 4.4 with one member on
`group.protocol=classic` and one on `consumer` in the same group, and a rolling restart of three classic members
onto the consumer protocol and back, against fakekafka and, under `pytest --kafka-real`, Apache Kafka 4.4.0 with
the same assertions (both brokers with `group.consumer.migration.policy` at its default, bidirectional).

One JVM (tests/integration/clients/java/MixedGroupDriver.java) runs both scenarios against one broker; members commit
after every poll and when they give partitions up, and every record each gets is tallied: each step waits for one
owner per partition and every record produced so far consumed.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from fakekafka.testing.pytest_plugin import cluster_for
from tests import javautil
from tests.javautil import JavaRun

pytestmark = [pytest.mark.clients, pytest.mark.kafka_real]

JAVA_SOURCE = Path(__file__).resolve().parent / "java" / "MixedGroupDriver.java"
RUN_TIMEOUT_S = 300


@pytest.fixture(scope="module")
def java(request: pytest.FixtureRequest) -> Iterator[JavaRun]:
    classes = javautil.compile_java(JAVA_SOURCE)
    with cluster_for(request.config) as cluster:
        yield javautil.run_driver(JavaRun(cluster), classes, "MixedGroupDriver",  # type: ignore[arg-type]
                                  cluster.bootstrap_servers, timeout=RUN_TIMEOUT_S)


def test_a_classic_and_a_consumer_member_share_a_group(java: JavaRun) -> None:
    r = java.result("mixed")
    assert r["classic_alone"] == {"type": "Classic", "state": "Stable", "members": {"A": "-"}}
    # the consumer-protocol member upgraded the group: one consumer group, A still on the classic protocol
    assert r["mixed"] == {"type": "Consumer", "state": "Stable", "members": {"A": "classic", "B": "consumer"}}
    # B left: the group went back to being a classic group (downgraded) and A has every partition again
    assert r["downgraded"] == {"type": "Classic", "state": "Stable", "members": {"A": "-"}}
    assert (r["consumed"], r["duplicates"]) == (r["produced"], 0)


def test_rolling_upgrade_to_the_consumer_protocol_and_back(java: JavaRun) -> None:
    r = java.result("rolling")
    assert r["types"] == ["Consumer"] * 3 + ["Consumer", "Consumer", "Classic"]
    assert r["all_consumer"] == {"A": "consumer", "B": "consumer", "C": "consumer"}
    assert r["all_classic"] == {"A": "-", "B": "-", "C": "-"}
    assert (r["consumed"], r["duplicates"]) == (r["produced"], 0)
