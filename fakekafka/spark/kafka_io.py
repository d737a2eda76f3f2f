"""Kafka I/O for the Spark data source, on confluent-kafka (librdkafka): partition discovery and offsets on the
driver, reading offset ranges into Arrow batches and producing rows on the executors.

No pyspark here (pyarrow only), so the offset arithmetic and the reading loop can be read, and debugged,
without a SparkSession. The semantics follow Spark's Kafka connector: offsets are "next offset to read",
a range is [start, until), and lost data is reported through `report_data_loss` (fails the query unless
failOnDataLoss is false, then a warning).
"""

from __future__ import annotations

import logging
import math
import re
import threading
import time
import uuid
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any, TypeVar

from confluent_kafka import Consumer, KafkaError, KafkaException, Producer
from confluent_kafka import TopicPartition as KafkaTopicPartition

from fakekafka.spark.options import EARLIEST, LATEST, OffsetSpec, OptionError, SourceOptions, TopicPartition

__all__ = ["DataLossError", "OffsetRange", "OffsetReader", "group_id", "plan_ranges", "rate_limit", "read_range",
           "report_data_loss", "resolve_ending", "resolve_starting", "write_batches"]

log = logging.getLogger("fakekafka.spark")
_client_log = logging.getLogger("fakekafka.spark.librdkafka")  # librdkafka's own log lines, not stderr

T = TypeVar("T")
PartitionOffsets = dict[TopicPartition, int]
_INTERNAL_TOPICS = {"__consumer_offsets", "__transaction_state"}
_REQUEST_TIMEOUT_S = 20.0
_ROWS_PER_BATCH = 8192

_FAIL_TRUE = ("Some data may have been lost because they are not available in Kafka any more; either the data was "
              "aged out by Kafka or the topic may have been deleted before all the data in the topic was processed. "
              "If you don't want your streaming query to fail on such cases, set the source option "
              "\"failOnDataLoss\" to \"false\".")
_FAIL_FALSE = ("Some data may have been lost because they are not available in Kafka any more; either the data was "
               "aged out by Kafka or the topic may have been deleted before all the data in the topic was processed. "
               "If you want your streaming query to fail on such cases, set the source option \"failOnDataLoss\" "
               "to \"true\".")


class DataLossError(RuntimeError):
    """Offsets the query needs are gone (deleted, aged out, topic recreated) and failOnDataLoss is true."""


def report_data_loss(fail: bool, message: str) -> None:
    if fail:
        raise DataLossError(f"{message}. {_FAIL_TRUE}")
    log.warning("%s. %s", message, _FAIL_FALSE)


def group_id(options: SourceOptions, streaming: bool) -> str:
    """Spark's naming: spark-kafka-source-<uuid> for streams, spark-kafka-relation-<uuid> for batch reads
    (or groupIdPrefix-<uuid>); kafka.group.id, when set, is used as is by every consumer."""
    if "group.id" in options.kafka:
        return options.kafka["group.id"]
    prefix = options.group_id_prefix or ("spark-kafka-source" if streaming else "spark-kafka-relation")
    return f"{prefix}-{uuid.uuid4()}"


def _client(kind: type[T], conf: dict[str, Any]) -> T:
    try:
        return kind(conf, logger=_client_log)  # type: ignore[call-arg]
    except (KafkaException, ValueError, TypeError) as e:
        raise OptionError(f"the Kafka client settings (kafka.* options) were refused by librdkafka, the client "
                          f"fakekafka's Spark fallback uses: {e}. Some settings only the Java client knows (e.g. "
                          f"sasl.jaas.config); librdkafka's own names are in its CONFIGURATION.md.") from None


