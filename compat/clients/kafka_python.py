"""kafka-python (pure Python), in the harness process. Members poll on their own thread (PollingMember)."""

from __future__ import annotations

import time
from typing import Any

from kafka import KafkaConsumer, KafkaProducer, TopicPartition
from kafka import errors as kerrors
from kafka.admin import ConfigResource, ConfigResourceType, KafkaAdminClient, NewPartitions, NewTopic
from kafka.structs import OffsetAndMetadata

from compat.clients.base import (
    TP,
    ClientError,
    Member,
    MemberOptions,
    PollingMember,
    Rec,
    Timing,
    TxnProducer,
    Unsupported,
    config_source,
    error_name,
    group_description,
    library_error,
    library_record,
    needs,
)
from compat.clients.library import LibraryClient

__all__ = ["KafkaPythonClient"]


_V2 = OffsetAndMetadata._fields == ("offset", "metadata")  # kafka-python 2.0.x (3.x adds leader_epoch)


def _offset_and_metadata(offset: int, metadata: str) -> OffsetAndMetadata:
    return OffsetAndMetadata(offset, metadata) if _V2 else OffsetAndMetadata(offset, metadata, -1)


def _fetcher_no_offset() -> type[BaseException]:
    from kafka.consumer.fetcher import NoOffsetForPartitionError
    return NoOffsetForPartitionError

_LOCAL = {
    kerrors.KafkaTimeoutError: "TIMEOUT",
    kerrors.IllegalStateError: "CLIENT_REJECTED",  # a transactional call in the wrong state, refused locally
    # kafka.errors has it from 3.x; 2.0.2 (still widely pinned) defines it in kafka.consumer.fetcher
    getattr(kerrors, "NoOffsetForPartitionError", None) or _fetcher_no_offset(): "NO_OFFSET_FOR_PARTITION",
}


def client_error(e: BaseException) -> ClientError:
    return library_error(e, _LOCAL, kerrors.KafkaError)


def finish_a_join_left_in_flight(consumer: KafkaConsumer) -> None:
    """Makes the next poll await a join kafka-python 3.0.12 would otherwise lose: when poll() times out while a
    rebalance's JoinGroup/SyncGroup is in flight, the next poll awaits it only while need_rejoin() holds, and a
    leader's own assignment (made with the metadata it rejoined for) has made that false by then; the member then
    stays REBALANCING with its heartbeats off until its session ends (seen with SyncGroup answers delayed past a
    poll's timeout, and in a loaded CI run). Marking a rejoin needed has the next poll await the join in flight
    (or, done meanwhile, join once more)."""
    coordinator = getattr(consumer, "_coordinator", None)
    task = getattr(coordinator, "_join_task", None)
    if task is not None and not coordinator.need_rejoin():
        coordinator.rejoin_needed = True


