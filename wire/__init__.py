"""The Kafka wire protocol, pure: bytes in, containers out, and back. No sockets, no asyncio."""

from fakekafka.wire import compiled as _compiled  # noqa: F401  (installs the specialised parsers into Message)
from fakekafka.wire.api_keys import ApiKey
from fakekafka.wire.error_codes import ErrorCode
from fakekafka.wire.protocol import (
    DecodeError,
    Request,
    UnknownApiKey,
    decode_request,
    decode_request_header,
    decode_response,
    encode_request,
    encode_response,
)

__all__ = [
    "ApiKey", "DecodeError", "ErrorCode", "Request", "UnknownApiKey", "decode_request",
    "decode_request_header", "decode_response", "encode_request", "encode_response",
]
