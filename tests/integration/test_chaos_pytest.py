"""pytest under chaos, driven by pytest itself (pytester): `--chaos-seeds` finds the planted bug of
examples/chaos_orders (a non-idempotent producer with retries writes an order twice when a Produce's connection
drops after the append) within 3 seeds, shrinks the schedule to the step that matters, prints the seed, the steps
and the replay command; the replay fails the same way; the fixed service passes the same seeds."""

from __future__ import annotations

import json
import re
import shlex
from pathlib import Path
from xml.etree import ElementTree

import pytest

from tests.integration.chaos_report import first_shrunk

pytest.importorskip("kafka")

SERVICE = (Path(__file__).resolve().parents[2] / "examples" / "chaos_orders" / "service.py").read_text()

TESTS = '''
import pytest
import fakekafka
from service import each_order_once, place_orders, place_orders_fixed

CHAOS = fakekafka.Chaos(profile="network", invariants=(each_order_once,))

@pytest.mark.fakekafka(topics={"orders": 3}, chaos=CHAOS)
def test_shipped(kafka):
    place_orders(kafka.bootstrap_servers, list(range(20)))

@pytest.mark.fakekafka(topics={"orders": 3}, chaos=CHAOS)
def test_fixed(kafka):
    place_orders_fixed(kafka.bootstrap_servers, list(range(20)))
'''


def test_chaos_seeds_find_shrink_and_replay_the_planted_bug(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(service=SERVICE, test_checkout=TESTS)
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "--chaos-seeds", "3", "-k", "shipped",
                                           "--chaos-dir", str(pytester.path / "schedules"))
    out = result.stdout.str()
    assert "test_shipped[chaos-seed=0] PASSED" in out or result.parseoutcomes().get("passed") == 1
    assert result.parseoutcomes()["failed"] == 2  # seeds 1 and 2 drop a Produce after its append
    assert "chaos seed 1 failed (violated: app invariant each_order_once)" in out
    assert "orders published more than once" in out
    shrunk = first_shrunk(out)
    assert shrunk is not None and 1 <= shrunk.steps <= 2, out
    steps = json.loads(shrunk.path.read_text())["steps"]
    assert any(s["kind"] == "drop_after" and s["api"] == "Produce" for s in steps)
    assert "connection dropped after append" in out
    picture = re.search(r"timeline \(requests, faults, group generations\): (\S+\.shrunk\.svg)", out)
    assert picture is not None, out  # beside the shrunk schedule, named in the report
    svg = Path(picture.group(1)).read_text()
    drawn = ElementTree.fromstring(svg)  # well-formed SVG
    kinds = [e.get("data-kind") for e in drawn.iter("{http://www.w3.org/2000/svg}rect")]
    assert kinds == [s["kind"] for s in steps] and "connection dropped after append" in svg
    assert "Produce" in svg  # the requests' lanes
    args = shrunk.replay
    for _ in range(2):  # the replay fails the same way, every time
        again = pytester.runpytest_subprocess("-p", "no:cacheprovider", *args, "--chaos-shrink-runs", "0")
        assert again.parseoutcomes() == {"failed": 1}
        assert "app invariant each_order_once: orders published more than once" in again.stdout.str()

    fixed = pytester.runpytest_subprocess("-p", "no:cacheprovider", "--chaos-seeds", "3", "-k", "fixed")
    assert fixed.parseoutcomes() == {"passed": 3, "deselected": 3}


ONCE = '''
from pathlib import Path
import pytest
import fakekafka
from service import place_orders_fixed

@pytest.mark.fakekafka(topics={"orders": 3}, chaos=fakekafka.Chaos(seed=1, profile="network"))
def test_fails_once(kafka):
    place_orders_fixed(kafka.bootstrap_servers, list(range(20)))
    ran = Path("ran-once")
    if not ran.exists():  # as a session timing out under load fails a test once: not the faults' doing
        ran.write_text("")
        raise AssertionError("the first run fails, the reruns pass")
'''


def test_a_failure_the_schedule_does_not_bring_back_is_named_and_not_shrunk(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(service=SERVICE, test_once=ONCE)
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "--chaos-dir", str(pytester.path / "schedules"))
    out = result.stdout.str()
    assert result.parseoutcomes() == {"failed": 1}, out
    assert "chaos seed 1 failed (the test raised AssertionError)" in out
    assert "replayed 3 times with the whole schedule, the test passed each time" in out and "not shrunk" in out
    assert "shrunk in" not in out and first_shrunk(out) is None
    replay = re.search(r"replay \(it passed when replayed 3 times\): pytest (test_once.py::test_fails_once .+)", out)
    assert replay is not None, out
    again = pytester.runpytest_subprocess("-p", "no:cacheprovider", *shlex.split(replay.group(1)))
    assert again.parseoutcomes() == {"passed": 1}, again.stdout.str()  # the marker's seed replaced by the file's


def test_chaos_options_refuse_bad_input_in_words(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_x="def test_x():\n    pass\n")
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "--chaos-seeds", "0")
    assert "--chaos-seeds takes a number of seeds, at least 1" in result.stderr.str()
    bad = pytester.path / "bad.json"
    bad.write_text("{}")
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "--chaos-replay", str(bad))
    assert "--chaos-replay: not a chaos schedule" in result.stderr.str()
