"""Listeners, TLS and SASL by Kafka's names, so an application configured for SASL_SSL in staging runs the
same code path against fakekafka.

`listeners` / `advertised.listeners` / `listener.security.protocol.map` are parsed as Kafka parses them;
`ssl.*` settings take PEM files (Kafka's `ssl.keystore.type=PEM`); SASL PLAIN and SCRAM-SHA-256/512 check
passwords the cluster was given (`Cluster(users=...)`), SCRAM per RFC 5802/7677 with hashlib and hmac.
`make_test_pki` writes a throwaway CA with a server and a client certificate for tests.
"""

from __future__ import annotations

import base64
import datetime
import hashlib
import hmac
import ipaddress
import os
import re
import secrets
import ssl
from dataclasses import dataclass
from pathlib import Path

from fakekafka.model.scram import (
    SCRAM_MECHANISMS,
    ScramCredential,
    ScramCredentials,
)

__all__ = [
    "DEFAULT_PROTOCOL_MAP", "ListenerSpec", "SaslFailure", "ScramServer", "TestPki", "make_test_pki",
    "parse_listeners", "plain_authenticate", "protocol_map", "server_ssl_context",
]

PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")
DEFAULT_PROTOCOL_MAP = "PLAINTEXT:PLAINTEXT,SSL:SSL,SASL_PLAINTEXT:SASL_PLAINTEXT,SASL_SSL:SASL_SSL"
"""Kafka's default listener.security.protocol.map."""


@dataclass(frozen=True)
class ListenerSpec:
    """One entry of `listeners`: its name, its security protocol (from the map) and where it binds."""

    name: str
    protocol: str
    host: str
    port: int

    @property
    def tls(self) -> bool:
        return self.protocol in ("SSL", "SASL_SSL")

    @property
    def sasl(self) -> bool:
        return self.protocol in ("SASL_PLAINTEXT", "SASL_SSL")


def protocol_map(value: str) -> dict[str, str]:
    """listener.security.protocol.map as {listener name: security protocol}; ValueError in Kafka's words."""
    out: dict[str, str] = {}
    for entry in filter(None, (e.strip() for e in (value or DEFAULT_PROTOCOL_MAP).split(","))):
        name, sep, protocol = entry.partition(":")
        if not sep or not name:
            raise ValueError(f"Invalid value {value} for configuration listener.security.protocol.map: "
                             "Map entry should be of form <key>:<value>")
        if protocol.upper() not in PROTOCOLS:
            raise ValueError(f"No enum constant org.apache.kafka.common.security.auth.SecurityProtocol."
                             f"{protocol.upper()}")
        out[name.upper()] = protocol.upper()
    return out


def parse_listeners(value: str, mapping: str = "") -> list[ListenerSpec]:
    """`NAME://host:port,...` as Kafka reads `listeners`: names unique, each in the protocol map, an empty
    host binding the server's default address (given later)."""
    protocols = protocol_map(mapping)
    out: list[ListenerSpec] = []
    for entry in filter(None, (e.strip() for e in value.split(","))):
        name, sep, address = entry.partition("://")
        host, colon, port = address.rpartition(":")
        if not sep or not colon or not port.isdigit():
            raise ValueError(f"Unable to parse {entry} to a broker endpoint")
        name = name.upper()
        if name not in protocols:
            raise ValueError(f"No security protocol defined for listener {name}")
        if any(s.name == name for s in out):
            raise ValueError(f"Each listener must have a different name, listeners: {value}")
        out.append(ListenerSpec(name, protocols[name], host.strip("[]"), int(port)))
    if not out:
        raise ValueError("listeners is empty")
    return out


def server_ssl_context(keystore: str, truststore: str | None, client_auth: str,
                       key_password: str | None = None) -> ssl.SSLContext:
    """A broker's TLS context from PEM files: `ssl.keystore.location` (key and certificate chain),
    `ssl.truststore.location` (CAs client certificates are checked against), `ssl.client.auth`
    (none / requested / required, as Kafka's)."""
    if client_auth not in ("none", "requested", "required"):
        raise ValueError(f"Invalid value {client_auth} for configuration ssl.client.auth: "
                         "String must be one of: required, requested, none")
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.minimum_version = ssl.TLSVersion.TLSv1_2
    ctx.load_cert_chain(keystore, password=key_password)
    if truststore:
        ctx.load_verify_locations(truststore)
    ctx.verify_mode = {"none": ssl.CERT_NONE, "requested": ssl.CERT_OPTIONAL,
                       "required": ssl.CERT_REQUIRED}[client_auth]
    return ctx


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


# --- a throwaway CA for tests ----------------------------------------------------------------------------

@dataclass(frozen=True)
class TestPki:
    """PEM files of a throwaway CA, a server certificate for `hosts` and a client certificate.

    `server_keystore` holds the server's key and chain (Kafka's `ssl.keystore.location` with
    `ssl.keystore.type=PEM`); `ca_file` is what clients trust (`ssl.ca.location`, `ssl_cafile`,
    `ssl.truststore.location` with type PEM) and what the broker checks client certificates against."""

    __test__ = False  # not a pytest test class, whatever its name

    directory: Path
    ca_file: Path
    server_cert: Path
    server_key: Path
    server_keystore: Path
    client_cert: Path
    client_key: Path
    client_keystore: Path
    """The client's key and certificate in one PEM file (a Java client's ssl.keystore.location)."""


