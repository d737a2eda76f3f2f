"""The Schema Registry's faults chaos may draw, each with the mechanism that produces it in a real registry
deployment (a leader and followers on the `_schemas` topic, often behind a load balancer), by the REST route a
request takes: a schedule never answers what a Confluent registry cannot.

Confluent's error codes: 50001 the backing Kafka store failed, 50002 an operation timed out, 50003 forwarding a
write to the leader failed; 40401 subject not found and 40403 schema not found are legal only on reads a follower
that lags the leader can answer. "A record whose schema id is unknown" is drawn as a read of `/schemas/ids/{id}`
answered 40403 (kind `unknown_schema_id`): what a deserializer meets when the registry instance it asks has not
read the id's registration yet. A registry's request point is `registry METHOD ROUTE` (the route's template, e.g.
`registry GET /schemas/ids/{id}`), counted per route, so a schedule replays by route and place as broker faults
replay by API and place.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = [
    "REGISTRY_ERRORS",
    "REGISTRY_KINDS",
    "RegistryAction",
    "RegistryLegalError",
    "legal_registry_errors",
    "registry_point",
    "registry_status",
]

REGISTRY_KINDS = {
    "registry_error": "an error answer a Confluent Schema Registry gives on this route (see each error's mechanism)",
    "registry_latency": "a slow registry answer: a write forwarded to the leader and read back from _schemas, a GC "
    "pause, a busy instance",
    "unknown_schema_id": "a read of a schema id answered 404 with 40403: the registry instance answering (a follower) "
    "has not yet read the id's registration from _schemas, so a record naming the id has a "
    "schema id the registry does not know",
}

_WRITES = (
    "POST /subjects/{subject}/versions",
    "DELETE /subjects/{subject}",
    "DELETE /subjects/{subject}/versions/{version}",
    "PUT /config",
    "PUT /config/{subject}",
    "DELETE /config/{subject}",
    "PUT /mode",
    "PUT /mode/{subject}",
    "DELETE /mode/{subject}",
)
"""Writes: a follower forwards them to the leader, which appends to _schemas and waits to read them back."""

_SUBJECT_READS = (
    "GET /subjects/{subject}/versions",
    "GET /subjects/{subject}/versions/{version}",
    "GET /subjects/{subject}/versions/{version}/schema",
    "POST /subjects/{subject}",
)
_ID_READS = (
    "GET /schemas/ids/{id}",
    "GET /schemas/ids/{id}/schema",
    "GET /schemas/ids/{id}/versions",
    "GET /schemas/ids/{id}/subjects",
)
_LAGGING = (
    "a follower answering the read has not yet read the subject's registration from _schemas (it was "
    "registered moments ago through the leader)"
)


@dataclass(frozen=True)
class RegistryLegalError:
    route: str
    error_code: int
    after: bool
    """The registry applied the request before answering the error."""
    mechanism: str

    @property
    def status(self) -> int:
        return registry_status(self.error_code)


def registry_status(error_code: int) -> int:
    """The HTTP status Confluent answers an error code with (40403: 404, 50001: 500, a bare status: itself)."""
    return error_code // 100 if error_code >= 10000 else error_code


def _writes() -> list[RegistryLegalError]:
    out = []
    for route in _WRITES:
        out += [
            RegistryLegalError(
                route,
                50001,
                False,
                "the leader's write to the _schemas topic failed (the Kafka store refused or lost the append)",
            ),
            RegistryLegalError(
                route,
                50002,
                route.startswith("POST"),
                "the leader appended to _schemas but did not read its write back within kafkastore.timeout.ms"
                if route.startswith("POST")
                else "the write to _schemas timed out (kafkastore.timeout.ms)",
            ),
            RegistryLegalError(
                route,
                50003,
                False,
                "the follower that took the write could not forward it to "
                "the leader (a leader election in progress, the leader unreachable)",
            ),
            RegistryLegalError(
                route,
                503,
                False,
                "the load balancer in front of the registry had no healthy instance for a moment (a rolling restart)",
            ),
        ]
    return out


REGISTRY_ERRORS: tuple[RegistryLegalError, ...] = (
    *_writes(),
    *(RegistryLegalError(route, 40401, False, _LAGGING) for route in _SUBJECT_READS),
    RegistryLegalError("POST /subjects/{subject}", 40403, False, _LAGGING),
    *(
        RegistryLegalError(
            route,
            503,
            False,
            "the load balancer in front of the registry had no healthy instance for a moment (a rolling restart)",
        )
        for route in (*_SUBJECT_READS, *_ID_READS)
    ),
    *(
        RegistryLegalError(
            route,
            50001,
            False,
            "the instance answering is still reading _schemas at start-up (its Kafka store is not initialized yet)",
        )
        for route in (*_SUBJECT_READS, *_ID_READS)
    ),
)


def legal_registry_errors(route: str) -> list[RegistryLegalError]:
    """The errors chaos may answer a registry request of `route` ("METHOD TEMPLATE") with."""
    return [e for e in REGISTRY_ERRORS if e.route == route]


def registry_point(route: str) -> str:
    """The request point's name of a registry route, as a schedule step's `api`."""
    return f"registry {route}"


def route_of_point(api: str) -> str | None:
    return api[len("registry ") :] if api.startswith("registry ") else None


def unknown_id_legal(route: str) -> bool:
    return route in _ID_READS[:2]


@dataclass(frozen=True)
class RegistryAction:
    """What the registry's HTTP side does with one request: wait `latency_ms`, then answer `status` with Confluent's
    `error_code` (0: no error), before applying it or (`after`) once applied."""

    latency_ms: int = 0
    status: int = 0
    error_code: int = 0
    message: str = ""
    after: bool = False
