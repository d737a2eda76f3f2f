"""What a client adapter offers the scenarios, and the errors it may raise.

A scenario is written once against `Client`; each adapter (kafka-python, aiokafka, confluent-kafka, kcat,
the Java client) translates the calls into its own client's API and its answers back into plain data.

Three kinds of failure, kept apart because the table shows them differently:

- `ClientError`: the client reported an error a scenario can expect (a broker error code, a client-side
  timeout). It carries Kafka's error name (`code`, from wire.ErrorCode, or one of LOCAL_ERRORS), the
  client's own type name (`type`) and its message. Scenarios record it in their outcome.
- `Unsupported`: the client cannot do this at all (kcat has no admin API). The cell shows "unsupported".
- `HarnessError` (and any other exception): the adapter or its subprocess failed or hung. The cell shows
  "error".
"""

from __future__ import annotations

import concurrent.futures
import logging
import queue
import threading
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from compat.clients.catalog import CONSUMER_PROTOCOL_REFUSALS

__all__ = [
    "LOCAL_ERRORS", "TP", "Client", "ClientError", "HarnessError", "Member", "MemberOptions", "PollingMember", "Rec",
    "Timing", "TxnProducer", "Unsupported", "config_source", "error_name", "group_description", "group_state", "needs",
    "rec_from_json", "rec_to_json",
]

LOCAL_ERRORS = {
    "TIMEOUT": "the client gave up waiting (for metadata, a delivery or a response)",
    "NO_OFFSET_FOR_PARTITION": "auto.offset.reset none/error and no committed offset",
    "CLIENT_REJECTED": "the client refused the request itself, without sending it",
}
"""Error names for what clients detect themselves (every other name is one of Kafka's error codes)."""


class Unsupported(Exception):
    """The client has no way to do this (the cell shows 'unsupported', with this message)."""


class HarnessError(RuntimeError):
    """The adapter, its subprocess or the client failed in a way no scenario expects."""


class ClientError(Exception):
    """An error the client reported: Kafka's error name, the client's type name, its message."""

    def __init__(self, code: str, type_: str = "", message: str = "") -> None:
        super().__init__(f"{code} ({type_}): {message}")
        self.code = code
        self.type = type_
        self.message = message

    def outcome(self) -> dict[str, str]:
        """How a scenario records it: the error name, and the type (dropped when comparing across clients)."""
        return {"error": self.code, "exception": self.type}


def error_name(code: int) -> str:
    """Kafka's name for a numeric error code (`UNKNOWN_ERROR_<n>` for a code wire does not know)."""
    from fakekafka.wire import ErrorCode
    try:
        return ErrorCode(code).name
    except ValueError:
        return f"UNKNOWN_ERROR_{code}"


def library_error(e: BaseException, local: dict[type[BaseException], str],
                  library_base: type[BaseException]) -> ClientError:
    """An exception of kafka-python or aiokafka (one shape of error classes) as an outcome: errors the
    client raises itself by the name in `local`, broker errors by their errno, any other error of the
    library as CLIENT:<type>; anything else is not the client's answer and is raised again."""
    if isinstance(e, ClientError):
        return e
    for cls, name in local.items():
        if isinstance(e, cls):
            return ClientError(name, type(e).__name__, str(e))
    errno = getattr(e, "errno", None)
    if isinstance(errno, int):
        return ClientError(error_name(errno), type(e).__name__, str(e))
    if isinstance(e, library_base):
        return ClientError(f"CLIENT:{type(e).__name__}", type(e).__name__, str(e))
    raise e


def library_record(r: Any) -> Rec:
    """A kafka-python or aiokafka ConsumerRecord (the same attributes) as a Rec."""
    return Rec(r.key, r.value, [(k, v) for k, v in r.headers], r.partition, r.offset, r.timestamp)


