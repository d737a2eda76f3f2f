"""python -m compat diff: differential wire testing. Every compat scenario runs for every client twice, once
against a reference broker (real Kafka) and once against the broker under test (fakekafka), each time
through a recording relay (compat/relay.py, on fakekafka's proxy); then the two request streams are aligned
and the responses compared field by field, per (API, version).

    python -m compat diff [--broker kafka --broker fakekafka] [--client NAME ...] [--scenario PATTERN ...]
                          [--jobs N] [--out build/compat-diff]

How a run goes:

1. Both brokers start (compat.brokers.start_target). Each (broker, client) lane runs the scenarios one
   after another, as `python -m compat` does (compat.runner._lane), with a relay group of its own in
   front of the broker: the client and the harness's setup connection (client id "compat-setup") reach
   the broker only through it, and each request is tagged with the scenario running when it arrived. Both
   brokers' lanes use the same run id, so topic and group names are the same on both sides. The relays
   narrow both brokers' ApiVersions answers to the ranges the broker under test advertises (what each
   broker really answered is what is recorded and compared), so a client asks both with the same
   versions: otherwise it would ask Kafka 4.4 for Metadata v13 and fakekafka for v12, and nothing could
   be paired.
2. A session is one (scenario, client): the reference's exchanges and the subject's. Requests and
   responses are decoded with `wire` and normalised (below). Per (API, version), requests are paired by
   their normalised content plus, for reads, how many writes to what they read had been answered before
   they were sent (a Fetch racing a Produce on one broker only asks a different question). Among equal
   requests, equal answers pair first, in order; the rest pair from the end of each stretch (the extra
   polls of a slower broker are the earlier ones). What is left over on either side is a *request
   difference* (the client asked something else, or again, because an earlier answer or the timing
   differed): counted and shown with an example, not compared. Before pairing, transactional writes
   answered CONCURRENT_TRANSACTIONS alone are set aside (the previous transaction's markers were still
   being written: Kafka writes them after answering EndTxn, fakekafka at once, a listed difference); the
   client sends them again, and that pairs.
3. Paired responses are compared leaf by leaf. Every differing field is reported per (API, version) with
   how often and an example; a field listed under "Wire fields" in compat/KNOWN_DIFFERENCES.md is known
   (with its reason), any other makes the run fail.

Normalised away (what legitimately differs between two brokers or two runs): throttle_time_ms, error
messages, hosts and ports, correlation ids; node ids (a value becomes "<node>", -1 stays); cluster, member,
directory and incarnation ids, producer ids, fetch session ids, generation ids, client hosts (a set value
becomes a placeholder, so "set" versus "unset" still shows); topic ids become the topic they name on that
broker ("<id:NAME>"); times within two days of the run (record timestamps a client took from its clock,
log-append times, start times). Record batches are decoded: their records (offsets, keys, values,
headers, timestamps) and header fields are compared, not their bytes (CRC and length follow the
timestamps). Arrays of structs are keyed by their name-like field (topic name, partition index, api key,
group id...), so order does not matter.

Compared on what both sides list: answers listing every topic or group (Metadata for all topics,
ListGroups; only this session's names are kept in the first place, so other lanes' and Kafka's internal
topics are not the session's business, and which of them exist at the moment asked is timing) and
incremental Fetch answers (Kafka leaves out the partitions that did not change in a fetch session).
Left out: the records of a Fetch answer for a topic whose Produce requests differed in that session (the
producer batched differently, so the logs hold different batches), and what a read says of its log's
progress when a write to its topic (from another connection) was in flight with it: a Fetch's records, high
watermark and last stable offset, a ListOffsets offset and timestamp (whether a broker answered it, or woke a
parked fetch, before or after that write landed is timing).

Writes OUT.json and OUT.md: per (API, version) the exchanges seen on each side, pairs compared, fields
compared, each differing field with its count, an example and the reason if known, and request
differences. Exits 1 when a field differs and is not listed.
"""

from __future__ import annotations

import argparse
import dataclasses
import difflib
import fnmatch
import json
import pickle
import re
import sys
import threading
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from compat.relay import Exchange, RelayGroup
from fakekafka.observe.records import error_codes_in
from fakekafka.observe.wirediff import (  # noqa: F401 - re-exported: compat's tests and tools import them from here
    ABSENT,
    ALL_TOPICS_APIS,
    DROP,
    KEY_FIELDS,
    NAMED_ARRAYS,
    NODE_FIELDS,
    NODE_LISTS,
    PLACEHOLDER,
    TIME_WINDOW_MS,
    ZERO_UUID,
    Normaliser,
    _keyed,
    _short_bytes,
    api_name,
    canonical,
    compare,
    plain,
)
from fakekafka.wire import ApiKey, ErrorCode
from fakekafka.wire.messages import API_MODULES
from fakekafka.wire.protocol import DecodeError, decode_request, decode_response

__all__ = ["KnownField", "Normaliser", "Recording", "align", "compare", "diff_sessions", "load_known_fields", "main",
           "run_diff", "write_report"]

ROOT = Path(__file__).resolve().parent.parent
KNOWN_FILE = Path(__file__).resolve().parent / "KNOWN_DIFFERENCES.md"
CONNECT = "(connect)"  # the tag of what a lane's client does before its first scenario

REQUEST_ONLY_DROP = frozenset({"session_id", "session_epoch", "timeout_ms"})
"""Left out when pairing requests too: a client echoes the fetch session it was given, and the Java admin
client sends the time left of its own deadline as timeout_ms."""
def _keyed_items(value: Any) -> dict[str, Any] | None:
    return value["[]"] if isinstance(value, dict) and "[]" in value else None


def intersect(a: dict[str, Any], b: dict[str, Any], field_: str, inner: str | None = None
              ) -> tuple[dict[str, Any], dict[str, Any]]:
    """Copies of two canonical answers whose keyed array `field_` (and each element's `inner` array) keep only
    the keys both have: for answers whose membership is a matter of timing (listings of everything) or of
    a fetch session (an incremental Fetch answer leaves out partitions that did not change)."""
    ea, eb = _keyed_items(a.get(field_)), _keyed_items(b.get(field_))
    if a.get(field_) == []:
        ea = {}
    if b.get(field_) == []:
        eb = {}
    if ea is None or eb is None:
        return a, b
    common = [k for k in ea if k in eb]
    if not common:
        return {**a, field_: []}, {**b, field_: []}
    a2 = {**a, field_: {**a[field_], "[]": {k: ea[k] for k in common}}}
    b2 = {**b, field_: {**b[field_], "[]": {k: eb[k] for k in common}}}
    if inner is not None:
        for k in common:
            x, y = intersect(ea[k], eb[k], inner)
            a2[field_]["[]"][k], b2[field_]["[]"][k] = x, y
    return a2, b2


PROGRESS = {ApiKey.FETCH: ("responses", frozenset({"records", "high_watermark", "last_stable_offset"})),
            ApiKey.LIST_OFFSETS: ("topics", frozenset({"offset", "timestamp"}))}
