"""aiokafka's compat adapter: a position not known yet is None (the scenario asks again), not an error."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

pytest.importorskip("aiokafka")  # not installed beside the other Pythons' unit tiers

from compat.clients.aiokafka_client import AiokafkaClient, _Member  # noqa: E402
from compat.clients.base import Timing  # noqa: E402


class _SlowConsumer:
    """A consumer still resetting its position (a ListOffsets not answered yet)."""

    async def position(self, tp: Any) -> int:
        await asyncio.sleep(60)
        return 0


def test_a_position_not_known_within_its_wait_is_none() -> None:
    client = AiokafkaClient("127.0.0.1:9", Timing())
    try:
        member = _Member.__new__(_Member)
        member.client, member.consumer = client, _SlowConsumer()
        assert member._position(("t", 0)) is None
    finally:
        client.close()
