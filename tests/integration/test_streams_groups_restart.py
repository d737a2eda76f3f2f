"""A streams group across a restart with a data dir: as Kafka's coordinator, fakekafka keeps the whole group in
`__consumer_offsets` (its StreamsGroup* records and its offsets), so after the restart the group has its topology,
members and their tasks, and a member carries on at its epoch."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import fakekafka
from fakekafka.wire import ApiKey, ErrorCode
from tests.rawclient import RawClient


def _join(group: str, topic: str) -> dict[str, Any]:
    return {"group_id": group, "member_id": "m1", "member_epoch": 0, "endpoint_information_epoch": 0,
            "instance_id": None, "rack_id": None, "rebalance_timeout_ms": 30000,
            "topology": {"epoch": 0, "subtopologies": [
                {"subtopology_id": "0", "source_topics": [topic], "source_topic_regex": [],
                 "state_changelog_topics": [], "repartition_sink_topics": [], "repartition_source_topics": [],
                 "copartition_groups": []}]},
            "active_tasks": [], "standby_tasks": [], "warmup_tasks": [], "process_id": "p1", "user_endpoint": None,
            "client_tags": None, "task_offsets": None, "task_end_offsets": None, "shutdown_application": False}


def _commit(client: RawClient, group: str, topic: str, epoch: int) -> int:
    r = client.request(ApiKey.OFFSET_COMMIT, 9, {
        "group_id": group, "generation_id_or_member_epoch": epoch, "member_id": "m1", "group_instance_id": None,
        "topics": [{"name": topic, "partitions": [{"partition_index": 0, "committed_offset": 7,
                                                   "committed_leader_epoch": -1, "committed_metadata": ""}]}]})
    return r.topics[0].partitions[0].error_code


def _fetched(client: RawClient, group: str, topic: str) -> int:
    r = client.request(ApiKey.OFFSET_FETCH, 9, {"groups": [{"group_id": group, "member_id": None, "member_epoch": -1,
                                                            "topics": [{"name": topic, "partition_indexes": [0]}]}],
                                               "require_stable": False})
    return r.groups[0].topics[0].partitions[0].committed_offset


def _described(client: RawClient, group: str) -> Any:
    r = client.request(ApiKey.STREAMS_GROUP_DESCRIBE, 1, {"group_ids": [group], "include_authorized_operations": False})
    return r.groups[0]


def test_the_group_its_members_and_offsets_survive(tmp_path: Path) -> None:
    group, topic = "sg-restart", "sg-restart-in"
    with fakekafka.Cluster(data_dir=tmp_path, topics={topic: 1},
                           config={"group.streams.initial.rebalance.delay.ms": "0"}) as cluster:
        client = RawClient(cluster.bootstrap_servers)
        try:
            r = client.request(ApiKey.STREAMS_GROUP_HEARTBEAT, 1, _join(group, topic))
            assert r.error_code == ErrorCode.NONE
            epoch = r.member_epoch
            assert [(t.subtopology_id, t.partitions) for t in r.active_tasks] == [("0", [0])]
            assert _commit(client, group, topic, epoch) == ErrorCode.NONE
            before = _described(client, group)
        finally:
            client.close()
    with fakekafka.Cluster(data_dir=tmp_path) as cluster:
        client = RawClient(cluster.bootstrap_servers)
        try:
            after = _described(client, group)
            assert (after.error_code, after.group_state, after.group_epoch, after.assignment_epoch,
                    after.topology, [(m.member_id, m.member_epoch, m.process_id, m.assignment)
                                     for m in after.members]) == \
                (ErrorCode.NONE, before.group_state, before.group_epoch, before.assignment_epoch, before.topology,
                 [(m.member_id, m.member_epoch, m.process_id, m.assignment) for m in before.members])
            assert _fetched(client, group, topic) == 7
            r = client.request(ApiKey.STREAMS_GROUP_HEARTBEAT, 1, {
                **_join(group, topic), "member_epoch": epoch, "topology": None, "rebalance_timeout_ms": -1,
                "active_tasks": [{"subtopology_id": "0", "partitions": [0]}]})
            assert (r.error_code, r.error_message, r.member_epoch) == (ErrorCode.NONE, None, epoch)
            assert _commit(client, group, topic, epoch) == ErrorCode.NONE
        finally:
            client.close()


def test_offsets_survive_and_the_members_rejoin(tmp_path: Path) -> None:
    group, topic = "sg-restart", "sg-restart-in"
    with fakekafka.Cluster(data_dir=tmp_path, topics={topic: 1}) as cluster:
        client = RawClient(cluster.bootstrap_servers)
        try:
            r = client.request(ApiKey.STREAMS_GROUP_HEARTBEAT, 1, _join(group, topic))
            assert r.error_code == ErrorCode.NONE
            assert _commit(client, group, topic, r.member_epoch) == ErrorCode.NONE
        finally:
            client.close()
    with fakekafka.Cluster(data_dir=tmp_path) as cluster:
        client = RawClient(cluster.bootstrap_servers)
        try:
            assert _fetched(client, group, topic) == 7
            r = client.request(ApiKey.STREAMS_GROUP_HEARTBEAT, 1, _join(group, topic))
            assert (r.error_code, r.error_message) == (ErrorCode.NONE, None)
            assert _fetched(client, group, topic) == 7
            assert _commit(client, group, topic, r.member_epoch) == ErrorCode.NONE
        finally:
            client.close()
