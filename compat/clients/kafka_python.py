"""kafka-python (pure Python), in the harness process. Members poll on their own thread (PollingMember)."""

from __future__ import annotations

import time
from typing import Any

from kafka import KafkaConsumer, KafkaProducer, TopicPartition
from kafka import errors as kerrors
from kafka.admin import KafkaAdminClient, NewTopic
from kafka.structs import OffsetAndMetadata

from compat.clients.base import (
    TP,
    ClientError,
    LibraryClient,
    Member,
    PollingMember,
    Rec,
    Timing,
    Unsupported,
    error_name,
    library_error,
    library_record,
)

__all__ = ["KafkaPythonClient"]

_LOCAL = {
    kerrors.KafkaTimeoutError: "TIMEOUT",
    kerrors.NoOffsetForPartitionError: "NO_OFFSET_FOR_PARTITION",
}


def client_error(e: BaseException) -> ClientError:
    return library_error(e, _LOCAL, kerrors.KafkaError)


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
                max_request_bytes: int | None = None) -> list[tuple[int, int]]:
        if any(v is None for r in recs for _, v in r.headers):
            raise Unsupported("kafka-python's producer takes only bytes header values (no null)")
        config: dict[str, Any] = dict(
            bootstrap_servers=self.bootstrap, compression_type=None if codec == "none" else codec,
            linger_ms=60_000 if one_batch else 0, batch_size=4 << 20 if one_batch else 16384, retries=0,
            max_block_ms=self.timing.metadata_ms, request_timeout_ms=int(self.timing.op_s * 1000))
        if max_request_bytes:
            config["max_request_size"] = max_request_bytes
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
        finally:
            producer.close(timeout=2)

    def _consumer(self, **config: Any) -> KafkaConsumer:
        return KafkaConsumer(**{"bootstrap_servers": self.bootstrap, "group_id": None, "enable_auto_commit": False,
                                "auto_offset_reset": "earliest",
                                "request_timeout_ms": int(max(self.timing.op_s, 31) * 1000), **config})

    def fetch(self, topic: str, partition: int, offset: int, count: int, reset: str = "earliest") -> list[Rec]:
        consumer = self._consumer(auto_offset_reset=reset)
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

    def list_offsets(self, topic: str, partition: int, spec: str | int) -> int | None:
        consumer = self._consumer()
        tp = TopicPartition(topic, partition)
        try:
            if spec == "earliest":
                return consumer.beginning_offsets([tp])[tp]
            if spec == "latest":
                return consumer.end_offsets([tp])[tp]
            found = consumer.offsets_for_times({tp: spec})[tp]
            return None if found is None else found.offset
        except kerrors.KafkaError as e:
            raise client_error(e) from None
        finally:
            consumer.close(autocommit=False)

    def create_topic(self, topic: str, partitions: int, replication_factor: int = 1,
                     configs: dict[str, str] | None = None) -> None:
        try:
            self.admin().create_topics([NewTopic(topic, partitions, replication_factor,
                                                 topic_configs=configs or {})])
        except kerrors.KafkaError as e:
            raise client_error(e) from None

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

    def _member(self, group: str, topic: str, assign: list[int] | None, offset_reset: str) -> Member:
        return _Member(self, group, topic, assign, offset_reset)


class _Member(PollingMember):
    def __init__(self, client: KafkaPythonClient, group: str, topic: str, assign: list[int] | None,
                 offset_reset: str) -> None:
        self.client, self.group, self.topic, self.assign, self.offset_reset = client, group, topic, assign, offset_reset
        super().__init__(client.timing, f"{client.name}-{group}")

    def _open(self) -> None:
        t = self.timing
        self.consumer = self.client._consumer(
            group_id=self.group, auto_offset_reset=self.offset_reset, session_timeout_ms=t.session_timeout_ms,
            heartbeat_interval_ms=t.heartbeat_ms)
        if self.assign is None:
            # Metadata first: a member that joins before it knows the topic's partitions must rejoin at once,
            # and kafka-python 3.0.12 now and then loses the end of that second join (SyncGroup answered
            # without error, the consumer never leaves REBALANCING, stops heartbeating and is expired; seen
            # in about 1 of 25 runs on fakekafka, a client race, not a broker answer). Apps that call
            # partitions_for_topic first never see it.
            self.consumer.partitions_for_topic(self.topic)
            self.consumer.subscribe([self.topic])
        else:
            self.consumer.assign([TopicPartition(self.topic, p) for p in self.assign])

    def _error(self, exc: BaseException) -> ClientError | None:
        try:
            return client_error(exc)
        except BaseException:  # noqa: BLE001
            return None

    def _poll(self) -> list[Rec]:
        return [library_record(r) for rs in self.consumer.poll(timeout_ms=int(self.POLL_S * 1000)).values() for r in rs]

    def _assigned(self) -> list[TP]:
        return [(tp.topic, tp.partition) for tp in self.consumer.assignment()]

    def _commit(self, offsets: dict[TP, tuple[int, str | None]]) -> None:
        try:
            self.consumer.commit({TopicPartition(t, p): OffsetAndMetadata(o, m or "", -1)
                                  for (t, p), (o, m) in offsets.items()})
        except kerrors.KafkaError as e:
            raise client_error(e) from None

    def _position(self, tp: TP) -> int | None:
        return self.consumer.position(TopicPartition(*tp), timeout_ms=0)

    def _seek(self, tp: TP, offset: int) -> None:
        self.consumer.seek(TopicPartition(*tp), offset)

    def _close(self) -> None:
        self.consumer.close(autocommit=False)