def _consumer_conf(kafka: Mapping[str, str], group: str) -> dict[str, Any]:
    conf: dict[str, Any] = {"isolation.level": "read_uncommitted", **kafka}  # the Java client's default
    conf.setdefault("group.id", group)
    # the query, not the consumer, owns offsets; an offset out of range must surface, not be reset silently
    conf.update({"enable.auto.commit": False, "enable.auto.offset.store": False, "auto.offset.reset": "error",
                 "enable.partition.eof": True})
    return conf


class OffsetReader:
    """Driver side: which partitions the strategy covers and their offsets, with Spark's retries
    (fetchOffset.numRetries, fetchOffset.retryIntervalMs). Connects on first use."""

    def __init__(self, options: SourceOptions, group: str):
        self.options = options
        self._conf = _consumer_conf(options.kafka, f"{group}-driver-0")
        self._consumer: Consumer | None = None

    def _c(self) -> Consumer:
        if self._consumer is None:
            self._consumer = _client(Consumer, self._conf)
        return self._consumer

    def close(self) -> None:
        if self._consumer is not None:
            self._consumer.close()
            self._consumer = None

    def _retry(self, what: str, call: Callable[[], T]) -> T:
        attempts = max(self.options.fetch_offset_num_retries, 0) + 1
        for attempt in range(attempts):
            try:
                return call()
            except KafkaException as e:
                if attempt == attempts - 1:
                    raise RuntimeError(f"{what} failed after {attempts} attempt(s): {e}") from e
                log.warning("%s failed (attempt %d of %d), retrying: %s", what, attempt + 1, attempts, e)
                time.sleep(self.options.fetch_offset_retry_interval_ms / 1000)
        raise AssertionError("unreachable")

    def partitions(self) -> list[TopicPartition]:
        """The partitions the strategy covers now (sorted): subscribed topics' partitions, pattern matches
        (whole-name matches, internal topics excluded, as the Java consumer does), or the assigned ones."""
        strategy = self.options.strategy
        if strategy.kind == "assign":
            return sorted(set(strategy.partitions))
        metadata = self._retry("Fetching topic metadata", lambda: self._c().list_topics(timeout=_REQUEST_TIMEOUT_S))
        if strategy.kind == "subscribe":
            names = [t for t in strategy.topics if t in metadata.topics]
        else:
            rx = re.compile(strategy.pattern)
            names = [t for t in metadata.topics if t not in _INTERNAL_TOPICS and rx.fullmatch(t)]
        out = []
        for name in names:
            topic = metadata.topics[name]
            if topic.error is None:
                out.extend((name, p) for p in topic.partitions)
        return sorted(out)

    def query(self, wanted: Mapping[TopicPartition, int]) -> PartitionOffsets:
        """ListOffsets for each partition: -2 earliest, -1 latest, else the first offset whose timestamp is >=
        that (ms); -1 in the answer means no record is that late. Partitions that do not exist are left out."""
        if not wanted:
            return {}
        request = [KafkaTopicPartition(t, p, ts) for (t, p), ts in wanted.items()]

        def ask() -> list[KafkaTopicPartition]:
            answer = self._c().offsets_for_times(request, timeout=_REQUEST_TIMEOUT_S)
            # librdkafka gives a partition's retriable error (a leader moving: LEADER_NOT_AVAILABLE) in the
            # answer rather than raising; Spark's offset reader retries those as it retries a failed call
            for tp in answer:
                if tp.error is not None and (tp.error.retriable() or tp.error.code() in _RETRIABLE_PARTITION):
                    raise KafkaException(tp.error)
            return answer
        answer = self._retry("Fetching offsets", ask)
        out: PartitionOffsets = {}
        for tp in answer:
            if tp.error is None:
                out[(tp.topic, tp.partition)] = tp.offset
            elif tp.error.code() not in (KafkaError.UNKNOWN_TOPIC_OR_PART, KafkaError._UNKNOWN_PARTITION,
                                         KafkaError._UNKNOWN_TOPIC):
                raise RuntimeError(f"Fetching the offset of {tp.topic}-{tp.partition} failed: {tp.error}")
        return out

    def earliest(self, tps: list[TopicPartition]) -> PartitionOffsets:
        return self.query(dict.fromkeys(tps, EARLIEST))

    def latest(self, tps: list[TopicPartition]) -> PartitionOffsets:
        return self.query(dict.fromkeys(tps, LATEST))


