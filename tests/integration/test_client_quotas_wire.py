"""AlterClientQuotas and DescribeClientQuotas over raw requests, with the same assertions on fakekafka and
(`pytest --kafka-real`) on Apache Kafka 4.4.0: entities of each type and defaults set, changed, removed and
described through each kind of filter; every refusal with Kafka's error code and words.

The kafka-real cluster is shared by the tests: each test names its own users and client ids, and the defaults
it sets are large enough to throttle nobody and removed at its end. Describing waits for the broker to see a
change (Kafka's broker learns it from the controller's metadata log a moment after the answer)."""

from __future__ import annotations

import uuid
from typing import Any

import pytest

from fakekafka.wire import ApiKey, ErrorCode
from tests.rawclient import RawClient, eventually

pytestmark = pytest.mark.kafka_real  # must pass on Apache Kafka too (`pytest --kafka-real -m kafka_real`)

EXACT, DEFAULT, SPECIFIED = 0, 1, 2
INVALID = ErrorCode.INVALID_REQUEST


def _entity(*pairs: tuple[str, str | None]) -> list[dict[str, Any]]:
    return [{"entity_type": t, "entity_name": n} for t, n in pairs]


def _op(key: str, value: float = 0.0, *, remove: bool = False) -> dict[str, Any]:
    return {"key": key, "value": value, "remove": remove}


def _alter(raw: RawClient, *entries: tuple[list[dict[str, Any]], list[dict[str, Any]]], validate_only: bool = False,
           version: int = 1) -> list[tuple[int, str | None, list[tuple[str, str | None]]]]:
    r = raw.request(ApiKey.ALTER_CLIENT_QUOTAS, version, {
        "entries": [{"entity": e, "ops": ops} for e, ops in entries], "validate_only": validate_only})
    return sorted(((e.error_code, e.error_message, [(x.entity_type, x.entity_name) for x in e.entity])
                   for e in r.entries), key=lambda e: repr(e[2]))


def _describe(raw: RawClient, *components: tuple[str, int, str | None], strict: bool = False,
              version: int = 1) -> tuple[int, str | None, list[Any] | None]:
    r = raw.request(ApiKey.DESCRIBE_CLIENT_QUOTAS, version, {
        "components": [{"entity_type": t, "match_type": m, "match": x} for t, m, x in components], "strict": strict})
    entries = None if r.entries is None else sorted(
        ([(e.entity_type, e.entity_name) for e in entry.entity], sorted((v.key, v.value) for v in entry["values"]))
        for entry in r.entries)
    return r.error_code, r.error_message, entries


def _described(raw: RawClient, expected: Any, *components: tuple[str, int, str | None], strict: bool = False) -> None:
    """Describes until the answer is `expected` (Kafka's broker sees a change a moment after it is made)."""
    last: list[Any] = []

    def attempt() -> bool | None:
        last[:] = [_describe(raw, *components, strict=strict)]
        return True if last[0] == expected else None
    try:
        eventually(f"{components} described as {expected}", attempt, timeout=15)
    except AssertionError:
        assert last[0] == expected


@pytest.fixture
def raw(kafka: Any) -> Any:
    client = RawClient(kafka.bootstrap_servers)
    yield client
    client.close()


