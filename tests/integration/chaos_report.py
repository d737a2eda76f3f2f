"""Reading the "fakekafka chaos" section a failing chaos test's report ends with."""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass
from pathlib import Path

_SHRUNK = re.compile(r"shrunk in (\d+) rerun\(s\) to (\d+) step\(s\), written to (\S+):\n(?:.*\n)*?replay: pytest (.+)")


@dataclass
class Shrunk:
    steps: int
    path: Path
    replay: list[str]
    """The replay command's pytest arguments."""


def first_shrunk(out: str) -> Shrunk | None:
    """The first failing seed whose schedule failed again when replayed and was shrunk to a 1-minimal schedule:
    its size, its file and the command that replays it (from that seed's own section: a seed that failed by
    timing alone comes first at times, and its section names no shrunk schedule)."""
    m = _SHRUNK.search(out)
    return None if m is None else Shrunk(int(m.group(2)), Path(m.group(3)), shlex.split(m.group(4)))