_RETRIABLE_PARTITION = frozenset({
    KafkaError.LEADER_NOT_AVAILABLE, KafkaError.NOT_LEADER_FOR_PARTITION, KafkaError.REPLICA_NOT_AVAILABLE,
    KafkaError.UNKNOWN_LEADER_EPOCH, KafkaError.FENCED_LEADER_EPOCH, KafkaError.OFFSET_NOT_AVAILABLE,
    KafkaError.REQUEST_TIMED_OUT, KafkaError.NOT_ENOUGH_REPLICAS})
"""Partition errors of ListOffsets that Kafka's clients retry (RetriableException subclasses); librdkafka puts
them in the answer without marking them retriable."""


def _name(tp: TopicPartition) -> str:
    return f"{tp[0]}-{tp[1]}"


def _by_timestamp(reader: OffsetReader, timestamps: Mapping[TopicPartition, int], starting: bool,
                  on_no_match: str) -> PartitionOffsets:
    found = reader.query(timestamps)
    latest = None
    out: PartitionOffsets = {}
    for tp, ts in timestamps.items():
        off = found.get(tp, -1)
        if off < 0:
            if starting and on_no_match == "error":
                raise OptionError(f"No offset matched from request of topic-partition {_name(tp)} and timestamp {ts}"
                                  f" (startingOffsetsByTimestampStrategy 'latest' starts such partitions at their "
                                  f"latest offset instead)")
            latest = latest if latest is not None else reader.latest(list(timestamps))
            off = latest.get(tp, 0)
        out[tp] = off
    return out


def _all_named(spec: OffsetSpec, tps: list[TopicPartition], option: str) -> None:
    if set(spec.offsets) != set(tps):
        raise OptionError(f"If {option} contains specific offsets, you must specify all TopicPartitions. Use -1 for "
                          f"latest, -2 for earliest. Specified: {sorted(spec.offsets)} Assigned: {sorted(tps)}")


def resolve_starting(reader: OffsetReader, spec: OffsetSpec, tps: list[TopicPartition],
                     fail_on_data_loss: bool) -> PartitionOffsets:
    """The first offset to read in each partition. A specific offset past the partition's end is lost data
    (without failOnDataLoss the read starts at the end instead). One below the log start is planned as given,
    as Spark's (Admin based) offset reader does: the executor's read reports the missing offsets, or skips
    them, exactly as when retention deletes them after planning."""
    if spec.kind == "earliest":
        return reader.earliest(tps)
    if spec.kind == "latest":
        return reader.latest(tps)
    if spec.kind == "timestamp":
        return _by_timestamp(reader, dict.fromkeys(tps, spec.timestamp), True, spec.on_no_match)
    if spec.kind == "timestamps":
        _all_named(spec, tps, "startingOffsetsByTimestamp")
        return _by_timestamp(reader, spec.offsets, True, spec.on_no_match)
    _all_named(spec, tps, "startingOffsets")
    earliest, latest = reader.earliest(tps), reader.latest(tps)
    out: PartitionOffsets = {}
    for tp, off in spec.offsets.items():
        low, high = earliest.get(tp, 0), latest.get(tp, 0)
        if off == EARLIEST:
            off = low
        elif off == LATEST:
            off = high
        elif off > high:
            report_data_loss(fail_on_data_loss, f"startingOffsets for {_name(tp)} was {off} but the partition holds "
                                                f"offsets [{low}, {high})")
            off = high
        out[tp] = off
    return out


