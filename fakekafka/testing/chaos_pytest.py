"""pytest under chaos (registered by the fakekafka plugin): `@pytest.mark.fakekafka(chaos=True)` or
`chaos=fakekafka.Chaos(profile=...)` runs the test once per seed of `--chaos-seeds N` (from `--chaos-base-seed`,
default 0: seeds 0..N-1), with the invariants checked after the test's body; a failing seed's schedule is shrunk
by rerunning the test (fixtures and all) with subsets of it, and the report names the seed, the shrunk steps and
the command that replays them (`--chaos-replay FILE`). A marker's `Chaos(seed=...)` or `Schedule` runs as given
(`--chaos-replay` replaces it).
"""

from __future__ import annotations

import dataclasses
import re
import shlex
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from fakekafka.testing.stash import CLUSTERS

if TYPE_CHECKING:
    from fakekafka.chaos import Schedule
    from fakekafka.testing.embedded import Cluster

__all__ = ["chaos_for"]

_PARAM = "fakekafka_chaos_seed"
_REPLAY = pytest.StashKey["Schedule"]()
_RESULT = pytest.StashKey["tuple[Schedule, tuple[str, ...], int | None]"]()
_TIMELINE = pytest.StashKey["str | None"]()
"""The failing run's timeline picture (SVG text), drawn once the test's body ended."""
WHOLE_REPLAYS = 3
"""How many times a failing seed's whole schedule is replayed, until it fails again, before shrinking."""


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("fakekafka")
    group.addoption("--chaos-seeds", type=int, metavar="N", default=None,
                    help="run each test marked fakekafka(chaos=...) under N seeds (default 1)")
    group.addoption("--chaos-base-seed", type=int, metavar="S", default=0,
                    help="the first of the --chaos-seeds seeds (default 0: seeds 0..N-1)")
    group.addoption("--chaos-replay", metavar="FILE", default=None,
                    help="run the chaos tests selected with this schedule (a file a failing chaos run wrote)")
    group.addoption("--chaos-shrink-runs", type=int, metavar="N", default=32,
                    help="reruns a failing chaos test may take to shrink its schedule (default 32; 0: no shrinking)")
    group.addoption("--chaos-dir", metavar="DIR", default=None,
                    help="where failing and shrunk chaos schedules are written (default .fakekafka-chaos)")


def _open_seed(chaos: Any) -> bool:
    """The marker's chaos takes its seed from the command line."""
    if chaos is True:
        return True
    if chaos is None or chaos is False:
        return False  # (no import of the chaos package: a session without chaos never loads it)
    from fakekafka.chaos import Chaos
    return isinstance(chaos, Chaos) and chaos.seed is None and chaos.schedule is None


def pytest_configure(config: pytest.Config) -> None:
    seeds = config.getoption("--chaos-seeds")
    if seeds is not None and seeds < 1:
        raise pytest.UsageError("--chaos-seeds takes a number of seeds, at least 1")
    if config.getoption("--chaos-shrink-runs") < 0:
        raise pytest.UsageError("--chaos-shrink-runs takes a number of runs, 0 or more")
    replay = config.getoption("--chaos-replay")
    if replay is not None:
        from fakekafka.chaos import Schedule
        try:
            Schedule.load(replay)
        except ValueError as e:
            raise pytest.UsageError(f"--chaos-replay: {e}") from None


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    marker = metafunc.definition.get_closest_marker("fakekafka")
    if marker is None or not _open_seed(marker.kwargs.get("chaos")):
        return
    config = metafunc.config
    metafunc.fixturenames.append(_PARAM)
    if config.getoption("--chaos-replay"):
        metafunc.parametrize(_PARAM, [None], ids=["chaos-replay"])
        return
    base, count = config.getoption("--chaos-base-seed"), config.getoption("--chaos-seeds") or 1
    seeds = list(range(base, base + count))
    metafunc.parametrize(_PARAM, seeds, ids=[f"chaos-seed={s}" for s in seeds])


def chaos_for(request: pytest.FixtureRequest, given: Any) -> Any:
    """The chaos the test's cluster runs under: the marker's, with this item's seed, the schedule being tried
    while shrinking, or `--chaos-replay`'s."""
    from fakekafka.chaos import Chaos, Schedule, chaos_of
    item = request.node
    base = Chaos() if given is True else chaos_of(given) if given is not None else None
    if base is None:
        return None
    trying = item.stash.get(_REPLAY, None)
    replay = request.config.getoption("--chaos-replay")
    if trying is not None:
        chosen = dataclasses.replace(base, seed=None, schedule=trying)
    elif replay:  # a marker's own seed or schedule too: its report's replay command names the test alone
        chosen = dataclasses.replace(base, seed=None, schedule=Schedule.load(replay))
    elif _open_seed(given):
        seed = item.callspec.params.get(_PARAM) if hasattr(item, "callspec") else None
        chosen = dataclasses.replace(base, seed=seed if seed is not None else request.config.getoption(
            "--chaos-base-seed"))
    else:
        chosen = base
    return chosen


def _chaos_cluster(item: pytest.Item) -> Cluster | None:
    for handle in item.stash.get(CLUSTERS, []):
        if getattr(handle, "chaos", None) is not None:
            return handle  # type: ignore[return-value]
    return None


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Iterator[None]:
    """After the test's body: the invariants checked, the schedule applied and the way it failed kept."""
    try:
        result = yield
    except BaseException as e:
        cluster = _chaos_cluster(item)
        if cluster is not None:
            from fakekafka.testing.chaos import ChaosFailure
            signature = tuple(sorted(v.invariant for v in e.violations)) if isinstance(e, ChaosFailure) \
                else ("error", type(e).__name__)
            item.stash[_RESULT] = (cluster.chaos_schedule(), signature, cluster.chaos.seed)  # type: ignore[union-attr]
            item.stash[_TIMELINE] = _timeline(cluster, item)
        raise
    cluster = _chaos_cluster(item)
    if cluster is None:
        return result
    from fakekafka.testing.chaos import ChaosFailure
    violations, schedule = cluster.check_invariants(), cluster.chaos_schedule()
    item.stash[_RESULT] = (schedule, tuple(sorted(v.invariant for v in violations)), cluster.chaos.seed)  # type: ignore[union-attr]
    if violations:
        item.stash[_TIMELINE] = _timeline(cluster, item)
        raise ChaosFailure(violations, schedule)
    return result


