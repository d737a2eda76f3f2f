"""SASL gating at the network edge: which requests a SASL listener's connection may send before it has
authenticated, and when its session has ended, as Kafka's SaslServerAuthenticator and SocketServer decide.
(The SASL exchange itself is handlers/sasl.py's; the mechanisms are in fakekafka/net/security.py.)"""

from __future__ import annotations

import enum

from fakekafka.handlers.connection import SaslState
from fakekafka.wire import ApiKey

__all__ = ["SaslGate", "sasl_gate"]


class SaslGate(enum.Enum):
    PASS = "pass"
    """Served as usual."""
    CLOSE = "close"
    """Before the handshake: the connection is closed unanswered."""
    ILLEGAL_STATE = "illegal state"
    """After the handshake, anything but SaslAuthenticate: answered ILLEGAL_SASL_STATE, then closed."""
    EXPIRED = "expired"
    """The session ended without a re-authentication (KIP-368): closed unanswered."""


def sasl_gate(sasl: SaslState | None, api_key: int, now_ms: int) -> SaslGate:
    """What becomes of a request with `api_key` on a connection in `sasl`'s state (None: not a SASL listener);
    `now_ms` is wall-clock time (session ends are, as tokens carry them)."""
    if sasl is None:
        return SaslGate.PASS
    if not sasl.authenticated:
        if sasl.mechanism is None:
            return SaslGate.PASS if api_key in (ApiKey.API_VERSIONS, ApiKey.SASL_HANDSHAKE) else SaslGate.CLOSE
        return SaslGate.PASS if api_key == ApiKey.SASL_AUTHENTICATE else SaslGate.ILLEGAL_STATE
    if api_key not in (ApiKey.SASL_HANDSHAKE, ApiKey.SASL_AUTHENTICATE) and sasl.expired(now_ms):
        return SaslGate.EXPIRED
    return SaslGate.PASS
