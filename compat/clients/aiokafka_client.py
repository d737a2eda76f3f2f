"""aiokafka (asyncio), in the harness process: one event loop on a thread of its own per Client; every call
runs a coroutine there and waits for it. Members poll from their own thread (PollingMember) through the
same loop, where aiokafka's heartbeats run by themselves."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Coroutine
from typing import Any, TypeVar

from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition
from aiokafka import errors as aerrors
from aiokafka.admin import AIOKafkaAdminClient, NewPartitions, NewTopic
from aiokafka.admin.config_resource import ConfigResource, ConfigResourceType
from aiokafka.structs import OffsetAndMetadata

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
)
from compat.clients.library import LibraryClient

__all__ = ["AiokafkaClient"]

T = TypeVar("T")

_LOCAL = {
    aerrors.KafkaTimeoutError: "TIMEOUT",
    aerrors.NoOffsetForPartitionError: "NO_OFFSET_FOR_PARTITION",
    asyncio.TimeoutError: "TIMEOUT",
    aerrors.IllegalOperation: "CLIENT_REJECTED",  # a transactional call in the wrong state, refused locally
    aerrors.ProducerFenced: "PRODUCER_FENCED",  # aiokafka's class for it has no errno
}


def client_error(e: BaseException) -> ClientError:
    return library_error(e, _LOCAL, aerrors.KafkaError)


class AiokafkaClient(LibraryClient):
    name = "aiokafka"

    def __init__(self, bootstrap: str, timing: Timing) -> None:
        super().__init__(bootstrap, timing)
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self.loop.run_forever, name="aiokafka-loop", daemon=True)
        self._thread.start()

    def run(self, coro: Coroutine[Any, Any, T], timeout: float | None = None) -> T:
        fut = asyncio.run_coroutine_threadsafe(coro, self.loop)
        try:
            return fut.result(timeout or self.timing.op_s + self.timing.fetch_s + 10)
        except (aerrors.KafkaError, aerrors.IllegalOperation) as e:
            raise client_error(e) from None

    def close(self) -> None:
        async def cancel_all() -> None:
            tasks = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
            for t in tasks:
                t.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
        try:
            asyncio.run_coroutine_threadsafe(cancel_all(), self.loop).result(5)
        except Exception:  # noqa: BLE001, S110 - closing anyway
            pass
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join(5)

    async def _admin(self) -> AIOKafkaAdminClient:
        admin = AIOKafkaAdminClient(bootstrap_servers=self.bootstrap, request_timeout_ms=int(self.timing.op_s * 1000))
        await admin.start()
        return admin

    def produce(self, topic: str, recs: list[Rec], *, codec: str = "none", one_batch: bool = False,
                max_request_bytes: int | None = None, acks: int | None = None,
                idempotent: bool | None = None) -> list[tuple[int, int]]:
        extra: dict[str, Any] = {}
        if acks is not None:
            extra["acks"] = "all" if acks == -1 else acks
        if idempotent is not None:
            extra["enable_idempotence"] = idempotent

        async def go() -> list[tuple[int, int]]:
            producer = AIOKafkaProducer(
                bootstrap_servers=self.bootstrap, compression_type=None if codec == "none" else codec,
                # linger 0 for one_batch too: send_batch hands over a closed batch, which aiokafka before 0.14
                # (aiokafka-0.13.0) still held back for the whole linger_ms
                linger_ms=0, max_batch_size=4 << 20 if one_batch else 16384,
                max_request_size=max_request_bytes or 1048576, request_timeout_ms=int(self.timing.op_s * 1000),
                metadata_max_age_ms=300_000, **extra)
            await producer.start()
            try:
                if one_batch:  # aiokafka's own way to send records as one batch
                    batch = producer.create_batch()
                    for r in recs:
                        if batch.append(key=r.key, value=r.value, timestamp=r.timestamp,
                                        headers=list(r.headers)) is None:
                            raise ClientError("CLIENT:BatchFull", "BatchBuilder", "records do not fit one batch")
                    batch.close()
                    fut = await producer.send_batch(batch, topic, partition=recs[0].partition or 0)
                    m = await fut
                    return [(m.partition, m.offset + i) for i in range(len(recs))]
                futures = []
                for r in recs:
                    send = producer.send(topic, key=r.key, value=r.value, headers=list(r.headers),
                                         partition=r.partition, timestamp_ms=r.timestamp)
                    futures.append(await asyncio.wait_for(send, self.timing.metadata_ms / 1000))
                out = []
                for f, r in zip(futures, recs, strict=True):
                    m = await f
                    out.append((r.partition, None) if m is None else (m.partition, m.offset))  # acks=0: None
                return out
            except (TimeoutError, aerrors.KafkaError) as e:
                raise client_error(e) from None
            except (ValueError, AssertionError) as e:  # checked before sending (an unknown partition)
                raise ClientError("CLIENT_REJECTED", type(e).__name__, str(e)) from None
            finally:
                await producer.stop()
        return self.run(go())

    def _consumer(self, **config: Any) -> AIOKafkaConsumer:
        return AIOKafkaConsumer(**{"bootstrap_servers": self.bootstrap, "group_id": None,
                                   "enable_auto_commit": False, "auto_offset_reset": "earliest",
                                   "request_timeout_ms": int(max(self.timing.op_s, 31) * 1000), **config})

    def fetch(self, topic: str, partition: int, offset: int, count: int, reset: str = "earliest",
              isolation: str | None = None) -> list[Rec]:
        async def go() -> list[Rec]:
            consumer = self._consumer(auto_offset_reset=reset, **_isolation(isolation))
            await consumer.start()
            try:
                tp = TopicPartition(topic, partition)
                consumer.assign([tp])
                consumer.seek(tp, offset)
                out: list[Rec] = []
                deadline = time.monotonic() + self.timing.fetch_s
                while len(out) < count and time.monotonic() < deadline:
                    for records in (await consumer.getmany(timeout_ms=100)).values():
                        out.extend(library_record(r) for r in records)
                return out[:count]
            finally:
                await consumer.stop()
        return self.run(go())

    def list_offsets(self, topic: str, partition: int, spec: str | int, isolation: str | None = None) -> int | None:
        if spec == "max_timestamp":
            raise Unsupported("aiokafka has no max-timestamp lookup (OffsetSpec.MAX_TIMESTAMP)")

        async def go() -> int | None:
            consumer = self._consumer(**_isolation(isolation))
            await consumer.start()
            tp = TopicPartition(topic, partition)
            try:
                if spec == "earliest":
                    return (await consumer.beginning_offsets([tp]))[tp]
                if spec == "latest":
                    return (await consumer.end_offsets([tp]))[tp]
                found = (await consumer.offsets_for_times({tp: spec}))[tp]
                return None if found is None else found.offset
            finally:
                await consumer.stop()
        return self.run(go())

    def create_topic(self, topic: str, partitions: int, replication_factor: int = 1,
                     configs: dict[str, str] | None = None, *, validate_only: bool = False) -> None:
        response = self._admin_call(lambda admin: admin.create_topics(
            [NewTopic(topic, partitions, replication_factor, topic_configs=configs or {})],
            validate_only=validate_only))
        for t in response.topic_errors:
            code = t[1]
            if code:
                raise ClientError(error_name(code), "CreateTopicsResponse", str(t[2:] if len(t) > 2 else ""))

    def _admin_call(self, fn: Any) -> Any:
        async def go() -> Any:
            admin = await self._admin()
            try:
                return await fn(admin)
            finally:
                await admin.close()
        return self.run(go())

    def delete_topic(self, topic: str) -> None:
        response = self._admin_call(lambda admin: admin.delete_topics([topic]))
        for t in response.topic_error_codes:
            if t[1]:
                raise ClientError(error_name(t[1]), "DeleteTopicsResponse", "")

    def create_partitions(self, topic: str, count: int, *, validate_only: bool = False) -> None:
        response = self._admin_call(lambda admin: admin.create_partitions({topic: NewPartitions(count)},
                                                                         validate_only=validate_only))
        for t in response.topic_errors:
            if t[1]:
                raise ClientError(error_name(t[1]), "CreatePartitionsResponse", str(t[2]))

    def describe_configs(self, resource: str, name: str, keys: list[str]) -> dict[str, dict[str, Any]]:
        kind = ConfigResourceType.TOPIC if resource == "topic" else ConfigResourceType.BROKER
        responses = self._admin_call(lambda admin: admin.describe_configs(
            [ConfigResource(kind, name, configs=dict.fromkeys(keys))], include_synonyms=True))
        out: dict[str, dict[str, Any]] = {}
        for response in responses:
            for r in response.resources:
                if r[0]:
                    raise ClientError(error_name(r[0]), "DescribeConfigsResponse", str(r[1]))
                for e in r[4]:
                    synonyms = [[y[0], y[1], config_source(y[2])] for y in e[5]] if len(e) > 5 else None
                    out[e[0]] = {"value": e[1], "source": config_source(e[3]), "read_only": e[2],
                                 "sensitive": e[4], "synonyms": synonyms}
        return {k: v for k, v in out.items() if k in keys}

    def delete_records(self, topic: str, partition: int, before: int) -> int:
        from aiokafka.admin.records_to_delete import RecordsToDelete
        tp = TopicPartition(topic, partition)
        return self._admin_call(lambda admin: admin.delete_records({tp: RecordsToDelete(before)}))[tp]

    def describe_group(self, group: str) -> dict[str, Any]:
        from aiokafka.protocol.group import MemberAssignment
        [response] = self._admin_call(lambda admin: admin.describe_consumer_groups([group]))
        [g] = response.groups
        if g[0]:
            raise ClientError(error_name(g[0]), "DescribeGroupsResponse", "")
        members = []
        for m in g[5]:
            raw = m[-1]
            parts = [p for _, ps in MemberAssignment.decode(raw).assignment for p in ps] if raw else []
            members.append((parts, m[1] if len(m) > 5 else None))
        return group_description(g[2], g[3], g[4], members)

    def list_groups(self) -> dict[str, dict[str, Any]]:
        return {g[0]: {"protocol_type": g[1], "state": None}
                for g in self._admin_call(lambda admin: admin.list_consumer_groups())}

    def partition_count(self, topic: str) -> int:
        async def go() -> Any:
            admin = await self._admin()
            try:
                return await admin.describe_topics([topic])
            finally:
                await admin.close()
        [t] = self.run(go())
        if t["error_code"]:
            raise ClientError(error_name(t["error_code"]), "MetadataResponse", "")
        return len(t["partitions"])

    def committed(self, group: str, topic: str, partitions: int) -> dict[int, tuple[int, str | None]]:
        async def go() -> dict[Any, Any]:
            admin = await self._admin()
            try:
                return await admin.list_consumer_group_offsets(
                    group, partitions=[TopicPartition(topic, p) for p in range(partitions)])
            finally:
                await admin.close()
        return {tp.partition: (om.offset, om.metadata) for tp, om in self.run(go()).items() if om.offset >= 0}

    def _member(self, group: str, topic: str, assign: list[int] | None, offset_reset: str,
                options: MemberOptions) -> Member:
        return _Member(self, group, topic, assign, offset_reset, options)

    def transactional(self, transactional_id: str, *, timeout_ms: int | None = None) -> TxnProducer:
        return _Txn(self, transactional_id, timeout_ms)


def _isolation(isolation: str | None) -> dict[str, Any]:
    return {} if isolation is None else {"isolation_level": isolation}


class _Txn(TxnProducer):
    """AIOKafkaProducer(transactional_id=...) on the client's loop; start() is initTransactions."""

    def __init__(self, client: AiokafkaClient, transactional_id: str, timeout_ms: int | None) -> None:
        self.client = client
        self.closed = False
        extra = {} if timeout_ms is None else {"transaction_timeout_ms": timeout_ms}

        async def go() -> AIOKafkaProducer:
            producer = AIOKafkaProducer(bootstrap_servers=client.bootstrap, transactional_id=transactional_id,
                                        request_timeout_ms=int(client.timing.op_s * 1000), **extra)
            try:
                await producer.start()
                # start() returns before InitProducerId is answered: wait for the producer id as begin would
                await asyncio.wait_for(producer._txn_manager.wait_for_pid(), client.timing.op_s)
            except BaseException:
                await producer.stop()
                raise
            return producer
        self.producer = client.run(go())

    def _end(self, coro: Any) -> None:
        """A call whose state aiokafka checks with an assert (AssertionError: READY -> COMMITTING_TRANSACTION)."""
        try:
            self.client.run(coro)
        except AssertionError as e:
            raise ClientError("CLIENT_REJECTED", type(e).__name__, str(e)) from None

    def begin(self) -> None:
        self._end(self.producer.begin_transaction())

    def send(self, topic: str, recs: list[Rec]) -> list[tuple[int, int]]:
        async def go() -> list[tuple[int, int]]:
            futures = [await self.producer.send(topic, key=r.key, value=r.value, headers=list(r.headers),
                                                partition=r.partition) for r in recs]
            return [(m.partition, m.offset) for m in [await f for f in futures]]
        return self.client.run(go())

    def send_offsets(self, group: str, offsets: dict[TP, int]) -> None:
        self.client.run(self.producer.send_offsets_to_transaction(
            {TopicPartition(t, p): OffsetAndMetadata(o, "") for (t, p), o in offsets.items()}, group))

    def commit(self) -> None:
        self._end(self.producer.commit_transaction())

    def abort(self) -> None:
        self._end(self.producer.abort_transaction())

    def close(self) -> None:
        if not self.closed:
            self.closed = True
            self.client.run(self.producer.stop())


