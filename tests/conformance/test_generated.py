"""The committed wire declarations match what the generator makes from Kafka's schemas.

Two checks. The exact one regenerates everything from both sources `tools/gen_wire.py` merges: the kafka-clients
jar `.ci/install.sh` resolves (`common/message/*.json`) and the pre-4.0 snapshot in `../shared/kafka-protocol`
beside the checkout (development and CI). The other needs no snapshot, so a clone without it still checks
something: every (API, version) the jar declares is declared here exactly as the generator makes it from the
jar alone (the versions only the snapshot has, those Kafka 4 removed, are left to the exact check)."""

from __future__ import annotations

import importlib.util
import re
import shutil
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from types import ModuleType

import pytest

from fakekafka.wire.messages import API_MODULES

ROOT = Path(__file__).resolve().parents[2]
SCHEMAS = ROOT.parent / "shared" / "kafka-protocol"
GEN = ROOT / "tools" / "gen_wire.py"


@contextmanager
def _gen_wire() -> Iterator[ModuleType]:
    spec = importlib.util.spec_from_file_location("gen_wire", GEN)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod  # its dataclasses look their module up
    try:
        spec.loader.exec_module(mod)
        yield mod
    finally:
        del sys.modules[spec.name]


def _jar_or_skip(gen_wire: ModuleType) -> Path:
    jar = gen_wire.default_jar()
    if not jar.is_file():
        pytest.skip(f"no kafka-clients jar at {jar} (bash .ci/install.sh resolves it)")
    return jar


