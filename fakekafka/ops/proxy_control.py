"""`fakekafka ctl` against a running `fakekafka proxy`: the fault commands are the fake cluster's own (the same
entries of `fakekafka.ops.control.COMMANDS`, run on a `Proxy`), a broker is killed by making it unreachable through
the proxy, and `describe` shows the upstream brokers, their listeners and the traffic so far."""

from __future__ import annotations

from typing import Any

from fakekafka.ops.control import COMMANDS, Commands, _int
from fakekafka.proxy import BOOTSTRAP, Proxy

__all__ = ["PROXY_COMMANDS", "unknown_proxy_command"]

_SHARED = ("inject-error", "inject-latency", "drop-connection", "throttle", "clear-faults", "events",
           "registry-inject-error", "registry-inject-latency", "registry-unknown-schema-id")
"""The registry commands steer the forwarded registry of `--schema-registry-upstream` (`Proxy.schema_registry`)."""


def _broker(p: Proxy, a: dict[str, Any]) -> int:
    node_id = _int(a, "broker")
    if node_id not in p.server.listeners or node_id == BOOTSTRAP:
        known = ", ".join(str(n) for n in sorted(p.server.nodes)) or "none yet (no client has asked for metadata)"
        raise ValueError(f"the proxy has seen no broker {node_id}; the upstream brokers it has seen are {known}")
    return node_id


async def _kill(p: Proxy, a: dict[str, Any]) -> str:
    node_id = _broker(p, a)
    if not p.server.listeners[node_id].reachable:
        return f"broker {node_id} is unreachable already: nothing changed"
    await p.server.kill_broker(node_id)
    return (f"broker {node_id} unreachable through the proxy: port {p.server.listeners[node_id].port} closed, its "
            f"connections dropped (the upstream broker itself runs on)")


async def _restart(p: Proxy, a: dict[str, Any]) -> str:
    node_id = _broker(p, a)
    if p.server.listeners[node_id].reachable:
        return f"broker {node_id} is reachable already: nothing changed"
    await p.server.restart_broker(node_id)
    return f"broker {node_id} reachable again on port {p.server.listeners[node_id].port}"


async def _describe(p: Proxy, a: dict[str, Any]) -> str:
    s = p.server
    lines = [f"fakekafka proxy at {s.bootstrap_servers} -> {', '.join(map(str, s.upstreams))}",
             f"{'broker':>6}  {'upstream':<24} {'proxy port':>10}  {'state':<11} connections"]
    for node_id, upstream in sorted(s.nodes.items()):
        listener = s.listeners.get(node_id)
        if listener is None:
            continue
        lines.append(f"{node_id:>6}  {str(upstream):<24} {listener.port:>10}  "
                     f"{'up' if listener.reachable else 'unreachable':<11} {len(listener.pairs)}")
    lines.append(f"bootstrap connections: {len(s.listeners[BOOTSTRAP].pairs)}; requests forwarded: "
                 f"{s.requests_forwarded}, answered by the proxy: {s.requests_answered_locally}, "
                 f"passed on while they arrived (requests and answers): {s.frames_streamed}")
    rules = [f.describe() for f in s.faults.rules]
    lines.append("faults: " + ("; ".join(rules) if rules else "none"))
    return "\n".join(lines)


PROXY_COMMANDS: Commands = {
    "kill-broker": ("BROKER: unreachable through the proxy (listener closed, connections dropped)", _kill),
    "restart-broker": ("BROKER: reachable through the proxy again", _restart),
    **{name: COMMANDS[name] for name in _SHARED},
    "describe": ("the upstream brokers, the proxy's ports for them, connections and faults", _describe),
}


def unknown_proxy_command(name: str) -> str:
    if name in COMMANDS:
        return (f"{name} steers a fake cluster's model, which a proxy in front of a real one does not have; a proxy "
                f"takes: {', '.join(PROXY_COMMANDS)}")
    return f"unknown command {name!r}; a proxy takes: {', '.join(PROXY_COMMANDS)}"
