"""SaslHandshake (key 17, v0-1) and SaslAuthenticate (key 36, v0-2), as Kafka 4.4's SaslServerAuthenticator
answers them on a SASL_PLAINTEXT or SASL_SSL listener.

The connection's SASL state lives in the per-connection `ctx.extra["sasl"]` (the server creates it on SASL
listeners and refuses other requests until it is authenticated). An unsupported mechanism gets
UNSUPPORTED_SASL_MECHANISM with the enabled list, a wrong password SASL_AUTHENTICATION_FAILED with Kafka's
message (PLAIN's own, SCRAM's generic one; checked against Kafka 4.4.0 by tests/test_security.py); the
connection is closed after either answer, as Kafka does. On a listener without SASL, or once authenticated
(re-authentication, KIP-368, is not offered: session_lifetime_ms is 0), both answer ILLEGAL_SASL_STATE as
Kafka's request handler does.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from construct import Container

from fakekafka.handlers.registry import RequestContext, handles
from fakekafka.model.cluster import java_string_hash
from fakekafka.security import SCRAM_MECHANISMS, SaslFailure, ScramServer, plain_authenticate
from wire import ErrorCode

SASL_HANDSHAKE, SASL_AUTHENTICATE = 17, 36


@dataclass
class SaslState:
    """One connection's progress through the SASL exchange."""

    mechanism: str | None = None
    scram: ScramServer | None = None
    principal: str | None = None

    @property
    def authenticated(self) -> bool:
        return self.principal is not None


def enabled_mechanisms(ctx: RequestContext) -> list[str]:
    """sasl.enabled.mechanisms in the order Kafka lists them: its authenticator keeps them as the keys of a Java
    HashMap, so the answer follows their buckets (PLAIN, SCRAM-SHA-512, SCRAM-SHA-256), not the config's order."""
    names = list(dict.fromkeys(m.strip().upper() for m in ctx.cluster.config.sasl_enabled_mechanisms.split(",")
                               if m.strip()))

    def bucket(name: str) -> int:  # HashMap's index for a table of 16 (up to 12 entries)
        h = java_string_hash(name) & 0xFFFFFFFF
        return (h ^ (h >> 16)) & 15
    return sorted(names, key=bucket) if len(names) <= 12 else names


@handles(SASL_HANDSHAKE, 0, 1)
def handle_sasl_handshake(ctx: RequestContext, req: Container) -> dict[str, Any]:
    state: SaslState | None = ctx.extra.get("sasl")
    enabled = enabled_mechanisms(ctx)
    if state is None or state.mechanism is not None:  # KafkaApis' answer: no SASL here, or authenticated
        return {"error_code": ErrorCode.ILLEGAL_SASL_STATE, "mechanisms": []}
    mechanism = req.mechanism
    if mechanism not in enabled or (mechanism != "PLAIN" and mechanism not in SCRAM_MECHANISMS):
        ctx.extra["close_after"] = f"SASL mechanism {mechanism!r} is not enabled"
        return {"error_code": ErrorCode.UNSUPPORTED_SASL_MECHANISM, "mechanisms": enabled}
    if ctx.version == 0:  # raw tokens follow, outside Kafka framing: not offered (every client today sends v1)
        ctx.extra["close_after"] = "SaslHandshake v0 (unframed tokens) is not supported by fakekafka"
    state.mechanism = mechanism
    if mechanism in SCRAM_MECHANISMS:
        state.scram = ScramServer(mechanism, ctx.cluster.scram)
    return {"error_code": ErrorCode.NONE, "mechanisms": enabled}


def _authenticate(ctx: RequestContext, body: dict[str, Any]) -> dict[str, Any]:
    return {**body, "session_lifetime_ms": 0} if ctx.version >= 1 else body


@handles(SASL_AUTHENTICATE, 0, 2)
def handle_sasl_authenticate(ctx: RequestContext, req: Container) -> dict[str, Any]:
    state: SaslState | None = ctx.extra.get("sasl")
    if state is None or state.authenticated or state.mechanism is None:  # KafkaApis' answer (the server
        # closes a SASL listener's connection that sends this before its handshake, as Kafka does)
        return _authenticate(ctx, {"error_code": ErrorCode.ILLEGAL_SASL_STATE, "auth_bytes": b"",
                                   "error_message": "SaslAuthenticate request received after successful "
                                                    "authentication"})
    token = bytes(req.auth_bytes or b"")
    try:
        if state.scram is not None:
            reply = state.scram.step(token)
            if state.scram.complete:
                state.principal = state.scram.user
        else:
            state.principal = plain_authenticate(token, ctx.cluster.sasl_users)
            reply = b""
    except SaslFailure as e:
        ctx.extra["close_after"] = f"SASL {state.mechanism} authentication failed: {e}"
        return _authenticate(ctx, {
            "error_code": ErrorCode.SASL_AUTHENTICATION_FAILED, "auth_bytes": b"",
            "error_message": str(e) if e.told else "Authentication failed during authentication due to invalid "
                                                   f"credentials with SASL mechanism {state.mechanism}"})
    return _authenticate(ctx, {"error_code": ErrorCode.NONE, "error_message": "", "auth_bytes": reply})