def test_generated_wire_is_up_to_date() -> None:
    if not (SCHEMAS / "message").is_dir():
        pytest.skip(f"Kafka's schemas are not at {SCHEMAS} (they sit beside the checkout in development and CI); "
                    "test_generated_wire_agrees_with_the_kafka_clients_jar checks what it can without them")
    with _gen_wire() as gen_wire:
        jar = _jar_or_skip(gen_wire)
    if shutil.which("java") is None:
        pytest.skip("no java (gen_wire reads the jar's error codes with a small Java program)")
    proc = subprocess.run([sys.executable, str(GEN), str(SCHEMAS), "--kafka-jar", str(jar), "--check"],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_release_ranges_are_up_to_date() -> None:
    """wire/releases.py (the older releases' ApiVersions ranges, `--kafka-version`) is what the generator makes from
    the kafka-clients jars of those releases."""
    with _gen_wire() as gen_wire:
        missing = [v for v in gen_wire.RELEASE_CLIENTS if not gen_wire.default_release_jar(v).is_file()]
    if missing:
        pytest.skip(f"no kafka-clients jar for {', '.join(missing)} (bash .ci/install.sh resolves them)")
    proc = subprocess.run([sys.executable, str(GEN), "--releases", "--check"], capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def _declarations(text: str) -> dict[str, str]:
    """Each `NameVn = ...` of a generated module, with its body (an alias resolved to the declaration)."""
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
        out[key] = body
    return out


def test_generated_wire_agrees_with_the_kafka_clients_jar() -> None:
    with _gen_wire() as gen_wire:
        source = gen_wire.Source.from_jar(_jar_or_skip(gen_wire))
        by_key: dict[int, dict[str, dict]] = {}
        for schema in source.schemas.values():
            if schema["type"] in ("request", "response"):
                by_key.setdefault(schema["apiKey"], {})[schema["type"]] = schema
        compared, differ = 0, []
        for key, (name, module, low, high, *_) in sorted(API_MODULES.items()):
            pair = by_key.get(key, {})
            if not gen_wire.versions_of(pair.get("request")):
                continue  # an API only the snapshot declares
            theirs = _declarations(gen_wire.generate_api(gen_wire.Merged.of([(source, pair["request"])]),
                                                         gen_wire.Merged.of([(source, pair["response"])]), key))
            ours = _declarations((ROOT / "wire" / "messages" / f"{module}.py").read_text())
            for kind in ("Request", "Response"):
                for version in range(low, high + 1):
                    decl = f"{name}{kind}V{version}"
                    if decl in theirs:
                        compared += 1
                        if ours.get(decl) != theirs[decl]:
                            differ.append(decl)
    assert not differ, f"declarations that differ from {source.label}'s schemas: {differ}"
    assert compared > 500  # every API fakekafka declares, at every version Kafka 4.4 still has


def test_coordinator_records_agree_with_the_group_coordinator_jar() -> None:
    """`wire/coordinator/` is what the generator makes from the broker's kafka-group-coordinator jar (no snapshot
    needed: those schemas come from the jar alone)."""
    with _gen_wire() as gen_wire:
        jar = gen_wire.default_coordinator_jar()
        if not jar.is_file():
            pytest.skip(f"no kafka-group-coordinator jar at {jar} (bash .ci/install.sh resolves it)")
        files = gen_wire.generate_coordinator(jar)
    stale = sorted(str(p.relative_to(ROOT)) for p, text in files.items() if not p.exists() or p.read_text() != text)
    orphans = sorted(str(p.relative_to(ROOT)) for p in (ROOT / "wire" / "coordinator").glob("*.py")
                     if p not in files)
    assert (stale, orphans) == ([], [])
    assert len(files) > 20  # every record type of Kafka 4.4's group coordinator, and the index


def test_transaction_log_records_agree_with_the_transaction_coordinator_jar() -> None:
    """`wire/txn_coordinator/` is what the generator makes from the broker's kafka-transaction-coordinator jar."""
    with _gen_wire() as gen_wire:
        jar = gen_wire.default_txn_coordinator_jar()
        if not jar.is_file():
            pytest.skip(f"no kafka-transaction-coordinator jar at {jar} (bash .ci/install.sh resolves it)")
        files = gen_wire.generate_coordinator(jar, gen_wire.TXN_COORDINATOR_OUT, "__transaction_state",
                                              "transaction coordinator")
    stale = sorted(str(p.relative_to(ROOT)) for p, text in files.items() if not p.exists() or p.read_text() != text)
    orphans = sorted(str(p.relative_to(ROOT)) for p in (ROOT / "wire" / "txn_coordinator").glob("*.py")
                     if p not in files)
    assert (stale, orphans) == ([], [])
    assert ROOT / "wire" / "txn_coordinator" / "transaction_log.py" in files


def test_share_state_records_agree_with_the_share_coordinator_jar() -> None:
    """`wire/share_coordinator/` is what the generator makes from the broker's kafka-share-coordinator jar."""
    with _gen_wire() as gen_wire:
        jar = gen_wire.default_share_coordinator_jar()
        if not jar.is_file():
            pytest.skip(f"no kafka-share-coordinator jar at {jar} (bash .ci/install.sh resolves it)")
        files = gen_wire.generate_coordinator(jar, gen_wire.SHARE_COORDINATOR_OUT, "__share_group_state",
                                              "share coordinator")
    stale = sorted(str(p.relative_to(ROOT)) for p, text in files.items() if not p.exists() or p.read_text() != text)
    orphans = sorted(str(p.relative_to(ROOT)) for p in (ROOT / "wire" / "share_coordinator").glob("*.py")
                     if p not in files)
    assert (stale, orphans) == ([], [])
    assert {p.name for p in files} == {"__init__.py", "share_snapshot.py", "share_update.py"}


def test_release_configs_are_up_to_date() -> None:
    """model/kafka_configs_<release>.py (the older releases' broker and topic configs, `--kafka-version`) is what
    tools/gen_release_configs.py makes from those releases' broker jars: 3.9.1's, which the conformance tests run,
    and 3.7.2's and 2.8.2's where the generator has resolved them before (it does not go to Maven Central here)."""
    spec = importlib.util.spec_from_file_location("gen_release_configs", ROOT / "tools" / "gen_release_configs.py")
    assert spec is not None and spec.loader is not None
    gen = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(gen)
    present = [name for name, version in gen.RELEASES.items() if any(gen.default_lib(version).glob("kafka_2.*.jar"))]
    if shutil.which("java") is None or "3.9" not in present:
        pytest.skip("no java or no Kafka 3.9.1 broker jars (bash .ci/install.sh resolves them)")
    args = [a for name in present for a in ("--release", name)]
    proc = subprocess.run([sys.executable, str(ROOT / "tools" / "gen_release_configs.py"), *args, "--check"],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