"""What a read's answer says of the log's progress (the answer's topic array, the partition fields): for a read
that a write to its topic overlapped, timing."""


def without_records(answer: dict[str, Any], topics: set[str], fields: frozenset[str] = frozenset({"records"}),
                    top: str = "responses") -> dict[str, Any]:
    """A canonical Fetch answer without the records (or other partition `fields`) of `topics` (by name or by id
    placeholder); `top`: the answer's topic array (ListOffsets: "topics")."""
    items = _keyed_items(answer.get(top))
    if items is None or not topics:
        return answer
    out = {}
    for k, t in items.items():
        name = k[4:-1] if k.startswith("<id:") else k
        parts = _keyed_items(t.get("partitions")) if isinstance(t, dict) else None
        if name in topics and parts is not None:
            t = {**t, "partitions": {**t["partitions"], "[]": {
                pk: {f: v for f, v in p.items() if f not in fields} for pk, p in parts.items()}}}
        out[k] = t
    return {**answer, top: {**answer[top], "[]": out}}


def _names(body: dict[str, Any] | None, *paths: str) -> list[str]:
    """Names found in a normalised request under `paths` ("topics.name": each element's field; "group_id":
    a field); topic ids are turned back into their names."""
    out: list[str] = []
    for path in paths:
        head, _, tail = path.partition(".")
        v = (body or {}).get(head)
        items = v if isinstance(v, list) else [v]
        for item in items:
            x = item.get(tail) if tail and isinstance(item, dict) else item
            if isinstance(x, str) and x:
                out.append(x[4:-1] if x.startswith("<id:") else x)
    return out


# Produce v13+ names its topics by id ("<id:NAME>" once normalised)
WRITES = {ApiKey.PRODUCE: ("topic", ("topic_data.name", "topic_data.topic_id")),
          ApiKey.DELETE_RECORDS: ("topic", ("topics.name",)), ApiKey.CREATE_TOPICS: ("meta", ("topics.name",)),
          ApiKey.DELETE_TOPICS: ("meta", ("topics.name", "topic_names")),
          ApiKey.CREATE_PARTITIONS: ("meta", ("topics.name",)), ApiKey.OFFSET_COMMIT: ("group", ("group_id",)),
          ApiKey.OFFSET_DELETE: ("group", ("group_id",)), ApiKey.DELETE_GROUPS: ("group", ("groups_names",))}
READS = {ApiKey.FETCH: ("topic", ("topics.topic", "topics.topic_id")), ApiKey.LIST_OFFSETS: ("topic", ("topics.name",)),
         ApiKey.METADATA: ("meta", ("topics.name",)), ApiKey.OFFSET_FETCH: ("group", ("group_id", "groups.group_id"))}


MEMBERSHIP = frozenset({ApiKey.OFFSET_COMMIT, ApiKey.JOIN_GROUP, ApiKey.HEARTBEAT, ApiKey.LEAVE_GROUP,
                        ApiKey.SYNC_GROUP})
EPOCH_HEARTBEATS = frozenset({ApiKey.CONSUMER_GROUP_HEARTBEAT, ApiKey.SHARE_GROUP_HEARTBEAT,
                              ApiKey.STREAMS_GROUP_HEARTBEAT})
GROUP_APIS = MEMBERSHIP | EPOCH_HEARTBEATS | {ApiKey.DESCRIBE_GROUPS}  # answers that follow the group's history
_JOIN_LEAVE = (ApiKey.JOIN_GROUP, ApiKey.LEAVE_GROUP)
RACE_S = 0.02
"""A group request sent this close to another member's JoinGroup or LeaveGroup raced it."""
EXPIRY_SLACK_S = 0.5
"""How long before a stopped member's last request plus its session timeout a broker may already act on its
expiry as another member sees it: that member's heartbeat, sent just before, is taken after it on a loaded broker."""
_TXN_WRITES = frozenset({ApiKey.PRODUCE, ApiKey.ADD_PARTITIONS_TO_TXN, ApiKey.ADD_OFFSETS_TO_TXN, ApiKey.END_TXN,
                         ApiKey.INIT_PRODUCER_ID, ApiKey.TXN_OFFSET_COMMIT})


def markers_pending(d: Decoded) -> bool:
    """A transactional write Kafka refused with CONCURRENT_TRANSACTIONS alone: the previous transaction's markers
    were still being written (fakekafka writes them as EndTxn is accepted, a listed difference), and the client
    sends the request again, which is what pairs."""
    if d.ex.api_key not in _TXN_WRITES or d.response is None:
        return False
    return error_codes_in(d.response, set()) == {ErrorCode.CONCURRENT_TRANSACTIONS}


def add_context(decoded: list[Decoded]) -> None:
    """Appends to each read's pairing key how many writes to what it reads had been answered before it was
    sent, or sent before it on the same connection (a broker takes a connection's requests in order):
    Produce and DeleteRecords before a Fetch or ListOffsets of that topic, OffsetCommit before an
    OffsetFetch of that group, CreateTopics... before Metadata. A read that raced a write on one broker and
    not on the other asked a different question, and is reported as a request difference, not compared.
    Likewise a member's group request (JoinGroup, SyncGroup, Heartbeat, LeaveGroup, OffsetCommit) lists the
    JoinGroup and LeaveGroup requests other connections had sent for that group before it (which of the
    two, and the static instance id, "-" for a dynamic member): a member that rejoined before its
    replacement joined on one broker and after it on the other, or a group whose first member (its
    leader) was another, was answered differently for a reason of order, not of broker."""
    writes: list[tuple[float, int, float, str, str]] = []  # (answered, connection, sent, kind, name)
    for d in decoded:
        w = WRITES.get(d.ex.api_key)
        if w is not None and d.request is not None:
            done = d.ex.t_response if d.ex.response is not None and d.ex.t_response else d.ex.t_request
            kinds = (w[0], "topic") if d.ex.api_key == ApiKey.DELETE_TOPICS else (w[0],)
            writes += [(done, d.ex.conn, d.ex.t_request, kind, n)
                       for kind in kinds for n in _names(d.request, *w[1])]
    joins = [(d.ex.t_request, d.ex.conn, g,
              f"{'join' if d.ex.api_key == ApiKey.JOIN_GROUP else 'leave'} "
              f"{(d.request or {}).get('group_instance_id') or '-'}")
             for d in decoded if d.ex.api_key in _JOIN_LEAVE for g in _names(d.request, "group_id")]
    for d in decoded:
        if d.ex.api_key in MEMBERSHIP and d.request is not None and joins:
            group = d.request.get("group_id")
            before = [who for t, conn, g, who in joins if g == group and conn != d.ex.conn and t < d.ex.t_request]
            d.key += f"|after joins by others: {','.join(before)}"
    if not writes:
        return
    for d in decoded:
        r = READS.get(d.ex.api_key)
        if r is None or d.request is None:
            continue
        names = set(_names(d.request, *r[1]))
        everything = r[0] == "meta" and not names
        # a broker takes a connection's requests in order: a write sent before on the same connection counts
        n = sum(1 for done, conn, sent, kind, name in writes
                if kind == r[0] and (everything or name in names)
                and (done <= d.ex.t_request or (conn == d.ex.conn and sent < d.ex.t_request)))
        d.key += f"|after {n} writes"
        if d.ex.api_key in PROGRESS and d.ex.response is not None:
            # writes of another connection in flight while this read was: whether the broker answered it (woke a
            # parked Fetch) before or after such a write landed is timing
            d.raced = {name for done, conn, sent, kind, name in writes
                       if kind == "topic" and name in names and conn != d.ex.conn
                       and sent < d.ex.t_response and done > d.ex.t_request}


