"""ApiVersions (key 18), v0-5.

Advertises exactly the registry's ranges, and (v3+) the `transaction.version` feature: supported 0-2,
finalized at the cluster's level (2 by default, as a new Kafka 4.x cluster), from which clients choose
transactions version 2 (KIP-890 part 2). zk_migration_ready stays at its default and is not written. A
version we do not know is answered by the server in the v0 layout with
UNSUPPORTED_VERSION (see server.py), as Kafka does.

v5 (KIP-1242): a client names the cluster and node it means to reach, so that after a broker's address is
reused by another cluster it rebootstraps instead of mixing metadata. As Kafka 4.4 answers: both given
and either differs, REBOOTSTRAP_REQUIRED; only one of them given, INVALID_REQUEST; both answers carry no
api_keys and finalized_features_epoch -1 (checked against Kafka by tests/conformance/test_api_sweep.py's variants).

Deliberate differences from Kafka 4.4 (tests/conformance/test_api_sweep.py, compat/KNOWN_DIFFERENCES.md):
- api_keys: only the APIs and versions implemented here, a subset of Kafka's ranges (plus Produce v0-2,
  which Kafka lists too, and OffsetForLeaderEpoch v0-1, which Kafka 4 removed).
- supported_features, finalized_features: only `group.version` (KIP-848 consumer groups), `share.version`
  (KIP-932 share groups), `streams.version` (KIP-1071 streams groups) and `transaction.version`, from which
  clients choose protocols;
  metadata.version, kraft.version and the like describe a KRaft quorum fakekafka does not have.
  finalized_features_epoch is 1 (Kafka's is its metadata offset).
"""

from __future__ import annotations

from typing import Any

from construct import Container

from fakekafka.handlers.registry import RequestContext, advertised_versions, advertising, handles
from fakekafka.model.config import BrokerConfig
from fakekafka.model.releases import KafkaRelease
from fakekafka.wire import ApiKey, ErrorCode
from fakekafka.wire.primitives import Encoded
from fakekafka.wire.protocol import encode_array, encode_part, response_part


def api_keys(release: KafkaRelease | None = None, config: BrokerConfig | None = None,
             node_id: int | None = None) -> list[dict[str, int]]:
    return [{"api_key": k, "min_version": lo, "max_version": hi}
            for k, (lo, hi) in advertised_versions(release, config, node_id).items()]


_encoded_keys: dict[tuple[Any, ...], Encoded] = {}
"""The `api_keys` array encoded whole, by (version, release, `advertising`): every client connection asks, and
building and encoding the 60-odd entries each time took about 0.1 ms (6,000 connections of 2,000 group members,
`bench/group_scale.py`); writing them one by one, a third of what was left."""


def _encoded_api_keys(version: int, release: KafkaRelease | None, config: BrokerConfig,
                      node_id: int | None) -> Encoded:
    key = (version, None if release is None else release.name, advertising(config, node_id))
    kept = _encoded_keys.get(key)
    if kept is None:
        kept = _encoded_keys[key] = encode_array(ApiKey.API_VERSIONS, version, "api_keys",
                                                 api_keys(release, config, node_id))
    return kept


_encoded_features: dict[tuple[Any, ...], dict[str, Any]] = {}
"""`features`/`release_features` with their entries encoded, by (version, release, transaction.version): encoding
them cost about as much as the rest of the answer."""


def _kept_features(version: int, release: KafkaRelease | None, transaction_version: int) -> dict[str, Any]:
    key = (version, None if release is None else release.name, transaction_version)
    kept = _encoded_features.get(key)
    if kept is None:
        out = features(transaction_version) if release is None else release_features(release, version)
        kept = _encoded_features[key] = {
            name: [encode_part(response_part(ApiKey.API_VERSIONS, version, name), e) for e in value]
            if isinstance(value, list) else value for name, value in out.items()}
    return kept


def unsupported_version_response(release: KafkaRelease | None = None) -> dict[str, Any]:
    """The v0-layout answer to an ApiVersions version we (or the older release stood in for) do not support."""
    lo, hi = advertised_versions(release)[ApiKey.API_VERSIONS]
    return {"error_code": ErrorCode.UNSUPPORTED_VERSION,
            "api_keys": [{"api_key": ApiKey.API_VERSIONS, "min_version": lo, "max_version": hi}]}


