"""A Kafka source and sink for Spark written with the Python Data Source API (pyspark >= 4.0), mirroring
Spark's JVM connector (spark-sql-kafka-0-10) for machines that cannot fetch it from Maven.

Same schema, same options (see `options.py`), same offsets in the checkpoint ({"topic": {"partition":
next offset}}), `trigger(availableNow=True)`, maxOffsetsPerTrigger / minOffsetsPerTrigger, and the same
sink columns (topic, key, value, partition, headers). Registered as format "fakekafka"; see
`fakekafka.spark.use_fakekafka_kafka_source` for reaching it as format("kafka").

Where the code runs matters: `KafkaDataSource` and the readers are created on the driver side (in Python
workers Spark starts for planning), pickled, and `read`/`write` run in executor Python workers. So readers
connect lazily and keep no client in their pickled state.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator, Sequence
from typing import Any

from pyspark.sql.datasource import (
    DataSource,
    DataSourceArrowWriter,
    DataSourceReader,
    DataSourceStreamArrowWriter,
    DataSourceStreamReader,
    InputPartition,
    WriterCommitMessage,
)
from pyspark.sql.streaming.datasource import (
    ReadAllAvailable,
    ReadLimit,
    ReadMaxRows,
    ReadMinRows,
    SupportsTriggerAvailableNow,
)
from pyspark.sql.types import (
    ArrayType,
    BinaryType,
    DataType,
    IntegerType,
    LongType,
    StringType,
    StructField,
    StructType,
    TimestampType,
)

from fakekafka.spark.kafka_io import (
    OffsetRange,
    OffsetReader,
    PartitionOffsets,
    group_id,
    plan_ranges,
    rate_limit,
    read_range,
    report_data_loss,
    resolve_ending,
    resolve_starting,
    write_batches,
)
from fakekafka.spark.options import OptionError, SourceOptions, parse_sink_options, parse_source_options

__all__ = ["FORMAT", "KafkaDataSource", "kafka_schema", "offsets_from_json", "offsets_to_json"]

FORMAT = "fakekafka"
log = logging.getLogger("fakekafka.spark")

_HEADERS = ArrayType(StructType([StructField("key", StringType()), StructField("value", BinaryType())]))


def kafka_schema(include_headers: bool = False) -> StructType:
    """The schema of Spark's Kafka source (KafkaRecordToRowConverter.kafkaSchema)."""
    fields = [StructField("key", BinaryType()), StructField("value", BinaryType()),
              StructField("topic", StringType()), StructField("partition", IntegerType()),
              StructField("offset", LongType()), StructField("timestamp", TimestampType()),
              StructField("timestampType", IntegerType())]
    if include_headers:
        fields.append(StructField("headers", _HEADERS))
    return StructType(fields)


def offsets_to_json(offsets: PartitionOffsets) -> dict[str, dict[str, int]]:
    """{("t", 0): 5} -> {"t": {"0": 5}}: KafkaSourceOffset's JSON, topics and partitions in order."""
    out: dict[str, dict[str, int]] = {}
    for (topic, partition), offset in sorted(offsets.items()):
        out.setdefault(topic, {})[str(partition)] = offset
    return out


def offsets_from_json(offsets: dict[str, dict[str, int]] | None) -> PartitionOffsets:
    return {(t, int(p)): int(o) for t, parts in (offsets or {}).items() for p, o in parts.items()}


class KafkaPartition(InputPartition):
    """One offset range of one Kafka partition: a Spark task's share of a batch."""

    def __init__(self, r: OffsetRange, group: str):
        super().__init__((r.topic, r.partition, r.start, r.until))
        self.range = r
        self.group = group


def _same_type(a: DataType, b: DataType) -> bool:
    """Equal ignoring nullability (Spark's checks on the sink's columns ignore it too)."""
    if isinstance(a, StructType) and isinstance(b, StructType):
        return len(a.fields) == len(b.fields) and all(
            x.name == y.name and _same_type(x.dataType, y.dataType) for x, y in zip(a.fields, b.fields, strict=True))
    if isinstance(a, ArrayType) and isinstance(b, ArrayType):
        return _same_type(a.elementType, b.elementType)
    return type(a) is type(b)


