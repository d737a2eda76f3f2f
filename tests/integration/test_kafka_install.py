"""`fakekafka kafka install` with Maven and Maven Central: Apache Kafka's jars land in the user's cache (a
temporary one here, through XDG_CACHE_HOME), where `kafka_lib()` and so --kafka-real find them."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from fakekafka.testing.apache_kafka import KAFKA_VERSION, kafka_lib


def test_install_resolves_kafka_into_the_users_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    if shutil.which("mvn") is None or shutil.which("java") is None:
        pytest.skip("needs Maven and Java (apt-get install maven openjdk-17-jdk-headless)")
    env = {**os.environ, "XDG_CACHE_HOME": str(tmp_path)}
    env.pop("FAKEKAFKA_KAFKA_LIB", None)
    lib = tmp_path / "fakekafka" / f"kafka-{KAFKA_VERSION}" / "lib"

    def install() -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "fakekafka", "kafka", "install"], env=env, capture_output=True,
                              text=True, timeout=900)
    first = install()
    assert first.returncode == 0, first.stderr
    jars = sorted(p.name for p in lib.glob("*.jar"))
    assert first.stdout == (f"fakekafka kafka install: Apache Kafka {KAFKA_VERSION} installed in {lib} "
                            f"({len(jars)} jars)\n")
    assert f"kafka_2.13-{KAFKA_VERSION}.jar" in jars and f"kafka-clients-{KAFKA_VERSION}.jar" in jars
    assert not (lib.parent / "lib.tmp").exists()
    ci = Path.home() / ".cache" / "fakekafka" / f"kafka-{KAFKA_VERSION}" / "lib"
    if any(ci.glob("kafka_2.13-*.jar")):  # .ci/install.sh resolved the same pom: the same jars
        assert jars == sorted(p.name for p in ci.glob("*.jar"))

    again = install()
    assert again.returncode == 0 and "is installed already" in again.stdout

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    monkeypatch.delenv("FAKEKAFKA_KAFKA_LIB", raising=False)
    assert kafka_lib() == lib


def test_a_version_maven_central_does_not_have_is_said_in_words(tmp_path: Path) -> None:
    if shutil.which("mvn") is None:
        pytest.skip("needs Maven (apt-get install maven)")
    r = subprocess.run([sys.executable, "-m", "fakekafka", "kafka", "install", "--version", "0.0.1", "--lib",
                        str(tmp_path / "lib")], capture_output=True, text=True, timeout=900)
    assert r.returncode == 1 and r.stdout == ""
    assert r.stderr.startswith("fakekafka kafka install: Maven could not resolve Apache Kafka 0.0.1 from Maven "
                               "Central: "), r.stderr
    assert "Traceback" not in r.stderr and not (tmp_path / "lib").exists() and not (tmp_path / "lib.tmp").exists()
