"""How `python -m compat` judges cells through a proxy (`--broker proxy:KIND`), without brokers: against the
same client's direct cell when the run had it, else as KIND's own cells with KIND's known differences."""

from __future__ import annotations

from typing import Any

import pytest

from compat.known import Known
from compat.runner import Cell, _judge

SCENARIO = "roundtrip_lz4"


def _cell(broker: str, status: str = "done", outcome: object = None, **kw: object) -> Cell:
    return Cell(SCENARIO, "kafka-python", broker, status=status, outcome=outcome, **kw)  # type: ignore[arg-type]


def test_a_proxied_cell_is_judged_against_the_direct_one() -> None:
    direct = _cell("tansu", outcome={"records": [1, 2]})
    same = _cell("proxy:tansu", outcome={"records": [1, 2]})
    _judge([direct, same], [])
    assert (same.status, same.reference, same.diff) == ("pass", "direct", [])

    direct = _cell("tansu", outcome={"records": [1, 2]})
    other = _cell("proxy:tansu", outcome={"records": [1]})
    _judge([direct, other], [])
    assert (other.status, other.reference) == ("differs", "direct")
    assert other.diff and other.diff[0].startswith("/records")


def test_unsupported_only_through_the_proxy_is_a_difference() -> None:
    direct = _cell("fakekafka", outcome={"records": [1]})
    proxied = _cell("proxy:fakekafka", "unsupported", detail="the client could not connect")
    _judge([direct, proxied], [])
    assert proxied.status == "differs" and "unsupported through the proxy" in proxied.diff[0]
    both = [_cell("fakekafka", "unsupported"), _cell("proxy:fakekafka", "unsupported")]
    _judge(both, [])
    assert [c.status for c in both] == ["unsupported", "unsupported"]


def test_without_a_direct_cell_the_brokers_own_known_rows_excuse_it() -> None:
    row = Known(SCENARIO, "*", "tansu", ("*",), "tansu does it its own way", 1)
    alone = _cell("proxy:tansu", outcome={"records": []})
    _judge([alone], [row])
    assert (alone.status, alone.reference) == ("differs", "expected")
    assert alone.known == "as directly: tansu does it its own way"
    # with the direct cell in the run, its outcome is the reference and tansu's row excuses nothing
    direct, proxied = _cell("tansu", outcome={"records": []}), _cell("proxy:tansu", outcome={"records": [9]})
    _judge([direct, proxied], [row])
    assert direct.known and (proxied.status, proxied.known) == ("differs", "")



def test_a_lanes_client_has_timing_of_its_own(monkeypatch: pytest.MonkeyPatch) -> None:
    """A scenario shortens its client's fetch wait for a while (compat/scenarios/logs.py _short_fetch); with the
    broker's Timing shared, another lane's fetch on that broker waited 2 s instead of 10 and came back empty."""
    from compat import runner
    from compat.brokers import Target
    from compat.clients.base import Timing
    from compat.scenarios import SCENARIOS

    made: list[Any] = []

    class Fake:
        cannot: dict[str, str] = {}

        def __init__(self, timing: Timing) -> None:
            self.timing = timing

        def probe(self) -> None:
            pass

        def close(self) -> None:
            pass

    def make_client(name: str, bootstrap: str, timing: Timing) -> Fake:
        made.append(Fake(timing))
        return made[-1]

    seen: list[float] = []

    def run_cell(scenario: Any, client: Fake, target: Target, run_id: str) -> Cell:
        seen.append(client.timing.fetch_s)
        client.timing.fetch_s = 2.0  # and not restored yet when the next lane reads it
        return Cell(scenario.name, "c", target.name, "pass")

    monkeypatch.setattr(runner, "make_client", make_client)
    monkeypatch.setattr(runner, "_run_cell", run_cell)
    target = Target("fakekafka", "127.0.0.1:1", Timing(), None)
    for client in ("kafka-python", "aiokafka"):
        runner._lane(target, client, [SCENARIOS[SCENARIO]], False, "r")
    assert seen == [10.0, 10.0] and target.timing.fetch_s == 10.0
    assert made[0].timing is not made[1].timing


