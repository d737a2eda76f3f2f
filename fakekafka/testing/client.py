"""A small blocking Kafka client on `wire`, for talking to a cluster fakekafka does not own.

`RemoteCluster` gives a test the same handle (`create_topic`, `produce`, `records`, `end_offsets`,
`committed`, `group`, `describe`, the assertions) against any Kafka-compatible cluster, which is what
`pytest --fakekafka-bootstrap=HOST:PORT` uses. It speaks to partition leaders and group coordinators
as a client does; what only an in-process fakekafka can do (the clock, faults) raises `NeedsFakeKafka`.
"""

from __future__ import annotations

import time
import uuid
from typing import Any

from fakekafka.model.errors import ApiError
from fakekafka.model.internal_topics import OFFSETS_TOPIC, partition_for
from fakekafka.net.wire_client import Brokers, WireConnection
from fakekafka.testing.handle import ClusterHandle
from fakekafka.testing.views import (
    ConsumerGroupView,
    ConsumerMemberView,
    GroupView,
    MemberView,
    StreamsGroupView,
    decode_assignment,
)
from fakekafka.wire import ApiKey, ErrorCode
from fakekafka.wire.records import Compression, Record, build_batch, decode_batch

__all__ = ["NeedsFakeKafka", "RemoteCluster", "WireConnection"]

class NeedsFakeKafka(RuntimeError):
    """The operation steers the cluster itself (clock, faults), which a remote cluster cannot do."""


def probe_group(group_id: str, topic: str, shards: int) -> str:
    """A group id in `group_id`'s __consumer_offsets partition, of `shards`, for a probe about `topic`. The number
    varies last: Java's String.hashCode is a polynomial, and with the number first, the names of one topic
    reached few partitions (none of 500 was in the one a CI run's group needed)."""
    shard = partition_for(group_id, shards)
    for i in range(100 * shards):
        probe = f"fakekafka-probe-{topic}-{i}"
        if partition_for(probe, shards) == shard:
            return probe
    raise RuntimeError(f"no probe group name shares {group_id!r}'s __consumer_offsets partition")


def consumer_group_heartbeat(coordinator: Any, group_id: str, topic: str | None, member_id: str, epoch: int,
                             version: int | None = None, **fields: Any) -> Any:
    """A KIP-848 member's ConsumerGroupHeartbeat about one topic, as decoded: a join (epoch 0: subscribed to
    `topic`, holding nothing), a heartbeat with nothing changed (epoch > 0) or a leave (epoch -1). `fields`: other
    values of the request's fields by their names (`topic_partitions` owned, `subscribed_topic_regex`...)."""
    joining = epoch == 0
    body = {"group_id": group_id, "member_id": member_id, "member_epoch": epoch, "instance_id": None,
            "rack_id": None, "rebalance_timeout_ms": 30_000 if joining else -1,
            "subscribed_topic_names": [topic] if joining and topic is not None else None,
            "subscribed_topic_regex": None, "server_assignor": None, "topic_partitions": [] if joining else None}
    unknown = set(fields) - set(body)
    if unknown:
        raise TypeError(f"ConsumerGroupHeartbeat has no field {', '.join(sorted(unknown))}")
    return coordinator.request(ApiKey.CONSUMER_GROUP_HEARTBEAT, version, {**body, **fields})