def resolve_ending(reader: OffsetReader, spec: OffsetSpec, tps: list[TopicPartition]) -> PartitionOffsets:
    """The offset each batch read stops before (a timestamp no record reaches means the latest offset)."""
    if spec.kind == "latest":
        return reader.latest(tps)
    if spec.kind == "timestamp":
        return _by_timestamp(reader, dict.fromkeys(tps, spec.timestamp), False, "latest")
    if spec.kind == "timestamps":
        _all_named(spec, tps, "endingOffsetsByTimestamp")
        return _by_timestamp(reader, spec.offsets, False, "latest")
    _all_named(spec, tps, "endingOffsets")
    latest = reader.latest(tps)
    return {tp: latest.get(tp, 0) if off == LATEST else off for tp, off in spec.offsets.items()}


def rate_limit(limit: int, start: PartitionOffsets, latest: PartitionOffsets) -> PartitionOffsets:
    """maxOffsetsPerTrigger as Spark's connector shares it: each partition gets `limit` times its part of what
    is waiting, floored, but a share below one is rounded up (no partition starves), and never past its latest
    offset; so a batch may hold a little less than `limit` (6:3:1 waiting, limit 4: 2, 1 and 1). Partitions
    with nothing waiting, or whose offset went backwards, keep their latest offset."""
    sizes = {tp: end - start[tp] for tp, end in latest.items() if tp in start and end - start[tp] > 0}
    total = sum(sizes.values())
    if total <= limit:
        return dict(latest)
    grant = {}
    for tp, size in sizes.items():
        share = limit * size / total
        grant[tp] = min(size, math.ceil(share) if share < 1 else math.floor(share))
    return {tp: (start[tp] + grant[tp] if tp in grant else end) for tp, end in latest.items()}


@dataclass(frozen=True)
class OffsetRange:
    topic: str
    partition: int
    start: int
    until: int

    @property
    def size(self) -> int:
        return self.until - self.start


