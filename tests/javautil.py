"""Compile and run small Java programs against Kafka's own client jars, for tests.

Three calls, each of which skips the calling test (naming `.ci/install.sh`) when Java or the jars are
missing, so a machine without them reports skips rather than failures:

    classpath()                      the jar classpath: $FAKEKAFKA_CLASSPATH, else the jars in
                                     $FAKEKAFKA_JARS or ~/.cache/fakekafka/jars (plus slf4j-simple)
    compile_java(*sources)           javac the sources once; returns the class directory, cached under
                                     ~/.cache/fakekafka/javac/<hash of sources, classpath, javac>
    run_java(classes, main, *args)   java -cp classes:jars main args; returns CompletedProcess (text)
                                     and raises JavaError with stderr when it exits non-zero

Get everything with: eval "$(bash .ci/install.sh)" (INSTALL_HINT says so, for skip messages).
"""

from __future__ import annotations

import glob
import hashlib
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest

__all__ = ["INSTALL_HINT", "JavaError", "classpath", "compile_java", "run_java"]

INSTALL_HINT = 'run `eval "$(bash .ci/install.sh)"` to install javac and the Kafka client jars'
_CACHE = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "fakekafka"
_SLF4J_SIMPLE = "/usr/share/java/slf4j-simple.jar"


class JavaError(RuntimeError):
    """A Java program exited non-zero; the message carries its stderr."""


def _tool(name: str) -> str:
    path = shutil.which(name)
    if path is None:
        pytest.skip(f"{name} not found: {INSTALL_HINT}")
    return path


def classpath() -> str:
    """The Kafka client classpath (entries may be `dir/*` wildcards, which java and javac expand)."""
    cp = os.environ.get("FAKEKAFKA_CLASSPATH")
    if not cp:
        jars = Path(os.environ.get("FAKEKAFKA_JARS") or _CACHE / "jars")
        entries = [str(jars / "*")]
        if os.path.exists(_SLF4J_SIMPLE):
            entries.append(_SLF4J_SIMPLE)
        cp = os.pathsep.join(entries)
    found = [p for entry in cp.split(os.pathsep) for p in glob.glob(entry)]
    if not any(os.path.basename(p).startswith("kafka-clients") for p in found):
        pytest.skip(f"no kafka-clients jar on the classpath {cp!r}: {INSTALL_HINT}")
    return cp


def compile_java(*sources: str | os.PathLike[str]) -> Path:
    """Compile the sources (once per content) and return the directory holding their classes."""
    javac = _tool("javac")
    cp = classpath()
    digest = hashlib.sha256(cp.encode())
    digest.update(os.path.realpath(javac).encode())
    for src in sorted(Path(s).resolve() for s in sources):
        digest.update(src.name.encode() + b"\0" + src.read_bytes() + b"\0")
    out = _CACHE / "javac" / digest.hexdigest()[:20]
    if out.is_dir():
        return out
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=".tmp-", dir=out.parent))
    try:
        proc = subprocess.run(
            [javac, "-nowarn", "-encoding", "UTF-8", "-cp", cp, "-d", str(tmp), *map(str, sources)],
            capture_output=True, text=True, check=False)
        if proc.returncode != 0:
            raise JavaError(f"javac failed:\n{proc.stdout}{proc.stderr}")
        tmp.chmod(0o755)
        try:
            tmp.rename(out)  # atomic: a concurrent run that got there first wins, with identical classes
        except OSError:
            if not out.is_dir():
                raise
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)
    return out


FAST_START = ("-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1")
"""JVM flags for short runs: start-up matters more than peak speed."""


def run_java(classes: Path, main: str, *args: str, timeout: float = 120,
             jvm_args: tuple[str, ...] = FAST_START) -> subprocess.CompletedProcess[str]:
    """Run `main` from `classes` with the Kafka jars; raise JavaError (with stderr) on a non-zero exit."""
    java = _tool("java")
    cmd = [java, *jvm_args, "-cp", os.pathsep.join([str(classes), classpath()]), main, *args]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, check=False)
    if proc.returncode != 0:
        raise JavaError(f"{main} exited with {proc.returncode}:\n{proc.stderr[-4000:]}")
    return proc
