"""SASL mechanisms as Kafka's broker runs them: PLAIN against the users the cluster was given, SCRAM-SHA-256/512 per
RFC 5802/7677 (hashlib and hmac), OAUTHBEARER (RFC 7628) with unsecured JWS tokens when the operator asks for
Kafka's unsecured validator. Pure functions of the bytes a client sends: the handlers run them, no socket here."""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import re
import secrets
from dataclasses import dataclass

from fakekafka.model.scram import (
    SCRAM_MECHANISMS,
    ScramCredential,
    ScramCredentials,
)

__all__ = ["SCRAM_MECHANISMS", "OAuthBearerServer", "SaslAbort", "SaslFailure", "ScramServer", "plain_authenticate",
           "unsecured_jws"]

# --- SASL ---------------------------------------------------------------------------------------------------

class SaslAbort(Exception):
    """An exchange Kafka's authenticator ends by closing the connection without an answer."""


class SaslFailure(Exception):
    """Credentials refused: Kafka answers SASL_AUTHENTICATION_FAILED and closes the connection. `told`: the
    message goes to the client as it is (Kafka's SaslAuthenticationException); otherwise the client gets
    Kafka's generic "invalid credentials" message (its SaslException, which SCRAM failures are)."""

    def __init__(self, message: str, *, told: bool = False) -> None:
        super().__init__(message)
        self.told = told


def plain_authenticate(token: bytes, users: dict[str, str]) -> str:
    """RFC 4616 `authzid NUL user NUL password`; returns the user name. Kafka's PlainSaslServer refuses an
    authorization id other than the user."""
    parts = token.split(b"\0")
    if len(parts) != 3:
        raise SaslFailure(f"Invalid SASL/PLAIN response: expected 3 tokens, got {len(parts)}")
    authzid, user, password = (p.decode("utf-8", "replace") for p in parts)
    if not user:
        raise SaslFailure("Authentication failed: username not specified", told=True)
    if not password:
        raise SaslFailure("Authentication failed: password not specified", told=True)
    expected = users.get(user)
    if expected is None or not hmac.compare_digest(expected.encode(), password.encode()):
        raise SaslFailure("Authentication failed: Invalid username or password", told=True)
    if authzid and authzid != user:
        raise SaslFailure("Authentication failed: Client requested an authorization id that is different from "
                          "username", told=True)
    return user


def _attributes(message: str) -> dict[str, str]:
    out = {}
    for part in message.split(","):
        key, sep, value = part.partition("=")
        if not sep or len(key) != 1:
            raise SaslFailure(f"Invalid SCRAM message: {message!r}")
        out[key] = value
    return out