def check_sink_schema(schema: StructType, topic_option: str | None) -> None:
    """Spark's KafkaWriter.validateQuery: the columns the sink reads, and their types."""
    fields = {f.name: f.dataType for f in schema.fields}
    if topic_option is None:
        if "topic" not in fields:
            raise OptionError("topic option required when no 'topic' attribute is present. Use the topic option for "
                              "setting a topic.")
        if not isinstance(fields["topic"], StringType):
            raise OptionError(f"Topic type must be a StringType, got {fields['topic'].simpleString()}")
    # the wording of Spark 4.2's KafkaWriter, so one test reads the same on either route
    if "key" in fields and not isinstance(fields["key"], StringType | BinaryType):
        raise OptionError(f"key attribute unsupported type {fields['key'].simpleString()}. key must be a(n) string or "
                          "binary")
    if "value" not in fields:
        raise OptionError("Required attribute 'value' not found")
    if not isinstance(fields["value"], StringType | BinaryType):
        raise OptionError(f"value attribute unsupported type {fields['value'].simpleString()}. value must be a(n) "
                          "string or binary")
    if "partition" in fields and not isinstance(fields["partition"], IntegerType):
        raise OptionError(f"partition attribute unsupported type {fields['partition'].simpleString()}. partition "
                          "must be a(n) int")
    if "headers" in fields and not _same_type(fields["headers"], _HEADERS):
        raise OptionError(f"headers attribute type must be {_HEADERS.simpleString()}, got "
                          f"{fields['headers'].simpleString()}")


def _arrow_schema(schema: StructType) -> Any:
    """The Arrow schema Spark checks every returned batch against (timestamps in UTC)."""
    from pyspark.sql.pandas.types import to_arrow_schema
    return to_arrow_schema(schema, timezone="UTC")


def _source_options(options: dict[str, str], schema: StructType, streaming: bool) -> SourceOptions:
    opts = parse_source_options(options, streaming=streaming)
    expected = kafka_schema(opts.include_headers)
    if not _same_type(schema, expected):
        raise OptionError("Kafka source has a fixed schema and cannot be set with a custom one")
    for note in opts.notes:
        log.warning(note)
    return opts


class KafkaDataSource(DataSource):
    """format("fakekafka"): Spark's Kafka connector, batch and streaming, source and sink."""

    @classmethod
    def name(cls) -> str:
        return FORMAT

    def schema(self) -> StructType:
        value = str(self.options.get("includeHeaders", "false")).strip().lower()
        return kafka_schema(value == "true")

    def reader(self, schema: StructType) -> DataSourceReader:
        return KafkaBatchReader(_source_options(dict(self.options), schema, streaming=False), schema)

    def streamReader(self, schema: StructType) -> DataSourceStreamReader:
        return KafkaStreamReader(_source_options(dict(self.options), schema, streaming=True), schema)

    def writer(self, schema: StructType, overwrite: bool) -> DataSourceArrowWriter:
        if overwrite:
            raise OptionError("Save mode Overwrite not allowed for Kafka. Allowed save modes are Append and "
                              "ErrorIfExists (default).")
        return KafkaBatchWriter(dict(self.options), schema)

    def streamWriter(self, schema: StructType, overwrite: bool) -> DataSourceStreamArrowWriter:
        # overwrite is Complete output mode: Spark's Kafka sink writes the whole result table every batch
        return KafkaStreamWriter(dict(self.options), schema)


class _Reading:
    """What both readers do on an executor: read one range into Arrow batches."""

    opts: SourceOptions
    schema: StructType

    def read(self, partition: InputPartition) -> Iterator[Any]:
        assert isinstance(partition, KafkaPartition)
        yield from read_range(self.opts.kafka, partition.group, partition.range, schema=_arrow_schema(self.schema),
                              include_headers=self.opts.include_headers, poll_timeout_ms=self.opts.poll_timeout_ms,
                              fail_on_data_loss=self.opts.fail_on_data_loss)