def _timeline(cluster: Cluster, item: pytest.Item) -> str | None:
    """The run's picture, drawn on the cluster's (or proxy's) loop; None where it cannot be (the report then names
    no picture rather than hiding the failure)."""
    run = cluster.chaos
    draw = getattr(run, "timeline_svg", None)
    if draw is None:
        return None
    try:
        return cluster.call(lambda: draw(item.nodeid))
    except Exception:  # a cluster already stopped by the test: no picture
        return None


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> bool | None:
    """A chaos test's run, and when it fails, its shrinking: the test rerun (fixtures and all, reports not
    logged) with subsets of the schedule it applied, keeping those that fail the same way."""
    marker = item.get_closest_marker("fakekafka")
    if marker is None or marker.kwargs.get("chaos") in (None, False):
        return None
    from _pytest.runner import runtestprotocol
    item.ihook.pytest_runtest_logstart(nodeid=item.nodeid, location=item.location)
    reports = runtestprotocol(item, nextitem=nextitem, log=False)
    failed = next((r for r in reports if r.when == "call" and r.failed), None)
    result = item.stash.get(_RESULT, None)
    if failed is not None and result is not None:
        failed.sections.append(("fakekafka chaos", _shrink_and_report(item, nextitem, *result)))
    for report in reports:
        item.ihook.pytest_runtest_logreport(report=report)
    item.ihook.pytest_runtest_logfinish(nodeid=item.nodeid, location=item.location)
    return True


def _shrink_and_report(item: pytest.Item, nextitem: pytest.Item | None, schedule: Schedule,
                       signature: tuple[str, ...], seed: int | None) -> str:
    from _pytest.runner import runtestprotocol

    from fakekafka.chaos import shrink
    config = item.config
    out = Path(config.getoption("--chaos-dir") or config.rootpath / ".fakekafka-chaos")
    name = re.sub(r"[^A-Za-z0-9_.=-]+", "_", item.nodeid)[-120:]
    applied = schedule.save(out / f"{name}.json")
    how = "the test raised " + signature[1] if signature[:1] == ("error",) else "violated: " + ", ".join(signature)
    lines = [f"chaos {'seed ' + str(seed) if seed is not None else 'replay'} failed ({how})",
             f"schedule applied: {len(schedule)} step(s), written to {applied}"]
    runs = config.getoption("--chaos-shrink-runs")
    final, final_path = schedule, applied
    repeats, tries = True, 0
    timelines = {tuple(schedule.steps): item.stash.get(_TIMELINE, None)}
    """Each failing run's picture, by the steps it replayed."""
    if runs and len(schedule):
        def fails(candidate: Schedule) -> bool:
            item.stash[_REPLAY] = candidate
            for key in (_RESULT, _TIMELINE):
                if key in item.stash:
                    del item.stash[key]
            try:
                reports = runtestprotocol(item, nextitem=nextitem, log=False)
            finally:
                del item.stash[_REPLAY]
            again = item.stash.get(_RESULT, None)
            failed = any(r.when == "call" and r.failed for r in reports) and again is not None \
                and again[1] == signature
            if failed:
                timelines[tuple(candidate.steps)] = item.stash.get(_TIMELINE, None)
            return failed
        # the whole schedule first: a failure that needed more than the faults (a session timing out under load)
        # does not come back, and ddmin would spend the budget finding that out; one that needs the faults and
        # some timing (a rebalance landing mid-batch) comes back in one of a few replays
        while tries < min(WHOLE_REPLAYS, runs) and not (came_back := fails(schedule)):
            tries += 1
        if not came_back:
            repeats = False
            lines.append(f"replayed {_times(tries)} with the whole schedule, the test passed each time: the failure "
                         "needed timing the faults alone do not bring back (a timeout under load, a race); not shrunk:")
        else:
            tries += 1
            shrunk = shrink(schedule, fails, max_runs=runs - tries)
            final = shrunk.schedule
            final_path = final.save(out / f"{name}.shrunk.json")
            budget = " (the rerun budget ran out first)" if shrunk.exhausted else ""
            lines.append(f"shrunk in {shrunk.runs + tries} rerun(s) to {len(final)} step(s){budget}, "
                         f"written to {final_path}:")
    else:
        lines.append("steps:")
    lines.extend(f"  {line}" for line in final.lines())
    picture = timelines.get(tuple(final.steps))
    if picture is not None:  # beside the schedule it draws: name.shrunk.svg or name.svg
        svg = final_path.with_suffix(".svg")
        svg.write_text(picture)
        lines.append(f"timeline (requests, faults, group generations): {svg}")
    nodeid = item.nodeid.replace(f"chaos-seed={seed}", "chaos-replay")
    command = f"pytest {shlex.quote(nodeid)} --chaos-replay {shlex.quote(str(final_path))}"
    lines.append(f"replay: {command}" if repeats else f"replay (it passed when replayed {_times(tries)}): {command}")
    return "\n".join(lines)


def _times(n: int) -> str:
    return {1: "once", 2: "twice"}.get(n, f"{n} times")
