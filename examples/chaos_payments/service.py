"""A payment service: two workers in one consumer group (confluent-kafka) read orders and charge each one (a record
in `charges`: the side effect that must happen once per order). Each worker takes records in ahead of its work (up
to `PREFETCH` waiting in memory) and commits its processed offsets every `COMMIT_EVERY` charges, not after every
record, never below its own last commit. Two versions:

- `run_payments` as it was shipped ignores revocation: when a rebalance takes its partitions away it neither
  commits the charges it made since its last commit nor drops the records it had taken in, and goes on charging
  them. Whoever is assigned the partition next (the other worker, or itself after the eager rebalance) starts from
  the group's committed offset and charges those orders again;
- `run_payments_fixed` handles it in `on_revoke`: it commits what it processed for the revoked partitions (the
  coordinator still accepts the member's commits while the group prepares the rebalance) and drops the records it
  holds for partitions it no longer owns (`on_lost`, when its membership is gone and no commit can land, only
  drops them).

A session expiry is beyond the fix: the expired worker's commit is refused and its charges since the last commit are
made again by the next owner. Only a charge the payment provider deduplicates by order avoids that."""

from __future__ import annotations

import threading
import time
from collections import Counter, deque
from collections.abc import Callable

from confluent_kafka import Consumer, KafkaException, Message, Producer, TopicPartition

from fakekafka.chaos import Profile

COMMIT_EVERY = 10
"""Charges between two commits of a worker's processed offsets."""
PREFETCH = 10
"""Records a worker takes in ahead of its work."""
CHARGE_S = 0.02
"""How long the payment provider takes per charge (beside writing the charge)."""


