"""Older Kafka releases fakekafka can stand in for (`--kafka-version`, `Cluster(kafka_version=...)`).

A release caps what clients see to what a broker of that release shows them: the API ranges of its ApiVersions
(`fakekafka.wire.releases`, generated from that release's own message schemas), its features (no KIP-848
consumer groups before 4.0, no share groups, `transaction.version` not finalized before 4.0, its
`metadata.version`), and the consumer group protocol refused as its default `group.coordinator.rebalance.protocols`
(classic) refuses it. Its broker and topic configs are its own (model/config.py's `config_catalog`, generated from
its jars). Everything else is Kafka 4.4's behaviour; the differences left are listed in
compat/KNOWN_DIFFERENCES.md ("Older Kafka versions").
"""

from __future__ import annotations

from dataclasses import dataclass, field

from fakekafka.wire.api_keys import ApiKey
from fakekafka.wire.releases import RELEASES

__all__ = ["CURRENT", "KNOWN_VERSIONS", "KafkaRelease", "UnknownKafkaVersion", "kafka_release", "known_versions"]

CURRENT = "4.4"
"""The release fakekafka follows when no version is given."""


@dataclass(frozen=True)
class KafkaRelease:
    """What a broker of an older release shows clients."""

    name: str
    """major.minor, e.g. "3.9"."""
    version: str
    """The patch release whose schemas give the ranges, e.g. "3.9.1"."""
    zookeeper: bool
    """A ZooKeeper-era broker (2.x): no KRaft, no features finalized."""
    apis: dict[ApiKey, tuple[int, int]] = field(repr=False)
    metadata_version: int | None
    """The `metadata.version` level a new cluster of this release is formatted at (None: ZooKeeper era)."""
    consumer_protocol: bool = False
    """Whether the KIP-848 consumer group protocol is on by default (4.0 on)."""
    kraft_version_feature: bool = False
    """Whether it has the `kraft.version` feature (KIP-853, 3.9 on)."""

    @property
    def client_metrics_resources(self) -> bool:
        """Whether its configs have CLIENT_METRICS resources (KIP-714, 3.7 on); none before 4.0 has GROUP ones."""
        return tuple(int(p) for p in self.name.split(".")) >= (3, 7)

    def caps(self, api_key: int, lo: int, hi: int) -> tuple[int, int] | None:
        """fakekafka's range (lo, hi) for an API, capped to this release's, or None when it does not advertise it."""
        theirs = self.apis.get(ApiKey(api_key)) if api_key in ApiKey._value2member_map_ else None
        if theirs is None:
            return None
        low, high = max(lo, theirs[0]), min(hi, theirs[1])
        return (low, high) if low <= high else None

    def allows(self, api_key: int, version: int) -> bool:
        theirs = self.apis.get(ApiKey(api_key)) if api_key in ApiKey._value2member_map_ else None
        return theirs is not None and theirs[0] <= version <= theirs[1]


METADATA_VERSIONS = {"3.7": 19, "3.9": 21}
"""The latest production `metadata.version` of each KRaft release (MetadataVersion 3.7-IV4 and 3.9-IV0), which a new
cluster is formatted at; a Kafka 3.9.1 broker lists it supported 1-21 and finalized at 21."""

_RELEASES = {name: KafkaRelease(name, r.version, r.broker == "zkBroker", r.apis, METADATA_VERSIONS.get(name),
                                kraft_version_feature=name == "3.9") for name, r in RELEASES.items()}

KNOWN_VERSIONS = (*_RELEASES, CURRENT)


def known_versions() -> str:
    return ", ".join(KNOWN_VERSIONS[:-1]) + f" and {CURRENT} (the default)"


class UnknownKafkaVersion(ValueError):
    """A Kafka version fakekafka cannot stand in for; the message names those it can."""


def kafka_release(version: str | None) -> KafkaRelease | None:
    """The release a `--kafka-version` names ("3.9", or a patch release of it, "3.9.1"), None for the current one
    (or None given); UnknownKafkaVersion for one fakekafka does not know."""
    if version is None:
        return None
    text = str(version).strip()
    parts = text.split(".")
    if not 2 <= len(parts) <= 3 or not all(p.isdigit() for p in parts):
        raise UnknownKafkaVersion(f"{text!r} is not a Kafka version (give major.minor, e.g. 3.9); fakekafka knows "
                                  f"{known_versions()}")
    name = ".".join(str(int(p)) for p in parts[:2])
    if name == CURRENT:
        return None
    release = _RELEASES.get(name)
    if release is None:
        raise UnknownKafkaVersion(f"fakekafka does not know Kafka {text}; it knows {known_versions()}")
    return release
