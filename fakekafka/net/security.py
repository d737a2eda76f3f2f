"""Listeners, TLS and SASL by Kafka's names, so an application configured for SASL_SSL in staging runs the
same code path against fakekafka.

`listeners` / `advertised.listeners` / `listener.security.protocol.map` are parsed as Kafka parses them;
`ssl.*` settings take PEM files (Kafka's `ssl.keystore.type=PEM`); SASL PLAIN and SCRAM-SHA-256/512 check
passwords the cluster was given (`Cluster(users=...)`), SCRAM per RFC 5802/7677 with hashlib and hmac.
`make_test_pki` writes a throwaway CA with a server and a client certificate for tests.
"""

from __future__ import annotations

import datetime
import ipaddress
import os
import re
import ssl
from dataclasses import dataclass
from pathlib import Path

__all__ = [
    "DEFAULT_PROTOCOL_MAP", "ListenerSpec", "TestPki", "make_test_pki",
    "parse_listeners", "protocol_map", "server_ssl_context",
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