@dataclass
class Timing:
    """Timeouts and group settings for one broker: short against fakekafka, generous against tansu."""

    op_s: float = 15.0  # one produce/fetch/admin call
    fetch_s: float = 10.0  # waiting for records to arrive
    group_s: float = 30.0  # waiting for a group's assignments to settle
    session_timeout_ms: int = 6000  # Kafka's group.min.session.timeout.ms: the fastest crash detection
    heartbeat_ms: int = 500
    metadata_ms: int = 2000  # how long a producer waits for a topic to appear (unknown topic scenario)


@dataclass
class Rec:
    """One record, as produced (partition, timestamp optional) or consumed (offset, timestamp filled in)."""

    key: bytes | None
    value: bytes | None
    headers: list[tuple[str, bytes | None]] = field(default_factory=list)
    partition: int | None = None
    offset: int = -1
    timestamp: int | None = None


def _hex(b: bytes | None) -> str | None:
    return None if b is None else b.hex()


def _unhex(s: str | None) -> bytes | None:
    return None if s is None else bytes.fromhex(s)


def rec_to_json(r: Rec) -> dict[str, Any]:
    """The agents' wire form of a record (bytes as hex strings, null as null)."""
    return {"k": _hex(r.key), "v": _hex(r.value), "h": [[n, _hex(v)] for n, v in r.headers],
            "p": r.partition, "o": r.offset, "ts": r.timestamp}


def rec_from_json(d: dict[str, Any]) -> Rec:
    return Rec(_unhex(d.get("k")), _unhex(d.get("v")), [(n, _unhex(v)) for n, v in d.get("h") or []],
               d.get("p"), d.get("o", -1), d.get("ts"))


TP = tuple[str, int]


@dataclass(frozen=True)
class MemberOptions:
    """What a scenario may set on a member besides its group, topic and reset policy."""

    instance_id: str | None = None
    session_timeout_ms: int = 6000
    group_protocol: str = "classic"
    """"consumer": KIP-848's protocol (the broker assigns; ConsumerGroupHeartbeat), for clients that speak it."""


GROUP_STATES = {"stable": "Stable", "empty": "Empty", "dead": "Dead", "unknown": "Unknown",
                **{s: "PreparingRebalance" for s in ("preparingrebalance", "preparing_rebalance",
                                                     "preparing_rebalancing")},
                **{s: "CompletingRebalance" for s in ("completingrebalance", "completing_rebalance",
                                                      "completing_rebalancing")}, "assigning": "Assigning",
                "reconciling": "Reconciling", "notready": "NotReady", "not_ready": "NotReady"}


def group_state(s: Any) -> str:
    """A group state as Kafka names it on the wire ("Stable"), from a client's enum or string."""
    text = str(getattr(s, "name", s) or "").rsplit(".", 1)[-1]
    return GROUP_STATES.get(text.lower(), text)


CONFIG_SOURCES = {1: "DYNAMIC_TOPIC_CONFIG", 2: "DYNAMIC_BROKER_CONFIG", 3: "DYNAMIC_DEFAULT_BROKER_CONFIG",
                  4: "STATIC_BROKER_CONFIG", 5: "DEFAULT_CONFIG", 6: "DYNAMIC_BROKER_LOGGER_CONFIG",
                  7: "CLIENT_METRICS_CONFIG", 8: "GROUP_CONFIG", 0: "UNKNOWN"}


def config_source(s: Any) -> str:
    """A config source by Kafka's wire name (DYNAMIC_TOPIC_CONFIG...), from a client's enum, int or string."""
    if isinstance(s, int) and not hasattr(s, "name"):
        return CONFIG_SOURCES.get(s, str(s))
    text = str(getattr(s, "name", s)).rsplit(".", 1)[-1].upper()
    return {"UNKNOWN_CONFIG": "UNKNOWN"}.get(text, text)


