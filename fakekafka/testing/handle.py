"""What every cluster handle offers a test, whether fakekafka runs in process or the cluster is remote:
waiting for a condition and assertions that explain themselves when they fail."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any, TypeVar

from fakekafka.testing.views import ConsumerGroupView, StreamsGroupView
from fakekafka.wire.records import Record

__all__ = ["ClusterHandle"]

T = TypeVar("T")


def _attr(rec: Any, name: str) -> int:
    value = getattr(rec, name)
    return int(value() if callable(value) else value)  # confluent-kafka's Message has methods


class ClusterHandle:
    bootstrap_servers: str

    def records(self, topic: str, partition: int | None = None, *, control: bool = False) -> list[Record]:
        raise NotImplementedError

    def committed(self, group_id: str) -> dict[tuple[str, int], int]:
        raise NotImplementedError

    def consumer_group(self, group_id: str) -> ConsumerGroupView | None:
        """A KIP-848 consumer group (group.protocol=consumer): epochs, members, current and target assignments."""
        raise NotImplementedError

    def streams_group(self, group_id: str) -> StreamsGroupView | None:
        """A KIP-1071 streams group (group.protocol=streams): epochs, topology, members with their tasks."""
        raise NotImplementedError

    def describe(self, last_requests: int = 20) -> str:
        raise NotImplementedError

    def client_metrics(self, client_id: str | None = None) -> list[Any]:
        """The metrics clients pushed (KIP-714 client telemetry), decoded, one `TelemetryPush` per push, oldest
        first; on an in-process fakekafka with client telemetry on (the marker's `client_telemetry=True`)."""
        raise RuntimeError("the metrics clients push are kept by an in-process fakekafka's telemetry receiver; a "
                           "remote cluster's receiver (a metrics reporter of its own) cannot be read from here")

    def topics(self) -> list[str]:
        raise NotImplementedError

    def end_offsets(self, topic: str) -> dict[int, int]:
        raise NotImplementedError

    def wait_for_topic(self, topic: str, partitions: int | None = None, timeout: float = 10.0) -> None:
        """Returns once `topic` exists, with `partitions` partitions if given, each served by its leader.
        fakekafka creates topics and partitions at once; Kafka answers CreateTopics and CreatePartitions
        when its controller has the change, a moment before the brokers serve it, so a test that creates a
        topic through a client and then uses it through another API (DescribeConfigs, the handle) waits here."""
        def ready() -> bool:
            return topic in self.topics() and (partitions is None or len(self.end_offsets(topic)) == partitions)
        self.wait_until(ready, timeout, message=f"topic {topic!r}"
                        + ("" if partitions is None else f" with {partitions} partitions"))

    def wait_for_topic_at_group_coordinator(self, group_id: str, topic: str, timeout: float = 10.0) -> None:
        """Returns once `group_id`'s coordinator gives a KIP-848 member `topic`'s partitions: at once where the
        coordinator is fakekafka's own model, which sees a topic when it is made; on Kafka (RemoteCluster) the
        group coordinator learns of it a moment after the brokers' metadata, and a member joining in between is
        given nothing for now."""
        self.wait_for_topic(topic, timeout=timeout)

    def wait_until(self, predicate: Callable[[], T], timeout: float = 10.0, interval: float = 0.01,
                   message: str = "") -> T:
        """Polls `predicate` (in the caller's thread) until it returns something truthy, and returns it.
        After `timeout` seconds raises AssertionError with `message` and the cluster's state."""
        deadline = time.monotonic() + timeout
        while True:
            value = predicate()
            if value:
                return value
            if time.monotonic() >= deadline:
                raise AssertionError(f"{message or 'condition'} not met within {timeout}s\n{self.describe()}")
            time.sleep(interval)

    def assert_committed(self, group_id: str, expected: dict[tuple[str, int], int]) -> None:
        """The group's committed offsets for the given (topic, partition)s are exactly `expected`."""
        committed = self.committed(group_id)
        actual = {tp: committed.get(tp) for tp in expected}
        if actual != expected:
            wrong = {tp: (actual[tp], want) for tp, want in expected.items() if actual[tp] != want}
            raise AssertionError(f"group {group_id!r} committed offsets differ, (topic, partition): (committed, "
                                 f"expected): {wrong}\nall committed: {committed}")

    def assert_consumed_exactly_once(self, topic: str, consumed: list[Any]) -> None:
        """`consumed` (client records with partition and offset, or (partition, offset) pairs) holds every
        record stored in `topic` exactly once: nothing lost, nothing twice, nothing unknown."""
        seen: dict[tuple[int, int], int] = {}
        for rec in consumed:
            key = (_attr(rec, "partition"), _attr(rec, "offset")) if hasattr(rec, "offset") else (rec[0], rec[1])
            seen[key] = seen.get(key, 0) + 1
        stored = {(r.partition, r.offset) for r in self.records(topic)}
        missing = sorted(stored - set(seen))
        twice = sorted(k for k, n in seen.items() if n > 1)
        unknown = sorted(set(seen) - stored)
        if missing or twice or unknown:
            raise AssertionError(f"topic {topic!r} ({len(stored)} records stored): {len(missing)} not consumed "
                                 f"{missing[:10]}, {len(twice)} consumed more than once {twice[:10]}, "
                                 f"{len(unknown)} consumed but not stored {unknown[:10]} (partition, offset)")
