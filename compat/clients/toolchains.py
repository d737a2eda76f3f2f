"""Builds the out-of-process client drivers that are not Python or Java: the Go drivers (one `go build` per
driver from compat/clients/go, its go.mod/go.sum pinning the client modules), the Node drivers'
node_modules (`npm ci` from compat/clients/node's package.json and package-lock.json) and the Rust driver
(`cargo build --release --locked` of compat/clients/rust, its Cargo.lock pinning the rdkafka crate, which
builds the librdkafka it bundles with its configure script: a C compiler and make, no cmake).

Each build lands in ~/.cache/fakekafka under a name carrying the hash of its sources, so an edited driver or
a changed pin builds anew and an unchanged one costs a stat. Earlier builds are left in place (a few MB
each): another checkout of the project (a worktree, a CI clone) may be running one of them right now.
`.ci/install.sh` runs this file as a script (before the project is installed: stdlib only) to build
everything ahead of the tests; the drivers call go_driver()/node_modules() and build on first use where the
toolchain is there.

    python compat/clients/toolchains.py      builds all, prints FAKEKAFKA_GO_CLIENTS=...,
                                             FAKEKAFKA_NODE_MODULES=... and FAKEKAFKA_RUST_CLIENTS=...
                                             (shell-quoted)

Cargo's target directory is kept at ~/.cache/fakekafka/rust-clients/target (librdkafka's C build is most of
a first build's few minutes): a driver edit recompiles only the driver.
"""

from __future__ import annotations

import hashlib
import os
import shlex
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

__all__ = ["GO_DIR", "GO_DRIVERS", "NODE_DIR", "RUST_DIR", "BuildError", "go_driver", "node_modules", "rust_driver"]

HERE = Path(__file__).resolve().parent
GO_DIR = HERE / "go"
NODE_DIR = HERE / "node"
RUST_DIR = HERE / "rust"
GO_DRIVERS = ("franz", "sarama", "kafkago")
"""The Go drivers, each a main package under compat/clients/go/."""
CACHE = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "fakekafka"


class BuildError(RuntimeError):
    """The toolchain is missing or the build failed (the message says which, and how to fix it)."""


def _digest(files: list[Path], base: Path) -> str:
    h = hashlib.sha256()
    for f in sorted(files):
        h.update(str(f.relative_to(base)).encode() + b"\0" + f.read_bytes() + b"\0")
    return h.hexdigest()[:12]


def _go_sources(name: str) -> list[Path]:
    return [GO_DIR / "go.mod", GO_DIR / "go.sum", *(GO_DIR / "agent").glob("*.go"), *(GO_DIR / name).glob("*.go")]


def go_driver(name: str) -> Path:
    """The built Go driver `name` (built now if its sources changed since the last build)."""
    return _go_build(GO_DIR, f"./{name}", name, _go_sources(name), f"the {name} driver", f"go build ./{name}")


def go_program(directory: Path) -> Path:
    """A Go program of its own module (a test's feature program, e.g. tests/integration/clients/go_registry), built
    once per source hash into the same cache as the drivers."""
    sources = [directory / "go.mod", directory / "go.sum", *directory.glob("*.go")]
    return _go_build(directory, ".", directory.name, sources, directory.name, f"go build in {directory}")


def _go_build(module: Path, package: str, name: str, sources: list[Path], what: str, command: str) -> Path:
    """`go build` of `package` in `module` into the Go cache, named by its sources' digest: reused while they are
    unchanged, built into a temporary name and renamed in (so concurrent builds never see half a binary)."""
    base = Path(os.environ.get("FAKEKAFKA_GO_CLIENTS") or CACHE / "go-clients")
    binary = base / f"{name}-{_digest(sources, module)}"
    if binary.exists():
        return binary
    go = shutil.which("go")
    if go is None:
        raise BuildError(f"go not found: {what} is built with the Go toolchain (eval \"$(bash .ci/install.sh)\")")
    base.mkdir(parents=True, exist_ok=True)
    tmp = base / f".{binary.name}.{os.getpid()}"
    proc = subprocess.run([go, "build", "-trimpath", "-o", str(tmp), package], cwd=module, capture_output=True,
                          text=True, env={**os.environ, "GOFLAGS": "-buildvcs=false -mod=readonly"}, check=False)
    if proc.returncode != 0:
        tmp.unlink(missing_ok=True)
        raise BuildError(f"{command} failed:\n{proc.stderr[-3000:]}")
    tmp.replace(binary)
    return binary


