"""compat/KNOWN_DIFFERENCES.md, read as data: each row of its table excuses the cells it matches.

A row is `| scenario | client | broker | where | reason |`. The first three are shell-style patterns (`*`
for any, `roundtrip_*`). `where` says which parts of the outcome may differ: `*` for anything (an error
included), or comma-separated patterns over the paths the diff names (`/end`, `/name_*`); a cell whose
diff reaches anything else is not excused, so a listed broker cannot quietly grow new differences.

A cell that differs from the reference, or errors, fails the run unless a row excuses it. A row that
matches only passing cells is reported as stale, so the file shrinks as brokers get fixed.
"""

from __future__ import annotations

import fnmatch
import re
from dataclasses import dataclass
from pathlib import Path

__all__ = ["KNOWN_FILE", "Known", "load_known"]

KNOWN_FILE = Path(__file__).resolve().parent / "KNOWN_DIFFERENCES.md"


@dataclass(frozen=True)
class Known:
    scenario: str
    client: str
    broker: str
    where: tuple[str, ...]
    reason: str
    line: int

    def matches(self, scenario: str, client: str, broker: str) -> bool:
        return (fnmatch.fnmatchcase(scenario, self.scenario) and fnmatch.fnmatchcase(client, self.client)
                and fnmatch.fnmatchcase(broker, self.broker))

    def excuses(self, scenario: str, client: str, broker: str, status: str, diff: list[str]) -> bool:
        if not self.matches(scenario, client, broker):
            return False
        if self.where == ("*",):
            return True
        if status != "differs":
            return False
        paths = [line.split(": ", 1)[0] for line in diff]
        return all(any(fnmatch.fnmatchcase(p, w) or p.startswith(w.rstrip("*") + "/") or
                       p.startswith(w + "[") for w in self.where) for p in paths)


def load_known(path: Path = KNOWN_FILE) -> list[Known]:
    if not path.exists():
        return []
    out = []
    for n, line in enumerate(path.read_text().splitlines(), 1):
        if not line.startswith("|"):
            continue
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) < 5 or cells[0] in ("scenario", "") or re.fullmatch(r"[-: ]+", cells[0]):
            continue
        scenario, client, broker, where = (c.strip("`") for c in cells[:4])
        reason = "|".join(cells[4:]).strip()
        if not reason:
            raise ValueError(f"{path}:{n}: a known difference needs a reason")
        out.append(Known(scenario, client, broker, tuple(w.strip().strip("`") for w in where.split(",")),
                         reason, n))
    return out
