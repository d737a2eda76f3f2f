"""The API sweep against Apache Kafka 3.9.1: fakekafka `--kafka-version 3.9` beside the real release.

The same requests as tests/conformance/test_api_sweep.py (its builders, set-up, normalising and comparison), to
one shared Kafka 3.9.1 (KRaft, one node; `.ci/install.sh` resolves its jars) and one fakekafka standing in for
3.9, set up the same way less the KIP-848 state (3.9 has no GROUP configs and its consumer protocol is off). One
test per API, its versions together, so a second reference broker costs about a minute: the ranges and features
ApiVersions advertises, then each (API, version) both advertise, field by field. A difference fails unless
`KNOWN_39` (or the 4.4 sweep's `KNOWN`) lists its path with the reason, as compat/KNOWN_DIFFERENCES.md does.
"""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

import fakekafka
from compat.env import wait_for
from fakekafka.handlers import advertised_versions, handler_for
from fakekafka.model.config import BrokerConfig
from fakekafka.model.releases import kafka_release
from fakekafka.testing.apache_kafka import OLDER_KAFKA, KafkaCluster, kafka_lib
from fakekafka.wire import ApiKey
from fakekafka.wire.messages import API_MODULES
from tests.conformance import test_api_sweep as sweep

pytestmark = [pytest.mark.xdist_group("kafka-3.9.1"),  # one Kafka 3.9.1 for the module, in one worker
              pytest.mark.timeout(600)]  # the first test starts it and sets both brokers up

RELEASE = kafka_release("3.9")
assert RELEASE is not None
APIS = advertised_versions(RELEASE)

NOT_SERVED = {ApiKey.CREATE_DELEGATION_TOKEN, ApiKey.RENEW_DELEGATION_TOKEN, ApiKey.EXPIRE_DELEGATION_TOKEN,
              ApiKey.DESCRIBE_DELEGATION_TOKEN,
              ApiKey.UPDATE_FEATURES, ApiKey.UNREGISTER_BROKER, ApiKey.ADD_RAFT_VOTER, ApiKey.REMOVE_RAFT_VOTER}
"""What Kafka 3.9.1 advertises that fakekafka serves for no release (as for Kafka 4.4, docs/status.md)."""

OLD_VERSIONS_WHY = ("fakekafka serves none of the versions Kafka 4.0 removed (KIP-896) below its lowest: Fetch v0-3, "
                    "ListOffsets v0, OffsetCommit v0-1, OffsetFetch v0, CreateTopics v0-1, DeleteTopics v0, the ACL, "
                    "config and log-dir APIs' v0, WriteTxnMarkers v0; a 3.9 broker still does (no client of the last "
                    "five years sends them)")

KNOWN_39: dict[int | tuple[int, str], list[tuple[str, str]]] = {
    ApiKey.API_VERSIONS: [("/finalized_features_epoch", "Kafka's is its metadata log's offset; fakekafka's is 1")],
}
"""Differences from Kafka 3.9.1 beyond the 4.4 sweep's KNOWN (API key -> [(path pattern, reason)])."""


WIDTH = int(os.environ.get("FAKEKAFKA_SWEEP_WIDTH", "200"))
"""How much of a differing value a failure shows."""


def known_reason(api_key: int, path: str) -> str | None:
    for pattern, why in KNOWN_39.get(api_key, []):
        if sweep.fnmatch.fnmatchcase(path, pattern):
            return why
    for pattern, why in sweep.KNOWN.get(api_key, []):
        if api_key == ApiKey.API_VERSIONS and "features" in pattern:
            continue  # as 3.9 fakekafka lists 3.9's features: compared
        if sweep.fnmatch.fnmatchcase(path, pattern):
            return why
    return None


@pytest.fixture(scope="module")
def fake39() -> Iterator[sweep.Target]:
    config = BrokerConfig(auto_create_topics=False, group_initial_rebalance_delay_ms=0,
                          overrides=dict(KafkaCluster().configs), kafka_version="3.9")
    with fakekafka.Cluster(config=config) as cluster:
        target = sweep.Target("fakekafka-3.9", cluster.bootstrap_servers)
        sweep.set_up(target, kip848=False)
        yield target
        target.close()


@pytest.fixture(scope="module")
def kafka39() -> Iterator[sweep.Target]:
    if kafka_lib(OLDER_KAFKA) is None:
        pytest.skip(f"Apache Kafka {OLDER_KAFKA} is not installed: run `eval \"$(bash .ci/install.sh)\"` (or "
                    f"`fakekafka kafka install --version {OLDER_KAFKA}`)")
    yield from sweep.started_kafka("kafka-3.9", f"Kafka {OLDER_KAFKA}",
                                   lambda: KafkaCluster(brokers=1, version=OLDER_KAFKA, timeout=240), kip848=False)