class KafkaPythonClient(LibraryClient):
    name = "kafka-python"

    def __init__(self, bootstrap: str, timing: Timing) -> None:
        super().__init__(bootstrap, timing)
        self._admin: KafkaAdminClient | None = None

    def close(self) -> None:
        if self._admin is not None:
            self._admin.close()

    def admin(self) -> KafkaAdminClient:
        if self._admin is None:
            self._admin = KafkaAdminClient(bootstrap_servers=self.bootstrap,
                                           request_timeout_ms=int(self.timing.op_s * 1000))
        return self._admin

    def produce(self, topic: str, recs: list[Rec], *, codec: str = "none", one_batch: bool = False,
                max_request_bytes: int | None = None, acks: int | None = None,
                idempotent: bool | None = None) -> list[tuple[int, int]]:
        if any(v is None for r in recs for _, v in r.headers):
            raise Unsupported("kafka-python's producer takes only bytes header values (no null)")
        config: dict[str, Any] = dict(
            bootstrap_servers=self.bootstrap, compression_type=None if codec == "none" else codec,
            linger_ms=60_000 if one_batch else 0, batch_size=4 << 20 if one_batch else 16384, retries=0,
            max_block_ms=self.timing.metadata_ms, request_timeout_ms=int(self.timing.op_s * 1000))
        if max_request_bytes:
            config["max_request_size"] = max_request_bytes
        if acks is not None:
            config["acks"] = "all" if acks == -1 else acks
        if idempotent is not None:
            if "enable_idempotence" not in KafkaProducer.DEFAULT_CONFIG:
                raise Unsupported("this kafka-python has no idempotent producer")
            config["enable_idempotence"] = idempotent
            if idempotent:
                config.update(acks="all", retries=5)
        producer = KafkaProducer(**config)
        try:
            try:
                futures = [producer.send(topic, key=r.key, value=r.value, headers=list(r.headers),
                                         partition=r.partition, timestamp_ms=r.timestamp) for r in recs]
                producer.flush(self.timing.op_s)
                out = []
                for f in futures:
                    m = f.get(self.timing.op_s)
                    out.append((m.partition, m.offset))
                return out
            except kerrors.KafkaError as e:
                raise client_error(e) from None
            except (ValueError, AssertionError) as e:  # checked before sending (an unknown partition)
                raise ClientError("CLIENT_REJECTED", type(e).__name__, str(e)) from None
        finally:
            producer.close(timeout=2)

    def _consumer(self, **config: Any) -> KafkaConsumer:
        return KafkaConsumer(**{"bootstrap_servers": self.bootstrap, "group_id": None, "enable_auto_commit": False,
                                "auto_offset_reset": "earliest",
                                "request_timeout_ms": int(max(self.timing.op_s, 31) * 1000), **config})

    def fetch(self, topic: str, partition: int, offset: int, count: int, reset: str = "earliest",
              isolation: str | None = None) -> list[Rec]:
        consumer = self._consumer(auto_offset_reset=reset, **_isolation(isolation))
        try:
            tp = TopicPartition(topic, partition)
            consumer.assign([tp])
            consumer.seek(tp, offset)
            out: list[Rec] = []
            deadline = time.monotonic() + self.timing.fetch_s
            while len(out) < count and time.monotonic() < deadline:
                for records in consumer.poll(timeout_ms=100).values():
                    out.extend(library_record(r) for r in records)
            return out[:count]
        except kerrors.KafkaError as e:
            raise client_error(e) from None
        finally:
            consumer.close(autocommit=False)

    def list_offsets(self, topic: str, partition: int, spec: str | int, isolation: str | None = None) -> int | None:
        consumer = self._consumer(**_isolation(isolation))
        tp = TopicPartition(topic, partition)
        try:
            if spec == "earliest":
                return consumer.beginning_offsets([tp])[tp]
            if spec == "latest":
                return consumer.end_offsets([tp])[tp]
            if spec == "max_timestamp":
                lookup = needs(self.admin(), "list_partition_offsets", "max-timestamp lookup")  # 3.x only
                from kafka.admin import OffsetSpec
                got = lookup({tp: OffsetSpec.MAX_TIMESTAMP})[tp]
                return None if got.offset < 0 else got.offset
            found = consumer.offsets_for_times({tp: spec})[tp]
            return None if found is None else found.offset
        except kerrors.KafkaError as e:
            raise client_error(e) from None
        finally:
            consumer.close(autocommit=False)

    def create_topic(self, topic: str, partitions: int, replication_factor: int = 1,
                     configs: dict[str, str] | None = None, *, validate_only: bool = False) -> None:
        try:
            self.admin().create_topics([NewTopic(topic, partitions, replication_factor,
                                                 topic_configs=configs or {})], validate_only=validate_only)
        except kerrors.KafkaError as e:
            raise client_error(e) from None

    def _admin_call(self, method: str, *args: Any, **kw: Any) -> Any:
        try:
            return needs(self.admin(), method, method.replace("_", " "))(*args, **kw)
        except kerrors.KafkaError as e:
            raise client_error(e) from None
        except ValueError as e:  # an answer the client cannot read (an unknown enum value)
            raise ClientError(f"CLIENT:{type(e).__name__}", type(e).__name__, str(e)) from None

    def delete_topic(self, topic: str) -> None:
        self._admin_call("delete_topics", [topic])

    def create_partitions(self, topic: str, count: int, *, validate_only: bool = False) -> None:
        self._admin_call("create_partitions", {topic: NewPartitions(count)}, validate_only=validate_only)

    def describe_configs(self, resource: str, name: str, keys: list[str]) -> dict[str, dict[str, Any]]:
        kind = ConfigResourceType.TOPIC if resource == "topic" else ConfigResourceType.BROKER
        res = ConfigResource(kind, name, configs=keys)
        try:
            got = self._admin_call("describe_configs", [res], include_synonyms=True, config_filter="all")
        except TypeError:  # kafka-python 2.x: a list of raw responses, no config_filter
            raise Unsupported("this kafka-python's describe_configs returns raw responses") from None
        entries = next(iter(got[resource].values()))
        return {k: {"value": e["value"], "source": config_source(e["config_source"]), "read_only": e["read_only"],
                    "sensitive": e["is_sensitive"],
                    "synonyms": [[y["name"], y["value"], config_source(y["source"])] for y in e["synonyms"] or []]}
                for k, e in entries.items() if k in keys}

    def delete_records(self, topic: str, partition: int, before: int) -> int:
        tp = TopicPartition(topic, partition)
        got = self._admin_call("delete_records", {tp: before})[tp]
        if got.get("error_code"):
            raise ClientError(error_name(got["error_code"]), "delete_records error_code", "")
        return got["low_watermark"]

    def describe_group(self, group: str) -> dict[str, Any]:
        g = self._admin_call("describe_groups", [group])
        g = g[group] if isinstance(g, dict) else g[0]._asdict() if hasattr(g[0], "_asdict") else g[0]
        if g.get("error"):
            code = _error_from_text(str(g["error"]))
            raise ClientError(code, "describe_groups error", str(g["error"]))
        members = [(_assigned_partitions(m.get("member_assignment")), m.get("group_instance_id"))
                   for m in g.get("members") or []]
        return group_description(g.get("group_state") or g.get("state"), g.get("protocol_type"),
                                 g.get("protocol") or g.get("protocol_data"), members)

    def list_groups(self) -> dict[str, dict[str, Any]]:
        out = {}
        for g in self._admin_call("list_groups"):
            if isinstance(g, dict):
                out[g["group_id"]] = {"protocol_type": g.get("protocol_type"), "state": g.get("group_state")}
            else:  # kafka-python 2.x: (group id, protocol type)
                out[g[0]] = {"protocol_type": g[1], "state": None}
        return out

    def delete_group(self, group: str) -> None:
        got = self._admin_call("delete_groups", [group])
        err = dict(got).get(group) if got else None
        name = err if isinstance(err, str) or err is None else getattr(err, "__name__", type(err).__name__)
        errno = getattr(getattr(kerrors, name, None), "errno", None) if name else 0
        if name and name not in ("OK", "NoError") and errno != 0:
            raise ClientError(error_name(errno) if isinstance(errno, int) else name, name, "")

    def delete_offsets(self, group: str, topic: str, partitions: list[int]) -> None:
        got = self._admin_call("delete_group_offsets", group, [TopicPartition(topic, p) for p in partitions])
        for err in (got or {}).values():
            if err is not None and getattr(err, "errno", 0):
                raise ClientError(error_name(err.errno), type(err).__name__ if not isinstance(err, type)
                                  else err.__name__, "")

    def partition_count(self, topic: str) -> int:
        try:
            [t] = self.admin().describe_topics([topic])
        except kerrors.KafkaError as e:
            raise client_error(e) from None
        if t["error_code"]:
            raise ClientError(error_name(t["error_code"]), "describe_topics error_code", "")
        return len(t["partitions"])

    def committed(self, group: str, topic: str, partitions: int) -> dict[int, tuple[int, str | None]]:
        consumer = self._consumer(group_id=group)
        try:
            out = {}
            for p in range(partitions):
                c = consumer.committed(TopicPartition(topic, p), metadata=True)
                if c is not None and c.offset >= 0:
                    out[p] = (c.offset, c.metadata)
            return out
        except kerrors.KafkaError as e:
            raise client_error(e) from None
        finally:
            consumer.close(autocommit=False)

    def _member(self, group: str, topic: str, assign: list[int] | None, offset_reset: str,
                options: MemberOptions) -> Member:
        return _Member(self, group, topic, assign, offset_reset, options)

    def transactional(self, transactional_id: str, *, timeout_ms: int | None = None) -> TxnProducer:
        if "transactional_id" not in KafkaProducer.DEFAULT_CONFIG:
            raise Unsupported("this kafka-python has no transactional producer (3.0 added it)")
        return _Txn(self, transactional_id, timeout_ms)


