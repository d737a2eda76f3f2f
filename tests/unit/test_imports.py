"""Every module of the package imports (some are otherwise only imported lazily, by a command or a fixture, so
a broken import would wait for a user to find it). In CI's first tier this also leaves pytest's rewritten bytecode of
every module cached for the later ones: pytest rewrites the whole package (its distribution declares the
plugin), and a rewrite while another thread compiled met CPython 3.11's "AST constructor recursion depth
mismatch" in two CI runs."""

from __future__ import annotations

import importlib
import pkgutil

import pytest

import fakekafka

MODULES = sorted(
    m.name for m in pkgutil.walk_packages(fakekafka.__path__, "fakekafka.") if m.name.rpartition(".")[2] != "__main__"
)


@pytest.mark.parametrize("name", MODULES)
def test_module_imports(name: str) -> None:
    try:
        importlib.import_module(name)
    except ModuleNotFoundError as e:  # an optional extra's library (pyspark, matplotlib) is not installed here
        if e.name and e.name.partition(".")[0] not in ("fakekafka", "wire"):
            pytest.skip(f"{name} needs {e.name}")
        raise