def test_advertised_ranges_are_kafka_391s(fake39: sweep.Target, kafka39: sweep.Target) -> None:
    """Every API fakekafka advertises as 3.9 is Kafka 3.9.1's, up to the same highest version; its lowest is
    Kafka 3.9.1's or fakekafka's own (OLD_VERSIONS_WHY); what Kafka 3.9.1 has beside them is NOT_SERVED."""
    ours, theirs = fake39.versions, kafka39.versions
    assert ours == APIS
    wrong = {ApiKey(k).name: (ours[k], theirs.get(k)) for k in ours
             if k not in theirs or ours[k][1] != theirs[k][1] or ours[k][0] < theirs[k][0]}
    assert not wrong, f"(fakekafka as 3.9, Kafka 3.9.1): {wrong}"
    assert {ApiKey(k) for k in theirs.keys() - ours.keys()} == NOT_SERVED


@pytest.mark.parametrize("api_key", list(APIS), ids=[API_MODULES[k][0] for k in APIS])
def test_same_as_kafka_391(fake39: sweep.Target, kafka39: sweep.Target, api_key: int) -> None:
    """Each version of the API both advertise, sent to both, compared field by field after normalising."""
    lo, hi = APIS[api_key]
    reg = handler_for(api_key)
    assert reg is not None
    lo = max(lo, kafka39.versions[api_key][0], reg.min_version)  # Produce v0-2: advertised, refused (OLD_VERSIONS_WHY)
    problems = []
    for version in range(lo, hi + 1):
        ours, theirs = fake39.answer(api_key, version), kafka39.answer(api_key, version)
        if theirs.response is None or ours.response is None:
            if (theirs.response is None) != (ours.response is None):
                who = "Kafka 3.9.1" if theirs.response is None else "fakekafka"
                problems.append(f"v{version}: {who} closed the connection, the other answered")
            continue
        for path, got, want in sweep.differences(sweep.normalise(ours.response), sweep.normalise(theirs.response)):
            if known_reason(api_key, path) is None:
                problems.append(f"v{version} {path}: {got!r:.{WIDTH}} vs {want!r:.{WIDTH}}")
    assert not problems, "fields that differ from Kafka 3.9.1's answer (fakekafka, Kafka):\n  " + "\n  ".join(problems)


NODE_CONFIGS = {"advertised.listeners", "controller.listener.names", "controller.quorum.voters",
                "inter.broker.listener.name", "listener.security.protocol.map", "listeners", "log.dirs",
                "process.roles"}
"""Each broker's own addresses, paths and KRaft roles, which Kafka 3.9.1's server.properties sets and fakekafka (no
controller quorum, logs in memory) leaves at Kafka's defaults (compat/KNOWN_DIFFERENCES.md, "Wire fields")."""


@pytest.mark.parametrize("resource", ["broker", "topic"])
def test_every_config_is_kafka_391s(fake39: sweep.Target, kafka39: sweep.Target, resource: str) -> None:
    """DescribeConfigs v4 of the whole broker resource and of a topic, every config Kafka 3.9.1 lists (its names,
    values, sources, read_only, types, synonyms and documentation), field by field: fakekafka's tables for 3.9
    come from Kafka 3.9.1's jars (tools/gen_release_configs.py); only the broker's NODE_CONFIGS differ."""
    body = {"resources": [{"resource_type": 4, "resource_name": "1", "configuration_keys": None} if resource == "broker"
                          else {"resource_type": 2, "resource_name": sweep.TOPIC, "configuration_keys": None}],
            "include_synonyms": True, "include_documentation": True}
    ours, theirs = (sweep.normalise(t.send(ApiKey.DESCRIBE_CONFIGS, 4, body))["results"][0] for t in (fake39, kafka39))
    assert (ours["error_code"], theirs["error_code"]) == (0, 0)
    mine, kafkas = ({c["name"]: c for c in r["configs"]} for r in (ours, theirs))
    assert len(kafkas) > (300 if resource == "broker" else 30)
    assert sorted(mine) == sorted(kafkas)
    differ = {n: {k: (mine[n][k], kafkas[n][k]) for k in kafkas[n] if mine[n].get(k) != kafkas[n][k]}
              for n in kafkas if mine[n] != kafkas[n] and n not in NODE_CONFIGS}
    assert not differ, f"configs that differ from Kafka 3.9.1's (fakekafka, Kafka): {differ}"
    assert "message.format.version" in mine if resource == "topic" else "zookeeper.connect" in mine


