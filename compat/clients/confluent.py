"""confluent-kafka (librdkafka) in the harness process. Members poll on their own thread (PollingMember);
librdkafka runs the group protocol on its own threads anyway."""

from __future__ import annotations

import collections
import logging
import time
from typing import Any

from confluent_kafka import OFFSET_INVALID, Consumer, KafkaError, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, ConfigResource, NewPartitions, NewTopic

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
    needs,
)
from compat.clients.library import LibraryClient

__all__ = ["ConfluentClient", "kafka_error"]

_LOCAL = {
    KafkaError._MSG_TIMED_OUT: "TIMEOUT",
    KafkaError._TIMED_OUT: "TIMEOUT",
    KafkaError._UNKNOWN_TOPIC: "UNKNOWN_TOPIC_OR_PARTITION",
    KafkaError._UNKNOWN_PARTITION: "UNKNOWN_TOPIC_OR_PARTITION",
    KafkaError._AUTO_OFFSET_RESET: "NO_OFFSET_FOR_PARTITION",
    KafkaError._NO_OFFSET: "NO_OFFSET_FOR_PARTITION",
    KafkaError._FENCED: "PRODUCER_FENCED",  # librdkafka's own code for PRODUCER_FENCED / INVALID_PRODUCER_EPOCH
    KafkaError._STATE: "CLIENT_REJECTED",  # a transactional call in the wrong state, refused locally
}
QUIET = {"log_level": 2}  # librdkafka's critical lines only: brokers stopped under a client are expected


def kafka_error(err: KafkaError) -> ClientError:
    code = err.code()
    if code == KafkaError._FATAL:  # librdkafka wraps the broker error that made it fatal: name that one
        from compat.clients.kcat import error_from_text
        inner = error_from_text(err.str())
        if inner is not None:
            return ClientError(inner.code, err.name(), err.str())
    name = _LOCAL.get(code) or (error_name(code) if code >= -1 else f"CLIENT:{err.name()}")
    return ClientError(name, err.name(), err.str())


def _rec(m: Any) -> Rec:
    ts_type, ts = m.timestamp()
    return Rec(m.key(), m.value(), list(m.headers() or []), m.partition(), m.offset(), ts if ts_type else None)


class _Lines(logging.Handler):
    """What librdkafka logged through a client's logger, for a failing cell's report: the last `keep`
    lines (a stalled KIP-848 cell logs a minute of steady heartbeats; the lines that tell why come first)."""

    def __init__(self, keep: int = 20_000) -> None:
        super().__init__()
        self.lines: collections.deque[str] = collections.deque(maxlen=keep)
        self.count = 0

    def emit(self, record: logging.LogRecord) -> None:
        message = record.getMessage()
        if "received op GET_ASSIGNMENT" in message:  # the harness asking for the assignment, ten times a second
            return
        self.lines.append(f"{time.strftime('%H:%M:%S', time.localtime(record.created))}.{int(record.msecs):03d} "
                          f"{message}")
        self.count += 1

    def since(self, mark: int, head: int = 300, tail: int = 400) -> str:
        """The lines logged from `mark` on: the first `head` and the last `tail` of them."""
        new = min(self.count - mark, len(self.lines))
        if new <= 0:
            return ""
        lines = list(self.lines)[-new:]
        lost = self.count - mark - new
        if new > head + tail:
            lines[head:-tail] = [f"... {new - head - tail} lines left out ..."]
        return (f"... {lost} lines no longer kept ...\n" if lost > 0 else "") + "\n".join(lines)


