"""`fakekafka ctl`: steering a running `fakekafka serve` from outside, one JSON line per command.

The serve side listens on a control port (printed at start) and runs each command against its
`fakekafka.Cluster`, the same operations a test calls in process: kill/stop/restart/isolate a broker,
move a leader, pause replication, inject errors/latency/drops/throttling, advance a frozen clock, and
read the events and the cluster's state.

Who may steer: the control port answers whoever connects from a loopback address (127.0.0.0/8, ::1), and it
listens on 127.0.0.1 unless asked otherwise (`--control-host`). Listening elsewhere, it takes a command from any
other address only with the port's token in that command's line (`"token": ...`), compared in constant time; a
line without it is answered with an error and the connection closed. The commands see and change everything,
ACLs or not (`describe` lists every topic and group), so they are the operator's alone.
"""

from __future__ import annotations

import asyncio
import dataclasses
import hmac
import ipaddress
import json
import logging
import os
import secrets
import socket
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from fakekafka.model.clock import ManualClock
from fakekafka.model.errors import ApiError
from fakekafka.ops.describe import describe_tables
from fakekafka.testing.embedded import Cluster, TransactionView

__all__ = ["COMMANDS", "LINE_LIMIT", "TOKEN_ENV", "Commands", "control_binding", "control_token", "format_event",
           "is_loopback", "send_command", "serve_commands", "serve_control"]

log = logging.getLogger("fakekafka.control")


def _int(args: dict[str, Any], name: str, default: Any = ...) -> Any:
    value = args.get(name, default)
    if value is ...:
        raise ValueError(f"missing argument: {name}")
    if value is None:
        return None
    try:
        return int(value)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be a whole number, not {value!r}") from None


def _broker(c: Cluster, a: dict[str, Any]) -> int:
    node_id = _int(a, "broker")
    if node_id not in c.state.brokers:
        known = ", ".join(map(str, sorted(c.state.brokers)))
        raise ValueError(f"there is no broker {node_id}; the brokers are {known}")
    return node_id


def _topic_partition(a: dict[str, Any]) -> str:
    return f"{a['topic']}-{a['partition']}"


async def _take_down(c: Cluster, a: dict[str, Any], *, controlled: bool) -> str:
    node_id = _broker(c, a)
    if not c.state.brokers[node_id].alive:
        return f"broker {node_id} is down already: nothing changed"
    if controlled:
        await c.stop_broker_async(node_id)
        return f"broker {node_id} stopped (controlled shutdown: leadership moved first)"
    await c.kill_broker_async(node_id)
    return f"broker {node_id} killed: its connections dropped, the partitions it led get leaders from their ISR"


async def _restart(c: Cluster, a: dict[str, Any]) -> str:
    node_id = _broker(c, a)
    if c.state.brokers[node_id].alive:
        return f"broker {node_id} is up already: nothing changed"
    await c.restart_broker_async(node_id)
    return f"broker {node_id} restarted on port {c.state.brokers[node_id].port}"


def _sync(fn: Callable[[Cluster, dict[str, Any]], Any]) -> Callable[[Cluster, dict[str, Any]], Awaitable[Any]]:
    async def run(c: Cluster, a: dict[str, Any]) -> Any:
        return fn(c, a)
    return run


def _events(c: Cluster, a: dict[str, Any]) -> Any:
    return [{"time_ms": e.time_ms, "kind": e.kind, **{k: v for k, v in e.details.items()}} for e in c.events()]


def _client_metrics(c: Cluster, a: dict[str, Any]) -> Any:
    """The pushes clients made (KIP-714), decoded, as JSON: who, when, and each metric point."""
    try:
        pushes = c.client_metrics(a.get("client_id"))
    except RuntimeError as e:
        raise ValueError(str(e).replace("Cluster(client_telemetry=True) (the marker's client_telemetry=True, "
                                        "`fakekafka serve --client-telemetry`)",
                                        "`fakekafka serve --client-telemetry`")) from None
    return [{**{k: v for k, v in dataclasses.asdict(p).items() if k != "data"},
             "client_instance_id": str(p.client_instance_id), "resource": p.resource,
             "metrics": [dataclasses.asdict(m) for m in p.metrics]} for p in pushes]


