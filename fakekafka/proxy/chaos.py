"""Chaos on the proxy in front of a real cluster: the same seeded draw, schedules and invariants as on the fake
cluster (fakekafka/chaos), with the fault kinds a proxy can produce: errors per API answered without forwarding
or after forwarding (the upstream applied the request), latency, connections dropped before or after
forwarding, and throttled fetches (answered empty with throttle_time_ms, the client's connection muted). A proxy
kills no broker and moves no leader: a profile's kill and leader-move rates draw nothing here.

The invariants read the upstream's logs over the wire (`UpstreamLogs`: Metadata, ListOffsets, Fetch) once the
application is done; the read_committed check finds the aborted transactions from the ABORT markers in them.
"""

from __future__ import annotations

import time
from typing import Any

from fakekafka.chaos import Chaos, ChaosSource, Ledger, Schedule, Violation, chaos_of, check_invariants
from fakekafka.chaos.timeline import Timeline
from fakekafka.model.errors import ApiError
from fakekafka.net.wire_client import Brokers
from fakekafka.proxy.server import ProxyServer
from fakekafka.wire import ApiKey, ErrorCode

__all__ = ["ProxyChaos", "UpstreamLogs"]

_TOPIC_RESOURCE = 2


class UpstreamLogs(Brokers):
    """A cluster's partition logs read over the wire, for the invariants (`fakekafka.chaos.Logs`)."""

    def __init__(self, bootstrap_servers: str, timeout: float = 15.0) -> None:
        super().__init__(bootstrap_servers, "fakekafka-chaos", timeout)
        self._unclean: dict[str, bool] = {}

    def partitions(self) -> list[tuple[str, int]]:
        return sorted((t.name, p.partition_index) for t in self._metadata(None).topics
                      if not t.is_internal and not t.name.startswith("__") for p in t.partitions)

    def batches(self, topic: str, partition: int) -> list[bytes]:
        return Brokers.batches(self, topic, partition)

    def bounds(self, topic: str, partition: int) -> tuple[int, int] | None:
        try:
            return self._list_offset(topic, partition, -2), self._list_offset(topic, partition, -1)
        except ApiError as e:
            if e.code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION:
                return None
            raise

    def unclean_allowed(self, topic: str) -> bool:
        if topic not in self._unclean:
            r = self._any().request(ApiKey.DESCRIBE_CONFIGS, None, {"resources": [
                {"resource_type": _TOPIC_RESOURCE, "resource_name": topic,
                 "configuration_keys": ["unclean.leader.election.enable"]}],
                "include_synonyms": False, "include_documentation": False})
            configs = r.results[0].configs or []
            self._unclean[topic] = any(c.value == "true" for c in configs)
        return self._unclean[topic]


class ProxyChaos:
    """One proxy's chaos: the source drawing (or replaying) faults on the requests crossing it, the ledger of
    the upstream's answers, the invariants over the upstream's logs."""

    def __init__(self, server: ProxyServer, chaos: Chaos) -> None:
        self.chaos = chaos
        self.server = server
        self.source = ChaosSource(None, chaos, now_ms=lambda: int(time.time() * 1000))
        self.ledger = Ledger(topic_name=server.topic_names.get)
        self.timeline = Timeline(self.source.applied)
        server.hooks.sources.append(self.source)
        server.hooks.observers.append(self.ledger)
        server.hooks.observers.append(self.timeline)

    def applied(self) -> Schedule:
        """A copy of the schedule applied so far (call on the proxy's loop)."""
        return self.source.applied.subset(self.source.applied.steps)

    def timeline_svg(self, title: str = "chaos run") -> str:
        """The run so far as an SVG picture: requests, faults, group generations (call on the proxy's loop)."""
        return self.timeline.svg(title)

    def violations(self, bootstrap_servers: str) -> list[Violation]:
        """The invariants checked on the upstream's logs, read through `bootstrap_servers` (blocking: call off
        the proxy's loop, with a snapshot of the ledger)."""
        logs = UpstreamLogs(bootstrap_servers)
        try:
            return check_invariants(logs, self.ledger, tuple(self.chaos.invariants),  # type: ignore[arg-type]
                                    self.chaos.skip)  # type: ignore[arg-type]
        finally:
            logs.close()


def attach_proxy_chaos(server: ProxyServer, given: Any) -> ProxyChaos | None:
    chaos = chaos_of(given)
    return None if chaos is None else ProxyChaos(server, chaos)