def _has_records(answer: dict[str, Any]) -> bool:
    """Whether a canonical Fetch answer carries any record batch."""
    items = _keyed_items(answer.get("responses"))
    topics = items.values() if items is not None else answer.get("responses") or []
    for t in topics:
        parts = _keyed_items(t.get("partitions")) if isinstance(t, dict) else None
        for p in (parts.values() if parts is not None else (t.get("partitions") or []) if isinstance(t, dict) else []):
            if isinstance(p, dict) and p.get("records"):
                return True
    return False


def topic_names(exchanges: list[Exchange]) -> dict[str, str]:
    """Topic id -> name from the Metadata and CreateTopics answers among `exchanges`."""
    out: dict[str, str] = {}
    for ex in exchanges:
        if ex.api_key not in (ApiKey.METADATA, ApiKey.CREATE_TOPICS) or ex.response is None:
            continue
        try:
            _, body = decode_response(ex.api_key, ex.api_version, ex.response)
        except DecodeError:
            continue
        for t in body.get("topics") or []:
            tid, name = t.get("topic_id"), t.get("name")
            if tid is not None and name and str(tid) != ZERO_UUID:
                out[str(tid)] = name
    return out


def _key(value: Any) -> str:
    return json.dumps(value, sort_keys=True, default=str)


def align(a: list[Any], b: list[Any], key: Any = _key, answer: Any = None
          ) -> tuple[list[tuple[int, int]], list[int], list[int]]:
    """Pairs requests of `a` with requests of `b` that have the same key; returns the pairs and the indexes
    left over on either side. Elements of different keys may interleave freely; within a key, order is
    kept. Within a key, with `answer` given, equal answers are paired first (in order, as difflib matches
    them), then each stretch between them is paired from its end: when one broker needed more polls of the
    same question (Kafka creates topics asynchronously, so "is it there yet?" is asked more often), the
    earlier polls are the extra ones and the last is what compares with the other broker's answer. What is
    left over on both sides around a matched answer (one broker polled once more before it, the other once
    more after it) stays unpaired: the same question asked at different moments."""
    ka: dict[str, list[int]] = defaultdict(list)
    kb: dict[str, list[int]] = defaultdict(list)
    for i, x in enumerate(a):
        ka[key(x)].append(i)
    for j, y in enumerate(b):
        kb[key(y)].append(j)
    pairs: list[tuple[int, int]] = []
    for k, ia in ka.items():
        ib = kb.get(k, [])
        if not ib:
            continue
        if answer is None:
            pairs.extend(zip(ia, ib, strict=False))
            continue
        ra = [answer(a[i]) for i in ia]
        rb = [answer(b[j]) for j in ib]
        sm = difflib.SequenceMatcher(None, ra, rb, autojunk=False)
        pa = pb = 0
        for block in sm.get_matching_blocks():
            ga, gb = ia[pa:block.a], ib[pb:block.b]
            n = min(len(ga), len(gb))
            if n:
                pairs.extend(zip(ga[len(ga) - n:], gb[len(gb) - n:], strict=True))
            pairs.extend((ia[block.a + t], ib[block.b + t]) for t in range(block.size))
            pa, pb = block.a + block.size, block.b + block.size
    pairs.sort()
    ta = {i for i, _ in pairs}
    tb = {j for _, j in pairs}
    return pairs, [i for i in range(len(a)) if i not in ta], [j for j in range(len(b)) if j not in tb]


# --- known differences ---------------------------------------------------------------------------------

def _glob(pattern: str) -> re.Pattern[str]:
    """A field pattern: `*` matches anything, every other character (brackets too) itself."""
    return re.compile(".*".join(re.escape(part) for part in pattern.split("*")))


@dataclass(frozen=True)
class KnownField:
    api: str
    versions: str
    field: str
    reason: str
    line: int

    def matches(self, api: str, version: int, path: str) -> bool:
        if not fnmatch.fnmatchcase(api, self.api):
            return False
        if self.versions not in ("*", ""):
            ok = False
            for part in self.versions.split(","):
                lo, _, hi = part.strip().partition("-")
                if lo.strip().isdigit() and int(lo) <= version <= int(hi or lo):
                    ok = True
            if not ok:
                return False
        return _glob(self.field).fullmatch(path) is not None


def load_known_fields(path: Path = KNOWN_FILE) -> list[KnownField]:
    """The rows of the "## Wire fields" table: | api | versions | field | reason | (shell patterns)."""
    if not path.exists():
        return []
    out: list[KnownField] = []
    inside = False
    for n, line in enumerate(path.read_text().splitlines(), 1):
        if line.startswith("## "):
            inside = line.lower().startswith("## wire fields")
            continue
        if not inside or not line.startswith("|"):
            continue
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) != 4 or cells[0] in ("api", "") or re.fullmatch(r"[-: ]+", cells[0]):
            continue
        api, versions, fld = (c.strip("`") for c in cells[:3])
        if not cells[3]:
            raise ValueError(f"{path}:{n}: a known wire difference needs a reason")
        out.append(KnownField(api, versions, fld, cells[3], n))
    return out


# --- sessions ------------------------------------------------------------------------------------------

@dataclass
class Decoded:
    ex: Exchange
    request: dict[str, Any] | None
    response: dict[str, Any] | None
    key: str
    error: str = ""
    member: int | None = None  # which of the session's member ids asks (in the order the broker gave them out)
    raced: set[str] = dataclasses.field(default_factory=set)  # a read's topics written to while it was in flight


def decode(ex: Exchange, norm: Normaliser) -> Decoded:
    try:
        req = plain(decode_request(ex.request).body)
    except DecodeError as e:
        return Decoded(ex, None, None, f"undecodable:{ex.request.hex()}", f"request: {e}")
    nreq = norm.request(ex.api_key, req)
    # the generation a member asks in is part of the question (the answer to a member of an older
    # generation differs), though generation numbers are not compared in answers
    asked = {**nreq, **{k: req[k] for k in ("generation_id", "generation_id_or_member_epoch") if k in req}}
    key = _key(canonical({k: v for k, v in asked.items() if k not in REQUEST_ONLY_DROP}))
    rank = norm.member(req.get("member_id"))
    if rank is not None:
        key += f"|member {rank}"
    if ex.response is None:
        return Decoded(ex, nreq, None, key, member=rank)
    try:
        _, body = decode_response(ex.api_key, ex.api_version, ex.response)
    except DecodeError as e:
        return Decoded(ex, nreq, None, key, f"response: {e}", member=rank)
    answer = plain(body)
    norm.member(answer.get("member_id"))
    return Decoded(ex, nreq, canonical(norm.response(ex.api_key, req, answer)), key, member=rank)


