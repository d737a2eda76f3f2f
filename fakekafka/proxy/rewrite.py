"""Broker addresses in responses, replaced by the proxy's own listeners so that no client reaches past it.

Kafka names brokers with the same three fields everywhere: Metadata's brokers, DescribeCluster's brokers
(`broker_id`), FindCoordinator (top level before v4, `coordinators` after), and the `node_endpoints` that
Produce v10+, Fetch v16+, ShareFetch and ShareAcknowledge add when a leader moved (KIP-951). One walk finds
them all. Metadata, DescribeCluster and FindCoordinator are always decoded; the others only when an upstream
host's name appears in the frame's bytes, which a search does at memory speed, so the hot path of Produce
and Fetch stays undecoded. (A large Fetch answer is not even held for that: fakekafka/proxy/stream.py finds
and rewrites its node endpoints while the rest passes through.)
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from fakekafka.wire import ApiKey

__all__ = ["ALWAYS_DECODED", "MAYBE_ADDRESSES", "may_name_a_broker", "rewrite_addresses"]

ALWAYS_DECODED = frozenset({ApiKey.METADATA, ApiKey.FIND_COORDINATOR, ApiKey.DESCRIBE_CLUSTER})
MAYBE_ADDRESSES = {ApiKey.PRODUCE: 10, ApiKey.FETCH: 16, ApiKey.SHARE_FETCH: 0, ApiKey.SHARE_ACKNOWLEDGE: 0}
"""API key -> first version whose response may carry node endpoints."""

Rewriter = Callable[[int, str, int], tuple[str, int]]
"""(node id, upstream host, upstream port) -> the (host, port) clients are told instead."""


def may_name_a_broker(api_key: int, version: int, frame: bytes | bytearray | memoryview,
                      hosts: Iterable[bytes]) -> bool:
    """Whether a response must be decoded to rewrite addresses: always for the cluster-describing APIs,
    for the others only when an upstream host name occurs in it (a record that happens to contain one
    costs a decode, nothing else)."""
    if api_key in ALWAYS_DECODED:
        return True
    first = MAYBE_ADDRESSES.get(api_key)
    if first is None or version < first:
        return False
    data = frame if isinstance(frame, (bytes, bytearray)) else bytes(frame)
    return any(host in data for host in hosts)


def rewrite_addresses(body: Any, rewrite: Rewriter) -> int:
    """Replaces, in place, every (node id, host, port) triple of a decoded response with what `rewrite`
    gives; returns how many it replaced. A node id below 0 (FindCoordinator's "no coordinator") is left
    alone."""
    count = 0

    def walk(obj: Any) -> None:
        nonlocal count
        if isinstance(obj, dict):
            node = obj.get("node_id", obj.get("broker_id"))
            host, port = obj.get("host"), obj.get("port")
            if isinstance(node, int) and node >= 0 and isinstance(host, str) and isinstance(port, int):
                obj["host"], obj["port"] = rewrite(node, host, port)
                count += 1
            for value in obj.values():
                if isinstance(value, (dict, list)):
                    walk(value)
        elif isinstance(obj, list):
            for item in obj:
                if isinstance(item, (dict, list)):
                    walk(item)

    walk(body)
    return count
