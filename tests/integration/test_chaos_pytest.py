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
    shrunk = re.search(r"shrunk in (\d+) rerun\(s\) to (\d+) step\(s\), written to (\S+):", out)
    assert shrunk is not None and 1 <= int(shrunk.group(2)) <= 2, out
    steps = json.loads(Path(shrunk.group(3)).read_text())["steps"]
    assert any(s["kind"] == "drop_after" and s["api"] == "Produce" for s in steps)
    assert "connection dropped after append" in out
    picture = re.search(r"timeline \(requests, faults, group generations\): (\S+\.shrunk\.svg)", out)
    assert picture is not None, out  # beside the shrunk schedule, named in the report
    svg = Path(picture.group(1)).read_text()
    drawn = ElementTree.fromstring(svg)  # well-formed SVG
    kinds = [e.get("data-kind") for e in drawn.iter("{http://www.w3.org/2000/svg}rect")]
    assert kinds == [s["kind"] for s in steps] and "connection dropped after append" in svg
    assert "Produce" in svg  # the requests' lanes
    command = re.search(r"replay: pytest (.+)", out)
    assert command is not None
    args = shlex.split(command.group(1))
    for _ in range(2):  # the replay fails the same way, every time
        again = pytester.runpytest_subprocess("-p", "no:cacheprovider", *args, "--chaos-shrink-runs", "0")
        assert again.parseoutcomes() == {"failed": 1}
        assert "app invariant each_order_once: orders published more than once" in again.stdout.str()

    fixed = pytester.runpytest_subprocess("-p", "no:cacheprovider", "--chaos-seeds", "3", "-k", "fixed")
    assert fixed.parseoutcomes() == {"passed": 3, "deselected": 3}


def test_chaos_options_refuse_bad_input_in_words(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_x="def test_x():\n    pass\n")
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "--chaos-seeds", "0")
    assert "--chaos-seeds takes a number of seeds, at least 1" in result.stderr.str()
    bad = pytester.path / "bad.json"
    bad.write_text("{}")
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "--chaos-replay", str(bad))
    assert "--chaos-replay: not a chaos schedule" in result.stderr.str()