def node_modules() -> Path:
    """The node_modules directory for compat/clients/node (npm ci'd now if the lock file changed)."""
    files = [NODE_DIR / "package.json", NODE_DIR / "package-lock.json"]
    base = Path(os.environ.get("FAKEKAFKA_NODE_MODULES") or CACHE / "node-clients")
    target = base / _digest(files, NODE_DIR)
    if (target / ".complete").exists():
        return target / "node_modules"
    npm = shutil.which("npm")
    if npm is None or shutil.which("node") is None:
        raise BuildError('node and npm not found: the Node drivers need them (eval "$(bash .ci/install.sh)")')
    base.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=base) as tmp:
        for f in files:
            shutil.copy(f, tmp)
        proc = subprocess.run([npm, "ci", "--no-audit", "--no-fund", "--loglevel=error"], cwd=tmp,
                              capture_output=True, text=True, check=False)
        if proc.returncode != 0:
            raise BuildError(f"npm ci in {NODE_DIR} failed:\n{proc.stderr[-3000:]}")
        Path(tmp, ".complete").touch()
        shutil.rmtree(target, ignore_errors=True)
        os.replace(tmp, target)
        os.mkdir(tmp)  # for TemporaryDirectory's cleanup
    return target / "node_modules"


def _rust_sources() -> list[Path]:
    return [RUST_DIR / "Cargo.toml", RUST_DIR / "Cargo.lock", *(RUST_DIR / "src").glob("*.rs")]


def rust_driver() -> Path:
    """The built Rust driver (rdkafka crate), built now if its sources changed since the last build."""
    base = Path(os.environ.get("FAKEKAFKA_RUST_CLIENTS") or CACHE / "rust-clients")
    binary = base / f"rdkafka-{_digest(_rust_sources(), RUST_DIR)}"
    if binary.exists():
        return binary
    cargo = shutil.which("cargo")
    if cargo is None:
        raise BuildError("cargo not found: the rdkafka driver is built with the Rust toolchain "
                         '(eval "$(bash .ci/install.sh)")')
    target = base / "target"
    proc = subprocess.run([cargo, "build", "--release", "--locked", "--quiet", "--target-dir", str(target)],
                          cwd=RUST_DIR, capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        raise BuildError(f"cargo build in {RUST_DIR} failed:\n{proc.stderr[-3000:]}")
    tmp = base / f".{binary.name}.{os.getpid()}"
    shutil.copy(target / "release" / "rdkafka-driver", tmp)
    tmp.replace(binary)
    return binary


def main() -> int:
    """Build every driver whose toolchain is here; print where they are, as .ci/install.sh's other KEY=VALUE
    lines (a missing toolchain is said on stderr: those clients are then reported unsupported)."""
    builds = {"go": ("FAKEKAFKA_GO_CLIENTS", lambda: [go_driver(name) for name in GO_DRIVERS][0].parent),
              "npm": ("FAKEKAFKA_NODE_MODULES", lambda: node_modules().parent.parent),
              "cargo": ("FAKEKAFKA_RUST_CLIENTS", lambda: rust_driver().parent)}
    for tool, (var, build) in builds.items():
        if shutil.which(tool) is None or (tool == "npm" and shutil.which("node") is None):
            print(f"[install] {tool} not found: its compat clients will be unsupported", file=sys.stderr)
            continue
        try:
            where = build()
        except BuildError as e:
            print(f"[install] {e}", file=sys.stderr)
            return 1
        print(f"{var}={shlex.quote(str(where))}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