class RemoteCluster(Brokers, ClusterHandle):
    """A handle on a cluster reached over the network (a real Kafka, another fakekafka, tansu...)."""

    def __init__(self, bootstrap_servers: str, client_id: str = "fakekafka-pytest", timeout: float = 15.0, *,
                 default_partitions: int = -1) -> None:
        super().__init__(bootstrap_servers, client_id, timeout)
        self.default_partitions = default_partitions
        """What `create_topic` asks for when given no count (the marker's `partitions`); -1 is the broker's."""
        self._auto_create_enabled: bool | None = None

    def __enter__(self) -> RemoteCluster:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # --- the handle -----------------------------------------------------------------------------
    def topics(self) -> list[str]:
        return sorted(t.name for t in self._metadata(None).topics if not t.is_internal)

    def create_topic(self, name: str, partitions: int = -1, *, replication_factor: int = -1,
                     configs: dict[str, str] | None = None) -> None:
        """Creates the topic and returns once every broker's metadata gives each partition a leader: Kafka
        answers CreateTopics when its controller has committed the topic, before the brokers know it, and a
        produce in that gap fails (fakekafka's topic exists at once)."""
        r = self._any().request(ApiKey.CREATE_TOPICS, None, {"topics": [{
            "name": name, "num_partitions": self.default_partitions if partitions == -1 else partitions,
            "replication_factor": replication_factor,
            "assignments": [], "configs": [{"name": k, "value": v} for k, v in (configs or {}).items()]}],
            "timeout_ms": int(self.timeout * 1000)})
        t = r.topics[0]
        if t.error_code != ErrorCode.NONE:
            raise ApiError(ErrorCode(t.error_code), t.get("error_message"))
        self._await_metadata([name], present=True)
        self._await_leaders(name)

    def delete_topic(self, name: str) -> None:
        """Deletes the topic and returns once no broker's metadata lists it (as `create_topic`, Kafka's
        brokers learn of it after the controller answers)."""
        self._delete_topics([name], missing_ok=False)

    def _delete_topics(self, names: list[str], *, missing_ok: bool) -> None:
        conn = self._any()
        v = conn.version_for(ApiKey.DELETE_TOPICS)
        body = {"topics": [{"name": n} for n in names]} if v >= 6 else {"topic_names": names}
        r = conn.request(ApiKey.DELETE_TOPICS, v, {**body, "timeout_ms": int(self.timeout * 1000)})
        for t in r.responses:
            if t.error_code != ErrorCode.NONE and not (
                    missing_ok and t.error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION):
                raise ApiError(ErrorCode(t.error_code), t.get("error_message"))
        self._await_metadata(names, present=False)

    def _await_metadata(self, names: list[str], *, present: bool) -> None:
        """Waits until every broker's Metadata has each topic with a leader for every partition (present) or
        does not list it (not present)."""
        deadline = time.monotonic() + self.timeout
        self._metadata(None)
        pending = set(self._brokers)
        while pending:
            for node_id in sorted(pending):
                body = {"topics": [{"name": n} for n in names], "allow_auto_topic_creation": False}
                topics = self._broker(node_id).request(ApiKey.METADATA, None, body).topics
                known = {t.name for t in topics if t.error_code == ErrorCode.NONE
                         and t.partitions and all(p.leader_id >= 0 for p in t.partitions)}
                if (known == set(names)) if present else not known:
                    pending.discard(node_id)
            if pending:
                if time.monotonic() > deadline:
                    raise TimeoutError(f"topics {names} still {'missing from' if present else 'listed by'} "
                                       f"the metadata of brokers {sorted(pending)} after {self.timeout}s")
                time.sleep(0.01)

    _NOT_YET = frozenset({ErrorCode.NOT_LEADER_OR_FOLLOWER, ErrorCode.LEADER_NOT_AVAILABLE,
                          ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, ErrorCode.REPLICA_NOT_AVAILABLE})

    def _await_leaders(self, topic: str) -> None:
        """Waits until each partition's leader answers ListOffsets: a Kafka broker lists a new partition's
        leader in Metadata a moment before its replica manager takes the leadership (NOT_LEADER_OR_FOLLOWER)."""
        deadline = time.monotonic() + self.timeout
        for p in self._topic(topic).partitions:
            while True:
                try:
                    self._list_offset(topic, p.partition_index, -1)
                    break
                except ApiError as e:
                    if e.code not in self._NOT_YET or time.monotonic() > deadline:
                        raise
                    time.sleep(0.01)

    def cluster_id(self) -> str:
        return self._metadata(None).cluster_id

    def topic_id(self, topic: str) -> uuid.UUID:
        return self._topic(topic).topic_id

    def topic_configs(self, topic: str) -> dict[str, str]:
        """The configs set on the topic itself (source DYNAMIC_TOPIC_CONFIG), not its defaults."""
        r = self._any().request(ApiKey.DESCRIBE_CONFIGS, None, {"resources": [
            {"resource_type": 2, "resource_name": topic, "configuration_keys": None}],
            "include_synonyms": False, "include_documentation": False})
        res = r.results[0]
        if res.error_code != ErrorCode.NONE:
            raise ApiError(ErrorCode(res.error_code), res.get("error_message"))
        return {c.name: c.value for c in res.configs if c.config_source == 1}

    def broker_config(self, name: str) -> str | None:
        """A broker config's value as the cluster reports it (DescribeConfigs on the first broker)."""
        self._metadata(None)
        node_id = min(self._brokers)
        r = self._broker(node_id).request(ApiKey.DESCRIBE_CONFIGS, None, {"resources": [
            {"resource_type": 4, "resource_name": str(node_id), "configuration_keys": [name]}],
            "include_synonyms": False, "include_documentation": False})
        res = r.results[0]
        if res.error_code != ErrorCode.NONE:
            raise ApiError(ErrorCode(res.error_code), res.get("error_message"))
        return next((c.value for c in res.configs if c.name == name), None)

    def wait_for_topic(self, topic: str, partitions: int | None = None, timeout: float = 10.0) -> None:
        def ready() -> bool:
            try:
                return topic in self.topics() and (partitions is None or len(self.end_offsets(topic)) == partitions)
            except ApiError as e:  # listed, but a partition's leader is not serving it yet
                if e.code in self._NOT_YET:
                    return False
                raise
        self.wait_until(ready, timeout, message=f"topic {topic!r}"
                        + ("" if partitions is None else f" with {partitions} partitions"))

    def wait_for_topic_at_group_coordinator(self, group_id: str, topic: str, timeout: float = 10.0) -> None:
        """Waits until the coordinator of `group_id` gives a KIP-848 member `topic`'s partitions. Kafka's group
        coordinator learns of a new topic a moment after the brokers' metadata lists it, and a member that joins
        in between is given nothing for now; a probe group in the group's own __consumer_offsets partition (the
        coordinator's shard that will serve the group) joins until it is given every partition, then leaves. A
        broker without ConsumerGroupHeartbeat has nothing to wait for."""
        if ApiKey.CONSUMER_GROUP_HEARTBEAT not in self._coordinator(group_id).versions:
            return
        # the probe group in the group's own __consumer_offsets partition: each of a Kafka coordinator's shards (one
        # per partition) learns of a new topic on its own, and a probe in another one was seen done while the
        # group's shard still gave a joining member nothing. Its coordinator is looked up at each try, as the
        # group's would be: that partition's leader may move meanwhile (a broker restarted by an earlier test)
        shards = len(self.wait_until(lambda: self._present(OFFSETS_TOPIC), timeout, 0.05,
                                     message=f"{OFFSETS_TOPIC} in metadata").partitions)
        probe = probe_group(group_id, topic, shards)
        moving = {ErrorCode.NOT_COORDINATOR, ErrorCode.COORDINATOR_NOT_AVAILABLE,
                  ErrorCode.COORDINATOR_LOAD_IN_PROGRESS}

        def heartbeat(coordinator: Any, member_id: str, epoch: int) -> Any:
            r = consumer_group_heartbeat(coordinator, probe, topic, member_id, epoch)
            if r.error_code != ErrorCode.NONE and r.error_code not in moving:
                raise ApiError(ErrorCode(r.error_code), r.error_message)
            return r

        def assigned() -> bool:
            listed = self._present(topic)
            if listed is None:
                return False
            try:
                coordinator = self._coordinator(probe)
            except ApiError as e:
                if e.code in moving:
                    return False
                raise
            partitions = len(listed.partitions)
            v0 = coordinator.version_for(ApiKey.CONSUMER_GROUP_HEARTBEAT) == 0  # v0: the coordinator names it
            r = heartbeat(coordinator, "" if v0 else str(uuid.uuid4()), 0)
            if r.error_code != ErrorCode.NONE:
                return False
            heartbeat(coordinator, r.member_id, -1)  # leaves: the group stays empty, the next try joins anew
            given = 0 if r.assignment is None else sum(len(tp.partitions) for tp in r.assignment.topic_partitions)
            return given == partitions

        self.wait_until(assigned, timeout, 0.05, message=f"{topic!r} at the group coordinator of {group_id!r}")

    def _present(self, topic: str) -> Any:
        """The topic's metadata, or None while a broker does not list it yet."""
        try:
            return self._topic(topic)
        except ApiError as e:
            if e.code in self._NOT_YET:
                return None
            raise

    def clear(self) -> list[str]:
        """Deletes every topic (internal ones aside) and every group that has no members left: the fresh-cluster
        start the fixtures promise, on a cluster the caller owns (`pytest --kafka-real` calls it after each
        test). Returns the groups it could not delete: a consumer still open keeps its group (Kafka answers
        NON_EMPTY_GROUP), and a later test of the same group id would wait for that member."""
        kept = []
        for group_id in self.groups():
            r = self._coordinator(group_id).request(ApiKey.DELETE_GROUPS, None, {"groups_names": [group_id]})
            if any(g.error_code not in (ErrorCode.NONE, ErrorCode.GROUP_ID_NOT_FOUND) for g in r.results):
                kept.append(group_id)
        topics = self.topics()
        if topics:
            self._delete_topics(topics, missing_ok=True)
        return kept

    def partition_state(self, topic: str, partition: int) -> dict[str, Any]:
        """Leader, leader epoch, replicas and ISR as Metadata shows them (a remote cluster's log end offsets and
        high watermarks are not on the wire, so, unlike the in-process cluster's, they are left out)."""
        for p in self._topic(topic).partitions:
            if p.partition_index == partition:
                return {"leader": p.leader_id, "leader_epoch": p.leader_epoch, "replicas": list(p.replica_nodes),
                        "isr": list(p.isr_nodes)}
        raise ApiError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"{topic}-{partition} does not exist")

    def move_leader(self, topic: str, partition: int, node_id: int) -> None:
        """Makes `node_id` (a replica in the ISR) the partition's leader as an operator does on Kafka: a
        reassignment to the same replicas with `node_id` first (AlterPartitionReassignments), then a preferred
        leader election (ElectLeaders); returns once every broker's Metadata names it."""
        state = self.partition_state(topic, partition)
        if node_id not in state["isr"]:
            raise ApiError(ErrorCode.INVALID_REPLICA_ASSIGNMENT, f"broker {node_id} is not in the ISR of "
                           f"{topic}-{partition} ({state['isr']})")
        replicas = [node_id, *(r for r in state["replicas"] if r != node_id)]
        r = self._any().request(ApiKey.ALTER_PARTITION_REASSIGNMENTS, 0, {
            "timeout_ms": int(self.timeout * 1000), "topics": [
                {"name": topic, "partitions": [{"partition_index": partition, "replicas": replicas}]}]})
        errors = [(r.error_code, r.error_message)] + [(p.error_code, p.error_message)
                                                       for t in r.responses for p in t.partitions]
        for code, message in errors:
            if code != ErrorCode.NONE:
                raise ApiError(ErrorCode(code), message)
        deadline = time.monotonic() + self.timeout
        while True:  # the new order is the controller's once committed: until then no election is needed
            r = self._any().request(ApiKey.ELECT_LEADERS, 2, {
                "election_type": 0, "timeout_ms": int(self.timeout * 1000),
                "topic_partitions": [{"topic": topic, "partitions": [partition]}]})
            code = ErrorCode(r.error_code)
            if code == ErrorCode.NONE:
                code = ErrorCode(r.replica_election_results[0].partition_result[0].error_code)
            if code not in (ErrorCode.NONE, ErrorCode.ELECTION_NOT_NEEDED, ErrorCode.PREFERRED_LEADER_NOT_AVAILABLE):
                raise ApiError(code, f"electing {node_id} leader of {topic}-{partition}")
            if self.partition_state(topic, partition)["leader"] == node_id:
                break
            if time.monotonic() > deadline:
                raise TimeoutError(f"{node_id} not elected leader of {topic}-{partition} after {self.timeout}s "
                                   f"(last answer {code.name})")
            time.sleep(0.05)
        self._metadata(None)
        for broker in sorted(self._brokers):
            while True:
                body = {"topics": [{"name": topic}], "allow_auto_topic_creation": False}
                t = self._broker(broker).request(ApiKey.METADATA, None, body).topics[0]
                if any(p.partition_index == partition and p.leader_id == node_id for p in t.partitions):
                    break
                if time.monotonic() > deadline:
                    raise TimeoutError(f"broker {broker} still does not name {node_id} leader of "
                                       f"{topic}-{partition} after {self.timeout}s")
                time.sleep(0.01)

    def produce(self, topic: str, value: bytes | None, *, key: bytes | None = None,
                headers: list[tuple[str, bytes | None]] | None = None, partition: int | None = None,
                timestamp: int | None = None, compression: Compression = Compression.NONE) -> tuple[int, int]:
        index = partition or 0
        ts = int(time.time() * 1000) if timestamp is None else timestamp
        batch = build_batch([{"key": key, "value": value, "headers": headers or [], "timestamp": ts}],
                            compression=compression)
        self._auto_create(topic)
        r = self._leader(topic, index).request(ApiKey.PRODUCE, None, {"transactional_id": None, "acks": -1,
                                                         "timeout_ms": int(self.timeout * 1000), "topic_data": [
            {"name": topic, "partition_data": [{"index": index, "records": batch}]}]})
        p = r.responses[0].partition_responses[0]
        if p.error_code != ErrorCode.NONE:
            raise ApiError(ErrorCode(p.error_code), p.get("error_message"))
        return index, p.base_offset

    def _auto_create(self, topic: str) -> None:
        """Asks for the topic as a producer does (Metadata allowing auto-creation): a cluster that auto-creates
        makes it, as fakekafka's `produce` does, and this waits until its partitions have leaders."""
        [t] = self._metadata([topic], auto_create=True).topics
        if t.error_code == ErrorCode.NONE and t.partitions and all(p.leader_id >= 0 for p in t.partitions):
            return
        # Kafka 4 answers the request that starts an auto-creation with UNKNOWN_TOPIC_OR_PARTITION (older
        # brokers with LEADER_NOT_AVAILABLE), so the broker's setting says whether to wait for the topic
        if t.error_code not in (ErrorCode.NONE, ErrorCode.LEADER_NOT_AVAILABLE) and not (
                t.error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION and self._auto_creates()):
            raise ApiError(ErrorCode(t.error_code), f"topic {topic!r}: {ErrorCode(t.error_code).name}")
        self._await_metadata([topic], present=True)
        self._await_leaders(topic)

    def _auto_creates(self) -> bool:
        if self._auto_create_enabled is None:
            try:
                self._auto_create_enabled = self.broker_config("auto.create.topics.enable") == "true"
            except ApiError:
                self._auto_create_enabled = False
        return self._auto_create_enabled

    def end_offsets(self, topic: str) -> dict[int, int]:
        return {p.partition_index: self._list_offset(topic, p.partition_index, -1)
                for p in self._topic(topic).partitions}

    def records(self, topic: str, partition: int | None = None, *, control: bool = False) -> list[Record]:
        out: list[Record] = []
        indexes = [p.partition_index for p in self._topic(topic).partitions] if partition is None else [partition]
        for index in sorted(indexes):
            start, end = self._list_offset(topic, index, -2), self._list_offset(topic, index, -1)
            for batch in self.batches(topic, index):
                decoded = decode_batch(batch)
                if decoded.header.is_control and not control:
                    continue
                for rec in decoded.records:
                    if start <= rec.offset < end:
                        rec.partition = index
                        out.append(rec)
        return out

    def committed(self, group_id: str) -> dict[tuple[str, int], int]:
        r = self._coordinator(group_id).request(ApiKey.OFFSET_FETCH, 8, {
            "groups": [{"group_id": group_id, "topics": None}], "require_stable": False})
        g = r.groups[0]
        return {(t.name, p.partition_index): p.committed_offset for t in g.topics for p in t.partitions
                if p.committed_offset >= 0}

    def group(self, group_id: str) -> GroupView | None:
        """The group as DescribeGroups shows it: state, protocol, members and their decoded assignments. The
        generation (-1 here), leader and transition history are the coordinator's own and not on the wire."""
        g = self._coordinator(group_id).request(ApiKey.DESCRIBE_GROUPS, None, {"groups": [group_id]}).groups[0]
        if g.error_code != ErrorCode.NONE or g.group_state == "Dead":
            return None
        consumer = g.protocol_type == "consumer"
        members = [MemberView(m.member_id, m.get("group_instance_id"), m.client_id, m.client_host,
                              decode_assignment(m.member_assignment) if consumer else None, m.member_assignment)
                   for m in g.members]
        return GroupView(group_id, g.group_state, -1, g.protocol_type, g.protocol_data or None, None, members, [])

    def consumer_group(self, group_id: str) -> ConsumerGroupView | None:
        """A KIP-848 consumer group as ConsumerGroupDescribe shows it (member reconciliation states are the
        coordinator's own and not on the wire: "")."""
        g = self._coordinator(group_id).request(ApiKey.CONSUMER_GROUP_DESCRIBE, None,
                                                {"group_ids": [group_id]}).groups[0]
        if g.error_code != ErrorCode.NONE:
            return None

        def named(a: Any) -> dict[str, list[int]]:
            return {t.topic_name: sorted(t.partitions) for t in a.topic_partitions}

        return ConsumerGroupView(group_id, g.group_state, g.group_epoch, g.assignment_epoch, g.assignor_name, [
            ConsumerMemberView(m.member_id, m.instance_id, m.client_id, m.client_host, m.member_epoch, "",
                               list(m.subscribed_topic_names), m.subscribed_topic_regex or None,
                               named(m.assignment), named(m.target_assignment),
                               "classic" if m.get("member_type", 1) == 0 else "consumer") for m in g.members])

    def streams_group(self, group_id: str) -> StreamsGroupView | None:
        """A KIP-1071 streams group as StreamsGroupDescribe shows it (member reconciliation states are the
        coordinator's own and not on the wire: "")."""
        g = self._coordinator(group_id).request(ApiKey.STREAMS_GROUP_DESCRIBE, None,
                                                {"group_ids": [group_id]}).groups[0]
        return StreamsGroupView.described(g) if g.error_code == ErrorCode.NONE else None

    def groups(self) -> list[str]:
        names: set[str] = set()
        self._metadata(None)  # every broker coordinates some groups: ask each
        for node_id in list(self._brokers):
            conn = self._broker(node_id)
            names.update(x.group_id for x in conn.request(ApiKey.LIST_GROUPS, None, {"states_filter": []}).groups)
        return sorted(names)

    def describe(self, last_requests: int = 0) -> str:
        lines = [f"cluster at {self.bootstrap_servers} (not fakekafka)", "topics:"]
        try:
            for name in self.topics():
                lines.append(f"  {name} {self.end_offsets(name)}")
            lines.append("groups:")
            for group_id in self.groups():
                view = self.group(group_id)
                if view is not None:
                    lines.append(f"  {group_id}: {view.state}, members {[m.member_id for m in view.members]}")
                elif (streams := self.streams_group(group_id)) is not None:
                    lines.extend(streams.lines())
        except (OSError, ApiError) as e:
            lines.append(f"  (could not read the cluster: {e})")
        return "\n".join(lines)

    def _steer(self, what: str) -> Any:
        raise NeedsFakeKafka(f"{what} needs an in-process fakekafka; it cannot steer the cluster at "
                             f"{self.bootstrap_servers}")

    def advance_clock(self, ms: int) -> int:
        return self._steer("advance_clock")

    def force_compaction(self, topic: str) -> int:
        return self._steer("force_compaction")

    def force_rebalance(self, group_id: str) -> None:
        self._steer("force_rebalance")

    def expire_member(self, group_id: str, member_id: str) -> None:
        self._steer("expire_member")
