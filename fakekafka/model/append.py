"""Appending to a partition's leader log: a producer's batch validated as Kafka's ReplicaManager and
LogValidator do, and the batches the broker writes itself (coordinators' records, transaction markers)."""

from __future__ import annotations

import struct
from collections.abc import Callable
from dataclasses import dataclass, field

from fakekafka.model.clock import Clock
from fakekafka.model.config import BrokerConfig
from fakekafka.model.events import ClusterEvents
from fakekafka.model.log import StorageError
from fakekafka.model.metadata import Partition, Topic, find_partition
from fakekafka.model.replication import Replication
from fakekafka.model.topic_configs import TopicConfigs
from fakekafka.model.transactions import TransactionCoordinator
from fakekafka.model.validate import Refused, check_batch, split_produced
from fakekafka.wire import ErrorCode
from fakekafka.wire.records import BatchHeader, build_batch, decode_batch, read_header

__all__ = ["AppendResult", "Appender"]


@dataclass(frozen=True, slots=True)
class AppendResult:
    error: ErrorCode = ErrorCode.NONE
    base_offset: int = -1
    log_append_time: int = -1
    log_start_offset: int = -1
    message: str | None = None
    record_errors: list[tuple[int, str]] = field(default_factory=list)
    """(batch index, message) per refused record (Produce v8+ record_errors)."""
    answer_message: bool = False
    """The message goes into the answer even without record errors (Kafka's hasCustomErrorMessage)."""


def _keyless(batch: bytes, partition_name: str, log_start_offset: int) -> AppendResult | None:
    """A compacted topic refuses records without a key (Kafka's LogValidator): INVALID_RECORD with one
    record error per such record, and a message naming the first three; None when every record has one."""
    text = f"Compacted topic cannot accept message without key in topic partition {partition_name}"
    errors = [(i, text) for i, r in enumerate(decode_batch(batch).records) if r.key is None]
    if not errors:
        return None
    shown = ", ".join(f"RecordError(batchIndex={i}, message='{m}')" for i, m in errors[:3])
    return AppendResult(ErrorCode.INVALID_RECORD, log_start_offset=log_start_offset, record_errors=errors,
                        message=f"One or more records have been rejected due to {len(errors)} record errors in "
                                f"total, and only showing the first three errors at most: [{shown}]")