def test_quotas_set_changed_removed_and_described(raw: RawClient) -> None:
    alice, bob, c1 = (f"{n}-{uuid.uuid4().hex[:6]}" for n in ("alice", "bob", "c1"))
    ok = ErrorCode.NONE
    assert _alter(raw, (_entity(("user", alice)), [_op("producer_byte_rate", 1024)])) == \
        [(ok, None, [("user", alice)])]
    # user and client-id together: Kafka lists client-id first (its hash map's order)
    assert _alter(raw, (_entity(("user", alice), ("client-id", c1)),
                        [_op("consumer_byte_rate", 2048), _op("request_percentage", 12.5)])) == \
        [(ok, None, [("client-id", c1), ("user", alice)])]
    assert _alter(raw, (_entity(("user", bob)), [_op("request_percentage", 5)]), version=0) == \
        [(ok, None, [("user", bob)])]
    # validate_only decides without applying
    assert _alter(raw, (_entity(("user", bob)), [_op("producer_byte_rate", 77)]), validate_only=True) == \
        [(ok, None, [("user", bob)])]
    both = [([("client-id", c1), ("user", alice)], [("consumer_byte_rate", 2048.0), ("request_percentage", 12.5)]),
            ([("user", alice)], [("producer_byte_rate", 1024.0)])]
    _described(raw, (ok, "", both), ("user", EXACT, alice))
    _described(raw, (ok, "", both[1:]), ("user", EXACT, alice), strict=True)
    _described(raw, (ok, "", both[:1]), ("user", EXACT, alice), ("client-id", SPECIFIED, None), strict=True)
    _described(raw, (ok, "", [([("user", bob)], [("request_percentage", 5.0)])]), ("user", EXACT, bob))
    # a change, and removals (of a key set and of one never set: both fine)
    assert _alter(raw, (_entity(("user", bob)), [_op("request_percentage", remove=True),
                                                 _op("producer_byte_rate", remove=True)]),
                  (_entity(("user", alice)), [_op("producer_byte_rate", 4096)])) == \
        [(ok, None, [("user", alice)]), (ok, None, [("user", bob)])]
    _described(raw, (ok, "", []), ("user", EXACT, bob))
    _described(raw, (ok, "", [([("user", alice)], [("producer_byte_rate", 4096.0)])]), ("user", EXACT, alice),
               strict=True)
    assert _alter(raw, (_entity(("user", alice)), [_op("producer_byte_rate", remove=True)]),
                  (_entity(("user", alice), ("client-id", c1)), [_op("consumer_byte_rate", remove=True),
                                                                  _op("request_percentage", remove=True)])) == \
        [(ok, None, [("client-id", c1), ("user", alice)]), (ok, None, [("user", alice)])]
    _described(raw, (ok, "", []), ("user", EXACT, alice))


def test_defaults_and_ip_entities(raw: RawClient) -> None:
    ok, huge = ErrorCode.NONE, 1e12  # defaults that throttle nobody (the kafka-real cluster is shared)
    ip = f"10.{uuid.uuid4().int % 250}.{uuid.uuid4().int % 250}.7"
    try:
        assert _alter(raw, (_entity(("user", None)), [_op("producer_byte_rate", huge)]),
                      (_entity(("ip", ip)), [_op("connection_creation_rate", 10)])) == \
            [(ok, None, [("ip", ip)]), (ok, None, [("user", None)])]
        _described(raw, (ok, "", [([("user", None)], [("producer_byte_rate", huge)])]), ("user", DEFAULT, None),
                   strict=True)
        _described(raw, (ok, "", [([("ip", ip)], [("connection_creation_rate", 10.0)])]), ("ip", EXACT, ip))
    finally:
        _alter(raw, (_entity(("user", None)), [_op("producer_byte_rate", remove=True)]),
               (_entity(("ip", ip)), [_op("connection_creation_rate", remove=True)]))
    _described(raw, (ok, "", []), ("ip", EXACT, ip))


