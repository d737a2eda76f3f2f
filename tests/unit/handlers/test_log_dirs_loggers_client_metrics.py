"""Over the wire: DescribeLogDirs with several log dirs and AlterReplicaLogDirs moving a replica; BROKER_LOGGER
resources changing fakekafka's Python loggers (and put back when the cluster stops); CLIENT_METRICS
subscriptions listed by ListConfigResources. Kafka's answers to the same requests:
tests/conformance/test_api_sweep.py."""

from __future__ import annotations

import logging

import fakekafka
from fakekafka.model.config import BrokerConfig
from fakekafka.wire import ApiKey, ErrorCode
from tests.rawclient import RawClient

SET, DELETE = 0, 1


def _dirs(raw: RawClient) -> dict[str, list[tuple[str, int, int]]]:
    r = raw.request(ApiKey.DESCRIBE_LOG_DIRS, 4, {"topics": None})
    return {
        d.log_dir: sorted((t.name, p.partition_index, p.partition_size) for t in d.topics for p in t.partitions)
        for d in r.results
    }


def test_describe_and_move_between_log_dirs() -> None:
    config = BrokerConfig.from_properties({"log.dirs": "/d0,/d1"}, auto_create_topics=False)
    with fakekafka.Cluster(config=config) as c:
        c.create_topic("t", 2)
        c.produce("t", b"v", partition=0)
        raw = RawClient(c.bootstrap_servers)
        try:
            before = _dirs(raw)
            assert list(before) == ["/d0", "/d1"]
            (size,) = [s for _, p, s in before["/d0"] if p == 0]
            assert before == {"/d0": [("t", 0, size)], "/d1": [("t", 1, 0)]} and size > 0
            r = raw.request(
                ApiKey.ALTER_REPLICA_LOG_DIRS,
                2,
                {
                    "dirs": [
                        {"path": "/d1", "topics": [{"name": "t", "partitions": [0, 9]}]},
                        {"path": "/d9", "topics": [{"name": "t", "partitions": [1]}]},
                    ]
                },
            )
            assert sorted((p.partition_index, p.error_code) for t in r.results for p in t.partitions) == [
                (0, ErrorCode.NONE),
                (1, ErrorCode.LOG_DIR_NOT_FOUND),
                (9, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION),
            ]
            assert _dirs(raw) == {"/d0": [], "/d1": [("t", 0, size), ("t", 1, 0)]}
            assert c.log_dirs("t") == {0: {1: "/d1"}, 1: {1: "/d1"}}
        finally:
            raw.close()


def test_broker_logger_sets_the_python_logger_until_the_cluster_stops() -> None:
    logger = logging.getLogger("fakekafka.server")
    before = logger.level
    with fakekafka.Cluster() as c:
        raw = RawClient(c.bootstrap_servers)
        try:
            r = raw.request(
                ApiKey.INCREMENTAL_ALTER_CONFIGS,
                1,
                {
                    "validate_only": False,
                    "resources": [
                        {
                            "resource_type": 8,
                            "resource_name": "1",
                            "configs": [{"name": "fakekafka.server", "config_operation": SET, "value": "TRACE"}],
                        }
                    ],
                },
            )
            assert r.responses[0].error_code == ErrorCode.NONE
            assert logger.level == 5 and logger.isEnabledFor(logging.DEBUG)
            d = raw.request(
                ApiKey.DESCRIBE_CONFIGS,
                4,
                {
                    "include_synonyms": False,
                    "include_documentation": False,
                    "resources": [
                        {"resource_type": 8, "resource_name": "1", "configuration_keys": ["fakekafka.server", "nope"]}
                    ],
                },
            )
            assert [(x.name, x.value, x.config_source) for x in d.results[0].configs] == [
                ("fakekafka.server", "TRACE", 6)
            ]
            raw.request(
                ApiKey.INCREMENTAL_ALTER_CONFIGS,
                1,
                {
                    "validate_only": False,
                    "resources": [
                        {
                            "resource_type": 8,
                            "resource_name": "1",
                            "configs": [{"name": "fakekafka.server", "config_operation": DELETE, "value": None}],
                        }
                    ],
                },
            )
            assert logger.level == logging.NOTSET  # follows its parent again
        finally:
            raw.close()
    assert logger.level == before


def test_client_metrics_subscriptions_listed_until_emptied() -> None:
    with fakekafka.Cluster() as c:
        raw = RawClient(c.bootstrap_servers)
        try:

            def alter(ops: list[tuple[str, int, str | None]]) -> int:
                r = raw.request(
                    ApiKey.INCREMENTAL_ALTER_CONFIGS,
                    1,
                    {
                        "validate_only": False,
                        "resources": [
                            {
                                "resource_type": 16,
                                "resource_name": "cm",
                                "configs": [{"name": k, "config_operation": o, "value": v} for k, o, v in ops],
                            }
                        ],
                    },
                )
                return r.responses[0].error_code

            def listed() -> list[tuple[str, int]]:
                r = raw.request(ApiKey.LIST_CONFIG_RESOURCES, 1, {"resource_types": [16]})
                return [(x.resource_name, x.resource_type) for x in r.config_resources]

            assert alter([("match", SET, "client_software_name=apache-kafka-java, client_id=a.*")]) == 0
            assert listed() == [("cm", 16)]
            assert c.state.client_metrics["cm"] == {"match": "client_software_name=apache-kafka-java,client_id=a.*"}
            assert alter([("match", SET, "client_id=(")]) == ErrorCode.INVALID_CONFIG
            assert alter([("match", DELETE, None)]) == 0
            assert listed() == []
        finally:
            raw.close()
