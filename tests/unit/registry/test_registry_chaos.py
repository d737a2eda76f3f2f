"""Chaos on the Schema Registry, pure: the seeded draw by route, its legality, the schedule, replay and shrinking."""

from __future__ import annotations

import pytest

from fakekafka.chaos import Chaos, ChaosSource, Profile, Schedule, Step, shrink
from fakekafka.chaos.registry import REGISTRY_ERRORS, legal_registry_errors
from fakekafka.registry.http import route_of

ROUTES = [
    "POST /subjects/{subject}/versions",
    "GET /schemas/ids/{id}",
    "GET /subjects/{subject}/versions/{version}",
    "POST /subjects/{subject}",
    "GET /config",
    "PUT /config/{subject}",
]
HEAVY = Profile(
    "heavy", registry_error_rate=0.4, registry_latency_rate=0.2, unknown_schema_id_rate=0.3, max_faults=None
)


def run(chaos: Chaos, requests: int = 200) -> tuple[list[object], Schedule]:
    source = ChaosSource(None, chaos, now_ms=lambda: 0)
    actions = [source.registry_action(ROUTES[i % len(ROUTES)]) for i in range(requests)]
    return actions, source.applied


def test_the_same_seed_draws_the_same_registry_faults_and_another_seed_others() -> None:
    first, schedule = run(Chaos(seed=11, profile=HEAVY))
    again, same = run(Chaos(seed=11, profile=HEAVY))
    _, other = run(Chaos(seed=12, profile=HEAVY))
    assert first == again and schedule.same_as(same)
    assert not schedule.same_as(other)
    kinds = {s.kind for s in schedule}
    assert kinds == {"registry_error", "registry_latency", "unknown_schema_id"}, kinds


def test_only_faults_a_registry_answers_on_that_route() -> None:
    _, schedule = run(Chaos(seed=3, profile=HEAVY), 600)
    for step in schedule:
        route = step.api.removeprefix("registry ")
        if step.kind == "unknown_schema_id":
            assert route.startswith("GET /schemas/ids/{id}"), step
        elif step.kind == "registry_error":
            legal = {str(e.error_code) for e in legal_registry_errors(route)}
            assert step.error in legal and step.mechanism, step
    codes = {(s.api, s.error) for s in schedule if s.kind == "registry_error"}
    assert ("registry POST /subjects/{subject}/versions", "40401") not in codes  # registering creates the subject
    assert not legal_registry_errors("GET /config")  # nothing drawn where no mechanism answers an error
    assert all(e.error_code in (40401, 40403, 50001, 50002, 50003, 503) for e in REGISTRY_ERRORS)


def test_a_written_schedule_replays_exactly(tmp_path: object) -> None:
    actions, schedule = run(Chaos(seed=5, profile=HEAVY))
    path = schedule.save(tmp_path / "registry.json")  # type: ignore[operator]
    replayed, applied = run(Chaos(schedule=Schedule.load(path)))
    assert replayed == actions and applied.same_as(schedule)
    lines = schedule.lines()
    assert any("registry GET /schemas/ids/{id} request" in line and "40403" in line for line in lines), lines


def test_an_action_says_status_code_and_when() -> None:
    step = Step("registry POST /subjects/{subject}/versions", 0, "registry_error", error="50002", after=True)
    source = ChaosSource(None, Chaos(schedule=Schedule([step])), now_ms=lambda: 0)
    action = source.registry_action("POST /subjects/{subject}/versions")
    assert action is not None and (action.status, action.error_code, action.after) == (500, 50002, True)
    assert source.registry_action("POST /subjects/{subject}/versions") is None  # the next one: no step there
    assert "answered 500 with 50002 after it was applied" in step.describe()
    with pytest.raises(ValueError, match="Confluent's error code"):
        Step("registry GET /config", 0, "registry_error", error="NOT_COORDINATOR")


def test_registry_rates_add_up_on_their_own() -> None:
    Profile("p", error_rate=0.9, registry_error_rate=0.9)  # two streams of requests, one fault each
    with pytest.raises(ValueError, match="registry rates add up to more than 1"):
        Profile("p", registry_error_rate=0.6, unknown_schema_id_rate=0.6)
    assert not Profile("p", error_rate=0, latency_rate=0, drop_rate=0, registry_latency_rate=0.1).quiet


def test_shrinking_finds_the_registry_step_a_failure_needs() -> None:
    _, schedule = run(Chaos(seed=8, profile=HEAVY), 60)
    culprit = next(s for s in schedule if s.kind == "unknown_schema_id")
    result = shrink(schedule, lambda candidate: culprit in candidate.steps)
    assert result.schedule.steps == [culprit]


def test_routes_are_named_by_their_templates() -> None:
    assert route_of("GET", "/schemas/ids/7") == "GET /schemas/ids/{id}"
    assert route_of("POST", "/subjects/orders-value/versions") == "POST /subjects/{subject}/versions"
    assert route_of("GET", "/subjects/a/versions/latest/schema") == "GET /subjects/{subject}/versions/{version}/schema"
    assert route_of("PATCH", "/subjects") is None and route_of("GET", "/nowhere") is None
