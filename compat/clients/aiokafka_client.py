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
from aiokafka.admin import AIOKafkaAdminClient, NewTopic
from aiokafka.structs import OffsetAndMetadata

from compat.clients.base import (
    TP,
    ClientError,
    LibraryClient,
    Member,
    PollingMember,
    Rec,
    Timing,
    error_name,
    library_error,
    library_record,
)

__all__ = ["AiokafkaClient"]

T = TypeVar("T")

_LOCAL = {
    aerrors.KafkaTimeoutError: "TIMEOUT",
    aerrors.NoOffsetForPartitionError: "NO_OFFSET_FOR_PARTITION",
    asyncio.TimeoutError: "TIMEOUT",
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
        except aerrors.KafkaError as e:
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
                max_request_bytes: int | None = None) -> list[tuple[int, int]]:
        async def go() -> list[tuple[int, int]]:
            producer = AIOKafkaProducer(
                bootstrap_servers=self.bootstrap, compression_type=None if codec == "none" else codec,
                linger_ms=60_000 if one_batch else 0, max_batch_size=4 << 20 if one_batch else 16384,
                max_request_size=max_request_bytes or 1048576, request_timeout_ms=int(self.timing.op_s * 1000),
                metadata_max_age_ms=300_000)
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
                for f in futures:
                    m = await f
                    out.append((m.partition, m.offset))
                return out
            except (TimeoutError, aerrors.KafkaError) as e:
                raise client_error(e) from None
            finally:
                await producer.stop()
        return self.run(go())

    def _consumer(self, **config: Any) -> AIOKafkaConsumer:
        return AIOKafkaConsumer(**{"bootstrap_servers": self.bootstrap, "group_id": None,
                                   "enable_auto_commit": False, "auto_offset_reset": "earliest",
                                   "request_timeout_ms": int(max(self.timing.op_s, 31) * 1000), **config})

    def fetch(self, topic: str, partition: int, offset: int, count: int, reset: str = "earliest") -> list[Rec]:
        async def go() -> list[Rec]:
            consumer = self._consumer(auto_offset_reset=reset)
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

    def list_offsets(self, topic: str, partition: int, spec: str | int) -> int | None:
        async def go() -> int | None:
            consumer = self._consumer()
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
                     configs: dict[str, str] | None = None) -> None:
        async def go() -> Any:
            admin = await self._admin()
            try:
                return await admin.create_topics([NewTopic(topic, partitions, replication_factor,
                                                            topic_configs=configs or {})])
            finally:
                await admin.close()
        response = self.run(go())
        for t in response.topic_errors:
            code = t[1]
            if code:
                raise ClientError(error_name(code), "CreateTopicsResponse", str(t[2:] if len(t) > 2 else ""))

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

    def _member(self, group: str, topic: str, assign: list[int] | None, offset_reset: str) -> Member:
        return _Member(self, group, topic, assign, offset_reset)


class _Member(PollingMember):
    def __init__(self, client: AiokafkaClient, group: str, topic: str, assign: list[int] | None,
                 offset_reset: str) -> None:
        self.client, self.group, self.topic, self.assign, self.offset_reset = client, group, topic, assign, offset_reset
        super().__init__(client.timing, f"{client.name}-{group}")

    def _open(self) -> None:
        t = self.timing

        async def go() -> AIOKafkaConsumer:
            c = self.client._consumer(group_id=self.group, auto_offset_reset=self.offset_reset,
                                      session_timeout_ms=t.session_timeout_ms, heartbeat_interval_ms=t.heartbeat_ms)
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
        async def go() -> int:
            return await asyncio.wait_for(self.consumer.position(TopicPartition(*tp)), 0.5)
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

    def _close(self) -> None:
        self.client.run(self.consumer.stop())
