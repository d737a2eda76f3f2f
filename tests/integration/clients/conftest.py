"""The single-client tests (test_kafka_python, test_confluent_kafka, test_kcat, test_aiokafka) run on the
plugin's cluster: an in-process fakekafka per test by default, Apache Kafka under `pytest --kafka-real` (or
any cluster under `--fakekafka-bootstrap`). They read what the broker stored through the handle
(`records`, `end_offsets`, `topics`, and `stored_codecs` in scenarios.py), never fakekafka's model, so the
same assertions hold the real broker to account; those that steer fakekafka carry `fakekafka_only`."""

from __future__ import annotations

import pytest

from fakekafka.testing.handle import ClusterHandle


@pytest.fixture
def broker(kafka: ClusterHandle) -> ClusterHandle:
    """The test's cluster (the `kafka` fixture), under the name these modules use."""
    return kafka