class _Worker:
    """One member of the group, run on a thread of its own (librdkafka calls its rebalance callbacks from the
    thread that consumes)."""

    def __init__(
        self,
        name: str,
        bootstrap: str,
        *,
        handle_revoke: bool,
        source: str,
        sink: str,
        group: str,
        charged: Counter[bytes],
        lock: threading.Lock,
    ) -> None:
        self.name = name
        self.handle_revoke = handle_revoke
        self.source, self.sink = source, sink
        self.charged, self.lock = charged, lock
        self.consumer = Consumer(
            {
                "bootstrap.servers": bootstrap,
                "group.id": group,
                "client.id": name,
                "enable.auto.commit": False,
                "auto.offset.reset": "earliest",
                "partition.assignment.strategy": "range",
                "session.timeout.ms": 6000,
                "heartbeat.interval.ms": 100,
                "retry.backoff.ms": 10,
            }
        )
        self.producer = Producer(
            {"bootstrap.servers": bootstrap, "client.id": f"{name}-charges", "enable.idempotence": True, "linger.ms": 0}
        )
        self.buffer: deque[Message] = deque()
        self.owned: set[tuple[str, int]] = set()
        self.processed: dict[tuple[str, int], int] = {}
        """The next offset after the last record charged, per partition, not committed yet."""
        self.committed: dict[tuple[str, int], int] = {}
        """The offset this worker last committed per partition: its commits only go forward (a shipped worker that
        charges again the records a rebalance sent it back to does not commit them below its own last commit)."""
        self.started: dict[tuple[str, int], int] = {}
        """Where reading began for each owned partition (the group's committed offset when it was assigned): a
        partition read to its end without a record has no position, and its committed offset can move back later (a
        shipped worker's late commit for a partition it lost)."""
        self.since_commit = 0
        self.idle = False
        """Caught up: nothing waiting, nothing uncommitted, each owned partition read to its end."""
        self.error: BaseException | None = None

    # --- the rebalance listener ---------------------------------------------------------------------------
    def on_assign(self, consumer: Consumer, partitions: list[TopicPartition]) -> None:
        self.owned |= {(tp.topic, tp.partition) for tp in partitions}
        self.idle = False
        try:
            for tp in consumer.committed(partitions, timeout=5):
                self.started[(tp.topic, tp.partition)] = tp.offset
        except KafkaException:
            pass  # not known: the worker is caught up only once it has read to the end or committed it

    def on_revoke(self, _consumer: Consumer, partitions: list[TopicPartition]) -> None:
        revoked = {(tp.topic, tp.partition) for tp in partitions}
        self.idle = False
        if self.handle_revoke:
            self._commit(revoked)  # the charges made so far stay charged: the next owner starts after them
            self._drop(revoked)  # and the records taken in for them are the next owner's to charge
        self.owned -= revoked
        for tp in revoked:
            self.started.pop(tp, None)

    def on_lost(self, _consumer: Consumer, partitions: list[TopicPartition]) -> None:
        lost = {(tp.topic, tp.partition) for tp in partitions}
        self.idle = False
        if self.handle_revoke:
            self._drop(lost)  # the membership is gone: no commit can land, but nothing more is charged for them
            for tp in lost:
                self.processed.pop(tp, None)
        self.owned -= lost
        for tp in lost:
            self.started.pop(tp, None)

    def _drop(self, partitions: set[tuple[str, int]]) -> None:
        self.buffer = deque(m for m in self.buffer if (m.topic(), m.partition()) not in partitions)

    # --- the work --------------------------------------------------------------------------------------------
    def run(self, stop: threading.Event) -> None:
        try:
            self.consumer.subscribe(
                [self.source], on_assign=self.on_assign, on_revoke=self.on_revoke, on_lost=self.on_lost
            )
            while not stop.is_set():
                self.step()
        except BaseException as e:  # noqa: BLE001 - the runner reports it
            self.error = e
        finally:
            self.consumer.close()  # revokes what it owns (the fixed worker commits there), leaves the group
            self.producer.flush(10)
            self.producer = None  # type: ignore[assignment]  # closed now, not when the collector gets to it

    def step(self) -> None:
        """Takes records in when fewer than PREFETCH wait (rebalance callbacks run in here), charges one, and
        commits every COMMIT_EVERY charges (and when there is nothing to do)."""
        if len(self.buffer) < PREFETCH:
            taken = self.consumer.consume(PREFETCH - len(self.buffer), 0 if self.buffer else 0.1)
            self.buffer.extend(m for m in taken if m.error() is None)
        if not self.buffer:
            if self.processed:
                self._commit(set(self.processed))
            self.idle = self._caught_up()
            return
        self.idle = False
        m = self.buffer.popleft()
        self._charge(m)
        self.processed[(m.topic(), m.partition())] = m.offset() + 1
        self.since_commit += 1
        if self.since_commit >= COMMIT_EVERY:
            self._commit(set(self.processed))

    def _charge(self, m: Message) -> None:
        time.sleep(CHARGE_S)  # the payment provider's call
        self.producer.produce(self.sink, key=m.key(), value=b"charged " + (m.value() or b""))
        if self.producer.flush(10):
            raise RuntimeError(f"{self.name}: the charge for order {m.key()!r} was not written")
        with self.lock:
            self.charged[m.key()] += 1

    def _commit(self, partitions: set[tuple[str, int]]) -> None:
        for key in [k for k in partitions if self.processed.get(k, 0) <= self.committed.get(k, -1)]:
            self.processed.pop(key, None)  # charged again below what it committed: nothing new to commit
        offsets = [TopicPartition(t, p, o) for (t, p), o in sorted(self.processed.items()) if (t, p) in partitions]
        if not offsets:
            return
        try:
            self.consumer.commit(offsets=offsets, asynchronous=False)
        except KafkaException:
            return  # refused (a rebalance under way): kept for the next commit
        for tp in offsets:
            self.committed[(tp.topic, tp.partition)] = tp.offset
            if self.processed.get((tp.topic, tp.partition)) == tp.offset:
                del self.processed[(tp.topic, tp.partition)]
        self.since_commit = 0

    def _caught_up(self) -> bool:
        if not self.owned or self.processed:
            return False
        tps = [TopicPartition(t, p) for t, p in sorted(self.owned)]
        try:
            committed = {(tp.topic, tp.partition): tp.offset for tp in self.consumer.committed(tps, timeout=5)}
        except KafkaException:
            return False  # asked again at the next idle step
        for tp in self.consumer.position(tps):  # -1001 until a record of this assignment was consumed
            _, high = self.consumer.get_watermark_offsets(tp, cached=True)
            key = (tp.topic, tp.partition)
            if high < 0 or max(tp.offset, committed[key], self.started.get(key, -1)) < high:
                return False
        return True


