"""The errors a Confluent Schema Registry answers, with its HTTP statuses, error codes and words.

Clients branch on `error_code` (confluent-kafka's SchemaRegistryError, the Java client's RestClientException), so
each refusal here carries Confluent's code and, as far as its sources and documentation show them, its message.
"""

from __future__ import annotations

__all__ = ["RegistryError"]


class RegistryError(Exception):
    """A refusal: the HTTP status, Confluent's error code and its message."""

    def __init__(self, status: int, error_code: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.error_code = error_code
        self.message = message

    def body(self) -> dict[str, object]:
        return {"error_code": self.error_code, "message": self.message}

    # --- 404 ---------------------------------------------------------------------------------------
    @classmethod
    def subject_not_found(cls, subject: str) -> RegistryError:
        return cls(404, 40401, f"Subject '{subject}' not found.")

    @classmethod
    def version_not_found(cls, version: int | str) -> RegistryError:
        return cls(404, 40402, f"Version {version} not found.")

    @classmethod
    def schema_not_found(cls, detail: str = "Schema not found") -> RegistryError:
        return cls(404, 40403, detail)

    @classmethod
    def subject_soft_deleted(cls, subject: str) -> RegistryError:
        return cls(404, 40404, f"Subject '{subject}' was soft deleted.Set permanent=true to delete permanently")

    @classmethod
    def subject_not_soft_deleted(cls, subject: str) -> RegistryError:
        return cls(404, 40405, f"Subject '{subject}' was not deleted first before being permanently deleted")

    @classmethod
    def version_soft_deleted(cls, subject: str, version: int) -> RegistryError:
        return cls(404, 40406, f"Subject '{subject}' Version {version} was soft deleted.Set permanent=true to delete "
                               "permanently")

    @classmethod
    def version_not_soft_deleted(cls, subject: str, version: int) -> RegistryError:
        return cls(404, 40407, f"Subject '{subject}' Version {version} was not deleted first before being "
                               "permanently deleted")

    @classmethod
    def subject_compatibility_not_configured(cls, subject: str) -> RegistryError:
        return cls(404, 40408, f"Subject '{subject}' does not have subject-level compatibility configured")

    @classmethod
    def subject_mode_not_configured(cls, subject: str) -> RegistryError:
        return cls(404, 40409, f"Subject '{subject}' does not have subject-level mode configured")

    # --- 409 and 422 -------------------------------------------------------------------------------
    @classmethod
    def incompatible(cls, subject: str, details: list[str]) -> RegistryError:
        return cls(409, 409, f'Schema being registered is incompatible with an earlier schema for subject "{subject}", '
                             f"details: [{', '.join(details)}]")

    @classmethod
    def invalid_schema(cls, message: str) -> RegistryError:
        return cls(422, 42201, message)

    @classmethod
    def invalid_version(cls, version: object) -> RegistryError:
        return cls(422, 42202, f"The specified version '{version}' is not a valid version id. Allowed values are "
                               'between [1, 2^31-1] and the string "latest"')

    @classmethod
    def invalid_compatibility_level(cls) -> RegistryError:
        return cls(422, 42203, "Invalid compatibility level. Valid values are none, backward, forward, full, "
                               "backward_transitive, forward_transitive, and full_transitive")

    @classmethod
    def invalid_mode(cls, mode: object) -> RegistryError:
        return cls(422, 42204, f"Invalid mode {mode}. Valid values are READWRITE, READONLY, READONLY_OVERRIDE "
                               "and IMPORT")

    @classmethod
    def operation_not_permitted(cls, message: str) -> RegistryError:
        return cls(422, 42205, message)

    @classmethod
    def reference_exists(cls, subject: str, version: int) -> RegistryError:
        return cls(422, 42206, "One or more references exist to the schema "
                               f"{{magic=1,keytype=SCHEMA,subject={subject},version={version}}}.")

    @classmethod
    def invalid_subject(cls, subject: str) -> RegistryError:
        return cls(422, 42208, f"The specified subject '{subject}' is not a valid.")

    # --- 400 and 500 -------------------------------------------------------------------------------
    @classmethod
    def bad_request(cls, message: str) -> RegistryError:
        return cls(400, 400, message)

    @classmethod
    def store_error(cls, message: str) -> RegistryError:
        return cls(500, 50001, message)