def group_description(state: Any, protocol_type: Any, protocol: Any,
                      members: list[tuple[list[int], str | None]]) -> dict[str, Any]:
    """describe_group()'s answer from the parts every client shows."""
    return {"state": group_state(state), "protocol_type": protocol_type or "", "protocol": protocol or "",
            "members": sorted(({"assignment": sorted(a), "instance_id": i} for a, i in members),
                              key=lambda m: (m["assignment"], m["instance_id"] or ""))}


def needs(obj: Any, attr: str, what: str) -> Any:
    """obj.attr, or Unsupported when this version of the client library lacks it."""
    found = getattr(obj, attr, None)
    if found is None:
        raise Unsupported(f"this client version has no {what} ({attr})")
    return found


class Member:
    """A consumer with a group.id: subscribed (a group member) or manually assigned. It polls all the time
    on its own (so it takes part in rebalances whenever they happen) and keeps what it received."""

    def assignment(self) -> list[TP]:
        """The partitions the client holds now, sorted."""
        raise NotImplementedError

    def take(self) -> list[Rec]:
        """The records received since the last take(), in arrival order."""
        raise NotImplementedError

    def errors(self) -> list[ClientError]:
        """Errors the poll loop saw since the last call (e.g. NO_OFFSET_FOR_PARTITION)."""
        raise NotImplementedError

    def commit(self, offsets: dict[TP, tuple[int, str | None]]) -> None:
        """Commit these offsets (with metadata when given) synchronously; raises ClientError."""
        raise NotImplementedError

    def position(self, tp: TP) -> int | None:
        """The next offset the client will fetch, once it knows it (None before)."""
        raise NotImplementedError

    def seek(self, tp: TP, offset: int) -> None:
        raise NotImplementedError

    def pause(self, tps: list[TP]) -> None:
        """Stop fetching these partitions (the member keeps polling, so it stays in the group)."""
        raise Unsupported("pause")

    def resume(self, tps: list[TP]) -> None:
        raise Unsupported("resume")

    def close(self) -> None:
        """Leave the group politely (LeaveGroup) and close."""
        raise NotImplementedError

    def kill(self) -> None:
        """Die without leaving (only members running in their own process can)."""
        raise Unsupported("this member runs inside the harness process and cannot be killed")


class TxnProducer:
    """A transactional producer (transactional.id set, InitProducerId done): the calls an exactly-once
    application makes, each raising ClientError with the client's error (Kafka's name, or CLIENT_REJECTED for
    what the client refuses itself: a commit with no transaction begun)."""

    def begin(self) -> None:
        raise NotImplementedError

    def send(self, topic: str, recs: list[Rec]) -> list[tuple[int, int]]:
        """Send inside the open transaction and wait for every delivery; (partition, offset) each."""
        raise NotImplementedError

    def send_offsets(self, group: str, offsets: dict[TP, int]) -> None:
        """sendOffsetsToTransaction for `group` (by its id: generation -1, no member id, as every client
        can): the offsets become the group's committed offsets when the transaction commits, never if it
        aborts."""
        raise NotImplementedError

    def commit(self) -> None:
        raise NotImplementedError

    def abort(self) -> None:
        raise NotImplementedError

    def close(self) -> None:
        raise NotImplementedError


