"""The cluster model: brokers, topics, partitions and their logs, the coordinators. Pure state.

No sockets, no files and no asyncio: the server feeds it requests through the handlers, tests drive it
directly, and every time it reads comes from the injected `Clock`. Change listeners let the server wake
long-polling fetches without the model knowing about the server. With a data dir (`storage`, a
`ports.ClusterStorage` the cluster's owner gives it), the logs hand every change to their files and the model
tells the data dir of partitions made, moved and dropped.

`ClusterState` composes the model's parts, each a module of its own, and offers their operations under one
name for handlers and tests:

- `topic_registry` (topics.py): creating and deleting topics and partitions;
- `replication` (replication.py): followers fetching, the ISR and the high watermark;
- `leadership` (leadership.py): elections, the controller, brokers dying and returning, reassignments;
- `log_directories` (log_dirs.py): which log dir each replica lives in;
- `log_manager` (log_manager.py): retention, compaction, DeleteRecords;
- `appender` (append.py): produce validation and the broker's own writes (coordinator records, markers);
- `coordinator_placement` (coordinators.py): which broker coordinates a group or transactional id;
- `topic_configs` (topic_configs.py), `observers` (events.py);
- the coordinators: `groups`, `consumer_groups`, `shares`, `transactions`, with their internal-topic logs
  `offsets_topic`, `share_state`, `transaction_log`.
"""

from __future__ import annotations

import uuid

from fakekafka.model.acl import Authorizer
from fakekafka.model.append import Appender
from fakekafka.model.client_quotas import ClientQuotas
from fakekafka.model.client_telemetry import ClientTelemetry
from fakekafka.model.clock import Clock, SystemClock
from fakekafka.model.config import BrokerConfig
from fakekafka.model.consumer_group import ConsumerGroupCoordinator, TopicInfo
from fakekafka.model.coordinators import (
    CoordinatorPlacement,
    consumer_group_config,
    share_config,
    streams_group_config,
)
from fakekafka.model.events import ClusterEvents, Event
from fakekafka.model.faults import Faults
from fakekafka.model.group import GroupConfig, GroupCoordinator
from fakekafka.model.hooks import Hooks
from fakekafka.model.internal_topics import INTERNAL_TOPICS, OFFSETS_TOPIC, SHARE_STATE_TOPIC, TRANSACTION_STATE_TOPIC
from fakekafka.model.leadership import Leadership
from fakekafka.model.log import StorageError
from fakekafka.model.log_dirs import LogDirs
from fakekafka.model.log_manager import LogManager
from fakekafka.model.loggers import BrokerLoggers
from fakekafka.model.metadata import Broker, Partition, Topic
from fakekafka.model.metadata_hash import topic_hash
from fakekafka.model.offsets_topic import OffsetsTopic
from fakekafka.model.ports import ClusterStorage
from fakekafka.model.producers import ProducerIds
from fakekafka.model.replication import Replication
from fakekafka.model.scram import ScramCredentials
from fakekafka.model.share import ShareCoordinator
from fakekafka.model.share_dlq import ShareDeadLetters
from fakekafka.model.share_state import ShareStateLog
from fakekafka.model.streams_group import StreamsGroupCoordinator
from fakekafka.model.topic_configs import TopicConfigs
from fakekafka.model.topics import TopicRegistry
from fakekafka.model.transaction_log import TransactionLog
from fakekafka.model.transactions import TransactionConfig, TransactionCoordinator

__all__ = ["ClusterState"]


