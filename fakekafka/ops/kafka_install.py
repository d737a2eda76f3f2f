"""`fakekafka kafka install [--version V]`: Apache Kafka's jars for `--kafka-real`, `fakekafka.testing.apache_kafka`
and the compat suite, on a machine with a wheel rather than a checkout.

Maven resolves the broker and its runtime dependencies from Maven Central with the pom shipped in the package
(fakekafka/testing/kafka-pom.xml, the one .ci/install.sh uses) into the user's cache, `cache_lib(version)`, where
`kafka_lib()` looks. The directory is complete or absent: filled aside, then moved into place. Maven's own cache
(~/.m2) keeps the downloads, so installing again costs a copy.
"""

from __future__ import annotations

import importlib.resources
import re
import shutil
import subprocess
import sys
from pathlib import Path

from fakekafka.testing.apache_kafka import KAFKA_VERSION, cache_lib, lib_env

__all__ = ["install_kafka"]

_VERSION = re.compile(r"\d+\.\d+\.\d+")
_MAVEN_TIMEOUT_S = 900


class InstallError(Exception):
    """The install could not be done; the message says why in words."""


def install_kafka(version: str = KAFKA_VERSION, lib: Path | None = None, *, force: bool = False) -> tuple[Path, bool]:
    """Apache Kafka `version`'s jars in `lib` (default: the user's cache); returns the directory and whether
    anything was installed (False: it was there already)."""
    if not _VERSION.fullmatch(version):
        raise InstallError(f"--version {version!r} is not a Kafka version such as {KAFKA_VERSION}")
    dest = lib or cache_lib(version)
    if not force and any(dest.glob("kafka_2.13-*.jar")):
        return dest, False
    mvn = shutil.which("mvn")
    if mvn is None:
        raise InstallError("Maven (mvn) is not on PATH: install it (Debian/Ubuntu: apt-get install maven; "
                           "macOS: brew install maven) and Java 17 or newer, then run this again")
    staging = dest.with_name(dest.name + ".tmp")
    shutil.rmtree(staging, ignore_errors=True)
    pom = importlib.resources.files("fakekafka.testing") / "kafka-pom.xml"
    with importlib.resources.as_file(pom) as pom_path:
        try:
            done = subprocess.run([mvn, "-q", "-B", "-Dstyle.color=never", "-f", str(pom_path),
                                   f"-Dkafka.version={version}", "dependency:copy-dependencies",
                                   "-DincludeScope=runtime", f"-DoutputDirectory={staging}"],
                                  capture_output=True, text=True, timeout=_MAVEN_TIMEOUT_S, check=False)
        except subprocess.TimeoutExpired:
            shutil.rmtree(staging, ignore_errors=True)
            raise InstallError(f"Maven did not finish within {_MAVEN_TIMEOUT_S} s") from None
    if done.returncode != 0 or not any(staging.glob("kafka_2.13-*.jar")):
        shutil.rmtree(staging, ignore_errors=True)
        raise InstallError(f"Maven could not resolve Apache Kafka {version} from Maven Central: "
                           f"{_maven_error(done.stdout + done.stderr)}")
    dest.parent.mkdir(parents=True, exist_ok=True)
    shutil.rmtree(dest, ignore_errors=True)
    staging.rename(dest)
    return dest, True


def _maven_error(output: str) -> str:
    """Maven's first error line, without its colours, prefix and advice on re-running it."""
    lines = [re.sub(r"\x1b\[[0-9;]*m", "", line).strip() for line in output.splitlines()]
    errors = [line.removeprefix("[ERROR]").strip() for line in lines if line.startswith("[ERROR]")]
    errors = [e for e in errors if e and not e.startswith(("To see the full", "Re-run Maven", "For more information",
                                                           "[Help"))]
    return (errors or [line for line in lines if line] or ["(it printed nothing)"])[0]


def install_main(version: str, lib: str | None, force: bool) -> int:
    """The command: one line of what was done, or of why not (exit 1)."""
    try:
        dest, installed = install_kafka(version, Path(lib) if lib else None, force=force)
    except InstallError as e:
        print(f"fakekafka kafka install: {e}", file=sys.stderr)
        return 1
    jars = len(list(dest.glob("*.jar")))
    print(f"fakekafka kafka install: Apache Kafka {version} {'installed' if installed else 'is installed already'} "
          f"in {dest} ({jars} jars)")
    if version != KAFKA_VERSION or lib:  # --kafka-real looks for the default version in the cache
        print(f"use it with {lib_env(version)}={dest}")
    return 0
