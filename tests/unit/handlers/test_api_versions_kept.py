"""ApiVersions' kept `api_keys` array (handlers/api_versions.py): an answer built from them is byte for byte the
answer built afresh (what the handler builds while a hook observes the cluster: dicts), for every version, for the
older releases `--kafka-version` stands in for, and with client telemetry switched on, which lists two more APIs."""

from __future__ import annotations

import pytest
from construct import Container

from fakekafka.handlers import RequestContext, dispatch
from fakekafka.handlers.connection import ConnectionState
from fakekafka.model.clock import ManualClock
from fakekafka.model.cluster import ClusterState
from fakekafka.model.config import BrokerConfig
from fakekafka.model.metadata import Broker
from fakekafka.wire import ApiKey
from fakekafka.wire.primitives import Encoded
from fakekafka.wire.protocol import Request, decode_response, encode_response_chunks, request_struct


def _state(**kw: object) -> ClusterState:
    return ClusterState(BrokerConfig(**kw), ManualClock(1_000), [Broker(1, "127.0.0.1", 9001)])


def _answer(c: ClusterState, version: int, *, fresh: bool = False) -> tuple[bytes, object]:
    struct = request_struct(ApiKey.API_VERSIONS, version)
    body = {"client_software_name": "t", "client_software_version": "1"} if version >= 3 else {}
    request = Request(ApiKey.API_VERSIONS, version, 7, "client", Container(), struct.parse(struct.build(body)))
    observer = lambda *_: None  # noqa: E731
    if fresh:
        c.hooks.observers.append(observer)
    try:
        result = dispatch(RequestContext(c, c.brokers[1], request, connection=ConnectionState()))
    finally:
        if fresh:
            c.hooks.observers.remove(observer)
    return b"".join(bytes(x) for x in encode_response_chunks(ApiKey.API_VERSIONS, version, 7, result)), result


@pytest.mark.parametrize(
    "setting", [{}, {"kafka_version": "3.9"}, {"kafka_version": "2.8"}, {"client_telemetry": True}]
)
def test_kept_entries_are_the_fresh_answer_byte_for_byte(setting: dict[str, object]) -> None:
    c = _state(**setting)
    for version in range(6 if not setting.get("kafka_version") else 4):
        kept, result = _answer(c, version)
        fresh, fresh_result = _answer(c, version, fresh=True)
        assert kept == fresh, f"v{version}"
        assert isinstance(result["api_keys"], Encoded)  # type: ignore[index]
        assert all(isinstance(k, dict) for k in fresh_result["api_keys"])  # type: ignore[index]


def test_switching_client_telemetry_on_lists_its_apis_at_once() -> None:
    c = _state()
    listed = {k.api_key for k in decode_response(ApiKey.API_VERSIONS, 3, _answer(c, 3)[0][4:])[1].api_keys}
    assert ApiKey.PUSH_TELEMETRY not in listed
    c.config.client_telemetry = True
    listed = {k.api_key for k in decode_response(ApiKey.API_VERSIONS, 3, _answer(c, 3)[0][4:])[1].api_keys}
    assert ApiKey.PUSH_TELEMETRY in listed and ApiKey.GET_TELEMETRY_SUBSCRIPTIONS in listed
