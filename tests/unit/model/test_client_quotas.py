"""Client quotas (fakekafka/model/client_quotas.py) on the fake clock: Kafka's windowed rate and throttle time, the
most specific user/client-id quota winning, sensors shared as Kafka shares them. (What is stored and refused is
checked on the wire against Kafka: tests/integration/test_client_quotas_wire.py.)"""

from __future__ import annotations

import pytest

from fakekafka.model.client_quotas import ClientQuotas, QuotaType, WindowedRate

PRODUCE = QuotaType.PRODUCE


def _quotas(samples: int = 11, seconds: int = 1) -> ClientQuotas:
    return ClientQuotas(lambda: (samples, seconds))


def _set(q: ClientQuotas, value: float, *pairs: tuple[str, str | None], key: str = PRODUCE) -> None:
    assert q.alter([(list(pairs), [(key, value, False)])]) == [(list(pairs), None)]


def test_the_rate_spans_at_least_the_windows_kafka_keeps_but_one() -> None:
    rate = WindowedRate(11, 1000)
    rate.record(10_000, 0)
    # one sample, at its start: the window is taken as 10 whole windows (samples - 1)
    assert rate.window_size_ms(0) == 10_000 and rate.measure(0) == 1000.0
    rate = WindowedRate(3, 1000)
    rate.record(10_000, 0)
    rate.record(10_000, 2_500)  # two whole windows since the oldest sample: the span is the time itself
    assert rate.window_size_ms(2_500) == 2_500 and rate.measure(2_500) == 8_000.0
    # at 3 s the first sample (samples x window old) is reset: only the second counts, over the minimum span
    assert rate.window_size_ms(3_000) == 2_500 and rate.measure(3_000) == 4_000.0
    rate2 = WindowedRate(2, 1000)
    rate2.record(100, 0)
    assert rate2.measure(2_500) == 0.0


def test_within_the_quota_no_throttle_and_over_it_kafkas_throttle_time() -> None:
    q = _quotas()
    now = 1_000_000
    assert q.record(PRODUCE, "ANONYMOUS", "app", 5_000, now) == 0  # no quota set: nothing recorded
    _set(q, 1000, ("client-id", "app"))
    assert q.record(PRODUCE, "ANONYMOUS", "app", 10_000, now) == 0  # 10,000 over 10 s: exactly the quota
    # 10,000 more: 2,000/s over 10 s; (rate - quota) / quota x window = 10 s
    assert q.record(PRODUCE, "ANONYMOUS", "app", 10_000, now) == 10_000
    # another client id is not counted in that sensor
    assert q.record(PRODUCE, "ANONYMOUS", "other", 10_000, now) == 0
    # time passes: the samples expire and the rate falls back
    assert q.record(PRODUCE, "ANONYMOUS", "app", 1_000, now + 11_000) == 0


def test_the_window_follows_quota_window_settings() -> None:
    q = _quotas(samples=3, seconds=2)
    _set(q, 100, ("user", "alice"))
    assert q.max_value_in_window(PRODUCE, "alice", "c") == 400  # quota x (samples - 1) x seconds
    assert q.record(PRODUCE, "alice", "c", 400, 0) == 0
    assert q.record(PRODUCE, "alice", "c", 400, 0) == 4_000
    # far over: bounded by the windows kept (3 x 2 s), as Kafka 4.4's
    assert q.record(PRODUCE, "alice", "c", 40_000, 0) == 6_000


def test_the_request_quota_throttles_for_at_most_one_window() -> None:
    q = _quotas()
    _set(q, 1.0, ("client-id", "c"), key=QuotaType.REQUEST)
    assert q.record(QuotaType.REQUEST, "u", "c", 500.0, 0) == 1_000


@pytest.mark.parametrize(("set_at", "tags"), [
    ([("user", "alice"), ("client-id", "app")], ("alice", "app")),
    ([("user", "alice"), ("client-id", None)], ("alice", "app")),
    ([("user", "alice")], ("alice", "")),
    ([("user", None), ("client-id", "app")], ("alice", "app")),
    ([("user", None), ("client-id", None)], ("alice", "app")),
    ([("user", None)], ("alice", "")),
    ([("client-id", "app")], ("", "app")),
    ([("client-id", None)], ("", "app")),
])
def test_each_of_kafkas_eight_levels_applies_alone(set_at: list, tags: tuple[str, str]) -> None:
    q = _quotas()
    _set(q, 123, *set_at)
    assert q.sensor_tags(PRODUCE, "alice", "app") == tags
    assert q.limit(PRODUCE, tags) == 123


