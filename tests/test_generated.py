"""The committed wire declarations match what the generator makes from Kafka's schemas."""

from __future__ import annotations

import importlib.util
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SCHEMAS = ROOT.parent / "shared" / "kafka-protocol"
GEN = ROOT / "tools" / "gen_wire.py"


def _default_jar() -> Path:
    spec = importlib.util.spec_from_file_location("gen_wire", GEN)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod  # its dataclasses look their module up
    try:
        spec.loader.exec_module(mod)
        return mod.default_jar()
    finally:
        del sys.modules[spec.name]


def test_generated_wire_is_up_to_date() -> None:
    if not (SCHEMAS / "message").is_dir():
        pytest.skip(f"Kafka's schemas are not at {SCHEMAS} (they sit beside the checkout in development and CI)")
    jar = _default_jar()
    if not jar.is_file() or shutil.which("java") is None:
        pytest.skip(f"no kafka-clients jar at {jar} or no java (bash .ci/install.sh resolves the jar)")
    proc = subprocess.run([sys.executable, str(GEN), str(SCHEMAS), "--kafka-jar", str(jar), "--check"],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
