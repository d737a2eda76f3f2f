"""Idempotent producer state: ids, epochs, sequence checks and duplicate detection."""

from __future__ import annotations

from fakekafka.model.producers import PartitionProducers, ProducerIds
from fakekafka.wire import ErrorCode
from fakekafka.wire.records import build_batch, read_header


def _header(pid: int, epoch: int, seq: int, n: int = 1):  # noqa: ANN202
    return read_header(build_batch([{"value": b"v"}] * n, producer_id=pid, producer_epoch=epoch, base_sequence=seq))


def test_sequences_in_order_are_accepted_and_recorded() -> None:
    state = PartitionProducers()
    offset = 0
    for seq, n in ((0, 3), (3, 2), (5, 1)):
        h = _header(1, 0, seq, n)
        assert state.check(h).error == ErrorCode.NONE
        state.record(h, offset, -1)
        offset += n


def test_a_retried_batch_gets_its_original_offset() -> None:
    state = PartitionProducers()
    first = _header(1, 0, 0, 2)
    state.record(first, 40, -1)
    state.record(_header(1, 0, 2), 42, -1)
    check = state.check(_header(1, 0, 0, 2))
    assert check.duplicate_of == 40 and check.error == ErrorCode.NONE


def test_gaps_are_rejected_and_a_producer_new_here_starts_anywhere() -> None:
    state = PartitionProducers()
    assert state.check(_header(1, 0, 5)).error == ErrorCode.NONE  # as Kafka: its state may have been removed
    state.record(_header(1, 0, 0), 0, -1)
    assert state.check(_header(1, 0, 2)).error == ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER


def test_epochs_fence_and_restart_sequences() -> None:
    state = PartitionProducers()
    state.record(_header(1, 1, 0), 0, -1)
    assert state.check(_header(1, 0, 1)).error == ErrorCode.INVALID_PRODUCER_EPOCH
    assert state.check(_header(1, 2, 1)).error == ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER
    assert state.check(_header(1, 2, 0)).error == ErrorCode.NONE


def test_only_the_last_five_batches_are_remembered() -> None:
    state = PartitionProducers()
    for i in range(6):
        state.record(_header(1, 0, i), i, -1)
    assert state.check(_header(1, 0, 0)).error == ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER
    assert state.check(_header(1, 0, 1)).duplicate_of == 1


def test_producer_ids_and_kip360_epoch_bumps() -> None:
    ids = ProducerIds()
    _, a, ea = ids.init()
    _, b, _ = ids.init()
    assert a != b and ea == 0
    assert ids.init(a, 0)[1:] == (a, 1)  # KIP-360 epoch bump
    _, c, ec = ids.init(a, 32766)  # an exhausted epoch: a new id
    assert c not in (a, b) and ec == 0
