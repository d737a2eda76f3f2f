"""The iteration and tie orders of the Java collections Kafka's assignors walk, for assignors that must make
Kafka's choices: a `java.util.HashMap`'s iteration order over string keys and a `java.util.PriorityQueue`'s
order among equal elements. Kafka's streams sticky assignor breaks its ties by these orders, not by ids.
Pure functions of their inputs.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Generic, TypeVar

__all__ = ["JavaPriorityQueue", "hashmap_order", "string_hash", "timeline_capacity", "timeline_order"]

T = TypeVar("T")
_DEFAULT_CAPACITY = 16
_LOAD_FACTOR = 0.75


def string_hash(s: str) -> int:
    """`String.hashCode()`, as an unsigned 32-bit value (over UTF-16 code units)."""
    h = 0
    data = s.encode("utf-16-be")
    for i in range(0, len(data), 2):
        h = (31 * h + (data[i] << 8 | data[i + 1])) & 0xFFFFFFFF
    return h


def _table_size_for(capacity: int) -> int:
    n = 1
    while n < capacity:
        n <<= 1
    return n


def _spread(k: str) -> int:
    h = string_hash(k)
    return h ^ (h >> 16)


def hashmap_order(
    keys: Iterable[str], initial_capacity: int | None = None, *, compute_if_absent: bool = False
) -> list[str]:
    """The order a `HashMap<String, ?>` (`new HashMap<>()`, or `new HashMap<>(initial_capacity)`) iterates the keys
    put into it in this order (repeats allowed), by simulating its table: `put` appends to a bucket and grows the
    table right after the insertion that passes the threshold; `computeIfAbsent` puts the new key first in its
    bucket and grows the table only on its next call, present key or not. A resize keeps each bucket's order.
    (Buckets never reach Java's treeify threshold in the groups this serves.)"""
    table: list[list[str]] = []
    present: set[str] = set()
    threshold = _table_size_for(initial_capacity) if initial_capacity is not None else 0

    def resize() -> None:
        nonlocal table, threshold
        cap = len(table)
        if cap == 0:  # the first insertion allocates the table
            new_cap = threshold or _DEFAULT_CAPACITY
            threshold = int(new_cap * _LOAD_FACTOR)
        else:  # doubles; the threshold doubles too from the default capacity on, else is recomputed
            new_cap = cap << 1
            threshold = threshold << 1 if cap >= _DEFAULT_CAPACITY else int(new_cap * _LOAD_FACTOR)
        new: list[list[str]] = [[] for _ in range(new_cap)]
        for bucket in table:
            for k in bucket:
                new[_spread(k) & (new_cap - 1)].append(k)
        table = new

    for k in keys:
        if compute_if_absent and (not table or len(present) > threshold):
            resize()
        if k in present:
            continue
        if not table:
            resize()
        bucket = table[_spread(k) & (len(table) - 1)]
        if compute_if_absent:
            bucket.insert(0, k)
        else:
            bucket.append(k)
        present.add(k)
        if not compute_if_absent and len(present) > threshold:
            resize()
    return [k for bucket in table for k in bucket]


_GOLDEN = 0x9E3779B97F4A7C15
"""Kafka's BaseHashTable multiplies a key's hash by this (as a signed long, -7046029254386353131) and keeps the
top bits."""


def timeline_capacity(high_water: int) -> int:
    """The table size of Kafka's `TimelineHashMap(registry, 0)` once it has held `high_water` entries and been put
    to again at that size: it starts at 2 and doubles, before any put (a replacement too), while
    (size + 1) * 0.75 exceeds it; it never shrinks."""
    capacity = 2
    while (high_water + 1) * 0.75 > capacity:
        capacity *= 2
    return capacity


def timeline_order(keys: Iterable[str], capacity: int) -> list[str]:
    """The order a Kafka `TimelineHashMap<String, ?>` with that table size iterates its keys, given in the order
    they were (last) added: by slot (the top bits of the hash times the golden ratio), then latest first (a slot
    appends, a rehash and a removal keep its order, and its iterator takes a slot's entries from the end)."""
    shift = 64 - (capacity.bit_length() - 1)

    def slot(k: str) -> int:
        h = string_hash(k)
        signed = h - (1 << 32) if h & 0x80000000 else h
        return ((signed * _GOLDEN) & 0xFFFFFFFFFFFFFFFF) >> shift

    order = list(dict.fromkeys(keys))
    return sorted(order, key=lambda k: (slot(k), -order.index(k)))


class JavaPriorityQueue(Generic[T]):
    """`java.util.PriorityQueue` with a comparator on `key`: the same binary heap, so equal elements come out in
    the order Java's would."""

    def __init__(self, key: Callable[[T], float]) -> None:
        self._key = key
        self._heap: list[T] = []

    def __len__(self) -> int:
        return len(self._heap)

    def _cmp(self, a: T, b: T) -> int:
        ka, kb = self._key(a), self._key(b)
        return (ka > kb) - (ka < kb)

    def add(self, x: T) -> None:
        heap = self._heap
        heap.append(x)
        k = len(heap) - 1
        while k > 0:
            parent = (k - 1) >> 1
            e = heap[parent]
            if self._cmp(x, e) >= 0:
                break
            heap[k] = e
            k = parent
        heap[k] = x

    def poll(self) -> T | None:
        heap = self._heap
        if not heap:
            return None
        result = heap[0]
        x = heap.pop()
        n = len(heap)
        if n > 0:
            k, half = 0, n >> 1
            while k < half:
                child = 2 * k + 1
                c = heap[child]
                right = child + 1
                if right < n and self._cmp(c, heap[right]) > 0:
                    child = right
                    c = heap[child]
                if self._cmp(x, c) <= 0:
                    break
                heap[k] = c
                k = child
            heap[k] = x
        return result
