"""The handle's checks of a test's arguments: a broker, topic, partition, group or transactional id that does not
exist is a `LookupError` saying which do, before anything changes (rather than a bare `KeyError` from inside the
model, raised again as "background task failed" by the loop it ran on). Run where the model runs (`Cluster.call`)
or before a coroutine is handed to the loop."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from fakekafka.model.errors import ApiError
from fakekafka.wire import ErrorCode

if TYPE_CHECKING:
    from fakekafka.model.cluster import ClusterState

__all__ = ["UnknownTopicOrPartition", "check_broker", "check_group", "check_partition", "check_topic",
           "check_transactional_id", "listing"]

_SHOWN = 20


class UnknownTopicOrPartition(ApiError, LookupError):
    """Kafka's UNKNOWN_TOPIC_OR_PARTITION for a handle call, and a LookupError: `except ApiError` and
    `except LookupError` both catch it."""

    def __init__(self, message: str) -> None:
        super().__init__(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, message)


def listing(names: Iterable[Any], none: str = "none") -> str:
    """Names for a message: sorted, comma-separated, the first 20 and how many more."""
    shown = sorted(names, key=lambda n: (str(type(n)), n))
    if not shown:
        return none
    more = f" and {len(shown) - _SHOWN} more" if len(shown) > _SHOWN else ""
    return ", ".join(map(str, shown[:_SHOWN])) + more


def check_broker(state: ClusterState, node_id: int) -> int:
    if node_id not in state.brokers:
        raise LookupError(f"there is no broker {node_id}; the brokers are {listing(state.brokers)}")
    return node_id


def check_topic(state: ClusterState, topic: str) -> Any:
    t = state.topics.get(topic)
    if t is None:
        raise UnknownTopicOrPartition(f"there is no topic {topic!r}; the topics are "
                                      f"{listing((n for n in state.topics if not n.startswith('__')), 'none')}")
    return t


def check_partition(state: ClusterState, topic: str, partition: int) -> Any:
    t = check_topic(state, topic)
    if not isinstance(partition, int) or not 0 <= partition < len(t.partitions):
        raise UnknownTopicOrPartition(f"there is no partition {partition} of {topic!r}; its partitions are "
                                      f"0-{len(t.partitions) - 1}" if len(t.partitions) > 1 else
                                      f"there is no partition {partition} of {topic!r}; its partition is 0")
    return t.partitions[partition]


def check_group(state: ClusterState, group_id: str, *, classic_only: bool = False) -> None:
    known = set(state.groups.groups) | (set() if classic_only else set(state.consumer_groups.groups))
    if group_id not in known:
        kind = "classic group" if classic_only else "group"
        raise LookupError(f"there is no {kind} {group_id!r}; the {kind}s are {listing(known)}")


def check_transactional_id(state: ClusterState, transactional_id: str) -> None:
    known = state.transactions.transactions
    if transactional_id not in known:
        raise LookupError(f"there is no transactional id {transactional_id!r}; the transactional ids are "
                          f"{listing(known)}")