class ConfluentClient(LibraryClient):
    name = "confluent-kafka"

    def __init__(self, bootstrap: str, timing: Timing) -> None:
        super().__init__(bootstrap, timing)
        self._admin: AdminClient | None = None
        # KIP-848 members log librdkafka's group debug here (its own thread-safe queue, served by their polls): a
        # member that never finished a revocation on Kafka left nothing to read
        self.logger = logging.getLogger(f"compat.confluent-kafka.{id(self)}")
        self.logger.propagate = False
        self.logger.setLevel(logging.DEBUG)
        self._lines = _Lines()
        self.logger.addHandler(self._lines)

    def log_mark(self) -> int:
        return self._lines.count

    def log_since(self, mark: int) -> str:
        return self._lines.since(mark)

    def admin(self) -> AdminClient:
        if self._admin is None:
            self._admin = AdminClient({"bootstrap.servers": self.bootstrap, **QUIET})
        return self._admin

    def produce(self, topic: str, recs: list[Rec], *, codec: str = "none", one_batch: bool = False,
                max_request_bytes: int | None = None, acks: int | None = None,
                idempotent: bool | None = None) -> list[tuple[int, int]]:
        config: dict[str, Any] = {
            "bootstrap.servers": self.bootstrap, "compression.type": codec, "retries": 0,
            "linger.ms": 1000 if one_batch else 0, "message.timeout.ms": int(self.timing.op_s * 1000),
            "topic.metadata.propagation.max.ms": self.timing.metadata_ms, **QUIET}
        if one_batch:
            config["batch.num.messages"] = len(recs)
        if max_request_bytes:
            config["message.max.bytes"] = max_request_bytes
        if acks is not None:
            config["acks"] = acks
        if idempotent is not None:
            config["enable.idempotence"] = idempotent
            if idempotent:
                config.pop("retries")
        producer = Producer(config)
        reports: dict[int, tuple[KafkaError | None, Any]] = {}
        for i, r in enumerate(recs):
            kw: dict[str, Any] = {}
            if r.partition is not None:
                kw["partition"] = r.partition
            if r.timestamp is not None:
                kw["timestamp"] = r.timestamp
            try:
                producer.produce(topic, key=r.key, value=r.value, headers=list(r.headers),
                                 on_delivery=lambda err, msg, i=i: reports.__setitem__(i, (err, msg)), **kw)
            except KafkaException as e:  # refused at once when metadata came first; else in the delivery report
                raise kafka_error(e.args[0]) from e
        producer.flush(self.timing.op_s + 5)
        producer.purge()
        out = []
        for i in range(len(recs)):
            if i not in reports:
                raise ClientError("TIMEOUT", "flush", f"no delivery report for record {i}")
            err, msg = reports[i]
            if err is not None:
                raise kafka_error(err)
            out.append((msg.partition(), msg.offset()))
        return out

    def _consumer(self, **config: Any) -> Consumer:
        return Consumer({"bootstrap.servers": self.bootstrap, "group.id": "compat-unused",
                         "enable.auto.commit": False, "enable.partition.eof": False, **QUIET, **config})

    def fetch(self, topic: str, partition: int, offset: int, count: int, reset: str = "earliest",
              isolation: str | None = None) -> list[Rec]:
        consumer = self._consumer(**{"auto.offset.reset": {"none": "error"}.get(reset, reset)},
                                  **_isolation(isolation))
        try:
            consumer.assign([TopicPartition(topic, partition, offset)])
            out: list[Rec] = []
            deadline = time.monotonic() + self.timing.fetch_s
            while len(out) < count and time.monotonic() < deadline:
                for m in consumer.consume(count - len(out), timeout=0.1):
                    if m.error() is not None:
                        raise kafka_error(m.error())
                    out.append(_rec(m))
            return out
        finally:
            consumer.close()

    def list_offsets(self, topic: str, partition: int, spec: str | int, isolation: str | None = None) -> int | None:
        consumer = self._consumer(**_isolation(isolation))
        try:
            if spec in ("earliest", "latest"):
                low, high = consumer.get_watermark_offsets(TopicPartition(topic, partition),
                                                           timeout=self.timing.op_s, cached=False)
                return low if spec == "earliest" else high
            if spec == "max_timestamp":
                lookup = needs(self.admin(), "list_offsets", "admin list_offsets")  # 2.3+ only
                from confluent_kafka.admin import OffsetSpec
                tp = TopicPartition(topic, partition)
                futures = lookup({tp: OffsetSpec.max_timestamp()}, request_timeout=self.timing.op_s)
                got = next(iter(futures.values())).result(self.timing.op_s)
                return None if got.offset < 0 else got.offset
            [tp] = consumer.offsets_for_times([TopicPartition(topic, partition, spec)], timeout=self.timing.op_s)
            if tp.error is not None:
                raise kafka_error(tp.error)
            return None if tp.offset < 0 else tp.offset
        except KafkaException as e:
            raise kafka_error(e.args[0]) from None
        finally:
            consumer.close()

    def create_topic(self, topic: str, partitions: int, replication_factor: int = 1,
                     configs: dict[str, str] | None = None, *, validate_only: bool = False) -> None:
        try:
            futures = self.admin().create_topics([NewTopic(topic, partitions, replication_factor,
                                                           config=configs or {})], operation_timeout=self.timing.op_s,
                                                 validate_only=validate_only)
        except ValueError as e:  # librdkafka checks num_partitions (-1, or 1..100000) before sending
            raise ClientError("CLIENT_REJECTED", type(e).__name__, str(e)) from None
        self._result(futures[topic])

    def _result(self, future: Any) -> Any:
        try:
            return future.result(self.timing.op_s + 5)
        except KafkaException as e:
            raise kafka_error(e.args[0]) from None

    def _call_admin(self, method: str, *args: Any, **kw: Any) -> Any:
        try:
            return needs(self.admin(), method, method.replace("_", " "))(*args, **kw)
        except KafkaException as e:
            raise kafka_error(e.args[0]) from None
        except ValueError as e:
            raise ClientError("CLIENT_REJECTED", type(e).__name__, str(e)) from None

    def delete_topic(self, topic: str) -> None:
        self._result(self._call_admin("delete_topics", [topic], operation_timeout=self.timing.op_s)[topic])

    def create_partitions(self, topic: str, count: int, *, validate_only: bool = False) -> None:
        self._result(self._call_admin("create_partitions", [NewPartitions(topic, count)],
                                 validate_only=validate_only)[topic])

    def describe_configs(self, resource: str, name: str, keys: list[str]) -> dict[str, dict[str, Any]]:
        res = ConfigResource("topic" if resource == "topic" else "broker", name)
        [future] = self._call_admin("describe_configs", [res], request_timeout=self.timing.op_s).values()
        entries = self._result(future)
        return {k: {"value": e.value, "source": config_source(e.source), "read_only": e.is_read_only,
                    "sensitive": e.is_sensitive,
                    "synonyms": [[y.name, y.value, config_source(y.source)] for y in e.synonyms.values()]}
                for k, e in entries.items() if k in keys}

    def delete_records(self, topic: str, partition: int, before: int) -> int:
        futures = self._call_admin("delete_records", [TopicPartition(topic, partition, before)],
                              request_timeout=self.timing.op_s)
        return self._result(next(iter(futures.values()))).low_watermark

    def describe_group(self, group: str) -> dict[str, Any]:
        [future] = self._call_admin("describe_consumer_groups", [group], request_timeout=self.timing.op_s).values()
        g = self._result(future)
        members = [(sorted(tp.partition for tp in m.assignment.topic_partitions), m.group_instance_id)
                   for m in g.members]
        protocol_type = "" if g.is_simple_consumer_group else "consumer"
        return group_description(g.state, protocol_type, g.partition_assignor, members)

    def list_groups(self) -> dict[str, dict[str, Any]]:
        got = self._result(self._call_admin("list_consumer_groups", request_timeout=self.timing.op_s))
        return {g.group_id: {"protocol_type": "" if g.is_simple_consumer_group else "consumer",
                             "state": group_description(g.state, "", "", [])["state"]} for g in got.valid}

    def delete_group(self, group: str) -> None:
        [future] = self._call_admin("delete_consumer_groups", [group], request_timeout=self.timing.op_s).values()
        self._result(future)

    def partition_count(self, topic: str) -> int:
        try:
            md = self.admin().list_topics(topic, timeout=self.timing.op_s)
        except KafkaException as e:
            raise kafka_error(e.args[0]) from None
        t = md.topics[topic]
        if t.error is not None:
            raise kafka_error(t.error)
        return len(t.partitions)

    def committed(self, group: str, topic: str, partitions: int) -> dict[int, tuple[int, str | None]]:
        consumer = self._consumer(**{"group.id": group})
        try:
            got = consumer.committed([TopicPartition(topic, p) for p in range(partitions)], timeout=self.timing.op_s)
        except KafkaException as e:
            raise kafka_error(e.args[0]) from None
        finally:
            consumer.close()
        # confluent-kafka 1.x has no commit metadata: None, as for a commit without it
        return {tp.partition: (tp.offset, getattr(tp, "metadata", None)) for tp in got if tp.offset >= 0}

    def _member(self, group: str, topic: str, assign: list[int] | None, offset_reset: str,
                options: MemberOptions) -> Member:
        return _Member(self, group, topic, assign, offset_reset, options)

    def transactional(self, transactional_id: str, *, timeout_ms: int | None = None) -> TxnProducer:
        return _Txn(self, transactional_id, timeout_ms)