class _Member(PollingMember):
    def __init__(self, client: AiokafkaClient, group: str, topic: str, assign: list[int] | None,
                 offset_reset: str, options: MemberOptions) -> None:
        self.client, self.group, self.topic, self.assign, self.offset_reset = client, group, topic, assign, offset_reset
        self.options = options
        super().__init__(client.timing, f"{client.name}-{group}")

    def _open(self) -> None:
        t = self.timing
        session = self.options.session_timeout_ms
        extra = {"group_instance_id": self.options.instance_id} if self.options.instance_id is not None else {}

        async def go() -> AIOKafkaConsumer:
            c = self.client._consumer(group_id=self.group, auto_offset_reset=self.offset_reset,
                                      session_timeout_ms=session,
                                      heartbeat_interval_ms=min(t.heartbeat_ms, max(1, session // 3)), **extra)
            await c.start()
            if self.assign is None:
                c.subscribe([self.topic])
            else:
                c.assign([TopicPartition(self.topic, p) for p in self.assign])
            return c
        self.consumer = self.client.run(go())

    def _error(self, exc: BaseException) -> ClientError | None:
        try:
            return client_error(exc)
        except BaseException:  # noqa: BLE001
            return None

    def _poll(self) -> list[Rec]:
        async def go() -> Any:
            return await self.consumer.getmany(timeout_ms=int(self.POLL_S * 1000))
        return [library_record(r) for rs in self.client.run(go()).values() for r in rs]

    def _assigned(self) -> list[TP]:
        return [(tp.topic, tp.partition) for tp in self.consumer.assignment()]

    def _commit(self, offsets: dict[TP, tuple[int, str | None]]) -> None:
        async def go() -> None:
            await self.consumer.commit({TopicPartition(t, p): OffsetAndMetadata(o, m or "")
                                        for (t, p), (o, m) in offsets.items()})
        self.client.run(go())

    def _position(self, tp: TP) -> int | None:
        async def go() -> int | None:
            try:
                return await asyncio.wait_for(self.consumer.position(TopicPartition(*tp)), 0.5)
            except TimeoutError:  # not known yet (the caller asks again): None, as the other clients say
                return None
        try:
            return self.client.run(go())
        except ClientError as e:
            if e.code == "TIMEOUT":
                return None
            raise

    def _seek(self, tp: TP, offset: int) -> None:
        async def go() -> None:
            self.consumer.seek(TopicPartition(*tp), offset)
        self.client.run(go())

    def _pause(self, tps: list[TP], paused: bool) -> None:
        parts = [TopicPartition(*tp) for tp in tps]

        async def go() -> None:
            self.consumer.pause(*parts) if paused else self.consumer.resume(*parts)
        self.client.run(go())

    def _close(self) -> None:
        self.client.run(self.consumer.stop())
