"""Shared fixtures: a fresh in-process broker per test (the pytest plugin of a later issue builds on
`fakekafka.Cluster` the same way)."""

from __future__ import annotations

import shutil
from collections.abc import Iterator

import pytest

import fakekafka

pytest_plugins = ["pytester"]


@pytest.fixture
def broker() -> Iterator[fakekafka.Cluster]:
    """A started single-broker cluster on a free loopback port, stopped after the test."""
    with fakekafka.Cluster() as cluster:
        yield cluster


@pytest.fixture
def kcat() -> str:
    path = shutil.which("kcat")
    if path is None:
        pytest.skip("kcat is not installed: run `bash .ci/install.sh` (or `apt-get install kcat`)")
    return path