def stale_heartbeats(decoded: list[Decoded]) -> list[Decoded]:
    """KIP-848 heartbeats (consumer, share, streams groups) sent with a member epoch older than one this broker
    had already answered the member with: a client sending its state again after a timeout or a reconnect.
    Whether the broker takes it as the member's previous epoch or fences it depends on how far the group moved
    on in between, which is timing; the group's conversation forks there."""
    answered: list[tuple[float, tuple[Any, int], int]] = []
    for d in decoded:
        epoch = (d.response or {}).get("member_epoch")
        if d.ex.api_key in EPOCH_HEARTBEATS and d.member is not None and isinstance(epoch, int) and epoch > 0:
            answered.append((d.ex.t_response, ((d.request or {}).get("group_id"), d.member), epoch))
    stale = []
    for d in decoded:
        epoch = (d.request or {}).get("member_epoch")
        if d.ex.api_key not in EPOCH_HEARTBEATS or d.member is None or not isinstance(epoch, int) or epoch <= 0:
            continue
        who = ((d.request or {}).get("group_id"), d.member)
        if any(w == who and t < d.ex.t_request and given > epoch for t, w, given in answered):
            stale.append(d)
    return stale


def timer_forks(decoded: list[Decoded]) -> list[tuple[Any, float]]:
    """Where a classic group's conversation forks on a clock rather than on a request, as (group, time): a member
    that stopped without a LeaveGroup (killed, or a static member closed) is removed when its session ends, at a
    moment each broker's own clock decides, so the other members' answers from about then on race it; and a
    second connection joining with a static instance id another connection joined with starts the two taking the
    slot in turns, which their heartbeats race (an evicted member's heartbeat answered UNKNOWN_MEMBER_ID on one
    broker, NONE on the other)."""
    out: list[tuple[Any, float]] = []
    session: dict[tuple[int, Any], float] = {}
    last: dict[tuple[int, Any], tuple[float, int]] = {}
    latest: dict[Any, float] = {}
    holders: dict[tuple[Any, Any], int] = {}
    for d in decoded:
        k = d.ex.api_key
        if k not in MEMBERSHIP or d.request is None:
            continue
        group, conn, t = d.request.get("group_id"), d.ex.conn, d.ex.t_request
        latest[group] = max(latest.get(group, t), t)
        last[(conn, group)] = max(last.get((conn, group), (t, k)), (t, k))
        if k == ApiKey.JOIN_GROUP:
            session[(conn, group)] = (d.request.get("session_timeout_ms") or 0) / 1000
            instance = d.request.get("group_instance_id")
            if instance is not None and holders.setdefault((group, instance), conn) != conn:
                out.append((group, t))
    for (conn, group), (t, k) in last.items():
        timeout = session.get((conn, group))
        if k != ApiKey.LEAVE_GROUP and timeout and latest[group] > t + timeout - EXPIRY_SLACK_S:
            out.append((group, t + timeout - EXPIRY_SLACK_S))
    return out


@dataclass
class FieldDiff:
    api: str
    version: int
    field: str
    count: int = 0
    sessions: set[str] = dataclasses.field(default_factory=set)
    diverged: set[str] = dataclasses.field(default_factory=set)  # of `sessions`, those whose outcome differs
    known_line: int = 0  # the KNOWN_DIFFERENCES.md line that lists it
    strict: int = 0  # occurrences in no diverged session and before any fork of the group conversation

    @property
    def unexplained(self) -> bool:
        """Not listed, and seen where the two conversations had not forked: in a session whose scenario
        outcome is the same on both brokers and, for group requests, before either side made a JoinGroup,
        SyncGroup or LeaveGroup the other did not."""
        return not self.known and self.strict > 0
    example: dict[str, Any] = dataclasses.field(default_factory=dict)
    known: str = ""

    def to_json(self) -> dict[str, Any]:
        return {"field": self.field, "count": self.count, "sessions": sorted(self.sessions)[:20],
                "session_count": len(self.sessions), "known": self.known, "unexplained": self.unexplained,
                "only_in_diverged_sessions": not self.known and not self.unexplained, "example": self.example}


@dataclass
class PairStats:
    api: str
    version: int
    seen: dict[str, int] = field(default_factory=lambda: defaultdict(int))
    pairs: int = 0
    compared: int = 0
    fields: int = 0
    unpaired: dict[str, int] = field(default_factory=lambda: defaultdict(int))
    unpaired_example: dict[str, Any] = field(default_factory=dict)
    no_response: int = 0
    timing: int = 0  # Fetch pairs where only one side's long poll brought records: not compared
    markers_pending: dict[str, int] = field(default_factory=lambda: defaultdict(int))
    """Transactional writes answered CONCURRENT_TRANSACTIONS alone, per side: set aside before pairing."""
    decode_errors: list[str] = field(default_factory=list)
    diffs: dict[str, FieldDiff] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {"api": self.api, "version": self.version, "seen": dict(self.seen), "pairs": self.pairs,
                "compared": self.compared, "fields_compared": self.fields, "unpaired": dict(self.unpaired),
                "unpaired_example": self.unpaired_example, "no_response": self.no_response,
                "timing": self.timing, "markers_pending": dict(self.markers_pending),
                "decode_errors": self.decode_errors[:5],
                "differences": [d.to_json() for d in sorted(self.diffs.values(), key=lambda d: d.field)]}


def _show(v: Any, n: int = 300) -> Any:
    s = json.dumps(v, sort_keys=True, default=str)
    return v if len(s) <= n else s[:n] + "..."


