"""The Dockerfile and docker-compose.yml, checked without a Docker engine: the Dockerfile with BuildKit's own
parser (the PyPI package `dockerfile`), the compose file against the Compose Specification's JSON schema
(`check-jsonschema --builtin-schema vendor.compose-spec`), and the `fakekafka serve` arguments both pass with
the CLI's own parser. No image is built here: that needs an engine."""

from __future__ import annotations

import argparse
import shutil
import subprocess
from pathlib import Path

import pytest

from fakekafka.ops.cli import _parser

ROOT = Path(__file__).resolve().parents[2]


def _instructions() -> list:
    dockerfile = pytest.importorskip("dockerfile", reason="pip install dockerfile (BuildKit's Dockerfile parser)")
    return list(dockerfile.parse_file(str(ROOT / "Dockerfile")))


def test_dockerfile_parses_and_serves_fakekafka() -> None:
    cmds = _instructions()
    assert cmds[0].cmd == "FROM" and cmds[0].value[0].startswith("python:3.1")
    by = {c.cmd: c for c in cmds}
    for c in cmds:
        if c.cmd == "COPY":  # what the image copies is in the repository (and let through by .dockerignore)
            for source in c.value[:-1]:
                assert (ROOT / source).exists(), source
                assert f"!{source}" in (ROOT / ".dockerignore").read_text().split()
    entry, cmd = by["ENTRYPOINT"], by["CMD"]
    assert entry.json and cmd.json  # exec form: fakekafka is PID 1 and gets docker stop's SIGTERM
    assert list(entry.value[:2]) == ["fakekafka", "serve"]
    args = _parser().parse_args([*entry.value[1:], *cmd.value])
    assert (args.host, args.port, args.advertised_host) == ("0.0.0.0", 9092, "localhost")
    assert list(by["EXPOSE"].value) == ["9092"]  # not the control port: it stays on the container's loopback
    _control_stays_on_loopback(args)


def _control_stays_on_loopback(args: argparse.Namespace) -> None:
    """Issue 26: the image ran `serve --host 0.0.0.0` and exposed the control port, open to anyone."""
    from fakekafka.ops.control import control_binding, is_loopback
    host, _, told = control_binding(args.control_host, args.host, None)
    assert is_loopback(host) and told is None


def test_dockerfile_parser_rejects_what_docker_would() -> None:
    dockerfile = pytest.importorskip("dockerfile", reason="pip install dockerfile (BuildKit's Dockerfile parser)")
    with pytest.raises(dockerfile.GoParseError):
        dockerfile.parse_string("FROM python:3.11-slim\nRUN echo unterminated <<EOF\n")  # a heredoc never closed


def test_compose_file_follows_the_compose_spec_and_builds_the_dockerfile() -> None:
    yaml = pytest.importorskip("yaml", reason="pip install pyyaml")
    checker = shutil.which("check-jsonschema")
    if checker is None:
        pytest.skip("check-jsonschema is not installed: pip install -e '.[test]'")
    r = subprocess.run([checker, "--builtin-schema", "vendor.compose-spec", str(ROOT / "docker-compose.yml")],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stdout + r.stderr
    service = yaml.safe_load((ROOT / "docker-compose.yml").read_text())["services"]["fakekafka"]
    assert service["build"] == "."
    entry = next(c for c in _instructions() if c.cmd == "ENTRYPOINT").value
    args = _parser().parse_args([*entry[1:], *service["command"]])
    assert f"{args.port}:{args.port}" in service["ports"]
    _control_stays_on_loopback(args)


def test_a_broken_compose_file_is_caught(tmp_path: Path) -> None:
    checker = shutil.which("check-jsonschema")
    if checker is None:
        pytest.skip("check-jsonschema is not installed: pip install -e '.[test]'")
    bad = tmp_path / "docker-compose.yml"
    bad.write_text("services:\n  fakekafka:\n    build: .\n    ports: 19092\n    restart: sometimes\n")
    r = subprocess.run([checker, "--builtin-schema", "vendor.compose-spec", str(bad)], capture_output=True,
                       text=True, timeout=60)
    assert r.returncode == 1
