"""SaslHandshake (key 17, v0-1) and SaslAuthenticate (key 36, v0-2), as Kafka 4.4's SaslServerAuthenticator
answers them on a SASL_PLAINTEXT or SASL_SSL listener.

The connection's SASL state lives in the per-connection `ctx.connection.sasl` (the server creates it on SASL
listeners and refuses other requests until it is authenticated). An unsupported mechanism gets
UNSUPPORTED_SASL_MECHANISM with the enabled list, a wrong password SASL_AUTHENTICATION_FAILED with Kafka's
message (PLAIN's own, SCRAM's generic one; checked against Kafka 4.4.0 by tests/integration/test_security.py); the
connection is closed after either answer, as Kafka does. On a listener without SASL, or once authenticated for
good, both answer ILLEGAL_SASL_STATE as Kafka's request handler does.

OAUTHBEARER is offered on a listener only when sasl.enabled.mechanisms lists it *and* the operator names Kafka's
unsecured validator for that listener (`listener.name.<l>.oauthbearer.sasl.server.callback.handler.class=
org.apache.kafka.common.security.oauthbearer.internals.unsecured.OAuthBearerUnsecuredValidatorCallbackHandler`);
elsewhere a client asking for it gets UNSUPPORTED_SASL_MECHANISM, as from a Kafka broker that does not enable it.
Kafka falls back to that validator when OAUTHBEARER is enabled with no handler named; fakekafka does not, since
the validator takes unsigned tokens naming any principal (super users included). It then validates unsecured JWS
tokens as that class does (fakekafka/handlers/sasl_mechanisms.py).

PLAIN checks the users of the listener's JAAS line when it has one (`listener.name.<l>.plain.sasl.jaas.config=
org.apache.kafka.common.security.plain.PlainLoginModule required user_alice="...";`, its `user_<name>` options, as
Kafka's PlainServerCallbackHandler), else the cluster's users (`Cluster(users=...)`, `serve --user`). SCRAM checks the
cluster's SCRAM credentials (the same users, and AlterUserScramCredentials'), whatever the JAAS line.

Re-authentication (KIP-368): a session gets a lifetime from connections.max.reauth.ms and an OAUTHBEARER token's
expiry, as Kafka's SaslServerAuthenticator computes it (session_lifetime_ms); such a session may re-authenticate
with a new SaslHandshake (at most once a second, the same mechanism and principal, else SASL_AUTHENTICATION_FAILED
and the connection closed), and once it has ended any other request closes the connection. Token times and session
ends are wall-clock times (tokens carry them), not the cluster's clock.
"""

from __future__ import annotations

import time
from typing import Any

from construct import Container

from fakekafka.handlers.connection import SaslState
from fakekafka.handlers.registry import DropConnection, RequestContext, handles
from fakekafka.handlers.sasl_mechanisms import (
    SCRAM_MECHANISMS,
    OAuthBearerServer,
    SaslAbort,
    SaslFailure,
    ScramServer,
    plain_authenticate,
)
from fakekafka.model.internal_topics import java_hash_set_order
from fakekafka.wire import ApiKey, ErrorCode

__all__ = ["OFFERED", "SaslState", "enabled_mechanisms"]

OFFERED = ("PLAIN", *SCRAM_MECHANISMS, "OAUTHBEARER")
"""The mechanisms fakekafka has (GSSAPI is not among them)."""


def enabled_mechanisms(ctx: RequestContext) -> list[str]:
    """The listener's mechanisms (BrokerConfig.sasl_mechanisms: sasl.enabled.mechanisms, OAUTHBEARER only where
    a validator is named) in the order Kafka lists them: its authenticator keeps them as the keys of a Java
    HashMap, so the answer follows their buckets (PLAIN, SCRAM-SHA-512, SCRAM-SHA-256), not the config's order."""
    return java_hash_set_order(ctx.cluster.config.sasl_mechanisms(ctx.listener or ""))