def diff_sessions(sessions: dict[str, tuple[list[Exchange], list[Exchange]]], names: tuple[str, str],
                  prefixes: dict[str, str | None] | None = None, known: list[KnownField] | None = None,
                  now_ms: float | None = None, dump: dict[str, Any] | None = None,
                  diverged: set[str] | None = None) -> dict[tuple[int, int], PairStats]:
    """Compares each session's reference exchanges (first) with the subject's (second); per (API key, version).
    With `dump`, every exchange of an (API, version) that has an unlisted difference in a session is put in
    it, per session, both sides decoded and normalised, with the pairs made (by request sequence number).
    `diverged` names the sessions whose scenario outcome differs between the brokers (the compat matrix
    reports those); a field that differs only there is shown but does not count as unexplained: once a
    race went the other way (fakekafka answers in microseconds, Kafka in milliseconds), what follows in
    that session is a different conversation. So does a group's: once one side made a JoinGroup, SyncGroup
    or LeaveGroup the other did not (a member rejoined once more), the group answers after it on either
    side follow a different history, and their differences are shown the same way; likewise a group request
    sent within RACE_S of another member's JoinGroup or LeaveGroup, or in flight with another member's LeaveGroup
    (which one a broker takes first is a race: a SyncGroup may meet a rebalance on one broker and not on the
    other, and a relay or a broker under load may take two requests in flight in either order), and a SyncGroup
    that another member's JoinGroup or LeaveGroup was sent while one side held it (Kafka holds a SyncGroup until
    its assignment is written, and a static member's replacement meanwhile fences it); and a classic group's
    answers from where a clock forks it (`timer_forks`: a stopped member's session ending, two connections
    sharing a static instance id)."""
    ref, sub = names
    dumped: set[tuple[str, int, int]] = set()
    known = known if known is not None else load_known_fields()
    stats: dict[tuple[int, int], PairStats] = {}

    def st(k: int, v: int) -> PairStats:
        if (k, v) not in stats:
            stats[(k, v)] = PairStats(api_name(k), v)
        return stats[(k, v)]

    ids_a = topic_names([e for xa, _ in sessions.values() for e in xa])
    ids_b = topic_names([e for _, xb in sessions.values() for e in xb])
    for session, (xa, xb) in sessions.items():
        prefix = (prefixes or {}).get(session)
        norm_a, norm_b = Normaliser(now_ms, prefix, ids_a), Normaliser(now_ms, prefix, ids_b)
        da = [decode(e, norm_a) for e in xa if not e.meta.get("answered_by_relay")]
        db = [decode(e, norm_b) for e in xb if not e.meta.get("answered_by_relay")]
        add_context(da)
        add_context(db)
        tainted: set[str] = set()  # topics whose Produce requests differ: their records cannot compare
        groups: dict[tuple[int, int], tuple[list[Decoded], list[Decoded]]] = defaultdict(lambda: ([], []))
        for side, (name, dd) in enumerate(((ref, da), (sub, db))):
            for d in dd:
                if markers_pending(d):
                    st(d.ex.api_key, d.ex.api_version).markers_pending[name] += 1
                else:
                    groups[(d.ex.api_key, d.ex.api_version)][side].append(d)
        aligned = {kv: align(ga, gb, key=lambda d: d.key, answer=lambda d: _key(d.response))
                   for kv, (ga, gb) in groups.items()}
        # where the group conversation forked: the first JoinGroup/SyncGroup/LeaveGroup of a group that has no
        # counterpart, or a heartbeat with an epoch the broker had moved past, on each side; group answers from
        # there on follow a different history
        forked: dict[tuple[str, Any], float] = {}

        def fork(side: str, group: Any, t: float, forked: dict[tuple[str, Any], float] = forked) -> None:
            forked[(side, group)] = min(forked.get((side, group), t), t)
        for (k, _v), (_pairs, only_a, only_b) in aligned.items():
            ga, gb = groups[(k, _v)]
            left = [("a", ga[i]) for i in only_a] + [("b", gb[j]) for j in only_b]
            if k == ApiKey.PRODUCE:
                for _, d in left:
                    tainted.update(_names(d.request, "topic_data.name", "topic_data.topic_id"))
            if k in (ApiKey.JOIN_GROUP, ApiKey.LEAVE_GROUP, ApiKey.SYNC_GROUP):
                for side, d in left:
                    fork(side, (d.request or {}).get("group_id"), d.ex.t_request)
        for side, dd in (("a", da), ("b", db)):
            for d in stale_heartbeats(dd):
                fork(side, (d.request or {}).get("group_id"), d.ex.t_request)
            for group, t in timer_forks(dd):
                fork(side, group, t)

        # JoinGroup/LeaveGroup sends per side: (group, connection, time sent, time a LeaveGroup was answered)
        changes = {side: [((x.request or {}).get("group_id"), x.ex.conn, x.ex.t_request,
                           x.ex.t_response if x.ex.api_key == ApiKey.LEAVE_GROUP and x.ex.response is not None
                           else None)
                          for x in dd if x.ex.api_key in _JOIN_LEAVE] for side, dd in (("a", da), ("b", db))}

        def after_fork(d: Decoded, side: str, forked: dict[tuple[str, Any], float] = forked,
                       changes: dict[str, list[tuple[Any, int, float, float | None]]] = changes) -> bool:
            """After the group's conversation forked on this side, or sent within RACE_S of another
            member's JoinGroup/LeaveGroup (which of the two a broker took first is a race), or in flight with
            another member's LeaveGroup (each sent before the other was answered: either may have been taken
            first), or a SyncGroup another member's JoinGroup/LeaveGroup was sent while this side held it."""
            group = (d.request or {}).get("group_id")
            t = forked.get((side, group))
            if t is not None and d.ex.t_request >= t:
                return True
            # a SyncGroup is held until its assignment is written (a follower's, until the leader's comes): a
            # JoinGroup or LeaveGroup of another member meanwhile may end it otherwise (a static member's
            # replacement fences it), and Kafka holds it milliseconds where fakekafka holds it microseconds
            held = d.ex.t_response if d.ex.api_key == ApiKey.SYNC_GROUP and d.ex.response is not None else None
            answered = d.ex.t_response if d.ex.response is not None else float("inf")
            # a LeaveGroup is taken at once and answered after its record is written; a JoinGroup is taken at
            # once too but answered when its round ends, so only its send time tells when it was taken
            return any(g == group and conn != d.ex.conn and (abs(sent - d.ex.t_request) <= RACE_S
                                                             or held is not None and d.ex.t_request < sent < held
                                                             or left is not None and sent < answered
                                                             and d.ex.t_request < left)
                       for g, conn, sent, left in changes[side])

        for (k, v), (ga, gb) in sorted(groups.items()):
            s = st(k, v)
            s.seen[ref] += len(ga)
            s.seen[sub] += len(gb)
            for d in ga + gb:
                if d.error:
                    s.decode_errors.append(f"{s.api} v{v} in {session}: {d.error}")
            pairs, only_a, only_b = aligned[(k, v)]
            s.pairs += len(pairs)
            s.unpaired[ref] += len(only_a)
            s.unpaired[sub] += len(only_b)
            if (only_a or only_b) and not s.unpaired_example:
                ea = ga[only_a[0]].request if only_a else None
                eb = gb[only_b[0]].request if only_b else None
                example: dict[str, Any] = {"session": session}
                if ea is not None and eb is not None:
                    _, req_diff = compare(canonical(ea), canonical(eb))
                    example["request_differs_at"] = [
                        {"field": p, ref: _show(x), sub: _show(y)} for p, _, x, y in req_diff[:5]]
                else:
                    example[f"only_{ref if ea is not None else sub}"] = _show(ea if ea is not None else eb, 600)
                s.unpaired_example = example
            for i, j in pairs:
                a, b = ga[i], gb[j]
                if a.response is None or b.response is None:
                    if (a.response is None) != (b.response is None):
                        s.decode_errors.append(f"{s.api} v{v} in {session}: answered by "
                                               f"{ref if a.response is not None else sub} only")
                    else:
                        s.no_response += 1
                    continue
                ra, rb = a.response, b.response
                if k == ApiKey.FETCH and _has_records(ra) != _has_records(rb):
                    s.timing += 1  # a long poll answered before the data came on one side, after on the other
                    continue
                s.compared += 1
                if k == ApiKey.METADATA and (a.request or {}).get("topics") in (None, []) or k == ApiKey.LIST_GROUPS:
                    ra, rb = intersect(ra, rb, "topics" if k == ApiKey.METADATA else "groups")  # listings of everything
                if k == ApiKey.FETCH:
                    if any(isinstance(d.request.get("session_epoch"), int) and d.request["session_epoch"] > 0
                           for d in (a, b)):
                        ra, rb = intersect(ra, rb, "responses", "partitions")  # incremental fetch
                    ra, rb = without_records(ra, tainted), without_records(rb, tainted)
                if k in PROGRESS and (a.raced or b.raced):
                    top, fields = PROGRESS[k]
                    raced = a.raced | b.raced
                    ra, rb = without_records(ra, raced, fields, top), without_records(rb, raced, fields, top)
                n, diffs = compare(ra, rb)
                s.fields += n
                for path, generic, x, y in diffs:
                    fd = s.diffs.get(generic)
                    if fd is None:
                        fd = s.diffs[generic] = FieldDiff(s.api, v, generic)
                        fd.example = {"session": session, "field": path, ref: _show(x), sub: _show(y),
                                      "request": _show(a.request, 400)}
                        for kf in known:
                            if kf.matches(s.api, v, generic):
                                fd.known = kf.reason
                                fd.known_line = kf.line
                                break
                    fd.count += 1
                    fd.sessions.add(session)
                    if (diverged and session in diverged) or (
                            k in GROUP_APIS and (after_fork(a, "a") or after_fork(b, "b"))):
                        fd.diverged.add(session)
                    else:
                        fd.strict += 1
                    if dump is not None and fd.unexplained and (session, k, v) not in dumped:
                        dumped.add((session, k, v))
                        dump.setdefault(session, {})[f"{s.api} v{v}"] = {
                            "pairs": [[ga[x].ex.seq, gb[y].ex.seq] for x, y in pairs],
                            ref: [{"seq": d.ex.seq, "conn": d.ex.conn, "request": d.request, "response": d.response}
                                  for d in ga],
                            sub: [{"seq": d.ex.seq, "conn": d.ex.conn, "request": d.request, "response": d.response}
                                  for d in gb]}
    return stats