def _run(
    bootstrap: str,
    produce_orders: Callable[[], int],
    *,
    handle_revoke: bool,
    source: str,
    sink: str,
    group: str,
    workers: int,
    deadline_s: float,
) -> Counter[bytes]:
    """Starts the workers, produces the orders once every worker holds partitions (so the group's first
    rebalances happen before there is work), and stops the workers when every order is charged and every worker
    is caught up, or at the deadline. Returns how many times each order was charged."""
    charged: Counter[bytes] = Counter()
    lock = threading.Lock()
    stop = threading.Event()
    crew = [
        _Worker(
            f"payments-{i}",
            bootstrap,
            handle_revoke=handle_revoke,
            source=source,
            sink=sink,
            group=group,
            charged=charged,
            lock=lock,
        )
        for i in range(workers)
    ]
    threads = [threading.Thread(target=w.run, args=(stop,), name=w.name, daemon=True) for w in crew]
    for t in threads:
        t.start()
    deadline = time.monotonic() + deadline_s
    try:
        while not all(w.owned for w in crew) and time.monotonic() < deadline:
            _raise_any(crew)
            time.sleep(0.05)
        orders = produce_orders()
        while time.monotonic() < deadline:
            _raise_any(crew)
            with lock:
                done = len(charged) >= orders
            if done and all(w.idle for w in crew):
                break
            time.sleep(0.05)
        else:
            raise RuntimeError(
                f"the payment service did not finish in {deadline_s} s: {len(charged)} of {orders} order(s) charged"
            )
    finally:
        stop.set()
        for t in threads:
            t.join(30)
    _raise_any(crew)
    return charged


def _raise_any(crew: list[_Worker]) -> None:
    for w in crew:
        if w.error is not None:
            raise RuntimeError(f"{w.name} failed: {w.error}") from w.error


def produce_orders(bootstrap: str, count: int = 60, topic: str = "orders") -> Callable[[], int]:
    """What the runner calls once the workers are up: writes `count` orders, returns how many."""

    def write() -> int:
        p = Producer({"bootstrap.servers": bootstrap, "enable.idempotence": True, "linger.ms": 5})
        for i in range(count):
            p.produce(topic, key=f"order-{i}".encode(), value=f'{{"order": {i}, "amount": {10 + i}}}'.encode())
        if p.flush(30):
            raise RuntimeError("the orders were not all written")
        return count

    return write


def run_payments(
    bootstrap: str,
    orders: int = 60,
    source: str = "orders",
    sink: str = "charges",
    group: str = "payments",
    workers: int = 2,
    deadline_s: float = 30,
) -> Counter[bytes]:
    """The planted bug: a revoked partition's processed records are not committed and its records taken in are
    still charged."""
    return _run(
        bootstrap,
        produce_orders(bootstrap, orders, source),
        handle_revoke=False,
        source=source,
        sink=sink,
        group=group,
        workers=workers,
        deadline_s=deadline_s,
    )


def run_payments_fixed(
    bootstrap: str,
    orders: int = 60,
    source: str = "orders",
    sink: str = "charges",
    group: str = "payments",
    workers: int = 2,
    deadline_s: float = 30,
) -> Counter[bytes]:
    return _run(
        bootstrap,
        produce_orders(bootstrap, orders, source),
        handle_revoke=True,
        source=source,
        sink=sink,
        group=group,
        workers=workers,
        deadline_s=deadline_s,
    )


REBALANCES = Profile(
    "rebalances",
    error_rate=0,
    latency_rate=0,
    drop_rate=0,
    rebalance_rate=0.3,
    apis=("OffsetCommit",),
    max_faults=2,
)
"""The chaos this service is tested under: its group's coordinator starts a rebalance (a member joining or leaving)
at one of the workers' commits, so both workers are told to rejoin while they are in the middle of their orders.
Drawn at commits, whose number follows the records processed rather than a timer, so a replay meets the same
moment of the work."""


def each_order_charged_once(view: object) -> str | None:
    """The app's invariant: every order has exactly one charge."""
    counts = Counter(r.key for r in view.records("charges"))  # type: ignore[attr-defined]
    orders = [r.key for r in view.records("orders")]  # type: ignore[attr-defined]
    twice = [k for k in orders if counts[k] > 1]
    never = [k for k in orders if not counts[k]]
    problems = []
    if twice:
        problems.append(
            f"{len(twice)} order(s) charged more than once "
            f"({', '.join(f'{k.decode()} x{counts[k]}' for k in twice[:5])})"
        )
    if never:
        problems.append(f"{len(never)} order(s) never charged (first: {[k.decode() for k in never[:5]]})")
    return "; ".join(problems) or None