def _isolate(c: Cluster, a: dict[str, Any], isolated: bool) -> str:
    node_id = _broker(c, a)
    c.isolate_broker(node_id, isolated)
    return f"broker {node_id} " + ("cut off from the other brokers (clients still reach it)" if isolated
                                   else "reconnected to the other brokers")


def _replication(c: Cluster, a: dict[str, Any], paused: bool) -> str:
    node_id = _broker(c, a)
    c.pause_replication(node_id, a.get("topic"), _int(a, "partition", None), paused)
    scope = "every partition it follows" if a.get("topic") is None else \
        a["topic"] if a.get("partition") is None else _topic_partition(a)
    return f"broker {node_id} {'stopped' if paused else 'resumed'} fetching as a follower ({scope})"


def _isr(c: Cluster, a: dict[str, Any], shrink: bool) -> str:
    node_id = _broker(c, a)
    (c.shrink_isr if shrink else c.expand_isr)(a["topic"], _int(a, "partition"), node_id)
    isr = c.partition_state(a["topic"], _int(a, "partition"))["isr"]
    return (f"broker {node_id} taken out of the ISR of {_topic_partition(a)}" if shrink else
            f"broker {node_id} fetches {_topic_partition(a)} again (it rejoins the ISR once caught up)") + \
        f"; ISR now {isr}"


def _move_leader(c: Cluster, a: dict[str, Any]) -> str:
    node_id = _broker(c, a)
    c.move_leader(a["topic"], _int(a, "partition"), node_id)
    return f"broker {node_id} leads {_topic_partition(a)}"


def _elect_preferred(c: Cluster, a: dict[str, Any]) -> str:
    moved = c.elect_preferred_leaders()
    if not moved:
        return "every partition is led by its preferred replica already (or that replica cannot lead now)"
    return f"leadership moved back to the preferred replica in {moved} partition{'s' if moved != 1 else ''}"


def _advance(c: Cluster, a: dict[str, Any]) -> str:
    ms = _int(a, "ms")
    if not isinstance(c.state.clock, ManualClock):  # the handle's words are the Python API's
        raise ValueError("advance-clock needs a frozen clock: start the broker with `fakekafka serve --clock frozen`")
    return f"clock advanced {ms} ms, now at {c.advance_clock(ms)} ms"


def _force_compaction(c: Cluster, a: dict[str, Any]) -> str:
    cleaned = c.force_compaction(a["topic"])
    if not cleaned:
        return f"nothing to clean in {a['topic']} (no dirty data outside the active segments, open transactions " \
               "and min.compaction.lag.ms)"
    return f"cleaned {cleaned} log{'s' if cleaned != 1 else ''} of {a['topic']}"


def _known_transaction(c: Cluster, tid: str) -> TransactionView:
    """The id's transaction, or an error naming the ids there are."""
    found = c.transaction(tid)
    if found is None:
        known = ", ".join(c.transactions()) or "none yet"
        raise ValueError(f"there is no transactional id {tid!r}; the ids are: {known}")
    return found


def _expire_transactional_id(c: Cluster, a: dict[str, Any]) -> str:
    tid = a["transactional_id"]
    before = _known_transaction(c, tid)
    c.expire_transactional_id(tid)
    return (f"transactional id {tid} expired as transactional.id.expiration.ms would: producer {before.producer_id} "
            f"forgotten; its next InitProducerId gets a new producer id")