ALTERATIONS = {
    "3.9 topic configs": (2, [("message.format.version", "2.8"), ("message.downconversion.enable", "false"),
                              ("message.timestamp.difference.max.ms", "60000")]),
    "a bad message.format.version": (2, [("message.format.version", "9.9")]),
    "a topic config 3.9 does not have": (2, [("max.decompressed.message.bytes", "1000")]),
    "segment.bytes below 4.4's minimum": (2, [("segment.bytes", "1000")]),
    "a static broker config": (4, [("log.message.format.version", "2.8")]),
    "a 3.9 dynamic broker config": (4, [("log.message.downconversion.enable", "false")]),
    "a keystore setting without its listener": (4, [("ssl.keystore.location", "/tmp/x.jks")]),
    "cluster-wide, no min.insync.replicas": (-4, [("log.cleaner.threads", "2")]),
    "a per-broker config cluster-wide": (-4, [("advertised.listeners", "PLAINTEXT://127.0.0.1:9092")]),
}
"""IncrementalAlterConfigs (validate_only) that 3.9's names, defaults and checks decide: (resource type, configs);
-4 is the cluster-wide broker resource ("")."""


@pytest.mark.parametrize("case", list(ALTERATIONS))
def test_alterations_checked_as_kafka_391(fake39: sweep.Target, kafka39: sweep.Target, case: str) -> None:
    """The same alteration answered with Kafka 3.9.1's error code and message: names, values and dynamic configs
    checked against 3.9's tables, not 4.4's."""
    resource_type, configs = ALTERATIONS[case]
    name = {2: sweep.TOPIC, 4: "1", -4: ""}[resource_type]  # -4: the cluster-wide broker resource
    body = {"resources": [{"resource_type": abs(resource_type), "resource_name": name,
                           "configs": [{"name": n, "config_operation": 0, "value": v} for n, v in configs]}],
            "validate_only": True}
    ours, theirs = ([(r["error_code"], r["error_message"]) for r in
                     t.send(ApiKey.INCREMENTAL_ALTER_CONFIGS, 1, body)["responses"]]
                    for t in (fake39, kafka39))
    assert ours == theirs


def test_config_resource_types_are_kafka_391s(fake39: sweep.Target, kafka39: sweep.Target) -> None:
    """3.9 has CLIENT_METRICS resources (KIP-714, 3.7) but no GROUP ones (4.0): a DescribeConfigs naming a type it does
    not know fails whole, an alteration of one is refused alone; a subscription lists only the configs it sets."""
    set_up = {"resources": [{"resource_type": 16, "resource_name": "subscription-39", "configs": [
        {"name": "interval.ms", "config_operation": 0, "value": "50000"}]}], "validate_only": False}
    answers = {}
    for t in (fake39, kafka39):
        assert t.send(ApiKey.INCREMENTAL_ALTER_CONFIGS, 1, set_up)["responses"][0]["error_code"] == 0

        def subscription(t: sweep.Target = t) -> list[tuple[str, str]]:
            configs = t.send(ApiKey.DESCRIBE_CONFIGS, 4, {"resources": [
                {"resource_type": 16, "resource_name": "subscription-39", "configuration_keys": None}],
                "include_synonyms": False, "include_documentation": False})["results"][0]["configs"]
            return [(c["name"], c["value"]) for c in configs]

        # Kafka's broker applies the subscription once its metadata log reaches it
        shown, _ = wait_for(lambda: subscription() == [("interval.ms", "50000")], timeout=30)
        assert shown, f"{t.name}: the subscription never showed: {subscription()}"
        for resource_type, name in ((32, "g"), (16, "no-such-subscription"), (16, "subscription-39"), (99, "x")):
            described = t.send(ApiKey.DESCRIBE_CONFIGS, 4, {"resources": [
                {"resource_type": resource_type, "resource_name": name, "configuration_keys": None},
                {"resource_type": 2, "resource_name": sweep.TOPIC, "configuration_keys": ["cleanup.policy"]}],
                "include_synonyms": True, "include_documentation": False})
            altered = t.send(ApiKey.INCREMENTAL_ALTER_CONFIGS, 1, {"resources": [
                {"resource_type": resource_type, "resource_name": name,
                 "configs": [{"name": "interval.ms", "config_operation": 0, "value": "60000"}]},
                {"resource_type": 2, "resource_name": sweep.TOPIC,
                 "configs": [{"name": "retention.ms", "config_operation": 0, "value": "1000"}]}],
                "validate_only": True})
            answers.setdefault(t.name, []).append((
                [(r["error_code"], r["error_message"], [(c["name"], c["value"], c["config_source"], len(c["synonyms"]))
                                                        for c in r["configs"]]) for r in described["results"]],
                [(r["error_code"], r["error_message"]) for r in altered["responses"]]))
    assert answers[fake39.name] == answers[kafka39.name]