def _isolation(isolation: str | None) -> dict[str, Any]:
    if isolation is None:
        return {}
    if "isolation_level" not in KafkaConsumer.DEFAULT_CONFIG:
        raise Unsupported("this kafka-python has no isolation_level (read_committed)")
    return {"isolation_level": isolation}


class _Txn(TxnProducer):
    """KafkaProducer(transactional_id=...): every call blocks until the client's transaction manager is done."""

    def __init__(self, client: KafkaPythonClient, transactional_id: str, timeout_ms: int | None) -> None:
        self.timing = client.timing
        extra = {} if timeout_ms is None else {"transaction_timeout_ms": timeout_ms}
        self.producer = KafkaProducer(bootstrap_servers=client.bootstrap, transactional_id=transactional_id,
                                      linger_ms=0, max_block_ms=int(client.timing.op_s * 1000),
                                      request_timeout_ms=int(client.timing.op_s * 1000), **extra)
        self.closed = False
        try:
            self._call(self.producer.init_transactions)
        except ClientError:
            self.close()
            raise

    def _call(self, fn: Any, *args: Any) -> Any:
        try:
            return fn(*args)
        except kerrors.KafkaError as e:
            if type(e) is kerrors.KafkaError:  # the transaction manager wraps what it reports in plain text
                text = str(e)
                if "[Error " in text:  # a broker error: "Unexpected error in ...: [Error 94] ..."
                    raise ClientError(_error_from_text(text), "KafkaError", text) from None
                if "Invalid transition attempted" in text or "not in an active transaction" in text:
                    raise ClientError("CLIENT_REJECTED", "KafkaError", text) from None
            raise client_error(e) from None

    def begin(self) -> None:
        self._call(self.producer.begin_transaction)

    def send(self, topic: str, recs: list[Rec]) -> list[tuple[int, int]]:
        def go() -> list[tuple[int, int]]:
            futures = [self.producer.send(topic, key=r.key, value=r.value, headers=list(r.headers),
                                          partition=r.partition) for r in recs]
            self.producer.flush(self.timing.op_s)
            return [(m.partition, m.offset) for m in (f.get(self.timing.op_s) for f in futures)]
        return self._call(go)

    def _bounded(self, start: Any, *args: Any) -> None:
        """What send_offsets_to_transaction, commit_transaction and abort_transaction do (start the
        transaction manager's request, wake the sender, wait for the result), with the wait bounded: theirs
        has no timeout, so a broker that never answers (tansu) would hang the harness."""
        def go() -> None:
            result = start(*args)
            self.producer._sender.wakeup()
            if not result.wait(timeout_ms=int(self.timing.op_s * 1000)):
                raise kerrors.KafkaTimeoutError(f"no answer in {self.timing.op_s} s")
        self._call(go)

    def send_offsets(self, group: str, offsets: dict[TP, int]) -> None:
        self._bounded(self.producer._transaction_manager.send_offsets_to_transaction,
                      {TopicPartition(t, p): _offset_and_metadata(o, "") for (t, p), o in offsets.items()}, group)

    def commit(self) -> None:
        self._bounded(self.producer._transaction_manager.begin_commit)

    def abort(self) -> None:
        self._bounded(self.producer._transaction_manager.begin_abort)

    def close(self) -> None:
        if not self.closed:
            self.closed = True
            self.producer.close(timeout=2)