def _abort_transaction(c: Cluster, a: dict[str, Any]) -> str:
    tid = a["transactional_id"]
    before = _known_transaction(c, tid)
    c.abort_transaction(tid)
    after = c.transaction(tid)
    assert after is not None
    partitions = ", ".join(f"{t}-{p}" for t, p in before.partitions) or "no partitions"
    return (f"transaction of {tid} aborted as its timeout would: abort markers for {partitions}; producer "
            f"{before.producer_id} epoch {before.producer_epoch} fenced (now epoch {after.producer_epoch}, "
            f"{after.state})")


def _clear(c: Cluster, a: dict[str, Any]) -> str:
    c.clear_faults()
    if c.schema_registry is not None:
        c.schema_registry.clear_faults()
    return "every injected fault removed"


def _registry(c: Cluster) -> Any:
    if c.schema_registry is None:
        raise ValueError("no schema registry here: start it with `fakekafka serve --schema-registry` (a proxy "
                         "forwards one with `fakekafka proxy --schema-registry-upstream URL`)")
    return c.schema_registry


def _registry_error(c: Cluster, a: dict[str, Any]) -> str:
    status = _int(a, "status", 500)
    if not 400 <= status <= 599:
        raise ValueError(f"--status is an HTTP error status from 400 to 599, not {status}")
    default_code = 50001 if status == 500 else status  # Confluent answers a bare status for what it has no code
    kwargs: dict[str, Any] = {}
    if a.get("message"):
        kwargs["message"] = a["message"]
    return "injected: registry " + _registry(c).inject_error(
        a.get("path") or "", status, _int(a, "error_code", default_code), count=_int(a, "count", 1),
        method=a.get("method"), **kwargs).describe()


def _registry_latency(c: Cluster, a: dict[str, Any]) -> str:
    return "injected: registry " + _registry(c).inject_latency(
        _int(a, "ms"), a.get("path") or "", _int(a, "count", None), method=a.get("method")).describe()


def _registry_unknown_id(c: Cluster, a: dict[str, Any]) -> str:
    return "injected: registry " + _registry(c).unknown_schema_id(_int(a, "id", None), _int(a, "count", None)
                                                                  ).describe()


