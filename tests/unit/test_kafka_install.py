"""`fakekafka kafka install`'s checks that need no Maven: the shipped pom, the version it resolves, and mistakes
said in words before Maven runs (tests/integration/test_kafka_install.py runs Maven)."""

from __future__ import annotations

import importlib.resources
import re
from pathlib import Path

import pytest

from fakekafka.ops import kafka_install
from fakekafka.ops.cli import main
from fakekafka.testing.apache_kafka import INSTALL_HINT, KAFKA_VERSION, cache_lib


def test_the_pom_ships_in_the_package_and_pins_the_version_kafka_real_runs() -> None:
    pom = (importlib.resources.files("fakekafka.testing") / "kafka-pom.xml").read_text()
    assert re.search(r"<kafka\.version>(.*)</kafka\.version>", pom)[1] == KAFKA_VERSION  # type: ignore[index]


def test_the_hint_names_the_command() -> None:
    assert "`fakekafka kafka install`" in INSTALL_HINT and ".ci/" not in INSTALL_HINT


def test_the_cache_is_where_kafka_lib_looks(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert cache_lib("4.3.1") == tmp_path / "fakekafka" / "kafka-4.3.1" / "lib"
    monkeypatch.delenv("XDG_CACHE_HOME")
    assert cache_lib() == Path.home() / ".cache" / "fakekafka" / f"kafka-{KAFKA_VERSION}" / "lib"


@pytest.mark.parametrize(("args", "words"), [
    (["--version", "4.x"], "fakekafka kafka install: --version '4.x' is not a Kafka version such as "),
    (["--version", "4.4.0; rm -rf /"], "is not a Kafka version"),
])
def test_a_bad_version_is_refused_before_maven_runs(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                    args: list[str], words: str) -> None:
    assert main(["kafka", "install", "--lib", str(tmp_path / "lib"), *args]) == 1
    assert words in capsys.readouterr().err
    assert not (tmp_path / "lib").exists()


def test_without_maven_it_says_what_to_install(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(kafka_install.shutil, "which", lambda name: None)
    assert main(["kafka", "install", "--lib", str(tmp_path / "lib")]) == 1
    err = capsys.readouterr().err
    assert err.startswith("fakekafka kafka install: Maven (mvn) is not on PATH: install it") and "maven" in err


def test_jars_already_there_are_not_resolved_again(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    lib = tmp_path / "lib"
    lib.mkdir()
    (lib / f"kafka_2.13-{KAFKA_VERSION}.jar").write_bytes(b"")
    monkeypatch.setattr(kafka_install.shutil, "which", lambda name: pytest.fail("Maven was looked for"))
    assert main(["kafka", "install", "--lib", str(lib)]) == 0
    assert f"Apache Kafka {KAFKA_VERSION} is installed already in {lib}" in capsys.readouterr().out
