"""The log cleaner's offset map is bounded, as Kafka's (log.cleaner.dedupe.buffer.size shared by the
log.cleaner.threads, filled to log.cleaner.io.buffer.load.factor): a round maps dirty keys until the map is
full, cleans up to the last record it mapped (inside a segment if that is where it filled) and the next round
carries on from there."""

from __future__ import annotations

import pytest

from fakekafka.model.cleaner import CleanerSettings, max_desired_map_size
from fakekafka.model.clock import ManualClock
from fakekafka.model.cluster import ClusterState
from fakekafka.model.config import BrokerConfig, InvalidConfig
from fakekafka.model.metadata import Broker, Partition
from fakekafka.wire import ErrorCode
from fakekafka.wire.records import build_batch, read_header
from tests.unit.model.test_compaction import _put, _roll, _topic, _visible

DEFAULT_SLOTS = (128 << 20) // 24
"""Slots of the map at Kafka's defaults (128 MiB, one thread, 24 bytes a key)."""


def _cluster(map_size: int | None = None) -> tuple[ClusterState, ManualClock]:
    """A one-broker cluster whose cleaner maps `map_size` keys a round (None: Kafka's defaults), set as a user
    would: a load factor that leaves that many of the default buffer's slots."""
    overrides = {} if map_size is None else {"log.cleaner.io.buffer.load.factor": str((map_size + 0.5) / DEFAULT_SLOTS)}
    clock = ManualClock(1_000_000)
    return ClusterState(BrokerConfig(overrides=overrides), clock, [Broker(1, "127.0.0.1", 9001)]), clock


def _log(c: ClusterState, clock: ManualClock, segments: list[list[bytes]]) -> Partition:
    """A compacted topic's partition: a batch per key, a segment per list, then an active segment."""
    p = _topic(c)
    for keys in segments:
        for key in keys:
            _put(c, p, clock, key, b"v")
        _roll(clock)
    _put(c, p, clock, b"z", b"v")
    return p


# segment 0: a@0 a@1 b@2 | segment 1: c@3 d@4 | segment 2: a@5 b@6 | active: z@7
KEYS = [[b"a", b"a", b"b"], [b"c", b"d"], [b"a", b"b"]]


def test_the_map_is_sized_as_kafka_sizes_it() -> None:
    assert max_desired_map_size(128 << 20, 1, 0.9) == CleanerSettings().max_desired_map_size == 5033164
    assert max_desired_map_size(128 << 20, 2, 0.9) == 2516581  # the buffer is shared by the cleaner threads
    assert max_desired_map_size(8 << 30, 1, 0.9) == 80530636  # at most 2 GiB a thread
    assert max_desired_map_size(2 << 20, 1, 2.0) == (2 << 20) // 24  # never past its slots
    assert max_desired_map_size(2 << 20, 1, 0.0) == 0  # not one key: Kafka's cleaner does not start
    c, _ = _cluster()
    p = _topic(c)
    assert c.cleaner_settings(p.topic, 1).max_desired_map_size == 5033164
    c.set_broker_configs(None, {**c.config.dynamic_defaults, "log.cleaner.threads": "4"})
    assert c.cleaner_settings(p.topic, 1).max_desired_map_size == max_desired_map_size(128 << 20, 4, 0.9)


def test_a_full_map_ends_the_round_inside_a_segment_and_the_next_round_goes_on() -> None:
    c, clock = _cluster(map_size=3)
    p = _log(c, clock, KEYS)
    assert c.force_compaction("t") == 1
    # a, b, c mapped; d@4 finds the map full: cleaned up to c@3, its segment whole (d@4 kept as it is)
    assert p.log.cleaner_checkpoint == 4
    assert c.events[-1].details["cleaned_up_to"] == 4
    assert [o for o, _, _ in _visible(p)] == [1, 2, 3, 4, 5, 6, 7]
    assert [s.base_offset for s in p.log.segments] == [0, 5, 7]  # segments 0 and 1 cleaned into one
    assert c.force_compaction("t") == 1  # from d@4: d, a, b fit
    assert p.log.cleaner_checkpoint == 7
    assert [o for o, _, _ in _visible(p)] == [3, 4, 5, 6, 7]


