"""The Apache Kafka launcher's class-data sharing on a real JVM: the first broker, when stopped, has its loaded
classes written to an archive in the user's cache; the next broker maps that archive and works."""

from __future__ import annotations

from pathlib import Path

import pytest

from fakekafka.testing.apache_kafka import KafkaCluster, kafka_lib
from fakekafka.testing.client import RemoteCluster


def test_the_next_broker_maps_the_archive_the_first_one_wrote(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    lib = kafka_lib()
    if lib is None:
        pytest.skip("Apache Kafka's jars are not installed (fakekafka kafka install)")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))  # an empty cache: no archive yet
    first = KafkaCluster(lib=lib).start()
    try:
        assert "-XX:+RecordDynamicDumpInfo" in Path(f"/proc/{first.pids[0]}/cmdline").read_text()
    finally:
        first.stop()
    archives = list((tmp_path / "fakekafka" / "cds").glob("*"))
    assert [a.suffix for a in archives] == [".jsa"], archives
    second = KafkaCluster(lib=lib).start()
    try:
        assert str(archives[0]) in Path(f"/proc/{second.pids[0]}/maps").read_text()  # mapped, not just named
        with RemoteCluster(second.bootstrap_servers) as cluster:
            cluster.create_topic("t", 2)
            assert cluster.produce("t", b"v", partition=1) == (1, 0)
    finally:
        second.stop()
