"""The pytest plugins load in every pytest start of a project that has fakekafka installed, so they import nothing
heavy until a fixture or marker is used: not the cluster, the model, the wire layer, the network edge, the proxy or
pyspark. What is imported is checked here (in a fresh interpreter); what it costs is bench/plugin_startup.py's."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

HEAVY = ("fakekafka.testing.embedded", "fakekafka.testing.client", "fakekafka.testing.handle", "fakekafka.model",
         "fakekafka.wire", "fakekafka.net", "fakekafka.handlers", "fakekafka.proxy", "fakekafka.storage",
         "pyspark", "pyarrow")

SHOW_MODULES = "import json, sys\n{code}\nprint(json.dumps(sorted(sys.modules)))\n"


def _modules_after(code: str) -> list[str]:
    done = subprocess.run([sys.executable, "-c", SHOW_MODULES.format(code=code)], capture_output=True, text=True,
                          check=True)
    return json.loads(done.stdout)


def _heavy(modules: list[str]) -> list[str]:
    return [m for m in modules if any(m == h or m.startswith(h + ".") for h in HEAVY)]


def test_importing_the_plugins_imports_nothing_heavy() -> None:
    modules = _modules_after("import fakekafka.testing.pytest_plugin, fakekafka.spark.pytest_plugin")
    assert "fakekafka.testing.pytest_plugin" in modules
    assert _heavy(modules) == []


def test_fakekafka_names_are_there_on_first_use() -> None:
    modules = _modules_after("import fakekafka\nassert fakekafka.Cluster.__name__ == 'Cluster'\n"
                             "from fakekafka import ManualClock\nassert ManualClock(start_ms=5).now_ms() == 5")
    assert "fakekafka.testing.embedded" in modules
    import fakekafka
    with pytest.raises(AttributeError, match="no attribute 'Nope'"):
        fakekafka.Nope  # noqa: B018


def test_a_session_without_fixtures_imports_nothing_heavy(tmp_path: Path) -> None:
    """A whole pytest run, the plugins' hooks included (addoption, configure, collection, report), of a test
    that asks for no fixture: the heavy modules are still not imported at its end."""
    (tmp_path / "test_plain.py").write_text("def test_plain():\n    assert True\n")
    (tmp_path / "conftest.py").write_text(
        "import json, sys\n"
        "def pytest_unconfigure(config):\n"
        "    with open('modules.json', 'w') as f:\n"
        "        json.dump(sorted(sys.modules), f)\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_")}
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider"], cwd=tmp_path, env=env,
                          capture_output=True, text=True, check=False)  # the plugins load by their entry points
    assert done.returncode == 0, done.stdout + done.stderr
    modules = json.loads((tmp_path / "modules.json").read_text())
    assert "fakekafka.testing.pytest_plugin" in modules and "fakekafka.spark.pytest_plugin" in modules
    assert _heavy(modules) == []
