"""Request handlers, one module per API family, registered by API key in `registry`.

Importing this package registers every handler; `dispatch` runs one decoded request.
"""

from __future__ import annotations

from fakekafka.handlers import (  # noqa: F401  (imported to register their handlers)
    admin,
    api_versions,
    configs,
    describe_cluster,
    fetch,
    find_coordinator,
    groups,
    init_producer_id,
    list_offsets,
    metadata,
    offset_for_leader_epoch,
    offsets,
    produce,
)
from fakekafka.handlers.registry import (
    NO_RESPONSE,
    Park,
    RequestContext,
    advertised_versions,
    error_response,
    handler_for,
)

__all__ = ["NO_RESPONSE", "Park", "RequestContext", "advertised_versions", "dispatch", "handler_for"]


def dispatch(ctx: RequestContext):  # noqa: ANN201 - Result from registry
    """Runs the handler for a decoded request whose version the handler accepts."""
    reg = handler_for(ctx.request.api_key)
    assert reg is not None and reg.min_version <= ctx.version <= reg.max_version
    assert ctx.request.body is not None
    return reg.handler(ctx, ctx.request.body)


del error_response