def _write_private(path: Path, data: bytes) -> None:
    """A private key's file, readable by its owner only (0600), an older file of that name too (its bytes are
    dropped before its mode changes and the key is written)."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "wb") as f:
        os.fchmod(fd, 0o600)
        f.write(data)


def make_test_pki(directory: str | os.PathLike[str], hosts: tuple[str, ...] = ("localhost", "127.0.0.1", "::1"),
                  client_name: str = "client") -> TestPki:
    """Writes a CA, a server certificate valid for `hosts` and a client certificate (CN=`client_name`) under
    `directory`, keys unencrypted: for tests only. EC P-256 keys, so making them takes milliseconds. The files
    holding a private key (`*.key`, `*-keystore.pem`) are readable by their owner only (0600); the CA's own key
    is not written at all."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

    out = Path(directory)
    out.mkdir(parents=True, exist_ok=True)
    now = datetime.datetime.now(datetime.UTC)

    def name(cn: str) -> x509.Name:
        return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, cn)])

    def key_pem(key: ec.EllipticCurvePrivateKey) -> bytes:
        return key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                 serialization.NoEncryption())

    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_cert = (x509.CertificateBuilder().subject_name(name("fakekafka test CA")).issuer_name(name("fakekafka test CA"))
               .public_key(ca_key.public_key()).serial_number(x509.random_serial_number())
               .not_valid_before(now - datetime.timedelta(minutes=5)).not_valid_after(now + datetime.timedelta(days=7))
               .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
               .add_extension(x509.KeyUsage(digital_signature=True, key_cert_sign=True, crl_sign=True,
                                            content_commitment=False, key_encipherment=False,
                                            data_encipherment=False, key_agreement=False, encipher_only=False,
                                            decipher_only=False), critical=True)
               .sign(ca_key, hashes.SHA256()))

    def leaf(cn: str, usage: x509.ObjectIdentifier, sans: list[x509.GeneralName]) -> tuple[bytes, bytes]:
        key = ec.generate_private_key(ec.SECP256R1())
        builder = (x509.CertificateBuilder().subject_name(name(cn)).issuer_name(ca_cert.subject)
                   .public_key(key.public_key()).serial_number(x509.random_serial_number())
                   .not_valid_before(now - datetime.timedelta(minutes=5))
                   .not_valid_after(now + datetime.timedelta(days=7))
                   .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
                   .add_extension(x509.ExtendedKeyUsage([usage]), critical=False))
        if sans:
            builder = builder.add_extension(x509.SubjectAlternativeName(sans), critical=False)
        cert = builder.sign(ca_key, hashes.SHA256())
        return cert.public_bytes(serialization.Encoding.PEM), key_pem(key)

    sans: list[x509.GeneralName] = []
    for host in hosts:
        try:
            sans.append(x509.IPAddress(ipaddress.ip_address(host)))
        except ValueError:
            sans.append(x509.DNSName(host))
    ca_pem = ca_cert.public_bytes(serialization.Encoding.PEM)
    server_cert, server_key = leaf(hosts[0] if hosts else "localhost", ExtendedKeyUsageOID.SERVER_AUTH, sans)
    client_cert, client_key = leaf(client_name, ExtendedKeyUsageOID.CLIENT_AUTH, [])
    files = {"ca.pem": ca_pem, "server.pem": server_cert, "server.key": server_key,
             "server-keystore.pem": server_key + server_cert + ca_pem, "client.pem": client_cert,
             "client.key": client_key, "client-keystore.pem": client_key + client_cert + ca_pem}
    for file, data in files.items():
        if file.endswith(".key") or file.endswith("-keystore.pem"):
            _write_private(out / file, data)
        else:
            (out / file).write_bytes(data)
    return TestPki(out, out / "ca.pem", out / "server.pem", out / "server.key", out / "server-keystore.pem",
                   out / "client.pem", out / "client.key", out / "client-keystore.pem")


# --- principals from client certificates ---------------------------------------------------------------

_RULE = re.compile(r"\s*(DEFAULT|RULE:((?:\\.|[^\\/])*)/((?:\\.|[^\\/])*)/([LU])?)\s*(?:,|$)")


def ssl_principal_name(subject_dn: str, rules: str = "DEFAULT") -> str:
    """The principal name Kafka's default principal builder gives a TLS client: its certificate's subject DN
    (RFC 2253, as Java's X500Principal.getName()), mapped by `ssl.principal.mapping.rules` (Kafka's
    SslPrincipalMapper: `RULE:regex/replacement/[LU]` entries, comma-separated, the first whose regex matches
    the whole DN wins; `DEFAULT` keeps the DN). ValueError, in Kafka's words, when no rule applies."""
    rules = rules.strip() or "DEFAULT"
    pos = 0
    parsed: list[tuple[str, str, str] | None] = []
    while pos < len(rules):
        m = _RULE.match(rules, pos)
        if m is None or m.end() == pos:
            raise ValueError(f"Invalid rule: {rules[pos:]}")
        parsed.append(None if m.group(1) == "DEFAULT" else (m.group(2), m.group(3), m.group(4) or ""))
        pos = m.end()
    for rule in parsed:
        if rule is None:
            return subject_dn
        pattern, replacement, case = rule
        if re.fullmatch(pattern, subject_dn):
            name = re.sub(pattern, re.sub(r"\$(\d)", r"\\\1", replacement), subject_dn, count=1)
            return name.lower() if case == "L" else name.upper() if case == "U" else name
    raise ValueError(f"No rules apply to {subject_dn}, rules {rules}")


def certificate_subject(der: bytes) -> str:
    """A DER certificate's subject as an RFC 2253 string (`CN=client,O=acme`)."""
    from cryptography import x509
    return x509.load_der_x509_certificate(der).subject.rfc4514_string()


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
    import json
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