# --- running -------------------------------------------------------------------------------------------

@dataclass
class DiffReport:
    started: str
    seconds: float
    brokers: dict[str, Any]
    clients: list[str]
    scenarios: list[str]
    sessions: int
    exchanges: dict[str, int]
    stats: dict[tuple[int, int], PairStats]
    cells: list[Any]
    lane_errors: list[str]
    dump: dict[str, Any] = field(default_factory=dict)
    stale_known: list[str] = field(default_factory=list)

    @property
    def unexplained(self) -> list[FieldDiff]:
        return [d for s in self.stats.values() for d in s.diffs.values() if d.unexplained]

    def totals(self) -> dict[str, int]:
        st = self.stats.values()
        return {"api_versions_seen": len(self.stats),
                "api_versions_compared": sum(1 for s in st if s.compared),
                "responses_compared": sum(s.compared for s in st), "fields_compared": sum(s.fields for s in st),
                "differing_fields": sum(len(s.diffs) for s in st),
                "unexplained_fields": len(self.unexplained),
                "unpaired_requests": sum(sum(s.unpaired.values()) for s in st)}

    def to_json(self) -> dict[str, Any]:
        return {"started": self.started, "seconds": self.seconds, "brokers": self.brokers, "clients": self.clients,
                "scenarios": self.scenarios, "sessions": self.sessions, "exchanges": self.exchanges,
                "totals": self.totals(),
                "unexplained": [{"api": d.api, "version": d.version, **d.to_json()} for d in self.unexplained],
                "pairs": [self.stats[k].to_json() for k in sorted(self.stats)],
                "cells": [{"scenario": c.scenario, "client": c.client, "broker": c.broker, "status": c.status,
                           "known": c.known, "diff": c.diff[:5]} for c in self.cells],
                "lane_errors": self.lane_errors, "stale_known": self.stale_known}


def served_versions(bootstrap: str) -> dict[int, tuple[int, int]]:
    """The (min, max) version per API the broker at `bootstrap` advertises, within what `wire` defines: the
    relays narrow both brokers' ApiVersions answers to these, so clients ask both the same way."""
    from fakekafka.testing.client import WireConnection
    host, port = bootstrap.split(",")[0].rsplit(":", 1)
    conn = WireConnection(host, int(port), "compat-diff", 10)
    try:
        out = {}
        for k, (lo, hi) in conn.versions.items():
            if k in API_MODULES:
                lo, hi = max(lo, API_MODULES[k][2]), min(hi, API_MODULES[k][3])
                if lo <= hi:
                    out[k] = (lo, hi)
        return out
    finally:
        conn.close()


def served_features(bootstrap: str) -> dict[str, int]:
    """The features the broker at `bootstrap` finalizes, at their highest level (ApiVersions v3): the relays
    narrow both brokers' answers to these too, so clients pick the same protocols (transactions v1 or v2)."""
    from fakekafka.testing.client import WireConnection
    host, port = bootstrap.split(",")[0].rsplit(":", 1)
    conn = WireConnection(host, int(port), "compat-diff", 10)
    try:
        r = conn.request(ApiKey.API_VERSIONS, 3,
                         {"client_software_name": "compat-diff", "client_software_version": "1"})
        return {f.name: f.max_version_level for f in r.finalized_features or []}
    finally:
        conn.close()


def _tagged(scenario: Any, relay: RelayGroup) -> Any:
    def run(client: Any, env: Any) -> Any:
        relay.tag = scenario.name
        return scenario.run(client, env)
    return dataclasses.replace(scenario, run=run)


def _prefix(run_id: str, scenario: str, client: str) -> str:
    return re.sub(r"[^a-zA-Z0-9._-]", "-", f"compat-{run_id}-{scenario}-{client}")


