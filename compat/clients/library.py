"""The base of the in-process Python client adapters (kafka_python, aiokafka_client, confluent): members
poll on threads of the harness, and one that must be killable runs in an agent process (serve.py) with the
same library."""

from __future__ import annotations

from compat.clients.agent import AgentClient
from compat.clients.base import Client, Member, MemberOptions

__all__ = ["LibraryClient"]


class LibraryClient(Client):
    """A Python client library driven in the harness process: its members poll on threads here, and one
    that must be killable runs in an agent subprocess with the same library."""

    def member(self, group: str, topic: str, *, assign: list[int] | None = None, offset_reset: str = "earliest",
               own_process: bool = False, instance_id: str | None = None,
               session_timeout_ms: int | None = None, group_protocol: str = "classic") -> Member:
        self.refuse_group_protocol(group_protocol)
        if own_process:
            return AgentClient.python(self.name, self.bootstrap, self.timing).member(
                group, topic, assign=assign, offset_reset=offset_reset, own=True, instance_id=instance_id,
                session_timeout_ms=session_timeout_ms, group_protocol=group_protocol)
        return self._member(group, topic, assign, offset_reset,
                            MemberOptions(instance_id, session_timeout_ms or self.timing.session_timeout_ms,
                                          group_protocol))

    def _member(self, group: str, topic: str, assign: list[int] | None, offset_reset: str,
                options: MemberOptions) -> Member:
        raise NotImplementedError
