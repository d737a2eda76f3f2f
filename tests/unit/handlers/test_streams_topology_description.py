"""StreamsGroupTopologyDescriptionUpdate as Kafka 4.4.0 answers it without a topology description plugin
(`group.streams.topology.description.plugin.class` unset): the group's READ first, then UNSUPPORTED_VERSION
with Kafka's words, whatever the group (the request is refused before the coordinator looks it up).
tests/conformance/test_api_sweep.py compares the answer with Kafka 4.4.0 field by field."""

from __future__ import annotations

from typing import Any

from construct import Container

from fakekafka.handlers import RequestContext, dispatch
from fakekafka.handlers.connection import ConnectionState
from fakekafka.handlers.streams_groups import NO_TOPOLOGY_DESCRIPTION_PLUGIN
from fakekafka.model.acl import AclBinding
from fakekafka.model.clock import ManualClock
from fakekafka.model.cluster import ClusterState
from fakekafka.model.config import BrokerConfig
from fakekafka.model.metadata import Broker
from fakekafka.wire import ApiKey, ErrorCode
from fakekafka.wire.protocol import Request, decode_response, encode_response_chunks, request_struct

KEY = ApiKey.STREAMS_GROUP_TOPOLOGY_DESCRIPTION_UPDATE
BODY = {
    "group_id": "app",
    "member_id": "m1",
    "topology_epoch": 0,
    "topology_description": {
        "subtopologies": [
            {
                "subtopology_id": "0",
                "nodes": [
                    {
                        "name": "KSTREAM-SOURCE-0000000000",
                        "node_type": 0,
                        "source_topics": ["in"],
                        "sink_topic": None,
                        "stores": [],
                        "successors": [],
                    }
                ],
            }
        ],
        "global_stores": [],
    },
}


def _answer(c: ClusterState, principal: str | None = None, body: dict[str, Any] = BODY) -> Any:
    struct = request_struct(KEY, 0)
    request = Request(KEY, 0, 7, "client", Container(), struct.parse(struct.build(body)))
    conn = ConnectionState()
    if principal is not None:
        conn.ssl_principal = principal
    answer = dispatch(RequestContext(c, c.brokers[1], request, connection=conn))
    frame = b"".join(bytes(chunk) for chunk in encode_response_chunks(KEY, 0, 7, answer))
    return decode_response(KEY, 0, frame[4:])[1]


def _state(**overrides: str) -> ClusterState:
    return ClusterState(
        BrokerConfig(overrides=dict(overrides)),
        ManualClock(1_000),
        [Broker(i, "127.0.0.1", 9000 + i) for i in (1, 2, 3)],
    )


def test_refused_as_a_broker_without_the_plugin() -> None:
    r = _answer(_state())
    assert (r.error_code, r.error_message) == (ErrorCode.UNSUPPORTED_VERSION, NO_TOPOLOGY_DESCRIPTION_PLUGIN)
    # an unknown or empty group is refused the same way: the plugin check comes before the group's
    r = _answer(_state(), body={**BODY, "group_id": "", "member_id": ""})
    assert r.error_code == ErrorCode.UNSUPPORTED_VERSION


def test_group_read_is_checked_first() -> None:
    c = _state(**{"authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer"})
    assert c.authorizer is not None
    c.authorizer.create([AclBinding.of("GROUP", "app", "User:alice", "READ")])
    r = _answer(c, "User:bob")
    assert (r.error_code, r.error_message) == (ErrorCode.GROUP_AUTHORIZATION_FAILED, "Group authorization failed.")
    assert _answer(c, "User:alice").error_code == ErrorCode.UNSUPPORTED_VERSION