def _isolation(isolation: str | None) -> dict[str, Any]:
    return {} if isolation is None else {"isolation.level": isolation}


class _Txn(TxnProducer):
    """Producer with transactional.id; the group metadata for send_offsets_to_transaction comes from a
    consumer with the group's id that never joins (generation -1, no member id): librdkafka's only way
    to name a group."""

    def __init__(self, client: ConfluentClient, transactional_id: str, timeout_ms: int | None) -> None:
        self.client = client
        self.timeout = client.timing.op_s
        extra = {} if timeout_ms is None else {"transaction.timeout.ms": timeout_ms}
        self.producer = Producer({"bootstrap.servers": client.bootstrap, "transactional.id": transactional_id,
                                  "linger.ms": 0, "message.timeout.ms": int(self.timeout * 1000), **QUIET, **extra})
        self._call(self.producer.init_transactions, self.timeout)

    def _call(self, fn: Any, *args: Any) -> Any:
        try:
            return fn(*args)
        except KafkaException as e:
            raise kafka_error(e.args[0]) from None

    def begin(self) -> None:
        self._call(self.producer.begin_transaction)

    def send(self, topic: str, recs: list[Rec]) -> list[tuple[int, int]]:
        reports: dict[int, tuple[KafkaError | None, Any]] = {}
        for i, r in enumerate(recs):
            kw = {} if r.partition is None else {"partition": r.partition}
            try:
                self.producer.produce(topic, key=r.key, value=r.value, headers=list(r.headers),
                                      on_delivery=lambda err, msg, i=i: reports.__setitem__(i, (err, msg)), **kw)
            except KafkaException as e:
                raise kafka_error(e.args[0]) from None
        self.producer.flush(self.timeout + 5)
        out = []
        for i in range(len(recs)):
            if i not in reports:
                raise ClientError("TIMEOUT", "flush", f"no delivery report for record {i}")
            err, msg = reports[i]
            if err is not None:
                raise kafka_error(err)
            out.append((msg.partition(), msg.offset()))
        return out

    def send_offsets(self, group: str, offsets: dict[TP, int]) -> None:
        consumer = self.client._consumer(**{"group.id": group})
        try:
            metadata = consumer.consumer_group_metadata()
        finally:
            consumer.close()
        self._call(self.producer.send_offsets_to_transaction,
                   [TopicPartition(t, p, o) for (t, p), o in offsets.items()], metadata, self.timeout)

    def commit(self) -> None:
        self._call(self.producer.commit_transaction, self.timeout)

    def abort(self) -> None:
        self._call(self.producer.abort_transaction, self.timeout)

    def close(self) -> None:
        self.producer.purge()
        self.producer.flush(0)


