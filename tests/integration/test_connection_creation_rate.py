"""connection_creation_rate (ip entities) enforced as Kafka's ConnectionQuotas enforce it: a connection over its
address's rate is not read (its requests get no answer) and is closed once its throttle time is over. The cluster's
clock is frozen, so every connection counts at the same instant: with quota.window.num=2 (a span of at least one
second) and a rate of 2, the third connection is throttled, for (3 - 2) / 2 of a second. Fakekafka only: Kafka's
rate follows its own clock, and its quota.window.num is not for a test to set on a shared broker."""

from __future__ import annotations

import time

import fakekafka
from fakekafka.wire import ApiKey, ErrorCode
from tests.rawclient import RawClient, alter_client_quota

VERSIONS = {"client_software_name": "t", "client_software_version": "1"}


def _versions(bootstrap: str) -> tuple[str, float]:
    """What a new connection's ApiVersions gets: "answered", or "closed" (and after how long)."""
    started = time.monotonic()
    with RawClient(bootstrap, timeout=30) as raw:
        try:
            raw.request(ApiKey.API_VERSIONS, 3, VERSIONS)
            return "answered", time.monotonic() - started
        except ConnectionError:
            return "closed", time.monotonic() - started


def test_a_connection_over_the_rate_is_left_unread_then_closed() -> None:
    with (
        fakekafka.Cluster(clock="frozen", config={"quota.window.num": "2"}) as c,
        RawClient(c.bootstrap_servers) as raw,
    ):
        r = alter_client_quota(raw, "ip", "127.0.0.1", "connection_creation_rate", 2.0)
        assert r.entries[0].error_code == ErrorCode.NONE
        first, second, third = (_versions(c.bootstrap_servers) for _ in range(3))
        assert (first[0], second[0], third[0]) == ("answered", "answered", "closed")
        assert third[1] >= 0.4  # held unread for its throttle time (500 ms) before the close
        # a connection made before is not affected
        assert raw.request(ApiKey.API_VERSIONS, 3, VERSIONS).error_code == ErrorCode.NONE
