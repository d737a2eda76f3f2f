"""Runs scenarios × clients × brokers and judges each cell against the reference.

Each (broker, client) pair is a lane: one client instance (for Java, one JVM) runs that pair's scenarios
one after another. Lanes run in parallel (`jobs`), which matters against tansu, whose group joins take
seconds: its lanes wait side by side instead of in turn. Scenario names are unique per cell, so lanes on
the same broker never share a topic or group.

A cell's status:
    pass         the normalised outcome equals the reference
    differs      it does not (`known` when KNOWN_DIFFERENCES.md lists the cell)
    unsupported  the client cannot do what the scenario needs, or the broker cannot be set up for it
    error        the harness, the client or its subprocess failed or hung (`known` when listed)
    skipped      the broker is not available here, or `quick` left a slow scenario out

The reference for (scenario, client) is that client's outcome on real Kafka when the run included a
`kafka` broker that produced one (compared with exception type names kept), else the scenario's written
expectation (compared without them); `fakekafka-3.9`'s is the outcome on `kafka-3.9` (Kafka 3.9.1) likewise.
The real Kafkas' own cells are judged against the written expectation.
A cell through a proxy (`proxy:KIND`) is judged against the same client's cell on KIND directly when the
run had it (reference `direct`: the proxy must change nothing a client can see, an unsupported cell
included); without it, as KIND's cells are, and KIND's rows in KNOWN_DIFFERENCES.md excuse it too.
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import dataclasses
import fnmatch
import json
import time
import traceback
import uuid
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from compat.brokers import (
    PROXY,
    REAL_KAFKAS,
    REFERENCES,
    THREE_BROKERS,
    Target,
    Unavailable,
    start_target,
    stop_targets,
)
from compat.clients.agent import AgentClient
from compat.clients.base import Client, Unsupported
from compat.clients.catalog import CLIENTS
from compat.clients.registry import make_client
from compat.env import Env
from compat.known import Known, load_known
from compat.normalise import diff, normalise
from compat.scenarios import SCENARIOS, Scenario

__all__ = ["Cell", "Report", "run"]

ROOT = Path(__file__).resolve().parent.parent
CONFORMANCE_FILE = ROOT / "build" / "conformance.json"
FAILING = ("differs", "error")


@dataclass
class Cell:
    scenario: str
    client: str
    broker: str
    status: str = "skipped"
    seconds: float = 0.0
    outcome: Any = None
    reference: str = ""  # "kafka" or "expected"
    diff: list[str] = field(default_factory=list)
    detail: str = ""  # why unsupported/skipped, or the error
    known: str = ""  # the KNOWN_DIFFERENCES.md reason, when listed
    client_log: str = field(default="", repr=False)  # what the client logged during the cell (the report keeps
    # it in `detail` for a failing cell only)

    @property
    def failing(self) -> bool:
        return self.status in FAILING and not self.known


@dataclass
class Report:
    started: str
    seconds: float
    brokers: dict[str, dict[str, Any]]
    clients: list[str]
    scenarios: list[str]
    quick: bool
    conformance: dict[str, Any] | None
    cells: list[Cell]
    stale_known: list[str]

    @property
    def failing(self) -> list[Cell]:
        return [c for c in self.cells if c.failing]

    def to_json(self) -> dict[str, Any]:
        d = asdict(self)
        for c in d["cells"]:
            del c["client_log"]  # a failing cell's is in its detail
        d["failing"] = [f"{c.scenario} / {c.client} / {c.broker}: {c.status}" for c in self.failing]
        return d


def select_scenarios(patterns: list[str] | None) -> list[Scenario]:
    if not patterns:
        return list(SCENARIOS.values())
    chosen = [s for s in SCENARIOS.values() if any(fnmatch.fnmatchcase(s.name, p) for p in patterns)]
    if not chosen:
        raise ValueError(f"no scenario matches {patterns}; there are: {', '.join(SCENARIOS)}")
    return chosen


CELL_PROGRESS: Any = None
"""Called with each cell as it ends, when set (`python -m compat --verbose`): a run cut off by a timeout then shows
which cell each lane was in."""


def _run_cell(scenario: Scenario, client: Client, target: Target, run_id: str) -> Cell:
    cell = Cell(scenario.name, client.name, target.name)
    missing = scenario.needs - target.features()
    if "auto_create_off" in missing:
        cell.status, cell.detail = "unsupported", f"{target.name} runs with topic auto-creation on"
        return cell
    if THREE_BROKERS in missing:
        cell.status, cell.detail = "unsupported", (f"{target.name} has no three brokers to kill and restart "
                                                   f"(the broker kinds kafka-3 and fakekafka-3 have)")
        return cell
    env = Env(target, f"compat-{run_id}-{target.prefix_tag}{scenario.name}-{client.name}")
    mark = client.log_mark()
    # a fault cell has its cluster to itself: a killed broker would be every other lane's fault too
    alone = target.faults.lock if THREE_BROKERS in scenario.needs and target.faults else contextlib.nullcontext()
    alone.__enter__()
    t0 = time.monotonic()  # a fault cell's time starts when its turn comes
    try:
        cell.outcome = normalise(scenario.run(client, env), keep_client_types=True)
        cell.status = "done"
    except Unsupported as e:
        cell.status, cell.detail = "unsupported", str(e)
    except Exception as e:  # noqa: BLE001 - whatever failed, the cell says so
        cell.status, cell.detail = "error", "".join(traceback.format_exception(e))[-3000:]
    finally:
        try:
            env.close()
        except Exception:  # noqa: BLE001, S110
            pass
        alone.__exit__(None, None, None)
        cell.seconds = round(time.monotonic() - t0, 2)
        try:
            cell.client_log = client.log_since(mark)
        except (OSError, ValueError):  # its agent's log is closed: the client was closed in the cell
            pass
        if CELL_PROGRESS is not None:
            CELL_PROGRESS(cell)
    return cell


def _lane(target: Target, client_name: str, scenarios: list[Scenario], quick: bool, run_id: str) -> list[Cell]:
    cells: list[Cell] = []
    if target.clients is not None and client_name not in target.clients:
        return [Cell(s.name, client_name, target.name, "unsupported",
                     detail=f"{target.name} serves only {', '.join(target.clients)}") for s in scenarios]
    client: Client | None = None
    try:
        for s in scenarios:
            if quick and s.slow and target.slow_groups:
                cells.append(Cell(s.name, client_name, target.name, "skipped",
                                  detail=f"--quick: several group rebalances take minutes on {target.name}"))
                continue
            if client is None or (isinstance(client, AgentClient) and client.proc.poll() is not None):
                try:
                    # a copy of its own: a scenario shortens its client's fetch wait for a while (logs.py
                    # _short_fetch), which must not cut short another lane's fetch on the same broker
                    client = make_client(client_name, target.bootstrap, dataclasses.replace(target.timing))
                    client.probe()
                except Unsupported as e:
                    cells.extend(Cell(x.name, client_name, target.name, "unsupported", detail=str(e))
                                 for x in scenarios[len(cells):])
                    return cells
                except Exception as e:  # noqa: BLE001 - the client cannot talk to this broker at all
                    detail = f"{type(e).__name__}: {e}"
                    cells.extend(Cell(x.name, client_name, target.name, "error", detail=detail)
                                 for x in scenarios[len(cells):])
                    return cells
            cannot = {**target.cannot, **target.client_cannot.get(client_name, {}), **client.cannot}
            lacking = [cannot[u] for u in sorted(s.uses) if u in cannot]
            if lacking:
                cells.append(Cell(s.name, client_name, target.name, "unsupported", detail="; ".join(lacking)))
                continue
            cells.append(_run_cell(s, client, target, run_id))
    finally:
        if client is not None:
            try:
                client.close()
            except Exception:  # noqa: BLE001, S110
                pass
    return cells


def _with_logs(cells: list[Cell], targets: list[Target]) -> None:
    """A failing cell gets what its client logged meanwhile (a driver's warnings and errors) and, on a broker that
    keeps a log (real Kafka), the log's lines that name the cell's topics and groups (Kafka's group coordinator
    logs each member joining, leaving or fenced and each new target assignment): what each side did when the cell
    did not come to the state it waited for."""
    logs = {t.name: t for t in targets if t.about is not None}
    for c in cells:
        client_log, c.client_log = c.client_log, ""
        if not c.failing:
            continue
        parts = [c.detail] if c.detail else []
        if client_log.strip():
            parts.append(f"--- {c.client}'s log during this cell:\n{client_log.strip()}")
        target = logs.get(c.broker)
        if target is not None:
            lines = target.about(f"{c.scenario}-{c.client}-")  # type: ignore[misc]
            parts.append(f"--- {c.broker}'s log about this cell:\n" + ("\n".join(lines[-60:]) or "(no line)"))
        c.detail = "\n".join(parts)


def _judge(cells: list[Cell], known: list[Known]) -> list[str]:
    by_key = {(c.scenario, c.client, c.broker): c for c in cells}
    for c in cells:
        direct = _direct(c, by_key)
        if direct is not None and c.status == "unsupported" and direct.status in ("pass", "differs", "done"):
            # the proxy must not take away what the broker behind it can do
            c.status, c.reference = "differs", "direct"
            c.diff = [f"/: unsupported through the proxy ({c.detail.strip()[:200]}), ran directly"]
            continue
        if c.status != "done":
            continue
        scenario = SCENARIOS[c.scenario]
        plain = c.broker[len(PROXY):] if c.broker.startswith(PROXY) else c.broker
        reference = REFERENCES.get(plain, "kafka")
        kafka = by_key.get((c.scenario, c.client, reference))
        if direct is not None and direct.status in ("pass", "differs", "done"):
            c.reference = "direct"  # the same client on the same broker without the proxy
            want, got = direct.outcome, c.outcome
        elif c.broker not in REAL_KAFKAS and kafka is not None and kafka.status in ("pass", "differs", "done"):
            c.reference = reference
            want = kafka.outcome
            got = c.outcome
        else:
            c.reference = "expected"
            client_stub = type("C", (), {"name": c.client, "reports_offsets": c.client != "kcat"})()
            want = normalise(scenario.expected(client_stub))  # type: ignore[arg-type]
            got = normalise(c.outcome)
        want = json.loads(json.dumps(want))  # tuples and int keys as JSON has them
        got = json.loads(json.dumps(got))
        c.diff = diff(got, want)
        c.status = "differs" if c.diff else "pass"
    used: set[int] = set()
    for c in cells:
        if c.status not in FAILING:
            continue
        for k in known:
            if k.excuses(c.scenario, c.client, c.broker, c.status, c.diff):
                c.known = k.reason
                used.add(k.line)
                break
        behind = c.broker[len(PROXY):] if c.broker.startswith(PROXY) else None
        if c.known or behind is None or c.reference == "direct":
            continue
        # judged as the broker behind it would be (its direct cell did not run or did not get this far): what
        # that broker is known for excuses the proxied cell too
        direct = by_key.get((c.scenario, c.client, behind))
        if direct is not None and direct.status == c.status == "error" and direct.known:
            c.known = f"as directly: {direct.known}"
            continue
        for k in known:
            if k.excuses(c.scenario, c.client, behind, c.status, c.diff):
                c.known = f"as directly: {k.reason}"
                used.add(k.line)
                break
    # stale: listed, excusing nothing, and some cell it names passes (a cell only another row excuses, e.g.
    # kcat on tansu, or one `--quick` skipped, says nothing about whether this row still holds)
    ran = {(c.scenario, c.client, c.broker) for c in cells if c.status == "pass"}
    stale = []
    for k in known:
        if k.line not in used and any(k.matches(*key) for key in ran):
            stale.append(f"KNOWN_DIFFERENCES.md line {k.line} ({k.scenario} / {k.client} / {k.broker}) "
                         f"matched only passing cells")
    return stale


def _spec_order(specs: list[str], name: str) -> int:
    """Where a broker (its name is its spec) came on the command line."""
    return specs.index(name) if name in specs else len(specs)


def _direct(cell: Cell, by_key: dict[tuple[str, str, str], Cell]) -> Cell | None:
    """For a cell through a proxy, the same scenario and client on the broker behind it, when the run had it."""
    if not cell.broker.startswith(PROXY):
        return None
    return by_key.get((cell.scenario, cell.client, cell.broker[len(PROXY):]))


def read_conformance(path: Path = CONFORMANCE_FILE) -> dict[str, Any] | None:
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    return {k: data.get(k) for k in ("summary", "pairs_checked", "pairs_advertised", "kafka_clients", "failures",
                                     "not_checkable", "pairs_checked_by")}


def run(brokers: list[str], clients: list[str] | None = None, scenarios: list[str] | None = None, *,
        quick: bool = False, jobs: int = 8, known_file: Path | None = None,
        progress: Any = None, recording: Any = None) -> Report:
    """Runs the matrix; brokers are started here and stopped afterwards. `recording` (compat.diff.Recording)
    puts the lanes of the two brokers it names behind recording relays, for a wire diff of this same run."""
    t0 = time.monotonic()
    started = time.strftime("%Y-%m-%d %H:%M:%S")
    chosen = select_scenarios(scenarios)
    client_names = list(clients or CLIENTS)
    for name in client_names:
        if name not in CLIENTS:
            raise ValueError(f"unknown client {name!r}; choose from {', '.join(CLIENTS)}")
    from compat.clients.java import JAVA_CLIENTS, java_command
    for name in client_names:
        if name in JAVA_CLIENTS:  # compile once per client version, before the lanes start
            try:
                java_command(JAVA_CLIENTS[name])
            except Unsupported:
                pass
    run_id = uuid.uuid4().hex[:6]
    targets: list[Target] = []
    info: dict[str, dict[str, Any]] = {}
    cells: list[Cell] = []
    try:
        running: dict[str, Target] = {}
        # the brokers first, then the proxies: a proxy stands in front of its broker when the run has it
        for spec in sorted(brokers, key=lambda b: b.startswith(PROXY)):
            try:
                target = start_target(spec, running)
                targets.append(target)
                running[target.name] = target
                info[target.name] = {"bootstrap": target.bootstrap, "available": True, "note": target.note}
            except Unavailable as e:
                name = spec
                info[name] = {"available": False, "reason": str(e)}
                cells.extend(Cell(s.name, c, name, "skipped", detail=str(e)) for s in chosen for c in client_names)
        info = {k: info[k] for k in sorted(info, key=lambda k: _spec_order(brokers, k))}
        lane = _lane
        if recording is not None:
            recording.start(running, run_id)
            lane = recording.lane
        with concurrent.futures.ThreadPoolExecutor(max(1, jobs)) as pool:
            futures = {pool.submit(lane, t, c, chosen, quick, run_id): (t.name, c) for t in targets
                       for c in client_names}
            for fut in concurrent.futures.as_completed(futures):
                lane_cells = fut.result()
                cells.extend(lane_cells)
                if progress is not None:
                    progress(futures[fut], lane_cells)
        order = {s.name: i for i, s in enumerate(chosen)}
        cells.sort(key=lambda c: (order[c.scenario], client_names.index(c.client), _spec_order(brokers, c.broker)))
        stale = _judge(cells, load_known(known_file) if known_file else load_known())
        _with_logs(cells, targets)
    finally:
        for target in targets:  # a broker whose cells errored: the end of its own log, before it is removed
            if target.log is not None and any(c.broker == target.name and c.status == "error" for c in cells):
                info[target.name]["log"] = target.log()
        stop_targets(targets[::-1])  # proxies before the brokers behind them
    return Report(started, round(time.monotonic() - t0, 1), info, client_names, [s.name for s in chosen], quick,
                  read_conformance(), cells, stale)