COMMANDS: dict[str, tuple[str, Callable[[Cluster, dict[str, Any]], Awaitable[Any]]]] = {
    "kill-broker": ("BROKER: the broker dies, connections dropped at once",
                    lambda c, a: _take_down(c, a, controlled=False)),
    "stop-broker": ("BROKER: controlled shutdown (leadership moves first)",
                    lambda c, a: _take_down(c, a, controlled=True)),
    "restart-broker": ("BROKER: bring a stopped or killed broker back", _restart),
    "isolate-broker": ("BROKER: cut it off from the other brokers (clients still reach it)",
                       _sync(lambda c, a: _isolate(c, a, True))),
    "heal-broker": ("BROKER: undo isolate-broker", _sync(lambda c, a: _isolate(c, a, False))),
    "pause-replication": ("BROKER [--topic T] [--partition P]: the broker stops fetching as a follower",
                          _sync(lambda c, a: _replication(c, a, True))),
    "resume-replication": ("BROKER [--topic T] [--partition P]: undo pause-replication",
                           _sync(lambda c, a: _replication(c, a, False))),
    "shrink-isr": ("TOPIC PARTITION BROKER: take the follower out of the ISR now",
                   _sync(lambda c, a: _isr(c, a, True))),
    "expand-isr": ("TOPIC PARTITION BROKER: let it fetch again; it rejoins once caught up",
                   _sync(lambda c, a: _isr(c, a, False))),
    "move-leader": ("TOPIC PARTITION BROKER: elect that in-sync replica", _sync(_move_leader)),
    "elect-preferred-leaders": ("move leadership back to the first replica where possible", _sync(_elect_preferred)),
    "inject-error": ("API ERROR [--count N] [--broker B] [--topic T] [--partition P] [--client-id C] [--after]: "
                     "answer with the error (--after: once the request is applied)",
                     _sync(lambda c, a: "injected: " + c.inject_error(
                         a["api"], a["error"], _int(a, "count", 1), broker=_int(a, "broker", None),
                         topic=a.get("topic"), partition=_int(a, "partition", None),
                         client_id=a.get("client_id"), after=bool(a.get("after"))).describe())),
    "inject-latency": ("MS [--api API] [--count N] [--broker B]",
                       _sync(lambda c, a: "injected: " + c.inject_latency(
                           _int(a, "ms"), a.get("api"), _int(a, "count", None),
                           broker=_int(a, "broker", None)).describe())),
    "drop-connection": ("API [--when before|after] [--count N] [--broker B]",
                        _sync(lambda c, a: "injected: " + c.drop_connection(
                            a.get("api"), when=a.get("when") or "before", count=_int(a, "count", 1),
                            broker=_int(a, "broker", None)).describe())),
    "throttle": ("MS [--api API] [--count N]",
                 _sync(lambda c, a: "injected: " + c.throttle(_int(a, "ms"), a.get("api"),
                                                              _int(a, "count", None)).describe())),
    "clear-faults": ("remove every injected fault (the schema registry's too)", _sync(_clear)),
    "registry-inject-error": ("[--path REGEX] [--method M] [--status S] [--error-code C] [--message TEXT] "
                              "[--count N]: the schema registry answers the next N matching requests with the "
                              "error (default 500 with Confluent's 50001)", _sync(_registry_error)),
    "registry-inject-latency": ("MS [--path REGEX] [--method M] [--count N]: the schema registry answers matching "
                                "requests MS late (default: every one)", _sync(_registry_latency)),
    "registry-unknown-schema-id": ("[--id ID] [--count N]: the schema registry answers reads of the id (default: "
                                   "every id) 404 with 40403, as if never registered", _sync(_registry_unknown_id)),
    "abort-transaction": ("TRANSACTIONAL_ID: abort its open transaction as its timeout would (the producer is "
                          "fenced)", _sync(_abort_transaction)),
    "expire-transactional-id": ("TRANSACTIONAL_ID: forget an idle one (no open transaction), as "
                                "transactional.id.expiration.ms would", _sync(_expire_transactional_id)),
    "advance-clock": ("MS: move the frozen clock (serve --clock frozen)", _sync(_advance)),
    "force-compaction": ("TOPIC: run the log cleaner on a compacted topic now, whatever its dirty ratio",
                         _sync(_force_compaction)),
    "partition-state": ("TOPIC PARTITION: leader, epoch, replicas, ISR, offsets (JSON)",
                        _sync(lambda c, a: c.partition_state(a["topic"], _int(a, "partition")))),
    "events": ("every fault and state change so far (JSON)", _sync(_events)),
    "client-metrics": ("[--client-id C]: the metrics clients pushed (KIP-714 client telemetry, `serve "
                       "--client-telemetry`), decoded, one entry per push (JSON)", _sync(_client_metrics)),
    "describe": ("topics, partitions, groups, their members and transactions, as tables",
                 _sync(lambda c, a: describe_tables(c.state))),
}
"""name -> (help, handler). A handler that changes the cluster returns a sentence saying what it did; the
reply adds the events the command caused (leader elections, ISR changes...), one line each."""


def format_event(kind: str, details: dict[str, Any]) -> str:
    return " ".join([kind, *(f"{k}={v}" for k, v in details.items())])


_CAUSED_SHOWN = 20


def _caused(events: list[Any]) -> list[str]:
    """The events a command caused, one indented line each: those on internal topics (__consumer_offsets'
    50 partitions follow every broker kill) and any past the first 20 are counted, not listed."""
    internal, shown = [], []
    for e in events:
        (internal if str(e.details.get("topic", "")).startswith("__") else shown).append(e)
    lines = [f"  {format_event(e.kind, e.details)}" for e in shown[:_CAUSED_SHOWN]]
    left = len(shown) - _CAUSED_SHOWN
    if left > 0:
        lines.append(f"  ... and {left} more")
    if internal:
        topics = ", ".join(sorted({str(e.details["topic"]) for e in internal}))
        lines.append(f"  ... and {len(internal)} on internal topics ({topics})")
    if left > 0 or internal:
        lines.append("  (`fakekafka ctl events` lists every one)")
    return lines