class Recording:
    """The lanes of two brokers of one compat run (the reference, then the broker under test) behind recording
    relays, one relay group per lane: `python -m compat diff`, and `python -m compat --diff-out` comparing a
    matrix run's own lanes instead of running them a second time. `required`: a broker of the two that could not
    start stops the run (Unavailable); otherwise the lanes run directly and nothing is recorded."""

    def __init__(self, names: tuple[str, str], *, required: bool = True) -> None:
        self.names = names
        self.required = required
        self.run_id = ""
        self.captured: dict[tuple[str, str], list[Exchange]] = {}
        self.errors: list[str] = []
        self._caps: dict[int, tuple[int, int]] | None = None
        self._features: dict[str, int] = {}
        self._lock = threading.Lock()

    @property
    def recorded(self) -> bool:
        return self._caps is not None

    def start(self, running: dict[str, Any], run_id: str) -> None:
        """Called by compat.runner.run once its brokers are up, before any lane."""
        from compat.brokers import Unavailable
        self.run_id = run_id
        missing = [n for n in self.names if n not in running]
        if missing:
            if self.required:
                raise Unavailable(f"a diff needs both brokers; {', '.join(missing)} did not start")
            return
        subject = running[self.names[1]].bootstrap
        self._caps, self._features = served_versions(subject), served_features(subject)

    def lane(self, target: Any, client: str, scenarios: list[Any], quick: bool, run_id: str) -> list[Any]:
        """compat.runner._lane, through a relay when the target is one of the two."""
        from compat.runner import _lane
        if self._caps is None or target.name not in self.names:
            return _lane(target, client, scenarios, quick, run_id)
        relay = RelayGroup(CONNECT, self._caps, self._features)
        try:
            front = dataclasses.replace(target, bootstrap=relay.front(target.bootstrap), direct=target.bootstrap)
            return _lane(front, client, [_tagged(s, relay) for s in scenarios], quick, run_id)
        finally:
            exchanges = relay.close()
            with self._lock:
                self.captured[(target.name, client)] = exchanges
                self.errors.extend(f"{client} @ {target.name}: {e}" for e in relay.errors[:5])

    def analyse(self, report: Any, known: list[KnownField] | None = None) -> DiffReport:
        """The two brokers' lanes of a finished run (compat.runner.Report), compared."""
        info = {n: report.brokers[n] for n in self.names}
        cells = [c for c in report.cells if c.broker in self.names]
        return _analyse(report.started, report.seconds, info, report.clients, report.scenarios, self.run_id,
                        self.captured, cells, self.errors, known)


def run_diff(brokers: tuple[str, str] = ("kafka", "fakekafka"), clients: list[str] | None = None,
             scenarios: list[str] | None = None, *, jobs: int = 4, progress: Any = None,
             known: list[KnownField] | None = None, save: Path | None = None,
             load: Path | None = None) -> DiffReport:
    """Starts both brokers, runs every lane through a relay (compat.runner.run with a Recording), compares; the
    brokers are stopped afterwards. `save` keeps what was captured (a pickle) so that `load` can compare it again
    without running anything (for working on the comparison itself)."""
    if load is not None:
        with open(load, "rb") as f:
            c = pickle.load(f)  # noqa: S301 - a file this function wrote
        return _analyse(c["started"], c["seconds"], c["info"], c["clients"], c["scenarios"], c["run_id"],
                        c["captured"], c["cells"], c["lane_errors"], known)
    from compat.runner import run

    recording = Recording(brokers)

    def lane_done(lane: tuple[str, str], lane_cells: list[Any]) -> None:
        if progress is not None:
            progress(lane, lane_cells, recording.captured.get(lane, []))

    report = run(list(brokers), clients, scenarios, jobs=jobs, progress=lane_done, recording=recording)
    diff_report = recording.analyse(report, known)
    if save is not None:
        Path(save).parent.mkdir(parents=True, exist_ok=True)  # a fresh clone has no build/ yet
        with open(save, "wb") as f:
            pickle.dump({"started": report.started, "seconds": report.seconds, "info": diff_report.brokers,
                         "clients": report.clients, "scenarios": report.scenarios, "run_id": recording.run_id,
                         "captured": recording.captured, "cells": diff_report.cells,
                         "lane_errors": recording.errors}, f)
    return diff_report


def _analyse(started: str, seconds: float, info: dict[str, Any], client_names: list[str], scenario_names: list[str],
             run_id: str, captured: dict[tuple[str, str], list[Exchange]], cells: list[Any], lane_errors: list[str],
             known: list[KnownField] | None) -> DiffReport:
    from compat.known import load_known
    from compat.runner import _judge
    ref, sub = list(info)[:2]
    sessions: dict[str, tuple[list[Exchange], list[Exchange]]] = {}
    prefixes: dict[str, str | None] = {}
    for c in client_names:
        xa, xb = captured.get((ref, c), []), captured.get((sub, c), [])
        for tag in [CONNECT] + scenario_names:
            ta = [e for e in xa if e.tag == tag]
            tb = [e for e in xb if e.tag == tag]
            if ta or tb:
                sessions[f"{tag} / {c}"] = (ta, tb)
                prefixes[f"{tag} / {c}"] = _prefix(run_id, tag, c) if tag != CONNECT else "\0"
    dump: dict[str, Any] = {}
    order = {name: i for i, name in enumerate(scenario_names)}
    cells.sort(key=lambda c: (order[c.scenario], client_names.index(c.client), c.broker))
    _judge(cells, load_known())
    diverged = {f"{c.scenario} / {c.client}" for c in cells if c.broker == sub and c.status in ("differs", "error")}
    known = known if known is not None else load_known_fields()
    stats = diff_sessions(sessions, (ref, sub), prefixes, known, dump=dump, diverged=diverged)
    used = {d.known_line for st in stats.values() for d in st.diffs.values()}
    seen = {st.api for st in stats.values() if st.compared}
    stale = [f"KNOWN_DIFFERENCES.md line {k.line} ({k.api} {k.versions} {k.field}) matched no difference"
             for k in known if k.line not in used and any(fnmatch.fnmatchcase(a, k.api) for a in seen)]
    return DiffReport(started, seconds, info, client_names, scenario_names,
                      len(sessions), {f"{k[1]} @ {k[0]}": len(v) for k, v in sorted(captured.items())}, stats,
                      cells, lane_errors, dump, stale)


# --- report --------------------------------------------------------------------------------------------

def _cell(v: Any) -> str:
    s = json.dumps(v, sort_keys=True, default=str) if not isinstance(v, str) else v
    s = s.replace("|", "\\|").replace("\n", " ")
    return s if len(s) <= 120 else s[:117] + "..."


def _why(d: FieldDiff) -> str:
    if d.known:
        return _cell(d.known)
    if not d.unexplained:
        return ("only after the two conversations forked (a scenario outcome that differs, which the compat "
                "matrix reports; a group join/sync/leave one side made and the other did not; or a race with "
                "another member's join or leave): "
                + _cell(", ".join(sorted(d.diverged)[:3])))
    return "**NOT LISTED**"


