"""What crossed the proxy: each request's `Slot` while its answer is due, and the `Exchange` request listeners
get once it is answered (fakekafka/proxy/observe.py turns it into a `RequestRecord`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from fakekafka.proxy.frames import RequestHead

if TYPE_CHECKING:
    from fakekafka.proxy.hooks import Plan

__all__ = ["PENDING", "Exchange", "Slot"]

PENDING: Any = object()
"""A slot's answer before it is known."""


@dataclass(slots=True)
class Slot:
    """One request of a client connection, in the order its answer is due (the proxy's own bookkeeping)."""

    head: RequestHead
    whole: bytearray | bytes
    """The request as received, size prefix included (forwarded as it is)."""
    wall: float
    started: float
    plan: Plan | None
    """What the hooks, fault rules and chaos decided for it (None: nothing, and nobody observes it)."""
    answer: Any = PENDING
    """The buffers to write (each one whole answer frame), [] for none, None: close the connection instead."""
    upstream_frame: bytearray | bytes | None = None
    request_size: int | None = None
    """A streamed request's size (`whole` holds its header only)."""
    answer_size: int | None = None
    """A streamed answer's size as sent, size prefix excluded."""
    note: Any = None
    """What `ProxyServer.intercept` attached to the request."""

    @property
    def frame(self) -> memoryview:
        """The request without its size prefix."""
        return memoryview(self.whole)[4:]


@dataclass(slots=True)
class Exchange:
    """One request and its answer as they crossed the proxy, for request listeners. The frames are bytes made
    on first use: with only the request log listening, a 1 MB Fetch answer is not copied for it."""

    head: RequestHead
    request_view: memoryview
    response_views: list[memoryview] | None
    """The answer as sent to the client (after any rewriting), size prefix excluded; None: none was sent."""
    request_body: Any = None
    response_body: Any = None
    connection: str = ""
    """Identifies the client connection (peer address and the listener's node) for replays."""
    streamed_sizes: tuple[int | None, int | None] = (None, None)
    """The request's and the answer's sizes when they were passed on while arriving (not held here)."""
    note: Any = None
    """What `ProxyServer.intercept` attached to the request."""
    upstream_view: memoryview | None = None
    """The answer as the upstream sent it, size prefix excluded; None: the upstream sent none (answered by the
    proxy, acks=0, or passed on while it arrived)."""
    _request: bytes | None = None
    _response: bytes | None = None

    @property
    def request_size(self) -> int:
        streamed = self.streamed_sizes[0]
        return len(self.request_view) if streamed is None else streamed

    @property
    def response_size(self) -> int | None:
        if self.response_views is None:
            return self.streamed_sizes[1]
        return sum(len(v) for v in self.response_views)

    @property
    def request_frame(self) -> bytes:
        if self._request is None:
            self._request = bytes(self.request_view)
        return self._request

    @property
    def response_frame(self) -> bytes | None:
        if self._response is None and self.response_views is not None:
            self._response = b"".join(self.response_views)
        return self._response

    @property
    def upstream_response_frame(self) -> bytes | None:
        """The upstream's own answer, before any rewriting or edit (None: it sent none)."""
        return None if self.upstream_view is None else bytes(self.upstream_view)
