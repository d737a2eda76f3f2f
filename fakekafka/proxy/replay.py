"""`fakekafka replay RECORDING --to HOST:PORT`: a recorded client session resent to a broker, and where the
answers differ from the recorded ones.

The recording is a proxy's (`fakekafka proxy --record DIR --record-frames`): every exchange's raw frames per
client connection. Each recorded connection gets a connection of its own to the target (a connection that
went to upstream broker N goes to the target's broker N, as its Metadata names it), started at the same
offset from the first as recorded; its requests are sent in order, each once the previous one is answered.
What a broker makes up is remapped on the way: member ids (JoinGroup), producer ids (InitProducerId) and topic
ids (Metadata, CreateTopics) the recorded answers gave are replaced in later requests by what the target gave.
Answers are compared with the normalising diff of `python -m compat diff` (fakekafka/observe/wirediff.py), so made-up
ids, hosts and times do not count as differences.
"""

from __future__ import annotations

import argparse
import asyncio
import io
import struct
import sys
import time
import uuid
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from typing import Any

from fakekafka.observe.wirediff import Normaliser, api_name, canonical, compare, plain
from fakekafka.proxy.frames import RequestHead, produce_acks, read_request_head
from fakekafka.wire import ApiKey, DecodeError
from fakekafka.wire.protocol import decode_response, encode_request, parse_body, request_struct

__all__ = ["ReplayReport", "replay", "replay_main"]

_SIZE = struct.Struct(">i")
_MEMBER_FIELDS = frozenset({"member_id", "leader", "memberid"})


@dataclass
class FieldDifference:
    api: str
    version: int
    field: str
    count: int = 0
    example: dict[str, Any] = field(default_factory=dict)


@dataclass
class ReplayReport:
    target: str
    connections: int = 0
    requests: int = 0
    compared: int = 0
    differing: int = 0
    unanswered: int = 0
    differences: dict[tuple[str, int, str], FieldDifference] = field(default_factory=dict)
    errors: list[str] = field(default_factory=list)

    @property
    def same(self) -> bool:
        return not self.differences and not self.errors and not self.unanswered

    def text(self, show: int = 20) -> str:
        lines = [f"fakekafka replay: {self.requests} requests on {self.connections} connections resent to "
                 f"{self.target}; {self.compared} answers compared, {self.differing} differ"
                 + (f", {self.unanswered} unanswered" if self.unanswered else "")]
        for d in sorted(self.differences.values(), key=lambda d: -d.count)[:show]:
            ex = d.example
            lines.append(f"  {d.api} v{d.version} {d.field}: {d.count}x, e.g. recorded {ex.get('recorded')!r}, "
                         f"replayed {ex.get('replayed')!r}")
        left = len(self.differences) - show
        if left > 0:
            lines.append(f"  ... and {left} more fields")
        lines.extend(f"  error: {e}" for e in self.errors[:show])
        if self.same:
            lines.append("  no difference")
        return "\n".join(lines)


@dataclass
class _Remap:
    """What the recorded broker made up -> what the target made up, across the session's connections."""

    members: dict[str, str] = field(default_factory=dict)
    producers: dict[int, int] = field(default_factory=dict)
    topic_ids: dict[uuid.UUID, uuid.UUID] = field(default_factory=dict)

    def __bool__(self) -> bool:
        return bool(self.members or self.producers or self.topic_ids)

    def learn(self, api_key: int, recorded: Any, replayed: Any) -> None:
        if not isinstance(recorded, dict) or not isinstance(replayed, dict):
            return
        if api_key == ApiKey.JOIN_GROUP:
            for key in ("member_id", "leader"):
                a, b = recorded.get(key), replayed.get(key)
                if a and b and a != b:
                    self.members[a] = b
        elif api_key == ApiKey.INIT_PRODUCER_ID:
            a, b = recorded.get("producer_id", -1), replayed.get("producer_id", -1)
            if a >= 0 and b >= 0 and a != b:
                self.producers[a] = b
        elif api_key in (ApiKey.METADATA, ApiKey.CREATE_TOPICS):
            new = {t.get("name"): t.get("topic_id") for t in replayed.get("topics") or ()}
            for t in recorded.get("topics") or ():
                a, b = t.get("topic_id"), new.get(t.get("name"))
                if isinstance(a, uuid.UUID) and isinstance(b, uuid.UUID) and a.int and b.int and a != b:
                    self.topic_ids[a] = b

    def apply(self, body: Any) -> bool:
        """Replaces recorded ids in a decoded request, in place; True if anything changed."""
        changed = False

        def walk(obj: Any) -> Any:
            nonlocal changed
            if isinstance(obj, dict):
                for k, v in obj.items():
                    if isinstance(v, str) and k.lower() in _MEMBER_FIELDS and v in self.members:
                        obj[k] = self.members[v]
                        changed = True
                    elif isinstance(v, int) and k == "producer_id" and v in self.producers:
                        obj[k] = self.producers[v]
                        changed = True
                    elif isinstance(v, uuid.UUID) and v in self.topic_ids:
                        obj[k] = self.topic_ids[v]
                        changed = True
                    elif isinstance(v, (dict, list)):
                        walk(v)
            elif isinstance(obj, list):
                for item in obj:
                    walk(item)
            return obj

        walk(body)
        return changed


def _decode_request(frame: bytes, head: RequestHead) -> Any:
    if head.body_offset is None:
        return None
    stream = io.BytesIO(frame)
    stream.seek(head.body_offset)
    try:
        return parse_body(request_struct(head.api_key, head.api_version), stream, head.api_name)
    except DecodeError:
        return None


