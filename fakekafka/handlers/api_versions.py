"""ApiVersions (key 18), v0-5.

Advertises exactly the registry's ranges. Tagged fields (features, zk_migration_ready) stay at their
defaults and are therefore not written: librdkafka 2.0.2 (Debian's kcat) cannot parse a v3 response
that carries them. A version we do not know is answered by the server in the v0 layout with
UNSUPPORTED_VERSION (see server.py), as Kafka does.

v5 (KIP-1242): a client names the cluster and node it means to reach, so that after a broker's address is
reused by another cluster it rebootstraps instead of mixing metadata. As Kafka 4.4 answers: both given
and either differs, REBOOTSTRAP_REQUIRED; only one of them given, INVALID_REQUEST; both answers carry no
api_keys and finalized_features_epoch -1 (checked against Kafka by tests/test_api_sweep.py's variants).

Deliberate differences from Kafka 4.4 (tests/test_api_sweep.py, compat/KNOWN_DIFFERENCES.md):
- api_keys: only the APIs and versions implemented here, a subset of Kafka's ranges (plus Produce v0-2,
  which Kafka lists too, and OffsetForLeaderEpoch v0-1, which Kafka 4 removed).
- supported_features, finalized_features, finalized_features_epoch: empty/-1. None of the feature-gated
  protocols (KIP-848 groups, transactions v2, streams and share groups) is served, and clients choose
  protocols from these (the Java producer takes transactions v2 from transaction.version).
"""

from __future__ import annotations

from typing import Any

from construct import Container

from fakekafka.handlers.registry import RequestContext, advertised_versions, handles
from wire import ErrorCode

API_VERSIONS_KEY = 18


def api_keys() -> list[dict[str, int]]:
    return [{"api_key": k, "min_version": lo, "max_version": hi} for k, (lo, hi) in advertised_versions().items()]


def unsupported_version_response() -> dict[str, Any]:
    """The v0-layout answer to an ApiVersions version we do not support."""
    lo, hi = advertised_versions()[API_VERSIONS_KEY]
    return {"error_code": ErrorCode.UNSUPPORTED_VERSION,
            "api_keys": [{"api_key": API_VERSIONS_KEY, "min_version": lo, "max_version": hi}]}


@handles(API_VERSIONS_KEY, 0, 5)
def handle_api_versions(ctx: RequestContext, req: Container) -> dict[str, Any]:
    ctx.extra["client_software"] = (req.get("client_software_name"), req.get("client_software_version"))
    cluster_id, node_id = req.get("cluster_id"), req.get("node_id", -1)
    if cluster_id is not None or node_id != -1:
        if cluster_id is None or node_id == -1:
            return {"error_code": ErrorCode.INVALID_REQUEST, "api_keys": [], "throttle_time_ms": 0}
        if cluster_id != ctx.cluster.config.cluster_id or node_id != ctx.broker.node_id:
            return {"error_code": ErrorCode.REBOOTSTRAP_REQUIRED, "api_keys": [], "throttle_time_ms": 0}
    return {"error_code": ErrorCode.NONE, "api_keys": api_keys(), "throttle_time_ms": 0}
