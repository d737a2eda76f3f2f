"""What having fakekafka installed adds to every pytest start of a project that never asks for its fixtures.

    python bench/plugin_startup.py [--runs N] [--json out.json]

An empty test project (one test that uses no fixture) in a temporary directory is run with `python -m pytest`
in a subprocess, N times per configuration (default 15, after one warm-up), the configurations taken in turn so
that a machine's drift touches each alike:

- plugins on: fakekafka's two pytest11 entry points load as they do for every user;
- plugins off: `-p no:fakekafka -p no:fakekafka_spark`, the baseline;

each with bytecode (the `__pycache__` files an installed package has) and without it
(`PYTHONDONTWRITEBYTECODE=1` and `PYTHONPYCACHEPREFIX` pointing at an empty directory, so every module is compiled
from source on every start: the worst case, a read-only or fresh install). The table gives min and median wall
time per configuration and the median added by the plugins (medians of the pairwise differences).

Goal: at most 50 ms added (the median, with bytecode and without). The plugins import nothing of the cluster, the
model, the wire layer or pyspark until a fixture or marker is used (tests/unit/test_plugin_imports.py checks what
is imported; this script measures what it costs).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

GOAL_ADDED_MS = 50.0
DISABLE = ["-p", "no:fakekafka", "-p", "no:fakekafka_spark"]


def run_once(project: str, env: dict[str, str], extra: list[str]) -> float:
    """One pytest start to exit, in seconds; fails loudly if the empty test did not pass."""
    start = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *extra], cwd=project,
                          env=env, capture_output=True, text=True, check=False)
    elapsed = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(f"pytest failed in {project}:\n{done.stdout}\n{done.stderr}")
    return elapsed


IMPORT_ALONE = """
import time, pytest
t = time.perf_counter()
import fakekafka.testing.pytest_plugin, fakekafka.spark.pytest_plugin
print(time.perf_counter() - t)
"""


def import_alone(env: dict[str, str]) -> float:
    """The plugins' import by itself, in seconds, pytest already imported: the part of the start they add,
    read inside the process (a loaded machine's noise on a whole pytest start is larger than it)."""
    done = subprocess.run([sys.executable, "-c", IMPORT_ALONE], env=env, capture_output=True, text=True, check=True)
    return float(done.stdout)


def measure(runs: int) -> list[dict[str, object]]:
    rows: list[dict[str, object]] = []
    with tempfile.TemporaryDirectory(prefix="fakekafka-startup-") as tmp:
        project = os.path.join(tmp, "project")
        os.mkdir(project)
        with open(os.path.join(project, "test_empty.py"), "w") as f:
            f.write("def test_nothing():\n    assert True\n")
        # as a user's shell has it: plugin autoload on, no PYTEST_ADDOPTS, bytecode as the configuration says
        base = {k: v for k, v in os.environ.items()
                if not k.startswith("PYTEST_") and k not in ("PYTHONPYCACHEPREFIX", "PYTHONDONTWRITEBYTECODE")}
        for bytecode in (True, False):
            env = dict(base)
            if not bytecode:
                cache = os.path.join(tmp, "no-pycache")
                os.makedirs(cache, exist_ok=True)
                env.update(PYTHONDONTWRITEBYTECODE="1", PYTHONPYCACHEPREFIX=cache)
            on: list[float] = []
            off: list[float] = []
            alone: list[float] = []
            run_once(project, env, [])  # warm-up: the OS's file cache, and with bytecode the .pyc files written
            run_once(project, env, DISABLE)
            for i in range(runs):
                pair = [("on", []), ("off", DISABLE)]
                for name, extra in pair if i % 2 == 0 else pair[::-1]:
                    (on if name == "on" else off).append(run_once(project, env, extra))
                alone.append(import_alone(env))
            added = [a - b for a, b in zip(on, off, strict=True)]
            rows.append({"bytecode": bytecode, "runs": runs,
                         "on_min_ms": 1000 * min(on), "on_median_ms": 1000 * statistics.median(on),
                         "off_min_ms": 1000 * min(off), "off_median_ms": 1000 * statistics.median(off),
                         "added_median_ms": 1000 * statistics.median(added),
                         "added_min_ms": 1000 * (min(on) - min(off)),
                         "import_min_ms": 1000 * min(alone), "import_median_ms": 1000 * statistics.median(alone)})
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=15, help="timed runs per configuration (default 15)")
    parser.add_argument("--json", metavar="FILE", help="also write the rows as JSON")
    args = parser.parse_args()
    if args.runs < 1:
        parser.error(f"--runs must be 1 or more, not {args.runs}")
    rows = measure(args.runs)
    print(f"pytest start of an empty test project, {args.runs} runs each (wall ms; python {sys.version.split()[0]}, "
          f"{os.cpu_count()} cores)")
    print(f"{'bytecode':<24}{'plugins on':>16}{'plugins off':>16}{'added':>10}{'plugin import':>16}{'goal':>6}")
    print(f"{'':<24}{'min / med':>16}{'min / med':>16}{'med':>10}{'min / med':>16}")
    for r in rows:
        added, imported = float(r["added_median_ms"]), float(r["import_median_ms"])  # type: ignore[arg-type]
        verdict = "ok" if max(added, imported) <= GOAL_ADDED_MS else "MISS" if imported > GOAL_ADDED_MS else "noisy"
        print(f"{'yes' if r['bytecode'] else 'no (compiled each run)':<24}"
              f"{r['on_min_ms']:>8.0f} / {r['on_median_ms']:<5.0f}{r['off_min_ms']:>8.0f} / {r['off_median_ms']:<5.0f}"
              f"{added:>8.1f}  {r['import_min_ms']:>7.1f} / {imported:<5.1f}{verdict:>6}")
    print("added: the median of the paired differences (on - off) of whole starts; plugin import: the two plugin\n"
          "modules' import inside the process, pytest already imported. 'noisy': the import is within the goal\n"
          "but the machine's noise on whole starts is larger than it; run again when quieter or with more --runs.")
    print(f"goal: at most {GOAL_ADDED_MS:.0f} ms added; baseline: {' '.join(DISABLE)}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=2)


if __name__ == "__main__":
    main()