def _split(r: OffsetRange, parts: int) -> list[OffsetRange]:
    parts = max(1, min(parts, r.size))
    bounds = [r.start + (r.size * i) // parts for i in range(parts + 1)]
    return [OffsetRange(r.topic, r.partition, a, b) for a, b in zip(bounds, bounds[1:], strict=False) if b > a]


def plan_ranges(start: PartitionOffsets, end: PartitionOffsets, min_partitions: int | None,
                max_records: int | None) -> list[OffsetRange]:
    """One Spark partition per Kafka partition with something to read, as the connector does; ranges longer
    than maxRecordsPerPartition are cut, then long ranges are cut further until there are minPartitions."""
    ranges = [OffsetRange(t, p, start[(t, p)], until) for (t, p), until in sorted(end.items())
              if (t, p) in start and until > start[(t, p)]]
    if max_records:
        ranges = [piece for r in ranges for piece in _split(r, -(-r.size // max_records))]
    if min_partitions and 0 < len(ranges) < min_partitions:
        total = sum(r.size for r in ranges)
        ranges = [piece for r in ranges for piece in _split(r, max(1, round(r.size / total * min_partitions)))]
    return ranges


class _Pool:
    """Clients kept per configuration in a (reused) Python worker, as Spark caches its consumers and
    producers: creating a librdkafka client and connecting costs more than reading a small range."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._idle: dict[tuple, list[Any]] = {}

    def take(self, key: tuple, make: Callable[[], T]) -> T:
        with self._lock:
            idle = self._idle.get(key)
            if idle:
                return idle.pop()
        return make()

    def give(self, key: tuple, client: Any) -> None:
        with self._lock:
            self._idle.setdefault(key, []).append(client)


_CONSUMERS = _Pool()
_PRODUCERS = _Pool()


class _Rows:
    """Columns of the records read so far, turned into an Arrow batch of exactly the schema Spark expects."""

    def __init__(self, topic: str, partition: int, schema: Any, include_headers: bool):
        self.topic, self.partition, self.schema, self.include_headers = topic, partition, schema, include_headers
        self._reset()

    def _reset(self) -> None:
        self.keys: list[bytes | None] = []
        self.values: list[bytes | None] = []
        self.offsets: list[int] = []
        self.timestamps: list[int] = []
        self.types: list[int] = []
        self.headers: list[list[dict[str, Any]] | None] = []

    def __len__(self) -> int:
        return len(self.offsets)

    def add(self, m: Any) -> None:
        self.keys.append(m.key())
        self.values.append(m.value())
        self.offsets.append(m.offset())
        ts_type, ts = m.timestamp()
        self.timestamps.append(ts * 1000)  # ms -> Spark's microseconds
        self.types.append(ts_type - 1)  # librdkafka 0/1/2 -> Kafka's -1 none, 0 CreateTime, 1 LogAppendTime
        if self.include_headers:
            hs = m.headers()
            self.headers.append([{"key": k, "value": v} for k, v in hs] if hs else None)

    def flush(self) -> Any:
        import pyarrow as pa

        n = len(self.offsets)
        f = self.schema.field
        arrays = [pa.array(self.keys, f("key").type), pa.array(self.values, f("value").type),
                  pa.array([self.topic] * n, f("topic").type), pa.array([self.partition] * n, f("partition").type),
                  pa.array(self.offsets, f("offset").type), pa.array(self.timestamps, pa.int64()).cast(
                      f("timestamp").type), pa.array(self.types, f("timestampType").type)]
        if self.include_headers:
            arrays.append(pa.array(self.headers, f("headers").type))
        batch = pa.RecordBatch.from_arrays(arrays, schema=self.schema)
        self._reset()
        return batch


def read_range(kafka: Mapping[str, str], group: str, r: OffsetRange, *, schema: Any, include_headers: bool,
               poll_timeout_ms: int, fail_on_data_loss: bool) -> Iterator[Any]:
    """Executor side: the records of [r.start, r.until) as Arrow batches. Gaps (compacted records, transaction
    markers) are skipped; an offset that is no longer in the partition is lost data."""
    conf = _consumer_conf(kafka, f"{group}-executor")
    key = tuple(sorted(conf.items()))
    consumer = _CONSUMERS.take(key, lambda: _client(Consumer, conf))
    clean = False
    try:
        consumer.assign([KafkaTopicPartition(r.topic, r.partition, r.start)])
        rows = _Rows(r.topic, r.partition, schema, include_headers)
        next_offset = r.start
        idle_since = time.monotonic()
        while next_offset < r.until:
            wait = max(0.0, poll_timeout_ms / 1000 - (time.monotonic() - idle_since))
            msgs = consumer.consume(num_messages=min(r.until - next_offset, 100_000), timeout=min(1.0, wait))
            before = next_offset
            for m in msgs:
                err = m.error()
                if err is None:
                    off = m.offset()
                    if off < next_offset:
                        continue  # fetched for an earlier assignment of this consumer
                    if off >= r.until:
                        next_offset = r.until
                        break
                    rows.add(m)
                    next_offset = off + 1
                elif err.code() == KafkaError._PARTITION_EOF and m.offset() >= r.until:
                    next_offset = r.until  # the rest of the range holds no records (markers, compaction)
                    break
                elif err.code() in (KafkaError._PARTITION_EOF, KafkaError.OFFSET_OUT_OF_RANGE,
                                    KafkaError._AUTO_OFFSET_RESET):
                    low, high = consumer.get_watermark_offsets(KafkaTopicPartition(r.topic, r.partition),
                                                               timeout=_REQUEST_TIMEOUT_S, cached=False)
                    if low <= next_offset and high >= r.until:
                        # nothing is missing: an event from before this assignment, or the end moved on since
                        if err.code() != KafkaError._PARTITION_EOF:
                            consumer.assign([KafkaTopicPartition(r.topic, r.partition, next_offset)])
                            break
                        continue
                    why = "the partition ends there" if err.code() == KafkaError._PARTITION_EOF else "out of range"
                    next_offset = _lost(consumer, r, next_offset, low, high, fail_on_data_loss, why)
                    break
                else:
                    raise KafkaException(err)
            if len(rows) >= _ROWS_PER_BATCH:
                yield rows.flush()
            if next_offset > before:
                idle_since = time.monotonic()
            elif time.monotonic() - idle_since >= poll_timeout_ms / 1000:
                raise TimeoutError(f"Cannot fetch record for offset {next_offset} of {r.topic}-{r.partition} in "
                                   f"{poll_timeout_ms} milliseconds (kafkaConsumer.pollTimeoutMs)")
        if len(rows):
            yield rows.flush()
        clean = True
    finally:
        if clean:
            consumer.unassign()
            _CONSUMERS.give(key, consumer)
        else:
            consumer.close()


def _lost(consumer: Consumer, r: OffsetRange, offset: int, low: int, high: int, fail: bool, why: str) -> int:
    """Reports offsets of the range that the partition no longer has; returns where reading resumes."""
    report_data_loss(fail, f"Cannot fetch offset {offset} of {r.topic}-{r.partition} ({why}); the partition holds "
                           f"offsets [{low}, {high}) and this batch needs [{r.start}, {r.until})")
    if offset < low < r.until:
        consumer.assign([KafkaTopicPartition(r.topic, r.partition, low)])
        return low
    return r.until


def _bytes(v: Any) -> bytes | None:
    return v.encode() if isinstance(v, str) else v


def write_batches(kafka: Mapping[str, str], topic_option: str | None, batches: Iterator[Any]) -> int:
    """Executor side of the sink: produces every row (columns topic, key, value, partition, headers; the
    `topic` option, when set, wins over the column) and returns once all are acknowledged. At least once,
    as Spark's Kafka sink: a failed task is retried and may write its rows again."""
    # the Java producer's defaults where librdkafka's differ: its key -> partition mapping, idempotence
    conf: dict[str, Any] = {"partitioner": "murmur2_random", "enable.idempotence": True, **kafka}
    key = tuple(sorted(conf.items()))
    producer = _PRODUCERS.take(key, lambda: _client(Producer, conf))
    errors: list[str] = []

    def delivered(err: KafkaError | None, msg: Any) -> None:
        if err is not None:
            errors.append(f"{msg.topic()}: {err}")

    n = 0
    clean = False
    try:
        for batch in batches:
            names = set(batch.schema.names)
            col = {c: batch.column(c).to_pylist() for c in ("topic", "key", "value", "partition", "headers")
                   if c in names}
            for i in range(batch.num_rows):
                topic = topic_option if topic_option is not None else col["topic"][i]
                if topic is None:
                    raise ValueError("Null topic present in the data. Use the topic option for setting a topic.")
                kwargs: dict[str, Any] = {"on_delivery": delivered}
                if "key" in col and col["key"][i] is not None:
                    kwargs["key"] = _bytes(col["key"][i])
                if "partition" in col and col["partition"][i] is not None:
                    kwargs["partition"] = col["partition"][i]
                if "headers" in col and col["headers"][i]:
                    kwargs["headers"] = [(h["key"], h["value"]) for h in col["headers"][i]]
                value = _bytes(col["value"][i])
                while True:
                    try:
                        producer.produce(topic, value, **kwargs)
                        break
                    except BufferError:  # librdkafka's queue is full: let deliveries drain it
                        producer.poll(0.05)
                n += 1
                if errors:
                    break
            producer.poll(0)
            if errors:
                break
        producer.flush()
        if errors:
            raise RuntimeError(f"Writing to Kafka failed for {len(errors)} record(s), e.g. {errors[0]}")
        clean = True
        return n
    finally:
        if clean:
            _PRODUCERS.give(key, producer)
        else:
            producer.purge()  # a failed task is retried as a whole: what this one queued is not delivered late
