"""The generated ApiKey enum: Kafka's names for every API the wire layer declares."""

from __future__ import annotations

import re

from fakekafka.handlers import advertised_versions, handler_for
from fakekafka.wire import ApiKey
from fakekafka.wire.messages import API_MODULES


def test_every_api_has_kafkas_name() -> None:
    """ApiKeys.java spells an API as its message name in upper snake case (JoinGroup: JOIN_GROUP = 11)."""
    assert {int(k) for k in ApiKey} == set(API_MODULES)
    for key, (name, *_rest) in API_MODULES.items():
        assert ApiKey(key).name == re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", name).upper()
    assert (ApiKey.PRODUCE, ApiKey.JOIN_GROUP, ApiKey.WRITE_TXN_MARKERS) == (0, 11, 27)


def test_handlers_register_by_name() -> None:
    """Every handler is registered with an ApiKey (handles() refuses a bare number)."""
    assert all(isinstance(handler_for(key).api_key, ApiKey) for key in advertised_versions())