class _Member(PollingMember):
    def __init__(self, client: ConfluentClient, group: str, topic: str, assign: list[int] | None,
                 offset_reset: str, options: MemberOptions) -> None:
        self.client, self.group, self.topic, self.assign = client, group, topic, assign
        self.options = options
        self.offset_reset = {"none": "error"}.get(offset_reset, offset_reset)
        self._eof: dict[TP, int] = {}
        super().__init__(client.timing, f"{client.name}-{group}")

    def _open(self) -> None:
        t = self.timing
        session = self.options.session_timeout_ms
        extra = {"group.instance.id": self.options.instance_id} if self.options.instance_id is not None else {}
        if self.options.group_protocol == "consumer":  # the broker sets the session and heartbeat (KIP-848)
            timing = {"group.protocol": "consumer", "debug": "cgrp", "log_level": 7, "logger": self.client.logger}
        else:
            timing = {"session.timeout.ms": session,
                      "heartbeat.interval.ms": min(t.heartbeat_ms, max(1, session // 3))}
        self.consumer = self.client._consumer(**{
            "group.id": self.group, "auto.offset.reset": self.offset_reset, **timing,
            "enable.partition.eof": True, **extra})
        if self.assign is None:
            self.consumer.subscribe([self.topic])
        else:
            self.consumer.assign([TopicPartition(self.topic, p) for p in self.assign])

    def _poll(self) -> list[Rec]:
        out = []
        for m in self.consumer.consume(100, timeout=self.POLL_S):
            if m.error() is not None and m.error().code() == KafkaError._PARTITION_EOF:
                self._eof[(m.topic(), m.partition())] = m.offset()
            elif m.error() is not None:
                raise kafka_error(m.error())
            else:
                self._eof.pop((m.topic(), m.partition()), None)
                out.append(_rec(m))
        return out

    def _assigned(self) -> list[TP]:
        return [(tp.topic, tp.partition) for tp in self.consumer.assignment()]

    def _commit(self, offsets: dict[TP, tuple[int, str | None]]) -> None:
        tps = []
        for (t, p), (o, m) in offsets.items():
            tp = TopicPartition(t, p, o)
            if m is not None:
                if not hasattr(tp, "metadata"):
                    raise Unsupported("confluent-kafka 1.x cannot commit metadata (2.0 added it)")
                tp = TopicPartition(t, p, o, metadata=m)
            tps.append(tp)
        try:
            for tp in self.consumer.commit(offsets=tps, asynchronous=False) or []:
                if tp.error is not None:
                    raise kafka_error(tp.error)
        except KafkaException as e:
            raise kafka_error(e.args[0]) from None

    def _position(self, tp: TP) -> int | None:
        """librdkafka's position() is the last consumed offset + 1 (invalid before any message); until then
        the partition-EOF event (enable.partition.eof) tells where the consumer stands."""
        [got] = self.consumer.position([TopicPartition(*tp)])
        if got.offset == OFFSET_INVALID or got.offset < 0:
            return self._eof.get(tp)
        return got.offset

    def _seek(self, tp: TP, offset: int) -> None:
        if self.assign is not None:  # a manual assignment: assign again from there (seek needs a fetcher)
            self.consumer.assign([TopicPartition(t, p, offset if (t, p) == tp else -1000)
                                  for t, p in self._assigned()])
        else:
            self.consumer.seek(TopicPartition(tp[0], tp[1], offset))

    def _pause(self, tps: list[TP], paused: bool) -> None:
        parts = [TopicPartition(*tp) for tp in tps]
        self.consumer.pause(parts) if paused else self.consumer.resume(parts)

    def _close(self) -> None:
        self.consumer.close()