def test_a_key_the_full_map_holds_still_ends_the_round() -> None:
    """Kafka checks the map's size before each keyed record, not whether it holds the key."""
    c, clock = _cluster(map_size=2)
    p = _log(c, clock, [[b"a", b"b", b"a", b"c"]])
    assert c.force_compaction("t") == 1
    assert p.log.cleaner_checkpoint == 2  # a@2 finds a, b mapped
    assert [o for o, _, _ in _visible(p)] == [0, 1, 2, 3, 4]  # a@0 is the latest a the map knows
    assert c.force_compaction("t") == 1
    assert p.log.cleaner_checkpoint == 4
    assert [o for o, _, _ in _visible(p)] == [1, 2, 3, 4]


def _many_keys(overrides: dict[str, str]) -> tuple[ClusterState, Partition]:
    """50000 keys (more than the smallest buffer Kafka starts with maps), each written twice: a segment each."""
    clock = ManualClock(1_000_000)
    c = ClusterState(BrokerConfig.from_properties(overrides), clock, [Broker(1, "127.0.0.1", 9001)])
    p = _topic(c)
    for _ in range(2):
        for first in range(0, 50_000, 5000):
            batch = build_batch([{"key": b"k%d" % k, "value": b"v", "timestamp": clock.now_ms()}
                                 for k in range(first, first + 5000)])
            assert c.append(p, batch).error == ErrorCode.NONE
        _roll(clock)
    _put(c, p, clock, b"z", b"v")
    return c, p


def test_the_default_buffer_cleans_the_whole_range_in_one_round() -> None:
    c, clock = _cluster()
    p = _log(c, clock, KEYS)
    assert c.force_compaction("t") == 1
    assert p.log.cleaner_checkpoint == 7
    assert c.events[-1].details["cleaned_up_to"] == 7
    assert [o for o, _, _ in _visible(p)] == [3, 4, 5, 6, 7]
    c, p = _many_keys({})
    assert c.force_compaction("t") == 1
    assert p.log.cleaner_checkpoint == 100_000
    assert p.log.batches[0] and read_header(p.log.batches[0]).base_offset == 50_000  # the first writes all gone


def test_the_smallest_buffer_kafka_takes_maps_39321_keys_a_round() -> None:
    """Just over 1 MiB: 43690 slots, 0.9 of them filled."""
    c, p = _many_keys({"log.cleaner.dedupe.buffer.size": str((1 << 20) + 1)})
    assert c.force_compaction("t") == 1
    assert p.log.cleaner_checkpoint == 39321  # k39321 found the map full
    assert c.force_compaction("t") == 1  # the rest of the first writes, then the second ones up to the map's size
    assert p.log.cleaner_checkpoint == 78642  # 10679 first writes left, then k0..k28641 written again


def test_a_map_that_holds_no_key_leaves_the_logs_alone() -> None:
    """Kafka's cleaner threads fail to start then (a load factor set at run time; at start the broker fails)."""
    c, clock = _cluster()
    p = _log(c, clock, KEYS)
    c.set_broker_configs(None, {**c.config.dynamic_defaults, "log.cleaner.io.buffer.load.factor": "0"})
    assert c.force_compaction("t") == 0
    assert p.log.cleaner_checkpoint == -1


@pytest.mark.parametrize(("props", "message"), [
    ({"log.cleaner.dedupe.buffer.size": "1048576"},
     "requirement failed: log.cleaner.dedupe.buffer.size must be at least 1MB per cleaner thread."),
    ({"log.cleaner.threads": "200"},  # 128 MiB / 200 is under 1 MiB
     "requirement failed: log.cleaner.dedupe.buffer.size must be at least 1MB per cleaner thread."),
    ({"log.cleaner.threads": "0"}, "/ by zero"),
    ({"log.cleaner.io.buffer.load.factor": "0"},
     "requirement failed: offset map is too small to fit in even a single message, so log cleaning will never "
     "make progress. You can increase log.cleaner.dedupe.buffer.size or decrease log.cleaner.threads"),
])
def test_a_broker_kafka_would_not_start_is_refused(props: dict[str, str], message: str) -> None:
    with pytest.raises(InvalidConfig) as e:
        BrokerConfig.from_properties(props)
    assert str(e.value) == message


def test_buffers_kafka_starts_with_are_taken() -> None:
    BrokerConfig.from_properties({"log.cleaner.dedupe.buffer.size": "1048577"})  # over 1 MiB a thread
    BrokerConfig.from_properties({"log.cleaner.threads": "8", "log.cleaner.dedupe.buffer.size": str(16 << 20)})
    # the map's own requirement is the cleaner's: without one the broker starts
    BrokerConfig.from_properties({"log.cleaner.io.buffer.load.factor": "0", "log.cleaner.enable": "false"})