class Client:
    """One client library pointed at one cluster. Every method may raise Unsupported or ClientError."""

    name = "?"
    reports_offsets = True  # produce() returns the offsets the broker assigned
    cannot: dict[str, str] = {}
    """Abilities this client lacks entirely ("admin", "commit", "timestamps", "broker_loss": producing while one of
    the bootstrap brokers is dead; "group": a consumer with a
    group.id, which needs the group coordinator), with the reason: scenarios that use one are marked
    unsupported before they start (instead of after waiting for a group)."""

    def probe(self) -> None:
        """Raise HarnessError when this client cannot talk to the broker at all (checked once per lane)."""

    def __init__(self, bootstrap: str, timing: Timing) -> None:
        self.bootstrap = bootstrap
        self.timing = timing

    def close(self) -> None:
        pass

    def log_mark(self) -> int:
        """Where the client's own log (a driver's stderr) stands now, for `log_since`."""
        return 0

    def log_since(self, mark: int) -> str:
        """What the client logged since `mark` (its warnings and errors): kept for a cell that fails."""
        return ""

    # --- producing and reading without a group --------------------------------------------------
    def produce(self, topic: str, recs: list[Rec], *, codec: str = "none", one_batch: bool = False,
                max_request_bytes: int | None = None, acks: int | None = None,
                idempotent: bool | None = None) -> list[tuple[int, int]]:
        """Send the records (in order) and wait for every delivery; returns (partition, offset) each.
        `one_batch`: linger until all are queued, so they travel as one batch. A record without a partition
        goes where the client's default partitioner puts it. `acks` (0, 1, -1) and `idempotent` override the
        client's defaults when given. Raises ClientError for the first failed delivery."""
        raise Unsupported("produce")

    def fetch(self, topic: str, partition: int, offset: int, count: int, reset: str = "earliest",
              isolation: str | None = None) -> list[Rec]:
        """Up to `count` records from `offset` on (assigned, no group), waiting at most timing.fetch_s; an
        offset out of range is reset by auto.offset.reset=`reset`. `isolation`: isolation.level,
        "read_committed" or "read_uncommitted"; None leaves the client's default (read_committed for librdkafka
        and KafkaJS, read_uncommitted for the others)."""
        raise Unsupported("fetch")

    def list_offsets(self, topic: str, partition: int, spec: str | int, isolation: str | None = None) -> int | None:
        """ListOffsets: spec "earliest", "latest", "max_timestamp" (KIP-734: the offset of the record with the
        largest timestamp) or a timestamp (ms); None when no record is that late. Under `isolation`
        read_committed "latest" is the last stable offset."""
        raise Unsupported("list_offsets")

    def transactional(self, transactional_id: str, *, timeout_ms: int | None = None) -> TxnProducer:
        """A producer with this transactional.id (and transaction.timeout.ms when given), its
        initTransactions done: fencing any earlier producer with the id. ClientError when init fails."""
        raise Unsupported("transactions")

    # --- admin --------------------------------------------------------------------------------------
    def create_topic(self, topic: str, partitions: int, replication_factor: int = 1,
                     configs: dict[str, str] | None = None, *, validate_only: bool = False) -> None:
        """CreateTopics for one topic (-1 partitions or replication factor: the broker's default);
        `validate_only` checks without creating. ClientError on refusal."""
        raise Unsupported("create_topic")

    def partition_count(self, topic: str) -> int:
        """The topic's partition count from metadata (without creating it); ClientError if unknown."""
        raise Unsupported("partition_count")

    def committed(self, group: str, topic: str, partitions: int) -> dict[int, tuple[int, str | None]]:
        """The group's committed (offset, metadata) per partition; partitions without one are left out."""
        raise Unsupported("committed")

    def delete_topic(self, topic: str) -> None:
        """DeleteTopics for one topic; ClientError on refusal."""
        raise Unsupported("delete_topic")

    def create_partitions(self, topic: str, count: int, *, validate_only: bool = False) -> None:
        """CreatePartitions: grow `topic` to `count` partitions (or only validate that); ClientError on refusal."""
        raise Unsupported("create_partitions")

    def describe_configs(self, resource: str, name: str, keys: list[str]) -> dict[str, dict[str, Any]]:
        """DescribeConfigs (with synonyms) for resource "topic" or "broker": {key: {"value", "source",
        "read_only", "sensitive", "synonyms": [[name, value, source]...] or None when the client does not
        show them}}. Sources by Kafka's names (DYNAMIC_TOPIC_CONFIG, STATIC_BROKER_CONFIG, DEFAULT_CONFIG...);
        keys the broker does not report are left out."""
        raise Unsupported("describe_configs")

    def alter_configs(self, resource: str, name: str, configs: dict[str, str]) -> None:
        """AlterConfigs (the whole-set form, not incremental) for resource "topic" or "broker": the resource's
        dynamic configs become exactly `configs`, the others back to their defaults; ClientError on refusal."""
        raise Unsupported("alter_configs")

    def delete_records(self, topic: str, partition: int, before: int) -> int:
        """DeleteRecords up to `before` (-1: the high watermark); returns the new low watermark."""
        raise Unsupported("delete_records")

    def describe_group(self, group: str) -> dict[str, Any]:
        """DescribeGroups through the admin API: {"state" (Kafka's name: Stable, Empty, Dead,
        PreparingRebalance, CompletingRebalance), "protocol_type", "protocol", "members": [{"assignment":
        sorted partitions, "instance_id"}...] sorted}; ClientError when the client reports an error."""
        raise Unsupported("describe_group")

    def list_groups(self) -> dict[str, dict[str, Any]]:
        """ListGroups: {group id: {"protocol_type": ..., "state": ... or None where the client has none}}."""
        raise Unsupported("list_groups")

    def delete_group(self, group: str) -> None:
        """DeleteGroups for one group; ClientError on refusal (NON_EMPTY_GROUP, GROUP_ID_NOT_FOUND)."""
        raise Unsupported("delete_group")

    def delete_offsets(self, group: str, topic: str, partitions: list[int]) -> None:
        """OffsetDelete: forget the group's committed offsets for these partitions; ClientError on refusal."""
        raise Unsupported("delete_offsets")

    # --- consumers with a group.id ----------------------------------------------------------------
    def member(self, group: str, topic: str, *, assign: list[int] | None = None, offset_reset: str = "earliest",
               own_process: bool = False, instance_id: str | None = None,
               session_timeout_ms: int | None = None, group_protocol: str = "classic") -> Member:
        """A consumer in `group`: subscribed to `topic`, or assigned `assign` (no membership). Reset policy
        "earliest", "latest" or "none". `own_process`: run it in a subprocess so that kill() can crash it.
        `instance_id`: group.instance.id (a static member, KIP-345); `session_timeout_ms` overrides the
        timing's; `group_protocol` "consumer" is KIP-848's (Unsupported by clients that do not speak it)."""
        raise Unsupported("member")

    def refuse_group_protocol(self, group_protocol: str) -> None:
        """Unsupported, with the reason, when this client's members cannot speak `group_protocol`
        (compat.clients.catalog.CONSUMER_PROTOCOL_REFUSALS)."""
        if group_protocol == "classic":
            return
        if group_protocol != "consumer":
            raise Unsupported(f"group.protocol={group_protocol}")
        if self.name in CONSUMER_PROTOCOL_REFUSALS:
            raise Unsupported(f"group.protocol=consumer: {CONSUMER_PROTOCOL_REFUSALS[self.name]}")