def _decode_answer(head: RequestHead, frame: bytes | None) -> Any:
    if frame is None or not head.known:
        return None
    try:
        return decode_response(head.api_key, head.api_version, frame)[1]
    except DecodeError:
        return None


async def _broker_addresses(target: str) -> dict[int, str]:
    """The target's brokers by node id, from a Metadata v1 request (every broker answers it)."""
    host, _, port = target.rpartition(":")
    reader, writer = await asyncio.open_connection(host, int(port))
    try:
        writer.write(encode_request(ApiKey.METADATA, 1, 1, {"topics": []}, client_id="fakekafka-replay"))
        await writer.drain()
        (size,) = _SIZE.unpack(await reader.readexactly(4))
        _, body = decode_response(ApiKey.METADATA, 1, await reader.readexactly(size))
        return {b["node_id"]: f"{b['host']}:{b['port']}" for b in body["brokers"]}
    finally:
        writer.close()


async def _replay_connection(rows: list[dict[str, Any]], address: str, start_delay: float, remap: _Remap,
                             report: ReplayReport, timeout: float) -> None:
    await asyncio.sleep(start_delay)
    host, _, port = address.rpartition(":")
    try:
        reader, writer = await asyncio.open_connection(host, int(port))
    except OSError as e:
        report.errors.append(f"connection {rows[0]['connection']}: cannot connect to {address}: {e.strerror or e}")
        return
    norm_recorded, norm_replayed = Normaliser(), Normaliser()
    try:
        for row in rows:
            frame: bytes = row["request"]
            head = read_request_head(frame)
            if remap:
                body = _decode_request(frame, head)
                if body is not None and remap.apply(body):
                    frame = encode_request(head.api_key, head.api_version, head.correlation_id, body,
                                           client_id=head.client_id)[4:]
            writer.write(_SIZE.pack(len(frame)) + frame)
            await writer.drain()
            report.requests += 1
            if produce_acks(frame, head) == 0:
                continue
            try:
                (size,) = _SIZE.unpack(await asyncio.wait_for(reader.readexactly(4), timeout))
                answer = await asyncio.wait_for(reader.readexactly(size), timeout)
            except (TimeoutError, asyncio.IncompleteReadError, OSError):
                report.unanswered += 1
                report.errors.append(f"connection {row['connection']}: {head.api_name} v{head.api_version} "
                                     f"(correlation id {head.correlation_id}) got no answer")
                return
            recorded = _decode_answer(head, row["response"])
            replayed = _decode_answer(head, answer)
            remap.learn(head.api_key, recorded, replayed)
            if recorded is None or replayed is None:
                continue
            a = canonical(norm_recorded.response(head.api_key, None, plain(recorded)))
            b = canonical(norm_replayed.response(head.api_key, None, plain(replayed)))
            report.compared += 1
            _, diffs = compare(a, b)
            if diffs:
                report.differing += 1
            for path, generic, x, y in diffs:
                key = (api_name(head.api_key), head.api_version, generic)
                d = report.differences.get(key)
                if d is None:
                    d = report.differences[key] = FieldDifference(*key, example={
                        "connection": row["connection"], "field": path, "recorded": x, "replayed": y})
                d.count += 1
    finally:
        writer.close()


async def replay(directory: str, target: str, *, connections: list[str] | None = None,
                 timeout: float = 30.0) -> ReplayReport:
    """Resends the recorded session under `directory` to `target` and compares the answers."""
    from fakekafka.proxy.observe import read_frames
    rows = read_frames(directory)
    by_connection: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for row in rows:
        if connections and not any(row["connection"].startswith(c) for c in connections):
            continue
        by_connection[row["connection"]].append(row)
    report = ReplayReport(target, connections=len(by_connection))
    if not by_connection:
        report.errors.append("nothing to replay" + (" for those connections" if connections else ""))
        return report
    for conn_rows in by_connection.values():
        conn_rows.sort(key=lambda r: r["sequence"])
    nodes = Counter(c.rpartition("/")[2] for c in by_connection)
    addresses: dict[int, str] = {}
    if any(n != "bootstrap" for n in nodes):
        try:
            addresses = await _broker_addresses(target)
        except (OSError, asyncio.IncompleteReadError, DecodeError) as e:
            report.errors.append(f"cannot read {target}'s brokers: {e}")
            return report
    first = min(r[0]["time"] for r in by_connection.values())
    tasks = []
    remap = _Remap()
    for name, conn_rows in by_connection.items():
        node = name.rpartition("/")[2]
        address = addresses.get(int(node), target) if node.lstrip("-").isdigit() else target
        delay = (conn_rows[0]["time"] - first).total_seconds()
        tasks.append(_replay_connection(conn_rows, address, delay, remap, report, timeout))
    await asyncio.gather(*tasks)
    return report


def replay_main(args: argparse.Namespace) -> int:
    started = time.monotonic()
    try:
        report = asyncio.run(replay(args.recording, args.to, connections=args.connection or None))
    except FileNotFoundError as e:
        print(f"fakekafka replay: {e}", file=sys.stderr)
        return 2
    except ImportError as e:
        print(f"fakekafka replay: reading a recording needs pyarrow ({e})", file=sys.stderr)
        return 2
    print(report.text(args.show))
    print(f"({time.monotonic() - started:.1f} s)")
    return 0 if report.same else 1
