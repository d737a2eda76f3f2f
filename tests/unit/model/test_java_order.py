"""`fakekafka.model.java_order` against what Java 17 printed for the same operations (the expected lists below
were printed by `java.util.HashMap.keySet()` and `java.util.PriorityQueue.poll()`); the streams sticky assignor
relies on them to break ties as Kafka's does."""

from __future__ import annotations

from fakekafka.model.java_order import JavaPriorityQueue, hashmap_order, string_hash, timeline_capacity, timeline_order

PROCESSES = ["process-0", "process-1", "process-2", "process-3"]


def test_string_hash_is_javas() -> None:
    """Unsigned `String.hashCode()`, over UTF-16 code units (a surrogate pair counts as two)."""
    assert string_hash("") == 0
    assert string_hash("Aa") == string_hash("BB") == 2112
    assert string_hash("process-0") == 3200205906
    assert string_hash("h\u00e9llo\U0001f600") == 291564465


def test_put_grows_the_table_after_the_insertion_that_passes_the_threshold() -> None:
    assert hashmap_order(PROCESSES, 4) == ["process-3", "process-2", "process-1", "process-0"]


def test_compute_if_absent_grows_it_only_on_the_next_call() -> None:
    """Kafka's processIdToState (`new HashMap<>(members)`, filled by computeIfAbsent): 4 keys stay in 4 buckets."""
    assert hashmap_order(PROCESSES, 4, compute_if_absent=True) == ["process-1", "process-0", "process-3", "process-2"]


def test_colliding_keys_keep_insertion_order_on_put_and_go_first_on_compute_if_absent() -> None:
    """ "Aa" and "BB" hash alike, so "Aa<i>" and "BB<i>" share a bucket; the table resizes twice on the way."""
    want = (
        "Aa10,BB10,Aa0,BB0,Aa1,BB1,Aa2,BB2,Aa3,BB3,Aa4,BB4,Aa5,BB5,Aa6,BB6,Aa7,BB7,Aa8,BB8,Aa9,BB9,"
        "Aa13,BB13,Aa11,BB11,Aa12,BB12"
    ).split(",")
    put = [k for i in range(14) for k in (f"Aa{i}", f"BB{i}")]
    computed = [k for i in range(14) for k in (f"BB{i}", f"Aa{i}")]
    assert hashmap_order(put) == want
    assert hashmap_order(computed, compute_if_absent=True) == want


def test_repeated_keys_count_once() -> None:
    assert hashmap_order(["b", "a", "b"]) == ["a", "b"]
    assert hashmap_order([]) == []


def test_priority_queue_breaks_ties_as_javas_heap() -> None:
    """Keys 2,1,1,0,2,1,0,1 added in that order; the first polled re-added with key 3; Java polls 3 6 1 2 7 5 0 4 3."""
    q: JavaPriorityQueue[list[int]] = JavaPriorityQueue(lambda e: e[0])
    for i, k in enumerate([2, 1, 1, 0, 2, 1, 0, 1]):
        q.add([k, i])
    first = q.poll()
    assert first is not None
    first[0] = 3
    q.add(first)
    order = [first[1]]
    while (e := q.poll()) is not None:
        order.append(e[1])
    assert order == [3, 6, 1, 2, 7, 5, 0, 4, 3]
    assert len(q) == 0


def test_timeline_order_is_kafkas_timeline_hash_map() -> None:
    """Java printed c e b d a for a..e put into a TimelineHashMap(registry, 0) (its table grown to 4), and aaaa cccc
    bbbb; a table of 8 splits each slot in two and keeps that order here."""
    assert timeline_order("abcde", 4) == timeline_order("abcde", 8) == ["c", "e", "b", "d", "a"]
    assert timeline_order(["aaaa", "bbbb", "cccc"], 4) == ["aaaa", "cccc", "bbbb"]
    assert timeline_capacity(0) == 2
    assert timeline_capacity(4) == 4
    assert timeline_capacity(5) == 8