class ClusterState:
    def __init__(self, config: BrokerConfig | None = None, clock: Clock | None = None,
                 brokers: list[Broker] | None = None, seed: int = 0) -> None:
        """`seed`: where the model's random choices (each segment's roll jitter, segment.jitter.ms) come from, so
        that the same seed and the same requests give the same cluster."""
        self.config = c = config or BrokerConfig()
        self.clock: Clock = clock or SystemClock()
        lifted, unlimited = "log.message.timestamp.after.max.ms", str(2**63 - 1)
        if not isinstance(self.clock, SystemClock) and lifted not in self.config.overrides \
                and c.catalog.broker_default(lifted) not in (None, unlimited):
            # Model time is not the producers' time (a frozen clock starts in 2023 and moves when the test says):
            # Kafka 4's one-hour limit on future timestamps would refuse every wall-clock record, so such a
            # cluster runs as if its operator had lifted the limit cluster-wide (a dynamic config in Kafka). An
            # older release has no limit by default (KIP-1030 made it an hour in 4.0), so it needs no lifting.
            self.config.dynamic_defaults.setdefault(lifted, unlimited)
        self.brokers: dict[int, Broker] = {b.node_id: b for b in (brokers or [Broker(1, "127.0.0.1", 9092)])}
        self.sasl_users: dict[str, str] = {}
        """SASL PLAIN and SCRAM users: name -> password (Cluster(users=...))."""
        self.scram = ScramCredentials()
        """SCRAM users' credentials (users given with a password get both mechanisms; AlterUserScramCredentials
        changes them)."""
        o = self.config.overrides
        self.authorizer: Authorizer | None = Authorizer.from_config(
            o.get("super.users", ""), o.get("allow.everyone.if.no.acl.found", "false")) \
            if o.get("authorizer.class.name", "").strip() else None
        """The ACLs and their decisions when `authorizer.class.name` names Kafka's StandardAuthorizer; None
        (Kafka's default): every request is allowed and the ACL APIs answer SECURITY_DISABLED."""
        self.faults = Faults()
        self.hooks = Hooks()
        """What intercepts requests as they are dispatched: the fault rules, a test's hooks, chaos."""
        self.hooks.sources.append(self.faults)
        self.topics: dict[str, Topic] = {}
        self.topics_by_id: dict[uuid.UUID, Topic] = {}
        self.producer_ids = ProducerIds()
        self.group_configs: dict[str, dict[str, str]] = {}
        """GROUP resources' dynamic configs (IncrementalAlterConfigs): group id -> name -> value."""
        self.client_metrics: dict[str, dict[str, str]] = {}
        """CLIENT_METRICS resources (KIP-714 subscriptions): name -> `metrics`, `interval.ms`, `match`."""
        self.client_telemetry = ClientTelemetry(self.clock, lambda: self.client_metrics,
                                                lambda: int(c.value("telemetry.max.bytes")[0] or 1048576),
                                                receiving=c.client_telemetry_on)
        """Client telemetry (KIP-714) answered from those subscriptions; advertised, and pushes kept, only with
        `client_telemetry` on."""
        self.client_quotas = ClientQuotas(
            lambda: (int(c.value("quota.window.num")[0] or 11), int(c.value("quota.window.size.seconds")[0] or 1)),
            lambda: (int(c.value("controller.quota.window.num")[0] or 11),
                     int(c.value("controller.quota.window.size.seconds")[0] or 1)))
        """Client quotas (AlterClientQuotas) and the broker's rates for them."""
        self.loggers = BrokerLoggers()
        """BROKER_LOGGER resources: fakekafka's Python loggers and the levels changed through them."""
        self._storage: ClusterStorage | None = None
        self._topic_hashes: dict[str, int] = {}
        """Topic name -> its metadata hash (`topic_metadata_hash`), until the topic changes."""

        # the parts; a hook written as a lambda names a part made further down
        self.observers = ClusterEvents(self.clock)
        self.topic_configs = TopicConfigs(c, seed)
        self.log_directories = LogDirs(c, self.topics, self.observers)
        self.replication = Replication(c, self.clock, self.brokers, self.topics, self.observers, self.topic_configs,
                                       isr_changed=lambda p: self.leadership.maybe_complete_reassignment(p))
        self.leadership = Leadership(self.clock, self.brokers, self.topics, self.observers, self.topic_configs,
                                     self.replication, self.log_directories.place_replicas,
                                     leader_changed=self._leader_changed,
                                     back_online=lambda: self.transactions.retry_pending_markers(),
                                     replicas_changed=self._replicas_changed)
        self.topic_registry = TopicRegistry(c, self.brokers, self.topics, self.topics_by_id,
                                            self.log_directories.place_replicas,
                                            metadata_changed=self._topics_changed,
                                            topic_deleted=self._topic_deleted)
        self.log_manager = LogManager(c, self.clock, self.brokers, self.topics, self.observers, self.topic_configs,
                                      self.replication)
        self.coordinator_placement = CoordinatorPlacement(c, self.brokers, self.topics,
                                                          self.topic_registry.create_topic)

        # the coordinators and the internal topics they keep their state in
        self.groups = GroupCoordinator(self.clock, GroupConfig(
            min_session_timeout_ms=c.group_min_session_timeout_ms,
            max_session_timeout_ms=c.group_max_session_timeout_ms,
            initial_rebalance_delay_ms=c.group_initial_rebalance_delay_ms,
            offsets_retention_ms=c.offsets_retention_minutes * 60_000), notify=self.observers.notify)
        self.consumer_groups = ConsumerGroupCoordinator(
            self.clock, consumer_group_config(c), topics=self._topic_infos,
            group_config=lambda g: self.group_configs.get(g, {}), classic=self.groups,
            topic_hash=self.topic_metadata_hash)
        self.streams_groups = StreamsGroupCoordinator(
            self.clock, streams_group_config(c), topics=lambda: {n: len(t.partitions) for n, t in self.topics.items()},
            group_config=lambda g: self.group_configs.get(g, {}), topic_hash=self.topic_metadata_hash)
        self.offsets_topic = OffsetsTopic(self)
        """Where the coordinators' records go (`__consumer_offsets`), and whence they are loaded."""
        self.groups.records = self.consumer_groups.records = self.streams_groups.records = self.offsets_topic
        self.shares = ShareCoordinator(self.clock, share_config(c), notify=self.observers.notify,
                                       event=self.observers.event, group_config=lambda g: self.group_configs.get(g, {}))
        self.share_state = ShareStateLog(self)
        """Where share-partitions' persisted state goes (`__share_group_state`), and whence it is loaded."""
        self.shares.persist = self.share_state.write
        self.share_dead_letters = ShareDeadLetters(self, lambda name: self.config.value(name)[0])
        """Where archived share-group records go when the group names a dead-letter topic (KIP-1191)."""
        self.shares.forget = self.share_state.delete_share_partition
        self.transactions = TransactionCoordinator(
            self.clock, TransactionConfig(max_timeout_ms=c.transaction_max_timeout_ms,
                                          id_expiration_ms=c.transactional_id_expiration_ms),
            allocate_producer_id=self.producer_ids.allocate,
            write_marker=lambda *marker: self.appender.coordinator_marker(*marker),
            coordinator_epoch=self.coordinator_placement.transaction_coordinator_epoch)
        self.transaction_log = TransactionLog(self)
        self.transactions.log = self.transaction_log
        self.appender = Appender(c, self.clock, self.topics, self.observers, self.topic_configs, self.replication,
                                 self.transactions, marker_written=self._marker_written)

        # the operations handlers, tools and tests use, by the part that does each
        self.events: list[Event] = self.observers.events
        self.event, self.notify = self.observers.event, self.observers.notify
        self.add_change_listener = self.observers.add_change_listener
        self.remove_change_listener = self.observers.remove_change_listener
        t = self.topic_configs
        self.topic_config, self.topic_config_int, self.segment_configs = \
            t.topic_config, t.topic_config_int, t.segment_configs
        self.min_insync_replicas, self.cleaner_settings = t.min_insync_replicas, t.cleaner_settings
        r = self.topic_registry
        self.partition, self.create_topic, self.delete_topic = r.partition, r.create_topic, r.delete_topic
        self.create_partitions, self.auto_create = r.create_partitions, r.auto_create
        self.replicate = self.replication.replicate
        self.shrink_isr, self.expand_isr = self.replication.shrink_isr, self.replication.expand_isr
        ld = self.leadership
        self.alive_brokers, self.elect_leader = ld.alive_brokers, ld.elect_leader
        self.kill_broker, self.restart_broker, self.stop_broker = ld.kill_broker, ld.restart_broker, ld.stop_broker
        self.move_leader, self.reassign_partition = ld.move_leader, ld.reassign_partition
        self.elect_unclean, self.elect_preferred_leader = ld.elect_unclean, ld.elect_preferred_leader
        self.elect_preferred_leaders = ld.elect_preferred_leaders
        self.log_dirs, self.place_replicas = self.log_directories.log_dirs, self.log_directories.place_replicas
        self.alter_replica_log_dir = self.log_directories.alter_replica_log_dir
        lm = self.log_manager
        self.apply_retention, self.run_cleaner, self.force_compaction = \
            lm.apply_retention, lm.run_cleaner, lm.force_compaction
        self.delete_records = lm.delete_records
        self.append, self.append_internal, self.write_marker = \
            self.appender.append, self.appender.append_internal, self.appender.write_marker
        cp = self.coordinator_placement
        self.offsets_partition_for, self.coordinator_for = cp.offsets_partition_for, cp.coordinator_for
        self.transaction_partition_for = cp.transaction_partition_for
        self.transaction_coordinator_for = cp.transaction_coordinator_for
        self.share_state_topic = cp.share_state_topic

    @property
    def storage(self) -> ClusterStorage | None:
        """The data dir the cluster's logs and metadata are kept in (storage/datadir.py's DataDir, given by the
        cluster's owner before it loads); None: memory only."""
        return self._storage

    @storage.setter
    def storage(self, storage: ClusterStorage | None) -> None:
        self._storage = storage
        self.topic_registry.storage = self.leadership.storage = self.log_directories.storage = storage

    @property
    def controller_id(self) -> int:
        return self.leadership.controller_id

    @property
    def controller_epoch(self) -> int:
        return self.leadership.controller_epoch

    def add_user(self, user: str, password: str) -> None:
        """A SASL user: PLAIN checks the password, SCRAM-SHA-256/512 the credentials made from it."""
        self.sasl_users[user] = password
        self.scram.set_password(user, password)

    def tick(self) -> None:
        """Fires every timeout the clock has passed: replication and ISR changes, sessions, rebalances,
        retention. A step a storage error stops (a full disk; reported once by the data dir) does not stop the
        others: they run again at the next tick."""
        self.replication.tick()
        for step in (self.groups.tick, self.consumer_groups.tick, self.streams_groups.tick,
                     lambda: self.shares.tick(self.share_topic),
                     self.transactions.tick):
            try:
                step()
            except StorageError:
                pass
        self.log_manager.tick()
        if self.storage is not None:
            self.storage.tick()
        self.notify(self.clock)  # requests waiting on a clock deadline look again

    def run_due(self) -> None:
        """Fires the timers due at once (a classic group's zero-delay initial join; see `GroupCoordinator.due`)."""
        try:
            self.groups.run_due()
        except StorageError:
            pass  # as in `tick`: it fires again at the next tick

    def next_deadline(self) -> int | None:
        times = [t for t in (self.groups.next_deadline(), self.consumer_groups.next_deadline(),
                             self.streams_groups.next_deadline(),
                             self.replication.next_deadline(), self.transactions.next_deadline(),
                             self.shares.next_deadline()) if t is not None]
        return min(times, default=None)

    def _topic_infos(self) -> dict[str, TopicInfo]:
        """The metadata image consumer group assignments are computed from."""
        return {name: TopicInfo(t.topic_id, name, len(t.partitions)) for name, t in self.topics.items()}

    def share_topic(self, name: str) -> tuple[uuid.UUID, int] | None:
        """(topic id, partition count) of a topic share groups may subscribe to; None if there is none."""
        topic = self.topics.get(name)
        return None if topic is None or topic.is_internal else (topic.topic_id, len(topic.partitions))

    # --- configs -----------------------------------------------------------------------------
    def set_topic_configs(self, topic: Topic, configs: dict[str, str]) -> None:
        """A topic's dynamic configs replaced (validated by the caller); they take effect at once, as the
        model reads them on every use, and retention at its next check."""
        topic.configs = dict(configs)
        self.event("topic_configs", topic=topic.name, configs=dict(configs))

    def set_broker_configs(self, node_id: int | None, configs: dict[str, str]) -> None:
        """Broker `node_id`'s dynamic configs (None: the cluster-wide defaults) replaced."""
        before = self.log_manager.cleaner_backoffs()
        if node_id is None:
            self.config.dynamic_defaults = dict(configs)
        else:
            self.config.dynamic_brokers[node_id] = dict(configs)
        self.log_manager.broker_configs_changed(before)
        self.consumer_groups.config = consumer_group_config(self.config)  # group.consumer.assignment.interval.ms
        self.streams_groups.config = streams_group_config(self.config)
        for broker in self.brokers:  # a broker takes a telemetry receiver when its reporters change, keeps it after
            self.config.client_telemetry_on(broker)
        self.event("broker_configs", node=node_id, configs=dict(configs))

    # --- hooks: what the coordinators do when the parts change ---------------------------------------------
    def _leader_changed(self, partition: Partition, old: int, new: int, same_log: bool) -> None:
        name = partition.topic.name
        if name == OFFSETS_TOPIC and not same_log:
            # the new coordinator loads the groups from its replica (what it lacks is lost, as with Kafka)
            self.offsets_topic.load(partition)
        if name == TRANSACTION_STATE_TOPIC and old >= 0:
            # the new transaction coordinator loads its ids from its replica; deciding transactions finish. A
            # partition back from offline keeps the state: fakekafka's coordinator went on deciding meanwhile
            # (Kafka's would have answered NOT_COORDINATOR), and what it decided was not written
            self.transaction_log.load(partition)
        if name == SHARE_STATE_TOPIC and old >= 0:
            # the new share coordinator loads its keys (snapshot epochs, update counts) from its replica; the
            # share-partitions, kept by their own partitions' leaders, go on as they were, as in Kafka
            self.share_state.load(partition)
        elif name not in INTERNAL_TOPICS and old >= 0 and new != old:
            # the new leader's share-partitions start from what was persisted, as Kafka's read the persister
            self.share_state.leader_moved(name, partition.index)

    def _marker_written(self, partition: Partition, producer_id: int, commit: bool) -> None:
        if partition.topic.name == OFFSETS_TOPIC:
            index = partition.index
            def here(group_id: str) -> bool:
                return self.offsets_partition_for(group_id) == index
            self.groups.complete_txn_offsets(producer_id, commit, here)
            self.consumer_groups.complete_txn_offsets(producer_id, commit, here)
            self.streams_groups.complete_txn_offsets(producer_id, commit, here)

    def topic_metadata_hash(self, name: str) -> int:
        """The topic's hash in groups' metadata hashes (`fakekafka.model.metadata_hash`): of its id, name, and
        its partitions' replicas' racks; 0 if there is no such topic. Kept until the topic changes, as Kafka's
        coordinator keeps its topic hash cache until a metadata image changes the topic."""
        known = self._topic_hashes.get(name)
        if known is not None:
            return known
        topic = self.topics.get(name)
        if topic is None:
            return 0
        racks = [[rack for rack in (self.brokers[r].rack if r in self.brokers else None for r in p.replicas) if rack]
                 for p in topic.partitions]
        known = self._topic_hashes[name] = topic_hash(topic.topic_id, name, racks)
        return known

    def _replicas_changed(self, partition: Partition) -> None:
        self._topic_hashes.pop(partition.topic.name, None)
        self.consumer_groups.replicas_changed()

    def _topics_changed(self) -> None:
        self._topic_hashes.clear()
        self.observers.metadata_changed()
        self.consumer_groups.metadata_changed()
        self.streams_groups.metadata_changed()

    def _topic_deleted(self, name: str) -> None:
        self._topic_hashes.clear()
        self.observers.metadata_changed()
        self.groups.remove_partitions(name)
        self.consumer_groups.remove_partitions(name)
        self.consumer_groups.metadata_changed()
        self.streams_groups.remove_partitions(name)
        self.streams_groups.metadata_changed()
        self.shares.forget_topic(name)