def _error_text(e: Exception) -> str:
    if isinstance(e, ApiError):
        return f"{e.code.name}: {e.message}" if e.message else e.code.name
    if isinstance(e, KeyError):
        return f"missing argument: {e.args[0]}" if e.args else "missing argument"
    return str(e)


Commands = dict[str, tuple[str, Callable[[Any, dict[str, Any]], Awaitable[Any]]]]


TOKEN_ENV = "FAKEKAFKA_CONTROL_TOKEN"
"""The environment variable `serve`, `proxy` and `ctl` read a control token from (a token file wins over it)."""
LINE_LIMIT = 1 << 20
"""The longest command line taken (1 MiB); a longer one is answered with an error and the connection closed."""


def is_loopback(host: str) -> bool:
    """Whether `host` (an address, or "localhost") is this machine's loopback: 127.0.0.0/8, ::1, or an IPv4 loopback
    address mapped into IPv6."""
    if host == "localhost":
        return True
    try:
        address = ipaddress.ip_address(host.split("%", 1)[0])
    except ValueError:
        return False
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        address = address.ipv4_mapped
    return address.is_loopback


def control_token(token_file: str | None, *, create: bool = False) -> str | None:
    """The control token: the first line of `token_file`, else $FAKEKAFKA_CONTROL_TOKEN, else None. `create`: a
    token file that does not exist is made with a new random token, readable by its owner only (0600).
    ValueError in words for an empty or unreadable file."""
    if token_file:
        path = Path(token_file)
        if create and not path.exists():
            token = secrets.token_urlsafe(32)
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            with os.fdopen(fd, "w") as f:
                f.write(token + "\n")
            return token
        try:
            lines = path.read_text().split("\n")
        except OSError as e:
            raise ValueError(f"cannot read the control token file {token_file}: {e.strerror or e}") from None
        token = lines[0].strip()
        if not token:
            raise ValueError(f"the control token file {token_file} is empty")
        return token
    return os.environ.get(TOKEN_ENV, "").strip() or None


def control_binding(control_host: str | None, host: str, token_file: str | None) -> tuple[str, str | None, str | None]:
    """Where a control port listens and its token: (address, token, what to tell the operator on stderr or
    None). `control_host` as asked, else the broker's or proxy's `host` when that is a loopback address, else
    127.0.0.1. Off loopback the port needs a token: the token file's (made when missing), else
    $FAKEKAFKA_CONTROL_TOKEN, else a new one, told. ValueError in words for a token file that cannot be used."""
    address = control_host or (host if is_loopback(host) else "127.0.0.1")
    token = control_token(token_file, create=True)
    if is_loopback(address):
        return address, token, None
    if token is not None:
        where = f"the token in {token_file}" if token_file else f"the token in ${TOKEN_ENV}"
        return address, token, (f"the control port listens on {address}: commands from other hosts need {where} "
                                f"(`fakekafka ctl --token-file FILE` or ${TOKEN_ENV})")
    token = secrets.token_urlsafe(32)
    return address, token, (f"the control port listens on {address}: commands from other hosts need its token "
                            f"{token} (give it to `fakekafka ctl` in ${TOKEN_ENV} or --token-file; choose one with "
                            f"--control-token-file or ${TOKEN_ENV})")


