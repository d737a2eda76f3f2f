"""What legitimately differs between brokers and clients is removed before outcomes are compared.

- Always: ids and texts a broker or client makes up (cluster, member, client and topic ids; error
  messages; generation numbers; leader epochs). Scenarios mostly leave them out of their outcomes in the
  first place (assignments are recorded as sorted partition lists, not by member id; timestamps only
  where the producer set them), so this is the safety net for what slips in.
- Against the written expected outcome: the client's own exception type names too (`exception`), since
  the expectation is written once in Kafka's error names; against a real Kafka run with the same client
  they are kept and compared.
"""

from __future__ import annotations

from typing import Any

__all__ = ["CLIENT_SPECIFIC", "VOLATILE", "diff", "normalise"]

VOLATILE = frozenset({"cluster_id", "member_id", "client_id", "topic_id", "message", "generation_id",
                      "leader_epoch", "throttle_time_ms"})
CLIENT_SPECIFIC = frozenset({"exception"})


def normalise(value: Any, *, keep_client_types: bool = False) -> Any:
    drop = VOLATILE if keep_client_types else VOLATILE | CLIENT_SPECIFIC
    if isinstance(value, dict):
        return {str(k): normalise(v, keep_client_types=keep_client_types) for k, v in value.items()
                if k not in drop}
    if isinstance(value, list | tuple):
        return [normalise(v, keep_client_types=keep_client_types) for v in value]
    return value


def diff(got: Any, want: Any, path: str = "") -> list[str]:
    """Where `got` differs from `want`, one line per leaf (both normalised already)."""
    if isinstance(got, dict) and isinstance(want, dict):
        out = []
        for k in list(want) + [k for k in got if k not in want]:
            if k not in got:
                out.append(f"{path}/{k}: missing, expected {_short(want[k])}")
            elif k not in want:
                out.append(f"{path}/{k}: unexpected {_short(got[k])}")
            else:
                out.extend(diff(got[k], want[k], f"{path}/{k}"))
        return out
    if isinstance(got, list) and isinstance(want, list) and len(got) == len(want):
        return [line for i, (g, w) in enumerate(zip(got, want, strict=True)) for line in diff(g, w, f"{path}[{i}]")]
    if got != want:
        return [f"{path or '/'}: got {_short(got)}, expected {_short(want)}"]
    return []


def _short(v: Any, n: int = 160) -> str:
    s = repr(v)
    return s if len(s) <= n else s[:n] + "..."