@handles(ApiKey.API_VERSIONS, 0, 5)
def handle_api_versions(ctx: RequestContext, req: Container) -> dict[str, Any]:
    ctx.connection.client_software = (req.get("client_software_name"), req.get("client_software_version"))
    cluster_id, node_id = req.get("cluster_id"), req.get("node_id", -1)
    if cluster_id is not None or node_id != -1:
        if cluster_id is None or node_id == -1:
            return {"error_code": ErrorCode.INVALID_REQUEST, "api_keys": [], "throttle_time_ms": 0}
        if cluster_id != ctx.cluster.config.cluster_id or node_id != ctx.broker.node_id:
            return {"error_code": ErrorCode.REBOOTSTRAP_REQUIRED, "api_keys": [], "throttle_time_ms": 0}
    release = ctx.cluster.config.release
    # a hook or chaos may read or edit the answer: it gets the entries as dicts
    if ctx.cluster.hooks.active:
        keys = api_keys(release, ctx.cluster.config, ctx.broker.node_id)
        listed = (features(ctx.cluster.config.transaction_version) if release is None else
                  release_features(release, ctx.version)) if ctx.version >= 3 else {}
    else:
        keys = _encoded_api_keys(ctx.version, release, ctx.cluster.config, ctx.broker.node_id)
        listed = _kept_features(ctx.version, release, ctx.cluster.config.transaction_version) \
            if ctx.version >= 3 else {}
    return {"error_code": ErrorCode.NONE, "api_keys": keys, "throttle_time_ms": 0, **listed}


TRANSACTION_VERSION_MAX = 2
GROUP_VERSION = 1
"""`group.version` 1: the consumer group protocol of KIP-848 (ConsumerGroupHeartbeat), finalized on a new Kafka
4.x cluster; clients that find it use `group.protocol=consumer`."""
SHARE_VERSION = 2
"""`share.version` 2: share groups (KIP-932) with ShareFetch/ShareAcknowledge v2, finalized on a new Kafka 4.4
cluster."""
STREAMS_VERSION = 1
"""`streams.version` 1: streams groups (KIP-1071, StreamsGroupHeartbeat), finalized on a new Kafka 4.4 cluster;
Kafka Streams applications find it to use `group.protocol=streams`."""


def features(transaction_version: int) -> dict[str, Any]:
    """The features fakekafka gates protocols on, as Kafka lists them: `group.version` supported 0-1 and
    finalized at 1, `share.version` supported 0-2 and finalized at 2, `streams.version` supported 0-1 and
    finalized at 1, `transaction.version` supported 0-2 and
    finalized at the cluster's level (a level of 0 is not listed, as Kafka leaves out features at 0)."""
    out: dict[str, Any] = {"supported_features": [
        {"name": "group.version", "min_version": 0, "max_version": GROUP_VERSION},
        {"name": "share.version", "min_version": 0, "max_version": SHARE_VERSION},
        {"name": "streams.version", "min_version": 0, "max_version": STREAMS_VERSION},
        {"name": "transaction.version", "min_version": 0, "max_version": TRANSACTION_VERSION_MAX}]}
    finalized = [{"name": "group.version", "min_version_level": GROUP_VERSION, "max_version_level": GROUP_VERSION},
                 {"name": "share.version", "min_version_level": SHARE_VERSION, "max_version_level": SHARE_VERSION},
                 {"name": "streams.version", "min_version_level": STREAMS_VERSION,
                  "max_version_level": STREAMS_VERSION}]
    if transaction_version > 0:
        finalized.append({"name": "transaction.version", "min_version_level": transaction_version,
                          "max_version_level": transaction_version})
    out["finalized_features_epoch"] = 1
    out["finalized_features"] = finalized
    return out


def release_features(release: KafkaRelease, version: int) -> dict[str, Any]:
    """An older release's features, as a new cluster of it lists them: a KRaft release (3.x) its metadata.version,
    supported from 1 (3.0-IV1) and finalized at the release's level, and nothing else (group.version,
    transaction.version and share.version are not production-ready before 4.0, so not listed, as Kafka 3.9.1
    answers); from 3.9, `kraft.version` supported 0-1 too, listed to v4+ requests only (KIP-1022: older clients
    cannot read a minimum of 0) and finalized at 0, so not listed; a ZooKeeper broker (2.8) none, and epoch -1."""
    if release.metadata_version is None:
        return {"supported_features": [], "finalized_features_epoch": -1, "finalized_features": []}
    level = release.metadata_version
    kraft = [{"name": "kraft.version", "min_version": 0, "max_version": 1}] if (
        release.kraft_version_feature and version >= 4) else []
    return {"supported_features": [*kraft, {"name": "metadata.version", "min_version": 1, "max_version": level}],
            "finalized_features_epoch": 1,
            "finalized_features": [{"name": "metadata.version", "min_version_level": level,
                                    "max_version_level": level}]}