def test_the_most_specific_quota_wins() -> None:
    q = _quotas()
    _set(q, 8, ("client-id", None))
    _set(q, 7, ("client-id", "app"))
    _set(q, 6, ("user", None))
    _set(q, 3, ("user", "alice"))
    _set(q, 1, ("user", "alice"), ("client-id", "app"))
    for user, client, expected in [("alice", "app", 1), ("alice", "other", 3), ("bob", "app", 6),
                                   ("bob", "other", 6)]:
        assert q.limit(PRODUCE, q.sensor_tags(PRODUCE, user, client)) == expected, (user, client)
    # a quota of another type does not count for this one
    _set(q, 50, ("user", "bob"), key=QuotaType.FETCH)
    assert q.limit(PRODUCE, q.sensor_tags(PRODUCE, "bob", "x")) == 6


def test_a_user_quota_is_shared_by_the_users_clients() -> None:
    q = _quotas()
    _set(q, 1000, ("user", "alice"))
    assert q.record(PRODUCE, "alice", "one", 10_000, 0) == 0
    assert q.record(PRODUCE, "alice", "two", 10_000, 0) > 0


def test_unrecording_gives_back_what_was_counted() -> None:
    q = _quotas()
    _set(q, 1000, ("client-id", "c"))
    assert q.record(QuotaType.PRODUCE, "u", "c", 10_000, 0) == 0
    q.unrecord(QuotaType.PRODUCE, "u", "c", 10_000, 0)
    assert q.record(QuotaType.PRODUCE, "u", "c", 10_000, 0) == 0


def test_validate_only_and_removal() -> None:
    q = _quotas()
    assert q.alter([([("user", "a")], [(PRODUCE, 5.0, False)])], validate_only=True) == [([("user", "a")], None)]
    assert q.entries == {}
    _set(q, 5, ("user", "a"))
    assert q.alter([([("user", "a")], [(PRODUCE, 0.0, True)])]) == [([("user", "a")], None)]
    assert q.entries == {} and not q.enabled(PRODUCE)


MUTATION = QuotaType.CONTROLLER_MUTATION


def test_the_strict_mutation_quota_admits_until_the_bucket_is_below_zero_then_refuses() -> None:
    q = _quotas()
    assert q.record_mutation("alice", "c", 100, 0, strict=True) == (True, 0)  # no quota: unlimited
    _set(q, 2.0, ("client-id", "c"), key=MUTATION)
    now = 1_000_000
    # a new bucket is full: 2 tokens a second x 11 windows of 1 s = 22
    assert q.record_mutation("alice", "c", 20, now, strict=True) == (True, 0)
    assert q.record_mutation("alice", "c", 6, now, strict=True) == (True, 0)  # 2 left: admitted, 4 below zero
    assert q.record_mutation("alice", "c", 1, now, strict=True) == (False, 2000)  # 4 tokens at 2/s
    assert q.record_mutation("alice", "c", 1, now + 1500, strict=True) == (False, 500)  # refused: not taken
    assert q.record_mutation("alice", "c", 1, now + 2000, strict=True) == (True, 0)
    assert q.record_mutation("bob", "d", 1000, now, strict=True) == (True, 0)  # another client: no quota


def test_the_permissive_mutation_quota_admits_and_throttles() -> None:
    q = _quotas()
    _set(q, 10.0, ("user", "alice"), key=MUTATION)
    now = 5_000_000
    assert q.record_mutation("alice", "x", 110, now, strict=False) == (True, 0)  # burst 110
    assert q.record_mutation("alice", "y", 25, now, strict=False) == (True, 2500)  # the user's bucket, shared
    assert q.record_mutation("alice", "x", 5, now + 1000, strict=False) == (True, 2000)


def test_the_mutation_bucket_follows_controller_quota_window_settings() -> None:
    q = ClientQuotas(lambda: (11, 1), lambda: (2, 3))
    _set(q, 1.0, ("client-id", None), key=MUTATION)
    assert q.record_mutation("u", "c", 6, 0, strict=True) == (True, 0)  # burst 2 x 3 s x 1/s = 6
    assert q.record_mutation("u", "c", 1, 0, strict=True) == (True, 0)
    assert q.record_mutation("u", "c", 1, 0, strict=True) == (False, 1000)


def test_connection_creation_rate_throttles_an_address_over_it() -> None:
    q = _quotas(samples=2, seconds=1)
    assert q.record_connection("10.0.0.1", 0) == 0  # no quota
    _set(q, 2.0, ("ip", "10.0.0.1"), key=QuotaType.CONNECTION_CREATION)
    _set(q, 100.0, ("ip", None), key=QuotaType.CONNECTION_CREATION)
    now = 1_000_000
    assert q.record_connection("10.0.0.1", now) == 0
    assert q.record_connection("10.0.0.1", now) == 0  # 2 in the (1 s minimum) span: at the rate
    assert q.record_connection("10.0.0.1", now) == 500  # 3/s: (3 - 2) / 2 of a second
    assert q.record_connection("10.0.0.1", now) == 1000  # bounded by one window
    assert all(q.record_connection("10.0.0.2", now) == 0 for _ in range(50))  # the default's 100/s
