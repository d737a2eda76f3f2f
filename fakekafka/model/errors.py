"""The error every part of the model raises for a request Kafka refuses: a code and Kafka's words."""

from __future__ import annotations

from fakekafka.wire import ErrorCode

__all__ = ["ApiError"]


class ApiError(Exception):
    """An expected failure of a client request, carried to the response as a Kafka error code."""

    def __init__(self, code: ErrorCode, message: str | None = None) -> None:
        super().__init__(message or code.name)
        self.code = code
        self.message = message
