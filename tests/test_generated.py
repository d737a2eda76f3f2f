"""The committed wire declarations match what the generator makes from Kafka's schemas."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SCHEMAS = ROOT.parent / "shared" / "kafka-protocol"


def test_generated_wire_is_up_to_date() -> None:
    if not (SCHEMAS / "message").is_dir():
        pytest.skip(f"Kafka's schemas are not at {SCHEMAS} (they sit beside the checkout in development and CI)")
    proc = subprocess.run([sys.executable, str(ROOT / "tools" / "gen_wire.py"), str(SCHEMAS), "--check"],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr
