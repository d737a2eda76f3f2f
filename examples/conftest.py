"""Only for running the examples inside the fakekafka repository: the `kafka` fixture needs no conftest
(the plugin registers itself when fakekafka is installed). This puts the repository root on sys.path so
the Java example can reuse the repo's `tests/javautil.py` (javac/java helpers that skip when Java or the
Kafka jars are missing)."""

import sys
from pathlib import Path

import pytest

_REPO = str(Path(__file__).resolve().parents[1])
if _REPO not in sys.path:
    sys.path.insert(0, _REPO)


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """The examples are integration tests (real clients against fakekafka): `-m integration` selects them."""
    here = Path(__file__).resolve().parent
    for item in items:
        if item.path.is_relative_to(here):
            item.add_marker("integration")