def quiet_client_logs() -> None:
    """The Python clients log rebalances and retries as warnings; compat's table says what matters."""
    for name in ("kafka", "aiokafka"):
        logging.getLogger(name).setLevel(logging.CRITICAL)


# --- a member whose client runs on its own polling thread ---------------------------------------------


class PollingMember(Member):
    """Runs one consumer on a thread of its own, polling in a loop: most clients are not thread-safe, so
    every call is handed to that thread and waited for. Subclasses implement the _-methods."""

    POLL_S = 0.1

    def __init__(self, timing: Timing, label: str) -> None:
        self.timing = timing
        self._calls: queue.Queue[tuple[Callable[[], Any], concurrent.futures.Future[Any]]] = queue.Queue()
        self._lock = threading.Lock()
        self._records: list[Rec] = []
        self._errors: list[ClientError] = []
        self._assignment: list[TP] = []
        self._stop = threading.Event()
        self._opened = concurrent.futures.Future[None]()
        self._thread = threading.Thread(target=self._loop, name=f"member-{label}", daemon=True)
        self._thread.start()
        self._opened.result(timing.op_s)

    # subclass hooks, all called on the member's thread
    def _open(self) -> None:
        raise NotImplementedError

    def _poll(self) -> list[Rec]:
        raise NotImplementedError

    def _assigned(self) -> list[TP]:
        raise NotImplementedError

    def _commit(self, offsets: dict[TP, tuple[int, str | None]]) -> None:
        raise NotImplementedError

    def _position(self, tp: TP) -> int | None:
        raise NotImplementedError

    def _seek(self, tp: TP, offset: int) -> None:
        raise NotImplementedError

    def _pause(self, tps: list[TP], paused: bool) -> None:
        raise Unsupported("pause/resume")

    def _close(self) -> None:
        raise NotImplementedError

    def _error(self, exc: BaseException) -> ClientError | None:
        """The ClientError for an exception from _poll (None: not a client error, re-raise)."""
        return exc if isinstance(exc, ClientError) else None

    def _loop(self) -> None:
        try:
            self._open()
        except BaseException as e:  # noqa: BLE001 - handed to the caller
            self._opened.set_exception(e)
            return
        self._opened.set_result(None)
        while not self._stop.is_set():
            while True:
                try:
                    fn, fut = self._calls.get_nowait()
                except queue.Empty:
                    break
                if fut.set_running_or_notify_cancel():
                    try:
                        fut.set_result(fn())
                    except BaseException as e:  # noqa: BLE001
                        fut.set_exception(e)
            if self._stop.is_set():
                break
            try:
                recs = self._poll()
            except Exception as e:  # noqa: BLE001
                err = self._error(e)
                with self._lock:
                    self._errors.append(err if err is not None else ClientError(
                        "HARNESS", type(e).__name__, "".join(traceback.format_exception(e))[-2000:]))
                time.sleep(self.POLL_S)
                recs = []
            assigned = sorted(self._assigned())
            with self._lock:
                self._records.extend(recs)
                self._assignment = assigned

    def _call(self, fn: Callable[[], Any], timeout: float | None = None) -> Any:
        if not self._thread.is_alive():
            raise HarnessError("the member's polling thread has stopped")
        fut: concurrent.futures.Future[Any] = concurrent.futures.Future()
        self._calls.put((fn, fut))
        try:
            return fut.result(timeout or self.timing.op_s)
        except concurrent.futures.TimeoutError:
            if fut.done():
                raise  # the call itself raised TimeoutError (the same class): say so, not that it hung
            raise HarnessError(f"member call {fn} did not finish in {timeout or self.timing.op_s}s") from None

    def assignment(self) -> list[TP]:
        with self._lock:
            return list(self._assignment)

    def take(self) -> list[Rec]:
        with self._lock:
            out, self._records = self._records, []
        return out

    def errors(self) -> list[ClientError]:
        with self._lock:
            out, self._errors = self._errors, []
        harness = [e for e in out if e.code == "HARNESS"]
        if harness:
            raise HarnessError(harness[0].message)
        return out

    def commit(self, offsets: dict[TP, tuple[int, str | None]]) -> None:
        self._call(lambda: self._commit(offsets))

    def position(self, tp: TP) -> int | None:
        return self._call(lambda: self._position(tp))

    def seek(self, tp: TP, offset: int) -> None:
        self._call(lambda: self._seek(tp, offset))

    def pause(self, tps: list[TP]) -> None:
        self._call(lambda: self._pause(tps, True))

    def resume(self, tps: list[TP]) -> None:
        self._call(lambda: self._pause(tps, False))

    def close(self) -> None:
        if not self._thread.is_alive():
            return
        try:
            self._call(lambda: (self._close(), self._stop.set()), self.timing.op_s + 10)
        finally:
            self._stop.set()
            self._thread.join(5)