class ScramServer:
    """The server side of one SCRAM exchange (client-first -> server-first, client-final -> server-final)."""

    def __init__(self, mechanism: str, credentials: ScramCredentials) -> None:
        self.mechanism = mechanism
        self.hash = SCRAM_MECHANISMS[mechanism]
        self.credentials = credentials
        self.user: str | None = None
        self._first_bare = ""
        self._server_first = ""
        self._nonce = ""
        self._credential: ScramCredential | None = None
        self.complete = False

    def step(self, token: bytes) -> bytes:
        """Answers the client's next message; SaslFailure when the exchange or the proof is wrong."""
        try:
            text = token.decode("utf-8")
        except UnicodeDecodeError:
            raise SaslFailure("Invalid SCRAM message: not UTF-8") from None
        return self._first(text) if self._credential is None else self._final(text)

    def _first(self, text: str) -> bytes:
        gs2, _, rest = text.partition(",")
        authzid, _, bare = rest.partition(",")
        if gs2 not in ("n", "y") or not bare:
            raise SaslFailure(f"Invalid SCRAM client first message: {text!r}")
        attrs = _attributes(bare)
        user = attrs.get("n", "").replace("=2C", ",").replace("=3D", "=")
        if "r" not in attrs or not user:
            raise SaslFailure(f"Invalid SCRAM client first message: {text!r}")
        if authzid and authzid[2:] != user:
            raise SaslFailure("Authentication failed: Client requested an authorization id that is different "
                              "from username")
        credential = self.credentials.get(user, self.mechanism)
        if credential is None:
            raise SaslFailure("Authentication failed: Invalid user credentials")
        self.user = user
        self._credential = credential
        self._nonce = attrs["r"] + base64.b64encode(secrets.token_bytes(18)).decode()
        self._first_bare = bare
        self._server_first = (f"r={self._nonce},s={base64.b64encode(self._credential.salt).decode()},"
                              f"i={self._credential.iterations}")
        return self._server_first.encode()

    def _final(self, text: str) -> bytes:
        assert self._credential is not None
        without_proof, _, proof_part = text.rpartition(",p=")
        attrs = _attributes(without_proof)
        # Kafka's ScramSaslServer checks that the nonce ends with the server's, not that it equals it: librdkafka
        # before 2.1 sends the client nonce twice (kcat on Debian does), and Kafka accepts that
        if not proof_part or not attrs.get("r", "").endswith(self._nonce):
            raise SaslFailure("Invalid SCRAM client final message")
        try:
            proof = base64.b64decode(proof_part, validate=True)
        except ValueError:
            raise SaslFailure("Invalid SCRAM client final message") from None
        auth_message = f"{self._first_bare},{self._server_first},{without_proof}".encode()
        cred = self._credential
        signature = hmac.digest(cred.stored_key, auth_message, self.hash)
        if len(proof) != len(signature):
            raise SaslFailure("Authentication failed: Invalid client final message")
        client_key = bytes(a ^ b for a, b in zip(proof, signature, strict=True))
        if not hmac.compare_digest(hashlib.new(self.hash, client_key).digest(), cred.stored_key):
            raise SaslFailure("Authentication failed: Invalid user credentials")
        self.complete = True
        server_signature = hmac.digest(cred.server_key, auth_message, self.hash)
        return b"v=" + base64.b64encode(server_signature)


# --- OAUTHBEARER with unsecured JWS tokens --------------------------------------------------------------------

_OAUTH_KEY = r"[A-Za-z]+"
_OAUTH_VALUE = r"[\x21-\x7E \t\r\n]+"
_OAUTH_FIRST = re.compile(r"n,(?:a=(?P<authzid>(?:[\x01-\x2B\x2D-\x3C\x3E-\x7F]|=2C|=3D)+))?,\x01(?P<kvpairs>(?:"
                          + _OAUTH_KEY + "=" + _OAUTH_VALUE + r"\x01)*)\x01", re.DOTALL)
_OAUTH_AUTH = re.compile(r"(?P<scheme>\w+) +(?P<token>[-_~+/.a-zA-Z0-9]+=*)")
OAUTH_INVALID_TOKEN = '{"status":"invalid_token"}'
"""What Kafka's OAuthBearerSaslServer sends back for a token its validator refuses (the client then answers
%x01 and is refused with the same text)."""


@dataclass(frozen=True)
class OAuthToken:
    principal: str
    lifetime_ms: int


def _jws_part(part: str) -> dict[str, object]:
    """One part of a compact serialization as Kafka's OAuthBearerUnsecuredJws.toMap reads it: Java's *basic*
    Base64 decoder (not the URL one; padding optional), then a JSON object."""
    try:
        data = base64.b64decode(part + "=" * (-len(part) % 4), validate=True)
        value = json.loads(data)
    except (ValueError, UnicodeDecodeError):
        raise SaslFailure("malformed JWS part") from None
    if not isinstance(value, dict):
        raise SaslFailure("malformed JSON")
    return value


