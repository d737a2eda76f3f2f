"""fakekafka/testing/ports.py: ports for the processes a test starts, out of the way of outgoing connections."""

from __future__ import annotations

import socket

import pytest

from fakekafka.testing import ports


def test_ports_are_distinct_free_and_below_the_ephemeral_range() -> None:
    top = ports._ephemeral_start()
    got = ports.free_ports(8)
    assert len(set(got)) == 8
    assert all(ports.LOWEST <= p < top for p in got)
    for p in got:
        with socket.socket() as s:
            s.bind(("127.0.0.1", p))  # free: nothing holds it after the choice


def test_a_taken_port_is_not_chosen(monkeypatch: pytest.MonkeyPatch) -> None:
    with socket.socket() as held:
        held.bind(("127.0.0.1", 0))
        taken = held.getsockname()[1]
        # the held port is drawn twice, then 0 (the kernel's choice, which binds whatever else runs): only a
        # choice that skips a port it cannot bind gets past the first two draws
        draws = iter([taken, taken, 0])
        monkeypatch.setattr(ports.random.Random, "randrange", lambda self, a, b: next(draws))
        got = ports.free_ports(1)
        assert got != [taken] and next(draws, "used up") == "used up"


def test_without_room_below_the_range_the_kernel_chooses(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(ports, "_ephemeral_start", lambda: ports.LOWEST)
    got = ports.free_ports(3)
    assert len(set(got)) == 3
