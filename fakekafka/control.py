"""`fakekafka ctl`: steering a running `fakekafka serve` from outside, one JSON line per command.

The serve side listens on a control port (printed at start) and runs each command against its
`fakekafka.Cluster`, the same operations a test calls in process: kill/stop/restart/isolate a broker,
move a leader, pause replication, inject errors/latency/drops/throttling, advance a frozen clock, and
read the events and the cluster's state.
"""

from __future__ import annotations

import asyncio
import json
import logging
import socket
from collections.abc import Awaitable, Callable
from typing import Any

from fakekafka.embedded import Cluster
from fakekafka.model.cluster import ApiError

__all__ = ["COMMANDS", "send_command", "serve_control"]

log = logging.getLogger("fakekafka.control")


def _int(args: dict[str, Any], name: str, default: Any = ...) -> Any:
    value = args.get(name, default)
    if value is ...:
        raise ValueError(f"missing argument: {name}")
    return None if value is None else int(value)


async def _kill(c: Cluster, a: dict[str, Any]) -> Any:
    await c.kill_broker_async(_int(a, "broker"))


async def _stop(c: Cluster, a: dict[str, Any]) -> Any:
    await c.stop_broker_async(_int(a, "broker"))


async def _restart(c: Cluster, a: dict[str, Any]) -> Any:
    await c.restart_broker_async(_int(a, "broker"))


def _sync(fn: Callable[[Cluster, dict[str, Any]], Any]) -> Callable[[Cluster, dict[str, Any]], Awaitable[Any]]:
    async def run(c: Cluster, a: dict[str, Any]) -> Any:
        return fn(c, a)
    return run


def _events(c: Cluster, a: dict[str, Any]) -> Any:
    return [{"time_ms": e.time_ms, "kind": e.kind, **{k: v for k, v in e.details.items()}} for e in c.events()]


COMMANDS: dict[str, tuple[str, Callable[[Cluster, dict[str, Any]], Awaitable[Any]]]] = {
    "kill-broker": ("BROKER: the broker dies, connections dropped at once", _kill),
    "stop-broker": ("BROKER: controlled shutdown (leadership moves first)", _stop),
    "restart-broker": ("BROKER: bring a stopped or killed broker back", _restart),
    "isolate-broker": ("BROKER: cut it off from the other brokers (clients still reach it)",
                       _sync(lambda c, a: c.isolate_broker(_int(a, "broker"), True))),
    "heal-broker": ("BROKER: undo isolate-broker", _sync(lambda c, a: c.isolate_broker(_int(a, "broker"), False))),
    "pause-replication": ("BROKER [--topic T] [--partition P]: the broker stops fetching as a follower",
                          _sync(lambda c, a: c.pause_replication(_int(a, "broker"), a.get("topic"),
                                                                 _int(a, "partition", None), True))),
    "resume-replication": ("BROKER [--topic T] [--partition P]: undo pause-replication",
                           _sync(lambda c, a: c.pause_replication(_int(a, "broker"), a.get("topic"),
                                                                  _int(a, "partition", None), False))),
    "shrink-isr": ("TOPIC PARTITION BROKER: take the follower out of the ISR now",
                   _sync(lambda c, a: c.shrink_isr(a["topic"], _int(a, "partition"), _int(a, "broker")))),
    "expand-isr": ("TOPIC PARTITION BROKER: let it fetch again; it rejoins once caught up",
                   _sync(lambda c, a: c.expand_isr(a["topic"], _int(a, "partition"), _int(a, "broker")))),
    "move-leader": ("TOPIC PARTITION BROKER: elect that in-sync replica",
                    _sync(lambda c, a: c.move_leader(a["topic"], _int(a, "partition"), _int(a, "broker")))),
    "elect-preferred-leaders": ("move leadership back to the first replica where possible",
                                _sync(lambda c, a: c.elect_preferred_leaders())),
    "inject-error": ("API ERROR [--count N] [--broker B] [--topic T] [--partition P] [--client-id C]",
                     _sync(lambda c, a: c.inject_error(a["api"], a["error"], _int(a, "count", 1),
                                                       broker=_int(a, "broker", None), topic=a.get("topic"),
                                                       partition=_int(a, "partition", None),
                                                       client_id=a.get("client_id")).describe())),
    "inject-latency": ("MS [--api API] [--count N] [--broker B]",
                       _sync(lambda c, a: c.inject_latency(_int(a, "ms"), a.get("api"), _int(a, "count", None),
                                                           broker=_int(a, "broker", None)).describe())),
    "drop-connection": ("API [--when before|after] [--count N] [--broker B]",
                        _sync(lambda c, a: c.drop_connection(a.get("api"), when=a.get("when") or "before",
                                                             count=_int(a, "count", 1),
                                                             broker=_int(a, "broker", None)).describe())),
    "throttle": ("MS [--api API] [--count N]",
                 _sync(lambda c, a: c.throttle(_int(a, "ms"), a.get("api"), _int(a, "count", None)).describe())),
    "clear-faults": ("remove every injected fault", _sync(lambda c, a: c.clear_faults())),
    "advance-clock": ("MS: move the frozen clock (serve --clock frozen)",
                      _sync(lambda c, a: c.advance_clock(_int(a, "ms")))),
    "partition-state": ("TOPIC PARTITION: leader, epoch, replicas, ISR, offsets",
                        _sync(lambda c, a: c.partition_state(a["topic"], _int(a, "partition")))),
    "events": ("every fault and state change so far", _sync(_events)),
    "describe": ("topics, groups and the last requests", _sync(lambda c, a: c.describe())),
}


async def _handle(cluster: Cluster, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    try:
        while line := await reader.readline():
            try:
                request = json.loads(line)
                name = request["command"]
                if name not in COMMANDS:
                    raise ValueError(f"unknown command {name!r}; known: {', '.join(COMMANDS)}")
                result = await COMMANDS[name][1](cluster, request.get("args") or {})
                reply: dict[str, Any] = {"ok": True, "result": result}
                log.info("control: %s %s", name, request.get("args") or "")
            except (ApiError, ValueError, KeyError, TypeError, RuntimeError) as e:
                message = e.message if isinstance(e, ApiError) and e.message else str(e)
                reply = {"ok": False, "error": f"{type(e).__name__}: {message}"}
            writer.write(json.dumps(reply, default=str).encode() + b"\n")
            await writer.drain()
    except ConnectionError:
        pass
    finally:
        writer.close()


async def serve_control(cluster: Cluster, host: str, port: int) -> asyncio.base_events.Server:
    return await asyncio.start_server(lambda r, w: _handle(cluster, r, w), host, port, reuse_address=True)


def send_command(address: str, command: str, args: dict[str, Any], timeout: float = 30.0) -> dict[str, Any]:
    host, port = address.rsplit(":", 1)
    with socket.create_connection((host, int(port)), timeout=timeout) as sock:
        sock.sendall(json.dumps({"command": command, "args": args}).encode() + b"\n")
        data = b""
        while not data.endswith(b"\n"):
            chunk = sock.recv(65536)
            if not chunk:
                raise ConnectionError("the control port closed the connection")
            data += chunk
    return json.loads(data)