def unsecured_jws(token: str, now_ms: int, principal_claim: str = "sub") -> OAuthToken:
    """Validates an unsecured JWS (`base64(header).base64(claims).`) as Kafka's default OAUTHBEARER validator
    (OAuthBearerUnsecuredValidatorCallbackHandler) does: alg none, no signature, a string principal claim, a
    numeric exp not passed, iat (if any) not in the future and before exp. SaslFailure when refused."""
    if ".." in token:
        raise SaslFailure("Malformed compact serialization contains '..'")
    parts = token.split(".")
    if len(parts) != 3:
        raise SaslFailure("Unsecured JWS compact serializations must have 3 dot-separated Base64URL-encoded values")
    header, claims = _jws_part(parts[0]), _jws_part(parts[1])
    if header.get("alg") != "none":
        raise SaslFailure("Unsecured JWS must have 'none' for an algorithm")
    if parts[2]:
        raise SaslFailure("Unsecured JWS must not contain a digital signature")
    exp = claims.get("exp")
    if not isinstance(exp, int | float) or isinstance(exp, bool):
        raise SaslFailure("No expiration time in JWT")
    principal = claims.get(principal_claim)
    if not isinstance(principal, str) or not principal.strip():
        raise SaslFailure(f"No principal name in JWT claim: {principal_claim}")
    exp_ms = round(exp * 1000)
    iat = claims.get("iat")
    if iat is not None:
        if not isinstance(iat, int | float) or isinstance(iat, bool):
            raise SaslFailure("The iat claim is not a number")
        if round(iat * 1000) > now_ms:
            raise SaslFailure("The Issued At value must not be in the future")
        if exp_ms <= round(iat * 1000):
            raise SaslFailure("The Expiration Time must be after the Issued At time")
    if exp_ms <= now_ms:
        raise SaslFailure("The indicated time is in the past: the token has expired")
    return OAuthToken(principal, exp_ms)


class OAuthBearerServer:
    """The server side of OAUTHBEARER (RFC 7628) as Kafka's OAuthBearerSaslServer with its unsecured validator:
    a client first message `n,[a=authzid],^Aauth=Bearer <token>^A[key=value^A]...^A`; a refused token gets
    OAUTH_INVALID_TOKEN back, and the client's %x01 after it fails the authentication with that text."""

    def __init__(self) -> None:
        self.token: OAuthToken | None = None
        self._error: str | None = None

    def step(self, message: bytes, now_ms: int) -> bytes:
        if message == b"\x01" and self._error is not None:
            raise SaslFailure(self._error, told=True)
        self._error = None
        text = message.decode("utf-8", "replace")
        m = _OAUTH_FIRST.fullmatch(text)
        if m is None:
            raise SaslFailure("Invalid OAUTHBEARER client first message")
        pairs = dict(kv.split("=", 1) for kv in m.group("kvpairs").split("\x01") if kv)
        auth = pairs.get("auth")
        if auth is None:
            raise SaslFailure("Invalid OAUTHBEARER client first message: 'auth' not specified")
        am = _OAUTH_AUTH.fullmatch(auth)
        if am is None:
            raise SaslFailure("Invalid OAUTHBEARER client first message: invalid 'auth' format")
        if am.group("scheme").lower() != "bearer":  # Kafka 4.4 fails here on its own message (it asks the wrong
            # regex match for the scheme): not a SASL error, so its authenticator closes the connection unanswered
            raise SaslAbort(f"OAUTHBEARER scheme {am.group('scheme')!r} is not Bearer")
        try:
            token = unsecured_jws(am.group("token"), now_ms)
        except SaslFailure:
            self._error = OAUTH_INVALID_TOKEN
            return OAUTH_INVALID_TOKEN.encode()
        authzid = m.group("authzid") or ""
        if authzid and authzid != token.principal:
            raise SaslFailure(f"Authentication failed: Client requested an authorization id ({authzid}) that is "
                              f"different from the token's principal name ({token.principal})", told=True)
        self.token = token
        return b""
