"""tests/javautil.py's client versions: the ones .ci/install.sh installs, each found by name."""

from __future__ import annotations

import re
import zipfile
from pathlib import Path

import pytest

from tests import javautil

INSTALL_SH = Path(__file__).resolve().parents[2] / ".ci" / "install.sh"


def test_versions_are_the_install_scripts() -> None:
    """javautil names the versions install.sh resolves, newest first (the one $FAKEKAFKA_JARS holds)."""
    found = re.search(r"^CLIENT_VERSIONS=\(([^)]*)\)", INSTALL_SH.read_text(), re.M)
    assert found is not None
    assert javautil.CLIENT_VERSIONS == tuple(found.group(1).split())
    assert javautil.CLIENT_VERSION == javautil.CLIENT_VERSIONS[0]


@pytest.mark.parametrize("version", javautil.CLIENT_VERSIONS[1:])
def test_older_version_has_its_own_jars(version: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """An older client's classpath is its own directory, whatever $FAKEKAFKA_CLASSPATH says (that is the newest)."""
    monkeypatch.setenv("FAKEKAFKA_CLASSPATH", "/nowhere/*")
    cp = javautil.classpath(version)
    assert Path(cp).parent.name == f"kafka-clients-{version}"
    assert (Path(cp).parent / f"kafka-clients-{version}.jar").is_file()


def test_unknown_version_is_refused() -> None:
    with pytest.raises(ValueError, match="not installed by .ci/install.sh"):
        javautil.classpath("1.0.0")


def test_streams_version_is_the_poms(monkeypatch: pytest.MonkeyPatch) -> None:
    """javautil looks for Kafka Streams where install.sh puts compat/kafka/streams-pom.xml's version."""
    pom = (INSTALL_SH.parents[1] / "compat" / "kafka" / "streams-pom.xml").read_text()
    found = re.search(r"<kafka.streams.version>(.*)</kafka.streams.version>", pom)
    assert found is not None
    assert javautil.STREAMS_VERSION == found.group(1)
    monkeypatch.delenv("FAKEKAFKA_STREAMS_JARS", raising=False)
    cp = javautil.streams_classpath()
    assert (Path(cp).parent / f"kafka-streams-{javautil.STREAMS_VERSION}.jar").is_file()


def test_connect_version_is_the_poms(monkeypatch: pytest.MonkeyPatch) -> None:
    """javautil looks for Kafka Connect where install.sh puts compat/kafka/connect-pom.xml's version."""
    pom = (INSTALL_SH.parents[1] / "compat" / "kafka" / "connect-pom.xml").read_text()
    found = re.search(r"<kafka.connect.version>(.*)</kafka.connect.version>", pom)
    assert found is not None
    assert javautil.CONNECT_VERSION == found.group(1)
    monkeypatch.delenv("FAKEKAFKA_CONNECT_JARS", raising=False)
    cp = javautil.connect_classpath()
    for artifact in ("connect-runtime", "connect-file"):
        assert (Path(cp).parent / f"{artifact}-{javautil.CONNECT_VERSION}.jar").is_file()


def test_tools_version_is_the_poms(monkeypatch: pytest.MonkeyPatch) -> None:
    """tests/kafkacli.py looks for Kafka's tools where install.sh puts compat/kafka/tools-pom.xml's version, and
    every main class it names is in those jars."""
    from tests import kafkacli
    pom = (INSTALL_SH.parents[1] / "compat" / "kafka" / "tools-pom.xml").read_text()
    found = re.search(r"<kafka.tools.version>(.*)</kafka.tools.version>", pom)
    assert found is not None
    assert kafkacli.TOOLS_VERSION == found.group(1)
    monkeypatch.delenv("FAKEKAFKA_TOOLS_JARS", raising=False)
    jars = Path(kafkacli.tools_classpath()).parent
    assert (jars / f"kafka-tools-{kafkacli.TOOLS_VERSION}.jar").is_file()
    names: set[str] = set()
    for jar in jars.glob("kafka*.jar"):
        names.update(zipfile.ZipFile(jar).namelist())
    assert [m for m in kafkacli.TOOLS.values() if m.replace(".", "/") + ".class" not in names] == []
