"""SCRAM users' credentials as the broker keeps them (Kafka's ScramControlManager): cluster state.

The SASL exchange that checks a login against them is fakekafka/handlers/sasl_mechanisms.py; the store
itself is changed by AlterUserScramCredentials and saved by the data dir, so it lives in the model.
"""

from __future__ import annotations

import hashlib
import hmac
import os
from dataclasses import dataclass

from fakekafka.wire import ErrorCode

__all__ = ["MAX_SCRAM_ITERATIONS", "SCRAM_ITERATIONS", "SCRAM_MECHANISMS", "SCRAM_TYPES", "ScramCredential",
           "ScramCredentials", "credential_from_salted", "scram_credential"]

SCRAM_MECHANISMS = {"SCRAM-SHA-256": "sha256", "SCRAM-SHA-512": "sha512"}
SCRAM_ITERATIONS = 4096
"""Kafka's minimum (and kafka-configs' default) iteration count."""


@dataclass
class ScramCredential:
    """What a broker stores for one SCRAM user and mechanism (RFC 5802 section 3): never the password."""

    salt: bytes
    stored_key: bytes
    server_key: bytes
    iterations: int


def scram_credential(password: str, hash_name: str, salt: bytes | None = None,
                     iterations: int = SCRAM_ITERATIONS) -> ScramCredential:
    """What a broker stores for a SCRAM user (RFC 5802 section 3): never the password itself."""
    salt = salt if salt is not None else os.urandom(16)
    salted = hashlib.pbkdf2_hmac(hash_name, password.encode(), salt, iterations)
    return credential_from_salted(salted, salt, iterations, hash_name)


SCRAM_TYPES = {1: "SCRAM-SHA-256", 2: "SCRAM-SHA-512"}
"""The wire's mechanism codes (Kafka's admin ScramMechanism: 0 is UNKNOWN)."""
MAX_SCRAM_ITERATIONS = 16384
"""The most iterations Kafka's controller accepts for a credential (ScramControlManager)."""


def credential_from_salted(salted: bytes, salt: bytes, iterations: int, hash_name: str) -> ScramCredential:
    client_key = hmac.digest(salted, b"Client Key", hash_name)
    return ScramCredential(salt, hashlib.new(hash_name, client_key).digest(),
                            hmac.digest(salted, b"Server Key", hash_name), iterations)


class ScramCredentials:
    """What the broker keeps for SCRAM users, per (user, mechanism): salt, stored and server keys, iterations
    (never the password). Changed by AlterUserScramCredentials as Kafka's controller changes its own
    (ScramControlManager: one alteration per user and request, 4096-16384 iterations), read by each login."""

    def __init__(self) -> None:
        self._creds: dict[tuple[str, str], ScramCredential] = {}

    def set_password(self, user: str, password: str) -> None:
        """Both mechanisms for `user` (a user given to the cluster with a password, as `kafka-storage format
        --add-scram` gives Kafka one)."""
        for mechanism, hash_name in SCRAM_MECHANISMS.items():
            self._creds[(user, mechanism)] = scram_credential(password, hash_name)

    def get(self, user: str, mechanism: str) -> ScramCredential | None:
        return self._creds.get((user, mechanism))

    def items(self) -> list[tuple[tuple[str, str], ScramCredential]]:
        """Every ((user, mechanism), credential), as the data dir saves them."""
        return list(self._creds.items())

    def restore(self, user: str, mechanism: str, credential: ScramCredential) -> None:
        """A credential as saved before (the data dir's load)."""
        self._creds[(user, mechanism)] = credential

    def users(self) -> list[str]:
        return list(dict.fromkeys(user for user, _ in self._creds))

    def describe(self, user: str) -> list[tuple[int, int]]:
        """(mechanism code, iterations) of each credential `user` has."""
        return [(code, cred.iterations) for code, mechanism in SCRAM_TYPES.items()
                if (cred := self._creds.get((user, mechanism))) is not None]

    def alter(self, deletions: list[tuple[str, int]], upsertions: list[tuple[str, int, int, bytes, bytes]]
              ) -> list[tuple[str, ErrorCode, str | None]]:
        """Applies what is valid; per user (each once): (user, error code, message) in Kafka's words."""
        deleting: dict[str, str] = {}
        upserting: dict[str, tuple[str, int, bytes, bytes]] = {}
        errors: dict[str, tuple[ErrorCode, str]] = {}
        twice = (ErrorCode.DUPLICATE_RESOURCE, "A user credential cannot be altered twice in the same request")
        for name, code in deletions:
            if name in errors:
                continue
            if deleting.pop(name, None) is not None:
                errors[name] = twice
            elif (error := self._invalid(name, code)) is not None:
                errors[name] = error
            elif (name, SCRAM_TYPES[code]) not in self._creds:
                errors[name] = (ErrorCode.RESOURCE_NOT_FOUND, "Attempt to delete a user credential that does not "
                                                              "exist")
            else:
                deleting[name] = SCRAM_TYPES[code]
        for name, code, iterations, salt, salted in upsertions:
            if name in errors:
                continue
            if deleting.pop(name, None) is not None or upserting.pop(name, None) is not None:
                errors[name] = twice
            elif (error := self._invalid(name, code)) is not None:
                errors[name] = error
            elif iterations < SCRAM_ITERATIONS:
                errors[name] = (ErrorCode.UNACCEPTABLE_CREDENTIAL, "Too few iterations")
            elif iterations > MAX_SCRAM_ITERATIONS:
                errors[name] = (ErrorCode.UNACCEPTABLE_CREDENTIAL, "Too many iterations")
            else:
                upserting[name] = (SCRAM_TYPES[code], iterations, salt, salted)
        for name, mechanism in deleting.items():
            del self._creds[(name, mechanism)]
        for name, (mechanism, iterations, salt, salted) in upserting.items():
            self._creds[(name, mechanism)] = credential_from_salted(salted, salt, iterations,
                                                                     SCRAM_MECHANISMS[mechanism])
        return [*((n, ErrorCode.NONE, None) for n in [*deleting, *upserting]),
                *((n, code, message) for n, (code, message) in errors.items())]

    @staticmethod
    def _invalid(name: str, code: int) -> tuple[ErrorCode, str] | None:
        if not name:
            return ErrorCode.UNACCEPTABLE_CREDENTIAL, "Username must not be empty"
        if code not in SCRAM_TYPES:
            return ErrorCode.UNSUPPORTED_SASL_MECHANISM, "Unknown SCRAM mechanism"
        return None