def markdown(report: DiffReport) -> str:
    ref, sub = list(report.brokers)[:2] if len(report.brokers) >= 2 else ("reference", "subject")
    t = report.totals()
    out = [f"# Wire differences: {sub} against {ref}", "",
           f"Run {report.started}, {report.seconds:.0f} s; clients {', '.join(report.clients)}; "
           f"{len(report.scenarios)} scenarios; {report.sessions} sessions.", "",
           f"- (API, version) pairs seen: {t['api_versions_seen']}, compared: {t['api_versions_compared']}",
           f"- responses compared: {t['responses_compared']}, fields compared: {t['fields_compared']}",
           f"- differing fields: {t['differing_fields']} ({t['unexplained_fields']} not listed in "
           f"compat/KNOWN_DIFFERENCES.md, \"Wire fields\")",
           f"- requests left unpaired (asked differently, or a different number of times): "
           f"{t['unpaired_requests']}; Fetch pairs not compared because only one side's long poll brought "
           f"records: {sum(s.timing for s in report.stats.values())}; transactional writes set aside as the "
           f"previous transaction's markers were being written (CONCURRENT_TRANSACTIONS): "
           f"{sum(sum(s.markers_pending.values()) for s in report.stats.values())}", "",
           f"| API | version | seen {ref} | seen {sub} | pairs | compared | fields | differing fields | "
           f"unpaired {ref}/{sub} |", "|---|---|---|---|---|---|---|---|---|"]
    for k in sorted(report.stats):
        s = report.stats[k]
        nd = len(s.diffs)
        unk = sum(1 for d in s.diffs.values() if d.unexplained)
        out.append(f"| {s.api} | {s.version} | {s.seen.get(ref, 0)} | {s.seen.get(sub, 0)} | {s.pairs} | "
                   f"{s.compared} | {s.fields} | {nd}{f' ({unk} NOT LISTED)' if unk else ''} | "
                   f"{s.unpaired.get(ref, 0)}/{s.unpaired.get(sub, 0)} |")
    diffs = [(s, d) for k in sorted(report.stats) for s in [report.stats[k]]
             for d in sorted(s.diffs.values(), key=lambda d: d.field)]
    header = [f"| API | version | field | count | sessions | example ({ref} / {sub}) | why |",
              "|---|---|---|---|---|---|---|"]

    def row(s: PairStats, d: FieldDiff) -> str:
        ex = d.example
        return (f"| {s.api} | {s.version} | `{d.field}` | {d.count} | {len(d.sessions)} | "
                f"{_cell(ex.get(ref))} / {_cell(ex.get(sub))} ({_cell(ex.get('session'))}) | {_why(d)} |")
    unlisted = [row(s, d) for s, d in diffs if d.unexplained]
    out += ["", "## Differing fields not listed", ""] + (header + unlisted if unlisted else ["None."])
    diverged = [row(s, d) for s, d in diffs if not d.known and not d.unexplained]
    if diverged:
        out += ["", "## Differing fields only after the conversations forked", ""] + header + diverged
    listed: dict[int, list[tuple[PairStats, FieldDiff]]] = {}
    for s, d in diffs:
        if d.known:
            listed.setdefault(d.known_line, []).append((s, d))
    if listed:
        out += ["", "## Listed differences (compat/KNOWN_DIFFERENCES.md, Wire fields)", "",
                "| line | APIs and versions | fields | times | example field | reason |", "|---|---|---|---|---|---|"]
        for line, items in sorted(listed.items()):
            apis = sorted({f"{s.api} {s.version}" for s, _ in items})
            out.append(f"| {line} | {_cell(', '.join(apis))} | {len(items)} | {sum(d.count for _, d in items)} | "
                       f"`{items[0][1].field}` | {_cell(items[0][1].known)} |")
    unpaired = [s for s in report.stats.values() if s.unpaired_example]
    if unpaired:
        out += ["", "## Requests that differ between the runs", "",
                "Not compared: the client asked something else (or again) because an earlier answer or the "
                "timing differed.", "", f"| API | version | {ref} only | {sub} only | example |",
                "|---|---|---|---|---|"]
        for s in sorted(unpaired, key=lambda s: (s.api, s.version)):
            out.append(f"| {s.api} | {s.version} | {s.unpaired.get(ref, 0)} | {s.unpaired.get(sub, 0)} | "
                       f"{_cell(s.unpaired_example)} |")
    if report.stale_known:
        out += ["", "## Stale rows", "", "Rows of the Wire fields table that matched nothing in this run (APIs it "
                "compared): delete them if the difference is gone for good.", ""]
        out += [f"- {x}" for x in report.stale_known]
    errors = [e for s in report.stats.values() for e in s.decode_errors]
    if errors or report.lane_errors:
        out += ["", "## Decode and relay errors", ""] + [f"- {_cell(e)}" for e in (errors + report.lane_errors)[:40]]
    outcome = [c for c in report.cells if c.broker == sub and c.status in ("differs", "error")]
    if outcome:
        out += ["", "## Scenario outcomes that differ (as `python -m compat` judges them)", ""]
        out += [f"- {c.scenario} / {c.client}: {c.status}{' (known)' if c.known else ''}: "
                f"{_cell((c.diff or [''])[0])}" for c in outcome]
    return "\n".join(out) + "\n"


def main(argv: list[str] | None = None) -> int:
    from compat.brokers import Unavailable
    from compat.clients.base import quiet_client_logs
    from compat.clients.catalog import CLIENTS
    ap = argparse.ArgumentParser(prog="python -m compat diff", description=__doc__.split("\n\n")[0])
    ap.add_argument("--broker", action="append",
                    help="twice: the reference, then the broker under test (default: kafka, fakekafka)")
    ap.add_argument("--client", action="append", choices=CLIENTS, help="repeatable; default: all")
    ap.add_argument("--scenario", action="append", help="name or pattern, repeatable; default: all")
    ap.add_argument("--jobs", type=int, default=4, help="lanes (broker x client) run in parallel (default 4)")
    ap.add_argument("--out", default=str(ROOT / "build" / "compat-diff"), help="writes OUT.json and OUT.md")
    ap.add_argument("--save", help="also keep the captured exchanges in this file (a pickle)")
    ap.add_argument("--load", help="compare the exchanges a --save run kept, without running anything")
    args = ap.parse_args(argv)
    brokers = tuple(args.broker or ("kafka", "fakekafka"))
    if len(brokers) != 2:
        ap.error("--broker: give exactly two (the reference first)")
    quiet_client_logs()

    def progress(lane: tuple[str, str], cells: list[Any], exchanges: list[Exchange]) -> None:
        counts: dict[str, int] = {}
        for c in cells:
            counts[c.status] = counts.get(c.status, 0) + 1
        print(f"  {lane[1]} @ {lane[0]}: {len(exchanges)} exchanges; "
              + ", ".join(f"{n} {s}" for s, n in sorted(counts.items())), file=sys.stderr, flush=True)

    try:
        report = run_diff(brokers, args.client, args.scenario, jobs=args.jobs, progress=progress,  # type: ignore[arg-type]
                          save=Path(args.save) if args.save else None, load=Path(args.load) if args.load else None)
    except Unavailable as e:
        print(f"cannot run: {e}", file=sys.stderr)
        return 2
    return 1 if write_report(report, Path(args.out)) else 0


def write_report(report: DiffReport, out: Path) -> int:
    """Writes OUT.json, OUT.md and OUT-sessions.json, prints the table; returns how many differing fields are
    not listed."""
    out.parent.mkdir(parents=True, exist_ok=True)
    out.with_suffix(".json").write_text(json.dumps(report.to_json(), indent=1, default=str) + "\n")
    md = markdown(report)
    out.with_suffix(".md").write_text(md)
    details = out.with_name(out.name + "-sessions.json")
    details.write_text(json.dumps(report.dump, indent=1, default=str) + "\n")
    print(md)
    print(f"wrote {out.with_suffix('.json')}, {out.with_suffix('.md')} and {details} (the exchanges behind each "
          f"unlisted difference)")
    if report.unexplained:
        print(f"{len(report.unexplained)} differing field(s) not listed under \"Wire fields\" in "
              f"compat/KNOWN_DIFFERENCES.md")
    return len(report.unexplained)
