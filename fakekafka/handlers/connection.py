"""What the broker knows of one client connection, kept across its requests: the listener it came in on, who it
authenticated as (SASL or its TLS certificate), the client software its ApiVersions named. The network edge
makes one per connection; handlers read and set it through `RequestContext.connection`."""

from __future__ import annotations

from dataclasses import dataclass

from fakekafka.handlers.sasl_mechanisms import OAuthBearerServer, ScramServer

__all__ = ["ConnectionState", "SaslState"]


@dataclass
class SaslState:
    """One connection's progress through the SASL exchange (and, KIP-368, its re-authentications)."""

    mechanism: str | None = None
    scram: ScramServer | None = None
    oauth: OAuthBearerServer | None = None
    principal: str | None = None
    expires_at_ms: int | None = None
    """Wall-clock time the session ends (None: never): past it, any request but a re-authentication closes the
    connection, as Kafka's SocketServer does."""
    reauth_from: tuple[str, str] | None = None
    """(mechanism, principal) of the session being re-authenticated."""
    pending: str | None = None
    """The exchange under way (the mechanism chosen by the handshake, until its SaslAuthenticate ends)."""
    last_reauth_ms: int = 0
    """When the last re-authentication began: Kafka starts at most one a second (its MIN_REAUTH_INTERVAL)."""

    @property
    def authenticated(self) -> bool:
        return self.principal is not None

    def expired(self, now_ms: int) -> bool:
        return self.expires_at_ms is not None and now_ms >= self.expires_at_ms


@dataclass
class ConnectionState:
    """One client connection's state (the network edge owns it; handlers read and set it)."""

    listener: str | None = None
    """The listener's name (None: the cluster's only, implicit listener)."""
    sasl: SaslState | None = None
    """The SASL exchange's progress, on a SASL listener (None elsewhere)."""
    ssl_principal: str | None = None
    """An SSL listener's client as Kafka's principal builder names it (None: not an SSL listener)."""
    client_software: tuple[str | None, str | None] | None = None
    """(name, version) from the connection's ApiVersions v3+."""
    close_after: str | None = None
    """Set by a handler: the connection is closed after this answer, for this reason (as Kafka does)."""
    throttle_ms: int = 0
    """Set by a handler: the connection is muted this long after the answer (a client quota's throttle, as
    Kafka's quota managers mute the channel); the network edge resets it."""
    refused: bool = False
    """The connection's authentication failed before any request: it is closed unread."""
