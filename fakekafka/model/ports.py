"""What the model needs from outside it and from its own whole, declared here so the arrows run one way.

`ClusterStorage` is what a data dir does for the cluster (fakekafka/storage/datadir.py's DataDir implements it; the
cluster's owner hands one to `ClusterState.storage`); the model never imports storage. `CoordinatorCluster` is what
the coordinators' internal-topic logs (offsets_topic, transaction_log, share_state) use of the cluster they write
to; ClusterState is one, and those modules need not import it back.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from fakekafka.model.clock import Clock
    from fakekafka.model.config import BrokerConfig
    from fakekafka.model.consumer_group import ConsumerGroupCoordinator
    from fakekafka.model.group import GroupCoordinator
    from fakekafka.model.metadata import Broker, Partition, Topic
    from fakekafka.model.producers import ProducerIds
    from fakekafka.model.share import ShareCoordinator
    from fakekafka.model.share_dlq import ShareDeadLetters
    from fakekafka.model.transactions import TransactionCoordinator

__all__ = ["ClusterStorage", "CoordinatorCluster"]


class ClusterStorage(Protocol):
    """Files that keep the cluster across a restart. Each replica log writes its own batches through the
    `store` it was given at `attach`; the cluster says when replicas come, go and move, and when its metadata
    changed. A failed write raises model.log.StorageError."""

    def attach(self, partition: Partition) -> None:
        """Gives each replica log of the partition that has none its files."""

    def detach(self, partition: Partition, node_id: int) -> None:
        """A replica left the partition: its files go."""

    def move(self, partition: Partition, node_id: int) -> None:
        """A replica moved to another log dir of its broker (its `log_dir` says which)."""

    def drop_topic(self, topic: Topic) -> None:
        """A deleted topic's files go."""

    def save(self, *, force: bool = False, topics: Iterable[str] | None = None) -> bool:
        """The metadata written if it changed (or `force`); whether it wrote. `topics`: only those topics can
        have changed (made, deleted, given partitions), so the write costs what they changed; the model says so
        once per such change, which is one of its metadata changes."""

    def tick(self) -> None:
        """Called from the cluster's tick: periodic writes."""

    def close(self) -> None:
        """A clean stop: everything written and flushed, the files let go."""


class CoordinatorCluster(Protocol):
    """The cluster as the coordinators' internal-topic logs see it."""

    @property
    def clock(self) -> Clock: ...
    @property
    def config(self) -> BrokerConfig: ...
    @property
    def topics(self) -> dict[str, Topic]: ...
    @property
    def topics_by_id(self) -> dict[uuid.UUID, Topic]: ...
    @property
    def producer_ids(self) -> ProducerIds: ...
    @property
    def groups(self) -> GroupCoordinator: ...
    @property
    def consumer_groups(self) -> ConsumerGroupCoordinator: ...
    @property
    def shares(self) -> ShareCoordinator: ...
    @property
    def share_dead_letters(self) -> ShareDeadLetters: ...
    @property
    def transactions(self) -> TransactionCoordinator: ...

    def partition(self, topic: str, index: int) -> Partition | None: ...
    def append_internal(self, partition: Partition, batch: bytes, now: int) -> None: ...
    def delete_records(self, partition: Partition, offset: int) -> int: ...
    def event(self, kind: str, **details: object) -> None: ...
    def coordinator_for(self, group_id: str) -> Broker | None: ...
    def offsets_partition_for(self, group_id: str) -> int: ...
    def transaction_coordinator_for(self, transactional_id: str) -> Broker | None: ...
    def transaction_partition_for(self, transactional_id: str) -> int: ...
    def share_state_topic(self) -> Topic: ...