class Appender:
    def __init__(self, config: BrokerConfig, clock: Clock, topics: dict[str, Topic], events: ClusterEvents,
                 configs: TopicConfigs, replication: Replication, transactions: TransactionCoordinator,
                 marker_written: Callable[[Partition, int, bool], None]) -> None:
        self.config, self.clock, self.topics, self.events = config, clock, topics, events
        self.configs, self.replication, self.transactions = configs, replication, transactions
        self.marker_written = marker_written
        """Called with (partition, producer id, commit) after a marker is appended (on `__consumer_offsets` the
        group coordinators commit or drop the offsets the transaction staged)."""

    def append(self, partition: Partition, records: bytes | None, acks: int = 1,
               transactional_id: str | None = None, verification: str = "verify") -> AppendResult:
        """Validates and stores one partition's data from a Produce request (v3+: exactly one batch) on
        the leader, then lets the followers fetch it. acks=-1 is refused up front when the ISR is smaller
        than min.insync.replicas; waiting for the high watermark is the caller's business. A transactional
        batch from a request naming its transactional id, opening the producer's transaction on this
        partition, is first checked with the coordinator (KIP-890 part 1): `verification` is "verify"
        (Produce v3-10), "abortable" (v11, which knows TRANSACTION_ABORTABLE) or "add" (v12+, transactions
        version 2: the batch adds its partition to the transaction)."""
        log = partition.log
        topic = partition.topic
        configs = self.configs
        if acks == -1 and len(partition.isr) < configs.min_insync_replicas(partition):
            return AppendResult(ErrorCode.NOT_ENOUGH_REPLICAS,
                                message=f"The size of the current ISR {partition.isr} is insufficient to satisfy "
                                        f"the min.isr requirement of {configs.min_insync_replicas(partition)}")
        if not records:
            return AppendResult(ErrorCode.INVALID_RECORD, message="Produce request must carry a record batch")
        split = split_produced(records)
        refused = split if isinstance(split, Refused) else check_batch(
            split[0], split[1], configs.topic_config_int(topic, "max.message.bytes", partition.leader_id),
            configs.topic_config_int(topic, "max.decompressed.message.bytes", partition.leader_id))
        if refused is not None:
            return AppendResult(refused.error, message=refused.message, answer_message=refused.shown)
        assert not isinstance(split, Refused)
        header, batch = split
        if header.is_control:
            return AppendResult(ErrorCode.INVALID_RECORD, message="Producers may not write control batches")
        if "compact" in configs.topic_config(topic, "cleanup.policy", partition.leader_id)[0].split(","):
            refused = _keyless(batch, f"{topic.name}-{partition.index}", log.log_start_offset)
            if refused:
                return refused
        now = self.clock.now_ms()
        stamp_type = configs.topic_config(topic, "message.timestamp.type", partition.leader_id)[0]
        log_append = stamp_type == "LogAppendTime"
        if not log_append:
            before, after = configs.timestamp_bounds(topic, partition.leader_id)
            if header.max_timestamp >= 0 and (now - header.base_timestamp > before
                                              or header.max_timestamp - now > after):
                return AppendResult(ErrorCode.INVALID_TIMESTAMP,
                                    message="Timestamp is out of range of message.timestamp.before/after.max.ms")
        if not header.is_transactional and header.producer_id in log.open_txns:
            return AppendResult(ErrorCode.INVALID_TXN_STATE,
                                message=f"Expected transactional write from producer {header.producer_id}")
        if header.is_transactional and transactional_id is not None \
                and header.producer_id not in log.open_txns:
            refused = self._verify_transactional(partition, header, transactional_id, verification)
            if refused is not None:
                return refused
        idempotent = header.producer_id >= 0 and header.base_sequence >= 0
        if idempotent:
            check = partition.producers.check(header)
            if check.duplicate_of is not None:
                return AppendResult(ErrorCode.NONE, check.duplicate_of, check.duplicate_log_append_time,
                                    log.log_start_offset)
            if check.error != ErrorCode.NONE:
                return AppendResult(check.error, message=check.message)
        append_time = now if log_append else None
        try:
            base = log.append(batch, header, partition.leader_epoch, append_time, now,
                              **configs.segment_configs(partition))
        except StorageError as e:  # not stored, in memory or on disk: Kafka's answer for a failed log dir
            return AppendResult(ErrorCode.KAFKA_STORAGE_ERROR, message=str(e))
        if idempotent:
            partition.producers.record(header, base, append_time if append_time is not None else -1)
        self.replication.replicate_or_advance(partition)
        return AppendResult(ErrorCode.NONE, base, append_time if append_time is not None else -1, log.log_start_offset)

    def _verify_transactional(self, partition: Partition, header: BatchHeader, transactional_id: str,
                              verification: str) -> AppendResult | None:
        """The errors Kafka's ReplicaManager turns a failed verification (or implicit add) into, as a producer
        sees them."""
        tp = (partition.topic.name, partition.index)
        if verification == "add":
            code = self.transactions.add_partitions(transactional_id, header.producer_id, header.producer_epoch,
                                                    {tp}, implicit=True)
        elif self.config.value("transaction.partition.verification.enable")[0] == "false":
            return None
        else:
            code = self.transactions.verify_partitions(transactional_id, header.producer_id, header.producer_epoch,
                                                       {tp})[tp]
        if code == ErrorCode.NONE:
            return None
        if code == ErrorCode.TRANSACTION_ABORTABLE and verification == "verify":
            code = ErrorCode.INVALID_TXN_STATE
        if code == ErrorCode.INVALID_TXN_STATE:
            return AppendResult(code, message="Partition was not added to the transaction", answer_message=True)
        if code == ErrorCode.PRODUCER_FENCED:
            return AppendResult(ErrorCode.INVALID_PRODUCER_EPOCH)
        if code in (ErrorCode.CONCURRENT_TRANSACTIONS, ErrorCode.NOT_COORDINATOR,
                    ErrorCode.COORDINATOR_NOT_AVAILABLE):
            return AppendResult(ErrorCode.NOT_ENOUGH_REPLICAS,
                                message="Unable to verify the partition has been added to the transaction. "
                                        f"Underlying error: {code.name}", answer_message=True)
        return AppendResult(code)

    # --- what the broker writes itself --------------------------------------------------------------
    def append_internal(self, partition: Partition, batch: bytes, now: int) -> None:
        """A batch the broker writes itself (a coordinator's records) appended at the partition's leader and
        replicated as a produce with acks=all would be; fetches waiting on the partition are woken."""
        partition.log.append(batch, read_header(batch), partition.leader_epoch, None, now,
                             **self.configs.segment_configs(partition))
        self.replication.replicate_or_advance(partition)
        self.events.notify(partition)

    def write_marker(self, partition: Partition, producer_id: int, epoch: int, commit: bool,
                     coordinator_epoch: int) -> ErrorCode:
        """Appends a COMMIT or ABORT control batch for the producer's transaction to the partition's leader log
        (WriteTxnMarkers); on `__consumer_offsets` it also commits or drops the offsets the transaction staged."""
        code = partition.producers.check_marker(producer_id, epoch, coordinator_epoch)
        if code != ErrorCode.NONE:
            return code
        now = self.clock.now_ms()
        key = struct.pack(">hh", 0, 1 if commit else 0)
        value = struct.pack(">hi", 0, coordinator_epoch)
        batch = build_batch([{"key": key, "value": value, "timestamp": now}], producer_id=producer_id,
                            producer_epoch=epoch, transactional=True, control=True)
        partition.log.append(batch, read_header(batch), partition.leader_epoch, None, now,
                             **self.configs.segment_configs(partition))
        partition.producers.record_marker(producer_id, epoch, now, coordinator_epoch)
        self.marker_written(partition, producer_id, commit)
        self.replication.replicate_or_advance(partition)
        self.events.notify(partition)  # read_committed fetches waiting on the last stable offset
        return ErrorCode.NONE

    def coordinator_marker(self, tp: tuple[str, int], producer_id: int, epoch: int, commit: bool,
                           coordinator_epoch: int) -> bool:
        """The coordinator's marker for one partition: False while the partition has no leader (retried)."""
        partition = find_partition(self.topics, *tp)
        if partition is None:
            return True  # deleted with its topic: nothing to mark, as Kafka's marker channel drops it
        if not partition.online:
            return False
        self.write_marker(partition, producer_id, epoch, commit, coordinator_epoch)
        return True
