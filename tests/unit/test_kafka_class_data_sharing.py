"""Which JVM flags the Apache Kafka launcher gives for class-data sharing (no JVM runs here): the first broker of a
Java, JVM flags and jars records what it loads and has it written to an archive in the user's cache when stopped;
every JVM of Kafka's after that maps the archive; a test's own classes, or an archive that could not be written,
leave the JVM as it was."""

from __future__ import annotations

from pathlib import Path

import pytest

from fakekafka.testing import apache_kafka
from fakekafka.testing.apache_kafka import JVM_ARGS, KafkaCluster


@pytest.fixture
def lib(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    lib = tmp_path / "lib"
    lib.mkdir()
    (lib / "kafka_2.13-4.4.0.jar").write_bytes(b"jar")
    java = tmp_path / "java"
    java.write_text("")
    return lib


def _cluster(lib: Path, **kw: object) -> KafkaCluster:
    return KafkaCluster(lib=lib, java=str(lib.parent / "java"), **kw)  # type: ignore[arg-type]


def test_the_first_broker_records_its_classes_and_the_next_jvms_map_the_archive(lib: Path) -> None:
    cluster = _cluster(lib, brokers=3)
    assert cluster._class_data_sharing("kafka.tools.StorageTool", JVM_ARGS) == ()
    assert cluster._class_data_sharing("kafka.Kafka", JVM_ARGS) == ("-XX:+RecordDynamicDumpInfo",)
    assert cluster._class_data_sharing("kafka.Kafka", JVM_ARGS) == ()  # one broker of the cluster writes it
    dumping = cluster._dumping
    assert dumping is not None and dumping.parent == lib.parent / "cache" / "fakekafka" / "cds"
    archive = dumping.with_name(dumping.name.split(".jsa.")[0] + ".jsa")
    archive.write_bytes(b"archive")  # as stop() leaves it after the broker wrote it
    for main in ("kafka.tools.StorageTool", "kafka.Kafka"):
        assert _cluster(lib)._class_data_sharing(main, JVM_ARGS)[0] == f"-XX:SharedArchiveFile={archive}"
    other_flags = (*JVM_ARGS, "-Xmx1g")
    assert _cluster(lib)._class_data_sharing("kafka.Kafka", other_flags) == ("-XX:+RecordDynamicDumpInfo",)
    (lib / "kafka-clients-4.4.0.jar").write_bytes(b"another jar")  # other jars: another archive
    assert _cluster(lib)._class_data_sharing("kafka.Kafka", JVM_ARGS) == ("-XX:+RecordDynamicDumpInfo",)


def test_a_tests_own_classes_or_a_failed_archive_leave_the_jvm_as_it_was(lib: Path) -> None:
    assert _cluster(lib, classpath=("/plugin",))._class_data_sharing("kafka.Kafka", JVM_ARGS) == ()
    archive = apache_kafka._cds_archive(str(lib.parent / "java"), JVM_ARGS, lib)
    assert archive is not None
    archive.with_name(archive.name + ".failed").touch()
    assert _cluster(lib)._class_data_sharing("kafka.Kafka", JVM_ARGS) == ()


def test_a_dump_that_fails_is_not_tried_again(lib: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    cluster = _cluster(lib)
    cluster._class_data_sharing("kafka.Kafka", JVM_ARGS)
    dumping = cluster._dumping
    assert dumping is not None
    cluster._dump_classes(1, dumping)  # no jcmd beside this java
    assert not dumping.exists()
    assert _cluster(lib)._class_data_sharing("kafka.Kafka", JVM_ARGS) == ()
