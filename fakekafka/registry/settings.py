"""Compatibility levels and modes, per subject and global: Confluent's /config and /mode resources, kept as
CONFIG and MODE records in `_schemas` (a part of `Registry`, apart so each reads as one concern)."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from fakekafka.registry import compatibility
from fakekafka.registry.errors import RegistryError

MODES = ("READWRITE", "READONLY", "READONLY_OVERRIDE", "IMPORT")
DEFAULT_COMPATIBILITY = "BACKWARD"


def dumps(obj: Any) -> bytes:
    """A record's key or value as Confluent writes them: compact JSON."""
    return json.dumps(obj, separators=(",", ":")).encode()


def flag(value: str | bool | None) -> bool:
    """A query flag as Confluent's JAX-RS reads it: true in any case (confluent-kafka sends `True`)."""
    return value is True or (isinstance(value, str) and value.lower() == "true")


class RegistrySettings:
    """The configs and modes of a `Registry`, which gives it the subjects, `_write` and the subject listings."""

    configs: dict[str | None, str]
    modes: dict[str | None, str]
    subjects: dict[str, Any]
    _write: Callable[[list[tuple[bytes, bytes | None]]], None]
    list_subjects: Callable[..., list[str]]
    _versions: Callable[..., list[Any]]

    def compatibility(self, subject: str | None) -> str:
        return self.configs.get(subject) or self.configs.get(None) or DEFAULT_COMPATIBILITY

    def get_config(self, subject: str | None = None, default_to_global: Any = False) -> dict[str, str]:
        if subject is None:
            return {"compatibilityLevel": self.configs.get(None, DEFAULT_COMPATIBILITY)}
        if subject in self.configs:
            return {"compatibilityLevel": self.configs[subject]}
        if flag(default_to_global):
            return {"compatibilityLevel": self.compatibility(None)}
        raise RegistryError.subject_compatibility_not_configured(subject)

    def set_config(self, subject: str | None, body: Any) -> dict[str, str]:
        level = body.get("compatibility", body.get("compatibilityLevel")) if isinstance(body, dict) else None
        if not isinstance(level, str) or level.upper() not in compatibility.LEVELS:
            raise RegistryError.invalid_compatibility_level()
        self._check_writable(subject)
        self._write([(dumps({"keytype": "CONFIG", "subject": subject, "magic": 0}),
                      dumps({"compatibilityLevel": level.upper()}))])
        return {"compatibility": level.upper()}

    def delete_config(self, subject: str | None) -> dict[str, str]:
        # as Confluent: a subject without a config of its own is 40401, even one with versions
        if subject is not None and subject not in self.configs:
            raise RegistryError.subject_not_found(subject)
        previous = self.compatibility(subject)
        self._check_writable(subject)
        if subject in self.configs:
            self._write([(dumps({"keytype": "CONFIG", "subject": subject, "magic": 0}), None)])
        return {"compatibilityLevel": previous}

    def mode(self, subject: str | None) -> str:
        return self.modes.get(subject) or self.modes.get(None) or "READWRITE"

    def get_mode(self, subject: str | None = None, default_to_global: Any = False) -> dict[str, str]:
        if subject is None or subject in self.modes:
            return {"mode": self.mode(subject)}
        if flag(default_to_global):
            return {"mode": self.mode(None)}
        raise RegistryError.subject_mode_not_configured(subject)

    def set_mode(self, subject: str | None, body: Any, force: Any = False) -> dict[str, str]:
        mode = body.get("mode") if isinstance(body, dict) else None
        if not isinstance(mode, str) or mode.upper() not in MODES:
            raise RegistryError.invalid_mode(mode)
        mode = mode.upper()
        if mode == "IMPORT" and not flag(force) and (
                self.list_subjects() if subject is None else self._versions(subject)):
            raise RegistryError.operation_not_permitted("Cannot import since found existing subjects")
        self._write([(dumps({"keytype": "MODE", "subject": subject, "magic": 0}), dumps({"mode": mode}))])
        return {"mode": mode}

    def delete_mode(self, subject: str) -> dict[str, str]:
        if subject not in self.modes:
            raise RegistryError.subject_not_found(subject)
        previous = self.modes[subject]
        self._write([(dumps({"keytype": "MODE", "subject": subject, "magic": 0}), None)])
        return {"mode": previous}

    def _check_writable(self, subject: str | None) -> None:
        if self.mode(subject) in ("READONLY", "READONLY_OVERRIDE"):
            raise RegistryError.operation_not_permitted(f"Subject {subject} is in read-only mode")