class KafkaBatchReader(_Reading, DataSourceReader):
    """spark.read: [startingOffsets, endingOffsets) of every partition, fixed when the query is planned."""

    def __init__(self, opts: SourceOptions, schema: StructType):
        self.opts, self.schema = opts, schema

    def partitions(self) -> Sequence[InputPartition]:
        group = group_id(self.opts, streaming=False)
        reader = OffsetReader(self.opts, group)
        try:
            tps = reader.partitions()
            start = resolve_starting(reader, self.opts.starting, tps, self.opts.fail_on_data_loss)
            assert self.opts.ending is not None
            end = resolve_ending(reader, self.opts.ending, tps)
        finally:
            reader.close()
        for tp in sorted(end):
            if tp in start and end[tp] < start[tp]:
                raise OptionError(f"The resolved starting offset {start[tp]} is greater than the resolved ending "
                                  f"offset {end[tp]} for topic partition {tp[0]}-{tp[1]}")
        ranges = plan_ranges(start, end, self.opts.min_partitions, self.opts.max_records_per_partition)
        # Spark needs at least one partition; an empty range reads nothing
        return [KafkaPartition(r, group) for r in ranges] or [KafkaPartition(OffsetRange("", 0, 0, 0), group)]

    def read(self, partition: InputPartition) -> Iterator[Any]:
        assert isinstance(partition, KafkaPartition)
        if partition.range.size == 0:
            return iter(())
        return super().read(partition)


