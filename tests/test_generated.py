"""The committed wire declarations match what the generator makes from Kafka's schemas.

Two checks: the exact one, against the schemas in `../shared/kafka-protocol` the declarations were generated
from (beside the checkout in development and CI); and one that needs no copy of them, against the schemas
inside the kafka-clients 4.4.0 jar that `.ci/install.sh` resolves from Maven Central
(`common/message/*.json`). That jar is from a later Kafka, so it is compared version by version: every
(API, version) both define must have the same wire layout (field names aside: Kafka renames fields without
changing a byte)."""

from __future__ import annotations

import glob
import importlib.util
import json
import os
import re
import subprocess
import sys
import zipfile
from pathlib import Path
from types import ModuleType

import pytest

from tests.javautil import classpath
from wire.messages import API_MODULES

ROOT = Path(__file__).resolve().parent.parent
SCHEMAS = ROOT.parent / "shared" / "kafka-protocol"

CHANGED_IN_PLACE = {
    "ReadShareGroupStateSummaryResponseV0": "KIP-932's share-group state APIs changed before they were released "
                                            "(leader_epoch added to v0); fakekafka serves none of them",
}
"""Versions whose layout Kafka changed after our schemas were taken, with the reason it does not matter."""


def test_generated_wire_is_up_to_date() -> None:
    if not (SCHEMAS / "message").is_dir():
        pytest.skip(f"Kafka's schemas are not at {SCHEMAS} (they sit beside the checkout in development and CI); "
                    "test_generated_wire_agrees_with_the_kafka_clients_jar checks without them")
    proc = subprocess.run([sys.executable, str(ROOT / "tools" / "gen_wire.py"), str(SCHEMAS), "--check"],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def _gen_wire() -> ModuleType:
    spec = importlib.util.spec_from_file_location("gen_wire", ROOT / "tools" / "gen_wire.py")
    assert spec is not None and spec.loader is not None
    module = sys.modules["gen_wire"] = importlib.util.module_from_spec(spec)  # its dataclasses look it up there
    spec.loader.exec_module(module)
    return module


def _layouts(text: str) -> dict[str, str]:
    """Each `NameVn = ...` of a generated module: its declaration with aliases resolved and field names left out."""
    bodies: dict[str, list[str]] = {}
    name = None
    for line in text.splitlines():
        m = re.match(r"^(\w+) = (.*)$", line)
        if m:
            name = m.group(1)
            bodies[name] = [m.group(2)]
        elif name is not None and line.startswith((" ", ")")):
            bodies[name].append(line)
        else:
            name = None
    out = {}
    for key, lines in bodies.items():
        body = "\n".join(lines)
        while re.fullmatch(r"\w+", body) and body in bodies:
            body = "\n".join(bodies[body])
        out[key] = re.sub(r"Field\('[^']*', ", "Field(", body)
    return out


def test_generated_wire_agrees_with_the_kafka_clients_jar() -> None:
    jars = [p for entry in classpath().split(os.pathsep) for p in glob.glob(entry)
            if os.path.basename(p).startswith("kafka-clients")]
    gen_wire = _gen_wire()
    schemas: dict[int, dict[str, dict]] = {}
    with zipfile.ZipFile(jars[0]) as jar:
        for member in jar.namelist():
            if member.startswith("common/message/") and member.endswith(".json"):
                schema = json.loads(gen_wire.strip_comments(jar.read(member).decode()))
                if schema["type"] in ("request", "response"):
                    schemas.setdefault(schema["apiKey"], {})[schema["type"]] = schema
    compared, differ = 0, []
    for key, (name, module, low, high, *_) in sorted(API_MODULES.items()):
        if key not in schemas:
            continue  # an API Kafka removed since (none so far)
        theirs = _layouts(gen_wire.generate_api(schemas[key]["request"], schemas[key]["response"]))
        ours = _layouts((ROOT / "wire" / "messages" / f"{module}.py").read_text())
        for kind in ("Request", "Response"):
            for version in range(low, high + 1):
                decl = f"{name}{kind}V{version}"
                if decl in theirs and decl in ours:
                    compared += 1
                    if ours[decl] != theirs[decl] and decl not in CHANGED_IN_PLACE:
                        differ.append(decl)
    assert not differ, f"declarations whose layout differs from {os.path.basename(jars[0])}'s schemas: {differ}"
    assert compared > 500  # 534 with Kafka 4.4.0: every API we declare, minus the versions Kafka 4 dropped
