"""What the pytest plugin keeps on a test item: the clusters it started for it, read by the failure report and by
the chaos runs (a module of its own, so neither imports the other for it)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    pass

CLUSTERS = pytest.StashKey["list[ClusterHandle]"]()