def _assigned_partitions(a: Any) -> list[int]:
    """The partitions of a decoded consumer-protocol assignment, in whichever shape this kafka-python has."""
    if not a or isinstance(a, bytes):
        return []
    if isinstance(a, dict):
        return [p for t in a.get("assigned_partitions") or [] for p in (t["partitions"] if isinstance(t, dict)
                                                                         else t[1])]
    if hasattr(a, "assigned_partitions"):
        return [p for t in a.assigned_partitions for p in t.partitions]
    return [p for t in getattr(a, "assignment", None) or [] for p in t[1]]


def _error_from_text(text: str) -> str:
    """Kafka's error name from kafka-python's "[Error 69] GroupIdNotFoundError: ..." text."""
    import re
    m = re.search(r"\[Error (-?\d+)\]", text)
    return error_name(int(m.group(1))) if m else f"CLIENT:{text[:60]}"


class _Member(PollingMember):
    def __init__(self, client: KafkaPythonClient, group: str, topic: str, assign: list[int] | None,
                 offset_reset: str, options: MemberOptions) -> None:
        self.client, self.group, self.topic, self.assign, self.offset_reset = client, group, topic, assign, offset_reset
        self.options = options
        super().__init__(client.timing, f"{client.name}-{group}")

    def _open(self) -> None:
        t = self.timing
        extra: dict[str, Any] = {}
        if self.options.instance_id is not None:
            if "group_instance_id" not in KafkaConsumer.DEFAULT_CONFIG:
                raise Unsupported("this kafka-python has no static membership (group_instance_id)")
            extra["group_instance_id"] = self.options.instance_id
        session = self.options.session_timeout_ms
        self.consumer = self.client._consumer(
            group_id=self.group, auto_offset_reset=self.offset_reset, session_timeout_ms=session,
            heartbeat_interval_ms=min(t.heartbeat_ms, max(1, session // 3)), **extra)
        if self.assign is None:
            # Subscribed, then metadata: kafka-python builds the snapshot its leader assigns from only on a metadata
            # update made after the subscription (partitions_for_topic before subscribe left it empty), and a first
            # join from an empty snapshot is followed by a second one at the next update. kafka-python 3.0.12 can
            # lose the end of that second join: when poll() times out while it is in flight, the leader's own
            # assignment has already made need_rejoin() false, so no later poll awaits it and the member stays
            # REBALANCING, refusing commits, until it is closed (its debug log, 3 of 45 loaded runs on fakekafka;
            # the client's code, so Kafka too). topics() asks for metadata after the subscription exists: one
            # join, from the topic's partitions.
            self.consumer.subscribe([self.topic])
            self.consumer.topics()
        else:
            self.consumer.assign([TopicPartition(self.topic, p) for p in self.assign])

    def _error(self, exc: BaseException) -> ClientError | None:
        try:
            return client_error(exc)
        except BaseException:  # noqa: BLE001
            return None

    def _poll(self) -> list[Rec]:
        records = self.consumer.poll(timeout_ms=int(self.POLL_S * 1000))
        finish_a_join_left_in_flight(self.consumer)
        return [library_record(r) for rs in records.values() for r in rs]

    def _assigned(self) -> list[TP]:
        return [(tp.topic, tp.partition) for tp in self.consumer.assignment()]

    def _commit(self, offsets: dict[TP, tuple[int, str | None]]) -> None:
        try:
            self.consumer.commit({TopicPartition(t, p): _offset_and_metadata(o, m or "")
                                  for (t, p), (o, m) in offsets.items()})
        except kerrors.KafkaError as e:
            raise client_error(e) from None

    def _position(self, tp: TP) -> int | None:
        if _V2:  # 2.0.2's position() has no timeout and blocks until it has one; 3.x asks for none
            return self.consumer._subscription.assignment[TopicPartition(*tp)].position
        return self.consumer.position(TopicPartition(*tp), timeout_ms=0)

    def _seek(self, tp: TP, offset: int) -> None:
        self.consumer.seek(TopicPartition(*tp), offset)

    def _pause(self, tps: list[TP], paused: bool) -> None:
        parts = [TopicPartition(*tp) for tp in tps]
        self.consumer.pause(*parts) if paused else self.consumer.resume(*parts)

    def _close(self) -> None:
        self.consumer.close(autocommit=False)