class KafkaStreamReader(_Reading, DataSourceStreamReader, SupportsTriggerAvailableNow):
    """spark.readStream: each micro-batch reads from the previous batch's end offsets to the latest ones
    (limited by maxOffsetsPerTrigger, delayed by minOffsetsPerTrigger); partitions that appear later are read
    from their earliest offset, as Spark does."""

    def __init__(self, opts: SourceOptions, schema: StructType):
        self.opts, self.schema = opts, schema
        self._group = group_id(opts, streaming=True)
        self._reader: OffsetReader | None = None
        self._available_now = False
        self._target: PartitionOffsets | None = None  # availableNow: the latest offsets when the query started
        self._latest: PartitionOffsets | None = None
        self._last_trigger_ms = 0.0

    def __getstate__(self) -> dict[str, Any]:
        state = dict(self.__dict__)
        state["_reader"] = None  # executors only read; a live client is not picklable anyway
        return state

    def _offsets(self) -> OffsetReader:
        if self._reader is None:
            self._reader = OffsetReader(self.opts, self._group)
        return self._reader

    def initialOffset(self) -> dict:
        reader = self._offsets()
        tps = reader.partitions()
        start = resolve_starting(reader, self.opts.starting, tps, self.opts.fail_on_data_loss)
        log.info("Initial offsets: %s", offsets_to_json(start))
        return offsets_to_json(start)

    def getDefaultReadLimit(self) -> ReadLimit:
        if self.opts.max_offsets_per_trigger is not None:
            return ReadMaxRows(self.opts.max_offsets_per_trigger)
        if self.opts.min_offsets_per_trigger is not None:
            return ReadMinRows(self.opts.min_offsets_per_trigger)
        return ReadAllAvailable()

    def prepareForTriggerAvailableNow(self) -> None:
        self._available_now = True

    def latestOffset(self, start: dict, limit: ReadLimit) -> dict:
        begin = offsets_from_json(start)
        if self._available_now:
            if self._target is None:
                self._target = self._fetch_latest()
            latest = self._target
        else:
            latest = self._fetch_latest()
        self._latest = latest
        if isinstance(limit, ReadAllAvailable):
            return offsets_to_json(latest)
        if latest.keys() - begin.keys():  # partitions new since `start` count from their earliest offset
            begin = {**self._offsets().earliest(sorted(latest.keys() - begin.keys())), **begin}
        if self._delay(begin, latest):
            return start
        max_rows = limit.max_rows if isinstance(limit, ReadMaxRows) else self.opts.max_offsets_per_trigger
        if max_rows is not None:
            latest = rate_limit(max_rows, begin, latest)
        return offsets_to_json(latest)

    def _fetch_latest(self) -> PartitionOffsets:
        reader = self._offsets()
        return reader.latest(reader.partitions())

    def _delay(self, begin: PartitionOffsets, latest: PartitionOffsets) -> bool:
        """minOffsetsPerTrigger: skip this trigger while fewer offsets wait, unless maxTriggerDelay has passed
        since the last batch ran (never under availableNow, which must finish)."""
        if self.opts.min_offsets_per_trigger is None or self._available_now:
            return False
        now = time.monotonic() * 1000
        if now - self._last_trigger_ms >= self.opts.max_trigger_delay_ms:
            self._last_trigger_ms = now
            return False
        waiting = sum(max(0, end - begin.get(tp, 0)) for tp, end in latest.items())
        if waiting < self.opts.min_offsets_per_trigger:
            return True
        self._last_trigger_ms = now
        return False

    def reportLatestOffset(self) -> dict | None:
        return offsets_to_json(self._latest) if self._latest else None

    def partitions(self, start: dict, end: dict) -> Sequence[InputPartition]:
        begin, until = offsets_from_json(start), offsets_from_json(end)
        fail = self.opts.fail_on_data_loss
        new = sorted(until.keys() - begin.keys())
        if new:
            earliest = self._offsets().earliest(new)
            for tp in new:
                off = earliest.get(tp, 0)
                if off != 0:
                    report_data_loss(fail, f"Added partition {tp[0]}-{tp[1]} starts from {off} instead of 0. Some "
                                           f"data may have been missed")
                begin[tp] = off
        gone = sorted(begin.keys() - until.keys())
        if gone:
            report_data_loss(fail, f"{', '.join(f'{t}-{p}' for t, p in gone)} are gone. Some data may have been "
                                   f"missed")
        for tp in sorted(until.keys() & begin.keys()):
            if until[tp] < begin[tp]:
                report_data_loss(fail, f"Partition {tp[0]}-{tp[1]}'s offset was changed from {begin[tp]} to "
                                       f"{until[tp]}, some data may have been missed")
        ranges = plan_ranges(begin, until, self.opts.min_partitions, self.opts.max_records_per_partition)
        return [KafkaPartition(r, self._group) for r in ranges]

    def commit(self, end: dict) -> None:
        """Nothing to do: like Spark's Kafka source, the offsets live in the checkpoint, not in Kafka."""

    def stop(self) -> None:
        if self._reader is not None:
            self._reader.close()
            self._reader = None


class KafkaCommitMessage(WriterCommitMessage):
    def __init__(self, records: int):
        self.records = records


class _Writing:
    """What both writers do on an executor: produce the task's rows and wait for their acknowledgements."""

    def __init__(self, options: dict[str, str], schema: StructType):
        sink = parse_sink_options(options)
        check_sink_schema(schema, sink.topic)
        self.topic, self.kafka = sink.topic, sink.kafka

    def write(self, iterator: Iterator[Any]) -> WriterCommitMessage:
        return KafkaCommitMessage(write_batches(self.kafka, self.topic, iterator))


class KafkaBatchWriter(_Writing, DataSourceArrowWriter):
    """df.write: every row produced once per successful task (Kafka has no rollback: at least once)."""


class KafkaStreamWriter(_Writing, DataSourceStreamArrowWriter):
    """df.writeStream: each micro-batch's rows, acknowledged before the batch commits (at least once)."""

    def commit(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:
        """The records are in Kafka once the tasks return; nothing is left to commit."""

    def abort(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:
        """Records already acknowledged cannot be taken back; the batch is retried on restart."""