def test_a_broker_whose_cells_errored_has_the_end_of_its_log_in_the_report(monkeypatch: pytest.MonkeyPatch) -> None:
    """A Kafka that stopped answering its metadata in a loaded CI run errored 18 cells and left nothing to read:
    its log is removed with it. Now the end of it is in the report (and the printed summary) when a cell errored."""
    from compat import report, runner
    from compat.brokers import Target
    from compat.clients.base import Timing

    stopped: list[str] = []

    def start_target(spec: str, running: dict[str, Target]) -> Target:
        return Target(spec, "127.0.0.1:1", Timing(), None, stop=lambda: stopped.append(spec),
                      log=lambda: f"[warn] {spec} fenced" if not stopped else "removed")

    def lane(target: Target, client: str, scenarios: list[Any], quick: bool, run_id: str) -> list[Cell]:
        return [Cell(s.name, client, target.name, "error" if target.name == "kafka" else "pass") for s in scenarios]

    monkeypatch.setattr(runner, "start_target", start_target)
    monkeypatch.setattr(runner, "_lane", lane)
    got = runner.run(["kafka", "fakekafka"], ["kafka-python"], [SCENARIO], jobs=1)
    assert got.brokers["kafka"]["log"] == "[warn] kafka fenced"  # read before the broker was stopped
    assert "log" not in got.brokers["fakekafka"] and sorted(stopped) == ["fakekafka", "kafka"]
    assert "kafka's log, as the run ended:\n[warn] kafka fenced" in report.text(got)


def test_a_kafka_logs_notable_lines_are_its_warnings_errors_and_fencing() -> None:
    from compat.brokers import _notable
    log = ("[t] INFO Created topic a (org.apache.kafka.controller.ReplicationControlManager)\n"
           "[t] WARN slow (kafka.server.X)\n"
           "[t] INFO Fencing broker 1 because its session has timed out. (org.apache...ReplicationControlManager)\n"
           "[t] ERROR gone (kafka.server.Y)\n")
    assert _notable(log).splitlines() == log.splitlines()[1:]
    assert _notable(log, lines=1) == "[t] ERROR gone (kafka.server.Y)"
    assert _notable("[t] INFO all quiet (x)\n") == "(no warning, error or fencing)"


def test_a_failing_cell_carries_its_clients_log_and_kafkas_lines_about_it(monkeypatch: pytest.MonkeyPatch) -> None:
    """A Kafka cell whose group never settled in a loaded CI run left nothing but its diff to read; now its detail
    has what the client logged during the cell and the lines of Kafka's log that name its topics and groups (its
    group coordinator's account), read before the broker was stopped; a passing cell has neither."""
    from compat import runner
    from compat.brokers import Target
    from compat.clients.base import Timing

    stopped: list[str] = []
    log = [f"[GroupId compat-r1-{SCENARIO}-kafka-python-g] Member m1 joins the consumer group.",
           "[GroupId compat-r1-other_scenario-kafka-python-g] Member m2 joins the consumer group.",
           f"[GroupId compat-r1-{SCENARIO}-kafka-python-g] Bumped group epoch to 2."]

    def start_target(spec: str, running: dict[str, Target]) -> Target:
        return Target(spec, "127.0.0.1:1", Timing(), None, stop=lambda: stopped.append(spec),
                      about=lambda text: [] if stopped else [ln for ln in log if text in ln])

    def lane(target: Target, client: str, scenarios: list[Any], quick: bool, run_id: str) -> list[Cell]:
        return [Cell(s.name, client, target.name, "done", outcome={"records": [0]},
                     client_log=f"{target.name}: fetch retried") for s in scenarios]

    monkeypatch.setattr(runner, "start_target", start_target)
    monkeypatch.setattr(runner, "_lane", lane)
    got = runner.run(["kafka", "fakekafka"], ["kafka-python"], [SCENARIO], jobs=1)
    on = {c.broker: c for c in got.cells}
    assert on["kafka"].status == "differs"  # against the scenario's written expectation
    assert on["kafka"].detail == "--- kafka-python's log during this cell:\nkafka: fetch retried\n" \
        "--- kafka's log about this cell:\n" + "\n".join(log[::2])
    assert on["fakekafka"].status == "pass" and on["fakekafka"].detail == ""  # as Kafka did: nothing to explain
    assert "client_log" not in got.to_json()["cells"][0]


def test_a_long_cells_client_log_keeps_its_start_and_its_end() -> None:
    """A cell that waits out a stalled rebalance logs steady heartbeats for a minute: the report keeps the first
    bytes after the cell's mark (the join and the revocation that did not happen) as well as the last ones."""
    import io

    from compat.clients.agent import log_between

    f = io.BytesIO(b"before the cell\n" + b"".join(b"line %03d\n" % i for i in range(100)))
    mark = len(b"before the cell\n")
    assert log_between(f, mark, 18) == "line 098\nline 099\n"
    got = log_between(f, mark, 18, head=18)
    assert got == "line 000\nline 001\n\n... 864 bytes left out ...\nline 098\nline 099\n"
    assert log_between(f, mark, 10_000, head=18) == "".join(f"line {i:03d}\n" for i in range(100))  # all of it
    assert log_between(f, mark, 18, head=10_000) == "".join(f"line {i:03d}\n" for i in range(100))  # no gap


def test_the_agent_client_keeps_its_methods() -> None:
    """A module-level helper once put in the middle of AgentClient cut it in two: every method after it was dead."""
    from compat.clients.agent import AgentClient

    assert {"log_mark", "log_since", "request", "close"} <= set(vars(AgentClient))