def _refusal(peer: str, request: Any, token: str | None) -> str | None:
    """Why a command line from `peer` is not taken (None: it is)."""
    if is_loopback(peer):
        return None
    given = request.get("token") if isinstance(request, dict) else None
    if token is None:
        return f"this control port takes commands from this machine only ({peer} is not a loopback address)"
    if not isinstance(given, str) or not hmac.compare_digest(given.encode(), token.encode()):
        return (f"this control port needs its token from {peer} (`fakekafka ctl --token-file FILE`, or "
                f"${TOKEN_ENV}); " + ("the one given is wrong" if given else "none was given"))
    return None


async def _handle(target: Any, commands: Commands, events: Callable[[], list[Any]], unknown: Callable[[str], str],
                  token: str | None, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    peername = writer.get_extra_info("peername")
    peer = str(peername[0]) if isinstance(peername, tuple) and peername else ""
    try:
        while True:
            try:
                line = await reader.readline()
            except (asyncio.LimitOverrunError, ValueError):  # a line past LINE_LIMIT: answered, then closed
                writer.write(json.dumps({"ok": False, "error": f"a command line is at most {LINE_LIMIT} bytes"}
                                        ).encode() + b"\n")
                await writer.drain()
                break
            if not line:
                break
            try:
                request = json.loads(line)
            except ValueError:
                request = None
            refused = _refusal(peer, request, token)
            if refused is not None:
                log.warning("control: refused a command from %s: %s", peer, refused)
                writer.write(json.dumps({"ok": False, "error": refused}).encode() + b"\n")
                await writer.drain()
                break
            try:
                if request is None:
                    raise ValueError("a command is one line of JSON: {\"command\": ..., \"args\": {...}}")
                name = request["command"]
                if name not in commands:
                    raise ValueError(unknown(name))
                seen = len(events())
                result = await commands[name][1](target, request.get("args") or {})
                if isinstance(result, str):
                    result = "\n".join([result, *_caused(events()[seen:])])
                reply: dict[str, Any] = {"ok": True, "result": result}
                log.info("control: %s %s", name, request.get("args") or "")
            except (ApiError, ValueError, KeyError, TypeError, RuntimeError) as e:
                reply = {"ok": False, "error": _error_text(e)}
            writer.write(json.dumps(reply, default=str).encode() + b"\n")
            await writer.drain()
    except ConnectionError:
        pass
    finally:
        writer.close()


async def serve_control(cluster: Cluster, host: str, port: int, token: str | None = None
                        ) -> asyncio.base_events.Server:
    return await serve_commands(cluster, COMMANDS, lambda: cluster.state.events, host, port, token=token)


async def serve_commands(target: Any, commands: Commands, events: Callable[[], list[Any]], host: str, port: int,
                         unknown: Callable[[str], str] | None = None, token: str | None = None
                         ) -> asyncio.base_events.Server:
    """A control port running `commands` against `target` (a cluster, a proxy); `events` lists what happened,
    so a reply can add the events its command caused. Commands from a loopback address are taken; from any other
    only with `token` (None: never)."""
    def default_unknown(name: str) -> str:
        return f"unknown command {name!r}; known: {', '.join(commands)}"
    return await asyncio.start_server(lambda r, w: _handle(target, commands, events, unknown or default_unknown,
                                                           token, r, w), host, port, reuse_address=True,
                                      limit=LINE_LIMIT)


def send_command(address: str, command: str, args: dict[str, Any], timeout: float = 30.0,
                 token: str | None = None) -> dict[str, Any]:
    """One command to a control port at HOST:PORT, with the port's token when given (needed from another host)."""
    host, port = address.rsplit(":", 1)
    request: dict[str, Any] = {"command": command, "args": args}
    if token is not None:
        request["token"] = token
    with socket.create_connection((host.strip("[]"), int(port)), timeout=timeout) as sock:
        sock.sendall(json.dumps(request).encode() + b"\n")
        data = b""
        while not data.endswith(b"\n"):
            chunk = sock.recv(65536)
            if not chunk:
                raise ConnectionError("the control port closed the connection")
            data += chunk
    return json.loads(data)
