"""Which compat clients speak KIP-848's consumer group protocol, decided once for every client: the drivers
that can run the consumer_protocol_* cells, and the others refusing with the reason before any member starts."""

from __future__ import annotations

import pytest

from compat.clients.base import Client, Timing, Unsupported
from compat.clients.catalog import CLIENTS, CONSUMER_PROTOCOL_CLIENTS, CONSUMER_PROTOCOL_REFUSALS


def test_every_client_is_classified_once() -> None:
    assert set(CONSUMER_PROTOCOL_CLIENTS).isdisjoint(CONSUMER_PROTOCOL_REFUSALS)
    assert set(CONSUMER_PROTOCOL_CLIENTS) | set(CONSUMER_PROTOCOL_REFUSALS) == set(CLIENTS)


@pytest.mark.parametrize("name", sorted(CONSUMER_PROTOCOL_REFUSALS))
def test_a_client_without_kip848_refuses_with_its_reason(name: str) -> None:
    client = type("Named", (Client,), {"name": name})("127.0.0.1:9", Timing())
    with pytest.raises(Unsupported, match="group.protocol=consumer: ") as refused:
        client.refuse_group_protocol("consumer")
    assert CONSUMER_PROTOCOL_REFUSALS[name] in str(refused.value)
    client.refuse_group_protocol("classic")  # every client has the classic protocol


@pytest.mark.parametrize("name", CONSUMER_PROTOCOL_CLIENTS)
def test_a_kip848_client_is_let_through(name: str) -> None:
    client = type("Named", (Client,), {"name": name})("127.0.0.1:9", Timing())
    client.refuse_group_protocol("consumer")
    with pytest.raises(Unsupported):
        client.refuse_group_protocol("streams")  # KIP-1071's protocol: no compat member speaks it
