"""The built wheel in a user's project: installed into a fresh virtualenv (no system site packages, its
dependencies from PyPI) beside a project with a `wire.py` of its own, whose pytest run must pass. The wheel once
installed a bare top-level `wire` package, and with it fakekafka's pytest plugin broke every such project's run
("No module named 'wire.records'; 'wire' is not a package"), tests that never touch Kafka included."""

from __future__ import annotations

import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

# one worker builds the module's one wheel
pytestmark = [pytest.mark.timeout(600), pytest.mark.xdist_group("packaging")]


def _run(*cmd: str | Path, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run([str(c) for c in cmd], cwd=cwd, capture_output=True, text=True, timeout=540)
    assert proc.returncode == 0, f"{' '.join(map(str, cmd))} exited {proc.returncode}:\n{proc.stdout[-3000:]}" \
                                 f"\n{proc.stderr[-3000:]}"
    return proc


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The wheel, built as pip builds it for a user (in isolation, pyproject's build requirements from PyPI) from a
    copy of the sources: setuptools builds in the source tree (build/, the egg-info), and two builds in one tree
    at once (two xdist workers) removed each other's files."""
    work = tmp_path_factory.mktemp("wheel")
    source = work / "source"
    source.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy2(ROOT / name, source / name)
    # fakekafka/wire is a link to the repository's wire/: copied as the directory it points to
    shutil.copytree(ROOT / "fakekafka", source / "fakekafka", ignore=shutil.ignore_patterns("__pycache__"))
    _run(sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", work / "dist", source)
    (built,) = (work / "dist").glob("fakekafka-*.whl")
    return built


def test_the_wheel_leaves_a_projects_own_wire_module_alone(wheel: Path, tmp_path: Path) -> None:
    venv = tmp_path / "venv"
    _run(sys.executable, "-m", "venv", venv)
    py = venv / "bin" / "python"
    _run(py, "-m", "pip", "install", "-q", "--disable-pip-version-check", wheel, "pytest")
    project = tmp_path / "project"
    project.mkdir()
    (project / "wire.py").write_text('def send() -> str:\n    return "the project\'s own wire"\n')
    (project / "test_wire.py").write_text(
        "import wire\n\n\ndef test_own_wire():\n    assert wire.send() == \"the project's own wire\"\n")
    proc = _run(py, "-m", "pytest", "-q", "-p", "no:cacheprovider", cwd=project)
    assert "1 passed" in proc.stdout, proc.stdout
    # fakekafka's plugin was loaded in that run, and its wire layer is fakekafka.wire
    plugins = _run(py, "-m", "pytest", "--trace-config", "-q", "--co", cwd=project).stdout
    assert "fakekafka.testing.pytest_plugin" in plugins
    _run(py, "-c", "import fakekafka.wire.records, importlib.util; assert importlib.util.find_spec('wire') is None",
         cwd=tmp_path)


def test_the_wheel_installs_real_kafka_for_kafka_real(wheel: Path, tmp_path: Path) -> None:
    """`fakekafka kafka install` from the installed wheel (no checkout, no .ci/install.sh): the pom ships in the
    package, and Maven resolves Kafka's jars with it."""
    if shutil.which("mvn") is None:
        pytest.skip("needs Maven (apt-get install maven)")
    assert "fakekafka/testing/kafka-pom.xml" in zipfile.ZipFile(wheel).namelist()
    venv = tmp_path / "venv"
    _run(sys.executable, "-m", "venv", "--system-site-packages", venv)  # the dependencies as installed here
    _run(venv / "bin" / "python", "-m", "pip", "install", "-q", "--no-deps", "--disable-pip-version-check", wheel)
    out = _run(venv / "bin" / "fakekafka", "kafka", "install", "--lib", tmp_path / "kafka-lib", cwd=tmp_path).stdout
    assert out.startswith("fakekafka kafka install: Apache Kafka 4.4.0 installed in ")
    assert (tmp_path / "kafka-lib" / "kafka_2.13-4.4.0.jar").exists()