@handles(ApiKey.SASL_HANDSHAKE, 0, 1)
def handle_sasl_handshake(ctx: RequestContext, req: Container) -> dict[str, Any]:
    state = ctx.connection.sasl
    enabled = enabled_mechanisms(ctx)
    now_ms = int(time.time() * 1000)
    if state is None or state.pending is not None or (state.authenticated and (
            state.expires_at_ms is None or now_ms - state.last_reauth_ms < 1000)):
        return {"error_code": ErrorCode.ILLEGAL_SASL_STATE, "mechanisms": []}  # KafkaApis' answer: no SASL here,
        # or authenticated for good (only a session with a lifetime is re-authenticated, KIP-368)
    mechanism = req.mechanism
    if state.authenticated:  # re-authentication: the same mechanism and, at its end, the same principal
        assert state.mechanism is not None and state.principal is not None
        state.reauth_from = (state.mechanism, state.principal)
        state.last_reauth_ms = now_ms
    elif mechanism not in enabled or mechanism not in OFFERED:
        ctx.connection.close_after = f"SASL mechanism {mechanism!r} is not enabled"
        return {"error_code": ErrorCode.UNSUPPORTED_SASL_MECHANISM, "mechanisms": enabled}
    if ctx.version == 0:  # raw tokens follow, outside Kafka framing: not offered (every client today sends v1)
        ctx.connection.close_after = "SaslHandshake v0 (unframed tokens) is not supported by fakekafka"
    state.pending = mechanism
    state.scram = ScramServer(mechanism, ctx.cluster.scram) if mechanism in SCRAM_MECHANISMS else None
    state.oauth = OAuthBearerServer() if mechanism == "OAUTHBEARER" else None
    if not state.authenticated:
        state.mechanism = mechanism
    return {"error_code": ErrorCode.NONE, "mechanisms": enabled}


def _authenticate(ctx: RequestContext, body: dict[str, Any], lifetime_ms: int = 0) -> dict[str, Any]:
    return {**body, "session_lifetime_ms": lifetime_ms} if ctx.version >= 1 else body


def _failed(ctx: RequestContext, state: SaslState, message: str) -> dict[str, Any]:
    ctx.connection.close_after = f"SASL {state.pending} authentication failed: {message}"
    return _authenticate(ctx, {"error_code": ErrorCode.SASL_AUTHENTICATION_FAILED, "auth_bytes": b"",
                               "error_message": message})


@handles(ApiKey.SASL_AUTHENTICATE, 0, 2)
def handle_sasl_authenticate(ctx: RequestContext, req: Container) -> Any:
    state = ctx.connection.sasl
    if state is None or state.pending is None:  # KafkaApis' answer (the server closes a SASL listener's
        # connection that sends this before its handshake, as Kafka does)
        return _authenticate(ctx, {"error_code": ErrorCode.ILLEGAL_SASL_STATE, "auth_bytes": b"",
                                   "error_message": "SaslAuthenticate request received after successful "
                                                    "authentication"})
    if state.reauth_from is not None and state.pending != state.reauth_from[0]:  # Kafka closes it unanswered
        return DropConnection(reason=f"SASL mechanism '{state.pending}' requested by client is not supported for "
                                     f"re-authentication of mechanism '{state.reauth_from[0]}'")
    token = bytes(req.auth_bytes or b"")
    now_ms = int(time.time() * 1000)  # tokens carry wall-clock times (exp, iat), and sessions end by them
    principal: str | None = None
    credential_expires: int | None = None
    try:
        if state.scram is not None:
            reply = state.scram.step(token)
            if state.scram.complete:
                principal = state.scram.user
        elif state.oauth is not None:
            reply = state.oauth.step(token, now_ms)
            if state.oauth.token is not None:
                principal, credential_expires = state.oauth.token.principal, state.oauth.token.lifetime_ms
        else:
            users = ctx.cluster.config.plain_users(ctx.listener or "")  # the listener's JAAS line's users
            principal, reply = plain_authenticate(token, ctx.cluster.sasl_users if users is None else users), b""
    except SaslAbort as e:
        return DropConnection(reason=str(e))
    except SaslFailure as e:
        return _failed(ctx, state, str(e) if e.told else "Authentication failed during authentication due to "
                                                         f"invalid credentials with SASL mechanism {state.pending}")
    lifetime = 0
    if principal is not None:
        if state.reauth_from is not None and state.reauth_from[1] != principal:
            return _failed(ctx, state, "Cannot change principals during re-authentication from "
                                       f"User.{state.reauth_from[1]}: User.{principal}")
        lifetime = session_lifetime_ms(ctx, credential_expires, now_ms)
        state.principal, state.pending, state.reauth_from = principal, None, None
        state.expires_at_ms = now_ms + lifetime if lifetime > 0 or credential_expires is not None else None
    return _authenticate(ctx, {"error_code": ErrorCode.NONE, "error_message": "", "auth_bytes": reply}, lifetime)


def session_lifetime_ms(ctx: RequestContext, credential_expires_ms: int | None, now_ms: int) -> int:
    """KIP-368: how long the session may last, as Kafka's SaslServerAuthenticator computes it: the credential's
    remaining life (an OAUTHBEARER token's exp), connections.max.reauth.ms, the smaller of both, or 0 (for ever)."""
    max_reauth = ctx.cluster.config.connections_max_reauth_ms
    if credential_expires_ms is None:
        return max(max_reauth, 0)
    remaining = max(credential_expires_ms - now_ms, 0)
    return min(remaining, max_reauth) if max_reauth > 0 else remaining