@pytest.mark.parametrize(("entity", "ops", "message"), [
    ([("user", "u")], [_op("nope", 1)], "Invalid configuration key nope"),
    ([("user", "u")], [_op("producer_byte_rate", 0)], "Quota producer_byte_rate must be greater than 0"),
    ([("user", "u")], [_op("producer_byte_rate", 1.5)], "producer_byte_rate cannot be a fractional value."),
    ([("user", "u")], [_op("producer_byte_rate", 1e19)],
     "Proposed value for producer_byte_rate is too large for a LONG."),
    ([("ip", "127.0.0.1")], [_op("connection_creation_rate", 3e9)],
     "Proposed value for connection_creation_rate is too large for an INT."),
    ([("ip", "127.0.0.1")], [_op("producer_byte_rate", 3)], "Invalid configuration key producer_byte_rate"),
    ([("user", "u")], [_op("connection_creation_rate", 3)], "Invalid configuration key connection_creation_rate"),
    ([("user", "u"), ("ip", "1.2.3.4")], [_op("producer_byte_rate", 3)],
     "Invalid quota entity combination, IP entity shouldnot be combined with User or ClientId"),
    ([("ip", "not-a-host.invalid")], [_op("connection_creation_rate", 3)],
     "not-a-host.invalid is not a valid IP or resolvable host."),
    ([("user", "")], [_op("producer_byte_rate", 3)], "Empty user not supported"),
    ([("group", "g")], [_op("producer_byte_rate", 3)], "Unhandled client quota entity type: group"),
    ([], [_op("producer_byte_rate", 3)], "Invalid empty client quota entity"),
    ([("user", "u")], [_op("producer_byte_rate", 3), _op("producer_byte_rate", 4)],
     "Ignoring duplicate entity ClientQuotaEntity(entries={user=u})"),
])
def test_alterations_refused_in_kafkas_words(raw: RawClient, entity: list[Any], ops: list[Any],
                                             message: str) -> None:
    assert _alter(raw, (_entity(*entity), ops)) == [(INVALID, message, entity)]


def test_an_entity_twice_and_one_refused_beside_one_taken(raw: RawClient) -> None:
    carol, dave, gina = (f"{n}-{uuid.uuid4().hex[:6]}" for n in ("carol", "dave", "gina"))
    assert _alter(raw, (_entity(("user", carol)), [_op("producer_byte_rate", 3)]),
                  (_entity(("user", carol)), [_op("consumer_byte_rate", 4)])) == \
        [(INVALID, f"Ignoring duplicate entity ClientQuotaEntity(entries={{user={carol}}})", [("user", carol)])]
    assert _alter(raw, (_entity(("user", dave)), [_op("producer_byte_rate", -1)]),
                  (_entity(("user", gina)), [_op("producer_byte_rate", 7)])) == \
        [(INVALID, "Quota producer_byte_rate must be greater than 0", [("user", dave)]),
         (ErrorCode.NONE, None, [("user", gina)])]
    # the first of the entity named twice was applied all the same, as by Kafka's controller
    _described(raw, (ErrorCode.NONE, "", [([("user", carol)], [("producer_byte_rate", 3.0)])]),
               ("user", EXACT, carol))
    _described(raw, (ErrorCode.NONE, "", [([("user", gina)], [("producer_byte_rate", 7.0)])]), ("user", EXACT, gina))
    _alter(raw, (_entity(("user", carol)), [_op("producer_byte_rate", remove=True)]),
           (_entity(("user", gina)), [_op("producer_byte_rate", remove=True)]))


@pytest.mark.parametrize(("components", "code", "message"), [
    ([("", SPECIFIED, None)], INVALID, "Invalid empty entity type."),
    ([("user", SPECIFIED, None), ("user", DEFAULT, None)], INVALID,
     "Entity type user cannot appear more than once in the filter."),
    ([("group", SPECIFIED, None)], ErrorCode.UNSUPPORTED_VERSION, "Unsupported entity type group"),
    ([("user", EXACT, None)], INVALID, "Request specified MATCH_TYPE_EXACT, but set match string to null."),
    ([("user", DEFAULT, "x")], INVALID, "Request specified MATCH_TYPE_DEFAULT, but also specified a match string."),
    ([("user", SPECIFIED, "x")], INVALID,
     "Request specified MATCH_TYPE_SPECIFIED, but also specified a match string."),
    ([("user", 7, None)], INVALID, "Unknown match type 7"),
    ([("ip", SPECIFIED, None), ("user", SPECIFIED, None)], INVALID,
     "Invalid entity filter component combination. IP filter component should not be used with user or clientId "
     "filter component."),
])
def test_filters_refused_in_kafkas_words(raw: RawClient, components: list[Any], code: int, message: str) -> None:
    assert _describe(raw, *components) == (code, message, None)
